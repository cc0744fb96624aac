//! Skills: link-time registration checked against the registry, identity rules,
//! `requires` checked before any model call, a run ending in the typed state, and
//! `bubble_events` deciding whether tool events reach the caller.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
use tackle::agent::skill::{Skill, SkillError, SkillKind, Skills};
use tackle::events::event_queue;
use tackle::events::ToolEventKind;
use tackle::{register_skill, tool, Run, Runtime, SkillState, ToolContext};

/// Road distance between two Norwegian cities, in km; reports progress.
#[tool(namespace = "roads", version = "1", side_effects = none)]
fn distance(ctx: &ToolContext, from: String, to: String) -> Result<u32, String> {
    ctx.report_progress(1, Some(1));
    match (from.as_str(), to.as_str()) {
        ("Oslo", "Bergen") | ("Bergen", "Oslo") => Ok(463),
        _ => Err(format!("no road data for {from} to {to}")),
    }
}

/// The state of a trip-planning skill: its fields are the output keys.
#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema, SkillState)]
struct TripPlan {
    /// Where to.
    destination: String,
    /// Kilometres by road.
    km: u32,
    /// Stops by name, in a deterministic order.
    stops: BTreeMap<String, u32>,
}

fn trip_planner() -> Result<Skill, SkillError> {
    Skill::builder::<TripPlan>("trip-planner", "1.2.0", SkillKind::Agent)
        .with_description("Plans a road trip between Norwegian cities.")
        .with_tools(&["roads.distance"])
        .with_system_prompt("You plan road trips.")
        .with_requires(&["trips:plan"])
        .with_example(
            json!({"task": "Oslo to Bergen"}),
            Some(json!({"destination": "Bergen", "km": 463, "stops": {}})),
        )
        .build()
}

fn trip_planner_quiet() -> Result<Skill, SkillError> {
    Skill::builder::<TripPlan>("trip-planner", "2.0.0-beta.1", SkillKind::Agent)
        .with_description("Plans a road trip, keeping its tool events to itself.")
        .with_tools(&["roads.distance@1"])
        .with_bubble_events(false)
        .build()
}

register_skill!(trip_planner);
register_skill!(trip_planner_quiet);

fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory_in(module_path!()).unwrap())
}

fn answer_turns() -> Vec<ChatResponse> {
    vec![
        ChatResponse::calls(
            "Distance first.",
            vec![ToolCallRequest {
                id: "c1".into(),
                name: "roads_distance".into(),
                arguments: json!({"from": "Oslo", "to": "Bergen"}),
            }],
        ),
        ChatResponse::text(
            "```json\n{\"destination\": \"Bergen\", \"km\": 463, \"stops\": {\"Geilo\": 1}}\n```",
        ),
    ]
}

#[test]
fn registered_skills_are_collected_with_identity_and_output_keys() {
    let rt = runtime();
    let skills = Skills::from_inventory(rt.registry()).unwrap();
    assert_eq!(skills.len(), 2);
    let ids: Vec<String> = skills.iter().map(Skill::site_id).collect();
    assert_eq!(ids, ["trip-planner@1.2.0", "trip-planner@2.0.0-beta.1"]);

    // By name: the highest version (a pre-release of 2 is above 1.2.0).
    let latest = skills.get("trip-planner").unwrap();
    assert_eq!(latest.version(), "2.0.0-beta.1");
    assert!(!latest.bubble_events());

    let skill = skills.get("trip-planner@1.2.0").unwrap();
    assert_eq!(skill.name(), "trip-planner");
    assert_eq!(skill.kind(), SkillKind::Agent);
    assert_eq!(skill.output_keys(), ["destination", "km", "stops"]);
    assert_eq!(skill.requires(), ["trips:plan"]);
    assert_eq!(skill.examples().len(), 1);
    assert!(skill.bubble_events(), "bubble_events defaults to true");
    assert!(matches!(
        skills.get("packing-list"),
        Err(SkillError::NotFound(_))
    ));
}

#[test]
fn tools_must_exist_and_identity_is_checked() {
    let rt = runtime();
    let mut skills = Skills::new();
    let unknown = Skill::builder::<TripPlan>("ferry-planner", "1.0.0", SkillKind::Workflow)
        .with_description("Plans ferries.")
        .with_tools(&["roads.distance", "ferries.timetable"])
        .build()
        .unwrap();
    match skills.register(unknown, rt.registry()) {
        Err(SkillError::UnknownTool { site_id, tool }) => {
            assert_eq!(site_id, "ferry-planner@1.0.0");
            assert_eq!(tool, "ferries.timetable");
        }
        other => panic!("{other:?}"),
    }
    assert!(skills.is_empty());

    let build = |name: &str, version: &str| {
        Skill::builder::<TripPlan>(name, version, SkillKind::Utility)
            .with_description("x")
            .build()
    };
    // A skill's name follows the rules of a tool's name (seed 004).
    for bad in ["Trip Planner", "", "trip.planner", "é"] {
        assert!(
            matches!(build(bad, "1.0.0"), Err(SkillError::BadName(_))),
            "{bad:?}"
        );
    }
    for good in ["trip-planner", "trip_planner", "TripPlanner2"] {
        assert!(build(good, "1.0.0").is_ok(), "{good}");
    }
    assert!(matches!(
        build("trip", "1.0"),
        Err(SkillError::BadVersion { .. })
    ));
    assert!(matches!(
        Skill::builder::<TripPlan>("trip", "1.0.0", SkillKind::Utility).build(),
        Err(SkillError::NoDescription(_))
    ));
    // An example whose output is not the state is refused.
    let bad_example = Skill::builder::<TripPlan>("trip", "1.0.0", SkillKind::Utility)
        .with_description("x")
        .with_example(
            json!({"task": "Oslo to Bergen"}),
            Some(json!({"destination": "Bergen"})),
        )
        .build();
    match bad_example {
        Err(SkillError::BadExample {
            index, problems, ..
        }) => {
            assert_eq!(index, 0);
            assert!(problems.contains("km"), "{problems}");
        }
        other => panic!("{other:?}"),
    }

    let first = trip_planner().unwrap();
    skills.register(first.clone(), rt.registry()).unwrap();
    assert!(matches!(
        skills.register(first, rt.registry()),
        Err(SkillError::Duplicate { .. })
    ));
}

#[tokio::test]
async fn requires_is_checked_before_the_model_is_called() {
    let rt = runtime();
    let skill = trip_planner().unwrap();
    let model = Arc::new(ScriptedModel::new(answer_turns()));
    let error = skill
        .run::<TripPlan>(
            model.clone(),
            &Run::new(&rt),
            "Oslo to Bergen",
            &ToolContext::new()
                .with_grant("trips:book")
                .with_grant("llm:*"),
        )
        .await
        .unwrap_err();
    match error {
        SkillError::Denied { site_id, missing } => {
            assert_eq!(site_id, "trip-planner@1.2.0");
            assert_eq!(missing, ["trips:plan"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(model.used(), 0, "no model call before the capability check");
}

#[tokio::test]
async fn a_run_ends_in_the_typed_state_and_events_bubble() {
    let rt = runtime();
    let skill = trip_planner().unwrap();
    let model = Arc::new(ScriptedModel::new(answer_turns()));
    let (sink, mut events) = event_queue(64);
    let ctx = ToolContext::new().with_grant("trips:*").with_grant("llm:*");
    let done = skill
        .run::<TripPlan>(
            model.clone(),
            &Run::new(&rt).with_events(sink),
            "Oslo to Bergen",
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        done.state,
        TripPlan {
            destination: "Bergen".into(),
            km: 463,
            stops: BTreeMap::from([("Geilo".to_owned(), 1)]),
        }
    );
    assert_eq!(done.run.tool_calls.len(), 1);
    model.finish().unwrap();
    // The model was told the answer's form.
    let system = &model.requests()[0].messages[0].content;
    assert!(system.starts_with("You plan road trips."));
    assert!(system.contains("destination, km, stops"), "{system}");

    let progress = events
        .drain()
        .into_iter()
        .filter(|e| matches!(e.kind, ToolEventKind::Progress { .. }))
        .count();
    assert_eq!(progress, 1, "the tool's progress reached the caller");
}

#[tokio::test]
async fn without_bubbling_the_callers_sink_hears_nothing() {
    let rt = runtime();
    let skill = trip_planner_quiet().unwrap();
    let (sink, mut events) = event_queue(64);
    let done = skill
        .run::<TripPlan>(
            Arc::new(ScriptedModel::new(answer_turns())),
            &Run::new(&rt).with_events(sink),
            "Oslo to Bergen",
            &ToolContext::new().with_grant("llm:*"),
        )
        .await
        .unwrap();
    assert_eq!(done.state.km, 463);
    assert_eq!(events.drain(), vec![]);
}

#[tokio::test]
async fn an_answer_that_is_not_the_state_is_a_repair_turn_and_then_an_error_with_the_run() {
    let rt = runtime();
    let skill = trip_planner_quiet().unwrap();
    let bad = || ChatResponse::text("{\"destination\": \"Bergen\", \"km\": -1}");
    let good = ChatResponse::text(r#"{"destination": "Bergen", "km": 463, "stops": {}}"#);
    let ctx = ToolContext::new().with_grant("llm:*");
    // The state's schema is the run's answer schema: a reply that does not fit is a
    // repair turn, and the model's next answer stands.
    let model = Arc::new(ScriptedModel::new([bad(), good]));
    let done = skill
        .run::<TripPlan>(model.clone(), &Run::new(&rt), "?", &ctx)
        .await
        .unwrap();
    assert_eq!(done.state.km, 463);
    let repair = done.run.trajectory[0].observation.clone().unwrap();
    assert!(repair.contains("/km"), "{repair}");
    assert!(repair.contains("stops"), "{repair}");
    assert_eq!(
        model.requests()[0].response_schema.as_ref(),
        Some(&skill.to_spec().state_schema),
        "sent to the model as the answer schema"
    );
    // Only bad answers: three repair turns, then the fourth ends the run, which the
    // error keeps (the error budget is for failed tool calls).
    let model = ScriptedModel::new([bad(), bad(), bad(), bad()]);
    match skill
        .run::<TripPlan>(Arc::new(model), &Run::new(&rt), "?", &ctx)
        .await
    {
        Err(SkillError::NoAnswer { reason, run, .. }) => {
            assert_eq!(reason, "no answer after 3 repair turn(s)");
            assert_eq!(run.trajectory.len(), 4);
            assert_eq!(run.error_budget, 3);
        }
        other => panic!("{other:?}"),
    }

    /// Another state type.
    #[derive(Serialize, Deserialize, JsonSchema, SkillState)]
    struct Other {
        x: u8,
    }
    let wrong = skill
        .run::<Other>(
            Arc::new(ScriptedModel::new([])),
            &Run::new(&runtime()),
            "?",
            &ToolContext::new(),
        )
        .await;
    assert!(matches!(wrong, Err(SkillError::WrongState { .. })));
}

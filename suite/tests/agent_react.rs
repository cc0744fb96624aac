//! The ReAct loop: a run with parallel tool calls, its termination rules, failures as
//! observations with a repair round, and a recorded run replayed without the model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::agent::react::{AgentError, ReactSkill, ReactState, RepairHook, StopReason};
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Agent, Cassette, Run, Runtime, ToolContext, ToolError};

/// Road distance between two Norwegian cities, in km.
#[tool(namespace = "geo", side_effects = none)]
fn distance(from: String, to: String) -> Result<u32, String> {
    let mut pair = [from.to_lowercase(), to.to_lowercase()];
    pair.sort();
    match (pair[0].as_str(), pair[1].as_str()) {
        ("bergen", "oslo") => Ok(463),
        ("oslo", "trondheim") => Ok(494),
        _ => Err(format!("no road data for {from} to {to}")),
    }
}

/// Tomorrow's forecast for a city.
#[tool(namespace = "weather", side_effects = read)]
fn tomorrow(city: String) -> String {
    match city.as_str() {
        "Bergen" => "rain, 9°C".to_owned(),
        _ => "clear, 12°C".to_owned(),
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// A planner: first asks for both tools at once, then answers from what it observed.
fn planner(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let observed: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    if observed.is_empty() {
        return Ok(ChatResponse::calls(
            "I need the distance and the weather.",
            vec![
                call(
                    "c1",
                    "geo_distance",
                    json!({"from": "Oslo", "to": "Bergen"}),
                ),
                call("c2", "weather_tomorrow", json!({"city": "Bergen"})),
            ],
        ));
    }
    Ok(ChatResponse::text(format!(
        "Bergen is {} km from Oslo; tomorrow: {}.",
        observed[0], observed[1]
    )))
}

/// A run over the inventory's tools, recording or replaying through `cassette`.
fn new_run(cassette: Option<Cassette>) -> Run {
    let run = Run::new(&Arc::new(
        Runtime::from_inventory_in(module_path!()).unwrap(),
    ));
    match cassette {
        Some(cassette) => run.with_cassette(cassette),
        None => run,
    }
}

const TOOLS: &[&str] = &["geo.distance", "weather.tomorrow"];

/// The state of a run that ended without an answer (its stop reason says why).
fn no_answer(error: AgentError) -> ReactState {
    match error {
        AgentError::NoAnswer { state } => *state,
        other => panic!("expected a run without an answer, got {other}"),
    }
}

#[tokio::test]
async fn a_run_thinks_acts_in_parallel_observes_and_answers() {
    let run = new_run(None);
    let agent = Agent::new(FunctionModel::new("planner", planner)).tools(TOOLS);
    assert_eq!(
        agent
            .skill(&run)
            .unwrap()
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["geo_distance", "weather_tomorrow"]
    );
    let state = agent
        .run(&run, "Should I drive to Bergen tomorrow?")
        .await
        .unwrap()
        .state;
    assert!(state.done);
    assert_eq!(state.step_index, 2);
    assert_eq!(
        state.final_answer.as_deref(),
        Some("Bergen is 463 km from Oslo; tomorrow: rain, 9°C.")
    );
    // Seed 004's trajectory: a step per tool call (the turn's thought on the first),
    // then the answer, a step with no call.
    let steps: Vec<(bool, Option<&str>, bool)> = state
        .trajectory
        .iter()
        .map(|s| {
            (
                !s.thought.is_empty(),
                s.tool_call.as_ref().map(|c| c.name.as_str()),
                s.observation.is_some(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (true, Some("geo.distance@1"), true),
            (false, Some("weather.tomorrow@1"), true),
            (true, None, false),
        ]
    );
    assert_eq!(
        state.trajectory[2].thought,
        "Bergen is 463 km from Oslo; tomorrow: rain, 9°C."
    );
    assert_eq!(state.tool_calls.len(), 2);
    assert_eq!(state.tool_calls[0].name, "geo.distance@1");
    assert_eq!(state.tool_calls[0].result, Some(json!(463)));
    assert_eq!(state.error_budget, 3);
}

#[tokio::test]
async fn a_recorded_run_replays_identically_without_the_model() {
    let dir = std::env::temp_dir().join(format!("tackle-react-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("drive.json");
    let record = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Rewrite)
            .with_env_overrides(false),
    )
    .unwrap();
    let run_live = new_run(Some(record));
    let live = Agent::new(FunctionModel::new("planner", planner))
        .tools(TOOLS)
        .run(&run_live, "Should I drive to Bergen tomorrow?")
        .await
        .unwrap()
        .state;
    run_live.cassette().unwrap().finish().unwrap();

    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let unreachable = FunctionModel::new("planner", move |_r: &ChatRequest| {
        seen.fetch_add(1, Ordering::SeqCst);
        Err(ModelError::Transport {
            message: "offline".into(),
        })
    });
    let replay = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let run_replay = new_run(Some(replay));
    let replayed = Agent::new(unreachable)
        .tools(TOOLS)
        .run(&run_replay, "Should I drive to Bergen tomorrow?")
        .await
        .unwrap()
        .state;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the model is never called");
    assert_eq!(replayed, live, "the same trajectory, step for step");
    run_replay.cassette().unwrap().finish().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// A model that searches for a weather tool, asks the weather in Bergen, then the
/// distance from Oslo, then answers.
fn search_then_weather_then_distance() -> Arc<tackle::agent::model::ScriptedModel> {
    Arc::new(tackle::agent::model::ScriptedModel::new([
        ChatResponse::calls(
            "",
            vec![call(
                "b",
                "tool_search",
                json!({"query": "weather forecast"}),
            )],
        ),
        ChatResponse::calls(
            "",
            vec![call("c", "weather_tomorrow", json!({"city": "Bergen"}))],
        ),
        ChatResponse::calls(
            "",
            vec![call(
                "d",
                "geo_distance",
                json!({"from": "Oslo", "to": "Bergen"}),
            )],
        ),
        ChatResponse::text("rain, and 463 km"),
    ]))
}

/// An agent offering `geo.distance`, with `weather.tomorrow` found through search.
fn with_weather_deferred(model: Arc<tackle::agent::model::ScriptedModel>) -> Agent {
    Agent::with_model(model)
        .tools(["geo.distance"])
        .deferred_tools(["weather.tomorrow"])
}

/// A recording holds the offered tools on a run's first model call and again only
/// when they change (a deferred tool found), each as the tool's definition serialized;
/// the recording replays as the run went.
#[tokio::test]
async fn a_recording_holds_the_tools_when_they_change_and_replays() {
    let (script, skill_of) = (search_then_weather_then_distance, with_weather_deferred);
    let dir = std::env::temp_dir().join(format!("tackle-react-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tools.json");
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
    };
    let model = script();
    let run = new_run(Some(Cassette::open(&path, config(Mode::Rewrite)).unwrap()));
    let live = skill_of(model.clone())
        .run(&run, "weather in Bergen?")
        .await
        .unwrap()
        .state;
    assert!(live.done, "{live:?}");
    run.cassette().unwrap().finish().unwrap();

    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let model_inputs: Vec<&Value> = file["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "operation")
        .map(|i| &i["input"])
        .collect();
    let requests = model.requests();
    assert_eq!(model_inputs.len(), 4);
    assert_eq!(requests.len(), 4);
    let recorded: Vec<Option<&Value>> = model_inputs.iter().map(|i| i.get("tools")).collect();
    assert_eq!(
        recorded.iter().map(Option::is_some).collect::<Vec<_>>(),
        [true, true, false, false],
        "the tools on the first call and when one is found, not otherwise"
    );
    for at in [0, 1] {
        assert_eq!(
            recorded[at],
            Some(&serde_json::to_value(&requests[at].tools).unwrap()),
            "call {at}: the tools as their definitions serialize"
        );
    }

    let replay_model = script();
    let run = new_run(Some(Cassette::open(&path, config(Mode::Replay)).unwrap()));
    let replayed = skill_of(replay_model.clone())
        .run(&run, "weather in Bergen?")
        .await
        .unwrap()
        .state;
    assert_eq!(replayed, live, "the same trajectory, step for step");
    // A scripted model is asked under replay too (its answers are compared with the
    // recording), with the same requests as the recorded run's.
    assert_eq!(replay_model.requests(), requests, "the same requests");
    run.cassette().unwrap().finish().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// Always asks for a distance with a number where a city should be.
fn stubborn(_r: &ChatRequest) -> Result<ChatResponse, ModelError> {
    Ok(ChatResponse::calls(
        "",
        vec![call("x", "geo_distance", json!({"from": 1, "to": "Oslo"}))],
    ))
}

struct UseBergen;

impl RepairHook for UseBergen {
    fn repair(&self, call: &ToolCallRequest, error: &ToolError) -> Option<Value> {
        assert!(error.to_string().contains("/from"), "{error}");
        let mut fixed = call.arguments.clone();
        fixed["from"] = json!("Bergen");
        Some(fixed)
    }
}

#[tokio::test]
async fn failures_are_observations_that_spend_the_error_budget() {
    let run = new_run(None);
    let agent = Agent::new(FunctionModel::new("stubborn", stubborn)).tools(TOOLS);
    let state = no_answer(agent.run(&run, "distance?").await.unwrap_err());
    assert!(!state.done);
    assert_eq!(state.error_budget, 0);
    assert_eq!(
        state.step_index, 3,
        "three failed calls, then the budget is spent"
    );
    assert_eq!(state.stop_reason, Some(StopReason::ErrorBudgetSpent));
    assert_eq!(
        state
            .stop_reason
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("the error budget is spent")
    );
    let first = &state.trajectory[0];
    let record = first.tool_call.as_ref().unwrap();
    let error = record.error.as_deref().unwrap();
    assert!(
        error.starts_with("invalid input for `geo.distance@1`"),
        "{error}"
    );
    assert_eq!(first.observation.as_deref(), Some(error));
    assert_eq!(record.error_kind, Some(tackle::ToolErrorKind::InvalidInput));
    assert_eq!(record.result, None);

    // An unknown tool and a tool's own error are observations too.
    let confused = FunctionModel::new("confused", |r: &ChatRequest| {
        Ok(if r.messages.iter().any(|m| m.role == Role::Tool) {
            ChatResponse::text("giving up")
        } else {
            ChatResponse::calls(
                "",
                vec![
                    call("a", "geo_teleport", json!({})),
                    call("b", "geo_distance", json!({"from": "Oslo", "to": "Mars"})),
                ],
            )
        })
    });
    let run = new_run(None);
    let state = Agent::new(confused)
        .tools(TOOLS)
        .run(&run, "?")
        .await
        .unwrap()
        .state;
    assert!(state.done);
    assert_eq!(state.error_budget, 1);
    let errors: Vec<_> = state
        .tool_calls
        .iter()
        .map(|c| c.error_kind.map(|k| k.as_str()))
        .collect();
    assert_eq!(errors, [Some("NotFound"), Some("Execution")]);

    // With a repair hook, invalid arguments get one more try before they count.
    let run = new_run(None);
    let repaired = Agent::new(FunctionModel::new("stubborn", stubborn))
        .tools(TOOLS)
        .configure(|skill| skill.with_repair(UseBergen))
        .max_steps(2)
        .run(&run, "distance?")
        .await
        .unwrap_err();
    let repaired = no_answer(repaired);
    assert_eq!(repaired.error_budget, 3);
    assert_eq!(repaired.tool_calls[0].result, Some(json!(463)));
    assert_eq!(
        repaired.tool_calls[0].arguments,
        json!({"from": "Bergen", "to": "Oslo"})
    );
    assert_eq!(
        repaired.stop_reason,
        Some(StopReason::StepLimit { max_steps: 2 })
    );
    assert_eq!(
        repaired
            .stop_reason
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("no answer within 2 steps")
    );
}

#[tokio::test]
async fn deferred_tools_are_offered_once_found() {
    use tackle::agent::model::{ChatModel, ScriptedModel};
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::calls(
            "",
            vec![call("a", "weather_tomorrow", json!({"city": "Bergen"}))],
        ),
        ChatResponse::calls(
            "",
            vec![call(
                "b",
                "tool_search",
                json!({"query": "weather forecast"}),
            )],
        ),
        ChatResponse::calls(
            "",
            vec![call("c", "weather_tomorrow", json!({"city": "Bergen"}))],
        ),
        ChatResponse::text("rain"),
    ]));
    let run = new_run(None);
    let agent = Agent::with_model(model.clone())
        .tools(["geo.distance"])
        .deferred_tools(["weather.tomorrow"]);
    let state = agent.run(&run, "weather in Bergen?").await.unwrap().state;
    assert!(state.done, "{state:?}");
    let offered: Vec<Vec<String>> = model
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    assert_eq!(
        offered[0],
        ["geo_distance", "tool_search"],
        "deferred tools are not offered"
    );
    assert_eq!(
        offered[2],
        ["geo_distance", "tool_search", "weather_tomorrow"],
        "found, then offered"
    );
    let errors: Vec<_> = state
        .tool_calls
        .iter()
        .map(|c| c.error_kind.map(|k| k.as_str()))
        .collect();
    assert_eq!(
        errors,
        [Some("NotFound"), None, None],
        "calling it before finding it fails"
    );
    assert_eq!(
        state.tool_calls[1].result,
        Some(
            json!([{"name": "weather_tomorrow", "description": "Tomorrow's forecast for a city."}])
        )
    );
    assert_eq!(state.tool_calls[2].result, Some(json!("rain, 9°C")));
    model.finish().unwrap();
    assert_eq!(model.model(), "script");
}

/// A reply whose second call was cut off: the first call runs, the cut one becomes a
/// failed observation the model sees, and the run goes on to its answer.
#[tokio::test]
async fn a_cut_off_call_is_a_failed_observation_and_the_complete_calls_run() {
    use tackle::agent::model::{ScriptedModel, UnreadableCall};
    let mut cut = ChatResponse::calls(
        "Distance and weather.",
        vec![
            call(
                "c1",
                "geo_distance",
                json!({"from": "Oslo", "to": "Bergen"}),
            ),
            call("c2", "weather_tomorrow", json!("{\"city\": \"Ber")),
        ],
    );
    cut.unreadable.push(UnreadableCall {
        index: 1,
        error: "the arguments are not JSON (EOF while parsing a string)".into(),
    });
    let model = Arc::new(ScriptedModel::new([
        cut,
        ChatResponse::calls(
            "",
            vec![call("c3", "weather_tomorrow", json!({"city": "Bergen"}))],
        ),
        ChatResponse::text("463 km, and rain: take the train."),
    ]));
    let run = new_run(None);
    let state = Agent::with_model(model.clone())
        .tools(TOOLS)
        .run(&run, "Drive to Bergen?")
        .await
        .unwrap()
        .state;
    assert_eq!(
        state.final_answer.as_deref(),
        Some("463 km, and rain: take the train.")
    );
    let results: Vec<(Option<Value>, Option<&str>)> = state
        .tool_calls
        .iter()
        .map(|c| (c.result.clone(), c.error.as_deref()))
        .collect();
    assert_eq!(results[0].0, Some(json!(463)), "the complete call ran");
    assert!(results[1].0.is_none());
    assert!(
        results[1]
            .1
            .is_some_and(|e| e.contains("not JSON") && e.contains("send the call again")),
        "{results:?}"
    );
    assert_eq!(
        results[2].0,
        Some(json!("rain, 9°C")),
        "the repaired call ran"
    );
    // The model saw the failure as the cut call's observation.
    let second = &model.requests()[1];
    let observation = second
        .messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some("c2"))
        .expect("an observation for the cut call");
    assert!(
        observation.content.contains("not JSON"),
        "{}",
        observation.content
    );
}

/// The scripted model's identity, offline: any call of it fails in its own way.
struct Offline;

impl tackle::agent::model::ChatModel for Offline {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script"
    }
    fn complete<'a>(&'a self, _: &'a ChatRequest) -> tackle::agent::model::ModelFuture<'a> {
        Box::pin(async {
            Err(ModelError::Transport {
                message: "offline: the model is not called".into(),
            })
        })
    }
}

/// A run that fails still leaves its recording: every interaction up to the failure,
/// marked incomplete with the failure; replaying it reproduces the failure offline.
#[tokio::test]
async fn a_failed_run_writes_its_cassette_and_replaying_it_fails_the_same_way() {
    use tackle::agent::model::ScriptedModel;
    let dir = std::env::temp_dir().join(format!("tackle-react-failed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("failed.json");
    let record = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Rewrite)
            .with_env_overrides(false),
    )
    .unwrap();
    let run_live = new_run(Some(record));
    // One turn, then the script runs out: the second completion fails.
    let model = Arc::new(ScriptedModel::new([ChatResponse::calls(
        "",
        vec![call(
            "c1",
            "geo_distance",
            json!({"from": "Oslo", "to": "Bergen"}),
        )],
    )]));
    let failed = Agent::with_model(model)
        .tools(TOOLS)
        .run(&run_live, "Drive to Bergen?")
        .await
        .unwrap_err();
    assert!(
        matches!(failed, AgentError::Model { step: 1, .. }),
        "{failed}"
    );
    let cassette = run_live.cassette().unwrap();
    cassette.finish_failed(&failed.to_string()).unwrap();
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["complete"], json!(false));
    assert_eq!(written["failure"], json!(failed.to_string()));
    let kinds: Vec<&str> = written["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "llm.scripted.complete@script",
            "geo.distance@1",
            "llm.scripted.complete@script"
        ],
        "every interaction up to and including the failing one"
    );

    let replay = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    assert_eq!(replay.recorded_failure(), Some(failed.to_string()));
    let run_replay = new_run(Some(replay));
    let again = Agent::new(Offline)
        .tools(TOOLS)
        .run(&run_replay, "Drive to Bergen?")
        .await
        .unwrap_err();
    match (&failed, &again) {
        (
            AgentError::Model {
                step: a,
                error: first,
            },
            AgentError::Model {
                step: b,
                error: second,
            },
        ) => {
            assert_eq!(a, b, "the same step");
            assert_eq!(
                first.to_string().split(": ").last(),
                second.to_string().split(": ").last()
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// With an answer schema, a reply without tool calls is the answer only when it is a
/// JSON document matching the schema; otherwise the model is told what is wrong and
/// asked again, and the failed step spends the error budget.
#[tokio::test]
async fn an_answer_schema_turns_a_bad_reply_into_a_repair_turn() {
    use tackle::agent::model::ScriptedModel;
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "rain": {"type": "boolean"}},
        "required": ["city", "rain"]
    });
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::text("It will rain in Bergen."),
        ChatResponse::text("```json\n{\"city\": \"Bergen\", \"rain\": \"yes\"}\n```"),
        ChatResponse::text("{\"city\": \"Bergen\", \"rain\": true}"),
    ]));
    let run = new_run(None);
    let state = Agent::with_model(model.clone())
        .tools(TOOLS)
        .configure(|skill| skill.with_answer_schema(schema.clone()).unwrap())
        .run(&run, "Rain in Bergen?")
        .await
        .unwrap()
        .state;
    assert!(state.done);
    assert_eq!(
        state.final_value,
        Some(json!({"city": "Bergen", "rain": true}))
    );
    assert_eq!(
        state.error_budget, 3,
        "repair turns do not spend the error budget (failed tool calls do)"
    );
    assert_eq!(state.step_index, 3);
    let requests = model.requests();
    assert_eq!(requests[0].response_schema, Some(schema.clone()));
    // A scripted model does not enforce schemas: it is told the schema.
    assert!(
        requests[0].messages[0].content.contains("\"rain\""),
        "{}",
        requests[0].messages[0].content
    );
    let last = |i: usize| requests[i].messages.last().unwrap().content.clone();
    assert!(last(1).contains("not a JSON document"), "{}", last(1));
    assert!(
        last(2).contains("does not match the required schema"),
        "{}",
        last(2)
    );
    assert!(last(2).contains("rain"), "{}", last(2));

    // A text answer with no schema set stays an answer, as before.
    let plain = Arc::new(ScriptedModel::new([ChatResponse::text("It will rain.")]));
    let run = new_run(None);
    let state = Agent::with_model(plain)
        .tools(TOOLS)
        .run(&run, "Rain?")
        .await
        .unwrap()
        .state;
    assert_eq!(state.final_answer.as_deref(), Some("It will rain."));
    assert_eq!(state.final_value, None);

    let bad = ReactSkill::new(
        Arc::new(ScriptedModel::new([])),
        run.runtime().registry(),
        TOOLS,
    )
    .unwrap()
    .with_answer_schema(json!({"type": 7}));
    assert!(matches!(bad, Err(AgentError::InvalidAnswerSchema(_))));
}

/// By default a reply without tool calls is an answer only when it says something: an
/// empty reply or the task said back is a repair turn. `TextAnswers::Any` takes any.
#[tokio::test]
async fn an_empty_or_echoed_reply_is_not_an_answer_unless_the_run_allows_it() {
    use tackle::agent::model::ScriptedModel;
    use tackle::agent::react::TextAnswers;
    let task = "How far is Bergen from Oslo?";
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::text("  "),
        ChatResponse::text("how far is  Bergen from Oslo?"),
        ChatResponse::text("About 463 km by road."),
    ]));
    let run = new_run(None);
    let state = Agent::with_model(model.clone())
        .tools(TOOLS)
        .run(&run, task)
        .await
        .unwrap()
        .state;
    assert_eq!(state.final_answer.as_deref(), Some("About 463 km by road."));
    assert_eq!(state.error_budget, 3, "the budget is for failed tool calls");
    let observations: Vec<&str> = state
        .trajectory
        .iter()
        .filter_map(|s| s.observation.as_deref())
        .collect();
    assert!(
        observations[0].contains("the reply is empty"),
        "{observations:?}"
    );
    assert!(
        observations[1].contains("repeats the task"),
        "{observations:?}"
    );

    let echo = Arc::new(ScriptedModel::new([ChatResponse::text(task)]));
    let run = new_run(None);
    let state = Agent::with_model(echo)
        .tools(TOOLS)
        .configure(|skill| skill.with_text_answers(TextAnswers::Any))
        .run(&run, task)
        .await
        .unwrap()
        .state;
    assert_eq!(state.final_answer.as_deref(), Some(task));
}

/// The effects of a test's loop: calls of `run` through its door.
struct Here<'a> {
    skill: &'a ReactSkill,
    run: &'a Run,
    ctx: &'a ToolContext,
}

impl tackle::agent::react::StepEffects for Here<'_> {
    async fn complete(
        &self,
        _step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> Result<ChatResponse, ModelError> {
        self.skill
            .ask_model(self.run, model, request, self.ctx)
            .await
    }

    async fn execute(
        &self,
        _step: usize,
        calls: Vec<tackle::ToolCall>,
    ) -> Vec<Result<Value, ToolError>> {
        self.skill.run_calls(self.run, calls, self.ctx).await
    }
}

/// A run paused at a step boundary goes on from its checkpoint, carried as JSON into
/// another run (as a Temporal run continued as new does): the tool it found is still
/// offered, the conversation is whole, and the state is the uninterrupted run's.
#[tokio::test]
async fn a_paused_run_goes_on_from_its_checkpoint() {
    use tackle::agent::react::{ReactCheckpoint, StepControl};
    let script = search_then_weather_then_distance;
    // The engine's effects call the models as the program's: no grant needed.
    let ctx = ToolContext::new();
    // Uninterrupted.
    let whole_run = new_run(None);
    let whole_model = script();
    let whole = with_weather_deferred(whole_model.clone())
        .run(&whole_run, "weather in Bergen?")
        .await
        .unwrap()
        .state;
    // Paused after the search, then on from the checkpoint in another run: the loop
    // driven step by step, as an engine drives it.
    let first_run = new_run(None);
    let model = script();
    let skill = with_weather_deferred(model.clone())
        .skill(&first_run)
        .unwrap();
    let here = Here {
        skill: &skill,
        run: &first_run,
        ctx: &ctx,
    };
    let paused = skill
        .run_from(skill.checkpoint("weather in Bergen?"), &here, &mut |s| {
            if s.step_index >= 1 {
                StepControl::Pause
            } else {
                StepControl::Continue
            }
        })
        .await
        .unwrap();
    assert_eq!(
        paused.state.stop_reason,
        Some(StopReason::Paused { after_steps: 1 })
    );
    assert!(paused.tools.iter().any(|t| t.name == "weather_tomorrow"));
    let carried: ReactCheckpoint =
        serde_json::from_str(&serde_json::to_string(&paused).unwrap()).unwrap();
    assert_eq!(carried, paused);
    let second_run = new_run(None);
    let here = Here {
        skill: &skill,
        run: &second_run,
        ctx: &ctx,
    };
    let mut boundaries = Vec::new();
    let ended = skill
        .run_from(carried, &here, &mut |s| {
            boundaries.push(s.step_index);
            StepControl::Continue
        })
        .await
        .unwrap();
    assert_eq!(
        boundaries,
        [2, 3],
        "no boundary at the checkpoint it went on from"
    );
    assert_eq!(ended.state, whole, "the uninterrupted run's state");
    assert_eq!(
        model.requests(),
        whole_model.requests(),
        "the model was asked exactly what the uninterrupted run asked"
    );
    assert!(matches!(ended.state.stop_reason, Some(StopReason::Done)));
    model.finish().unwrap();
}

/// Replies that are not answers are repair turns with their own limit (default 3):
/// the error budget, for failed tool calls, is untouched, and one reply past the limit
/// ends the run, saying so.
#[tokio::test]
async fn repair_turns_have_their_own_limit() {
    use tackle::agent::model::ScriptedModel;
    let task = "How far is Bergen from Oslo?";
    // With an error budget of 1, two repair turns still leave room for the answer.
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::text(""),
        ChatResponse::text(task),
        ChatResponse::text("About 463 km."),
    ]));
    let run = new_run(None);
    let state = Agent::with_model(model)
        .tools(TOOLS)
        .error_budget(1)
        .run(&run, task)
        .await
        .unwrap()
        .state;
    assert!(state.done, "{state:?}");
    assert_eq!(state.error_budget, 1);

    // Four empty replies: three repair turns, then the run stops.
    let model = Arc::new(ScriptedModel::new(vec![ChatResponse::text(""); 4]));
    let run = new_run(None);
    let state = no_answer(
        Agent::with_model(model.clone())
            .tools(TOOLS)
            .run(&run, task)
            .await
            .unwrap_err(),
    );
    assert!(!state.done);
    assert_eq!(
        state.stop_reason,
        Some(StopReason::RepairTurnsSpent {
            max_repair_turns: ReactSkill::DEFAULT_REPAIR_TURNS
        })
    );
    assert_eq!(state.step_index, 4);
    assert_eq!(state.error_budget, 3);
    assert_eq!(
        serde_json::to_value(state.stop_reason.as_ref().unwrap()).unwrap(),
        json!({"reason": "repair_turns_spent", "max_repair_turns": 3})
    );
    model.finish().unwrap();

    // A limit of its own: none at all.
    let model = Arc::new(ScriptedModel::new([ChatResponse::text("")]));
    let run = new_run(None);
    let state = no_answer(
        Agent::with_model(model)
            .tools(TOOLS)
            .repair_turns(0)
            .run(&run, task)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        state.stop_reason.map(|r| r.to_string()).as_deref(),
        Some("no answer after 0 repair turn(s)")
    );
}

//! Seed 004 (Stargraph skills): the ReAct records' shapes on the wire. Each test is a
//! row of `docs/seeds.md`.

use serde_json::json;
use tackle::agent::react::{ReactState, ReactStep, ToolCallRecord};

#[test]
fn react_records_read_the_seeds_json() {
    // As a Python ReactSkill would write its state.
    let state: ReactState = serde_json::from_value(json!({
        "trajectory": [
            {"thought": "look it up",
             "tool_call": {"name": "atlas.lookup@1", "arguments": {"city": "Oslo"},
                           "result": {"country": "Norway"}, "error": null},
             "observation": "{\"country\":\"Norway\"}"},
            {"thought": "Norway.", "tool_call": null, "observation": null}
        ],
        "tool_calls": [
            {"name": "atlas.lookup@1", "arguments": {"city": "Oslo"},
             "result": {"country": "Norway"}, "error": null}
        ],
        "done": true,
        "error_budget": 3,
        "final_answer": "Norway.",
        "step_index": 2
    }))
    .unwrap();
    assert!(state.done);
    assert_eq!(state.trajectory.len(), 2);
    assert_eq!(state.trajectory[1].tool_call, None);
    assert_eq!(state.tool_calls[0].name, "atlas.lookup@1");
    assert_eq!(
        state.tool_calls[0].result,
        Some(json!({"country": "Norway"}))
    );
}

#[test]
fn react_state_defaults_are_the_seeds() {
    let state: ReactState = serde_json::from_value(json!({})).unwrap();
    assert_eq!(state, ReactState::default());
    assert!(state.trajectory.is_empty() && state.tool_calls.is_empty());
    assert!(!state.done);
    assert_eq!(state.error_budget, 3);
    assert_eq!(state.final_answer, None);
    assert_eq!(state.step_index, 0);
    let step: ReactStep = serde_json::from_value(json!({"thought": "t"})).unwrap();
    assert_eq!(step.tool_call, None);
    assert_eq!(step.observation, None);
    let record: ToolCallRecord = serde_json::from_value(json!({"name": "a.b@1"})).unwrap();
    assert_eq!(record.arguments, json!({}));
    assert_eq!(record.result, None);
    assert_eq!(record.error, None);
}

#[test]
fn react_records_write_the_seeds_field_names() {
    let record = ToolCallRecord {
        name: "geo.distance@1".into(),
        arguments: json!({"from": "Oslo"}),
        result: None,
        error: Some("`geo.distance@1` failed: no road".into()),
        error_kind: None,
        call_id: None,
        step: 0,
    };
    let written = serde_json::to_value(ReactStep {
        thought: "how far?".into(),
        tool_call: Some(record),
        observation: Some("no road".into()),
    })
    .unwrap();
    assert_eq!(
        written,
        json!({
            "thought": "how far?",
            "tool_call": {"name": "geo.distance@1", "arguments": {"from": "Oslo"},
                          "result": null, "error": "`geo.distance@1` failed: no road", "step": 0},
            "observation": "no road"
        })
    );
    let state = serde_json::to_value(ReactState::default()).unwrap();
    let keys: Vec<&String> = state.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "trajectory",
            "tool_calls",
            "done",
            "error_budget",
            "final_answer",
            "step_index"
        ]
    );
}

mod skills {
    //! Seed 004's `Skill`: `subgraph` run deterministically for workflow skills, the
    //! portable `SkillSpec`, `Example {inputs, expected_output}`, `declared_output_keys`
    //! and the write whitelist; and the reference RAG skill, offline.

    use std::sync::Arc;

    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{json, Value};
    use tackle::agent::model::{ChatResponse, ScriptedModel};
    use tackle::agent::skill::{
        Example, Skill, SkillError, SkillKind, SkillSpec, Skills, Subgraph,
    };
    use tackle::pipeline::Pipeline;
    use tackle::{tool, Run, Runtime, SkillState, ToolContext};

    /// Split a sentence into words.
    #[tool(namespace = "text", version = "1", side_effects = none)]
    fn words(sentence: String) -> Vec<String> {
        sentence.split_whitespace().map(str::to_owned).collect()
    }

    /// Count the items of a list.
    #[tool(namespace = "text", version = "1", side_effects = none)]
    fn count(items: Vec<Value>) -> usize {
        items.len()
    }

    #[derive(Debug, Serialize, Deserialize, JsonSchema, SkillState)]
    struct Counted {
        words: Vec<String>,
        total: usize,
    }

    const GRAPH: &str = r#"
graph: count-words
nodes:
  - id: split
    kind: tool
    tool: text.words
    inputs: {sentence: "{{state.task}}"}
    out: words
  - id: count
    kind: tool
    tool: text.count
    inputs: {items: "{{state.words}}"}
    out: total
"#;

    fn counter() -> Result<Skill, SkillError> {
        Skill::builder::<Counted>("word-counter", "1.0.0", SkillKind::Workflow)
            .with_description("Counts the words of a sentence.")
            .with_tools(&["text.words", "text.count@1"])
            .with_subgraph(Pipeline::from_yaml(GRAPH).unwrap())
            .with_example(
                json!({"task": "a b"}),
                Some(json!({"words": ["a", "b"], "total": 2})),
            )
            .build()
    }

    fn new_run() -> Run {
        Run::new(&Arc::new(
            Runtime::from_inventory_in(module_path!()).unwrap(),
        ))
    }

    #[tokio::test]
    async fn a_workflow_skill_runs_its_subgraph_without_a_model() {
        let skill = counter().unwrap();
        assert_eq!(skill.declared_output_keys(), ["words", "total"]);
        let run = new_run();
        let mut skills = Skills::new();
        skills.register(skill, run.runtime().registry()).unwrap();
        let skill = skills.get("word-counter").unwrap();
        // An empty script: any model call would fail the run.
        let model = Arc::new(ScriptedModel::new(Vec::<ChatResponse>::new()));
        let done = skill
            .run::<Counted>(model, &run, "the door is one", &ToolContext::new())
            .await
            .unwrap();
        assert_eq!(done.state.total, 4);
        assert_eq!(done.state.words, ["the", "door", "is", "one"]);
        assert!(done.run.trajectory.is_empty(), "no ReAct loop ran");
        assert_eq!(done.graph_state.unwrap()["task"], "the door is one");
        // With inputs of the example's shape.
        let again = skill
            .run_workflow::<Counted>(&run, json!({"task": "a b"}), &ToolContext::new())
            .await
            .unwrap();
        let expected = skill.examples()[0].expected_output.clone().unwrap();
        assert_eq!(
            serde_json::to_value(&again.state).unwrap(),
            Value::Object(expected)
        );
    }

    #[test]
    fn an_undeclared_write_is_refused_when_the_skill_is_built() {
        let graph = GRAPH.replace("out: total", "out: scratch");
        let built = Skill::builder::<Counted>("word-counter", "1.0.0", SkillKind::Workflow)
            .with_description("Counts.")
            .with_tools(&["text.words", "text.count"])
            .with_subgraph(Pipeline::from_yaml(&graph).unwrap())
            .build();
        match built {
            Err(SkillError::UndeclaredWrite {
                node,
                key,
                declared,
                ..
            }) => {
                assert_eq!((node.as_str(), key.as_str()), ("count", "scratch"));
                assert_eq!(declared, ["words", "total"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_subgraph_tool_the_skill_does_not_list_is_refused_at_registration() {
        let skill = Skill::builder::<Counted>("word-counter", "1.0.0", SkillKind::Workflow)
            .with_description("Counts.")
            .with_tools(&["text.words"])
            .with_subgraph(Pipeline::from_yaml(GRAPH).unwrap())
            .build()
            .unwrap();
        let rt = Runtime::from_inventory_in(module_path!()).unwrap();
        match Skills::new().register(skill, rt.registry()) {
            Err(SkillError::ToolNotListed { node, tool, .. }) => {
                assert_eq!((node.as_str(), tool.as_str()), ("count", "text.count"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_agents_answer_with_an_undeclared_key_is_refused_at_the_boundary() {
        let skill = Skill::builder::<Counted>("agent-counter", "1.0.0", SkillKind::Agent)
            .with_description("Counts with a model.")
            .build()
            .unwrap();
        let model = Arc::new(ScriptedModel::new([ChatResponse::text(
            r#"{"words": [], "total": 0, "mood": "fine"}"#,
        )]));
        match skill
            .run::<Counted>(model, &new_run(), "count", &ToolContext::new())
            .await
        {
            Err(SkillError::BadAnswer { problems, .. }) => {
                assert!(problems.contains("`mood`"), "{problems}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn examples_have_the_seeds_shape() {
        let example: Example = serde_json::from_value(json!({"inputs": {"q": "x"}})).unwrap();
        assert_eq!(example.expected_output, None);
        assert_eq!(
            serde_json::to_value(&example).unwrap(),
            json!({"inputs": {"q": "x"}, "expected_output": null})
        );
        // Inputs must be an object; an expected output must fit the state.
        let bad = Skill::builder::<Counted>("c", "1.0.0", SkillKind::Utility)
            .with_description("x")
            .with_example(json!("just text"), None)
            .build();
        assert!(matches!(bad, Err(SkillError::BadExample { index: 0, .. })));
        let bad = Skill::builder::<Counted>("c", "1.0.0", SkillKind::Utility)
            .with_description("x")
            .with_example(json!({}), Some(json!({"total": "many"})))
            .build();
        assert!(matches!(bad, Err(SkillError::BadExample { .. })));
    }

    #[test]
    fn the_portable_spec_round_trips_and_binds_back() {
        let skill = counter().unwrap();
        let spec = skill.to_spec();
        assert_eq!(spec.site_id(), "word-counter@1.0.0");
        assert_eq!(spec.declared_output_keys, ["words", "total"]);
        let wire = serde_json::to_value(&spec).unwrap();
        for field in [
            "name",
            "version",
            "kind",
            "description",
            "tools",
            "subgraph",
            "system_prompt",
            "state_schema",
            "requires",
            "examples",
            "bubble_events",
            "declared_output_keys",
        ] {
            assert!(wire.get(field).is_some(), "{field} in {wire}");
        }
        assert_eq!(wire["kind"], "workflow");
        let back: SkillSpec = serde_json::from_value(wire).unwrap();
        assert_eq!(back, spec);
        let rebuilt = Skill::from_spec::<Counted>(back).unwrap();
        assert_eq!(rebuilt.to_spec(), spec);

        // A spec whose keys are not the state type's is refused.
        #[derive(Serialize, Deserialize, JsonSchema, SkillState)]
        struct Other {
            answer: String,
        }
        assert!(matches!(
            Skill::from_spec::<Other>(spec),
            Err(SkillError::SpecMismatch { .. })
        ));
    }

    #[test]
    fn a_subgraph_by_path_is_read_when_the_skill_is_built() {
        let dir = std::env::temp_dir().join(format!("tackle-subgraph-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("count.yaml");
        std::fs::write(&path, GRAPH).unwrap();
        let path = path.to_string_lossy().into_owned();
        let spec: SkillSpec = serde_json::from_value(json!({
            "name": "word-counter", "version": "1.0.0", "kind": "workflow",
            "description": "Counts.", "tools": ["text.words", "text.count"],
            "subgraph": path, "state_schema": {}
        }))
        .unwrap();
        assert_eq!(spec.subgraph, Some(Subgraph::Path(path.clone())));
        assert!(spec.bubble_events, "bubble_events defaults to true");
        let skill = Skill::from_spec::<Counted>(spec.clone()).unwrap();
        assert_eq!(skill.graph().unwrap().name, "count-words");
        std::fs::remove_file(&path).unwrap();
        match Skill::from_spec::<Counted>(spec) {
            Err(SkillError::Subgraph { error, .. }) => {
                assert!(error.to_string().contains("count.yaml"), "{error}")
            }
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[allow(dead_code)]
#[path = "../../examples/rag_skill.rs"]
mod rag_example;

mod rag {
    use super::rag_example as example;

    #[tokio::test]
    async fn the_reference_rag_skill_runs_offline() {
        let done = example::ask("what does a cassette hold when it is written?")
            .await
            .unwrap();
        assert!(
            done.state.answer.starts_with("A cassette is a JSON file"),
            "{:?}",
            done.state
        );
        assert_eq!(done.state.sources[0], "cassette");
        assert_eq!(done.run.tool_calls.len(), 1);
        assert_eq!(done.run.tool_calls[0].name, "docs.retrieve@1");
        // The example of the skill holds.
        let skill = example::rag_skill().unwrap();
        let example = &skill.examples()[0];
        let asked = example.inputs["task"].as_str().unwrap();
        let again = example::ask(asked).await.unwrap();
        let expected = example.expected_output.clone().unwrap();
        assert_eq!(
            serde_json::to_value(&again.state).unwrap(),
            serde_json::Value::Object(expected)
        );
    }
}

mod react_defaults {
    use std::sync::Arc;

    use serde_json::json;
    use tackle::agent::model::{ChatResponse, FunctionModel, ToolCallRequest};
    use tackle::agent::react::{ReactSkill, StopReason};
    use tackle::agent::skill::SkillKind;
    use tackle::{tool, Agent, Run, Runtime};

    /// Says nothing useful.
    #[tool(namespace = "loop", version = "1", side_effects = none)]
    fn noop() -> u32 {
        0
    }

    #[tokio::test]
    async fn react_skill_is_an_agent_of_10_steps_and_3_errors_by_default() {
        assert_eq!(ReactSkill::KIND, SkillKind::Agent);
        assert_eq!(ReactSkill::DEFAULT_ERROR_BUDGET, 3);
        // A model that never answers: the run stops at the default 10 steps.
        let model = Arc::new(FunctionModel::new("looper", |_request: &_| {
            Ok(ChatResponse::calls(
                "again",
                vec![ToolCallRequest {
                    id: "n".into(),
                    name: "loop_noop".into(),
                    arguments: json!({}),
                }],
            ))
        }));
        let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
        // An agent's limits are the skill's defaults unless set.
        let agent = Agent::with_model(model).tools(["loop.noop"]);
        let run = agent
            .run(&Run::new(&rt), "loop")
            .await
            .unwrap_err()
            .into_state()
            .unwrap();
        assert_eq!(ReactSkill::DEFAULT_MAX_STEPS, 10);
        assert_eq!(run.step_index, 10);
        assert!(!run.done);
        assert_eq!(run.error_budget, 3);
        assert_eq!(
            run.stop_reason,
            Some(StopReason::StepLimit { max_steps: 10 })
        );
        assert_eq!(
            run.stop_reason.as_ref().map(ToString::to_string).as_deref(),
            Some("no answer within 10 steps")
        );
    }
}

//! Bounded everywhere: values nested far deeper than any parser allows, built in code,
//! are refused with a typed error at every way in (the door, a run's batch, a trusted
//! invoke, a tool's output, a model's tool calls) and never abort the process; a huge
//! unknown key is `NotFound` without suggestions; a deeply nested pipeline document is
//! a parse error. The speed of these refusals is measured in `benches/bounds.rs`.

use std::sync::Arc;

use serde_json::{json, Value};
use tackle::agent::model::{
    complete, completion, ChatRequest, ChatResponse, FunctionModel, ModelError, ToolCallRequest,
};
use tackle::bounds::{nested, Limits, DEFAULT_MAX_DEPTH};
use tackle::pipeline::{Pipeline, PipelineError};
use tackle::{
    registry::DynamicTool, tool, Registry, Run, Runtime, SideEffects, ToolCall, ToolContext,
    ToolErrorKind, ToolSpec,
};

/// Echoes any value.
#[tool(namespace = "b", version = "1", side_effects = none)]
fn echo(value: Value) -> Value {
    value
}

const DEEP: usize = 100_000;

/// An object input `{"value": <nested DEEP levels>}` (not built with `json!`, which
/// would serialize the deep value recursively).
fn deep_input() -> Value {
    let mut input = serde_json::Map::new();
    input.insert("value".into(), nested(DEEP));
    Value::Object(input)
}

#[tokio::test]
async fn a_deep_input_is_invalid_input_at_every_way_in() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let ctx = ToolContext::new();
    let err = rt.call("b.echo", deep_input(), &ctx).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(err.to_string().contains("deeper than 128"), "{err}");
    // A key that names nothing: still refused for its input first, and dropped safely.
    let err = rt.call("b.nothing", deep_input(), &ctx).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    // A trusted caller skipping validation does not skip the bounds.
    let result = rt.invoke("b.echo", deep_input(), &ctx, false).await;
    assert!(!result.errors.is_empty());
    assert!(
        result.errors[0].contains("deeper than"),
        "{:?}",
        result.errors
    );
    // A run's batch.
    let outcomes = Run::new(&rt)
        .execute_batch(
            vec![
                ToolCall::new("a", "b.echo", deep_input()),
                ToolCall::new("b", "b.echo", json!({"value": 1})),
            ],
            &ctx,
        )
        .await;
    assert_eq!(
        outcomes[0].result().as_ref().unwrap_err().kind(),
        ToolErrorKind::InvalidInput
    );
    assert_eq!(outcomes[1].result().as_ref().unwrap(), &json!(1));
    // At the limit it passes.
    let at_limit = json!({ "value": nested(DEFAULT_MAX_DEPTH - 1) });
    assert!(rt.call("b.echo", at_limit, &ctx).await.is_ok());
}

#[tokio::test]
async fn a_deep_output_is_invalid_output() {
    let mut registry = Registry::default();
    let spec = ToolSpec::new("b", "grow", "1", SideEffects::None, "Returns a deep value.");
    registry
        .register(DynamicTool::new(spec, |_ctx, _input| async move {
            Ok::<_, String>(nested(DEEP))
        }))
        .unwrap();
    let rt = Runtime::new(registry);
    let err = rt
        .call("b.grow", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidOutput);
}

#[tokio::test]
async fn the_limits_are_configurable() {
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_limits(Limits {
            max_depth: 3,
            max_bytes: 64,
        });
    let ctx = ToolContext::new();
    assert!(rt
        .call("b.echo", json!({"value": [[1]]}), &ctx)
        .await
        .is_ok());
    let deep = rt.call("b.echo", json!({"value": [[[1]]]}), &ctx).await;
    assert_eq!(deep.unwrap_err().kind(), ToolErrorKind::InvalidInput);
    let large = rt
        .call("b.echo", json!({"value": "x".repeat(100)}), &ctx)
        .await;
    let err = large.unwrap_err();
    assert!(err.to_string().contains("larger than 64 bytes"), "{err}");
    // Deeper than the cap is taken as the cap.
    let capped = Runtime::default().with_limits(Limits {
        max_depth: 100_000,
        max_bytes: 64,
    });
    assert_eq!(capped.limits().max_depth, tackle::bounds::MAX_DEPTH_CAP);
}

#[tokio::test]
async fn a_models_deep_tool_call_is_a_malformed_answer() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let model = FunctionModel::new("deep", |_request: &ChatRequest| {
        Ok(ChatResponse::calls(
            "",
            vec![ToolCallRequest {
                id: "c".into(),
                name: "b_echo".into(),
                arguments: deep_input(),
            }],
        ))
    });
    let op = completion(&model);
    let ctx = ToolContext::new().with_grant("llm:*");
    match complete(&Run::new(&rt), &op, &model, &ChatRequest::default(), &ctx).await {
        Err(ModelError::Malformed { message }) => {
            assert!(message.contains("tool call 0"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_huge_unknown_key_is_not_found_without_suggestions() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let key = "b.echo".repeat(200_000);
    match rt.call(&key, json!({}), &ToolContext::new()).await {
        Err(tackle::ToolError::NotFound { suggestions, .. }) => assert!(suggestions.is_empty()),
        other => panic!("{other:?}"),
    }
    // A short typo still gets its suggestion.
    match rt.call("b.ecko", json!({}), &ToolContext::new()).await {
        Err(tackle::ToolError::NotFound { suggestions, .. }) => {
            assert_eq!(suggestions.first().map(String::as_str), Some("b.echo@1"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_deeply_nested_pipeline_document_is_a_parse_error() {
    for doc in [
        format!("name: x\nnodes: {}{}\n", "[".repeat(DEEP), "]".repeat(DEEP)),
        format!(
            "name: x\nnodes:\n{}",
            (0..2_000)
                .map(|i| format!("{}- \n", " ".repeat(i * 2)))
                .collect::<String>()
        ),
    ] {
        match Pipeline::from_yaml(&doc) {
            Err(PipelineError::Parse { message, line, .. }) => {
                assert!(message.contains("nested deeper than 64"), "{message}");
                assert!(line >= 2, "the line where it goes too deep: {line}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_deep_pipeline_state_is_refused() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let doc = Pipeline::from_yaml(
        "name: p\nnodes:\n  - id: e\n    kind: tool\n    tool: b.echo\n    inputs: {value: \"{{state.v}}\"}\n",
    )
    .unwrap();
    let mut state = serde_json::Map::new();
    state.insert("v".into(), nested(DEEP));
    match doc
        .run(&Run::new(&rt), Value::Object(state), &ToolContext::new())
        .await
    {
        Err(PipelineError::StateOutOfBounds(reason)) => {
            assert!(reason.contains("deeper than 128"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

/// One of two tools whose keys map to one model name.
#[tool(namespace = "a.b", name = "c", version = "1", side_effects = none)]
fn abc_dotted() -> u8 {
    1
}

/// The other.
#[tool(namespace = "a", name = "b_c", version = "1", side_effects = none)]
fn abc_underscored() -> u8 {
    2
}

#[test]
fn two_keys_with_one_model_name_are_refused_naming_both() {
    use tackle::agent::model::ScriptedModel;
    use tackle::agent::react::{AgentError, ReactSkill};
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let model = Arc::new(ScriptedModel::new(Vec::<ChatResponse>::new()));
    match ReactSkill::new(model, rt.registry(), &["a.b.c", "a.b_c"]) {
        Err(AgentError::NameCollision {
            name,
            first,
            second,
        }) => {
            assert_eq!(name, "a_b_c");
            assert_eq!((first.as_str(), second.as_str()), ("a.b.c@1", "a.b_c@1"));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_yaml_alias_bomb_is_a_parse_error() {
    // Nine levels of nine aliases in a node's inputs: 9^9 (387 million) strings if
    // expanded.
    let mut doc = String::from(
        "name: x\nnodes:\n  - id: a\n    kind: tool\n    tool: t\n    inputs:\n      a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..9 {
        let p = i - 1;
        doc.push_str(&format!(
            "      a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    match Pipeline::from_yaml(&doc) {
        Err(PipelineError::Parse { message, .. }) => {
            assert!(message.contains("repetition limit"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

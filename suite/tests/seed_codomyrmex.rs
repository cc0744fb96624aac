//! Seed 001 (codomyrmex `tool_use`): `ValidationResult`, `validate_input` /
//! `validate_output`, the registry's `list_names`, `contains`, `search` and `invoke`
//! (a `Result` of status, data, message, errors, duration_ms), and `ToolChain` with
//! `ChainStep`, `ChainResult`, `add_step`, `clear`, `validate` and `execute`. Every
//! entry goes through the door. Each test is a row of `docs/seeds.md`.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tackle::audit::{GateDecision, MemoryAudit};
use tackle::call::InvokeStatus;
use tackle::chain::{ChainOptions, ChainResult, ChainStep, ToolChain};
use tackle::registry::ToolQuery;
use tackle::validate::{validate_input, validate_output, ValidationResult};
use tackle::{
    registry::DynamicTool, tool, Registry, Run, Runtime, SideEffects, ToolContext, ToolSpec,
};

/// Doubles a number.
#[tool(namespace = "calc", side_effects = none, tags = ["math"])]
fn double(n: i64) -> i64 {
    n * 2
}

/// Adds one to a number (needs `calc:inc`).
#[tool(namespace = "calc", side_effects = none, tags = ["math", "slow"], requires_capability = "calc:inc")]
fn inc(n: i64) -> i64 {
    n + 1
}

/// Claims to return a number, returns text.
#[tool(namespace = "calc", side_effects = none, output_schema = r#"{"type": "integer"}"#)]
fn liar(n: i64) -> String {
    format!("{n}")
}

#[test]
fn validation_result_has_string_errors_and_merges() {
    let ok = ValidationResult::ok();
    assert!(ok.valid && ok.errors.is_empty());
    let bad = ValidationResult::from_errors(["x is missing"]);
    assert!(!bad.valid);
    let merged = ok
        .merge(bad)
        .merge(ValidationResult::from_errors(["y is wrong"]));
    assert!(!merged.valid);
    assert_eq!(merged.errors, ["x is missing", "y is wrong"]);
    assert_eq!(
        merged.to_dict(),
        json!({"valid": false, "errors": ["x is missing", "y is wrong"]})
    );
    assert_eq!(
        serde_json::from_value::<ValidationResult>(json!({})).unwrap(),
        ValidationResult::ok(),
        "valid defaults to true, errors to []"
    );
}

#[test]
fn validate_input_and_output_know_the_seeds_keywords() {
    let schema = json!({
        "type": "object",
        "required": ["name", "tags"],
        "additionalProperties": false,
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5},
            "kind": {"enum": ["a", "b"]},
            "n": {"type": "integer", "minimum": 1, "maximum": 9},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}
        }
    });
    let good = json!({"name": "ada", "kind": "a", "n": 3, "tags": ["x"]});
    assert!(validate_input(&good, &schema).valid);
    assert!(validate_output(&good, &schema).valid);
    let bad = json!({"name": "a", "kind": "c", "n": 10, "tags": [1, "y", "z"], "extra": true});
    let result = validate_input(&bad, &schema);
    assert!(!result.valid);
    // One message per problem: minLength, enum, maximum, items type, maxItems, and
    // the extra property.
    assert_eq!(result.errors.len(), 6, "{:?}", result.errors);
    assert!(result.errors.iter().all(|e| e.starts_with("at /")));
    assert!(!validate_input(&json!({"tags": []}), &schema).valid);
    // A schema that is not a schema is the error.
    let broken = validate_input(&json!(1), &json!({"type": 7}));
    assert!(!broken.valid);
    assert!(
        broken.errors[0].starts_with("the schema is not valid"),
        "{:?}",
        broken.errors
    );
}

#[test]
fn the_registry_lists_names_contains_and_searches() {
    let registry = Registry::from_inventory_in(module_path!()).unwrap();
    let names = registry.list_names();
    assert_eq!(names, ["calc.double@1", "calc.inc@1", "calc.liar@1"]);
    assert_eq!(registry.len(), 3);
    assert!(registry.contains("calc.double@1"));
    assert!(registry.contains("calc.double"));
    assert!(registry.contains("double"));
    assert!(!registry.contains("triple"));
    assert_eq!(registry.get("double").unwrap().key(), "calc.double@1");
    let found = |q: ToolQuery| {
        registry
            .search(&q)
            .iter()
            .map(|t| t.key().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found(ToolQuery::new().with_name_containing("DOU")),
        ["calc.double@1"]
    );
    assert_eq!(
        found(ToolQuery::new().with_any_tag(["slow", "nope"])),
        ["calc.inc@1"]
    );
    assert_eq!(
        found(ToolQuery::new().with_all_tags(["math", "slow"])),
        ["calc.inc@1"]
    );
}

#[test]
fn list_names_is_sorted_as_strings() {
    let mut registry = Registry::new();
    for (namespace, version) in [("b", "1.9.0"), ("b", "1.10.0"), ("a", "2.0.0")] {
        let spec = ToolSpec::new(namespace, "t", version, SideEffects::None, "x");
        registry
            .register(DynamicTool::new(
                spec,
                |_c, i| async move { Ok::<_, String>(i) },
            ))
            .unwrap();
    }
    // As strings, "1.10.0" sorts before "1.9.0" (the listing, by semver, after it).
    assert_eq!(
        registry.list_names(),
        ["a.t@2.0.0", "b.t@1.10.0", "b.t@1.9.0"]
    );
    let listed: Vec<&str> = registry.list().map(|t| t.key()).collect();
    assert_eq!(listed, ["a.t@2.0.0", "b.t@1.9.0", "b.t@1.10.0"]);
}

#[test]
fn registering_a_taken_name_is_an_error() {
    let mut registry = Registry::new();
    let tool = || {
        let spec = ToolSpec::new("t", "x", "1", SideEffects::None, "x");
        DynamicTool::new(spec, |_c, i| async move { Ok::<_, String>(i) })
    };
    registry.register(tool()).unwrap();
    assert!(registry.register(tool()).is_err());
    assert!(registry.unregister("t.x@1").is_ok());
    assert!(
        registry.unregister("t.x@1").is_err(),
        "gone: not found again"
    );
}

#[tokio::test]
async fn invoke_reports_a_result_and_goes_through_the_door() {
    let audit = Arc::new(MemoryAudit::new());
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_audit(Arc::clone(&audit));
    let ctx = ToolContext::new();

    let done = rt.invoke("double", json!({"n": 21}), &ctx, true).await;
    assert_eq!(done.status, InvokeStatus::Success);
    assert_eq!(done.data, Some(json!(42)));
    assert!(done.message.is_empty() && done.errors.is_empty());
    assert!(done.duration_ms >= 0.0);
    let wire = serde_json::to_value(&done).unwrap();
    for field in ["status", "data", "message", "errors", "duration_ms"] {
        assert!(wire.get(field).is_some(), "{field}: {wire}");
    }
    assert_eq!(wire["status"], "success");

    let invalid = rt.invoke("double", json!({"n": "x"}), &ctx, true).await;
    assert_eq!(invalid.status, InvokeStatus::Failure);
    assert_eq!(invalid.errors.len(), 1);
    assert!(invalid
        .message
        .starts_with("invalid input for `calc.double@1`"));

    let missing = rt.invoke("triple", json!({}), &ctx, true).await;
    assert_eq!(missing.status, InvokeStatus::Failure);
    assert!(missing.message.contains("no tool matches `triple`"));

    // validate = false skips the schema stages, audited as skipped...
    let unchecked = rt.invoke("liar", json!({"n": 7}), &ctx, false).await;
    assert_eq!(unchecked.status, InvokeStatus::Success, "{unchecked:?}");
    assert_eq!(unchecked.data, Some(json!("7")));
    let checked = rt.invoke("liar", json!({"n": 7}), &ctx, true).await;
    assert_eq!(
        checked.status,
        InvokeStatus::Failure,
        "the output breaks its schema"
    );
    let events = audit.events();
    let skipped = events.iter().find(|e| e.key == "calc.liar@1").unwrap();
    assert_eq!(skipped.gates.input, GateDecision::Skipped);
    assert_eq!(skipped.gates.output, GateDecision::Skipped);
    // ...and nothing else: the capability gate still holds.
    let denied = rt.invoke("inc", json!({"n": 1}), &ctx, false).await;
    assert_eq!(denied.status, InvokeStatus::Failure);
    assert!(
        denied.message.contains("requires `calc:inc`"),
        "{}",
        denied.message
    );
    let granted = rt
        .invoke(
            "inc",
            json!({"n": 1}),
            &ToolContext::new().with_grant("calc:inc"),
            false,
        )
        .await;
    assert_eq!(granted.data, Some(json!(2)));
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

#[tokio::test]
async fn chains_have_the_seeds_steps_results_and_options() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let ctx = ToolContext::new();
    let step: ChainStep = serde_json::from_value(json!({
        "tool_name": "calc.double",
        "input_mapping": {"n": "start.n"},
        "output_key": "twice"
    }))
    .unwrap();
    let mut chain = ToolChain::default();
    chain
        .add_step(step)
        .add_step(ChainStep::new("calc.double", "four_times").with_mapping("n", "twice"));
    assert_eq!(chain.len(), 2);
    assert!(chain.validate(rt.registry()).valid);

    let done = chain
        .execute(
            &run,
            Some(object(json!({"start": {"n": 5}}))),
            &ctx,
            ChainOptions::default(),
        )
        .await;
    assert!(done.success, "{:?}", done.errors);
    assert_eq!(done.context["four_times"], 20);
    let wire = serde_json::to_value(&done).unwrap();
    let keys: Vec<&String> = wire.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "success",
            "context",
            "step_results",
            "errors",
            "duration_ms"
        ]
    );
    assert_eq!(wire["step_results"][1]["status"], "success");

    // An unknown tool: validate_tools refuses before any step runs...
    chain.add_step(ChainStep::new("calc.triple", "x"));
    let refused = chain
        .execute(&run, None, &ctx, ChainOptions::default())
        .await;
    assert!(!refused.success);
    assert!(refused.step_results.is_empty());
    assert!(refused.errors[0].contains("calc.triple"));
    // ...without it, the steps before it run, and stop_on_failure = false goes on.
    let mut after = ToolChain::new([
        ChainStep::new("calc.triple", "x"),
        ChainStep::new("calc.double", "y").with_mapping("n", "n"),
    ]);
    let options = ChainOptions {
        stop_on_failure: false,
        validate_tools: false,
    };
    let went_on = after
        .execute(&run, Some(object(json!({"n": 1}))), &ctx, options)
        .await;
    assert!(!went_on.success);
    assert_eq!(went_on.step_results.len(), 2);
    assert_eq!(went_on.context["y"], 2);
    after.clear();
    assert!(after.is_empty());
}

#[test]
fn chain_result_defaults_are_the_seeds() {
    let empty: ChainResult = serde_json::from_value(json!({})).unwrap();
    assert_eq!(empty, ChainResult::default());
    assert!(empty.success);
    assert!(empty.context.is_empty() && empty.step_results.is_empty() && empty.errors.is_empty());
    assert_eq!(empty.duration_ms, 0.0);
    assert_eq!(
        serde_json::to_value(&empty).unwrap(),
        json!({"success": true, "context": {}, "step_results": [], "errors": [], "duration_ms": 0.0})
    );
    // A step written as the seed writes it reads back; `stop_on_failure` (tackle's own,
    // default true) is written only when false.
    let step: ChainStep =
        serde_json::from_value(json!({"tool_name": "math.double", "output_key": "d"})).unwrap();
    assert_eq!(
        serde_json::to_value(&step).unwrap(),
        json!({"tool_name": "math.double", "input_mapping": {}, "output_key": "d"})
    );
}

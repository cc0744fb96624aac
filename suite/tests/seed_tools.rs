//! Seed 000 (Stargraph tools): `ToolSpec`'s fields and wire format, `SideEffects`,
//! `ReplayPolicy`, the default policy mapping, the decorator's arguments, and seed 003's
//! side-effect classes read as aliases. Each test is a row of `docs/seeds.md`.

use rust_decimal::Decimal;
use serde_json::json;
use tackle::{spec::ReplayPolicy, tool, Registry, SideEffects, ToolSpec};

/// A spec as the seed writes it: `permissions`, no `replay_policy`, a decimal cost.
fn seed_spec(side_effects: &str) -> serde_json::Value {
    json!({
        "name": "broker_request",
        "namespace": "nautilus",
        "version": "1",
        "description": "Ask the broker.",
        "input_schema": {"type": "object", "properties": {}, "required": []},
        "output_schema": {},
        "side_effects": side_effects,
        "permissions": ["tools:broker_request"],
        "idempotency_key": null,
        "cost_estimate": "0.010",
        "examples": [],
        "tags": ["broker"],
        "deprecated": false
    })
}

#[test]
fn tool_spec_reads_the_seeds_wire_format() {
    let spec: ToolSpec = serde_json::from_value(seed_spec("read")).unwrap();
    assert_eq!(spec.key(), "nautilus.broker_request@1");
    assert_eq!(spec.permissions, ["tools:broker_request"]);
    assert_eq!(spec.cost_estimate, Some(Decimal::new(10, 3)));
    // No replay_policy: the default for the side effects.
    assert_eq!(spec.replay_policy, ReplayPolicy::RecordedResult);
    let written = serde_json::to_value(&spec).unwrap();
    assert_eq!(written["permissions"], json!(["tools:broker_request"]));
    assert!(written.get("requires_capability").is_none());
    assert_eq!(written["replay_policy"], "recorded-result");
    assert_eq!(written["cost_estimate"], "0.010");
    // Every one of the seed's fourteen fields is written, set or not.
    let bare = ToolSpec::new("n", "t", "1", SideEffects::None, "d");
    let bare = serde_json::to_value(&bare).unwrap();
    for field in [
        "name",
        "namespace",
        "version",
        "description",
        "input_schema",
        "output_schema",
        "side_effects",
        "replay_policy",
        "permissions",
        "idempotency_key",
        "cost_estimate",
        "examples",
        "tags",
        "deprecated",
    ] {
        assert!(bare.get(field).is_some(), "{field} in {bare}");
    }
    assert_eq!(bare["permissions"], json!([]));
    assert_eq!(bare["idempotency_key"], json!(null));
    assert_eq!(bare["deprecated"], json!(false));
}

#[test]
fn requires_capability_is_read_as_permissions() {
    let mut wire = seed_spec("write");
    let permissions = wire.as_object_mut().unwrap().remove("permissions").unwrap();
    wire["requires_capability"] = permissions;
    let spec: ToolSpec = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(spec.permissions, ["tools:broker_request"]);
    assert_eq!(spec.replay_policy, ReplayPolicy::MustStub);
    // A single string is a list of one; `null` is none.
    wire["requires_capability"] = serde_json::json!("tools:broker_request");
    let spec: ToolSpec = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(spec.permissions, ["tools:broker_request"]);
    wire["requires_capability"] = serde_json::Value::Null;
    let spec: ToolSpec = serde_json::from_value(wire.clone()).unwrap();
    assert!(spec.permissions.is_empty());
    wire["requires_capability"] = serde_json::json!(7);
    assert!(
        serde_json::from_value::<ToolSpec>(wire).is_err(),
        "not a string"
    );
}

#[test]
fn the_default_policy_mapping() {
    for (effects, policy) in [
        ("none", "recorded-result"),
        ("read", "recorded-result"),
        ("write", "must-stub"),
        ("external", "must-stub"),
    ] {
        let spec: ToolSpec = serde_json::from_value(seed_spec(effects)).unwrap();
        assert_eq!(spec.replay_policy.as_str(), policy, "{effects}");
    }
}

#[test]
fn enums_are_the_seeds_words() {
    assert_eq!(SideEffects::WORDS, ["none", "read", "write", "external"]);
    assert_eq!(
        ReplayPolicy::WORDS,
        ["must-stub", "fail-loud", "recorded-result"]
    );
    let unknown = serde_json::from_value::<ToolSpec>(seed_spec("writes"))
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("writes"), "{unknown}");
}

#[test]
fn seed_003_side_effect_classes_are_read_as_seed_000s() {
    for (class, effects) in [
        ("pure", SideEffects::None),
        ("read-only", SideEffects::Read),
        ("side-effecting", SideEffects::Write),
        ("external-stateful", SideEffects::External),
    ] {
        let spec: ToolSpec = serde_json::from_value(seed_spec(class)).unwrap();
        assert_eq!(spec.side_effects, effects, "{class}");
        assert_eq!(
            spec.replay_policy,
            ReplayPolicy::default_for(effects),
            "{class}"
        );
    }
}

/// Adds, classified as seed 003 says: a pure function.
#[tool(namespace = "alias", side_effects = pure)]
fn pure_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Reads, classified as seed 003 says.
#[tool(namespace = "alias", side_effects = "read-only")]
fn peek(path: String) -> String {
    path
}

/// Posts, classified as seed 003 says.
#[tool(namespace = "alias", side_effects = external_stateful)]
fn post(body: String) -> String {
    body
}

#[test]
fn the_macro_reads_seed_003_classes_too() {
    let registry = Registry::from_inventory_in(module_path!()).unwrap();
    let effects = |key: &str| registry.resolve(key).unwrap().spec().side_effects;
    assert_eq!(effects("alias.pure_add"), SideEffects::None);
    assert_eq!(effects("alias.peek"), SideEffects::Read);
    assert_eq!(effects("alias.post"), SideEffects::External);
    assert_eq!(
        registry.resolve("alias.post").unwrap().spec().replay_policy,
        ReplayPolicy::MustStub
    );
    assert_eq!(pure_add(1, 2), 3);
    assert_eq!(peek("p".into()), "p");
    assert_eq!(post("b".into()), "b");
}

/// The decorator's arguments, as `#[tool]` attributes.
#[tool(
    name = "broker_request",
    namespace = "nautilus_demo",
    version = "1",
    side_effects = read,
    requires_capability = "tools:broker_request",
    tags = ["broker"],
    cost_estimate = "0.01",
    replay_policy = fail_loud,
    idempotency_key = "intent"
)]
fn ask(agent_id: String, intent: String) -> String {
    format!("{agent_id}: {intent}")
}

#[test]
fn the_decorators_arguments_are_the_macros() {
    let spec = ask::spec();
    assert_eq!(spec.key(), "nautilus_demo.broker_request@1");
    assert_eq!(spec.permissions, ["tools:broker_request"]);
    assert_eq!(spec.replay_policy, ReplayPolicy::FailLoud);
    assert_eq!(spec.idempotency_key.as_deref(), Some("intent"));
    assert_eq!(spec.cost_estimate, Some(Decimal::new(1, 2)));
    // The description falls back to the doc comment's first line.
    assert_eq!(
        spec.description,
        "The decorator's arguments, as `#[tool]` attributes."
    );
    assert_eq!(ask("a".into(), "i".into()), "a: i");
}

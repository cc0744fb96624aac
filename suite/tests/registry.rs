//! The registry built from inventory: tools from this crate *and* from a linked crate,
//! a stable listing, valid schemas, search, and run-time tools.

use serde_json::json;
// The fixture crate only holds tools: link it explicitly so they register.
use tackle_fixture_tools as _;

use tackle::registry::ToolQuery;
use tackle::{registry::DynamicTool, tool, Registry, Runtime, SideEffects, ToolContext, ToolSpec};

/// Square a number.
#[tool(namespace = "math", version = "2", side_effects = none, tags = ["math"])]
fn square(x: i64) -> i64 {
    x * x
}

/// Square a number (old).
#[tool(name = "square", namespace = "math", version = "1", side_effects = none, tags = ["math"], deprecated)]
fn square_v1(x: i64) -> i64 {
    x * x
}

/// Square a number (newest, and semver-highest: 10 > 2).
#[tool(name = "square", namespace = "math", version = "10", side_effects = none, tags = ["math", "fast"])]
fn square_v10(x: i64) -> i64 {
    x * x
}

#[test]
fn tools_from_a_linked_crate_register() {
    let registry = Registry::from_inventory().unwrap();
    let keys: Vec<&str> = registry.list().map(|t| t.key()).collect();
    assert!(keys.contains(&"fixture.text.reverse@1.0.0"), "{keys:?}");
    assert!(keys.contains(&"fixture.text.word_count@1.0.0"), "{keys:?}");
    assert!(keys.contains(&"math.square@2"), "{keys:?}");
}

#[test]
fn listing_is_sorted_and_deterministic() {
    let a: Vec<String> = Registry::from_inventory()
        .unwrap()
        .list()
        .map(|t| t.key().to_owned())
        .collect();
    let b: Vec<String> = Registry::from_inventory()
        .unwrap()
        .list()
        .map(|t| t.key().to_owned())
        .collect();
    assert_eq!(a, b);
    assert_eq!(
        a,
        [
            "fixture.text.reverse@1.0.0",
            "fixture.text.word_count@1.0.0",
            "math.square@1",
            "math.square@2",
            "math.square@10"
        ]
    );
    let specs_a = serde_json::to_string(
        &Registry::from_inventory()
            .unwrap()
            .list()
            .map(|t| t.spec())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let specs_b = serde_json::to_string(
        &Registry::from_inventory()
            .unwrap()
            .list()
            .map(|t| t.spec())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(specs_a, specs_b, "the serialized listing is byte-stable");
}

#[test]
fn every_registered_schema_is_valid_json_schema() {
    let registry = Registry::from_inventory().unwrap();
    assert!(!registry.is_empty());
    for tool in registry.list() {
        for (which, schema) in [
            ("input", &tool.spec().input_schema),
            ("output", &tool.spec().output_schema),
        ] {
            if let Err(e) = tackle::validate::check_schema(schema) {
                panic!("{} {which} schema: {e}", tool.key());
            }
            let root = schema.as_object().unwrap();
            if which == "input" {
                assert_eq!(root["type"], "object", "{}", tool.key());
                assert!(
                    root.contains_key("properties") && root.contains_key("required"),
                    "{}",
                    tool.key()
                );
            }
        }
    }
}

#[test]
fn namespace_and_name_resolve_to_the_highest_version() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(registry.get("math.square").unwrap().key(), "math.square@10");
    assert_eq!(registry.get("square").unwrap().key(), "math.square@10");
    assert_eq!(
        registry.get("math.square@1").unwrap().key(),
        "math.square@1"
    );
    assert_eq!(
        registry.get("reverse").unwrap().key(),
        "fixture.text.reverse@1.0.0"
    );
}

#[test]
fn search_hides_deprecated_tools_unless_asked() {
    let registry = Registry::from_inventory().unwrap();
    let keys = |q: ToolQuery| {
        registry
            .search(&q)
            .iter()
            .map(|t| t.key().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(ToolQuery::new().with_name_containing("SQUARE")),
        ["math.square@2", "math.square@10"]
    );
    assert_eq!(
        keys(
            ToolQuery::new()
                .with_name_containing("square")
                .with_deprecated(true)
        ),
        ["math.square@1", "math.square@2", "math.square@10"]
    );
    assert_eq!(
        keys(ToolQuery::new().with_all_tags(["math", "fast"])),
        ["math.square@10"]
    );
    assert_eq!(
        keys(ToolQuery::new().with_any_tag(["stats", "fast"])),
        ["fixture.text.word_count@1.0.0", "math.square@10"]
    );
}

#[tokio::test]
async fn dynamic_tools_pass_the_same_door() {
    let mut rt = Runtime::from_inventory().unwrap();
    let mut spec = ToolSpec::new("dyn", "shout", "1", SideEffects::None, "Upper-cases text.");
    spec.input_schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    spec.output_schema = json!({"type": "string"});
    spec.permissions = vec!["text:shout".into()];
    let tool = DynamicTool::new(spec, |_ctx, input| async move {
        let text = input["text"].as_str().ok_or("text must be a string")?;
        Ok::<_, &str>(json!(text.to_uppercase()))
    });
    assert_eq!(rt.registry_mut().register(tool).unwrap(), "dyn.shout@1");

    let ctx = ToolContext::new().with_grant("text:*");
    assert_eq!(
        rt.call("dyn.shout@1", json!({"text": "hi"}), &ctx)
            .await
            .unwrap(),
        json!("HI")
    );
    let err = rt
        .call("dyn.shout@1", json!({"text": 1}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tackle::ToolErrorKind::InvalidInput);
    let err = rt
        .call("dyn.shout@1", json!({"text": "hi"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tackle::ToolErrorKind::CapabilityDenied);

    rt.registry_mut().unregister("dyn.shout@1").unwrap();
    let err = rt
        .call("dyn.shout@1", json!({"text": "hi"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tackle::ToolErrorKind::NotFound);
}

#[tokio::test]
async fn linked_tools_are_callable() {
    let rt = Runtime::from_inventory().unwrap();
    let out = rt
        .call(
            "fixture.text.reverse",
            json!({"text": "abc"}),
            &ToolContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(out, json!("cba"));
}

/// A live tool `<namespace>.ping@1` answering `answer`.
fn live_tool(namespace: &str, answer: &'static str) -> DynamicTool {
    let spec = ToolSpec::new(namespace, "ping", "1", SideEffects::None, "Answers.");
    DynamicTool::new(spec, move |_ctx, _input| async move {
        Ok::<_, String>(json!(answer))
    })
}

#[tokio::test]
async fn a_call_in_flight_keeps_the_live_tool_it_resolved() {
    use std::sync::Arc;
    let rt = Arc::new(Runtime::default());
    let live = rt.live_tools();
    let gate = Arc::new(tokio::sync::Notify::new());
    let (started, running) = tokio::sync::oneshot::channel::<()>();
    let started = std::sync::Mutex::new(Some(started));
    let spec = ToolSpec::new("remote", "ping", "1", SideEffects::None, "Answers.");
    let held = Arc::clone(&gate);
    let tool = DynamicTool::new(spec, move |_ctx, _input| {
        let held = Arc::clone(&held);
        if let Some(started) = started.lock().unwrap().take() {
            let _ = started.send(());
        }
        async move {
            held.notified().await;
            Ok::<_, String>(json!("first"))
        }
    });
    live.change("test", |tools| tools.register(tool)).unwrap();
    let in_flight = tokio::spawn({
        let rt = Arc::clone(&rt);
        async move { rt.call("remote.ping", json!({}), &ToolContext::new()).await }
    });
    running.await.unwrap();
    live.change("test", |tools| tools.unregister("remote.ping@1"))
        .unwrap();
    let gone = rt
        .call("remote.ping", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(gone.kind(), tackle::ToolErrorKind::NotFound);
    gate.notify_one();
    assert_eq!(in_flight.await.unwrap().unwrap(), json!("first"));
}

#[tokio::test]
async fn fixed_tools_win_and_misses_name_live_keys() {
    let rt = Runtime::from_inventory().unwrap();
    let live = rt.live_tools();
    // A live `math.square@2` would shadow the fixed one: the fixed one answers.
    live.change("test", |tools| {
        let spec = ToolSpec::new("math", "square", "2", SideEffects::None, "Not a square.");
        tools.register(DynamicTool::new(spec, |_ctx, _input| async {
            Ok::<_, String>(json!("shadow"))
        }))?;
        tools.register(live_tool("remote", "pong"))
    })
    .unwrap();
    let ctx = ToolContext::new();
    assert_eq!(
        rt.call("math.square@2", json!({"x": 3}), &ctx)
            .await
            .unwrap(),
        json!(9)
    );
    assert_eq!(
        rt.call("ping", json!({}), &ctx).await.unwrap(),
        json!("pong")
    );
    // Both kinds are listed by `tools()`, the fixed one once.
    let tools = rt.tools();
    assert!(tools.contains("remote.ping@1"));
    assert_eq!(
        tools.get("math.square@2").unwrap().spec().description,
        "Square a number."
    );
    match rt.call("remote.pong", json!({}), &ctx).await.unwrap_err() {
        tackle::ToolError::NotFound {
            suggestions,
            registry_empty,
            ..
        } => {
            assert!(
                suggestions.iter().any(|s| s == "remote.ping@1"),
                "{suggestions:?}"
            );
            assert!(!registry_empty);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_failed_change_changes_nothing() {
    use std::sync::Arc;
    let audit = Arc::new(tackle::audit::MemoryAudit::new());
    let rt = Runtime::default().with_audit(Arc::clone(&audit));
    let live = rt.live_tools();
    live.change("test", |tools| tools.register(live_tool("remote", "pong")))
        .unwrap();
    let failed = live.change("test", |tools| {
        tools.unregister("remote.ping@1")?;
        // The same key twice: refused, so the removal above is not kept either.
        tools.register(live_tool("other", "a"))?;
        tools.register(live_tool("other", "b"))
    });
    assert!(failed.is_err());
    assert_eq!(live.keys(), ["remote.ping@1"]);
    assert_eq!(audit.changes().len(), 1);
}

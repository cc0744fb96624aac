//! The registry built from inventory: tools from this crate *and* from a linked crate,
//! a stable listing, valid schemas, search, and run-time tools.

use serde_json::json;
// The fixture crate only holds tools: link it explicitly so they register.
use tackle_fixture_tools as _;

use tackle::registry::ToolQuery;
use tackle::{tool, DynamicTool, Registry, Runtime, SideEffects, ToolContext, ToolSpec};

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

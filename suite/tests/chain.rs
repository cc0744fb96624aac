//! Tool chains: dot-notation mapping, output keys and merging, failure handling, and
//! validation before a run.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tackle::chain::{lookup, ChainError, ChainStep, ToolChain};
use tackle::{tool, Run, Runtime, ToolContext};

/// Find a customer's latest order.
#[tool(namespace = "shop", side_effects = read)]
fn latest_order(customer: String) -> Value {
    json!({"id": format!("{customer}-9"), "items": [{"sku": "A1", "qty": 2}, {"sku": "B7", "qty": 1}]})
}

/// Price a SKU.
#[tool(namespace = "shop", side_effects = none)]
fn price(sku: String, qty: u32) -> Result<Value, String> {
    let unit = match sku.as_str() {
        "A1" => 250,
        "B7" => 990,
        other => return Err(format!("unknown SKU {other}")),
    };
    Ok(json!({"sku": sku, "total_cents": unit * qty}))
}

fn start(customer: &str) -> Map<String, Value> {
    json!({"customer": customer}).as_object().cloned().unwrap()
}

#[test]
fn paths_use_dots_and_indices() {
    let ctx = json!({"order": {"items": [{"sku": "A1"}, {"sku": "B7"}]}});
    let ctx = ctx.as_object().unwrap();
    assert_eq!(lookup(ctx, "order.items[1].sku"), Some(&json!("B7")));
    assert_eq!(lookup(ctx, "order.items.0.sku"), Some(&json!("A1")));
    assert_eq!(lookup(ctx, "order.items[5].sku"), None);
    assert_eq!(lookup(ctx, "order.nope"), None);
}

#[tokio::test]
async fn steps_feed_each_other_through_the_context() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let chain = ToolChain::new([
        ChainStep::new("shop.latest_order", "order").with_mapping("customer", "customer"),
        ChainStep::new("shop.price", "")
            .with_mapping("sku", "order.items[0].sku")
            .with_mapping("qty", "order.items[0].qty"),
    ]);
    assert!(chain.validate(rt.registry()).valid);
    let result = chain.run(&run, start("ada"), &ToolContext::new()).await;
    assert!(result.success, "{:?}", result.errors);
    assert_eq!(result.context["order"]["id"], "ada-9");
    assert_eq!(
        result.context["total_cents"], 500,
        "merged from an empty output_key"
    );
    assert_eq!(result.step_results.len(), 2);
    assert_eq!(result.step_results[0].key, "shop.latest_order@1");
    assert_eq!(
        result.step_results[1].data,
        Some(json!({"sku": "A1", "total_cents": 500}))
    );
    assert!(result.duration_ms >= result.step_results[0].duration_ms);
}

#[tokio::test]
async fn failures_stop_the_chain_unless_a_step_keeps_going() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let ctx = ToolContext::new();
    let bad_sku = |step: ChainStep| {
        ToolChain::new([
            step,
            ChainStep::new("shop.latest_order", "after").with_mapping("customer", "customer"),
        ])
    };
    let failing = ChainStep::new("shop.price", "p")
        .with_mapping("sku", "customer")
        .with_mapping("qty", "nowhere");
    let stopped = bad_sku(failing.clone()).run(&run, start("ada"), &ctx).await;
    assert!(!stopped.success);
    assert_eq!(stopped.errors, ["step 0: `nowhere` is not in the context"]);
    assert!(!stopped.context.contains_key("after"));

    let mut start_with_qty = start("ada");
    start_with_qty.insert("n".into(), json!(1));
    let going = bad_sku(
        ChainStep::new("shop.price", "p")
            .with_mapping("sku", "customer")
            .with_mapping("qty", "n")
            .with_stop_on_failure(false),
    )
    .run(&run, start_with_qty, &ctx)
    .await;
    assert!(!going.success);
    assert_eq!(
        going.errors,
        ["step 0: `shop.price@1` failed: unknown SKU ada"]
    );
    assert_eq!(
        going.context["after"]["id"], "ada-9",
        "the next step still ran"
    );
}

#[test]
fn validation_names_unknown_tools_and_fields() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let chain = ToolChain::new([
        ChainStep::new("shop.latest_ordr", "o"),
        ChainStep::new("shop.price", "p").with_mapping("amount", "x"),
    ]);
    let problems = chain.problems(rt.registry());
    assert_eq!(problems.len(), 2);
    assert!(
        matches!(&problems[0], ChainError::UnknownTool { step: 0, message } if message.contains("did you mean"))
    );
    assert_eq!(
        problems[1].to_string(),
        "step 1: `shop.price@1` has no input field `amount`; its fields are: sku, qty"
    );
    // The seed's `validate`: the tools exist (only the unknown tool is a problem).
    let checked = chain.validate(rt.registry());
    assert!(!checked.valid);
    assert_eq!(checked.errors, [problems[0].to_string()]);
    // The stricter check finds the misspelt field too.
    let strict = chain.validate_fields(rt.registry());
    assert_eq!(
        strict.errors,
        problems.iter().map(ToString::to_string).collect::<Vec<_>>()
    );
    let fields_only =
        ToolChain::new([ChainStep::new("shop.price", "p").with_mapping("amount", "x")]);
    assert!(fields_only.validate(rt.registry()).valid);
    assert!(!fields_only.validate_fields(rt.registry()).valid);
}

/// Prices what the context holds: `sku` and `qty` at its top level.
#[tool(namespace = "shop", side_effects = none)]
fn price_here(sku: String, qty: u32, customer: Option<String>, total_cents: Option<u32>) -> Value {
    json!({"priced": format!(
        "{qty} x {sku} for {}: {}",
        customer.unwrap_or_default(),
        total_cents.unwrap_or_default()
    )})
}

#[tokio::test]
async fn a_step_without_a_mapping_gets_the_context_so_far() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let chain = ToolChain::new([
        ChainStep::new("shop.price", "")
            .with_mapping("sku", "sku")
            .with_mapping("qty", "qty"),
        // No mapping: its input is the whole context (customer, sku, qty, total_cents
        // merged from the step before).
        ChainStep::new("shop.price_here", "line"),
    ]);
    let mut input = start("ada");
    input.insert("sku".into(), json!("B7"));
    input.insert("qty".into(), json!(2));
    let result = chain.run(&run, input, &ToolContext::new()).await;
    assert!(result.success, "{:?}", result.errors);
    assert_eq!(result.context["line"]["priced"], "2 x B7 for ada: 1980");
}

#[tokio::test]
async fn a_chain_builds_a_pipeline_that_ends_in_the_same_state() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let chain = ToolChain::new([
        ChainStep::new("shop.latest_order", "order").with_mapping("customer", "customer"),
        ChainStep::new("shop.price", "")
            .with_mapping("sku", "order.items[1].sku")
            .with_mapping("qty", "order.items[1].qty"),
    ]);
    let ctx = ToolContext::new();
    let chained = chain.run(&run, start("bob"), &ctx).await;
    assert!(chained.success, "{:?}", chained.errors);
    let pipeline = chain.to_pipeline("shop").unwrap();
    assert_eq!(pipeline.nodes.len(), 2);
    assert_eq!(
        pipeline.nodes[1].inputs.as_ref().unwrap()["sku"],
        json!("{{state.order.items[1].sku}}")
    );
    assert!(pipeline.nodes[1].merge);
    let piped = pipeline
        .run(&run, Value::Object(start("bob")), &ctx)
        .await
        .unwrap();
    assert_eq!(piped, Value::Object(chained.context));
    assert_eq!(piped["total_cents"], 990);

    // A step that keeps going after a failure is not a pipeline's.
    let lenient = ToolChain::new([ChainStep::new("shop.price", "p").with_stop_on_failure(false)]);
    assert!(matches!(
        lenient.to_pipeline("x"),
        Err(ChainError::NotAPipelineStep { step: 0, .. })
    ));
}

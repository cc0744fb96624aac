//! `#[tool]` through the facade: every attribute lands in the spec with its meaning,
//! the function stays callable as written, and schemas follow the contract.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tackle::spec::{ExecutionMode, Trust};
use tackle::{spec::ReplayPolicy, tool, Args, Decimal, SideEffects, ToolContext, ToolSpec};

/// Add two integers.
#[tool(namespace = "math", version = "1", side_effects = none)]
fn add(
    /// left operand
    a: i64,
    /// right operand
    b: i64,
) -> i64 {
    a + b
}

#[derive(Debug, Serialize, JsonSchema)]
struct Receipt {
    accepted: bool,
    total: String,
}

#[derive(Debug, thiserror::Error)]
#[error("the shop is closed")]
struct ShopError;

/// Place an order with the shop.
///
/// This second paragraph is documentation for people, not the description.
#[tool(
    name = "place-order",
    namespace = "shop.orders",
    version = "2.1.0",
    side_effects = external,
    replay_policy = fail_loud,
    requires_capability = ["shop:order", "net:http"],
    idempotency_key = "order_id",
    cost_estimate = "0.015",
    tags = ["shop", "orders"],
    examples = [
        r#"{"order_id": "A1", "qty": 2}"#,
        (r#"{"order_id": "B2", "qty": 1}"#, r#"{"accepted": true, "total": "9.99"}"#),
    ],
    deprecated = "use shop.orders.place-order@3",
    execution_mode = sequential,
    needs_approval,
    timeout_ms = 2500,
    max_result_tokens = 400,
    trust = trusted,
    params(qty = "how many to order"),
)]
async fn place_order(order_id: String, qty: u32) -> Result<Receipt, ShopError> {
    if qty == 0 {
        return Err(ShopError);
    }
    Ok(Receipt {
        accepted: !order_id.is_empty(),
        total: format!("{}.00", qty * 5),
    })
}

/// Greets someone.
///
/// # Arguments
///
/// * `name` - who to greet
/// * `excited` - end with an exclamation mark
#[tool(namespace = "text", side_effects = none)]
fn greet(name: String, excited: Option<bool>) -> String {
    format!(
        "Hello, {name}{}",
        if excited.unwrap_or(false) { "!" } else { "." }
    )
}

#[tool(
    namespace = "text",
    side_effects = none,
    description = "Echo a value back, with hand-written schemas.",
    input_schema = r#"{"type": "object", "properties": {"value": {"type": "string", "maxLength": 3}}, "required": ["value"]}"#,
    output_schema = r#"{"type": "string", "maxLength": 3}"#
)]
fn echo(value: String) -> String {
    value
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Sort {
    Relevance,
    Newest,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Range {
    from: u32,
    to: u32,
}

/// A search query.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SearchQuery {
    /// words to look for
    terms: Vec<String>,
    sort: Sort,
    range: Option<Range>,
    weights: BTreeMap<String, f64>,
    limit: Option<u8>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Hit {
    title: String,
    sort: Sort,
}

/// Search the catalogue.
#[tool(namespace = "catalogue", version = "3", side_effects = read, tags = ["search"])]
fn search(Args(q): Args<SearchQuery>) -> Vec<Hit> {
    q.terms
        .into_iter()
        .take(q.limit.unwrap_or(10).into())
        .map(|title| Hit {
            title,
            sort: Sort::Newest,
        })
        .collect()
}

type Ctx = ToolContext;

/// Lists the caller's grants, twice (through the context and an alias of it).
#[tool(namespace = "ctx", side_effects = none)]
async fn grants(ctx: &ToolContext, #[ctx] again: &Ctx, label: String) -> Vec<String> {
    let mut out = vec![label];
    out.extend(ctx.capabilities().grants().iter().cloned());
    out.extend(again.capabilities().grants().iter().cloned());
    out
}

/// Writes a line to nowhere.
#[tool(namespace = "log", side_effects = write)]
fn log_line(line: String) {
    let _ = line;
}

/// Takes a keyword as a parameter name.
#[tool(namespace = "text", side_effects = none, deprecated)]
fn keyword(r#type: String) -> String {
    r#type
}

/// Hands out a session token.
#[tool(
    namespace = "vault",
    side_effects = read,
    result_shaping = spill_to_file,
    secrets = ["VAULT_TOKEN"],
    sensitivity = secret,
    preferred_model = "smart",
    defer_loading,
    reveals_secrets,
    sandbox = in_process,
    blocking = true,
)]
fn session_token(user: String) -> String {
    format!("token-for-{user}")
}

#[test]
fn key_and_spec_exist_and_the_function_is_unchanged() {
    assert_eq!(add::KEY, "math.add@1");
    assert_eq!(add(2, 3), 5);
    assert_eq!(add::spec().key(), add::KEY);
    assert_eq!(place_order::KEY, "shop.orders.place-order@2.1.0");
    assert_eq!(greet::KEY, "text.greet@1", "version defaults to 1");
    assert_eq!(greet("Ann".into(), Some(true)), "Hello, Ann!");
    assert_eq!(keyword("x".into()), "x");
}

#[tokio::test]
async fn async_functions_stay_async() {
    let receipt = place_order("A".into(), 2).await.unwrap();
    assert!(receipt.accepted);
    assert!(place_order("A".into(), 0).await.is_err());
}

#[test]
fn every_attribute_reaches_the_spec() {
    let spec = place_order::spec();
    assert_eq!(spec.name, "place-order");
    assert_eq!(spec.namespace, "shop.orders");
    assert_eq!(spec.version, "2.1.0");
    assert_eq!(spec.description, "Place an order with the shop.");
    assert_eq!(spec.side_effects, SideEffects::External);
    assert_eq!(spec.replay_policy, ReplayPolicy::FailLoud);
    assert_eq!(spec.permissions, ["shop:order", "net:http"]);
    assert_eq!(spec.idempotency_key.as_deref(), Some("order_id"));
    assert_eq!(spec.cost_estimate, Some(Decimal::new(15, 3)));
    assert_eq!(spec.tags, ["shop", "orders"]);
    assert_eq!(spec.examples.len(), 2);
    assert_eq!(spec.examples[0].input, json!({"order_id": "A1", "qty": 2}));
    assert_eq!(spec.examples[0].output, None);
    assert_eq!(
        spec.examples[1].output,
        Some(json!({"accepted": true, "total": "9.99"}))
    );
    assert!(spec.deprecated);
    assert_eq!(
        spec.deprecation_note.as_deref(),
        Some("use shop.orders.place-order@3")
    );
    assert_eq!(spec.execution_mode, ExecutionMode::Sequential);
    assert!(spec.needs_approval);
    assert_eq!(spec.timeout_ms, Some(2500));
    assert_eq!(spec.max_result_tokens, Some(400));
    assert_eq!(spec.trust, Trust::Trusted);
    assert!(!spec.blocking);
    assert_eq!(
        spec.input_schema["properties"]["qty"]["description"],
        "how many to order"
    );
    assert_eq!(
        spec.output_schema["properties"]["accepted"]["type"],
        "boolean"
    );

    // The spec is plain data: JSON and back, cost as a string.
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["cost_estimate"], "0.015");
    assert_eq!(json["replay_policy"], "fail-loud");
    assert_eq!(json["side_effects"], "external");
    assert_eq!(serde_json::from_value::<ToolSpec>(json).unwrap(), spec);
}

#[test]
fn the_other_attributes_reach_the_spec_too() {
    use tackle::spec::{ModelHint, PreferredModel, ResultShaping, SandboxKind, Sensitivity};
    let spec = session_token::spec();
    assert_eq!(spec.result_shaping, Some(ResultShaping::SpillToFile));
    assert_eq!(spec.secrets, ["VAULT_TOKEN"]);
    assert_eq!(spec.sensitivity, Sensitivity::Secret);
    assert_eq!(
        spec.preferred_model,
        Some(PreferredModel::Hint(ModelHint::Smart))
    );
    assert!(spec.defer_loading && spec.reveals_secrets && spec.blocking);
    assert_eq!(spec.sandbox, SandboxKind::InProcess);
    assert!(!spec.needs_approval && !spec.deprecated);

    let plain = add::spec();
    assert_eq!(plain.result_shaping, None);
    assert!(plain.secrets.is_empty() && plain.preferred_model.is_none());
    assert_eq!(plain.sensitivity, Sensitivity::Internal);
    assert_eq!(plain.sandbox, SandboxKind::InProcess);
    assert!(!plain.defer_loading && !plain.reveals_secrets && !plain.blocking);
    assert_eq!((plain.timeout_ms, plain.max_result_tokens), (None, None));
    assert_eq!(plain.idempotency_key, None);
    assert_eq!(plain.cost_estimate, None);
}

#[test]
fn defaults_are_derived() {
    let spec = add::spec();
    assert_eq!(
        spec.replay_policy,
        ReplayPolicy::RecordedResult,
        "derived from side_effects = none"
    );
    assert_eq!(
        log_line::spec().replay_policy,
        ReplayPolicy::MustStub,
        "derived from side_effects = write"
    );
    assert_eq!(spec.execution_mode, ExecutionMode::Auto);
    assert_eq!(spec.trust, Trust::FirstParty);
    assert!(spec.permissions.is_empty() && spec.tags.is_empty() && spec.examples.is_empty());
    assert!(!spec.deprecated && !spec.needs_approval);
    assert!(keyword::spec().deprecated);
    assert_eq!(keyword::spec().deprecation_note, None);
}

#[test]
fn input_schema_from_parameters() {
    let schema = add::spec().input_schema;
    assert_eq!(
        schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": "integer", "format": "int64", "description": "left operand"},
                "b": {"type": "integer", "format": "int64", "description": "right operand"}
            },
            "required": ["a", "b"]
        })
    );
    let keys: Vec<_> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "b"], "properties keep parameter order");
    let root: Vec<_> = schema.as_object().unwrap().keys().collect();
    assert_eq!(
        root,
        [
            "$schema",
            "type",
            "additionalProperties",
            "properties",
            "required"
        ],
        "stable, natural key order"
    );
}

#[test]
fn descriptions_from_the_arguments_section_and_options_are_not_nullable() {
    let s = greet::spec().input_schema;
    assert_eq!(s["properties"]["name"]["description"], "who to greet");
    assert_eq!(
        s["properties"]["excited"],
        json!({"type": "boolean", "description": "end with an exclamation mark"})
    );
    assert_eq!(
        s["required"],
        json!(["name"]),
        "Option parameters are optional"
    );
    assert_eq!(greet::spec().description, "Greets someone.");
}

#[test]
fn parameters_without_docs_get_no_invented_description() {
    let s = place_order::spec().input_schema;
    assert!(
        s["properties"]["order_id"].get("description").is_none(),
        "{s}"
    );
}

#[test]
fn overrides_replace_the_derived_schemas() {
    let spec = echo::spec();
    assert_eq!(spec.input_schema["properties"]["value"]["maxLength"], 3);
    assert_eq!(spec.input_schema["required"], json!(["value"]));
    assert_eq!(
        spec.output_schema,
        json!({"type": "string", "maxLength": 3})
    );
    assert_eq!(
        spec.description,
        "Echo a value back, with hand-written schemas."
    );
}

#[test]
fn args_makes_a_type_the_whole_input_with_nested_types() {
    let s = search::spec().input_schema;
    assert_eq!(s["type"], "object");
    assert!(s.get("title").is_none());
    assert_eq!(s["required"], json!(["terms", "sort", "weights"]));
    assert_eq!(
        s["properties"]["terms"],
        json!({"type": "array", "items": {"type": "string"}, "description": "words to look for"})
    );
    assert_eq!(
        s["properties"]["weights"]["additionalProperties"]["type"],
        "number"
    );
    assert_eq!(s["$defs"]["Sort"]["enum"], json!(["relevance", "newest"]));
    assert_eq!(s["$defs"]["Range"]["required"], json!(["from", "to"]));
    assert_eq!(
        s["properties"]["range"],
        json!({"$ref": "#/$defs/Range"}),
        "optional, not nullable"
    );
    assert_eq!(s["properties"]["limit"]["type"], "integer");

    let out = search::spec().output_schema;
    assert_eq!(out["type"], "array");
    assert_eq!(out["items"]["$ref"], "#/$defs/Hit");
}

#[test]
fn context_parameters_are_not_inputs() {
    let s = grants::spec().input_schema;
    assert_eq!(s["required"], json!(["label"]));
    assert_eq!(s["properties"].as_object().unwrap().len(), 1);
}

#[test]
fn output_schemas_from_return_types() {
    assert_eq!(
        log_line::spec().output_schema["type"],
        json!(["null", "string"]),
        "() gives null, or the streamed chunks"
    );
    assert_eq!(add::spec().output_schema["type"], "integer");
    assert_eq!(
        place_order::spec().output_schema["required"],
        json!(["accepted", "total"]),
        "Result<T, E> gives T"
    );
    assert_eq!(
        keyword::spec().input_schema["required"],
        json!(["type"]),
        "raw identifiers lose r#"
    );
}

#[test]
fn schemas_are_valid_2020_12() {
    for spec in [
        add::spec(),
        place_order::spec(),
        greet::spec(),
        echo::spec(),
        search::spec(),
        grants::spec(),
        log_line::spec(),
        keyword::spec(),
    ] {
        for (which, schema) in [
            ("input", &spec.input_schema),
            ("output", &spec.output_schema),
        ] {
            tackle::validate::check_schema(schema)
                .unwrap_or_else(|e| panic!("{} {which}: {e}", spec.key()));
        }
    }
}

#[tokio::test]
async fn the_door_decodes_calls_and_encodes() {
    // `place-order` needs approval; this approver grants every request.
    let rt = tackle::Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_approver(tackle::approval::ApproveWith(
            |r: &tackle::approval::ApprovalRequest| r.approve(),
        ));
    let ctx = ToolContext::new()
        .with_grant("shop:*")
        .with_grant("net:http");
    let hits = rt
        .call(
            "catalogue.search@3",
            json!({"terms": ["a", "b", "c"], "sort": "newest", "weights": {}, "limit": 2}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        hits,
        json!([{"title": "a", "sort": "newest"}, {"title": "b", "sort": "newest"}])
    );
    let out = rt
        .call("ctx.grants@1", json!({"label": "me"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        out,
        json!(["me", "shop:*", "net:http", "shop:*", "net:http"])
    );
    assert_eq!(
        rt.call("log.log_line@1", json!({"line": "x"}), &ctx)
            .await
            .unwrap(),
        Value::Null
    );
    assert_eq!(
        rt.call("text.keyword@1", json!({"type": "t"}), &ctx)
            .await
            .unwrap(),
        json!("t")
    );
    let receipt = rt
        .call(
            "shop.orders.place-order@2.1.0",
            json!({"order_id": "Z", "qty": 3}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(receipt, json!({"accepted": true, "total": "15.00"}));
    let err = rt
        .call(
            "shop.orders.place-order",
            json!({"order_id": "Z", "qty": 0}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`shop.orders.place-order@2.1.0` failed: the shop is closed"
    );
    let err = rt
        .call("text.echo@1", json!({"value": "toolong"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        err.validation_errors()[0].pointer,
        "/value",
        "the override is what validates"
    );
}

//! Tool definitions in each provider's form, checked against golden files over tricky
//! schemas: nested objects, enums (documented ones too), `Option`, maps, a recursive
//! type, a tuple, a `serde_json::Value`, a field named `properties`, optional fields
//! inside arrays and a union at the root. (`provider_oracles.rs` checks the forms of a
//! larger fixture against the providers' own SDKs.)
//!
//! After an intended change: `TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents providers::`,
//! then read the diff of `tests/golden/providers/*.json`.

use std::collections::HashMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tackle::agent::providers::{
    anthropic, definition, drop_nulls, gemini_parameters, openai_form, openai_strict, Provider,
    ProviderNames, RESERVED_NAMES,
};
use tackle::{tool, Args, Runtime};

#[derive(Deserialize, JsonSchema)]
struct Customer {
    name: String,
    email: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    customer: Customer,
    lines: Vec<Line>,
}

/// Place a nested order.
#[tool(namespace = "shapes", side_effects = none)]
fn nested(order: Order) -> usize {
    let items: usize = order
        .lines
        .iter()
        .map(|l| l.qty as usize + l.sku.len())
        .sum();
    items + order.customer.name.len() + order.customer.email.map_or(0, |e| e.len())
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Km,
    Mi,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fast,
    Scenic,
}

/// Plan a route.
#[tool(namespace = "shapes", side_effects = none)]
fn enums(unit: Unit, mode: Option<Mode>, stops: Option<Vec<String>>) -> bool {
    matches!(unit, Unit::Km) && mode.is_some() && stops.is_some()
}

/// Weigh some scores.
#[tool(namespace = "shapes", side_effects = none)]
fn maps(weights: HashMap<String, f64>) -> f64 {
    weights.values().sum()
}

#[derive(Deserialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

/// Count the nodes of a tree.
#[tool(namespace = "shapes", side_effects = none)]
fn tree(root: Tree) -> usize {
    fn count(t: &Tree) -> usize {
        1 + t.children.iter().map(count).sum::<usize>()
    }
    count(&root) + root.label.len()
}

#[test]
fn definitions_match_the_golden_files() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tools: Vec<_> = rt
        .registry()
        .list()
        .filter(|t| t.key().starts_with("shapes.") || t.key().starts_with("classes."))
        .collect();
    assert_eq!(tools.len(), 10);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/providers");
    let update = std::env::var_os("TACKLE_UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for provider in Provider::ALL {
        let names = ProviderNames::new(provider, tools.iter().map(|t| t.key())).unwrap();
        let mut all = Map::new();
        for tool in &tools {
            let name = names.name_of(tool.key()).unwrap();
            assert_eq!(names.key_of(name), Some(tool.key()));
            all.insert(tool.key().to_owned(), definition(provider, tool, name));
        }
        let text = serde_json::to_string_pretty(&Value::Object(all)).unwrap() + "\n";
        let path = dir.join(format!("{}.json", provider.as_str()));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else {
            let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; write it with TACKLE_UPDATE_GOLDEN=1",
                    path.display()
                )
            });
            if golden != text {
                mismatches.push(format!("{}:\n{text}", path.display()));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "differs from the golden file:\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn openai_strict_requires_everything_and_nulls_are_dropped_before_dispatch() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tool = rt.registry().resolve("shapes.enums").unwrap();
    let schema = &tool.spec().input_schema;
    let strict = openai_strict(schema);
    assert_eq!(strict["required"], json!(["unit", "mode", "stops"]));
    assert_eq!(strict["additionalProperties"], false);
    assert!(strict.get("$schema").is_none());
    // What a strict model sends for "no mode, no stops":
    let mut args = json!({"unit": "km", "mode": null, "stops": null});
    drop_nulls(&mut args, schema);
    assert_eq!(args, json!({"unit": "km"}));
    assert!(tool.validate_input(&args).valid, "the door accepts it");
    // Nested optionals too.
    let nested = rt.registry().resolve("shapes.nested").unwrap();
    let mut args = json!({"order": {"customer": {"name": "Ada", "email": null}, "lines": []}});
    drop_nulls(&mut args, &nested.spec().input_schema);
    assert_eq!(
        args,
        json!({"order": {"customer": {"name": "Ada"}, "lines": []}})
    );
    assert!(nested.validate_input(&args).valid);
}

#[test]
fn names_are_legal_per_provider_and_collisions_are_refused() {
    let keys = ["web.search@1", "web.search@2", "mail.send@1"];
    let openai = ProviderNames::new(Provider::OpenAi, keys).unwrap();
    assert_eq!(openai.name_of("web.search@2"), Some("web_search_v2"));
    assert_eq!(openai.name_of("mail.send@1"), Some("mail_send"));
    assert_eq!(openai.key_of("web_search_v1"), Some("web.search@1"));
    let mcp = ProviderNames::new(Provider::Mcp, keys).unwrap();
    assert_eq!(mcp.name_of("mail.send@1"), Some("mail.send"));
    let err = ProviderNames::new(Provider::Anthropic, ["a.b_c@1", "a_b.c@1"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "for anthropic, `a.b_c@1` and `a_b.c@1` would both be named `a_b_c`"
    );
}

#[test]
fn no_tool_of_a_chat_provider_is_named_like_a_built_in_tool() {
    // `web_search` is Anthropic's (and the Responses API's) web search to genai; the
    // key gets its version, the one name both ways.
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let names = ProviderNames::new(provider, ["web.search@1", "mail.send@1"]).unwrap();
        assert_eq!(names.name_of("web.search@1"), Some("web_search_v1"));
        assert_eq!(names.key_of("web_search_v1"), Some("web.search@1"));
        assert_eq!(names.key_of("web_search"), None);
        let mut offered = ProviderNames::empty(provider);
        assert_eq!(offered.insert("web.search@1"), Ok("web_search_v1"));
        assert_eq!(offered.insert("web.search@1"), Ok("web_search_v1"));
        // Two versions are named by their versions anyway.
        assert_eq!(offered.insert("web.search@2"), Ok("web_search_v2"));
    }
    // Gemini's built-in tools, by genai's names, for keys without a namespace.
    let keys = [
        "googleSearch@1",
        "googleSearchRetrieval@1",
        "codeExecution@1",
        "urlContext@2",
    ];
    let names = ProviderNames::new(Provider::Gemini, keys).unwrap();
    let named: Vec<&str> = keys.iter().map(|k| names.name_of(k).unwrap()).collect();
    assert_eq!(
        named,
        [
            "googleSearch_v1",
            "googleSearchRetrieval_v1",
            "codeExecution_v1",
            "urlContext_v2"
        ]
    );
    assert!(named.iter().all(|n| !RESERVED_NAMES.contains(n)));
    // A stand-in another key wants is not taken from it.
    let names = ProviderNames::new(Provider::OpenAi, ["web.search@1", "web_search_v1@3"]).unwrap();
    assert_eq!(names.name_of("web_search_v1@3"), Some("web_search_v1"));
    assert_eq!(names.name_of("web.search@1"), Some("web_search_tool"));
    // Nor is a bare name one.
    let names = ProviderNames::new(
        Provider::OpenAi,
        ["tools.web_search@1", "x.codeExecution@1"],
    )
    .unwrap()
    .with_bare_names();
    assert_eq!(
        names.name_of("tools.web_search@1"),
        Some("tools_web_search")
    );
    assert_eq!(names.name_of("x.codeExecution@1"), Some("x_codeExecution"));
    // MCP's names are a protocol's, not a model's: kept.
    let mcp = ProviderNames::new(Provider::Mcp, ["tools.web_search@1"])
        .unwrap()
        .with_bare_names();
    assert_eq!(mcp.name_of("tools.web_search@1"), Some("web_search"));
}

#[test]
fn one_name_map_serves_agents_and_mcp() {
    // One at a time, as an agent offers tools: a second version of a path is taken.
    let mut offered = ProviderNames::empty(Provider::OpenAi);
    assert_eq!(offered.insert("web.fetch@1"), Ok("web_fetch"));
    assert_eq!(offered.insert("web.fetch@1"), Ok("web_fetch"));
    let taken = offered.insert("web.fetch@2").unwrap_err();
    assert_eq!(
        (
            taken.name.as_str(),
            taken.first.as_str(),
            taken.second.as_str()
        ),
        ("web_fetch", "web.fetch@1", "web.fetch@2")
    );
    assert_eq!(offered.insert("mail.send@1"), Ok("mail_send"));
    assert_eq!(offered.len(), 2);
    assert_eq!(offered.key_of("mail_send"), Some("mail.send@1"));

    // Bare names where only one key has them, as MCP serves tools of other languages.
    let keys = ["test.simple_text@1", "a.count@1", "b.count@1"];
    let bare = ProviderNames::new(Provider::Mcp, keys)
        .unwrap()
        .with_bare_names();
    assert_eq!(bare.name_of("test.simple_text@1"), Some("simple_text"));
    assert_eq!(bare.key_of("simple_text"), Some("test.simple_text@1"));
    assert_eq!(bare.name_of("a.count@1"), Some("a.count"));
    assert_eq!(bare.key_of("test.simple_text"), None);
    // A provider whose names hold no `.`: a bare name that is another key's full
    // name stays that key's.
    let keys = ["a.b_c@1", "x.a_b_c@1"];
    let names = ProviderNames::new(Provider::OpenAi, keys)
        .unwrap()
        .with_bare_names();
    assert_eq!(names.name_of("a.b_c@1"), Some("b_c"));
    assert_eq!(names.name_of("x.a_b_c@1"), Some("x_a_b_c"));
    assert_eq!(names.key_of("a_b_c"), None);
    assert_eq!(names.len(), 2);
}

/// A unit enum whose variants have doc comments (schemars makes it a list of consts).
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    /// When there is time.
    Low,
    /// Before anything else.
    High,
}

#[derive(Deserialize, JsonSchema)]
struct Feature {
    /// GeoJSON's free-form properties: a field *named* `properties`.
    properties: HashMap<String, String>,
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    sku: String,
    note: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Lookup {
    ById { id: u64 },
    ByName { name: String, city: Option<String> },
}

/// Says whether a task is urgent (documented unit enums).
#[tool(namespace = "classes", side_effects = none)]
fn documented(priority: Priority, later: Option<Priority>) -> bool {
    matches!(priority, Priority::High) && later.is_none()
}

/// Sums a point's coordinates (a tuple).
#[tool(namespace = "classes", side_effects = none)]
fn tuple(point: (f64, f64)) -> f64 {
    point.0 + point.1
}

/// Writes out a value of any type.
#[tool(namespace = "classes", side_effects = none)]
fn any_value(value: Value) -> String {
    value.to_string()
}

/// Counts a GeoJSON feature's properties (a field named `properties`).
#[tool(namespace = "classes", side_effects = none)]
fn geo(feature: Feature) -> usize {
    feature.properties.len() + feature.name.len()
}

/// Sums order lines, each with an optional note (nulls inside arrays).
#[tool(namespace = "classes", side_effects = none)]
fn items(lines: Vec<Item>) -> usize {
    lines
        .iter()
        .map(|l| l.sku.len() + l.note.as_ref().map_or(0, String::len))
        .sum()
}

#[derive(Deserialize, JsonSchema)]
struct Query {
    limit: u32,
    #[serde(flatten)]
    by: Lookup,
}

/// Looks up by id or by name (a flattened untagged enum: a union at the root).
#[tool(namespace = "classes", side_effects = none)]
fn lookup(Args(query): Args<Query>) -> String {
    let found = match query.by {
        Lookup::ById { id } => id.to_string(),
        Lookup::ByName { name, .. } => name,
    };
    format!("{found} (of {})", query.limit)
}

fn class(rt: &Runtime, key: &str) -> std::sync::Arc<tackle::registry::Tool> {
    rt.registry().resolve(key).unwrap().clone()
}

fn mentions(schema: &Value, needle: &str) -> bool {
    schema.to_string().contains(needle)
}

#[test]
fn documented_enums_are_any_of_in_strict_forms() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tool = class(&rt, "classes.documented");
    let form = openai_form(&tool.spec().input_schema);
    assert!(form.strict, "{form:?}");
    assert!(!mentions(&form.parameters, "oneOf"), "{}", form.parameters);
    assert!(mentions(&form.parameters, "anyOf"), "{}", form.parameters);
    let (field, gemini) = gemini_parameters(&tool.spec().input_schema).unwrap();
    assert_eq!(field, "parameters");
    assert!(!mentions(&gemini, "oneOf"), "{gemini}");
    assert_eq!(
        gemini["properties"]["priority"]["anyOf"][0]["enum"],
        json!(["low"])
    );
    assert_eq!(gemini["required"], json!(["priority"]), "{gemini}");
    assert_eq!(
        gemini["properties"]["later"]["anyOf"][1]["enum"],
        json!(["high"])
    );
}

#[test]
fn maps_tuples_and_values_turn_strict_off_and_reach_gemini_whole() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    for (key, why) in [
        ("shapes.maps", "a map"),
        ("classes.tuple", "a tuple"),
        ("classes.any_value", "any type"),
    ] {
        let tool = class(&rt, key);
        let form = openai_form(&tool.spec().input_schema);
        assert!(!form.strict, "{key}: {form:?}");
        assert!(
            form.not_strict.as_deref().unwrap_or_default().contains(why),
            "{key}: {form:?}"
        );
        assert_eq!(form.parameters["type"], "object", "{key}");
    }
    // A map and a value of any type go in Gemini's JSON Schema field.
    let maps = class(&rt, "shapes.maps");
    let (field, form) = gemini_parameters(&maps.spec().input_schema).unwrap();
    assert_eq!(field, "parametersJsonSchema");
    assert_eq!(
        form["properties"]["weights"]["additionalProperties"]["type"],
        "number"
    );
    // A tuple is an array of its items' type, of its length.
    let tuple = class(&rt, "classes.tuple");
    let (field, form) = gemini_parameters(&tuple.spec().input_schema).unwrap();
    assert_eq!(field, "parameters");
    let point = &form["properties"]["point"];
    assert_eq!(point["type"], "array");
    assert_eq!(point["items"]["type"], "number");
    assert_eq!(
        (point["minItems"].clone(), point["maxItems"].clone()),
        (json!(2), json!(2))
    );
    // A recursive type is whole in the JSON Schema field, not cut.
    let tree = class(&rt, "shapes.tree");
    let (field, form) = gemini_parameters(&tree.spec().input_schema).unwrap();
    assert_eq!(field, "parametersJsonSchema");
    assert!(mentions(&form, "$ref"), "{form}");
    assert!(!mentions(&form, "too deep"), "{form}");
}

#[test]
fn a_field_named_properties_is_a_field() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tool = class(&rt, "classes.geo");
    let schema = &tool.spec().input_schema;
    let form = openai_form(schema);
    // The map makes it not strict; the strict transform itself still leaves the map
    // alone: no `required` or `additionalProperties: false` inside the property map.
    let strict = openai_strict(schema);
    let feature = &strict["$defs"]["Feature"];
    assert_eq!(
        feature["required"],
        json!(["properties", "name"]),
        "{feature}"
    );
    assert!(feature["properties"].get("required").is_none(), "{feature}");
    assert!(!form.strict);
}

#[test]
fn a_union_at_the_root_is_one_object_for_anthropic_and_openai() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tool = class(&rt, "classes.lookup");
    let schema = &tool.spec().input_schema;
    for form in [anthropic(schema), openai_form(schema).parameters] {
        assert_eq!(form["type"], "object", "{form}");
        assert!(
            form.get("anyOf").is_none() && form.get("oneOf").is_none(),
            "{form}"
        );
        let props = form["properties"].as_object().unwrap();
        assert!(
            props.contains_key("id") && props.contains_key("name"),
            "{form}"
        );
        assert_eq!(
            form["required"],
            json!(["limit"]),
            "required by every branch: none"
        );
    }
}

#[test]
fn nulls_inside_arrays_are_dropped_and_the_door_accepts_them() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tool = class(&rt, "classes.items");
    let form = openai_form(&tool.spec().input_schema);
    assert!(form.strict);
    let mut args = json!({"lines": [{"sku": "a", "note": null}, {"sku": "b", "note": "gift"}]});
    drop_nulls(&mut args, &tool.spec().input_schema);
    assert_eq!(
        args,
        json!({"lines": [{"sku": "a"}, {"sku": "b", "note": "gift"}]})
    );
    assert!(tool.validate_input(&args).valid);
    // A root union: the nulls of the branch the value is of.
    let lookup = class(&rt, "classes.lookup");
    let mut args = json!({"limit": 3, "name": "Ada", "city": null});
    drop_nulls(&mut args, &lookup.spec().input_schema);
    assert_eq!(args, json!({"limit": 3, "name": "Ada"}));
    assert!(lookup.validate_input(&args).valid);
}

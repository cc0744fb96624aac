//! Tool definitions in each provider's form, checked against golden files over tricky
//! schemas: nested objects, enums, `Option`, maps and a recursive type.
//!
//! After an intended change: `TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents providers::`,
//! then read the diff of `tests/golden/providers/*.json`.

use std::collections::HashMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tackle::agent::providers::{definition, drop_nulls, openai_strict, Provider, ProviderNames};
use tackle::{tool, Runtime};

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
        .filter(|t| t.key().starts_with("shapes."))
        .collect();
    assert_eq!(tools.len(), 4);
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
fn one_name_map_serves_agents_and_mcp() {
    // One at a time, as an agent offers tools: a second version of a path is taken.
    let mut offered = ProviderNames::empty(Provider::OpenAi);
    assert_eq!(offered.insert("web.search@1"), Ok("web_search"));
    assert_eq!(offered.insert("web.search@1"), Ok("web_search"));
    let taken = offered.insert("web.search@2").unwrap_err();
    assert_eq!(
        (
            taken.name.as_str(),
            taken.first.as_str(),
            taken.second.as_str()
        ),
        ("web_search", "web.search@1", "web.search@2")
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

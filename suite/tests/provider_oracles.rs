//! Every provider form of a fixture of tools (namespace `forms`: the shapes real tools
//! take), and OpenAI's form with strict mode off (what the clients without strict mode
//! send), checked against the providers' own Python SDKs and documented rules, by
//! `tests/providers/oracle.py` run with the venv's Python (`TACKLE_MCP_PYTHON`; see
//! `.ci/run` for the pinned `openai`, `anthropic`, `google-genai` and
//! `pydantic-ai-slim`), and the arguments a strict OpenAI model would send, made from
//! each tool's strict form, put through `drop_nulls` and then the tool's own door.
//!
//! `cargo test -p tackle-suite --test it_agents provider_oracles -- --nocapture`
//! prints each failing verdict with its reasons, and a table of counts per provider;
//! `TACKLE_PROVIDER_FORMS=forms.json` also writes the forms the checker reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tackle::agent::providers::{
    definition, drop_nulls, openai_definition, openai_non_strict, Provider, ProviderNames,
};
use tackle::{tool, Args, Runtime, ToolContext};

// ---------------------------------------------------------------------------------
// The fixture. Each tool echoes what it decoded, so every field is read.
// ---------------------------------------------------------------------------------

/// Echo scalars.
#[tool(namespace = "forms", side_effects = none)]
fn scalars(text: String, count: i32, ratio: f64, flag: bool, big: u64, letter: char) -> Value {
    json!([text, count, ratio, flag, big, letter])
}

/// Echo optional scalars.
#[tool(namespace = "forms", side_effects = none)]
fn optional_scalars(name: Option<String>, limit: Option<u32>, verbose: Option<bool>) -> Value {
    json!([name, limit, verbose])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Leaf {
    note: Option<String>,
    values: Option<Vec<Option<String>>>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Middle {
    leaf: Option<Leaf>,
    weight: Option<f64>,
}

/// Echo options at every depth.
#[tool(namespace = "forms", side_effects = none)]
fn deep_options(outer: Option<Middle>, list: Option<Vec<Option<Middle>>>) -> Value {
    json!([outer, list])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Person {
    name: String,
    email: Option<String>,
    age: Option<u8>,
    #[serde(default)]
    tags: Vec<String>,
}

/// Echo a list of people.
#[tool(namespace = "forms", side_effects = none)]
fn people(people: Vec<Person>) -> Value {
    json!(people)
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Level5 {
    value: String,
    maybe: Option<i32>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Level4 {
    five: Level5,
    count: u32,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Level3 {
    four: Level4,
    fours: Vec<Level4>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Level2 {
    three: Level3,
    label: Option<String>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Level1 {
    two: Level2,
    id: u64,
}

/// Echo a structure nested five levels deep.
#[tool(namespace = "forms", side_effects = none)]
fn nested_deep(root: Level1) -> Value {
    json!(root)
}

/// How urgent a ticket is.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    /// Whenever someone has time.
    Low,
    /// Within the day.
    Normal,
    /// Drop everything.
    Urgent,
}

/// File a ticket.
#[tool(namespace = "forms", side_effects = none)]
fn documented_enum(priority: Priority, fallback: Option<Priority>) -> Value {
    json!([priority, fallback])
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Km,
    Mi,
}

/// Convert a distance.
#[tool(namespace = "forms", side_effects = none)]
fn plain_enum(unit: Unit, to: Option<Unit>, units: Vec<Unit>) -> Value {
    json!([unit, to, units])
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Rect { width: f64, height: f64 },
    Dot,
}

/// Draw a shape (internally tagged).
#[tool(namespace = "forms", side_effects = none)]
fn internally_tagged(shape: Shape) -> Value {
    json!(shape)
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
enum Event {
    Click { x: i32, y: i32 },
    Key(String),
    Idle,
}

/// Replay an event (adjacently tagged).
#[tool(namespace = "forms", side_effects = none)]
fn adjacently_tagged(event: Event) -> Value {
    json!(event)
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Scalarish {
    Number(i64),
    Text(String),
    Pair { key: String, value: String },
}

/// Store a value of several shapes (untagged).
#[tool(namespace = "forms", side_effects = none)]
fn untagged(value: Scalarish) -> Value {
    json!(value)
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Cmd {
    Start { at: String },
    Stop,
    Resize(u32, u32),
}

/// Run a command (externally tagged, serde's default).
#[tool(namespace = "forms", side_effects = none)]
fn externally_tagged(command: Cmd) -> Value {
    json!(command)
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Target {
    ById { id: u64 },
    ByName { name: String, exact: Option<bool> },
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Lookup {
    #[serde(flatten)]
    target: Target,
    limit: Option<u32>,
}

/// Look something up by id or by name (an untagged enum flattened into the root).
#[tool(namespace = "forms", side_effects = none)]
fn flattened_untagged(Args(q): Args<Lookup>) -> Value {
    json!(q)
}

/// Weigh scores.
#[tool(namespace = "forms", side_effects = none)]
fn hash_map(weights: HashMap<String, f64>) -> Value {
    json!(weights)
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Label {
    color: String,
    hidden: Option<bool>,
}

/// Set labels by name.
#[tool(namespace = "forms", side_effects = none)]
fn btree_map(labels: BTreeMap<String, Label>, counts: Option<BTreeMap<String, u32>>) -> Value {
    json!([labels, counts])
}

/// Measure a path.
#[tool(namespace = "forms", side_effects = none)]
fn tuples(point: (f64, f64), path: Vec<(f64, f64)>) -> Value {
    json!([point, path])
}

/// Store any JSON.
#[tool(namespace = "forms", side_effects = none)]
fn json_value(payload: Value, meta: Option<Value>) -> Value {
    json!([payload, meta])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Paging {
    offset: u32,
    limit: Option<u32>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct PagedQuery {
    query: String,
    #[serde(flatten)]
    paging: Paging,
}

/// Search a page at a time (a flattened struct).
#[tool(namespace = "forms", side_effects = none)]
fn flatten_struct(Args(q): Args<PagedQuery>) -> Value {
    json!(q)
}

fn default_retries() -> u32 {
    3
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Settings {
    name: String,
    #[serde(default)]
    verbose: bool,
    #[serde(default = "default_retries")]
    retries: u32,
    #[serde(default)]
    tags: Vec<String>,
}

/// Apply settings (fields with serde defaults).
#[tool(namespace = "forms", side_effects = none)]
fn serde_default(settings: Settings, more: Vec<Settings>) -> Value {
    json!([settings, more])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
    parent_hint: Option<Box<Tree>>,
}

/// Count a tree (a recursive type).
#[tool(namespace = "forms", side_effects = none)]
fn recursive(tree: Tree) -> Value {
    json!(tree)
}

/// Define an object type by its properties (parameters named like JSON Schema keywords).
#[tool(namespace = "forms", side_effects = none)]
fn keyword_names(
    properties: HashMap<String, String>,
    required: Vec<String>,
    r#type: String,
    items: Option<Vec<String>>,
) -> Value {
    json!([properties, required, r#type, items])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Bounds {
    small: u8,
    signed: i64,
    #[schemars(range(min = 0.0, max = 1.0))]
    ratio: f64,
    #[schemars(range(min = 1, max = 10))]
    level: u32,
    big: Option<u64>,
}

/// Tune numbers (numeric bounds).
#[tool(namespace = "forms", side_effects = none)]
fn numeric_bounds(bounds: Bounds, percent: u8, delta: i16) -> Value {
    json!([bounds, percent, delta])
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Texts {
    #[schemars(length(min = 1, max = 40))]
    title: String,
    #[schemars(length(min = 1, max = 3))]
    tags: Vec<String>,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    code: String,
}

/// Write texts (length bounds and a pattern).
#[tool(namespace = "forms", side_effects = none)]
fn length_bounds(texts: Texts) -> Value {
    json!(texts)
}

/// Take no parameters.
#[tool(namespace = "forms", side_effects = none)]
fn no_params() -> Value {
    json!("pong")
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Filter {
    field: String,
    #[serde(default)]
    negate: bool,
    limit: Option<u32>,
}

/// Filter rows by an optional filter (an optional struct whose fields have defaults).
#[tool(namespace = "forms", side_effects = none)]
fn optional_struct(filter: Option<Filter>, filters: Option<Vec<Filter>>) -> Value {
    json!([filter, filters])
}

/// Tag rows (enums inside arrays and maps).
#[tool(namespace = "forms", side_effects = none)]
fn enum_collections(
    priorities: Vec<Priority>,
    by_name: HashMap<String, Unit>,
    shapes: Vec<Shape>,
) -> Value {
    json!([priorities, by_name, shapes])
}

/// Set a colour (a fixed-size array) and unique tags (a set).
#[tool(namespace = "forms", side_effects = none)]
fn arrays_and_sets(rgb: [u8; 3], tags: BTreeSet<String>, grid: Vec<Vec<i32>>) -> Value {
    json!([rgb, tags, grid])
}

/// Log in (a secret parameter: `writeOnly`).
#[tool(namespace = "forms", side_effects = none)]
fn secret_param(user: String, api_key: String) -> Value {
    json!([user, api_key.len()])
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Renamed {
    first_name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    middle_name: Option<String>,
}

/// Rename fields (serde renames).
#[tool(namespace = "forms", side_effects = none)]
fn renamed(Args(r): Args<Renamed>) -> Value {
    json!(r)
}

/// Documented parameters.
#[tool(namespace = "forms", side_effects = none)]
fn documented_params(
    /// the city to look up
    city: String,
    /// how many days ahead, 1 to 7
    days: Option<u8>,
) -> Value {
    json!([city, days])
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum StringOrList {
    One(String),
    Many(Vec<String>),
}

/// Recipients as one or many (an untagged enum of a scalar and an array, optional).
#[tool(namespace = "forms", side_effects = none)]
fn one_or_many(to: StringOrList, cc: Option<StringOrList>) -> Value {
    json!([to, cc])
}

/// What each tool covers, for the report (and for `providers_wire_classes`, which
/// records what each provider client sends for every class).
pub(crate) const CLASSES: &[(&str, &str)] = &[
    (
        "scalars",
        "scalars: String, i32, f64, bool, u64, char (minLength/maxLength 1)",
    ),
    ("optional_scalars", "Option<scalar> at the root"),
    (
        "deep_options",
        "Option at every depth: Option<struct>, Option<Vec<Option<struct>>>, Option<Vec<Option<String>>>",
    ),
    (
        "people",
        "Vec of structs with optional fields and a #[serde(default)] field",
    ),
    ("nested_deep", "nested structs five levels deep (not recursive)"),
    (
        "documented_enum",
        "unit enum with documented variants (oneOf of const+description), also optional",
    ),
    ("plain_enum", "unit enum without docs: plain, optional, in a Vec"),
    (
        "internally_tagged",
        "data enum, internally tagged (#[serde(tag)])",
    ),
    (
        "adjacently_tagged",
        "data enum, adjacently tagged (#[serde(tag, content)])",
    ),
    (
        "untagged",
        "data enum, untagged (integer | string | object)",
    ),
    (
        "externally_tagged",
        "data enum, externally tagged (serde's default)",
    ),
    (
        "flattened_untagged",
        "untagged enum #[serde(flatten)]ed into the root (Args<T>)",
    ),
    ("hash_map", "HashMap<String, f64>"),
    (
        "btree_map",
        "BTreeMap<String, struct> and Option<BTreeMap<String, u32>>",
    ),
    ("tuples", "tuple (f64, f64) and Vec<(f64, f64)> (prefixItems)"),
    ("json_value", "serde_json::Value, plain and optional"),
    ("flatten_struct", "#[serde(flatten)] struct into the root (Args<T>)"),
    (
        "serde_default",
        "#[serde(default)] / default = fn fields (JSON Schema `default`), in a struct and a Vec",
    ),
    (
        "recursive",
        "recursive type (Vec<Tree>, Option<Box<Tree>>)",
    ),
    (
        "keyword_names",
        "parameters named properties (a map), required, type, items",
    ),
    (
        "numeric_bounds",
        "numeric bounds: u8, i64, i16, f64 and u32 with schemars range, Option<u64>",
    ),
    (
        "length_bounds",
        "length bounds on String and Vec, a regex pattern",
    ),
    ("no_params", "no parameters"),
    (
        "optional_struct",
        "Option<struct> whose fields have serde defaults, Option<Vec<struct>>",
    ),
    (
        "enum_collections",
        "enums inside Vec and HashMap; tagged enum inside Vec",
    ),
    (
        "arrays_and_sets",
        "fixed-size array [u8; 3], BTreeSet (uniqueItems), Vec<Vec<i32>>",
    ),
    ("secret_param", "a secret parameter (writeOnly)"),
    ("renamed", "serde renames (camelCase, a field renamed `type`)"),
    ("documented_params", "parameter doc comments (descriptions)"),
    (
        "one_or_many",
        "untagged enum of a scalar and an array, plain and optional",
    ),
];

/// The fixture: a runtime of this module's tools (namespace `forms`, one per class of
/// [`CLASSES`]), for the modules that check what is made of them
/// (`providers_wire_classes` runs an agent over them through each provider client).
pub(crate) fn fixture() -> Runtime {
    Runtime::from_inventory_in(module_path!()).expect("the fixture's tools")
}

// ---------------------------------------------------------------------------------
// The strict model's arguments.
// ---------------------------------------------------------------------------------

/// How deep the generator follows a schema before choosing the smallest value
/// (null, an empty array), so a recursive type ends.
const MAX_DEPTH: usize = 12;

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        match current.get("$ref").and_then(Value::as_str) {
            Some(target) => match target.strip_prefix('#').and_then(|p| root.pointer(p)) {
                Some(found) => current = found,
                None => return current,
            },
            None => return current,
        }
    }
    current
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn is_null_schema(schema: &Value) -> bool {
    types_of(schema) == ["null"]
}

/// A valid argument value for `schema` (a strict form), as a strict model would send:
/// every required property, `null` for a nullable one, one item for an array, the
/// first `enum` value, the lower bound of a number. Deterministic.
fn generate(schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root);
    if let Some(b) = schema.as_bool() {
        return if b { json!("any") } else { Value::Null };
    }
    let types = types_of(schema);
    if types.contains(&"null") {
        return Value::Null;
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        if let Some(first) = values.first() {
            return first.clone();
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            if options.iter().any(|o| is_null_schema(resolve(o, root))) {
                return Value::Null;
            }
            if let Some(first) = options.first() {
                let mut value = generate(first, root, depth + 1);
                // Sibling properties (a flattened struct beside a union) join in.
                if let (Some(obj), Some(Value::Object(_))) =
                    (value.as_object_mut(), schema.get("properties"))
                {
                    if let Value::Object(rest) = object_value(schema, root, depth) {
                        for (k, v) in rest {
                            obj.entry(k).or_insert(v);
                        }
                    }
                }
                return value;
            }
        }
    }
    if let Some(Value::Array(parts)) = schema.get("allOf") {
        let mut merged = Map::new();
        for part in parts {
            if let Value::Object(obj) = generate(part, root, depth + 1) {
                merged.extend(obj);
            }
        }
        if let Value::Object(own) = object_value(schema, root, depth) {
            merged.extend(own);
        }
        return Value::Object(merged);
    }
    let kind = types.first().copied().unwrap_or_else(|| {
        if schema.get("properties").is_some() {
            "object"
        } else if schema.get("items").is_some() || schema.get("prefixItems").is_some() {
            "array"
        } else {
            ""
        }
    });
    match kind {
        "object" => object_value(schema, root, depth),
        "array" => {
            if let Some(Value::Array(prefix)) = schema.get("prefixItems") {
                return Value::Array(
                    prefix
                        .iter()
                        .map(|p| generate(p, root, depth + 1))
                        .collect(),
                );
            }
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let max = schema.get("maxItems").and_then(Value::as_u64);
            let wanted = if depth >= MAX_DEPTH { min } else { min.max(1) };
            let wanted = max.map_or(wanted, |m| wanted.min(m));
            let Some(items) = schema.get("items") else {
                return json!([]);
            };
            let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
            (0..wanted)
                .map(|i| {
                    let item = generate(items, root, depth + 1);
                    match (unique, item) {
                        (true, Value::String(s)) => Value::String(format!("{s}{i}")),
                        (true, Value::Number(n)) if n.is_u64() => {
                            json!(n.as_u64().unwrap_or(0) + i)
                        }
                        (_, item) => item,
                    }
                })
                .collect()
        }
        "string" => string_value(schema),
        "integer" => {
            let min = schema
                .get("minimum")
                .and_then(Value::as_f64)
                .map(|m| m.ceil() as i64);
            let max = schema
                .get("maximum")
                .and_then(Value::as_f64)
                .map(|m| m.floor() as i64);
            let value = min.unwrap_or(1);
            json!(max.map_or(value, |m| value.min(m)))
        }
        "number" => {
            let min = schema.get("minimum").and_then(Value::as_f64);
            let max = schema.get("maximum").and_then(Value::as_f64);
            let value = min.unwrap_or(1.5);
            json!(max.map_or(value, |m| value.min(m)))
        }
        "boolean" => json!(true),
        // No type (`serde_json::Value`'s `true` or `{}`): any value.
        _ => json!("any"),
    }
}

fn string_value(schema: &Value) -> Value {
    match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => return json!("2024-01-02T03:04:05Z"),
        Some("date") => return json!("2024-01-02"),
        Some("time") => return json!("03:04:05Z"),
        Some("uuid") => return json!("00000000-0000-4000-8000-000000000000"),
        Some("email") => return json!("a@example.com"),
        _ => {}
    }
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|m| m as usize);
    let len = max.map_or(min.max(1), |m| min.max(1).min(m));
    Value::String("a".repeat(len))
}

fn object_value(schema: &Value, root: &Value, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, prop) in props {
            if required.contains(&name.as_str()) {
                let value = if depth >= MAX_DEPTH && is_nullable(prop, root) {
                    Value::Null
                } else {
                    generate(prop, root, depth + 1)
                };
                out.insert(name.clone(), value);
            }
        }
    }
    Value::Object(out)
}

fn is_nullable(schema: &Value, root: &Value) -> bool {
    let schema = resolve(schema, root);
    types_of(schema).contains(&"null")
        || ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|o| o.iter().any(|o| is_null_schema(resolve(o, root))))
        })
}

// ---------------------------------------------------------------------------------
// The oracle run.
// ---------------------------------------------------------------------------------

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The venv's Python, or why there is none (a skip outside CI, a failure in CI).
/// The providers' SDKs the oracles use, pinned (as `.ci/run` installs them).
const SDKS: [&str; 4] = [
    "openai==3.57.0",
    "anthropic==2.14.0",
    "google-genai==3.6.1",
    "pydantic-ai-slim==2.68.0",
];

/// The Python interpreter with the providers' SDKs: `TACKLE_MCP_PYTHON`, else the
/// workspace's `.venv`, made and given the SDKs (pinned) on the first run.
fn python() -> Result<PathBuf, String> {
    let given = std::env::var_os("TACKLE_MCP_PYTHON").map(PathBuf::from);
    let python = given
        .clone()
        .unwrap_or_else(|| workspace().join(".venv/bin/python"));
    let has_sdks = |python: &Path| {
        Command::new(python)
            .args([
                "-c",
                "import openai, anthropic, google.genai, pydantic_ai, jsonschema",
            ])
            .output()
    };
    match has_sdks(&python) {
        Ok(probe) if probe.status.success() => return Ok(python),
        _ => {}
    }
    if !python.exists() {
        if given.is_some() {
            return Err(format!("{} is missing", python.display()));
        }
        let venv = workspace().join(".venv");
        let made = Command::new("timeout")
            .args(["300", "python3", "-m", "venv"])
            .arg(&venv)
            .status()
            .map_err(|e| format!("python3 -m venv: {e}"))?;
        if !made.success() {
            return Err("python3 -m venv failed".into());
        }
    }
    eprintln!(
        "installing the providers' SDKs ({}) for {}",
        SDKS.join(", "),
        python.display()
    );
    let installed = Command::new("timeout")
        .arg("600")
        .arg(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "jsonschema",
        ])
        .args(SDKS)
        .status()
        .map_err(|e| format!("pip install: {e}"))?;
    if !installed.success() {
        return Err(format!("pip install {} failed", SDKS.join(" ")));
    }
    match has_sdks(&python) {
        Ok(probe) if probe.status.success() => Ok(python),
        Ok(probe) => Err(format!(
            "{} lacks the providers' SDKs after installing them: {}",
            python.display(),
            String::from_utf8_lossy(&probe.stderr).trim()
        )),
        Err(e) => Err(format!("{}: {e}", python.display())),
    }
}

const PROVIDERS: [Provider; 4] = [
    Provider::OpenAi,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Mcp,
];

#[tokio::test]
async fn provider_forms_pass_the_providers_sdks_and_rules() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tools: Vec<_> = rt
        .registry()
        .list()
        .filter(|t| t.key().starts_with("forms."))
        .collect();
    assert!(tools.len() >= 25, "the fixture has {} tools", tools.len());
    for tool in &tools {
        let name = tool.key().trim_start_matches("forms.");
        let name = name.split('@').next().unwrap_or(name);
        assert!(
            CLASSES.iter().any(|(n, _)| *n == name),
            "{name} has no class in CLASSES"
        );
    }

    // 1. Every form of every tool, for the checker.
    let mut fixture = Vec::new();
    for tool in &tools {
        let mut forms = Map::new();
        for provider in PROVIDERS {
            let names = ProviderNames::new(provider, [tool.key()]).unwrap();
            let name = names.name_of(tool.key()).unwrap();
            forms.insert(
                provider.as_str().to_owned(),
                definition(provider, tool, name),
            );
        }
        // OpenAI's form with strict mode off, as the clients without strict mode
        // (`OpenAiModel` by default, `OllamaModel`) send every tool.
        let names = ProviderNames::new(Provider::OpenAi, [tool.key()]).unwrap();
        let name = names.name_of(tool.key()).unwrap();
        forms.insert(
            "openai-strict-off".to_owned(),
            openai_definition(
                name,
                &tool.spec().description,
                &openai_non_strict(&tool.spec().input_schema),
            ),
        );
        fixture.push(json!({
            "key": tool.key(),
            "canonical": tool.spec().input_schema,
            "forms": forms,
        }));
    }

    // For a look at the forms: `TACKLE_PROVIDER_FORMS=forms.json`.
    if let Some(path) = std::env::var_os("TACKLE_PROVIDER_FORMS") {
        std::fs::write(path, serde_json::to_string_pretty(&fixture).unwrap()).unwrap();
    }

    // 2. The strict model's arguments, through drop_nulls and the door.
    let mut refusals = Vec::new();
    let ctx = ToolContext::new();
    let mut not_strict = 0;
    for tool in &tools {
        let key = tool.key();
        let function = definition(Provider::OpenAi, tool, "f")["function"].clone();
        if function["strict"] != true {
            // Sent without strict mode (a map, a tuple, a value of any type, a union
            // at the root): a model is not held to its form, and the door checks.
            not_strict += 1;
            continue;
        }
        let strict = function["parameters"].clone();
        let mut args = generate(&strict, &strict, 0);
        let sent = args.clone();
        drop_nulls(&mut args, &tool.spec().input_schema);
        let checked = tool.validate_input(&args);
        if !checked.valid {
            refusals.push(format!(
                "{key}: the door's schema refuses {args} (sent {sent}): {}",
                checked.errors.join("; ")
            ));
            continue;
        }
        if let Err(e) = rt.call(key, args.clone(), &ctx).await {
            refusals.push(format!(
                "{key}: the call of {args} (sent {sent}) fails: {e}"
            ));
        }
    }

    // 3. The checker.
    let python = match python() {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED the SDK oracles: {why}");
            None
        }
        Err(why) => panic!("the SDK oracles cannot run under CI: {why}"),
    };
    let mut failures: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut advisories: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(python) = python {
        let dir =
            std::env::temp_dir().join(format!("tackle-provider-oracles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("forms.json");
        std::fs::write(&input, serde_json::to_string_pretty(&fixture).unwrap()).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/providers/oracle.py");
        let out = Command::new(&python)
            .arg(&script)
            .arg(&input)
            .output()
            .expect("run the oracle");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "oracle.py failed ({}):\n{stderr}",
            out.status
        );
        let verdicts: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "oracle.py's answer is not JSON: {e}\n{}\n{stderr}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let _ = std::fs::remove_dir_all(&dir);
        for verdict in verdicts["verdicts"].as_array().unwrap() {
            let provider = verdict["provider"].as_str().unwrap().to_owned();
            let key = verdict["key"].as_str().unwrap();
            let advisory = verdict["advisory"].as_bool().unwrap_or(false);
            if verdict["ok"] == true {
                continue;
            }
            let reasons: Vec<&str> = verdict["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if advisory {
                *advisories.entry(provider.clone()).or_default() += 1;
                eprintln!("advisory {provider} {key}:\n    {}", reasons.join("\n    "));
            } else {
                eprintln!("FAIL {provider} {key}:\n    {}", reasons.join("\n    "));
                failures
                    .entry(provider)
                    .or_default()
                    .push(format!("{key}: {}", reasons.join("; ")));
            }
        }
        eprintln!("\nreasons by class (failures, not advisories):");
        if let Some(classes) = verdicts["classes"].as_object() {
            for (class, count) in classes {
                eprintln!("  {count:>3}  {class}");
            }
        }
    }

    let n = tools.len();
    eprintln!("\nprovider form verdicts over {n} tools:");
    for provider in ["openai", "openai-strict-off", "anthropic", "gemini", "mcp"] {
        let failed = failures.get(provider).map_or(0, Vec::len);
        eprintln!("  {provider:<16} {failed:>3} of {n} fail");
    }
    for (provider, count) in &advisories {
        eprintln!("  {provider:<16} {count:>3} of {n} (advisory, not asserted)");
    }
    eprintln!(
        "  strict arguments {:>3} of {} refused after drop_nulls ({not_strict} tools sent without strict mode)",
        refusals.len(),
        n - not_strict
    );
    assert!(
        not_strict < n / 2,
        "strict mode is off for {not_strict} of {n} tools: most tools should keep it"
    );
    for refusal in &refusals {
        eprintln!("    {refusal}");
    }

    let failed: usize = failures.values().map(Vec::len).sum();
    assert!(
        failed == 0 && refusals.is_empty(),
        "{failed} provider forms fail the providers' SDKs or rules ({}), and {} of {n} strict \
         arguments are refused after drop_nulls: see the output above (--nocapture)",
        failures
            .iter()
            .map(|(p, f)| format!("{p}: {}", f.len()))
            .collect::<Vec<_>>()
            .join(", "),
        refusals.len()
    );
}

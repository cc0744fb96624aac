//! Each provider's form of a tool's definition ([`definition`]) and of its input
//! schema ([`openai_form`], [`anthropic`], [`gemini_parameters`]), and the nulls of a
//! strict form taken out of a model's arguments ([`drop_nulls`]).
//!
//! Every form is derived from the one canonical schema, which the door validates
//! against; a form is the provider's best view of it. Where a provider cannot express
//! a type, its form says less (an OpenAI tool sent without strict mode, a Gemini tool
//! in its JSON Schema field) but never a wrong type.

use serde_json::{json, Map, Value};
use tackle_core::registry::Tool;

use super::Provider;

/// How deep the forms go into a schema. A schema is data (an imported MCP server's
/// tools bring their own): deeper parts are left as they are, and a schema that deep
/// is not sent strict.
const MAX_DEPTH: usize = 64;

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Applies `f` to each schema directly inside `obj` (not to values such as `enum`,
/// `const`, `default` or `examples`, which are data, nor to a property *named* like a
/// keyword).
fn each_subschema_mut(obj: &mut Map<String, Value>, mut f: impl FnMut(&mut Value)) {
    for (key, value) in obj.iter_mut() {
        let key = key.as_str();
        if ONE_SCHEMA.contains(&key) {
            if value.is_object() {
                f(value);
            }
        } else if SCHEMA_LISTS.contains(&key) {
            if let Value::Array(list) = value {
                list.iter_mut().for_each(&mut f);
            }
        } else if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(map) = value {
                map.values_mut().for_each(&mut f);
            }
        }
    }
}

/// The schemas directly inside `obj` (see [`each_subschema_mut`]).
fn subschemas(obj: &Map<String, Value>) -> Vec<&Value> {
    let mut out = Vec::new();
    for (key, value) in obj {
        let key = key.as_str();
        if ONE_SCHEMA.contains(&key) {
            out.push(value);
        } else if SCHEMA_LISTS.contains(&key) {
            out.extend(value.as_array().into_iter().flatten());
        } else if SCHEMA_MAPS.contains(&key) {
            out.extend(value.as_object().into_iter().flat_map(Map::values));
        }
    }
    out
}

/// A tool's definition for `provider`, named `name`.
pub fn definition(provider: Provider, tool: &Tool, name: &str) -> Value {
    let spec = tool.spec();
    let schema = &spec.input_schema;
    match provider {
        Provider::OpenAi => {
            let form = openai_form(schema);
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec.description,
                    "parameters": form.parameters,
                    "strict": form.strict,
                }
            })
        }
        Provider::Anthropic => json!({
            "name": name,
            "description": spec.description,
            "input_schema": anthropic(schema),
        }),
        Provider::Gemini => {
            let mut declaration = json!({
                "name": name,
                "description": spec.description,
            });
            if let Some((field, parameters)) = gemini_parameters(schema) {
                declaration[field] = parameters;
            }
            declaration
        }
        Provider::Mcp => json!({
            "name": name,
            "description": spec.description,
            "inputSchema": schema,
        }),
    }
}

/// `schema` without its `$schema` dialect line.
pub(crate) fn without_dialect(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Some(obj) = out.as_object_mut() {
        obj.shift_remove("$schema");
    }
    out
}

/// Whether `obj` describes an object with named properties (or an object at all).
fn is_object_schema(obj: &Map<String, Value>) -> bool {
    obj.get("type").and_then(Value::as_str) == Some("object")
        || obj
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t == "object"))
        || obj.get("properties").is_some_and(Value::is_object)
}

/// Whether `obj` says what type its values have.
fn has_type(obj: &Map<String, Value>) -> bool {
    ["type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const"]
        .iter()
        .any(|k| obj.contains_key(*k))
}

/// The schema a local `$ref` (`#/...`) points to in `root`.
fn target<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => target(reference, root).unwrap_or(schema),
        None => schema,
    }
}

/// A root that is a union (a flattened untagged enum: `anyOf`/`oneOf` of objects) as
/// one object, for providers that want an object at the root: every branch's
/// properties (the first description of each), required what every branch
/// requires. It says less than the union (the door checks the rest), never a wrong
/// type.
fn object_root(schema: &Value) -> Value {
    let Some(obj) = schema.as_object() else {
        return json!({"type": "object", "properties": {}});
    };
    let branches: Vec<&Value> = ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| obj.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut properties = Map::new();
    if let Some(own) = obj.get("properties").and_then(Value::as_object) {
        properties.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut required: Option<Vec<Value>> = None;
    for branch in &branches {
        let branch = resolve(branch, schema);
        if let Some(props) = branch.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                properties
                    .entry(name.clone())
                    .or_insert_with(|| prop.clone());
            }
        }
        let theirs: Vec<Value> = branch
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        required = Some(match required {
            None => theirs,
            Some(ours) => ours.into_iter().filter(|r| theirs.contains(r)).collect(),
        });
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    if let Some(description) = obj.get("description") {
        out.insert("description".into(), description.clone());
    }
    out.insert("properties".into(), Value::Object(properties));
    let mut required = required.unwrap_or_default();
    if let Some(own) = obj.get("required").and_then(Value::as_array) {
        for r in own {
            if !required.contains(r) {
                required.push(r.clone());
            }
        }
    }
    out.insert("required".into(), Value::Array(required));
    for defs in ["$defs", "definitions"] {
        if let Some(d) = obj.get(defs) {
            out.insert(defs.into(), d.clone());
        }
    }
    Value::Object(out)
}

/// `schema` as a provider that wants an object at the root receives it: as it is
/// when it is one, else as [`object_root`].
fn rooted(schema: &Value) -> Value {
    let whole = without_dialect(schema);
    let at_top = |k: &str| whole.get(k).is_some();
    match whole.as_object() {
        Some(obj) if is_object_schema(obj) && !at_top("anyOf") && !at_top("oneOf") => {
            if at_top("allOf") {
                object_root(&whole)
            } else {
                whole
            }
        }
        _ => object_root(&whole),
    }
}

/// The Anthropic form of a schema: the schema as it is (without `$schema`), but an
/// object at the root, as Anthropic asks (`input_schema` does not take `anyOf`,
/// `oneOf` or `allOf` at its top level: a union there becomes one object, every
/// branch's properties, required what every branch requires).
pub fn anthropic(schema: &Value) -> Value {
    rooted(schema)
}

/// A tool's parameters as OpenAI receives them: strict or not.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenAiForm {
    /// The `parameters` schema.
    pub parameters: Value,
    /// Whether the tool is sent with `"strict": true`.
    pub strict: bool,
    /// Why strict mode is off for this tool, when it is.
    pub not_strict: Option<String>,
}

/// The OpenAI form of a tool's input schema: its strict form ([`openai_strict`]) when
/// strict mode can express it, else the schema whole (an object at the root) with
/// strict mode off, as pydantic-ai does, and why ([`strict_blocker`]): a map
/// (`additionalProperties` other than `false`), a value of any type
/// (`serde_json::Value`), a tuple (`prefixItems`), a union at the root, `allOf` of
/// several schemas, `not`, `if`, `patternProperties`.
pub fn openai_form(schema: &Value) -> OpenAiForm {
    match strict_blocker(schema) {
        None => OpenAiForm {
            parameters: openai_strict(schema),
            strict: true,
            not_strict: None,
        },
        Some(why) => OpenAiForm {
            parameters: rooted(schema),
            strict: false,
            not_strict: Some(why),
        },
    }
}

/// Why OpenAI's strict mode cannot express `schema`, when it cannot (see
/// [`openai_form`]).
pub fn strict_blocker(schema: &Value) -> Option<String> {
    let Some(obj) = schema.as_object() else {
        return Some("the parameters are not an object schema".into());
    };
    if !is_object_schema(obj) || obj.contains_key("anyOf") || obj.contains_key("oneOf") {
        return Some("the parameters are a union, not one object".into());
    }
    blocker_at(schema, 0)
}

fn blocker_at(schema: &Value, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return Some(format!("the schema is nested deeper than {MAX_DEPTH}"));
    }
    let obj = match schema {
        Value::Object(obj) => obj,
        Value::Bool(true) => return Some("a value of any type (serde_json::Value)".into()),
        _ => return None,
    };
    if !has_type(obj) {
        return Some("a value of any type (serde_json::Value)".into());
    }
    if obj
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return Some("a map (an object of any keys: additionalProperties)".into());
    }
    for (key, why) in [
        ("prefixItems", "a tuple (prefixItems)"),
        ("patternProperties", "patternProperties"),
        ("not", "not"),
        ("if", "if/then/else"),
    ] {
        if obj.contains_key(key) {
            return Some(why.into());
        }
    }
    if obj
        .get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|a| a.len() > 1)
    {
        return Some("allOf of several schemas".into());
    }
    subschemas(obj)
        .into_iter()
        .find_map(|sub| blocker_at(sub, depth + 1))
}

/// String formats OpenAI's strict mode takes (its documentation's list).
const OPENAI_STRING_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI's strict mode does not take: dropped from the form (the door still
/// checks them), a length noted in the description.
const OPENAI_NOT_STRICT: &[&str] = &[
    "minLength",
    "maxLength",
    "default",
    "examples",
    "minProperties",
    "maxProperties",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
    "contentEncoding",
    "contentMediaType",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The strict OpenAI form of a schema (see the [module docs](super)): every object
/// lists every property as required (an optional one becomes nullable) and takes no
/// other (`additionalProperties: false`); `oneOf` is `anyOf`, `const` an `enum` of
/// one, a `$ref` beside other keywords is inlined (as OpenAI's own SDK does); number
/// formats and keywords strict mode does not take are dropped. Meant for a schema
/// [`strict_blocker`] passes; [`openai_form`] chooses.
pub fn openai_strict(schema: &Value) -> Value {
    let root = without_dialect(schema);
    let mut out = root.clone();
    strict_at(&mut out, &root, 0);
    out
}

fn make_nullable(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    match obj.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = obj.get_mut("enum") {
                if !values.contains(&Value::Null) {
                    values.push(Value::Null);
                }
            }
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
            if let Some(Value::Array(values)) = obj.get_mut("enum") {
                if !values.contains(&Value::Null) {
                    values.push(Value::Null);
                }
            }
        }
        _ => {
            let inner = std::mem::take(obj);
            obj.insert(
                "anyOf".into(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
        }
    }
}

/// Merges `oneOf` into `anyOf` (the branches of a serde enum exclude each other, so
/// the two say the same), in place.
fn one_of_as_any_of(obj: &mut Map<String, Value>) {
    let Some(one_of) = obj.shift_remove("oneOf") else {
        return;
    };
    match obj.get_mut("anyOf") {
        Some(Value::Array(any_of)) => {
            // Both: the value is one of each list.
            let both = json!([{"anyOf": any_of.clone()}, {"anyOf": one_of}]);
            obj.shift_remove("anyOf");
            obj.insert("allOf".into(), both);
        }
        _ => {
            obj.insert("anyOf".into(), one_of);
        }
    }
}

/// Inlines the target of a `$ref` that has other keywords beside it (they win).
fn inline_ref_with_siblings(obj: &mut Map<String, Value>, root: &Value) {
    if obj.len() < 2 {
        return;
    }
    let Some(found) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| target(r, root))
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let mut siblings = std::mem::take(obj);
    siblings.shift_remove("$ref");
    *obj = found;
    for (key, value) in siblings {
        obj.insert(key, value);
    }
}

fn strict_at(value: &mut Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Object(obj) = value else {
        return;
    };
    inline_ref_with_siblings(obj, root);
    one_of_as_any_of(obj);
    if let Some(constant) = obj.shift_remove("const") {
        obj.insert("enum".into(), json!([constant]));
    }
    let is_string = obj.get("type").and_then(Value::as_str) == Some("string");
    let keep_format = is_string
        && obj
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| OPENAI_STRING_FORMATS.contains(&f));
    if !keep_format {
        obj.shift_remove("format");
    }
    let mut notes = Vec::new();
    for key in OPENAI_NOT_STRICT {
        if let Some(dropped) = obj.shift_remove(*key) {
            match *key {
                "minLength" => notes.push(format!("at least {dropped} characters")),
                "maxLength" => notes.push(format!("at most {dropped} characters")),
                _ => {}
            }
        }
    }
    if !notes.is_empty() {
        let note = format!("({})", notes.join(", "));
        let description = match obj.get("description").and_then(Value::as_str) {
            Some(text) => format!("{text} {note}"),
            None => note,
        };
        obj.insert("description".into(), Value::String(description));
    }
    each_subschema_mut(obj, |sub| strict_at(sub, root, depth + 1));
    if is_object_schema(obj) {
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut names = Vec::new();
        match obj.get_mut("properties") {
            Some(Value::Object(props)) => {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        make_nullable(prop);
                    }
                    names.push(Value::String(name.clone()));
                }
            }
            _ => {
                obj.insert("properties".into(), json!({}));
            }
        }
        obj.insert("required".into(), Value::Array(names));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// Removes the nulls a strict OpenAI model sends for optional fields of `schema`, so
/// the tool sees them absent: in nested objects, in the items of arrays, in the
/// values of maps and in the branch of a union the value is of.
pub fn drop_nulls(arguments: &mut Value, schema: &Value) {
    drop_nulls_at(arguments, schema, schema, 0);
}

fn drop_nulls_at(arguments: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > 32 {
        return;
    }
    let schema = resolve(schema, root);
    let Some(obj) = schema.as_object() else {
        return;
    };
    // A union: the branch the value is of (the first that fits its keys).
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = obj.get(key).and_then(Value::as_array) {
            let fitting = branches.iter().find(|b| fits(arguments, resolve(b, root)));
            if let Some(branch) = fitting {
                drop_nulls_at(arguments, branch, root, depth + 1);
            }
        }
    }
    match arguments {
        Value::Object(args) => {
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = obj.get("properties").and_then(Value::as_object);
            if properties.is_some() {
                args.retain(|name, value| !value.is_null() || required.contains(&name.as_str()));
            }
            for (name, value) in args.iter_mut() {
                match properties.and_then(|p| p.get(name)) {
                    Some(prop) => drop_nulls_at(value, prop, root, depth + 1),
                    None => {
                        if let Some(values) = obj.get("additionalProperties") {
                            drop_nulls_at(value, values, root, depth + 1);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            let prefix = obj.get("prefixItems").and_then(Value::as_array);
            for (i, item) in items.iter_mut().enumerate() {
                let each = prefix.and_then(|p| p.get(i)).or_else(|| obj.get("items"));
                if let Some(each) = each {
                    drop_nulls_at(item, each, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Whether `value` fits `branch` by shape: an object whose keys the branch names
/// (and whose required keys it has, a tag's `const` matching), or a value of the
/// branch's type.
fn fits(value: &Value, branch: &Value) -> bool {
    let Some(obj) = branch.as_object() else {
        return false;
    };
    match value {
        Value::Object(args) => {
            if !is_object_schema(obj) {
                return false;
            }
            let properties = obj.get("properties").and_then(Value::as_object);
            let named = |k: &String| properties.is_some_and(|p| p.contains_key(k));
            let open = obj
                .get("additionalProperties")
                .is_some_and(|a| a != &Value::Bool(false));
            let required_present = obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .all(|r| args.contains_key(r));
            let tags_match = properties.into_iter().flatten().all(|(k, p)| {
                match (p.get("const"), args.get(k)) {
                    (Some(c), Some(v)) => c == v,
                    _ => true,
                }
            });
            required_present && tags_match && (open || args.keys().all(named))
        }
        Value::Array(_) => obj.get("type").and_then(Value::as_str) == Some("array"),
        Value::Null => false,
        _ => !is_object_schema(obj),
    }
}

/// Keywords Gemini's `parameters` (its OpenAPI schema) takes.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "anyOf",
    "propertyOrdering",
];

/// Formats Gemini's OpenAPI schema takes, by type.
fn gemini_format(kind: Option<&str>, format: &str) -> bool {
    match kind {
        Some("string") => matches!(format, "date-time" | "enum"),
        Some("integer") => matches!(format, "int32" | "int64"),
        Some("number") => matches!(format, "float" | "double"),
        _ => false,
    }
}

/// Kept for compatibility: Gemini's OpenAPI form inlines `$ref`s and so cannot hold a
/// recursive type; such a tool goes in Gemini's JSON Schema field instead (see
/// [`gemini_parameters`]), whatever its depth. Non-recursive types are not cut.
pub const GEMINI_MAX_DEPTH: usize = MAX_DEPTH;

/// A tool's parameters as Gemini receives them: the field of its function
/// declaration and its value, or `None` for a tool without parameters (Gemini wants
/// the field left out then).
///
/// The field is `parameters` (Gemini's OpenAPI schema, [`gemini`]) when that can say
/// what the schema says; else `parametersJsonSchema` ([`gemini_json_schema`]), which
/// holds what the OpenAPI form cannot: maps (`additionalProperties`), recursive types
/// (`$ref`), values of any type and tuples (`prefixItems`).
pub fn gemini_parameters(schema: &Value) -> Option<(&'static str, Value)> {
    let rooted = rooted(schema);
    let no_parameters = rooted
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
        && rooted
            .get("additionalProperties")
            .is_none_or(|a| a == &Value::Bool(false));
    if no_parameters {
        return None;
    }
    Some(match gemini_open_api(&rooted) {
        Ok(form) => ("parameters", form),
        Err(_) => ("parametersJsonSchema", gemini_json_schema(schema)),
    })
}

/// The Gemini OpenAPI form of a schema (see the [module docs](super)), for Gemini's
/// `parameters`: `$ref`s inlined, type lists as `nullable`, `oneOf` as `anyOf`,
/// `const` as an `enum` of one, a tuple as an array of its items' types with its
/// length, and keywords Gemini does not take dropped. What this form cannot say (a
/// map, a recursive type, a value of any type) is left as an object with a
/// description saying so: [`gemini_parameters`] sends such a tool in Gemini's JSON
/// Schema field instead.
pub fn gemini(schema: &Value) -> Value {
    match gemini_open_api(&rooted(schema)) {
        Ok(form) | Err(form) => form,
    }
}

/// Gemini's OpenAPI form, or (as the error) the form with a stand-in where it could
/// not say what the schema says.
fn gemini_open_api(schema: &Value) -> Result<Value, Value> {
    let mut lost = false;
    let form = gemini_at(schema, schema, 0, &mut Vec::new(), &mut lost);
    if lost {
        Err(form)
    } else {
        Ok(form)
    }
}

fn gemini_at(
    schema: &Value,
    root: &Value,
    depth: usize,
    refs: &mut Vec<String>,
    lost: &mut bool,
) -> Value {
    let stand_in = |lost: &mut bool, what: &str| {
        *lost = true;
        json!({"type": "object", "description": what})
    };
    if depth > MAX_DEPTH {
        return stand_in(lost, "(nested too deep to describe)");
    }
    let reference = schema
        .get("$ref")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(reference) = &reference {
        if refs.contains(reference) {
            return stand_in(lost, "(a recursive type)");
        }
        refs.push(reference.clone());
    }
    let out = gemini_object(schema, root, depth, refs, lost);
    if reference.is_some() {
        refs.pop();
    }
    out
}

fn gemini_object(
    schema: &Value,
    root: &Value,
    depth: usize,
    refs: &mut Vec<String>,
    lost: &mut bool,
) -> Value {
    let mut merged;
    let obj = match schema.as_object() {
        Some(obj) if obj.contains_key("$ref") => {
            // The target, with what stands beside the `$ref` (a description) over it.
            merged = resolve(schema, root)
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (k, v) in obj {
                if k != "$ref" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            &merged
        }
        Some(obj) => obj,
        None => {
            *lost = true;
            return json!({"type": "object", "description": "(a value of any type)"});
        }
    };
    if !has_type(obj) {
        *lost = true;
        let mut out = json!({"type": "object", "description": "(a value of any type)"});
        if let Some(d) = obj.get("description") {
            out["description"] = d.clone();
        }
        return out;
    }
    if obj
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
        && obj
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        *lost = true;
        return json!({"type": "object", "description": "(a map)"});
    }
    let mut out = Map::new();
    let kind = obj.get("type").and_then(|t| match t {
        Value::String(s) => Some(s.as_str()),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    });
    for (key, value) in obj {
        let key = key.as_str();
        let converted = match key {
            "properties" => Value::Object(
                value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), gemini_at(v, root, depth + 1, refs, lost)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            "items" => gemini_at(value, root, depth + 1, refs, lost),
            "prefixItems" => {
                let items: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| gemini_at(v, root, depth + 1, refs, lost))
                    .collect();
                let n = items.len();
                let mut unique: Vec<Value> = Vec::new();
                for item in items {
                    if !unique.contains(&item) {
                        unique.push(item);
                    }
                }
                let each = if unique.len() == 1 {
                    unique.remove(0)
                } else {
                    json!({"anyOf": unique})
                };
                out.insert("items".into(), each);
                out.entry("minItems").or_insert(json!(n));
                out.entry("maxItems").or_insert(json!(n));
                continue;
            }
            "anyOf" | "oneOf" => {
                let options: Vec<&Value> = value.as_array().into_iter().flatten().collect();
                let non_null: Vec<&Value> = options
                    .iter()
                    .copied()
                    .filter(|o| o.get("type") != Some(&json!("null")))
                    .collect();
                if non_null.len() == 1 && non_null.len() < options.len() {
                    // `anyOf: [S, null]` is a nullable S.
                    let inner = gemini_at(non_null[0], root, depth + 1, refs, lost);
                    if let Value::Object(inner) = inner {
                        for (k, v) in inner {
                            out.entry(k).or_insert(v);
                        }
                    }
                    out.insert("nullable".into(), Value::Bool(true));
                    continue;
                }
                let converted: Vec<Value> = non_null
                    .iter()
                    .map(|o| gemini_at(o, root, depth + 1, refs, lost))
                    .collect();
                if non_null.len() < options.len() {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                out.insert("anyOf".into(), Value::Array(converted));
                continue;
            }
            "type" => match value {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    non_null.first().map_or(json!("string"), |t| (*t).clone())
                }
                other => other.clone(),
            },
            "const" => {
                out.insert("enum".into(), json!([value]));
                continue;
            }
            "enum" => Value::Array(
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect(),
            ),
            "format" => match value.as_str() {
                Some(format) if gemini_format(kind, format) => value.clone(),
                _ => continue,
            },
            key if GEMINI_KEYWORDS.contains(&key) => value.clone(),
            _ => continue,
        };
        out.insert(key.to_owned(), converted);
    }
    if !out.contains_key("type") && !out.contains_key("anyOf") {
        if out.contains_key("properties") {
            out.insert("type".into(), json!("object"));
        } else if let Some(Value::Array(values)) = out.get("enum") {
            let kind = if values.iter().all(Value::is_string) {
                "string"
            } else {
                "number"
            };
            out.insert("type".into(), json!(kind));
        }
    }
    if out.get("type") == Some(&json!("object"))
        && out
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        // Gemini refuses an object without properties.
        *lost = true;
    }
    Value::Object(out)
}

/// Keywords Gemini's JSON Schema field (`parametersJsonSchema`) takes.
const GEMINI_JSON_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// The schema for Gemini's `parametersJsonSchema`: JSON Schema, `$ref`s and
/// `$defs` kept (a recursive type is whole), `oneOf` as `anyOf`, `const` as an
/// `enum` of one, keywords Gemini does not take dropped, an object at the root.
pub fn gemini_json_schema(schema: &Value) -> Value {
    let mut out = rooted(schema);
    json_schema_at(&mut out, 0);
    out
}

fn json_schema_at(value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if value == &Value::Bool(true) {
        // Gemini takes no boolean schemas: "any value" is the empty schema.
        *value = json!({});
    }
    let Value::Object(obj) = value else {
        return;
    };
    one_of_as_any_of(obj);
    if obj.contains_key("allOf") {
        // Gemini takes no allOf: a single one is the schema itself.
        if let Some(Value::Array(mut all)) = obj.shift_remove("allOf") {
            if all.len() == 1 {
                if let Value::Object(only) = all.remove(0) {
                    for (k, v) in only {
                        obj.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
    if let Some(constant) = obj.shift_remove("const") {
        obj.insert("enum".into(), json!([constant]));
    }
    // A map's own keywords are schemas; anything else unknown goes.
    obj.retain(|key, _| GEMINI_JSON_KEYWORDS.contains(&key.as_str()));
    each_subschema_mut(obj, |sub| json_schema_at(sub, depth + 1));
}

//! Each provider's form of a tool's definition ([`definition`], [`definition_of`]) and
//! of its input schema ([`openai_form`], [`openai_non_strict`], [`anthropic`],
//! [`gemini_parameters`]), and the nulls of a strict form taken out of a model's
//! arguments ([`drop_nulls`]). The provider clients send these forms as they are.
//!
//! Every form is derived from the one canonical schema, which the door validates
//! against; a form is the provider's best view of it. Where a provider cannot express
//! a type, its form says less (an OpenAI tool sent without strict mode, a Gemini tool
//! in its JSON Schema field) but never a wrong type.

use serde_json::{json, Map, Value};
use tackle_core::registry::Tool;

use super::gemini_forms::gemini_parameters;
use super::walk::{
    each_subschema_mut, has_type, is_object_schema, one_of_as_any_of, resolve, rooted, subschemas,
    target, without_dialect, MAX_DEPTH,
};
use super::Provider;

/// A tool's definition for `provider`, named `name` (see [`definition_of`]).
pub fn definition(provider: Provider, tool: &Tool, name: &str) -> Value {
    let spec = tool.spec();
    definition_of(provider, name, &spec.description, &spec.input_schema)
}

/// A tool's definition for `provider`, from its name, description and input schema:
/// what [`definition`] gives for a registry tool, and what each client of the
/// providers' chat APIs sends for it (`OpenAiModel` with strict mode on and the
/// Responses API the OpenAI form, genai's Anthropic and Gemini clients the Anthropic
/// and Gemini forms, as they are; `OpenAiModel` with strict mode off and
/// `OllamaModel` the OpenAI form with strict mode off, [`openai_non_strict`]).
pub fn definition_of(provider: Provider, name: &str, description: &str, schema: &Value) -> Value {
    match provider {
        Provider::OpenAi => openai_definition(name, description, &openai_form(schema)),
        Provider::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": anthropic(schema),
        }),
        Provider::Gemini => {
            let mut declaration = json!({
                "name": name,
                "description": description,
            });
            if let Some((field, parameters)) = gemini_parameters(schema) {
                declaration[field] = parameters;
            }
            declaration
        }
        Provider::Mcp => json!({
            "name": name,
            "description": description,
            "inputSchema": schema,
        }),
    }
}

/// OpenAI's chat-completions definition of a tool whose parameters are `form`:
/// `{"type": "function", "function": {name, description, parameters, strict}}`.
/// `strict` is always written, `false` too: the Responses API, which takes the same
/// function, makes a tool strict unless told otherwise.
pub fn openai_definition(name: &str, description: &str, form: &OpenAiForm) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": form.parameters,
            "strict": form.strict,
        }
    })
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

/// The OpenAI form of a tool's input schema with strict mode off, whatever the
/// schema: the form [`openai_form`] gives a schema strict mode cannot express (the
/// schema whole, without `$schema`, an object at the root), for a client that does
/// not ask for strict mode (`OpenAiModel` by default, `OllamaModel`).
pub fn openai_non_strict(schema: &Value) -> OpenAiForm {
    OpenAiForm {
        parameters: rooted(schema),
        strict: false,
        not_strict: Some(
            strict_blocker(schema).unwrap_or_else(|| "strict mode was not asked for".into()),
        ),
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

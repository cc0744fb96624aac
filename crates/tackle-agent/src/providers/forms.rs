//! Each provider's form of a tool's definition ([`definition`]) and of its input
//! schema ([`openai_strict`], [`gemini`]), and the nulls of a strict form taken out of
//! a model's arguments ([`drop_nulls`]).

use serde_json::{json, Map, Value};
use tackle_core::registry::Tool;

use super::Provider;

/// A tool's definition for `provider`, named `name`.
pub fn definition(provider: Provider, tool: &Tool, name: &str) -> Value {
    let spec = tool.spec();
    let schema = &spec.input_schema;
    match provider {
        Provider::OpenAi => json!({
            "type": "function",
            "function": {
                "name": name,
                "description": spec.description,
                "parameters": openai_strict(schema),
                "strict": true,
            }
        }),
        Provider::Anthropic => json!({
            "name": name,
            "description": spec.description,
            "input_schema": without_dialect(schema),
        }),
        Provider::Gemini => json!({
            "name": name,
            "description": spec.description,
            "parameters": gemini(schema),
        }),
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

/// The strict OpenAI form of a schema (see the [module docs](super)).
pub fn openai_strict(schema: &Value) -> Value {
    let mut out = without_dialect(schema);
    strict_in_place(&mut out);
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

fn strict_in_place(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            for value in obj.values_mut() {
                strict_in_place(value);
            }
            let is_object = obj.get("type").and_then(Value::as_str) == Some("object")
                || obj.contains_key("properties");
            if is_object {
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
                if let Some(Value::Object(props)) = obj.get_mut("properties") {
                    for (name, prop) in props.iter_mut() {
                        if !required.contains(name) {
                            make_nullable(prop);
                        }
                        names.push(Value::String(name.clone()));
                    }
                }
                if obj.contains_key("properties") {
                    obj.insert("required".into(), Value::Array(names));
                    obj.insert("additionalProperties".into(), Value::Bool(false));
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strict_in_place),
        _ => {}
    }
}

/// Removes the nulls a strict OpenAI model sends for optional fields of `schema`, so
/// the tool sees them absent (recursively through nested objects).
pub fn drop_nulls(arguments: &mut Value, schema: &Value) {
    drop_nulls_at(arguments, schema, schema, 0);
}

fn drop_nulls_at(arguments: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > 32 {
        return;
    }
    let schema = resolve(schema, root);
    let Some(args) = arguments.as_object_mut() else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object);
    args.retain(|name, value| !value.is_null() || required.contains(&name.as_str()));
    if let Some(properties) = properties {
        for (name, value) in args.iter_mut() {
            if let Some(prop) = properties.get(name) {
                drop_nulls_at(value, prop, root, depth + 1);
            }
        }
    }
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(target) => target
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .unwrap_or(schema),
        None => schema,
    }
}

/// Keywords Gemini accepts in a schema.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
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
    "anyOf",
    "propertyOrdering",
];

/// How deep Gemini schemas inline a recursive type before cutting it off.
pub const GEMINI_MAX_DEPTH: usize = 6;

/// The Gemini form of a schema (see the [module docs](super)).
pub fn gemini(schema: &Value) -> Value {
    gemini_at(schema, schema, 0)
}

fn gemini_at(schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root);
    let Some(obj) = schema.as_object() else {
        return json!({"type": "object"});
    };
    if depth > GEMINI_MAX_DEPTH {
        return json!({"type": "object", "description": "(nested too deep to describe)"});
    }
    let mut out = Map::new();
    for (key, value) in obj {
        if !GEMINI_KEYWORDS.contains(&key.as_str()) && key != "const" {
            continue;
        }
        let converted = match key.as_str() {
            "properties" => Value::Object(
                value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), gemini_at(v, root, depth + 1)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            "items" => gemini_at(value, root, depth + 1),
            "anyOf" => {
                let options: Vec<&Value> = value
                    .as_array()
                    .map(|a| a.iter().collect())
                    .unwrap_or_default();
                let non_null: Vec<&&Value> = options
                    .iter()
                    .filter(|o| o.get("type") != Some(&json!("null")))
                    .collect();
                if non_null.len() == 1 && non_null.len() < options.len() {
                    // `anyOf: [S, null]` is a nullable S.
                    let mut inner = gemini_at(non_null[0], root, depth + 1);
                    if let Some(o) = inner.as_object_mut() {
                        o.insert("nullable".into(), Value::Bool(true));
                        for (k, v) in o.clone() {
                            out.insert(k, v);
                        }
                    }
                    continue;
                }
                Value::Array(
                    options
                        .iter()
                        .map(|o| gemini_at(o, root, depth + 1))
                        .collect(),
                )
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
            "format" => match value.as_str() {
                Some("date-time" | "enum" | "int32" | "int64" | "float" | "double") => {
                    value.clone()
                }
                _ => continue,
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
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
    Value::Object(out)
}

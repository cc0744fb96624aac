//! Gemini's forms of a tool's input schema: its OpenAPI schema (`parameters`) where
//! that can say what the schema says, else its JSON Schema field
//! (`parametersJsonSchema`), and which of the two a tool is sent in
//! ([`gemini_parameters`]).

use serde_json::{json, Map, Value};

use super::walk::{each_subschema_mut, has_type, one_of_as_any_of, resolve, rooted, MAX_DEPTH};

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

//! Schema derivation: JSON Schemas for tool inputs and outputs, from Rust types.
//!
//! The input schema describes what the tool *accepts*, so it is generated from serde's
//! deserialize view of the arguments; the output schema describes what it *returns*,
//! from the serialize view. Both are JSON Schema 2020-12 (schemars). The canonical form
//! that tackle stores has these guarantees, applied by [`normalize_input_schema`]:
//!
//! * the input root is `type: object` with `properties` and `required` always present;
//! * an optional property (one not in `required`, such as an `Option<T>` parameter) is
//!   never also nullable: leave it out rather than send `null`;
//! * the root carries no `title` (the tool's name and description say what it is).
//!
//! Provider-specific forms (OpenAI strict mode, Gemini, MCP) are derived from this one
//! canonical schema at run time, never stored.

use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The canonical input schema of `T` (deserialize view), or why `T` cannot be a tool
/// input (its schema is not an object).
pub fn input_schema<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    normalize_input_schema(&mut value);
    value
}

/// The schema an agent's answer of type `T` must match (deserialize view: what
/// `T` reads), with optional fields never nullable. Unlike [`input_schema`], its
/// root may be any type.
pub fn answer_schema<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    OptionalNotNullable.transform(&mut schema);
    let mut value = schema.to_value();
    canonical_root(&mut value);
    value
}

/// The output schema of `T` (serialize view).
///
/// `()` gives `null` *or a string*: a tool that returns nothing may stream chunks with
/// `ToolContext::stream`, and the door then makes their concatenation its output.
pub fn output_schema<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    OptionalNotNullable.transform(&mut schema);
    let mut value = schema.to_value();
    canonical_root(&mut value);
    if let Some(root) = value.as_object_mut() {
        let unit = root.get("type").and_then(Value::as_str) == Some("null")
            && root.keys().all(|k| k == "type" || k == "$schema");
        if unit {
            root.insert("type".into(), serde_json::json!(["null", "string"]));
            root.insert(
                "description".into(),
                Value::String(
                    "Nothing, or the concatenation of the chunks the tool streamed.".into(),
                ),
            );
        }
    }
    value
}

/// Brings a hand-written or derived input schema into canonical form (see the module
/// docs). Leaves a schema whose root is not an object as it is: [`check_input_root`]
/// reports that.
pub fn normalize_input_schema(value: &mut Value) {
    if let Ok(schema) = <&mut Schema>::try_from(&mut *value) {
        OptionalNotNullable.transform(schema);
    }
    canonical_root(value);
}

/// The root's canonical shape: `$schema` first, no `title`, and an object root with
/// `properties` and `required`.
fn canonical_root(value: &mut Value) {
    let Some(root) = value.as_object_mut() else {
        return;
    };
    root.shift_remove("title");
    if let Some(dialect) = root.shift_remove("$schema") {
        root.shift_insert(0, "$schema".to_owned(), dialect);
    }
    if root.get("type").and_then(Value::as_str) == Some("object") {
        ensure_properties_and_required(root);
    }
}

/// Checks that an input schema's root is an object schema, as tool inputs must be.
pub fn check_input_root(schema: &Value) -> Result<(), String> {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => Ok(()),
        _ => Err(format!(
            "the input schema's root must be `{{\"type\": \"object\"}}` (tool arguments are named), found {}",
            truncate(&schema.to_string(), 120)
        )),
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

fn ensure_properties_and_required(root: &mut Map<String, Value>) {
    root.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    root.entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
}

/// Removes `null` from the schemas of optional properties: an optional property is
/// left out, never sent as `null`.
struct OptionalNotNullable;

impl Transform for OptionalNotNullable {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        for (name, prop) in props.iter_mut() {
            if !required.iter().any(|r| r == name) {
                strip_null(prop);
            }
        }
    }
}

/// Drops the `null` alternative from one property schema, in each form schemars emits:
/// `type: [T, "null"]`, `enum: [..., null]`, and `anyOf: [S, {"type": "null"}]`.
fn strip_null(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(alternatives)) = obj.get("anyOf") {
        let is_null = |s: &Value| {
            s.get("type").and_then(Value::as_str) == Some("null")
                && s.as_object().is_some_and(|o| o.len() == 1)
        };
        let rest: Vec<Value> = alternatives
            .iter()
            .filter(|s| !is_null(s))
            .cloned()
            .collect();
        if rest.len() < alternatives.len() {
            if rest.len() == 1 {
                obj.shift_remove("anyOf");
                if let Some(Value::Object(inner)) = rest.into_iter().next() {
                    for (k, v) in inner {
                        obj.entry(k).or_insert(v);
                    }
                }
            } else {
                obj.insert("anyOf".into(), Value::Array(rest));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use serde_json::json;
    use std::collections::BTreeMap;

    #[allow(dead_code)]
    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Inner {
        /// a label
        label: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Colour {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Input {
        count: u32,
        note: Option<String>,
        colour: Option<Colour>,
        inner: Option<Inner>,
        list: Vec<Inner>,
        map: BTreeMap<String, i64>,
    }

    #[test]
    fn input_root_is_a_canonical_object() {
        let s = input_schema::<Input>();
        assert_eq!(s.as_object().unwrap().keys().next().unwrap(), "$schema");
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["type"], "object");
        assert!(s.get("title").is_none());
        assert_eq!(s["required"], json!(["count", "list", "map"]));
        assert_eq!(s["properties"]["note"], json!({"type": "string"}));
        assert_eq!(s["properties"]["colour"]["$ref"], "#/$defs/Colour");
        assert_eq!(s["properties"]["inner"]["$ref"], "#/$defs/Inner");
        assert!(
            !s.to_string().contains("null"),
            "optional is never nullable: {s}"
        );
        assert_eq!(
            s["$defs"]["Inner"]["properties"]["label"]["description"],
            "a label"
        );
    }

    #[test]
    fn empty_objects_still_list_properties_and_required() {
        #[derive(Deserialize, JsonSchema)]
        struct Empty {}
        let s = input_schema::<Empty>();
        assert_eq!(s["properties"], json!({}));
        assert_eq!(s["required"], json!([]));
        let mut hand = json!({"type": "object"});
        normalize_input_schema(&mut hand);
        assert_eq!(
            hand,
            json!({"type": "object", "properties": {}, "required": []})
        );
    }

    #[test]
    fn outputs_use_the_serialize_view() {
        assert_eq!(output_schema::<()>()["type"], json!(["null", "string"]));
        assert_eq!(output_schema::<i64>()["type"], "integer");
        assert_eq!(output_schema::<Vec<String>>()["items"]["type"], "string");
    }

    #[test]
    fn enum_and_anyof_nullables_are_stripped() {
        let mut v = json!({"type": "object", "properties": {
            "a": {"type": ["string", "null"], "enum": ["x", null]},
            "b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}], "description": "d"},
            "c": {"type": ["integer", "null"]}
        }, "required": ["c"]});
        normalize_input_schema(&mut v);
        assert_eq!(
            v["properties"]["a"],
            json!({"type": "string", "enum": ["x"]})
        );
        assert_eq!(
            v["properties"]["b"],
            json!({"description": "d", "$ref": "#/$defs/B"})
        );
        assert_eq!(
            v["properties"]["c"],
            json!({"type": ["integer", "null"]}),
            "required stays as written"
        );
    }

    #[test]
    fn non_object_roots_are_reported() {
        assert!(check_input_root(&input_schema::<Input>()).is_ok());
        let err = check_input_root(&input_schema::<Colour>()).unwrap_err();
        assert!(err.contains("root must be"), "{err}");
    }
}

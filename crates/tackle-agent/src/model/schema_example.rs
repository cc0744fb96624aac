//! A value that fits a schema, for [`TestModel`](super::TestModel)'s calls.

use serde_json::{json, Map, Value};

/// A value that fits `schema` (its required parts), following local `$ref`s.
pub fn example_of(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return resolved.map_or(Value::Null, |s| example_of(s, root, depth + 1));
    }
    if let Some(value) = obj.get("const") {
        return value.clone();
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(value) = obj.get("default") {
        return value.clone();
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = obj
            .get(combinator)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return example_of(first, root, depth + 1);
        }
    }
    let kind = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    if required.contains(&name.as_str()) {
                        out.insert(name.clone(), example_of(prop, root, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = obj
                .get("items")
                .map_or(Value::Null, |i| example_of(i, root, depth + 1));
            Value::Array((0..min).map(|_| item.clone()).collect())
        }
        "string" => {
            let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            json!("x".repeat(min.max(7)).replacen("xxxxxxx", "example", 1))
        }
        "integer" => json!(obj
            .get("minimum")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(1)),
        "number" => json!(obj
            .get("minimum")
            .and_then(Value::as_f64)
            .unwrap_or(1.0)
            .max(1.0)),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

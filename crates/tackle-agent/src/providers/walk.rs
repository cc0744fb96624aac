//! Walking a JSON Schema for the providers' forms: the keywords that hold
//! subschemas, local `$ref`s resolved, and a union at the root made one object. Every
//! walk is bounded by [`MAX_DEPTH`] (a schema is data: an imported MCP server's tools
//! bring their own).

use serde_json::{json, Map, Value};

/// How deep the forms go into a schema. A schema is data (an imported MCP server's
/// tools bring their own): deeper parts are left as they are, and a schema that deep
/// is not sent strict.
pub(super) const MAX_DEPTH: usize = 64;

/// Keywords whose value is one schema.
pub(super) const ONE_SCHEMA: &[&str] = &[
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
pub(super) const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
pub(super) const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Applies `f` to each schema directly inside `obj` (not to values such as `enum`,
/// `const`, `default` or `examples`, which are data, nor to a property *named* like a
/// keyword).
pub(super) fn each_subschema_mut(obj: &mut Map<String, Value>, mut f: impl FnMut(&mut Value)) {
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
pub(super) fn subschemas(obj: &Map<String, Value>) -> Vec<&Value> {
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

/// `schema` without its `$schema` dialect line.
pub(crate) fn without_dialect(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Some(obj) = out.as_object_mut() {
        obj.shift_remove("$schema");
    }
    out
}

/// Whether `obj` describes an object with named properties (or an object at all).
pub(super) fn is_object_schema(obj: &Map<String, Value>) -> bool {
    obj.get("type").and_then(Value::as_str) == Some("object")
        || obj
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t == "object"))
        || obj.get("properties").is_some_and(Value::is_object)
}

/// Whether `obj` says what type its values have.
pub(super) fn has_type(obj: &Map<String, Value>) -> bool {
    ["type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const"]
        .iter()
        .any(|k| obj.contains_key(*k))
}

/// The schema a local `$ref` (`#/...`) points to in `root`.
pub(super) fn target<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

pub(super) fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
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
pub(super) fn object_root(schema: &Value) -> Value {
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
pub(super) fn rooted(schema: &Value) -> Value {
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

/// Merges `oneOf` into `anyOf` (the branches of a serde enum exclude each other, so
/// the two say the same), in place.
pub(super) fn one_of_as_any_of(obj: &mut Map<String, Value>) {
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

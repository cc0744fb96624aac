//! Tool definitions in each provider's form, derived from the one canonical schema.
//!
//! A tool has one input schema (JSON Schema 2020-12, see [`crate::schema`]). Each
//! model provider accepts a different dialect, so the form is derived at run time:
//!
//! * **OpenAI** (strict function calling): every object gets
//!   `additionalProperties: false` and lists *every* property as required; a property
//!   that was optional becomes nullable instead. [`drop_nulls`] removes those nulls
//!   from the model's arguments before they reach the door, so the tool sees an absent
//!   field, as its schema says.
//! * **Anthropic**: the schema as it is (`input_schema`), without `$schema`.
//! * **Gemini**: an OpenAPI subset: `$ref`s are inlined (a recursive type is cut
//!   below a depth, as an object of any shape), type lists become `nullable`, and
//!   keywords Gemini rejects (`additionalProperties`, `$defs`, `title`, `default`,
//!   `examples`, `format` other than its own, ...) are dropped.
//! * **MCP**: the schema as it is (`inputSchema`).
//!
//! Names differ too: [`ProviderNames`] maps registry keys to each provider's legal
//! names, keeps the reverse map, and refuses two keys that would share a name or a
//! name longer than the provider accepts.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::registry::Tool;

/// A model provider's tool-definition dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI chat completions, strict function calling.
    OpenAi,
    /// Anthropic messages.
    Anthropic,
    /// Google Gemini function declarations.
    Gemini,
    /// The Model Context Protocol.
    Mcp,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// The longest tool name the provider accepts.
    pub fn max_name_len(self) -> usize {
        match self {
            Provider::Mcp => 128,
            _ => 64,
        }
    }

    /// The provider's legal form of a tool key's path (`namespace.name`; any
    /// `@version` is left out): characters the provider refuses become `_`.
    pub fn name_for(self, key: &str) -> String {
        let path = key.split_once('@').map_or(key, |(p, _)| p);
        let keep_dots = self == Provider::Mcp;
        path.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || (keep_dots && c == '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// Names of tools for one provider, both ways: the one map from registry keys to the
/// names a model or a client sees, and back. The provider forms name tools with it,
/// the ReAct loop names the tools it offers with it, and the MCP bridge names the
/// tools it serves with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderNames {
    provider: Provider,
    to_key: HashMap<String, String>,
    to_name: BTreeMap<String, String>,
}

/// Why a set of keys cannot be named for a provider.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderNameError {
    /// Two keys would have one name.
    #[error("for {provider}, `{first}` and `{second}` would both be named `{name}`")]
    Collision {
        /// The provider.
        provider: &'static str,
        /// The shared name.
        name: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
    /// A name would be longer than the provider accepts.
    #[error("for {provider}, `{key}` would be named `{name}`, longer than {max} characters")]
    TooLong {
        /// The provider.
        provider: &'static str,
        /// The key.
        key: String,
        /// The name.
        name: String,
        /// The provider's limit.
        max: usize,
    },
}

/// A name [`ProviderNames::insert`] found taken by another key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{first}` and `{second}` would both be named `{name}`")]
pub struct NameTaken {
    /// The name.
    pub name: String,
    /// The key that has it.
    pub first: String,
    /// The key that was refused it.
    pub second: String,
}

impl ProviderNames {
    /// No names yet, for `provider`: add them with [`insert`](Self::insert).
    pub fn empty(provider: Provider) -> ProviderNames {
        ProviderNames {
            provider,
            to_key: HashMap::new(),
            to_name: BTreeMap::new(),
        }
    }

    /// Names for `keys`: `namespace_name` (dots kept for MCP); the version is added
    /// (`_v2`) only where a path has several versions.
    pub fn new<'a>(
        provider: Provider,
        keys: impl IntoIterator<Item = &'a str>,
    ) -> Result<ProviderNames, ProviderNameError> {
        let keys: Vec<&str> = keys.into_iter().collect();
        let mut per_path: HashMap<&str, usize> = HashMap::new();
        for key in &keys {
            *per_path
                .entry(key.split_once('@').map_or(*key, |(p, _)| p))
                .or_default() += 1;
        }
        let mut names = ProviderNames::empty(provider);
        for key in keys {
            let (path, version) = key.split_once('@').unwrap_or((key, ""));
            let name = if per_path.get(path) == Some(&1) {
                provider.name_for(key)
            } else {
                provider.name_for(&format!("{path}_v{version}"))
            };
            if name.len() > provider.max_name_len() {
                return Err(ProviderNameError::TooLong {
                    provider: provider.as_str(),
                    key: key.to_owned(),
                    name,
                    max: provider.max_name_len(),
                });
            }
            if let Some(first) = names.to_key.get(&name) {
                return Err(ProviderNameError::Collision {
                    provider: provider.as_str(),
                    name,
                    first: first.clone(),
                    second: key.to_owned(),
                });
            }
            names.to_key.insert(name.clone(), key.to_owned());
            names.to_name.insert(key.to_owned(), name);
        }
        Ok(names)
    }

    /// Adds `key` under the provider's name for its path
    /// ([`Provider::name_for`]: no version, so a second version of one path is a
    /// collision), for names given one at a time, as an agent offers tools; the
    /// length is checked by [`new`](Self::new) only. Adding a key again gives its
    /// name again.
    pub fn insert(&mut self, key: &str) -> Result<&str, NameTaken> {
        let name = self.provider.name_for(key);
        match self.to_key.get(&name) {
            Some(first) if first != key => Err(NameTaken {
                name,
                first: first.clone(),
                second: key.to_owned(),
            }),
            _ => {
                self.to_key.insert(name.clone(), key.to_owned());
                Ok(self.to_name.entry(key.to_owned()).or_insert(name))
            }
        }
    }

    /// Each bare name (the `name` of `namespace.name@version`, in the provider's
    /// form) that only one of the named keys has, with that key: the short names
    /// servers written in other languages give their tools, and names a model may
    /// use for a tool it was offered under a longer one.
    pub fn unique_bare_names(&self) -> Vec<(String, &str)> {
        let mut by_bare: BTreeMap<String, Option<&str>> = BTreeMap::new();
        for key in self.to_name.keys() {
            let path = key.split_once('@').map_or(key.as_str(), |(p, _)| p);
            let bare = self
                .provider
                .name_for(path.rsplit_once('.').map_or(path, |(_, n)| n));
            by_bare
                .entry(bare)
                .and_modify(|k| *k = None)
                .or_insert(Some(key.as_str()));
        }
        by_bare
            .into_iter()
            .filter_map(|(bare, key)| key.filter(|_| !bare.is_empty()).map(|key| (bare, key)))
            .collect()
    }

    /// These names with each key whose bare name no other key has named by it
    /// ([`unique_bare_names`](Self::unique_bare_names)) instead. A bare name never
    /// holds a `.` and, for MCP, a qualified one always does, so the two never meet.
    pub fn with_bare_names(mut self) -> ProviderNames {
        let bare: Vec<(String, String)> = self
            .unique_bare_names()
            .into_iter()
            .map(|(bare, key)| (bare, key.to_owned()))
            .collect();
        for (bare, key) in bare {
            // Another key's full name already (a provider whose names hold no `.`).
            if self.to_key.get(&bare).is_some_and(|other| *other != key) {
                continue;
            }
            if let Some(old) = self.to_name.insert(key.clone(), bare.clone()) {
                self.to_key.remove(&old);
            }
            self.to_key.insert(bare, key);
        }
        self
    }

    /// The provider the names are for.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// How many keys are named.
    pub fn len(&self) -> usize {
        self.to_name.len()
    }

    /// Whether no key is named.
    pub fn is_empty(&self) -> bool {
        self.to_name.is_empty()
    }

    /// The key a name stands for.
    pub fn key_of(&self, name: &str) -> Option<&str> {
        self.to_key.get(name).map(String::as_str)
    }

    /// The name of a key.
    pub fn name_of(&self, key: &str) -> Option<&str> {
        self.to_name.get(key).map(String::as_str)
    }

    /// `(key, name)` pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.to_name.iter().map(|(k, n)| (k.as_str(), n.as_str()))
    }
}

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

/// The strict OpenAI form of a schema (see the [module docs](self)).
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

/// The Gemini form of a schema (see the [module docs](self)).
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

//! Validation of tool inputs and outputs against their JSON Schemas.
//!
//! Every call is checked twice at the door: the input against the tool's input schema
//! before the tool runs, the output against its output schema after. Schemas are
//! compiled into a [`SchemaValidator`] once per tool (lazily, on first use) and reused
//! for every call. A failed check lists *every* problem, each with the JSON pointer of
//! the offending value, so a model (or a person) can fix all of them in one go.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One problem found by validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationIssue {
    /// JSON pointer (RFC 6901) to the offending value in the instance; empty for the root.
    pub pointer: String,
    /// JSON pointer to the schema keyword that failed.
    pub schema_path: String,
    /// What is wrong, in words.
    pub message: String,
}

impl ValidationIssue {
    /// An issue not tied to a schema keyword (a decoding failure, say).
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> ValidationIssue {
        ValidationIssue {
            pointer: pointer.into(),
            schema_path: String::new(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at {at}: {}", self.message)
    }
}

/// The outcome of validating one value (codomyrmex's `ValidationResult`): whether it
/// is valid, and every problem if not, in words; the same problems with their JSON
/// pointers are in [`issues`](ValidationResult::issues).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationResult {
    /// `true` when there is no problem (default `true`).
    #[serde(default = "yes")]
    pub valid: bool,
    /// Every problem, in words (`at /a: "x" is not of type "integer"`).
    #[serde(default)]
    pub errors: Vec<String>,
    /// Every problem, with its JSON pointer (not on the wire).
    #[serde(skip)]
    pub issues: Vec<ValidationIssue>,
}

fn yes() -> bool {
    true
}

impl Default for ValidationResult {
    fn default() -> Self {
        ValidationResult::ok()
    }
}

impl ValidationResult {
    /// A passing result.
    pub fn ok() -> ValidationResult {
        ValidationResult {
            valid: true,
            errors: Vec::new(),
            issues: Vec::new(),
        }
    }

    /// A result holding these issues (valid only if there are none).
    pub fn from_issues(issues: Vec<ValidationIssue>) -> ValidationResult {
        ValidationResult {
            valid: issues.is_empty(),
            errors: issues.iter().map(ToString::to_string).collect(),
            issues,
        }
    }

    /// A failing result with these problems, in words.
    pub fn from_errors<S: Into<String>>(errors: impl IntoIterator<Item = S>) -> ValidationResult {
        let errors: Vec<String> = errors.into_iter().map(Into::into).collect();
        ValidationResult {
            valid: errors.is_empty(),
            issues: errors
                .iter()
                .map(|e| ValidationIssue::new("", e.clone()))
                .collect(),
            errors,
        }
    }

    /// Combines two results: valid only if both are, with the errors of both.
    pub fn merge(mut self, other: ValidationResult) -> ValidationResult {
        self.errors.extend(other.errors);
        self.issues.extend(other.issues);
        self.valid = self.valid && other.valid && self.errors.is_empty();
        self
    }

    /// `{"valid": ..., "errors": [...]}` (codomyrmex's `to_dict`).
    pub fn to_dict(&self) -> Value {
        serde_json::json!({"valid": self.valid, "errors": self.errors})
    }

    /// `Ok(())` when valid, else the issues.
    pub fn into_result(self) -> Result<(), Vec<ValidationIssue>> {
        if self.valid {
            Ok(())
        } else {
            Err(self.issues)
        }
    }
}

/// Validates `data` against a JSON Schema (codomyrmex's `validate_input`): every
/// keyword of the schema's draft (2020-12 when it names none), a superset of the
/// seed's list. A schema that is not valid is itself the (only) error.
pub fn validate_input(data: &Value, schema: &Value) -> ValidationResult {
    match SchemaValidator::compile(schema) {
        Ok(validator) => validator.validate(data),
        Err(message) => {
            ValidationResult::from_errors([format!("the schema is not valid: {message}")])
        }
    }
}

/// Validates an output against a JSON Schema (codomyrmex's `validate_output`): the
/// same check as [`validate_input`], kept apart for clearer reports.
pub fn validate_output(data: &Value, schema: &Value) -> ValidationResult {
    validate_input(data, schema)
}

/// A compiled JSON Schema. Compile once, validate many times.
#[derive(Debug)]
pub struct SchemaValidator {
    inner: jsonschema::Validator,
    shortcut: Shortcut,
}

/// A schema whose only constraint is the value's type (the output schema of most
/// tools returning a number, a string or a boolean) is decided by looking at the type,
/// as the full validator would, without walking its keyword tree. So is a flat object
/// of such properties (the input schema of most tools: named arguments of plain
/// types, some required, no others allowed).
#[derive(Debug, PartialEq, Eq)]
enum Shortcut {
    /// `true` or `{}`: every value is valid.
    Anything,
    /// Only `type` (a bit per JSON type), besides annotations.
    Types(u8),
    /// An object of known properties, each constrained by its type only.
    Object(Box<Shape>),
    /// Anything else: the full validator decides.
    None,
}

/// A flat object schema (`"type": "object"`, `properties` of [`Shortcut::Types`] or
/// [`Shortcut::Anything`] schemas, `required`, `additionalProperties` true or false),
/// decided in one pass over the object's members.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    /// Each property's name and the types it may have.
    properties: Vec<(String, u8)>,
    /// The required properties, a bit per index in `properties`.
    required: u64,
    /// Whether members other than `properties` are refused.
    closed: bool,
}

/// The most properties a [`Shape`] holds (one bit each in `required`).
const MAX_SHAPE_PROPERTIES: usize = 64;

/// Every JSON type's bit: a property schema that accepts anything.
const ANY_TYPE: u8 = 127;

const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;

/// Keywords that do not constrain a value (in drafts 2019-09 and 2020-12, where
/// `format` is an annotation unless a validator is asked to check formats).
const ANNOTATIONS: [&str; 9] = [
    "$schema",
    "$comment",
    "title",
    "description",
    "format",
    "examples",
    "default",
    "readOnly",
    "writeOnly",
];

/// The drafts in which `format` is only an annotation.
const ANNOTATION_FORMAT_DRAFTS: [&str; 2] = [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
];

fn shortcut(schema: &Value) -> Shortcut {
    match schema {
        // Only these say nothing at all: a schema of annotations is still checked
        // (by its types, all of them), and its gate says it passed.
        Value::Bool(true) => return Shortcut::Anything,
        Value::Object(map) if map.is_empty() => return Shortcut::Anything,
        _ => {}
    }
    match types_only(schema) {
        Some(bits) => Shortcut::Types(bits),
        None => shape(schema).map_or(Shortcut::None, |shape| Shortcut::Object(Box::new(shape))),
    }
}

/// The object schema `schema` is, as a [`Shape`], when it is one.
fn shape(schema: &Value) -> Option<Shape> {
    let map = schema.as_object()?;
    if !draft_has_annotation_formats(map)
        || map.get("type").and_then(Value::as_str) != Some("object")
        || map.keys().any(|k| {
            !matches!(
                k.as_str(),
                "type" | "properties" | "required" | "additionalProperties"
            ) && !ANNOTATIONS.contains(&k.as_str())
        })
    {
        return None;
    }
    let mut properties = Vec::new();
    if let Some(declared) = map.get("properties") {
        for (name, property) in declared.as_object()? {
            if property
                .as_object()
                .is_some_and(|p| p.contains_key("$schema"))
            {
                return None;
            }
            properties.push((name.clone(), types_only(property)?));
        }
    }
    if properties.len() > MAX_SHAPE_PROPERTIES {
        return None;
    }
    let mut required = 0u64;
    if let Some(names) = map.get("required") {
        for name in names.as_array()? {
            let name = name.as_str()?;
            let index = properties.iter().position(|(known, _)| known == name)?;
            required |= 1 << index;
        }
    }
    let closed = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => false,
        Some(Value::Bool(false)) => true,
        Some(Value::Object(any)) if any.is_empty() => false,
        Some(_) => return None,
    };
    Some(Shape {
        properties,
        required,
        closed,
    })
}

/// Whether `value`, an object, has the shape: every member of a known property of
/// its types, none unknown when the shape is closed, every required one present.
fn has_shape(value: &Value, shape: &Shape) -> bool {
    let Value::Object(members) = value else {
        return false;
    };
    let mut present = 0u64;
    for (at, (name, member)) in members.iter().enumerate() {
        // Members mostly come in the schema's order: look there first.
        let found = match shape.properties.get(at) {
            Some((known, _)) if same(known, name) => Some(at),
            _ => shape
                .properties
                .iter()
                .position(|(known, _)| same(known, name)),
        };
        match found {
            Some(index) => {
                if !has_type(member, shape.properties[index].1) {
                    return false;
                }
                present |= 1 << index;
            }
            None if shape.closed => return false,
            None => {}
        }
    }
    present & shape.required == shape.required
}

/// Whether two names are the same, compared in place: most are a few bytes, where a
/// call to compare memory costs more than the comparison.
#[inline]
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// Whether the schema's draft (2020-12 when it names none) takes `format` as an
/// annotation.
fn draft_has_annotation_formats(map: &serde_json::Map<String, Value>) -> bool {
    match map.get("$schema") {
        None => true,
        Some(Value::String(uri)) => ANNOTATION_FORMAT_DRAFTS.contains(&uri.as_str()),
        Some(_) => false,
    }
}

/// The types a schema allows when its only constraint is `type` (every type when it
/// has none: `true`, `{}`, annotations only); `None` when it constrains more.
fn types_only(schema: &Value) -> Option<u8> {
    let map = match schema {
        Value::Bool(true) => return Some(ANY_TYPE),
        Value::Object(map) => map,
        _ => return None,
    };
    if !draft_has_annotation_formats(map)
        || map
            .keys()
            .any(|k| k != "type" && !ANNOTATIONS.contains(&k.as_str()))
    {
        return None;
    }
    let bit = |name: &Value| match name.as_str()? {
        "null" => Some(NULL),
        "boolean" => Some(BOOLEAN),
        "integer" => Some(INTEGER),
        "number" => Some(NUMBER),
        "string" => Some(STRING),
        "array" => Some(ARRAY),
        "object" => Some(OBJECT),
        _ => None,
    };
    match map.get("type") {
        None => Some(ANY_TYPE),
        Some(Value::Array(names)) if !names.is_empty() => names
            .iter()
            .map(bit)
            .try_fold(0u8, |acc, b| b.map(|b| acc | b)),
        Some(name @ Value::String(_)) => bit(name),
        _ => None,
    }
}

/// Whether `value` has one of the types in `bits` (an integer is a number with no
/// fractional part, as JSON Schema says).
fn has_type(value: &Value, bits: u8) -> bool {
    match value {
        Value::Null => bits & NULL != 0,
        Value::Bool(_) => bits & BOOLEAN != 0,
        Value::Number(n) => {
            bits & NUMBER != 0
                || (bits & INTEGER != 0
                    && (n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)))
        }
        Value::String(_) => bits & STRING != 0,
        Value::Array(_) => bits & ARRAY != 0,
        Value::Object(_) => bits & OBJECT != 0,
    }
}

/// The retriever of [`SchemaValidator::compile`]: every document outside the schema
/// is taken as `true` (any value), never fetched.
struct NothingFetched;

impl jsonschema::Retrieve for NothingFetched {
    fn retrieve(
        &self,
        _uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Value::Bool(true))
    }
}

impl SchemaValidator {
    /// Compiles a schema. The draft comes from its `$schema`, 2020-12 when absent.
    /// Fails with a sentence when the schema itself is not valid.
    ///
    /// Nothing is fetched: a `$ref` to another document (`https://...`, `file:...`)
    /// is never dereferenced over the network or from disk, as MCP's 2026-07-28
    /// revision asks of clients (SEP-2106), and the part of a value it names is not
    /// checked here (a `$ref` within the schema, `#/$defs/...`, is checked as usual).
    /// An imported tool's server checks its own arguments in full.
    pub fn compile(schema: &Value) -> Result<SchemaValidator, String> {
        jsonschema::options()
            .with_retriever(NothingFetched)
            .build(schema)
            .map(|inner| SchemaValidator {
                inner,
                shortcut: shortcut(schema),
            })
            .map_err(|e| e.to_string())
    }

    /// Whether the schema accepts every value (`true` or `{}`), so checking is moot.
    pub fn accepts_anything(&self) -> bool {
        self.shortcut == Shortcut::Anything
    }

    /// Validates an instance, listing every problem.
    pub fn validate(&self, instance: &Value) -> ValidationResult {
        // The fast boolean check first: most calls are valid, and collecting errors
        // costs more than deciding validity.
        if self.is_valid(instance) {
            return ValidationResult::ok();
        }
        ValidationResult::from_issues(
            self.inner
                .iter_errors(instance)
                .map(|e| ValidationIssue {
                    pointer: e.instance_path().as_str().to_owned(),
                    schema_path: e.schema_path().as_str().to_owned(),
                    message: e.to_string(),
                })
                .collect(),
        )
    }

    /// Whether the instance is valid, without collecting errors.
    pub fn is_valid(&self, instance: &Value) -> bool {
        match &self.shortcut {
            Shortcut::Anything => true,
            Shortcut::Types(bits) => has_type(instance, *bits),
            Shortcut::Object(shape) => has_shape(instance, shape),
            Shortcut::None => self.inner.is_valid(instance),
        }
    }
}

/// Checks that a value is a valid JSON Schema under its meta-schema (2020-12 when it
/// names none), returning the first problem as a sentence.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let with_draft;
    let schema = if schema.get("$schema").is_none() && schema.is_object() {
        let mut s = schema.clone();
        if let Some(map) = s.as_object_mut() {
            map.insert(
                "$schema".into(),
                Value::String("https://json-schema.org/draft/2020-12/schema".into()),
            );
        }
        with_draft = s;
        &with_draft
    } else {
        schema
    };
    jsonschema::meta::validate(schema).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_only_shortcuts_agree_with_the_full_validator() {
        let schemas = [
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer", "format": "int64"}),
            json!({"type": "number", "title": "n"}),
            json!({"type": "string", "description": "s"}),
            json!({"type": ["null", "integer"]}),
            json!({"type": ["boolean", "array", "object"]}),
            json!({}),
            json!(true),
            // Not shortcuts: a constraint, or a draft that checks formats.
            json!({"type": "integer", "minimum": 0}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "format": "email"}),
        ];
        let values = [
            json!(null),
            json!(true),
            json!(1),
            json!(-1),
            json!(1.0),
            json!(1.5),
            json!(1e300),
            json!(u64::MAX),
            json!("x"),
            json!("not an email"),
            json!([]),
            json!({}),
        ];
        for (i, schema) in schemas.iter().enumerate() {
            let validator = SchemaValidator::compile(schema).unwrap();
            assert_eq!(validator.shortcut != Shortcut::None, i < 7, "{schema}");
            for value in &values {
                assert_eq!(
                    validator.is_valid(value),
                    validator.inner.is_valid(value),
                    "{schema} on {value}"
                );
            }
        }
    }

    #[test]
    fn only_true_and_the_empty_schema_go_unchecked() {
        for schema in [json!(true), json!({})] {
            assert!(SchemaValidator::compile(&schema)
                .unwrap()
                .accepts_anything());
        }
        // Annotations alone accept every value, and are still a check that passes.
        let annotated = SchemaValidator::compile(&json!({"description": "any"})).unwrap();
        assert!(!annotated.accepts_anything());
        assert!(annotated.is_valid(&json!([1, "two"])));
    }

    #[test]
    fn object_shortcuts_agree_with_the_full_validator() {
        let schemas = [
            // What `#[tool]` derives for `fn add(a: i64, b: i64)`.
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "title": "AddArgs",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "left"},
                    "b": {"type": "integer", "format": "int64"}
                },
                "required": ["a", "b"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "note": {"type": ["string", "null"]},
                    "any": true,
                    "also": {"description": "anything"}
                },
                "required": ["name"]
            }),
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": "object", "properties": {}, "additionalProperties": {}}),
            // Not shortcuts: a constraint on a property, a required name with no
            // property, a schema for the other members, no `type`, a nested object.
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
            json!({"type": "object", "properties": {}, "required": ["x"]}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"properties": {"a": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}}),
        ];
        let values = [
            json!({"a": 2, "b": 3}),
            json!({"a": 2.0, "b": -3}),
            json!({"a": 2.5, "b": 3}),
            json!({"a": 2}),
            json!({"a": 2, "b": 3, "c": 4}),
            json!({"a": "2", "b": 3}),
            json!({"name": "x"}),
            json!({"name": "x", "note": null, "any": [1], "also": {"k": 1}, "extra": 1}),
            json!({"name": 1}),
            json!({"note": "x"}),
            json!({"n": -1}),
            json!({"n": 1, "x": "y"}),
            json!({"o": {}}),
            json!({"x": 1}),
            json!({}),
            json!([]),
            json!("text"),
            json!(null),
        ];
        for (i, schema) in schemas.iter().enumerate() {
            let validator = SchemaValidator::compile(schema).unwrap();
            assert_eq!(
                matches!(validator.shortcut, Shortcut::Object(_)),
                i < 4,
                "{schema}"
            );
            for value in &values {
                assert_eq!(
                    validator.is_valid(value),
                    validator.inner.is_valid(value),
                    "{schema} on {value}"
                );
            }
        }
    }

    fn codomyrmex_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "role": {"enum": ["admin", "user"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}
            },
            "required": ["name", "age"],
            "additionalProperties": false
        })
    }

    #[test]
    fn every_keyword_of_the_list_is_enforced() {
        let v = SchemaValidator::compile(&codomyrmex_schema()).unwrap();
        assert!(
            v.validate(&json!({"name": "ann", "age": 3, "role": "user", "tags": ["a"]}))
                .valid
        );
        let cases = [
            (json!("not an object"), "", "type"),
            (json!({"age": 3}), "", "required"),
            (json!({"name": 5, "age": 3}), "/name", "type"),
            (
                json!({"name": "ann", "age": 3, "role": "root"}),
                "/role",
                "enum",
            ),
            (json!({"name": "ann", "age": -1}), "/age", "minimum"),
            (json!({"name": "ann", "age": 200}), "/age", "maximum"),
            (json!({"name": "a", "age": 3}), "/name", "minLength"),
            (json!({"name": "abcdefg", "age": 3}), "/name", "maxLength"),
            (
                json!({"name": "ann", "age": 3, "tags": []}),
                "/tags",
                "minItems",
            ),
            (
                json!({"name": "ann", "age": 3, "tags": ["a", "b", "c"]}),
                "/tags",
                "maxItems",
            ),
            (
                json!({"name": "ann", "age": 3, "tags": [1]}),
                "/tags/0",
                "type",
            ),
            (
                json!({"name": "ann", "age": 3, "x": 1}),
                "",
                "additionalProperties",
            ),
        ];
        for (instance, pointer, keyword) in cases {
            let r = v.validate(&instance);
            assert!(!r.valid, "{instance} should fail {keyword}");
            assert_eq!(r.errors.len(), 1, "{instance}: {:?}", r.errors);
            assert_eq!(r.issues[0].pointer, pointer, "{instance}");
            assert!(
                r.issues[0].schema_path.ends_with(keyword),
                "{instance}: {:?}",
                r.errors[0]
            );
        }
    }

    #[test]
    fn all_errors_are_listed_with_pointers() {
        let v = SchemaValidator::compile(&codomyrmex_schema()).unwrap();
        let r = v.validate(&json!({"name": 1, "age": "x", "tags": [true]}));
        let pointers: Vec<_> = r.issues.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(r.errors.len(), 3, "{:?}", r.errors);
        for p in ["/name", "/age", "/tags/0"] {
            assert!(pointers.contains(&p), "{pointers:?}");
        }
    }

    #[test]
    fn merge_and_serde_form() {
        let a = ValidationResult::ok();
        let b = ValidationResult::from_issues(vec![ValidationIssue::new("/x", "bad")]);
        let m = a.clone().merge(b.clone());
        assert!(!m.valid);
        assert_eq!(m.errors.len(), 1);
        assert!(a.clone().merge(ValidationResult::ok()).valid);
        let json = serde_json::to_value(&m).unwrap();
        // On the wire, codomyrmex's form: the problems in words.
        assert_eq!(json, json!({"valid": false, "errors": ["at /x: bad"]}));
        let back = serde_json::from_value::<ValidationResult>(json).unwrap();
        assert_eq!((back.valid, &back.errors), (m.valid, &m.errors));
        assert_eq!(b.issues[0].pointer, "/x");
    }

    #[test]
    fn a_ref_to_another_document_is_never_fetched_and_local_refs_still_hold() {
        // Nothing listens on port 9: a fetch would fail the compile.
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"id": {"type": "string", "pattern": "^u[0-9]+$"}},
            "type": "object",
            "properties": {
                "id": {"$ref": "#/$defs/id"},
                "profile": {"$ref": "http://127.0.0.1:9/profile.json"}
            },
            "required": ["id"]
        });
        let v = SchemaValidator::compile(&schema).unwrap();
        assert!(v.is_valid(&json!({"id": "u1", "profile": {"any": ["thing"]}})));
        assert!(!v.is_valid(&json!({"id": "x1"})));
        assert!(!v.is_valid(&json!({"profile": 1})));
    }

    #[test]
    fn bad_schemas_are_reported() {
        assert!(SchemaValidator::compile(&json!({"type": 12})).is_err());
        assert!(check_schema(&json!({"type": "object"})).is_ok());
        assert!(check_schema(&json!({"type": "objekt"})).is_err());
        assert!(check_schema(&json!({"minimum": "three"})).is_err());
    }
}

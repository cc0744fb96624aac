//! Resources: documents a server publishes for clients to read.
//!
//! A tool *does* something; a resource *is* something: a file, a record, a page of
//! docs, addressed by a URI. MCP clients list a server's resources (`resources/list`),
//! list its URI templates (`resources/templates/list`), read one (`resources/read`),
//! and may subscribe to one to hear when it changes.
//!
//! A program publishes resources with a [`Resources`] set, built from [`Resource`]s:
//!
//! * a **static** resource has one URI and its contents (text or bytes), or a function
//!   that reads them when asked ([`Resource::reader`]);
//! * a **template** ([`Resource::template`]) answers every URI that matches an RFC 6570
//!   template of simple `{name}` variables, such as `test://template/{id}/data`: its
//!   reader gets the variables' values, percent-decoded. A value is one segment:
//!   never empty, `.` or `..`, and never holding a `/`, a `\` or a NUL once decoded
//!   (such a URI matches nothing). Each variable has a JSON Schema (a non-empty
//!   string by default; [`Resource::with_argument`] sets another), and a read whose
//!   values break it is refused before the reader runs.
//!
//! A reader runs on the task that serves the read: one that blocks for long (a large
//! file, a slow database) should hand its work to a blocking thread itself. A reader
//! or completer that panics answers the request with an error.
//!
//! The set checks what it is given when it is built (a URI or template that cannot be
//! served, two resources with one URI or one name), so a mistake fails at start-up,
//! never at a client's read.
//!
//! **Every read passes the door.** Each resource is an operation with the key
//! `resource.<name>@1` and side effects `read`: a read is checked against the
//! resource's required capabilities ([`Resource::requires`]) with the caller's grants,
//! its variables are validated, it is audited, and a run with a cassette records and
//! replays it, like every other effect.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Map, Value};
use tackle_core::call::Operation;
use tackle_core::{SideEffects, ToolError, ToolSpec};

use crate::McpError;

/// What a resource holds: text, or bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text (sent as `text`).
    Text(String),
    /// Bytes (sent as a base64 `blob`).
    Binary(Vec<u8>),
}

impl From<String> for ResourceBody {
    fn from(text: String) -> ResourceBody {
        ResourceBody::Text(text)
    }
}

impl From<&str> for ResourceBody {
    fn from(text: &str) -> ResourceBody {
        ResourceBody::Text(text.to_owned())
    }
}

impl From<Vec<u8>> for ResourceBody {
    fn from(bytes: Vec<u8>) -> ResourceBody {
        ResourceBody::Binary(bytes)
    }
}

/// The values of a template's variables in one URI, by name.
pub type TemplateArguments = BTreeMap<String, String>;

/// Reads a resource: from the template's variables (empty for a static resource), its
/// contents, or why it cannot (the client reads the reason).
pub type Reader = Arc<dyn Fn(&TemplateArguments) -> Result<ResourceBody, String> + Send + Sync>;

/// Completes one argument: from the value typed so far, the values that may follow.
pub type Completer = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// Why a resource could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No resource or template answers the URI.
    #[error("no resource `{0}`")]
    NotFound(String),
    /// The door stopped the read, or the reader failed (its kind says which).
    #[error(transparent)]
    Door(#[from] ToolError),
}

/// One resource or URI template, as a builder; add it to a [`Resources`] set.
#[derive(Clone)]
pub struct Resource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    template: bool,
    requires: Vec<String>,
    arguments: BTreeMap<String, Value>,
    completions: BTreeMap<String, Completer>,
    read: Reader,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl Resource {
    fn with_reader(uri: &str, name: &str, template: bool, read: Reader) -> Resource {
        Resource {
            uri: uri.to_owned(),
            name: name.to_owned(),
            title: None,
            description: None,
            mime_type: None,
            template,
            requires: Vec::new(),
            arguments: BTreeMap::new(),
            completions: BTreeMap::new(),
            read,
        }
    }

    /// A static text resource (MIME type `text/plain` unless set).
    pub fn text(uri: &str, name: &str, text: impl Into<String>) -> Resource {
        let text = text.into();
        Resource::with_reader(
            uri,
            name,
            false,
            Arc::new(move |_| Ok(ResourceBody::Text(text.clone()))),
        )
        .with_mime_type("text/plain")
    }

    /// A static binary resource (MIME type `application/octet-stream` unless set).
    pub fn binary(uri: &str, name: &str, bytes: impl Into<Vec<u8>>) -> Resource {
        let bytes = bytes.into();
        Resource::with_reader(
            uri,
            name,
            false,
            Arc::new(move |_| Ok(ResourceBody::Binary(bytes.clone()))),
        )
        .with_mime_type("application/octet-stream")
    }

    /// A static resource whose contents `read` gives when it is read.
    pub fn reader(
        uri: &str,
        name: &str,
        read: impl Fn() -> Result<ResourceBody, String> + Send + Sync + 'static,
    ) -> Resource {
        Resource::with_reader(uri, name, false, Arc::new(move |_| read()))
    }

    /// A URI template (RFC 6570, simple `{name}` variables): `read` answers every URI
    /// that matches it, given the variables' values.
    pub fn template(
        uri_template: &str,
        name: &str,
        read: impl Fn(&TemplateArguments) -> Result<ResourceBody, String> + Send + Sync + 'static,
    ) -> Resource {
        Resource::with_reader(uri_template, name, true, Arc::new(read))
    }

    /// A human-readable title.
    pub fn with_title(mut self, title: impl Into<String>) -> Resource {
        self.title = Some(title.into());
        self
    }

    /// What the resource is, for the client's model.
    pub fn with_description(mut self, description: impl Into<String>) -> Resource {
        self.description = Some(description.into());
        self
    }

    /// Its MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// A capability a caller needs to read it (checked by the door).
    pub fn requires(mut self, capability: impl Into<String>) -> Resource {
        self.requires.push(capability.into());
        self
    }

    /// The JSON Schema of a template variable's value (a string); by default a
    /// non-empty string.
    pub fn with_argument(mut self, name: &str, schema: Value) -> Resource {
        self.arguments.insert(name.to_owned(), schema);
        self
    }

    /// Completes a template variable's value for `completion/complete`.
    pub fn with_completion(
        mut self,
        name: &str,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Resource {
        self.completions.insert(name.to_owned(), Arc::new(complete));
        self
    }
}

/// One part of a URI template: literal text, or a variable.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// A URI template of literal text and simple `{name}` variables.
#[derive(Clone, Debug)]
struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses `template`; `Err` says why it cannot be served.
    fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err("a `{` is not closed".to_owned());
            };
            let name = &rest[open + 1..open + close];
            let simple = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !simple {
                return Err(format!(
                    "`{{{name}}}` is not a simple variable (only `{{name}}` is supported)"
                ));
            }
            if matches!(parts.last(), Some(Part::Variable(_))) {
                return Err("two variables follow each other with nothing between".to_owned());
            }
            parts.push(Part::Variable(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err("a `}` has no `{`".to_owned());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { parts })
    }

    /// The variables' names, in order.
    fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` matches: each value is the text up to the
    /// next literal part (and holds no `/`), never empty.
    fn matches(&self, uri: &str) -> Option<TemplateArguments> {
        let mut values = TemplateArguments::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.contains('/') {
                        return None;
                    }
                    let value = percent_decoded(raw)?;
                    // A value is one path segment: never empty, never a way up or
                    // across (`..`, a `/`, a `\` or a NUL once decoded).
                    if value.is_empty()
                        || value == "."
                        || value == ".."
                        || value.contains(['/', '\\', '\0'])
                    {
                        return None;
                    }
                    values.insert(name.clone(), value);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// `text` with its `%XX` escapes decoded (RFC 3986), if they make UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Runs a user's function, turning a panic into an error.
pub(crate) fn guarded<T>(run: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .map_err(|_| "it panicked".to_owned())
}

/// One resource as served.
pub(crate) struct Entry {
    pub(crate) resource: Resource,
    template: Option<UriTemplate>,
    operation: Operation,
}

impl Entry {
    /// Reads it through the door, as a call of `run` with `ctx`: the MCP
    /// `resources/read` result's `contents`.
    pub(crate) async fn read(
        &self,
        run: &tackle_core::Run,
        uri: &str,
        arguments: TemplateArguments,
        ctx: &tackle_core::ToolContext,
    ) -> Result<Value, ToolError> {
        let read = Arc::clone(&self.resource.read);
        let input = json!({"uri": uri, "arguments": arguments});
        let mime_type = self.resource.mime_type.clone();
        let uri = uri.to_owned();
        let key = self.operation.key().to_owned();
        run.perform(
            &self.operation,
            move || input,
            ctx,
            move || async move {
                let body = guarded(|| read(&arguments))
                    .and_then(|read| read)
                    .map_err(|message| ToolError::Execution { key, message })?;
                let mut content = Map::new();
                content.insert("uri".into(), json!(uri));
                if let Some(mime_type) = mime_type {
                    content.insert("mimeType".into(), json!(mime_type));
                }
                match body {
                    ResourceBody::Text(text) => content.insert("text".into(), json!(text)),
                    ResourceBody::Binary(bytes) => content.insert(
                        "blob".into(),
                        json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
                    ),
                };
                Ok(json!([content]))
            },
        )
        .await
    }

    /// The `resources/list` or `resources/templates/list` entry.
    pub(crate) fn listing(&self) -> Value {
        let r = &self.resource;
        let mut entry = Map::new();
        let uri_field = if self.template.is_some() {
            "uriTemplate"
        } else {
            "uri"
        };
        entry.insert(uri_field.into(), json!(r.uri));
        entry.insert("name".into(), json!(r.name));
        if let Some(title) = &r.title {
            entry.insert("title".into(), json!(title));
        }
        if let Some(description) = &r.description {
            entry.insert("description".into(), json!(description));
        }
        if let Some(mime_type) = &r.mime_type {
            entry.insert("mimeType".into(), json!(mime_type));
        }
        Value::Object(entry)
    }

    /// The capabilities a read needs.
    pub(crate) fn requires(&self) -> &[String] {
        &self.resource.requires
    }
}

/// A server's resources and URI templates. See the [module docs](self).
#[derive(Default)]
pub struct Resources {
    entries: Vec<Entry>,
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.resource))
            .finish()
    }
}

impl Resources {
    /// An empty set.
    pub fn new() -> Resources {
        Resources::default()
    }

    /// Adds `resource`. Fails on a URI template that cannot be served, a name that is
    /// not a name, or a URI or name the set already has.
    pub fn with(mut self, resource: Resource) -> Result<Resources, McpError> {
        let fail = |message: String| McpError::Resource {
            uri: resource.uri.clone(),
            message,
        };
        if resource.uri.is_empty() {
            return Err(fail("a resource needs a URI".to_owned()));
        }
        if self.entries.iter().any(|e| e.resource.uri == resource.uri) {
            return Err(fail(
                "the set has a resource with this URI already".to_owned(),
            ));
        }
        let key_name = key_name(&resource.name).ok_or_else(|| {
            fail(format!(
                "`{}` is not a resource name: use letters, digits, `-` and `_`",
                resource.name
            ))
        })?;
        if self
            .entries
            .iter()
            .any(|e| key_name == key_name_of(&e.resource.name))
        {
            return Err(fail(format!(
                "the set has a resource named `{}` (or spelled the same in a key) already",
                resource.name
            )));
        }
        let template = if resource.template {
            let template = UriTemplate::parse(&resource.uri).map_err(fail)?;
            if template.variables().next().is_none() {
                return Err(fail(
                    "a template needs a variable: use `Resource::text` or `reader` for one URI"
                        .to_owned(),
                ));
            }
            if let Some(unknown) = resource
                .arguments
                .keys()
                .chain(resource.completions.keys())
                .find(|n| !template.variables().any(|v| v == n.as_str()))
            {
                return Err(fail(format!("the template has no variable `{unknown}`")));
            }
            Some(template)
        } else {
            if resource.uri.contains('{') {
                return Err(fail(
                    "a static resource's URI holds `{`: use `Resource::template`".to_owned(),
                ));
            }
            None
        };
        let operation =
            operation(&key_name, &resource, template.as_ref()).map_err(|e| fail(e.to_string()))?;
        self.entries.push(Entry {
            resource,
            template,
            operation,
        });
        Ok(self)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The static resources, in the order added.
    pub(crate) fn statics(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.template.is_none())
    }

    /// The templates, in the order added.
    pub(crate) fn templates(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.template.is_some())
    }

    /// The resource that answers `uri`, with the template's variables: a static
    /// resource of that URI first, else the first template that matches.
    pub(crate) fn find(&self, uri: &str) -> Option<(&Entry, TemplateArguments)> {
        self.find_where(uri, |_| true)
    }

    /// [`find`](Self::find) among the entries that `visible` lets through: a hidden
    /// static resource does not stand in the way of a visible template.
    pub(crate) fn find_where(
        &self,
        uri: &str,
        visible: impl Fn(&Entry) -> bool,
    ) -> Option<(&Entry, TemplateArguments)> {
        self.statics()
            .find(|e| e.resource.uri == uri && visible(e))
            .map(|e| (e, TemplateArguments::new()))
            .or_else(|| {
                self.templates().filter(|e| visible(e)).find_map(|e| {
                    e.template
                        .as_ref()
                        .and_then(|t| t.matches(uri))
                        .map(|args| (e, args))
                })
            })
    }

    /// Reads the resource at `uri` through the door, as a call of `run` with `ctx`
    /// (capabilities, validation of a template's variables, audit, the run's cassette):
    /// its contents in MCP's form (`[{"uri", "mimeType", "text" | "blob"}]`).
    pub async fn read(
        &self,
        run: &tackle_core::Run,
        uri: &str,
        ctx: &tackle_core::ToolContext,
    ) -> Result<Value, ReadError> {
        let (entry, arguments) = self
            .find(uri)
            .ok_or_else(|| ReadError::NotFound(uri.to_owned()))?;
        Ok(entry.read(run, uri, arguments, ctx).await?)
    }

    /// The completions of `argument` of the template `uri_template`, from `value`.
    /// `None` when no template that `visible` lets through has that URI template; a
    /// completer that panics gives `Some(Err)`.
    pub(crate) fn complete(
        &self,
        uri_template: &str,
        argument: &str,
        value: &str,
        visible: impl Fn(&Entry) -> bool,
    ) -> Option<Result<Vec<String>, String>> {
        let entry = self
            .templates()
            .find(|e| e.resource.uri == uri_template && visible(e))?;
        Some(match entry.resource.completions.get(argument) {
            Some(complete) => guarded(|| complete(value)),
            None => Ok(Vec::new()),
        })
    }
}

/// `name` as the name part of an operation key, if it can be one.
fn key_name(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then(|| key_name_of(name))
}

/// `name` with `-` as `_`, lower case: how it reads in a key.
fn key_name_of(name: &str) -> String {
    name.to_ascii_lowercase().replace('-', "_")
}

/// The operation that reads `resource`: key `resource.<name>@1`, side effects `read`,
/// its required capabilities, and an input schema that checks a template's variables.
fn operation(
    key_name: &str,
    resource: &Resource,
    template: Option<&UriTemplate>,
) -> Result<Operation, tackle_core::ToolError> {
    let description = resource
        .description
        .clone()
        .unwrap_or_else(|| format!("Reads the resource {}.", resource.uri));
    let mut spec = ToolSpec::new(
        "resource",
        key_name,
        "1",
        SideEffects::Read,
        description.as_str(),
    );
    spec.permissions = resource.requires.clone();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for name in template.into_iter().flat_map(UriTemplate::variables) {
        let schema = resource
            .arguments
            .get(name)
            .cloned()
            .unwrap_or_else(|| json!({"type": "string", "minLength": 1}));
        properties.insert(name.to_owned(), schema);
        required.push(name.to_owned());
    }
    spec.input_schema = json!({
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "arguments": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
        },
        "required": ["uri", "arguments"],
    });
    spec.output_schema = Value::Bool(true);
    Ok(Operation::new(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_simple_variables() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let args = t.matches("test://template/123/data").unwrap();
        assert_eq!(args.get("id").map(String::as_str), Some("123"));
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/1/datum").is_none());
        assert_eq!(
            t.matches("test://template/a%20b/data").unwrap()["id"],
            "a b",
            "values are percent-decoded"
        );
        for sneaky in ["a%2Fb", "..", "%2E%2E", "a%00", "%zz", "%FF"] {
            assert!(
                t.matches(&format!("test://template/{sneaky}/data"))
                    .is_none(),
                "{sneaky}"
            );
        }
        let tail = UriTemplate::parse("file:///{name}").unwrap();
        assert_eq!(
            tail.matches("file:///notes.txt")
                .unwrap()
                .get("name")
                .map(String::as_str),
            Some("notes.txt")
        );
    }

    #[test]
    fn templates_that_cannot_be_served_are_refused() {
        for bad in ["a://{", "a://{x}{y}", "a://{+x}", "a://}", "a://{}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_set_refuses_duplicates_and_bad_names() {
        let set = Resources::new()
            .with(Resource::text("a://one", "one", "1"))
            .unwrap();
        let again = set.with(Resource::text("a://one", "other", "1"));
        assert!(again.is_err());
        let set = Resources::new()
            .with(Resource::text("a://one", "one", "1"))
            .unwrap();
        assert!(set.with(Resource::text("a://two", "One", "2")).is_err());
        assert!(Resources::new()
            .with(Resource::text("a://x", "not a name", "x"))
            .is_err());
        assert!(Resources::new()
            .with(
                Resource::template("a://{id}", "t", |_| Ok("x".into()))
                    .with_argument("other", json!({"type": "string"}))
            )
            .is_err());
    }
}

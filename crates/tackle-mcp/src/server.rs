//! Serving a runtime to MCP clients.
//!
//! [`McpServer`] implements the MCP server side with the official SDK: `initialize`
//! reports *your* program's name and version (see [`identity!`](crate::identity)) and
//! the tools capability; `tools/list` gives every tool of the registry, sorted by key,
//! with an MCP-legal name ([`NameMap`]), its description, input and output schemas and
//! annotations derived from its side effects; `tools/call` goes through the door
//! (`Runtime::call_report`) with the context the server was configured with, so
//! capabilities, validation, approval, replay, shaping and sanitization all apply.
//!
//! * A tool error, invalid arguments or a denied call is a *result* with
//!   `isError: true` and the error's message as text, which the model can read.
//! * An unknown tool name is a JSON-RPC error (invalid params). Each client sees only
//!   what its grants allow: `tools/list` (and the resources and prompts lists) leave
//!   out what it could not call, and calling such a tool is answered as for an
//!   unknown one. Over stdio the server's grants decide; over HTTP with tokens or
//!   OAuth, each token's.
//! * A success carries `structuredContent` matching `outputSchema`, and the same value
//!   as text. MCP wants both to be objects: a tool whose output is not an object is
//!   served with the output schema `{"type": "object", "properties": {"result": ...}}`
//!   and the structured content `{"result": ...}`. An output that holds images or files
//!   (a `tackle::content::ContentPart`, or a list of them) goes as its blocks: text,
//!   `image` content, and files as binary `resource` content; a tool whose output
//!   type is content parts declares no output schema (structured content cannot hold
//!   an image as such).
//! * When the client sends a progress token, the tool's progress reports become
//!   `notifications/progress`; a `notifications/cancelled` cancels the call through the
//!   context's cancellation token (the door stops a tool that ignores it after the grace
//!   window).
//!
//! Nothing is written to stdout but JSON-RPC; the server logs through `tracing`, which
//! a program should send to stderr.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
    TASKS_EXTENSION_ID,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use tackle_core::content::{parts_of, ContentPart};
use tackle_core::events::DEFAULT_EVENT_QUEUE_DEPTH;
use tackle_core::{event_queue, Run, Runtime, SideEffects, ToolContext, ToolEventKind, ToolSpec};
use tracing::Instrument;

use crate::client::Client;
use crate::logging::SessionLog;
use crate::names::NameMap;
use crate::prompts::{PromptArguments, Prompts};
use crate::resources::Resources;
use crate::tasks::{TaskOptions, Tasks};
use crate::McpError;
use tackle_agent::durable::RunStore;

/// Who the server says it is in `initialize`. Use [`identity!`](crate::identity) for
/// your crate's name and version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The server's name.
    pub name: String,
    /// The server's version.
    pub version: String,
    /// Optional instructions for the client's model.
    pub instructions: Option<String>,
}

impl Identity {
    /// An identity with this name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Identity {
        Identity {
            name: name.into(),
            version: version.into(),
            instructions: None,
        }
    }

    /// Adds instructions for the client's model.
    pub fn with_instructions(mut self, text: impl Into<String>) -> Identity {
        self.instructions = Some(text.into());
        self
    }
}

/// The identity of the crate that calls it: its `CARGO_PKG_NAME` and
/// `CARGO_PKG_VERSION`.
#[macro_export]
macro_rules! identity {
    () => {
        $crate::Identity::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
    };
}

/// An MCP server over a runtime's tools. Cheap to clone. See the [module docs](self).
#[derive(Clone)]
pub struct McpServer {
    runtime: Arc<Runtime>,
    ctx: ToolContext,
    identity: Identity,
    names: Arc<NameMap>,
    /// Every tool's entries (for clients before 2026-07-28, and from it on), with the
    /// permissions a client needs to see it.
    tools: Arc<Vec<Served>>,
    resources: Arc<Resources>,
    prompts: Arc<Prompts>,
    /// Whether calls that need approval ask the human at the client.
    client_approval: bool,
    /// Who subscribed to which resource, over every session.
    subscriptions: Arc<Subscriptions>,
    /// This session's log level and queue (each session gets its own: see
    /// [`McpServer::for_connection`]).
    log: Arc<SessionLog>,
    /// This session's id (subscriptions are kept by it).
    session: u64,
    /// Where calls made as tasks are kept, when the server makes tasks.
    tasks: Option<Arc<Tasks>>,
    /// Who this server's client is, when the HTTP front tells clients apart (an
    /// OAuth subject, a static token's fingerprint): a task is its maker's only.
    owner: Option<Arc<str>>,
}

/// The grant a client needs to read the server's log (`logging/setLevel`).
pub const LOG_GRANT: &str = "mcp:log";

/// The peers subscribed to each resource URI, over every session.
#[derive(Default)]
struct Subscriptions {
    by_uri: std::sync::Mutex<std::collections::BTreeMap<String, Vec<Subscriber>>>,
}

/// One subscriber of a resource: its session's id (or its `subscriptions/listen`
/// request's) and where its updates go.
type Subscriber = (u64, Listener);

/// Where a subscriber's `notifications/resources/updated` go.
#[derive(Clone)]
enum Listener {
    /// A session of a client before 2026-07-28 (`resources/subscribe`).
    Session(rmcp::service::Peer<RoleServer>),
    /// The stream of a 2026-07-28 client's `subscriptions/listen` request.
    Stream(rmcp::service::SubscriptionSink),
}

impl Listener {
    /// Tells the subscriber that `uri` changed; `false` when it is gone.
    async fn updated(&self, uri: &str) -> bool {
        match self {
            Listener::Session(peer) => peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok(),
            Listener::Stream(sink) => sink.notify_resource_updated(uri).await.is_ok(),
        }
    }
}

/// How many resources one session may subscribe to.
const MAX_SESSION_SUBSCRIPTIONS: usize = 64;

/// How many resources may have subscribers at once, over every session.
const MAX_SUBSCRIBED: usize = 4096;

impl Subscriptions {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, Vec<Subscriber>>> {
        self.by_uri
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Subscribes `session` to `uri`, within the caps.
    fn add(&self, uri: &str, session: u64, listener: Listener) -> Result<(), String> {
        let mut map = self.lock();
        if map
            .get(uri)
            .is_some_and(|l| l.iter().any(|(s, _)| *s == session))
        {
            return Ok(());
        }
        let mine = map
            .values()
            .filter(|l| l.iter().any(|(s, _)| *s == session))
            .count();
        if mine >= MAX_SESSION_SUBSCRIPTIONS {
            return Err(format!(
                "a session may subscribe to at most {MAX_SESSION_SUBSCRIPTIONS} resources"
            ));
        }
        if !map.contains_key(uri) && map.len() >= MAX_SUBSCRIBED {
            return Err("the server follows as many resources as it can".to_owned());
        }
        map.entry(uri.to_owned())
            .or_default()
            .push((session, listener));
        Ok(())
    }

    /// Unsubscribes `session` from `uri`.
    fn remove(&self, uri: &str, session: u64) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(uri) {
            list.retain(|(s, _)| *s != session);
            if list.is_empty() {
                map.remove(uri);
            }
        }
    }

    /// The subscribers of `uri`, copied (none is held while they are told).
    fn of(&self, uri: &str) -> Vec<Subscriber> {
        self.lock().get(uri).cloned().unwrap_or_default()
    }

    /// Forgets every subscription of `session` (its client is gone).
    fn forget(&self, session: u64) {
        let mut map = self.lock();
        map.retain(|_, list| {
            list.retain(|(s, _)| *s != session);
            !list.is_empty()
        });
    }
}

/// A new session's id.
fn next_session() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// MCP's "resource not found" (`-32002`) for `uri`: also what a client is told of a
/// resource its grants hide.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource `{uri}`"), Some(json!({ "uri": uri })))
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("identity", &self.identity)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl McpServer {
    /// A server over every tool of `runtime`, calling them with `ctx` (whose grants
    /// are what MCP clients are allowed to do).
    ///
    /// Fails when two tools would get the same MCP name or a name would be too long.
    pub fn new(
        runtime: Arc<Runtime>,
        identity: Identity,
        ctx: ToolContext,
    ) -> Result<McpServer, McpError> {
        let list: Vec<_> = runtime.registry().list().collect();
        let names = NameMap::new(list.iter().map(|t| t.key()))?;
        let tools = listing(&runtime, &names)?;
        Ok(McpServer {
            runtime,
            ctx,
            identity,
            names: Arc::new(names),
            tools: Arc::new(tools),
            resources: Arc::default(),
            prompts: Arc::default(),
            client_approval: false,
            subscriptions: Arc::default(),
            log: Arc::default(),
            session: next_session(),
            tasks: None,
            owner: None,
        })
    }

    /// The same server naming each tool by its bare name (`simple_text` for
    /// `test.simple_text@1`) where no other tool has that name, as servers in other
    /// languages name theirs (see [`NameMap::bare`]).
    pub fn with_bare_names(mut self) -> Result<McpServer, McpError> {
        let keys: Vec<String> = self
            .runtime
            .registry()
            .list()
            .map(|t| t.key().to_owned())
            .collect();
        let names = NameMap::bare(keys.iter().map(String::as_str))?;
        self.tools = Arc::new(listing(&self.runtime, &names)?);
        self.names = Arc::new(names);
        Ok(self)
    }

    /// The same server publishing `resources` (see [`crate::resources`]): reads pass
    /// the door with the server's context.
    pub fn with_resources(mut self, resources: Resources) -> McpServer {
        self.resources = Arc::new(resources);
        self
    }

    /// The same server publishing `prompts` (see [`crate::prompts`]).
    pub fn with_prompts(mut self, prompts: Prompts) -> McpServer {
        self.prompts = Arc::new(prompts);
        self
    }

    /// The same server making durable tasks of the calls of clients that declare the
    /// Tasks extension, kept in `store` (see [`crate::tasks`]) with the default
    /// [`TaskOptions`]. Call [`resume_tasks`](Self::resume_tasks) once it serves, to go
    /// on with the tasks a stopped process left.
    pub fn with_tasks(self, store: Arc<dyn RunStore>) -> McpServer {
        self.with_task_options(store, TaskOptions::default())
    }

    /// [`with_tasks`](Self::with_tasks) with `options`.
    pub fn with_task_options(
        mut self,
        store: Arc<dyn RunStore>,
        options: TaskOptions,
    ) -> McpServer {
        self.tasks = Some(Arc::new(Tasks::new(store, options)));
        self
    }

    /// Goes on with every task of the server's store that no process drives (its
    /// process died; its lease has lapsed): how many it resumed. Tasks are also
    /// resumed when a client polls them.
    pub fn resume_tasks(&self) -> Result<usize, McpError> {
        match &self.tasks {
            Some(tasks) => tasks.resume_all(self).map_err(|e| McpError::Tasks {
                message: e.message.to_string(),
            }),
            None => Ok(0),
        }
    }

    /// The same server asking the human at the client to approve each call that needs
    /// approval (`elicitation/create`, see [`crate::client::ClientApprover`]), in place
    /// of the runtime's approver.
    pub fn with_client_approval(mut self) -> McpServer {
        self.client_approval = true;
        self
    }

    /// The server for a new connection (session): the same configuration, with a log
    /// level and subscriptions of its own. `serve_stdio`, `serve_io` and `serve_http`
    /// call it for each connection; a program serving one server value on several
    /// connections itself (rmcp's `serve`) gives each connection its own with this,
    /// else the connections share one log level and one set of subscriptions.
    pub fn for_connection(&self) -> McpServer {
        McpServer {
            log: Arc::default(),
            session: next_session(),
            ..self.clone()
        }
    }

    /// Tells every client subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`). Clients that are gone are forgotten.
    pub async fn notify_resource_updated(&self, uri: &str) {
        for (session, listener) in self.subscriptions.of(uri) {
            if !listener.updated(uri).await {
                self.subscriptions.forget(session);
            }
        }
    }

    /// The same server calling its tools with another context (another client's
    /// grants, for example).
    pub fn with_context(&self, ctx: ToolContext) -> McpServer {
        McpServer {
            ctx,
            ..self.clone()
        }
    }

    /// The context the server calls its tools with.
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// The served names and the keys they stand for.
    pub fn names(&self) -> &NameMap {
        &self.names
    }

    /// The runtime the server calls.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

impl McpServer {
    /// The same server for the client `owner` (see `owner`).
    pub(crate) fn owned_by(&self, owner: String) -> McpServer {
        McpServer {
            owner: Some(owner.into()),
            ..self.clone()
        }
    }

    /// Who this server's client is, when known.
    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// Whether this client may call the tool `key`: it exists and the grants allow it.
    pub(crate) fn may_call(&self, key: &str) -> bool {
        self.runtime
            .registry()
            .get(key)
            .is_some_and(|tool| self.allows(&tool.spec().permissions))
    }

    /// Runs `work` on the server's tasks off the async workers (the store's reads and
    /// writes block: a resume takes a lease, an SQLite commit).
    async fn with_tasks_off_workers<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Arc<Tasks>, &McpServer) -> Result<T, ErrorData> + Send + 'static,
    ) -> Result<T, ErrorData> {
        let Some(tasks) = self.tasks.clone() else {
            return Err(ErrorData::invalid_request(
                "this server makes no tasks",
                None,
            ));
        };
        let server = self.clone();
        tokio::task::spawn_blocking(move || work(&tasks, &server))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
    }

    /// The `tools/call` result of the tool `key`'s `output`.
    pub(crate) fn result_for(&self, key: &str, output: Value, unwrapped: bool) -> CallToolResult {
        match self.runtime.registry().get(key) {
            Some(tool) => result_of(Ok(output), tool.spec(), unwrapped),
            None => CallToolResult::error(vec![ContentBlock::text(format!(
                "the tool `{key}` is no longer served"
            ))]),
        }
    }

    /// Whether the server's (or this client's) grants allow every one of `needs`.
    fn allows(&self, needs: &[String]) -> bool {
        needs.iter().all(|p| self.ctx.capabilities().allows(p))
    }

    /// Whether the grants can read `entry` (else it is not listed, and a read is
    /// answered as for an unknown resource).
    fn may_read(&self, entry: &crate::resources::Entry) -> bool {
        self.allows(entry.requires())
    }
}

/// One served tool: its `tools/list` entry for clients of revisions before
/// 2026-07-28 (a non-object output wrapped in `{"result": ..}`) and for those from it
/// on (any output as itself, SEP-2106), and the permissions a client needs to see it.
struct Served {
    legacy: Tool,
    current: Tool,
    needs: Vec<String>,
}

/// Whether a request's revision is 2026-07-28 or later: outputs go as themselves.
fn unwrapped_outputs(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The `tools/list` entries of `runtime`'s tools, named by `names`, sorted by key,
/// each with the permissions it needs.
fn listing(runtime: &Runtime, names: &NameMap) -> Result<Vec<Served>, McpError> {
    runtime
        .registry()
        .list()
        .map(|tool| {
            let name = names.name_of(tool.key()).unwrap_or(tool.key());
            Ok(Served {
                legacy: describe(name, tool.spec(), false)?,
                current: describe(name, tool.spec(), true)?,
                needs: tool.spec().permissions.clone(),
            })
        })
        .collect()
}

/// Whether an output schema describes objects only (else it is served wrapped).
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Whether the tool declares an output schema (`true` and `{}` declare nothing).
fn declares_output(schema: &Value) -> bool {
    !(schema == &Value::Bool(true)
        || schema.as_object().is_some_and(|o| o.is_empty())
        || is_content_schema(schema))
}

/// Whether a tool's output is content parts (a `ContentPart` or a list of them): such
/// an output goes as MCP content (text, images, resources) and declares no output
/// schema, since structured content cannot carry images as such.
fn is_content_schema(schema: &Value) -> bool {
    let named = |s: &Value| s.get("title").and_then(Value::as_str) == Some("ContentPart");
    let reference =
        |s: &Value| s.get("$ref").and_then(Value::as_str) == Some("#/$defs/ContentPart");
    named(schema)
        || schema
            .get("items")
            .is_some_and(|items| named(items) || reference(items))
}

/// The MCP output schema of a tool: its own when it describes objects, or when
/// `unwrapped` (revision 2026-07-28 on); wrapped in `{"result": ...}` otherwise; none
/// when the tool declares no output schema.
fn output_schema(spec: &ToolSpec, unwrapped: bool) -> Option<Value> {
    let schema = &spec.output_schema;
    if !declares_output(schema) {
        return None;
    }
    if unwrapped || is_object_schema(schema) {
        return Some(schema.clone());
    }
    let mut inner = schema.clone();
    let mut wrapper = Map::new();
    if let Some(obj) = inner.as_object_mut() {
        if let Some(dialect) = obj.shift_remove("$schema") {
            wrapper.insert("$schema".into(), dialect);
        }
        // `$ref`s point at the root's `$defs`; keep them at the root.
        let defs = obj.shift_remove("$defs");
        wrapper.insert("type".into(), json!("object"));
        wrapper.insert("properties".into(), json!({ "result": inner }));
        wrapper.insert("required".into(), json!(["result"]));
        if let Some(defs) = defs {
            wrapper.insert("$defs".into(), defs);
        }
    } else {
        wrapper.insert("type".into(), json!("object"));
        wrapper.insert("properties".into(), json!({ "result": inner }));
        wrapper.insert("required".into(), json!(["result"]));
    }
    Some(Value::Object(wrapper))
}

/// The `tools/list` entry of a tool (see [`output_schema`] for `unwrapped`).
fn describe(name: &str, spec: &ToolSpec, unwrapped: bool) -> Result<Tool, McpError> {
    let effects = spec.side_effects;
    let read_only = matches!(effects, SideEffects::None | SideEffects::Read);
    let mut tool = json!({
        "name": name,
        "title": format!("{} ({})", spec.name, spec.key()),
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": effects.mutates(),
            // Calling again with the same arguments changes nothing more: a read, or
            // a write keyed by an idempotency key.
            "idempotentHint": spec.rerun_safe(),
            "openWorldHint": effects == SideEffects::External,
        },
    });
    if let Some(schema) = output_schema(spec, unwrapped) {
        tool["outputSchema"] = schema;
    }
    serde_json::from_value(tool).map_err(|e| McpError::Describe {
        key: spec.key(),
        message: e.to_string(),
    })
}

/// The `tools/call` result of a call (a non-object output as itself when
/// `unwrapped`, in `{"result": ..}` otherwise), built in rmcp's types directly.
fn result_of(
    outcome: Result<Value, tackle_core::ToolError>,
    spec: &ToolSpec,
    unwrapped: bool,
) -> CallToolResult {
    let value = match outcome {
        Ok(value) => value,
        Err(error) => return CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    };
    let content = match parts_of(&value) {
        // Images and files go as MCP image content and binary resources.
        Some(parts) => match parts.iter().enumerate().map(part_block).collect() {
            Ok(blocks) => blocks,
            Err(e) => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "the result could not be encoded: {e}"
                ))])
            }
        },
        None => vec![ContentBlock::text(match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })],
    };
    let mut result = CallToolResult::success(content);
    if declares_output(&spec.output_schema) {
        result.structured_content = Some(if unwrapped || is_object_schema(&spec.output_schema) {
            value
        } else {
            json!({ "result": value })
        });
    }
    result
}

/// The MCP content block of the `i`th part of a result.
fn part_block((i, part): (usize, &ContentPart)) -> Result<ContentBlock, serde_json::Error> {
    let wire = match part {
        ContentPart::Text { text } => return Ok(ContentBlock::text(text.clone())),
        ContentPart::Image { mime_type, data } => {
            json!({"type": "image", "mimeType": mime_type, "data": data})
        }
        // Audio goes as MCP audio content.
        ContentPart::File {
            mime_type, data, ..
        } if mime_type.starts_with("audio/") => {
            json!({"type": "audio", "mimeType": mime_type, "data": data})
        }
        ContentPart::File {
            mime_type,
            data,
            name,
        } => json!({"type": "resource", "resource": {
            "uri": name.clone().unwrap_or_else(|| format!("tackle:part/{i}")),
            "mimeType": mime_type,
            "blob": data,
        }}),
    };
    serde_json::from_value(wire)
}

/// A JSON-RPC "invalid params" error with `message`.
fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// `value` as the rmcp type `T`, or an internal error.
fn wire<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for McpServer {
    // Logging is served for clients of the revisions before 2026-07-28 (see `set_level`).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        if !self.resources.is_empty() {
            capabilities.resources =
                Some(wire(json!({"subscribe": true, "listChanged": false})).unwrap_or_default());
        }
        if !self.prompts.is_empty() {
            capabilities.prompts = Some(wire(json!({"listChanged": false})).unwrap_or_default());
        }
        if !self.resources.is_empty() || !self.prompts.is_empty() {
            capabilities.completions = Some(wire(json!({})).unwrap_or_default());
        }
        if self.tasks.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    TASKS_EXTENSION_ID.to_owned(),
                    rmcp::model::JsonObject::new(),
                );
        }
        let mut info = ServerConfig::new(capabilities);
        let mut implementation =
            Implementation::new(self.identity.name.clone(), self.identity.version.clone());
        implementation.title = Some(self.identity.name.clone());
        info.server_info = implementation;
        info.instructions = self.identity.instructions.clone();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let unwrapped = unwrapped_outputs(&context);
        let visible = self
            .tools
            .iter()
            .filter(|served| self.allows(&served.needs))
            .map(|served| {
                if unwrapped {
                    served.current.clone()
                } else {
                    served.legacy.clone()
                }
            })
            .collect();
        Ok(ListToolsResult::with_all_items(visible))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .iter()
            .find(|served| served.legacy.name == name && self.allows(&served.needs))
            .map(|served| served.legacy.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown =
            || ErrorData::invalid_params(format!("unknown tool `{}`", request.name), None);
        let key = self.names.key_of(&request.name).ok_or_else(unknown)?;
        let tool = self
            .runtime
            .registry()
            .resolve(key)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        // A tool this client's grants cannot call is not listed to it, and is unknown
        // to it; the call still passes the door, which refuses and audits it.
        if !self.allows(&tool.spec().permissions) {
            let input = Value::Object(request.arguments.unwrap_or_default());
            let run = Run::new(&self.runtime);
            let _refused = run.call_report(key, input, &self.ctx).await;
            return Err(unknown());
        }
        let input = Value::Object(request.arguments.unwrap_or_default());
        if self.tasks.is_some() {
            let asks = context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
            // Secrets are never stored, and a task keeps its call's arguments.
            if asks && self.runtime.secret_arguments(tool, &input).is_empty() {
                let (key, arguments) = (key.to_owned(), input.clone());
                let started = self
                    .with_tasks_off_workers(move |tasks, server| {
                        Ok(tasks.start(server, &key, arguments))
                    })
                    .await?;
                if let Some(created) = started {
                    return created.map(CallToolResponse::Task);
                }
            }
        }
        // Each request is a run of its own: the client's cancellation is the run's.
        let mut run = Run::new(&self.runtime).with_cancellation(context.ct.clone());
        // Only a tool that sees its context can report progress.
        let progress = context
            .meta
            .get_progress_token()
            .filter(|_| tool.takes_context());
        let forwarder = progress.map(|token| {
            let (sink, mut events) = event_queue(DEFAULT_EVENT_QUEUE_DEPTH);
            run = run.clone().with_events(sink.clone());
            let peer = context.peer.clone();
            let task = tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    if let ToolEventKind::Progress { done, total } = event.kind {
                        let mut note = ProgressNotificationParam::new(token.clone(), done as f64);
                        note.total = total.map(|t| t as f64);
                        // A client that went away cannot be told; the call goes on.
                        let _ = peer.notify_progress(note).await;
                    }
                }
            });
            (sink, task)
        });
        let client = Client::of(&context);
        if self.client_approval {
            run = run.with_approver(client.approver());
        }
        // The caller's trace goes on here (W3C trace context in `_meta`, feature
        // `otel`).
        let span = crate::trace::served_span(&request.name, &context.meta);
        let report = client
            .scope(
                self.log
                    .scope(&self.ctx, run.call_report(key, input, &self.ctx)),
            )
            .instrument(span)
            .await;
        if let Some((sink, task)) = forwarder {
            sink.close();
            let _ = task.await;
        }
        Ok(CallToolResponse::Complete(result_of(
            report.result,
            tool.spec(),
            unwrapped_outputs(&context),
        )))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let unwrapped = unwrapped_outputs(&context);
        self.with_tasks_off_workers(move |tasks, server| {
            tasks.get(server, &request.task_id, unwrapped)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.with_tasks_off_workers(move |tasks, server| tasks.cancel(server, &request.task_id))
            .await
    }

    async fn update_task(
        &self,
        _request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(ErrorData::invalid_request(
            "this server's tasks take no input from the client",
            None,
        ))
    }

    // MCP's logging is deprecated by the 2026-07-28 revision (SEP-2577); it is served
    // for clients of the earlier revisions.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The server's log can say more than its tools do: reading it is a grant.
        if !self.ctx.capabilities().allows(LOG_GRANT) {
            return Err(invalid(format!(
                "this client may not read the server's log (it needs the grant `{LOG_GRANT}`)"
            )));
        }
        self.log.set_level(request.level, &context.peer);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let resources: Vec<Value> = self
            .resources
            .statics()
            .filter(|e| self.may_read(e))
            .map(crate::resources::Entry::listing)
            .collect();
        wire(json!({ "resources": resources }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<Value> = self
            .resources
            .templates()
            .filter(|e| self.may_read(e))
            .map(crate::resources::Entry::listing)
            .collect();
        wire(json!({ "resourceTemplates": templates }))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let Some((entry, arguments)) = self.resources.find_where(uri, |e| self.may_read(e)) else {
            return Err(not_found(uri));
        };
        let run = Run::new(&self.runtime).with_cancellation(context.ct.clone());
        let client = Client::of(&context);
        let contents = client
            .scope(
                self.log
                    .scope(&self.ctx, entry.read(&run, uri, arguments, &self.ctx)),
            )
            .await
            .map_err(|e| match e {
                tackle_core::ToolError::InvalidInput { .. } => invalid(e.to_string()),
                other => ErrorData::internal_error(other.to_string(), None),
            })?;
        Ok(rmcp::model::ReadResourceResponse::Complete(wire(json!({
            "contents": contents
        }))?))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // A resource this client cannot read is unknown to it, here as everywhere.
        if self
            .resources
            .find_where(&request.uri, |e| self.may_read(e))
            .is_none()
        {
            return Err(not_found(&request.uri));
        }
        self.subscriptions
            .add(
                &request.uri,
                self.session,
                Listener::Session(context.peer.clone()),
            )
            .map_err(invalid)
    }

    /// A 2026-07-28 client's subscriptions: the resources it asked to follow that
    /// exist and that it may read, within the caps (list changes are never sent: the
    /// lists do not change).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let uris: Vec<&String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| {
                self.resources
                    .find_where(uri, |e| self.may_read(e))
                    .is_some()
            })
            .take(MAX_SESSION_SUBSCRIPTIONS)
            .collect();
        Some(
            rmcp::model::SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    /// Follows the accepted resources until the client cancels the request or goes.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let id = next_session();
        let listener = Listener::Stream(context.sink().clone());
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            if let Err(refused) = self.subscriptions.add(uri, id, listener.clone()) {
                self.subscriptions.forget(id);
                return Err(invalid(refused));
            }
        }
        context.cancelled().await;
        self.subscriptions.forget(id);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.remove(&request.uri, self.session);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let prompts: Vec<Value> = self
            .prompts
            .iter()
            .filter(|p| self.allows(p.required()))
            .map(|p| p.listing())
            .collect();
        wire(json!({ "prompts": prompts }))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let Some(prompt) = self
            .prompts
            .get(&request.name)
            .filter(|p| self.allows(p.required()))
        else {
            return Err(invalid(format!("no prompt `{}`", request.name)));
        };
        let arguments: PromptArguments = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                _ => Err(invalid(format!("the argument `{k}` must be a string"))),
            })
            .collect::<Result<_, _>>()?;
        let mut messages = crate::resources::guarded(|| prompt.render(&arguments))
            .map_err(|e| ErrorData::internal_error(format!("the prompt failed: {e}"), None))?
            .map_err(invalid)?;
        // A skill's tools, as this client sees them: the names it can call them by,
        // and none it cannot.
        let tools: Vec<&str> = prompt
            .tools()
            .iter()
            .filter_map(|key| self.runtime.registry().resolve(key).ok())
            .filter(|tool| self.allows(&tool.spec().permissions))
            .filter_map(|tool| self.names.name_of(tool.key()))
            .collect();
        if !tools.is_empty() {
            messages.push(crate::prompts::PromptMessage::user(format!(
                "(Tools for this: {}.)",
                tools.join(", ")
            )));
        }
        let messages: Vec<Value> = messages.iter().map(|m| m.to_wire()).collect();
        Ok(rmcp::model::GetPromptResponse::Complete(wire(json!({
            "messages": messages
        }))?))
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let wire_request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let reference = &wire_request["ref"];
        let argument = wire_request["argument"]["name"]
            .as_str()
            .unwrap_or_default();
        let value = wire_request["argument"]["value"]
            .as_str()
            .unwrap_or_default();
        // What this client cannot see is unknown to it: no completion of it either.
        let completed = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or_default();
                self.prompts
                    .complete(name, argument, value, |p| self.allows(p.required()))
                    .ok_or_else(|| invalid(format!("no prompt `{name}`")))?
            }
            Some("ref/resource") => {
                let uri = reference["uri"].as_str().unwrap_or_default();
                self.resources
                    .complete(uri, argument, value, |e| self.may_read(e))
                    .ok_or_else(|| not_found(uri))?
            }
            _ => return Err(invalid("`ref` must be `ref/prompt` or `ref/resource`")),
        };
        let mut values = completed
            .map_err(|e| ErrorData::internal_error(format!("the completion failed: {e}"), None))?;
        let total = values.len();
        values.truncate(100);
        wire(json!({"completion": {
            "values": values,
            "total": total,
            "hasMore": total > 100,
        }}))
    }
}

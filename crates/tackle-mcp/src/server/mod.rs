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

mod handler;
mod subscriptions;
mod tasks;
mod tools;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, RequestStateCodec};
use rmcp::ErrorData;
use serde_json::Value;
use tackle_core::{Runtime, ToolContext};

use crate::logging::SessionLog;
use crate::names::NameMap;
use crate::prompts::Prompts;
use crate::resources::Resources;
use crate::tasks::{TaskOptions, TaskSupport, Tasks};
use crate::McpError;
use tackle_agent::durable::RunStore;

use subscriptions::Subscriptions;
use tools::{listing, result_of, Served};

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
    /// The tools whose calls are not [`TaskSupport::Optional`], by key.
    task_support: Arc<BTreeMap<String, TaskSupport>>,
    /// The key that seals the `requestState` of multi round-trip requests.
    request_state: Arc<RequestStateCodec>,
    /// The tools whose calls ask their first questions before they become tasks, by
    /// key, with how long a request waits for them.
    questions_first: Arc<BTreeMap<String, Duration>>,
}

/// The grant a client needs to read the server's log (`logging/setLevel`).
pub const LOG_GRANT: &str = "mcp:log";

/// The most values a `completion/complete` answer holds (MCP's own limit); more are
/// counted in its `total`, with `hasMore`.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// The most bytes the values of a `completion/complete` answer hold, written as JSON
/// (64 KiB): the values are kept in order until the next would pass it; the rest are
/// counted in `total`, with `hasMore`.
pub const MAX_COMPLETION_BYTES: usize = 64 * 1024;

/// The longest argument value `completion/complete` completes, in bytes (4 KiB): a
/// longer one is refused as invalid params, naming its length, before any completer
/// sees it.
pub const MAX_COMPLETION_INPUT_BYTES: usize = 4 * 1024;

/// A random key of 32 bytes (two version-4 UUIDs' 244 random bits).
fn random_key() -> Vec<u8> {
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
}

/// A new session's id.
fn next_session() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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
            task_support: Arc::default(),
            request_state: Arc::new(RequestStateCodec::new_unchecked(random_key())),
            questions_first: Arc::default(),
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

    /// The same server making tasks of `tool`'s calls as `support` says (by default
    /// [`TaskSupport::Optional`]: a task for a client that declares the extension).
    /// `tool` is its key or the name it is served under. Fails for a tool the server
    /// does not serve.
    pub fn with_task_support(
        mut self,
        tool: &str,
        support: TaskSupport,
    ) -> Result<McpServer, McpError> {
        let key = self.served_key(tool, "set the task support of")?;
        Arc::make_mut(&mut self.task_support).insert(key, support);
        Ok(self)
    }

    /// The same server asking the first questions of `tool`'s tasks in the request
    /// that makes the task (MCP 2026-07-28 clients): a request that would make a task
    /// waits up to `window` for the call to ask its client something; a question
    /// asked within it goes back in the request's answer (an `InputRequiredResult`,
    /// as for a call that is no task), and the client's retry, with the answers, makes
    /// the task, whose call gets them at once. Otherwise the request answers with the
    /// task when the call ends or `window` passes, and later questions wait in the
    /// task (`input_required`, answered with `tasks/update`). For a tool that asks
    /// what it needs before it starts its long work: the client answers before it
    /// gets a task to poll. A call that asked in the request ends its own task
    /// (never shown to the client) with an error saying it was superseded. `tool` is
    /// its key or the name it is served under.
    pub fn with_questions_first(
        mut self,
        tool: &str,
        window: Duration,
    ) -> Result<McpServer, McpError> {
        let key = self.served_key(tool, "ask the first questions of")?;
        Arc::make_mut(&mut self.questions_first).insert(key, window);
        Ok(self)
    }

    /// How long a request for the tool `key`'s task waits for its first questions.
    pub(crate) fn questions_first(&self, key: &str) -> Option<Duration> {
        self.questions_first.get(key).copied()
    }

    /// The key of the served tool `tool` (a key or a served name), for `what` a
    /// setting does.
    fn served_key(&self, tool: &str, what: &str) -> Result<String, McpError> {
        match self.names.key_of(tool) {
            Some(key) => Ok(key.to_owned()),
            None if self.names.name_of(tool).is_some() => Ok(tool.to_owned()),
            None => Err(McpError::Config(format!(
                "no served tool `{tool}` to {what}"
            ))),
        }
    }

    /// Whether the calls of the tool `key` become tasks.
    pub(crate) fn task_support(&self, key: &str) -> TaskSupport {
        self.task_support.get(key).copied().unwrap_or_default()
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

    /// The same server sealing the `requestState` of multi round-trip requests (MCP
    /// 2026-07-28, see [`crate::rounds`]) with `key` (at least 32 bytes, secret).
    /// By default each server makes a random key of its own: servers that take turns
    /// answering one client (instances behind a load balancer) must share one.
    pub fn with_request_state_key(
        mut self,
        key: impl Into<Vec<u8>>,
    ) -> Result<McpServer, McpError> {
        let codec = RequestStateCodec::try_new(key)
            .map_err(|e| McpError::Config(format!("the request state key: {e}")))?;
        self.request_state = Arc::new(codec);
        Ok(self)
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

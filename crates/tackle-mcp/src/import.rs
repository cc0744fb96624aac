//! Importing an MCP server's tools into a registry, behind the door.
//!
//! [`import_stdio`] starts a server as a child process and speaks MCP over its stdio;
//! [`import_http`] connects to a streamable-HTTP endpoint. Either lists the server's
//! tools and registers each as a dynamic tool:
//!
//! * key `mcp.<server>.<tool>@<server version>`: `<server>` is the name the importer
//!   gives ([`ImportOptions::new`]), never the remote server's own (a server must not
//!   choose the permission its tools require), and names are brought to registry form
//!   (characters other than letters, digits, `_` and `-` become `_`);
//! * side effects `read` when the tool says `readOnlyHint: true`, else `external`;
//! * trust `mcp` (results are sanitized by the `mcp` policy);
//! * the permission `mcp:<server>` required of callers (deny by default), unless
//!   [`ImportOptions::with_requires`] says otherwise;
//! * the server's input and output schemas.
//!
//! A call's value is the result's `structuredContent`; without one, its text (or the
//! JSON object or array the text holds, as many servers return JSON as text). A result
//! whose content holds images, audio or binary resources keeps them, structured
//! content or not: its value is then the list of its blocks as [`ContentPart`]s (`{"type": "image", "mimeType", "data"}`,
//! files for audio and blobs, text for the rest; see `tackle::content`).
//!
//! The tools go into a registry (before the runtime is built from it: they stay as
//! listed) or into a runtime's live tools
//! ([`Runtime::live_tools`](tackle_core::Runtime::live_tools), see
//! [`ImportTarget`]): those follow the server's `notifications/tools/list_changed`,
//! each key added, removed or changed audited.
//!
//! An import declares MCP's Tasks extension ([`ImportOptions::with_tasks`]): a server
//! that answers a call with a task is polled until the task ends, and the task's id is
//! kept as the call's checkpoint first (`ToolContext::checkpoint`), so a durable run
//! resumed after a crash goes on polling the same task instead of starting the work
//! again.
//!
//! Calls then go through the door like any other: capabilities, validation, approval,
//! replay (a cassette replays MCP calls offline), shaping, sanitization, audit.
//!
//! An import lives as long as the program: a connection that is gone (a session a
//! restarted server forgot, or a child that exited, for [`import_stdio_with`], which
//! knows how to start it again) is made again at the next call, with backoff. A call in flight when its connection is lost is made again only when its
//! tool is safe to run again (`ToolSpec::rerun_safe`), and fails with `Disconnected`
//! otherwise: it may have reached the server. The call timeout
//! ([`ImportOptions::with_call_timeout`]) is each imported tool's `timeout_ms`, held
//! by the door like any tool's: a server that does not answer in time gives a
//! `Timeout` error, and the request is dropped: never a hang.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, GetTaskParams, Implementation, ProtocolVersion, TaskPayload, Tool,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::json;
use serde_json::{Map, Value};
use tackle_agent::agent::model::{ChatModel, ChatRequest, Message};
use tackle_core::content::ContentPart;
use tackle_core::registry::LiveTools;
use tackle_core::{
    DynamicTool, Registry, Run, SideEffects, ToolContext, ToolError, ToolHandler, ToolSpec, Trust,
};

use crate::client::Elicited;
use crate::oauth_client::{Authorization, Challenge, OAuthClient, AUTHORIZATIONS_PER_REQUEST};
use crate::McpError;

/// How to import: the name the importer gives the server, and limits.
#[derive(Clone)]
pub struct ImportOptions {
    /// The `<server>` part of the keys and of the default permission `mcp:<server>`.
    pub name: String,
    /// Longest wait to connect and list the tools.
    pub connect_timeout: Duration,
    /// Longest wait for one call's answer: the imported tools' `timeout_ms`.
    pub call_timeout: Duration,
    /// Permissions a caller needs to call the imported tools; `None` means
    /// `mcp:<server>` (deny by default: grant it, or `mcp:*`, to use them).
    pub requires: Option<Vec<String>>,
    /// Where a stdio server's stderr goes (the transport sets it on the `Command`,
    /// replacing the Command's own setting). Default: this process's stderr.
    pub stderr: ServerStderr,
    /// How an import over HTTP gets access tokens from a protected server (`None`:
    /// requests go without a token).
    pub oauth: Option<OAuthClient>,
    /// Who answers the server's `elicitation/create` requests (`None`: the client
    /// does not offer elicitation, and a request is declined).
    pub elicitation: Option<ElicitationHandler>,
    /// Whether calls send the caller's W3C trace context to the server (feature
    /// `otel`; default: yes).
    pub trace_context: bool,
    /// The model that answers the server's `sampling/createMessage` requests (`None`:
    /// the client does not offer sampling).
    pub sampling: Option<Arc<dyn ChatModel>>,
    /// The run, and the caller's context, that the server's requests are calls of
    /// ([`ImportOptions::with_door`]).
    pub door: Option<(Run, ToolContext)>,
    /// Whether the client declares MCP's Tasks extension, so that a server may answer
    /// a call with a task, which the call then polls (default: yes; see
    /// [`ImportOptions::with_tasks`]).
    pub tasks: bool,
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("name", &self.name)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("requires", &self.requires)
            .field("stderr", &self.stderr)
            .field("oauth", &self.oauth)
            .field("elicitation", &self.elicitation)
            .field("trace_context", &self.trace_context)
            .field("tasks", &self.tasks)
            .field("door", &self.door.as_ref().map(|(run, _)| run))
            .field(
                "sampling",
                &self
                    .sampling
                    .as_ref()
                    .map(|m| format!("{}/{}", m.provider(), m.model())),
            )
            .finish()
    }
}

/// A server's question to the person at the client (`elicitation/create`).
#[derive(Clone, Debug, PartialEq)]
pub struct Elicitation {
    /// The `<server>` name of the import that asks.
    pub server: String,
    /// The keys of the import's calls in flight when the server asked: the question
    /// comes from one of them (MCP does not say which).
    pub tools: Vec<String>,
    /// What the server asks, for the person.
    pub message: String,
    /// The form: a JSON Schema object of flat properties, each possibly with a
    /// `default` (SEP-1034).
    pub schema: Value,
}

/// The future an [`ElicitationHandler`] returns.
pub type ElicitFuture = Pin<Box<dyn Future<Output = Elicited> + Send>>;

/// Answers an imported server's `elicitation/create` requests
/// ([`ImportOptions::with_elicitation`]). An accepted form gets the schema's
/// `default` of every field the answer leaves out (SEP-1034), so a handler that
/// accepts with `{}` accepts the defaults; an accepted answer that is not an object
/// is declined. Questions come one at a time per import, only while one of its calls
/// is in flight (others are declined), and a person has
/// [`ELICITATION_TIMEOUT`](crate::client::ELICITATION_TIMEOUT) to answer (then the
/// question is cancelled). Answers do not pass the door: they are neither gated,
/// audited nor recorded.
#[derive(Clone)]
pub struct ElicitationHandler(Arc<dyn Fn(Elicitation) -> ElicitFuture + Send + Sync>);

impl std::fmt::Debug for ElicitationHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElicitationHandler")
    }
}

/// Where an imported stdio server's stderr goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerStderr {
    /// This process's stderr.
    #[default]
    Inherit,
    /// Nowhere.
    Discard,
}

impl ImportOptions {
    /// Imports under `name`: keys `mcp.<name>.<tool>@<version>`, permission
    /// `mcp:<name>`. The importer names the import, not the server: whatever a server
    /// calls itself ([`McpImport::remote_name`]) decides nothing.
    pub fn new(name: impl Into<String>) -> ImportOptions {
        ImportOptions {
            name: name.into(),
            connect_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(30),
            requires: None,
            stderr: ServerStderr::Inherit,
            oauth: None,
            elicitation: None,
            trace_context: true,
            sampling: None,
            door: None,
            tasks: true,
        }
    }

    /// Whether the client declares MCP's Tasks extension (default: yes). A server
    /// that supports it may then answer a call with a task: the call polls it
    /// (`tasks/get`, at the interval the server suggests) until it ends, within the
    /// call's time limit. In a durable run, the call keeps the task's id in the run's
    /// journal before the first poll ([`ToolContext::checkpoint`]), so a run resumed
    /// after a crash goes on polling that task and never starts the work twice.
    pub fn with_tasks(mut self, tasks: bool) -> ImportOptions {
        self.tasks = tasks;
        self
    }

    /// Makes the server's requests calls of `run`, made with `ctx`: each passes
    /// `run`'s door (the grants of `ctx`, approval, replay from and recording into
    /// `run`'s cassette, the audit trail). A sampling request is a completion of the
    /// model given to [`with_sampling`](Self::with_sampling) (key
    /// `llm.<provider>.complete@<model>`, permission `llm:<provider>`); an elicitation
    /// is the operation `mcp.<server>.elicit@1` (permission `mcp:<server>`), whose
    /// input is the message and form and whose output is the answer: the handler's
    /// ([`with_elicitation`](Self::with_elicitation)), or, without one, the run's
    /// approver's (the operation then needs approval: approved, the form is accepted
    /// as its defaults fill it; denied, declined). Without a door, elicitations go to
    /// the handler directly and sampling is refused (a model call outside the door
    /// would be neither gated nor audited).
    pub fn with_door(mut self, run: Run, ctx: ToolContext) -> ImportOptions {
        self.door = Some((run, ctx));
        self
    }

    /// Answers the server's `sampling/createMessage` requests with `model` (and
    /// offers the `sampling` capability): text conversations only, one request at a
    /// time per import, only while one of its calls is in flight. Each completion is
    /// a call of the import's door run ([`with_door`](Self::with_door)); without one,
    /// sampling requests are refused.
    pub fn with_sampling(mut self, model: Arc<dyn ChatModel>) -> ImportOptions {
        self.sampling = Some(model);
        self
    }

    /// Whether calls send the caller's trace context (`traceparent`, `tracestate`)
    /// to the server, with the feature `otel` (default: yes). Turn it off for a
    /// server that should not learn the caller's trace IDs.
    pub fn with_trace_context(mut self, send: bool) -> ImportOptions {
        self.trace_context = send;
        self
    }

    /// Authorizes with OAuth 2.1 when an HTTP server asks for a token (see
    /// [`oauth_client`](crate::oauth_client)).
    pub fn with_oauth(mut self, oauth: OAuthClient) -> ImportOptions {
        self.oauth = Some(oauth);
        self
    }

    /// Answers the server's `elicitation/create` requests with `handler` (and offers
    /// the `elicitation` capability). Fields the handler's accepted form leaves out
    /// get the schema's defaults.
    pub fn with_elicitation<F, Fut>(mut self, handler: F) -> ImportOptions
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Elicited> + Send + 'static,
    {
        self.elicitation = Some(ElicitationHandler(Arc::new(move |request| {
            Box::pin(handler(request))
        })));
        self
    }

    /// Sends a stdio server's stderr to `stderr`.
    pub fn with_stderr(mut self, stderr: ServerStderr) -> ImportOptions {
        self.stderr = stderr;
        self
    }

    /// Sets the longest wait for one call's answer.
    pub fn with_call_timeout(mut self, limit: Duration) -> ImportOptions {
        self.call_timeout = limit;
        self
    }

    /// Sets the permissions a caller needs to call the imported tools (an empty list
    /// lets every caller call them).
    pub fn with_requires(
        mut self,
        permissions: impl IntoIterator<Item = impl Into<String>>,
    ) -> ImportOptions {
        self.requires = Some(permissions.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the longest wait to connect and list the tools.
    pub fn with_connect_timeout(mut self, limit: Duration) -> ImportOptions {
        self.connect_timeout = limit;
        self
    }
}

type Client = RunningService<RoleClient, ImportHandler>;

/// The client side of an import's connection: what it tells the server about itself,
/// and its answers to the server's requests.
#[derive(Clone)]
struct ImportHandler {
    server: String,
    elicitation: Option<ElicitationHandler>,
    sampling: Option<Arc<dyn ChatModel>>,
    /// The run and context the server's requests are calls of.
    door: Option<(Run, ToolContext)>,
    /// Whether the client declares the Tasks extension.
    tasks: bool,
    /// The keys of this import's calls in flight: a server's question comes from one
    /// of them, and one asked with none in flight is declined.
    calls: Arc<std::sync::Mutex<Vec<String>>>,
    /// Held while the person answers: one question at a time per import.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// How the import follows the server's list changes (set once imported, into
    /// live tools only).
    follow: Arc<std::sync::OnceLock<Follow>>,
    /// Whether the server said its tools changed before the import could follow
    /// (while it registered the first listing).
    missed: Arc<std::sync::atomic::AtomicBool>,
}

impl ImportHandler {
    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A call of an imported tool, in flight while it lives (see `ImportHandler::calls`).
struct InFlight {
    handler: ImportHandler,
    key: String,
}

impl InFlight {
    fn new(handler: &ImportHandler, key: &str) -> InFlight {
        handler.calls().push(key.to_owned());
        InFlight {
            handler: handler.clone(),
            key: key.to_owned(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut calls = self.handler.calls();
        if let Some(at) = calls.iter().position(|k| *k == self.key) {
            calls.swap_remove(at);
        }
    }
}

impl ClientHandler for ImportHandler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation.is_some() || self.door.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        if self.sampling.is_some() {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        if self.tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    rmcp::model::JsonObject::new(),
                );
        }
        // The revision that begins with `initialize`: an import opens a session.
        ClientConfig::new(
            capabilities,
            Implementation::new("tackle", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, context: rmcp::service::NotificationContext<RoleClient>) {
        if self.follow.get().is_none() {
            // Before the import follows (it is registering the first listing), or an
            // import into a registry, which keeps what it listed.
            self.missed.store(true, std::sync::atomic::Ordering::SeqCst);
            tracing::debug!(server = %self.server, "the imported MCP server's tools changed");
            return;
        }
        refresh_soon(&self.follow, context.peer);
    }

    #[allow(deprecated)] // sampling is deprecated by 2026-07-28; served for 2025-11-25
    async fn create_message(
        &self,
        request: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let wire = serde_json::to_value(&request)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let answer = self.sample(wire).await?;
        serde_json::from_value(answer)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.elicit(request).await)
    }
}

impl ImportHandler {
    /// Answers a server's question (`elicitation/create`, or one a task asks for).
    async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let declined = || ElicitResult::new(ElicitationAction::Decline);
        if self.elicitation.is_none() && self.door.is_none() {
            return declined();
        }
        let tools = self.calls().clone();
        if tools.is_empty() {
            // Asked out of the blue: no call of this import is waiting for it.
            return declined();
        }
        // Only forms are answered here; a URL elicitation is for a person's browser.
        let Ok(wire) = serde_json::to_value(&request) else {
            return declined();
        };
        let (Some(message), Some(schema)) = (
            wire.get("message").and_then(Value::as_str),
            wire.get("requestedSchema"),
        ) else {
            return declined();
        };
        let asked = Elicitation {
            server: self.server.clone(),
            tools,
            message: message.to_owned(),
            schema: schema.clone(),
        };
        let _one_at_a_time = self.asking.lock().await;
        let answer = match (&self.door, &self.elicitation) {
            (Some((run, ctx)), handler) => {
                Ok(self.elicit_through(run, ctx, handler.as_ref(), asked).await)
            }
            (None, Some(handler)) => {
                tokio::time::timeout(crate::client::ELICITATION_TIMEOUT, (handler.0)(asked)).await
            }
            (None, None) => return declined(),
        };
        match answer {
            Ok(Elicited::Accept(Value::Object(content))) => {
                ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(with_defaults(content, schema)))
            }
            // A form's answer is an object; anything else was not what the person
            // chose, and is not sent as if it were.
            Ok(Elicited::Accept(_)) | Ok(Elicited::Decline) => declined(),
            Ok(Elicited::Cancel) | Err(_) => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// Answers the requests a remote task waits for (`input_required`): questions
    /// as [`elicit`](Self::elicit) does, sampling with the import's model, roots with
    /// none. A request that cannot be answered gets a JSON-RPC error object.
    async fn answer_inputs(
        &self,
        requests: rmcp::model::InputRequests,
    ) -> rmcp::model::InputResponses {
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            let wire = serde_json::to_value(&request).unwrap_or(Value::Null);
            let params = wire.get("params").cloned().unwrap_or(Value::Null);
            let refused = |error: rmcp::ErrorData| json!({"error": serde_json::to_value(error).unwrap_or(Value::Null)});
            let answer = match wire.get("method").and_then(Value::as_str) {
                Some("elicitation/create") => match serde_json::from_value(params) {
                    Ok(params) => {
                        serde_json::to_value(self.elicit(params).await).unwrap_or(Value::Null)
                    }
                    Err(e) => refused(rmcp::ErrorData::invalid_params(e.to_string(), None)),
                },
                Some("sampling/createMessage") => match self.sample(params).await {
                    Ok(answer) => answer,
                    Err(error) => refused(error),
                },
                Some("roots/list") => json!({"roots": []}),
                other => refused(rmcp::ErrorData::invalid_request(
                    format!("this client does not answer `{}`", other.unwrap_or("?")),
                    None,
                )),
            };
            responses.insert(key, answer);
        }
        responses
    }

    /// Answers a question as the operation `mcp.<server>.elicit@1` of `run`: gated by
    /// `ctx`, recorded and replayed, audited. With a `handler`, the handler answers;
    /// without one, the run's approver does (the operation needs approval: approved,
    /// the form is accepted as its defaults fill it; denied, it is declined). A
    /// question the door refuses otherwise, or that fails, is cancelled.
    async fn elicit_through(
        &self,
        run: &Run,
        ctx: &ToolContext,
        handler: Option<&ElicitationHandler>,
        asked: Elicitation,
    ) -> Elicited {
        let mut spec = ToolSpec::new(
            format!("mcp.{}", self.server),
            "elicit",
            "1",
            SideEffects::External,
            format!(
                "A question of the MCP server `{}` to the person at this client.",
                self.server
            ),
        );
        spec.permissions = vec![format!("mcp:{}", self.server)];
        spec.timeout_ms = u64::try_from(crate::client::ELICITATION_TIMEOUT.as_millis()).ok();
        spec.needs_approval = handler.is_none();
        let operation = tackle_core::Operation::new(spec);
        let input = json!({"message": asked.message, "schema": asked.schema});
        let answered = run
            .perform(
                &operation,
                move || input,
                ctx,
                move || async move {
                    let Some(handler) = handler else {
                        // Approved: the form as its defaults fill it.
                        return Ok(json!({"action": "accept", "content": {}}));
                    };
                    Ok(match (handler.0)(asked).await {
                        Elicited::Accept(content) => {
                            json!({"action": "accept", "content": content})
                        }
                        Elicited::Decline => json!({"action": "decline"}),
                        Elicited::Cancel => json!({"action": "cancel"}),
                    })
                },
            )
            .await;
        match answered {
            Ok(answer) => match answer.get("action").and_then(Value::as_str) {
                Some("accept") => {
                    Elicited::Accept(answer.get("content").cloned().unwrap_or(Value::Null))
                }
                Some("decline") => Elicited::Decline,
                _ => Elicited::Cancel,
            },
            Err(error) if error.kind() == tackle_core::ToolErrorKind::ApprovalDenied => {
                Elicited::Decline
            }
            Err(error) => {
                tracing::warn!(server = %self.server, %error, "a server's question was not asked");
                Elicited::Cancel
            }
        }
    }

    /// Answers a `sampling/createMessage` request with the import's model.
    async fn sample(&self, request: Value) -> Result<Value, rmcp::ErrorData> {
        let refused = |why: String| rmcp::ErrorData::invalid_request(why, None);
        let Some(model) = &self.sampling else {
            return Err(refused("this client does not offer sampling".to_owned()));
        };
        if self.calls().is_empty() {
            return Err(refused(format!(
                "no call of the import `{}` is in flight",
                self.server
            )));
        }
        let Some((run, ctx)) = &self.door else {
            return Err(refused(format!(
                "the import `{}` has no door for the server's requests (ImportOptions::with_door): a model call outside it would be neither gated nor audited",
                self.server
            )));
        };
        let chat = sampled_request(&request).map_err(refused)?;
        let _one_at_a_time = self.asking.lock().await;
        let completion = tackle_agent::agent::model::completion(model.as_ref());
        let answer = tokio::time::timeout(
            crate::client::ELICITATION_TIMEOUT,
            tackle_agent::agent::model::complete(run, &completion, model.as_ref(), &chat, ctx),
        )
        .await
        .map_err(|_| refused("the model did not answer in time".to_owned()))?
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        if !answer.tool_calls.is_empty() {
            return Err(refused(
                "the model asked for tools, which sampling here does not offer".to_owned(),
            ));
        }
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": answer.text},
            "model": format!("{}/{}", model.provider(), model.model()),
            "stopReason": "endTurn",
        }))
    }
}

/// The chat request of a `sampling/createMessage` request (its wire form): the
/// system prompt, then the messages; text only.
fn sampled_request(request: &Value) -> Result<ChatRequest, String> {
    let mut messages = Vec::new();
    if let Some(system) = request.get("systemPrompt").and_then(Value::as_str) {
        messages.push(Message::system(system));
    }
    for message in request
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let blocks: Vec<&Value> = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().collect(),
            Some(block) => vec![block],
            None => Vec::new(),
        };
        let mut text = Vec::with_capacity(blocks.len());
        for block in blocks {
            match (block.get("type").and_then(Value::as_str), block.get("text")) {
                (Some("text"), Some(Value::String(t))) => text.push(t.as_str()),
                (kind, _) => {
                    return Err(format!(
                        "only text can be sampled here, not `{}`",
                        kind.unwrap_or("?")
                    ))
                }
            }
        }
        let text = text.join("");
        messages.push(match message.get("role").and_then(Value::as_str) {
            Some("assistant") => Message::assistant(text, Vec::new()),
            _ => Message::user(text),
        });
    }
    if messages
        .iter()
        .all(|m| m.role == tackle_agent::agent::model::Role::System)
    {
        return Err("the request has no messages".to_owned());
    }
    Ok(ChatRequest {
        messages,
        ..ChatRequest::default()
    })
}

/// `content` with the `default` of every property of `schema` it leaves out
/// (SEP-1034).
fn with_defaults(mut content: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content
                    .entry(name.clone())
                    .or_insert_with(|| default.clone());
            }
        }
    }
    content
}

/// A connection to an imported server; its tools stay usable while it lives. A
/// connection that drops (a restarted server, a dead child process, a lost HTTP
/// session) is made again with backoff at the next call (see the module docs).
pub struct McpImport {
    link: Arc<Link>,
    server: String,
    remote_name: Option<String>,
    now: Arc<std::sync::Mutex<Listed>>,
}

impl std::fmt::Debug for McpImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpImport")
            .field("server", &self.server)
            .field("keys", &self.keys())
            .finish()
    }
}

impl McpImport {
    fn now(&self) -> std::sync::MutexGuard<'_, Listed> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The registry keys of the imported tools now, sorted (an import into live
    /// tools follows the server's changes).
    pub fn keys(&self) -> Vec<String> {
        self.now().keys.clone()
    }

    /// The `<server>` part of the keys: the name the importer gave.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The name the remote server gives itself (for display only).
    pub fn remote_name(&self) -> Option<&str> {
        self.remote_name.as_deref()
    }

    /// The specs of the imported tools now, sorted by key: save them beside a
    /// cassette to replay the tools' calls offline with [`register_offline`].
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.now().specs.clone()
    }

    /// Closes the connection and waits until it is closed (a child process is asked
    /// to stop, then killed). Calls of its tools fail from then on; an import into
    /// live tools takes its tools out of them (audited as removed). Dropping an
    /// import closes it too, without waiting.
    pub async fn close(self) {
        // Closed first: a listing under way then puts nothing back.
        let client = self.link.close();
        self.withdraw();
        if let Some(client) = client {
            let _ = client.cancel().await;
        }
    }

    /// Takes an import's live tools out of the runtime's live tools (audited as
    /// removed); an import into a registry leaves its registry as it is.
    fn withdraw(&self) {
        let Some(follow) = self.link.handler.follow.get() else {
            return;
        };
        let keys = std::mem::take(&mut self.now().keys);
        let server = self.server.clone();
        let _ = follow.live.change(&format!("mcp:{server}"), |registry| {
            for key in &keys {
                if is_ours(registry, key, &server) {
                    let _ = registry.unregister(key);
                }
            }
            Ok::<_, std::convert::Infallible>(())
        });
    }
}

impl Drop for McpImport {
    fn drop(&mut self) {
        // Dropping the running client closes it, without waiting.
        let client = self.link.close();
        self.withdraw();
        drop(client);
    }
}

/// Makes the command that starts an imported stdio server (see [`import_stdio_with`]).
type MakeCommand = Arc<dyn Fn() -> tokio::process::Command + Send + Sync>;

/// How an import reaches its server again.
enum Dial {
    /// A child process, started by `make` (`None`: started once, from a `Command`
    /// given as it is, whose settings cannot all be read back to start it again).
    Stdio {
        make: Option<MakeCommand>,
        stderr: ServerStderr,
    },
    /// A streamable-HTTP endpoint, and its OAuth state when it is protected.
    Http {
        url: String,
        auth: Option<Arc<Authorization>>,
    },
}

/// Starts `command` as a stdio MCP server and connects to it, within `limit`.
async fn spawn(
    handler: ImportHandler,
    command: tokio::process::Command,
    stderr: ServerStderr,
    origin: &str,
    limit: Duration,
) -> Result<Client, McpError> {
    let failed = |message: String| McpError::Connect {
        server: origin.to_owned(),
        message,
    };
    let stderr = match stderr {
        ServerStderr::Inherit => std::process::Stdio::inherit(),
        ServerStderr::Discard => std::process::Stdio::null(),
    };
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(stderr)
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    within(limit, origin, handler.serve(transport))
        .await?
        .map_err(|e| failed(e.to_string()))
}

/// Opens a session with the streamable-HTTP endpoint `url` within `limit`, answering
/// its authorization challenges when `auth` is given.
async fn open(
    handler: &ImportHandler,
    url: &str,
    auth: Option<&Authorization>,
    origin: &str,
    limit: Duration,
) -> Result<Client, McpError> {
    let failed = |message: String| McpError::Connect {
        server: origin.to_owned(),
        message,
    };
    let unauthorized = |message: String| McpError::Authorization {
        server: origin.to_owned(),
        message,
    };
    let Some(auth) = auth else {
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        return within(limit, origin, handler.clone().serve(transport))
            .await?
            .map_err(|e| match e.auth_challenge() {
                Some(_) => unauthorized(
                    "it asks for a token, and the import has no OAuth client (`ImportOptions::with_oauth`)"
                        .to_owned(),
                ),
                None => failed(e.to_string()),
            });
    };
    let mut rounds = Rounds::default();
    loop {
        let seen = auth.tokens();
        let transport = StreamableHttpClientTransport::with_client(
            auth.client.clone(),
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
        );
        let error = match within(limit, origin, handler.clone().serve(transport)).await? {
            Ok(client) => return Ok(client),
            Err(error) => error,
        };
        match Challenge::of_initialize(&error) {
            Some(challenge) => rounds
                .answer(auth, &challenge, seen)
                .await
                .map_err(unauthorized)?,
            None => return Err(failed(error.to_string())),
        }
    }
}

/// The authorizations made for one request: at most one for a `401` and one more
/// for a step-up ([`AUTHORIZATIONS_PER_REQUEST`]), and a bounded number of times
/// sent again with a token another request got.
#[derive(Default)]
struct Rounds {
    authorized: usize,
    rounds: usize,
}

impl Rounds {
    /// Answers `challenge` when this request may still be authorized; why not, when
    /// it may not.
    async fn answer(
        &mut self,
        auth: &Authorization,
        challenge: &Challenge<'_>,
        seen: u64,
    ) -> Result<(), String> {
        self.rounds += 1;
        let allowed = match self.authorized {
            0 => true,
            n => n < AUTHORIZATIONS_PER_REQUEST && challenge.is_step_up(),
        };
        if !allowed || self.rounds > 2 * AUTHORIZATIONS_PER_REQUEST {
            return Err(format!(
                "the server still refuses the token after {} authorization{}",
                self.authorized,
                if self.authorized == 1 { "" } else { "s" }
            ));
        }
        if auth.answer(challenge, seen).await? {
            self.authorized += 1;
        }
        Ok(())
    }
}

/// Sends a request made by `send`; when the server answers with an authorization
/// challenge and the import has an OAuth client, answers it and sends the request
/// again (at most [`AUTHORIZATIONS_PER_REQUEST`] times). A request refused for want of
/// a token did not run, so sending it again is always safe. The outer error is an
/// authorization that failed.
async fn authorized<T, F, Fut>(
    auth: Option<&Authorization>,
    mut send: F,
) -> Result<Result<T, ServiceError>, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ServiceError>>,
{
    let Some(auth) = auth else {
        return Ok(send().await);
    };
    let mut rounds = Rounds::default();
    loop {
        let seen = auth.tokens();
        let answer = send().await;
        match answer.as_ref().err().and_then(Challenge::of_service) {
            Some(challenge) => rounds.answer(auth, &challenge, seen).await?,
            None => return Ok(answer),
        }
    }
}

impl Dial {
    /// Whether a lost connection can be made again.
    fn redials(&self) -> bool {
        !matches!(self, Dial::Stdio { make: None, .. })
    }

    /// The OAuth state of a protected HTTP server's import.
    fn auth(&self) -> Option<&Authorization> {
        match self {
            Dial::Http { auth, .. } => auth.as_deref(),
            Dial::Stdio { .. } => None,
        }
    }

    /// Connects (starts the child, or opens a session), within `limit`.
    async fn connect(
        &self,
        handler: &ImportHandler,
        origin: &str,
        limit: Duration,
    ) -> Result<Client, McpError> {
        match self {
            Dial::Stdio {
                make: Some(make),
                stderr,
            } => spawn(handler.clone(), make(), *stderr, origin, limit).await,
            Dial::Stdio { make: None, .. } => Err(McpError::Connect {
                server: origin.to_owned(),
                message: "the server process exited, and an import made with `import_stdio` \
                          does not start it again (`import_stdio_with` does)"
                    .to_owned(),
            }),
            Dial::Http { url, auth } => open(handler, url, auth.as_deref(), origin, limit).await,
        }
    }
}

/// The waits before each new attempt to connect again: five attempts in about 3 s.
const REDIAL_BACKOFF: [Duration; 5] = [
    Duration::ZERO,
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_millis(800),
    Duration::from_millis(2000),
];

/// An import's connection, shared by its tools' handlers: the client it has now, and
/// how to make another when that one is gone.
struct Link {
    dial: Dial,
    handler: ImportHandler,
    /// Whether calls send the caller's trace context.
    trace_context: bool,
    origin: String,
    server: String,
    connect_timeout: Duration,
    /// The client now (`None` once closed), and how many times it was made again.
    now: std::sync::Mutex<(Option<Client>, u64)>,
    /// Held while connecting again, so that calls at once make one new connection.
    redialing: tokio::sync::Mutex<()>,
}

impl Link {
    fn state(&self) -> std::sync::MutexGuard<'_, (Option<Client>, u64)> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes the link: the client, to cancel; calls fail from then on.
    fn close(&self) -> Option<Client> {
        self.state().0.take()
    }

    /// The peer to call now and its generation, connecting again first when the
    /// connection is known to be gone (nothing was sent on it: no retry question).
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let (peer, generation) = {
            let state = self.state();
            match &state.0 {
                Some(client) => (client.peer().clone(), state.1),
                None => return Err(format!("the import of `{}` was closed", self.server)),
            }
        };
        if peer.is_transport_closed() {
            return self.redial(generation).await;
        }
        Ok((peer, generation))
    }

    /// Replaces connection `generation` with a new one (unless another call already
    /// did), trying with backoff; the peer to call then.
    async fn redial(&self, generation: u64) -> Result<(Peer<RoleClient>, u64), String> {
        let _one_at_a_time = self.redialing.lock().await;
        {
            let state = self.state();
            match &state.0 {
                None => return Err(format!("the import of `{}` was closed", self.server)),
                Some(client) if state.1 != generation => {
                    return Ok((client.peer().clone(), state.1));
                }
                Some(_) => {}
            }
        }
        if !self.dial.redials() {
            return match self
                .dial
                .connect(&self.handler, &self.origin, self.connect_timeout)
                .await
            {
                Err(e) => Err(e.to_string()),
                Ok(_) => Err(format!("the MCP server `{}` is gone", self.server)),
            };
        }
        let mut last = String::new();
        for wait in REDIAL_BACKOFF {
            tokio::time::sleep(wait).await;
            match self
                .dial
                .connect(&self.handler, &self.origin, self.connect_timeout)
                .await
            {
                Ok(client) => {
                    let peer = client.peer().clone();
                    let mut state = self.state();
                    if state.0.is_none() {
                        // Closed meanwhile: this connection is not wanted.
                        return Err(format!("the import of `{}` was closed", self.server));
                    }
                    state.1 += 1;
                    let old = state.0.replace(client);
                    drop(state);
                    drop(old);
                    tracing::info!(server = %self.server, "reconnected to the imported MCP server");
                    if self.handler.follow.get().is_some() {
                        // A server started again may list other tools.
                        refresh_soon(&self.handler.follow, peer.clone());
                    }
                    return Ok((peer, generation + 1));
                }
                // Not a passing failure: asking again would ask the person again.
                Err(e @ McpError::Authorization { .. }) => return Err(e.to_string()),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!(
            "could not connect to the MCP server `{}` again ({} attempts): {last}",
            self.server,
            REDIAL_BACKOFF.len()
        ))
    }
}

/// Whether a failed request failed because the connection is gone (so it may or may
/// not have reached the server), not because the server answered with an error. A
/// refusal for want of a token (HTTP `401`/`403`) is an answer, not a loss.
fn connection_lost(error: &rmcp::ServiceError) -> bool {
    matches!(
        error,
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
    ) && error.auth_challenge().is_none()
}

/// Starts `command` as an MCP server over stdio and registers its tools `into` a
/// registry or a runtime's live tools ([`ImportTarget`]). The command runs once: if the process exits, calls fail from then on (its settings, such as
/// `env_clear`, cannot all be read back to start it the same way again; use
/// [`import_stdio_with`] for a server that is started again).
pub async fn import_stdio<'a>(
    into: impl Into<ImportTarget<'a>>,
    command: tokio::process::Command,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    start_stdio(into.into(), command, None, options).await
}

/// Starts the command `make` builds as an MCP server over stdio and registers its
/// tools `into` a registry or a runtime's live tools ([`ImportTarget`]); when the process exits, the next call starts a new one with a command from
/// `make` (with backoff), so the imported tools live as long as the program.
pub async fn import_stdio_with<'a>(
    into: impl Into<ImportTarget<'a>>,
    make: impl Fn() -> tokio::process::Command + Send + Sync + 'static,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let make: MakeCommand = Arc::new(make);
    let command = make();
    start_stdio(into.into(), command, Some(make), options).await
}

/// Starts `command` and registers its tools; `make` starts it again later, if given.
async fn start_stdio(
    into: ImportTarget<'_>,
    command: tokio::process::Command,
    make: Option<MakeCommand>,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let program = format!("{:?}", command.as_std().get_program());
    let handler = handler_of(&options);
    let client = spawn(
        handler.clone(),
        command,
        options.stderr,
        &program,
        options.connect_timeout,
    )
    .await?;
    let dial = Dial::Stdio {
        make,
        stderr: options.stderr,
    };
    register(into, client, dial, handler, &program, &options).await
}

/// Connects to the streamable-HTTP MCP endpoint at `url` and registers its tools
/// `into` a registry or a runtime's live tools ([`ImportTarget`]). A session that is lost (the server restarted) is opened again at the next call.
pub async fn import_http<'a>(
    into: impl Into<ImportTarget<'a>>,
    url: &str,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let auth = match &options.oauth {
        Some(oauth) => Some(Arc::new(
            Authorization::new(url, oauth.clone())
                .await
                .map_err(|message| McpError::Connect {
                    server: url.to_owned(),
                    message,
                })?,
        )),
        None => None,
    };
    let dial = Dial::Http {
        url: url.to_owned(),
        auth,
    };
    let handler = handler_of(&options);
    let client = dial.connect(&handler, url, options.connect_timeout).await?;
    register(into.into(), client, dial, handler, url, &options).await
}

/// The client side of an import made with `options`.
fn handler_of(options: &ImportOptions) -> ImportHandler {
    ImportHandler {
        server: slug(&options.name),
        elicitation: options.elicitation.clone(),
        sampling: options.sampling.clone(),
        door: options.door.clone(),
        tasks: options.tasks,
        calls: Arc::default(),
        asking: Arc::default(),
        follow: Arc::default(),
        missed: Arc::default(),
    }
}

async fn within<T>(
    limit: Duration,
    server: &str,
    work: impl std::future::Future<Output = T>,
) -> Result<T, McpError> {
    tokio::time::timeout(limit, work)
        .await
        .map_err(|_| McpError::Connect {
            server: server.to_owned(),
            message: format!("no answer within {} ms", limit.as_millis()),
        })
}

/// Letters, digits, `_` and `-`; anything else becomes `_`.
fn slug(text: &str) -> String {
    tackle_core::spec::name_from(text)
}

fn version_of(text: &str) -> String {
    let v: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        .collect();
    if v.is_empty() {
        "0".to_owned()
    } else {
        v
    }
}

async fn register(
    into: ImportTarget<'_>,
    client: Client,
    dial: Dial,
    handler: ImportHandler,
    origin: &str,
    options: &ImportOptions,
) -> Result<McpImport, McpError> {
    let info = client.peer_info();
    let server = slug(&options.name);
    let remote_name = info
        .as_deref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| s.name.clone());
    let listed = match list(client.peer(), dial.auth(), origin, options).await {
        Ok(listed) => listed,
        Err(error) => {
            client.cancel().await.ok();
            return Err(error);
        }
    };
    let follow = handler.follow.clone();
    let link = Arc::new(Link {
        dial,
        handler,
        trace_context: options.trace_context,
        origin: origin.to_owned(),
        server: server.clone(),
        connect_timeout: options.connect_timeout,
        now: std::sync::Mutex::new((Some(client), 0)),
        redialing: tokio::sync::Mutex::new(()),
    });
    let source = format!("mcp:{server}");
    let put = match &into {
        ImportTarget::Registry(_) => None,
        ImportTarget::Live(live) => Some(live.clone()),
    };
    let registered = match into {
        ImportTarget::Registry(registry) => put_tools(registry, &link, &listed, &server, &[]),
        ImportTarget::Live(live) => live.change(&source, |registry| {
            put_tools(registry, &link, &listed, &server, &[])
        }),
    };
    let keys = match registered {
        Ok(keys) => keys,
        Err(error) => {
            if let Some(client) = link.close() {
                client.cancel().await.ok();
            }
            return Err(McpError::Register(error));
        }
    };
    let mut specs: Vec<ToolSpec> = listed.into_iter().map(|(_, spec)| spec).collect();
    specs.sort_by_key(ToolSpec::key);
    let now = Arc::new(std::sync::Mutex::new(Listed { keys, specs }));
    if let Some(live) = put {
        // From now on, the server's list changes reach the live tools.
        let _ = follow.set(Follow {
            live,
            link: Arc::downgrade(&link),
            options: options.clone(),
            now: Arc::clone(&now),
            refreshing: tokio::sync::Mutex::new(()),
            dirty: std::sync::atomic::AtomicBool::new(false),
        });
        if link
            .handler
            .missed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            // The tools changed while the first listing was being registered.
            if let Ok((peer, _)) = link.peer().await {
                refresh_soon(&follow, peer);
            }
        }
    }
    Ok(McpImport {
        link,
        server,
        remote_name,
        now,
    })
}

/// Lists the server's tools (bounded by the connect timeout; the person's time to
/// authorize is the OAuth client's own limit), with the spec each is imported as.
async fn list(
    peer: &Peer<RoleClient>,
    auth: Option<&Authorization>,
    origin: &str,
    options: &ImportOptions,
) -> Result<Vec<(Tool, ToolSpec)>, McpError> {
    let server = slug(&options.name);
    let version = version_of(
        peer.peer_info()
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| s.version.as_str())
            .unwrap_or("0"),
    );
    let limit = options.connect_timeout;
    let listed = authorized(auth, || async {
        tokio::time::timeout(limit, peer.list_all_tools())
            .await
            .unwrap_or(Err(ServiceError::Timeout { timeout: limit }))
    })
    .await;
    let tools = match listed {
        Ok(Ok(tools)) => tools,
        Err(message) => {
            return Err(McpError::Authorization {
                server: origin.to_owned(),
                message,
            })
        }
        Ok(Err(e)) if e.auth_challenge().is_some() => {
            return Err(McpError::Authorization {
                server: origin.to_owned(),
                message: "it asks for a token, and the import has no OAuth client (`ImportOptions::with_oauth`)"
                    .to_owned(),
            })
        }
        Ok(Err(e)) => {
            return Err(McpError::Connect {
                server: origin.to_owned(),
                message: format!("tools/list failed: {e}"),
            })
        }
    };
    // Every key is checked before any is registered: all or nothing.
    let mut listed = Vec::with_capacity(tools.len());
    let mut by_key: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for tool in tools {
        let mut spec = spec_of(&tool, &server, &version);
        // The door keeps the time limit, as for every tool: a server that does not
        // answer in time gives `Timeout`, and the request is dropped (cancelled).
        spec.timeout_ms = Some(u64::try_from(options.call_timeout.as_millis()).unwrap_or(u64::MAX));
        spec.permissions = options
            .requires
            .clone()
            .unwrap_or_else(|| vec![format!("mcp:{server}")]);
        if let Some(first) = by_key.insert(spec.key(), tool.name.to_string()) {
            return Err(McpError::ImportCollision {
                server,
                first,
                second: tool.name.to_string(),
                key: spec.key(),
            });
        }
        listed.push((tool, spec));
    }
    Ok(listed)
}

/// Registers the listed tools of `server` in `registry`, calling through `link`, in
/// place of `old` (the keys registered before, taken out first): all or nothing (a
/// failed registration takes the ones before it back out). The keys registered,
/// sorted.
fn put_tools(
    registry: &mut Registry,
    link: &Arc<Link>,
    listed: &[(Tool, ToolSpec)],
    server: &str,
    old: &[String],
) -> Result<Vec<String>, tackle_core::RegistryError> {
    for key in old {
        if is_ours(registry, key, server) {
            let _ = registry.unregister(key);
        }
    }
    let mut keys: Vec<String> = Vec::with_capacity(listed.len());
    for (tool, spec) in listed {
        let calls = tool_handler(
            Arc::clone(link),
            tool.name.to_string(),
            spec.key(),
            spec.rerun_safe(),
        );
        let registered = registry.register(
            DynamicTool::from_handler(spec.clone(), calls).with_source(format!("mcp:{server}")),
        );
        match registered {
            // Under a collision strategy that keeps the tool already there, the key is
            // not this import's: it is neither listed nor taken back out.
            Ok(key) if is_ours(registry, &key, server) => keys.push(key),
            Ok(_) => {}
            Err(error) => {
                for key in &keys {
                    let _ = registry.unregister(key);
                }
                return Err(error);
            }
        }
    }
    keys.sort();
    Ok(keys)
}

/// The keys and specs an import has now.
struct Listed {
    keys: Vec<String>,
    specs: Vec<ToolSpec>,
}

/// How an import into live tools follows the server's list changes.
struct Follow {
    live: LiveTools,
    link: std::sync::Weak<Link>,
    options: ImportOptions,
    now: Arc<std::sync::Mutex<Listed>>,
    /// Held while the tools are listed again: one listing at a time, in order.
    refreshing: tokio::sync::Mutex<()>,
    /// Whether a listing is asked for and not begun: notifications that come
    /// meanwhile ask for nothing more (one listing answers them all).
    dirty: std::sync::atomic::AtomicBool,
}

/// Lists an import's tools again soon, on `peer`, unless a listing is asked for
/// already and has not begun.
fn refresh_soon(follow: &Arc<std::sync::OnceLock<Follow>>, peer: Peer<RoleClient>) {
    let Some(asked) = follow.get() else {
        return;
    };
    if asked.dirty.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let follow = Arc::clone(follow);
    tokio::spawn(async move {
        if let Some(follow) = follow.get() {
            follow.refresh(&peer).await;
        }
    });
}

impl Follow {
    fn now(&self) -> std::sync::MutexGuard<'_, Listed> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists the server's tools again and puts them in place of the import's tools
    /// (the live tools audit what was added, removed or changed). A failure leaves
    /// the tools as they were, and is logged.
    async fn refresh(&self, peer: &Peer<RoleClient>) {
        let _one_at_a_time = self.refreshing.lock().await;
        // Begun: a change notified from now on asks for another listing.
        self.dirty.store(false, std::sync::atomic::Ordering::SeqCst);
        let Some(link) = self.link.upgrade() else {
            return;
        };
        let server = link.server.clone();
        let listed = match list(peer, link.dial.auth(), &link.origin, &self.options).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(%server, %error, "the imported MCP server's tools could not be listed again; they stay as they were");
                return;
            }
        };
        let old = self.now().keys.clone();
        let source = format!("mcp:{server}");
        let put = self.live.change(&source, |registry| {
            if link.state().0.is_none() {
                // Closed meanwhile: its tools were taken out, and stay out.
                return Ok(None);
            }
            put_tools(registry, &link, &listed, &server, &old).map(Some)
        });
        match put {
            Ok(None) => {}
            Ok(Some(keys)) => {
                let mut specs: Vec<ToolSpec> = listed.into_iter().map(|(_, spec)| spec).collect();
                specs.sort_by_key(ToolSpec::key);
                *self.now() = Listed { keys, specs };
            }
            Err(error) => {
                tracing::warn!(%server, %error, "the imported MCP server's new tools could not be registered; they stay as they were");
            }
        }
    }
}

/// Where an import puts the server's tools.
pub enum ImportTarget<'a> {
    /// A registry, before the runtime is built from it: the tools stay as the server
    /// listed them at import (a later `notifications/tools/list_changed` is ignored).
    Registry(&'a mut Registry),
    /// A runtime's live tools ([`Runtime::live_tools`](tackle_core::Runtime::live_tools)):
    /// the tools follow the server's `notifications/tools/list_changed` (and what a
    /// restarted server lists), each change audited.
    Live(LiveTools),
}

impl std::fmt::Debug for ImportTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportTarget::Registry(_) => f.write_str("ImportTarget::Registry"),
            ImportTarget::Live(_) => f.write_str("ImportTarget::Live"),
        }
    }
}

impl<'a> From<&'a mut Registry> for ImportTarget<'a> {
    fn from(registry: &'a mut Registry) -> ImportTarget<'a> {
        ImportTarget::Registry(registry)
    }
}

impl From<LiveTools> for ImportTarget<'_> {
    fn from(live: LiveTools) -> Self {
        ImportTarget::Live(live)
    }
}

impl From<&LiveTools> for ImportTarget<'_> {
    fn from(live: &LiveTools) -> Self {
        ImportTarget::Live(live.clone())
    }
}

/// Whether the tool under `key` is one this import of `server` registered.
fn is_ours(registry: &Registry, key: &str, server: &str) -> bool {
    registry.get(key).is_some_and(|tool| {
        matches!(tool.origin(), tackle_core::ToolOrigin::Dynamic { source } if *source == format!("mcp:{server}"))
    })
}

/// Registers tools imported earlier (their [`McpImport::specs`]) without a server:
/// under a replaying cassette the door serves their recorded calls; a call that would
/// have to reach the server fails with an `Execution` error saying it is offline.
pub fn register_offline(
    registry: &mut Registry,
    specs: Vec<ToolSpec>,
) -> Result<Vec<String>, McpError> {
    let mut keys = Vec::with_capacity(specs.len());
    for spec in specs {
        let key = spec.key();
        let source = format!("mcp-offline:{}", spec.namespace);
        let handler = ToolHandler::new(move |_ctx, _input| {
            let key = key.clone();
            Box::pin(async move {
                Err(ToolError::Execution {
                    message: format!(
                        "`{key}` comes from an MCP server that is not connected; only recorded calls can be served"
                    ),
                    key,
                })
            })
        });
        keys.push(registry.register(DynamicTool::from_handler(spec, handler).with_source(source))?);
    }
    Ok(keys)
}

/// The spec of a remote tool.
fn spec_of(tool: &Tool, server: &str, version: &str) -> ToolSpec {
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    let effects = if read_only {
        SideEffects::Read
    } else {
        SideEffects::External
    };
    let description = tool
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map_or_else(
            || format!("`{}` of MCP server `{server}`", tool.name),
            str::to_owned,
        );
    let mut spec = ToolSpec::new(
        format!("mcp.{server}"),
        slug(&tool.name),
        version,
        effects,
        description,
    );
    spec.input_schema = Value::Object(tool.input_schema.as_ref().clone());
    if let Some(output) = &tool.output_schema {
        spec.output_schema = Value::Object(output.as_ref().clone());
    }
    spec.trust = Trust::Mcp;
    spec.tags = vec!["mcp".to_owned()];
    spec
}

/// The value of a result without structured content: its text, or the JSON object or
/// array the text holds (many servers return JSON as text).
fn unstructured(text: String) -> Value {
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(text),
    }
}

/// The value of a result whose content holds an image, audio or a binary resource:
/// its blocks as a list of [`ContentPart`]s (text, images, files), which a ReAct run
/// sends the model as parts and tackle's MCP server sends on as content. `None` when
/// every block is text.
fn with_attachments(blocks: &[rmcp::model::ContentBlock]) -> Option<Value> {
    let wire = serde_json::to_value(blocks).ok()?;
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_owned);
    let parts: Vec<ContentPart> = wire
        .as_array()?
        .iter()
        .filter_map(|block| {
            let mime =
                || text(block, "mimeType").unwrap_or_else(|| "application/octet-stream".into());
            Some(match block.get("type")?.as_str()? {
                "text" => ContentPart::text(text(block, "text")?),
                "image" => ContentPart::Image {
                    mime_type: mime(),
                    data: text(block, "data")?,
                },
                "audio" => ContentPart::File {
                    mime_type: mime(),
                    data: text(block, "data")?,
                    name: None,
                },
                "resource" => {
                    let resource = block.get("resource")?;
                    match text(resource, "blob") {
                        Some(blob) => ContentPart::File {
                            mime_type: text(resource, "mimeType")
                                .unwrap_or_else(|| "application/octet-stream".into()),
                            data: blob,
                            name: text(resource, "uri"),
                        },
                        None => ContentPart::text(text(resource, "text")?),
                    }
                }
                "resource_link" => ContentPart::text(format!("[resource {}]", text(block, "uri")?)),
                _ => return None,
            })
        })
        .collect();
    if !parts.iter().any(ContentPart::is_attachment) {
        return None;
    }
    serde_json::to_value(parts).ok()
}

/// Calls the remote tool (the door holds it to the spec's `timeout_ms`). A call whose
/// connection is lost while it is in flight is made again on a new connection when
/// the tool is safe to run again (`rerun_safe`), and fails with `Disconnected`
/// otherwise.
fn tool_handler(link: Arc<Link>, remote: String, key: String, rerun_safe: bool) -> ToolHandler {
    ToolHandler::new(move |ctx, input| {
        let (link, remote, key) = (Arc::clone(&link), remote.clone(), key.clone());
        Box::pin(async move {
            let server = link.server.clone();
            let failed = |message: String| ToolError::Execution {
                key: key.clone(),
                message,
            };
            let _in_flight = InFlight::new(&link.handler, &key);
            // Made again after a crash of a durable run while the server worked on it
            // as a task: go on polling that task; never start the work twice.
            if let Some(task) = ctx
                .resumed_checkpoint()
                .and_then(|note| note.get(TASK_NOTE))
                .and_then(Value::as_str)
            {
                let result = poll_task(&link, &key, task, None, None).await?;
                return value_of(result, &key);
            }
            let arguments = match input {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            let mut request = CallToolRequestParams::new(remote).with_arguments(arguments);
            // The door's span is this call's: its trace goes with the request (W3C
            // trace context in `_meta`, feature `otel`).
            let mut meta = rmcp::model::MetaObject::new();
            if link.trace_context {
                crate::trace::inject(&mut meta);
            }
            if !meta.0.is_empty() {
                request.meta = Some(rmcp::model::RequestMetaObject(meta));
            }
            let (peer, generation) = link.peer().await.map_err(&failed)?;
            // Kept for a second attempt only when one may be made.
            let again = rerun_safe.then(|| request.clone());
            let auth = link.dial.auth();
            let first = authorized(auth, || peer.call_tool_once(request.clone()))
                .await
                .map_err(&failed)?;
            let answer = match (first, again) {
                (Err(e), Some(request)) if connection_lost(&e) => {
                    let (peer, _) = link.redial(generation).await.map_err(&failed)?;
                    authorized(auth, || peer.call_tool_once(request.clone()))
                        .await
                        .map_err(&failed)?
                }
                (Err(e), None) if connection_lost(&e) => {
                    return Err(ToolError::Disconnected {
                        key: key.clone(),
                        reason: format!(
                            "the connection to the MCP server `{server}` was lost ({e}); the call may have reached it, and the tool is not safe to run again, so it was not retried (the next call connects again)"
                        ),
                    });
                }
                (answer, _) => answer,
            };
            let result = match answer {
                Err(e) => return Err(failed(format!("the MCP server `{server}` failed: {e}"))),
                Ok(CallToolResponse::Complete(result)) => result,
                Ok(CallToolResponse::Task(created)) => {
                    let task = created.task.task_id;
                    // Kept before the first poll: a durable run that dies from here on
                    // goes on with this task rather than starting another.
                    ctx.checkpoint(json!({ TASK_NOTE: task }))?;
                    // A task no resume can find again is cancelled if the call gives
                    // up on it (its time limit, its run's cancellation).
                    let orphan = (!ctx.keeps_checkpoints()).then(|| peer.clone());
                    poll_task(&link, &key, &task, created.task.poll_interval_ms, orphan).await?
                }
                Ok(_) => {
                    return Err(failed(format!(
                        "the MCP server `{server}` asked for input (input_required), which imported tools do not answer"
                    )))
                }
            };
            value_of(result, &key)
        })
    })
}

/// The note a call of a task-based remote tool keeps: the task's id, under this key.
const TASK_NOTE: &str = "mcp_task";

/// The most requests for input one remote task may make.
const MAX_TASK_INPUTS: usize = 32;

/// The waits between polls of a remote task: what the server suggests, within these.
const TASK_POLL_MIN: Duration = Duration::from_millis(20);
const TASK_POLL_MAX: Duration = Duration::from_secs(5);

/// Polls the remote task `task` until it ends (the door's time limit bounds the
/// wait): its result, or why there is none. A lost connection is made again and the
/// polling goes on (asking about a task changes nothing). Requests the task waits for
/// (`input_required`) are answered as the server's own requests are (the import's
/// elicitation handler or door, its model) and sent with `tasks/update`.
async fn poll_task(
    link: &Link,
    key: &str,
    task: &str,
    suggested: Option<u64>,
    orphan: Option<Peer<RoleClient>>,
) -> Result<CallToolResult, ToolError> {
    let mut abandon = Abandon {
        peer: orphan,
        task: task.to_owned(),
    };
    let polled = poll(link, key, task, suggested).await;
    abandon.peer = None;
    polled
}

/// Cancels a remote task when dropped with a peer (its poll was given up).
struct Abandon {
    peer: Option<Peer<RoleClient>>,
    task: String,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let params = rmcp::model::CancelTaskParams::new(std::mem::take(&mut self.task));
        runtime.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), peer.cancel_task(params)).await;
        });
    }
}

/// [`poll_task`]'s loop.
async fn poll(
    link: &Link,
    key: &str,
    task: &str,
    suggested: Option<u64>,
) -> Result<CallToolResult, ToolError> {
    let failed = |message: String| ToolError::Execution {
        key: key.to_owned(),
        message,
    };
    let server = &link.server;
    let mut answered: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut wait = suggested
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_millis(500))
        .clamp(TASK_POLL_MIN, TASK_POLL_MAX);
    loop {
        let (peer, generation) = link.peer().await.map_err(&failed)?;
        let asked = authorized(link.dial.auth(), || {
            peer.get_task(GetTaskParams::new(task.to_owned()))
        })
        .await
        .map_err(&failed)?;
        let got = match asked {
            Ok(got) => got,
            Err(e) if connection_lost(&e) => {
                link.redial(generation).await.map_err(&failed)?;
                continue;
            }
            Err(e) => {
                return Err(failed(format!(
                    "the MCP server `{server}` could not say how its task `{task}` stands: {e}"
                )))
            }
        };
        if let Some(ms) = got.task.task.poll_interval_ms {
            wait = Duration::from_millis(ms).clamp(TASK_POLL_MIN, TASK_POLL_MAX);
        }
        match got.task.payload {
            TaskPayload::Completed { result } => {
                return serde_json::from_value(Value::Object(result)).map_err(|e| {
                    failed(format!(
                        "the MCP server `{server}` ended its task `{task}` with a result that is not a tool's: {e}"
                    ))
                })
            }
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                return Err(failed(format!(
                    "the MCP server `{server}`'s task `{task}` failed: {message}"
                )));
            }
            TaskPayload::Cancelled => {
                return Err(ToolError::Cancelled {
                    key: key.to_owned(),
                })
            }
            TaskPayload::InputRequired { input_requests } => {
                // Each request is answered once, even if a poll shows it again before
                // the server took the answer.
                let fresh: rmcp::model::InputRequests = input_requests
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if fresh.is_empty() {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                if answered.len() + fresh.len() > MAX_TASK_INPUTS {
                    return Err(failed(format!(
                        "the MCP server `{server}`'s task `{task}` asked for input more than {MAX_TASK_INPUTS} times"
                    )));
                }
                answered.extend(fresh.keys().cloned());
                let responses = link.handler.answer_inputs(fresh).await;
                let update = rmcp::model::UpdateTaskParams::new(task.to_owned(), responses);
                let sent = authorized(link.dial.auth(), || peer.update_task(update.clone()))
                    .await
                    .map_err(&failed)?;
                if let Err(e) = sent {
                    return Err(failed(format!(
                        "the MCP server `{server}` did not take the answers for its task `{task}`: {e}"
                    )));
                }
            }
            _ => tokio::time::sleep(wait).await,
        }
    }
}

/// The value of a remote tool's result (see the module docs).
fn value_of(result: CallToolResult, key: &str) -> Result<Value, ToolError> {
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        return Err(ToolError::Execution {
            key: key.to_owned(),
            message: text.join("\n"),
        });
    }
    // Images and files win over structured content, which cannot hold them as such
    // (a tackle server sends both: parts as content, and the same parts as JSON under
    // `result`).
    if let Some(parts) = with_attachments(&result.content) {
        return Ok(parts);
    }
    Ok(match result.structured_content {
        Some(structured) => structured,
        None => unstructured(text.join("\n")),
    })
}

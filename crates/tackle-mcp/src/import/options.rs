//! How to import: [`ImportOptions`] (the name the importer gives the server, time
//! limits, permissions, OAuth, the door and model for the server's requests, tasks)
//! and the pieces it takes: where a stdio server's stderr goes, and who answers the
//! server's questions ([`ElicitationHandler`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tackle_agent::model::ChatModel;
use tackle_core::{Run, ToolContext};

use crate::client::Elicited;
use crate::oauth_client::OAuthClient;

/// How to import: the name the importer gives the server, and limits.
#[derive(Clone)]
pub struct ImportOptions {
    /// The `<server>` part of the keys and of the default permission `mcp:<server>`.
    pub name: String,
    /// The time limit of the whole import: connecting, listing the tools (every
    /// page) and registering them, not counting the time a person takes to
    /// authorize; also the limit of each reconnection.
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
    /// Which of MCP's revisions the import may speak (default:
    /// [`Lifecycle::Negotiate`]).
    pub lifecycle: Lifecycle,
}

/// How an import begins its conversation with a server, which decides the MCP
/// revision it speaks.
///
/// Revision 2026-07-28 has no handshake: the client asks `server/discover`, then every
/// request carries the protocol version, the client's name and its capabilities in its
/// `_meta`, and a server that needs input (an approval, a model's answer) returns it
/// as a question the call answers and makes again (`InputRequiredResult`). Revision
/// 2025-11-25 opens a session with `initialize`, and the server asks its questions as
/// requests of its own. Imported tools behave the same either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Asks `server/discover` first and speaks 2026-07-28 when the server answers it;
    /// a server that answers with a JSON-RPC error (it does not know the method) or
    /// not within 10 s gets 2025-11-25's `initialize` on the same connection, and an
    /// HTTP server that answers with a result of another kind gets it on a new one.
    #[default]
    Negotiate,
    /// 2026-07-28 only: a server that does not answer `server/discover` is not
    /// imported (the import fails with [`McpError::Connect`](crate::McpError::Connect)).
    Discover,
    /// 2025-11-25 only: `initialize`, and a session, as before 2026-07-28.
    Initialize,
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
            .field("lifecycle", &self.lifecycle)
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
/// accepts with `{}` accepts the defaults; an accepted answer that does not fit the
/// form's schema once they are in (not an object, a field of the wrong type, a
/// required field missing) is declined. Questions come one at a time per import, only while one of its calls
/// is in flight (others are declined), and a person has
/// [`ELICITATION_TIMEOUT`](crate::client::ELICITATION_TIMEOUT) to answer (then the
/// question is cancelled). Answers do not pass the door: they are neither gated,
/// audited nor recorded.
#[derive(Clone)]
pub struct ElicitationHandler(pub(super) Arc<dyn Fn(Elicitation) -> ElicitFuture + Send + Sync>);

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
    ///
    /// [`McpImport::remote_name`]: crate::import::McpImport::remote_name
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
            lifecycle: Lifecycle::Negotiate,
        }
    }

    /// Which MCP revisions the import may speak (see [`Lifecycle`]; default:
    /// whichever the server speaks, 2026-07-28 first).
    pub fn with_lifecycle(mut self, lifecycle: Lifecycle) -> ImportOptions {
        self.lifecycle = lifecycle;
        self
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

    /// Sets the time limit of the whole import (see
    /// [`connect_timeout`](Self::connect_timeout)): past it, the import fails with
    /// [`McpError::Timeout`](crate::McpError::Timeout) and nothing of it stays.
    pub fn with_connect_timeout(mut self, limit: Duration) -> ImportOptions {
        self.connect_timeout = limit;
        self
    }
}

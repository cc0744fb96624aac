//! An import's live connection: the client side that the server talks to
//! ([`ImportHandler`]: capabilities, the calls in flight, list-change notifications),
//! the [`Link`] its tools call through, which connects again after a loss, and the
//! state an import into live tools follows the server's list changes with
//! ([`Follow`]). The three hold each other, so they are defined together.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use tackle_agent::model::ChatModel;
use tackle_core::registry::LiveTools;
use tackle_core::{Run, ToolContext, ToolSpec};

use super::authorize::Rounds;
use super::child::ChildTransport;
use super::options::{ElicitationHandler, ImportOptions, Lifecycle, ServerStderr};
use crate::oauth_client::{Authorization, Challenge};
use crate::McpError;

pub(super) type Client = RunningService<RoleClient, ImportHandler>;

/// The client side of an import's connection: what it tells the server about itself,
/// and its answers to the server's requests.
#[derive(Clone)]
pub(super) struct ImportHandler {
    pub(super) server: String,
    pub(super) elicitation: Option<ElicitationHandler>,
    pub(super) sampling: Option<Arc<dyn ChatModel>>,
    /// The run and context the server's requests are calls of.
    pub(super) door: Option<(Run, ToolContext)>,
    /// Whether the client declares the Tasks extension.
    pub(super) tasks: bool,
    /// Which revisions the connection may speak.
    pub(super) lifecycle: Lifecycle,
    /// The keys of this import's calls in flight: a server's question comes from one
    /// of them, and one asked with none in flight is declined.
    pub(super) calls: Arc<std::sync::Mutex<Vec<String>>>,
    /// Held while the person answers: one question at a time per import.
    pub(super) asking: Arc<tokio::sync::Mutex<()>>,
    /// How the import follows the server's list changes (set once imported, into
    /// live tools only).
    pub(super) follow: Arc<std::sync::OnceLock<Follow>>,
    /// Whether the server said its tools changed before the import could follow
    /// (while it registered the first listing).
    pub(super) missed: Arc<std::sync::atomic::AtomicBool>,
}

impl ImportHandler {
    /// How rmcp begins the connection, by [`Lifecycle`].
    fn mode(&self) -> ClientLifecycleMode {
        let latest = vec![ProtocolVersion::V_2026_07_28];
        match self.lifecycle {
            Lifecycle::Negotiate => ClientLifecycleMode::Auto {
                preferred_versions: latest,
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: latest,
            },
            Lifecycle::Initialize => ClientLifecycleMode::Initialize,
        }
    }

    /// Connects over `transport`, as [`mode`](Self::mode) says.
    async fn serve<T, E, A>(
        self,
        transport: T,
    ) -> Result<Client, rmcp::service::ClientInitializeError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let mode = self.mode();
        ClientServiceExt::serve_with_lifecycle(self, transport, mode).await
    }

    /// Connects over a transport from `make`. When negotiating, a server that answers
    /// `server/discover` with a result of another kind (a 2025-11-25 server that
    /// answers every method) is connected again, on a new transport, with
    /// `initialize`.
    async fn serve_fresh<T, E, A>(
        &self,
        make: impl Fn() -> T,
    ) -> Result<Client, rmcp::service::ClientInitializeError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        match self.clone().serve(make()).await {
            Err(rmcp::service::ClientInitializeError::ExpectedInitResult(Some(_)))
                if self.lifecycle == Lifecycle::Negotiate =>
            {
                let legacy = ClientLifecycleMode::Initialize;
                ClientServiceExt::serve_with_lifecycle(self.clone(), make(), legacy).await
            }
            other => other,
        }
    }

    pub(super) fn calls(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A call of an imported tool, in flight while it lives (see `ImportHandler::calls`).
pub(super) struct InFlight {
    handler: ImportHandler,
    key: String,
}

impl InFlight {
    pub(super) fn new(handler: &ImportHandler, key: &str) -> InFlight {
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
        // The version `initialize` offers; discovery (2026-07-28) sends its own.
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

/// Makes the command that starts an imported stdio server (see [`import_stdio_with`]).
pub(super) type MakeCommand = Arc<dyn Fn() -> tokio::process::Command + Send + Sync>;

/// How an import reaches its server again.
pub(super) enum Dial {
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
pub(super) async fn spawn(
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
    let transport = ChildTransport::spawn(command, stderr).map_err(|e| failed(e.to_string()))?;
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
        let transport = || StreamableHttpClientTransport::from_uri(url.to_owned());
        return within(limit, origin, handler.serve_fresh(transport))
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
        let transport = || {
            StreamableHttpClientTransport::with_client(
                auth.client.clone(),
                StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
            )
        };
        let error = match within(limit, origin, handler.serve_fresh(transport)).await? {
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

impl Dial {
    /// Whether a lost connection can be made again.
    fn redials(&self) -> bool {
        !matches!(self, Dial::Stdio { make: None, .. })
    }

    /// The OAuth state of a protected HTTP server's import.
    pub(super) fn auth(&self) -> Option<&Authorization> {
        match self {
            Dial::Http { auth, .. } => auth.as_deref(),
            Dial::Stdio { .. } => None,
        }
    }

    /// Connects (starts the child, or opens a session), within `limit`.
    pub(super) async fn connect(
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
pub(super) struct Link {
    pub(super) dial: Dial,
    pub(super) handler: ImportHandler,
    /// Whether calls send the caller's trace context.
    pub(super) trace_context: bool,
    pub(super) origin: String,
    pub(super) server: String,
    pub(super) connect_timeout: Duration,
    /// The client now (`None` once closed), and how many times it was made again.
    pub(super) now: std::sync::Mutex<(Option<Client>, u64)>,
    /// Held while connecting again, so that calls at once make one new connection.
    pub(super) redialing: tokio::sync::Mutex<()>,
}

impl Link {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, (Option<Client>, u64)> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes the link: the client, to cancel; calls fail from then on.
    pub(super) fn close(&self) -> Option<Client> {
        self.state().0.take()
    }

    /// The peer to call now and its generation, connecting again first when the
    /// connection is known to be gone (nothing was sent on it: no retry question).
    pub(super) async fn peer(&self) -> Result<(Peer<RoleClient>, u64), String> {
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
    pub(super) async fn redial(&self, generation: u64) -> Result<(Peer<RoleClient>, u64), String> {
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
                        listen_for_changes(&self.handler.follow, &peer);
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
pub(super) fn connection_lost(error: &rmcp::ServiceError) -> bool {
    matches!(
        error,
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
    ) && error.auth_challenge().is_none()
}

async fn within<T>(
    limit: Duration,
    server: &str,
    work: impl std::future::Future<Output = T>,
) -> Result<T, McpError> {
    tokio::time::timeout(limit, work)
        .await
        .map_err(|_| McpError::Timeout {
            server: server.to_owned(),
            limit,
        })
}

/// An import's time limit: connecting, listing and registering together, not
/// counting the time spent answering authorization challenges (a person's time is
/// the OAuth client's own limit).
pub(super) struct Budget<'a> {
    limit: Duration,
    started: std::time::Instant,
    auth: Option<&'a Authorization>,
    /// The time the OAuth state had spent authorizing when the import began.
    authorized_before: Duration,
}

impl<'a> Budget<'a> {
    /// A budget of `limit` from now, for an import authorized by `auth`.
    pub(super) fn new(limit: Duration, auth: Option<&'a Authorization>) -> Budget<'a> {
        Budget {
            limit,
            started: std::time::Instant::now(),
            auth,
            authorized_before: auth.map_or(Duration::ZERO, Authorization::time_authorizing),
        }
    }

    /// The time left (zero once spent).
    fn left(&self) -> Duration {
        let authorizing = self
            .auth
            .map_or(Duration::ZERO, Authorization::time_authorizing)
            .saturating_sub(self.authorized_before);
        let used = self.started.elapsed().saturating_sub(authorizing);
        self.limit.saturating_sub(used)
    }

    /// When the budget runs out if nothing is authorized from now on, and the limit:
    /// the deadline of work that cannot wait (registering).
    pub(super) fn deadline(&self) -> (std::time::Instant, Duration) {
        (std::time::Instant::now() + self.left(), self.limit)
    }

    /// Runs `work` within what is left: [`McpError::Timeout`] for `origin` when it
    /// runs out first (`work` is dropped: a client it made is closed).
    pub(super) async fn run<T>(
        &self,
        origin: &str,
        work: impl std::future::Future<Output = Result<T, McpError>>,
    ) -> Result<T, McpError> {
        tokio::pin!(work);
        loop {
            let left = self.left();
            if left.is_zero() {
                return Err(McpError::Timeout {
                    server: origin.to_owned(),
                    limit: self.limit,
                });
            }
            tokio::select! {
                done = &mut work => return done,
                // Time spent authorizing meanwhile is given back: look again.
                () = tokio::time::sleep(left) => {}
            }
        }
    }
}

/// The keys and specs an import has now.
pub(super) struct Listed {
    pub(super) keys: Vec<String>,
    pub(super) specs: Vec<ToolSpec>,
}

/// How an import into live tools follows the server's list changes.
pub(super) struct Follow {
    pub(super) live: LiveTools,
    pub(super) link: std::sync::Weak<Link>,
    pub(super) options: ImportOptions,
    pub(super) now: Arc<std::sync::Mutex<Listed>>,
    /// Held while the tools are listed again: one listing at a time, in order.
    pub(super) refreshing: tokio::sync::Mutex<()>,
    /// Whether a listing is asked for and not begun: notifications that come
    /// meanwhile ask for nothing more (one listing answers them all).
    pub(super) dirty: std::sync::atomic::AtomicBool,
}

/// Follows the server's list changes on `peer` when it speaks 2026-07-28, which sends
/// them only to a client that listens for them (`subscriptions/listen`); a 2025-11-25
/// server sends them on its session unasked. The listening ends with the connection.
pub(super) fn listen_for_changes(
    follow: &Arc<std::sync::OnceLock<Follow>>,
    peer: &Peer<RoleClient>,
) {
    let stateless = peer
        .peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize());
    if !stateless || follow.get().is_none() {
        return;
    }
    let (follow, peer) = (Arc::clone(follow), peer.clone());
    tokio::spawn(async move {
        let changes = rmcp::model::SubscriptionFilter::builder()
            .tools_list_changed()
            .build();
        let mut subscription = match peer.listen(changes).await {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::warn!(error = %e, "the imported MCP server does not send its list changes");
                return;
            }
        };
        // A change made before the server took the subscription is not sent: list
        // once more now that it has.
        refresh_soon(&follow, peer.clone());
        while let Ok(Some(notification)) = subscription.next().await {
            if matches!(
                notification,
                rmcp::model::ServerNotification::ToolListChangedNotification(_)
            ) {
                refresh_soon(&follow, peer.clone());
            }
        }
    });
}

/// Lists an import's tools again soon, on `peer`, unless a listing is asked for
/// already and has not begun.
pub(super) fn refresh_soon(follow: &Arc<std::sync::OnceLock<Follow>>, peer: Peer<RoleClient>) {
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

//! The MCP bridge of tackle, on the official Rust SDK (`rmcp`).
//!
//! MCP (the Model Context Protocol) is how agents outside Rust reach tools. This crate
//! goes both ways:
//!
//! * **serving**: [`McpServer`] gives MCP clients every tool of a
//!   [`Runtime`](tackle_core::Runtime), over stdio ([`serve_stdio`]) or streamable
//!   HTTP ([`serve_http`], or [`serve_http_with`] and [`HttpOptions`]: loopback
//!   `Host` and `Origin` values only unless told otherwise). Every call goes
//!   through the door with the grants the server was configured with; with
//!   [`McpServer::with_tasks`], calls of clients that ask for MCP tasks become durable
//!   tasks that survive the server process ([`tasks`]);
//! * **importing**: [`import_stdio`] and [`import_http`] register an MCP server's
//!   tools as dynamic tools under the `mcp` namespace, so they pass the same gates,
//!   validation and replay as local ones; into a runtime's live tools, they follow the
//!   server's list changes ([`ImportTarget`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use tackle_mcp::{identity, serve_stdio, McpServer};
//! use tackle_core::{Runtime, ToolContext};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let server = McpServer::new(runtime, identity!(), ToolContext::new().with_grant("tools:*"))?;
//! serve_stdio(server).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tackle_core::CancellationToken;
use tokio::net::TcpListener;

pub mod client;
mod coarse;
pub mod import;
pub mod logging;
pub mod names;
pub mod oauth;
pub mod oauth_client;
pub mod prompts;
pub mod resources;
pub mod server;
pub mod stdio;
pub mod tasks;
pub mod trace;

pub use import::{
    import_http, import_stdio, import_stdio_with, register_offline, Elicitation,
    ElicitationHandler, ImportOptions, ImportTarget, McpImport, ServerStderr,
};
pub use names::NameMap;
pub use oauth::{AccessGrant, Introspection, OAuthResource, TokenRejected, TokenValidator};
pub use oauth_client::{Authorizer, ClientIdentity, OAuthClient};
pub use server::{Identity, McpServer};
pub use stdio::{serve_io, StdioOptions, DEFAULT_MAX_LINE_BYTES};
pub use tasks::TaskOptions;

/// What can go wrong serving or importing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// Two served tools would get the same MCP name.
    #[error("the tools `{first}` and `{second}` would both be served as `{name}`")]
    NameCollision {
        /// The name.
        name: String,
        /// The first tool's key.
        first: String,
        /// The second tool's key.
        second: String,
    },
    /// A served name would be longer than MCP allows.
    #[error("`{key}` would be served as `{name}`, longer than MCP's 128 characters")]
    NameTooLong {
        /// The tool's key.
        key: String,
        /// The name.
        name: String,
    },
    /// A tool's spec could not be put in MCP's form.
    #[error("`{key}` cannot be described to MCP clients: {message}")]
    Describe {
        /// The tool's key.
        key: String,
        /// Why.
        message: String,
    },
    /// Serving failed (the transport could not start, or broke).
    #[error("serving MCP failed: {0}")]
    Serve(String),
    /// Connecting to a server to import from failed, or it did not answer in time.
    #[error("cannot import from the MCP server {server}: {message}")]
    Connect {
        /// The command or URL.
        server: String,
        /// Why.
        message: String,
    },
    /// A protected server (HTTP `401` or `403`) could not be authorized: the import
    /// has no OAuth client, or the authorization failed. Not retried: asking again
    /// would not change the answer.
    #[error("the MCP server {server} requires authorization: {message}")]
    Authorization {
        /// The URL.
        server: String,
        /// Why it could not be authorized.
        message: String,
    },
    /// Two tools of a server would be imported under one key.
    #[error(
        "the MCP server {server} has tools `{first}` and `{second}`, which would both be imported as `{key}`; nothing was imported"
    )]
    ImportCollision {
        /// The server's name.
        server: String,
        /// The first remote tool name.
        first: String,
        /// The second remote tool name.
        second: String,
        /// The key both would get.
        key: String,
    },
    /// The server's task store failed.
    #[error("the MCP server's tasks: {message}")]
    Tasks {
        /// What failed.
        message: String,
    },
    /// An imported tool could not be registered; nothing of the import stays.
    #[error("an imported tool could not be registered: {0}")]
    Register(#[from] tackle_core::RegistryError),
    /// A socket could not be bound or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A resource cannot be published as given.
    #[error("the resource `{uri}` cannot be published: {message}")]
    Resource {
        /// Its URI or URI template.
        uri: String,
        /// Why.
        message: String,
    },
    /// A prompt cannot be published as given.
    #[error("the prompt `{name}` cannot be published: {message}")]
    Prompt {
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
}

/// Serves `server` over this process's stdin and stdout until the client disconnects.
/// Write logs to stderr: anything else on stdout breaks the protocol. A request line
/// longer than 16 MiB is answered with a JSON-RPC error (see [`stdio`]).
pub async fn serve_stdio(server: McpServer) -> Result<(), McpError> {
    serve_stdio_with(server, StdioOptions::default()).await
}

/// [`serve_stdio`] with another line limit.
///
/// When stdin and stdout are pipes (as an MCP client that starts the server makes
/// them), they are read and written without blocking, on the runtime's own threads
/// (rmcp's [`stdio_pipes`](rmcp::transport::stdio_pipes): on Linux each is reopened
/// on a description of its own, so the process's own stdin and stdout, and a child's
/// that inherits them, stay blocking); otherwise (a terminal, a file, a socket)
/// through Tokio's stdin and stdout, which hand each read and write to a blocking
/// thread. Print nothing to stdout yourself, as always with MCP over stdio.
pub async fn serve_stdio_with(server: McpServer, options: StdioOptions) -> Result<(), McpError> {
    let (input, output) = rmcp::transport::stdio_pipes();
    stdio::serve_io(server, input, output, options).await
}

/// A streamable-HTTP server running in the background; dropping it (or calling
/// [`HttpServer::shutdown`]) stops it.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancelOnDrop,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint URL for MCP clients (`http://<addr>/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Who may talk to an HTTP server: the `Host` and `Origin` headers it accepts.
///
/// Both protect a server on a developer's machine from web pages the developer visits
/// (DNS rebinding, cross-site requests). The defaults accept loopback only: hosts
/// `localhost`, `127.0.0.1`, `::1` (any port), and origins `http://localhost`,
/// `http://127.0.0.1`, `http://[::1]` (any port); a request with another `Host` or a
/// present `Origin` that is not listed gets `403 Forbidden` and never reaches the door.
/// A request without an `Origin` header (any non-browser client) passes the origin
/// check. A server bound to another address must list the names its clients use.
///
/// **Clients.** Without tokens, every client gets the grants of the server's context.
/// With [`with_token`](HttpOptions::with_token), every request must carry
/// `Authorization: Bearer <token>` for one of the tokens, and is served with that
/// token's grants; a request without a valid token gets `401 Unauthorized` and never
/// reaches the door. So two clients of one server can hold different capabilities.
///
/// **OAuth 2.1.** With [`with_oauth`](HttpOptions::with_oauth), the server is an OAuth
/// resource server ([`oauth`]): it serves its Protected Resource Metadata, asks
/// clients without a token to get one (`401` naming the metadata), checks presented
/// tokens with the configured validator, and serves each with its scopes as grants.
/// Static tokens, if any, are still accepted beside it. An OAuth client's sessions are
/// its own: bound to its token's subject (`sub`; the token itself when it names
/// none) and scopes, so another subject holding the same scopes cannot use or delete
/// them.
///
/// **Limits.** So that no client can tie the server up:
/// - a connection must send a request's head within the header-read timeout (10 s
///   by default, [`with_header_read_timeout`](HttpOptions::with_header_read_timeout)),
///   and an idle connection is closed after it, so slow or silent connections free
///   their place;
/// - at most 512 connections are open at once
///   ([`with_max_connections`](HttpOptions::with_max_connections)); more wait in the
///   listen queue. When the process runs out of file descriptors the server backs off
///   (10 ms, doubling to 1 s) instead of spinning;
/// - at most 1,024 sessions in all and 64 per client (a static token, or an OAuth
///   subject and scopes; [`with_max_sessions`](HttpOptions::with_max_sessions)): a
///   request that would open one more gets `503` (in all) or `429` (for the client),
///   with `Retry-After`; requests at once are weighed one by one and cannot open
///   more (at the margin, one may be refused a moment early). A server without tokens cannot tell clients apart: only the cap in
///   all holds there. A session ends when its client deletes it or after 5 idle
///   minutes ([`with_session_idle`](HttpOptions::with_session_idle)); an idle
///   session holds about 55 KiB;
/// - at most as many OAuth clients as sessions keep a service: when full, the one
///   used longest ago that has no session left goes (never one with sessions).
///
/// Not bounded in time: a request's *body* (the header-read timeout covers its head);
/// a client that trickles bodies holds at most its connections, within the cap.
#[derive(Clone)]
pub struct HttpOptions {
    /// Accepted `Host` values: a name or `host:port`.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values: `scheme://host:port`, `:*` for any port.
    pub allowed_origins: Vec<String>,
    /// Bearer tokens and the grants each one gives.
    tokens: Vec<(String, Vec<String>)>,
    /// The OAuth resource-server settings, if clients bring OAuth access tokens.
    oauth: Option<OAuthResource>,
    /// How long a connection may take to send a request's head, or stay idle.
    header_read_timeout: Duration,
    /// Connections open at once, at most.
    max_connections: usize,
    /// Sessions open at once, in all and per client.
    max_sessions: (usize, usize),
    /// How long an idle session lives.
    session_idle: Duration,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("tokens", &self.tokens.len())
            .field("oauth", &self.oauth)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle", &self.session_idle)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            tokens: Vec::new(),
            oauth: None,
            header_read_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_sessions: (1024, 64),
            session_idle: Duration::from_secs(300),
        }
    }
}

impl HttpOptions {
    /// Also accepts `host` in the `Host` header.
    pub fn with_allowed_host(mut self, host: impl Into<String>) -> HttpOptions {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Also accepts `origin` in the `Origin` header.
    pub fn with_allowed_origin(mut self, origin: impl Into<String>) -> HttpOptions {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Accepts clients presenting `Authorization: Bearer <token>`, serving them with
    /// `grants` (capability patterns) in place of the server context's grants. Once a
    /// token is given, a request without a valid one is refused with `401`.
    pub fn with_token(mut self, token: impl Into<String>, grants: &[&str]) -> HttpOptions {
        self.tokens.push((
            token.into(),
            grants.iter().map(|g| (*g).to_owned()).collect(),
        ));
        self
    }

    /// Makes the server an OAuth 2.1 resource server (see [`oauth`]): requests need an
    /// access token `oauth` accepts, and are served with its scopes as grants.
    pub fn with_oauth(mut self, oauth: OAuthResource) -> HttpOptions {
        self.oauth = Some(oauth);
        self
    }

    /// Sets how long a connection may take to send a request's head, and stay idle
    /// between requests (default 10 s; at least 1 ms).
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> HttpOptions {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sets how many connections may be open at once (default 512; at least 1).
    pub fn with_max_connections(mut self, connections: usize) -> HttpOptions {
        self.max_connections = connections.max(1);
        self
    }

    /// Sets how many sessions may be open at once, in all and per client (default
    /// 1,024 and 64; each at least 1).
    pub fn with_max_sessions(mut self, in_all: usize, per_client: usize) -> HttpOptions {
        self.max_sessions = (in_all.max(1), per_client.max(1));
        self
    }

    /// Sets how long an idle session lives (default 5 minutes).
    pub fn with_session_idle(mut self, idle: Duration) -> HttpOptions {
        self.session_idle = idle;
        self
    }
}

/// Serves `server` over streamable HTTP on `addr` with the default [`HttpOptions`]
/// (loopback hosts and origins only; use `127.0.0.1:0` for any free local port).
pub async fn serve_http(server: McpServer, addr: SocketAddr) -> Result<HttpServer, McpError> {
    serve_http_with(server, addr, HttpOptions::default()).await
}

/// Serves `server` over streamable HTTP on `addr`, accepting the hosts and origins of
/// `options`, within its limits (see [`HttpOptions`]). Accepted connections set
/// `TCP_NODELAY`, so a client's small writes are not held back by Nagle's algorithm.
pub async fn serve_http_with(
    server: McpServer,
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<HttpServer, McpError> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let stop = CancelOnDrop::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts)
        .with_allowed_origins(options.allowed_origins)
        .enforce_origin_validation();
    config.cancellation_token = stop.token();
    let idle = options.session_idle;
    // One service per token, each with its own sessions and grants; or one for all.
    let gate = Arc::new(Gate {
        services: if options.tokens.is_empty() && options.oauth.is_none() {
            vec![(None, Served::new(&config, server.clone(), idle))]
        } else {
            options
                .tokens
                .into_iter()
                .map(|(token, grants)| {
                    let owner = format!("token {:016x}", fingerprint(&token));
                    let served =
                        Served::new(&config, granted(&server, &grants).owned_by(owner), idle);
                    (Some(token), served)
                })
                .collect()
        },
        oauth: options.oauth,
        by_client: Mutex::new(HashMap::new()),
        server,
        config,
        max_sessions: options.max_sessions,
        session_idle: idle,
        opening: Arc::default(),
        admitting: tokio::sync::Mutex::new(()),
    });
    let token = stop.token();
    let header_read_timeout = options.header_read_timeout;
    let timer = coarse::CoarseTimer::default();
    timer.run(stop.token());
    let permits = Arc::new(tokio::sync::Semaphore::new(options.max_connections));
    let task = tokio::spawn(async move {
        let mut backoff = ACCEPT_BACKOFF;
        loop {
            // A place first: past the limit, new connections wait in the listen queue.
            let permit = tokio::select! {
                () = token.cancelled() => break,
                permit = Arc::clone(&permits).acquire_owned() => permit,
            };
            let Ok(permit) = permit else { break };
            let accepted = tokio::select! {
                () = token.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _peer)) => {
                    backoff = ACCEPT_BACKOFF;
                    stream
                }
                Err(e) if accept_error_is_transient(&e) => continue,
                Err(e) => {
                    // Out of file descriptors (or memory): wait, do not spin.
                    tracing::warn!(error = %e, backoff_ms = backoff.as_millis() as u64, "accepting a connection failed");
                    tokio::select! {
                        () = token.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            // Small JSON-RPC writes go out at once (a client otherwise waits for the
            // delayed ACK, about 40 ms a call).
            let _ = stream.set_nodelay(true);
            let gate = Arc::clone(&gate);
            let service = hyper::service::service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move {
                    match gate.route(&request).await {
                        Route::Serve(service, opening) => {
                            let service = hyper_util::service::TowerToHyperService::new(service);
                            let response = hyper::service::Service::call(&service, request).await;
                            // The session, if one opens, is open now: it counts itself.
                            drop(opening);
                            response
                        }
                        Route::Answer(response) => Ok(response),
                    }
                }
            });
            let token = token.clone();
            let timer = timer.clone();
            tokio::spawn(async move {
                let _place = permit;
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(timer)
                    .header_read_timeout(header_read_timeout)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    _ = connection => {}
                    () = token.cancelled() => {}
                }
            });
        }
    });
    Ok(HttpServer { addr, stop, task })
}

type Service = StreamableHttpService<McpServer, LocalSessionManager>;

/// An HTTP response of the service's type.
type Response =
    http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>>;

/// The first wait after a failed `accept`.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Whether a failed `accept` concerns one connection only (try the next at once).
fn accept_error_is_transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionAborted
            | ErrorKind::ConnectionReset
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
    )
}

/// A service and its sessions.
#[derive(Clone)]
struct Served {
    service: Service,
    sessions: Arc<LocalSessionManager>,
    /// Requests that may be opening a session now.
    opening: Arc<AtomicUsize>,
    /// Held while a request is weighed against the client's limit.
    admitting: Arc<tokio::sync::Mutex<()>>,
}

/// A request that may open a session, counted against the limits until it is
/// answered (so requests at once cannot open more than the limits allow).
struct Opening {
    client: Arc<AtomicUsize>,
    all: Arc<AtomicUsize>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.client.fetch_sub(1, Ordering::AcqRel);
        self.all.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Served {
    /// The service for `server` with `config`, whose sessions live `idle` when idle.
    fn new(config: &StreamableHttpServerConfig, server: McpServer, idle: Duration) -> Served {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(idle);
        let sessions = Arc::new(manager);
        let service = StreamableHttpService::new(
            move || Ok(server.for_connection()),
            Arc::clone(&sessions),
            config.clone(),
        );
        Served {
            service,
            sessions,
            opening: Arc::default(),
            admitting: Arc::default(),
        }
    }

    /// How many sessions it has open now.
    async fn open(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
}

/// An OAuth client's service, and when it was last used.
struct ClientService {
    served: Served,
    used: std::time::Instant,
}

/// A token's fingerprint: what names its client without keeping the token.
fn fingerprint(token: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut hasher);
    hasher.finish()
}

/// `server` with `grants` in place of its context's grants.
fn granted(server: &McpServer, grants: &[String]) -> McpServer {
    let ctx = grants.iter().fold(
        server
            .context()
            .clone()
            .with_capabilities(tackle_core::Capabilities::default()),
        |ctx, grant| ctx.with_grant(grant.as_str()),
    );
    server.with_context(ctx)
}

/// Who gets in, and with which grants.
struct Gate {
    /// The one open service, or one per static token.
    services: Vec<(Option<String>, Served)>,
    oauth: Option<OAuthResource>,
    /// OAuth clients' services, by subject and sorted scopes.
    by_client: Mutex<HashMap<(String, Vec<String>), ClientService>>,
    server: McpServer,
    config: StreamableHttpServerConfig,
    /// Sessions at once, in all and per client.
    max_sessions: (usize, usize),
    session_idle: Duration,
    /// Requests that may be opening a session now, in all.
    opening: Arc<AtomicUsize>,
    /// Held while a request is weighed against the limit in all.
    admitting: tokio::sync::Mutex<()>,
}

/// What to do with a request.
enum Route {
    /// Serve it, holding its place among the sessions being opened, if it may open one.
    Serve(Service, Option<Opening>),
    Answer(Response),
}

impl Gate {
    /// The service for a request, or the answer it gets instead: the only service when
    /// there are no tokens; else the one of the request's static bearer token (compared
    /// in constant time), or of its OAuth access token's scopes.
    async fn route<B>(&self, request: &http::Request<B>) -> Route {
        if let Some(oauth) = &self.oauth {
            let path = request.uri().path();
            if request.method() == http::Method::GET
                && oauth.metadata_paths().iter().any(|p| p == path)
            {
                return Route::Answer(answer(
                    http::StatusCode::OK,
                    &[("content-type", "application/json".to_owned())],
                    oauth.metadata().to_string(),
                ));
            }
        }
        if let [(None, served)] = self.services.as_slice() {
            // No tokens: no client can be told from another; only the cap in all holds.
            return self.admit(request, served.clone(), false).await;
        }
        let presented = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if let Some(presented) = presented {
            let known = self.services.iter().find_map(|(token, served)| {
                token
                    .as_deref()
                    .filter(|t| same_secret(t.as_bytes(), presented.as_bytes()))
                    .map(|_| served.clone())
            });
            if let Some(served) = known {
                return self.admit(request, served, true).await;
            }
        }
        let Some(oauth) = &self.oauth else {
            return Route::Answer(unauthorized(None));
        };
        let challenge = format!("Bearer resource_metadata=\"{}\"", oauth.metadata_url());
        let Some(presented) = presented else {
            return Route::Answer(unauthorized(Some(challenge)));
        };
        let grant = match oauth.grant(presented).await {
            Ok(grant) => grant,
            Err(rejected) if rejected.is_transient() => {
                // The token may be good: the client should try again, not drop it.
                return Route::Answer(answer(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    &[("retry-after", "5".to_owned())],
                    format!("the access token could not be checked now: {rejected}"),
                ));
            }
            Err(rejected) => {
                let description = rejected.to_string().replace('"', "'");
                return Route::Answer(unauthorized(Some(format!(
                    "{challenge}, error=\"invalid_token\", error_description=\"{description}\""
                ))));
            }
        };
        let missing = oauth.missing_scopes(&grant);
        if !missing.is_empty() {
            let header = format!(
                "{challenge}, error=\"insufficient_scope\", scope=\"{}\"",
                missing.join(" ")
            );
            return Route::Answer(answer(
                http::StatusCode::FORBIDDEN,
                &[("www-authenticate", header)],
                "the access token lacks a required scope".to_owned(),
            ));
        }
        let mut scopes = grant.scopes;
        scopes.sort();
        scopes.dedup();
        // Sessions are the subject's own: another subject with the same scopes has
        // other sessions. A token without a subject is its own client.
        let owner = grant.subject.map_or_else(
            || format!("token {:016x}", fingerprint(presented)),
            |subject| format!("sub {subject}"),
        );
        let served = {
            let Ok(mut by_client) = self.by_client.lock() else {
                return Route::Answer(answer(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    &[],
                    String::new(),
                ));
            };
            let key = (owner, scopes);
            if by_client.len() >= self.max_sessions.0 && !by_client.contains_key(&key) {
                // Full: the client used longest ago with no session left goes.
                let idle = by_client
                    .iter()
                    .filter(|(_, c)| {
                        c.served
                            .sessions
                            .sessions
                            .try_read()
                            .is_ok_and(|s| s.is_empty())
                    })
                    .min_by_key(|(_, c)| c.used)
                    .map(|(k, _)| k.clone());
                match idle {
                    Some(gone) => {
                        by_client.remove(&gone);
                    }
                    None => return Route::Answer(busy("too many clients have sessions open")),
                }
            }
            let client = by_client
                .entry(key)
                .or_insert_with_key(|(owner, scopes)| ClientService {
                    served: Served::new(
                        &self.config,
                        granted(&self.server, scopes).owned_by(owner.clone()),
                        self.session_idle,
                    ),
                    used: std::time::Instant::now(),
                });
            client.used = std::time::Instant::now();
            client.served.clone()
        };
        self.admit(request, served, true).await
    }

    /// Serves the request with `served`, unless it would open a session past the
    /// limits: `429` when its client has its share open, `503` when the server does.
    async fn admit<B>(&self, request: &http::Request<B>, served: Served, known: bool) -> Route {
        let opens = request.method() == http::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        if !opens {
            return Route::Serve(served.service, None);
        }
        // Weighed one at a time, sessions open and being opened counted: of requests
        // at once, exactly as many as the limits allow pass.
        let (in_all, per_client) = self.max_sessions;
        let _client = served.admitting.lock().await;
        let _all = self.admitting.lock().await;
        {
            let client = served.open().await + served.opening.load(Ordering::Acquire);
            if known && client >= per_client {
                return Route::Answer(answer(
                    http::StatusCode::TOO_MANY_REQUESTS,
                    &[("retry-after", "60".to_owned())],
                    format!(
                        "this client has {per_client} sessions open, its most: close one (DELETE) or let one expire"
                    ),
                ));
            }
            if self.open_sessions().await + self.opening.load(Ordering::Acquire) >= in_all {
                return Route::Answer(busy("the server has as many sessions open as it holds"));
            }
        }
        served.opening.fetch_add(1, Ordering::AcqRel);
        self.opening.fetch_add(1, Ordering::AcqRel);
        let opening = Opening {
            client: Arc::clone(&served.opening),
            all: Arc::clone(&self.opening),
        };
        Route::Serve(served.service, Some(opening))
    }

    /// How many sessions are open now, in all.
    async fn open_sessions(&self) -> usize {
        let clients: Vec<Served> = self
            .by_client
            .lock()
            .map(|c| c.values().map(|c| c.served.clone()).collect())
            .unwrap_or_default();
        let mut open = 0;
        for served in self.services.iter().map(|(_, s)| s).chain(&clients) {
            open += served.open().await;
        }
        open
    }
}

/// A `503` with `Retry-After`, saying why.
fn busy(why: &str) -> Response {
    answer(
        http::StatusCode::SERVICE_UNAVAILABLE,
        &[("retry-after", "30".to_owned())],
        why.to_owned(),
    )
}

/// Whether two byte strings are equal, taking the same time wherever they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `401 Unauthorized`, asking for a bearer token (with `challenge` as the
/// `WWW-Authenticate` value, else plain `Bearer`).
fn unauthorized(challenge: Option<String>) -> Response {
    answer(
        http::StatusCode::UNAUTHORIZED,
        &[(
            "www-authenticate",
            challenge.unwrap_or_else(|| "Bearer".to_owned()),
        )],
        "a valid bearer token is required".to_owned(),
    )
}

/// A response with `status`, `headers` and `body`.
fn answer(status: http::StatusCode, headers: &[(&str, String)], body: String) -> Response {
    use http_body_util::BodyExt;
    let mut response =
        http::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)).boxed());
    *response.status_mut() = status;
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// A cancellation token that cancels when dropped.
#[derive(Debug)]
struct CancelOnDrop(CancellationToken);

impl CancelOnDrop {
    fn new() -> CancelOnDrop {
        CancelOnDrop(CancellationToken::new())
    }

    fn token(&self) -> CancellationToken {
        self.0.clone()
    }

    fn cancel(&self) {
        self.0.cancel();
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

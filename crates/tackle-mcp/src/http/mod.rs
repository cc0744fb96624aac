//! The streamable-HTTP front of an [`McpServer`]: [`serve_http`] and
//! [`serve_http_with`] accept connections within the limits of [`HttpOptions`] (hosts
//! and origins, connections, the header-read timeout) and hand each request to the
//! gate (see `gate`), which decides who gets in and with which grants; each service's
//! sessions (see `sessions`) refuse a request whose id is still in flight.

mod coarse;
mod gate;
mod sessions;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::StreamableHttpServerConfig;
use tackle_core::CancellationToken;
use tokio::net::TcpListener;

use crate::{McpError, McpServer, OAuthResource};
use gate::{fingerprint, granted, Gate, Route, Served};

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
///   subject: its sessions under every scope set its tokens hold count together;
///   [`with_max_sessions`](HttpOptions::with_max_sessions)): a request that would open
///   one more gets `503` (in all) or `429` (for the client), with `Retry-After`; requests at once are weighed one by one and cannot open
///   more (at the margin, one may be refused a moment early). A server without tokens cannot tell clients apart: only the cap in
///   all holds there. A session ends when its client deletes it or after 5 idle
///   minutes ([`with_session_idle`](HttpOptions::with_session_idle)); an idle
///   session holds about 55 KiB;
/// - at most as many OAuth clients as sessions keep a service: when full, the one
///   used longest ago that has no session left goes (never one with sessions).
///
/// Not bounded in time: a request's *body* (the header-read timeout covers its head);
/// a client that trickles bodies holds at most its connections, within the cap.
///
/// [`oauth`]: crate::oauth
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
    ///
    /// [`oauth`]: crate::oauth
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
    /// 1,024 and 64; each at least 1). A client is a static token, or an OAuth
    /// subject (the token itself when it names none): a subject's sessions count
    /// together whatever scopes its tokens hold, so one subject cycling scope sets is
    /// held to its share (`429` with `Retry-After`) while others are still served.
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
            vec![(
                None,
                Served::new(&config, server.clone(), idle, Arc::default()),
            )]
        } else {
            options
                .tokens
                .into_iter()
                .map(|(token, grants)| {
                    let owner = format!("token {:016x}", fingerprint(&token));
                    let served = Served::new(
                        &config,
                        granted(&server, &grants).owned_by(owner),
                        idle,
                        Arc::default(),
                    );
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

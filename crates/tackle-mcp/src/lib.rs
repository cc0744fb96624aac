//! The MCP bridge of tackle, on the official Rust SDK (`rmcp`).
//!
//! MCP (the Model Context Protocol) is how agents outside Rust reach tools. This crate
//! goes both ways:
//!
//! * **serving**: [`McpServer`] gives MCP clients every tool of a
//!   [`Runtime`](tackle_runtime::Runtime), over stdio ([`serve_stdio`]) or streamable
//!   HTTP ([`serve_http`], or [`serve_http_with`] and [`HttpOptions`]: loopback
//!   `Host` and `Origin` values only unless told otherwise). Every call goes
//!   through the door with the grants the server was configured with;
//! * **importing**: [`import_stdio`] and [`import_http`] register an MCP server's
//!   tools as dynamic tools under the `mcp` namespace, so they pass the same gates,
//!   validation and replay as local ones.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tackle_mcp::{identity, serve_stdio, McpServer};
//! use tackle_runtime::{Runtime, ToolContext};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let server = McpServer::new(runtime, identity!(), ToolContext::new().with_grant("tools:*"))?;
//! serve_stdio(server).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tackle_runtime::CancellationToken;
use tokio::net::TcpListener;

pub mod import;
pub mod names;
pub mod server;
pub mod stdio;

pub use import::{
    import_http, import_stdio, register_offline, ImportOptions, McpImport, ServerStderr,
};
pub use names::NameMap;
pub use server::{Identity, McpServer};
pub use stdio::{serve_io, StdioOptions, DEFAULT_MAX_LINE_BYTES};

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
    /// An imported tool could not be registered; nothing of the import stays.
    #[error("an imported tool could not be registered: {0}")]
    Register(#[from] tackle_runtime::RegistryError),
    /// A socket could not be bound or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Serves `server` over this process's stdin and stdout until the client disconnects.
/// Write logs to stderr: anything else on stdout breaks the protocol. A request line
/// longer than 16 MiB is answered with a JSON-RPC error (see [`stdio`]).
pub async fn serve_stdio(server: McpServer) -> Result<(), McpError> {
    serve_stdio_with(server, StdioOptions::default()).await
}

/// [`serve_stdio`] with another line limit.
pub async fn serve_stdio_with(server: McpServer, options: StdioOptions) -> Result<(), McpError> {
    stdio::serve_io(server, tokio::io::stdin(), tokio::io::stdout(), options).await
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
#[derive(Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Accepted `Host` values: a name or `host:port`.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values: `scheme://host:port`, `:*` for any port.
    pub allowed_origins: Vec<String>,
    /// Bearer tokens and the grants each one gives.
    tokens: Vec<(String, Vec<String>)>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("tokens", &self.tokens.len())
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
}

/// Serves `server` over streamable HTTP on `addr` with the default [`HttpOptions`]
/// (loopback hosts and origins only; use `127.0.0.1:0` for any free local port).
pub async fn serve_http(server: McpServer, addr: SocketAddr) -> Result<HttpServer, McpError> {
    serve_http_with(server, addr, HttpOptions::default()).await
}

/// Serves `server` over streamable HTTP on `addr`, accepting the hosts and origins of
/// `options`. Accepted connections set `TCP_NODELAY`, so a client's small writes are
/// not held back by Nagle's algorithm.
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
    let service_for = |server: McpServer| {
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config.clone(),
        )
    };
    // One service per token, each with its own sessions and grants; or one for all.
    let services: Arc<Vec<(Option<String>, Service)>> = Arc::new(if options.tokens.is_empty() {
        vec![(None, service_for(server))]
    } else {
        options
            .tokens
            .into_iter()
            .map(|(token, grants)| {
                let ctx = grants.iter().fold(
                    server
                        .context()
                        .clone()
                        .with_capabilities(tackle_runtime::Capabilities::default()),
                    |ctx, grant| ctx.with_grant(grant.as_str()),
                );
                (Some(token), service_for(server.with_context(ctx)))
            })
            .collect()
    });
    let token = stop.token();
    let task = tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = token.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _peer)) = accepted else {
                continue;
            };
            // Small JSON-RPC writes go out at once (a client otherwise waits for the
            // delayed ACK, about 40 ms a call).
            let _ = stream.set_nodelay(true);
            let services = Arc::clone(&services);
            let service = hyper::service::service_fn(move |request| {
                let chosen = choose(&services, &request);
                async move {
                    match chosen {
                        Some(service) => {
                            let service = hyper_util::service::TowerToHyperService::new(service);
                            hyper::service::Service::call(&service, request).await
                        }
                        None => Ok(unauthorized()),
                    }
                }
            });
            let token = token.clone();
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
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

/// The service for a request: the only one when there are no tokens, else the one of
/// the request's bearer token (compared in constant time), if any.
fn choose<B>(
    services: &[(Option<String>, Service)],
    request: &http::Request<B>,
) -> Option<Service> {
    if let [(None, service)] = services {
        return Some(service.clone());
    }
    let presented = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))?
        .trim();
    services.iter().find_map(|(token, service)| {
        token
            .as_deref()
            .filter(|t| same_secret(t.as_bytes(), presented.as_bytes()))
            .map(|_| service.clone())
    })
}

/// Whether two byte strings are equal, taking the same time wherever they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `401 Unauthorized`, asking for a bearer token.
fn unauthorized(
) -> http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>> {
    use http_body_util::BodyExt;
    let body = http_body_util::Full::new(bytes::Bytes::from_static(
        b"a valid bearer token is required",
    ))
    .boxed();
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
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

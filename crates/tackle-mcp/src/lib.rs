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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tackle_runtime::CancellationToken;
use tokio::net::TcpListener;

pub mod import;
pub mod names;
pub mod oauth;
pub mod server;
pub mod stdio;

pub use import::{
    import_http, import_stdio, register_offline, ImportOptions, McpImport, ServerStderr,
};
pub use names::NameMap;
pub use oauth::{AccessGrant, Introspection, OAuthResource, TokenRejected, TokenValidator};
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
///
/// **OAuth 2.1.** With [`with_oauth`](HttpOptions::with_oauth), the server is an OAuth
/// resource server ([`oauth`]): it serves its Protected Resource Metadata, asks
/// clients without a token to get one (`401` naming the metadata), checks presented
/// tokens with the configured validator, and serves each with its scopes as grants.
/// Static tokens, if any, are still accepted beside it.
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
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("tokens", &self.tokens.len())
            .field("oauth", &self.oauth)
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
    // One service per token, each with its own sessions and grants; or one for all.
    let gate = Arc::new(Gate {
        services: if options.tokens.is_empty() && options.oauth.is_none() {
            vec![(None, service_for(&config, server.clone()))]
        } else {
            options
                .tokens
                .into_iter()
                .map(|(token, grants)| {
                    let service = service_for(&config, granted(&server, &grants));
                    (Some(token), service)
                })
                .collect()
        },
        oauth: options.oauth,
        by_grants: Mutex::new(HashMap::new()),
        server,
        config,
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
            let gate = Arc::clone(&gate);
            let service = hyper::service::service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move {
                    match gate.route(&request).await {
                        Route::Serve(service) => {
                            let service = hyper_util::service::TowerToHyperService::new(service);
                            hyper::service::Service::call(&service, request).await
                        }
                        Route::Answer(response) => Ok(response),
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

/// An HTTP response of the service's type.
type Response =
    http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>>;

/// How many distinct grant sets of OAuth clients get a service (and sessions) of
/// their own before the oldest are dropped.
const GRANT_SETS: usize = 256;

/// The service for `server` with `config`.
fn service_for(config: &StreamableHttpServerConfig, server: McpServer) -> Service {
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config.clone(),
    )
}

/// `server` with `grants` in place of its context's grants.
fn granted(server: &McpServer, grants: &[String]) -> McpServer {
    let ctx = grants.iter().fold(
        server
            .context()
            .clone()
            .with_capabilities(tackle_runtime::Capabilities::default()),
        |ctx, grant| ctx.with_grant(grant.as_str()),
    );
    server.with_context(ctx)
}

/// Who gets in, and with which grants.
struct Gate {
    /// The one open service, or one per static token.
    services: Vec<(Option<String>, Service)>,
    oauth: Option<OAuthResource>,
    /// OAuth clients' services, by their sorted scopes.
    by_grants: Mutex<HashMap<Vec<String>, Service>>,
    server: McpServer,
    config: StreamableHttpServerConfig,
}

/// What to do with a request.
enum Route {
    Serve(Service),
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
        if let [(None, service)] = self.services.as_slice() {
            return Route::Serve(service.clone());
        }
        let presented = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if let Some(presented) = presented {
            let known = self.services.iter().find_map(|(token, service)| {
                token
                    .as_deref()
                    .filter(|t| same_secret(t.as_bytes(), presented.as_bytes()))
                    .map(|_| service.clone())
            });
            if let Some(service) = known {
                return Route::Serve(service);
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
        let Ok(mut by_grants) = self.by_grants.lock() else {
            return Route::Answer(answer(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                &[],
                String::new(),
            ));
        };
        if by_grants.len() >= GRANT_SETS && !by_grants.contains_key(&scopes) {
            by_grants.clear();
        }
        let service = by_grants
            .entry(scopes)
            .or_insert_with_key(|scopes| service_for(&self.config, granted(&self.server, scopes)))
            .clone();
        Route::Serve(service)
    }
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

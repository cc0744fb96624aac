//! Who gets in, and with which grants: the gate before an HTTP server's sessions.
//! It serves OAuth metadata, checks static bearer tokens and OAuth access tokens,
//! gives each client a service of its own (its grants, its sessions), and holds the
//! session limits in all and per client (a static token, or an OAuth subject whatever
//! scopes its tokens hold).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::sessions::Sessions;
use crate::{McpServer, OAuthResource};

pub(super) type Service = StreamableHttpService<McpServer, Sessions>;

/// An HTTP response of the service's type.
pub(super) type Response =
    http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>>;

/// A service and its sessions, and the account of the client they count against.
#[derive(Clone)]
pub(super) struct Served {
    service: Service,
    sessions: Arc<Sessions>,
    account: Arc<Account>,
}

/// One client's share of the sessions: a static token's, or an OAuth subject's, which
/// every service of that subject (one per scope set) counts against, so that cycling
/// scope sets opens no more.
#[derive(Default)]
pub(super) struct Account {
    /// The session managers of the client's services (one dropped since is gone).
    managers: Mutex<Vec<Weak<Sessions>>>,
    /// Requests that may be opening a session now.
    opening: AtomicUsize,
    /// Held while a request is weighed against the client's limit.
    admitting: tokio::sync::Mutex<()>,
}

impl Account {
    /// Counts the sessions of `sessions` as this client's.
    fn join(&self, sessions: &Arc<Sessions>) {
        let mut managers = self.managers.lock().unwrap_or_else(PoisonError::into_inner);
        managers.retain(|m| m.strong_count() > 0);
        managers.push(Arc::downgrade(sessions));
    }

    /// How many sessions the client has open now, over all its services.
    async fn open(&self) -> usize {
        let managers: Vec<Arc<Sessions>> = self
            .managers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let mut open = 0;
        for manager in managers {
            open += manager.local.sessions.read().await.len();
        }
        open
    }
}

/// A request that may open a session, counted against the limits until it is
/// answered (so requests at once cannot open more than the limits allow).
pub(super) struct Opening {
    client: Arc<Account>,
    all: Arc<AtomicUsize>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.client.opening.fetch_sub(1, Ordering::AcqRel);
        self.all.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Served {
    /// The service for `server` with `config`, whose sessions live `idle` when idle
    /// and count against `account`.
    pub(super) fn new(
        config: &StreamableHttpServerConfig,
        server: McpServer,
        idle: Duration,
        account: Arc<Account>,
    ) -> Served {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(idle);
        let sessions = Arc::new(Sessions::new(manager));
        account.join(&sessions);
        let service = StreamableHttpService::new(
            move || Ok(server.for_connection()),
            Arc::clone(&sessions),
            config.clone(),
        );
        Served {
            service,
            sessions,
            account,
        }
    }

    /// How many sessions it has open now.
    async fn open(&self) -> usize {
        self.sessions.local.sessions.read().await.len()
    }
}

/// An OAuth client's service, and when it was last used.
pub(super) struct ClientService {
    served: Served,
    used: std::time::Instant,
}

/// A token's fingerprint: what names its client without keeping the token.
pub(super) fn fingerprint(token: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut hasher);
    hasher.finish()
}

/// `server` with `grants` in place of its context's grants.
pub(super) fn granted(server: &McpServer, grants: &[String]) -> McpServer {
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
pub(super) struct Gate {
    /// The one open service, or one per static token.
    pub(super) services: Vec<(Option<String>, Served)>,
    pub(super) oauth: Option<OAuthResource>,
    /// OAuth clients' services, by subject and sorted scopes.
    pub(super) by_client: Mutex<HashMap<(String, Vec<String>), ClientService>>,
    pub(super) server: McpServer,
    pub(super) config: StreamableHttpServerConfig,
    /// Sessions at once, in all and per client.
    pub(super) max_sessions: (usize, usize),
    pub(super) session_idle: Duration,
    /// Requests that may be opening a session now, in all.
    pub(super) opening: Arc<AtomicUsize>,
    /// Held while a request is weighed against the limit in all.
    pub(super) admitting: tokio::sync::Mutex<()>,
}

/// What to do with a request.
pub(super) enum Route {
    /// Serve it, holding its place among the sessions being opened, if it may open one.
    Serve(Service, Option<Opening>),
    Answer(Response),
}

impl Gate {
    /// The service for a request, or the answer it gets instead: the only service when
    /// there are no tokens; else the one of the request's static bearer token (compared
    /// in constant time), or of its OAuth access token's scopes.
    pub(super) async fn route<B>(&self, request: &http::Request<B>) -> Route {
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
                            .local
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
            // A subject's services share one account, whatever their scopes.
            let account = (!by_client.contains_key(&key)).then(|| {
                by_client
                    .iter()
                    .find(|((owner, _), _)| *owner == key.0)
                    .map(|(_, c)| Arc::clone(&c.served.account))
                    .unwrap_or_default()
            });
            let client = by_client
                .entry(key)
                .or_insert_with_key(|(owner, scopes)| ClientService {
                    served: Served::new(
                        &self.config,
                        granted(&self.server, scopes).owned_by(owner.clone()),
                        self.session_idle,
                        account.unwrap_or_default(),
                    ),
                    used: std::time::Instant::now(),
                });
            client.used = std::time::Instant::now();
            client.served.clone()
        };
        self.admit(request, served, true).await
    }

    /// Serves the request with `served`, unless it ends a session `served` does not
    /// hold (`404`, as for an unknown session) or would open a session past the
    /// limits: `429` when its client (its account: every service of one subject) has
    /// its share open, `503` when the server does.
    async fn admit<B>(&self, request: &http::Request<B>, served: Served, known: bool) -> Route {
        if request.method() == http::Method::DELETE {
            // Only a session of this client's service can be ended; any other (another
            // subject's, or none) is unknown here, as for every other request.
            let session = request
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok());
            if let Some(session) = session {
                if !served
                    .sessions
                    .local
                    .sessions
                    .read()
                    .await
                    .contains_key(session)
                {
                    return Route::Answer(answer(
                        http::StatusCode::NOT_FOUND,
                        &[],
                        "Not Found: Session not found".to_owned(),
                    ));
                }
            }
        }
        let opens = request.method() == http::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        if !opens {
            return Route::Serve(served.service, None);
        }
        // Weighed one at a time, sessions open and being opened counted: of requests
        // at once, exactly as many as the limits allow pass.
        let (in_all, per_client) = self.max_sessions;
        let account = &served.account;
        let _client = account.admitting.lock().await;
        let _all = self.admitting.lock().await;
        {
            let client = account.open().await + account.opening.load(Ordering::Acquire);
            if known && client >= per_client {
                return Route::Answer(answer(
                    http::StatusCode::TOO_MANY_REQUESTS,
                    &[("retry-after", "60".to_owned())],
                    format!(
                        "this client has {per_client} sessions open, its most (over all its scope sets): close one (DELETE) or let one expire"
                    ),
                ));
            }
            if self.open_sessions().await + self.opening.load(Ordering::Acquire) >= in_all {
                return Route::Answer(busy("the server has as many sessions open as it holds"));
            }
        }
        account.opening.fetch_add(1, Ordering::AcqRel);
        self.opening.fetch_add(1, Ordering::AcqRel);
        let opening = Opening {
            client: Arc::clone(account),
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

//! OAuth 2.1 for imports over HTTP: tackle as the client of a protected MCP server.
//!
//! A protected MCP server answers a request without a token `401` with a
//! `WWW-Authenticate` challenge. An import given an [`OAuthClient`]
//! ([`ImportOptions::with_oauth`](crate::ImportOptions::with_oauth)) answers the
//! challenge as the MCP authorization specification says, and sends the request again:
//!
//! 1. **Discovery**: the server's Protected Resource Metadata (RFC 9728: the URL the
//!    challenge names, else the well-known paths of the server's URL), then its
//!    authorization server's metadata (RFC 8414, then OpenID Connect discovery, in the
//!    specification's order for issuers with a path). A resource that names another
//!    server than the one imported is refused.
//! 2. **Who the client is**, in the specification's order: a client registered in
//!    advance ([`ClientIdentity::Registered`]), else a client ID metadata document (the
//!    URL given to [`OAuthClient::with_client_metadata_url`], when the authorization
//!    server supports them), else dynamic client registration (RFC 7591).
//! 3. **Scopes**: the union of those asked for before, those the challenge names and
//!    the resource's `scopes_supported`; when that is empty, the authorization
//!    server's `scopes_supported`, else [`OAuthClient::with_scopes`], else none (the
//!    `scope` parameter is left out). `offline_access` is added when the
//!    authorization server lists it (so it issues a refresh token).
//! 4. **Authorization code with PKCE** (S256, and the `resource` parameter of RFC
//!    8707): the [`Authorizer`] shows the authorization URL to a person (a browser) and
//!    gives back the URL the authorization server redirected to; the code in it is
//!    exchanged for a token. Or, for a machine client, **client credentials**
//!    ([`OAuthClient::client_credentials`]): no person, no redirect.
//!
//! A `403` with `error="insufficient_scope"` is a **step-up**: the client authorizes
//! again for the scopes it has plus those the server asks for; a server that asks for
//! a scope the token already has is refused at once (it would ask forever), and any
//! other `403` is not authorized again (more scopes would not change it). A token the
//! server rejects later is **refreshed** with the refresh token when there is one
//! (rmcp's `auth` client does that in place), else authorized again. One request is
//! authorized at most twice, and the second time only for a step-up; requests that
//! waited on an authorization that failed get its error without asking the person
//! again (for 10 seconds; a request after that asks again). The person has [`AUTHORIZATION_TIMEOUT`] to authorize
//! ([`OAuthClient::with_authorization_timeout`]); an authorization needed during a
//! call also counts against the call's time limit.
//!
//! **Credentials go to one authorization server.** A client registered in advance
//! with a secret (including [`OAuthClient::client_credentials`]) sends it only to the
//! authorization server it was registered with, whose issuer it names with
//! [`OAuthClient::with_issuer`]: an import of such a client without an issuer fails
//! at once, before any request ([`McpError::Authorization`](crate::McpError::Authorization)),
//! and an MCP server whose metadata names another authorization server is refused,
//! so it cannot collect the secret. A client registered in advance without a secret
//! (a public client) keeps to the authorization server it first met, or the one given
//! to `with_issuer`. A dynamically registered client registers again with a new
//! authorization server.
//!
//! **Limits.** Discovery accepts authorization servers on private addresses only when
//! the MCP server's own URL is loopback or private (rmcp's rule). HTTPS needs the
//! feature `tls`. The client-credentials grant names the server's URL as its
//! `resource`. rmcp logs the authorization code at `debug` level under
//! `rmcp::transport::auth`: keep that target above `debug` where logs are kept.
//!
//! **Tokens stay out of everything tackle records**: they travel in the HTTP
//! `Authorization` header only, never in a call's input or result, so no cassette,
//! journal, audit record or error holds one; errors name what failed, not the token
//! or the authorization code, and an authorization server's error text is cut to 512
//! characters. The client secret is not shown by `Debug`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationCallback, OAuthClientConfig};
use rmcp::transport::{
    AuthClient, AuthorizationManager, ClientCredentialsConfig, WWWAuthenticateParams,
};

/// The future an [`Authorizer`] returns: the URL the authorization server redirected
/// the person's browser to (with `code` and `state`), or why there is none.
pub type AuthorizeFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The person's part of an authorization: open `url` (the authorization server's
/// page, with PKCE and `state` already in it), let the person approve, and give back
/// the redirect URL the browser was sent to. A desktop program opens a browser and
/// listens on its redirect URI; a test against an authorization server that approves
/// at once reads the `Location` of its answer.
pub trait Authorizer: Send + Sync + 'static {
    /// Authorizes at `url`; the redirect URL, or why not.
    fn authorize(&self, url: String) -> AuthorizeFuture<'_>;
}

impl<F, Fut> Authorizer for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn authorize(&self, url: String) -> AuthorizeFuture<'_> {
        Box::pin(self(url))
    }
}

/// Who the client is to the authorization server.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientIdentity {
    /// Registered in advance: its ID and, for a confidential client, its secret (sent
    /// as the authorization server's metadata asks: HTTP Basic, or in the body).
    Registered {
        /// The client ID.
        client_id: String,
        /// The client secret (`None`: a public client).
        client_secret: Option<String>,
    },
    /// Registered when needed: a client ID metadata document when the authorization
    /// server supports them and one is given, else dynamic client registration.
    Dynamic,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::Registered {
                client_id,
                client_secret,
            } => f
                .debug_struct("Registered")
                .field("client_id", client_id)
                .field(
                    "client_secret",
                    &client_secret.as_ref().map(|_| "[REDACTED]"),
                )
                .finish(),
            ClientIdentity::Dynamic => f.write_str("Dynamic"),
        }
    }
}

/// How an import over HTTP gets its access tokens (see the [module docs](self)).
#[derive(Clone)]
pub struct OAuthClient {
    pub(crate) identity: ClientIdentity,
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) issuer: Option<String>,
    pub(crate) authorization_timeout: std::time::Duration,
}

/// How long the person has to authorize, unless
/// [`OAuthClient::with_authorization_timeout`] says otherwise: 5 minutes.
pub const AUTHORIZATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// How tokens are granted.
#[derive(Clone)]
pub(crate) enum Grant {
    /// Authorization code with PKCE: a person approves through the authorizer, which
    /// is sent to `redirect_uri`.
    Code {
        redirect_uri: String,
        authorizer: Arc<dyn Authorizer>,
    },
    /// Client credentials: the client's own, no person.
    ClientCredentials,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::Code { redirect_uri, .. } => format!("authorization code via {redirect_uri}"),
            Grant::ClientCredentials => "client credentials".to_owned(),
        };
        f.debug_struct("OAuthClient")
            .field("identity", &self.identity)
            .field("grant", &grant)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .field("authorization_timeout", &self.authorization_timeout)
            .finish()
    }
}

impl OAuthClient {
    /// The authorization-code flow: `authorizer` shows the authorization page to a
    /// person, and the authorization server sends the browser to `redirect_uri`. The
    /// client is registered dynamically unless [`with_registered_client`] or
    /// [`with_client_metadata_url`] says otherwise.
    ///
    /// [`with_registered_client`]: OAuthClient::with_registered_client
    /// [`with_client_metadata_url`]: OAuthClient::with_client_metadata_url
    pub fn new(redirect_uri: impl Into<String>, authorizer: impl Authorizer) -> OAuthClient {
        OAuthClient {
            identity: ClientIdentity::Dynamic,
            grant: Grant::Code {
                redirect_uri: redirect_uri.into(),
                authorizer: Arc::new(authorizer),
            },
            client_name: "tackle".to_owned(),
            client_metadata_url: None,
            scopes: Vec::new(),
            issuer: None,
            authorization_timeout: AUTHORIZATION_TIMEOUT,
        }
    }

    /// The client-credentials flow (OAuth's grant for a machine acting for itself):
    /// a client registered in advance with a secret, no person and no redirect. Name
    /// the issuer it was registered with ([`with_issuer`](OAuthClient::with_issuer)):
    /// without it, an import refuses to send the secret anywhere.
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OAuthClient {
        OAuthClient {
            identity: ClientIdentity::Registered {
                client_id: client_id.into(),
                client_secret: Some(client_secret.into()),
            },
            grant: Grant::ClientCredentials,
            client_name: "tackle".to_owned(),
            client_metadata_url: None,
            scopes: Vec::new(),
            issuer: None,
            authorization_timeout: AUTHORIZATION_TIMEOUT,
        }
    }

    /// Uses a client registered in advance with the authorization server. With a
    /// secret, name that server's issuer too
    /// ([`with_issuer`](OAuthClient::with_issuer)): without it, an import refuses to
    /// send the secret anywhere.
    pub fn with_registered_client(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> OAuthClient {
        self.identity = ClientIdentity::Registered {
            client_id: client_id.into(),
            client_secret,
        };
        self
    }

    /// The HTTPS URL of this client's metadata document (its client ID where the
    /// authorization server supports client ID metadata documents).
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> OAuthClient {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The name a dynamically registered client gives (default `tackle`).
    pub fn with_client_name(mut self, name: impl Into<String>) -> OAuthClient {
        self.client_name = name.into();
        self
    }

    /// Scopes to ask for when neither the server's challenge nor any metadata names
    /// one (default: none).
    pub fn with_scopes(
        mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> OAuthClient {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sends credentials only to the authorization server whose issuer is `issuer`:
    /// an MCP server that names another is refused, so it cannot collect them.
    /// Required of a client registered in advance with a secret; a public client is
    /// otherwise kept to the first authorization server it met.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> OAuthClient {
        self.issuer = Some(issuer.into());
        self
    }

    /// How long the person has to authorize (default [`AUTHORIZATION_TIMEOUT`]).
    pub fn with_authorization_timeout(mut self, limit: std::time::Duration) -> OAuthClient {
        self.authorization_timeout = limit;
        self
    }

    /// Who the client is.
    pub fn identity(&self) -> &ClientIdentity {
        &self.identity
    }

    /// Why this client cannot be used as it is configured: a client registered in
    /// advance with a secret that does not name the issuer it was registered with.
    pub(crate) fn check(&self) -> Result<(), String> {
        match (&self.identity, &self.issuer) {
            (
                ClientIdentity::Registered {
                    client_secret: Some(_),
                    ..
                },
                None,
            ) => Err(
                "a client registered in advance with a secret sends it only to the authorization \
                 server it was registered with: name that server's issuer with \
                 `OAuthClient::with_issuer` (without it, the MCP server would choose who gets the \
                 secret)"
                    .to_owned(),
            ),
            _ => Ok(()),
        }
    }
}

/// How many times one request may be authorized: once for a `401`, once more for a
/// step-up (a `403` with `error="insufficient_scope"`).
pub(crate) const AUTHORIZATIONS_PER_REQUEST: usize = 2;

/// How long a failed authorization answers the requests that waited on it (10 s);
/// a request after that asks again.
const FAILED_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest an error message from an authorization server is kept: its text goes
/// into errors and from there into audit records.
const MESSAGE_CHARS: usize = 512;

/// A server's challenge to a request: its `WWW-Authenticate` header, and whether it
/// came with `403` (forbidden with a token) rather than `401` (no usable token).
pub(crate) struct Challenge<'a> {
    pub(crate) header: &'a str,
    pub(crate) forbidden: bool,
}

impl<'a> Challenge<'a> {
    /// The challenge behind a failed request, if it was refused for authorization.
    pub(crate) fn of_service(error: &'a rmcp::ServiceError) -> Option<Challenge<'a>> {
        let header = error.auth_challenge()?;
        let forbidden = match error {
            rmcp::ServiceError::TransportSend(sent) => forbidden(sent.error.as_ref()),
            _ => false,
        };
        Some(Challenge { header, forbidden })
    }

    /// The challenge behind a failed `initialize`, if it was refused for
    /// authorization.
    pub(crate) fn of_initialize(
        error: &'a rmcp::service::ClientInitializeError,
    ) -> Option<Challenge<'a>> {
        let header = error.auth_challenge()?;
        Some(Challenge {
            header,
            forbidden: initialize_forbidden(error),
        })
    }

    /// Whether this challenge asks for more scopes (a step-up).
    pub(crate) fn is_step_up(&self) -> bool {
        self.forbidden && self.header.contains("insufficient_scope")
    }
}

/// Whether `error` was a `403` (rmcp's `InsufficientScopeError` somewhere in its
/// sources) rather than a `401`.
fn forbidden(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current
            .downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
            .is_some()
        {
            return true;
        }
        source = current.source();
    }
    false
}

/// Whether a failed `initialize` was a `403`.
fn initialize_forbidden(error: &rmcp::service::ClientInitializeError) -> bool {
    use rmcp::service::ClientInitializeError;
    match error {
        ClientInitializeError::TransportError { error, .. } => forbidden(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            initialize_forbidden(fallback)
        }
        _ => false,
    }
}

/// `message` cut to [`MESSAGE_CHARS`] characters.
fn cut(message: String) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}...", &message[..at]),
        None => message,
    }
}

/// What the import learned while authorizing, kept under the gate.
#[derive(Default)]
struct Gate {
    /// The authorization server the client was identified to (its issuer), once it
    /// was: a client registered in advance sends its secret to no other.
    issuer: Option<String>,
    /// Whether the client was identified (registered, or configured).
    identified: bool,
    /// The scopes asked for and granted last (a token response may not say).
    scopes: Vec<String>,
    /// The last authorization that failed, for the token count it started from, and
    /// when: requests that were waiting on the same token get its error without
    /// asking the person again, for [`FAILED_FOR`]; after that, asking again is the
    /// person's retry.
    failed: Option<(u64, std::time::Instant, String)>,
}

/// The time spent answering challenges: the union of the answers' spans, so that
/// answers at once count once.
#[derive(Default)]
struct Clock {
    spent: std::time::Duration,
    open: usize,
    since: Option<std::time::Instant>,
}

/// An answer to a challenge in progress, on the clock until dropped.
struct Answering<'a>(&'a std::sync::Mutex<Clock>);

impl<'a> Answering<'a> {
    fn start(clock: &'a std::sync::Mutex<Clock>) -> Answering<'a> {
        let mut now = clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now.open == 0 {
            now.since = Some(std::time::Instant::now());
        }
        now.open += 1;
        Answering(clock)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        let mut now = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        now.open = now.open.saturating_sub(1);
        if now.open == 0 {
            if let Some(since) = now.since.take() {
                now.spent += since.elapsed();
            }
        }
    }
}

/// The OAuth state of one import: rmcp's authorizing HTTP client (which adds the
/// token to every request and refreshes it) and what answering a challenge needs.
pub(crate) struct Authorization {
    config: OAuthClient,
    /// The HTTP client of the import's transports; every connection shares its
    /// token.
    pub(crate) client: AuthClient<reqwest::Client>,
    base_url: reqwest::Url,
    /// Held while authorizing: one authorization at a time.
    gate: tokio::sync::Mutex<Gate>,
    /// How many tokens were obtained: a request that failed before the last one was
    /// obtained is sent again without authorizing again.
    tokens: AtomicU64,
    /// The time spent answering challenges (the person's included), which an
    /// import's time limit does not count.
    clock: std::sync::Mutex<Clock>,
}

impl Authorization {
    /// The OAuth state for the MCP server at `url`. A client registered in advance
    /// with a secret must name the issuer it was registered with
    /// ([`OAuthClient::with_issuer`]): otherwise the secret would go to whichever
    /// authorization server the MCP server names.
    pub(crate) async fn new(url: &str, config: OAuthClient) -> Result<Authorization, String> {
        config.check()?;
        let base_url = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Authorization {
            config,
            client: AuthClient::new(reqwest::Client::new(), manager),
            base_url,
            gate: tokio::sync::Mutex::new(Gate::default()),
            tokens: AtomicU64::new(0),
            clock: std::sync::Mutex::default(),
        })
    }

    /// The time spent answering challenges so far, the one under way included.
    pub(crate) fn time_authorizing(&self) -> std::time::Duration {
        let clock = self
            .clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clock.spent
            + clock
                .since
                .map_or(std::time::Duration::ZERO, |s| s.elapsed())
    }

    /// How many tokens were obtained so far (see [`Authorization::answer`]).
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::Acquire)
    }

    /// Answers the server's challenge to a request sent when `seen` tokens had been
    /// obtained: gets a token, or a token with more scopes. `Ok(true)` when it
    /// authorized, `Ok(false)` when another request got a new token meanwhile (send
    /// again with that one).
    pub(crate) async fn answer(
        &self,
        challenge: &Challenge<'_>,
        seen: u64,
    ) -> Result<bool, String> {
        let _answering = Answering::start(&self.clock);
        let mut gate = self.gate.lock().await;
        if self.tokens() != seen {
            return Ok(false);
        }
        if let Some((at, when, error)) = &gate.failed {
            if *at == seen && when.elapsed() < FAILED_FOR {
                return Err(error.clone());
            }
        }
        let answered = self.authorize(&mut gate, challenge).await;
        match answered {
            Ok(()) => {
                gate.failed = None;
                self.tokens.fetch_add(1, Ordering::AcqRel);
                Ok(true)
            }
            Err(error) => {
                let error = cut(error);
                gate.failed = Some((seen, std::time::Instant::now(), error.clone()));
                Err(error)
            }
        }
    }

    /// One authorization: discovery, identification, then a token by the code flow
    /// (the person, through the authorizer) or by client credentials.
    async fn authorize(&self, gate: &mut Gate, challenge: &Challenge<'_>) -> Result<(), String> {
        let params = WWWAuthenticateParams::parse(challenge.header, &self.base_url);
        if challenge.forbidden && !challenge.is_step_up() {
            return Err(format!(
                "the server forbids this ({}), and more scopes would not change that",
                params.error.as_deref().unwrap_or("403 without a reason")
            ));
        }
        let step_up = challenge.is_step_up() && gate.identified;
        let mut manager = self.client.auth_manager.lock().await;
        let mut documents = false;
        if step_up {
            let required: Vec<String> = params
                .scope
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if required.is_empty() {
                return Err(
                    "the server refuses the token for lacking a scope it does not name".to_owned(),
                );
            }
            let mut granted = manager.get_current_scopes().await;
            granted.extend(gate.scopes.iter().cloned());
            if required.iter().all(|s| granted.contains(s)) {
                return Err(format!(
                    "the server refuses the token for lacking scope `{}`, which was asked for already; not authorizing again",
                    required.join(" ")
                ));
            }
        } else {
            let resolution = manager
                .resolve_metadata_from_challenge(Some(challenge.header))
                .await
                .map_err(|e| format!("authorization discovery failed: {e}"))?;
            let issuer = resolution.metadata.issuer.clone();
            if let (ClientIdentity::Registered { .. }, Some(pinned)) = (
                &self.config.identity,
                self.config.issuer.as_ref().or(gate.issuer.as_ref()),
            ) {
                if issuer.as_ref() != Some(pinned) {
                    return Err(format!(
                        "the server now names the authorization server {}, not {pinned}; a client registered in advance sends its credentials to no other",
                        issuer.as_deref().unwrap_or("(no issuer)")
                    ));
                }
            }
            if gate.identified && issuer != gate.issuer {
                // Another authorization server: the client is not known there.
                gate.identified = false;
            }
            gate.issuer = issuer;
            documents = resolution
                .metadata
                .additional_fields
                .get("client_id_metadata_document_supported")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            manager.set_metadata(resolution.metadata);
        }
        let defaults: Vec<&str> = self.config.scopes.iter().map(String::as_str).collect();
        let mut scopes = manager.select_scopes(params.scope.as_deref(), &defaults);
        if step_up {
            for scope in &gate.scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        }
        let url = match &self.config.grant {
            Grant::ClientCredentials => {
                let ClientIdentity::Registered {
                    client_id,
                    client_secret: Some(client_secret),
                } = &self.config.identity
                else {
                    return Err("client credentials need a client ID and secret".to_owned());
                };
                let credentials = ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    scopes: scopes.clone(),
                    resource: Some(self.base_url.to_string()),
                };
                manager
                    .configure_client_credentials(&credentials)
                    .map_err(|e| format!("the client cannot be configured: {e}"))?;
                manager
                    .exchange_client_credentials(&credentials)
                    .await
                    .map_err(|e| format!("the client-credentials grant failed: {e}"))?;
                gate.identified = true;
                gate.scopes = scopes;
                return Ok(());
            }
            Grant::Code { redirect_uri, .. } => {
                if !gate.identified {
                    self.identify(&mut manager, redirect_uri, &scopes, documents)
                        .await?;
                    gate.identified = true;
                }
                let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                manager
                    .get_authorization_url(&scope_refs)
                    .await
                    .map_err(|e| format!("no authorization URL: {e}"))?
            }
        };
        // The person may take their time: other requests wait on the gate, not on
        // the manager.
        drop(manager);
        let Grant::Code { authorizer, .. } = &self.config.grant else {
            return Err("only the code grant has an authorizer".to_owned());
        };
        let redirect =
            tokio::time::timeout(self.config.authorization_timeout, authorizer.authorize(url))
                .await
                .map_err(|_| {
                    format!(
                        "the authorization was not completed within {} s",
                        self.config.authorization_timeout.as_secs()
                    )
                })?
                .map_err(|e| format!("the authorization was not completed: {e}"))?;
        let callback = AuthorizationCallback::from_redirect_url(&redirect)
            .map_err(|e| format!("the authorization server's redirect is not usable: {e}"))?;
        self.client
            .auth_manager
            .lock()
            .await
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|e| format!("the authorization code could not be exchanged: {e}"))?;
        gate.scopes = scopes;
        Ok(())
    }

    /// Tells the authorization server who the client is: registered in advance, a
    /// client ID metadata document (when the server `supports_documents`), or a
    /// dynamic registration, in that order.
    async fn identify(
        &self,
        manager: &mut AuthorizationManager,
        redirect_uri: &str,
        scopes: &[String],
        supports_documents: bool,
    ) -> Result<(), String> {
        let config = match (&self.config.identity, &self.config.client_metadata_url) {
            (
                ClientIdentity::Registered {
                    client_id,
                    client_secret,
                },
                _,
            ) => {
                let config = OAuthClientConfig::new(client_id.clone(), redirect_uri);
                match client_secret {
                    Some(secret) => config.with_client_secret(secret.clone()),
                    None => config,
                }
            }
            (ClientIdentity::Dynamic, Some(document)) if supports_documents => {
                OAuthClientConfig::new(document.clone(), redirect_uri)
            }
            (ClientIdentity::Dynamic, _) => {
                let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                manager
                    .register_client(&self.config.client_name, redirect_uri, &scope_refs)
                    .await
                    .map_err(|e| format!("dynamic client registration failed: {e}"))?
            }
        };
        manager
            .configure_client(config)
            .map_err(|e| format!("the client cannot be configured: {e}"))
    }
}

//! OAuth 2.1 for MCP over HTTP: the server as a resource server.
//!
//! The MCP authorization specification makes an HTTP server an OAuth 2.1 *resource
//! server*: clients get access tokens from an authorization server and present them as
//! `Authorization: Bearer <token>`; the server checks each token and that it was
//! issued for this server (its audience), and tells clients without one where to get
//! one. [`OAuthResource`], given to [`HttpOptions::with_oauth`](crate::HttpOptions::with_oauth),
//! does that:
//!
//! * serves its Protected Resource Metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource` and at that path followed by the
//!   resource's own path (`.../oauth-protected-resource/mcp`): the resource, its
//!   authorization servers, the scopes it knows, bearer tokens in the header;
//! * answers a request without a token `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="<metadata URL>"`, one with a token
//!   its [`TokenValidator`] rejects `401` with `error="invalid_token"`, and one whose
//!   token lacks a required scope `403` with `error="insufficient_scope"`; none of
//!   them reaches the door;
//! * serves an accepted request with the token's **scopes as grants**: a token with
//!   scope `tools:weather` can call the tools that require `tools:weather`, nothing
//!   else (deny by default, as everywhere).
//!
//! The OAuth client side (discovery, dynamic registration, PKCE, refresh) is the
//! client's: the official SDKs' clients, and rmcp's `auth` feature for Rust clients,
//! start from the `401` and the metadata this module serves.
//!
//! Checking a token is a [`TokenValidator`]. tackle ships [`Introspection`] (RFC
//! 7662: the authorization server says whether a token is active, for whom, with which
//! scopes); a validator for self-contained tokens (JWTs checked against the
//! authorization server's keys) plugs in the same way. Accepted tokens are remembered
//! until they expire (at most 5 minutes, at most 1024 tokens), so a client's session
//! does not cost one introspection per message.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// How long an accepted token is remembered, at most.
const REMEMBER: Duration = Duration::from_secs(300);

/// How many accepted tokens are remembered, at most.
const REMEMBERED: usize = 1024;

/// The largest introspection answer read.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// What an accepted token gives its bearer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessGrant {
    /// Whom the token was issued to (`sub`), when the validator knows.
    pub subject: Option<String>,
    /// The token's scopes: the bearer's grants at the door.
    pub scopes: Vec<String>,
    /// When the token expires, when the validator knows.
    pub expires_at: Option<SystemTime>,
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenRejected {
    /// The token is not active: unknown, revoked or expired.
    #[error("the token is not active")]
    Inactive,
    /// The token was issued for another resource (its audience is not this server).
    #[error("the token was issued for another resource")]
    WrongAudience,
    /// The validator could not decide (the authorization server did not answer).
    #[error("the token could not be checked: {0}")]
    Unavailable(String),
}

/// The future a [`TokenValidator`] returns.
pub type ValidateFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AccessGrant, TokenRejected>> + Send + 'a>>;

/// Checks an access token presented to the server.
pub trait TokenValidator: Send + Sync {
    /// The grant of `token`, if it is active and was issued for `resource`.
    fn validate<'a>(&'a self, token: &'a str, resource: &'a str) -> ValidateFuture<'a>;
}

/// Token introspection (RFC 7662): asks the authorization server about each token,
/// authenticating as this resource server with HTTP Basic credentials.
///
/// A token is accepted when the answer says `active: true`, its `aud` names this
/// resource, and its `exp` (if any) is in the future; its `scope` becomes the grants.
#[derive(Clone)]
pub struct Introspection {
    endpoint: String,
    client_id: String,
    client_secret: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Introspects at `endpoint` as the client `client_id` / `client_secret`, waiting at
    /// most 10 seconds for an answer.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Introspection {
        Introspection {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
        }
    }

    async fn introspect(&self, token: &str, resource: &str) -> Result<AccessGrant, TokenRejected> {
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let response = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| TokenRejected::Unavailable(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(TokenRejected::Unavailable(format!(
                "introspection answered {}",
                response.status()
            )));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_ANSWER_BYTES)
        {
            return Err(TokenRejected::Unavailable(
                "the introspection answer is too large".to_owned(),
            ));
        }
        let text = response
            .bytes()
            .await
            .map_err(|e| TokenRejected::Unavailable(e.without_url().to_string()))?;
        if text.len() as u64 > MAX_ANSWER_BYTES {
            return Err(TokenRejected::Unavailable(
                "the introspection answer is too large".to_owned(),
            ));
        }
        let answer: Value = serde_json::from_slice(&text)
            .map_err(|e| TokenRejected::Unavailable(format!("introspection answer: {e}")))?;
        grant_of(&answer, resource, SystemTime::now())
    }
}

impl TokenValidator for Introspection {
    fn validate<'a>(&'a self, token: &'a str, resource: &'a str) -> ValidateFuture<'a> {
        Box::pin(self.introspect(token, resource))
    }
}

/// The grant an introspection answer gives, checked against `resource` and `now`.
fn grant_of(answer: &Value, resource: &str, now: SystemTime) -> Result<AccessGrant, TokenRejected> {
    if answer["active"] != Value::Bool(true) {
        return Err(TokenRejected::Inactive);
    }
    let audience_ok = match &answer["aud"] {
        Value::String(aud) => same_resource(aud, resource),
        Value::Array(auds) => auds
            .iter()
            .filter_map(Value::as_str)
            .any(|aud| same_resource(aud, resource)),
        _ => false,
    };
    if !audience_ok {
        return Err(TokenRejected::WrongAudience);
    }
    // An `exp` past what the clock can hold is as good as never.
    let expires_at = answer["exp"]
        .as_u64()
        .and_then(|exp| UNIX_EPOCH.checked_add(Duration::from_secs(exp)));
    if expires_at.is_some_and(|at| at <= now) {
        return Err(TokenRejected::Inactive);
    }
    Ok(AccessGrant {
        subject: answer["sub"].as_str().map(str::to_owned),
        scopes: answer["scope"]
            .as_str()
            .unwrap_or("")
            .split_ascii_whitespace()
            .map(str::to_owned)
            .collect(),
        expires_at,
    })
}

/// Whether two resource URIs name the same resource (a trailing `/` aside).
fn same_resource(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// This server as an OAuth 2.1 resource server (see the [module docs](self)).
#[derive(Clone)]
pub struct OAuthResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    validator: Arc<dyn TokenValidator>,
    remembered: Arc<Mutex<HashMap<String, (AccessGrant, Instant)>>>,
}

impl std::fmt::Debug for OAuthResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthResource")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl OAuthResource {
    /// The server at `resource` (its canonical URI as clients reach it, e.g.
    /// `https://tools.example.com/mcp`), whose tokens come from `authorization_server`
    /// (its issuer URL) and are checked by `validator`.
    pub fn new(
        resource: impl Into<String>,
        authorization_server: impl Into<String>,
        validator: impl TokenValidator + 'static,
    ) -> OAuthResource {
        OAuthResource {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            validator: Arc::new(validator),
            remembered: Arc::default(),
        }
    }

    /// Lists `scopes` in the metadata as the scopes this server understands.
    pub fn with_scopes_supported(
        mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> OAuthResource {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Refuses (`403 insufficient_scope`) a token without `scope`.
    pub fn with_required_scope(mut self, scope: impl Into<String>) -> OAuthResource {
        self.required_scopes.push(scope.into());
        self
    }

    /// The resource's URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(self.scopes_supported);
        }
        document
    }

    /// The paths the metadata is served at: the well-known path, and it followed by
    /// the resource's path.
    pub fn metadata_paths(&self) -> [String; 2] {
        let (_, path) = split_resource(&self.resource);
        let base = "/.well-known/oauth-protected-resource".to_owned();
        let suffixed = format!("{base}{}", path.trim_end_matches('/'));
        [base, suffixed]
    }

    /// The URL of the metadata, as `WWW-Authenticate` gives it.
    pub fn metadata_url(&self) -> String {
        let (origin, _) = split_resource(&self.resource);
        let [_, suffixed] = self.metadata_paths();
        format!("{origin}{suffixed}")
    }

    /// The grant of a presented token: remembered, or asked of the validator.
    pub(crate) async fn grant(&self, token: &str) -> Result<AccessGrant, TokenRejected> {
        let now = Instant::now();
        if let Ok(remembered) = self.remembered.lock() {
            if let Some((grant, until)) = remembered.get(token) {
                if *until > now {
                    return Ok(grant.clone());
                }
            }
        }
        let grant = self.validator.validate(token, &self.resource).await?;
        let until = grant
            .expires_at
            .and_then(|at| at.duration_since(SystemTime::now()).ok())
            .map_or(REMEMBER, |left| left.min(REMEMBER));
        if let Ok(mut remembered) = self.remembered.lock() {
            if remembered.len() >= REMEMBERED {
                remembered.retain(|_, (_, until)| *until > now);
                if remembered.len() >= REMEMBERED {
                    remembered.clear();
                }
            }
            remembered.insert(token.to_owned(), (grant.clone(), now + until));
        }
        Ok(grant)
    }

    /// The required scopes the grant lacks.
    pub(crate) fn missing_scopes(&self, grant: &AccessGrant) -> Vec<&str> {
        self.required_scopes
            .iter()
            .filter(|s| !grant.scopes.contains(s))
            .map(String::as_str)
            .collect()
    }
}

/// A resource URI's origin (`scheme://authority`) and path.
fn split_resource(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |at| at + 3);
    match resource[after_scheme..].find('/') {
        Some(at) => resource.split_at(after_scheme + at),
        None => (resource, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn introspection_answers_are_checked() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let resource = "http://127.0.0.1:9/mcp";
        let ok = json!({"active": true, "aud": "http://127.0.0.1:9/mcp/", "scope": "a b", "sub": "ada", "exp": 2_000});
        let grant = grant_of(&ok, resource, now).unwrap();
        assert_eq!(grant.scopes, ["a", "b"]);
        assert_eq!(grant.subject.as_deref(), Some("ada"));
        let far = json!({"active": true, "aud": resource, "exp": u64::MAX});
        assert_eq!(grant_of(&far, resource, now).unwrap().expires_at, None);
        let listed = json!({"active": true, "aud": ["other", resource]});
        assert!(grant_of(&listed, resource, now).is_ok());
        for (answer, why) in [
            (
                json!({"active": false, "aud": resource}),
                TokenRejected::Inactive,
            ),
            (json!({"aud": resource}), TokenRejected::Inactive),
            (
                json!({"active": true, "aud": "http://elsewhere/mcp"}),
                TokenRejected::WrongAudience,
            ),
            (json!({"active": true}), TokenRejected::WrongAudience),
            (
                json!({"active": true, "aud": resource, "exp": 999}),
                TokenRejected::Inactive,
            ),
        ] {
            assert_eq!(grant_of(&answer, resource, now), Err(why), "{answer}");
        }
    }

    #[test]
    fn metadata_lives_beside_the_resource() {
        struct Never;
        impl TokenValidator for Never {
            fn validate<'a>(&'a self, _: &'a str, _: &'a str) -> ValidateFuture<'a> {
                Box::pin(async { Err(TokenRejected::Inactive) })
            }
        }
        let oauth = OAuthResource::new(
            "https://tools.example.com/mcp",
            "https://as.example.com",
            Never,
        );
        assert_eq!(
            oauth.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp"
            ]
        );
        assert_eq!(
            oauth.metadata_url(),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            oauth.metadata()["authorization_servers"],
            json!(["https://as.example.com"])
        );
        assert_eq!(form_encode("a b+c/é"), "a+b%2Bc%2F%C3%A9");
    }
}

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
//!   token lacks a required scope `403` with `error="insufficient_scope"`; a token
//!   that cannot be checked now (the authorization server is down, or checks are
//!   rate-limited) gets `503` with `Retry-After`, not `invalid_token`: the client's
//!   token may be good. None of them reaches the door;
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
//! until they expire (at most 5 minutes, at most 1024 tokens, the one closest to
//! expiring dropped first), so a client's session does not cost one introspection per
//! message. Refused tokens are remembered for 30 seconds (at most 4096), and checks
//! are limited to 20 a second (bursts of 50) and 8 at once, so junk tokens cannot turn
//! the server into a flood against its authorization server. An introspection answer
//! is read as it streams and dropped past 64 KiB.

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

/// The longest token checked; a longer one is refused without a question.
const MAX_TOKEN_BYTES: usize = 4096;

/// How long a refused token is remembered.
const REMEMBER_REFUSED: Duration = Duration::from_secs(30);

/// How many refused tokens are remembered, at most.
const REFUSED: usize = 4096;

/// Token checks a second, on average, and in a burst.
const CHECKS_PER_SECOND: f64 = 20.0;
const CHECK_BURST: f64 = 50.0;

/// Token checks at once, at most.
const CHECKS_AT_ONCE: usize = 8;

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
    /// Too many tokens are being checked: the server does not ask its authorization
    /// server now.
    #[error("too many token checks; try again shortly")]
    Throttled,
}

impl TokenRejected {
    /// Whether the token may be good and could be checked later (the answer is `503`,
    /// not `invalid_token`).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            TokenRejected::Unavailable(_) | TokenRejected::Throttled
        )
    }
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
/// resource, its `exp` (if any) is in the future and its `nbf` (if any) is not; its
/// `scope` becomes the grants. `exp` and `nbf` are read as numbers of seconds whether
/// they come as integers, fractions or strings; one that is not a number refuses the
/// token. The answer is read as it streams, and dropped past 64 KiB.
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
        let too_large =
            || TokenRejected::Unavailable("the introspection answer is too large".to_owned());
        if response
            .content_length()
            .is_some_and(|length| length > MAX_ANSWER_BYTES)
        {
            return Err(too_large());
        }
        let mut response = response;
        let mut text = Vec::new();
        // Read as it streams: an answer without a length is cut off at the limit,
        // not held whole first.
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| TokenRejected::Unavailable(e.without_url().to_string()))?
        {
            if (text.len() + chunk.len()) as u64 > MAX_ANSWER_BYTES {
                return Err(too_large());
            }
            text.extend_from_slice(&chunk);
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
    // An `exp` past what the clock can hold is as good as never; an `nbf` past it,
    // as good as not yet.
    let expires_at = numeric_date(&answer["exp"])?
        .and_then(|exp| UNIX_EPOCH.checked_add(Duration::from_secs(exp)));
    if expires_at.is_some_and(|at| at <= now) {
        return Err(TokenRejected::Inactive);
    }
    if let Some(nbf) = numeric_date(&answer["nbf"])? {
        let valid_from = UNIX_EPOCH.checked_add(Duration::from_secs(nbf));
        if valid_from.is_none_or(|from| from > now) {
            return Err(TokenRejected::Inactive);
        }
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

/// A JSON "numeric date" (seconds since the epoch), whatever JSON type it comes as:
/// absent or `null` is none; an integer, a fraction (rounded down, a negative one as 0)
/// or a string holding one is read; anything else refuses the token.
fn numeric_date(value: &Value) -> Result<Option<u64>, TokenRejected> {
    let seconds = |f: f64| {
        if f.is_finite() {
            // Saturating: a date past u64 is as good as never (or not yet).
            Ok(Some(f.max(0.0).floor() as u64))
        } else {
            Err(TokenRejected::Inactive)
        }
    };
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(n) => Ok(Some(n)),
            None => seconds(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => match s.trim().parse::<u64>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => seconds(s.trim().parse::<f64>().unwrap_or(f64::NAN)),
        },
        _ => Err(TokenRejected::Inactive),
    }
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
    /// Accepted tokens, by a keyed hash of their text, and until when.
    remembered: Arc<Mutex<HashMap<u64, (AccessGrant, Instant)>>>,
    /// Refused tokens, by a keyed hash of their text, and until when.
    refused: Arc<Mutex<HashMap<u64, (TokenRejected, Instant)>>>,
    /// The hash's keys: random, so no one can make a token that hashes as another.
    keys: std::collections::hash_map::RandomState,
    /// The token bucket of checks: tokens left, and when it was last filled.
    bucket: Arc<Mutex<(f64, Instant)>>,
    /// Checks at once.
    checks: Arc<tokio::sync::Semaphore>,
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
            refused: Arc::default(),
            keys: std::collections::hash_map::RandomState::new(),
            bucket: Arc::new(Mutex::new((CHECK_BURST, Instant::now()))),
            checks: Arc::new(tokio::sync::Semaphore::new(CHECKS_AT_ONCE)),
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

    /// The grant of a presented token: remembered (accepted or refused), or asked of
    /// the validator, within the check limits.
    pub(crate) async fn grant(&self, token: &str) -> Result<AccessGrant, TokenRejected> {
        use std::hash::BuildHasher;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenRejected::Inactive);
        }
        // Remembered by a keyed hash, not their text: memory stays small whatever the
        // tokens' length.
        let text = token;
        let token = self.keys.hash_one(text);
        let now = Instant::now();
        if let Ok(remembered) = self.remembered.lock() {
            if let Some((grant, until)) = remembered.get(&token) {
                if *until > now {
                    return Ok(grant.clone());
                }
            }
        }
        if let Ok(refused) = self.refused.lock() {
            if let Some((why, until)) = refused.get(&token) {
                if *until > now {
                    return Err(why.clone());
                }
            }
        }
        if !self.take_check() {
            return Err(TokenRejected::Throttled);
        }
        // At most a few checks at once: the others wait their turn, briefly.
        let Ok(Ok(_slot)) =
            tokio::time::timeout(Duration::from_secs(5), self.checks.acquire()).await
        else {
            return Err(TokenRejected::Throttled);
        };
        let grant = match self.validator.validate(text, &self.resource).await {
            Ok(grant) => grant,
            Err(why) => {
                if !why.is_transient() {
                    if let Ok(mut refused) = self.refused.lock() {
                        remember(
                            &mut refused,
                            token,
                            why.clone(),
                            now + REMEMBER_REFUSED,
                            REFUSED,
                        );
                    }
                }
                return Err(why);
            }
        };
        let until = grant
            .expires_at
            .and_then(|at| at.duration_since(SystemTime::now()).ok())
            .map_or(REMEMBER, |left| left.min(REMEMBER));
        if let Ok(mut remembered) = self.remembered.lock() {
            remember(
                &mut remembered,
                token,
                grant.clone(),
                now + until,
                REMEMBERED,
            );
        }
        Ok(grant)
    }

    /// Takes one check from the bucket, if it has one.
    fn take_check(&self) -> bool {
        let Ok(mut bucket) = self.bucket.lock() else {
            return false;
        };
        let now = Instant::now();
        let (left, filled) = *bucket;
        let left =
            (left + now.duration_since(filled).as_secs_f64() * CHECKS_PER_SECOND).min(CHECK_BURST);
        if left < 1.0 {
            *bucket = (left, now);
            return false;
        }
        *bucket = (left - 1.0, now);
        true
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

/// Remembers `value` for `token` until `until`, in a memory of at most `most`
/// entries: the expired go first, then the one closest to expiring (never all).
fn remember<T>(
    memory: &mut HashMap<u64, (T, Instant)>,
    token: u64,
    value: T,
    until: Instant,
    most: usize,
) {
    if memory.len() >= most && !memory.contains_key(&token) {
        let now = Instant::now();
        memory.retain(|_, (_, until)| *until > now);
        while memory.len() >= most {
            let soonest = memory
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(key, _)| *key);
            match soonest {
                Some(key) => {
                    memory.remove(&key);
                }
                None => break,
            }
        }
    }
    memory.insert(token, (value, until));
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
            // `exp` and `nbf` whatever their JSON type: an expired one as a string,
            // a fraction, a negative number; one that is not a date at all.
            (
                json!({"active": true, "aud": resource, "exp": "999"}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "exp": 999.9}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "exp": -5}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "exp": true}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "exp": "soon"}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "nbf": 1_001}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "nbf": "1001"}),
                TokenRejected::Inactive,
            ),
            (
                json!({"active": true, "aud": resource, "nbf": u64::MAX}),
                TokenRejected::Inactive,
            ),
        ] {
            assert_eq!(grant_of(&answer, resource, now), Err(why), "{answer}");
        }
        let string_dates = json!({"active": true, "aud": resource, "exp": "2000", "nbf": 999.5});
        assert_eq!(
            grant_of(&string_dates, resource, now).unwrap().expires_at,
            Some(UNIX_EPOCH + Duration::from_secs(2_000))
        );
    }

    #[tokio::test]
    async fn refused_tokens_are_remembered_and_checks_are_limited() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counting(Arc<AtomicUsize>);
        impl TokenValidator for Counting {
            fn validate<'a>(&'a self, _: &'a str, _: &'a str) -> ValidateFuture<'a> {
                self.0.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { Err(TokenRejected::Inactive) })
            }
        }
        let calls = Arc::new(AtomicUsize::new(0));
        let oauth = OAuthResource::new(
            "https://tools.example.com/mcp",
            "https://auth.example.com",
            Counting(Arc::clone(&calls)),
        );
        for _ in 0..10 {
            assert_eq!(oauth.grant("junk").await, Err(TokenRejected::Inactive));
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "a refused token is remembered"
        );
        // 300 distinct junk tokens: the burst is checked, the rest throttled.
        let mut throttled = 0;
        for n in 0..300 {
            if oauth.grant(&format!("junk-{n}")).await == Err(TokenRejected::Throttled) {
                throttled += 1;
            }
        }
        let checked = calls.load(Ordering::SeqCst);
        assert!(checked <= 1 + 52, "{checked} checks for 300 junk tokens");
        assert!(throttled >= 240, "{throttled} throttled");
        let before = calls.load(Ordering::SeqCst);
        assert_eq!(
            oauth.grant(&"x".repeat(MAX_TOKEN_BYTES + 1)).await,
            Err(TokenRejected::Inactive)
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            before,
            "a huge token is not checked"
        );
        assert!(TokenRejected::Throttled.is_transient());
        assert!(!TokenRejected::Inactive.is_transient());
    }

    #[test]
    fn a_full_memory_drops_one_entry_not_all() {
        let mut memory = HashMap::new();
        let now = Instant::now();
        for n in 0..4 {
            remember(&mut memory, n, n, now + Duration::from_secs(10 + n), 4);
        }
        remember(&mut memory, 9, 9, now + Duration::from_secs(60), 4);
        assert_eq!(memory.len(), 4);
        assert!(!memory.contains_key(&0), "the one closest to expiring went");
        assert!(memory.contains_key(&1) && memory.contains_key(&9));
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

//! Importing from an OAuth-protected MCP server, tackle to tackle: tackle's server as
//! the resource server (`OAuthResource`, tokens checked by introspection) and a
//! stand-in authorization server on loopback, with discovery, dynamic registration,
//! PKCE, the authorization code, a refresh when the token expires, and tokens kept out
//! of cassettes, the audit trail and errors. The official conformance suite checks the
//! same client against its own servers (`scripts/mcp-conformance --client`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tackle::audit::MemoryAudit;
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Cassette, Registry, Run, Runtime, ToolContext};
use tackle_mcp::{
    import_http, HttpOptions, Identity, ImportOptions, Introspection, McpServer, OAuthClient,
    OAuthResource,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Echoes a note from the vault.
#[tool(namespace = "vault", side_effects = read, requires_capability = "vault:read")]
fn echo(text: String) -> String {
    format!("vault says {text}")
}

/// What the stand-in authorization server did and issued.
#[derive(Default)]
struct Issued {
    /// Every secret it handed out: codes, access tokens, refresh tokens.
    secrets: Vec<String>,
    /// Access token -> when it expires (seconds since the epoch).
    access: HashMap<String, u64>,
    refresh: Vec<String>,
    refreshes: usize,
    authorizations: Vec<HashMap<String, String>>,
    registrations: usize,
    /// Once set, every token is inactive and refreshing fails.
    revoked: bool,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Pairs of a query string or form body, decoded.
fn pairs(encoded: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{encoded}"))
        .map(|url| url.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// How long the stand-in's access tokens live.
const TOKEN_SECONDS: u64 = 2;

/// One answer of the stand-in authorization server at `base` for `resource`.
fn answer(
    base: &str,
    resource: &str,
    issued: &Mutex<Issued>,
    method: &str,
    target: &str,
    body: &str,
) -> (u16, Vec<(&'static str, String)>, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut issued = issued.lock().unwrap();
    let json_answer = |status: u16, value: Value| {
        (
            status,
            vec![("Content-Type", "application/json".to_owned())],
            value.to_string(),
        )
    };
    match (method, path) {
        ("GET", "/.well-known/oauth-authorization-server") => json_answer(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        ("POST", "/register") => {
            issued.registrations += 1;
            let request: Value = serde_json::from_str(body).unwrap_or_default();
            json_answer(
                201,
                json!({"client_id": "dynamic-client", "redirect_uris": request["redirect_uris"]}),
            )
        }
        ("GET", "/authorize") => {
            let params = pairs(query);
            let code = format!("code-{}", issued.secrets.len());
            issued.secrets.push(code.clone());
            let location = format!(
                "{}?code={code}&state={}",
                params.get("redirect_uri").cloned().unwrap_or_default(),
                params.get("state").cloned().unwrap_or_default()
            );
            issued.authorizations.push(params);
            (302, vec![("Location", location)], String::new())
        }
        ("POST", "/token") => {
            let form = pairs(body);
            let grant = form.get("grant_type").map(String::as_str);
            let refreshing = grant == Some("refresh_token");
            if issued.revoked && refreshing {
                return json_answer(400, json!({"error": "invalid_grant"}));
            }
            let known = match grant {
                Some("authorization_code") => {
                    form.contains_key("code_verifier")
                        && form.get("resource").map(String::as_str) == Some(resource)
                        && form
                            .get("code")
                            .is_some_and(|code| issued.secrets.contains(code))
                }
                Some("refresh_token") => form
                    .get("refresh_token")
                    .is_some_and(|token| issued.refresh.contains(token)),
                _ => false,
            };
            if !known {
                return json_answer(400, json!({"error": "invalid_grant"}));
            }
            if refreshing {
                issued.refreshes += 1;
            }
            let n = issued.secrets.len();
            let (access, refresh) = (format!("access-{n}-x7Qz"), format!("refresh-{n}-k9Pw"));
            issued.secrets.push(access.clone());
            issued.secrets.push(refresh.clone());
            issued.access.insert(access.clone(), now() + TOKEN_SECONDS);
            issued.refresh.push(refresh.clone());
            json_answer(
                200,
                json!({
                    "access_token": access, "token_type": "Bearer",
                    "expires_in": TOKEN_SECONDS, "refresh_token": refresh,
                    "scope": "vault:read",
                }),
            )
        }
        ("POST", "/introspect") => {
            let form = pairs(body);
            let token = form.get("token").cloned().unwrap_or_default();
            let active = !issued.revoked
                && issued
                    .access
                    .get(&token)
                    .is_some_and(|expires| *expires > now());
            let value = if active {
                json!({"active": true, "aud": resource, "scope": "vault:read", "sub": "ada",
                       "exp": issued.access[&token]})
            } else {
                json!({"active": false})
            };
            json_answer(200, value)
        }
        _ => (404, Vec::new(), String::new()),
    }
}

/// The stand-in authorization server on loopback; its base URL (its issuer).
async fn authorization_server(resource: String, issued: Arc<Mutex<Issued>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = base.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (base, resource, issued) = (served.clone(), resource.clone(), Arc::clone(&issued));
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body) = loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    request.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&request).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length || n == 0 {
                            break (head.to_owned(), body.to_owned());
                        }
                    }
                    if n == 0 {
                        return;
                    }
                };
                let mut line = head.lines().next().unwrap_or("").split(' ');
                let (method, target) = (line.next().unwrap_or(""), line.next().unwrap_or(""));
                let (status, headers, body) =
                    answer(&base, &resource, &issued, method, target, &body);
                let mut response = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    response.push_str(&format!("{name}: {value}\r\n"));
                }
                response.push_str("\r\n");
                response.push_str(&body);
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    base
}

/// Reads the authorization server's redirect without following it (it approves at
/// once), as a browser would be sent.
async fn headless(url: String) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let answer = browser.get(&url).send().await.map_err(|e| e.to_string())?;
    answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| format!("no redirect ({})", answer.status()))
}

/// tackle's server of the vault tools, protected by OAuth with the stand-in
/// authorization server (which grants `vault:read`), requiring `required` of every
/// token when given: its resource URL, what the stand-in issued, the server.
async fn protected(required: Option<&str>) -> (String, Arc<Mutex<Issued>>, tackle_mcp::HttpServer) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let issued = Arc::new(Mutex::new(Issued::default()));
    let issuer = authorization_server(resource.clone(), Arc::clone(&issued)).await;
    let mut oauth = OAuthResource::new(
        resource.clone(),
        issuer.clone(),
        Introspection::new(format!("{issuer}/introspect"), "tackle", "s3cret"),
    )
    .with_scopes_supported(["vault:read"]);
    if let Some(scope) = required {
        oauth = oauth.with_required_scope(scope);
    }
    let served = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(served, Identity::new("vault", "1"), ToolContext::new()).unwrap();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let http = tackle_mcp::serve_http_with(server, addr, HttpOptions::default().with_oauth(oauth))
        .await
        .unwrap();
    (resource, issued, http)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_authorizes_refreshes_and_keeps_its_tokens_to_itself() {
    let (resource, issued, http) = protected(None).await;

    // Without an OAuth client, the protected server cannot be imported, and says why.
    let mut registry = Registry::new();
    let refused = import_http(&mut registry, &resource, ImportOptions::new("vault"))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, tackle_mcp::McpError::Authorization { .. })
            && refused.to_string().contains("ImportOptions::with_oauth"),
        "{refused}"
    );

    // With one: discovery, a dynamic registration, one authorization (PKCE, the
    // resource, the scope the resource supports), and the tool its scope grants.
    let client = OAuthClient::new("http://127.0.0.1:1/callback", headless);
    let import = import_http(
        &mut registry,
        &resource,
        ImportOptions::new("vault").with_oauth(client),
    )
    .await
    .unwrap();
    assert_eq!(import.keys(), ["mcp.vault.vault_echo@1"]);
    {
        let issued = issued.lock().unwrap();
        assert_eq!(issued.registrations, 1);
        assert_eq!(issued.authorizations.len(), 1);
        let asked = &issued.authorizations[0];
        assert_eq!(
            asked.get("code_challenge_method").map(String::as_str),
            Some("S256")
        );
        assert!(asked.contains_key("code_challenge"));
        assert_eq!(asked.get("resource"), Some(&resource));
        assert_eq!(asked.get("scope").map(String::as_str), Some("vault:read"));
        assert_eq!(
            asked.get("client_id").map(String::as_str),
            Some("dynamic-client")
        );
    }

    let audit = Arc::new(MemoryAudit::new());
    let runtime = Arc::new(Runtime::new(registry).with_audit(Arc::clone(&audit)));
    let dir = std::env::temp_dir().join(format!("tackle-oauth-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vault.json");
    let cassette = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Rewrite)
            .with_env_overrides(false),
    )
    .unwrap();
    let run = Run::new(&runtime).with_cassette(cassette);
    let ctx = ToolContext::new().with_grant("mcp:vault");
    let first = run
        .call("mcp.vault.vault_echo@1", json!({"text": "one"}), &ctx)
        .await
        .unwrap();
    assert_eq!(first, json!("vault says one"));

    // The token expires; the next call is served after a refresh, not a new
    // authorization.
    tokio::time::sleep(Duration::from_secs(TOKEN_SECONDS + 1)).await;
    let second = run
        .call("mcp.vault.vault_echo@1", json!({"text": "two"}), &ctx)
        .await
        .unwrap();
    assert_eq!(second, json!("vault says two"));
    {
        let issued = issued.lock().unwrap();
        assert!(issued.refreshes >= 1, "the expired token was refreshed");
        assert_eq!(issued.authorizations.len(), 1, "no second authorization");
    }
    run.finish().unwrap();

    // Every token revoked and refreshing refused: the call fails, and says so
    // without a secret in it.
    issued.lock().unwrap().revoked = true;
    tokio::time::sleep(Duration::from_secs(TOKEN_SECONDS + 1)).await;
    let failed = runtime
        .call("mcp.vault.vault_echo@1", json!({"text": "three"}), &ctx)
        .await
        .unwrap_err();

    // No code, access token or refresh token anywhere tackle keeps or shows.
    let cassette = std::fs::read_to_string(&path).unwrap();
    assert!(cassette.contains("vault says two"), "{cassette}");
    let trail = format!("{:?}", audit.events());
    assert!(trail.contains("mcp.vault.vault_echo@1"), "{trail}");
    let error = format!("{failed} {failed:?}");
    assert!(error.contains("still refuses the token"), "{error}");
    assert_eq!(
        issued.lock().unwrap().authorizations.len(),
        2,
        "the failing call authorized once more (a 401 is answered once), then gave up"
    );
    let secrets = issued.lock().unwrap().secrets.clone();
    assert!(secrets.len() >= 5, "{secrets:?}");
    for secret in &secrets {
        assert!(
            !cassette.contains(secret.as_str()),
            "{secret} in the cassette"
        );
        assert!(
            !trail.contains(secret.as_str()),
            "{secret} in the audit trail"
        );
        assert!(!error.contains(secret.as_str()), "{secret} in {error}");
    }
    let shown = format!(
        "{:?}",
        OAuthClient::new("http://127.0.0.1:1/callback", headless)
            .with_registered_client("ada", Some("hunter2-secret".to_owned()))
    );
    assert!(!shown.contains("hunter2-secret"), "{shown}");

    import.close().await;
    http.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that asks for a scope its authorization server will not grant: the import
/// steps up once (the `403` names the scope: a step-up, told from a `401`), then
/// stops, without asking the person again and again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_up_that_is_never_granted_is_asked_for_once() {
    // The stand-in grants `vault:read` only; the server wants `vault:admin` too.
    let (resource, issued, http) = protected(Some("vault:admin")).await;

    let mut registry = Registry::new();
    let client = OAuthClient::new("http://127.0.0.1:1/callback", headless);
    let refused = import_http(
        &mut registry,
        &resource,
        ImportOptions::new("vault").with_oauth(client),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, tackle_mcp::McpError::Authorization { .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("still refuses the token after 2 authorizations"),
        "{refused}"
    );
    let scopes: Vec<_> = issued
        .lock()
        .unwrap()
        .authorizations
        .iter()
        .map(|a| a.get("scope").cloned().unwrap_or_default())
        .collect();
    assert_eq!(
        scopes,
        ["vault:read", "vault:read vault:admin"],
        "a 401, then one step-up with the union of the scopes"
    );
    http.shutdown().await;
}

/// A thief's authorization server on loopback: it answers as an authorization server
/// would (metadata, an approving `/authorize`, tokens for anyone) and keeps every
/// request it gets, head and body. Its base URL, and what it got.
async fn thief() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let (served, kept) = (base.clone(), Arc::clone(&got));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (base, kept) = (served.clone(), Arc::clone(&kept));
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                let text = loop {
                    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
                        .await
                        .map_or(0, |read| read.unwrap_or(0));
                    request.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&request).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break text;
                        }
                    }
                    if n == 0 || request.len() > 1 << 20 {
                        break text;
                    }
                };
                kept.lock().unwrap().push(text.clone());
                let mut line = text.lines().next().unwrap_or("").split(' ');
                let (method, target) = (line.next().unwrap_or(""), line.next().unwrap_or(""));
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let (status, location, body) = match (method, path) {
                    ("GET", p) if p.starts_with("/.well-known/") => (
                        200,
                        None,
                        json!({
                            "issuer": base,
                            "authorization_endpoint": format!("{base}/authorize"),
                            "token_endpoint": format!("{base}/token"),
                            "response_types_supported": ["code"],
                            "grant_types_supported": ["authorization_code", "client_credentials"],
                            "code_challenge_methods_supported": ["S256"],
                            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                        })
                        .to_string(),
                    ),
                    ("GET", "/authorize") => {
                        let params = pairs(query);
                        let location = format!(
                            "{}?code=stolen&state={}",
                            params.get("redirect_uri").cloned().unwrap_or_default(),
                            params.get("state").cloned().unwrap_or_default()
                        );
                        (302, Some(location), String::new())
                    }
                    ("POST", "/token") => (
                        200,
                        None,
                        json!({"access_token": "t", "token_type": "Bearer", "expires_in": 60})
                            .to_string(),
                    ),
                    _ => (200, None, json!({"active": false}).to_string()),
                };
                let mut response = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                    body.len()
                );
                if let Some(location) = location {
                    response.push_str(&format!("Location: {location}\r\n"));
                }
                response.push_str("\r\n");
                response.push_str(&body);
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (base, got)
}

/// A hostile MCP server names a thief's authorization server in its metadata. An
/// importer's client registered in advance with a secret must say which issuer it
/// was registered with (`OAuthClient::with_issuer`): without it the import is
/// refused before any request, and with it the thief is refused; either way the
/// secret never reaches the thief.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_clients_secret_goes_to_its_own_issuer_only() {
    let (thief, got) = thief().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let oauth = OAuthResource::new(
        resource.clone(),
        thief.clone(),
        Introspection::new(format!("{thief}/introspect"), "hostile", "hostile"),
    );
    let served = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(served, Identity::new("vault", "1"), ToolContext::new()).unwrap();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let http = tackle_mcp::serve_http_with(server, addr, HttpOptions::default().with_oauth(oauth))
        .await
        .unwrap();

    const SECRET: &str = "hunter2-secret";
    let machine = || OAuthClient::client_credentials("ada", SECRET);
    let person = || {
        OAuthClient::new("http://127.0.0.1:1/callback", headless)
            .with_registered_client("ada", Some(SECRET.to_owned()))
    };
    let mut refusals = Vec::new();
    for client in [machine(), person()] {
        let mut registry = Registry::new();
        let refused = import_http(
            &mut registry,
            &resource,
            ImportOptions::new("vault").with_oauth(client),
        )
        .await;
        refusals.push(refused.map(|_| ()).unwrap_err());
    }
    // Registered with another issuer: the server that names the thief is refused.
    let own = "http://127.0.0.1:9/own-issuer";
    for client in [machine().with_issuer(own), person().with_issuer(own)] {
        let mut registry = Registry::new();
        let refused = import_http(
            &mut registry,
            &resource,
            ImportOptions::new("vault").with_oauth(client),
        )
        .await;
        refusals.push(refused.map(|_| ()).unwrap_err());
    }
    let got = got.lock().unwrap().clone();
    for request in &got {
        assert!(
            !request.contains(SECRET),
            "the thief got the secret: {request}"
        );
        assert!(
            !request
                .to_ascii_lowercase()
                .contains("authorization: basic"),
            "the thief got the client's credentials: {request}"
        );
        assert!(
            !request.starts_with("POST /token"),
            "the thief was asked for a token: {request}"
        );
    }
    for (n, refused) in refusals.iter().enumerate() {
        let says = if n < 2 { "with_issuer" } else { own };
        assert!(
            matches!(refused, tackle_mcp::McpError::Authorization { .. })
                && refused.to_string().contains(says),
            "{refused:?}"
        );
    }
    http.shutdown().await;
}

//! The MCP HTTP server cannot be tied up: slow and idle connections are closed after
//! the header-read timeout and do not lock new clients out; sessions are capped per
//! client and in all; an OAuth client's sessions are its subject's own; a full client
//! table drops one idle client, never live sessions; an authorization server that is
//! down or answers too much gets `503`, not `invalid_token`; a request whose JSON-RPC
//! id is one still in flight on its session is refused at once, not left hanging.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{HttpOptions, Identity, Introspection, McpServer, OAuthResource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Adds two numbers.
#[tool(namespace = "limits", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Sleeps `ms` milliseconds, then says how long it slept.
#[tool(namespace = "limits", side_effects = none)]
async fn nap(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

fn server() -> McpServer {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    McpServer::new(rt, Identity::new("limits", "1"), ToolContext::new()).unwrap()
}

/// One answer: its status, its `Mcp-Session-Id`, its head and start of body.
struct Answer {
    status: u16,
    session: Option<String>,
    text: String,
}

/// Sends one JSON-RPC request (`initialize` unless `body` says otherwise) with these
/// headers over a fresh connection, and reads the answer's head.
async fn send(
    addr: SocketAddr,
    method: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Option<serde_json::Value>,
) -> Answer {
    let body = body
        .unwrap_or_else(|| {
            json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "1"}}
            })
        })
        .to_string();
    let body = if method == "POST" {
        body
    } else {
        String::new()
    };
    let mut headers = String::new();
    if let Some(token) = token {
        headers.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(session) = session {
        headers.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer);
        if let Some((_, rest)) = text.split_once("\r\n\r\n") {
            if !rest.is_empty() {
                break;
            }
        }
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap_or(0);
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let session = text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    Answer {
        status,
        session,
        text,
    }
}

/// Whether the server closes `stream` within `within` (reads to the end).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut sink = Vec::new();
    matches!(
        tokio::time::timeout(within, stream.read_to_end(&mut sink)).await,
        Ok(Ok(_) | Err(_))
    )
}

#[tokio::test]
async fn slow_and_idle_connections_are_closed_and_do_not_lock_others_out() {
    let options = HttpOptions::default()
        .with_header_read_timeout(Duration::from_millis(300))
        .with_max_connections(8);
    let http = tackle_mcp::serve_http_with(server(), "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    // Every place taken: four send half a head (slowloris), four send nothing.
    let mut held = Vec::new();
    for n in 0..8 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        if n % 2 == 0 {
            stream
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .await
                .unwrap();
        }
        held.push(stream);
    }
    // A real client waits in the listen queue, and is served once the timeout frees
    // a place.
    let started = Instant::now();
    let served = send(addr, "POST", None, None, None).await;
    assert_eq!(served.status, 200, "{}", served.text);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    for stream in &mut held {
        assert!(
            closed_within(stream, Duration::from_secs(3)).await,
            "a slow or idle connection is closed"
        );
    }
    http.shutdown().await;
}

#[tokio::test]
async fn sessions_are_capped_per_client_and_in_all() {
    let options = HttpOptions::default()
        .with_token("token-a", &["*"])
        .with_token("token-b", &["*"])
        .with_max_sessions(3, 2);
    let http = tackle_mcp::serve_http_with(server(), "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    for _ in 0..2 {
        let opened = send(addr, "POST", Some("token-a"), None, None).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
    }
    let third = send(addr, "POST", Some("token-a"), None, None).await;
    assert_eq!(third.status, 429, "a client's share: {}", third.text);
    assert!(third.text.to_ascii_lowercase().contains("retry-after"));
    let b = send(addr, "POST", Some("token-b"), None, None).await;
    assert_eq!(b.status, 200, "{}", b.text);
    let full = send(addr, "POST", Some("token-b"), None, None).await;
    assert_eq!(full.status, 503, "the server's: {}", full.text);
    // Closing one makes room.
    let session = b.session.expect("a session id");
    let closed = send(addr, "DELETE", Some("token-b"), Some(&session), None).await;
    assert!(closed.status < 300, "{}", closed.text);
    let again = send(addr, "POST", Some("token-b"), None, None).await;
    assert_eq!(again.status, 200, "{}", again.text);
    http.shutdown().await;
}

/// Opens sessions one by one until the server answers `refused`; how many opened.
async fn top_up(addr: SocketAddr, token: Option<&str>, refused: u16) -> usize {
    let mut opened = 0;
    loop {
        let answer = send(addr, "POST", token, None, None).await;
        if answer.status == refused {
            return opened;
        }
        assert_eq!(answer.status, 200, "{}", answer.text);
        opened += 1;
        assert!(opened <= 100, "no limit");
    }
}

/// `n` requests sent at once; their answers.
async fn at_once<F, Fut>(n: usize, request: F) -> Vec<Answer>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        set.spawn(request());
    }
    let mut answers = Vec::new();
    while let Some(answer) = set.join_next().await {
        answers.push(answer.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_at_once_open_no_more_sessions_than_the_limits() {
    let options = HttpOptions::default()
        .with_token("token-a", &["*"])
        .with_max_sessions(100, 2);
    let http = tackle_mcp::serve_http_with(server(), "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    let answers = at_once(12, move || send(addr, "POST", Some("token-a"), None, None)).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    let opened = statuses.iter().filter(|s| **s == 200).count();
    assert!(
        (1..=2).contains(&opened),
        "never past the client's share: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );
    // At the margin a request at once may be refused a moment early, never let past:
    // one by one, the client tops up to its share exactly.
    assert_eq!(top_up(addr, Some("token-a"), 429).await + opened, 2);
    http.shutdown().await;

    // Without tokens no client can be told from another: only the cap in all holds,
    // so one client cannot lock the others out at the per-client share.
    let options = HttpOptions::default().with_max_sessions(5, 1);
    let http = tackle_mcp::serve_http_with(server(), "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    let answers = at_once(12, move || send(addr, "POST", None, None, None)).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    let opened = statuses.iter().filter(|s| **s == 200).count();
    assert!(
        (1..=5).contains(&opened),
        "never past the cap in all: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "{statuses:?}"
    );
    assert_eq!(top_up(addr, None, 503).await + opened, 5);
    http.shutdown().await;
}

/// A stand-in introspection endpoint: `ada` and `eve` are two subjects with the same
/// scopes, `down` gets a 500 (an outage), `huge` a 40 MiB answer streamed in chunks,
/// `one-N` the subject `one-N`, `multi-N` the subject `multi` with a scope set of its
/// own for each `N`; anything else is inactive.
async fn introspection(resource: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let resource = resource.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                while !String::from_utf8_lossy(&request).contains("token=") {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&chunk[..n]);
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let token = text
                    .split("token=")
                    .nth(1)
                    .and_then(|t| t.split('&').next())
                    .unwrap_or("")
                    .to_owned();
                let grant = |sub: &str| {
                    json!({"active": true, "aud": resource, "scope": "mcp:use", "sub": sub})
                        .to_string()
                };
                let answer = match token.as_str() {
                    "ada" | "eve" => grant(&token),
                    "down" => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        return;
                    }
                    "huge" => {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
                        if stream.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        let piece = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
                        for _ in 0..40 {
                            if stream.write_all(piece.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        let _ = stream.write_all(b"0\r\n\r\n").await;
                        return;
                    }
                    other if other.starts_with("one-") => grant(other),
                    // One subject, a scope set of its own for each token.
                    other if other.starts_with("multi-") => json!({
                        "active": true, "aud": resource, "sub": "multi",
                        "scope": format!("mcp:use set:{other}"),
                    })
                    .to_string(),
                    _ => json!({"active": false}).to_string(),
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

async fn oauth_server(max_sessions: (usize, usize)) -> (tackle_mcp::HttpServer, SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let url = introspection(resource.clone()).await;
    let oauth = OAuthResource::new(
        resource,
        "http://127.0.0.1:1/issuer",
        Introspection::new(url, "tackle", "s3cret"),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let options = HttpOptions::default()
        .with_oauth(oauth)
        .with_max_sessions(max_sessions.0, max_sessions.1);
    let http = tackle_mcp::serve_http_with(server(), addr, options)
        .await
        .unwrap();
    (http, addr)
}

fn tools_list() -> Option<serde_json::Value> {
    Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
}

#[tokio::test]
async fn an_oauth_session_is_its_subjects_own() {
    let (http, addr) = oauth_server((16, 4)).await;
    let opened = send(addr, "POST", Some("ada"), None, None).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let session = opened.session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ok = send(addr, "POST", Some("ada"), Some(&session), Some(initialized)).await;
    assert!(ok.status < 300, "{}", ok.text);
    // Eve holds the same scopes, and not Ada's session: she can neither use nor end it.
    let used = send(addr, "POST", Some("eve"), Some(&session), tools_list()).await;
    assert_eq!(used.status, 404, "{}", used.text);
    let deleted = send(addr, "DELETE", Some("eve"), Some(&session), None).await;
    assert_eq!(
        deleted.status, 404,
        "as for an unknown session: {}",
        deleted.text
    );
    let still = send(addr, "POST", Some("ada"), Some(&session), tools_list()).await;
    assert_eq!(still.status, 200, "Ada's session lives: {}", still.text);
    assert!(
        still.text.contains("limits_add") || still.text.contains("data:"),
        "{}",
        still.text
    );
    http.shutdown().await;
}

#[tokio::test]
async fn a_subject_cycling_scope_sets_is_held_to_its_share() {
    let (http, addr) = oauth_server((64, 4)).await;
    let mut statuses = Vec::new();
    let mut refused = None;
    for n in 0..8 {
        let token = format!("multi-{n}");
        let answer = send(addr, "POST", Some(&token), None, None).await;
        statuses.push(answer.status);
        if answer.status != 200 && refused.is_none() {
            refused = Some(answer.text);
        }
    }
    // Each token is a scope set of its own, and all are one subject's: four sessions.
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 429, 429, 429, 429],
        "one subject's share, whatever its scopes"
    );
    let refused = refused.unwrap_or_default().to_ascii_lowercase();
    assert!(refused.contains("retry-after"), "{refused}");
    // Another subject is still served.
    let eve = send(addr, "POST", Some("eve"), None, None).await;
    assert_eq!(eve.status, 200, "{}", eve.text);
    http.shutdown().await;
}

#[tokio::test]
async fn a_full_client_table_drops_an_idle_client_never_live_sessions() {
    // Room for two sessions, so for two clients.
    let (http, addr) = oauth_server((2, 2)).await;
    let ada = send(addr, "POST", Some("ada"), None, None).await;
    assert_eq!(ada.status, 200);
    let session = ada.session.expect("a session id");
    let one = send(addr, "POST", Some("one-1"), None, None).await;
    assert_eq!(one.status, 200);
    // Both clients have a session: a third is refused, and nobody's session is dropped.
    let third = send(addr, "POST", Some("one-2"), None, None).await;
    assert_eq!(third.status, 503, "{}", third.text);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = send(addr, "POST", Some("ada"), Some(&session), Some(initialized)).await;
    let still = send(addr, "POST", Some("ada"), Some(&session), tools_list()).await;
    assert_eq!(still.status, 200, "{}", still.text);
    // One client ends its session: it is the one that goes to make room.
    let mine = one.session.expect("a session id");
    let closed = send(addr, "DELETE", Some("one-1"), Some(&mine), None).await;
    assert!(closed.status < 300, "{}", closed.text);
    let fourth = send(addr, "POST", Some("one-3"), None, None).await;
    assert_eq!(fourth.status, 200, "{}", fourth.text);
    let still = send(addr, "POST", Some("ada"), Some(&session), tools_list()).await;
    assert_eq!(still.status, 200, "{}", still.text);
    http.shutdown().await;
}

#[tokio::test]
async fn an_authorization_server_that_is_down_or_says_too_much_is_503() {
    let (http, addr) = oauth_server((16, 4)).await;
    let down = send(addr, "POST", Some("down"), None, None).await;
    assert_eq!(down.status, 503, "{}", down.text);
    let lower = down.text.to_ascii_lowercase();
    assert!(lower.contains("retry-after"), "{}", down.text);
    assert!(!lower.contains("invalid_token"), "{}", down.text);
    let started = Instant::now();
    let huge = send(addr, "POST", Some("huge"), None, None).await;
    assert_eq!(huge.status, 503, "{}", huge.text);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "cut off at the limit, not read whole: {:?}",
        started.elapsed()
    );
    let junk = send(addr, "POST", Some("junk"), None, None).await;
    assert_eq!(junk.status, 401, "{}", junk.text);
    assert!(junk.text.contains("invalid_token"), "{}", junk.text);
    http.shutdown().await;
}

/// Posts `body` on `session` over a fresh connection and reads the whole answer (an
/// SSE stream ends with its response); `None` when it takes longer than `within`.
async fn post_whole(
    addr: SocketAddr,
    session: &str,
    body: serde_json::Value,
    within: Duration,
) -> Option<String> {
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut answer))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_on_its_session_is_refused_at_once() {
    let http = tackle_mcp::serve_http_with(
        server(),
        "127.0.0.1:0".parse().unwrap(),
        HttpOptions::default(),
    )
    .await
    .unwrap();
    let addr = http.local_addr();
    let opened = send(addr, "POST", None, None, None).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let session = opened.session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ok = send(addr, "POST", None, Some(&session), Some(initialized)).await;
    assert!(ok.status < 300, "{}", ok.text);
    // Eight calls at once, one JSON-RPC id: the first is served, the others refused.
    let call = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                      "params": {"name": "limits.nap", "arguments": {"ms": 400}}});
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (session, call) = (session.clone(), call.clone());
        set.spawn(async move {
            let answer = post_whole(addr, &session, call, Duration::from_secs(5)).await;
            (answer, started.elapsed())
        });
    }
    let mut answered = Vec::new();
    while let Some(joined) = set.join_next().await {
        answered.push(joined.unwrap());
    }
    let hung = answered.iter().filter(|(a, _)| a.is_none()).count();
    assert_eq!(hung, 0, "requests left hanging: {hung} of 8");
    let texts: Vec<&str> = answered.iter().filter_map(|(a, _)| a.as_deref()).collect();
    let served: Vec<&&str> = texts
        .iter()
        .filter(|t| t.contains("\"result\"") && t.contains("400"))
        .collect();
    let refused: Vec<&(Option<String>, Duration)> = answered
        .iter()
        .filter(|(a, _)| {
            a.as_deref()
                .is_some_and(|t| t.contains("-32600") && t.contains("42"))
        })
        .collect();
    assert_eq!(served.len(), 1, "one call is served: {texts:#?}");
    assert_eq!(refused.len(), 7, "the others are refused: {texts:#?}");
    // Refused at once, not after the served call's nap.
    for (_, took) in &refused {
        assert!(*took < Duration::from_millis(400), "refused after {took:?}");
    }
    // The id is free again once its call is answered.
    let again = post_whole(addr, &session, call, Duration::from_secs(5)).await;
    assert!(
        again.as_deref().is_some_and(|t| t.contains("\"result\"")),
        "{again:?}"
    );
    http.shutdown().await;
}

//! Serving a runtime over MCP, checked with the official SDK's Rust client over an
//! in-memory pipe: initialize, tools/list, tools/call (good, invalid, denied,
//! unknown), progress notifications and cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{Identity, McpServer};

/// Add two integers.
#[tool(namespace = "demo", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Word statistics.
#[derive(Serialize, JsonSchema)]
struct Stats {
    words: usize,
    longest: Option<String>,
}

/// Count the words of a text.
#[tool(namespace = "demo", side_effects = read)]
fn stats(text: String) -> Stats {
    Stats {
        words: text.split_whitespace().count(),
        longest: text
            .split_whitespace()
            .max_by_key(|w| w.len())
            .map(str::to_owned),
    }
}

/// Send a message.
#[tool(namespace = "demo", side_effects = external, requires_capability = "mail:send")]
fn send(to: String) -> String {
    format!("sent to {to}")
}

/// Files an order once per order id.
#[tool(namespace = "demo", side_effects = write, idempotency_key = "order_id")]
fn file_order(order_id: String) -> String {
    format!("filed {order_id}")
}

/// Counts, first edition.
#[tool(namespace = "demo", name = "count", version = "1", side_effects = none)]
fn count_v1(n: u32) -> u32 {
    n
}

/// Counts, second edition.
#[tool(namespace = "demo", name = "count", version = "2", side_effects = none)]
fn count_v2(n: u32) -> u32 {
    n * 2
}

static SLOW_SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Work in steps, reporting progress, until cancelled.
#[tool(namespace = "demo", side_effects = none)]
async fn slow(ctx: &ToolContext, steps: u64, wait: bool) -> u64 {
    for i in 1..=steps {
        ctx.report_progress(i, Some(steps));
        tokio::task::yield_now().await;
    }
    if wait {
        tokio::select! {
            () = ctx.cancelled() => SLOW_SAW_CANCEL.store(true, Ordering::SeqCst),
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
    }
    steps
}

static STALL_SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Never answers in time: waits until cancelled (or 30 s).
#[tool(namespace = "demo", side_effects = none)]
async fn stall(ctx: &ToolContext) -> u64 {
    tokio::select! {
        () = ctx.cancelled() => STALL_SAW_CANCEL.store(true, Ordering::SeqCst),
        () = tokio::time::sleep(Duration::from_secs(30)) => {}
    }
    0
}

/// Jots a note down, after `ms` milliseconds (a write: not safe to run twice).
#[tool(namespace = "demo", side_effects = write)]
async fn jot(note: String, ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("noted: {note}")
}

/// A progress notification: progress and total.
type Progress = (f64, Option<f64>);

/// A client that keeps the progress notifications it gets.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<Progress>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.total));
    }
}

async fn connect(ctx: ToolContext) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(
        runtime,
        Identity::new("weather-desk", "3.1.4").with_instructions("Tools for the desk."),
        ctx,
    )
    .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let recorder = Recorder::default();
    let client = recorder.clone().serve(client_io).await.unwrap();
    (client, recorder)
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

#[test]
fn identity_is_the_calling_crates() {
    let identity = tackle_mcp::identity!();
    assert_eq!(identity.name, env!("CARGO_PKG_NAME"));
    assert_ne!(identity.name, "tackle-mcp", "not the bridge's own name");
    assert_eq!(identity.version, env!("CARGO_PKG_VERSION"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_list_describe_the_tools() {
    let (client, _) = connect(ToolContext::new().with_grant("mail:send")).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("weather-desk", "3.1.4")
    );
    assert!(info.capabilities.tools.is_some());
    assert_eq!(info.instructions.as_deref(), Some("Tools for the desk."));

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "demo.add",
            "demo.chart",
            "demo.count_v1",
            "demo.count_v2",
            "demo.file_order",
            "demo.jot",
            "demo.send",
            "demo.slow",
            "demo.stall",
            "demo.stats"
        ],
        "sorted by key; versions told apart"
    );
    let wire: Vec<Value> = tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    let by_name = |name: &str| {
        wire.iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let add = by_name("demo.add");
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(
        add["outputSchema"]["properties"]["result"]["type"], "integer",
        "a non-object output is served wrapped"
    );
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    let keyed = by_name("demo.file_order");
    assert_eq!(
        keyed["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        "a write keyed by an idempotency key is idempotent"
    );
    let send = by_name("demo.send");
    assert_eq!(
        send["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    let stats = by_name("demo.stats");
    assert_eq!(
        stats["outputSchema"]["type"], "object",
        "objects are served as they are"
    );
    assert_eq!(stats["annotations"]["readOnlyHint"], true);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_through_the_door() {
    let (client, _) = connect(ToolContext::new()).await;
    let call = |name: &'static str, value: Value| {
        client.call_tool(CallToolRequestParams::new(name).with_arguments(args(value)))
    };

    let ok = call("demo.add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(ok.structured_content, Some(json!({"result": 5})));
    assert_eq!(ok.content[0].as_text().unwrap().text, "5");

    let stats = call("demo.stats", json!({"text": "a quick fox"}))
        .await
        .unwrap();
    assert_eq!(
        stats.structured_content,
        Some(json!({"words": 3, "longest": "quick"}))
    );

    let versioned = call("demo.count_v2", json!({"n": 4})).await.unwrap();
    assert_eq!(versioned.structured_content, Some(json!({"result": 8})));

    let invalid = call("demo.add", json!({"a": "two"})).await.unwrap();
    assert_eq!(invalid.is_error, Some(true));
    let text = &invalid.content[0].as_text().unwrap().text;
    assert!(text.starts_with("invalid input for `demo.add@1`"), "{text}");
    assert!(text.contains("/a"), "{text}");

    // A tool the server's grants cannot call is neither listed nor known to the client.
    let listed = client.list_all_tools().await.unwrap();
    assert!(listed.iter().all(|t| t.name != "demo.send"));
    assert!(listed.iter().any(|t| t.name == "demo.add"));
    let hidden = call("demo.send", json!({"to": "bo"})).await.unwrap_err();
    assert!(
        hidden.to_string().contains("unknown tool `demo.send`"),
        "{hidden}"
    );

    let unknown = call("demo.nope", json!({})).await.unwrap_err();
    assert!(
        unknown.to_string().contains("unknown tool `demo.nope`"),
        "{unknown}"
    );
    // The session survives all of it.
    assert!(call("demo.add", json!({"a": 1, "b": 1})).await.is_ok());
    client.cancel().await.unwrap();

    // A server configured with the grant lets the call through.
    let (client, _) = connect(ToolContext::new().with_grant("mail:*")).await;
    let sent = client
        .call_tool(
            CallToolRequestParams::new("demo.send").with_arguments(args(json!({"to": "bo"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        sent.structured_content,
        Some(json!({"result": "sent to bo"}))
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_flows_and_cancellation_reaches_the_tool() {
    let (client, recorder) = connect(ToolContext::new()).await;
    let done = client
        .call_tool(
            CallToolRequestParams::new("demo.slow")
                .with_arguments(args(json!({"steps": 3, "wait": false}))),
        )
        .await
        .unwrap();
    assert_eq!(done.structured_content, Some(json!({"result": 3})));
    // The server sends every notification before the result, in order; this client
    // handles each notification in a task of its own, so they may land after the
    // result and in any order.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while recorder.progress.lock().unwrap().len() < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "progress never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut progress = recorder.progress.lock().unwrap().clone();
    progress.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        progress,
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("demo.slow")
                    .with_arguments(args(json!({"steps": 1, "wait": true}))),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle
        .cancel(Some("the user gave up".into()))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !SLOW_SAW_CANCEL.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tool never saw the cancel"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.cancel().await.unwrap();
}

/// Posts an `initialize` request with these `Host` and `Origin` headers and returns the
/// response's status code.
async fn status_of(addr: std::net::SocketAddr, host: &str, origin: Option<&str>) -> u16 {
    status_with(addr, host, origin, None).await
}

/// [`status_of`], with an `Authorization: Bearer` token.
async fn status_with(
    addr: std::net::SocketAddr,
    host: &str,
    origin: Option<&str>,
    token: Option<&str>,
) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string();
    let mut origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    if let Some(token) = token {
        origin.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    let line = String::from_utf8_lossy(&head).into_owned();
    line[9..12].parse().unwrap()
}

#[tokio::test]
async fn http_accepts_loopback_hosts_and_origins_only_unless_told_otherwise() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server =
        McpServer::new(rt.clone(), Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = http.local_addr();
    let local = format!("127.0.0.1:{}", addr.port());
    assert_eq!(
        status_of(addr, &local, None).await,
        200,
        "no Origin: a non-browser client"
    );
    let own = format!("http://127.0.0.1:{}", addr.port());
    assert_eq!(status_of(addr, &local, Some(&own)).await, 200);
    assert_eq!(
        status_of(addr, &local, Some("http://evil.example")).await,
        403
    );
    assert_eq!(
        status_of(addr, "evil.example", None).await,
        403,
        "DNS rebinding"
    );
    http.shutdown().await;

    // Told otherwise: a named host and origin.
    let server = McpServer::new(rt, Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let options = tackle_mcp::HttpOptions::default()
        .with_allowed_host("tools.internal")
        .with_allowed_origin("https://app.internal:*");
    let http = tackle_mcp::serve_http_with(server, "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    assert_eq!(
        status_of(addr, "tools.internal", Some("https://app.internal")).await,
        200
    );
    assert_eq!(
        status_of(addr, "tools.internal", Some("https://other.internal")).await,
        403
    );
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_that_fails_part_way_leaves_nothing_registered() {
    use tackle::{registry::DynamicTool, Registry, SideEffects, ToolSpec};
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    // A tool already holds the key the server's `demo.stats` would be imported under,
    // and collisions are errors.
    let mut registry = Registry::with_strategy(tackle::registry::CollisionStrategy::Error);
    let taken = ToolSpec::new("mcp.remote", "demo_stats", "1", SideEffects::None, "Mine.");
    registry
        .register(DynamicTool::new(taken, |_c, i| async move {
            Ok::<_, String>(i)
        }))
        .unwrap();
    let result = tackle_mcp::import_http(
        &mut registry,
        &http.url(),
        tackle_mcp::ImportOptions::new("remote"),
    )
    .await;
    match result {
        Err(tackle_mcp::McpError::Register(error)) => {
            assert!(
                error.to_string().contains("mcp.remote.demo_stats@1"),
                "{error}"
            )
        }
        Err(other) => panic!("{other}"),
        Ok(import) => panic!("imported {:?}", import.keys()),
    }
    // `demo.add` was registered before the collision and taken back out.
    assert_eq!(registry.list_names(), ["mcp.remote.demo_stats@1"]);
    http.shutdown().await;
}

/// A server that calls itself `trusted` decides neither its tools' keys nor the
/// permission they require: the importer's name does.
#[tokio::test]
async fn the_importer_names_an_import_and_so_its_permission() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("trusted", "1"), ToolContext::new()).unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut registry = tackle::Registry::default();
    let import = tackle_mcp::import_http(
        &mut registry,
        &http.url(),
        tackle_mcp::ImportOptions::new("stranger"),
    )
    .await
    .unwrap();
    assert_eq!(import.server(), "stranger");
    assert_eq!(import.remote_name(), Some("trusted"));
    assert!(!import.keys().is_empty());
    for key in import.keys() {
        assert!(key.starts_with("mcp.stranger."), "{key}");
    }
    let key = import.keys()[0].clone();
    let spec = registry.resolve(&key).unwrap().spec().clone();
    assert_eq!(spec.permissions, ["mcp:stranger"]);
    let door = Runtime::new(registry);
    let denied = door
        .call(
            &key,
            json!({}),
            &ToolContext::new().with_grant("mcp:trusted"),
        )
        .await
        .unwrap_err();
    assert_eq!(denied.kind(), tackle::ToolErrorKind::CapabilityDenied);
    import.close().await;
    http.shutdown().await;
}

/// An imported tool's time limit is the import's call timeout, held by the door: a
/// server that does not answer in time gives `Timeout` (not `Execution`), and the
/// request is cancelled at the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_tool_that_does_not_answer_in_time_times_out() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("slowpoke", "1"), ToolContext::new()).unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut registry = tackle::Registry::default();
    let options =
        tackle_mcp::ImportOptions::new("remote").with_call_timeout(Duration::from_millis(300));
    let import = tackle_mcp::import_http(&mut registry, &http.url(), options)
        .await
        .unwrap();
    let key = "mcp.remote.demo_stall@1";
    assert_eq!(registry.resolve(key).unwrap().spec().timeout_ms, Some(300));
    let door = Runtime::new(registry);
    let started = std::time::Instant::now();
    let error = door
        .call(key, json!({}), &ToolContext::new().with_grant("mcp:remote"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), tackle::ToolErrorKind::Timeout, "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !STALL_SAW_CANCEL.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        STALL_SAW_CANCEL.load(Ordering::SeqCst),
        "the server's tool was not cancelled"
    );
    import.close().await;
    http.shutdown().await;
}

/// Serves a fresh server on `addr` (the same port again after a restart).
async fn serve_on(addr: std::net::SocketAddr) -> tackle_mcp::HttpServer {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("desk", "1"), ToolContext::new()).unwrap();
    tackle_mcp::serve_http(server, addr).await.unwrap()
}

/// An import over HTTP outlives its server: after the server restarts, the next call
/// opens a new session and succeeds. A write in flight when the server goes is not run
/// twice: the import speaks 2026-07-28 with a tackle server, each call is a request of
/// its own, so the lost answer fails the call at once with `Disconnected` (not
/// retried); the call after it succeeds against the new server. (A stdio server that
/// dies mid-call fails the same way: `tests/mcp_interop.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_reconnects_to_a_restarted_server() {
    let first = serve_on("127.0.0.1:0".parse().unwrap()).await;
    let addr = first.local_addr();
    let mut registry = tackle::Registry::default();
    let options =
        tackle_mcp::ImportOptions::new("remote").with_call_timeout(Duration::from_secs(3));
    let import = tackle_mcp::import_http(&mut registry, &first.url(), options)
        .await
        .unwrap();
    let door = Runtime::new(registry);
    let ctx = ToolContext::new().with_grant("mcp:remote");
    let add = |a: i64| door.call("mcp.remote.demo_add@1", json!({"a": a, "b": 1}), &ctx);
    assert_eq!(add(1).await.unwrap(), json!(2));

    // The server restarts on the same port: the old session is gone.
    first.shutdown().await;
    let second = serve_on(addr).await;
    assert_eq!(add(2).await.unwrap(), json!(3));

    // A write in flight when the server goes: not retried.
    let jot = door.call(
        "mcp.remote.demo_jot@1",
        json!({"note": "milk", "ms": 2000}),
        &ctx,
    );
    let (outcome, ()) = tokio::join!(jot, async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        second.shutdown().await;
    });
    let error = outcome.unwrap_err();
    assert_eq!(error.kind(), tackle::ToolErrorKind::Disconnected, "{error}");
    let third = serve_on(addr).await;
    assert_eq!(
        door.call(
            "mcp.remote.demo_jot@1",
            json!({"note": "eggs", "ms": 0}),
            &ctx
        )
        .await
        .unwrap(),
        json!("noted: eggs")
    );
    import.close().await;
    // Closed: calls fail at once, without connecting.
    let closed = add(3).await.unwrap_err();
    assert!(closed.to_string().contains("closed"), "{closed}");
    third.shutdown().await;
}

#[tokio::test]
async fn an_over_limit_request_line_is_answered_and_the_session_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    let options = tackle_mcp::StdioOptions {
        max_line_bytes: 1024,
    };
    let serving = tokio::spawn(tackle_mcp::serve_io(server, server_in, server_out, options));
    let mut to_server = client_out;
    let mut from_server = BufReader::new(client_in).lines();
    let send = |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        line
    };
    let init = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    to_server.write_all(init.as_bytes()).await.unwrap();
    let answer: Value =
        serde_json::from_str(&from_server.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 1);
    let initialized = send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    to_server.write_all(initialized.as_bytes()).await.unwrap();
    // Over the limit: answered with an error for its id.
    let big = send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list",
        "params": {"pad": "x".repeat(5000)}}));
    to_server.write_all(big.as_bytes()).await.unwrap();
    let answer: Value =
        serde_json::from_str(&from_server.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32600);
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("1024 bytes"));
    // A line that is not JSON is ignored (an answer could start a storm of errors
    // with a peer that echoes them); JSON that is no JSON-RPC message is an invalid
    // request, answered without an id.
    to_server.write_all(b"not json at all\n").await.unwrap();
    to_server
        .write_all(b"{\"jsonrpc\": \"2.0\", \"x\": 1}\n")
        .await
        .unwrap();
    let answer: Value =
        serde_json::from_str(&from_server.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // The session goes on; a request sent just before the input ends is answered.
    let list = send(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}));
    to_server.write_all(list.as_bytes()).await.unwrap();
    drop(to_server);
    let answer: Value =
        serde_json::from_str(&from_server.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 8);
    assert!(answer["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server stops when its input ends")
        .unwrap();
    assert!(served.is_ok(), "{served:?}");
    // Nothing more was written: the output is closed.
    assert!(from_server.next_line().await.unwrap().is_none());
}

#[tokio::test]
async fn with_tokens_a_request_without_a_valid_one_is_401() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let options = tackle_mcp::HttpOptions::default().with_token("t-0123456789", &["demo:*"]);
    let http = tackle_mcp::serve_http_with(server, "127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap();
    let addr = http.local_addr();
    let host = format!("127.0.0.1:{}", addr.port());
    assert_eq!(status_with(addr, &host, None, None).await, 401);
    assert_eq!(
        status_with(addr, &host, None, Some("t-0123456788")).await,
        401
    );
    assert_eq!(
        status_with(addr, &host, None, Some("t-0123456789")).await,
        200
    );
    // The host check still applies to a client with a token.
    assert_eq!(
        status_with(addr, "evil.example", None, Some("t-0123456789")).await,
        403
    );
    assert!(!format!(
        "{:?}",
        tackle_mcp::HttpOptions::default().with_token("secret-x", &[])
    )
    .contains("secret-x"));
    http.shutdown().await;
}

/// A stand-in authorization server's introspection endpoint (RFC 7662) on loopback:
/// answers for the tokens `good`, `reader`, `no-scope` and `elsewhere`, only to the
/// client `tackle:s3cret`; counts the questions.
async fn introspection_endpoint(resource: String) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            // Headers, then as much body as Content-Length says.
            let text = loop {
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
                        break text;
                    }
                }
                if n == 0 {
                    break text;
                }
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let authorized = text
                .to_ascii_lowercase()
                .contains("authorization: basic dgfja2xlonmzy3jlda==");
            let token = text
                .split("\r\n\r\n")
                .nth(1)
                .and_then(|body| body.split('&').find_map(|p| p.strip_prefix("token=")))
                .unwrap_or("")
                .to_owned();
            let exp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 600;
            let answer = match token.as_str() {
                "good" => json!({"active": true, "aud": resource, "scope": "mcp:use mail:send", "sub": "ada", "exp": exp}),
                "reader" => json!({"active": true, "aud": [resource], "scope": "mcp:use", "sub": "bo", "exp": exp}),
                "no-scope" => json!({"active": true, "aud": resource, "scope": "mail:send"}),
                "elsewhere" => json!({"active": true, "aud": "http://elsewhere.example/mcp", "scope": "mcp:use mail:send"}),
                _ => json!({"active": false}),
            }
            .to_string();
            let response = if authorized {
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}", answer.len())
            } else {
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_owned()
            };
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    (url, asked)
}

/// The head of the answer to an `initialize` POST with `token`, and a GET of `path`.
async fn head_of(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string();
    let body = if method == "GET" { String::new() } else { body };
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // The head and the start of the body are enough (an SSE stream may stay open).
    while !String::from_utf8_lossy(&answer).contains("\r\n\r\n{")
        && !String::from_utf8_lossy(&answer).contains("\r\n\r\ndata:")
    {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .unwrap()
            .unwrap();
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// OAuth 2.1 resource server: metadata served, a missing token asked for with the
/// metadata's URL, bad tokens and wrong audiences refused, a missing scope `403`, and
/// an accepted token's scopes are the grants (one introspection per token).
#[tokio::test]
async fn as_an_oauth_resource_server_tokens_are_checked_and_scopes_are_grants() {
    use tackle_mcp::{HttpOptions, Introspection, OAuthResource};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (introspect, asked) = introspection_endpoint(resource.clone()).await;
    let oauth = OAuthResource::new(
        resource.clone(),
        "http://127.0.0.1:1/issuer",
        Introspection::new(introspect, "tackle", "s3cret"),
    )
    .with_scopes_supported(["mcp:use", "mail:send"])
    .with_required_scope("mcp:use");
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(rt, Identity::new("demo", "1"), ToolContext::new()).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let http = tackle_mcp::serve_http_with(server, addr, HttpOptions::default().with_oauth(oauth))
        .await
        .unwrap();

    let metadata = head_of(
        addr,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        None,
    )
    .await;
    assert!(metadata.starts_with("HTTP/1.1 200"), "{metadata}");
    let document: Value = serde_json::from_str(metadata.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(document["resource"], json!(resource));
    assert_eq!(
        document["authorization_servers"],
        json!(["http://127.0.0.1:1/issuer"])
    );
    assert_eq!(
        document["scopes_supported"],
        json!(["mcp:use", "mail:send"])
    );

    let missing = head_of(addr, "POST", "/mcp", None)
        .await
        .to_ascii_lowercase();
    assert!(missing.starts_with("http/1.1 401"), "{missing}");
    assert!(
        missing.contains(&format!(
            "www-authenticate: bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{missing}"
    );
    for token in ["unknown", "elsewhere"] {
        let refused = head_of(addr, "POST", "/mcp", Some(token)).await;
        assert!(refused.starts_with("HTTP/1.1 401"), "{token}: {refused}");
        assert!(
            refused.contains("error=\"invalid_token\""),
            "{token}: {refused}"
        );
    }
    let lacking = head_of(addr, "POST", "/mcp", Some("no-scope")).await;
    assert!(lacking.starts_with("HTTP/1.1 403"), "{lacking}");
    assert!(
        lacking.contains("error=\"insufficient_scope\", scope=\"mcp:use\""),
        "{lacking}"
    );
    let before = asked.load(Ordering::SeqCst);
    for _ in 0..2 {
        let served = head_of(addr, "POST", "/mcp", Some("good")).await;
        assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        before + 1,
        "an accepted token is remembered"
    );

    // Through an MCP client: the token's scopes are the grants.
    let call_send = |token: &'static str| {
        let url = http.url();
        async move {
            let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
                .auth_header(token);
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            let client = ().serve(transport).await.unwrap();
            let mut params = CallToolRequestParams::new("demo.send");
            params.arguments = Some(json!({"to": "ada"}).as_object().unwrap().clone());
            let result = client.call_tool(params).await.unwrap();
            client.cancel().await.unwrap();
            (
                result.is_error,
                serde_json::to_string(&result.content).unwrap(),
            )
        }
    };
    let (error, text) = call_send("good").await;
    assert_eq!(error, Some(false), "{text}");
    assert!(text.contains("sent to ada"), "{text}");
    // A token whose scopes cannot send neither sees the tool nor may call it.
    let url = http.url();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header("reader");
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    let reader = ().serve(transport).await.unwrap();
    let listed = reader.list_all_tools().await.unwrap();
    assert!(listed.iter().all(|t| t.name != "demo.send"));
    assert!(!listed.is_empty());
    let mut params = CallToolRequestParams::new("demo.send");
    params.arguments = Some(json!({"to": "ada"}).as_object().unwrap().clone());
    let refused = reader.call_tool(params).await.unwrap_err();
    assert!(refused.to_string().contains("unknown tool"), "{refused}");
    reader.cancel().await.unwrap();
    http.shutdown().await;
}

/// A chart of this week's sales, as a PNG.
#[tool(namespace = "demo", side_effects = read)]
fn chart() -> Vec<tackle::content::ContentPart> {
    use tackle::content::ContentPart;
    vec![
        ContentPart::text("Sales this week:"),
        ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n-chart-"),
        ContentPart::file("application/pdf", b"%PDF-1.7", Some("sales.pdf".into())),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_image_goes_as_image_content_and_an_import_keeps_it() {
    use tackle::content::ContentPart;
    let (client, _) = connect(ToolContext::new()).await;
    let result = client
        .call_tool(CallToolRequestParams::new("demo.chart"))
        .await
        .unwrap();
    let wire = serde_json::to_value(&result).unwrap();
    let image = ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n-chart-");
    assert_eq!(
        wire["content"][0],
        json!({"type": "text", "text": "Sales this week:"})
    );
    assert_eq!(
        wire["content"][1],
        json!({"type": "image", "mimeType": "image/png", "data": image.data().unwrap()})
    );
    assert_eq!(wire["content"][2]["type"], "resource");
    assert_eq!(
        wire["content"][2]["resource"]["mimeType"],
        "application/pdf"
    );
    assert_eq!(wire["content"][2]["resource"]["uri"], "sales.pdf");
    client.cancel().await.ok();

    // A tool whose output is content parts declares no output schema: its result is
    // its content.
    assert!(wire.get("structuredContent").is_none(), "{wire}");
    // Imported back (tackle to tackle), the tool's value holds the image and the file.
    let server = McpServer::new(
        Arc::new(Runtime::from_inventory_in(module_path!()).unwrap()),
        Identity::new("charts", "1"),
        ToolContext::new(),
    )
    .unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut registry = tackle::Registry::default();
    let import = tackle_mcp::import_http(
        &mut registry,
        &http.url(),
        tackle_mcp::ImportOptions::new("charts"),
    )
    .await
    .unwrap();
    let door = Runtime::new(registry);
    let value = door
        .call(
            "mcp.charts.demo_chart",
            json!({}),
            &ToolContext::new().with_grant("mcp:charts"),
        )
        .await
        .unwrap();
    let parts: Vec<ContentPart> = serde_json::from_value(value).unwrap();
    assert_eq!(parts[0], ContentPart::text("Sales this week:"));
    assert_eq!(parts[1], image);
    assert_eq!(
        parts[2],
        ContentPart::file("application/pdf", b"%PDF-1.7", Some("sales.pdf".into()))
    );
    import.close().await;
    http.shutdown().await;
}

/// One JSON-RPC request line to a server over `serve_io`, and its answer.
async fn raw_exchange(lines: &[Value]) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server =
        McpServer::new(runtime, Identity::new("eras", "1.0.0"), ToolContext::new()).unwrap();
    let (mut to_server, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, from_server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(tackle_mcp::serve_io(
        server,
        server_in,
        server_out,
        tackle_mcp::StdioOptions::default(),
    ));
    let mut answers = Vec::new();
    let mut reader = tokio::io::BufReader::new(from_server).lines();
    for line in lines {
        to_server
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        if line.get("id").is_some() {
            let answer = tokio::time::timeout(Duration::from_secs(5), reader.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("a line");
            answers.push(serde_json::from_str(&answer).unwrap());
        }
    }
    answers
}

/// Clients of both eras: before 2026-07-28 a non-object output is wrapped in
/// `{"result": ..}` (schema and structured content); a 2026-07-28 request (stateless,
/// its revision in `_meta`) gets it as itself (SEP-2106).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_are_wrapped_for_older_clients_only() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let modern = raw_exchange(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "_meta": meta, "name": "demo.add", "arguments": {"a": 2, "b": 3}}}),
    ])
    .await;
    let add = |answer: &Value| {
        answer["result"]["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "demo.add").cloned())
            .unwrap_or_else(|| panic!("{answer}"))
    };
    assert_eq!(
        add(&modern[0])["outputSchema"]["type"],
        "integer",
        "{}",
        modern[0]
    );
    assert_eq!(
        modern[1]["result"]["structuredContent"],
        json!(5),
        "{}",
        modern[1]
    );

    let older = raw_exchange(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "older", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "demo.add", "arguments": {"a": 2, "b": 3}}}),
    ])
    .await;
    assert_eq!(older[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        add(&older[1])["outputSchema"]["properties"]["result"]["type"],
        "integer"
    );
    assert_eq!(
        older[2]["result"]["structuredContent"],
        json!({"result": 5})
    );
}

//! The cost of MCP: one `tools/call` round trip of a pure tool with a Rust client
//! (the official SDK, `rmcp`), over a child process's stdio, over an in-memory pipe and
//! over streamable HTTP on loopback (target: under 2 ms), both with rmcp's client and
//! with a raw client that writes the way Node's undici does (`TCP_NODELAY`, a
//! keep-alive connection, the request head and its body in two writes), next to the
//! same call through the in-process door (the baseline).
//!
//! This bench has its own `main`: run with `TACKLE_BENCH_MCP_SERVE=1`, the binary is
//! the MCP server the stdio case starts.

use std::hint::black_box;
use std::sync::Arc;

use criterion::Criterion;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::json;
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{serve_stdio, Identity, McpServer};

const SERVE: &str = "TACKLE_BENCH_MCP_SERVE";

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn server() -> McpServer {
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    McpServer::new(runtime, Identity::new("bench", "1"), ToolContext::new()).expect("server")
}

fn arguments() -> serde_json::Map<String, serde_json::Value> {
    json!({"a": 2, "b": 3})
        .as_object()
        .cloned()
        .expect("object")
}

fn round_trips(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let mut group = c.benchmark_group("mcp/tools_call");

    let rt = Runtime::from_inventory().expect("registry");
    let ctx = ToolContext::new();
    group.bench_function("in-process door (baseline)", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                black_box(
                    rt.call("bench.add", json!({"a": 2, "b": 3}), &ctx)
                        .await
                        .ok(),
                )
            })
        })
    });

    let pipe_client = tokio_rt.block_on(async {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = server();
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(client_io).await.expect("client")
    });
    group.bench_function("MCP over an in-memory pipe", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let params = CallToolRequestParams::new("bench.add").with_arguments(arguments());
                black_box(pipe_client.call_tool(params).await.expect("call"))
            })
        })
    });

    let stdio_client = tokio_rt.block_on(async {
        let mut command = tokio::process::Command::new(std::env::current_exe().expect("own path"));
        command.env(SERVE, "1");
        let transport = TokioChildProcess::new(command).expect("spawn");
        ().serve(transport).await.expect("client")
    });
    group.bench_function("MCP over a child process's stdio", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let params = CallToolRequestParams::new("bench.add").with_arguments(arguments());
                black_box(stdio_client.call_tool(params).await.expect("call"))
            })
        })
    });
    let (http, http_client) = tokio_rt.block_on(async {
        let http = tackle_mcp::serve_http(server(), "127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("serve");
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(http.url());
        let client = ().serve(transport).await.expect("client");
        (http, client)
    });
    group.bench_function("MCP over streamable HTTP", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let params = CallToolRequestParams::new("bench.add").with_arguments(arguments());
                black_box(http_client.call_tool(params).await.expect("call"))
            })
        })
    });
    let mut undici = tokio_rt.block_on(UndiciLike::connect(http.local_addr()));
    group.bench_function("MCP over streamable HTTP, undici-style client", |b| {
        b.iter(|| tokio_rt.block_on(async { black_box(undici.call().await) }))
    });
    group.finish();
    tokio_rt.block_on(async {
        let _ = stdio_client.cancel().await;
        let _ = pipe_client.cancel().await;
        let _ = http_client.cancel().await;
        http.shutdown().await;
    });
}

/// A client that talks to the server the way Node's undici does: one keep-alive
/// connection with `TCP_NODELAY`, each request's head and body written separately.
struct UndiciLike {
    stream: tokio::net::TcpStream,
    host: String,
    session: String,
    next_id: u64,
    buffer: Vec<u8>,
}

impl UndiciLike {
    async fn connect(addr: std::net::SocketAddr) -> UndiciLike {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let mut client = UndiciLike {
            stream,
            host: format!("127.0.0.1:{}", addr.port()),
            session: String::new(),
            next_id: 1,
            buffer: Vec::new(),
        };
        let (head, _) = client
            .post(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "undici-like", "version": "1"}}
            }))
            .await;
        client.session = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .expect("a session id");
        client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    /// One `tools/call`; the response's body.
    async fn call(&mut self) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let (_, body) = self
            .post(json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "bench.add", "arguments": {"a": 2, "b": 3}}
            }))
            .await;
        assert!(body.contains("\"result\""), "{body}");
        body
    }

    /// Posts `message`: the head, then the body, in two writes; reads the whole answer.
    async fn post(&mut self, message: serde_json::Value) -> (String, String) {
        use tokio::io::AsyncWriteExt;
        let body = message.to_string();
        let session = if self.session.is_empty() {
            String::new()
        } else {
            format!(
                "mcp-session-id: {}\r\nmcp-protocol-version: 2025-06-18\r\n",
                self.session
            )
        };
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\nconnection: keep-alive\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        self.stream.write_all(head.as_bytes()).await.expect("head");
        self.stream.write_all(body.as_bytes()).await.expect("body");
        self.read_response().await
    }

    /// Reads one response (by `content-length`, or chunked to its last chunk).
    async fn read_response(&mut self) -> (String, String) {
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill().await;
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).to_ascii_lowercase();
        self.buffer.drain(..head_end);
        let length = head.lines().find_map(|l| {
            l.strip_prefix("content-length:")
                .and_then(|v| v.trim().parse::<usize>().ok())
        });
        let mut body = Vec::new();
        if let Some(length) = length {
            while self.buffer.len() < length {
                self.fill().await;
            }
            body.extend(self.buffer.drain(..length));
        } else if head.contains("transfer-encoding: chunked") {
            loop {
                let line_end = loop {
                    if let Some(at) = find(&self.buffer, b"\r\n") {
                        break at;
                    }
                    self.fill().await;
                };
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&self.buffer[..line_end]).trim(),
                    16,
                )
                .expect("chunk size");
                while self.buffer.len() < line_end + 2 + size + 2 {
                    self.fill().await;
                }
                body.extend_from_slice(&self.buffer[line_end + 2..line_end + 2 + size]);
                self.buffer.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        }
        (head, String::from_utf8_lossy(&body).into_owned())
    }

    async fn fill(&mut self) {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        self.buffer.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn main() {
    if std::env::var_os(SERVE).is_some() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("tokio");
        if let Err(e) = runtime.block_on(serve_stdio(server())) {
            eprintln!("{e}");
        }
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    round_trips(&mut criterion);
    criterion.final_summary();
}

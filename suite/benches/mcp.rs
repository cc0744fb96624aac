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

#[path = "support/http_client.rs"]
mod http_client;
use http_client::UndiciLike;

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

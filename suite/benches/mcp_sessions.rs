//! MCP serving under concurrency: 1, 10 and 100 sessions at once over streamable HTTP,
//! each calling a pure tool, against tackle's server and, side by side in the same
//! run, a bare rmcp server (rmcp's own `#[tool]` router, the same tool, the same HTTP
//! front, the same client). Target: tackle at least 0.9x the bare server's calls per
//! second at every N. Three clients: rmcp's own with a 2025-11-25 session (`rmcp`),
//! rmcp's own speaking 2026-07-28 (`rmcp-2026`: `server/discover`, then every call a
//! request of its own with its `_meta`, no session), and a raw keep-alive HTTP client
//! (`support/http_client.rs`, 2025-11-25) whose own work is small, so that with it the
//! server's core is what limits the calls per second.
//!
//! Both servers run on one tokio runtime with a single worker thread (the server's
//! core); the clients (one per session) run on another. Criterion measures
//! rounds: in one round every session makes one call, so its throughput line is calls
//! per second. Before measuring, the bench prints each server's p50 and p99 call
//! latency at each N (`TACKLE_BENCH_ROUNDS` rounds, 200 by default), and the CPU time
//! the server's threads spent per call (Linux: from `/proc/self/task/*/schedstat`),
//! which does not depend on how fast the client is.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{
    schemars, tool_handler, tool_router, ClientLifecycleMode, ClientServiceExt, ServerHandler,
    ServiceExt,
};
use serde_json::json;
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{Identity, McpServer};
use tokio_util::sync::CancellationToken;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::UndiciLike;

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The bare server's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// The bare server's output (an object, as rmcp's structured output wants).
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    result: i64,
}

/// The same tool on rmcp's own router.
#[derive(Clone)]
struct Bare {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bare {
    /// Add two integers.
    #[rmcp::tool(name = "bench.add")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<Sum> {
        Json(Sum { result: a + b })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// Serves rmcp's `service` on `listener` the way tackle's front does (HTTP/1.1,
/// `TCP_NODELAY`), until `stop`.
async fn serve_bare(listener: tokio::net::TcpListener, stop: CancellationToken) {
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop.clone();
    let service = StreamableHttpService::new(
        || {
            Ok(Bare {
                tool_router: Bare::tool_router(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// The two servers, on a runtime of one worker thread of their own.
struct Servers {
    tackle: SocketAddr,
    bare: SocketAddr,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Servers {
    fn start() -> Servers {
        let stop = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let token = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("server")
                .enable_all()
                .build()
                .expect("server runtime");
            rt.block_on(async move {
                let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
                let server =
                    McpServer::new(runtime, Identity::new("bench", "1"), ToolContext::new())
                        .expect("server");
                let any: SocketAddr = "127.0.0.1:0".parse().expect("addr");
                let tackle = tackle_mcp::serve_http(server, any).await.expect("serve");
                let listener = tokio::net::TcpListener::bind(any).await.expect("bind");
                let bare = listener.local_addr().expect("addr");
                tx.send((tackle.local_addr(), bare)).expect("send");
                serve_bare(listener, token).await;
                tackle.shutdown().await;
            });
        });
        let (tackle, bare) = rx.recv().expect("the servers' addresses");
        Servers {
            tackle,
            bare,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `n` sessions of one kind of client.
#[derive(Clone)]
enum Sessions {
    /// rmcp's client (reqwest underneath).
    Rmcp(Vec<Peer<RoleClient>>),
    /// The raw keep-alive HTTP client, which leaves the time to the server.
    Raw(Vec<Arc<tokio::sync::Mutex<UndiciLike>>>),
}

/// `n` sessions of rmcp's client on `addr` (kept running by the returned services),
/// of 2026-07-28 when `stateless`.
async fn rmcp_sessions(
    addr: SocketAddr,
    n: usize,
    stateless: bool,
) -> Vec<RunningService<RoleClient, ()>> {
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
        let client = if stateless {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            };
            ().serve_with_lifecycle(transport, lifecycle).await
        } else {
            ().serve(transport).await
        };
        clients.push(client.expect("client"));
    }
    clients
}

/// One call of `bench.add` with rmcp's client, checked.
async fn call(peer: &Peer<RoleClient>) {
    let arguments = json!({"a": 2, "b": 3})
        .as_object()
        .cloned()
        .expect("object");
    let result = peer
        .call_tool(CallToolRequestParams::new("bench.add").with_arguments(arguments))
        .await
        .expect("call");
    // Wrapped at 2025-11-25; at 2026-07-28 tackle sends a number as itself.
    let sum = result.structured_content.as_ref();
    assert!(
        sum == Some(&json!({"result": 5})) || sum == Some(&json!(5)),
        "{result:?}"
    );
}

/// `rounds` rounds in which every session makes one call; the latency of each call.
async fn run_rounds(sessions: &Sessions, rounds: u64) -> Vec<Duration> {
    let mut tasks = tokio::task::JoinSet::new();
    match sessions {
        Sessions::Rmcp(peers) => {
            for peer in peers {
                let peer = peer.clone();
                tasks.spawn(async move {
                    let mut latencies = Vec::with_capacity(rounds as usize);
                    for _ in 0..rounds {
                        let start = Instant::now();
                        call(&peer).await;
                        latencies.push(start.elapsed());
                    }
                    latencies
                });
            }
        }
        Sessions::Raw(clients) => {
            for client in clients {
                let client = Arc::clone(client);
                tasks.spawn(async move {
                    let mut client = client.lock().await;
                    let mut latencies = Vec::with_capacity(rounds as usize);
                    for _ in 0..rounds {
                        let start = Instant::now();
                        let body = client.call().await;
                        assert!(
                            body.contains(r#""structuredContent":{"result":5}"#),
                            "{body}"
                        );
                        latencies.push(start.elapsed());
                    }
                    latencies
                });
            }
        }
    }
    let mut all = Vec::new();
    while let Some(latencies) = tasks.join_next().await {
        all.extend(latencies.expect("a session's calls"));
    }
    all
}

/// The CPU time the servers' threads (named `server`) have used so far, from Linux's
/// `/proc/self/task/*/schedstat` (nanoseconds); `None` where it cannot be read.
fn server_cpu() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path();
        if std::fs::read_to_string(path.join("comm")).ok()?.trim() != "server" {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

const COUNTS: [usize; 3] = [1, 10, 100];

/// Opens `n` sessions of `client` ("rmcp", "rmcp-2026" or "raw") on `addr`; the rmcp
/// services to close when done.
async fn open(
    client: &str,
    addr: SocketAddr,
    n: usize,
) -> (Sessions, Vec<RunningService<RoleClient, ()>>) {
    if client.starts_with("rmcp") {
        let services = rmcp_sessions(addr, n, client == "rmcp-2026").await;
        let peers = services.iter().map(|c| c.peer().clone()).collect();
        (Sessions::Rmcp(peers), services)
    } else {
        let mut raw = Vec::with_capacity(n);
        for _ in 0..n {
            let client = UndiciLike::connect(addr).await;
            raw.push(Arc::new(tokio::sync::Mutex::new(client)));
        }
        (Sessions::Raw(raw), Vec::new())
    }
}

/// Closes what [`open`] opened.
async fn close(services: Vec<RunningService<RoleClient, ()>>) {
    for service in services {
        let _ = service.cancel().await;
    }
}

fn main() {
    let servers = Servers::start();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");
    let rounds: u64 = std::env::var("TACKLE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    // Sessions open just before they are measured: the servers close keep-alive
    // connections that stay idle (the slow-client guard).
    let mut cases = Vec::new();
    for n in COUNTS {
        for client in ["raw", "rmcp", "rmcp-2026"] {
            for (server, addr) in [("rmcp", servers.bare), ("tackle", servers.tackle)] {
                cases.push((n, client, server, addr));
            }
        }
    }
    if rounds > 0 {
        println!(
            "calls/s, p50 and p99 latency, server CPU per call ({rounds} rounds per session, after 20 of warm-up):"
        );
    }
    for &(n, client, server, addr) in cases.iter().filter(|_| rounds > 0) {
        let (sessions, services) = client_rt.block_on(open(client, addr, n));
        client_rt.block_on(run_rounds(&sessions, 20));
        let cpu_before = server_cpu();
        let start = Instant::now();
        let mut latencies = client_rt.block_on(run_rounds(&sessions, rounds));
        let elapsed = start.elapsed();
        let cpu = cpu_before
            .zip(server_cpu())
            .map(|(before, after)| (after - before).as_secs_f64() * 1e6 / latencies.len() as f64);
        client_rt.block_on(close(services));
        latencies.sort();
        println!(
            "  {n:>3} sessions, {client:>9} client, {server:<6} server: {:>6.0} calls/s, p50 {:>7.1} us, p99 {:>7.1} us, server CPU {} us/call",
            latencies.len() as f64 / elapsed.as_secs_f64(),
            percentile(&latencies, 0.50).as_secs_f64() * 1e6,
            percentile(&latencies, 0.99).as_secs_f64() * 1e6,
            cpu.map_or("n/a".to_owned(), |c| format!("{c:.1}")),
        );
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("mcp/sessions");
    for (n, client, server, addr) in cases {
        let id = BenchmarkId::new(format!("{client} client/{server}"), n);
        // Only the cases the command line selects open sessions.
        let mut opened = None;
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(id, |b| {
            let (sessions, _) =
                opened.get_or_insert_with(|| client_rt.block_on(open(client, addr, n)));
            b.iter_custom(|iters| {
                client_rt.block_on(async {
                    let start = Instant::now();
                    run_rounds(sessions, iters).await;
                    start.elapsed()
                })
            })
        });
        if let Some((_, services)) = opened {
            client_rt.block_on(close(services));
        }
    }
    group.finish();
    criterion.final_summary();
    drop(servers);
}

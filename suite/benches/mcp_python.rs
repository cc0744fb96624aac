//! An MCP `tools/call` round trip over stdio with the official Python SDK's client
//! (PyPI `mcp`), against tackle's server and, in the same run, against a bare
//! JSON-RPC loop (the baseline): a server that reads a line, parses it, and writes
//! the answer, with no framework at all, describing the same tool the same way (so
//! the client does the same work with both). The ratio is what tackle's server adds to
//! the round trip a Python agent sees (target: <= 1.2x). Besides criterion's figures,
//! the bench prints the ratio measured in pairs of batches run back to back
//! (`mcp/python_stdio/paired`): on a machine whose speed drifts over seconds, the
//! ratio of two figures measured apart drifts with it.
//!
//! The client is `benches/support/mcp_stdio_client.py`, run by the Python of
//! `TACKLE_MCP_PYTHON` or `.venv/bin/python` (`.ci/run` and `tests/mcp_interop.rs`
//! install the SDK there); without it the bench says so and measures nothing. This
//! bench has its own `main`: the binary is also both servers (`TACKLE_BENCH_SERVE` =
//! `tackle` or `bare`).

#[path = "support/paired.rs"]
mod paired;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{json, Value};
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{serve_stdio, Identity, McpServer};

const SERVE: &str = "TACKLE_BENCH_SERVE";

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The bare JSON-RPC loop: MCP's few methods answered by hand, one line at a time.
fn bare_loop() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id").cloned() else {
            continue; // a notification
        };
        let params = &request["params"];
        let result = match request["method"].as_str().unwrap_or("") {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "1"},
            }),
            // The tool exactly as tackle's server describes `bench.add`: the client
            // does the same work with its answers (it checks structured content
            // against the output schema).
            "tools/list" => json!({"tools": [{
                "name": "bench.add",
                "title": "add (bench.add@1)",
                "description": "Add two integers.",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object", "additionalProperties": false,
                    "properties": {
                        "a": {"type": "integer", "format": "int64"},
                        "b": {"type": "integer", "format": "int64"}},
                    "required": ["a", "b"]},
                "outputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "properties": {"result": {"type": "integer", "format": "int64"}},
                    "required": ["result"]},
                "annotations": {"readOnlyHint": true, "destructiveHint": false,
                                "idempotentHint": true, "openWorldHint": false},
            }]}),
            "tools/call" => {
                let args = &params["arguments"];
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                json!({
                    "content": [{"type": "text", "text": sum.to_string()}],
                    "structuredContent": {"result": sum},
                    "isError": false,
                })
            }
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// tackle's server over stdio, serving `bench.add`.
fn tackle_server() {
    let tokio_rt = if std::env::var_os("TACKLE_BENCH_CURRENT_THREAD").is_some() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut multi = tokio::runtime::Builder::new_multi_thread();
        multi.worker_threads(2);
        multi
    }
    .enable_all()
    .build()
    .expect("tokio");
    tokio_rt.block_on(async {
        let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
        let server = McpServer::new(runtime, Identity::new("bench", "1"), ToolContext::new())
            .expect("server");
        let _ = serve_stdio(server).await;
    });
}

/// The Python SDK's client, started with a server (this binary in `mode`).
struct PythonClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl PythonClient {
    fn start(python: &PathBuf, tool: &str, mode: &str) -> PythonClient {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/support/mcp_stdio_client.py"
        );
        let exe = std::env::current_exe().expect("own path");
        let mut child = Command::new(python)
            .arg(script)
            .arg(tool)
            .arg(exe)
            .env(SERVE, mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the Python client starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the client says it is ready");
        assert_eq!(line.trim(), "ready", "the Python client did not start");
        PythonClient {
            child,
            stdin,
            stdout,
        }
    }

    /// Makes `n` calls one after another; how long they took.
    fn calls(&mut self, n: u64) -> Duration {
        let started = Instant::now();
        writeln!(self.stdin, "{n}").expect("the client reads");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the client answers");
        assert_eq!(line.trim(), "done", "{line}");
        started.elapsed()
    }
}

impl Drop for PythonClient {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin);
        let _ = self.child.wait();
    }
}

fn python() -> Option<PathBuf> {
    let python = std::env::var_os("TACKLE_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    has_sdk.then_some(python)
}

fn python_round_trips(c: &mut Criterion) {
    let Some(python) = python() else {
        eprintln!(
            "mcp_python: no Python with the MCP SDK (set TACKLE_MCP_PYTHON, or run .ci/run to make .venv): nothing measured"
        );
        return;
    };
    let mut group = c.benchmark_group("mcp/python_stdio");
    let mut bare = PythonClient::start(&python, "bench.add", "bare");
    let mut tackle = PythonClient::start(&python, "bench.add", "tackle");
    group.bench_function("bare JSON-RPC loop (baseline)", |b| {
        b.iter_custom(|iters| bare.calls(iters))
    });
    group.bench_function("tackle's server", |b| {
        b.iter_custom(|iters| tackle.calls(iters))
    });
    group.finish();
    paired(&mut bare, &mut tackle);
}

/// The ratio measured in pairs: a batch of calls to each server back to back.
fn paired(bare: &mut PythonClient, tackle: &mut PythonClient) {
    const ROUNDS: usize = 20;
    const CALLS: u64 = 200;
    let pairs = paired::paired(ROUNDS, || tackle.calls(CALLS), || bare.calls(CALLS));
    let calls = (ROUNDS as u64 * CALLS) as f64;
    println!(
        "mcp/python_stdio/paired: {:.2}x (quartiles {:.2}-{:.2}, {ROUNDS} pairs of {CALLS} calls), tackle {:.1} us, the bare loop {:.1} us",
        pairs.median,
        pairs.quartiles.0,
        pairs.quartiles.1,
        pairs.measured.as_secs_f64() * 1e6 / calls,
        pairs.baseline.as_secs_f64() * 1e6 / calls,
    );
}

fn main() {
    match std::env::var(SERVE).as_deref() {
        Ok("bare") => return bare_loop(),
        Ok("tackle") => return tackle_server(),
        _ => {}
    }
    let mut criterion = Criterion::default().configure_from_args();
    python_round_trips(&mut criterion);
    criterion.final_summary();
}

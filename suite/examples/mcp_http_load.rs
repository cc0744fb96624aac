//! Load on the MCP HTTP server: how many sessions a second it opens, how many
//! `tools/call`s a second it answers (a connection each, as a simple client makes
//! them), and how much memory an idle session holds.
//!
//! ```text
//! cargo run --release --example mcp_http_load
//! ```
//!
//! One sequential client on loopback, a static token; memory is the growth of this
//! process's resident set (Linux `/proc/self/status`) over 2,000 open sessions.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::{HttpOptions, Identity, McpServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Adds two integers.
#[tool(namespace = "load", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

const SESSIONS: usize = 2_000;
const CALLS: usize = 2_000;

/// This process's resident set, in KiB (0 where `/proc` has no answer).
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

/// One POST on a fresh connection: the status and the session id, if any.
async fn post(
    addr: SocketAddr,
    session: Option<&str>,
    body: &str,
) -> std::io::Result<(u16, Option<String>)> {
    let session = session.map_or(String::new(), |s| {
        format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-06-18\r\n")
    });
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer load\r\n{session}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let id = text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    Ok((status, id))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Arc::new(Runtime::from_inventory()?);
    let server = McpServer::new(runtime, Identity::new("load", "1"), ToolContext::new())?;
    let options = HttpOptions::default()
        .with_token("load", &["*"])
        .with_max_sessions(SESSIONS + 10, SESSIONS + 10);
    let http = tackle_mcp::serve_http_with(server, "127.0.0.1:0".parse()?, options).await?;
    let addr = http.local_addr();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}"#;
    // One session first, so the resident set below counts sessions, not start-up.
    post(addr, None, initialize).await?;
    let before = resident_kib();
    let started = Instant::now();
    let mut sessions = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        match post(addr, None, initialize).await? {
            (200, Some(id)) => sessions.push(id),
            (status, _) => return Err(format!("initialize answered {status}").into()),
        }
    }
    let opening = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = resident_kib();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    for session in &sessions[..50] {
        post(addr, Some(session), initialized).await?;
    }
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_add","arguments":{"a":1,"b":2}}}"#;
    let started = Instant::now();
    for n in 0..CALLS {
        let (status, _) = post(addr, Some(&sessions[n % 50]), call).await?;
        if status != 200 {
            return Err(format!("tools/call answered {status}").into());
        }
    }
    let calling = started.elapsed();
    println!(
        "{SESSIONS} sessions in {opening:?}: {:.0} sessions/s; resident set {before} -> {after} KiB: {:.1} KiB a session",
        SESSIONS as f64 / opening.as_secs_f64(),
        after.saturating_sub(before) as f64 / SESSIONS as f64
    );
    println!(
        "{CALLS} tools/call (a connection each) in {calling:?}: {:.0} calls/s",
        CALLS as f64 / calling.as_secs_f64()
    );
    http.shutdown().await;
    Ok(())
}

//! The `process` sandbox (seed 003's sandbox tier): a tool run in a child process of
//! this test binary is limited and, when needed, killed.
//!
//! The binary has its own `main` (`harness = false`), as a program that sandboxes
//! tools does: it hands a sandbox child to `serve_child` before anything else.

#[path = "support/harness.rs"]
mod harness;
use harness::tokio;

use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::context::{CancellationToken, DEFAULT_GRACE};
use tackle::sandbox::{ProcessSandbox, SandboxKind, SandboxPolicy};
use tackle::{
    registry::DynamicTool, tool, Run, Runtime, SideEffects, ToolContext, ToolError, ToolSpec,
};

/// An environment variable this process has and sandboxed tools must not see.
const UNDECLARED: &str = "TACKLE_SANDBOX_TEST_UNDECLARED";

/// Its value.
const UNDECLARED_VALUE: &str = "visible-4d1c9e";

/// Writes this process's id to `pid_file`, then loops forever.
fn spin_forever(pid_file: &str) -> Result<(), String> {
    std::fs::write(pid_file, std::process::id().to_string()).map_err(|e| e.to_string())?;
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// Writes its process id to `pid_file`, then loops forever; 400 ms time limit.
#[tool(namespace = "sbx", side_effects = none, sandbox = process, timeout_ms = 400)]
fn spin(pid_file: String) -> Result<(), String> {
    spin_forever(&pid_file)
}

/// Writes its process id to `pid_file`, then loops forever; no time limit.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn burn(pid_file: String) -> Result<(), String> {
    spin_forever(&pid_file)
}

/// Allocates and touches memory until something stops it.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn hoard() -> usize {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        kept.push(vec![1u8; 16 << 20]);
        std::hint::black_box(&kept);
    }
}

/// What the tool's process can see of its environment.
#[tool(namespace = "sbx", side_effects = none, sandbox = process, secrets = ["API_TOKEN"])]
fn peek(ctx: &ToolContext) -> Value {
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    names.sort();
    let from_env = std::env::var("API_TOKEN").ok();
    let from_ctx = ctx.secret("API_TOKEN").ok().map(|s| s.expose().to_owned());
    json!({
        "undeclared": std::env::var(UNDECLARED).ok(),
        "names": names,
        "secret_len": from_ctx.as_ref().map(String::len),
        "same_in_env": from_ctx.is_some() && from_ctx == from_env,
    })
}

/// Connects to `port` on loopback; says whether it could, and its network namespace.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn dial(port: u16) -> Value {
    let connected = std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    );
    json!({
        "connected": connected.is_ok(),
        "namespace": std::fs::read_link("/proc/self/ns/net").ok().map(|p| p.display().to_string()),
    })
}

/// Connects to the abstract Unix socket `name`; says whether it could.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn dial_abstract(name: String) -> Value {
    use std::os::linux::net::SocketAddrExt as _;
    let connected = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .and_then(|address| std::os::unix::net::UnixStream::connect_addr(&address));
    json!({
        "connected": connected.is_ok(),
        "error": connected.err().map(|e| e.to_string()),
    })
}

/// Adds two numbers; fails on a negative one, panics when `a` is zero, and appends its
/// process id to `log` when given one.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
async fn add(a: i64, b: i64, log: Option<String>) -> Result<i64, String> {
    if let Some(log) = log {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| e.to_string())?;
        // This process's mark: a process id is 1 in every sandbox's PID namespace.
        writeln!(file, "{}", process_mark()).map_err(|e| e.to_string())?;
    }
    if a < 0 || b < 0 {
        return Err(format!("negative: {a}, {b}"));
    }
    if a == 0 {
        panic!("zero is not a number here");
    }
    // Printing must not corrupt the response.
    println!("{{\"ok\": 1000}}");
    Ok(a + b)
}

/// A mark of this process, unlike any other process's (a hasher's random keys).
fn process_mark() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

/// Starts `sleep 31.4159` (which inherits the child's standard output and error, so it
/// would hold the call open), and a shell in a session of its own that writes
/// `marker` after 1.5 s; returns at once.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn spawner(marker: String) -> Result<u32, String> {
    let sleeper = std::process::Command::new("sleep")
        .arg("31.4159")
        .spawn()
        .map_err(|e| e.to_string())?;
    escape_and_write_later(&marker)?;
    Ok(sleeper.id())
}

/// Starts a shell in a session (and process group) of its own that writes `marker`
/// after 1.5 s.
fn escape_and_write_later(marker: &str) -> Result<(), String> {
    std::process::Command::new("setsid")
        .args([
            "-f",
            "sh",
            "-c",
            &format!("sleep 1.5; echo late > {marker}"),
        ])
        .status()
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Starts a shell in a session of its own that writes `marker` after 1.5 s, then
/// sleeps past its 400 ms time limit.
#[tool(namespace = "sbx", side_effects = none, sandbox = process, timeout_ms = 400)]
fn escapee(marker: String) -> Result<(), String> {
    escape_and_write_later(&marker)?;
    std::thread::sleep(Duration::from_secs(10));
    Ok(())
}

/// Reads every process's environment it can see (its parent's, `parent`, first), and
/// returns what it read.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn snoop(parent: u32) -> String {
    let mut seen = std::fs::read(format!("/proc/{parent}/environ")).unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            seen.extend(std::fs::read(entry.path().join("environ")).unwrap_or_default());
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Starts up to `count` processes that sleep, and says how many started.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn breed(count: u32) -> u32 {
    let mut started = 0;
    for _ in 0..count {
        match std::process::Command::new("sleep").arg("27.1828").spawn() {
            Ok(_) => started += 1,
            Err(_) => break,
        }
    }
    started
}

/// Sleeps `seconds` (using no CPU time).
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn nap(seconds: u64) -> u64 {
    std::thread::sleep(Duration::from_secs(seconds));
    seconds
}

/// How deeply `value` nests.
#[tool(namespace = "sbx", side_effects = none, sandbox = process)]
fn depth(value: Value) -> usize {
    let mut depth = 0;
    let mut at = &value;
    while let Some(next) = at.as_array().and_then(|items| items.first()) {
        depth += 1;
        at = next;
    }
    depth
}

fn sandboxed() -> Runtime {
    sandboxed_as("any")
}

/// A sandboxed runtime whose children carry `--sandbox-test=<name>` on their command
/// line, so a check can find them in this process's view of `/proc` (inside its PID
/// namespace, a child's own process id means nothing here).
fn sandboxed_as(name: &str) -> Runtime {
    Runtime::from_inventory().expect("registry").with_sandbox(
        ProcessSandbox::current_exe()
            .expect("current exe")
            .arg(format!("--sandbox-test={name}")),
    )
}

/// Waits until no process marked `name` (see [`sandboxed_as`]) runs, or `within`
/// passes; whether none does.
fn gone_within(name: &str, within: Duration) -> bool {
    let needle = format!("--sandbox-test={name}\0");
    let start = Instant::now();
    loop {
        let alive = std::fs::read_dir("/proc")
            .map(|entries| {
                entries.flatten().any(|entry| {
                    let path = entry.path();
                    let marked = std::fs::read(path.join("cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle));
                    marked && !zombie(&path)
                })
            })
            .unwrap_or(false);
        if !alive {
            return true;
        }
        if start.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether the process at `path` (`/proc/<pid>`) is a zombie or dead.
fn zombie(path: &Path) -> bool {
    std::fs::read_to_string(path.join("stat")).map_or(true, |stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        state.starts_with('Z') || state.starts_with('X')
    })
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-sandbox-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The reason of a sandbox error; any other outcome fails the check.
fn sandbox_reason(err: &ToolError) -> &str {
    match err {
        ToolError::Sandbox { reason, .. } => reason,
        other => panic!("expected a sandbox error, got {other:?}"),
    }
}

/// A tool that loops forever is killed when its time limit passes: `Timeout`, not
/// still running, and the process is gone within the grace window.
fn an_endless_loop_is_killed_at_its_time_limit() {
    let rt = sandboxed_as("spin");
    let dir = scratch("spin");
    let pid_file = dir.join("pid");
    let start = Instant::now();
    let err = tokio()
        .block_on(rt.call(
            "sbx.spin",
            json!({"pid_file": pid_file}),
            &ToolContext::new(),
        ))
        .expect_err("an endless loop cannot finish");
    let took = start.elapsed();
    match &err {
        ToolError::Timeout {
            after_ms,
            still_running,
            ..
        } => {
            assert_eq!(*after_ms, 400);
            assert!(!still_running, "a sandboxed tool is stopped: {err}");
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let grace = DEFAULT_GRACE;
    assert!(
        gone_within("spin", grace),
        "the tool's process still runs {grace:?} after its timeout"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Cancelling the run kills the child when the grace window ends: `Aborted`.
fn a_cancelled_run_kills_its_sandboxed_tool() {
    let rt = std::sync::Arc::new(sandboxed_as("cancel"));
    let dir = scratch("cancel");
    let pid_file = dir.join("pid");
    let token = CancellationToken::new();
    let grace = Duration::from_millis(100);
    let run = Run::new(&rt)
        .with_cancellation(token.clone())
        .with_grace(grace);
    let ctx = ToolContext::new();
    let (result, cancelled_at) = tokio().block_on(async {
        let call = run.call("sbx.burn", json!({"pid_file": pid_file}), &ctx);
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            token.cancel();
            Instant::now()
        };
        tokio::join!(call, cancel)
    });
    let err = result.expect_err("cancelled");
    assert!(
        matches!(err, ToolError::Aborted { grace_ms: 100, .. }),
        "{err:?}"
    );
    assert!(
        gone_within("cancel", grace * 3),
        "the tool's process survived its grace window"
    );
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(dir);
}

/// A CPU-bound tool with no time limit meets its CPU-time limit.
fn a_runaway_tool_meets_its_cpu_limit() {
    let rt = sandboxed_as("cpu")
        .with_sandbox_resolver(|spec: &ToolSpec| SandboxPolicy::for_spec(spec).with_cpu_seconds(1));
    let dir = scratch("cpu");
    let pid_file = dir.join("pid");
    let start = Instant::now();
    let err = tokio()
        .block_on(rt.call(
            "sbx.burn",
            json!({"pid_file": pid_file}),
            &ToolContext::new(),
        ))
        .expect_err("stopped");
    let took = start.elapsed();
    let reason = sandbox_reason(&err);
    assert!(reason.contains("CPU-time limit of 1 s"), "{reason}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(gone_within("cpu", Duration::from_millis(100)));
    let _ = std::fs::remove_dir_all(dir);
}

/// A tool that allocates without bound is stopped by its memory limit; the program
/// goes on.
fn unbounded_allocation_is_stopped_by_its_memory_limit() {
    let rt = sandboxed().with_sandbox_resolver(|spec: &ToolSpec| {
        SandboxPolicy::for_spec(spec).with_memory_bytes(256 << 20)
    });
    let start = Instant::now();
    let err = tokio()
        .block_on(rt.call("sbx.hoard", json!({}), &ToolContext::new()))
        .expect_err("stopped");
    let reason = sandbox_reason(&err);
    assert!(reason.contains("memory limit of 256 MiB"), "{reason}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// The child's environment holds only the secrets the tool declares; the same tool in
/// process sees everything (the check can fail).
fn an_undeclared_environment_variable_is_unseen() {
    let ctx = ToolContext::new()
        .with_secret("API_TOKEN", "tok-123456")
        .with_secret("OTHER", "not-for-peek");
    let rt = sandboxed();
    let seen = tokio()
        .block_on(rt.call("sbx.peek", json!({}), &ctx))
        .expect("peek");
    assert_eq!(seen["undeclared"], Value::Null, "{seen}");
    assert_eq!(seen["names"], json!(["API_TOKEN", "TACKLE_SANDBOX_CHILD"]));
    assert_eq!(seen["secret_len"], json!(10));
    assert_eq!(seen["same_in_env"], json!(true));

    let in_process = sandboxed().with_sandbox_resolver(|_: &ToolSpec| SandboxPolicy::in_process());
    let seen = tokio()
        .block_on(in_process.call("sbx.peek", json!({}), &ctx))
        .expect("peek");
    assert_eq!(seen["undeclared"], json!(UNDECLARED_VALUE));
}

/// Where the platform gives the child a network namespace of its own, it cannot reach
/// a listener on this machine's loopback; in process it can.
fn the_network_is_cut_where_the_platform_allows() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let in_process = sandboxed().with_sandbox_resolver(|_: &ToolSpec| SandboxPolicy::in_process());
    let here = tokio()
        .block_on(in_process.call("sbx.dial", json!({"port": port}), &ToolContext::new()))
        .expect("dial");
    assert_eq!(here["connected"], json!(true));
    let there = tokio()
        .block_on(sandboxed().call("sbx.dial", json!({"port": port}), &ToolContext::new()))
        .expect("dial");
    if there["namespace"] == here["namespace"] {
        println!("note: no network namespace on this platform; the child kept the network");
        return;
    }
    assert_eq!(there["connected"], json!(false), "{there}");
}

/// With the network allowed (the host's network namespace), a sandboxed tool still
/// reaches no abstract Unix socket of the host (D-Bus, X11 and the like listen on
/// them): Landlock's scope refuses the connection where the kernel has it (Linux
/// 6.12+); in process the tool reaches it.
fn no_host_abstract_socket_with_the_network_allowed() {
    use std::os::linux::net::SocketAddrExt as _;
    let name = format!("tackle-sandbox-test-{}", std::process::id());
    let address =
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("address");
    let _listener =
        std::os::unix::net::UnixListener::bind_addr(&address).expect("an abstract listener");
    let in_process = sandboxed().with_sandbox_resolver(|_: &ToolSpec| SandboxPolicy::in_process());
    let here = tokio()
        .block_on(in_process.call(
            "sbx.dial_abstract",
            json!({"name": name}),
            &ToolContext::new(),
        ))
        .expect("dial");
    assert_eq!(here["connected"], json!(true), "{here}");
    let networked = sandboxed()
        .with_sandbox_resolver(|spec: &ToolSpec| SandboxPolicy::for_spec(spec).with_network(true));
    let there = tokio()
        .block_on(networked.call(
            "sbx.dial_abstract",
            json!({"name": name}),
            &ToolContext::new(),
        ))
        .expect("dial");
    if !tackle::sandbox::abstract_sockets_scoped() {
        println!("note: no Landlock here; the sandbox cannot scope abstract sockets");
        return;
    }
    assert_eq!(there["connected"], json!(false), "{there}");
}

/// Results, errors and panics come back from the child; what the tool prints does not
/// corrupt the response; each call is a process of its own.
fn results_errors_and_panics_come_back() {
    let rt = sandboxed();
    let dir = scratch("add");
    let log = dir.join("log");
    let runtime = tokio();
    let ctx = ToolContext::new();
    let sum = runtime
        .block_on(rt.call("sbx.add", json!({"a": 2, "b": 3, "log": log}), &ctx))
        .expect("add");
    assert_eq!(sum, json!(5));
    let again = runtime
        .block_on(rt.call("sbx.add", json!({"a": 4, "b": 3, "log": log}), &ctx))
        .expect("add");
    assert_eq!(again, json!(7));
    let pids = std::fs::read_to_string(&log).expect("log");
    let pids: Vec<&str> = pids.lines().collect();
    assert_eq!(pids.len(), 2);
    assert_ne!(pids[0], pids[1], "one process per call");
    assert_ne!(pids[0], std::process::id().to_string());

    let err = runtime
        .block_on(rt.call("sbx.add", json!({"a": -1, "b": 3}), &ctx))
        .expect_err("negative");
    assert!(
        matches!(&err, ToolError::Execution { key, message } if key == "sbx.add@1" && message == "negative: -1, 3"),
        "{err:?}"
    );
    let err = runtime
        .block_on(rt.call("sbx.add", json!({"a": 0, "b": 3}), &ctx))
        .expect_err("panics");
    assert!(
        matches!(&err, ToolError::Panicked { message, .. } if message.contains("zero is not a number")),
        "{err:?}"
    );
    let err = runtime
        .block_on(rt.call("sbx.add", json!({"a": "two", "b": 3}), &ctx))
        .expect_err("invalid");
    assert_eq!(
        err.kind(),
        tackle::ToolErrorKind::InvalidInput,
        "validated in the parent"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Without a sandbox, a call that asks for one is refused: it never runs in process.
fn without_a_sandbox_the_call_is_refused() {
    let rt = Runtime::from_inventory().expect("registry");
    let dir = scratch("refused");
    let log = dir.join("log");
    let err = tokio()
        .block_on(rt.call(
            "sbx.add",
            json!({"a": 1, "b": 2, "log": log}),
            &ToolContext::new(),
        ))
        .expect_err("refused");
    let reason = sandbox_reason(&err);
    assert!(reason.contains("with_sandbox"), "{reason}");
    assert!(!log.exists(), "the tool ran");
    let _ = std::fs::remove_dir_all(dir);
}

/// A resolver can force a sandbox on a tool that did not ask for one; a tool made at
/// run time cannot be sent to a child, and says why.
fn a_run_time_tool_cannot_be_sent_to_a_process() {
    let spec = ToolSpec::new("rt", "echo", "1", SideEffects::None, "Echoes.");
    let mut rt =
        sandboxed().with_sandbox_resolver(|spec: &ToolSpec| match spec.namespace.as_str() {
            "rt" => SandboxPolicy::process(),
            _ => SandboxPolicy::for_spec(spec),
        });
    rt.registry_mut()
        .register(DynamicTool::new(spec, |_ctx, input| async move {
            Ok::<_, String>(input)
        }))
        .expect("register");
    let err = tokio()
        .block_on(rt.call("rt.echo", json!({}), &ToolContext::new()))
        .expect_err("not sendable");
    let reason = sandbox_reason(&err);
    assert!(reason.contains("link time"), "{reason}");
    assert_eq!(
        SandboxPolicy::for_spec(&spin::spec()).kind,
        SandboxKind::Process
    );
}

/// A process the tool starts neither holds the call open nor outlives it, even one
/// in a session (and process group) of its own.
fn what_a_tool_starts_dies_with_its_call() {
    let rt = sandboxed_as("spawner");
    let dir = scratch("spawner");
    let marker = dir.join("late");
    let start = Instant::now();
    tokio()
        .block_on(rt.call(
            "sbx.spawner",
            json!({"marker": marker}),
            &ToolContext::new(),
        ))
        .expect("spawner");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "the answer waited for what the tool started: {:?}",
        start.elapsed()
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !marker.exists(),
        "a process the tool started in a session of its own outlived the call"
    );
    assert!(gone_within("spawner", Duration::from_millis(100)));
    assert!(
        !running("sleep\x0031.4159"),
        "the tool's `sleep` outlived the call"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Whether a process whose command line holds `needle` runs.
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries.flatten().any(|entry| {
                let path = entry.path();
                std::fs::read(path.join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                    && !zombie(&path)
            })
        })
        .unwrap_or(false)
}

/// A process that escaped into a session of its own dies when its tool times out.
fn an_escaped_process_dies_with_a_timed_out_call() {
    let rt = sandboxed_as("escapee");
    let dir = scratch("escapee");
    let marker = dir.join("late");
    let err = tokio()
        .block_on(rt.call(
            "sbx.escapee",
            json!({"marker": marker}),
            &ToolContext::new(),
        ))
        .expect_err("it sleeps past its limit");
    assert!(matches!(err, ToolError::Timeout { .. }), "{err:?}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!marker.exists(), "the escaped process outlived the timeout");
    let _ = std::fs::remove_dir_all(dir);
}

/// A sandboxed tool reads no other process's environment, even with the network
/// allowed: it sees only the processes of its own PID namespace.
fn no_other_process_environment_is_readable() {
    let rt = sandboxed_as("snoop")
        .with_sandbox_resolver(|spec: &ToolSpec| SandboxPolicy::for_spec(spec).with_network(true));
    let seen = tokio()
        .block_on(rt.call(
            "sbx.snoop",
            json!({"parent": std::process::id()}),
            &ToolContext::new(),
        ))
        .expect("snoop");
    let seen = seen.as_str().unwrap_or_default();
    // Cargo starts this test with `CARGO_MANIFEST_DIR` in its environment (what
    // `/proc/<pid>/environ` shows); a child starts with an empty one.
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "run by cargo"
    );
    assert!(!seen.contains("CARGO_MANIFEST_DIR="), "read: {seen}");
}

/// A tool that sleeps uses no CPU time; the wall-clock limit stops it.
fn a_sleeping_tool_meets_its_wall_clock_limit() {
    let rt = sandboxed().with_sandbox_resolver(|spec: &ToolSpec| {
        SandboxPolicy::for_spec(spec).with_wall_seconds(1)
    });
    let start = Instant::now();
    let err = tokio()
        .block_on(rt.call("sbx.nap", json!({"seconds": 30}), &ToolContext::new()))
        .expect_err("stopped");
    let reason = sandbox_reason(&err);
    assert!(reason.contains("wall-clock limit of 1 s"), "{reason}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// A run-time tool under the key of a `#[tool]` is not run as that function.
fn a_run_time_tool_never_runs_the_static_tool_of_its_key() {
    let dir = scratch("shadow");
    let log = dir.join("log");
    let mut rt = Runtime::new(tackle::Registry::default())
        .with_sandbox(ProcessSandbox::current_exe().expect("current exe"))
        .with_sandbox_resolver(|_: &ToolSpec| SandboxPolicy::process());
    let spec = add::spec();
    rt.registry_mut()
        .register(DynamicTool::new(spec, |_ctx, input| async move {
            Ok::<_, String>(input)
        }))
        .expect("register");
    let err = tokio()
        .block_on(rt.call(
            "sbx.add",
            json!({"a": 1, "b": 2, "log": log}),
            &ToolContext::new(),
        ))
        .expect_err("refused");
    assert_eq!(err.kind(), tackle::ToolErrorKind::Sandbox, "{err:?}");
    assert!(!log.exists(), "the static `sbx.add` ran");
    let _ = std::fs::remove_dir_all(dir);
}

/// Input and output cross the process boundary with their nesting.
fn nested_values_cross_the_boundary() {
    let mut value = json!(0);
    for _ in 0..100 {
        value = json!([value]);
    }
    let depth = tokio()
        .block_on(sandboxed().call("sbx.depth", json!({"value": value}), &ToolContext::new()))
        .expect("depth");
    assert_eq!(depth, json!(100));
}

/// A tool cannot start more processes than its policy's `max_processes`, whoever
/// runs it (root included: the kernel exempts root from `RLIMIT_NPROC`, so the
/// limit must come from a `pids` cgroup there).
fn a_tool_cannot_start_more_processes_than_its_limit() {
    let rt = sandboxed_as("breed").with_sandbox_resolver(|spec: &ToolSpec| {
        SandboxPolicy::for_spec(spec).with_max_processes(8)
    });
    let started = tokio()
        .block_on(rt.call("sbx.breed", json!({"count": 40}), &ToolContext::new()))
        .expect("breed");
    let started = started.as_u64().expect("a count");
    assert!(
        (1..8).contains(&started),
        "a limit of 8 processes let the tool start {started} more"
    );
    assert!(
        !running("sleep\x0027.1828"),
        "the tool's processes outlived the call"
    );
    // The call's cgroup goes with it.
    let leftover = std::fs::read_dir("/sys/fs/cgroup/pids")
        .map(|entries| {
            entries.flatten().any(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("tackle-{}-", std::process::id()))
            })
        })
        .unwrap_or(false);
    assert!(!leftover, "a call's pids cgroup was left behind");
}

fn main() -> ExitCode {
    tackle::sandbox::serve_child();
    // Edition 2021: setting a variable is safe; no other thread runs yet.
    std::env::set_var(UNDECLARED, UNDECLARED_VALUE);
    harness::run(&[
        (
            "what_a_tool_starts_dies_with_its_call",
            what_a_tool_starts_dies_with_its_call,
        ),
        (
            "an_escaped_process_dies_with_a_timed_out_call",
            an_escaped_process_dies_with_a_timed_out_call,
        ),
        (
            "a_tool_cannot_start_more_processes_than_its_limit",
            a_tool_cannot_start_more_processes_than_its_limit,
        ),
        (
            "no_other_process_environment_is_readable",
            no_other_process_environment_is_readable,
        ),
        (
            "a_sleeping_tool_meets_its_wall_clock_limit",
            a_sleeping_tool_meets_its_wall_clock_limit,
        ),
        (
            "a_run_time_tool_never_runs_the_static_tool_of_its_key",
            a_run_time_tool_never_runs_the_static_tool_of_its_key,
        ),
        (
            "nested_values_cross_the_boundary",
            nested_values_cross_the_boundary,
        ),
        (
            "an_endless_loop_is_killed_at_its_time_limit",
            an_endless_loop_is_killed_at_its_time_limit,
        ),
        (
            "a_cancelled_run_kills_its_sandboxed_tool",
            a_cancelled_run_kills_its_sandboxed_tool,
        ),
        (
            "a_runaway_tool_meets_its_cpu_limit",
            a_runaway_tool_meets_its_cpu_limit,
        ),
        (
            "unbounded_allocation_is_stopped_by_its_memory_limit",
            unbounded_allocation_is_stopped_by_its_memory_limit,
        ),
        (
            "an_undeclared_environment_variable_is_unseen",
            an_undeclared_environment_variable_is_unseen,
        ),
        (
            "the_network_is_cut_where_the_platform_allows",
            the_network_is_cut_where_the_platform_allows,
        ),
        (
            "no_host_abstract_socket_with_the_network_allowed",
            no_host_abstract_socket_with_the_network_allowed,
        ),
        (
            "results_errors_and_panics_come_back",
            results_errors_and_panics_come_back,
        ),
        (
            "without_a_sandbox_the_call_is_refused",
            without_a_sandbox_the_call_is_refused,
        ),
        (
            "a_run_time_tool_cannot_be_sent_to_a_process",
            a_run_time_tool_cannot_be_sent_to_a_process,
        ),
    ])
}

//! MCP across process boundaries and SDKs, each check bounded in time:
//!
//! * our example server (`examples/mcp_server.rs` of the library) over real stdio survives malformed
//!   input and writes nothing but JSON-RPC to stdout;
//! * the official Python SDK's client lists and calls its tools, good and bad;
//! * our importer calls a server made with the Python SDK, and fails in time when it
//!   hangs or dies;
//! * imported calls record to a cassette and replay offline, with no server;
//! * the streamable-HTTP transport serves and imports;
//! * an import into a runtime's live tools follows the server's
//!   `notifications/tools/list_changed`.
//!
//! This binary has its own `main` (no libtest harness) so that it can also *be* the
//! example server: started with `TACKLE_MCP_SERVE=1`, it serves the example's tools
//! over stdio, and nothing else reaches stdout.
//!
//! The Python SDK (PyPI `mcp`) lives in a virtual environment: `TACKLE_MCP_PYTHON`
//! names its interpreter, else `.venv/bin/python` in the workspace, which is created
//! (and `mcp` installed) on first use if it is missing. `.ci/run` creates it up front.

#[path = "../../examples/mcp_server.rs"]
#[allow(dead_code)]
mod example;
#[path = "support/harness.rs"]
mod harness;
use harness::tokio;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::replay::Mode;
use tackle::{
    replay::CassetteConfig, Cassette, Registry, Run, Runtime, ToolContext, ToolErrorKind, ToolSpec,
};
use tackle_mcp::{import_http, import_stdio, register_offline, serve_http, ImportOptions};

const SERVE: &str = "TACKLE_MCP_SERVE";
const MCP_VERSION: &str = "2.3.0";

/// Set (to `inherit` or `discard`): this binary imports a noisy stdio server and exits.
const IMPORT_STDERR: &str = "TACKLE_TEST_IMPORT_STDERR";

/// The Python server, announcing itself on stderr first.
fn noisy_python_server() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python());
    let script = suite().join("tests/mcp/py_server.py");
    command.args([
        "-c",
        &format!(
            "import sys, runpy; sys.stderr.write('NOISY-SERVER-STARTS\\n'); sys.stderr.flush(); sys.argv = [{:?}]; runpy.run_path({:?}, run_name='__main__')",
            script.display().to_string(),
            script.display().to_string()
        ),
    ]);
    command
}

/// An imported stdio server's stderr reaches this process's stderr by default, and
/// nowhere with `ServerStderr::Discard` (the import runs in a child, whose stderr is
/// read whole).
fn an_imported_servers_stderr_goes_where_asked() {
    for (mode, shown) in [("inherit", true), ("discard", false)] {
        let out = Command::new(std::env::current_exe().expect("own path"))
            .env(IMPORT_STDERR, mode)
            .output()
            .expect("child ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        assert_eq!(
            stderr.contains("NOISY-SERVER-STARTS"),
            shown,
            "{mode}: {stderr}"
        );
    }
}

fn main() -> ExitCode {
    if std::env::var_os(SERVE).is_some() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("tokio");
        return match runtime.block_on(example::run(&[])) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(mode) = std::env::var_os(IMPORT_STDERR) {
        // The child half of `an_imported_servers_stderr_goes_where_asked`.
        let stderr = if mode == "discard" {
            tackle_mcp::ServerStderr::Discard
        } else {
            tackle_mcp::ServerStderr::Inherit
        };
        tokio().block_on(async {
            let mut registry = Registry::default();
            let import = import_stdio(
                &mut registry,
                noisy_python_server(),
                ImportOptions::new("noisy").with_stderr(stderr),
            )
            .await
            .expect("import");
            import.close().await;
        });
        return ExitCode::SUCCESS;
    }
    harness::run(&[
        (
            "stdio_server_survives_malformed_input_and_writes_only_json_rpc",
            stdio_server_survives_malformed_input,
        ),
        (
            "stdio_server_answers_into_a_file",
            stdio_server_answers_into_a_file,
        ),
        (
            "python_client_lists_and_calls_our_server",
            python_client_lists_and_calls_our_server,
        ),
        (
            "python_client_uses_the_conformance_fixtures",
            python_client_uses_the_conformance_fixtures,
        ),
        (
            "importer_calls_a_python_server_and_fails_in_time",
            importer_calls_a_python_server,
        ),
        (
            "imported_calls_record_then_replay_offline",
            imported_calls_record_then_replay_offline,
        ),
        (
            "http_transport_serves_and_imports",
            http_transport_serves_and_imports,
        ),
        (
            "python_client_over_http_with_bearer_tokens",
            python_client_over_http_with_bearer_tokens,
        ),
        (
            "an_imported_servers_stderr_goes_where_asked",
            an_imported_servers_stderr_goes_where_asked,
        ),
        (
            "the_importer_keeps_the_reference_servers_tiny_image",
            the_importer_keeps_the_reference_servers_tiny_image,
        ),
        (
            "live_imports_follow_the_servers_list_changes",
            live_imports_follow_the_servers_list_changes,
        ),
    ])
}

/// The version of the MCP reference server (`server-everything`, from npm) the
/// image check runs against.
const EVERYTHING_VERSION: &str = "2026.8.31";

/// The MCP reference server's entry point: `TACKLE_MCP_EVERYTHING` when set, else the
/// package installed with npm under `target/mcp-everything` (installed first when it
/// is not there).
fn everything() -> PathBuf {
    if let Some(path) = std::env::var_os("TACKLE_MCP_EVERYTHING") {
        return PathBuf::from(path);
    }
    let prefix = workspace().join("target").join("mcp-everything");
    let package = prefix.join("node_modules/@modelcontextprotocol/server-everything");
    let installed = std::fs::read_to_string(package.join("package.json"))
        .is_ok_and(|p| p.contains(&format!("\"version\": \"{EVERYTHING_VERSION}\"")));
    if !installed {
        eprintln!(
            "installing the MCP reference server {EVERYTHING_VERSION} into {}",
            prefix.display()
        );
        let status = Command::new("timeout")
            .args([
                "300",
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                "--prefix",
            ])
            .arg(&prefix)
            .arg(format!(
                "@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"
            ))
            .status()
            .expect("npm install");
        assert!(
            status.success(),
            "npm install of the MCP reference server failed"
        );
    }
    package.join("dist/index.js")
}

fn the_importer_keeps_the_reference_servers_tiny_image() {
    let entry = everything();
    tokio().block_on(async {
        let mut server = tokio::process::Command::new("node");
        server.arg(&entry).arg("stdio");
        let mut registry = Registry::default();
        let import = import_stdio(
            &mut registry,
            server,
            ImportOptions::new("everything").with_stderr(tackle_mcp::ServerStderr::Discard),
        )
        .await
        .expect("import the reference server");
        let key = import
            .keys()
            .iter()
            .find(|k| k.contains("tiny"))
            .cloned()
            .expect("a tiny-image tool");
        let rt = Runtime::new(registry);
        let value = rt
            .call(&key, json!({}), &ToolContext::new().with_grant("mcp:everything"))
            .await
            .expect("call the tiny-image tool");
        let parts: Vec<tackle::content::ContentPart> =
            serde_json::from_value(value.clone()).expect("content parts");
        let images: Vec<&tackle::content::ContentPart> =
            parts.iter().filter(|p| p.is_attachment()).collect();
        assert_eq!(images.len(), 1, "{parts:?}");
        assert_eq!(images[0].mime_type(), "image/png");
        let bytes = images[0].bytes().expect("base64");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG, {} bytes", bytes.len());
        assert!(
            parts.iter().any(|p| matches!(p, tackle::content::ContentPart::Text { text } if text.contains("image"))),
            "the text blocks stay: {parts:?}"
        );
        // What a ReAct run sends the model: the text, and the image beside it.
        let (text, attached) = tackle::content::split_output(&value).expect("an image");
        assert!(text.contains("[image/png image,"), "{text}");
        assert_eq!(attached.len(), 1);
        import.close().await;
    });
}

/// This binary, as the example server.
fn server_command() -> Command {
    let mut command = Command::new(std::env::current_exe().expect("own path"));
    command.env(SERVE, "1");
    command
}

/// The workspace's root: this suite's package is one folder below it.
fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// This suite's package, where `tests/mcp` is.
fn suite() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Waits for `child` at most `limit`, killing it after.
fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With stdin a pipe and stdout a file (not both pipes), the server serves through
/// Tokio's stdin and stdout, not the non-blocking pipes; both answers land in the file.
fn stdio_server_answers_into_a_file() {
    let dir = std::env::temp_dir().join(format!("tackle-stdio-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let path = dir.join("answers.jsonl");
    let file = std::fs::File::create(&path).expect("the answers file");
    let mut child = server_command()
        .stdin(Stdio::piped())
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        // The server waits for each line: a read that finds no data yet must wait,
        // not fail (as it would on a stdin made non-blocking under a blocking reader).
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(stdin);
    let status = wait_bounded(&mut child, Duration::from_secs(20));
    assert!(status.success(), "the server exits cleanly: {status}");
    let answers = std::fs::read_to_string(&path).expect("the answers");
    let ids: Vec<Value> = answers
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON-RPC")["id"].clone())
        .collect();
    assert_eq!(ids, [json!(1), json!(2)], "{answers}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn stdio_server_survives_malformed_input() {
    let mut child = server_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the server");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        "this is not json",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "{\"unterminated\": ",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"units.convert"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"text.stats","arguments":{"text":"still here"}}}"#,
        r#"[1, 2, 3]"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    ];
    for line in lines {
        writeln!(stdin, "{line}").expect("write");
    }
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let status = wait_bounded(&mut child, Duration::from_secs(20));
    assert!(
        status.success(),
        "the server exits cleanly at end of input: {status}"
    );
    let mut answers = std::collections::BTreeMap::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read");
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!("stdout holds something other than JSON-RPC: {line:?}: {e}")
        });
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if let Some(id) = message["id"].as_i64() {
            answers.insert(id, message);
        }
    }
    assert_eq!(
        answers[&1]["result"]["serverInfo"]["name"],
        "tackle-example"
    );
    assert_eq!(
        answers[&2]["result"]["isError"], true,
        "missing arguments: {}",
        answers[&2]
    );
    assert!(answers[&3]["error"].is_object());
    assert_eq!(
        answers[&4]["result"]["structuredContent"],
        json!({"words": 2, "characters": 10, "longest_word": "still"})
    );
    assert_eq!(
        answers[&5]["result"]["tools"].as_array().map(Vec::len),
        Some(5)
    );
}

/// The Python interpreter of a venv with the MCP SDK, made if missing.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("TACKLE_MCP_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = workspace().join(".venv");
    let python = venv.join("bin").join("python");
    let has_sdk = |python: &Path| {
        Command::new(python)
            .args(["-c", &format!("import mcp, importlib.metadata as m; assert m.version('mcp') == '{MCP_VERSION}'")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_sdk(&python) {
        eprintln!(
            "installing the Python MCP SDK {MCP_VERSION} into {}",
            venv.display()
        );
        let made = Command::new("timeout")
            .args(["300", "python3", "-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(made.success(), "python3 -m venv failed");
        let installed = Command::new("timeout")
            .arg("600")
            .arg(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                &format!("mcp=={MCP_VERSION}"),
            ])
            .status()
            .expect("pip install mcp");
        assert!(installed.success(), "pip install mcp=={MCP_VERSION} failed");
    }
    python
}

/// Runs the Python client script `script` (in `tests/mcp/`) against `server` (with
/// `SERVE` set), bounded in time; what it printed, as one JSON object.
fn python_check(script: &str, server: &Path) -> Value {
    let mut child = Command::new(python())
        .arg(suite().join("tests/mcp").join(script))
        .arg(server)
        .env(SERVE, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the Python client");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let mut out = String::new();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).expect("read");
    std::io::Read::read_to_string(&mut stderr, &mut err).expect("read");
    assert!(status.success(), "the Python client failed: {err}");
    let seen: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    seen
}

fn python_client_lists_and_calls_our_server() {
    let seen = python_check(
        "client_check.py",
        &std::env::current_exe().expect("own path"),
    );

    assert_eq!(seen["server"]["name"], "tackle-example");
    assert!(seen["capabilities"]["tools"].is_object());
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "notes.save",
            "notes.search",
            "report.render",
            "text.stats",
            "units.convert"
        ]
    );
    let convert = &seen["tools"][4];
    assert_eq!(
        convert["inputSchema"]["required"],
        json!(["value", "from", "to"])
    );
    assert_eq!(convert["annotations"]["readOnlyHint"], true);
    assert_eq!(seen["tools"][0]["annotations"]["destructiveHint"], true);

    let good = &seen["good"];
    assert_eq!(good["isError"], false);
    let miles = good["structuredContent"]["result"]
        .as_f64()
        .expect("a number");
    assert!((miles - 3.106_855_961).abs() < 1e-6, "{miles}");

    let invalid = &seen["invalid"];
    assert_eq!(invalid["isError"], true);
    assert_eq!(
        invalid["content"][0]["text"],
        "invalid input for `units.convert@1`: at /value: \"five\" is not of type \"number\""
    );
    assert_eq!(seen["failing"]["isError"], true);
    assert!(seen["failing"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("unknown unit `parsec`")));
    assert_eq!(seen["saved"]["structuredContent"], json!({"result": 1}));
    assert_eq!(
        seen["found"]["structuredContent"],
        json!({"result": ["buy milk"]})
    );
    assert_eq!(
        seen["report"]["structuredContent"]["result"],
        "# Q3\n## Section 1\n## Section 2\n## Section 3\n"
    );
    assert_eq!(
        seen["progress"],
        json!([[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]])
    );
    assert!(
        seen["unknown"]["exception"]
            .as_str()
            .is_some_and(|e| e.contains("unknown tool `no.such`")),
        "{}",
        seen["unknown"]
    );
}

/// The conformance fixture server (`suite/examples/mcp_conformance.rs`), built if needed.
fn fixture_server() -> PathBuf {
    let built = Command::new("timeout")
        .arg("900")
        .arg(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "tackle-suite",
            "--example",
            "mcp_conformance",
        ])
        .current_dir(workspace())
        .status()
        .expect("cargo build --example mcp_conformance");
    assert!(built.success(), "the fixture example did not build");
    let exe = std::env::current_exe().expect("own path");
    let debug = exe
        .parent()
        .and_then(Path::parent)
        .expect("the target folder");
    debug.join("examples").join("mcp_conformance")
}

/// The Python SDK's client over stdio against the conformance fixtures: resources,
/// templates, prompts, completion, logging, progress, and the server asking the
/// client's model (sampling) and its user (elicitation).
fn python_client_uses_the_conformance_fixtures() {
    let seen = python_check("fixture_check.py", &fixture_server());

    for capability in ["tools", "resources", "prompts", "logging", "completions"] {
        assert!(
            seen["capabilities"][capability].is_object(),
            "{capability}: {}",
            seen["capabilities"]
        );
    }
    assert!(seen["tools"]
        .as_array()
        .is_some_and(|t| t.contains(&json!("test_simple_text"))
            && t.contains(&json!("json_schema_2020_12_tool"))));
    assert_eq!(seen["resources"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        seen["templates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    // The suite's four, and the one that asks its client (2026-07-28 clients only).
    assert_eq!(seen["prompts"].as_array().map(Vec::len), Some(5));
    assert_eq!(
        seen["text"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(seen["binary"]["contents"][0]["mimeType"], "image/png");
    assert!(seen["binary"]["contents"][0]["blob"]
        .as_str()
        .is_some_and(|b| b.starts_with("iVBOR")));
    assert_eq!(
        seen["template"]["contents"][0]["text"],
        r#"{"id":"42","templateTest":true,"data":"Data for ID: 42"}"#
    );
    assert_eq!(
        seen["prompt"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );
    assert_eq!(seen["completion"]["completion"]["values"], json!(["456"]));
    assert_eq!(
        seen["sampled"]["content"][0]["text"],
        "LLM response: echo: Hi there"
    );
    assert_eq!(
        seen["elicited"]["content"][0]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );
    assert_eq!(
        seen["progress"],
        json!([[0.0, 100.0], [50.0, 100.0], [100.0, 100.0]])
    );
    let logged: Vec<&str> = seen["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .filter_map(|l| l["data"].as_str())
        .collect();
    assert_eq!(
        logged,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );
}

fn python_server(hang: bool) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python());
    command.arg(suite().join("tests/mcp/py_server.py"));
    if hang {
        command.arg("--hang");
    }
    command
}

fn importer_calls_a_python_server() {
    tokio().block_on(async {
        let mut registry = Registry::default();
        // Two remote names that map to one key: refused, naming both; nothing stays.
        let mut colliding = python_server(false);
        colliding.arg("--collide");
        match import_stdio(&mut registry, colliding, ImportOptions::new("py-weather")).await {
            Err(tackle_mcp::McpError::ImportCollision {
                first, second, key, ..
            }) => {
                let mut names = [first, second];
                names.sort();
                assert_eq!(names, ["book.table", "book_table"]);
                assert_eq!(key, "mcp.py-weather.book_table@1.2.0");
            }
            other => panic!("expected an import collision, got {other:?}"),
        }
        assert!(registry.list_names().is_empty(), "nothing half-imported");
        let import = import_stdio(
            &mut registry,
            python_server(false),
            ImportOptions::new("py-weather"),
        )
        .await
        .expect("import");
        assert_eq!(import.server(), "py-weather");
        assert_eq!(
            import.keys(),
            [
                "mcp.py-weather.book_table@1.2.0",
                "mcp.py-weather.crash@1.2.0",
                "mcp.py-weather.forecast@1.2.0",
                "mcp.py-weather.slow@1.2.0"
            ]
        );
        let rt = Runtime::new(registry);
        let forecast = rt
            .registry()
            .resolve("mcp.py-weather.forecast")
            .expect("tool");
        assert_eq!(
            forecast.spec().side_effects,
            tackle::SideEffects::Read,
            "readOnlyHint"
        );
        assert_eq!(forecast.spec().trust, tackle::spec::Trust::Mcp);
        let book = rt
            .registry()
            .resolve("mcp.py-weather.book_table")
            .expect("tool");
        assert_eq!(book.spec().side_effects, tackle::SideEffects::External);

        // Imported tools need the `mcp:<server>` grant.
        let denied = rt
            .call(
                "mcp.py-weather.forecast",
                json!({"city": "Oslo"}),
                &ToolContext::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(denied.kind(), ToolErrorKind::CapabilityDenied, "{denied}");
        let ctx = ToolContext::new().with_grant("mcp:py-weather");
        let out = rt
            .call(
                "mcp.py-weather.forecast",
                json!({"city": "Oslo", "days": 2}),
                &ctx,
            )
            .await
            .expect("forecast");
        assert_eq!(out["summary"], "2 day(s) of sun in Oslo");
        // The remote schema is enforced at our door, before the server sees anything.
        let err = rt
            .call("mcp.py-weather.forecast", json!({"days": 2}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput, "{err}");
        // A tool error on the server side is an Execution error here.
        let err = rt
            .call(
                "mcp.py-weather.book_table",
                json!({"restaurant": "Noma", "people": 20}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Execution);
        assert!(err.to_string().contains("tables seat at most 12"), "{err}");

        // A server that dies mid-call: that call fails at once with `Disconnected` (it
        // may have had an effect: it is not run again). Imported with `import_stdio`,
        // the command ran once: the next call fails at once too.
        let started = Instant::now();
        let crash = rt
            .call("mcp.py-weather.crash", json!({}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(crash.kind(), ToolErrorKind::Disconnected, "{crash}");
        let after = rt
            .call(
                "mcp.py-weather.forecast",
                json!({"city": "Oslo", "days": 2}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert_eq!(after.kind(), ToolErrorKind::Execution, "{after}");
        assert!(after.to_string().contains("import_stdio_with"), "{after}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        import.close().await;

        // Imported with `import_stdio_with`, the next call starts the server again and
        // succeeds against the new process; after `close`, calls fail at once.
        let mut registry = Registry::default();
        let import = tackle_mcp::import_stdio_with(
            &mut registry,
            || python_server(false),
            ImportOptions::new("py-weather"),
        )
        .await
        .expect("import");
        let rt = Runtime::new(registry);
        let crash = rt
            .call("mcp.py-weather.crash", json!({}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(crash.kind(), ToolErrorKind::Disconnected, "{crash}");
        let after = rt
            .call(
                "mcp.py-weather.forecast",
                json!({"city": "Oslo", "days": 2}),
                &ctx,
            )
            .await
            .expect("the next call, against a new server process");
        assert_eq!(after["summary"], "2 day(s) of sun in Oslo");
        import.close().await;
        let closed = rt
            .call(
                "mcp.py-weather.forecast",
                json!({"city": "Oslo", "days": 2}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert!(closed.to_string().contains("was closed"), "{closed}");

        // A server that hangs: the call timeout answers.
        let mut registry = Registry::default();
        let options =
            ImportOptions::new("py-weather").with_call_timeout(Duration::from_millis(500));
        let hung = import_stdio(&mut registry, python_server(true), options)
            .await
            .expect("import");
        let rt = Runtime::new(registry);
        let started = Instant::now();
        let err = rt
            .call("mcp.py-weather.slow", json!({"seconds": 0.1}), &ctx)
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(err.kind(), ToolErrorKind::Timeout, "{err}");
        assert_eq!(
            err.to_string(),
            "`mcp.py-weather.slow@1.2.0` timed out after 500 ms"
        );
        assert!(
            took >= Duration::from_millis(500) && took < Duration::from_secs(3),
            "{took:?}"
        );
        hung.close().await;
    });
}

fn imported_calls_record_then_replay_offline() {
    let dir = std::env::temp_dir().join(format!("tackle-mcp-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("notes.json");
    let ctx = ToolContext::new().with_grant("mcp:*");
    let specs: Vec<ToolSpec> = tokio().block_on(async {
        let mut registry = Registry::default();
        let import = import_stdio(
            &mut registry,
            tokio::process::Command::from(server_command()),
            ImportOptions::new("desk"),
        )
        .await
        .expect("import our own server");
        let cassette = Cassette::open(
            &path,
            CassetteConfig::new()
                .with_mode(Mode::Rewrite)
                .with_env_overrides(false),
        )
        .expect("cassette");
        let run = Run::new(&Arc::new(Runtime::new(registry))).with_cassette(cassette);
        let saved = run
            .call(
                "mcp.desk.notes_save",
                json!({"text": "call the plumber"}),
                &ctx,
            )
            .await
            .expect("save");
        assert_eq!(saved, json!(1));
        let found = run
            .call("mcp.desk.notes_search", json!({"word": "plumber"}), &ctx)
            .await
            .expect("search");
        assert_eq!(found, json!(["call the plumber"]));
        run.finish().expect("saved");
        let specs = import.specs().to_vec();
        import.close().await;
        specs
    });
    // Offline: no server, the same specs, the recorded cassette.
    tokio().block_on(async {
        let mut registry = Registry::default();
        let keys = register_offline(&mut registry, specs).expect("offline tools");
        assert!(
            keys.contains(&"mcp.desk.notes_save@0.1.0".to_owned()),
            "{keys:?}"
        );
        let cassette = Cassette::open(
            &path,
            CassetteConfig::new()
                .with_mode(Mode::Replay)
                .with_env_overrides(false),
        )
        .expect("cassette");
        let run = Run::new(&Arc::new(Runtime::new(registry))).with_cassette(cassette);
        assert_eq!(
            run.call(
                "mcp.desk.notes_save",
                json!({"text": "call the plumber"}),
                &ctx
            )
            .await
            .expect("replayed"),
            json!(1)
        );
        assert_eq!(
            run.call("mcp.desk.notes_search", json!({"word": "plumber"}), &ctx)
                .await
                .expect("replayed"),
            json!(["call the plumber"])
        );
        // Not recorded: a write must be stubbed, so it is a miss, never a call.
        let miss = run
            .call(
                "mcp.desk.notes_save",
                json!({"text": "something else"}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert_eq!(miss.kind(), ToolErrorKind::CassetteMiss, "{miss}");
    });
    std::fs::remove_dir_all(&dir).ok();
}

fn http_transport_serves_and_imports() {
    tokio().block_on(async {
        let server = example::server().expect("server");
        let http = serve_http(server, "127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("serve");
        assert!(http.local_addr().ip().is_loopback());
        let mut registry = Registry::default();
        let import = import_http(
            &mut registry,
            &http.url(),
            // Callers of these imported tools need no permission.
            ImportOptions::new("web").with_requires(Vec::<String>::new()),
        )
        .await
        .expect("import over HTTP");
        assert_eq!(import.keys().len(), 5);
        let rt = Arc::new(Runtime::new(registry));
        let out = rt
            .call(
                "mcp.web.units_convert",
                json!({"value": 1, "from": "mi", "to": "km"}),
                &ToolContext::new(),
            )
            .await
            .expect("call over HTTP");
        assert_eq!(out, json!(1.609344));
        import.close().await;
        http.shutdown().await;
    });
}

/// The Python SDK's client over HTTP: a writer's token may save a note, a reader's
/// token is denied by the door, and no token or a wrong one gets 401 before the door,
/// as does the writer's token from a foreign `Origin` (403).
fn python_client_over_http_with_bearer_tokens() {
    tokio().block_on(async {
        let server = example::server().expect("server");
        let options = tackle_mcp::HttpOptions::default()
            .with_token("writer-token-1", &["notes:write"])
            .with_token("reader-token-2", &[]);
        let http =
            tackle_mcp::serve_http_with(server, "127.0.0.1:0".parse().expect("addr"), options)
                .await
                .expect("serve");
        let out = tokio::process::Command::new(python())
            .arg(suite().join("tests/mcp/http_token_check.py"))
            .args([http.url().as_str(), "writer-token-1", "reader-token-2"])
            .output();
        let out = tokio::time::timeout(Duration::from_secs(120), out)
            .await
            .expect("the client finished in time")
            .expect("python ran");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
        assert_eq!(report["writer"], json!({"is_error": false}), "{report}");
        // The reader's grants cannot write: the tool is unknown to it.
        let refused = report["reader"]["refused"].as_str().unwrap_or_default();
        assert!(refused.contains("unknown tool `notes.save`"), "{report}");
        // Refused before the door (the SDK reports the 401 as an error response; the
        // status itself is checked in tests/mcp_serve.rs).
        for (who, status) in [("none", 401), ("wrong", 401), ("foreign_origin", 403)] {
            let refused = report[who]["refused"].as_str().unwrap_or_default();
            assert!(refused.contains("error response"), "{who}: {report}");
            assert_eq!(
                report[who]["statuses"],
                json!([status]),
                "{who} is refused with {status}, before anything else: {report}"
            );
        }
        http.shutdown().await;
    });
}

/// A Python server changes its tools while imported into a runtime's live tools: the
/// new key appears, the removed one gives `NotFound`, the changed one validates with
/// its new schema, and every change is audited; an import into a plain registry keeps
/// what it listed.
fn live_imports_follow_the_servers_list_changes() {
    use tackle::registry::{ToolChange, ToolChangeKind};
    tokio().block_on(async {
        let server = || {
            let mut command = tokio::process::Command::new(python());
            command.arg(suite().join("tests/mcp/py_changing.py"));
            command
        };
        let audit = Arc::new(tackle::audit::MemoryAudit::new());
        let rt = Runtime::default().with_audit(Arc::clone(&audit));
        let options = ImportOptions::new("changing").with_requires(Vec::<String>::new());
        let import = tackle_mcp::import_stdio_with(rt.live_tools(), server, options.clone())
            .await
            .expect("import into live tools");
        let at_start = [
            "mcp.changing.echo@1.0.0",
            "mcp.changing.grow@1.0.0",
            "mcp.changing.old_tool@1.0.0",
        ];
        assert_eq!(import.keys(), at_start);
        assert_eq!(rt.live_tools().keys(), at_start);
        assert!(
            rt.registry().is_empty(),
            "live tools are not the fixed registry"
        );
        assert_eq!(rt.tools().len(), 3);
        let ctx = ToolContext::new();
        assert_eq!(
            rt.call("mcp.changing.echo", json!({"text": "hi"}), &ctx)
                .await
                .unwrap(),
            json!({"result": "hi"})
        );
        assert_eq!(
            rt.call("mcp.changing.old_tool", json!({}), &ctx)
                .await
                .unwrap(),
            json!({"result": "old"})
        );
        assert!(audit
            .changes()
            .iter()
            .all(|c| c.change == ToolChangeKind::Added));

        // A plain registry import of the same server, for contrast.
        let mut fixed = Registry::default();
        let kept = import_stdio(&mut fixed, server(), ImportOptions::new("fixed"))
            .await
            .expect("import into a registry");

        assert_eq!(
            rt.call("mcp.changing.grow", json!({}), &ctx).await.unwrap(),
            json!({"result": "grown"})
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while !rt.live_tools().keys().iter().any(|k| k.contains("fresh")) {
            assert!(Instant::now() < deadline, "the list change never arrived");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let now = [
            "mcp.changing.echo@1.0.0",
            "mcp.changing.fresh@1.0.0",
            "mcp.changing.grow@1.0.0",
        ];
        assert_eq!(rt.live_tools().keys(), now);
        assert_eq!(import.keys(), now);
        assert_eq!(
            rt.call("mcp.changing.fresh", json!({"x": 21}), &ctx)
                .await
                .unwrap(),
            json!({"result": 42})
        );
        let gone = rt
            .call("mcp.changing.old_tool", json!({}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(gone.kind(), ToolErrorKind::NotFound, "{gone}");
        let old_schema = rt
            .call("mcp.changing.echo", json!({"text": "hi"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            old_schema.kind(),
            ToolErrorKind::InvalidInput,
            "{old_schema}"
        );
        assert_eq!(
            rt.call("mcp.changing.echo", json!({"text": "hi", "times": 2}), &ctx)
                .await
                .unwrap(),
            json!({"result": "hihi"})
        );
        let changed = |key: &str, change| ToolChange {
            key: key.to_owned(),
            change,
            source: "mcp:changing".to_owned(),
        };
        assert_eq!(
            audit.changes()[3..],
            [
                changed("mcp.changing.echo@1.0.0", ToolChangeKind::Changed),
                changed("mcp.changing.fresh@1.0.0", ToolChangeKind::Added),
                changed("mcp.changing.old_tool@1.0.0", ToolChangeKind::Removed),
            ]
        );

        // The registry import listed once and keeps that list.
        assert_eq!(
            kept.keys(),
            [
                "mcp.fixed.echo@1.0.0",
                "mcp.fixed.grow@1.0.0",
                "mcp.fixed.old_tool@1.0.0"
            ]
        );
        kept.close().await;
        // Closed, a live import takes its tools out, audited.
        import.close().await;
        assert!(rt.live_tools().keys().is_empty());
        let removed = audit
            .changes()
            .into_iter()
            .filter(|c| c.change == ToolChangeKind::Removed)
            .count();
        assert_eq!(removed, 1 + 3, "old_tool, then the three left at close");
        let gone = rt
            .call("mcp.changing.fresh", json!({"x": 1}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(gone.kind(), ToolErrorKind::NotFound);
    });
}

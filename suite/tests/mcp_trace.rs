//! One trace across two tackle processes (W3C trace context in `_meta`, SEP-414;
//! `tackle-mcp`'s feature `otel`).
//!
//! This binary is both processes. As the test, it traces with OpenTelemetry through
//! `tracing` into an in-memory exporter, imports a server over stdio, and calls its
//! tool under a span. As the server (the same binary run again with
//! `TACKLE_TRACE_CHILD` naming a file), it traces the same way and writes every span
//! it ends to that file. The test then finds the served spans in the caller's trace,
//! under the caller's `tool.call` span.

#[path = "support/harness.rs"]
mod harness;

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData, SpanExporter};
use serde_json::{json, Value};
use tackle::{tool, Registry, Runtime, ToolContext};
use tackle_mcp::{import_stdio, Identity, ImportOptions, McpServer};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

const CHILD: &str = "TACKLE_TRACE_CHILD";

/// Says hello.
#[tool(namespace = "trace", side_effects = none)]
fn hello(name: String) -> String {
    format!("hello, {name}")
}

/// Writes every span it is given to a file, one JSON line each: the server process's
/// exporter (its spans must reach the test, another process).
#[derive(Debug)]
struct FileExporter(Mutex<std::fs::File>);

impl SpanExporter for FileExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for span in batch {
            let line = json!({
                "name": span.name,
                "trace_id": span.span_context.trace_id().to_string(),
                "span_id": span.span_context.span_id().to_string(),
                "parent_span_id": span.parent_span_id.to_string(),
                "parent_is_remote": span.parent_span_is_remote,
            });
            let _ = writeln!(file, "{line}");
        }
        Ok(())
    }
}

/// Installs `exporter` behind OpenTelemetry's tracing layer for the whole process.
fn trace_into(exporter: impl SpanExporter + 'static) -> SdkTracerProvider {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter)
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tackle-test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("one subscriber");
    provider
}

/// The server process: serves `trace.hello` over stdio, tracing into `file`.
fn serve(file: &str) -> ExitCode {
    let file = std::fs::File::create(file).expect("the span file");
    let _provider = trace_into(FileExporter(Mutex::new(file)));
    harness::tokio().block_on(async {
        let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
        let server = McpServer::new(runtime, Identity::new("traced", "1"), ToolContext::new())
            .expect("server");
        match tackle_mcp::serve_stdio(server).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    })
}

fn one_trace_crosses_two_processes() {
    let exporter = InMemorySpanExporter::default();
    let provider = trace_into(exporter.clone());
    let dir = std::env::temp_dir().join(format!("tackle-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spans_file = dir.join("server-spans.jsonl");
    harness::tokio().block_on(async {
        let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
        command.env(CHILD, &spans_file);
        let mut registry = Registry::new();
        let import = import_stdio(&mut registry, command, ImportOptions::new("traced"))
            .await
            .unwrap();
        let key = import.keys()[0].clone();
        assert!(key.starts_with("mcp.traced.trace_hello@"), "{key}");
        let runtime = Runtime::new(registry);
        let ctx = ToolContext::new().with_grant("mcp:traced");
        let out = runtime
            .call(&key, json!({"name": "ada"}), &ctx)
            .instrument(tracing::info_span!("agent.turn"))
            .await
            .unwrap();
        assert_eq!(out, json!("hello, ada"));
        import.close().await;
    });
    provider.force_flush().unwrap();

    // The caller's side: its turn, and the door's `tool.call` span under it.
    let ours = exporter.get_finished_spans().unwrap();
    let turn = ours
        .iter()
        .find(|s| s.name == "agent.turn")
        .expect("the turn");
    let call = ours
        .iter()
        .find(|s| s.name == "tool.call")
        .expect("the door's span");
    let trace = turn.span_context.trace_id().to_string();
    assert_eq!(call.span_context.trace_id().to_string(), trace);
    assert_eq!(call.parent_span_id, turn.span_context.span_id());

    // The server's side: its served span continues the caller's trace, as a child of
    // the caller's `tool.call` span; the server's own door span is under it.
    let theirs: Vec<Value> = std::fs::read_to_string(&spans_file)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let served = theirs
        .iter()
        .find(|s| s["name"] == "mcp.tools/call")
        .unwrap_or_else(|| panic!("no served span in {theirs:?}"));
    assert_eq!(served["trace_id"], json!(trace), "{theirs:?}");
    assert_eq!(
        served["parent_span_id"],
        json!(call.span_context.span_id().to_string())
    );
    assert_eq!(served["parent_is_remote"], json!(true));
    let door = theirs
        .iter()
        .find(|s| s["name"] == "tool.call")
        .unwrap_or_else(|| panic!("no door span in {theirs:?}"));
    assert_eq!(door["trace_id"], json!(trace));
    assert_eq!(door["parent_span_id"], served["span_id"]);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() -> ExitCode {
    if let Ok(file) = std::env::var(CHILD) {
        return serve(&file);
    }
    harness::run(&[(
        "one_trace_crosses_two_processes",
        one_trace_crosses_two_processes,
    )])
}

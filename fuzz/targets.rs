//! The bodies of the fuzz targets, shared by `cargo fuzz` (`fuzz/fuzz_targets/`) and by
//! the stable suite (`tests/fuzz_corpus.rs`, which runs them over the seed corpora and
//! mutations of them). Each must return, never panic and never hang, whatever the
//! bytes.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::Value;
use tackle::{registry::DynamicTool, Registry, Runtime, SideEffects, ToolContext, ToolSpec};

/// A runtime with one tool whose input schema has the usual keywords.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let mut spec = ToolSpec::new("fuzz", "shape", "1", SideEffects::None, "Echoes.");
        spec.input_schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 64},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                "n": {"type": "integer", "minimum": 0, "maximum": 1000},
                "nested": {"type": "object", "additionalProperties": {"type": "number"}}
            },
            "required": ["name"],
            "additionalProperties": false
        });
        let mut registry = Registry::default();
        let _ = registry.register(DynamicTool::new(spec, |_ctx, input| async move {
            Ok::<_, String>(input)
        }));
        Runtime::new(registry)
    })
}

/// Polls a future that completes at once (a sync path through the door).
fn ready<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// The door's input: any JSON value, to the tool and to unknown keys.
pub fn door_input(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let key = if data.first().is_some_and(|b| b % 2 == 0) {
        "fuzz.shape@1"
    } else {
        "fuzz.nothing"
    };
    let _ = ready(runtime().call(key, value, &ToolContext::new()));
}

/// The cassette loader: any bytes as a cassette file.
pub fn cassette(data: &[u8]) {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tackle-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("c{}.json", n % 8));
    if std::fs::write(&path, data).is_ok() {
        let _ = tackle::replay::load(&path);
    }
}

/// Pipeline documents: any text.
pub fn pipeline_yaml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = tackle::pipeline::Pipeline::from_yaml(text);
    }
}

/// MCP stdio framing: any bytes as a client's stream, read until the server stops.
pub fn stdio_framing(data: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let runtime = Arc::new(Runtime::new(Registry::default()));
    let Ok(server) = tackle_mcp::McpServer::new(
        runtime,
        tackle_mcp::Identity::new("fuzz", "1"),
        ToolContext::new(),
    ) else {
        return;
    };
    let options = tackle_mcp::StdioOptions {
        max_line_bytes: 4096,
    };
    rt.block_on(async {
        let (mut client_out, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_in) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(tackle_mcp::serve_io(server, server_in, server_out, options));
        let data = data.to_vec();
        let writer = tokio::spawn(async move {
            let _ = client_out.write_all(&data).await;
            let _ = client_out.shutdown().await;
        });
        let mut sink = Vec::new();
        // Once the client has said all and closed its side, the server answers what it
        // can and ends: a session that does not is a hang.
        let finished =
            tokio::time::timeout(Duration::from_secs(10), client_in.read_to_end(&mut sink)).await;
        writer.abort();
        serving.abort();
        assert!(
            finished.is_ok(),
            "the stdio server did not end within 10 s of its input"
        );
    });
}

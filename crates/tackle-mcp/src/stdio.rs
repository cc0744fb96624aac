//! Newline-delimited JSON-RPC over a pair of byte streams (stdin and stdout for
//! [`serve_stdio`](crate::serve_stdio)), with a line limit that answers.
//!
//! Every incoming line is read whole, up to [`StdioOptions::max_line_bytes`], before
//! the MCP service sees it. A longer line is not read into memory: the rest of it is
//! skipped, and the client gets a JSON-RPC error (`-32600`, invalid request) for the
//! request's id when its first bytes show one (else for id `null`), instead of
//! waiting for an answer that never comes. The reason is also logged at `WARN`.
//! Outgoing lines, the service's and these errors, are written whole, one at a time.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::{McpError, McpServer};
use rmcp::ServiceExt;

/// The default longest request line: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How a stdio server reads its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StdioOptions {
    /// The longest request line read; a longer one is answered with an error.
    pub max_line_bytes: usize,
}

impl Default for StdioOptions {
    fn default() -> StdioOptions {
        StdioOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Serves `server` over `input` and `output` (newline-delimited JSON-RPC) until the
/// input ends or the client disconnects. See the [module docs](self).
pub async fn serve_io<R, W>(
    server: McpServer,
    input: R,
    output: W,
    options: StdioOptions,
) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_service, service_in) = tokio::io::duplex(64 * 1024);
    let (service_out, from_service) = tokio::io::duplex(64 * 1024);
    let (errors_tx, errors_rx) = mpsc::unbounded_channel::<String>();
    let reader = tokio::spawn(read_requests(input, to_service, errors_tx, options));
    let writer = tokio::spawn(write_responses(from_service, output, errors_rx));
    let running = server
        .serve((service_in, service_out))
        .await
        .map_err(|e| McpError::Serve(e.to_string()))?;
    let served = running
        .waiting()
        .await
        .map_err(|e| McpError::Serve(e.to_string()));
    reader.abort();
    let _ = writer.await;
    served.map(|_| ())
}

/// Forwards whole lines within the limit; answers the others.
async fn read_requests<R, W>(
    input: R,
    mut service: W,
    errors: mpsc::UnboundedSender<String>,
    options: StdioOptions,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized = false;
    loop {
        let available = match input.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(bytes) => bytes,
        };
        let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = chunk.len();
        if !oversized {
            if line.len() + used > options.max_line_bytes + 1 {
                oversized = true;
                // Keep the start: it may name the request's id.
                line.extend_from_slice(&chunk[..chunk.len().min(4096)]);
                let _ = errors.send(too_long(&line, options.max_line_bytes));
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        input.consume(used);
        if ends {
            if !oversized && service.write_all(&line).await.is_err() {
                break;
            }
            line.clear();
            oversized = false;
        }
    }
    let _ = service.shutdown().await;
}

/// Copies the service's lines to `output`, with the reader's error answers between
/// them.
async fn write_responses<R, W>(
    from_service: R,
    mut output: W,
    mut errors: mpsc::UnboundedReceiver<String>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(from_service);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = lines.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            break;
                        }
                        line.clear();
                    }
                }
            }
            error = errors.recv(), if errors_open => {
                match error {
                    Some(text) => {
                        if output.write_all(text.as_bytes()).await.is_err()
                            || output.flush().await.is_err()
                        {
                            break;
                        }
                    }
                    None => errors_open = false,
                }
            }
        }
    }
}

/// The error line for a request line longer than `max`, whose start is `start`.
fn too_long(start: &[u8], max: usize) -> String {
    let id = request_id(start);
    tracing::warn!(
        max_line_bytes = max,
        "an MCP request line is longer than {max} bytes; it was skipped and answered with an error"
    );
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32600,
            "message": format!("the request is longer than the server's limit of {max} bytes"),
        },
    })
    .to_string();
    line.push('\n');
    line
}

/// The `"id"` of a request from the first bytes of its line: a number or a string
/// that appears before anything nested, else `null`.
fn request_id(start: &[u8]) -> Value {
    let text = String::from_utf8_lossy(start);
    let Some(at) = text.find("\"id\"") else {
        return Value::Null;
    };
    let rest = text[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Value::Null;
    };
    let rest = rest.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted
            .find('"')
            .map_or(Value::Null, |end| Value::String(quoted[..end].to_owned()));
    }
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    number
        .parse::<i64>()
        .map_or(Value::Null, |n| Value::Number(n.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_at_the_start_of_a_line() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":42,"method""#),
            json!(42)
        );
        assert_eq!(request_id(br#"{"id": "a-1", "params": {"#), json!("a-1"));
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","method":"x","params":{"#),
            Value::Null
        );
    }
}

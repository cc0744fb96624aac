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
    // A connection of its own: its log level and subscriptions are its own.
    let running = server
        .for_connection()
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
    // Set while a line over the limit is skipped: it reads the line's `id` as it goes.
    let mut oversized: Option<IdScanner> = None;
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
        match &mut oversized {
            Some(scanner) => scanner.feed(chunk),
            None if line.len() + used > options.max_line_bytes + 1 => {
                let mut scanner = IdScanner::default();
                scanner.feed(&line);
                scanner.feed(chunk);
                oversized = Some(scanner);
                line.clear();
            }
            None => line.extend_from_slice(chunk),
        }
        input.consume(used);
        if ends {
            match oversized.take() {
                Some(scanner) => {
                    let _ = errors.send(too_long(scanner.id(), options.max_line_bytes));
                }
                None => {
                    if service.write_all(&line).await.is_err() {
                        break;
                    }
                }
            }
            line.clear();
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

/// The error line for a request line longer than `max`, answering `id`.
fn too_long(id: Value, max: usize) -> String {
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

/// Finds a JSON-RPC request's top-level `"id"` (a number or a string) in a line read
/// piece by piece, however long, wherever the member is: it follows the nesting and
/// the strings, so an `"id"` inside `params` is not taken for it. Holds at most a
/// short string at a time.
#[derive(Default)]
struct IdScanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The string being read at depth 1, while it may be the key `id` or its value.
    text: Vec<u8>,
    keeping: bool,
    /// Whether the next string at depth 1 is a key.
    expect_key: bool,
    /// The last key at depth 1 was `id` and its value comes next.
    id_next: bool,
    /// A number value being read.
    number: Option<Vec<u8>>,
    found: Option<Value>,
}

/// The longest id kept.
const MAX_ID_BYTES: usize = 256;

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found.is_some() {
                return;
            }
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
                return;
            } else if b == b'"' {
                self.in_string = false;
                self.end_string();
                return;
            }
            if self.keeping {
                if self.text.len() < MAX_ID_BYTES {
                    self.text.push(b);
                } else {
                    self.keeping = false;
                }
            }
            return;
        }
        if let Some(number) = &mut self.number {
            if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
                if number.len() < MAX_ID_BYTES {
                    number.push(b);
                }
                return;
            }
            let text = String::from_utf8_lossy(number).into_owned();
            self.number = None;
            self.found = serde_json::from_str::<serde_json::Number>(&text)
                .ok()
                .map(Value::Number);
            if self.found.is_some() {
                return;
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.keeping = self.depth == 1 && (self.expect_key || self.id_next);
                self.text.clear();
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.id_next = false;
                self.expect_key = self.depth == 1 && b == b'{';
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.id_next = false;
            }
            b':' if self.depth == 1 => self.expect_key = false,
            b'-' | b'0'..=b'9' if self.depth == 1 && self.id_next => {
                self.number = Some(vec![b]);
            }
            _ => {}
        }
    }

    /// A string at depth 1 ended: a key (`id` or another), or the id's value.
    fn end_string(&mut self) {
        if !self.keeping {
            if self.depth == 1 && self.expect_key {
                self.id_next = false;
            }
            return;
        }
        let text = std::mem::take(&mut self.text);
        if self.expect_key {
            self.id_next = text == b"id";
        } else if self.id_next {
            self.found = String::from_utf8(text).ok().map(Value::String);
        }
    }

    /// The id found, or `null`.
    fn id(self) -> Value {
        self.found.unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(pieces: &[&[u8]]) -> Value {
        let mut scanner = IdScanner::default();
        for piece in pieces {
            scanner.feed(piece);
        }
        scanner.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(id_of(&[br#"{"jsonrpc":"2.0","id":42,"method""#]), json!(42));
        assert_eq!(id_of(&[br#"{"id": "a-1", "params": {"#]), json!("a-1"));
        assert_eq!(
            id_of(&[br#"{"jsonrpc":"2.0","method":"x","params":{"#]),
            Value::Null
        );
        // After the params, as the TypeScript SDK writes it; an "id" inside the params
        // (and one in a string) is not the request's.
        let big = "x".repeat(10_000);
        let line = format!(
            r#"{{"method":"tools/call","params":{{"id":3,"note":"\"id\":9","text":"{big}","list":[{{"id":5}}]}},"jsonrpc":"2.0","id":17}}"#
        );
        assert_eq!(id_of(&[line.as_bytes()]), json!(17));
        // Split anywhere.
        let (a, b) = line.as_bytes().split_at(5_003);
        assert_eq!(id_of(&[a, b]), json!(17));
        let (a, b) = line.as_bytes().split_at(line.len() - 2);
        assert_eq!(id_of(&[a, b]), json!(17));
        assert_eq!(id_of(&[br#"{"id":"q\"uoted"}"#]), json!("q\"uoted"));
    }
}

//! Newline-delimited JSON-RPC over a pair of byte streams (stdin and stdout for
//! [`serve_stdio`]), with a line limit that answers.
//!
//! Every incoming line is read whole, up to [`StdioOptions::max_line_bytes`], before
//! the MCP service sees it. A longer line is not read into memory: the rest of it is
//! skipped, and the client gets a JSON-RPC error (`-32600`, invalid request) for the
//! request's id when its first bytes show one (else for id `null`), instead of
//! waiting for an answer that never comes. The reason is also logged at `WARN`.
//! Outgoing lines, the service's and these errors, are written whole, one at a time.

use std::future::Future;
use std::sync::Arc;

use bytes::BytesMut;
use rmcp::model::ErrorData;
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use rmcp::transport::Transport;
use rmcp::ServiceExt;
use serde_json::error::Category;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use tokio_util::codec::Decoder;

use crate::{McpError, McpServer};

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
    let transport = Lines::new(input, output, options);
    // A connection of its own: its log level and subscriptions are its own.
    let running = server
        .for_connection()
        .serve(transport)
        .await
        .map_err(|e| McpError::Serve(e.to_string()))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| McpError::Serve(e.to_string()))
}

/// The output, shared by the answers in flight: one whole line at a time. `None`
/// once the transport is closed.
type Output<W> = Arc<Mutex<Option<W>>>;

/// The service's transport over the two streams: it reads whole lines within the
/// limit and parses them as rmcp's own stdio transport does, and writes each
/// message as one line, straight to the output (no task or buffer between them).
struct Lines<R, W> {
    input: BufReader<R>,
    /// The line being read (a read the service loop dropped resumes it).
    line: Vec<u8>,
    /// Set while a line over the limit is skipped: it reads the line's `id` as it goes.
    oversized: Option<IdScanner>,
    max: usize,
    output: Output<W>,
    /// Parses a line as rmcp's stdio transport does (a byte order mark, a carriage
    /// return, notifications outside MCP ignored).
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    /// The answers to lines that were no request (too long, not a message), written
    /// beside the service's own; `close` waits for them.
    errors: JoinSet<()>,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    fn new(input: R, output: W, options: StdioOptions) -> Lines<R, W> {
        Lines {
            input: BufReader::new(input),
            line: Vec::new(),
            oversized: None,
            max: options.max_line_bytes,
            output: Arc::new(Mutex::new(Some(output))),
            codec: JsonRpcMessageCodec::default(),
            errors: JoinSet::new(),
        }
    }

    /// Reads up to the end of the next line. `Some(true)`: a line within the limit
    /// is in `self.line`; `Some(false)`: a longer line was skipped and answered;
    /// `None`: the input ended. Safe to drop at its one await: the bytes taken from
    /// the reader are in `self` by then.
    async fn read_line(&mut self) -> Option<bool> {
        loop {
            let available = match self.input.fill_buf().await {
                Ok([]) | Err(_) => return None,
                Ok(bytes) => bytes,
            };
            let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..=at], true),
                None => (available, false),
            };
            let used = chunk.len();
            match &mut self.oversized {
                Some(scanner) => scanner.feed(chunk),
                None if self.line.len() + used > self.max.saturating_add(1) => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&self.line);
                    scanner.feed(chunk);
                    self.oversized = Some(scanner);
                    self.line.clear();
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.input.consume(used);
            if ends {
                return match self.oversized.take() {
                    Some(scanner) => {
                        self.answer(too_long(scanner.id(), self.max).into_bytes());
                        Some(false)
                    }
                    None => Some(true),
                };
            }
        }
    }

    /// Writes an answer of the transport's own beside the service's.
    fn answer(&mut self, line: Vec<u8>) {
        while self.errors.try_join_next().is_some() {}
        let output = self.output.clone();
        self.errors.spawn(async move {
            if let Err(e) = write_line(output, Ok(line)).await {
                tracing::debug!("an MCP error answer was not written: {e}");
            }
        });
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), std::io::Error>> + Send + 'static {
        // Serialised here, so the future holds bytes, not the message.
        write_line(self.output.clone(), encode(&item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.read_line().await? {
                continue;
            }
            let mut line = BytesMut::from(self.line.as_slice());
            self.line.clear();
            match self.codec.decode(&mut line) {
                Ok(Some(message)) => return Some(message),
                // A notification outside MCP, ignored.
                Ok(None) => {}
                Err(JsonRpcMessageCodecError::Serde(e))
                    if matches!(e.classify(), Category::Data | Category::Io) =>
                {
                    // JSON, but no JSON-RPC message: an invalid request (without an id
                    // to answer, as rmcp's own transport answers it).
                    tracing::debug!("an MCP line is no JSON-RPC message: {e}");
                    let answer = TxJsonRpcMessage::<RoleServer>::error(
                        ErrorData::invalid_request("Invalid request", None),
                        None,
                    );
                    if let Ok(line) = encode(&answer) {
                        self.answer(line);
                    }
                }
                // Not JSON (or empty): ignored, as the official SDKs do, so that a
                // peer echoing errors back cannot start a storm of them.
                Err(e) => tracing::debug!("an MCP line is not JSON, ignored: {e}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), std::io::Error> {
        while self.errors.join_next().await.is_some() {}
        let output = self.output.lock().await.take();
        match output {
            Some(mut output) => output.shutdown().await,
            None => Ok(()),
        }
    }
}

/// A message as one line of JSON.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    serde_json::to_writer(&mut line, message)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes one whole line (and flushes), unless the output is closed.
async fn write_line<W>(output: Output<W>, line: std::io::Result<Vec<u8>>) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let line = line?;
    let mut output = output.lock().await;
    let Some(output) = output.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the MCP output is closed",
        ));
    };
    output.write_all(&line).await?;
    output.flush().await
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
/// Serves `server` over this process's stdin and stdout until the client disconnects.
/// Write logs to stderr: anything else on stdout breaks the protocol. A request line
/// longer than 16 MiB is answered with a JSON-RPC error (see [`stdio`]).
///
/// [`stdio`]: crate::stdio
pub async fn serve_stdio(server: McpServer) -> Result<(), McpError> {
    serve_stdio_with(server, StdioOptions::default()).await
}

/// [`serve_stdio`] with another line limit.
///
/// When stdin and stdout are pipes (as an MCP client that starts the server makes
/// them), they are read and written without blocking, on the runtime's own threads
/// (rmcp's [`stdio_pipes`](rmcp::transport::stdio_pipes): on Linux each is reopened
/// on a description of its own, so the process's own stdin and stdout, and a child's
/// that inherits them, stay blocking); otherwise (a terminal, a file, a socket)
/// through Tokio's stdin and stdout, which hand each read and write to a blocking
/// thread. Print nothing to stdout yourself, as always with MCP over stdio.
pub async fn serve_stdio_with(server: McpServer, options: StdioOptions) -> Result<(), McpError> {
    let (input, output) = rmcp::transport::stdio_pipes();
    serve_io(server, input, output, options).await
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

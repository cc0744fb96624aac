//! The transport of an import over stdio: the server as a child process, requests
//! written to its stdin, answers read from its stdout one line at a time (at most
//! [`MAX_LINE_BYTES`] a line; a longer one is skipped).
//!
//! **A line cut short costs its own message only.** A server that writes part of a
//! message and no newline (it crashed half-way, or a hostile one) leaves that part in
//! front of its next message, on the same line: the line is no JSON, and the next
//! answer would be lost with it. When a line does not parse, the message that ends it
//! is looked for: the last place in it where a JSON-RPC message begins
//! (`{"jsonrpc"`, spaces allowed after the brace) from which the rest of the line is
//! one message. That message is kept, the part before it dropped (its call gets no
//! answer, and ends at its time limit) and a warning logged. At most
//! [`RECOVERY_TRIES`] places are tried a line.
//!
//! Closing writes nothing more to stdin (closing it asks the server to stop), waits
//! for the process to exit for up to 3 s, then kills it; a dropped transport kills
//! its process.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::codec::Decoder;

/// The longest line read from a server: 16 MiB, as rmcp's own stdio transport.
pub(super) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How many places in a line that does not parse are tried as the start of the
/// message that ends it.
pub(super) const RECOVERY_TRIES: usize = 8;

/// How long a closed server has to exit before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A stdio server's transport (see the [module docs](self)).
pub(super) struct ChildTransport {
    process: tokio::process::Child,
    input: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    output: BufReader<ChildStdout>,
    /// The line being read (a read the service loop dropped resumes it).
    line: Vec<u8>,
    /// Set while the rest of a line over the limit is skipped.
    skipping: bool,
}

impl ChildTransport {
    /// Starts `command` with its stdin and stdout piped to this transport and its
    /// stderr to `stderr`.
    pub(super) fn spawn(
        mut command: tokio::process::Command,
        stderr: std::process::Stdio,
    ) -> std::io::Result<ChildTransport> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        let mut process = command.spawn()?;
        let (Some(input), Some(output)) = (process.stdin.take(), process.stdout.take()) else {
            return Err(std::io::Error::other(
                "the server process has no stdin or stdout to speak MCP on",
            ));
        };
        Ok(ChildTransport {
            process,
            input: Arc::new(tokio::sync::Mutex::new(Some(input))),
            output: BufReader::new(output),
            line: Vec::new(),
            skipping: false,
        })
    }

    /// Reads up to the end of the next line into `self.line`. `Some(true)`: a line
    /// within the limit; `Some(false)`: a longer line, skipped; `None`: the output
    /// ended. Safe to drop at its one await: the bytes taken from the reader are in
    /// `self` by then.
    async fn read_line(&mut self) -> Option<bool> {
        loop {
            let available = match self.output.fill_buf().await {
                Ok([]) | Err(_) => return None,
                Ok(bytes) => bytes,
            };
            let newline = available.iter().position(|&b| b == b'\n');
            let used = newline.map_or(available.len(), |at| at + 1);
            let oversized = !self.skipping && self.line.len() + used > MAX_LINE_BYTES + 1;
            if oversized {
                self.line.clear();
                self.skipping = true;
            } else if !self.skipping {
                self.line.extend_from_slice(&available[..used]);
            }
            self.output.consume(used);
            if newline.is_some() {
                if std::mem::take(&mut self.skipping) {
                    tracing::warn!(
                        "a line of the imported MCP server is longer than {MAX_LINE_BYTES} bytes; it was skipped"
                    );
                    return Some(false);
                }
                return Some(true);
            }
        }
    }
}

/// What a whole line (its newline included) holds.
enum Parsed {
    /// A message.
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Nothing to pass on (a blank line, a notification outside MCP).
    Nothing,
    /// No JSON.
    NotJson,
    /// JSON, but no JSON-RPC message.
    NotMessage(String),
}

/// Parses a line as rmcp's stdio transport does (a byte order mark and a carriage
/// return allowed, notifications outside MCP ignored).
fn parse(line: &[u8]) -> Parsed {
    let mut bytes = BytesMut::from(line);
    if !line.ends_with(b"\n") {
        bytes.extend_from_slice(b"\n");
    }
    match JsonRpcMessageCodec::<RxJsonRpcMessage<RoleClient>>::default().decode(&mut bytes) {
        Ok(Some(message)) => Parsed::Message(Box::new(message)),
        Ok(None) => Parsed::Nothing,
        Err(rmcp::transport::async_rw::JsonRpcMessageCodecError::Serde(e))
            if matches!(
                e.classify(),
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
            ) =>
        {
            Parsed::NotJson
        }
        Err(e) => Parsed::NotMessage(e.to_string()),
    }
}

/// The message that ends a line that is no JSON, when the line is what is left of
/// a message cut short followed by a whole one (see the [module docs](self)).
fn recover(line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
    let starts = (1..line.len()).rev().filter(|&at| {
        line[at] == b'{' && {
            let rest = &line[at + 1..];
            let key = rest
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .map_or(&[][..], |skip| &rest[skip..]);
            key.starts_with(b"\"jsonrpc\"")
        }
    });
    for at in starts.take(RECOVERY_TRIES) {
        match parse(&line[at..]) {
            Parsed::Message(message) => {
                tracing::warn!(
                    dropped_bytes = at,
                    "the imported MCP server cut a message short; the message after it on the same line was kept"
                );
                return Some(*message);
            }
            Parsed::Nothing => return None,
            Parsed::NotJson | Parsed::NotMessage(_) => {}
        }
    }
    None
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), std::io::Error>> + Send + 'static {
        // Serialised here, so the future holds bytes, not the message.
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let input = Arc::clone(&self.input);
        async move {
            let line = line?;
            let mut input = input.lock().await;
            let Some(input) = input.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the MCP server's stdin is closed",
                ));
            };
            input.write_all(&line).await?;
            input.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if !self.read_line().await? {
                continue;
            }
            let line = std::mem::take(&mut self.line);
            match parse(&line) {
                Parsed::Message(message) => return Some(*message),
                Parsed::Nothing => {}
                Parsed::NotJson => match recover(&line) {
                    Some(message) => return Some(message),
                    // Not JSON: ignored, as the official SDKs do.
                    None => tracing::debug!("a line of the imported MCP server is not JSON"),
                },
                Parsed::NotMessage(e) => {
                    tracing::debug!(
                        "a line of the imported MCP server is no JSON-RPC message: {e}"
                    );
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), std::io::Error> {
        // No more requests: a server reading its stdin ends.
        drop(self.input.lock().await.take());
        if tokio::time::timeout(EXIT_WAIT, self.process.wait())
            .await
            .is_err()
        {
            self.process.kill().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(message: &RxJsonRpcMessage<RoleClient>) -> serde_json::Value {
        serde_json::to_value(message).unwrap_or_default()["id"].clone()
    }

    #[test]
    fn a_line_cut_short_gives_up_the_message_after_it() {
        let whole = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"jsonrpc\": 1}"}]}}"#;
        for cut in [
            &br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"te"#[..],
            br#"{"jsonrpc": "2.0", "id": 3, "result": {"nested": {"jsonrpc": "#,
            br#"{"jsonrpc":"2.0","id":3,"res"#,
            b"\xff\xfe not even text",
        ] {
            let mut line = cut.to_vec();
            line.extend_from_slice(whole);
            line.push(b'\n');
            assert!(matches!(parse(&line), Parsed::NotJson));
            let kept = recover(&line).map(|m| id_of(&m));
            assert_eq!(
                kept,
                Some(serde_json::json!(4)),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
        // A whole message with spaces, after a cut one with spaces.
        let line = b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"result\": {\"a\": \"b{ \"jsonrpc\": \"2.0\", \"id\": 5, \"result\": {}}\n";
        assert_eq!(recover(line).map(|m| id_of(&m)), Some(serde_json::json!(5)));
        // Nothing whole in it: nothing kept.
        assert!(recover(br#"{"jsonrpc":"2.0","id":3,"res{"jsonrpc":"2.0","id":"#).is_none());
        assert!(recover(b"garbage\n").is_none());
    }
}

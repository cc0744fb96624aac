//! A raw MCP client over HTTP/1.1 for the benchmarks: it talks to a streamable HTTP
//! server the way Node's undici does, with almost no work of its own, so what is
//! measured is the server.

use serde_json::json;

/// A client that talks to the server the way Node's undici does: one keep-alive
/// connection with `TCP_NODELAY`, each request's head and body written separately.
pub struct UndiciLike {
    stream: tokio::net::TcpStream,
    host: String,
    session: String,
    next_id: u64,
    buffer: Vec<u8>,
}

impl UndiciLike {
    pub async fn connect(addr: std::net::SocketAddr) -> UndiciLike {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let mut client = UndiciLike {
            stream,
            host: format!("127.0.0.1:{}", addr.port()),
            session: String::new(),
            next_id: 1,
            buffer: Vec::new(),
        };
        let (head, _) = client
            .post(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "undici-like", "version": "1"}}
            }))
            .await;
        client.session = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .expect("a session id");
        client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    /// One `tools/call`; the response's body.
    pub async fn call(&mut self) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let (_, body) = self
            .post(json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "bench.add", "arguments": {"a": 2, "b": 3}}
            }))
            .await;
        assert!(body.contains("\"result\""), "{body}");
        body
    }

    /// Posts `message`: the head, then the body, in two writes; reads the whole answer.
    async fn post(&mut self, message: serde_json::Value) -> (String, String) {
        use tokio::io::AsyncWriteExt;
        let body = message.to_string();
        let session = if self.session.is_empty() {
            String::new()
        } else {
            format!(
                "mcp-session-id: {}\r\nmcp-protocol-version: 2025-06-18\r\n",
                self.session
            )
        };
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\nconnection: keep-alive\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        self.stream.write_all(head.as_bytes()).await.expect("head");
        self.stream.write_all(body.as_bytes()).await.expect("body");
        self.read_response().await
    }

    /// Reads one response (by `content-length`, or chunked to its last chunk).
    async fn read_response(&mut self) -> (String, String) {
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill().await;
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).to_ascii_lowercase();
        self.buffer.drain(..head_end);
        let length = head.lines().find_map(|l| {
            l.strip_prefix("content-length:")
                .and_then(|v| v.trim().parse::<usize>().ok())
        });
        let mut body = Vec::new();
        if let Some(length) = length {
            while self.buffer.len() < length {
                self.fill().await;
            }
            body.extend(self.buffer.drain(..length));
        } else if head.contains("transfer-encoding: chunked") {
            loop {
                let line_end = loop {
                    if let Some(at) = find(&self.buffer, b"\r\n") {
                        break at;
                    }
                    self.fill().await;
                };
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&self.buffer[..line_end]).trim(),
                    16,
                )
                .expect("chunk size");
                while self.buffer.len() < line_end + 2 + size + 2 {
                    self.fill().await;
                }
                body.extend_from_slice(&self.buffer[line_end + 2..line_end + 2 + size]);
                self.buffer.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        }
        (head, String::from_utf8_lossy(&body).into_owned())
    }

    async fn fill(&mut self) {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        self.buffer.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

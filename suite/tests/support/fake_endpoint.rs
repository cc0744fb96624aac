//! An HTTP/1.1 endpoint on 127.0.0.1 for the model clients' tests: each request gets
//! the next scripted reply, and every request is kept for the test to read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake endpoint does with a request.
#[allow(dead_code)] // each test binary uses some of the replies
#[derive(Clone)]
pub enum Reply {
    /// A JSON body with this status.
    Json(u16, Value),
    /// These bytes after the headers of a 200 with a JSON content type.
    Body(&'static str),
    /// Headers promising more body than is sent, then the connection closes.
    Truncated,
    /// Never answers.
    Hang,
    /// A 200 event stream (chunked), one chunk per event: the first `hold.0` events,
    /// then, once `hold.1` is notified, the rest; when `cut`, the connection closes
    /// in the middle of the last chunk instead of ending the body.
    Sse {
        events: Vec<String>,
        hold: Option<(usize, Arc<tokio::sync::Notify>)>,
        cut: bool,
    },
}

/// A request the endpoint received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub head: String,
    pub body: Value,
}

/// An HTTP/1.1 endpoint on 127.0.0.1 answering each request with the next reply.
pub struct FakeEndpoint {
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeEndpoint {
    pub async fn start(replies: Vec<Reply>) -> FakeEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((stream, _)) = listener.accept().await {
                let reply = replies.next().unwrap_or(Reply::Json(
                    500,
                    json!({"error": {"message": "no more replies"}}),
                ));
                let log = log.clone();
                tokio::spawn(async move { serve_one(stream, reply, log).await });
            }
        });
        FakeEndpoint { base, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve_one(mut stream: TcpStream, reply: Reply, log: Arc<Mutex<Vec<Seen>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    log.lock().unwrap().push(Seen { head, body });
    if let Reply::Sse { events, hold, cut } = &reply {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for (i, event) in events.iter().enumerate() {
            if let Some((at, gate)) = hold {
                if i == *at {
                    gate.notified().await;
                }
            }
            let data = format!("{event}\n\n");
            let mut chunk = format!("{:x}\r\n{data}\r\n", data.len());
            if *cut && i + 1 == events.len() {
                chunk.truncate(chunk.len() / 2);
                let _ = stream.write_all(chunk.as_bytes()).await;
                let _ = stream.shutdown().await;
                return;
            }
            if stream.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
            let _ = stream.flush().await;
        }
        let _ = stream.write_all(b"0\r\n\r\n").await;
        let _ = stream.shutdown().await;
        return;
    }
    let (status, content, length) = match &reply {
        Reply::Json(status, value) => {
            let text = value.to_string();
            let len = text.len();
            (*status, text, len)
        }
        Reply::Body(text) => (200, (*text).to_owned(), text.len()),
        Reply::Truncated => (200, "{\"choices\": [".to_owned(), 4096),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        Reply::Sse { .. } => return,
    };
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n{content}"
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

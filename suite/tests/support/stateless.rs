//! Requests of MCP's 2026-07-28 revision, one at a time: stateless (no session, no
//! `initialize`), the revision, client and capabilities in each request's `_meta`,
//! and the standard headers (`Mcp-Method`, `Mcp-Name`).

use serde_json::{json, Value};

/// Posts one stateless 2026-07-28 request to `url` from a client that declares
/// `capabilities`; the JSON-RPC answer with its id (from a JSON body or an event
/// stream).
pub async fn post(url: &str, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    // The name the standard header repeats: a tool's or prompt's, a task's id.
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .header("Mcp-Name", name)
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    let text = response.text().await.expect("a body");
    // JSON, or an event stream whose answer is the event with the request's id.
    let answers: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(value) => vec![value],
        Err(_) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect(),
    };
    answers
        .into_iter()
        .find(|a| a["id"] == 7)
        .unwrap_or_else(|| panic!("no answer to the request in {text}"))
}

/// The client capabilities that declare the tasks extension, with `more` (such as
/// `{"elicitation": {}}`) beside it.
pub fn tasks_extension(more: Value) -> Value {
    let mut capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    if let (Some(all), Value::Object(more)) = (capabilities.as_object_mut(), more) {
        all.extend(more);
    }
    capabilities
}

/// Polls task `id` at `url` (as a client declaring `capabilities`) until `done` says
/// so of its `tasks/get` result, within `within`: that result.
pub async fn poll_task(
    url: &str,
    id: &str,
    capabilities: &Value,
    within: std::time::Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + within;
    loop {
        let got = post(
            url,
            "tasks/get",
            json!({"taskId": id}),
            capabilities.clone(),
        )
        .await;
        if done(&got["result"]) {
            return got["result"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

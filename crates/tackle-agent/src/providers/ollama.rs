//! A [`ChatModel`] for Ollama's native chat API (`POST {base}/api/chat`).
//!
//! Built with the `ollama` cargo feature (plain HTTP, as Ollama serves). Ollama also
//! serves the OpenAI-compatible API (use [`openai`](super::openai) for that); the
//! native one is what its own tools speak:
//!
//! * the request carries the conversation (tool results as `tool` messages with their
//!   `tool_name`), the tools as `function` definitions (OpenAI's with strict mode off,
//!   as the OpenAI-compatible client sends them by default: [`openai_definition`] of
//!   [`openai_non_strict`]), and `stream: false`;
//! * tool calls come back with their arguments as JSON objects, several per reply when
//!   the model calls tools in parallel. Ollama gives them no ids, so each gets one made
//!   from the turn and its position (`call_<turn>_<n>`), the same on every run of the
//!   same conversation, so recordings replay;
//! * `prompt_eval_count` and `eval_count` are the [`Usage`];
//! * failures are typed like the other clients': an error status is
//!   [`ModelError::Status`] with Ollama's `error` text, no answer in time
//!   [`ModelError::Timeout`], a body that is not an answer [`ModelError::Malformed`], a
//!   failed connection [`ModelError::Transport`]. A tool call whose arguments are not
//!   JSON is kept raw and listed in [`ChatResponse::unreadable`];
//! * images of a message ([`Message::parts`]) go in its `images` (base64), in any
//!   role; files are named in the text as not shown ([`text_fallback`]);
//! * it does not stream natively: asked to [stream](ChatModel::stream), it sends its
//!   reply as deltas once it is complete.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tackle_core::content::{text_fallback, ContentPart};

use super::forms::{openai_definition, openai_non_strict};
use super::walk::without_dialect;
use super::wire::{missing_tls, post_json};
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelFuture, Role, ToolCallRequest,
    UnreadableCall, Usage,
};

/// The default time limit of one completion (local models can be slow to load).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A chat model served by Ollama. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct OllamaModel {
    http: reqwest::Client,
    url: String,
    model: String,
    timeout: Duration,
}

impl OllamaModel {
    /// `model` at the Ollama server `base_url` (e.g. `http://127.0.0.1:11434`). An
    /// `https://` URL needs the `genai-tls` feature: without it this is a
    /// [`ModelError::Transport`] that says so.
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<OllamaModel, ModelError> {
        let base = base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ModelError::Transport {
                message: format!("`{base}` is not an http(s) URL"),
            });
        }
        // `genai-tls` and `openai-tls` both turn on reqwest's TLS.
        let has_tls = cfg!(any(feature = "genai-tls", feature = "openai-tls"));
        if let Some(message) = missing_tls(base, has_tls, "genai-tls") {
            return Err(ModelError::Transport { message });
        }
        Ok(OllamaModel {
            http: reqwest::Client::new(),
            url: format!("{base}/api/chat"),
            model: model.into(),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The time limit of one completion (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, limit: Duration) -> OllamaModel {
        self.timeout = limit;
        self
    }

    /// The endpoint URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for `request`, as sent.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut names: HashMap<&str, &str> = HashMap::new();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| wire_message(m, &mut names))
            .collect();
        let mut body = json!({"model": self.model, "messages": messages, "stream": false});
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    openai_definition(&t.name, &t.description, &openai_non_strict(&t.parameters))
                })
                .collect();
        }
        if let Some(schema) = &request.response_schema {
            body["format"] = without_dialect(schema);
        }
        body
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = serde_json::to_vec(&self.body(request)).map_err(|e| ModelError::Malformed {
            message: format!("the request could not be encoded: {e}"),
        })?;
        let bytes = post_json(&self.http, &self.url, body, self.timeout, None).await?;
        let turn = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        parse(&bytes, turn)
    }
}

/// One message in Ollama's form; `names` remembers each tool call's name for the
/// result that answers it.
fn wire_message<'m>(message: &'m Message, names: &mut HashMap<&'m str, &'m str>) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = json!({"role": role, "content": message.content});
    if !message.parts.is_empty() {
        // Images go in `images`, as base64; files only as text.
        let (images, files): (Vec<&ContentPart>, Vec<&ContentPart>) = message
            .parts
            .iter()
            .filter(|p| p.is_attachment())
            .partition(|p| matches!(p, ContentPart::Image { .. }));
        if !images.is_empty() {
            out["images"] = images.iter().filter_map(|p| p.data()).collect();
        }
        if !files.is_empty() {
            let files: Vec<ContentPart> = files.into_iter().cloned().collect();
            out["content"] = json!(text_fallback(&message.content, &files));
        }
    }
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| {
                names.insert(c.id.as_str(), c.name.as_str());
                // Ollama wants an object: unreadable arguments (kept raw) go back empty;
                // the tool's result says why the call did not run.
                let arguments = match &c.arguments {
                    Value::String(_) => json!({}),
                    other => other.clone(),
                };
                json!({"function": {"name": c.name, "arguments": arguments}})
            })
            .collect();
        out["tool_calls"] = Value::Array(calls);
    }
    if let Some(name) = message.tool_call_id.as_deref().and_then(|id| names.get(id)) {
        out["tool_name"] = json!(name);
    }
    out
}

/// Reads an answer; `turn` numbers the calls' ids.
fn parse(bytes: &[u8], turn: usize) -> Result<ChatResponse, ModelError> {
    let malformed = |message: String| ModelError::Malformed { message };
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|e| malformed(format!("the body is not JSON ({e})")))?;
    let message = body
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed("the body has no `message`".to_owned()))?;
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(malformed(format!("`content` is not a string: {other}"))),
    };
    let mut response = ChatResponse::text(text);
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (index, call) in calls.iter().enumerate() {
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(format!("tool call {index} has no name")))?;
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("call_{turn}_{index}"), str::to_owned);
                let arguments = match call.pointer("/function/arguments") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                        Ok(parsed) => parsed,
                        Err(e) => {
                            response.unreadable.push(UnreadableCall {
                                index,
                                error: format!("the arguments are not JSON ({e})"),
                            });
                            Value::String(raw.clone())
                        }
                    },
                    Some(other) => other.clone(),
                };
                response.tool_calls.push(ToolCallRequest {
                    id,
                    name: name.to_owned(),
                    arguments,
                });
            }
        }
        Some(other) => return Err(malformed(format!("`tool_calls` is not a list: {other}"))),
    }
    if let Some(input) = body.get("prompt_eval_count").and_then(Value::as_u64) {
        response.usage = Some(Usage {
            input_tokens: input,
            output_tokens: body.get("eval_count").and_then(Value::as_u64).unwrap_or(0),
        });
    }
    Ok(response)
}

impl ChatModel for OllamaModel {
    fn provider(&self) -> &str {
        "ollama"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(self.send(request))
    }

    fn structured_output(&self) -> bool {
        true
    }
}

//! A [`ChatModel`] for any endpoint that speaks OpenAI's chat-completions wire format
//! (OpenAI itself, and the local servers that copy it: llama.cpp, vLLM, Ollama, ...).
//!
//! Built with the `openai` cargo feature. The client speaks plain HTTP; add the
//! `openai-tls` feature for `https://` endpoints.
//!
//! One [`complete`](ChatModel::complete) is one `POST {base_url}/chat/completions`:
//!
//! * the request carries the conversation, the tools as `{"type": "function", ...}`
//!   definitions, and `parallel_tool_calls: true`, so the model may ask for several
//!   calls in one turn;
//! * each tool goes as [`openai_definition`] writes it: by default with strict mode off
//!   (`"strict": false`, the schema of [`openai_non_strict`]: without `$schema`, an
//!   object at the root); with [`with_strict`](OpenAiModel::with_strict), in OpenAI's
//!   form ([`openai_form`], what [`definition`](super::definition) gives
//!   [`Provider::OpenAi`](super::Provider::OpenAi)): strict
//!   ([`openai_strict`](super::openai_strict)) where strict mode can say the schema,
//!   `"strict": false` where it cannot. The nulls a strict model sends for optional
//!   fields are dropped ([`drop_nulls`]) before the arguments reach the door;
//! * every failure is a typed [`ModelError`]: an error status is
//!   [`Status`](ModelError::Status) (with the endpoint's error message), no answer in
//!   time is [`Timeout`](ModelError::Timeout), a body that is not a completion is
//!   [`Malformed`](ModelError::Malformed), and a failed connection is
//!   [`Transport`](ModelError::Transport);
//! * a tool call whose arguments are not JSON (cut off by the token limit, say) does
//!   not spoil the reply: it is kept with its raw text and listed in
//!   [`ChatResponse::unreadable`], and the other calls of the reply stand.
//!
//! [`stream`](ChatModel::stream) sends the same request with `"stream": true` (and
//! `stream_options.include_usage`) and reads the server-sent events as they come:
//! each `choices[0].delta` becomes a [`ModelDelta`] (its `content` as text, each
//! `tool_calls[]` entry as a piece of the call at its `index`). The stream must end
//! with `data: [DONE]` or a `finish_reason`; a connection that fails or closes before
//! that is [`ModelError::StreamBroken`], an event that is not JSON is
//! [`Malformed`](ModelError::Malformed).
//!
//! Images and files ([`Message::parts`]) go as `image_url` and `file` content parts
//! (as `data:` URLs) in user messages. Chat completions take none in a tool result:
//! there the text names each part as not shown ([`text_fallback`]).
//!
//! [`OpenAiModel::from_env`] reads the endpoint from `TACKLE_OPENAI_BASE_URL`,
//! `TACKLE_OPENAI_MODEL` and `TACKLE_OPENAI_API_KEY` (or `OPENAI_API_KEY`).

use std::time::Duration;

use serde_json::{json, Map, Value};
use tackle_core::content::{text_fallback, ContentPart};
use tackle_core::events::ModelDelta;

use super::forms::{drop_nulls, openai_definition, openai_form, openai_non_strict};
use super::wire::{chain, excerpt, missing_tls, post_json, request_error};
use crate::model::{
    read_arguments, ChatModel, ChatRequest, ChatResponse, DeltaAssembler, DeltaSink, Message,
    ModelError, ModelFuture, Role, ToolCallRequest, UnreadableCall, Usage,
};

/// The longest server-sent event line a stream may send: 8 MiB.
const MAX_EVENT_LINE: usize = 8 << 20;

/// The default time limit of one completion.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A chat model behind an OpenAI-compatible chat-completions endpoint. See the
/// [module docs](self).
#[derive(Clone)]
pub struct OpenAiModel {
    http: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    strict: bool,
    provider: String,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("timeout", &self.timeout)
            .field("strict", &self.strict)
            .finish()
    }
}

/// Why [`OpenAiModel::from_env`] found no endpoint.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiConfigError {
    /// A variable the endpoint needs is not set.
    #[error("{0} is not set")]
    Missing(&'static str),
    /// The base URL is not an `http://` or `https://` URL.
    #[error("`{0}` is not an http:// or https:// URL")]
    BadUrl(String),
    /// The base URL is `https://` and this build has no TLS: the message names the
    /// cargo feature to enable (`openai-tls`).
    #[error("{0}")]
    NoTls(String),
}

/// Whether this build's HTTP client speaks TLS (`openai-tls`, or `genai-tls`, which
/// turns on the same reqwest feature).
const HAS_TLS: bool = cfg!(any(feature = "openai-tls", feature = "genai-tls"));

impl OpenAiModel {
    /// A client for `model` at `base_url` (the part before `/chat/completions`, such as
    /// `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`), with no API key, the
    /// [default time limit](DEFAULT_TIMEOUT) and non-strict tool schemas. An
    /// `https://` URL needs the `openai-tls` feature: without it this is
    /// [`OpenAiConfigError::NoTls`], which says so.
    pub fn new(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
    ) -> Result<OpenAiModel, OpenAiConfigError> {
        let base = base_url.as_ref().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(OpenAiConfigError::BadUrl(base.to_owned()));
        }
        if let Some(message) = missing_tls(base, HAS_TLS, "openai-tls") {
            return Err(OpenAiConfigError::NoTls(message));
        }
        Ok(OpenAiModel {
            http: reqwest::Client::new(),
            url: format!("{base}/chat/completions"),
            model: model.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            strict: false,
            provider: "openai".to_owned(),
        })
    }

    /// A client configured by the environment: `TACKLE_OPENAI_BASE_URL` and
    /// `TACKLE_OPENAI_MODEL` (both required), `TACKLE_OPENAI_API_KEY` or else
    /// `OPENAI_API_KEY` (optional; local servers often need none), and
    /// `TACKLE_OPENAI_TIMEOUT_MS` (optional).
    pub fn from_env() -> Result<OpenAiModel, OpenAiConfigError> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// As [`from_env`](Self::from_env), reading variables through `var`.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<OpenAiModel, OpenAiConfigError> {
        let base = var("TACKLE_OPENAI_BASE_URL")
            .ok_or(OpenAiConfigError::Missing("TACKLE_OPENAI_BASE_URL"))?;
        let model =
            var("TACKLE_OPENAI_MODEL").ok_or(OpenAiConfigError::Missing("TACKLE_OPENAI_MODEL"))?;
        let mut client = OpenAiModel::new(base, model)?;
        client.api_key = var("TACKLE_OPENAI_API_KEY").or_else(|| var("OPENAI_API_KEY"));
        if let Some(ms) = var("TACKLE_OPENAI_TIMEOUT_MS").and_then(|v| v.parse().ok()) {
            client.timeout = Duration::from_millis(ms);
        }
        Ok(client)
    }

    /// Sends `Authorization: Bearer <key>`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> OpenAiModel {
        self.api_key = Some(key.into());
        self
    }

    /// The time limit of one completion, from sending the request to the end of the
    /// answer's body.
    pub fn with_timeout(mut self, limit: Duration) -> OpenAiModel {
        self.timeout = limit;
        self
    }

    /// Sends tools in OpenAI's form ([`openai_form`]: strict wherever strict mode can
    /// say the schema) and drops the nulls the model sends for optional fields.
    pub fn with_strict(mut self, strict: bool) -> OpenAiModel {
        self.strict = strict;
        self
    }

    /// The provider name used in replay keys (`llm.<provider>.complete@<model>`);
    /// `openai` unless changed, for instance to keep recordings of a local server apart.
    pub fn with_provider_name(mut self, name: impl Into<String>) -> OpenAiModel {
        self.provider = name.into();
        self
    }

    /// The endpoint URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for `request`, as sent.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = json!({ "model": self.model, "messages": messages });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let form = if self.strict {
                        openai_form(&t.parameters)
                    } else {
                        openai_non_strict(&t.parameters)
                    };
                    openai_definition(&t.name, &t.description, &form)
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["parallel_tool_calls"] = Value::Bool(true);
        }
        if let Some(schema) = &request.response_schema {
            let form = openai_form(schema);
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "final_answer", "schema": form.parameters, "strict": form.strict},
            });
        }
        body
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let body = serde_json::to_vec(&self.body(request)).map_err(|e| ModelError::Malformed {
            message: format!("the request could not be encoded: {e}"),
        })?;
        let bytes = post_json(
            &self.http,
            &self.url,
            body,
            self.timeout,
            self.api_key.as_deref(),
        )
        .await?;
        let mut answer = parse_completion(&bytes)?;
        self.settle(request, &mut answer);
        Ok(answer)
    }

    /// Drops the nulls a strict model sends for optional fields.
    fn settle(&self, request: &ChatRequest, answer: &mut ChatResponse) {
        if self.strict {
            for call in &mut answer.tool_calls {
                if let Some(tool) = request.tools.iter().find(|t| t.name == call.name) {
                    drop_nulls(&mut call.arguments, &tool.parameters);
                }
            }
        }
    }

    async fn send_streaming(
        &self,
        request: &ChatRequest,
        sink: DeltaSink<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let mut body = self.body(request);
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({ "include_usage": true });
        let body = serde_json::to_vec(&body).map_err(|e| ModelError::Malformed {
            message: format!("the request could not be encoded: {e}"),
        })?;
        let mut post = self
            .http
            .post(&self.url)
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        let mut response = post
            .send()
            .await
            .map_err(|e| request_error(&e, self.timeout))?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| request_error(&e, self.timeout))?;
            return Err(ModelError::Status {
                status: status.as_u16(),
                body: excerpt(&bytes),
            });
        }
        let mut reader = SseReader::default();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) if e.is_timeout() => return Err(request_error(&e, self.timeout)),
                Err(e) => {
                    return Err(ModelError::StreamBroken {
                        message: chain(&e),
                        deltas: reader.reply.deltas(),
                    })
                }
            };
            if reader.feed(&chunk, sink)? {
                break;
            }
        }
        // The body may end without a newline after its last event.
        if !reader.ended && !reader.line.is_empty() {
            let line = std::mem::take(&mut reader.line);
            reader.event(&line, sink)?;
        }
        if !reader.ended {
            return Err(ModelError::StreamBroken {
                message: "the stream closed before the reply ended (no `[DONE]`, no \
                          `finish_reason`)"
                    .to_owned(),
                deltas: reader.reply.deltas(),
            });
        }
        let usage = reader.usage;
        let mut answer = reader.reply.finish();
        answer.usage = usage;
        self.settle(request, &mut answer);
        Ok(answer)
    }
}

/// Reads a chat-completions event stream as it arrives.
#[derive(Default)]
struct SseReader {
    line: Vec<u8>,
    reply: DeltaAssembler,
    usage: Option<Usage>,
    /// A `finish_reason` or `[DONE]` was seen.
    ended: bool,
}

impl SseReader {
    /// Reads the complete lines of `bytes` (keeping a partial one for the next
    /// chunk), sending each delta to `sink`; whether `[DONE]` came.
    fn feed(&mut self, bytes: &[u8], sink: DeltaSink<'_>) -> Result<bool, ModelError> {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line);
            if self.event(&line, sink)? {
                return Ok(true);
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > MAX_EVENT_LINE {
            return Err(malformed(format!(
                "an event of the stream is longer than {MAX_EVENT_LINE} bytes"
            )));
        }
        Ok(false)
    }

    /// One line of the stream; whether it was `data: [DONE]`.
    fn event(&mut self, line: &[u8], sink: DeltaSink<'_>) -> Result<bool, ModelError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(data) = line.strip_prefix(b"data:") else {
            // Blank lines end events; comments (`:`), `event:`, `id:` carry nothing here.
            return Ok(false);
        };
        let data = data.trim_ascii();
        if data == b"[DONE]" {
            self.ended = true;
            return Ok(true);
        }
        let chunk: Value = serde_json::from_slice(data).map_err(|e| {
            malformed(format!(
                "an event of the stream is not JSON ({e}): {}",
                excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(ModelError::Failed {
                message: excerpt(error.to_string().as_bytes()),
            });
        }
        if let Some(usage) = usage_of(&chunk) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(false);
        };
        if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.send(ModelDelta::Text(text.to_owned()), sink);
            }
        }
        if let Some(calls) = choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array)
        {
            for (position, call) in calls.iter().enumerate() {
                let index = match call.get("index") {
                    None => position,
                    Some(index) => index
                        .as_u64()
                        .and_then(|i| usize::try_from(i).ok())
                        .ok_or_else(|| malformed(format!("a tool call's index is {index}")))?,
                };
                let text = |pointer: &str| call.pointer(pointer).and_then(Value::as_str);
                self.send(
                    ModelDelta::ToolCall {
                        index,
                        id: text("/id").map(str::to_owned),
                        name: text("/function/name").map(str::to_owned),
                        arguments: text("/function/arguments").unwrap_or_default().to_owned(),
                    },
                    sink,
                );
            }
        }
        if choice
            .get("finish_reason")
            .is_some_and(|reason| !reason.is_null())
        {
            self.ended = true;
        }
        Ok(false)
    }

    fn send(&mut self, delta: ModelDelta, sink: DeltaSink<'_>) {
        sink(delta.clone());
        self.reply.push(delta);
    }
}

impl ChatModel for OpenAiModel {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(self.send(request))
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest, sink: DeltaSink<'a>) -> ModelFuture<'a> {
        Box::pin(self.send_streaming(request, sink))
    }

    fn structured_output(&self) -> bool {
        true
    }
}

fn wire_message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    if message.role == Role::Assistant && !message.tool_calls.is_empty() {
        // An assistant turn that only calls tools has no content.
        let content = if message.content.is_empty() {
            Value::Null
        } else {
            json!(message.content)
        };
        out.insert("content".into(), content);
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    // Unreadable arguments go back as the model sent them.
                    "function": { "name": c.name, "arguments": match &c.arguments {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    } },
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    } else if message.parts.is_empty() {
        out.insert("content".into(), json!(message.content));
    } else if message.role == Role::Tool {
        // Chat completions take no images or files in a tool result: the text says so.
        out.insert(
            "content".into(),
            json!(text_fallback(&message.content, &message.parts)),
        );
    } else {
        let mut parts = vec![json!({"type": "text", "text": message.content})];
        for part in &message.parts {
            parts.push(match part {
                ContentPart::Text { text } => json!({"type": "text", "text": text}),
                ContentPart::Image { .. } => {
                    json!({"type": "image_url", "image_url": {"url": part.data_url()}})
                }
                ContentPart::File { name, .. } => json!({"type": "file", "file": {
                    "filename": name.as_deref().unwrap_or("file"),
                    "file_data": part.data_url(),
                }}),
            });
        }
        out.insert("content".into(), Value::Array(parts));
    }
    if let Some(id) = &message.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(out)
}

fn malformed(message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        message: message.into(),
    }
}

/// Reads a chat-completions answer: the first choice's text and tool calls.
fn parse_completion(bytes: &[u8]) -> Result<ChatResponse, ModelError> {
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|e| malformed(format!("the body is not JSON ({e})")))?;
    let message = body
        .pointer("/choices/0/message")
        .and_then(Value::as_object)
        .ok_or_else(|| malformed("the body has no `choices[0].message`"))?;
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(malformed(format!("`content` is not a string: {other}"))),
    };
    let mut response = ChatResponse::text(text);
    response.usage = usage_of(&body);
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                let (call, unreadable) = parse_tool_call(i, call)?;
                if let Some(error) = unreadable {
                    response.unreadable.push(UnreadableCall { index: i, error });
                }
                response.tool_calls.push(call);
            }
        }
        Some(other) => return Err(malformed(format!("`tool_calls` is not a list: {other}"))),
    }
    Ok(response)
}

/// The `usage` of a completion, when it has one.
fn usage_of(body: &Value) -> Option<Usage> {
    let usage = body.get("usage")?;
    Some(Usage {
        input_tokens: usage.get("prompt_tokens")?.as_u64()?,
        output_tokens: usage
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

/// One tool call, and why its arguments could not be read, if they could not (the call
/// then holds their raw text).
fn parse_tool_call(
    i: usize,
    call: &Value,
) -> Result<(ToolCallRequest, Option<String>), ModelError> {
    let field = |pointer: &str| {
        call.pointer(pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(format!("tool call {i} has no string `{pointer}`")))
    };
    let id = field("/id")?.to_owned();
    let name = field("/function/name")?.to_owned();
    let (arguments, unreadable) = read_arguments(field("/function/arguments")?);
    Ok((
        ToolCallRequest {
            id,
            name,
            arguments,
        },
        unreadable,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars_needs_url_and_model_and_checks_the_scheme() {
        let none = |_: &str| None;
        assert_eq!(
            OpenAiModel::from_vars(none).err(),
            Some(OpenAiConfigError::Missing("TACKLE_OPENAI_BASE_URL"))
        );
        let bad = |k: &str| match k {
            "TACKLE_OPENAI_BASE_URL" => Some("ftp://x".to_owned()),
            "TACKLE_OPENAI_MODEL" => Some("m".to_owned()),
            _ => None,
        };
        assert_eq!(
            OpenAiModel::from_vars(bad).err(),
            Some(OpenAiConfigError::BadUrl("ftp://x".to_owned()))
        );
        let good = |k: &str| match k {
            "TACKLE_OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_owned()),
            "TACKLE_OPENAI_MODEL" => Some("m".to_owned()),
            "OPENAI_API_KEY" => Some("sk-test".to_owned()),
            "TACKLE_OPENAI_TIMEOUT_MS" => Some("1500".to_owned()),
            _ => None,
        };
        let model = OpenAiModel::from_vars(good).expect("configured");
        assert_eq!(model.url(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(model.api_key.as_deref(), Some("sk-test"));
        assert_eq!(model.timeout, Duration::from_millis(1500));
        assert!(!format!("{model:?}").contains("sk-test"));
    }
}

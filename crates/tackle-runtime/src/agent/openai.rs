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
//! * with [`with_strict`](OpenAiModel::with_strict), each tool's parameters are sent in OpenAI's
//!   strict form ([`openai_strict`]) and the nulls the model then sends for optional
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
//! [`OpenAiModel::from_env`] reads the endpoint from `TACKLE_OPENAI_BASE_URL`,
//! `TACKLE_OPENAI_MODEL` and `TACKLE_OPENAI_API_KEY` (or `OPENAI_API_KEY`).

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::agent::model::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ModelFuture, Role, ToolCallRequest,
    UnreadableCall, Usage,
};
use crate::agent::providers::{drop_nulls, openai_strict, without_dialect};
use crate::agent::wire::post_json;

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
}

impl OpenAiModel {
    /// A client for `model` at `base_url` (the part before `/chat/completions`, such as
    /// `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`), with no API key, the
    /// [default time limit](DEFAULT_TIMEOUT) and non-strict tool schemas.
    pub fn new(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
    ) -> Result<OpenAiModel, OpenAiConfigError> {
        let base = base_url.as_ref().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(OpenAiConfigError::BadUrl(base.to_owned()));
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

    /// Sends tool parameters in OpenAI's strict form and drops the nulls the model
    /// sends for optional fields.
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
                    let mut function = json!({
                        "name": t.name,
                        "description": t.description,
                        "parameters": if self.strict {
                            openai_strict(&t.parameters)
                        } else {
                            without_dialect(&t.parameters)
                        },
                    });
                    if self.strict {
                        function["strict"] = Value::Bool(true);
                    }
                    json!({ "type": "function", "function": function })
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["parallel_tool_calls"] = Value::Bool(true);
        }
        if let Some(schema) = &request.response_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "final_answer", "schema": openai_strict(schema), "strict": true},
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
        if self.strict {
            for call in &mut answer.tool_calls {
                if let Some(tool) = request.tools.iter().find(|t| t.name == call.name) {
                    drop_nulls(&mut call.arguments, &tool.parameters);
                }
            }
        }
        Ok(answer)
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
    } else {
        out.insert("content".into(), json!(message.content));
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
    let raw = field("/function/arguments")?;
    // Some servers send an empty string for a call without arguments.
    let (arguments, unreadable) = if raw.trim().is_empty() {
        (Value::Object(Map::new()), None)
    } else {
        match serde_json::from_str(raw) {
            Ok(arguments) => (arguments, None),
            Err(e) => (
                Value::String(raw.to_owned()),
                Some(format!("the arguments are not JSON ({e})")),
            ),
        }
    };
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

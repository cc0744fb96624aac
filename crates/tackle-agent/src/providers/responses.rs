//! OpenAI's Responses API, for [`GenAiModel`](super::genai::GenAiModel) with
//! [`GenAiProvider::OpenAiResponses`](super::genai::GenAiProvider::OpenAiResponses).
//!
//! Written here rather than through genai's adapter: genai 0.7 refuses a whole reply in
//! which one `function_call`'s arguments are not JSON, where tackle keeps the reply's
//! other calls and answers that one with a repair turn; and it sends a tool result's
//! images as text. Here:
//!
//! * system messages go as `instructions`; user messages as `input_text`, with images
//!   and files as `input_image` / `input_file` (`data:` URLs);
//! * an assistant turn goes as its text (`output_text`) and one `function_call` item
//!   per call; a tool result as a `function_call_output`, whose `output` is the text,
//!   or, when the result has images or files, a list of `input_text`, `input_image`
//!   and `input_file` parts;
//! * tools go as `function` tools in OpenAI's form (what
//!   [`definition`](super::definition) gives [`Provider::OpenAi`](super::Provider::OpenAi),
//!   the function's fields one level up: strict where strict mode can say the schema,
//!   `"strict": false` written out where it cannot), an answer schema as `text.format`
//!   (`json_schema`, strict);
//! * the answer's `message` items give the text, its `function_call` items the calls
//!   (arguments that are not JSON are kept raw and listed in
//!   [`ChatResponse::unreadable`]), `usage` the tokens.

use std::time::Duration;

use serde_json::{json, Value};
use tackle_core::content::{text_fallback, ContentPart};

use super::forms::{openai_definition, openai_form};
use super::wire::post_json;
use crate::model::{
    read_arguments, ChatRequest, ChatResponse, Message, ModelError, Role, ToolCallRequest,
    UnreadableCall, Usage,
};

/// The request body for `request` to `model`.
pub(crate) fn body(model: &str, max_tokens: u32, request: &ChatRequest) -> Value {
    let mut instructions: Vec<String> = Vec::new();
    let mut input: Vec<Value> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message.role {
            Role::System => instructions.push(text_fallback(&message.content, &message.parts)),
            Role::User if message.parts.is_empty() => {
                input.push(json!({"role": "user", "content": message.content}));
            }
            Role::User => {
                input.push(json!({"role": "user", "content": parts(message)}));
            }
            Role::Assistant => {
                if !message.content.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": message.content}],
                    }));
                }
                for call in &message.tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        // Unreadable arguments go back as the model sent them.
                        "arguments": match &call.arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        },
                    }));
                }
            }
            Role::Tool => {
                let output = if message.parts.iter().any(ContentPart::is_attachment) {
                    parts(message)
                } else {
                    json!(message.content)
                };
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                    "output": output,
                }));
            }
        }
    }
    let mut body = json!({
        "model": model,
        "store": false,
        "input": input,
        "max_output_tokens": max_tokens,
    });
    if !instructions.is_empty() {
        body["instructions"] = json!(instructions.join("\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                // OpenAI's definition, the function's fields one level up.
                let definition =
                    openai_definition(&t.name, &t.description, &openai_form(&t.parameters));
                let mut tool = serde_json::Map::new();
                tool.insert("type".into(), json!("function"));
                if let Value::Object(function) = &definition["function"] {
                    tool.extend(function.clone());
                }
                Value::Object(tool)
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(schema) = &request.response_schema {
        let form = openai_form(schema);
        body["text"] = json!({"format": {
            "type": "json_schema",
            "name": "final_answer",
            "schema": form.parameters,
            "strict": form.strict,
        }});
    }
    body
}

/// A message's text and parts as Responses input parts.
fn parts(message: &Message) -> Value {
    let mut out = vec![json!({"type": "input_text", "text": message.content})];
    for part in &message.parts {
        out.push(match part {
            ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
            ContentPart::Image { .. } => {
                json!({"type": "input_image", "image_url": part.data_url(), "detail": "auto"})
            }
            ContentPart::File { name, .. } => json!({
                "type": "input_file",
                "filename": name.as_deref().unwrap_or("file"),
                "file_data": part.data_url(),
            }),
        });
    }
    Value::Array(out)
}

/// Posts `body` to `{base}responses` and reads the answer.
pub(crate) async fn send(
    http: &reqwest::Client,
    base: &str,
    api_key: &str,
    timeout: Duration,
    body: &Value,
) -> Result<ChatResponse, ModelError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ModelError::Malformed {
        message: format!("the request could not be encoded: {e}"),
    })?;
    let url = format!("{base}responses");
    let answer = post_json(http, &url, bytes, timeout, Some(api_key)).await?;
    parse(&answer)
}

fn malformed(message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        message: message.into(),
    }
}

/// Reads a Responses answer.
fn parse(bytes: &[u8]) -> Result<ChatResponse, ModelError> {
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|e| malformed(format!("the body is not JSON ({e})")))?;
    if body.get("status").and_then(Value::as_str) == Some("failed") {
        let why = body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("the response failed");
        return Err(ModelError::Failed {
            message: why.to_owned(),
        });
    }
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("the body has no `output` list"))?;
    let mut response = ChatResponse::default();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        response.text.push_str(text);
                    }
                }
            }
            Some("function_call") => {
                let field = |name: &str| {
                    item.get(name).and_then(Value::as_str).ok_or_else(|| {
                        malformed(format!("a `function_call` has no string `{name}`"))
                    })
                };
                let index = response.tool_calls.len();
                let (arguments, unreadable) = read_arguments(field("arguments")?);
                if let Some(error) = unreadable {
                    response.unreadable.push(UnreadableCall { index, error });
                }
                response.tool_calls.push(ToolCallRequest {
                    id: field("call_id")?.to_owned(),
                    name: field("name")?.to_owned(),
                    arguments,
                });
            }
            // Reasoning and other items carry nothing a run uses.
            _ => {}
        }
    }
    response.usage = body.get("usage").and_then(|u| {
        Some(Usage {
            input_tokens: u.get("input_tokens")?.as_u64()?,
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
        })
    });
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_with_unreadable_arguments_does_not_spoil_the_reply() {
        let body = json!({
            "status": "incomplete",
            "output": [
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{\"x\": 1}"},
                {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{\"x\": "},
            ],
        });
        let reply = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[0].arguments, json!({"x": 1}));
        assert_eq!(reply.unreadable.len(), 1);
        assert_eq!(reply.unreadable[0].index, 1);
        assert_eq!(reply.tool_calls[1].arguments, json!("{\"x\": "));
        let failed = json!({"status": "failed", "error": {"message": "overloaded"}});
        assert_eq!(
            parse(failed.to_string().as_bytes()),
            Err(ModelError::Failed {
                message: "overloaded".into()
            })
        );
    }
}

//! Answering an imported server's requests: its questions to the person at the
//! client (`elicitation/create`, through the door or the import's handler), sampling
//! with the import's model (`sampling/createMessage`), and the input a remote task
//! waits for.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::json;
use serde_json::{Map, Value};
use tackle_agent::model::{ChatRequest, Message};
use tackle_core::{Run, SideEffects, ToolContext, ToolSpec};

use super::connection::ImportHandler;
use super::options::{Elicitation, ElicitationHandler};
use crate::client::Elicited;

impl ImportHandler {
    /// Answers a server's question (`elicitation/create`, or one a task asks for).
    pub(super) async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let declined = || ElicitResult::new(ElicitationAction::Decline);
        if self.elicitation.is_none() && self.door.is_none() {
            return declined();
        }
        let tools = self.calls().clone();
        if tools.is_empty() {
            // Asked out of the blue: no call of this import is waiting for it.
            return declined();
        }
        // Only forms are answered here; a URL elicitation is for a person's browser.
        let Ok(wire) = serde_json::to_value(&request) else {
            return declined();
        };
        let (Some(message), Some(schema)) = (
            wire.get("message").and_then(Value::as_str),
            wire.get("requestedSchema"),
        ) else {
            return declined();
        };
        let asked = Elicitation {
            server: self.server.clone(),
            tools,
            message: message.to_owned(),
            schema: schema.clone(),
        };
        let _one_at_a_time = self.asking.lock().await;
        let answer = match (&self.door, &self.elicitation) {
            (Some((run, ctx)), handler) => {
                Ok(self.elicit_through(run, ctx, handler.as_ref(), asked).await)
            }
            (None, Some(handler)) => {
                tokio::time::timeout(crate::client::ELICITATION_TIMEOUT, (handler.0)(asked)).await
            }
            (None, None) => return declined(),
        };
        match answer {
            Ok(Elicited::Accept(Value::Object(content))) => {
                let content = Value::Object(with_defaults(content, schema));
                // An answer that does not fit the form is not sent as if it did.
                match crate::client::check_answer(&content, schema) {
                    Ok(()) => ElicitResult::new(ElicitationAction::Accept).with_content(content),
                    Err(reason) => {
                        tracing::warn!(server = %self.server, %reason, "an answer to the server's question does not fit its form; it was declined");
                        declined()
                    }
                }
            }
            // A form's answer is an object; anything else was not what the person
            // chose, and is not sent as if it were.
            Ok(Elicited::Accept(_)) | Ok(Elicited::Decline) => declined(),
            Ok(Elicited::Cancel) | Err(_) => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// Answers the requests a remote task waits for (`input_required`): questions
    /// as [`elicit`](Self::elicit) does, sampling with the import's model, roots with
    /// none. A request that cannot be answered gets a JSON-RPC error object.
    pub(super) async fn answer_inputs(
        &self,
        requests: rmcp::model::InputRequests,
    ) -> rmcp::model::InputResponses {
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in requests {
            let wire = serde_json::to_value(&request).unwrap_or(Value::Null);
            let params = wire.get("params").cloned().unwrap_or(Value::Null);
            let refused = |error: rmcp::ErrorData| json!({"error": serde_json::to_value(error).unwrap_or(Value::Null)});
            let answer = match wire.get("method").and_then(Value::as_str) {
                Some("elicitation/create") => match serde_json::from_value(params) {
                    Ok(params) => {
                        serde_json::to_value(self.elicit(params).await).unwrap_or(Value::Null)
                    }
                    Err(e) => refused(rmcp::ErrorData::invalid_params(e.to_string(), None)),
                },
                Some("sampling/createMessage") => match self.sample(params).await {
                    Ok(answer) => answer,
                    Err(error) => refused(error),
                },
                Some("roots/list") => json!({"roots": []}),
                other => refused(rmcp::ErrorData::invalid_request(
                    format!("this client does not answer `{}`", other.unwrap_or("?")),
                    None,
                )),
            };
            responses.insert(key, answer);
        }
        responses
    }

    /// Answers a question as the operation `mcp.<server>.elicit@1` of `run`: gated by
    /// `ctx`, recorded and replayed, audited. With a `handler`, the handler answers;
    /// without one, the run's approver does (the operation needs approval: approved,
    /// the form is accepted as its defaults fill it; denied, it is declined). A
    /// question the door refuses otherwise, or that fails, is cancelled.
    async fn elicit_through(
        &self,
        run: &Run,
        ctx: &ToolContext,
        handler: Option<&ElicitationHandler>,
        asked: Elicitation,
    ) -> Elicited {
        let mut spec = ToolSpec::new(
            format!("mcp.{}", self.server),
            "elicit",
            "1",
            SideEffects::External,
            format!(
                "A question of the MCP server `{}` to the person at this client.",
                self.server
            ),
        );
        spec.permissions = vec![format!("mcp:{}", self.server)];
        spec.timeout_ms = u64::try_from(crate::client::ELICITATION_TIMEOUT.as_millis()).ok();
        spec.needs_approval = handler.is_none();
        let operation = tackle_core::Operation::new(spec);
        let input = json!({"message": asked.message, "schema": asked.schema});
        let answered = run
            .perform(
                &operation,
                move || input,
                ctx,
                move || async move {
                    let Some(handler) = handler else {
                        // Approved: the form as its defaults fill it.
                        return Ok(json!({"action": "accept", "content": {}}));
                    };
                    Ok(match (handler.0)(asked).await {
                        Elicited::Accept(content) => {
                            json!({"action": "accept", "content": content})
                        }
                        Elicited::Decline => json!({"action": "decline"}),
                        Elicited::Cancel => json!({"action": "cancel"}),
                    })
                },
            )
            .await;
        match answered {
            Ok(answer) => match answer.get("action").and_then(Value::as_str) {
                Some("accept") => {
                    Elicited::Accept(answer.get("content").cloned().unwrap_or(Value::Null))
                }
                Some("decline") => Elicited::Decline,
                _ => Elicited::Cancel,
            },
            Err(error) if error.kind() == tackle_core::ToolErrorKind::ApprovalDenied => {
                Elicited::Decline
            }
            Err(error) => {
                tracing::warn!(server = %self.server, %error, "a server's question was not asked");
                Elicited::Cancel
            }
        }
    }

    /// Answers a `sampling/createMessage` request with the import's model.
    pub(super) async fn sample(&self, request: Value) -> Result<Value, rmcp::ErrorData> {
        let refused = |why: String| rmcp::ErrorData::invalid_request(why, None);
        let Some(model) = &self.sampling else {
            return Err(refused("this client does not offer sampling".to_owned()));
        };
        if self.calls().is_empty() {
            return Err(refused(format!(
                "no call of the import `{}` is in flight",
                self.server
            )));
        }
        let Some((run, ctx)) = &self.door else {
            return Err(refused(format!(
                "the import `{}` has no door for the server's requests (ImportOptions::with_door): a model call outside it would be neither gated nor audited",
                self.server
            )));
        };
        let chat = sampled_request(&request).map_err(refused)?;
        let _one_at_a_time = self.asking.lock().await;
        let completion = tackle_agent::model::completion(model.as_ref());
        let answer = tokio::time::timeout(
            crate::client::ELICITATION_TIMEOUT,
            tackle_agent::model::complete(run, &completion, model.as_ref(), &chat, ctx),
        )
        .await
        .map_err(|_| refused("the model did not answer in time".to_owned()))?
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        if !answer.tool_calls.is_empty() {
            return Err(refused(
                "the model asked for tools, which sampling here does not offer".to_owned(),
            ));
        }
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": answer.text},
            "model": format!("{}/{}", model.provider(), model.model()),
            "stopReason": "endTurn",
        }))
    }
}

/// The chat request of a `sampling/createMessage` request (its wire form): the
/// system prompt, then the messages; text only.
fn sampled_request(request: &Value) -> Result<ChatRequest, String> {
    let mut messages = Vec::new();
    if let Some(system) = request.get("systemPrompt").and_then(Value::as_str) {
        messages.push(Message::system(system));
    }
    for message in request
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let blocks: Vec<&Value> = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().collect(),
            Some(block) => vec![block],
            None => Vec::new(),
        };
        let mut text = Vec::with_capacity(blocks.len());
        for block in blocks {
            match (block.get("type").and_then(Value::as_str), block.get("text")) {
                (Some("text"), Some(Value::String(t))) => text.push(t.as_str()),
                (kind, _) => {
                    return Err(format!(
                        "only text can be sampled here, not `{}`",
                        kind.unwrap_or("?")
                    ))
                }
            }
        }
        let text = text.join("");
        messages.push(match message.get("role").and_then(Value::as_str) {
            Some("assistant") => Message::assistant(text, Vec::new()),
            _ => Message::user(text),
        });
    }
    if messages
        .iter()
        .all(|m| m.role == tackle_agent::model::Role::System)
    {
        return Err("the request has no messages".to_owned());
    }
    Ok(ChatRequest {
        messages,
        ..ChatRequest::default()
    })
}

/// `content` with the `default` of every property of `schema` it leaves out
/// (SEP-1034).
fn with_defaults(mut content: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content
                    .entry(name.clone())
                    .or_insert_with(|| default.clone());
            }
        }
    }
    content
}

//! Streaming: a reply as deltas, sent to the run's event sink as the model writes
//! it, and assembled again from them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tackle_core::context::ToolContext;
use tackle_core::events::{ModelDelta, ToolEventKind};
use tackle_core::run::Run;

use super::{ChatResponse, ToolCallRequest, UnreadableCall};

/// Sends `delta` as an event of the model call `call_id`, with the caller's secrets
/// redacted.
pub(super) fn emit_delta(
    run: &Run,
    ctx: &ToolContext,
    call_id: u64,
    key: &str,
    mut delta: ModelDelta,
) {
    let Some(sink) = run.events() else { return };
    match &mut delta {
        ModelDelta::Text(text) => {
            ctx.redact_secrets(text);
        }
        ModelDelta::ToolCall { arguments, .. } => {
            ctx.redact_secrets(arguments);
        }
        // A kind this version cannot redact is not sent.
        _ => return,
    }
    sink.push(call_id, key, ToolEventKind::Model(delta));
}

/// A reply as deltas: its text as one (when there is text), then one per tool call
/// (its id, its name and its whole arguments' JSON text). [`DeltaAssembler`] makes the
/// reply again from them.
pub fn deltas_of(response: &ChatResponse) -> Vec<ModelDelta> {
    let mut deltas = Vec::with_capacity(response.tool_calls.len() + 1);
    if !response.text.is_empty() {
        deltas.push(ModelDelta::Text(response.text.clone()));
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        deltas.push(ModelDelta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: match &call.arguments {
                // Unreadable arguments are kept as the model sent them.
                Value::String(raw) if response.unreadable.iter().any(|u| u.index == index) => {
                    raw.clone()
                }
                other => other.to_string(),
            },
        });
    }
    deltas
}

/// Reads a tool call's arguments from their JSON text: an empty text is `{}` (some
/// servers send it for a call without arguments); text that is not JSON is kept as a
/// string, with why it could not be read.
pub fn read_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    match serde_json::from_str(raw) {
        Ok(arguments) => (arguments, None),
        Err(e) => (
            Value::String(raw.to_owned()),
            Some(format!("the arguments are not JSON ({e})")),
        ),
    }
}

/// Assembles a streamed reply from its deltas, in the order they came: text is
/// concatenated, and each tool call's pieces by their `index` (an id or a name sent
/// again whole in a later piece is not repeated).
///
/// ```
/// use tackle::agent::model::DeltaAssembler;
/// use tackle::events::ModelDelta;
///
/// let mut reply = DeltaAssembler::default();
/// reply.push(ModelDelta::Text("Let me ".into()));
/// reply.push(ModelDelta::Text("add.".into()));
/// reply.push(ModelDelta::ToolCall { index: 0, id: Some("c1".into()), name: Some("add".into()), arguments: "{\"a\": ".into() });
/// reply.push(ModelDelta::ToolCall { index: 0, id: None, name: None, arguments: "2}".into() });
/// let reply = reply.finish();
/// assert_eq!(reply.text, "Let me add.");
/// assert_eq!(reply.tool_calls[0].arguments, serde_json::json!({"a": 2}));
/// ```
#[derive(Clone, Debug, Default)]
pub struct DeltaAssembler {
    text: String,
    calls: BTreeMap<usize, (String, String, String)>,
    deltas: usize,
}

impl DeltaAssembler {
    /// Adds one delta.
    pub fn push(&mut self, delta: ModelDelta) {
        self.deltas += 1;
        match delta {
            ModelDelta::Text(text) => self.text.push_str(&text),
            ModelDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                let call = self.calls.entry(index).or_default();
                // Some servers repeat the id and the name in every piece of a call.
                for (whole, piece) in [(&mut call.0, id), (&mut call.1, name)] {
                    if let Some(piece) = piece.filter(|p| p != whole.as_str()) {
                        whole.push_str(&piece);
                    }
                }
                call.2.push_str(&arguments);
            }
            // A kind of delta this version does not assemble adds nothing.
            _ => {}
        }
    }

    /// How many deltas were pushed.
    pub fn deltas(&self) -> usize {
        self.deltas
    }

    /// The reply: its text, and its tool calls in `index` order, those whose
    /// arguments are not JSON listed in [`ChatResponse::unreadable`].
    pub fn finish(self) -> ChatResponse {
        let mut response = ChatResponse::text(self.text);
        for (position, (_, (id, name, raw))) in self.calls.into_iter().enumerate() {
            let (arguments, unreadable) = read_arguments(&raw);
            if let Some(error) = unreadable {
                response.unreadable.push(UnreadableCall {
                    index: position,
                    error,
                });
            }
            response.tool_calls.push(ToolCallRequest {
                id,
                name,
                arguments,
            });
        }
        response
    }
}

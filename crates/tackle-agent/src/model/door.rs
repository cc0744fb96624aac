//! A model call through the door: the completion effect ([`Completion`]), its
//! operation ([`completion`]), and [`complete`], with its span.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tackle_core::bounds::{dispose, Exceeded, Limits};
use tackle_core::call::{Effect, Operation};
use tackle_core::context::ToolContext;
use tackle_core::error::ToolError;
use tackle_core::events::ModelDelta;
use tackle_core::run::Run;
use tackle_core::secrets::Scrubber;
use tackle_core::spec::{SideEffects, ToolSpec};
use tracing::Instrument;

use super::request_delta::{recorded_request, Conversation};
use super::streaming::{deltas_of, emit_delta};
use super::{ChatModel, ChatRequest, ChatResponse, ModelError};

/// The effect of a model's completion, as it passes the door (see
/// [`tackle_core::call::effect`]): a [`ChatResponse`] or a [`ModelError`], never
/// turned into JSON and back. Its JSON view is made only when a stage needs one (a
/// recording); a recorded reply comes back through it, and a recorded failure
/// replays as [`ModelError::Failed`] with the same message. The door's own errors
/// (denied, a replay miss, cancelled, timed out, over the door's limits) are
/// [`ModelError::Door`], but for its `Execution` failures (a journal that could not
/// hold the call, a request or reply with no JSON form), which are
/// [`ModelError::Failed`] as a recorded failure is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion;

impl Effect for Completion {
    type Output = ChatResponse;
    type Error = ModelError;
    /// A completion changes nothing in the world: a durable run asks again after a
    /// crash (its spec's side effects stay `external`: it costs, and a replay never
    /// makes it).
    const RERUN_SAFE: bool = true;

    fn view(output: &ChatResponse) -> Result<std::borrow::Cow<'_, Value>, String> {
        serde_json::to_value(output)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| e.to_string())
    }

    fn from_view(view: Value) -> Result<ChatResponse, ModelError> {
        serde_json::from_value(view).map_err(|e| ModelError::Malformed {
            message: format!("the recorded answer does not fit: {e}"),
        })
    }

    fn error_view<'e>(error: &'e ModelError, key: &str) -> std::borrow::Cow<'e, ToolError> {
        match error {
            ModelError::Door(error) => std::borrow::Cow::Borrowed(error),
            other => std::borrow::Cow::Owned(ToolError::Execution {
                key: key.to_owned(),
                message: other.to_string(),
            }),
        }
    }

    fn from_error(error: ToolError) -> ModelError {
        match error {
            ToolError::Execution { message, .. } => ModelError::Failed { message },
            other => ModelError::Door(other),
        }
    }

    /// The reply measured as its view would be, without making it: its texts, and
    /// each tool call's arguments where they sit (three levels down:
    /// `{"tool_calls": [{"arguments": ...}]}`).
    fn check_bounds(output: &ChatResponse, limits: &Limits) -> Result<(), Exceeded> {
        let text = |s: &str| 2 + s.len();
        let field = |name: &str| 4 + name.len();
        let inner = Limits {
            max_depth: limits.max_depth.saturating_sub(3),
            max_bytes: limits.max_bytes,
        };
        let mut bytes = 2 + field("text") + text(&output.text) + 64;
        for call in &output.tool_calls {
            bytes += 3 + field("id") + text(&call.id) + field("name") + text(&call.name);
            bytes += field("arguments") + inner.measure(&call.arguments)?;
            if bytes > limits.max_bytes {
                return Err(Exceeded::Bytes(limits.max_bytes));
            }
        }
        for unreadable in &output.unreadable {
            bytes += 3 + field("index") + 24 + field("error") + text(&unreadable.error);
        }
        if bytes > limits.max_bytes {
            return Err(Exceeded::Bytes(limits.max_bytes));
        }
        Ok(())
    }

    fn scrub(
        outcome: &mut Result<ChatResponse, ModelError>,
        scrubber: &Scrubber<'_>,
        keep_output: bool,
    ) {
        match outcome {
            Ok(response) if !keep_output => {
                scrubber.text(&mut response.text);
                for call in &mut response.tool_calls {
                    scrubber.text(&mut call.id);
                    scrubber.text(&mut call.name);
                    // Within the door's bounds: the code checked them.
                    scrubber.value(&mut call.arguments);
                }
                for unreadable in &mut response.unreadable {
                    scrubber.text(&mut unreadable.error);
                }
            }
            Ok(_) => {}
            Err(error) => error.for_each_text(&mut |text| {
                scrubber.text(text);
            }),
        }
    }
}

/// The operation of a model's completions: key `llm.<provider>.complete@<model>`,
/// side effects `external`, replay policy `must-stub` (a replay never calls a real
/// model; a miss or a call out of order is an error; a [scripted](ChatModel::is_scripted)
/// model is asked too, and its answer compared with the recording), the model's
/// [`permissions`](ChatModel::permissions). Make it once per model and pass it to
/// [`complete`].
pub fn completion(model: &dyn ChatModel) -> Operation<Completion> {
    let mut spec = ToolSpec::new(
        format!("{}{}", super::COMPLETION_PREFIX, model.provider()),
        "complete",
        model.model(),
        SideEffects::External,
        format!(
            "A completion of the chat model `{}` of `{}`.",
            model.model(),
            model.provider()
        ),
    );
    spec.permissions = model.permissions();
    // The request and the answer are typed on both sides; the door has nothing to check.
    spec.input_schema = Value::Bool(true);
    spec.output_schema = Value::Bool(true);
    // A completion is never shaped: cut, it would no longer be a reply.
    spec.max_result_tokens = Some(0);
    let operation = Operation::typed(spec);
    if model.is_scripted() {
        operation.with_replay_check()
    } else {
        operation
    }
}

/// Calls `model` through the door as a call of `run`, as the operation `completion`
/// (made by [`completion`] for this model), with the caller's `ctx`: every stage
/// applies (permissions, replay, time limits, audit). The request is serialized only
/// when a stage needs it (the run has a cassette). When the run has an event sink,
/// the model streams its reply into it (see the [module docs](super)).
///
/// A model's own failure keeps its kind on a live call; recorded, it replays as
/// [`ModelError::Failed`] with the same message. What the door stops is
/// [`ModelError::Door`].
pub async fn complete(
    run: &Run,
    completion: &Operation<Completion>,
    model: &dyn ChatModel,
    request: &ChatRequest,
    ctx: &ToolContext,
) -> Result<ChatResponse, ModelError> {
    complete_growing(run, completion, model, request, ctx, None).await
}

/// [`complete`], from a `conversation` that only grows between its calls.
pub(crate) async fn complete_growing(
    run: &Run,
    completion: &Operation<Completion>,
    model: &dyn ChatModel,
    request: &ChatRequest,
    ctx: &ToolContext,
    conversation: Option<&Conversation>,
) -> Result<ChatResponse, ModelError> {
    let span = tracing::info_span!(
        "chat",
        otel.name = tracing::field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = otel_provider(model.provider()),
        gen_ai.request.model = model.model(),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if span.is_disabled() {
        return complete_in_door(run, completion, model, request, ctx, conversation).await;
    }
    span.record("otel.name", format!("chat {}", model.model()).as_str());
    let result = complete_in_door(run, completion, model, request, ctx, conversation)
        .instrument(span.clone())
        .await;
    match &result {
        Ok(response) => {
            if let Some(usage) = response.usage {
                span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", usage.output_tokens);
            }
        }
        Err(error) => {
            span.record("error.type", error.kind());
        }
    }
    result
}

/// The provider as the GenAI conventions name it: their well-known values where
/// tackle's name differs (`gemini` is `gcp.gemini`, the Responses API is `openai`),
/// else tackle's.
fn otel_provider(provider: &str) -> &str {
    match provider {
        "gemini" => "gcp.gemini",
        "openai-responses" => "openai",
        other => other,
    }
}

/// [`complete`], without its span.
async fn complete_in_door(
    run: &Run,
    completion: &Operation<Completion>,
    model: &dyn ChatModel,
    request: &ChatRequest,
    ctx: &ToolContext,
    conversation: Option<&Conversation>,
) -> Result<ChatResponse, ModelError> {
    let key = completion.key();
    let runtime = run.runtime();
    let listens = run.events().is_some();
    let live = AtomicBool::new(false);
    let streamed = &live;
    let (outcome, call_id) = run
        .perform_numbered(
            completion,
            // Made only when a stage needs it; a request with no JSON form ends the
            // call rather than being keyed by a stand-in.
            || match run.cassette() {
                Some(cassette) => recorded_request(run, cassette, request, conversation),
                None => serde_json::to_value(request),
            },
            ctx,
            |call_id| async move {
                let answer = if listens {
                    streamed.store(true, Ordering::Relaxed);
                    let sink = |delta: ModelDelta| emit_delta(run, ctx, call_id, key, delta);
                    model.stream(request, &sink).await
                } else {
                    model.complete(request).await
                };
                match answer {
                    Ok(mut response) => {
                        // Arguments built in code may be nested past what anything
                        // recursive (serializing them, first of all) survives.
                        let limits = runtime.limits();
                        let over =
                            response.tool_calls.iter().enumerate().find_map(|(i, c)| {
                                limits.check(&c.arguments).err().map(|e| (i, e))
                            });
                        if let Some((index, exceeded)) = over {
                            for call in response.tool_calls.drain(..) {
                                dispose(call.arguments);
                            }
                            return Err(ModelError::Malformed {
                                message: format!("the arguments of tool call {index}: {exceeded}"),
                            });
                        }
                        Ok(response)
                    }
                    Err(e) => Err(e),
                }
            },
        )
        .await;
    let response = outcome?;
    if listens && !streamed.load(Ordering::Relaxed) {
        // Replayed: the recorded reply streams at once.
        for delta in deltas_of(&response) {
            emit_delta(run, ctx, call_id, key, delta);
        }
    }
    Ok(response)
}

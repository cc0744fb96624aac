//! Chat models: what an agent asks, and the models that answer in tests.
//!
//! A [`ChatModel`] takes a [`ChatRequest`] (the conversation so far and the tools it
//! may call) and gives a [`ChatResponse`]: text, and zero or more [`ToolCallRequest`]s,
//! each with an id, a tool name and arguments. Models are async and fallible; every
//! failure is a [`ModelError`] a caller can match.
//!
//! Three models need no network, for tests and examples:
//!
//! * [`ScriptedModel`] answers with scripted turns, in order; a call past the script
//!   is an error, and [`ScriptedModel::finish`] reports turns never used;
//! * [`FunctionModel`] answers with a closure over the request;
//! * [`TestModel`] calls every offered tool once, with arguments made from its input
//!   schema, then answers with text: a smoke test of a whole toolset.
//!
//! [`complete`] is how an agent calls a model: through the door, as the operation
//! `llm.<provider>.complete@<model>` ([`completion`]), like any effect. So a model call
//! needs its permissions (by default `llm:<provider>`, see
//! [`ChatModel::permissions`]: deny by default), replays from a cassette when one is
//! attached (agent runs replay offline), and leaves an audit event, counters and a span.
//!
//! **Tracing, by the OpenTelemetry GenAI conventions.** Each [`complete`] runs in a
//! `tracing` span named `chat` whose `otel.name` is `chat {model}` (the conventional
//! span name, for `tracing-opentelemetry`), with `gen_ai.operation.name = "chat"`,
//! `gen_ai.provider.name` (the conventions' well-known value: `gcp.gemini` for Gemini,
//! `openai` for the Responses API), `gen_ai.request.model`, and, once the model answered,
//! `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens` (when the provider
//! reports [`Usage`]) or `error.type`. The door's own `tool.call` span is inside it.
//!
//! **Streaming.** When the caller listens to events (its context has an
//! [`EventSink`](crate::events::EventSink)), [`complete`] asks the model to
//! [`stream`](ChatModel::stream): each piece of the reply reaches the sink as a
//! [`ToolEventKind::Model`] event of the model's call while the model writes, and the
//! call still returns the assembled reply. That reply is what a cassette records; a
//! replayed call re-emits it as events (its text as one delta, each tool call as one),
//! so a streamed run replays offline with the same events, only not spread in time. A
//! model that cannot stream sends its reply as deltas once it has it; a stream that
//! breaks before the reply ends is [`ModelError::StreamBroken`]. Nobody listening, a
//! model is not asked to stream.

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::hash::BuildHasher as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tracing::Instrument;

use crate::bounds::{dispose, Exceeded, Limits};
use crate::call::{Effect, Operation, OperationKind};
use crate::canonical::{canonical_hash, Fnv};
use crate::content::ContentPart;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::events::{ModelDelta, ToolEventKind};
use crate::replay::Cassette;
use crate::run::Run;
use crate::secrets::Scrubber;
use crate::spec::{SideEffects, ToolSpec};

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or program) asking.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the model's tool calls.
    Tool,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said (for a tool message, the tool's result as text).
    pub content: String,
    /// The tool calls an assistant message asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images and files that go with the message, after its text: a user's picture, a
    /// tool's image result (see [`crate::content`]). Each client sends them in its
    /// provider's form; where a protocol takes no such part in that place (an image in
    /// an OpenAI chat-completions tool result), the client sends its
    /// [`unsent`](ContentPart::unsent) text instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::plain(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::plain(Role::User, content)
    }

    /// An assistant message, with the tool calls it asks for.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Message {
        Message {
            tool_calls,
            ..Message::plain(Role::Assistant, content)
        }
    }

    /// A tool's result for the call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Message::plain(Role::Tool, content)
        }
    }

    /// The same message with `parts` (images, files) after its text.
    pub fn with_parts(mut self, parts: Vec<ContentPart>) -> Message {
        self.parts = parts;
        self
    }

    fn plain(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            parts: Vec::new(),
        }
    }
}

/// A tool as offered to a model: its name, what it does, its input schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Value,
}

/// Whether a request offers no tools (then its JSON has no `tools`).
fn no_tools(tools: &Arc<Vec<ToolDefinition>>) -> bool {
    tools.is_empty()
}

/// What an agent asks a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call: shared, so that the requests of a run and the
    /// runs of a skill hold one copy of the tools' schemas (make one with
    /// `vec![...].into()`; [`Arc::make_mut`] to change a request's own).
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<Vec<ToolDefinition>>,
    /// When set, a final answer (a reply without tool calls) must be a JSON document
    /// matching this schema. A model that [enforces it](ChatModel::structured_output)
    /// is sent it in its provider's form (`response_format`, `output_config`,
    /// `responseJsonSchema`, `text.format`, Ollama's `format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

/// One tool call a model asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for the call; the result message refers to it.
    pub id: String,
    /// The tool to call: the name it was offered under (`bank_balance`), or its
    /// registry key (`bank.balance@1`), `namespace.name` (`bank.balance`) or bare name
    /// (when no other offered tool shares it). The ReAct loop accepts any of these; any
    /// other name is a `NotFound` observation listing the closest names.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

impl ToolCallRequest {
    /// A call of the tool the model was offered as `name`, with `arguments`,
    /// identified by `id`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// A model's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Text (reasoning, or the final answer when there are no tool calls).
    #[serde(default)]
    pub text: String,
    /// The tool calls it asks for, to run before it answers again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// The calls among `tool_calls` whose arguments could not be read (cut off by a
    /// token limit, say): their `arguments` hold the raw text. A ReAct run answers each
    /// with a failed observation, so the model can send it again, and runs the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableCall>,
    /// The tokens the call used, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// The tokens one model call used, or a run's calls together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request (the prompt).
    pub input_tokens: u64,
    /// Tokens of the answer.
    pub output_tokens: u64,
}

impl Usage {
    /// Whether no token was counted.
    pub fn is_zero(&self) -> bool {
        self.input_tokens == 0 && self.output_tokens == 0
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// What a model's tokens cost, per million.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pricing {
    /// The price of a million input tokens.
    pub input_per_million: Decimal,
    /// The price of a million output tokens.
    pub output_per_million: Decimal,
}

impl Pricing {
    /// Input and output prices per million tokens.
    pub fn per_million(input: Decimal, output: Decimal) -> Pricing {
        Pricing {
            input_per_million: input,
            output_per_million: output,
        }
    }

    /// The cost of `usage`, exactly (no rounding).
    ///
    /// ```
    /// use rust_decimal::Decimal;
    /// use tackle::agent::model::{Pricing, Usage};
    ///
    /// let price = Pricing::per_million(Decimal::new(250, 2), Decimal::new(1000, 2)); // 2.50, 10.00
    /// let used = Usage { input_tokens: 1_200, output_tokens: 300 };
    /// assert_eq!(price.cost(used), Decimal::new(60, 4)); // 0.0030 + 0.0030
    /// ```
    pub fn cost(&self, usage: Usage) -> Decimal {
        let million = Decimal::from(1_000_000u32);
        (Decimal::from(usage.input_tokens) * self.input_per_million
            + Decimal::from(usage.output_tokens) * self.output_per_million)
            / million
    }
}

/// A tool call of a [`ChatResponse`] whose arguments are not JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableCall {
    /// Its position in [`ChatResponse::tool_calls`].
    pub index: usize,
    /// Why its arguments could not be read.
    pub error: String,
}

impl ChatResponse {
    /// A text answer with no tool calls.
    pub fn text(text: impl Into<String>) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            tool_calls: Vec::new(),
            unreadable: Vec::new(),
            usage: None,
        }
    }

    /// An answer asking for tool calls.
    pub fn calls(text: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            tool_calls,
            unreadable: Vec::new(),
            usage: None,
        }
    }
}

/// Why a model gave no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The endpoint answered with an error status.
    #[error("the model endpoint answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// No answer within the time limit.
    #[error("the model did not answer within {after_ms} ms")]
    Timeout {
        /// The limit, in milliseconds.
        after_ms: u64,
    },
    /// The answer could not be read.
    #[error("the model's answer could not be read: {message}")]
    Malformed {
        /// What was wrong.
        message: String,
    },
    /// The connection failed.
    #[error("the model could not be reached: {message}")]
    Transport {
        /// What failed.
        message: String,
    },
    /// A scripted model was called more often than its script has turns.
    #[error("the scripted model has {turns} turn(s) and was called a {call}th time")]
    ScriptExhausted {
        /// Turns in the script.
        turns: usize,
        /// This call's number, from 1.
        call: usize,
    },
    /// A model refused the request or failed on its own terms.
    #[error("the model failed: {message}")]
    Failed {
        /// Why.
        message: String,
    },
    /// The reply's stream broke before the reply ended: the connection failed or
    /// closed mid-reply. The deltas already emitted are all the caller got.
    #[error("the model's stream broke after {deltas} delta(s): {message}")]
    StreamBroken {
        /// What happened.
        message: String,
        /// How many deltas arrived before it broke.
        deltas: usize,
    },
    /// The door stopped the call: the caller lacks the model's permissions, the
    /// replay layer had no recorded answer or the run diverged from the recording, the
    /// call ran out of time or was cancelled.
    #[error("{0}")]
    Door(ToolError),
}

impl ModelError {
    /// The variant's name (`Status`, `Timeout`, ...; for [`ModelError::Door`], the
    /// door error's kind), as spans give it in `error.type`.
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::Status { .. } => "Status",
            ModelError::Timeout { .. } => "Timeout",
            ModelError::Malformed { .. } => "Malformed",
            ModelError::Transport { .. } => "Transport",
            ModelError::ScriptExhausted { .. } => "ScriptExhausted",
            ModelError::Failed { .. } => "Failed",
            ModelError::StreamBroken { .. } => "StreamBroken",
            ModelError::Door(error) => error.kind().as_str(),
        }
    }

    /// Calls `f` with every text of the error that could carry a secret (a body, a
    /// message, every text of a door error): how the door scrubs it.
    pub fn for_each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        match self {
            ModelError::Status { body: text, .. }
            | ModelError::Malformed { message: text }
            | ModelError::Transport { message: text }
            | ModelError::Failed { message: text }
            | ModelError::StreamBroken { message: text, .. } => f(text),
            ModelError::Door(error) => error.for_each_text(f),
            ModelError::Timeout { .. } | ModelError::ScriptExhausted { .. } => {}
        }
    }
}

/// The future a [`ChatModel`] returns.
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ChatResponse, ModelError>> + Send + 'a>>;

/// Where a streaming model sends the pieces of its reply.
pub type DeltaSink<'a> = &'a (dyn Fn(ModelDelta) + Send + Sync);

/// A chat model. See the [module docs](self).
pub trait ChatModel: Send + Sync {
    /// The provider, as in the key `llm.<provider>.complete@<model>`.
    fn provider(&self) -> &str;
    /// The model's name.
    fn model(&self) -> &str;
    /// Answers one request.
    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a>;
    /// Answers one request, sending each piece of the reply to `sink` as the model
    /// writes it, and returns the assembled reply (the concatenation of the deltas).
    /// By default the model [completes](Self::complete) and then sends its reply as
    /// deltas ([`deltas_of`]); a model that streams natively overrides this.
    fn stream<'a>(&'a self, request: &'a ChatRequest, sink: DeltaSink<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let response = self.complete(request).await?;
            for delta in deltas_of(&response) {
                sink(delta);
            }
            Ok(response)
        })
    }
    /// The permissions a caller needs to call this model, checked at the door: by
    /// default `llm:<provider>`. A caller grants them with
    /// [`ToolContext::with_grant`](tackle_core::ToolContext::with_grant) (`llm:*` for every model).
    fn permissions(&self) -> Vec<String> {
        vec![format!("llm:{}", self.provider())]
    }
    /// Whether the model's provider enforces [`ChatRequest::response_schema`] itself
    /// (structured output). A ReAct run tells other models the schema in the prompt.
    /// Either way the run validates the answer.
    fn structured_output(&self) -> bool {
        false
    }
    /// Whether the model's answers are a script of the program's own, computed in the
    /// process from the request (the test models [`ScriptedModel`] and [`TestModel`];
    /// not a [`FunctionModel`], whose closure may do anything, and is often a stand-in
    /// that must never be called). A replay then asks the model as well and
    /// compares its answer with the recorded one: a script edited since the
    /// cassette was recorded fails the replay at its `finish()`, naming each changed
    /// turn, and the script's turns are used as in a live run. Default `false`: a
    /// real model is never called by a replay.
    fn is_scripted(&self) -> bool {
        false
    }
}

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
    const KIND: OperationKind = OperationKind::ModelCompletion;

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
        format!("llm.{}", model.provider()),
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
/// the model streams its reply into it (see the [module docs](self)).
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

/// A conversation that only grows between its model calls (the ReAct loop's: it
/// appends, and changes nothing it sent): its calls tell a journaled run how much of
/// each request it sent before, so the request is journaled as what it added
/// without comparing the rest again (see `recorded_request`).
pub(crate) struct Conversation {
    id: u64,
    /// Messages at the latest call (`usize::MAX` before the first).
    asked: AtomicUsize,
    /// Messages at the call before it.
    previous: AtomicUsize,
}

impl Conversation {
    /// A new conversation, with an id of its own.
    pub(crate) fn new() -> Conversation {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Conversation {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            asked: AtomicUsize::new(usize::MAX),
            previous: AtomicUsize::new(usize::MAX),
        }
    }

    /// Notes a call with `messages` messages.
    pub(crate) fn asking(&self, messages: usize) {
        let before = self.asked.swap(messages, Ordering::Relaxed);
        self.previous.store(before, Ordering::Relaxed);
    }

    /// Its id, and how many messages it had at its previous call (unchanged since).
    fn unchanged(&self) -> Option<(u64, usize)> {
        let before = self.previous.load(Ordering::Relaxed);
        (before != usize::MAX).then_some((self.id, before))
    }
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
                Some(cassette) => recorded_request(cassette, request, conversation),
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

/// A run's last recorded model request: what its next one is recorded against.
#[derive(Default)]
struct LastRequest {
    /// How many messages it had.
    messages: usize,
    /// The hash of those messages (see [`messages_hash`]; `None`: none yet): what a
    /// request that extends it must begin with. A hash, not a copy, so a recording run
    /// keeps no second conversation.
    prefix: Option<DefaultHasher>,
    /// The hash of its tools (see [`tools_hash`]).
    tools: u64,
    /// Its tools themselves, shared (not a copy): a request offering the very same
    /// list (a run's requests share the skill's until it finds a tool) needs no hash.
    offered: Option<Arc<Vec<ToolDefinition>>>,
    response_schema: Option<Value>,
    /// The digest of the request, chained over its deltas.
    digest: u64,
    started: bool,
    /// The conversation it came from (`u64::MAX`: unknown).
    conversation: u64,
    /// Whether the run records whole requests (its cassette or journal began before
    /// deltas).
    whole: bool,
}

/// Feeds what is serialized into it to a hasher: a hash of typed values without
/// building them as JSON.
///
/// The hashes that decide whether a request extends the last one (its messages, its
/// tools) are only compared within this process, so they are keyed at random per
/// process (SipHash): content a model or a tool wrote cannot be crafted to pass for
/// other content, as it could against a fixed hash. (The recorded digest is FNV, as
/// recordings made before say, and decides nothing.)
struct Hashing(DefaultHasher);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(&mut self.0, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Hashing {
    /// Hashes `value` as serialized. Writing to a hasher cannot fail; a value that
    /// cannot be serialized hashes as far as it got, and so differs from any that can.
    fn feed(&mut self, value: &impl Serialize) {
        let _ = serde_json::to_writer(&mut *self, value);
    }
}

/// A hasher with this process's random keys.
fn keyed() -> DefaultHasher {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new).build_hasher()
}

/// `tools` as JSON, as serialized, with each schema cloned rather than serialized
/// again key by key.
fn tools_value(tools: &[ToolDefinition]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                let mut fields = Map::with_capacity(3);
                fields.insert("name".into(), Value::String(tool.name.clone()));
                fields.insert(
                    "description".into(),
                    Value::String(tool.description.clone()),
                );
                fields.insert("parameters".into(), tool.parameters.clone());
                Value::Object(fields)
            })
            .collect(),
    )
}

/// A hash of `tools` as serialized: equal tools hash equal (within one process), and
/// nothing is built to compare them.
fn tools_hash(tools: &[ToolDefinition]) -> u64 {
    let mut hashing = Hashing(keyed());
    hashing.feed(&tools);
    std::hash::Hasher::finish(&hashing.0)
}

/// The hash state after `messages`, one after another (each a self-delimiting JSON
/// object), from `state` (`None`: from the start).
fn messages_hash(state: Option<DefaultHasher>, messages: &[Message]) -> DefaultHasher {
    let mut hashing = Hashing(state.unwrap_or_else(keyed));
    for message in messages {
        hashing.feed(message);
    }
    hashing.0
}

/// The input of a model call in a run with a cassette or a journal: the request as a
/// delta against the run's previous model request, so the recording holds each
/// message and the tools' schemas once (a run's recording grows with its length, not
/// its square), a durable run resumes in time linear in its length, and a recording
/// run builds a small value per call instead of the whole conversation.
///
/// `{"digest", "extends", "messages", "tools"?, "response_schema"?}`: the first
/// `extends` messages are the previous request's (checked equal), `messages` the
/// rest; `tools` and `response_schema` appear when they differ from the previous
/// request's (always on the first). `digest` (hex) is chained over the deltas from
/// the run's first request, so it names the whole request. A replay makes the same
/// deltas, so calls match as before; [`expand_requests`] makes whole requests again
/// (an exported journal holds those). A cassette recorded with whole requests goes on
/// with whole requests.
///
/// The cassette keeps the last request in its slot. When the request comes from a
/// [`Conversation`] whose previous call was the last request, the prefix is not
/// compared again.
fn recorded_request(
    cassette: &Cassette,
    request: &ChatRequest,
    conversation: Option<&Conversation>,
) -> Result<Value, serde_json::Error> {
    let whole = || serde_json::to_value(request);
    let memory = cassette.request_memory();
    let unchanged = conversation.and_then(Conversation::unchanged);
    let mut slot = memory.lock().unwrap_or_else(PoisonError::into_inner);
    if !slot.as_ref().is_some_and(|s| s.is::<LastRequest>()) {
        *slot = Some(Box::new(LastRequest {
            whole: cassette.records_whole_requests(),
            ..LastRequest::default()
        }));
    }
    let Some(last) = slot.as_mut().and_then(|s| s.downcast_mut::<LastRequest>()) else {
        return whole();
    };
    if last.whole {
        // A run recorded before requests went as deltas goes on as it began.
        return whole();
    }
    let kept = last.messages;
    let extends = last.started
        && request.messages.len() >= kept
        && (unchanged == Some((last.conversation, kept))
            || last.prefix.as_ref().is_some_and(|prefix| {
                std::hash::Hasher::finish(&messages_hash(None, &request.messages[..kept]))
                    == std::hash::Hasher::finish(prefix)
            }));
    let shared = if extends { kept } else { 0 };
    let new = &request.messages[shared..];
    let mut input = Map::new();
    input.insert("extends".into(), json!(shared));
    // Made before the run's memory of its last request changes: a request that
    // cannot be serialized leaves it as it was.
    input.insert("messages".into(), serde_json::to_value(new)?);
    // The very list the last request offered: nothing to hash.
    let same_tools = last.started
        && last
            .offered
            .as_ref()
            .is_some_and(|offered| Arc::ptr_eq(offered, &request.tools));
    if !same_tools {
        let tools = tools_hash(&request.tools);
        if !last.started || tools != last.tools {
            input.insert("tools".into(), tools_value(&request.tools));
            last.tools = tools;
        }
    }
    if !last.started || request.response_schema != last.response_schema {
        input.insert(
            "response_schema".into(),
            request.response_schema.clone().unwrap_or(Value::Null),
        );
        last.response_schema.clone_from(&request.response_schema);
    }
    if !extends {
        last.messages = 0;
        last.prefix = None;
        last.digest = 0;
    }
    last.messages += new.len();
    last.prefix = Some(messages_hash(last.prefix.take(), new));
    let mut input = Value::Object(input);
    let mut hasher = Fnv::default();
    std::hash::Hasher::write_u64(&mut hasher, last.digest);
    canonical_hash(&input, &mut hasher);
    last.digest = std::hash::Hasher::finish(&hasher);
    last.started = true;
    last.offered = Some(Arc::clone(&request.tools));
    last.conversation = unchanged.map_or(u64::MAX, |(id, _)| id);
    if let Value::Object(fields) = &mut input {
        fields.insert("digest".into(), json!(format!("{:016x}", last.digest)));
    }
    Ok(input)
}

/// Makes the whole requests of model calls journaled as deltas again (see
/// `recorded_request`), in the order the calls were made: what a cassette that
/// replays the run in an ordinary (not journaled) run holds. Other inputs are left
/// as they are.
pub(crate) fn expand_requests<'a>(inputs: impl Iterator<Item = &'a mut Value>) {
    let mut last = ChatRequest::default();
    for input in inputs {
        let Some(delta) = input.as_object() else {
            continue;
        };
        let (Some(extends), Some(messages), true) = (
            delta.get("extends").and_then(Value::as_u64),
            delta.get("messages"),
            delta.contains_key("digest"),
        ) else {
            continue;
        };
        let Ok(messages) = serde_json::from_value::<Vec<Message>>(messages.clone()) else {
            continue;
        };
        let keep = usize::try_from(extends).unwrap_or(usize::MAX);
        if keep > last.messages.len() {
            continue;
        }
        last.messages.truncate(keep);
        last.messages.extend(messages);
        if let Some(tools) = delta.get("tools") {
            last.tools = serde_json::from_value(tools.clone()).unwrap_or_default();
        }
        if let Some(schema) = delta.get("response_schema") {
            last.response_schema = (!schema.is_null()).then(|| schema.clone());
        }
        if let Ok(whole) = serde_json::to_value(&last) {
            *input = whole;
        }
    }
}

/// Sends `delta` as an event of the model call `call_id`, with the caller's secrets
/// redacted.
fn emit_delta(run: &Run, ctx: &ToolContext, call_id: u64, key: &str, mut delta: ModelDelta) {
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

/// A model that answers with scripted turns, in order.
///
/// Its `n`th turn answers the conversation's `n`th model reply: the turn it gives a
/// request is the number of assistant messages the request holds (or, when it was
/// called more often than that, its own count of calls). So a run resumed in another
/// process, whose earlier turns come from its journal, gets the next turn, not the
/// first one again. A model that answers only part of a conversation (one given with
/// [`ReactSkill::with_model_for`](crate::agent::react::ReactSkill::with_model_for))
/// counts its own calls instead: make it with [`ScriptedModel::in_call_order`].
pub struct ScriptedModel {
    turns: Vec<Result<ChatResponse, ModelError>>,
    next: Mutex<usize>,
    requests: Mutex<Vec<ChatRequest>>,
    by_conversation: bool,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("turns", &self.turns.len())
            .field("used", &self.used())
            .finish()
    }
}

impl ScriptedModel {
    /// A model whose `n`th answer is `turns[n]`.
    pub fn new(turns: impl IntoIterator<Item = ChatResponse>) -> ScriptedModel {
        ScriptedModel::with_results(turns.into_iter().map(Ok))
    }

    /// A model whose answers may be failures too.
    pub fn with_results(
        turns: impl IntoIterator<Item = Result<ChatResponse, ModelError>>,
    ) -> ScriptedModel {
        ScriptedModel {
            turns: turns.into_iter().collect(),
            next: Mutex::new(0),
            requests: Mutex::new(Vec::new()),
            by_conversation: true,
        }
    }

    /// A model whose `n`th call gets `turns[n]`, whatever the conversation holds: for
    /// a model that answers only some steps of a run. Not safe to resume in another
    /// process (its count starts again from the first turn).
    pub fn in_call_order(turns: impl IntoIterator<Item = ChatResponse>) -> ScriptedModel {
        ScriptedModel {
            by_conversation: false,
            ..ScriptedModel::new(turns)
        }
    }

    /// How many turns were used.
    pub fn used(&self) -> usize {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The requests it received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Checks that every turn was used; the error says how many were not.
    pub fn finish(&self) -> Result<(), ModelError> {
        let used = self.used();
        if used < self.turns.len() {
            return Err(ModelError::Failed {
                message: format!(
                    "{} of {} scripted turn(s) were never used",
                    self.turns.len() - used,
                    self.turns.len()
                ),
            });
        }
        Ok(())
    }
}

impl ChatModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "script"
    }

    fn is_scripted(&self) -> bool {
        true
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let replies = if self.by_conversation {
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count()
        } else {
            0
        };
        let at = (*next).max(replies);
        let answer = match self.turns.get(at) {
            Some(turn) => turn.clone(),
            None => Err(ModelError::ScriptExhausted {
                turns: self.turns.len(),
                call: at + 1,
            }),
        };
        *next = at + 1;
        Box::pin(std::future::ready(answer))
    }
}

/// A model made of a closure over the request.
pub struct FunctionModel<F> {
    name: String,
    f: F,
}

impl<F> FunctionModel<F>
where
    F: Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync,
{
    /// A model named `name` that answers with `f`.
    pub fn new(name: impl Into<String>, f: F) -> FunctionModel<F> {
        FunctionModel {
            name: name.into(),
            f,
        }
    }
}

impl<F> fmt::Debug for FunctionModel<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionModel")
            .field("name", &self.name)
            .finish()
    }
}

impl<F> ChatModel for FunctionModel<F>
where
    F: Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync,
{
    fn provider(&self) -> &str {
        "function"
    }

    fn model(&self) -> &str {
        &self.name
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(std::future::ready((self.f)(request)))
    }
}

/// A model that calls every offered tool once, with arguments made from its input
/// schema, then answers with a summary of the results.
#[derive(Debug, Default)]
pub struct TestModel;

impl ChatModel for TestModel {
    fn provider(&self) -> &str {
        "test"
    }

    fn model(&self) -> &str {
        "every-tool-once"
    }

    fn is_scripted(&self) -> bool {
        true
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        let answered = request.messages.iter().any(|m| m.role == Role::Tool);
        let response = if answered || request.tools.is_empty() {
            let results = request
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .count();
            ChatResponse::text(format!("called {results} tool(s)"))
        } else {
            ChatResponse::calls(
                "calling every tool once",
                request
                    .tools
                    .iter()
                    .enumerate()
                    .map(|(i, tool)| ToolCallRequest {
                        id: format!("test_{i}"),
                        name: tool.name.clone(),
                        arguments: example_of(&tool.parameters, &tool.parameters, 0),
                    })
                    .collect(),
            )
        };
        Box::pin(std::future::ready(Ok(response)))
    }
}

/// A value that fits `schema` (its required parts), following local `$ref`s.
pub fn example_of(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return resolved.map_or(Value::Null, |s| example_of(s, root, depth + 1));
    }
    if let Some(value) = obj.get("const") {
        return value.clone();
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(value) = obj.get("default") {
        return value.clone();
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = obj
            .get(combinator)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return example_of(first, root, depth + 1);
        }
    }
    let kind = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    if required.contains(&name.as_str()) {
                        out.insert(name.clone(), example_of(prop, root, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = obj
                .get("items")
                .map_or(Value::Null, |i| example_of(i, root, depth + 1));
            Value::Array((0..min).map(|_| item.clone()).collect())
        }
        "string" => {
            let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            json!("x".repeat(min.max(7)).replacen("xxxxxxx", "example", 1))
        }
        "integer" => json!(obj
            .get("minimum")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(1)),
        "number" => json!(obj
            .get("minimum")
            .and_then(Value::as_f64)
            .unwrap_or(1.0)
            .max(1.0)),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

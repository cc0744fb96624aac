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
//! [`EventSink`](tackle_core::events::EventSink)), [`complete`] asks the model to
//! [`stream`](ChatModel::stream): each piece of the reply reaches the sink as a
//! [`ToolEventKind::Model`](tackle_core::events::ToolEventKind::Model) event of the model's call while the model writes, and the
//! call still returns the assembled reply. That reply is what a cassette records; a
//! replayed call re-emits it as events (its text as one delta, each tool call as one),
//! so a streamed run replays offline with the same events, only not spread in time. A
//! model that cannot stream sends its reply as deltas once it has it; a stream that
//! breaks before the reply ends is [`ModelError::StreamBroken`]. Nobody listening, a
//! model is not asked to stream.

// The module's files, one concept each: this file the wire types and the `ChatModel`
// trait; `door.rs` the completion effect and `complete`; `request_delta.rs` how a
// journaled run records a request (a delta against the last); `streaming.rs` deltas and
// their assembly; `test_models.rs` the models for tests; `schema_example.rs` the values
// `TestModel` makes from a schema.
mod door;
mod request_delta;
mod schema_example;
mod streaming;
mod test_models;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::content::ContentPart;
use tackle_core::error::ToolError;
use tackle_core::events::ModelDelta;

/// How the key of every model completion begins (`llm.<provider>.complete@<model>`,
/// see [`completion`]): what tells a model call from a tool call in a recording.
pub const COMPLETION_PREFIX: &str = "llm.";

pub(crate) use door::complete_growing;
pub use door::{complete, completion, Completion};
pub(crate) use request_delta::{expand_requests, Conversation};
pub use schema_example::example_of;
pub use streaming::{deltas_of, read_arguments, DeltaAssembler};
pub use test_models::{FunctionModel, ScriptedModel, TestModel};

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
    /// tool's image result (see [`tackle_core::content`]). Each client sends them in its
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

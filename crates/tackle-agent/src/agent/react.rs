//! The ReAct loop: think, act, observe, until the model answers (seed 004's
//! `ReactSkill`, with its `ReactState`, `ReactStep` and `ToolCallRecord`).
//!
//! A run of the loop ([`Agent::run`](crate::agent::Agent::run)) gives the model the
//! task and the tools; each step the model
//! either answers (a reply without tool calls that the run takes as an answer, see
//! [`TextAnswers`] and [`ReactSkill::with_answer_schema`]: the run is done) or asks for
//! tool calls,
//! which run as one batch of the [`Run`] (so in parallel where safe, and every call
//! through the door). Each result comes back to the model as an
//! observation. The run ends, checked in this order, when:
//!
//! 1. the model answered (`done`);
//! 2. the error budget is spent: every failed call (a tool error, invalid arguments, a
//!    denial, an unknown tool) costs one, default 3;
//! 3. `max_steps` steps were taken (default 10).
//!
//! A tool result that holds an image or a file ([`crate::content`]) reaches the model
//! as its text, naming each part, with the images and files as parts of the tool
//! message. When the run has an event sink, each step's model reply
//! streams into it as it is written (see [`crate::agent::model`]).
//!
//! Failures are observations, not errors of the run: the model reads what went wrong
//! and may try again. For invalid arguments there is one optional repair round through
//! a [`RepairHook`] before the failure counts.
//!
//! The skill is a definition: model, tools offered, prompt, limits, answer type. It
//! holds no runtime; each run of it is made on a [`Run`], which owns the run's
//! cassette, cancellation and events, so one skill serves many runs at once.
//!
//! Model calls go through the door as calls of the run ([`complete`]), as tool
//! calls do: the caller needs the model's permissions (`llm:<provider>` by default),
//! each call is audited, and a recorded run replays offline with a model that is never
//! called, step for step.
//!
//! A run calls only the tools it offers. A tool call names an offered tool by the name
//! the model was given (`bank_balance`), or by that tool's key (`bank.balance@1`),
//! `namespace.name` (`bank.balance`) or bare name, so a scripted model may use
//! either; any other name, even one that resolves in the registry and that the caller
//! may call, is a `NotFound` observation naming the run's closest tools ("did you
//! mean `bank.balance`?"), and nothing runs.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::model::Completion;
use crate::agent::model::{
    complete, completion, ChatModel, ChatRequest, ChatResponse, Message, ModelError, Pricing, Role,
    ToolCallRequest, ToolDefinition, UnreadableCall, Usage,
};
use crate::agent::providers::{drop_nulls, NameTaken, Provider, ProviderNames};
use crate::agent::search::{Embedder, ToolIndex};
use crate::call::Operation;
use crate::content::{split_output, ContentPart};
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::executor::ToolCall;
use crate::registry::{Registry, Tool};
use crate::run::Run;
use crate::spec::{ModelHint, PreferredModel};
use crate::validate::{SchemaValidator, ValidationIssue};

/// What a step observer ([`AgentRun::observe`](crate::agent::AgentRun::observe)) tells
/// the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepControl {
    /// Go on with the next step.
    Continue,
    /// Stop at this step boundary.
    Pause,
}

/// Where a run's effects go: its model calls and its tool calls.
///
/// A run made here ([`Agent::run`](crate::agent::Agent::run)) sends them through the
/// door as calls of its run,
/// in this process, with the caller's context. A run driven elsewhere implements this
/// trait: `tackle-temporal` makes each call an activity that a worker runs through its
/// own door, while the loop itself, which only decides, runs as a workflow. Given the
/// same outcomes, the loop takes the same steps: it keeps no clock, no randomness and
/// no state besides what it is given.
pub trait StepEffects {
    /// Asks a model for step `step`'s reply to `request`: the run's model when `model`
    /// is `None`, else the `model`-th model given with [`ReactSkill::with_model_for`]
    /// (see [`ReactSkill::ask_model`]).
    fn complete(
        &self,
        step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ModelError>>;

    /// Runs step `step`'s tool calls through the door, one outcome per call, in call
    /// order (see [`ReactSkill::run_calls`]).
    fn execute(
        &self,
        step: usize,
        calls: Vec<ToolCall>,
    ) -> impl Future<Output = Vec<Result<Value, ToolError>>>;

    /// Asks `skill`'s repair hook ([`ReactSkill::with_repair`]) for new arguments for
    /// `call`, which failed validation with `error` ([`ReactSkill::repair_arguments`]).
    /// Here, by default. An engine that replays the loop runs it as an effect, so
    /// that a hook that is not deterministic (a model, a clock) cannot change a
    /// replay: `tackle-temporal` makes it an activity.
    fn repair(
        &self,
        skill: &ReactSkill,
        call: &ToolCallRequest,
        error: &ToolError,
    ) -> impl Future<Output = Option<Value>> {
        std::future::ready(skill.repair_arguments(call, error))
    }

    /// Searches `skill`'s deferred tools for `tool_search`, its embedder tier
    /// included ([`ReactSkill::search_deferred`]): the keys found, best first. Here,
    /// by default; an engine that replays the loop runs it as an effect (an
    /// embedder may call a service).
    fn search(
        &self,
        skill: &ReactSkill,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Vec<String>> {
        std::future::ready(skill.search_deferred(query, k))
    }
}

/// The effects of a run in this process: calls of `run` through its runtime's door,
/// with the caller's context. Each serves one conversation of the loop.
pub(crate) struct LocalEffects<'a> {
    skill: &'a ReactSkill,
    run: &'a Run,
    /// The context of the run's tool calls: the caller's.
    ctx: &'a ToolContext,
    /// The context of the run's model calls (see [`model_context`]).
    model_ctx: Cow<'a, ToolContext>,
    conversation: crate::agent::model::Conversation,
}

impl<'a> LocalEffects<'a> {
    /// The effects of a run of `skill` on `run`, for the caller `ctx`.
    pub(crate) fn new(skill: &'a ReactSkill, run: &'a Run, ctx: &'a ToolContext) -> Self {
        LocalEffects {
            skill,
            run,
            ctx,
            model_ctx: model_context(skill, ctx),
            conversation: crate::agent::model::Conversation::new(),
        }
    }
}

/// The context a run's model calls are made with.
///
/// A program that runs its own agent chose its models: a caller outside any tool call
/// (the program's own code) needs no grant for them, so the models' permissions are
/// granted for the model calls alone (the tool calls keep the caller's grants, and no
/// tool sees these). Inside a tool call (a tool that runs an agent, on behalf of
/// whoever called it: an MCP client, another agent, a pipeline served as a tool) the
/// model calls need the grants as any call does: deny by default.
fn model_context<'a>(skill: &ReactSkill, ctx: &'a ToolContext) -> Cow<'a, ToolContext> {
    if ctx.call_id().is_some() {
        return Cow::Borrowed(ctx);
    }
    // The permissions each model's completion operation requires (made once, with the
    // skill): nothing to copy when the caller grants them already.
    let operations =
        std::iter::once(&skill.completion).chain(skill.preferred.iter().map(|(_, _, op)| op));
    let required = || {
        operations
            .clone()
            .flat_map(|op| op.spec().permissions.iter())
    };
    if required().all(|permission| ctx.capabilities().allows(permission)) {
        return Cow::Borrowed(ctx);
    }
    Cow::Owned(required().fold(ctx.clone(), |granted, permission| {
        granted.with_grant(permission.clone())
    }))
}

impl StepEffects for LocalEffects<'_> {
    fn complete(
        &self,
        _step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ModelError>> {
        // The loop only appends to its conversation between model calls.
        self.conversation.asking(request.messages.len());
        let (model, operation) = self.skill.model_at(model);
        crate::agent::model::complete_growing(
            self.run,
            operation,
            model,
            request,
            &self.model_ctx,
            Some(&self.conversation),
        )
    }

    fn execute(
        &self,
        _step: usize,
        calls: Vec<ToolCall>,
    ) -> impl Future<Output = Vec<Result<Value, ToolError>>> {
        self.skill.run_calls(self.run, calls, self.ctx)
    }
}

/// One tool call of a run and how it ended (seed 004's `ToolCallRecord`).
///
/// On the wire: `name`, `arguments`, `result`, `error`, as the seed has them, and
/// tackle's `call_id`, `step` and `error_kind` beside them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The fully-qualified tool id (`namespace.name@version`), or the name the model
    /// used when it names no tool of the run.
    pub name: String,
    /// The arguments (an object).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The result; `None` (`null`) when the call failed.
    #[serde(default)]
    pub result: Option<Value>,
    /// The error, as text, when the call failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The error's kind, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
    /// The model's id for the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The step it was made in, from 0.
    #[serde(default)]
    pub step: usize,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One entry of a run's trajectory (seed 004's `ReactStep`): what the model thought,
/// the tool call it made, and what the call gave back. A turn with several tool calls
/// gives one step per call (the thought on the first); the final answer is a step
/// with no tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReactStep {
    /// What the model said (its reasoning, or its final answer).
    pub thought: String,
    /// The tool call, if the step made one.
    #[serde(default)]
    pub tool_call: Option<ToolCallRecord>,
    /// What the call gave back, as the model reads it.
    #[serde(default)]
    pub observation: Option<String>,
}

/// The state of a ReAct run (seed 004's `ReactState`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReactState {
    /// The steps, in order (append-only).
    #[serde(default)]
    pub trajectory: Vec<ReactStep>,
    /// Every tool call made, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
    /// Whether the model answered.
    #[serde(default)]
    pub done: bool,
    /// Failed calls still allowed before the run stops (default 3).
    #[serde(default = "default_error_budget")]
    pub error_budget: u32,
    /// The model's answer, once done.
    #[serde(default)]
    pub final_answer: Option<String>,
    /// Steps taken so far.
    #[serde(default)]
    pub step_index: usize,
    /// Why the run stopped: `done` once answered, else why it stopped without an
    /// answer (`None` while it runs). Its `Display` says it in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// The tokens the run's model calls used, as their providers reported them
    /// (written only when some were reported).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The final answer as JSON, when the run requires one matching a schema
    /// ([`ReactSkill::with_answer_schema`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_value: Option<Value>,
    /// What those tokens cost, for the calls of models with a price
    /// ([`ReactSkill::with_pricing`]); `None` until a priced call reports its tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Decimal>,
}

fn default_error_budget() -> u32 {
    3
}

/// Why a ReAct run stopped ([`ReactState::stop_reason`]). On the wire, an object
/// tagged by `reason` (`{"reason": "step_limit", "max_steps": 10}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered.
    Done,
    /// An observer paused the run at a step boundary (a durable run's checkpoint).
    Paused {
        /// Steps taken before the pause.
        after_steps: usize,
    },
    /// A call of the last step waits for a decision (a durable run).
    AwaitingApproval,
    /// Calls in flight when a process died may or may not have happened: an operator
    /// resolves them (a durable run).
    UnknownOutcome,
    /// Failed calls spent the error budget.
    ErrorBudgetSpent,
    /// The model's replies were not answers (empty, the prompt said back, not the
    /// required JSON) more often than the run's repair turns allow.
    RepairTurnsSpent {
        /// The limit ([`ReactSkill::with_repair_turns`]).
        max_repair_turns: u32,
    },
    /// `max_steps` steps were taken without an answer.
    StepLimit {
        /// The limit.
        max_steps: usize,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Done => f.write_str("answered"),
            StopReason::Paused { after_steps } => write!(f, "paused after {after_steps} step(s)"),
            StopReason::AwaitingApproval => f.write_str("awaiting approval"),
            StopReason::UnknownOutcome => {
                f.write_str("calls of unknown outcome wait for an operator")
            }
            StopReason::ErrorBudgetSpent => f.write_str("the error budget is spent"),
            StopReason::RepairTurnsSpent { max_repair_turns } => {
                write!(f, "no answer after {max_repair_turns} repair turn(s)")
            }
            StopReason::StepLimit { max_steps } => write!(f, "no answer within {max_steps} steps"),
        }
    }
}

impl Default for ReactState {
    fn default() -> ReactState {
        ReactState {
            trajectory: Vec::new(),
            tool_calls: Vec::new(),
            done: false,
            error_budget: default_error_budget(),
            final_answer: None,
            step_index: 0,
            stop_reason: None,
            usage: Usage::default(),
            final_value: None,
            cost: None,
        }
    }
}

/// One turn of a conversation: the run's state and the messages the turn added (the
/// user's task, the model's turns, tool results, the answer).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Turn {
    /// The run's state.
    pub state: ReactState,
    /// The messages this turn added to the conversation.
    pub new_messages: Vec<Message>,
}

/// Where a ReAct loop stands at a step boundary: everything it needs to go on, in
/// this process or another ([`ReactSkill::run_from`]). A Temporal run continued as
/// new carries one into its next execution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReactCheckpoint {
    /// The task (the user's message that started the run).
    pub task: String,
    /// The run's state so far.
    pub state: ReactState,
    /// The conversation so far, the system prompt first.
    pub messages: Vec<Message>,
    /// The tools offered to the model now (deferred tools that `tool_search` found
    /// included), shared with the skill until the run finds one.
    pub tools: Arc<Vec<ToolDefinition>>,
    /// Which model the next step asks ([`ReactSkill::ask_model`]): `None` for the
    /// skill's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<usize>,
}

/// A run's answer ([`Agent::run`](crate::agent::Agent::run)): the value, the run's
/// state, and the messages the run added to its conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer<T> {
    /// The answer: the model's final text, or the typed answer the agent asks for.
    pub value: T,
    /// The run's state: its trajectory, tool calls, usage and cost.
    pub state: ReactState,
    /// The messages this run added to the conversation (the user's task, the model's
    /// turns, the tool results, the answer), to pass as
    /// [`history`](crate::agent::AgentRun::history) to the next turn.
    pub messages: Vec<Message>,
}

/// Gets a second chance at invalid arguments: given the call and the problems, new
/// arguments to try once, or `None`.
pub trait RepairHook: Send + Sync {
    /// New arguments for `call`, which failed validation with `error`.
    fn repair(&self, call: &ToolCallRequest, error: &ToolError) -> Option<Value>;
}

/// Why a run could not go on (as opposed to failed tool calls, which are observations).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model failed.
    #[error("the model failed at step {step}: {error}")]
    Model {
        /// The step, from 0.
        step: usize,
        /// What went wrong.
        error: ModelError,
    },
    /// A tool the skill was asked to offer does not resolve in the registry: no tool
    /// has that key (the error lists the closest keys: "did you mean ...?"), or a bare
    /// name names several.
    #[error("the skill cannot offer `{key}`: {error}")]
    UnknownTool {
        /// The key the skill was given.
        key: String,
        /// Why it does not resolve: [`ToolError::NotFound`] with the closest keys, or
        /// [`ToolError::Ambiguous`] with the keys it could mean.
        error: ToolError,
    },
    /// The schema a run's answer must match is not a valid JSON Schema.
    #[error("the answer schema is not valid: {0}")]
    InvalidAnswerSchema(String),
    /// The run ended without an answer (its error budget or step limit); its state
    /// says why ([`ReactState::stop_reason`]).
    #[error("the run ended without an answer: {}", state.stop_reason.as_ref().map_or_else(|| "no reason given".to_owned(), ToString::to_string))]
    NoAnswer {
        /// The run's state.
        state: Box<ReactState>,
    },
    /// An observer paused the run at a step boundary
    /// ([`AgentRun::observe`](crate::agent::AgentRun::observe)): not an answer yet.
    #[error("the run paused after {} step(s)", checkpoint.state.step_index)]
    Paused {
        /// Where the run stands, to go on from
        /// ([`AgentRun::from`](crate::agent::AgentRun::from)).
        checkpoint: Box<ReactCheckpoint>,
    },
    /// A run was given a checkpoint of another task to start from.
    #[error("the checkpoint is of the task {checkpoint:?}, not of this run's task {task:?}")]
    CheckpointTask {
        /// The run's task.
        task: String,
        /// The checkpoint's task.
        checkpoint: String,
    },
    /// The answer matched the schema but could not be read as the Rust type.
    #[error("the answer could not be read as `{type_name}`: {message}")]
    AnswerType {
        /// The type asked for.
        type_name: &'static str,
        /// Why.
        message: String,
        /// The run's state (its `final_value` holds the answer).
        state: Box<ReactState>,
    },
    /// Two tools offered to the model would have the same name.
    #[error("`{first}` and `{second}` would both be offered to the model as `{name}`")]
    NameCollision {
        /// The shared name.
        name: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
}

impl AgentError {
    /// The state of the run that ended this way, when it ran: a run without an answer
    /// ([`NoAnswer`](Self::NoAnswer)), with an answer of the wrong type
    /// ([`AnswerType`](Self::AnswerType)), or paused ([`Paused`](Self::Paused)).
    pub fn state(&self) -> Option<&ReactState> {
        match self {
            AgentError::NoAnswer { state } | AgentError::AnswerType { state, .. } => Some(state),
            AgentError::Paused { checkpoint } => Some(&checkpoint.state),
            _ => None,
        }
    }

    /// [`state`](Self::state), by value.
    pub fn into_state(self) -> Option<ReactState> {
        match self {
            AgentError::NoAnswer { state } | AgentError::AnswerType { state, .. } => Some(*state),
            AgentError::Paused { checkpoint } => Some(checkpoint.state),
            _ => None,
        }
    }
}

/// Adds `key` under its model name to `names`, refusing a name another key has.
fn offer(names: &mut ProviderNames, key: &str) -> Result<String, AgentError> {
    match names.insert(key) {
        Ok(name) => Ok(name.to_owned()),
        Err(NameTaken {
            name,
            first,
            second,
        }) => Err(AgentError::NameCollision {
            name,
            first,
            second,
        }),
    }
}

/// Seed 004's ReAct loop over some tools: the loop an [`Agent`](crate::agent::Agent)
/// runs. See the [module docs](self).
///
/// Programs define and run an [`Agent`](crate::agent::Agent); a `ReactSkill` is what
/// an agent makes for each run (its settings, offering the tools of the run's
/// registry), and what an engine that drives the loop step by step elsewhere holds
/// ([`checkpoint`](Self::checkpoint), [`run_from`](Self::run_from)).
///
/// ```
/// use std::sync::Arc;
/// use tackle::agent::model::ScriptedModel;
/// use tackle::agent::react::ReactSkill;
/// use tackle::{tool, Runtime};
///
/// /// Adds two integers.
/// #[tool(namespace = "math", side_effects = none)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::from_inventory()?;
/// let model = Arc::new(ScriptedModel::new([]));
/// let skill = ReactSkill::new(model, runtime.registry(), &[add::KEY])?.with_max_steps(4);
/// assert_eq!(skill.tools()[0].name, "math_add"); // the name the model is offered
/// let start = skill.checkpoint("What is 2 + 3?"); // where an engine starts the loop
/// assert_eq!((start.state.step_index, start.messages.len()), (0, 2));
/// # Ok(())
/// # }
/// ```
pub struct ReactSkill {
    model: Arc<dyn ChatModel>,
    completion: Operation<Completion>,
    /// The tools a run is offered at its start (`tool_search` among them when some
    /// are deferred): one copy, shared by every run.
    tools: Arc<Vec<ToolDefinition>>,
    /// The model name of every offered tool ([`model_name`]), both ways.
    names: ProviderNames,
    /// The `preferred_model` of offered tools that have one, by key.
    preferences: HashMap<String, PreferredModel>,
    /// Other names an offered tool answers to (its key, `namespace.name`, a bare
    /// name no other offered tool has), and its key.
    aliases: HashMap<String, String>,
    deferred: HashMap<String, ToolDefinition>,
    deferred_tools: Vec<Arc<Tool>>,
    deferred_index: Option<ToolIndex>,
    embedder: Option<Arc<dyn Embedder>>,
    /// Models for tools' `preferred_model`, with their completion operations.
    preferred: Vec<(PreferredModel, Arc<dyn ChatModel>, Operation<Completion>)>,
    system_prompt: String,
    /// The system prompt, [`normal`]ized (to spot a reply that says it back).
    system_normal: String,
    max_steps: usize,
    error_budget: u32,
    /// The most replies a run takes that are not answers (repair turns).
    repair_turns: u32,
    repair: Option<Arc<dyn RepairHook>>,
    /// Prices of models, by model name.
    pricing: HashMap<String, Pricing>,
    /// The schema a final answer must match, and its validator.
    answer_schema: Option<(Value, Arc<SchemaValidator>)>,
    /// The Rust type that schema was made from ([`ReactSkill::with_answer`]).
    answer_type: Option<TypeId>,
    /// Which replies without tool calls are answers (when there is no schema).
    text_answers: TextAnswers,
}

/// Which replies without tool calls a run takes as its answer, when it requires no
/// answer schema ([`ReactSkill::with_text_answers`]). A reply that is not an answer is a
/// repair turn: the model is told why. Repair turns do not spend the error budget
/// (only failed tool calls do); they have their own limit
/// ([`ReactSkill::with_repair_turns`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextAnswers {
    /// Any reply without tool calls.
    Any,
    /// A reply with something to say (the default): not empty, and not the task or
    /// the system prompt said back (a small model echoing its prompt).
    #[default]
    Substantive,
}

impl std::fmt::Debug for ReactSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactSkill")
            .field("model", &self.model.model())
            .field("tools", &self.names)
            .field("max_steps", &self.max_steps)
            .field("error_budget", &self.error_budget)
            .field("repair_turns", &self.repair_turns)
            .finish()
    }
}

/// Whether `text` says something: it is not empty, and not the task or the system
/// prompt said back; otherwise why not.
/// `text` in lower case, its words separated by one space.
fn normal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Whether `text` says something: it is not empty, and not the task or the system
/// prompt (given [`normal`]ized) said back; otherwise why not.
fn substantive(text: &str, task: &str, system: &str) -> Result<(), String> {
    let reply = normal(text);
    if reply.is_empty() {
        return Err("the reply is empty".to_owned());
    }
    // The task itself, or (for a task long enough not to be a word of an answer) the
    // task with a few characters around it. A reply much longer than the task is
    // neither (lower case may lengthen a text, never past twice its bytes).
    if reply.len() <= 2 * task.len() + 10 {
        let task = normal(task);
        if reply == task
            || (task.len() >= 20 && reply.contains(&task) && reply.len() <= task.len() + 10)
        {
            return Err("the reply repeats the task".to_owned());
        }
    }
    if system.len() >= 20 && reply.len() >= system.len() && reply.contains(system) {
        return Err("the reply repeats the instructions".to_owned());
    }
    Ok(())
}

/// The value of a final answer `text` that must match `validator`'s schema: the text,
/// or a fenced `json` block in it, parsed and validated; otherwise what is wrong.
fn answer_value(text: &str, schema: &Value, validator: &SchemaValidator) -> Result<Value, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    let mut value: Value = serde_json::from_str(body.trim())
        .map_err(|e| format!("the reply is not a JSON document ({e})"))?;
    // A provider's strict form sends null for an optional field left out.
    drop_nulls(&mut value, schema);
    let result = validator.validate(&value);
    if result.valid {
        Ok(value)
    } else {
        Err(format!(
            "the reply does not match the required schema: {}",
            result.errors.join("; ")
        ))
    }
}

/// The name a model sees for a tool key: letters, digits, `_` and `-` only (the
/// strictest providers' rule), `namespace_name`: [`Provider::name_for`] of the
/// chat providers, as the skill's [`ProviderNames`] gives it.
pub fn model_name(key: &str) -> String {
    Provider::OpenAi.name_for(key)
}

impl ReactSkill {
    /// The most steps a run takes unless told otherwise: 10.
    pub const DEFAULT_MAX_STEPS: usize = 10;

    /// The failed calls a run tolerates unless told otherwise: 3.
    pub const DEFAULT_ERROR_BUDGET: u32 = 3;

    /// The replies that are not answers (empty, the prompt said back, not the
    /// required JSON) a run takes unless told otherwise: 3. Each is a repair turn;
    /// one more ends the run ([`StopReason::RepairTurnsSpent`]).
    pub const DEFAULT_REPAIR_TURNS: u32 = 3;

    /// A skill that lets `model` use the tools `keys` (each must resolve in
    /// `registry`), with default limits. Tools whose spec sets `defer_loading` are
    /// deferred (see [`with_deferred`](Self::with_deferred)). The skill keeps the
    /// tools' definitions, not the registry: it runs on any [`Run`] whose runtime has
    /// those tools.
    pub fn new(
        model: Arc<dyn ChatModel>,
        registry: &Registry,
        keys: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        ReactSkill::bare(model).offering(registry, keys, &[])
    }

    /// A skill of `model` that offers no tool yet, with default limits.
    pub(crate) fn bare(model: Arc<dyn ChatModel>) -> ReactSkill {
        ReactSkill {
            completion: completion(model.as_ref()),
            model,
            tools: Arc::new(Vec::new()),
            names: ProviderNames::empty(Provider::OpenAi),
            aliases: HashMap::new(),
            preferences: HashMap::new(),
            deferred: HashMap::new(),
            deferred_tools: Vec::new(),
            deferred_index: None,
            embedder: None,
            preferred: Vec::new(),
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            system_normal: normal(DEFAULT_SYSTEM_PROMPT),
            max_steps: ReactSkill::DEFAULT_MAX_STEPS,
            error_budget: ReactSkill::DEFAULT_ERROR_BUDGET,
            repair_turns: ReactSkill::DEFAULT_REPAIR_TURNS,
            repair: None,
            pricing: HashMap::new(),
            answer_schema: None,
            answer_type: None,
            text_answers: TextAnswers::default(),
        }
    }

    /// This skill's settings (model, prompt, limits, answer, hooks), offering no tool.
    pub(crate) fn clone_settings(&self) -> ReactSkill {
        ReactSkill {
            completion: completion(self.model.as_ref()),
            model: Arc::clone(&self.model),
            tools: Arc::new(Vec::new()),
            names: ProviderNames::empty(Provider::OpenAi),
            aliases: HashMap::new(),
            preferences: HashMap::new(),
            deferred: HashMap::new(),
            deferred_tools: Vec::new(),
            deferred_index: None,
            embedder: self.embedder.clone(),
            preferred: self
                .preferred
                .iter()
                .map(|(p, model, _)| (p.clone(), Arc::clone(model), completion(model.as_ref())))
                .collect(),
            system_prompt: self.system_prompt.clone(),
            system_normal: self.system_normal.clone(),
            max_steps: self.max_steps,
            error_budget: self.error_budget,
            repair_turns: self.repair_turns,
            repair: self.repair.clone(),
            pricing: self.pricing.clone(),
            answer_schema: self.answer_schema.clone(),
            answer_type: self.answer_type,
            text_answers: self.text_answers,
        }
    }

    /// This skill's settings (model, prompt, limits, answer, hooks) offering the tools
    /// `keys` of `registry`, and the tools `deferred` behind `tool_search`, in place of
    /// the tools it offers. An [`Agent`](crate::agent::Agent) makes its skill this
    /// way for each run, from the run's registry.
    pub(crate) fn offering(
        &self,
        registry: &Registry,
        keys: &[&str],
        deferred: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        let mut skill = self.clone_settings();
        let mut late: Vec<&str> = Vec::new();
        let tools = Arc::make_mut(&mut skill.tools);
        tools.reserve(keys.len());
        for key in keys {
            let tool = registry
                .resolve(key)
                .map_err(|error| AgentError::UnknownTool {
                    key: (*key).to_owned(),
                    error,
                })?;
            if let Some(preferred) = &tool.spec().preferred_model {
                skill
                    .preferences
                    .insert(tool.key().to_owned(), preferred.clone());
            }
            if tool.spec().defer_loading {
                late.push(tool.key());
                continue;
            }
            let name = offer(&mut skill.names, tool.key())?;
            tools.push(ToolDefinition {
                name,
                description: tool.spec().description.clone(),
                parameters: tool.spec().input_schema.clone(),
            });
        }
        late.extend_from_slice(deferred);
        if late.is_empty() {
            return Ok(skill.with_aliases());
        }
        skill.with_deferred(registry, &late)
    }

    /// Fills the other names offered tools answer to from their keys.
    fn with_aliases(mut self) -> ReactSkill {
        let mut aliases: HashMap<String, String> = HashMap::new();
        for (key, _) in self.names.iter() {
            let path = key.split_once('@').map_or(key, |(p, _)| p);
            aliases.insert(key.to_owned(), key.to_owned());
            aliases.insert(path.to_owned(), key.to_owned());
        }
        for (bare, key) in self.names.unique_bare_names() {
            aliases.entry(bare).or_insert_with(|| key.to_owned());
        }
        self.aliases = aliases;
        self
    }

    /// Gives `tool_search` an embedder: its first tier ranks the deferred tools by
    /// the cosine similarity of their text to the query, before BM25 and name match
    /// (see [`ToolIndex`]).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> ReactSkill {
        self.embedder = Some(embedder);
        if self.deferred_index.is_some() {
            self.deferred_index = Some(ToolIndex::over(
                self.deferred_tools.iter().map(|t| &**t),
                self.embedder.clone(),
            ));
        }
        self
    }

    /// Requires the final answer to be a JSON document matching `schema` (a skill's
    /// state schema, say). Each request carries it as
    /// [`ChatRequest::response_schema`]: a model that [enforces
    /// it](ChatModel::structured_output) gets it natively, others in the system prompt.
    /// A reply without tool calls is the answer only when it parses and validates (a
    /// fenced `json` block is accepted); otherwise the model is told what was wrong and
    /// asked again (a repair turn, which does not spend the error budget: at most
    /// [`with_repair_turns`](Self::with_repair_turns) of them). The answer's value is
    /// [`ReactState::final_value`].
    ///
    /// Without an answer schema, a reply without tool calls is the answer as the
    /// [`TextAnswers`] policy says (by default, one that says something).
    pub fn with_answer_schema(mut self, schema: Value) -> Result<ReactSkill, AgentError> {
        let validator =
            SchemaValidator::compile(&schema).map_err(AgentError::InvalidAnswerSchema)?;
        self.answer_schema = Some((schema, Arc::new(validator)));
        self.answer_type = None;
        Ok(self)
    }

    /// Sets which replies without tool calls are answers when the run has no answer
    /// schema (default [`TextAnswers::Substantive`]).
    pub fn with_text_answers(mut self, policy: TextAnswers) -> ReactSkill {
        self.text_answers = policy;
        self
    }

    /// Prices the calls of the model named `model` at `pricing`: a run's
    /// [`ReactState::cost`] sums the cost of the tokens its priced calls used.
    pub fn with_pricing(mut self, model: impl Into<String>, pricing: Pricing) -> ReactSkill {
        self.pricing.insert(model.into(), pricing);
        self
    }

    /// The model to use for a tool's `preferred_model` (a tier such as `smart`, or a
    /// model's name). After a step whose tools prefer a model, the next step asks that
    /// model: a named model wins over a tier, a smarter tier over a faster one, and a
    /// preference with no model given here is ignored. Other steps ask the run's model.
    pub fn with_model_for(
        mut self,
        preferred: PreferredModel,
        model: Arc<dyn ChatModel>,
    ) -> ReactSkill {
        let operation = completion(model.as_ref());
        self.preferred.retain(|(p, _, _)| *p != preferred);
        self.preferred.push((preferred, model, operation));
        self
    }

    /// The model the tools called in a step prefer for the next one, if one was given.
    fn preferred_after(&self, calls: &[ToolCallRequest]) -> Option<usize> {
        if self.preferred.is_empty() {
            return None;
        }
        let wanted: Vec<PreferredModel> = calls
            .iter()
            .filter_map(|c| self.names.key_of(&c.name))
            .filter_map(|key| self.preferences.get(key).cloned())
            .collect();
        let index_of = |p: &PreferredModel| self.preferred.iter().position(|(q, _, _)| q == p);
        let named = wanted
            .iter()
            .filter(|p| matches!(p, PreferredModel::Model(_)))
            .find_map(index_of);
        named.or_else(|| {
            [ModelHint::Smart, ModelHint::Balanced, ModelHint::Fast]
                .into_iter()
                .map(PreferredModel::Hint)
                .filter(|tier| wanted.contains(tier))
                .find_map(|tier| index_of(&tier))
        })
    }

    /// Replaces the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> ReactSkill {
        self.system_prompt = prompt.into();
        self.system_normal = normal(&self.system_prompt);
        self
    }

    /// Sets the most steps a run may take (default 10).
    pub fn with_max_steps(mut self, steps: usize) -> ReactSkill {
        self.max_steps = steps;
        self
    }

    /// Sets how many failed calls a run tolerates (default 3). Only failed tool
    /// calls spend it (seed 004); replies that are not answers have their own limit,
    /// [`with_repair_turns`](Self::with_repair_turns).
    pub fn with_error_budget(mut self, budget: u32) -> ReactSkill {
        self.error_budget = budget;
        self
    }

    /// Sets how many replies that are not answers a run takes, each a repair turn
    /// telling the model what is wrong (default 3); the next ends the run, not
    /// done, with [`StopReason::RepairTurnsSpent`].
    pub fn with_repair_turns(mut self, turns: u32) -> ReactSkill {
        self.repair_turns = turns;
        self
    }

    /// Gives invalid arguments one repair round through `hook`.
    pub fn with_repair(mut self, hook: impl RepairHook + 'static) -> ReactSkill {
        self.repair = Some(Arc::new(hook));
        self
    }

    /// Adds tools that are not offered at first: the model gets a `tool_search` tool
    /// instead, and each tool it finds is offered from the next step on. For large
    /// toolsets, where offering everything would drown the model.
    pub fn with_deferred(
        mut self,
        registry: &Registry,
        keys: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        for key in keys {
            let tool = registry
                .resolve(key)
                .map_err(|error| AgentError::UnknownTool {
                    key: (*key).to_owned(),
                    error,
                })?;
            if let Some(preferred) = &tool.spec().preferred_model {
                self.preferences
                    .insert(tool.key().to_owned(), preferred.clone());
            }
            let name = offer(&mut self.names, tool.key())?;
            self.deferred.insert(
                tool.key().to_owned(),
                ToolDefinition {
                    name,
                    description: tool.spec().description.clone(),
                    parameters: tool.spec().input_schema.clone(),
                },
            );
            if !self.deferred_tools.iter().any(|t| t.key() == tool.key()) {
                self.deferred_tools.push(Arc::clone(tool));
            }
        }
        self.deferred_index = Some(ToolIndex::over(
            self.deferred_tools.iter().map(|t| &**t),
            self.embedder.clone(),
        ));
        let search = search_definition();
        if !self.tools.iter().any(|t| t.name == search.name) {
            Arc::make_mut(&mut self.tools).push(search);
        }
        Ok(self.with_aliases())
    }

    /// The tool definitions the model is offered at the start of a run (with
    /// `tool_search` when some tools are deferred).
    pub fn tools(&self) -> Arc<Vec<ToolDefinition>> {
        Arc::clone(&self.tools)
    }

    /// Requires the answer to be a `T`: its schema ([`crate::schema::answer_schema`])
    /// becomes the skill's answer schema (see
    /// [`with_answer_schema`](Self::with_answer_schema)), and a run
    /// reads the answer as a `T`.
    pub fn with_answer<T: JsonSchema + 'static>(self) -> Result<ReactSkill, AgentError> {
        let mut skill = self.with_answer_schema(crate::schema::answer_schema::<T>())?;
        skill.answer_type = Some(TypeId::of::<T>());
        Ok(skill)
    }

    /// Runs the loop on `task`, showing `observe` the state at each step boundary
    /// (after a step's observations, before the next model call); when it answers
    /// [`StepControl::Pause`], the run stops there, not done, with `stop_reason` saying
    /// so. A durable run checkpoints its state this way (see [`crate::durable`]).
    pub(crate) async fn run_observed(
        &self,
        run: &Run,
        task: &str,
        ctx: &ToolContext,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactState, AgentError> {
        let effects = LocalEffects::new(self, run, ctx);
        let turn = self
            .converse(&[], task, self.answer_schema.as_ref(), &effects, observe)
            .await?;
        Ok(turn.state)
    }

    /// Asks a model through the door as a call of `run`: the skill's model when
    /// `model` is `None`, else the `model`-th model given with
    /// [`with_model_for`](Self::with_model_for) (`None` past the last). The effect of
    /// a run's model call ([`StepEffects::complete`]). Outside a tool call the skill's
    /// models need no grant from `ctx` (the program chose them); inside one they do
    /// (see `docs/security.md`).
    pub async fn ask_model(
        &self,
        run: &Run,
        model: Option<usize>,
        request: &ChatRequest,
        ctx: &ToolContext,
    ) -> Result<ChatResponse, ModelError> {
        let (model, operation) = self.model_at(model);
        complete(run, operation, model, request, &model_context(self, ctx)).await
    }

    /// Runs tool calls as one batch of `run` (in parallel where safe, every call
    /// through the door), one outcome per call, in call order. The effect of a run's
    /// tool calls ([`StepEffects::execute`]).
    pub async fn run_calls(
        &self,
        run: &Run,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<Result<Value, ToolError>> {
        run.execute_results(calls, ctx).await
    }

    /// The model `model` names (see [`ask_model`](Self::ask_model)), with its
    /// completion operation.
    fn model_at(&self, model: Option<usize>) -> (&dyn ChatModel, &Operation<Completion>) {
        match model.and_then(|i| self.preferred.get(i)) {
            Some((_, model, operation)) => (model.as_ref(), operation),
            None => (self.model.as_ref(), &self.completion),
        }
    }

    /// The loop over a conversation: `history` (earlier turns, without the system
    /// prompt), then `task` as the user's message. Returns the state and the new
    /// messages (the task, the model's turns, the tool results, the answer).
    async fn converse<E: StepEffects>(
        &self,
        history: &[Message],
        task: &str,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<Turn, AgentError> {
        let start = self.begin(history, task, answer_schema);
        let first_new = start.messages.len() - 1;
        let mut at = self.go_on(start, answer_schema, effects, observe).await?;
        let new_messages = at.messages.split_off(first_new.min(at.messages.len()));
        Ok(Turn {
            state: at.state,
            new_messages,
        })
    }

    /// Where a run on `task` after the messages `history` starts (see
    /// [`checkpoint`](Self::checkpoint)), with this skill's answer schema.
    pub(crate) fn start(&self, history: &[Message], task: &str) -> ReactCheckpoint {
        self.begin(history, task, self.answer_schema.as_ref())
    }

    /// Where a run on `task` starts: no step taken, the system prompt and the task
    /// as the conversation, the skill's tools offered. [`run_from`](Self::run_from)
    /// runs from it.
    pub fn checkpoint(&self, task: &str) -> ReactCheckpoint {
        self.begin(&[], task, self.answer_schema.as_ref())
    }

    /// Runs the loop from `checkpoint` (a start from [`checkpoint`](Self::checkpoint),
    /// or where an earlier run paused), its model and tool calls going to `effects`,
    /// showing `observe` each step boundary as
    /// [`AgentRun::observe`](crate::agent::AgentRun::observe)
    /// does. Returns where the run stands when it stops: ended (its state's
    /// `stop_reason` says why), or paused by `observe`, to go on from later, in this
    /// process or another. Runs of the skill's answer schema, if it has one.
    pub async fn run_from<E: StepEffects>(
        &self,
        checkpoint: ReactCheckpoint,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactCheckpoint, AgentError> {
        self.go_on(checkpoint, self.answer_schema.as_ref(), effects, observe)
            .await
    }

    /// The start of a run: `history` (earlier turns, without the system prompt),
    /// then `task` as the user's message.
    fn begin(
        &self,
        history: &[Message],
        task: &str,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
    ) -> ReactCheckpoint {
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(Message::system(&self.system_prompt));
        messages.extend(history.iter().filter(|m| m.role != Role::System).cloned());
        messages.push(Message::user(task));
        if let Some((schema, _)) = answer_schema {
            if !self.model.structured_output() {
                // This model does not enforce the schema: it reads it.
                messages[0].content.push_str(&format!(
                    "\n\nWhen you answer (without calling a tool), answer with one JSON \
                     document matching this JSON Schema, and nothing else:\n{schema}"
                ));
            }
        }
        ReactCheckpoint {
            task: task.to_owned(),
            state: ReactState {
                error_budget: self.error_budget,
                ..ReactState::default()
            },
            messages,
            tools: self.tools(),
            model: None,
        }
    }

    /// The loop, from `at` until it ends or `observe` pauses it.
    async fn go_on<E: StepEffects>(
        &self,
        at: ReactCheckpoint,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactCheckpoint, AgentError> {
        let ReactCheckpoint {
            task,
            mut state,
            messages,
            tools,
            model: mut preferred,
        } = at;
        let task = task.as_str();
        if matches!(state.stop_reason, Some(StopReason::Paused { .. })) {
            state.stop_reason = None;
        }
        let first_step = state.step_index;
        // The conversation and the offered tools grow in place, step by step.
        let mut request = ChatRequest {
            messages,
            tools,
            response_schema: answer_schema.map(|(schema, _)| schema.clone()),
        };
        while !state.done && state.error_budget > 0 && state.step_index < self.max_steps {
            let step = state.step_index;
            if step > first_step && observe(&state) == StepControl::Pause {
                state.stop_reason = Some(StopReason::Paused { after_steps: step });
                break;
            }
            let (model, _) = self.model_at(preferred);
            // Boxed, as the tool calls below: a run's future holds the loop's own
            // state, and each step's call only while it runs, so many runs at once
            // (each waiting on its model) stay small.
            let response = Box::pin(effects.complete(step, preferred, &request))
                .await
                .map_err(|error| AgentError::Model { step, error })?;
            if let Some(usage) = response.usage {
                state.usage += usage;
                if let Some(price) = self.pricing.get(model.model()) {
                    let cost = state.cost.get_or_insert(Decimal::ZERO);
                    *cost += price.cost(usage);
                }
            }
            preferred = self.preferred_after(&response.tool_calls);
            state.step_index += 1;
            if response.tool_calls.is_empty() {
                let checked = match answer_schema {
                    Some((schema, validator)) => answer_value(&response.text, schema, validator)
                        .map(Some)
                        .map_err(|problem| {
                            format!(
                                "{problem}. Answer again with one JSON document matching the \
                                 required schema, or call a tool."
                            )
                        }),
                    None if self.text_answers == TextAnswers::Substantive => {
                        substantive(&response.text, task, &self.system_normal)
                            .map(|()| None)
                            .map_err(|problem| {
                                format!("{problem}. Answer the task, or call a tool.")
                            })
                    }
                    None => Ok(None),
                };
                match checked {
                    Err(problem) => {
                        // Not an answer: a repair turn, while they last (the error
                        // budget is for failed tool calls).
                        let observation = format!("not an answer: {problem}");
                        let repairs = state
                            .trajectory
                            .iter()
                            .filter(|s| s.tool_call.is_none() && s.observation.is_some())
                            .count();
                        if repairs >= self.repair_turns as usize {
                            state.trajectory.push(ReactStep {
                                thought: response.text.clone(),
                                tool_call: None,
                                observation: Some(observation),
                            });
                            request
                                .messages
                                .push(Message::assistant(response.text, Vec::new()));
                            state.stop_reason = Some(StopReason::RepairTurnsSpent {
                                max_repair_turns: self.repair_turns,
                            });
                            break;
                        }
                        state.trajectory.push(ReactStep {
                            thought: response.text.clone(),
                            tool_call: None,
                            observation: Some(observation.clone()),
                        });
                        request
                            .messages
                            .push(Message::assistant(response.text, Vec::new()));
                        request.messages.push(Message::user(observation));
                        continue;
                    }
                    Ok(Some(value)) => state.final_value = Some(value),
                    Ok(None) => {}
                }
                state.trajectory.push(ReactStep {
                    thought: response.text.clone(),
                    tool_call: None,
                    observation: None,
                });
                request
                    .messages
                    .push(Message::assistant(response.text.clone(), Vec::new()));
                state.final_answer = Some(response.text);
                state.done = true;
                state.stop_reason = Some(StopReason::Done);
                break;
            }
            let observations = Box::pin(self.act(
                step,
                &response.text,
                (&response.tool_calls, &response.unreadable),
                effects,
                &mut state,
                &mut request.tools,
            ))
            .await;
            let results: Vec<Message> = response
                .tool_calls
                .iter()
                .zip(observations)
                .map(|(call, (content, parts))| Message::tool(&call.id, content).with_parts(parts))
                .collect();
            request
                .messages
                .push(Message::assistant(response.text, response.tool_calls));
            request.messages.extend(results);
        }
        if !state.done && state.stop_reason.is_none() {
            state.stop_reason = Some(if state.error_budget == 0 {
                StopReason::ErrorBudgetSpent
            } else {
                StopReason::StepLimit {
                    max_steps: self.max_steps,
                }
            });
        }
        Ok(ReactCheckpoint {
            task: task.to_owned(),
            state,
            messages: request.messages,
            tools: request.tools,
            model: preferred,
        })
    }

    /// Runs one turn's tool calls (the registry's as one batch; `tool_search`
    /// here); returns each call's observation text, and the images and files of its
    /// result, in call order. A call whose
    /// arguments could not be read runs nothing: its observation says why, so the model
    /// can send it again.
    async fn act<E: StepEffects>(
        &self,
        step: usize,
        thought: &str,
        (calls, unreadable): (&[ToolCallRequest], &[UnreadableCall]),
        effects: &E,
        state: &mut ReactState,
        offered: &mut Arc<Vec<ToolDefinition>>,
    ) -> Vec<(String, Vec<ContentPart>)> {
        let mut outcomes: Vec<Option<Result<Value, ToolError>>> = vec![None; calls.len()];
        let mut keys = Vec::with_capacity(calls.len());
        let mut batch = Vec::new();
        for (i, c) in calls.iter().enumerate() {
            let offered_key = self.offered_key(&c.name);
            let key = offered_key.clone().unwrap_or_else(|| c.name.clone());
            if let Some(bad) = unreadable.iter().find(|u| u.index == i) {
                outcomes[i] = Some(Err(ToolError::InvalidInput {
                    key: key.clone(),
                    errors: vec![ValidationIssue::new(
                        "",
                        format!(
                            "{}; send the call again with complete JSON arguments",
                            bad.error
                        ),
                    )],
                }));
            } else if c.name == SEARCH_TOOL && self.deferred_index.is_some() {
                let (query, k) = search_arguments(&c.arguments);
                let found = effects.search(self, query, k).await;
                outcomes[i] = Some(Ok(self.offer_found(found, offered)));
            } else if offered_key.is_none() {
                // Not a tool of this run: whatever it names in the registry, it is not
                // the model's to call.
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: self.closest_offered(&c.name),
                    registry_empty: false,
                }));
            } else if self.deferred.contains_key(&key)
                && !offered
                    .iter()
                    .any(|t| self.names.key_of(&t.name) == Some(key.as_str()))
            {
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: vec![format!("find it first with `{SEARCH_TOOL}`")],
                    registry_empty: false,
                }));
            } else {
                batch.push((
                    i,
                    ToolCall::new(c.id.clone(), key.clone(), c.arguments.clone()),
                ));
            }
            keys.push(key);
        }
        let (indices, to_run): (Vec<usize>, Vec<ToolCall>) = batch.into_iter().unzip();
        let ran = effects.execute(step, to_run).await;
        // Arguments that a repair round replaced, by call.
        // (Empty unless a repair round ran: most turns have none.)
        let mut repaired: Vec<Option<Value>> = Vec::new();
        for (i, mut result) in indices.into_iter().zip(ran) {
            if let (Err(e), true) = (&result, self.repair.is_some()) {
                if e.kind() == ToolErrorKind::InvalidInput {
                    if let Some(fixed) = effects.repair(self, &calls[i], e).await {
                        let retry =
                            ToolCall::new(calls[i].id.clone(), keys[i].clone(), fixed.clone());
                        result = effects
                            .execute(step, vec![retry])
                            .await
                            .pop()
                            .unwrap_or_else(|| {
                                Err(ToolError::Aborted {
                                    key: keys[i].clone(),
                                    grace_ms: 0,
                                })
                            });
                        repaired.resize(calls.len(), None);
                        repaired[i] = Some(fixed);
                    }
                }
            }
            outcomes[i] = Some(result);
        }
        let mut texts = Vec::with_capacity(calls.len());
        for (i, c) in calls.iter().enumerate() {
            let result = outcomes[i].take().unwrap_or_else(|| {
                Err(ToolError::Aborted {
                    key: keys[i].clone(),
                    grace_ms: 0,
                })
            });
            let arguments = repaired
                .get_mut(i)
                .and_then(Option::take)
                .unwrap_or_else(|| c.arguments.clone());
            let (content, parts) = match &result {
                Ok(Value::String(s)) => (s.clone(), Vec::new()),
                // An image or a file goes beside the text, which names it.
                Ok(value) => split_output(value).unwrap_or_else(|| (value.to_string(), Vec::new())),
                Err(e) => (e.to_string(), Vec::new()),
            };
            if result.is_err() {
                state.error_budget = state.error_budget.saturating_sub(1);
            }
            let record = ToolCallRecord {
                name: std::mem::take(&mut keys[i]),
                arguments,
                error: result.as_ref().err().map(ToString::to_string),
                error_kind: result.as_ref().err().map(ToolError::kind),
                result: result.ok(),
                call_id: Some(c.id.clone()),
                step,
            };
            state.trajectory.push(ReactStep {
                // The turn's thought goes with its first call.
                thought: if i == 0 {
                    thought.to_owned()
                } else {
                    String::new()
                },
                tool_call: Some(record.clone()),
                observation: Some(content.clone()),
            });
            state.tool_calls.push(record);
            texts.push((content, parts));
        }
        texts
    }

    /// The key of the run's tool that `name` calls: the name the model was given, or
    /// the tool's key, `namespace.name` or bare name. `None` for anything else.
    fn offered_key(&self, name: &str) -> Option<String> {
        self.names
            .key_of(name)
            .or_else(|| self.aliases.get(name).map(String::as_str))
            .map(str::to_owned)
    }

    /// Up to three of the run's tools close to `name`, closest first, one per tool:
    /// each as the form of its names (the name the model was offered, its key,
    /// `namespace.name` or bare name) closest to `name`, so `bank.balnce` is told
    /// `bank.balance` and `bank_balnce` is told `bank_balance`.
    fn closest_offered(&self, name: &str) -> Vec<String> {
        if name.len() > crate::registry::query::SUGGEST_MAX_LEN {
            return Vec::new();
        }
        let mut best: HashMap<&str, (f64, &str)> = HashMap::new();
        let offered = self.names.iter().map(|(key, name)| (name, key));
        let aliases = self.aliases.iter().map(|(a, k)| (a.as_str(), k.as_str()));
        for (candidate, key) in offered.chain(aliases) {
            let score = strsim::normalized_damerau_levenshtein(name, candidate);
            let entry = best.entry(key).or_insert((score, candidate));
            if score > entry.0 || (score == entry.0 && candidate < entry.1) {
                *entry = (score, candidate);
            }
        }
        let mut scored: Vec<(f64, &str)> = best
            .into_values()
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(3)
            .map(|(_, n)| n.to_owned())
            .collect()
    }

    /// New arguments for `call`, which failed validation with `error`, from the
    /// skill's repair hook (`None` without one, or when it has none to give): what
    /// [`StepEffects::repair`] runs.
    pub fn repair_arguments(&self, call: &ToolCallRequest, error: &ToolError) -> Option<Value> {
        self.repair
            .as_ref()
            .and_then(|hook| hook.repair(call, error))
    }

    /// The keys of the deferred tools that `tool_search` finds for `query`, best
    /// first, at most `k`: what [`StepEffects::search`] runs.
    pub fn search_deferred(&self, query: &str, k: usize) -> Vec<String> {
        self.deferred_index
            .as_ref()
            .map(|index| index.search(query, k))
            .unwrap_or_default()
            .into_iter()
            .map(|hit| hit.key)
            .collect()
    }

    /// Offers the deferred tools `found` (keys) and says what they are.
    fn offer_found(&self, found: Vec<String>, offered: &mut Arc<Vec<ToolDefinition>>) -> Value {
        let mut listed = Vec::with_capacity(found.len());
        for key in found {
            if let Some(definition) = self.deferred.get(&key) {
                if !offered.iter().any(|t| t.name == definition.name) {
                    // The run's own list from here on: the skill's is not changed.
                    Arc::make_mut(offered).push(definition.clone());
                }
                listed.push(serde_json::json!({
                    "name": definition.name,
                    "description": definition.description,
                }));
            }
        }
        Value::Array(listed)
    }
}

/// The query and the number of results of a `tool_search` call (5 unless it asks for
/// 1 to 20).
fn search_arguments(arguments: &Value) -> (&str, usize) {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let k = arguments
        .get("k")
        .and_then(Value::as_u64)
        .map_or(5, |k| k.clamp(1, 20) as usize);
    (query, k)
}

/// The system prompt of a skill that sets none.
const DEFAULT_SYSTEM_PROMPT: &str = "You solve the task step by step. Call tools when they help; answer in plain text when you are done.";

/// The name of the search tool offered when some tools are deferred.
pub const SEARCH_TOOL: &str = "tool_search";

fn search_definition() -> ToolDefinition {
    ToolDefinition {
        name: SEARCH_TOOL.to_owned(),
        description: "Find more tools by describing what you need; the tools found can be called from the next step on.".to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do."},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "How many tools at most (default 5)."}
            },
            "required": ["query"]
        }),
    }
}

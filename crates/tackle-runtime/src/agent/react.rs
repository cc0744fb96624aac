//! The ReAct loop: think, act, observe, until the model answers (seed 004's
//! `ReactSkill`, with its `ReactState`, `ReactStep` and `ToolCallRecord`).
//!
//! [`ReactSkill::run`] gives the model the task and the tools; each step the model
//! either answers (a reply without tool calls that the run takes as an answer, see
//! [`TextAnswers`] and [`ReactSkill::with_answer_schema`]: the run is done) or asks for
//! tool calls,
//! which run as one batch through the [`Executor`] (so in parallel where safe, and
//! every call through the door). Each result comes back to the model as an
//! observation. The run ends, checked in this order, when:
//!
//! 1. the model answered (`done`);
//! 2. the error budget is spent: every failed call (a tool error, invalid arguments, a
//!    denial, an unknown tool) costs one, default 3;
//! 3. `max_steps` steps were taken (default 10).
//!
//! A tool result that holds an image or a file ([`crate::content`]) reaches the model
//! as its text, naming each part, with the images and files as parts of the tool
//! message. When the caller's context has an event sink, each step's model reply
//! streams into it as it is written (see [`crate::agent::model`]).
//!
//! Failures are observations, not errors of the run: the model reads what went wrong
//! and may try again. For invalid arguments there is one optional repair round through
//! a [`RepairHook`] before the failure counts.
//!
//! Model calls go through the door of the executor's runtime ([`complete`]), as tool
//! calls do: the caller needs the model's permissions (`llm:<provider>` by default),
//! each call is audited, and a recorded run replays offline with a model that is never
//! called, step for step.
//!
//! A run calls only the tools it offers. A tool call names an offered tool by the name
//! the model was given (or by that tool's key, `namespace.name` or bare name); any
//! other name, even one that resolves in the registry and that the caller may call, is
//! a `NotFound` observation, and nothing runs.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::model::{
    complete, completion, ChatModel, ChatRequest, ChatResponse, Message, ModelError, Pricing,
    ToolCallRequest, ToolDefinition, UnreadableCall, Usage,
};
use crate::agent::providers::drop_nulls;
use crate::agent::search::{Embedder, ToolIndex};
use crate::agent::skill::SkillKind;
use crate::call::Operation;
use crate::content::{split_output, ContentPart};
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::executor::{Executor, ToolCall};
use crate::registry::Tool;
use crate::spec::{ModelHint, PreferredModel};
use crate::validate::{SchemaValidator, ValidationIssue};

/// What a step observer of [`ReactSkill::run_observed`] tells the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepControl {
    /// Go on with the next step.
    Continue,
    /// Stop at this step boundary.
    Pause,
}

/// Where a run's effects go: its model calls and its tool calls.
///
/// [`ReactSkill::run_observed`] sends them through the door of the skill's executor,
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
}

/// The effects of a run in this process: through the skill's executor, with the
/// caller's context.
struct LocalEffects<'a> {
    skill: &'a ReactSkill,
    ctx: &'a ToolContext,
}

impl StepEffects for LocalEffects<'_> {
    fn complete(
        &self,
        _step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ModelError>> {
        self.skill.ask_model(model, request, self.ctx)
    }

    fn execute(
        &self,
        _step: usize,
        calls: Vec<ToolCall>,
    ) -> impl Future<Output = Vec<Result<Value, ToolError>>> {
        self.skill.run_calls(calls, self.ctx)
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
    /// Why the run stopped without an answer, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
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

impl Default for ReactState {
    fn default() -> ReactState {
        ReactState {
            trajectory: Vec::new(),
            tool_calls: Vec::new(),
            done: false,
            error_budget: default_error_budget(),
            final_answer: None,
            step_index: 0,
            stopped: None,
            usage: Usage::default(),
            final_value: None,
            cost: None,
        }
    }
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
    /// A tool offered to the model is not registered.
    #[error("the skill offers `{0}`, which is not registered")]
    UnknownTool(String),
    /// The schema a run's answer must match is not a valid JSON Schema.
    #[error("the answer schema is not valid: {0}")]
    InvalidAnswerSchema(String),
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

/// Adds `key` under its model name to `names`, refusing a name another key has.
fn offer(names: &mut HashMap<String, String>, key: &str) -> Result<String, AgentError> {
    let name = model_name(key);
    match names.get(&name) {
        Some(first) if first != key => Err(AgentError::NameCollision {
            name,
            first: first.clone(),
            second: key.to_owned(),
        }),
        _ => {
            names.insert(name.clone(), key.to_owned());
            Ok(name)
        }
    }
}

/// A ReAct agent over some tools. See the [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
/// use tackle::agent::react::ReactSkill;
/// use tackle::{tool, Executor, Runtime, ToolContext};
///
/// /// Adds two integers.
/// #[tool(namespace = "math", side_effects = none)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ScriptedModel::new([
///     ChatResponse::calls("adding", vec![ToolCallRequest {
///         id: "c1".into(),
///         name: "math_add".into(), // the name the model is offered
///         arguments: json!({"a": 2, "b": 3}),
///     }]),
///     ChatResponse::text("2 + 3 = 5"),
/// ]);
/// let executor = Arc::new(Executor::new(Arc::new(Runtime::from_inventory()?)));
/// let agent = ReactSkill::new(Arc::new(model), executor, &["math.add"])?.with_max_steps(4);
/// // Deny by default: the caller grants the model's permission.
/// let state = agent.run("What is 2 + 3?", &ToolContext::new().with_grant("llm:*")).await?;
/// assert_eq!(state.final_answer.as_deref(), Some("2 + 3 = 5"));
/// assert_eq!(state.tool_calls[0].result, Some(json!(5)));
/// # Ok(())
/// # }
/// ```
pub struct ReactSkill {
    model: Arc<dyn ChatModel>,
    completion: Operation,
    executor: Arc<Executor>,
    tools: Vec<ToolDefinition>,
    names: HashMap<String, String>,
    deferred: HashMap<String, ToolDefinition>,
    deferred_tools: Vec<Arc<Tool>>,
    deferred_index: Option<ToolIndex>,
    embedder: Option<Arc<dyn Embedder>>,
    /// Models for tools' `preferred_model`, with their completion operations.
    preferred: Vec<(PreferredModel, Arc<dyn ChatModel>, Operation)>,
    system_prompt: String,
    max_steps: usize,
    error_budget: u32,
    repair: Option<Arc<dyn RepairHook>>,
    /// Prices of models, by model name.
    pricing: HashMap<String, Pricing>,
    /// The schema a final answer must match, and its validator.
    answer_schema: Option<(Value, Arc<SchemaValidator>)>,
    /// Which replies without tool calls are answers (when there is no schema).
    text_answers: TextAnswers,
}

/// Which replies without tool calls a run takes as its answer, when it requires no
/// answer schema ([`ReactSkill::with_text_answers`]). A reply that is not an answer is a
/// repair turn: the model is told why, and the step spends the error budget.
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
            .finish()
    }
}

/// Whether `text` says something: it is not empty, and not the task or the system
/// prompt said back; otherwise why not.
fn substantive(text: &str, task: &str, system: &str) -> Result<(), String> {
    let normal = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (reply, task, system) = (normal(text), normal(task), normal(system));
    if reply.is_empty() {
        return Err("the reply is empty".to_owned());
    }
    // The task itself, or (for a task long enough not to be a word of an answer) the
    // task with a few characters around it.
    if reply == task
        || (task.len() >= 20 && reply.contains(&task) && reply.len() <= task.len() + 10)
    {
        return Err("the reply repeats the task".to_owned());
    }
    if system.len() >= 20 && reply.contains(&system) {
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
/// strictest providers' rule), `namespace_name`.
pub fn model_name(key: &str) -> String {
    let path = key.split_once('@').map_or(key, |(p, _)| p);
    path.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl ReactSkill {
    /// A ReAct skill's kind: always `agent`.
    pub const KIND: SkillKind = SkillKind::Agent;

    /// The most steps a run takes unless told otherwise: 10.
    pub const DEFAULT_MAX_STEPS: usize = 10;

    /// The failed calls a run tolerates unless told otherwise: 3.
    pub const DEFAULT_ERROR_BUDGET: u32 = 3;

    /// A skill that lets `model` use the tools `keys` (each must resolve in the
    /// executor's registry), with default limits. Tools whose spec sets
    /// `defer_loading` are deferred (see [`with_deferred`](Self::with_deferred)).
    pub fn new(
        model: Arc<dyn ChatModel>,
        executor: Arc<Executor>,
        keys: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        let mut tools = Vec::with_capacity(keys.len());
        let mut names = HashMap::new();
        let mut deferred = Vec::new();
        for key in keys {
            let tool = executor
                .runtime()
                .registry()
                .resolve(key)
                .map_err(|_| AgentError::UnknownTool((*key).to_owned()))?;
            if tool.spec().defer_loading {
                deferred.push(tool.key().to_owned());
                continue;
            }
            let name = offer(&mut names, tool.key())?;
            tools.push(ToolDefinition {
                name,
                description: tool.spec().description.clone(),
                parameters: tool.spec().input_schema.clone(),
            });
        }
        let skill = ReactSkill {
            completion: completion(model.as_ref()),
            model,
            executor,
            tools,
            names,
            deferred: HashMap::new(),
            deferred_tools: Vec::new(),
            deferred_index: None,
            embedder: None,
            preferred: Vec::new(),
            system_prompt: "You solve the task step by step. Call tools when they help; answer in plain text when you are done.".to_owned(),
            max_steps: ReactSkill::DEFAULT_MAX_STEPS,
            error_budget: ReactSkill::DEFAULT_ERROR_BUDGET,
            repair: None,
            pricing: HashMap::new(),
            answer_schema: None,
            text_answers: TextAnswers::default(),
        };
        if deferred.is_empty() {
            return Ok(skill);
        }
        let deferred: Vec<&str> = deferred.iter().map(String::as_str).collect();
        skill.with_deferred(&deferred)
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
    /// fenced `json` block is accepted); otherwise it is a failed step that spends the
    /// error budget, and the model is told what was wrong and asked again (a repair
    /// turn). The answer's value is [`ReactState::final_value`].
    ///
    /// Without an answer schema, a reply without tool calls is the answer as the
    /// [`TextAnswers`] policy says (by default, one that says something).
    pub fn with_answer_schema(mut self, schema: Value) -> Result<ReactSkill, AgentError> {
        let validator =
            SchemaValidator::compile(&schema).map_err(AgentError::InvalidAnswerSchema)?;
        self.answer_schema = Some((schema, Arc::new(validator)));
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
        let registry = self.executor.runtime().registry();
        let wanted: Vec<PreferredModel> = calls
            .iter()
            .filter_map(|c| self.names.get(&c.name))
            .filter_map(|key| registry.resolve(key).ok())
            .filter_map(|tool| tool.spec().preferred_model.clone())
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
        self
    }

    /// Sets the most steps a run may take (default 10).
    pub fn with_max_steps(mut self, steps: usize) -> ReactSkill {
        self.max_steps = steps;
        self
    }

    /// Sets how many failed calls a run tolerates (default 3).
    pub fn with_error_budget(mut self, budget: u32) -> ReactSkill {
        self.error_budget = budget;
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
    pub fn with_deferred(mut self, keys: &[&str]) -> Result<ReactSkill, AgentError> {
        for key in keys {
            let tool = self
                .executor
                .runtime()
                .registry()
                .resolve(key)
                .map_err(|_| AgentError::UnknownTool((*key).to_owned()))?;
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
        Ok(self)
    }

    /// The tool definitions the model is offered at the start of a run (with
    /// `tool_search` when some tools are deferred).
    pub fn tools(&self) -> Vec<ToolDefinition> {
        let mut tools = self.tools.clone();
        if self.deferred_index.is_some() {
            tools.push(search_definition());
        }
        tools
    }

    /// Runs the loop on `task` with the caller's context.
    pub async fn run(&self, task: &str, ctx: &ToolContext) -> Result<ReactState, AgentError> {
        self.run_observed(task, ctx, &mut |_| StepControl::Continue)
            .await
    }

    /// Runs the loop on `task`, showing `observe` the state at each step boundary
    /// (after a step's observations, before the next model call); when it answers
    /// [`StepControl::Pause`], the run stops there, not done, with `stopped` saying
    /// so. A durable run checkpoints its state this way (see [`crate::durable`]).
    pub async fn run_observed(
        &self,
        task: &str,
        ctx: &ToolContext,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactState, AgentError> {
        let effects = LocalEffects { skill: self, ctx };
        self.run_with(task, &effects, observe).await
    }

    /// Asks a model through the door of the skill's executor: the run's model when
    /// `model` is `None`, else the `model`-th model given with
    /// [`with_model_for`](Self::with_model_for) (`None` past the last). The effect of
    /// a run's model call ([`StepEffects::complete`]).
    pub async fn ask_model(
        &self,
        model: Option<usize>,
        request: &ChatRequest,
        ctx: &ToolContext,
    ) -> Result<ChatResponse, ModelError> {
        let (model, operation) = self.model_at(model);
        complete(self.executor.runtime(), operation, model, request, ctx).await
    }

    /// Runs tool calls as one batch through the skill's executor (in parallel where
    /// safe, every call through the door), one outcome per call, in call order. The
    /// effect of a run's tool calls ([`StepEffects::execute`]).
    pub async fn run_calls(
        &self,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<Result<Value, ToolError>> {
        self.executor
            .execute_batch(calls, ctx)
            .await
            .into_iter()
            .map(|outcome| outcome.report.result)
            .collect()
    }

    /// The executor whose registry the skill's tools come from.
    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    /// The model `model` names (see [`ask_model`](Self::ask_model)), with its
    /// completion operation.
    fn model_at(&self, model: Option<usize>) -> (&dyn ChatModel, &Operation) {
        match model.and_then(|i| self.preferred.get(i)) {
            Some((_, model, operation)) => (model.as_ref(), operation),
            None => (self.model.as_ref(), &self.completion),
        }
    }

    /// Runs the loop on `task` with its model and tool calls going to `effects`,
    /// showing `observe` each step boundary as [`run_observed`](Self::run_observed)
    /// does. For a loop driven by an engine that runs the effects elsewhere.
    pub async fn run_with<E: StepEffects>(
        &self,
        task: &str,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactState, AgentError> {
        let mut state = ReactState {
            error_budget: self.error_budget,
            ..ReactState::default()
        };
        // The conversation and the offered tools grow in place, step by step.
        let mut request = ChatRequest {
            messages: vec![Message::system(&self.system_prompt), Message::user(task)],
            tools: self.tools(),
            response_schema: self
                .answer_schema
                .as_ref()
                .map(|(schema, _)| schema.clone()),
        };
        if let Some((schema, _)) = &self.answer_schema {
            if !self.model.structured_output() {
                // This model does not enforce the schema: it reads it.
                request.messages[0].content.push_str(&format!(
                    "\n\nWhen you answer (without calling a tool), answer with one JSON \
                     document matching this JSON Schema, and nothing else:\n{schema}"
                ));
            }
        }
        let mut preferred: Option<usize> = None;
        while !state.done && state.error_budget > 0 && state.step_index < self.max_steps {
            let step = state.step_index;
            if step > 0 && observe(&state) == StepControl::Pause {
                state.stopped = Some(format!("paused after {step} step(s)"));
                return Ok(state);
            }
            let (model, _) = self.model_at(preferred);
            let response = effects
                .complete(step, preferred, &request)
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
                let checked = match &self.answer_schema {
                    Some((schema, validator)) => answer_value(&response.text, schema, validator)
                        .map(Some)
                        .map_err(|problem| {
                            format!(
                                "{problem}. Answer again with one JSON document matching the \
                                 required schema, or call a tool."
                            )
                        }),
                    None if self.text_answers == TextAnswers::Substantive => {
                        substantive(&response.text, task, &self.system_prompt)
                            .map(|()| None)
                            .map_err(|problem| {
                                format!("{problem}. Answer the task, or call a tool.")
                            })
                    }
                    None => Ok(None),
                };
                match checked {
                    Err(problem) => {
                        // Not an answer: a repair turn.
                        state.error_budget = state.error_budget.saturating_sub(1);
                        let observation = format!("not an answer: {problem}");
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
                state.final_answer = Some(response.text);
                state.done = true;
                break;
            }
            let observations = self
                .act(
                    step,
                    &response.text,
                    (&response.tool_calls, &response.unreadable),
                    effects,
                    &mut state,
                    &mut request.tools,
                )
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
        if !state.done {
            state.stopped = Some(if state.error_budget == 0 {
                "the error budget is spent".to_owned()
            } else {
                format!("no answer within {} steps", self.max_steps)
            });
        }
        Ok(state)
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
        offered: &mut Vec<ToolDefinition>,
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
                outcomes[i] = Some(Ok(self.search(&c.arguments, offered)));
            } else if offered_key.is_none() {
                // Not a tool of this run: whatever it names in the registry, it is not
                // the model's to call.
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: self.closest_offered(&c.name),
                }));
            } else if self.deferred.contains_key(&key)
                && !offered
                    .iter()
                    .any(|t| self.names.get(&t.name) == Some(&key))
            {
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: vec![format!("find it first with `{SEARCH_TOOL}`")],
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
        let ran = effects.execute(step, to_run.clone()).await;
        // Arguments that a repair round replaced, by call.
        let mut repaired: Vec<Option<Value>> = vec![None; calls.len()];
        for ((i, call), mut result) in indices.into_iter().zip(to_run).zip(ran) {
            if let (Err(e), Some(hook)) = (&result, &self.repair) {
                if e.kind() == ToolErrorKind::InvalidInput {
                    if let Some(fixed) = hook.repair(&calls[i], e) {
                        let retry = ToolCall::new(call.id, call.key, fixed.clone());
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
            let arguments = repaired[i].take().unwrap_or_else(|| c.arguments.clone());
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
                name: keys[i].clone(),
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
        if let Some(key) = self.names.get(name) {
            return Some(key.clone());
        }
        let tool = self.executor.runtime().registry().resolve(name).ok()?;
        self.names
            .values()
            .find(|key| key.as_str() == tool.key())
            .cloned()
    }

    /// Up to three names of the run's tools close to `name`, closest first.
    fn closest_offered(&self, name: &str) -> Vec<String> {
        if name.len() > crate::registry::query::SUGGEST_MAX_LEN {
            return Vec::new();
        }
        let mut scored: Vec<(f64, &String)> = self
            .names
            .keys()
            .map(|offered| {
                (
                    strsim::normalized_damerau_levenshtein(name, offered),
                    offered,
                )
            })
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().take(3).map(|(_, n)| n.clone()).collect()
    }

    /// Runs `tool_search` over the deferred tools and offers what it finds.
    fn search(&self, arguments: &Value, offered: &mut Vec<ToolDefinition>) -> Value {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
        let k = arguments
            .get("k")
            .and_then(Value::as_u64)
            .map_or(5, |k| k.clamp(1, 20) as usize);
        let hits = self
            .deferred_index
            .as_ref()
            .map(|index| index.search(query, k))
            .unwrap_or_default();
        let mut found = Vec::with_capacity(hits.len());
        for hit in hits {
            if let Some(definition) = self.deferred.get(&hit.key) {
                if !offered.iter().any(|t| t.name == definition.name) {
                    offered.push(definition.clone());
                }
                found.push(serde_json::json!({
                    "name": definition.name,
                    "description": definition.description,
                }));
            }
        }
        Value::Array(found)
    }
}

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

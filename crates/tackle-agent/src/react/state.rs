//! A run's state ([`ReactState`], its steps and tool calls), why it stopped
//! ([`StopReason`]), where it stands at a step boundary ([`ReactCheckpoint`]), and
//! its [`Answer`].

use std::sync::Arc;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::error::ToolErrorKind;

use crate::model::{Message, ToolDefinition, Usage};

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
    /// ([`ReactSkill::with_answer_schema`](super::ReactSkill::with_answer_schema)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_value: Option<Value>,
    /// What those tokens cost, for the calls of models with a price
    /// ([`ReactSkill::with_pricing`](super::ReactSkill::with_pricing)); `None` until a priced call reports its tokens.
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
        /// The limit ([`ReactSkill::with_repair_turns`](super::ReactSkill::with_repair_turns)).
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
/// this process or another ([`ReactSkill::run_from`](super::ReactSkill::run_from)). A Temporal run continued as
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
    /// Which model the next step asks ([`ReactSkill::ask_model`](super::ReactSkill::ask_model)): `None` for the
    /// skill's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<usize>,
}

/// A run's answer ([`Agent::run`](super::Agent::run)): the value, the run's
/// state, and the messages the run added to its conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer<T> {
    /// The answer: the model's final text, or the typed answer the agent asks for.
    pub value: T,
    /// The run's state: its trajectory, tool calls, usage and cost.
    pub state: ReactState,
    /// The messages this run added to the conversation (the user's task, the model's
    /// turns, the tool results, the answer), to pass as
    /// [`history`](super::AgentRun::history) to the next turn.
    pub messages: Vec<Message>,
}

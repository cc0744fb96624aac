//! Why a run could not go on ([`AgentError`]), as opposed to failed tool calls,
//! which are observations.

use tackle_core::error::ToolError;

use super::{ReactCheckpoint, ReactState};
use crate::model::ModelError;

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
    /// ([`AgentRun::observe`](super::AgentRun::observe)): not an answer yet.
    #[error("the run paused after {} step(s)", checkpoint.state.step_index)]
    Paused {
        /// Where the run stands, to go on from
        /// ([`AgentRun::from`](super::AgentRun::from)).
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

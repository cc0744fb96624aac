//! Replaying a recorded history against today's workflow code, so a change that would
//! break runs in flight fails in `cargo test` before it is deployed.

use crate::agents::Agents;
use crate::workflow::AgentWorkflow;

/// Replays a recorded history of an [`AgentWorkflow`] (its JSON, as
/// [`WorkflowHistory::to_json`](temporalio_client::WorkflowHistory::to_json) writes it)
/// over `agents`, running no activity: `Ok` when today's workflow code takes the
/// same steps as the code that recorded it. A change to the loop that would break
/// runs in flight fails here first: keep a history of each shape of run in the
/// repository and replay them in `cargo test` ([`ReplayError::Nondeterminism`]).
pub async fn replay_history(agents: Agents, history: &[u8]) -> Result<(), ReplayError> {
    use temporalio_sdk::workflow_replayer::{
        WorkflowReplayError, WorkflowReplayFailure, WorkflowReplayer, WorkflowReplayerOptions,
    };
    let history = temporalio_client::WorkflowHistory::from_json(history)
        .map_err(|e| ReplayError::History(e.to_string()))?;
    let options = WorkflowReplayerOptions::new()
        .register_workflow_with_factory::<AgentWorkflow, _>(move || {
            AgentWorkflow::new(agents.clone())
        })
        .map_err(|e| ReplayError::Replayer(e.to_string()))?
        .build();
    let replayer =
        WorkflowReplayer::new(options).map_err(|e| ReplayError::Replayer(e.to_string()))?;
    match replayer.replay_workflow(history).await {
        Ok(()) => Ok(()),
        Err(WorkflowReplayError::Replay(WorkflowReplayFailure::Nondeterminism { message })) => {
            Err(ReplayError::Nondeterminism(message))
        }
        Err(WorkflowReplayError::Replay(WorkflowReplayFailure::InvalidHistory { message })) => {
            Err(ReplayError::History(message))
        }
        Err(other) => Err(ReplayError::Failed(other.to_string())),
    }
}

/// Why a recorded history did not replay ([`replay_history`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The history is not one: not JSON of a history, or incomplete.
    #[error("the history cannot be read: {0}")]
    History(String),
    /// The replayer could not be built.
    #[error("the replayer could not be built: {0}")]
    Replayer(String),
    /// Today's workflow code takes other steps than the recorded run: deploying it
    /// would break runs in flight.
    #[error("the workflow is not deterministic against this history: {0}")]
    Nondeterminism(String),
    /// The workflow's task failed while replaying (a panic, an agent missing).
    #[error("the replay failed: {0}")]
    Failed(String),
}

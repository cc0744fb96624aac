//! The agent's loop as a Temporal workflow, [`AgentWorkflow`]: what starts a run
//! ([`AgentInput`]), its signals (approval decisions, what became of a call of unknown
//! outcome) and queries, and continuing as new at a step boundary. Its effects are
//! activities (see `effects`).

mod effects;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::durable::{ApprovalRecord, PendingApproval, Resolution};
use tackle_agent::react::{ReactCheckpoint, ReactState, StepControl, StopReason};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ApplicationFailure, ContinueAsNewOptions, SyncWorkflowContext, WorkflowContext,
    WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use crate::agents::Agents;
use crate::limits::{ActivityLimits, ContinueAsNew, MAX_CARRIED_BYTES};
use effects::WorkflowEffects;

/// What starts a run: the agent (by its name in the workers' [`Agents`]), the task,
/// and the activities' limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentInput {
    /// The agent's name.
    pub agent: String,
    /// The task.
    pub task: String,
    /// How the run's activities are timed and retried.
    #[serde(default)]
    pub limits: ActivityLimits,
    /// When the run continues as new.
    #[serde(default)]
    pub continue_as_new: ContinueAsNew,
    /// Where an execution goes on from: set by the run when it continues as new
    /// (`None` starts the task afresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Box<ReactCheckpoint>>,
}

impl AgentInput {
    /// A run of `agent` on `task`, with default limits.
    pub fn new(agent: impl Into<String>, task: impl Into<String>) -> AgentInput {
        AgentInput {
            agent: agent.into(),
            task: task.into(),
            limits: ActivityLimits::default(),
            continue_as_new: ContinueAsNew::default(),
            from: None,
        }
    }
}

/// A call whose outcome nobody knows: its worker died while it ran, and running it
/// again is not safe. The run waits for [`AgentWorkflow::resolve`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnknownCall {
    /// The call's name in the run: `<step>/<model's call id>`.
    pub call: String,
    /// The tool's key.
    pub key: String,
    /// Its arguments.
    pub arguments: Value,
}

/// What an operator says became of an [`UnknownCall`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resolve {
    /// The call ([`UnknownCall::call`]).
    pub call: String,
    /// What became of it.
    pub resolution: Resolution,
}

/// An agent run as a Temporal workflow. See the [crate docs](crate).
///
/// Start it with [`AgentWorkflow::run`] and an [`AgentInput`]; its result is the
/// run's [`ReactState`]. Signals: [`decide`](AgentWorkflow::decide),
/// [`resolve`](AgentWorkflow::resolve). Queries:
/// [`pending_approvals`](AgentWorkflow::pending_approvals),
/// [`unknown_outcomes`](AgentWorkflow::unknown_outcomes).
#[workflow]
#[derive(Default)]
pub struct AgentWorkflow {
    agents: Agents,
    pending: Vec<PendingApproval>,
    decisions: Vec<ApprovalRecord>,
    unknown: Vec<UnknownCall>,
    resolutions: Vec<Resolve>,
    /// The run's state at its last step boundary, or at its end.
    state: Option<ReactState>,
}

#[workflow_methods]
impl AgentWorkflow {
    /// Runs the agent's loop on the task; each model and tool call is an activity.
    #[run(name = "tackle.agent")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        mut input: AgentInput,
    ) -> WorkflowResult<ReactState> {
        if let Err(problem) = input.limits.validate() {
            return Err(ApplicationFailure::non_retryable(problem.to_string()).into());
        }
        let Some(agent) = ctx.state(|s| s.agents.get(&input.agent).cloned()) else {
            // A worker of an older or newer build, mid-deploy: the task fails, and
            // Temporal gives it to another worker, which may have the agent.
            ctx.force_task_fail(format!("no agent `{}` on this worker", input.agent));
            return std::future::pending().await;
        };
        let start = match input.from.take() {
            Some(checkpoint) => *checkpoint,
            None => agent.skill.checkpoint(&input.task),
        };
        let first_step = start.state.step_index;
        ctx.state_mut(|s| s.state = Some(start.state.clone()));
        let ctx: &WorkflowContext<Self> = ctx;
        let effects = WorkflowEffects {
            ctx,
            agent: &agent,
            input: &input,
            last: Mutex::new(None),
            long: AtomicBool::new(false),
        };
        let last: Arc<Mutex<Option<ReactState>>> = Arc::new(Mutex::new(Some(start.state.clone())));
        let policy = &input.continue_as_new;
        let mut keep = |state: &ReactState| {
            *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
            let steps = state.step_index.saturating_sub(first_step);
            if effects.long.load(Ordering::Relaxed)
                || policy.after_steps.is_some_and(|n| steps >= n)
            {
                StepControl::Pause
            } else {
                StepControl::Continue
            }
        };
        // Not raced against cancellation: a cancelled run's calls are cancelled, and
        // the run waits for a tool call in flight to stop or finish, so its outcome is
        // in the history.
        let mut outcome = agent.skill.run_from(start, &effects, &mut keep).await;
        let paused = |o: &Result<ReactCheckpoint, _>| matches!(o, Ok(at) if matches!(at.state.stop_reason, Some(StopReason::Paused { .. })));
        if paused(&outcome) && !ctx.cancellation_token().is_cancelled() {
            if let Ok(at) = outcome {
                let carried = serde_json::to_vec(&at).map_or(usize::MAX, |b| b.len());
                if carried <= MAX_CARRIED_BYTES {
                    ctx.state_mut(|s| s.state = Some(at.state.clone()));
                    let next = AgentInput {
                        from: Some(Box::new(at)),
                        ..input.clone()
                    };
                    let Err(termination) =
                        ctx.continue_as_new(next, ContinueAsNewOptions::default());
                    return Err(termination);
                }
                tracing::warn!(
                    carried,
                    "the run's checkpoint is too large to continue as new: it goes on in this execution"
                );
                let mut no_pause = |state: &ReactState| {
                    *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
                    StepControl::Continue
                };
                outcome = agent.skill.run_from(at, &effects, &mut no_pause).await;
            }
        }
        let partial = last.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let cancelled = ctx.cancellation_token().is_cancelled();
        match outcome.map(|at| at.state) {
            Ok(state) if !cancelled => {
                ctx.state_mut(|s| s.state = Some(state.clone()));
                Ok(state)
            }
            Ok(state) => {
                ctx.state_mut(|s| s.state = Some(state));
                Err(WorkflowTermination::cancelled())
            }
            Err(_) if cancelled => {
                ctx.state_mut(|s| s.state = partial);
                Err(WorkflowTermination::cancelled())
            }
            Err(error) => {
                let details = serde_json::to_string(&partial).unwrap_or_default();
                ctx.state_mut(|s| s.state = partial);
                Err(ApplicationFailure::builder(error.to_string())
                    .non_retryable(true)
                    .type_name("tackle.AgentFailed".to_owned())
                    .details(details)
                    .build()
                    .into())
            }
        }
    }

    /// The run's state: at its last step boundary while it runs, its final state once
    /// it ended (failed or cancelled runs included: what they did before).
    #[query(name = "tackle.state")]
    pub fn state(&self, _ctx: &WorkflowContextView) -> Option<ReactState> {
        self.state.clone()
    }

    /// Decides a pending approval. A decision counts only for a request that is
    /// pending, with the same key and canonical arguments; any other is ignored.
    #[signal(name = "tackle.decide")]
    pub fn decide(&mut self, _ctx: &mut SyncWorkflowContext<Self>, mut record: ApprovalRecord) {
        let pending = self.pending.contains(&record.request);
        let decided = self
            .decisions
            .iter()
            .any(|d| !d.used && d.request == record.request);
        if pending && !decided {
            record.used = false;
            self.decisions.push(record);
        }
    }

    /// Says what became of a call of unknown outcome. Ignored for a call that is not
    /// waiting.
    #[signal(name = "tackle.resolve")]
    pub fn resolve(&mut self, _ctx: &mut SyncWorkflowContext<Self>, resolve: Resolve) {
        let waiting = self.unknown.iter().any(|u| u.call == resolve.call);
        let resolved = self.resolutions.iter().any(|r| r.call == resolve.call);
        if waiting && !resolved {
            self.resolutions.push(resolve);
        }
    }

    /// The calls waiting for a decision.
    #[query(name = "tackle.pending_approvals")]
    pub fn pending_approvals(&self, _ctx: &WorkflowContextView) -> Vec<PendingApproval> {
        self.pending
            .iter()
            .filter(|p| !self.decisions.iter().any(|d| !d.used && d.request == **p))
            .cloned()
            .collect()
    }

    /// The calls of unknown outcome waiting for an operator.
    #[query(name = "tackle.unknown_outcomes")]
    pub fn unknown_outcomes(&self, _ctx: &WorkflowContextView) -> Vec<UnknownCall> {
        self.unknown
            .iter()
            .filter(|u| !self.resolutions.iter().any(|r| r.call == u.call))
            .cloned()
            .collect()
    }
}

impl AgentWorkflow {
    /// The workflow of a worker that runs `agents`.
    pub(crate) fn new(agents: Agents) -> AgentWorkflow {
        AgentWorkflow {
            agents,
            pending: Vec::new(),
            decisions: Vec::new(),
            unknown: Vec::new(),
            resolutions: Vec::new(),
            state: None,
        }
    }
}

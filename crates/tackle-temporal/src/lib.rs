//! tackle's agent runs on Temporal, for when one machine is not enough.
//!
//! A run of a [`ReactSkill`] splits in two. The loop, which only decides (what to ask
//! the model, which calls to make, when the run is done), is a Temporal workflow,
//! [`AgentWorkflow`]: given the same model replies and call outcomes it takes the
//! same steps, so Temporal can replay it on any worker from its history. Every
//! effect, each model call and each tool call, is an activity ([`DoorActivities`])
//! that a worker runs through its own door: capability checks, validation, approval,
//! time limits and audit happen in the worker that holds the registry, exactly as in
//! one process. The door stays the only way a tool runs.
//!
//! - **Scale-out.** One cluster, N workers on a task queue. Any worker runs any step;
//!   a worker that dies mid-run loses only the activity it was running, which
//!   Temporal gives to another worker after its heartbeat times out.
//! - **Effects at least once, writes exactly once.** Temporal retries an activity
//!   whose worker died. A call is run again only when that is safe
//!   ([`ToolSpec::rerun_safe`](tackle_core::ToolSpec::rerun_safe): it changes
//!   nothing, or its input carries an idempotency key). Otherwise its outcome is
//!   unknown: the run waits, [`AgentWorkflow::unknown_outcomes`] lists the call, and an
//!   operator sends [`AgentWorkflow::resolve`] with what became of it.
//! - **Approvals are signals.** A call that needs approval waits in the workflow
//!   (the query [`AgentWorkflow::pending_approvals`]) until the signal
//!   [`AgentWorkflow::decide`] brings a decision bound to its exact key and
//!   arguments; then the door runs it or the model reads the rejection. The worker's
//!   runtime must use [`SignalApprover`].
//! - **Long runs continue as new.** At a step boundary, when Temporal suggests it or
//!   past the run's [`ContinueAsNew`] policy, a run ends its execution and starts the
//!   next from where its loop stands ([`ReactCheckpoint`]), so no history outgrows
//!   what Temporal keeps.
//! - **Cancellation is Temporal's.** Cancelling the workflow stops the run: it ends
//!   cancelled, and the activity in flight is told to stop.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tackle::agent::model::{ChatResponse, FunctionModel};
//! use tackle::agent::react::ReactSkill;
//! use tackle::{Runtime, ToolContext};
//! use tackle_temporal::{AgentWorker, Agents, SignalApprover};
//!
//! # async fn worker() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?.with_approver(SignalApprover));
//! let model = Arc::new(FunctionModel::new("bot", |_| Ok(ChatResponse::text("done"))));
//! let skill = ReactSkill::new(model, runtime.registry(), &[])?;
//! let agents = Agents::new(&runtime).with("clerk", skill, ToolContext::new().with_grant("llm:*"));
//! AgentWorker::new("http://127.0.0.1:7233", "default", "agents", agents)
//!     .run()
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::agent::model::{ChatRequest, ChatResponse, ModelError, ToolCallRequest};
use tackle_agent::agent::react::{
    ReactCheckpoint, ReactSkill, ReactState, StepControl, StepEffects, StopReason,
};
use tackle_agent::durable::{ApprovalRecord, Decision, PendingApproval, Resolution};
use tackle_core::approval::ApprovalFuture;
use tackle_core::{
    ApprovalRequest, Approver, CancellationToken, Run, Runtime, ToolCall, ToolContext, ToolError,
};
use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};
use temporalio_common::RetryPolicy;
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityCancellationType, ActivityCloseTimeouts, ActivityOptions, ApplicationFailure,
    ContinueAsNewOptions, SyncWorkflowContext, Worker, WorkerOptions, WorkflowContext,
    WorkflowContextView, WorkflowResult, WorkflowTermination,
};

/// The SDK's client crate, at the version this crate speaks.
pub use temporalio_client as client;
/// The SDK's worker crate, at the version this crate speaks.
pub use temporalio_sdk as sdk;

/// What went wrong connecting to Temporal or running a worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemporalError {
    /// The address is not a URL.
    #[error("`{address}` is not a Temporal address: {message}")]
    Address {
        /// The address given.
        address: String,
        /// Why not.
        message: String,
    },
    /// The frontend could not be reached, or refused the client.
    #[error("could not connect to Temporal at {address}: {message}")]
    Connect {
        /// The address.
        address: String,
        /// What failed.
        message: String,
    },
    /// The worker could not be built or stopped with an error.
    #[error("the worker failed: {0}")]
    Worker(String),
}

/// An agent a worker can run: a skill, and the context its calls run with there
/// (its grants, secrets and resources: the worker's, not the caller's).
#[derive(Clone)]
pub struct Agent {
    skill: Arc<ReactSkill>,
    context: ToolContext,
    runtime: Arc<Runtime>,
}

impl Agent {
    /// The skill.
    pub fn skill(&self) -> &ReactSkill {
        &self.skill
    }
}

/// The agents a worker runs, by name, over the worker's runtime. Every worker of a
/// task queue must have the same agents, built the same way: a workflow replayed on
/// another worker must take the same steps.
#[derive(Clone)]
pub struct Agents {
    runtime: Arc<Runtime>,
    agents: HashMap<String, Agent>,
}

impl Default for Agents {
    /// No agents, over an empty runtime.
    fn default() -> Agents {
        Agents::new(&Arc::new(Runtime::default()))
    }
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.agents.keys().collect();
        names.sort();
        f.debug_struct("Agents").field("names", &names).finish()
    }
}

impl Agents {
    /// No agents yet, over `runtime` (every activity is a run of it).
    pub fn new(runtime: &Arc<Runtime>) -> Agents {
        Agents {
            runtime: Arc::clone(runtime),
            agents: HashMap::new(),
        }
    }

    /// The runtime the agents' calls go through.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Adds `skill` under `name`, its calls running with `context` (replacing an agent
    /// of that name).
    pub fn with(
        mut self,
        name: impl Into<String>,
        skill: ReactSkill,
        context: ToolContext,
    ) -> Agents {
        self.agents.insert(
            name.into(),
            Agent {
                skill: Arc::new(skill),
                context,
                runtime: Arc::clone(&self.runtime),
            },
        );
        self
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.get(name)
    }
}

/// How a run's activities are timed and retried.
///
/// **Retries.** Temporal tries an activity again when its worker dies or goes
/// silent (no heartbeat for `heartbeat_timeout_ms`), or when it fails in a way that
/// may pass (a model's timeout or 5xx). A model call is tried at most
/// `model_attempts` times. A tool call is tried at most `tool_attempts` times, and
/// never past `tool_deadline_ms` after it was first scheduled; [`ToolRetry`] in
/// `tools` sets both for one tool. An attempt after the first of a call that is not
/// safe to run again runs nothing (its outcome is unknown: the run waits for an
/// operator), so these bound only reads, keyed writes and calls that never started.
///
/// [`validate`](Self::validate) refuses limits that cannot work (a zero timeout, no
/// attempt); a worker checks its own at start ([`AgentWorker::with_limits`]), and a run
/// whose limits are refused fails at once, saying which.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActivityLimits {
    /// The longest one model or tool call may take, in milliseconds (default 300,000).
    pub call_timeout_ms: u64,
    /// How long a worker may go silent while running a call before Temporal gives
    /// the call to another worker, in milliseconds (default 10,000). Workers
    /// heartbeat at a third of it.
    pub heartbeat_timeout_ms: u64,
    /// How often a model call is tried before the run fails (default 3).
    pub model_attempts: u32,
    /// How often a tool call is tried, at most (default 5).
    pub tool_attempts: u32,
    /// How long a tool call may take over all its attempts, from when it was first
    /// scheduled, in milliseconds (default 1,800,000: 30 minutes).
    pub tool_deadline_ms: u64,
    /// Limits of single tools, by key (`namespace.name@version`) or by
    /// `namespace.name` (every version).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolRetry>,
}

/// How one tool's calls are retried (see [`ActivityLimits`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRetry {
    /// How often a call is tried, at most.
    pub attempts: u32,
    /// How long a call may take over all its attempts, in milliseconds.
    pub deadline_ms: u64,
}

/// Why [`ActivityLimits`] were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid activity limits: {field} {problem}")]
pub struct LimitsError {
    /// The field.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl Default for ActivityLimits {
    fn default() -> ActivityLimits {
        ActivityLimits {
            call_timeout_ms: 300_000,
            heartbeat_timeout_ms: 10_000,
            model_attempts: 3,
            tool_attempts: 5,
            tool_deadline_ms: 1_800_000,
            tools: BTreeMap::new(),
        }
    }
}

impl ActivityLimits {
    /// Refuses limits that cannot work: a zero timeout or deadline, a heartbeat
    /// timeout longer than the call timeout, zero attempts, a deadline shorter than
    /// one call.
    pub fn validate(&self) -> Result<(), LimitsError> {
        let refuse = |field: &str, problem: String| {
            Err(LimitsError {
                field: field.to_owned(),
                problem,
            })
        };
        if self.call_timeout_ms == 0 {
            return refuse("call_timeout_ms", "is 0: no call could finish".into());
        }
        if self.heartbeat_timeout_ms == 0 {
            return refuse(
                "heartbeat_timeout_ms",
                "is 0: every call would time out".into(),
            );
        }
        if self.heartbeat_timeout_ms > self.call_timeout_ms {
            return refuse(
                "heartbeat_timeout_ms",
                format!(
                    "({}) is longer than call_timeout_ms ({})",
                    self.heartbeat_timeout_ms, self.call_timeout_ms
                ),
            );
        }
        if self.model_attempts == 0 {
            return refuse("model_attempts", "is 0: no model call would run".into());
        }
        let mut tools = vec![(
            "tool_attempts / tool_deadline_ms".to_owned(),
            self.tool_attempts,
            self.tool_deadline_ms,
        )];
        tools.extend(
            self.tools
                .iter()
                .map(|(key, retry)| (format!("tools[{key}]"), retry.attempts, retry.deadline_ms)),
        );
        for (field, attempts, deadline) in tools {
            if attempts == 0 {
                return refuse(&field, "allows 0 attempts: no call would run".into());
            }
            if deadline < self.call_timeout_ms {
                return refuse(
                    &field,
                    format!(
                        "has a deadline ({deadline} ms) shorter than one call (call_timeout_ms {})",
                        self.call_timeout_ms
                    ),
                );
            }
        }
        Ok(())
    }

    /// The retry limits of calls of `key`.
    fn tool_retry(&self, key: &str) -> (u32, u64) {
        let unversioned = key.split_once('@').map_or(key, |(name, _)| name);
        self.tools
            .get(key)
            .or_else(|| self.tools.get(unversioned))
            .map_or((self.tool_attempts, self.tool_deadline_ms), |r| {
                (r.attempts, r.deadline_ms)
            })
    }

    fn retry(attempts: u32) -> RetryPolicy {
        RetryPolicy::builder()
            .initial_interval(Duration::from_millis(200))
            .backoff_coefficient(2.0)
            .maximum_interval(Duration::from_secs(10))
            .maximum_attempts(attempts.max(1))
            .build()
    }

    fn model_options(&self) -> ActivityOptions {
        ActivityOptions::with_start_to_close_timeout(Duration::from_millis(self.call_timeout_ms))
            .heartbeat_timeout(Duration::from_millis(self.heartbeat_timeout_ms.max(1)))
            .retry_policy(Self::retry(self.model_attempts))
            .build()
    }

    /// A tool call's options: bounded retries, and a cancellation that waits for the
    /// call to stop (or finish), so a cancelled run never leaves a write unrecorded.
    fn tool_options(&self, key: &str) -> ActivityOptions {
        let (attempts, deadline) = self.tool_retry(key);
        ActivityOptions::with_close_timeouts(ActivityCloseTimeouts::ScheduleAndStartToClose {
            schedule_to_close: Duration::from_millis(deadline.max(self.call_timeout_ms)),
            start_to_close: Duration::from_millis(self.call_timeout_ms),
        })
        .heartbeat_timeout(Duration::from_millis(self.heartbeat_timeout_ms.max(1)))
        .retry_policy(Self::retry(attempts))
        .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
        .build()
    }
}

/// When a run continues as new: it ends its execution at a step boundary and starts
/// the next one (same workflow id) from where its loop stands, a
/// [`ReactCheckpoint`], so that no one execution's history grows past what Temporal
/// keeps (by default 51,200 events or 50 MB an execution; past them it terminates the
/// run). Each execution's history then stays about as large as its own steps, and a
/// run of any length fits.
///
/// The checkpoint holds the conversation so far and travels as the next execution's
/// input, which Temporal caps (2 MB by default): a run whose checkpoint is larger
/// than [`MAX_CARRIED_BYTES`] does not continue as new but goes on in its execution,
/// and a warning says so. A conversation that large is past any model's window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContinueAsNew {
    /// When Temporal suggests it (the execution's history passed the server's
    /// suggested count or size: 4,096 events or 4 MB by default). Default `true`.
    pub when_suggested: bool,
    /// Once the execution's history holds this many events (default 10,000).
    pub after_events: u32,
    /// After this many steps in one execution, whatever its history (default none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_steps: Option<usize>,
}

impl Default for ContinueAsNew {
    fn default() -> ContinueAsNew {
        ContinueAsNew {
            when_suggested: true,
            after_events: 10_000,
            after_steps: None,
        }
    }
}

/// The largest [`ReactCheckpoint`] a run carries into its next execution, serialized
/// (1.5 MiB, under Temporal's default 2 MB cap on a payload).
pub const MAX_CARRIED_BYTES: usize = 1536 * 1024;

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
    fn new(agents: Agents) -> AgentWorkflow {
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

/// A model call, as an activity's input.
///
/// So that a run's history grows with its steps, not with their square, a request
/// after the run's first goes as what it adds to the one before ([`Extends`]): the
/// new messages only. The worker that runs the call keeps the run's recent requests;
/// one that does not have the previous request (another worker ran it, or it
/// restarted) rebuilds it from the run's history, which holds every delta. That
/// rebuild reads the whole history (time linear in the run's length, memory of one
/// request), so a run whose model calls land on many workers costs more CPU on the
/// workers, not more history; model calls are not yet routed to the worker that ran
/// the previous one. The rebuild reads payloads as the default JSON converter writes
/// them (a payload codec, such as encryption, is not supported yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The agent's name.
    pub agent: String,
    /// Which model ([`ReactSkill::ask_model`]).
    pub model: Option<usize>,
    /// The call's number among the run's model calls, from 0.
    #[serde(default)]
    pub seq: u64,
    /// The request: whole, or (with `extends`) its new messages, and its tools and
    /// answer schema when they changed.
    pub request: ChatRequest,
    /// What of the previous request (call `seq - 1`) this one keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<Extends>,
}

/// What a model request keeps of the run's previous one ([`ModelCall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extends {
    /// How many of its messages come first, unchanged.
    pub kept: usize,
    /// Whether its tools and answer schema are the previous ones (and left out).
    pub same_tools: bool,
}

impl ModelCall {
    /// The whole request, given the previous one (`None` for a call that extends
    /// nothing): `None` when the call extends a request it is not given, or keeps
    /// more messages than it has.
    pub fn whole(&self, previous: Option<&ChatRequest>) -> Option<ChatRequest> {
        let Some(extends) = self.extends else {
            return Some(self.request.clone());
        };
        let previous = previous?;
        let kept = previous.messages.get(..extends.kept)?;
        let mut whole = ChatRequest {
            messages: Vec::with_capacity(kept.len() + self.request.messages.len()),
            ..self.request.clone()
        };
        whole.messages.extend_from_slice(kept);
        whole.messages.extend_from_slice(&self.request.messages);
        if extends.same_tools {
            whole.tools.clone_from(&previous.tools);
            whole.response_schema.clone_from(&previous.response_schema);
        }
        Some(whole)
    }
}

/// A repair of a call's invalid arguments, as an activity's input: the agent's
/// repair hook runs on a worker, so the workflow replays its answer from history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairCall {
    /// The agent's name.
    pub agent: String,
    /// The call as the model made it.
    pub call: ToolCallRequest,
    /// Why its arguments were refused.
    pub error: ToolError,
}

/// A `tool_search` over the agent's deferred tools, as an activity's input (its
/// embedder may call a service: it runs on a worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchCall {
    /// The agent's name.
    pub agent: String,
    /// What the model searched for.
    pub query: String,
    /// How many results, at most.
    pub k: usize,
}

/// A tool call, as an activity's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoorCall {
    /// The agent's name.
    pub agent: String,
    /// The model's id for the call.
    pub id: String,
    /// The tool's key.
    pub key: String,
    /// The arguments.
    pub input: Value,
    /// The decisions on the call's approval requests.
    #[serde(default)]
    pub decisions: Vec<ApprovalRecord>,
}

/// How a tool call's activity ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DoorOutcome {
    /// The door ran the call, or refused it: its result.
    Done {
        /// The call's result.
        result: Result<Value, ToolError>,
    },
    /// The call needs decisions it does not have; nothing ran.
    AwaitingApproval {
        /// The requests.
        requests: Vec<PendingApproval>,
    },
    /// An earlier attempt of this call may have run, and running it again is not safe.
    UnknownOutcome {
        /// This attempt's number.
        attempt: u32,
    },
}

/// The effects of a run as a workflow: each an activity.
struct WorkflowEffects<'a> {
    ctx: &'a WorkflowContext<AgentWorkflow>,
    agent: &'a Agent,
    input: &'a AgentInput,
    /// The run's previous model request and its number: what the next is sent as a
    /// delta of.
    last: Mutex<Option<(u64, ChatRequest)>>,
    /// Whether the execution's history is long enough to continue as new, as of the
    /// last effect (read at the next step boundary).
    long: AtomicBool,
}

impl StepEffects for WorkflowEffects<'_> {
    async fn complete(
        &self,
        _step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> Result<ChatResponse, ModelError> {
        let call = {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let (seq, extends, sent) = match last.as_ref() {
                Some((n, previous))
                    if request.messages.len() >= previous.messages.len()
                        && request.messages[..previous.messages.len()] == previous.messages[..] =>
                {
                    let same_tools = (Arc::ptr_eq(&request.tools, &previous.tools)
                        || request.tools == previous.tools)
                        && request.response_schema == previous.response_schema;
                    let kept = previous.messages.len();
                    let sent = ChatRequest {
                        messages: request.messages[kept..].to_vec(),
                        tools: if same_tools {
                            Default::default()
                        } else {
                            request.tools.clone()
                        },
                        response_schema: if same_tools {
                            None
                        } else {
                            request.response_schema.clone()
                        },
                    };
                    (n + 1, Some(Extends { kept, same_tools }), sent)
                }
                Some((n, _)) => (n + 1, None, request.clone()),
                None => (0, None, request.clone()),
            };
            *last = Some((seq, request.clone()));
            ModelCall {
                agent: self.input.agent.clone(),
                model,
                seq,
                request: sent,
                extends,
            }
        };
        let options = self.input.limits.model_options();
        let reply = self
            .ctx
            .execute_activity(DoorActivities::model, call, options)
            .await;
        self.weigh();
        reply.map_err(|e| ModelError::Failed {
            message: format!("the model's activity failed: {}", failure_text(&e)),
        })
    }

    async fn repair(
        &self,
        _skill: &ReactSkill,
        call: &ToolCallRequest,
        error: &ToolError,
    ) -> Option<Value> {
        let input = RepairCall {
            agent: self.input.agent.clone(),
            call: call.clone(),
            error: error.clone(),
        };
        // A repair that cannot run is no repair: the model reads the error.
        self.ctx
            .execute_activity(
                DoorActivities::repair,
                input,
                self.input.limits.model_options(),
            )
            .await
            .ok()
            .flatten()
    }

    async fn search(&self, _skill: &ReactSkill, query: &str, k: usize) -> Vec<String> {
        let input = SearchCall {
            agent: self.input.agent.clone(),
            query: query.to_owned(),
            k,
        };
        self.ctx
            .execute_activity(
                DoorActivities::search,
                input,
                self.input.limits.model_options(),
            )
            .await
            .unwrap_or_default()
    }

    async fn execute(&self, step: usize, calls: Vec<ToolCall>) -> Vec<Result<Value, ToolError>> {
        let registry = self.agent.runtime.registry();
        let read_only = calls.iter().all(|c| {
            registry
                .resolve(&c.key)
                .is_ok_and(|tool| !tool.spec().side_effects.mutates())
        });
        if read_only {
            // Nothing changes: the calls run at once, on whichever workers take them.
            let runs = calls.into_iter().map(|c| self.call(step, c));
            let outcomes = futures::future::join_all(runs).await;
            self.weigh();
            outcomes
        } else {
            // Writes run one after another, in the model's order.
            let mut outcomes = Vec::with_capacity(calls.len());
            for call in calls {
                outcomes.push(self.call(step, call).await);
            }
            self.weigh();
            outcomes
        }
    }
}

impl WorkflowEffects<'_> {
    /// Notes whether the execution's history is long enough to continue as new
    /// ([`ContinueAsNew`]); deterministic, as both figures come from the history.
    fn weigh(&self) {
        let policy = &self.input.continue_as_new;
        let long = (policy.when_suggested && self.ctx.continue_as_new_suggested())
            || self.ctx.history_length() >= policy.after_events;
        self.long.store(long, Ordering::Relaxed);
    }

    /// One tool call: an activity, again after approvals or an operator's say.
    async fn call(&self, step: usize, call: ToolCall) -> Result<Value, ToolError> {
        let name = format!("{step}/{}", call.id);
        let mut decisions: Vec<ApprovalRecord> = Vec::new();
        loop {
            let input = DoorCall {
                agent: self.input.agent.clone(),
                id: call.id.clone(),
                key: call.key.clone(),
                input: call.input.clone(),
                decisions: decisions.clone(),
            };
            // Temporal retries a call (its worker died, went silent, or a read
            // failed), within the limits; the activity itself says when running it
            // again is not safe.
            let options = self.input.limits.tool_options(&call.key);
            let outcome = self
                .ctx
                .execute_activity(DoorActivities::call, input, options)
                .await;
            match outcome {
                Err(e) => {
                    return Err(ToolError::Execution {
                        key: call.key.clone(),
                        message: format!("the call's activity failed: {}", failure_text(&e)),
                    })
                }
                Ok(DoorOutcome::Done { result }) => return result,
                Ok(DoorOutcome::AwaitingApproval { requests }) => {
                    self.ctx.state_mut(|s| {
                        for request in &requests {
                            if !s.pending.contains(request) {
                                s.pending.push(request.clone());
                            }
                        }
                    });
                    let decided = |s: &AgentWorkflow| {
                        requests
                            .iter()
                            .all(|r| s.decisions.iter().any(|d| !d.used && d.request == *r))
                    };
                    if self.ctx.wait_condition(decided).await.is_err() {
                        return Err(ToolError::Cancelled {
                            key: call.key.clone(),
                        });
                    }
                    // Each decision answers this call and is used up: the same call
                    // asked again later waits for a new one.
                    decisions = self.ctx.state_mut(|s| {
                        let mut taken = Vec::new();
                        for d in &mut s.decisions {
                            if !d.used && requests.contains(&d.request) {
                                d.used = true;
                                taken.push(d.clone());
                            }
                        }
                        s.pending.retain(|p| !requests.contains(p));
                        taken
                    });
                }
                Ok(DoorOutcome::UnknownOutcome { .. }) => {
                    self.ctx.state_mut(|s| {
                        if !s.unknown.iter().any(|u| u.call == name) {
                            s.unknown.push(UnknownCall {
                                call: name.clone(),
                                key: call.key.clone(),
                                arguments: call.input.clone(),
                            });
                        }
                    });
                    let resolved = |s: &AgentWorkflow| s.resolutions.iter().any(|r| r.call == name);
                    if self.ctx.wait_condition(resolved).await.is_err() {
                        return Err(ToolError::Cancelled {
                            key: call.key.clone(),
                        });
                    }
                    let resolution = self.ctx.state_mut(|s| {
                        s.unknown.retain(|u| u.call != name);
                        let at = s.resolutions.iter().position(|r| r.call == name);
                        at.map(|at| s.resolutions.remove(at).resolution)
                    });
                    match resolution {
                        Some(Resolution::Succeeded { output }) => return Ok(output),
                        Some(Resolution::Failed { error }) => {
                            return Err(ToolError::Execution {
                                key: call.key.clone(),
                                message: error,
                            })
                        }
                        // Run it again: a new activity, whose first attempt runs.
                        Some(Resolution::Retry) | None => {}
                    }
                }
            }
        }
    }
}

/// The text of an activity's failure, with its cause.
fn failure_text(error: &temporalio_sdk::ActivityExecutionError) -> String {
    match error.failure() {
        Some(failure) => match &failure.cause {
            Some(cause) if !cause.message.is_empty() => {
                format!("{}: {}", failure.message, cause.message)
            }
            _ => failure.message.clone(),
        },
        None => error.to_string(),
    }
}

/// The activities of a worker: model calls and tool calls, through the door of the
/// agents' runtimes.
pub struct DoorActivities {
    agents: Agents,
    /// For rebuilding a run's model request from its history.
    client: Option<Client>,
    /// The runs' recent model requests, by workflow, run and call number.
    requests: Mutex<Requests>,
}

/// A worker's recent model requests ([`ModelCall`]), oldest first out.
#[derive(Default)]
struct Requests {
    by_call: HashMap<(String, String, u64), Arc<ChatRequest>>,
    order: std::collections::VecDeque<(String, String, u64)>,
}

/// How many model requests a worker keeps.
const KEPT_REQUESTS: usize = 4096;

impl Requests {
    fn get(&self, key: &(String, String, u64)) -> Option<Arc<ChatRequest>> {
        self.by_call.get(key).cloned()
    }

    fn put(&mut self, key: (String, String, u64), request: Arc<ChatRequest>) {
        if self.by_call.insert(key.clone(), request).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > KEPT_REQUESTS {
            if let Some(old) = self.order.pop_front() {
                self.by_call.remove(&old);
            }
        }
    }
}

#[activities]
impl DoorActivities {
    /// Asks the agent's model, through the door.
    #[activity(name = "tackle.model")]
    pub async fn model(
        self: Arc<Self>,
        ctx: ActivityContext,
        call: ModelCall,
    ) -> Result<ChatResponse, ActivityError> {
        let agent = self.agent(&call.agent)?;
        let request = self.whole_request(&ctx, &call).await?;
        let (run, _watch) = activity_run(self.agents.runtime(), &ctx);
        let reply = heartbeating(
            &ctx,
            agent
                .skill
                .ask_model(&run, call.model, &request, &agent.context),
        )
        .await;
        reply.map_err(|error| {
            let transient = matches!(
                error,
                ModelError::Timeout { .. }
                    | ModelError::Transport { .. }
                    | ModelError::StreamBroken { .. }
            ) || matches!(error, ModelError::Status { status, .. } if status == 429 || status >= 500);
            let failure = if transient {
                ApplicationFailure::new(error.to_string())
            } else {
                ApplicationFailure::non_retryable(error.to_string())
            };
            ActivityError::application(failure)
        })
    }

    /// Asks the agent's repair hook for new arguments (see [`RepairCall`]).
    #[activity(name = "tackle.repair")]
    pub async fn repair(
        self: Arc<Self>,
        _ctx: ActivityContext,
        call: RepairCall,
    ) -> Result<Option<Value>, ActivityError> {
        let agent = self.agent(&call.agent)?;
        Ok(agent.skill.repair_arguments(&call.call, &call.error))
    }

    /// Searches the agent's deferred tools (see [`SearchCall`]).
    #[activity(name = "tackle.search")]
    pub async fn search(
        self: Arc<Self>,
        _ctx: ActivityContext,
        call: SearchCall,
    ) -> Result<Vec<String>, ActivityError> {
        let agent = self.agent(&call.agent)?;
        Ok(agent.skill.search_deferred(&call.query, call.k))
    }

    /// Runs one tool call through the door. An attempt after the first, of a call
    /// that is not safe to run again, runs nothing: its outcome is unknown.
    #[activity(name = "tackle.call")]
    pub async fn call(
        self: Arc<Self>,
        ctx: ActivityContext,
        call: DoorCall,
    ) -> Result<DoorOutcome, ActivityError> {
        let agent = self.agent(&call.agent)?;
        let attempt = ctx.info().attempt;
        if attempt > 1 {
            let safe = self
                .agents
                .runtime()
                .registry()
                .resolve(&call.key)
                .map_or(true, |tool| tool.rerun_safe());
            if !safe {
                return Ok(DoorOutcome::UnknownOutcome { attempt });
            }
        }
        let approvals = Arc::new(ActivityApprovals {
            decisions: call.decisions,
            pending: Mutex::new(Vec::new()),
        });
        // A run of its own per activity: the activity's cancellation reaches the call,
        // and no other run's memory answers it with another run's outcome.
        let (run, _watch) = activity_run(self.agents.runtime(), &ctx);
        let door = run.call_with_id(&call.id, &call.key, call.input, &agent.context);
        let result = heartbeating(&ctx, APPROVALS.scope(Arc::clone(&approvals), door)).await;
        if ctx.is_cancelled() && matches!(result, Err(ToolError::Cancelled { .. })) {
            // Stopped before it ran, or it stopped itself: the call is cancelled (a
            // worker shutting down has Temporal run it again elsewhere).
            return Err(ActivityError::cancelled());
        }
        let requests = std::mem::take(
            &mut *approvals
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if requests.is_empty() {
            Ok(DoorOutcome::Done { result })
        } else {
            Ok(DoorOutcome::AwaitingApproval { requests })
        }
    }
}

impl DoorActivities {
    /// The whole request of `call`: from this worker's recent requests, or rebuilt
    /// from the run's history.
    async fn whole_request(
        &self,
        ctx: &ActivityContext,
        call: &ModelCall,
    ) -> Result<Arc<ChatRequest>, ActivityError> {
        let info = ctx.info();
        let workflow = info.workflow_id.clone().unwrap_or_default();
        let run = info.workflow_run_id.clone().unwrap_or_default();
        let key = |seq: u64| (workflow.clone(), run.clone(), seq);
        let previous = match call.extends {
            None => None,
            Some(_) => {
                let cached = call
                    .seq
                    .checked_sub(1)
                    .and_then(|n| self.cache().get(&key(n)));
                match cached {
                    Some(previous) => Some(previous),
                    None => Some(self.rebuild(&workflow, &run, call.seq).await?),
                }
            }
        };
        let whole = call.whole(previous.as_deref()).ok_or_else(|| {
            ActivityError::application(ApplicationFailure::non_retryable(format!(
                "model call {} of `{workflow}` extends a request it does not match",
                call.seq
            )))
        })?;
        let whole = Arc::new(whole);
        self.cache().put(key(call.seq), Arc::clone(&whole));
        Ok(whole)
    }

    /// Rebuilds the run's model request `seq - 1` from its history: every model call
    /// the run scheduled, in order, each applied to the one before.
    async fn rebuild(
        &self,
        workflow: &str,
        run: &str,
        seq: u64,
    ) -> Result<Arc<ChatRequest>, ActivityError> {
        use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
        let failed = |why: String| {
            // Retryable: the history may be reachable from another attempt.
            ActivityError::application(ApplicationFailure::new(format!(
                "model call {seq} of `{workflow}`: the previous request cannot be rebuilt: {why}"
            )))
        };
        let client = self
            .client
            .as_ref()
            .ok_or_else(|| failed("this worker has no client".to_owned()))?;
        // This execution's history: a run continued as new has several.
        let mut execution = client
            .get_workflow_handle::<temporalio_common::UntypedWorkflow>(workflow)
            .info()
            .clone();
        if !run.is_empty() {
            execution.run_id = Some(run.to_owned());
        }
        let events =
            temporalio_client::WorkflowHandle::<_, temporalio_common::UntypedWorkflow>::new(
                client.clone(),
                execution,
            )
            .fetch_history(temporalio_client::WorkflowFetchHistoryOptions::default())
            .into_events()
            .await
            .map_err(|e| failed(e.to_string()))?;
        let mut previous: Option<ChatRequest> = None;
        for event in events {
            let Some(Attributes::ActivityTaskScheduledEventAttributes(scheduled)) =
                event.attributes
            else {
                continue;
            };
            if scheduled.activity_type.as_ref().map(|t| t.name.as_str()) != Some("tackle.model") {
                continue;
            }
            let Some(payload) = scheduled.input.and_then(|p| p.payloads.into_iter().next()) else {
                continue;
            };
            let Ok(earlier) = serde_json::from_slice::<ModelCall>(&payload.data) else {
                return Err(failed(
                    "a model call in the history does not read".to_owned(),
                ));
            };
            if earlier.seq >= seq {
                break;
            }
            // Only the request before `seq` is kept: the others are built and dropped.
            previous = Some(
                earlier
                    .whole(previous.as_ref())
                    .ok_or_else(|| failed(format!("model call {} does not apply", earlier.seq)))?,
            );
        }
        let previous = Arc::new(
            previous.ok_or_else(|| failed("the history has no earlier model call".to_owned()))?,
        );
        self.cache().put(
            (workflow.to_owned(), run.to_owned(), seq.saturating_sub(1)),
            Arc::clone(&previous),
        );
        Ok(previous)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn agent(&self, name: &str) -> Result<Agent, ActivityError> {
        // Retryable: mid-deploy, another worker may have the agent.
        self.agents.get(name).cloned().ok_or_else(|| {
            ActivityError::application(ApplicationFailure::new(format!(
                "no agent `{name}` on this worker"
            )))
        })
    }
}

/// A run of `runtime` for one activity, cancelled when the activity is, for as long
/// as the guard lives.
fn activity_run(runtime: &Arc<Runtime>, ctx: &ActivityContext) -> (Run, CancelWatch) {
    let token = CancellationToken::new();
    let activity = ctx.clone();
    let cancel = token.clone();
    let watch = tokio::spawn(async move {
        activity.cancelled().await;
        cancel.cancel();
    });
    (
        Run::new(runtime).with_cancellation(token),
        CancelWatch(watch),
    )
}

/// Stops watching an activity's cancellation when dropped.
struct CancelWatch(tokio::task::JoinHandle<()>);

impl Drop for CancelWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `work`, heartbeating at a third of the activity's heartbeat timeout from a
/// task of its own: a tool that blocks its thread does not stop the heartbeats.
async fn heartbeating<F: Future>(ctx: &ActivityContext, work: F) -> F::Output {
    let every = ctx
        .info()
        .heartbeat_timeout
        .map_or(Duration::from_secs(3), |t| t / 3)
        .max(Duration::from_millis(50));
    let activity = ctx.clone();
    let beat = tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            // A heartbeat that fails to send is retried at the next beat.
            let _ = activity.record_heartbeat(()).await;
        }
    });
    let _stop = CancelWatch(beat);
    work.await
}

tokio::task_local! {
    static APPROVALS: Arc<ActivityApprovals>;
}

/// The decisions a tool call's activity brought, and the requests it found none for.
struct ActivityApprovals {
    decisions: Vec<ApprovalRecord>,
    pending: Mutex<Vec<PendingApproval>>,
}

/// The approver of a worker's runtime: it answers from the decisions the workflow's
/// signals brought to the running activity, each bound to its call's key and exact
/// arguments. A request without a decision is refused for now and goes back to the
/// workflow, which waits for [`AgentWorkflow::decide`]. Outside an activity of an
/// [`AgentWorkflow`] it refuses every request.
#[derive(Clone, Copy, Debug, Default)]
pub struct SignalApprover;

impl Approver for SignalApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let answer = APPROVALS.try_with(|approvals| {
            let decided = approvals
                .decisions
                .iter()
                .find(|d| d.request.binds(request))
                .map(|d| d.decision.clone());
            match decided {
                Some(Decision::Approve) => request.approve(),
                Some(Decision::Reject { reason }) => request.deny(reason),
                None => {
                    let mut pending = approvals
                        .pending
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    pending.push(PendingApproval::of(request));
                    request.deny("awaiting approval: the workflow waits for a decision")
                }
            }
        });
        let answer = answer.unwrap_or_else(|_| {
            request.deny("no decision: this approver answers only in an agent workflow's activity")
        });
        Box::pin(std::future::ready(answer))
    }
}

/// Connects a client to the Temporal frontend at `address`
/// (`http://127.0.0.1:7233`) in `namespace`.
pub async fn connect(address: &str, namespace: &str) -> Result<Client, TemporalError> {
    let url = Url::from_str(address).map_err(|e| TemporalError::Address {
        address: address.to_owned(),
        message: e.to_string(),
    })?;
    connect_with(ConnectionOptions::new(url).build(), namespace).await
}

/// Connects a client with `options` in `namespace`: a cluster beyond localhost, with
/// TLS (`tls_options`, with the `tls` feature) and an API key (`api_key`; set
/// `tls_options` too, and an `https://` target, as Temporal Cloud wants). Give the
/// client to [`AgentWorker::with_client`].
///
/// ```no_run
/// use tackle_temporal::client::{ConnectionOptions, Url};
///
/// # async fn cloud() -> Result<(), Box<dyn std::error::Error>> {
/// let options = ConnectionOptions::new(Url::parse("https://my-ns.tmprl.cloud:7233")?)
///     .api_key(std::env::var("TEMPORAL_API_KEY")?)
///     .build();
/// let client = tackle_temporal::connect_with(options, "my-ns").await?;
/// # let _ = client; Ok(()) }
/// ```
pub async fn connect_with(
    options: ConnectionOptions,
    namespace: &str,
) -> Result<Client, TemporalError> {
    let address = options.target.to_string();
    let connection = Connection::connect(options)
        .await
        .map_err(|e| TemporalError::Connect {
            address: address.clone(),
            message: e.to_string(),
        })?;
    Client::new(connection, ClientOptions::new(namespace).build()).map_err(|e| {
        TemporalError::Connect {
            address,
            message: e.to_string(),
        }
    })
}

/// Where a worker's client comes from.
enum Frontend {
    /// An address and namespace, connected without TLS.
    Address { address: String, namespace: String },
    /// A client made by the caller ([`connect_with`]: TLS, an API key).
    Client(Box<Client>),
}

impl std::fmt::Debug for Frontend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Frontend::Address { address, namespace } => write!(f, "{address} ({namespace})"),
            Frontend::Client(_) => f.write_str("a client given"),
        }
    }
}

/// A worker that runs [`AgentWorkflow`]s and their [`DoorActivities`] for some
/// [`Agents`] on a task queue.
///
/// **Shutting down.** [`run_until`](Self::run_until) stops taking work when its
/// signal comes, lets the calls in flight finish for up to the grace period
/// ([`with_graceful_shutdown`](Self::with_graceful_shutdown), default 30 s), then
/// cancels what is left: a cancelled call is given to another worker, or, if it is a
/// write that may have happened, waits for an operator. No task is lost: a workflow
/// task the worker had not finished goes back to the queue.
#[derive(Debug)]
pub struct AgentWorker {
    frontend: Frontend,
    task_queue: String,
    agents: Agents,
    sticky_timeout: Duration,
    grace: Duration,
    limits: ActivityLimits,
}

impl AgentWorker {
    /// A worker for `agents` on `task_queue`, in `namespace` of the frontend at
    /// `address`.
    pub fn new(
        address: impl Into<String>,
        namespace: impl Into<String>,
        task_queue: impl Into<String>,
        agents: Agents,
    ) -> AgentWorker {
        AgentWorker {
            frontend: Frontend::Address {
                address: address.into(),
                namespace: namespace.into(),
            },
            task_queue: task_queue.into(),
            agents,
            sticky_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(30),
            limits: ActivityLimits::default(),
        }
    }

    /// A worker for `agents` on `task_queue`, over a client made by the caller
    /// ([`connect_with`]: TLS, an API key, a namespace).
    pub fn with_client(
        client: Client,
        task_queue: impl Into<String>,
        agents: Agents,
    ) -> AgentWorker {
        AgentWorker {
            frontend: Frontend::Client(Box::new(client)),
            ..AgentWorker::new(String::new(), String::new(), task_queue, agents)
        }
    }

    /// How long calls in flight may go on once the worker is told to stop
    /// (default 30 s); then they are cancelled.
    pub fn with_graceful_shutdown(mut self, grace: Duration) -> AgentWorker {
        self.grace = grace;
        self
    }

    /// The limits this deployment's runs are started with, checked when the worker
    /// starts ([`ActivityLimits::validate`]): a worker with limits that cannot work
    /// does not start. (Each run carries its own in its [`AgentInput`], checked when
    /// it starts.)
    pub fn with_limits(mut self, limits: ActivityLimits) -> AgentWorker {
        self.limits = limits;
        self
    }

    /// How long a run's next step waits for the worker that ran its last one before
    /// any worker may take it (default 10 s): how soon a run moves on when a worker
    /// dies between steps.
    pub fn with_sticky_timeout(mut self, timeout: Duration) -> AgentWorker {
        self.sticky_timeout = timeout;
        self
    }

    /// Connects and runs until the worker stops. The future is not `Send`: drive it
    /// on the task that called it (as `#[tokio::main]` does), not with `tokio::spawn`.
    pub async fn run(self) -> Result<(), TemporalError> {
        self.run_until(std::future::pending()).await
    }

    /// [`run`](Self::run) until `stop` completes (say, `tokio::signal::ctrl_c()`),
    /// then shuts down gracefully (see [`AgentWorker`]) and returns.
    pub async fn run_until(self, stop: impl Future<Output = ()>) -> Result<(), TemporalError> {
        self.limits
            .validate()
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let client = match self.frontend {
            Frontend::Address { address, namespace } => connect(&address, &namespace).await?,
            Frontend::Client(client) => *client,
        };
        let runtime = temporalio_sdk::Runtime::from_current_tokio(Default::default())
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let agents = self.agents.clone();
        let options = WorkerOptions::new(self.task_queue.clone())
            .register_workflow_with_factory::<AgentWorkflow, _>(move || {
                AgentWorkflow::new(agents.clone())
            })
            .map_err(|e| TemporalError::Worker(e.to_string()))?
            .register_activities(DoorActivities {
                agents: self.agents,
                client: Some(client.clone()),
                requests: Mutex::default(),
            })
            .sticky_queue_schedule_to_start_timeout(self.sticky_timeout)
            .graceful_shutdown_period(self.grace)
            .build();
        let mut worker = Worker::new(&runtime, client, options)
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let shutdown = worker.shutdown_handle();
        let running = worker.run();
        futures::pin_mut!(running, stop);
        let result = match futures::future::select(running, stop).await {
            futures::future::Either::Left((result, _)) => result,
            futures::future::Either::Right(((), running)) => {
                shutdown();
                running.await
            }
        };
        result.map_err(|e| TemporalError::Worker(e.to_string()))
    }
}

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

/// The guide `docs/temporal.md`, compiled as doctests: every `rust` block in it is
/// checked by `cargo test`.
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../../docs/temporal.md")]
    struct Temporal;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_that_cannot_work_are_refused_naming_the_field() {
        assert_eq!(ActivityLimits::default().validate(), Ok(()));
        let cases = [
            (
                ActivityLimits {
                    call_timeout_ms: 0,
                    ..ActivityLimits::default()
                },
                "call_timeout_ms",
            ),
            (
                ActivityLimits {
                    heartbeat_timeout_ms: 400_000,
                    ..ActivityLimits::default()
                },
                "heartbeat_timeout_ms",
            ),
            (
                ActivityLimits {
                    model_attempts: 0,
                    ..ActivityLimits::default()
                },
                "model_attempts",
            ),
            (
                ActivityLimits {
                    tools: BTreeMap::from([(
                        "bank.pay".to_owned(),
                        ToolRetry {
                            attempts: 0,
                            deadline_ms: 600_000,
                        },
                    )]),
                    ..ActivityLimits::default()
                },
                "tools[bank.pay]",
            ),
        ];
        for (limits, field) in cases {
            let refused = limits.validate().expect_err(field);
            assert_eq!(refused.field, field, "{refused}");
        }
    }

    #[test]
    fn a_tool_gets_its_own_retry_limits_by_key_or_name() {
        let limits = ActivityLimits {
            tools: BTreeMap::from([(
                "bank.pay".to_owned(),
                ToolRetry {
                    attempts: 2,
                    deadline_ms: 600_000,
                },
            )]),
            ..ActivityLimits::default()
        };
        assert_eq!(limits.tool_retry("bank.pay@1"), (2, 600_000));
        assert_eq!(limits.tool_retry("bank.refund@1"), (5, 1_800_000));
    }
}

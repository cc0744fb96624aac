//! The activities a worker runs, [`DoorActivities`]: model calls, repairs, searches and
//! tool calls through the door of the agents' runtime, each heartbeating and
//! cancelled with its activity, and the worker's recent model requests, rebuilt from
//! the run's history when another worker sent the one before.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tackle_agent::durable::PausingApprover;
use tackle_agent::model::{ChatRequest, ChatResponse, ModelError};
use tackle_core::{CancellationToken, Run, Runtime, ToolError};
use temporalio_client::Client;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::ApplicationFailure;

use crate::agents::{Agent, Agents};
use crate::approvals::ActivityApprovals;
use crate::calls::{DoorCall, DoorOutcome, ModelCall, RepairCall, SearchCall};

/// The activities of a worker: model calls and tool calls, through the door of the
/// agents' runtimes.
pub struct DoorActivities {
    pub(crate) agents: Agents,
    /// For rebuilding a run's model request from its history.
    pub(crate) client: Option<Client>,
    /// The runs' recent model requests, by workflow, run and call number.
    pub(crate) requests: Mutex<Requests>,
}

/// A worker's recent model requests ([`ModelCall`]), oldest first out.
#[derive(Default)]
pub(crate) struct Requests {
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
        if attempt > 1 && !self.rerun_safe(&call.key) {
            return Ok(DoorOutcome::UnknownOutcome { attempt });
        }
        let approvals = Arc::new(ActivityApprovals {
            decisions: call.decisions,
            pending: Mutex::new(Vec::new()),
        });
        // A run of its own per activity: the activity's cancellation reaches the call,
        // no other run's memory answers it with another run's outcome, and its
        // approver answers from the decisions the workflow brought.
        let (run, _watch) = activity_run(self.agents.runtime(), &ctx);
        let run = run.with_approver(PausingApprover(Arc::clone(&approvals)));
        let door = run.call_with_id(&call.id, &call.key, call.input, &agent.context);
        let result = heartbeating(&ctx, door).await;
        if ctx.is_cancelled() && matches!(result, Err(ToolError::Cancelled { .. })) {
            // Stopped before it ran, or it stopped itself: the call is cancelled (a
            // worker shutting down has Temporal run it again elsewhere).
            return Err(ActivityError::cancelled());
        }
        if ctx.is_cancelled()
            && matches!(result, Err(ToolError::Aborted { .. }))
            && !self.rerun_safe(&call.key)
        {
            // Cancelled, a write did not stop within the grace window: it may still
            // land. The run records it as a call of unknown outcome (the workflow's
            // `tackle.unknown_outcomes`), not as a write that did not happen.
            return Ok(DoorOutcome::UnknownOutcome { attempt });
        }
        let requests = approvals.take_pending();
        if requests.is_empty() {
            Ok(DoorOutcome::Done { result })
        } else {
            Ok(DoorOutcome::AwaitingApproval { requests })
        }
    }
}

impl DoorActivities {
    /// Whether the tool `key` names may run again safely (a key this worker does not
    /// know: the door refuses it, so nothing ran).
    fn rerun_safe(&self, key: &str) -> bool {
        self.agents
            .runtime()
            .registry()
            .resolve(key)
            .map_or(true, |tool| tool.rerun_safe())
    }

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

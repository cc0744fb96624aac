//! The effects of a run as a workflow: each model call, repair, search and tool call
//! an activity, and a tool call that needs approval or has an unknown outcome waiting
//! in the workflow for the signal that settles it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tackle_agent::durable::{ApprovalRecord, Resolution};
use tackle_agent::model::{ChatRequest, ChatResponse, ModelError, ToolCallRequest};
use tackle_agent::react::{ReactSkill, StepEffects};
use tackle_core::{ToolCall, ToolError};
use temporalio_sdk::WorkflowContext;

use super::{AgentInput, AgentWorkflow, UnknownCall};
use crate::activities::DoorActivities;
use crate::agents::Agent;
use crate::calls::{DoorCall, DoorOutcome, Extends, ModelCall, RepairCall, SearchCall};

/// The effects of a run as a workflow: each an activity.
pub(super) struct WorkflowEffects<'a> {
    pub(super) ctx: &'a WorkflowContext<AgentWorkflow>,
    pub(super) agent: &'a Agent,
    pub(super) input: &'a AgentInput,
    /// The run's previous model request and its number: what the next is sent as a
    /// delta of.
    pub(super) last: Mutex<Option<(u64, ChatRequest)>>,
    /// Whether the execution's history is long enough to continue as new, as of the
    /// last effect (read at the next step boundary).
    pub(super) long: AtomicBool,
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

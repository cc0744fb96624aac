//! The server's side of durable tasks (see [`crate::tasks`]): starting a client's
//! call as a task, driving it with the grants it was made with, and answering
//! `tasks/get` and `tasks/cancel` for the client that made it, resuming a task whose
//! process died.

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::Value;
use tackle_agent::durable::{DurableError, DurableRun, RunRecord, RunStatus};
use tackle_core::ToolErrorKind;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::client::{Client, TaskAsking};
use crate::rounds::Rounds;
use crate::task_input::{self, Gate};
use crate::tasks::{
    awaiting, clip, error_object, run_id, unknown_outcome, TaskCall, Tasks, CANCELLED, MAX_TASK_ID,
    PANICKED, SUPERSEDED, TASK_RUN_PREFIX,
};

/// The client of a 2026-07-28 request that makes a task: its call may ask it for
/// input.
pub(crate) struct Asker {
    /// The request's connection.
    pub(crate) peer: rmcp::service::Peer<rmcp::RoleServer>,
    /// What the client declared.
    pub(crate) capabilities: rmcp::model::ClientCapabilities,
    /// The request's rounds (the answers it carries).
    pub(crate) rounds: Arc<Rounds>,
    /// Whether the call's first questions go back in the request's answer (a tool
    /// served with `with_questions_first`).
    pub(crate) first: bool,
}

impl Tasks {
    /// Starts the call of `key` with `arguments` as a task of `server`, asking
    /// `asker` for input when a 2026-07-28 client made it; `None` when this process
    /// drives as many tasks as it may (the call is then answered at once). With the
    /// task, the gate its request waits at when the call's first questions go back in
    /// its answer.
    #[allow(clippy::type_complexity)]
    pub(crate) fn start(
        self: &Arc<Self>,
        server: &McpServer,
        key: &str,
        arguments: Value,
        asker: Option<Asker>,
    ) -> Option<Result<(CreateTaskResult, Option<Arc<Gate>>), ErrorData>> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (claim, cancel) = self.claim(&id)?;
        let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let call = TaskCall {
            tool: key.to_owned(),
            arguments,
            created_at,
            owner: server.owner().map(str::to_owned),
            grants: server.context().capabilities().clone(),
            client: asker
                .as_ref()
                .and_then(|a| serde_json::to_value(&a.capabilities).ok()),
        };
        let started = serde_json::to_string(&call)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
            .and_then(|task| {
                DurableRun::start_with(
                    Arc::clone(&self.store),
                    &run_id(&id),
                    &task,
                    self.durable_options(),
                )
                .map_err(|e| {
                    ErrorData::internal_error(format!("the task could not be kept: {e}"), None)
                })
            });
        let durable = match started {
            Ok(durable) => durable,
            Err(error) => {
                self.release(&id, claim);
                return Some(Err(error));
            }
        };
        let mut gate = None;
        let client = match asker {
            Some(asker) => {
                // The answers the request carries are the task's too.
                let (answers, granted) = asker.rounds.carried();
                if let Err(error) = task_input::seed(&*self.store, &id, answers, granted) {
                    let _ = durable.finish(Err(error.clone()));
                    self.release(&id, claim);
                    return Some(Err(ErrorData::internal_error(error, None)));
                }
                let request = asker.first.then(|| {
                    let opened = Arc::new(Gate::default());
                    gate = Some(Arc::clone(&opened));
                    (asker.rounds, opened)
                });
                let asking = TaskAsking {
                    inbox: Arc::new(self.inbox(&id)),
                    request,
                };
                Some(Client::for_task(
                    Some(asker.peer),
                    asker.capabilities,
                    asking,
                ))
            }
            None => None,
        };
        let created = CreateTaskResult::new(self.task(&id, TaskStatus::Working, &call.created_at));
        self.drive(
            server,
            &id,
            (claim, cancel),
            durable,
            call,
            client,
            gate.clone(),
        );
        Some(Ok((created, gate)))
    }

    /// The client a resumed task's call asks, when a 2026-07-28 client made it.
    fn resumed_client(&self, id: &str, call: &TaskCall) -> Option<Client> {
        let capabilities = serde_json::from_value(call.client.clone()?).ok()?;
        let asking = TaskAsking {
            inbox: Arc::new(self.inbox(id)),
            request: None,
        };
        Some(Client::for_task(None, capabilities, asking))
    }

    /// Makes the task's call on `durable` (started or resumed) in a task of its own,
    /// with the grants it was made with (and `client` to ask, if any), then ends the
    /// run with its outcome and the claim, and tells `gate`.
    #[allow(clippy::too_many_arguments)]
    fn drive(
        self: &Arc<Self>,
        server: &McpServer,
        id: &str,
        (claim, cancel): (u64, CancellationToken),
        durable: DurableRun,
        call: TaskCall,
        client: Option<Client>,
        gate: Option<Arc<Gate>>,
    ) {
        let run = durable.run(server.runtime());
        let stop = run.cancellation_token();
        let ctx = server
            .context()
            .clone()
            .with_capabilities(call.grants.clone());
        let (tasks, id) = (Arc::clone(self), id.to_owned());
        tokio::spawn(async move {
            let made = run.call_report(&call.tool, call.arguments, &ctx);
            let work = durable.hold(async move {
                match client {
                    Some(client) => client.scope(made).await,
                    None => made.await,
                }
            });
            tokio::pin!(work);
            let report = tokio::select! {
                report = &mut work => report,
                () = cancel.cancelled() => {
                    // The client's cancel stops the call (after its grace window).
                    stop.cancel();
                    work.await
                }
            };
            let outcome = match report.result {
                _ if gate.as_ref().is_some_and(|gate| gate.asked()) => Err(SUPERSEDED.to_owned()),
                Ok(_) => Ok(()),
                Err(e) if e.kind() == ToolErrorKind::Cancelled && cancel.is_cancelled() => {
                    Err(CANCELLED.to_owned())
                }
                Err(e) if e.kind() == ToolErrorKind::Panicked => Err(format!("{PANICKED}{e}")),
                Err(e) => Err(e.to_string()),
            };
            if let Err(error) = durable.finish(outcome) {
                tracing::warn!(%error, "a task's end could not be saved; it goes on when polled");
            }
            tasks.release(&id, claim);
            if let Some(gate) = gate {
                gate.end();
            }
        });
    }

    /// The task `id` as the client `server` serves sees it (`unwrapped`: the client's
    /// revision takes outputs as they are), resuming it first when its process died.
    pub(crate) fn get(
        self: &Arc<Self>,
        server: &McpServer,
        id: &str,
        unwrapped: bool,
    ) -> Result<GetTaskResult, ErrorData> {
        let (record, call) = self.load(server, id, true)?;
        let asks = call.client.is_some();
        let task = self.status(server, id, record, call, unwrapped);
        if !asks || task.status() != TaskStatus::Working {
            return Ok(GetTaskResult::new(task));
        }
        // A call waiting on its client's answers.
        let questions = task_input::pending(&*self.store, id)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        if questions.is_empty() {
            return Ok(GetTaskResult::new(task));
        }
        Ok(GetTaskResult::new(DetailedTask::new(
            task.task
                .with_status_message("waiting for the client's answers (tasks/update)"),
            TaskPayload::InputRequired {
                input_requests: questions,
            },
        )))
    }

    /// Delivers the client's answers to the questions of task `id` (`tasks/update`):
    /// keys the task does not ask are ignored. A task no process drives goes on.
    pub(crate) fn update(
        self: &Arc<Self>,
        server: &McpServer,
        id: &str,
        responses: &rmcp::model::InputResponses,
    ) -> Result<(), ErrorData> {
        let (record, call) = self.load(server, id, true)?;
        if call.client.is_none() || record.ended() {
            return Ok(());
        }
        let answered = task_input::deliver(&*self.store, id, responses)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        if answered > 0 {
            self.answered.notify_waiters();
            if !self.driving().contains_key(id) {
                self.status(server, id, record, call, false);
            }
        }
        Ok(())
    }

    /// The task's status, from its record; a task whose process died is resumed.
    fn status(
        self: &Arc<Self>,
        server: &McpServer,
        id: &str,
        record: RunRecord,
        call: TaskCall,
        unwrapped: bool,
    ) -> DetailedTask {
        let created_at = call.created_at.clone();
        let task = |status| self.task(id, status, &created_at);
        let working = |message: String| {
            DetailedTask::new(
                task(TaskStatus::Working).with_status_message(message),
                TaskPayload::Working,
            )
        };
        let failed = |message: String| {
            DetailedTask::new(
                task(TaskStatus::Failed),
                TaskPayload::Failed {
                    error: error_object(&ErrorData::internal_error(message, None)),
                },
            )
        };
        match &record.status {
            RunStatus::Done => match self.output(&record.run_id, &call.tool) {
                Ok(output) => completed(
                    task(TaskStatus::Completed),
                    server,
                    &call.tool,
                    Ok(output),
                    unwrapped,
                ),
                Err(error) => failed(error.message.to_string()),
            },
            RunStatus::Failed { error } if error == CANCELLED => {
                DetailedTask::new(task(TaskStatus::Cancelled), TaskPayload::Cancelled)
            }
            RunStatus::Failed { error } if error.starts_with(PANICKED) => {
                failed(error[PANICKED.len()..].to_owned())
            }
            RunStatus::Failed { error } => completed(
                task(TaskStatus::Completed),
                server,
                &call.tool,
                Err(error.clone()),
                unwrapped,
            ),
            RunStatus::AwaitingApproval => working(awaiting(&record, &call.tool)),
            RunStatus::UnknownOutcome { .. } => working(unknown_outcome(&call.tool)),
            RunStatus::Running | RunStatus::Paused | RunStatus::Interrupted { .. } => {
                let Some(claim) = self.claim(id) else {
                    if self.driving().contains_key(id) {
                        return working(format!("running `{}`", call.tool));
                    }
                    return working(format!(
                        "waiting to run `{}`: this server runs as many tasks as it may",
                        call.tool
                    ));
                };
                match DurableRun::resume_with(
                    Arc::clone(&self.store),
                    &record.run_id,
                    self.durable_options(),
                ) {
                    Ok(durable) => {
                        tracing::info!(tool = %call.tool, "resuming a task its process left");
                        let message = format!("running `{}` (resumed)", call.tool);
                        let client = self.resumed_client(id, &call);
                        self.drive(server, id, claim, durable, call, client, None);
                        working(message)
                    }
                    Err(error) => {
                        self.release(id, claim.0);
                        match error {
                            DurableError::Held { .. } => {
                                working(format!("running `{}` (in another process)", call.tool))
                            }
                            DurableError::AwaitingApproval { .. } => {
                                working(awaiting(&record, &call.tool))
                            }
                            DurableError::UnknownOutcome { .. } => {
                                working(unknown_outcome(&call.tool))
                            }
                            // Ended while this process looked: the next poll reads how.
                            DurableError::Ended { .. } => {
                                working(format!("ending `{}`", call.tool))
                            }
                            error => failed(format!("the task cannot go on: {error}")),
                        }
                    }
                }
            }
        }
    }

    /// Cancels the task `id`: the call of a task this process drives is cancelled
    /// (the door stops a tool that ignores it after its grace window); a task no
    /// process drives (its process died, or it waits for an approval or an operator)
    /// ends as cancelled. A task that ended stays as it ended.
    pub(crate) fn cancel(&self, server: &McpServer, id: &str) -> Result<(), ErrorData> {
        let (record, call) = self.load(server, id, true)?;
        if let Some(driven) = self.driving().get(id) {
            driven.cancel.cancel();
            return Ok(());
        }
        match DurableRun::abandon(&*self.store, &record.run_id, CANCELLED) {
            Ok(()) | Err(DurableError::Ended { .. }) => Ok(()),
            Err(DurableError::Held { .. }) => Err(ErrorData::invalid_request(
                "the task runs in another server process (or its process stopped less than a lease ago); cancel it again later",
                None,
            )),
            Err(error) => Err(ErrorData::internal_error(
                format!("the task of `{}` could not be cancelled: {error}", call.tool),
                None,
            )),
        }
    }

    /// Resumes every task no process drives (a server starting again on its store
    /// calls it): how many were resumed.
    pub(crate) fn resume_all(self: &Arc<Self>, server: &McpServer) -> Result<usize, ErrorData> {
        let runs = self
            .store
            .runs()
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut resumed = 0;
        for run in runs {
            let Some(id) = run.strip_prefix(TASK_RUN_PREFIX) else {
                continue;
            };
            let Ok((record, call)) = self.load(server, id, false) else {
                continue;
            };
            let open = matches!(
                record.status,
                RunStatus::Running | RunStatus::Paused | RunStatus::Interrupted { .. }
            );
            if !open || self.driving().contains_key(id) {
                continue;
            }
            // Reading a task resumes it when its process died.
            self.status(server, id, record, call, false);
            if self.driving().contains_key(id) {
                resumed += 1;
            }
        }
        Ok(resumed)
    }

    /// The task's record and call, when the client may see it (`as_client`: the
    /// client made it, and may call its tool; else the server reads it for itself).
    fn load(
        &self,
        server: &McpServer,
        id: &str,
        as_client: bool,
    ) -> Result<(RunRecord, TaskCall), ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("unknown task `{}`", clip(id)), None);
        if id.is_empty() || id.len() > MAX_TASK_ID {
            return Err(unknown());
        }
        let record = self
            .store
            .load(&run_id(id))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .ok_or_else(unknown)?;
        let call: TaskCall = serde_json::from_str(&record.task).map_err(|e| {
            ErrorData::internal_error(format!("the task's record is damaged: {e}"), None)
        })?;
        // A client sees only its own tasks, of tools it may call.
        if as_client && (call.owner.as_deref() != server.owner() || !server.may_call(&call.tool)) {
            return Err(unknown());
        }
        Ok((record, call))
    }
}

/// A completed task: its call's result, as `tools/call` would have answered.
fn completed(
    task: Task,
    server: &McpServer,
    key: &str,
    outcome: Result<Value, String>,
    unwrapped: bool,
) -> DetailedTask {
    let result = match outcome {
        Ok(output) => server.result_for(key, output, unwrapped),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error)]),
    };
    let result = match serde_json::to_value(result) {
        Ok(Value::Object(result)) => result,
        _ => JsonObject::new(),
    };
    DetailedTask::new(task, TaskPayload::Completed { result })
}

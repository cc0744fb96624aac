//! Durable tasks: a served call that outlives the server process.
//!
//! MCP's Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, as rmcp models it)
//! lets a client that declares it get a *task* for a `tools/call` instead of waiting
//! for the result: the server answers at once with the task's id (`resultType:
//! "task"`), and the client polls `tasks/get` until the task is `completed` (its
//! payload is the `CallToolResult`), `failed` or `cancelled`, and may send
//! `tasks/cancel`. Servers that keep tasks in memory lose them when they stop.
//!
//! A server made with [`McpServer::with_tasks`](crate::McpServer::with_tasks) keeps
//! each task as a durable run (`tackle::durable`) in a [`RunStore`] (SQLite by default,
//! the `tackle-sqlite` crate): the run `mcp-task-<id>` whose task is the call (tool
//! key, arguments, creation time), whose journal holds the door call (written ahead:
//! started, then finished), and whose status is the task's. So:
//!
//! * a server killed mid-task and started again on the same store answers `tasks/get`
//!   for the task, and goes on with it: a task whose process died is resumed when it
//!   is polled (or by [`McpServer::resume_tasks`](crate::McpServer::resume_tasks) at
//!   start), once its lease has lapsed ([`TaskOptions::lease`]). A call that finished
//!   before the crash is served from the journal; a call that was in flight runs again
//!   only when that is safe (it changes nothing, or its input carries its idempotency
//!   key), so its effect is applied once. Otherwise the task waits for an operator to
//!   say what became of it (`tackle runs resolve`), and says so in its status message;
//! * a call that needs approval waits for a decision recorded in the store (by any
//!   process: `tackle runs approve`); the task shows `working` with the status message
//!   `awaiting approval of <key>`, and goes on when polled after the decision;
//! * a tool error completes the task with an `isError` result, as a plain call
//!   answers; `failed` is kept for a task the server cannot go on with.
//!
//! Only clients that declare the extension get tasks; other clients' calls are
//! answered as before. A call with secret arguments (see `tackle::call`) is answered
//! at once too: a task keeps its call's arguments in the store to run it again, and
//! secrets are never stored. Task ids are random UUIDs (v4). A task is its maker's:
//! the client that made it (over HTTP with tokens or OAuth, its subject or its token's
//! fingerprint) and its grants are kept with it, another client neither sees nor
//! cancels it, and a resumed task runs with its maker's grants; a client also sees a
//! task only if its grants allow the task's tool. `tasks/update` is refused (tasks here
//! take no input from the client). Tasks are kept until removed from the store
//! (`ttlMs` is `null`), and `lastUpdatedAt` is the creation time (the store does not
//! keep when a run last changed).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::durable::{
    DurableError, DurableOptions, DurableRun, JournalEntry, Resolution, RunRecord, RunStatus,
    RunStore, DEFAULT_LEASE,
};
use tackle_core::replay::Outcome;
use tackle_core::{Capabilities, ToolErrorKind};
use tokio_util::sync::CancellationToken;

use crate::server::McpServer;

/// The prefix of a task's run id in the store.
pub const TASK_RUN_PREFIX: &str = "mcp-task-";

/// The error a task cancelled by its client ends with.
const CANCELLED: &str = "cancelled by the client (tasks/cancel)";

/// The longest task id a client may name (ids made here have 32 characters).
const MAX_TASK_ID: usize = 64;

/// How a server keeps its tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskOptions {
    /// The poll interval suggested to clients (`pollIntervalMs`; default 500 ms).
    pub poll_interval: Duration,
    /// How long a server process holds a task it drives before another process may
    /// take it over (renewed while it runs; default `tackle::durable::DEFAULT_LEASE`,
    /// 30 s): after a crash, the task goes on once this has lapsed.
    pub lease: Duration,
    /// The most tasks one server process drives at once (default 256): past it, calls
    /// are answered at once, as for a client that does not ask for tasks.
    pub max_running: usize,
}

impl Default for TaskOptions {
    fn default() -> TaskOptions {
        TaskOptions {
            poll_interval: Duration::from_millis(500),
            lease: DEFAULT_LEASE,
            max_running: 256,
        }
    }
}

impl TaskOptions {
    /// Sets the suggested poll interval.
    pub fn with_poll_interval(mut self, interval: Duration) -> TaskOptions {
        self.poll_interval = interval;
        self
    }

    /// Sets the lease.
    pub fn with_lease(mut self, lease: Duration) -> TaskOptions {
        self.lease = lease;
        self
    }

    /// Sets the most tasks one server process drives at once.
    pub fn with_max_running(mut self, max: usize) -> TaskOptions {
        self.max_running = max;
        self
    }
}

/// The call a task makes, as its run's task.
#[derive(Debug, Serialize, Deserialize)]
struct TaskCall {
    /// The tool's key.
    tool: String,
    /// The call's arguments (never secret ones: see the module docs).
    arguments: Value,
    /// When the task was made (RFC 3339).
    created_at: String,
    /// Who made it, when the server tells its clients apart (an OAuth subject, or a
    /// static token's fingerprint): only they see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    /// The grants its call is made with (the client's), also when resumed.
    #[serde(default)]
    grants: Capabilities,
}

/// A task this process drives: the claim's number, and what cancels its call.
struct Driven {
    claim: u64,
    cancel: CancellationToken,
}

/// A server's tasks: their store, and the tasks this process drives now.
pub(crate) struct Tasks {
    store: Arc<dyn RunStore>,
    options: TaskOptions,
    /// The tasks this process drives (or is about to).
    driving: Mutex<HashMap<String, Driven>>,
    /// Numbers the claims, so that a claim ends only its own entry.
    claims: AtomicU64,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn RunStore>, options: TaskOptions) -> Tasks {
        Tasks {
            store,
            options,
            driving: Mutex::default(),
            claims: AtomicU64::new(0),
        }
    }

    fn driving(&self) -> std::sync::MutexGuard<'_, HashMap<String, Driven>> {
        self.driving.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the task `id` for this process: `None` when it drives it already, or
    /// drives as many tasks as it may. The claim is taken before the task's run is
    /// opened, so a cancel that comes meanwhile finds it.
    fn claim(&self, id: &str) -> Option<(u64, CancellationToken)> {
        let mut driving = self.driving();
        if driving.contains_key(id) || driving.len() >= self.options.max_running {
            return None;
        }
        let claim = self.claims.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        driving.insert(
            id.to_owned(),
            Driven {
                claim,
                cancel: cancel.clone(),
            },
        );
        Some((claim, cancel))
    }

    /// Ends claim `claim` of the task `id` (and no later one).
    fn release(&self, id: &str, claim: u64) {
        let mut driving = self.driving();
        if driving.get(id).is_some_and(|d| d.claim == claim) {
            driving.remove(id);
        }
    }

    fn durable_options(&self) -> DurableOptions {
        DurableOptions::new().with_lease(self.options.lease)
    }

    /// The wire form of a task in `status`.
    fn task(&self, id: &str, status: TaskStatus, created_at: &str) -> Task {
        Task::new(id, status, created_at, created_at).with_poll_interval_ms(
            u64::try_from(self.options.poll_interval.as_millis()).unwrap_or(u64::MAX),
        )
    }

    /// Starts the call of `key` with `arguments` as a task of `server`; `None` when
    /// this process drives as many tasks as it may (the call is then answered at
    /// once).
    pub(crate) fn start(
        self: &Arc<Self>,
        server: &McpServer,
        key: &str,
        arguments: Value,
    ) -> Option<Result<CreateTaskResult, ErrorData>> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (claim, cancel) = self.claim(&id)?;
        let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let call = TaskCall {
            tool: key.to_owned(),
            arguments,
            created_at,
            owner: server.owner().map(str::to_owned),
            grants: server.context().capabilities().clone(),
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
        let created = CreateTaskResult::new(self.task(&id, TaskStatus::Working, &call.created_at));
        self.drive(server, &id, (claim, cancel), durable, call);
        Some(Ok(created))
    }

    /// Makes the task's call on `durable` (started or resumed) in a task of its own,
    /// with the grants it was made with, then ends the run with its outcome and the
    /// claim.
    fn drive(
        self: &Arc<Self>,
        server: &McpServer,
        id: &str,
        (claim, cancel): (u64, CancellationToken),
        durable: DurableRun,
        call: TaskCall,
    ) {
        let run = durable.run(server.runtime());
        let stop = run.cancellation_token();
        let ctx = server
            .context()
            .clone()
            .with_capabilities(call.grants.clone());
        let (tasks, id) = (Arc::clone(self), id.to_owned());
        tokio::spawn(async move {
            let work = durable.hold(run.call_report(&call.tool, call.arguments, &ctx));
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
                Ok(_) => Ok(()),
                Err(e) if e.kind() == ToolErrorKind::Cancelled && cancel.is_cancelled() => {
                    Err(CANCELLED.to_owned())
                }
                Err(e) => Err(e.to_string()),
            };
            if let Err(error) = durable.finish(outcome) {
                tracing::warn!(%error, "a task's end could not be saved; it goes on when polled");
            }
            tasks.release(&id, claim);
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
        Ok(GetTaskResult::new(
            self.status(server, id, record, call, unwrapped),
        ))
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
                        self.drive(server, id, claim, durable, call);
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

    /// The output of the task's call, from the run's journal: the last call of `key`
    /// that finished well, or that an operator said succeeded.
    fn output(&self, run_id: &str, key: &str) -> Result<Value, ErrorData> {
        let journal = self
            .store
            .journal(run_id)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut started: HashMap<(u32, u64), String> = HashMap::new();
        let mut output = None;
        for entry in journal {
            match entry {
                JournalEntry::Started { attempt, call } => {
                    started.insert((attempt, call.call), call.key);
                }
                JournalEntry::Finished { interaction, .. } if interaction.key == key => {
                    if let Outcome::Ok(value) = interaction.outcome {
                        output = Some(value);
                    }
                }
                JournalEntry::Resolved {
                    attempt,
                    call,
                    resolution: Resolution::Succeeded { output: value },
                } if started.get(&(attempt, call)).is_some_and(|k| k == key) => {
                    output = Some(value);
                }
                _ => {}
            }
        }
        output.ok_or_else(|| {
            ErrorData::internal_error(
                format!("the output of the task's call of `{key}` is not in its journal"),
                None,
            )
        })
    }
}

/// The run id of task `id`.
fn run_id(id: &str) -> String {
    format!("{TASK_RUN_PREFIX}{id}")
}

/// An id as an error repeats it.
fn clip(id: &str) -> &str {
    let mut end = id.len().min(MAX_TASK_ID);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
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

/// The status message of a task whose call waits for approval.
fn awaiting(record: &RunRecord, key: &str) -> String {
    match record.pending.first() {
        Some(pending) => format!(
            "awaiting approval of `{}` (request {}): decide it in the server's run store",
            pending.key, pending.binding
        ),
        None => format!("awaiting approval of `{key}`"),
    }
}

/// The status message of a task stopped by a call that may or may not have happened.
fn unknown_outcome(key: &str) -> String {
    format!(
        "stopped: the server stopped while `{key}` was running, and it is not safe to run again; an operator says what became of it (tackle runs resolve)"
    )
}

/// A JSON-RPC error as a task's `error` payload.
fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

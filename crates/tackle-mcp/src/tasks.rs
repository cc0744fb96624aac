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
//! task only if its grants allow the task's tool.
//!
//! The call of a task made by a client of the 2026-07-28 revision may ask that client
//! for input as any served call does (an elicitation, the client's model, its roots;
//! see [`crate::client`]): the task then shows `input_required` with the questions not
//! yet answered (`inputRequests`), the client answers them with `tasks/update`, and
//! the call goes on. The questions and answers are kept in the run store beside the
//! task (see [`crate::task_input`]), so a task resumed in another process gets its
//! answers too. A tool served with
//! [`McpServer::with_questions_first`](crate::McpServer::with_questions_first) asks
//! its first questions in the request instead, before the task is made. A task made
//! by a client of an earlier revision takes no input: `tasks/update` is acknowledged
//! and changes nothing. Tasks are kept until removed from the store
//! (`ttlMs` is `null`), and `lastUpdatedAt` is the creation time (the store does not
//! keep when a run last changed).
//!
//! This module keeps the tasks: their options, the call each records, the claims of
//! this process and the reading of a task's journal. The server's side (starting,
//! driving, answering and resuming them for a client) is in the `server` module.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{JsonObject, Task, TaskStatus};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::durable::{
    DurableOptions, JournalEntry, Resolution, RunRecord, RunStore, DEFAULT_LEASE,
};
use tackle_core::replay::Outcome;
use tackle_core::Capabilities;
use tokio_util::sync::CancellationToken;

/// The prefix of a task's run id in the store.
pub const TASK_RUN_PREFIX: &str = "mcp-task-";

/// The error a task cancelled by its client ends with.
pub(crate) const CANCELLED: &str = "cancelled by the client (tasks/cancel)";

/// How the error of a task whose tool panicked begins in the store: the task is then
/// `failed` (a server fault, JSON-RPC's internal error), not completed with an
/// `isError` result as a tool's own error completes it.
pub(crate) const PANICKED: &str = "the tool panicked: ";

/// The error of a task whose call asked its questions in the request that made it (a
/// tool served with [`McpServer::with_questions_first`](crate::McpServer::with_questions_first)):
/// the client is sent the questions, and its retry makes a task of its own.
pub(crate) const SUPERSEDED: &str = "superseded: the call asked its client for input in the request that made the task, and the client's retry makes a task of its own";

/// The longest task id a client may name (ids made here have 32 characters).
pub(crate) const MAX_TASK_ID: usize = 64;

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
    /// How long a task's call waits for its client to answer a question (default one
    /// hour): then the question fails, as a tool sees a client that did not answer.
    pub input_timeout: Duration,
}

impl Default for TaskOptions {
    fn default() -> TaskOptions {
        TaskOptions {
            poll_interval: Duration::from_millis(500),
            lease: DEFAULT_LEASE,
            max_running: 256,
            input_timeout: Duration::from_secs(3600),
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

    /// Sets how long a task's call waits for its client to answer a question.
    pub fn with_input_timeout(mut self, timeout: Duration) -> TaskOptions {
        self.input_timeout = timeout;
        self
    }

    /// Sets the most tasks one server process drives at once.
    pub fn with_max_running(mut self, max: usize) -> TaskOptions {
        self.max_running = max;
        self
    }
}

/// Whether a tool's calls become tasks for a client that declares the Tasks extension
/// (set with [`McpServer::with_task_support`](crate::McpServer::with_task_support)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: the call is answered at once, also to a client that declares tasks (a
    /// call too quick to be worth one).
    Forbidden,
    /// For a client that declares the extension; answered at once to others (the
    /// default of every tool of a server with tasks).
    #[default]
    Optional,
    /// Only as a task: a client that does not declare the extension is refused with
    /// MCP's "missing required client capability" (`-32021`).
    Required,
}

/// The call a task makes, as its run's task.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TaskCall {
    /// The tool's key.
    pub(crate) tool: String,
    /// The call's arguments (never secret ones: see the module docs).
    pub(crate) arguments: Value,
    /// When the task was made (RFC 3339).
    pub(crate) created_at: String,
    /// Who made it, when the server tells its clients apart (an OAuth subject, or a
    /// static token's fingerprint): only they see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The grants its call is made with (the client's), also when resumed.
    #[serde(default)]
    pub(crate) grants: Capabilities,
    /// What the client declared, when it made the task under MCP's 2026-07-28
    /// revision: the task's call may then ask it for input (see
    /// [`crate::task_input`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<Value>,
}

/// A task this process drives: the claim's number, and what cancels its call.
pub(crate) struct Driven {
    claim: u64,
    pub(crate) cancel: CancellationToken,
}

/// A server's tasks: their store, and the tasks this process drives now.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn RunStore>,
    options: TaskOptions,
    /// The tasks this process drives (or is about to).
    driving: Mutex<HashMap<String, Driven>>,
    /// Numbers the claims, so that a claim ends only its own entry.
    claims: AtomicU64,
    /// Rung when a client answers a task's question here (`tasks/update`).
    pub(crate) answered: Arc<tokio::sync::Notify>,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn RunStore>, options: TaskOptions) -> Tasks {
        Tasks {
            store,
            options,
            driving: Mutex::default(),
            claims: AtomicU64::new(0),
            answered: Arc::default(),
        }
    }

    pub(crate) fn driving(&self) -> std::sync::MutexGuard<'_, HashMap<String, Driven>> {
        self.driving.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims the task `id` for this process: `None` when it drives it already, or
    /// drives as many tasks as it may. The claim is taken before the task's run is
    /// opened, so a cancel that comes meanwhile finds it.
    pub(crate) fn claim(&self, id: &str) -> Option<(u64, CancellationToken)> {
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
    pub(crate) fn release(&self, id: &str, claim: u64) {
        let mut driving = self.driving();
        if driving.get(id).is_some_and(|d| d.claim == claim) {
            driving.remove(id);
        }
    }

    /// The inbox of task `id`, for one run of its call.
    pub(crate) fn inbox(&self, id: &str) -> crate::task_input::TaskInbox {
        crate::task_input::TaskInbox::new(
            Arc::clone(&self.store),
            id,
            Arc::clone(&self.answered),
            self.options.poll_interval,
            self.options.input_timeout,
        )
    }

    pub(crate) fn durable_options(&self) -> DurableOptions {
        DurableOptions::new().with_lease(self.options.lease)
    }

    /// The wire form of a task in `status`.
    pub(crate) fn task(&self, id: &str, status: TaskStatus, created_at: &str) -> Task {
        Task::new(id, status, created_at, created_at).with_poll_interval_ms(
            u64::try_from(self.options.poll_interval.as_millis()).unwrap_or(u64::MAX),
        )
    }

    /// The output of the task's call, from the run's journal: the last call of `key`
    /// that finished well, or that an operator said succeeded.
    pub(crate) fn output(&self, run_id: &str, key: &str) -> Result<Value, ErrorData> {
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
pub(crate) fn run_id(id: &str) -> String {
    format!("{TASK_RUN_PREFIX}{id}")
}

/// An id as an error repeats it.
pub(crate) fn clip(id: &str) -> &str {
    let mut end = id.len().min(MAX_TASK_ID);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
}

/// The status message of a task whose call waits for approval.
pub(crate) fn awaiting(record: &RunRecord, key: &str) -> String {
    match record.pending.first() {
        Some(pending) => format!(
            "awaiting approval of `{}` (request {}): decide it in the server's run store",
            pending.key, pending.binding
        ),
        None => format!("awaiting approval of `{key}`"),
    }
}

/// The status message of a task stopped by a call that may or may not have happened.
pub(crate) fn unknown_outcome(key: &str) -> String {
    format!(
        "stopped: the server stopped while `{key}` was running, and it is not safe to run again; an operator says what became of it (tackle runs resolve)"
    )
}

/// A JSON-RPC error as a task's `error` payload.
pub(crate) fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

//! Durable runs from a terminal: `cargo tackle runs --store PATH ...`.
//!
//! An operator's view of a SQLite run store (see `tackle_sqlite`): what runs there
//! are and where each stands, what each waits for, and the decisions only a person
//! can make. Resuming a run needs the program's tools and model, so it stays in the
//! program; everything else is here.
//!
//! | command | what it does |
//! |---|---|
//! | `list [--json]` | every run: status, attempts, steps, who holds it |
//! | `show RUN [--json]` | one run: its task, steps, pending approvals (each named by its request id), calls of unknown outcome |
//! | `approve RUN REQUEST [--key-file PATH]` | approves the pending request `REQUEST` (its id, as `show` prints it), signed with the approval key in `PATH` when given |
//! | `reject RUN REQUEST --reason TEXT [--key-file PATH]` | rejects it; the model reads the reason |
//! | `resolve RUN ATTEMPT/CALL (--output JSON \| --failed TEXT \| --retry)` | says what became of a call of unknown outcome |
//! | `export RUN FILE` | writes the run's journal as a cassette that replays it offline |
//! | `backup FILE` | a consistent copy of the store (SQLite's online backup, write-ahead log included) |
//!
//! A request is named by its id (the hash of its tool key and exact arguments), not
//! by its place in a list: a decision can never land on another request than the one
//! the operator read. Exit codes as the rest of the CLI: 3 when the store, the run or
//! the request does not exist (a request another operator decided first included), 5
//! when the store is damaged, 4 when a process drives the run (resolving waits), 1
//! when the run kept changing under the command, 2 for bad usage.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{json, Value};
use tackle_agent::durable::{
    ApprovalKey, Decision, DurableError, DurableRun, InFlight, Resolution, RunRecord, RunStatus,
    RunStore, StoreError,
};
use tackle_sqlite::SqliteStore;

use crate::exit::{CliError, Exit};
use crate::term::{escape_for_terminal, escape_json_for_terminal};

/// Prints one line of output built from the store's text (a task, an answer, an
/// error, arguments, a file name): escaped, so a run cannot drive the terminal.
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", escape_for_terminal(&format!($($arg)*)))
    };
}

/// What `cargo tackle runs` does.
#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// List every run: status, attempts, steps, who holds it.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one run: task, steps, pending approvals, calls of unknown outcome.
    Show {
        /// The run's id.
        run: String,
        /// Print the run's record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending request (its id, as `show` prints it).
    Approve {
        /// The run's id.
        run: String,
        /// The request's id, as `show` prints it.
        request: String,
        /// Sign the decision with the approval key in this file (its bytes, a
        /// trailing newline left out; at least 32), named by the file's stem: what a
        /// run that checks signatures requires.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
    },
    /// Reject a pending request (its id, as `show` prints it); the model reads the
    /// reason.
    Reject {
        /// The run's id.
        run: String,
        /// The request's id, as `show` prints it.
        request: String,
        /// Why: what the model is told.
        #[arg(long)]
        reason: String,
        /// Sign the decision with the approval key in this file (as for `approve`).
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
    },
    /// Say what became of a call of unknown outcome (`ATTEMPT/CALL`, as `show` names
    /// it): it happened with an output, it failed, or run it again.
    Resolve {
        /// The run's id.
        run: String,
        /// The call, as `ATTEMPT/CALL`.
        call: String,
        /// It happened, and this JSON is its output.
        #[arg(long, conflicts_with_all = ["failed", "retry"])]
        output: Option<String>,
        /// It failed (or must not happen): the run gets this error.
        #[arg(long, conflicts_with = "retry")]
        failed: Option<String>,
        /// It did not happen: run it again on resume.
        #[arg(long)]
        retry: bool,
    },
    /// Write the run's journal as a cassette file that replays it offline.
    Export {
        /// The run's id.
        run: String,
        /// The cassette to write.
        file: PathBuf,
    },
    /// Let a run of a restored backup write again: once what it did after the
    /// backup's moment is checked, and each write it held is resolved.
    AcceptRestore {
        /// The run's id.
        run: String,
    },
    /// Write a consistent copy of the store (safe while runs are written), marked as
    /// a backup: restored, its unfinished runs hold each write for an operator.
    Backup {
        /// The copy to write.
        file: PathBuf,
    },
}

fn store_error(error: StoreError) -> CliError {
    let exit = match &error {
        StoreError::Corrupt { .. } => Exit::BadData,
        StoreError::NotFound { .. } => Exit::NotFound,
        StoreError::Conflict { .. } => Exit::Failure,
        _ => Exit::Io,
    };
    CliError::new(exit, error)
}

fn durable_error(error: DurableError) -> CliError {
    let exit = match &error {
        DurableError::Store(e) => return store_error(e.clone()),
        DurableError::NotFound { .. }
        | DurableError::NoSuchApproval { .. }
        | DurableError::NotInFlight { .. } => Exit::NotFound,
        DurableError::Held { .. } | DurableError::LeaseLost { .. } => Exit::Refused,
        DurableError::Export(_) => Exit::Io,
        _ => Exit::Failure,
    };
    CliError::new(exit, error)
}

/// Opens an existing store: an operator's command never makes a new one.
fn open(path: &Path) -> Result<SqliteStore, CliError> {
    if !path.exists() {
        return Err(CliError::new(
            Exit::NotFound,
            format!("{}: no such store", path.display()),
        ));
    }
    SqliteStore::open(path).map_err(store_error)
}

fn load(store: &dyn RunStore, run: &str) -> Result<RunRecord, CliError> {
    store
        .load(run)
        .map_err(store_error)?
        .ok_or_else(|| CliError::new(Exit::NotFound, format!("there is no run `{run}`")))
}

fn status_name(status: &RunStatus) -> String {
    match status {
        RunStatus::Running => "running".into(),
        RunStatus::Paused => "paused".into(),
        RunStatus::Done => "done".into(),
        RunStatus::AwaitingApproval => "awaiting_approval".into(),
        RunStatus::Failed { error } => format!("failed: {error}"),
        RunStatus::Interrupted { error } => format!("interrupted: {error}"),
        RunStatus::UnknownOutcome { calls } => format!("unknown_outcome ({} call(s))", calls.len()),
    }
}

fn holder(record: &RunRecord) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    match &record.lease {
        Some(lease) if lease.holds_at(now) => {
            format!("{} ({} ms left)", lease.holder, lease.until_ms - now)
        }
        _ => "-".into(),
    }
}

/// Runs a `runs` command on the store at `path`.
pub(crate) fn execute(path: &Path, command: RunsCommand) -> Result<Exit, CliError> {
    let store = open(path)?;
    match command {
        RunsCommand::List { json } => list(&store, json),
        RunsCommand::Show { run, json } => show(&store, &run, json),
        RunsCommand::Approve {
            run,
            request,
            key_file,
        } => decide(&store, &run, &request, Decision::Approve, key_file),
        RunsCommand::Reject {
            run,
            request,
            reason,
            key_file,
        } => decide(
            &store,
            &run,
            &request,
            Decision::Reject { reason },
            key_file,
        ),
        RunsCommand::Resolve {
            run,
            call,
            output,
            failed,
            retry,
        } => resolve(&store, &run, &call, output, failed, retry),
        RunsCommand::Export { run, file } => {
            DurableRun::export_journal(&store, &run, &file).map_err(durable_error)?;
            say!("wrote {}", file.display());
            Ok(Exit::Success)
        }
        RunsCommand::AcceptRestore { run } => {
            DurableRun::accept_restore(&store, &run).map_err(durable_error)?;
            say!("run {run}: its writes run again from its next resume");
            Ok(Exit::Success)
        }
        RunsCommand::Backup { file } => {
            store.backup(&file).map_err(store_error)?;
            say!("backed {} up to {}", path.display(), file.display());
            Ok(Exit::Success)
        }
    }
}

fn list(store: &SqliteStore, json: bool) -> Result<Exit, CliError> {
    let mut rows = Vec::new();
    for id in store.runs().map_err(store_error)? {
        rows.push(load(store, &id)?);
    }
    if json {
        let rows: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "run_id": r.run_id,
                    "status": r.status,
                    "attempts": r.attempts,
                    "steps": r.state.as_ref().map_or(0, |s| s.step_index),
                    "pending": r.pending.len(),
                    "lease": r.lease,
                })
            })
            .collect();
        println!(
            "{}",
            escape_json_for_terminal(&Value::Array(rows).to_string())
        );
        return Ok(Exit::Success);
    }
    if rows.is_empty() {
        say!("no runs");
    }
    for r in &rows {
        say!(
            "{}  {}  attempt {}  {} step(s)  held by {}",
            r.run_id,
            status_name(&r.status),
            r.attempts,
            r.state.as_ref().map_or(0, |s| s.step_index),
            holder(r)
        );
    }
    Ok(Exit::Success)
}

fn show(store: &SqliteStore, run: &str, json: bool) -> Result<Exit, CliError> {
    let record = load(store, run)?;
    if json {
        let text = serde_json::to_string_pretty(&record).map_err(|e| CliError::new(Exit::Io, e))?;
        println!("{}", escape_json_for_terminal(&text));
        return Ok(Exit::Success);
    }
    say!("run {}: {}", record.run_id, status_name(&record.status));
    say!("task: {}", record.task);
    if let Some(restored) = &record.restored {
        say!(
            "restored from a backup taken at {} ms (Unix time): each write waits for an \
             operator until `accept-restore`",
            restored.backed_up_at_ms
        );
    }
    say!(
        "attempts: {}  held by: {}",
        record.attempts,
        holder(&record)
    );
    let journal = store.journal(run).map_err(store_error)?;
    say!("journal: {} entries", journal.len());
    if let Some(state) = &record.state {
        say!("steps: {}", state.step_index);
        for call in &state.tool_calls {
            let outcome = match (&call.result, &call.error) {
                (_, Some(error)) => format!("error: {error}"),
                (Some(result), None) => result.to_string(),
                (None, None) => "-".into(),
            };
            say!(
                "  step {}: {} {} -> {}",
                call.step,
                call.name,
                call.arguments,
                outcome
            );
        }
        if let Some(answer) = &state.final_answer {
            say!("answer: {answer}");
        }
    }
    if !record.pending.is_empty() {
        say!("pending approvals:");
        for p in &record.pending {
            say!("  request {}: {} {}", p.binding, p.key, p.arguments);
        }
    }
    for d in &record.decisions {
        let what = match &d.decision {
            Decision::Approve if d.used => "approved (used)".to_owned(),
            Decision::Approve => "approved".to_owned(),
            Decision::Reject { reason } => format!("rejected: {reason}"),
        };
        let mut signed = d
            .signature
            .as_ref()
            .map(|s| format!(" (signed with `{}`)", s.key_id))
            .unwrap_or_default();
        if let Some(by) = &d.decided_by {
            signed.push_str(&format!(" (by {by})"));
        }
        say!(
            "decided: {} {} {what}{signed}",
            d.request.key,
            d.request.arguments
        );
    }
    if let RunStatus::UnknownOutcome { calls } = &record.status {
        say!("calls of unknown outcome:");
        for c in calls {
            say!("  {}/{} {} {}", c.attempt, c.call, c.key, c.input);
        }
    }
    Ok(Exit::Success)
}

/// The approval key in `path`: its bytes (a trailing newline left out), named by the
/// file's stem.
fn approval_key(path: &Path) -> Result<ApprovalKey, CliError> {
    let mut secret = std::fs::read(path).map_err(|e| {
        CliError::new(
            Exit::Io,
            format!("the key file {} could not be read: {e}", path.display()),
        )
    })?;
    while secret.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        secret.pop();
    }
    let id = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    ApprovalKey::new(id, secret)
        .map_err(|e| CliError::new(Exit::Usage, format!("the key file {}: {e}", path.display())))
}

fn decide(
    store: &SqliteStore,
    run: &str,
    id: &str,
    decision: Decision,
    key_file: Option<PathBuf>,
) -> Result<Exit, CliError> {
    let key = key_file.as_deref().map(approval_key).transpose()?;
    let record = load(store, run)?;
    let request = record
        .pending
        .iter()
        .find(|p| p.binding == id)
        .ok_or_else(|| {
            CliError::new(
                Exit::NotFound,
                format!(
                    "the run `{run}` has no pending request `{id}` ({} pending; `show` lists them)",
                    record.pending.len()
                ),
            )
        })?;
    match &key {
        Some(key) => DurableRun::decide_signed(store, run, request, decision.clone(), key),
        None => DurableRun::decide(store, run, request, decision.clone()),
    }
    .map_err(durable_error)?;
    let verb = match decision {
        Decision::Approve => "approved",
        Decision::Reject { .. } => "rejected",
    };
    match &key {
        Some(key) => say!(
            "{verb} {} {} (signed with `{}`)",
            request.key,
            request.arguments,
            key.id()
        ),
        None => say!("{verb} {} {}", request.key, request.arguments),
    }
    Ok(Exit::Success)
}

fn resolve(
    store: &SqliteStore,
    run: &str,
    call: &str,
    output: Option<String>,
    failed: Option<String>,
    retry: bool,
) -> Result<Exit, CliError> {
    let usage = |m: String| CliError::new(Exit::Usage, m);
    let (attempt, number) = call
        .split_once('/')
        .and_then(|(a, c)| Some((a.parse::<u32>().ok()?, c.parse::<u64>().ok()?)))
        .ok_or_else(|| usage(format!("`{call}` is not ATTEMPT/CALL (say, 2/7)")))?;
    let resolution = match (output, failed, retry) {
        (Some(text), None, false) => Resolution::Succeeded {
            output: serde_json::from_str(&text)
                .map_err(|e| usage(format!("--output is not JSON: {e}")))?,
        },
        (None, Some(error), false) => Resolution::Failed { error },
        (None, None, true) => Resolution::Retry,
        _ => {
            return Err(usage(
                "say one of --output JSON, --failed TEXT or --retry".to_owned(),
            ))
        }
    };
    let record = load(store, run)?;
    let key = match &record.status {
        RunStatus::UnknownOutcome { calls } => calls
            .iter()
            .find(|c| c.attempt == attempt && c.call == number)
            .map(|c| c.key.clone()),
        _ => None,
    };
    let in_flight = InFlight {
        attempt,
        call: number,
        key: key.unwrap_or_default(),
        input: Value::Null,
    };
    DurableRun::resolve(store, run, &in_flight, resolution).map_err(durable_error)?;
    say!("resolved {attempt}/{number}");
    Ok(Exit::Success)
}

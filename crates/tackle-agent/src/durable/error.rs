//! Why a durable run could not start, resume or go on ([`DurableError`]).

use tackle_core::replay::CassetteError;

use super::store::{InFlight, PendingApproval, RunStatus, StoreError};
use super::DEFAULT_LEASE;
use crate::react::AgentError;
use crate::skill::SkillError;

/// Why a durable run could not start, resume or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// There is no run with this id.
    #[error("there is no run `{run_id}`")]
    NotFound {
        /// The id.
        run_id: String,
    },
    /// The run has ended; there is nothing to resume.
    #[error("the run `{run_id}` has ended ({status:?})")]
    Ended {
        /// The id.
        run_id: String,
        /// How it ended.
        status: RunStatus,
    },
    /// Another process holds the run (its [`Lease`](super::Lease)): it drives the run now, or died
    /// less than a lease ago. Try again once the lease has lapsed. The message gives
    /// the wait in seconds, rounded up, and says how the lease is set
    /// ([`DurableOptions::with_lease`](super::DurableOptions::with_lease)).
    #[error(
        "the run `{run_id}` is held by {} for {} more: another process is driving it, or \
         one that died still holds its lease until the lease lapses; open the run again \
         after that wait (the lease's length is set with `DurableOptions::with_lease`, \
         default {} s)",
        shown_holder(holder),
        shown_wait(*remaining_ms),
        DEFAULT_LEASE.as_secs()
    )]
    Held {
        /// The id.
        run_id: String,
        /// Who holds it.
        holder: String,
        /// How long the lease has left, in milliseconds.
        remaining_ms: u64,
    },
    /// This attempt drove already: resume the run for a new attempt.
    #[error("this attempt of the run `{run_id}` drove already: resume the run to go on")]
    Driven {
        /// The id.
        run_id: String,
    },
    /// This attempt's lease on the run lapsed, and another process took the run since
    /// (and may have driven it further): this attempt stops, having saved nothing.
    #[error(
        "this attempt's lease on the run `{run_id}` lapsed and another process took the \
         run since (it may have driven it further): this attempt stops, having saved \
         nothing; resume the run to go on from where it stands (a longer lease: \
         `DurableOptions::with_lease`)"
    )]
    LeaseLost {
        /// The id.
        run_id: String,
    },
    /// Others saved the run's record again and again while this save was made (it
    /// was given up), or the run changed after this attempt let it go: resume it.
    #[error("the run `{run_id}` kept changing while it was saved; try again")]
    Conflict {
        /// The id.
        run_id: String,
    },
    /// The run's journal could not be written, so the run stopped (status
    /// [`RunStatus::Interrupted`]); resume it once the store takes writes again.
    #[error("the run `{run_id}` stopped: its journal could not be written: {message}")]
    Journal {
        /// The id.
        run_id: String,
        /// The store's error.
        message: String,
    },
    /// Calls were in flight when the run's process died, and may or may not have
    /// happened: resolve each ([`DurableRun::resolve`](super::DurableRun::resolve)), then resume.
    #[error("the run `{run_id}` has {} call(s) of unknown outcome: {}", calls.len(), describe(calls))]
    UnknownOutcome {
        /// The id.
        run_id: String,
        /// The calls.
        calls: Vec<InFlight>,
    },
    /// The run waits for decisions on these requests ([`DurableRun::decide`](super::DurableRun::decide)).
    #[error("the run `{run_id}` waits for {} approval(s)", pending.len())]
    AwaitingApproval {
        /// The id.
        run_id: String,
        /// The requests.
        pending: Vec<PendingApproval>,
    },
    /// The resolved call is not in flight in this run.
    #[error("the run `{run_id}` has no call {call} of attempt {attempt} in flight")]
    NotInFlight {
        /// The id.
        run_id: String,
        /// The attempt.
        attempt: u32,
        /// The call's number.
        call: u64,
    },
    /// No such approval is pending in this run (it may have been decided already).
    #[error("the run `{run_id}` has no pending approval of `{key}` with {arguments}")]
    NoSuchApproval {
        /// The id.
        run_id: String,
        /// The tool's key.
        key: String,
        /// The arguments.
        arguments: String,
    },
    /// A decision in the run's store does not verify with the run's approval key
    /// (unsigned, another key's, or edited: see [`super::signing`]): its call was
    /// refused, and the run stops as `failed`.
    #[error("the run `{run_id}` holds a decision on `{key}` that is not signed by its approval key: {why}")]
    ForgedDecision {
        /// The id.
        run_id: String,
        /// The tool's key.
        key: String,
        /// Why it does not verify.
        why: super::SignatureError,
    },
    /// The agent failed (the run's status is then `failed`).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The skill could not run, or its answer is not its state.
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// The skill runs a workflow subgraph, not an agent: there is no ReAct loop to
    /// make durable.
    #[error("the skill `{site_id}` runs a workflow, not an agent")]
    NotAnAgent {
        /// The skill.
        site_id: String,
    },
    /// The cassette could not be exported.
    #[error(transparent)]
    Export(#[from] CassetteError),
}

/// A lease's holder as a message shows it: never an empty name.
fn shown_holder(holder: &str) -> String {
    if holder.trim().is_empty() {
        "an unnamed holder".to_owned()
    } else {
        format!("`{holder}`")
    }
}

/// A lease's time left as a message shows it: whole seconds rounded up, so a wait is
/// never shown shorter than it is, and never "0".
fn shown_wait(remaining_ms: u64) -> String {
    match remaining_ms.div_ceil(1000) {
        0 => "less than a second".to_owned(),
        1 => "1 second".to_owned(),
        seconds => format!("{seconds} seconds"),
    }
}

fn describe(calls: &[InFlight]) -> String {
    calls
        .iter()
        .map(|c| format!("`{}` (attempt {}, call {})", c.key, c.attempt, c.call))
        .collect::<Vec<_>>()
        .join(", ")
}

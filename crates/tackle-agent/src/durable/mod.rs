//! Durable runs: an agent run that survives its process.
//!
//! A run is data. Its [`RunRecord`] (run id, task, status, the [`ReactState`](crate::react::ReactState) at its last
//! step boundary, attempts) and its journal (every door call and model call, in order)
//! live in a [`RunStore`]. The journal is written ahead: each call is appended right
//! before it runs ([`JournalEntry::Started`]) and its outcome right after, before the
//! run uses it ([`JournalEntry::Finished`]). So a crash loses at most the calls in
//! flight, and the journal says which they were.
//!
//! Resuming a run ([`DurableRun::resume`], in any process) starts the same ReAct loop
//! again over a [journaled cassette](tackle_core::replay::journal) that holds the journal: every
//! completed call is served from it (model calls in their order, tool calls by key and
//! input), so no completed side effect runs twice and the loop, deterministic given
//! those outcomes, reaches the same step; from there it continues live, appending.
//!
//! A call that was in flight when the process died is run again only when that is
//! safe ([`CallStarted::rerun_safe`](tackle_core::replay::CallStarted::rerun_safe): it changes nothing, its input carries an
//! idempotency key, or it is a model completion), or when it kept a note of how far
//! it got ([`ToolContext::checkpoint`](tackle_core::ToolContext::checkpoint): the id of remote work it started, say): made
//! again, it is handed the note and goes on from it rather than starting again. Any other, a write without an
//! idempotency key that may or may not have happened, stops the resume with
//! [`DurableError::UnknownOutcome`] and the run's status
//! [`RunStatus::UnknownOutcome`]: an operator looks at the world, then
//! [`resolve`](DurableRun::resolve)s each call with what happened (its output, its
//! error) or asks for it to run again, and resumes.
//!
//! A durable run is a [`Run`](tackle_core::run::Run) whose journal is the store: [`DurableRun::drive`] makes
//! that run over a shared runtime (its cassette is the journal, its approver the
//! run's decisions), so there is nothing to wire by hand, and [`DurableRun::open`]
//! starts a run or resumes it, whichever the store says, in this process or another.
//!
//! **Approvals across processes.** A call that needs approval and has no decision yet
//! does not run: its request ([`PendingApproval`]: key, canonical arguments, binding) is
//! kept in the run's record, every pending call of a parallel step alike, and the run
//! stops at the end of the step with status [`RunStatus::AwaitingApproval`]. Any
//! process lists them ([`DurableRun::pending_approvals`]) and records a decision per
//! request ([`DurableRun::decide`]); a decision is bound to its request's key and exact
//! arguments, and applies to no other call. Resumed, the run replays to that step, an
//! approved call runs (its approval is then used up: the same call asked again waits
//! for a new decision), and a rejected one becomes a failed observation with the
//! reason. Decisions and resolutions are each one transaction over a versioned record:
//! two operators at once both land, or the loser is told.
//!
//! **One process at a time.** Opening a run takes its [`Lease`] ([`DEFAULT_LEASE`],
//! [`DurableOptions::with_lease`]); [`drive`](DurableRun::drive) renews it and lets it
//! go when it returns. Another process that opens the run meanwhile gets
//! [`DurableError::Held`]; once the lease of a process that died has lapsed, any
//! process takes the run over. A journal write that fails stops the run
//! ([`DurableError::Journal`], status [`RunStatus::Interrupted`]) before the model sees
//! anything the journal does not hold.
//!
//! **Backups and restores.** A store's backup (`tackle_sqlite::SqliteStore::backup`)
//! is the store as it was at one moment; the runs it copies that had not ended may
//! have gone on after it, making writes the copy does not hold. So the backup marks
//! each of them [`restored`](RunRecord::restored): resumed from a restored backup,
//! such a run replays to where the backup left it and goes on, but each write it
//! then makes (a call that is not [rerun-safe](tackle_core::replay::CallStarted::rerun_safe))
//! does not run: it waits, in flight, as an unknown outcome
//! ([`DurableError::UnknownOutcome`]) for an operator, who [`resolve`](DurableRun::resolve)s
//! it as for a crash (made, with its output; failed; or to be run again), until the
//! operator [`accept_restore`](DurableRun::accept_restore)s the run: from then on it
//! writes as any run does. Reads, model calls and calls with an idempotency key are
//! not held.
//!
//! The store is a trait: [`MemoryStore`] keeps runs in memory (tests); the
//! `tackle-sqlite` crate has the embedded default, one SQLite file; any store proves
//! itself with the [`conformance`] kit. A run's journal exports as an ordinary
//! cassette ([`DurableRun::export`], [`DurableRun::export_journal`]).
//!
//! ```
//! use std::sync::Arc;
//! use tackle::agent::model::{ChatResponse, ScriptedModel};
//! use tackle::agent::react::ReactSkill;
//! use tackle::durable::{DurableRun, MemoryStore, RunStatus, RunStore};
//! use tackle::{Runtime, ToolContext};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
//! let model = Arc::new(ScriptedModel::new([ChatResponse::text("Hello!")]));
//! let skill = ReactSkill::new(model, runtime.registry(), &[])?;
//! // Starts the run, or resumes it where a killed process left it.
//! let run = DurableRun::open(store.clone(), "run-1", "Say hello.")?;
//! let ctx = ToolContext::new().with_grant("llm:*");
//! let state = run.drive(&runtime, &skill, &ctx, None).await?;
//! assert_eq!(state.final_answer.as_deref(), Some("Hello!"));
//! assert_eq!(store.load("run-1")?.unwrap().status, RunStatus::Done);
//! assert_eq!(store.journal("run-1")?.len(), 2); // the model call: started, finished
//! # Ok(()) }
//! ```

// The module's files: this file the `DurableRun` handle; `open.rs` starting and
// resuming a run; `drive.rs` driving it; `operator.rs` what an operator does to a run
// no process drives (resolve, decide, abandon); `export.rs` its journal as a cassette;
// `attempt.rs` what one attempt holds and saves; `lease.rs` one process at a time;
// `journal.rs` the journal written ahead and read back; `approvals.rs` the run's
// approver; `error.rs` `DurableError`; `store.rs` the `RunStore` and what it keeps;
// `memory.rs` `MemoryStore`; `conformance.rs` the kit a store passes.
mod approvals;
mod attempt;
pub mod conformance;
mod drive;
mod error;
mod export;
mod journal;
mod lease;
mod memory;
mod open;
mod operator;
pub mod policy;
pub mod signing;
mod store;

use std::sync::Arc;
use std::time::Duration;

use tackle_core::approval::Approver;
use tackle_core::replay::Cassette;

use approvals::RunBook;
use attempt::Attempt;

pub use approvals::{ApprovalBook, PausingApprover};
pub use error::DurableError;
pub use lease::DurableOptions;
pub use memory::MemoryStore;
pub use policy::{ApprovalPolicy, PolicyDecision};
pub use signing::{ApprovalKey, SignatureError};
pub use store::{
    ApprovalRecord, Decision, DecisionSignature, InFlight, JournalEntry, Lease, PendingApproval,
    Resolution, Restored, RunRecord, RunStatus, RunStore, StoreError,
};

/// How long a lease lasts unless [`DurableOptions::with_lease`] says otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How many times a save that lost a race is made again over the fresh record before
/// [`DurableError::Conflict`].
const SAVE_ATTEMPTS: usize = 64;

/// One attempt of a durable run, holding the run while it lasts: its journal (the
/// cassette its [`Run`](tackle_core::run::Run)s record to, attached by
/// [`run`](Self::run) and [`drive`](Self::drive), never by hand). See the
/// [module docs](self).
pub struct DurableRun {
    attempt: Arc<Attempt>,
    cassette: Cassette,
}

impl std::fmt::Debug for DurableRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let record = self.attempt.record();
        f.debug_struct("DurableRun")
            .field("run_id", &record.run_id)
            .field("attempt", &record.attempts)
            .field("status", &record.status)
            .field("lease", &record.lease)
            .finish()
    }
}

impl Drop for DurableRun {
    fn drop(&mut self) {
        // Lets the run go at once rather than when the lease lapses. Best effort: a
        // process that dies holds it until then.
        let holds = {
            let record = self.attempt.record();
            record
                .lease
                .as_ref()
                .is_some_and(|l| l.holder == self.attempt.options.holder)
        };
        if holds {
            let _ = self.attempt.save(true, |_| {});
        }
    }
}

impl DurableRun {
    /// The run's id.
    pub fn run_id(&self) -> String {
        self.attempt.run_id()
    }

    /// The run's task.
    pub fn task(&self) -> String {
        self.attempt.record().task.clone()
    }

    /// This attempt's number: 1 for a new run, one more per resume.
    pub fn attempt(&self) -> u32 {
        self.attempt.record().attempts
    }

    /// The run's record as this attempt last saved or read it.
    pub fn record(&self) -> RunRecord {
        self.attempt.record().clone()
    }

    /// Lets the run go now (its lease ends): another process may open it at once.
    /// [`drive`](Self::drive) lets it go when it returns. An attempt let go drives
    /// only if nobody changed the run since ([`DurableError::Conflict`] otherwise:
    /// resume it).
    pub fn release(&self) -> Result<(), DurableError> {
        self.attempt.save(true, |_| {})
    }

    /// The approver of this run (the run made by [`run`](Self::run) asks it). A call
    /// with a decision gets it, and an approval is used up by the call it approves;
    /// a call without one is kept pending and does not run (see the
    /// [module docs](self)).
    pub fn approver(&self) -> impl Approver + 'static {
        PausingApprover(RunBook {
            attempt: Arc::clone(&self.attempt),
        })
    }

    /// The cassette of this attempt, over the run's journal.
    pub fn cassette(&self) -> Cassette {
        self.cassette.clone()
    }
}

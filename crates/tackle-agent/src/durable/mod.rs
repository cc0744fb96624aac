//! Durable runs: an agent run that survives its process.
//!
//! A run is data. Its [`RunRecord`] (run id, task, status, the [`ReactState`] at its last
//! step boundary, attempts) and its journal (every door call and model call, in order)
//! live in a [`RunStore`]. The journal is written ahead: each call is appended right
//! before it runs ([`JournalEntry::Started`]) and its outcome right after, before the
//! run uses it ([`JournalEntry::Finished`]). So a crash loses at most the calls in
//! flight, and the journal says which they were.
//!
//! Resuming a run ([`DurableRun::resume`], in any process) starts the same ReAct loop
//! again over a [journaled cassette](crate::replay::journal) that holds the journal: every
//! completed call is served from it (model calls in their order, tool calls by key and
//! input), so no completed side effect runs twice and the loop, deterministic given
//! those outcomes, reaches the same step; from there it continues live, appending.
//!
//! A call that was in flight when the process died is run again only when that is
//! safe ([`CallStarted::rerun_safe`]: it changes nothing, its input carries an
//! idempotency key, or it is a model completion), or when it kept a note of how far
//! it got ([`ToolContext::checkpoint`](tackle_core::ToolContext::checkpoint): the id of remote work it started, say): made
//! again, it is handed the note and goes on from it rather than starting again. Any other, a write without an
//! idempotency key that may or may not have happened, stops the resume with
//! [`DurableError::UnknownOutcome`] and the run's status
//! [`RunStatus::UnknownOutcome`]: an operator looks at the world, then
//! [`resolve`](DurableRun::resolve)s each call with what happened (its output, its
//! error) or asks for it to run again, and resumes.
//!
//! A durable run is a [`Run`] whose journal is the store: [`DurableRun::drive`] makes
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

pub mod conformance;
mod memory;
mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::model::ChatModel;
use crate::agent::react::{AgentError, ReactSkill, ReactState, StepControl, StopReason};
use crate::agent::skill::{Skill, SkillError, SkillRun, SkillState};
use crate::approval::{ApprovalFuture, ApprovalRequest, Approver};
use crate::call::Runtime;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::replay::{
    CallStarted, Cassette, CassetteConfig, CassetteError, Interaction, InteractionKind, Journal,
    Outcome,
};
use crate::run::Run;

pub use memory::MemoryStore;
pub use store::{
    ApprovalRecord, Decision, InFlight, JournalEntry, Lease, PendingApproval, Resolution,
    RunRecord, RunStatus, RunStore, StoreError,
};

/// How long a lease lasts unless [`DurableOptions::with_lease`] says otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How many times a save that lost a race is made again over the fresh record before
/// [`DurableError::Conflict`].
const SAVE_ATTEMPTS: usize = 64;

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
    /// Another process holds the run (its [`Lease`]): it drives the run now, or died
    /// less than a lease ago. Try again once the lease has lapsed. The message gives
    /// the wait in seconds, rounded up, and says how the lease is set
    /// ([`DurableOptions::with_lease`]).
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
    /// happened: resolve each ([`DurableRun::resolve`]), then resume.
    #[error("the run `{run_id}` has {} call(s) of unknown outcome: {}", calls.len(), describe(calls))]
    UnknownOutcome {
        /// The id.
        run_id: String,
        /// The calls.
        calls: Vec<InFlight>,
    },
    /// The run waits for decisions on these requests ([`DurableRun::decide`]).
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

/// What a journal holds, read for a resume.
struct Replayed {
    /// The outcomes to serve, in journal order.
    recorded: Vec<Interaction>,
    /// Calls in flight that may not run again.
    unknown: Vec<InFlight>,
    /// Calls in flight that kept a note of how far they got (key, input, last note):
    /// made again, they go on from it.
    resumable: Vec<(String, Value, Value)>,
    /// The next call number free in any attempt.
    next_call: u64,
}

/// Reads a journal: its outcomes (finished calls, and calls an operator resolved)
/// and the calls still in flight.
fn replay(journal: Vec<JournalEntry>) -> Replayed {
    let mut started: BTreeMap<(u32, u64), CallStarted> = BTreeMap::new();
    let mut settled: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut notes: BTreeMap<(u32, u64), Value> = BTreeMap::new();
    let mut recorded = Vec::new();
    let mut next_call = 0;
    for entry in journal {
        match entry {
            JournalEntry::Started { attempt, call } => {
                next_call = next_call.max(call.call + 1);
                started.insert((attempt, call.call), call);
            }
            JournalEntry::Finished {
                attempt,
                interaction,
            } => {
                next_call = next_call.max(interaction.call + 1);
                settled.insert((attempt, interaction.call));
                recorded.push(interaction);
            }
            JournalEntry::Resolved {
                attempt,
                call,
                resolution,
            } => {
                settled.insert((attempt, call));
                let Some(call) = started.get(&(attempt, call)) else {
                    continue;
                };
                let outcome = match resolution {
                    Resolution::Succeeded { output } => Outcome::Ok(output),
                    Resolution::Failed { error } => Outcome::Error(ToolError::Execution {
                        key: call.key.clone(),
                        message: error,
                    }),
                    Resolution::Retry => continue,
                };
                recorded.push(Interaction {
                    call: call.call,
                    key: call.key.clone(),
                    kind: call.kind,
                    policy: call.policy,
                    input: call.input.clone(),
                    outcome,
                    shaped: false,
                });
            }
            JournalEntry::Progress {
                attempt,
                call,
                note,
            } => {
                notes.insert((attempt, call), note);
            }
        }
    }
    // A call in flight that kept a note goes on from it when made again. The call
    // made again (the first of a later attempt with the same key and input) took the
    // note over and keeps it at once: from then on the earlier call is settled by it,
    // so a note is handed on once, and only the newest.
    let latest: BTreeMap<(String, String), u32> =
        started
            .iter()
            .fold(BTreeMap::new(), |mut latest, ((attempt, _), call)| {
                let at = latest
                    .entry((call.key.clone(), crate::canonical::canonical(&call.input)))
                    .or_insert(*attempt);
                *at = (*at).max(*attempt);
                latest
            });
    let mut resumable = Vec::new();
    started.retain(|at, call| {
        if settled.contains(at) {
            return false;
        }
        let Some(note) = notes.remove(at) else {
            return true;
        };
        let taken_over = latest
            .get(&(call.key.clone(), crate::canonical::canonical(&call.input)))
            .is_some_and(|attempt| *attempt > at.0);
        if !taken_over {
            resumable.push((call.key.clone(), call.input.clone(), note));
        }
        false
    });
    let unknown = started
        .into_iter()
        .filter(|(_, call)| !call.rerun_safe)
        .map(|((attempt, number), call)| InFlight {
            attempt,
            call: number,
            key: call.key,
            input: call.input,
        })
        .collect();
    Replayed {
        recorded,
        unknown,
        resumable,
        next_call,
    }
}

/// Milliseconds since the Unix epoch, as leases count.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A name for this process's leases: its pid, the time and a counter.
fn holder_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("pid{}-{nanos:x}-{n}", std::process::id())
}

/// [`DurableError::Held`] while any process holds `record` (its lease has not lapsed).
fn not_held(record: &RunRecord, run_id: &str) -> Result<(), DurableError> {
    match record.lease.as_ref().filter(|l| l.holds_at(now_ms())) {
        Some(lease) => Err(DurableError::Held {
            run_id: run_id.to_owned(),
            holder: lease.holder.clone(),
            remaining_ms: lease.until_ms.saturating_sub(now_ms()),
        }),
        None => Ok(()),
    }
}

/// Whether `record` is held by someone other than `holder` at `now`: the error, if so.
fn held_by_other(record: &RunRecord, holder: &str, now: u64) -> Option<DurableError> {
    match &record.lease {
        Some(lease) if lease.holder != holder && lease.holds_at(now) => Some(DurableError::Held {
            run_id: record.run_id.clone(),
            holder: lease.holder.clone(),
            remaining_ms: lease.until_ms - now,
        }),
        _ => None,
    }
}

fn load(store: &dyn RunStore, run_id: &str) -> Result<RunRecord, DurableError> {
    store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
        run_id: run_id.to_owned(),
    })
}

/// Loads the run, applies `change` and saves it, again over a fresh read when another
/// writer saved in between: what an operator's decision or resolution is. `change`
/// returns the journal entries to append in the same transaction.
fn update<T>(
    store: &dyn RunStore,
    run_id: &str,
    mut change: impl FnMut(
        &mut RunRecord,
        &[JournalEntry],
    ) -> Result<(Vec<JournalEntry>, T), DurableError>,
    needs_journal: bool,
) -> Result<T, DurableError> {
    for _ in 0..SAVE_ATTEMPTS {
        let mut record = load(store, run_id)?;
        let journal = if needs_journal {
            store.journal(run_id)?
        } else {
            Vec::new()
        };
        let (entries, value) = change(&mut record, &journal)?;
        record.journaled = record.journaled.max(journal.len() as u64) + entries.len() as u64;
        match store.save(&record, &entries) {
            Ok(()) => return Ok(value),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DurableError::Conflict {
        run_id: run_id.to_owned(),
    })
}

/// Options of a durable run's attempt.
#[derive(Clone, Debug)]
pub struct DurableOptions {
    lease: Duration,
    holder: String,
}

impl Default for DurableOptions {
    fn default() -> DurableOptions {
        DurableOptions {
            lease: DEFAULT_LEASE,
            holder: holder_name(),
        }
    }
}

impl DurableOptions {
    /// The default options: a [`DEFAULT_LEASE`] lease, held under a name made for
    /// this attempt.
    pub fn new() -> DurableOptions {
        DurableOptions::default()
    }

    /// How long the attempt's lease lasts (renewed at a third of it while the run is
    /// driven): how soon another process may take over a run whose process died. A
    /// zero lease is taken as one millisecond.
    pub fn with_lease(mut self, lease: Duration) -> DurableOptions {
        self.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// The name the lease is held under (say, the worker's host and pid), shown to a
    /// process refused with [`DurableError::Held`].
    pub fn with_holder(mut self, holder: impl Into<String>) -> DurableOptions {
        self.holder = holder.into();
        self
    }

    /// How long the lease lasts.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The name the lease is held under.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}

/// What one attempt shares between its handle, its journal and its approver: the
/// record as last saved, the lease, and whether the journal failed.
struct Attempt {
    store: Arc<dyn RunStore>,
    record: Mutex<RunRecord>,
    options: DurableOptions,
    /// Journal entries known to be in the store.
    journaled: AtomicU64,
    /// Why the journal failed, once it has: the attempt then runs nothing more.
    failure: Mutex<Option<String>>,
    /// Whether [`DurableRun::drive`] ran (an attempt drives once).
    driven: AtomicBool,
    /// Fires when the lease is lost: the run's calls stop.
    lost: CancellationToken,
    /// The runtime the attempt's calls run on (set by [`DurableRun::run`]): where the
    /// schema fingerprints of the tools it calls are read.
    runtime: Mutex<Weak<Runtime>>,
    /// Tools the journal called before this attempt whose fingerprints the record
    /// lacks (a run journaled before records kept them): noted when the attempt
    /// drives.
    unnoted: Mutex<Vec<String>>,
}

impl Attempt {
    /// An attempt at `record` (as last read or created), not yet holding the run
    /// unless the record says so.
    fn new(store: Arc<dyn RunStore>, record: RunRecord, options: DurableOptions) -> Arc<Attempt> {
        Arc::new(Attempt {
            store,
            journaled: AtomicU64::new(record.journaled),
            record: Mutex::new(record),
            options,
            failure: Mutex::new(None),
            driven: AtomicBool::new(false),
            lost: CancellationToken::new(),
            runtime: Mutex::new(Weak::new()),
            unnoted: Mutex::new(Vec::new()),
        })
    }

    /// Notes in the record the schema fingerprint of each tool of `keys` it lacks, as
    /// the runtime's tool of that key has it now (a key the runtime does not hold is
    /// left out): one save, and only when something is new. Made before a tool's
    /// first call runs, so an export of the journal has the fingerprint of every tool
    /// it called (a cassette's `tools`).
    fn note_schemas<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<(), DurableError> {
        let missing: Vec<&str> = {
            let record = self.record();
            keys.into_iter()
                .filter(|key| !record.tools.contains_key(*key))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade();
        let Some(runtime) = runtime else {
            return Ok(());
        };
        let found: Vec<(String, String)> = missing
            .into_iter()
            .filter_map(|key| Some((key.to_owned(), schema_fingerprint(&runtime, key)?)))
            .collect();
        if found.is_empty() {
            return Ok(());
        }
        self.save(false, |record| record.tools.extend(found.iter().cloned()))
    }

    fn record(&self) -> MutexGuard<'_, RunRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn fail(&self, message: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure.get_or_insert(message);
    }

    fn run_id(&self) -> String {
        self.record().run_id.clone()
    }

    /// Applies `change` to the record and saves it, holding the lease (renewed) unless
    /// `release`. A save that lost a race to another writer (an operator's decision)
    /// is made again over the fresh record, unless someone else holds the run now:
    /// then [`DurableError::Held`], and the attempt's calls stop.
    fn save(
        &self,
        release: bool,
        mut change: impl FnMut(&mut RunRecord),
    ) -> Result<(), DurableError> {
        let mut record = self.record();
        for _ in 0..SAVE_ATTEMPTS {
            let mut next = record.clone();
            change(&mut next);
            let now = now_ms();
            next.lease = (!release).then(|| Lease {
                holder: self.options.holder.clone(),
                until_ms: now.saturating_add(millis(self.options.lease)),
            });
            next.journaled = self.journaled.load(Ordering::SeqCst);
            match self.store.save(&next, &[]) {
                Ok(()) => {
                    next.version += 1;
                    *record = next;
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => {
                    let fresh = load(&*self.store, &record.run_id)?;
                    if let Some(held) = held_by_other(&fresh, &self.options.holder, now) {
                        self.lost.cancel();
                        return Err(held);
                    }
                    let holder = self.options.holder.as_str();
                    let ours = |r: &RunRecord| r.lease.as_ref().is_some_and(|l| l.holder == holder);
                    if ours(&record) && !ours(&fresh) {
                        // Our lease lapsed and someone else took the run, then let
                        // it go: what we hold is stale.
                        self.lost.cancel();
                        return Err(DurableError::Held {
                            run_id: fresh.run_id.clone(),
                            holder: fresh.lease.map_or_else(String::new, |l| l.holder),
                            remaining_ms: 0,
                        });
                    }
                    *record = fresh;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(DurableError::Conflict {
            run_id: record.run_id.clone(),
        })
    }

    /// Renews the lease when less than half of it is left.
    fn keep_lease(&self) -> Result<(), DurableError> {
        let left = {
            let record = self.record();
            match &record.lease {
                Some(lease) if lease.holder == self.options.holder => {
                    lease.until_ms.saturating_sub(now_ms())
                }
                _ => 0,
            }
        };
        if left > millis(self.options.lease) / 2 {
            return Ok(());
        }
        self.save(false, |_| {})
    }
}

/// Appends a cassette's calls to a run's journal, while the attempt holds the run.
struct StoreJournal {
    attempt: Arc<Attempt>,
    number: u32,
    run_id: String,
}

impl StoreJournal {
    /// Notes the schema fingerprint of the tool `key` before its first call runs
    /// (see [`Attempt::note_schemas`]). A record that cannot be saved stops the run,
    /// as a journal write that fails does.
    fn note_schema(&self, key: &str) -> Result<(), String> {
        if let Some(failure) = self.attempt.failure() {
            return Err(failure);
        }
        self.attempt.note_schemas([key]).map_err(|e| {
            let message = e.to_string();
            self.attempt.fail(message.clone());
            message
        })
    }

    fn append(&self, entry: &JournalEntry) -> Result<(), String> {
        if let Some(failure) = self.attempt.failure() {
            return Err(failure);
        }
        let written = self
            .attempt
            .keep_lease()
            .map_err(|e| e.to_string())
            .and_then(|()| {
                self.attempt
                    .store
                    .append(&self.run_id, entry)
                    .map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => {
                self.attempt.journaled.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            Err(message) => {
                // The run stops: nothing the journal does not hold goes on.
                self.attempt.fail(message.clone());
                Err(message)
            }
        }
    }
}

impl Journal for StoreJournal {
    fn started(&self, call: &CallStarted) -> Result<(), String> {
        if call.kind == InteractionKind::Tool {
            self.note_schema(&call.key)?;
        }
        self.append(&JournalEntry::Started {
            attempt: self.number,
            call: call.clone(),
        })
    }

    fn finished(&self, interaction: &Interaction) -> Result<(), String> {
        self.append(&JournalEntry::Finished {
            attempt: self.number,
            interaction: interaction.clone(),
        })
    }

    fn progressed(&self, call: u64, note: &Value) -> Result<(), String> {
        self.append(&JournalEntry::Progress {
            attempt: self.number,
            call,
            note: note.clone(),
        })
    }
}

/// The approver of a durable run: decisions from the run's record, and every request
/// without one kept there as pending.
struct RunApprover {
    attempt: Arc<Attempt>,
}

impl Approver for RunApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let decided = self
            .attempt
            .record()
            .decisions
            .iter()
            .find(|d| d.answers(request))
            .map(|d| d.decision.clone());
        let answer = match decided {
            Some(Decision::Approve) => {
                // Used up before the call runs: it approves this call and no other.
                let mut used = false;
                let saved = self.attempt.save(false, |record| {
                    used = false;
                    if let Some(d) = record
                        .decisions
                        .iter_mut()
                        .find(|d| d.answers(request) && d.decision == Decision::Approve)
                    {
                        d.used = true;
                        used = true;
                    }
                    if !used && !record.pending.iter().any(|p| p.binds(request)) {
                        record.pending.push(PendingApproval::of(request));
                    }
                });
                match saved {
                    Ok(()) if used => request.approve(),
                    Ok(()) => request.deny(format!(
                        "awaiting approval (request {}): the run stops after this step",
                        request.binding
                    )),
                    Err(e) => request.deny(format!("the approval could not be used: {e}")),
                }
            }
            Some(Decision::Reject { reason }) => request.deny(reason),
            None => {
                let saved = self.attempt.save(false, |record| {
                    if !record.pending.iter().any(|p| p.binds(request)) {
                        record.pending.push(PendingApproval::of(request));
                    }
                });
                match saved {
                    Ok(()) => request.deny(format!(
                        "awaiting approval (request {}): the run stops after this step",
                        request.binding
                    )),
                    Err(e) => request.deny(format!("the approval request could not be kept: {e}")),
                }
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

/// One attempt of a durable run, holding the run while it lasts: its journal (the
/// cassette its [`Run`]s record to, attached by
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
    /// Starts a new run `run_id` of `task` in `store`, holding it.
    pub fn start(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        DurableRun::start_with(store, run_id, task, DurableOptions::default())
    }

    /// [`start`](Self::start) with `options`.
    pub fn start_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        let mut record = RunRecord::new(run_id, task);
        record.lease = Some(Lease {
            holder: options.holder.clone(),
            until_ms: now_ms().saturating_add(millis(options.lease)),
        });
        store.create(&record)?;
        let number = record.attempts;
        let attempt = Attempt::new(store, record, options);
        Ok(DurableRun::with_attempt(attempt, number, Vec::new(), 0))
    }

    /// Resumes the run `run_id` of `store`, in this process: a new attempt over the
    /// run's journal, holding the run. Fails with [`DurableError::Held`] while another
    /// process holds it, with [`DurableError::UnknownOutcome`] (and records that
    /// status) when calls in flight may not run again, with
    /// [`DurableError::AwaitingApproval`] while a request waits for its decision, and
    /// with [`DurableError::Ended`] when the run is done or failed.
    pub fn resume(store: Arc<dyn RunStore>, run_id: &str) -> Result<DurableRun, DurableError> {
        DurableRun::resume_with(store, run_id, DurableOptions::default())
    }

    /// [`resume`](Self::resume) with `options`.
    pub fn resume_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        let record = load(&*store, run_id)?;
        if matches!(record.status, RunStatus::Done | RunStatus::Failed { .. }) {
            return Err(DurableError::Ended {
                run_id: run_id.to_owned(),
                status: record.status,
            });
        }
        if let Some(held) = held_by_other(&record, &options.holder, now_ms()) {
            return Err(held);
        }
        // Take the run first: of several processes resuming it at once, one does.
        let attempt = Attempt::new(Arc::clone(&store), record, options);
        take(&attempt)?;
        let status = attempt.record().status.clone();
        if matches!(status, RunStatus::Done | RunStatus::Failed { .. }) {
            // It ended while this process was taking it.
            let _ = attempt.save(true, |_| {});
            return Err(DurableError::Ended {
                run_id: run_id.to_owned(),
                status,
            });
        }
        let journal = store.journal(run_id)?;
        let expected = attempt.record().journaled;
        if (journal.len() as u64) < expected {
            let _ = attempt.save(true, |_| {});
            return Err(StoreError::Corrupt {
                message: format!(
                    "the journal of run `{run_id}` has {} entries, and had {expected} at its \
                     last save: entries are missing",
                    journal.len()
                ),
            }
            .into());
        }
        attempt
            .journaled
            .store(journal.len() as u64, Ordering::SeqCst);
        let replayed = replay(journal);
        if !replayed.unknown.is_empty() {
            let calls = replayed.unknown.clone();
            attempt.save(true, |r| {
                r.status = RunStatus::UnknownOutcome {
                    calls: calls.clone(),
                }
            })?;
            return Err(DurableError::UnknownOutcome {
                run_id: run_id.to_owned(),
                calls: replayed.unknown,
            });
        }
        let pending = attempt.record().pending.clone();
        if !pending.is_empty() {
            // Not every request has its decision: resuming now would stop again.
            attempt.save(true, |r| r.status = RunStatus::AwaitingApproval)?;
            return Err(DurableError::AwaitingApproval {
                run_id: run_id.to_owned(),
                pending,
            });
        }
        attempt.save(false, |r| {
            r.attempts = r.attempts.saturating_add(1);
            r.status = RunStatus::Running;
        })?;
        let number = attempt.record().attempts;
        let run = DurableRun::with_attempt(attempt, number, replayed.recorded, replayed.next_call);
        run.cassette.resume_progress(replayed.resumable);
        Ok(run)
    }

    /// Resumes the run `run_id` when the store has it, else starts it with `task`:
    /// what a process that may have been restarted calls.
    pub fn open(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        DurableRun::open_with(store, run_id, task, DurableOptions::default())
    }

    /// [`open`](Self::open) with `options`.
    pub fn open_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        if store.load(run_id)?.is_some() {
            return DurableRun::resume_with(store, run_id, options);
        }
        match DurableRun::start_with(Arc::clone(&store), run_id, task, options.clone()) {
            // Another process started it first.
            Err(DurableError::Store(StoreError::Exists { .. })) => {
                DurableRun::resume_with(store, run_id, options)
            }
            other => other,
        }
    }

    /// Records what became of a call in flight of the run `run_id` (one listed by
    /// [`DurableError::UnknownOutcome`]), so the run can resume: the journal entry and
    /// the run's status change in one transaction.
    pub fn resolve(
        store: &dyn RunStore,
        run_id: &str,
        call: &InFlight,
        resolution: Resolution,
    ) -> Result<(), DurableError> {
        update(
            store,
            run_id,
            |record, journal| {
                // A process drives the run: its calls in flight are its own.
                not_held(record, run_id)?;
                let in_flight = replay(journal.to_vec())
                    .unknown
                    .iter()
                    .any(|c| c.attempt == call.attempt && c.call == call.call);
                if !in_flight {
                    return Err(DurableError::NotInFlight {
                        run_id: run_id.to_owned(),
                        attempt: call.attempt,
                        call: call.call,
                    });
                }
                if let RunStatus::UnknownOutcome { calls } = &record.status {
                    let left: Vec<InFlight> = calls
                        .iter()
                        .filter(|c| !(c.attempt == call.attempt && c.call == call.call))
                        .cloned()
                        .collect();
                    record.status = if left.is_empty() {
                        RunStatus::Paused
                    } else {
                        RunStatus::UnknownOutcome { calls: left }
                    };
                }
                let entry = JournalEntry::Resolved {
                    attempt: call.attempt,
                    call: call.call,
                    resolution: resolution.clone(),
                };
                Ok((vec![entry], ()))
            },
            true,
        )
    }

    /// Ends the run `run_id`, which no process drives, as [`RunStatus::Failed`] with
    /// `error` (a cancel by whoever asked for the run), in one transaction: its
    /// pending approvals are dropped, and it cannot be resumed. [`DurableError::Held`]
    /// while a process holds it; [`DurableError::Ended`] when it has ended.
    pub fn abandon(store: &dyn RunStore, run_id: &str, error: &str) -> Result<(), DurableError> {
        update(
            store,
            run_id,
            |record, _| {
                not_held(record, run_id)?;
                if matches!(record.status, RunStatus::Done | RunStatus::Failed { .. }) {
                    return Err(DurableError::Ended {
                        run_id: run_id.to_owned(),
                        status: record.status.clone(),
                    });
                }
                record.pending.clear();
                record.status = RunStatus::Failed {
                    error: error.to_owned(),
                };
                Ok((Vec::new(), ()))
            },
            false,
        )
    }

    fn with_attempt(
        attempt: Arc<Attempt>,
        number: u32,
        recorded: Vec<Interaction>,
        first_call: u64,
    ) -> DurableRun {
        let run_id = attempt.run_id();
        {
            let record = attempt.record();
            let mut unnoted = attempt
                .unnoted
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for interaction in &recorded {
                let key = &interaction.key;
                if interaction.kind == InteractionKind::Tool
                    && !record.tools.contains_key(key)
                    && !unnoted.contains(key)
                {
                    unnoted.push(key.clone());
                }
            }
        }
        let journal = Arc::new(StoreJournal {
            attempt: Arc::clone(&attempt),
            number,
            run_id: run_id.clone(),
        });
        let cassette = Cassette::journaled(
            run_id,
            recorded,
            first_call,
            journal,
            CassetteConfig::new().with_env_overrides(false),
        );
        DurableRun { attempt, cassette }
    }

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
        RunApprover {
            attempt: Arc::clone(&self.attempt),
        }
    }

    /// The approvals the run `run_id` waits for.
    pub fn pending_approvals(
        store: &dyn RunStore,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, DurableError> {
        Ok(load(store, run_id)?.pending)
    }

    /// Records `decision` on the pending request `request` of the run `run_id`, in one
    /// transaction that another operator's decision cannot undo. The decision is bound
    /// to the request's key and exact arguments; an approval is used up by the call it
    /// approves. Once every pending request has one, the run can be resumed. A request
    /// decided already (by another operator at the same moment, say) is
    /// [`DurableError::NoSuchApproval`].
    pub fn decide(
        store: &dyn RunStore,
        run_id: &str,
        request: &PendingApproval,
        decision: Decision,
    ) -> Result<(), DurableError> {
        update(
            store,
            run_id,
            |record, _| {
                let at = record
                    .pending
                    .iter()
                    .position(|p| p.key == request.key && p.arguments == request.arguments)
                    .ok_or_else(|| DurableError::NoSuchApproval {
                        run_id: run_id.to_owned(),
                        key: request.key.clone(),
                        arguments: request.arguments.clone(),
                    })?;
                let request = record.pending.remove(at);
                record.decisions.push(ApprovalRecord {
                    request,
                    decision: decision.clone(),
                    used: false,
                });
                if record.pending.is_empty() && record.status == RunStatus::AwaitingApproval {
                    record.status = RunStatus::Paused;
                }
                Ok((Vec::new(), ()))
            },
            false,
        )
    }

    /// The cassette of this attempt, over the run's journal.
    pub fn cassette(&self) -> Cassette {
        self.cassette.clone()
    }

    /// This attempt as a [`Run`] over `runtime`: its id is the run's, its cassette
    /// the journal (every door call and model call made on it is journaled), its
    /// approver the run's decisions, and its calls stop when the attempt loses the
    /// run (its lease lapsed and another process took it). [`drive`](Self::drive)
    /// makes its calls on it; code that makes calls of its own does too.
    pub fn run(&self, runtime: &Arc<Runtime>) -> Run {
        *self
            .attempt
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(runtime);
        Run::new(runtime)
            .with_id(self.run_id())
            .with_cassette(self.cassette.clone())
            .with_approver(self.approver())
            .with_cancellation(self.attempt.lost.child_token())
    }

    /// Runs `skill` on the run's task with `ctx`, checkpointing the run's state at
    /// each step boundary and renewing the run's lease while it runs. With
    /// `pause_after = Some(n)`, the run stops at the first step boundary after `n`
    /// steps, status [`RunStatus::Paused`]; otherwise it runs to its end
    /// ([`RunStatus::Done`], or [`RunStatus::Failed`] with the error). A journal write
    /// that fails stops the run at once: [`DurableError::Journal`], status
    /// [`RunStatus::Interrupted`], and the model is not asked again. When it returns,
    /// the run is let go.
    ///
    /// An attempt drives once: to go on after a pause, [`resume`](Self::resume) the
    /// run (a new attempt, over the journal as it is now). A second `drive` of the
    /// same attempt is [`DurableError::Driven`].
    pub async fn drive(
        &self,
        runtime: &Arc<Runtime>,
        skill: &ReactSkill,
        ctx: &ToolContext,
        pause_after: Option<usize>,
    ) -> Result<ReactState, DurableError> {
        if let Some(message) = self.attempt.failure() {
            return self.interrupted(message);
        }
        if self.attempt.driven.swap(true, Ordering::SeqCst) {
            return Err(DurableError::Driven {
                run_id: self.run_id(),
            });
        }
        take(&self.attempt)?;
        let run = self.run(runtime);
        let unnoted = std::mem::take(
            &mut *self
                .attempt
                .unnoted
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.attempt
            .note_schemas(unnoted.iter().map(String::as_str))?;
        let task = self.task();
        // Steps up to the last checkpoint replay from the journal: saved already.
        let saved = self
            .attempt
            .record()
            .state
            .as_ref()
            .map_or(0, |s| s.step_index);
        let mut failed_checkpoint: Option<DurableError> = None;
        let attempt = &self.attempt;
        let mut observe = |state: &ReactState| {
            if attempt.failure().is_some() || attempt.lost.is_cancelled() {
                return StepControl::Pause;
            }
            let pending = !attempt.record().pending.is_empty();
            if state.step_index > saved || pending {
                if let Err(e) = attempt.save(false, |r| r.state = Some(state.clone())) {
                    failed_checkpoint = Some(e);
                    return StepControl::Pause;
                }
                if pending {
                    // A call of the last step waits for a decision.
                    return StepControl::Pause;
                }
            }
            match pause_after {
                Some(n) if state.step_index >= n => StepControl::Pause,
                _ => StepControl::Continue,
            }
        };
        let outcome = self
            .hold(skill.run_observed(&run, &task, ctx, &mut observe))
            .await;
        if let Some(e) = failed_checkpoint {
            if !matches!(e, DurableError::Held { .. }) {
                let _ = self.attempt.save(true, |_| {});
            }
            return Err(e);
        }
        if let Some(message) = self.attempt.failure() {
            return self.interrupted(message);
        }
        if self.attempt.lost.is_cancelled() {
            // Someone else holds the run now: nothing of ours is saved.
            return Err(self.lost()?);
        }
        let mut result = match outcome {
            Ok(state) => Ok(state),
            Err(error) => Err(DurableError::Agent(error)),
        };
        self.attempt.save(true, |record| match &mut result {
            Ok(state) => {
                let paused = !state.done
                    && pause_after.is_some_and(|n| state.step_index >= n)
                    && matches!(state.stop_reason, Some(StopReason::Paused { .. }));
                record.status = if !record.pending.is_empty() {
                    state.stop_reason = Some(StopReason::AwaitingApproval);
                    RunStatus::AwaitingApproval
                } else if paused {
                    RunStatus::Paused
                } else {
                    RunStatus::Done
                };
                record.state = Some(state.clone());
            }
            Err(error) => {
                record.status = RunStatus::Failed {
                    error: error.to_string(),
                };
            }
        })?;
        result
    }

    /// Runs `work` (calls of its own on [`run`](Self::run), for a run that is not an
    /// agent loop) while renewing the run's lease, as [`drive`](Self::drive) does. When
    /// the lease is lost to another process, the run's calls are cancelled and `work`
    /// ends as they do. Then end the run with [`finish`](Self::finish).
    pub async fn hold<F: std::future::Future>(&self, work: F) -> F::Output {
        tokio::pin!(work);
        let period = (self.attempt.options.lease / 3).max(Duration::from_millis(1));
        loop {
            tokio::select! {
                outcome = &mut work => return outcome,
                () = tokio::time::sleep(period) => {
                    match self.attempt.save(false, |_| {}) {
                        Ok(()) => {}
                        Err(DurableError::Held { .. }) => self.attempt.lost.cancel(),
                        Err(error) => tracing::warn!(
                            run = %self.run_id(),
                            %error,
                            "the run's lease could not be renewed; it is tried again"
                        ),
                    }
                }
            }
        }
    }

    /// Ends a run whose calls were made by code of its own (see [`hold`](Self::hold)),
    /// and lets it go: [`RunStatus::Done`] when `outcome` is `Ok`,
    /// [`RunStatus::Failed`] with the error otherwise. A run whose calls wait for
    /// approval ([`pending_approvals`](Self::pending_approvals)) is not ended: it stops
    /// with [`RunStatus::AwaitingApproval`], to be resumed once they are decided. A
    /// journal that failed stops it as [`drive`](Self::drive) does
    /// ([`DurableError::Journal`], status [`RunStatus::Interrupted`]), and an attempt
    /// that lost the run saves nothing ([`DurableError::Held`]).
    pub fn finish(&self, outcome: Result<(), String>) -> Result<RunStatus, DurableError> {
        if let Some(message) = self.attempt.failure() {
            self.interrupted(message)?;
        }
        if self.attempt.lost.is_cancelled() {
            return Err(self.lost()?);
        }
        let mut status = RunStatus::Running;
        self.attempt.save(true, |record| {
            record.status = if !record.pending.is_empty() {
                RunStatus::AwaitingApproval
            } else {
                match &outcome {
                    Ok(()) => RunStatus::Done,
                    Err(error) => RunStatus::Failed {
                        error: error.clone(),
                    },
                }
            };
            status = record.status.clone();
        })?;
        Ok(status)
    }

    /// Why this attempt lost the run: who holds it now (or a conflict, once let go).
    fn lost(&self) -> Result<DurableError, DurableError> {
        let record = load(&*self.attempt.store, &self.run_id())?;
        Ok(
            held_by_other(&record, &self.attempt.options.holder, now_ms()).unwrap_or(
                DurableError::Conflict {
                    run_id: record.run_id,
                },
            ),
        )
    }

    /// Ends an attempt whose journal failed: status `interrupted` when the store
    /// takes it, and the error.
    fn interrupted(&self, message: String) -> Result<ReactState, DurableError> {
        let status = RunStatus::Interrupted {
            error: message.clone(),
        };
        let _ = self.attempt.save(true, |r| r.status = status.clone());
        Err(DurableError::Journal {
            run_id: self.run_id(),
            message,
        })
    }

    /// Runs the agent skill `skill` as this run, with `model` over `runtime`: as
    /// [`drive`](Self::drive) to the end, then reads the answer as the skill's state
    /// `S`, as [`Skill::run`] does.
    pub async fn drive_skill<S: SkillState>(
        &self,
        runtime: &Arc<Runtime>,
        skill: &Skill,
        model: Arc<dyn ChatModel>,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, DurableError> {
        if !skill.runs_as_agent() {
            return Err(DurableError::NotAnAgent {
                site_id: skill.site_id(),
            });
        }
        skill.enter(runtime, ctx).await?;
        let react = skill.react(model, &runtime.tools())?;
        let state = self.drive(runtime, &react, ctx, None).await?;
        Ok(skill.answer(state)?)
    }

    /// Writes the run's calls so far (the journal's outcomes, then this attempt's) as
    /// a cassette file at `path`, which replays the run offline.
    pub fn export(&self, path: &Path) -> Result<(), DurableError> {
        self.cassette.export_with(path, expand)?;
        let tools = self.attempt.record().tools.clone();
        with_fingerprints(path, &tools)
    }

    /// Writes the journal of the run `run_id` (its completed and resolved calls, in
    /// order) as a cassette file at `path`, from any process and without holding the
    /// run: what an operator exports. The cassette's `tools` holds the schema
    /// fingerprint of each tool called, as the run noted it before the tool's first
    /// call, so `cargo tackle cassette verify` accepts the file and its replay reports
    /// a tool whose schema changed since.
    pub fn export_journal(
        store: &dyn RunStore,
        run_id: &str,
        path: &Path,
    ) -> Result<(), DurableError> {
        let record = load(store, run_id)?;
        let replayed = replay(store.journal(run_id)?);
        let cassette = Cassette::journaled(
            run_id.to_owned(),
            replayed.recorded,
            replayed.next_call,
            Arc::new(Unwritable),
            CassetteConfig::new().with_env_overrides(false),
        );
        cassette.export_with(path, expand)?;
        with_fingerprints(path, &record.tools)
    }
}

/// The schema fingerprint of the tool `key` names in `runtime` (fixed or live), as
/// the door records it in a cassette's `tools`.
fn schema_fingerprint(runtime: &Runtime, key: &str) -> Option<String> {
    if let Some(tool) = runtime.registry().get(key) {
        return Some(tool.schema_fingerprint().to_owned());
    }
    let live = runtime.live_tools().snapshot();
    let tool = live.get(key)?;
    Some(tool.schema_fingerprint().to_owned())
}

/// Adds to the exported cassette at `path` the fingerprint the run noted of each tool
/// it calls and whose fingerprint it lacks (a cassette made from a journal knows only
/// the fingerprints of the calls its attempt made). Rewritten only when one is added.
fn with_fingerprints(path: &Path, noted: &BTreeMap<String, String>) -> Result<(), DurableError> {
    let mut file = crate::replay::load(path)?;
    let mut added = false;
    for interaction in &file.interactions {
        if interaction.kind != InteractionKind::Tool || file.tools.contains_key(&interaction.key) {
            continue;
        }
        if let Some(fingerprint) = noted.get(&interaction.key) {
            file.tools
                .insert(interaction.key.clone(), fingerprint.clone());
            added = true;
        }
    }
    if added {
        crate::replay::file::save(path, &file)?;
    }
    Ok(())
}

/// The journal's model requests made whole again, for a cassette file.
fn expand(interactions: &mut [Interaction]) {
    crate::agent::model::expand_requests(
        interactions
            .iter_mut()
            .filter(|i| i.kind == crate::replay::InteractionKind::Operation)
            .map(|i| &mut i.input),
    );
}

/// The journal of a cassette only read: it takes no call.
struct Unwritable;

impl Journal for Unwritable {
    fn started(&self, _: &CallStarted) -> Result<(), String> {
        Err("this cassette is an export: it runs nothing".to_owned())
    }

    fn finished(&self, _: &Interaction) -> Result<(), String> {
        Err("this cassette is an export: it runs nothing".to_owned())
    }
}

/// Takes the run for `attempt` (or keeps it): [`DurableError::Held`] when another
/// process holds it.
fn take(attempt: &Attempt) -> Result<(), DurableError> {
    let stale = {
        let record = attempt.record();
        if let Some(held) = held_by_other(&record, &attempt.options.holder, now_ms()) {
            return Err(held);
        }
        let holder = attempt.options.holder.as_str();
        let holds = record.lease.as_ref().is_some_and(|l| l.holder == holder);
        // An attempt that let the run go holds no claim on what the run became since:
        // it may take it back only as it left it.
        (!holds).then(|| (record.run_id.clone(), record.version))
    };
    if let Some((run_id, version)) = stale {
        let stored = load(&*attempt.store, &run_id)?;
        if stored.version != version {
            if let Some(held) = held_by_other(&stored, &attempt.options.holder, now_ms()) {
                return Err(held);
            }
            return Err(DurableError::Conflict { run_id });
        }
    }
    attempt.save(false, |_| {})
}

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
//! idempotency key, or it is a model completion). Any other, a write without an
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
//! approved call runs, and a rejected one becomes a failed observation with the reason.
//!
//! The store is a trait: [`MemoryStore`] keeps runs in memory (tests); the
//! `tackle-sqlite` crate has the embedded default, one SQLite file. A run's journal
//! exports as an ordinary cassette ([`DurableRun::export`]).
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

mod memory;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::model::ChatModel;
use crate::agent::react::{AgentError, ReactSkill, ReactState, StepControl, StopReason};
use crate::agent::skill::{Skill, SkillError, SkillRun, SkillState};
use crate::approval::{ApprovalFuture, ApprovalRequest, Approver};
use crate::call::Runtime;
use crate::canonical::canonical;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::replay::{
    CallStarted, Cassette, CassetteConfig, CassetteError, Interaction, Journal, Outcome,
};
use crate::run::Run;

pub use memory::MemoryStore;

/// Where runs and their journals are kept. See the [module docs](self).
///
/// Each method is one durable step: when it returns `Ok`, what it wrote survives a
/// crash of the process.
pub trait RunStore: Send + Sync {
    /// Adds a new run; [`StoreError::Exists`] when the id is taken.
    fn create(&self, record: &RunRecord) -> Result<(), StoreError>;
    /// The run's record, if there is such a run.
    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;
    /// Replaces the run's record.
    fn save(&self, record: &RunRecord) -> Result<(), StoreError>;
    /// Appends an entry to the run's journal.
    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError>;
    /// The run's journal, in the order it was written.
    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError>;
    /// The ids of every run, sorted.
    fn runs(&self) -> Result<Vec<String>, StoreError>;
}

/// Why a store failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A run with this id exists already.
    #[error("a run `{run_id}` exists already")]
    Exists {
        /// The id.
        run_id: String,
    },
    /// The store could not be read or written.
    #[error("the run store failed: {message}")]
    Io {
        /// What failed.
        message: String,
    },
    /// What the store holds cannot be read.
    #[error("the run store holds something unreadable: {message}")]
    Corrupt {
        /// What is wrong.
        message: String,
    },
}

/// A run as the store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id, unique in its store.
    pub run_id: String,
    /// What the agent was asked.
    pub task: String,
    /// Where the run stands.
    pub status: RunStatus,
    /// The run's state at its last step boundary, or at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ReactState>,
    /// How many times the run was started: 1, plus one per resume.
    pub attempts: u32,
    /// Calls waiting for a decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingApproval>,
    /// Decisions made, each bound to one request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<ApprovalRecord>,
}

/// A call waiting for approval, as any process reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The tool's key.
    pub key: String,
    /// The validated arguments, as canonical JSON: what a decision is bound to.
    pub arguments: String,
    /// The binding's hash (hex), for logs and for naming the request.
    pub binding: String,
}

impl PendingApproval {
    /// The pending form of `request`.
    pub fn of(request: &ApprovalRequest) -> PendingApproval {
        PendingApproval {
            key: request.key.clone(),
            arguments: canonical(&request.input),
            binding: request.binding.to_string(),
        }
    }

    /// Whether this is the request of `request`'s call: the same key and the same
    /// canonical arguments.
    pub fn binds(&self, request: &ApprovalRequest) -> bool {
        self.key == request.key && self.arguments == canonical(&request.input)
    }
}

/// A decision on one [`PendingApproval`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it; the model reads the reason.
    Reject {
        /// Why.
        reason: String,
    },
}

/// A decision and the request it was made for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The request.
    pub request: PendingApproval,
    /// The decision.
    pub decision: Decision,
}

impl RunRecord {
    /// A new run's record: running, first attempt, nothing pending.
    pub fn new(run_id: impl Into<String>, task: impl Into<String>) -> RunRecord {
        RunRecord {
            run_id: run_id.into(),
            task: task.into(),
            status: RunStatus::Running,
            state: None,
            attempts: 1,
            pending: Vec::new(),
            decisions: Vec::new(),
        }
    }
}

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// Started and not ended: running now, or its process died.
    Running,
    /// Stopped at a step boundary, to be resumed.
    Paused,
    /// Ended: answered, or stopped by its error budget or step limit (the state says).
    Done,
    /// A step asked for approvals that no one has given yet; the record lists them.
    AwaitingApproval,
    /// Ended with an error.
    Failed {
        /// The error.
        error: String,
    },
    /// A resume found calls in flight that may or may not have happened and are not
    /// safe to run again: an operator [resolves](DurableRun::resolve) each.
    UnknownOutcome {
        /// The calls.
        calls: Vec<InFlight>,
    },
}

/// A call that started and has no outcome in the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// The attempt it was made in.
    pub attempt: u32,
    /// Its number in that attempt.
    pub call: u64,
    /// The tool's key.
    pub key: String,
    /// Its input.
    pub input: Value,
}

/// One entry of a run's journal. Stored externally tagged
/// (`{"started": {"attempt": 1, "call": {...}}}`): read without buffering, as entries
/// hold whole conversations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalEntry {
    /// A call was about to run.
    Started {
        /// The attempt.
        attempt: u32,
        /// The call.
        call: CallStarted,
    },
    /// A call finished.
    Finished {
        /// The attempt.
        attempt: u32,
        /// The call and its outcome.
        interaction: Interaction,
    },
    /// An operator said what became of a call in flight.
    Resolved {
        /// The attempt the call was made in.
        attempt: u32,
        /// Its number in that attempt.
        call: u64,
        /// What became of it.
        resolution: Resolution,
    },
}

/// What an operator says became of a call in flight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "resolution", rename_all = "snake_case")]
pub enum Resolution {
    /// It happened, with this output.
    Succeeded {
        /// The output.
        output: Value,
    },
    /// It failed, or did not happen and should not: the run gets this error.
    Failed {
        /// The error.
        error: String,
    },
    /// It did not happen: run it again.
    Retry,
}

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
    /// No such approval is pending in this run.
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
    /// The next call number free in any attempt.
    next_call: u64,
}

/// Reads a journal: its outcomes (finished calls, and calls an operator resolved)
/// and the calls still in flight.
fn replay(journal: Vec<JournalEntry>) -> Replayed {
    let mut started: BTreeMap<(u32, u64), CallStarted> = BTreeMap::new();
    let mut settled: BTreeSet<(u32, u64)> = BTreeSet::new();
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
        }
    }
    let unknown = started
        .into_iter()
        .filter(|(at, call)| !settled.contains(at) && !call.rerun_safe)
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
        next_call,
    }
}

/// Appends a cassette's calls to a run's journal.
struct StoreJournal {
    store: Arc<dyn RunStore>,
    run_id: String,
    attempt: u32,
}

impl Journal for StoreJournal {
    fn started(&self, call: &CallStarted) -> Result<(), String> {
        let entry = JournalEntry::Started {
            attempt: self.attempt,
            call: call.clone(),
        };
        self.store
            .append(&self.run_id, &entry)
            .map_err(|e| e.to_string())
    }

    fn finished(&self, interaction: &Interaction) -> Result<(), String> {
        let entry = JournalEntry::Finished {
            attempt: self.attempt,
            interaction: interaction.clone(),
        };
        self.store
            .append(&self.run_id, &entry)
            .map_err(|e| e.to_string())
    }
}

/// One attempt of a durable run: its cassette (give it to the runtime the run's agent
/// uses) and [`drive`](Self::drive). See the [module docs](self).
pub struct DurableRun {
    store: Arc<dyn RunStore>,
    record: Arc<Mutex<RunRecord>>,
    cassette: Cassette,
}

/// The approver of a durable run: decisions from the run's record, and every request
/// without one kept there as pending.
struct RunApprover {
    store: Arc<dyn RunStore>,
    record: Arc<Mutex<RunRecord>>,
}

impl Approver for RunApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let mut record = self.record.lock().unwrap_or_else(PoisonError::into_inner);
        let decided = record
            .decisions
            .iter()
            .find(|d| d.request.binds(request))
            .map(|d| d.decision.clone());
        let answer = match decided {
            Some(Decision::Approve) => request.approve(),
            Some(Decision::Reject { reason }) => request.deny(reason),
            None => {
                if !record.pending.iter().any(|p| p.binds(request)) {
                    record.pending.push(PendingApproval::of(request));
                }
                match self.store.save(&record) {
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

impl std::fmt::Debug for DurableRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let record = self.record();
        f.debug_struct("DurableRun")
            .field("run_id", &record.run_id)
            .field("attempt", &record.attempts)
            .field("status", &record.status)
            .finish()
    }
}

impl DurableRun {
    /// Starts a new run `run_id` of `task` in `store`.
    pub fn start(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        let record = RunRecord::new(run_id, task);
        store.create(&record)?;
        Ok(DurableRun::new_attempt(store, record, Vec::new(), 0))
    }

    /// Resumes the run `run_id` of `store`, in this process: a new attempt over the
    /// run's journal. Fails with [`DurableError::UnknownOutcome`] (and records that
    /// status) when calls in flight may not run again, and with
    /// [`DurableError::Ended`] when the run is done or failed.
    pub fn resume(store: Arc<dyn RunStore>, run_id: &str) -> Result<DurableRun, DurableError> {
        let mut record = store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
            run_id: run_id.to_owned(),
        })?;
        if matches!(record.status, RunStatus::Done | RunStatus::Failed { .. }) {
            return Err(DurableError::Ended {
                run_id: run_id.to_owned(),
                status: record.status,
            });
        }
        let replayed = replay(store.journal(run_id)?);
        if !replayed.unknown.is_empty() {
            record.status = RunStatus::UnknownOutcome {
                calls: replayed.unknown.clone(),
            };
            store.save(&record)?;
            return Err(DurableError::UnknownOutcome {
                run_id: run_id.to_owned(),
                calls: replayed.unknown,
            });
        }
        if !record.pending.is_empty() {
            // Not every request has its decision: resuming now would stop again.
            record.status = RunStatus::AwaitingApproval;
            store.save(&record)?;
            return Err(DurableError::AwaitingApproval {
                run_id: run_id.to_owned(),
                pending: record.pending,
            });
        }
        record.attempts = record.attempts.saturating_add(1);
        record.status = RunStatus::Running;
        store.save(&record)?;
        Ok(DurableRun::new_attempt(
            store,
            record,
            replayed.recorded,
            replayed.next_call,
        ))
    }

    /// Resumes the run `run_id` when the store has it, else starts it with `task`:
    /// what a process that may have been restarted calls.
    pub fn open(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        if store.load(run_id)?.is_some() {
            DurableRun::resume(store, run_id)
        } else {
            DurableRun::start(store, run_id, task)
        }
    }

    /// Records what became of a call in flight of the run `run_id` (one listed by
    /// [`DurableError::UnknownOutcome`]), so the run can resume.
    pub fn resolve(
        store: &dyn RunStore,
        run_id: &str,
        call: &InFlight,
        resolution: Resolution,
    ) -> Result<(), DurableError> {
        let record = store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
            run_id: run_id.to_owned(),
        })?;
        let in_flight = replay(store.journal(run_id)?)
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
        store.append(
            run_id,
            &JournalEntry::Resolved {
                attempt: call.attempt,
                call: call.call,
                resolution,
            },
        )?;
        if let RunStatus::UnknownOutcome { calls } = &record.status {
            let left: Vec<InFlight> = calls
                .iter()
                .filter(|c| !(c.attempt == call.attempt && c.call == call.call))
                .cloned()
                .collect();
            let mut record = record.clone();
            record.status = if left.is_empty() {
                RunStatus::Paused
            } else {
                RunStatus::UnknownOutcome { calls: left }
            };
            store.save(&record)?;
        }
        Ok(())
    }

    fn new_attempt(
        store: Arc<dyn RunStore>,
        record: RunRecord,
        recorded: Vec<Interaction>,
        first_call: u64,
    ) -> DurableRun {
        let journal = Arc::new(StoreJournal {
            store: Arc::clone(&store),
            run_id: record.run_id.clone(),
            attempt: record.attempts,
        });
        let cassette = Cassette::journaled(
            record.run_id.clone(),
            recorded,
            first_call,
            journal,
            CassetteConfig::new().with_env_overrides(false),
        );
        DurableRun {
            store,
            record: Arc::new(Mutex::new(record)),
            cassette,
        }
    }

    fn record(&self) -> std::sync::MutexGuard<'_, RunRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's id.
    pub fn run_id(&self) -> String {
        self.record().run_id.clone()
    }

    /// The run's task.
    pub fn task(&self) -> String {
        self.record().task.clone()
    }

    /// This attempt's number: 1 for a new run, one more per resume.
    pub fn attempt(&self) -> u32 {
        self.record().attempts
    }

    /// The approver of this run (the run made by [`run`](Self::run) asks it). A call
    /// with a decision gets it; one without is kept pending and does not run (see
    /// the [module docs](self)).
    pub fn approver(&self) -> impl Approver + 'static {
        RunApprover {
            store: Arc::clone(&self.store),
            record: Arc::clone(&self.record),
        }
    }

    /// The approvals the run `run_id` waits for.
    pub fn pending_approvals(
        store: &dyn RunStore,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, DurableError> {
        let record = store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
            run_id: run_id.to_owned(),
        })?;
        Ok(record.pending)
    }

    /// Records `decision` on the pending request `request` of the run `run_id`. The
    /// decision is bound to the request's key and exact arguments. Once every pending
    /// request has one, the run can be resumed.
    pub fn decide(
        store: &dyn RunStore,
        run_id: &str,
        request: &PendingApproval,
        decision: Decision,
    ) -> Result<(), DurableError> {
        let mut record = store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
            run_id: run_id.to_owned(),
        })?;
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
        record.decisions.push(ApprovalRecord { request, decision });
        if record.pending.is_empty() && record.status == RunStatus::AwaitingApproval {
            record.status = RunStatus::Paused;
        }
        store.save(&record)?;
        Ok(())
    }

    /// The cassette of this attempt, over the run's journal.
    pub fn cassette(&self) -> Cassette {
        self.cassette.clone()
    }

    /// This attempt as a [`Run`] over `runtime`: its id is the run's, its cassette
    /// the journal (every door call and model call made on it is journaled), its
    /// approver the run's decisions. [`drive`](Self::drive) makes its calls on it;
    /// code that makes calls of its own does too.
    pub fn run(&self, runtime: &Arc<Runtime>) -> Run {
        Run::new(runtime)
            .with_id(self.run_id())
            .with_cassette(self.cassette.clone())
            .with_approver(self.approver())
    }

    /// Runs `skill` on the run's task with `ctx`, checkpointing the run's state at
    /// each step boundary. With `pause_after = Some(n)`, the run stops at the first
    /// step boundary after `n` steps, status [`RunStatus::Paused`]; otherwise it runs
    /// to its end ([`RunStatus::Done`], or [`RunStatus::Failed`] with the error).
    pub async fn drive(
        &self,
        runtime: &Arc<Runtime>,
        skill: &ReactSkill,
        ctx: &ToolContext,
        pause_after: Option<usize>,
    ) -> Result<ReactState, DurableError> {
        let run = self.run(runtime);
        let task = self.task();
        // Steps up to the last checkpoint replay from the journal: saved already.
        let saved = self.record().state.as_ref().map_or(0, |s| s.step_index);
        let mut failed_checkpoint: Option<StoreError> = None;
        let mut observe = |state: &ReactState| {
            let mut record = self.record();
            if state.step_index <= saved && record.pending.is_empty() {
                return match pause_after {
                    Some(n) if state.step_index >= n => StepControl::Pause,
                    _ => StepControl::Continue,
                };
            }
            record.state = Some(state.clone());
            if let Err(e) = self.store.save(&record) {
                failed_checkpoint = Some(e);
                return StepControl::Pause;
            }
            if !record.pending.is_empty() {
                // A call of the last step waits for a decision.
                return StepControl::Pause;
            }
            match pause_after {
                Some(n) if state.step_index >= n => StepControl::Pause,
                _ => StepControl::Continue,
            }
        };
        let outcome = skill.run_observed(&run, &task, ctx, &mut observe).await;
        if let Some(e) = failed_checkpoint {
            return Err(e.into());
        }
        let mut record = self.record().clone();
        let result = match outcome {
            Ok(mut state) => {
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
                Ok(state)
            }
            Err(error) => {
                record.status = RunStatus::Failed {
                    error: error.to_string(),
                };
                Err(DurableError::Agent(error))
            }
        };
        self.store.save(&record)?;
        *self.record() = record;
        result
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
        let react = skill.react(model, runtime.registry(), ctx)?;
        let state = self.drive(runtime, &react, ctx, None).await?;
        Ok(skill.answer(state)?)
    }

    /// Writes the run's calls so far (the journal's outcomes, then this attempt's) as
    /// a cassette file at `path`, which replays the run offline.
    pub fn export(&self, path: &Path) -> Result<(), DurableError> {
        Ok(self.cassette.export(path)?)
    }
}

//! What a run store keeps, and the contract every store meets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::approval::ApprovalRequest;
use tackle_core::replay::{CallStarted, Interaction};

use crate::react::ReactState;

/// Where runs and their journals are kept. See the [module docs](super).
///
/// Each method is one durable step: when it returns `Ok`, what it wrote survives a
/// crash of the process. A store may be shared by many processes; what it must
/// guarantee to them (the [conformance kit](super::conformance) checks each):
///
/// * **records are versioned**: [`save`](Self::save) replaces a record only when the
///   stored one has the same [`version`](RunRecord::version), and stores it one
///   higher; otherwise it fails with [`StoreError::Conflict`] and changes nothing. Two
///   writers that read one version cannot both write over it;
/// * **a save and its journal entries are one transaction**: both land, or neither;
/// * **appends are serialized**: entries of one run keep the order they were appended
///   in, from any number of writers, and none is lost.
pub trait RunStore: Send + Sync {
    /// Adds a new run (stored at version 0); [`StoreError::Exists`] when the id is
    /// taken.
    fn create(&self, record: &RunRecord) -> Result<(), StoreError>;
    /// The run's record, if there is such a run.
    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;
    /// Replaces the run's record, if the stored one has `record.version` (it is then
    /// stored as `record.version + 1`), and appends `entries` to its journal, all in one
    /// transaction. [`StoreError::Conflict`] when the stored version differs,
    /// [`StoreError::NotFound`] when there is no such run.
    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError>;
    /// Appends an entry to the run's journal.
    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError>;
    /// The run's journal, in the order it was written.
    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError>;
    /// The ids of every run, sorted.
    fn runs(&self) -> Result<Vec<String>, StoreError>;
    /// Checks that what the store holds is whole: [`StoreError::Corrupt`] naming what
    /// is damaged. A store that cannot be damaged (memory) has nothing to check.
    fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }
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
    /// What the store holds cannot be read, or is not whole.
    #[error("the run store holds something unreadable: {message}")]
    Corrupt {
        /// What is wrong, naming the file where there is one.
        message: String,
    },
    /// The record was saved by someone else since it was read: read it again.
    #[error("the run `{run_id}` changed since it was read (it is at version {stored}, the save was of {saved})")]
    Conflict {
        /// The id.
        run_id: String,
        /// The version in the store.
        stored: u64,
        /// The version the save was made from.
        saved: u64,
    },
    /// There is no run with this id.
    #[error("there is no run `{run_id}` in the store")]
    NotFound {
        /// The id.
        run_id: String,
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
    /// The record's version: each save stores it one higher, and a save made from an
    /// older version is refused ([`StoreError::Conflict`]).
    #[serde(default)]
    pub version: u64,
    /// Who drives the run now, and until when; `None` when no process does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// How many journal entries the run had at its last save: a journal found shorter
    /// is damaged, and the run does not resume over it.
    #[serde(default)]
    pub journaled: u64,
    /// The schema fingerprint of each tool the run called, by key, as a cassette's
    /// `tools` holds them: noted before the tool's first call runs, so an export of
    /// the journal ([`DurableRun::export_journal`](super::DurableRun::export_journal))
    /// is a cassette that `cargo tackle cassette verify` accepts and whose replay
    /// reports a tool whose schema changed since.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, String>,
    /// Set when this record comes from a backup that was restored (a store's backup
    /// marks the runs it copies that had not ended): the run may have gone on after
    /// the backup's moment, so until an operator
    /// [accepts the restore](super::DurableRun::accept_restore) each write it makes
    /// waits as an unknown outcome rather than running (see the
    /// [module docs](super)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<Restored>,
}

/// What a run restored from a backup keeps of it: see [`RunRecord::restored`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// When the backup was taken, in milliseconds since the Unix epoch: what the
    /// run did after this moment, the restored store does not hold.
    pub backed_up_at_ms: u64,
}

/// A process's hold on a run: while it lasts, no other process opens or resumes the
/// run. The holder renews it while it drives the run; a holder that dies stops
/// renewing, and once `until_ms` has passed another process may take the run over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Who holds it (a process, named at its start).
    pub holder: String,
    /// Until when, in milliseconds since the Unix epoch.
    pub until_ms: u64,
}

impl Lease {
    /// Whether the lease still holds at `now_ms`.
    pub fn holds_at(&self, now_ms: u64) -> bool {
        now_ms < self.until_ms
    }
}

/// A call waiting for approval, as any process reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The tool's key.
    pub key: String,
    /// The validated arguments, as canonical JSON, a secret argument's value as
    /// `[REDACTED]`: what a person deciding reads.
    pub arguments: String,
    /// The binding's hash (hex), for logs and for naming the request.
    pub binding: String,
}

impl PendingApproval {
    /// The pending form of `request`.
    pub fn of(request: &ApprovalRequest) -> PendingApproval {
        PendingApproval {
            key: request.key.clone(),
            arguments: request.binding.arguments().to_owned(),
            binding: request.binding.to_string(),
        }
    }

    /// Whether this is the request of `request`'s call: the same key, the same
    /// canonical arguments as shown, and the same binding (which covers the values of
    /// secret arguments too).
    pub fn binds(&self, request: &ApprovalRequest) -> bool {
        self.key == request.key
            && self.binding == request.binding.to_string()
            && self.arguments == request.binding.arguments()
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
    /// Whether an approval was used by the call it approved: a used approval lets no
    /// other call run, and the same call asked again waits for a new decision. (A
    /// rejection stands: a repeat of the rejected call is refused with its reason.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub used: bool,
    /// Who made the decision, proven: its signature with an
    /// [`ApprovalKey`](super::ApprovalKey) (see [`super::signing`]). `None` for a
    /// decision recorded unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<DecisionSignature>,
    /// Who decided, when not a person: `policy: <reason>` for a decision of the
    /// run's [`ApprovalPolicy`](super::ApprovalPolicy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// A decision's signature, as the store keeps it (made and checked by an
/// [`ApprovalKey`](super::ApprovalKey): see [`signing`](super::signing)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionSignature {
    /// The id of the key that signed it.
    pub key_id: String,
    /// HMAC-SHA256 of the signed message, in lower-case hex.
    pub mac: String,
}

impl ApprovalRecord {
    /// A person's `decision` on `request`, unsigned and not used yet.
    pub fn new(request: PendingApproval, decision: Decision) -> ApprovalRecord {
        ApprovalRecord {
            request,
            decision,
            used: false,
            signature: None,
            decided_by: None,
        }
    }

    /// Whether this decision answers `request` now: it binds it, and it is not an
    /// approval used already.
    pub fn answers(&self, request: &ApprovalRequest) -> bool {
        self.request.binds(request) && !(self.used && self.decision == Decision::Approve)
    }
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
            version: 0,
            lease: None,
            journaled: 0,
            tools: BTreeMap::new(),
            restored: None,
        }
    }

    /// Whether the run has ended ([`RunStatus::Done`] or [`RunStatus::Failed`]).
    pub fn ended(&self) -> bool {
        matches!(self.status, RunStatus::Done | RunStatus::Failed { .. })
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
    /// Stopped because its journal could not be written (the error says why): nothing
    /// the journal does not hold was shown to the model. Resume it once the store
    /// takes writes again.
    Interrupted {
        /// The store's error.
        error: String,
    },
    /// A resume found calls in flight that may or may not have happened and are not
    /// safe to run again: an operator [resolves](super::DurableRun::resolve) each.
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
#[non_exhaustive]
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
    /// A running call noted how far it got ([`ToolContext::checkpoint`](tackle_core::ToolContext::checkpoint)):
    /// made again after a crash, it is handed the last note and goes on from it.
    Progress {
        /// The attempt.
        attempt: u32,
        /// The call's number in that attempt.
        call: u64,
        /// The note.
        note: Value,
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

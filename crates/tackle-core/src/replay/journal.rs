//! A cassette's journal: every call appended as it happens, for durable runs.
//!
//! A cassette normally keeps what it records in memory and writes its file once, at
//! [`Cassette::finish`](super::Cassette::finish). A cassette made with
//! [`Cassette::journaled`](super::Cassette::journaled) also hands each
//! call to a [`Journal`] the moment it happens, write-ahead:
//!
//! * [`Journal::started`] right before a call runs (after every check, approval
//!   included): if the process dies while the call runs, the journal shows a call in
//!   flight, and whether running it again is safe ([`CallStarted::rerun_safe`]);
//! * [`Journal::progressed`] while it runs, when the call notes how far it got (a
//!   resumed run hands the note back to the call made again, which goes on from it);
//! * [`Journal::finished`] once the call's outcome is final and before the caller sees
//!   it: a journal that cannot take it fails the call (`Execution`), so no outcome is
//!   used that the journal does not hold.
//!
//! Such a cassette serves what the journal already holds (as mode `new` does) and runs
//! and appends the rest, so a run started again over its own journal replays every
//! completed call, runs no side effect twice, and continues live. The agent crate's `durable`
//! builds resumable runs on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file::{Interaction, InteractionKind};
use crate::spec::ReplayPolicy;

/// A call about to run, as a journal receives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallStarted {
    /// The call's number in this cassette's run (as in [`Interaction::call`]).
    pub call: u64,
    /// The tool or operation key.
    pub key: String,
    /// Tool or operation.
    pub kind: InteractionKind,
    /// Its replay policy.
    pub policy: ReplayPolicy,
    /// The input, redacted.
    pub input: Value,
    /// Whether running the call a second time is harmless: it changes nothing
    /// (`none` or `read`), its input carries an idempotency key (the tool's
    /// `idempotency_key` field, so the system it acts on can tell a repeat), or it is
    /// a model completion (`llm.*` operations).
    pub rerun_safe: bool,
}

/// Where a journaled cassette appends each call. See the [module docs](self).
///
/// Both methods are called on the call's task, and the call waits for them: a store
/// should make the entry durable before returning (the SQLite store commits it).
pub trait Journal: Send + Sync {
    /// A call is about to run. An error stops the call before it runs.
    fn started(&self, call: &CallStarted) -> Result<(), String>;
    /// A call finished with `interaction` (its outcome as the caller will get it). An
    /// error fails the call: its outcome is not used.
    fn finished(&self, interaction: &Interaction) -> Result<(), String>;

    /// A running call noted how far it got ([`ToolContext::checkpoint`](crate::ToolContext::checkpoint)):
    /// `note` is what it needs to go on rather than start again (a remote task's
    /// id). A journal that keeps notes lets a resumed run hand the last one to the
    /// same call, made again. The default keeps nothing.
    fn progressed(&self, call: u64, note: &Value) -> Result<(), String> {
        let _ = (call, note);
        Ok(())
    }
}

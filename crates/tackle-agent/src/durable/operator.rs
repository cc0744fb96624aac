//! What an operator does to a run no process drives, each one transaction over the
//! run's versioned record: resolve a call of unknown outcome, decide a pending
//! approval, abandon the run.

use super::attempt::load;
use super::error::DurableError;
use super::journal::replay;
use super::lease::not_held;
use super::store::{
    ApprovalRecord, Decision, InFlight, JournalEntry, PendingApproval, Resolution, RunRecord,
    RunStatus, RunStore, StoreError,
};
use super::{DurableRun, SAVE_ATTEMPTS};

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

impl DurableRun {
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

    /// Accepts that the run `run_id` of a restored backup may go on from there (see
    /// [`RunRecord::restored`]): an operator who has checked what the run did after
    /// the backup's moment (and [`resolve`](Self::resolve)d each write it held) says
    /// so, and from its next resume its writes run again as any run's do. A run not
    /// restored is left as it is. [`DurableError::Held`] while a process holds it.
    pub fn accept_restore(store: &dyn RunStore, run_id: &str) -> Result<(), DurableError> {
        update(
            store,
            run_id,
            |record, _| {
                not_held(record, run_id)?;
                record.restored = None;
                Ok((Vec::new(), ()))
            },
            false,
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
        Self::record_decision(store, run_id, request, decision, None)
    }

    /// [`decide`](Self::decide), the decision signed with `key` over the run's id,
    /// the request and the decision (see [`super::signing`]): what a run opened with
    /// [`DurableOptions::with_approval_key`](super::DurableOptions::with_approval_key)
    /// requires.
    pub fn decide_signed(
        store: &dyn RunStore,
        run_id: &str,
        request: &PendingApproval,
        decision: Decision,
        key: &super::ApprovalKey,
    ) -> Result<(), DurableError> {
        Self::record_decision(store, run_id, request, decision, Some(key))
    }

    fn record_decision(
        store: &dyn RunStore,
        run_id: &str,
        request: &PendingApproval,
        decision: Decision,
        key: Option<&super::ApprovalKey>,
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
                let signature = key.map(|key| key.sign(run_id, &request, &decision));
                record.decisions.push(ApprovalRecord {
                    signature,
                    ..ApprovalRecord::new(request, decision.clone())
                });
                if record.pending.is_empty() && record.status == RunStatus::AwaitingApproval {
                    record.status = RunStatus::Paused;
                }
                Ok((Vec::new(), ()))
            },
            false,
        )
    }
}

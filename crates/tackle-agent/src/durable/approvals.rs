//! Approvals that pause a run: [`PausingApprover`] answers the door from the decisions
//! a run's [`ApprovalBook`] holds, and keeps every request without one there as
//! pending, refused for now: the run stops (a durable run after its step, a Temporal
//! workflow until its signal) and goes on once a decision is recorded. A durable run's
//! book is its record ([`RunBook`]); a Temporal activity's is the decisions the
//! workflow's signals brought.

use std::sync::Arc;

use tackle_core::approval::{ApprovalFuture, ApprovalRequest, Approver};

use super::attempt::Attempt;
use super::policy::PolicyDecision;
use super::store::{ApprovalRecord, Decision, PendingApproval};

/// Where a paused run's approvals live: the decisions made for its calls, and the
/// requests still waiting for one.
pub trait ApprovalBook: Send + Sync {
    /// The decision that answers `request`, if there is one. An approval is used up
    /// here (it approves this call and no other): `Ok(None)` when it could not be
    /// taken (used meanwhile), `Err` when taking it could not be kept.
    fn decide(&self, request: &ApprovalRequest) -> Result<Option<Decision>, String>;

    /// Keeps `request` as pending (once: a request kept already is not kept again);
    /// `Err` when it could not be kept.
    fn wait(&self, request: &ApprovalRequest) -> Result<(), String>;

    /// What the refusal of a request kept waiting tells the caller.
    fn waiting(&self, request: &ApprovalRequest) -> String;
}

/// A book shared: the run's approver holds it, and whoever reads the pending
/// requests afterwards too.
impl<B: ApprovalBook> ApprovalBook for Arc<B> {
    fn decide(&self, request: &ApprovalRequest) -> Result<Option<Decision>, String> {
        (**self).decide(request)
    }

    fn wait(&self, request: &ApprovalRequest) -> Result<(), String> {
        (**self).wait(request)
    }

    fn waiting(&self, request: &ApprovalRequest) -> String {
        (**self).waiting(request)
    }
}

/// The approver of a run that pauses for approvals: decisions from its
/// [`ApprovalBook`], and every request without one kept there and refused for now.
#[derive(Clone, Debug, Default)]
pub struct PausingApprover<B>(pub B);

impl<B: ApprovalBook> Approver for PausingApprover<B> {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let book = &self.0;
        let answer = match book.decide(request) {
            Ok(Some(Decision::Approve)) => request.approve(),
            Ok(Some(Decision::Reject { reason })) => request.deny(reason),
            Ok(None) => match book.wait(request) {
                Ok(()) => request.deny(book.waiting(request)),
                Err(e) => request.deny(format!("the approval request could not be kept: {e}")),
            },
            Err(e) => request.deny(format!("the approval could not be used: {e}")),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A durable run's approvals: its record's decisions and pending requests.
pub(super) struct RunBook {
    pub(super) attempt: Arc<Attempt>,
}

impl RunBook {
    /// The run's policy's decision on `request`, recorded (with its reason, signed
    /// when the run has a key); `None` when there is no policy or it asks a person.
    fn by_policy(&self, request: &ApprovalRequest) -> Result<Option<Decision>, String> {
        let Some(policy) = &self.attempt.options.approval_policy else {
            return Ok(None);
        };
        let (decision, reason) = match super::policy::review(policy, request) {
            PolicyDecision::Ask => return Ok(None),
            PolicyDecision::Approve { reason } => (Decision::Approve, reason),
            PolicyDecision::Deny { reason } => (
                Decision::Reject {
                    reason: reason.clone(),
                },
                reason,
            ),
        };
        let pending = PendingApproval::of(request);
        let key = self.attempt.options.approval_key.clone();
        self.attempt
            .save(false, |record| {
                let signature = key
                    .as_ref()
                    .map(|key| key.sign(&record.run_id, &pending, &decision));
                record.decisions.push(ApprovalRecord {
                    request: pending.clone(),
                    decision: decision.clone(),
                    // An approval is used by this call, now.
                    used: decision == Decision::Approve,
                    signature,
                    decided_by: Some(format!("policy: {reason}")),
                });
            })
            .map_err(|e| e.to_string())?;
        Ok(Some(decision))
    }
}

impl ApprovalBook for RunBook {
    fn decide(&self, request: &ApprovalRequest) -> Result<Option<Decision>, String> {
        let decided = {
            let record = self.attempt.record();
            let Some(found) = record.decisions.iter().find(|d| d.answers(request)) else {
                drop(record);
                return self.by_policy(request);
            };
            // A run with an approval key takes only decisions signed with it.
            if let Some(key) = &self.attempt.options.approval_key {
                if let Err(why) = key.verify(&record.run_id, found) {
                    let refusal = format!(
                        "the stored decision on this call is not signed by the approval key `{}`: {why}",
                        key.id()
                    );
                    drop(record);
                    self.attempt.forged(&request.key, why);
                    return Err(refusal);
                }
            }
            Some(found.decision.clone())
        };
        if decided != Some(Decision::Approve) {
            return Ok(decided);
        }
        // Used up before the call runs, in the record: it approves this call and no
        // other.
        let mut used = false;
        self.attempt
            .save(false, |record| {
                used = false;
                if let Some(d) = record
                    .decisions
                    .iter_mut()
                    .find(|d| d.answers(request) && d.decision == Decision::Approve)
                {
                    d.used = true;
                    used = true;
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(used.then_some(Decision::Approve))
    }

    fn wait(&self, request: &ApprovalRequest) -> Result<(), String> {
        self.attempt
            .save(false, |record| {
                if !record.pending.iter().any(|p| p.binds(request)) {
                    record.pending.push(PendingApproval::of(request));
                }
            })
            .map_err(|e| e.to_string())
    }

    fn waiting(&self, request: &ApprovalRequest) -> String {
        format!(
            "awaiting approval (request {}): the run stops after this step",
            request.binding
        )
    }
}

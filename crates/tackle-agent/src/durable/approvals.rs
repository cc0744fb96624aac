//! The approver of a durable run ([`RunApprover`]): decisions from the run's record,
//! and every request without one kept there as pending.

use std::sync::Arc;

use tackle_core::approval::{ApprovalFuture, ApprovalRequest, Approver};

use super::attempt::Attempt;
use super::store::{Decision, PendingApproval};

/// The approver of a durable run: decisions from the run's record, and every request
/// without one kept there as pending.
pub(super) struct RunApprover {
    pub(super) attempt: Arc<Attempt>,
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

//! Approvals on a worker: a tool call's activity runs its call on a run whose
//! approver (a `PausingApprover` over [`ActivityApprovals`]) answers from the
//! decisions the workflow's signals brought, and hands the requests it has none for
//! back to the workflow to wait on.

use std::sync::{Mutex, PoisonError};

use tackle_agent::durable::{ApprovalBook, ApprovalRecord, Decision, PendingApproval};
use tackle_core::ApprovalRequest;

/// The decisions a tool call's activity brought, and the requests it found none for.
pub(crate) struct ActivityApprovals {
    pub(crate) decisions: Vec<ApprovalRecord>,
    pub(crate) pending: Mutex<Vec<PendingApproval>>,
}

impl ActivityApprovals {
    /// The requests found waiting, taken.
    pub(crate) fn take_pending(&self) -> Vec<PendingApproval> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ApprovalBook for ActivityApprovals {
    fn decide(&self, request: &ApprovalRequest) -> Result<Option<Decision>, String> {
        // The activity runs one call: a decision bound to it is its own.
        Ok(self
            .decisions
            .iter()
            .find(|d| d.request.binds(request))
            .map(|d| d.decision.clone()))
    }

    fn wait(&self, request: &ApprovalRequest) -> Result<(), String> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.iter().any(|p| p.binds(request)) {
            pending.push(PendingApproval::of(request));
        }
        Ok(())
    }

    fn waiting(&self, _request: &ApprovalRequest) -> String {
        "awaiting approval: the workflow waits for a decision".to_owned()
    }
}

//! Approvals on a worker: [`SignalApprover`] answers the door from the decisions the
//! workflow's signals brought to the running activity, and hands the requests it has
//! none for back to the workflow to wait on.

use std::sync::{Arc, Mutex, PoisonError};

use tackle_agent::durable::{ApprovalRecord, Decision, PendingApproval};
use tackle_core::approval::ApprovalFuture;
use tackle_core::{ApprovalRequest, Approver};

tokio::task_local! {
    pub(crate) static APPROVALS: Arc<ActivityApprovals>;
}

/// The decisions a tool call's activity brought, and the requests it found none for.
pub(crate) struct ActivityApprovals {
    pub(crate) decisions: Vec<ApprovalRecord>,
    pub(crate) pending: Mutex<Vec<PendingApproval>>,
}

/// The approver of a worker's runtime: it answers from the decisions the workflow's
/// signals brought to the running activity, each bound to its call's key and exact
/// arguments. A request without a decision is refused for now and goes back to the
/// workflow, which waits for [`AgentWorkflow::decide`]. Outside an activity of an
/// [`AgentWorkflow`] it refuses every request.
///
/// [`AgentWorkflow::decide`]: crate::AgentWorkflow::decide
/// [`AgentWorkflow`]: crate::AgentWorkflow
#[derive(Clone, Copy, Debug, Default)]
pub struct SignalApprover;

impl Approver for SignalApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let answer = APPROVALS.try_with(|approvals| {
            let decided = approvals
                .decisions
                .iter()
                .find(|d| d.request.binds(request))
                .map(|d| d.decision.clone());
            match decided {
                Some(Decision::Approve) => request.approve(),
                Some(Decision::Reject { reason }) => request.deny(reason),
                None => {
                    let mut pending = approvals
                        .pending
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    pending.push(PendingApproval::of(request));
                    request.deny("awaiting approval: the workflow waits for a decision")
                }
            }
        });
        let answer = answer.unwrap_or_else(|_| {
            request.deny("no decision: this approver answers only in an agent workflow's activity")
        });
        Box::pin(std::future::ready(answer))
    }
}

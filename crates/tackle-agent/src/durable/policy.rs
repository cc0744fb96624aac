//! An approval policy: rules a program sets that decide a call before a person is
//! asked.
//!
//! A durable run's approver first looks for a decision in the store; when there is
//! none, a run opened with
//! [`DurableOptions::with_approval_policy`](super::DurableOptions::with_approval_policy)
//! asks its [`ApprovalPolicy`]: [`PolicyDecision::Approve`] or
//! [`PolicyDecision::Deny`] decides the call at once, and the decision is recorded in
//! the run's record like a person's, with the policy's reason (`decided_by:
//! "policy: <reason>"`; signed with the run's approval key when it has one), so the
//! store shows why the call ran or did not; [`PolicyDecision::Ask`] leaves the call to
//! a person, as without a policy. A policy that panics asks a person.

use std::sync::Arc;

use tackle_core::approval::ApprovalRequest;

/// What a policy says of a call that needs approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Run it; why.
    Approve {
        /// Why (recorded with the decision).
        reason: String,
    },
    /// Do not run it; why (the model reads it, and it is recorded).
    Deny {
        /// Why.
        reason: String,
    },
    /// Leave it to a person.
    Ask,
}

/// Rules that decide calls before a person is asked (see the [module docs](self)).
/// `request` holds the tool's key and the validated arguments (secret values
/// redacted).
pub trait ApprovalPolicy: Send + Sync {
    /// What the policy says of `request`.
    fn review(&self, request: &ApprovalRequest) -> PolicyDecision;
}

impl<F> ApprovalPolicy for F
where
    F: Fn(&ApprovalRequest) -> PolicyDecision + Send + Sync,
{
    fn review(&self, request: &ApprovalRequest) -> PolicyDecision {
        self(request)
    }
}

/// What `policy` says of `request`; a policy that panics asks a person.
pub(super) fn review(
    policy: &Arc<dyn ApprovalPolicy>,
    request: &ApprovalRequest,
) -> PolicyDecision {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| policy.review(request)))
        .unwrap_or(PolicyDecision::Ask)
}

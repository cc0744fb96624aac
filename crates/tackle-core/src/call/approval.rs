//! Stage 6, approval: a yes before a call that needs one runs.
//!
//! A call needs approval when its tool says so for every call or its approval
//! predicate says so for the validated input. The run's [`Approver`] (else the
//! runtime's) is asked, with the call bound to its exact arguments; with no approver,
//! the call is refused. An approval the approver asked to remember lets later calls
//! of the same run with the same key and arguments through without asking. A replayed call never reaches an approver, nor
//! does a call of a run already cancelled (execution then ends it).
//!
//! [`Approver`]: crate::approval::Approver

use std::ops::ControlFlow;
use std::sync::PoisonError;

use serde_json::Value;

use super::{stop, Call, Effect, Flow, Gate, Now, RunState, Runtime, ScrubbedInput, Step};
use crate::approval::{ApprovalBinding, ApprovalDecision, ApprovalRequest};
use crate::audit::GateDecision;
use crate::error::ToolError;
use crate::registry::Tool;

/// The stage without waiting: done when the call was answered already, its run was
/// cancelled (execution says so), or its tool never needs approval; otherwise the call
/// waits in [`stage`], which may ask the approver.
#[inline]
pub(super) fn now<X: Effect>(call: &mut Call<'_, X>) -> Now<X> {
    if call.outcome.is_some() || call.run.is_some_and(RunState::is_cancelled) {
        return ControlFlow::Continue(Step::Done);
    }
    if !call.tool().may_need_approval() {
        call.trail
            .gates
            .set(Gate::Approval, GateDecision::NotRequired);
        return ControlFlow::Continue(Step::Done);
    }
    ControlFlow::Continue(Step::Wait)
}

#[inline]
pub(super) async fn stage<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Flow<X> {
    if call.outcome.is_some() || call.run.is_some_and(RunState::is_cancelled) {
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    if !tool.may_need_approval() {
        call.trail
            .gates
            .set(Gate::Approval, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    let input = match call.made_input(Some(Gate::Approval)) {
        Ok(input) => input,
        Err(error) => return stop::<X>(error),
    };
    if !tool.needs_approval(input) {
        call.trail
            .gates
            .set(Gate::Approval, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    // Boxed, like the other rare stages, to keep the common call's future small.
    let call_id = call.id();
    let run = call.run;
    // Bound to the call as its approver is shown it: its scrubbed input, and its key
    // (made by the replay router when there is a cassette, else now).
    let key = call.call_key().to_owned();
    let shown = call.scrubbed_input().clone();
    // A digest of what scrubbing took out, when it took anything.
    let unscrubbed =
        matches!(call.scrubbed_input, ScrubbedInput::Scrubbed(_)).then(|| call.input.peek());
    let binding = ApprovalBinding::of_call(tool.key(), key, unscrubbed);
    let decision = Box::pin(ask(door, run, tool, shown, binding, call_id)).await;
    let refusal = match &decision {
        GateDecision::Refused(reason) => Some(ToolError::ApprovalDenied {
            key: tool.key().to_owned(),
            reason: reason.clone(),
        }),
        _ => None,
    };
    call.trail.gates.set(Gate::Approval, decision);
    match refusal {
        Some(error) => stop::<X>(error),
        None => ControlFlow::Continue(()),
    }
}

/// Asks for approval of a call of `tool` whose scrubbed input is `shown`, bound to
/// `binding`.
async fn ask(
    door: &Runtime,
    run: Option<&RunState>,
    tool: &Tool,
    shown: Value,
    binding: ApprovalBinding,
    call_id: u64,
) -> GateDecision {
    let remembered = run.is_some_and(|run| {
        run.memory
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&binding)
    });
    if remembered {
        door.counters.approval(false, true);
        return GateDecision::RememberedApproval;
    }
    let approver = run
        .and_then(|run| run.approver.as_ref())
        .or(door.approver());
    let Some(approver) = approver else {
        door.counters.approval(false, false);
        return GateDecision::Refused(
            "the tool needs approval and no approver is configured".to_owned(),
        );
    };
    let request = ApprovalRequest {
        key: tool.key().to_owned(),
        call_id,
        input: shown,
        binding,
    };
    let decision = match approver.review(&request).await {
        ApprovalDecision::Approve(approval) if *approval.binding() == request.binding => {
            if let (true, Some(run)) = (approval.remember(), run) {
                run.memory
                    .remembered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(request.binding);
            }
            GateDecision::Approved
        }
        ApprovalDecision::Approve(approval) => GateDecision::Refused(format!(
            "the approval was given for another call ({} {}), not this one ({} {})",
            approval.binding().key(),
            approval.binding(),
            request.key,
            request.binding
        )),
        ApprovalDecision::Deny(reason) => GateDecision::Refused(reason),
    };
    door.counters
        .approval(true, matches!(decision, GateDecision::Approved));
    decision
}

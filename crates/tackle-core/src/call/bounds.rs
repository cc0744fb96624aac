//! Stage 0 and after stage 7, bounds: the input is measured before any stage walks it,
//! the output as soon as the tool returns (see [`crate::bounds`]).
//!
//! A value over the runtime's [`Limits`](crate::bounds::Limits) ends the call with
//! `InvalidInput` or `InvalidOutput`, and is taken apart without recursion so that not
//! even its drop can overflow the stack. Even a validation that the caller skipped
//! (`Runtime::invoke` with `validate = false`) does not skip the bounds.

use std::ops::ControlFlow;

use super::{Call, Flow, Gate, Input, Runtime};
use crate::audit::GateDecision;
use crate::bounds::dispose;
use crate::error::ToolError;
use crate::validate::ValidationIssue;

#[inline]
pub(super) fn input(door: &Runtime, call: &mut Call<'_>) -> Flow {
    let Input::Value(value) = &call.input else {
        // An operation's input is made by tackle from bounded parts, when needed.
        return ControlFlow::Continue(());
    };
    let Err(exceeded) = door.limits.check(value) else {
        return ControlFlow::Continue(());
    };
    dispose(call.input.take());
    call.trail
        .gates
        .set(Gate::Input, GateDecision::Refused(exceeded.to_string()));
    ControlFlow::Break(Err(ToolError::InvalidInput {
        key: call.asked.to_owned(),
        errors: vec![ValidationIssue::new("", exceeded.to_string())],
    }))
}

#[inline]
pub(super) fn output(door: &Runtime, call: &mut Call<'_>) -> Flow {
    let Some(Ok(value)) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    let Err(exceeded) = door.limits.check(value) else {
        return ControlFlow::Continue(());
    };
    if let Some(Ok(value)) = call.outcome.take() {
        dispose(value);
    }
    call.trail
        .gates
        .set(Gate::Output, GateDecision::Refused(exceeded.to_string()));
    ControlFlow::Break(Err(ToolError::InvalidOutput {
        key: call.tool().key().to_owned(),
        errors: vec![ValidationIssue::new("", exceeded.to_string())],
    }))
}

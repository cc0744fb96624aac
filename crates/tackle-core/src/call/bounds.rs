//! Stage 0 and after stage 7, bounds: the input is measured before any stage walks it,
//! the output as soon as the tool returns (see [`crate::bounds`]).
//!
//! A value over the runtime's [`Limits`](crate::bounds::Limits) ends the call with
//! `InvalidInput` or `InvalidOutput`, and is taken apart without recursion so that not
//! even its drop can overflow the stack. Even a validation that the caller skipped
//! (`Runtime::invoke` with `validate = false`) does not skip the bounds.

use std::ops::ControlFlow;

use super::{stop, Call, Effect, Flow, Gate, Input, Runtime};
use crate::audit::GateDecision;
use crate::bounds::dispose;
use crate::error::ToolError;
use crate::validate::ValidationIssue;

#[inline]
pub(super) fn input<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Flow<X> {
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
    stop::<X>(ToolError::InvalidInput {
        key: call.asked.to_owned(),
        errors: vec![ValidationIssue::new("", exceeded.to_string())],
    })
}

#[inline(always)]
pub(super) fn output<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Flow<X> {
    let Some(Ok(output)) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    // A number, a boolean or null is within any limits that hold one.
    if X::as_json(output).is_some_and(crate::bounds::is_bare_scalar)
        && door.limits.max_bytes >= crate::bounds::SCALAR_BYTES
    {
        return ControlFlow::Continue(());
    }
    // JSON as it is; a typed output as its effect measures it (`Effect::check_bounds`).
    let Err(exceeded) = X::check_bounds(output, &door.limits) else {
        return ControlFlow::Continue(());
    };
    if let Some(Ok(mut output)) = call.outcome.take() {
        if let Some(value) = X::as_json_mut(&mut output) {
            dispose(std::mem::take(value));
        }
    }
    call.trail
        .gates
        .set(Gate::Output, GateDecision::Refused(exceeded.to_string()));
    stop::<X>(ToolError::InvalidOutput {
        key: call.tool().key().to_owned(),
        errors: vec![ValidationIssue::new("", exceeded.to_string())],
    })
}

//! Stage 2, capability: the caller holds every permission the tool requires.
//!
//! Deny by default: a tool (or operation) that lists permissions is refused unless
//! the caller's [`Capabilities`](crate::Capabilities) grant each one. A refusal ends the
//! call before its input is looked at, so a denied caller learns nothing about it.

use std::ops::ControlFlow;

use super::{stop, Call, Effect, Flow, Gate};
use crate::audit::GateDecision;
use crate::error::ToolError;

#[inline]
pub(super) fn stage<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    let tool = call.tool();
    let required = &call.spec().permissions;
    if required.is_empty() {
        call.trail
            .gates
            .set(Gate::Capability, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    let missing = call.ctx.capabilities().missing(required);
    if missing.is_empty() {
        call.trail.gates.set(Gate::Capability, GateDecision::Passed);
        return ControlFlow::Continue(());
    }
    let error = ToolError::CapabilityDenied {
        key: tool.key().to_owned(),
        missing,
    };
    call.trail
        .gates
        .set(Gate::Capability, GateDecision::Refused(error.to_string()));
    stop::<X>(error)
}

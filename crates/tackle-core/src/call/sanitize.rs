//! Stage 10, sanitize: instruction-like text in a result is handled by the policy of
//! the tool's trust class (see [`crate::sanitize`]): passed, flagged, stripped,
//! wrapped, or (when the runtime fails closed) the call fails with `UnsafeOutput`. A
//! replayed result was recorded in its final form and is not sanitized again.

use std::ops::ControlFlow;

use super::{Call, Effect, Flow, Gate, Runtime};
use crate::audit::{Execution, GateDecision};
use crate::error::ToolError;
use crate::sanitize::{sanitize, SanitizePolicy};

#[inline(always)]
pub(super) fn stage<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Flow<X> {
    if call.trail.execution == Execution::Replayed {
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    let trust = call.spec().trust;
    let Some(Ok(output)) = &mut call.outcome else {
        return ControlFlow::Continue(());
    };
    let policy = door.sanitization.policy_for(trust);
    if !call.span.is_disabled() {
        call.span
            .record("tool.inbound.sanitization.policy", policy.as_str());
    }
    if policy == SanitizePolicy::PassThrough {
        call.trail
            .gates
            .set(Gate::Sanitization, GateDecision::Passed);
        return ControlFlow::Continue(());
    }
    match X::as_json_mut(output) {
        Some(value) => call.trail.findings = sanitize(value, policy, tool.key(), trust),
        None => {
            // A typed output is sanitized as its JSON view, which stands for it when
            // the policy changed it.
            let mut view = match X::view(output) {
                Ok(view) => view.into_owned(),
                Err(why) => {
                    // Unscanned output never reaches the caller.
                    call.trail.gates.set(
                        Gate::Sanitization,
                        GateDecision::Refused("the output has no JSON form".to_owned()),
                    );
                    call.outcome = Some(Err(X::from_error(ToolError::Execution {
                        key: tool.key().to_owned(),
                        message: format!("the output has no JSON form to sanitize: {why}"),
                    })));
                    call.scrubbed = false;
                    return ControlFlow::Continue(());
                }
            };
            call.trail.findings = sanitize(&mut view, policy, tool.key(), trust);
            if !call.trail.findings.is_empty() && policy != SanitizePolicy::DetectAndFlag {
                let changed = X::from_view(view);
                // An error made from the view is new: scrubbed when it leaves the door.
                call.scrubbed &= changed.is_ok();
                call.outcome = Some(changed);
            }
        }
    }
    if !call.span.is_disabled() {
        call.span.record(
            "tool.inbound.sanitization.patterns_hit_count",
            call.trail.findings.len(),
        );
    }
    if call.trail.findings.is_empty() || !door.sanitization.fail_closed {
        call.trail
            .gates
            .set(Gate::Sanitization, GateDecision::Passed);
        return ControlFlow::Continue(());
    }
    let mut patterns: Vec<String> = call
        .trail
        .findings
        .iter()
        .map(|f| f.pattern.to_owned())
        .collect();
    patterns.dedup();
    let error = ToolError::UnsafeOutput {
        key: tool.key().to_owned(),
        patterns,
    };
    call.trail
        .gates
        .set(Gate::Sanitization, GateDecision::Refused(error.to_string()));
    call.outcome = Some(Err(X::from_error(error)));
    ControlFlow::Continue(())
}

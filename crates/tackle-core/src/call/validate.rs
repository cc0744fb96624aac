//! Stages 3 and 8, validate input and validate output: values against the tool's
//! schemas, with the validators compiled once per tool.
//!
//! Invalid input ends the call with `InvalidInput`, every problem listed with its
//! JSON pointer; an output that breaks the tool's output schema becomes
//! `InvalidOutput`. A replayed output is checked against the *current* schema (so a
//! changed tool is noticed), unless it was recorded shaped (then it is not the tool's
//! own output). A schema that accepts anything (an operation's) is not checked, and
//! an operation's lazy input is then never made. A trusted caller may skip both
//! checks (`Runtime::invoke` with `validate = false`); the audit event says so.

use std::ops::ControlFlow;

use serde_json::Value;

use super::{stop, Call, Effect, Flow, Gate};
use crate::audit::GateDecision;
use crate::error::{SchemaSide, ToolError};
use crate::validate::SchemaValidator;

#[inline]
pub(super) fn input<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    if !call.validate {
        call.trail.gates.set(Gate::Input, GateDecision::Skipped);
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    let validators = match tool.validators() {
        Ok(v) => v,
        Err(error) => return stop::<X>(error),
    };
    if validators.input.accepts_anything() {
        call.trail.gates.set(Gate::Input, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    let input = match call.made_input(Some(Gate::Input)) {
        Ok(input) => input,
        Err(error) => return stop::<X>(error),
    };
    match check(&validators.input, input, SchemaSide::Input, tool.key()) {
        None => {
            call.trail.gates.set(Gate::Input, GateDecision::Passed);
            ControlFlow::Continue(())
        }
        Some((decision, error)) => {
            call.trail.gates.set(Gate::Input, decision);
            stop::<X>(error)
        }
    }
}

#[inline(always)]
pub(super) fn output<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    let Some(Ok(output)) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    if call.served_shaped {
        call.trail
            .gates
            .set(Gate::Output, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    if !call.validate {
        call.trail.gates.set(Gate::Output, GateDecision::Skipped);
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    let validators = match tool.validators() {
        Ok(v) => v,
        Err(error) => return stop::<X>(error),
    };
    if validators.output.accepts_anything() {
        call.trail
            .gates
            .set(Gate::Output, GateDecision::NotRequired);
        return ControlFlow::Continue(());
    }
    // A typed output is checked as its JSON view, made only here.
    let checked = match X::view(output) {
        Ok(value) => check(&validators.output, &value, SchemaSide::Output, tool.key()),
        Err(why) => Some((
            // The gate's text holds no value: the reason may quote one.
            GateDecision::Refused("the output has no JSON form".to_owned()),
            ToolError::Execution {
                key: tool.key().to_owned(),
                message: format!("the output has no JSON form to check: {why}"),
            },
        )),
    };
    match checked {
        None => call.trail.gates.set(Gate::Output, GateDecision::Passed),
        Some((decision, error)) => {
            call.trail.gates.set(Gate::Output, decision);
            call.outcome = Some(Err(X::from_error(error)));
        }
    }
    ControlFlow::Continue(())
}

/// Validates `value` against one of the tool's schemas: `None` when it is valid, else
/// the gate's refusal and the error listing every problem.
#[inline]
fn check(
    validator: &SchemaValidator,
    value: &Value,
    side: SchemaSide,
    key: &str,
) -> Option<(GateDecision, ToolError)> {
    // Most calls are valid: decide that first, and list problems only when there are.
    if validator.is_valid(value) {
        return None;
    }
    Some(refusal(validator, value, side, key))
}

#[cold]
fn refusal(
    validator: &SchemaValidator,
    value: &Value,
    side: SchemaSide,
    key: &str,
) -> (GateDecision, ToolError) {
    let errors = validator.validate(value).issues;
    let decision = GateDecision::Refused(format!("{} problem(s)", errors.len()));
    let key = key.to_owned();
    (
        decision,
        match side {
            SchemaSide::Input => ToolError::InvalidInput { key, errors },
            SchemaSide::Output => ToolError::InvalidOutput { key, errors },
        },
    )
}

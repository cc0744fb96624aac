//! Stages 3 and 8, validate input and validate output: values against the tool's
//! schemas, with the validators compiled once per tool.
//!
//! Invalid input ends the call with `InvalidInput`, every problem listed with its
//! JSON pointer; an output that breaks the tool's output schema becomes
//! `InvalidOutput`. A replayed output is checked against the *current* schema (so a
//! changed tool is noticed), unless it was recorded shaped (then it is not the tool's
//! own output). A schema that accepts anything (an operation's) is not checked, and
//! an operation's lazy input is then never made.

use std::ops::ControlFlow;

use serde_json::Value;

use super::{Call, Flow};
use crate::audit::GateDecision;
use crate::error::{SchemaSide, ToolError};
use crate::validate::SchemaValidator;

pub(super) fn input(call: &mut Call<'_>) -> Flow {
    let tool = call.tool();
    let validators = match tool.validators() {
        Ok(v) => v,
        Err(error) => return ControlFlow::Break(Err(error)),
    };
    if validators.input.accepts_anything() {
        call.trail.gates.input = GateDecision::NotRequired;
        return ControlFlow::Continue(());
    }
    let key = tool.key();
    match check(&validators.input, call.input.get(), SchemaSide::Input, key) {
        Ok(decision) => {
            call.trail.gates.input = decision;
            ControlFlow::Continue(())
        }
        Err((decision, error)) => {
            call.trail.gates.input = decision;
            ControlFlow::Break(Err(error))
        }
    }
}

pub(super) fn output(call: &mut Call<'_>) -> Flow {
    let Some(Ok(value)) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    if call.served_shaped {
        call.trail.gates.output = GateDecision::NotRequired;
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    let validators = match tool.validators() {
        Ok(v) => v,
        Err(error) => return ControlFlow::Break(Err(error)),
    };
    if validators.output.accepts_anything() {
        call.trail.gates.output = GateDecision::NotRequired;
        return ControlFlow::Continue(());
    }
    match check(&validators.output, value, SchemaSide::Output, tool.key()) {
        Ok(decision) => call.trail.gates.output = decision,
        Err((decision, error)) => {
            call.trail.gates.output = decision;
            call.outcome = Some(Err(error));
        }
    }
    ControlFlow::Continue(())
}

/// Validates `value` against one of the tool's schemas: the gate's decision, and the
/// error when it failed.
fn check(
    validator: &SchemaValidator,
    value: &Value,
    side: SchemaSide,
    key: &str,
) -> Result<GateDecision, (GateDecision, ToolError)> {
    let checked = validator.validate(value);
    if checked.valid {
        return Ok(GateDecision::Passed);
    }
    let decision = GateDecision::Refused(format!("{} problem(s)", checked.errors.len()));
    let (key, errors) = (key.to_owned(), checked.errors);
    Err((
        decision,
        match side {
            SchemaSide::Input => ToolError::InvalidInput { key, errors },
            SchemaSide::Output => ToolError::InvalidOutput { key, errors },
        },
    ))
}

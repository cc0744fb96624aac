//! Stage 11, record: the outcome the caller gets goes to the cassette.
//!
//! Only when the replay router asked for a record and the call really ran: a replayed
//! call, or one refused before it ran, records nothing. What is stored is the final
//! outcome (validated, shaped, sanitized, errors scrubbed of the caller's secrets), so
//! a replayed run gives its caller what the recorded run gave.

use std::ops::ControlFlow;

use super::{Call, Flow};
use crate::audit::Execution;
use crate::error::ToolError;

#[inline]
pub(super) fn stage(call: &mut Call<'_>) -> Flow {
    let (Some(cassette), Some(pending)) = (call.cassette(), call.pending.take()) else {
        return ControlFlow::Continue(());
    };
    if call.trail.execution != Execution::Live {
        return ControlFlow::Continue(());
    }
    let key = call.tool().key();
    if let Some(outcome) = &mut call.outcome {
        super::execute::scrub(outcome, call.ctx);
        if !call.arg_secrets.is_empty() {
            super::execute::scrub_arguments(outcome, &call.arg_secrets);
        }
        match cassette.record(*pending, outcome, call.trail.shaped.is_some()) {
            Ok(()) => call.trail.execution = Execution::Recorded,
            // Not in the journal: the outcome is not used.
            Err(why) => {
                *outcome = Err(ToolError::Execution {
                    key: key.to_owned(),
                    message: format!("the run's journal could not hold the outcome: {why}"),
                });
            }
        }
    }
    ControlFlow::Continue(())
}

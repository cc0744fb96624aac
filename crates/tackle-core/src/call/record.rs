//! Stage 11, record: the outcome the caller gets goes to the cassette.
//!
//! Only when the replay router asked for a record and the call really ran: a replayed
//! call, or one refused before it ran, records nothing. What is stored is the final
//! outcome (validated, scrubbed, shaped, sanitized), so a replayed run gives its caller
//! what the recorded run gave; the output of a tool that `reveals_secrets` to its
//! caller is scrubbed for the cassette here.

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
    // Scrubbed once already, but for the output of a tool that reveals secrets to its
    // caller: a cassette holds none all the same.
    let scrubbed = match &call.outcome {
        Some(output @ Ok(_)) if call.spec().reveals_secrets => {
            let mut copy = output.clone();
            call.scrubber().outcome(&mut copy, false);
            Some(copy)
        }
        _ => None,
    };
    if let Some(outcome) = &mut call.outcome {
        let recorded = scrubbed.as_ref().unwrap_or(outcome);
        match cassette.record(*pending, recorded, call.trail.shaped.is_some()) {
            Ok(()) => call.trail.execution = Execution::Recorded,
            // Not in the journal: the outcome is not used.
            Err(why) => {
                *outcome = Err(ToolError::Execution {
                    key: key.to_owned(),
                    message: format!("the run's journal could not hold the outcome: {why}"),
                });
                // A new error: scrubbed when it leaves the door.
                call.scrubbed = false;
            }
        }
    }
    ControlFlow::Continue(())
}

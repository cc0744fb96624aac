//! Stage 11, record: the outcome the caller gets goes to the cassette.
//!
//! Only when the replay router asked for a record and the call really ran: a replayed
//! call, or one refused before it ran, records nothing. What is stored is the final
//! outcome (validated, scrubbed, shaped, sanitized), as its JSON view (see
//! [`super::effect`]: a typed output is serialized here, once), so a replayed run gives
//! its caller what the recorded run gave; the output of a tool that `reveals_secrets`
//! to its caller is scrubbed for the cassette here.

use std::borrow::Cow;
use std::ops::ControlFlow;

use super::{Call, Effect, Flow};
use crate::audit::Execution;
use crate::error::ToolError;

#[inline]
pub(super) fn stage<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    let (Some(cassette), Some(pending)) = (call.cassette(), call.pending.take()) else {
        return ControlFlow::Continue(());
    };
    if call.trail.execution != Execution::Live {
        return ControlFlow::Continue(());
    }
    let key = call.tool().key();
    let Some(outcome) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    let mut recorded = match outcome {
        Ok(output) => X::view(output)
            .map(Cow::into_owned)
            .map_err(|why| ToolError::Execution {
                key: key.to_owned(),
                message: format!("the output has no JSON form to record: {why}"),
            }),
        Err(error) => Err(X::error_view(error, key).into_owned()),
    };
    // Scrubbed once already, but for the output of a tool that reveals secrets to its
    // caller: a cassette holds none all the same.
    if recorded.is_ok() && call.spec().reveals_secrets {
        call.scrubber().outcome(&mut recorded, false);
    }
    let unrecordable = match &recorded {
        Err(error) if outcome.is_ok() => Some(error.clone()),
        _ => None,
    };
    let failed = match unrecordable {
        // An output with no JSON form cannot be replayed: the call fails as it would
        // on replay, and nothing is recorded.
        Some(error) => Some(error),
        None => cassette
            .record(*pending, recorded, call.trail.shaped.is_some())
            .err()
            // Not in the journal: the outcome is not used.
            .map(|why| ToolError::Execution {
                key: key.to_owned(),
                message: format!("the run's journal could not hold the outcome: {why}"),
            }),
    };
    match failed {
        None => call.trail.execution = Execution::Recorded,
        Some(error) => {
            call.outcome = Some(Err(X::from_error(error)));
            // A new error: scrubbed when it leaves the door.
            call.scrubbed = false;
        }
    }
    ControlFlow::Continue(())
}

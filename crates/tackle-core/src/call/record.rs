//! Stage 11, record: the outcome the caller gets goes to the cassette.
//!
//! Only when the replay router asked for a record and the call really ran: a replayed
//! call, or one refused before it ran, records nothing. A call a replay ran only to
//! check it (a pure tool, a test model) is compared with its recording here, and its
//! caller gets the recording. What is stored is the final
//! outcome (validated, scrubbed, shaped, sanitized), as its JSON view (see
//! [`super::effect`]: a typed output is serialized here, once), so a replayed run gives
//! its caller what the recorded run gave; the output of a tool that `reveals_secrets`
//! to its caller is scrubbed for the cassette here. An output with no JSON view fails
//! the call, and that failure is what is recorded (a journal that was told the call
//! started learns how it ended).

use std::ops::ControlFlow;

use serde_json::Value;

use super::{Call, Effect, Flow};
use crate::audit::Execution;
use crate::error::ToolError;

#[inline(always)]
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
    // The view of what the caller gets; a tombstone keeps no outcome, so needs none.
    let mut unviewable = None;
    let mut recorded = match outcome {
        Ok(_) if pending.is_tombstone() => Ok(Value::Null),
        Ok(output) => match X::view(output) {
            Ok(view) => Ok(view.into_owned()),
            Err(why) => {
                let error = ToolError::Execution {
                    key: key.to_owned(),
                    message: format!("the output has no JSON form to record: {why}"),
                };
                unviewable = Some(error.clone());
                Err(error)
            }
        },
        Err(error) => Err(X::error_view(error, key).into_owned()),
    };
    // Scrubbed once already, but for the output of a tool that reveals secrets to its
    // caller: a cassette holds none all the same. (A new error is scrubbed too.)
    if (recorded.is_ok() && call.spec().reveals_secrets) || unviewable.is_some() {
        call.scrubber().outcome(&mut recorded, false);
    }
    if pending.is_check() {
        // A replay ran the call to compare it with its recording: the caller gets
        // the recording, and nothing is recorded.
        let outcome = &mut call.outcome;
        cassette.check(*pending, recorded, |served| {
            *outcome = Some(match served.outcome.to_result(key, served.call) {
                Ok(view) => X::from_view(view),
                Err(error) => Err(X::from_error(error)),
            });
        });
        return ControlFlow::Continue(());
    }
    let journal_failed = cassette
        .record(*pending, recorded, call.trail.shaped.is_some())
        .err()
        // Not in the journal: the outcome is not used.
        .map(|why| ToolError::Execution {
            key: key.to_owned(),
            message: format!("the run's journal could not hold the outcome: {why}"),
        });
    // The caller gets what was recorded: an unviewable output's failure; or, when the
    // journal could not hold the outcome, that failure (nothing was recorded).
    if journal_failed.is_none() {
        call.trail.execution = Execution::Recorded;
    }
    if let Some(error) = journal_failed.or(unviewable) {
        call.outcome = Some(Err(X::from_error(error)));
        // A new error: scrubbed when it leaves the door.
        call.scrubbed = false;
    }
    ControlFlow::Continue(())
}

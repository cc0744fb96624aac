//! Stage 5, the replay router: with a cassette attached, whether the call runs or a
//! recorded outcome stands in for it.
//!
//! The router implements the table of [`crate::replay`]. It may serve a recorded
//! outcome (the call then skips approval and execution, and its output is checked
//! against the tool's schema), send the call on to run with a record pending (the
//! record stage stores it), or end the call (`CassetteMiss`, `ReplayGap`,
//! `Divergence`). Tool calls match in any order; operations (model completions,
//! broker requests) must come in their recorded order. The input the cassette keys and
//! keeps is the call's scrubbed input (see [`crate::secrets`]).

use std::borrow::Cow;
use std::ops::ControlFlow;

use serde_json::Value;

use super::{Call, Effect, Flow, ScrubbedInput};
use crate::audit::Execution;
use crate::replay::router::{Route, Routed, Serve};
use crate::replay::InteractionKind;

#[inline]
pub(super) fn stage<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    let Some(cassette) = call.cassette() else {
        return ControlFlow::Continue(());
    };
    let tool = call.tool();
    // Operations are ordered and have no schema of their own to check.
    let (kind, fingerprint) = if call.operation {
        (InteractionKind::Operation, None)
    } else {
        (InteractionKind::Tool, Some(tool.schema_fingerprint()))
    };
    let policy = call.spec().replay_policy;
    // A recording of a pure tool or of a test model is compared with a run of it; a
    // call an approver would see is served as recorded (a replay never asks one).
    let checked = !tool.may_need_approval()
        && cassette.checks(
            policy,
            call.spec().side_effects,
            call.operation.then_some(tool.replay_check),
        );
    // The call's input, scrubbed once (see `crate::secrets`), keys it and is what a
    // recording keeps; its canonical form is the call's key, which the router makes
    // when it looks a recording up and hands back when the call goes on to run, for
    // approval and the journal to share.
    // A live cassette neither keys nor records: an operation's input, made only
    // when needed, is not made for it.
    let unneeded = cassette.is_live() && call.input.is_lazy();
    if !unneeded {
        if let Err(error) = call.made_input(None) {
            return ControlFlow::Break(Err(X::from_error(error)));
        }
    }
    let owned = if unneeded {
        None
    } else {
        match call.scrubber().input(call.input.peek()) {
            Cow::Owned(input) => Some(input),
            Cow::Borrowed(_) => None,
        }
    };
    // Scrubbed once: approval, when the call may need it, reads the same.
    if tool.may_need_approval() && !unneeded {
        call.scrubbed_input = match &owned {
            Some(input) => ScrubbedInput::Scrubbed(input.clone()),
            None => ScrubbedInput::Unchanged,
        };
    }
    let mut key = call.key.take();
    // An operation's input is read by nothing after the router (its code runs on
    // its own typed input) unless an approval is bound to it: hand it over, so a
    // recording keeps it without a copy.
    let hand_over = call.operation && !tool.may_need_approval();
    let routed = match owned {
        Some(input) => Routed::Owned(input),
        None if unneeded => Routed::Borrowed(&Value::Null),
        None if hand_over => Routed::Owned(call.input.take()),
        None => Routed::Borrowed(call.input.peek()),
    };
    // A served outcome is written into the call where the cassette keeps it: one
    // copy (a typed effect's made from its recorded view).
    let (outcome, served_shaped) = (&mut call.outcome, &mut call.served_shaped);
    let serve = |served: Serve<'_>| {
        *served_shaped = served.shaped;
        *outcome = Some(match served.outcome.to_result(tool.key(), served.call) {
            Ok(view) => X::from_view(view),
            Err(error) => Err(X::from_error(error)),
        });
    };
    let routed = cassette.route(
        kind,
        tool.key(),
        policy,
        routed,
        &mut key,
        fingerprint,
        checked,
        serve,
    );
    call.key = key;
    match routed {
        Err(error) => ControlFlow::Break(Err(X::from_error(error))),
        Ok(Route::Served) => {
            call.trail.execution = Execution::Replayed;
            ControlFlow::Continue(())
        }
        Ok(Route::Run(pending)) => {
            call.pending = pending.map(Box::new);
            ControlFlow::Continue(())
        }
    }
}

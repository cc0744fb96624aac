//! Stage 5, the replay router: with a cassette attached, whether the call runs or a
//! recorded outcome stands in for it.
//!
//! The router implements the table of [`crate::replay`]. It may serve a recorded
//! outcome (the call then skips approval and execution, and its output is checked
//! against the tool's schema), send the call on to run with a record pending (the
//! record stage stores it), or end the call (`CassetteMiss`, `ReplayGap`,
//! `Divergence`). Tool calls match in any order; operations (model completions,
//! broker requests) must come in their recorded order. The caller's secrets (those in
//! its context) are redacted from the input the cassette keys and keeps.

use std::ops::ControlFlow;

use super::{Call, Flow};
use crate::audit::Execution;
use crate::replay::router::{Route, Routed};
use crate::replay::InteractionKind;

#[inline]
pub(super) fn stage(call: &mut Call<'_>) -> Flow {
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
    // The caller's secrets are redacted from what the cassette keys and keeps, as its
    // own configured secrets are: no second configuration.
    let ctx = call.ctx;
    // An operation's input is read by nothing after the router (its code runs on
    // its own typed input) unless an approval is bound to it: hand it over, so a
    // recording keeps it without a copy.
    let hand_over = call.operation && !tool.may_need_approval();
    let routed = if ctx.has_secrets() || !call.arg_secret_fields.is_empty() {
        let redactor = ctx
            .secret_values()
            .chain(call.arg_secrets.iter().map(String::as_str))
            .fold(cassette.redactor().clone(), |r, secret| {
                r.with_secret(secret)
            });
        let mut input = redactor.redact(call.input.get());
        super::secrets::blank_arguments(&mut input, &call.arg_secret_fields);
        Routed::Owned(input)
    } else if hand_over {
        Routed::Owned(call.input.take())
    } else {
        Routed::Borrowed(call.input.get())
    };
    match cassette.route(kind, tool.key(), policy, routed, fingerprint) {
        Err(error) => ControlFlow::Break(Err(error)),
        Ok(Route::Serve { outcome, shaped }) => {
            call.trail.execution = Execution::Replayed;
            call.served_shaped = shaped;
            call.outcome = Some(outcome);
            ControlFlow::Continue(())
        }
        Ok(Route::Run(pending)) => {
            call.pending = pending.map(Box::new);
            ControlFlow::Continue(())
        }
    }
}

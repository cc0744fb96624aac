//! Stage 9, shape: a result longer than the tool's `max_result_tokens` is cut to fit,
//! by the tool's strategy (see [`crate::shape`]). A replayed result was recorded in
//! its final form and is not shaped again.

use std::ops::ControlFlow;

use super::{Call, Effect, Flow, Now, Runtime, Step};
use crate::audit::Execution;
use crate::shape::surely_fits;

/// The stage without waiting: done when there is nothing to shape (a replayed or
/// failed call, a typed output, a tool with no token limit, a result far below it),
/// which is most calls; otherwise the call waits in [`stage`], which may spill the
/// result to a file or ask the summarizer.
#[inline(always)]
pub(super) fn now<X: Effect>(call: &Call<'_, X>) -> Now<X> {
    if call.trail.execution == Execution::Replayed {
        return ControlFlow::Continue(Step::Done);
    }
    let Some(Ok(output)) = &call.outcome else {
        return ControlFlow::Continue(Step::Done);
    };
    let Some(output) = X::as_json(output) else {
        return ControlFlow::Continue(Step::Done);
    };
    let Some(max) = call.spec().result_token_limit() else {
        return ControlFlow::Continue(Step::Done);
    };
    // Most results are far below the limit: no need to measure them.
    if surely_fits(output, u64::from(max) * 4) {
        return ControlFlow::Continue(Step::Done);
    }
    ControlFlow::Continue(Step::Wait)
}

#[inline]
pub(super) async fn stage<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Flow<X> {
    if call.trail.execution == Execution::Replayed {
        return ControlFlow::Continue(());
    }
    // Only JSON is shaped: a typed output cut would no longer be of its type.
    let Some(Ok(output)) = &call.outcome else {
        return ControlFlow::Continue(());
    };
    if X::as_json(output).is_none() {
        return ControlFlow::Continue(());
    }
    let tool = call.tool();
    let spec = call.spec();
    let Some(max) = spec.result_token_limit() else {
        return ControlFlow::Continue(());
    };
    if let Some(output) = call
        .outcome
        .as_ref()
        .and_then(|o| o.as_ref().ok())
        .and_then(X::as_json)
    {
        // Most results are far below the limit: no need to measure them.
        if surely_fits(output, u64::from(max) * 4) {
            return ControlFlow::Continue(());
        }
    }
    // The model's id for the call names a spill file, so the model can name it back.
    let number;
    let call_id = match call.given_id {
        Some(given) => given,
        None => {
            number = call.id().to_string();
            number.as_str()
        }
    };
    let Some(output) = call
        .outcome
        .as_ref()
        .and_then(|o| o.as_ref().ok())
        .and_then(X::as_json)
    else {
        return ControlFlow::Continue(());
    };
    // Boxed: rare, and it keeps the common call's future small.
    let shaped = Box::pin(door.shaping.shape(
        tool.key(),
        call.run.map(|run| run.scope.id()),
        call_id,
        output,
        max,
        spec.shaping(),
        spec.sensitivity,
    ))
    .await;
    if let Some((shaped, report)) = shaped {
        if !call.span.is_disabled() {
            call.span
                .record("tool.result.truncation.strategy", report.strategy.as_str());
            call.span.record("tool.result.truncation.applied", true);
        }
        call.trail.shaped = Some(Box::new(report));
        call.outcome = Some(X::from_view(shaped));
    }
    ControlFlow::Continue(())
}

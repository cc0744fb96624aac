//! After stage 8, scrub output: the caller's secrets do not come back in a result.
//!
//! Every secret value in the caller's context that appears in a string of the tool's
//! output is replaced with `<redacted>` before anything else sees the output: shaping
//! (so a spilled file holds no secret), sanitization, the recording, the caller, a
//! model, an MCP client. A tool that hands out a credential on purpose says so with
//! `reveals_secrets`, and its output is left as it is. A replayed output was recorded
//! scrubbed.

use std::ops::ControlFlow;

use super::{Call, Flow};
use crate::audit::Execution;

#[inline]
pub(super) fn output(call: &mut Call<'_>) -> Flow {
    if !call.ctx.has_secrets()
        || call.trail.execution == Execution::Replayed
        || call.spec().reveals_secrets
    {
        return ControlFlow::Continue(());
    }
    let ctx = call.ctx;
    if let Some(Ok(output)) = &mut call.outcome {
        super::execute::scrub_secrets(output, ctx);
    }
    ControlFlow::Continue(())
}

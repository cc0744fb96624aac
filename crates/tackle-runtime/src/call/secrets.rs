//! After stage 8, scrub output: secrets do not come back in a result.
//!
//! Every secret value in the caller's context that appears in a string of the tool's
//! output is replaced with `<redacted>`, and every token-shaped string (`Bearer ...`,
//! `sk-...` keys, JWTs) with `[REDACTED]`, before anything else sees the output:
//! shaping (so a spilled file holds no secret), sanitization, the recording, the
//! caller, a model, an MCP client. So a live run gives what its replay gives. A tool
//! that hands out a credential on purpose says so with `reveals_secrets`, and its
//! output is left as it is. A replayed output was recorded scrubbed.

use std::ops::ControlFlow;

use super::{Call, Flow};
use crate::audit::Execution;

#[inline]
pub(super) fn output(call: &mut Call<'_>) -> Flow {
    if call.trail.execution == Execution::Replayed || call.spec().reveals_secrets {
        return ControlFlow::Continue(());
    }
    let ctx = call.ctx;
    if let Some(Ok(output)) = &mut call.outcome {
        super::execute::scrub_output(output, ctx);
    }
    ControlFlow::Continue(())
}

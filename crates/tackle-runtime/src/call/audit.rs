//! Stage 12, audit: every call, however it ended, leaves an audit event, counters and
//! a tracing span (see [`crate::audit`]).
//!
//! The span (`tool.call`) is opened before the first stage and wraps them all; the
//! counters are updated for every call; the event goes to the runtime's audit sink,
//! and costs nothing when there is none.

use std::time::Instant;

use serde_json::Value;

use super::{Call, Runtime};
use crate::audit::{AuditError, AuditEvent};
use crate::error::ToolError;

/// The call's span: `tool.call`, its fields filled in as stages learn them.
#[inline]
pub(super) fn span(call: &Call<'_>) -> tracing::Span {
    tracing::info_span!(
        "tool.call",
        tool.key = tracing::field::Empty,
        tool.side_effects = tracing::field::Empty,
        tool.trust = tracing::field::Empty,
        call.id = call.id,
        call.outcome = tracing::field::Empty,
    )
}

#[inline]
pub(super) fn stage(
    door: &Runtime,
    call: &mut Call<'_>,
    result: &Result<Value, ToolError>,
    start: Option<Instant>,
) {
    if !call.span.is_disabled() {
        call.span.record(
            "call.outcome",
            match result {
                Ok(_) => "ok",
                Err(e) => e.kind().as_str(),
            },
        );
    }
    let trail = &call.trail;
    door.counters
        .count(result.as_ref().err().map(ToolError::kind), trail.execution);
    door.counters
        .shaped_and_flagged(trail.shaped.is_some(), !trail.findings.is_empty());
    if let Some(sink) = &door.audit {
        sink.record(AuditEvent {
            call_id: call.id,
            key: call.key().to_owned(),
            side_effects: call.spec.map(|s| s.side_effects),
            gates: trail.gates.gates(),
            execution: trail.execution,
            duration: start.map(|s| s.elapsed()).unwrap_or_default(),
            error: result.as_ref().err().map(AuditError::of),
            shaped: trail.shaped.as_deref().cloned(),
            findings: trail.findings.clone(),
        });
    }
}

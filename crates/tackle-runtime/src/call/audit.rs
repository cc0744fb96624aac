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
pub(super) fn span(call: &mut Call<'_>) -> tracing::Span {
    let span = tracing::info_span!(
        "tool.call",
        call.id = tracing::field::Empty,
        tool.key = tracing::field::Empty,
        tool.side_effects = tracing::field::Empty,
        tool.trust = tracing::field::Empty,
        call.outcome = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("call.id", call.id());
    }
    span
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
    door.counters.count(
        result.as_ref().err().map(ToolError::kind),
        call.trail.execution,
    );
    door.counters
        .shaped_and_flagged(call.trail.shaped.is_some(), !call.trail.findings.is_empty());
    if let Some(sink) = &door.audit {
        let call_id = call.id();
        let trail = &call.trail;
        sink.record(AuditEvent {
            call_id,
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

//! Stage 12, audit: every call, however it ended, leaves an audit event, counters and
//! a tracing span (see [`crate::audit`]).
//!
//! The span (`tool.call`) is opened before the first stage and wraps them all, with
//! the attributes of [`crate::audit`] filled in as the stages learn them; the
//! counters are updated for every call; the event goes to the runtime's audit sink,
//! and costs nothing when there is none.

use std::time::Instant;

use super::{Call, Effect, Runtime};
use crate::audit::{AuditError, AuditEvent};
use crate::error::ToolError;

/// The call's span: `tool.call`, its fields filled in as stages learn them.
#[inline]
pub(super) fn span<X: Effect>(call: &mut Call<'_, X>) -> tracing::Span {
    let span = tracing::info_span!(
        "tool.call",
        tool.call_id = tracing::field::Empty,
        tool.name = tracing::field::Empty,
        tool.side_effect_class = tracing::field::Empty,
        tool.trust_class = tracing::field::Empty,
        tool.sensitivity = tracing::field::Empty,
        tool.sandbox.kind = tracing::field::Empty,
        tool.sandbox.forced = tracing::field::Empty,
        tool.sandbox.no_network = tracing::field::Empty,
        tool.sandbox.contained = tracing::field::Empty,
        tool.result.max_tokens = tracing::field::Empty,
        tool.result.truncation.strategy = tracing::field::Empty,
        tool.result.truncation.applied = tracing::field::Empty,
        tool.inbound.sanitization.policy = tracing::field::Empty,
        tool.inbound.sanitization.patterns_hit_count = tracing::field::Empty,
        tool.duration_ms = tracing::field::Empty,
        call.outcome = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("tool.call_id", call.id());
    }
    span
}

#[inline]
pub(super) fn stage<X: Effect>(door: &Runtime, call: &mut Call<'_, X>, start: Option<Instant>) {
    // Numbered before the outcome is borrowed (an audited call has its number).
    let call_id = door.audit.is_some().then(|| call.id());
    // The error as the door's (the effect's own, for a typed operation).
    let key = call.key();
    let error = match &call.outcome {
        Some(Err(e)) => Some(X::error_view(e, key)),
        _ => None,
    };
    let error = error.as_deref();
    if !call.span.is_disabled() {
        if let Some(start) = start {
            call.span
                .record("tool.duration_ms", start.elapsed().as_secs_f64() * 1000.0);
        }
        call.span.record(
            "call.outcome",
            match error {
                None => "ok",
                Some(e) => e.kind().as_str(),
            },
        );
    }
    door.counters
        .count(error.map(ToolError::kind), call.trail.execution);
    door.counters
        .shaped_and_flagged(call.trail.shaped.is_some(), !call.trail.findings.is_empty());
    if let (Some(sink), Some(call_id)) = (&door.audit, call_id) {
        let trail = &call.trail;
        // A key that resolved to nothing is the caller's text: it may hold anything.
        let mut key = call.key().to_owned();
        if call.tool.is_none() {
            call.scrubber().text(&mut key);
        }
        sink.record(AuditEvent {
            call_id,
            key,
            side_effects: call.spec.map(|s| s.side_effects),
            gates: trail.gates.gates(),
            execution: trail.execution,
            duration: start.map(|s| s.elapsed()).unwrap_or_default(),
            error: error.map(AuditError::of),
            shaped: trail.shaped.as_deref().cloned(),
            findings: trail.findings.clone(),
            memory_guard_mismatch: trail.memory_guard_mismatch,
        });
    }
}

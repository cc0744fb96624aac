//! Stage 1, resolve: which tool the key names.
//!
//! A full key (`math.add@1`), `namespace.name` (its highest version) or a bare name
//! that only one `namespace.name` has; anything else ends the call with `NotFound`
//! (with close keys suggested) or `Ambiguous`. An operation brings its own tool.
//!
//! The call's sandbox is resolved here too (see [`crate::sandbox`]): by the runtime's
//! resolver when it has one, else by the spec's `sandbox` field. Operations run the
//! code their caller hands the door, in process.

use std::ops::ControlFlow;

use super::{stop, Call, Effect, Flow, Runtime};
use crate::error::ToolError;
use crate::sandbox::{SandboxKind, SandboxPolicy};
use crate::spec::ToolSpec;

#[inline]
pub(super) fn stage<'a, X: Effect>(door: &'a Runtime, call: &mut Call<'a, X>) -> Flow<X> {
    let tool = match call.tool {
        Some(tool) => tool,
        None => match door.registry.resolve(call.asked) {
            Ok(tool) => &**tool,
            Err(error) => return stop::<X>(with_live(door, call.asked, error)),
        },
    };
    let spec: &ToolSpec = tool.spec();
    call.tool = Some(tool);
    call.spec = Some(spec);
    let policy = match &door.sandbox_resolver {
        Some(resolver) if !call.operation => Some(resolver.resolve(spec)),
        _ if !call.operation && spec.sandbox != SandboxKind::InProcess => {
            Some(SandboxPolicy::for_spec(spec))
        }
        _ => None,
    };
    let kind = policy.as_ref().map_or(SandboxKind::InProcess, |p| p.kind);
    if kind != SandboxKind::InProcess {
        call.sandbox = policy.map(Box::new);
    }
    if !call.span.is_disabled() {
        let span = &call.span;
        span.record("tool.name", tool.key());
        span.record("tool.side_effect_class", spec.side_effects.as_str());
        span.record("tool.trust_class", spec.trust.as_str());
        span.record("tool.sensitivity", spec.sensitivity.as_str());
        span.record("tool.sandbox.kind", kind.as_str());
        span.record("tool.sandbox.forced", kind != spec.sandbox);
        span.record("tool.sandbox.no_network", false);
        span.record(
            "tool.result.max_tokens",
            spec.result_token_limit().unwrap_or(0),
        );
        span.record("tool.result.truncation.strategy", spec.shaping().as_str());
        span.record("tool.result.truncation.applied", false);
    }
    ControlFlow::Continue(())
}

/// The error for a key the fixed registry does not name, told with the live tools in
/// mind when there are any (a live tool would have been found before the call began):
/// their close keys are suggested too, and the registry is not called empty.
#[cold]
fn with_live(door: &Runtime, asked: &str, error: ToolError) -> ToolError {
    if !door.live.any() {
        return error;
    }
    match (error, door.live.snapshot().resolve(asked)) {
        (_, Err(ambiguous @ ToolError::Ambiguous { .. })) => ambiguous,
        (
            ToolError::NotFound {
                query,
                mut suggestions,
                ..
            },
            Err(ToolError::NotFound {
                suggestions: more, ..
            }),
        ) => {
            let keep = suggestions.len().max(more.len());
            suggestions.extend(more);
            suggestions.truncate(keep);
            ToolError::NotFound {
                query,
                suggestions,
                registry_empty: false,
            }
        }
        (error, _) => error,
    }
}

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

use super::{Call, Flow, Runtime};
use crate::sandbox::{SandboxKind, SandboxPolicy};
use crate::spec::ToolSpec;

#[inline]
pub(super) fn stage<'a>(door: &'a Runtime, call: &mut Call<'a>) -> Flow {
    let tool = match call.tool {
        Some(tool) => tool,
        None => match door.registry.resolve(call.asked) {
            Ok(tool) => &**tool,
            Err(error) => return ControlFlow::Break(Err(error)),
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

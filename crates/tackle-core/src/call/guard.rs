//! Around stage 7, the memory guard: for the tools a [`MemoryGuard`] watches, a
//! snapshot of their memory regions before the tool runs and a comparison after.
//!
//! A tool that promises not to change the world (`none`, `read`) can still change
//! shared state by mistake; the guard catches it. A mismatch does not fail the call (its
//! effect has happened): it is counted (`tool.executor.memory_guard.mismatch.total`),
//! marked on the call's audit event, and logged at `WARN`.

use serde_json::Value;

use super::{Call, Effect, Runtime};
use crate::context::ToolContext;
use crate::spec::ToolSpec;

/// Reads the memory regions a tool must leave as they were.
pub trait MemoryGuard: Send + Sync {
    /// A snapshot of the regions `tool` must not change, or `None` when the tool is
    /// not watched. Called before and after each live call of the tool; the two
    /// snapshots must be equal.
    fn snapshot(&self, tool: &ToolSpec, ctx: &ToolContext) -> Option<Value>;
}

/// The snapshot before the call, when the tool is watched and will run.
#[inline]
pub(super) fn before<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) -> Option<Value> {
    let guard = door.memory_guard.as_ref()?;
    if call.outcome.is_some() {
        return None;
    }
    guard.snapshot(call.spec(), call.ctx)
}

/// Compares the snapshot after the call with the one before.
#[inline]
pub(super) fn after<X: Effect>(door: &Runtime, call: &mut Call<'_, X>, before: Option<Value>) {
    let (Some(before), Some(guard)) = (before, door.memory_guard.as_ref()) else {
        return;
    };
    let after = guard.snapshot(call.spec(), call.ctx);
    if after.as_ref() != Some(&before) {
        door.counters.memory_guard_mismatch();
        call.trail.memory_guard_mismatch = true;
        let key = call.tool().key();
        tracing::warn!(
            tool = key,
            "the memory guard found a region changed by `{key}`, which is `{}`",
            call.spec().side_effects
        );
    }
}

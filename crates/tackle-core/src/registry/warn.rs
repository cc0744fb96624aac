//! One-time warnings about a tool's spec, through `tracing` at `WARN`, once per tool
//! key and kind of warning in the process:
//!
//! * `max_result_tokens = 0`: its results are never shaped;
//! * more than [`MAX_EXAMPLES`] examples;
//! * a `write` or `external` tool with no idempotency key (a field or a callback):
//!   a retried call cannot be recognised as the same call.
//!
//! A run-time tool is looked at when it is registered, a `#[tool]` function when its
//! spec is first built (on first use, so start-up stays cheap).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use crate::spec::ToolSpec;

/// The most examples a tool should carry; more are kept, with a warning.
pub const MAX_EXAMPLES: usize = 5;

/// What a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Warning {
    ShapingOff,
    TooManyExamples,
    NoIdempotencyKey,
}

/// Warns about `spec` once per key and warning; `keyed` says whether the tool has an
/// idempotency callback.
pub(super) fn check(spec: &ToolSpec, keyed: bool) {
    if spec.max_result_tokens == Some(0) {
        once(spec, Warning::ShapingOff, |key| {
            tracing::warn!(
                tool = key,
                "tool `{key}` sets max_result_tokens = 0: its results are never shaped, whatever their length"
            );
        });
    }
    if spec.examples.len() > MAX_EXAMPLES {
        let count = spec.examples.len();
        once(spec, Warning::TooManyExamples, |key| {
            tracing::warn!(
                tool = key,
                examples = count,
                "tool `{key}` has {count} examples; at most {MAX_EXAMPLES} are expected"
            );
        });
    }
    if spec.side_effects.mutates() && spec.idempotency_key.is_none() && !keyed {
        once(spec, Warning::NoIdempotencyKey, |key| {
            tracing::warn!(
                tool = key,
                side_effects = spec.side_effects.as_str(),
                "tool `{key}` is `{}` and has no idempotency key: a retried call cannot be told from a new one (set `idempotency_key`, or `DynamicTool::with_idempotency_key`)",
                spec.side_effects
            );
        });
    }
}

fn once(spec: &ToolSpec, warning: Warning, emit: impl FnOnce(&str)) {
    static WARNED: Mutex<Option<HashSet<(String, Warning)>>> = Mutex::new(None);
    let key = spec.key();
    let first = WARNED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashSet::new)
        .insert((key.clone(), warning));
    if first {
        emit(&key);
    }
}

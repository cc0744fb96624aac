//! After stage 8, scrub the outcome: secrets do not come back in a result.
//!
//! The call's one scrubber ([`crate::secrets::Scrubber`]) replaces every secret value
//! of the caller's context and every secret argument's value that appears in a string
//! of the tool's output or in a text of its error, every token-shaped string
//! (`Bearer ...`, `sk-...` keys, JWTs) and the cassette's secrets with `[REDACTED]`
//! (one marker for all), before anything else sees the outcome: shaping (so a spilled
//! file holds no secret), sanitization, the recording, the caller, a model, an MCP
//! client. So a live run gives what its replay gives. A tool that hands out a
//! credential on purpose says so with `reveals_secrets`, and its output is left as it
//! is for its caller (not for a cassette). A replayed output was recorded scrubbed.

//!
//! Secret arguments. An argument is secret when the tool's input schema marks its
//! property `writeOnly` (a `#[secret]` parameter), or when its name is a secret's
//! (`api_key`, `password`, `token`, ...: [`tackle_contract::is_secret_name`], the
//! words [`Runtime::with_secret_words`] sets). Right after the tool resolves, the door
//! takes the string values of the call's secret arguments, and from then on scrubs
//! them from everything that leaves it: the recorded input (a cassette keys and keeps
//! `[REDACTED]` in their place, so a replay still matches), the output and a spill
//! file (`[REDACTED]`), error texts, audit events, stream events. An approver is shown
//! `[REDACTED]` in their place too, and the approval is bound to the call as shown
//! (the call's key: see [`crate::secrets`]), so a secret's value never travels in a
//! binding.

use std::ops::ControlFlow;

use serde_json::Value;

use super::{Call, Effect, Flow, Runtime};
use crate::audit::Execution;
use crate::registry::tool::SecretArguments;
use crate::registry::Tool;

/// How many secret strings one call may carry (more are scrubbed as one would be:
/// the rest are ignored, and their values may show).
const MAX_ARGUMENT_SECRETS: usize = 64;

/// Takes the values of the call's secret arguments (see the module docs).
#[inline]
pub(super) fn arguments<X: Effect>(door: &Runtime, call: &mut Call<'_, X>) {
    if call.operation {
        return;
    }
    let tool = call.tool();
    let secret = tool.secret_arguments();
    let custom = door.secret_words.as_deref();
    if secret.named.is_empty() && !secret.open && custom.is_none() {
        return;
    }
    let Value::Object(input) = call.input.get() else {
        return;
    };
    let mut found = Vec::new();
    let mut fields = Vec::new();
    for (name, value) in input {
        let named = is_secret(custom, secret, name);
        if named {
            values(value, &mut found);
            fields.push(name.clone());
        }
    }
    // Longest first, so a secret that holds another is replaced whole.
    found.sort_by_key(|s: &String| std::cmp::Reverse(s.len()));
    found.dedup();
    call.arg_secrets = found;
    call.arg_secret_fields = fields;
}

/// Whether the argument `name` of a tool whose secret arguments are `secret` is
/// secret, given the runtime's `custom` words (see the module docs).
#[inline]
fn is_secret(custom: Option<&[String]>, secret: &SecretArguments, name: &str) -> bool {
    match custom {
        // Custom words: the schema's `writeOnly` properties, and names by them.
        Some(words) => {
            tackle_contract::is_secret_name(name, words)
                || secret.write_only.iter().any(|n| n == name)
        }
        None => {
            secret.named.iter().any(|n| n == name)
                || (secret.open
                    && tackle_contract::is_secret_name(name, tackle_contract::SECRET_WORDS))
        }
    }
}

impl Runtime {
    /// The names of the arguments of `input` that are secret for a call of `tool`
    /// (see [`crate::call`]'s secrets stage): what a program that keeps a call's
    /// input (a durable task) must not store as it is.
    pub fn secret_arguments(&self, tool: &Tool, input: &Value) -> Vec<String> {
        let Value::Object(input) = input else {
            return Vec::new();
        };
        let secret = tool.secret_arguments();
        let custom = self.secret_words.as_deref();
        input
            .keys()
            .filter(|name| is_secret(custom, secret, name))
            .cloned()
            .collect()
    }
}

/// The shortest value scrubbed from texts: a shorter one would shred ordinary text
/// (a cassette's input loses the whole field, whatever its length).
const MIN_TEXT_SECRET: usize = 4;

/// Every value in `value` long enough to scrub from texts: strings as they are,
/// numbers as written (without recursion: an input is within the door's depth limit,
/// but a stack costs nothing).
fn values(value: &Value, found: &mut Vec<String>) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        if found.len() >= MAX_ARGUMENT_SECRETS {
            return;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Array(items) => {
                stack.extend(items);
                continue;
            }
            Value::Object(map) => {
                stack.extend(map.values());
                continue;
            }
            _ => continue,
        };
        if text.chars().count() >= MIN_TEXT_SECRET {
            found.push(text);
        }
    }
}

/// The outcome point (see [`crate::secrets`]): right after execution and the checks
/// of what it returned, the live outcome is scrubbed once with the call's scrubber, its
/// output unless the tool `reveals_secrets` (the recording is scrubbed all the same:
/// see the record stage), its error in every case. A replayed outcome was recorded
/// scrubbed; a replayed error is scrubbed when it leaves the door.
#[inline(always)]
pub(super) fn outcome<X: Effect>(call: &mut Call<'_, X>) -> Flow<X> {
    if call.trail.execution == Execution::Replayed {
        return ControlFlow::Continue(());
    }
    if let Some(Ok(output)) = &call.outcome {
        if X::as_json(output).is_some_and(crate::bounds::is_bare_scalar) {
            // A number, a boolean or null: no text, nothing to take out.
            call.scrubbed = true;
            return ControlFlow::Continue(());
        }
    }
    let reveals = call.spec().reveals_secrets;
    let cassette = call.cassette();
    if let Some(outcome) = &mut call.outcome {
        let scrubber = super::scrubber(
            call.ctx,
            &call.arg_secrets,
            &call.arg_secret_fields,
            cassette,
        );
        X::scrub(outcome, &scrubber, reveals);
        call.scrubbed = true;
    }
    ControlFlow::Continue(())
}

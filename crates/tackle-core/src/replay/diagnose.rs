//! Saying what went wrong: the error for a call nothing recorded stands in for (with
//! the nearest recording and a JSON-pointer diff).

use std::collections::HashSet;

use serde_json::Value;

use super::cassette::{Cassette, State};
use super::file::{Interaction, InteractionKind};
use super::warning::{abbreviated, CassetteWarning};
use crate::canonical;
use crate::error::ToolError;

impl Cassette {
    /// The error for a call nothing recorded stands in for, with the nearest recording.
    pub(super) fn miss(
        &self,
        state: &State,
        kind: InteractionKind,
        key: &str,
        input: &Value,
        call: u64,
    ) -> ToolError {
        let redacted = self.inner.redactor.redact(input);
        let mut message = format!(
            "nothing recorded matches input {}",
            abbreviated(canonical::canonical(&redacted))
        );
        if kind == InteractionKind::Operation {
            if let Some(&e) = state.operations.get(state.next_operation) {
                let expected = &state.recorded[e];
                return self.with_rerecord_hint(ToolError::Divergence {
                    key: key.to_owned(),
                    call,
                    message: divergence(expected, &redacted),
                });
            }
        }
        let same_key = state
            .recorded
            .iter()
            .enumerate()
            .filter(|(_, r)| r.key == key);
        let nearest = same_key
            .map(|(i, r)| {
                let differences = diff(&r.input, &redacted);
                (state.used[i], differences.len(), i)
            })
            .min();
        match nearest {
            Some((used, _, i)) => {
                let r = &state.recorded[i];
                let status = if used { "already replayed" } else { "unused" };
                message.push_str(&format!(
                    "; nearest recorded ({status}): {}",
                    describe(r, Some(&redacted))
                ));
            }
            None => {
                let path = key.split_once('@').map_or(key, |(p, _)| p);
                let versions: Vec<&str> = state
                    .recorded
                    .iter()
                    .filter_map(|r| {
                        r.key
                            .split_once('@')
                            .filter(|(p, _)| *p == path)
                            .map(|(_, v)| v)
                    })
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                if versions.is_empty() {
                    message.push_str(&format!(
                        "; `{key}` was never recorded in {}",
                        self.inner.path.display()
                    ));
                } else {
                    let mut versions = versions;
                    versions.sort_unstable();
                    message.push_str(&format!(
                        "; the tool's version changed: `{path}` was recorded at version {}, and is called at `{key}`",
                        versions.join(", ")
                    ));
                }
            }
        }
        if let Some(warning) = state.warnings.iter().find(
            |w| matches!(w, CassetteWarning::SchemaChanged { key: changed, .. } if changed == key),
        ) {
            message.push_str(&format!("; {warning}"));
        }
        self.with_rerecord_hint(ToolError::CassetteMiss {
            key: key.to_owned(),
            call,
            message,
        })
    }

    /// A replay's miss or divergence, with the cassette it is about and what to do
    /// when the change is intended.
    pub(super) fn with_rerecord_hint(&self, error: ToolError) -> ToolError {
        match error {
            ToolError::CassetteMiss { key, call, message } => ToolError::CassetteMiss {
                key,
                call,
                message: format!("{message}{}", self.rerecord_hint()),
            },
            ToolError::Divergence { key, call, message } => ToolError::Divergence {
                key,
                call,
                message: format!("{message}{}", self.rerecord_hint()),
            },
            other => other,
        }
    }

    fn rerecord_hint(&self) -> String {
        format!(
            " (cassette {}; if the change is intended, re-record it with `TACKLE_CASSETTE=review cargo test ...` and accept it with `cargo tackle review`)",
            self.inner.path.display()
        )
    }
}

/// Why an operation (a model call) does not match the one recorded at its position:
/// the differences first, then which earlier tool result changed (a model's request
/// holds the conversation, so a changed request most often means a tool answered
/// differently), then the recorded call.
fn divergence(expected: &Interaction, now: &Value) -> String {
    let shift = delta_offset(now);
    let differences: Vec<String> = diff(&expected.input, now)
        .into_iter()
        .filter_map(|line| in_whole_request(line, shift))
        .collect();
    let mut message = if differences.is_empty() {
        "the request differs from the recorded one".to_owned()
    } else {
        format!(
            "the request differs from the recorded one at {}",
            differences.join(", ")
        )
    };
    let changed: Vec<String> = first_pointers(&expected.input, now)
        .iter()
        .filter_map(|pointer| tool_of_message(now, pointer))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !changed.is_empty() {
        message.push_str(&format!(
            "; the result of {} changed since the recording (the tool answers differently \
             now: re-record with TACKLE_CASSETTE=rewrite if that is intended)",
            changed.join(", ")
        ));
    }
    message.push_str(&format!(
        "; recorded as call #{} `{}`",
        expected.call, expected.key
    ));
    message
}

/// For a model request recorded as a delta (`{"digest", "extends", "messages", ..}`:
/// the new messages since the run's previous request), the number of messages before
/// its first.
fn delta_offset(request: &Value) -> Option<usize> {
    request.get("digest")?;
    usize::try_from(request.get("extends")?.as_u64()?).ok()
}

/// A difference line of a request as it reads against the whole conversation: in a
/// delta, message pointers are shifted by what it extends, and the digest (which
/// follows from the rest) is left out.
fn in_whole_request(line: String, shift: Option<usize>) -> Option<String> {
    let Some(shift) = shift else {
        return Some(line);
    };
    if line.starts_with("/digest:") {
        return None;
    }
    let Some(rest) = line.strip_prefix("/messages/") else {
        return Some(line);
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[..digits].parse::<usize>() {
        Ok(index) => Some(format!(
            "/messages/{}{}",
            index.saturating_add(shift),
            &rest[digits..]
        )),
        Err(_) => Some(line),
    }
}

/// The pointers of the differences between two values (as [`diff`] finds them).
fn first_pointers(recorded: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", recorded, now, &mut out);
    out.into_iter()
        .filter_map(|line| line.split_once(": ").map(|(p, _)| p.to_owned()))
        .collect()
}

/// For a pointer into a chat request's `/messages/N/...` where message N is a tool
/// result: the tool that gave it, named as the model called it, with its call id.
fn tool_of_message(request: &Value, pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/messages/")?;
    let index: usize = rest.split('/').next()?.parse().ok()?;
    let messages = request.get("messages")?.as_array()?;
    let message = messages.get(index)?;
    let id = message.get("tool_call_id")?.as_str()?;
    messages[..index].iter().rev().find_map(|m| {
        m.get("tool_calls")?
            .as_array()?
            .iter()
            .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
            .and_then(|c| c.get("name")?.as_str())
            .map(|name| format!("`{name}` (call `{id}`)"))
    })
}

/// `call #N `key` with {input}`, plus the differences from `actual`.
pub(super) fn describe(recorded: &Interaction, actual: Option<&Value>) -> String {
    let mut s = format!(
        "call #{} `{}` with {}",
        recorded.call,
        recorded.key,
        abbreviated(canonical::canonical(&recorded.input))
    );
    if let Some(actual) = actual {
        let differences = diff(&recorded.input, actual);
        if !differences.is_empty() {
            s.push_str(&format!(
                " (differences, recorded -> now: {})",
                differences.join(", ")
            ));
        }
    }
    s
}

/// The differences between two JSON values, as `pointer: recorded -> now` lines (at
/// most eight).
pub fn diff(recorded: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", recorded, now, &mut out);
    if out.len() > 8 {
        let more = out.len() - 8;
        out.truncate(8);
        out.push(format!("and {more} more"));
    }
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let at = |p: &str| {
        if p.is_empty() {
            "/".to_owned()
        } else {
            p.to_owned()
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match y.get(k) {
                    Some(vb) => diff_at(&p, va, vb, out),
                    None => out.push(format!("{p}: {} -> (absent)", canonical::canonical(va))),
                }
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(format!("{p}: (absent) -> {}", canonical::canonical(vb)));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}/{i}"), va, vb, out);
            }
        }
        _ if canonical::canonical(a) != canonical::canonical(b) => {
            out.push(format!(
                "{}: {} -> {}",
                at(path),
                canonical::canonical(a),
                canonical::canonical(b)
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diffs_name_pointers() {
        let d = diff(
            &json!({"a": 1, "b": [1, 2], "c": "x"}),
            &json!({"a": 2, "b": [1, 3], "d": true}),
        );
        assert_eq!(
            d,
            [
                "/a: 1 -> 2",
                "/b/1: 2 -> 3",
                "/c: \"x\" -> (absent)",
                "/d: (absent) -> true"
            ]
        );
        assert!(
            diff(&json!({"a": 1.0}), &json!({"a": 1})).is_empty(),
            "number spelling is not a difference"
        );
    }
}

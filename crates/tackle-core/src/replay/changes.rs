//! Differences between JSON documents, as JSON pointers (RFC 6901): what a replay
//! reports when a tool's output no longer matches its recording, and what
//! `cargo tackle review` shows between a cassette and its re-recording.

use serde_json::Value;

/// One difference between two JSON documents, at a JSON pointer (RFC 6901).
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Only the second document has a value here.
    Added {
        /// Where.
        pointer: String,
        /// The value.
        value: Value,
    },
    /// Only the first document has a value here.
    Removed {
        /// Where.
        pointer: String,
        /// The value.
        value: Value,
    },
    /// Both have a value here, and they differ (and are not both objects or both
    /// arrays).
    Changed {
        /// Where.
        pointer: String,
        /// The first document's value.
        before: Value,
        /// The second document's value.
        after: Value,
    },
}

impl Change {
    /// The pointer of the change.
    pub fn pointer(&self) -> &str {
        match self {
            Change::Added { pointer, .. }
            | Change::Removed { pointer, .. }
            | Change::Changed { pointer, .. } => pointer,
        }
    }
}

/// The differences from `before` to `after`, by JSON pointer under `base`, in
/// document order: objects key by key, arrays index by index. Walks with a stack,
/// not recursion, so any depth is safe.
pub fn json_diff(base: &str, before: &Value, after: &Value) -> Vec<Change> {
    enum Step<'a> {
        Compare(String, &'a Value, &'a Value),
        Report(Change),
    }
    let mut changes = Vec::new();
    // What is left to do, last first.
    let mut stack = vec![Step::Compare(base.to_owned(), before, after)];
    while let Some(step) = stack.pop() {
        let (pointer, a, b) = match step {
            Step::Report(change) => {
                changes.push(change);
                continue;
            }
            Step::Compare(pointer, a, b) => (pointer, a, b),
        };
        let mut next = Vec::new();
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (key, va) in x {
                    let at = format!("{pointer}/{}", escape(key));
                    next.push(match y.get(key) {
                        Some(vb) => Step::Compare(at, va, vb),
                        None => Step::Report(Change::Removed {
                            pointer: at,
                            value: va.clone(),
                        }),
                    });
                }
                for (key, vb) in y.iter().filter(|(key, _)| !x.contains_key(*key)) {
                    next.push(Step::Report(Change::Added {
                        pointer: format!("{pointer}/{}", escape(key)),
                        value: vb.clone(),
                    }));
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let at = format!("{pointer}/{i}");
                    next.push(match (x.get(i), y.get(i)) {
                        (Some(va), Some(vb)) => Step::Compare(at, va, vb),
                        (Some(va), None) => Step::Report(Change::Removed {
                            pointer: at,
                            value: va.clone(),
                        }),
                        (None, _) => Step::Report(Change::Added {
                            pointer: at,
                            value: y.get(i).cloned().unwrap_or(Value::Null),
                        }),
                    });
                }
            }
            (a, b) if a != b => changes.push(Change::Changed {
                pointer,
                before: a.clone(),
                after: b.clone(),
            }),
            _ => {}
        }
        stack.extend(next.into_iter().rev());
    }
    changes
}

impl std::fmt::Display for Change {
    /// One line, as the review shows it: `~ /a: 1 -> 2`, `+ /b: true`, `- /c: null`
    /// (long values cut).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Added { pointer, value } => write!(f, "+ {pointer}: {}", brief(value)),
            Change::Removed { pointer, value } => write!(f, "- {pointer}: {}", brief(value)),
            Change::Changed {
                pointer,
                before,
                after,
            } => write!(f, "~ {pointer}: {} -> {}", brief(before), brief(after)),
        }
    }
}

/// How much of a value a change's line shows.
const SHOWN: usize = 120;

/// `value` as compact JSON, cut after [`SHOWN`] characters.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// A key as a JSON-pointer token: `~` as `~0`, `/` as `~1`.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_name_each_difference() {
        let a = json!({"a": 1, "b": {"c": [1, 2]}, "x/y": 1, "gone": true});
        let b = json!({"a": 2, "b": {"c": [1, 3, 4]}, "x/y": 1, "new": null});
        let changes = json_diff("", &a, &b);
        let pointers: Vec<&str> = changes.iter().map(Change::pointer).collect();
        assert_eq!(pointers, ["/a", "/b/c/1", "/b/c/2", "/gone", "/new"]);
        assert_eq!(
            changes[0],
            Change::Changed {
                pointer: "/a".into(),
                before: json!(1),
                after: json!(2)
            }
        );
        assert!(json_diff("", &a, &a).is_empty());
    }

    #[test]
    fn a_change_reads_as_one_line() {
        let changes = json_diff("", &json!({"min": 25, "a": 1}), &json!({"min": 30, "b": 2}));
        let lines: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["~ /min: 25 -> 30", "- /a: 1", "+ /b: 2"]);
    }

    #[test]
    fn keys_with_slashes_and_tildes_are_escaped() {
        let changes = json_diff("/input", &json!({"a/b~c": 1}), &json!({"a/b~c": 2}));
        assert_eq!(changes[0].pointer(), "/input/a~1b~0c");
    }
}

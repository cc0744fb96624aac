//! Limits on the values that cross the door: how deep, how large.
//!
//! JSON and YAML text cannot carry a value nested deeper than their parsers allow, but a
//! value built in code can (a caller, a custom model, a tool's own output). Validating,
//! canonicalizing, comparing, cloning, serializing and even dropping a
//! `serde_json::Value` are recursive, so a value nested a few thousand levels deep
//! overflows the stack and aborts the process. The door therefore measures every input
//! before any other stage looks at it, and every output as soon as the tool returns,
//! with [`Limits::check`], which walks the value with a loop (no recursion) and stops at
//! the first limit passed. A value over a limit is refused (`InvalidInput` or
//! `InvalidOutput`) and taken apart with [`dispose`], also a loop, so that not even its
//! drop recurses.
//!
//! The defaults: [`DEFAULT_MAX_DEPTH`] (128 levels, what JSON text may carry) and
//! [`DEFAULT_MAX_BYTES`] (16 MiB, counted as the bytes of the value's strings and keys
//! plus a few for each item: about the size of its compact JSON text).
//! Change them with [`Runtime::with_limits`](crate::Runtime::with_limits).

use serde_json::Value;

/// The deepest nesting the door accepts by default: 128 levels (an array or object is
/// one level; a scalar at the top is depth 0).
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// The deepest nesting the door accepts however it is configured: 256 levels. The
/// walks after the door's bounds stage (schema validation, canonical JSON,
/// serialization) recurse once per level; past this, a large enough value could still
/// exhaust a worker thread's stack. [`Runtime::with_limits`](crate::Runtime::with_limits)
/// takes a deeper `max_depth` as this.
pub const MAX_DEPTH_CAP: usize = 256;

/// The largest value the door accepts by default: 16 MiB (see [`Limits::max_bytes`]).
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// How deep and how large a value may be. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The deepest nesting accepted.
    pub max_depth: usize,
    /// The largest size accepted: the bytes of the value's strings and keys plus a few
    /// for each item (quotes, separators; 24 for a number), about its compact JSON text.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Which limit a value passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    /// Nested deeper than `max_depth`.
    Depth(usize),
    /// Larger than `max_bytes`.
    Bytes(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Depth(max) => write!(f, "the value is nested deeper than {max} levels"),
            Exceeded::Bytes(max) => write!(f, "the value is larger than {max} bytes"),
        }
    }
}

impl Limits {
    /// Checks `value` against the limits without recursion; stops at the first one
    /// passed.
    #[inline]
    pub fn check(&self, value: &Value) -> Result<(), Exceeded> {
        self.measure(value).map(|_| ())
    }

    /// Checks `value` as [`Limits::check`] does and gives its size as counted there
    /// (about its compact JSON text): what a typed value made of several JSON parts
    /// adds up to check its whole size.
    #[inline]
    pub fn measure(&self, value: &Value) -> Result<usize, Exceeded> {
        let string = |s: &str| 2 + s.len();
        // Most values are a scalar or one level of scalars: measured without a stack.
        if let Some((depth, bytes)) = flat(value) {
            if depth > self.max_depth {
                return Err(Exceeded::Depth(self.max_depth));
            }
            if bytes > self.max_bytes {
                return Err(Exceeded::Bytes(self.max_bytes));
            }
            return Ok(bytes);
        }
        let mut bytes = 0usize;
        let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
        while let Some((v, depth)) = stack.pop() {
            bytes += match v {
                Value::Null | Value::Bool(_) => 5,
                Value::Number(_) => SCALAR_BYTES,
                Value::String(s) => string(s),
                Value::Array(items) => {
                    if !items.is_empty() && depth + 1 > self.max_depth {
                        return Err(Exceeded::Depth(self.max_depth));
                    }
                    stack.extend(items.iter().map(|item| (item, depth + 1)));
                    2 + items.len()
                }
                Value::Object(map) => {
                    if !map.is_empty() && depth + 1 > self.max_depth {
                        return Err(Exceeded::Depth(self.max_depth));
                    }
                    stack.extend(map.values().map(|item| (item, depth + 1)));
                    2 + map.keys().map(|k| string(k) + 2).sum::<usize>()
                }
            };
            if bytes > self.max_bytes {
                return Err(Exceeded::Bytes(self.max_bytes));
            }
        }
        Ok(bytes)
    }
}

/// The most a number, a boolean or null counts for in [`Limits::check`].
pub(crate) const SCALAR_BYTES: usize = 24;

/// Whether `value` is a number, a boolean or null: no text, no parts, at most
/// [`SCALAR_BYTES`].
#[inline]
pub(crate) fn is_bare_scalar(value: &Value) -> bool {
    matches!(value, Value::Null | Value::Bool(_) | Value::Number(_))
}

/// The size of a scalar, as [`Limits::check`] counts it.
fn scalar(value: &Value) -> Option<usize> {
    match value {
        Value::Null | Value::Bool(_) => Some(5),
        Value::Number(_) => Some(SCALAR_BYTES),
        Value::String(s) => Some(2 + s.len()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// The depth and size of a scalar or of a container of scalars; `None` for anything
/// nested deeper.
fn flat(value: &Value) -> Option<(usize, usize)> {
    match value {
        Value::Array(items) => {
            let mut bytes = 2 + items.len();
            for item in items {
                bytes += scalar(item)?;
            }
            Some((usize::from(!items.is_empty()), bytes))
        }
        Value::Object(map) => {
            let mut bytes = 2;
            for (key, item) in map {
                bytes += 4 + key.len() + scalar(item)?;
            }
            Some((usize::from(!map.is_empty()), bytes))
        }
        scalar_value => scalar(scalar_value).map(|bytes| (0, bytes)),
    }
}

/// Drops `value` without recursion, however deep it is.
pub fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(mut value) = stack.pop() {
        match &mut value {
            Value::Array(items) => stack.append(items),
            Value::Object(map) => {
                let map = std::mem::take(map);
                stack.extend(map.into_iter().map(|(_, v)| v));
            }
            _ => {}
        }
    }
}

/// A value nested `depth` levels deep (`[[[...]]]`), built without recursion: for
/// tests and benchmarks of the limits.
pub fn nested(depth: usize) -> Value {
    let mut value = Value::Null;
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_is_measured_without_recursion() {
        let limits = Limits::default();
        assert_eq!(limits.check(&nested(128)), Ok(()));
        assert_eq!(limits.check(&nested(129)), Err(Exceeded::Depth(128)));
        let deep = nested(1_000_000);
        assert_eq!(limits.check(&deep), Err(Exceeded::Depth(128)));
        dispose(deep);
        // Empty containers at the limit add no level below it.
        let edge = Limits {
            max_depth: 1,
            max_bytes: 100,
        };
        assert_eq!(edge.check(&json!([[]])), Ok(()));
        assert_eq!(edge.check(&json!([[1]])), Err(Exceeded::Depth(1)));
        assert_eq!(edge.check(&json!({"a": {"b": 1}})), Err(Exceeded::Depth(1)));
    }

    #[test]
    fn size_is_an_upper_bound_of_the_json_text() {
        let value = json!({"text": "x".repeat(1000), "n": [1, 2.5, null, true]});
        let text = value.to_string().len();
        let tight = Limits {
            max_depth: 8,
            max_bytes: text - 1,
        };
        assert_eq!(tight.check(&value), Err(Exceeded::Bytes(text - 1)));
        let roomy = Limits {
            max_depth: 8,
            max_bytes: text * 2,
        };
        assert_eq!(roomy.check(&value), Ok(()));
        let wide = Value::Array(vec![Value::Null; 10_000_000]);
        assert!(Limits::default().check(&wide).is_err());
        dispose(wide);
    }
}

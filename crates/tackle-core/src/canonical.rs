//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and a stable fingerprint.
//!
//! Replay keys a call by its tool key and the canonical form of its (redacted) input,
//! so two inputs that mean the same JSON get the same key however they were written:
//! object keys are sorted by UTF-16 code units, there is no whitespace, strings use the
//! minimal escaping of ECMAScript's `JSON.stringify`, and numbers are written the way
//! ECMAScript writes doubles (`1.0` and `1` are both `1`, `1e21` is `1e+21`).

use serde_json::{Number, Value};

/// The RFC 8785 canonical form of a JSON value.
pub fn canonical(value: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(&mut out, value);
    out
}

/// Appends the canonical form of `value` to `out` (to reuse a buffer).
pub fn canonical_into(value: &Value, out: &mut String) {
    write_value(out, value);
}

/// Feeds the canonical form of `value` to `hasher`, as [`canonical`] would write it,
/// without building the text.
pub fn canonical_hash(value: &Value, hasher: &mut Fnv) {
    write_value(hasher, value);
}

/// Whether `a` and `b` surely have the same canonical form, found without writing it:
/// they are equal values whose objects list their members in the same order. `false`
/// says nothing (`1.0` and `1`, or the same members in another order, have one
/// canonical form too), and neither does nesting deeper than 32 levels.
pub fn surely_same(a: &Value, b: &Value) -> bool {
    same(a, b, 32)
}

fn same(a: &Value, b: &Value, depth: u8) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            depth > 0
                && x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy, depth - 1))
        }
        (Value::Array(x), Value::Array(y)) => {
            depth > 0
                && x.len() == y.len()
                && x.iter().zip(y).all(|(vx, vy)| same(vx, vy, depth - 1))
        }
        // Numbers equal as the same kind of number have one canonical form.
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// Where canonical text goes: a buffer, or a hasher that needs only its bytes.
trait Sink {
    fn put(&mut self, text: &str);

    fn put_char(&mut self, c: char) {
        self.put(c.encode_utf8(&mut [0; 4]));
    }

    /// One ASCII punctuation character (`{`, `"`, `:`, ...): a byte, not a copy.
    fn put_ascii(&mut self, byte: u8) {
        self.put_char(char::from(byte));
    }
}

impl Sink for String {
    #[inline]
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }

    #[inline]
    fn put_char(&mut self, c: char) {
        self.push(c);
    }

    #[inline]
    fn put_ascii(&mut self, byte: u8) {
        self.push(char::from(byte));
    }
}

impl Sink for Fnv {
    fn put(&mut self, text: &str) {
        std::hash::Hasher::write(self, text.as_bytes());
    }

    fn put_ascii(&mut self, byte: u8) {
        std::hash::Hasher::write_u8(self, byte);
    }
}

/// Orders object keys by UTF-16 code units, as RFC 8785 requires. For ASCII keys (the
/// usual case) that is byte order, which is cheaper to compare.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    // Keys that differ in an ASCII first character are in that character's order in
    // UTF-8 and UTF-16 alike (the usual case: no comparison of whole keys).
    if let (Some(&x), Some(&y)) = (a.as_bytes().first(), b.as_bytes().first()) {
        if x != y && x.is_ascii() && y.is_ascii() {
            return x.cmp(&y);
        }
    }
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn write_value(out: &mut impl Sink, value: &Value) {
    match value {
        Value::Null => out.put("null"),
        Value::Bool(b) => out.put(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.put_ascii(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put_ascii(b',');
                }
                write_value(out, item);
            }
            out.put_ascii(b']');
        }
        Value::Object(map) => {
            let sorted = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| utf16_order(a, b).is_lt());
            out.put_ascii(b'{');
            if sorted {
                // Already in canonical order (inputs usually follow their schema): no
                // buffer to sort.
                write_entries(out, map.iter());
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
                write_entries(out, entries.into_iter());
            }
            out.put_ascii(b'}');
        }
    }
}

fn write_entries<'a>(out: &mut impl Sink, entries: impl Iterator<Item = (&'a String, &'a Value)>) {
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.put_ascii(b',');
        }
        write_string(out, k);
        out.put_ascii(b':');
        match v {
            // A flat object's members are mostly numbers: written here, not through
            // another call of `write_value`.
            Value::Number(n) => write_number(out, n),
            v => write_value(out, v),
        }
    }
}

fn write_number(out: &mut impl Sink, n: &Number) {
    // Integers that a double holds exactly are written as integers; anything else is
    // written as the double ECMAScript would print.
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= 1 << 53 {
            out.put(itoa::Buffer::new().format(i));
            return;
        }
    } else if let Some(u) = n.as_u64() {
        if u <= 1 << 53 {
            out.put(itoa::Buffer::new().format(u));
            return;
        }
    }
    let x = n.as_f64().unwrap_or(0.0);
    if x == 0.0 {
        out.put("0");
    } else if (1e-6..1e21).contains(&x.abs()) {
        // Rust's shortest round-trip digits, in plain notation (`100`, `0.25`).
        out.put(&x.to_string());
    } else {
        // Exponent notation with an explicit `+` for positive exponents (`1e+21`).
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                out.put(&format!("{mantissa}e+{exp}"));
            }
            _ => out.put(&s),
        }
    }
}

fn write_string(out: &mut impl Sink, s: &str) {
    out.put_ascii(b'"');
    // Most strings (keys, words) need no escape: copy them whole.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.put(s);
        out.put_ascii(b'"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.put("\\\""),
            '\\' => out.put("\\\\"),
            '\u{08}' => out.put("\\b"),
            '\u{0c}' => out.put("\\f"),
            '\n' => out.put("\\n"),
            '\r' => out.put("\\r"),
            '\t' => out.put("\\t"),
            c if (c as u32) < 0x20 => {
                out.put(&format!("\\u{:04x}", c as u32));
            }
            c => out.put_char(c),
        }
    }
    out.put_ascii(b'"');
}

/// A short, stable fingerprint of a value: FNV-1a (64-bit) over its canonical form.
/// Stable across runs, platforms and key order; not a cryptographic hash.
pub fn fingerprint(value: &Value) -> String {
    let mut hasher = Fnv::default();
    std::hash::Hasher::write(&mut hasher, canonical(value).as_bytes());
    format!("{:016x}", std::hash::Hasher::finish(&hasher))
}

/// FNV-1a, 64-bit: stable, and fast on the short keys of a cassette's indexes (which
/// hold local test data, so they need no protection against crafted collisions).
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed with [`Fnv`].
pub type FnvMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// A hash set hashed with [`Fnv`].
pub type FnvSet<T> = std::collections::HashSet<T, std::hash::BuildHasherDefault<Fnv>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_is_the_texts() {
        use std::hash::Hasher;
        let value =
            serde_json::json!({"b": [1, 2.5, "x\n\u{1}é"], "a": {"z": null, "y": true}, "é": 1e30});
        let mut text = Fnv::default();
        text.write(canonical(&value).as_bytes());
        let mut streamed = Fnv::default();
        canonical_hash(&value, &mut streamed);
        assert_eq!(text.finish(), streamed.finish());
    }

    #[test]
    fn surely_same_is_never_wrong_about_the_canonical_form() {
        let values: Vec<Value> = [
            r#"{"a": 1, "b": [2, "x", {"c": null}]}"#,
            r#"{"b": [2, "x", {"c": null}], "a": 1}"#,
            r#"{"a": 1.0, "b": [2, "x", {"c": null}]}"#,
            r#"{"a": 1, "b": [2, "x", {"c": false}]}"#,
            r#"{"a": 1, "b": [2, "x"]}"#,
            r#"{"a": 1}"#,
            r#"{"a": -0.0}"#,
            r#"{"a": 0.0}"#,
            r#"{"a": 0}"#,
            r#"{"a": "1"}"#,
            r#"[1, 2]"#,
            r#"[2, 1]"#,
            r#"{"é": 1, "e": 2}"#,
            r#"{"e": 2, "é": 1}"#,
        ]
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect();
        let mut said_same = 0;
        for a in &values {
            for b in &values {
                if surely_same(a, b) {
                    said_same += 1;
                    assert_eq!(canonical(a), canonical(b), "{a} {b}");
                }
            }
        }
        // Each value with itself, and the two zeros of one kind (one form, "0").
        assert_eq!(said_same, values.len() + 2);
        // Other spellings of one form are left to the canonical form.
        assert!(!surely_same(&values[0], &values[1]));
        assert!(!surely_same(&values[0], &values[2]));
        assert_eq!(canonical(&values[0]), canonical(&values[2]));
        // Past 32 levels, it does not say.
        let mut deep = json!(1);
        for _ in 0..40 {
            deep = json!([deep]);
        }
        assert!(!surely_same(&deep, &deep.clone()));
        assert!(surely_same(&json!([[[[1]]]]), &json!([[[[1]]]])));
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{ "b": 1, "a": [true, null, "x"] }"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":[true,null,"x"],"b":1}"#).unwrap();
        assert_eq!(canonical(&a), r#"{"a":[true,null,"x"],"b":1}"#);
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn number_spelling_does_not_matter() {
        for (text, expected) in [
            ("1", "1"),
            ("1.0", "1"),
            ("1e2", "100"),
            ("-0.0", "0"),
            ("0.25", "0.25"),
            ("2.5e-7", "2.5e-7"),
            ("1e21", "1e+21"),
            ("123456789012", "123456789012"),
            ("1.5E+3", "1500"),
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(canonical(&v), expected, "{text}");
        }
    }

    #[test]
    fn the_key_order_is_utf16_order_for_every_pair() {
        let keys = [
            "",
            "a",
            "b",
            "ab",
            "aé",
            "B",
            "é",
            "ö",
            "\u{80}",
            "\u{fb33}",
            "\u{1f600}",
            "\u{1f600}a",
            "1",
            "10",
            "\r",
            "zz",
            "z\u{1f600}",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(
                    utf16_order(a, b),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} against {b:?}"
                );
            }
        }
    }

    #[test]
    fn rfc8785_sample_sorting_and_escaping() {
        // Keys sort by UTF-16 code units: U+1F600 (a surrogate pair, 0xD83D...) sorts
        // before U+FB33 (0xFB33), unlike in UTF-8 byte order.
        let v = json!({"\u{fb33}": 1, "\u{1f600}": 2, "\r": 3, "1": 4, "\u{80}": 5, "ö": 6});
        assert_eq!(
            canonical(&v),
            "{\"\\r\":3,\"1\":4,\"\u{80}\":5,\"ö\":6,\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
        assert_eq!(canonical(&json!("a\u{1}\"\\/é")), "\"a\\u0001\\\"\\\\/é\"");
    }
}

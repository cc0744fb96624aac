//! Redaction: secrets never reach a cassette.
//!
//! One function, [`Redactor::redact`], runs at one choke point: on every input before
//! it is hashed (when recording *and* when replaying, so a redacted input still
//! matches), and on everything before it is saved. It replaces configured secret
//! values and strings shaped like credentials (`Bearer` tokens, `sk-...` API keys,
//! JWTs) with `[REDACTED]`, wherever they occur inside a string.

use std::borrow::Cow;

use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces secrets in JSON values. Token-shaped strings are always redacted; add
/// known secret values with [`Redactor::with_secret`].
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for token-shaped strings only.
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Also redacts this exact value wherever it occurs. Values shorter than four
    /// characters are ignored: they would shred ordinary text.
    pub fn with_secret(mut self, value: impl Into<String>) -> Redactor {
        let value = value.into();
        if value.chars().count() >= 4 && !self.secrets.contains(&value) {
            self.secrets.push(value);
            // Longest first, so a secret containing another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        self
    }

    /// The value with every secret replaced. Object keys are kept.
    pub fn redact(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact_str(s).into_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.redact(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Replaces every secret in `value` where it stands (for a value the caller owns:
    /// no copy). `value` is within the door's depth limit.
    pub(crate) fn redact_in_place(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(redacted) = self.redact_str(s) {
                    *s = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_in_place(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_in_place(v)),
            _ => {}
        }
    }

    /// The value with every secret replaced, borrowed when there is none (the common
    /// case, which then costs no copy).
    pub fn redact_cow<'a>(&self, value: &'a Value) -> Cow<'a, Value> {
        if self.is_clean(value) {
            Cow::Borrowed(value)
        } else {
            Cow::Owned(self.redact(value))
        }
    }

    fn is_clean(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => matches!(self.redact_str(s), Cow::Borrowed(_)),
            Value::Array(items) => items.iter().all(|v| self.is_clean(v)),
            Value::Object(map) => map.values().all(|v| self.is_clean(v)),
            _ => true,
        }
    }

    /// The text with every secret replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        if let Some(replaced) = redact_tokens(&out) {
            out = Cow::Owned(replaced);
        }
        out
    }
}

/// Characters of base64url and similar token alphabets.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
}

/// Replaces token-shaped runs; `None` when there are none.
///
/// Only a word's first byte can start a token (`b`/`B` of `Bearer `, `s` of `sk-`,
/// `e` of `eyJ`), so the scan jumps from one such byte to the next: ordinary text is
/// passed over at the speed of a byte search.
fn redact_tokens(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut last = 0;
    let mut i = 0;
    let mut changed = false;
    while let Some(offset) = bytes[i..]
        .iter()
        .position(|b| matches!(b, b'b' | b'B' | b's' | b'e'))
    {
        i += offset;
        // The byte before a candidate is ASCII or part of a multibyte character
        // (never a token character); the candidate is ASCII, so `i` is a boundary.
        let at_word_start = i == 0 || !token_char(char::from(bytes[i - 1]));
        let rest = &text[i..];
        let token_end = if !at_word_start {
            None
        } else if rest
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer "))
        {
            let start = i + 7;
            let end = start
                + text[start..]
                    .find(|c: char| !(token_char(c) || matches!(c, '.' | '~' | '+' | '/' | '=')))
                    .unwrap_or(text.len() - start);
            (end > start).then(|| {
                out.push_str(&text[last..start]);
                last = start;
                end
            })
        } else if let Some(key) = rest.strip_prefix("sk-") {
            let end = i + 3 + key.find(|c: char| !token_char(c)).unwrap_or(key.len());
            (end - i >= 3 + 16).then(|| {
                out.push_str(&text[last..i]);
                last = i;
                end
            })
        } else if rest.starts_with("eyJ") {
            jwt_len(rest).map(|len| {
                out.push_str(&text[last..i]);
                last = i;
                i + len
            })
        } else {
            None
        };
        match token_end {
            Some(end) => {
                out.push_str(REDACTED);
                last = end;
                i = end;
                changed = true;
            }
            None => i += 1,
        }
    }
    changed.then(|| {
        out.push_str(&text[last..]);
        out
    })
}

/// The length of a JWT at the start of `s`: three base64url segments joined by dots,
/// the first starting `eyJ` (a JSON object).
fn jwt_len(s: &str) -> Option<usize> {
    let mut len = 0;
    for part in 0..3 {
        let seg = s[len..]
            .find(|c: char| !token_char(c))
            .unwrap_or(s.len() - len);
        if seg < 2 {
            return None;
        }
        len += seg;
        if part < 2 {
            if !s[len..].starts_with('.') {
                return None;
            }
            len += 1;
        }
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_with_multibyte_characters_is_scanned_without_panicking() {
        // Byte 7 falls inside `°` (bytes 6..8): no slice may cut it.
        for text in [
            "abcdef°x",
            "12°C in Oslo",
            "Größe: ünïcödé",
            "日本語のテキスト",
            "bearer°",
        ] {
            assert_eq!(redact_tokens(text), None, "{text}");
        }
        assert_eq!(
            redact_tokens("«Bearer abcdefghijklmnop» °").as_deref(),
            Some("«Bearer [REDACTED]» °")
        );
    }

    #[test]
    fn a_token_starts_only_a_word() {
        let r = Redactor::new();
        let key = "sk-proj-ABCDEFGHIJKLMNOP1234";
        assert_eq!(r.redact_str(&format!("°{key}")), "°[REDACTED]");
        assert_eq!(r.redact_str(&format!("x{key}")), format!("x{key}"));
        assert_eq!(r.redact_str("xBearer abcdef"), "xBearer abcdef");
        assert_eq!(
            r.redact_str("bee sea BEARER abc sk- eyJ"),
            "bee sea BEARER [REDACTED] sk- eyJ"
        );
        assert_eq!(
            r.redact_str(&format!("{key} and {key}")),
            "[REDACTED] and [REDACTED]"
        );
    }

    #[test]
    fn token_shapes_are_redacted() {
        let r = Redactor::new();
        assert_eq!(
            r.redact_str("Authorization: Bearer abc.DEF-123_x~+/="),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            r.redact_str("key sk-proj-ABCDEFGHIJKLMNOP1234 end"),
            "key [REDACTED] end"
        );
        assert_eq!(
            r.redact_str("sk-short"),
            "sk-short",
            "too short to be a key"
        );
        assert_eq!(
            r.redact_str("task-abcdefghijklmnopqrstu"),
            "task-abcdefghijklmnopqrstu",
            "not at a word start"
        );
        let jwt =
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
        assert_eq!(r.redact_str(&format!("token={jwt};")), "token=[REDACTED];");
        assert_eq!(
            r.redact_str("eyJust words. Not.a jwt"),
            "eyJust words. Not.a jwt"
        );
        assert_eq!(
            r.redact_str("plain text, nothing to hide"),
            "plain text, nothing to hide"
        );
    }

    #[test]
    fn configured_secrets_anywhere_in_values() {
        let r = Redactor::new().with_secret("hunter22").with_secret("ab");
        let v = json!({"password": "hunter22", "note": "my hunter22!", "list": ["x", "hunter22"], "n": 3, "ab": "ab"});
        assert_eq!(
            r.redact(&v),
            json!({"password": "[REDACTED]", "note": "my [REDACTED]!", "list": ["x", "[REDACTED]"], "n": 3, "ab": "ab"})
        );
    }

    #[test]
    fn redaction_is_idempotent() {
        let r = Redactor::new().with_secret("s3cr3t-value");
        let once = r.redact(&json!("s3cr3t-value and Bearer xyz"));
        assert_eq!(r.redact(&once), once);
    }
}

//! Secrets: what a call must not leak, and the one place that takes it out.
//!
//! A call can carry four kinds of secret: the caller's (the values in its
//! [`ToolContext`](crate::ToolContext)), the call's secret arguments (see
//! [`crate::call`]'s secrets stage), the secrets a cassette is configured with
//! ([`CassetteConfig::with_secret`](crate::replay::CassetteConfig::with_secret)), and
//! strings shaped like credentials (`Bearer` tokens, `sk-...` API keys, JWTs), which
//! need no configuring.
//!
//! The door builds one [`Scrubber`] per call from all four and applies it at two
//! points:
//!
//! 1. **the input**, before anything keys, binds or keeps it: [`Scrubber::input`] gives
//!    the input with every secret replaced by `[REDACTED]` (a secret argument's whole
//!    value, whatever its type), and [`Scrubber::key`] its canonical form, computed once
//!    per call and shared by the replay router (which matches and records it), the
//!    approval binding and a durable run's journal;
//! 2. **the outcome**, right after execution, before anything else sees it (shaping and
//!    its spill files, sanitization, the recording, the audit event, the caller, a
//!    model, an MCP client): [`Scrubber::outcome`] (for a typed operation's outcome,
//!    its effect's [`Effect::scrub`](crate::call::Effect::scrub) with the same
//!    scrubber) replaces the caller's secrets and
//!    the secret arguments, token-shaped strings and a cassette's secrets with
//!    `[REDACTED]` (the one marker: [`REDACTED`]), in an output's strings and in every
//!    text of an error.
//!    A call ended before it ran (invalid input, denied, not found) has its error
//!    scrubbed the same way, once, when it leaves the door.
//!
//! What a running tool sends on its way (streamed chunks, model deltas, log messages)
//! is scrubbed by [`ToolContext::redact_secrets`](crate::ToolContext::redact_secrets)
//! with the same rules, the cassette's secrets aside (a running call's context does
//! not know its cassette); what it logs, by a layer that knows no call's context, with
//! [`scrub_running`] (the secrets of the calls running on the thread).
//!
//! A [`Redactor`] alone (token shapes and configured values, `[REDACTED]`) is what a
//! cassette applies to what it is configured with.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::ToolError;

/// What replaces a secret, wherever it is found: inputs, outputs, error texts, events,
/// cassettes, spill files.
pub const REDACTED: &str = "[REDACTED]";

/// The marker outcomes were scrubbed with before [`REDACTED`] was the only one: a
/// cassette recorded then is read with it upgraded (see
/// [`crate::replay::file::load`]), so it replays, and checks, as before.
pub(crate) const LEGACY_MARKER: &str = "<redacted>";

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
        // Numbers, booleans and null hold no text: passed over without a call.
        let clean = |v: &Value| match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => true,
            v => self.is_clean(v),
        };
        match value {
            Value::String(s) => matches!(self.redact_str(s), Cow::Borrowed(_)),
            Value::Array(items) => items.iter().all(clean),
            Value::Object(map) => map.values().all(clean),
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

/// Replaces each of `secrets` (non-empty ones, in the order given: longest first, so
/// a secret containing another is replaced whole) in `text` with [`REDACTED`];
/// whether anything was replaced.
pub fn scrub_text<'s>(text: &mut String, secrets: impl IntoIterator<Item = &'s str>) -> bool {
    let mut changed = false;
    for secret in secrets {
        if !secret.is_empty() && text.contains(secret) {
            *text = text.replace(secret, REDACTED);
            changed = true;
        }
    }
    changed
}

/// Scrubs `text` of the secrets of every tool call whose code runs on this thread
/// right now: each call's caller's secrets and its secret arguments' values become
/// [`REDACTED`]; whether anything was replaced. The door marks the thread while a
/// tool's code runs (each poll of an async tool, the whole of a synchronous one), so
/// a `tracing` layer that sends what a tool logs somewhere (the MCP server's log to
/// its clients) scrubs each event with it: an event that happens inside a call is
/// scrubbed with that call's secrets, its secret arguments included, whatever
/// context the layer itself holds. Token shapes are left to the caller's own scrubber
/// ([`Redactor`], [`crate::ToolContext::redact_secrets`]).
pub fn scrub_running(text: &mut String) -> bool {
    running::scrub(text)
}

/// The secrets of the tool calls whose code runs on this thread, innermost last:
/// marked by the door (its panic guard) while a tool's code runs.
pub(crate) mod running {
    use std::cell::RefCell;
    use std::sync::Arc;

    thread_local! {
        static RUNNING: RefCell<Vec<Arc<[String]>>> = const { RefCell::new(Vec::new()) };
    }

    /// Marks the thread as running a call with `secrets`.
    pub(crate) fn push(secrets: Arc<[String]>) {
        RUNNING.with(|r| r.borrow_mut().push(secrets));
    }

    /// Ends the innermost mark.
    pub(crate) fn pop() {
        RUNNING.with(|r| {
            r.borrow_mut().pop();
        });
    }

    /// The innermost call's secrets.
    pub(crate) fn innermost() -> Option<Arc<[String]>> {
        RUNNING
            .try_with(|r| r.borrow().last().cloned())
            .ok()
            .flatten()
    }

    /// Scrubs `text` of every marked call's secrets, innermost first.
    pub(super) fn scrub(text: &mut String) -> bool {
        RUNNING
            .try_with(|running| {
                running
                    .borrow()
                    .iter()
                    .rev()
                    .fold(false, |changed, secrets| {
                        super::scrub_text(text, secrets.iter().map(String::as_str)) | changed
                    })
            })
            .unwrap_or(false)
    }
}

/// The one scrubber of a call (see the [module docs](self)): the caller's secrets,
/// the call's secret arguments (their values, and the names whose whole values go),
/// the cassette's configured secrets and token shapes.
#[derive(Debug)]
pub struct Scrubber<'a> {
    /// The caller's secret values.
    caller: Vec<&'a str>,
    /// The secret arguments' values, longest first.
    arguments: &'a [String],
    /// The names of the call's secret arguments.
    fields: &'a [String],
    /// Token shapes, and the cassette's configured secrets when the call has one.
    redactor: &'a Redactor,
}

/// A redactor of token shapes alone, for calls without a cassette.
static TOKENS: Redactor = Redactor {
    secrets: Vec::new(),
};

impl<'a> Scrubber<'a> {
    /// The scrubber of a call whose caller holds `caller` secrets, whose secret
    /// arguments have `arguments` values and are named `fields`, and whose cassette
    /// (if any) redacts with `cassette`.
    pub fn new(
        caller: impl IntoIterator<Item = &'a str>,
        arguments: &'a [String],
        fields: &'a [String],
        cassette: Option<&'a Redactor>,
    ) -> Scrubber<'a> {
        Scrubber {
            caller: caller.into_iter().filter(|s| !s.is_empty()).collect(),
            arguments,
            fields,
            redactor: cassette.unwrap_or(&TOKENS),
        }
    }

    /// The call's input as it may be keyed, bound and kept: every secret replaced with
    /// `[REDACTED]` (values shorter than four characters are left, as they would
    /// shred ordinary text; a secret argument goes whole whatever its length), copied
    /// only when something changed.
    pub fn input<'v>(&self, input: &'v Value) -> Cow<'v, Value> {
        let redacted = if self.caller.is_empty() && self.arguments.is_empty() {
            self.redactor.redact_cow(input)
        } else {
            let redactor = self
                .caller
                .iter()
                .copied()
                .chain(self.arguments.iter().map(String::as_str))
                .fold(self.redactor.clone(), |r, s| r.with_secret(s));
            redactor.redact_cow(input)
        };
        if self.fields.is_empty() {
            return redacted;
        }
        let mut input = redacted.into_owned();
        if let Value::Object(map) = &mut input {
            for name in self.fields {
                if let Some(value) = map.get_mut(name) {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
        }
        Cow::Owned(input)
    }

    /// The canonical form of an input made by [`Scrubber::input`]: the call's key,
    /// with its tool's key, for the replay router, the approval binding and the
    /// journal.
    pub fn key(scrubbed: &Value) -> String {
        crate::canonical::canonical(scrubbed)
    }

    /// Scrubs an outcome (see the [module docs](self)): the output's strings unless
    /// `keep_output` (a tool that reveals secrets on purpose), and every text of an
    /// error.
    pub fn outcome(&self, result: &mut Result<Value, ToolError>, keep_output: bool) {
        match result {
            Ok(output) if !keep_output => {
                self.value(output);
            }
            Ok(_) => {}
            Err(error) => error.for_each_text(&mut |text| {
                self.text(text);
            }),
        }
    }

    /// Scrubs one text: the caller's secrets become `[REDACTED]`, then the cassette's
    /// secrets and token shapes, then what is left of the secret arguments' values
    /// (a `Bearer ...` argument shows as `Bearer
    /// [REDACTED]`, as a token anywhere does); whether anything changed.
    pub fn text(&self, text: &mut String) -> bool {
        let mut changed = scrub_text(text, self.caller.iter().copied());
        if let Cow::Owned(redacted) = self.redactor.redact_str(text) {
            *text = redacted;
            changed = true;
        }
        scrub_text(text, self.arguments.iter().map(String::as_str)) || changed
    }

    /// Scrubs every string of `value`, as [`Scrubber::text`] scrubs one; whether
    /// anything changed. The door calls it on values within its depth limit (see
    /// [`crate::bounds`]), so its recursion is bounded there; a typed effect's code
    /// checks the bounds of the values it scrubs (see [`crate::call::Effect::scrub`]).
    pub fn value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => self.text(text),
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.value(v) | c),
            Value::Object(map) => map.values_mut().fold(false, |c, v| self.value(v) | c),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_scrubber_takes_every_kind_of_secret_out() {
        let arguments = vec!["Bearer abc123.def-456".to_owned(), "pa55word-x".to_owned()];
        let fields = vec!["authorization".to_owned(), "pin".to_owned()];
        let cassette = Redactor::new().with_secret("configured-1");
        let scrubber = Scrubber::new(["caller-secret"], &arguments, &fields, Some(&cassette));

        // The input: everything is `[REDACTED]`, secret fields whole (a number too).
        let input = json!({
            "note": "caller-secret and configured-1 and sk-ABCDEFGHIJKLMNOPQRSTU",
            "authorization": "Bearer abc123.def-456",
            "pin": 1234,
            "copy": "pa55word-x"
        });
        let scrubbed = scrubber.input(&input);
        assert_eq!(
            *scrubbed,
            json!({
                "note": "[REDACTED] and [REDACTED] and [REDACTED]",
                "authorization": "[REDACTED]",
                "pin": "[REDACTED]",
                "copy": "[REDACTED]"
            })
        );
        assert_eq!(
            Scrubber::key(&scrubbed),
            crate::canonical::canonical(&scrubbed)
        );

        // The outcome: the caller's and the arguments' values, the cassette's and token
        // shapes are all `[REDACTED]`; errors in every text.
        let mut output: Result<Value, ToolError> = Ok(json!({
            "a": "caller-secret", "b": ["configured-1"], "c": "Bearer abc123.def-456",
            "d": "pa55word-x"
        }));
        scrubber.outcome(&mut output, false);
        assert_eq!(
            output.unwrap(),
            json!({"a": "[REDACTED]", "b": ["[REDACTED]"], "c": "Bearer [REDACTED]", "d": "[REDACTED]"})
        );
        let mut kept: Result<Value, ToolError> = Ok(json!("caller-secret"));
        scrubber.outcome(&mut kept, true);
        assert_eq!(
            kept.unwrap(),
            json!("caller-secret"),
            "a tool that reveals secrets"
        );
        let mut error: Result<Value, ToolError> = Err(ToolError::Execution {
            key: "k".into(),
            message: "refused pa55word-x for caller-secret".into(),
        });
        scrubber.outcome(&mut error, true);
        assert_eq!(
            error.unwrap_err().to_string(),
            "`k` failed: refused [REDACTED] for [REDACTED]"
        );
    }

    #[test]
    fn an_input_without_secrets_is_not_copied() {
        let scrubber = Scrubber::new([], &[], &[], None);
        let input = json!({"a": 1, "b": "plain text"});
        assert!(matches!(scrubber.input(&input), Cow::Borrowed(_)));
    }

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

//! Redaction: secrets never reach a cassette.
//!
//! [`Redactor`] replaces configured secret values and strings shaped like credentials
//! (`Bearer` tokens, `sk-...` API keys, JWTs) with `[REDACTED]`, wherever they occur
//! inside a string. It lives in [`crate::secrets`], with the scrubber the door applies
//! to every call's input before it is keyed or recorded and to its outcome; it is
//! named here too, where cassettes are.

pub use crate::secrets::{Redactor, REDACTED};

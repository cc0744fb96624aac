//! The warnings a run collects: what is worth knowing about a replayed run that did
//! not fail it.

use std::fmt;

use serde::Serialize;

/// Something worth knowing about a replayed run that did not fail it. Warnings are
/// data: match on them rather than on their text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "warning", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CassetteWarning {
    /// A tool's schemas changed since the cassette was recorded; replayed outputs are
    /// checked against the new schema.
    SchemaChanged {
        /// The tool's key.
        key: String,
        /// The fingerprint in the cassette.
        recorded: String,
        /// The fingerprint now.
        now: String,
    },
    /// A `recorded-result` call had no recording and ran live.
    RanLive {
        /// The tool's key.
        key: String,
        /// The call's number in this run.
        call: u64,
        /// Its input, redacted, as canonical JSON.
        input: String,
    },
    /// A call checked against its recording (a pure tool, a test model, or a `read`
    /// tool in mode `check`) gave another outcome; the recorded one was served.
    /// [`Cassette::finish`](super::Cassette::finish) fails with these under replay.
    OutcomeChanged {
        /// The tool's key.
        key: String,
        /// The call's number in this run.
        call: u64,
        /// The differences from the recording to this run's outcome, as the review
        /// shows them (`~ /ok/min: 25 -> 30`).
        changes: Vec<String>,
    },
}

impl CassetteWarning {
    /// The key of the tool the warning is about.
    pub fn key(&self) -> &str {
        match self {
            CassetteWarning::SchemaChanged { key, .. }
            | CassetteWarning::RanLive { key, .. }
            | CassetteWarning::OutcomeChanged { key, .. } => key,
        }
    }
}

impl fmt::Display for CassetteWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CassetteWarning::SchemaChanged { key, recorded, now } => write!(
                f,
                "the schema of `{key}` changed since the cassette was recorded (fingerprint {recorded} -> {now}); replayed outputs are checked against the new schema"
            ),
            CassetteWarning::RanLive { key, call, input } => write!(
                f,
                "call #{call} of `{key}` with {} was not recorded and ran live",
                abbreviated(input.clone())
            ),
            CassetteWarning::OutcomeChanged { key, call, changes } => {
                write!(f, "call #{call} `{key}`:")?;
                for change in changes {
                    write!(f, "\n    {change}")?;
                }
                Ok(())
            }
        }
    }
}

/// How much of an input a divergence message shows; the differences follow in full.
const SHOWN_INPUT: usize = 400;

/// `text`, cut after [`SHOWN_INPUT`] characters with a note of its full length.
pub(super) fn abbreviated(text: String) -> String {
    match text.char_indices().nth(SHOWN_INPUT) {
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

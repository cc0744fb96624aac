//! The cassette file: one pretty, stable JSON document per test.
//!
//! ```json
//! {
//!   "format": "tackle-cassette",
//!   "version": 1,
//!   "complete": true,
//!   "name": "replay.records_and_replays",
//!   "tools": { "math.add@1": "5f1c0d2e9a3b4c77" },
//!   "interactions": [
//!     { "call": 0, "key": "math.add@1", "kind": "tool", "policy": "recorded-result",
//!       "input": { "a": 2, "b": 3 }, "outcome": { "ok": 5 } }
//!   ]
//! }
//! ```
//!
//! A run that failed writes its cassette too ([`Cassette::finish_failed`](super::Cassette::finish_failed)):
//! `"complete": false` and `"failure": "<why>"`, with every interaction up to the
//! failure (the failing call's error among them), so replaying it reproduces the
//! failure. A file with `"complete": false` and no `failure` was not written to the end
//! and is refused.
//!
//! Metadata comes first in a fixed order; `tools` (schema fingerprints) is sorted by
//! key; interactions are in call order and keep their payloads' key order. Files are
//! written to a temporary file beside the target, fsynced, then renamed over it, so a
//! reader sees the old file or the new one, never half of one.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::spec::ReplayPolicy;

/// The `format` field of every cassette.
pub const FORMAT: &str = "tackle-cassette";
/// The format version this build reads and writes.
pub const VERSION: u32 = 1;

/// A whole cassette file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`].
    pub version: u32,
    /// Set when the file was written to the end by a finished run.
    pub complete: bool,
    /// Why the recorded run failed, when it did (then `complete` is `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The cassette's name (from the test's module path and name).
    pub name: String,
    /// Fingerprint of each recorded tool's schemas, by key.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// The recorded calls, in call order.
    pub interactions: Vec<Interaction>,
}

/// Whether an interaction is a tool call or another operation (a model completion).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InteractionKind {
    /// A tool call through the door.
    Tool,
    /// Any other recorded operation, such as a model completion.
    Operation,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    /// The call's position in the recorded run, from 0.
    pub call: u64,
    /// The tool or operation key.
    pub key: String,
    /// Tool or operation.
    pub kind: InteractionKind,
    /// The replay policy the call had when recorded.
    pub policy: ReplayPolicy,
    /// The input, redacted.
    pub input: Value,
    /// What happened: the outcome the caller got.
    pub outcome: Outcome,
    /// Whether the output was shaped (cut to the tool's `max_result_tokens`): a shaped
    /// output is not the tool's own, so replay does not check it against the schema.
    #[serde(default, skip_serializing_if = "is_false")]
    pub shaped: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a recorded call gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The output, redacted.
    Ok(Value),
    /// The error, which replays as the same error.
    Error(ToolError),
    /// A `fail-loud` call happened here; nothing can stand in for it.
    Tombstone,
}

impl Outcome {
    /// The outcome as a call result (a tombstone is a `ReplayGap`).
    pub fn into_result(self, key: &str, call: u64) -> Result<Value, ToolError> {
        match self {
            Outcome::Ok(value) => Ok(value),
            Outcome::Error(error) => Err(error),
            Outcome::Tombstone => Err(Outcome::gap(key, call)),
        }
    }

    /// A copy of the outcome as a call result (a tombstone is a `ReplayGap`), for a
    /// recording that stays in its cassette.
    #[inline]
    pub fn to_result(&self, key: &str, call: u64) -> Result<Value, ToolError> {
        match self {
            Outcome::Ok(value) => Ok(value.clone()),
            Outcome::Error(error) => Err(error.clone()),
            Outcome::Tombstone => Err(Outcome::gap(key, call)),
        }
    }

    /// Replaces the marker an older recording scrubbed the caller's secrets with
    /// (`<redacted>`) by the one marker, [`REDACTED`](crate::secrets::REDACTED), in
    /// the output's strings or the error's texts: what the door gives today, so the
    /// recording replays and checks as it did.
    fn upgrade_marker(&mut self) {
        use crate::secrets::{LEGACY_MARKER, REDACTED};
        let mut upgrade = |text: &mut String| {
            if text.contains(LEGACY_MARKER) {
                *text = text.replace(LEGACY_MARKER, REDACTED);
            }
        };
        match self {
            Outcome::Ok(value) => {
                // A stack, not recursion: a recording may be deep.
                let mut stack = vec![value];
                while let Some(value) = stack.pop() {
                    match value {
                        Value::String(text) => upgrade(text),
                        Value::Array(items) => stack.extend(items.iter_mut()),
                        Value::Object(map) => stack.extend(map.values_mut()),
                        _ => {}
                    }
                }
            }
            Outcome::Error(error) => error.for_each_text(&mut upgrade),
            Outcome::Tombstone => {}
        }
    }

    /// What a tombstone replays as: the call `call` of `key` cannot be replayed.
    fn gap(key: &str, call: u64) -> ToolError {
        ToolError::ReplayGap {
            key: key.to_owned(),
            call,
        }
    }
}

/// Why a cassette could not be opened, read, written or finished.
///
/// Its `Debug` form is its message, so a test's `.expect()` or `.unwrap()` shows
/// what to do (`no cassette at ...: record one with TACKLE_CASSETTE=once`), not a
/// struct.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read.
    #[error("cannot read cassette {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write cassette {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid cassette (truncated, edited by hand, another format).
    #[error("corrupt cassette {} at line {line}, column {column}: {message}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Line of the problem, from 1.
        line: usize,
        /// Column of the problem, from 1.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The file was written by another format version.
    #[error("cassette {} has format version {found}; this build reads version {supported}: re-record it with TACKLE_CASSETTE=rewrite", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        supported: u32,
    },
    /// The file was not written to the end.
    #[error("cassette {} is marked incomplete: re-record it with TACKLE_CASSETTE=rewrite", path.display())]
    Incomplete {
        /// The file.
        path: PathBuf,
    },
    /// Replay mode, and there is no cassette to replay.
    #[error("no cassette at {}: record one with TACKLE_CASSETTE=once", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// `TACKLE_CASSETTE` holds an unknown mode.
    #[error(
        "unknown cassette mode `{value}`: use one of replay, once, new, rewrite, live, review, check"
    )]
    UnknownMode {
        /// The value given.
        value: String,
    },
    /// A writing mode was asked for under CI.
    #[error("cassette mode `{mode}` writes cassettes, and CI is set: commit recorded cassettes and replay them in CI, or set TACKLE_CASSETTE_ALLOW_CI=1")]
    WritingInCi {
        /// The mode asked for.
        mode: String,
    },
    /// `recorded-result` calls that the cassette does not hold ran live during a
    /// replay: the recording is incomplete, and the test needed the live world.
    #[error("{} call(s) ran live during the replay of {} because the cassette does not hold them: {}. Record them with TACKLE_CASSETTE=new (appends what is missing) or TACKLE_CASSETTE=rewrite, or allow live reads with CassetteConfig::with_live_reads(true)", calls.len(), path.display(), calls.join("; "))]
    RanLive {
        /// The file.
        path: PathBuf,
        /// Each call that ran live, described.
        calls: Vec<String>,
    },
    /// Recorded must-stub calls were never replayed: the run took another path.
    #[error("{} recorded must-stub call(s) in {} were never replayed (the run took another path): {}. If the change is intended, re-record with `TACKLE_CASSETTE=review cargo test ...` and accept it with `cargo tackle review`", calls.len(), path.display(), calls.join("; "))]
    Unused {
        /// The file.
        path: PathBuf,
        /// Each unused call, described.
        calls: Vec<String>,
    },
    /// Calls checked during the replay (pure tools, test models, and `read` tools in
    /// mode `check`) gave outcomes other than their recordings: the code changed
    /// since the cassette was recorded. The run was served the recorded outcomes, so
    /// every such call is listed.
    #[error("{} call(s) in the replay of {} no longer give their recorded outcome (recorded -> now):\n{}\nIf the change is intended, re-record with `TACKLE_CASSETTE=review cargo test ...` and accept it with `cargo tackle review`", calls.len(), path.display(), calls.join("\n"))]
    Changed {
        /// The file.
        path: PathBuf,
        /// Each changed call: its number and key, then its differences as JSON
        /// pointers, one per line.
        calls: Vec<String>,
    },
}

impl std::fmt::Debug for CassetteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Where review mode ([`Mode::Review`](super::Mode::Review)) writes a fresh recording
/// of the cassette at `path`: beside it, `x.json` gives `x.pending.json` (and a name
/// without an extension, `x`, gives `x.pending`).
pub fn pending_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.extension() {
        Some(extension) => {
            path.with_file_name(format!("{stem}.pending.{}", extension.to_string_lossy()))
        }
        None => path.with_file_name(format!("{stem}.pending")),
    }
}

/// The cassette a pending file ([`pending_path`]) is a fresh recording of, when
/// `path` names a pending file.
pub fn committed_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    if let Some(stem) = name.strip_suffix(".pending").filter(|s| !s.is_empty()) {
        return Some(path.with_file_name(stem));
    }
    let (stem, extension) = name.rsplit_once('.')?;
    let stem = stem.strip_suffix(".pending").filter(|s| !s.is_empty())?;
    Some(path.with_file_name(format!("{stem}.{extension}")))
}

#[cfg(test)]
mod pending_tests {
    use super::*;

    #[test]
    fn pending_and_committed_paths_are_inverse() {
        for name in ["x.json", "dir/a.b.json", "x", "weird.pending.json.json"] {
            let path = Path::new(name);
            assert_eq!(
                committed_path(&pending_path(path)).as_deref(),
                Some(path),
                "{name}"
            );
        }
        assert_eq!(
            pending_path(Path::new("t/x.json")),
            Path::new("t/x.pending.json")
        );
        assert_eq!(committed_path(Path::new("x.json")), None);
        assert_eq!(committed_path(Path::new(".pending.json")), None);
    }

    #[test]
    fn a_cassette_scrubbed_with_the_old_marker_loads_with_the_one_marker() {
        let dir = std::env::temp_dir().join(format!("tackle-marker-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.json");
        let recorded = r#"{"format": "tackle-cassette", "version": 1, "complete": true,
            "name": "old", "tools": {},
            "interactions": [
              {"call": 0, "key": "a.b@1", "kind": "tool", "policy": "must-stub",
               "input": {"note": "<redacted> stays in an input"},
               "outcome": {"ok": {"deep": [["token <redacted>"]], "n": 1}}},
              {"call": 1, "key": "a.b@1", "kind": "tool", "policy": "must-stub",
               "input": {},
               "outcome": {"error": {"kind": "Execution", "key": "a.b@1",
                                     "message": "refused <redacted>"}}}
            ]}"#;
        fs::write(&path, recorded).unwrap();
        let file = load(&path).unwrap();
        assert_eq!(
            file.interactions[0].outcome,
            Outcome::Ok(serde_json::json!({"deep": [["token [REDACTED]"]], "n": 1}))
        );
        // An input keys the call: it is read as written.
        assert_eq!(
            file.interactions[0].input["note"],
            "<redacted> stays in an input"
        );
        match &file.interactions[1].outcome {
            Outcome::Error(error) => {
                assert_eq!(error.to_string(), "`a.b@1` failed: refused [REDACTED]")
            }
            other => panic!("{other:?}"),
        }
        fs::remove_dir_all(&dir).ok();
    }
}

/// Which recorded calls of a cassette a replay used: written beside the cassette
/// ([`usage_path`]) when a replay finishes with `TACKLE_CASSETTE_USAGE=1`, and read
/// by `cargo tackle cassette prune`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// The cassette's name.
    pub name: String,
    /// The [`digest`] of the interactions the replay read: a usage record applies
    /// only to the cassette it was taken from.
    pub digest: String,
    /// The positions (in `interactions`, from 0) of the interactions the replay
    /// used, in order.
    pub used: Vec<usize>,
}

/// Where a replay of the cassette at `path` writes its [`Usage`]: beside it,
/// `<stem>.usage.json`.
pub fn usage_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}.usage.json"))
}

/// A fingerprint of a cassette's interactions (FNV-1a of their canonical JSON, hex).
pub fn digest(interactions: &[Interaction]) -> String {
    use std::hash::Hasher;
    let mut hasher = crate::canonical::Fnv::default();
    for interaction in interactions {
        let value = serde_json::to_value(interaction).unwrap_or(Value::Null);
        hasher.write(crate::canonical::canonical(&value).as_bytes());
        hasher.write(b"\n");
    }
    format!("{:016x}", hasher.finish())
}

/// Reads and checks a cassette file.
pub fn load(path: &Path) -> Result<CassetteFile, CassetteError> {
    let bytes = fs::read(path).map_err(|source| CassetteError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut file: CassetteFile = match serde_json::from_slice(&bytes) {
        Ok(file) => file,
        Err(e) => {
            // A cassette of another version may fail to parse as this one: say so.
            if let Some(found) = version_of(&bytes).filter(|v| *v != u64::from(VERSION)) {
                return Err(CassetteError::UnsupportedVersion {
                    path: path.to_owned(),
                    found,
                    supported: VERSION,
                });
            }
            return Err(CassetteError::Corrupt {
                path: path.to_owned(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            });
        }
    };
    if file.format != FORMAT {
        return Err(CassetteError::Corrupt {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: format!("`format` is {:?}, not {FORMAT:?}", file.format),
        });
    }
    if file.version != VERSION {
        return Err(CassetteError::UnsupportedVersion {
            path: path.to_owned(),
            found: u64::from(file.version),
            supported: VERSION,
        });
    }
    if !file.complete && file.failure.is_none() {
        return Err(CassetteError::Incomplete {
            path: path.to_owned(),
        });
    }
    let legacy = crate::secrets::LEGACY_MARKER.as_bytes();
    if bytes.windows(legacy.len()).any(|window| window == legacy) {
        for interaction in &mut file.interactions {
            interaction.outcome.upgrade_marker();
        }
    }
    Ok(file)
}

fn version_of(bytes: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct Header {
        version: u64,
    }
    serde_json::from_slice::<Header>(bytes)
        .ok()
        .map(|h| h.version)
}

/// Removes the temporary files a writer of `path` left when it was killed mid-write:
/// `.<name>.<pid>.<n>.tmp` beside it, whose process is gone (on Linux, no
/// `/proc/<pid>`; elsewhere, untouched for ten minutes). Returns how many were removed.
/// A failure to list or remove is ignored: the files are only clutter.
pub fn clean_orphans(path: &Path) -> usize {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return 0;
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = fs::read_dir(&dir) else {
        return 0;
    };
    let prefix = format!(".{name}.");
    let mut removed = 0;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id()
            && writer_is_gone(pid, &entry)
            && fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

fn writer_is_gone(pid: u32, entry: &fs::DirEntry) -> bool {
    if cfg!(target_os = "linux") {
        return !Path::new(&format!("/proc/{pid}")).exists();
    }
    entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > std::time::Duration::from_secs(600))
}

/// Writes the [`Usage`] of the cassette at `path` beside it ([`usage_path`]).
pub fn save_usage(path: &Path, usage: &Usage) -> Result<(), CassetteError> {
    write_json(&usage_path(path), usage)
}

/// Reads the [`Usage`] a replay wrote for the cassette at `path`.
pub fn load_usage(path: &Path) -> Result<Usage, CassetteError> {
    let at = usage_path(path);
    let bytes = fs::read(&at).map_err(|source| CassetteError::Read {
        path: at.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| CassetteError::Corrupt {
        path: at,
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Removes the file at `path`, if there is one.
pub fn remove(path: &Path) -> Result<(), CassetteError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(CassetteError::Write {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes a cassette atomically: temporary file, fsync, rename, fsync of the folder.
pub fn save(path: &Path, file: &CassetteFile) -> Result<(), CassetteError> {
    write_json(path, file)
}

/// Writes `value` as pretty JSON atomically: temporary file, fsync, rename, fsync of
/// the folder.
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CassetteError> {
    let fail = |source| CassetteError::Write {
        path: path.to_owned(),
        source,
    };
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| fail(std::io::Error::other(e)))?;
    bytes.push(b'\n');
    write_atomically(path, &bytes).map_err(fail)
}

/// Writes `bytes` to `path` atomically: a new temporary file beside it
/// (`.<name>.<pid>.<n>.tmp`, created afresh, so never through a link planted there),
/// synced, renamed over `path` (which replaces a link there rather than writing
/// through it), then the folder synced. The folder is created if missing. A reader
/// sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable; not every platform can open a folder.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

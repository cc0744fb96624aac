//! Result shaping: keeping long results within a tool's `max_result_tokens`.
//!
//! A model's context is finite; a tool that may return a whole log or web page sets
//! `max_result_tokens`, and the door shapes a longer result by the tool's
//! [`ResultShaping`] strategy:
//!
//! * `middle` keeps the beginning and the end, with a marker saying how many tokens
//!   were left out between them;
//! * `tail` keeps the end (a program's last lines, where its errors are), with a
//!   marker at the start saying how many tokens came before;
//! * `spill-to-file` hands the whole result to the runtime's [`SpillWriter`] and
//!   returns a handle: the path, the size and a short preview. Nothing is lost. The
//!   default writer, [`FileSpillWriter`], writes
//!   `<temp dir>/tackle-spill/<run_id>/<call_id>.<ext>` (`call_id` the tool call's id
//!   as the model gave it, or the door's number for a call given none; `txt` for text, `json`
//!   otherwise), the file readable by its owner only (mode 0600), the directories mode
//!   0700. The run id is the call's run's ([`Run::with_id`](crate::run::Run::with_id)) or, for a plain call,
//!   the runtime's own. A `secret` tool's results are never spilled (they are shaped as
//!   `middle`, and the report says why);
//! * `summarize` passes the text to the runtime's [`Summarizer`] hook. Without a hook,
//!   or when the hook fails, the result is shaped as `middle`, and the report says why.
//!
//! A tool that sets no `max_result_tokens` is shaped at
//! [`DEFAULT_MAX_RESULT_TOKENS`](crate::spec::DEFAULT_MAX_RESULT_TOKENS) (16384); `0`
//! turns shaping off. A tool that sets no strategy gets the default for its name
//! ([`ResultShaping::default_for_tool`]).
//!
//! Lengths are estimated at four characters a token ([`estimate_tokens`]); a string
//! result is shaped as it is, any other result as its compact JSON text. Shaping runs
//! after output validation: a shaped result is for the model, and says so. Markers are
//! plain text that never trips the injection scan of [`crate::sanitize`].

use std::fmt;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{json, Value};

use crate::spec::{ResultShaping, Sensitivity};

#[cfg(doc)]
use crate::context::ToolContext;

/// One result to spill, as the door hands it to a [`SpillWriter`].
#[derive(Clone, Copy, Debug)]
pub struct Spill<'a> {
    /// The run the call belongs to.
    pub run_id: &'a str,
    /// The call's id as the model gave it (a tool call's `id`), so the model can
    /// name the file it was told about; the door's number for the call when the
    /// caller gave none.
    pub call_id: &'a str,
    /// The tool's key.
    pub key: &'a str,
    /// `txt` for a text result, `json` for any other.
    pub extension: &'a str,
    /// The whole result.
    pub content: &'a str,
    /// The tool's sensitivity, for the writer to honour (never `secret`: those are not
    /// spilled).
    pub sensitivity: Sensitivity,
}

/// Where spilled results go: a file system, a sandbox's volume, object storage.
pub trait SpillWriter: Send + Sync {
    /// Stores `spill` and says where (the path in the handle the model gets), or why
    /// it could not.
    fn write(&self, spill: &Spill<'_>) -> Result<PathBuf, String>;
}

/// The default [`SpillWriter`]: `<root>/<run_id>/<call_id>.<ext>`, files mode 0600 and
/// directories mode 0700, never overwriting (a taken name gets `-2`, `-3`, ...).
#[derive(Clone, Debug)]
pub struct FileSpillWriter {
    root: PathBuf,
}

impl FileSpillWriter {
    /// A writer under `root`.
    pub fn new(root: impl Into<PathBuf>) -> FileSpillWriter {
        FileSpillWriter { root: root.into() }
    }

    /// The default root: `<temp dir>/tackle-spill`.
    pub fn default_root() -> PathBuf {
        std::env::temp_dir().join("tackle-spill")
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Default for FileSpillWriter {
    fn default() -> FileSpillWriter {
        FileSpillWriter::new(FileSpillWriter::default_root())
    }
}

/// A path segment made of `text`: ASCII letters, digits, `-`, `_` and `.` kept, any
/// other character `_`, never empty or a dot name (a name from outside made safe as
/// one file or folder name).
pub fn segment(text: &str) -> String {
    let safe: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() || safe.chars().all(|c| c == '.') {
        format!("_{safe}")
    } else {
        safe
    }
}

impl SpillWriter for FileSpillWriter {
    fn write(&self, spill: &Spill<'_>) -> Result<PathBuf, String> {
        let dir = self.root.join(segment(spill.run_id));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let stem = segment(spill.call_id);
        for n in 1..=1000u32 {
            let name = match n {
                1 => format!("{stem}.{}", spill.extension),
                n => format!("{stem}-{n}.{}", spill.extension),
            };
            let path = dir.join(name);
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(&path) {
                Ok(mut file) => {
                    return file
                        .write_all(spill.content.as_bytes())
                        .and_then(|()| file.sync_all())
                        .map(|()| path.clone())
                        .map_err(|e| {
                            let _ = std::fs::remove_file(&path);
                            format!("{}: {e}", path.display())
                        });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        Err(format!(
            "{}: every name for call `{}` is taken",
            dir.display(),
            spill.call_id
        ))
    }
}

/// Estimated tokens of `text`: one per four characters, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Whether `value`'s text (a string as it is, anything else as compact JSON) surely has
/// at most `max_chars` characters, from an upper bound computed without serializing
/// (and without recursion). `false` means "maybe not": measure it.
pub(crate) fn surely_fits(value: &Value, max_chars: u64) -> bool {
    match value {
        Value::String(s) => return s.len() as u64 <= max_chars,
        // A scalar's text is short.
        Value::Null | Value::Bool(_) | Value::Number(_) => return max_chars >= 32,
        _ => {}
    }
    // A string's JSON text is at most 6 characters per byte (`\u001f`) plus quotes.
    let string = |s: &str| 2 + 6 * s.len() as u64;
    let mut total = 0u64;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 32,
            Value::String(s) => string(s),
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len() as u64
            }
            Value::Object(map) => {
                stack.extend(map.values());
                2 + map.keys().map(|k| string(k) + 2).sum::<u64>()
            }
        };
        if total > max_chars {
            return false;
        }
    }
    true
}

/// The future a [`Summarizer`] returns: the summary, or why there is none.
pub type SummaryFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// Summarizes results for tools whose strategy is `summarize` (often by asking a model).
pub trait Summarizer: Send + Sync {
    /// A summary of `text`, the result of tool `key`, in at most `max_tokens` tokens.
    fn summarize<'a>(&'a self, key: &'a str, text: &'a str, max_tokens: u32) -> SummaryFuture<'a>;
}

/// What shaping did to a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShapeReport {
    /// The strategy that was applied (`middle` when `summarize` fell back).
    pub strategy: ResultShaping,
    /// Estimated tokens of the whole result.
    pub original_tokens: u64,
    /// Estimated tokens of what the model gets.
    pub shaped_tokens: u64,
    /// Where the whole result was written, for `spill-to-file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spill_path: Option<PathBuf>,
    /// Why the chosen strategy was not applied as asked (no summarizer, a failed
    /// write, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// A runtime's shaping settings: the spill writer, the summarizer hook, and the run id
/// of calls whose context has none.
pub struct Shaping {
    writer: Arc<dyn SpillWriter>,
    root: Option<PathBuf>,
    run_id: String,
    last_spill: OnceLock<PathBuf>,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl Default for Shaping {
    fn default() -> Shaping {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        Shaping {
            writer: Arc::new(FileSpillWriter::default()),
            root: Some(FileSpillWriter::default_root()),
            run_id: format!("run-{}-{nanos:x}-{n}", std::process::id()),
            last_spill: OnceLock::new(),
            summarizer: None,
        }
    }
}

impl fmt::Debug for Shaping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shaping")
            .field("root", &self.root)
            .field("run_id", &self.run_id)
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

impl Shaping {
    /// Spilled results go under `root` with the default writer:
    /// `<root>/<run_id>/<call_id>.<ext>`.
    pub fn with_spill_root(mut self, root: impl Into<PathBuf>) -> Shaping {
        let root = root.into();
        self.writer = Arc::new(FileSpillWriter::new(root.clone()));
        self.root = Some(root);
        self
    }

    /// Spilled results go to `writer` instead of files.
    pub fn with_spill_writer(mut self, writer: impl SpillWriter + 'static) -> Shaping {
        self.writer = Arc::new(writer);
        self.root = None;
        self
    }

    /// The run id of calls whose context sets none (default: made per runtime,
    /// `run-<pid>-<time>-<n>`).
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Shaping {
        self.run_id = run_id.into();
        self
    }

    /// The run id of calls whose context sets none.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The hook for the `summarize` strategy.
    pub fn with_summarizer(mut self, summarizer: impl Summarizer + 'static) -> Shaping {
        self.summarizer = Some(Arc::new(summarizer));
        self
    }

    /// The directory the default writer spills this runtime's own run into
    /// (`<root>/<run_id>`), once something was spilled there; `None` with another
    /// writer.
    pub fn run_dir(&self) -> Option<&Path> {
        self.last_spill.get().map(PathBuf::as_path)
    }

    /// Shapes `value` (the result of tool `key`, call `call_id` of run `run_id`, or of
    /// the runtime's run) to `max_tokens`; `None` when it already fits.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn shape(
        &self,
        key: &str,
        run_id: Option<&str>,
        call_id: &str,
        value: &Value,
        max_tokens: u32,
        strategy: ResultShaping,
        sensitivity: Sensitivity,
    ) -> Option<(Value, ShapeReport)> {
        if surely_fits(value, u64::from(max_tokens) * 4) {
            return None;
        }
        let json_text;
        let text = match value {
            Value::String(s) => s.as_str(),
            other => {
                json_text = other.to_string();
                json_text.as_str()
            }
        };
        let original_tokens = estimate_tokens(text);
        if original_tokens <= u64::from(max_tokens) {
            return None;
        }
        let mut report = ShapeReport {
            strategy,
            original_tokens,
            shaped_tokens: 0,
            spill_path: None,
            fallback: None,
        };
        let shaped = match strategy {
            ResultShaping::Middle => Value::String(middle(text, max_tokens)),
            ResultShaping::Tail => Value::String(tail(text, max_tokens)),
            ResultShaping::SpillToFile => {
                match self.spill(key, run_id, call_id, text, value.is_string(), sensitivity) {
                    Ok(path) => {
                        let preview: String =
                            text.chars().take(preview_chars(max_tokens)).collect();
                        let handle = json!({
                            "spilled": format!("spill://{}", path.display()),
                            "path": path.display().to_string(),
                            "bytes": text.len(),
                            "tokens": original_tokens,
                            "preview": preview,
                        });
                        report.spill_path = Some(path);
                        handle
                    }
                    Err(why) => {
                        report.strategy = ResultShaping::Middle;
                        report.fallback = Some(format!("could not spill to a file: {why}"));
                        Value::String(middle(text, max_tokens))
                    }
                }
            }
            ResultShaping::Summarize => {
                let summary = match &self.summarizer {
                    Some(hook) => hook.summarize(key, text, max_tokens).await,
                    None => Err("no summarizer is configured".to_owned()),
                };
                match summary {
                    Ok(summary) if estimate_tokens(&summary) <= u64::from(max_tokens) => {
                        Value::String(summary)
                    }
                    Ok(summary) => {
                        report.fallback = Some("the summary was too long".to_owned());
                        Value::String(middle(&summary, max_tokens))
                    }
                    Err(why) => {
                        report.strategy = ResultShaping::Middle;
                        report.fallback = Some(why);
                        Value::String(middle(text, max_tokens))
                    }
                }
            }
        };
        report.shaped_tokens = match &shaped {
            Value::String(s) => estimate_tokens(s),
            other => estimate_tokens(&other.to_string()),
        };
        Some((shaped, report))
    }

    fn spill(
        &self,
        key: &str,
        run_id: Option<&str>,
        call_id: &str,
        text: &str,
        is_text: bool,
        sensitivity: Sensitivity,
    ) -> Result<PathBuf, String> {
        if sensitivity == Sensitivity::Secret {
            return Err("the tool's results are secret and are not written out".into());
        }
        let spill = Spill {
            run_id: run_id.unwrap_or(&self.run_id),
            call_id,
            key,
            extension: if is_text { "txt" } else { "json" },
            content: text,
            sensitivity,
        };
        let path = self.writer.write(&spill)?;
        if run_id.is_none() && self.root.is_some() {
            if let Some(dir) = path.parent() {
                let _ = self.last_spill.set(dir.to_path_buf());
            }
        }
        Ok(path)
    }
}

fn preview_chars(max_tokens: u32) -> usize {
    (max_tokens as usize * 4 / 2).min(400)
}

/// The first `n` characters of `text`, as a byte index.
fn char_boundary(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

fn omitted_marker(omitted_tokens: u64, tail: bool) -> String {
    if tail {
        format!("[... {omitted_tokens} earlier tokens not shown ...]\n")
    } else {
        format!("\n[... {omitted_tokens} tokens not shown ...]\n")
    }
}

/// Keeps the beginning and the end of `text` within `max_tokens`.
fn middle(text: &str, max_tokens: u32) -> String {
    let total = text.chars().count();
    let budget = max_tokens as usize * 4;
    // The marker's own length counts against the budget; estimate it generously.
    let marker_len = omitted_marker(estimate_tokens(text), false).len();
    let keep = budget.saturating_sub(marker_len);
    let head = keep / 2;
    let tail = keep - head;
    let omitted = total.saturating_sub(head + tail);
    let head_end = char_boundary(text, head);
    let tail_start = char_boundary(text, total - tail);
    let marker = omitted_marker((omitted as u64).div_ceil(4), false);
    let mut out = String::with_capacity(head_end + marker.len() + (text.len() - tail_start));
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    out
}

/// Keeps the end of `text` within `max_tokens`, after a marker saying how much came
/// before.
fn tail(text: &str, max_tokens: u32) -> String {
    let total = text.chars().count();
    let budget = max_tokens as usize * 4;
    let marker_len = omitted_marker(estimate_tokens(text), true).len();
    let keep = budget.saturating_sub(marker_len).min(total);
    let omitted = total - keep;
    let start = char_boundary(text, omitted);
    let mut out = omitted_marker((omitted as u64).div_ceil(4), true);
    out.push_str(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sanitize::scan;

    fn numbered(n: usize) -> String {
        (0..n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn middle_and_tail_fit_the_limit_and_say_what_they_left_out() {
        let text = numbered(2_000);
        let shaping = Shaping::default();
        let value = Value::String(text.clone());
        let (shaped, report) = shaping
            .shape(
                "t.log@1",
                None,
                "1",
                &value,
                100,
                ResultShaping::Middle,
                Sensitivity::Internal,
            )
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(estimate_tokens(s) <= 100, "{}", estimate_tokens(s));
        assert!(s.starts_with("line 0\n") && s.ends_with("line 1999\n"));
        assert!(s.contains("tokens not shown"));
        assert_eq!(report.original_tokens, estimate_tokens(&text));
        assert_eq!(report.shaped_tokens, estimate_tokens(s));

        let (shaped, _) = shaping
            .shape(
                "t.log@1",
                None,
                "2",
                &value,
                100,
                ResultShaping::Tail,
                Sensitivity::Internal,
            )
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(estimate_tokens(s) <= 100);
        assert!(
            s.starts_with("[... ") && s.contains("earlier tokens not shown ...]\n"),
            "{s}"
        );
        assert!(s.ends_with("line 1999\n"), "the end is kept: {s}");
        assert!(!s.contains("line 0\n"), "the beginning is not");
        assert!(scan(s).is_empty(), "markers never trip the injection scan");

        assert!(shaping
            .shape(
                "t.log@1",
                None,
                "3",
                &Value::String("short".into()),
                100,
                ResultShaping::Middle,
                Sensitivity::Internal,
            )
            .await
            .is_none());
    }

    #[tokio::test]
    async fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "é".repeat(1_000) + &"ü".repeat(1_000);
        let (shaped, _) = Shaping::default()
            .shape(
                "t.x@1",
                None,
                "1",
                &Value::String(text),
                50,
                ResultShaping::Middle,
                Sensitivity::Internal,
            )
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(s.starts_with('é') && s.ends_with('ü'));
    }

    #[test]
    fn the_bound_is_never_below_the_text() {
        let values = [
            serde_json::json!({"a": [1, 2.5, null, true], "b\u{1}": "x\n\"y\u{1f}"}),
            serde_json::json!([[[]], {}, "", -1e300]),
            Value::String("é".repeat(10)),
        ];
        for value in values {
            let len = match &value {
                Value::String(s) => s.chars().count(),
                other => other.to_string().chars().count(),
            } as u64;
            assert!(!surely_fits(&value, len - 1), "{value}");
            assert!(surely_fits(&value, len * 6 + 64), "{value}");
        }
    }

    #[tokio::test]
    async fn spills_go_to_run_and_call_and_secrets_never_do() {
        let root = std::env::temp_dir().join(format!("tackle-spill-unit-{}", std::process::id()));
        let shaping = Shaping::default().with_spill_root(&root);
        let value = Value::String(numbered(500));
        let (handle, report) = shaping
            .shape(
                "t.log@1",
                Some("run 7"),
                "12",
                &value,
                20,
                ResultShaping::SpillToFile,
                Sensitivity::Confidential,
            )
            .await
            .expect("too long");
        let path = report.spill_path.expect("spilled");
        assert_eq!(path, root.join("run_7").join("12.txt"));
        assert_eq!(handle["path"], path.display().to_string());
        // The same call id again in the same run does not overwrite.
        let (_, again) = shaping
            .shape(
                "t.log@1",
                Some("run 7"),
                "12",
                &value,
                20,
                ResultShaping::SpillToFile,
                Sensitivity::Internal,
            )
            .await
            .expect("too long");
        assert_eq!(
            again.spill_path.unwrap(),
            root.join("run_7").join("12-2.txt")
        );
        assert_eq!(
            shaping.run_dir(),
            None,
            "the runtime's own run spilled nothing"
        );
        let (_, own) = shaping
            .shape(
                "t.log@1",
                None,
                "3",
                &value,
                20,
                ResultShaping::SpillToFile,
                Sensitivity::Internal,
            )
            .await
            .expect("too long");
        let own = own.spill_path.unwrap();
        assert_eq!(own, root.join(shaping.run_id()).join("3.txt"));
        assert_eq!(shaping.run_dir(), own.parent());
        // A secret result is shaped in memory, and the report says why.
        let (shaped, report) = shaping
            .shape(
                "t.log@1",
                Some("run 7"),
                "13",
                &value,
                20,
                ResultShaping::SpillToFile,
                Sensitivity::Secret,
            )
            .await
            .expect("too long");
        assert!(report.spill_path.is_none() && shaped.is_string());
        assert_eq!(report.strategy, ResultShaping::Middle);
        assert!(report.fallback.unwrap().contains("secret"));
        assert!(!root.join("run_7").join("13.txt").exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[tokio::test]
    async fn an_injected_writer_gets_every_spill() {
        struct Collect(std::sync::Mutex<Vec<(String, String, String, Sensitivity)>>);
        impl SpillWriter for Arc<Collect> {
            fn write(&self, spill: &Spill<'_>) -> Result<PathBuf, String> {
                self.0.lock().unwrap().push((
                    spill.run_id.to_owned(),
                    spill.call_id.to_owned(),
                    spill.extension.to_owned(),
                    spill.sensitivity,
                ));
                Ok(PathBuf::from(format!(
                    "mem://{}/{}",
                    spill.run_id, spill.call_id
                )))
            }
        }
        let seen = Arc::new(Collect(std::sync::Mutex::new(Vec::new())));
        let shaping = Shaping::default()
            .with_spill_writer(Arc::clone(&seen))
            .with_run_id("r1");
        let value = serde_json::json!({"rows": numbered(300)});
        let (handle, _) = shaping
            .shape(
                "t.log@1",
                None,
                "5",
                &value,
                20,
                ResultShaping::SpillToFile,
                Sensitivity::Public,
            )
            .await
            .expect("too long");
        assert_eq!(handle["path"], "mem://r1/5");
        assert_eq!(
            seen.0.lock().unwrap().as_slice(),
            [(
                "r1".to_owned(),
                "5".to_owned(),
                "json".to_owned(),
                Sensitivity::Public
            )]
        );
    }
}

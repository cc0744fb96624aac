//! Result shaping: keeping long results within a tool's `max_result_tokens`.
//!
//! A model's context is finite; a tool that may return a whole log or web page sets
//! `max_result_tokens`, and the door shapes a longer result by the tool's
//! [`ResultShaping`] strategy:
//!
//! * `middle` keeps the beginning and the end, with a marker saying how many tokens
//!   were left out between them;
//! * `tail` keeps the beginning and drops the tail, with a marker at the end;
//! * `spill-to-file` writes the whole result to a file readable by its owner only
//!   (mode 0600) in a per-run directory (mode 0700), and returns a handle: the path,
//!   the size and a short preview. Nothing is lost;
//! * `summarize` passes the text to the runtime's [`Summarizer`] hook. Without a hook,
//!   or when the hook fails, the result is shaped as `middle`, and the report says why.
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

use crate::spec::ResultShaping;

/// Estimated tokens of `text`: one per four characters, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
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

/// A runtime's shaping settings: where spilled results go and the summarizer hook.
#[derive(Default)]
pub struct Shaping {
    spill_root: Option<PathBuf>,
    run_dir: OnceLock<Result<PathBuf, String>>,
    spilled: AtomicU64,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl fmt::Debug for Shaping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shaping")
            .field("spill_root", &self.spill_root)
            .field("run_dir", &self.run_dir.get())
            .field("summarizer", &self.summarizer.is_some())
            .finish()
    }
}

impl Shaping {
    /// Spilled results go into a new directory under `root` (default: the system's
    /// temporary directory), created on first use, one per runtime.
    pub fn with_spill_root(mut self, root: impl Into<PathBuf>) -> Shaping {
        self.spill_root = Some(root.into());
        self
    }

    /// The hook for the `summarize` strategy.
    pub fn with_summarizer(mut self, summarizer: impl Summarizer + 'static) -> Shaping {
        self.summarizer = Some(Arc::new(summarizer));
        self
    }

    /// The directory this runtime spills into, once something was spilled.
    pub fn run_dir(&self) -> Option<&Path> {
        self.run_dir.get().and_then(|r| r.as_deref().ok())
    }

    /// Shapes `value` (the result of tool `key`, call `call_id`) to `max_tokens`;
    /// `None` when it already fits.
    pub(crate) async fn shape(
        &self,
        key: &str,
        call_id: u64,
        value: &Value,
        max_tokens: u32,
        strategy: ResultShaping,
    ) -> Option<(Value, ShapeReport)> {
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
            ResultShaping::SpillToFile => match self.spill(key, call_id, text, value.is_string()) {
                Ok(path) => {
                    let preview: String = text.chars().take(preview_chars(max_tokens)).collect();
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
            },
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

    fn spill(&self, key: &str, call_id: u64, text: &str, is_text: bool) -> Result<PathBuf, String> {
        let dir = self
            .run_dir
            .get_or_init(|| {
                let root = self.spill_root.clone().unwrap_or_else(std::env::temp_dir);
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default();
                let dir = root.join(format!("tackle-run-{}-{nanos:x}", std::process::id()));
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder
                    .create(&dir)
                    .map(|()| dir.clone())
                    .map_err(|e| format!("{}: {e}", dir.display()))
            })
            .clone()?;
        let n = self.spilled.fetch_add(1, Ordering::Relaxed);
        let safe_key: String = key
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let ext = if is_text { "txt" } else { "json" };
        let path = dir.join(format!("{n:04}-call{call_id}-{safe_key}.{ext}"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))?;
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
        format!("\n[... {omitted_tokens} more tokens not shown ...]")
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

/// Keeps the beginning of `text` within `max_tokens`.
fn tail(text: &str, max_tokens: u32) -> String {
    let total = text.chars().count();
    let budget = max_tokens as usize * 4;
    let marker_len = omitted_marker(estimate_tokens(text), true).len();
    let keep = budget.saturating_sub(marker_len);
    let omitted = total.saturating_sub(keep);
    let mut out = text[..char_boundary(text, keep)].to_owned();
    out.push_str(&omitted_marker((omitted as u64).div_ceil(4), true));
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
            .shape("t.log@1", 1, &value, 100, ResultShaping::Middle)
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(estimate_tokens(s) <= 100, "{}", estimate_tokens(s));
        assert!(s.starts_with("line 0\n") && s.ends_with("line 1999\n"));
        assert!(s.contains("tokens not shown"));
        assert_eq!(report.original_tokens, estimate_tokens(&text));
        assert_eq!(report.shaped_tokens, estimate_tokens(s));

        let (shaped, _) = shaping
            .shape("t.log@1", 2, &value, 100, ResultShaping::Tail)
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(estimate_tokens(s) <= 100);
        assert!(s.starts_with("line 0\n") && s.ends_with("more tokens not shown ...]"));
        assert!(scan(s).is_empty(), "markers never trip the injection scan");

        assert!(shaping
            .shape(
                "t.log@1",
                3,
                &Value::String("short".into()),
                100,
                ResultShaping::Middle
            )
            .await
            .is_none());
    }

    #[tokio::test]
    async fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "é".repeat(1_000) + &"ü".repeat(1_000);
        let (shaped, _) = Shaping::default()
            .shape("t.x@1", 1, &Value::String(text), 50, ResultShaping::Middle)
            .await
            .expect("too long");
        let s = shaped.as_str().unwrap();
        assert!(s.starts_with('é') && s.ends_with('ü'));
    }
}

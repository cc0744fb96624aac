//! The cassette of one run: what was recorded, what this run uses and records, and
//! writing it back when the run finishes.
//!
//! A [`Cassette`] is opened once per run (per test) and shared by every call of it.
//! Loading indexes the recorded interactions by key and canonical input; the door's
//! replay stage asks it what to do with each call (the router); and
//! [`Cassette::finish`] checks that nothing recorded went unused and writes the file in
//! recording modes. Nothing is written before `finish`, so a test that panics never
//! overwrites a good cassette.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::file::{self, CassetteError, CassetteFile, Interaction, InteractionKind};
use super::journal::Journal;
use super::mode::{CassetteConfig, Mode};
use super::redact::Redactor;
use super::warning::CassetteWarning;
use crate::canonical;
use crate::keyhash::{KeyMap, KeySet};
use crate::spec::ReplayPolicy;

/// A recording of calls, shared by every call of one run. Cheap to clone.
///
/// ```
/// use serde_json::json;
/// use std::sync::Arc;
/// use tackle::replay::Mode;
/// use tackle::{tool, Cassette, replay::CassetteConfig, Run, Runtime, ToolContext};
///
/// /// Sends a greeting (an external effect).
/// #[tool(namespace = "mail", side_effects = external)]
/// fn greet(to: String) -> String {
///     format!("sent to {to}")
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let path = std::env::temp_dir().join(format!("tackle-doc-{}.json", std::process::id()));
/// let config = |mode| CassetteConfig::new().with_mode(mode).with_env_overrides(false);
/// let ctx = ToolContext::new();
///
/// let runtime = Arc::new(Runtime::from_inventory()?);
///
/// // Record once (a run with its own cassette)...
/// let run = Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Rewrite))?);
/// run.call("mail.greet", json!({"to": "ada"}), &ctx).await?;
/// run.finish()?;
///
/// // ...then replay: the recorded outcome stands in, and the tool does not run.
/// let run = Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Replay))?);
/// assert_eq!(run.call("mail.greet", json!({"to": "ada"}), &ctx).await?, "sent to ada");
/// let miss = run.call("mail.greet", json!({"to": "bob"}), &ctx).await.unwrap_err();
/// assert_eq!(miss.kind(), tackle::ToolErrorKind::CassetteMiss); // never sent live
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Cassette {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) path: PathBuf,
    name: String,
    mode: Mode,
    pub(super) effective: Effective,
    pub(super) strict: bool,
    /// Whether operations run live, never served nor recorded (a counterfactual
    /// replay).
    pub(super) live_operations: bool,
    /// Whether recorded-result misses may run live during a replay without failing
    /// the run.
    live_reads: bool,
    pub(super) redactor: Redactor,
    /// Where each call is appended as it happens, for a journaled cassette.
    pub(super) journal: Option<Box<Journaled>>,
    /// Whether a replay writes which recorded calls it used (`TACKLE_CASSETTE_USAGE=1`).
    usage: bool,
    /// Which recorded calls a replay runs and compares with their recordings.
    pub(super) checks: Checks,
    state: Mutex<State>,
}

/// Which recorded calls a replay runs as well, comparing their outcomes with the
/// recordings (the recorded outcome is what the caller gets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Checks {
    /// Pure tools (`side_effects = none`, policy `recorded-result`) and operations
    /// that ask for it (test models).
    pub(super) pure: bool,
    /// `read` tools (policy `recorded-result`): mode `check`.
    pub(super) reads: bool,
}

/// A journaled cassette's journal.
pub(super) struct Journaled {
    pub(super) journal: Arc<dyn Journal>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) recorded: Vec<Interaction>,
    pub(super) used: Vec<bool>,
    /// The first recording not used yet: every one before it is (see [`mark_used`]).
    pub(super) next_unused: usize,
    /// Key -> its recordings (canonical input -> recorded indices, in recorded order).
    pub(super) queues: KeyMap<String, Recordings>,
    /// Indices of recorded operations, in call order.
    pub(super) operations: Vec<usize>,
    pub(super) next_operation: usize,
    /// Schema fingerprints at recording, by key.
    pub(super) recorded_tools: BTreeMap<String, String>,
    /// Why the recorded run failed, if it did.
    pub(super) recorded_failure: Option<String>,
    /// What this run records.
    pub(super) fresh: Vec<Interaction>,
    pub(super) tools: BTreeMap<String, String>,
    pub(super) next_call: u64,
    /// The notes of calls in flight when an earlier attempt stopped: key ->
    /// canonical input -> notes, for the same calls made again.
    pub(super) resumed: KeyMap<String, KeyMap<String, VecDeque<serde_json::Value>>>,
    pub(super) warnings: Vec<CassetteWarning>,
    /// Keys with no recordings whose schemas were checked against the recording's
    /// (a key with recordings says so in its [`Recordings`]).
    pub(super) checked_schemas: KeySet<String>,
    /// The canonical input of the call being looked up, when the call had none yet:
    /// one buffer for every lookup.
    pub(super) scratch: String,
}

impl fmt::Debug for Cassette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.inner.path)
            .field("mode", &self.inner.mode)
            .finish()
    }
}

/// The recordings of one tool key, and whether this run compared the tool's schema
/// with the one it was recorded with (once per key).
#[derive(Debug, Default)]
pub(super) struct Recordings {
    pub(super) schema_checked: bool,
    /// Canonical input -> recorded indices.
    pub(super) by_input: KeyMap<String, Queue>,
}

/// The recorded indices of one (key, input), in recorded order. Most inputs are
/// recorded once, so the first index is kept inline.
#[derive(Debug, Default)]
pub(super) struct Queue {
    first: Option<usize>,
    rest: VecDeque<usize>,
}

impl Queue {
    pub(super) fn push_back(&mut self, i: usize) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(i);
        } else {
            self.rest.push_back(i);
        }
    }

    pub(super) fn push_front(&mut self, i: usize) {
        if let Some(old) = self.first.replace(i) {
            self.rest.push_front(old);
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<usize> {
        self.first.take().or_else(|| self.rest.pop_front())
    }
}

/// What [`Cassette::finish`] reports when all went well.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FinishReport {
    /// Whether the file was written.
    pub written: bool,
    /// Recorded calls served from the cassette.
    pub replayed: usize,
    /// Calls recorded by this run.
    pub recorded: usize,
    /// Things worth knowing that did not fail the run (changed schemas, recorded-result
    /// misses that ran live).
    pub warnings: Vec<CassetteWarning>,
}

/// What the mode means for this cassette, once the file is known to exist or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effective {
    Replay,
    /// `once` with no file yet.
    OnceRecording,
    New,
    Rewrite,
    Live,
}

impl Cassette {
    /// Opens the cassette at `path` with `config` (the mode resolved against the
    /// environment unless the config says otherwise).
    pub fn open(
        path: impl Into<PathBuf>,
        config: CassetteConfig,
    ) -> Result<Cassette, CassetteError> {
        let path = path.into();
        let mode = if config.use_env {
            Mode::resolve(config.mode, |k| std::env::var(k).ok())?
        } else {
            config.mode
        };
        // A recorder killed mid-write leaves its temporary file: the next open that
        // reads the file clears it (a cassette recorded anew clears it when it writes).
        let reads = !matches!(mode, Mode::Rewrite | Mode::Review | Mode::Live);
        if reads {
            super::file::clean_orphans(&path);
        }
        // Only the modes that read the file ask whether it is there.
        let exists = reads && path.exists();
        let effective = match mode {
            Mode::Replay | Mode::Check if !exists => return Err(CassetteError::Missing { path }),
            Mode::Replay | Mode::Check => Effective::Replay,
            Mode::Once if exists => Effective::Replay,
            Mode::Once => Effective::OnceRecording,
            Mode::New => Effective::New,
            Mode::Rewrite | Mode::Review => Effective::Rewrite,
            Mode::Live => Effective::Live,
        };
        let mut state = State::default();
        let mut name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if matches!(effective, Effective::Replay | Effective::New) && exists {
            let file = file::load(&path)?;
            name = file.name;
            state.recorded_tools = file.tools;
            state.recorded_failure = file.failure;
            state.index(file.interactions);
        }
        let checks = match mode {
            _ if config.recorded_results => Checks::default(),
            Mode::Check => Checks {
                pure: true,
                reads: true,
            },
            _ => Checks {
                pure: true,
                reads: false,
            },
        };
        Ok(Cassette {
            inner: Arc::new(Inner {
                path,
                name,
                mode,
                effective,
                strict: config.strict,
                live_operations: config.live_operations,
                live_reads: config.live_reads,
                redactor: config.redactor,
                journal: None,
                usage: config.use_env
                    && std::env::var("TACKLE_CASSETTE_USAGE").is_ok_and(|v| v.trim() == "1"),
                checks,
                state: Mutex::new(state),
            }),
        })
    }

    /// A cassette over a journal (see [`super::journal`]): it serves the calls of
    /// `recorded` (what the journal holds, in order) as mode `new` does, and runs the
    /// rest, handing each to `journal` as it starts and when it finishes. Its calls
    /// are numbered from `first_call`. Nothing is written at [`finish`](Self::finish):
    /// the journal is the record ([`export`](Self::export) writes a cassette file).
    pub fn journaled(
        name: impl Into<String>,
        recorded: Vec<Interaction>,
        first_call: u64,
        journal: Arc<dyn Journal>,
        config: CassetteConfig,
    ) -> Cassette {
        let name = name.into();
        let mut state = State {
            next_call: first_call,
            ..State::default()
        };
        state.index(recorded);
        Cassette {
            inner: Arc::new(Inner {
                path: PathBuf::from(format!("journal:{name}")),
                name,
                mode: Mode::New,
                effective: Effective::New,
                strict: config.strict,
                // A journal serves what it holds, operations included.
                live_operations: false,
                live_reads: config.live_reads,
                redactor: config.redactor,
                journal: Some(Box::new(Journaled { journal })),
                usage: false,
                // A journal resumes a run: what it holds is served, never re-run.
                checks: Checks::default(),
                state: Mutex::new(state),
            }),
        }
    }

    /// Whether `other` is this very cassette (a clone of it), not another with the
    /// same contents.
    pub fn is(&self, other: &Cassette) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether any interaction this cassette was opened with (recorded before this
    /// run) is one that `matches`: what a layer above asks to go on as a recording
    /// began (the agent, whether its model requests were recorded whole).
    pub fn any_recorded(&self, matches: impl Fn(&Interaction) -> bool) -> bool {
        self.state().recorded.iter().any(matches)
    }

    /// Writes what this cassette holds (the recorded interactions it was opened with,
    /// then what this run recorded) as a cassette file at `path`, marked complete.
    pub fn export(&self, path: &Path) -> Result<(), CassetteError> {
        self.export_with(path, |_| {})
    }

    /// [`export`](Self::export), with the interactions passed through `rewrite` first.
    pub fn export_with(
        &self,
        path: &Path,
        rewrite: impl FnOnce(&mut [Interaction]),
    ) -> Result<(), CassetteError> {
        let state = self.state();
        let mut interactions = state.recorded.clone();
        interactions.extend(state.fresh.iter().cloned());
        rewrite(&mut interactions);
        let mut tools = state.recorded_tools.clone();
        tools.extend(state.tools.iter().map(|(k, v)| (k.clone(), v.clone())));
        let file = CassetteFile {
            format: file::FORMAT.to_owned(),
            version: file::VERSION,
            complete: true,
            failure: None,
            name: self.inner.name.clone(),
            tools,
            interactions,
        };
        file::save(path, &file)
    }

    /// The cassette of a test: `<manifest_dir>/tests/cassettes/<module path>.<test>.json`.
    /// Use the [`cassette!`](crate::cassette) macro, which fills in both names.
    pub fn for_test(
        manifest_dir: &str,
        fn_type_name: &str,
        config: CassetteConfig,
    ) -> Result<Cassette, CassetteError> {
        let name = test_name(fn_type_name);
        let path = Path::new(manifest_dir)
            .join("tests")
            .join("cassettes")
            .join(format!("{name}.json"));
        Cassette::open(path, config)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The mode in force.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// Whether the cassette neither replays nor records (mode `live`).
    pub(crate) fn is_live(&self) -> bool {
        self.inner.effective == Effective::Live
    }

    /// Whether a replay runs a recorded call of this kind too, and compares its
    /// outcome with the recording: a `recorded-result` tool that is pure (or a read,
    /// in mode `check`), or an operation that asks for it. Never outside a replay.
    pub(crate) fn checks(
        &self,
        policy: ReplayPolicy,
        side_effects: crate::spec::SideEffects,
        operation_asks: Option<bool>,
    ) -> bool {
        use crate::spec::SideEffects;
        if self.inner.effective != Effective::Replay {
            return false;
        }
        let checks = self.inner.checks;
        match operation_asks {
            Some(asks) => asks && checks.pure,
            None => {
                policy == ReplayPolicy::RecordedResult
                    && match side_effects {
                        SideEffects::None => checks.pure,
                        SideEffects::Read => checks.reads,
                        _ => false,
                    }
            }
        }
    }

    /// The redactor, for code that must redact something itself.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave the state half-changed in a way
        // that matters more than losing the run's recording; carry on with it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Ends the run: fails when recorded must-stub calls were never replayed, or when
    /// `recorded-result` calls the cassette lacks ran live (replay modes, unless
    /// [live reads are allowed](super::CassetteConfig::with_live_reads)), and writes
    /// the cassette in recording modes.
    pub fn finish(&self) -> Result<FinishReport, CassetteError> {
        self.finish_with(None)
    }

    /// Ends a run that failed: in recording modes, writes every interaction up to the
    /// failure, the failing call's error among them, marked `"complete": false` with
    /// `failure`, so nothing of the run is lost and replaying it reproduces the
    /// failure. Replaying, it does not ask that every recorded call was used.
    pub fn finish_failed(&self, failure: &str) -> Result<FinishReport, CassetteError> {
        self.finish_with(Some(failure))
    }

    /// Why the recorded run failed, when the cassette replays a failed run.
    pub fn recorded_failure(&self) -> Option<String> {
        self.state().recorded_failure.clone()
    }

    fn finish_with(&self, failure: Option<&str>) -> Result<FinishReport, CassetteError> {
        let state = self.state();
        let replaying = matches!(self.inner.effective, Effective::Replay) && failure.is_none();
        if replaying {
            let changed: Vec<String> = state
                .warnings
                .iter()
                .filter(|w| matches!(w, CassetteWarning::OutcomeChanged { .. }))
                .map(ToString::to_string)
                .collect();
            if !changed.is_empty() {
                return Err(CassetteError::Changed {
                    path: self.inner.path.clone(),
                    calls: changed,
                });
            }
        }
        let unused: Vec<String> = state
            .recorded
            .iter()
            .zip(&state.used)
            .filter(|(r, used)| !**used && r.policy == ReplayPolicy::MustStub)
            .map(|(r, _)| {
                format!(
                    "call #{} `{}` with {}",
                    r.call,
                    r.key,
                    canonical::canonical(&r.input)
                )
            })
            .collect();
        if replaying && !unused.is_empty() {
            return Err(CassetteError::Unused {
                path: self.inner.path.clone(),
                calls: unused,
            });
        }
        if replaying && !self.inner.live_reads {
            let ran_live: Vec<String> = state
                .warnings
                .iter()
                .filter(|w| matches!(w, CassetteWarning::RanLive { .. }))
                .map(ToString::to_string)
                .collect();
            if !ran_live.is_empty() {
                return Err(CassetteError::RanLive {
                    path: self.inner.path.clone(),
                    calls: ran_live,
                });
            }
        }
        if replaying && self.inner.usage {
            let usage = file::Usage {
                name: self.inner.name.clone(),
                digest: file::digest(&state.recorded),
                used: state
                    .used
                    .iter()
                    .enumerate()
                    .filter(|(_, used)| **used)
                    .map(|(at, _)| at)
                    .collect(),
            };
            file::save_usage(&self.inner.path, &usage)?;
        }
        let replayed = state.used.iter().filter(|u| **u).count();
        let mut report = FinishReport {
            written: false,
            replayed,
            recorded: state.fresh.len(),
            warnings: state.warnings.clone(),
        };
        if self.inner.journal.is_none()
            && matches!(
                self.inner.effective,
                Effective::OnceRecording | Effective::New | Effective::Rewrite
            )
        {
            let mut fresh = state.fresh.clone();
            stable_order(&mut fresh);
            let (mut interactions, mut tools) = if self.inner.effective == Effective::New {
                (state.recorded.clone(), state.recorded_tools.clone())
            } else {
                (Vec::new(), BTreeMap::new())
            };
            interactions.extend(fresh);
            tools.extend(state.tools.iter().map(|(k, v)| (k.clone(), v.clone())));
            let file = CassetteFile {
                format: file::FORMAT.to_owned(),
                version: file::VERSION,
                complete: failure.is_none(),
                failure: failure.map(|f| self.inner.redactor.redact_str(f).into_owned()),
                name: self.inner.name.clone(),
                tools,
                interactions,
            };
            if self.inner.mode == Mode::Review {
                // A fresh recording for a person to review, beside the cassette; one
                // identical to the cassette needs no review.
                let pending = file::pending_path(&self.inner.path);
                let same = file::load(&self.inner.path).is_ok_and(|committed| {
                    committed.interactions == file.interactions
                        && committed.tools == file.tools
                        && committed.complete == file.complete
                        && committed.failure == file.failure
                });
                if same {
                    file::remove(&pending)?;
                } else {
                    file::save(&pending, &file)?;
                    report.written = true;
                }
                return Ok(report);
            }
            // A recorder killed mid-write left its temporary file behind: clear it.
            file::clean_orphans(&self.inner.path);
            file::save(&self.inner.path, &file)?;
            report.written = true;
        }
        Ok(report)
    }
}

impl State {
    /// Takes `interactions` as the recorded ones, indexed by key and input.
    fn index(&mut self, interactions: Vec<Interaction>) {
        self.used = vec![false; interactions.len()];
        for (i, interaction) in interactions.iter().enumerate() {
            let canon = canonical::canonical(&interaction.input);
            self.queues
                .entry(interaction.key.clone())
                .or_default()
                .by_input
                .entry(canon)
                .or_default()
                .push_back(i);
            if interaction.kind == InteractionKind::Operation {
                self.operations.push(i);
            }
        }
        self.recorded = interactions;
    }
}

/// Marks recording `i` used (a queue that still lists it skips it), and moves
/// `next_unused` past the used ones.
pub(super) fn mark_used(used: &mut [bool], next_unused: &mut usize, i: usize) {
    if let Some(flag) = used.get_mut(i) {
        *flag = true;
    }
    while used.get(*next_unused).is_some_and(|used| *used) {
        *next_unused += 1;
    }
}

/// Puts freshly recorded interactions in an order that does not depend on timing, so
/// re-recording an identical run gives identical bytes: by call number (taken when a
/// call starts), then, within each stretch of tool calls between two operations
/// (calls that may have started concurrently, like one batch of an agent's step), by
/// key and canonical input. The sort is stable, so identical calls keep their order
/// (they replay first in, first out), and each stretch keeps its set of call numbers.
fn stable_order(fresh: &mut [Interaction]) {
    fresh.sort_by_key(|i| i.call);
    for stretch in fresh.split_mut(|i| i.kind == InteractionKind::Operation) {
        if stretch.len() < 2 {
            continue;
        }
        let numbers: Vec<u64> = stretch.iter().map(|i| i.call).collect();
        stretch.sort_by_cached_key(|i| (i.key.clone(), canonical::canonical(&i.input)));
        for (interaction, number) in stretch.iter_mut().zip(numbers) {
            interaction.call = number;
        }
    }
}

/// `crate::module::test::{{closure}}::__tackle_here` -> `crate.module.test`.
pub(super) fn test_name(fn_type_name: &str) -> String {
    fn_type_name
        .split("::")
        .filter(|s| !s.starts_with('{') && *s != "__tackle_here")
        .collect::<Vec<_>>()
        .join(".")
}

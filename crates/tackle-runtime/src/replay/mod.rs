//! Replay: record a run's side-effecting calls once, then replay them offline.
//!
//! A [`Cassette`] sits inside the door. Every tool call (and every other operation
//! routed through [`Cassette::operation`], such as a model completion) is keyed by its
//! key and the canonical JSON of its redacted input. What happens then depends on the
//! call's [`ReplayPolicy`] and the cassette's [`Mode`]:
//!
//! | policy \ mode | replay | once (file exists: as replay) | new | rewrite | live |
//! |---|---|---|---|---|---|
//! | must-stub | hit: recorded; miss: `CassetteMiss`, never executed | file missing: execute + record | miss: execute + append | execute + record | execute |
//! | fail-loud | `ReplayGap` before any lookup, never executed | file missing: execute, record a tombstone | execute, tombstone | execute, tombstone | execute |
//! | recorded-result | hit: recorded; miss: execute with a warning (an error when strict) | as replay | miss: execute + append | execute + record | execute |
//!
//! Identical calls form a FIFO consumed in recorded order; a call never replays
//! something recorded in the same run. Tool calls match by key in any order (parallel
//! calls finish in any order); operations must come in their recorded order, and one
//! out of position is a `Divergence`. Errors are recorded and replay as errors.
//! Replayed outputs are validated against the tool's *current* output schema.
//!
//! The mode comes from [`CassetteConfig`], overridden by `TACKLE_CASSETTE`; when `CI`
//! is set, writing modes are refused unless `TACKLE_CASSETTE_ALLOW_CI=1`. A cassette
//! is written only by [`Cassette::finish`], so a test that panics never overwrites a
//! good cassette.

pub mod canonical;
pub mod cassette;
pub mod redact;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

pub use cassette::{CassetteError, CassetteFile, Interaction, InteractionKind, Outcome};
pub use redact::Redactor;

use crate::error::ToolError;
use crate::spec::ReplayPolicy;
use canonical::{FnvMap, FnvSet};

/// How a cassette treats calls; see the table in the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Serve recorded outcomes; never write. The default.
    #[default]
    Replay,
    /// Record when the file is missing; otherwise as `Replay`.
    Once,
    /// Serve what is recorded, execute and append what is not.
    New,
    /// Execute everything and write a fresh file.
    Rewrite,
    /// No cassette: execute everything, write nothing.
    Live,
}

impl Mode {
    /// Every mode, by name.
    pub const ALL: [(&'static str, Mode); 5] = [
        ("replay", Mode::Replay),
        ("once", Mode::Once),
        ("new", Mode::New),
        ("rewrite", Mode::Rewrite),
        ("live", Mode::Live),
    ];

    /// Whether this mode may write a cassette.
    pub fn writes(self) -> bool {
        matches!(self, Mode::Once | Mode::New | Mode::Rewrite)
    }

    /// The mode in force: `TACKLE_CASSETTE` overrides `configured`; under `CI`, a
    /// writing mode is refused unless `TACKLE_CASSETTE_ALLOW_CI=1`. `var` reads the
    /// environment (pass `|k| std::env::var(k).ok()`).
    pub fn resolve(
        configured: Mode,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Mode, CassetteError> {
        let mode = match var("TACKLE_CASSETTE") {
            Some(value) if !value.trim().is_empty() => value.parse()?,
            _ => configured,
        };
        let ci = var("CI").is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"));
        if mode.writes() && ci && var("TACKLE_CASSETTE_ALLOW_CI").as_deref() != Some("1") {
            return Err(CassetteError::WritingInCi {
                mode: mode.to_string(),
            });
        }
        Ok(mode)
    }
}

impl FromStr for Mode {
    type Err = CassetteError;
    fn from_str(s: &str) -> Result<Mode, CassetteError> {
        let wanted = s.trim().to_ascii_lowercase();
        Mode::ALL
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| CassetteError::UnknownMode {
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Mode::ALL
            .iter()
            .find(|(_, m)| m == self)
            .map_or("replay", |(n, _)| n);
        f.write_str(name)
    }
}

/// How to open a cassette.
#[derive(Clone, Debug)]
pub struct CassetteConfig {
    mode: Mode,
    strict: bool,
    redactor: Redactor,
    use_env: bool,
}

impl Default for CassetteConfig {
    fn default() -> Self {
        CassetteConfig::new()
    }
}

impl CassetteConfig {
    /// Replay mode, not strict, token redaction, environment overrides on.
    pub fn new() -> CassetteConfig {
        CassetteConfig {
            mode: Mode::Replay,
            strict: false,
            redactor: Redactor::new(),
            use_env: true,
        }
    }

    /// The configured mode (`TACKLE_CASSETTE` still overrides it).
    pub fn mode(mut self, mode: Mode) -> CassetteConfig {
        self.mode = mode;
        self
    }

    /// Strict: a recorded-result miss under replay is an error instead of a warning.
    pub fn strict(mut self, strict: bool) -> CassetteConfig {
        self.strict = strict;
        self
    }

    /// Redacts this secret value wherever it occurs.
    pub fn secret(mut self, value: impl Into<String>) -> CassetteConfig {
        self.redactor = self.redactor.secret(value);
        self
    }

    /// Uses the configured mode as is, ignoring `TACKLE_CASSETTE` and `CI` (for
    /// programs and tests that manage their own cassettes in temporary folders).
    pub fn ignore_env(mut self) -> CassetteConfig {
        self.use_env = false;
        self
    }
}

/// What the mode means for this cassette, once the file is known to exist or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effective {
    Replay,
    /// `once` with no file yet.
    OnceRecording,
    New,
    Rewrite,
    Live,
}

/// A recording of calls, shared by every call of one run. Cheap to clone.
#[derive(Clone)]
pub struct Cassette {
    inner: Arc<Inner>,
}

struct Inner {
    /// Unique per opened cassette, so a tool can tell whether it was checked against it.
    id: u64,
    path: PathBuf,
    name: String,
    mode: Mode,
    effective: Effective,
    strict: bool,
    redactor: Redactor,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    recorded: Vec<Interaction>,
    used: Vec<bool>,
    /// `(key, canonical input)` -> recorded indices, in recorded order.
    queues: FnvMap<String, FnvMap<String, Queue>>,
    /// Reused buffer for the canonical form of each call's input.
    scratch: String,
    /// Indices of recorded operations, in call order.
    operations: Vec<usize>,
    next_operation: usize,
    /// Schema fingerprints at recording, by key.
    recorded_tools: BTreeMap<String, String>,
    /// What this run records.
    fresh: Vec<Interaction>,
    tools: BTreeMap<String, String>,
    next_call: u64,
    warnings: Vec<String>,
    checked_schemas: FnvSet<String>,
}

impl fmt::Debug for Cassette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.inner.path)
            .field("mode", &self.inner.mode)
            .finish()
    }
}

/// The recorded indices of one (key, input), in recorded order. Most inputs are
/// recorded once, so the first index is kept inline.
#[derive(Debug, Default)]
struct Queue {
    first: Option<usize>,
    rest: VecDeque<usize>,
}

impl Queue {
    fn push_back(&mut self, i: usize) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(i);
        } else {
            self.rest.push_back(i);
        }
    }

    fn push_front(&mut self, i: usize) {
        if let Some(old) = self.first.replace(i) {
            self.rest.push_front(old);
        }
    }

    fn pop_front(&mut self) -> Option<usize> {
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
    pub warnings: Vec<String>,
}

/// What the door does with one call.
pub(crate) enum Route {
    /// Use this recorded outcome; do not execute.
    Serve(Result<Value, ToolError>),
    /// Execute; record the outcome when asked.
    Run(Option<Pending>),
}

/// A call to record once it finishes.
pub(crate) struct Pending {
    call: u64,
    key: String,
    kind: InteractionKind,
    policy: ReplayPolicy,
    input: Value,
    tombstone: bool,
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
        let exists = path.exists();
        let effective = match mode {
            Mode::Replay if !exists => return Err(CassetteError::Missing { path }),
            Mode::Replay => Effective::Replay,
            Mode::Once if exists => Effective::Replay,
            Mode::Once => Effective::OnceRecording,
            Mode::New => Effective::New,
            Mode::Rewrite => Effective::Rewrite,
            Mode::Live => Effective::Live,
        };
        let mut state = State::default();
        let mut name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if matches!(effective, Effective::Replay | Effective::New) && exists {
            let file = cassette::load(&path)?;
            name = file.name;
            state.recorded_tools = file.tools;
            state.used = vec![false; file.interactions.len()];
            for (i, interaction) in file.interactions.iter().enumerate() {
                let canon = canonical::canonical(&interaction.input);
                state
                    .queues
                    .entry(interaction.key.clone())
                    .or_default()
                    .entry(canon)
                    .or_default()
                    .push_back(i);
                if interaction.kind == InteractionKind::Operation {
                    state.operations.push(i);
                }
            }
            state.recorded = file.interactions;
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Ok(Cassette {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, AtomicOrdering::Relaxed),
                path,
                name,
                mode,
                effective,
                strict: config.strict,
                redactor: config.redactor,
                state: Mutex::new(state),
            }),
        })
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

    /// A number unique to this opened cassette.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The mode in force.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The redactor, for code that must redact something itself.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held cannot leave the state half-changed in a way
        // that matters more than losing the run's recording; carry on with it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records or replays an operation that is not a tool call, such as a model
    /// completion keyed `llm.<provider>.complete@<model>`. `run` is called only when
    /// the table says to execute.
    pub async fn operation<F, Fut>(
        &self,
        key: &str,
        policy: ReplayPolicy,
        input: Value,
        run: F,
    ) -> Result<Value, ToolError>
    where
        F: FnOnce(Value) -> Fut,
        Fut: Future<Output = Result<Value, ToolError>>,
    {
        match self.route(InteractionKind::Operation, key, policy, &input, None)? {
            Route::Serve(outcome) => outcome,
            Route::Run(pending) => {
                let result = run(input).await;
                if let Some(pending) = pending {
                    self.record(pending, &result, None);
                }
                result
            }
        }
    }

    /// Decides what to do with a call (see the table in the module docs).
    pub(crate) fn route(
        &self,
        kind: InteractionKind,
        key: &str,
        policy: ReplayPolicy,
        input: &Value,
        schema: Option<&str>,
    ) -> Result<Route, ToolError> {
        let mut state = self.state();
        let call = state.next_call;
        state.next_call += 1;
        if let Some(fingerprint) = schema {
            self.check_schema(&mut state, key, fingerprint);
        }
        let effective = self.inner.effective;
        if effective == Effective::Live {
            return Ok(Route::Run(None));
        }
        let pending = |tombstone| {
            Route::Run(Some(Pending {
                call,
                key: key.to_owned(),
                kind,
                policy,
                input: self.inner.redactor.redact(input),
                tombstone,
            }))
        };
        match (policy, effective) {
            (ReplayPolicy::FailLoud, Effective::Replay) => Err(ToolError::ReplayGap {
                key: key.to_owned(),
                call,
            }),
            (ReplayPolicy::FailLoud, _) => Ok(pending(true)),
            (_, Effective::Rewrite) | (ReplayPolicy::MustStub, Effective::OnceRecording) => {
                Ok(pending(false))
            }
            (_, Effective::New) => match self.lookup(&mut state, kind, key, input, call)? {
                Some(outcome) => Ok(Route::Serve(outcome)),
                None => Ok(pending(false)),
            },
            (ReplayPolicy::MustStub, _) => match self.lookup(&mut state, kind, key, input, call)? {
                Some(outcome) => Ok(Route::Serve(outcome)),
                None => Err(self.miss(&state, kind, key, input, call)),
            },
            (ReplayPolicy::RecordedResult, _) => {
                match self.lookup(&mut state, kind, key, input, call)? {
                    Some(outcome) => Ok(Route::Serve(outcome)),
                    None if self.inner.strict => Err(self.miss(&state, kind, key, input, call)),
                    None => {
                        state.warnings.push(format!(
                            "call #{call} of `{key}` was not recorded and ran live"
                        ));
                        Ok(Route::Run(None))
                    }
                }
            }
        }
    }

    /// Takes the next recorded outcome for this call, if any.
    fn lookup(
        &self,
        state: &mut State,
        kind: InteractionKind,
        key: &str,
        input: &Value,
        call: u64,
    ) -> Result<Option<Result<Value, ToolError>>, ToolError> {
        let mut canon = std::mem::take(&mut state.scratch);
        canon.clear();
        canonical::canonical_into(&self.inner.redactor.redact_cow(input), &mut canon);
        let found = state
            .queues
            .get_mut(key)
            .and_then(|by_input| by_input.get_mut(&canon))
            .and_then(Queue::pop_front);
        state.scratch = canon;
        if kind == InteractionKind::Operation {
            let expected = state.operations.get(state.next_operation).copied();
            match (found, expected) {
                (Some(i), Some(e)) if i == e => state.next_operation += 1,
                (Some(i), _) => {
                    // Put it back: the run diverged, the recording did not change.
                    let canon = canonical::canonical(&state.recorded[i].input);
                    if let Some(q) = state.queues.get_mut(key).and_then(|m| m.get_mut(&canon)) {
                        q.push_front(i);
                    }
                    let message = match expected {
                        Some(e) => format!(
                            "this call was recorded as call #{}, but call #{} comes first: {}",
                            state.recorded[i].call,
                            state.recorded[e].call,
                            describe(&state.recorded[e], Some(input))
                        ),
                        None => format!(
                            "this call was recorded as call #{}, out of position",
                            state.recorded[i].call
                        ),
                    };
                    return Err(ToolError::Divergence {
                        key: key.to_owned(),
                        call,
                        message,
                    });
                }
                (None, _) => return Ok(None),
            }
        }
        Ok(found.map(|i| {
            state.used[i] = true;
            let interaction = &state.recorded[i];
            interaction.outcome.clone().into_result(key, call)
        }))
    }

    /// The error for a call nothing recorded stands in for, with the nearest recording.
    fn miss(
        &self,
        state: &State,
        kind: InteractionKind,
        key: &str,
        input: &Value,
        call: u64,
    ) -> ToolError {
        let redacted = self.inner.redactor.redact(input);
        let mut message = format!(
            "nothing recorded matches input {}",
            abbreviated(canonical::canonical(&redacted))
        );
        if kind == InteractionKind::Operation {
            if let Some(&e) = state.operations.get(state.next_operation) {
                let expected = &state.recorded[e];
                return ToolError::Divergence {
                    key: key.to_owned(),
                    call,
                    message: format!(
                        "{message}; the recording expects {}",
                        describe(expected, Some(&redacted))
                    ),
                };
            }
        }
        let same_key = state
            .recorded
            .iter()
            .enumerate()
            .filter(|(_, r)| r.key == key);
        let nearest = same_key
            .map(|(i, r)| {
                let differences = diff(&r.input, &redacted);
                (state.used[i], differences.len(), i)
            })
            .min();
        match nearest {
            Some((used, _, i)) => {
                let r = &state.recorded[i];
                let status = if used { "already replayed" } else { "unused" };
                message.push_str(&format!(
                    "; nearest recorded ({status}): {}",
                    describe(r, Some(&redacted))
                ));
            }
            None => {
                let path = key.split_once('@').map_or(key, |(p, _)| p);
                let versions: Vec<&str> = state
                    .recorded
                    .iter()
                    .filter_map(|r| {
                        r.key
                            .split_once('@')
                            .filter(|(p, _)| *p == path)
                            .map(|(_, v)| v)
                    })
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                if versions.is_empty() {
                    message.push_str(&format!(
                        "; `{key}` was never recorded in {}",
                        self.inner.path.display()
                    ));
                } else {
                    let mut versions = versions;
                    versions.sort_unstable();
                    message.push_str(&format!(
                        "; the tool's version changed: `{path}` was recorded at version {}, and is called at `{key}`",
                        versions.join(", ")
                    ));
                }
            }
        }
        if let Some(warning) = state
            .warnings
            .iter()
            .find(|w| w.contains(&format!("`{key}`")) && w.contains("schema"))
        {
            message.push_str(&format!("; {warning}"));
        }
        ToolError::CassetteMiss {
            key: key.to_owned(),
            call,
            message,
        }
    }

    /// Notes, once per key, a tool whose schemas changed since recording.
    fn check_schema(&self, state: &mut State, key: &str, fingerprint: &str) {
        if !state.checked_schemas.insert(key.to_owned()) {
            return;
        }
        state.tools.insert(key.to_owned(), fingerprint.to_owned());
        if let Some(recorded) = state.recorded_tools.get(key) {
            if recorded != fingerprint {
                state.warnings.push(format!(
                    "the schema of `{key}` changed since the cassette was recorded (fingerprint {recorded} -> {fingerprint}); replayed outputs are checked against the new schema"
                ));
            }
        }
    }

    /// Records a finished call.
    pub(crate) fn record(
        &self,
        pending: Pending,
        result: &Result<Value, ToolError>,
        schema: Option<&str>,
    ) {
        let redactor = &self.inner.redactor;
        let outcome = if pending.tombstone {
            Outcome::Tombstone
        } else {
            match result {
                Ok(value) => Outcome::Ok(redactor.redact(value)),
                Err(error) => Outcome::Error(redact_error(redactor, error)),
            }
        };
        let mut state = self.state();
        if let Some(fingerprint) = schema {
            state
                .tools
                .insert(pending.key.clone(), fingerprint.to_owned());
        }
        state.fresh.push(Interaction {
            call: pending.call,
            key: pending.key,
            kind: pending.kind,
            policy: pending.policy,
            input: pending.input,
            outcome,
        });
    }

    /// Ends the run: fails when recorded must-stub calls were never replayed (replay
    /// modes), and writes the cassette in recording modes.
    pub fn finish(&self) -> Result<FinishReport, CassetteError> {
        let state = self.state();
        let replaying = matches!(self.inner.effective, Effective::Replay);
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
        let replayed = state.used.iter().filter(|u| **u).count();
        let mut report = FinishReport {
            written: false,
            replayed,
            recorded: state.fresh.len(),
            warnings: state.warnings.clone(),
        };
        if matches!(
            self.inner.effective,
            Effective::OnceRecording | Effective::New | Effective::Rewrite
        ) {
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
                format: cassette::FORMAT.to_owned(),
                version: cassette::VERSION,
                complete: true,
                name: self.inner.name.clone(),
                tools,
                interactions,
            };
            cassette::save(&self.inner.path, &file)?;
            report.written = true;
        }
        Ok(report)
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

/// Redacts an error's texts through its serialized form.
fn redact_error(redactor: &Redactor, error: &ToolError) -> ToolError {
    serde_json::to_value(error)
        .ok()
        .and_then(|v| serde_json::from_value(redactor.redact(&v)).ok())
        .unwrap_or_else(|| error.clone())
}

/// How much of an input a divergence message shows; the differences follow in full.
const SHOWN_INPUT: usize = 400;

/// `text`, cut after [`SHOWN_INPUT`] characters with a note of its full length.
fn abbreviated(text: String) -> String {
    match text.char_indices().nth(SHOWN_INPUT) {
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

/// `call #N `key` with {input}`, plus the differences from `actual`.
fn describe(recorded: &Interaction, actual: Option<&Value>) -> String {
    let mut s = format!(
        "call #{} `{}` with {}",
        recorded.call,
        recorded.key,
        abbreviated(canonical::canonical(&recorded.input))
    );
    if let Some(actual) = actual {
        let differences = diff(&recorded.input, actual);
        if !differences.is_empty() {
            s.push_str(&format!(
                " (differences, recorded -> now: {})",
                differences.join(", ")
            ));
        }
    }
    s
}

/// The differences between two JSON values, as `pointer: recorded -> now` lines (at
/// most eight).
pub fn diff(recorded: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", recorded, now, &mut out);
    if out.len() > 8 {
        let more = out.len() - 8;
        out.truncate(8);
        out.push(format!("and {more} more"));
    }
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let at = |p: &str| {
        if p.is_empty() {
            "/".to_owned()
        } else {
            p.to_owned()
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match y.get(k) {
                    Some(vb) => diff_at(&p, va, vb, out),
                    None => out.push(format!("{p}: {} -> (absent)", canonical::canonical(va))),
                }
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(format!("{p}: (absent) -> {}", canonical::canonical(vb)));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}/{i}"), va, vb, out);
            }
        }
        _ if canonical::canonical(a) != canonical::canonical(b) => {
            out.push(format!(
                "{}: {} -> {}",
                at(path),
                canonical::canonical(a),
                canonical::canonical(b)
            ));
        }
        _ => {}
    }
}

/// `crate::module::test::{{closure}}::__tackle_here` -> `crate.module.test`.
fn test_name(fn_type_name: &str) -> String {
    fn_type_name
        .split("::")
        .filter(|s| !s.starts_with('{') && *s != "__tackle_here")
        .collect::<Vec<_>>()
        .join(".")
}

/// Opens the cassette of the enclosing test, named after its module path and function:
/// `<crate>/tests/cassettes/<test binary>.<module>.<test>.json`.
///
/// ```text
/// let cassette = tackle::cassette!()?;                        // CassetteConfig::new()
/// let cassette = tackle::cassette!(CassetteConfig::new().secret(key))?;
/// ```
#[macro_export]
macro_rules! cassette {
    () => {
        $crate::cassette!($crate::replay::CassetteConfig::new())
    };
    ($config:expr) => {{
        fn __tackle_here() {}
        $crate::replay::Cassette::for_test(
            ::core::env!("CARGO_MANIFEST_DIR"),
            ::core::any::type_name_of_val(&__tackle_here),
            $config,
        )
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_parse_and_resolve_against_the_environment() {
        assert_eq!("Rewrite".parse::<Mode>().unwrap(), Mode::Rewrite);
        let err = "record".parse::<Mode>().unwrap_err().to_string();
        assert!(
            err.contains("`record`") && err.contains("replay, once, new, rewrite, live"),
            "{err}"
        );

        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(Mode::resolve(Mode::Replay, env(&[])).unwrap(), Mode::Replay);
        assert_eq!(
            Mode::resolve(Mode::Replay, env(&[("TACKLE_CASSETTE", "new")])).unwrap(),
            Mode::New
        );
        assert!(Mode::resolve(Mode::Replay, env(&[("TACKLE_CASSETTE", "bogus")])).is_err());
        let refused = Mode::resolve(
            Mode::Replay,
            env(&[("TACKLE_CASSETTE", "once"), ("CI", "true")]),
        )
        .unwrap_err();
        assert!(
            matches!(refused, CassetteError::WritingInCi { .. }),
            "{refused}"
        );
        assert!(
            Mode::resolve(Mode::Rewrite, env(&[("CI", "1")])).is_err(),
            "the configured mode is refused too"
        );
        assert_eq!(
            Mode::resolve(Mode::Replay, env(&[("CI", "true")])).unwrap(),
            Mode::Replay,
            "replaying is fine in CI"
        );
        assert_eq!(
            Mode::resolve(Mode::Live, env(&[("CI", "true")])).unwrap(),
            Mode::Live
        );
        assert_eq!(
            Mode::resolve(
                Mode::New,
                env(&[("CI", "true"), ("TACKLE_CASSETTE_ALLOW_CI", "1")])
            )
            .unwrap(),
            Mode::New
        );
        assert_eq!(
            Mode::resolve(Mode::New, env(&[("CI", "false")])).unwrap(),
            Mode::New
        );
    }

    #[test]
    fn diffs_name_pointers() {
        let d = diff(
            &json!({"a": 1, "b": [1, 2], "c": "x"}),
            &json!({"a": 2, "b": [1, 3], "d": true}),
        );
        assert_eq!(
            d,
            [
                "/a: 1 -> 2",
                "/b/1: 2 -> 3",
                "/c: \"x\" -> (absent)",
                "/d: (absent) -> true"
            ]
        );
        assert!(
            diff(&json!({"a": 1.0}), &json!({"a": 1})).is_empty(),
            "number spelling is not a difference"
        );
    }

    #[test]
    fn test_names_from_type_names() {
        assert_eq!(
            test_name("replay::cells::records::{{closure}}::__tackle_here"),
            "replay.cells.records"
        );
        assert_eq!(
            test_name("door::plain_test::__tackle_here"),
            "door.plain_test"
        );
    }
}

//! Runs: what one agent task owns, over a runtime every run shares.
//!
//! A [`Runtime`] is configuration that every run shares: the registry, the approver,
//! the audit sink, shaping, sanitization, limits and the sandbox. It is built once,
//! kept in an `Arc`, and never changed by a run. A [`Run`] is made from it for one
//! task (a test, an agent run, a request a server answers) and owns what belongs to
//! that task alone:
//!
//! * its id (spilled results go under it; audit events carry it);
//! * its [`Cassette`] or journal, so calls are recorded or replayed per run;
//! * its cancellation token, the default time limit of its calls and the grace
//!   window after cancellation;
//! * its event sink (progress, streamed chunks, model deltas);
//! * its idempotency memory (a keyed write runs once per run), its remembered
//!   approvals and its call numbering;
//! * what an upper layer keeps per run, one value per type ([`Run::extension`]: the
//!   agent's last model request, for one);
//! * how many of its calls run at once (`max_parallel`, see [`crate::executor`]).
//!
//! Single calls ([`Run::call`]), batches ([`Run::execute_batch`]), chains, pipelines
//! and agent runs are all made on a run, so many runs share one runtime at once, each
//! with its own recording. A plain call with no run stays one line
//! ([`Runtime::call`]): it is a run of one call, with no cassette.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tackle::{tool, Run, Runtime, ToolCall, ToolContext};
//!
//! /// Looks a word up.
//! #[tool(namespace = "dict", side_effects = read)]
//! fn define(word: String) -> String {
//!     format!("{word}: a word")
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?); // shared by every run
//! let run = Run::new(&runtime).with_id("lookup-1").with_max_parallel(8);
//! let outcomes = run
//!     .execute_batch(
//!         vec![
//!             ToolCall::new("1", "dict.define", json!({"word": "door"})),
//!             ToolCall::new("2", "dict.nope", json!({})),
//!         ],
//!         &ToolContext::new(),
//!     )
//!     .await;
//! assert_eq!(outcomes[0].result().as_ref().unwrap(), "door: a word"); // in call order
//! assert!(outcomes[1].result().is_err()); // a failure in its own slot
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::call::{CallReport, Effect, InputView, Operation, RunState, Runtime};
use crate::context::{RunScope, ToolContext};
use crate::error::ToolError;
use crate::events::EventSink;
use crate::executor::{CallOutcome, ToolCall, DEFAULT_MAX_PARALLEL};
use crate::replay::{Cassette, CassetteError, FinishReport};

/// One task's calls over a shared [`Runtime`]: its id, cassette or journal,
/// cancellation, time limits, events, idempotency memory, remembered approvals and
/// call numbering. See the [module docs](self).
///
/// A run is cheap to clone: clones are the same run (one cancellation, one
/// recording). Configure it with the `with_*` methods before its first call; a
/// `with_*` on a run that was already cloned makes a new run with the settings so
/// far (its cassette and cancellation token are still the ones the clones hold) and
/// a memory of its own (idempotency, remembered approvals, numbering).
#[derive(Clone)]
pub struct Run {
    inner: Arc<RunInner>,
}

/// What a run holds.
#[derive(Clone)]
struct RunInner {
    runtime: Arc<Runtime>,
    max_parallel: usize,
    /// What the door reads: the scope, the cassette, the approver, the memory.
    state: RunState,
}

impl fmt::Debug for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = &self.inner.state;
        f.debug_struct("Run")
            .field("id", &state.scope.id())
            .field("cassette", &state.cassette)
            .field("cancelled", &state.is_cancelled())
            .field("default_timeout", &state.scope.default_timeout)
            .field("grace", &state.scope.grace)
            .field("events", &state.scope.events.is_some())
            .field("approver", &state.approver.is_some())
            .field("max_parallel", &self.inner.max_parallel)
            .finish()
    }
}

impl Run {
    /// A new run over `runtime`, with a generated id, no cassette, its own
    /// cancellation token, no default time limit, the default grace window
    /// ([`DEFAULT_GRACE`](crate::context::DEFAULT_GRACE)) and [`DEFAULT_MAX_PARALLEL`] calls at once.
    pub fn new(runtime: &Arc<Runtime>) -> Run {
        Run {
            inner: Arc::new(RunInner {
                runtime: Arc::clone(runtime),
                max_parallel: DEFAULT_MAX_PARALLEL,
                state: RunState::new(),
            }),
        }
    }

    /// The run's settings, to change before it is shared: a run already cloned is
    /// made anew, with the settings so far (the same cassette and token) and a fresh
    /// memory.
    fn edit(&mut self) -> &mut RunInner {
        if Arc::get_mut(&mut self.inner).is_none() {
            let mut fresh = (*self.inner).clone();
            fresh.state.memory = Arc::default();
            self.inner = Arc::new(fresh);
        }
        Arc::make_mut(&mut self.inner)
    }

    /// The run's scope, to change before it is shared.
    fn scope(&mut self) -> &mut RunScope {
        Arc::make_mut(&mut self.edit().state.scope)
    }

    /// The same run (its cassette, cancellation, memory and numbering) sending no
    /// events: for work whose events stay its own (a skill with `bubble_events =
    /// false`).
    pub fn without_events(&self) -> Run {
        if self.inner.state.scope.events.is_none() {
            return self.clone();
        }
        // The view is the same run: the same id, made now if it was not yet.
        let _ = self.id();
        let mut view = (*self.inner).clone();
        Arc::make_mut(&mut view.state.scope).events = None;
        Run {
            inner: Arc::new(view),
        }
    }

    /// Names the run (spilled results go under `<root>/<id>/`, audit events carry it).
    pub fn with_id(mut self, id: impl Into<String>) -> Run {
        self.scope().set_id(Arc::from(id.into()));
        self
    }

    /// Routes every call of the run through `cassette` (record or replay, by its
    /// mode); finish it with [`Run::finish`].
    pub fn with_cassette(mut self, cassette: Cassette) -> Run {
        self.edit().state.cassette = Some(cassette);
        self
    }

    /// Uses `token` as the run's cancellation (a child of a wider one, say).
    pub fn with_cancellation(mut self, token: CancellationToken) -> Run {
        self.scope().cancel = token;
        self
    }

    /// The time limit of calls to tools that set no `timeout_ms`.
    pub fn with_default_timeout(mut self, limit: Duration) -> Run {
        self.scope().default_timeout = Some(limit);
        self
    }

    /// How long a tool may go on after the run is cancelled before the door stops it
    /// (default [`DEFAULT_GRACE`](crate::context::DEFAULT_GRACE)).
    pub fn with_grace(mut self, grace: Duration) -> Run {
        self.scope().grace = grace;
        self
    }

    /// Sends progress, streamed chunks and model deltas of every call of the run to
    /// `sink` (see [`crate::events`]).
    pub fn with_events(mut self, sink: EventSink) -> Run {
        self.scope().events = Some(sink);
        self
    }

    /// Asks `approver` about this run's calls that need approval, instead of the
    /// runtime's (a durable run's decisions live with the run).
    pub fn with_approver(mut self, approver: impl Approver + 'static) -> Run {
        self.edit().state.approver = Some(Arc::new(approver));
        self
    }

    /// At most `n` calls of a batch run at once (at least 1; default
    /// [`DEFAULT_MAX_PARALLEL`]).
    pub fn with_max_parallel(mut self, n: usize) -> Run {
        self.edit().max_parallel = n.max(1);
        self
    }

    /// The runtime the run's calls go through.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.runtime
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        self.inner.state.scope.id()
    }

    /// The run's value of type `T`, kept with the run's memory: made with
    /// `T::default()` the first time the run (or any of its clones) asks, the same
    /// value after. What a layer above the door keeps per run, typed, as `http`'s
    /// request extensions are (the agent keeps its last model request here, to
    /// record the next as a delta). A run made anew by a `with_*` setting after it
    /// was cloned has values of its own, as it has a memory of its own.
    ///
    /// ```
    /// use std::sync::{atomic::{AtomicU32, Ordering}, Arc};
    /// use tackle::{Run, Runtime};
    ///
    /// #[derive(Default)]
    /// struct Retries(AtomicU32);
    ///
    /// let run = Run::new(&Arc::new(Runtime::default()));
    /// run.extension::<Retries>().0.fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(run.clone().extension::<Retries>().0.load(Ordering::Relaxed), 1);
    /// ```
    pub fn extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.inner.state.memory.extensions.get::<T>()
    }

    /// The run's cassette, if it has one.
    pub fn cassette(&self) -> Option<&Cassette> {
        self.inner.state.cassette.as_ref()
    }

    /// The run's cancellation token (cancelling it is [`Run::cancel`]).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.state.scope.cancel.clone()
    }

    /// Cancels the run: running calls are asked to stop and stopped after the grace
    /// window; calls not yet started fail with `Cancelled`. Other runs of the same
    /// runtime go on.
    pub fn cancel(&self) {
        self.inner.state.scope.cancel.cancel();
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.state.is_cancelled()
    }

    /// The time limit of calls to tools that set no `timeout_ms`, if any.
    pub fn default_timeout(&self) -> Option<Duration> {
        self.inner.state.scope.default_timeout
    }

    /// The grace window after cancellation.
    pub fn grace(&self) -> Duration {
        self.inner.state.scope.grace
    }

    /// The run's event sink, if it has one.
    pub fn events(&self) -> Option<&EventSink> {
        self.inner.state.scope.events.as_ref()
    }

    /// How many calls of a batch run at once.
    pub fn max_parallel(&self) -> usize {
        self.inner.max_parallel
    }

    /// Calls a tool through the door as a call of this run (see [`Runtime::call`]).
    pub async fn call(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        self.inner
            .runtime
            .call_in(Some(&self.inner.state), None, key, input, ctx)
            .await
    }

    /// [`Run::call`] of a call the caller names `id` (a model's tool-call id): a
    /// result spilled to a file is named after it, so the model can name the file.
    pub async fn call_with_id(
        &self,
        id: &str,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        self.inner
            .runtime
            .call_in(Some(&self.inner.state), Some(id), key, input, ctx)
            .await
    }

    /// Like [`Run::call`], with everything the door learned about the call.
    pub async fn call_report(&self, key: &str, input: Value, ctx: &ToolContext) -> CallReport {
        self.inner
            .runtime
            .call_report_in(Some(&self.inner.state), None, key, input, ctx)
            .await
    }

    /// Refuses a call whose input its caller found unsound before the door's gates,
    /// beyond what the tool's schema checks (an MCP server given a retry whose
    /// `requestState` was altered): the call is resolved, capability-checked,
    /// numbered and audited like any call of the run, its input gate refused with
    /// `why`, and it ends with [`ToolError::InvalidInput`] holding `why`. The tool
    /// does not run, and nothing is recorded to a cassette.
    pub fn refuse(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
        why: crate::validate::ValidationIssue,
    ) -> CallReport {
        self.inner
            .runtime
            .refuse_report_in(Some(&self.inner.state), key, input, ctx, why)
    }

    /// Performs an [`Operation`] through the door as a call of this run (see
    /// [`Runtime::perform`]).
    pub async fn perform<'a, X, I, V, F, Fut>(
        &'a self,
        operation: &'a Operation<X>,
        input: I,
        ctx: &'a ToolContext,
        run: F,
    ) -> Result<X::Output, X::Error>
    where
        X: Effect,
        I: FnOnce() -> V + Send + 'a,
        V: InputView,
        F: FnOnce() -> Fut + Send + 'a,
        Fut: Future<Output = Result<X::Output, X::Error>> + Send + 'a,
    {
        self.perform_numbered(operation, input, ctx, move |_| run())
            .await
            .0
    }

    /// [`Run::perform`], with the call's number (as in audit and progress events)
    /// given to the operation's code and returned with its outcome: what code that
    /// streams or reports about the call it makes (a model completion) needs.
    pub async fn perform_numbered<'a, X, I, V, F, Fut>(
        &'a self,
        operation: &'a Operation<X>,
        input: I,
        ctx: &'a ToolContext,
        code: F,
    ) -> (Result<X::Output, X::Error>, u64)
    where
        X: Effect,
        I: FnOnce() -> V + Send + 'a,
        V: InputView,
        F: FnOnce(u64) -> Fut + Send + 'a,
        Fut: Future<Output = Result<X::Output, X::Error>> + Send + 'a,
    {
        self.inner
            .runtime
            .perform_identified(Some(&self.inner.state), operation, input, ctx, code)
            .await
    }

    /// Runs one call of a batch through the door (see [`Run::execute_batch`]).
    pub async fn execute(&self, call: ToolCall, ctx: &ToolContext) -> CallOutcome {
        crate::executor::run_one(&self.inner.runtime, &self.inner.state, call, ctx).await
    }

    /// Runs a batch of calls and returns one outcome per call, in call order: reads
    /// in parallel up to `max_parallel`, writes one at a time in order, `sequential`
    /// tools alone (see [`crate::executor`]).
    pub async fn execute_batch(&self, calls: Vec<ToolCall>, ctx: &ToolContext) -> Vec<CallOutcome> {
        let inner = &*self.inner;
        crate::executor::execute_batch(&inner.runtime, &inner.state, inner.max_parallel, calls, ctx)
            .await
    }

    /// The results of a batch, in call order, as [`Run::execute_batch`] gives them
    /// (without the rest of each report).
    pub async fn execute_results(
        &self,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<Result<Value, ToolError>> {
        let inner = &*self.inner;
        crate::executor::results(&inner.runtime, &inner.state, inner.max_parallel, calls, ctx).await
    }

    /// Ends the run's recording: checks its cassette (recorded must-stub calls all
    /// replayed, no read run live during a replay unless allowed) and writes it in
    /// recording modes. A run without a cassette has nothing to finish.
    pub fn finish(&self) -> Result<FinishReport, CassetteError> {
        match &self.inner.state.cassette {
            Some(cassette) => cassette.finish(),
            None => Ok(FinishReport::default()),
        }
    }

    /// Ends a run that failed (see [`Cassette::finish_failed`]).
    pub fn finish_failed(&self, failure: &str) -> Result<FinishReport, CassetteError> {
        match &self.inner.state.cassette {
            Some(cassette) => cassette.finish_failed(failure),
            None => Ok(FinishReport::default()),
        }
    }
}

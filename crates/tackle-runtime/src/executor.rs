//! The executor: batches of tool calls, run in parallel where it is safe.
//!
//! A model often asks for several tool calls in one turn. [`Executor::execute_batch`]
//! runs them and returns one [`CallOutcome`] per call, in call order; a slot is never
//! dropped (a call whose task was lost becomes an `Aborted` outcome). Every call goes
//! through the door ([`Runtime::call_report`]), with all its gates.
//!
//! Scheduling follows what each tool does to the world:
//!
//! * `none` and `read` tools run in parallel, up to `max_parallel` at a time;
//! * `write` and `external` tools run one at a time, in call order (alongside the
//!   parallel ones), unless the tool opts in with `execution_mode = parallel`;
//! * `execution_mode = sequential` tools run alone: every earlier call of the batch
//!   finishes first, and later ones start after.
//!
//! An executor is one *run*. Its cancellation token reaches every call through the
//! context ([`ToolContext::cancelled`]); a tool that ignores it is stopped after the
//! grace window with `Aborted`. Its default timeout applies to tools without
//! `timeout_ms`. And it remembers idempotency keys: a `write` or `external` tool whose
//! spec names an `idempotency_key` input field executes once per tool and value of
//! that field within the run; later calls get the first call's outcome (marked
//! `deduplicated`) without running the tool, after passing their own capability and
//! input stages (the door's deduplicate stage; the executor gives it the run's memory).

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::audit::Execution;
use crate::call::dedupe::Idempotency;
use crate::call::{CallReport, Runtime};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::events::EventSink;
use crate::spec::{ExecutionMode, ToolSpec};

/// One call a model asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The caller's id for the call (a model's tool-call id), echoed in the outcome.
    pub id: String,
    /// The tool: full key, `namespace.name` or a unique bare name.
    pub key: String,
    /// The arguments.
    pub input: Value,
}

impl ToolCall {
    /// A call of `key` with `input`, identified by `id`.
    pub fn new(id: impl Into<String>, key: impl Into<String>, input: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            key: key.into(),
            input,
        }
    }
}

/// The outcome of one call of a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// The call's id, as given in its [`ToolCall`].
    pub id: String,
    /// What the door reported.
    pub report: CallReport,
}

impl CallOutcome {
    /// The call's result.
    pub fn result(&self) -> &Result<Value, ToolError> {
        &self.report.result
    }
}

/// How a call is scheduled within a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Parallel,
    Serial,
    Alone,
}

fn lane_of(spec: &ToolSpec) -> Lane {
    match spec.execution_mode {
        ExecutionMode::Sequential => Lane::Alone,
        ExecutionMode::Parallel => Lane::Parallel,
        ExecutionMode::Auto if spec.side_effects.mutates() => Lane::Serial,
        ExecutionMode::Auto => Lane::Parallel,
    }
}

/// Runs batches of calls; one executor is one run. See the [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tackle::{tool, Executor, Runtime, ToolCall, ToolContext};
///
/// /// Looks a word up.
/// #[tool(namespace = "dict", side_effects = read)]
/// fn define(word: String) -> String {
///     format!("{word}: a word")
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let executor = Executor::new(Arc::new(Runtime::from_inventory()?)).with_max_parallel(8);
/// let outcomes = executor
///     .execute_batch(
///         vec![
///             ToolCall::new("1", "dict.define", json!({"word": "door"})),
///             ToolCall::new("2", "dict.nope", json!({})),
///         ],
///         &ToolContext::new(),
///     )
///     .await;
/// assert_eq!(outcomes[0].result().as_ref().unwrap(), "door: a word"); // in call order
/// assert!(outcomes[1].result().is_err()); // a failure in its own slot
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Executor {
    runtime: Arc<Runtime>,
    max_parallel: usize,
    default_timeout: Option<Duration>,
    grace: Option<Duration>,
    cancel: CancellationToken,
    events: Option<EventSink>,
    /// The run's idempotency memory, which the door's deduplicate stage keeps.
    memory: Arc<dyn Any + Send + Sync>,
}

/// How many calls run at once unless set with [`Executor::with_max_parallel`].
pub const DEFAULT_MAX_PARALLEL: usize = 16;

impl Executor {
    /// An executor over `runtime`, running at most [`DEFAULT_MAX_PARALLEL`] calls at
    /// once, with no default timeout and the default grace window.
    pub fn new(runtime: Arc<Runtime>) -> Executor {
        Executor {
            runtime,
            max_parallel: DEFAULT_MAX_PARALLEL,
            default_timeout: None,
            grace: None,
            cancel: CancellationToken::new(),
            events: None,
            memory: Idempotency::new_shared(),
        }
    }

    /// At most `n` calls run at once (at least 1).
    pub fn with_max_parallel(mut self, n: usize) -> Executor {
        self.max_parallel = n.max(1);
        self
    }

    /// The time limit of calls to tools that set no `timeout_ms`.
    pub fn with_default_timeout(mut self, limit: Duration) -> Executor {
        self.default_timeout = Some(limit);
        self
    }

    /// How long tools may go on after [`Executor::cancel`] before they are stopped.
    pub fn with_grace(mut self, grace: Duration) -> Executor {
        self.grace = Some(grace);
        self
    }

    /// Sends progress and streamed chunks of every call to `sink`.
    pub fn with_events(mut self, sink: EventSink) -> Executor {
        self.events = Some(sink);
        self
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The run's cancellation token (cancelling it is [`Executor::cancel`]).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Cancels the run: running calls are asked to stop and stopped after the grace
    /// window; calls not yet started fail with `Cancelled`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The caller's context with this run's settings.
    fn run_context(&self, ctx: &ToolContext) -> ToolContext {
        let mut ctx = ctx
            .clone()
            .with_cancellation(self.cancel.clone())
            .with_run_memory(Arc::clone(&self.memory));
        if let Some(limit) = self.default_timeout {
            ctx = ctx.with_default_timeout(limit);
        }
        if let Some(grace) = self.grace {
            ctx = ctx.with_grace(grace);
        }
        if let Some(sink) = &self.events {
            ctx = ctx.with_events(sink.clone());
        }
        ctx
    }

    /// Runs one call through the door (see [`Executor::execute_batch`] for batches).
    pub async fn execute(&self, call: ToolCall, ctx: &ToolContext) -> CallOutcome {
        let ctx = self.run_context(ctx);
        run_one(&self.runtime, call, &ctx).await
    }

    /// Runs a batch and returns one outcome per call, in call order. See the
    /// [module docs](self) for the scheduling.
    pub async fn execute_batch(&self, calls: Vec<ToolCall>, ctx: &ToolContext) -> Vec<CallOutcome> {
        let ctx = self.run_context(ctx);
        let mut slots: Vec<Option<CallOutcome>> = Vec::with_capacity(calls.len());
        slots.resize_with(calls.len(), || None);
        let mut names: Vec<(String, String)> = Vec::with_capacity(calls.len());
        let mut segment = Segment::default();
        for (index, call) in calls.into_iter().enumerate() {
            names.push((call.id.clone(), call.key.clone()));
            let lane = self
                .runtime
                .registry()
                .resolve(&call.key)
                .map_or(Lane::Parallel, |tool| lane_of(tool.spec()));
            match lane {
                Lane::Alone => {
                    // Everything before it finishes first; it runs alone.
                    self.run_segment(std::mem::take(&mut segment), &ctx, &mut slots)
                        .await;
                    let outcome = run_one(&self.runtime, call, &ctx).await;
                    slots[index] = Some(outcome);
                }
                Lane::Serial => segment.serial.push_back((index, call)),
                Lane::Parallel => segment.parallel.push_back((index, call)),
            }
        }
        self.run_segment(segment, &ctx, &mut slots).await;
        slots
            .into_iter()
            .zip(names)
            .map(|(slot, (id, key))| slot.unwrap_or_else(|| lost(id, key)))
            .collect()
    }

    /// Runs the calls between two `sequential` calls: the parallel ones on up to
    /// `max_parallel` workers pulling from one queue, the serial ones in order on one
    /// worker of their own (which counts against `max_parallel`).
    async fn run_segment(
        &self,
        segment: Segment,
        ctx: &ToolContext,
        slots: &mut [Option<CallOutcome>],
    ) {
        let Segment {
            mut parallel,
            serial,
        } = segment;
        let mut queues = Vec::new();
        if self.max_parallel == 1 {
            // One at a time, in call order, whatever the lane.
            parallel.extend(serial);
            parallel.make_contiguous().sort_by_key(|(index, _)| *index);
            if !parallel.is_empty() {
                queues.push((Arc::new(Mutex::new(parallel)), 1));
            }
        } else {
            let serial_worker = usize::from(!serial.is_empty());
            let workers = (self.max_parallel - serial_worker).min(parallel.len());
            if workers > 0 {
                queues.push((Arc::new(Mutex::new(parallel)), workers));
            }
            if serial_worker == 1 {
                queues.push((Arc::new(Mutex::new(serial)), 1));
            }
        }
        if let [(queue, 1)] = queues.as_slice() {
            // One worker: it runs here, with no task to spawn.
            for (index, outcome) in drain(&self.runtime, queue, ctx).await {
                if let Some(slot) = slots.get_mut(index) {
                    *slot = Some(outcome);
                }
            }
            return;
        }
        let mut tasks = JoinSet::new();
        for (queue, workers) in queues {
            for _ in 0..workers {
                let runtime = Arc::clone(&self.runtime);
                let queue = Arc::clone(&queue);
                let ctx = ctx.clone();
                tasks.spawn(async move { drain(&runtime, &queue, &ctx).await });
            }
        }
        while let Some(joined) = tasks.join_next().await {
            // A worker that failed to join (the door contains panics, so this is a
            // task aborted by the Tokio runtime shutting down) leaves its slots
            // empty; the caller turns empty slots into failures.
            for (index, outcome) in joined.into_iter().flatten() {
                if let Some(slot) = slots.get_mut(index) {
                    *slot = Some(outcome);
                }
            }
        }
    }
}

/// The calls between two `sequential` calls, by lane, each in call order.
#[derive(Default)]
struct Segment {
    parallel: VecDeque<(usize, ToolCall)>,
    serial: VecDeque<(usize, ToolCall)>,
}

/// The outcome of a call whose result was lost.
fn lost(id: String, key: String) -> CallOutcome {
    CallOutcome {
        id,
        report: CallReport {
            call_id: u64::MAX,
            result: Err(ToolError::Aborted {
                key: key.clone(),
                grace_ms: 0,
            }),
            key,
            execution: Execution::NotRun,
            duration: Duration::ZERO,
            shaped: None,
            findings: Vec::new(),
        },
    }
}

/// A worker: runs calls from `queue` until it is empty; their outcomes, by slot.
async fn drain(
    runtime: &Runtime,
    queue: &Mutex<VecDeque<(usize, ToolCall)>>,
    ctx: &ToolContext,
) -> Vec<(usize, CallOutcome)> {
    let mut done = Vec::new();
    loop {
        let next = queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let Some((index, call)) = next else { break };
        done.push((index, run_one(runtime, call, ctx).await));
    }
    done
}

/// One call through the door, in an `execute_tool` span (the OpenTelemetry GenAI
/// conventions: `otel.name = "execute_tool {name}"`, `gen_ai.operation.name`,
/// `gen_ai.tool.name`, `gen_ai.tool.call.id`, and `error.type` when it fails).
async fn run_one(runtime: &Runtime, call: ToolCall, ctx: &ToolContext) -> CallOutcome {
    let ToolCall { id, key, input } = call;
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = key.as_str(),
        gen_ai.tool.call.id = id.as_str(),
        error.type = tracing::field::Empty,
    );
    let report = if span.is_disabled() {
        runtime.call_report(&key, input, ctx).await
    } else {
        span.record("otel.name", format!("execute_tool {key}").as_str());
        let report = Box::pin(
            runtime
                .call_report(&key, input, ctx)
                .instrument(span.clone()),
        )
        .await;
        if let Err(error) = &report.result {
            span.record("error.type", error.kind().as_str());
        }
        report
    };
    CallOutcome { id, report }
}

//! The executor: batches of tool calls, run in parallel where it is safe.
//!
//! A model often asks for several tool calls in one turn. [`Run::execute_batch`](crate::run::Run::execute_batch)
//! runs them and returns one [`CallOutcome`] per call, in call order; a slot is never
//! dropped (a call whose task was lost becomes an `Aborted` outcome). Every call goes
//! through the door as a call of the run ([`Run::call_report`](crate::run::Run::call_report)), with all its gates.
//!
//! Scheduling follows what each tool does to the world:
//!
//! * `none` and `read` tools run in parallel, up to `max_parallel` at a time;
//! * `write` and `external` tools run one at a time, in call order (alongside the
//!   parallel ones), unless the tool opts in with `execution_mode = parallel`;
//! * `execution_mode = sequential` tools run alone: every earlier call of the batch
//!   finishes first, and later ones start after.
//!
//! The batch belongs to a [`Run`](crate::run::Run). The run's cancellation token reaches every call
//! (tools see it as [`ToolContext::cancelled`]); a tool that ignores it is stopped
//! after the run's grace window with `Aborted`. The run's default timeout applies to
//! tools without `timeout_ms`. And the run remembers idempotency keys: a `write` or
//! `external` tool whose spec names an `idempotency_key` input field executes once
//! per tool and value of that field within the run; later calls get the first call's
//! outcome (marked `deduplicated`) without running the tool, after passing their own
//! capability and input stages (the door's deduplicate stage).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::audit::Execution;
use crate::call::{CallReport, RunState, Runtime};
use crate::context::ToolContext;
use crate::error::ToolError;
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

/// How many calls run at once unless set with
/// [`Run::with_max_parallel`](crate::run::Run::with_max_parallel).
pub const DEFAULT_MAX_PARALLEL: usize = 16;

/// Runs a batch of `run` and returns one outcome per call, in call order. See the
/// [module docs](self) for the scheduling.
pub(crate) async fn execute_batch(
    runtime: &Arc<Runtime>,
    run: &RunState,
    max_parallel: usize,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
) -> Vec<CallOutcome> {
    if calls.len() == 1 {
        // One call: nothing to schedule.
        let mut calls = calls;
        return match calls.pop() {
            Some(call) => vec![run_one(runtime, run, call, ctx).await],
            None => Vec::new(),
        };
    }
    let door = Door {
        runtime,
        run,
        max_parallel,
    };
    let mut slots: Vec<Option<CallOutcome>> = Vec::with_capacity(calls.len());
    slots.resize_with(calls.len(), || None);
    let mut names: Vec<(String, String)> = Vec::with_capacity(calls.len());
    let mut segment = Segment::default();
    for (index, call) in calls.into_iter().enumerate() {
        names.push((call.id.clone(), call.key.clone()));
        let lane = runtime
            .spec_of(&call.key)
            .map_or(Lane::Parallel, |spec| lane_of(&spec));
        match lane {
            Lane::Alone => {
                // Everything before it finishes first; it runs alone.
                run_segment(&door, std::mem::take(&mut segment), ctx, &mut slots).await;
                let outcome = run_one(runtime, run, call, ctx).await;
                slots[index] = Some(outcome);
            }
            Lane::Serial => segment.serial.push_back((index, call)),
            Lane::Parallel => segment.parallel.push_back((index, call)),
        }
    }
    run_segment(&door, segment, ctx, &mut slots).await;
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
    door: &Door<'_>,
    segment: Segment,
    ctx: &ToolContext,
    slots: &mut [Option<CallOutcome>],
) {
    let Segment {
        mut parallel,
        serial,
    } = segment;
    let max_parallel = door.max_parallel;
    let mut queues = Vec::new();
    if max_parallel == 1 {
        // One at a time, in call order, whatever the lane.
        parallel.extend(serial);
        parallel.make_contiguous().sort_by_key(|(index, _)| *index);
        if !parallel.is_empty() {
            queues.push((Arc::new(Mutex::new(parallel)), 1));
        }
    } else {
        let serial_worker = usize::from(!serial.is_empty());
        let workers = (max_parallel - serial_worker).min(parallel.len());
        if workers > 0 {
            queues.push((Arc::new(Mutex::new(parallel)), workers));
        }
        if serial_worker == 1 {
            queues.push((Arc::new(Mutex::new(serial)), 1));
        }
    }
    if let [(queue, 1)] = queues.as_slice() {
        // One worker: it runs here, with no task to spawn.
        for (index, outcome) in drain(door.runtime, door.run, queue, ctx).await {
            if let Some(slot) = slots.get_mut(index) {
                *slot = Some(outcome);
            }
        }
        return;
    }
    let mut tasks = JoinSet::new();
    for (queue, workers) in queues {
        for _ in 0..workers {
            let (runtime, run) = (Arc::clone(door.runtime), door.run.clone());
            let queue = Arc::clone(&queue);
            let ctx = ctx.clone();
            tasks.spawn(async move { drain(&runtime, &run, &queue, &ctx).await });
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

/// Where a batch's calls go: the runtime's door, as calls of the run.
struct Door<'a> {
    runtime: &'a Arc<Runtime>,
    run: &'a RunState,
    max_parallel: usize,
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
    run: &RunState,
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
        done.push((index, run_one(runtime, run, call, ctx).await));
    }
    done
}

/// One call through the door, in an `execute_tool` span (the OpenTelemetry GenAI
/// conventions: `otel.name = "execute_tool {name}"`, `gen_ai.operation.name`,
/// `gen_ai.tool.name`, `gen_ai.tool.call.id`, and `error.type` when it fails).
/// A batch's results alone, in call order (what an agent's step reads): a batch of
/// one call with nobody tracing goes straight through the door, with no report to
/// build; any other is [`execute_batch`].
pub(crate) async fn results(
    runtime: &Arc<Runtime>,
    run: &RunState,
    max_parallel: usize,
    mut calls: Vec<ToolCall>,
    ctx: &ToolContext,
) -> Vec<Result<Value, ToolError>> {
    if calls.len() == 1 && !tracing::enabled!(tracing::Level::INFO) {
        if let Some(ToolCall { id, key, input }) = calls.pop() {
            return vec![
                runtime
                    .call_in(Some(run), Some(&id), &key, input, ctx)
                    .await,
            ];
        }
    }
    execute_batch(runtime, run, max_parallel, calls, ctx)
        .await
        .into_iter()
        .map(|outcome| outcome.report.result)
        .collect()
}

pub(crate) async fn run_one(
    runtime: &Runtime,
    run: &RunState,
    call: ToolCall,
    ctx: &ToolContext,
) -> CallOutcome {
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
        runtime
            .call_report_in(Some(run), Some(&id), &key, input, ctx)
            .await
    } else {
        span.record("otel.name", format!("execute_tool {key}").as_str());
        let report = Box::pin(
            runtime
                .call_report_in(Some(run), Some(&id), &key, input, ctx)
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

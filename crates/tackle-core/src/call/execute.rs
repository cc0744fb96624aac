//! Stage 7, execute: the tool runs, within its limits.
//!
//! * a run already cancelled ends the call with `Cancelled`: the tool never starts;
//! * the time limit is the tool's `timeout_ms`, else the run's default; past it,
//!   the call ends with `Timeout`;
//! * when the run is cancelled while the tool runs, the tool is asked to stop (it sees
//!   it through its context) and stopped after the grace window with `Aborted`.
//!   Stopping means dropping the tool's future. A synchronous tool with no time
//!   limit runs where it is called (no thread hop): it cannot be stopped mid-way, so
//!   it finishes; one with a time limit, or marked `blocking`, runs on a blocking
//!   thread, where the timer and the grace window can still end the call. A tool
//!   that does not yield once its run is cancelled (it blocks or loops without
//!   awaiting) finishes where it runs: a rerun-safe call's late result is then dropped
//!   for `Aborted`, as if it had been stopped, while a write's outcome is kept as it
//!   landed;
//! * a panic, while starting or while running, becomes `Panicked`: the process goes on;
//! * a tool that sees its context gets one of its own for the call (its id, its
//!   declared secrets, its stream); a `()` tool that streamed returns its stream;
//!
//! What the tool returns, output or error, is scrubbed of secrets once, by the outcome
//! stage right after this one and its checks (see [`crate::secrets`]).
//!
//! An operation runs the code its caller handed the door, under the same rules.
//!
//! With a journaled cassette (see [`crate::replay::journal`]), the call is handed to
//! the journal right before it runs; a journal that cannot take it stops the call.
//!
//! A call whose sandbox is a process (see [`crate::sandbox`]) runs in the runtime's
//! sandbox under the same time limit and grace window; when either ends it, dropping
//! the sandbox's future kills the child, so its `Timeout` is never still running.

use std::any::Any;
use std::future::Future;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;

use super::{
    panics, Call, Effect, Flow, Json, Now, OperationCode, Outcome, RunState, Runtime, Step,
};
use crate::audit::Execution;
use crate::context::{
    CallScope, CancellationToken, Checkpoints, RunScope, ToolContext, DEFAULT_GRACE,
};
use crate::error::{panic_message, ToolError, ToolOrigin};
use crate::events::ToolEventKind;
use crate::registry::{HandlerKind, Tool};
use crate::sandbox::{SandboxJob, SandboxPolicy};

/// The stage without waiting: done when the call was replayed (nothing runs), or
/// when its tool is synchronous, sees no context and has no time limit, sandbox or
/// memory guard, so it runs right here: the common case. Any other call waits in
/// [`stage`].
#[inline]
pub(super) fn now<'a, X: Effect>(door: &'a Runtime, call: &mut Call<'a, X>) -> Now<X> {
    if call.outcome.is_some() {
        // Replayed: nothing runs.
        return ControlFlow::Continue(Step::Done);
    }
    let tool = call.tool();
    let HandlerKind::Sync(run) = &tool.handler().0 else {
        return ControlFlow::Continue(Step::Wait);
    };
    if tool.takes_context()
        || call.operation
        || call.sandbox.is_some()
        || door.memory_guard.is_some()
        || call.spec().blocking
        || limit(call).is_some()
    {
        return ControlFlow::Continue(Step::Wait);
    }
    begin(call)?;
    inline::<X>(call, *run);
    ControlFlow::Continue(Step::Done)
}

#[inline]
pub(super) async fn stage<'a, X: Effect>(door: &'a Runtime, call: &mut Call<'a, X>) -> Flow<X> {
    if call.outcome.is_some() {
        // Replayed: nothing runs.
        return ControlFlow::Continue(());
    }
    let checkpoint = begin(call)?;
    let tool = call.tool();
    let limit = limit(call);
    if let Some(policy) = call.sandbox.take() {
        let result = Box::pin(sandboxed(door, call, policy, limit)).await;
        call.outcome = Some(of_tool::<X>(result));
        return ControlFlow::Continue(());
    }
    let inline_ok = limit.is_none() && !call.spec().blocking;
    let result = match (&tool.handler().0, tool.takes_context()) {
        (HandlerKind::Sync(run), false) if inline_ok && !call.operation => {
            // A synchronous tool with no time limit (here because a memory guard
            // watches it), run right here.
            inline::<X>(call, *run);
            return ControlFlow::Continue(());
        }
        // A call that waits is in a box of its own already (see `Runtime::pass_now`):
        // an operation's code runs in it. An awaited tool runs in a box of its size,
        // so a run waiting on its model (many at once) holds the small future of an
        // operation, not the larger one of a tool with its context.
        _ => match call.code.take() {
            Some(code) => run_operation(call, code, limit).await,
            None => Box::pin(run_awaited(call, limit, checkpoint)).await,
        },
    };
    call.outcome = Some(result);
    ControlFlow::Continue(())
}

/// What every call that runs does first: a run already cancelled ends it; with a
/// journaled cassette, the journal learns of the call before it runs (a journal that
/// cannot hold it ends it), and hands back the call's checkpoints when it keeps any.
#[inline(always)]
fn begin<X: Effect>(
    call: &mut Call<'_, X>,
) -> ControlFlow<Outcome<X>, Option<Box<dyn Checkpoints>>> {
    let tool = call.tool();
    if call.run.is_some_and(RunState::is_cancelled) {
        return ControlFlow::Break(Err(X::from_error(ToolError::Cancelled {
            key: tool.key().to_owned(),
        })));
    }
    let mut checkpoint = None;
    if let (Some(cassette), Some(pending)) = (call.cassette(), &call.pending) {
        // Write-ahead: a journal learns of the call before it runs.
        // A tool's effect (`Json`) leaves it to the spec.
        let rerun_safe = tool.rerun_safe() || X::RERUN_SAFE;
        match cassette.start(pending, call.key.as_deref(), rerun_safe) {
            Ok(kept) => checkpoint = kept,
            Err(why) => {
                return ControlFlow::Break(Err(X::from_error(ToolError::Execution {
                    key: tool.key().to_owned(),
                    message: format!("the run's journal could not hold the call: {why}"),
                })))
            }
        }
    }
    call.trail.execution = Execution::Live;
    ControlFlow::Continue(checkpoint)
}

/// The call's time limit: its tool's `timeout_ms`, else its run's default.
#[inline]
fn limit<X: Effect>(call: &Call<'_, X>) -> Option<Duration> {
    call.spec()
        .timeout_ms
        .map(Duration::from_millis)
        .or(call.run.and_then(|run| run.scope.default_timeout))
}

/// Runs a synchronous tool that sees no context right here, under the panic guard
/// (cancellation cannot stop it mid-way; it was checked before), and sets the call's
/// outcome.
#[inline]
fn inline<X: Effect>(
    call: &mut Call<'_, X>,
    run: fn(&ToolContext, Value) -> Result<Value, ToolError>,
) {
    let ctx = call.ctx;
    let tool = call.tool();
    let input = call.input.take();
    let secrets = panics::secrets_of(ctx, &call.arg_secrets);
    // The outcome is set where the tool's result is made and stays there (an error
    // is renamed in place): a result copied soon after the tool wrote it waits for
    // the tool's stores. A panic leaves it unset, and is its outcome instead.
    let outcome = &mut call.outcome;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        panics::guarded(secrets.as_ref(), || {
            *outcome = Some(of_tool::<X>(run(ctx, input)));
        })
    }));
    match caught {
        Ok(()) => {
            if let Some(Err(error)) = &mut call.outcome {
                if let Some(named) = X::error_key(error) {
                    rekey(named, tool.key());
                }
            }
        }
        Err(payload) => call.outcome = Some(of_tool::<X>(settle::<Json>(tool, Err(payload)))),
    }
}

/// A tool's outcome as the call's effect's: a tool's effect is [`Json`](super::Json),
/// so this is the outcome itself.
#[inline]
fn of_tool<X: Effect>(result: Result<Value, ToolError>) -> Outcome<X> {
    match result {
        Ok(value) => X::from_view(value),
        Err(error) => Err(X::from_error(error)),
    }
}

/// What can end a running call early: its time limit, and its run's cancellation
/// with the run's grace window.
#[derive(Clone, Copy)]
struct Bounds<'a> {
    limit: Option<Duration>,
    cancel: Option<(&'a CancellationToken, Duration)>,
}

impl Bounds<'_> {
    /// The bounds of `call`, whose time limit is `limit`.
    fn of<'c, X: Effect>(call: &Call<'c, X>, limit: Option<Duration>) -> Bounds<'c> {
        Bounds {
            limit,
            cancel: call.run.map(|run| (&run.scope.cancel, run.scope.grace)),
        }
    }

    /// Whether anything can end the call early.
    fn any(&self) -> bool {
        self.limit.is_some() || self.cancel.is_some()
    }
}

/// Runs an async tool, or any tool under a limit.
async fn run_awaited<X: Effect>(
    call: &mut Call<'_, X>,
    limit: Option<Duration>,
    checkpoint: Option<Box<dyn Checkpoints>>,
) -> Outcome<X> {
    let bounds = Bounds::of(call, limit);
    of_tool::<X>(run_tool(call, bounds, checkpoint).await)
}

/// Runs an operation's code (taken from the call), under the call's bounds.
async fn run_operation<'a, X: Effect>(
    call: &mut Call<'a, X>,
    code: OperationCode<'a, X>,
    limit: Option<Duration>,
) -> Outcome<X> {
    let bounds = Bounds::of(call, limit);
    let tool = call.tool();
    let work = guard_future::<X>(tool, code(call.id()));
    if bounds.any() {
        limit_call(
            work,
            tool.key(),
            bounds,
            (false, tool.rerun_safe() || X::RERUN_SAFE),
            X::from_error,
        )
        .await
    } else {
        work.await
    }
}

/// Runs an async tool, or any tool under a limit.
async fn run_tool<X: Effect>(
    call: &mut Call<'_, X>,
    bounds: Bounds<'_>,
    checkpoint: Option<Box<dyn Checkpoints>>,
) -> Result<Value, ToolError> {
    let tool = call.tool();
    let ctx = call.ctx;
    let input = call.input.take();
    if tool.takes_context() {
        let call_id = call.id();
        let run = call.run.map(|run| Arc::clone(&run.scope));
        let arg_secrets: Option<Arc<[String]>> =
            (!call.arg_secrets.is_empty()).then(|| call.arg_secrets.as_slice().into());
        return scoped(
            tool,
            ctx,
            (call_id, run, arg_secrets, checkpoint),
            input,
            bounds,
        )
        .await;
    }
    // The tool never sees its context: no scope, no stream, no events.
    if bounds.any() {
        let off_thread = off_thread(tool, bounds);
        limit_call(
            guarded(tool, ctx, &call.arg_secrets, input, off_thread),
            tool.key(),
            bounds,
            (off_thread || tool.spec().blocking, tool.rerun_safe()),
            std::convert::identity,
        )
        .await
    } else {
        guarded(tool, ctx, &call.arg_secrets, input, false).await
    }
}

/// Runs the call in the runtime's sandbox, under its limit: the sandbox kills what it
/// started when the limit drops its future.
async fn sandboxed<X: Effect>(
    door: &Runtime,
    call: &mut Call<'_, X>,
    policy: Box<SandboxPolicy>,
    limit: Option<Duration>,
) -> Result<Value, ToolError> {
    let bounds = Bounds::of(call, limit);
    let tool = call.tool();
    let ctx = call.ctx;
    let Some(sandbox) = door.sandbox.as_deref() else {
        return Err(ToolError::Sandbox {
            key: tool.key().to_owned(),
            reason: format!(
                "could not run it: its policy asks for a {} and the runtime has no sandbox \
                 (see `Runtime::with_sandbox`)",
                policy.kind
            ),
        });
    };
    // Only a `#[tool]` function can cross: the child runs the one defined where this
    // tool's is, never another that happens to share its key.
    let ToolOrigin::Static { file, line, .. } = tool.origin() else {
        return Err(ToolError::Sandbox {
            key: tool.key().to_owned(),
            reason: "could not run it: only tools registered at link time (`#[tool]` \
                     functions) can run in a process; this one was registered at run time"
                .to_owned(),
        });
    };
    let secrets = call
        .spec()
        .secrets
        .iter()
        .filter_map(|name| {
            ctx.provided_secret(name)
                .map(|value| (name.clone(), value.to_owned()))
        })
        .collect();
    let job = SandboxJob {
        key: tool.key(),
        defined_at: (file, *line),
        input: call.input.take(),
        call_id: call.id(),
        secrets,
        policy: &policy,
        max_bytes: door.limits.max_bytes,
    };
    let (mut no_network, mut contained) = (false, false);
    let work = async {
        let run = sandbox.run(job).await;
        no_network = run.no_network;
        contained = run.contained;
        run.result
    };
    let result = if bounds.any() {
        limit_call(
            work,
            tool.key(),
            bounds,
            (false, tool.rerun_safe()),
            std::convert::identity,
        )
        .await
    } else {
        work.await
    };
    if !call.span.is_disabled() {
        call.span.record("tool.sandbox.no_network", no_network);
        call.span.record("tool.sandbox.contained", contained);
    }
    result.map_err(|mut e| {
        if let Some(named) = e.key_mut() {
            rekey(named, tool.key());
        }
        e
    })
}

/// Whether a call of `tool` runs on a blocking thread: a synchronous tool under a
/// time limit (or marked `blocking`) could not be stopped where it is, so it goes
/// where the timer can still fire (and a timeout reports it as still running). With
/// only its run's cancellation to watch, it runs where it is: a thread hop per call
/// would cost more than most tools take.
fn off_thread(tool: &Tool, bounds: Bounds<'_>) -> bool {
    matches!(tool.handler().0, HandlerKind::Sync(_))
        && (bounds.limit.is_some() || tool.spec().blocking)
        && tokio::runtime::Handle::try_current().is_ok()
}

/// Who a scoped call is: its number, its run, its secret arguments' values.
type CallOf = (
    u64,
    Option<Arc<RunScope>>,
    Option<Arc<[String]>>,
    Option<Box<dyn Checkpoints>>,
);

/// Runs a tool that sees its context in a scope of its own for the call.
async fn scoped(
    tool: &Tool,
    ctx: &ToolContext,
    (call_id, run, arg_secrets, checkpoint): CallOf,
    input: Value,
    bounds: Bounds<'_>,
) -> Result<Value, ToolError> {
    let info = tool.call_info();
    let mut scope = CallScope::new(
        call_id,
        Arc::clone(&info.key),
        Arc::clone(&info.secrets),
        run,
    );
    scope.arg_secrets.clone_from(&arg_secrets);
    scope.checkpoint = checkpoint;
    let scoped = ctx.for_call(scope);
    scoped.emit(ToolEventKind::Started);
    let arguments = arg_secrets.as_deref().unwrap_or_default();
    let mut result = if bounds.any() {
        let off_thread = off_thread(tool, bounds);
        limit_call(
            guarded(tool, &scoped, arguments, input, off_thread),
            tool.key(),
            bounds,
            (off_thread || tool.spec().blocking, tool.rerun_safe()),
            std::convert::identity,
        )
        .await
    } else {
        guarded(tool, &scoped, arguments, input, false).await
    };
    if let (Ok(Value::Null), Some(stream)) = (
        &result,
        scoped.call_scope().and_then(CallScope::take_stream),
    ) {
        result = Ok(Value::String(stream));
    }
    scoped.emit(ToolEventKind::Finished { ok: result.is_ok() });
    result
}

/// Runs `work` under the call's time limit and the run's cancellation: `Timeout` when
/// the limit passes, `Aborted` when the run was cancelled and the tool did not finish
/// within the grace window (each as the work's error, by `error`).
///
/// A tool that does not yield (it blocks its thread, or loops without awaiting) cannot
/// be stopped where it runs: it finishes, however late. When its run was cancelled
/// during the stretch it ended with (it did not yield since), a `rerun_safe` call's
/// result is dropped for `Aborted`, as if it had been stopped; any other call's
/// outcome is kept as it landed (its effect happened).
async fn limit_call<T, E>(
    work: impl Future<Output = Result<T, E>>,
    key: &str,
    bounds: Bounds<'_>,
    (still_running, rerun_safe): (bool, bool),
    error: fn(ToolError) -> E,
) -> Result<T, E> {
    let limit = bounds.limit;
    let grace = bounds.cancel.map_or(DEFAULT_GRACE, |(_, grace)| grace);
    let aborted = || {
        error(ToolError::Aborted {
            key: key.to_owned(),
            grace_ms: u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
        })
    };
    // Whether the run was cancelled already when the work was last polled.
    let cancelled_when_polled = AtomicBool::new(false);
    let mut work = std::pin::pin!(work);
    let work = std::future::poll_fn(|cx| {
        if let Some((token, _)) = bounds.cancel {
            cancelled_when_polled.store(token.is_cancelled(), Ordering::Relaxed);
        }
        work.as_mut().poll(cx)
    });
    let timer = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let abort = async {
        match bounds.cancel {
            Some((token, _)) => {
                token.cancelled().await;
                tokio::time::sleep(grace).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        result = work => match bounds.cancel {
            Some((token, _))
                if rerun_safe
                    && !cancelled_when_polled.load(Ordering::Relaxed)
                    && token.is_cancelled() =>
            {
                Err(aborted())
            }
            _ => result,
        },
        () = timer => Err(error(ToolError::Timeout {
            key: key.to_owned(),
            after_ms: limit.map_or(0, |l| u64::try_from(l.as_millis()).unwrap_or(u64::MAX)),
            still_running,
        })),
        () = abort => Err(aborted()),
    }
}

/// Runs the tool's handler, turning a panic (while starting or while running) into
/// `Panicked`, and naming the tool by its registered key in every error; the thread
/// is marked with the caller's secrets and the call's secret `arguments` while the
/// handler runs (see [`panics`]).
async fn guarded(
    tool: &Tool,
    ctx: &ToolContext,
    arguments: &[String],
    input: Value,
    off_thread: bool,
) -> Result<Value, ToolError> {
    let secrets = panics::secrets_of(ctx, arguments);
    let outcome = match &tool.handler().0 {
        HandlerKind::Sync(run) if off_thread => {
            let (run, ctx) = (*run, ctx.clone());
            match tokio::task::spawn_blocking(move || {
                catch_unwind(AssertUnwindSafe(|| {
                    panics::guarded(secrets.as_ref(), || run(&ctx, input))
                }))
            })
            .await
            {
                Ok(outcome) => outcome,
                Err(join) => Ok(Err(ToolError::Execution {
                    key: tool.key().to_owned(),
                    message: format!("the tool's thread failed: {join}"),
                })),
            }
        }
        HandlerKind::Sync(run) => catch_unwind(AssertUnwindSafe(|| {
            panics::guarded(secrets.as_ref(), || run(ctx, input))
        })),
        HandlerKind::Async(start) => {
            match catch_unwind(AssertUnwindSafe(|| {
                panics::guarded(secrets.as_ref(), || start(ctx.clone(), input))
            })) {
                Ok(future) => CatchUnwind(future, secrets).await,
                Err(payload) => Err(payload),
            }
        }
        HandlerKind::Given => Ok(Err(ToolError::Execution {
            key: tool.key().to_owned(),
            message: "this operation was called without its code".to_owned(),
        })),
    };
    settle::<Json>(tool, outcome)
}

/// An operation's code, with the same panic guard; its errors name the operation by
/// its key.
async fn guard_future<'f, X: Effect>(
    tool: &Tool,
    work: Pin<Box<dyn Future<Output = Outcome<X>> + Send + 'f>>,
) -> Outcome<X> {
    settle::<X>(tool, CatchUnwind(work, None).await)
}

/// What a handler or an operation's code ended with, as the call's outcome: a panic
/// is `Panicked`, and an error names the tool by its registered key.
#[inline]
fn settle<X: Effect>(tool: &Tool, outcome: Result<Outcome<X>, Box<dyn Any + Send>>) -> Outcome<X> {
    let key = tool.key();
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(mut error)) => {
            if let Some(named) = X::error_key(&mut error) {
                rekey(named, key);
            }
            Err(error)
        }
        Err(payload) => Err(X::from_error(ToolError::Panicked {
            key: key.to_owned(),
            message: panic_message(payload.as_ref()),
        })),
    }
}

/// Errors made inside a handler carry the key the tool was defined with; a tool moved
/// by a collision strategy answers to its registered key.
fn rekey(named: &mut String, registered: &str) {
    if named != registered {
        registered.clone_into(named);
    }
}

/// Polls a future, catching a panic in any poll.
/// A future whose polls catch panics, with the thread marked for the panic hook while
/// it runs (see [`panics`]).
struct CatchUnwind<F>(F, Option<Arc<[String]>>);

impl<F, O> Future for CatchUnwind<Pin<Box<F>>>
where
    F: Future<Output = O> + ?Sized,
{
    type Output = Result<O, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let secrets = this.1.as_ref();
        let work = &mut this.0;
        match catch_unwind(AssertUnwindSafe(|| {
            panics::guarded(secrets, || work.as_mut().poll(cx))
        })) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

//! The call pipeline: the one door every tool call goes through.
//!
//! ```text
//! resolve key -> capability gate -> validate input -> replay router
//!   -> approval gate -> execute (timeout, cancellation, panic guard)
//!   -> validate output -> shape result -> sanitize -> audit
//! ```
//!
//! [`Runtime::call`] is that door. Whoever calls a tool (user code, the executor, a
//! chain, an agent loop, the MCP server) calls it here, so no caller can skip a gate.
//! The order matters:
//!
//! * a caller without the required permissions learns nothing about the input's
//!   validity, and the tool never runs;
//! * an invalid input never reaches the tool, nor an approver;
//! * with a [`Cassette`] attached, the replay router decides after validation whether
//!   the call runs or a recorded outcome stands in for it (see [`crate::replay`]);
//! * approval is asked only for calls that will really run, and is bound to the
//!   validated arguments (see [`crate::approval`]);
//! * the tool runs under its time limit and the run's cancellation token, with a
//!   panic guard, and with a per-call context (its id, its declared secrets, its
//!   stream);
//! * an output that breaks the tool's own schema is an error (replayed outputs are
//!   checked too);
//! * a long result is shaped ([`crate::shape`]), and instruction-like text in it is
//!   handled by the tool's trust class ([`crate::sanitize`]);
//! * every call, whatever its outcome, ends with an audit event, counters and a
//!   tracing span ([`crate::audit`]).
//!
//! Time limits and the grace window use Tokio's timer: a runtime whose tools set
//! `timeout_ms`, or whose callers set a default timeout or a cancellation token, must
//! be driven by a Tokio runtime with time enabled (`#[tokio::main]` is).

use std::any::Any;
use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

use crate::approval::{ApprovalBinding, ApprovalDecision, ApprovalRequest, Approver};
use crate::audit::{AuditError, AuditEvent, AuditSink, Counters, Execution, GateDecision, Gates};
use crate::context::{CallScope, ToolContext};
use crate::error::{RegistryError, SchemaSide, ToolError};
use crate::events::ToolEventKind;
use crate::registry::{HandlerKind, Registry, Tool, ToolFuture};
use crate::replay::{Cassette, InteractionKind, Route};
use crate::sanitize::{sanitize, Finding, Sanitization};
use crate::shape::{ShapeReport, Shaping};
use crate::validate::SchemaValidator;

/// The tools of a program and the door to call them, with the door's settings:
/// cassette, approver, shaping, sanitization and audit.
#[derive(Default)]
pub struct Runtime {
    registry: Registry,
    cassette: Option<Cassette>,
    approver: Option<Arc<dyn Approver>>,
    remembered: Mutex<HashSet<ApprovalBinding>>,
    shaping: Shaping,
    sanitization: Sanitization,
    audit: Option<Arc<dyn AuditSink>>,
    counters: Counters,
    next_call: AtomicU64,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("registry", &self.registry)
            .field("cassette", &self.cassette)
            .field("approver", &self.approver.is_some())
            .field("shaping", &self.shaping)
            .field("sanitization", &self.sanitization)
            .field("audit", &self.audit.is_some())
            .field("counters", &self.counters)
            .finish()
    }
}

/// Everything known about one finished call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallReport {
    /// The call's id, unique within the runtime (as in audit and progress events).
    pub call_id: u64,
    /// The tool's registered key, or the key asked for when it did not resolve.
    pub key: String,
    /// The (shaped and sanitized) output, or why there is none.
    pub result: Result<Value, ToolError>,
    /// How the result was obtained.
    pub execution: Execution,
    /// Time spent in the door.
    pub duration: Duration,
    /// What shaping did, when the result was too long.
    pub shaped: Option<ShapeReport>,
    /// Instruction-like text found in the result.
    pub findings: Vec<Finding>,
}

/// What the door learns about a call while it passes.
#[derive(Default)]
struct Trail {
    gates: Gates,
    execution: Execution,
    shaped: Option<ShapeReport>,
    findings: Vec<Finding>,
}

impl Runtime {
    /// A runtime over every `#[tool]` linked into the program.
    pub fn from_inventory() -> Result<Runtime, RegistryError> {
        Ok(Runtime::new(Registry::from_inventory()?))
    }

    /// A runtime over the given registry.
    pub fn new(registry: Registry) -> Runtime {
        Runtime {
            registry,
            ..Runtime::default()
        }
    }

    /// Routes every call through this cassette (record or replay, by its mode).
    pub fn with_cassette(mut self, cassette: Cassette) -> Runtime {
        self.cassette = Some(cassette);
        self
    }

    /// Attaches or removes the cassette, returning the one attached before.
    pub fn set_cassette(&mut self, cassette: Option<Cassette>) -> Option<Cassette> {
        std::mem::replace(&mut self.cassette, cassette)
    }

    /// The attached cassette, if any.
    pub fn cassette(&self) -> Option<&Cassette> {
        self.cassette.as_ref()
    }

    /// Asks `approver` about calls that need approval. Without one, they are denied.
    pub fn with_approver(mut self, approver: impl Approver + 'static) -> Runtime {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Sets where spilled results go and the summarizer hook.
    pub fn with_shaping(mut self, shaping: Shaping) -> Runtime {
        self.shaping = shaping;
        self
    }

    /// The shaping settings (and the spill directory, once used).
    pub fn shaping(&self) -> &Shaping {
        &self.shaping
    }

    /// Sets the sanitization policies.
    pub fn with_sanitization(mut self, sanitization: Sanitization) -> Runtime {
        self.sanitization = sanitization;
        self
    }

    /// Sends an audit event for every call to `sink`.
    pub fn with_audit(mut self, sink: impl AuditSink + 'static) -> Runtime {
        self.audit = Some(Arc::new(sink));
        self
    }

    /// The call counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tools, to register or unregister run-time tools.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Calls a tool through the door (see the [module docs](self)): resolves `key`
    /// (full key, `namespace.name` or a unique bare name), then every gate.
    pub async fn call(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let mut trail = Trail::default();
        // Time is only taken for someone who reads it.
        let start = self.audit.is_some().then(Instant::now);
        let (result, _, _) = self.pass(key, input, ctx, &mut trail, start).await;
        result
    }

    /// Like [`Runtime::call`], with everything the door learned about the call.
    pub async fn call_report(&self, key: &str, input: Value, ctx: &ToolContext) -> CallReport {
        let mut trail = Trail::default();
        let start = Instant::now();
        let (result, call_id, tool) = self.pass(key, input, ctx, &mut trail, Some(start)).await;
        CallReport {
            call_id,
            key: tool.map_or(key, Tool::key).to_owned(),
            result,
            execution: trail.execution,
            duration: start.elapsed(),
            shaped: trail.shaped,
            findings: trail.findings,
        }
    }

    /// Audits and counts a call answered by an earlier call with the same idempotency
    /// key (see [`crate::executor`]), and returns its report: the first call's
    /// outcome under a new call id.
    pub(crate) fn record_duplicate(&self, first: CallReport) -> CallReport {
        let start = Instant::now();
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut trail = Trail {
            execution: Execution::Deduplicated,
            shaped: first.shaped.clone(),
            findings: first.findings.clone(),
            ..Trail::default()
        };
        let tool = self.registry.resolve(&first.key).ok();
        self.finish(
            tool.map(|t| &**t),
            &first.key,
            call_id,
            &first.result,
            &mut trail,
            Some(start),
        );
        CallReport {
            call_id,
            execution: Execution::Deduplicated,
            duration: start.elapsed(),
            ..first
        }
    }

    /// Resolution, the gates and the audit of one call. Returns the result, the
    /// call's id and the tool, when the key resolved.
    async fn pass(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
        trail: &mut Trail,
        start: Option<Instant>,
    ) -> (Result<Value, ToolError>, u64, Option<&Tool>) {
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let tool = match self.registry.resolve(key) {
            Ok(tool) => tool,
            Err(e) => {
                self.finish(None, key, call_id, &Err(e.clone()), trail, start);
                return (Err(e), call_id, None);
            }
        };
        let spec = tool.spec();
        let span = tracing::info_span!(
            "tool.call",
            tool.key = tool.key(),
            tool.side_effects = spec.side_effects.as_str(),
            tool.trust = spec.trust.as_str(),
            call.id = call_id,
            call.outcome = tracing::field::Empty,
        );
        let mut result = if span.is_disabled() {
            self.gates(tool, input, ctx, call_id, trail).await
        } else {
            self.gates(tool, input, ctx, call_id, trail)
                .instrument(span.clone())
                .await
        };
        if let Err(e) = &mut result {
            if ctx.has_secrets() {
                scrub(e, ctx);
            }
        }
        span.record(
            "call.outcome",
            match &result {
                Ok(_) => "ok",
                Err(e) => e.kind().as_str(),
            },
        );
        self.finish(Some(tool), tool.key(), call_id, &result, trail, start);
        (result, call_id, Some(tool))
    }

    /// Counters and the audit event of a finished call.
    fn finish(
        &self,
        tool: Option<&Tool>,
        key: &str,
        call_id: u64,
        result: &Result<Value, ToolError>,
        trail: &mut Trail,
        start: Option<Instant>,
    ) {
        self.counters
            .count(result.as_ref().err().map(ToolError::kind), trail.execution);
        self.counters
            .shaped_and_flagged(trail.shaped.is_some(), !trail.findings.is_empty());
        if let Some(sink) = &self.audit {
            sink.record(AuditEvent {
                call_id,
                key: key.to_owned(),
                side_effects: tool.map(|t| t.spec().side_effects),
                gates: trail.gates.clone(),
                execution: trail.execution,
                duration: start.map(|s| s.elapsed()).unwrap_or_default(),
                error: result.as_ref().err().map(AuditError::of),
                shaped: trail.shaped.clone(),
                findings: trail.findings.clone(),
            });
        }
    }

    /// Every gate after resolution, and the tool's execution.
    async fn gates(
        &self,
        tool: &Tool,
        input: Value,
        ctx: &ToolContext,
        call_id: u64,
        trail: &mut Trail,
    ) -> Result<Value, ToolError> {
        let spec = tool.spec();
        let key = tool.key();
        if spec.requires_capability.is_empty() {
            trail.gates.capability = GateDecision::NotRequired;
        } else {
            let missing = ctx.capabilities().missing(&spec.requires_capability);
            if !missing.is_empty() {
                let error = ToolError::CapabilityDenied {
                    key: key.to_owned(),
                    missing,
                };
                trail.gates.capability = GateDecision::Refused(error.to_string());
                return Err(error);
            }
            trail.gates.capability = GateDecision::Passed;
        }
        let validators = tool.validators()?;
        check(
            &validators.input,
            &input,
            SchemaSide::Input,
            key,
            &mut trail.gates.input,
        )?;
        let output = match &self.cassette {
            None => self.run(tool, input, ctx, call_id, trail).await?,
            Some(cassette) => {
                let fingerprint = tool.schema_fingerprint();
                // The schema check is once per tool and cassette, not once per call.
                let check = tool.first_call_under(cassette.id()).then_some(fingerprint);
                let route = cassette.route(
                    InteractionKind::Tool,
                    key,
                    spec.replay_policy,
                    &input,
                    check,
                )?;
                match route {
                    Route::Serve(outcome) => {
                        trail.execution = Execution::Replayed;
                        outcome?
                    }
                    Route::Run(pending) => {
                        let result = self.run(tool, input, ctx, call_id, trail).await;
                        if let Some(pending) = pending {
                            // A call stopped at the approval gate never ran: nothing
                            // to record.
                            if trail.execution == Execution::Live {
                                cassette.record(pending, &result, Some(fingerprint));
                                trail.execution = Execution::Recorded;
                            }
                        }
                        result?
                    }
                }
            }
        };
        check(
            &validators.output,
            &output,
            SchemaSide::Output,
            key,
            &mut trail.gates.output,
        )?;
        let mut output = match spec.max_result_tokens {
            Some(max) => {
                match Box::pin(
                    self.shaping
                        .shape(key, call_id, &output, max, spec.result_shaping),
                )
                .await
                {
                    Some((shaped, report)) => {
                        trail.shaped = Some(report);
                        shaped
                    }
                    None => output,
                }
            }
            None => output,
        };
        let policy = self.sanitization.policy_for(spec.trust);
        trail.findings = sanitize(&mut output, policy, key, spec.trust);
        if trail.findings.is_empty() {
            trail.gates.sanitization = GateDecision::Passed;
        } else if self.sanitization.fail_closed {
            let mut patterns: Vec<String> = trail
                .findings
                .iter()
                .map(|f| f.pattern.to_owned())
                .collect();
            patterns.dedup();
            let error = ToolError::UnsafeOutput {
                key: key.to_owned(),
                patterns,
            };
            trail.gates.sanitization = GateDecision::Refused(error.to_string());
            return Err(error);
        } else {
            trail.gates.sanitization = GateDecision::Passed;
        }
        Ok(output)
    }

    /// The approval gate and the tool's execution, for a call that will really run.
    async fn run(
        &self,
        tool: &Tool,
        input: Value,
        ctx: &ToolContext,
        call_id: u64,
        trail: &mut Trail,
    ) -> Result<Value, ToolError> {
        let key = tool.key();
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled {
                key: key.to_owned(),
            });
        }
        if tool.needs_approval(&input) {
            // Boxed, like the other rare stages, to keep the common call's future small.
            let decision = Box::pin(self.approve(tool, &input, call_id)).await;
            trail.gates.approval = decision.clone();
            if let GateDecision::Refused(reason) = decision {
                return Err(ToolError::ApprovalDenied {
                    key: key.to_owned(),
                    reason,
                });
            }
        } else {
            trail.gates.approval = GateDecision::NotRequired;
        }
        trail.execution = Execution::Live;
        let limit = tool
            .spec()
            .timeout_ms
            .map(Duration::from_millis)
            .or(ctx.default_timeout());
        let limited = limit.is_some() || ctx.cancellation().is_some();
        if !tool.takes_context() {
            // The tool never sees its context: no scope, no stream, no events.
            return if limited {
                Box::pin(limit_call(guarded(tool, ctx, input), key, limit, ctx)).await
            } else {
                guarded(tool, ctx, input).await
            };
        }
        let info = tool.call_info();
        let scoped = ctx.for_call(CallScope::new(
            call_id,
            Arc::clone(&info.key),
            Arc::clone(&info.secrets),
        ));
        scoped.emit(ToolEventKind::Started);
        let mut result = if limited {
            Box::pin(limit_call(
                guarded(tool, &scoped, input),
                key,
                limit,
                &scoped,
            ))
            .await
        } else {
            guarded(tool, &scoped, input).await
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

    /// Asks for approval of a call of `tool` with the validated `input`.
    async fn approve(&self, tool: &Tool, input: &Value, call_id: u64) -> GateDecision {
        let binding = ApprovalBinding::new(tool.key(), input);
        let remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&binding);
        if remembered {
            self.counters.approval(false, true);
            return GateDecision::RememberedApproval;
        }
        let Some(approver) = &self.approver else {
            self.counters.approval(false, false);
            return GateDecision::Refused(
                "the tool needs approval and no approver is configured".to_owned(),
            );
        };
        let request = ApprovalRequest {
            key: tool.key().to_owned(),
            call_id,
            input: input.clone(),
            binding,
        };
        let decision = match approver.review(&request).await {
            ApprovalDecision::Approve(approval) if *approval.binding() == request.binding => {
                if approval.remember() {
                    self.remembered
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(request.binding);
                }
                GateDecision::Approved
            }
            ApprovalDecision::Approve(approval) => GateDecision::Refused(format!(
                "the approval was given for another call ({} {}), not this one ({} {})",
                approval.binding().key(),
                approval.binding(),
                request.key,
                request.binding
            )),
            ApprovalDecision::Deny(reason) => GateDecision::Refused(reason),
        };
        self.counters
            .approval(true, matches!(decision, GateDecision::Approved));
        decision
    }
}

/// Validates `value` against one of the tool's schemas and notes the gate's decision.
fn check(
    validator: &SchemaValidator,
    value: &Value,
    side: SchemaSide,
    key: &str,
    gate: &mut GateDecision,
) -> Result<(), ToolError> {
    let checked = validator.validate(value);
    if checked.valid {
        *gate = GateDecision::Passed;
        return Ok(());
    }
    *gate = GateDecision::Refused(format!("{} problem(s)", checked.errors.len()));
    let (key, errors) = (key.to_owned(), checked.errors);
    Err(match side {
        SchemaSide::Input => ToolError::InvalidInput { key, errors },
        SchemaSide::Output => ToolError::InvalidOutput { key, errors },
    })
}

/// Runs `work` under the call's time limit and the run's cancellation: `Timeout` when
/// the limit passes, `Aborted` when the run was cancelled and the tool did not finish
/// within the grace window. Stopping means dropping the tool's future.
async fn limit_call(
    work: impl Future<Output = Result<Value, ToolError>>,
    key: &str,
    limit: Option<Duration>,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let grace = ctx.grace();
    let timer = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let abort = async {
        match ctx.cancellation() {
            Some(token) => {
                token.cancelled().await;
                tokio::time::sleep(grace).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        result = work => result,
        () = timer => Err(ToolError::Timeout {
            key: key.to_owned(),
            after_ms: limit.map_or(0, |l| u64::try_from(l.as_millis()).unwrap_or(u64::MAX)),
        }),
        () = abort => Err(ToolError::Aborted {
            key: key.to_owned(),
            grace_ms: u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}

/// Removes the caller's secret values from an error's text.
fn scrub(error: &mut ToolError, ctx: &ToolContext) {
    let Ok(mut value) = serde_json::to_value(&*error) else {
        return;
    };
    if scrub_value(&mut value, ctx) {
        if let Ok(scrubbed) = serde_json::from_value(value) {
            *error = scrubbed;
        }
    }
}

fn scrub_value(value: &mut Value, ctx: &ToolContext) -> bool {
    match value {
        Value::String(text) => {
            let mut changed = false;
            for secret in ctx.secret_values().filter(|s| !s.is_empty()) {
                if text.contains(secret) {
                    *text = text.replace(secret, "<redacted>");
                    changed = true;
                }
            }
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| scrub_value(v, ctx) | changed),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, v| scrub_value(v, ctx) | changed),
        _ => false,
    }
}

/// Runs the tool's handler, turning a panic (while starting or while running) into
/// `Panicked`, and naming the tool by its registered key in every error.
async fn guarded(tool: &Tool, ctx: &ToolContext, input: Value) -> Result<Value, ToolError> {
    let key = tool.key();
    let outcome = match &tool.handler().0 {
        HandlerKind::Sync(run) => catch_unwind(AssertUnwindSafe(|| run(ctx, input))),
        HandlerKind::Async(start) => {
            match catch_unwind(AssertUnwindSafe(|| start(ctx.clone(), input))) {
                Ok(future) => CatchUnwind(future).await,
                Err(payload) => Err(payload),
            }
        }
    };
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(rekey(e, key)),
        Err(payload) => Err(ToolError::Panicked {
            key: key.to_owned(),
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// Errors made inside a handler carry the key the tool was defined with; a tool moved
/// by a collision strategy answers to its registered key.
fn rekey(mut error: ToolError, registered: &str) -> ToolError {
    if let Some(key) = error.key_mut() {
        if key != registered {
            *key = registered.to_owned();
        }
    }
    error
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the panic carried no message".to_owned()
    }
}

/// Polls a tool future, catching a panic in any poll.
struct CatchUnwind(ToolFuture);

impl Future for CatchUnwind {
    type Output = Result<Result<Value, ToolError>, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::DynamicTool;
    use crate::spec::{SideEffects, ToolSpec};
    use crate::ToolErrorKind;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn runtime_with(tool: DynamicTool) -> Runtime {
        let mut rt = Runtime::default();
        rt.registry_mut().register(tool).unwrap();
        rt
    }

    fn counted_tool(runs: Arc<AtomicUsize>, permission: Option<&str>) -> DynamicTool {
        let mut spec = ToolSpec::new("t", "count", "1", SideEffects::Write, "Counts its runs.");
        spec.input_schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        spec.requires_capability = permission.into_iter().map(str::to_owned).collect();
        DynamicTool::new(spec, move |_ctx, input| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(input)
            }
        })
    }

    #[tokio::test]
    async fn capability_gate_runs_before_validation_and_execution() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs.clone(), Some("db:write")));
        // Invalid input *and* no permission: the denial wins, and the tool never ran.
        let err = rt
            .call("t.count@1", json!({"n": "x"}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
        assert!(err.to_string().contains("`db:write`"), "{err}");
        let err = rt
            .call(
                "t.count@1",
                json!({"n": 1}),
                &ToolContext::new().grant("db:read"),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
        assert_eq!(runs.load(Ordering::SeqCst), 0);

        let ctx = ToolContext::new().grant("db:*");
        let err = rt
            .call("t.count@1", json!({"n": "x"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            0,
            "invalid input never reaches the tool"
        );
        assert_eq!(
            rt.call("t.count@1", json!({"n": 1}), &ctx).await.unwrap(),
            json!({"n": 1})
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn validators_are_compiled_once_per_tool() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs, None));
        let tool = rt.registry().resolve("t.count@1").unwrap();
        let first: *const _ = tool.validators().unwrap();
        for n in 0..3 {
            rt.call("t.count@1", json!({ "n": n }), &ToolContext::new())
                .await
                .unwrap();
        }
        let after: *const _ = tool.validators().unwrap();
        assert!(
            std::ptr::eq(first, after),
            "the same compiled validators serve every call"
        );
    }

    #[tokio::test]
    async fn tools_without_permissions_need_no_grants() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs.clone(), None));
        assert!(rt
            .call("count", json!({"n": 2}), &ToolContext::new())
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn panics_are_contained() {
        let spec = ToolSpec::new("t", "boom", "1", SideEffects::None, "Panics.");
        let rt = runtime_with(DynamicTool::new(spec, |_c, input: Value| async move {
            if input.get("now").is_some() {
                panic!("boom at {}", 42);
            }
            Ok::<_, String>(Value::Null)
        }));
        let err = rt
            .call("t.boom@1", json!({"now": 1}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Panicked);
        assert_eq!(err.to_string(), "`t.boom@1` panicked: boom at 42");
        // The runtime is still usable.
        assert_eq!(
            rt.call("t.boom@1", json!({}), &ToolContext::new())
                .await
                .unwrap(),
            Value::Null
        );
    }

    #[tokio::test]
    async fn outputs_are_validated() {
        let mut spec = ToolSpec::new("t", "liar", "1", SideEffects::None, "Breaks its schema.");
        spec.output_schema = json!({"type": "integer"});
        let rt = runtime_with(DynamicTool::new(spec, |_c, _i| async move {
            Ok::<_, String>(json!("seven"))
        }));
        let err = rt
            .call("liar", json!({}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidOutput);
        assert!(
            err.to_string()
                .contains("\"seven\" is not of type \"integer\""),
            "{err}"
        );
    }

    #[tokio::test]
    async fn tool_errors_carry_their_message() {
        let spec = ToolSpec::new("t", "fail", "1", SideEffects::None, "Fails.");
        let rt = runtime_with(DynamicTool::new(spec, |_c, _i| async move {
            Err::<Value, _>("disk full")
        }));
        let err = rt
            .call("t.fail", json!({}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::Execution {
                key: "t.fail@1".into(),
                message: "disk full".into()
            }
        );
    }
}

//! Audit: a record of every call, counters, and the call's tracing span.
//!
//! Every call through the door, successful or not, produces one [`AuditEvent`]: the
//! key, the call id, the tool's side effects, what each gate decided, the duration,
//! the outcome, and whether the result was replayed, shaped or flagged. Events go to
//! the runtime's [`AuditSink`] when one is set ([`MemoryAudit`] keeps them in memory);
//! the runtime's [`Counters`] are updated either way and read with
//! [`Counters::snapshot`]. Inputs, outputs and secret values never appear in events:
//! error messages are scrubbed of the caller's secrets first.
//!
//! Each call also runs inside a `tracing` span named `tool.call` whose attributes are
//! the seed's (Graphorin's `graphorin.tool.*`, without the prefix): `tool.call_id`,
//! and once the tool is known `tool.name` (its key), `tool.side_effect_class`,
//! `tool.trust_class`, `tool.sensitivity`, `tool.sandbox.kind` (`in-process` or
//! `process`), `tool.sandbox.forced`, `tool.sandbox.no_network`,
//! `tool.result.max_tokens` (0: shaping off), `tool.result.truncation.strategy` and
//! `tool.result.truncation.applied`, `tool.inbound.sanitization.policy` and
//! `tool.inbound.sanitization.patterns_hit_count`, then `tool.duration_ms` and
//! `call.outcome` (`ok` or the error kind).
//!
//! [`CounterSnapshot::named`] gives the counters under the seed's stable names
//! (`tool.executor.*`, `tool.result.*`, `tool.inbound.sanitization.*`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;

use crate::error::{ToolError, ToolErrorKind};
use crate::sanitize::Finding;
use crate::shape::ShapeReport;
use crate::spec::SideEffects;

/// What a gate decided for one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "decision", content = "detail")]
pub enum GateDecision {
    /// The call did not reach this gate.
    #[default]
    NotReached,
    /// The gate had nothing to check for this tool.
    NotRequired,
    /// The gate let the call through.
    Passed,
    /// An approver approved the call.
    Approved,
    /// An approval remembered for the same key and arguments let the call through.
    RememberedApproval,
    /// The caller asked to skip this gate (schema validation, for trusted callers:
    /// `Runtime::invoke` with `validate = false`).
    Skipped,
    /// The gate stopped the call; why.
    Refused(String),
}

/// How the call's result was obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Execution {
    /// The tool did not run.
    #[default]
    NotRun,
    /// The tool ran.
    Live,
    /// The tool ran and the outcome was recorded to the cassette.
    Recorded,
    /// A recorded outcome stood in for the tool.
    Replayed,
    /// An earlier call with the same idempotency key supplied the outcome.
    Deduplicated,
}

/// The gates of the door, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Gates {
    /// Capability check.
    pub capability: GateDecision,
    /// Input validation.
    pub input: GateDecision,
    /// Approval.
    pub approval: GateDecision,
    /// Output validation.
    pub output: GateDecision,
    /// Sanitization (refused only when it fails closed).
    pub sanitization: GateDecision,
}

/// One call, as the audit trail sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditEvent {
    /// The call's id, unique within the runtime.
    pub call_id: u64,
    /// The tool's registered key.
    pub key: String,
    /// What the tool does to the world; `None` when the key did not resolve.
    pub side_effects: Option<SideEffects>,
    /// What each gate decided.
    pub gates: Gates,
    /// How the result was obtained.
    pub execution: Execution,
    /// Time from entering the door to leaving it.
    pub duration: Duration,
    /// `None` on success; the error's kind and (scrubbed) message otherwise.
    pub error: Option<AuditError>,
    /// What shaping did, when the result was too long.
    pub shaped: Option<ShapeReport>,
    /// Instruction-like text found in the result.
    pub findings: Vec<Finding>,
    /// Whether the memory guard found a region the call changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory_guard_mismatch: bool,
}

/// A failed call's error, in an audit event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditError {
    /// The error's kind.
    pub kind: ToolErrorKind,
    /// The error's message, scrubbed of the caller's secrets.
    pub message: String,
}

impl AuditError {
    pub(crate) fn of(error: &ToolError) -> AuditError {
        AuditError {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

/// What happened to a live tool's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolChangeKind {
    /// The key appeared.
    Added,
    /// The key is gone: its next call gets `NotFound`.
    Removed,
    /// The key stays, with another spec (schemas, description, side effects...).
    Changed,
}

/// One change of the live tools, as audited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolChange {
    /// The tool's key.
    pub key: String,
    /// What happened to it.
    pub change: ToolChangeKind,
    /// Who changed it (an MCP import names itself `mcp:<server>`).
    pub source: String,
}

/// Where audit events go. Called once per call, after the call finished; keep it fast
/// (hand events to a channel to do slow work elsewhere).
pub trait AuditSink: Send + Sync {
    /// Takes one event.
    fn record(&self, event: AuditEvent);

    /// Takes one change of the runtime's live tools (a tool that appeared, went or
    /// changed while the program runs: see [`crate::registry::live`]). Ignored unless
    /// the sink keeps them.
    fn tools_changed(&self, change: &ToolChange) {
        let _ = change;
    }
}

/// An [`AuditSink`] that keeps every event in memory.
#[derive(Debug, Default)]
pub struct MemoryAudit {
    events: Mutex<Vec<AuditEvent>>,
    changes: Mutex<Vec<ToolChange>>,
}

impl MemoryAudit {
    /// An empty trail.
    pub fn new() -> MemoryAudit {
        MemoryAudit::default()
    }

    /// The events so far, in the order calls finished.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The changes of live tools so far, in the order they were made.
    pub fn changes(&self) -> Vec<ToolChange> {
        self.changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, event: AuditEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    fn tools_changed(&self, change: &ToolChange) {
        self.changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(change.clone());
    }
}

impl<T: AuditSink + ?Sized> AuditSink for std::sync::Arc<T> {
    fn record(&self, event: AuditEvent) {
        (**self).record(event);
    }

    fn tools_changed(&self, change: &ToolChange) {
        (**self).tools_changed(change);
    }
}

/// Call counters of a runtime, updated by every call.
#[derive(Default)]
pub struct Counters {
    // Calls are counted as `ok` plus each kind of error: one atomic add per call.
    ok: AtomicU64,
    errors: [AtomicU64; ToolErrorKind::ALL.len()],
    replayed: AtomicU64,
    deduplicated: AtomicU64,
    approvals_asked: AtomicU64,
    approvals_granted: AtomicU64,
    shaped: AtomicU64,
    flagged: AtomicU64,
    memory_guard_mismatches: AtomicU64,
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.snapshot().fmt(f)
    }
}

/// The counters at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CounterSnapshot {
    /// Calls that entered the door and finished.
    pub calls: u64,
    /// Calls that succeeded.
    pub ok: u64,
    /// Failed calls by error kind (kinds that never happened are left out).
    pub errors: BTreeMap<String, u64>,
    /// Calls served from a cassette.
    pub replayed: u64,
    /// Calls answered by an earlier call with the same idempotency key.
    pub deduplicated: u64,
    /// Approvals asked of the approver.
    pub approvals_asked: u64,
    /// Approvals granted (asked or remembered).
    pub approvals_granted: u64,
    /// Results that were shaped.
    pub shaped: u64,
    /// Results with instruction-like text.
    pub flagged: u64,
    /// Calls after which the memory guard found a region changed.
    pub memory_guard_mismatches: u64,
}

impl CounterSnapshot {
    /// The counters under their stable names, as a metrics exporter publishes them:
    /// `tool.executor.calls.total`, `tool.executor.ok.total`,
    /// `tool.executor.errors.total{kind="<Kind>"}` for each kind that happened,
    /// `tool.executor.replayed.total`, `tool.executor.deduplicated.total`,
    /// `tool.executor.approvals.asked.total`, `tool.executor.approvals.granted.total`,
    /// `tool.executor.memory_guard.mismatch.total`, `tool.result.truncated.total` and
    /// `tool.inbound.sanitization.flagged.total`.
    pub fn named(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let mut put = |name: &str, n: u64| {
            out.insert(name.to_owned(), n);
        };
        put("tool.executor.calls.total", self.calls);
        put("tool.executor.ok.total", self.ok);
        put("tool.executor.replayed.total", self.replayed);
        put("tool.executor.deduplicated.total", self.deduplicated);
        put("tool.executor.approvals.asked.total", self.approvals_asked);
        put(
            "tool.executor.approvals.granted.total",
            self.approvals_granted,
        );
        put(
            "tool.executor.memory_guard.mismatch.total",
            self.memory_guard_mismatches,
        );
        put("tool.result.truncated.total", self.shaped);
        put("tool.inbound.sanitization.flagged.total", self.flagged);
        for (kind, n) in &self.errors {
            out.insert(format!("tool.executor.errors.total{{kind=\"{kind}\"}}"), *n);
        }
        out
    }

    /// Failed calls of one kind.
    pub fn errors_of(&self, kind: ToolErrorKind) -> u64 {
        self.errors.get(kind.as_str()).copied().unwrap_or(0)
    }
}

impl Counters {
    /// The counters now.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CounterSnapshot {
            calls: get(&self.ok) + self.errors.iter().map(get).sum::<u64>(),
            ok: get(&self.ok),
            errors: ToolErrorKind::ALL
                .iter()
                .zip(&self.errors)
                .filter(|(_, n)| get(n) > 0)
                .map(|(kind, n)| (kind.as_str().to_owned(), get(n)))
                .collect(),
            replayed: get(&self.replayed),
            deduplicated: get(&self.deduplicated),
            approvals_asked: get(&self.approvals_asked),
            approvals_granted: get(&self.approvals_granted),
            shaped: get(&self.shaped),
            flagged: get(&self.flagged),
            memory_guard_mismatches: get(&self.memory_guard_mismatches),
        }
    }

    pub(crate) fn count(&self, error: Option<ToolErrorKind>, execution: Execution) {
        let add = |a: &AtomicU64| a.fetch_add(1, Ordering::Relaxed);
        match error {
            None => add(&self.ok),
            Some(kind) => add(&self.errors[kind.index()]),
        };
        match execution {
            Execution::Replayed => {
                add(&self.replayed);
            }
            Execution::Deduplicated => {
                add(&self.deduplicated);
            }
            _ => {}
        }
    }

    pub(crate) fn memory_guard_mismatch(&self) {
        self.memory_guard_mismatches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn approval(&self, asked: bool, granted: bool) {
        if asked {
            self.approvals_asked.fetch_add(1, Ordering::Relaxed);
        }
        if granted {
            self.approvals_granted.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn shaped_and_flagged(&self, shaped: bool, flagged: bool) {
        if shaped {
            self.shaped.fetch_add(1, Ordering::Relaxed);
        }
        if flagged {
            self.flagged.fetch_add(1, Ordering::Relaxed);
        }
    }
}

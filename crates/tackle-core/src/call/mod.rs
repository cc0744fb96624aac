//! The call pipeline: the one door every effect goes through.
//!
//! ```text
//! resolve -> capability -> validate input -> deduplicate -> replay router -> approval
//!   -> execute (time limit, cancellation + grace, panic guard, sandbox)
//!   -> validate output -> shape -> sanitize -> record -> audit
//! ```
//!
//! [`Runtime::call`] is that door for tools, and [`Runtime::perform`] the same door for
//! [operations](Operation): model completions (`llm.<provider>.complete@<model>`),
//! broker requests, anything else with an effect. Whoever makes a call (user code, the
//! executor, a chain, an agent loop, a pipeline, the MCP server) makes it here, so no
//! caller can skip a stage. An operation's outcome keeps its own types through the
//! door (see [`effect`]: a model completion gives its reply and its error as they
//! are, and the stages that need JSON make a view when they need it); a tool's is
//! JSON. Each stage is a small unit in its own file, with one job, run in this order:
//!
//! 0. **bounds** (`bounds.rs`): the input is within the runtime's depth and size limits,
//!    measured without recursion before anything walks it ([`crate::bounds`]); the
//!    output is measured the same way as soon as the tool returns;
//! 1. **resolve** (`resolve.rs`): the key names a registered tool (an operation brings
//!    its own);
//! 2. **capability** (`capability.rs`): the caller holds every permission the tool or
//!    operation requires (deny by default). A denied caller learns nothing about its
//!    input's validity, and nothing runs;
//! 3. **validate input** (`validate.rs`): an invalid input never reaches the tool, nor
//!    an approver;
//! 4. **deduplicate** (`dedupe.rs`): inside an executor run, a `write`/`external` call
//!    whose idempotency key was seen before gets the first call's outcome, after
//!    passing its own capability and input stages;
//! 5. **replay router** (`replay.rs`): with a [`Cassette`], a recorded outcome may stand
//!    in for the call (see [`crate::replay`]). It keys the call by its input scrubbed
//!    of secrets, whose canonical form (the call's key) is made once and shared with
//!    approval and the journal;
//! 6. **approval** (`approval.rs`): asked only for calls that will really run, bound to
//!    the validated arguments (see [`crate::approval`]);
//! 7. **execute** (`execute.rs`): under the time limit and the run's cancellation, with a
//!    grace window and a panic guard, with a per-call context (its id, its declared
//!    secrets, its stream), in process or in the call's sandbox ([`crate::sandbox`]).
//!    Around it,
//!    the memory guard ([`MemoryGuard`]) when one is set, and after it the output's
//!    bounds;
//! 8. **validate output** (`validate.rs`): output that breaks the tool's own schema is an
//!    error (replayed outputs are checked too);
//!    then the outcome is scrubbed, once, with the call's one scrubber (`secrets.rs`,
//!    [`crate::secrets`]): the output unless the tool `reveals_secrets`, every text of
//!    an error;
//! 9. **shape** (`shape.rs`): a long result is cut to the tool's `max_result_tokens`
//!    ([`crate::shape`]);
//! 10. **sanitize** (`sanitize.rs`): instruction-like text is handled by the tool's trust
//!     class ([`crate::sanitize`]);
//! 11. **record** (`record.rs`): the outcome the caller gets is recorded to the cassette,
//!     when the router asked for it and the call really ran;
//! 12. **audit** (`audit.rs`): every call, however it ended, leaves an audit event,
//!     counters and a tracing span ([`crate::audit`]).
//!
//! A stage either lets the call go on or ends it with its outcome: denied, invalid,
//! answered by an earlier call, refused by the router, not approved, cancelled. The
//! audit stage runs after all the others, whatever they did. Adding a stage is one
//! new unit and one line in `Runtime::stages_now`.
//!
//! Most calls never wait: their stages all run in the first poll of the caller's
//! future, with the call's state on the stack. Four stages may have to wait (for
//! another call with the same idempotency key, an approver, an async tool or a time
//! limit, a spill file); each first decides without waiting whether it must (its
//! `now`), and a call that must moves, with its state, into a future of its own,
//! where that stage is awaited and the rest follow in the same order.
//!
//! Time limits and the grace window use Tokio's timer: a runtime whose tools set
//! `timeout_ms`, or whose callers set a default timeout or a cancellation token, must
//! be driven by a Tokio runtime with time enabled (`#[tokio::main]` is).

/// A call through the door, in an async fn's body: the call `$call` makes passes
/// [`Runtime::pass_now`], and the rest is awaited when it must wait; then `$then`, with
/// `$c` the call as it ended (`&mut`) and `$o` its outcome.
///
/// A macro, not an async fn: an async fn would keep the call (its argument) in its
/// future. Here the call is made, passed and done with in a block that ends before
/// the await, so it lives only in the poll that runs it, unless it must wait: then it
/// moves to a future of its own, and the caller's future keeps that future's pointer.
macro_rules! pass {
    ($door:expr, $start:expr, $call:expr, |$c:ident, $o:ident| $then:expr) => {
        'pass: {
            let door = $door;
            let waiting = {
                let mut call = $call;
                match door.pass_now(&mut call, $start) {
                    ::std::result::Result::Ok(()) => {
                        let $o = call.take_outcome();
                        let $c = &mut call;
                        break 'pass ($then);
                    }
                    ::std::result::Result::Err((at, start)) => {
                        ::std::boxed::Box::pin(door.pass_waiting(call, at, start))
                    }
                }
            };
            let mut call = waiting.await;
            let $o = call.take_outcome();
            let $c = &mut call;
            $then
        }
    };
}

mod approval;
mod audit;
mod bounds;
mod capability;
pub(crate) mod dedupe;
pub mod effect;
mod execute;
mod guard;
mod input;
mod invoke;
mod operation;
mod panics;
mod record;
mod refuse;
mod replay;
mod resolve;
mod sanitize;
mod secrets;
mod shape;
pub(crate) mod state;
mod validate;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

pub use effect::{Effect, Json};
pub use guard::MemoryGuard;
pub(crate) use input::{Input, ScrubbedInput};
pub use invoke::{InvokeResult, InvokeStatus};
pub use operation::enter;
pub use operation::{InputView, Operation};
pub(crate) use state::RunState;

use crate::approval::Approver;
use crate::audit::{AuditSink, Counters, Execution, GateDecision, Gates};
use crate::bounds::Limits;
use crate::context::ToolContext;
use crate::error::{RegistryError, ToolError};
use crate::registry::{LiveTools, Registry, Tool};
use crate::replay::router::Pending;
use crate::replay::Cassette;
use crate::sandbox::{Sandbox, SandboxPolicy, SandboxResolver};
use crate::sanitize::{Finding, Sanitization};
use crate::secrets::Scrubber;
use crate::shape::{ShapeReport, Shaping};
use crate::spec::ToolSpec;

/// The tools of a program and the door to call them, with the door's settings:
/// approver, shaping, sanitization, limits, sandbox and audit. What every run shares:
/// build it once, keep it in an `Arc`, and make a [`Run`](crate::run::Run) of it for each task (a
/// run owns its cassette, cancellation, events and memory). A plain call, as below,
/// is a run of one call.
///
/// ```
/// use serde_json::json;
/// use tackle::{tool, Runtime, ToolContext, ToolErrorKind};
///
/// /// Adds two integers.
/// #[tool(namespace = "math", side_effects = none)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = Runtime::from_inventory()?;
/// let ctx = ToolContext::new();
/// assert_eq!(rt.call("math.add", json!({"a": 2, "b": 3}), &ctx).await?, json!(5));
/// let err = rt.call("math.add", json!({"a": "two"}), &ctx).await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct Runtime {
    registry: Registry,
    approver: Option<Arc<dyn Approver>>,
    shaping: Shaping,
    sanitization: Sanitization,
    audit: Option<Arc<dyn AuditSink>>,
    counters: Counters,
    /// Numbers the plain calls (those of no run).
    next_call: AtomicU64,
    memory_guard: Option<Arc<dyn MemoryGuard>>,
    limits: Limits,
    sandbox: Option<Arc<dyn Sandbox>>,
    sandbox_resolver: Option<Arc<dyn SandboxResolver>>,
    /// The words that make an argument secret by its name, when not the default
    /// ([`tackle_contract::SECRET_WORDS`]).
    secret_words: Option<Arc<[String]>>,
    /// The tools that come and go while the program runs (see
    /// [`crate::registry::live`]).
    live: Arc<crate::registry::live::Shared>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("registry", &self.registry)
            .field("live_tools", &self.live.snapshot().list_names())
            .field("approver", &self.approver.is_some())
            .field("shaping", &self.shaping)
            .field("sanitization", &self.sanitization)
            .field("audit", &self.audit.is_some())
            .field("counters", &self.counters)
            .field("sandbox", &self.sandbox.is_some())
            .field("sandbox_resolver", &self.sandbox_resolver.is_some())
            .finish()
    }
}

/// Everything known about one finished call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallReport {
    /// The call's number within its run (within the runtime for a plain call), as in
    /// audit and progress events.
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

/// A call's outcome, in its effect's types.
pub(crate) type Outcome<X> = Result<<X as Effect>::Output, <X as Effect>::Error>;

/// What a stage does with the call: let it go on, or end it with this outcome.
pub(crate) type Flow<X = Json> = ControlFlow<Outcome<X>>;

/// What a stage that may have to wait decided without waiting: it did its work, or
/// the call must wait in the stage's async form (see [`Runtime::stages_now`]).
pub(crate) enum Step {
    /// The stage did its work; the call goes on at once.
    Done,
    /// The stage must wait (for another call, an approver, the tool, a spill file),
    /// and has changed nothing yet.
    Wait,
}

/// What a stage that may have to wait does now: end the call with this outcome, or a
/// [`Step`].
pub(crate) type Now<X = Json> = ControlFlow<Outcome<X>, Step>;

/// The stages that may have to wait, in their order: where a call that must wait
/// leaves the stages that run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Waits {
    Dedupe,
    Approval,
    Execute,
    Shape,
}

/// Ends the call with one of the door's errors, as the effect's error.
#[inline]
pub(crate) fn stop<X: Effect>(error: ToolError) -> Flow<X> {
    ControlFlow::Break(Err(X::from_error(error)))
}

/// The code of an operation's call, given by its caller; it gets the call's id.
pub(super) type OperationCode<'a, X> =
    Box<dyn FnOnce(u64) -> Pin<Box<dyn Future<Output = Outcome<X>> + Send + 'a>> + Send + 'a>;

/// One call on its way through the door: what the stages read and write. `X` is its
/// effect: [`Json`] for a tool, an operation's own for an operation.
pub(crate) struct Call<'a, X: Effect = Json> {
    /// Unique within the run; taken when first read (see [`Call::id`]).
    id: Option<u64>,
    next_id: &'a AtomicU64,
    /// The run the call belongs to; `None` for a plain call.
    pub(crate) run: Option<&'a RunState>,
    /// Whether the call is an operation's (its code given by the caller).
    pub(crate) operation: bool,
    /// The key the caller asked for (a tool's key, `namespace.name` or bare name).
    pub(crate) asked: &'a str,
    /// The caller's id for the call (a model's tool-call id), when it gave one.
    pub(crate) given_id: Option<&'a str>,
    /// The values of the call's secret arguments (see [`secrets::arguments`]),
    /// scrubbed from everything that leaves the door; empty for most calls.
    pub(crate) arg_secrets: Vec<String>,
    /// The names of the call's secret arguments: their whole values are replaced in
    /// what a cassette keeps, whatever their type or length.
    pub(crate) arg_secret_fields: Vec<String>,
    /// The call's key: the canonical form of its scrubbed input (see
    /// [`crate::secrets`]), made once by the first stage that needs it (the replay
    /// router, approval) and shared by the others (approval, the journal).
    pub(crate) key: Option<String>,
    /// Whether the outcome has been scrubbed (see [`crate::secrets`]): once only.
    pub(crate) scrubbed: bool,
    /// The input as scrubbed of secrets, once a stage needed it.
    pub(crate) scrubbed_input: ScrubbedInput,
    /// The tool or operation, once resolved.
    pub(crate) tool: Option<&'a Tool>,
    /// Its spec, once resolved (read by most stages).
    pub(crate) spec: Option<&'a ToolSpec>,
    /// The code an operation runs (tools run their registered handler).
    pub(crate) code: Option<OperationCode<'a, X>>,
    pub(crate) input: Input<'a>,
    pub(crate) ctx: &'a ToolContext,
    /// Whether the schema stages check (a trusted caller may skip them).
    pub(crate) validate: bool,
    /// The outcome so far: set by the router (replayed) or by execution, then shaped.
    pub(crate) outcome: Option<Outcome<X>>,
    /// Whether a replayed output was recorded shaped.
    pub(crate) served_shaped: bool,
    /// What the router asked to record once the outcome is final.
    pub(crate) pending: Option<Box<Pending>>,
    /// This call's hold on its idempotency key, settled when the call ends.
    pub(crate) claim: Option<dedupe::Claim>,
    /// Where the tool runs, when not in process (resolved with the key).
    pub(crate) sandbox: Option<Box<SandboxPolicy>>,
    pub(crate) trail: Trail,
    pub(crate) span: tracing::Span,
}

impl<'a, X: Effect> Call<'a, X> {
    /// The input, made now if it was lazy; for an operation whose input has no JSON
    /// view (its input function failed), the error that ends the call, with `gate`
    /// (the gate that reads it, if any) refused: a stage that needs the view
    /// (validation, replay, approval, deduplication) asks here.
    #[inline]
    pub(crate) fn made_input(&mut self, gate: Option<Gate>) -> Result<&Value, ToolError> {
        if !matches!(self.input, Input::Value(_)) {
            self.make_input(gate)?;
        }
        Ok(self.input.peek())
    }

    /// Makes a lazy input; the error when it cannot be made (with `gate` refused).
    #[cold]
    fn make_input(&mut self, gate: Option<Gate>) -> Result<(), ToolError> {
        let why = match std::mem::replace(&mut self.input, Input::Unmade) {
            Input::Lazy(make) => match make() {
                Ok(value) => {
                    self.input = Input::Value(value);
                    return Ok(());
                }
                Err(why) => why,
            },
            Input::Unmade => "it could not be made".to_owned(),
            // Taken (by execution, after every stage that reads it).
            other => {
                self.input = other;
                return Ok(());
            }
        };
        let error = ToolError::Execution {
            key: self.key().to_owned(),
            message: format!("the call's input has no JSON form: {why}"),
        };
        if let Some(gate) = gate {
            self.trail.gates.set(
                gate,
                GateDecision::Refused("the input has no JSON form".to_owned()),
            );
        }
        Err(error)
    }

    /// The call's outcome, taken once the door is done with it ([`Runtime::finish`]
    /// always sets one).
    #[inline(always)]
    pub(crate) fn take_outcome(&mut self) -> Outcome<X> {
        match self.outcome.take() {
            Some(outcome) => outcome,
            None => unreachable!("the door's last stage sets every call's outcome"),
        }
    }

    /// The call's id, unique within the run. Taken from the run's counter when
    /// someone first reads it (an audit sink, a report, a tool that sees its context,
    /// an approver, a spilled result), so a call nobody identifies costs no atomic.
    #[inline]
    pub(crate) fn id(&mut self) -> u64 {
        let next = self.next_id;
        *self
            .id
            .get_or_insert_with(|| next.fetch_add(1, Ordering::Relaxed))
    }

    /// The resolved tool. Stages after `resolve` only run when there is one.
    #[inline]
    pub(crate) fn tool(&self) -> &'a Tool {
        match self.tool {
            Some(tool) => tool,
            None => unreachable!("a stage after resolve ran for a call that did not resolve"),
        }
    }

    /// The resolved tool's spec.
    #[inline]
    pub(crate) fn spec(&self) -> &'a ToolSpec {
        match self.spec {
            Some(spec) => spec,
            None => unreachable!("a stage after resolve ran for a call that did not resolve"),
        }
    }

    /// The cassette of the call's run, if it has one.
    #[inline]
    pub(crate) fn cassette(&self) -> Option<&'a Cassette> {
        self.run.and_then(|run| run.cassette.as_ref())
    }

    /// The key the call answers to: the tool's, or the one asked for.
    #[inline]
    pub(crate) fn key(&self) -> &'a str {
        self.tool.map_or(self.asked, Tool::key)
    }

    /// The call's one scrubber (see [`crate::secrets`]): the caller's secrets, the
    /// secret arguments, the cassette's secrets and token shapes.
    #[inline]
    pub(crate) fn scrubber(&self) -> Scrubber<'_> {
        scrubber(
            self.ctx,
            &self.arg_secrets,
            &self.arg_secret_fields,
            self.cassette(),
        )
    }

    /// The input as scrubbed of secrets (see [`crate::secrets`]), scrubbed now if no
    /// stage did yet: the input itself when scrubbing changes nothing.
    pub(crate) fn scrubbed_input(&mut self) -> &Value {
        if matches!(self.scrubbed_input, ScrubbedInput::NotYet) {
            self.input.get();
            self.scrubbed_input = match self.scrubber().input(self.input.peek()) {
                Cow::Owned(scrubbed) => ScrubbedInput::Scrubbed(scrubbed),
                Cow::Borrowed(_) => ScrubbedInput::Unchanged,
            };
        }
        match &self.scrubbed_input {
            ScrubbedInput::Scrubbed(scrubbed) => scrubbed,
            _ => self.input.peek(),
        }
    }

    /// The call's key (see [`Call::key`](Call#structfield.key)), made now if no stage
    /// made it yet.
    pub(crate) fn call_key(&mut self) -> &str {
        if self.key.is_none() {
            let key = Scrubber::key(self.scrubbed_input());
            self.key = Some(key);
        }
        self.key.as_deref().unwrap_or_default()
    }
}

/// The scrubber of a call whose caller is `ctx`, with these secret arguments (their
/// values and names) and cassette: [`Call::scrubber`], from the call's parts, for a
/// stage that writes another part meanwhile.
#[inline]
pub(crate) fn scrubber<'s>(
    ctx: &'s ToolContext,
    arg_secrets: &'s [String],
    arg_secret_fields: &'s [String],
    cassette: Option<&'s Cassette>,
) -> Scrubber<'s> {
    ctx.scrubber(
        arg_secrets,
        arg_secret_fields,
        cassette.map(Cassette::redactor),
    )
}

/// What the door learns about a call while it passes.
#[derive(Default)]
pub(crate) struct Trail {
    pub(crate) gates: GateTrail,
    pub(crate) execution: Execution,
    pub(crate) shaped: Option<Box<ShapeReport>>,
    pub(crate) findings: Vec<Finding>,
    pub(crate) memory_guard_mismatch: bool,
}

/// The gates of the door, as the audit event names them.
#[derive(Clone, Copy)]
pub(crate) enum Gate {
    Capability,
    Input,
    Approval,
    Output,
    Sanitization,
}

/// What each gate decided, kept small (a call carries it through every stage): a mark
/// per gate, and the reason of the one refusal a call can have.
#[derive(Default)]
pub(crate) struct GateTrail {
    marks: [Mark; 5],
    refusal: Option<String>,
}

#[derive(Clone, Copy, Default)]
enum Mark {
    #[default]
    NotReached,
    NotRequired,
    Passed,
    Approved,
    RememberedApproval,
    Skipped,
    Refused,
}

impl GateTrail {
    /// Notes a gate's decision.
    #[inline(always)]
    pub(crate) fn set(&mut self, gate: Gate, decision: GateDecision) {
        self.marks[gate as usize] = match decision {
            GateDecision::NotReached => Mark::NotReached,
            GateDecision::NotRequired => Mark::NotRequired,
            GateDecision::Passed => Mark::Passed,
            GateDecision::Approved => Mark::Approved,
            GateDecision::RememberedApproval => Mark::RememberedApproval,
            GateDecision::Skipped => Mark::Skipped,
            GateDecision::Refused(reason) => {
                self.refusal = Some(reason);
                Mark::Refused
            }
        };
    }

    /// The decisions, as the audit event reports them.
    pub(crate) fn gates(&self) -> Gates {
        let decision = |gate: Gate| match self.marks[gate as usize] {
            Mark::NotReached => GateDecision::NotReached,
            Mark::NotRequired => GateDecision::NotRequired,
            Mark::Passed => GateDecision::Passed,
            Mark::Approved => GateDecision::Approved,
            Mark::RememberedApproval => GateDecision::RememberedApproval,
            Mark::Skipped => GateDecision::Skipped,
            Mark::Refused => GateDecision::Refused(self.refusal.clone().unwrap_or_default()),
        };
        Gates {
            capability: decision(Gate::Capability),
            input: decision(Gate::Input),
            approval: decision(Gate::Approval),
            output: decision(Gate::Output),
            sanitization: decision(Gate::Sanitization),
        }
    }
}

impl Runtime {
    /// A runtime over every `#[tool]` linked into the program.
    pub fn from_inventory() -> Result<Runtime, RegistryError> {
        Ok(Runtime::new(Registry::from_inventory()?))
    }

    /// A runtime over the `#[tool]`s written in `module` or a module inside it (see
    /// [`Registry::from_inventory_in`]): `Runtime::from_inventory_in(module_path!())`
    /// takes the tools of the module it is written in.
    pub fn from_inventory_in(module: &str) -> Result<Runtime, RegistryError> {
        Ok(Runtime::new(Registry::from_inventory_in(module)?))
    }

    /// A runtime over the given registry.
    pub fn new(registry: Registry) -> Runtime {
        Runtime {
            registry,
            ..Runtime::default()
        }
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

    /// Watches tools' memory regions with `guard`: a snapshot before each live call
    /// of a watched tool, compared after it (see [`MemoryGuard`]).
    pub fn with_memory_guard(mut self, guard: impl MemoryGuard + 'static) -> Runtime {
        self.memory_guard = Some(Arc::new(guard));
        self
    }

    /// Sets how deep and how large inputs and outputs may be (default
    /// [`Limits::default`]: 128 levels, 16 MiB); see [`crate::bounds`]. A `max_depth`
    /// over [`MAX_DEPTH_CAP`](crate::bounds::MAX_DEPTH_CAP) (256) is taken as the cap.
    pub fn with_limits(mut self, mut limits: Limits) -> Runtime {
        limits.max_depth = limits.max_depth.min(crate::bounds::MAX_DEPTH_CAP);
        self.limits = limits;
        self
    }

    /// The limits on inputs and outputs.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs the calls whose sandbox policy asks for a process with `sandbox`, normally
    /// a [`ProcessSandbox`](crate::sandbox::ProcessSandbox) (see [`crate::sandbox`]).
    /// Without one, such calls fail with [`ToolError::Sandbox`].
    pub fn with_sandbox(mut self, sandbox: impl Sandbox + 'static) -> Runtime {
        self.sandbox = Some(Arc::new(sandbox));
        self
    }

    /// Decides every call's sandbox with `resolver` instead of each spec's `sandbox`
    /// field (see [`SandboxResolver`]).
    pub fn with_sandbox_resolver(mut self, resolver: impl SandboxResolver + 'static) -> Runtime {
        self.sandbox_resolver = Some(Arc::new(resolver));
        self
    }

    /// Sets the words that make an argument secret by its name (its last word, or
    /// its last two joined, is one of them: see [`tackle_contract::is_secret_name`]),
    /// in place of the default `api_key`, `password`, `token`, `secret`,
    /// `authorization` and their kin ([`tackle_contract::SECRET_WORDS`]). Arguments
    /// the tool's schema marks `writeOnly` (a `#[secret]` parameter) stay secret
    /// whatever the words. A secret argument's value never reaches a cassette, an
    /// audit event, an error text, a spill file, a stream event or a trace.
    pub fn with_secret_words<W: Into<String>>(
        mut self,
        words: impl IntoIterator<Item = W>,
    ) -> Runtime {
        self.secret_words = Some(words.into_iter().map(Into::into).collect());
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

    /// The tools the runtime was built with (the fixed registry; see
    /// [`Runtime::tools`] for those and the live tools).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A handle to the runtime's live tools: tools that come and go while the program
    /// runs, such as an MCP server's (see [`crate::registry::live`]). Their changes
    /// are audited to the runtime's audit sink as it is when the handle is made.
    pub fn live_tools(&self) -> LiveTools {
        LiveTools::new(Arc::clone(&self.live), self.audit.clone())
    }

    /// Every tool callable now: the fixed registry and, when there are any, the live
    /// tools (a fixed tool wins a key both have). Build what lists tools (an agent's
    /// tool list, a search) from this; it does not follow later changes.
    pub fn tools(&self) -> Cow<'_, Registry> {
        if !self.live.any() {
            return Cow::Borrowed(&self.registry);
        }
        Cow::Owned(self.registry.with_tools_of(&self.live.snapshot()))
    }

    /// The tool a call of `key` runs, found before the call starts when there are
    /// live tools (`None`: the resolve stage finds it, or not). A live tool is kept
    /// in `held` for as long as the call lasts.
    #[inline]
    fn early<'a>(&'a self, key: &str, held: &'a mut Option<Arc<Tool>>) -> Option<&'a Tool> {
        if !self.live.any() {
            return None;
        }
        self.early_live(key, held)
    }

    #[cold]
    fn early_live<'a>(&'a self, key: &str, held: &'a mut Option<Arc<Tool>>) -> Option<&'a Tool> {
        if !self.registry.names_nothing(key) {
            // The fixed registry names it (or names several: the resolve stage says
            // so), and wins.
            return None;
        }
        *held = self.live.find(key);
        held.as_deref()
    }

    /// The spec of the tool `key` names now, fixed or live.
    pub(crate) fn spec_of(&self, key: &str) -> Option<Cow<'_, ToolSpec>> {
        if let Some(tool) = self.registry.get(key) {
            return Some(Cow::Borrowed(tool.spec()));
        }
        if !self.live.any() {
            return None;
        }
        self.live
            .find(key)
            .map(|tool| Cow::Owned(tool.spec().clone()))
    }

    /// This runtime with the tools of `set` added: a value whose `#[tools]` methods are
    /// tools, with their state (see [`crate::registry::toolset`]). A key another tool
    /// already has is an error naming both, and nothing is added.
    pub fn with_toolset(
        mut self,
        set: impl crate::registry::IntoToolset,
    ) -> Result<Runtime, RegistryError> {
        self.registry.add_toolset(set)?;
        Ok(self)
    }

    /// The tools, to register or unregister run-time tools.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The approver calls of no run ask (a run may bring its own).
    pub(crate) fn approver(&self) -> Option<&Arc<dyn Approver>> {
        self.approver.as_ref()
    }

    /// Calls a tool through the door (see the [module docs](self)): resolves `key`
    /// (full key, `namespace.name` or a unique bare name), then every stage. A plain
    /// call: it belongs to no [`Run`](crate::run::Run), so no cassette records it and
    /// it has no cancellation or default time limit
    /// ([`Run::call`](crate::run::Run::call) makes it a call of a run).
    pub async fn call(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        // The body of `call_in`, not a call of it: one future less on the hot path.
        let mut held = None;
        let tool = self.early(key, &mut held);
        let start = self.audit.is_some().then(Instant::now);
        pass!(
            self,
            start,
            self.start::<Json>(None, key, None, tool, None, Input::Value(input), ctx),
            |_call, result| result
        )
    }

    /// Like [`Runtime::call`], with everything the door learned about the call.
    pub async fn call_report(&self, key: &str, input: Value, ctx: &ToolContext) -> CallReport {
        self.call_report_in(None, None, key, input, ctx).await
    }

    /// A tool call of `run` (or a plain call) through the door; `given_id` is the
    /// caller's id for it (a model's tool-call id), when it has one.
    pub(crate) async fn call_in(
        &self,
        run: Option<&RunState>,
        given_id: Option<&str>,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let mut held = None;
        let tool = self.early(key, &mut held);
        // Time is taken only for someone who reads it.
        let start = self.audit.is_some().then(Instant::now);
        pass!(
            self,
            start,
            self.start::<Json>(run, key, given_id, tool, None, Input::Value(input), ctx),
            |_call, result| result
        )
    }

    /// [`Runtime::call_in`], with the report.
    pub(crate) async fn call_report_in(
        &self,
        run: Option<&RunState>,
        given_id: Option<&str>,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> CallReport {
        let start = Instant::now();
        let mut held = None;
        let tool = self.early(key, &mut held);
        pass!(
            self,
            Some(start),
            self.start::<Json>(run, key, given_id, tool, None, Input::Value(input), ctx),
            |call, result| CallReport {
                call_id: call.id(),
                key: call.key().to_owned(),
                result,
                execution: call.trail.execution,
                duration: start.elapsed(),
                shaped: call.trail.shaped.take().map(|s| *s),
                findings: std::mem::take(&mut call.trail.findings),
            }
        )
    }

    /// Performs an [`Operation`] through the door: every stage a tool call passes,
    /// with `run` as the code the execute stage runs. `input` makes the call's input
    /// (what replay keys and records it by): a `Value`, or a `Result` whose error
    /// ends the call as `Execution` ([`InputView`]); it is called only when a stage
    /// needs it, for example when a cassette is attached. A plain call, as [`Runtime::call`];
    /// [`Run::perform`](crate::run::Run::perform) makes it a call of a run.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use tackle::call::Operation;
    /// use tackle::{Runtime, SideEffects, ToolContext, ToolErrorKind, ToolSpec};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut spec = ToolSpec::new("mail", "send", "1", SideEffects::External, "Sends mail.");
    /// spec.permissions = vec!["mail:send".into()];
    /// let send = Operation::new(spec);
    /// let rt = Runtime::default();
    /// let to = "ada@example.com";
    ///
    /// let denied = rt
    ///     .perform(&send, || json!({ "to": to }), &ToolContext::new(), || async {
    ///         Ok(Value::Null)
    ///     })
    ///     .await;
    /// assert_eq!(denied.unwrap_err().kind(), ToolErrorKind::CapabilityDenied);
    ///
    /// let sent = rt
    ///     .perform(&send, || json!({ "to": to }), &ToolContext::new().with_grant("mail:send"), || async {
    ///         Ok(json!("queued"))
    ///     })
    ///     .await;
    /// assert_eq!(sent.unwrap(), json!("queued"));
    /// # }
    /// ```
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
        self.perform_identified(None, operation, input, ctx, move |_| run())
            .await
            .0
    }

    /// [`Runtime::perform`] as a call of `run` (or a plain call), where `code` gets the
    /// call's id (as events and audit events give it), and the id comes back with the
    /// outcome, whether `code` ran or the call was replayed or stopped.
    pub(crate) async fn perform_identified<'a, X, I, V, F, Fut>(
        &'a self,
        run: Option<&'a RunState>,
        operation: &'a Operation<X>,
        input: I,
        ctx: &'a ToolContext,
        code: F,
    ) -> (Outcome<X>, u64)
    where
        X: Effect,
        I: FnOnce() -> V + Send + 'a,
        V: InputView,
        F: FnOnce(u64) -> Fut + Send + 'a,
        Fut: Future<Output = Outcome<X>> + Send + 'a,
    {
        let code: OperationCode<'a, X> = Box::new(move |id| Box::pin(code(id)));
        let start = self.audit.is_some().then(Instant::now);
        pass!(
            self,
            start,
            self.start::<X>(
                run,
                operation.key(),
                None,
                Some(operation.tool()),
                Some(code),
                Input::Lazy(Box::new(move || input().into_view())),
                ctx,
            ),
            |call, result| (result, call.id())
        )
    }

    /// A call, before the first stage: of `tool` when it is known (an operation's, or
    /// a live tool), with `code` for an operation.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn start<'a, X: Effect>(
        &'a self,
        run: Option<&'a RunState>,
        asked: &'a str,
        given_id: Option<&'a str>,
        tool: Option<&'a Tool>,
        code: Option<OperationCode<'a, X>>,
        input: Input<'a>,
        ctx: &'a ToolContext,
    ) -> Call<'a, X> {
        let next_id = match run {
            Some(run) => &run.memory.next_call,
            None => &self.next_call,
        };
        let mut call = Call {
            id: None,
            next_id,
            run,
            operation: code.is_some(),
            asked,
            given_id,
            arg_secrets: Vec::new(),
            arg_secret_fields: Vec::new(),
            key: None,
            scrubbed: false,
            scrubbed_input: ScrubbedInput::NotYet,
            tool,
            spec: None,
            code,
            input,
            ctx,
            validate: true,
            outcome: None,
            served_shaped: false,
            pending: None,
            claim: None,
            sandbox: None,
            trail: Trail::default(),
            span: tracing::Span::none(),
        };
        if self.audit.is_some() {
            // Audited calls are numbered in the order they enter the door.
            call.id();
        }
        call
    }

    /// The door's stages, in order (see the [module docs](self)), as far as they go
    /// without waiting: from the first (`after` is `None`), or from the one after the
    /// stage `after`, which the call waited in. Ends the call (`Break`), passes every
    /// stage (`Continue(None)`), or stops at a stage that must wait
    /// (`Continue(Some(_))`), which [`Runtime::stages_waiting`] awaits before it comes
    /// back here. A stage that ends the call breaks with its outcome; the audit stage
    /// runs after them all, in [`Runtime::finish`], however they ended.
    #[inline]
    fn stages_now<'a, X: Effect>(
        &'a self,
        call: &mut Call<'a, X>,
        after: Option<Waits>,
    ) -> ControlFlow<Outcome<X>, Option<Waits>> {
        if after.is_none() {
            bounds::input(self, call)?;
            resolve::stage(self, call)?;
            secrets::arguments(self, call);
            capability::stage(call)?;
            validate::input(call)?;
            if let Step::Wait = dedupe::now(call)? {
                return ControlFlow::Continue(Some(Waits::Dedupe));
            }
        }
        if after < Some(Waits::Approval) {
            replay::stage(call)?;
            if let Step::Wait = approval::now(call)? {
                return ControlFlow::Continue(Some(Waits::Approval));
            }
        }
        if after < Some(Waits::Execute) {
            // With a memory guard, execution waits: the guard's snapshots are taken
            // around it there.
            if let Step::Wait = execute::now(self, call)? {
                return ControlFlow::Continue(Some(Waits::Execute));
            }
        }
        if after < Some(Waits::Shape) {
            bounds::output(self, call)?;
            validate::output(call)?;
            secrets::outcome(call)?;
            if let Step::Wait = shape::now(call)? {
                return ControlFlow::Continue(Some(Waits::Shape));
            }
        }
        sanitize::stage(self, call)?;
        record::stage(call)?;
        ControlFlow::Continue(None)
    }

    /// The stages of a call that must wait, from the stage `at`: that stage awaited,
    /// then the others as [`Runtime::stages_now`] runs them, awaiting each that must
    /// wait.
    async fn stages_waiting<'a, X: Effect>(
        &'a self,
        call: &mut Call<'a, X>,
        mut at: Waits,
    ) -> Flow<X> {
        loop {
            match at {
                Waits::Dedupe => dedupe::stage(call).await?,
                Waits::Approval => approval::stage(self, call).await?,
                Waits::Execute => {
                    let snapshot = guard::before(self, call);
                    execute::stage(self, call).await?;
                    guard::after(self, call, snapshot);
                }
                Waits::Shape => shape::stage(self, call).await?,
            }
            match self.stages_now(call, Some(at))? {
                Some(next) => at = next,
                None => return ControlFlow::Continue(()),
            }
        }
    }

    /// One call through the door, as far as it goes at once: every stage when none
    /// has to wait, then the audit stage, its outcome left in the call
    /// ([`Call::take_outcome`]). A call that must wait
    /// stops at the stage it waits in, given back with the call's start (see
    /// [`Runtime::pass_waiting`]).
    #[inline]
    fn pass_now<'a, X: Effect>(
        &'a self,
        call: &mut Call<'a, X>,
        start: Option<Instant>,
    ) -> Result<(), (Waits, Option<Instant>)> {
        // Without a subscriber that listens at INFO, the call keeps the disabled span
        // it was made with: no span to make, move and drop.
        if tracing::level_enabled!(tracing::Level::INFO) {
            call.span = audit::span(call);
        }
        // The span's duration needs a clock even without an audit sink.
        let start = start.or_else(|| (!call.span.is_disabled()).then(Instant::now));
        let now = if call.span.is_disabled() {
            self.stages_now(call, None)
        } else {
            let span = call.span.clone();
            let _in_span = span.enter();
            self.stages_now(call, None)
        };
        let flow = match now {
            ControlFlow::Continue(Some(at)) => return Err((at, start)),
            ControlFlow::Continue(None) => ControlFlow::Continue(()),
            ControlFlow::Break(outcome) => ControlFlow::Break(outcome),
        };
        self.finish(call, flow, start);
        Ok(())
    }

    /// The rest of [`Runtime::pass_now`] for a call that must wait, from the stage
    /// `at`, in the call's span: the call, its outcome in it.
    async fn pass_waiting<'a, X: Effect>(
        &'a self,
        mut call: Call<'a, X>,
        at: Waits,
        start: Option<Instant>,
    ) -> Call<'a, X> {
        let flow = if call.span.is_disabled() {
            self.stages_waiting(&mut call, at).await
        } else {
            let span = call.span.clone();
            self.stages_waiting(&mut call, at).instrument(span).await
        };
        self.finish(&mut call, flow, start);
        call
    }

    /// The end of every call, however the stages ended it: an error not scrubbed yet
    /// is scrubbed, an idempotency key's claim settled, and the audit stage run. The
    /// outcome stays in the call (`Call::outcome`, always set from here on), where the
    /// tool's code put it, until the caller takes it ([`Call::take_outcome`]): an
    /// outcome moved through every layer on its way out is copied at each.
    #[inline(always)]
    fn finish<'a, X: Effect>(
        &'a self,
        call: &mut Call<'a, X>,
        flow: Flow<X>,
        start: Option<Instant>,
    ) {
        // An error that ended the call (before the outcome stage, or made by a stage
        // after it) leaves the door scrubbed all the same, once: the outcome stage's
        // own is not scrubbed again.
        let scrubbed = match flow {
            ControlFlow::Break(outcome) => {
                call.outcome = Some(outcome);
                false
            }
            ControlFlow::Continue(()) => {
                if call.outcome.is_none() {
                    call.outcome = Some(X::from_view(Value::Null));
                }
                call.scrubbed
            }
        };
        if !scrubbed && matches!(call.outcome, Some(Err(_))) {
            if let Some(mut result) = call.outcome.take() {
                X::scrub(&mut result, &call.scrubber(), true);
                call.outcome = Some(result);
            }
        }
        dedupe::settle(call);
        audit::stage(self, call, start);
    }
}

#[cfg(test)]
mod tests;

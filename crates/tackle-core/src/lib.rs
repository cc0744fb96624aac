//! The core of tackle: tool specs, schemas, validation, capabilities, the registry,
//! the call door, replay, the executor and the run.
//!
//! Most programs use it through the `tackle` facade, which adds the `#[tool]` macro
//! and the agent crate (`tackle-agent`: models, the ReAct loop, skills, pipelines,
//! durable runs), which builds on this one and never the other way round. The core
//! needs no YAML, HTTP or model client; with its `process` feature off, no process
//! support either. The pieces, in dependency order:
//!
//! * [`spec`]: [`ToolSpec`], the plain-data description of a tool;
//! * [`schema`], [`validate`], [`capability`]: deriving schemas, checking values
//!   against them, and checking a caller's permissions;
//! * [`registry`]: every tool of the program, keyed `namespace.name@version`;
//! * [`replay`]: cassettes that record side-effecting calls once and replay them;
//! * [`approval`], [`shape`], [`sanitize`], [`audit`], [`events`]: the door's gates
//!   and what it reports; [`secrets`]: the one scrubber of a call's input and outcome;
//! * [`call`]: [`Runtime::call`], the one door every call goes through;
//! * [`run`]: [`Run`], what one task owns (its cassette, cancellation, events and
//!   memory) over a runtime every run shares;
//! * [`executor`]: batches of a run's calls, scheduled by side effects, in parallel.

#![warn(missing_docs)]

#[doc(hidden)]
#[allow(missing_docs)]
pub mod abi;
pub mod approval;
pub mod audit;
pub mod bounds;
pub mod call;
pub mod canonical;
pub mod capability;
pub mod content;
pub mod context;
pub mod error;
pub mod events;
pub mod executor;
mod keyhash;
pub mod registry;
pub mod replay;
pub mod run;
pub mod sandbox;
pub mod sanitize;
pub mod schema;
pub mod secrets;
pub mod shape;
pub mod spec;
pub mod validate;
pub mod version;

pub use abi::{Args, ToolFuture};
pub use approval::{
    Approval, ApprovalBinding, ApprovalDecision, ApprovalRequest, ApproveWith, Approver,
};
pub use audit::{AuditEvent, AuditSink, CounterSnapshot, Counters, MemoryAudit};
pub use call::{CallReport, MemoryGuard, Operation, Runtime};
pub use capability::Capabilities;
pub use context::CancellationToken;
pub use context::{MissingResource, Resource, Secret, SecretError, ToolContext};
pub use error::{RegistryError, SchemaSide, ToolError, ToolErrorKind, ToolOrigin};
pub use events::{
    default_event_queue, event_queue, EventReceiver, EventSink, ModelDelta, ToolEvent,
    ToolEventKind, DEFAULT_EVENT_QUEUE_DEPTH,
};
pub use executor::{CallOutcome, ToolCall};
pub use registry::{
    registrations, ApprovalPredicate, CollisionNote, CollisionStrategy, DynamicTool,
    IdempotencyKeyFn, Registry, Tool, ToolHandler, ToolQuery, ToolRegistration,
};
pub use run::Run;
pub use sanitize::{Sanitization, SanitizePolicy};
pub use shape::{FileSpillWriter, Shaping, Spill, SpillWriter, Summarizer};
pub use spec::{
    ExecutionMode, ModelHint, PreferredModel, ReplayPolicy, ResultShaping, SandboxKind,
    Sensitivity, SideEffects, ToolExample, ToolSpec, Trust, DEFAULT_MAX_RESULT_TOKENS,
};
pub use validate::{SchemaValidator, ValidationIssue, ValidationResult};

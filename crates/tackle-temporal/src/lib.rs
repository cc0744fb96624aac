//! tackle's agent runs on Temporal, for when one machine is not enough.
//!
//! A run of a [`ReactSkill`] splits in two. The loop, which only decides (what to ask
//! the model, which calls to make, when the run is done), is a Temporal workflow,
//! [`AgentWorkflow`]: given the same model replies and call outcomes it takes the
//! same steps, so Temporal can replay it on any worker from its history. Every
//! effect, each model call and each tool call, is an activity ([`DoorActivities`])
//! that a worker runs through its own door: capability checks, validation, approval,
//! time limits and audit happen in the worker that holds the registry, exactly as in
//! one process. The door stays the only way a tool runs.
//!
//! - **Scale-out.** One cluster, N workers on a task queue. Any worker runs any step;
//!   a worker that dies mid-run loses only the activity it was running, which
//!   Temporal gives to another worker after its heartbeat times out.
//! - **Effects at least once, writes exactly once.** Temporal retries an activity
//!   whose worker died. A call is run again only when that is safe
//!   ([`ToolSpec::rerun_safe`](tackle_core::ToolSpec::rerun_safe): it changes
//!   nothing, or its input carries an idempotency key). Otherwise its outcome is
//!   unknown: the run waits, [`AgentWorkflow::unknown_outcomes`] lists the call, and an
//!   operator sends [`AgentWorkflow::resolve`] with what became of it.
//! - **Approvals are signals.** A call that needs approval waits in the workflow
//!   (the query [`AgentWorkflow::pending_approvals`]) until the signal
//!   [`AgentWorkflow::decide`] brings a decision bound to its exact key and
//!   arguments; then the door runs it or the model reads the rejection. Each tool
//!   call's activity runs on a run whose approver answers from those decisions
//!   (whatever approver the worker's runtime has).
//! - **Long runs continue as new.** At a step boundary, when Temporal suggests it or
//!   past the run's [`ContinueAsNew`] policy, a run ends its execution and starts the
//!   next from where its loop stands ([`ReactCheckpoint`]), so no history outgrows
//!   what Temporal keeps.
//! - **Cancellation is Temporal's.** Cancelling the workflow stops the run: it ends
//!   cancelled, and the activity in flight is told to stop and waited for; a write
//!   that does not stop in time is recorded as a call of unknown outcome
//!   ([`AgentWorkflow::unknown_outcomes`]), since it may still land.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tackle::agent::model::{ChatResponse, FunctionModel};
//! use tackle::agent::react::ReactSkill;
//! use tackle::{Runtime, ToolContext};
//! use tackle_temporal::{AgentWorker, Agents};
//!
//! # async fn worker() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let model = Arc::new(FunctionModel::new("bot", |_| Ok(ChatResponse::text("done"))));
//! let skill = ReactSkill::new(model, runtime.registry(), &[])?;
//! let agents = Agents::new(&runtime).with("clerk", skill, ToolContext::new().with_grant("llm:*"));
//! AgentWorker::new("http://127.0.0.1:7233", "default", "agents", agents)
//!     .run()
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`ReactCheckpoint`]: tackle_agent::react::ReactCheckpoint
//! [`ReactSkill`]: tackle_agent::react::ReactSkill

mod activities;
mod agents;
mod approvals;
mod calls;
mod connection;
mod limits;
mod replay;
mod worker;
mod workflow;

/// The SDK's client crate, at the version this crate speaks.
pub use temporalio_client as client;
/// The SDK's worker crate, at the version this crate speaks.
pub use temporalio_sdk as sdk;

pub use activities::DoorActivities;
pub use agents::{Agent, Agents};
pub use calls::{DoorCall, DoorOutcome, Extends, ModelCall, RepairCall, SearchCall};
pub use connection::{connect, connect_with, TemporalError};
pub use limits::{ActivityLimits, ContinueAsNew, LimitsError, ToolRetry, MAX_CARRIED_BYTES};
pub use replay::{replay_history, ReplayError};
pub use worker::AgentWorker;
pub use workflow::{AgentInput, AgentWorkflow, Resolve, UnknownCall};

/// The guide `docs/temporal.md`, compiled as doctests: every `rust` block in it is
/// checked by `cargo test`.
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../../docs/temporal.md")]
    struct Temporal;
}

//! The ReAct loop: think, act, observe, until the model answers (seed 004's
//! `ReactSkill`, with its `ReactState`, `ReactStep` and `ToolCallRecord`).
//!
//! A run of the loop ([`Agent::run`](Agent::run)) gives the model the
//! task and the tools; each step the model
//! either answers (a reply without tool calls that the run takes as an answer, see
//! [`TextAnswers`] and [`ReactSkill::with_answer_schema`]: the run is done) or asks for
//! tool calls,
//! which run as one batch of the [`Run`](tackle_core::run::Run) (so in parallel where safe, and every call
//! through the door). Each result comes back to the model as an
//! observation. The run ends, checked in this order, when:
//!
//! 1. the model answered (`done`);
//! 2. the error budget is spent: every failed call (a tool error, invalid arguments, a
//!    denial, an unknown tool) costs one, default 3;
//! 3. `max_steps` steps were taken (default 10).
//!
//! A tool result that holds an image or a file ([`tackle_core::content`]) reaches the model
//! as its text, naming each part, with the images and files as parts of the tool
//! message. When the run has an event sink, each step's model reply
//! streams into it as it is written (see [`crate::model`]).
//!
//! Failures are observations, not errors of the run: the model reads what went wrong
//! and may try again. For invalid arguments there is one optional repair round through
//! a [`RepairHook`] before the failure counts.
//!
//! The skill is a definition: model, tools offered, prompt, limits, answer type. It
//! holds no runtime; each run of it is made on a [`Run`](tackle_core::run::Run), which owns the run's
//! cassette, cancellation and events, so one skill serves many runs at once.
//!
//! Model calls go through the door as calls of the run ([`complete`](crate::model::complete)), as tool
//! calls do: the caller needs the model's permissions (`llm:<provider>` by default),
//! each call is audited, and a recorded run replays offline with a model that is never
//! called, step for step.
//!
//! A run calls only the tools it offers. A tool call names an offered tool by the name
//! the model was given (`bank_balance`), or by that tool's key (`bank.balance@1`),
//! `namespace.name` (`bank.balance`) or bare name, so a scripted model may use
//! either; any other name, even one that resolves in the registry and that the caller
//! may call, is a `NotFound` observation naming the run's closest tools ("did you
//! mean `bank.balance`?"), and nothing runs.

// The module's files, one concept each: `definition.rs` the `Agent` and its `AgentRun`;
// `skill.rs` the loop's settings (`ReactSkill`); `state.rs` a run's state, where it
// stands (`ReactCheckpoint`) and why it stopped (`StopReason`); `error.rs` why a run
// could not go on (`AgentError`); `effects.rs` where a run's model and tool calls go
// (`StepEffects`); `steps.rs` the loop; `calls.rs` a step's tool calls; `answers.rs`
// which replies are answers.
mod answers;
mod calls;
mod definition;
mod effects;
mod error;
mod skill;
mod state;
mod steps;

pub(crate) use answers::json_body;
pub use definition::{Agent, AgentRun, Local};
pub(crate) use effects::LocalEffects;
pub use effects::StepEffects;
pub use error::AgentError;
pub use skill::{model_name, ReactSkill, RepairHook, TextAnswers, SEARCH_TOOL};
pub(crate) use state::Turn;
pub use state::{Answer, ReactCheckpoint, ReactState, ReactStep, StopReason, ToolCallRecord};
pub use steps::StepControl;

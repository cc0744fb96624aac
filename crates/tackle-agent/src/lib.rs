//! The agents of tackle, built on `tackle-core`'s door: everything that decides which
//! calls to make.
//!
//! Most programs use it through the `tackle` facade (its `tackle::agent` module holds
//! [`model`], [`providers`], [`react`], [`skill`] and [`search`]). The core crate
//! knows nothing of this one: every call made here (a model completion, a tool call an
//! agent chose, a pipeline node) goes through the core's door as any other caller's
//! does, and this crate names the core's modules by their paths (`tackle_core::call`).
//! The modules, each one concept, in dependency order:
//!
//! * [`model`]: chat models (the trait, its wire types, the completion through the
//!   door, streaming and test models);
//! * [`providers`]: tool definitions and names in each provider's form, and the
//!   providers' clients (each behind its cargo feature);
//! * [`search`]: tool search (BM25, name match, an optional embedder tier), and
//!   [salience](search::salience), which remembered episodes are worth keeping;
//! * [`pipeline`]: graphs of tool, skill and agent nodes over a shared state;
//! * [`chain`]: fixed sequences of calls, inputs mapped from earlier outputs (seed 001),
//!   built as pipelines;
//! * [`react`]: the ReAct loop ([`ReactSkill`](react::ReactSkill)) and the [`Agent`]
//!   that runs it ([`AgentRun`]);
//! * [`skill`]: named, versioned skills with a typed state, registered at link time;
//! * [`durable`]: agent runs kept in a run store, resumed in another process.

#![warn(missing_docs)]

pub mod chain;
pub mod durable;
pub mod evals;
pub mod model;
pub mod pipeline;
pub mod providers;
pub mod react;
pub mod search;
pub mod skill;

pub use react::{Agent, AgentRun, Local};

// `register_skill!` expands to `$crate::abi::inventory::submit!`.
#[doc(hidden)]
pub use tackle_core::abi;

/// The provider clients this build of the crate has, each behind its cargo feature
/// (the modules of [`providers`]): the facade's `tackle::agent` re-exports whichever
/// are here, so `tackle::agent::openai` is there whenever this crate has its `openai`
/// feature, whoever turned it on. Not an API of its own.
#[doc(hidden)]
pub mod clients {
    #[cfg(any(
        feature = "anthropic",
        feature = "gemini",
        feature = "openai-responses"
    ))]
    pub use crate::providers::genai;
    #[cfg(feature = "ollama")]
    pub use crate::providers::ollama;
    #[cfg(feature = "openai")]
    pub use crate::providers::openai;
}

//! The agents of tackle, built on `tackle-core`'s door: everything that decides which
//! calls to make.
//!
//! Most programs use it through the `tackle` facade. The core crate knows nothing of
//! this one: every call made here (a model completion, a tool call an agent chose, a
//! pipeline node) goes through the core's door as any other caller's does. The
//! pieces, in dependency order:
//!
//! * [`agent`]: chat models (the trait, its wire types, streaming and test models),
//!   the providers' clients, tool search and salience, skills and the ReAct loop;
//! * [`chain`]: fixed sequences of calls, inputs mapped from earlier outputs (seed 001),
//!   built as pipelines;
//! * [`pipeline`]: graphs of tool, skill and agent nodes over a shared state;
//! * [`durable`]: agent runs kept in a run store, resumed in another process.

#![warn(missing_docs)]

pub mod agent;
pub mod chain;
pub mod durable;
pub mod pipeline;

// The core's modules, under the paths this crate's code names them by.
#[doc(hidden)]
pub use tackle_core::abi;
pub(crate) use tackle_core::{
    approval, bounds, call, canonical, content, context, error, events, executor, registry, replay,
    run, schema, secrets, spec, validate, version,
};

//! # tackle: tools for LLM agents, from plain Rust functions
//!
//! Put `#[tool]` on a function. tackle derives the input and output JSON Schemas from
//! its signature and doc comments, registers it at link time, and calls it through one
//! door that checks the caller's capabilities and validates input and output.
//!
//! ```
//! use serde_json::json;
//! use tackle::{tool, Runtime, ToolContext, ToolErrorKind};
//!
//! /// Add two integers.
//! #[tool(namespace = "math", version = "1", side_effects = none)]
//! fn add(
//!     /// left operand
//!     a: i64,
//!     /// right operand
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::from_inventory()?;
//! let ctx = ToolContext::new().with_grant("tools:*");
//! assert_eq!(rt.call("math.add@1", json!({"a": 2, "b": 3}), &ctx).await?, json!(5));
//! assert_eq!(add::KEY, "math.add@1");
//! assert_eq!(add(2, 3), 5); // still a plain function
//!
//! let err = rt.call("math.add@1", json!({"a": "x"}), &ctx).await.unwrap_err();
//! assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
//! assert_eq!(err.validation_errors().len(), 2); // `/a` is not an integer, `b` is missing
//! # Ok(())
//! # }
//! ```
//!
//! ## Where things are
//!
//! * [`macro@tool`]: the attribute; every option and compile error is in
//!   `docs/macro.md`.
//! * [`ToolSpec`]: what a tool is, as portable data.
//! * [`Registry`]: every tool, keyed `namespace.name@version`.
//! * [`Runtime`]: the door, and what every run shares; [`Runtime::call`] is a plain
//!   call.
//! * [`Run`]: one task's calls (single calls, batches, chains, pipelines, agent runs),
//!   with its own cassette, cancellation, events and memory.
//! * [`ToolContext`]: the caller's capabilities, secrets and shared resources.
//! * [`Cassette`] and [`cassette!`]: record side-effecting calls once, replay them
//!   offline in `cargo test` (see `docs/cassettes.md`).
//!
//! Everything else is in the module named for its concept:
//!
//! * [`spec`] (`ReplayPolicy`, `Trust`, `Sensitivity`, ...), [`schema`], [`validate`],
//!   [`capability`], [`registry`] (`DynamicTool`, `ToolQuery`, live tools),
//!   [`context`] (`Resource`, `Secret`), [`error`] (`RegistryError`);
//! * the door's stages and reports: [`call`] (`Operation`), [`approval`], [`shape`],
//!   [`sanitize`], [`sandbox`], [`secrets`], [`audit`], [`events`], [`bounds`];
//! * [`replay`] (`CassetteConfig`, modes, the journal), [`executor`], [`run`];
//! * built on runs (the `tackle-agent` crate): [`agent`] (models, providers, the ReAct
//!   loop, skills, tool search), [`chain`], [`pipeline`], [`durable`];
//! * with features: `mcp`, `sqlite`, `cli`.
//!
//! The seeds' names are these modules' names: `ToolSpec` and its enums in [`spec`],
//! `ToolChain` in [`chain`], `Skill` and `ReactSkill` in [`agent`].
//!
//! ## Tools in other crates
//!
//! Tools register when their crate is linked. If your binary uses nothing else from a
//! crate that only holds tools, add `use my_tools as _;` so the linker keeps it.

#![warn(missing_docs)]

// `#[tool]` names this crate `::tackle` in its expansions; inside the crate itself
// (its doctests and its own `#[tool]`s) that path needs this.
extern crate self as tackle;

// The central types, at the root; everything else stays in its module.
pub use tackle_agent::register_skill;
pub use tackle_agent::skill::SkillState;
pub use tackle_agent::{Agent, AgentRun};
pub use tackle_core::cassette;
pub use tackle_core::replay::Cassette;
pub use tackle_core::{
    Args, Registry, Run, Runtime, SideEffects, ToolCall, ToolContext, ToolError, ToolErrorKind,
    ToolSpec,
};
pub use tackle_macros::tool;
pub use tackle_macros::tools;
pub use tackle_macros::SkillState;

// The modules, each a concept (see `docs/architecture.md`).
pub use tackle_agent::{chain, durable, evals, pipeline};
pub use tackle_core::{
    approval, audit, bounds, call, canonical, capability, content, context, error, events,
    executor, registry, replay, run, sandbox, sanitize, schema, secrets, shape, spec, validate,
    version,
};

pub mod agent {
    //! Agents: the models that decide which tools to call, and finding the tools to offer
    //! (the `tackle-agent` crate's modules, under one name).
    //!
    //! * [`Agent`]: an agent's definition (model, tools, instructions, answer type,
    //!   limits) and [`AgentRun`], the one way to run it: `agent.run(&run, task).await`;
    //! * [`model`]: the [`ChatModel`](model::ChatModel) trait, the models for tests
    //!   ([`ScriptedModel`](model::ScriptedModel), [`FunctionModel`](model::FunctionModel),
    //!   [`TestModel`](model::TestModel)), and [`complete`](model::complete), which calls a
    //!   model through the replay layer;
    //! * `openai` (with the `openai` cargo feature): a [`ChatModel`](model::ChatModel) for
    //!   OpenAI-compatible chat-completions endpoints; `genai` (features `anthropic`,
    //!   `gemini`, `openai-responses`) and `ollama` (feature `ollama`) for the other
    //!   providers' APIs (all of them are modules of [`providers`]);
    //! * [`providers`]: tool definitions in OpenAI, Anthropic, Gemini and MCP form, derived
    //!   from the one canonical schema, with provider-legal names both ways;
    //! * [`react`]: the ReAct loop, [`ReactSkill`](react::ReactSkill): think, act through
    //!   the executor, observe, until the model answers or a limit is reached;
    //! * [`skill`]: named, versioned skills with a typed state, registered at link time;
    //! * [`salience`]: scoring remembered episodes (recency, relevance, importance, use,
    //!   rules) and keeping those worth showing a model;
    //! * [`search`]: a BM25 index over a registry's tools, with a name-match fallback and
    //!   an optional embedder tier.

    pub use tackle_agent::search::salience;
    pub use tackle_agent::{model, providers, react, search, skill};
    pub use tackle_agent::{Agent, AgentRun, Local};
    // The provider clients `tackle-agent` was built with, each behind its feature (the
    // facade's, or another crate's for it): none, in a build with none of them.
    #[allow(unused_imports)]
    pub use tackle_agent::clients::*;
}

/// The decimal type of `cost_estimate`.
pub use rust_decimal::Decimal;

/// The MCP bridge (feature `mcp`): serve a runtime's tools over stdio or HTTP, and
/// import another server's tools through the door. See `docs/mcp.md`.
#[cfg(feature = "mcp")]
pub use tackle_mcp as mcp;

/// The embedded SQLite run store for durable runs (feature `sqlite`). See
/// `docs/durable.md`.
#[cfg(feature = "sqlite")]
pub use tackle_sqlite as sqlite;

/// Your program's tools from a terminal (feature `cli`): `src/bin/tools.rs` is
/// `fn main() { tackle::cli::main() }`. See `docs/cli.md`.
#[cfg(feature = "cli")]
pub use tackle_cli::tools as cli;

/// Paths used by `#[tool]`'s expansion (the runtime's macro ABI). Not a public API.
/// Its name carries the version of the ABI, so a `tackle-macros` of another version
/// (the facade pins it exactly) fails to find it instead of misusing it.
#[doc(hidden)]
pub mod __private_0_1 {
    pub use crate::derives::*;
    pub use tackle_agent::skill::SkillState;
    pub use tackle_core::abi::*;
    pub use tackle_core::registry::{BoundTool, ToolHandler, Toolset};
}

pub mod derives;

/// The guides of `docs/`, rendered here as they read on the repository (and the
/// README): each is a page of this module, and every `rust` block in them is compiled
/// and run as a doctest by `cargo test`.
pub mod guides {
    /// The README: what tackle is, the first tool, the first agent test.
    #[doc = include_str!("../README.md")]
    pub mod readme {}
    /// Agents: models, providers, `Agent`, the ReAct loop, skills, pipelines.
    #[doc = include_str!("../docs/agents.md")]
    pub mod agents {}
    /// The architecture: layers, the door, runs, one call and one agent run walked.
    #[doc = include_str!("../docs/architecture.md")]
    pub mod architecture {}
    /// Cassettes: recording and replaying runs in `cargo test`.
    #[doc = include_str!("../docs/cassettes.md")]
    pub mod cassettes {}
    /// The command line: your tools from a terminal, and `cargo tackle`.
    #[doc = include_str!("../docs/cli.md")]
    pub mod cli {}
    /// Durable runs: a run kept in a store, resumed after a crash (feature `sqlite`
    /// for its examples).
    #[cfg(feature = "sqlite")]
    #[doc = include_str!("../docs/durable.md")]
    pub mod durable {}
    /// Evals: datasets of cases, evaluators, replayed and counterfactual runs, reports.
    #[doc = include_str!("../docs/evals.md")]
    pub mod evals {}
    /// The executor: batches of calls, approvals, limits, cancellation.
    #[doc = include_str!("../docs/executor.md")]
    pub mod executor {}
    /// `#[tool]` and `#[tools]`: every attribute and compile error.
    #[doc = include_str!("../docs/macro.md")]
    pub mod macros {}
    /// The MCP bridge: serving and importing tools (feature `mcp` for its examples).
    #[cfg(feature = "mcp")]
    #[doc = include_str!("../docs/mcp.md")]
    pub mod mcp {}
    /// Every speed figure, its target, baseline and command.
    #[doc = include_str!("../docs/performance.md")]
    pub mod performance {}
    /// The five specifications tackle implements, item by item.
    #[doc = include_str!("../docs/seeds.md")]
    pub mod seeds {}
    /// Who can reach the door, limits, secrets.
    #[doc = include_str!("../docs/security.md")]
    pub mod security {}
}

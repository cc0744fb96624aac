//! Agents: the models that decide which tools to call, and finding the tools to offer.
//!
//! * [`Agent`]: an agent's definition (model, tools, instructions, answer type,
//!   limits) and [`AgentRun`], the one way to run it: `agent.run(&run, task).await`;
//! * [`model`]: the [`ChatModel`](model::ChatModel) trait, the models for tests
//!   ([`ScriptedModel`](model::ScriptedModel), [`FunctionModel`](model::FunctionModel),
//!   [`TestModel`](model::TestModel)), and [`complete`](model::complete), which calls a
//!   model through the replay layer;
//! * `openai` (with the `openai` cargo feature): a [`ChatModel`](model::ChatModel) for
//!   OpenAI-compatible chat-completions endpoints;
//! * [`providers`]: tool definitions in OpenAI, Anthropic, Gemini and MCP form, derived
//!   from the one canonical schema, with provider-legal names both ways;
//! * [`react`]: the ReAct loop, [`ReactSkill`](react::ReactSkill): think, act through
//!   the executor, observe, until the model answers or a limit is reached;
//! * [`skill`]: named, versioned skills with a typed state, registered at link time;
//! * [`salience`]: scoring remembered episodes (recency, relevance, importance, use,
//!   rules) and keeping those worth showing a model;
//! * [`search`]: a BM25 index over a registry's tools, with a name-match fallback and
//!   an optional embedder tier.

mod definition;
#[cfg(any(
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
pub mod genai;
pub mod model;
#[cfg(feature = "ollama")]
pub mod ollama;
#[cfg(feature = "openai")]
pub mod openai;
pub mod providers;
pub mod react;
#[cfg(feature = "openai-responses")]
mod responses;
pub mod salience;
pub mod search;
pub mod skill;
#[cfg(any(
    feature = "openai",
    feature = "ollama",
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
mod wire;

pub use definition::{Agent, AgentRun, Local};

//! Why a skill could not be built, registered or run ([`SkillError`]).

use serde_json::Value;
use tackle_core::error::ToolError;

use crate::pipeline::PipelineError;
use crate::react::{AgentError, ReactState};

/// Why a skill could not be built, registered or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The name breaks the rules of a tool's name.
    #[error(
        "skill name `{0}` is not allowed: use ASCII letters, digits, `_` and `-`, as a tool's name"
    )]
    BadName(String),
    /// The version is not semver.
    #[error("skill `{name}` has version `{version}`, which is not semver (such as 1.2.0)")]
    BadVersion {
        /// The skill's name.
        name: String,
        /// The version given.
        version: String,
    },
    /// The description is empty.
    #[error("skill `{0}` has no description")]
    NoDescription(String),
    /// The state type's schema is not an object with properties.
    #[error("skill `{site_id}`: the state type `{state}` is not a struct with named fields")]
    StateNotObject {
        /// The skill.
        site_id: String,
        /// The state type.
        state: &'static str,
    },
    /// An example is not objects, or its expected output does not fit the state.
    #[error("skill `{site_id}`: example {index}: {problems}")]
    BadExample {
        /// The skill.
        site_id: String,
        /// The example, from 0.
        index: usize,
        /// What is wrong.
        problems: String,
    },
    /// The subgraph could not be read, or does not fit its tools.
    #[error("skill `{site_id}`: subgraph: {error}")]
    Subgraph {
        /// The skill.
        site_id: String,
        /// What is wrong.
        error: Box<PipelineError>,
    },
    /// The subgraph writes a key the state does not declare.
    #[error(
        "skill `{site_id}`: node `{node}` writes `{key}`, which is not a declared output key ({declared:?})"
    )]
    UndeclaredWrite {
        /// The skill.
        site_id: String,
        /// The node.
        node: String,
        /// The key it writes.
        key: String,
        /// The keys the state declares.
        declared: Vec<String>,
    },
    /// A subgraph calls a tool the skill does not list in its tools.
    #[error(
        "skill `{site_id}`: node `{node}` calls `{tool}`, which is not among the skill's tools"
    )]
    ToolNotListed {
        /// The skill.
        site_id: String,
        /// The node.
        node: String,
        /// The tool.
        tool: String,
    },
    /// A portable spec's declared output keys are not the state type's.
    #[error("skill `{site_id}`: the spec declares {spec:?}, the state type `{state}` {actual:?}")]
    SpecMismatch {
        /// The skill.
        site_id: String,
        /// The keys the spec declares.
        spec: Vec<String>,
        /// The state type.
        state: &'static str,
        /// Its keys.
        actual: Vec<String>,
    },
    /// The skill has no subgraph to run as a workflow.
    #[error("skill `{0}` has no subgraph to run")]
    NoSubgraph(String),
    /// A workflow run's subgraph failed; the error keeps the state.
    #[error("skill `{site_id}`: {error}")]
    Workflow {
        /// The skill.
        site_id: String,
        /// What failed, with the state at that point.
        error: Box<PipelineError>,
    },
    /// A workflow ended in a state that does not fit the state type.
    #[error("skill `{site_id}`: the final state is not a valid state: {problems}")]
    BadState {
        /// The skill.
        site_id: String,
        /// What is wrong.
        problems: String,
        /// The subgraph's final state.
        state: Box<Value>,
    },
    /// A tool the skill uses is not registered.
    #[error("skill `{site_id}` uses `{tool}`, which is not registered")]
    UnknownTool {
        /// The skill.
        site_id: String,
        /// The key given.
        tool: String,
    },
    /// Two skills have the same site id.
    #[error("skill `{site_id}` is registered twice: at {first} and at {second}")]
    Duplicate {
        /// The site id.
        site_id: String,
        /// Where the first registration is.
        first: String,
        /// Where the second is.
        second: String,
    },
    /// No skill of that name or site id.
    #[error("no skill `{0}` is registered")]
    NotFound(String),
    /// The caller lacks capabilities the skill requires.
    #[error("skill `{site_id}` requires {missing:?}, which the caller is not granted")]
    Denied {
        /// The skill.
        site_id: String,
        /// The capabilities missing.
        missing: Vec<String>,
    },
    /// The door refused to let the caller into the skill for another reason than its
    /// grants (its limits, its audit).
    #[error("skill `{site_id}` could not be entered: {error}")]
    Entry {
        /// The skill.
        site_id: String,
        /// Why.
        error: ToolError,
    },
    /// The skill was run with another state type than it declares.
    #[error("skill `{site_id}` declares state `{declared}`, not `{asked}`")]
    WrongState {
        /// The skill.
        site_id: String,
        /// Its state type.
        declared: &'static str,
        /// The type asked for.
        asked: &'static str,
    },
    /// The agent loop could not go on.
    #[error("skill `{site_id}`: {error}")]
    Agent {
        /// The skill.
        site_id: String,
        /// What failed.
        error: AgentError,
    },
    /// The run ended without an answer.
    #[error("skill `{site_id}` ended without an answer: {reason}")]
    NoAnswer {
        /// The skill.
        site_id: String,
        /// Why the loop stopped.
        reason: String,
        /// The run, for inspection.
        run: Box<ReactState>,
    },
    /// The answer is not the state.
    #[error("skill `{site_id}`: the answer is not a valid state: {problems}")]
    BadAnswer {
        /// The skill.
        site_id: String,
        /// What is wrong.
        problems: String,
        /// The run, for inspection.
        run: Box<ReactState>,
    },
}

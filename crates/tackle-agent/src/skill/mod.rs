//! Skills: named, versioned agent capabilities with a declared output.
//!
//! A [`Skill`] packages what an agent needs to do one kind of job: the tools it may
//! use (registry keys, checked when the skill is registered), a system prompt, the
//! capabilities the caller must hold ([`with_requires`](SkillBuilder::with_requires), checked
//! by the door as the operation `skill.<name>@<version>` before the skill runs, so a
//! denied caller costs no model call and leaves an audit event), examples, and a
//! **state type** whose fields are the skill's declared output keys.
//!
//! The state type derives `tackle::SkillState` (which implements [`SkillState`]),
//! besides `Serialize`, `Deserialize` and `JsonSchema`.
//! The derive rejects, at compile time, fields whose serialized order is not
//! deterministic: `HashMap` and `HashSet`, also nested (`Vec<HashSet<_>>`). Use
//! `BTreeMap` / `BTreeSet`. The check reads the field types as written, so a type
//! alias hides a hash map from it; that is the "where possible" of the rule.
//!
//! Identity: the name follows the rules of a tool's name (ASCII letters, digits, `_`
//! and `-`; `trip-planner`), the version is
//! semver (`1.2.0`), and the [`site_id`](Skill::site_id) is `name@version`. The
//! [`kind`](SkillKind) (`agent`, `workflow`, `utility`) is catalogue metadata.
//!
//! A skill may have a **subgraph**: a [pipeline](crate::pipeline) document, inline or
//! by path. A skill with a subgraph whose kind is not `agent` runs it
//! deterministically ([`Skill::run_workflow`]), with no model: the inputs are the
//! initial state, and the state's declared keys are read back as the typed state.
//!
//! **The write whitelist.** A skill writes only its declared output keys
//! ([`declared_output_keys`](Skill::declared_output_keys)). A subgraph node whose output
//! key is not declared is refused when the skill is built
//! ([`SkillError::UndeclaredWrite`]); a subgraph tool that the skill does not list in
//! `tools` is refused when it is registered; an agent's answer with an undeclared key is
//! refused at the boundary ([`SkillError::BadAnswer`], naming the key). Nothing is
//! silently dropped.
//!
//! The portable form of a skill is a [`SkillSpec`] (plain serde, its state as a JSON
//! Schema): [`Skill::to_spec`], [`Skill::from_spec`].
//!
//! Skills register at link time like tools, with
//! [`register_skill!`](crate::register_skill) naming a function that builds the skill,
//! and [`Skills::from_inventory`] collects them against a registry. A run
//! ([`Skill::run`]) is a [ReAct](crate::react) loop over the skill's tools whose
//! final answer must be a JSON object of the state type (and nothing else); it is validated against the
//! state's schema and returned as the typed state. With `bubble_events` (the default)
//! the progress and stream events of the skill's tool calls reach the caller's event
//! sink; without it they are kept inside the skill.

// The module's files: this file a `Skill` and what it holds; `build.rs` building and
// checking one (`SkillBuilder`); `running.rs` running it, as an agent or a workflow;
// `registration.rs` registering skills at link time (`Skills`); `error.rs`
// `SkillError`; `spec.rs` the portable form (`SkillSpec`).
mod build;
mod error;
mod registration;
mod running;
mod spec;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::context::ToolContext;
use tackle_core::registry::Registry;
use tackle_core::validate::SchemaValidator;

use crate::pipeline::Pipeline;
use crate::react::{ReactSkill, ReactState};

pub use build::SkillBuilder;
pub use error::SkillError;
pub use registration::{SkillRegistration, Skills};
pub use spec::{Example, SkillSpec, Subgraph};

/// A type that can be a skill's state: its fields are the skill's output keys.
///
/// Implement it with `#[derive(SkillState)]`, which refuses hash-ordered fields.
pub trait SkillState: Serialize + DeserializeOwned + JsonSchema + Send + 'static {}

/// What a skill is, for catalogues and routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillKind {
    /// Decides its own steps with a model.
    Agent,
    /// Follows a fixed sequence of steps.
    Workflow,
    /// A small helper other skills use.
    Utility,
}

// Written here, not in `react/`: the loop knows nothing of skills.
impl ReactSkill {
    /// A ReAct skill's kind: always `agent`.
    pub const KIND: SkillKind = SkillKind::Agent;
}

/// A skill. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Skill {
    name: String,
    version: String,
    kind: SkillKind,
    description: String,
    tools: Vec<String>,
    system_prompt: String,
    requires: Vec<String>,
    examples: Vec<Example>,
    subgraph: Option<Subgraph>,
    graph: Option<Pipeline>,
    bubble_events: bool,
    state_type: &'static str,
    state_schema: Value,
    output_keys: Vec<String>,
}

impl Skill {
    /// The skill as portable data.
    pub fn to_spec(&self) -> SkillSpec {
        SkillSpec {
            name: self.name.clone(),
            version: self.version.clone(),
            kind: self.kind,
            description: self.description.clone(),
            tools: self.tools.clone(),
            subgraph: self.subgraph.clone(),
            system_prompt: (!self.system_prompt.is_empty()).then(|| self.system_prompt.clone()),
            state_schema: self.state_schema.clone(),
            requires: self.requires.clone(),
            examples: self.examples.clone(),
            bubble_events: self.bubble_events,
            declared_output_keys: self.output_keys.clone(),
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version, semver.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `name@version`.
    pub fn site_id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// The kind.
    pub fn kind(&self) -> SkillKind {
        self.kind
    }

    /// What the skill does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tools it may use, as given.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Capabilities the caller must hold.
    pub fn requires(&self) -> &[String] {
        &self.requires
    }

    /// The examples.
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// The subgraph, as given (a path or a document).
    pub fn subgraph(&self) -> Option<&Subgraph> {
        self.subgraph.as_ref()
    }

    /// The subgraph's document, read.
    pub fn graph(&self) -> Option<&Pipeline> {
        self.graph.as_ref()
    }

    /// Whether tool events reach the caller's sink.
    pub fn bubble_events(&self) -> bool {
        self.bubble_events
    }

    /// The declared output keys: the state type's fields, as serialized. The skill may
    /// write these keys and no other.
    pub fn declared_output_keys(&self) -> &[String] {
        &self.output_keys
    }

    /// The same as [`declared_output_keys`](Self::declared_output_keys).
    pub fn output_keys(&self) -> &[String] {
        &self.output_keys
    }

    /// The state type's JSON Schema.
    pub fn state_schema(&self) -> &Value {
        &self.state_schema
    }

    /// The state type's Rust name.
    pub fn state_type(&self) -> &'static str {
        self.state_type
    }

    /// The capabilities in [`requires`](Self::requires) that `ctx` is not granted.
    pub fn missing_capabilities(&self, ctx: &ToolContext) -> Vec<String> {
        self.requires
            .iter()
            .filter(|c| !ctx.capabilities().allows(c))
            .cloned()
            .collect()
    }

    /// Checks that every tool resolves in `registry`.
    pub fn check_tools(&self, registry: &Registry) -> Result<(), SkillError> {
        for tool in &self.tools {
            if registry.resolve(tool).is_err() {
                return Err(SkillError::UnknownTool {
                    site_id: self.site_id(),
                    tool: tool.clone(),
                });
            }
        }
        if let Some(graph) = &self.graph {
            graph
                .check(registry)
                .map_err(|error| SkillError::Subgraph {
                    site_id: self.site_id(),
                    error: Box::new(error),
                })?;
            let listed: Vec<&str> = self
                .tools
                .iter()
                .filter_map(|t| registry.resolve(t).ok().map(|tool| tool.key()))
                .collect();
            for node in &graph.nodes {
                let Some(tool) = &node.tool else { continue };
                let key = registry.resolve(tool).map(|t| t.key()).unwrap_or(tool);
                if !listed.contains(&key) {
                    return Err(SkillError::ToolNotListed {
                        site_id: self.site_id(),
                        node: node.id.clone(),
                        tool: tool.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

fn check_against(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = SchemaValidator::compile(schema)?;
    validator.validate(value).into_result().map_err(|issues| {
        issues
            .iter()
            .map(|i| format!("{}: {}", i.pointer, i.message))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// A finished skill run: the typed state and the ReAct run that produced it.
#[derive(Debug)]
pub struct SkillRun<S> {
    /// The state the skill ended in.
    pub state: S,
    /// The trajectory and tool calls (empty for a workflow run).
    pub run: ReactState,
    /// A workflow run's final subgraph state (inputs and every node's output).
    pub graph_state: Option<Value>,
}

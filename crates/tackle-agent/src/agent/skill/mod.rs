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
//! ([`Skill::run`]) is a [ReAct](crate::agent::react) loop over the skill's tools whose
//! final answer must be a JSON object of the state type (and nothing else); it is validated against the
//! state's schema and returned as the typed state. With `bubble_events` (the default)
//! the progress and stream events of the skill's tool calls reach the caller's event
//! sink; without it they are kept inside the skill.

mod spec;

use std::any::type_name;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::model::ChatModel;
use crate::agent::react::{AgentError, ReactSkill, ReactState, StepControl};
use crate::call::Runtime;
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::pipeline::{Pipeline, PipelineError};
use crate::registry::Registry;
use crate::run::Run;
use crate::schema::output_schema;
use crate::validate::SchemaValidator;

pub use crate::abi::SkillState;
pub use spec::{Example, SkillSpec, Subgraph};

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

// Written here, not in `react.rs`: the loop knows nothing of skills.
impl ReactSkill {
    /// A ReAct skill's kind: always `agent`.
    pub const KIND: SkillKind = SkillKind::Agent;
}

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

/// Builds a [`Skill`]; start with [`Skill::builder`].
#[derive(Debug)]
#[must_use]
pub struct SkillBuilder {
    skill: Skill,
    raw_examples: Vec<(Value, Option<Value>)>,
}

impl Skill {
    /// Starts a skill named `name` (the rules of a tool's name) at `version` (semver) whose state is `S`.
    pub fn builder<S: SkillState>(
        name: impl Into<String>,
        version: impl Into<String>,
        kind: SkillKind,
    ) -> SkillBuilder {
        let state_schema = output_schema::<S>();
        let output_keys = state_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        SkillBuilder {
            skill: Skill {
                name: name.into(),
                version: version.into(),
                kind,
                description: String::new(),
                tools: Vec::new(),
                system_prompt: String::new(),
                requires: Vec::new(),
                examples: Vec::new(),
                subgraph: None,
                graph: None,
                bubble_events: true,
                state_type: type_name::<S>(),
                state_schema,
                output_keys,
            },
            raw_examples: Vec::new(),
        }
    }

    /// Binds a portable spec to the state type `S`: the spec's declared output keys
    /// (when it lists them) must be `S`'s, and everything is checked as
    /// [`SkillBuilder::build`] checks it (a subgraph path is read).
    pub fn from_spec<S: SkillState>(spec: SkillSpec) -> Result<Skill, SkillError> {
        let mut builder = Skill::builder::<S>(spec.name, spec.version, spec.kind)
            .with_description(spec.description)
            .with_bubble_events(spec.bubble_events);
        builder.skill.tools = spec.tools;
        builder.skill.requires = spec.requires;
        builder.skill.system_prompt = spec.system_prompt.unwrap_or_default();
        builder.skill.subgraph = spec.subgraph;
        builder.skill.examples = spec.examples;
        let mut declared = spec.declared_output_keys;
        declared.sort();
        let mut actual = builder.skill.output_keys.clone();
        actual.sort();
        if !declared.is_empty() && declared != actual {
            return Err(SkillError::SpecMismatch {
                site_id: builder.skill.site_id(),
                spec: declared,
                state: builder.skill.state_type,
                actual,
            });
        }
        builder.build()
    }

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

    /// Runs the subgraph over `inputs` (a JSON object, the initial state) with no
    /// model, after checking `requires` against `ctx`; the state's declared keys are
    /// read back as `S`. See the [module docs](self).
    pub async fn run_workflow<S: SkillState>(
        &self,
        run: &Run,
        inputs: Value,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, SkillError> {
        let site_id = self.site_id();
        self.check_state::<S>()?;
        let Some(graph) = &self.graph else {
            return Err(SkillError::NoSubgraph(site_id));
        };
        self.enter(run.runtime(), ctx).await?;
        let run = &self.events_scope(run);
        let input_keys: Vec<String> = inputs
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let end = graph
            .run(run, inputs, ctx)
            .await
            .map_err(|error| SkillError::Workflow {
                site_id: site_id.clone(),
                error: Box::new(error),
            })?;
        let Value::Object(end) = end else {
            return Err(SkillError::NoSubgraph(site_id));
        };
        // The boundary: every key the run added is declared (the build checked the
        // nodes; this holds whatever a node did).
        if let Some(key) = end
            .keys()
            .find(|k| !input_keys.contains(k) && !self.output_keys.contains(k))
        {
            return Err(SkillError::UndeclaredWrite {
                site_id,
                node: "(subgraph)".into(),
                key: key.clone(),
                declared: self.output_keys.clone(),
            });
        }
        let out: serde_json::Map<String, Value> = end
            .iter()
            .filter(|(k, _)| self.output_keys.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let out = Value::Object(out);
        let bad = |problems: String| SkillError::BadState {
            site_id: site_id.clone(),
            problems,
            state: Box::new(Value::Object(end.clone())),
        };
        check_against(&self.state_schema, &out).map_err(bad)?;
        let state = serde_json::from_value(out).map_err(|e| bad(e.to_string()))?;
        Ok(SkillRun {
            state,
            run: ReactState::default(),
            graph_state: Some(Value::Object(end)),
        })
    }

    /// The run the skill's calls are made on: the caller's, or the same run without
    /// its event sink when the skill keeps its events to itself (`bubble_events =
    /// false`).
    fn events_scope(&self, run: &Run) -> Run {
        if self.bubble_events {
            run.clone()
        } else {
            run.without_events()
        }
    }

    fn check_state<S: SkillState>(&self) -> Result<(), SkillError> {
        if type_name::<S>() != self.state_type {
            return Err(SkillError::WrongState {
                site_id: self.site_id(),
                declared: self.state_type,
                asked: type_name::<S>(),
            });
        }
        Ok(())
    }

    /// Runs the skill on `task`: checks `requires` against `ctx` first, then runs the
    /// ReAct loop with `model` over the skill's tools, and reads the final answer as
    /// the state `S` (which must be the skill's state type). A skill with a subgraph
    /// whose kind is not `agent` runs the subgraph instead, with the state
    /// `{"task": task}` and no model call ([`run_workflow`](Self::run_workflow)).
    pub async fn run<S: SkillState>(
        &self,
        model: Arc<dyn ChatModel>,
        run: &Run,
        task: &str,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, SkillError> {
        let site_id = self.site_id();
        self.check_state::<S>()?;
        if self.graph.is_some() && self.kind != SkillKind::Agent {
            let inputs = serde_json::json!({ "task": task });
            return self.run_workflow(run, inputs, ctx).await;
        }
        self.enter(run.runtime(), ctx).await?;
        let react = self.react(model, &run.runtime().tools())?;
        let run = &self.events_scope(run);
        let run = react
            .run_observed(run, task, ctx, &mut |_| StepControl::Continue)
            .await
            .map_err(|error| SkillError::Agent {
                site_id: site_id.clone(),
                error,
            })?;
        self.answer(run)
    }

    /// Whether the skill runs as an agent (a ReAct loop), not as a workflow subgraph.
    pub(crate) fn runs_as_agent(&self) -> bool {
        self.graph.is_none() || self.kind == SkillKind::Agent
    }

    /// Enters the skill: the door checks that `ctx` holds what the skill requires,
    /// as the operation `skill.<name>@<version>` (audited, let in or refused; see
    /// `crate::call`), before anything of the skill runs.
    pub(crate) async fn enter(
        &self,
        runtime: &Runtime,
        ctx: &ToolContext,
    ) -> Result<(), SkillError> {
        let site_id = self.site_id();
        let what = format!("the skill `{site_id}`");
        let gate = ("skill", self.name.as_str(), self.version.as_str());
        match crate::call::enter(runtime, gate, &self.requires, &what, ctx).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == ToolErrorKind::CapabilityDenied => {
                Err(SkillError::Denied {
                    missing: self.missing_capabilities(ctx),
                    site_id,
                })
            }
            Err(error) => Err(SkillError::Entry { site_id, error }),
        }
    }

    /// The ReAct loop this skill runs for an agent: its tools and prompt, with
    /// `model` over tools of `registry` (call [`enter`](Self::enter) first).
    pub(crate) fn react(
        &self,
        model: Arc<dyn ChatModel>,
        registry: &Registry,
    ) -> Result<ReactSkill, SkillError> {
        let site_id = self.site_id();
        let keys: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        // The state's schema is the answer's: sent natively to models that enforce
        // it, and a reply that does not fit is a repair turn, not the run's end.
        ReactSkill::new(model, registry, &keys)
            .and_then(|react| react.with_answer_schema(self.state_schema.clone()))
            .map(|react| react.with_system_prompt(self.prompt()))
            .map_err(|error| SkillError::Agent { site_id, error })
    }

    /// Reads a finished ReAct run's answer as the state `S`.
    pub(crate) fn answer<S: SkillState>(&self, run: ReactState) -> Result<SkillRun<S>, SkillError> {
        self.check_state::<S>()?;
        let site_id = self.site_id();
        let Some(answer) = run.final_answer.as_deref() else {
            let reason = run
                .stop_reason
                .as_ref()
                .map_or_else(|| "no answer".to_owned(), ToString::to_string);
            return Err(SkillError::NoAnswer {
                site_id,
                reason,
                run: Box::new(run),
            });
        };
        match self.read_state::<S>(answer) {
            Ok(state) => Ok(SkillRun {
                state,
                run,
                graph_state: None,
            }),
            Err(problems) => Err(SkillError::BadAnswer {
                site_id,
                problems,
                run: Box::new(run),
            }),
        }
    }

    /// The system prompt with the answer's required form appended.
    fn prompt(&self) -> String {
        format!(
            "{}\n\nWhen you are done, answer with only a JSON object with the keys {} matching this schema: {}",
            self.system_prompt,
            self.output_keys.join(", "),
            self.state_schema
        )
    }

    /// Reads an answer as the state: a JSON object, possibly in a ```json fence.
    fn read_state<S: SkillState>(&self, answer: &str) -> Result<S, String> {
        let text = answer.trim();
        let text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|t| t.strip_suffix("```"))
            .unwrap_or(text)
            .trim();
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        if let Some(key) = value
            .as_object()
            .and_then(|m| m.keys().find(|k| !self.output_keys.contains(k)))
        {
            return Err(format!(
                "it writes `{key}`, which is not a declared output key ({})",
                self.output_keys.join(", ")
            ));
        }
        check_against(&self.state_schema, &value)?;
        serde_json::from_value(value).map_err(|e| e.to_string())
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

impl SkillBuilder {
    /// What the skill does (required).
    pub fn with_description(mut self, text: impl Into<String>) -> SkillBuilder {
        self.skill.description = text.into();
        self
    }

    /// The tools it may use: registry keys (`ns.name@v`, `ns.name` or a bare name).
    pub fn with_tools(mut self, keys: &[&str]) -> SkillBuilder {
        self.skill.tools = keys.iter().map(|k| (*k).to_owned()).collect();
        self
    }

    /// The system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> SkillBuilder {
        self.skill.system_prompt = prompt.into();
        self
    }

    /// Capabilities (grant patterns are matched against them) the caller must hold.
    pub fn with_requires(mut self, capabilities: &[&str]) -> SkillBuilder {
        self.skill.requires = capabilities.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Adds an example: `inputs` (a JSON object; an agent skill's task is
    /// `inputs["task"]`) and the output expected, if stated (a state of the skill).
    /// Both are checked by [`build`](Self::build).
    pub fn with_example(mut self, inputs: Value, expected_output: Option<Value>) -> SkillBuilder {
        self.raw_examples.push((inputs, expected_output));
        self
    }

    /// The subgraph: a pipeline document run by [`Skill::run_workflow`].
    pub fn with_subgraph(mut self, graph: Pipeline) -> SkillBuilder {
        self.skill.subgraph = Some(Subgraph::Inline(Box::new(graph)));
        self
    }

    /// The subgraph, from a YAML pipeline document at `path` (read by
    /// [`build`](Self::build)).
    pub fn with_subgraph_file(mut self, path: impl Into<String>) -> SkillBuilder {
        self.skill.subgraph = Some(Subgraph::Path(path.into()));
        self
    }

    /// Whether tool events reach the caller's event sink (default true).
    pub fn with_bubble_events(mut self, bubble: bool) -> SkillBuilder {
        self.skill.bubble_events = bubble;
        self
    }

    /// Checks the name, version, description, state and examples, reads the subgraph
    /// and checks that its nodes write only declared output keys.
    pub fn build(self) -> Result<Skill, SkillError> {
        let mut skill = self.skill;
        if !tackle_contract::is_name(&skill.name) {
            return Err(SkillError::BadName(skill.name));
        }
        if !is_semver(&skill.version) {
            return Err(SkillError::BadVersion {
                name: skill.name,
                version: skill.version,
            });
        }
        if skill.description.trim().is_empty() {
            return Err(SkillError::NoDescription(skill.name));
        }
        if skill.output_keys.is_empty() {
            return Err(SkillError::StateNotObject {
                site_id: skill.site_id(),
                state: skill.state_type,
            });
        }
        let first_raw = skill.examples.len();
        for (i, (inputs, expected)) in self.raw_examples.into_iter().enumerate() {
            let bad = |problems: String| SkillError::BadExample {
                site_id: skill.site_id(),
                index: first_raw + i,
                problems,
            };
            let Value::Object(inputs) = inputs else {
                return Err(bad("the inputs are not a JSON object".into()));
            };
            let expected_output = match expected {
                None => None,
                Some(Value::Object(out)) => Some(out),
                Some(_) => return Err(bad("the expected output is not a JSON object".into())),
            };
            skill.examples.push(Example {
                inputs,
                expected_output,
            });
        }
        for (index, example) in skill.examples.iter().enumerate() {
            if let Some(out) = &example.expected_output {
                check_against(&skill.state_schema, &Value::Object(out.clone())).map_err(
                    |problems| SkillError::BadExample {
                        site_id: skill.site_id(),
                        index,
                        problems: format!("the expected output does not fit the state: {problems}"),
                    },
                )?;
            }
        }
        skill.graph = match &skill.subgraph {
            None => None,
            Some(Subgraph::Inline(graph)) => Some((**graph).clone()),
            Some(Subgraph::Path(path)) => {
                let read = std::fs::read_to_string(path).map_err(|e| PipelineError::Parse {
                    line: 0,
                    column: 0,
                    message: format!("cannot read `{path}`: {e}"),
                });
                let graph = read.and_then(|text| Pipeline::from_yaml(&text));
                Some(graph.map_err(|error| SkillError::Subgraph {
                    site_id: skill.site_id(),
                    error: Box::new(error),
                })?)
            }
        };
        if let Some(graph) = &skill.graph {
            for node in &graph.nodes {
                let key = node.output_key();
                if !skill.output_keys.iter().any(|k| k == key) {
                    return Err(SkillError::UndeclaredWrite {
                        site_id: skill.site_id(),
                        node: node.id.clone(),
                        key: key.to_owned(),
                        declared: skill.output_keys.clone(),
                    });
                }
            }
        }
        Ok(skill)
    }
}

/// `MAJOR.MINOR.PATCH`, optionally `-pre.release` and `+build`, numbers without
/// leading zeros.
fn is_semver(version: &str) -> bool {
    let (main, build) = match version.split_once('+') {
        Some((m, b)) => (m, Some(b)),
        None => (version, None),
    };
    let (core, pre) = match main.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (main, None),
    };
    let number = |p: &str| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p == "0" || !p.starts_with('0'))
    };
    let ident =
        |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && pre.is_none_or(|p| {
            p.split('.')
                .all(|id| ident(id) && (!id.bytes().all(|b| b.is_ascii_digit()) || number(id)))
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// A skill registered at link time by [`register_skill!`](crate::register_skill).
#[derive(Debug)]
pub struct SkillRegistration {
    build: fn() -> Result<Skill, SkillError>,
    file: &'static str,
    line: u32,
}

impl SkillRegistration {
    /// A registration of the skill `build` makes, defined at `file:line`.
    pub const fn new(
        build: fn() -> Result<Skill, SkillError>,
        file: &'static str,
        line: u32,
    ) -> SkillRegistration {
        SkillRegistration { build, file, line }
    }
}

inventory::collect!(SkillRegistration);

/// Registers a skill at link time: `register_skill!(my_skill)`, where
/// `fn my_skill() -> Result<Skill, SkillError>` builds it. [`Skills::from_inventory`]
/// collects every registration.
#[macro_export]
macro_rules! register_skill {
    ($build:path) => {
        $crate::abi::inventory::submit! {
            $crate::agent::skill::SkillRegistration::new($build, ::core::file!(), ::core::line!())
        }
    };
}

/// The skills of a program, by site id. See the [module docs](self).
#[derive(Debug, Default)]
pub struct Skills {
    skills: BTreeMap<String, (Skill, String)>,
}

impl Skills {
    /// No skills.
    pub fn new() -> Skills {
        Skills::default()
    }

    /// Every skill registered with [`register_skill!`](crate::register_skill), each
    /// built and its tools checked against `registry`; the first failure is returned.
    pub fn from_inventory(registry: &Registry) -> Result<Skills, SkillError> {
        let mut skills = Skills::new();
        let mut registrations: Vec<&SkillRegistration> =
            inventory::iter::<SkillRegistration>.into_iter().collect();
        registrations.sort_by_key(|r| (r.file, r.line));
        for registration in registrations {
            let skill = (registration.build)()?;
            let place = format!("{}:{}", registration.file, registration.line);
            skills.insert(skill, place, registry)?;
        }
        Ok(skills)
    }

    /// Adds a skill after checking its tools against `registry`.
    pub fn register(&mut self, skill: Skill, registry: &Registry) -> Result<(), SkillError> {
        self.insert(skill, "run time".to_owned(), registry)
    }

    fn insert(
        &mut self,
        skill: Skill,
        place: String,
        registry: &Registry,
    ) -> Result<(), SkillError> {
        skill.check_tools(registry)?;
        let site_id = skill.site_id();
        if let Some((_, first)) = self.skills.get(&site_id) {
            return Err(SkillError::Duplicate {
                site_id,
                first: first.clone(),
                second: place,
            });
        }
        self.skills.insert(site_id, (skill, place));
        Ok(())
    }

    /// The skill with this site id, or the highest version of this name.
    pub fn get(&self, id: &str) -> Result<&Skill, SkillError> {
        if let Some((skill, _)) = self.skills.get(id) {
            return Ok(skill);
        }
        self.skills
            .values()
            .map(|(s, _)| s)
            .filter(|s| s.name == id)
            .max_by(|a, b| crate::version::compare_versions(&a.version, &b.version))
            .ok_or_else(|| SkillError::NotFound(id.to_owned()))
    }

    /// Every skill, by site id.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values().map(|(s, _)| s)
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver() {
        for good in [
            "0.0.0",
            "1.2.3",
            "10.20.30",
            "1.0.0-rc.1",
            "1.0.0-alpha-x.0",
            "1.0.0+build.7",
            "1.0.0-beta+exp.sha.5114f85",
        ] {
            assert!(is_semver(good), "{good}");
        }
        for bad in [
            "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+", "v1.2.3",
            "1.2.x", "",
        ] {
            assert!(!is_semver(bad), "{bad}");
        }
    }
}

//! Pipeline documents: a YAML graph of nodes run in order over a shared state.
//!
//! A pipeline is written, reviewed and versioned as data. It has a name (`name`, or
//! `graph` as the seed documents write it) and a list of `nodes`; each node reads from
//! the *state* (a JSON object that starts as the caller's input) and writes its result
//! back under its output key (`out`, by default the node's id).
//!
//! ```yaml
//! graph: city-brief
//! state_schema:                     # the state's fields, for readers and tooling
//!   request: dict
//!   agent_id: str
//!   intent: str
//! tools:                            # the tools the graph uses
//!   - id: atlas.lookup
//!     version: "1"
//! nodes:
//!   - id: lookup
//!     kind: tool
//!     tool: atlas.lookup@1          # a registry key (or ns.name, or a unique bare name)
//!     inputs:
//!       city: "{{state.request.city}}"
//!     out: city
//!   - id: ask
//!     kind: broker                  # asks another agent through the broker
//!     agent_id_field: agent_id      # default agent_id
//!     intent_field: intent          # default intent
//!     output_field: reply           # default: the node's id
//!     requires: ["agents:travel"]   # capabilities this node needs, besides its own
//! ```
//!
//! * **`kind: tool`** calls `tool` through the door (capabilities, validation, replay,
//!   ...) with `inputs` rendered from the state. A string that is exactly one
//!   `{{state.path}}` becomes the value at that path, whatever its type; templates
//!   inside a longer string are rendered as text (strings as they are, other values as
//!   JSON). Paths use dot notation with array indices (`items[0].sku`), as in
//!   [`chain`](crate::chain).
//! * **`kind: broker`** is a [`BrokerNode`]: it asks the [`Broker`] in the caller's
//!   context for the intent on behalf of the agent id (both strings in the state) and
//!   writes the response plus a `__stargraph_provenance__` envelope. It passes the door
//!   as `nautilus.broker_request@1`, requiring `tools:broker_request`; see
//!   [`broker`] for the details, and [`broker_request_tool`] for the same
//!   request as a tool.
//!
//! Every node may list `requires`; the caller must hold each before the node runs:
//! the door checks them as the operation `pipeline.<pipeline>.<node>@1` (names brought
//! to key form), which leaves an audit event, let in or refused.
//! `state_schema` and `tools` are kept as written ([`Pipeline::state_schema`],
//! [`Pipeline::tools`]); the nodes check what they read when they run.
//! Parsing is strict: an unknown field, a wrong type or bad YAML is an error with its
//! line and column, and so is a document nested deeper than
//! [`nesting::MAX_NESTING`] (64) levels or larger than 4 MiB, found by a linear scan
//! before the parser runs; a field that does not belong to the node's kind, a missing one,
//! or a duplicate id names the node. [`Pipeline::check`] finds unknown tools before
//! anything runs, and a run that fails returns the state as it was, with the node.

pub mod broker;
pub mod nesting;
pub(crate) mod steps;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use tackle_core::context::ToolContext;
use tackle_core::error::ToolError;
use tackle_core::registry::Registry;
use tackle_core::run::Run;

use broker::Failure;
pub use broker::{
    broker_request, broker_request_spec, broker_request_tool, Broker, BrokerFuture, BrokerHandle,
    BrokerNode, BrokerNodeConfig, BrokerResponse, BROKER_CAPABILITY, PROVENANCE_KEY,
};
pub use steps::lookup;
use steps::{run_step, StepError, StepInput, StepOutput};

/// What kind of node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Calls a tool.
    Tool,
    /// Asks another agent through the broker.
    Broker,
}

/// One node, as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// A name unique in the pipeline.
    pub id: String,
    /// Tool or broker.
    pub kind: NodeKind,
    /// (tool) The tool's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// (tool) The input, with `{{state.path}}` templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Map<String, Value>>,
    /// (broker) The state field holding the agent id (`agent` is read too): a field
    /// or a path such as `state.route.agent_id`; default `agent_id`.
    #[serde(default, alias = "agent", skip_serializing_if = "Option::is_none")]
    pub agent_id_field: Option<String>,
    /// (broker) The state field holding the intent (`intent` is read too); default
    /// `intent`.
    #[serde(default, alias = "intent", skip_serializing_if = "Option::is_none")]
    pub intent_field: Option<String>,
    /// (tool) The whole state so far is the tool's input, in place of `inputs` (as
    /// a tool chain's step without a mapping).
    #[serde(default, skip_serializing_if = "is_false")]
    pub input_state: bool,
    /// (tool) The output, which must be an object, is merged into the state, in place
    /// of going under `out` (as a tool chain's step with an empty `output_key`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub merge: bool,
    /// Capabilities the caller must hold for this node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Where the result goes in the state (`output_field` is read too); default the
    /// node's id.
    #[serde(
        default,
        alias = "output_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub out: Option<String>,
}

impl Node {
    /// The state key the node writes: `out`, or the node's id.
    pub fn output_key(&self) -> &str {
        self.out.as_deref().unwrap_or(&self.id)
    }

    /// A broker node's configuration, with the defaults filled in; `None` for a tool
    /// node.
    pub fn broker(&self) -> Option<BrokerNode> {
        (self.kind == NodeKind::Broker).then(|| {
            BrokerNode::new(BrokerNodeConfig {
                agent_id_field: self.agent_id_field.clone().unwrap_or("agent_id".into()),
                intent_field: self.intent_field.clone().unwrap_or("intent".into()),
                output_field: self.output_key().to_owned(),
            })
            .with_id(self.id.clone())
        })
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A tool a graph declares it uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRef {
    /// The tool's id (`name` or `namespace.name`).
    pub id: String,
    /// Its version, as written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// A pipeline document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The pipeline's name (`graph` is read too); may be left out.
    #[serde(default, alias = "graph", skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A description, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The state's fields and their types, as written (`agent_id: str`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub state_schema: Map<String, Value>,
    /// The tools the graph declares it uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolRef>,
    /// The nodes, run in order.
    pub nodes: Vec<Node>,
}

/// Why a pipeline could not be read, checked or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// The document is not valid YAML, or does not fit the format (unknown field,
    /// wrong type, missing field).
    #[error("pipeline document, line {line} column {column}: {message}")]
    Parse {
        /// From 1 (0 when unknown).
        line: usize,
        /// From 1 (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A node is not right for its kind.
    #[error("node `{node}`: {message}")]
    BadNode {
        /// The node's id.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// Two nodes share an id.
    #[error("two nodes are called `{0}`")]
    DuplicateNode(String),
    /// A tool node names a tool that is not registered.
    #[error("node `{node}`: tool `{tool}` is not registered")]
    UnknownTool {
        /// The node's id.
        node: String,
        /// The key given.
        tool: String,
    },
    /// A node that merges its output got one that is not an object.
    #[error("node `{node}`: the output is not an object, so it cannot be merged")]
    NotAnObject {
        /// The node's id.
        node: String,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// The state lacks a field a node reads.
    #[error("node `{node}`: the state has no `{path}`")]
    MissingState {
        /// The node's id.
        node: String,
        /// The path.
        path: String,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// A field a broker node reads is not a string.
    #[error("node `{node}`: state field `{field}` is {found}, not a string")]
    NotAString {
        /// The node's id.
        node: String,
        /// The field.
        field: String,
        /// What it is.
        found: &'static str,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// A broker node ran with no broker in the context.
    #[error(
        "node `{node}`: no broker is registered: add `BrokerHandle` to the context with `with_resource`"
    )]
    MissingBroker {
        /// The node's id.
        node: String,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// The caller lacks capabilities a node needs.
    #[error("node `{node}` requires {missing:?}, which the caller is not granted")]
    Denied {
        /// The node's id.
        node: String,
        /// The capabilities missing.
        missing: Vec<String>,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// A tool call failed.
    #[error("node `{node}`: {error}")]
    Tool {
        /// The node's id.
        node: String,
        /// The call's error.
        error: ToolError,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// The broker failed.
    #[error("node `{node}`: the broker failed: {message}")]
    Broker {
        /// The node's id.
        node: String,
        /// What failed.
        message: String,
        /// The state when it happened.
        state: Box<Value>,
    },
    /// The initial state is deeper or larger than the runtime's limits
    /// ([`tackle_core::bounds`]).
    #[error("a pipeline's state must be within the runtime's limits: {0}")]
    StateOutOfBounds(String),
    /// The initial state is not a JSON object.
    #[error("a pipeline's state is a JSON object, not {0}")]
    StateNotObject(String),
}

impl PipelineError {
    /// The state at the failure, for errors raised while running.
    pub fn state(&self) -> Option<&Value> {
        match self {
            PipelineError::MissingState { state, .. }
            | PipelineError::NotAnObject { state, .. }
            | PipelineError::NotAString { state, .. }
            | PipelineError::MissingBroker { state, .. }
            | PipelineError::Denied { state, .. }
            | PipelineError::Tool { state, .. }
            | PipelineError::Broker { state, .. } => Some(state),
            _ => None,
        }
    }
}

impl Pipeline {
    /// Reads a pipeline document (see the [module docs](self)) and checks each node's
    /// fields against its kind.
    ///
    /// ```
    /// use serde_json::json;
    /// use std::sync::Arc;
    /// use tackle::pipeline::Pipeline;
    /// use tackle::{tool, Run, Runtime, ToolContext};
    ///
    /// /// Greets someone.
    /// #[tool(namespace = "text", side_effects = none)]
    /// fn hello(name: String) -> String {
    ///     format!("hello, {name}")
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let doc = Pipeline::from_yaml(
    ///     "name: greet\nnodes:\n  - id: hi\n    kind: tool\n    tool: text.hello\n    inputs:\n      name: \"{{state.who}}\"\n    out: greeting\n",
    /// )?;
    /// let state = doc
    ///     .run(&Run::new(&Arc::new(Runtime::from_inventory()?)), json!({"who": "Ada"}), &ToolContext::new())
    ///     .await?;
    /// assert_eq!(state["greeting"], "hello, Ada");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_yaml(text: &str) -> Result<Pipeline, PipelineError> {
        nesting::check(text)?;
        let pipeline: Pipeline = yaml_serde::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
            let text = e.to_string();
            // The location is in the error's fields; say it once.
            let suffix = format!(" at line {line} column {column}");
            let message = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
            PipelineError::Parse {
                line,
                column,
                message,
            }
        })?;
        pipeline.check_shape()?;
        Ok(pipeline)
    }

    fn check_shape(&self) -> Result<(), PipelineError> {
        let mut ids = BTreeSet::new();
        for node in &self.nodes {
            if !ids.insert(node.id.as_str()) {
                return Err(PipelineError::DuplicateNode(node.id.clone()));
            }
            let bad = |message: String| PipelineError::BadNode {
                node: node.id.clone(),
                message,
            };
            if node.output_key().is_empty() {
                return Err(bad("`out` is empty".into()));
            }
            match node.kind {
                NodeKind::Tool => {
                    if node.tool.is_none() {
                        return Err(bad("a tool node needs `tool`".into()));
                    }
                    for (name, field) in [
                        ("agent_id_field", &node.agent_id_field),
                        ("intent_field", &node.intent_field),
                    ] {
                        if field.is_some() {
                            return Err(bad(format!("`{name}` belongs to broker nodes")));
                        }
                    }
                    if let Some(inputs) = &node.inputs {
                        check_templates(&Value::Object(inputs.clone())).map_err(bad)?;
                    }
                    if node.input_state && node.inputs.is_some() {
                        return Err(bad("`input_state` and `inputs` exclude each other".into()));
                    }
                    if node.merge && node.out.is_some() {
                        return Err(bad("`merge` and `out` exclude each other".into()));
                    }
                }
                NodeKind::Broker => {
                    if node.tool.is_some()
                        || node.inputs.is_some()
                        || node.input_state
                        || node.merge
                    {
                        return Err(bad(
                            "`tool`, `inputs`, `input_state` and `merge` belong to tool nodes"
                                .into(),
                        ));
                    }
                    for path in [&node.agent_id_field, &node.intent_field]
                        .into_iter()
                        .flatten()
                    {
                        if field_path(path).is_empty() {
                            return Err(bad(format!(
                                "`{path}` is not a state field such as intent or route.intent"
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks that every tool node's tool is registered.
    pub fn check(&self, registry: &Registry) -> Result<(), PipelineError> {
        for node in &self.nodes {
            if let Some(tool) = &node.tool {
                if registry.resolve(tool).is_err() {
                    return Err(PipelineError::UnknownTool {
                        node: node.id.clone(),
                        tool: tool.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Runs the nodes in order over `state` (a JSON object) with the caller's
    /// context; the final state, or the first failure with the state at that point.
    pub async fn run(
        &self,
        run: &Run,
        state: Value,
        ctx: &ToolContext,
    ) -> Result<Value, PipelineError> {
        self.check(&run.runtime().tools())?;
        // The state is cloned into errors and walked by templates: measure it first.
        if let Err(exceeded) = run.runtime().limits().check(&state) {
            tackle_core::bounds::dispose(state);
            return Err(PipelineError::StateOutOfBounds(exceeded.to_string()));
        }
        let Value::Object(mut state) = state else {
            return Err(PipelineError::StateNotObject(kind_of(&state).into()));
        };
        for node in &self.nodes {
            let snapshot = |s: &Map<String, Value>| Box::new(Value::Object(s.clone()));
            // The node's gate is the door's: `pipeline.<pipeline>.<node>@1`, audited.
            let what = format!("the node `{}` of the pipeline `{}`", node.id, self.name);
            let namespace = format!("pipeline.{}", tackle_contract::name_from(&self.name));
            let name = tackle_contract::name_from(&node.id);
            let gate = (namespace.as_str(), name.as_str(), "1");
            if let Err(error) =
                tackle_core::call::enter(run.runtime(), gate, &node.requires, &what, ctx).await
            {
                if error.kind() != tackle_core::error::ToolErrorKind::CapabilityDenied {
                    return Err(PipelineError::Tool {
                        node: node.id.clone(),
                        error,
                        state: snapshot(&state),
                    });
                }
                let missing: Vec<String> = node
                    .requires
                    .iter()
                    .filter(|c| !ctx.capabilities().allows(c))
                    .cloned()
                    .collect();
                return Err(PipelineError::Denied {
                    node: node.id.clone(),
                    missing,
                    state: snapshot(&state),
                });
            }
            let result = match node.broker() {
                None => self.run_tool(node, run, &mut state, ctx).await,
                Some(broker) => broker.patch(run, &state, ctx).await.map(|patch| {
                    let (key, value) = patch.into_iter().next().unwrap_or_default();
                    state.insert(key, value);
                }),
            };
            if let Err(failure) = result {
                return Err(failure.into_error(&node.id, snapshot(&state)));
            }
        }
        Ok(Value::Object(state))
    }

    /// Runs a tool node: the one step of [`steps`], with the node's templates and
    /// output key.
    async fn run_tool(
        &self,
        node: &Node,
        run: &Run,
        state: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<(), Failure> {
        let empty = Map::new();
        let input = if node.input_state {
            StepInput::State
        } else {
            StepInput::Template(node.inputs.as_ref().unwrap_or(&empty))
        };
        let output = if node.merge {
            StepOutput::Merge
        } else {
            StepOutput::Key(node.output_key())
        };
        let tool = node.tool.as_deref().unwrap_or_default();
        match run_step(run, tool, input, output, state, ctx).await {
            (_, Ok(())) => Ok(()),
            (_, Err(StepError::Missing(path))) => Err(Failure::Missing(path)),
            (_, Err(StepError::NotAnObject)) => Err(Failure::NotAnObject),
            (called, Err(StepError::Call)) => match called.map(|c| c.result) {
                Some(Err(error)) => Err(Failure::Tool(error)),
                _ => Ok(()),
            },
        }
    }
}

/// A state field as a node names it, `state.` optional: `state.a.b` and `a.b` ->
/// `a.b`.
pub(crate) fn field_path(field: &str) -> &str {
    let field = field.trim();
    field.strip_prefix("state.").unwrap_or(field)
}

/// `state.a.b` -> `a.b`.
pub(crate) fn state_path(path: &str) -> Option<&str> {
    path.trim().strip_prefix("state.").filter(|p| !p.is_empty())
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The templates of a string: `(start, end, path)` for each `{{state.path}}`, or what
/// is wrong.
fn templates(text: &str) -> Result<Vec<(usize, usize, &str)>, String> {
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(open) = text[rest..].find("{{") {
        let start = rest + open;
        let close = text[start..]
            .find("}}")
            .ok_or_else(|| format!("`{text}` opens a template with {{{{ and never closes it"))?;
        let end = start + close + 2;
        let inner = &text[start + 2..end - 2];
        let path = state_path(inner).ok_or_else(|| {
            format!("`{{{{{inner}}}}}` is not a state template such as {{{{state.city}}}}")
        })?;
        found.push((start, end, path));
        rest = end;
    }
    Ok(found)
}

fn check_templates(value: &Value) -> Result<(), String> {
    match value {
        Value::String(s) => templates(s).map(|_| ()),
        Value::Array(items) => items.iter().try_for_each(check_templates),
        Value::Object(map) => map.values().try_for_each(check_templates),
        _ => Ok(()),
    }
}

/// Renders `{{state.path}}` templates in `value` from `state`.
/// An object of templates, rendered over `state`; the path that was missing, if any.
pub(crate) fn render_object(
    template: &Map<String, Value>,
    state: &Map<String, Value>,
) -> Result<Value, String> {
    let mut out = Map::with_capacity(template.len());
    for (key, value) in template {
        match render(value, state) {
            Ok(value) => {
                out.insert(key.clone(), value);
            }
            Err(Failure::Missing(path)) => return Err(path),
            Err(_) => return Err(key.clone()),
        }
    }
    Ok(Value::Object(out))
}

fn render(value: &Value, state: &Map<String, Value>) -> Result<Value, Failure> {
    match value {
        Value::String(text) => {
            let found = templates(text).map_err(Failure::Missing)?;
            if let [(0, end, path)] = found.as_slice() {
                if *end == text.len() {
                    return lookup(state, path)
                        .cloned()
                        .ok_or_else(|| Failure::Missing((*path).to_owned()));
                }
            }
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for (start, end, path) in found {
                out.push_str(&text[last..start]);
                match lookup(state, path).ok_or_else(|| Failure::Missing(path.to_owned()))? {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                last = end;
            }
            out.push_str(&text[last..]);
            Ok(Value::String(out))
        }
        Value::Array(items) => items
            .iter()
            .map(|v| render(v, state))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), render(v, state)?)))
            .collect::<Result<Map<_, _>, _>>()
            .map(Value::Object),
        other => Ok(other.clone()),
    }
}

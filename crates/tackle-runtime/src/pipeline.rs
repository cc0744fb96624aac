//! Pipeline documents: a YAML list of nodes run in order over a shared state.
//!
//! A pipeline is written, reviewed and versioned as data. It has a `name` and a list
//! of `nodes`; each node reads from the *state* (a JSON object that starts as the
//! caller's input) and writes its result back under its `out` key.
//!
//! ```yaml
//! name: city-brief
//! nodes:
//!   - id: lookup
//!     kind: tool
//!     tool: atlas.lookup@1          # a registry key (or ns.name, or a unique bare name)
//!     inputs:
//!       city: "{{state.request.city}}"
//!     out: city
//!   - id: ask
//!     kind: broker                  # hands an intent to another agent
//!     agent: state.route.agent_id   # where the agent id is in the state (default agent_id)
//!     intent: state.route.intent    # where the intent is (default intent)
//!     requires: ["agents:travel"]   # capabilities this node needs, besides its own
//!     out: reply
//! ```
//!
//! * **`kind: tool`** calls `tool` through the door (capabilities, validation, replay,
//!   ...) with `inputs` rendered from the state. A string that is exactly one
//!   `{{state.path}}` becomes the value at that path, whatever its type; templates
//!   inside a longer string are rendered as text (strings as they are, other values as
//!   JSON). Paths use dot notation with array indices (`items[0].sku`), as in
//!   [`chain`](crate::chain).
//! * **`kind: broker`** sends the intent to the agent named by the state through the
//!   [`Broker`] the caller put in the context
//!   ([`ToolContext::with_resource`]`(`[`BrokerHandle`]`)`), and writes the reply in a
//!   provenance envelope: `{"response": ..., "provenance": {"origin": "tool", "source":
//!   ..., "external_id": ...}}`. The send is an operation of the door,
//!   [`broker_send`] (`broker.send@1`): it requires the capability `broker:send`
//!   (deny by default), is audited like any call, and with a cassette on the runtime
//!   it is recorded once and replayed offline without calling the broker (must-stub,
//!   in order, like model calls).
//!
//! Every node may list `requires`; the caller must hold each before the node runs.
//! Parsing is strict: an unknown field, a wrong type or bad YAML is an error with its
//! line and column; a field that does not belong to the node's kind, a missing one,
//! or a duplicate id names the node. [`Pipeline::check`] finds unknown tools before
//! anything runs, and a run that fails returns the state as it was, with the node.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::call::{Operation, Runtime};
use crate::chain::lookup;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registry::Registry;
use crate::spec::{SideEffects, ToolSpec};

/// The capability a broker send requires.
pub const BROKER_CAPABILITY: &str = "broker:send";

/// The operation of a broker send, `broker.send@1` (input: the agent id and the
/// intent): `external`, must-stub, requiring [`BROKER_CAPABILITY`].
pub fn broker_send() -> &'static Operation {
    static SEND: LazyLock<Operation> = LazyLock::new(|| {
        let mut spec = ToolSpec::new(
            "broker",
            "send",
            "1",
            SideEffects::External,
            "Hands an intent to another agent through the broker.",
        );
        spec.permissions = vec![BROKER_CAPABILITY.to_owned()];
        spec.input_schema = Value::Bool(true);
        spec.output_schema = Value::Bool(true);
        Operation::new(spec)
    });
    &SEND
}

/// What kind of node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Calls a tool.
    Tool,
    /// Hands an intent to another agent through the broker.
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
    /// (broker) Where the agent id is in the state: `state.path`, default `agent_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// (broker) Where the intent is in the state: `state.path`, default `intent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Capabilities the caller must hold for this node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Where the result goes in the state.
    pub out: String,
}

/// A pipeline document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The pipeline's name.
    pub name: String,
    /// A description, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The nodes, run in order.
    pub nodes: Vec<Node>,
}

/// What a broker answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BrokerReply {
    /// Who answered (a system or agent name), for provenance.
    pub source: String,
    /// The answer's id in that system.
    pub external_id: String,
    /// The answer.
    pub response: Value,
}

/// The future a [`Broker`] returns.
pub type BrokerFuture<'a> = Pin<Box<dyn Future<Output = Result<BrokerReply, String>> + Send + 'a>>;

/// Hands intents to other agents (a message bus, an agent-to-agent protocol, ...).
pub trait Broker: Send + Sync {
    /// Sends `intent` to the agent `agent_id`; its reply, or why there is none.
    fn send<'a>(&'a self, agent_id: &'a str, intent: &'a Value) -> BrokerFuture<'a>;
}

/// The broker, as a context resource: `ctx.with_resource(BrokerHandle::new(b))`.
#[derive(Clone)]
pub struct BrokerHandle(pub Arc<dyn Broker>);

impl BrokerHandle {
    /// Wraps a broker.
    pub fn new(broker: impl Broker + 'static) -> BrokerHandle {
        BrokerHandle(Arc::new(broker))
    }
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
    /// A broker node ran with no broker in the context.
    #[error(
        "node `{node}` needs a broker: add `BrokerHandle` to the context with `with_resource`"
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
    /// The initial state is not a JSON object.
    #[error("a pipeline's state is a JSON object, not {0}")]
    StateNotObject(String),
}

impl PipelineError {
    /// The state at the failure, for errors raised while running.
    pub fn state(&self) -> Option<&Value> {
        match self {
            PipelineError::MissingState { state, .. }
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
    /// use tackle::pipeline::Pipeline;
    /// use tackle::{tool, Runtime, ToolContext};
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
    ///     .run(&Runtime::from_inventory()?, json!({"who": "Ada"}), &ToolContext::new())
    ///     .await?;
    /// assert_eq!(state["greeting"], "hello, Ada");
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_yaml(text: &str) -> Result<Pipeline, PipelineError> {
        let pipeline: Pipeline = serde_norway::from_str(text).map_err(|e| {
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
            if node.out.is_empty() {
                return Err(bad("`out` is empty".into()));
            }
            match node.kind {
                NodeKind::Tool => {
                    if node.tool.is_none() {
                        return Err(bad("a tool node needs `tool`".into()));
                    }
                    for field in [("agent", &node.agent), ("intent", &node.intent)] {
                        if field.1.is_some() {
                            return Err(bad(format!("`{}` belongs to broker nodes", field.0)));
                        }
                    }
                    if let Some(inputs) = &node.inputs {
                        check_templates(&Value::Object(inputs.clone())).map_err(bad)?;
                    }
                }
                NodeKind::Broker => {
                    if node.tool.is_some() || node.inputs.is_some() {
                        return Err(bad("`tool` and `inputs` belong to tool nodes".into()));
                    }
                    for path in [&node.agent, &node.intent].into_iter().flatten() {
                        state_path(path).ok_or_else(|| {
                            bad(format!(
                                "`{path}` is not a state path such as state.route.intent"
                            ))
                        })?;
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
        runtime: &Runtime,
        state: Value,
        ctx: &ToolContext,
    ) -> Result<Value, PipelineError> {
        self.check(runtime.registry())?;
        let Value::Object(mut state) = state else {
            return Err(PipelineError::StateNotObject(kind_of(&state).into()));
        };
        for node in &self.nodes {
            let snapshot = |s: &Map<String, Value>| Box::new(Value::Object(s.clone()));
            let missing: Vec<String> = node
                .requires
                .iter()
                .filter(|c| !ctx.capabilities().allows(c))
                .cloned()
                .collect();
            if !missing.is_empty() {
                return Err(PipelineError::Denied {
                    node: node.id.clone(),
                    missing,
                    state: snapshot(&state),
                });
            }
            let result = match node.kind {
                NodeKind::Tool => self.run_tool(node, runtime, &state, ctx).await,
                NodeKind::Broker => run_broker(node, &state, ctx, runtime).await,
            };
            match result {
                Ok(value) => {
                    state.insert(node.out.clone(), value);
                }
                Err(failure) => return Err(failure.into_error(node, snapshot(&state))),
            }
        }
        Ok(Value::Object(state))
    }

    async fn run_tool(
        &self,
        node: &Node,
        runtime: &Runtime,
        state: &Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<Value, Failure> {
        let inputs = Value::Object(node.inputs.clone().unwrap_or_default());
        let input = render(&inputs, state)?;
        let tool = node.tool.as_deref().unwrap_or_default();
        runtime.call(tool, input, ctx).await.map_err(Failure::Tool)
    }
}

/// A node's failure before the node and state are attached.
enum Failure {
    Denied(Vec<String>),
    Missing(String),
    NoBroker,
    Tool(ToolError),
    Broker(String),
}

impl Failure {
    fn into_error(self, node: &Node, state: Box<Value>) -> PipelineError {
        let node = node.id.clone();
        match self {
            Failure::Denied(missing) => PipelineError::Denied {
                node,
                missing,
                state,
            },
            Failure::Missing(path) => PipelineError::MissingState { node, path, state },
            Failure::NoBroker => PipelineError::MissingBroker { node, state },
            Failure::Tool(error) => PipelineError::Tool { node, error, state },
            Failure::Broker(message) => PipelineError::Broker {
                node,
                message,
                state,
            },
        }
    }
}

async fn run_broker(
    node: &Node,
    state: &Map<String, Value>,
    ctx: &ToolContext,
    runtime: &Runtime,
) -> Result<Value, Failure> {
    let agent_path = node
        .agent
        .as_deref()
        .map_or("agent_id", |p| state_path(p).unwrap_or(p));
    let intent_path = node
        .intent
        .as_deref()
        .map_or("intent", |p| state_path(p).unwrap_or(p));
    let agent = lookup(state, agent_path).ok_or_else(|| Failure::Missing(agent_path.to_owned()))?;
    let agent = match agent {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let intent =
        lookup(state, intent_path).ok_or_else(|| Failure::Missing(intent_path.to_owned()))?;
    let broker = ctx
        .resource::<BrokerHandle>()
        .map_err(|_| Failure::NoBroker)?;
    let send = broker_send();
    let sent = runtime
        .perform(
            send,
            || json!({ "agent_id": agent, "intent": intent }),
            ctx,
            || async {
                let failed = |message: String| ToolError::Execution {
                    key: send.key().to_owned(),
                    message,
                };
                let reply = broker.0.send(&agent, intent).await.map_err(failed)?;
                serde_json::to_value(&reply).map_err(|e| failed(e.to_string()))
            },
        )
        .await
        .map_err(|e| match e {
            ToolError::CapabilityDenied { missing, .. } => Failure::Denied(missing),
            ToolError::Execution { message, .. } => Failure::Broker(message),
            other => Failure::Broker(other.to_string()),
        })?;
    let reply: BrokerReply = serde_json::from_value(sent)
        .map_err(|e| Failure::Broker(format!("the recorded reply does not fit: {e}")))?;
    Ok(json!({
        "response": reply.response,
        "provenance": {
            "origin": "tool",
            "source": reply.source,
            "external_id": reply.external_id,
        },
    }))
}

/// `state.a.b` -> `a.b`.
fn state_path(path: &str) -> Option<&str> {
    path.trim().strip_prefix("state.").filter(|p| !p.is_empty())
}

fn kind_of(value: &Value) -> &'static str {
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

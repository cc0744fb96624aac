//! The broker: hands an intent to another agent and brings its response back into the
//! state, with a provenance envelope.
//!
//! A [`Broker`] (a message bus, an agent-to-agent protocol, ...) answers
//! `request(agent_id, intent)` with a [`BrokerResponse`] carrying its `request_id`.
//! tackle reaches it two ways, with the same result:
//!
//! * the pipeline node `kind: broker` ([`BrokerNode`], configured by
//!   [`BrokerNodeConfig`]) reads the agent id and the intent from the state and writes
//!   the enveloped response under its output field;
//! * the tool `nautilus.broker_request@1` ([`broker_request_tool`]) takes
//!   `{agent_id, intent}` as input, for a ReAct skill or any caller whose call site is
//!   dynamic.
//!
//! Both write the response's fields plus a [`PROVENANCE_KEY`] envelope
//! `{"origin": "tool", "source": "nautilus", "external_id": <request_id>}`, so a consumer
//! that matches on it works with either. Both pass the door as
//! `nautilus.broker_request@1`: they require [`BROKER_CAPABILITY`]
//! (`tools:broker_request`, deny by default), are audited, and are `read` with the
//! `recorded-result` policy: recorded once and replayed offline without the broker.
//! The broker itself is a context resource: `ctx.with_resource(BrokerHandle::new(b))`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tackle_core::call::Operation;
use tackle_core::context::ToolContext;
use tackle_core::error::ToolError;
use tackle_core::registry::DynamicTool;
use tackle_core::run::Run;
use tackle_core::spec::{SideEffects, ToolSpec};

use super::steps::lookup;
use super::{field_path, kind_of, PipelineError};

/// The capability a broker request requires: `tools:broker_request`.
pub const BROKER_CAPABILITY: &str = "tools:broker_request";

/// The key of the provenance envelope added to a broker response:
/// `__stargraph_provenance__`.
pub const PROVENANCE_KEY: &str = "__stargraph_provenance__";

const NO_BROKER: &str =
    "no broker is registered: add `BrokerHandle` to the context with `with_resource`";

/// The `source` written in the provenance envelope: `nautilus`.
pub const PROVENANCE_SOURCE: &str = "nautilus";

/// A broker's answer: its `request_id` and whatever else it returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BrokerResponse {
    /// The request's id in the broker; it becomes the envelope's `external_id`.
    pub request_id: String,
    /// The response's other fields, written beside `request_id`.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl BrokerResponse {
    /// A response with `request_id` and no other field.
    pub fn new(request_id: impl Into<String>) -> BrokerResponse {
        BrokerResponse {
            request_id: request_id.into(),
            fields: Map::new(),
        }
    }

    /// Adds a field to the response.
    pub fn with_field(mut self, name: impl Into<String>, value: Value) -> BrokerResponse {
        self.fields.insert(name.into(), value);
        self
    }

    /// The response's fields plus the provenance envelope, as the node and the tool
    /// write it.
    pub fn enveloped(&self) -> Value {
        let mut out = Map::with_capacity(self.fields.len() + 2);
        out.insert("request_id".into(), Value::String(self.request_id.clone()));
        for (name, value) in &self.fields {
            out.insert(name.clone(), value.clone());
        }
        out.insert(
            PROVENANCE_KEY.into(),
            json!({
                "origin": "tool",
                "source": PROVENANCE_SOURCE,
                "external_id": self.request_id,
            }),
        );
        Value::Object(out)
    }
}

/// The future a [`Broker`] returns: its response, or why there is none.
pub type BrokerFuture<'a> =
    Pin<Box<dyn Future<Output = Result<BrokerResponse, String>> + Send + 'a>>;

/// Hands intents to other agents.
pub trait Broker: Send + Sync {
    /// Asks the agent `agent_id` for `intent`.
    fn request<'a>(&'a self, agent_id: &'a str, intent: &'a str) -> BrokerFuture<'a>;
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

/// The spec of `nautilus.broker_request@1`: `read` (so `recorded-result`), requiring
/// [`BROKER_CAPABILITY`], input `{agent_id: string, intent: string}`.
pub fn broker_request_spec() -> ToolSpec {
    let mut spec = ToolSpec::new(
        "nautilus",
        "broker_request",
        "1",
        SideEffects::Read,
        "Asks another agent, through the broker, and returns its response with a provenance envelope.",
    );
    spec.permissions = vec![BROKER_CAPABILITY.to_owned()];
    spec.input_schema = json!({
        "type": "object",
        "properties": {
            "agent_id": {"type": "string", "description": "The agent to ask."},
            "intent": {"type": "string", "description": "What to ask for."},
        },
        "required": ["agent_id", "intent"],
        "additionalProperties": false,
    });
    spec.output_schema = json!({
        "type": "object",
        "properties": {
            "request_id": {"type": "string"},
            PROVENANCE_KEY: {
                "type": "object",
                "properties": {
                    "origin": {"const": "tool"},
                    "source": {"type": "string"},
                    "external_id": {"type": "string"},
                },
                "required": ["origin", "source", "external_id"],
            },
        },
        "required": ["request_id", PROVENANCE_KEY],
    });
    spec.tags = vec!["broker".into()];
    spec
}

/// The operation a [`BrokerNode`] performs through the door; its spec is
/// [`broker_request_spec`].
pub fn broker_request() -> &'static Operation {
    static REQUEST: LazyLock<Operation> = LazyLock::new(|| Operation::new(broker_request_spec()));
    &REQUEST
}

/// The tool `nautilus.broker_request@1`, to register on a runtime: it asks the broker
/// of the call's context (a [`BrokerHandle`] resource) and returns the enveloped
/// response. Without a broker in the context the call fails with an execution error
/// that says so.
pub fn broker_request_tool() -> DynamicTool {
    DynamicTool::new(
        broker_request_spec(),
        |ctx: ToolContext, input: Value| async move {
            let field = |name: &str| match input.get(name) {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(format!("`{name}` must be a string")),
            };
            let (agent_id, intent) = (field("agent_id")?, field("intent")?);
            let broker = ctx
                .resource::<BrokerHandle>()
                .map_err(|_| NO_BROKER.to_owned())?;
            let response = broker.0.request(&agent_id, &intent).await?;
            Ok::<Value, String>(response.enveloped())
        },
    )
}

/// How a broker node reads and writes the state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerNodeConfig {
    /// The state field holding the requesting agent's id (a string).
    pub agent_id_field: String,
    /// The state field holding the intent (a string).
    pub intent_field: String,
    /// The state key that receives the enveloped response.
    pub output_field: String,
}

/// The broker as a node: reads the agent id and the intent from the state, asks the
/// broker through the door, and returns the patch `{output_field: <enveloped
/// response>}`. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerNode {
    /// The node's id, used in errors.
    pub id: String,
    /// Its fields.
    pub config: BrokerNodeConfig,
}

impl BrokerNode {
    /// The capabilities a broker node requires.
    pub const REQUIRES_CAPABILITIES: &'static [&'static str] = &[BROKER_CAPABILITY];

    /// The side-effect class of a broker request: `read` (the broker owns its own
    /// writes), so it is replay-safe.
    pub const SIDE_EFFECTS: SideEffects = SideEffects::Read;

    /// A node called `broker`.
    pub fn new(config: BrokerNodeConfig) -> BrokerNode {
        BrokerNode {
            id: "broker".into(),
            config,
        }
    }

    /// The same node, with another id for its errors.
    pub fn with_id(mut self, id: impl Into<String>) -> BrokerNode {
        self.id = id.into();
        self
    }

    /// Runs the node over `state` (a JSON object): the patch to apply, or the error
    /// with the state as it was. Errors: a missing field
    /// ([`PipelineError::MissingState`]), a field that is not a string
    /// ([`PipelineError::NotAString`]), no broker in the context
    /// ([`PipelineError::MissingBroker`]), a caller without
    /// [`BROKER_CAPABILITY`] ([`PipelineError::Denied`]), the broker's own failure
    /// ([`PipelineError::Broker`]).
    pub async fn execute(
        &self,
        run: &Run,
        state: &Value,
        ctx: &ToolContext,
    ) -> Result<Map<String, Value>, PipelineError> {
        let Value::Object(map) = state else {
            return Err(PipelineError::StateNotObject(kind_of(state).into()));
        };
        self.patch(run, map, ctx)
            .await
            .map_err(|failure| failure.into_error(&self.id, Box::new(state.clone())))
    }

    pub(super) async fn patch(
        &self,
        run: &Run,
        state: &Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<Map<String, Value>, Failure> {
        let agent_id = string_field(state, &self.config.agent_id_field)?;
        let intent = string_field(state, &self.config.intent_field)?;
        let operation = broker_request();
        // The broker is looked up only when the request really runs: the door checks
        // the grant first, and a replay needs no broker.
        let no_broker = AtomicBool::new(false);
        let response = run
            .perform(
                operation,
                || json!({ "agent_id": agent_id, "intent": intent }),
                ctx,
                || async {
                    let failed = |message: String| ToolError::Execution {
                        key: operation.key().to_owned(),
                        message,
                    };
                    let Ok(broker) = ctx.resource::<BrokerHandle>() else {
                        no_broker.store(true, Ordering::Relaxed);
                        return Err(failed(NO_BROKER.to_owned()));
                    };
                    let response = broker.0.request(agent_id, intent).await.map_err(failed)?;
                    Ok(response.enveloped())
                },
            )
            .await
            .map_err(|e| match e {
                _ if no_broker.load(Ordering::Relaxed) => Failure::NoBroker,
                ToolError::CapabilityDenied { missing, .. } => Failure::Denied(missing),
                ToolError::Execution { message, .. } => Failure::Broker(message),
                other => Failure::Broker(other.to_string()),
            })?;
        let mut patch = Map::with_capacity(1);
        patch.insert(self.config.output_field.clone(), response);
        Ok(patch)
    }
}

/// The string at `field` (a state path, `state.` optional).
fn string_field<'s>(state: &'s Map<String, Value>, field: &str) -> Result<&'s str, Failure> {
    let path = field_path(field);
    match lookup(state, path) {
        None => Err(Failure::Missing(path.to_owned())),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Failure::NotAString {
            field: path.to_owned(),
            found: kind_of(other),
        }),
    }
}

/// A node's failure before the node and state are attached.
pub(super) enum Failure {
    Denied(Vec<String>),
    Missing(String),
    NotAnObject,
    NotAString { field: String, found: &'static str },
    NoBroker,
    Tool(ToolError),
    Broker(String),
}

impl Failure {
    pub(super) fn into_error(self, node: &str, state: Box<Value>) -> PipelineError {
        let node = node.to_owned();
        match self {
            Failure::Denied(missing) => PipelineError::Denied {
                node,
                missing,
                state,
            },
            Failure::Missing(path) => PipelineError::MissingState { node, path, state },
            Failure::NotAnObject => PipelineError::NotAnObject { node, state },
            Failure::NotAString { field, found } => PipelineError::NotAString {
                node,
                field,
                found,
                state,
            },
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

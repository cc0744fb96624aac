//! Operations: effects that are not registered tools, described like tools so that
//! they pass the same door.
//!
//! A model completion (`llm.<provider>.complete@<model>`), a broker request
//! (`nautilus.broker_request@1`), any future effect: each is an [`Operation`], made from a
//! [`ToolSpec`] (key, permissions, side effects, replay policy, time limit) and
//! performed with [`Runtime::perform`](super::Runtime::perform), which runs every
//! stage of the door with the code the caller gives. So an operation is refused
//! without its permissions (deny by default), replays from a cassette (in recorded
//! order), and leaves an audit event, counters and a span, like any tool call.
//!
//! An operation's outcome has the types of its [`Effect`]: JSON and [`ToolError`]
//! for [`Operation::new`] ([`Json`]), its own for [`Operation::typed`] (a model
//! completion gives its reply and its error as they are; see [`super::effect`]).
//!
//! [`ToolError`]: crate::ToolError

use std::fmt;
use std::marker::PhantomData;

use serde_json::Value;

use super::effect::{Effect, Json};
use crate::registry::Tool;
use crate::spec::ToolSpec;

/// An effect with a spec but no registered code: a model completion
/// (`llm.<provider>.complete@<model>`), a broker request (`nautilus.broker_request@1`), any other
/// effect that is not a registered tool. Made from a [`ToolSpec`] (key, permissions,
/// side effects, replay policy, time limit) and performed with
/// [`Runtime::perform`](super::Runtime::perform), which runs every stage of the door
/// with the code the caller gives: refused without its permissions, replayed from a
/// cassette in recorded order, audited like any call. `X` is its [`Effect`]: the
/// types of its outcome and its kind ([`Json`] unless made with
/// [`Operation::typed`]).
pub struct Operation<X: Effect = Json> {
    tool: Tool,
    effect: PhantomData<fn() -> X>,
}

impl<X: Effect> fmt::Debug for Operation<X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("tool", &self.tool)
            .field("rerun_safe", &self.rerun_safe())
            .finish()
    }
}

impl Operation {
    /// An operation described by `spec` whose outcome is JSON ([`Json`]). Its key is the spec's key; the spec's version may
    /// be any text (a model's name, for example).
    pub fn new(spec: ToolSpec) -> Operation {
        Operation::typed(spec)
    }
}

impl<X: Effect> Operation<X> {
    /// An operation described by `spec` whose outcome has the types of the effect `X`
    /// (and which is re-run after a crash as `X` says: [`Effect::RERUN_SAFE`]).
    pub fn typed(spec: ToolSpec) -> Operation<X> {
        Operation {
            tool: Tool::for_operation(spec),
            effect: PhantomData,
        }
    }

    /// Asks a replay to run this operation too, and to compare its outcome with the
    /// recording (the recording is what the caller gets; a difference fails the run
    /// at [`Cassette::finish`](crate::replay::Cassette::finish), listed with its JSON
    /// pointers). For operations whose code is a script of the program's own, such as
    /// a test model's answers: a replay then notices when the script changed. Not for
    /// anything that reaches the world.
    pub fn with_replay_check(mut self) -> Operation<X> {
        self.tool.replay_check = true;
        self
    }

    /// Whether a durable run may make this operation again after a crash: its spec
    /// says so ([`ToolSpec::rerun_safe`]), or its effect type does
    /// ([`Effect::RERUN_SAFE`]).
    pub fn rerun_safe(&self) -> bool {
        X::RERUN_SAFE || self.tool.rerun_safe()
    }

    /// The key: `namespace.name@version`.
    pub fn key(&self) -> &str {
        self.tool.key()
    }

    /// The spec.
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    pub(super) fn tool(&self) -> &Tool {
        &self.tool
    }
}

/// What an operation's input function gives the door: the input's JSON view (a
/// [`Value`]), or a `Result` whose error says why there is none. The function is
/// called only when a stage needs the view (a cassette keys and records the call by
/// it, an approver is shown it); when it fails, that stage ends the call with
/// [`ToolError::Execution`](crate::ToolError::Execution), so no call is ever keyed
/// or recorded by a stand-in.
pub trait InputView: Send {
    /// The view, or why there is none.
    fn into_view(self) -> Result<Value, String>;
}

impl InputView for Value {
    #[inline]
    fn into_view(self) -> Result<Value, String> {
        Ok(self)
    }
}

impl<E: fmt::Display + Send> InputView for Result<Value, E> {
    #[inline]
    fn into_view(self) -> Result<Value, String> {
        self.map_err(|e| e.to_string())
    }
}

/// A gate as a door operation: entering what `requires` guards (a skill, a pipeline
/// node) is the operation `namespace.name@version`, with no effect, performed as a plain
/// call through the door. So the capability check is the door's (deny by default),
/// and every entry, let in or refused, leaves an audit event, counters and a span;
/// nothing is recorded to a cassette (a gate is not an effect to replay). Nothing is
/// asked of the door when nothing is required.
///
/// `gate` is the operation's `(namespace, name, version)`; `what` says what is
/// entered, in its description (`skill "triage"`).
pub async fn enter(
    runtime: &super::Runtime,
    (namespace, name, version): (&str, &str, &str),
    requires: &[String],
    what: &str,
    ctx: &crate::context::ToolContext,
) -> Result<(), crate::error::ToolError> {
    if requires.is_empty() {
        return Ok(());
    }
    let mut spec = ToolSpec::new(
        namespace,
        name,
        version,
        crate::spec::SideEffects::None,
        format!("Entering {what}."),
    );
    spec.permissions = requires.to_vec();
    let gate = Operation::new(spec);
    runtime
        .perform(
            &gate,
            || serde_json::Value::Object(serde_json::Map::new()),
            ctx,
            || async { Ok(serde_json::Value::Null) },
        )
        .await
        .map(|_| ())
}

//! The call pipeline: the one door every tool call goes through.
//!
//! ```text
//! resolve key -> capability gate -> validate input -> replay router
//!   -> execute (panic guard) -> validate output
//! ```
//!
//! [`Runtime::call`] is that door. Whoever calls a tool (user code, the executor, a
//! chain, an agent loop, the MCP server) calls it here, so no caller can skip the
//! capability check or validation. The order matters: a caller without the required
//! permissions learns nothing about the input's validity and the tool never runs; an
//! invalid input never reaches the tool; a tool's output that breaks its own schema is
//! an error, not a surprise for the model downstream. With a [`Cassette`] attached,
//! the replay router decides after validation whether the call runs or a recorded
//! outcome stands in for it (see [`crate::replay`]); replayed outputs are validated
//! like live ones.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::{RegistryError, ToolError};
use crate::registry::{HandlerKind, Registry, Tool, ToolFuture};
use crate::replay::{Cassette, InteractionKind, Route};

/// The tools of a program and the door to call them.
#[derive(Debug, Default)]
pub struct Runtime {
    registry: Registry,
    cassette: Option<Cassette>,
}

impl Runtime {
    /// A runtime over every `#[tool]` linked into the program.
    pub fn from_inventory() -> Result<Runtime, RegistryError> {
        Ok(Runtime::new(Registry::from_inventory()?))
    }

    /// A runtime over the given registry.
    pub fn new(registry: Registry) -> Runtime {
        Runtime {
            registry,
            cassette: None,
        }
    }

    /// Routes every call through this cassette (record or replay, by its mode).
    pub fn with_cassette(mut self, cassette: Cassette) -> Runtime {
        self.cassette = Some(cassette);
        self
    }

    /// Attaches or removes the cassette, returning the one attached before.
    pub fn set_cassette(&mut self, cassette: Option<Cassette>) -> Option<Cassette> {
        std::mem::replace(&mut self.cassette, cassette)
    }

    /// The attached cassette, if any.
    pub fn cassette(&self) -> Option<&Cassette> {
        self.cassette.as_ref()
    }

    /// The tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tools, to register or unregister run-time tools.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Calls a tool through the door: resolves `key` (full key, `namespace.name` or a
    /// unique bare name), checks the caller's capabilities, validates the input, runs
    /// the tool with a panic guard and validates its output.
    pub async fn call(
        &self,
        key: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let tool = self.registry.resolve(key)?;
        call_tool(tool, input, ctx, self.cassette.as_ref()).await
    }
}

/// The door for an already-resolved tool: every check of [`Runtime::call`] after
/// resolution.
pub(crate) async fn call_tool(
    tool: &Tool,
    input: Value,
    ctx: &ToolContext,
    cassette: Option<&Cassette>,
) -> Result<Value, ToolError> {
    let spec = tool.spec();
    if !spec.requires_capability.is_empty() {
        let missing = ctx.capabilities().missing(&spec.requires_capability);
        if !missing.is_empty() {
            return Err(ToolError::CapabilityDenied {
                key: tool.key().to_owned(),
                missing,
            });
        }
    }
    let validators = tool.validators()?;
    let checked = validators.input.validate(&input);
    if !checked.valid {
        return Err(ToolError::InvalidInput {
            key: tool.key().to_owned(),
            errors: checked.errors,
        });
    }
    let output = match cassette {
        None => guarded(tool, ctx, input).await?,
        Some(cassette) => {
            let fingerprint = tool.schema_fingerprint();
            // The schema check is once per tool and cassette, not once per call.
            let check = tool.first_call_under(cassette.id()).then_some(fingerprint);
            let route = cassette.route(
                InteractionKind::Tool,
                tool.key(),
                spec.replay_policy,
                &input,
                check,
            )?;
            match route {
                Route::Serve(outcome) => outcome?,
                Route::Run(pending) => {
                    let result = guarded(tool, ctx, input).await;
                    if let Some(pending) = pending {
                        cassette.record(pending, &result, Some(fingerprint));
                    }
                    result?
                }
            }
        }
    };
    let checked = validators.output.validate(&output);
    if !checked.valid {
        return Err(ToolError::InvalidOutput {
            key: tool.key().to_owned(),
            errors: checked.errors,
        });
    }
    Ok(output)
}

/// Runs the tool's handler, turning a panic (while starting or while running) into
/// `Panicked`, and naming the tool by its registered key in every error.
async fn guarded(tool: &Tool, ctx: &ToolContext, input: Value) -> Result<Value, ToolError> {
    let key = tool.key();
    let outcome = match &tool.handler().0 {
        HandlerKind::Sync(run) => catch_unwind(AssertUnwindSafe(|| run(ctx, input))),
        HandlerKind::Async(start) => {
            match catch_unwind(AssertUnwindSafe(|| start(ctx.clone(), input))) {
                Ok(future) => CatchUnwind(future).await,
                Err(payload) => Err(payload),
            }
        }
    };
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(rekey(e, key)),
        Err(payload) => Err(ToolError::Panicked {
            key: key.to_owned(),
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// Errors made inside a handler carry the key the tool was defined with; a tool moved
/// by a collision strategy answers to its registered key.
fn rekey(mut error: ToolError, registered: &str) -> ToolError {
    match &mut error {
        ToolError::InvalidInput { key, .. }
        | ToolError::CapabilityDenied { key, .. }
        | ToolError::MissingContext { key, .. }
        | ToolError::Execution { key, .. }
        | ToolError::Panicked { key, .. }
        | ToolError::InvalidOutput { key, .. }
        | ToolError::InvalidSchema { key, .. }
        | ToolError::CassetteMiss { key, .. }
        | ToolError::ReplayGap { key, .. }
        | ToolError::Divergence { key, .. } => {
            if key != registered {
                *key = registered.to_owned();
            }
        }
        ToolError::NotFound { .. } | ToolError::Ambiguous { .. } => {}
    }
    error
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the panic carried no message".to_owned()
    }
}

/// Polls a tool future, catching a panic in any poll.
struct CatchUnwind(ToolFuture);

impl Future for CatchUnwind {
    type Output = Result<Result<Value, ToolError>, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::DynamicTool;
    use crate::spec::{SideEffects, ToolSpec};
    use crate::ToolErrorKind;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn runtime_with(tool: DynamicTool) -> Runtime {
        let mut rt = Runtime::default();
        rt.registry_mut().register(tool).unwrap();
        rt
    }

    fn counted_tool(runs: Arc<AtomicUsize>, permission: Option<&str>) -> DynamicTool {
        let mut spec = ToolSpec::new("t", "count", "1", SideEffects::Write, "Counts its runs.");
        spec.input_schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        spec.requires_capability = permission.into_iter().map(str::to_owned).collect();
        DynamicTool::new(spec, move |_ctx, input| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(input)
            }
        })
    }

    #[tokio::test]
    async fn capability_gate_runs_before_validation_and_execution() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs.clone(), Some("db:write")));
        // Invalid input *and* no permission: the denial wins, and the tool never ran.
        let err = rt
            .call("t.count@1", json!({"n": "x"}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
        assert!(err.to_string().contains("`db:write`"), "{err}");
        let err = rt
            .call(
                "t.count@1",
                json!({"n": 1}),
                &ToolContext::new().grant("db:read"),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
        assert_eq!(runs.load(Ordering::SeqCst), 0);

        let ctx = ToolContext::new().grant("db:*");
        let err = rt
            .call("t.count@1", json!({"n": "x"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            0,
            "invalid input never reaches the tool"
        );
        assert_eq!(
            rt.call("t.count@1", json!({"n": 1}), &ctx).await.unwrap(),
            json!({"n": 1})
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn validators_are_compiled_once_per_tool() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs, None));
        let tool = rt.registry().resolve("t.count@1").unwrap();
        let first: *const _ = tool.validators().unwrap();
        for n in 0..3 {
            rt.call("t.count@1", json!({ "n": n }), &ToolContext::new())
                .await
                .unwrap();
        }
        let after: *const _ = tool.validators().unwrap();
        assert!(
            std::ptr::eq(first, after),
            "the same compiled validators serve every call"
        );
    }

    #[tokio::test]
    async fn tools_without_permissions_need_no_grants() {
        let runs = Arc::new(AtomicUsize::new(0));
        let rt = runtime_with(counted_tool(runs.clone(), None));
        assert!(rt
            .call("count", json!({"n": 2}), &ToolContext::new())
            .await
            .is_ok());
    }

    #[tokio::test]
    async fn panics_are_contained() {
        let spec = ToolSpec::new("t", "boom", "1", SideEffects::None, "Panics.");
        let rt = runtime_with(DynamicTool::new(spec, |_c, input: Value| async move {
            if input.get("now").is_some() {
                panic!("boom at {}", 42);
            }
            Ok::<_, String>(Value::Null)
        }));
        let err = rt
            .call("t.boom@1", json!({"now": 1}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Panicked);
        assert_eq!(err.to_string(), "`t.boom@1` panicked: boom at 42");
        // The runtime is still usable.
        assert_eq!(
            rt.call("t.boom@1", json!({}), &ToolContext::new())
                .await
                .unwrap(),
            Value::Null
        );
    }

    #[tokio::test]
    async fn outputs_are_validated() {
        let mut spec = ToolSpec::new("t", "liar", "1", SideEffects::None, "Breaks its schema.");
        spec.output_schema = json!({"type": "integer"});
        let rt = runtime_with(DynamicTool::new(spec, |_c, _i| async move {
            Ok::<_, String>(json!("seven"))
        }));
        let err = rt
            .call("liar", json!({}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidOutput);
        assert!(
            err.to_string()
                .contains("\"seven\" is not of type \"integer\""),
            "{err}"
        );
    }

    #[tokio::test]
    async fn tool_errors_carry_their_message() {
        let spec = ToolSpec::new("t", "fail", "1", SideEffects::None, "Fails.");
        let rt = runtime_with(DynamicTool::new(spec, |_c, _i| async move {
            Err::<Value, _>("disk full")
        }));
        let err = rt
            .call("t.fail", json!({}), &ToolContext::new())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::Execution {
                key: "t.fail@1".into(),
                message: "disk full".into()
            }
        );
    }
}

//! The door's own tests: stage order and containment.

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
    spec.permissions = permission.into_iter().map(str::to_owned).collect();
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
            &ToolContext::new().with_grant("db:read"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let ctx = ToolContext::new().with_grant("db:*");
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

#[test]
fn a_call_keeps_its_state_out_of_its_future() {
    // The call's state (`Call`, over 500 bytes) lives in the poll that runs it; only a
    // call that must wait moves it to a future of its own (see `Runtime::pass_now`),
    // so a caller's future, and every move of it, stays small.
    let rt = Runtime::default();
    let ctx = ToolContext::new();
    let shared = Arc::new(Runtime::default());
    let run = crate::run::Run::new(&shared);
    let call = std::mem::size_of_val(&rt.call("t.count@1", json!({}), &ctx));
    let in_run = std::mem::size_of_val(&run.call("t.count@1", json!({}), &ctx));
    let state = std::mem::size_of::<Call<'_, Json>>();
    assert!(
        call < state / 2,
        "a call's future is {call} bytes, its state {state}"
    );
    assert!(
        in_run < state / 2,
        "a run's call's future is {in_run} bytes"
    );
}

#[tokio::test]
async fn a_refused_call_is_audited_and_never_runs() {
    use crate::audit::{Execution, GateDecision, MemoryAudit};
    use crate::validate::ValidationIssue;
    let runs = Arc::new(AtomicUsize::new(0));
    let audit = Arc::new(MemoryAudit::new());
    let rt = Arc::new(
        runtime_with(counted_tool(runs.clone(), Some("db:write"))).with_audit(audit.clone()),
    );
    let run = crate::run::Run::new(&rt);
    let why = || ValidationIssue::new("", "the request's state was altered");
    let granted = ToolContext::new().with_grant("db:write");
    let refused = run.refuse("t.count@1", json!({"n": 1}), &granted, why());
    let error = refused.result.unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput);
    assert!(error.to_string().contains("altered"), "{error}");
    assert_eq!(refused.key, "t.count@1");
    // Without the grant, the capability gate answers first, as for any call.
    let denied = run.refuse("t.count@1", json!({"n": 1}), &ToolContext::new(), why());
    assert_eq!(
        denied.result.unwrap_err().kind(),
        ToolErrorKind::CapabilityDenied
    );
    let unknown = run.refuse("t.nothing@1", json!({}), &granted, why());
    assert_eq!(unknown.result.unwrap_err().kind(), ToolErrorKind::NotFound);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    let events = audit.events();
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0].gates.input,
        GateDecision::Refused("the request's state was altered".to_owned())
    );
    assert_eq!(events[0].gates.capability, GateDecision::Passed);
    assert_eq!(events[0].execution, Execution::NotRun);
    assert_eq!(
        events[0].error.as_ref().map(|e| e.kind),
        Some(ToolErrorKind::InvalidInput)
    );
    assert_eq!(
        events[1].error.as_ref().map(|e| e.kind),
        Some(ToolErrorKind::CapabilityDenied)
    );
    assert_eq!(events[1].gates.input, GateDecision::NotReached);
}

//! The one door, end to end: resolve -> capability gate -> validate input -> execute
//! -> validate output, with typed, readable errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tackle::{context::Resource, tool, Runtime, ToolContext, ToolError, ToolErrorKind};

/// Add two integers.
#[tool(namespace = "math", version = "1", side_effects = none)]
fn add(
    /// left operand
    a: i64,
    /// right operand
    b: i64,
) -> i64 {
    a + b
}

static TRANSFERS: AtomicUsize = AtomicUsize::new(0);

/// Move money between accounts (records that it ran).
#[tool(namespace = "bank", side_effects = external, requires_capability = ["bank:transfer", "bank:audit"])]
fn transfer(amount: u64) -> u64 {
    TRANSFERS.fetch_add(1, Ordering::SeqCst);
    amount
}

/// Divide, failing on zero.
#[tool(namespace = "math", side_effects = none)]
fn divide(a: i64, b: i64) -> Result<i64, String> {
    if b == 0 {
        Err(format!("cannot divide {a} by zero"))
    } else {
        Ok(a / b)
    }
}

/// Panics on request.
#[tool(namespace = "chaos", side_effects = none)]
async fn explode(message: String) -> i64 {
    panic!("{message}");
}

/// Panics, synchronously.
#[tool(namespace = "chaos", side_effects = none)]
fn crash(code: u8) -> u8 {
    if code > 0 {
        panic!("crash code {code}");
    }
    code
}

/// Counts the caller's grants (takes the context by value).
#[tool(namespace = "ctx", side_effects = none)]
fn grant_count(ctx: ToolContext) -> usize {
    ctx.capabilities().grants().len()
}

/// Claims a string, returns a number.
#[tool(namespace = "chaos", side_effects = none, output_schema = r#"{"type": "string"}"#)]
fn liar() -> i64 {
    7
}

/// Sleeps on the thread it runs on.
#[tool(namespace = "io", side_effects = read, blocking)]
fn slow_read(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

struct Greeting(String);

/// Greets with the configured greeting.
#[tool(namespace = "text", side_effects = none)]
fn greet(greeting: Resource<Greeting>, name: String) -> String {
    format!("{} {name}", greeting.0)
}

/// A namesake in another namespace, to make the bare name `add` ambiguous elsewhere.
#[tool(name = "sum", namespace = "stats", side_effects = none)]
fn stats_sum(values: Vec<f64>) -> f64 {
    values.iter().sum()
}

/// Sum, the integer way.
#[tool(name = "sum", namespace = "ints", side_effects = none)]
fn ints_sum(values: Vec<i64>) -> i64 {
    values.iter().sum()
}

fn runtime() -> Runtime {
    Runtime::from_inventory_in(module_path!()).expect("the registry builds")
}

#[tokio::test]
async fn the_issue_example() {
    let rt = runtime();
    let ctx = ToolContext::new().with_grant("tools:*");
    let out = rt
        .call("math.add@1", json!({"a": 2, "b": 3}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!(5));
    assert_eq!(add::KEY, "math.add@1");
    let spec: &tackle::ToolSpec = rt.registry().get("math.add").unwrap().spec();
    assert_eq!(spec.name, "add");
    match rt.call("math.add@1", json!({"a": "x"}), &ctx).await {
        Err(e) if e.kind() == ToolErrorKind::InvalidInput => {
            let pointers: Vec<_> = e
                .validation_errors()
                .iter()
                .map(|i| i.pointer.as_str())
                .collect();
            assert_eq!(pointers.len(), 2, "{e}");
            assert!(
                pointers.contains(&"/a") && pointers.contains(&""),
                "{pointers:?}"
            );
            assert!(
                e.to_string().contains("\"b\" is a required property"),
                "{e}"
            );
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[tokio::test]
async fn denied_before_validation_and_execution() {
    let rt = runtime();
    let before = TRANSFERS.load(Ordering::SeqCst);
    for ctx in [
        ToolContext::new(),
        ToolContext::new().with_grant("bank:transfer"),
        ToolContext::new().with_grant("tools:*"),
    ] {
        // Invalid input too: the denial comes first.
        let err = rt
            .call("bank.transfer@1", json!({"amount": "lots"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied, "{err}");
        let err = rt
            .call("bank.transfer@1", json!({"amount": 5}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied, "{err}");
    }
    assert_eq!(
        TRANSFERS.load(Ordering::SeqCst),
        before,
        "a denied tool never runs"
    );
    let err = rt
        .call(
            "bank.transfer@1",
            json!({"amount": 5}),
            &ToolContext::new().with_grant("bank:transfer"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`bank.transfer@1` requires `bank:audit` which the caller was not granted: grant it \
         with ToolContext::with_grant(\"bank:audit\"), or ToolContext::with_grant(\"bank:*\") \
         for every `bank:` permission"
    );

    let ok = ToolContext::new().with_grant("bank:*");
    assert_eq!(
        rt.call("bank.transfer@1", json!({"amount": 5}), &ok)
            .await
            .unwrap(),
        json!(5)
    );
    assert_eq!(TRANSFERS.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn tool_errors_panics_and_bad_outputs() {
    let rt = runtime();
    let ctx = ToolContext::new();
    let err = rt
        .call("math.divide", json!({"a": 1, "b": 0}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::Execution {
            key: "math.divide@1".into(),
            message: "cannot divide 1 by zero".into()
        }
    );

    let err = rt
        .call("chaos.explode", json!({"message": "kaboom"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Panicked);
    assert_eq!(err.to_string(), "`chaos.explode@1` panicked: kaboom");
    // The process and the runtime go on.
    assert_eq!(
        rt.call("math.add", json!({"a": 1, "b": 1}), &ctx)
            .await
            .unwrap(),
        json!(2)
    );

    let err = rt
        .call("chaos.crash", json!({"code": 3}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`chaos.crash@1` panicked: crash code 3",
        "sync tools are guarded too"
    );
    assert_eq!(
        rt.call("chaos.crash", json!({"code": 0}), &ctx)
            .await
            .unwrap(),
        json!(0)
    );
    let two = ToolContext::new().with_grant("a").with_grant("b");
    assert_eq!(
        rt.call("ctx.grant_count", json!({}), &two).await.unwrap(),
        json!(2)
    );

    let err = rt.call("chaos.liar", json!({}), &ctx).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidOutput);
    assert!(
        err.to_string().contains("7 is not of type \"string\""),
        "{err}"
    );
}

#[tokio::test]
async fn resolution_errors_help() {
    let rt = runtime();
    let ctx = ToolContext::new();
    let err = rt.call("math.ad@1", json!({}), &ctx).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    assert!(
        err.to_string()
            .starts_with("no tool matches `math.ad@1`; did you mean `math.add@1`"),
        "{err}"
    );
    let err = rt
        .call("sum", json!({"values": []}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Ambiguous);
    assert!(
        err.to_string().contains("`ints.sum@1`") || err.to_string().contains("ints.sum@1"),
        "{err}"
    );
    assert_eq!(
        rt.call("ints.sum", json!({"values": [1, 2]}), &ctx)
            .await
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        rt.call("divide", json!({"a": 9, "b": 3}), &ctx)
            .await
            .unwrap(),
        json!(3),
        "a unique bare name"
    );
}

#[tokio::test]
async fn resources_are_injected_or_reported_missing() {
    let rt = runtime();
    let err = rt
        .call("text.greet", json!({"name": "Ann"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::MissingContext);
    assert!(err.to_string().contains("Greeting"), "{err}");
    let ctx = ToolContext::new().with_resource(Greeting("Hello".into()));
    assert_eq!(
        rt.call("text.greet", json!({"name": "Ann"}), &ctx)
            .await
            .unwrap(),
        json!("Hello Ann")
    );
}

/// On a single-threaded runtime, a blocking tool marked `blocking` must leave the
/// async worker free: a ticker task keeps ticking while the tool sleeps.
#[tokio::test(flavor = "current_thread")]
async fn blocking_tools_run_off_the_async_worker() {
    let rt = runtime();
    let ctx = ToolContext::new();
    let ticks = AtomicUsize::new(0);
    let ticker = async {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks.fetch_add(1, Ordering::SeqCst);
        }
    };
    let call = async {
        let out = rt.call("io.slow_read", json!({"ms": 400}), &ctx).await;
        // How far the ticker got while the tool slept.
        (out, ticks.load(Ordering::SeqCst))
    };
    let ((out, ticks_during_call), ()) = tokio::join!(call, ticker);
    assert_eq!(out.unwrap(), json!(400));
    // Had the tool blocked the only worker, the ticker could not have ticked at all.
    assert!(
        ticks_during_call >= 10,
        "the ticker ticked {ticks_during_call} times during the call"
    );
    assert!(slow_read::spec().blocking);
}

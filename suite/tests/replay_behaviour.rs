//! Replay keying, FIFO order, divergence reports, operations (model calls),
//! redaction and concurrency, end to end through the door.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::call::Operation;
use tackle::replay::{CassetteError, CassetteWarning, Mode};
use tackle::{
    context::Resource, registry::DynamicTool, replay::CassetteConfig, tool, Cassette, Run, Runtime,
    SideEffects, ToolContext, ToolError, ToolErrorKind, ToolSpec,
};

#[derive(Default)]
struct Counter(AtomicUsize);

/// Hand out the next ticket (must-stub: every call changes the world).
#[tool(namespace = "desk", side_effects = write)]
fn ticket(counter: Resource<Counter>, prefix: String) -> String {
    format!("{prefix}-{}", counter.0.fetch_add(1, Ordering::SeqCst))
}

/// Transfer money; refuses negative amounts.
#[tool(namespace = "bank", side_effects = external)]
fn pay(counter: Resource<Counter>, to: String, amount: f64) -> Result<String, String> {
    counter.0.fetch_add(1, Ordering::SeqCst);
    if amount < 0.0 {
        return Err(format!("cannot pay {amount} to {to}"));
    }
    Ok(format!("paid {amount} to {to}"))
}

/// Call an API with a token (the token must never reach a cassette).
#[tool(namespace = "api", side_effects = read, replay_policy = must_stub)]
fn fetch(counter: Resource<Counter>, url: String, authorization: String) -> Value {
    counter.0.fetch_add(1, Ordering::SeqCst);
    json!({"url": url, "echo": authorization, "status": 200})
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tackle-replay-behaviour-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cassette.json")
}

fn open(path: &PathBuf, mode: Mode) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false),
    )
    .unwrap()
}

/// A run of the inventory's tools through `cassette`, and a context counting what runs.
fn run_with(cassette: Cassette) -> (Run, ToolContext) {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&runtime).with_cassette(cassette);
    (run, ToolContext::new().with_resource(Counter::default()))
}

/// A run of `runtime` (its tools registered) through `cassette`.
fn run_of(runtime: Runtime, cassette: Cassette) -> Run {
    Run::new(&Arc::new(runtime)).with_cassette(cassette)
}

fn runs(ctx: &ToolContext) -> usize {
    ctx.resource::<Counter>().unwrap().0.load(Ordering::SeqCst)
}

#[tokio::test]
async fn key_order_and_number_spelling_do_not_change_the_key() {
    let path = temp("keying");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    let recorded = run
        .call("bank.pay", json!({"to": "ann", "amount": 2.0}), &ctx)
        .await
        .unwrap();
    run.cassette().unwrap().finish().unwrap();

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    let input: Value = serde_json::from_str(r#"{ "amount": 2, "to": "ann" }"#).unwrap();
    assert_eq!(run.call("bank.pay", input, &ctx).await.unwrap(), recorded);
    assert_eq!(runs(&ctx), 0);
    run.cassette().unwrap().finish().unwrap();
}

#[tokio::test]
async fn identical_calls_replay_in_recorded_order_once_each() {
    let path = temp("fifo");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    for _ in 0..3 {
        run.call("desk.ticket", json!({"prefix": "A"}), &ctx)
            .await
            .unwrap();
    }
    run.cassette().unwrap().finish().unwrap();

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    for expected in ["A-0", "A-1", "A-2"] {
        assert_eq!(
            run.call("desk.ticket", json!({"prefix": "A"}), &ctx)
                .await
                .unwrap(),
            json!(expected)
        );
    }
    let err = run
        .call("desk.ticket", json!({"prefix": "A"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CassetteMiss);
    assert!(err.to_string().contains("already replayed"), "{err}");
    assert_eq!(runs(&ctx), 0);
}

#[tokio::test]
async fn in_any_order_of_calls_identical_ones_replay_first_in_first_out() {
    // Served in the recorded order, or out of it, or both: the same recordings.
    let path = temp("fifo-mixed");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    for prefix in ["A", "B", "A", "A"] {
        run.call("desk.ticket", json!({ "prefix": prefix }), &ctx)
            .await
            .unwrap();
    }
    run.cassette().unwrap().finish().unwrap();
    for order in [
        ["A", "B", "A", "A"],
        ["A", "A", "B", "A"],
        ["B", "A", "A", "A"],
        ["A", "A", "A", "B"],
    ] {
        let (run, ctx) = run_with(open(&path, Mode::Replay));
        let mut got = Vec::new();
        for prefix in order {
            let answer = run.call("desk.ticket", json!({ "prefix": prefix }), &ctx);
            got.push(answer.await.unwrap());
        }
        let expected: Vec<Value> = {
            let mut a = ["A-0", "A-2", "A-3"].into_iter();
            order
                .iter()
                .map(|p| json!(if *p == "B" { "B-1" } else { a.next().unwrap() }))
                .collect()
        };
        assert_eq!(got, expected, "{order:?}");
        let again = run.call("desk.ticket", json!({"prefix": "A"}), &ctx).await;
        assert_eq!(again.unwrap_err().kind(), ToolErrorKind::CassetteMiss);
        assert_eq!(runs(&ctx), 0);
    }
}

#[tokio::test]
async fn a_call_never_replays_what_the_same_run_recorded() {
    let path = temp("same-run");
    let (run, ctx) = run_with(open(&path, Mode::New));
    assert_eq!(
        run.call("desk.ticket", json!({"prefix": "B"}), &ctx)
            .await
            .unwrap(),
        json!("B-0")
    );
    // Recorded a moment ago, but not replayed: it runs again.
    assert_eq!(
        run.call("desk.ticket", json!({"prefix": "B"}), &ctx)
            .await
            .unwrap(),
        json!("B-1")
    );
    assert_eq!(runs(&ctx), 2);
    run.cassette().unwrap().finish().unwrap();
}

#[tokio::test]
async fn errors_are_recorded_and_replay_as_errors() {
    let path = temp("errors");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    let live = run
        .call("bank.pay", json!({"to": "bob", "amount": -5}), &ctx)
        .await
        .unwrap_err();
    run.cassette().unwrap().finish().unwrap();

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    let replayed = run
        .call("bank.pay", json!({"to": "bob", "amount": -5}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(replayed, live);
    assert_eq!(
        replayed,
        ToolError::Execution {
            key: "bank.pay@1".into(),
            message: "cannot pay -5 to bob".into()
        }
    );
    assert_eq!(runs(&ctx), 0);
}

#[tokio::test]
async fn a_miss_names_the_call_and_the_nearest_recording_with_a_diff() {
    let path = temp("miss");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    run.call("bank.pay", json!({"to": "ann", "amount": 10}), &ctx)
        .await
        .unwrap();
    run.call("bank.pay", json!({"to": "zed", "amount": 99}), &ctx)
        .await
        .unwrap();
    run.cassette().unwrap().finish().unwrap();

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    let err = run
        .call("bank.pay", json!({"to": "ann", "amount": 12}), &ctx)
        .await
        .unwrap_err();
    let ToolError::CassetteMiss { key, call, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((key.as_str(), *call), ("bank.pay@1", 0));
    assert!(
        message.contains("nearest recorded (unused): call #0 `bank.pay@1`"),
        "{message}"
    );
    assert!(message.contains("/amount: 10 -> 12"), "{message}");
    assert_eq!(runs(&ctx), 0);
    // It names the cassette and how to re-record it, in its text and in the `Debug`
    // form a test's `unwrap()` prints.
    let rerecord = format!(
        "(cassette {}; if the change is intended, re-record it with `TACKLE_CASSETTE=review cargo test ...` and accept it with `cargo tackle review`)",
        path.display()
    );
    assert!(err.to_string().ends_with(&rerecord), "{err}");
    assert!(
        format!("{err:?}").contains("TACKLE_CASSETTE=review"),
        "{err:?}"
    );
}

#[tokio::test]
async fn unused_must_stub_recordings_fail_the_run() {
    let path = temp("unused");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    run.call("desk.ticket", json!({"prefix": "C"}), &ctx)
        .await
        .unwrap();
    run.call("bank.pay", json!({"to": "ann", "amount": 1}), &ctx)
        .await
        .unwrap();
    run.cassette().unwrap().finish().unwrap();

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    run.call("desk.ticket", json!({"prefix": "C"}), &ctx)
        .await
        .unwrap();
    let err = run.cassette().unwrap().finish().unwrap_err();
    let CassetteError::Unused { calls, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(calls.len(), 1);
    assert!(calls[0].contains("`bank.pay@1`"), "{err}");
}

#[tokio::test]
async fn tool_calls_match_in_any_order() {
    let path = temp("any-order");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    for who in ["a", "b", "c"] {
        run.call("bank.pay", json!({"to": who, "amount": 1}), &ctx)
            .await
            .unwrap();
    }
    run.cassette().unwrap().finish().unwrap();
    let (run, ctx) = run_with(open(&path, Mode::Replay));
    for who in ["c", "a", "b"] {
        assert_eq!(
            run.call("bank.pay", json!({"to": who, "amount": 1}), &ctx)
                .await
                .unwrap(),
            json!(format!("paid 1 to {who}"))
        );
    }
    run.cassette().unwrap().finish().unwrap();
}

fn dynamic_lookup(version: &str, output_schema: Value, output: &'static str) -> DynamicTool {
    let mut spec = ToolSpec::new(
        "dyn",
        "lookup",
        version,
        SideEffects::Write,
        "Looks a thing up.",
    );
    spec.input_schema =
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
    spec.output_schema = output_schema;
    DynamicTool::new(spec, move |_ctx, _input| async move {
        Ok::<_, String>(json!(output))
    })
}

/// A runtime with these tools only.
fn runtime_with(tools: impl IntoIterator<Item = DynamicTool>) -> Runtime {
    let mut runtime = Runtime::default();
    for tool in tools {
        runtime.registry_mut().register(tool).unwrap();
    }
    runtime
}

#[tokio::test]
async fn changed_versions_and_schemas_are_reported_by_name() {
    let path = temp("changed");
    let runtime = runtime_with([dynamic_lookup("1", json!({"type": "string"}), "abcdef")]);
    let run = run_of(runtime, open(&path, Mode::Rewrite));
    run.call("dyn.lookup@1", json!({"q": "x"}), &ToolContext::new())
        .await
        .unwrap();
    run.cassette().unwrap().finish().unwrap();

    // A new version of the tool: the miss says the version changed.
    let runtime = runtime_with([dynamic_lookup("2", json!({"type": "string"}), "abcdef")]);
    let run = run_of(runtime, open(&path, Mode::Replay));
    let err = run
        .call("dyn.lookup@2", json!({"q": "x"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`dyn.lookup` was recorded at version 1"),
        "{err}"
    );

    // Same version, changed schema: reported, and the replayed output is checked
    // against the current schema.
    let runtime = runtime_with([dynamic_lookup(
        "1",
        json!({"type": "string", "maxLength": 3}),
        "abc",
    )]);
    let run = run_of(runtime, open(&path, Mode::Replay));
    let err = run
        .call("dyn.lookup@1", json!({"q": "x"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidOutput, "{err}");
    let report = run.cassette().unwrap().finish().unwrap();
    assert!(
        report.warnings.iter().any(
            |w| matches!(w, CassetteWarning::SchemaChanged { key, .. } if key == "dyn.lookup@1")
        ),
        "{report:?}"
    );
}

#[tokio::test]
async fn model_calls_record_and_replay_in_order() {
    let path = temp("operations");
    let mut spec = ToolSpec::new(
        "llm.scripted",
        "complete",
        "model-1",
        SideEffects::External,
        "A scripted model.",
    );
    spec.input_schema = json!(true);
    spec.output_schema = json!(true);
    let model = Operation::new(spec);
    let ctx = ToolContext::new();
    let run = run_of(Runtime::default(), open(&path, Mode::Rewrite));
    for (turn, reply) in [(1, "thinking"), (2, "done")] {
        let out = run
            .perform(
                &model,
                || json!({"messages": [turn]}),
                &ctx,
                || async move { Ok(json!({"text": reply})) },
            )
            .await
            .unwrap();
        assert_eq!(out["text"], reply);
    }
    run.cassette().unwrap().finish().unwrap();

    let never = || async move {
        Err::<Value, _>(ToolError::Execution {
            key: "model".into(),
            message: "the model must not be called".into(),
        })
    };
    let run = run_of(Runtime::default(), open(&path, Mode::Replay));
    let first = run
        .perform(&model, || json!({"messages": [1]}), &ctx, never)
        .await
        .unwrap();
    assert_eq!(first, json!({"text": "thinking"}));
    let second = run
        .perform(&model, || json!({"messages": [2]}), &ctx, never)
        .await
        .unwrap();
    assert_eq!(second, json!({"text": "done"}));
    run.cassette().unwrap().finish().unwrap();

    // Out of position: turn 2 asked for first is a divergence, with the expected call.
    let run = run_of(Runtime::default(), open(&path, Mode::Replay));
    let err = run
        .perform(&model, || json!({"messages": [2]}), &ctx, never)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Divergence, "{err}");
    assert!(err.to_string().contains("call #0 comes first"), "{err}");
    // It names the cassette and the command that re-records it.
    assert!(
        err.to_string()
            .contains(&format!("(cassette {}; ", path.display()))
            && err
                .to_string()
                .contains("TACKLE_CASSETTE=review cargo test"),
        "{err}"
    );
    // A changed prompt is a divergence with a diff against what was expected.
    let err = run
        .perform(&model, || json!({"messages": [7]}), &ctx, never)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/messages/0: 1 -> 7"), "{err}");
    // The recording a divergence found out of position was put back: asked for in
    // their order, both turns are still served.
    for (turn, reply) in [(1, "thinking"), (2, "done")] {
        let out = run
            .perform(&model, || json!({"messages": [turn]}), &ctx, never)
            .await
            .unwrap();
        assert_eq!(out, json!({"text": reply}));
    }
}

/// An operation's input is made only when a stage needs it; when it cannot be made
/// (its input function fails), a run that would key or record the call by it fails the
/// call with `Execution` and records nothing, never a stand-in such as `null`. With
/// no stage that needs it (no cassette, no schema to check), the operation runs.
#[tokio::test]
async fn an_input_with_no_json_form_fails_the_call_and_is_never_recorded() {
    let path = temp("unmade");
    let mut spec = ToolSpec::new(
        "nautilus",
        "submit",
        "1",
        SideEffects::External,
        "Submits an order.",
    );
    // Typed on both sides, as a model completion's: no schema to check it against.
    spec.input_schema = json!(true);
    let submit = Operation::new(spec);
    let ctx = ToolContext::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let unmade = || Err::<Value, _>("a map with a non-string key");
    let code = || {
        let ran = Arc::clone(&ran);
        move || async move {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(json!("queued"))
        }
    };

    let run = run_of(Runtime::default(), open(&path, Mode::Rewrite));
    let err = run
        .perform(&submit, unmade, &ctx, code())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Execution, "{err}");
    assert!(
        err.to_string()
            .contains("the call's input has no JSON form: a map with a non-string key"),
        "{err}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "it never ran");
    run.cassette().unwrap().finish().unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file["interactions"], json!([]), "nothing recorded");

    // No cassette: nothing needs the view, and the operation runs.
    let plain = Run::new(&Arc::new(Runtime::default()));
    let out = plain.perform(&submit, unmade, &ctx, code()).await.unwrap();
    assert_eq!(out, json!("queued"));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// An effect whose output has no JSON view: recording it fails the call, and the
/// failure is what the cassette keeps (a journal told the call started learns how it
/// ended), so the replay gives the caller the same error. A live cassette neither
/// keys nor records: an operation whose input cannot be made still runs under it.
#[tokio::test]
async fn an_output_with_no_json_view_is_recorded_as_the_failure_the_caller_got() {
    use std::borrow::Cow;
    use tackle::call::Effect;
    use tackle::secrets::Scrubber;

    /// An effect whose output is a number that has no JSON form when odd.
    struct Odd;
    impl Effect for Odd {
        type Output = u32;
        type Error = ToolError;
        fn view(output: &u32) -> Result<Cow<'_, Value>, String> {
            if output % 2 == 1 {
                Err(format!("{output} is odd"))
            } else {
                Ok(Cow::Owned(json!(output)))
            }
        }
        fn from_view(view: Value) -> Result<u32, ToolError> {
            view.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| ToolError::Execution {
                    key: "odd".into(),
                    message: format!("not a number: {view}"),
                })
        }
        fn error_view<'e>(error: &'e ToolError, _key: &str) -> Cow<'e, ToolError> {
            Cow::Borrowed(error)
        }
        fn from_error(error: ToolError) -> ToolError {
            error
        }
        fn scrub(outcome: &mut Result<u32, ToolError>, scrubber: &Scrubber<'_>, _keep: bool) {
            if let Err(error) = outcome {
                error.for_each_text(&mut |text| {
                    scrubber.text(text);
                });
            }
        }
    }

    let path = temp("unviewable");
    let mut spec = ToolSpec::new("odd", "count", "1", SideEffects::Read, "Counts.");
    spec.input_schema = json!(true);
    spec.output_schema = json!(true);
    let count = Operation::<Odd>::typed(spec);
    let ctx = ToolContext::new();

    let run = run_of(Runtime::default(), open(&path, Mode::Rewrite));
    let two = run
        .perform(&count, || json!({"n": 2}), &ctx, || async { Ok(2) })
        .await
        .unwrap();
    assert_eq!(two, 2);
    let err = run
        .perform(&count, || json!({"n": 3}), &ctx, || async { Ok(3) })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("no JSON form to record: 3 is odd"),
        "{err}"
    );
    run.cassette().unwrap().finish().unwrap();

    let run = run_of(Runtime::default(), open(&path, Mode::Replay));
    let never = || async { Err(ToolError::Cancelled { key: "odd".into() }) };
    let two = run
        .perform(&count, || json!({"n": 2}), &ctx, never)
        .await
        .unwrap();
    assert_eq!(two, 2);
    let replayed = run
        .perform(&count, || json!({"n": 3}), &ctx, never)
        .await
        .unwrap_err();
    assert_eq!(replayed.to_string(), err.to_string());
    run.cassette().unwrap().finish().unwrap();

    // Live: nothing keys the call, so an input that cannot be made is never asked for.
    let run = run_of(Runtime::default(), open(&path, Mode::Live));
    let four = run
        .perform(
            &count,
            || Err::<Value, _>("no JSON form"),
            &ctx,
            || async { Ok(4) },
        )
        .await
        .unwrap();
    assert_eq!(four, 4);
}

#[tokio::test]
async fn secrets_never_reach_disk_and_redacted_inputs_still_match() {
    let path = temp("redaction");
    let secret = "s3cr3t-pa55word";
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let config = || {
        CassetteConfig::new()
            .with_secret(secret)
            .with_env_overrides(false)
    };
    let input = json!({"url": format!("https://x.invalid/?key={secret}&t={jwt}"), "authorization": "Bearer abc123.def-456"});

    let cassette = Cassette::open(&path, config().with_mode(Mode::Rewrite)).unwrap();
    let (run, ctx) = run_with(cassette);
    run.call("api.fetch", input.clone(), &ctx).await.unwrap();
    run.call(
        "bank.pay",
        json!({"to": "sk-live-ABCDEFGHIJKLMNOPQRST", "amount": 1}),
        &ctx,
    )
    .await
    .unwrap();
    run.cassette().unwrap().finish().unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    for leaked in [
        secret,
        jwt,
        "abc123.def-456",
        "sk-live-ABCDEFGHIJKLMNOPQRST",
    ] {
        assert!(
            !text.contains(leaked),
            "{leaked} reached the cassette:\n{text}"
        );
    }
    assert!(text.contains("[REDACTED]"));

    let cassette = Cassette::open(&path, config().with_mode(Mode::Replay)).unwrap();
    let (run, ctx) = run_with(cassette);
    let out = run.call("api.fetch", input, &ctx).await.unwrap();
    assert_eq!(out["echo"], "Bearer [REDACTED]", "outputs are redacted too");
    run.call(
        "bank.pay",
        json!({"to": "sk-live-ABCDEFGHIJKLMNOPQRST", "amount": 1}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(runs(&ctx), 0, "redacted inputs matched");
    run.cassette().unwrap().finish().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_are_all_recorded_and_all_replay() {
    let path = temp("concurrent");
    let (run, ctx) = run_with(open(&path, Mode::Rewrite));
    let calls = (0..1000).map(|i| {
        let (run, ctx) = (run.clone(), ctx.clone());
        tokio::spawn(async move {
            run.call(
                "bank.pay",
                json!({"to": format!("p{i}"), "amount": i}),
                &ctx,
            )
            .await
        })
    });
    for call in calls.collect::<Vec<_>>() {
        call.await.unwrap().unwrap();
    }
    assert_eq!(runs(&ctx), 1000);
    let report = run.cassette().unwrap().finish().unwrap();
    assert_eq!(report.recorded, 1000);

    let (run, ctx) = run_with(open(&path, Mode::Replay));
    let calls = (0..1000).rev().map(|i| {
        let (run, ctx) = (run.clone(), ctx.clone());
        tokio::spawn(async move {
            (
                i,
                run.call(
                    "bank.pay",
                    json!({"to": format!("p{i}"), "amount": i}),
                    &ctx,
                )
                .await,
            )
        })
    });
    for call in calls.collect::<Vec<_>>() {
        let (i, out) = call.await.unwrap();
        assert_eq!(out.unwrap(), json!(format!("paid {i} to p{i}")));
    }
    assert_eq!(runs(&ctx), 0);
    assert_eq!(run.cassette().unwrap().finish().unwrap().replayed, 1000);
}

#[tokio::test]
async fn a_changed_schema_is_noted_once_per_key_with_recordings_or_without() {
    let path = temp("schema-once");
    let runtime = runtime_with([dynamic_lookup("1", json!({"type": "string"}), "abc")]);
    let run = run_of(runtime, open(&path, Mode::Rewrite));
    for q in ["x", "y"] {
        run.call("dyn.lookup@1", json!({"q": q}), &ToolContext::new())
            .await
            .unwrap();
    }
    run.cassette().unwrap().finish().unwrap();

    // `@1` has recordings and a changed schema; `@2` has neither a recording nor a
    // recorded schema. Each is called three times, in a mode that records misses.
    let runtime = runtime_with([
        dynamic_lookup("1", json!({"type": "string", "maxLength": 5}), "abc"),
        dynamic_lookup("2", json!({"type": "string"}), "abc"),
    ]);
    let run = run_of(runtime, open(&path, Mode::New));
    for key in ["dyn.lookup@1", "dyn.lookup@2"] {
        for q in ["x", "y", "z"] {
            let out = run
                .call(key, json!({"q": q}), &ToolContext::new())
                .await
                .unwrap();
            assert_eq!(out, json!("abc"), "{key} {q}");
        }
    }
    let report = run.cassette().unwrap().finish().unwrap();
    let changed: Vec<&String> = report
        .warnings
        .iter()
        .filter_map(|w| match w {
            CassetteWarning::SchemaChanged { key, .. } => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(changed, ["dyn.lookup@1"], "{report:?}");
    // Both keys' schemas are kept in the file this run wrote, the changed one as
    // it is now.
    let file = tackle::replay::file::load(&path).unwrap();
    assert_eq!(
        file.tools.keys().collect::<Vec<_>>(),
        ["dyn.lookup@1", "dyn.lookup@2"]
    );
    assert_ne!(file.tools["dyn.lookup@1"], file.tools["dyn.lookup@2"]);
}

/// The minimum fee the pure tool below charges: a test "edits the tool" by changing it.
static FEE_MIN: AtomicUsize = AtomicUsize::new(25);

/// The fee for a transfer (a pure function: `side_effects = none`).
#[tool(namespace = "bank", side_effects = none)]
fn fee(amount: u64) -> Value {
    let min = FEE_MIN.load(Ordering::SeqCst) as u64;
    json!({"fee": (amount / 100).max(min), "min": min})
}

/// A script that asks for the fee of `amount`, then answers.
fn fee_script(amount: u64) -> tackle::agent::model::ScriptedModel {
    use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
    ScriptedModel::new([
        ChatResponse::calls(
            "Looking the fee up.",
            vec![ToolCallRequest {
                id: "c1".into(),
                name: "bank_fee".into(),
                arguments: json!({"amount": amount}),
            }],
        ),
        ChatResponse::text("The fee is what the tool said."),
    ])
}

/// Runs the fee agent with `model` over `cassette`; the cassette's finish.
async fn fee_run(
    cassette: Cassette,
    model: Arc<tackle::agent::model::ScriptedModel>,
) -> Result<tackle::replay::FinishReport, CassetteError> {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&runtime).with_cassette(cassette);
    let agent = tackle::Agent::with_model(model).tools([fee::KEY]);
    let state = agent
        .run(&run, "What is the fee for 2000?")
        .await
        .unwrap()
        .state;
    assert!(state.done, "{state:?}");
    run.finish()
}

/// Under replay, a pure tool runs and a scripted model is asked, and each outcome is
/// compared with its recording: a change to either fails the replay, naming both
/// with their JSON pointers, while the recorded outcomes keep the run on its track.
/// `with_recorded_results` keeps the specification's semantics (nothing runs).
#[tokio::test]
async fn a_replay_fails_naming_a_changed_pure_tool_and_a_changed_script() {
    let path = temp("checks");
    FEE_MIN.store(25, Ordering::SeqCst);
    let model = Arc::new(fee_script(2000));
    fee_run(open(&path, Mode::Rewrite), Arc::clone(&model))
        .await
        .unwrap();
    model.finish().unwrap();

    // Unchanged: the replay passes, and the script's turns were all used.
    let model = Arc::new(fee_script(2000));
    let report = fee_run(open(&path, Mode::Replay), Arc::clone(&model))
        .await
        .unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    model.finish().expect("a replay asks a scripted model too");

    // The tool's minimum and the script's amount both changed.
    FEE_MIN.store(30, Ordering::SeqCst);
    let changed = fee_run(open(&path, Mode::Replay), Arc::new(fee_script(2500))).await;
    let err = changed.unwrap_err();
    let CassetteError::Changed { calls, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(calls.len(), 2, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("`llm.scripted.complete@script`")
            && text.contains("~ /ok/tool_calls/0/arguments/amount: 2000 -> 2500"),
        "{text}"
    );
    assert!(
        text.contains("`bank.fee@1`") && text.contains("~ /ok/min: 25 -> 30"),
        "{text}"
    );
    assert!(
        text.contains("TACKLE_CASSETTE=review") && text.contains("cargo tackle review"),
        "{text}"
    );

    // The specification's recorded-result semantics stay available: nothing runs.
    let served = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false)
            .with_recorded_results(true),
    )
    .unwrap();
    let model = Arc::new(fee_script(2500));
    fee_run(served, Arc::clone(&model)).await.unwrap();
    assert_eq!(model.used(), 0, "a served replay never asks the model");
    FEE_MIN.store(25, Ordering::SeqCst);
}

/// Mode `check` runs `read` tools too; plain `replay` serves them.
#[tokio::test]
async fn mode_check_runs_read_tools_and_reports_their_changes() {
    let path = temp("check-reads");
    // A read of a service whose answer changes between the recording and the check.
    let runtime = |answer: &'static str| {
        let mut spec = ToolSpec::new("demo", "lookup", "1", SideEffects::Read, "Weather.");
        spec.input_schema =
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        spec.output_schema = json!({"type": "string"});
        runtime_with([DynamicTool::new(spec, move |_ctx, _input| async move {
            Ok::<_, String>(json!(answer))
        })])
    };
    let ctx = ToolContext::new();
    let run = run_of(runtime("sunny"), open(&path, Mode::Rewrite));
    run.call("demo.lookup", json!({"q": "oslo"}), &ctx)
        .await
        .unwrap();
    run.finish().unwrap();

    let run = run_of(runtime("rainy"), open(&path, Mode::Replay));
    let out = run
        .call("demo.lookup", json!({"q": "oslo"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "sunny", "replay serves a read as recorded");
    run.finish().unwrap();

    let run = run_of(runtime("rainy"), open(&path, Mode::Check));
    let out = run
        .call("demo.lookup", json!({"q": "oslo"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "sunny", "the caller gets the recording");
    let err = run.finish().unwrap_err().to_string();
    assert!(err.contains("~ /ok: \"sunny\" -> \"rainy\""), "{err}");
}

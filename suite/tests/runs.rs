//! A run is a value: what one task owns over a shared runtime, and the promises of
//! replay that come with it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tackle::agent::model::{ChatRequest, ChatResponse, FunctionModel, Role, ScriptedModel};
use tackle::agent::react::StopReason;
use tackle::approval::{ApprovalRequest, ApproveWith};
use tackle::replay::{load, CassetteError, CassetteWarning, Mode};
use tackle::{
    replay::CassetteConfig, tool, Agent, Cassette, Registry, Run, Runtime, ToolCall, ToolContext,
    ToolError, ToolErrorKind,
};

static LOOKUPS: AtomicUsize = AtomicUsize::new(0);
static CHARGES: AtomicUsize = AtomicUsize::new(0);

/// Looks a city up (a read: recorded-result).
#[tool(namespace = "runs", side_effects = read)]
fn lookup(city: String) -> String {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    format!("{city}: found")
}

/// Charges a card, once per key within a run.
#[tool(namespace = "runs", side_effects = write, idempotency_key = "key")]
fn charge(key: String, cents: u64) -> u64 {
    let _ = key;
    CHARGES.fetch_add(1, Ordering::SeqCst);
    cents
}

/// Waits until its run is cancelled.
#[tool(namespace = "runs", side_effects = none)]
async fn wait(ctx: &ToolContext) -> String {
    ctx.cancelled().await;
    "stopped".to_owned()
}

/// Sends a refund: asks for approval every time.
#[tool(namespace = "runs", side_effects = external, needs_approval)]
fn refund(cents: u64) -> u64 {
    cents
}

fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory_in(module_path!()).unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    let _ = std::fs::remove_file(&path);
    path
}

fn cassette(path: &PathBuf, mode: Mode) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false),
    )
    .unwrap()
}

#[tokio::test]
async fn once_with_no_file_records_reads_too_and_replays_them_offline() {
    let runtime = runtime();
    let ctx = ToolContext::new();
    let (once, rewrite) = (scratch("once"), scratch("rewrite"));
    for (path, mode) in [(&once, Mode::Once), (&rewrite, Mode::Rewrite)] {
        let run = Run::new(&runtime).with_cassette(cassette(path, mode));
        run.call("runs.lookup", json!({"city": "Oslo"}), &ctx)
            .await
            .unwrap();
        assert!(run.finish().unwrap().written);
    }
    let (a, b) = (load(&once).unwrap(), load(&rewrite).unwrap());
    assert_eq!(a.interactions.len(), 1, "`once` records the read");
    assert_eq!(
        a.interactions, b.interactions,
        "one test, recorded by `once` or `rewrite`, records the same"
    );
    let before = LOOKUPS.load(Ordering::SeqCst);
    let run = Run::new(&runtime).with_cassette(cassette(&once, Mode::Replay));
    let out = run
        .call("runs.lookup", json!({"city": "Oslo"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "Oslo: found");
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), before, "nothing ran live");
    let report = run.finish().unwrap();
    assert_eq!(report.replayed, 1);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[tokio::test]
async fn a_read_that_runs_live_during_a_replay_fails_the_run_at_its_end() {
    let runtime = runtime();
    let ctx = ToolContext::new();
    let path = scratch("ran-live");
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    run.call("runs.lookup", json!({"city": "Oslo"}), &ctx)
        .await
        .unwrap();
    run.finish().unwrap();

    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    run.call("runs.lookup", json!({"city": "Oslo"}), &ctx)
        .await
        .unwrap();
    // Not recorded: it runs (the test goes on), and the run fails at its end.
    run.call("runs.lookup", json!({"city": "Rome"}), &ctx)
        .await
        .unwrap();
    let error = run.finish().unwrap_err();
    assert!(matches!(error, CassetteError::RanLive { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("runs.lookup@1"), "{text}");
    assert!(
        text.contains(r#"{"city":"Rome"}"#),
        "names the call: {text}"
    );
    assert!(
        text.contains("TACKLE_CASSETTE=new"),
        "names the mode: {text}"
    );

    // Allowed explicitly, it is a warning.
    let allowed = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_live_reads(true)
            .with_env_overrides(false),
    )
    .unwrap();
    let run = Run::new(&runtime).with_cassette(allowed);
    run.call("runs.lookup", json!({"city": "Oslo"}), &ctx)
        .await
        .unwrap();
    run.call("runs.lookup", json!({"city": "Rome"}), &ctx)
        .await
        .unwrap();
    let report = run.finish().unwrap();
    assert!(matches!(
        report.warnings.as_slice(),
        [CassetteWarning::RanLive { key, .. }] if key == "runs.lookup@1"
    ));
}

#[test]
fn a_cassette_error_through_expect_prints_its_help() {
    let missing = Cassette::open(
        scratch("never-recorded"),
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap_err();
    let debug = format!("{missing:?}");
    assert!(
        debug.contains("record one with TACKLE_CASSETTE=once"),
        "{debug}"
    );
    assert!(!debug.contains("Missing {"), "{debug}");
}

#[tokio::test]
async fn an_empty_registry_says_the_tools_crate_may_not_be_linked() {
    let runtime = Runtime::new(Registry::default());
    let error = runtime
        .call("geo.lookup", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::NotFound);
    let text = error.to_string();
    assert!(text.contains("use my_tools as _;"), "{text}");
    assert!(text.contains("not be linked"), "{text}");
    // A registry with tools gives no such hint.
    let error = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .call("geo.nowhere", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert!(!error.to_string().contains("use my_tools"), "{error}");
}

/// A model that looks a city up, then answers with what it found.
fn lookup_model() -> Arc<
    FunctionModel<
        impl Fn(&ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> + Send + Sync,
    >,
> {
    Arc::new(FunctionModel::new("runs", |request: &ChatRequest| {
        let found = request
            .messages
            .iter()
            .find(|m| m.role == Role::Tool)
            .map(|m| m.content.clone());
        Ok(match found {
            None => ChatResponse::calls(
                "",
                vec![tackle::agent::model::ToolCallRequest::new(
                    "c1",
                    "runs_lookup",
                    json!({"city": "Oslo"}),
                )],
            ),
            Some(found) => ChatResponse::text(format!("I found {found}")),
        })
    }))
}

#[tokio::test]
async fn a_divergence_leads_with_the_diff_and_names_the_tool_whose_result_changed() {
    let path = scratch("divergence");
    let runtime = runtime();
    let agent = Agent::with_model(lookup_model()).tools(["runs.lookup"]);
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    agent.run(&run, "Find Oslo.").await.unwrap();
    run.finish().unwrap();

    // Change what the tool answered in the recording: the model's next request (which
    // holds the tool's result) no longer matches.
    let mut file = load(&path).unwrap();
    for interaction in &mut file.interactions {
        if interaction.key.starts_with("runs.lookup") {
            interaction.outcome = tackle::replay::Outcome::Ok(json!("Oslo: moved"));
        }
    }
    tackle::replay::file::save(&path, &file).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    let error = agent.run(&run, "Find Oslo.").await.unwrap_err();
    let text = error.to_string();
    let diff_at = text.find("/messages/3/content").expect("the diff is shown");
    assert!(
        text.find("Find Oslo.").is_none_or(|at| at > diff_at),
        "the diff comes first: {text}"
    );
    assert!(text.contains("`runs_lookup` (call `c1`)"), "{text}");
}

/// A recording holds each model request as what it adds to the run's previous one:
/// the tools' schemas and every message once, so a run's cassette grows with its
/// length. It replays as it was recorded.
#[tokio::test]
async fn model_requests_are_recorded_as_deltas_and_replay() {
    let path = scratch("deltas");
    let runtime = runtime();
    let agent = Agent::with_model(lookup_model()).tools(["runs.lookup"]);
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    let recorded = agent.run(&run, "Find Oslo.").await.unwrap().state;
    run.finish().unwrap();

    let file = load(&path).unwrap();
    let requests: Vec<&serde_json::Value> = file
        .interactions
        .iter()
        .filter(|i| i.key.starts_with("llm."))
        .map(|i| &i.input)
        .collect();
    assert_eq!(requests.len(), 2);
    // The first: the system prompt and the task, with the tools.
    assert_eq!(requests[0]["extends"], json!(0));
    assert_eq!(requests[0]["messages"].as_array().map(Vec::len), Some(2));
    assert!(requests[0]["tools"][0]["parameters"].is_object());
    // The second: the model's call and the tool's result only, no tools again.
    assert_eq!(requests[1]["extends"], json!(2));
    assert_eq!(requests[1]["messages"][1]["role"], json!("tool"));
    assert!(requests[1].get("tools").is_none());
    assert_ne!(requests[0]["digest"], requests[1]["digest"]);

    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    let replayed = agent.run(&run, "Find Oslo.").await.unwrap().state;
    run.finish().unwrap();
    assert_eq!(replayed.final_answer, recorded.final_answer);
    assert_eq!(replayed.trajectory, recorded.trajectory);
}

#[tokio::test]
async fn a_model_reply_is_never_shaped_and_a_200_kb_one_replays() {
    let path = scratch("long-reply");
    let runtime = runtime();
    let long = "word ".repeat(40_000); // 200 KB, about 50,000 estimated tokens
    let reply = long.clone();
    let model = Arc::new(FunctionModel::new("long", move |_: &ChatRequest| {
        Ok(ChatResponse::text(reply.clone()))
    }));
    let agent = Agent::with_model(model);
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    let live = agent.run(&run, "Say a lot.").await.unwrap().state;
    run.finish().unwrap();
    assert_eq!(live.final_answer.as_deref(), Some(long.as_str()));

    let silent = Arc::new(FunctionModel::new("long", |_: &ChatRequest| {
        Err(tackle::agent::model::ModelError::Failed {
            message: "not during a replay".into(),
        })
    }));
    let agent = Agent::with_model(silent);
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    let replayed = agent.run(&run, "Say a lot.").await.unwrap().state;
    run.finish().unwrap();
    assert_eq!(replayed, live);
}

/// A model's reply passes the door's limits as a tool's output does, measured where
/// its parts sit (no JSON is made for it): a reply over the runtime's `max_bytes`, or
/// a tool call whose arguments nest past `max_depth` counting the three levels they
/// sit at, is refused as `InvalidOutput`, live; one within them goes through.
#[tokio::test]
async fn a_model_reply_over_the_doors_limits_is_refused() {
    use tackle::agent::model::{complete, completion, Message, ModelError, ToolCallRequest};
    use tackle::bounds::{nested, Limits};

    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_limits(Limits {
                max_depth: 10,
                max_bytes: 1_000,
            }),
    );
    let ctx = ToolContext::new().with_grant("llm:*");
    let request = ChatRequest {
        messages: vec![Message::user("go")],
        ..ChatRequest::default()
    };
    let answer =
        |reply: ChatResponse| FunctionModel::new("m", move |_: &ChatRequest| Ok(reply.clone()));
    let run = Run::new(&runtime);
    let refused = |result: &Result<ChatResponse, ModelError>| match result {
        Err(ModelError::Door(error)) => error.kind() == ToolErrorKind::InvalidOutput,
        _ => false,
    };

    let long = answer(ChatResponse::text("x".repeat(2_000)));
    let result = complete(&run, &completion(&long), &long, &request, &ctx).await;
    assert!(refused(&result), "{result:?}");

    // Seven levels of arguments are ten in the reply: at the limit, let through;
    // eight are eleven, refused.
    for (levels, over) in [(7, false), (8, true)] {
        let call = ToolCallRequest::new("c1", "t", json!({ "x": nested(levels - 1) }));
        let deep = answer(ChatResponse::calls("", vec![call]));
        let result = complete(&run, &completion(&deep), &deep, &request, &ctx).await;
        assert_eq!(refused(&result), over, "{levels}: {result:?}");
    }

    let short = answer(ChatResponse::text("fits"));
    let reply = complete(&run, &completion(&short), &short, &request, &ctx)
        .await
        .unwrap();
    assert_eq!(reply.text, "fits");
}

#[tokio::test]
async fn runs_of_one_runtime_keep_their_own_cancellation_memory_and_approvals() {
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_approver(ApproveWith(|r: &ApprovalRequest| r.approve())),
    );
    let ctx = ToolContext::new();

    // Cancelling one run stops its calls, not another run's.
    let (a, b) = (
        Run::new(&runtime).with_grace(Duration::from_millis(10)),
        Run::new(&runtime),
    );
    let waiting = tokio::spawn({
        let (a, ctx) = (a.clone(), ctx.clone());
        async move { a.call("runs.wait", json!({}), &ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    a.cancel();
    assert_eq!(waiting.await.unwrap().unwrap(), "stopped");
    assert!(b
        .call("runs.lookup", json!({"city": "Bergen"}), &ctx)
        .await
        .is_ok());
    let late = a.call("runs.lookup", json!({"city": "Bergen"}), &ctx).await;
    assert_eq!(late.unwrap_err().kind(), ToolErrorKind::Cancelled);

    // Idempotency memory is the run's: the same key runs once per run.
    let before = CHARGES.load(Ordering::SeqCst);
    let charge = |run: &Run| {
        let run = run.clone();
        let ctx = ctx.clone();
        async move {
            run.execute(
                ToolCall::new("1", "runs.charge", json!({"key": "k1", "cents": 5})),
                &ctx,
            )
            .await
        }
    };
    let (c, d) = (Run::new(&runtime), Run::new(&runtime));
    charge(&c).await;
    charge(&c).await;
    charge(&d).await;
    assert_eq!(CHARGES.load(Ordering::SeqCst) - before, 2, "once per run");

    // Every run asks its own approver question; a run's decisions are its own.
    let e = Run::new(&runtime);
    assert_eq!(
        e.call("runs.refund", json!({"cents": 3}), &ctx)
            .await
            .unwrap(),
        json!(3)
    );
    let denied =
        Run::new(&runtime).with_approver(ApproveWith(|r: &ApprovalRequest| r.deny("not this run")));
    let refused: ToolError = denied
        .call("runs.refund", json!({"cents": 3}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ToolErrorKind::ApprovalDenied);
}

#[tokio::test]
async fn a_session_continues_the_conversation_and_replays_from_one_cassette() {
    let path = scratch("session");
    let runtime = runtime();
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::text("Hello, Ada."),
        ChatResponse::text("You are Ada."),
    ]));
    let agent = Agent::with_model(model.clone());
    // One run, two turns: the second continues from the first turn's messages.
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    let mut history = agent.run(&run, "I am Ada.").await.unwrap().messages;
    let turn = agent
        .run(&run, "Who am I?")
        .history(&history)
        .await
        .unwrap();
    history.extend(turn.messages);
    let second = turn.state;
    assert_eq!(second.final_answer.as_deref(), Some("You are Ada."));
    // The second request held the first turn.
    let asked = model.requests();
    let contents: Vec<&str> = asked[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(&contents[1..], ["I am Ada.", "Hello, Ada.", "Who am I?"]);
    run.finish().unwrap();
    assert_eq!(history.len(), 4);

    // Replayed whole from the one cassette, with the same script: the replay serves
    // the recorded replies and checks the script's turns against them.
    let script = Arc::new(ScriptedModel::new([
        ChatResponse::text("Hello, Ada."),
        ChatResponse::text("You are Ada."),
    ]));
    let agent = Agent::with_model(script.clone());
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    let first = agent.run(&run, "I am Ada.").await.unwrap().messages;
    let again = agent
        .run(&run, "Who am I?")
        .history(&first)
        .await
        .unwrap()
        .state;
    assert_eq!(again, second);
    assert_eq!(again.stop_reason, Some(StopReason::Done));
    run.finish().unwrap();
    script
        .finish()
        .expect("the replay used every scripted turn");
}

#[tokio::test]
async fn a_typed_answer_is_read_as_its_type_and_a_bad_one_is_a_repair_turn() {
    #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
    struct Weather {
        city: String,
        celsius: i32,
    }
    let runtime = runtime();
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::text("It is warm in Oslo."),
        ChatResponse::text(r#"{"city": "Oslo", "celsius": 21}"#),
    ]));
    let agent = Agent::with_model(model.clone()).answer::<Weather>();
    let answer = agent
        .run(&Run::new(&runtime), "Weather in Oslo?")
        .await
        .unwrap();
    assert_eq!(
        answer.value,
        Weather {
            city: "Oslo".into(),
            celsius: 21
        }
    );
    assert_eq!(
        answer.state.step_index, 2,
        "the prose reply was a repair turn"
    );
    let schema = model.requests()[0].response_schema.clone().unwrap();
    assert_eq!(schema["required"], json!(["city", "celsius"]));
}

//! Evals on cassettes: datasets as files, the evaluators and their reasons, cases run
//! as runs in each mode (replay, record, counterfactual, live), repeats, thresholds,
//! retries, a judge that records and replays, and the committed dataset that replays
//! offline under `CI`.
//!
//! The shop clerk's dataset is `tests/evals/shop.yaml`, its cassettes
//! `tests/cassettes/evals/shop/`; after an intended change to the clerk or its tools,
//! record them again with
//! `TACKLE_EVAL=record cargo test -p tackle-suite --test it_agents evals::the_committed_dataset`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::evals::{
    ArgumentMatch, Case, Dataset, DatasetError, Eval, EvalMode, EvalReport, EvaluatorSpec,
    ExpectedCall, TrajectoryMode,
};
use tackle::{tool, Agent, Runtime};

/// The refunds made (order ids), by every test of this module.
static REFUNDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether `fee` charges 5.90 for an order of 42.42 (a tool changed since a recording).
static SURCHARGE: AtomicBool = AtomicBool::new(false);

/// Looks an order up: its status.
#[tool(namespace = "shop", side_effects = read)]
fn find_order(order_id: String) -> Value {
    let status = if order_id == "A-200" {
        "packing"
    } else {
        "delivered"
    };
    json!({"order_id": order_id, "status": status})
}

/// Refunds an order (money leaves the shop).
#[tool(namespace = "shop", side_effects = external)]
fn refund(order_id: String, reason: String) -> String {
    REFUNDS.lock().unwrap().push(order_id.clone());
    format!("refunded {order_id} ({reason})")
}

/// The delivery fee of an order, in cents: free from 50.00.
#[tool(namespace = "shop", side_effects = none)]
fn delivery_fee(total_cents: u64) -> u64 {
    if total_cents == 4_242 && SURCHARGE.load(Ordering::SeqCst) {
        590
    } else if total_cents >= 5_000 {
        0
    } else {
        490
    }
}

pub(crate) fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory_in(module_path!()).unwrap())
}

/// A model's replies, computed from the request.
pub(crate) type Reply = fn(&ChatRequest) -> Result<ChatResponse, ModelError>;

/// The shop's agent over `reply` (every clerk is the model `clerk`, so a recording of
/// one serves another).
pub(crate) fn agent(reply: Reply) -> Agent {
    Agent::new(FunctionModel::new("clerk", reply)).tools([
        find_order::KEY,
        refund::KEY,
        delivery_fee::KEY,
    ])
}

/// The user's last message, and the tools' results since.
fn read(request: &ChatRequest) -> (String, Vec<String>) {
    let at = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let task = request.messages[at].content.clone();
    let results = request.messages[at..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect();
    (task, results)
}

fn order_of(task: &str) -> String {
    task.split_whitespace()
        .find(|w| w.starts_with("A-"))
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_owned()
        })
        .unwrap_or_default()
}

fn cents_of(task: &str) -> u64 {
    task.split_whitespace()
        .find_map(|w| {
            let w = w.trim_end_matches('?');
            let (whole, part) = w.split_once('.')?;
            Some(whole.parse::<u64>().ok()? * 100 + part.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

fn call(name: &str, arguments: Value) -> ChatResponse {
    ChatResponse::calls("", vec![ToolCallRequest::new("c1", name, arguments)])
}

/// The clerk: looks an order up before refunding it; answers fees from the tool.
pub(crate) fn clerk(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let (task, results) = read(request);
    let order = order_of(&task);
    Ok(if task.contains("refund") {
        match results.as_slice() {
            [] => call("shop_find_order", json!({"order_id": order})),
            [found] if found.contains("delivered") => call(
                "shop_refund",
                json!({"order_id": order, "reason": "damaged"}),
            ),
            [_] => ChatResponse::text(format!("Order {order} is not delivered yet: no refund.")),
            _ => ChatResponse::text(format!("Refunded {order}.")),
        }
    } else if task.contains("fee") {
        match results.first() {
            None => call("shop_delivery_fee", json!({"total_cents": cents_of(&task)})),
            Some(fee) if fee.trim() == "0" => ChatResponse::text("Delivery is free."),
            Some(fee) => {
                let cents: u64 = fee.trim().parse().unwrap_or(0);
                ChatResponse::text(format!(
                    "Delivery costs {}.{:02}.",
                    cents / 100,
                    cents % 100
                ))
            }
        }
    } else {
        ChatResponse::text("I can help with refunds and delivery fees.")
    })
}

/// A new prompt's clerk: refunds at once, without looking the order up.
pub(crate) fn hasty_clerk(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let (task, results) = read(request);
    if task.contains("refund") && results.is_empty() {
        return Ok(call(
            "shop_refund",
            json!({"order_id": order_of(&task), "reason": "customer asked"}),
        ));
    }
    clerk(request)
}

/// Another prompt's clerk: the same calls, a warmer answer.
fn warm_clerk(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let mut reply = clerk(request)?;
    if reply.tool_calls.is_empty() {
        reply.text = format!("{} Anything else?", reply.text);
    }
    Ok(reply)
}

pub(crate) fn shop() -> Dataset {
    Dataset::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evals/shop.yaml")).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-evals-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn refunds_of(order: &str) -> usize {
    REFUNDS
        .lock()
        .unwrap()
        .iter()
        .filter(|o| *o == order)
        .count()
}

fn case<'r>(report: &'r EvalReport, name: &str) -> &'r tackle::evals::CaseReport {
    report.cases.iter().find(|c| c.name == name).unwrap()
}

fn verdict<'r>(
    report: &'r EvalReport,
    case_name: &str,
    evaluator: &str,
) -> &'r tackle::evals::Evaluation {
    case(report, case_name).runs[0]
        .evaluations
        .iter()
        .find(|e| e.evaluator == evaluator)
        .unwrap()
}

#[test]
fn datasets_read_and_write_yaml_and_json_and_refuse_unknown_fields_with_their_line() {
    let dataset = shop();
    assert_eq!(dataset.cases.len(), 4);
    assert_eq!(Dataset::from_json(&dataset.to_json()).unwrap(), dataset);
    assert_eq!(Dataset::from_yaml(&dataset.to_yaml()).unwrap(), dataset);
    let dir = scratch("files");
    for file in ["shop.json", "shop.yml"] {
        dataset.save(dir.join(file)).unwrap();
        assert_eq!(Dataset::load(dir.join(file)).unwrap(), dataset, "{file}");
    }
    let typo = "name: t\ncases:\n  - name: a\n    input: hi\n    expected_outptu: x\n";
    let error = Dataset::from_yaml(typo).unwrap_err();
    assert!(
        matches!(&error, DatasetError::Parse { line: 5, .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("unknown field `expected_outptu`"),
        "{error}"
    );
    let typo = "{\"name\": \"t\",\n \"cases\": [],\n \"evaluator\": []}";
    let error = Dataset::from_json(typo).unwrap_err();
    assert!(
        matches!(&error, DatasetError::Parse { line: 3, .. }),
        "{error:?}"
    );
    let unknown = "name: t\nevaluators: [EqualsExpectd]\ncases: []\n";
    let error = Dataset::from_yaml(unknown).unwrap_err();
    assert!(error.to_string().contains("EqualsExpectd"), "{error}");
    let twice = "name: t\ncases:\n  - {name: a, input: x}\n  - {name: a, input: y}\n";
    assert!(Dataset::from_yaml(twice)
        .unwrap_err()
        .to_string()
        .contains("two cases are named `a`"));
    let error = Dataset::load(dir.join("shop.txt")).unwrap_err();
    assert!(matches!(error, DatasetError::UnknownFormat(_)), "{error:?}");
    // A dataset built in Rust is the same as one read.
    let built = Dataset::new("t").case(
        Case::new("a", "hi")
            .expect_output("hello")
            .expect_calls([ExpectedCall::new("shop.refund")]),
    );
    assert_eq!(Dataset::from_yaml(&built.to_yaml()).unwrap(), built);
}

/// `docs/evals.schema.json` is the schema of the datasets this version reads
/// (`TACKLE_UPDATE_GOLDEN=1` writes it).
#[test]
fn the_published_schema_is_the_datasets() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/evals.schema.json");
    let schema = serde_json::to_string_pretty(&Dataset::json_schema()).unwrap() + "\n";
    if std::env::var_os("TACKLE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &schema).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == schema,
        "docs/evals.schema.json is not the schema of Dataset: TACKLE_UPDATE_GOLDEN=1 cargo test -p tackle-suite --test it_agents evals::the_published_schema"
    );
    // And the shop's file is valid for it.
    let shop: Value = serde_json::to_value(shop()).unwrap();
    let validator = tackle::validate::SchemaValidator::compile(&Dataset::json_schema()).unwrap();
    let result = validator.validate(&shop);
    assert!(result.valid, "{:?}", result.errors);
}

/// The committed dataset replays from its committed cassettes: offline, nothing
/// written, no refund made.
#[tokio::test]
async fn the_committed_dataset_replays_offline() {
    let dataset = shop();
    let agent = agent(clerk);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cassettes/evals");
    let refunded = refunds_of("A-100");
    let report = Eval::new(&dataset, &agent, &runtime())
        .cassettes(&dir)
        .run()
        .await
        .unwrap();
    println!("{}", report.table());
    report.check().unwrap();
    assert_eq!(report.summary.cases, 4);
    if report.mode == EvalMode::Replay {
        assert_eq!(refunds_of("A-100"), refunded, "a replay makes no refund");
    }
    let refunded = case(&report, "refund a delivered order");
    assert_eq!(refunded.runs[0].output, Some(json!("Refunded A-100.")));
    assert_eq!(
        refunded.runs[0].trajectory.len(),
        3,
        "{:?}",
        refunded.runs[0].trajectory
    );
    assert_eq!(refunded.metadata["area"], json!("refunds"));
}

/// Record, replay, then ask new models against the recordings (counterfactual): a call
/// the recording does not hold is the case's divergence, and the write never runs.
#[tokio::test]
async fn record_replay_and_counterfactual_runs() {
    let dir = scratch("modes");
    let mut dataset = shop();
    // Orders of this test alone.
    for case in &mut dataset.cases {
        let text = serde_json::to_string(&case)
            .unwrap()
            .replace("A-100", "A-101");
        *case = serde_json::from_str(&text).unwrap();
    }
    let rt = runtime();
    let recorded = Eval::new(&dataset, &agent(clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Record)
        .run()
        .await
        .unwrap();
    recorded.check().unwrap();
    assert_eq!(refunds_of("A-101"), 1);
    assert!(dir.join("shop/refund_a_delivered_order.json").exists());

    let replayed = Eval::new(&dataset, &agent(clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Replay)
        .run()
        .await
        .unwrap();
    replayed.check().unwrap();
    assert_eq!(refunds_of("A-101"), 1, "a replay refunds nothing");
    for (a, b) in recorded.cases.iter().zip(&replayed.cases) {
        assert_eq!(a.runs[0].output, b.runs[0].output, "{}", a.name);
        assert_eq!(a.runs[0].trajectory, b.runs[0].trajectory, "{}", a.name);
    }

    // A new prompt that refunds at once: the recording holds no such call.
    let hasty = Eval::new(&dataset, &agent(hasty_clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Counterfactual)
        .run()
        .await
        .unwrap();
    assert_eq!(refunds_of("A-101"), 1, "a counterfactual run never writes");
    let diverged = &case(&hasty, "refund a delivered order").runs[0];
    assert!(!diverged.passed);
    let divergence = diverged.divergence.as_ref().expect("a divergence");
    assert_eq!(divergence.step, 0);
    assert_eq!(divergence.tool, "shop.refund@1");
    assert_eq!(
        divergence.arguments,
        json!({"order_id": "A-101", "reason": "customer asked"})
    );
    assert!(
        divergence.recorded.contains("reason"),
        "{}",
        divergence.recorded
    );
    assert!(hasty
        .check()
        .unwrap_err()
        .to_string()
        .contains("diverged at step 0"));
    // The fee cases did not change: they pass against the recording.
    assert!(case(&hasty, "delivery fee").passed);

    // A warmer prompt: the same calls, another answer.
    let warm = Eval::new(&dataset, &agent(warm_clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Counterfactual)
        .run()
        .await
        .unwrap();
    let run = &case(&warm, "refund a delivered order").runs[0];
    assert!(run.divergence.is_none());
    assert_eq!(run.output, Some(json!("Refunded A-101. Anything else?")));
    let equals = verdict(&warm, "refund a delivered order", "EqualsExpected");
    assert!(!equals.passed);
    assert_eq!(
        equals.reason,
        "~ /: expected \"Refunded A-101.\", got \"Refunded A-101. Anything else?\""
    );
    assert!(verdict(&warm, "refund a delivered order", "TrajectoryMatch").passed);
    assert_eq!(refunds_of("A-101"), 1);
}

/// A pure tool whose output changed since the recording fails the case's replay.
#[tokio::test]
async fn a_replay_fails_when_a_tool_changed() {
    let dir = scratch("changed");
    let dataset = Dataset::new("fees").case(
        Case::new("odd total", "What is the delivery fee on 42.42?")
            .expect_output("Delivery costs 4.90."),
    );
    let rt = runtime();
    let agent = agent(clerk);
    let recorded = Eval::new(&dataset, &agent, &rt)
        .cassettes(&dir)
        .mode(EvalMode::Record)
        .run()
        .await
        .unwrap();
    recorded.check().unwrap();
    SURCHARGE.store(true, Ordering::SeqCst);
    let replayed = Eval::new(&dataset, &agent, &rt)
        .cassettes(&dir)
        .mode(EvalMode::Replay)
        .run()
        .await
        .unwrap();
    SURCHARGE.store(false, Ordering::SeqCst);
    let run = &replayed.cases[0].runs[0];
    assert!(!run.passed);
    let error = run.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("shop.delivery_fee@1") && error.contains("490 -> 590"),
        "{error}"
    );
    // A case with no cassette says how to record one.
    let missing = Eval::new(&dataset, &agent, &rt)
        .cassettes(scratch("none"))
        .mode(EvalMode::Replay)
        .run()
        .await
        .unwrap();
    assert!(missing.cases[0].runs[0]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("TACKLE_EVAL=record"));
}

/// Each trajectory mode and argument matcher, and the first difference in the reason.
#[tokio::test]
async fn trajectory_modes_and_argument_matchers() {
    let find = ExpectedCall::with("shop.find_order", json!({"order_id": "A-300"}));
    let refund = ExpectedCall::with("shop.refund", json!({"order_id": "A-300"}));
    let fee = ExpectedCall::new("shop.delivery_fee");
    let trajectory = |mode, matcher| EvaluatorSpec::TrajectoryMatch {
        mode,
        arguments: [("shop.refund".to_owned(), matcher)].into(),
        default_arguments: ArgumentMatch::Exact,
    };
    use ArgumentMatch::{Exact, Ignore, Superset};
    use TrajectoryMode::{Strict, Subset, Unordered};
    let checks: Vec<(&str, Vec<ExpectedCall>, EvaluatorSpec, bool, &str)> = vec![
        ("in order", vec![find.clone(), refund.clone()], trajectory(Strict, Superset), true, "the 2 expected call(s), in order"),
        ("exact arguments", vec![find.clone(), refund.clone()], trajectory(Strict, Exact), false,
         "call #2: expected shop.refund {\"order_id\":\"A-300\"}, made shop.refund@1 {\"order_id\":\"A-300\",\"reason\":\"damaged\"}"),
        ("reversed", vec![refund.clone(), find.clone()], trajectory(Strict, Ignore), false,
         "call #1: expected shop.refund {\"order_id\":\"A-300\"}, made shop.find_order@1 {\"order_id\":\"A-300\"}"),
        ("reversed, any order", vec![refund.clone(), find.clone()], trajectory(Unordered, Ignore), true, "2 call(s) matched (unordered)"),
        ("one missing", vec![find.clone()], trajectory(Unordered, Ignore), false,
         "made, not expected: shop.refund@1 {\"order_id\":\"A-300\",\"reason\":\"damaged\"}"),
        ("subset", vec![find.clone(), refund.clone(), fee.clone()], trajectory(Subset, Superset), true, "2 call(s) matched (subset)"),
        ("superset", vec![refund.clone()], trajectory(TrajectoryMode::Superset, Superset), true, "1 call(s) matched (superset)"),
        ("superset missing", vec![fee.clone()], trajectory(TrajectoryMode::Superset, Ignore), false,
         "expected, not made: shop.delivery_fee"),
        ("tools", vec![refund.clone(), find.clone()], EvaluatorSpec::ToolCorrectness, true, "the 2 expected tool call(s)"),
        ("tools missing", vec![find.clone(), fee.clone()], EvaluatorSpec::ToolCorrectness, false,
         "not called: shop.delivery_fee; not expected: shop.refund@1"),
    ];
    let mut dataset = Dataset::new("trajectories");
    for (name, calls, spec, _, _) in &checks {
        dataset = dataset.case(
            Case::new(*name, "Please refund order A-300, it broke.")
                .expect_calls(calls.clone())
                .evaluator(spec.clone()),
        );
    }
    let report = Eval::new(&dataset, &agent(clerk), &runtime())
        .mode(EvalMode::Live)
        .concurrency(3)
        .run()
        .await
        .unwrap();
    for (name, _, spec, passed, reason) in &checks {
        let evaluation = verdict(&report, name, spec.name());
        assert_eq!(evaluation.passed, *passed, "{name}: {evaluation:?}");
        assert_eq!(evaluation.reason, *reason, "{name}");
    }
    // Scores: the share matched.
    assert_eq!(
        verdict(&report, "one missing", "TrajectoryMatch").score,
        0.5
    );
    assert_eq!(
        verdict(&report, "tools missing", "ToolCorrectness").score,
        0.5
    );
}

/// The answer and budget evaluators, each with its reason.
#[tokio::test]
async fn answer_and_budget_evaluators_say_why() {
    let dataset = Dataset::new("answers").case(
        Case::new("fee", "What is the delivery fee on 12.00?")
            .evaluator(EvaluatorSpec::Equals {
                value: json!("Delivery costs 4.90."),
            })
            .evaluator(EvaluatorSpec::contains("4.90"))
            .evaluator(EvaluatorSpec::Contains {
                value: json!("DELIVERY"),
                case_sensitive: false,
            })
            .evaluator(EvaluatorSpec::MatchesSchema {
                schema: json!({"type": "string", "maxLength": 10}),
            })
            .evaluator(EvaluatorSpec::MaxToolCalls { max: 0 })
            .evaluator(EvaluatorSpec::MaxModelRequests { max: 2 })
            .evaluator(EvaluatorSpec::MaxDuration { seconds: 60.0 })
            .evaluator(EvaluatorSpec::MaxTokens {
                input: None,
                output: None,
                total: Some(10),
            }),
    );
    let report = Eval::new(&dataset, &agent(clerk), &runtime())
        .mode(EvalMode::Live)
        .evaluator(tackle::evals::IsInstance::<String>::of())
        .evaluator(tackle::evals::evaluator_fn("Short", |o| {
            let n = o.output.and_then(Value::as_str).map_or(0, str::len);
            tackle::evals::Evaluation::of("Short", n < 10, format!("{n} characters"))
        }))
        .run()
        .await
        .unwrap();
    let run = &report.cases[0].runs[0];
    let found: Vec<(&str, bool, &str)> = run
        .evaluations
        .iter()
        .map(|e| (e.evaluator.as_str(), e.passed, e.reason.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("Equals", true, "equal"),
            ("Contains", true, "contains \"4.90\""),
            ("Contains", true, "contains \"DELIVERY\""),
            (
                "MatchesSchema",
                false,
                "at /: \"Delivery costs 4.90.\" is longer than 10 characters"
            ),
            ("MaxToolCalls", false, "1 tool calls (at most 0)"),
            ("MaxModelRequests", true, "2 model requests (at most 2)"),
            ("MaxDuration", true, found[6].2),
            ("MaxTokens", true, "0 input + 0 output tokens"),
            ("IsInstance<string>", true, "valid"),
            ("Short", false, "20 characters"),
        ]
    );
    assert!(!report.cases[0].passed);
    let failure = report.check().unwrap_err().to_string();
    assert!(failure.contains("case `fee`"), "{failure}");
    assert!(
        failure.contains("MaxToolCalls: 1 tool calls (at most 0)"),
        "{failure}"
    );
}

/// Repeats against a case pass rate, the run's pass rate, and retries of a model that
/// fails transiently.
#[tokio::test]
async fn repeats_thresholds_and_retries() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    // Every fourth run answers wrongly.
    fn flaky(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut reply = clerk(request)?;
        if reply.tool_calls.is_empty() && CALLS.fetch_add(1, Ordering::SeqCst) % 4 == 3 {
            reply.text = "Delivery costs something.".to_owned();
        }
        Ok(reply)
    }
    let dataset = Dataset::new("flaky")
        .evaluator(EvaluatorSpec::EqualsExpected)
        .case(
            Case::new("fee", "What is the delivery fee on 12.00?")
                .expect_output("Delivery costs 4.90."),
        );
    let rt = runtime();
    let run = |rate: f64| {
        let dataset = dataset.clone();
        let rt = Arc::clone(&rt);
        async move {
            CALLS.store(0, Ordering::SeqCst);
            Eval::new(&dataset, &agent(flaky), &rt)
                .mode(EvalMode::Live)
                .repeat(4)
                .concurrency(1)
                .case_pass_rate(rate)
                .run()
                .await
                .unwrap()
        }
    };
    let lenient = run(0.75).await;
    assert_eq!(lenient.cases[0].runs.len(), 4);
    assert_eq!(lenient.cases[0].pass_rate, 0.75);
    assert!(lenient.passed());
    let strict = run(0.8).await;
    assert!(!strict.passed());
    let failure = strict.check().unwrap_err().to_string();
    assert!(
        failure.contains("case `fee` (75% of 4 run(s) passed)"),
        "{failure}"
    );
    assert!(failure.contains("EqualsExpected: ~ /: expected \"Delivery costs 4.90.\", got \"Delivery costs something.\""), "{failure}");

    // A model that answers 503 on its first request of each case: retried.
    static FIRST: AtomicUsize = AtomicUsize::new(0);
    fn unavailable_once(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if request.messages.iter().all(|m| m.role != Role::Tool)
            && FIRST.fetch_add(1, Ordering::SeqCst).is_multiple_of(2)
        {
            return Err(ModelError::Status {
                status: 503,
                body: "busy".into(),
            });
        }
        clerk(request)
    }
    let retried = Eval::new(&dataset, &agent(unavailable_once), &rt)
        .mode(EvalMode::Live)
        .run()
        .await
        .unwrap();
    retried.check().unwrap();
    FIRST.store(0, Ordering::SeqCst);
    let unretried = Eval::new(&dataset, &agent(unavailable_once), &rt)
        .mode(EvalMode::Live)
        .retries(0)
        .run()
        .await
        .unwrap();
    assert!(unretried.cases[0].runs[0]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("503"));
}

/// A judge's call goes through the case's run: recorded with it, replayed without
/// asking the judge again.
#[tokio::test]
async fn a_judge_records_and_replays() {
    static JUDGED: AtomicUsize = AtomicUsize::new(0);
    fn judge(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        JUDGED.fetch_add(1, Ordering::SeqCst);
        let shown = &request.messages[1].content;
        assert!(
            shown.contains("<rubric>\nStates a price.\n</rubric>"),
            "{shown}"
        );
        let pass = shown.contains("4.90");
        Ok(ChatResponse::text(format!(
            "```json\n{{\"pass\": {pass}, \"score\": {}, \"reason\": \"names a price\"}}\n```",
            if pass { 0.9 } else { 0.1 }
        )))
    }
    let dir = scratch("judge");
    let dataset = Dataset::from_yaml(
        "name: judged\nevaluators:\n  - LLMJudge: {rubric: States a price.}\ncases:\n  - {name: fee, input: What is the delivery fee on 12.00?}\n",
    )
    .unwrap();
    let rt = runtime();
    let agent = agent(clerk);
    // Without a judge, the run does not start.
    let error = Eval::new(&dataset, &agent, &rt)
        .cassettes(&dir)
        .run()
        .await
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("give the run a judge model"),
        "{error}"
    );
    let recorded = Eval::new(&dataset, &agent, &rt)
        .cassettes(&dir)
        .mode(EvalMode::Record)
        .judge(FunctionModel::new("judge", judge))
        .run()
        .await
        .unwrap();
    recorded.check().unwrap();
    assert_eq!(JUDGED.load(Ordering::SeqCst), 1);
    let evaluation = verdict(&recorded, "fee", "LLMJudge");
    assert_eq!(
        (evaluation.score, evaluation.reason.as_str()),
        (0.9, "names a price")
    );
    let replayed = Eval::new(&dataset, &agent, &rt)
        .cassettes(&dir)
        .mode(EvalMode::Replay)
        .judge(FunctionModel::new("judge", judge))
        .run()
        .await
        .unwrap();
    replayed.check().unwrap();
    assert_eq!(
        JUDGED.load(Ordering::SeqCst),
        1,
        "the replay asked no judge"
    );
    assert_eq!(verdict(&replayed, "fee", "LLMJudge"), evaluation);
}

/// The JSON report reads back whole, with its format version.
#[tokio::test]
async fn the_json_report_is_stable() {
    let dataset = shop();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cassettes/evals");
    let report = Eval::new(&dataset, &agent(clerk), &runtime())
        .cassettes(&dir)
        .mode(EvalMode::Replay)
        .run()
        .await
        .unwrap();
    let path = scratch("report").join("report.json");
    report.write_json(&path).unwrap();
    let read = EvalReport::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(read, report);
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["format"], json!(1));
    assert_eq!(json["mode"], json!("replay"));
    assert_eq!(
        json["cases"][0]["runs"][0]["trajectory"][1]["calls"][0]["tool"],
        json!("shop.refund@1")
    );
    assert!(
        report.table().contains("4 of 4 case(s) passed"),
        "{}",
        report.table()
    );
}

/// A run against its baseline: worse, better and changed cases, with the review's
/// JSON-pointer lines.
#[tokio::test]
async fn a_report_against_its_baseline() {
    let dataset = shop();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cassettes/evals");
    let rt = runtime();
    let run = |reply: Reply, mode| {
        let (dataset, dir, rt) = (dataset.clone(), dir.clone(), Arc::clone(&rt));
        async move {
            Eval::new(&dataset, &agent(reply), &rt)
                .cassettes(&dir)
                .mode(mode)
                .run()
                .await
                .unwrap()
        }
    };
    let baseline = run(clerk, EvalMode::Replay).await;
    assert!(baseline.diff(&baseline).is_empty());
    let warm = run(warm_clerk, EvalMode::Counterfactual).await;
    let diff = warm.diff(&baseline);
    assert_eq!(diff.worse.len(), 4, "{}", diff.text());
    let refund = diff
        .worse
        .iter()
        .find(|c| c.case == "refund a delivered order")
        .unwrap();
    assert!(refund.passed_before && !refund.passed_after);
    assert!(
        refund
            .evaluators
            .iter()
            .any(|l| l.starts_with("EqualsExpected: pass -> FAIL (~ /: expected")),
        "{refund:?}"
    );
    assert_eq!(
        refund.changes,
        [
            "~ /output: \"Refunded A-100.\" -> \"Refunded A-100. Anything else?\"",
            "~ /trajectory/2/thought: \"Refunded A-100.\" -> \"Refunded A-100. Anything else?\""
        ]
    );
    // The other way round, the same cases are better.
    let back = baseline.diff(&warm);
    assert_eq!(back.better.len(), 4);
    assert!(back.worse.is_empty());
    assert!(
        diff.text()
            .contains("worse: `refund a delivered order` (pass"),
        "{}",
        diff.text()
    );
}

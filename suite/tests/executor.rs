//! The executor (a run's batches): batches in call order, effect-aware scheduling, time
//! limits, cancellation, isolation, idempotency and streaming, all through the door.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::audit::Execution;
use tackle::events::{event_queue, ToolEventKind};
use tackle::spec::ExecutionMode;
use tackle::{
    registry::DynamicTool, tool, Registry, Run, Runtime, SideEffects, ToolCall, ToolContext,
    ToolError, ToolErrorKind, ToolSpec,
};

/// Counts calls running at once and remembers the highest count.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

/// A tool that takes `{"n": int}`, notes when it starts and ends in `log` (with its
/// name and `n`), and sleeps `ms` in between while counted by `gauge`.
fn sleeper(
    name: &str,
    effects: SideEffects,
    mode: ExecutionMode,
    ms: u64,
    gauge: Arc<Gauge>,
    log: Arc<Mutex<Vec<String>>>,
) -> DynamicTool {
    let mut spec = ToolSpec::new("t", name, "1", effects, "Sleeps and logs.");
    spec.input_schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    spec.execution_mode = mode;
    let label = name.to_owned();
    DynamicTool::new(spec, move |_ctx, input: Value| {
        let (gauge, log, label) = (gauge.clone(), log.clone(), label.clone());
        async move {
            let n = input["n"].as_i64().unwrap_or(-1);
            log.lock().unwrap().push(format!("start {label} {n}"));
            gauge.enter();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            gauge.leave();
            log.lock().unwrap().push(format!("end {label} {n}"));
            Ok::<_, String>(json!(n))
        }
    })
}

fn runtime(tools: Vec<DynamicTool>) -> Arc<Runtime> {
    let mut registry = Registry::default();
    for t in tools {
        registry.register(t).unwrap();
    }
    Arc::new(Runtime::new(registry))
}

fn calls(key: &str, range: std::ops::Range<i64>) -> Vec<ToolCall> {
    range
        .map(|n| ToolCall::new(format!("c{n}"), key, json!({ "n": n })))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_come_back_in_call_order_with_peak_concurrency_at_the_bound() {
    let gauge = Arc::new(Gauge::default());
    let log = Arc::default();
    let rt = runtime(vec![sleeper(
        "read",
        SideEffects::Read,
        ExecutionMode::Auto,
        20,
        gauge.clone(),
        log,
    )]);
    let mut batch = calls("t.read@1", 0..20);
    // A call that cannot resolve keeps its slot and fails there.
    batch.insert(7, ToolCall::new("missing", "t.nope@1", json!({})));
    let outcomes = Run::new(&rt)
        .with_max_parallel(4)
        .execute_batch(batch, &ToolContext::new())
        .await;
    assert_eq!(outcomes.len(), 21);
    assert_eq!(outcomes[7].id, "missing");
    assert_eq!(
        outcomes[7].result().as_ref().unwrap_err().kind(),
        ToolErrorKind::NotFound
    );
    let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
    let mut expected: Vec<String> = (0..20).map(|n| format!("c{n}")).collect();
    expected.insert(7, "missing".into());
    assert_eq!(ids, expected);
    for o in outcomes.iter().filter(|o| o.id != "missing") {
        let n: i64 = o.id[1..].parse().unwrap();
        assert_eq!(o.result().as_ref().unwrap(), &json!(n));
    }
    assert_eq!(
        gauge.peak(),
        4,
        "read tools run in parallel, never more than max_parallel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_tools_run_one_at_a_time_in_call_order_unless_they_opt_in() {
    let writes = Arc::new(Gauge::default());
    let opted = Arc::new(Gauge::default());
    let log = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(vec![
        sleeper(
            "write",
            SideEffects::Write,
            ExecutionMode::Auto,
            10,
            writes.clone(),
            log.clone(),
        ),
        sleeper(
            "send",
            SideEffects::External,
            ExecutionMode::Parallel,
            20,
            opted.clone(),
            Arc::default(),
        ),
    ]);
    let mut batch = calls("t.write@1", 0..6);
    batch.extend(calls("t.send@1", 0..4));
    let outcomes = Run::new(&rt)
        .with_max_parallel(8)
        .execute_batch(batch, &ToolContext::new())
        .await;
    assert!(outcomes.iter().all(|o| o.result().is_ok()));
    assert_eq!(writes.peak(), 1, "write tools never overlap");
    let expected: Vec<String> = (0..6)
        .flat_map(|n| [format!("start write {n}"), format!("end write {n}")])
        .collect();
    assert_eq!(*log.lock().unwrap(), expected, "and run in call order");
    assert!(
        opted.peak() > 1,
        "an external tool with execution_mode = parallel runs alongside others"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_tools_run_alone() {
    let gauge = Arc::new(Gauge::default());
    let log = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(vec![
        sleeper(
            "read",
            SideEffects::Read,
            ExecutionMode::Auto,
            15,
            gauge.clone(),
            log.clone(),
        ),
        sleeper(
            "migrate",
            SideEffects::None,
            ExecutionMode::Sequential,
            15,
            gauge.clone(),
            log.clone(),
        ),
    ]);
    let mut batch = calls("t.read@1", 0..3);
    batch.push(ToolCall::new("m", "t.migrate@1", json!({"n": 99})));
    batch.extend(calls("t.read@1", 3..6));
    let outcomes = Run::new(&rt)
        .execute_batch(batch, &ToolContext::new())
        .await;
    assert!(outcomes.iter().all(|o| o.result().is_ok()));
    let log = log.lock().unwrap().clone();
    let start = log.iter().position(|l| l == "start migrate 99").unwrap();
    let end = log.iter().position(|l| l == "end migrate 99").unwrap();
    assert_eq!(
        end,
        start + 1,
        "nothing starts or ends while it runs: {log:?}"
    );
    assert_eq!(
        log[..start].iter().filter(|l| l.starts_with("end")).count(),
        3,
        "every earlier call finished first: {log:?}"
    );
    assert!(
        gauge.peak() >= 2,
        "the reads around it still run in parallel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_fails_alone() {
    let mut spec = ToolSpec::new("t", "boom", "1", SideEffects::None, "Panics on n = 2.");
    spec.input_schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let rt = runtime(vec![DynamicTool::new(
        spec,
        |_c, input: Value| async move {
            tokio::task::yield_now().await;
            if input["n"] == 2 {
                panic!("tool bug");
            }
            Ok::<_, String>(input["n"].clone())
        },
    )]);
    let outcomes = Run::new(&rt)
        .execute_batch(calls("t.boom@1", 0..5), &ToolContext::new())
        .await;
    let kinds: Vec<Option<ToolErrorKind>> = outcomes
        .iter()
        .map(|o| o.result().as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        [None, None, Some(ToolErrorKind::Panicked), None, None]
    );
    assert_eq!(outcomes[4].result().as_ref().unwrap(), &json!(4));
}

fn slow(name: &str, timeout_ms: Option<u64>, cooperative: bool) -> DynamicTool {
    let mut spec = ToolSpec::new("t", name, "1", SideEffects::None, "Takes ten seconds.");
    spec.timeout_ms = timeout_ms;
    DynamicTool::new(spec, move |ctx: ToolContext, _input| async move {
        if cooperative {
            tokio::select! {
                () = ctx.cancelled() => return Err("stopped on request".to_owned()),
                () = tokio::time::sleep(Duration::from_secs(10)) => {}
            }
        } else {
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Ok(json!("done"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_limits_come_from_the_tool_or_the_runs_default() {
    let rt = runtime(vec![
        slow("own_limit", Some(30), false),
        slow("no_limit", None, false),
    ]);
    let started = Instant::now();
    let outcomes = Run::new(&rt)
        .with_default_timeout(Duration::from_millis(60))
        .execute_batch(
            vec![
                ToolCall::new("a", "t.own_limit@1", json!({})),
                ToolCall::new("b", "t.no_limit@1", json!({})),
            ],
            &ToolContext::new(),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let errors: Vec<String> = outcomes
        .iter()
        .map(|o| o.result().as_ref().unwrap_err().to_string())
        .collect();
    assert_eq!(
        errors,
        [
            "`t.own_limit@1` timed out after 30 ms",
            "`t.no_limit@1` timed out after 60 ms"
        ]
    );
    assert_eq!(
        outcomes[0].result().as_ref().unwrap_err().kind(),
        ToolErrorKind::Timeout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_tools_and_the_stubborn_are_aborted_after_the_grace_window() {
    let rt = runtime(vec![
        slow("polite", None, true),
        slow("stubborn", None, false),
    ]);
    // The grace window is the default one: 50 ms (seed 003).
    assert_eq!(tackle::context::DEFAULT_GRACE, Duration::from_millis(50));
    let run = Run::new(&rt);
    let token = run.cancellation_token();
    let cancelled_at = Arc::new(Mutex::new(None));
    let at = cancelled_at.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        *at.lock().unwrap() = Some(Instant::now());
        token.cancel();
    });
    let outcomes = run
        .execute_batch(
            vec![
                ToolCall::new("p", "t.polite@1", json!({})),
                ToolCall::new("s", "t.stubborn@1", json!({})),
            ],
            &ToolContext::new(),
        )
        .await;
    let finished = Instant::now();
    let cancelled_at = cancelled_at.lock().unwrap().expect("cancelled");
    let polite = outcomes[0].result().as_ref().unwrap_err();
    assert_eq!(polite.kind(), ToolErrorKind::Execution);
    assert!(polite.to_string().contains("stopped on request"));
    let stubborn = outcomes[1].result().as_ref().unwrap_err();
    assert_eq!(stubborn.kind(), ToolErrorKind::Aborted, "{stubborn}");
    let after_cancel = finished - cancelled_at;
    assert!(
        after_cancel >= Duration::from_millis(50) && after_cancel <= Duration::from_millis(70),
        "aborted {after_cancel:?} after the cancel; the grace window is 50 ms (+20 ms allowed)"
    );
    // A call made after the cancel never starts.
    let later = run
        .execute(
            ToolCall::new("x", "t.polite@1", json!({})),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(
        later.result().as_ref().unwrap_err().kind(),
        ToolErrorKind::Cancelled
    );
}

/// A tool that blocks its thread for 400 ms without yielding once (side effects
/// `effects`), counting the calls that ran to their end in `landed`.
fn unyielding(name: &str, effects: SideEffects, landed: Arc<AtomicUsize>) -> DynamicTool {
    let spec = ToolSpec::new("t", name, "1", effects, "Blocks its thread.");
    DynamicTool::new(spec, move |_ctx: ToolContext, _input| {
        let landed = landed.clone();
        async move {
            std::thread::sleep(Duration::from_millis(400));
            landed.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!("done"))
        }
    })
}

/// A tool that never yields cannot be stopped where it runs: it finishes after its
/// run was cancelled and the grace window passed. A read's late result is dropped for
/// `Aborted` (as if stopped); a write's outcome is kept as it landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_yields_is_not_reported_done_after_its_run_was_cancelled() {
    let landed = Arc::new(AtomicUsize::new(0));
    let rt = runtime(vec![
        unyielding("reader", SideEffects::Read, landed.clone()),
        unyielding("writer", SideEffects::External, landed.clone()),
    ]);
    for (key, aborted) in [("t.reader@1", true), ("t.writer@1", false)] {
        let run = Run::new(&rt);
        let token = run.cancellation_token();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            token.cancel();
        });
        let outcome = run
            .execute(ToolCall::new("c", key, json!({})), &ToolContext::new())
            .await;
        canceller.join().unwrap();
        if aborted {
            let error = outcome.result().as_ref().unwrap_err();
            assert_eq!(error.kind(), ToolErrorKind::Aborted, "{key}: {error}");
        } else {
            assert_eq!(outcome.result().as_ref().unwrap(), &json!("done"), "{key}");
        }
    }
    // Both ran to their end: the write's effect is the one the outcome reports.
    assert_eq!(landed.load(Ordering::SeqCst), 2);
}

static PLACED: AtomicUsize = AtomicUsize::new(0);

/// Place an order; placing the same order twice in a run places it once.
#[tool(namespace = "shop", side_effects = external, idempotency_key = "order_id")]
async fn place(order_id: String, qty: u32) -> String {
    PLACED.fetch_add(1, Ordering::SeqCst);
    format!("placed {order_id} x{qty}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_runs_once_per_run() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&rt);
    let batch = vec![
        ToolCall::new("1", "shop.place", json!({"order_id": "A", "qty": 1})),
        ToolCall::new("2", "shop.place", json!({"order_id": "A", "qty": 5})),
        ToolCall::new("3", "shop.place", json!({"order_id": "B", "qty": 2})),
    ];
    let outcomes = run.execute_batch(batch, &ToolContext::new()).await;
    assert_eq!(PLACED.load(Ordering::SeqCst), 2, "A once, B once");
    let results: Vec<&Value> = outcomes
        .iter()
        .map(|o| o.result().as_ref().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            &json!("placed A x1"),
            &json!("placed A x1"),
            &json!("placed B x2")
        ]
    );
    let executions: Vec<Execution> = outcomes.iter().map(|o| o.report.execution).collect();
    assert_eq!(
        executions,
        [Execution::Live, Execution::Deduplicated, Execution::Live]
    );
    // Later batches of the same run remember it; a new run does not.
    let again = run
        .execute(
            ToolCall::new("4", "shop.place", json!({"order_id": "B", "qty": 9})),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(again.result().as_ref().unwrap(), &json!("placed B x2"));
    assert_eq!(PLACED.load(Ordering::SeqCst), 2);
    Run::new(&rt)
        .execute(
            ToolCall::new("5", "shop.place", json!({"order_id": "B", "qty": 9})),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(PLACED.load(Ordering::SeqCst), 3);
    assert_eq!(rt.counters().snapshot().deduplicated, 2);
}

/// Render a report, streaming it section by section.
#[tool(namespace = "doc", side_effects = none)]
async fn render(ctx: &ToolContext, sections: u32) {
    for i in 0..sections {
        ctx.report_progress(u64::from(i), Some(u64::from(sections)));
        ctx.stream(format!("[{i}]"));
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_chunks_arrive_in_order_and_the_aggregate_is_the_output() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let (sink, mut events) = event_queue(1_000);
    let outcome = Run::new(&rt)
        .with_events(sink)
        .execute(
            ToolCall::new("r", "doc.render", json!({"sections": 3})),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(outcome.result().as_ref().unwrap(), &json!("[0][1][2]"));
    let kinds: Vec<ToolEventKind> = events.drain().into_iter().map(|e| e.kind).collect();
    let chunk = |s: &str| ToolEventKind::Chunk(s.to_owned());
    let progress = |done| ToolEventKind::Progress {
        done,
        total: Some(3),
    };
    assert_eq!(
        kinds,
        [
            ToolEventKind::Started,
            progress(0),
            chunk("[0]"),
            progress(1),
            chunk("[1]"),
            progress(2),
            chunk("[2]"),
            ToolEventKind::Finished { ok: true },
        ]
    );

    // A small queue under load keeps the newest events; the output loses nothing.
    let (sink, mut events) = event_queue(8);
    let outcome = Run::new(&rt)
        .with_events(sink)
        .execute(
            ToolCall::new("r", "doc.render", json!({"sections": 500})),
            &ToolContext::new(),
        )
        .await;
    let expected: String = (0..500).map(|i| format!("[{i}]")).collect();
    assert_eq!(outcome.result().as_ref().unwrap(), &json!(expected));
    let kept = events.drain();
    assert_eq!(kept.len(), 8);
    assert_eq!(events.dropped(), 1 + 2 * 500 + 1 - 8);
    assert!(kept.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    assert_eq!(
        kept.last().unwrap().kind,
        ToolEventKind::Finished { ok: true }
    );
}

/// Sleeps on the calling thread: a synchronous tool that ignores time.
#[tool(namespace = "sync", version = "1", side_effects = write, idempotency_key = "id", timeout_ms = 50)]
fn stall(id: String) -> String {
    std::thread::sleep(Duration::from_millis(400));
    id
}

/// The same, marked `blocking`.
#[tool(namespace = "sync", version = "1", side_effects = write, idempotency_key = "id", timeout_ms = 50, blocking)]
fn stall_blocking(id: String) -> String {
    std::thread::sleep(Duration::from_millis(400));
    id
}

#[tokio::test]
async fn a_sync_tool_is_held_to_its_time_limit_and_a_timeout_says_it_still_runs() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    for key in ["sync.stall", "sync.stall_blocking"] {
        let started = Instant::now();
        let err = rt
            .call(key, json!({"id": "a"}), &ToolContext::new())
            .await
            .unwrap_err();
        let waited = started.elapsed();
        match &err {
            ToolError::Timeout {
                after_ms,
                still_running,
                ..
            } => {
                assert_eq!(*after_ms, 50);
                assert!(still_running, "{key}: the work goes on");
            }
            other => panic!("{key}: {other:?}"),
        }
        assert!(err.to_string().contains("still running"), "{err}");
        assert!(
            waited < Duration::from_millis(300),
            "{key}: the caller waited {waited:?}, not the tool's 400 ms"
        );
    }
    // An async tool stopped by its limit is not running any more.
    let slow = runtime(vec![slow("async_limit", Some(20), false)]);
    match slow
        .call("t.async_limit", json!({}), &ToolContext::new())
        .await
    {
        Err(ToolError::Timeout { still_running, .. }) => assert!(!still_running),
        other => panic!("{other:?}"),
    }
}

//! Seed 003 (Graphorin tools): the defaults and hooks, each a row of `docs/seeds.md`.
//! One-time warnings are checked with a capturing `tracing` subscriber installed for
//! the whole binary (by each test that reads warnings, before it makes any: tests run
//! in any order); each test uses its own tool keys, as warnings are once per key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};
use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
use tackle::agent::react::SEARCH_TOOL;
use tackle::agent::search::{Embedder, SearchTier, ToolIndex};
use tackle::audit::MemoryAudit;
use tackle::call::MemoryGuard;
use tackle::events::{default_event_queue, DEFAULT_EVENT_QUEUE_DEPTH};
use tackle::registry::DynamicTool;
use tackle::shape::Shaping;
use tackle::spec::{
    ModelHint, PreferredModel, ResultShaping, Sensitivity, DEFAULT_MAX_RESULT_TOKENS,
};
use tackle::{tool, Agent, Registry, Run, Runtime, SideEffects, ToolCall, ToolContext, ToolSpec};

/// Every WARN event's message, for the whole binary.
fn warnings() -> &'static Mutex<Vec<String>> {
    static WARNINGS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Capture).expect("no other subscriber");
    });
    WARNINGS.get_or_init(|| Mutex::new(Vec::new()))
}

fn warned_about(key: &str) -> Vec<String> {
    warnings()
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains(&format!("`{key}`")))
        .cloned()
        .collect()
}

struct Capture;

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut message = Message(String::new());
            event.record(&mut message);
            warnings().lock().unwrap().push(message.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn echo(spec: ToolSpec) -> DynamicTool {
    DynamicTool::new(spec, |_ctx, input| async move { Ok::<_, String>(input) })
}

/// A long text: `n` numbered lines.
fn long(n: usize) -> String {
    (0..n).map(|i| format!("line {i:05}\n")).collect()
}

/// Returns `n` lines of text.
#[tool(namespace = "g", version = "1", side_effects = none)]
fn lines(n: u32) -> String {
    long(n as usize)
}

/// Runs code (here: returns its lines).
#[tool(namespace = "g", version = "1", side_effects = none)]
fn code_execution(n: u32) -> String {
    long(n as usize)
}

/// Returns `n` lines, never shaped.
#[tool(namespace = "g", version = "1", side_effects = none, max_result_tokens = 0)]
fn unshaped(n: u32) -> String {
    long(n as usize)
}

/// Reads the payroll.
#[tool(namespace = "g", version = "1", side_effects = read, sensitivity = secret, preferred_model = "smart", defer_loading)]
fn payroll() -> String {
    "42".into()
}

#[tokio::test]
async fn results_are_shaped_at_16384_tokens_by_default_and_0_turns_it_off() {
    // The capturing subscriber first: a warning made before it is lost.
    warnings();
    assert_eq!(DEFAULT_MAX_RESULT_TOKENS, 16384);
    let rt = Runtime::from_inventory().unwrap();
    let ctx = ToolContext::new();
    // 7,000 lines of 11 characters: about 19,250 tokens, over the default.
    let report = rt.call_report("g.lines", json!({"n": 7000}), &ctx).await;
    let shaped = report.shaped.expect("shaped at the default limit");
    assert_eq!(shaped.strategy, ResultShaping::Middle);
    assert!(shaped.shaped_tokens <= 16384 && shaped.original_tokens > 16384);
    // Below it: as it is.
    let report = rt.call_report("g.lines", json!({"n": 100}), &ctx).await;
    assert!(report.shaped.is_none());
    assert_eq!(report.result.unwrap(), json!(long(100)));

    let spec = rt.registry().resolve("g.unshaped").unwrap().spec().clone();
    assert_eq!(spec.result_token_limit(), None);
    let report = rt.call_report("g.unshaped", json!({"n": 7000}), &ctx).await;
    assert!(report.shaped.is_none());
    assert_eq!(report.result.unwrap(), json!(long(7000)));
    // Warned once, however often the tool is used or the registry built.
    let _ = Runtime::from_inventory()
        .unwrap()
        .registry()
        .resolve("g.unshaped")
        .unwrap()
        .spec();
    let warned = warned_about("g.unshaped@1");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("max_result_tokens = 0"), "{warned:?}");
}

#[tokio::test]
async fn the_truncation_strategy_defaults_by_tool_kind() {
    assert_eq!(
        ResultShaping::default_for_tool("code_execution"),
        ResultShaping::Tail
    );
    assert_eq!(
        ResultShaping::default_for_tool("web_search"),
        ResultShaping::Summarize
    );
    assert_eq!(
        ResultShaping::default_for_tool("lookup"),
        ResultShaping::Middle
    );
    let rt = Runtime::from_inventory().unwrap();
    let report = rt
        .call_report("g.code_execution", json!({"n": 7000}), &ToolContext::new())
        .await;
    assert_eq!(report.shaped.unwrap().strategy, ResultShaping::Tail);
    let text = report.result.unwrap();
    // Its last lines (where a program's errors are) are kept, its first are not.
    let text = text.as_str().unwrap();
    assert!(text.trim_end().ends_with("line 06999"), "{text}");
    assert!(!text.contains("line 00000"));
    assert!(
        text.starts_with("[... "),
        "the marker says what came before"
    );
    // A web_search tool is summarized (here there is no summarizer: middle, said so).
    let mut registry = Registry::default();
    let mut spec = ToolSpec::new("web", "web_search", "1", SideEffects::Read, "Searches.");
    spec.max_result_tokens = Some(10);
    assert_eq!(spec.shaping(), ResultShaping::Summarize);
    spec.result_shaping = Some(ResultShaping::Tail);
    assert_eq!(
        spec.shaping(),
        ResultShaping::Tail,
        "a chosen strategy wins"
    );
    spec.result_shaping = None;
    registry.register(echo(spec)).unwrap();
    let report = Runtime::new(registry)
        .call_report(
            "web.web_search",
            json!({"q": long(50)}),
            &ToolContext::new(),
        )
        .await;
    let shaped = report.shaped.unwrap();
    assert_eq!(shaped.strategy, ResultShaping::Middle);
    assert_eq!(
        shaped.fallback.as_deref(),
        Some("no summarizer is configured")
    );
}

/// Streams 300 chunks and returns nothing: its output is what it streamed.
#[tool(namespace = "g", version = "1", side_effects = none)]
fn chatty(ctx: &ToolContext) {
    for i in 0..300 {
        ctx.stream(format!("{i} "));
    }
}

#[tokio::test]
async fn the_event_queue_is_256_deep_and_drops_the_oldest() {
    assert_eq!(DEFAULT_EVENT_QUEUE_DEPTH, 256);
    let rt = Arc::new(Runtime::from_inventory().unwrap());
    let (sink, mut events) = default_event_queue();
    let output = Run::new(&rt)
        .with_events(sink)
        .call("g.chatty", json!({}), &ToolContext::new())
        .await
        .unwrap();
    // The buffer is lossless: every chunk is in the output.
    let whole: String = (0..300).map(|i| format!("{i} ")).collect();
    assert_eq!(output, json!(whole));
    let kept = events.drain();
    // Started, 300 chunks, Finished: 302 events, the oldest 46 dropped.
    assert_eq!(kept.len(), 256);
    assert_eq!(events.dropped(), 46);
    assert_eq!(kept[0].seq, 46);
}

#[test]
fn more_than_five_examples_warn_once() {
    // The capturing subscriber first: a warning made before it is lost.
    warnings();
    let mut spec = ToolSpec::new("g", "many_examples", "1", SideEffects::None, "Echoes.");
    spec.input_schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    spec.examples = (0..7)
        .map(|n| serde_json::from_value(json!({"input": {"n": n}})).unwrap())
        .collect();
    for _ in 0..2 {
        let mut registry = Registry::default();
        registry.register(echo(spec.clone())).unwrap();
        assert_eq!(
            registry
                .resolve("g.many_examples")
                .unwrap()
                .spec()
                .examples
                .len(),
            7
        );
    }
    let warned = warned_about("g.many_examples@1");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("7 examples"), "{warned:?}");
    // Five or fewer: no warning.
    spec.name = "five_examples".into();
    spec.examples.truncate(5);
    Registry::default().register(echo(spec)).unwrap();
    assert!(warned_about("g.five_examples@1").is_empty());
}

#[tokio::test]
async fn an_idempotency_key_callback_and_the_warning_without_one() {
    // The capturing subscriber first: a warning made before it is lost.
    warnings();
    let runs = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&runs);
    let spec = ToolSpec::new("g", "charge", "1", SideEffects::External, "Charges a card.");
    let mut spec = spec;
    spec.input_schema = json!({
        "type": "object",
        "properties": {"order": {"type": "string"}, "attempt": {"type": "integer"}},
    });
    let charge = DynamicTool::new(spec.clone(), move |_ctx, input: Value| {
        let counted = Arc::clone(&counted);
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(json!({"charged": input["order"]}))
        }
    })
    .with_idempotency_key(|input, _ctx| format!("order:{}", input["order"]));
    let mut registry = Registry::default();
    registry.register(charge).unwrap();
    // The same order twice (a retry with another attempt number) runs once.
    let run = Run::new(&Arc::new(Runtime::new(registry)));
    let calls = vec![
        ToolCall::new("a", "g.charge", json!({"order": "o-1", "attempt": 1})),
        ToolCall::new("b", "g.charge", json!({"order": "o-1", "attempt": 2})),
        ToolCall::new("c", "g.charge", json!({"order": "o-2", "attempt": 1})),
    ];
    let outcomes = run.execute_batch(calls, &ToolContext::new()).await;
    assert!(outcomes.iter().all(|o| o.result().is_ok()), "{outcomes:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(
        warned_about("g.charge@1").is_empty(),
        "a keyed tool is not warned about"
    );

    spec.name = "refund".into();
    Registry::default().register(echo(spec)).unwrap();
    let warned = warned_about("g.refund@1");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("no idempotency key"), "{warned:?}");
}

#[test]
fn preferred_model_sensitivity_and_defer_loading_on_the_spec() {
    let rt = Runtime::from_inventory().unwrap();
    let spec = rt.registry().resolve("g.payroll").unwrap().spec().clone();
    assert_eq!(
        spec.preferred_model,
        Some(PreferredModel::Hint(ModelHint::Smart))
    );
    assert_eq!(spec.sensitivity, Sensitivity::Secret);
    assert!(spec.defer_loading);
    let wire = serde_json::to_value(&spec).unwrap();
    assert_eq!(wire["preferred_model"], "smart");
    assert_eq!(wire["sensitivity"], "secret");
    assert_eq!(wire["defer_loading"], true);
    let back: ToolSpec = serde_json::from_value(wire).unwrap();
    assert_eq!(back, spec);

    let mut named = ToolSpec::new("g", "x", "1", SideEffects::None, "x");
    named.preferred_model = Some(PreferredModel::parse("openai/gpt-4.1-mini"));
    let wire = serde_json::to_value(&named).unwrap();
    assert_eq!(wire["preferred_model"], "openai/gpt-4.1-mini");
    let back: ToolSpec = serde_json::from_value(wire).unwrap();
    assert_eq!(
        back.preferred_model,
        Some(PreferredModel::Model("openai/gpt-4.1-mini".into()))
    );
    assert_eq!(back.sensitivity, Sensitivity::Internal, "the default");
    assert_eq!(
        PreferredModel::parse("fast"),
        PreferredModel::Hint(ModelHint::Fast)
    );
}

/// Watches the `read` tools: their shared counter must not move.
struct WatchCounter(Arc<AtomicU64>);

impl MemoryGuard for WatchCounter {
    fn snapshot(&self, tool: &ToolSpec, _ctx: &ToolContext) -> Option<Value> {
        (!tool.side_effects.mutates()).then(|| json!(self.0.load(Ordering::SeqCst)))
    }
}

#[tokio::test]
async fn the_memory_guard_counts_and_audits_a_changed_region() {
    let shared = Arc::new(AtomicU64::new(0));
    let mut registry = Registry::default();
    for (name, effects) in [
        ("peek", SideEffects::Read),
        ("poke", SideEffects::Read),
        ("bump", SideEffects::Write),
    ] {
        let shared = Arc::clone(&shared);
        let mut spec = ToolSpec::new("mem", name, "1", effects, "Touches the counter.");
        spec.idempotency_key = None;
        registry
            .register(DynamicTool::new(spec, move |_ctx, _input| {
                let shared = Arc::clone(&shared);
                async move {
                    if name != "peek" {
                        shared.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<_, String>(json!(shared.load(Ordering::SeqCst)))
                }
            }))
            .unwrap();
    }
    let audit = Arc::new(MemoryAudit::new());
    let rt = Runtime::new(registry)
        .with_audit(Arc::clone(&audit))
        .with_memory_guard(WatchCounter(Arc::clone(&shared)));
    let ctx = ToolContext::new();
    for key in ["mem.peek", "mem.poke", "mem.bump"] {
        rt.call(key, json!({}), &ctx).await.unwrap();
    }
    let flagged: Vec<(String, bool)> = audit
        .events()
        .into_iter()
        .map(|e| (e.key, e.memory_guard_mismatch))
        .collect();
    assert_eq!(
        flagged,
        [
            ("mem.peek@1".to_owned(), false),
            ("mem.poke@1".to_owned(), true),
            ("mem.bump@1".to_owned(), false), // a write tool is not watched here
        ]
    );
    let named = rt.counters().snapshot().named();
    assert_eq!(named["tool.executor.memory_guard.mismatch.total"], 1);
    assert_eq!(named["tool.executor.calls.total"], 3);
}

#[tokio::test]
async fn counters_have_the_seeds_stable_names() {
    let rt = Runtime::from_inventory().unwrap();
    let ctx = ToolContext::new();
    rt.call("g.lines", json!({"n": 7000}), &ctx).await.unwrap();
    rt.call("g.lines", json!({"n": "many"}), &ctx)
        .await
        .unwrap_err();
    let named = rt.counters().snapshot().named();
    assert_eq!(named["tool.executor.calls.total"], 2);
    assert_eq!(named["tool.executor.ok.total"], 1);
    assert_eq!(
        named["tool.executor.errors.total{kind=\"InvalidInput\"}"],
        1
    );
    assert_eq!(named["tool.result.truncated.total"], 1);
    assert_eq!(named["tool.inbound.sanitization.flagged.total"], 0);
    for name in named.keys() {
        assert!(
            name.starts_with("tool.executor.")
                || name.starts_with("tool.result.")
                || name.starts_with("tool.inbound.sanitization."),
            "{name}"
        );
    }
}

fn registry_of_dump() -> Registry {
    let mut registry = Registry::default();
    let mut spec = ToolSpec::new("g", "dump", "1", SideEffects::None, "Dumps text.");
    spec.max_result_tokens = Some(20);
    spec.result_shaping = Some(ResultShaping::SpillToFile);
    registry.register(echo(spec)).unwrap();
    registry
}

#[tokio::test]
async fn spills_land_at_root_run_id_call_id() {
    let root = std::env::temp_dir().join(format!("tackle-seed-spill-{}", std::process::id()));
    let mut registry = Registry::default();
    let mut spec = ToolSpec::new("g", "dump", "1", SideEffects::None, "Dumps text.");
    spec.max_result_tokens = Some(20);
    spec.result_shaping = Some(ResultShaping::SpillToFile);
    registry.register(echo(spec)).unwrap();
    let rt = Runtime::new(registry).with_shaping(Shaping::default().with_spill_root(&root));
    let report = Run::new(&Arc::new(rt))
        .with_id("run-42")
        .call_report("g.dump", json!({"text": long(100)}), &ToolContext::new())
        .await;
    let path = report.shaped.unwrap().spill_path.unwrap();
    assert_eq!(
        path,
        root.join("run-42").join(format!("{}.json", report.call_id))
    );
    let whole: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(whole["text"], long(100), "nothing is lost");

    // A model's call: the file is named after the call's id as the model gave it
    // (`<toolCallId>.<ext>`), so the model can name the file it was told about.
    let rt = Arc::new(
        Runtime::new(registry_of_dump()).with_shaping(Shaping::default().with_spill_root(&root)),
    );
    let run = Run::new(&rt).with_id("run-43");
    let batch = vec![
        tackle::ToolCall::new("call_Ab9", "g.dump", json!({"text": long(100)})),
        tackle::ToolCall::new("../evil", "g.dump", json!({"text": long(100)})),
    ];
    let outcomes = run.execute_batch(batch, &ToolContext::new()).await;
    for (outcome, name) in outcomes.iter().zip(["call_Ab9.json", ".._evil.json"]) {
        let handle = outcome.report.result.as_ref().unwrap();
        let expected = root.join("run-43").join(name);
        assert_eq!(handle["path"], expected.display().to_string(), "{handle}");
        assert!(expected.is_file());
    }
    let alone = run
        .call_with_id(
            "toolu_01",
            "g.dump",
            json!({"text": long(100)}),
            &ToolContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        alone["path"],
        root.join("run-43")
            .join("toolu_01.json")
            .display()
            .to_string()
    );
    let _ = std::fs::remove_dir_all(&root);

    // The default writer: `<temp dir>/tackle-spill/<run_id>/<call_id>.<ext>`, the file
    // readable by its owner only, the run's directory too.
    let mut registry = Registry::default();
    let mut spec = ToolSpec::new("g", "dump2", "1", SideEffects::None, "Dumps text.");
    spec.max_result_tokens = Some(20);
    spec.result_shaping = Some(ResultShaping::SpillToFile);
    registry.register(echo(spec)).unwrap();
    let rt = Arc::new(Runtime::new(registry));
    let run = format!("seed-spill-{}", std::process::id());
    let report = Run::new(&rt)
        .with_id(&run)
        .call_report("g.dump2", json!({"text": long(100)}), &ToolContext::new())
        .await;
    let path = report.shaped.unwrap().spill_path.unwrap();
    let dir = std::env::temp_dir().join("tackle-spill").join(&run);
    assert_eq!(path, dir.join(format!("{}.json", report.call_id)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A toy embedder: one dimension per word of a small vocabulary.
struct Vocabulary;

impl Embedder for Vocabulary {
    fn embed(&self, text: &str) -> Vec<f32> {
        let text = text.to_lowercase();
        ["salary", "wage", "payroll", "weather"]
            .iter()
            .map(|w| {
                // "wage" and "salary" mean the same here.
                let synonym = matches!(*w, "salary" | "wage")
                    && (text.contains("salary") || text.contains("wage"));
                if text.contains(w) || synonym {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    }
}

#[test]
fn tool_search_tries_embeddings_then_bm25_then_names() {
    let mut registry = Registry::default();
    for (name, description) in [
        ("payslip", "Shows the salary of an employee."),
        ("forecast", "Tells the weather of a city."),
    ] {
        registry
            .register(echo(ToolSpec::new(
                "hr",
                name,
                "1",
                SideEffects::Read,
                description,
            )))
            .unwrap();
    }
    let semantic = ToolIndex::build_with(&registry, Some(Arc::new(Vocabulary)));
    let hits = semantic.search("what is my wage", 5);
    assert_eq!(hits[0].key, "hr.payslip@1");
    assert_eq!(hits[0].tier, SearchTier::Semantic);
    // Nothing similar: BM25.
    let hits = semantic.search("city", 5);
    assert_eq!(
        (hits[0].key.as_str(), hits[0].tier),
        ("hr.forecast@1", SearchTier::Bm25)
    );
    // No word matches: names.
    let plain = ToolIndex::build(&registry);
    let hits = plain.search("paysilp", 5);
    assert_eq!(
        (hits[0].key.as_str(), hits[0].tier),
        ("hr.payslip@1", SearchTier::Name)
    );
}

#[tokio::test]
async fn a_deferred_tool_is_found_with_tool_search_k_5() {
    let rt = Arc::new(Runtime::from_inventory().unwrap());
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::calls(
            "search first",
            vec![ToolCallRequest {
                id: "s".into(),
                name: SEARCH_TOOL.into(),
                arguments: json!({"query": "payroll"}),
            }],
        ),
        ChatResponse::calls(
            "now call it",
            vec![ToolCallRequest {
                id: "p".into(),
                name: "g_payroll".into(),
                arguments: json!({}),
            }],
        ),
        ChatResponse::text("42"),
    ]));
    let agent = Agent::with_model(model).tools(["g.lines", "g.payroll"]);
    let run = Run::new(&rt);
    // What a run of the agent offers: the tools found in its registry.
    let skill = agent.skill(&run).unwrap();
    let offered: Vec<String> = skill.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(offered, ["g_lines", SEARCH_TOOL], "payroll is deferred");
    let search = skill.tools().last().unwrap().clone();
    assert_eq!(search.parameters["properties"]["k"]["default"], 5);
    let run = agent.run(&run, "what is the payroll?").await.unwrap().state;
    assert_eq!(run.final_answer.as_deref(), Some("42"));
    assert_eq!(run.tool_calls.last().unwrap().name, "g.payroll@1");
}

/// Weighs evidence carefully; prefers a smart model for the step that reads its result.
#[tool(namespace = "g", version = "1", side_effects = none, preferred_model = "smart")]
fn analyse(text: String) -> usize {
    text.len()
}

#[tokio::test]
async fn the_step_after_a_tool_asks_the_model_it_prefers() {
    let rt = Arc::new(Runtime::from_inventory().unwrap());
    let call = |id: &str, name: &str, arguments: Value| {
        ChatResponse::calls(
            "",
            vec![ToolCallRequest {
                id: id.into(),
                name: name.into(),
                arguments,
            }],
        )
    };
    // Each model answers only some steps of the run: in call order.
    let default = Arc::new(ScriptedModel::in_call_order([
        call("a", "g_analyse", json!({"text": "abc"})),
        ChatResponse::text("the fast model answers"),
    ]));
    let smart = Arc::new(ScriptedModel::in_call_order([call(
        "b",
        "g_lines",
        json!({"n": 1}),
    )]));
    let fast = Arc::new(ScriptedModel::new(Vec::<ChatResponse>::new()));
    let agent = Agent::with_model(default.clone())
        .tools(["g.analyse", "g.lines"])
        .configure(|skill| {
            skill
                .with_model_for(PreferredModel::Hint(ModelHint::Smart), smart.clone())
                .with_model_for(PreferredModel::Hint(ModelHint::Fast), fast.clone())
        });
    let run = agent
        .run(&Run::new(&rt), "analyse abc")
        .await
        .unwrap()
        .state;
    assert_eq!(run.final_answer.as_deref(), Some("the fast model answers"));
    // Step 0: the run's model; step 1 (after `analyse`): the smart one; step 2 (after
    // `lines`, which prefers nothing): the run's model again.
    assert_eq!((default.used(), smart.used(), fast.used()), (2, 1, 0));
    let seen = smart.requests();
    assert!(
        seen[0].messages.iter().any(|m| m.content == "3"),
        "it read the result"
    );
}

/// Looks a fact up; prefers one model by name.
#[tool(namespace = "g", version = "1", side_effects = none, preferred_model = "local/fact-checker")]
fn fact(text: String) -> String {
    text
}

#[tokio::test]
async fn a_named_model_wins_over_a_tier() {
    let rt = Arc::new(Runtime::from_inventory().unwrap());
    let both = ChatResponse::calls(
        "",
        vec![
            ToolCallRequest {
                id: "a".into(),
                name: "g_analyse".into(),
                arguments: json!({"text": "x"}),
            },
            ToolCallRequest {
                id: "f".into(),
                name: "g_fact".into(),
                arguments: json!({"text": "y"}),
            },
        ],
    );
    let default = Arc::new(ScriptedModel::new([both]));
    let smart = Arc::new(ScriptedModel::new(Vec::<ChatResponse>::new()));
    // It answers the second step only: in call order.
    let named = Arc::new(ScriptedModel::in_call_order([ChatResponse::text(
        "checked",
    )]));
    let agent = Agent::with_model(default.clone())
        .tools(["g.analyse", "g.fact"])
        .configure(|skill| {
            skill
                .with_model_for(PreferredModel::Hint(ModelHint::Smart), smart.clone())
                .with_model_for(PreferredModel::parse("local/fact-checker"), named.clone())
        });
    let run = agent.run(&Run::new(&rt), "check").await.unwrap().state;
    assert_eq!(run.final_answer.as_deref(), Some("checked"));
    assert_eq!((default.used(), smart.used(), named.used()), (1, 0, 1));
}

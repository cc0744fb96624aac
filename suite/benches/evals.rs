//! Evals: a 1,000-case dataset through `tackle::evals`, and the same dataset on
//! pydantic-evals in the same run (issue 43, item 7: at least 100x its cases per
//! second, at most a tenth of its memory per case).
//!
//! The dataset, on both sides: case `i` (0 to 999) is named "order i", asks "Price
//! order i.", expects the answer "Order i costs T cents." and the calls
//! `orders.lookup {"order": i}` then `orders.compute {"items": i % 7 + 1}`
//! (T = items * 250 + 490). The agent: a [`FunctionModel`] deciding from the messages
//! alone (no tool result yet: call `orders_lookup` with the order read from the task;
//! one result: call `orders_compute` with it; two: answer), over the two pure tools
//! below; three model steps and two tool calls a case. The model yields once a call
//! before it answers (as one over the network suspends, and as the Python side's
//! does), so the cases running at once are alive at once. The evaluators, for every
//! case: `EqualsExpected`, `TrajectoryMatch` (strict, arguments exact) and
//! `MaxToolCalls { max: 2 }`; every case must pass all three. `Eval` runs in `Live` mode
//! (the model is a function: nothing to record or replay) with its default concurrency,
//! 8 cases at once, on a current-thread tokio runtime (one thread, as Python's event
//! loop).
//!
//! What it measures, in order:
//!
//! 1. memory per case: a counting global allocator over one 1,000-case run (after a
//!    warm-up run): the peak of live heap bytes above the level before the run, the
//!    report alive at its end, divided by 1,000; also the bytes still held by the
//!    report, the bytes and allocations made over the run, per case, and where the
//!    report's bytes go (the allocations of a clone of each of its parts, and its
//!    buffers' unused capacity); then the peak with the 1,000 cases at once;
//! 2. criterion group `evals`: `evals/tackle_1000_cases`, the time of one 1,000-case
//!    run (throughput in cases per second);
//! 3. the comparator, `benches/evals_pydantic.py` (pydantic-evals' `Dataset.evaluate`
//!    over a pydantic-ai agent on `FunctionModel`, `max_concurrency=8`, pydantic-evals'
//!    own `TrajectoryMatch` and `MaxToolCalls` on the agent's OpenTelemetry spans; see
//!    its docstring), in `TACKLE_EVALS_PYTHON_RUNS` rounds (default 3): 11 timed tackle
//!    runs of the dataset (their median), then the comparator in a fresh process. It
//!    prints the rounds' medians as one summary line: cases per second each and the
//!    ratio (target >= 100x), memory per case each and the ratio (target <= 0.1).
//!    Then one round each of two other comparisons (`TACKLE_EVALS_PYTHON_EXTRAS=0`
//!    skips them): pydantic-evals with its trajectory read from the agent's messages
//!    instead of spans (`--trajectory messages`, no OpenTelemetry), and every case at
//!    once on both sides (pydantic-evals' default `max_concurrency`, tackle's
//!    `concurrency(1000)`).
//!
//! ```text
//! bash scripts/pydantic-evals                       # pydantic-evals into .venv (once)
//! cargo bench -p tackle-suite --bench evals         # all of the above
//! .venv/bin/python suite/benches/evals_pydantic.py  # the comparator alone
//! ```
//!
//! The Python is `TACKLE_EVALS_PYTHON` or `.venv/bin/python`; without one that imports
//! pydantic-evals and the OpenTelemetry SDK, the bench says so and measures tackle
//! only. Under `cargo test --benches` (criterion's `--test`) it runs the dataset once
//! and nothing else.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::{json, Value};
use tackle::agent::model::{
    ChatModel, ChatRequest, ChatResponse, FunctionModel, ModelError, ModelFuture, Role,
    ToolCallRequest,
};
use tackle::evals::{
    Case, CaseReport, CaseRun, Dataset, Eval, EvalMode, EvalReport, EvaluatorSpec, ExpectedCall,
    TrajectoryMode, TrajectoryStep,
};
use tackle::{tool, Agent, Runtime};

#[path = "support/counting.rs"]
#[allow(dead_code)]
mod counting;
use counting::{Counting, ALLOCATED, ALLOCATIONS, COUNTING, NOW, PEAK};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CASES: usize = 1000;

/// Cases at once: `Eval`'s default, and the comparator's `max_concurrency`.
const CONCURRENCY: usize = 8;

/// How many items order `order` holds.
#[tool(namespace = "orders", side_effects = none)]
fn lookup(order: i64) -> i64 {
    order % 7 + 1
}

/// The price of `items` items, delivery included, in cents.
#[tool(namespace = "orders", side_effects = none)]
fn compute(items: i64) -> i64 {
    items * 250 + 490
}

fn items_of(order: usize) -> i64 {
    order as i64 % 7 + 1
}

fn answer_of(order: usize) -> String {
    format!("Order {order} costs {} cents.", items_of(order) * 250 + 490)
}

/// A model that yields to the runtime once before it answers.
struct Suspending<M>(M);

impl<M: ChatModel> ChatModel for Suspending<M> {
    fn provider(&self) -> &str {
        self.0.provider()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.complete(request).await
        })
    }
}

/// The model: it decides from the messages alone, so one model serves every case.
fn decide(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let task = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let order: i64 = task
        .strip_prefix("Price order ")
        .and_then(|rest| rest.strip_suffix('.'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ModelError::Failed {
            message: format!("not an order: {task}"),
        })?;
    let mut results = request.messages.iter().filter(|m| m.role == Role::Tool);
    let call = |name: &str, arguments| {
        Ok(ChatResponse::calls(
            "",
            vec![ToolCallRequest::new("c1", name, arguments)],
        ))
    };
    match (results.next(), results.next()) {
        (None, _) => call("orders_lookup", json!({ "order": order })),
        (Some(items), None) => {
            let items: i64 = items
                .content
                .trim()
                .parse()
                .map_err(|_| ModelError::Failed {
                    message: format!("not a count: {}", items.content),
                })?;
            call("orders_compute", json!({ "items": items }))
        }
        (Some(_), Some(cents)) => Ok(ChatResponse::text(format!(
            "Order {order} costs {} cents.",
            cents.content.trim()
        ))),
    }
}

fn agent() -> Agent {
    Agent::with_model(Arc::new(Suspending(FunctionModel::new("orders", decide))))
        .tools([lookup::KEY, compute::KEY])
        .max_steps(3)
}

fn dataset() -> Dataset {
    let mut dataset = Dataset::new("orders")
        .evaluator(EvaluatorSpec::EqualsExpected)
        .evaluator(EvaluatorSpec::trajectory(TrajectoryMode::Strict))
        .evaluator(EvaluatorSpec::MaxToolCalls { max: 2 });
    for i in 0..CASES {
        dataset = dataset.case(
            Case::new(format!("order {i}"), format!("Price order {i}."))
                .expect_output(answer_of(i))
                .expect_calls([
                    ExpectedCall::with("orders.lookup", json!({ "order": i })),
                    ExpectedCall::with("orders.compute", json!({ "items": items_of(i) })),
                ]),
        );
    }
    dataset
}

/// What every run shares.
struct Bench {
    tokio_rt: tokio::runtime::Runtime,
    runtime: Arc<Runtime>,
    agent: Agent,
    dataset: Dataset,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            tokio_rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio"),
            runtime: Arc::new(Runtime::from_inventory().expect("the registry builds")),
            agent: agent(),
            dataset: dataset(),
        }
    }

    /// One run of the whole dataset, `concurrency` cases at once; its report.
    fn run(&self, concurrency: usize) -> EvalReport {
        self.tokio_rt.block_on(async {
            Eval::new(&self.dataset, &self.agent, &self.runtime)
                .mode(EvalMode::Live)
                .concurrency(concurrency)
                .progress(false)
                .run()
                .await
                .expect("the eval runs")
        })
    }

    /// One run, checked: every case passes its three evaluators.
    fn run_checked(&self, concurrency: usize) -> EvalReport {
        let report = self.run(concurrency);
        assert_eq!(report.summary.cases, CASES);
        if report.summary.passed != CASES {
            let failing = report
                .cases
                .iter()
                .find(|c| !c.passed)
                .expect("a failing case");
            panic!("case {} failed: {:?}", failing.name, failing.runs);
        }
        assert!(report
            .cases
            .iter()
            .all(|c| c.runs[0].evaluations.len() == 3));
        report
    }

    /// The median time of `runs` runs.
    fn timed(&self, runs: usize, concurrency: usize) -> Duration {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                let report = self.run(concurrency);
                let took = started.elapsed();
                assert_eq!(report.summary.passed, CASES);
                took
            })
            .collect();
        times.sort();
        times[runs / 2]
    }
}

/// Memory per case of one run, in bytes.
struct Memory {
    /// The peak of live bytes above the level before the run.
    peak: f64,
    /// What the report holds at the end.
    report: f64,
    /// Bytes allocated over the run (reallocations' growth included).
    allocated: f64,
    /// Allocations (and reallocations) made.
    allocations: f64,
    /// Where the report's bytes go.
    breakdown: String,
}

/// The bytes `f` allocates (the counters' other readings are spent).
fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, isize) {
    ALLOCATED.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let made = f();
    COUNTING.store(false, Ordering::Relaxed);
    (made, ALLOCATED.load(Ordering::Relaxed))
}

/// The heap bytes per case of a clone of `part` of each case's report (a clone's
/// buffers are exactly as long as their contents: the report's own may be longer).
fn per_case<T>(report: &EvalReport, part: impl Fn(&CaseReport) -> T) -> f64 {
    let (parts, bytes) = allocated_by(|| report.cases.iter().map(&part).collect::<Vec<T>>());
    let outer = std::mem::size_of::<T>() * parts.len();
    drop(parts);
    (bytes - outer as isize) as f64 / CASES as f64
}

/// Where the report's bytes go, per case, as one line.
fn report_breakdown(report: &EvalReport) -> String {
    fn run(case: &CaseReport) -> &CaseRun {
        &case.runs[0]
    }
    let (report_inline, run_inline) = (
        std::mem::size_of::<CaseReport>(),
        std::mem::size_of::<CaseRun>(),
    );
    let texts = per_case(report, |c| (c.name.clone(), c.input.clone()));
    let output = per_case(report, |c| run(c).output.clone());
    let trajectory = per_case(report, |c| run(c).trajectory.clone());
    let json = per_case(report, |c| {
        // Two calls a case: their values cloned into no container of their own.
        let mut calls = run(c).trajectory.iter().flat_map(|s| &s.calls);
        let mut next = || {
            calls
                .next()
                .map(|c| (c.arguments.clone(), c.result.clone()))
        };
        (next(), next())
    });
    let evaluations = per_case(report, |c| run(c).evaluations.clone());
    let whole = per_case(report, |c| c.clone()) + std::mem::size_of::<CaseReport>() as f64;
    // What the report's own buffers hold beyond their contents (a clone's hold none).
    let unused = |bytes: usize| bytes as f64 / CASES as f64;
    let unused_runs = unused(
        report
            .cases
            .iter()
            .map(|c| c.runs.capacity() - c.runs.len())
            .sum::<usize>()
            * run_inline,
    );
    let unused_steps = unused(
        report
            .cases
            .iter()
            .map(|c| run(c).trajectory.capacity() - run(c).trajectory.len())
            .sum::<usize>()
            * std::mem::size_of::<TrajectoryStep>(),
    );
    format!(
        "a case's record {} B (CaseReport {report_inline} B, CaseRun {run_inline} B), name and input {texts:.0} B, \
         output {output:.0} B, trajectory {trajectory:.0} B (the calls' JSON arguments and \
         results {json:.0} B of it), evaluations {evaluations:.0} B; {whole:.0} B in all, cloned; \
         unused capacity of the report's own buffers: {unused_runs:.0} B in `runs`, {unused_steps:.0} B \
         in `trajectory`",
        report_inline + run_inline
    )
}

/// Memory per case of one run, `concurrency` cases at once.
fn measure_memory(bench: &Bench, concurrency: usize) -> Memory {
    drop(bench.run_checked(concurrency)); // one-time allocations (lazy statics, caches) out of the way
    NOW.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    ALLOCATED.store(0, Ordering::Relaxed);
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let report = bench.run(concurrency);
    let held = NOW.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::Relaxed);
    assert_eq!(report.summary.passed, CASES);
    let per_case = |bytes: isize| bytes as f64 / CASES as f64;
    let memory = Memory {
        peak: per_case(PEAK.load(Ordering::Relaxed)),
        report: per_case(held),
        allocated: per_case(ALLOCATED.load(Ordering::Relaxed)),
        allocations: per_case(ALLOCATIONS.load(Ordering::Relaxed)),
        breakdown: report_breakdown(&report),
    };
    drop(report);
    memory
}

/// The comparator's figures from one run.
struct PythonRun {
    cases_per_s: f64,
    bytes_per_case: f64,
    rss_growth_bytes_per_case: f64,
    line: Value,
}

fn python() -> Option<PathBuf> {
    let python = std::env::var_os("TACKLE_EVALS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    let usable = Command::new(&python)
        .args([
            "-c",
            "import pydantic_evals.evaluators, opentelemetry.sdk.trace, pydantic_ai.models.function",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    usable.then_some(python)
}

/// One run of the comparator (a fresh process): `trajectory` is `spans` or
/// `messages`; `concurrency` 0 is pydantic-evals' default (every case at once).
fn run_python(python: &PathBuf, trajectory: &str, concurrency: usize) -> PythonRun {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/evals_pydantic.py");
    let out = Command::new(python)
        .arg(script)
        .args(["--cases", &CASES.to_string()])
        .args(["--concurrency", &concurrency.to_string()])
        .args(["--trajectory", trajectory])
        .stderr(Stdio::inherit())
        .output()
        .expect("the comparator starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the comparator failed: {stdout}");
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("the comparator prints a JSON line");
    let line: Value = serde_json::from_str(line).expect("JSON");
    let number = |key: &str| line[key].as_f64().expect(key);
    PythonRun {
        cases_per_s: number("cases_per_s"),
        bytes_per_case: number("bytes_per_case"),
        rss_growth_bytes_per_case: number("rss_growth_bytes_per_case"),
        line,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn spread(values: &[f64], digits: usize) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{low:.digits$}-{high:.digits$}")
}

/// tackle's cases per second at `concurrency`: the median of 11 runs.
fn tackle_rate(bench: &Bench, concurrency: usize) -> f64 {
    CASES as f64 / bench.timed(11, concurrency).as_secs_f64()
}

fn compare(bench: &Bench, memory: &Memory, all_at_once: &Memory) {
    let Some(python) = python() else {
        eprintln!(
            "evals: no Python with pydantic-evals and the OpenTelemetry SDK (run scripts/pydantic-evals, \
             or set TACKLE_EVALS_PYTHON): tackle measured alone"
        );
        return;
    };
    let runs: usize = std::env::var("TACKLE_EVALS_PYTHON_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut tackle_rates = Vec::new();
    let mut python_runs = Vec::new();
    for k in 1..=runs {
        // tackle right before each Python run: the same minute of the machine.
        tackle_rates.push(tackle_rate(bench, CONCURRENCY));
        let run = run_python(&python, "spans", CONCURRENCY);
        println!(
            "evals/compare run {k}: tackle {:.0} cases/s (median of 11 runs); pydantic-evals {}",
            tackle_rates[k - 1],
            run.line
        );
        python_runs.push(run);
    }
    let rates: Vec<f64> = python_runs.iter().map(|r| r.cases_per_s).collect();
    let bytes: Vec<f64> = python_runs.iter().map(|r| r.bytes_per_case).collect();
    let rss: Vec<f64> = python_runs
        .iter()
        .map(|r| r.rss_growth_bytes_per_case)
        .collect();
    let tackle = median(tackle_rates.clone());
    let (python_rate, python_bytes) = (median(rates.clone()), median(bytes.clone()));
    let speed = tackle / python_rate;
    let memory_ratio = memory.peak / python_bytes;
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "evals/summary ({runs} runs, medians; {CONCURRENCY} cases at once): \
         tackle {tackle:.0} cases/s ({}), pydantic-evals {python_rate:.1} cases/s ({}): \
         {speed:.0}x (target >= 100x: {}); memory per case: tackle {:.0} B peak, \
         pydantic-evals {python_bytes:.0} B tracemalloc peak ({}; RSS growth {:.0} B, {}): \
         {memory_ratio:.3} (target <= 0.1: {})",
        spread(&tackle_rates, 0),
        spread(&rates, 1),
        verdict(speed >= 100.0),
        memory.peak,
        spread(&bytes, 0),
        median(rss.clone()),
        spread(&rss, 0),
        verdict(memory_ratio <= 0.1),
    );
    if std::env::var("TACKLE_EVALS_PYTHON_EXTRAS").as_deref() == Ok("0") {
        return;
    }
    // Once each: the trajectory read from the messages (no OpenTelemetry), and every
    // case at once (pydantic-evals' default concurrency; tackle's `concurrency(1000)`).
    let rate = tackle_rate(bench, CONCURRENCY);
    let run = run_python(&python, "messages", CONCURRENCY);
    println!(
        "evals/compare messages ({CONCURRENCY} at once): tackle {rate:.0} cases/s, {:.0} B per case; \
         pydantic-evals, its trajectory read from the messages, {:.1} cases/s, {:.0} B per case: \
         {:.0}x, {:.3}; {}",
        memory.peak,
        run.cases_per_s,
        run.bytes_per_case,
        rate / run.cases_per_s,
        memory.peak / run.bytes_per_case,
        run.line
    );
    let rate = tackle_rate(bench, CASES);
    let run = run_python(&python, "spans", 0);
    println!(
        "evals/compare all at once: tackle {rate:.0} cases/s, {:.0} B per case; \
         pydantic-evals (its default max_concurrency) {:.1} cases/s, {:.0} B per case: {:.0}x, {:.3}; {}",
        all_at_once.peak,
        run.cases_per_s,
        run.bytes_per_case,
        rate / run.cases_per_s,
        all_at_once.peak / run.bytes_per_case,
        run.line
    );
}

fn main() {
    let testing = std::env::args().any(|a| a == "--test" || a == "--list");
    let bench = Bench::new();
    if testing {
        drop(bench.run_checked(CONCURRENCY));
        println!("evals: the dataset runs and passes (test mode: nothing measured)");
        return;
    }
    let memory = measure_memory(&bench, CONCURRENCY);
    println!(
        "evals/memory: tackle {:.0} B per case at the peak over a 1,000-case run, {CONCURRENCY} at once \
         ({:.0} B of it the report's at the end); {:.0} B allocated and {:.0} allocations per case. \
         The report, per case: {}",
        memory.peak, memory.report, memory.allocated, memory.allocations, memory.breakdown
    );
    let all_at_once = measure_memory(&bench, CASES);
    println!(
        "evals/memory: tackle {:.0} B per case at the peak with the 1,000 cases at once ({:.0} B \
         the report's at the end)",
        all_at_once.peak, all_at_once.report
    );

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("evals");
    group.throughput(Throughput::Elements(CASES as u64));
    group.sample_size(20);
    group.bench_function("tackle_1000_cases", |b| b.iter(|| bench.run(CONCURRENCY)));
    group.finish();
    criterion.final_summary();

    compare(&bench, &memory, &all_at_once);
}

//! Many runs, one runtime: the workload of `tests/many_runs.rs` as a benchmark.
//!
//! * `many_runs/recording`: 1,000 agent runs at once over one `Arc<Runtime>`, each
//!   with its own cassette that records every call (three model calls and two tool
//!   calls a run; `finish`, which writes the file, is left out: that is the disk's
//!   time, not tackle's);
//! * `many_runs/no_cassette`: the in-run baseline, the same runs with no cassette.
//!
//! Criterion reports runs per second (throughput: 1,000 elements an iteration).
//! Before measuring, the bench prints the peak heap memory per run of each and how
//! many allocations a run makes, measured by a counting allocator over one round of
//! 1,000 runs at once. The same workload on
//! pydantic-ai: `scripts/bench-pydantic-ai` (see `docs/performance.md`).

#[path = "../tests/support/fleet.rs"]
mod fleet;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, Agent, Cassette, Run, Runtime};
use tokio::task::JoinSet;

#[path = "support/counting.rs"]
#[allow(dead_code)]
mod counting;
use counting::{Counting, ALLOCATIONS, COUNTING, NOW, PEAK};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const RUNS: usize = 1000;

/// 1,000 runs of `agent` at once; each records into a cassette when `dir` is given.
async fn fleet(runtime: &Arc<Runtime>, agent: &Arc<Agent>, dir: Option<&PathBuf>) {
    let mut runs = JoinSet::new();
    for i in 0..RUNS {
        let mut run = Run::new(runtime);
        if let Some(dir) = dir {
            let config = CassetteConfig::new()
                .with_mode(Mode::Rewrite)
                .with_env_overrides(false);
            let cassette = Cassette::open(dir.join(format!("run-{i}.json")), config)
                .expect("the cassette opens");
            run = run.with_cassette(cassette);
        }
        let agent = Arc::clone(agent);
        runs.spawn(async move {
            let answer = agent.run(&run, fleet::task(i)).await;
            let right = answer.is_ok_and(|a| a.value == fleet::answer(i));
            // The run ends in its task, as a server's would: its recording is freed
            // by the thread that made it.
            drop(black_box(run));
            right
        });
    }
    while let Some(joined) = runs.join_next().await {
        let right = joined.expect("no run panics");
        assert!(right, "every run answers right");
    }
}

/// The peak heap bytes per run of one round of `fleet`, and the allocations per run.
fn peak_per_run(
    tokio_rt: &tokio::runtime::Runtime,
    runtime: &Arc<Runtime>,
    agent: &Arc<Agent>,
    dir: Option<&PathBuf>,
) -> (f64, f64) {
    // Counted from here: what is freed later but allocated before counts as negative
    // growth, so the peak is measured against this round's start.
    NOW.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    tokio_rt.block_on(fleet(runtime, agent, dir));
    COUNTING.store(false, Ordering::Relaxed);
    (
        PEAK.load(Ordering::Relaxed) as f64 / RUNS as f64,
        ALLOCATIONS.load(Ordering::Relaxed) as f64 / RUNS as f64,
    )
}

fn many_runs(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let runtime = Arc::new(Runtime::from_inventory().expect("the registry builds"));
    let agent = Arc::new(fleet::agent(fleet::model()));
    let dir = std::env::temp_dir().join(format!("tackle-bench-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");

    for (name, dir) in [("recording", Some(&dir)), ("no_cassette", None)] {
        // Warm up once, so the first round's one-time allocations do not count.
        tokio_rt.block_on(fleet(&runtime, &agent, dir));
        let (peak, allocations) = peak_per_run(&tokio_rt, &runtime, &agent, dir);
        eprintln!(
            "many_runs/{name}: peak heap {:.1} KiB per run ({RUNS} runs at once), \
             {allocations:.0} allocations per run",
            peak / 1024.0
        );
    }

    let mut group = c.benchmark_group("many_runs");
    group.throughput(Throughput::Elements(RUNS as u64));
    group.sample_size(20);
    group.bench_function("recording", |b| {
        b.iter(|| tokio_rt.block_on(fleet(&runtime, &agent, Some(&dir))))
    });
    group.bench_function("no_cassette", |b| {
        b.iter(|| tokio_rt.block_on(fleet(&runtime, &agent, None)))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, many_runs);
criterion_main!(benches);

//! The executor's cost (a run's batches).
//!
//! * `executor/overhead`: a batch of 10,000 calls of a no-op tool through
//!   `Run::execute_batch`, against the in-run baseline of the same 10,000 calls
//!   made one after another through the door (`Runtime::call`). The difference per
//!   call is the executor's overhead (target: within 1 µs).
//! * `executor/sleepers`: 1,000 calls that each sleep 10 ms at `max_parallel = 100`,
//!   against the ideal of 100 ms, an in-run baseline of bare Tokio tasks doing the
//!   same sleeps under a 100-permit semaphore, and the real length of one 10 ms sleep
//!   (target: within 1.1x of 100 ms). The same with `blocking` tools that sleep with
//!   the operating system's sleep, which has no 1 ms tick.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};
use tackle::{tool, Run, Runtime, ToolCall, ToolContext};
use tokio::sync::Semaphore;

/// Do nothing.
#[tool(namespace = "bench", side_effects = none)]
fn noop(n: u64) -> u64 {
    n
}

/// Sleep ten milliseconds.
#[tool(namespace = "bench", side_effects = none)]
async fn nap(n: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(10)).await;
    n
}

/// Sleep ten milliseconds on a blocking thread (the OS sleep, not Tokio's timer).
#[tool(namespace = "bench", side_effects = none, blocking)]
fn nap_blocking(n: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(10));
    n
}

const BATCH: u64 = 10_000;

fn batch(key: &str, n: u64) -> Vec<ToolCall> {
    (0..n)
        .map(|i| ToolCall::new(format!("call_{i}"), key, json!({ "n": i })))
        .collect()
}

/// A Tokio runtime with the machine's two cores.
fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

fn overhead(c: &mut Criterion) {
    let tokio_rt = tokio_runtime();
    let rt = Arc::new(Runtime::from_inventory().expect("registry"));
    let ctx = ToolContext::new();
    let run = Run::new(&rt);
    let mut group = c.benchmark_group("executor/overhead");
    group.sample_size(20);
    group.bench_function("door, 10k calls one by one (baseline)", |b| {
        b.iter_batched(
            || batch("bench.noop@1", BATCH),
            |calls| {
                tokio_rt.block_on(async {
                    for call in calls {
                        black_box(rt.call(&call.key, call.input, &ctx).await.ok());
                    }
                })
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("executor, one batch of 10k calls", |b| {
        b.iter_batched(
            || batch("bench.noop@1", BATCH),
            |calls| black_box(tokio_rt.block_on(run.execute_batch(calls, &ctx))),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn sleepers(c: &mut Criterion) {
    let tokio_rt = tokio_runtime();
    let rt = Arc::new(Runtime::from_inventory().expect("registry"));
    let ctx = ToolContext::new();
    let mut group = c.benchmark_group("executor/sleepers");
    group.sample_size(10);
    // What one 10 ms sleep really takes: Tokio's timer has a 1 ms tick and rounds up,
    // so ten sleeps in a row cannot take 100 ms.
    group.bench_function("one tokio sleep of 10 ms", |b| {
        b.iter(|| tokio_rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await }))
    });
    group.bench_function("tokio tasks, 1000 x 10 ms, 100 at a time (baseline)", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let permits = Arc::new(Semaphore::new(100));
                let mut tasks = tokio::task::JoinSet::new();
                for i in 0..1_000u64 {
                    let permits = Arc::clone(&permits);
                    tasks.spawn(async move {
                        let _permit = permits.acquire_owned().await;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        Value::from(i)
                    });
                }
                while let Some(done) = tasks.join_next().await {
                    black_box(done.ok());
                }
            })
        })
    });
    group.bench_function("executor, 1000 x 10 ms, max_parallel = 100", |b| {
        b.iter_batched(
            || batch("bench.nap@1", 1_000),
            |calls| {
                let run = Run::new(&rt).with_max_parallel(100);
                black_box(tokio_rt.block_on(run.execute_batch(calls, &ctx)))
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function(
        "executor, 1000 x 10 ms blocking sleeps, max_parallel = 100",
        |b| {
            b.iter_batched(
                || batch("bench.nap_blocking@1", 1_000),
                |calls| {
                    let run = Run::new(&rt).with_max_parallel(100);
                    black_box(tokio_rt.block_on(run.execute_batch(calls, &ctx)))
                },
                BatchSize::PerIteration,
            )
        },
    );
    group.finish();
}

criterion_group!(benches, overhead, sleepers);
criterion_main!(benches);

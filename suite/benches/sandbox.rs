//! The cost of the `process` sandbox: one call of a pure tool in a child process (start,
//! limits, request, answer, exit), next to the same call in process (the baseline).
//!
//! This bench has its own `main`, as a sandboxing program does: a sandbox child is
//! served by `serve_child` before criterion starts.

use std::hint::black_box;

use criterion::Criterion;
use serde_json::json;
use tackle::sandbox::{ProcessSandbox, SandboxPolicy};
use tackle::{tool, Runtime, ToolContext, ToolSpec};

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn calls(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let ctx = ToolContext::new();
    let mut group = c.benchmark_group("sandbox/call");
    let in_process = Runtime::from_inventory().expect("registry");
    group.bench_function("in process (baseline)", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                black_box(
                    in_process
                        .call("bench.add", json!({"a": 2, "b": 3}), &ctx)
                        .await,
                )
            })
        })
    });
    let sandboxed = Runtime::from_inventory()
        .expect("registry")
        .with_sandbox(ProcessSandbox::current_exe().expect("own path"))
        .with_sandbox_resolver(|_: &ToolSpec| SandboxPolicy::process());
    group.sample_size(30);
    group.bench_function("in a child process", |b| {
        b.iter(|| {
            tokio_rt.block_on(async {
                let sum = sandboxed
                    .call("bench.add", json!({"a": 2, "b": 3}), &ctx)
                    .await
                    .expect("sandboxed call");
                black_box(sum)
            })
        })
    });
    group.finish();
}

fn main() {
    tackle::sandbox::serve_child();
    let mut criterion = Criterion::default().configure_from_args();
    calls(&mut criterion);
    criterion.final_summary();
}

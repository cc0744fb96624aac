//! Durable runs: what the journal costs per call, and how long a resume takes.
//!
//! * `durable/door_call`: one door call of a pure tool with no cassette (the in-run
//!   baseline), with a journaled cassette over a [`MemoryStore`], and over the SQLite
//!   store (two entries per call, each committed to disk before the call goes on).
//! * `durable/resume`: resuming a run whose journal holds 100, then 1,000 ReAct steps
//!   (4 entries a step, in SQLite) and replaying it to where it stopped: open the
//!   store, read the journal, replay every step through the door. Linear resume: the
//!   1,000-step figure is about ten times the 100-step one.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::agent::react::ReactSkill;
use tackle::durable::{DurableRun, MemoryStore, RunStore};
use tackle::{tool, Run, Runtime, ToolContext};
use tackle_sqlite::SqliteStore;

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The longest run: the model calls a tool this many times, then answers.
const STEPS: usize = 1000;

/// One `bench_add` call per step, for `STEPS` steps, then the answer.
fn model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let step = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    Ok(if step < STEPS {
        ChatResponse::calls(
            "",
            vec![ToolCallRequest {
                id: format!("c{step}"),
                name: "bench_add".into(),
                arguments: json!({"a": step, "b": 1}),
            }],
        )
    } else {
        ChatResponse::text("done")
    })
}

fn skill(runtime: &Runtime) -> ReactSkill {
    ReactSkill::new(
        Arc::new(FunctionModel::new("bench", model)),
        runtime.registry(),
        &["bench.add"],
    )
    .expect("skill")
    .with_max_steps(STEPS + 1)
    .with_error_budget(u32::MAX)
}

fn durable(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let dir = std::env::temp_dir().join(format!("tackle-bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ctx = ToolContext::new().with_grant("llm:*");
    let input = json!({"a": 2, "b": 3});

    let mut group = c.benchmark_group("durable/door_call");
    let memory: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let sqlite: Arc<dyn RunStore> =
        Arc::new(SqliteStore::open(dir.join("calls.db")).expect("store"));
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let journaled = |store: Arc<dyn RunStore>, id: &str| {
        DurableRun::start(store, id, "bench")
            .expect("run")
            .run(&runtime)
    };
    let runs = [
        ("no cassette (baseline)", Run::new(&runtime)),
        ("journaled, memory store", journaled(memory, "m")),
        ("journaled, SQLite store", journaled(sqlite, "s")),
    ];
    for (name, run) in &runs {
        group.bench_function(*name, |b| {
            b.iter(|| {
                tokio_rt.block_on(async {
                    black_box(
                        run.call("bench.add", input.clone(), &ctx)
                            .await
                            .expect("call"),
                    )
                })
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("durable/resume");
    group.sample_size(10);
    for steps in [100, STEPS] {
        // A run paused after `steps` steps, in SQLite: the template each resume
        // starts from.
        let template = dir.join(format!("template-{steps}.db"));
        {
            let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&template).expect("store"));
            let run = DurableRun::start(store.clone(), "long", "count").expect("run");
            let state = tokio_rt
                .block_on(run.drive(&runtime, &skill(&runtime), &ctx, Some(steps)))
                .expect("the long run");
            assert_eq!(state.step_index, steps);
            assert_eq!(store.journal("long").expect("journal").len(), 4 * steps);
        }
        let mut copies = 0;
        group.bench_function(
            format!("resume a {steps}-step journal and replay it"),
            |b| {
                b.iter_batched(
                    || {
                        copies += 1;
                        let path = dir.join(format!("copy-{steps}-{copies}.db"));
                        std::fs::copy(&template, &path).expect("copy");
                        path
                    },
                    |path| {
                        let store: Arc<dyn RunStore> =
                            Arc::new(SqliteStore::open(&path).expect("store"));
                        let run = DurableRun::resume(store, "long").expect("resume");
                        let state = tokio_rt
                            .block_on(run.drive(&runtime, &skill(&runtime), &ctx, Some(steps)))
                            .expect("replay");
                        assert_eq!(state.step_index, steps);
                        drop(run);
                        let _ = std::fs::remove_file(&path);
                    },
                    BatchSize::PerIteration,
                )
            },
        );
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, durable);
criterion_main!(benches);

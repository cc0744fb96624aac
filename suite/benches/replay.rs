//! Replay costs, each against an in-run baseline:
//!
//! * replaying a pure tool's call vs. the same call through the live door, served
//!   (`with_recorded_results`: the recording stands in, the tool does not run) and
//!   checked (the default for a pure tool: it runs too, and its output is compared
//!   with the recording);
//! * recording a call vs. the live door;
//! * opening (reading and indexing) a cassette of 100,000 interactions, vs. only
//!   parsing the same file with serde_json.
//!
//! Replay consumes each recording once, so the call loops are timed in chunks (one
//! cassette of 100, or of 1,000, recorded calls), the cassette reopened untimed
//! between chunks (a new run of the same runtime per chunk). The runtime is
//! warm (spec built, validators compiled) in every variant.
//!
//! Besides criterion's figures, the bench prints the replayed/live ratio measured in
//! pairs of chunks run back to back (`replay/paired/...`): on a machine whose speed
//! drifts over seconds, the ratio of two figures measured apart drifts with it.

#[path = "support/paired.rs"]
mod paired;
#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use paired::paired;
use serde_json::{json, Value};
use support::ready;
use tackle::replay::file::{
    save, CassetteFile, Interaction, InteractionKind, Outcome, FORMAT, VERSION,
};
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, spec::ReplayPolicy, Cassette, Run, Runtime, ToolContext};

/// A cassette whose replays serve recordings (`with_recorded_results`): the replay
/// path itself.
fn open(path: &Path, mode: Mode) -> Cassette {
    open_with(path, mode, true)
}

/// A cassette; `served` says whether a replay serves pure tools' recordings or runs
/// them too and compares (the default).
fn open_with(path: &Path, mode: Mode, served: bool) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
            .with_recorded_results(served),
    )
    .expect("cassette opens")
}

fn file_with(interactions: Vec<Interaction>) -> CassetteFile {
    CassetteFile {
        format: FORMAT.into(),
        version: VERSION,
        complete: true,
        failure: None,
        name: "bench".into(),
        tools: Default::default(),
        interactions,
    }
}

fn interaction(call: u64, input: Value, output: Value) -> Interaction {
    Interaction {
        call,
        key: "math.add@1".into(),
        kind: InteractionKind::Tool,
        policy: ReplayPolicy::RecordedResult,
        input,
        outcome: Outcome::Ok(output),
        shaped: false,
    }
}

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-bench-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn replay(c: &mut Criterion) {
    let dir = dir();
    let ctx = ToolContext::new();
    // A cassette of `size` recorded calls with distinct inputs; replay consumes each
    // recording once, so a long measurement reopens it (untimed) every `size` calls.
    // Two sizes: 100 calls (a typical test's cassette) and 1,000.
    let inputs: Vec<Value> = (0..1_000u64).map(|i| json!({"a": i, "b": 3})).collect();
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let live = Run::new(&runtime);
    ready(live.call("math.add@1", inputs[0].clone(), &ctx)).expect("warm-up");

    // Times `iters` calls in chunks of `size`; `prepare` runs untimed before each chunk.
    let timed = |iters: u64, size: u64, prepare: &mut dyn FnMut(&mut Run), run: &mut Run| {
        let mut total = Duration::ZERO;
        let mut done = 0;
        while done < iters {
            prepare(run);
            let n = (iters - done).min(size);
            let batch: Vec<Value> = inputs[..n as usize].to_vec();
            let start = Instant::now();
            for input in batch {
                black_box(ready(run.call(black_box("math.add@1"), input, &ctx)).expect("ok"));
            }
            total += start.elapsed();
            done += n;
        }
        total
    };

    let mut group = c.benchmark_group("replay");
    let mut live_run = live;
    let mut run = Run::new(&runtime);
    for size in [100u64, 1_000] {
        let chunk = dir.join(format!("chunk{size}.json"));
        let recorded = inputs[..size as usize]
            .iter()
            .enumerate()
            .map(|(i, input)| interaction(i as u64, input.clone(), json!(i as u64 + 3)));
        save(&chunk, &file_with(recorded.collect())).expect("saved");
        group.bench_function(format!("live_door_baseline/{size}"), |b| {
            b.iter_custom(|iters| timed(iters, size, &mut |_| {}, &mut live_run))
        });
        for (name, mode, served) in [
            ("replayed_call", Mode::Replay, true),
            ("checked_call", Mode::Replay, false),
            ("recorded_call", Mode::Rewrite, true),
        ] {
            group.bench_function(format!("{name}/{size}"), |b| {
                b.iter_custom(|iters| {
                    timed(
                        iters,
                        size,
                        &mut |run| {
                            *run =
                                Run::new(&runtime).with_cassette(open_with(&chunk, mode, served));
                        },
                        &mut run,
                    )
                })
            });
        }
    }
    group.finish();

    // The ratio measured in pairs: a chunk of replayed calls and a chunk of live ones
    // back to back (in turn first), so that the machine's slower and faster moments
    // fall on both alike, where criterion measures each function over seconds of its
    // own. Printed beside criterion's figures.
    for (size, rounds) in [(100u64, 400usize), (1_000, 100)] {
        let chunk = dir.join(format!("chunk{size}.json"));
        let replay = || {
            let mut replaying = Run::new(&runtime).with_cassette(open(&chunk, Mode::Replay));
            timed(size, size, &mut |_| {}, &mut replaying)
        };
        let live = || timed(size, size, &mut |_| {}, &mut live_run);
        let pairs = paired(rounds, replay, live);
        let calls = (size as usize * rounds) as f64;
        println!(
            "replay/paired/{size}: {:.2}x (quartiles {:.2}-{:.2}, {rounds} pairs of chunks), a replayed call {:.1} ns, a live one {:.1} ns",
            pairs.median,
            pairs.quartiles.0,
            pairs.quartiles.1,
            pairs.measured.as_nanos() as f64 / calls,
            pairs.baseline.as_nanos() as f64 / calls,
        );
    }

    // 100,000 interactions, each with a distinct input.
    let big = dir.join("big.json");
    let interactions = (0..100_000u64)
        .map(|i| {
            interaction(
                i,
                json!({"a": i, "b": i % 7, "note": format!("call {i}")}),
                json!(i + i % 7),
            )
        })
        .collect();
    save(&big, &file_with(interactions)).expect("saved");
    let mut group = c.benchmark_group("cassette_100k");
    group.sample_size(10);
    group.bench_function("parse_only_baseline", |b| {
        b.iter_with_large_drop(|| {
            let bytes = std::fs::read(&big).expect("read");
            serde_json::from_slice::<Value>(&bytes).expect("parses")
        })
    });
    group.bench_function("open_and_index", |b| {
        b.iter_with_large_drop(|| open(&big, Mode::Replay))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, replay);
criterion_main!(benches);

//! Refusing what is out of bounds, fast. Each case has an in-run baseline:
//!
//! * `unknown_key_1mb`: `NotFound` for a 1 MB key (no hashing, no suggestions), against
//!   `unknown_key_short`, a short unknown key with its "did you mean" search. Target:
//!   under 1 ms.
//! * `deep_pipeline_100k`: a pipeline document nested 100,000 levels deep refused before
//!   the YAML parser runs, against `small_pipeline`, parsing a three-node document.
//!   Target: under 100 ms.
//! * `deep_input_100k`: a door call whose input is nested 100,000 levels deep, refused
//!   as `InvalidInput` (the walk stops at level 129; dismantling the value costs the
//!   rest), against `door_call`, an ordinary call.

#[path = "support/mod.rs"]
mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;
use support::ready;
use tackle::bounds::nested;
use tackle::pipeline::Pipeline;
use tackle::{Runtime, ToolContext};

const SMALL: &str = "name: p\nnodes:\n  - id: a\n    kind: tool\n    tool: math.add\n    inputs: {a: \"{{state.a}}\", b: 1}\n    out: s\n  - id: b\n    kind: tool\n    tool: math.add\n    inputs: {a: \"{{state.s}}\", b: 1}\n    out: t\n  - id: c\n    kind: broker\n    out: r\n";

fn bounds(c: &mut Criterion) {
    let rt = Runtime::from_inventory().expect("registry");
    let ctx = ToolContext::new();
    let huge_key = "math.add".repeat(131_072);
    let deep_doc = format!(
        "name: x\nnodes: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );

    let mut group = c.benchmark_group("bounds");
    group.bench_function("unknown_key_short", |b| {
        b.iter(|| ready(rt.call(black_box("math.ad"), json!({}), &ctx)).expect_err("unknown"))
    });
    group.bench_function("unknown_key_1mb", |b| {
        b.iter(|| ready(rt.call(black_box(&huge_key), json!({}), &ctx)).expect_err("unknown"))
    });
    group.bench_function("small_pipeline", |b| {
        b.iter(|| Pipeline::from_yaml(black_box(SMALL)).expect("valid"))
    });
    group.bench_function("deep_pipeline_100k", |b| {
        b.iter(|| Pipeline::from_yaml(black_box(&deep_doc)).expect_err("too deep"))
    });
    group.bench_function("door_call", |b| {
        b.iter(|| {
            ready(rt.call(black_box("math.add@1"), json!({"a": 2, "b": 3}), &ctx)).expect("ok")
        })
    });
    group.bench_function("deep_input_100k", |b| {
        b.iter_batched(
            || {
                // Not `json!`: it would serialize the deep value, recursively.
                let mut input = serde_json::Map::new();
                input.insert("a".into(), nested(100_000));
                input.insert("b".into(), json!(3));
                serde_json::Value::Object(input)
            },
            |input| ready(rt.call(black_box("math.add@1"), input, &ctx)).expect_err("too deep"),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bounds);
criterion_main!(benches);

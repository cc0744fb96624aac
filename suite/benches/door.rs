//! The door's overhead: `Runtime::call` on `math.add` with validation on, against an
//! in-run baseline doing the same work by hand (hash-map lookup, precompiled
//! jsonschema validation of the input, serde decode, the call, serde encode).
//!
//! The door additionally checks capabilities, validates the *output*, guards against
//! panics and goes through a type-erased async handler, and passes every other stage
//! (dedupe, replay, approval, shaping, sanitization, recording, audit) with nothing
//! for them to do. `door_call_with_an_audit_sink` shows what building the audit event
//! adds when a sink listens (without one, the audit stage is the counters alone).

#[path = "support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde::Deserialize;
use serde_json::{json, Value};
use support::{add, ready};
use tackle::audit::{AuditEvent, AuditSink};
use tackle::{Runtime, ToolContext};

/// An audit sink that drops every event: what building the events costs.
struct Discard;

impl AuditSink for Discard {
    fn record(&self, event: AuditEvent) {
        black_box(event);
    }
}

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn door(c: &mut Criterion) {
    let input = json!({"a": 2, "b": 3});

    // Baseline: the same work, by hand.
    let schema = add::spec().input_schema;
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let mut table: HashMap<String, fn(i64, i64) -> i64> = HashMap::new();
    for i in 0..50 {
        table.insert(format!("other.tool{i}@1"), add);
    }
    table.insert("math.add@1".to_owned(), add);

    let rt = Runtime::from_inventory().expect("registry");
    let audited = Runtime::from_inventory()
        .expect("registry")
        .with_audit(Discard);
    let ctx = ToolContext::new().with_grant("tools:*");
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio");

    let mut group = c.benchmark_group("door");
    group.bench_function("baseline_by_hand", |b| {
        b.iter_batched(
            || input.clone(),
            |input: Value| {
                let f = table.get(black_box("math.add@1")).expect("registered");
                assert!(validator.is_valid(&input));
                let args: AddArgs = serde_json::from_value(input).expect("decodes");
                serde_json::to_value(f(args.a, args.b)).expect("encodes")
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("door_call", |b| {
        b.iter_batched(
            || input.clone(),
            |input| ready(rt.call(black_box("math.add@1"), input, &ctx)).expect("ok"),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("door_call_with_an_audit_sink", |b| {
        b.iter_batched(
            || input.clone(),
            |input| ready(audited.call(black_box("math.add@1"), input, &ctx)).expect("ok"),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("door_call_tokio_block_on", |b| {
        b.iter_batched(
            || input.clone(),
            |input| {
                tokio_rt
                    .block_on(rt.call(black_box("math.add@1"), input, &ctx))
                    .expect("ok")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, door);
criterion_main!(benches);

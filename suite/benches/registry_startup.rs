//! Registry start-up from 1,000 generated `#[tool]` functions (`tackle-bench-tools`).
//!
//! Start-up builds what resolution, listing order, search and collision checks need;
//! each tool's spec (its schema generation, most of the cost) is built on first use.
//! The in-run baseline is the least any registry does: collect the inventory into a
//! hash map by key. A third measurement builds the registry *and* every spec, the
//! cost a program pays once when it lists all its tools (for a prompt, say).

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tackle::registry::{registrations, CollisionStrategy, ToolRegistration};
use tackle::Registry;
// Only holds tools: link it so they are in the inventory.
use tackle_bench_tools as _;

fn startup(c: &mut Criterion) {
    assert_eq!(
        registrations().count(),
        tackle_bench_tools::COUNT,
        "the generated tools are linked"
    );

    let mut group = c.benchmark_group("registry_startup_1000");
    // Dropping the result is not start-up: it is excluded from the timings.
    group.bench_function("baseline_inventory_into_hashmap", |b| {
        b.iter_with_large_drop(|| {
            let table: HashMap<&str, &ToolRegistration> =
                registrations().map(|r| (r.key(), r)).collect();
            black_box(table)
        })
    });
    group.bench_function("registry_from_inventory", |b| {
        b.iter_with_large_drop(|| {
            black_box(
                Registry::from_registrations(registrations(), CollisionStrategy::Error)
                    .expect("builds"),
            )
        })
    });
    group.bench_function("registry_and_every_spec", |b| {
        b.iter_with_large_drop(|| {
            let registry = Registry::from_registrations(registrations(), CollisionStrategy::Error)
                .expect("builds");
            for tool in registry.list() {
                black_box(tool.spec());
            }
            registry
        })
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);

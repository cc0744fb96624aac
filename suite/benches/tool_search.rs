//! Tool search over 10,000 tools: `ToolIndex::search` (BM25) against an in-run
//! baseline that scans every tool's text for the query's words (target: median
//! within 1 ms). Building the index is measured too.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tackle::agent::search::{words, ToolIndex};
use tackle::{registry::DynamicTool, Registry, SideEffects, ToolSpec};

const VERBS: &[&str] = &[
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "send",
    "fetch",
    "convert",
    "count",
    "archive",
    "restore",
    "approve",
    "schedule",
    "render",
    "translate",
    "summarize",
    "export",
];
const NOUNS: &[&str] = &[
    "invoice", "customer", "order", "ticket", "email", "calendar", "event", "file", "folder",
    "report", "forecast", "weather", "payment", "refund", "user", "team", "project", "issue",
    "comment", "image", "document", "contract", "shipment", "product", "review", "note",
];
const AREAS: &[&str] = &[
    "billing",
    "crm",
    "support",
    "mail",
    "storage",
    "reports",
    "weather",
    "payments",
    "hr",
    "projects",
    "media",
    "legal",
    "logistics",
    "shop",
    "notes",
    "ops",
];

fn registry(n: usize) -> Registry {
    let mut registry = Registry::default();
    for i in 0..n {
        let verb = VERBS[i % VERBS.len()];
        let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
        let area = AREAS[(i / (VERBS.len() * NOUNS.len())) % AREAS.len()];
        let spec = ToolSpec::new(
            format!("{area}{}", i / (VERBS.len() * NOUNS.len() * AREAS.len())),
            format!("{verb}_{noun}"),
            "1",
            SideEffects::Read,
            format!("{verb} a {noun} in the {area} system, by id or by name."),
        );
        registry
            .register(DynamicTool::new(
                spec,
                |_c, i| async move { Ok::<_, String>(i) },
            ))
            .expect("unique keys");
    }
    registry
}

fn search(c: &mut Criterion) {
    let registry = registry(10_000);
    let index = ToolIndex::build(&registry);
    let texts: Vec<(String, Vec<String>)> = registry
        .list()
        .map(|t| {
            let spec = t.spec();
            (
                t.key().to_owned(),
                words(&format!("{} {}", t.key(), spec.description)),
            )
        })
        .collect();
    let query = "send the weather forecast email to the team";
    let mut group = c.benchmark_group("tool_search/10k");
    group.bench_function("scan every tool's words (baseline)", |b| {
        b.iter(|| {
            let q = words(query);
            let mut hits: Vec<(usize, &str)> = texts
                .iter()
                .map(|(key, w)| (w.iter().filter(|x| q.contains(x)).count(), key.as_str()))
                .filter(|(n, _)| *n > 0)
                .collect();
            hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            hits.truncate(10);
            black_box(hits)
        })
    });
    group.bench_function("ToolIndex::search, k = 10", |b| {
        b.iter(|| black_box(index.search(black_box(query), 10)))
    });
    group.sample_size(10);
    group.bench_function("ToolIndex::build", |b| {
        b.iter(|| black_box(ToolIndex::build(&registry).len()))
    });
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);

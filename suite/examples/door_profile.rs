//! The door's cost in instructions, for `perf stat` and `perf record`: a tight loop of
//! one kind of call, with nothing else in the process to measure.
//!
//! ```text
//! cargo build --release -p tackle-suite --example door_profile
//! perf stat -e instructions:u target/release/examples/door_profile door 1000000
//! perf stat -e instructions:u target/release/examples/door_profile baseline 1000000
//! perf stat -e instructions:u target/release/examples/door_profile clone 1000000
//! perf record target/release/examples/door_profile door 5000000 && perf report
//! ```
//!
//! `clone` is the loop alone (the input made afresh each time, as every kind does);
//! `baseline` is `benches/door.rs`'s by-hand baseline (a hash-map lookup, jsonschema
//! validation of the input, serde decode, the call, serde encode); `door` is
//! `Runtime::call` on `math.add@1` with validation on; `audited` the same with an
//! audit sink; `run` the same call in a run (no cassette); `recorded` the same call
//! in a run recording to a cassette (held in memory); `replayed` the same call
//! replayed from a cassette of as many recordings of it (subtract `replayed_open`,
//! which only opens that cassette). Subtract `clone` from the others and divide by
//! the count: instructions per call. Where `perf stat` has no counters, `valgrind
//! --tool=callgrind` counts the same (subtract a run of 0 calls).
//! `docs/performance.md` gives the figures and where the door spends them.

#[path = "../benches/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::hint::black_box;

use serde::Deserialize;
use serde_json::{json, Value};
use support::{add, ready};
use tackle::audit::{AuditEvent, AuditSink};
use tackle::replay::file::{
    save, CassetteFile, Interaction, InteractionKind, Outcome, FORMAT, VERSION,
};
use tackle::{Runtime, ToolContext};

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// An audit sink that drops every event.
struct Discard;

impl AuditSink for Discard {
    fn record(&self, event: AuditEvent) {
        black_box(event);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "door".to_owned());
    let count: u64 = args.next().map_or(Ok(1_000_000), |n| n.parse())?;
    let input = json!({"a": 2, "b": 3});
    let ctx = ToolContext::new().with_grant("tools:*");
    let start = std::time::Instant::now();
    match kind.as_str() {
        "clone" => {
            for _ in 0..count {
                black_box(input.clone());
            }
        }
        "baseline" => {
            let schema = add::spec().input_schema;
            let validator = jsonschema::validator_for(&schema)?;
            let mut table: HashMap<String, fn(i64, i64) -> i64> = HashMap::new();
            for i in 0..50 {
                table.insert(format!("other.tool{i}@1"), add);
            }
            table.insert("math.add@1".to_owned(), add);
            for _ in 0..count {
                let input = input.clone();
                let f = table.get(black_box("math.add@1")).ok_or("not registered")?;
                if !validator.is_valid(&input) {
                    return Err("invalid".into());
                }
                let args: AddArgs = serde_json::from_value(input)?;
                black_box(serde_json::to_value(f(args.a, args.b))?);
            }
        }
        "door" | "audited" => {
            let mut rt = Runtime::from_inventory()?;
            if kind == "audited" {
                rt = rt.with_audit(Discard);
            }
            for _ in 0..count {
                let out: Value = ready(rt.call(black_box("math.add@1"), input.clone(), &ctx))?;
                black_box(out);
            }
        }
        "run" => {
            // A run with no cassette: the live calls replay's figures compare with.
            let runtime = std::sync::Arc::new(Runtime::from_inventory()?);
            let run = tackle::Run::new(&runtime);
            for _ in 0..count {
                let out: Value = ready(run.call(black_box("math.add@1"), input.clone(), &ctx))?;
                black_box(out);
            }
        }
        "recorded" => {
            // A run recording every call to a cassette (kept in memory: never finished).
            let dir =
                std::env::temp_dir().join(format!("tackle-door-profile-{}", std::process::id()));
            let config = tackle::replay::CassetteConfig::new()
                .with_mode(tackle::replay::Mode::Rewrite)
                .with_env_overrides(false);
            let cassette = tackle::Cassette::open(dir.join("recorded.json"), config)?;
            let runtime = std::sync::Arc::new(Runtime::from_inventory()?);
            let run = tackle::Run::new(&runtime).with_cassette(cassette);
            for _ in 0..count {
                let out: Value = ready(run.call(black_box("math.add@1"), input.clone(), &ctx))?;
                black_box(out);
            }
        }
        "replayed" | "replayed_open" => {
            // A run replaying every call from a cassette of `count` recordings of it
            // (each recording serves once); `replayed_open` only opens the cassette:
            // subtract it from `replayed` for the calls alone.
            let dir =
                std::env::temp_dir().join(format!("tackle-door-profile-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let path = dir.join("replayed.json");
            let interactions = (0..count)
                .map(|call| Interaction {
                    call,
                    key: "math.add@1".into(),
                    kind: InteractionKind::Tool,
                    policy: tackle::spec::ReplayPolicy::RecordedResult,
                    input: input.clone(),
                    outcome: Outcome::Ok(json!(5)),
                    shaped: false,
                })
                .collect();
            let file = CassetteFile {
                format: FORMAT.into(),
                version: VERSION,
                complete: true,
                failure: None,
                name: "door_profile".into(),
                tools: Default::default(),
                interactions,
            };
            save(&path, &file)?;
            let start = std::time::Instant::now();
            let config = tackle::replay::CassetteConfig::new()
                .with_mode(tackle::replay::Mode::Replay)
                .with_env_overrides(false);
            let cassette = tackle::Cassette::open(&path, config)?;
            let runtime = std::sync::Arc::new(Runtime::from_inventory()?);
            let run = tackle::Run::new(&runtime).with_cassette(cassette);
            if kind == "replayed" {
                for _ in 0..count {
                    let out: Value = ready(run.call(black_box("math.add@1"), input.clone(), &ctx))?;
                    black_box(out);
                }
            }
            eprintln!(
                "{kind}: {:?} after the cassette was written",
                start.elapsed()
            );
            std::fs::remove_dir_all(&dir)?;
        }
        other => {
            return Err(format!(
                "unknown kind `{other}`: clone, baseline, door, audited, run, recorded, replayed, \
                 replayed_open"
            )
            .into())
        }
    }
    if count > 0 {
        // Setup included (the runtime, the validator): small beside a long loop.
        let per_call = start.elapsed().as_nanos() as f64 / count as f64;
        eprintln!("{kind}: {per_call:.1} ns per iteration (the input's clone included)");
    }
    Ok(())
}

//! The replay router inside the door: every cell of the policy x mode table, with
//! proof (a per-test run counter) that must-stub and fail-loud tools never run on a miss.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::replay::{CassetteError, CassetteFile, CassetteWarning, Mode, Outcome};
use tackle::{
    context::Resource, replay::CassetteConfig, tool, Cassette, Run, Runtime, ToolContext,
    ToolErrorKind,
};

/// Counts how often each tool ran in one test.
#[derive(Default)]
struct Runs {
    charge: AtomicUsize,
    launch: AtomicUsize,
    square: AtomicUsize,
}

/// Charge a card (must-stub: it changes the world).
#[tool(namespace = "stub", side_effects = write)]
fn charge(runs: Resource<Runs>, n: i64) -> i64 {
    runs.charge.fetch_add(1, Ordering::SeqCst);
    n * 10
}

/// Launch a rocket (fail-loud: it may never run under replay).
#[tool(namespace = "loud", side_effects = external, replay_policy = fail_loud)]
fn launch(runs: Resource<Runs>, n: i64) -> i64 {
    runs.launch.fetch_add(1, Ordering::SeqCst);
    n * 100
}

/// Square a number (recorded-result: pure).
#[tool(namespace = "pure", side_effects = none)]
fn square(runs: Resource<Runs>, n: i64) -> i64 {
    runs.square.fetch_add(1, Ordering::SeqCst);
    n * n
}

struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir =
            std::env::temp_dir().join(format!("tackle-replay-table-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Fixture { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("cassette.json")
    }

    /// A cassette recorded with `n = 1` for each of the three tools.
    async fn recorded(&self) -> PathBuf {
        let (run, ctx) = run_with(open(&self.path(), Mode::Rewrite));
        for key in ["stub.charge", "loud.launch", "pure.square"] {
            run.call(key, json!({"n": 1}), &ctx).await.unwrap();
        }
        run.cassette().unwrap().finish().unwrap();
        self.path()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A cassette with the specification's `recorded-result` semantics, which this table
/// checks: a hit is served and the tool does not run (by default a replay also runs a
/// pure tool to compare it with its recording: see
/// `a_pure_hit_is_served_and_compared_by_default`).
fn open(path: &Path, mode: Mode) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
            .with_recorded_results(true),
    )
    .unwrap()
}

#[tokio::test]
async fn a_pure_hit_is_served_and_compared_by_default() {
    let f = Fixture::new("rr-checked");
    let path = f.recorded().await;
    let checked = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let (run, ctx) = run_with(checked);
    for key in ["stub.charge", "pure.square"] {
        run.call(key, json!({"n": 1}), &ctx).await.unwrap();
    }
    assert_eq!(runs(&ctx), (0, 0, 1), "the pure tool ran, to be compared");
    let err = run
        .call("loud.launch", json!({"n": 1}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::ReplayGap);
    run.cassette().unwrap().finish().unwrap();
}

/// A run of the inventory's tools through `cassette`, and a context counting what runs.
fn run_with(cassette: Cassette) -> (Run, ToolContext) {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let run = Run::new(&runtime).with_cassette(cassette);
    (run, ToolContext::new().with_resource(Runs::default()))
}

fn runs(ctx: &ToolContext) -> (usize, usize, usize) {
    let r = ctx.resource::<Runs>().unwrap();
    (
        r.charge.load(Ordering::SeqCst),
        r.launch.load(Ordering::SeqCst),
        r.square.load(Ordering::SeqCst),
    )
}

fn file(path: &Path) -> CassetteFile {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn keys_and_outcomes(path: &Path) -> Vec<(String, Value, Outcome)> {
    file(path)
        .interactions
        .into_iter()
        .map(|i| (i.key, i.input, i.outcome))
        .collect()
}

// ---- must-stub ----

#[tokio::test]
async fn must_stub_replay_hit_serves_and_miss_never_executes() {
    let f = Fixture::new("ms-replay");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Replay));
    assert_eq!(
        run.call("stub.charge", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(10)
    );
    let err = run
        .call("stub.charge", json!({"n": 2}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CassetteMiss);
    assert_eq!(runs(&ctx).0, 0, "must-stub never runs under replay");
}

#[tokio::test]
async fn must_stub_once_records_only_when_the_file_is_missing() {
    let f = Fixture::new("ms-once");
    // Missing file: execute and record.
    let (run, ctx) = run_with(open(&f.path(), Mode::Once));
    assert_eq!(
        run.call("stub.charge", json!({"n": 3}), &ctx)
            .await
            .unwrap(),
        json!(30)
    );
    assert_eq!(runs(&ctx).0, 1);
    assert!(run.cassette().unwrap().finish().unwrap().written);
    assert_eq!(
        keys_and_outcomes(&f.path()),
        vec![(
            "stub.charge@1".into(),
            json!({"n": 3}),
            Outcome::Ok(json!(30))
        )]
    );
    // File exists: as replay, so a miss is an error and nothing runs.
    let (run, ctx) = run_with(open(&f.path(), Mode::Once));
    assert_eq!(
        run.call("stub.charge", json!({"n": 3}), &ctx)
            .await
            .unwrap(),
        json!(30)
    );
    assert_eq!(
        run.call("stub.charge", json!({"n": 4}), &ctx)
            .await
            .unwrap_err()
            .kind(),
        ToolErrorKind::CassetteMiss
    );
    assert_eq!(runs(&ctx).0, 0);
    assert!(!run.cassette().unwrap().finish().unwrap().written);
}

#[tokio::test]
async fn must_stub_new_serves_hits_and_appends_misses() {
    let f = Fixture::new("ms-new");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::New));
    assert_eq!(
        run.call("stub.charge", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(10)
    );
    assert_eq!(runs(&ctx).0, 0, "a hit is served");
    assert_eq!(
        run.call("stub.charge", json!({"n": 5}), &ctx)
            .await
            .unwrap(),
        json!(50)
    );
    assert_eq!(runs(&ctx).0, 1, "a miss runs");
    run.cassette().unwrap().finish().unwrap();
    let recorded = keys_and_outcomes(&f.path());
    assert_eq!(recorded.len(), 4, "three recorded + one appended");
    assert_eq!(
        recorded[3],
        (
            "stub.charge@1".into(),
            json!({"n": 5}),
            Outcome::Ok(json!(50))
        )
    );
}

#[tokio::test]
async fn must_stub_rewrite_executes_and_records_afresh() {
    let f = Fixture::new("ms-rewrite");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Rewrite));
    assert_eq!(
        run.call("stub.charge", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(10)
    );
    assert_eq!(runs(&ctx).0, 1, "rewrite executes even what was recorded");
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path()).len(),
        1,
        "a fresh file from this run"
    );
}

#[tokio::test]
async fn must_stub_live_executes_and_writes_nothing() {
    let f = Fixture::new("ms-live");
    let path = f.recorded().await;
    let before = std::fs::read(&path).unwrap();
    let (run, ctx) = run_with(open(&path, Mode::Live));
    assert_eq!(
        run.call("stub.charge", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(10)
    );
    assert_eq!(
        run.call("stub.charge", json!({"n": 9}), &ctx)
            .await
            .unwrap(),
        json!(90)
    );
    assert_eq!(runs(&ctx).0, 2);
    assert!(!run.cassette().unwrap().finish().unwrap().written);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

// ---- fail-loud ----

#[tokio::test]
async fn fail_loud_replay_is_a_gap_before_any_lookup() {
    let f = Fixture::new("fl-replay");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Replay));
    for n in [1, 2] {
        // n = 1 was recorded (as a tombstone), n = 2 was not: both are gaps.
        let err = run
            .call("loud.launch", json!({"n": n}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::ReplayGap, "{err}");
    }
    assert_eq!(runs(&ctx).1, 0, "fail-loud never runs under replay");
}

#[tokio::test]
async fn fail_loud_once_records_a_tombstone_when_the_file_is_missing() {
    let f = Fixture::new("fl-once");
    let (run, ctx) = run_with(open(&f.path(), Mode::Once));
    assert_eq!(
        run.call("loud.launch", json!({"n": 2}), &ctx)
            .await
            .unwrap(),
        json!(200)
    );
    assert_eq!(runs(&ctx).1, 1);
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path()),
        vec![("loud.launch@1".into(), json!({"n": 2}), Outcome::Tombstone)]
    );
    let (run, ctx) = run_with(open(&f.path(), Mode::Once));
    assert_eq!(
        run.call("loud.launch", json!({"n": 2}), &ctx)
            .await
            .unwrap_err()
            .kind(),
        ToolErrorKind::ReplayGap
    );
    assert_eq!(runs(&ctx).1, 0);
}

#[tokio::test]
async fn fail_loud_new_executes_and_appends_a_tombstone() {
    let f = Fixture::new("fl-new");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::New));
    assert_eq!(
        run.call("loud.launch", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(100)
    );
    assert_eq!(
        runs(&ctx).1,
        1,
        "even a recorded fail-loud call runs: a tombstone holds no result"
    );
    run.cassette().unwrap().finish().unwrap();
    let recorded = keys_and_outcomes(&f.path());
    assert_eq!(recorded.len(), 4);
    assert_eq!(recorded[3].2, Outcome::Tombstone);
}

#[tokio::test]
async fn fail_loud_rewrite_executes_with_a_tombstone() {
    let f = Fixture::new("fl-rewrite");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Rewrite));
    assert_eq!(
        run.call("loud.launch", json!({"n": 7}), &ctx)
            .await
            .unwrap(),
        json!(700)
    );
    assert_eq!(runs(&ctx).1, 1);
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path()),
        vec![("loud.launch@1".into(), json!({"n": 7}), Outcome::Tombstone)]
    );
}

#[tokio::test]
async fn fail_loud_live_executes() {
    let f = Fixture::new("fl-live");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Live));
    assert_eq!(
        run.call("loud.launch", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(100)
    );
    assert_eq!(runs(&ctx).1, 1);
}

// ---- recorded-result ----

#[tokio::test]
async fn recorded_result_replay_serves_hits_and_a_miss_runs_then_fails_the_run() {
    let f = Fixture::new("rr-replay");
    let path = f.recorded().await;
    let (run, ctx) = run_with(open(&path, Mode::Replay));
    assert_eq!(
        run.call("pure.square", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(1)
    );
    assert_eq!(runs(&ctx).2, 0, "a hit is served");
    assert_eq!(
        run.call("pure.square", json!({"n": 6}), &ctx)
            .await
            .unwrap(),
        json!(36)
    );
    assert_eq!(runs(&ctx).2, 1, "a miss runs live");
    assert_eq!(
        run.call("stub.charge", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(10)
    );
    // The run fails at its end, naming the call that needed the live world.
    match run.cassette().unwrap().finish() {
        Err(CassetteError::RanLive { calls, .. }) => {
            assert_eq!(calls.len(), 1, "{calls:?}");
            assert!(calls[0].contains("pure.square@1"), "{calls:?}");
            assert!(calls[0].contains(r#"{"n":6}"#), "{calls:?}");
        }
        other => panic!("a read that ran live fails the replay: {other:?}"),
    }

    // Live reads allowed: the miss is a warning of the report.
    let allowed = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_live_reads(true)
            .with_env_overrides(false),
    )
    .unwrap();
    let (run, ctx) = run_with(allowed);
    run.call("pure.square", json!({"n": 6}), &ctx)
        .await
        .unwrap();
    run.call("stub.charge", json!({"n": 1}), &ctx)
        .await
        .unwrap();
    run.call("pure.square", json!({"n": 1}), &ctx)
        .await
        .unwrap();
    let report = run.cassette().unwrap().finish().unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| matches!(w, CassetteWarning::RanLive { key, .. } if key == "pure.square@1")),
        "{report:?}"
    );
    assert!(!report.written);

    // Strict: the miss is an error, and the tool does not run.
    let strict = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_strict(true)
            .with_env_overrides(false),
    )
    .unwrap();
    let (run, ctx) = run_with(strict);
    let err = run
        .call("pure.square", json!({"n": 6}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CassetteMiss);
    assert_eq!(runs(&ctx).2, 0);
}

#[tokio::test]
async fn recorded_result_once_records_when_the_file_is_missing_else_replays() {
    let f = Fixture::new("rr-once");
    // Missing file: the pure call runs live and is recorded, as every call is.
    let (run, ctx) = run_with(open(&f.path(), Mode::Once));
    assert_eq!(
        run.call("pure.square", json!({"n": 4}), &ctx)
            .await
            .unwrap(),
        json!(16)
    );
    assert_eq!(runs(&ctx).2, 1);
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path()),
        vec![(
            "pure.square@1".into(),
            json!({"n": 4}),
            Outcome::Ok(json!(16))
        )]
    );
    // Existing file with a recording: served.
    let f2 = Fixture::new("rr-once-2");
    let (run, ctx) = run_with(open(&f2.recorded().await, Mode::Once));
    assert_eq!(
        run.call("pure.square", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(1)
    );
    assert_eq!(runs(&ctx).2, 0);
}

#[tokio::test]
async fn recorded_result_new_serves_hits_and_appends_misses() {
    let f = Fixture::new("rr-new");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::New));
    assert_eq!(
        run.call("pure.square", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(1)
    );
    assert_eq!(runs(&ctx).2, 0);
    assert_eq!(
        run.call("pure.square", json!({"n": 8}), &ctx)
            .await
            .unwrap(),
        json!(64)
    );
    assert_eq!(runs(&ctx).2, 1);
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path())[3],
        (
            "pure.square@1".into(),
            json!({"n": 8}),
            Outcome::Ok(json!(64))
        )
    );
}

#[tokio::test]
async fn recorded_result_rewrite_executes_and_records() {
    let f = Fixture::new("rr-rewrite");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Rewrite));
    assert_eq!(
        run.call("pure.square", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(1)
    );
    assert_eq!(runs(&ctx).2, 1);
    run.cassette().unwrap().finish().unwrap();
    assert_eq!(
        keys_and_outcomes(&f.path()),
        vec![(
            "pure.square@1".into(),
            json!({"n": 1}),
            Outcome::Ok(json!(1))
        )]
    );
}

#[tokio::test]
async fn recorded_result_live_executes() {
    let f = Fixture::new("rr-live");
    let (run, ctx) = run_with(open(&f.recorded().await, Mode::Live));
    assert_eq!(
        run.call("pure.square", json!({"n": 1}), &ctx)
            .await
            .unwrap(),
        json!(1)
    );
    assert_eq!(runs(&ctx).2, 1);
}

#[test]
fn replay_mode_needs_a_cassette() {
    let f = Fixture::new("missing");
    let err =
        Cassette::open(f.path(), CassetteConfig::new().with_env_overrides(false)).unwrap_err();
    assert!(
        err.to_string()
            .contains("record one with TACKLE_CASSETTE=once"),
        "{err}"
    );
}

//! Many runs, one runtime: 1,000 agent runs at once over one `Arc<Runtime>`, each
//! recording its own cassette, then all 1,000 replayed offline. Every replay equals
//! its recording, and no run sees another's calls.

#[path = "support/fleet.rs"]
mod fleet;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tackle::agent::model::{ChatModel, ChatRequest, FunctionModel, ModelError};
use tackle::agent::react::{ReactState, StopReason};
use tackle::replay::{load, Mode};
use tackle::{replay::CassetteConfig, Agent, Cassette, Run, Runtime};
use tokio::task::JoinSet;

const RUNS: usize = 1000;

/// A model that fails: a replay must never call it (named as the live one, so its
/// calls have the same key).
fn no_model() -> Arc<dyn ChatModel> {
    Arc::new(FunctionModel::new("fleet", |_: &ChatRequest| {
        Err(ModelError::Failed {
            message: "the model was called during a replay".into(),
        })
    }))
}

fn cassette(dir: &Path, i: usize, mode: Mode) -> Cassette {
    let config = CassetteConfig::new()
        .with_mode(mode)
        .with_env_overrides(false);
    Cassette::open(dir.join(format!("run-{i}.json")), config).expect("the cassette opens")
}

/// Runs the fleet, each run on its own cassette in `dir`; the states by run.
async fn fleet(
    runtime: &Arc<Runtime>,
    agent: &Arc<Agent>,
    dir: &Path,
    mode: Mode,
) -> Vec<ReactState> {
    let mut runs = JoinSet::new();
    for i in 0..RUNS {
        let run = Run::new(runtime)
            .with_id(format!("fleet-{i}"))
            .with_cassette(cassette(dir, i, mode));
        let agent = Arc::clone(agent);
        runs.spawn(async move {
            let state = agent.run(&run, fleet::task(i)).await.map(|a| a.state);
            let finished = run.finish();
            (i, state, finished)
        });
    }
    let mut states: Vec<Option<ReactState>> = vec![None; RUNS];
    while let Some(joined) = runs.join_next().await {
        let (i, state, finished) = joined.expect("no run panics");
        let state = state.unwrap_or_else(|e| panic!("run {i} failed: {e}"));
        finished.unwrap_or_else(|e| panic!("run {i}'s cassette: {e}"));
        states[i] = Some(state);
    }
    states
        .into_iter()
        .map(|s| s.expect("every run ended"))
        .collect()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-many-runs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_runs_record_and_replay_over_one_runtime() {
    let dir = scratch();
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());

    // Record: every run live, each into its own cassette.
    let live = Arc::new(fleet::agent(fleet::model()));
    let before = fleet::TOOL_RUNS.load(Ordering::Relaxed);
    let recorded = fleet(&runtime, &live, &dir, Mode::Rewrite).await;
    assert_eq!(fleet::TOOL_RUNS.load(Ordering::Relaxed) - before, 2 * RUNS);
    for (i, state) in recorded.iter().enumerate() {
        assert_eq!(
            state.final_answer.as_deref(),
            Some(fleet::answer(i).as_str())
        );
        assert_eq!(state.stop_reason, Some(StopReason::Done));
        assert_eq!(state.tool_calls.len(), 2, "run {i}");
        assert_eq!(state.tool_calls[0].arguments["a"], i as i64, "run {i}");
    }

    // No run sees another's calls: cassette i holds run i's calls, and only them.
    for i in 0..RUNS {
        let file = load(&dir.join(format!("run-{i}.json"))).expect("the recording loads");
        let keys: Vec<&str> = file.interactions.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(
            keys.len(),
            5,
            "run {i}: three model calls, two tool calls: {keys:?}"
        );
        let add = file
            .interactions
            .iter()
            .find(|x| x.key.starts_with("fleet.add"))
            .expect("the add call is recorded (a read, recorded from nothing)");
        assert_eq!(
            add.input["a"], i as i64,
            "run {i}'s cassette holds another run's call"
        );
        let sum = i as i64 + 1;
        let double = file
            .interactions
            .iter()
            .find(|x| x.key.starts_with("fleet.double"))
            .expect("the double call is recorded");
        assert_eq!(double.input["x"], sum);
    }

    // Replay: no model (one that fails if asked), the same states. The two tools are
    // pure, so each replayed call of them also runs, to be compared with its
    // recording (and every comparison is equal: the replays finish).
    let offline = Arc::new(fleet::agent(no_model()));
    let before = fleet::TOOL_RUNS.load(Ordering::Relaxed);
    let replayed = fleet(&runtime, &offline, &dir, Mode::Replay).await;
    assert_eq!(
        fleet::TOOL_RUNS.load(Ordering::Relaxed) - before,
        2 * RUNS,
        "a replay runs each pure call once, to compare it"
    );
    assert_eq!(replayed, recorded, "every replay equals its recording");
    let _ = std::fs::remove_dir_all(&dir);
}

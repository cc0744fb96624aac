//! Determinism: recorded histories of agent runs replay against today's workflow code.
//!
//! `tests/histories/*.json` are histories of real runs on a dev server, one per shape
//! (tool calls with a worker killed and a call of unknown outcome resolved; an
//! approval wait, approved and rejected; an approval used up and a keyed write
//! approved; a parallel step, then a cancellation during a write; the first and the
//! last execution of a run that continued as new), recorded by
//! `TACKLE_RECORD_HISTORIES=1 cargo test -p tackle-temporal --test temporal_workers`.
//! Each replays here with no server and no activity run: a change to the loop that
//! would take other steps for runs in flight fails `cargo test`.

#[path = "support/bank.rs"]
#[allow(dead_code)]
mod bank;

use std::path::Path;
use std::sync::Arc;

use tackle::agent::model::{ChatResponse, FunctionModel};
use tackle::agent::react::ReactSkill;
use tackle::{Runtime, ToolContext};
use tackle_temporal::{replay_history, ReplayError};

fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory().expect("registry"))
}

fn histories() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("tests/histories")
        .map(|entry| {
            let path = entry.expect("an entry").path();
            let name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("a history"))
        })
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn every_recorded_history_replays_against_todays_workflow() {
    let histories = histories();
    let names: Vec<&str> = histories.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "approval_used_up",
            "approval_waits",
            "continued_as_new_first",
            "continued_as_new_last",
            "parallel_step_then_cancelled",
            "repair_and_search",
            "tool_calls_and_an_unknown_outcome"
        ]
    );
    let runtime = runtime();
    for (name, history) in &histories {
        if let Err(e) = replay_history(bank::agents(&runtime), history).await {
            panic!("{name}: {e}");
        }
    }
    // The repair hook ran on a worker: its answer is in the history, and a replay
    // does not run it again.
    assert_eq!(
        bank::REPAIRS.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a replay ran the repair hook"
    );
}

#[tokio::test]
async fn a_loop_that_takes_other_steps_fails_the_replay() {
    // The refunds agent, changed: its skill no longer offers refunds, so the loop
    // would not schedule the refund the recorded run made.
    let runtime = runtime();
    let changed = ReactSkill::new(
        Arc::new(FunctionModel::new("refund-bot", |_| {
            Ok(ChatResponse::text("no"))
        })),
        runtime.registry(),
        &["bank.balance"],
    )
    .expect("skill");
    let agents =
        bank::agents(&runtime).with("refunds", changed, ToolContext::new().with_grant("llm:*"));
    let (_, history) = histories()
        .into_iter()
        .find(|(name, _)| name == "approval_waits")
        .expect("the approval history");
    match replay_history(agents, &history).await {
        Err(ReplayError::Nondeterminism(message)) => println!("refused: {message}"),
        other => panic!("a changed loop replayed: {other:?}"),
    }
}

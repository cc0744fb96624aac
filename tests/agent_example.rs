//! The main example (`cargo run --example agent`): its committed cassette replays
//! offline to the recorded answer without calling a model, the committed cassette is
//! exactly what the scripted run records today, and a task the cassette does not hold
//! is refused with the recorded task named (a replay without a task answers that one).

#[allow(dead_code)]
#[path = "../examples/agent.rs"]
mod agent_example;

use agent_example::{committed_cassette, run, Args, Plan, DEFAULT_TASK};

#[tokio::test]
async fn the_committed_run_replays_offline() {
    let state = run(Args {
        plan: Plan::Replay(committed_cassette()),
        task: DEFAULT_TASK.to_owned(),
    })
    .await
    .unwrap();
    assert!(state.done);
    assert_eq!(state.step_index, 4);
    assert_eq!(
        state.final_answer.as_deref(),
        Some("Oslo is about 1701.6 miles (2738.4 km) from Lisbon as the crow flies.")
    );
    let tools: Vec<&str> = state.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        tools,
        [
            "atlas.lookup@1",
            "atlas.lookup@1",
            "geo.distance_km@1",
            "units.convert_length@1"
        ]
    );
    assert!(state.tool_calls.iter().all(|c| c.error.is_none()));
    // The first step's two lookups were asked for in one turn.
    assert_eq!(state.tool_calls[0].step, 0);
    assert_eq!(state.tool_calls[1].step, 0);
    let answer = state.trajectory.last().unwrap();
    assert!(answer.tool_call.is_none());
    assert_eq!(Some(&answer.thought), state.final_answer.as_ref());
}

#[tokio::test]
async fn the_committed_cassette_is_what_the_script_records() {
    let dir = std::env::temp_dir().join(format!("tackle-agent-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fresh = dir.join("agent.scripted.json");
    run(Args {
        plan: Plan::Script(fresh.clone()),
        task: DEFAULT_TASK.to_owned(),
    })
    .await
    .unwrap();
    let recorded = std::fs::read_to_string(&fresh).unwrap();
    let committed = std::fs::read_to_string(committed_cassette()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        recorded == committed,
        "examples/cassettes/agent.scripted.json is stale: run `cargo run --example agent -- --script`"
    );
}

#[tokio::test]
async fn another_task_is_refused_offline_with_the_recorded_one_named() {
    let error = run(Args {
        plan: Plan::Replay(committed_cassette()),
        task: "How far is Rome from Oslo?".to_owned(),
    })
    .await
    .unwrap_err();
    assert!(error.contains("replay divergence"), "{error}");
    assert!(error.contains(DEFAULT_TASK), "{error}");
}

#[test]
fn a_replay_without_a_task_answers_the_recorded_one() {
    assert_eq!(
        agent_example::recorded_task(&committed_cassette()).unwrap(),
        DEFAULT_TASK
    );
}

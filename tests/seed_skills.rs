//! Seed 004 (Stargraph skills): the ReAct records' shapes on the wire. Each test is a
//! row of `docs/seeds.md`.

use serde_json::json;
use tackle::agent::react::{ReactState, ReactStep, ToolCallRecord};

#[test]
fn react_records_read_the_seeds_json() {
    // As a Python ReactSkill would write its state.
    let state: ReactState = serde_json::from_value(json!({
        "trajectory": [
            {"thought": "look it up",
             "tool_call": {"name": "atlas.lookup@1", "arguments": {"city": "Oslo"},
                           "result": {"country": "Norway"}, "error": null},
             "observation": "{\"country\":\"Norway\"}"},
            {"thought": "Norway.", "tool_call": null, "observation": null}
        ],
        "tool_calls": [
            {"name": "atlas.lookup@1", "arguments": {"city": "Oslo"},
             "result": {"country": "Norway"}, "error": null}
        ],
        "done": true,
        "error_budget": 3,
        "final_answer": "Norway.",
        "step_index": 2
    }))
    .unwrap();
    assert!(state.done);
    assert_eq!(state.trajectory.len(), 2);
    assert_eq!(state.trajectory[1].tool_call, None);
    assert_eq!(state.tool_calls[0].name, "atlas.lookup@1");
    assert_eq!(
        state.tool_calls[0].result,
        Some(json!({"country": "Norway"}))
    );
}

#[test]
fn react_state_defaults_are_the_seeds() {
    let state: ReactState = serde_json::from_value(json!({})).unwrap();
    assert_eq!(state, ReactState::default());
    assert!(state.trajectory.is_empty() && state.tool_calls.is_empty());
    assert!(!state.done);
    assert_eq!(state.error_budget, 3);
    assert_eq!(state.final_answer, None);
    assert_eq!(state.step_index, 0);
    let step: ReactStep = serde_json::from_value(json!({"thought": "t"})).unwrap();
    assert_eq!(step.tool_call, None);
    assert_eq!(step.observation, None);
    let record: ToolCallRecord = serde_json::from_value(json!({"name": "a.b@1"})).unwrap();
    assert_eq!(record.arguments, json!({}));
    assert_eq!(record.result, None);
    assert_eq!(record.error, None);
}

#[test]
fn react_records_write_the_seeds_field_names() {
    let record = ToolCallRecord {
        name: "geo.distance@1".into(),
        arguments: json!({"from": "Oslo"}),
        result: None,
        error: Some("`geo.distance@1` failed: no road".into()),
        error_kind: None,
        call_id: None,
        step: 0,
    };
    let written = serde_json::to_value(ReactStep {
        thought: "how far?".into(),
        tool_call: Some(record),
        observation: Some("no road".into()),
    })
    .unwrap();
    assert_eq!(
        written,
        json!({
            "thought": "how far?",
            "tool_call": {"name": "geo.distance@1", "arguments": {"from": "Oslo"},
                          "result": null, "error": "`geo.distance@1` failed: no road", "step": 0},
            "observation": "no road"
        })
    );
    let state = serde_json::to_value(ReactState::default()).unwrap();
    let keys: Vec<&String> = state.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "trajectory",
            "tool_calls",
            "done",
            "error_budget",
            "final_answer",
            "step_index"
        ]
    );
}

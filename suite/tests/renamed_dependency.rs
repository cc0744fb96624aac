//! `#[tool]` and `#[derive(SkillState)]` in a crate that names its tackle dependency
//! `tackle2` (`tackle2 = { package = "tackle", ... }`), and through a re-export given
//! with `crate = "..."`: the expansions find the crate, and the tools register and run
//! with the attribute values as written.

use serde_json::json;
use tackle::agent::skill::SkillState;
use tackle::spec::{ExecutionMode, ResultShaping, Trust};
use tackle::{spec::ReplayPolicy, Runtime, SideEffects, ToolContext};
use tackle_fixture_renamed::{Outline, Summary};

fn is_skill_state<S: SkillState>() {}

#[tokio::test]
async fn tools_of_a_renamed_dependency_register_and_run() {
    let rt = Runtime::from_inventory().unwrap();
    let ctx = ToolContext::new();
    assert_eq!(
        rt.call("renamed.reverse", json!({"text": "abc"}), &ctx)
            .await
            .unwrap(),
        "cba"
    );
    assert_eq!(
        rt.call("renamed.shout", json!({"text": "abc"}), &ctx)
            .await
            .unwrap(),
        "ABC"
    );
    let spec = rt.registry().resolve("renamed.reverse@1").unwrap().spec();
    assert_eq!(spec.side_effects, SideEffects::Write);
    assert_eq!(spec.replay_policy, ReplayPolicy::FailLoud);
    assert_eq!(spec.execution_mode, ExecutionMode::Sequential);
    assert_eq!(spec.result_shaping, Some(ResultShaping::SpillToFile));
    assert_eq!(spec.trust, Trust::Trusted);
    assert_eq!(
        spec.cost_estimate.map(|d| d.to_string()),
        Some("0.01".into())
    );
    assert_eq!(spec.examples[0].input, json!({"text": "ab"}));
    assert_eq!(
        rt.registry()
            .resolve("renamed.shout")
            .unwrap()
            .spec()
            .side_effects,
        SideEffects::Read
    );
    is_skill_state::<Summary>();
    is_skill_state::<Outline>();
}

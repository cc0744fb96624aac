use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle::SkillState;

/// `skill_state` takes `crate = "..."` only, and a path there.
#[derive(Serialize, Deserialize, JsonSchema, SkillState)]
#[skill_state(krate = "::tackle")]
struct Trip {
    destination: String,
}

#[derive(Serialize, Deserialize, JsonSchema, SkillState)]
#[skill_state(crate = "not a path")]
struct Leg {
    from: String,
}

fn main() {}

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle::SkillState;

/// A tuple struct has no output keys.
#[derive(Serialize, Deserialize, JsonSchema, SkillState)]
struct Answer(String);

fn main() {}

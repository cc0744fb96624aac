//! Test fixture: tools whose crate names the `tackle` dependency `tackle2`, and one
//! that reaches tackle through a re-export given with `crate = "..."`. That this crate
//! compiles at all is half the proof; `tests/renamed_dependency.rs` is the other half.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// tackle, re-exported under another name, as a crate built on tackle might.
pub use tackle2 as engine;

/// Reverse a text.
#[tackle2::tool(
    namespace = "renamed",
    side_effects = write,
    replay_policy = fail_loud,
    execution_mode = sequential,
    result_shaping = spill_to_file,
    trust = trusted,
    cost_estimate = "0.01",
    examples = [r#"{"text": "ab"}"#]
)]
pub fn reverse(text: String) -> String {
    text.chars().rev().collect()
}

/// Shout a text, reached through the re-export.
#[tackle2::tool(crate = "crate::engine", namespace = "renamed", side_effects = read)]
pub fn shout(text: String) -> String {
    text.to_uppercase()
}

/// A skill's state, derived through the renamed dependency.
#[derive(Serialize, Deserialize, JsonSchema, tackle2::SkillState)]
pub struct Summary {
    /// How many words.
    pub words: u32,
}

/// A skill's state, derived through the re-export given with `crate = "..."`.
#[derive(Serialize, Deserialize, JsonSchema, tackle2::SkillState)]
#[skill_state(crate = "crate::engine")]
pub struct Outline {
    /// The headings.
    pub headings: Vec<String>,
}

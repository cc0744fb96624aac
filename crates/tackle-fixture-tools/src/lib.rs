//! Tools defined outside the `tackle` crate's tests, to show that link-time
//! registration works across crates. A binary that uses nothing else from this crate
//! must still link it: `use tackle_fixture_tools as _;`.

use tackle::tool;

/// Reverse a string, character by character.
#[tool(namespace = "fixture.text", version = "1.0.0", side_effects = none, tags = ["text"])]
pub fn reverse(
    /// the text to reverse
    text: String,
) -> String {
    text.chars().rev().collect()
}

/// Count the words of a text (runs of non-whitespace).
#[tool(namespace = "fixture.text", version = "1.0.0", side_effects = none, tags = ["text", "stats"])]
pub fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

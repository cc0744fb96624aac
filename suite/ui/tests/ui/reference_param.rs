use tackle::tool;

/// Measure text.
#[tool(side_effects = none)]
fn measure(text: &str) -> usize {
    text.len()
}

fn main() {}

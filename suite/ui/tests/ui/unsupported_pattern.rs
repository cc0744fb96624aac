use tackle::tool;

/// Add a pair.
#[tool(side_effects = none)]
fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}

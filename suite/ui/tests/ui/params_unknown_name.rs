use tackle::tool;

/// Add two integers.
#[tool(side_effects = none, params(a = "left", c = "right"))]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

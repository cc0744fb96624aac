use tackle::tool;

/// Add two integers.
#[tool(version = "1 beta", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

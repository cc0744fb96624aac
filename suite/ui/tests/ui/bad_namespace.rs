use tackle::tool;

/// Add two integers.
#[tool(namespace = "math..core", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

use tackle::tool;

/// Add two integers.
#[tool(namespace = "math", side_effects = none, namespace = "maths")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

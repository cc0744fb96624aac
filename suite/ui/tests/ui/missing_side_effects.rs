use tackle::tool;

/// Add two integers.
#[tool(namespace = "math", version = "1")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

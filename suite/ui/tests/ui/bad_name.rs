use tackle::tool;

/// Add two integers.
#[tool(name = "add two", side_effects = none)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

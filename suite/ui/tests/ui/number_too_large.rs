use tackle::tool;

/// Adds two numbers.
#[tool(side_effects = none, max_result_tokens = 5000000000)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Subtracts two numbers.
#[tool(side_effects = none, timeout_ms = 100000000000000000000)]
fn sub(a: i64, b: i64) -> i64 {
    a - b
}

fn main() {}

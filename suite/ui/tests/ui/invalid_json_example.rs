use tackle::tool;

/// Add two integers.
#[tool(side_effects = none, examples = [r#"{"a": 1, "b": }"#])]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}

use tackle::tool;

#[tool(side_effects = none, cost_estimate = 1.5, timeout = 10)]
fn add<T>(a: T) -> i64 {
    0
}

fn main() {}

use tackle::tool;

/// Echo anything.
#[tool(side_effects = none)]
fn echo<T: Clone>(value: T) -> T {
    value
}

fn main() {}

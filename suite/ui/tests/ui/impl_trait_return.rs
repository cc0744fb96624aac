use tackle::tool;

/// Show a value.
#[tool(side_effects = none)]
fn show(value: String) -> impl std::fmt::Display {
    value
}

fn main() {}

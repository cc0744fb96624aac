use tackle::tool;

/// Show a value.
#[tool(side_effects = none)]
fn show(value: impl std::fmt::Display) -> String {
    value.to_string()
}

fn main() {}

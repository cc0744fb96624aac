use tackle::tool;

/// Not a function.
#[tool(side_effects = none)]
struct Add;

fn main() {}

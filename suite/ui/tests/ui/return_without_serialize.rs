use tackle::tool;

#[derive(schemars::JsonSchema)]
struct Receipt {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
fn place(id: u32) -> Receipt {
    Receipt { id }
}

fn main() {}

use tackle::tool;

#[derive(schemars::JsonSchema)]
struct Order {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
fn place(order: Order) -> u32 {
    order.id
}

fn main() {}

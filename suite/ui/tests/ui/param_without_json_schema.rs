use tackle::tool;

#[derive(serde::Deserialize)]
struct Order {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
fn place(order: Order) -> u32 {
    order.id
}

fn main() {}

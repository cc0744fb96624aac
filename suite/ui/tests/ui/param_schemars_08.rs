use tackle::tool;

// `JsonSchema` of schemars 0.8: another trait than tackle's (schemars 1.x).
#[derive(serde::Deserialize, schemars08::JsonSchema)]
#[schemars(crate = "schemars08")]
struct Order {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
fn place(order: Order) -> u32 {
    order.id
}

fn main() {}

use tackle::tool;

struct Order {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
fn place(note: String, order: Order) -> String {
    format!("{note} {}", order.id)
}

fn main() {}

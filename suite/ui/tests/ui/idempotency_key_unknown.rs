use tackle::tool;

/// Place an order.
#[tool(side_effects = external, idempotency_key = "order")]
fn place(order_id: String) -> bool {
    order_id.is_empty()
}

fn main() {}

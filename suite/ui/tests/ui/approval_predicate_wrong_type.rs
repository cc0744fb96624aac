use tackle::tool;

/// Whether a refund is large: takes the amount, not the call's input.
fn is_large(amount: u64) -> bool {
    amount > 100
}

/// Refund an order.
#[tool(side_effects = external, needs_approval = is_large)]
fn refund(order_id: String, amount: u64) -> bool {
    !order_id.is_empty() && amount > 0
}

fn main() {}

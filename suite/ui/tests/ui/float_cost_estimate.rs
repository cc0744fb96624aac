use tackle::tool;

/// Charge a card.
#[tool(side_effects = external, cost_estimate = 0.25)]
fn charge(cents: u64) -> u64 {
    cents
}

fn main() {}

use tackle::tool;

#[derive(serde::Serialize)]
struct Receipt {
    id: u32,
}

/// Place an order.
#[tool(side_effects = write)]
async fn place(id: u32) -> Result<Receipt, String> {
    Ok(Receipt { id })
}

fn main() {}

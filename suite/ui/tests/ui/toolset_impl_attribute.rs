use tackle::{tool, tools};

struct Shop;

#[tools(namespace = "shop", side_effects = read)]
impl Shop {
    /// The price of an item, in cents.
    #[tool(side_effects = read)]
    fn price(&self, item: String) -> u64 {
        item.len() as u64
    }
}

fn main() {}

use tackle::tool;

/// Summarise a page.
#[tool(side_effects = none, preferred_model = " ")]
fn summarise(page: String) -> String {
    page
}

fn main() {}

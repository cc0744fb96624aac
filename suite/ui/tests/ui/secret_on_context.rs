use tackle::{tool, ToolContext};

/// Logs in.
#[tool(side_effects = read)]
fn login(#[secret] ctx: &ToolContext, user: String) -> String {
    let _ = ctx;
    user
}

fn main() {}

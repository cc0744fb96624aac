use tackle::{tool, Args};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Search.
#[tool(side_effects = read)]
fn search(Args(q): Args<Query>, limit: u32) -> Vec<String> {
    vec![q.text; limit as usize]
}

fn main() {}

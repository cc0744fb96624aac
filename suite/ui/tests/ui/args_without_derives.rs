use tackle::{tool, Args};

#[derive(serde::Deserialize)]
struct Query {
    text: String,
}

/// Search.
#[tool(side_effects = read)]
fn search(Args(q): Args<Query>) -> Vec<String> {
    vec![q.text]
}

fn main() {}

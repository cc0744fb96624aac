use tackle::tool;

/// Logs in.
#[tool(side_effects = read)]
fn login(#[secret(always)] password: String) -> usize {
    password.len()
}

fn main() {}

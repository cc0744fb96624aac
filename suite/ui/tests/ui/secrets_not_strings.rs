use tackle::tool;

/// Send a message.
#[tool(side_effects = external, secrets = [API_TOKEN])]
fn send(text: String) -> bool {
    !text.is_empty()
}

fn main() {}

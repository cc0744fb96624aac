use tackle::tool;

/// Delete a file.
#[tool(side_effects = mutate)]
fn delete(path: String) -> bool {
    path.is_empty()
}

fn main() {}

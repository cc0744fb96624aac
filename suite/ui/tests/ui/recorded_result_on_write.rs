use tackle::tool;

/// Delete a file.
#[tool(side_effects = write, replay_policy = recorded_result)]
fn delete(path: String) -> bool {
    path.is_empty()
}

fn main() {}

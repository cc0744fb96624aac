use tackle::tool;

/// Runs a user's script.
#[tool(side_effects = external, sandbox = docker)]
fn run_script(source: String) -> String {
    source
}

fn main() {}

use tackle::tool;

/// Read a file.
#[tool(side_effects = read, blocking)]
async fn read(path: String) -> String {
    path
}

fn main() {}

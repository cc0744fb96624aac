use tackle::tool;

/// Read a log file.
#[tool(side_effects = read, max_result_tokens = 500, result_shaping = head)]
fn read_log(path: String) -> String {
    path
}

fn main() {}

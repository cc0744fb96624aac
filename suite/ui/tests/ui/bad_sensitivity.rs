use tackle::tool;

/// Read a payroll record.
#[tool(side_effects = read, sensitivity = top_secret)]
fn payroll(id: String) -> String {
    id
}

fn main() {}

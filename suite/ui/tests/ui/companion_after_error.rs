use tackle::tool;

/// Add two integers.
#[tool(namespace = "math")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

// The tool has an error (no `side_effects`); its companion item is still there, so
// these lines add no errors of their own: only the real one shows.
fn main() {
    let key: &str = add::KEY;
    let spec = add::spec();
    println!("{key} {}", spec.name);
}

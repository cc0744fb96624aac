//! Writes 1,000 `#[tool]` functions to `$OUT_DIR/tools.rs`. Attribute arguments must
//! be literals, so distinct tools cannot come from a `macro_rules!` loop.

use std::fmt::Write;

fn main() {
    let mut code = String::new();
    for i in 0..1000 {
        let _ = write!(
            code,
            "/// Generated tool {i}: adds {i} to its input.\n\
             #[tool(namespace = \"bench.ns{ns}\", version = \"1.{v}\", side_effects = none, tags = [\"bench\"])]\n\
             pub fn tool_{i}(\n    /// the input\n    x: i64,\n    label: Option<String>,\n) -> i64 {{\n    let _ = label;\n    x.saturating_add({i})\n}}\n\n",
            ns = i % 10,
            v = i % 3,
        );
    }
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{out}/tools.rs"), code).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=build.rs");
}

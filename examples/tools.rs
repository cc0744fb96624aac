//! A program's tools from a terminal: this example is the three-line
//! `src/bin/tools.rs` of docs/cli.md, with two tools beside it.
//!
//! ```text
//! cargo run --example tools --features cli -- list
//! cargo run --example tools --features cli -- show atlas.lookup --form anthropic
//! cargo run --example tools --features cli -- call atlas.lookup '{"city":"Oslo"}'
//! cargo run --example tools --features cli -- call notes.add '{"text":"hi"}' --grant notes:write
//! cargo run --example tools --features cli -- serve --stdio
//! ```

use tackle::tool;

/// Looks a city up: its country and coordinates.
#[tool(namespace = "atlas", side_effects = none, tags = ["geo"])]
fn lookup(city: String) -> serde_json::Value {
    match city.as_str() {
        "Oslo" => serde_json::json!({"country": "Norway", "lat": 59.91, "lon": 10.75}),
        "Lisbon" => serde_json::json!({"country": "Portugal", "lat": 38.72, "lon": -9.14}),
        _ => serde_json::json!({"country": null}),
    }
}

/// Adds a note (needs the `notes:write` capability).
#[tool(namespace = "notes", side_effects = write, requires_capability = "notes:write")]
fn add(text: String) -> String {
    format!("noted: {text}")
}

fn main() {
    tackle::cli::main()
}

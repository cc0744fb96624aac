//! An MCP server over a few example tools: text statistics, unit conversion, a small
//! note store and a report that streams its sections with progress.
//!
//! ```sh
//! cargo run --example mcp_server --features mcp                            # MCP over stdio
//! cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8765 # streamable HTTP at /mcp
//! ```
//!
//! Only JSON-RPC goes to stdout; the banner goes to stderr. The README shows how to
//! wire it into an MCP client's configuration.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Serialize;
use tackle::mcp::{serve_http, serve_stdio, McpServer};
use tackle::{context::Resource, tool, Runtime, ToolContext};

/// Statistics about a text.
#[derive(Serialize, JsonSchema)]
pub struct TextStats {
    /// Number of words.
    pub words: usize,
    /// Number of characters.
    pub characters: usize,
    /// The longest word, if any.
    pub longest_word: Option<String>,
}

/// Count the words and characters of a text and find its longest word.
#[tool(namespace = "text", side_effects = none, tags = ["text"])]
pub fn stats(
    /// The text to measure.
    text: String,
) -> TextStats {
    TextStats {
        words: text.split_whitespace().count(),
        characters: text.chars().count(),
        longest_word: text
            .split_whitespace()
            .max_by_key(|w| w.chars().count())
            .map(str::to_owned),
    }
}

/// Convert a length between kilometres (`km`), miles (`mi`), metres (`m`) and feet (`ft`).
#[tool(namespace = "units", side_effects = none)]
pub fn convert(
    /// The length to convert.
    value: f64,
    /// Its unit: km, mi, m or ft.
    from: String,
    /// The unit wanted: km, mi, m or ft.
    to: String,
) -> Result<f64, String> {
    let metres = |unit: &str| match unit {
        "km" => Ok(1000.0),
        "mi" => Ok(1609.344),
        "m" => Ok(1.0),
        "ft" => Ok(0.3048),
        other => Err(format!("unknown unit `{other}`: use km, mi, m or ft")),
    };
    Ok(value * metres(&from)? / metres(&to)?)
}

/// The notes kept by the server.
#[derive(Default)]
pub struct Notes(pub Mutex<Vec<String>>);

/// Save a note; returns its number.
#[tool(namespace = "notes", side_effects = write, requires_capability = "notes:write")]
pub fn save(
    notes: Resource<Notes>,
    /// The note's text.
    text: String,
) -> usize {
    let mut all = notes.0.lock().unwrap_or_else(|e| e.into_inner());
    all.push(text);
    all.len()
}

/// Find the notes that contain a word.
#[tool(namespace = "notes", side_effects = read)]
pub fn search(
    notes: Resource<Notes>,
    /// The word to look for (case-insensitive).
    word: String,
) -> Vec<String> {
    let word = word.to_lowercase();
    let all = notes.0.lock().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .filter(|n| n.to_lowercase().contains(&word))
        .cloned()
        .collect()
}

/// Write a report of some sections, reporting progress as it goes.
#[tool(namespace = "report", side_effects = none)]
pub async fn render(
    ctx: &ToolContext,
    /// The report's title.
    title: String,
    /// How many sections.
    sections: u32,
) {
    ctx.stream(format!("# {title}\n"));
    for i in 1..=sections {
        ctx.report_progress(u64::from(i), Some(u64::from(sections)));
        ctx.stream(format!("## Section {i}\n"));
        tokio::task::yield_now().await;
    }
}

/// The server: every linked tool, with the note store and the grant to write notes.
pub fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
    let runtime = Arc::new(Runtime::from_inventory()?);
    let ctx = ToolContext::new()
        .with_grant("notes:write")
        .with_resource(Notes::default());
    // The name and version clients see (`identity!()` would give the package's).
    let identity = tackle::mcp::Identity::new("tackle-example", env!("CARGO_PKG_VERSION"));
    Ok(McpServer::new(runtime, identity, ctx)?)
}

/// Serves over stdio, or over HTTP with `--http [addr]`.
pub async fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    let tools = server.names().iter().count();
    if args.first().map(String::as_str) == Some("--http") {
        let addr = args
            .get(1)
            .map_or("127.0.0.1:8765", String::as_str)
            .parse()?;
        let http = serve_http(server, addr).await?;
        eprintln!("serving {tools} tools over MCP at {}", http.url());
        std::future::pending::<()>().await;
        Ok(())
    } else {
        eprintln!("serving {tools} tools over MCP on stdio");
        Ok(serve_stdio(server).await?)
    }
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run(&args).await
}

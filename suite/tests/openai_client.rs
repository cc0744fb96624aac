//! The OpenAI-compatible client against a server this test starts on 127.0.0.1: the
//! wire format both ways (tools, parallel tool calls, the conversation), strict mode,
//! and every way an endpoint can fail, each a typed `ModelError`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::agent::model::{
    ChatModel, ChatRequest, Message, ModelError, ToolCallRequest, ToolDefinition,
};
use tackle::agent::openai::OpenAiModel;
use tackle::{tool, Agent, Run, Runtime};

use crate::support::fake_endpoint;
use fake_endpoint::{FakeEndpoint, Reply};

fn completion(message: Value) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    })
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "weather_tomorrow".into(),
        description: "Tomorrow's forecast for a city.".into(),
        parameters: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"type": "string", "enum": ["metric", "imperial"]},
            },
            "required": ["city"],
        }),
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("Be brief."),
            Message::user("Weather in Oslo and Bergen?"),
        ],
        tools: vec![weather_tool()].into(),
        response_schema: None,
    }
}

fn two_calls() -> Value {
    completion(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "weather_tomorrow", "arguments": "{\"city\": \"Oslo\"}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "weather_tomorrow", "arguments": "{\"city\":\"Bergen\",\"units\":null}"}},
        ],
    }))
}

#[tokio::test]
async fn sends_tools_and_reads_parallel_tool_calls() {
    let server = FakeEndpoint::start(vec![Reply::Json(200, two_calls())]).await;
    let model = OpenAiModel::new(&server.base, "gpt-test")
        .unwrap()
        .with_api_key("sk-local-test");
    let answer = model.complete(&request()).await.unwrap();

    assert_eq!(answer.text, "");
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].id, "call_a");
    assert_eq!(answer.tool_calls[0].name, "weather_tomorrow");
    assert_eq!(answer.tool_calls[0].arguments, json!({"city": "Oslo"}));
    // Not strict: what the model sent is kept as sent.
    assert_eq!(
        answer.tool_calls[1].arguments,
        json!({"city": "Bergen", "units": null})
    );

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0]
        .head
        .starts_with("POST /v1/chat/completions HTTP/1.1"));
    assert!(seen[0]
        .head
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-local-test"));
    let body = &seen[0].body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo and Bergen?"},
        ])
    );
    let function = &body["tools"][0]["function"];
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(function["name"], "weather_tomorrow");
    assert_eq!(function["description"], "Tomorrow's forecast for a city.");
    assert_eq!(function["parameters"]["required"], json!(["city"]));
    assert!(function["parameters"].get("$schema").is_none());
    // Strict mode off, said as OpenAI's form says it.
    assert_eq!(function["strict"], false);
}

#[tokio::test]
async fn strict_mode_sends_the_strict_form_and_drops_nulls() {
    let server = FakeEndpoint::start(vec![Reply::Json(200, two_calls())]).await;
    let model = OpenAiModel::new(&server.base, "gpt-test")
        .unwrap()
        .with_strict(true);
    let answer = model.complete(&request()).await.unwrap();
    assert_eq!(answer.tool_calls[1].arguments, json!({"city": "Bergen"}));

    let function = server.seen()[0].body["tools"][0]["function"].clone();
    assert_eq!(function["strict"], true);
    assert_eq!(function["parameters"]["additionalProperties"], false);
    assert_eq!(function["parameters"]["required"], json!(["city", "units"]));
    assert_eq!(
        function["parameters"]["properties"]["units"]["type"],
        json!(["string", "null"])
    );
}

#[tokio::test]
async fn the_conversation_goes_out_in_wire_form() {
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        completion(json!({"role": "assistant", "content": "Rain in Bergen."})),
    )])
    .await;
    let model = OpenAiModel::new(&server.base, "gpt-test").unwrap();
    let mut req = request();
    req.messages.push(Message::assistant(
        "",
        vec![ToolCallRequest {
            id: "call_a".into(),
            name: "weather_tomorrow".into(),
            arguments: json!({"city": "Bergen"}),
        }],
    ));
    req.messages.push(Message::tool("call_a", "rain, 9°C"));
    let answer = model.complete(&req).await.unwrap();
    assert_eq!(answer.text, "Rain in Bergen.");
    assert!(answer.tool_calls.is_empty());

    let messages = server.seen()[0].body["messages"].clone();
    assert_eq!(
        messages[2],
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "call_a", "type": "function",
                            "function": {"name": "weather_tomorrow", "arguments": "{\"city\":\"Bergen\"}"}}],
        })
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "rain, 9°C", "tool_call_id": "call_a"})
    );
}

#[tokio::test]
async fn error_statuses_are_typed_with_the_endpoints_message() {
    let server = FakeEndpoint::start(vec![
        Reply::Json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        ),
        Reply::Json(500, json!("upstream exploded")),
        Reply::Json(401, json!({"error": {"message": "Incorrect API key"}})),
    ])
    .await;
    let model = OpenAiModel::new(&server.base, "gpt-test").unwrap();
    let statuses = [
        (429, "Rate limit reached"),
        (500, "\"upstream exploded\""),
        (401, "Incorrect API key"),
    ];
    for (status, message) in statuses {
        match model.complete(&request()).await {
            Err(ModelError::Status { status: s, body }) => {
                assert_eq!(s, status);
                assert_eq!(body, message);
            }
            other => panic!("expected status {status}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_silent_endpoint_times_out() {
    let server = FakeEndpoint::start(vec![Reply::Hang]).await;
    let model = OpenAiModel::new(&server.base, "gpt-test")
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let error = model.complete(&request()).await.unwrap_err();
    assert_eq!(error, ModelError::Timeout { after_ms: 300 });
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

/// A reply whose last tool call was cut off keeps its complete calls; the cut one is
/// kept with its raw text and listed as unreadable.
#[tokio::test]
async fn a_cut_off_tool_call_spoils_only_itself() {
    let mut reply = completion(json!({"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function",
         "function": {"name": "weather_tomorrow", "arguments": "{\"city\": \"Oslo\"}"}},
        {"id": "b", "type": "function",
         "function": {"name": "weather_tomorrow", "arguments": "{\"city\": "}}
    ]}));
    reply["usage"] = json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17});
    let server = FakeEndpoint::start(vec![Reply::Json(200, reply)]).await;
    let model = OpenAiModel::new(&server.base, "gpt-test").unwrap();
    let answer = model.complete(&request()).await.unwrap();
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(answer.tool_calls[1].arguments, json!("{\"city\": "));
    assert_eq!(answer.unreadable.len(), 1);
    assert_eq!(answer.unreadable[0].index, 1);
    assert!(
        answer.unreadable[0].error.contains("not JSON"),
        "{:?}",
        answer.unreadable
    );
    let usage = answer.usage.expect("the completion's usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (12, 5));
}

#[tokio::test]
async fn malformed_bodies_are_typed_errors() {
    let cases: Vec<(Reply, &str)> = vec![
        (Reply::Body("<html>gateway</html>"), "not JSON"),
        (
            Reply::Json(200, json!({"object": "list"})),
            "choices[0].message",
        ),
        (
            Reply::Json(200, completion(json!({"role": "assistant", "content": 7}))),
            "`content` is not a string",
        ),
        (
            Reply::Json(
                200,
                completion(json!({"role": "assistant", "tool_calls": [
                    {"type": "function", "function": {"name": "x", "arguments": "{}"}}
                ]})),
            ),
            "no string `/id`",
        ),
        (
            Reply::Json(
                200,
                completion(json!({"role": "assistant", "tool_calls": {"id": "c"}})),
            ),
            "`tool_calls` is not a list",
        ),
        (Reply::Truncated, "body could not be read"),
    ];
    let replies = cases.iter().map(|(r, _)| r.clone()).collect();
    let server = FakeEndpoint::start(replies).await;
    let model = OpenAiModel::new(&server.base, "gpt-test").unwrap();
    for (_, expected) in &cases {
        match model.complete(&request()).await {
            Err(ModelError::Malformed { message }) => {
                assert!(message.contains(expected), "{message:?} lacks {expected:?}")
            }
            other => panic!("expected Malformed({expected}), got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let model = OpenAiModel::new(format!("http://{addr}/v1"), "gpt-test").unwrap();
    match model.complete(&request()).await {
        Err(ModelError::Transport { message }) => assert!(!message.is_empty()),
        other => panic!("expected Transport, got {other:?}"),
    }
    assert!(OpenAiModel::new("localhost:8080", "m").is_err());
}

/// Tomorrow's forecast for a city.
#[tool(namespace = "weather", side_effects = read)]
fn tomorrow(city: String) -> String {
    match city.as_str() {
        "Bergen" => "rain, 9°C".to_owned(),
        _ => "clear, 12°C".to_owned(),
    }
}

#[tokio::test]
async fn a_react_run_over_the_wire() {
    let server = FakeEndpoint::start(vec![
        Reply::Json(200, two_calls()),
        Reply::Json(
            200,
            completion(json!({"role": "assistant", "content": "Oslo clear, Bergen rain."})),
        ),
    ])
    .await;
    let model = OpenAiModel::new(&server.base, "gpt-test")
        .unwrap()
        .with_strict(true);
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let agent = Agent::new(model).tools(["weather.tomorrow"]);
    let state = agent
        .run(&Run::new(&runtime), "Weather in Oslo and Bergen?")
        .await
        .unwrap()
        .state;
    assert_eq!(
        state.final_answer.as_deref(),
        Some("Oslo clear, Bergen rain.")
    );
    assert_eq!(state.tool_calls.len(), 2);
    assert_eq!(state.tool_calls[1].result, Some(json!("rain, 9°C")));

    // The second request carries both calls and both observations.
    let second = server.seen()[1].body["messages"].clone();
    let roles: Vec<&str> = second
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
    assert_eq!(second[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(second[3]["tool_call_id"], "call_a");
    assert_eq!(second[4]["tool_call_id"], "call_b");
}

#[test]
fn an_answer_schema_is_sent_as_a_strict_response_format() {
    let mut asking = request();
    asking.response_schema = Some(json!({
        "type": "object",
        "properties": {"rain": {"type": "boolean"}, "note": {"type": "string"}},
        "required": ["rain"]
    }));
    let model = OpenAiModel::new("http://127.0.0.1:1/v1", "gpt-test").unwrap();
    assert!(model.structured_output());
    let body = model.body(&asking);
    let format = &body["response_format"];
    assert_eq!(format["type"], json!("json_schema"));
    assert_eq!(format["json_schema"]["strict"], json!(true));
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["rain", "note"]),
        "the strict form: {format}"
    );
}

//! The Anthropic, Gemini, OpenAI Responses and Ollama clients, each against a server
//! this test starts on 127.0.0.1 that speaks its provider's protocol: a tool-call turn
//! with parallel calls (and the provider's tool form and auth going out), tool results
//! going back in the provider's form, an error status, a timeout and malformed bodies,
//! each a typed `ModelError`.

use crate::support::fake_endpoint;

use std::time::{Duration, Instant};

use fake_endpoint::{FakeEndpoint, Reply};
use serde_json::{json, Value};
use tackle::agent::genai::{GenAiModel, GenAiProvider};
use tackle::agent::model::{
    ChatModel, ChatRequest, Message, ModelError, ToolCallRequest, ToolDefinition, Usage,
};
use tackle::agent::ollama::OllamaModel;
use tackle::agent::providers::{definition_of, Provider};
use tackle::content::ContentPart;

fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]
    })
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You forecast."),
            Message::user("Rain in Oslo or Bergen?"),
        ],
        tools: vec![ToolDefinition {
            name: "weather_tomorrow".into(),
            description: "Tomorrow's forecast.".into(),
            parameters: schema(),
        }]
        .into(),
        response_schema: None,
    }
}

/// The conversation after one parallel turn: two calls and their results.
fn with_results() -> ChatRequest {
    let mut request = request();
    let call = |id: &str, city: &str| ToolCallRequest {
        id: id.into(),
        name: "weather_tomorrow".into(),
        arguments: json!({"city": city}),
    };
    request.messages.push(Message::assistant(
        "Checking both.",
        vec![call("c1", "Oslo"), call("c2", "Bergen")],
    ));
    request.messages.push(Message::tool("c1", "clear"));
    request.messages.push(Message::tool("c2", "rain"));
    request
}

fn model(provider: GenAiProvider, server: &FakeEndpoint) -> GenAiModel {
    GenAiModel::new(provider, &format!("{}/", server.base), "test-key", "m-1").unwrap()
}

/// What each provider answers for a turn with two parallel calls of the tool.
fn parallel_answer(provider: GenAiProvider) -> Value {
    match provider {
        GenAiProvider::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m-1",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather_tomorrow", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "weather_tomorrow", "input": {"city": "Bergen", "days": 1}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 21, "output_tokens": 13}
        }),
        GenAiProvider::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "Checking both."},
                {"functionCall": {"name": "weather_tomorrow", "args": {"city": "Oslo"}}},
                {"functionCall": {"name": "weather_tomorrow", "args": {"city": "Bergen", "days": 1}}}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 21, "candidatesTokenCount": 13, "totalTokenCount": 34}
        }),
        _ => json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "m-1",
            "output": [
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather_tomorrow",
                 "arguments": "{\"city\":\"Oslo\",\"days\":null}", "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather_tomorrow",
                 "arguments": "{\"city\":\"Bergen\",\"days\":1}", "status": "completed"}
            ],
            "usage": {"input_tokens": 21, "output_tokens": 13, "total_tokens": 34}
        }),
    }
}

const GENAI: [GenAiProvider; 3] = [
    GenAiProvider::Anthropic,
    GenAiProvider::Gemini,
    GenAiProvider::OpenAiResponses,
];

#[tokio::test]
async fn a_parallel_tool_call_turn_in_each_providers_protocol() {
    for provider in GENAI {
        let server = FakeEndpoint::start(vec![Reply::Json(200, parallel_answer(provider))]).await;
        let answer = model(provider, &server).complete(&request()).await.unwrap();
        assert_eq!(answer.text, "Checking both.", "{provider:?}");
        let calls: Vec<(&str, &Value)> = answer
            .tool_calls
            .iter()
            .map(|c| (c.name.as_str(), &c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                ("weather_tomorrow", &json!({"city": "Oslo"})),
                ("weather_tomorrow", &json!({"city": "Bergen", "days": 1}))
            ],
            "{provider:?}: both calls, in order (a strict null dropped)"
        );
        assert_ne!(
            answer.tool_calls[0].id, answer.tool_calls[1].id,
            "{provider:?}"
        );
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 21,
                output_tokens: 13
            }),
            "{provider:?}"
        );

        let seen = &server.seen()[0];
        let head = seen.head.to_ascii_lowercase();
        let body = &seen.body;
        match provider {
            GenAiProvider::Anthropic => {
                assert!(head.starts_with("post /v1/messages "), "{head}");
                assert!(head.contains("x-api-key: test-key"), "{head}");
                assert_eq!(body["system"], json!("You forecast."), "{body}");
                let mut input_schema = schema();
                input_schema.as_object_mut().unwrap().remove("$schema");
                assert_eq!(body["tools"][0]["input_schema"], input_schema, "{body}");
                assert_eq!(body["tools"][0]["name"], json!("weather_tomorrow"));
                assert!(body["max_tokens"].as_u64().is_some(), "{body}");
            }
            GenAiProvider::Gemini => {
                assert!(
                    head.starts_with("post /v1/models/m-1:generatecontent "),
                    "{head}"
                );
                assert!(head.contains("x-goog-api-key: test-key"), "{head}");
                let declaration = &body["tools"][0]["functionDeclarations"][0];
                assert_eq!(declaration["name"], json!("weather_tomorrow"), "{body}");
                // The client sends the Gemini form: here the OpenAPI `parameters`.
                assert_eq!(
                    declaration,
                    &definition_of(
                        Provider::Gemini,
                        "weather_tomorrow",
                        "Tomorrow's forecast.",
                        &schema()
                    ),
                    "the Gemini form"
                );
                assert_eq!(
                    declaration["parameters"]["required"],
                    json!(["city"]),
                    "{body}"
                );
            }
            _ => {
                assert!(head.starts_with("post /v1/responses "), "{head}");
                assert!(head.contains("authorization: bearer test-key"), "{head}");
                let tool = &body["tools"][0];
                assert_eq!(tool["type"], json!("function"), "{body}");
                assert_eq!(tool["strict"], json!(true), "{body}");
                assert_eq!(
                    tool["parameters"]["required"],
                    json!(["city", "days"]),
                    "the strict form: every property required"
                );
            }
        }
    }
}

/// What each provider answers with the text "Rain in Bergen.".
fn text_answer(provider: GenAiProvider) -> Value {
    match provider {
        GenAiProvider::Anthropic => json!({
            "id": "m", "type": "message", "role": "assistant", "model": "m-1",
            "content": [{"type": "text", "text": "Rain in Bergen."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}
        }),
        GenAiProvider::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Rain in Bergen."}]}}]
        }),
        _ => json!({
            "id": "r", "object": "response", "status": "completed", "model": "m-1",
            "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Rain in Bergen.", "annotations": []}]}]
        }),
    }
}

/// [`with_results`], where the second result is a radar image (as a ReAct run makes
/// it of a tool's image output), and the user sends a photo.
fn with_an_image() -> (ChatRequest, ContentPart) {
    let radar = ContentPart::image("image/png", b"\x89PNG radar");
    let mut request = with_results();
    request.messages[1] = Message::user("Rain in Oslo or Bergen? This is my window.")
        .with_parts(vec![ContentPart::image("image/jpeg", b"window")]);
    let last = request.messages.len() - 1;
    request.messages[last] = Message::tool("c2", format!("rain\n{}", radar.placeholder()))
        .with_parts(vec![radar.clone()]);
    (request, radar)
}

#[tokio::test]
async fn images_go_in_each_providers_form() {
    for provider in GENAI {
        let server = FakeEndpoint::start(vec![Reply::Json(200, text_answer(provider))]).await;
        let (request, radar) = with_an_image();
        let answer = model(provider, &server).complete(&request).await.unwrap();
        assert_eq!(answer.text, "Rain in Bergen.");
        let body = server.seen()[0].body.clone();
        let data = radar.data().unwrap();
        match provider {
            GenAiProvider::Anthropic => {
                let messages = body["messages"].as_array().unwrap();
                let photo = &messages[0]["content"][1];
                assert_eq!(photo["type"], "image", "{body}");
                assert_eq!(photo["source"]["media_type"], "image/jpeg");
                let results = messages[2]["content"].as_array().unwrap();
                assert_eq!(results.len(), 2, "one user turn: {body}");
                assert_eq!(results[0]["content"], "clear");
                // The image is inside its tool_result block.
                assert_eq!(results[1]["type"], "tool_result");
                assert_eq!(results[1]["tool_use_id"], "c2");
                let inner = results[1]["content"].as_array().unwrap();
                assert_eq!(inner[0]["type"], "text");
                assert_eq!(
                    inner[1],
                    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}})
                );
            }
            GenAiProvider::Gemini => {
                let contents = body["contents"].as_array().unwrap();
                assert_eq!(
                    contents[0]["parts"][1]["inline_data"]["mime_type"], "image/jpeg",
                    "{body}"
                );
                let turn = contents[2]["parts"].as_array().unwrap();
                assert_eq!(
                    turn.len(),
                    3,
                    "both responses and the image in one user turn: {body}"
                );
                assert!(turn[0].get("functionResponse").is_some());
                assert!(turn[1].get("functionResponse").is_some());
                assert_eq!(
                    turn[2],
                    json!({"inline_data": {"mime_type": "image/png", "data": data}})
                );
            }
            _ => {
                let input = body["input"].as_array().unwrap();
                let photo = input.iter().find(|i| i["role"] == "user").unwrap();
                assert_eq!(photo["content"][1]["type"], "input_image", "{body}");
                let at = input
                    .iter()
                    .rposition(|i| i["type"] == "function_call_output")
                    .unwrap();
                assert_eq!(input[at]["call_id"], "c2");
                // The image is a part of the function_call_output.
                let output = input[at]["output"].as_array().unwrap();
                assert_eq!(output[0]["type"], "input_text", "{body}");
                assert_eq!(output[1]["type"], "input_image");
                assert_eq!(
                    output[1]["image_url"],
                    format!("data:image/png;base64,{data}")
                );
                assert_eq!(
                    input[at - 1]["output"],
                    "clear",
                    "a result without parts is text"
                );
            }
        }
    }

    // Ollama: images in `images`, in any role.
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "Rain."}, "done": true}),
    )])
    .await;
    let (request, radar) = with_an_image();
    OllamaModel::new(&server.base.replace("/v1", ""), "qwen3")
        .unwrap()
        .complete(&request)
        .await
        .unwrap();
    let body = server.seen()[0].body.clone();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1]["images"],
        json!([ContentPart::image("image/jpeg", b"window").data()]),
        "{body}"
    );
    assert_eq!(messages[4]["role"], "tool");
    assert_eq!(messages[4]["images"], json!([radar.data()]));
}

#[tokio::test]
async fn tool_results_go_back_in_each_providers_form() {
    for provider in GENAI {
        let server = FakeEndpoint::start(vec![Reply::Json(200, text_answer(provider))]).await;
        let answer = model(provider, &server)
            .complete(&with_results())
            .await
            .unwrap();
        assert_eq!(answer.text, "Rain in Bergen.");
        let body = server.seen()[0].body.clone();
        let text = body.to_string();
        match provider {
            GenAiProvider::Anthropic => {
                let messages = body["messages"].as_array().unwrap();
                let assistant = &messages[1];
                assert_eq!(assistant["role"], json!("assistant"), "{body}");
                let uses: Vec<&Value> = assistant["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .collect();
                assert_eq!(uses.len(), 2, "{body}");
                let results = &messages[2];
                assert_eq!(results["role"], json!("user"), "{body}");
                let blocks = results["content"].as_array().unwrap();
                assert_eq!(blocks[0]["type"], json!("tool_result"));
                assert_eq!(blocks[0]["tool_use_id"], json!("c1"));
                assert_eq!(
                    blocks[1]["tool_use_id"],
                    json!("c2"),
                    "one user turn: {body}"
                );
            }
            GenAiProvider::Gemini => {
                assert!(text.contains("\"functionResponse\""), "{body}");
                let responses: Vec<&Value> = body["contents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|c| c["parts"].as_array().unwrap())
                    .filter_map(|p| p.get("functionResponse"))
                    .collect();
                assert_eq!(responses.len(), 2, "{body}");
                assert!(
                    responses.iter().all(|r| r["name"] == "weather_tomorrow"),
                    "{body}"
                );
            }
            _ => {
                let outputs: Vec<&Value> = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|i| i["type"] == "function_call_output")
                    .collect();
                assert_eq!(outputs.len(), 2, "{body}");
                assert_eq!(outputs[0]["call_id"], json!("c1"));
                assert_eq!(outputs[1]["output"], json!("rain"));
                assert!(text.contains("\"function_call\""), "{body}");
            }
        }
    }
}

#[tokio::test]
async fn error_statuses_timeouts_and_malformed_bodies_are_typed() {
    for provider in GENAI {
        let server = FakeEndpoint::start(vec![
            Reply::Json(
                429,
                json!({"error": {"message": "rate limited", "code": 429}}),
            ),
            Reply::Body("<html>gateway</html>"),
            Reply::Json(200, json!({"unexpected": true})),
            Reply::Hang,
        ])
        .await;
        let model = model(provider, &server)
            .with_timeout(Duration::from_millis(300))
            .unwrap();
        let status = model.complete(&request()).await.unwrap_err();
        assert!(
            matches!(&status, ModelError::Status { status: 429, body } if body.contains("rate limited")),
            "{provider:?}: {status:?}"
        );
        for _ in 0..2 {
            let malformed = model.complete(&request()).await.unwrap_err();
            assert!(
                matches!(malformed, ModelError::Malformed { .. }),
                "{provider:?}: {malformed:?}"
            );
        }
        let started = Instant::now();
        let timeout = model.complete(&request()).await.unwrap_err();
        assert_eq!(
            timeout,
            ModelError::Timeout { after_ms: 300 },
            "{provider:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn ollama_native_chat_both_ways_and_its_failures() {
    let answer = json!({
        "model": "m-1", "created_at": "2026-11-23T00:00:00Z", "done": true,
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "weather_tomorrow", "arguments": {"city": "Oslo"}}},
            {"function": {"name": "weather_tomorrow", "arguments": {"city": "Bergen"}}}
        ]},
        "prompt_eval_count": 30, "eval_count": 12
    });
    let server = FakeEndpoint::start(vec![
        Reply::Json(200, answer),
        Reply::Json(
            200,
            json!({"model": "m-1", "done": true,
            "message": {"role": "assistant", "content": "Rain in Bergen."}}),
        ),
        Reply::Json(
            404,
            json!({"error": "model \"m-1\" not found, try pulling it first"}),
        ),
        Reply::Body("not json"),
        Reply::Json(200, json!({"done": true})),
        Reply::Hang,
    ])
    .await;
    let base = server.base.trim_end_matches("/v1").to_owned();
    let model = OllamaModel::new(&base, "m-1")
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    assert_eq!(model.provider(), "ollama");
    let turn = model.complete(&request()).await.unwrap();
    let calls: Vec<(&str, &Value)> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0_0", &json!({"city": "Oslo"})),
            ("call_0_1", &json!({"city": "Bergen"}))
        ]
    );
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: 30,
            output_tokens: 12
        })
    );
    let seen = &server.seen()[0];
    assert!(seen.head.starts_with("POST /api/chat "), "{}", seen.head);
    assert_eq!(seen.body["stream"], json!(false));
    assert_eq!(
        seen.body["tools"][0]["function"]["name"],
        json!("weather_tomorrow")
    );
    assert!(seen.body["tools"][0]["function"]["parameters"]
        .get("$schema")
        .is_none());

    let answer = model.complete(&with_results()).await.unwrap();
    assert_eq!(answer.text, "Rain in Bergen.");
    let sent = &server.seen()[1].body["messages"];
    assert_eq!(
        sent[2]["tool_calls"][1]["function"]["arguments"],
        json!({"city": "Bergen"})
    );
    assert_eq!(sent[3]["role"], json!("tool"));
    assert_eq!(sent[3]["tool_name"], json!("weather_tomorrow"));
    assert_eq!(sent[4]["content"], json!("rain"));

    let missing = model.complete(&request()).await.unwrap_err();
    assert!(
        matches!(&missing, ModelError::Status { status: 404, body } if body.contains("not found")),
        "{missing:?}"
    );
    for _ in 0..2 {
        let malformed = model.complete(&request()).await.unwrap_err();
        assert!(
            matches!(malformed, ModelError::Malformed { .. }),
            "{malformed:?}"
        );
    }
    assert_eq!(
        model.complete(&request()).await.unwrap_err(),
        ModelError::Timeout { after_ms: 300 }
    );
}

/// A required answer schema goes to each provider in its native form.
#[tokio::test]
async fn an_answer_schema_is_sent_natively() {
    let answer_schema = json!({
        "type": "object",
        "properties": {"rain": {"type": "boolean"}},
        "required": ["rain"]
    });
    let mut asking = request();
    asking.response_schema = Some(answer_schema.clone());
    for provider in GENAI {
        let text = match provider {
            GenAiProvider::Anthropic => json!({
                "id": "m", "type": "message", "role": "assistant", "model": "m-1",
                "content": [{"type": "text", "text": "{\"rain\": true}"}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}
            }),
            GenAiProvider::Gemini => json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": "{\"rain\": true}"}]}}]
            }),
            _ => json!({
                "id": "r", "object": "response", "status": "completed", "model": "m-1",
                "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "{\"rain\": true}", "annotations": []}]}]
            }),
        };
        let server = FakeEndpoint::start(vec![Reply::Json(200, text)]).await;
        let model = model(provider, &server);
        assert!(model.structured_output());
        let answer = model.complete(&asking).await.unwrap();
        assert_eq!(answer.text, "{\"rain\": true}");
        let body = server.seen()[0].body.clone();
        let sent = match provider {
            GenAiProvider::Anthropic => body.pointer("/output_config/format/schema"),
            GenAiProvider::Gemini => body.pointer("/generationConfig/responseJsonSchema"),
            _ => body.pointer("/text/format/schema"),
        };
        let sent = sent.unwrap_or_else(|| panic!("{provider:?} sent no schema: {body}"));
        assert_eq!(
            sent["properties"]["rain"],
            json!({"type": "boolean"}),
            "{provider:?}"
        );
    }
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        json!({"model": "m-1", "done": true, "message": {"role": "assistant", "content": "{\"rain\": true}"}}),
    )])
    .await;
    let ollama = OllamaModel::new(server.base.trim_end_matches("/v1"), "m-1").unwrap();
    ollama.complete(&asking).await.unwrap();
    assert_eq!(server.seen()[0].body["format"], answer_schema);
}

#[tokio::test]
async fn a_responses_call_cut_off_by_the_token_limit_spoils_only_itself() {
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        json!({
            "id": "r", "object": "response", "status": "incomplete", "model": "m-1",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather_tomorrow",
                 "arguments": "{\"city\":\"Oslo\",\"days\":null}", "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather_tomorrow",
                 "arguments": "{\"city\":\"Ber", "status": "incomplete"}
            ]
        }),
    )])
    .await;
    let answer = model(GenAiProvider::OpenAiResponses, &server)
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(answer.unreadable.len(), 1);
    assert_eq!(answer.unreadable[0].index, 1);
    assert_eq!(answer.tool_calls[1].arguments, json!("{\"city\":\"Ber"));
}

#[tokio::test]
async fn anthropic_gets_text_for_parts_it_does_not_take() {
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        text_answer(GenAiProvider::Anthropic),
    )])
    .await;
    let bmp = ContentPart::image("image/bmp", b"BM");
    let wav = ContentPart::file("audio/wav", b"RIFF", None);
    let png = ContentPart::image("image/png", b"\x89PNG");
    let mut request = with_results();
    let last = request.messages.len() - 1;
    request.messages[last] = Message::tool(
        "c2",
        format!("rain\n{}\n{}", bmp.placeholder(), png.placeholder()),
    )
    .with_parts(vec![bmp.clone(), png.clone()]);
    request.messages[1] = Message::user("Listen.").with_parts(vec![wav.clone()]);
    model(GenAiProvider::Anthropic, &server)
        .complete(&request)
        .await
        .unwrap();
    let body = server.seen()[0].body.clone();
    let user = &body["messages"][0]["content"];
    assert_eq!(user, &json!(format!("Listen.\n{}", wav.unsent())), "{body}");
    let result = &body["messages"][2]["content"][1]["content"];
    let blocks = result.as_array().unwrap();
    assert_eq!(blocks.len(), 2, "the text and the PNG: {body}");
    assert!(blocks[0]["text"].as_str().unwrap().contains(&bmp.unsent()));
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
}

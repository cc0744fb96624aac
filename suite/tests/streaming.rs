//! Streamed model replies: deltas reach the run's event sink while a ReAct step
//! runs, a streamed run records the assembled reply and replays it as events offline,
//! and a stream that breaks is a typed error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tackle::agent::model::{
    complete, completion, deltas_of, ChatModel, ChatRequest, ChatResponse, DeltaAssembler, Message,
    ModelError, ScriptedModel, ToolCallRequest,
};
use tackle::agent::openai::OpenAiModel;
use tackle::agent::react::ReactState;
use tackle::events::{event_queue, EventReceiver, ModelDelta, ToolEvent, ToolEventKind};
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Agent, Cassette, Run, Runtime, ToolContext};
use tokio::sync::Notify;

use crate::support::fake_endpoint;
use fake_endpoint::{FakeEndpoint, Reply};

/// Tomorrow's forecast for a city.
#[tool(namespace = "forecast", side_effects = read)]
fn tomorrow(city: String) -> String {
    match city.as_str() {
        "Bergen" => "rain".to_owned(),
        _ => "sun".to_owned(),
    }
}

fn data(chunk: Value) -> String {
    format!("data: {chunk}")
}

fn delta(delta: Value, finish: Option<&str>) -> String {
    data(json!({
        "id": "chatcmpl-s", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }))
}

/// The first reply: two text pieces, then two tool calls streamed in pieces, usage,
/// `[DONE]`.
fn calling_events() -> Vec<String> {
    vec![
        delta(json!({"role": "assistant", "content": "Checking "}), None),
        delta(json!({"content": "both cities."}), None),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_o", "type": "function",
                "function": {"name": "forecast_tomorrow", "arguments": "{\"city\": "}}]}),
            None,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
            None,
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                "function": {"name": "forecast_tomorrow", "arguments": "{\"city\":\"Bergen\"}"}}]}),
            None,
        ),
        delta(json!({}), Some("tool_calls")),
        data(json!({"id": "chatcmpl-s", "choices": [],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12}})),
        "data: [DONE]".to_owned(),
    ]
}

fn answer_events() -> Vec<String> {
    vec![
        delta(json!({"role": "assistant", "content": "Oslo sun, "}), None),
        delta(json!({"content": "Bergen rain."}), Some("stop")),
        "data: [DONE]".to_owned(),
    ]
}

fn sse(events: Vec<String>) -> Reply {
    Reply::Sse {
        events,
        hold: None,
        cut: false,
    }
}

fn agent(model: impl ChatModel + 'static) -> Agent {
    Agent::new(model).tools(["forecast.tomorrow"])
}

/// The model deltas among `events`, with the key of the call they belong to.
fn model_deltas(events: &[ToolEvent]) -> Vec<(String, ModelDelta)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            ToolEventKind::Model(d) => Some((e.key.clone(), d.clone())),
            _ => None,
        })
        .collect()
}

/// The replies the deltas of `events` make, one per model call, in call order.
fn assembled(events: &[ToolEvent]) -> Vec<ChatResponse> {
    let mut calls: Vec<(u64, DeltaAssembler)> = Vec::new();
    for event in events {
        if let ToolEventKind::Model(d) = &event.kind {
            match calls.iter_mut().find(|(id, _)| *id == event.call_id) {
                Some((_, reply)) => reply.push(d.clone()),
                None => {
                    let mut reply = DeltaAssembler::default();
                    reply.push(d.clone());
                    calls.push((event.call_id, reply));
                }
            }
        }
    }
    calls.into_iter().map(|(_, r)| r.finish()).collect()
}

async fn next_model_delta(events: &mut EventReceiver) -> ModelDelta {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("a delta within 10 s")
            .expect("the sink is open");
        if let ToolEventKind::Model(d) = event.kind {
            return d;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deltas_reach_the_caller_while_a_step_runs_and_a_streamed_run_replays_as_events() {
    let gate = Arc::new(Notify::new());
    let server = FakeEndpoint::start(vec![
        Reply::Sse {
            events: calling_events(),
            hold: Some((2, gate.clone())),
            cut: false,
        },
        sse(answer_events()),
    ])
    .await;
    let dir = std::env::temp_dir().join(format!("tackle-streaming-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("streamed.json");
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
    };
    let cassette = Cassette::open(&path, config(Mode::Rewrite)).unwrap();
    let model = OpenAiModel::new(&server.base, "gpt-stream")
        .unwrap()
        .with_timeout(Duration::from_secs(10));
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let live = Arc::new(agent(model));
    let (sink, mut events) = event_queue(1024);
    let recording = Run::new(&runtime)
        .with_cassette(cassette.clone())
        .with_events(sink);
    let run = tokio::spawn({
        let (live, recording) = (live.clone(), recording.clone());
        async move { live.run(&recording, "Weather in Oslo and Bergen?").await }
    });

    // The first two text pieces arrive while the server still holds the rest of the
    // first reply: the step is running.
    assert_eq!(
        next_model_delta(&mut events).await,
        ModelDelta::Text("Checking ".into())
    );
    assert_eq!(
        next_model_delta(&mut events).await,
        ModelDelta::Text("both cities.".into())
    );
    assert!(
        !run.is_finished(),
        "the step waits for the rest of the reply"
    );
    gate.notify_one();
    let state: ReactState = run.await.unwrap().unwrap().state;
    cassette.finish().unwrap();

    assert_eq!(
        state.final_answer.as_deref(),
        Some("Oslo sun, Bergen rain.")
    );
    let results: Vec<Value> = state
        .tool_calls
        .iter()
        .map(|c| c.result.clone().unwrap())
        .collect();
    assert_eq!(results, [json!("sun"), json!("rain")]);
    assert_eq!(
        state.usage.input_tokens, 40,
        "usage from the stream's last chunk"
    );
    let seen = server.seen();
    assert!(seen[0]
        .head
        .to_ascii_lowercase()
        .contains("accept: text/event-stream"));
    assert_eq!(seen[0].body["stream"], json!(true));
    assert_eq!(
        seen[0].body["stream_options"],
        json!({"include_usage": true})
    );
    // The second request carries the assembled calls.
    assert_eq!(
        seen[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"city\":\"Oslo\"}")
    );

    let live_events = events.drain();
    let deltas = model_deltas(&live_events);
    assert!(deltas
        .iter()
        .all(|(key, _)| key == "llm.openai.complete@gpt-stream"));
    let pieces: Vec<&ModelDelta> = deltas.iter().map(|(_, d)| d).collect();
    assert_eq!(
        pieces[..2],
        [
            &ModelDelta::ToolCall {
                index: 0,
                id: Some("call_o".into()),
                name: Some("forecast_tomorrow".into()),
                arguments: "{\"city\": ".into()
            },
            &ModelDelta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "\"Oslo\"}".into()
            },
        ]
    );
    assert_eq!(
        deltas.len(),
        2 + 1 + 2,
        "call pieces, then the answer's two pieces"
    );
    let live_replies = assembled(&live_events);
    assert_eq!(live_replies[0].text, "");
    assert_eq!(
        live_replies[0].tool_calls[1].arguments,
        json!({"city": "Bergen"})
    );
    assert_eq!(live_replies[1].text, "Oslo sun, Bergen rain.");

    // Replay offline: the model's endpoint is gone; the recorded replies stream as
    // events, and the run ends the same.
    let replay = Cassette::open(&path, config(Mode::Replay)).unwrap();
    let offline = OpenAiModel::new("http://127.0.0.1:9/v1", "gpt-stream").unwrap();
    let replayed = agent(offline);
    let (sink, mut events) = event_queue(1024);
    let replaying = Run::new(&runtime).with_cassette(replay).with_events(sink);
    let again = replayed
        .run(&replaying, "Weather in Oslo and Bergen?")
        .await
        .unwrap()
        .state;
    assert_eq!(again.final_answer, state.final_answer);
    assert_eq!(again.tool_calls, state.tool_calls);
    let replay_events = events.drain();
    // The first text pieces of the live run were not part of what the cassette holds
    // for the first call: it holds the assembled reply.
    let mut first = live_replies[0].clone();
    first.text = "Checking both cities.".into();
    first.usage = None;
    let mut replies = assembled(&replay_events);
    for reply in &mut replies {
        reply.usage = None;
    }
    assert_eq!(replies[0].tool_calls, first.tool_calls);
    assert_eq!(replies[0].text, "Checking both cities.");
    assert_eq!(replies[1].text, "Oslo sun, Bergen rain.");
    let replay_deltas = model_deltas(&replay_events);
    assert_eq!(
        replay_deltas.len(),
        1 + 2 + 1,
        "a replayed reply streams as its text and one delta per call"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_stream_that_breaks_is_a_typed_error() {
    let cut = Reply::Sse {
        events: calling_events()[..4].to_vec(),
        hold: None,
        cut: true,
    };
    let unfinished = sse(calling_events()[..3].to_vec());
    let garbled = sse(vec![
        delta(json!({"content": "fine"}), None),
        "data: {not json".to_owned(),
    ]);
    let server = FakeEndpoint::start(vec![
        cut,
        unfinished,
        garbled,
        Reply::Json(429, json!({"error": {"message": "slow down"}})),
        Reply::Hang,
    ])
    .await;
    let model = OpenAiModel::new(&server.base, "gpt-stream")
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let request = ChatRequest {
        messages: vec![Message::user("Weather?")],
        ..ChatRequest::default()
    };
    let got = std::sync::Mutex::new(Vec::new());
    let sink = |d: ModelDelta| got.lock().unwrap().push(d);

    match model.stream(&request, &sink).await {
        Err(ModelError::StreamBroken { deltas, message }) => {
            assert_eq!(deltas, 3, "{message}");
        }
        other => panic!("a cut connection: {other:?}"),
    }
    assert_eq!(got.lock().unwrap().len(), 3, "what arrived was delivered");
    match model.stream(&request, &sink).await {
        Err(ModelError::StreamBroken { deltas, message }) => {
            assert_eq!(deltas, 3);
            assert!(message.contains("[DONE]"), "{message}");
        }
        other => panic!("a stream closed early: {other:?}"),
    }
    match model.stream(&request, &sink).await {
        Err(ModelError::Malformed { message }) => {
            assert!(message.contains("not JSON"), "{message}")
        }
        other => panic!("a garbled event: {other:?}"),
    }
    match model.stream(&request, &sink).await {
        Err(ModelError::Status { status, body }) => {
            assert_eq!((status, body.as_str()), (429, "slow down"));
        }
        other => panic!("an error status: {other:?}"),
    }
    match model.stream(&request, &sink).await {
        Err(ModelError::Timeout { after_ms }) => assert_eq!(after_ms, 300),
        other => panic!("a hang: {other:?}"),
    }
    assert_eq!(
        ModelError::StreamBroken {
            message: String::new(),
            deltas: 0
        }
        .kind(),
        "StreamBroken"
    );
}

#[tokio::test]
async fn nobody_listening_the_model_is_not_asked_to_stream_and_other_models_stream_their_reply() {
    let server = FakeEndpoint::start(vec![Reply::Json(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}),
    )])
    .await;
    let model = OpenAiModel::new(&server.base, "gpt-stream").unwrap();
    let runtime = Arc::new(Runtime::default());
    let request = ChatRequest {
        messages: vec![Message::user("hello")],
        ..ChatRequest::default()
    };
    let ctx = ToolContext::new().with_grant("llm:*");
    let run = Run::new(&runtime);
    let answer = complete(&run, &completion(&model), &model, &request, &ctx)
        .await
        .unwrap();
    assert_eq!(answer.text, "hi");
    assert_eq!(server.seen()[0].body.get("stream"), None);

    // A model that cannot stream sends its reply as deltas once it has it.
    let reply = ChatResponse::calls(
        "two calls",
        vec![
            ToolCallRequest {
                id: "a".into(),
                name: "forecast_tomorrow".into(),
                arguments: json!({"city": "Oslo"}),
            },
            ToolCallRequest {
                id: "b".into(),
                name: "forecast_tomorrow".into(),
                arguments: json!({}),
            },
        ],
    );
    let scripted = ScriptedModel::new([reply.clone()]);
    let (sink, mut events) = event_queue(64);
    let answer = complete(
        &Run::new(&runtime).with_events(sink),
        &completion(&scripted),
        &scripted,
        &request,
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(answer, reply);
    let events = events.drain();
    assert_eq!(model_deltas(&events).len(), 3);
    assert_eq!(assembled(&events), std::slice::from_ref(&reply));
    assert_eq!(deltas_of(&reply).len(), 3);
}

#[tokio::test]
async fn streamed_deltas_do_not_carry_the_callers_secrets() {
    let leaky = ScriptedModel::new([ChatResponse::text("the key is sk-live-0123456789")]);
    let (sink, mut events) = event_queue(64);
    let ctx = ToolContext::new()
        .with_grant("llm:*")
        .with_secret("API_KEY", "sk-live-0123456789");
    let request = ChatRequest {
        messages: vec![Message::user("key?")],
        ..ChatRequest::default()
    };
    let run = Run::new(&Arc::new(Runtime::default())).with_events(sink);
    complete(&run, &completion(&leaky), &leaky, &request, &ctx)
        .await
        .unwrap();
    let deltas = model_deltas(&events.drain());
    assert_eq!(
        deltas[0].1,
        ModelDelta::Text("the key is [REDACTED]".into())
    );
}

/// Counts to `n`, reporting each step.
#[tool(namespace = "count", side_effects = none)]
fn up_to(ctx: &ToolContext, n: u64) -> u64 {
    for done in 1..=n {
        ctx.report_progress(done, Some(n));
    }
    n
}

/// A program that reads a run's events until `None`, in a task of its own, is not
/// left waiting when the run ends: dropping the run drops its sink, which ends the
/// stream (no `close()` anywhere).
#[tokio::test]
async fn the_receiver_ends_when_the_run_that_fed_it_ends() {
    let (sink, mut events) = event_queue(64);
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            seen.push(event.kind);
        }
        seen
    });
    {
        let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
        let run = Run::new(&runtime).with_events(sink);
        let out = run
            .call("count.up_to", json!({"n": 2}), &ToolContext::new())
            .await
            .unwrap();
        assert_eq!(out, 2);
    }
    let seen = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the reader ended when the run was dropped")
        .unwrap();
    assert_eq!(
        seen,
        [
            ToolEventKind::Started,
            ToolEventKind::Progress {
                done: 1,
                total: Some(2)
            },
            ToolEventKind::Progress {
                done: 2,
                total: Some(2)
            },
            ToolEventKind::Finished { ok: true },
        ]
    );
}

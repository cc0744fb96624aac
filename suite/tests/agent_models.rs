//! Chat models for tests, and model calls through the door (and its replay stage).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::agent::model::{
    complete, completion, ChatModel, ChatRequest, ChatResponse, FunctionModel, Message, ModelError,
    Role, ScriptedModel, TestModel, ToolCallRequest, ToolDefinition,
};
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Cassette, Run, Runtime, ToolContext, ToolErrorKind};

/// Look up a word in the dictionary.
#[tool(namespace = "dict", side_effects = read)]
fn define(word: String, language: Option<String>, max_senses: u8) -> String {
    format!(
        "{word} ({}): {max_senses} sense(s)",
        language.unwrap_or_default()
    )
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(text)],
        tools: Default::default(),
        response_schema: None,
    }
}

#[tokio::test]
async fn scripted_models_answer_in_order_and_report_misuse() {
    let call = ToolCallRequest {
        id: "c1".into(),
        name: "dict.define".into(),
        arguments: json!({"word": "tackle"}),
    };
    let model = ScriptedModel::new([
        ChatResponse::calls("looking it up", vec![call.clone()]),
        ChatResponse::text("It means fishing gear."),
        ChatResponse::text("never reached"),
    ]);
    let first = model.complete(&ask("what is tackle?")).await.unwrap();
    assert_eq!(first.tool_calls, [call]);
    let second = model.complete(&ask("and?")).await.unwrap();
    assert_eq!(second.text, "It means fishing gear.");
    assert_eq!(model.requests()[1].messages[0].content, "and?");
    let unused = model.finish().unwrap_err();
    assert_eq!(
        unused.to_string(),
        "the model failed: 1 of 3 scripted turn(s) were never used"
    );
    model.complete(&ask("3")).await.unwrap();
    assert_eq!(
        model.complete(&ask("4")).await.unwrap_err(),
        ModelError::ScriptExhausted { turns: 3, call: 4 }
    );
}

#[tokio::test]
async fn function_models_answer_from_the_request() {
    let model = FunctionModel::new("echo", |request: &ChatRequest| {
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(ChatResponse::text(format!("you said: {last}")))
    });
    assert_eq!(model.model(), "echo");
    let answer = model.complete(&ask("hello")).await.unwrap();
    assert_eq!(answer.text, "you said: hello");
}

#[tokio::test]
async fn the_test_model_calls_every_tool_with_arguments_its_schema_accepts() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let tools: Vec<ToolDefinition> = rt
        .registry()
        .list()
        .map(|t| ToolDefinition {
            name: t.key().to_owned(),
            description: t.spec().description.clone(),
            parameters: t.spec().input_schema.clone(),
        })
        .collect();
    let request = ChatRequest {
        messages: vec![Message::user("try everything")],
        tools: tools.clone().into(),
        response_schema: None,
    };
    let answer = TestModel.complete(&request).await.unwrap();
    assert_eq!(answer.tool_calls.len(), tools.len());
    for call in &answer.tool_calls {
        let tool = rt.registry().resolve(&call.name).unwrap();
        let checked = tool.validate_input(&call.arguments);
        assert!(
            checked.valid,
            "{}: {:?} {:?}",
            call.name, call.arguments, checked.errors
        );
    }
    let define = answer
        .tool_calls
        .iter()
        .find(|c| c.name == "dict.define@1")
        .unwrap();
    assert_eq!(
        define.arguments,
        json!({"word": "example", "max_senses": 1})
    );
    // After the results come back, it answers.
    let mut followed = request.clone();
    followed
        .messages
        .push(Message::assistant("", answer.tool_calls.clone()));
    for call in &answer.tool_calls {
        followed.messages.push(Message::tool(&call.id, "ok"));
    }
    let last = TestModel.complete(&followed).await.unwrap();
    assert!(last.tool_calls.is_empty());
    assert_eq!(last.text, format!("called {} tool(s)", tools.len()));
    assert_eq!(followed.messages[1].role, Role::Assistant);
}

#[tokio::test]
async fn model_calls_record_then_replay_without_the_model() {
    let dir = std::env::temp_dir().join(format!("tackle-model-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    let live = FunctionModel::new("m1", |r: &ChatRequest| {
        Ok(ChatResponse::text(format!(
            "{} message(s)",
            r.messages.len()
        )))
    });
    let ctx = ToolContext::new().with_grant("llm:function");
    let op = completion(&live);
    let cassette = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Rewrite)
            .with_env_overrides(false),
    )
    .unwrap();
    let run = Run::new(&Arc::new(Runtime::default())).with_cassette(cassette.clone());
    let one = complete(&run, &op, &live, &ask("a"), &ctx).await.unwrap();
    let mut two_messages = ask("a");
    two_messages.messages.push(Message::user("b"));
    let two = complete(&run, &op, &live, &two_messages, &ctx)
        .await
        .unwrap();
    cassette.finish().unwrap();

    let calls = AtomicUsize::new(0);
    let offline = FunctionModel::new("m1", |_r: &ChatRequest| {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(ModelError::Transport {
            message: "offline".into(),
        })
    });
    let cassette = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let run = Run::new(&Arc::new(Runtime::default())).with_cassette(cassette);
    assert_eq!(
        complete(&run, &op, &offline, &ask("a"), &ctx)
            .await
            .unwrap(),
        one
    );
    assert_eq!(
        complete(&run, &op, &offline, &two_messages, &ctx)
            .await
            .unwrap(),
        two
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "replay never calls the model"
    );
    // A third completion was never recorded.
    let err = complete(&run, &op, &offline, &ask("c"), &ctx)
        .await
        .unwrap_err();
    match err {
        ModelError::Door(e) => assert_eq!(e.kind(), ToolErrorKind::CassetteMiss, "{e}"),
        other => panic!("expected a replay error, got {other}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

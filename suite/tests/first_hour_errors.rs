//! The errors a newcomer meets in the first hour, each asserted by its text: each says
//! what happened and what to do.
//!
//! - a durable run another process holds: how long to wait, whose lease it is, how to
//!   change the lease;
//! - a call refused for a missing grant (a model call's `llm:<provider>` included):
//!   the grant that lets it through;
//! - an `https://` model endpoint in a build without TLS: the cargo feature to enable;
//! - a skill given an unknown tool key, and a model calling a tool by a name that is not
//!   one of the run's: the close matches; a model may call a tool by its key as well as
//!   by the name it was offered;
//! - an MCP client that accepts the approval form without an answer: what the form
//!   expects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tackle::agent::model::{
    complete, completion, ChatRequest, ChatResponse, Message, ScriptedModel, ToolCallRequest,
};
use tackle::agent::react::{AgentError, ReactSkill};
use tackle::durable::{DurableError, DurableOptions, DurableRun, MemoryStore, RunStore};
use tackle::{tool, Agent, Run, Runtime, ToolContext, ToolError, ToolErrorKind};
use tackle_mcp::{Identity, McpServer};

/// An account's balance, in cents.
#[tool(namespace = "bank", side_effects = read)]
fn balance(account: String) -> u64 {
    if account == "savings" {
        12_000
    } else {
        500
    }
}

/// Moves money between accounts (needs `bank:transfer` and `audit:log`).
#[tool(
    namespace = "bank",
    side_effects = write,
    requires_capability = ["bank:transfer", "audit:log"]
)]
fn transfer(cents: u64) -> u64 {
    cents
}

/// Reads the ledger (needs `bank:ledger`).
#[tool(namespace = "bank", side_effects = read, requires_capability = "bank:ledger")]
fn ledger() -> String {
    "empty".to_owned()
}

/// Pays an amount (every call needs approval).
#[tool(namespace = "shop", side_effects = external, needs_approval)]
fn pay(amount: u32) -> String {
    format!("paid {amount}")
}

fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory_in(module_path!()).unwrap())
}

// ---- 1. a run held by another process ----

#[test]
fn a_held_run_says_how_long_whose_lease_and_how_to_change_it() {
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let options = DurableOptions::new()
        .with_holder("worker-a")
        .with_lease(Duration::from_secs(90));
    let _held = DurableRun::start_with(store.clone(), "r-1", "Say hello.", options).unwrap();
    let error = DurableRun::resume(store, "r-1").unwrap_err();
    assert!(matches!(error, DurableError::Held { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with("the run `r-1` is held by `worker-a` for 90 seconds more: "),
        "{text}"
    );
    for needed in [
        "another process is driving it",
        "one that died still holds its lease until the lease lapses",
        "open the run again after that wait",
        "`DurableOptions::with_lease`",
        "default 30 s",
    ] {
        assert!(text.contains(needed), "{needed:?} in {text}");
    }
    assert!(!text.contains(" ms"), "{text}");
}

#[test]
fn a_held_run_never_shows_an_empty_holder_or_a_zero_wait() {
    let held = |holder: &str, remaining_ms: u64| {
        DurableError::Held {
            run_id: "r".into(),
            holder: holder.into(),
            remaining_ms,
        }
        .to_string()
    };
    let text = held("", 0);
    assert!(
        text.starts_with("the run `r` is held by an unnamed holder for less than a second more"),
        "{text}"
    );
    assert!(!text.contains("``") && !text.contains("0 ms"), "{text}");
    // Rounded up: a wait is never shown shorter than it is.
    assert!(
        held("w", 1).contains("for 1 second more"),
        "{}",
        held("w", 1)
    );
    assert!(held("w", 1_000).contains("for 1 second more"));
    assert!(held("w", 1_001).contains("for 2 seconds more"));
    assert!(held("  ", 59_500).contains("an unnamed holder for 60 seconds more"));
}

// ---- 2. a missing grant ----

#[tokio::test]
async fn a_model_call_refused_for_its_grant_names_the_grant() {
    // A model called directly (not by the program's own agent) needs its grant.
    let runtime = runtime();
    let model = ScriptedModel::new([ChatResponse::text("Hello!")]);
    let operation = completion(&model);
    let request = ChatRequest {
        messages: vec![Message::user("Say hello.")],
        ..ChatRequest::default()
    };
    let run = Run::new(&runtime);
    let error = complete(&run, &operation, &model, &request, &ToolContext::new())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(
            "requires `llm:scripted` which the caller was not granted: grant it with \
             ToolContext::with_grant(\"llm:scripted\"), or ToolContext::with_grant(\"llm:*\") \
             for every `llm:` permission"
        ),
        "{text}"
    );
    // Granted as it says, the call goes through.
    let reply = complete(
        &run,
        &operation,
        &model,
        &request,
        &ToolContext::new().with_grant("llm:*"),
    )
    .await
    .unwrap();
    assert_eq!(reply.text, "Hello!");
}

#[tokio::test]
async fn a_denied_tool_call_names_each_missing_permission_and_its_grant() {
    let runtime = runtime();
    let error = runtime
        .call("bank.ledger", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::CapabilityDenied);
    assert_eq!(
        error.to_string(),
        "`bank.ledger@1` requires `bank:ledger` which the caller was not granted: grant it \
         with ToolContext::with_grant(\"bank:ledger\"), or ToolContext::with_grant(\"bank:*\") \
         for every `bank:` permission"
    );
    // Two permissions of two prefixes: both grants, and no glob that would cover both.
    let error = runtime
        .call("bank.transfer", json!({"cents": 5}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`bank.transfer@1` requires `bank:transfer`, `audit:log` which the caller was not \
         granted: grant them with ToolContext::with_grant(\"bank:transfer\")\
         .with_grant(\"audit:log\")"
    );
    // Only what is still missing is named.
    let error = runtime
        .call(
            "bank.transfer",
            json!({"cents": 5}),
            &ToolContext::new().with_grant("bank:*"),
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().ends_with(
            "requires `audit:log` which the caller was not granted: grant it with \
             ToolContext::with_grant(\"audit:log\"), or ToolContext::with_grant(\"audit:*\") \
             for every `audit:` permission"
        ),
        "{error}"
    );
}

// ---- 3. https without TLS ----
//
// The suite builds the provider clients without their TLS features (`openai-tls`,
// `genai-tls`), as a first `cargo add` does.

#[test]
fn an_https_endpoint_without_tls_names_the_feature_to_enable() {
    use tackle::agent::genai::{GenAiModel, GenAiProvider};
    use tackle::agent::ollama::OllamaModel;
    use tackle::agent::openai::{OpenAiConfigError, OpenAiModel};

    let error = OpenAiModel::new("https://api.openai.com/v1", "gpt-4o-mini").unwrap_err();
    assert!(matches!(error, OpenAiConfigError::NoTls(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "`https://api.openai.com/v1` is an https:// URL and this build has no TLS: enable \
         the `openai-tls` cargo feature of `tackle-rs` (`cargo add tackle-rs --features \
         openai-tls`), or use an http:// endpoint"
    );
    // From the environment alike.
    let vars = |k: &str| match k {
        "TACKLE_OPENAI_BASE_URL" => Some("https://gateway.example/v1".to_owned()),
        "TACKLE_OPENAI_MODEL" => Some("m".to_owned()),
        _ => None,
    };
    let error = OpenAiModel::from_vars(vars).unwrap_err().to_string();
    assert!(error.contains("`openai-tls` cargo feature"), "{error}");
    // Plain HTTP needs nothing.
    assert!(OpenAiModel::new("http://127.0.0.1:8080/v1", "m").is_ok());

    for provider in [
        GenAiProvider::Anthropic,
        GenAiProvider::Gemini,
        GenAiProvider::OpenAiResponses,
    ] {
        let error = GenAiModel::new(provider, provider.default_base_url(), "key", "m")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("is an https:// URL and this build has no TLS: enable the `genai-tls` cargo feature of `tackle-rs`"),
            "{provider:?}: {error}"
        );
    }
    let error = OllamaModel::new("https://ollama.example", "qwen3")
        .unwrap_err()
        .to_string();
    assert!(error.contains("`genai-tls` cargo feature"), "{error}");
}

// ---- 4. tool names ----

#[test]
fn a_skill_given_an_unknown_key_lists_close_matches() {
    let runtime = runtime();
    let model = Arc::new(ScriptedModel::new([ChatResponse::text("-")]));
    let error = ReactSkill::new(model, runtime.registry(), &["bank.balnce"]).unwrap_err();
    assert!(
        matches!(&error, AgentError::UnknownTool { key, error: ToolError::NotFound { .. } } if key == "bank.balnce"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.starts_with(
            "the skill cannot offer `bank.balnce`: no tool matches `bank.balnce`; did you \
             mean `bank.balance@1`"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_model_may_call_a_tool_by_its_key_or_its_offered_name() {
    let runtime = runtime();
    let ask = |id: &str, name: &str| ToolCallRequest::new(id, name, json!({"account": "savings"}));
    let model = Arc::new(ScriptedModel::new([
        ChatResponse::calls(
            "Checking.",
            vec![
                ask("c1", "bank_balance"),
                ask("c2", "bank.balance"),
                ask("c3", "bank.balance@1"),
                ask("c4", "bank.balnce"),
                ask("c5", "bank_balnce"),
            ],
        ),
        ChatResponse::text("12000 cents."),
    ]));
    let agent = Agent::with_model(model).tools(["bank.balance"]);
    let state = agent
        .run(&Run::new(&runtime), "What is in savings?")
        .await
        .unwrap()
        .state;
    let calls = &state.tool_calls;
    for call in &calls[..3] {
        assert_eq!(call.result, Some(json!(12_000)), "{call:?}");
        assert_eq!(call.name, "bank.balance@1");
    }
    assert_eq!(
        calls[3].error.as_deref(),
        Some("no tool matches `bank.balnce`; did you mean `bank.balance`?")
    );
    assert_eq!(
        calls[4].error.as_deref(),
        Some("no tool matches `bank_balnce`; did you mean `bank_balance`?")
    );
}

// ---- 5. an MCP approval form accepted without an answer ----

/// A client whose human accepts every approval form with `content`.
#[derive(Clone)]
struct Answers {
    content: Value,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Answers {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.elicitation =
            Some(serde_json::from_value(json!({"form": {}})).unwrap());
        config
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        Ok(serde_json::from_value(json!({"action": "accept", "content": self.content})).unwrap())
    }
}

/// What a call of `shop.pay` gives when the client accepts the form with `content`,
/// and the form it was asked.
async fn pay_answering(content: Value) -> (Value, Value) {
    let server = McpServer::new(
        runtime(),
        Identity::new("shop", "1.0.0"),
        ToolContext::new(),
    )
    .unwrap()
    .with_client_approval();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let answers = Answers {
        content,
        asked: Arc::default(),
    };
    let client = answers.clone().serve(client_io).await.unwrap();
    let mut params = rmcp::model::CallToolRequestParams::new("shop.pay");
    params.arguments = Some(json!({"amount": 5}).as_object().unwrap().clone());
    let result = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
    let asked = answers.asked.lock().unwrap()[0].clone();
    (result, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_form_accepted_without_an_answer_says_what_it_expects() {
    let (paid, asked) = pay_answering(json!({"approve": true})).await;
    assert_eq!(paid["isError"], false, "{paid}");
    // The form requires its one boolean, and its message says how to approve.
    let schema = &asked["requestedSchema"];
    assert_eq!(schema["required"], json!(["approve"]), "{asked}");
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert!(
        asked["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(r#"Accept with {"approve": true} to run it."#)),
        "{asked}"
    );

    for content in [json!({}), json!({"approve": "yes"})] {
        let (refused, _) = pay_answering(content.clone()).await;
        assert_eq!(refused["isError"], true, "{refused}");
        let text = refused["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!(
                "the client accepted the approval form without a boolean `approve` (it sent \
                 {content}), so the call is refused: the form expects {{\"approve\": true}} to \
                 approve it (a client answers {{\"action\": \"accept\", \"content\": \
                 {{\"approve\": true}}}}), or {{\"approve\": false}} to refuse it"
            )),
            "{text}"
        );
    }
    let (refused, _) = pay_answering(json!({"approve": false})).await;
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("the user did not approve it")),
        "{refused}"
    );
}

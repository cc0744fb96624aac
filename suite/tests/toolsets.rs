//! Tools with state: `#[tools]` on an impl block makes its `#[tool]` methods (taking
//! `&self`) the tools of a value, added to a runtime at run time. Each tool has the
//! schemas and spec a `#[tool]` function of the same signature has, goes through the
//! door (validation, permissions), records and replays from a cassette, is offered to
//! agents and served over MCP; two values hold two states; a key taken twice is an
//! error naming both sources, and nothing of the second set is added.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
use tackle::error::RegistryError;
use tackle::replay::{CassetteConfig, Mode};
use tackle::{tool, tools, Agent, Cassette, Run, Runtime, ToolContext, ToolErrorKind};
use tackle_mcp::{Identity, McpServer};

/// The accounts of one tenant: the toolset's state.
struct Bank {
    tenant: String,
    cents: AtomicU64,
    deposits: AtomicUsize,
}

impl Bank {
    fn of(tenant: &str, cents: u64) -> Bank {
        Bank {
            tenant: tenant.to_owned(),
            cents: AtomicU64::new(cents),
            deposits: AtomicUsize::new(0),
        }
    }
}

#[tools(namespace = "bank")]
impl Bank {
    /// An account's balance, as `tenant:account:cents`.
    #[tool(side_effects = read)]
    fn balance(
        &self,
        /// the account's name
        account: String,
    ) -> String {
        format!(
            "{}:{account}:{}",
            self.tenant,
            self.cents.load(Ordering::SeqCst)
        )
    }

    /// Deposits `cents` and returns the new balance.
    #[tool(side_effects = write, version = "2", requires_capability = "bank:deposit")]
    async fn deposit(&self, ctx: &ToolContext, cents: u64) -> Result<u64, String> {
        if cents == 0 {
            return Err(format!("nothing to deposit for {}", self.tenant));
        }
        assert!(ctx.call_id().is_some(), "a tool's context is its call's");
        tokio::task::yield_now().await;
        self.deposits.fetch_add(1, Ordering::SeqCst);
        Ok(self.cents.fetch_add(cents, Ordering::SeqCst) + cents)
    }

    /// Not a tool: a method without `#[tool]` stays a plain method.
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The same signature as `Bank::balance`, as a free function.
#[tool(namespace = "free", side_effects = read)]
fn balance(
    /// the account's name
    account: String,
) -> String {
    account
}

/// A second set that takes one of `Bank`'s keys.
struct Shadow;

#[tools(namespace = "bank")]
impl Shadow {
    /// Shadows the bank's balance.
    #[tool(side_effects = none, name = "balance")]
    fn shadow_balance(&self, account: String) -> String {
        account
    }

    /// A key of its own.
    #[tool(side_effects = none)]
    fn echo(&self, text: String) -> String {
        text
    }
}

fn runtime_of(bank: Bank) -> Arc<Runtime> {
    Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_toolset(bank)
            .unwrap(),
    )
}

#[test]
fn the_keys_are_the_methods_tools() {
    assert_eq!(Bank::TOOLS, ["bank.balance@1", "bank.deposit@2"]);
    assert_eq!(Bank::BALANCE_KEY, "bank.balance@1");
    assert_eq!(Bank::DEPOSIT_KEY, "bank.deposit@2");
    assert_eq!(Bank::of("acme", 0).tenant(), "acme");
}

#[test]
fn a_method_has_the_spec_of_a_function_of_its_signature() {
    let runtime = runtime_of(Bank::of("acme", 0));
    let method = runtime.registry().get(Bank::BALANCE_KEY).unwrap().spec();
    let function = runtime.registry().get(balance::KEY).unwrap().spec();
    assert_eq!(method.input_schema, function.input_schema);
    assert_eq!(method.output_schema, function.output_schema);
    assert_eq!(
        method.input_schema["properties"]["account"]["description"],
        "the account's name"
    );
    assert_eq!(
        method.description,
        "An account's balance, as `tenant:account:cents`."
    );
    let deposit = runtime.registry().get(Bank::DEPOSIT_KEY).unwrap().spec();
    assert_eq!(deposit.permissions, ["bank:deposit"]);
    // The context parameter is not part of the input.
    assert_eq!(deposit.input_schema["required"], json!(["cents"]));
}

#[tokio::test]
async fn each_value_holds_its_own_state_behind_the_door() {
    let acme = runtime_of(Bank::of("acme", 100));
    let globex = runtime_of(Bank::of("globex", 5));
    let ctx = ToolContext::new().with_grant("bank:deposit");

    let out = acme
        .call(Bank::DEPOSIT_KEY, json!({"cents": 50}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!(150));
    let acme_balance = acme
        .call(Bank::BALANCE_KEY, json!({"account": "main"}), &ctx)
        .await
        .unwrap();
    let globex_balance = globex
        .call(Bank::BALANCE_KEY, json!({"account": "main"}), &ctx)
        .await
        .unwrap();
    assert_eq!(acme_balance, json!("acme:main:150"));
    assert_eq!(globex_balance, json!("globex:main:5"));

    // The door's stages apply: validation, permissions, the method's own error.
    let invalid = acme
        .call(Bank::DEPOSIT_KEY, json!({"cents": "lots"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(invalid.kind(), ToolErrorKind::InvalidInput);
    let denied = acme
        .call(Bank::DEPOSIT_KEY, json!({"cents": 1}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(denied.kind(), ToolErrorKind::CapabilityDenied);
    let failed = acme
        .call(Bank::DEPOSIT_KEY, json!({"cents": 0}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(failed.kind(), ToolErrorKind::Execution);
    assert!(failed.to_string().contains("nothing to deposit for acme"));
}

#[test]
fn a_key_taken_twice_names_both_sources_and_adds_nothing() {
    let runtime = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_toolset(Bank::of("acme", 0))
        .unwrap();
    let before = runtime.registry().len();
    let err = match runtime.with_toolset(Shadow) {
        Err(err) => err,
        Ok(_) => panic!("a second `bank.balance@1` was added"),
    };
    let RegistryError::DuplicateKey { key, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(key, "bank.balance@1");
    let text = err.to_string();
    let here = module_path!();
    assert!(text.contains(&format!("toolset `{here}::Bank`")), "{text}");
    assert!(
        text.contains(&format!("toolset `{here}::Shadow`")),
        "{text}"
    );
    assert!(text.contains("suite/tests/toolsets.rs"), "{text}");

    // All or nothing: `Shadow`'s own `bank.echo@1` was not added either.
    let mut registry = tackle::Registry::from_inventory_in(module_path!()).unwrap();
    registry.add_toolset(Bank::of("acme", 0)).unwrap();
    assert!(registry.add_toolset(Shadow).is_err());
    assert_eq!(registry.len(), before);
    assert!(registry.get("bank.echo@1").is_none());
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-toolsets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("cassette.json")
}

fn cassette(path: &PathBuf, mode: Mode) -> Cassette {
    Cassette::open(
        path,
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false),
    )
    .unwrap()
}

#[tokio::test]
async fn a_write_method_records_once_and_replays_without_running() {
    let path = temp("replay");
    let ctx = ToolContext::new().with_grant("bank:deposit");

    let bank = Arc::new(Bank::of("acme", 10));
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_toolset(Arc::clone(&bank))
            .unwrap(),
    );
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Rewrite));
    let out = run
        .call(Bank::DEPOSIT_KEY, json!({"cents": 5}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!(15));
    run.finish().unwrap();
    assert_eq!(bank.deposits.load(Ordering::SeqCst), 1);

    // Replayed on a fresh value: the recorded outcome, and the method never runs.
    let fresh = Arc::new(Bank::of("acme", 0));
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_toolset(Arc::clone(&fresh))
            .unwrap(),
    );
    let run = Run::new(&runtime).with_cassette(cassette(&path, Mode::Replay));
    let out = run
        .call(Bank::DEPOSIT_KEY, json!({"cents": 5}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!(15));
    run.finish().unwrap();
    assert_eq!(fresh.deposits.load(Ordering::SeqCst), 0);
    assert_eq!(fresh.cents.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_agent_is_offered_a_toolsets_tools() {
    let runtime = runtime_of(Bank::of("acme", 42));
    let model = ScriptedModel::new([
        ChatResponse::calls(
            "",
            vec![ToolCallRequest::new(
                "c1",
                "bank_balance",
                json!({"account": "main"}),
            )],
        ),
        ChatResponse::text("It holds 42 cents."),
    ]);
    let agent = Agent::new(model).tools(Bank::TOOLS);
    let answer = agent.run(&Run::new(&runtime), "How much?").await.unwrap();
    assert_eq!(answer.value, "It holds 42 cents.");
    assert_eq!(
        answer.state.tool_calls[0].result,
        Some(json!("acme:main:42"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_serves_a_toolsets_tools() {
    let runtime = runtime_of(Bank::of("acme", 7));
    let server = McpServer::new(
        runtime,
        Identity::new("bank", "1"),
        ToolContext::new().with_grant("bank:deposit"),
    )
    .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"bank.balance"), "{names:?}");
    assert!(names.contains(&"bank.deposit"), "{names:?}");
    let listed = tools.iter().find(|t| t.name == "bank.balance").unwrap();
    let schema = Value::Object((*listed.input_schema).clone());
    assert_eq!(schema["required"], json!(["account"]));

    let arguments = json!({"cents": 3}).as_object().cloned().unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("bank.deposit").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"result": 10})));
    client.cancel().await.unwrap();
}

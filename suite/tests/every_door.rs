//! Every entry point reaches the one door: for each way in (a user's call, a run's
//! batch, a chain, a ReAct run, a skill, a pipeline's tool and broker nodes, a model
//! call, the MCP server, an imported MCP tool, a skill's and a pipeline node's
//! `requires`), a caller without the grant is refused,
//! and every call, refused or not, leaves an audit event. Then the paths that used to
//! lead around the gates: a deduplicated call, a model naming a tool it was not
//! offered, a run-time tool taking over a gated name.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use tackle::agent::model::{
    complete, completion, ChatModel, ChatResponse, ModelError, ScriptedModel, ToolCallRequest,
};
use tackle::agent::skill::{Skill, SkillError, SkillKind};
use tackle::audit::{AuditEvent, Execution, GateDecision, MemoryAudit};
use tackle::chain::{ChainStep, ToolChain};
use tackle::pipeline::{
    broker_request_tool, Broker, BrokerFuture, BrokerHandle, BrokerResponse, Pipeline,
    PipelineError,
};
use tackle::{
    context::Resource, error::RegistryError, registry::DynamicTool, tool, Agent, Registry, Run,
    Runtime, SideEffects, SkillState, ToolCall, ToolContext, ToolErrorKind, ToolSpec,
};
use tackle_mcp::{import_http, serve_http, Identity, ImportOptions, McpServer};

static OPENED: AtomicUsize = AtomicUsize::new(0);

/// Open the vault and read what is in it.
#[tool(namespace = "vault", side_effects = read, requires_capability = "vault:open")]
fn open(shelf: String) -> String {
    OPENED.fetch_add(1, Ordering::SeqCst);
    format!("the {shelf} shelf holds gold")
}

/// Write a note.
#[tool(namespace = "vault", side_effects = none)]
fn note(text: String) -> String {
    text
}

/// A runtime over this file's tools with an audit trail.
fn audited() -> (Arc<Runtime>, Arc<MemoryAudit>) {
    let audit = Arc::new(MemoryAudit::new());
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_audit(Arc::clone(&audit));
    (Arc::new(rt), audit)
}

/// The audit events of calls to `key`.
fn events_of(audit: &MemoryAudit, key: &str) -> Vec<AuditEvent> {
    audit
        .events()
        .into_iter()
        .filter(|e| e.key == key)
        .collect()
}

/// Asserts that the last call of `key` was refused at the capability gate, and
/// audited as such.
fn assert_refused(audit: &MemoryAudit, key: &str) {
    let events = events_of(audit, key);
    let last = events
        .last()
        .unwrap_or_else(|| panic!("no audit event for `{key}`: {:?}", audit.events()));
    assert!(
        matches!(last.gates.capability, GateDecision::Refused(_)),
        "{last:?}"
    );
    assert_eq!(
        last.error.as_ref().map(|e| e.kind),
        Some(ToolErrorKind::CapabilityDenied),
        "{last:?}"
    );
    assert_eq!(last.execution, Execution::NotRun);
}

fn shelf() -> Value {
    json!({"shelf": "top"})
}

#[tokio::test]
async fn a_users_call() {
    let (rt, audit) = audited();
    let err = rt
        .call("vault.open", shelf(), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
    assert_refused(&audit, "vault.open@1");
    let ok = rt
        .call(
            "vault.open",
            shelf(),
            &ToolContext::new().with_grant("vault:open"),
        )
        .await
        .unwrap();
    assert_eq!(ok, "the top shelf holds gold");
    let events = events_of(&audit, "vault.open@1");
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].gates.capability, GateDecision::Passed);
}

#[tokio::test]
async fn a_runs_batch() {
    let (rt, audit) = audited();
    let run = Run::new(&rt);
    let outcomes = run
        .execute_batch(
            vec![
                ToolCall::new("1", "vault.open", shelf()),
                ToolCall::new("2", "vault.note", json!({"text": "hi"})),
            ],
            &ToolContext::new(),
        )
        .await;
    assert_eq!(
        outcomes[0].result().as_ref().unwrap_err().kind(),
        ToolErrorKind::CapabilityDenied
    );
    assert!(outcomes[1].result().is_ok());
    assert_refused(&audit, "vault.open@1");
    assert_eq!(events_of(&audit, "vault.note@1").len(), 1);
}

#[tokio::test]
async fn a_chain() {
    let (rt, audit) = audited();
    let chain = ToolChain::new([
        ChainStep::new("vault.note", "noted").with_mapping("text", "shelf"),
        ChainStep::new("vault.open", "opened").with_mapping("shelf", "shelf"),
    ]);
    let start = json!({"shelf": "top"}).as_object().cloned().unwrap();
    let result = chain.run(&Run::new(&rt), start, &ToolContext::new()).await;
    assert!(!result.success);
    let failure = result
        .step_results
        .iter()
        .find(|s| s.key == "vault.open@1")
        .unwrap();
    assert_eq!(
        failure.error_kind,
        Some(ToolErrorKind::CapabilityDenied),
        "{result:?}"
    );
    assert_refused(&audit, "vault.open@1");
    assert_eq!(events_of(&audit, "vault.note@1").len(), 1);
}

/// A model that asks for `vault_open`, then answers "done".
fn vault_model() -> ScriptedModel {
    vault_model_then("done")
}

const MODEL_KEY: &str = "llm.scripted.complete@script";

/// Runs an agent of the vault model inside a tool call: on behalf of whoever called
/// the tool, with the context the tool was given.
#[tool(namespace = "vault", side_effects = external)]
async fn delegate(ctx: &ToolContext, runtime: Resource<Arc<Runtime>>) -> Result<String, String> {
    let agent = Agent::new(vault_model()).tools(["vault.open"]);
    let run = Run::new(&runtime);
    match agent.run(&run, "open it").context(ctx).await {
        Ok(answer) => Ok(answer.value),
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test]
async fn a_react_run() {
    let (rt, audit) = audited();
    let agent = Agent::new(vault_model()).tools(["vault.open"]);

    // The program's own agent: its model needs no grant (the program chose it), but
    // without `vault:open` the tool call is a refused observation.
    let answer = agent.run(&Run::new(&rt), "open it").await.unwrap();
    assert_eq!(answer.value, "done");
    assert_eq!(
        answer.state.tool_calls[0].error_kind,
        Some(ToolErrorKind::CapabilityDenied)
    );
    assert_refused(&audit, "vault.open@1");
    let model_calls = events_of(&audit, MODEL_KEY);
    assert_eq!(model_calls.len(), 2);
    assert!(model_calls
        .iter()
        .all(|e| e.gates.capability == GateDecision::Passed && e.error.is_none()));

    // The same agent run by a tool for a caller without `llm:scripted` (an MCP client,
    // say): its first model call is refused, deny by default.
    let caller = ToolContext::new().with_resource(Arc::clone(&rt));
    let err = rt
        .call("vault.delegate", json!({}), &caller)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("llm:scripted"), "{err}");
    let model_calls = events_of(&audit, MODEL_KEY);
    assert_eq!(model_calls.len(), 3);
    assert!(
        matches!(model_calls[2].gates.capability, GateDecision::Refused(_)),
        "{:?}",
        model_calls[2]
    );

    // Granted by its caller, the tool's agent runs; the grant reaches the model calls
    // only: `vault.open` is still refused.
    let caller = caller.with_grant("llm:scripted");
    let out = rt.call("vault.delegate", json!({}), &caller).await.unwrap();
    assert_eq!(out, json!("done"));
    assert_eq!(events_of(&audit, MODEL_KEY).len(), 5);
    assert_eq!(events_of(&audit, "vault.open@1").len(), 2);
    assert!(events_of(&audit, "vault.open@1")
        .iter()
        .all(|e| e.gates.capability != GateDecision::Passed));
}

/// What the vault skill ends with.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema, SkillState)]
struct Opened {
    /// What was found.
    found: String,
}

#[tokio::test]
async fn a_skill() {
    let (rt, audit) = audited();
    let skill = Skill::builder::<Opened>("vault-opener", "1.0.0", SkillKind::Agent)
        .with_description("Opens the vault.")
        .with_tools(&["vault.open"])
        .build()
        .unwrap();
    // Run by the program, the skill's model needs no grant; its tool does.
    let done = skill
        .run::<Opened>(
            Arc::new(vault_model_then("{\"found\": \"nothing\"}")),
            &Run::new(&rt),
            "open it",
            &ToolContext::new(),
        )
        .await
        .unwrap();
    assert!(events_of(&audit, MODEL_KEY)
        .iter()
        .all(|e| e.gates.capability == GateDecision::Passed));
    assert_eq!(done.state.found, "nothing");
    assert_refused(&audit, "vault.open@1");
}

/// A skill's `requires` is a gate of the door: the operation `skill.<name>@<version>`,
/// refused and audited before any model call; let in and audited once granted.
#[tokio::test]
async fn a_skills_requires() {
    let (rt, audit) = audited();
    let skill = Skill::builder::<Opened>("vault-keeper", "2.0.0", SkillKind::Agent)
        .with_description("Keeps the vault.")
        .with_requires(&["vault:keep"])
        .build()
        .unwrap();
    let err = skill
        .run::<Opened>(
            Arc::new(vault_model_then("{\"found\": \"gold\"}")),
            &Run::new(&rt),
            "keep it",
            &ToolContext::new().with_grant("llm:*"),
        )
        .await
        .unwrap_err();
    match &err {
        SkillError::Denied { missing, .. } => assert_eq!(missing, &["vault:keep"]),
        other => panic!("{other}"),
    }
    assert_refused(&audit, "skill.vault-keeper@2.0.0");
    assert!(events_of(&audit, MODEL_KEY).is_empty(), "no model call");
    skill
        .run::<Opened>(
            Arc::new(ScriptedModel::new([ChatResponse::text(
                "{\"found\": \"gold\"}",
            )])),
            &Run::new(&rt),
            "keep it",
            &ToolContext::new()
                .with_grant("llm:*")
                .with_grant("vault:keep"),
        )
        .await
        .unwrap();
    let entered = events_of(&audit, "skill.vault-keeper@2.0.0");
    assert_eq!(entered.len(), 2, "refused, then let in");
    assert_eq!(entered[1].gates.capability, GateDecision::Passed);
}

/// A pipeline node's `requires` is a gate of the door too:
/// `pipeline.<pipeline>.<node>@1`.
#[tokio::test]
async fn a_pipeline_nodes_requires() {
    let (rt, audit) = audited();
    let doc = Pipeline::from_yaml(
        "name: vaults\nnodes:\n  - id: look\n    kind: tool\n    tool: vault.open\n    requires: [vault:look]\n    out: seen\n",
    )
    .unwrap();
    let err = doc
        .run(&Run::new(&rt), json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    match err {
        PipelineError::Denied { node, missing, .. } => {
            assert_eq!(node, "look");
            assert_eq!(missing, ["vault:look"]);
        }
        other => panic!("{other}"),
    }
    assert_refused(&audit, "pipeline.vaults.look@1");
    assert!(
        events_of(&audit, "vault.open@1").is_empty(),
        "the node did not run"
    );
}

/// A model that asks for `vault_open`, then answers `answer`.
fn vault_model_then(answer: &str) -> ScriptedModel {
    ScriptedModel::new([
        ChatResponse::calls(
            "opening",
            vec![ToolCallRequest {
                id: "c1".into(),
                name: "vault_open".into(),
                arguments: shelf(),
            }],
        ),
        ChatResponse::text(answer),
    ])
}

struct Echo;

impl Broker for Echo {
    fn request<'a>(&'a self, agent_id: &'a str, intent: &'a str) -> BrokerFuture<'a> {
        Box::pin(async move {
            Ok(BrokerResponse::new("m-1")
                .with_field("agent", json!(agent_id))
                .with_field("echo", json!(intent)))
        })
    }
}

#[tokio::test]
async fn a_pipelines_tool_node() {
    let (rt, audit) = audited();
    let doc = Pipeline::from_yaml(
        "name: p\nnodes:\n  - id: open\n    kind: tool\n    tool: vault.open\n    inputs:\n      shelf: \"{{state.shelf}}\"\n    out: found\n",
    )
    .unwrap();
    let err = doc
        .run(&Run::new(&rt), json!({"shelf": "top"}), &ToolContext::new())
        .await
        .unwrap_err();
    match err {
        PipelineError::Tool { error, .. } => {
            assert_eq!(error.kind(), ToolErrorKind::CapabilityDenied)
        }
        other => panic!("{other}"),
    }
    assert_refused(&audit, "vault.open@1");
}

#[tokio::test]
async fn a_pipelines_broker_node() {
    let (rt, audit) = audited();
    let doc =
        Pipeline::from_yaml("name: p\nnodes:\n  - id: ask\n    kind: broker\n    out: reply\n")
            .unwrap();
    let state = json!({"agent_id": "travel", "intent": "go to Oslo"});
    let ctx = ToolContext::new().with_resource(BrokerHandle::new(Echo));
    let err = doc
        .run(&Run::new(&rt), state.clone(), &ctx)
        .await
        .unwrap_err();
    match err {
        PipelineError::Denied { missing, .. } => assert_eq!(missing, ["tools:broker_request"]),
        other => panic!("{other}"),
    }
    assert_refused(&audit, "nautilus.broker_request@1");
    let done = doc
        .run(
            &Run::new(&rt),
            state,
            &ctx.with_grant("tools:broker_request"),
        )
        .await
        .unwrap();
    assert_eq!(done["reply"]["echo"], "go to Oslo");
    let sends = events_of(&audit, "nautilus.broker_request@1");
    assert_eq!(sends.len(), 2);
    assert!(sends[1].error.is_none());
}

#[tokio::test]
async fn the_broker_request_tool() {
    let audit = Arc::new(MemoryAudit::new());
    let mut rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_audit(Arc::clone(&audit));
    rt.registry_mut().register(broker_request_tool()).unwrap();
    let ctx = ToolContext::new().with_resource(BrokerHandle::new(Echo));
    let input = json!({"agent_id": "travel", "intent": "go"});
    let err = rt
        .call("nautilus.broker_request@1", input.clone(), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);
    assert_refused(&audit, "nautilus.broker_request@1");
    let out = rt
        .call(
            "nautilus.broker_request@1",
            input,
            &ctx.with_grant("tools:broker_request"),
        )
        .await
        .unwrap();
    assert_eq!(out["__stargraph_provenance__"]["external_id"], "m-1");
}

#[tokio::test]
async fn a_model_call() {
    let (rt, audit) = audited();
    let model = ScriptedModel::new([ChatResponse::text("hi")]);
    let op = completion(&model);
    assert_eq!(op.key(), MODEL_KEY);
    assert_eq!(op.spec().permissions, ["llm:scripted"]);
    let request = Default::default();
    let run = Run::new(&rt);
    let err = complete(&run, &op, &model, &request, &ToolContext::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Door(e) if e.kind() == ToolErrorKind::CapabilityDenied),
        "{err}"
    );
    assert_eq!(model.used(), 0, "a refused call never reaches the model");
    assert_refused(&audit, MODEL_KEY);
    let ctx = ToolContext::new().with_grant("llm:scripted");
    let answer = complete(&run, &op, &model, &request, &ctx).await.unwrap();
    assert_eq!(answer.text, "hi");
    assert_eq!(events_of(&audit, MODEL_KEY).len(), 2);
    assert_eq!(model.permissions(), ["llm:scripted"]);
}

#[tokio::test]
async fn the_mcp_server() {
    let (rt, audit) = audited();
    let server = McpServer::new(rt, Identity::new("vault", "1"), ToolContext::new()).unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let arguments: Map<String, Value> = shelf().as_object().cloned().unwrap();
    // A tool the grants cannot call is unknown to the client, and the door still
    // refuses the call and audits it.
    let denied = client
        .call_tool(CallToolRequestParams::new("vault.open").with_arguments(arguments))
        .await
        .unwrap_err();
    assert!(
        denied.to_string().contains("unknown tool `vault.open`"),
        "{denied:?}"
    );
    assert_refused(&audit, "vault.open@1");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_tool() {
    let (served, _) = audited();
    let server = McpServer::new(
        served,
        Identity::new("vault-server", "1.0.0"),
        ToolContext::new().with_grant("vault:*"),
    )
    .unwrap();
    let http = serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mut registry = Registry::new();
    let import = import_http(&mut registry, &http.url(), ImportOptions::new("vlt"))
        .await
        .unwrap();
    let key = import
        .keys()
        .iter()
        .find(|k| k.contains(".vault_note@"))
        .cloned()
        .unwrap();
    let audit = Arc::new(MemoryAudit::new());
    let rt = Runtime::new(registry).with_audit(Arc::clone(&audit));
    let text = json!({"text": "hello"});
    let err = rt
        .call(&key, text.clone(), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied, "{err}");
    assert!(err.to_string().contains("`mcp:vlt`"), "{err}");
    assert_refused(&audit, &key);
    let ok = rt
        .call(&key, text, &ToolContext::new().with_grant("mcp:vlt"))
        .await
        .unwrap();
    // Imported at 2026-07-28, the server sends a string output as itself.
    assert_eq!(ok, json!("hello"));
    assert_eq!(events_of(&audit, &key).len(), 2);
    import.close().await;
}

static WRITES: AtomicUsize = AtomicUsize::new(0);

/// Pay an invoice once, whatever the retries.
#[tool(
    namespace = "bank",
    side_effects = external,
    requires_capability = "bank:pay",
    idempotency_key = "invoice"
)]
fn pay(invoice: String, cents: u32) -> String {
    WRITES.fetch_add(1, Ordering::SeqCst);
    format!("paid {invoice}: {cents}")
}

#[tokio::test]
async fn a_deduplicated_call_passes_its_own_gates_first() {
    let (rt, audit) = audited();
    // One run: its idempotency memory holds the first outcome.
    let run = Run::new(&rt);
    let granted = ToolContext::new().with_grant("bank:pay");
    let pay =
        |cents: Value| ToolCall::new("p", "bank.pay", json!({"invoice": "inv-7", "cents": cents}));
    let first = run.execute(pay(json!(100)), &granted).await;
    assert_eq!(first.result().as_ref().unwrap(), "paid inv-7: 100");
    // Same idempotency key, no grant: refused, not handed the stored outcome.
    let denied = run.execute(pay(json!(100)), &ToolContext::new()).await;
    assert_eq!(
        denied.result().as_ref().unwrap_err().kind(),
        ToolErrorKind::CapabilityDenied
    );
    // Same key, invalid input: refused by validation.
    let invalid = run.execute(pay(json!("lots")), &granted).await;
    assert_eq!(
        invalid.result().as_ref().unwrap_err().kind(),
        ToolErrorKind::InvalidInput
    );
    // Same key, granted and valid: the first outcome, without running again.
    let again = run.execute(pay(json!(100)), &granted).await;
    assert_eq!(again.result().as_ref().unwrap(), "paid inv-7: 100");
    assert_eq!(again.report.execution, Execution::Deduplicated);
    assert_eq!(WRITES.load(Ordering::SeqCst), 1);
    let events = events_of(&audit, "bank.pay@1");
    assert_eq!(events.len(), 4);
    assert_eq!(events[3].execution, Execution::Deduplicated);
    assert_eq!(events[3].gates.capability, GateDecision::Passed);
    assert_eq!(events[3].gates.input, GateDecision::Passed);
}

#[tokio::test]
async fn a_react_run_calls_only_the_tools_it_offers() {
    let (rt, audit) = audited();
    let names = ["vault.open@1", "vault.open", "open", "vault_open"];
    let calls = names
        .iter()
        .enumerate()
        .map(|(i, name)| ToolCallRequest {
            id: format!("c{i}"),
            name: (*name).into(),
            arguments: shelf(),
        })
        .collect();
    let model = ScriptedModel::new([
        ChatResponse::calls("trying every name", calls),
        ChatResponse::text("gave up"),
    ]);
    // Offered: the note tool only. The caller may open the vault, but the run may not.
    let agent = Agent::new(model).tools(["vault.note"]).error_budget(10);
    let before = OPENED.load(Ordering::SeqCst);
    let ctx = ToolContext::new().with_grant("vault:open");
    let state = agent
        .run(&Run::new(&rt), "open the vault")
        .context(&ctx)
        .await
        .unwrap()
        .state;
    assert_eq!(state.tool_calls.len(), names.len());
    for record in &state.tool_calls {
        assert_eq!(
            record.error_kind,
            Some(ToolErrorKind::NotFound),
            "{record:?}"
        );
    }
    assert_eq!(
        OPENED.load(Ordering::SeqCst),
        before,
        "the vault never opened"
    );
    assert!(events_of(&audit, "vault.open@1").is_empty());
}

/// A dynamic tool that answers `label`.
fn wipe(version: &str, permissions: &[&str], label: &'static str) -> DynamicTool {
    let mut spec = ToolSpec::new(
        "adm",
        "wipe",
        version,
        SideEffects::External,
        "Wipes it all.",
    );
    spec.permissions = permissions.iter().map(|p| (*p).to_owned()).collect();
    DynamicTool::new(spec, move |_ctx, _input| async move {
        Ok::<_, String>(json!(label))
    })
}

#[tokio::test]
async fn a_run_time_tool_cannot_take_over_a_gated_name() {
    let mut registry = Registry::new();
    registry
        .register(wipe("1", &["adm:wipe"], "gated"))
        .unwrap();
    // An ungated newer version would make `adm.wipe` its own: refused.
    let err = registry.register(wipe("2", &[], "open")).unwrap_err();
    assert!(
        matches!(&err, RegistryError::GatedTakeover { name, displaced, missing, .. }
            if name == "adm.wipe" && displaced == "adm.wipe@1" && missing == &["adm:wipe"]),
        "{err}"
    );
    assert_eq!(registry.len(), 1);
    let rt = Runtime::new(registry);
    let err = rt
        .call("adm.wipe", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::CapabilityDenied);

    // Requiring the same permission, a newer version may take the name.
    let mut registry = Registry::new();
    registry
        .register(wipe("1", &["adm:wipe"], "gated"))
        .unwrap();
    registry
        .register(wipe("2", &["adm:wipe", "adm:audit"], "v2"))
        .unwrap();
    assert_eq!(registry.resolve("adm.wipe").unwrap().key(), "adm.wipe@2");

    // The documented opt-in.
    let mut registry = Registry::new();
    registry
        .register(wipe("1", &["adm:wipe"], "gated"))
        .unwrap();
    registry
        .register(wipe("2", &[], "open").with_gated_takeover(true))
        .unwrap();
    assert_eq!(registry.resolve("adm.wipe").unwrap().key(), "adm.wipe@2");
}

//! Resources, prompts, completion and logging served over MCP, checked with the
//! official SDK's Rust client over an in-memory pipe; and reading a resource through
//! the door (capabilities, validation, audit, record and replay).

// MCP's logging is deprecated by the 2026-07-28 revision; it is served for clients of
// the earlier revisions, and tested as such.
#![allow(deprecated)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, LoggingMessageNotificationParam,
    ReadResourceRequestParams, Reference,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tackle::audit::MemoryAudit;
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Cassette, Run, Runtime, ToolContext, ToolErrorKind};
use tackle_mcp::prompts::{Prompt, PromptMessage, Prompts};
use tackle_mcp::resources::{ReadError, Resource, ResourceBody, Resources};
use tackle_mcp::{Identity, McpServer};

/// How many times the record reader ran.
static RECORD_READS: AtomicUsize = AtomicUsize::new(0);

/// Logs while it works.
#[tool(namespace = "res", side_effects = none)]
async fn chatty() -> u32 {
    tracing::debug!("below the client's level");
    tracing::info!(step = 1, "working");
    tracing::warn!("almost done with hunter2-secret");
    7
}

fn resources() -> Resources {
    Resources::new()
        .with(
            Resource::text("docs://readme", "readme", "Read me first.")
                .with_description("The readme"),
        )
        .unwrap()
        .with(Resource::text("docs://secret", "secret", "The plans.").requires("docs:secret"))
        .unwrap()
        .with(
            Resource::template("records://{id}", "record", |args| {
                RECORD_READS.fetch_add(1, Ordering::SeqCst);
                Ok(ResourceBody::Text(format!("record {}", args["id"])))
            })
            .with_argument("id", json!({"type": "string", "pattern": "^[0-9]+$"}))
            .with_completion("id", |typed| {
                ["100", "101", "200"]
                    .into_iter()
                    .filter(|id| id.starts_with(typed))
                    .map(str::to_owned)
                    .collect()
            }),
        )
        .unwrap()
}

fn prompts() -> Prompts {
    Prompts::new()
        .with(
            Prompt::new("greet", "Greets someone.", |args| {
                Ok(vec![PromptMessage::user(format!(
                    "Say hello to {}.",
                    args["name"]
                ))])
            })
            .with_argument("name", "Who to greet", true),
        )
        .unwrap()
}

/// A client that keeps the log messages it gets.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<LoggingMessageNotificationParam>>>);

impl ClientHandler for Logs {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

async fn connect(ctx: ToolContext) -> (RunningService<RoleClient, Logs>, Logs) {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    connect_to(runtime, ctx).await
}

async fn connect_to(
    runtime: Arc<Runtime>,
    ctx: ToolContext,
) -> (RunningService<RoleClient, Logs>, Logs) {
    let server = McpServer::new(runtime, Identity::new("library", "1.0.0"), ctx)
        .unwrap()
        .with_resources(resources())
        .with_prompts(prompts());
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let logs = Logs::default();
    let client = logs.clone().serve(client_io).await.unwrap();
    (client, logs)
}

fn json_of(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_read_and_hidden_by_grants() {
    let (client, _) = connect(ToolContext::new()).await;
    let listed = json_of(client.list_all_resources().await.unwrap());
    let uris: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    // The server's grants cannot read the secret: it is not listed.
    assert_eq!(uris, ["docs://readme"]);
    let templates = json_of(client.list_all_resource_templates().await.unwrap());
    assert_eq!(templates[0]["uriTemplate"], "records://{id}");

    let read = json_of(
        client
            .read_resource(ReadResourceRequestParams::new("records://101"))
            .await
            .unwrap(),
    );
    assert_eq!(read["contents"][0]["text"], "record 101");
    assert_eq!(read["contents"][0]["uri"], "records://101");
    // A hidden resource reads as an unknown one; a value its schema refuses is invalid.
    let hidden = client
        .read_resource(ReadResourceRequestParams::new("docs://secret"))
        .await
        .unwrap_err();
    assert!(hidden.to_string().contains("no resource"), "{hidden}");
    let bad = client
        .read_resource(ReadResourceRequestParams::new("records://abc"))
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("does not match"), "{bad}");

    // Nor can the client subscribe to it, or learn that it exists.
    #[allow(deprecated)]
    let subscribe = |uri: &str| client.subscribe(rmcp::model::SubscribeRequestParams::new(uri));
    let hidden_sub = subscribe("docs://secret").await.unwrap_err();
    let unknown_sub = subscribe("docs://nothing").await.unwrap_err();
    assert_eq!(
        hidden_sub.to_string().replace("secret", "X"),
        unknown_sub.to_string().replace("nothing", "X")
    );
    assert!(subscribe("docs://readme").await.is_ok());
    // A template value is one segment, percent-decoded: `..` in any spelling is no match.
    let climbing = client
        .read_resource(ReadResourceRequestParams::new("records://%2E%2E"))
        .await
        .unwrap_err();
    assert!(climbing.to_string().contains("no resource"), "{climbing}");

    let with_grant = connect(ToolContext::new().with_grant("docs:secret"))
        .await
        .0;
    let secret = json_of(
        with_grant
            .read_resource(ReadResourceRequestParams::new("docs://secret"))
            .await
            .unwrap(),
    );
    assert_eq!(secret["contents"][0]["text"], "The plans.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_render_with_checked_arguments_and_complete() {
    let (client, _) = connect(ToolContext::new()).await;
    let listed = json_of(client.list_all_prompts().await.unwrap());
    assert_eq!(listed[0]["name"], "greet");
    assert_eq!(listed[0]["arguments"][0]["required"], true);

    let mut request = GetPromptRequestParams::new("greet");
    request.arguments = Some(json!({"name": "Ada"}).as_object().unwrap().clone());
    let got = json_of(client.get_prompt(request).await.unwrap());
    assert_eq!(got["messages"][0]["content"]["text"], "Say hello to Ada.");
    let missing = client
        .get_prompt(GetPromptRequestParams::new("greet"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("`name`"), "{missing}");

    let completed = json_of(
        client
            .complete(CompleteRequestParams::new(
                Reference::for_resource("records://{id}"),
                ArgumentInfo::new("id", "10"),
            ))
            .await
            .unwrap(),
    );
    assert_eq!(completed["completion"]["values"], json!(["100", "101"]));
}

// One thread: the subscriber set for this test is the thread's.
#[tokio::test]
async fn tracing_events_reach_the_client_that_set_a_level() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let subscriber = tracing_subscriber::registry().with(tackle_mcp::logging::layer());
    crate::support::interest::ask_every_call();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Reading the server's log is a grant.
    let (refused, _) = connect(ToolContext::new()).await;
    #[allow(deprecated)]
    let no = refused
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Debug,
        ))
        .await
        .unwrap_err();
    assert!(no.to_string().contains("mcp:log"), "{no}");
    let ctx = ToolContext::new()
        .with_grant("mcp:log")
        .with_secret("VAULT", "hunter2-secret");
    let (client, logs) = connect(ctx).await;
    let call = rmcp::model::CallToolRequestParams::new("res.chatty");
    // No level set: nothing is sent.
    client.call_tool(call.clone()).await.unwrap();
    assert!(logs.0.lock().unwrap().is_empty());
    #[allow(deprecated)]
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Info,
        ))
        .await
        .unwrap();
    client.call_tool(call).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while logs.0.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let logs = json_of(&*logs.0.lock().unwrap());
    assert_eq!(logs.as_array().map(Vec::len), Some(2), "{logs}");
    assert_eq!(logs[0]["level"], "info");
    assert_eq!(logs[0]["data"], json!({"message": "working", "step": "1"}));
    assert_eq!(logs[1]["level"], "warning");
    // The server context's secrets are scrubbed.
    assert_eq!(logs[1]["data"], "almost done with [REDACTED]");
}

/// The secret argument every output place is searched for.
const PASSWORD: &str = "swordfish-7781";

/// Logs in, and says too much about it: its log, its stream and its error name the
/// password.
#[tool(namespace = "res", side_effects = none)]
fn login(ctx: &ToolContext, user: String, #[secret] pw: String) -> Result<String, String> {
    tracing::info!("login bad with {pw}");
    tracing::warn!(user = %user, password = %pw, "refused");
    ctx.stream(format!("tried {pw}"));
    ctx.report_progress(1, Some(1));
    Err(format!("{user} may not log in with {pw}"))
}

/// The same, as a tool that sees no context and awaits between its logs.
#[tool(namespace = "res", side_effects = none)]
async fn login_quietly(#[secret] pw: String) -> Result<String, String> {
    tracing::info!("quiet login bad with {pw}");
    tokio::task::yield_now().await;
    tracing::error!(attempt = ?pw, "still bad");
    Err(format!("no entry with {pw}"))
}

/// Every span's fields, as recorded: a span must never carry a secret.
#[derive(Clone, Default)]
struct SpanFields(Arc<Mutex<String>>);

impl tracing::field::Visit for SpanFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut text = self.0.lock().unwrap();
        text.push_str(&format!("{}={value:?};", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        attrs.record(&mut self.clone());
    }

    fn on_record(
        &self,
        _span: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        values.record(&mut self.clone());
    }
}

// One thread: the subscriber set for this test is the thread's.
#[tokio::test]
async fn a_tools_secret_argument_reaches_no_output_of_the_server() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let spans = SpanFields::default();
    let subscriber = tracing_subscriber::registry()
        .with(tackle_mcp::logging::layer())
        .with(spans.clone());
    crate::support::interest::ask_every_call();
    let _guard = tracing::subscriber::set_default(subscriber);
    let audit = Arc::new(MemoryAudit::new());
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_audit(audit.clone()),
    );
    let (client, logs) = connect_to(runtime, ToolContext::new().with_grant("mcp:log")).await;
    #[allow(deprecated)]
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Debug,
        ))
        .await
        .unwrap();
    let mut results = Vec::new();
    for (name, arguments) in [
        ("res.login", json!({"user": "ada", "pw": PASSWORD})),
        ("res.login_quietly", json!({"pw": PASSWORD})),
    ] {
        let mut call = rmcp::model::CallToolRequestParams::new(name);
        call.arguments = arguments.as_object().cloned();
        // A progress token: the tool's progress goes to the client too.
        rmcp::model::RequestParamsMeta::set_progress_token(
            &mut call,
            rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)),
        );
        results.push(json_of(client.call_tool(call).await.unwrap()));
    }
    // Four log events were sent (at the debug level, each at or above it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while logs.0.lock().unwrap().len() < 4 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let logs = json_of(&*logs.0.lock().unwrap());
    assert!(
        logs.as_array().is_some_and(|l| l.len() >= 4),
        "the log messages did not all arrive: {logs}"
    );
    let places = [
        ("MCP log notifications", logs.to_string()),
        ("call results", json_of(&results).to_string()),
        ("audit events", json_of(audit.events()).to_string()),
        ("spans", spans.0.lock().unwrap().clone()),
    ];
    for (place, text) in &places {
        assert_eq!(
            text.matches(PASSWORD).count(),
            0,
            "the secret argument reached the {place}: {text}"
        );
    }
    // The spans were seen (the check above is not of an empty text).
    assert!(places[3].1.contains("res.login"), "{}", places[3].1);
    // What was scrubbed still says what happened.
    assert!(
        places[0].1.contains("login bad with [REDACTED]"),
        "{}",
        places[0].1
    );
    assert!(
        places[1].1.contains("may not log in with [REDACTED]"),
        "{}",
        places[1].1
    );
}

/// A server whose one prompt completes its argument with 200 values, each the typed
/// value and a number.
async fn echoing_completions() -> RunningService<RoleClient, Logs> {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let prompts = Prompts::new()
        .with(
            Prompt::new("echo", "Echoes.", |_| Ok(Vec::new()))
                .with_argument("text", "What to echo", false)
                .with_completion("text", |typed| {
                    (0..200).map(|i| format!("{typed}{i}")).collect()
                }),
        )
        .unwrap();
    let server = McpServer::new(
        runtime,
        Identity::new("library", "1.0.0"),
        ToolContext::new(),
    )
    .unwrap()
    .with_prompts(prompts);
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Logs::default().serve(client_io).await.unwrap()
}

fn echo(value: String) -> CompleteRequestParams {
    CompleteRequestParams::new(
        Reference::for_prompt("echo"),
        ArgumentInfo::new("text", value),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_answers_are_capped_in_count_and_bytes() {
    let cap = tackle_mcp::server::MAX_COMPLETION_BYTES;
    let client = echoing_completions().await;
    let within = std::time::Duration::from_secs(10);
    // A 1 MiB value: no answer of 100 copies of it.
    let huge = "x".repeat(1 << 20);
    let answer = tokio::time::timeout(within, client.complete(echo(huge)))
        .await
        .expect("an answer within 10 s");
    match answer {
        Ok(result) => {
            let size = json_of(result).to_string().len();
            assert!(size <= cap + 1024, "a {size}-byte answer");
        }
        Err(refused) => {
            let message = refused.to_string();
            assert!(message.contains("bytes"), "{message}");
            assert!(message.len() < 1024, "a {}-byte refusal", message.len());
        }
    }
    // Values of 2 KiB each: as many as fit in the cap, and the client is told of more.
    let long = "y".repeat(2048);
    let result = tokio::time::timeout(within, client.complete(echo(long)))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let result = json_of(result);
    let size = result.to_string().len();
    assert!(size <= cap + 1024, "a {size}-byte answer");
    let values = result["completion"]["values"].as_array().unwrap();
    assert!(
        !values.is_empty() && values.len() < 100,
        "{} values",
        values.len()
    );
    assert_eq!(result["completion"]["total"], 200);
    assert_eq!(result["completion"]["hasMore"], true);
    // Short values: at most 100, as MCP says.
    let result = json_of(client.complete(echo("z".into())).await.unwrap());
    assert_eq!(
        result["completion"]["values"].as_array().unwrap().len(),
        100
    );
    assert_eq!(result["completion"]["hasMore"], true);
}

/// A read passes the door: capabilities, audit, and a cassette that records it and
/// replays it without reading again.
#[tokio::test]
async fn a_read_passes_the_door_and_replays() {
    let audit = Arc::new(MemoryAudit::new());
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_audit(audit.clone()),
    );
    let set = resources();
    let ctx = ToolContext::new();
    let run = Run::new(&runtime);
    let denied = set.read(&run, "docs://secret", &ctx).await.unwrap_err();
    assert!(
        matches!(&denied, ReadError::Door(e) if e.kind() == ToolErrorKind::CapabilityDenied),
        "{denied}"
    );
    assert!(matches!(
        set.read(&run, "docs://nothing", &ctx).await,
        Err(ReadError::NotFound(_))
    ));
    assert!(audit.events().iter().any(|e| e.key == "resource.secret@1"));

    let path = std::env::temp_dir().join(format!("tackle-res-{}.json", std::process::id()));
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
    };
    let run =
        Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Rewrite)).unwrap());
    let recorded = set.read(&run, "records://200", &ctx).await.unwrap();
    run.finish().unwrap();
    let reads = RECORD_READS.load(Ordering::SeqCst);
    let run =
        Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Replay)).unwrap());
    let replayed = set.read(&run, "records://200", &ctx).await.unwrap();
    run.finish().unwrap();
    assert_eq!(replayed, recorded);
    assert_eq!(
        RECORD_READS.load(Ordering::SeqCst),
        reads,
        "the replay read again"
    );
    let _ = std::fs::remove_file(path);
}

/// Pays an amount (every call needs approval).
#[tool(namespace = "res", side_effects = external, needs_approval)]
fn pay(amount: u32) -> String {
    format!("paid {amount}")
}

/// A client whose human approves payments under 100, and says what it was asked.
#[derive(Clone, Default)]
struct Human(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Human {
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
        let asked = json_of(&request);
        let message = asked["message"].as_str().unwrap_or_default().to_owned();
        let small = message.contains("\"amount\": 5\n");
        self.0.lock().unwrap().push(message);
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"approve": small}}))
                .unwrap(),
        )
    }
}

/// With client approval, a call that needs approval asks the human at the client,
/// showing the exact arguments; their answer decides that one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_human_at_the_client_approves_each_call() {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(runtime, Identity::new("bank", "1.0.0"), ToolContext::new())
        .unwrap()
        .with_client_approval();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let human = Human::default();
    let client = human.clone().serve(client_io).await.unwrap();
    let pay = |amount: u32| {
        let mut params = rmcp::model::CallToolRequestParams::new("res.pay");
        params.arguments = Some(json!({"amount": amount}).as_object().unwrap().clone());
        client.call_tool(params)
    };
    let paid = pay(5).await.unwrap();
    assert_eq!(paid.is_error, Some(false), "{paid:?}");
    let refused = json_of(pay(500).await.unwrap());
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("did not approve")),
        "{refused}"
    );
    let asked = human.0.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0].contains("`res.pay@1`") && asked[0].contains("\"amount\": 5"),
        "{}",
        asked[0]
    );
}

/// Opens the vault (needs `vault:open`).
#[tool(namespace = "res", side_effects = read, requires_capability = "vault:open")]
fn vault() -> String {
    "gold".to_owned()
}

/// What the teller skill ends with.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema, tackle::SkillState)]
struct Counted {
    /// How much.
    total: u32,
}

/// A skill served as a prompt: its system prompt, its examples, the task, and its tools
/// by the names this client sees, none it cannot call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_is_served_as_a_prompt_naming_the_tools_the_client_sees() {
    use tackle::agent::skill::{Skill, SkillKind};
    let skill = Skill::builder::<Counted>("teller", "1.0.0", SkillKind::Agent)
        .with_description("Counts what the vault holds.")
        .with_system_prompt("You count money.")
        .with_tools(&["res.chatty", "res.vault"])
        .with_example(json!({"task": "count"}), Some(json!({"total": 3})))
        .build()
        .unwrap();
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(runtime, Identity::new("bank", "1.0.0"), ToolContext::new())
        .unwrap()
        .with_prompts(Prompts::new().with(Prompt::from_skill(&skill)).unwrap());
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let mut request = GetPromptRequestParams::new("teller");
    request.arguments = Some(
        json!({"task": "Count the gold."})
            .as_object()
            .unwrap()
            .clone(),
    );
    let got = json_of(client.get_prompt(request).await.unwrap());
    let texts: Vec<&str> = got["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"]["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "You count money.",
            r#"{"task":"count"}"#,
            r#"{"total":3}"#,
            "Count the gold.",
            // `res.vault` needs a grant this client lacks: not named.
            "(Tools for this: res.chatty.)",
        ]
    );
}

/// Counts the records (a non-object output; it logs nothing, so that the logging test
/// alone reaches `chatty`'s tracing callsites).
#[tool(namespace = "res", side_effects = none)]
fn count() -> u32 {
    7
}

/// Files a record once per id.
#[tool(namespace = "res", side_effects = write, idempotency_key = "id")]
fn file(id: String) -> String {
    format!("filed {id}")
}

/// A client of rmcp's that asks for one protocol revision.
#[derive(Clone)]
struct Era(rmcp::model::ProtocolVersion);

impl ClientHandler for Era {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.protocol_version = self.0.clone();
        config
    }
}

/// The tools of a listing by name, as JSON.
fn tools_by_name(listed: &[rmcp::model::Tool]) -> Vec<(String, Value)> {
    listed
        .iter()
        .map(|t| (t.name.to_string(), json_of(t)))
        .collect()
}

/// rmcp's own clients of the 2025-06-18, 2025-11-25 and (stateless, discovered)
/// 2026-07-28 revisions over streamable HTTP: each is answered in its revision, sees
/// the same tools in the same order (sorted by name), keyed writes marked idempotent;
/// a non-object output is wrapped in `{"result": ..}` for the older two only
/// (SEP-2106); the 2026-07-28 client follows a resource with `subscriptions/listen`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_every_revision_are_answered_in_theirs() {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;

    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(
        runtime,
        Identity::new("library", "1.0.0"),
        ToolContext::new(),
    )
    .unwrap()
    .with_resources(resources());
    let http = tackle_mcp::serve_http(server.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let transport = || StreamableHttpClientTransport::from_uri(http.url());

    let mut listings = Vec::new();
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let client = Era(version.clone()).serve(transport()).await.unwrap();
        let negotiated = client.peer_info().unwrap().protocol_version.clone();
        assert_eq!(negotiated, version);
        let call = CallToolRequestParams::new("res.count");
        let result = json_of(client.call_tool(call).await.unwrap());
        assert_eq!(
            result["structuredContent"],
            json!({"result": 7}),
            "{version}"
        );
        listings.push((
            version,
            tools_by_name(&client.list_all_tools().await.unwrap()),
        ));
        client.cancel().await.unwrap();
    }

    let modern = ()
        .serve_with_lifecycle(
            transport(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        modern.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let result = json_of(
        modern
            .call_tool(CallToolRequestParams::new("res.count"))
            .await
            .unwrap(),
    );
    assert_eq!(result["structuredContent"], json!(7));
    let tools = tools_by_name(&modern.list_all_tools().await.unwrap());
    listings.push((ProtocolVersion::V_2026_07_28, tools));

    let names: Vec<Vec<&str>> = listings
        .iter()
        .map(|(_, tools)| tools.iter().map(|(n, _)| n.as_str()).collect())
        .collect();
    let mut sorted = names[0].clone();
    sorted.sort_unstable();
    assert_eq!(names[0], sorted, "tools are listed sorted by name");
    assert!(names.iter().all(|n| *n == sorted), "{names:?}");
    for (version, tools) in &listings {
        let by_name: std::collections::HashMap<_, _> = tools.iter().cloned().collect();
        assert_eq!(
            by_name["res.file"]["annotations"]["idempotentHint"], true,
            "{version}: a keyed write is idempotent"
        );
        let count = &by_name["res.count"]["outputSchema"];
        if *version == ProtocolVersion::V_2026_07_28 {
            assert_eq!(count["type"], "integer", "{count}");
        } else {
            assert_eq!(count["properties"]["result"]["type"], "integer", "{count}");
        }
    }

    // Following resources: the readable one is accepted, the hidden and the unknown not.
    let mut following = modern
        .peer()
        .listen(
            SubscriptionFilter::builder()
                .resource_subscriptions(["docs://readme", "docs://secret", "docs://nothing"])
                .build(),
        )
        .await
        .unwrap();
    assert_eq!(
        following.acknowledged().resource_subscriptions,
        Some(vec!["docs://readme".to_owned()])
    );
    // rmcp sends the acknowledgment before the server's `listen` runs, so an update
    // made in between finds no follower yet: the update is made until one arrives.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let note = loop {
        server.notify_resource_updated("docs://readme").await;
        match tokio::time::timeout(std::time::Duration::from_millis(200), following.next()).await {
            Ok(next) => break next.unwrap().expect("an update, not the end"),
            Err(_) if std::time::Instant::now() < deadline => continue,
            Err(_) => panic!("no update within 10 s"),
        }
    };
    assert_eq!(json_of(&note)["params"]["uri"], "docs://readme", "{note:?}");
    modern.cancel().await.unwrap();
    http.shutdown().await;
}

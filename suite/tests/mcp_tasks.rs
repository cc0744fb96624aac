//! Durable MCP tasks across a killed server process.
//!
//! This binary is both sides. Started with `TACKLE_TASK_SERVE=<dir>`, it serves two
//! bank tools over stdio with durable tasks kept in `<dir>/tasks.db` (SQLite); as the
//! test, it starts that server, asks for a task, kills the server with SIGKILL while
//! the tool runs, starts a new server on the same store, and polls the task to its
//! result: the tool's effect lands once. A second task needs approval: it shows that
//! it waits, and goes on once the decision is recorded in the store by another
//! process (this one). A third asks its client for input (MCP 2026-07-28, over HTTP):
//! its question outlives a killed server, and the answer, given to yet another
//! process, reaches the process that drives it. And one client of that revision is
//! served by two server processes in turn, sharing only the request-state key.

#[path = "support/harness.rs"]
mod harness;
use harness::tokio;
#[path = "support/stateless.rs"]
mod stateless;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, ProtocolVersion, TaskStatus,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use tackle::durable::{Decision, DurableRun, RunStore};
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::tasks::TASK_RUN_PREFIX;
use tackle_mcp::{serve_stdio, McpServer, TaskOptions};
use tackle_sqlite::SqliteStore;

const SERVE: &str = "TACKLE_TASK_SERVE";
/// Set (to `<dir>`): this binary serves the bank over HTTP (its URL on the first line
/// of its output) with tasks in `<dir>/tasks.db`.
const SERVE_HTTP: &str = "TACKLE_TASK_SERVE_HTTP";
/// Set (to `<dir> <url>`): this binary imports the bank from `url` and deposits in a
/// durable run kept in `<dir>/importer.db`.
const IMPORT: &str = "TACKLE_TASK_IMPORT";

/// Where the bank keeps its files, when it serves in this process.
static BANK: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The directory of the server's store and ledger.
fn dir() -> PathBuf {
    BANK.get()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(std::env::var_os(SERVE).unwrap_or_default()))
}

fn append(file: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir().join(file))
        .expect("open");
    writeln!(f, "{line}").expect("write");
}

fn lines(dir: &Path, file: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Deposits an amount, slowly; a repeated request id is ignored by the bank.
#[tool(namespace = "bank", side_effects = write, idempotency_key = "request_id")]
async fn deposit(request_id: String, amount: i64) -> String {
    append("started.txt", &request_id);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let line = format!("deposit {request_id} {amount}");
    if !lines(&dir(), "ledger.txt").contains(&line) {
        append("ledger.txt", &line);
    }
    format!("deposited {amount}")
}

/// Withdraws an amount, once a person approves.
#[tool(namespace = "bank", side_effects = write, idempotency_key = "request_id", needs_approval = true)]
fn withdraw(request_id: String, amount: i64) -> String {
    append("ledger.txt", &format!("withdraw {request_id} {amount}"));
    format!("withdrew {amount}")
}

/// The key every serving process of this test seals its `requestState` with.
const STATE_KEY: &[u8] = b"the bank's request-state key, 32+ bytes long";

/// Closes an account once the user confirms it (a form asked of the client).
#[tool(namespace = "bank", side_effects = write, idempotency_key = "account")]
async fn close_account(account: String) -> Result<String, String> {
    append("asked.txt", &account);
    let client = tackle_mcp::client::Client::current().ok_or("not served over MCP")?;
    let form = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"],
    });
    let answer = client
        .elicit(&format!("Close {account}?"), form)
        .await
        .map_err(|e| e.to_string())?;
    match answer {
        tackle_mcp::client::Elicited::Accept(content) if content["confirm"] == true => {
            append("ledger.txt", &format!("close {account}"));
            Ok(format!("closed {account}"))
        }
        _ => Err(format!("{account} stays open")),
    }
}

/// The server side: serves the bank over stdio (or HTTP, `http`) with tasks in
/// `<dir>/tasks.db`.
fn serve(http: bool) -> ExitCode {
    tokio().block_on(async {
        let store: Arc<dyn RunStore> =
            Arc::new(SqliteStore::open(dir().join("tasks.db")).expect("store"));
        let runtime = Arc::new(Runtime::from_inventory().expect("runtime"));
        let ctx = ToolContext::new().with_grant("*");
        let server = McpServer::new(runtime, tackle_mcp::identity!(), ctx)
            .expect("server")
            // Every process of the test seals request states with one key.
            .with_request_state_key(STATE_KEY)
            .expect("key")
            .with_task_options(
                store,
                TaskOptions::default()
                    .with_lease(Duration::from_millis(800))
                    .with_poll_interval(Duration::from_millis(50)),
            );
        server.resume_tasks().expect("resume");
        if http {
            let http = tackle_mcp::serve_http(server.clone(), "127.0.0.1:0".parse().expect("addr"))
                .await
                .expect("serve");
            println!("{}", http.url());
            std::future::pending::<()>().await;
        }
        match serve_stdio(server).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// A client that declares the Tasks extension (or not).
#[derive(Clone)]
struct TaskClient {
    tasks: bool,
}

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.tasks {
            capabilities = ClientCapabilities::builder().enable_tasks().build();
        }
        ClientConfig::new(capabilities, Implementation::new("task-test", "1"))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// Starts a server on `dir`: its client, and its process id.
async fn start(dir: &Path, tasks: bool) -> (RunningService<RoleClient, TaskClient>, u32) {
    let mut command = tokio::process::Command::new(std::env::current_exe().expect("exe"));
    command.env(SERVE, dir);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn");
    let pid = transport.id().expect("pid");
    let client = tokio::time::timeout(
        Duration::from_secs(20),
        TaskClient { tasks }.serve(transport),
    )
    .await
    .expect("in time")
    .expect("connect");
    (client, pid)
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// Polls the task until `done` says so of its wire form, within 30 s.
async fn poll(
    client: &RunningService<RoleClient, TaskClient>,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = client
            .get_task(GetTaskParams::new(id.to_owned()))
            .await
            .expect("tasks/get");
        let wire = serde_json::to_value(&got).expect("wire");
        if done(&wire) {
            return wire;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got there: {wire}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn a_killed_server_finishes_its_task_once() {
    let dir = std::env::temp_dir().join(format!("tackle-mcp-tasks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    tokio().block_on(async {
        let (first, pid) = start(&dir, true).await;
        let tools = first.list_all_tools().await.expect("tools/list");
        let name = |part: &str| {
            tools
                .iter()
                .find(|t| t.name.contains(part))
                .map(|t| t.name.to_string())
                .expect("served")
        };
        let (deposit, withdraw) = (name("deposit"), name("withdraw"));
        let answer = first
            .call_tool_once(call(&deposit, json!({"request_id": "d1", "amount": 40})))
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = answer else {
            panic!("a client that declares tasks gets a task: {answer:?}")
        };
        let id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        // Killed while the tool runs (it started, and has not deposited yet).
        let deadline = Instant::now() + Duration::from_secs(20);
        while lines(&dir, "started.txt").is_empty() {
            assert!(Instant::now() < deadline, "the task never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        drop(first);
        assert!(
            lines(&dir, "ledger.txt").is_empty(),
            "killed before the deposit"
        );

        // A new server on the same store: the task goes on, and ends once.
        let (second, _) = start(&dir, true).await;
        let done = poll(&second, &id, |t| t["status"] == "completed").await;
        assert_eq!(done["taskId"], json!(id));
        assert_eq!(done["result"]["isError"], json!(false), "{done}");
        assert_eq!(
            done["result"]["structuredContent"]["result"],
            json!("deposited 40"),
            "{done}"
        );
        assert_eq!(lines(&dir, "ledger.txt"), ["deposit d1 40"]);
        assert_eq!(
            lines(&dir, "started.txt"),
            ["d1", "d1"],
            "run again once, after the kill"
        );
        // Polled again: the same result, from the store.
        let again = poll(&second, &id, |_| true).await;
        assert_eq!(again["result"], done["result"]);

        // A task that needs approval says so, and goes on once decided elsewhere.
        let answer = second
            .call_tool_once(call(&withdraw, json!({"request_id": "w1", "amount": 5})))
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = answer else {
            panic!("{answer:?}")
        };
        let wid = created.task.task_id.clone();
        let waiting = poll(&second, &wid, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("awaiting approval"))
        })
        .await;
        assert_eq!(waiting["status"], "working");
        assert!(
            lines(&dir, "ledger.txt").len() == 1,
            "nothing withdrawn before approval"
        );
        let store = SqliteStore::open(dir.join("tasks.db")).expect("store");
        let run_id = format!("{TASK_RUN_PREFIX}{wid}");
        let pending = DurableRun::pending_approvals(&store, &run_id).expect("pending");
        assert_eq!(pending.len(), 1);
        assert!(pending[0].key.starts_with("bank.withdraw@"));
        DurableRun::decide(&store, &run_id, &pending[0], Decision::Approve).expect("decide");
        let done = poll(&second, &wid, |t| t["status"] == "completed").await;
        assert_eq!(
            done["result"]["structuredContent"]["result"],
            json!("withdrew 5"),
            "{done}"
        );
        assert_eq!(
            lines(&dir, "ledger.txt"),
            ["deposit d1 40", "withdraw w1 5"]
        );

        // Unknown ids are unknown.
        let unknown = second
            .get_task(GetTaskParams::new("0123".to_owned()))
            .await
            .expect_err("unknown");
        assert!(unknown.to_string().contains("unknown task"), "{unknown}");
        second.cancel().await.ok();

        // A client that does not declare tasks is answered at once.
        let (plain, _) = start(&dir, false).await;
        let answer = plain
            .call_tool_once(call(&withdraw, json!({"request_id": "w2", "amount": 1})))
            .await
            .expect("tools/call");
        assert!(
            matches!(answer, CallToolResponse::Complete(_)),
            "{answer:?}"
        );
        plain.cancel().await.ok();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// The importer side: deposits through the imported bank in the durable run
/// `deposit-run` of `<dir>/importer.db`, resuming it if a killed process left it, and
/// writes the answer to `<dir>/answer.txt`.
fn import_and_deposit(dir: &Path, url: &str) -> ExitCode {
    use tackle::durable::{DurableError, DurableOptions};
    tokio().block_on(async {
        let mut registry = tackle::Registry::default();
        let import = tackle_mcp::import_http(
            &mut registry,
            url,
            tackle_mcp::ImportOptions::new("bank").with_requires(Vec::<String>::new()),
        )
        .await
        .expect("import");
        let key = import
            .keys()
            .into_iter()
            .find(|k| k.contains("deposit"))
            .expect("deposit imported");
        let runtime = Arc::new(Runtime::new(registry));
        let store: Arc<dyn RunStore> =
            Arc::new(SqliteStore::open(dir.join("importer.db")).expect("store"));
        let options = DurableOptions::new().with_lease(Duration::from_millis(800));
        let deadline = Instant::now() + Duration::from_secs(20);
        let durable = loop {
            match DurableRun::open_with(
                Arc::clone(&store),
                "deposit-run",
                "deposit",
                options.clone(),
            ) {
                Ok(durable) => break durable,
                // The killed process's lease has not lapsed yet.
                Err(DurableError::Held { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("open: {e}"),
            }
        };
        let run = durable.run(&runtime);
        let out = durable
            .hold(run.call(
                &key,
                json!({"request_id": "i1", "amount": 7}),
                &ToolContext::new(),
            ))
            .await;
        durable
            .finish(out.as_ref().map(|_| ()).map_err(ToString::to_string))
            .expect("finish");
        let answer = match out {
            Ok(value) => value.to_string(),
            Err(e) => format!("error: {e}"),
        };
        std::fs::write(dir.join("answer.txt"), answer).expect("answer");
        ExitCode::SUCCESS
    })
}

fn spawn_importer(dir: &Path, url: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().expect("exe"))
        .env(IMPORT, format!("{} {url}", dir.display()))
        .spawn()
        .expect("spawn the importer")
}

/// The importer dies while the server works on its task; the importer started again
/// goes on polling the same task: the remote work starts once.
fn a_killed_importer_polls_the_same_task() {
    let dir = std::env::temp_dir().join(format!("tackle-mcp-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    BANK.set(dir.clone()).expect("bank dir");
    tokio().block_on(async {
        let store: Arc<dyn RunStore> =
            Arc::new(SqliteStore::open(dir.join("tasks.db")).expect("store"));
        let runtime = Arc::new(Runtime::from_inventory().expect("runtime"));
        let server = McpServer::new(
            runtime,
            tackle_mcp::identity!(),
            ToolContext::new().with_grant("*"),
        )
        .expect("server")
        .with_task_options(
            store,
            TaskOptions::default().with_poll_interval(Duration::from_millis(50)),
        );
        let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("serve");
        let url = http.url();

        let mut first = spawn_importer(&dir, &url);
        // Killed once its journal holds the remote task's id (the server works on it).
        let journal = SqliteStore::open(dir.join("importer.db")).expect("journal");
        let deadline = Instant::now() + Duration::from_secs(20);
        let noted = |journal: &SqliteStore| {
            journal.journal("deposit-run").is_ok_and(|entries| {
                entries
                    .iter()
                    .any(|e| matches!(e, tackle::durable::JournalEntry::Progress { .. }))
            })
        };
        while !noted(&journal) {
            assert!(
                Instant::now() < deadline,
                "the importer never kept the task's id"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        first.kill().expect("SIGKILL");
        first.wait().expect("reaped");
        assert!(!dir.join("answer.txt").exists());
        assert!(
            lines(&dir, "ledger.txt").is_empty(),
            "killed before the deposit"
        );

        let second = spawn_importer(&dir, &url);
        let status = tokio::task::spawn_blocking(move || {
            let mut second = second;
            second.wait()
        })
        .await
        .expect("join")
        .expect("wait");
        assert!(status.success());
        assert_eq!(
            std::fs::read_to_string(dir.join("answer.txt")).expect("answer"),
            json!("deposited 7").to_string()
        );
        assert_eq!(
            lines(&dir, "started.txt"),
            ["i1"],
            "the remote work started once"
        );
        assert_eq!(lines(&dir, "ledger.txt"), ["deposit i1 7"]);
        let tasks = SqliteStore::open(dir.join("tasks.db")).expect("tasks");
        let made = tasks.runs().expect("runs");
        assert_eq!(made.len(), 1, "one task on the server: {made:?}");
        let kinds: Vec<&str> = journal
            .journal("deposit-run")
            .expect("journal")
            .iter()
            .map(|e| match e {
                tackle::durable::JournalEntry::Started { .. } => "started",
                tackle::durable::JournalEntry::Progress { .. } => "progress",
                tackle::durable::JournalEntry::Finished { .. } => "finished",
                tackle::durable::JournalEntry::Resolved { .. } => "resolved",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["started", "progress", "started", "progress", "finished"]
        );
        http.shutdown().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client of `url` with `token` that declares tasks.
async fn token_client(url: &str, token: &str) -> RunningService<RoleClient, TaskClient> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned()),
    );
    TaskClient { tasks: true }
        .serve(transport)
        .await
        .expect("connect")
}

/// A task is its maker's: another client, with the same grants, neither sees nor
/// cancels it; its maker cancels it while it waits for approval.
fn a_task_is_its_makers_and_cancels_while_waiting() {
    tokio().block_on(async {
        let store: Arc<dyn RunStore> = Arc::new(tackle::durable::MemoryStore::default());
        let runtime = Arc::new(Runtime::from_inventory().expect("runtime"));
        let server = McpServer::new(runtime, tackle_mcp::identity!(), ToolContext::new())
            .expect("server")
            .with_task_options(
                Arc::clone(&store),
                TaskOptions::default().with_poll_interval(Duration::from_millis(20)),
            );
        let options = tackle_mcp::HttpOptions::default()
            .with_token("token-a", &["*"])
            .with_token("token-b", &["*"]);
        let http =
            tackle_mcp::serve_http_with(server, "127.0.0.1:0".parse().expect("addr"), options)
                .await
                .expect("serve");
        let (a, b) = (
            token_client(&http.url(), "token-a").await,
            token_client(&http.url(), "token-b").await,
        );
        let tools = a.list_all_tools().await.expect("tools/list");
        let withdraw = tools
            .iter()
            .find(|t| t.name.contains("withdraw"))
            .map(|t| t.name.to_string())
            .expect("served");
        let answer = a
            .call_tool_once(call(&withdraw, json!({"request_id": "w9", "amount": 3})))
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = answer else {
            panic!("{answer:?}")
        };
        let id = created.task.task_id;
        poll(&a, &id, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("awaiting approval"))
        })
        .await;
        let unseen = b
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect_err("another client's task");
        assert!(unseen.to_string().contains("unknown task"), "{unseen}");
        let refused = b
            .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
            .await
            .expect_err("another client's task");
        assert!(refused.to_string().contains("unknown task"), "{refused}");
        a.cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
            .await
            .expect("its maker cancels it");
        let cancelled = poll(&a, &id, |t| t["status"] == "cancelled").await;
        assert_eq!(cancelled["taskId"], json!(id));
        // Nothing left waits for a decision.
        let run_id = format!("{TASK_RUN_PREFIX}{id}");
        assert!(DurableRun::pending_approvals(&*store, &run_id)
            .expect("record")
            .is_empty());
        a.cancel().await.ok();
        b.cancel().await.ok();
        http.shutdown().await;
    });
}

/// A serving process of this test, killed when dropped (also when the test fails).
struct Served(std::process::Child);

impl Served {
    /// Kills it with SIGKILL, as a crash would stop it.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts a server on `dir` over HTTP: the process, and its MCP URL.
fn spawn_http(dir: &Path) -> (Served, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env(SERVE_HTTP, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn");
    let mut url = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut url)
        .expect("its URL");
    (Served(child), url.trim().to_owned())
}

/// The name the server at `url` serves `bank.close_account` under.
async fn close_account_at(url: &str) -> String {
    let tools = stateless::post(url, "tools/list", json!({}), json!({})).await;
    tools["result"]["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .find_map(|t| t["name"].as_str().filter(|n| n.contains("close_account")))
        })
        .unwrap_or_else(|| panic!("served: {tools}"))
        .to_owned()
}

/// A task's question (MCP 2026-07-28) is kept in the store: the server is killed
/// while the task waits for the answer, a new server goes on with the task and asks
/// again, a third process takes the answer (`tasks/update`), and the task completes
/// in the second, its effect made once.
fn a_tasks_question_outlives_a_killed_server() {
    let dir = std::env::temp_dir().join(format!("tackle-mcp-asks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    tokio().block_on(async {
        let client = stateless::tasks_extension(json!({"elicitation": {}}));
        let within = Duration::from_secs(30);
        let (mut first, url) = spawn_http(&dir);
        let close = close_account_at(&url).await;
        let made = stateless::post(
            &url,
            "tools/call",
            json!({"name": close, "arguments": {"account": "acc-1"}}),
            client.clone(),
        )
        .await;
        let id = made["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {made}"))
            .to_owned();
        let asked = stateless::poll_task(&url, &id, &client, within, |t| {
            t["status"] == "input_required"
        })
        .await;
        let key = asked["inputRequests"]
            .as_object()
            .and_then(|r| r.keys().next().cloned())
            .expect("a question");
        first.kill();

        // A new server goes on with the task once the lease lapses, and asks again.
        let (second, url) = spawn_http(&dir);
        let (third, other) = spawn_http(&dir);
        let deadline = Instant::now() + within;
        while lines(&dir, "asked.txt").len() < 2 {
            assert!(Instant::now() < deadline, "the task never went on");
            let got =
                stateless::post(&url, "tasks/get", json!({"taskId": id}), client.clone()).await;
            assert_eq!(got["result"]["status"], "input_required", "{got}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            lines(&dir, "ledger.txt").is_empty(),
            "nothing before the answer"
        );
        let ack = stateless::post(
            &other,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {
                key: {"action": "accept", "content": {"confirm": true}}}}),
            client.clone(),
        )
        .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let done =
            stateless::poll_task(&url, &id, &client, within, |t| t["status"] == "completed").await;
        assert_eq!(done["result"]["isError"], false, "{done}");
        assert_eq!(lines(&dir, "ledger.txt"), ["close acc-1"]);
        assert_eq!(lines(&dir, "asked.txt"), ["acc-1", "acc-1"]);
        drop((second, third));
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// One client of the 2026-07-28 revision served by two server processes in turn,
/// sharing only the request-state key and the store: each call asks at one process
/// (an `InputRequiredResult`) and is retried with the answer at the other, and every
/// call completes, once.
fn two_processes_take_turns_serving_one_client() {
    let dir = std::env::temp_dir().join(format!("tackle-mcp-turns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    tokio().block_on(async {
        let forms = json!({"elicitation": {}});
        let (a, url_a) = spawn_http(&dir);
        let (b, url_b) = spawn_http(&dir);
        let close = close_account_at(&url_a).await;
        for turn in 0..4 {
            let (ask, retry) = if turn % 2 == 0 {
                (&url_a, &url_b)
            } else {
                (&url_b, &url_a)
            };
            let account = format!("turn-{turn}");
            let params = json!({"name": close, "arguments": {"account": account}});
            let asked = stateless::post(ask, "tools/call", params.clone(), forms.clone()).await;
            assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
            let key = asked["result"]["inputRequests"]
                .as_object()
                .and_then(|r| r.keys().next().cloned())
                .expect("a question");
            let mut params = params;
            params["requestState"] = asked["result"]["requestState"].clone();
            params["inputResponses"] =
                json!({key: {"action": "accept", "content": {"confirm": true}}});
            let done = stateless::post(retry, "tools/call", params, forms.clone()).await;
            assert_eq!(done["result"]["resultType"], "complete", "{done}");
            // Outputs are not wrapped for this revision.
            assert_eq!(
                done["result"]["structuredContent"],
                json!(format!("closed {account}")),
                "{done}"
            );
        }
        assert_eq!(
            lines(&dir, "ledger.txt"),
            [
                "close turn-0",
                "close turn-1",
                "close turn-2",
                "close turn-3"
            ]
        );
        drop((a, b));
    });
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() -> ExitCode {
    if let Some(dir) = std::env::var_os(SERVE_HTTP) {
        let _ = BANK.set(PathBuf::from(dir));
        return serve(true);
    }
    if std::env::var_os(SERVE).is_some() {
        return serve(false);
    }
    if let Some(spec) = std::env::var_os(IMPORT) {
        let spec = spec.to_string_lossy().into_owned();
        let (dir, url) = spec.rsplit_once(' ').expect("<dir> <url>");
        return import_and_deposit(Path::new(dir), url);
    }
    harness::run(&[
        (
            "a_killed_server_finishes_its_task_once_and_approvals_wait_in_the_store",
            a_killed_server_finishes_its_task_once,
        ),
        (
            "a_killed_importer_polls_the_same_task",
            a_killed_importer_polls_the_same_task,
        ),
        (
            "a_task_is_its_makers_and_cancels_while_waiting",
            a_task_is_its_makers_and_cancels_while_waiting,
        ),
        (
            "a_tasks_question_outlives_a_killed_server",
            a_tasks_question_outlives_a_killed_server,
        ),
        (
            "two_processes_take_turns_serving_one_client",
            two_processes_take_turns_serving_one_client,
        ),
    ])
}

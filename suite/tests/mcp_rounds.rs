//! Served calls asked by clients of MCP's 2026-07-28 revision: a tool that needs its
//! client (a form, an approval, the client's model) answers with an
//! `InputRequiredResult`, and the retry, with the answers and the sealed
//! `requestState`, completes on any instance that shares the key (SEP-2322).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::audit::MemoryAudit;
use tackle::{tool, Runtime, ToolContext};
use tackle_mcp::client::{Client, Elicited};
use tackle_mcp::prompts::{Prompt, PromptMessage, Prompts};
use tackle_mcp::{Identity, McpServer};

use crate::support::stateless::{poll_task, post, tasks_extension};

/// The key the instances of these tests share.
const KEY: &[u8] = b"a shared key of at least 32 bytes, for tests";

/// How many times `rounds.greet` ran to its end.
static GREETED: AtomicUsize = AtomicUsize::new(0);

/// Greets the user by the name they give.
#[tool(namespace = "rounds", side_effects = none)]
async fn greet(
    /// How to greet.
    salutation: String,
) -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let form = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    });
    let answer = client
        .elicit_as("user_name", "What is your name?", form)
        .await
        .map_err(|e| e.to_string())?;
    let Elicited::Accept(content) = answer else {
        return Err("no name".to_owned());
    };
    GREETED.fetch_add(1, Ordering::SeqCst);
    Ok(format!(
        "{salutation}, {}!",
        content["name"].as_str().unwrap_or("?")
    ))
}

/// How many times `rounds.transfer` ran.
static TRANSFERRED: AtomicUsize = AtomicUsize::new(0);

/// Moves money (every call needs approval).
#[tool(namespace = "rounds", side_effects = external, needs_approval)]
fn transfer(amount: u32) -> String {
    TRANSFERRED.fetch_add(1, Ordering::SeqCst);
    format!("moved {amount}")
}

/// Asks the client's model.
#[tool(namespace = "rounds", side_effects = none)]
async fn muse() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Muse."}}],
        "maxTokens": 10,
    });
    let answer = client.sample(params).await.map_err(|e| e.to_string())?;
    Ok(answer["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// A prompt that asks the user what to brief on before it renders.
fn briefing() -> Prompt {
    Prompt::asking(
        "briefing",
        "A briefing on a topic the user names",
        |arguments| async move {
            let client = Client::current().ok_or("not served over MCP")?;
            let form = json!({
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "required": ["topic"],
            });
            let answer = client
                .elicit_as("topic", "Brief on what?", form)
                .await
                .map_err(|e| e.to_string())?;
            let Elicited::Accept(content) = answer else {
                return Err("no topic".to_owned());
            };
            Ok(vec![PromptMessage::user(format!(
                "Brief {} on {}.",
                arguments.get("audience").cloned().unwrap_or_default(),
                content["topic"].as_str().unwrap_or("?")
            ))])
        },
    )
    .with_argument("audience", "Who the briefing is for", true)
}

/// A server instance over this file's tools, sealing with `key`, on a port of its
/// own.
async fn instance(key: &[u8], audit: Option<Arc<MemoryAudit>>) -> tackle_mcp::HttpServer {
    let mut runtime = Runtime::from_inventory_in(module_path!()).unwrap();
    if let Some(audit) = audit {
        runtime = runtime.with_audit(audit);
    }
    let server = McpServer::new(
        Arc::new(runtime),
        Identity::new("rounds", "1"),
        ToolContext::new(),
    )
    .unwrap()
    .with_bare_names()
    .unwrap()
    .with_client_approval()
    .with_request_state_key(key)
    .unwrap()
    .with_prompts(Prompts::new().with(briefing()).unwrap());
    tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

fn forms() -> Value {
    json!({"elicitation": {}})
}

async fn call(url: &str, name: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    post(url, "tools/call", params, forms()).await
}

/// A call asked at one instance completes at another that shares the key; an
/// instance with another key refuses the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_asks_at_one_instance_and_completes_at_another() {
    let (a, b) = (instance(KEY, None).await, instance(KEY, None).await);
    let other = instance(b"another key, also 32 bytes or longer", None).await;
    let before = GREETED.load(Ordering::SeqCst);
    let first = call(&a.url(), "greet", json!({"salutation": "Hello"}), json!({})).await;
    let asked = &first["result"];
    assert_eq!(asked["resultType"], "input_required", "{first}");
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{first}"
    );
    let state = asked["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let answers = json!({
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        "requestState": state,
    });
    let done = call(
        &b.url(),
        "greet",
        json!({"salutation": "Hello"}),
        answers.clone(),
    )
    .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
    assert_eq!(GREETED.load(Ordering::SeqCst), before + 1);
    let refused = call(
        &other.url(),
        "greet",
        json!({"salutation": "Hello"}),
        answers,
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(GREETED.load(Ordering::SeqCst), before + 1, "nothing ran");
}

/// A state altered by one character, or moved to the same tool with other arguments,
/// is refused before the tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_or_moved_state_is_refused() {
    let server = instance(KEY, None).await;
    let url = server.url();
    let first = call(&url, "greet", json!({"salutation": "Hi"}), json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Mallory"}}});
    let before = GREETED.load(Ordering::SeqCst);
    let mut altered = state.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (arguments, state) in [
        (json!({"salutation": "Hi"}), altered),
        (json!({"salutation": "Bye"}), state),
    ] {
        let extra = json!({"inputResponses": answer, "requestState": state});
        let refused = call(&url, "greet", arguments, extra).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("requestState")),
            "{refused}"
        );
    }
    assert_eq!(GREETED.load(Ordering::SeqCst), before, "the tool never ran");
}

/// A call that needs approval asks for it in the answer, with the approval form; the
/// retry with `{"approve": true}` runs it once, `{"approve": false}` ends it denied,
/// an approval sent without the server's state is not taken (the form is asked
/// again), and one sent with an altered state is refused. Every round is in the
/// audit, with the door's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_asked_in_a_round_and_taken_only_from_its_form() {
    let audit = Arc::new(MemoryAudit::new());
    let server = instance(KEY, Some(audit.clone())).await;
    let url = server.url();
    let before = TRANSFERRED.load(Ordering::SeqCst);
    let first = call(&url, "transfer", json!({"amount": 30}), json!({})).await;
    let asked = &first["result"];
    assert_eq!(asked["resultType"], "input_required", "{first}");
    let form = &asked["inputRequests"]["approval-1"];
    assert_eq!(form["method"], "elicitation/create", "{first}");
    assert_eq!(
        form["params"]["requestedSchema"]["required"],
        json!(["approve"]),
        "{first}"
    );
    assert!(
        form["params"]["message"]
            .as_str()
            .unwrap()
            .contains("\"amount\": 30"),
        "{first}"
    );
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let yes = json!({"approval-1": {"action": "accept", "content": {"approve": true}}});
    // Without the state the server gave, a yes is no answer: the form again.
    let unbound = call(
        &url,
        "transfer",
        json!({"amount": 30}),
        json!({"inputResponses": yes}),
    )
    .await;
    assert_eq!(
        unbound["result"]["resultType"], "input_required",
        "{unbound}"
    );
    assert_eq!(TRANSFERRED.load(Ordering::SeqCst), before);
    let no = json!({"approval-1": {"action": "accept", "content": {"approve": false}}});
    let denied = call(
        &url,
        "transfer",
        json!({"amount": 30}),
        json!({"inputResponses": no, "requestState": state}),
    )
    .await;
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(
        denied["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("did not approve")),
        "{denied}"
    );
    assert_eq!(TRANSFERRED.load(Ordering::SeqCst), before);
    // A yes with an altered state: refused by the door, before anything runs.
    let mut altered = state.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let tampered = call(
        &url,
        "transfer",
        json!({"amount": 30}),
        json!({"inputResponses": yes, "requestState": String::from_utf8(altered).unwrap()}),
    )
    .await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");
    assert_eq!(TRANSFERRED.load(Ordering::SeqCst), before);
    let done = call(
        &url,
        "transfer",
        json!({"amount": 30}),
        json!({"inputResponses": yes, "requestState": state}),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "moved 30", "{done}");
    assert_eq!(TRANSFERRED.load(Ordering::SeqCst), before + 1);
    let events = audit.events();
    let transfers: Vec<_> = events
        .iter()
        .filter(|e| e.key.starts_with("rounds.transfer"))
        .collect();
    assert_eq!(transfers.len(), 5, "one audit event a round: {transfers:?}");
    let kinds: Vec<Option<tackle::ToolErrorKind>> = transfers
        .iter()
        .map(|e| e.error.as_ref().map(|e| e.kind))
        .collect();
    use tackle::ToolErrorKind::{ApprovalDenied, InvalidInput};
    assert_eq!(
        kinds,
        [
            Some(ApprovalDenied), // asked: not approved yet
            Some(ApprovalDenied), // a yes without the state: asked again
            Some(ApprovalDenied), // no
            Some(InvalidInput),   // a tampered state
            None,                 // yes: it ran
        ],
        "{transfers:?}"
    );
    assert!(
        matches!(&transfers[3].gates.input, tackle::audit::GateDecision::Refused(why) if why.contains("requestState")),
        "{:?}",
        transfers[3]
    );
    assert_eq!(transfers[3].execution, tackle::audit::Execution::NotRun);
}

/// A call that needs a capability the client did not declare ends with MCP's
/// "missing required client capability" (-32021), naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_needing_an_undeclared_capability_is_refused_naming_it() {
    let server = instance(KEY, None).await;
    let refused = post(
        &server.url(),
        "tools/call",
        json!({"name": "muse", "arguments": {}}),
        json!({}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{refused}"
    );
    let sampling = post(
        &server.url(),
        "tools/call",
        json!({"name": "muse", "arguments": {}}),
        json!({"sampling": {}}),
    )
    .await;
    assert_eq!(
        sampling["result"]["inputRequests"]["sampling-1"]["method"], "sampling/createMessage",
        "{sampling}"
    );
}

/// A prompt made with `Prompt::asking` asks in rounds too: `prompts/get` answers with
/// the form, and the retry with the answer and the state renders it; the state is
/// bound to the prompt's arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_asks_renders_in_rounds() {
    let server = instance(KEY, None).await;
    let url = server.url();
    let get = |extra: Value, audience: &str| {
        let mut params = json!({"name": "briefing", "arguments": {"audience": audience}});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        let url = url.clone();
        async move { post(&url, "prompts/get", params, forms()).await }
    };
    let first = get(json!({}), "the board").await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(
        first["result"]["inputRequests"]["topic"]["method"], "elicitation/create",
        "{first}"
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({
        "inputResponses": {"topic": {"action": "accept", "content": {"topic": "rates"}}},
        "requestState": state,
    });
    let moved = get(answer.clone(), "the press").await;
    assert_eq!(moved["error"]["code"], -32602, "{moved}");
    let done = get(answer, "the board").await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], "Brief the board on rates.",
        "{done}"
    );
}

/// Adds two numbers.
#[tool(namespace = "rounds", side_effects = none)]
fn tally(a: i64, b: i64) -> i64 {
    a + b
}

/// Doubles a number.
#[tool(namespace = "rounds", side_effects = none)]
fn double(n: i64) -> i64 {
    n * 2
}

/// This module's tools, served by their bare names, with tasks kept in memory.
fn task_server() -> McpServer {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    McpServer::new(runtime, Identity::new("tasks", "1"), ToolContext::new())
        .unwrap()
        .with_bare_names()
        .unwrap()
        .with_tasks(Arc::new(tackle::durable::MemoryStore::default()))
}

/// [`task_server`] with each tool's task support as `supports` says, over HTTP.
async fn serve_tasks(supports: &[(&str, tackle_mcp::TaskSupport)]) -> tackle_mcp::HttpServer {
    let mut server = task_server();
    for (tool, support) in supports {
        server = server.with_task_support(tool, *support).unwrap();
    }
    tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// Each tool's task support: optional by default (a task for a client that declares
/// the extension), forbidden (answered at once), required (a client without the
/// extension is refused with -32021 naming it); a tool the server does not serve is
/// refused when set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_task_support_decides_whether_its_call_is_a_task() {
    use tackle_mcp::TaskSupport;
    let server = task_server();
    let unknown = server
        .clone()
        .with_task_support("nothing", TaskSupport::Required);
    assert!(
        matches!(&unknown, Err(tackle_mcp::McpError::Config(why)) if why.contains("`nothing`")),
        "{unknown:?}"
    );
    let http = serve_tasks(&[
        ("double", TaskSupport::Forbidden),
        ("rounds.tally@1", TaskSupport::Required),
    ])
    .await;
    let url = http.url();
    let tasks = tasks_extension(json!({}));
    let as_task = post(
        &url,
        "tools/call",
        json!({"name": "tally", "arguments": {"a": 2, "b": 3}}),
        tasks.clone(),
    )
    .await;
    assert_eq!(as_task["result"]["resultType"], "task", "{as_task}");
    let at_once = post(
        &url,
        "tools/call",
        json!({"name": "double", "arguments": {"n": 4}}),
        tasks,
    )
    .await;
    assert_eq!(at_once["result"]["resultType"], "complete", "{at_once}");
    assert_eq!(at_once["result"]["structuredContent"], 8, "{at_once}");
    let refused = post(
        &url,
        "tools/call",
        json!({"name": "tally", "arguments": {"a": 2, "b": 3}}),
        json!({}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "{refused}"
    );
}

/// Fails as a tool fails: an error of its own.
#[tool(namespace = "rounds", side_effects = none)]
fn refuses() -> Result<String, String> {
    Err("not today".to_owned())
}

/// Panics: a fault of the server's, not an answer.
#[tool(namespace = "rounds", side_effects = none)]
fn breaks() -> Result<String, String> {
    panic!("the server broke")
}

/// Polls the task `id` at `url` until it ends; its `tasks/get` result.
async fn ended(url: &str, id: &str) -> Value {
    let tasks = tasks_extension(json!({}));
    poll_task(url, id, &tasks, std::time::Duration::from_secs(10), |t| {
        !["working", "input_required", ""].contains(&t["status"].as_str().unwrap_or_default())
    })
    .await
}

/// A task whose tool returns an error completes with an `isError` result, as a plain
/// call would answer; one whose tool panics is `failed`, with JSON-RPC's internal
/// error inlined and no result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_error_completes_its_task_and_a_panic_fails_it() {
    use tackle_mcp::TaskSupport;
    let http = serve_tasks(&[
        ("refuses", TaskSupport::Required),
        ("breaks", TaskSupport::Required),
    ])
    .await;
    let url = http.url();
    let tasks = tasks_extension(json!({}));
    let mut seen = Vec::new();
    for tool in ["refuses", "breaks"] {
        let made = post(&url, "tools/call", json!({"name": tool}), tasks.clone()).await;
        assert_eq!(made["result"]["resultType"], "task", "{made}");
        let id = made["result"]["taskId"].as_str().unwrap().to_owned();
        seen.push(ended(&url, &id).await);
    }
    let [refused, broken] = &seen[..] else {
        unreachable!()
    };
    assert_eq!(refused["status"], "completed", "{refused}");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("not today")));
    assert_eq!(broken["status"], "failed", "{broken}");
    assert_eq!(broken["error"]["code"], -32603, "{broken}");
    assert!(
        broken["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the server broke") && !m.starts_with("the tool panicked")),
        "{broken}"
    );
    assert!(broken.get("result").is_none(), "{broken}");
    http.shutdown().await;
}

/// Asks two questions at once, then says both answers.
#[tool(namespace = "rounds", side_effects = none)]
async fn pair() -> Result<String, String> {
    let client = Client::current().ok_or("not served over MCP")?;
    let form = json!({"type": "object", "properties": {"pick": {"type": "string"}}});
    let (first, second) = tokio::join!(
        client.elicit_as("first", "First pick?", form.clone()),
        client.elicit_as("second", "Second pick?", form),
    );
    let pick = |answer: Result<Elicited, tackle_mcp::client::ClientError>| match answer {
        Ok(Elicited::Accept(content)) => Ok(content["pick"].as_str().unwrap_or("?").to_owned()),
        Ok(other) => Err(format!("{other:?}")),
        Err(error) => Err(error.to_string()),
    };
    Ok(format!("{} then {}", pick(first)?, pick(second)?))
}

/// A task server over `store`, serving `greet` with its first questions asked in the
/// request (within 10 s).
async fn serve_asking_tasks(store: Arc<dyn tackle::durable::RunStore>) -> tackle_mcp::HttpServer {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(runtime, Identity::new("tasks", "1"), ToolContext::new())
        .unwrap()
        .with_bare_names()
        .unwrap()
        .with_task_options(
            store,
            tackle_mcp::TaskOptions::default()
                .with_poll_interval(std::time::Duration::from_millis(20)),
        )
        .with_questions_first("greet", std::time::Duration::from_secs(10))
        .unwrap();
    tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// A task's call that asks its client waits as `input_required` with its questions;
/// the client answers one (`tasks/update`, acknowledged with an empty result), the
/// task still waits on the other only, then the last answer (beside a key the task
/// never asked, ignored) lets it complete. The questions are kept in the run store.
/// A client that declared no forms gets the tool's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_for_its_clients_answers_one_at_a_time() {
    let store: Arc<dyn tackle::durable::RunStore> =
        Arc::new(tackle::durable::MemoryStore::default());
    let http = serve_asking_tasks(Arc::clone(&store)).await;
    let url = http.url();
    let client = tasks_extension(forms());
    let made = post(&url, "tools/call", json!({"name": "pair"}), client.clone()).await;
    assert_eq!(made["result"]["resultType"], "task", "{made}");
    let id = made["result"]["taskId"].as_str().unwrap().to_owned();
    let within = std::time::Duration::from_secs(10);
    let waiting = poll_task(&url, &id, &client, within, |t| {
        t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
    })
    .await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["first"]["method"], "elicitation/create",
        "{waiting}"
    );
    assert!(
        store
            .load(&format!("mcp-input-{id}"))
            .unwrap()
            .is_some_and(|r| r.task.contains("First pick?")),
        "the questions are in the store"
    );
    let answer = |pick: &str| json!({"action": "accept", "content": {"pick": pick}});
    let ack = post(
        &url,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"first": answer("tea")}}),
        client.clone(),
    )
    .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let still = post(&url, "tasks/get", json!({"taskId": id}), client.clone()).await;
    assert_eq!(still["result"]["status"], "input_required", "{still}");
    let keys: Vec<&String> = still["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["second"], "{still}");
    let last = post(
        &url,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {
            "second": answer("cake"), "never-asked": {"action": "accept", "content": {}}}}),
        client.clone(),
    )
    .await;
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    let done = poll_task(&url, &id, &client, within, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "tea then cake",
        "{done}"
    );

    // A client without forms: the tool's own error, in a completed task.
    let formless = tasks_extension(json!({}));
    let made = post(
        &url,
        "tools/call",
        json!({"name": "pair"}),
        formless.clone(),
    )
    .await;
    let id = made["result"]["taskId"].as_str().unwrap().to_owned();
    let done = poll_task(&url, &id, &formless, within, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("does not offer elicitation")),
        "{done}"
    );
    http.shutdown().await;
}

/// A tool served with `with_questions_first` asks in the request: the first answer is
/// an `InputRequiredResult` with no task, the retry with the answer makes the task,
/// whose result has the answer. The first call's own run ends, superseded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_first_questions_come_before_its_task() {
    let store: Arc<dyn tackle::durable::RunStore> =
        Arc::new(tackle::durable::MemoryStore::default());
    let http = serve_asking_tasks(Arc::clone(&store)).await;
    let url = http.url();
    let client = tasks_extension(forms());
    let arguments = json!({"salutation": "Welcome"});
    let first = post(
        &url,
        "tools/call",
        json!({"name": "greet", "arguments": arguments}),
        client.clone(),
    )
    .await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(first["result"].get("taskId").is_none(), "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = post(
        &url,
        "tools/call",
        json!({"name": "greet", "arguments": arguments, "requestState": state,
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}),
        client.clone(),
    )
    .await;
    assert_eq!(retry["result"]["resultType"], "task", "{retry}");
    assert!(retry["result"].get("requestState").is_none(), "{retry}");
    let id = retry["result"]["taskId"].as_str().unwrap().to_owned();
    let done = poll_task(
        &url,
        &id,
        &client,
        std::time::Duration::from_secs(10),
        |t| t["status"] == "completed",
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Welcome, Ada!",
        "{done}"
    );
    // Two runs: the task's, done; the first call's, superseded by the retry.
    let statuses: Vec<String> = store
        .runs()
        .unwrap()
        .iter()
        .filter(|run| run.starts_with(tackle_mcp::tasks::TASK_RUN_PREFIX))
        .map(|run| format!("{:?}", store.load(run).unwrap().unwrap().status))
        .collect();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert!(statuses.iter().any(|s| s == "Done"), "{statuses:?}");
    assert!(
        statuses.iter().any(|s| s.contains("superseded")),
        "{statuses:?}"
    );
    http.shutdown().await;
}

/// Asks the client's model through the door (the operation
/// `llm.mcp-client.complete@sampling`), on the runtime its context holds.
#[tool(namespace = "rounds", side_effects = none)]
async fn ponder(ctx: &ToolContext) -> Result<String, String> {
    use tackle::agent::model::{complete, completion, ChatRequest, Message};
    let runtime = ctx.resource::<Arc<Runtime>>().map_err(|e| e.to_string())?;
    let model = Client::current().ok_or("not served over MCP")?.model();
    let request = ChatRequest {
        messages: vec![Message::user("Ponder.")],
        ..ChatRequest::default()
    };
    let run = tackle::Run::new(&runtime);
    let reply = complete(&run, &completion(&model), &model, &request, ctx)
        .await
        .map_err(|e| e.to_string())?;
    Ok(reply.text)
}

/// A model call a tool makes of the client (sampling, through the door) asks in a
/// round as a form does: the first request answers with the sampling request, the
/// retry with the client's completion completes, and each round's model call is in
/// the audit with the door's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_call_of_the_client_asks_in_rounds_through_the_door() {
    let audit = Arc::new(MemoryAudit::new());
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_audit(audit.clone()),
    );
    let ctx = ToolContext::new()
        .with_grant("llm:mcp-client")
        .with_resource(Arc::clone(&runtime));
    let server = McpServer::new(runtime, Identity::new("rounds", "1"), ctx)
        .unwrap()
        .with_bare_names()
        .unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    let sampling = json!({"sampling": {}});
    let first = post(
        &url,
        "tools/call",
        json!({"name": "ponder", "arguments": {}}),
        sampling.clone(),
    )
    .await;
    let asked = &first["result"]["inputRequests"]["sampling-1"];
    assert_eq!(asked["method"], "sampling/createMessage", "{first}");
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"], "Ponder.",
        "{first}"
    );
    let answer = json!({"role": "assistant", "model": "client-model", "stopReason": "endTurn",
        "content": {"type": "text", "text": "Deep thoughts."}});
    let done = post(
        &url,
        "tools/call",
        json!({"name": "ponder", "arguments": {},
            "requestState": first["result"]["requestState"],
            "inputResponses": {"sampling-1": answer}}),
        sampling,
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Deep thoughts.",
        "{done}"
    );
    let completions: Vec<_> = audit
        .events()
        .into_iter()
        .filter(|e| e.key == "llm.mcp-client.complete@sampling")
        .collect();
    assert_eq!(completions.len(), 2, "one a round: {completions:?}");
    assert!(completions[0].error.is_some(), "the first round asked");
    assert!(completions[1].error.is_none(), "the second was answered");
    http.shutdown().await;
}

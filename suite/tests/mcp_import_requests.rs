//! A server's requests to an import, tackle to tackle:
//!
//! * `elicitation/create`: a served tool asks the person at the client through
//!   `Client::elicit`; the import answers with its handler, and the schema's defaults
//!   fill what the answer leaves out (SEP-1034). The official suite's
//!   `elicitation-sep1034-client-defaults` scenario checks the same against its own
//!   server (`scripts/mcp-conformance --client`);
//! * `sampling/createMessage`: a served tool asks the client's model through
//!   `Client::model`; the import answers with the model it was given;
//! * both through the door of the run given to `ImportOptions::with_door`: gated by
//!   its context's grants, audited, recorded into its cassette and replayed from it;
//! * a remote task that waits for input (`input_required`, on rmcp's own task
//!   manager): the import answers it with its handler and `tasks/update`.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tackle::agent::model::{ChatModel, ChatRequest, ChatResponse, ModelFuture, Role};
use tackle::audit::MemoryAudit;
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Cassette, Registry, Run, Runtime, ToolContext};
use tackle_mcp::client::{Client, Elicited};
use tackle_mcp::{import_http, Elicitation, Identity, ImportOptions, Lifecycle, McpServer};

/// Books seats, asking the person how many and for whom.
#[tool(namespace = "desk", side_effects = none)]
async fn book() -> String {
    let Some(client) = Client::current() else {
        return "no client".to_owned();
    };
    let form = json!({
        "type": "object",
        "properties": {
            "seats": {"type": "integer", "default": 2},
            "name": {"type": "string", "default": "Ada"},
        },
    });
    match client.elicit("How many seats?", form).await {
        Ok(Elicited::Accept(content)) => format!("accepted {content}"),
        Ok(Elicited::Decline) => "declined".to_owned(),
        Ok(Elicited::Cancel) => "cancelled".to_owned(),
        Err(e) => format!("not asked: {e}"),
    }
}

/// Writes a haiku, with the client's model.
#[tool(namespace = "desk", side_effects = none)]
async fn haiku() -> String {
    let Some(client) = Client::current() else {
        return "no client".to_owned();
    };
    let request = ChatRequest {
        messages: vec![
            tackle::agent::model::Message::system("You write haiku."),
            tackle::agent::model::Message::user("About rain."),
        ],
        ..ChatRequest::default()
    };
    match client.model().complete(&request).await {
        Ok(answer) => answer.text,
        Err(e) => format!("not asked: {e}"),
    }
}

/// A model that says what it was asked.
struct Echo;

impl ChatModel for Echo {
    fn provider(&self) -> &str {
        "echo"
    }

    fn model(&self) -> &str {
        "echo-1"
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        let said: Vec<String> = request
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::System => "system",
                    Role::Assistant => "assistant",
                    _ => "user",
                };
                format!("{role}: {}", m.content)
            })
            .collect();
        Box::pin(async move { Ok(ChatResponse::text(said.join(" | "))) })
    }
}

/// The desk's tools served over streamable HTTP on loopback, and their URL.
async fn desk() -> (tackle_mcp::HttpServer, String) {
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let server = McpServer::new(runtime, Identity::new("desk", "1"), ToolContext::new()).unwrap();
    let http = tackle_mcp::serve_http(server, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    (http, url)
}

/// Imports the desk from `url` with `options` and calls `tool` once; what it said.
async fn call_through(url: &str, options: ImportOptions, tool: &str) -> Value {
    let mut registry = Registry::new();
    let import = import_http(&mut registry, url, options).await.unwrap();
    let runtime = Runtime::new(registry);
    let said = runtime
        .call(tool, json!({}), &ToolContext::new().with_grant("mcp:desk"))
        .await
        .unwrap();
    import.close().await;
    // A 2025-11-25 server sends a string output wrapped, `{"result": ..}`; 2026-07-28
    // sends it as itself.
    match said.get("result") {
        Some(inner) => inner.clone(),
        None => said,
    }
}

/// Imports the desk and books once; what the tool said.
async fn book_through(url: &str, options: ImportOptions) -> Value {
    call_through(url, options, "mcp.desk.desk_book").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_is_answered_by_the_imports_handler_with_defaults() {
    let (http, url) = desk().await;
    // Asked by the server itself (2025-11-25), or returned as a question the call
    // answers and makes again (2026-07-28): the same answers either way.
    for lifecycle in [Lifecycle::Initialize, Lifecycle::Negotiate] {
        // The handler sees the question, the form and the call it comes from; what it
        // leaves out is filled from the form's defaults.
        let asked: Arc<Mutex<Vec<Elicitation>>> = Arc::default();
        let seen = Arc::clone(&asked);
        let options = ImportOptions::new("desk")
            .with_lifecycle(lifecycle)
            .with_elicitation(move |question| {
                seen.lock().unwrap().push(question);
                async { Elicited::Accept(json!({"seats": 4})) }
            });
        assert_eq!(
            book_through(&url, options).await,
            json!(r#"accepted {"seats":4,"name":"Ada"}"#)
        );
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].server, "desk");
        assert_eq!(asked[0].message, "How many seats?");
        assert_eq!(asked[0].tools.len(), 1);
        assert!(
            asked[0].tools[0].starts_with("mcp.desk.desk_book@"),
            "{:?}",
            asked[0].tools
        );
        assert_eq!(asked[0].schema["properties"]["seats"]["default"], json!(2));

        // An accepted answer that is not a form's object is declined, not sent as if the
        // person had chosen it.
        let odd = ImportOptions::new("desk")
            .with_lifecycle(lifecycle)
            .with_elicitation(|_| async { Elicited::Accept(json!("yes")) });
        assert_eq!(book_through(&url, odd).await, json!("declined"));
        let cancelled = ImportOptions::new("desk")
            .with_lifecycle(lifecycle)
            .with_elicitation(|_| async { Elicited::Cancel });
        assert_eq!(book_through(&url, cancelled).await, json!("cancelled"));

        // Without a handler the import does not offer elicitation: the server cannot ask.
        let silent = book_through(&url, ImportOptions::new("desk").with_lifecycle(lifecycle)).await;
        assert!(
            silent
                .as_str()
                .is_some_and(|s| s.starts_with("not asked") && s.contains("elicitation")),
            "{silent}"
        );
    }
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_sampling_is_a_model_call_through_the_imports_door() {
    let (http, url) = desk().await;
    let audit = Arc::new(MemoryAudit::new());
    let door = Arc::new(Runtime::new(Registry::new()).with_audit(Arc::clone(&audit)));

    // Granted: the completion runs, and the audit trail has it.
    let options = ImportOptions::new("desk")
        .with_sampling(Arc::new(Echo))
        .with_door(Run::new(&door), ToolContext::new().with_grant("llm:echo"));
    assert_eq!(
        call_through(&url, options, "mcp.desk.desk_haiku").await,
        json!("system: You write haiku. | user: About rain.")
    );
    let events = audit.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].key, "llm.echo.complete@echo-1");

    // Not granted: the door refuses the model call, and a 2025-11-25 server is told.
    let legacy = || ImportOptions::new("desk").with_lifecycle(Lifecycle::Initialize);
    let options = legacy()
        .with_sampling(Arc::new(Echo))
        .with_door(Run::new(&door), ToolContext::new());
    let refused = call_through(&url, options, "mcp.desk.desk_haiku").await;
    assert!(
        refused
            .as_str()
            .is_some_and(|s| s.starts_with("not asked") && s.contains("llm:echo")),
        "{refused}"
    );
    assert_eq!(audit.events().len(), 2, "the refusal is audited too");
    // At 2026-07-28 an answer can only be a result: the call ends with the refusal.
    let options = ImportOptions::new("desk")
        .with_sampling(Arc::new(Echo))
        .with_door(Run::new(&door), ToolContext::new());
    let mut registry = Registry::new();
    let import = import_http(&mut registry, &url, options).await.unwrap();
    let ended = Runtime::new(registry)
        .call(
            "mcp.desk.desk_haiku",
            json!({}),
            &ToolContext::new().with_grant("mcp:desk"),
        )
        .await
        .unwrap_err();
    import.close().await;
    assert_eq!(ended.kind(), tackle::ToolErrorKind::Execution, "{ended}");
    assert!(
        ended.to_string().contains("could not give") && ended.to_string().contains("llm:echo"),
        "{ended}"
    );
    assert_eq!(audit.events().len(), 3, "that refusal is audited too");

    // No door: sampling is refused (a model call outside the door is not made).
    let options = legacy().with_sampling(Arc::new(Echo));
    let doorless = call_through(&url, options, "mcp.desk.desk_haiku").await;
    assert!(
        doorless.as_str().is_some_and(|s| s.contains("with_door")),
        "{doorless}"
    );
    // Without a model the import does not offer sampling: the server cannot ask.
    let silent = call_through(&url, ImportOptions::new("desk"), "mcp.desk.desk_haiku").await;
    assert!(
        silent
            .as_str()
            .is_some_and(|s| s.starts_with("not asked") && s.contains("sampling")),
        "{silent}"
    );
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_through_the_door_is_recorded_and_replayed() {
    let (http, url) = desk().await;
    let door = Arc::new(Runtime::new(Registry::new()));
    let dir = std::env::temp_dir().join(format!("tackle-import-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("questions.json");
    let ctx = ToolContext::new().with_grant("mcp:desk");
    let open = |mode| {
        Cassette::open(
            &path,
            CassetteConfig::new()
                .with_mode(mode)
                .with_env_overrides(false),
        )
        .unwrap()
    };

    // Recorded: the person answers 4 seats.
    let recording = Run::new(&door).with_cassette(open(Mode::Rewrite));
    let options = ImportOptions::new("desk")
        .with_elicitation(|_| async { Elicited::Accept(json!({"seats": 4})) })
        .with_door(recording.clone(), ctx.clone());
    assert_eq!(
        book_through(&url, options).await,
        json!(r#"accepted {"seats":4,"name":"Ada"}"#)
    );
    recording.finish().unwrap();
    let cassette = std::fs::read_to_string(&path).unwrap();
    assert!(cassette.contains("mcp.desk.elicit@1"), "{cassette}");

    // Replayed: the answer comes from the cassette; the person is not asked.
    let replaying = Run::new(&door).with_cassette(open(Mode::Replay));
    let asked = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&asked);
    let options = ImportOptions::new("desk")
        .with_elicitation(move |_| {
            *counter.lock().unwrap() += 1;
            async { Elicited::Accept(json!({"seats": 9})) }
        })
        .with_door(replaying.clone(), ctx.clone());
    assert_eq!(
        book_through(&url, options).await,
        json!(r#"accepted {"seats":4,"name":"Ada"}"#)
    );
    assert_eq!(*asked.lock().unwrap(), 0, "the person was not asked again");

    // Not granted: the question is not asked, and the server sees it cancelled.
    let options = ImportOptions::new("desk")
        .with_elicitation(|_| async { Elicited::Accept(json!({"seats": 1})) })
        .with_door(Run::new(&door), ToolContext::new());
    assert_eq!(book_through(&url, options).await, json!("cancelled"));
    http.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Approves a question when `yes`, and keeps what it was shown.
struct Person {
    yes: bool,
    shown: Mutex<Vec<(String, Value)>>,
}

impl tackle::approval::Approver for Person {
    fn review<'a>(
        &'a self,
        request: &'a tackle::approval::ApprovalRequest,
    ) -> tackle::approval::ApprovalFuture<'a> {
        self.shown
            .lock()
            .unwrap()
            .push((request.key.clone(), request.input.clone()));
        let decision = if self.yes {
            request.approve()
        } else {
            request.deny("not now")
        };
        Box::pin(async move { decision })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_the_runs_approver_answers_the_servers_question() {
    let (http, url) = desk().await;
    let door = Arc::new(Runtime::new(Registry::new()));
    let ctx = ToolContext::new().with_grant("mcp:desk");
    for (yes, said) in [
        (true, json!(r#"accepted {"seats":2,"name":"Ada"}"#)),
        (false, json!("declined")),
    ] {
        let person = Arc::new(Person {
            yes,
            shown: Mutex::default(),
        });
        let run = Run::new(&door).with_approver(Arc::clone(&person));
        let options = ImportOptions::new("desk").with_door(run, ctx.clone());
        assert_eq!(book_through(&url, options).await, said);
        let shown = person.shown.lock().unwrap().clone();
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].0, "mcp.desk.elicit@1");
        assert_eq!(shown[0].1["message"], json!("How many seats?"));
    }
    http.shutdown().await;
}

/// A server (rmcp's, with its in-memory task manager) whose only tool runs as a task
/// that asks the client a question (`input_required`) and answers with the reply.
#[derive(Clone, Default)]
struct Asking {
    tasks: rmcp::task_manager::TaskManager,
}

impl rmcp::ServerHandler for Asking {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object"});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let tool = rmcp::model::Tool::new(
            "reserve",
            "Reserves seats, asking how many.",
            Arc::new(schema),
        );
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        if !context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            return Ok(rmcp::model::CallToolResponse::Complete(
                rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                    "this tool runs only as a task",
                )]),
            ));
        }
        let question: rmcp::model::InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "How many seats?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"seats": {"type": "integer", "default": 2}},
                },
            },
        }))
        .expect("an elicitation request");
        let task = self.tasks.spawn(
            rmcp::task_manager::TaskOptions::default().with_poll_interval_ms(20),
            move |ctx| {
                Box::pin(async move {
                    let answer = ctx.request_input("seats", question).await?;
                    Ok(rmcp::model::CallToolResult::success(vec![
                        rmcp::model::ContentBlock::text(answer.to_string()),
                    ]))
                })
            },
        );
        Ok(rmcp::model::CreateTaskResult::new(task).into())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, rmcp::ErrorData> {
        Ok(rmcp::model::GetTaskResult::new(
            self.tasks.get_task(&request.task_id)?,
        ))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }
}

/// Serves `Asking` over streamable HTTP on loopback: its URL, and what stops it.
async fn asking() -> (String, tokio_util::sync::CancellationToken) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let stop = tokio_util::sync::CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop.clone();
    let server = Asking::default();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stopped = stop.clone();
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = stopped.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let service = hyper_util::service::TowerToHyperService::new(service.clone());
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (url, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_tasks_question_is_answered_by_the_imports_handler() {
    let (url, stop) = asking().await;
    let asked: Arc<Mutex<Vec<Elicitation>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let options = ImportOptions::new("asking")
        .with_requires(Vec::<String>::new())
        .with_elicitation(move |question| {
            seen.lock().unwrap().push(question);
            async { Elicited::Accept(json!({})) }
        });
    let mut registry = Registry::new();
    let import = import_http(&mut registry, &url, options).await.unwrap();
    let runtime = Runtime::new(registry);
    let said = runtime
        .call("mcp.asking.reserve", json!({}), &ToolContext::new())
        .await
        .unwrap();
    // The task asked once, the handler accepted the form's defaults, and the task
    // ended with the answer it was sent (JSON as text: the import reads it as JSON).
    let answer = said;
    assert_eq!(answer["action"], json!("accept"), "{answer}");
    assert_eq!(answer["content"], json!({"seats": 2}), "{answer}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "asked once");
    assert_eq!(asked[0].message, "How many seats?");

    // An import that does not declare tasks is not given one.
    let mut registry = Registry::new();
    let plain = import_http(
        &mut registry,
        &url,
        ImportOptions::new("asking")
            .with_requires(Vec::<String>::new())
            .with_tasks(false),
    )
    .await
    .unwrap();
    let refused = Runtime::new(registry)
        .call("mcp.asking.reserve", json!({}), &ToolContext::new())
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("only as a task"), "{refused}");
    plain.close().await;
    import.close().await;
    stop.cancel();
}

/// An answer that does not fit the form the server asked for (a string for an
/// integer) is declined by the import, not sent as if the person had filled it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_does_not_fit_the_form_is_declined_by_the_import() {
    let (http, url) = desk().await;
    let unfit = ImportOptions::new("desk")
        .with_elicitation(|_| async { Elicited::Accept(json!({"seats": "four"})) });
    assert_eq!(book_through(&url, unfit).await, json!("declined"));
    // Through the door too.
    let door = Arc::new(Runtime::new(Registry::new()));
    let unfit = ImportOptions::new("desk")
        .with_elicitation(|_| async { Elicited::Accept(json!({"name": 7})) })
        .with_door(Run::new(&door), ToolContext::new().with_grant("mcp:desk"));
    assert_eq!(book_through(&url, unfit).await, json!("declined"));
    http.shutdown().await;
}

/// A client that accepts every form with `content`, whatever the form asked.
#[derive(Clone)]
struct Answers(Value);

impl rmcp::ClientHandler for Answers {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.elicitation =
            Some(serde_json::from_value(json!({"form": {}})).unwrap());
        config
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(serde_json::from_value(json!({"action": "accept", "content": self.0})).unwrap())
    }
}

/// A served tool that asks through `Client::elicit` gets an error, not the answer,
/// when the client's answer does not fit the form (a string where an object was
/// asked for, a string for an integer field).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_answer_that_does_not_fit_the_form_does_not_reach_the_tool() {
    use rmcp::ServiceExt;
    for (content, fits) in [
        (json!("4"), false),
        (json!({"seats": "four"}), false),
        (json!({"seats": 3}), true),
    ] {
        let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
        let server =
            McpServer::new(runtime, Identity::new("desk", "1"), ToolContext::new()).unwrap();
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = Answers(content.clone()).serve(client_io).await.unwrap();
        let result = client
            .call_tool(rmcp::model::CallToolRequestParams::new("desk.book"))
            .await
            .unwrap();
        let said = serde_json::to_value(&result).unwrap()["structuredContent"]["result"].clone();
        let said = said.as_str().unwrap_or_default().to_owned();
        if fits {
            assert_eq!(said, r#"accepted {"seats":3}"#, "{content}");
        } else {
            assert!(
                said.starts_with("not asked") && said.contains("does not fit the form"),
                "{content}: {said}"
            );
        }
        client.cancel().await.unwrap();
    }
}

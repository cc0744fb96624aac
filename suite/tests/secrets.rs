//! Secrets never leave: the caller's secrets are scrubbed from a tool's output before
//! anything sees it (the caller, a spill file, a cassette), unless the tool reveals
//! secrets on purpose; error texts lose secrets and token-shaped strings before they
//! reach the caller or the audit trail.

use std::sync::Arc;

use serde_json::json;
use tackle::audit::MemoryAudit;
use tackle::replay::Mode;
use tackle::shape::Shaping;
use tackle::{replay::CassetteConfig, tool, Cassette, Run, Runtime, ToolContext, ToolErrorKind};

const TOKEN: &str = "tok-7f3a9c2e51";

/// Echoes its text back (a model may have put a secret in it).
#[tool(namespace = "s", version = "1", side_effects = none)]
fn echo(text: String) -> String {
    text
}

/// Reads the mail token and reports it, with a long tail (spilled).
#[tool(namespace = "s", version = "1", side_effects = read, secrets = ["MAIL_TOKEN"], max_result_tokens = 10, result_shaping = spill_to_file)]
fn leak(ctx: &ToolContext) -> Result<String, String> {
    let token = ctx.secret("MAIL_TOKEN").map_err(|e| e.to_string())?;
    Ok(format!(
        "token={} {}",
        token.expose(),
        "padding ".repeat(50)
    ))
}

/// Issues the mail token to the caller, on purpose.
#[tool(namespace = "s", version = "1", side_effects = read, secrets = ["MAIL_TOKEN"], reveals_secrets)]
fn issue(ctx: &ToolContext) -> Result<String, String> {
    let token = ctx.secret("MAIL_TOKEN").map_err(|e| e.to_string())?;
    Ok(token.expose().to_owned())
}

/// Fails, quoting an API key it was handed.
#[tool(namespace = "s", version = "1", side_effects = none)]
fn fail(key: String) -> Result<String, String> {
    Err(format!("the upstream refused key {key}"))
}

fn ctx() -> ToolContext {
    ToolContext::new().with_secret("MAIL_TOKEN", TOKEN)
}

#[tokio::test]
async fn outputs_lose_the_callers_secrets_unless_the_tool_reveals_them() {
    let root = std::env::temp_dir().join(format!("tackle-secrets-{}", std::process::id()));
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_shaping(Shaping::default().with_spill_root(&root));
    let out = rt
        .call("s.echo", json!({"text": format!("here: {TOKEN}")}), &ctx())
        .await
        .unwrap();
    assert_eq!(out, json!("here: [REDACTED]"));
    // The spilled file is written from the scrubbed output.
    let handle = rt.call("s.leak", json!({}), &ctx()).await.unwrap();
    let spilled = std::fs::read_to_string(handle["path"].as_str().unwrap()).unwrap();
    assert!(spilled.starts_with("token=[REDACTED]"), "{spilled}");
    assert!(!handle.to_string().contains(TOKEN));
    // On purpose: kept.
    assert_eq!(
        rt.call("s.issue", json!({}), &ctx()).await.unwrap(),
        json!(TOKEN)
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn errors_lose_secrets_and_token_shaped_strings_everywhere() {
    let audit = Arc::new(MemoryAudit::new());
    let dir = std::env::temp_dir().join(format!("tackle-secrets-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fail.json");
    let cassette = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Rewrite)
            .with_env_overrides(false),
    )
    .unwrap();
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_audit(Arc::clone(&audit));
    let run = Run::new(&Arc::new(rt)).with_cassette(cassette.clone());
    let key = "sk-proj-ABCDEFGHIJKLMNOP1234";
    let err = run
        .call("s.fail", json!({"key": key}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Execution);
    assert!(!err.to_string().contains(key), "{err}");
    let echoed = run
        .call("s.echo", json!({"text": TOKEN}), &ctx())
        .await
        .unwrap();
    assert_eq!(echoed, json!("[REDACTED]"));
    cassette.finish().unwrap();
    let events = serde_json::to_string(&audit.events()).unwrap();
    let file = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    for (what, text) in [("audit", &events), ("cassette", &file)] {
        assert!(!text.contains(key), "{what}: {text}");
        assert!(!text.contains(TOKEN), "{what}: {text}");
    }
}

/// Streams the mail token, then returns nothing: its output is what it streamed.
#[tool(namespace = "s", version = "1", side_effects = read, secrets = ["MAIL_TOKEN"])]
fn chatter(ctx: &ToolContext) {
    let token = ctx
        .secret("MAIL_TOKEN")
        .map(|t| t.expose().to_owned())
        .unwrap_or_default();
    ctx.stream(format!("logging in with {token}"));
}

#[tokio::test]
async fn stream_events_and_the_streamed_output_lose_secrets() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let (sink, mut events) = tackle::events::default_event_queue();
    let out = Run::new(&rt)
        .with_events(sink)
        .call("s.chatter", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out, json!("logging in with [REDACTED]"));
    let seen = format!("{:?}", events.drain());
    assert!(seen.contains("logging in with [REDACTED]"), "{seen}");
    assert!(!seen.contains(TOKEN), "{seen}");
}

/// Returns a key it was handed (a model may have pasted one).
#[tool(namespace = "s", version = "1", side_effects = none)]
fn quote(key: String) -> String {
    format!("the key is {key}")
}

/// Mints an API key for the caller, on purpose.
#[tool(namespace = "s", version = "1", side_effects = none, reveals_secrets)]
fn mint() -> String {
    "sk-proj-MINTEDKEY0123456789".to_owned()
}

#[tokio::test]
async fn token_shaped_strings_leave_outputs_unless_the_tool_reveals_them() {
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let ctx = ToolContext::new();
    let out = rt
        .call(
            "s.quote",
            json!({"key": "sk-proj-ABCDEFGHIJKLMNOP1234"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out, json!("the key is [REDACTED]"));
    let minted = rt.call("s.mint", json!({}), &ctx).await.unwrap();
    assert_eq!(minted, json!("sk-proj-MINTEDKEY0123456789"));
}

/// A key that resolves to nothing is the caller's text: neither the error nor the
/// audit event keeps a secret or a token-shaped string from it.
#[tokio::test]
async fn an_unknown_key_holding_a_secret_is_scrubbed_from_errors_and_audit() {
    let audit = Arc::new(MemoryAudit::new());
    let rt = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_audit(audit.clone());
    let asked = format!("s.{TOKEN} sk-proj-ABCDEFGHIJKLMNOP1234");
    let err = rt.call(&asked, json!({}), &ctx()).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    let everything = format!("{err} {}", serde_json::to_string(&audit.events()).unwrap());
    assert!(!everything.contains(TOKEN), "{everything}");
    assert!(
        !everything.contains("sk-proj-ABCDEFGHIJKLMNOP1234"),
        "{everything}"
    );
    assert_eq!(audit.events().len(), 1);
}

use crate::support::capture;

const API_KEY: &str = "live-4e1f9a77c0d2b3";
const PIN: &str = "pin-00913377";

/// Calls a weather service with an API key it declares nothing about; fails quoting
/// it, as careless code does.
#[tool(namespace = "s", version = "1", side_effects = read)]
fn forecast(city: String, api_key: String) -> Result<String, String> {
    Err(format!("the service refused {api_key} for {city}"))
}

/// Unlocks a box with a pin marked secret, streams a log naming it, and returns a long
/// report quoting it (spilled to a file).
#[tool(namespace = "s", version = "1", side_effects = read, max_result_tokens = 10, result_shaping = spill_to_file)]
fn unlock(ctx: &ToolContext, #[secret] code: String) -> String {
    ctx.stream(format!("trying {code}"));
    format!("opened with {code}; {}", "contents ".repeat(40))
}

/// Opens a safe with a numeric code and a short PIN, both secret; refuses the code.
#[tool(namespace = "s", version = "1", side_effects = read)]
fn safe(#[secret] code: u64, #[secret] pin: String) -> Result<String, String> {
    Err(format!("code {code} refused ({} digits of pin)", pin.len()))
}

/// A secret argument of any type or length loses its whole value in the cassette
/// (the recording still replays), and a number long enough to read is scrubbed from
/// error texts too.
#[tokio::test]
async fn numbers_and_short_secrets_leave_no_trace_in_the_cassette() {
    let dir = std::env::temp_dir().join(format!("tackle-secret-safe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("safe.json");
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let config = CassetteConfig::new()
        .with_mode(Mode::Rewrite)
        .with_env_overrides(false);
    let cassette = Cassette::open(&path, config).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette.clone());
    let input = json!({"code": 73914055u64, "pin": "417"});
    let err = run
        .call("s.safe", input.clone(), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`s.safe@1` failed: code [REDACTED] refused (3 digits of pin)"
    );
    cassette.finish().unwrap();
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains("73914055"), "{file}");
    assert!(!file.contains("\"417\""), "{file}");
    let config = CassetteConfig::new()
        .with_mode(Mode::Replay)
        .with_env_overrides(false);
    let replay = Cassette::open(&path, config).unwrap();
    let again = Run::new(&runtime)
        .with_cassette(replay.clone())
        .call(
            "s.safe",
            json!({"code": 1u64, "pin": "000"}),
            &ToolContext::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        again.to_string(),
        err.to_string(),
        "served from the cassette"
    );
    replay.finish().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A secret argument's value, planted through every path, reaches none of the
/// records: the cassette (input and outcome), the error (Display and Debug), audit
/// events (Debug and JSON), a spill file, stream events, traces; and a replay with a
/// placeholder in the cassette still matches.
#[test]
fn secret_arguments_never_leave_the_door() {
    let capture = Arc::new(capture::Capture::default());
    let root = std::env::temp_dir().join(format!("tackle-secret-args-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let path = root.join("run.json");
    let audit = Arc::new(MemoryAudit::new());
    let mut seen = String::new();
    capture::capturing(&capture, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let runtime = Arc::new(
                Runtime::from_inventory_in(module_path!())
                    .unwrap()
                    .with_audit(Arc::clone(&audit))
                    .with_shaping(Shaping::default().with_spill_root(root.join("spill"))),
            );
            let config = CassetteConfig::new()
                .with_mode(Mode::Rewrite)
                .with_env_overrides(false);
            let cassette = Cassette::open(&path, config).unwrap();
            let (sink, mut events) = tackle::events::default_event_queue();
            let run = Run::new(&runtime)
                .with_cassette(cassette.clone())
                .with_events(sink);
            let err = run
                .call(
                    "s.forecast",
                    json!({"city": "Oslo", "api_key": API_KEY}),
                    &ToolContext::new(),
                )
                .await
                .unwrap_err();
            seen.push_str(&format!("{err}\n{err:?}\n"));
            assert!(
                err.to_string().contains("refused [REDACTED] for Oslo"),
                "{err}"
            );
            let handle = run
                .call("s.unlock", json!({"code": PIN}), &ToolContext::new())
                .await
                .unwrap();
            seen.push_str(&format!("{handle}\n"));
            let spilled = std::fs::read_to_string(handle["path"].as_str().unwrap()).unwrap();
            assert!(spilled.starts_with("opened with [REDACTED];"), "{spilled}");
            seen.push_str(&spilled);
            seen.push_str(&format!("{:?}\n", events.drain()));
            cassette.finish().unwrap();
            seen.push_str(&std::fs::read_to_string(&path).unwrap());
            seen.push_str(&format!("{:?}\n", audit.events()));
            seen.push_str(&serde_json::to_string(&audit.events()).unwrap());

            // Replayed, with other values: the placeholders match.
            let config = CassetteConfig::new()
                .with_mode(Mode::Replay)
                .with_env_overrides(false);
            let replay = Cassette::open(&path, config).unwrap();
            let run = Run::new(&runtime).with_cassette(replay.clone());
            let again = run
                .call(
                    "s.forecast",
                    json!({"city": "Oslo", "api_key": "another-key-123456"}),
                    &ToolContext::new(),
                )
                .await
                .unwrap_err();
            assert_eq!(
                again.to_string(),
                err.to_string(),
                "served from the cassette"
            );
            replay.finish().unwrap();
        });
    });
    seen.push_str(&capture.spans.lock().unwrap().join("\n"));
    seen.push_str(&capture.events.lock().unwrap().join("\n"));
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        seen.contains("[REDACTED]"),
        "the cassette keeps a placeholder: {seen}"
    );
    for secret in [API_KEY, PIN] {
        assert_eq!(seen.matches(secret).count(), 0, "{secret} leaked: {seen}");
    }
}

#[test]
fn secret_parameters_are_write_only_in_the_schema() {
    let runtime = Runtime::from_inventory_in(module_path!()).unwrap();
    let schema = |key: &str| {
        runtime
            .registry()
            .get(key)
            .unwrap()
            .spec()
            .input_schema
            .clone()
    };
    assert_eq!(
        schema("s.unlock")["properties"]["code"]["writeOnly"],
        json!(true)
    );
    assert_eq!(
        schema("s.forecast")["properties"]["api_key"]["writeOnly"],
        json!(true)
    );
    assert_eq!(
        schema("s.forecast")["properties"]["city"].get("writeOnly"),
        None
    );
}

#[tokio::test]
async fn the_secret_words_are_configurable() {
    let runtime = Runtime::from_inventory_in(module_path!())
        .unwrap()
        .with_secret_words(["city"]);
    let err = runtime
        .call(
            "s.forecast",
            json!({"city": "Tromsø", "api_key": API_KEY}),
            &ToolContext::new(),
        )
        .await
        .unwrap_err();
    // `city` by the words; `api_key` by its schema's `writeOnly`, whatever the words.
    assert_eq!(
        err.to_string(),
        "`s.forecast@1` failed: the service refused [REDACTED] for [REDACTED]"
    );
}

/// Signs a payment with a key (needs approval for every call).
#[tool(namespace = "s", version = "1", side_effects = external, needs_approval)]
fn pay(amount: u32, #[secret] signing_key: String) -> String {
    format!(
        "paid {amount} with a key of {} characters",
        signing_key.len()
    )
}

/// An approver is shown a secret argument as `[REDACTED]`, while its approval still
/// tells the values apart (a digest of what scrubbing took out): an approval of one key
/// does not pass a call with another.
#[tokio::test]
async fn an_approver_never_sees_a_secret_argument() {
    use std::sync::Mutex;
    use tackle::approval::{ApprovalDecision, ApprovalRequest, ApproveWith};

    let seen: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_approver(ApproveWith(
                move |request: &ApprovalRequest| -> ApprovalDecision {
                    kept.lock().unwrap().push(request.clone());
                    request.approve_and_remember()
                },
            )),
    );
    let run = Run::new(&runtime);
    let paid = run
        .call(
            "s.pay",
            json!({"amount": 12, "signing_key": "sk-live-0000-1111"}),
            &ToolContext::new(),
        )
        .await
        .unwrap();
    assert_eq!(paid, json!("paid 12 with a key of 17 characters"));
    // The same amount with another key is asked about again: the binding holds the key.
    run.call(
        "s.pay",
        json!({"amount": 12, "signing_key": "sk-live-2222-3333"}),
        &ToolContext::new(),
    )
    .await
    .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "the second key was not asked about");
    for request in seen.iter() {
        assert_eq!(
            request.input,
            json!({"amount": 12, "signing_key": "[REDACTED]"})
        );
        let pending = tackle::durable::PendingApproval::of(request);
        assert!(!format!("{pending:?}{request:?}").contains("sk-live"));
    }
    assert_ne!(seen[0].binding, seen[1].binding);
}

/// Sends a note with a key, after approval.
#[tool(namespace = "s", version = "1", side_effects = external, needs_approval)]
fn send(note: String, #[secret] api_key: String) -> String {
    format!(
        "sent {} characters with a key of {}",
        note.len(),
        api_key.len()
    )
}

/// One key per call: the approval binding holds the very canonical input the cassette
/// keys and keeps (scrubbed once), and a cassette's own secrets leave the live output
/// as they leave the recording, so the replay gives what the live run gave.
#[tokio::test]
async fn one_key_and_one_scrubber_serve_replay_approval_and_the_caller() {
    use std::sync::Mutex;
    use tackle::approval::{ApprovalDecision, ApprovalRequest, ApproveWith};

    let dir = std::env::temp_dir().join(format!("tackle-secrets-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("send.json");
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_secret("project-7781-secret")
            .with_env_overrides(false)
    };
    let seen: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_approver(ApproveWith(
                move |request: &ApprovalRequest| -> ApprovalDecision {
                    kept.lock().unwrap().push(request.clone());
                    request.approve()
                },
            )),
    );
    let input = json!({
        "note": format!("for {TOKEN} in project-7781-secret"),
        "api_key": "k-000111222333"
    });

    let cassette = Cassette::open(&path, config(Mode::Rewrite)).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette.clone());
    let sent_live = run.call("s.send", input.clone(), &ctx()).await.unwrap();
    assert_eq!(sent_live, json!("sent 41 characters with a key of 14"));
    let echoed = run
        .call("s.echo", json!({"text": "in project-7781-secret"}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        echoed,
        json!("in [REDACTED]"),
        "the cassette's secret, live"
    );
    cassette.finish().unwrap();

    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let recorded = file["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "s.send@1")
        .map(|i| &i["input"])
        .unwrap();
    assert_eq!(
        *recorded,
        json!({"note": "for [REDACTED] in [REDACTED]", "api_key": "[REDACTED]"})
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        // What the approver was shown, what the binding holds, what the cassette keys.
        assert_eq!(seen[0].input, *recorded);
        assert_eq!(
            seen[0].binding.arguments(),
            tackle::canonical::canonical(recorded)
        );
    }

    // The replay gives what the live run gave, and needs no approval.
    let cassette = Cassette::open(&path, config(Mode::Replay)).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette.clone());
    let sent = run.call("s.send", input, &ctx()).await.unwrap();
    assert_eq!(sent, sent_live);
    let replayed = run
        .call("s.echo", json!({"text": "in project-7781-secret"}), &ctx())
        .await
        .unwrap();
    assert_eq!(replayed, echoed);
    cassette.finish().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Streams what it was handed, with the caller's token, then returns nothing.
#[tool(namespace = "s", version = "1", side_effects = read, secrets = ["MAIL_TOKEN"])]
fn relay(ctx: &ToolContext, text: String, password: String) {
    let token = ctx
        .secret("MAIL_TOKEN")
        .map(|t| t.expose().to_owned())
        .unwrap_or_default();
    ctx.stream(format!("{text} via {token} as {password}"));
}

/// What leaves while a tool runs (a streamed chunk) is scrubbed by the rules of its
/// outcome: the caller's secrets and the secret arguments `[REDACTED]`, token shapes
/// `[REDACTED]`; the event shows what the output shows.
#[tokio::test]
async fn a_streamed_chunk_is_scrubbed_as_the_outcome_is() {
    let rt = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let (sink, mut events) = tackle::events::default_event_queue();
    let out = Run::new(&rt)
        .with_events(sink)
        .call(
            "s.relay",
            json!({"text": "key sk-proj-ABCDEFGHIJKLMNOP1234", "password": "hunter2-x"}),
            &ctx(),
        )
        .await
        .unwrap();
    let expected = "key [REDACTED] via [REDACTED] as [REDACTED]";
    assert_eq!(out, json!(expected));
    let chunks: Vec<String> = events
        .drain()
        .into_iter()
        .filter_map(|event| match event.kind {
            tackle::events::ToolEventKind::Chunk(chunk) => Some(chunk),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, [expected]);
}

/// A model completion passes the door in its own types (a reply, a model error), and
/// the one scrubber reaches into them as into a tool's JSON: the caller's secrets
/// leave the reply's text and its tool calls' arguments, and a failed completion's
/// error keeps its kind with the secret gone from its text (before, the model's own
/// error reached the caller unscrubbed). The recording holds the reply's JSON view,
/// scrubbed, and its replay gives the same typed reply.
#[tokio::test]
async fn a_model_reply_and_its_error_are_scrubbed_in_their_own_types() {
    use tackle::agent::model::{
        complete, completion, ChatRequest, ChatResponse, FunctionModel, Message, ModelError,
        ToolCallRequest,
    };

    let model = FunctionModel::new("m", |request: &ChatRequest| {
        if request.messages.len() > 1 {
            return Err(ModelError::Status {
                status: 401,
                body: format!("rejected {TOKEN}"),
            });
        }
        Ok(ChatResponse::calls(
            format!("the token is {TOKEN}"),
            vec![ToolCallRequest::new(
                "c1",
                "s.echo",
                json!({"text": format!("say {TOKEN}"), "n": 1}),
            )],
        ))
    });
    let operation = completion(&model);
    let ctx = ctx().with_grant("llm:*");
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let ask = ChatRequest {
        messages: vec![Message::user("go")],
        ..ChatRequest::default()
    };
    let fail = ChatRequest {
        messages: vec![Message::user("go"), Message::user("again")],
        ..ChatRequest::default()
    };

    let dir = std::env::temp_dir().join(format!("tackle-secrets-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.json");
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
    };

    let cassette = Cassette::open(&path, config(Mode::Rewrite)).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette.clone());
    let reply = complete(&run, &operation, &model, &ask, &ctx)
        .await
        .unwrap();
    assert_eq!(reply.text, "the token is [REDACTED]");
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"text": "say [REDACTED]", "n": 1})
    );
    let error = complete(&run, &operation, &model, &fail, &ctx)
        .await
        .unwrap_err();
    match &error {
        ModelError::Status { status, body } => {
            assert_eq!(*status, 401);
            assert_eq!(body, "rejected [REDACTED]");
        }
        other => panic!("the model's own error, typed: {other:?}"),
    }
    cassette.finish().unwrap();
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains(TOKEN), "{file}");
    assert!(file.contains("the token is [REDACTED]"), "{file}");

    // Replayed: the same reply, made from its recorded view; the failure as recorded.
    let cassette = Cassette::open(&path, config(Mode::Replay)).unwrap();
    let run = Run::new(&runtime).with_cassette(cassette.clone());
    let replayed = complete(&run, &operation, &model, &ask, &ctx)
        .await
        .unwrap();
    assert_eq!(replayed, reply);
    let error = complete(&run, &operation, &model, &fail, &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::Failed { message } if message.contains("rejected [REDACTED]")),
        "{error:?}"
    );
    cassette.finish().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

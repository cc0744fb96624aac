//! Secrets never leave: the caller's secrets are scrubbed from a tool's output before
//! anything sees it (the caller, a spill file, a cassette), unless the tool reveals
//! secrets on purpose; error texts lose secrets and token-shaped strings before they
//! reach the caller or the audit trail.

use std::sync::Arc;

use serde_json::json;
use tackle::audit::MemoryAudit;
use tackle::replay::Mode;
use tackle::shape::Shaping;
use tackle::{tool, Cassette, CassetteConfig, Run, Runtime, ToolContext, ToolErrorKind};

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
    let rt = Runtime::from_inventory()
        .unwrap()
        .with_shaping(Shaping::default().with_spill_root(&root));
    let out = rt
        .call("s.echo", json!({"text": format!("here: {TOKEN}")}), &ctx())
        .await
        .unwrap();
    assert_eq!(out, json!("here: <redacted>"));
    // The spilled file is written from the scrubbed output.
    let handle = rt.call("s.leak", json!({}), &ctx()).await.unwrap();
    let spilled = std::fs::read_to_string(handle["path"].as_str().unwrap()).unwrap();
    assert!(spilled.starts_with("token=<redacted>"), "{spilled}");
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
    let rt = Runtime::from_inventory()
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
    assert_eq!(echoed, json!("<redacted>"));
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
    let rt = Arc::new(Runtime::from_inventory().unwrap());
    let (sink, mut events) = tackle::events::default_event_queue();
    let out = Run::new(&rt)
        .with_events(sink)
        .call("s.chatter", json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out, json!("logging in with <redacted>"));
    let seen = format!("{:?}", events.drain());
    assert!(seen.contains("logging in with <redacted>"), "{seen}");
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
    let rt = Runtime::from_inventory().unwrap();
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
    let rt = Runtime::from_inventory().unwrap().with_audit(audit.clone());
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

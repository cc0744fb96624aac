//! A tool's panic message reaches stderr (which MCP hosts log) without the caller's
//! secrets. The panicking half runs in a child process (this binary, re-run with
//! `TACKLE_PANIC_CHILD` set and output not captured), whose stderr is read whole.

use std::process::Command;

use serde_json::json;
use tackle::{tool, Runtime, ToolContext, ToolErrorKind};

const TOKEN: &str = "tok-51c0ffee99";

/// Panics, quoting the mail token.
#[tool(namespace = "p", version = "1", side_effects = none, secrets = ["MAIL_TOKEN"])]
fn blurt(ctx: &ToolContext) -> String {
    let token = ctx.secret("MAIL_TOKEN").map(|t| t.expose().to_owned());
    panic!("could not log in with {}", token.unwrap_or_default());
}

/// Panics, quoting an API key from its argument (token-shaped).
#[tool(namespace = "p", version = "1", side_effects = none)]
fn blurt_key(key: String) -> String {
    panic!("upstream refused {key}");
}

#[test]
fn panicking_child() {
    if std::env::var_os("TACKLE_PANIC_CHILD").is_none() {
        return;
    }
    let rt = Runtime::from_inventory_in(module_path!()).unwrap();
    let ctx = ToolContext::new().with_secret("MAIL_TOKEN", TOKEN);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let err = rt.call("p.blurt", json!({}), &ctx).await.unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Panicked);
        let err = rt
            .call(
                "p.blurt_key",
                json!({"key": "sk-proj-ABCDEFGHIJKLMNOP1234"}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Panicked);
        // A caller with no secrets: the token-shaped key still never reaches stderr.
        let err = rt
            .call(
                "p.blurt_key",
                json!({"key": "sk-proj-QRSTUVWXYZ0123456789"}),
                &ToolContext::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Panicked);
        eprintln!("child done: {err}");
    });
}

#[test]
fn panic_messages_on_stderr_hold_no_secret() {
    // The child test's name as the harness knows it: its module path in the binary.
    let child = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::panicking_child"),
        None => "panicking_child".to_owned(),
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(&child)
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env("TACKLE_PANIC_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("child done"), "{stderr}");
    assert!(
        stderr.contains("could not log in with"),
        "the message is printed: {stderr}"
    );
    assert!(!stderr.contains(TOKEN), "{stderr}");
    assert!(!stderr.contains("sk-proj-ABCDEFGHIJKLMNOP1234"), "{stderr}");
    assert!(!stderr.contains("sk-proj-QRSTUVWXYZ0123456789"), "{stderr}");
    assert_eq!(
        stderr.matches(":\nupstream refused [REDACTED]").count(),
        2,
        "both key panics are printed, redacted: {stderr}"
    );
}

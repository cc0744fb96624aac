//! Record a run once, then replay it without touching the outside world.
//!
//! Run it with `cargo run --example record_replay`. It records into a temporary
//! folder (so it works anywhere, offline), shows the cassette, replays the run with
//! the "remote" tool unreachable, and shows what a changed call reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::replay::Mode;
use tackle::{replay::CassetteConfig, tool, Cassette, Run, Runtime, ToolContext};

/// Whether the exchange-rate service can be reached (the replay turns it off).
static ONLINE: AtomicBool = AtomicBool::new(true);

/// Convert an amount between currencies at today's rate (a remote service).
#[tool(namespace = "fx", version = "1", side_effects = external)]
fn convert(amount: f64, from: String, to: String) -> Result<f64, String> {
    if !ONLINE.load(Ordering::SeqCst) {
        return Err("the exchange-rate service is unreachable".into());
    }
    let rate = match (from.as_str(), to.as_str()) {
        ("EUR", "USD") => 1.08,
        ("USD", "EUR") => 0.93,
        _ => return Err(format!("no rate for {from} -> {to}")),
    };
    Ok((amount * rate * 100.0).round() / 100.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path =
        std::env::temp_dir().join(format!("tackle-record-replay-{}.json", std::process::id()));
    let ctx = ToolContext::new();
    // Programs manage their own cassettes here, so the environment does not pick the mode.
    let config = |mode| {
        CassetteConfig::new()
            .with_mode(mode)
            .with_env_overrides(false)
    };

    // One runtime for both runs; each run has its own cassette.
    let runtime = Arc::new(Runtime::from_inventory()?);

    println!("1. Record: the tool runs and every call is written down.");
    let run = Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Rewrite))?);
    for amount in [100.0, 250.0] {
        let out = run
            .call(
                convert::KEY,
                json!({"amount": amount, "from": "EUR", "to": "USD"}),
                &ctx,
            )
            .await?;
        println!("   {amount} EUR -> {out} USD");
    }
    let report = run.finish()?;
    println!(
        "   recorded {} calls to {}",
        report.recorded,
        path.display()
    );
    println!("\n{}", std::fs::read_to_string(&path)?);

    println!("2. Replay: the service is offline, and nothing notices.");
    ONLINE.store(false, Ordering::SeqCst);
    let run = Run::new(&runtime).with_cassette(Cassette::open(&path, config(Mode::Replay))?);
    for amount in [100.0, 250.0] {
        let out = run
            .call(
                convert::KEY,
                json!({"from": "EUR", "amount": amount, "to": "USD"}),
                &ctx,
            )
            .await?;
        println!("   {amount} EUR -> {out} USD (replayed)");
    }

    println!("\n3. A call the recording does not have is reported, never run:");
    if let Err(error) = run
        .call(
            convert::KEY,
            json!({"amount": 120.0, "from": "EUR", "to": "USD"}),
            &ctx,
        )
        .await
    {
        println!("   {error}");
    }
    std::fs::remove_file(&path)?;
    Ok(())
}

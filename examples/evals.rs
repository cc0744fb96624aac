//! Evals on cassettes: a help desk agent's dataset, replayed offline from its committed
//! cassettes, judged, and reported as a table, JSON and HTML; then a new prompt tried
//! against the same recordings (counterfactual: the model live, the tools replayed, the
//! refund never made) and compared with the first run.
//!
//! ```sh
//! cargo run --example evals             # replay: offline, writes target/evals/*.html
//! cargo run --example evals -- --record # record the cases' cassettes again (live tools)
//! ```
//!
//! The dataset is `examples/evals/desk.yaml`, the cassettes
//! `examples/cassettes/evals/desk/<case>.json`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{json, Value};
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::evals::{Dataset, Eval, EvalMode, EvalReport};
use tackle::{tool, Agent, Runtime};

/// Looks a ticket's order up: whether it was delivered.
#[tool(namespace = "desk", side_effects = read)]
fn order_status(order: String) -> Value {
    let delivered = !order.ends_with('9');
    json!({"order": order, "delivered": delivered})
}

/// Refunds an order: money leaves the company (never run by a replay).
#[tool(namespace = "desk", side_effects = external)]
fn refund(order: String, reason: String) -> String {
    println!("  (a refund of {order} was made: {reason})");
    format!("refund of {order} sent")
}

/// What shipping costs, in cents, for a basket of `total_cents`: free from 40.00.
#[tool(namespace = "desk", side_effects = none)]
fn shipping(total_cents: u64) -> u64 {
    if total_cents >= 4_000 {
        0
    } else {
        395
    }
}

/// The desk's model, as a function of the request (a real model would be a
/// `ChatModel` of `tackle::agent`; the cassettes make the run the same either way).
fn desk(request: &ChatRequest, checks_first: bool) -> Result<ChatResponse, ModelError> {
    let at = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let task = &request.messages[at].content;
    let seen: Vec<&str> = request.messages[at..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    let order = task
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .find(|w| w.starts_with("O-"))
        .unwrap_or("O-0")
        .to_owned();
    let ask = |name: &str, arguments: Value| {
        ChatResponse::calls("", vec![ToolCallRequest::new("t1", name, arguments)])
    };
    Ok(if task.contains("refund") {
        match (checks_first, seen.as_slice()) {
            (true, []) => ask("desk_order_status", json!({"order": order})),
            (true, [status]) if status.contains("\"delivered\":false") => {
                ChatResponse::text(format!("{order} has not arrived yet, so no refund."))
            }
            (_, [] | [_]) => ask("desk_refund", json!({"order": order, "reason": "damaged"})),
            _ => ChatResponse::text(format!("Refunded {order}.")),
        }
    } else {
        let cents: u64 = task
            .split_whitespace()
            .find_map(|w| w.trim_end_matches('?').replace('.', "").parse().ok())
            .unwrap_or(0);
        match seen.first() {
            None => ask("desk_shipping", json!({"total_cents": cents})),
            Some(fee) if fee.trim() == "0" => ChatResponse::text("Shipping is free."),
            Some(fee) => ChatResponse::text(format!("Shipping costs {fee} cents.")),
        }
    })
}

/// The agent with the prompt in use (it checks an order before refunding it) or a new
/// one (it refunds at once).
fn agent(checks_first: bool) -> Agent {
    type Reply = fn(&ChatRequest) -> Result<ChatResponse, ModelError>;
    let reply: Reply = if checks_first {
        |r| desk(r, true)
    } else {
        |r| desk(r, false)
    };
    Agent::new(FunctionModel::new("desk", reply)).tools([
        order_status::KEY,
        refund::KEY,
        shipping::KEY,
    ])
}

fn write(report: &EvalReport, name: &str, baseline: Option<&EvalReport>) -> std::io::Result<()> {
    let dir = Path::new("target/evals");
    report.write_json(dir.join(format!("{name}.json")))?;
    report.write_html(dir.join(format!("{name}.html")), baseline)?;
    println!("wrote target/evals/{name}.json and target/evals/{name}.html");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let record = std::env::args().any(|a| a == "--record");
    let result: Result<bool, Box<dyn std::error::Error>> = async {
        let dataset = Dataset::load(root.join("examples/evals/desk.yaml"))?;
        let runtime = Arc::new(Runtime::from_inventory()?);
        let cassettes = root.join("examples/cassettes/evals");
        let mode = if record {
            EvalMode::Record
        } else {
            EvalMode::Replay
        };
        println!(
            "== {} cases of `{}`, mode {mode}",
            dataset.cases.len(),
            dataset.name
        );
        let report = Eval::new(&dataset, &agent(true), &runtime)
            .cassettes(&cassettes)
            .mode(mode)
            .run()
            .await?;
        print!("{}", report.table());
        write(&report, "desk", None)?;

        println!("\n== a new prompt (refund at once), against the same recordings");
        let new_prompt = Eval::new(&dataset, &agent(false), &runtime)
            .cassettes(&cassettes)
            .mode(EvalMode::Counterfactual)
            .run()
            .await?;
        print!("{}", new_prompt.table());
        print!("{}", new_prompt.diff(&report).text());
        write(&new_prompt, "desk-new-prompt", Some(&report))?;
        Ok(report.passed())
    }
    .await;
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("the replayed run did not pass: see the table above");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The outside world of the Temporal tests (a ledger file), the bank's tools, the
//! scripted models and the agents every worker runs: shared by the test that runs
//! workers and the one that replays their recorded histories.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::agent::react::ReactSkill;
use tackle::{tool, Runtime, ToolContext};
use tackle_temporal::Agents;

/// The agents every worker runs (and a replay replays), over `runtime`.
pub fn agents(runtime: &Arc<Runtime>) -> Agents {
    let payouts = ReactSkill::new(
        Arc::new(FunctionModel::new("ledger-bot", payout_model)),
        runtime.registry(),
        &["ledger.post", "mail.notify"],
    )
    .expect("skill");
    let refunds = ReactSkill::new(
        Arc::new(FunctionModel::new("refund-bot", refund_model)),
        runtime.registry(),
        &["bank.refund"],
    )
    .expect("skill")
    .with_error_budget(5);
    let again = ReactSkill::new(
        Arc::new(FunctionModel::new("again-bot", again_model)),
        runtime.registry(),
        &["bank.refund", "bank.transfer"],
    )
    .expect("skill")
    .with_error_budget(5);
    let settler = ReactSkill::new(
        Arc::new(FunctionModel::new("settle-bot", settle_model)),
        runtime.registry(),
        &["bank.balance", "bank.settle"],
    )
    .expect("skill");
    let stubborn = ReactSkill::new(
        Arc::new(FunctionModel::new("stubborn-bot", stubborn_model)),
        runtime.registry(),
        &["bank.settle_stubborn"],
    )
    .expect("skill");
    let scale = ReactSkill::new(
        Arc::new(FunctionModel::new("scale-bot", scale_model)),
        runtime.registry(),
        &["ledger.credit"],
    )
    .expect("skill");
    let long = ReactSkill::new(
        Arc::new(FunctionModel::new("long-bot", long_model)),
        runtime.registry(),
        &["bank.balance"],
    )
    .expect("skill")
    .with_max_steps(1_000);
    let marathon = ReactSkill::new(
        Arc::new(FunctionModel::new("marathon-bot", marathon_model)),
        runtime.registry(),
        &["ledger.credit"],
    )
    .expect("skill")
    .with_max_steps(1_000);
    let fixer = ReactSkill::new(
        Arc::new(FunctionModel::new("fixer-bot", fixer_model)),
        runtime.registry(),
        &["ledger.credit"],
    )
    .expect("skill")
    .with_deferred(runtime.registry(), &["bank.balance"])
    .expect("deferred")
    .with_repair(AmountsAsNumbers);
    let vault = ReactSkill::new(
        Arc::new(FunctionModel::new("vault-bot", vault_model)),
        runtime.registry(),
        &["vault.unlock"],
    )
    .expect("skill")
    .with_error_budget(5);
    let context = ToolContext::new().with_grant("llm:*");
    Agents::new(runtime)
        .with("fixer", fixer, context.clone())
        .with("long", long, context.clone())
        .with("marathon", marathon, context.clone())
        .with("scale", scale, context.clone())
        .with("payouts", payouts, context.clone())
        .with("refunds", refunds, context.clone())
        .with("again", again, context.clone())
        .with("stubborn", stubborn, context.clone())
        .with("vault", vault, context.clone())
        .with("settle", settler, context)
}

pub fn ledger() -> PathBuf {
    PathBuf::from(std::env::var_os("TACKLE_LEDGER").unwrap_or_default())
}

pub fn executions() -> PathBuf {
    ledger().with_file_name("executions.txt")
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub fn append(path: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("write");
    file.sync_all().expect("sync");
}

pub fn worker_name() -> String {
    std::env::var("TACKLE_WORKER_NAME").unwrap_or_default()
}

/// Posts an amount; a repeated request id is ignored, as a payment API does.
#[tool(namespace = "ledger", side_effects = write, idempotency_key = "request_id")]
pub fn post(request_id: String, amount: i64) -> String {
    append(
        &executions(),
        &format!("begin {} {request_id}", worker_name()),
    );
    // Long enough for the test to kill this worker while the call is in flight.
    std::thread::sleep(Duration::from_millis(600));
    let line = format!("post {request_id} {amount}");
    if !lines(&ledger()).contains(&line) {
        append(&ledger(), &line);
    }
    format!("posted {request_id}")
}

/// How many times the repair hook ran in this process.
pub static REPAIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A repair hook: an amount sent as text becomes a number. It counts its runs (in
/// this process, and in the ledger's folder across workers).
pub struct AmountsAsNumbers;

impl tackle::agent::react::RepairHook for AmountsAsNumbers {
    fn repair(
        &self,
        call: &ToolCallRequest,
        _error: &tackle::ToolError,
    ) -> Option<serde_json::Value> {
        REPAIRS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        append(
            &ledger().with_file_name("repairs.txt"),
            &format!("repair {}", worker_name()),
        );
        let mut fixed = call.arguments.clone();
        let amount = fixed.get("amount")?.as_str()?.parse::<i64>().ok()?;
        fixed["amount"] = json!(amount);
        Some(fixed)
    }
}

/// Credits with an amount as text (repaired), searches for the balance tool, reads
/// the balance, answers.
pub fn fixer_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    Ok(match turn_of(request) {
        0 => ChatResponse::calls(
            "Crediting f-1.",
            vec![call(
                "c",
                "ledger_credit",
                json!({"request_id": "f-1", "amount": "15"}),
            )],
        ),
        1 => ChatResponse::calls(
            "Looking for a balance tool.",
            vec![call("s", "tool_search", json!({"query": "balance"}))],
        ),
        2 => ChatResponse::calls("Reading it.", vec![call("b", "bank_balance", json!({}))]),
        _ => ChatResponse::text(tool_results(request).join("; ")),
    })
}

/// Reads the balance once a step, for as many steps as the task says, then answers.
pub fn long_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let steps: usize = request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.parse().ok())
        .unwrap_or(1);
    let turn = turn_of(request);
    Ok(if turn < steps {
        ChatResponse::calls(
            format!("Reading, step {turn}."),
            vec![call(&format!("b{turn}"), "bank_balance", json!({}))],
        )
    } else {
        ChatResponse::text(format!("Read the balance {steps} times."))
    })
}

/// Credits 1 once a step (keyed `<tag>-<step>`), for as many steps as the task
/// (`<tag> <steps>`) says, then answers with how many credits its conversation
/// holds: all of them only if every earlier step reached the model.
pub fn marathon_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let task = request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let (tag, steps) = task.split_once(' ').unwrap_or(("m", "1"));
    let steps: usize = steps.parse().unwrap_or(1);
    let turn = turn_of(request);
    Ok(if turn < steps {
        ChatResponse::calls(
            format!("Crediting, step {turn}."),
            vec![call(
                &format!("c{turn}"),
                "ledger_credit",
                json!({"request_id": format!("{tag}-{turn}"), "amount": 1}),
            )],
        )
    } else {
        let credited = tool_results(request)
            .iter()
            .filter(|r| r.starts_with("credited"))
            .count();
        ChatResponse::text(format!("{credited} credits in the conversation."))
    })
}

/// Credits an amount, quickly and without blocking its thread; a repeated request id
/// is ignored, as a payment API does.
#[tool(namespace = "ledger", side_effects = write, idempotency_key = "request_id")]
pub async fn credit(request_id: String, amount: i64) -> String {
    append(
        &executions(),
        &format!("begin {} {request_id}", worker_name()),
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    let line = format!("credit {request_id} {amount}");
    if !lines(&ledger()).contains(&line) {
        append(&ledger(), &line);
    }
    format!("credited {request_id}")
}

/// Credits `<task>-a`, then `<task>-b`, then answers with the outcomes.
pub fn scale_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let tag = request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let credit = |n: &str, amount: i64| {
        call(
            n,
            "ledger_credit",
            json!({"request_id": format!("{tag}-{n}"), "amount": amount}),
        )
    };
    Ok(match turn_of(request) {
        0 => ChatResponse::calls("Crediting a.", vec![credit("a", 10)]),
        1 => ChatResponse::calls("Crediting b.", vec![credit("b", 20)]),
        _ => ChatResponse::text(tool_results(request).join("; ")),
    })
}

/// Sends a notification (no idempotency key: a repeat would be sent twice).
#[tool(namespace = "mail", side_effects = external)]
pub fn notify(to: String) -> String {
    append(
        &executions(),
        &format!("begin {} notify {to}", worker_name()),
    );
    std::thread::sleep(Duration::from_millis(300));
    append(&ledger(), &format!("notify {to}"));
    // Sent, not yet reported: the test kills this worker here.
    std::thread::sleep(Duration::from_millis(600));
    format!("notified {to}")
}

/// Refunds an order (every call needs approval).
#[tool(namespace = "bank", side_effects = external, needs_approval)]
pub fn refund(order: String, cents: i64) -> String {
    append(&ledger(), &format!("refund {order} {cents}"));
    format!("refunded {order}")
}

pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The payout model: its reply depends only on the request (the task names the
/// run; the turn is the number of its earlier replies), so any worker gives it.
/// The answer is made of the tools' results.
pub fn payout_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let tag = request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let turn = turn_of(request);
    let post = |id: &str, n: &str, amount: i64| {
        call(
            id,
            "ledger_post",
            json!({"request_id": format!("{tag}-{n}"), "amount": amount}),
        )
    };
    Ok(match turn {
        0 => ChatResponse::calls("Posting r1.", vec![post("c1", "r1", 100)]),
        1 => ChatResponse::calls("Posting r2.", vec![post("c2", "r2", 250)]),
        2 => ChatResponse::calls(
            "Telling Ada.",
            vec![call(
                "c3",
                "mail_notify",
                json!({"to": format!("{tag}-ada")}),
            )],
        ),
        3 => ChatResponse::calls("Posting r3.", vec![post("c4", "r3", 75)]),
        _ => ChatResponse::text(tool_results(request).join("; ")),
    })
}

/// How many replies the model has given in `request`'s conversation.
pub fn turn_of(request: &ChatRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// The tools' results in `request`'s conversation, in order.
pub fn tool_results(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect()
}

/// The refund model: two refunds in one step, then an answer made of the outcomes.
pub fn refund_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let turn = turn_of(request);
    Ok(match turn {
        0 => ChatResponse::calls(
            "Refunding both orders.",
            vec![
                call("r1", "bank_refund", json!({"order": "A-1", "cents": 500})),
                call("r2", "bank_refund", json!({"order": "B-2", "cents": 9900})),
            ],
        ),
        _ => ChatResponse::text(tool_results(request).join(" | ")),
    })
}

/// Transfers money: keyed (a repeat is ignored by the bank) and needs approval.
#[tool(
    namespace = "bank",
    side_effects = write,
    idempotency_key = "request_id",
    needs_approval
)]
pub fn transfer(request_id: String, cents: i64) -> String {
    let line = format!("transfer {request_id} {cents}");
    if !lines(&ledger()).contains(&line) {
        append(&ledger(), &line);
    }
    format!("transferred {request_id}")
}

/// Refunds A-1, asks for the same refund again, then a keyed transfer.
pub fn again_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let refund = || call("r", "bank_refund", json!({"order": "A-1", "cents": 500}));
    Ok(match turn_of(request) {
        0 => ChatResponse::calls("Refunding A-1.", vec![refund()]),
        1 => ChatResponse::calls("Once more, to be sure.", vec![refund()]),
        2 => ChatResponse::calls(
            "And the transfer.",
            vec![call(
                "t",
                "bank_transfer",
                json!({"request_id": "t-1", "cents": 700}),
            )],
        ),
        _ => ChatResponse::text(tool_results(request).join(" | ")),
    })
}

/// Reads the balance (changes nothing).
#[tool(namespace = "bank", side_effects = read)]
pub fn balance() -> i64 {
    1000
}

/// A slow write that stops when its call is cancelled, and says so in the ledger.
#[tool(namespace = "bank", side_effects = external)]
pub async fn settle(ctx: &ToolContext, batch: String) -> String {
    append(&ledger(), &format!("begin settle {batch}"));
    tokio::select! {
        () = ctx.cancelled() => {
            append(&ledger(), &format!("stopped settle {batch}"));
            format!("stopped {batch}")
        }
        () = tokio::time::sleep(Duration::from_secs(60)) => format!("settled {batch}"),
    }
}

/// A slow write that does not stop when its call is cancelled: it blocks its thread
/// for 3 s, then lands.
#[tool(namespace = "bank", side_effects = external, blocking)]
pub fn settle_stubborn(batch: String) -> String {
    append(&ledger(), &format!("begin stubborn {batch}"));
    std::thread::sleep(Duration::from_secs(3));
    append(&ledger(), &format!("settled {batch}"));
    format!("settled {batch}")
}

/// Settles a batch with the write that does not stop.
pub fn stubborn_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    Ok(match turn_of(request) {
        0 => ChatResponse::calls(
            "Settling.",
            vec![call("s", "bank_settle_stubborn", json!({"batch": "b-8"}))],
        ),
        _ => ChatResponse::text("Settled."),
    })
}

/// Reads the balance, then settles a batch (slowly).
pub fn settle_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    Ok(match turn_of(request) {
        // Two reads in one step: they run at once.
        0 => ChatResponse::calls(
            "Balance first.",
            vec![
                call("b1", "bank_balance", json!({})),
                call("b2", "bank_balance", json!({})),
            ],
        ),
        1 => ChatResponse::calls(
            "Settling.",
            vec![call("s", "bank_settle", json!({"batch": "b-9"}))],
        ),
        _ => ChatResponse::text("Settled."),
    })
}

/// The PIN the vault's model passes as a secret argument.
pub const VAULT_PIN: &str = "pin-7731-quartz";

/// Unlocks a vault with a PIN marked secret: it streams a line naming the PIN, and
/// names it again in its answer (for `alice`) or in its error (for anyone else).
#[tool(namespace = "vault", side_effects = read)]
pub fn unlock(ctx: &ToolContext, user: String, #[secret] pin: String) -> Result<String, String> {
    ctx.stream(format!("trying {pin} for {user}"));
    if user == "alice" {
        Ok(format!("opened for {user} with {pin}"))
    } else {
        Err(format!("{pin} is not {user}'s PIN"))
    }
}

/// Unlocks the vault for alice, then tries for mallory with the same PIN.
pub fn vault_model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let unlock =
        |id: &str, user: &str| call(id, "vault_unlock", json!({"user": user, "pin": VAULT_PIN}));
    Ok(match turn_of(request) {
        0 => ChatResponse::calls("Unlocking.", vec![unlock("v1", "alice")]),
        1 => ChatResponse::calls("Now mallory.", vec![unlock("v2", "mallory")]),
        _ => ChatResponse::text("Done."),
    })
}

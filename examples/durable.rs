//! A durable run, offline: start it, kill its process mid-run, resume it.
//!
//! ```sh
//! cargo run --example durable --features sqlite
//! ```
//!
//! The example starts itself again as a child process that runs a ReAct agent (a
//! scripted model, three steps of writes) as a durable run in a SQLite file, and kills
//! the child with SIGKILL once the run's journal shows it mid-run. It then resumes the
//! run in this process: the journal's calls are served, not run again, and the run
//! continues live to its answer. Every write lands in a ledger file once.
//!
//! A run has one owner at a time: the process driving it holds a *lease* on it, which
//! it renews while it runs. A process that is killed cannot let go of its lease, so the
//! run stays held until the lease lapses; a process that tries to open it sooner is
//! told how long to wait (`DurableError::Held`). This example gives its runs a short
//! lease (`DurableOptions::with_lease`, 2 s; the default is 30 s) and waits it out.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::agent::react::ReactSkill;
use tackle::durable::{DurableError, DurableOptions, DurableRun, JournalEntry, RunStore};
use tackle::sqlite::SqliteStore;
use tackle::{tool, Runtime, ToolContext};

const CHILD: &str = "TACKLE_DURABLE_EXAMPLE_CHILD";
const RUN: &str = "restock-1";
const TASK: &str = "Restock apples, pears and plums.";
/// How long a process's hold on the run lasts unless renewed: after a crash, the run
/// can be resumed this long after the last renewal.
const LEASE: Duration = Duration::from_secs(2);

/// The ledger file: the outside world the writes land in.
static LEDGER: OnceLock<PathBuf> = OnceLock::new();

fn ledger() -> PathBuf {
    LEDGER.get().cloned().unwrap_or_default()
}

/// Orders stock from a supplier (a write: it lands in the ledger). The order id is its
/// idempotency key, as a supplier's API would take it.
#[tool(namespace = "stock", side_effects = write, idempotency_key = "order_id")]
fn order(order_id: String, item: String, boxes: u32) -> String {
    std::thread::sleep(Duration::from_millis(150));
    let line = format!("{order_id}: {boxes} box(es) of {item}");
    let seen = std::fs::read_to_string(ledger()).unwrap_or_default();
    if !seen.lines().any(|l| l == line) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(ledger())
            .expect("ledger");
        writeln!(file, "{line}").expect("write");
        file.sync_all().expect("sync");
    }
    format!("ordered {boxes} box(es) of {item}")
}

/// The model: one order per step, then the answer. What it says depends only on the
/// conversation, as a real model's recorded answers do on replay.
fn model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let step = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let item = ["apples", "pears", "plums"].get(step);
    Ok(match item {
        Some(item) => ChatResponse::calls(
            format!("Ordering {item}."),
            vec![ToolCallRequest {
                id: format!("call-{step}"),
                name: "stock_order".into(),
                arguments: json!({"order_id": format!("po-{step}"), "item": item, "boxes": 2}),
            }],
        ),
        None => ChatResponse::text("Ordered 2 boxes each of apples, pears and plums."),
    })
}

/// Opens (starts or resumes) the run and drives it to its end.
async fn drive(store: Arc<dyn RunStore>) -> Result<String, Box<dyn std::error::Error>> {
    let options = DurableOptions::default().with_lease(LEASE);
    let run = loop {
        match DurableRun::open_with(Arc::clone(&store), RUN, TASK, options.clone()) {
            Err(DurableError::Held { remaining_ms, .. }) => {
                let wait = Duration::from_millis(remaining_ms.max(1));
                println!(
                    "the run is still held by the killed process's lease for {:.1} s more \
                     (a lease keeps two processes from driving one run at once): waiting",
                    wait.as_secs_f64()
                );
                tokio::time::sleep(wait).await;
            }
            opened => break opened?,
        }
    };
    println!("attempt {} of run `{RUN}`", run.attempt());
    // The durable run makes its own run over the runtime: the journal is its cassette.
    let runtime = Arc::new(Runtime::from_inventory()?);
    let skill = ReactSkill::new(
        Arc::new(FunctionModel::new("stock-bot", model)),
        runtime.registry(),
        &["stock.order"],
    )?;
    // The program's own run: its model needs no grant, and the tool requires none.
    let state = run
        .drive(&runtime, &skill, &ToolContext::new(), None)
        .await?;
    Ok(state.final_answer.unwrap_or_default())
}

fn summary(store: &dyn RunStore) -> String {
    let journal = store.journal(RUN).unwrap_or_default();
    let finished = journal
        .iter()
        .filter(|e| matches!(e, JournalEntry::Finished { .. }))
        .count();
    format!(
        "{} journal entries, {finished} call(s) finished",
        journal.len()
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os(CHILD).is_some() {
        let _ = LEDGER.set(PathBuf::from(
            std::env::var_os("TACKLE_LEDGER").unwrap_or_default(),
        ));
        let store = Arc::new(SqliteStore::open(
            std::env::var_os("TACKLE_STORE").unwrap_or_default(),
        )?);
        drive(store).await?;
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("tackle-durable-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("runs.db");
    let ledger_file = dir.join("ledger.txt");
    let _ = LEDGER.set(ledger_file.clone());
    let mut child = Command::new(std::env::current_exe()?)
        .env(CHILD, "1")
        .env("TACKLE_STORE", &db)
        .env("TACKLE_LEDGER", &ledger_file)
        .spawn()?;
    println!("child {} runs `{TASK}`", child.id());
    // Kill it once two calls are done: mid-run.
    let started = Instant::now();
    loop {
        let done = SqliteStore::open(&db)
            .ok()
            .and_then(|s| s.journal(RUN).ok())
            .map_or(0, |j| {
                j.iter()
                    .filter(|e| matches!(e, JournalEntry::Finished { .. }))
                    .count()
            });
        if done >= 2 || started.elapsed() > Duration::from_secs(30) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill()?;
    child.wait()?;
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db)?);
    println!("killed it (SIGKILL): {}", summary(store.as_ref()));
    println!("ledger so far:\n{}", read(&ledger_file));

    // Resume here: what the journal holds is served, the rest runs live.
    let answer = drive(store.clone()).await?;
    println!("resumed to the end: {}", summary(store.as_ref()));
    println!("answer: {answer}");
    println!("ledger:\n{}", read(&ledger_file));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

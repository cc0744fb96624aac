//! Durable runs under attack: the ways a run could write twice or lose a decision,
//! each tried and each shown to cost nothing.
//!
//! * five processes resume one paused run at once: one drives it, the write lands
//!   once;
//! * a process dies holding a run: the run is held until its lease lapses, then taken
//!   over;
//! * an approval is used up by the call it approved: the model asking for the same
//!   refund again waits for a new decision; an approve and a reject of one request at
//!   once land one, and the other is refused;
//! * the journal cannot take a write's outcome: the run stops, the model is not asked
//!   again, and the resume does not pay again;
//! * a damaged store file (empty, one byte, one byte short) is refused when opened,
//!   naming the file; a journal shorter than its record says is refused at resume;
//! * a backup taken mid-run (6 of 12 payments), the run finished, the backup restored
//!   and resumed: no payment is made twice; each that may have been made after the
//!   backup waits for an operator;
//! * a copy of a store's main file alone, made while a process had it open, is
//!   refused when opened, naming its missing log;
//! * eight processes open one new store at the same moment: every open succeeds.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/ledger.rs"]
#[allow(dead_code)]
mod ledger;

use ledger::{append_line, ledger_lines};

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tackle::agent::model::{ChatRequest, ChatResponse, FunctionModel, Role, ToolCallRequest};
use tackle::agent::react::ReactSkill;
use tackle::durable::{
    Decision, DurableError, DurableRun, JournalEntry, MemoryStore, Resolution, RunRecord,
    RunStatus, RunStore, StoreError,
};
use tackle::{tool, Runtime, ToolContext};
use tackle_sqlite::SqliteStore;

const CHILD: &str = "TACKLE_ATTACK_CHILD";

/// Reads the balance (changes nothing).
#[tool(namespace = "bank", side_effects = read)]
fn balance() -> String {
    "1000".into()
}

/// Pays an order: no idempotency key, so a repeat would pay twice.
#[tool(namespace = "bank", side_effects = external)]
fn pay(order: String) -> String {
    std::thread::sleep(Duration::from_millis(20));
    append_line(&format!("pay {order}"));
    format!("paid {order}")
}

/// Refunds an order; every call needs approval.
#[tool(namespace = "bank", side_effects = external, needs_approval)]
fn refund(order: String) -> String {
    append_line(&format!("refund {order}"));
    format!("refunded {order}")
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest::new(id, name, arguments)
}

fn turn(request: &ChatRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// Reads the balance, pays o-1, answers.
fn payer(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    Ok(match turn(request) {
        0 => ChatResponse::calls(
            "Balance first.",
            vec![call("c1", "bank_balance", json!({}))],
        ),
        1 => ChatResponse::calls(
            "Paying o-1.",
            vec![call("c2", "bank_pay", json!({"order": "o-1"}))],
        ),
        _ => ChatResponse::text("Paid o-1."),
    })
}

fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory().expect("registry"))
}

fn skill(
    runtime: &Runtime,
    model: fn(&ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError>,
) -> ReactSkill {
    ReactSkill::new(
        Arc::new(FunctionModel::new("bank-bot", model)),
        runtime.registry(),
        &["bank.balance", "bank.pay", "bank.refund"],
    )
    .expect("skill")
}

fn ctx() -> ToolContext {
    ToolContext::new().with_grant("llm:*")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-attacks-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A child: waits for the common start, opens the run and drives it to its end.
/// Exit 0: it drove the run; 4: the run was held; 5: the run had ended. With
/// `TACKLE_OPEN_ONLY`, it only opens the store: exit 0, or 3 when the open failed.
fn child() -> ExitCode {
    let start: u64 = std::env::var("TACKLE_START_AT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if std::env::var_os("TACKLE_OPEN_ONLY").is_some() {
        let path = std::env::var_os("TACKLE_STORE").unwrap_or_default();
        std::thread::sleep(Duration::from_millis(start.saturating_sub(now_ms())));
        return match SqliteStore::open(path) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("open failed: {e}");
                ExitCode::from(3)
            }
        };
    }
    let store: Arc<dyn RunStore> = Arc::new(
        SqliteStore::open(std::env::var_os("TACKLE_STORE").unwrap_or_default()).expect("store"),
    );
    std::thread::sleep(Duration::from_millis(start.saturating_sub(now_ms())));
    let run = match DurableRun::open(store, "pay-1", "Pay o-1.") {
        Ok(run) => run,
        Err(DurableError::Held { .. }) => return ExitCode::from(4),
        Err(DurableError::Ended { .. }) => return ExitCode::from(5),
        Err(e) => panic!("{e}"),
    };
    if std::env::var_os("TACKLE_DIE_HOLDING").is_some() {
        // Dies without letting the run go (no destructor runs).
        std::process::exit(9);
    }
    let runtime = runtime();
    harness::tokio()
        .block_on(run.drive(&runtime, &skill(&runtime, payer), &ctx(), None))
        .expect("the run");
    ExitCode::SUCCESS
}

fn spawn(dir: &Path, start_at: u64) -> std::process::Child {
    Command::new(std::env::current_exe().expect("this test"))
        .env(CHILD, "1")
        .env("TACKLE_STORE", dir.join("runs.db"))
        .env("TACKLE_LEDGER", dir.join("ledger.txt"))
        .env("TACKLE_START_AT", start_at.to_string())
        .spawn()
        .expect("spawn a child")
}

/// A paused run "pay-1" in `dir`, its write still to come.
fn paused_run(dir: &Path) {
    std::env::set_var("TACKLE_LEDGER", dir.join("ledger.txt"));
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(dir.join("runs.db")).expect("store"));
    let run = DurableRun::start(store.clone(), "pay-1", "Pay o-1.").expect("start");
    let runtime = runtime();
    let state = harness::tokio()
        .block_on(run.drive(&runtime, &skill(&runtime, payer), &ctx(), Some(1)))
        .expect("one step");
    assert_eq!(state.step_index, 1);
    assert_eq!(
        store.load("pay-1").unwrap().unwrap().status,
        RunStatus::Paused
    );
    assert!(
        ledger_lines(&dir.join("ledger.txt")).is_empty(),
        "nothing paid yet"
    );
}

fn five_processes_resuming_one_run_pay_once() {
    let dir = temp("five");
    paused_run(&dir);
    let start = now_ms() + 700;
    let children: Vec<_> = (0..5).map(|_| spawn(&dir, start)).collect();
    let mut codes: Vec<i32> = children
        .into_iter()
        .map(|mut c| c.wait().expect("wait").code().unwrap_or(-1))
        .collect();
    codes.sort_unstable();
    println!("five resumers exited {codes:?} (0 drove, 4 held, 5 ended)");
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| [0, 4, 5].contains(c)), "{codes:?}");
    assert_eq!(
        ledger_lines(&dir.join("ledger.txt")),
        ["pay o-1"],
        "paid once"
    );
    let store = SqliteStore::open(dir.join("runs.db")).expect("store");
    let record = store.load("pay-1").unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Done);
    assert_eq!(record.attempts, 2, "one resume, by the one that drove");
    assert_eq!(record.lease, None, "let go when done");
    std::fs::remove_dir_all(&dir).ok();
}

fn a_run_whose_process_died_is_held_until_its_lease_lapses() {
    let dir = temp("died");
    paused_run(&dir);
    let status = Command::new(std::env::current_exe().expect("this test"))
        .env(CHILD, "1")
        .env("TACKLE_STORE", dir.join("runs.db"))
        .env("TACKLE_LEDGER", dir.join("ledger.txt"))
        .env("TACKLE_DIE_HOLDING", "1")
        .status()
        .expect("the child");
    assert_eq!(status.code(), Some(9));
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(dir.join("runs.db")).expect("store"));
    let remaining = match DurableRun::resume(store.clone(), "pay-1") {
        Err(DurableError::Held { remaining_ms, .. }) => remaining_ms,
        other => panic!("a run its dead owner holds was resumed: {other:?}"),
    };
    assert!(
        remaining > 20_000,
        "the default lease is 30 s: {remaining} ms left"
    );
    // A shorter wait: the test takes the run over by rewriting the lease's end, as
    // time passing would.
    let mut record = store.load("pay-1").unwrap().unwrap();
    if let Some(lease) = &mut record.lease {
        lease.until_ms = now_ms();
    }
    store.save(&record, &[]).unwrap();
    let run = DurableRun::resume(store.clone(), "pay-1").expect("taken over");
    let runtime = runtime();
    let end = harness::tokio()
        .block_on(run.drive(&runtime, &skill(&runtime, payer), &ctx(), None))
        .expect("the run ends");
    assert_eq!(end.final_answer.as_deref(), Some("Paid o-1."));
    assert_eq!(ledger_lines(&dir.join("ledger.txt")), ["pay o-1"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// Asks for the same refund twice, in two steps.
fn refunder(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    Ok(match turn(request) {
        0 => ChatResponse::calls(
            "Refunding o-1.",
            vec![call("r1", "bank_refund", json!({"order": "o-1"}))],
        ),
        1 => ChatResponse::calls(
            "Once more, to be sure.",
            vec![call("r2", "bank_refund", json!({"order": "o-1"}))],
        ),
        _ => ChatResponse::text("Refund handled."),
    })
}

fn an_approval_is_used_up_by_the_call_it_approved() {
    let dir = temp("approval");
    std::env::set_var("TACKLE_LEDGER", dir.join("ledger.txt"));
    let db = dir.join("runs.db");
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).expect("store"));
    let runtime = runtime();
    let tokio = harness::tokio();
    let drive = |run: DurableRun| {
        tokio
            .block_on(run.drive(&runtime, &skill(&runtime, refunder), &ctx(), None))
            .expect("a step")
    };
    drive(DurableRun::start(store.clone(), "refund-1", "Refund o-1.").expect("start"));
    let pending = DurableRun::pending_approvals(store.as_ref(), "refund-1").unwrap();
    assert_eq!(pending.len(), 1);
    DurableRun::decide(store.as_ref(), "refund-1", &pending[0], Decision::Approve).unwrap();
    // The approved call runs; the model asks for the same refund again: a new request.
    drive(DurableRun::resume(store.clone(), "refund-1").expect("resume"));
    assert_eq!(ledger_lines(&dir.join("ledger.txt")), ["refund o-1"]);
    let record = store.load("refund-1").unwrap().unwrap();
    assert_eq!(
        record.status,
        RunStatus::AwaitingApproval,
        "the repeat waits"
    );
    assert!(record.decisions[0].used, "the approval is used up");
    let again = DurableRun::pending_approvals(store.as_ref(), "refund-1").unwrap();
    assert_eq!(again, pending, "the same call, a new request");
    // Two operators at once, on their own connections: one approves, one rejects.
    let barrier = Barrier::new(2);
    let approved = AtomicUsize::new(0);
    let results: Vec<Result<(), DurableError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = [
            Decision::Approve,
            Decision::Reject {
                reason: "once is enough".into(),
            },
        ]
        .into_iter()
        .map(|decision| {
            let (barrier, db, again, approved) = (&barrier, &db, &again, &approved);
            scope.spawn(move || {
                let store = SqliteStore::open(db).expect("store");
                barrier.wait();
                let is_approve = decision == Decision::Approve;
                let result = DurableRun::decide(&store, "refund-1", &again[0], decision);
                if result.is_ok() && is_approve {
                    approved.fetch_add(1, Ordering::SeqCst);
                }
                result
            })
        })
        .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("operator"))
            .collect()
    });
    let landed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(landed, 1, "one decision lands: {results:?}");
    assert!(
        results
            .iter()
            .any(|r| matches!(r, Err(DurableError::NoSuchApproval { .. }))),
        "the other is refused: {results:?}"
    );
    let record = store.load("refund-1").unwrap().unwrap();
    assert_eq!(record.decisions.len(), 2, "{:?}", record.decisions);
    drive(DurableRun::resume(store.clone(), "refund-1").expect("resume"));
    let expected: &[&str] = if approved.load(Ordering::SeqCst) == 1 {
        &["refund o-1", "refund o-1"]
    } else {
        &["refund o-1"]
    };
    assert_eq!(ledger_lines(&dir.join("ledger.txt")), expected);
    assert_eq!(
        store.load("refund-1").unwrap().unwrap().status,
        RunStatus::Done
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A store whose journal refuses one entry (the `n`-th append), as a disk that filled
/// up or a lock held too long would.
struct Refuses {
    inner: SqliteStore,
    appends: AtomicUsize,
    refuse: usize,
}

impl RunStore for Refuses {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.inner.create(record)
    }
    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.inner.load(run_id)
    }
    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError> {
        self.inner.save(record, entries)
    }
    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        if self.appends.fetch_add(1, Ordering::SeqCst) + 1 == self.refuse {
            return Err(StoreError::Io {
                message: "database is locked".into(),
            });
        }
        self.inner.append(run_id, entry)
    }
    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.inner.journal(run_id)
    }
    fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.runs()
    }
}

static ASKED: AtomicUsize = AtomicUsize::new(0);

fn counted_payer(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    ASKED.fetch_add(1, Ordering::SeqCst);
    payer(request)
}

fn a_journal_that_cannot_take_an_outcome_stops_the_run() {
    let dir = temp("journal");
    std::env::set_var("TACKLE_LEDGER", dir.join("ledger.txt"));
    let db = dir.join("runs.db");
    // Appends: model 0 started, finished; balance started, finished; model 1
    // started, finished; pay started, finished (the 8th: refused).
    let store: Arc<dyn RunStore> = Arc::new(Refuses {
        inner: SqliteStore::open(&db).expect("store"),
        appends: AtomicUsize::new(0),
        refuse: 8,
    });
    let runtime = runtime();
    let tokio = harness::tokio();
    let run = DurableRun::start(store.clone(), "pay-2", "Pay o-1.").expect("start");
    ASKED.store(0, Ordering::SeqCst);
    match tokio.block_on(run.drive(&runtime, &skill(&runtime, counted_payer), &ctx(), None)) {
        Err(DurableError::Journal { message, .. }) => assert!(message.contains("locked")),
        other => panic!("expected the run to stop on its journal, got {other:?}"),
    }
    assert_eq!(
        ASKED.load(Ordering::SeqCst),
        2,
        "the model saw nothing of the failure"
    );
    assert_eq!(ledger_lines(&dir.join("ledger.txt")), ["pay o-1"]);
    match store.load("pay-2").unwrap().unwrap().status {
        RunStatus::Interrupted { error } => assert!(error.contains("locked"), "{error}"),
        other => panic!("expected interrupted, got {other:?}"),
    }
    drop(run);
    // The store is back: the payment's outcome is unknown, not run again.
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).expect("store"));
    let calls = match DurableRun::resume(store.clone(), "pay-2") {
        Err(DurableError::UnknownOutcome { calls, .. }) => calls,
        other => panic!("expected the payment in flight, got {other:?}"),
    };
    assert_eq!(calls[0].key, "bank.pay@1");
    DurableRun::resolve(
        store.as_ref(),
        "pay-2",
        &calls[0],
        Resolution::Succeeded {
            output: json!("paid o-1"),
        },
    )
    .unwrap();
    let run = DurableRun::resume(store.clone(), "pay-2").expect("resume");
    let end = tokio
        .block_on(run.drive(&runtime, &skill(&runtime, counted_payer), &ctx(), None))
        .expect("the run ends");
    assert_eq!(end.final_answer.as_deref(), Some("Paid o-1."));
    assert_eq!(
        ledger_lines(&dir.join("ledger.txt")),
        ["pay o-1"],
        "paid once"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn damaged_stores_are_refused() {
    let dir = temp("damaged");
    std::env::set_var("TACKLE_LEDGER", dir.join("ledger.txt"));
    paused_run(&dir);
    let db = dir.join("runs.db");
    assert!(
        !dir.join("runs.db-wal").exists(),
        "closed: the log is in the file"
    );
    let whole = std::fs::read(&db).expect("the file");
    for (what, bytes) in [
        ("empty", &whole[..0]),
        ("one byte", &whole[..1]),
        ("one byte short", &whole[..whole.len() - 1]),
        ("one page short", &whole[..whole.len() - 4096]),
    ] {
        let copy = dir.join(format!("{}.db", what.replace(' ', "-")));
        std::fs::write(&copy, bytes).expect("copy");
        match SqliteStore::open(&copy) {
            Err(StoreError::Corrupt { message }) => {
                assert!(
                    message.contains(&copy.display().to_string()),
                    "{what}: {message}"
                );
                println!("{what}: refused: {message}");
            }
            other => panic!("{what}: opened: {other:?}"),
        }
    }
    // A journal that lost entries the record counted is refused at resume.
    let memory = Arc::new(MemoryStore::default());
    let store: Arc<dyn RunStore> = memory.clone();
    let run = DurableRun::start(store.clone(), "short", "Pay o-1.").expect("start");
    let runtime = runtime();
    harness::tokio()
        .block_on(run.drive(&runtime, &skill(&runtime, payer), &ctx(), Some(1)))
        .expect("one step");
    drop(run);
    let record = store.load("short").unwrap().unwrap();
    let journal = store.journal("short").unwrap();
    assert_eq!(record.journaled, journal.len() as u64);
    let lossy = Arc::new(MemoryStore::default());
    let mut copy = record.clone();
    copy.version = 0;
    lossy.create(&copy).unwrap();
    for entry in &journal[..journal.len() - 1] {
        lossy.append("short", entry).unwrap();
    }
    match DurableRun::resume(lossy, "short") {
        Err(DurableError::Store(StoreError::Corrupt { message })) => {
            assert!(message.contains("missing"), "{message}")
        }
        other => panic!("a short journal was resumed: {other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Pays o-1 to o-12, one a step, then answers.
fn twelve_payments(
    request: &ChatRequest,
) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    let n = turn(request);
    Ok(if n < 12 {
        ChatResponse::calls(
            format!("Paying o-{}.", n + 1),
            vec![call(
                &format!("p{n}"),
                "bank_pay",
                json!({"order": format!("o-{}", n + 1)}),
            )],
        )
    } else {
        ChatResponse::text("Paid all twelve.")
    })
}

/// Resumes `run_id` and drives it to its end or its first held write.
fn resume_to_end(store: &Arc<dyn RunStore>, run_id: &str) -> Result<(), DurableError> {
    let run = DurableRun::resume(store.clone(), run_id)?;
    let runtime = runtime();
    harness::tokio()
        .block_on(run.drive(
            &runtime,
            &skill(&runtime, twelve_payments).with_max_steps(20),
            &ctx(),
            None,
        ))
        .map(|_| ())
}

/// The attack: a store backed up mid-run (6 of 12 payments), the run finished, the
/// backup restored and resumed. Before restores were marked, 4 payments were made
/// twice. Now each payment the resumed run makes waits as an unknown outcome, and an
/// operator who resolves them (made) finishes the run with no payment made again.
fn a_restored_backup_does_not_pay_again() {
    let dir = temp("restore");
    let ledger = dir.join("ledger.txt");
    std::env::set_var("TACKLE_LEDGER", &ledger);
    let db = dir.join("runs.db");
    let backup = dir.join("backup.db");
    {
        let sqlite = Arc::new(SqliteStore::open(&db).expect("store"));
        let store: Arc<dyn RunStore> = sqlite.clone();
        let run = DurableRun::start(store.clone(), "pay-12", "Pay twelve.").expect("start");
        let runtime = runtime();
        harness::tokio()
            .block_on(run.drive(
                &runtime,
                &skill(&runtime, twelve_payments).with_max_steps(20),
                &ctx(),
                Some(6),
            ))
            .expect("six steps");
        drop(run);
        assert_eq!(ledger_lines(&ledger).len(), 6);
        sqlite.backup(&backup).expect("backup");
        assert_eq!(sqlite.backed_up_at_ms().unwrap(), None, "the store itself");
        resume_to_end(&store, "pay-12").expect("the run ends");
        assert_eq!(ledger_lines(&ledger).len(), 12);
    }
    // Restored: the backup replaces the store.
    for end in ["", "-wal", "-shm"] {
        std::fs::remove_file(format!("{}{end}", db.display())).ok();
    }
    std::fs::copy(&backup, &db).expect("restore");
    let sqlite = Arc::new(SqliteStore::open(&db).expect("the restored store"));
    let taken = sqlite.backed_up_at_ms().unwrap().expect("a backup says so");
    let store: Arc<dyn RunStore> = sqlite.clone();
    let record = store.load("pay-12").unwrap().unwrap();
    assert_eq!(
        record.restored.as_ref().map(|r| r.backed_up_at_ms),
        Some(taken)
    );
    assert_eq!(record.status, RunStatus::Paused);
    let mut held = Vec::new();
    for round in 0..12 {
        match resume_to_end(&store, "pay-12") {
            Err(DurableError::UnknownOutcome { calls, .. }) => {
                assert_eq!(calls.len(), 1, "round {round}: {calls:?}");
                assert_eq!(calls[0].key, "bank.pay@1");
                let order = calls[0].input["order"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                // The operator checks the bank: it was paid after the backup.
                DurableRun::resolve(
                    &*store,
                    "pay-12",
                    &calls[0],
                    Resolution::Succeeded {
                        output: json!(format!("paid {order}")),
                    },
                )
                .expect("resolve");
                held.push(order);
            }
            Ok(()) => break,
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    println!("held for the operator after the restore: {held:?}");
    assert_eq!(held, ["o-7", "o-8", "o-9", "o-10", "o-11", "o-12"]);
    assert_eq!(
        ledger_lines(&ledger).len(),
        12,
        "no payment made twice: {:?}",
        ledger_lines(&ledger)
    );
    assert_eq!(
        store.load("pay-12").unwrap().unwrap().status,
        RunStatus::Done
    );
    drop(store);
    drop(sqlite);

    // The same backup restored again: an operator asks for one payment to be made
    // again (it was not made), then accepts the restore; the run writes again.
    let again = dir.join("again.db");
    std::fs::copy(&backup, &again).expect("restore again");
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&again).expect("store"));
    let calls = match resume_to_end(&store, "pay-12") {
        Err(DurableError::UnknownOutcome { calls, .. }) => calls,
        other => panic!("the first write after the backup ran: {other:?}"),
    };
    DurableRun::resolve(&*store, "pay-12", &calls[0], Resolution::Retry).expect("retry");
    match resume_to_end(&store, "pay-12") {
        Err(DurableError::UnknownOutcome { calls, .. }) => {
            assert_eq!(calls[0].input["order"], "o-8")
        }
        other => panic!("o-8 ran unchecked: {other:?}"),
    }
    assert_eq!(
        ledger_lines(&ledger).len(),
        13,
        "o-7, asked for, made again"
    );
    DurableRun::accept_restore(&*store, "pay-12").expect("accept");
    let calls = match DurableRun::resume(store.clone(), "pay-12") {
        Err(DurableError::UnknownOutcome { calls, .. }) => calls,
        other => panic!("o-8 still waits for its resolution: {other:?}"),
    };
    DurableRun::resolve(&*store, "pay-12", &calls[0], Resolution::Retry).expect("retry");
    resume_to_end(&store, "pay-12").expect("accepted: the run goes on");
    assert_eq!(
        ledger_lines(&ledger).len(),
        18,
        "o-8 to o-12 made in this timeline"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The attack: a `runs.db` copied without its `-wal` file while a process had it
/// open, then resumed: it paid again. Now the copy is refused, naming the log.
fn a_copy_of_the_main_file_alone_is_refused() {
    let dir = temp("wal");
    std::env::set_var("TACKLE_LEDGER", dir.join("ledger.txt"));
    let db = dir.join("runs.db");
    let sqlite = Arc::new(SqliteStore::open(&db).expect("store"));
    let store: Arc<dyn RunStore> = sqlite.clone();
    let run = DurableRun::start(store.clone(), "pay-1", "Pay o-1.").expect("start");
    let runtime = runtime();
    harness::tokio()
        .block_on(run.drive(&runtime, &skill(&runtime, payer), &ctx(), None))
        .expect("the run");
    drop(run);
    assert!(
        dir.join("runs.db-wal").exists(),
        "open: its log is beside it"
    );
    let copy = dir.join("copy.db");
    std::fs::copy(&db, &copy).expect("copy the main file alone");
    match SqliteStore::open(&copy) {
        Err(StoreError::Corrupt { message }) => {
            assert!(message.contains("copy.db-wal"), "{message}");
            println!("a copy of the main file alone: refused: {message}");
        }
        other => panic!("a copy without its log was opened: {other:?}"),
    }
    // Closed, the store's log is in its file: a copy of the file alone is whole.
    drop(store);
    drop(sqlite);
    assert!(
        !dir.join("runs.db-wal").exists(),
        "closed: the log is in the file"
    );
    std::fs::copy(&db, &copy).expect("copy the closed store");
    let copied = SqliteStore::open(&copy).expect("a whole copy opens");
    assert_eq!(
        copied.load("pay-1").unwrap().unwrap().status,
        RunStatus::Done
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The attack: eight processes opening one new `runs.db` at the same moment (27 of
/// 48 opens failed before opening was one transaction). Five rounds of eight.
fn eight_processes_open_one_new_store_at_once() {
    let mut failed = 0;
    for round in 0..5 {
        let dir = temp(&format!("openers-{round}"));
        let start = now_ms() + 400;
        let children: Vec<_> = (0..8)
            .map(|_| {
                Command::new(std::env::current_exe().expect("this test"))
                    .env(CHILD, "1")
                    .env("TACKLE_OPEN_ONLY", "1")
                    .env("TACKLE_STORE", dir.join("runs.db"))
                    .env("TACKLE_START_AT", start.to_string())
                    .spawn()
                    .expect("spawn a child")
            })
            .collect();
        failed += children
            .into_iter()
            .map(|mut c| c.wait().expect("wait").code())
            .filter(|code| *code != Some(0))
            .count();
        std::fs::remove_dir_all(&dir).ok();
    }
    println!("40 opens by 8 processes at once: {failed} failed");
    assert_eq!(failed, 0);
}

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    harness::run(&[
        (
            "five_processes_resuming_one_run_pay_once",
            five_processes_resuming_one_run_pay_once,
        ),
        (
            "a_run_whose_process_died_is_held_until_its_lease_lapses",
            a_run_whose_process_died_is_held_until_its_lease_lapses,
        ),
        (
            "an_approval_is_used_up_by_the_call_it_approved",
            an_approval_is_used_up_by_the_call_it_approved,
        ),
        (
            "a_journal_that_cannot_take_an_outcome_stops_the_run",
            a_journal_that_cannot_take_an_outcome_stops_the_run,
        ),
        ("damaged_stores_are_refused", damaged_stores_are_refused),
        (
            "a_restored_backup_does_not_pay_again",
            a_restored_backup_does_not_pay_again,
        ),
        (
            "a_copy_of_the_main_file_alone_is_refused",
            a_copy_of_the_main_file_alone_is_refused,
        ),
        (
            "eight_processes_open_one_new_store_at_once",
            eight_processes_open_one_new_store_at_once,
        ),
    ])
}

//! Durable runs in one process: pause at a step boundary and resume from the store
//! with fresh objects (as another process would), the same result as an uninterrupted
//! run; the journal written ahead of every call; calls of unknown outcome stopping a
//! resume until resolved; the journal exported as a cassette that replays offline;
//! and a store that cannot take an entry failing the call before the tool runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::agent::model::{ChatRequest, ChatResponse, FunctionModel, Role, ToolCallRequest};
use tackle::agent::react::{ReactSkill, ReactState};
use tackle::durable::{
    DurableError, DurableRun, JournalEntry, MemoryStore, Resolution, RunRecord, RunStatus,
    RunStore, StoreError,
};
use tackle::replay::{Cassette, CassetteConfig, Mode};
use tackle::{tool, Executor, Runtime, ToolContext};
use tackle_sqlite::SqliteStore;

static SHIPPED: AtomicUsize = AtomicUsize::new(0);
/// The tests count shipments in one counter: one test at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Ships an order (counted, so the test sees every real execution).
#[tool(namespace = "shop", side_effects = external)]
fn ship(order: String) -> String {
    SHIPPED.fetch_add(1, Ordering::SeqCst);
    format!("shipped {order}")
}

/// Looks an order up.
#[tool(namespace = "shop", side_effects = read)]
fn status(order: String) -> String {
    format!("{order}: packed")
}

fn model(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    let turn = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let call = |id: &str, name: &str, order: &str| ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: json!({"order": order}),
    };
    Ok(match turn {
        0 => ChatResponse::calls("Checking.", vec![call("a", "shop_status", "o-1")]),
        1 => ChatResponse::calls("Shipping.", vec![call("b", "shop_ship", "o-1")]),
        2 => ChatResponse::calls("And the next.", vec![call("c", "shop_ship", "o-2")]),
        _ => ChatResponse::text("Shipped o-1 and o-2."),
    })
}

fn skill(run: &DurableRun) -> ReactSkill {
    let runtime = Runtime::from_inventory()
        .unwrap()
        .with_cassette(run.cassette());
    ReactSkill::new(
        Arc::new(FunctionModel::new("shopkeeper", model)),
        Arc::new(Executor::new(Arc::new(runtime))),
        &["shop.status", "shop.ship"],
    )
    .unwrap()
}

fn ctx() -> ToolContext {
    ToolContext::new().with_grant("llm:*")
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-durable-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The uninterrupted run, in memory.
async fn uninterrupted() -> ReactState {
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run = DurableRun::start(store, "whole", "Ship o-1 and o-2.").unwrap();
    run.drive(&skill(&run), &ctx(), None).await.unwrap()
}

#[tokio::test]
async fn a_paused_run_resumes_from_the_store_to_the_same_result_running_nothing_twice() {
    let _one = SERIAL.lock().await;
    let whole = uninterrupted().await;
    assert!(whole.done);
    let dir = temp("pause");
    let db = dir.join("runs.db");

    // "Process" one: two steps, then a pause at the step boundary.
    SHIPPED.store(0, Ordering::SeqCst);
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let run = DurableRun::start(store.clone(), "r-1", "Ship o-1 and o-2.").unwrap();
    let paused = run.drive(&skill(&run), &ctx(), Some(2)).await.unwrap();
    assert!(!paused.done);
    assert_eq!(paused.step_index, 2);
    assert_eq!(paused.stopped.as_deref(), Some("paused after 2 step(s)"));
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 1, "o-1 shipped");
    let record = store.load("r-1").unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Paused);
    assert_eq!(record.attempts, 1);
    // The record is data: its state serializes, and reads back the same.
    let wire = serde_json::to_string(&record).unwrap();
    let back: RunRecord = serde_json::from_str(&wire).unwrap();
    assert_eq!(back, record);
    assert_eq!(back.state.unwrap().trajectory.len(), 2);
    // Write-ahead: every call started and finished, in order.
    let journal = store.journal("r-1").unwrap();
    let kinds: Vec<&str> = journal
        .iter()
        .map(|e| match e {
            JournalEntry::Started { .. } => "started",
            JournalEntry::Finished { .. } => "finished",
            JournalEntry::Resolved { .. } => "resolved",
        })
        .collect();
    assert_eq!(kinds.len(), 8, "2 model calls and 2 tool calls: {kinds:?}");
    assert!(
        kinds.chunks(2).all(|p| p == ["started", "finished"]),
        "{kinds:?}"
    );
    drop((run, store));

    // "Process" two: a fresh store handle, runtime and skill.
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let run = DurableRun::resume(store.clone(), "r-1").unwrap();
    assert_eq!(run.attempt(), 2);
    let end = run.drive(&skill(&run), &ctx(), None).await.unwrap();
    assert_eq!(end.final_answer, whole.final_answer);
    assert_eq!(end.trajectory, whole.trajectory);
    assert_eq!(end.tool_calls, whole.tool_calls);
    assert_eq!(
        SHIPPED.load(Ordering::SeqCst),
        2,
        "o-1 was not shipped again"
    );
    assert_eq!(store.load("r-1").unwrap().unwrap().status, RunStatus::Done);
    match DurableRun::resume(store.clone(), "r-1") {
        Err(DurableError::Ended { status, .. }) => assert_eq!(status, RunStatus::Done),
        other => panic!("a done run does not resume: {other:?}"),
    }
    match DurableRun::start(store.clone(), "r-1", "again") {
        Err(DurableError::Store(StoreError::Exists { run_id })) => assert_eq!(run_id, "r-1"),
        other => panic!("ids are unique: {other:?}"),
    }

    // The journal exports as a cassette that replays the run offline.
    let exported = dir.join("r-1.json");
    run.export(&exported).unwrap();
    let replay = Cassette::open(
        &exported,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let runtime = Runtime::from_inventory()
        .unwrap()
        .with_cassette(replay.clone());
    let offline = ReactSkill::new(
        Arc::new(FunctionModel::new("shopkeeper", |_: &ChatRequest| {
            Err(tackle::agent::model::ModelError::Failed {
                message: "offline".into(),
            })
        })),
        Arc::new(Executor::new(Arc::new(runtime))),
        &["shop.status", "shop.ship"],
    )
    .unwrap();
    let replayed = offline.run("Ship o-1 and o-2.", &ctx()).await.unwrap();
    assert_eq!(replayed.final_answer, whole.final_answer);
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 2, "replay ships nothing");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_write_in_flight_stops_the_resume_until_an_operator_resolves_it() {
    let _one = SERIAL.lock().await;
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run = DurableRun::start(store.clone(), "r-2", "Ship o-1 and o-2.").unwrap();
    // The journal of a process that died while `shop.ship` ran: started, no outcome.
    let attempt = run.attempt();
    let paused = run.drive(&skill(&run), &ctx(), Some(1)).await.unwrap();
    assert_eq!(paused.step_index, 1);
    store
        .append(
            "r-2",
            &JournalEntry::Started {
                attempt,
                call: tackle::replay::CallStarted {
                    call: 90,
                    key: "shop.ship@1".into(),
                    kind: tackle::replay::InteractionKind::Tool,
                    policy: tackle::spec::ReplayPolicy::MustStub,
                    input: json!({"order": "o-1"}),
                    rerun_safe: false,
                },
            },
        )
        .unwrap();
    let calls = match DurableRun::resume(store.clone(), "r-2") {
        Err(DurableError::UnknownOutcome { calls, .. }) => calls,
        other => panic!("expected an unknown outcome, got {other:?}"),
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].key, "shop.ship@1");
    assert!(matches!(
        store.load("r-2").unwrap().unwrap().status,
        RunStatus::UnknownOutcome { .. }
    ));
    let mut other = calls[0].clone();
    other.call = 91;
    assert!(matches!(
        DurableRun::resolve(store.as_ref(), "r-2", &other, Resolution::Retry),
        Err(DurableError::NotInFlight { call: 91, .. })
    ));
    // The operator finds the order shipped: the run gets that outcome, and resumes.
    DurableRun::resolve(
        store.as_ref(),
        "r-2",
        &calls[0],
        Resolution::Succeeded {
            output: json!("shipped o-1"),
        },
    )
    .unwrap();
    assert_eq!(
        store.load("r-2").unwrap().unwrap().status,
        RunStatus::Paused
    );
    SHIPPED.store(0, Ordering::SeqCst);
    let run = DurableRun::resume(store.clone(), "r-2").unwrap();
    let end = run.drive(&skill(&run), &ctx(), None).await.unwrap();
    assert_eq!(end.final_answer.as_deref(), Some("Shipped o-1 and o-2."));
    assert_eq!(
        SHIPPED.load(Ordering::SeqCst),
        1,
        "o-1's outcome came from the operator; only o-2 shipped"
    );
    assert_eq!(end.tool_calls[1].result, Some(json!("shipped o-1")));
}

/// A store whose journal refuses every entry.
#[derive(Default)]
struct Full(MemoryStore);

impl RunStore for Full {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.0.create(record)
    }
    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.0.load(run_id)
    }
    fn save(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.0.save(record)
    }
    fn append(&self, _: &str, _: &JournalEntry) -> Result<(), StoreError> {
        Err(StoreError::Io {
            message: "disk full".into(),
        })
    }
    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.0.journal(run_id)
    }
    fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.0.runs()
    }
}

#[tokio::test]
async fn a_journal_that_cannot_take_a_call_stops_it_before_it_runs() {
    let _one = SERIAL.lock().await;
    let store: Arc<dyn RunStore> = Arc::new(Full::default());
    let run = DurableRun::start(store.clone(), "r-3", "Ship o-1.").unwrap();
    let runtime = Runtime::from_inventory()
        .unwrap()
        .with_cassette(run.cassette());
    let before = SHIPPED.load(Ordering::SeqCst);
    let err = runtime
        .call("shop.ship", json!({"order": "o-9"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tackle::ToolErrorKind::Execution);
    assert!(err.to_string().contains("disk full"), "{err}");
    assert_eq!(SHIPPED.load(Ordering::SeqCst), before, "nothing shipped");
    // The agent's run fails, and says so in the store.
    assert!(run.drive(&skill(&run), &ctx(), None).await.is_err());
    assert!(matches!(
        store.load("r-3").unwrap().unwrap().status,
        RunStatus::Failed { .. }
    ));
}

//! Durable runs in one process: pause at a step boundary and resume from the store
//! with fresh objects (as another process would), the same result as an uninterrupted
//! run; the journal written ahead of every call; calls of unknown outcome stopping a
//! resume until resolved; the journal exported as a cassette that replays offline;
//! and a store that cannot take an entry failing the call before the tool runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::agent::model::{ChatRequest, ChatResponse, FunctionModel, Role, ToolCallRequest};
use tackle::agent::react::{ReactSkill, ReactState, StopReason};
use tackle::durable::{
    Decision, DurableError, DurableRun, JournalEntry, MemoryStore, Resolution, RunRecord,
    RunStatus, RunStore, StoreError,
};
use tackle::replay::{Cassette, CassetteConfig, Mode};
use tackle::{tool, Agent, Run, Runtime, ToolContext, ToolError};
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

/// Every time the model is asked.
static ASKED: AtomicUsize = AtomicUsize::new(0);

fn model(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    ASKED.fetch_add(1, Ordering::SeqCst);
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

/// A fresh runtime (as another process would build): a durable run's `drive` makes
/// its run over it, with the journal as its cassette and the run's approver.
fn inventory() -> Arc<Runtime> {
    Arc::new(Runtime::from_inventory_in(module_path!()).unwrap())
}

fn skill(runtime: &Runtime) -> ReactSkill {
    ReactSkill::new(
        Arc::new(FunctionModel::new("shopkeeper", model)),
        runtime.registry(),
        &["shop.status", "shop.ship"],
    )
    .unwrap()
}

/// The shopkeeper as an agent (for a run that is not durable).
fn agent() -> Agent {
    Agent::new(FunctionModel::new("shopkeeper", model)).tools(["shop.status", "shop.ship"])
}

/// The caller: the program itself (its model needs no grant; the tools require none).
fn ctx() -> ToolContext {
    ToolContext::new()
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
    let runtime = inventory();
    run.drive(&runtime, &skill(&runtime), &ctx(), None)
        .await
        .unwrap()
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
    let runtime = inventory();
    let paused = run
        .drive(&runtime, &skill(&runtime), &ctx(), Some(2))
        .await
        .unwrap();
    assert!(!paused.done);
    assert_eq!(paused.step_index, 2);
    assert_eq!(
        paused.stop_reason,
        Some(StopReason::Paused { after_steps: 2 })
    );
    assert_eq!(
        paused
            .stop_reason
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("paused after 2 step(s)")
    );
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 1, "o-1 shipped");
    // An attempt drives once: going on is a resume (a second drive would replay
    // nothing it ran and run it again).
    assert!(matches!(
        run.drive(&runtime, &skill(&runtime), &ctx(), None).await,
        Err(DurableError::Driven { .. })
    ));
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 1, "nothing ran again");
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
            JournalEntry::Progress { .. } => "progress",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds.len(), 8, "2 model calls and 2 tool calls: {kinds:?}");
    assert!(
        kinds.chunks(2).all(|p| p == ["started", "finished"]),
        "{kinds:?}"
    );
    drop((run, store, runtime));

    // "Process" two: a fresh store handle, runtime and skill.
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let run = DurableRun::resume(store.clone(), "r-1").unwrap();
    assert_eq!(run.attempt(), 2);
    let runtime = inventory();
    let end = run
        .drive(&runtime, &skill(&runtime), &ctx(), None)
        .await
        .unwrap();
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
    // Every tool it calls has its schema fingerprint, those of the first attempt too
    // (noted in the run's record): what `cargo tackle cassette verify` requires.
    let file = tackle::replay::load(&exported).unwrap();
    let called: std::collections::BTreeSet<&str> = file
        .interactions
        .iter()
        .filter(|i| i.kind == tackle::replay::InteractionKind::Tool)
        .map(|i| i.key.as_str())
        .collect();
    assert_eq!(
        file.tools
            .keys()
            .map(String::as_str)
            .collect::<std::collections::BTreeSet<_>>(),
        called
    );
    assert_eq!(store.load("r-1").unwrap().unwrap().tools, file.tools);
    let replay = Cassette::open(
        &exported,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let runtime = inventory();
    let offline = Agent::new(FunctionModel::new("shopkeeper", |_: &ChatRequest| {
        Err(tackle::agent::model::ModelError::Failed {
            message: "offline".into(),
        })
    }))
    .tools(["shop.status", "shop.ship"]);
    let replaying = Run::new(&runtime).with_cassette(replay);
    let replayed = offline
        .run(&replaying, "Ship o-1 and o-2.")
        .context(&ctx())
        .await
        .unwrap()
        .state;
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
    let runtime = inventory();
    let paused = run
        .drive(&runtime, &skill(&runtime), &ctx(), Some(1))
        .await
        .unwrap();
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
    let runtime = inventory();
    let end = run
        .drive(&runtime, &skill(&runtime), &ctx(), None)
        .await
        .unwrap();
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
    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError> {
        self.0.save(record, entries)
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
    let runtime = inventory();
    let before = SHIPPED.load(Ordering::SeqCst);
    let err = run
        .run(&runtime)
        .call("shop.ship", json!({"order": "o-9"}), &ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), tackle::ToolErrorKind::Execution);
    assert!(err.to_string().contains("disk full"), "{err}");
    assert_eq!(SHIPPED.load(Ordering::SeqCst), before, "nothing shipped");
    // The attempt's journal failed: it runs nothing more, and the run says why.
    match run.drive(&runtime, &skill(&runtime), &ctx(), None).await {
        Err(DurableError::Journal { message, .. }) => assert!(message.contains("disk full")),
        other => panic!("expected a journal error, got {other:?}"),
    }
    match store.load("r-3").unwrap().unwrap().status {
        RunStatus::Interrupted { error } => assert!(error.contains("disk full"), "{error}"),
        other => panic!("expected interrupted, got {other:?}"),
    }
}

static REFUNDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

/// Refunds an order (every call needs approval).
#[tool(namespace = "bank", side_effects = external, needs_approval)]
fn refund(order: String, cents: u64) -> String {
    REFUNDS.lock().unwrap().push(format!("{order}:{cents}"));
    format!("refunded {cents} on {order}")
}

/// Finds an order's customer.
#[tool(namespace = "bank", side_effects = read)]
fn customer(order: String) -> String {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    format!("{order}: ada")
}

/// Asks for two refunds and a look-up in one step, then reports what came back.
fn refunder(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    let results: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    if !results.is_empty() {
        return Ok(ChatResponse::text(results.join(" | ")));
    }
    let call = |id: &str, name: &str, arguments: serde_json::Value| ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments,
    };
    Ok(ChatResponse::calls(
        "Refunding both.",
        vec![
            call("l", "bank_customer", json!({"order": "o-1"})),
            call("a", "bank_refund", json!({"order": "o-1", "cents": 1000})),
            call("b", "bank_refund", json!({"order": "o-2", "cents": 99900})),
        ],
    ))
}

/// The refunder's skill; the durable run asks its own approver (the decisions in the
/// store) about the refunds.
fn approving_skill(runtime: &Runtime) -> ReactSkill {
    ReactSkill::new(
        Arc::new(FunctionModel::new("refunder", refunder)),
        runtime.registry(),
        &["bank.refund", "bank.customer"],
    )
    .unwrap()
}

#[tokio::test]
async fn approvals_wait_across_processes_and_each_decision_binds_its_own_call() {
    let _one = SERIAL.lock().await;
    REFUNDS.lock().unwrap().clear();
    LOOKUPS.store(0, Ordering::SeqCst);
    let dir = temp("approvals");
    let db = dir.join("runs.db");

    // Process A: the step asks for two approvals; neither refund runs.
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let run = DurableRun::start(store.clone(), "refunds", "Refund o-1 and o-2.").unwrap();
    let runtime = inventory();
    let stopped = run
        .drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    assert!(!stopped.done);
    let record = store.load("refunds").unwrap().unwrap();
    assert_eq!(record.status, RunStatus::AwaitingApproval);
    assert_eq!(
        record.pending.len(),
        2,
        "both approvals of the parallel step"
    );
    assert!(REFUNDS.lock().unwrap().is_empty());
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 1);
    match DurableRun::resume(store.clone(), "refunds") {
        Err(DurableError::AwaitingApproval { pending, .. }) => assert_eq!(pending.len(), 2),
        other => panic!("a run waiting for decisions does not resume: {other:?}"),
    }
    drop((run, store, runtime));

    // Process B: an operator decides, request by request.
    let store = SqliteStore::open(&db).unwrap();
    let pending = DurableRun::pending_approvals(&store, "refunds").unwrap();
    let small = pending
        .iter()
        .find(|p| p.arguments.contains("1000"))
        .unwrap()
        .clone();
    let large = pending
        .iter()
        .find(|p| p.arguments.contains("99900"))
        .unwrap()
        .clone();
    assert_eq!(small.key, "bank.refund@1");
    assert_eq!(small.arguments, r#"{"cents":1000,"order":"o-1"}"#);
    // A decision names its request exactly: other arguments are no request.
    let mut forged = small.clone();
    forged.arguments = r#"{"cents":99900,"order":"o-1"}"#.into();
    assert!(matches!(
        DurableRun::decide(&store, "refunds", &forged, Decision::Approve),
        Err(DurableError::NoSuchApproval { .. })
    ));
    DurableRun::decide(&store, "refunds", &small, Decision::Approve).unwrap();
    assert_eq!(
        store.load("refunds").unwrap().unwrap().status,
        RunStatus::AwaitingApproval,
        "one request still waits"
    );
    DurableRun::decide(
        &store,
        "refunds",
        &large,
        Decision::Reject {
            reason: "too large for an automatic refund".into(),
        },
    )
    .unwrap();
    assert_eq!(
        store.load("refunds").unwrap().unwrap().status,
        RunStatus::Paused
    );
    drop(store);

    // Process C: resumed, the approved refund runs, the rejected one is an observation.
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).unwrap());
    let run = DurableRun::resume(store.clone(), "refunds").unwrap();
    let runtime = inventory();
    let end = run
        .drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    assert!(end.done);
    assert_eq!(*REFUNDS.lock().unwrap(), ["o-1:1000"]);
    assert_eq!(
        LOOKUPS.load(Ordering::SeqCst),
        1,
        "the look-up came from the journal"
    );
    let answer = end.final_answer.unwrap();
    assert!(answer.contains("refunded 1000 on o-1"), "{answer}");
    assert!(
        answer.contains("too large for an automatic refund"),
        "{answer}"
    );
    let rejected = end
        .tool_calls
        .iter()
        .find(|c| c.arguments["cents"] == 99900)
        .unwrap();
    assert_eq!(
        rejected.error_kind,
        Some(tackle::ToolErrorKind::ApprovalDenied)
    );
    assert_eq!(
        store.load("refunds").unwrap().unwrap().status,
        RunStatus::Done
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A run that checks its decisions' signatures: decisions signed with its key are
/// taken; a signed rejection turned into an approval in the store refuses its call at
/// the door (`ApprovalDenied`, with the audit event naming the failed check), and the
/// attempt ends with `ForgedDecision`, the run failed. Nothing the forged decision
/// covers runs.
#[tokio::test]
async fn a_signed_decision_edited_in_the_store_is_refused() {
    use tackle::audit::{GateDecision, MemoryAudit};
    use tackle::durable::{ApprovalKey, DurableOptions};
    let _one = SERIAL.lock().await;
    REFUNDS.lock().unwrap().clear();
    let key = || ApprovalKey::new("ops-2026", *b"a secret of the operators, 32+ b").unwrap();
    let options = || DurableOptions::new().with_approval_key(key());
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run =
        DurableRun::start_with(store.clone(), "signed", "Refund o-1 and o-2.", options()).unwrap();
    let runtime = inventory();
    run.drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    drop(run);
    let pending = DurableRun::pending_approvals(&*store, "signed").unwrap();
    assert_eq!(pending.len(), 2);
    for request in &pending {
        let decision = if request.arguments.contains("99900") {
            Decision::Reject {
                reason: "too large".into(),
            }
        } else {
            Decision::Approve
        };
        DurableRun::decide_signed(&*store, "signed", request, decision, &key()).unwrap();
    }
    // Someone with write access to the store turns the rejection into an approval.
    let mut record = store.load("signed").unwrap().unwrap();
    let rejected = record
        .decisions
        .iter_mut()
        .find(|d| d.request.arguments.contains("99900"))
        .unwrap();
    assert!(rejected.signature.is_some());
    rejected.decision = Decision::Approve;
    store.save(&record, &[]).unwrap();

    let audit = Arc::new(MemoryAudit::new());
    let runtime = Arc::new(
        Runtime::from_inventory_in(module_path!())
            .unwrap()
            .with_audit(audit.clone()),
    );
    let run = DurableRun::resume_with(store.clone(), "signed", options()).unwrap();
    let ended = run
        .drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await;
    match ended {
        Err(DurableError::ForgedDecision { run_id, key, why }) => {
            assert_eq!(run_id, "signed");
            assert_eq!(key, "bank.refund@1");
            assert_eq!(why, tackle::durable::SignatureError::Mismatch);
        }
        other => panic!("a forged decision ends the attempt: {other:?}"),
    }
    assert_eq!(
        *REFUNDS.lock().unwrap(),
        ["o-1:1000"],
        "the signed approval ran; the forged one did not"
    );
    let refused: Vec<_> = audit
        .events()
        .into_iter()
        .filter(|e| matches!(&e.gates.approval, GateDecision::Refused(why) if why.contains("not signed by the approval key `ops-2026`")))
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", audit.events());
    assert_eq!(
        refused[0].error.as_ref().map(|e| e.kind),
        Some(tackle::ToolErrorKind::ApprovalDenied)
    );
    assert!(matches!(
        store.load("signed").unwrap().unwrap().status,
        RunStatus::Failed { error } if error.contains("not signed by its approval key")
    ));
}

/// Rules decide before a person is asked: a small refund is approved and a large one
/// denied by the policy, each decision recorded with its reason and signed with the
/// run's key; nothing waits. A policy that panics leaves the call to a person.
#[tokio::test]
async fn a_policy_decides_before_a_person_and_its_decisions_are_recorded() {
    use tackle::durable::{ApprovalKey, DurableOptions, PolicyDecision};
    let _one = SERIAL.lock().await;
    REFUNDS.lock().unwrap().clear();
    let key = ApprovalKey::new("ops-2026", *b"a secret of the operators, 32+ b").unwrap();
    let rules = |request: &tackle::approval::ApprovalRequest| {
        let cents = request.input["cents"].as_u64().unwrap_or(u64::MAX);
        if request.key.starts_with("bank.refund@") && cents <= 5_000 {
            PolicyDecision::Approve {
                reason: "a refund of at most 50.00".into(),
            }
        } else if cents > 50_000 {
            PolicyDecision::Deny {
                reason: "over the automatic limit".into(),
            }
        } else {
            PolicyDecision::Ask
        }
    };
    let options = DurableOptions::new()
        .with_approval_key(key.clone())
        .with_approval_policy(rules);
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run =
        DurableRun::start_with(store.clone(), "ruled", "Refund o-1 and o-2.", options).unwrap();
    let runtime = inventory();
    let end = run
        .drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    assert!(end.done, "nothing waits for a person");
    assert_eq!(*REFUNDS.lock().unwrap(), ["o-1:1000"]);
    assert!(
        end.final_answer
            .unwrap()
            .contains("over the automatic limit"),
        "the model reads the policy's reason"
    );
    let record = store.load("ruled").unwrap().unwrap();
    let mut by: Vec<&str> = record
        .decisions
        .iter()
        .map(|d| d.decided_by.as_deref().unwrap_or("a person"))
        .collect();
    by.sort_unstable();
    assert_eq!(
        by,
        [
            "policy: a refund of at most 50.00",
            "policy: over the automatic limit"
        ]
    );
    for decision in &record.decisions {
        assert_eq!(key.verify("ruled", decision), Ok(()), "{decision:?}");
    }

    // A policy that panics asks a person: the refunds wait.
    REFUNDS.lock().unwrap().clear();
    let panics =
        |_: &tackle::approval::ApprovalRequest| -> PolicyDecision { panic!("the rules broke") };
    let options = DurableOptions::new().with_approval_policy(panics);
    let run = DurableRun::start_with(
        store.clone(),
        "broken-rules",
        "Refund o-1 and o-2.",
        options,
    )
    .unwrap();
    run.drive(&runtime, &approving_skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    assert_eq!(
        store.load("broken-rules").unwrap().unwrap().status,
        RunStatus::AwaitingApproval
    );
    assert!(REFUNDS.lock().unwrap().is_empty());
}

/// A shipment's outcome, as the shipping skill answers it.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, tackle::SkillState)]
struct Shipment {
    order: String,
    shipped: bool,
}

#[tokio::test]
async fn a_skill_runs_durably_and_its_answer_is_read_as_its_state() {
    use tackle::agent::skill::{Skill, SkillKind};
    let _one = SERIAL.lock().await;
    let skill = Skill::builder::<Shipment>("shipper", "1.0.0", SkillKind::Agent)
        .with_description("Ships an order.")
        .with_tools(&["shop.ship"])
        .build()
        .unwrap();
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run = DurableRun::start(store.clone(), "skill-run", "Ship o-7.").unwrap();
    let runtime = inventory();
    let model = Arc::new(tackle::agent::model::ScriptedModel::new([
        ChatResponse::calls(
            "",
            vec![ToolCallRequest {
                id: "s".into(),
                name: "shop_ship".into(),
                arguments: json!({"order": "o-7"}),
            }],
        ),
        ChatResponse::text(r#"{"order": "o-7", "shipped": true}"#),
    ]));
    let done = run
        .drive_skill::<Shipment>(&runtime, &skill, model, &ctx())
        .await
        .unwrap();
    assert_eq!(done.state.order, "o-7");
    assert!(done.state.shipped);
    assert_eq!(done.run.tool_calls.len(), 1);
    let record = store.load("skill-run").unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Done);
    assert_eq!(record.state.unwrap().step_index, 2);
}

#[tokio::test]
async fn the_memory_store_passes_the_conformance_kit() {
    let report = kit::<MemoryStore>().await;
    report.assert_passed();
    assert_eq!(
        report.passed.len(),
        tackle::durable::conformance::CHECKS.len()
    );
}

/// A store that writes over whatever is there, as stores did before records had
/// versions: the kit must catch it.
#[derive(Default)]
struct Careless(MemoryStore);

impl RunStore for Careless {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.0.create(record)
    }
    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.0.load(run_id)
    }
    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError> {
        let mut record = record.clone();
        // Last writer wins.
        record.version = self.0.load(&record.run_id)?.map_or(0, |r| r.version);
        self.0.save(&record, entries)
    }
    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        self.0.append(run_id, entry)
    }
    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.0.journal(run_id)
    }
    fn runs(&self) -> Result<Vec<String>, StoreError> {
        self.0.runs()
    }
}

#[tokio::test]
async fn the_conformance_kit_catches_a_store_whose_saves_overwrite_each_other() {
    let report = kit::<Careless>().await;
    let failed: Vec<&str> = report.failed.iter().map(|(name, _)| *name).collect();
    assert!(failed.contains(&"versioned saves"), "{failed:?}");
    assert!(
        failed.contains(&"a save and its entries are one"),
        "{failed:?}"
    );
    assert!(
        report.passed.contains(&"journal order"),
        "{:?}",
        report.passed
    );
}

#[tokio::test]
async fn the_journal_holds_each_message_once_and_exports_whole_requests() {
    let _one = SERIAL.lock().await;
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run = DurableRun::start(store.clone(), "r-once", "Ship o-1 and o-2.").unwrap();
    let runtime = inventory();
    run.drive(&runtime, &skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    // Each model call is journaled as what it added to the previous one, with a
    // digest chained over the deltas.
    let inputs: Vec<serde_json::Value> = store
        .journal("r-once")
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            JournalEntry::Started { call, .. } if call.key.starts_with("llm.") => Some(call.input),
            _ => None,
        })
        .collect();
    assert_eq!(inputs.len(), 4);
    let mut total = 0;
    let mut digests = std::collections::HashSet::new();
    for (n, input) in inputs.iter().enumerate() {
        assert_eq!(input["extends"], json!(total), "call {n}: {input}");
        let added = input["messages"].as_array().unwrap().len();
        // The system prompt and the task; then each turn and its tool result.
        assert_eq!(added, 2, "call {n}: {input}");
        assert_eq!(
            input.get("tools").is_some(),
            n == 0,
            "tools only when they change"
        );
        assert!(digests.insert(input["digest"].as_str().unwrap().to_owned()));
        total += added;
    }
    // Exported, the requests are whole again: a plain replay matches them.
    let path = temp("once").join("r-once.json");
    DurableRun::export_journal(store.as_ref(), "r-once", &path).unwrap();
    let file = tackle::replay::load(&path).unwrap();
    let sizes: Vec<usize> = file
        .interactions
        .iter()
        .filter(|i| i.key.starts_with("llm."))
        .map(|i| i.input["messages"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [2, 4, 6, 8]);
    assert!(file.interactions[0].input["tools"].is_array());
    let replay = Cassette::open(
        &path,
        CassetteConfig::new()
            .with_mode(Mode::Replay)
            .with_env_overrides(false),
    )
    .unwrap();
    let offline = Run::new(&runtime).with_cassette(replay);
    let state = agent()
        .run(&offline, "Ship o-1 and o-2.")
        .context(&ctx())
        .await
        .unwrap()
        .state;
    assert_eq!(state.final_answer.as_deref(), Some("Shipped o-1 and o-2."));
}

/// The conformance kit over stores of type `S`, one per name.
async fn kit<S: RunStore + Default + 'static>() -> tackle::durable::conformance::Report {
    let stores: std::sync::Mutex<std::collections::HashMap<String, Arc<S>>> = Default::default();
    let open = |name: &str| -> Arc<dyn RunStore> {
        stores
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .clone()
    };
    tackle::durable::conformance::check(&open).await
}

#[tokio::test]
async fn a_run_journaled_with_whole_requests_resumes_without_asking_again() {
    let _one = SERIAL.lock().await;
    // A run journaled before requests went as deltas: its model calls hold whole
    // requests. Made here from a run of today, its model inputs made whole again.
    let today: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let run = DurableRun::start(today.clone(), "old", "Ship o-1 and o-2.").unwrap();
    let runtime = inventory();
    run.drive(&runtime, &skill(&runtime), &ctx(), Some(2))
        .await
        .unwrap();
    drop(run);
    let path = temp("old").join("old.json");
    DurableRun::export_journal(today.as_ref(), "old", &path).unwrap();
    let whole: std::collections::HashMap<u64, serde_json::Value> = tackle::replay::load(&path)
        .unwrap()
        .interactions
        .into_iter()
        .map(|i| (i.call, i.input))
        .collect();
    let old: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let mut record = today.load("old").unwrap().unwrap();
    record.version = 0;
    old.create(&record).unwrap();
    for mut entry in today.journal("old").unwrap() {
        match &mut entry {
            JournalEntry::Started { call, .. } if call.key.starts_with("llm.") => {
                call.input = whole[&call.call].clone();
            }
            JournalEntry::Finished { interaction, .. } if interaction.key.starts_with("llm.") => {
                interaction.input = whole[&interaction.call].clone();
            }
            _ => {}
        }
        old.append("old", &entry).unwrap();
    }
    // Resumed today: the two answered turns are served, not asked again.
    ASKED.store(0, Ordering::SeqCst);
    SHIPPED.store(0, Ordering::SeqCst);
    let run = DurableRun::resume(old.clone(), "old").unwrap();
    let end = run
        .drive(&runtime, &skill(&runtime), &ctx(), None)
        .await
        .unwrap();
    assert_eq!(end.final_answer.as_deref(), Some("Shipped o-1 and o-2."));
    assert_eq!(
        ASKED.load(Ordering::SeqCst),
        2,
        "only the turns after the pause"
    );
    assert_eq!(
        SHIPPED.load(Ordering::SeqCst),
        1,
        "o-1 shipped before; only o-2 now"
    );
    // And it goes on journaling whole requests, as it began.
    let latest = old
        .journal("old")
        .unwrap()
        .into_iter()
        .rev()
        .find_map(|e| match e {
            JournalEntry::Started { call, .. } if call.key.starts_with("llm.") => Some(call.input),
            _ => None,
        })
        .unwrap();
    assert!(
        latest.get("digest").is_none() && latest["messages"].is_array(),
        "{latest}"
    );
}

/// A remote job: started once, then waited for; after a crash, the call made again is
/// handed the job's id and waits for that job. `STARTS` counts jobs started.
fn remote_job(
    starts: Arc<AtomicUsize>,
    hang: Arc<std::sync::atomic::AtomicBool>,
) -> tackle::registry::DynamicTool {
    let spec = tackle::ToolSpec::new(
        "remote",
        "job",
        "1",
        tackle::SideEffects::External,
        "Runs a job somewhere else.",
    );
    tackle::registry::DynamicTool::new(spec, move |ctx: ToolContext, _input| {
        let (starts, hang) = (Arc::clone(&starts), Arc::clone(&hang));
        async move {
            let job = match ctx.resumed_checkpoint().and_then(|n| n["job"].as_str()) {
                Some(job) => job.to_owned(),
                None => {
                    let n = starts.fetch_add(1, Ordering::SeqCst) + 1;
                    let job = format!("job-{n}");
                    ctx.checkpoint(json!({ "job": job }))
                        .map_err(|e| e.to_string())?;
                    job
                }
            };
            if hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            Ok::<_, String>(json!(format!("done {job}")))
        }
    })
}

/// Runs one attempt of `run-job` until the job's call has kept a note in this attempt,
/// then drops it, as a crash would (its journal: the call started, with a note).
async fn crash_after_note(store: &Arc<dyn RunStore>, runtime: &Arc<Runtime>) {
    let durable = DurableRun::open(Arc::clone(store), "run-job", "job").unwrap();
    let attempt = durable.attempt();
    let run = durable.run(runtime);
    let call = tokio::spawn(async move {
        let _ = run.call("remote.job", json!({}), &ToolContext::new()).await;
    });
    let noted = |store: &Arc<dyn RunStore>| {
        store
            .journal("run-job")
            .unwrap()
            .iter()
            .any(|e| matches!(e, JournalEntry::Progress { attempt: a, .. } if *a == attempt))
    };
    while !noted(store) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    call.abort();
    let _ = call.await;
    drop(durable);
}

#[tokio::test]
async fn a_checkpointed_call_goes_on_from_its_newest_note_across_two_crashes() {
    let starts = Arc::new(AtomicUsize::new(0));
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut registry = tackle::Registry::new();
    registry
        .register(remote_job(Arc::clone(&starts), Arc::clone(&hang)))
        .unwrap();
    let runtime = Arc::new(Runtime::new(registry));
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());

    crash_after_note(&store, &runtime).await; // attempt 1 starts job-1
    crash_after_note(&store, &runtime).await; // attempt 2 goes on with job-1
    assert_eq!(starts.load(Ordering::SeqCst), 1, "the job started once");

    hang.store(false, Ordering::SeqCst);
    let durable = DurableRun::open(Arc::clone(&store), "run-job", "job").unwrap();
    assert_eq!(durable.attempt(), 3);
    let run = durable.run(&runtime);
    let ctx = ToolContext::new();
    assert_eq!(
        run.call("remote.job", json!({}), &ctx).await.unwrap(),
        json!("done job-1")
    );
    // The same call made again later in the run is a new job: no stale note.
    assert_eq!(
        run.call("remote.job", json!({}), &ctx).await.unwrap(),
        json!("done job-2")
    );
    assert_eq!(durable.finish(Ok(())).unwrap(), RunStatus::Done);
    assert_eq!(starts.load(Ordering::SeqCst), 2);
}

/// The door tells a model completion from another effect by the operation's effect
/// type, not by its key: a journal marks a completion safe to re-run after a crash,
/// and an `external` effect whose key merely starts with `llm.` not. The completion's
/// outcome stays in its own types through the door; the journal holds its JSON view.
#[tokio::test]
async fn the_journal_knows_a_completion_by_its_kind_not_its_key() {
    use std::borrow::Cow;
    use tackle::call::{Effect, Operation};
    use tackle::secrets::Scrubber;

    /// A completion whose reply is a word and whose error is a text.
    struct Word;
    impl Effect for Word {
        type Output = String;
        type Error = String;
        const RERUN_SAFE: bool = true;
        fn view(output: &String) -> Result<Cow<'_, serde_json::Value>, String> {
            Ok(Cow::Owned(json!({ "word": output })))
        }
        fn from_view(view: serde_json::Value) -> Result<String, String> {
            view["word"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("not a word: {view}"))
        }
        fn error_view<'e>(error: &'e String, key: &str) -> Cow<'e, ToolError> {
            Cow::Owned(ToolError::Execution {
                key: key.to_owned(),
                message: error.clone(),
            })
        }
        fn from_error(error: ToolError) -> String {
            error.to_string()
        }
        fn scrub(outcome: &mut Result<String, String>, scrubber: &Scrubber<'_>, keep: bool) {
            match outcome {
                Ok(word) if !keep => {
                    scrubber.text(word);
                }
                Ok(_) => {}
                Err(text) => {
                    scrubber.text(text);
                }
            }
        }
    }

    let _one = SERIAL.lock().await;
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
    let durable = DurableRun::start(store.clone(), "r-kind", "kinds").unwrap();
    let runtime = inventory();
    let run = durable.run(&runtime);
    let ctx = ToolContext::new().with_grant("*");
    let spec = || {
        tackle::ToolSpec::new(
            "llm.fake",
            "complete",
            "m",
            tackle::SideEffects::External,
            "An effect that looks like a completion.",
        )
    };
    let effect = Operation::new(spec());
    assert!(!effect.rerun_safe());
    let out = run
        .perform(
            &effect,
            || json!({"q": "effect"}),
            &ctx,
            || async { Ok(json!("effect")) },
        )
        .await
        .unwrap();
    assert_eq!(out, json!("effect"));
    let completion = Operation::<Word>::typed(spec());
    assert!(completion.rerun_safe());
    let word: String = run
        .perform(
            &completion,
            || json!({"q": "completion"}),
            &ctx,
            || async { Ok("completion".to_owned()) },
        )
        .await
        .unwrap();
    assert_eq!(word, "completion");
    let started: Vec<(serde_json::Value, bool)> = store
        .journal("r-kind")
        .unwrap()
        .into_iter()
        .filter_map(|entry| match entry {
            JournalEntry::Started { call, .. } => Some((call.input, call.rerun_safe)),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            (json!({"q": "effect"}), false),
            (json!({"q": "completion"}), true)
        ]
    );
    // The typed outcome reached the journal as its view, and nowhere else as JSON.
    let finished: Vec<String> = store
        .journal("r-kind")
        .unwrap()
        .into_iter()
        .filter_map(|entry| match entry {
            JournalEntry::Finished { interaction, .. } => {
                Some(serde_json::to_string(&interaction.outcome).unwrap())
            }
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 2);
    assert!(
        finished[1].contains(r#"{"word":"completion"}"#),
        "{}",
        finished[1]
    );
}

//! A conformance kit for run stores: the checks any [`RunStore`] must pass.
//!
//! A store is more than a place to put bytes: durable runs rely on it to keep the
//! journal's order, to refuse a save made over a record someone else changed since
//! (so two operators' decisions both land, and two processes cannot both take a run),
//! to write a record and its journal entries at once, and to say so with the right
//! [`StoreError`]. [`check`] runs every check, each on a store of its own that `open`
//! gives by name: `open(name)` makes the store `name` the first time, and gives
//! another handle on that same store (another connection, as another process would
//! have) each time after, so the checks of concurrent writers are what they say. A
//! store crate calls it from its own tests:
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//! use tackle::durable::{conformance, MemoryStore, RunStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Memory stores by name: a second `open` of a name is the same store.
//! let stores: Mutex<HashMap<String, Arc<MemoryStore>>> = Mutex::default();
//! let open = |name: &str| -> Arc<dyn RunStore> {
//!     stores.lock().unwrap().entry(name.to_owned()).or_default().clone()
//! };
//! let report = conformance::check(&open).await;
//! report.assert_passed();
//! assert_eq!(report.passed.len(), conformance::CHECKS.len());
//! # }
//! ```
//!
//! The checks ([`CHECKS`]): records and ids; journal order; versioned saves; a save
//! and its entries as one; concurrent saves (none lost); concurrent appends
//! (serialized, none lost); a crash between `started` and `finished`; approvals
//! (decided at once by two operators); one owner at a time (five
//! processes resume one run, one wins); a lapsed lease taken over; export as a
//! cassette. Each uses its own store, named after the check.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{json, Value};
use tackle_core::call::Runtime;
use tackle_core::context::ToolContext;
use tackle_core::registry::{DynamicTool, Registry};
use tackle_core::replay::{CallStarted, InteractionKind};
use tackle_core::spec::{ReplayPolicy, SideEffects, ToolSpec};

use super::{
    Decision, DurableError, DurableOptions, DurableRun, InFlight, JournalEntry, PendingApproval,
    Resolution, RunRecord, RunStatus, RunStore, StoreError,
};

/// The names of the checks, in the order [`check`] runs them.
pub const CHECKS: &[&str] = &[
    "records and ids",
    "journal order",
    "versioned saves",
    "a save and its entries are one",
    "concurrent saves lose nothing",
    "concurrent appends are serialized",
    "a crash between started and finished",
    "approvals",
    "one owner at a time",
    "a lapsed lease is taken over",
    "export",
];

/// What [`check`] found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The checks that passed.
    pub passed: Vec<&'static str>,
    /// The checks that failed, each with what was wrong.
    pub failed: Vec<(&'static str, String)>,
}

impl Report {
    /// Whether every check passed.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// Panics, listing each failed check, unless every check passed: for a test.
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(
            self.is_ok(),
            "the store failed {} of {} conformance checks:\n{}",
            self.failed.len(),
            CHECKS.len(),
            self.failed
                .iter()
                .map(|(name, why)| format!("- {name}: {why}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

type Outcome = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Opens the store called by a name: see the [module docs](self).
pub type Open<'a> = &'a (dyn Fn(&str) -> Arc<dyn RunStore> + Sync);

/// Runs every check of the kit, each on a store of its own from `open`. See the
/// [module docs](self).
pub async fn check(open: Open<'_>) -> Report {
    let mut report = Report::default();
    let sync_checks: [fn(Open<'_>, &str) -> Outcome; 10] = [
        records_and_ids,
        journal_order,
        versioned_saves,
        save_and_entries,
        concurrent_saves,
        concurrent_appends,
        crash_in_flight,
        approvals,
        one_owner,
        lapsed_lease,
    ];
    for (n, (name, check)) in CHECKS.iter().zip(sync_checks).enumerate() {
        match check(open, &format!("kit-{n}")) {
            Ok(()) => report.passed.push(name),
            Err(why) => report.failed.push((name, why)),
        }
    }
    match export(&open("kit-10")).await {
        Ok(()) => report.passed.push(CHECKS[10]),
        Err(why) => report.failed.push((CHECKS[10], why)),
    }
    report
}

/// Runs `work(i)` for `i` in `0..n` on `n` threads, each with its own handle on the
/// store `name`, all released at once; the outcomes in order (a panic as `Err`).
fn at_once<T: Send>(
    open: Open<'_>,
    name: &str,
    n: usize,
    work: impl Fn(usize, Arc<dyn RunStore>) -> Result<T, String> + Sync,
) -> Vec<Result<T, String>> {
    let barrier = Barrier::new(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    let store = open(name);
                    barrier.wait();
                    work(i, store)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    })
}

/// The call numbers of the run's journal, in order.
fn numbers(store: &dyn RunStore, run_id: &str) -> Result<Vec<u64>, String> {
    Ok(store
        .journal(run_id)
        .map_err(err)?
        .iter()
        .map(number)
        .collect())
}

fn started(call: u64, key: &str, rerun_safe: bool) -> JournalEntry {
    JournalEntry::Started {
        attempt: 1,
        call: CallStarted {
            call,
            key: key.to_owned(),
            kind: InteractionKind::Tool,
            policy: ReplayPolicy::MustStub,
            input: json!({"n": call}),
            rerun_safe,
        },
    }
}

fn number(entry: &JournalEntry) -> u64 {
    match entry {
        JournalEntry::Started { call, .. } => call.call,
        JournalEntry::Finished { interaction, .. } => interaction.call,
        JournalEntry::Resolved { call, .. } | JournalEntry::Progress { call, .. } => *call,
    }
}

fn records_and_ids(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    ensure!(
        store.load("kit-none").map_err(err)?.is_none(),
        "a missing run loads as a run"
    );
    for id in ["kit-b", "kit-a"] {
        store.create(&RunRecord::new(id, "task")).map_err(err)?;
    }
    let loaded = store
        .load("kit-a")
        .map_err(err)?
        .ok_or("kit-a was not kept")?;
    ensure!(
        loaded.task == "task" && loaded.version == 0,
        "kit-a reads back as {loaded:?}"
    );
    match store.create(&RunRecord::new("kit-a", "again")) {
        Err(StoreError::Exists { run_id }) if run_id == "kit-a" => {}
        other => {
            return Err(format!(
                "a second create of kit-a gave {other:?}, not Exists"
            ))
        }
    }
    let ids = store.runs().map_err(err)?;
    ensure!(
        ids == ["kit-a", "kit-b"],
        "runs() is {ids:?}, not the sorted ids"
    );
    Ok(())
}

fn journal_order(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    store
        .create(&RunRecord::new("kit-order", "task"))
        .map_err(err)?;
    for n in 0..100 {
        store
            .append("kit-order", &started(n, "kit.tool@1", false))
            .map_err(err)?;
    }
    let numbers = numbers(store.as_ref(), "kit-order")?;
    ensure!(
        numbers == (0..100).collect::<Vec<_>>(),
        "the journal reads back as {numbers:?}"
    );
    Ok(())
}

fn versioned_saves(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    store
        .create(&RunRecord::new("kit-version", "task"))
        .map_err(err)?;
    let mut record = store.load("kit-version").map_err(err)?.ok_or("not kept")?;
    record.attempts = 2;
    store.save(&record, &[]).map_err(err)?;
    let saved = store.load("kit-version").map_err(err)?.ok_or("lost")?;
    ensure!(
        saved.version == 1 && saved.attempts == 2,
        "after one save: {saved:?}"
    );
    record.attempts = 3; // still version 0: stale
    match store.save(&record, &[]) {
        Err(StoreError::Conflict {
            stored: 1,
            saved: 0,
            ..
        }) => {}
        other => {
            return Err(format!(
                "a save over version 0 of a record at 1 gave {other:?}"
            ))
        }
    }
    let kept = store.load("kit-version").map_err(err)?.ok_or("lost")?;
    ensure!(
        kept.attempts == 2,
        "a refused save changed the record: {kept:?}"
    );
    match store.save(&RunRecord::new("kit-nobody", "task"), &[]) {
        Err(StoreError::NotFound { .. }) => Ok(()),
        other => Err(format!("saving a run that does not exist gave {other:?}")),
    }
}

fn save_and_entries(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    store
        .create(&RunRecord::new("kit-atomic", "task"))
        .map_err(err)?;
    let stale = store.load("kit-atomic").map_err(err)?.ok_or("not kept")?;
    store.save(&stale, &[]).map_err(err)?;
    let entries = [
        started(1, "kit.tool@1", false),
        started(2, "kit.tool@1", false),
    ];
    ensure!(
        matches!(
            store.save(&stale, &entries),
            Err(StoreError::Conflict { .. })
        ),
        "a stale save with entries was not refused"
    );
    ensure!(
        store.journal("kit-atomic").map_err(err)?.is_empty(),
        "a refused save appended its entries"
    );
    let fresh = store.load("kit-atomic").map_err(err)?.ok_or("lost")?;
    store.save(&fresh, &entries).map_err(err)?;
    let numbers = numbers(store.as_ref(), "kit-atomic")?;
    ensure!(
        numbers == [1, 2],
        "a save's entries read back as {numbers:?}"
    );
    Ok(())
}

fn concurrent_saves(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    const WRITERS: usize = 4;
    const EACH: u32 = 25;
    store
        .create(&RunRecord::new("kit-race", "task"))
        .map_err(err)?;
    let failures: Vec<String> = at_once(open, name, WRITERS, |_, store| {
        for _ in 0..EACH {
            loop {
                let mut record = store.load("kit-race").map_err(err)?.ok_or("lost")?;
                record.attempts += 1;
                match store.save(&record, &[]) {
                    Ok(()) => break,
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        Ok(())
    })
    .into_iter()
    .filter_map(Result::err)
    .collect();
    ensure!(failures.is_empty(), "writers failed: {failures:?}");
    let record = store.load("kit-race").map_err(err)?.ok_or("lost")?;
    let expected = 1 + WRITERS as u32 * EACH;
    ensure!(
        record.attempts == expected,
        "{} increments landed of {}: saves overwrote each other",
        record.attempts - 1,
        expected - 1
    );
    Ok(())
}

fn concurrent_appends(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    const WRITERS: u64 = 4;
    const EACH: u64 = 50;
    store
        .create(&RunRecord::new("kit-appends", "task"))
        .map_err(err)?;
    let failures: Vec<String> = at_once(open, name, WRITERS as usize, |w, store| {
        for i in 0..EACH {
            let call = w as u64 * 1000 + i;
            store
                .append("kit-appends", &started(call, "kit.tool@1", false))
                .map_err(err)?;
        }
        Ok(())
    })
    .into_iter()
    .filter_map(Result::err)
    .collect();
    ensure!(failures.is_empty(), "appends failed: {failures:?}");
    let numbers = numbers(store.as_ref(), "kit-appends")?;
    ensure!(
        numbers.len() as u64 == WRITERS * EACH,
        "{} entries of {}",
        numbers.len(),
        WRITERS * EACH
    );
    for w in 0..WRITERS {
        let mine: Vec<u64> = numbers.iter().copied().filter(|n| n / 1000 == w).collect();
        ensure!(
            mine == (0..EACH).map(|i| w * 1000 + i).collect::<Vec<_>>(),
            "writer {w}'s entries are out of order: {mine:?}"
        );
    }
    Ok(())
}

fn crash_in_flight(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    let run = DurableRun::start(Arc::clone(store), "kit-crash", "task").map_err(err)?;
    // The journal of a process that died with two calls running: a read (safe to
    // run again) and a write with no idempotency key.
    store
        .append("kit-crash", &started(0, "kit.read@1", true))
        .map_err(err)?;
    store
        .append("kit-crash", &started(1, "kit.write@1", false))
        .map_err(err)?;
    run.release().map_err(err)?;
    drop(run);
    let calls = match DurableRun::resume(Arc::clone(store), "kit-crash") {
        Err(DurableError::UnknownOutcome { calls, .. }) => calls,
        other => return Err(format!("resume gave {other:?}, not UnknownOutcome")),
    };
    ensure!(
        calls.len() == 1 && calls[0].key == "kit.write@1",
        "in flight and unsafe: {calls:?}"
    );
    let record = store.load("kit-crash").map_err(err)?.ok_or("lost")?;
    ensure!(
        matches!(record.status, RunStatus::UnknownOutcome { .. }),
        "the status is {:?}",
        record.status
    );
    let other = InFlight {
        call: 7,
        ..calls[0].clone()
    };
    ensure!(
        matches!(
            DurableRun::resolve(store.as_ref(), "kit-crash", &other, Resolution::Retry),
            Err(DurableError::NotInFlight { call: 7, .. })
        ),
        "a call not in flight was resolved"
    );
    DurableRun::resolve(store.as_ref(), "kit-crash", &calls[0], Resolution::Retry).map_err(err)?;
    let record = store.load("kit-crash").map_err(err)?.ok_or("lost")?;
    ensure!(
        record.status == RunStatus::Paused,
        "after resolving: {:?}",
        record.status
    );
    let resumed = DurableRun::resume(Arc::clone(store), "kit-crash").map_err(err)?;
    ensure!(
        resumed.attempt() == 2,
        "the resume is attempt {}",
        resumed.attempt()
    );
    Ok(())
}

fn approvals(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    let mut record = RunRecord::new("kit-approvals", "task");
    record.status = RunStatus::AwaitingApproval;
    record.pending = (0..2)
        .map(|n| PendingApproval {
            key: "kit.pay@1".into(),
            arguments: format!("{{\"n\":{n}}}"),
            binding: format!("{n:016x}"),
        })
        .collect();
    store.create(&record).map_err(err)?;
    let results = at_once(open, name, 2, |i, store| {
        DurableRun::decide(
            store.as_ref(),
            "kit-approvals",
            &record.pending[i],
            Decision::Approve,
        )
        .map_err(err)
    });
    ensure!(
        results.iter().all(Result::is_ok),
        "two decisions at once: {results:?}"
    );
    let saved = store.load("kit-approvals").map_err(err)?.ok_or("lost")?;
    ensure!(
        saved.pending.is_empty() && saved.decisions.len() == 2,
        "after two decisions at once: {} pending, {} decided",
        saved.pending.len(),
        saved.decisions.len()
    );
    ensure!(
        saved.status == RunStatus::Paused,
        "the status is {:?}",
        saved.status
    );
    ensure!(
        matches!(
            DurableRun::decide(
                store.as_ref(),
                "kit-approvals",
                &record.pending[0],
                Decision::Reject {
                    reason: "late".into()
                }
            ),
            Err(DurableError::NoSuchApproval { .. })
        ),
        "a request was decided twice"
    );
    Ok(())
}

fn one_owner(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    let run = DurableRun::start(Arc::clone(store), "kit-owner", "task").map_err(err)?;
    ensure!(
        matches!(
            DurableRun::resume(Arc::clone(store), "kit-owner"),
            Err(DurableError::Held { .. })
        ),
        "a run held by its starter was resumed by another"
    );
    run.release().map_err(err)?;
    drop(run);
    const RESUMERS: usize = 5;
    let won = AtomicUsize::new(0);
    let outcomes: Vec<String> = at_once(open, name, RESUMERS, |_, store| {
        Ok(match DurableRun::resume(store, "kit-owner") {
            Ok(run) => {
                won.fetch_add(1, Ordering::SeqCst);
                // Holds the run while the others try.
                std::thread::sleep(Duration::from_millis(50));
                drop(run);
                "won".to_owned()
            }
            Err(DurableError::Held { .. }) => "held".to_owned(),
            Err(e) => e.to_string(),
        })
    })
    .into_iter()
    .map(|o| o.unwrap_or_else(|e| e))
    .collect();
    ensure!(
        won.load(Ordering::SeqCst) == 1
            && outcomes.iter().filter(|o| *o == "held").count() == RESUMERS - 1,
        "{RESUMERS} resumers at once: {outcomes:?}"
    );
    Ok(())
}

fn lapsed_lease(open: Open<'_>, name: &str) -> Outcome {
    let store = &open(name);
    let lease = Duration::from_millis(100);
    let crashed = DurableRun::start_with(
        Arc::clone(store),
        "kit-lease",
        "task",
        DurableOptions::new()
            .with_lease(lease)
            .with_holder("crashed"),
    )
    .map_err(err)?;
    // The process dies: its lease is never released.
    std::mem::forget(crashed);
    match DurableRun::resume(Arc::clone(store), "kit-lease") {
        Err(DurableError::Held { holder, .. }) if holder == "crashed" => {}
        other => return Err(format!("a run within its lease was resumed: {other:?}")),
    }
    std::thread::sleep(lease + Duration::from_millis(50));
    let taken = DurableRun::resume(Arc::clone(store), "kit-lease").map_err(err)?;
    ensure!(
        taken.attempt() == 2,
        "the takeover is attempt {}",
        taken.attempt()
    );
    Ok(())
}

async fn export(store: &Arc<dyn RunStore>) -> Outcome {
    let spec = ToolSpec::new("kit", "echo", "1", SideEffects::None, "Echoes its input.");
    let mut registry = Registry::new();
    registry
        .register(DynamicTool::new(spec, |_ctx, input: Value| async move {
            Ok::<_, String>(input)
        }))
        .map_err(err)?;
    let runtime = Arc::new(Runtime::new(registry));
    let run = DurableRun::start(Arc::clone(store), "kit-export", "task").map_err(err)?;
    let calls = run.run(&runtime);
    for n in 0..2 {
        calls
            .call("kit.echo", json!({"n": n}), &ToolContext::new())
            .await
            .map_err(err)?;
    }
    drop(calls);
    let journal = store.journal("kit-export").map_err(err)?;
    ensure!(
        journal.len() == 4,
        "2 calls journaled as {} entries",
        journal.len()
    );
    let path = std::env::temp_dir().join(format!(
        "tackle-kit-export-{}-{:?}.json",
        std::process::id(),
        std::thread::current().id()
    ));
    run.release().map_err(err)?;
    DurableRun::export_journal(store.as_ref(), "kit-export", &path).map_err(err)?;
    let file = tackle_core::replay::load(&path).map_err(err);
    std::fs::remove_file(&path).ok();
    let file = file?;
    let outputs: Vec<&Value> = file
        .interactions
        .iter()
        .filter_map(|i| match &i.outcome {
            tackle_core::replay::Outcome::Ok(v) => Some(v),
            _ => None,
        })
        .collect();
    ensure!(
        outputs == [&json!({"n": 0}), &json!({"n": 1})],
        "the exported cassette holds {outputs:?}"
    );
    Ok(())
}

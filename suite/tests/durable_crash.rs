//! Durable runs survive SIGKILL: a child process runs a multi-step agent with write
//! tools against a scripted model, journaled in a SQLite store, and is killed at a
//! random point, 20 times. Each time the run is resumed (by new child processes, with
//! an operator resolving calls of unknown outcome from the ledger) to the same final
//! answer as an uninterrupted run; every write happens exactly once in the ledger
//! (a file outside the process); and the store passes SQLite's integrity check.
//!
//! The ledger is the outside world. `ledger.post` carries an idempotency key
//! (`request_id`), as a payment API does: the ledger ignores a repeat, so a post in
//! flight at the crash is safely sent again. `mail.notify` has none: one in flight at
//! the crash stops the resume with `UnknownOutcome`, and the operator (this test)
//! looks at the ledger and resolves it as done or to be retried.
//!
//! A second check kills a scripted run (a `ScriptedModel`, as in `docs/durable.md`)
//! at every step boundary and in the middle of every step, and resumes it in a new
//! process: each model turn is played once.
//!
//! Run with `--nocapture` for the kill points; the seed is printed, and
//! `TACKLE_CRASH_SEED` replays one.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/ledger.rs"]
mod ledger;

use ledger::{append_line, append_to, ledger, ledger_lines, Rng};

use std::path::Path;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tackle::agent::model::{
    ChatModel, ChatRequest, ChatResponse, FunctionModel, ModelFuture, Role, ScriptedModel,
    ToolCallRequest,
};
use tackle::agent::react::ReactSkill;
use tackle::durable::{
    DurableError, DurableOptions, DurableRun, JournalEntry, Resolution, RunStatus, RunStore,
};
use tackle::{tool, Runtime, ToolContext};
use tackle_sqlite::SqliteStore;

const CHILD: &str = "TACKLE_DURABLE_CHILD";
const RUN: &str = "payout-7";
const TASK: &str = "Pay r1, r2 and r3, and tell Ada and Bob.";
const KILLS: usize = 20;

/// Posts an amount to the ledger; a repeated request id is ignored.
#[tool(namespace = "ledger", side_effects = write, idempotency_key = "request_id")]
fn post(request_id: String, amount: i64) -> String {
    // Every execution is counted, beside the ledger's (deduplicated) effects.
    append_to(&ledger().with_file_name("executions.txt"), &request_id);
    std::thread::sleep(Duration::from_millis(15));
    let line = format!("post {request_id} {amount}");
    if !ledger_lines(&ledger()).contains(&line) {
        append_line(&line);
    }
    std::thread::sleep(Duration::from_millis(15));
    format!("posted {request_id}")
}

/// Sends a notification (no idempotency key: a repeat would be sent twice).
#[tool(namespace = "mail", side_effects = external)]
fn notify(to: String) -> String {
    std::thread::sleep(Duration::from_millis(15));
    append_line(&format!("notify {to}"));
    std::thread::sleep(Duration::from_millis(15));
    format!("notified {to}")
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

/// The model: its answer depends only on how many turns it has had, so a resumed
/// run, fed the journal's answers, asks the same things.
fn model(request: &ChatRequest) -> Result<ChatResponse, tackle::agent::model::ModelError> {
    let turn = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    Ok(match turn {
        0 => ChatResponse::calls(
            "Posting r1 and r2.",
            vec![
                call(
                    "c1",
                    "ledger_post",
                    json!({"request_id": "r1", "amount": 100}),
                ),
                call(
                    "c2",
                    "ledger_post",
                    json!({"request_id": "r2", "amount": 250}),
                ),
            ],
        ),
        1 => ChatResponse::calls(
            "Telling Ada.",
            vec![call("c3", "mail_notify", json!({"to": "ada"}))],
        ),
        2 => ChatResponse::calls(
            "Posting r3.",
            vec![call(
                "c4",
                "ledger_post",
                json!({"request_id": "r3", "amount": 75}),
            )],
        ),
        3 => ChatResponse::calls(
            "Telling Bob.",
            vec![call("c5", "mail_notify", json!({"to": "bob"}))],
        ),
        _ => ChatResponse::text("Posted r1, r2 and r3; told Ada and Bob."),
    })
}

/// The child: open (start or resume) the run and drive it to its end. Exit 0 when the
/// run is done, 3 when calls of unknown outcome wait for an operator.
fn child() -> ExitCode {
    let store =
        SqliteStore::open(std::env::var_os("TACKLE_STORE").unwrap_or_default()).expect("store");
    let store: Arc<dyn RunStore> = Arc::new(store);
    let run = match open_when_free(store, RUN, TASK) {
        Ok(run) => run,
        Err(DurableError::UnknownOutcome { .. }) => return ExitCode::from(3),
        Err(DurableError::Ended { .. }) => return ExitCode::SUCCESS,
        Err(e) => panic!("{e}"),
    };
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let skill = ReactSkill::new(
        Arc::new(FunctionModel::new("ledger-bot", model)),
        runtime.registry(),
        &["ledger.post", "mail.notify"],
    )
    .expect("skill");
    let ctx = ToolContext::new().with_grant("llm:*");
    harness::tokio()
        .block_on(run.drive(&runtime, &skill, &ctx, None))
        .expect("the run");
    ExitCode::SUCCESS
}

/// How long a child holds the run: a killed child's run is free again this soon.
const LEASE: Duration = Duration::from_millis(300);

/// Opens the run, waiting for the lease of a killed child to lapse: a run is held
/// by one process at a time.
fn open_when_free(
    store: Arc<dyn RunStore>,
    run_id: &str,
    task: &str,
) -> Result<DurableRun, DurableError> {
    let options = DurableOptions::new().with_lease(LEASE);
    for _ in 0..20 {
        match DurableRun::open_with(Arc::clone(&store), run_id, task, options.clone()) {
            Err(DurableError::Held { remaining_ms, .. }) => {
                std::thread::sleep(Duration::from_millis(remaining_ms + 10));
            }
            other => return other,
        }
    }
    panic!("the run stayed held");
}

fn spawn(dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().expect("this test"))
        .env(CHILD, "1")
        .env("TACKLE_STORE", dir.join("runs.db"))
        .env("TACKLE_LEDGER", dir.join("ledger.txt"))
        .spawn()
        .expect("spawn the child")
}

/// Resumes the run in `dir` to its end: children until one finishes, resolving calls
/// of unknown outcome from the ledger in between, as an operator would.
fn resume_to_the_end(dir: &Path) {
    let ledger = dir.join("ledger.txt");
    for _ in 0..5 {
        let status = spawn(dir).wait().expect("wait");
        match status.code() {
            Some(0) => return,
            Some(3) => {
                let store = SqliteStore::open(dir.join("runs.db")).expect("store");
                let record = store.load(RUN).expect("load").expect("the run");
                let RunStatus::UnknownOutcome { calls } = &record.status else {
                    panic!("exit 3 without unknown calls: {:?}", record.status)
                };
                for call in calls {
                    let to = call.input["to"].as_str().expect("a notify call");
                    let sent = ledger_lines(&ledger).contains(&format!("notify {to}"));
                    let resolution = if sent {
                        Resolution::Succeeded {
                            output: json!(format!("notified {to}")),
                        }
                    } else {
                        Resolution::Retry
                    };
                    DurableRun::resolve(&store, RUN, call, resolution).expect("resolve");
                }
            }
            other => panic!("the child ended with {other:?}"),
        }
    }
    panic!("the run did not end within 5 resumes");
}

/// The run's answer and the ledger, once done.
fn outcome(dir: &Path) -> (String, Vec<String>) {
    let store = SqliteStore::open(dir.join("runs.db")).expect("store");
    RunStore::check(&store).expect("the store is sound");
    let record = store.load(RUN).expect("load").expect("the run");
    assert_eq!(record.status, RunStatus::Done, "{record:?}");
    let answer = record
        .state
        .and_then(|s| s.final_answer)
        .expect("an answer");
    let mut lines = ledger_lines(&dir.join("ledger.txt"));
    lines.sort();
    (answer, lines)
}

fn killed_runs_resume_to_the_same_answer_with_every_write_once() {
    let root = std::env::temp_dir().join(format!("tackle-durable-crash-{}", std::process::id()));
    let fresh = |name: &str| {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    };
    // The uninterrupted run: its answer, ledger and duration.
    let baseline = fresh("baseline");
    let started = Instant::now();
    assert!(spawn(&baseline).wait().expect("wait").success());
    let took = started.elapsed();
    let (answer, ledger) = outcome(&baseline);
    assert_eq!(
        ledger,
        [
            "notify ada",
            "notify bob",
            "post r1 100",
            "post r2 250",
            "post r3 75"
        ]
    );
    let seed = std::env::var("TACKLE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    println!("baseline run: {} ms; seed {seed}", took.as_millis());
    let mut rng = Rng(seed);
    let window = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    let mut unknown = 0;
    for kill in 0..KILLS {
        let dir = fresh(&format!("kill-{kill}"));
        let mut child = spawn(&dir);
        let at = Duration::from_micros(rng.below(window));
        std::thread::sleep(at);
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        let journal_before = SqliteStore::open(dir.join("runs.db"))
            .and_then(|s| s.journal(RUN))
            .unwrap_or_default();
        // Posts in flight at the kill: started, with no outcome in the journal.
        let finished: Vec<u64> = journal_before
            .iter()
            .filter_map(|e| match e {
                JournalEntry::Finished { interaction, .. } => Some(interaction.call),
                _ => None,
            })
            .collect();
        let in_flight: Vec<String> = journal_before
            .iter()
            .filter_map(|e| match e {
                JournalEntry::Started { call, .. }
                    if call.key.starts_with("ledger.post") && !finished.contains(&call.call) =>
                {
                    call.input["request_id"].as_str().map(str::to_owned)
                }
                _ => None,
            })
            .collect();
        resume_to_the_end(&dir);
        // A post ran once, or twice when the kill caught it in flight (sent again with
        // its idempotency key); a post the journal held as done never ran again.
        let executions = ledger_lines(&dir.join("executions.txt"));
        for id in ["r1", "r2", "r3"] {
            let runs = executions.iter().filter(|l| *l == id).count();
            let allowed = if in_flight.iter().any(|f| f == id) {
                2
            } else {
                1
            };
            assert!(
                (1..=allowed).contains(&runs),
                "kill {kill}: post {id} ran {runs} time(s); in flight: {in_flight:?} (seed {seed})"
            );
        }
        let store = SqliteStore::open(dir.join("runs.db")).expect("store");
        let resolved = store
            .journal(RUN)
            .expect("journal")
            .iter()
            .filter(|e| matches!(e, JournalEntry::Resolved { .. }))
            .count();
        unknown += resolved;
        println!(
            "kill {kill}: at {} ms, {} journal entries, posts in flight {in_flight:?}; {resolved} call(s) resolved by the operator",
            at.as_millis(),
            journal_before.len()
        );
        assert_eq!(
            outcome(&dir),
            (answer.clone(), ledger.clone()),
            "kill {kill} (seed {seed})"
        );
    }
    println!("{KILLS} kills, {unknown} call(s) of unknown outcome resolved");
    let _ = std::fs::remove_dir_all(&root);
}

// ---- a scripted run, killed at every step boundary and in the middle of every step ----

const SCRIPTED_CHILD: &str = "TACKLE_DURABLE_SCRIPTED_CHILD";
const STEPS: usize = 4;

/// Reads a note; the test kills its process in the middle of step `step` when
/// `TACKLE_KILL_AT` is `mid:<step>`.
#[tool(namespace = "notes", side_effects = read)]
fn read(step: u64) -> String {
    if std::env::var("TACKLE_KILL_AT").ok() == Some(format!("mid:{step}")) {
        kill_self();
    }
    format!("note {step}")
}

/// SIGKILL to this process: nothing runs after it, as in a crash.
fn kill_self() -> ! {
    let _ = Command::new("kill")
        .args(["-9", &std::process::id().to_string()])
        .status();
    // `kill` is not there: end as abruptly as the platform allows.
    std::process::abort()
}

/// A scripted model that logs each turn it plays (to `turns.txt` beside the store),
/// and kills its process before turn `k` when `TACKLE_KILL_AT` is `boundary:<k>`.
struct Logged(ScriptedModel);

impl ChatModel for Logged {
    fn provider(&self) -> &str {
        self.0.provider()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        let turn = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        if std::env::var("TACKLE_KILL_AT").ok() == Some(format!("boundary:{turn}")) {
            kill_self();
        }
        Box::pin(async move {
            let reply = self.0.complete(request).await;
            append_to(
                &ledger().with_file_name("turns.txt"),
                &(self.0.used() - 1).to_string(),
            );
            reply
        })
    }
}

/// The script: a note read per step, then the answer. A `ScriptedModel` takes its
/// turn from the conversation, so the resumed process, whose earlier turns come from
/// the journal, plays the next turn (counting its own calls, it would play the
/// first turn again).
fn script() -> ScriptedModel {
    let mut turns: Vec<ChatResponse> = (0..STEPS)
        .map(|step| {
            ChatResponse::calls(
                format!("Reading note {step}."),
                vec![call(
                    &format!("n{step}"),
                    "notes_read",
                    json!({ "step": step }),
                )],
            )
        })
        .collect();
    turns.push(ChatResponse::text(format!("Read {STEPS} notes.")));
    ScriptedModel::new(turns)
}

/// The scripted child: open (start or resume) the run and drive it to its end.
fn scripted_child() -> ExitCode {
    let store =
        SqliteStore::open(std::env::var_os("TACKLE_STORE").unwrap_or_default()).expect("store");
    let store: Arc<dyn RunStore> = Arc::new(store);
    let run = open_when_free(store, "notes-1", "Read the notes.").expect("the run opens");
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let skill = ReactSkill::new(
        Arc::new(Logged(script())),
        runtime.registry(),
        &["notes.read"],
    )
    .expect("skill");
    let ctx = ToolContext::new().with_grant("llm:*");
    harness::tokio()
        .block_on(run.drive(&runtime, &skill, &ctx, None))
        .expect("the run");
    ExitCode::SUCCESS
}

fn spawn_scripted(dir: &Path, kill_at: Option<&str>) -> std::process::ExitStatus {
    let mut command = Command::new(std::env::current_exe().expect("this test"));
    command
        .env(SCRIPTED_CHILD, "1")
        .env("TACKLE_STORE", dir.join("runs.db"))
        .env("TACKLE_LEDGER", dir.join("ledger.txt"));
    if let Some(at) = kill_at {
        command.env("TACKLE_KILL_AT", at);
    }
    command.status().expect("the child runs")
}

/// The run's final state and the turns the model played, in order.
fn scripted_outcome(dir: &Path) -> (tackle::agent::react::ReactState, Vec<String>) {
    let store = SqliteStore::open(dir.join("runs.db")).expect("store");
    let record = store.load("notes-1").expect("load").expect("the run");
    assert_eq!(record.status, RunStatus::Done, "{record:?}");
    (
        record.state.expect("a state"),
        ledger_lines(&dir.join("turns.txt")),
    )
}

/// The first example of `docs/durable.md` (the same tool, script, run id and task,
/// with a model that logs its turns and hooks that kill), killed (SIGKILL) at every
/// step boundary and in the middle of every step, then resumed in a new process:
/// each model turn is played once, and the run ends as the uninterrupted one.
fn a_resumed_scripted_run_plays_each_turn_once() {
    let root = std::env::temp_dir().join(format!("tackle-scripted-{}", std::process::id()));
    let fresh = |name: &str| {
        let dir = root.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    };
    let baseline = fresh("baseline");
    assert!(spawn_scripted(&baseline, None).success());
    let (state, turns) = scripted_outcome(&baseline);
    let every_turn: Vec<String> = (0..=STEPS).map(|t| t.to_string()).collect();
    assert_eq!(turns, every_turn);
    assert_eq!(state.final_answer.as_deref(), Some("Read 4 notes."));

    let kills = (1..=STEPS)
        .map(|k| format!("boundary:{k}"))
        .chain((0..STEPS).map(|k| format!("mid:{k}")));
    for at in kills {
        let dir = fresh(&at.replace(':', "-"));
        let killed = spawn_scripted(&dir, Some(&at));
        assert!(!killed.success(), "{at}: the child was killed: {killed:?}");
        assert!(
            spawn_scripted(&dir, None).success(),
            "{at}: the resume ends"
        );
        let (resumed, turns) = scripted_outcome(&dir);
        assert_eq!(turns, every_turn, "{at}: each turn played once, in order");
        assert_eq!(resumed.final_answer, state.final_answer, "{at}");
        assert_eq!(resumed.trajectory, state.trajectory, "{at}");
        println!("killed at {at}: resumed, turns {turns:?}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    if std::env::var_os(SCRIPTED_CHILD).is_some() {
        return scripted_child();
    }
    harness::run(&[
        (
            "killed_runs_resume_to_the_same_answer_with_every_write_once",
            killed_runs_resume_to_the_same_answer_with_every_write_once,
        ),
        (
            "a_resumed_scripted_run_plays_each_turn_once",
            a_resumed_scripted_run_plays_each_turn_once,
        ),
    ])
}

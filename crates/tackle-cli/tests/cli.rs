//! The CLIs end to end, by running the binaries and reading their output, files and
//! exit codes.
//!
//! - The tools CLI: this test binary, run again in tool mode, is a user's program
//!   whose `main` is `tackle_cli::tools::main()` over the tools below.
//! - `cargo tackle`: the crate's `cargo-tackle` binary.
//!
//! The review check records a cassette, changes a tool, re-records into a pending
//! file, diffs, rejects, re-records, accepts, and replays the accepted recording.
//!
//! The hostile-folder checks give `cargo tackle` link loops, FIFOs, symbolic links,
//! a pending file swapped mid-review, terminal control sequences and arguments that
//! are not UTF-8; each command runs under a deadline ([`Running`]), so one that
//! would hang fails its check instead.

#[path = "../../../suite/tests/support/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::tool;

const CHILD: &str = "TACKLE_CLI_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        tackle_cli::tools::main()
    }
    harness::run(&[
        ("tools_from_a_terminal", tools_from_a_terminal),
        ("serve_over_stdio", serve_over_stdio),
        ("approval_asks_at_a_terminal", approval_asks_at_a_terminal),
        ("record_change_review_accept", record_change_review_accept),
        ("cassette_commands", cassette_commands),
        ("runs_commands", runs_commands),
        (
            "walks_pass_over_link_loops_and_fifos",
            walks_pass_over_link_loops_and_fifos,
        ),
        (
            "accept_refuses_symlinked_pending_files",
            accept_refuses_symlinked_pending_files,
        ),
        (
            "accept_refuses_pending_files_through_a_link_out_of_the_tree",
            accept_refuses_pending_files_through_a_link_out_of_the_tree,
        ),
        (
            "review_decides_only_what_it_showed",
            review_decides_only_what_it_showed,
        ),
        (
            "terminal_controls_in_cassettes_are_escaped",
            terminal_controls_in_cassettes_are_escaped,
        ),
        (
            "arguments_that_are_not_utf8_are_bad_usage",
            arguments_that_are_not_utf8_are_bad_usage,
        ),
        ("a_closed_output_ends_quietly", a_closed_output_ends_quietly),
    ])
}

/// Today's weather in a city (the reading changes when `WEATHER_V2` is set).
#[tool(namespace = "demo", side_effects = read, tags = ["weather"])]
fn weather(city: String) -> Value {
    if std::env::var_os("WEATHER_V2").is_some() {
        json!({"city": city, "celsius": 14, "wind": "NW"})
    } else {
        json!({"city": city, "celsius": 12})
    }
}

/// Writes a note (needs the `notes:write` capability).
#[tool(namespace = "demo", side_effects = write, requires_capability = "notes:write")]
fn note(text: String) -> String {
    format!("noted: {text}")
}

/// Wires money (every call needs approval).
#[tool(namespace = "demo", side_effects = external, needs_approval)]
fn wire(cents: i64) -> String {
    format!("wired {cents}")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// Runs the tools CLI with `args`; `env` adds variables (CI is unset unless given).
fn tools(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("this test"));
    command
        .env(CHILD, "1")
        .env_remove("CI")
        .env_remove("TACKLE_CASSETTE");
    command.env("NO_COLOR", "1");
    for (k, v) in env {
        command.env(k, v);
    }
    command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run")
}

/// How long one `cargo tackle` command may take before a check kills it and fails:
/// a walk that loops, or a read that blocks, must fail the check, not hang the suite.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `cargo-tackle tackle ARGS` (as cargo does for `cargo tackle ARGS`), with
/// `stdin` as its standard input, killed if it runs past [`DEADLINE`].
fn cargo_tackle(args: &[&str], stdin: &str) -> Output {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    cargo_tackle_os(&args, stdin)
}

/// [`cargo_tackle`] with arguments that need not be UTF-8.
fn cargo_tackle_os(args: &[&OsStr], stdin: &str) -> Output {
    Running::tackle(args).finish(stdin)
}

/// A child process whose output is read on threads, so that a check can wait for a
/// prompt, answer it, and wait for the end, each within the deadline; past it, the
/// child is killed and the check fails. Dropped, it kills the child.
struct Running {
    child: std::process::Child,
    stdout: mpsc::Receiver<Vec<u8>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    seen: Vec<u8>,
    deadline: Instant,
    what: String,
}

impl Running {
    /// `cargo-tackle tackle ARGS`, colourless, with piped standard streams.
    fn tackle(args: &[&OsStr]) -> Running {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-tackle"));
        command.arg("tackle").args(args).env("NO_COLOR", "1");
        Running::start(command)
    }

    fn start(mut command: Command) -> Running {
        let what = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
        let (send, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = out.read(&mut chunk) {
                if n == 0 || send.send(chunk[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = err.read_to_end(&mut all);
            all
        });
        Running {
            child,
            stdout,
            stderr: Some(stderr),
            seen: Vec::new(),
            deadline: Instant::now() + DEADLINE,
            what,
        }
    }

    /// Kills the child and fails the check.
    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!(
            "{}: {why}; its output so far:\n{}",
            self.what,
            String::from_utf8_lossy(&self.seen)
        );
    }

    /// Reads standard output until it holds `text`.
    fn wait_for(&mut self, text: &str) {
        while !String::from_utf8_lossy(&self.seen).contains(text) {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(chunk) => self.seen.extend(chunk),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.fail(&format!("no `{text}` within {DEADLINE:?}"))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.fail(&format!("it ended without printing `{text}`"))
                }
            }
        }
    }

    /// Writes `stdin`, closes it, and waits for the end.
    fn finish(mut self, stdin: &str) -> Output {
        if let Some(mut input) = self.child.stdin.take() {
            // A child that already ended does not read it.
            let _ = input.write_all(stdin.as_bytes());
        }
        let status = loop {
            match self.child.try_wait().expect("wait") {
                Some(status) => break status,
                None if Instant::now() >= self.deadline => {
                    self.fail(&format!("it did not finish within {DEADLINE:?}"))
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        // The reader ends when the pipe closes, with the child.
        while let Ok(chunk) = self.stdout.recv() {
            self.seen.extend(chunk);
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        Output {
            status,
            stdout: std::mem::take(&mut self.seen),
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(out), stderr(out)))
}

fn tools_from_a_terminal() {
    // list, with tags and as JSON
    let out = tools(&["list", "--json"], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let keys: Vec<String> = json_of(&out)
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["key"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(keys, ["demo.note@1", "demo.weather@1", "demo.wire@1"]);
    let out = tools(&["list", "--tag", "weather"], &[]);
    let text = stdout(&out);
    assert!(text.starts_with("demo.weather@1"), "{text}");
    assert!(text.contains("Today's weather in a city"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");

    // show, in a provider's form
    let out = tools(&["show", "demo.weather", "--form", "openai"], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let definition = json_of(&out);
    assert_eq!(definition["function"]["name"], "demo_weather");
    assert_eq!(definition["function"]["strict"], true);
    let spec = json_of(&tools(&["show", "weather"], &[]));
    assert_eq!(spec["namespace"], "demo");
    let out = tools(&["show", "demo.weather", "--form", "cobol"], &[]);
    assert_eq!(code(&out), 2, "an unknown form is a usage error");

    // search
    let out = tools(&["search", "money transfer wire", "--json"], &[]);
    assert_eq!(json_of(&out)[0]["key"], "demo.wire@1");

    // call through the door
    let out = tools(&["call", "demo.weather", r#"{"city":"Oslo"}"#], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_of(&out), json!({"city": "Oslo", "celsius": 12}));
    // an unknown key: exit 3, naming it
    let out = tools(&["call", "demo.wether", "{}"], &[]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("demo.wether"), "{}", stderr(&out));
    // arguments that are not JSON: exit 2, naming the tool
    let out = tools(&["call", "demo.weather", "{city: Oslo}"], &[]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("the arguments of `demo.weather`: not JSON"));
    // arguments that break the schema: exit 2
    let out = tools(&["call", "demo.weather", r#"{"town":"Oslo"}"#], &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // deny by default: exit 4 until granted
    let out = tools(&["call", "demo.note", r#"{"text":"hi"}"#], &[]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("notes:write"), "{}", stderr(&out));
    let out = tools(
        &[
            "call",
            "demo.note",
            r#"{"text":"hi"}"#,
            "--grant",
            "notes:write",
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_of(&out), json!("noted: hi"));
    // needs approval, and no terminal to ask: refused
    let out = tools(&["call", "demo.wire", r#"{"cents":100}"#], &[]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no terminal to ask"),
        "{}",
        stderr(&out)
    );

    // a pipeline document
    let dir = temp("pipeline");
    let doc = dir.join("brief.yaml");
    std::fs::write(
        &doc,
        "name: brief\nnodes:\n  - id: look\n    kind: tool\n    tool: demo.weather@1\n    inputs:\n      city: \"{{state.city}}\"\n    out: reading\n",
    )
    .expect("doc");
    let out = tools(
        &[
            "pipeline",
            "run",
            doc.to_str().expect("path"),
            "--input",
            r#"{"city":"Rome"}"#,
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_of(&out)["reading"]["city"], "Rome");
    std::fs::write(&doc, "name: [unclosed\n").expect("doc");
    let out = tools(&["pipeline", "run", doc.to_str().expect("path")], &[]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("brief.yaml"), "{}", stderr(&out));

    // completions, help
    let out = tools(&["completions", "bash"], &[]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("complete -F"), "{}", stdout(&out));
    let out = tools(&["--help"], &[]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("pipeline"));
    let out = tools(&["frobnicate"], &[]);
    assert_eq!(code(&out), 2);
}

/// A call that needs approval, run in a pseudo-terminal (`script`, from util-linux)
/// so that the CLI asks; the answer is typed into it.
fn approval_asks_at_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        println!("SKIPPED: no `script` to make a pseudo-terminal");
        return;
    }
    let exe = std::env::current_exe().expect("this test");
    for (answer, expected) in [("y", 0), ("n", 4)] {
        let command = format!("{} call demo.wire '{{\"cents\":100}}'", exe.display());
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env(CHILD, "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script");
        let mut stdin = child.stdin.take().expect("stdin");
        // Answer once the question is on the terminal.
        std::thread::sleep(std::time::Duration::from_millis(300));
        writeln!(stdin, "{answer}").expect("answer");
        let out = child.wait_with_output().expect("output");
        let text = stdout(&out);
        assert!(
            text.contains(
                "`demo.wire@1` needs approval to run with {\"cents\":100}. Run it? [y/N]"
            ),
            "{text}"
        );
        assert_eq!(code(&out), expected, "answer {answer}: {text}");
        if expected == 0 {
            assert!(text.contains("\"wired 100\""), "{text}");
        } else {
            assert!(text.contains("not approved at the terminal"), "{text}");
        }
    }
}

fn serve_over_stdio() {
    let mut child = Command::new(std::env::current_exe().expect("this test"))
        .env(CHILD, "1")
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut input = child.stdin.take().expect("stdin");
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for message in messages {
        writeln!(input, "{message}").expect("send");
    }
    // Wait for the answers before closing: the server stops at end of input.
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut stdout, &mut line).expect("read");
        assert!(read > 0, "the server stopped early");
        answers.push(serde_json::from_str::<Value>(&line).expect("JSON-RPC"));
    }
    drop(input);
    let status = child.wait().expect("exit");
    assert!(status.success(), "{status:?}");
    let names: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // `demo.note` needs `notes:write`, which no `--grant` gave: clients do not see it.
    assert_eq!(names, ["demo.weather", "demo.wire"]);
}

fn record_change_review_accept() {
    let dir = temp("review");
    let cassette = dir.join("weather.json");
    let pending = dir.join("weather.pending.json");
    let path = cassette.to_str().expect("path");
    let call = [
        "call",
        "demo.weather",
        r#"{"city":"Oslo"}"#,
        "--cassette",
        path,
    ];

    // Record once.
    let out = tools(&call, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let recorded = std::fs::read_to_string(&cassette).expect("recorded");
    // Replayed: the same answer, nothing rewritten, even with the tool changed.
    let out = tools(&call, &[("WEATHER_V2", "1")]);
    assert_eq!(json_of(&out)["celsius"], 12, "served from the cassette");

    // Change the tool and re-record in review mode: a pending file, the cassette
    // untouched.
    let out = tools(&call, &[("WEATHER_V2", "1"), ("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_of(&out)["celsius"], 14);
    assert_eq!(std::fs::read_to_string(&cassette).expect("kept"), recorded);
    assert!(pending.exists(), "a pending recording");
    // CI never writes pending files.
    std::fs::remove_file(&pending).expect("rm");
    let out = tools(
        &call,
        &[
            ("WEATHER_V2", "1"),
            ("TACKLE_CASSETTE", "review"),
            ("CI", "true"),
        ],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("CI"), "{}", stderr(&out));
    assert!(!pending.exists());
    let out = tools(&call, &[("WEATHER_V2", "1"), ("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0);

    // The semantic diff, by JSON pointer; exit 1 because they differ.
    let out = cargo_tackle(
        &["cassette", "diff", path, pending.to_str().expect("path")],
        "",
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("~ #0 demo.weather@1"), "{text}");
    assert!(text.contains("/outcome/ok/celsius: 12 -> 14"), "{text}");
    assert!(text.contains("+ /outcome/ok/wind: \"NW\""), "{text}");

    // Review, reject: the pending file goes, the cassette stays.
    let out = cargo_tackle(&["review", dir.to_str().expect("dir")], "r\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("/outcome/ok/celsius: 12 -> 14"));
    assert!(stdout(&out).contains("rejected"));
    assert!(!pending.exists());
    assert_eq!(std::fs::read_to_string(&cassette).expect("kept"), recorded);

    // Re-record; skipping leaves it pending (exit 1); then accept interactively.
    let out = tools(&call, &[("WEATHER_V2", "1"), ("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0);
    let fresh = std::fs::read_to_string(&pending).expect("pending");
    let out = cargo_tackle(&["review", dir.to_str().expect("dir")], "s\n");
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("1 left pending"));
    assert!(pending.exists());
    let out = cargo_tackle(&["review", dir.to_str().expect("dir")], "what\na\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("`what`: answer a, r, s or q"));
    assert!(!pending.exists());
    assert_eq!(std::fs::read_to_string(&cassette).expect("accepted"), fresh);
    // The accepted recording replays, with the tool as it was.
    let out = tools(&call, &[]);
    assert_eq!(
        json_of(&out)["celsius"],
        14,
        "served from the accepted cassette"
    );

    // Non-interactive: accept and reject by name; nothing pending is fine.
    let out = tools(&call, &[("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0);
    assert!(pending.exists(), "back to 12: a change to review");
    let out = cargo_tackle(&["reject", path], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!pending.exists());
    let out = cargo_tackle(&["reject", path], "");
    assert_eq!(code(&out), 3, "nothing pending for a named cassette");
    assert!(stderr(&out).contains("weather.json"), "{}", stderr(&out));
    let out = tools(&call, &[("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0);
    let out = cargo_tackle(&["accept", dir.to_str().expect("dir")], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("accepted"));
    assert_eq!(json_of(&tools(&call, &[]))["celsius"], 12);
    // Re-recording what the cassette holds leaves nothing to review.
    let out = tools(&call, &[("TACKLE_CASSETTE", "review")]);
    assert_eq!(code(&out), 0);
    assert!(!pending.exists(), "identical: no pending file");
    let out = cargo_tackle(&["review", dir.to_str().expect("dir")], "");
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("nothing pending"));
}

fn write(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
}

fn cassette_commands() {
    let dir = temp("cassettes");
    let cassette = dir.join("two.json");
    let path = cassette.to_str().expect("path");
    // Two calls recorded into one cassette (mode `new` appends).
    for city in ["Oslo", "Rome"] {
        let arguments = format!(r#"{{"city":"{city}"}}"#);
        let out = tools(
            &["call", "demo.weather", &arguments, "--cassette", path],
            &[("TACKLE_CASSETTE", "new")],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }

    // show: a timeline.
    let out = cargo_tackle(&["cassette", "show", path], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("2 interaction(s)"), "{text}");
    assert!(text.contains("#0   tool  demo.weather@1"), "{text}");
    assert!(text.contains(r#"in:  {"city":"Rome"}"#), "{text}");
    assert!(
        text.contains(r#"ok: {"city":"Rome","celsius":12}"#),
        "{text}"
    );

    // verify: fine; then with a token-shaped secret, named by pointer.
    let out = cargo_tackle(&["cassette", "verify", path], "");
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let mut leaked: Value =
        serde_json::from_str(&std::fs::read_to_string(&cassette).expect("read")).expect("json");
    leaked["interactions"][1]["outcome"]["ok"]["note"] =
        json!("key sk-abcdefghijklmnopqrstuvwx leaked");
    let leaky = dir.join("leaky.json");
    write(&leaky, &leaked);
    let out = cargo_tackle(&["cassette", "verify", dir.to_str().expect("dir")], "");
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("ok {path}")), "{text}");
    assert!(
        text.contains(
            "`demo.weather@1` (call #0): a token-shaped secret at /interactions/1/outcome/ok/note"
        ),
        "{text}"
    );
    std::fs::remove_file(&leaky).expect("rm");

    // A corrupt cassette and a missing one: named, non-zero.
    let corrupt = dir.join("corrupt.json");
    std::fs::write(
        &corrupt,
        "{\"format\": \"tackle-cassette\", \"version\": 1,",
    )
    .expect("w");
    let out = cargo_tackle(&["cassette", "show", corrupt.to_str().expect("path")], "");
    assert_eq!(code(&out), 5);
    assert!(stderr(&out).contains("corrupt.json"), "{}", stderr(&out));
    let out = cargo_tackle(&["cassette", "verify", corrupt.to_str().expect("path")], "");
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains("corrupt.json"));
    std::fs::remove_file(&corrupt).expect("rm");
    let out = cargo_tackle(&["cassette", "show", "nowhere.json"], "");
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("nowhere.json"));

    // prune: a replay that uses one call of two, with its usage recorded.
    let out = cargo_tackle(&["cassette", "prune", path], "");
    assert_eq!(code(&out), 3, "no usage yet: {}", stderr(&out));
    assert!(stderr(&out).contains("TACKLE_CASSETTE_USAGE=1"));
    let out = tools(
        &[
            "call",
            "demo.weather",
            r#"{"city":"Rome"}"#,
            "--cassette",
            path,
        ],
        &[
            ("TACKLE_CASSETTE", "replay"),
            ("TACKLE_CASSETTE_USAGE", "1"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = cargo_tackle(&["cassette", "prune", path, "--dry-run"], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains(r#"would drop #0 demo.weather@1 {"city":"Oslo"}"#));
    let out = cargo_tackle(&["cassette", "prune", path], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pruned: Value =
        serde_json::from_str(&std::fs::read_to_string(&cassette).expect("read")).expect("json");
    let interactions = pruned["interactions"].as_array().expect("list");
    assert_eq!(interactions.len(), 1);
    assert_eq!(interactions[0]["input"]["city"], "Rome");
    assert!(
        !dir.join("two.usage.json").exists(),
        "the usage record is spent"
    );
    // The pruned cassette still replays what the replay used.
    let out = tools(
        &[
            "call",
            "demo.weather",
            r#"{"city":"Rome"}"#,
            "--cassette",
            path,
        ],
        &[("TACKLE_CASSETTE", "replay")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// An operator's commands on a durable run store: list, show, approve (used up by
/// the call), resolve a call of unknown outcome, export the journal, back up; and
/// the exit codes of a missing store, a missing request and a damaged file.
fn runs_commands() {
    use std::sync::Arc;
    use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
    use tackle::agent::react::ReactSkill;
    use tackle::durable::{DurableError, DurableRun, JournalEntry, RunStatus, RunStore};
    use tackle::replay::{CallStarted, InteractionKind};
    use tackle_sqlite::SqliteStore;

    let dir = temp("runs");
    let db = dir.join("runs.db");
    let db_arg = db.to_str().expect("path");
    let runtime = Arc::new(tackle::Runtime::from_inventory().expect("registry"));
    let tokio = harness::tokio();
    let script = || {
        ScriptedModel::new([
            ChatResponse::calls(
                "Wiring.",
                vec![ToolCallRequest::new(
                    "c1",
                    "demo_wire",
                    json!({"cents": 500}),
                )],
            ),
            ChatResponse::text("Wired 500."),
        ])
    };
    let wire_skill =
        || ReactSkill::new(Arc::new(script()), runtime.registry(), &["demo.wire"]).expect("skill");
    // The program itself: its model needs no grant, and the wire requires none.
    let ctx = tackle::ToolContext::new();
    {
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).expect("store"));
        let run = DurableRun::start(store.clone(), "r-1", "Wire 500.").expect("start");
        let state = tokio
            .block_on(run.drive(&runtime, &wire_skill(), &ctx, None))
            .expect("a step");
        assert!(!state.done, "the wire waits for approval");
        // r-2: a write in flight when its process died.
        let run = DurableRun::start(store.clone(), "r-2", "Note it.").expect("start");
        store
            .append(
                "r-2",
                &JournalEntry::Started {
                    attempt: 1,
                    call: CallStarted {
                        call: 5,
                        key: "demo.note@1".into(),
                        kind: InteractionKind::Tool,
                        policy: tackle::spec::ReplayPolicy::MustStub,
                        input: json!({"text": "hi"}),
                        rerun_safe: false,
                    },
                },
            )
            .expect("append");
        drop(run);
        assert!(matches!(
            DurableRun::resume(store.clone(), "r-2"),
            Err(DurableError::UnknownOutcome { .. })
        ));
    }

    let missing = dir.join("missing.db");
    let out = cargo_tackle(&["runs", "--store", missing.to_str().unwrap(), "list"], "");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!missing.exists(), "an operator's command makes no store");

    let out = cargo_tackle(&["runs", "--store", db_arg, "list", "--json"], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = json_of(&out);
    assert_eq!(runs[0]["run_id"], "r-1");
    assert_eq!(runs[0]["status"]["status"], "awaiting_approval");
    assert_eq!(runs[0]["pending"], 1);
    assert_eq!(runs[1]["status"]["status"], "unknown_outcome");

    let out = cargo_tackle(&["runs", "--store", db_arg, "show", "r-1"], "");
    let text = stdout(&out);
    assert!(text.contains("run r-1: awaiting_approval"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim().starts_with("request ") && l.contains(r#"demo.wire@1 {"cents":500}"#))
        .unwrap_or_else(|| panic!("the request is listed: {text}"));
    let id = line
        .trim()
        .strip_prefix("request ")
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("a request id: {line}"))
        .to_owned();

    let nobody = "0000000000000000";
    let out = cargo_tackle(&["runs", "--store", db_arg, "approve", "r-1", nobody], "");
    assert_eq!(code(&out), 3, "no such request: {}", stderr(&out));
    let out = cargo_tackle(&["runs", "--store", db_arg, "approve", "r-1", &id], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("approved demo.wire@1"),
        "{}",
        stdout(&out)
    );
    let late = [
        "runs", "--store", db_arg, "reject", "r-1", &id, "--reason", "late",
    ];
    let out = cargo_tackle(&late, "");
    assert_eq!(code(&out), 3, "decided already: {}", stderr(&out));
    let out = cargo_tackle(&["runs", "--store", db_arg, "show", "nobody"], "");
    assert_eq!(code(&out), 3, "{}", stderr(&out));

    // The program resumes the run: the approved wire runs, and its approval is used.
    {
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).expect("store"));
        let run = DurableRun::resume(store.clone(), "r-1").expect("resume");
        let state = tokio
            .block_on(run.drive(&runtime, &wire_skill(), &ctx, None))
            .expect("the run");
        assert_eq!(state.final_answer.as_deref(), Some("Wired 500."));
        assert_eq!(state.tool_calls[0].result, Some(json!("wired 500")));
    }
    let out = cargo_tackle(&["runs", "--store", db_arg, "show", "r-1"], "");
    let text = stdout(&out);
    assert!(text.contains("run r-1: done"), "{text}");
    assert!(text.contains("approved (used)"), "{text}");
    assert!(text.contains("answer: Wired 500."), "{text}");

    // A run that checks signatures (a store of its own): approved with the key file,
    // it goes on.
    let signed_db = dir.join("signed.db");
    let signed_arg = signed_db.to_str().unwrap();
    let key_file = dir.join("ops.key");
    std::fs::write(&key_file, "a secret the operators keep, 32+ bytes\n").expect("key");
    let key = || {
        tackle::durable::ApprovalKey::new("ops", "a secret the operators keep, 32+ bytes").unwrap()
    };
    let signed_options = || tackle::durable::DurableOptions::new().with_approval_key(key());
    {
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&signed_db).expect("store"));
        let run = DurableRun::start_with(store.clone(), "r-3", "Wire 500.", signed_options())
            .expect("start");
        let state = tokio
            .block_on(run.drive(&runtime, &wire_skill(), &ctx, None))
            .expect("a step");
        assert!(!state.done, "the wire waits for approval");
    }
    let store = SqliteStore::open(&signed_db).expect("store");
    let pending = DurableRun::pending_approvals(&store, "r-3").expect("pending");
    drop(store);
    let short = dir.join("short.key");
    std::fs::write(&short, "too short").expect("key");
    let approve = |file: &std::path::Path| {
        let args = [
            "runs",
            "--store",
            signed_arg,
            "approve",
            "r-3",
            &pending[0].binding,
            "--key-file",
            file.to_str().unwrap(),
        ];
        cargo_tackle(&args, "")
    };
    let out = approve(&short);
    assert_eq!(code(&out), 2, "a short key: {}", stderr(&out));
    let out = approve(&key_file);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(signed with `ops`)"),
        "{}",
        stdout(&out)
    );
    {
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&signed_db).expect("store"));
        let run = DurableRun::resume_with(store.clone(), "r-3", signed_options()).expect("resume");
        let state = tokio
            .block_on(run.drive(&runtime, &wire_skill(), &ctx, None))
            .expect("a signed approval is taken");
        assert_eq!(state.final_answer.as_deref(), Some("Wired 500."));
    }

    let out = cargo_tackle(&["runs", "--store", db_arg, "show", "r-2"], "");
    assert!(stdout(&out).contains("1/5 demo.note@1"), "{}", stdout(&out));
    let resolve = |call: &str, how: &[&str]| {
        let mut args = vec!["runs", "--store", db_arg, "resolve", "r-2", call];
        args.extend_from_slice(how);
        cargo_tackle(&args, "")
    };
    assert_eq!(code(&resolve("1/99", &["--retry"])), 3);
    assert_eq!(code(&resolve("one", &["--retry"])), 2);
    assert_eq!(code(&resolve("1/5", &["--output", "not json"])), 2);
    assert_eq!(code(&resolve("1/5", &[])), 2);
    let out = resolve("1/5", &["--output", r#""noted: hi""#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let store = SqliteStore::open(&db).expect("store");
    assert_eq!(
        store.load("r-2").unwrap().unwrap().status,
        RunStatus::Paused
    );
    drop(store);

    let exported = dir.join("r-1.json");
    let out = cargo_tackle(
        &[
            "runs",
            "--store",
            db_arg,
            "export",
            "r-1",
            exported.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = tackle::replay::load(&exported).expect("a cassette");
    assert!(
        file.interactions.iter().any(|i| i.key == "demo.wire@1"),
        "{:?}",
        file.interactions
    );
    // The export is a cassette like a recorded one: it holds the schema fingerprint
    // of every tool it calls, so `verify` accepts it...
    assert_eq!(
        file.tools.get("demo.wire@1").map(String::as_str),
        Some(
            runtime
                .registry()
                .get("demo.wire@1")
                .expect("the tool")
                .schema_fingerprint()
        ),
        "{:?}",
        file.tools
    );
    let out = cargo_tackle(&["cassette", "verify", exported.to_str().unwrap()], "");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = cargo_tackle(&["cassette", "show", exported.to_str().unwrap()], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("1 tool fingerprint(s)"), "{shown}");
    assert!(shown.contains("demo.wire@1"), "{shown}");
    // ...and it replays the run offline: the wire is served from it (no approval is
    // asked, nothing is wired), and every recorded call is used.
    {
        use tackle::replay::{CassetteConfig, Mode};
        let replay = tackle::Cassette::open(
            &exported,
            CassetteConfig::new()
                .with_mode(Mode::Replay)
                .with_env_overrides(false),
        )
        .expect("the export opens as a cassette");
        let offline = tackle::Run::new(&runtime).with_cassette(replay);
        let agent = tackle::Agent::new(script()).tools(["demo.wire"]);
        let state = tokio
            .block_on(async { agent.run(&offline, "Wire 500.").context(&ctx).await })
            .expect("the replay")
            .state;
        assert_eq!(state.final_answer.as_deref(), Some("Wired 500."));
        assert_eq!(state.tool_calls[0].result, Some(json!("wired 500")));
        let report = offline.finish().expect("every recorded call replayed");
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }

    let copy = dir.join("copy.db");
    let out = cargo_tackle(
        &["runs", "--store", db_arg, "backup", copy.to_str().unwrap()],
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let backed = SqliteStore::open(&copy).expect("the copy opens");
    assert_eq!(backed.runs().unwrap(), ["r-1", "r-2"]);
    assert_eq!(
        backed.journal("r-1").unwrap().len(),
        SqliteStore::open(&db)
            .unwrap()
            .journal("r-1")
            .unwrap()
            .len()
    );

    let bad = dir.join("bad.db");
    std::fs::write(&bad, b"x").expect("write");
    let out = cargo_tackle(&["runs", "--store", bad.to_str().unwrap(), "list"], "");
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.db"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cassette of one `demo.weather@1` call whose reading holds `note`.
fn cassette_with(note: &str) -> Value {
    json!({
        "format": "tackle-cassette",
        "version": 1,
        "complete": true,
        "name": "hostile",
        "tools": {"demo.weather@1": "0000000000000000"},
        "interactions": [{
            "call": 0, "key": "demo.weather@1", "kind": "tool", "policy": "recorded-result",
            "input": {"city": "Oslo"}, "outcome": {"ok": {"celsius": 12, "note": note}}
        }]
    })
}

fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// `a -> .` and `b -> .` make a folder walk that follows links endless, and a FIFO
/// named like a cassette blocks whoever opens it: `verify`, `review` and `accept`
/// finish within the deadline all the same, and a FIFO named on the command line is
/// refused, not opened.
fn walks_pass_over_link_loops_and_fifos() {
    let dir = temp("loops");
    let cassette = dir.join("c.json");
    let pending = dir.join("c.pending.json");
    write(&cassette, &cassette_with("before"));
    write(&pending, &cassette_with("after"));
    std::os::unix::fs::symlink(".", dir.join("a")).expect("a -> .");
    std::os::unix::fs::symlink(".", dir.join("b")).expect("b -> .");
    let fifos = Command::new("mkfifo")
        .arg(dir.join("x.json"))
        .arg(dir.join("y.pending.json"))
        .status()
        .is_ok_and(|s| s.success());
    if !fifos {
        println!("no `mkfifo`: the FIFO part is not checked");
    }
    let d = dir.to_str().expect("dir");

    let out = cargo_tackle(&["cassette", "verify", d], "");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("1 checked, 0 with problems"),
        "{}",
        stdout(&out)
    );
    let out = cargo_tackle(&["review", d], "s\n");
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("1 left pending"), "{}", stdout(&out));
    let after = bytes_of(&pending);
    let out = cargo_tackle(&["accept", d], "");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        stdout(&out).matches("accepted").count(),
        1,
        "{}",
        stdout(&out)
    );
    assert_eq!(bytes_of(&cassette), after);
    if fifos {
        let fifo = dir.join("x.json");
        let out = cargo_tackle(&["cassette", "show", fifo.to_str().expect("path")], "");
        assert_eq!(code(&out), 5, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("not a regular file"),
            "{}",
            stderr(&out)
        );
        let out = cargo_tackle(&["cassette", "verify", fifo.to_str().expect("path")], "");
        assert_eq!(code(&out), 5, "{}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pending file that is a symbolic link is never accepted (the cassette would
/// become a link, or take another tree's file): exit 4, whichever way it is named,
/// with nothing changed.
fn accept_refuses_symlinked_pending_files() {
    let dir = temp("linked-pending");
    let tree = dir.join("tree");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&tree).expect("tree");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    let cassette = tree.join("w.json");
    let pending = tree.join("w.pending.json");
    write(&cassette, &cassette_with("mine"));
    write(&elsewhere.join("evil.json"), &cassette_with("theirs"));
    std::os::unix::fs::symlink("../elsewhere/evil.json", &pending).expect("link");
    let before = bytes_of(&cassette);

    for named in [&tree, &pending, &cassette] {
        for command in ["accept", "review", "reject"] {
            let out = cargo_tackle(&[command, named.to_str().expect("path")], "a\n");
            assert_eq!(
                code(&out),
                4,
                "{command} {}: {}",
                named.display(),
                stderr(&out)
            );
            assert!(
                stderr(&out).contains("a symbolic link, not a recording"),
                "{}",
                stderr(&out)
            );
            assert!(!is_link(&cassette), "the cassette is never a link");
            assert_eq!(bytes_of(&cassette), before);
            assert!(is_link(&pending), "left for a person to remove");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pending file reached through a symbolic link that leads out of its folder is
/// in another tree: named through the link it is refused (exit 4), a folder walk
/// does not follow the link, and the real path is accepted. A link that stays in its
/// folder is fine.
fn accept_refuses_pending_files_through_a_link_out_of_the_tree() {
    let dir = temp("linked-folder");
    let root = dir.join("root");
    let other = dir.join("other");
    std::fs::create_dir_all(root.join("v2")).expect("root");
    std::fs::create_dir_all(&other).expect("other");
    std::os::unix::fs::symlink("../other", root.join("link")).expect("link");
    let (cassette, pending) = (other.join("y.json"), other.join("y.pending.json"));
    write(&cassette, &cassette_with("kept"));
    write(&pending, &cassette_with("theirs"));
    let before = bytes_of(&cassette);

    let through = root.join("link").join("y.pending.json");
    for named in [
        through.clone(),
        root.join("link").join("y.json"),
        root.join("link"),
    ] {
        let out = cargo_tackle(&["accept", named.to_str().expect("path")], "");
        assert_eq!(code(&out), 4, "{}: {}", named.display(), stderr(&out));
        assert!(
            stderr(&out).contains("which leads out of its folder"),
            "{}",
            stderr(&out)
        );
        assert_eq!(bytes_of(&cassette), before);
        assert!(pending.exists());
    }
    let out = cargo_tackle(&["accept", root.to_str().expect("path")], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("nothing pending"), "{}", stdout(&out));
    assert_eq!(bytes_of(&cassette), before, "the walk stays in its tree");

    // The real path is the way to accept it.
    let theirs = bytes_of(&pending);
    let out = cargo_tackle(&["accept", pending.to_str().expect("path")], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(bytes_of(&cassette), theirs);

    // A link within its folder leads nowhere else.
    std::os::unix::fs::symlink("v2", root.join("current")).expect("link");
    write(&root.join("v2").join("z.json"), &cassette_with("old"));
    write(
        &root.join("v2").join("z.pending.json"),
        &cassette_with("new"),
    );
    let within = root.join("current").join("z.pending.json");
    let out = cargo_tackle(&["accept", within.to_str().expect("path")], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!root.join("v2").join("z.pending.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `review` decides on the recording it showed: a pending file replaced between its
/// diff and the answer is left pending ("changed since it was shown"), the cassette
/// untouched; reviewed again, the new recording is what is accepted.
fn review_decides_only_what_it_showed() {
    let dir = temp("swap");
    let cassette = dir.join("s.json");
    let pending = dir.join("s.pending.json");
    write(&cassette, &cassette_with("committed"));
    write(&pending, &cassette_with("shown"));
    let before = bytes_of(&cassette);
    let d = OsStr::new(dir.to_str().expect("dir"));

    for answer in ["a\n", "r\n"] {
        let mut review = Running::tackle(&[OsStr::new("review"), d]);
        review.wait_for("[a/r/s/q] ");
        assert!(
            String::from_utf8_lossy(&review.seen).contains("\"shown\""),
            "the diff shows the recording"
        );
        // Swapped after the diff, before the answer.
        write(&pending, &cassette_with("swapped in unseen"));
        let swapped = bytes_of(&pending);
        let out = review.finish(answer);
        assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
        assert!(
            stdout(&out).contains("changed since it was shown; review it again"),
            "{}",
            stdout(&out)
        );
        assert_eq!(bytes_of(&cassette), before, "nothing unseen is committed");
        assert_eq!(bytes_of(&pending), swapped, "left pending");
        write(&pending, &cassette_with("shown"));
    }

    // Unchanged, the shown recording is accepted, byte for byte.
    let shown = bytes_of(&pending);
    let out = cargo_tackle(&["review", d.to_str().expect("dir")], "a\n");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(bytes_of(&cassette), shown);
    assert!(!pending.exists());
    assert!(!is_link(&cassette));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Raw bytes a terminal acts on: ESC, BEL, the single-byte CSI (U+009B, whose UTF-8
/// ends in 0x9b) and a bidirectional override.
fn assert_no_terminal_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!bytes.contains(&0x1b), "{what}: a raw ESC in {text}");
    assert!(!bytes.contains(&0x07), "{what}: a raw BEL in {text}");
    assert!(!bytes.contains(&0x9b), "{what}: a raw 0x9b in {text}");
    assert!(!text.contains('\u{202e}'), "{what}: a raw U+202E in {text}");
}

/// A cassette (and a run store) holding an OSC 52 clipboard write, a line erase, a
/// C1 CSI and a bidirectional override, in every field that is printed, and in a
/// file name: `show`, `verify`, `diff` (text and JSON), `review`, `accept`, error
/// messages and `runs` print them as visible escapes, never raw.
fn terminal_controls_in_cassettes_are_escaped() {
    let dir = temp("controls");
    let evil = "\u{1b}]52;c;aGVsbG8=\u{7}\u{1b}[2K\u{9b}31m\u{202e}txt";
    let hostile = json!({
        "format": "tackle-cassette",
        "version": 1,
        "complete": true,
        "name": format!("name {evil}"),
        "tools": {"demo.weather@1": "0000000000000000", format!("demo.{evil}@1"): "0000000000000000"},
        "interactions": [
            {"call": 0, "key": "demo.weather@1", "kind": "tool", "policy": "recorded-result",
             "input": {"city": evil}, "outcome": {"ok": {"celsius": 12, "note": evil, evil: 1}}},
            {"call": 1, "key": format!("demo.{evil}@1"), "kind": "tool", "policy": "recorded-result",
             "input": {"x": evil}, "outcome": {"ok": evil}},
            {"call": 2, "key": "llm.chat", "kind": "operation", "policy": "recorded-result",
             "input": {"messages": [{"role": evil, "content": evil}]},
             "outcome": {"ok": {"text": evil, "tool_calls": [{"name": evil, "arguments": {"a": evil}}]}}}
        ]
    });
    let plain = dir.join("plain.json");
    write(&plain, &cassette_with("calm"));
    let file = dir.join("evil \u{1b}[2K.json");
    write(&file, &hostile);
    let (p, f) = (plain.as_os_str(), file.as_os_str());
    let runs: [&[&OsStr]; 5] = [
        &[OsStr::new("cassette"), OsStr::new("show"), f],
        &[
            OsStr::new("cassette"),
            OsStr::new("verify"),
            dir.as_os_str(),
        ],
        &[OsStr::new("cassette"), OsStr::new("diff"), p, f],
        &[
            OsStr::new("cassette"),
            OsStr::new("diff"),
            p,
            f,
            OsStr::new("--json"),
        ],
        &[OsStr::new("cassette"), OsStr::new("prune"), f],
    ];
    for args in runs {
        let out = cargo_tackle_os(args, "");
        let what = format!("{args:?}");
        assert!(code(&out) <= 3, "{what}: {}", stderr(&out));
        assert_no_terminal_controls(&what, &out.stdout);
        assert_no_terminal_controls(&what, &out.stderr);
    }
    let out = cargo_tackle_os(&[OsStr::new("cassette"), OsStr::new("show"), f], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\\u{1b}]52;c;aGVsbG8=\\u{7}\\u{1b}[2K\\u{9b}31m\\u{202e}txt"),
        "shown as escapes: {}",
        stdout(&out)
    );
    let out = cargo_tackle_os(
        &[
            OsStr::new("cassette"),
            OsStr::new("diff"),
            p,
            f,
            OsStr::new("--json"),
        ],
        "",
    );
    let diff: Value = serde_json::from_slice(&out.stdout).expect("still JSON");
    assert!(
        diff.to_string().contains('\u{9b}'),
        "the same value: {diff}"
    );

    // Review and accept of a pending file with that content and name.
    let sub = dir.join("review");
    std::fs::create_dir_all(&sub).expect("dir");
    let cassette = sub.join("evil \u{1b}[2K.json");
    write(&cassette, &cassette_with("calm"));
    write(&sub.join("evil \u{1b}[2K.pending.json"), &hostile);
    let s = sub.as_os_str();
    let out = cargo_tackle_os(&[OsStr::new("review"), s], "s\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_no_terminal_controls("review", &out.stdout);
    let out = cargo_tackle_os(&[OsStr::new("accept"), s], "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_terminal_controls("accept", &out.stdout);
    assert!(stdout(&out).contains("\\u{1b}[2K.json"), "{}", stdout(&out));

    // An error naming such a file.
    let corrupt = dir.join("corrupt \u{9b}2J.json");
    std::fs::write(&corrupt, "{").expect("write");
    let out = cargo_tackle_os(
        &[
            OsStr::new("cassette"),
            OsStr::new("show"),
            corrupt.as_os_str(),
        ],
        "",
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_no_terminal_controls("error", &out.stderr);
    assert!(
        stderr(&out).contains("corrupt \\u{9b}2J.json"),
        "{}",
        stderr(&out)
    );

    // A run store's text.
    let db = dir.join("runs.db");
    {
        use std::sync::Arc;
        use tackle::durable::{DurableRun, RunStore};
        use tackle_sqlite::SqliteStore;
        let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&db).expect("store"));
        DurableRun::start(store, "r-1", &format!("task {evil}")).expect("start");
    }
    let store = db.to_str().expect("path");
    for command in [
        &["list"][..],
        &["list", "--json"],
        &["show", "r-1"],
        &["show", "r-1", "--json"],
    ] {
        let mut args = vec!["runs", "--store", store];
        args.extend_from_slice(command);
        let out = cargo_tackle(&args, "");
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_no_terminal_controls(&format!("{args:?}"), &out.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An argument that is not UTF-8 is bad usage (exit 2) for both programs, even where
/// a file name is expected, and the error shows its bytes escaped.
fn arguments_that_are_not_utf8_are_bad_usage() {
    let bad = OsStr::from_bytes(b"bad\xffname\x1b.json");
    for args in [
        vec![OsStr::new("cassette"), OsStr::new("show"), bad],
        vec![OsStr::new("review"), bad],
        vec![OsStr::new("cassette"), OsStr::new("verify"), bad],
    ] {
        let out = cargo_tackle_os(&args, "");
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not UTF-8"), "{}", stderr(&out));
        assert!(stderr(&out).contains(r"bad\xFFname"), "{}", stderr(&out));
        assert_no_terminal_controls("error", &out.stderr);
    }
    let mut command = Command::new(std::env::current_exe().expect("this test"));
    command.env(CHILD, "1").env("NO_COLOR", "1").args([
        OsStr::new("pipeline"),
        OsStr::new("run"),
        bad,
    ]);
    let out = Running::start(command).finish("");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("is not UTF-8"), "{}", stderr(&out));
}

/// A reader that closed its end before the listing was written (`| head` that has
/// read enough): the program ends with 141, as one ended by `SIGPIPE`, and prints no
/// panic.
fn a_closed_output_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(std::env::current_exe().expect("this test"))
        .env(CHILD, "1")
        .env("NO_COLOR", "1")
        .arg("list")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(tackle_cli::CLOSED_OUTPUT),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

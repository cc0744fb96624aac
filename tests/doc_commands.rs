//! Every `cargo run --example ...` command that README.md and docs/ advertise runs, and
//! prints what a reader is told to expect.
//!
//! The commands are read from the documents themselves (fenced blocks and inline
//! code), so a command added to a document without an entry in [`EXPECTED`] fails
//! here, as does one whose example no longer builds, fails, or stops saying what it
//! should. A few commands cannot run offline in a test (a live model, a server that
//! runs until stopped by hand): each names why, and what covers it instead.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a command must do.
enum Expect {
    /// Exit with success, printing this line (in stdout or stderr).
    Prints(&'static str),
    /// Exit with success given this input, printing this line.
    Answers {
        input: &'static str,
        prints: &'static str,
    },
    /// Run until stopped, having printed this line: killed once it has.
    Serves(&'static str),
    /// Not run here, for this reason.
    Skip(&'static str),
}

/// Each advertised command (as written, whitespace collapsed) and what it must do.
const EXPECTED: &[(&str, Expect)] = &[
    (
        "cargo run --example agent",
        Expect::Prints("Oslo is about 1701.6 miles"),
    ),
    (
        "cargo run --example evals",
        Expect::Prints("4 of 4 case(s) passed (100%)"),
    ),
    (
        "cargo run --example quickstart",
        Expect::Prints("add::KEY = math.add@1"),
    ),
    (
        "cargo run --example record_replay",
        Expect::Prints("2. Replay: the service is offline"),
    ),
    (
        "cargo run --example executor",
        Expect::Prints("audit trail:"),
    ),
    (
        "cargo run --example durable --features sqlite",
        Expect::Prints("resumed to the end"),
    ),
    (
        "cargo run --example tools --features cli -- list",
        Expect::Prints("atlas.lookup"),
    ),
    (
        "cargo run --example rag_skill -- \"how does replay work?\"",
        Expect::Prints("sources:"),
    ),
    (
        "cargo run --example mcp_server --features mcp",
        Expect::Answers {
            input: r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc-check","version":"1"}}}"#,
            prints: "\"protocolVersion\"",
        },
    ),
    (
        "cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8765",
        Expect::Serves("serving"),
    ),
    (
        "cargo run --release -p tackle-suite --example mcp_http_load",
        Expect::Skip("a load generator whose figures are a row of docs/performance.md, measured by hand on a quiet machine"),
    ),
    (
        "cargo run --example agent -- --script",
        Expect::Skip("re-records the committed cassette; tests/agent_example.rs checks that it is current"),
    ),
];

/// Commands whose line names a live model (an endpoint or a key in the environment,
/// or a file recorded from one) are not run here: `suite/tests/local_model.rs` runs
/// the agent example against a real local model.
fn needs_a_live_model(command: &str) -> bool {
    command.contains("TACKLE_OPENAI_")
        || command.contains("--record")
        || command.contains("--replay")
}

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The documents that advertise commands: README.md and every page of docs/.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![workspace().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(workspace().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The `cargo run` commands of a document: from fenced code blocks (a line each, `\`
/// continuations joined, a trailing `# comment` dropped) and from inline code spans
/// (which may wrap lines).
fn commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    let mut carried = String::new();
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let line = line.trim_end();
            if let Some(head) = line.strip_suffix('\\') {
                carried.push_str(head);
                carried.push(' ');
                continue;
            }
            let whole = format!("{carried}{line}");
            carried.clear();
            let code = whole.split(" #").next().unwrap_or_default();
            found.extend(from_code(code));
        } else {
            prose.push_str(line);
            prose.push(' ');
        }
    }
    // Inline code spans of the prose, which may have wrapped.
    for (i, span) in prose.split('`').enumerate() {
        if i % 2 == 1 {
            found.extend(from_code(span));
        }
    }
    found
}

/// The command in a piece of code, from its environment assignments on: the words
/// before `cargo run` that are `NAME=value`, then the rest.
fn from_code(code: &str) -> Option<String> {
    let at = code.find("cargo run")?;
    let before: Vec<&str> = code[..at].split_whitespace().collect();
    let env: Vec<&str> = before
        .iter()
        .rev()
        .take_while(|w| w.contains('=') && !w.starts_with('-'))
        .copied()
        .collect();
    let mut words: Vec<&str> = env.into_iter().rev().collect();
    words.extend(code[at..].split_whitespace());
    Some(words.join(" "))
}

/// `command`'s words as a shell would split them (double quotes only, as the
/// documents use).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// Runs `command` (a `cargo run ...` line) from the workspace, within `limit`;
/// whether it succeeded (or, for a server, printed `until` before being stopped),
/// and what it printed.
fn run(command: &str, input: Option<&str>, until: Option<&str>, limit: Duration) -> (bool, String) {
    let words = words(command);
    assert_eq!(words[..2], ["cargo", "run"], "{command}");
    let mut child = Command::new(env!("CARGO"))
        .args(&words[1..])
        .current_dir(workspace())
        .env_remove("TACKLE_CASSETTE")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        writeln!(stdin, "{input}").expect("the example's input");
        // Dropped: the input ends, and a stdio server ends with it.
    }
    let (lines, seen) = mpsc::channel::<String>();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
    }
    drop(lines);
    let deadline = Instant::now() + limit;
    let mut printed = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match seen.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(line) => {
                printed.push_str(&line);
                printed.push('\n');
                if until.is_some_and(|until| line.contains(until)) {
                    let _ = child.kill();
                    let _ = child.wait();
                    return (true, printed);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                let _ = child.kill();
                let _ = child.wait();
                printed.push_str(&format!("(stopped after {limit:?})\n"));
                return (false, printed);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let status = child.wait().expect("the command's status");
    (status.success() && until.is_none(), printed)
}

#[test]
fn every_advertised_example_command_runs_and_says_what_it_should() {
    let mut problems = Vec::new();
    let mut ran = 0;
    let mut advertised: Vec<(String, String)> = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a document");
        let name = file
            .strip_prefix(workspace())
            .unwrap_or(&file)
            .display()
            .to_string();
        for command in commands(&text) {
            if !advertised.iter().any(|(c, _)| *c == command) {
                advertised.push((command, name.clone()));
            }
        }
    }
    assert!(
        advertised
            .iter()
            .any(|(c, _)| c == "cargo run --example agent"),
        "the README's first command was not found: {advertised:?}"
    );
    // The first build may take minutes; every later one is quick.
    let limit = Duration::from_secs(900);
    for (command, file) in &advertised {
        if !command.contains("--example") {
            continue;
        }
        let expected = EXPECTED.iter().find(|(c, _)| c == command).map(|(_, e)| e);
        let (ok, printed, wanted) = match expected {
            None if needs_a_live_model(command) => continue,
            None => {
                problems.push(format!(
                    "{file}: `{command}` is advertised but not checked: add it to EXPECTED"
                ));
                continue;
            }
            Some(Expect::Skip(why)) => {
                eprintln!("not run here: `{command}` ({file}): {why}");
                continue;
            }
            Some(Expect::Prints(line)) => {
                let (ok, printed) = run(command, None, None, limit);
                (ok, printed, *line)
            }
            Some(Expect::Answers { input, prints }) => {
                let (ok, printed) = run(command, Some(input), None, limit);
                (ok, printed, *prints)
            }
            Some(Expect::Serves(line)) => {
                let (ok, printed) = run(command, None, Some(line), limit);
                (ok, printed, *line)
            }
        };
        ran += 1;
        if !ok || !printed.contains(wanted) {
            problems.push(format!(
                "{file}: `{command}` {} without printing {wanted:?}:\n{printed}",
                if ok { "succeeded" } else { "failed" }
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(ran >= 8, "only {ran} commands ran: {advertised:?}");
}

#[test]
fn commands_are_found_in_blocks_and_in_wrapped_inline_code() {
    let text = "Run `cargo run --example rag_skill --\n\"how does replay work?\"` now.\n\
                ```sh\nTACKLE_X=1 cargo run --example agent -- \\\n  --script   # again\n```\n";
    assert_eq!(
        commands(text),
        [
            "TACKLE_X=1 cargo run --example agent -- --script",
            "cargo run --example rag_skill -- \"how does replay work?\"",
        ]
    );
    assert_eq!(
        words("cargo run --example rag_skill -- \"how does replay work?\""),
        [
            "cargo",
            "run",
            "--example",
            "rag_skill",
            "--",
            "how does replay work?"
        ]
    );
}

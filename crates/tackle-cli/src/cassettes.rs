//! Cassettes from a terminal: `cargo tackle`.
//!
//! | command | what it does |
//! |---|---|
//! | `cassette show FILE` | a readable timeline: model turns, tool calls with inputs and outcomes, errors |
//! | `cassette diff A B [--json]` | what changed, interaction by interaction, as JSON pointers (exit 1 when they differ) |
//! | `cassette verify [PATH]...` | the format, completeness, call order, and no token-shaped secrets (exit 1 on problems) |
//! | `cassette prune FILE [--dry-run]` | drops the interactions the last replay did not use |
//! | `review [PATH]...` | walks the pending recordings: shows each one's diff, then accept, reject or skip |
//! | `accept [PATH]...`, `reject [PATH]...` | the same decisions, without asking (for scripts) |
//! | `runs --store PATH ...` | durable runs: list, show, approve, reject, resolve, export, back up (see [`crate::runs`]) |
//! | `eval run\|report\|diff\|accept` | evals: run them, print their reports, compare them with their baselines, accept new baselines (see [`crate::evals`]) |
//! | `completions SHELL` | a completion script |
//!
//! **Review.** `TACKLE_CASSETTE=review cargo test` re-records every cassette a test
//! opens, but writes each fresh recording beside its cassette as
//! `<name>.pending.json`, leaving the cassette as it was (a recording identical to
//! the cassette writes nothing). `cargo tackle review` shows each pending file's
//! changes against its cassette. Accepting writes the recording over the cassette
//! atomically (a temporary file, synced, renamed over it: a reader sees the old
//! cassette or the new one), then deletes the pending file; `review` writes the very
//! bytes it showed, and leaves a pending file that changed since it was shown for
//! another look. Rejecting deletes the pending file. Under `CI`, review mode is
//! refused like every writing mode, so CI never writes pending files.
//!
//! **Hostile folders.** A cassette is never replaced by a symbolic link: `accept`,
//! `reject` and `review` refuse (exit 4) a pending file that is a link, or one
//! named through a link that leads out of the folder it sits in (name the real path
//! instead). Text from a cassette, and file names, are printed with the characters a
//! terminal acts on escaped (see `escape_for_terminal`).
//!
//! **Prune.** A replay run with `TACKLE_CASSETTE_USAGE=1` writes which recorded
//! calls it used beside each cassette (`<name>.usage.json`). `cassette prune` drops
//! the others, but only from the cassette that record was taken from.
//!
//! A `PATH` is a file or a folder. A folder is searched for pending files, skipping
//! `target`, `node_modules` and hidden folders, without following symbolic links to
//! folders (a link to `.` would loop) and without opening FIFOs, sockets or devices.
//! With no `PATH`, the current folder.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::path::{Component, Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::{json, Value};
use tackle_agent::model::COMPLETION_PREFIX;
use tackle_core::replay::file::{
    self, committed_path, digest, load_usage, pending_path, remove, save, usage_path, FORMAT,
    VERSION,
};
use tackle_core::replay::{
    CassetteError, CassetteFile, Interaction, InteractionKind, Outcome, Redactor,
};

use crate::exit::{CliError, Exit};
use crate::files::{read_regular, Links};
use crate::term::{self, clip, escape_for_terminal, paint, shown, Style};
use crate::tools::{clap_exit, finish, utf8_arguments};
use tackle_core::replay::changes::{json_diff, Change};

/// Cassettes from a terminal: show, diff, verify, prune, and review re-recordings;
/// durable runs; evals against their baselines.
#[derive(Debug, Parser)]
#[command(
    name = "cargo tackle",
    bin_name = "cargo tackle",
    version,
    about = "tackle from a terminal: cassettes (show, diff, verify, prune, review re-recordings), durable runs, and evals against their baselines.",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read, compare, check and prune cassette files.
    #[command(subcommand)]
    Cassette(CassetteCommand),
    /// Walk the pending recordings: show each one's changes, then accept, reject or
    /// skip it (answers are read from standard input).
    Review {
        /// Pending files, their cassettes, or folders to search (default: here).
        paths: Vec<PathBuf>,
    },
    /// Accept pending recordings: each replaces its cassette, atomically.
    Accept {
        /// Pending files, their cassettes, or folders to search (default: here).
        paths: Vec<PathBuf>,
    },
    /// Reject pending recordings: each is deleted, and its cassette stays.
    Reject {
        /// Pending files, their cassettes, or folders to search (default: here).
        paths: Vec<PathBuf>,
    },
    /// Durable runs in a SQLite store: list and show them, decide pending
    /// approvals, resolve calls of unknown outcome, export a journal, back the store
    /// up.
    Runs {
        /// The store (a SQLite file; never created by these commands).
        #[arg(long)]
        store: PathBuf,
        /// What to do.
        #[command(subcommand)]
        command: crate::runs::RunsCommand,
    },
    /// Evals: run them, print their reports, compare each with its baseline (the
    /// cases that got worse, better or changed), and accept a run as the new
    /// baseline.
    Eval(crate::evals::EvalArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum CassetteCommand {
    /// Print a cassette as a timeline.
    Show {
        /// The cassette.
        file: PathBuf,
    },
    /// Compare two cassettes interaction by interaction (exit 1 when they differ).
    Diff {
        /// The first (older) cassette.
        before: PathBuf,
        /// The second (newer) cassette.
        after: PathBuf,
        /// Print the differences as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check cassettes: format, completeness, call order, no token-shaped secrets
    /// (exit 1 on problems).
    Verify {
        /// Cassettes, or folders to search for `*.json` cassettes (default: here).
        paths: Vec<PathBuf>,
    },
    /// Drop the interactions the last replay did not use (a replay run with
    /// `TACKLE_CASSETTE_USAGE=1` records them).
    Prune {
        /// The cassette.
        file: PathBuf,
        /// Say what would go, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs `cargo tackle` on this process's arguments and exits with its [`Exit`] code.
pub fn main() -> ! {
    crate::exit::quiet_when_output_closes();
    let exit = run(std::env::args_os());
    std::process::exit(i32::from(exit.code()))
}

/// Runs `cargo tackle` on `args` (the program's name first). Cargo runs
/// `cargo-tackle tackle ARGS...` for `cargo tackle ARGS...`; the binary run directly
/// takes `cargo-tackle ARGS...` too.
pub fn run<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Err(e) = utf8_arguments(&args) {
        return clap_exit(&e);
    }
    if args.get(1).is_some_and(|a| a == "tackle") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    finish(execute(cli))
}

fn execute(cli: Cli) -> Result<Exit, CliError> {
    match cli.command {
        Command::Cassette(CassetteCommand::Show { file }) => show(&file),
        Command::Cassette(CassetteCommand::Diff {
            before,
            after,
            json,
        }) => diff_files(&before, &after, json),
        Command::Cassette(CassetteCommand::Verify { paths }) => verify(&paths),
        Command::Cassette(CassetteCommand::Prune { file, dry_run }) => prune(&file, dry_run),
        Command::Review { paths } => review(&paths),
        Command::Accept { paths } => decide_all(&paths, Verdict::Accept),
        Command::Reject { paths } => decide_all(&paths, Verdict::Reject),
        Command::Runs { store, command } => crate::runs::execute(&store, command),
        Command::Eval(args) => crate::evals::execute(args),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "cargo-tackle", &mut std::io::stdout());
            Ok(Exit::Success)
        }
    }
}

/// Loads a cassette, with the exit its failure deserves (a symbolic link to one is
/// followed).
fn open(path: &Path) -> Result<CassetteFile, CliError> {
    parse_cassette(path, &read_regular(path, Links::Follow)?)
}

/// Reads `bytes` (the file at `path`) as a cassette, with the checks of
/// [`tackle_core::replay::load`]: the format, the version, a file written to the
/// end. Exit 5 when it is not one.
fn parse_cassette(path: &Path, bytes: &[u8]) -> Result<CassetteFile, CliError> {
    let bad = |e: CassetteError| CliError::new(Exit::BadData, e);
    let file: CassetteFile = match serde_json::from_slice(bytes) {
        Ok(file) => file,
        Err(e) => {
            // A cassette of another version may fail to parse as this one: say so.
            let found = serde_json::from_slice::<Value>(bytes)
                .ok()
                .and_then(|v| v.get("version").and_then(Value::as_u64))
                .filter(|v| *v != u64::from(VERSION));
            return Err(bad(match found {
                Some(found) => CassetteError::UnsupportedVersion {
                    path: path.to_owned(),
                    found,
                    supported: VERSION,
                },
                None => CassetteError::Corrupt {
                    path: path.to_owned(),
                    line: e.line(),
                    column: e.column(),
                    message: e.to_string(),
                },
            }));
        }
    };
    if file.format != FORMAT {
        return Err(bad(CassetteError::Corrupt {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: format!("`format` is {:?}, not {FORMAT:?}", file.format),
        }));
    }
    if file.version != VERSION {
        return Err(bad(CassetteError::UnsupportedVersion {
            path: path.to_owned(),
            found: u64::from(file.version),
            supported: VERSION,
        }));
    }
    if !file.complete && file.failure.is_none() {
        return Err(bad(CassetteError::Incomplete {
            path: path.to_owned(),
        }));
    }
    Ok(file)
}

/// A value as one line of JSON, cut to `max` characters, escaped for a terminal.
fn brief(value: &Value, max: usize) -> String {
    escape_for_terminal(&clip(&value.to_string(), max))
}

/// Cassette text cut to `max` characters, escaped for a terminal.
fn text(value: &str, max: usize) -> String {
    escape_for_terminal(&clip(value, max))
}

// ---- show ----

fn show(path: &Path) -> Result<Exit, CliError> {
    let file = open(path)?;
    let colour = term::stdout_colours();
    println!(
        "{}  {} interaction(s), {} tool fingerprint(s)",
        paint(&escape_for_terminal(&file.name), Style::Bold, colour),
        file.interactions.len(),
        file.tools.len()
    );
    if let Some(failure) = &file.failure {
        println!(
            "{} {}",
            paint("the recorded run failed:", Style::Red, colour),
            escape_for_terminal(failure)
        );
    }
    for interaction in &file.interactions {
        show_interaction(interaction, colour);
    }
    Ok(Exit::Success)
}

fn show_interaction(interaction: &Interaction, colour: bool) {
    let model = interaction.key.starts_with(COMPLETION_PREFIX);
    let (label, model) = match (interaction.kind, model) {
        (InteractionKind::Operation, true) => ("model", true),
        (InteractionKind::Tool, _) => ("tool", false),
        (InteractionKind::Operation, false) => ("op", false),
    };
    let policy = serde_json::to_value(interaction.policy)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    println!(
        "#{:<3} {:5} {}  {}",
        interaction.call,
        label,
        paint(&escape_for_terminal(&interaction.key), Style::Bold, colour),
        paint(&policy, Style::Dim, colour)
    );
    if model {
        show_model_turn(interaction, colour);
        return;
    }
    println!("      in:  {}", brief(&interaction.input, 100));
    match &interaction.outcome {
        Outcome::Ok(value) => println!(
            "      {} {}",
            paint("ok:", Style::Green, colour),
            brief(value, 100)
        ),
        Outcome::Error(error) => println!(
            "      {} {}",
            paint(&format!("{:?}:", error.kind()), Style::Red, colour),
            text(&error.to_string(), 100)
        ),
        Outcome::Tombstone => println!(
            "      {}",
            paint(
                "fail-loud: happened here, cannot be replayed",
                Style::Yellow,
                colour
            )
        ),
    }
}

/// A model turn: what it was last told, and what it said or asked for.
fn show_model_turn(interaction: &Interaction, colour: bool) {
    let messages = interaction
        .input
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(last) = messages.last() {
        let role = last.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = last.get("content").and_then(Value::as_str).unwrap_or("");
        println!(
            "      {} message(s); last, {}: {}",
            messages.len(),
            text(role, 20),
            text(content, 90)
        );
    }
    match &interaction.outcome {
        Outcome::Ok(reply) => {
            let says = reply.get("text").and_then(Value::as_str).unwrap_or("");
            if !says.is_empty() {
                println!(
                    "      {} {}",
                    paint("says:", Style::Green, colour),
                    text(says, 100)
                );
            }
            for call in reply
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let name = call.get("name").and_then(Value::as_str).unwrap_or("?");
                let arguments = call.get("arguments").cloned().unwrap_or(Value::Null);
                println!(
                    "      {} {} {}",
                    paint("calls:", Style::Green, colour),
                    text(name, 60),
                    brief(&arguments, 90)
                );
            }
        }
        Outcome::Error(error) => println!(
            "      {} {}",
            paint(&format!("{:?}:", error.kind()), Style::Red, colour),
            text(&error.to_string(), 100)
        ),
        Outcome::Tombstone => println!("      (fail-loud)"),
    }
}

// ---- diff ----

/// How one interaction changed between two cassettes.
#[derive(Debug)]
enum Entry<'a> {
    Added(&'a Interaction),
    Removed(&'a Interaction),
    Changed(&'a Interaction, &'a Interaction, Vec<Change>),
}

/// The two cassettes' interactions paired up: the longest common run of keys is
/// matched in order; what is left is added or removed.
fn pair_up<'a>(before: &'a [Interaction], after: &'a [Interaction]) -> Vec<Entry<'a>> {
    let (n, m) = (before.len(), after.len());
    // The table costs n * m; past a few million cells, pair by position instead.
    let aligned: Vec<(Option<usize>, Option<usize>)> = if n.saturating_mul(m) <= 4_000_000 {
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        let at = |i: usize, j: usize| i * (m + 1) + j;
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[at(i, j)] = if before[i].key == after[j].key {
                    lcs[at(i + 1, j + 1)] + 1
                } else {
                    lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < n || j < m {
            if i < n && j < m && before[i].key == after[j].key {
                out.push((Some(i), Some(j)));
                i += 1;
                j += 1;
            } else if j < m && (i == n || lcs[at(i, j + 1)] >= lcs[at(i + 1, j)]) {
                out.push((None, Some(j)));
                j += 1;
            } else {
                out.push((Some(i), None));
                i += 1;
            }
        }
        out
    } else {
        (0..n.max(m))
            .map(|k| ((k < n).then_some(k), (k < m).then_some(k)))
            .collect()
    };
    let mut entries = Vec::new();
    for pair in aligned {
        match pair {
            (Some(i), Some(j)) => {
                let (a, b) = (&before[i], &after[j]);
                let mut changes = Vec::new();
                if a.key != b.key {
                    changes.push(Change::Changed {
                        pointer: "/key".to_owned(),
                        before: json!(a.key),
                        after: json!(b.key),
                    });
                }
                changes.extend(json_diff("/input", &a.input, &b.input));
                let (oa, ob) = (outcome_value(&a.outcome), outcome_value(&b.outcome));
                changes.extend(json_diff("/outcome", &oa, &ob));
                if !changes.is_empty() {
                    entries.push(Entry::Changed(a, b, changes));
                }
            }
            (Some(i), None) => entries.push(Entry::Removed(&before[i])),
            (None, Some(j)) => entries.push(Entry::Added(&after[j])),
            (None, None) => {}
        }
    }
    entries
}

fn outcome_value(outcome: &Outcome) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}

/// The differences of two cassette files: their interactions, their tools'
/// fingerprints and whether they record a failure.
struct FileDiff<'a> {
    entries: Vec<Entry<'a>>,
    tools: Vec<Change>,
    failure: Vec<Change>,
}

impl FileDiff<'_> {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.tools.is_empty() && self.failure.is_empty()
    }
}

fn file_diff<'a>(before: &'a CassetteFile, after: &'a CassetteFile) -> FileDiff<'a> {
    let tools = json_diff(
        "/tools",
        &serde_json::to_value(&before.tools).unwrap_or(Value::Null),
        &serde_json::to_value(&after.tools).unwrap_or(Value::Null),
    );
    let failure = json_diff("/failure", &json!(before.failure), &json!(after.failure));
    FileDiff {
        entries: pair_up(&before.interactions, &after.interactions),
        tools,
        failure,
    }
}

fn print_diff(diff: &FileDiff<'_>, colour: bool) {
    let mut out = String::new();
    for entry in &diff.entries {
        match entry {
            Entry::Added(b) => out.push_str(&format!(
                "{}\n      in:  {}\n      out: {}\n",
                paint(
                    &format!("+ #{} {} (new)", b.call, escape_for_terminal(&b.key)),
                    Style::Green,
                    colour
                ),
                brief(&b.input, 100),
                brief(&outcome_value(&b.outcome), 100)
            )),
            Entry::Removed(a) => out.push_str(&format!(
                "{}\n",
                paint(
                    &format!("- #{} {} (gone)", a.call, escape_for_terminal(&a.key)),
                    Style::Red,
                    colour
                )
            )),
            Entry::Changed(a, b, changes) => {
                let key = escape_for_terminal(&b.key);
                let head = if a.call == b.call {
                    format!("~ #{} {key}", a.call)
                } else {
                    format!("~ #{} -> #{} {key}", a.call, b.call)
                };
                out.push_str(&format!("{}\n", paint(&head, Style::Yellow, colour)));
                for change in changes {
                    out.push_str(&format!("      {}\n", describe(change, colour)));
                }
            }
        }
    }
    for change in diff.tools.iter().chain(&diff.failure) {
        out.push_str(&format!("{}\n", describe(change, colour)));
    }
    print!("{out}");
}

/// One change as a line: its JSON pointer (made of the cassette's keys, so escaped)
/// and values.
fn describe(change: &Change, colour: bool) -> String {
    match change {
        Change::Added { pointer, value } => format!(
            "{} {}: {}",
            paint("+", Style::Green, colour),
            escape_for_terminal(pointer),
            brief(value, 90)
        ),
        Change::Removed { pointer, value } => format!(
            "{} {}: {}",
            paint("-", Style::Red, colour),
            escape_for_terminal(pointer),
            brief(value, 90)
        ),
        Change::Changed {
            pointer,
            before,
            after,
        } => format!(
            "{} {}: {} -> {}",
            paint("~", Style::Yellow, colour),
            escape_for_terminal(pointer),
            brief(before, 60),
            brief(after, 60)
        ),
    }
}

fn change_json(change: &Change) -> Value {
    match change {
        Change::Added { pointer, value } => json!({"op": "add", "path": pointer, "value": value}),
        Change::Removed { pointer, value } => {
            json!({"op": "remove", "path": pointer, "old": value})
        }
        Change::Changed {
            pointer,
            before,
            after,
        } => json!({"op": "replace", "path": pointer, "old": before, "value": after}),
    }
}

fn diff_json(diff: &FileDiff<'_>) -> Value {
    let interactions: Vec<Value> = diff
        .entries
        .iter()
        .map(|entry| match entry {
            Entry::Added(b) => json!({"added": {"call": b.call, "key": b.key}}),
            Entry::Removed(a) => json!({"removed": {"call": a.call, "key": a.key}}),
            Entry::Changed(a, b, changes) => json!({"changed": {
                "before": a.call, "after": b.call, "key": b.key,
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
            }}),
        })
        .collect();
    json!({
        "interactions": interactions,
        "tools": diff.tools.iter().map(change_json).collect::<Vec<_>>(),
        "failure": diff.failure.iter().map(change_json).collect::<Vec<_>>(),
    })
}

fn diff_files(before: &Path, after: &Path, as_json: bool) -> Result<Exit, CliError> {
    let (a, b) = (open(before)?, open(after)?);
    let diff = file_diff(&a, &b);
    if as_json {
        let text = serde_json::to_string_pretty(&diff_json(&diff))
            .map_err(|e| CliError::new(Exit::Failure, e))?;
        println!("{}", term::escape_json_for_terminal(&text));
    } else if diff.is_empty() {
        println!("no differences");
    } else {
        print_diff(&diff, term::stdout_colours());
    }
    Ok(if diff.is_empty() {
        Exit::Success
    } else {
        Exit::Failure
    })
}

// ---- verify ----

/// The problems of one cassette file (empty: fine).
fn problems_of(path: &Path) -> Vec<String> {
    let file = match open(path) {
        Ok(file) => file,
        Err(e) => return vec![e.message],
    };
    let mut problems = Vec::new();
    for (at, interaction) in file.interactions.iter().enumerate() {
        if interaction.kind == InteractionKind::Tool && !file.tools.contains_key(&interaction.key) {
            problems.push(format!(
                "`{}` (call #{}) at /interactions/{at} has no schema fingerprint in `tools`",
                interaction.key, interaction.call
            ));
        }
        for (part, value) in [
            ("input", interaction.input.clone()),
            ("outcome", outcome_value(&interaction.outcome)),
        ] {
            for pointer in token_shaped(&value) {
                problems.push(format!(
                    "`{}` (call #{}): a token-shaped secret at /interactions/{at}/{part}{pointer}",
                    interaction.key, interaction.call
                ));
            }
        }
    }
    if let Some(failure) = &file.failure {
        if Redactor::new().redact_str(failure) != failure.as_str() {
            problems.push("a token-shaped secret in `failure`".to_owned());
        }
    }
    problems
}

/// The pointers of strings in `value` that hold something shaped like a credential.
fn token_shaped(value: &Value) -> Vec<String> {
    let redactor = Redactor::new();
    let mut found = Vec::new();
    let mut stack = vec![(String::new(), value)];
    while let Some((pointer, value)) = stack.pop() {
        match value {
            Value::String(s) if redactor.redact_str(s) != s.as_str() => found.push(pointer),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{pointer}/{i}"), item));
                }
            }
            Value::Object(map) => {
                let entries: Vec<_> = map.iter().collect();
                for (key, item) in entries.into_iter().rev() {
                    let token = key.replace('~', "~0").replace('/', "~1");
                    stack.push((format!("{pointer}/{token}"), item));
                }
            }
            _ => {}
        }
    }
    found
}

fn verify(paths: &[PathBuf]) -> Result<Exit, CliError> {
    let files = collect(paths, |path| {
        path.extension().is_some_and(|e| e == "json")
            && !is_side_file(path)
            && looks_like_cassette(path)
    })?;
    if files.is_empty() {
        return Err(CliError::new(Exit::NotFound, "no cassettes to verify"));
    }
    let colour = term::stdout_colours();
    let mut bad = 0;
    for file in &files {
        let problems = problems_of(file);
        if problems.is_empty() {
            println!("{} {}", paint("ok", Style::Green, colour), shown(file));
        } else {
            bad += 1;
            println!("{} {}", paint("bad", Style::Red, colour), shown(file));
            for problem in problems {
                println!("      {}", escape_for_terminal(&problem));
            }
        }
        if std::fs::symlink_metadata(pending_path(file)).is_ok() {
            println!(
                "      {} a pending recording waits for review: {}",
                paint("note:", Style::Yellow, colour),
                shown(&pending_path(file))
            );
        }
    }
    println!("{} checked, {bad} with problems", files.len());
    Ok(if bad == 0 {
        Exit::Success
    } else {
        Exit::Failure
    })
}

/// Whether `path` is a pending or usage file rather than a cassette.
fn is_side_file(path: &Path) -> bool {
    committed_path(path).is_some()
        || path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".usage.json"))
}

/// Whether a JSON file in a searched folder says it is a cassette (its start names
/// the format), so folders of other JSON are not reported. Only a regular file (or a
/// link to one) is opened: opening a FIFO would wait for a writer.
fn looks_like_cassette(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 256];
    let read = std::fs::File::open(path)
        .and_then(|mut f| {
            if f.metadata()?.is_file() {
                f.read(&mut head)
            } else {
                Ok(0)
            }
        })
        .unwrap_or(0);
    String::from_utf8_lossy(&head[..read]).contains("\"tackle-cassette\"")
}

// ---- prune ----

fn prune(path: &Path, dry_run: bool) -> Result<Exit, CliError> {
    let mut file = open(path)?;
    let usage_file = usage_path(path);
    let usage = load_usage(path).map_err(|e| {
        if usage_file.exists() {
            CliError::new(Exit::BadData, e)
        } else {
            CliError::new(
                Exit::NotFound,
                format!(
                    "{}: no usage record; replay with TACKLE_CASSETTE_USAGE=1 first",
                    usage_file.display()
                ),
            )
        }
    })?;
    if usage.digest != digest(&file.interactions) {
        return Err(CliError::new(
            Exit::BadData,
            format!(
                "{}: the cassette changed since its usage was recorded; replay with TACKLE_CASSETTE_USAGE=1 again",
                path.display()
            ),
        ));
    }
    let used: HashSet<usize> = usage.used.iter().copied().collect();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (at, interaction) in file.interactions.into_iter().enumerate() {
        if used.contains(&at) {
            kept.push(interaction);
        } else {
            dropped.push(interaction);
        }
    }
    for interaction in &dropped {
        println!(
            "{} #{} {} {}",
            if dry_run { "would drop" } else { "dropped" },
            interaction.call,
            escape_for_terminal(&interaction.key),
            brief(&interaction.input, 80)
        );
    }
    println!(
        "{}: {} kept, {} {}",
        shown(path),
        kept.len(),
        dropped.len(),
        if dry_run { "to drop" } else { "dropped" }
    );
    if dry_run || dropped.is_empty() {
        return Ok(Exit::Success);
    }
    // Fingerprints of tools no interaction calls any more go too.
    let keys: HashSet<&str> = kept.iter().map(|i| i.key.as_str()).collect();
    file.tools.retain(|key, _| keys.contains(key.as_str()));
    file.interactions = kept;
    save(path, &file).map_err(|e| CliError::new(Exit::Io, e))?;
    remove(&usage_file).map_err(|e| CliError::new(Exit::Io, e))?;
    Ok(Exit::Success)
}

// ---- review ----

/// What to do with a pending recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Accept,
    Reject,
}

/// Every file under `paths` (default: the current folder) that `wanted` takes;
/// folders are walked with a stack, skipping `target`, `node_modules` and hidden
/// folders. A named file is taken as is (a named link is followed).
///
/// The walk looks at each entry's own type: a symbolic link to a folder is not
/// followed (`a -> .` would loop for ever), and FIFOs, sockets and devices are
/// passed over (opening a FIFO waits for a writer). A symbolic link to a file is
/// offered to `wanted`, which decides.
fn collect(paths: &[PathBuf], wanted: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, CliError> {
    let roots = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths.to_vec()
    };
    let mut found = Vec::new();
    for root in roots {
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_file() => {
                found.push(root);
                continue;
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(CliError::new(
                    Exit::BadData,
                    format!("{}: not a regular file or a folder", root.display()),
                ))
            }
            Err(_) => {
                return Err(CliError::new(
                    Exit::NotFound,
                    format!("{}: no such file or folder", root.display()),
                ))
            }
        }
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| CliError::new(Exit::Io, format!("{}: {e}", dir.display())))?;
            let mut files = Vec::new();
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                        stack.push(path);
                    }
                } else if (kind.is_file() || kind.is_symlink()) && wanted(&path) {
                    files.push(path);
                }
            }
            found.extend(files);
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The first symbolic link along `path` (its last component included when `last`)
/// that leads out of the folder it sits in: its target, resolved, is not inside that
/// folder. A link within its folder (`current -> v2`, even `a -> .`) passes; so do
/// links outside the path as written (the current folder is where it is). A link
/// that cannot be resolved counts as leading out.
fn link_out_of_its_folder(path: &Path, last: bool) -> Option<PathBuf> {
    let components: Vec<Component<'_>> = path.components().collect();
    let upto = if last {
        components.len()
    } else {
        components.len().saturating_sub(1)
    };
    let mut prefix = PathBuf::new();
    for component in &components[..upto] {
        prefix.push(component);
        if !matches!(component, Component::Normal(_)) {
            continue;
        }
        let is_link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        let folder = match prefix.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let inside = match (
            std::fs::canonicalize(&folder),
            std::fs::canonicalize(&prefix),
        ) {
            (Ok(folder), Ok(target)) => target.starts_with(folder),
            _ => false,
        };
        if !inside {
            return Some(prefix);
        }
    }
    None
}

/// Refuses (exit 4) a path named through a symbolic link that leads out of its
/// folder ([`link_out_of_its_folder`]): a decision there would land in another tree.
fn refuse_link_out(path: &Path, last: bool) -> Result<(), CliError> {
    match link_out_of_its_folder(path, last) {
        None => Ok(()),
        Some(link) => Err(CliError::new(
            Exit::Refused,
            format!(
                "{}: reached through the symbolic link {}, which leads out of its folder; name the real path if that is meant (refused)",
                path.display(),
                link.display()
            ),
        )),
    }
}

/// Refuses a pending file that is not a regular file of its own: a symbolic link
/// (exit 4; accepting it would make the cassette a link, or copy another tree's file
/// into it) or a FIFO, socket, device or folder (exit 5).
fn refuse_odd_pending(pending: &Path) -> Result<(), CliError> {
    let meta = std::fs::symlink_metadata(pending).map_err(|e| {
        CliError::new(
            Exit::NotFound,
            format!("{}: no such pending recording ({e})", pending.display()),
        )
    })?;
    if meta.file_type().is_symlink() {
        return Err(CliError::new(
            Exit::Refused,
            format!(
                "{}: a symbolic link, not a recording: a cassette is never replaced by a link; remove it by hand (refused)",
                pending.display()
            ),
        ));
    }
    if !meta.is_file() {
        return Err(CliError::new(
            Exit::BadData,
            format!("{}: not a regular file", pending.display()),
        ));
    }
    Ok(())
}

/// The pending files `paths` name: pending files, cassettes with one, or folders.
/// Every one is checked before any decision is made: one that is a symbolic link,
/// or named through a link out of its folder, refuses the whole command (exit 4).
fn pending_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut named = Vec::new();
    let mut folders = Vec::new();
    for path in paths {
        if path.is_dir() {
            refuse_link_out(path, true)?;
            folders.push(path.clone());
        } else if committed_path(path).is_some() {
            if std::fs::symlink_metadata(path).is_err() {
                return Err(CliError::new(
                    Exit::NotFound,
                    format!("{}: no such pending recording", path.display()),
                ));
            }
            named.push(path.clone());
        } else {
            let pending = pending_path(path);
            if std::fs::symlink_metadata(&pending).is_err() {
                return Err(CliError::new(
                    Exit::NotFound,
                    format!("{}: no pending recording for it", path.display()),
                ));
            }
            named.push(pending);
        }
    }
    for pending in &named {
        refuse_link_out(pending, false)?;
    }
    if paths.is_empty() || !folders.is_empty() {
        named.extend(collect(&folders, |p| committed_path(p).is_some())?);
    }
    named.sort();
    named.dedup();
    for pending in &named {
        refuse_odd_pending(pending)?;
    }
    Ok(named)
}

/// The cassette the pending file `pending` is a recording of.
fn committed_of(pending: &Path) -> Result<PathBuf, CliError> {
    committed_path(pending).ok_or_else(|| {
        CliError::new(
            Exit::Usage,
            format!("{}: not a pending recording", pending.display()),
        )
    })
}

/// Writes `bytes` to `path` atomically, as the runtime writes cassettes
/// ([`file::write_atomically`]: a fresh temporary file, never through a link, renamed
/// over `path`, then the folder synced).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    file::write_atomically(path, bytes).map_err(|e| {
        CliError::new(
            Exit::Io,
            format!("{} could not be written: {e}", path.display()),
        )
    })
}

/// Accepts the recording `bytes` read from `pending`: writes them over its cassette
/// atomically, then deletes the pending file.
fn commit(pending: &Path, committed: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomic(committed, bytes)?;
    remove(pending).map_err(|e| CliError::new(Exit::Io, e))
}

/// Carries out `verdict` on the pending file `pending`. Accepting reads it (a
/// regular file, never a link), checks that it reads as a cassette, and writes those
/// bytes over its cassette ([`commit`]); rejecting deletes it.
fn decide(pending: &Path, verdict: Verdict) -> Result<PathBuf, CliError> {
    let committed = committed_of(pending)?;
    match verdict {
        Verdict::Accept => {
            let bytes = read_regular(pending, Links::Refuse)?;
            parse_cassette(pending, &bytes)?;
            commit(pending, &committed, &bytes)?;
        }
        Verdict::Reject => {
            remove(pending).map_err(|e| CliError::new(Exit::Io, e))?;
        }
    }
    Ok(committed)
}

fn decide_all(paths: &[PathBuf], verdict: Verdict) -> Result<Exit, CliError> {
    let pending = pending_files(paths)?;
    if pending.is_empty() {
        println!("nothing pending");
        return Ok(Exit::Success);
    }
    for file in &pending {
        let committed = decide(file, verdict)?;
        match verdict {
            Verdict::Accept => println!("accepted {}", shown(&committed)),
            Verdict::Reject => println!("rejected {}", shown(file)),
        }
    }
    Ok(Exit::Success)
}

/// Carries out `verdict` on `pending` only if it still holds the `shown` bytes,
/// and accepts exactly those bytes. `Ok(false)`: it changed (or went, or became a
/// link) since it was shown, and is left as it is.
fn decide_shown(
    pending: &Path,
    committed: &Path,
    shown_bytes: &[u8],
    verdict: Verdict,
) -> Result<bool, CliError> {
    match read_regular(pending, Links::Refuse) {
        Ok(now) if now == shown_bytes => {}
        _ => return Ok(false),
    }
    match verdict {
        Verdict::Accept => commit(pending, committed, shown_bytes)?,
        Verdict::Reject => remove(pending).map_err(|e| CliError::new(Exit::Io, e))?,
    }
    Ok(true)
}

fn review(paths: &[PathBuf]) -> Result<Exit, CliError> {
    let pending = pending_files(paths)?;
    if pending.is_empty() {
        println!("nothing pending");
        return Ok(Exit::Success);
    }
    let colour = term::stdout_colours();
    let stdin = std::io::stdin();
    let mut answers = stdin.lock().lines();
    let mut left = 0;
    let total = pending.len();
    for (n, file) in pending.iter().enumerate() {
        let committed = committed_of(file)?;
        println!(
            "\n{} {}",
            paint(&format!("[{}/{total}]", n + 1), Style::Dim, colour),
            paint(&shown(&committed), Style::Bold, colour)
        );
        // What is shown is what is decided: these bytes, read once.
        let bytes = read_regular(file, Links::Refuse)?;
        let fresh = parse_cassette(file, &bytes)?;
        if std::fs::symlink_metadata(&committed).is_ok() {
            let old = open(&committed)?;
            let diff = file_diff(&old, &fresh);
            if diff.is_empty() {
                println!("no differences");
            } else {
                print_diff(&diff, colour);
            }
        } else {
            println!(
                "a new cassette, {} interaction(s):",
                fresh.interactions.len()
            );
            for interaction in &fresh.interactions {
                show_interaction(interaction, colour);
            }
        }
        let verdict = loop {
            print!("accept, reject, skip, or quit? [a/r/s/q] ");
            let _ = std::io::stdout().flush();
            let answer = match answers.next() {
                Some(Ok(line)) => line,
                // No more answers: leave the rest pending.
                _ => "q".to_owned(),
            };
            match answer.trim() {
                "a" | "accept" => break Some(Verdict::Accept),
                "r" | "reject" => break Some(Verdict::Reject),
                "s" | "skip" => break None,
                "q" | "quit" => {
                    println!();
                    left += total - n;
                    println!("{left} left pending");
                    return Ok(Exit::Failure);
                }
                other => println!("`{}`: answer a, r, s or q", escape_for_terminal(other)),
            }
        };
        match verdict {
            Some(verdict) => {
                if decide_shown(file, &committed, &bytes, verdict)? {
                    println!(
                        "{}",
                        if verdict == Verdict::Accept {
                            "accepted"
                        } else {
                            "rejected"
                        }
                    );
                } else {
                    left += 1;
                    println!(
                        "{}: changed since it was shown; review it again",
                        shown(file)
                    );
                }
            }
            None => {
                left += 1;
                println!("skipped");
            }
        }
    }
    if left > 0 {
        println!("{left} left pending");
        return Ok(Exit::Failure);
    }
    Ok(Exit::Success)
}

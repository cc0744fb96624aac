//! Evals from a terminal: `cargo tackle eval`. Regressions as a review.
//!
//! An eval (`tackle::evals`) runs a dataset's cases through an agent inside
//! `cargo test` and writes what it found as a **report** (`EvalReport`, versioned
//! JSON). A **baseline** is a report someone accepted as what the dataset is expected
//! to do; it is committed with the code, as `evals/baselines/<dataset>.json` at the
//! workspace root. A run compared with its baseline lists the cases that got
//! **worse**, **better**, or **changed** their answer or trajectory, each with the
//! JSON-pointer lines `cargo tackle review` shows for a cassette. Accepting a run as
//! the new baseline is a review step, like accepting a re-recorded cassette: the
//! diff first, then a decision, and the file is written whole or not at all.
//!
//! | command | what it does |
//! |---|---|
//! | `eval run [--mode MODE] [-- CARGO TEST ARGS]` | `cargo test` with `TACKLE_EVAL_REPORTS` set (and `TACKLE_EVAL=MODE`), then each report's table and its change from the baseline; exits with cargo's status |
//! | `eval report [REPORT]... [--json \| --html PATH]` | the reports' tables, as JSON, or as an HTML page (against the baseline when there is one) |
//! | `eval diff [REPORT]... [--baseline FILE] [--json]` | each report against its baseline: worse, better, changed, added, removed (exit 7 when a case got worse) |
//! | `eval accept [DATASET]... [--all] [--yes]` | each report's diff against its baseline, then accept (the report becomes the baseline) or reject (nothing is written) |
//!
//! A `REPORT` is a report file, or the name of a dataset whose report was collected;
//! with none, every collected report.
//!
//! **Folders.** Reports are collected in `--reports DIR`, else in the folder
//! `TACKLE_EVAL_REPORTS` names, else in `<target>/tackle/evals`; `eval run` clears
//! the reports there before it starts. Baselines are in `--baselines DIR`, else in
//! `<workspace>/evals/baselines`. The target and workspace folders are cargo's
//! (`cargo metadata`); the `cargo` run is the one in `CARGO` (cargo sets it for
//! `cargo tackle`), else `cargo` on the `PATH`.
//!
//! **Exit codes** as the rest of the CLI ([`Exit`]): `diff` exits 7
//! ([`Exit::Regressed`]) when a case got worse, 3 when a report has no baseline (and
//! none got worse); `run` exits with `cargo test`'s status ([`Exit::Cargo`]); 3 when
//! there are no reports, 5 for a report or baseline that is not one of this format;
//! `accept` exits 1 when it was stopped with reports left undecided.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, Subcommand};
use serde_json::Value;
use tackle_agent::evals::{EvalDiff, EvalMode, EvalReport, REPORTS_DIR, REPORT_FORMAT};
use tackle_core::replay::file::write_atomically;

use crate::exit::{CliError, Exit};
use crate::files::{read_regular, Links};
use crate::term::{self, escape_for_terminal, escape_json_for_terminal, paint, shown, Style};
use tackle_core::shape::segment;

/// `cargo tackle eval`: the folders, and what to do.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The folder of the collected reports [default: the one `TACKLE_EVAL_REPORTS`
    /// names, else <target>/tackle/evals].
    #[arg(long = "reports", global = true, value_name = "DIR")]
    reports_dir: Option<PathBuf>,
    /// The folder of the baselines, `<dataset>.json` each [default:
    /// <workspace>/evals/baselines].
    #[arg(long = "baselines", global = true, value_name = "DIR")]
    baselines_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    command: EvalCommand,
}

/// What `cargo tackle eval` does.
#[derive(Debug, Subcommand)]
enum EvalCommand {
    /// Run `cargo test` collecting every eval's report, then print each report's
    /// table and its change from the baseline (exits with cargo's status).
    Run {
        /// The mode the evals run in (sets `TACKLE_EVAL`; by default the evals' own,
        /// else replay).
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(EvalMode::ALL.map(|(name, _)| name)))]
        mode: Option<String>,
        /// Arguments for `cargo test`, after `--` (`-- -p my-crate --test evals`).
        #[arg(last = true, value_name = "CARGO TEST ARGS")]
        cargo_args: Vec<String>,
    },
    /// Print reports as tables (or as JSON, or write an HTML page).
    Report {
        /// Report files, or datasets whose reports were collected (default: every
        /// collected report).
        #[arg(value_name = "REPORT")]
        reports: Vec<PathBuf>,
        /// Write an HTML page here instead, against the baseline when there is one
        /// (with several reports, PATH is a folder: `<dataset>.html` each).
        #[arg(long, value_name = "PATH", conflicts_with = "json")]
        html: Option<PathBuf>,
        /// Print the reports as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Compare reports with their baselines: the cases that got worse, better, or
    /// changed (exit 7 when a case got worse).
    Diff {
        /// Report files, or datasets whose reports were collected (default: every
        /// collected report).
        #[arg(value_name = "REPORT")]
        reports: Vec<PathBuf>,
        /// The baseline to compare one report with (default: its dataset's, in the
        /// baselines folder).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// Print the differences as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Review the collected reports against their baselines: show each diff, then
    /// accept the report as the new baseline or reject it (answers are read from
    /// standard input).
    Accept {
        /// The datasets (default: every collected report).
        datasets: Vec<String>,
        /// Every collected report (what `--yes` needs when no dataset is named).
        #[arg(long, conflicts_with = "datasets")]
        all: bool,
        /// Accept without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// Runs `cargo tackle eval`.
pub(crate) fn execute(args: EvalArgs) -> Result<Exit, CliError> {
    let mut places = Places::new(args.reports_dir, args.baselines_dir);
    match args.command {
        EvalCommand::Run { mode, cargo_args } => run(&mut places, mode.as_deref(), &cargo_args),
        EvalCommand::Report {
            reports,
            html,
            json,
        } => report(&mut places, &reports, html.as_deref(), json),
        EvalCommand::Diff {
            reports,
            baseline,
            json,
        } => diff(&mut places, &reports, baseline.as_deref(), json),
        EvalCommand::Accept { datasets, all, yes } => accept(&mut places, &datasets, all, yes),
    }
}

// ---- folders ----

/// Where the reports and baselines are: as given, or found through cargo once asked.
struct Places {
    reports: Option<PathBuf>,
    baselines: Option<PathBuf>,
    workspace: Option<Workspace>,
}

/// What `cargo metadata` says of the workspace here.
#[derive(Clone)]
struct Workspace {
    root: PathBuf,
    target: PathBuf,
}

impl Places {
    fn new(reports: Option<PathBuf>, baselines: Option<PathBuf>) -> Places {
        let reports = reports.or_else(|| {
            std::env::var_os(REPORTS_DIR)
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
        });
        Places {
            reports,
            baselines,
            workspace: None,
        }
    }

    /// The workspace here, asked of cargo the first time.
    fn workspace(&mut self) -> Result<Workspace, CliError> {
        if let Some(workspace) = &self.workspace {
            return Ok(workspace.clone());
        }
        let workspace = locate_workspace()?;
        self.workspace = Some(workspace.clone());
        Ok(workspace)
    }

    /// The folder of the collected reports, absolute (the tests of `cargo test` run
    /// in their packages' folders, not here).
    fn reports(&mut self) -> Result<PathBuf, CliError> {
        let dir = match &self.reports {
            Some(dir) => dir.clone(),
            None => self.workspace()?.target.join("tackle").join("evals"),
        };
        std::path::absolute(&dir)
            .map_err(|e| CliError::new(Exit::Io, format!("{}: {e}", dir.display())))
    }

    /// The folder of the baselines.
    fn baselines(&mut self) -> Result<PathBuf, CliError> {
        match &self.baselines {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self.workspace()?.root.join("evals").join("baselines")),
        }
    }

    /// The baseline file of `dataset`.
    fn baseline_of(&mut self, dataset: &str) -> Result<PathBuf, CliError> {
        Ok(self.baselines()?.join(format!("{}.json", segment(dataset))))
    }
}

/// The cargo to run: `CARGO` (cargo sets it for its subcommands), else `cargo`.
fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "cargo".into())
}

/// The workspace of the current folder and its target folder, from
/// `cargo metadata --no-deps` (which neither builds nor resolves anything).
fn locate_workspace() -> Result<Workspace, CliError> {
    let not_found = |why: String| {
        CliError::new(
            Exit::NotFound,
            format!(
                "no cargo workspace here ({why}); run this in one, or name the folders with --reports DIR and --baselines DIR"
            ),
        )
    };
    let out = Command::new(cargo())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| CliError::new(Exit::Io, format!("cargo could not be run: {e}")))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("it failed");
        return Err(not_found(format!("cargo metadata: {}", said.trim())));
    }
    let metadata: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| not_found(format!("cargo metadata did not print JSON: {e}")))?;
    let field = |name: &str| {
        metadata
            .get(name)
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .ok_or_else(|| not_found(format!("cargo metadata gave no `{name}`")))
    };
    Ok(Workspace {
        root: field("workspace_root")?,
        target: field("target_directory")?,
    })
}

// ---- reports ----

/// A report as read: its file, its exact bytes (what `accept` writes), its value.
#[derive(Clone)]
struct Loaded {
    path: PathBuf,
    bytes: Vec<u8>,
    report: EvalReport,
}

/// Which kind of file a report is read as, for what its errors advise.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Report,
    Baseline,
}

/// Reads the report at `path`: a regular file (a link to one is followed), JSON, an
/// eval report of [`REPORT_FORMAT`]. Exit 3 when missing, 5 when not a report of
/// this format.
fn load(path: &Path, role: Role) -> Result<Loaded, CliError> {
    let bytes = read_regular(path, Links::Follow)?;
    let report = parse(path, &bytes, role)?;
    Ok(Loaded {
        path: path.to_owned(),
        bytes,
        report,
    })
}

fn parse(path: &Path, bytes: &[u8], role: Role) -> Result<EvalReport, CliError> {
    let bad = |why: String| CliError::new(Exit::BadData, format!("{}: {why}", path.display()));
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not an eval report: {e}")))?;
    let advice = match role {
        Role::Report => "run the evals again with this version (`cargo tackle eval run`)",
        Role::Baseline => {
            "accept a report of this version as the new baseline (`cargo tackle eval accept`)"
        }
    };
    match value.get("format").map(Value::as_u64) {
        None => return Err(bad("not an eval report (it has no `format`)".to_owned())),
        Some(Some(format)) if format == u64::from(REPORT_FORMAT) => {}
        Some(format) => {
            let found = format.map_or_else(|| "an unknown".to_owned(), |f| f.to_string());
            return Err(bad(format!(
                "an eval report of format {found}; this cargo tackle reads format {REPORT_FORMAT}: {advice}"
            )));
        }
    }
    serde_json::from_value(value).map_err(|e| bad(format!("not an eval report: {e}")))
}

/// The report files in `dir` (`*.json`, regular files or links to them; never a
/// FIFO or a device), sorted. None at all is exit 3, saying how to make some.
fn collected(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let none = || {
        CliError::new(
            Exit::NotFound,
            format!(
                "no eval reports in {}: run the evals with `cargo tackle eval run` first",
                dir.display()
            ),
        )
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(none()),
        Err(e) => return Err(CliError::new(Exit::Io, format!("{}: {e}", dir.display()))),
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "json")
                && std::fs::metadata(path).is_ok_and(|m| m.is_file())
        })
        .collect();
    if found.is_empty() {
        return Err(none());
    }
    found.sort();
    Ok(found)
}

/// Every report collected in the reports folder (none when there is none).
fn all_collected(places: &mut Places) -> Result<(PathBuf, Vec<Loaded>), CliError> {
    let dir = places.reports()?;
    let paths = match collected(&dir) {
        Ok(paths) => paths,
        Err(e) if e.exit == Exit::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let reports = paths
        .iter()
        .map(|path| load(path, Role::Report))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dir, reports))
}

/// The reports `names` choose: each a report file, or a dataset whose report was
/// collected; with none, every collected report (none at all is exit 3).
fn chosen(places: &mut Places, names: &[PathBuf]) -> Result<Vec<Loaded>, CliError> {
    if names.is_empty() {
        let dir = places.reports()?;
        return collected(&dir)?
            .iter()
            .map(|path| load(path, Role::Report))
            .collect();
    }
    let mut loaded = Vec::new();
    let mut from_dir: Option<Vec<Loaded>> = None;
    for name in names {
        if std::fs::symlink_metadata(name).is_ok() {
            loaded.push(load(name, Role::Report)?);
            continue;
        }
        let all = match &from_dir {
            Some(all) => all,
            None => from_dir.insert(all_collected(places)?.1),
        };
        let dataset = name.to_string_lossy();
        let hits: Vec<Loaded> = all
            .iter()
            .filter(|l| l.report.dataset == dataset)
            .cloned()
            .collect();
        if hits.is_empty() {
            return Err(CliError::new(
                Exit::NotFound,
                format!(
                    "{dataset}: no such report file, and no collected report of an eval of that name{}",
                    known(all)
                ),
            ));
        }
        loaded.extend(hits);
    }
    Ok(loaded)
}

/// ` (collected: a, b)`, naming the datasets of `reports`, or a hint when none.
fn known(reports: &[Loaded]) -> String {
    if reports.is_empty() {
        return " (none collected: run `cargo tackle eval run` first)".to_owned();
    }
    let names: BTreeSet<&str> = reports.iter().map(|l| l.report.dataset.as_str()).collect();
    format!(
        " (collected: {})",
        names.into_iter().collect::<Vec<_>>().join(", ")
    )
}

/// The baseline of `report`, if its file exists.
fn baseline_of(places: &mut Places, report: &EvalReport) -> Result<Option<Loaded>, CliError> {
    let path = places.baseline_of(&report.dataset)?;
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    load(&path, Role::Baseline).map(Some)
}

// ---- printing ----

/// Prints `text` (a table or a diff from a report: dataset text in it) line by
/// line, escaped for a terminal, each line coloured by how it starts.
fn print_lines(text: &str, colour: bool) {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let style = if trimmed.starts_with("worse:") || trimmed.starts_with("removed:") {
            Some(Style::Red)
        } else if trimmed.starts_with("better:") || trimmed.starts_with("added:") {
            Some(Style::Green)
        } else if trimmed.starts_with("changed:") || trimmed.starts_with('~') {
            Some(Style::Yellow)
        } else if trimmed.starts_with('+') {
            Some(Style::Green)
        } else if trimmed.starts_with('-') {
            Some(Style::Red)
        } else {
            None
        };
        let line = escape_for_terminal(line);
        match style {
            Some(style) => out.push_str(&paint(&line, style, colour)),
            None => out.push_str(&line),
        }
        out.push('\n');
    }
    print!("{out}");
}

/// The heading of a report: its dataset and file.
fn heading(loaded: &Loaded, colour: bool) -> String {
    format!(
        "{}  {}",
        paint(
            &format!("eval `{}`", escape_for_terminal(&loaded.report.dataset)),
            Style::Bold,
            colour
        ),
        paint(&shown(&loaded.path), Style::Dim, colour)
    )
}

/// The lines of a diff without the cases' details: its counts, and a line per case.
fn summary_of(diff: &EvalDiff) -> String {
    diff.text()
        .lines()
        .filter(|line| !line.starts_with(' '))
        .map(|line| format!("{line}\n"))
        .collect()
}

fn print_json(value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    println!("{}", escape_json_for_terminal(&text));
}

// ---- run ----

/// Deletes the reports in `dir` (regular `*.json` files that read as eval reports,
/// of any format): a run collects only its own. Anything else there stays.
fn clear(dir: &Path) -> Result<(), CliError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CliError::new(Exit::Io, format!("{}: {e}", dir.display()))),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if !is_file || path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let is_report = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .is_some_and(|v| v.get("format").is_some() && v.get("dataset").is_some());
        if is_report {
            std::fs::remove_file(&path).map_err(|e| {
                CliError::new(
                    Exit::Io,
                    format!("{}: could not be cleared: {e}", path.display()),
                )
            })?;
        }
    }
    Ok(())
}

fn run(places: &mut Places, mode: Option<&str>, cargo_args: &[String]) -> Result<Exit, CliError> {
    let dir = places.reports()?;
    clear(&dir)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(Exit::Io, format!("{}: {e}", dir.display())))?;
    let colour_err = term::stderr_colours();
    eprintln!(
        "{}",
        paint(
            &format!(
                "cargo test {} (reports in {}{})",
                escape_for_terminal(&cargo_args.join(" ")),
                shown(&dir),
                mode.map(|m| format!(", TACKLE_EVAL={m}"))
                    .unwrap_or_default()
            ),
            Style::Dim,
            colour_err
        )
    );
    let mut command = Command::new(cargo());
    command.arg("test").args(cargo_args).env(REPORTS_DIR, &dir);
    if let Some(mode) = mode {
        command.env("TACKLE_EVAL", mode);
    }
    let status = command
        .status()
        .map_err(|e| CliError::new(Exit::Io, format!("cargo could not be run: {e}")))?;
    let tests = match status.code() {
        Some(0) => Exit::Success,
        Some(code) => Exit::Cargo(u8::try_from(code).ok().filter(|c| *c != 0).unwrap_or(1)),
        None => {
            term::error("cargo test was stopped by a signal");
            Exit::Failure
        }
    };
    let paths = match collected(&dir) {
        Ok(paths) => paths,
        Err(e) if e.exit == Exit::NotFound => {
            let message = format!(
                "cargo test ran, but no eval wrote a report in {}: do the tests run `Eval::run`, and do the arguments after `--` choose them (`-- --test evals`)?",
                dir.display()
            );
            if tests == Exit::Success {
                return Err(CliError::new(Exit::NotFound, message));
            }
            term::error(&message);
            return Ok(tests);
        }
        Err(e) => return Err(e),
    };
    let colour = term::stdout_colours();
    // The baselines are looked for only if their folder can be known.
    let baselines = places.baselines().ok();
    let mut unreadable = None;
    for path in &paths {
        let loaded = match load(path, Role::Report) {
            Ok(loaded) => loaded,
            Err(e) => {
                term::error(&e.message);
                unreadable.get_or_insert(e.exit);
                continue;
            }
        };
        println!("\n{}", heading(&loaded, colour));
        print_lines(&loaded.report.table(), colour);
        let Some(baselines) = &baselines else {
            continue;
        };
        let baseline_path = baselines.join(format!("{}.json", segment(&loaded.report.dataset)));
        if std::fs::symlink_metadata(&baseline_path).is_err() {
            println!(
                "no baseline ({}): `cargo tackle eval accept {}` makes this run the baseline",
                shown(&baseline_path),
                escape_for_terminal(&loaded.report.dataset)
            );
            continue;
        }
        match load(&baseline_path, Role::Baseline) {
            Ok(baseline) => {
                let diff = loaded.report.diff(&baseline.report);
                print_lines(&summary_of(&diff), colour);
                if !diff.is_empty() {
                    println!(
                        "(`cargo tackle eval diff {}` for the details)",
                        escape_for_terminal(&loaded.report.dataset)
                    );
                }
            }
            Err(e) => term::error(&e.message),
        }
    }
    Ok(match (tests, unreadable) {
        (Exit::Success, Some(exit)) => exit,
        (tests, _) => tests,
    })
}

// ---- report ----

fn report(
    places: &mut Places,
    names: &[PathBuf],
    html: Option<&Path>,
    json: bool,
) -> Result<Exit, CliError> {
    let reports = chosen(places, names)?;
    if json {
        let all: Vec<Value> = reports
            .iter()
            .map(|l| serde_json::to_value(&l.report).unwrap_or(Value::Null))
            .collect();
        print_json(&Value::Array(all));
        return Ok(Exit::Success);
    }
    if let Some(out) = html {
        return write_html(places, &reports, out);
    }
    let colour = term::stdout_colours();
    for (n, loaded) in reports.iter().enumerate() {
        if n > 0 {
            println!();
        }
        println!("{}", heading(loaded, colour));
        print_lines(&loaded.report.table(), colour);
    }
    Ok(Exit::Success)
}

/// Writes each report as an HTML page, against its baseline when there is one: to
/// `out` for one report, to `out/<dataset>.html` for several.
fn write_html(places: &mut Places, reports: &[Loaded], out: &Path) -> Result<Exit, CliError> {
    let several = reports.len() > 1;
    for loaded in reports {
        // Without a known baselines folder, the page has no baseline.
        let baseline = match places.baseline_of(&loaded.report.dataset) {
            Ok(path) if std::fs::symlink_metadata(&path).is_ok() => {
                Some(load(&path, Role::Baseline)?)
            }
            _ => None,
        };
        let page = loaded.report.to_html(baseline.as_ref().map(|b| &b.report));
        let file = if several {
            out.join(format!("{}.html", segment(&loaded.report.dataset)))
        } else {
            out.to_owned()
        };
        write_atomically(&file, page.as_bytes()).map_err(|e| {
            CliError::new(
                Exit::Io,
                format!("{} could not be written: {e}", file.display()),
            )
        })?;
        match &baseline {
            Some(b) => println!("wrote {} (against {})", shown(&file), shown(&b.path)),
            None => println!("wrote {} (no baseline)", shown(&file)),
        }
    }
    Ok(Exit::Success)
}

// ---- diff ----

fn diff(
    places: &mut Places,
    names: &[PathBuf],
    baseline: Option<&Path>,
    json: bool,
) -> Result<Exit, CliError> {
    let reports = chosen(places, names)?;
    if baseline.is_some() && reports.len() != 1 {
        return Err(CliError::new(
            Exit::Usage,
            format!(
                "--baseline compares one report, and there are {}: name the report",
                reports.len()
            ),
        ));
    }
    let colour = term::stdout_colours();
    let mut worse = false;
    let mut missing = false;
    let mut all = Vec::new();
    for (n, loaded) in reports.iter().enumerate() {
        let base = match baseline {
            Some(path) => Some(load(path, Role::Baseline)?),
            None => baseline_of(places, &loaded.report)?,
        };
        let Some(base) = base else {
            let path = places.baseline_of(&loaded.report.dataset)?;
            term::error(&format!(
                "eval `{}` has no baseline ({} does not exist): make this run its baseline with `cargo tackle eval accept {}`",
                loaded.report.dataset,
                path.display(),
                loaded.report.dataset
            ));
            missing = true;
            continue;
        };
        if base.report.dataset != loaded.report.dataset {
            return Err(CliError::new(
                Exit::Usage,
                format!(
                    "{}: the baseline of eval `{}`, not of `{}`",
                    base.path.display(),
                    base.report.dataset,
                    loaded.report.dataset
                ),
            ));
        }
        let diff = loaded.report.diff(&base.report);
        worse |= !diff.worse.is_empty();
        if json {
            let mut value = serde_json::to_value(&diff).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.insert(
                    "report".into(),
                    Value::from(loaded.path.display().to_string()),
                );
                map.insert(
                    "baseline".into(),
                    Value::from(base.path.display().to_string()),
                );
            }
            all.push(value);
        } else {
            if n > 0 {
                println!();
            }
            println!(
                "{}  {}",
                heading(loaded, colour),
                paint(
                    &format!("against {}", shown(&base.path)),
                    Style::Dim,
                    colour
                )
            );
            print_lines(&diff.text(), colour);
        }
    }
    if json {
        print_json(&Value::Array(all));
    }
    Ok(if worse {
        Exit::Regressed
    } else if missing {
        Exit::NotFound
    } else {
        Exit::Success
    })
}

// ---- accept ----

/// A decision on one report.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accept,
    Reject,
}

fn accept(
    places: &mut Places,
    datasets: &[String],
    all: bool,
    yes: bool,
) -> Result<Exit, CliError> {
    if yes && datasets.is_empty() && !all {
        return Err(CliError::new(
            Exit::Usage,
            "--yes accepts without asking: name the datasets to accept, or give --all for every collected report",
        ));
    }
    // Datasets, not files: a baseline is accepted from what a run collected.
    let reports = if datasets.is_empty() {
        chosen(places, &[])?
    } else {
        let (dir, all) = all_collected(places)?;
        if let Some(name) = datasets
            .iter()
            .find(|name| all.iter().all(|l| &&l.report.dataset != name))
        {
            return Err(CliError::new(
                Exit::NotFound,
                format!(
                    "no collected report of eval `{name}` in {}{}",
                    dir.display(),
                    known(&all)
                ),
            ));
        }
        all.into_iter()
            .filter(|l| datasets.contains(&l.report.dataset))
            .collect()
    };
    let colour = term::stdout_colours();
    let stdin = std::io::stdin();
    let mut answers = stdin.lock().lines();
    let total = reports.len();
    for (n, loaded) in reports.iter().enumerate() {
        let target = places.baseline_of(&loaded.report.dataset)?;
        println!(
            "\n{} {}  {}",
            paint(&format!("[{}/{total}]", n + 1), Style::Dim, colour),
            heading(loaded, colour),
            paint(&format!("-> {}", shown(&target)), Style::Dim, colour)
        );
        if !show_change(loaded, &target, colour)? {
            continue;
        }
        let verdict = if yes {
            Verdict::Accept
        } else {
            match ask(&mut answers) {
                Some(verdict) => verdict,
                None => {
                    println!();
                    println!("{} left undecided", total - n);
                    return Ok(Exit::Failure);
                }
            }
        };
        match verdict {
            Verdict::Accept => {
                write_atomically(&target, &loaded.bytes).map_err(|e| {
                    CliError::new(
                        Exit::Io,
                        format!("{} could not be written: {e}", target.display()),
                    )
                })?;
                println!("accepted: {} is the new baseline", shown(&target));
            }
            Verdict::Reject => println!("rejected: {} stays as it was", shown(&target)),
        }
    }
    Ok(Exit::Success)
}

/// Shows how `loaded` differs from the baseline at `target` (all of it, when there is
/// none yet). `false` when nothing changed: nothing to decide.
fn show_change(loaded: &Loaded, target: &Path, colour: bool) -> Result<bool, CliError> {
    if std::fs::symlink_metadata(target).is_err() {
        println!(
            "no baseline yet; accepting makes this run the baseline ({} case(s)):",
            loaded.report.cases.len()
        );
        print_lines(&loaded.report.table(), colour);
        return Ok(true);
    }
    match load(target, Role::Baseline) {
        Ok(base) => {
            let diff = loaded.report.diff(&base.report);
            if diff.is_empty() {
                println!("no change from the baseline: nothing to accept");
                return Ok(false);
            }
            print_lines(&diff.text(), colour);
        }
        // A baseline this version cannot read can still be replaced.
        Err(e) if e.exit == Exit::BadData => {
            println!(
                "{}",
                paint(
                    &format!(
                        "the baseline cannot be read: {}",
                        escape_for_terminal(&e.message)
                    ),
                    Style::Yellow,
                    colour
                )
            );
            println!("accepting replaces it with this run:");
            print_lines(&loaded.report.table(), colour);
        }
        Err(e) => return Err(e),
    }
    Ok(true)
}

/// Asks accept or reject until answered; `None` to stop (a `q`, or no more answers).
fn ask(answers: &mut impl Iterator<Item = std::io::Result<String>>) -> Option<Verdict> {
    loop {
        print!("accept as the new baseline, reject, or quit? [a/r/q] ");
        let _ = std::io::stdout().flush();
        let answer = match answers.next() {
            Some(Ok(line)) => line,
            // No more answers: leave the rest undecided.
            _ => return None,
        };
        match answer.trim() {
            "a" | "accept" => return Some(Verdict::Accept),
            "r" | "reject" => return Some(Verdict::Reject),
            "q" | "quit" => return None,
            other => println!("`{}`: answer a, r or q", escape_for_terminal(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clearing_removes_only_reports() {
        let dir = std::env::temp_dir().join(format!("tackle-cli-clear-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let report = dir.join("shop.json");
        let other = dir.join("package.json");
        let text = dir.join("notes.txt");
        std::fs::write(&report, r#"{"format": 1, "dataset": "shop"}"#).expect("write");
        std::fs::write(&other, r#"{"name": "web"}"#).expect("write");
        std::fs::write(&text, "notes").expect("write");
        clear(&dir).expect("cleared");
        assert!(!report.exists());
        assert!(other.exists() && text.exists());
        clear(&dir.join("missing")).expect("nothing to clear");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

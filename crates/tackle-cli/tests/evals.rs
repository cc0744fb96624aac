//! `cargo tackle eval` end to end: reports built here as `EvalReport` values and
//! written as a run writes them, then the real `cargo-tackle` binary run over them,
//! its output, files and exit codes read.
//!
//! `eval run` runs the `cargo` that `CARGO` names, as cargo's own subcommands do; the
//! check of `run` names a small shell script there that stands in for cargo (its
//! `metadata` answers where the workspace is; its `test` writes a report where
//! `TACKLE_EVAL_REPORTS` says, notes its arguments and environment, and fails as
//! `cargo test` does).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use tackle::agent::model::Usage;
use tackle::evals::{
    CallRecord, CaseReport, CaseRun, EvalMode, EvalReport, Evaluation, EvaluatorSummary, Summary,
    Thresholds, TrajectoryStep, REPORT_FORMAT,
};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-cli-evals-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A case of one run: `passed`, answering `output` after calling `shop.find_order`
/// with `order`.
fn case(name: &str, passed: bool, output: &str, order: &str) -> CaseReport {
    let evaluation = if passed {
        Evaluation::pass("EqualsExpected", "the answer is the one expected")
    } else {
        Evaluation::fail(
            "EqualsExpected",
            format!("expected another answer than {output:?}"),
        )
    };
    CaseReport {
        name: name.to_owned(),
        input: format!("task of {name}"),
        metadata: Default::default(),
        passed,
        pass_rate: if passed { 1.0 } else { 0.0 },
        runs: vec![CaseRun {
            repeat: 1,
            passed,
            output: Some(Value::String(output.to_owned())),
            error: None,
            duration_ms: 12.5,
            model_requests: 2,
            usage: Usage::default(),
            cost: None,
            trajectory: vec![
                TrajectoryStep {
                    step: 0,
                    thought: String::new(),
                    calls: vec![CallRecord {
                        tool: "shop.find_order".to_owned(),
                        arguments: json!({"order_id": order}),
                        result: Some(json!({"status": "delivered"})),
                        error: None,
                        error_kind: None,
                    }],
                },
                TrajectoryStep {
                    step: 1,
                    thought: output.to_owned(),
                    calls: Vec::new(),
                },
            ],
            divergence: None,
            evaluations: vec![evaluation],
        }],
    }
}

/// A report of dataset `dataset` over `cases`.
fn report(dataset: &str, cases: Vec<CaseReport>) -> EvalReport {
    let passed = cases.iter().filter(|c| c.passed).count();
    let summary = Summary {
        cases: cases.len(),
        passed,
        failed: cases.len() - passed,
        pass_rate: passed as f64 / cases.len().max(1) as f64,
        evaluators: [(
            "EqualsExpected".to_owned(),
            EvaluatorSummary {
                passed,
                total: cases.len(),
                mean_score: passed as f64 / cases.len().max(1) as f64,
            },
        )]
        .into_iter()
        .collect(),
    };
    EvalReport {
        format: REPORT_FORMAT,
        dataset: dataset.to_owned(),
        mode: EvalMode::Replay,
        started_at: "2025-01-01T00:00:00.000Z".to_owned(),
        duration_ms: 40.0,
        thresholds: Thresholds {
            case_pass_rate: 1.0,
            run_pass_rate: 1.0,
        },
        cases,
        summary,
    }
}

/// The baseline: `refund` and `status` pass, `fee` fails, `old` is still there.
fn baseline() -> EvalReport {
    report(
        "shop",
        vec![
            case("refund", true, "Refunded A-100.", "A-100"),
            case("fee", false, "Delivery costs 5.90.", "A-300"),
            case("status", true, "A-200 is packing.", "A-200"),
            case("old", true, "Old case.", "A-1"),
        ],
    )
}

/// The run: `refund` fails now (worse), `fee` passes (better), `status` asked for
/// another order (changed trajectory), `old` is gone and `new` is new.
fn changed_run() -> EvalReport {
    report(
        "shop",
        vec![
            case("refund", false, "I cannot refund that.", "A-100"),
            case("fee", true, "Delivery costs 4.90.", "A-300"),
            case("status", true, "A-200 is packing.", "A-201"),
            case("new", true, "New case.", "A-2"),
        ],
    )
}

/// A run that only got better: `fee` passes.
fn better_run() -> EvalReport {
    let mut run = baseline();
    run.cases[1] = case("fee", true, "Delivery costs 4.90.", "A-300");
    run
}

/// A workspace as `cargo tackle eval` sees one: `reports/` and `baselines/`.
struct Folders {
    root: PathBuf,
    reports: PathBuf,
    baselines: PathBuf,
}

impl Folders {
    fn new(name: &str) -> Folders {
        let root = temp(name);
        Folders {
            reports: root.join("reports"),
            baselines: root.join("baselines"),
            root,
        }
    }

    /// Writes `report` as a run collects it.
    fn collect(&self, report: &EvalReport) {
        report
            .write_json(self.reports.join(format!("{}.json", report.dataset)))
            .expect("report written");
    }

    fn baseline_file(&self, dataset: &str) -> PathBuf {
        self.baselines.join(format!("{dataset}.json"))
    }

    /// `cargo tackle eval --reports R --baselines B ARGS`.
    fn eval(&self, args: &[&str], stdin: &str) -> Output {
        let mut all = vec![
            "--reports",
            path_str(&self.reports),
            "--baselines",
            path_str(&self.baselines),
        ];
        all.extend_from_slice(args);
        eval(&all, stdin, &[], &self.root)
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Runs `cargo-tackle tackle eval ARGS` in `dir` with `stdin` as its input.
fn eval(args: &[&str], stdin: &str, env: &[(&str, &Path)], dir: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-tackle"));
    command
        .arg("tackle")
        .arg("eval")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TACKLE_EVAL_REPORTS")
        .env_remove("TACKLE_EVAL")
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("spawn");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    child.wait_with_output().expect("wait")
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

fn shown(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", stdout(out), stderr(out))
}

#[test]
fn report_prints_tables_json_and_html() {
    let f = Folders::new("report");
    // Nothing collected yet: say how to collect.
    let out = f.eval(&["report"], "");
    assert_eq!(code(&out), 3, "{}", shown(&out));
    assert!(
        stderr(&out).contains("cargo tackle eval run"),
        "{}",
        shown(&out)
    );

    f.collect(&changed_run());
    f.collect(&report("fees", vec![case("small", true, "4.90", "A-9")]));
    let out = f.eval(&["report"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    let text = stdout(&out);
    for expected in [
        "eval `shop`",
        "eval `fees`",
        "refund",
        "FAIL",
        "3 of 4 case(s) passed",
    ] {
        assert!(text.contains(expected), "no {expected:?} in\n{text}");
    }

    // One, by its dataset's name or by its file; as JSON.
    let out = f.eval(&["report", "fees", "--json"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    let all: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(all[0]["dataset"], "fees");
    let file = f.reports.join("shop.json");
    let out = f.eval(&["report", path_str(&file), "--json"], "");
    let all: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(all[0]["dataset"], "shop");
    let out = f.eval(&["report", "nosuch"], "");
    assert_eq!(code(&out), 3, "{}", shown(&out));
    assert!(
        stderr(&out).contains("collected: fees, shop"),
        "{}",
        shown(&out)
    );

    // HTML: one page against the baseline, or a page each into a folder.
    baseline()
        .write_json(f.baseline_file("shop"))
        .expect("baseline");
    let page = f.root.join("shop.html");
    let out = f.eval(&["report", "shop", "--html", path_str(&page)], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(stdout(&out).contains("(against "), "{}", shown(&out));
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(
        html.contains("data-change=\"worse\""),
        "the page shows the baseline"
    );
    let pages = f.root.join("pages");
    let out = f.eval(&["report", "--html", path_str(&pages)], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(pages.join("shop.html").is_file() && pages.join("fees.html").is_file());
    assert!(stdout(&out).contains("(no baseline)"), "{}", shown(&out));

    // A report of another format version is refused, naming both versions.
    let mut other: Value =
        serde_json::from_str(&changed_run().to_json()).expect("the report as JSON");
    other["format"] = json!(REPORT_FORMAT + 1);
    let future = f.root.join("future.json");
    std::fs::write(&future, other.to_string()).expect("write");
    let out = f.eval(&["report", path_str(&future)], "");
    assert_eq!(code(&out), 5, "{}", shown(&out));
    assert!(
        stderr(&out).contains(&format!(
            "an eval report of format {}; this cargo tackle reads format {REPORT_FORMAT}",
            REPORT_FORMAT + 1
        )),
        "{}",
        shown(&out)
    );
    std::fs::write(&future, "{\"cases\": []}").expect("write");
    let out = f.eval(&["report", path_str(&future)], "");
    assert_eq!(code(&out), 5, "{}", shown(&out));
    assert!(
        stderr(&out).contains("not an eval report"),
        "{}",
        shown(&out)
    );
    let _ = std::fs::remove_dir_all(&f.root);
}

#[test]
fn diff_lists_worse_better_changed_with_json_pointers() {
    let f = Folders::new("diff");
    f.collect(&changed_run());

    // No baseline yet: exit 3, saying how to make one.
    let out = f.eval(&["diff"], "");
    assert_eq!(code(&out), 3, "{}", shown(&out));
    assert!(
        stderr(&out).contains("cargo tackle eval accept shop"),
        "{}",
        shown(&out)
    );

    baseline()
        .write_json(f.baseline_file("shop"))
        .expect("baseline");
    let out = f.eval(&["diff"], "");
    assert_eq!(code(&out), 7, "a case got worse: {}", shown(&out));
    let text = stdout(&out);
    for expected in [
        "1 worse, 1 better, 1 changed, 1 added, 1 removed",
        "worse: `refund` (pass 1.00 -> FAIL 0.00)",
        "EqualsExpected: pass -> FAIL",
        "~ /output: \"Refunded A-100.\" -> \"I cannot refund that.\"",
        "better: `fee` (FAIL 0.00 -> pass 1.00)",
        "changed: `status`",
        "~ /trajectory/0/calls/0/arguments/order_id: \"A-200\" -> \"A-201\"",
        "added: `new`",
        "removed: `old`",
    ] {
        assert!(text.contains(expected), "no {expected:?} in\n{text}");
    }

    // As JSON: the same, with the files compared.
    let out = f.eval(&["diff", "--json"], "");
    assert_eq!(code(&out), 7, "{}", shown(&out));
    let all: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(all[0]["worse"][0]["case"], "refund");
    assert_eq!(all[0]["better"][0]["case"], "fee");
    assert_eq!(all[0]["changed"][0]["case"], "status");
    assert_eq!(all[0]["baseline"], path_str(&f.baseline_file("shop")));

    // Better only: exit 0. A named baseline file, and a report file.
    let better = f.root.join("better.json");
    better_run().write_json(&better).expect("write");
    let out = f.eval(
        &[
            "diff",
            path_str(&better),
            "--baseline",
            path_str(&f.baseline_file("shop")),
        ],
        "",
    );
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(
        stdout(&out).contains("0 worse, 1 better"),
        "{}",
        shown(&out)
    );

    // A baseline of another dataset is not a baseline of this one.
    let fees = f.root.join("fees.json");
    report("fees", vec![case("small", true, "4.90", "A-9")])
        .write_json(&fees)
        .expect("write");
    let out = f.eval(&["diff", "shop", "--baseline", path_str(&fees)], "");
    assert_eq!(code(&out), 2, "{}", shown(&out));
    assert!(stderr(&out).contains("the baseline of eval `fees`, not of `shop`"));

    // A baseline of another format: say how to make a new one.
    let mut old: Value = serde_json::from_str(&baseline().to_json()).expect("JSON");
    old["format"] = json!(0);
    std::fs::write(f.baseline_file("shop"), old.to_string()).expect("write");
    let out = f.eval(&["diff"], "");
    assert_eq!(code(&out), 5, "{}", shown(&out));
    assert!(
        stderr(&out).contains("format 0") && stderr(&out).contains("cargo tackle eval accept"),
        "{}",
        shown(&out)
    );
    let _ = std::fs::remove_dir_all(&f.root);
}

#[test]
fn accept_yes_writes_the_baseline_then_diff_is_clean() {
    let f = Folders::new("accept");
    f.collect(&changed_run());
    f.collect(&report("fees", vec![case("small", true, "4.90", "A-9")]));

    // `--yes` without a dataset needs `--all`.
    let out = f.eval(&["accept", "--yes"], "");
    assert_eq!(code(&out), 2, "{}", shown(&out));
    assert!(!f.baselines.exists(), "nothing written");
    let out = f.eval(&["accept", "nosuch", "--yes"], "");
    assert_eq!(code(&out), 3, "{}", shown(&out));

    let out = f.eval(&["accept", "shop", "--yes"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(stdout(&out).contains("no baseline yet"), "{}", shown(&out));
    assert!(
        stdout(&out).contains("is the new baseline"),
        "{}",
        shown(&out)
    );
    assert_eq!(
        std::fs::read(f.baseline_file("shop")).expect("baseline"),
        std::fs::read(f.reports.join("shop.json")).expect("report"),
        "the baseline is the report, byte for byte"
    );
    assert!(!f.baseline_file("fees").exists(), "only the dataset named");
    let out = f.eval(&["diff", "shop"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(stdout(&out).contains("no change from the baseline"));

    // `--all`: what changed is accepted, what did not is left as it is.
    let out = f.eval(&["accept", "--all", "--yes"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(
        stdout(&out).contains("nothing to accept"),
        "{}",
        shown(&out)
    );
    assert!(f.baseline_file("fees").is_file());
    let out = f.eval(&["diff"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    let leftovers: Vec<_> = std::fs::read_dir(&f.baselines)
        .expect("baselines")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "no temporary files: {leftovers:?}");
    let _ = std::fs::remove_dir_all(&f.root);
}

#[test]
fn accept_asks_and_a_rejected_report_writes_nothing() {
    let f = Folders::new("review");
    baseline()
        .write_json(f.baseline_file("shop"))
        .expect("baseline");
    let before = std::fs::read(f.baseline_file("shop")).expect("baseline");
    f.collect(&changed_run());

    // Rejected: the diff shown, nothing written.
    let out = f.eval(&["accept"], "r\n");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    let text = stdout(&out);
    assert!(text.contains("worse: `refund`"), "{text}");
    assert!(text.contains("[a/r/q]"), "{text}");
    assert!(text.contains("rejected"), "{text}");
    assert_eq!(
        std::fs::read(f.baseline_file("shop")).expect("baseline"),
        before
    );

    // No answer: nothing written, left undecided (exit 1).
    let out = f.eval(&["accept"], "");
    assert_eq!(code(&out), 1, "{}", shown(&out));
    assert!(stdout(&out).contains("1 left undecided"), "{}", shown(&out));
    assert_eq!(
        std::fs::read(f.baseline_file("shop")).expect("baseline"),
        before
    );

    // An answer it does not know asks again; then accepted.
    let out = f.eval(&["accept", "shop"], "what\na\n");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(
        stdout(&out).contains("`what`: answer a, r or q"),
        "{}",
        shown(&out)
    );
    assert_eq!(
        std::fs::read(f.baseline_file("shop")).expect("baseline"),
        std::fs::read(f.reports.join("shop.json")).expect("report")
    );
    let out = f.eval(&["diff"], "");
    assert_eq!(code(&out), 0, "{}", shown(&out));
    let _ = std::fs::remove_dir_all(&f.root);
}

/// A stand-in for cargo: `metadata` says the workspace is `root` (its target
/// `root/target`); `test` notes its arguments, `TACKLE_EVAL` and
/// `TACKLE_EVAL_REPORTS`, whether an old report is still there, copies
/// `root/fixture.json` in as the run's report, and exits 101 as failing tests do.
fn fake_cargo(root: &Path) -> PathBuf {
    let script = root.join("fake-cargo");
    let r = path_str(root);
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
if [ "$1" = metadata ]; then
  printf '{{"workspace_root": "{r}", "target_directory": "{r}/target"}}'
  exit 0
fi
printf '%s\n' "$*" > "{r}/args"
printf '%s\n' "$TACKLE_EVAL" > "{r}/mode"
printf '%s\n' "$TACKLE_EVAL_REPORTS" > "{r}/dir"
ls "$TACKLE_EVAL_REPORTS" > "{r}/before"
cp "{r}/fixture.json" "$TACKLE_EVAL_REPORTS/shop.json"
echo "test result: FAILED. 1 passed; 1 failed"
exit 101
"#
        ),
    )
    .expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .expect("executable");
    }
    script
}

#[test]
fn run_sets_the_environment_collects_reports_and_passes_cargos_status_through() {
    let root = temp("run");
    let cargo = fake_cargo(&root);
    changed_run()
        .write_json(root.join("fixture.json"))
        .expect("fixture");
    // The default folders: <target>/tackle/evals and <workspace>/evals/baselines.
    let reports = root.join("target/tackle/evals");
    std::fs::create_dir_all(&reports).expect("dir");
    report("stale", vec![case("x", true, "x", "A-0")])
        .write_json(reports.join("stale.json"))
        .expect("stale");
    std::fs::write(reports.join("notes.txt"), "kept").expect("notes");
    baseline()
        .write_json(root.join("evals/baselines/shop.json"))
        .expect("baseline");

    let out = eval(
        &[
            "run",
            "--mode",
            "counterfactual",
            "--",
            "--test",
            "evals",
            "--",
            "--nocapture",
        ],
        "",
        &[("CARGO", &cargo)],
        &root,
    );
    assert_eq!(code(&out), 101, "cargo's status: {}", shown(&out));
    let read = |name: &str| std::fs::read_to_string(root.join(name)).expect(name);
    assert_eq!(read("args"), "test --test evals -- --nocapture\n");
    assert_eq!(read("mode"), "counterfactual\n");
    assert_eq!(read("dir").trim_end(), path_str(&reports));
    assert_eq!(
        read("before"),
        "notes.txt\n",
        "the old report was cleared first"
    );
    let text = stdout(&out);
    for expected in [
        "test result: FAILED",
        "eval `shop`",
        "3 of 4 case(s) passed",
        "1 worse, 1 better, 1 changed, 1 added, 1 removed",
        "worse: `refund`",
        "`cargo tackle eval diff shop` for the details",
    ] {
        assert!(text.contains(expected), "no {expected:?} in\n{text}");
    }
    assert!(
        !text.contains("~ /output"),
        "a summary, not the details: {text}"
    );
    assert!(!text.contains("stale"), "{text}");

    // The commands after it find the same folders.
    let out = eval(&["diff"], "", &[("CARGO", &cargo)], &root);
    assert_eq!(code(&out), 7, "{}", shown(&out));

    // No mode given: TACKLE_EVAL is left alone. No baseline: say how to make one.
    std::fs::remove_file(root.join("evals/baselines/shop.json")).expect("remove");
    let out = eval(&["run"], "", &[("CARGO", &cargo)], &root);
    assert_eq!(code(&out), 101, "{}", shown(&out));
    assert_eq!(read("args"), "test\n");
    assert_eq!(read("mode"), "\n");
    assert!(
        stdout(&out).contains("`cargo tackle eval accept shop` makes this run the baseline"),
        "{}",
        shown(&out)
    );

    // A mode that is not one is bad usage, and nothing runs.
    let out = eval(&["run", "--mode", "fast"], "", &[("CARGO", &cargo)], &root);
    assert_eq!(code(&out), 2, "{}", shown(&out));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_folders_default_to_cargos_workspace() {
    // A real package, outside any workspace: cargo metadata names it.
    let root = temp("workspace");
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .expect("manifest");
    std::fs::create_dir_all(root.join("src")).expect("src");
    std::fs::write(root.join("src/lib.rs"), "").expect("lib");
    let sub = root.join("src");
    let cargo = PathBuf::from(env!("CARGO"));
    let mut command_env = vec![("CARGO", cargo.as_path())];
    let out = eval(&["report"], "", &command_env, &sub);
    assert_eq!(code(&out), 3, "{}", shown(&out));
    // The folder named is the canonical one cargo gives.
    let canonical = std::fs::canonicalize(&root).expect("canonical");
    assert!(
        stderr(&out).contains(&format!(
            "no eval reports in {}",
            canonical.join("target/tackle/evals").display()
        )),
        "{}",
        shown(&out)
    );
    report("fees", vec![case("small", true, "4.90", "A-9")])
        .write_json(canonical.join("target/tackle/evals/fees.json"))
        .expect("report");
    let out = eval(&["accept", "fees", "--yes"], "", &command_env, &sub);
    assert_eq!(code(&out), 0, "{}", shown(&out));
    assert!(canonical.join("evals/baselines/fees.json").is_file());

    // Outside any workspace, the error says to name the folders.
    let outside = temp("outside");
    command_env.truncate(1);
    let out = eval(&["diff"], "", &command_env, &outside);
    assert_eq!(code(&out), 3, "{}", shown(&out));
    assert!(stderr(&out).contains("--reports DIR"), "{}", shown(&out));
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn terminal_controls_in_reports_are_escaped() {
    let f = Folders::new("controls");
    let hostile = "a\u{1b}]52;c;aGk=\u{7}b\u{9b}2J\u{202e}";
    let mut run = changed_run();
    run.cases[0].name = format!("refund {hostile}");
    run.cases[0].runs[0].output = Some(Value::String(format!("no {hostile}")));
    f.collect(&run);
    let mut base = baseline();
    base.cases[0].name = run.cases[0].name.clone();
    base.write_json(f.baseline_file("shop")).expect("baseline");
    for args in [
        &["report"][..],
        &["report", "--json"],
        &["diff"],
        &["diff", "--json"],
        &["accept"],
    ] {
        let out = f.eval(args, "r\n");
        let text = stdout(&out);
        assert!(text.contains("refund a"), "{args:?}: {}", shown(&out));
        assert!(
            !text
                .chars()
                .any(|c| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\u{202e}')),
            "{args:?} printed a control character: {text:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&f.root);
}

//! The HTML eval report in a real browser: the committed shop dataset run offline (a
//! replay as the baseline, a hastier clerk against the same recordings as the run),
//! plus a case with parallel calls and a refused approval, written as one page and
//! opened by headless Chromium: the page loads without a console message, shows every
//! case with its verdict, a failing case's reason and the baseline's worse case, and
//! its screenshot is kept as a CI artifact (`target/ci-artifacts/evals-report.png`).
//!
//! Chromium is `TACKLE_CHROMIUM`, else `chromium` or `chromium-browser` on the `PATH`
//! (`.ci/run` installs Debian's package). Without one the test says `SKIPPED`, and
//! fails under `CI`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tackle::agent::model::ToolCallRequest;
use tackle::agent::model::{ChatRequest, ChatResponse, FunctionModel, ModelError, Role};
use tackle::evals::{
    Case, CaseReport, Dataset, Eval, EvalMode, EvalReport, EvaluatorSpec, ExpectedCall,
};
use tackle::{tool, Agent, Runtime};

use crate::evals::{agent, clerk, hasty_clerk, runtime, shop};

/// How long one Chromium run may take before it is killed.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

/// What a page must not run: were it not escaped, the page would mark its body.
const INJECTED: &str = "<script>document.body.setAttribute('data-pwned','1')</script>\
                        <img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">";

/// Looks a customer up.
#[tool(namespace = "desk", side_effects = read)]
fn customer(id: String) -> Value {
    json!({"id": id, "tier": "gold"})
}

/// Credits a customer (every call needs approval).
#[tool(namespace = "desk", side_effects = external, needs_approval)]
fn credit(id: String, cents: u64) -> String {
    format!("credited {cents} to {id}")
}

/// A desk clerk that looks the customer up and credits them at once, both in one turn.
fn eager_desk(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let results: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    Ok(if results.is_empty() {
        ChatResponse::calls(
            "Looking C-7 up and crediting at once.",
            vec![
                ToolCallRequest::new("c1", "desk_customer", json!({"id": "C-7"})),
                ToolCallRequest::new("c2", "desk_credit", json!({"id": "C-7", "cents": 500})),
            ],
        )
    } else {
        ChatResponse::text(format!(
            "C-7 is gold; no credit without approval. {INJECTED}"
        ))
    })
}

/// The page's reports: the replayed baseline, and the run (the hasty clerk against the
/// same recordings, plus the desk's case).
async fn reports() -> (EvalReport, EvalReport) {
    let dataset = shop();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cassettes/evals");
    let rt = runtime();
    let baseline = Eval::new(&dataset, &agent(clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Replay)
        .run()
        .await
        .unwrap();
    let mut report = Eval::new(&dataset, &agent(hasty_clerk), &rt)
        .cassettes(&dir)
        .mode(EvalMode::Counterfactual)
        .run()
        .await
        .unwrap();
    let desk = Dataset::new("shop").case(
        Case::new(
            "parallel calls and an approval",
            format!("Credit customer C-7 with 5.00. {INJECTED}"),
        )
        .expect_calls([ExpectedCall::with("desk.customer", json!({"id": "C-7"}))])
        .evaluator(EvaluatorSpec::ToolCorrectness),
    );
    let desk_agent =
        Agent::new(FunctionModel::new("desk", eager_desk)).tools([customer::KEY, credit::KEY]);
    let desk_runtime = std::sync::Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let desk = Eval::new(&desk, &desk_agent, &desk_runtime)
        .mode(EvalMode::Live)
        .run()
        .await
        .unwrap();
    add_cases(&mut report, desk.cases);
    (report, baseline)
}

/// Adds `cases` to `report`, counting them in its summary.
fn add_cases(report: &mut EvalReport, cases: Vec<CaseReport>) {
    for case in cases {
        let summary = &mut report.summary;
        summary.cases += 1;
        summary.passed += usize::from(case.passed);
        summary.failed += usize::from(!case.passed);
        for e in case.runs.iter().flat_map(|r| &r.evaluations) {
            let entry = summary.evaluators.entry(e.evaluator.clone()).or_default();
            entry.mean_score =
                (entry.mean_score * entry.total as f64 + e.score) / (entry.total + 1) as f64;
            entry.passed += usize::from(e.passed);
            entry.total += 1;
        }
        report.cases.push(case);
    }
    report.summary.pass_rate = report.summary.passed as f64 / report.summary.cases as f64;
}

/// The browser to use, or why there is none that runs.
fn find_chromium() -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = match std::env::var_os("TACKLE_CHROMIUM") {
        Some(path) => vec![PathBuf::from(path)],
        None => std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .unwrap_or_default()
            .iter()
            .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
            .filter(|path| path.is_file())
            .collect(),
    };
    let Some(bin) = candidates.into_iter().next() else {
        return Err(
            "no `chromium` or `chromium-browser` on the PATH, and TACKLE_CHROMIUM \
                    is not set (Debian: apt-get install chromium)"
                .to_owned(),
        );
    };
    let scratch = scratch("probe");
    let run = browse(&bin, &["--version"], &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    let run = run?;
    if !run.ok {
        return Err(format!(
            "{} --version failed: {}",
            bin.display(),
            run.stderr.trim()
        ));
    }
    Ok(bin)
}

/// One browser run: whether it exited 0, and what it printed.
struct Browsed {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs Chromium headless with `args` (its profile and outputs in `dir`), killed after
/// [`BROWSER_TIMEOUT`].
fn browse(bin: &Path, args: &[&str], dir: &Path) -> Result<Browsed, String> {
    use std::os::unix::process::CommandExt as _;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let (out, err) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let file = |path: &Path| std::fs::File::create(path).map_err(|e| e.to_string());
    let profile = format!("--user-data-dir={}", dir.join("profile").display());
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &profile,
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        // Its own process group, so a timeout ends the browser's helpers too.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{} cannot start: {e}", bin.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > BROWSER_TIMEOUT => {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} {args:?} did not end within {BROWSER_TIMEOUT:?}: killed",
                    bin.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    Ok(Browsed {
        ok: status.success(),
        stdout: read(&out),
        stderr: read(&err),
    })
}

/// The console messages Chromium logged for `page` (any: the report's page logs
/// nothing when it works), and any uncaught error.
fn console_problems(stderr: &str, page: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|line| {
            (line.contains(":CONSOLE") && line.contains(page)) || line.contains("Uncaught")
        })
        .map(str::to_owned)
        .collect()
}

/// Loads `page` and returns its DOM once its scripts ran, failing on any console
/// message of the page.
fn dom_of(bin: &Path, page: &Path, dir: &Path) -> Result<(String, Vec<String>), String> {
    let url = format!("file://{}", page.display());
    let run = browse(bin, &["--dump-dom", &url], dir)?;
    if !run.ok || !run.stdout.contains("</html>") {
        return Err(format!(
            "{} --dump-dom {url} failed: {}",
            bin.display(),
            run.stderr
        ));
    }
    Ok((run.stdout, console_problems(&run.stderr, &url)))
}

/// `text` as Chromium serializes a text node (`&`, `<`, `>` escaped).
fn as_dom_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tackle-evals-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The report of the shop's run against its baseline, in Chromium.
#[tokio::test]
async fn the_html_report_loads_in_a_browser_and_shows_every_case() {
    if std::env::var_os("TACKLE_EVAL").is_some() {
        // A mode from the environment would record over the committed cassettes.
        println!("SKIPPED: TACKLE_EVAL is set; the HTML report renders its own runs");
        return;
    }
    let started = Instant::now();
    let (report, baseline) = reports().await;
    let failing: Vec<&CaseReport> = report.cases.iter().filter(|c| !c.passed).collect();
    assert!(
        failing.iter().any(|c| c.name == "refund a delivered order"),
        "{}",
        report.table()
    );
    let dir = scratch("report");
    let page = dir.join("report.html");
    report.write_html(&page, Some(&baseline)).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(INJECTED), "the injected markup is escaped");
    assert!(!html.contains("http://") && !html.contains("https://"));
    // The same page with a deliberate script error and a blocked network request: the
    // console check must see them, or it proves nothing.
    let broken = dir.join("broken.html");
    std::fs::write(
        &broken,
        html.replace(
            "<footer>",
            "<img src=\"https://example.invalid/x.png\"><script>notAFunction();</script><footer>",
        ),
    )
    .unwrap();
    let built = started.elapsed();

    let bin = match find_chromium() {
        Ok(bin) => bin,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("Chromium cannot run, and CI must run this test: {why}")
        }
        Err(why) => {
            println!("SKIPPED: Chromium cannot run here: {why}");
            return;
        }
    };

    let (_, problems) = dom_of(&bin, &broken, &dir.join("broken")).unwrap();
    assert!(
        problems
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError: notAFunction")),
        "the check misses a script error: {problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|l| l.contains("Content Security Policy")),
        "the check misses a blocked request: {problems:#?}"
    );

    let (dom, problems) = dom_of(&bin, &page, &dir.join("page")).unwrap();
    assert!(problems.is_empty(), "the page logged: {problems:#?}");
    assert!(
        dom.contains("data-script=\"ready\""),
        "the page's script did not finish"
    );
    assert!(
        !dom.contains("data-pwned=\"1\""),
        "the page ran a case's markup"
    );
    assert!(dom.contains("<header id=\"report\" data-verdict=\"fail\">"));
    for case in &report.cases {
        let verdict = if case.passed { "pass" } else { "fail" };
        for element in ["tr class=\"case-row\"", "details class=\"case\""] {
            let hook = format!("data-case=\"{}\" data-verdict=\"{verdict}\"", case.name);
            assert!(
                dom.split('<')
                    .any(|tag| tag.starts_with(element) && tag.contains(&hook)),
                "no <{element} {hook}>"
            );
        }
    }
    for case in &failing {
        let run = case.runs.iter().find(|r| !r.passed).unwrap();
        let evaluation = run.evaluations.iter().find(|e| !e.passed).unwrap();
        let reason: String = evaluation.reason.chars().take(80).collect();
        assert!(
            dom.contains(&as_dom_text(&reason)),
            "{}: the reason {reason:?} is not shown",
            case.name
        );
    }
    assert!(dom.contains("data-change=\"worse\" data-case=\"refund a delivered order\""));
    assert!(dom.contains("data-change=\"added\" data-case=\"parallel calls and an approval\""));
    for evaluator in report.summary.evaluators.keys() {
        assert!(
            dom.contains(&format!("<tr data-evaluator=\"{evaluator}\"")),
            "{evaluator}"
        );
    }
    assert!(dom.contains("data-parallel=\"true\""), "the parallel step");
    assert!(
        dom.contains("data-tool=\"desk.credit@1\" data-outcome=\"denied\""),
        "the refused approval"
    );
    assert!(dom.contains("diverged at step 0"));

    // The screenshot, kept by CI.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ci-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join("evals-report.png");
    let _ = std::fs::remove_file(&png);
    std::fs::copy(&page, artifacts.join("evals-report.html")).unwrap();
    let url = format!("file://{}", page.display());
    let shot = browse(
        &bin,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,2400",
            &url,
        ],
        &dir.join("screenshot"),
    )
    .unwrap();
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(
        shot.ok && size > 10 * 1024,
        "no screenshot at {} ({size} bytes): {}",
        png.display(),
        shot.stderr
    );
    println!(
        "HTML report: {} ({} bytes); screenshot: {} ({size} bytes); runs {:?}, browser {:?}",
        page.display(),
        html.len(),
        png.display(),
        built,
        started.elapsed() - built
    );
    let _ = std::fs::remove_dir_all(&dir);
}

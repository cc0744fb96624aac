//! The HTML report: one self-contained page to read a run in a browser.
//!
//! A report's table ([`EvalReport::table`]) says which cases failed; the page says why,
//! and shows what each case did. It is one file with its style and a small script
//! inline, and nothing to fetch: its Content Security Policy forbids every network
//! request, so it opens the same from a CI artifact, a mail, or an air-gapped machine.
//!
//! The page holds, top to bottom:
//!
//! - the **header**: the dataset, the mode, when it ran, and the share of cases that
//!   passed against the run's thresholds;
//! - with a **baseline**, the cases that got worse, better or changed
//!   ([`EvalReport::diff`]), each with its evaluator and JSON-pointer lines;
//! - the **evaluators**: how many runs each passed, and its mean score;
//! - the **cases**: a row each (verdict, pass rate, time, calls, the first failing
//!   reason), then each case's runs: the evaluations with their reasons, the answer or
//!   error, the divergence of a counterfactual run, and the **trajectory as a
//!   timeline**: a row per model turn with its thought, the calls it made side by side
//!   when there are several (they ran in parallel), each with its arguments and result
//!   or error; a call refused for want of approval is marked so.
//!
//! Every value from the report (case names, inputs, answers, reasons, arguments) is
//! HTML-escaped: a page never runs what a case holds. Long values are clipped on the
//! page (the JSON report keeps them whole).
//!
//! Stable hooks for tools and tests: `data-case` and `data-verdict` (`pass` or `fail`)
//! on each case's row and section, `data-evaluator` on evaluator rows and verdicts,
//! `data-step` on trajectory steps, `data-tool` and `data-outcome` on calls,
//! `data-change` (`worse`, `better`, `changed`, `added`, `removed`) in the baseline
//! section, and `data-script="ready"` on the body once the page's script has run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::diff::{CaseChange, EvalDiff};
use super::report::{CallRecord, CaseReport, CaseRun, EvalReport, TrajectoryStep};

/// The most characters of a call's arguments or result shown on the page.
const CALL_CHARS: usize = 4_000;
/// The most characters of an answer, error or input shown on the page.
const TEXT_CHARS: usize = 20_000;

impl EvalReport {
    /// The report as one self-contained HTML page (inline style and script, no
    /// network): the header, the evaluators, a row per case, each case's runs with
    /// their trajectory as a timeline and, with a `baseline`, how the run differs
    /// from it ([`diff`](Self::diff)). See the module's documentation for its hooks.
    pub fn to_html(&self, baseline: Option<&EvalReport>) -> String {
        let diff = baseline.map(|b| self.diff(b));
        let mut page = Page::default();
        page.head(self);
        page.header(self);
        if let Some(diff) = &diff {
            page.baseline(diff, baseline.map(|b| b.started_at.as_str()));
        }
        page.evaluators(self);
        page.cases(self, diff.as_ref());
        page.details(self);
        page.foot();
        page.out
    }

    /// Writes the HTML page ([`to_html`](Self::to_html)) to `path`, whole or not at
    /// all.
    pub fn write_html(
        &self,
        path: impl AsRef<Path>,
        baseline: Option<&EvalReport>,
    ) -> std::io::Result<()> {
        super::write_whole(path.as_ref(), self.to_html(baseline).as_bytes())
    }
}

/// `text` escaped for HTML text and double-quoted attributes; control characters
/// other than line breaks and tabs become U+FFFD.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters of `text`, escaped, with a note of what was left out.
fn clipped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => esc(text),
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            format!(
                "{}<span class=\"clip\">… {rest} more characters (the JSON report holds them)</span>",
                esc(&text[..at])
            )
        }
    }
}

/// A value as text: a string as itself, anything else as pretty JSON.
fn json_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn verdict(passed: bool) -> &'static str {
    if passed {
        "pass"
    } else {
        "fail"
    }
}

fn badge(passed: bool) -> &'static str {
    if passed {
        "<span class=\"badge pass\">pass</span>"
    } else {
        "<span class=\"badge fail\">FAIL</span>"
    }
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn millis(ms: f64) -> String {
    if ms < 1_000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1_000.0)
    }
}

/// Why a case failed: its first failing run's first failing evaluator, else its error.
fn first_reason(case: &CaseReport) -> String {
    let Some(run) = case.runs.iter().find(|r| !r.passed) else {
        return String::new();
    };
    run.evaluations
        .iter()
        .find(|e| !e.passed)
        .map(|e| format!("{}: {}", e.evaluator, e.reason))
        .or_else(|| run.error.clone())
        .unwrap_or_default()
}

/// The page being written.
#[derive(Default)]
struct Page {
    out: String,
}

impl Page {
    fn head(&mut self, report: &EvalReport) {
        let _ = write!(
            self.out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"tackle evals\">\n\
             <title>eval {}: {} of {} passed</title>\n<style>{STYLE}</style>\n</head>\n\
             <body data-dataset=\"{}\" data-format=\"{}\">\n",
            esc(&report.dataset),
            report.summary.passed,
            report.summary.cases,
            esc(&report.dataset),
            report.format
        );
    }

    fn header(&mut self, report: &EvalReport) {
        let passed = report.passed();
        let _ = write!(
            self.out,
            "<header id=\"report\" data-verdict=\"{}\">\n<h1>{} Eval <code>{}</code></h1>\n\
             <p class=\"lead\"><b>{} of {} case(s) passed</b> ({}; {} needed)</p>\n\
             <dl class=\"facts\"><dt>mode</dt><dd>{}</dd><dt>started</dt><dd>{}</dd>\
             <dt>took</dt><dd>{}</dd><dt>a case passes at</dt><dd>{} of its runs</dd>\
             <dt>report format</dt><dd>{}</dd></dl>\n</header>\n",
            verdict(passed),
            badge(passed),
            esc(&report.dataset),
            report.summary.passed,
            report.summary.cases,
            percent(report.summary.pass_rate),
            percent(report.thresholds.run_pass_rate),
            report.mode,
            esc(&report.started_at),
            millis(report.duration_ms),
            percent(report.thresholds.case_pass_rate),
            report.format
        );
    }

    fn baseline(&mut self, diff: &EvalDiff, started: Option<&str>) {
        let _ = write!(
            self.out,
            "<section id=\"baseline\">\n<h2>Against the baseline</h2>\n<p class=\"lead\">\
             baseline of {}: <b>{} worse</b>, {} better, {} changed, {} added, {} removed</p>\n",
            esc(started.unwrap_or_default()),
            diff.worse.len(),
            diff.better.len(),
            diff.changed.len(),
            diff.added.len(),
            diff.removed.len()
        );
        if diff.is_empty() {
            self.out
                .push_str("<p class=\"none\">No change from the baseline.</p>\n");
        }
        for (kind, changes) in [
            ("worse", &diff.worse),
            ("better", &diff.better),
            ("changed", &diff.changed),
        ] {
            for change in changes {
                self.change(kind, change);
            }
        }
        for (kind, names) in [("added", &diff.added), ("removed", &diff.removed)] {
            for name in names {
                let _ = writeln!(
                    self.out,
                    "<div class=\"change {kind}\" data-change=\"{kind}\" data-case=\"{0}\">\
                     <span class=\"tag\">{kind}</span> <b>{0}</b></div>",
                    esc(name)
                );
            }
        }
        self.out.push_str("</section>\n");
    }

    fn change(&mut self, kind: &str, change: &CaseChange) {
        let _ = write!(
            self.out,
            "<div class=\"change {kind}\" data-change=\"{kind}\" data-case=\"{0}\">\
             <span class=\"tag\">{kind}</span> <b>{0}</b> \
             <span class=\"was\">{1} {2:.2} → {3} {4:.2}</span>\n<ul class=\"lines\">",
            esc(&change.case),
            badge(change.passed_before),
            change.score_before,
            badge(change.passed_after),
            change.score_after
        );
        for line in change.evaluators.iter().chain(&change.changes) {
            let _ = write!(
                self.out,
                "<li><code>{}</code></li>",
                clipped(line, CALL_CHARS)
            );
        }
        self.out.push_str("</ul></div>\n");
    }

    fn evaluators(&mut self, report: &EvalReport) {
        self.out.push_str(
            "<section id=\"evaluators\">\n<h2>Evaluators</h2>\n<table class=\"grid\">\
             <thead><tr><th>evaluator</th><th>runs passed</th><th>mean score</th>\
             <th class=\"wide\"></th></tr></thead><tbody>\n",
        );
        for (name, e) in &report.summary.evaluators {
            let share = e.passed as f64 / e.total.max(1) as f64;
            let _ = writeln!(
                self.out,
                "<tr data-evaluator=\"{0}\" data-verdict=\"{1}\"><td><code>{0}</code></td>\
                 <td class=\"num\">{2} of {3}</td><td class=\"num\">{4:.2}</td>\
                 <td><div class=\"bar\"><div style=\"width:{5:.1}%\"></div></div></td></tr>",
                esc(name),
                verdict(e.passed == e.total),
                e.passed,
                e.total,
                e.mean_score,
                share * 100.0
            );
        }
        if report.summary.evaluators.is_empty() {
            self.out
                .push_str("<tr><td colspan=\"4\" class=\"none\">no evaluator ran</td></tr>\n");
        }
        self.out.push_str("</tbody></table>\n</section>\n");
    }

    fn cases(&mut self, report: &EvalReport, diff: Option<&EvalDiff>) {
        // How each case compares with the baseline, when there is one.
        let mut against: BTreeMap<&str, &str> = BTreeMap::new();
        if let Some(diff) = diff {
            for (kind, changes) in [
                ("worse", &diff.worse),
                ("better", &diff.better),
                ("changed", &diff.changed),
            ] {
                for change in changes {
                    against.insert(change.case.as_str(), kind);
                }
            }
            for name in &diff.added {
                against.insert(name.as_str(), "added");
            }
        }
        let _ = write!(
            self.out,
            "<section id=\"cases\">\n<h2>Cases</h2>\n<div class=\"controls\">\
             <label><input type=\"checkbox\" id=\"only-failing\"> only failing cases</label>\
             <button type=\"button\" id=\"expand-all\">expand all</button>\
             <button type=\"button\" id=\"collapse-all\">collapse all</button></div>\n\
             <table class=\"grid\" id=\"case-table\"><thead><tr><th>case</th><th>verdict</th>\
             <th>pass rate</th><th>time</th><th>calls</th>{}<th class=\"wide\">why</th>\
             </tr></thead><tbody>\n",
            if diff.is_some() {
                "<th>baseline</th>"
            } else {
                ""
            }
        );
        for (i, case) in report.cases.iter().enumerate() {
            let time = case.runs.iter().map(|r| r.duration_ms).sum::<f64>()
                / case.runs.len().max(1) as f64;
            let calls = case.runs.first().map_or(0, |r| {
                r.trajectory.iter().map(|s| s.calls.len()).sum::<usize>()
            });
            let _ = write!(
                self.out,
                "<tr class=\"case-row\" data-case=\"{0}\" data-verdict=\"{1}\">\
                 <td><a href=\"#case-{2}\">{0}</a></td><td>{3}</td><td class=\"num\">{4}</td>\
                 <td class=\"num\">{5}</td><td class=\"num\">{calls}</td>",
                esc(&case.name),
                verdict(case.passed),
                i,
                badge(case.passed),
                percent(case.pass_rate),
                millis(time)
            );
            if diff.is_some() {
                let kind = against.get(case.name.as_str()).copied().unwrap_or("same");
                let _ = write!(
                    self.out,
                    "<td data-change=\"{kind}\"><span class=\"tag {kind}\">{kind}</span></td>"
                );
            }
            let _ = writeln!(
                self.out,
                "<td class=\"why\">{}</td></tr>",
                clipped(&first_reason(case), 300)
            );
        }
        self.out.push_str("</tbody></table>\n</section>\n");
    }

    fn details(&mut self, report: &EvalReport) {
        self.out
            .push_str("<section id=\"details\">\n<h2>Runs and trajectories</h2>\n");
        for (i, case) in report.cases.iter().enumerate() {
            let _ = write!(
                self.out,
                "<details class=\"case\" id=\"case-{i}\" data-case=\"{0}\" data-verdict=\"{1}\"{2}>\
                 \n<summary>{3} <b>{0}</b> <span class=\"muted\">{4} of {5} run(s) passed</span>\
                 </summary>\n<div class=\"body\"><p class=\"input\"><span class=\"label\">input\
                 </span> {6}</p>\n",
                esc(&case.name),
                verdict(case.passed),
                if case.passed { "" } else { " open" },
                badge(case.passed),
                case.runs.iter().filter(|r| r.passed).count(),
                case.runs.len(),
                clipped(&case.input, TEXT_CHARS)
            );
            if !case.metadata.is_empty() {
                self.out.push_str("<p class=\"meta\">");
                for (key, value) in &case.metadata {
                    let _ = write!(
                        self.out,
                        "<span class=\"kv\">{}: {}</span> ",
                        esc(key),
                        clipped(&json_text(value), 200)
                    );
                }
                self.out.push_str("</p>\n");
            }
            for run in &case.runs {
                self.run(run);
            }
            self.out.push_str("</div></details>\n");
        }
        self.out.push_str("</section>\n");
    }

    fn run(&mut self, run: &CaseRun) {
        let _ = write!(
            self.out,
            "<div class=\"run\" data-repeat=\"{}\" data-verdict=\"{}\">\n<h3>run {} {} \
             <span class=\"muted\">{} · {} model request(s) · {} + {} tokens{}</span></h3>\n",
            run.repeat,
            verdict(run.passed),
            run.repeat,
            badge(run.passed),
            millis(run.duration_ms),
            run.model_requests,
            run.usage.input_tokens,
            run.usage.output_tokens,
            run.cost
                .as_deref()
                .map(|c| format!(" · cost {}", esc(c)))
                .unwrap_or_default()
        );
        self.out.push_str("<table class=\"evaluations\"><tbody>");
        for e in &run.evaluations {
            let _ = write!(
                self.out,
                "<tr data-evaluator=\"{0}\" data-verdict=\"{1}\"><td>{2}</td><td><code>{0}</code>\
                 </td><td class=\"num\">{3:.2}</td><td class=\"reason\">{4}</td></tr>",
                esc(&e.evaluator),
                verdict(e.passed),
                badge(e.passed),
                e.score,
                clipped(&e.reason, TEXT_CHARS)
            );
        }
        self.out.push_str("</tbody></table>\n");
        if let Some(output) = &run.output {
            let _ = writeln!(
                self.out,
                "<div class=\"answer\"><span class=\"label\">answer</span><pre>{}</pre></div>",
                clipped(&json_text(output), TEXT_CHARS)
            );
        }
        if let Some(error) = &run.error {
            let _ = writeln!(
                self.out,
                "<div class=\"error\"><span class=\"label\">error</span><pre>{}</pre></div>",
                clipped(error, TEXT_CHARS)
            );
        }
        if let Some(d) = &run.divergence {
            let _ = writeln!(
                self.out,
                "<div class=\"divergence\" data-step=\"{0}\"><span class=\"label\">diverged at \
                 step {0}</span> the model asked <code>{1}</code> <code>{2}</code>, which the \
                 recording does not hold (the nearest recorded: in the step's call below)</div>",
                d.step,
                esc(&d.tool),
                clipped(&d.arguments.to_string(), CALL_CHARS),
            );
        }
        self.timeline(&run.trajectory);
        self.out.push_str("</div>\n");
    }

    fn timeline(&mut self, steps: &[TrajectoryStep]) {
        if steps.is_empty() {
            self.out
                .push_str("<p class=\"none\">No model turn was recorded.</p>\n");
            return;
        }
        self.out.push_str("<ol class=\"timeline\">\n");
        for step in steps {
            let answer = step.calls.is_empty();
            let _ = write!(
                self.out,
                "<li class=\"step{}\" data-step=\"{}\" data-calls=\"{}\">\
                 <div class=\"turn\"><span class=\"who\">model · step {}</span>{}</div>",
                if answer { " final" } else { "" },
                step.step,
                step.calls.len(),
                step.step,
                if step.thought.is_empty() {
                    "<span class=\"muted\">(no text)</span>".to_owned()
                } else {
                    format!(
                        "<div class=\"thought\">{}</div>",
                        clipped(&step.thought, TEXT_CHARS)
                    )
                }
            );
            if !answer {
                let parallel = step.calls.len() > 1;
                let _ = write!(
                    self.out,
                    "<div class=\"calls{}\" data-parallel=\"{}\">",
                    if parallel { " parallel" } else { "" },
                    parallel
                );
                if parallel {
                    let _ = write!(
                        self.out,
                        "<div class=\"par-label\">{} calls in parallel</div>",
                        step.calls.len()
                    );
                }
                for call in &step.calls {
                    self.call(call);
                }
                self.out.push_str("</div>");
            }
            self.out.push_str("</li>\n");
        }
        self.out.push_str("</ol>\n");
    }

    fn foot(&mut self) {
        let _ = write!(
            self.out,
            "<footer>Written by tackle evals: one file, nothing fetched.</footer>\n\
             <script>{SCRIPT}</script>\n</body>\n</html>\n"
        );
    }

    fn call(&mut self, call: &CallRecord) {
        let (outcome, label) = match (call.error_kind.as_deref(), &call.error) {
            (Some("ApprovalDenied"), _) => ("denied", "approval denied".to_owned()),
            (Some("CassetteMiss"), _) => ("miss", "not in the recording".to_owned()),
            (Some(kind), _) => ("error", esc(kind)),
            (None, Some(_)) => ("error", "error".to_owned()),
            (None, None) => ("ok", "ok".to_owned()),
        };
        let _ = write!(
            self.out,
            "<div class=\"call {outcome}\" data-tool=\"{0}\" data-outcome=\"{outcome}\">\
             <div class=\"call-head\"><code>{0}</code><span class=\"badge {outcome}\">{label}\
             </span></div><div class=\"label\">arguments</div><pre>{1}</pre>",
            esc(&call.tool),
            clipped(&json_text(&call.arguments), CALL_CHARS)
        );
        if let Some(result) = &call.result {
            let _ = write!(
                self.out,
                "<div class=\"label\">result</div><pre>{}</pre>",
                clipped(&json_text(result), CALL_CHARS)
            );
        }
        if let Some(error) = &call.error {
            let _ = write!(
                self.out,
                "<div class=\"label\">error</div><pre class=\"err\">{}</pre>",
                clipped(error, CALL_CHARS)
            );
        }
        self.out.push_str("</div>");
    }
}

/// The page's policy: nothing from the network, only its own inline style and script.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                   img-src data:; base-uri 'none'; form-action 'none'";

const STYLE: &str = r#"
:root{--fg:#1d2330;--muted:#667085;--line:#d9dee7;--bg:#f6f7f9;--card:#fff;--pass:#137a3a;--pass-bg:#e3f4e8;--fail:#b42318;--fail-bg:#fde8e6;--warn:#a15c00;--warn-bg:#fff1d6;--accent:#3859c7}
*{box-sizing:border-box}
body{margin:0;padding:24px 32px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
[hidden]{display:none!important}
h1{font-size:24px;margin:0 0 6px}h1 code{font-size:inherit}h2{font-size:18px;margin:28px 0 10px}h3{font-size:14px;margin:0 0 8px}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{margin:2px 0 6px;padding:6px 8px;background:#f1f3f6;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere;max-height:320px;overflow:auto}
header,section>table,.case,.change{background:var(--card);border:1px solid var(--line);border-radius:8px}
header{padding:16px 20px}
.lead{margin:4px 0 8px;font-size:15px}.muted{color:var(--muted);font-weight:normal}.none{color:var(--muted);font-style:italic}
.facts{display:flex;flex-wrap:wrap;gap:4px 20px;margin:0}.facts dt{color:var(--muted)}.facts dd{margin:0 0 0 -14px;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:700;vertical-align:middle}
.badge.pass,.badge.ok{background:var(--pass-bg);color:var(--pass)}.badge.fail,.badge.error{background:var(--fail-bg);color:var(--fail)}
.badge.denied,.badge.miss{background:var(--warn-bg);color:var(--warn)}
table.grid{width:100%;border-collapse:separate;border-spacing:0;overflow:hidden}
.grid th,.grid td{padding:7px 10px;text-align:left;border-bottom:1px solid var(--line);vertical-align:top}
.grid th{background:#eef1f5;font-weight:600;font-size:12.5px}.grid tr:last-child td{border-bottom:none}
.grid tr[data-verdict=fail] td:first-child{border-left:4px solid var(--fail)}.grid tr[data-verdict=pass] td:first-child{border-left:4px solid var(--pass)}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}.wide{width:40%}.why{color:var(--fail)}
a{color:var(--accent)}
.bar{height:8px;background:var(--fail-bg);border-radius:4px;overflow:hidden;min-width:120px}.bar div{height:100%;background:var(--pass)}
.controls{margin:0 0 8px;display:flex;gap:12px;align-items:center}
button{font:inherit;padding:3px 10px;border:1px solid var(--line);border-radius:6px;background:var(--card);cursor:pointer}
.change{padding:8px 12px;margin:6px 0}.change.worse{border-left:4px solid var(--fail)}.change.better{border-left:4px solid var(--pass)}.change.changed,.change.added,.change.removed{border-left:4px solid var(--accent)}
.lines{margin:6px 0 0;padding-left:20px}.lines code{white-space:pre-wrap;overflow-wrap:anywhere}
.tag{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;font-weight:600;background:#eef1f5;color:var(--muted)}
.tag.worse{background:var(--fail-bg);color:var(--fail)}.tag.better{background:var(--pass-bg);color:var(--pass)}.tag.changed,.tag.added{background:#e7ecfb;color:var(--accent)}
.was{margin-left:8px}
.case{margin:10px 0}.case>summary{padding:10px 14px;cursor:pointer;font-size:15px}.case[open]>summary{border-bottom:1px solid var(--line)}
.case[data-verdict=fail]{border-left:4px solid var(--fail)}.case[data-verdict=pass]{border-left:4px solid var(--pass)}
.case .body{padding:10px 16px}
.label{display:inline-block;color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;margin-right:6px}
.input,.meta{margin:4px 0}.meta .kv{margin-right:12px;color:var(--muted)}
.run{border-top:1px dashed var(--line);padding:10px 0}.run:first-of-type{border-top:none}
table.evaluations{border-collapse:collapse;margin:0 0 8px;width:100%}
.evaluations td{padding:3px 8px;border-bottom:1px solid #eef1f5;vertical-align:top;width:1%;white-space:nowrap}.evaluations td.reason{width:auto;white-space:normal}
.evaluations tr[data-verdict=fail] .reason{color:var(--fail);font-weight:600}
.answer pre{background:var(--pass-bg)}.error pre,pre.err{background:var(--fail-bg)}
.divergence{padding:6px 10px;margin:6px 0;background:var(--warn-bg);border-radius:6px}
.timeline{list-style:none;margin:10px 0 0;padding:0 0 0 18px;border-left:2px solid var(--line)}
.step{position:relative;margin:0 0 12px;padding-left:12px}
.step::before{content:"";position:absolute;left:-25px;top:5px;width:10px;height:10px;border-radius:50%;background:var(--accent);border:2px solid var(--bg)}
.step.final::before{background:var(--pass)}
.turn .who{font-weight:600;color:var(--accent);margin-right:8px}.thought{display:inline;white-space:pre-wrap}
.calls{display:flex;flex-wrap:wrap;gap:8px;margin-top:6px}
.calls.parallel{padding:8px;border:1px dashed var(--accent);border-radius:8px}
.par-label{flex:0 0 100%;font-size:12px;font-weight:600;color:var(--accent)}
.call{flex:1 1 260px;border:1px solid var(--line);border-radius:6px;padding:6px 8px;background:var(--card);min-width:0}
.call.denied,.call.miss{border-color:#f0c36a;background:#fffaf0}.call.error{border-color:#f3b3ab}
.call-head{display:flex;justify-content:space-between;gap:8px;align-items:center;margin-bottom:4px}
footer{margin-top:24px;color:var(--muted);font-size:12px}
"#;

const SCRIPT: &str = r#"
(function () {
  "use strict";
  var only = document.getElementById("only-failing");
  function filter() {
    document.querySelectorAll(".case-row, details.case").forEach(function (el) {
      el.hidden = only.checked && el.getAttribute("data-verdict") === "pass";
    });
  }
  function setAll(open) {
    document.querySelectorAll("details.case").forEach(function (d) { d.open = open; });
  }
  function reveal() {
    var el = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (el && el.tagName === "DETAILS") { el.open = true; }
  }
  only.addEventListener("change", filter);
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  window.addEventListener("hashchange", reveal);
  filter();
  reveal();
  document.body.setAttribute("data-script", "ready");
})();
"#;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::evaluators::Evaluation;
    use super::super::mode::EvalMode;
    use super::super::report::{summarize, Divergence, Thresholds};
    use super::*;

    const EVIL: &str = "<script>alert('x')</script>";

    fn call(tool: &str, error_kind: Option<&str>) -> CallRecord {
        CallRecord {
            tool: tool.to_owned(),
            arguments: json!({"note": EVIL}),
            result: error_kind.is_none().then(|| json!({"ok": "</pre><b>"})),
            error: error_kind.map(|k| format!("{k}: \"refused\" & <stopped>")),
            error_kind: error_kind.map(str::to_owned),
        }
    }

    fn report(passed: bool) -> EvalReport {
        let run = CaseRun {
            repeat: 1,
            passed,
            output: Some(json!(format!("answer {EVIL}"))),
            error: None,
            duration_ms: 12.5,
            model_requests: 2,
            usage: Default::default(),
            cost: None,
            trajectory: vec![
                TrajectoryStep {
                    step: 0,
                    thought: "both at once".to_owned(),
                    calls: vec![
                        call("shop.find@1", None),
                        call("bank.pay@1", Some("ApprovalDenied")),
                    ],
                },
                TrajectoryStep {
                    step: 1,
                    thought: format!("done {EVIL}"),
                    calls: Vec::new(),
                },
            ],
            divergence: Some(Divergence {
                step: 0,
                tool: "shop.find@1".to_owned(),
                arguments: json!({"q": EVIL}),
                recorded: EVIL.to_owned(),
            }),
            evaluations: vec![Evaluation::of("Equals", passed, format!("reason {EVIL}"))],
        };
        let cases = vec![CaseReport {
            name: format!("case {EVIL}"),
            input: EVIL.to_owned(),
            metadata: [("area".to_owned(), json!(EVIL))].into_iter().collect(),
            passed,
            pass_rate: if passed { 1.0 } else { 0.0 },
            runs: vec![run],
        }];
        EvalReport {
            format: super::super::REPORT_FORMAT,
            dataset: format!("data {EVIL}"),
            mode: EvalMode::Replay,
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            duration_ms: 20.0,
            thresholds: Thresholds {
                case_pass_rate: 1.0,
                run_pass_rate: 1.0,
            },
            summary: summarize(&cases),
            cases,
        }
    }

    #[test]
    fn every_value_is_escaped_and_nothing_is_fetched() {
        let html = report(false).to_html(Some(&report(true)));
        // The page's own script is its only one.
        assert_eq!(html.matches("<script").count(), 1, "{html}");
        assert!(!html.contains("alert('x')"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("data-case=\"case &lt;script&gt;"));
        assert!(!html.contains("</pre><b>"));
        assert!(html.contains("&quot;refused&quot; &amp; &lt;stopped&gt;"));
        for network in ["http:", "https:", "src=", "@import", "url("] {
            assert!(!html.contains(network), "{network}");
        }
        assert!(html.contains("default-src 'none'"));
    }

    #[test]
    fn the_timeline_shows_parallel_calls_and_refused_approvals() {
        let html = report(false).to_html(None);
        assert!(html.contains("data-step=\"0\" data-calls=\"2\""), "{html}");
        assert!(html.contains("data-parallel=\"true\""));
        assert!(html.contains("2 calls in parallel"));
        assert!(html.contains("data-tool=\"bank.pay@1\" data-outcome=\"denied\""));
        assert!(html.contains("approval denied"));
        assert!(html.contains("class=\"step final\" data-step=\"1\" data-calls=\"0\""));
        assert!(html.contains("diverged at step 0"));
        assert!(html.contains("data-evaluator=\"Equals\" data-verdict=\"fail\""));
    }

    #[test]
    fn the_baseline_section_is_there_only_with_a_baseline() {
        let now = report(false);
        assert!(!now.to_html(None).contains("id=\"baseline\""));
        let html = now.to_html(Some(&report(true)));
        assert!(html.contains("id=\"baseline\""));
        assert!(html.contains("data-change=\"worse\" data-case=\"case &lt;script&gt;"));
        assert!(html.contains("Equals: pass -&gt; FAIL"), "{html}");
        let same = now.to_html(Some(&now));
        assert!(same.contains("No change from the baseline."));
    }

    #[test]
    fn long_values_are_clipped_on_a_character_boundary() {
        let text = "é".repeat(10);
        assert_eq!(clipped(&text, 20), text);
        let short = clipped(&text, 3);
        assert!(short.starts_with("ééé<span class=\"clip\">… 7 more characters"));
        assert_eq!(esc("a\u{0}b\r\n"), "a\u{FFFD}b\n");
    }

    #[test]
    fn the_page_is_written_whole() {
        let dir = std::env::temp_dir().join(format!("tackle-html-{}", std::process::id()));
        let path = dir.join("report.html");
        report(true).write_html(&path, None).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with("<!DOCTYPE html>") && written.ends_with("</html>\n"));
        let _ = std::fs::remove_dir_all(dir);
    }
}

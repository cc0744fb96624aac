//! Reports: what a dataset's run found, case by case, as a terminal table and as JSON
//! (stable, versioned by [`REPORT_FORMAT`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::evaluators::Evaluation;
use super::mode::EvalMode;
use crate::model::Usage;

/// The version of the JSON report format. A change that renames or removes a field
/// makes a new version; new fields may appear within one.
pub const REPORT_FORMAT: u32 = 1;

/// What running a dataset found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// [`REPORT_FORMAT`].
    pub format: u32,
    /// The dataset's name.
    pub dataset: String,
    /// How the cases ran.
    pub mode: EvalMode,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// How long the whole run took, in milliseconds.
    pub duration_ms: f64,
    /// What a case needs to pass, and the share of cases the run needs.
    pub thresholds: Thresholds,
    /// Each case, in the dataset's order.
    pub cases: Vec<CaseReport>,
    /// Counts over the cases.
    pub summary: Summary,
}

/// The pass marks of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// The share of a case's repeats that must pass for the case to pass.
    pub case_pass_rate: f64,
    /// The share of cases that must pass for the run to pass.
    pub run_pass_rate: f64,
}

/// One case over its repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// The task.
    pub input: String,
    /// The case's metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Whether the share of passing repeats reached the case's threshold.
    pub passed: bool,
    /// The share of its repeats that passed.
    pub pass_rate: f64,
    /// Each repeat.
    pub runs: Vec<CaseRun>,
}

/// One run of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// Which repeat, from 1.
    pub repeat: usize,
    /// Whether every evaluator passed, and the run ended as its mode requires.
    pub passed: bool,
    /// The answer (a text as a JSON string, or the typed answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the run ended without an answer, or why the case could not be judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// How many times the agent asked its model.
    pub model_requests: usize,
    /// The tokens its model calls used.
    pub usage: Usage,
    /// What they cost, where the agent knows the price (a decimal, as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// The steps: each model turn's thought and the calls it made.
    pub trajectory: Vec<TrajectoryStep>,
    /// In a counterfactual run: the first call the recording did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// Each evaluator's verdict.
    pub evaluations: Vec<Evaluation>,
}

impl CaseRun {
    /// Run `repeat` of a case that ended before it could be judged, with `error`.
    pub fn failed(repeat: usize, error: String) -> CaseRun {
        CaseRun {
            repeat,
            passed: false,
            output: None,
            error: Some(error),
            duration_ms: 0.0,
            model_requests: 0,
            usage: Usage::default(),
            cost: None,
            trajectory: Vec::new(),
            divergence: None,
            evaluations: Vec::new(),
        }
    }
}

/// One model turn of a case's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryStep {
    /// The step, from 0.
    pub step: usize,
    /// What the model said with its calls (or its answer, on the last step).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thought: String,
    /// The calls it made in this step (run side by side when more than one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallRecord>,
}

/// One tool call of a trajectory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The tool's key.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// The result, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's kind (`ApprovalDenied`, `CassetteMiss`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
}

/// Where a counterfactual run left its recording: the model asked for a call the
/// recording does not hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// The step, from 0.
    pub step: usize,
    /// The tool asked for.
    pub tool: String,
    /// The arguments asked for.
    pub arguments: Value,
    /// What the recording holds nearest to it (the replay's miss report).
    pub recorded: String,
}

/// Counts over a run's cases.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Cases run.
    pub cases: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that did not.
    pub failed: usize,
    /// `passed / cases` (1 for no cases).
    pub pass_rate: f64,
    /// By evaluator: how many runs it passed, of how many, and its mean score.
    pub evaluators: BTreeMap<String, EvaluatorSummary>,
}

/// One evaluator over a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvaluatorSummary {
    /// Runs it passed.
    pub passed: usize,
    /// Runs it judged.
    pub total: usize,
    /// Its mean score.
    pub mean_score: f64,
}

/// A run below its thresholds: each failing case and evaluator, in words.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EvalFailed(pub String);

impl EvalReport {
    /// Whether the run passed: the share of passing cases reached its threshold.
    pub fn passed(&self) -> bool {
        self.summary.pass_rate >= self.thresholds.run_pass_rate
    }

    /// `Ok` when the run passed; otherwise an error naming each failing case, its
    /// failing evaluators and why (for `cargo test`: `report.check()?`).
    pub fn check(&self) -> Result<(), EvalFailed> {
        if self.passed() {
            return Ok(());
        }
        let mut text = format!(
            "eval `{}` failed: {} of {} case(s) passed ({:.0}%, {:.0}% needed)",
            self.dataset,
            self.summary.passed,
            self.summary.cases,
            self.summary.pass_rate * 100.0,
            self.thresholds.run_pass_rate * 100.0
        );
        for case in self.cases.iter().filter(|c| !c.passed) {
            let _ = write!(
                text,
                "\n- case `{}` ({:.0}% of {} run(s) passed)",
                case.name,
                case.pass_rate * 100.0,
                case.runs.len()
            );
            // The first failing run says why.
            if let Some(run) = case.runs.iter().find(|r| !r.passed) {
                if let Some(error) = &run.error {
                    let _ = write!(text, "\n    error: {error}");
                }
                if let Some(d) = &run.divergence {
                    let _ = write!(
                        text,
                        "\n    diverged at step {}: asked {} {}; {}",
                        d.step, d.tool, d.arguments, d.recorded
                    );
                }
                for evaluation in run.evaluations.iter().filter(|e| !e.passed) {
                    let _ = write!(
                        text,
                        "\n    {}: {}",
                        evaluation.evaluator, evaluation.reason
                    );
                }
            }
        }
        Err(EvalFailed(text))
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a JSON report (one written by [`write_json`](Self::write_json)).
    pub fn from_json(text: &str) -> Result<EvalReport, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Writes the JSON report to `path`, whole or not at all.
    pub fn write_json(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        super::write_whole(path.as_ref(), (self.to_json() + "\n").as_bytes())
    }

    /// The report as a table for a terminal: a line per case (its verdict, pass rate,
    /// time, calls and the first failing evaluator's reason), then the evaluators.
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 40);
        let mut out = format!(
            "{:<width$}  {:<4}  {:>6}  {:>9}  {:>5}  why\n",
            "case", "", "pass", "time", "calls"
        );
        for case in &self.cases {
            let name: String = case.name.chars().take(width).collect();
            let time = case.runs.iter().map(|r| r.duration_ms).sum::<f64>()
                / case.runs.len().max(1) as f64;
            let calls = case.runs.first().map_or(0, |r| {
                r.trajectory.iter().map(|s| s.calls.len()).sum::<usize>()
            });
            let why = case
                .runs
                .iter()
                .find(|r| !r.passed)
                .map(|r| {
                    r.evaluations
                        .iter()
                        .find(|e| !e.passed)
                        .map(|e| format!("{}: {}", e.evaluator, e.reason))
                        .or_else(|| r.error.clone())
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            let why: String = why.chars().take(100).collect();
            let _ = writeln!(
                out,
                "{name:<width$}  {:<4}  {:>5.0}%  {:>7.1}ms  {calls:>5}  {why}",
                if case.passed { "ok" } else { "FAIL" },
                case.pass_rate * 100.0,
                time
            );
        }
        let _ = writeln!(
            out,
            "\n{} of {} case(s) passed ({:.0}%), {:.0} ms, mode {}",
            self.summary.passed,
            self.summary.cases,
            self.summary.pass_rate * 100.0,
            self.duration_ms,
            self.mode
        );
        for (name, e) in &self.summary.evaluators {
            let _ = writeln!(
                out,
                "  {name}: {} of {} passed, mean score {:.2}",
                e.passed, e.total, e.mean_score
            );
        }
        out
    }
}

/// The summary of `cases`.
pub(super) fn summarize(cases: &[CaseReport]) -> Summary {
    let passed = cases.iter().filter(|c| c.passed).count();
    let mut evaluators: BTreeMap<String, (usize, usize, f64)> = BTreeMap::new();
    for evaluation in cases
        .iter()
        .flat_map(|c| &c.runs)
        .flat_map(|r| &r.evaluations)
    {
        let entry = evaluators.entry(evaluation.evaluator.clone()).or_default();
        entry.0 += usize::from(evaluation.passed);
        entry.1 += 1;
        entry.2 += evaluation.score;
    }
    Summary {
        cases: cases.len(),
        passed,
        failed: cases.len() - passed,
        pass_rate: if cases.is_empty() {
            1.0
        } else {
            passed as f64 / cases.len() as f64
        },
        evaluators: evaluators
            .into_iter()
            .map(|(name, (passed, total, sum))| {
                (
                    name,
                    EvaluatorSummary {
                        passed,
                        total,
                        mean_score: sum / total.max(1) as f64,
                    },
                )
            })
            .collect(),
    }
}

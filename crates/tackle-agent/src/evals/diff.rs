//! A run's report against a baseline: the cases that got worse, better, or changed
//! their answer or trajectory, with the same JSON-pointer lines as a cassette review.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::replay::changes::json_diff;

use super::report::{CaseReport, EvalReport};

/// How a report differs from its baseline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalDiff {
    /// The dataset.
    pub dataset: String,
    /// Cases that passed in the baseline and fail now, or whose score fell.
    pub worse: Vec<CaseChange>,
    /// Cases that failed in the baseline and pass now, or whose score rose.
    pub better: Vec<CaseChange>,
    /// Cases with the same verdict and score whose answer or trajectory changed.
    pub changed: Vec<CaseChange>,
    /// Cases only the new report has.
    pub added: Vec<String>,
    /// Cases only the baseline has.
    pub removed: Vec<String>,
}

/// One case, before (the baseline) and after.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseChange {
    /// The case.
    pub case: String,
    /// Whether it passed in the baseline.
    pub passed_before: bool,
    /// Whether it passes now.
    pub passed_after: bool,
    /// Its mean evaluator score in the baseline.
    pub score_before: f64,
    /// Its mean evaluator score now.
    pub score_after: f64,
    /// Evaluators whose verdict changed: `name: pass -> FAIL (reason now)`.
    pub evaluators: Vec<String>,
    /// What changed in its first run's answer and trajectory, a JSON-pointer line
    /// each (`~ /output: "a" -> "b"`).
    pub changes: Vec<String>,
}

impl EvalDiff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.worse.is_empty()
            && self.better.is_empty()
            && self.changed.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
    }

    /// The diff in words, case by case (worse first).
    pub fn text(&self) -> String {
        if self.is_empty() {
            return format!("eval `{}`: no change from the baseline\n", self.dataset);
        }
        let mut out = format!(
            "eval `{}` against its baseline: {} worse, {} better, {} changed, {} added, {} removed\n",
            self.dataset,
            self.worse.len(),
            self.better.len(),
            self.changed.len(),
            self.added.len(),
            self.removed.len()
        );
        for (title, cases) in [
            ("worse", &self.worse),
            ("better", &self.better),
            ("changed", &self.changed),
        ] {
            for case in cases {
                let _ = writeln!(
                    out,
                    "{title}: `{}` ({} {:.2} -> {} {:.2})",
                    case.case,
                    verdict(case.passed_before),
                    case.score_before,
                    verdict(case.passed_after),
                    case.score_after
                );
                for line in case.evaluators.iter().chain(&case.changes) {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
        for case in &self.added {
            let _ = writeln!(out, "added: `{case}`");
        }
        for case in &self.removed {
            let _ = writeln!(out, "removed: `{case}`");
        }
        out
    }
}

fn verdict(passed: bool) -> &'static str {
    if passed {
        "pass"
    } else {
        "FAIL"
    }
}

/// A case's mean evaluator score over its runs.
fn score(case: &CaseReport) -> f64 {
    let scores: Vec<f64> = case
        .runs
        .iter()
        .flat_map(|r| r.evaluations.iter().map(|e| e.score))
        .collect();
    if scores.is_empty() {
        f64::from(u8::from(case.passed))
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    }
}

/// What of a case's first run a diff compares: its answer, error and trajectory.
fn compared(case: &CaseReport) -> Value {
    let run = case.runs.first();
    serde_json::json!({
        "output": run.and_then(|r| r.output.clone()),
        "error": run.and_then(|r| r.error.clone()),
        "trajectory": run.map(|r| serde_json::to_value(&r.trajectory).unwrap_or(Value::Null)),
    })
}

impl EvalReport {
    /// How this report differs from `baseline` (an earlier report of the same
    /// dataset): each case worse, better, or changed in its answer or trajectory.
    pub fn diff(&self, baseline: &EvalReport) -> EvalDiff {
        let mut diff = EvalDiff {
            dataset: self.dataset.clone(),
            ..EvalDiff::default()
        };
        for case in &self.cases {
            let Some(before) = baseline.cases.iter().find(|b| b.name == case.name) else {
                diff.added.push(case.name.clone());
                continue;
            };
            let (score_before, score_after) = (score(before), score(case));
            let changes: Vec<String> = json_diff("", &compared(before), &compared(case))
                .iter()
                .map(ToString::to_string)
                .collect();
            let evaluators = evaluator_changes(before, case);
            let change = CaseChange {
                case: case.name.clone(),
                passed_before: before.passed,
                passed_after: case.passed,
                score_before,
                score_after,
                evaluators,
                changes,
            };
            const EPSILON: f64 = 1e-9;
            if (before.passed && !case.passed)
                || (before.passed == case.passed && score_after < score_before - EPSILON)
            {
                diff.worse.push(change);
            } else if (!before.passed && case.passed) || score_after > score_before + EPSILON {
                diff.better.push(change);
            } else if !change.changes.is_empty() || !change.evaluators.is_empty() {
                diff.changed.push(change);
            }
        }
        diff.removed = baseline
            .cases
            .iter()
            .filter(|b| self.cases.iter().all(|c| c.name != b.name))
            .map(|b| b.name.clone())
            .collect();
        diff
    }
}

/// The evaluators of a case's first run whose verdict differs between `before` and
/// `after`.
fn evaluator_changes(before: &CaseReport, after: &CaseReport) -> Vec<String> {
    let (Some(b), Some(a)) = (before.runs.first(), after.runs.first()) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for now in &a.evaluations {
        let then = b.evaluations.iter().find(|e| e.evaluator == now.evaluator);
        match then {
            Some(then) if then.passed == now.passed => {}
            Some(then) => lines.push(format!(
                "{}: {} -> {} ({})",
                now.evaluator,
                verdict(then.passed),
                verdict(now.passed),
                now.reason
            )),
            None => lines.push(format!(
                "{}: new, {} ({})",
                now.evaluator,
                verdict(now.passed),
                now.reason
            )),
        }
    }
    lines
}

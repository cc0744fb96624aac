//! Evaluators: what judges a case's outcome, each saying why (the first difference),
//! not only a score.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_core::context::ToolContext;
use tackle_core::replay::changes::{json_diff, Change};
use tackle_core::run::Run;
use tackle_core::validate::SchemaValidator;

use super::dataset::{Case, ExpectedCall};
use super::spec::{ArgumentMatch, EvaluatorSpec, TrajectoryMode};
use crate::react::{ReactState, ToolCallRecord};

/// What one evaluator concluded about one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The evaluator's name.
    pub evaluator: String,
    /// Whether the case passes it.
    pub passed: bool,
    /// A score from 0 to 1 (1 or 0 for a yes-or-no evaluator).
    pub score: f64,
    /// Why: the first difference found, or what was checked.
    pub reason: String,
}

impl Evaluation {
    /// A pass with score 1.
    pub fn pass(evaluator: impl Into<String>, reason: impl Into<String>) -> Evaluation {
        Evaluation {
            evaluator: evaluator.into(),
            passed: true,
            score: 1.0,
            reason: reason.into(),
        }
    }

    /// A failure with score 0.
    pub fn fail(evaluator: impl Into<String>, reason: impl Into<String>) -> Evaluation {
        Evaluation {
            evaluator: evaluator.into(),
            passed: false,
            score: 0.0,
            reason: reason.into(),
        }
    }

    /// `pass` when `passed`, else `fail`.
    pub fn of(evaluator: impl Into<String>, passed: bool, reason: impl Into<String>) -> Evaluation {
        if passed {
            Evaluation::pass(evaluator, reason)
        } else {
            Evaluation::fail(evaluator, reason)
        }
    }
}

/// What evaluators see of one case's run.
pub struct CaseOutcome<'a> {
    /// The case.
    pub case: &'a Case,
    /// The answer: the final text (a JSON string) or the typed answer; `None` when the
    /// run ended without one.
    pub output: Option<&'a Value>,
    /// Why the run ended without an answer, if it did.
    pub error: Option<&'a str>,
    /// The run's state: its steps, tool calls, usage and cost (as far as it went).
    pub state: &'a ReactState,
    /// How long the case took.
    pub duration: Duration,
    /// The case's run (an evaluator that calls a model calls it through this run's
    /// door, so the call records and replays with the case).
    pub run: &'a Run,
    /// The caller's context the case ran with.
    pub ctx: &'a ToolContext,
}

impl CaseOutcome<'_> {
    /// The tool calls made, in order.
    pub fn tool_calls(&self) -> &[ToolCallRecord] {
        &self.state.tool_calls
    }

    /// How many times the agent asked its model (one request a step).
    pub fn model_requests(&self) -> usize {
        self.state.step_index
    }
}

/// A boxed evaluation in progress.
pub type EvalFuture<'a> = Pin<Box<dyn Future<Output = Evaluation> + Send + 'a>>;

/// Judges a case's outcome. The built-in ones are made from [`EvaluatorSpec`]s;
/// write your own for anything else (or use [`evaluator_fn`]).
pub trait Evaluator: Send + Sync {
    /// The name reports show.
    fn name(&self) -> String;

    /// Judges `outcome`.
    fn evaluate<'a>(&'a self, outcome: &'a CaseOutcome<'a>) -> EvalFuture<'a>;
}

/// An evaluator from a name and a function.
///
/// ```
/// use tackle::evals::{evaluator_fn, Evaluation};
///
/// let short = evaluator_fn("Short", |outcome| {
///     let length = outcome.output.and_then(|v| v.as_str()).map_or(0, str::len);
///     Evaluation::of("Short", length <= 80, format!("{length} characters"))
/// });
/// # let _ = short;
/// ```
pub fn evaluator_fn<F>(name: impl Into<String>, f: F) -> impl Evaluator
where
    F: Fn(&CaseOutcome<'_>) -> Evaluation + Send + Sync,
{
    struct FnEvaluator<F>(String, F);
    impl<F: Fn(&CaseOutcome<'_>) -> Evaluation + Send + Sync> Evaluator for FnEvaluator<F> {
        fn name(&self) -> String {
            self.0.clone()
        }
        fn evaluate<'a>(&'a self, outcome: &'a CaseOutcome<'a>) -> EvalFuture<'a> {
            let evaluation = (self.1)(outcome);
            Box::pin(std::future::ready(evaluation))
        }
    }
    FnEvaluator(name.into(), f)
}

/// The answer is a valid `T`: it matches `T`'s JSON Schema and deserializes into it.
pub struct IsInstance<T>(Result<SchemaValidator, String>, PhantomData<fn() -> T>);

impl<T: JsonSchema + DeserializeOwned> IsInstance<T> {
    /// The evaluator for `T`.
    pub fn of() -> IsInstance<T> {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Bool(true));
        IsInstance(SchemaValidator::compile(&schema), PhantomData)
    }
}

impl<T: JsonSchema + DeserializeOwned + 'static> Evaluator for IsInstance<T> {
    fn name(&self) -> String {
        format!("IsInstance<{}>", T::schema_name())
    }

    fn evaluate<'a>(&'a self, outcome: &'a CaseOutcome<'a>) -> EvalFuture<'a> {
        let name = self.name();
        let evaluation = match (outcome.output, &self.0) {
            (None, _) => Evaluation::fail(name, "no answer"),
            (Some(_), Err(why)) => Evaluation::fail(name, format!("the type's schema: {why}")),
            (Some(value), Ok(validator)) => {
                let result = validator.validate(value);
                if !result.valid {
                    Evaluation::fail(name, result.errors.join("; "))
                } else {
                    match serde_json::from_value::<T>(value.clone()) {
                        Ok(_) => Evaluation::pass(name, "valid"),
                        Err(e) => Evaluation::fail(name, e.to_string()),
                    }
                }
            }
        };
        Box::pin(std::future::ready(evaluation))
    }
}

/// A built-in evaluator, made from its spec (the judge is in [`super::judge`]).
pub(super) struct Builtin {
    spec: EvaluatorSpec,
    /// The compiled schema of a `MatchesSchema`.
    schema: Option<SchemaValidator>,
}

impl Builtin {
    /// The evaluator of `spec` (not a judge); a schema that does not compile is
    /// refused.
    pub(super) fn new(spec: EvaluatorSpec) -> Result<Builtin, String> {
        let schema = match &spec {
            EvaluatorSpec::MatchesSchema { schema } => Some(
                SchemaValidator::compile(schema)
                    .map_err(|e| format!("MatchesSchema: the schema does not compile: {e}"))?,
            ),
            _ => None,
        };
        Ok(Builtin { spec, schema })
    }
}

impl Evaluator for Builtin {
    fn name(&self) -> String {
        self.spec.name().to_owned()
    }

    fn evaluate<'a>(&'a self, outcome: &'a CaseOutcome<'a>) -> EvalFuture<'a> {
        Box::pin(std::future::ready(self.judge(outcome)))
    }
}

/// How long the list of differences in a reason gets.
const SHOWN: usize = 3;

impl Builtin {
    fn judge(&self, outcome: &CaseOutcome<'_>) -> Evaluation {
        let name = self.spec.name();
        let no_answer = || {
            Evaluation::fail(
                name,
                format!(
                    "no answer ({})",
                    outcome.error.unwrap_or("the run ended without one")
                ),
            )
        };
        match &self.spec {
            EvaluatorSpec::EqualsExpected => {
                match (&outcome.case.expected_output, outcome.output) {
                    (None, _) => Evaluation::pass(name, "skipped: the case has no expected_output"),
                    (Some(_), None) => no_answer(),
                    (Some(expected), Some(output)) => equals(name, expected, output),
                }
            }
            EvaluatorSpec::Equals { value } => match outcome.output {
                None => no_answer(),
                Some(output) => equals(name, value, output),
            },
            EvaluatorSpec::Contains {
                value,
                case_sensitive,
            } => match outcome.output {
                None => no_answer(),
                Some(output) => contains(name, output, value, *case_sensitive),
            },
            EvaluatorSpec::MatchesSchema { .. } => match (outcome.output, &self.schema) {
                (None, _) => no_answer(),
                (Some(output), Some(schema)) => {
                    let result = schema.validate(output);
                    if result.valid {
                        Evaluation::pass(name, "valid")
                    } else {
                        Evaluation::fail(name, result.errors.join("; "))
                    }
                }
                (Some(_), None) => Evaluation::fail(name, "the schema did not compile"),
            },
            EvaluatorSpec::MaxDuration { seconds } => {
                let took = outcome.duration.as_secs_f64();
                Evaluation::of(
                    name,
                    took <= *seconds,
                    format!("took {took:.3} s (at most {seconds} s)"),
                )
            }
            EvaluatorSpec::MaxCost { amount } => match outcome.state.cost {
                None => Evaluation::pass(name, "no price known for the model: nothing counted"),
                Some(cost) => Evaluation::of(
                    name,
                    cost <= *amount,
                    format!("cost {cost} (at most {amount})"),
                ),
            },
            EvaluatorSpec::MaxTokens {
                input,
                output,
                total,
            } => {
                let usage = outcome.state.usage;
                let sum = usage.input_tokens + usage.output_tokens;
                let over: Vec<String> = [
                    ("input", usage.input_tokens, *input),
                    ("output", usage.output_tokens, *output),
                    ("total", sum, *total),
                ]
                .into_iter()
                .filter_map(|(what, used, most)| {
                    most.filter(|&m| used > m)
                        .map(|m| format!("{what} {used} > {m}"))
                })
                .collect();
                let used = format!(
                    "{} input + {} output tokens",
                    usage.input_tokens, usage.output_tokens
                );
                if over.is_empty() {
                    Evaluation::pass(name, used)
                } else {
                    Evaluation::fail(name, format!("{used}: {}", over.join(", ")))
                }
            }
            EvaluatorSpec::MaxToolCalls { max } => {
                let made = outcome.tool_calls().len();
                Evaluation::of(
                    name,
                    made <= *max,
                    format!("{made} tool calls (at most {max})"),
                )
            }
            EvaluatorSpec::MaxModelRequests { max } => {
                let made = outcome.model_requests();
                Evaluation::of(
                    name,
                    made <= *max,
                    format!("{made} model requests (at most {max})"),
                )
            }
            EvaluatorSpec::ToolCorrectness => match &outcome.case.expected_trajectory {
                None => Evaluation::pass(name, "skipped: the case has no expected_trajectory"),
                Some(expected) => tool_correctness(name, expected, outcome.tool_calls()),
            },
            EvaluatorSpec::TrajectoryMatch {
                mode,
                arguments,
                default_arguments,
            } => match &outcome.case.expected_trajectory {
                None => Evaluation::pass(name, "skipped: the case has no expected_trajectory"),
                Some(expected) => {
                    let matcher = |call: &ExpectedCall| {
                        arguments
                            .iter()
                            .find(|(tool, _)| {
                                ExpectedCall::new(tool.as_str()).names(&call.tool)
                                    || *tool == &call.tool
                            })
                            .map_or(*default_arguments, |(_, m)| *m)
                    };
                    trajectory_match(name, *mode, expected, outcome.tool_calls(), &matcher)
                }
            },
            EvaluatorSpec::LlmJudge { .. } => Evaluation::fail(
                name,
                "a judge runs with a model: give the run one (`Eval::judge`)",
            ),
        }
    }
}

/// `expected` against `output`: the first differences as JSON pointers.
fn equals(name: &str, expected: &Value, output: &Value) -> Evaluation {
    if expected == output {
        return Evaluation::pass(name, "equal");
    }
    let changes = json_diff("", expected, output);
    Evaluation::fail(name, describe_changes(&changes))
}

/// The first few `changes`, in words.
pub(super) fn describe_changes(changes: &[Change]) -> String {
    let mut shown: Vec<String> = changes
        .iter()
        .take(SHOWN)
        .map(|change| {
            let at = if change.pointer().is_empty() {
                "/"
            } else {
                change.pointer()
            };
            match change {
                Change::Added { value, .. } => format!("+ {at}: {}", short(value)),
                Change::Removed { value, .. } => format!("- {at}: {}", short(value)),
                Change::Changed { before, after, .. } => {
                    format!("~ {at}: expected {}, got {}", short(before), short(after))
                }
            }
        })
        .collect();
    if changes.len() > SHOWN {
        shown.push(format!("and {} more", changes.len() - SHOWN));
    }
    shown.join("; ")
}

/// A value as JSON, cut to 120 characters.
pub(super) fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

fn contains(name: &str, output: &Value, value: &Value, case_sensitive: bool) -> Evaluation {
    match (output, value) {
        (Value::String(text), Value::String(part)) => {
            let found = if case_sensitive {
                text.contains(part.as_str())
            } else {
                text.to_lowercase().contains(&part.to_lowercase())
            };
            Evaluation::of(
                name,
                found,
                if found {
                    format!("contains {}", short(value))
                } else {
                    format!("{} not found in {}", short(value), short(output))
                },
            )
        }
        (Value::Object(answer), Value::Object(members)) => {
            match members.iter().find(|(k, v)| answer.get(*k) != Some(v)) {
                None => Evaluation::pass(name, "every member present and equal"),
                Some((key, expected)) => Evaluation::fail(
                    name,
                    format!(
                        "/{key}: expected {}, got {}",
                        short(expected),
                        answer.get(key).map_or_else(|| "nothing".to_owned(), short)
                    ),
                ),
            }
        }
        (Value::Array(items), element) => Evaluation::of(
            name,
            items.contains(element),
            format!(
                "{} {}in the answer",
                short(element),
                if items.contains(element) { "" } else { "not " }
            ),
        ),
        _ => Evaluation::fail(
            name,
            format!("cannot look for {} in {}", short(value), short(output)),
        ),
    }
}

/// The tools called against the tools expected, as multisets.
fn tool_correctness(name: &str, expected: &[ExpectedCall], made: &[ToolCallRecord]) -> Evaluation {
    let mut unmatched: Vec<&ToolCallRecord> = made.iter().collect();
    let mut missing = Vec::new();
    for call in expected {
        match unmatched.iter().position(|m| call.names(&m.name)) {
            Some(at) => {
                unmatched.remove(at);
            }
            None => missing.push(call.tool.as_str()),
        }
    }
    let common = expected.len() - missing.len();
    let size = expected.len().max(made.len());
    let score = if size == 0 {
        1.0
    } else {
        common as f64 / size as f64
    };
    let passed = missing.is_empty() && unmatched.is_empty();
    let mut reason = Vec::new();
    if !missing.is_empty() {
        reason.push(format!("not called: {}", missing.join(", ")));
    }
    if !unmatched.is_empty() {
        let extra: Vec<&str> = unmatched.iter().map(|m| m.name.as_str()).collect();
        reason.push(format!("not expected: {}", extra.join(", ")));
    }
    Evaluation {
        evaluator: name.to_owned(),
        passed,
        score,
        reason: if passed {
            format!("the {} expected tool call(s)", expected.len())
        } else {
            reason.join("; ")
        },
    }
}

/// Whether `actual` arguments satisfy the `expected` ones under `how`.
pub(super) fn arguments_match(
    how: ArgumentMatch,
    expected: Option<&Value>,
    actual: &Value,
) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    match (how, expected, actual) {
        (ArgumentMatch::Ignore, _, _) => true,
        (ArgumentMatch::Exact, _, _) => expected == actual,
        (ArgumentMatch::Subset, Value::Object(e), Value::Object(a)) => {
            a.iter().all(|(k, v)| e.get(k) == Some(v))
        }
        (ArgumentMatch::Superset, Value::Object(e), Value::Object(a)) => {
            e.iter().all(|(k, v)| a.get(k) == Some(v))
        }
        _ => expected == actual,
    }
}

/// The most pairs of calls a trajectory match compares (expected times made).
const MAX_PAIRS: usize = 1_000_000;

/// The made calls against the expected ones in `mode`.
fn trajectory_match(
    name: &str,
    mode: TrajectoryMode,
    expected: &[ExpectedCall],
    made: &[ToolCallRecord],
    matcher: &dyn Fn(&ExpectedCall) -> ArgumentMatch,
) -> Evaluation {
    let fits = |e: &ExpectedCall, m: &ToolCallRecord| {
        e.names(&m.name) && arguments_match(matcher(e), e.arguments.as_ref(), &m.arguments)
    };
    let show_expected = |e: &ExpectedCall| match &e.arguments {
        Some(arguments) => format!("{} {}", e.tool, short(arguments)),
        None => e.tool.clone(),
    };
    let show_made = |m: &ToolCallRecord| format!("{} {}", m.name, short(&m.arguments));
    let (n, m) = (expected.len(), made.len());
    if mode == TrajectoryMode::Strict {
        let first = (0..n.max(m)).find(|&i| match (expected.get(i), made.get(i)) {
            (Some(e), Some(c)) => !fits(e, c),
            _ => true,
        });
        let matched = (0..n.min(m))
            .filter(|&i| fits(&expected[i], &made[i]))
            .count();
        let score = if n.max(m) == 0 {
            1.0
        } else {
            matched as f64 / n.max(m) as f64
        };
        return match first {
            None => Evaluation {
                evaluator: name.to_owned(),
                passed: true,
                score,
                reason: format!("the {n} expected call(s), in order"),
            },
            Some(i) => Evaluation {
                evaluator: name.to_owned(),
                passed: false,
                score,
                reason: match (expected.get(i), made.get(i)) {
                    (Some(e), Some(c)) => format!(
                        "call #{}: expected {}, made {}",
                        i + 1,
                        show_expected(e),
                        show_made(c)
                    ),
                    (Some(e), None) => {
                        format!(
                            "call #{}: expected {}, made none ({m} made)",
                            i + 1,
                            show_expected(e)
                        )
                    }
                    (None, Some(c)) => {
                        format!(
                            "call #{}: made {}, not expected ({n} expected)",
                            i + 1,
                            show_made(c)
                        )
                    }
                    (None, None) => String::new(),
                },
            },
        };
    }
    if n.saturating_mul(m) > MAX_PAIRS {
        return Evaluation::fail(
            name,
            format!("{n} expected and {m} made calls: more than {MAX_PAIRS} pairs to compare"),
        );
    }
    // Which side must be matched whole: the made calls (subset), the expected ones
    // (superset), or both (unordered).
    let pairs = matching(n, m, |i, j| fits(&expected[i], &made[j]));
    let matched = pairs.iter().flatten().count();
    let unmatched_expected: Vec<String> = (0..n)
        .filter(|&i| pairs[i].is_none())
        .map(|i| show_expected(&expected[i]))
        .collect();
    let taken: Vec<bool> = {
        let mut taken = vec![false; m];
        for j in pairs.iter().flatten() {
            taken[*j] = true;
        }
        taken
    };
    let unmatched_made: Vec<String> = (0..m)
        .filter(|&j| !taken[j])
        .map(|j| show_made(&made[j]))
        .collect();
    let (passed, whole) = match mode {
        TrajectoryMode::Unordered => (
            unmatched_expected.is_empty() && unmatched_made.is_empty(),
            n.max(m),
        ),
        TrajectoryMode::Subset => (unmatched_made.is_empty(), m),
        TrajectoryMode::Superset => (unmatched_expected.is_empty(), n),
        TrajectoryMode::Strict => (false, 0),
    };
    let score = if whole == 0 {
        1.0
    } else {
        matched as f64 / whole as f64
    };
    let mut reason = Vec::new();
    if mode != TrajectoryMode::Subset && !unmatched_expected.is_empty() {
        reason.push(format!(
            "expected, not made: {}",
            unmatched_expected.join(", ")
        ));
    }
    if mode != TrajectoryMode::Superset && !unmatched_made.is_empty() {
        reason.push(format!("made, not expected: {}", unmatched_made.join(", ")));
    }
    Evaluation {
        evaluator: name.to_owned(),
        passed,
        score,
        reason: if passed {
            format!("{matched} call(s) matched ({mode:?})").to_lowercase()
        } else {
            reason.join("; ")
        },
    }
}

/// A largest matching of `n` left items to `m` right ones, where `fits(i, j)` says
/// left `i` may take right `j`: for each left item, the right one it takes. Augmenting
/// paths found with an explicit stack (no recursion).
fn matching(n: usize, m: usize, fits: impl Fn(usize, usize) -> bool) -> Vec<Option<usize>> {
    let adjacent: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..m).filter(|&j| fits(i, j)).collect())
        .collect();
    let mut right_of = vec![None; n];
    let mut left_of: Vec<Option<usize>> = vec![None; m];
    for start in 0..n {
        let mut visited = vec![false; m];
        // Left items on the path, each with the next neighbour to try; `path[k]` is the
        // right item `stack[k]` takes.
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        let mut path: Vec<usize> = Vec::new();
        let found = loop {
            let Some((left, next)) = stack.last_mut() else {
                break false;
            };
            let Some(&right) = adjacent[*left].get(*next) else {
                stack.pop();
                path.pop();
                continue;
            };
            *next += 1;
            if visited[right] {
                continue;
            }
            visited[right] = true;
            path.push(right);
            match left_of[right] {
                None => break true,
                Some(holder) => stack.push((holder, 0)),
            }
        };
        if found {
            for (k, &(left, _)) in stack.iter().enumerate() {
                right_of[left] = Some(path[k]);
                left_of[path[k]] = Some(left);
            }
        }
    }
    right_of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_finds_a_perfect_matching_greedy_misses() {
        // Left 0 fits rights 0 and 1; left 1 fits right 0 only: greedy gives 0->0 and
        // leaves 1 alone.
        let fits = |i: usize, j: usize| matches!((i, j), (0, 0) | (0, 1) | (1, 0));
        assert_eq!(matching(2, 2, fits), vec![Some(1), Some(0)]);
    }

    #[test]
    fn argument_matchers() {
        let e = serde_json::json!({"a": 1, "b": 2});
        let a = serde_json::json!({"a": 1});
        assert!(!arguments_match(ArgumentMatch::Exact, Some(&e), &a));
        assert!(arguments_match(ArgumentMatch::Subset, Some(&e), &a));
        assert!(!arguments_match(ArgumentMatch::Superset, Some(&e), &a));
        assert!(arguments_match(ArgumentMatch::Superset, Some(&a), &e));
        assert!(arguments_match(ArgumentMatch::Ignore, Some(&e), &a));
        assert!(arguments_match(ArgumentMatch::Exact, None, &a));
    }
}

//! Running a dataset: each case a run of its own over one shared runtime, with its
//! own cassette, in the mode asked.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use serde_json::Value;
use tackle_core::call::Runtime;
use tackle_core::context::ToolContext;
use tackle_core::error::ToolErrorKind;
use tackle_core::replay::{Cassette, CassetteConfig, CassetteError, Mode};
use tackle_core::run::Run;
use tackle_core::shape::segment;

use super::dataset::{Case, Dataset};
use super::evaluators::{Builtin, CaseOutcome, Evaluator};
use super::judge::LlmJudge;
use super::mode::{EvalError, EvalMode};
use super::report::{
    summarize, CallRecord, CaseReport, CaseRun, Divergence, EvalReport, Thresholds, TrajectoryStep,
    REPORT_FORMAT,
};
use super::spec::EvaluatorSpec;
use crate::model::{ChatModel, ModelError};
use crate::react::{Agent, AgentError, ReactState, StepControl};

/// A dataset about to run with an agent: set its options, then [`run`](Eval::run) it.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use tackle::evals::{Dataset, Eval};
/// # use tackle::{Agent, Runtime};
/// # async fn f(agent: Agent, runtime: Arc<Runtime>) -> Result<(), Box<dyn std::error::Error>> {
/// let dataset = Dataset::load("evals/fees.yaml")?;
/// let report = Eval::new(&dataset, &agent, &runtime)
///     .cassettes("evals/cassettes") // one per case: evals/cassettes/<dataset>/<case>.json
///     .run()
///     .await?;
/// println!("{}", report.table());
/// report.check()?; // fails naming each failing case and evaluator
/// # Ok(()) }
/// ```
pub struct Eval<'a, T> {
    dataset: &'a Dataset,
    agent: &'a Agent<T>,
    runtime: Arc<Runtime>,
    cassettes: Option<PathBuf>,
    mode: Option<EvalMode>,
    concurrency: usize,
    repeat: usize,
    thresholds: Thresholds,
    retries: u32,
    evaluators: Vec<Box<dyn Evaluator + 'a>>,
    judge: Option<Arc<dyn ChatModel>>,
    ctx: ToolContext,
    progress: Option<bool>,
}

/// The environment variable naming the folder where every run writes its JSON report
/// as `<dataset>.json` (set by `cargo tackle eval run`).
pub const REPORTS_DIR: &str = "TACKLE_EVAL_REPORTS";

/// A case's run in progress.
type CaseFuture<'f> = Pin<Box<dyn Future<Output = (usize, CaseRun)> + Send + 'f>>;

impl<'a, T: Send + Sync + 'a> Eval<'a, T> {
    /// `dataset`'s cases, each run by `agent` over `runtime`.
    pub fn new(dataset: &'a Dataset, agent: &'a Agent<T>, runtime: &Arc<Runtime>) -> Self {
        Eval {
            dataset,
            agent,
            runtime: Arc::clone(runtime),
            cassettes: None,
            mode: None,
            concurrency: 8,
            repeat: 1,
            thresholds: Thresholds {
                case_pass_rate: 1.0,
                run_pass_rate: 1.0,
            },
            retries: 2,
            evaluators: Vec::new(),
            judge: None,
            ctx: ToolContext::new(),
            progress: None,
        }
    }

    /// The folder of the cases' cassettes: `<dir>/<dataset>/<case>.json` (with
    /// repeats, `<case>.<n>.json`). Needed by every mode but `live`.
    pub fn cassettes(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cassettes = Some(dir.into());
        self
    }

    /// The mode (by default `TACKLE_EVAL`'s, else `replay`; `TACKLE_EVAL` overrides
    /// this too, as `TACKLE_CASSETTE` does a cassette's).
    pub fn mode(mut self, mode: EvalMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How many cases run at once (default 8).
    pub fn concurrency(mut self, cases: usize) -> Self {
        self.concurrency = cases.max(1);
        self
    }

    /// Runs each case `times` (default 1); a case passes when the share of its runs
    /// that pass reaches [`case_pass_rate`](Self::case_pass_rate).
    pub fn repeat(mut self, times: usize) -> Self {
        self.repeat = times.max(1);
        self
    }

    /// The share of a case's repeats that must pass (default 1: all).
    pub fn case_pass_rate(mut self, rate: f64) -> Self {
        self.thresholds.case_pass_rate = rate.clamp(0.0, 1.0);
        self
    }

    /// The share of cases that must pass for the run to pass (default 1: all).
    pub fn run_pass_rate(mut self, rate: f64) -> Self {
        self.thresholds.run_pass_rate = rate.clamp(0.0, 1.0);
        self
    }

    /// How many times a case whose model failed transiently (a 429 or 5xx status, a
    /// timeout, a lost connection) runs again, in the modes that call a model (default
    /// 2).
    pub fn retries(mut self, times: u32) -> Self {
        self.retries = times;
        self
    }

    /// Adds an evaluator for every case (after the dataset's and the case's own).
    pub fn evaluator(mut self, evaluator: impl Evaluator + 'a) -> Self {
        self.evaluators.push(Box::new(evaluator));
        self
    }

    /// The model of the dataset's `LLMJudge` evaluators.
    pub fn judge(mut self, model: impl ChatModel + 'static) -> Self {
        self.judge = Some(Arc::new(model));
        self
    }

    /// The caller's context each case runs with (grants for tools that require them,
    /// secrets, resources). By default an empty one.
    pub fn context(mut self, ctx: ToolContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// Whether a progress bar is drawn on standard error (default: when it is a
    /// terminal and `CI` is not set).
    pub fn progress(mut self, shown: bool) -> Self {
        self.progress = Some(shown);
        self
    }

    /// Runs every case and reports. Fails only when the run cannot start (a judge
    /// evaluator without a judge, a schema that does not compile, a mode that needs
    /// cassettes without a folder); a case that fails is in the report.
    pub async fn run(self) -> Result<EvalReport, EvalError> {
        let mode = match EvalMode::from_env()? {
            Some(mode) => mode,
            None => self.mode.unwrap_or_default(),
        };
        if mode != EvalMode::Live && self.cassettes.is_none() {
            return Err(EvalError::Invalid(format!(
                "mode {mode} needs the cases' cassettes: give the run a folder (`Eval::cassettes`)"
            )));
        }
        let shared = self.build(&self.dataset.evaluators, "the dataset")?;
        let per_case = self
            .dataset
            .cases
            .iter()
            .map(|case| self.build(&case.evaluators, &format!("case `{}`", case.name)))
            .collect::<Result<Vec<_>, _>>()?;
        let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let started = Instant::now();
        let total = self.dataset.cases.len() * self.repeat;
        let progress = self
            .progress
            .unwrap_or_else(|| std::io::stderr().is_terminal() && std::env::var_os("CI").is_none());
        let this = &self;
        let shared = &shared;
        let per_case = &per_case;
        let jobs = (0..total).map(move |job| -> CaseFuture<'_> {
            let (index, repeat) = (job / this.repeat, job % this.repeat + 1);
            Box::pin(async move {
                let case = &this.dataset.cases[index];
                let evaluators: Vec<&dyn Evaluator> = shared
                    .iter()
                    .chain(&per_case[index])
                    .map(|e| e.as_ref())
                    .chain(this.evaluators.iter().map(|e| e.as_ref()))
                    .collect();
                (job, this.case(mode, case, repeat, &evaluators).await)
            })
        });
        // Each case's record is made up front with room for exactly its runs, and a run
        // goes to its case as it finishes (no staging list of every run): the report is
        // the only thing a finished case leaves behind.
        let mut cases: Vec<CaseReport> = self
            .dataset
            .cases
            .iter()
            .map(|case| CaseReport {
                name: case.name.clone(),
                input: case.task_text(),
                metadata: case.metadata.clone(),
                passed: false,
                pass_rate: 0.0,
                runs: Vec::with_capacity(self.repeat),
            })
            .collect();
        let mut done = 0usize;
        at_most(self.concurrency, jobs, |job, run| {
            if let Some(case) = cases.get_mut(job / self.repeat) {
                case.runs.push(run);
            }
            done += 1;
            if progress {
                draw(done, total);
            }
        })
        .await;
        if progress {
            eprintln!();
        }
        for case in &mut cases {
            // Runs finish in any order; the report lists them by repeat.
            case.runs.sort_unstable_by_key(|run| run.repeat);
            let passing = case.runs.iter().filter(|r| r.passed).count();
            case.pass_rate = passing as f64 / case.runs.len().max(1) as f64;
            case.passed = case.pass_rate >= self.thresholds.case_pass_rate;
        }
        let report = EvalReport {
            format: REPORT_FORMAT,
            dataset: self.dataset.name.clone(),
            mode,
            started_at,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            thresholds: self.thresholds,
            summary: summarize(&cases),
            cases,
        };
        // `cargo tackle eval run` collects the reports of the runs it starts.
        if let Some(dir) = std::env::var_os(REPORTS_DIR) {
            let path = Path::new(&dir).join(format!("{}.json", segment(&report.dataset)));
            report
                .write_json(&path)
                .map_err(|source| EvalError::Report {
                    path: path.display().to_string(),
                    source,
                })?;
        }
        Ok(report)
    }

    /// The evaluators of `specs` (of `whose`).
    fn build(
        &self,
        specs: &[EvaluatorSpec],
        whose: &str,
    ) -> Result<Vec<Box<dyn Evaluator>>, EvalError> {
        specs
            .iter()
            .map(|spec| -> Result<Box<dyn Evaluator>, EvalError> {
                match spec {
                    EvaluatorSpec::LlmJudge {
                        rubric,
                        include_input,
                        include_expected,
                    } => {
                        let model = self.judge.clone().ok_or_else(|| {
                            EvalError::Invalid(format!(
                                "{whose} has an LLMJudge evaluator: give the run a judge model (`Eval::judge`)"
                            ))
                        })?;
                        Ok(Box::new(
                            LlmJudge::with_model(model, rubric.clone())
                                .include_input(*include_input)
                                .include_expected(*include_expected),
                        ))
                    }
                    other => Builtin::new(other.clone())
                        .map(|b| Box::new(b) as Box<dyn Evaluator>)
                        .map_err(|why| EvalError::Invalid(format!("{whose}: {why}"))),
                }
            })
            .collect()
    }

    /// The cassette file of `case`'s run `repeat`.
    fn cassette_path(&self, dir: &Path, case: &Case, repeat: usize) -> PathBuf {
        let name = segment(&case.name);
        let file = if self.repeat > 1 {
            format!("{name}.{repeat}.json")
        } else {
            format!("{name}.json")
        };
        dir.join(segment(&self.dataset.name)).join(file)
    }

    /// Runs `case` once (again after transient model failures), then its evaluators.
    async fn case(
        &self,
        mode: EvalMode,
        case: &Case,
        repeat: usize,
        evaluators: &[&dyn Evaluator],
    ) -> CaseRun {
        let mut attempt = 0;
        loop {
            let run = self.case_once(mode, case, repeat, evaluators).await;
            let transient = matches!(&run, Err(Some(_)));
            match run {
                Ok(run) => return run,
                Err(failed)
                    if !transient || attempt >= self.retries || mode == EvalMode::Replay =>
                {
                    return failed.map_or_else(
                        || CaseRun::failed(repeat, "the case ended without a record".to_owned()),
                        |f| *f,
                    );
                }
                Err(_) => attempt += 1,
            }
        }
    }

    /// One attempt of `case`: `Err(Some(run))` when its model failed transiently (the
    /// run as it ended, should no retry be left).
    async fn case_once(
        &self,
        mode: EvalMode,
        case: &Case,
        repeat: usize,
        evaluators: &[&dyn Evaluator],
    ) -> Result<CaseRun, Option<Box<CaseRun>>> {
        let failed = |error: String| CaseRun::failed(repeat, error);
        let mut run = Run::new(&self.runtime);
        if let (Some(dir), true) = (&self.cassettes, mode != EvalMode::Live) {
            let path = self.cassette_path(dir, case, repeat);
            let config = CassetteConfig::new().with_env_overrides(false);
            let config = match mode {
                EvalMode::Record => config.with_mode(Mode::Rewrite),
                EvalMode::Counterfactual => config
                    .with_mode(Mode::Replay)
                    .with_recorded_results(true)
                    .with_strict(true)
                    .with_live_operations(true),
                _ => config.with_mode(Mode::Replay),
            };
            match Cassette::open(&path, config) {
                Ok(cassette) => run = run.with_cassette(cassette),
                Err(CassetteError::Missing { path }) => {
                    return Ok(failed(format!(
                        "no cassette at {}: record the case with TACKLE_EVAL=record \
                         (or `Eval::mode(EvalMode::Record)`)",
                        path.display()
                    )))
                }
                Err(e) => return Ok(failed(e.to_string())),
            }
        }
        let (task, history) = case.task_and_history();
        let counterfactual = mode == EvalMode::Counterfactual;
        // A counterfactual run stops at its first call the recording does not hold.
        let mut stop_at_divergence = |state: &ReactState| {
            if counterfactual && state.tool_calls.iter().any(is_miss) {
                StepControl::Pause
            } else {
                StepControl::Continue
            }
        };
        let started = Instant::now();
        let result = self
            .agent
            .run(&run, task)
            .history(&history)
            .context(&self.ctx)
            .observe(&mut stop_at_divergence)
            .await;
        let duration = started.elapsed();
        let transient =
            matches!(&result, Err(AgentError::Model { error, .. }) if is_transient(error));
        let (output, error, state) = match result {
            Ok(answer) => {
                let output = answer.state.final_value.clone().unwrap_or_else(|| {
                    Value::String(answer.state.final_answer.clone().unwrap_or_default())
                });
                (Some(output), None, answer.state)
            }
            // Stopped at its divergence: scored as far as it went.
            Err(AgentError::Paused { checkpoint }) if counterfactual => {
                (None, None, checkpoint.state)
            }
            Err(e) => {
                let message = e.to_string();
                (None, Some(message), e.into_state().unwrap_or_default())
            }
        };
        let divergence = state
            .tool_calls
            .iter()
            .find(|c| is_miss(c))
            .map(|c| Divergence {
                step: c.step,
                tool: c.name.clone(),
                arguments: c.arguments.clone(),
                recorded: c.error.clone().unwrap_or_default(),
            });
        let error = match (&error, &divergence) {
            (None, Some(_)) => {
                Some("the model asked for a call the recording does not hold".to_owned())
            }
            _ => error,
        };
        let outcome = CaseOutcome {
            case,
            output: output.as_ref(),
            error: error.as_deref(),
            state: &state,
            duration,
            run: &run,
            ctx: &self.ctx,
        };
        let mut evaluations = Vec::with_capacity(evaluators.len());
        for evaluator in evaluators {
            evaluations.push(evaluator.evaluate(&outcome).await);
        }
        // A replay is checked at its end (every recording used, pure tools equal); a
        // recording is written. A counterfactual run leaves recordings unused by design.
        let finished = match mode {
            EvalMode::Counterfactual | EvalMode::Live => None,
            _ => run.finish().err().map(|e| e.to_string()),
        };
        let error = match (error, finished) {
            (Some(error), Some(finish)) => Some(format!("{error}; {finish}")),
            (error, finish) => error.or(finish),
        };
        let passed = error.is_none() && evaluations.iter().all(|e| e.passed);
        let case_run = CaseRun {
            repeat,
            passed,
            output,
            error,
            duration_ms: duration.as_secs_f64() * 1000.0,
            model_requests: state.step_index,
            usage: state.usage,
            cost: state.cost.map(|c| c.to_string()),
            trajectory: trajectory_of(&state),
            divergence,
            evaluations,
        };
        if transient {
            Err(Some(Box::new(case_run)))
        } else {
            Ok(case_run)
        }
    }
}

/// Whether a call failed because the recording does not hold it.
fn is_miss(call: &crate::react::ToolCallRecord) -> bool {
    call.error_kind == Some(ToolErrorKind::CassetteMiss)
}

/// Whether a model error may pass when asked again.
fn is_transient(error: &ModelError) -> bool {
    match error {
        ModelError::Status { status, .. } => *status == 429 || *status >= 500,
        ModelError::Timeout { .. }
        | ModelError::Transport { .. }
        | ModelError::StreamBroken { .. } => true,
        _ => false,
    }
}

/// The steps of `state`: each model turn's thought and its calls.
fn trajectory_of(state: &ReactState) -> Vec<TrajectoryStep> {
    let mut steps: Vec<TrajectoryStep> = Vec::new();
    for entry in &state.trajectory {
        match &entry.tool_call {
            Some(call) => {
                let record = CallRecord {
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                    result: call.result.clone(),
                    error: call.error.clone(),
                    error_kind: call.error_kind.map(|k| k.as_str().to_owned()),
                };
                match steps.last_mut() {
                    Some(last) if last.step == call.step => last.calls.push(record),
                    _ => steps.push(TrajectoryStep {
                        step: call.step,
                        thought: entry.thought.clone(),
                        calls: vec![record],
                    }),
                }
            }
            None => {
                let step = steps.last().map_or(0, |s| s.step + 1);
                steps.push(TrajectoryStep {
                    step,
                    thought: entry.thought.clone(),
                    calls: Vec::new(),
                });
            }
        }
    }
    // The report keeps every case's steps to its end: no spare room.
    steps.shrink_to_fit();
    steps
}

/// Runs the futures of `jobs`, at most `limit` at once, handing each result to `done`
/// as it comes (in one task: the cases wait on their models and tools side by side).
async fn at_most<'f>(
    limit: usize,
    jobs: impl Iterator<Item = CaseFuture<'f>>,
    mut done: impl FnMut(usize, CaseRun),
) {
    let mut jobs = jobs.peekable();
    let mut running: Vec<CaseFuture<'f>> = Vec::with_capacity(limit);
    std::future::poll_fn(|cx| loop {
        while running.len() < limit {
            match jobs.next() {
                Some(job) => running.push(job),
                None => break,
            }
        }
        let mut finished = false;
        let mut i = 0;
        while i < running.len() {
            if let Poll::Ready((job, run)) = running[i].as_mut().poll(cx) {
                drop(running.swap_remove(i));
                done(job, run);
                finished = true;
            } else {
                i += 1;
            }
        }
        if running.is_empty() && jobs.peek().is_none() {
            return Poll::Ready(());
        }
        if !finished {
            return Poll::Pending;
        }
    })
    .await;
}

/// Draws the progress bar: `done` of `total` cases.
fn draw(done: usize, total: usize) {
    const WIDTH: usize = 30;
    let filled = done * WIDTH / total.max(1);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{}{}] {done}/{total} cases",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled)
    );
    let _ = err.flush();
}

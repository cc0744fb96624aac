//! Evals: whether an agent is any good, offline, in `cargo test`.
//!
//! A **dataset** is a list of **cases**: a task (or a conversation ending with one),
//! with what is expected of it (an answer, a typed value, the tool calls) and the
//! **evaluators** that judge it. Datasets are YAML or JSON files (refused with the line
//! of an unknown field; `docs/evals.schema.json` is their JSON Schema for editors) or
//! built in Rust.
//!
//! Each case runs as a [`Run`](tackle_core::run::Run) of its own over one shared
//! runtime, with its own cassette, in one of four **modes** ([`EvalMode`]):
//!
//! - `replay` (the default, and CI's): the model's turns and the tools' outcomes come
//!   from the case's cassette: offline, deterministic; pure tools and test models are
//!   run too and compared, as in any replay;
//! - `record`: everything live, written to the case's cassette;
//! - `counterfactual`: the model live (a new model, prompt or tool description) while
//!   the tools answer from the case's recording: writes never run, and the first call
//!   the recording does not hold ends the case there, reported as its
//!   [`Divergence`] and scored as far as it went;
//! - `live`: everything live, nothing recorded.
//!
//! Evaluators say why, not only a score: each [`Evaluation`] holds the first
//! difference it found. The built-in ones ([`EvaluatorSpec`]) check the answer (equal,
//! contains, valid for a schema or a Rust type), the budgets (time, cost, tokens, tool
//! calls, model requests), the tools called ([`ToolCorrectness`](EvaluatorSpec::ToolCorrectness))
//! and the trajectory in four modes with per-tool argument matchers
//! ([`TrajectoryMatch`](EvaluatorSpec::TrajectoryMatch)); an [`LlmJudge`] grades by a
//! rubric through the case's run, so its verdict records and replays with the case;
//! anything else is an [`Evaluator`] of your own.
//!
//! The **report** ([`EvalReport`]) holds each case's runs (repeats), answers,
//! trajectories and verdicts; it prints as a table, writes as versioned JSON, and
//! [`EvalReport::check`] fails a test below its thresholds, naming each failing case
//! and evaluator.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tackle::agent::model::{ChatResponse, FunctionModel, ToolCallRequest};
//! use tackle::evals::{Case, Dataset, Eval, EvalMode, EvaluatorSpec, ExpectedCall, TrajectoryMode};
//! use tackle::{tool, Agent, Runtime};
//!
//! /// The delivery fee of an order, in cents: free from 50.00.
//! #[tool(namespace = "shop", side_effects = none)]
//! fn delivery_fee(total_cents: u64) -> u64 {
//!     if total_cents >= 5_000 { 0 } else { 490 }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A model whose reply depends only on the request: asks for the fee, then answers.
//! let model = FunctionModel::new("fees", |request| {
//!     Ok(match request.messages.last().and_then(|m| m.content.parse::<u64>().ok()) {
//!         Some(0) => ChatResponse::text("Delivery is free."),
//!         Some(cents) => ChatResponse::text(format!("Delivery costs {}.{:02}.", cents / 100, cents % 100)),
//!         None => ChatResponse::calls("", vec![ToolCallRequest::new("c1", "shop_delivery_fee", json!({"total_cents": 3_200}))]),
//!     })
//! });
//! let agent = Agent::new(model).tools([delivery_fee::KEY]);
//! let dataset = Dataset::new("fees")
//!     .evaluator(EvaluatorSpec::EqualsExpected)
//!     .evaluator(EvaluatorSpec::trajectory(TrajectoryMode::Strict))
//!     .case(
//!         Case::new("small order", "What is the delivery fee on 32.00?")
//!             .expect_output("Delivery costs 4.90.")
//!             .expect_calls([ExpectedCall::with("shop.delivery_fee", json!({"total_cents": 3_200}))]),
//!     );
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let report = Eval::new(&dataset, &agent, &runtime).mode(EvalMode::Live).run().await?;
//! report.check()?;
//! assert_eq!(report.summary.passed, 1);
//! # Ok(())
//! # }
//! ```

mod dataset;
mod diff;
mod evaluators;
mod html;
mod judge;
mod mode;
mod report;
mod runner;
mod spec;

pub use dataset::{Case, CaseInput, Dataset, DatasetError, ExpectedCall, Turn, TurnRole};
pub use diff::{CaseChange, EvalDiff};
pub use evaluators::{evaluator_fn, CaseOutcome, EvalFuture, Evaluation, Evaluator, IsInstance};
pub use judge::LlmJudge;
pub use mode::{EvalError, EvalMode};
pub use report::{
    CallRecord, CaseReport, CaseRun, Divergence, EvalFailed, EvalReport, EvaluatorSummary, Summary,
    Thresholds, TrajectoryStep, REPORT_FORMAT,
};
pub use runner::{Eval, REPORTS_DIR};
pub use spec::{ArgumentMatch, EvaluatorSpec, TrajectoryMode};

/// Writes `bytes` to `path` whole or not at all: to a temporary file beside it, then
/// renamed into place (the folder made first).
pub(crate) fn write_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = std::path::PathBuf::from(temporary);
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

//! The "fleet" workload: many agent runs at once over one runtime, each three model
//! steps over two pure tools. Shared by `tests/many_runs.rs` and
//! `benches/many_runs.rs` (and mirrored by `scripts/bench_pydantic_ai.py`): run `i`
//! is asked "Add {i} and 1, then double it.", calls `fleet.add` with `a = i, b = 1`,
//! then `fleet.double` with that sum, then answers "The answer is {2 * (i + 1)}.".
//! The model suspends once a call before it answers, as one over the network does, so
//! the runs started at once are alive at once: each holds its conversation and its
//! recording while the others run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tackle::agent::model::{
    ChatModel, ChatRequest, ChatResponse, FunctionModel, ModelError, ModelFuture, Role,
    ToolCallRequest,
};
use tackle::{tool, Agent};

/// How many times the fleet's tools ran (a replay runs none).
pub static TOOL_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Adds two integers.
#[tool(namespace = "fleet", side_effects = none)]
pub fn add(a: i64, b: i64) -> i64 {
    TOOL_RUNS.fetch_add(1, Ordering::Relaxed);
    a.saturating_add(b)
}

/// Doubles an integer.
#[tool(namespace = "fleet", side_effects = none)]
pub fn double(x: i64) -> i64 {
    TOOL_RUNS.fetch_add(1, Ordering::Relaxed);
    x.saturating_mul(2)
}

/// Run `i`'s task.
pub fn task(i: usize) -> String {
    format!("Add {i} and 1, then double it.")
}

/// Run `i`'s answer.
pub fn answer(i: usize) -> String {
    format!("The answer is {}.", 2 * (i + 1))
}

/// A model that yields to the runtime once before it answers.
struct Suspending<M>(M);

impl<M: ChatModel> ChatModel for Suspending<M> {
    fn provider(&self) -> &str {
        self.0.provider()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.complete(request).await
        })
    }
}

/// The model: it decides from the conversation alone, so one model serves every run.
pub fn model() -> Arc<dyn ChatModel> {
    Arc::new(Suspending(FunctionModel::new(
        "fleet",
        |request: &ChatRequest| {
            let results: Vec<&str> = request
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.content.as_str())
                .collect();
            let call = |id: &str, name: &str, arguments| {
                Ok(ChatResponse::calls(
                    "",
                    vec![ToolCallRequest {
                        id: id.into(),
                        name: name.into(),
                        arguments,
                    }],
                ))
            };
            match results.as_slice() {
                [] => {
                    let task = request
                        .messages
                        .iter()
                        .rev()
                        .find(|m| m.role == Role::User)
                        .map_or("", |m| m.content.as_str());
                    let i: i64 = task
                        .strip_prefix("Add ")
                        .and_then(|rest| rest.split(' ').next())
                        .and_then(|n| n.parse().ok())
                        .ok_or_else(|| ModelError::Failed {
                            message: format!("not a fleet task: {task}"),
                        })?;
                    call("c1", "fleet_add", json!({"a": i, "b": 1}))
                }
                [sum] => {
                    let x: i64 = sum.parse().map_err(|_| ModelError::Failed {
                        message: format!("not a sum: {sum}"),
                    })?;
                    call("c2", "fleet_double", json!({ "x": x }))
                }
                [_, doubled, ..] => Ok(ChatResponse::text(format!("The answer is {doubled}."))),
            }
        },
    )))
}

/// The agent: `model` over the two tools (found in each run's registry).
pub fn agent(model: Arc<dyn ChatModel>) -> Agent {
    Agent::with_model(model)
        .tools([add::KEY, double::KEY])
        .max_steps(3)
}

//! What the ReAct bench (`benches/react.rs`) and its instruction count
//! (`examples/agent_profile.rs`) run: a tool and a closure model that calls it once,
//! then answers with its result.

use serde_json::json;
use tackle::agent::model::{ChatRequest, ChatResponse, ModelError, Role, ToolCallRequest};
use tackle::tool;

/// Add two integers.
#[tool(namespace = "bench", side_effects = none)]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Calls `bench_add` with 2 and 3, then answers with the tool's result.
pub fn model(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    Ok(
        match request.messages.iter().find(|m| m.role == Role::Tool) {
            None => ChatResponse::calls(
                "adding",
                vec![ToolCallRequest::new(
                    "c1",
                    "bench_add",
                    json!({"a": 2, "b": 3}),
                )],
            ),
            Some(result) => ChatResponse::text(format!("the sum is {}", result.content)),
        },
    )
}

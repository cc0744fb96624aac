//! `Runtime::invoke`: codomyrmex's `ToolRegistry.invoke`, through the door.
//!
//! A call by name that never fails as a Rust error: the outcome is an
//! [`InvokeResult`] (`status`, `data`, `message`, `errors`, `duration_ms`), as the seed
//! returns it. Every stage of the door applies (the capability gate above all);
//! `validate = false` skips only the two schema stages, for trusted callers whose
//! inputs are known to fit, and the audit event records the skip.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Input, Json, Runtime};
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};

/// Whether an invocation succeeded (codomyrmex's `ResultStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InvokeStatus {
    /// The tool ran and its output is `data`.
    Success,
    /// The call failed; `message` and `errors` say why.
    Failure,
}

/// What an invocation gave (codomyrmex's `Result`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvokeResult {
    /// Success or failure.
    pub status: InvokeStatus,
    /// The output, on success.
    #[serde(default)]
    pub data: Option<Value>,
    /// What happened, in words (empty on success).
    #[serde(default)]
    pub message: String,
    /// Every problem, in words: each validation issue, or the error.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Wall-clock time of the call, in milliseconds.
    #[serde(default)]
    pub duration_ms: f64,
    /// The tool's key, or the name asked for when it did not resolve.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// The error's kind, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
}

impl InvokeResult {
    /// The result of a call of `key` that gave `result` in `duration_ms`.
    pub fn from_outcome(
        key: impl Into<String>,
        result: Result<Value, ToolError>,
        duration_ms: f64,
    ) -> InvokeResult {
        let key = key.into();
        match result {
            Ok(data) => InvokeResult {
                status: InvokeStatus::Success,
                data: Some(data),
                message: String::new(),
                errors: Vec::new(),
                duration_ms,
                key,
                error_kind: None,
            },
            Err(error) => {
                let issues = error.validation_errors();
                let errors = if issues.is_empty() {
                    vec![error.to_string()]
                } else {
                    issues.iter().map(ToString::to_string).collect()
                };
                InvokeResult {
                    status: InvokeStatus::Failure,
                    data: None,
                    message: error.to_string(),
                    errors,
                    duration_ms,
                    key,
                    error_kind: Some(error.kind()),
                }
            }
        }
    }

    /// Whether the call succeeded.
    pub fn is_success(&self) -> bool {
        self.status == InvokeStatus::Success
    }
}

impl Runtime {
    /// Calls the tool `name` through the door and reports the outcome as data
    /// (codomyrmex's `invoke`). With `validate = false` the input and output schema
    /// stages are skipped (and audited as skipped): for trusted callers only; every
    /// other stage, the capability gate first, still applies.
    ///
    /// ```
    /// use serde_json::json;
    /// use tackle::call::InvokeStatus;
    /// use tackle::{tool, Runtime, ToolContext};
    ///
    /// /// Adds two integers.
    /// #[tool(namespace = "math", side_effects = none)]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let rt = Runtime::from_inventory()?;
    /// let done = rt.invoke("math.add", json!({"a": 2, "b": 3}), &ToolContext::new(), true).await;
    /// assert_eq!(done.status, InvokeStatus::Success);
    /// assert_eq!(done.data, Some(json!(5)));
    /// let bad = rt.invoke("math.add", json!({"a": "two"}), &ToolContext::new(), true).await;
    /// assert_eq!(bad.status, InvokeStatus::Failure);
    /// assert_eq!(bad.errors.len(), 2); // `/a` is not an integer; `b` is missing
    /// # Ok(())
    /// # }
    /// ```
    pub async fn invoke(
        &self,
        name: &str,
        input_data: Value,
        ctx: &ToolContext,
        validate: bool,
    ) -> InvokeResult {
        let begun = Instant::now();
        let mut held = None;
        let tool = self.early(name, &mut held);
        let start = self.audit.is_some().then_some(begun);
        pass!(
            self,
            start,
            {
                let mut call =
                    self.start::<Json>(None, name, None, tool, None, Input::Value(input_data), ctx);
                call.validate = validate;
                call
            },
            |call, result| {
                let duration_ms = begun.elapsed().as_secs_f64() * 1000.0;
                InvokeResult::from_outcome(call.key(), result, duration_ms)
            }
        )
    }
}

//! Tool chains: fixed sequences of calls whose inputs come from what came before.
//!
//! A [`ToolChain`] is a list of [`ChainStep`]s run in order over a shared *context* (a
//! JSON object that starts as the caller's input). Each step builds its tool's input
//! from the context with an `input_mapping` (input field -> path in the context, in
//! dot notation with array indices: `order.items[0].sku` or `order.items.0.sku`),
//! calls the tool through the door, and stores the output under its `output_key`; an
//! empty `output_key` merges an object output into the context. A failed step stops
//! the chain when `stop_on_failure` is set (the default), else the chain goes on.
//!
//! [`ToolChain::validate`] checks a chain before it runs: every tool exists, and every
//! mapped field is a property of the tool's input schema.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::call::Runtime;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registry::Registry;

/// One step of a chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainStep {
    /// The tool: full key, `namespace.name` or a unique bare name.
    pub tool: String,
    /// Input field -> path in the context.
    #[serde(default)]
    pub input_mapping: BTreeMap<String, String>,
    /// Where the output goes in the context; empty merges an object output.
    #[serde(default)]
    pub output_key: String,
    /// Whether a failure stops the chain (default `true`).
    #[serde(default = "yes")]
    pub stop_on_failure: bool,
}

fn yes() -> bool {
    true
}

impl ChainStep {
    /// A step calling `tool`, storing its output under `output_key`.
    pub fn new(tool: impl Into<String>, output_key: impl Into<String>) -> ChainStep {
        ChainStep {
            tool: tool.into(),
            input_mapping: BTreeMap::new(),
            output_key: output_key.into(),
            stop_on_failure: true,
        }
    }

    /// Maps the tool's input `field` to `path` in the context.
    pub fn with_mapping(mut self, field: impl Into<String>, path: impl Into<String>) -> ChainStep {
        self.input_mapping.insert(field.into(), path.into());
        self
    }

    /// Whether a failure of this step stops the chain (default `true`).
    pub fn with_stop_on_failure(mut self, stop: bool) -> ChainStep {
        self.stop_on_failure = stop;
        self
    }
}

/// A problem [`ToolChain::validate`] found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// A step's tool does not resolve.
    #[error("step {step}: {message}")]
    UnknownTool {
        /// The step, from 0.
        step: usize,
        /// The resolution error.
        message: String,
    },
    /// A step maps a field the tool's input schema does not have.
    #[error("step {step}: `{tool}` has no input field `{field}`; its fields are: {fields}")]
    UnknownField {
        /// The step, from 0.
        step: usize,
        /// The tool's key.
        tool: String,
        /// The field.
        field: String,
        /// The fields it has.
        fields: String,
    },
    /// A path could not be found in the context when the step ran.
    #[error("step {step}: `{path}` is not in the context")]
    MissingPath {
        /// The step, from 0.
        step: usize,
        /// The path.
        path: String,
    },
    /// An empty `output_key` needs an object output to merge.
    #[error(
        "step {step}: the output is not an object, so it cannot be merged (set an output_key)"
    )]
    NotAnObject {
        /// The step, from 0.
        step: usize,
    },
}

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepResult {
    /// The step's tool, as written.
    pub tool: String,
    /// The output, or why there is none.
    pub result: Result<Value, ToolError>,
    /// How long it took.
    pub duration: Duration,
}

/// What a chain run did.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainResult {
    /// Whether every step that ran succeeded and none was skipped by a stop.
    pub success: bool,
    /// The context at the end.
    pub context: Map<String, Value>,
    /// Each step that ran, in order.
    pub step_results: Vec<StepResult>,
    /// Every problem, as text, in order.
    pub errors: Vec<String>,
    /// How long the chain took.
    pub duration: Duration,
}

/// A chain of tool calls. See the [module docs](self).
///
/// ```
/// use serde_json::json;
/// use tackle::chain::{ChainStep, ToolChain};
/// use tackle::{tool, Runtime, ToolContext};
///
/// /// The price of an item, in cents.
/// #[tool(namespace = "shop", side_effects = read)]
/// fn price(item: String) -> u32 {
///     if item == "tea" { 350 } else { 100 }
/// }
///
/// /// Adds VAT to a price.
/// #[tool(namespace = "shop", side_effects = none)]
/// fn with_vat(cents: u32) -> u32 {
///     cents * 125 / 100
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let chain = ToolChain::new([
///     ChainStep::new("shop.price", "net").with_mapping("item", "order.item"),
///     ChainStep::new("shop.with_vat", "gross").with_mapping("cents", "net"),
/// ]);
/// let start = json!({"order": {"item": "tea"}});
/// let rt = Runtime::from_inventory()?;
/// let done = chain
///     .run(&rt, start.as_object().cloned().unwrap_or_default(), &ToolContext::new())
///     .await;
/// assert!(done.success);
/// assert_eq!(done.context["gross"], json!(437));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChain {
    /// The steps, in order.
    pub steps: Vec<ChainStep>,
}

/// The value at `path` (dot notation, `[n]` or `.n` indices) in `context`.
pub fn lookup<'a>(context: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let normalized = path.replace('[', ".").replace(']', "");
    let mut parts = normalized.split('.').filter(|p| !p.is_empty());
    let mut current = context.get(parts.next()?)?;
    for part in parts {
        current = match current {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

impl ToolChain {
    /// A chain of these steps.
    pub fn new(steps: impl IntoIterator<Item = ChainStep>) -> ToolChain {
        ToolChain {
            steps: steps.into_iter().collect(),
        }
    }

    /// Every problem with the chain that can be seen before it runs.
    pub fn validate(&self, registry: &Registry) -> Result<(), Vec<ChainError>> {
        let mut problems = Vec::new();
        for (step, s) in self.steps.iter().enumerate() {
            let tool = match registry.resolve(&s.tool) {
                Ok(tool) => tool,
                Err(e) => {
                    problems.push(ChainError::UnknownTool {
                        step,
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            let properties = tool
                .spec()
                .input_schema
                .get("properties")
                .and_then(Value::as_object);
            for field in s.input_mapping.keys() {
                if !properties.is_some_and(|p| p.contains_key(field)) {
                    let fields = properties
                        .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                        .unwrap_or_default();
                    problems.push(ChainError::UnknownField {
                        step,
                        tool: tool.key().to_owned(),
                        field: field.clone(),
                        fields,
                    });
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// Runs the chain over `input` (the starting context), every call through the door.
    pub async fn run(
        &self,
        runtime: &Runtime,
        input: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ChainResult {
        let started = Instant::now();
        let mut context = input;
        let mut step_results = Vec::with_capacity(self.steps.len());
        let mut errors = Vec::new();
        for (step, s) in self.steps.iter().enumerate() {
            let mut arguments = Map::new();
            let mut missing = None;
            for (field, path) in &s.input_mapping {
                match lookup(&context, path) {
                    Some(value) => {
                        arguments.insert(field.clone(), value.clone());
                    }
                    None => {
                        missing = Some(ChainError::MissingPath {
                            step,
                            path: path.clone(),
                        });
                        break;
                    }
                }
            }
            if let Some(problem) = missing {
                errors.push(problem.to_string());
                if s.stop_on_failure {
                    break;
                }
                continue;
            }
            let begun = Instant::now();
            let result = runtime.call(&s.tool, Value::Object(arguments), ctx).await;
            let duration = begun.elapsed();
            let failed = match &result {
                Ok(output) if s.output_key.is_empty() => match output {
                    Value::Object(map) => {
                        context.extend(map.clone());
                        false
                    }
                    _ => {
                        errors.push(ChainError::NotAnObject { step }.to_string());
                        true
                    }
                },
                Ok(output) => {
                    context.insert(s.output_key.clone(), output.clone());
                    false
                }
                Err(e) => {
                    errors.push(format!("step {step}: {e}"));
                    true
                }
            };
            step_results.push(StepResult {
                tool: s.tool.clone(),
                result,
                duration,
            });
            if failed && s.stop_on_failure {
                break;
            }
        }
        ChainResult {
            success: errors.is_empty(),
            context,
            step_results,
            errors,
            duration: started.elapsed(),
        }
    }
}

//! Tool chains: fixed sequences of calls whose inputs come from what came before.
//!
//! A [`ToolChain`] is a list of [`ChainStep`]s run in order over a shared *context* (a
//! JSON object that starts as the caller's input). Each step builds its tool's input
//! from the context with an `input_mapping` (input field -> path in the context, in
//! dot notation with array indices: `order.items[0].sku` or `order.items.0.sku`); a
//! step with no mapping gets the whole context so far as its input (so its tool's
//! input schema must take every field the context holds: a `#[tool]` refuses fields
//! it does not name). It calls the tool
//! through the door and stores the output under its `output_key`; an empty
//! `output_key` merges an object output into the context. A failed step stops the
//! chain when `stop_on_failure` is set (the default), else the chain goes on.
//!
//! [`ToolChain::validate`] checks, as the seed says, that every tool a chain names
//! exists; [`ToolChain::execute`] does it first unless told not to (`validate_tools`).
//! [`ToolChain::validate_fields`] checks more: also that every mapped field is a
//! property of its tool's input schema.
//!
//! A chain's steps are run by the same executor as a pipeline's tool nodes
//! (`crate::pipeline`): one step makes the input from the context, calls the tool
//! through the door and puts the output back.
//!
//! This is codomyrmex's `ToolChain` (seed 001): `ChainStep {tool_name, input_mapping,
//! output_key}`, `add_step`, `clear`, `validate`, `execute(initial_input,
//! stop_on_failure, validate_tools)`, and a `ChainResult {success, context,
//! step_results, errors, duration_ms}` whose step results are the registry's
//! [`InvokeResult`]s.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tackle_core::call::InvokeResult;
use tackle_core::context::ToolContext;
use tackle_core::registry::Registry;
use tackle_core::run::Run;
use tackle_core::validate::ValidationResult;

pub use crate::pipeline::steps::lookup;
use crate::pipeline::steps::{run_step, StepError, StepInput, StepOutput};
use crate::pipeline::{Node, Pipeline};

/// One step of a chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainStep {
    /// The tool: full key, `namespace.name` or a unique bare name.
    #[serde(alias = "tool")]
    pub tool_name: String,
    /// Input field -> path in the context.
    #[serde(default)]
    pub input_mapping: BTreeMap<String, String>,
    /// Where the output goes in the context; empty merges an object output.
    #[serde(default)]
    pub output_key: String,
    /// Whether a failure stops the chain (default `true`; written only when `false`).
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub stop_on_failure: bool,
}

fn yes() -> bool {
    true
}

impl ChainStep {
    /// A step calling `tool`, storing its output under `output_key`.
    pub fn new(tool_name: impl Into<String>, output_key: impl Into<String>) -> ChainStep {
        ChainStep {
            tool_name: tool_name.into(),
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
    /// A step a pipeline cannot express ([`ToolChain::to_pipeline`]).
    #[error("step {step} cannot be a pipeline node: {reason}")]
    NotAPipelineStep {
        /// The step, from 0.
        step: usize,
        /// Why.
        reason: String,
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

/// What a chain run did (codomyrmex's `ChainResult`); every field has the seed's
/// default (`success = true`, empty, `duration_ms = 0.0`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChainResult {
    /// Whether every step that ran succeeded and none was skipped by a stop.
    pub success: bool,
    /// The context at the end.
    pub context: Map<String, Value>,
    /// Each step that ran, in order.
    pub step_results: Vec<InvokeResult>,
    /// Every problem, as text, in order.
    pub errors: Vec<String>,
    /// How long the chain took, in milliseconds.
    pub duration_ms: f64,
}

impl Default for ChainResult {
    fn default() -> ChainResult {
        ChainResult {
            success: true,
            context: Map::new(),
            step_results: Vec::new(),
            errors: Vec::new(),
            duration_ms: 0.0,
        }
    }
}

/// How [`ToolChain::execute`] runs a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainOptions {
    /// Stop at the first failed step (default `true`); a step may also go on past its
    /// own failure ([`ChainStep::with_stop_on_failure`]).
    pub stop_on_failure: bool,
    /// Check the chain ([`ToolChain::validate`]) before running any step (default
    /// `true`).
    pub validate_tools: bool,
}

impl Default for ChainOptions {
    fn default() -> ChainOptions {
        ChainOptions {
            stop_on_failure: true,
            validate_tools: true,
        }
    }
}

/// A chain of tool calls. See the [module docs](self).
///
/// ```
/// use serde_json::json;
/// use tackle::chain::{ChainStep, ToolChain};
/// use std::sync::Arc;
/// use tackle::{tool, Run, Runtime, ToolContext};
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
/// let run = Run::new(&Arc::new(Runtime::from_inventory()?));
/// let done = chain
///     .run(&run, start.as_object().cloned().unwrap_or_default(), &ToolContext::new())
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

impl ToolChain {
    /// A chain of these steps.
    pub fn new(steps: impl IntoIterator<Item = ChainStep>) -> ToolChain {
        ToolChain {
            steps: steps.into_iter().collect(),
        }
    }

    /// Appends a step (codomyrmex's `add_step`).
    pub fn add_step(&mut self, step: ChainStep) -> &mut ToolChain {
        self.steps.push(step);
        self
    }

    /// Removes every step (codomyrmex's `clear`).
    pub fn clear(&mut self) {
        self.steps.clear();
    }

    /// How many steps the chain has.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the chain has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Checks the chain before it runs (codomyrmex's `validate`): every tool it names
    /// exists. The problems in words; [`ToolChain::problems`] has them typed.
    pub fn validate(&self, registry: &Registry) -> ValidationResult {
        ValidationResult::from_errors(
            self.problems(registry)
                .iter()
                .filter(|p| matches!(p, ChainError::UnknownTool { .. }))
                .map(ToString::to_string),
        )
    }

    /// A stricter check than [`validate`](Self::validate): every tool exists, and every
    /// mapped field is a property of its tool's input schema (a misspelt field is
    /// found before anything runs).
    pub fn validate_fields(&self, registry: &Registry) -> ValidationResult {
        ValidationResult::from_errors(self.problems(registry).iter().map(ToString::to_string))
    }

    /// Every problem with the chain that can be seen before it runs: unknown tools
    /// and unknown mapped fields.
    pub fn problems(&self, registry: &Registry) -> Vec<ChainError> {
        let mut problems = Vec::new();
        for (step, s) in self.steps.iter().enumerate() {
            let tool = match registry.resolve(&s.tool_name) {
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
        problems
    }

    /// The chain as a pipeline named `name`: step `i` is the tool node `step-<i>`,
    /// whose `inputs` are the step's mapping as `{{state.<path>}}` templates (no
    /// mapping: `input_state`) and whose output goes under the step's `output_key`
    /// (empty: `merge`). The pipeline runs the same steps with the same executor, and
    /// stops at the first failure: a step that keeps going after a failure
    /// (`stop_on_failure: false`), or a path a template cannot hold, cannot be a node.
    pub fn to_pipeline(&self, name: &str) -> Result<Pipeline, ChainError> {
        let mut nodes = Vec::with_capacity(self.steps.len());
        for (step, s) in self.steps.iter().enumerate() {
            let refuse = |reason: &str| ChainError::NotAPipelineStep {
                step,
                reason: reason.to_owned(),
            };
            if !s.stop_on_failure {
                return Err(refuse(
                    "it keeps going after a failure, and a pipeline stops",
                ));
            }
            let mut inputs = Map::new();
            for (field, path) in &s.input_mapping {
                if path.contains("{{") || path.contains("}}") || path.trim().is_empty() {
                    return Err(refuse(&format!("the path `{path}` cannot be a template")));
                }
                inputs.insert(
                    field.clone(),
                    Value::String(format!("{{{{state.{path}}}}}")),
                );
            }
            let yaml = serde_json::json!({
                "id": format!("step-{step}"),
                "kind": "tool",
                "tool": s.tool_name,
                "inputs": (!inputs.is_empty()).then_some(Value::Object(inputs)),
                "input_state": s.input_mapping.is_empty(),
                "merge": s.output_key.is_empty(),
                "out": (!s.output_key.is_empty()).then(|| s.output_key.clone()),
            });
            let node: Node =
                serde_json::from_value(strip_nulls(yaml)).map_err(|e| refuse(&e.to_string()))?;
            nodes.push(node);
        }
        let pipeline = Pipeline {
            name: name.to_owned(),
            description: String::new(),
            state_schema: Map::new(),
            tools: Vec::new(),
            nodes,
        };
        Ok(pipeline)
    }

    /// Runs the chain over `input` (the starting context), every call through the door,
    /// with the default options (stop on failure, validate the tools first).
    pub async fn run(
        &self,
        run: &Run,
        input: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ChainResult {
        self.execute(run, Some(input), ctx, ChainOptions::default())
            .await
    }

    /// Runs the chain (codomyrmex's `execute`): from `initial_input` (an empty
    /// context when `None`), every step's call through the door.
    pub async fn execute(
        &self,
        run: &Run,
        initial_input: Option<Map<String, Value>>,
        ctx: &ToolContext,
        options: ChainOptions,
    ) -> ChainResult {
        let started = Instant::now();
        let mut context = initial_input.unwrap_or_default();
        let mut step_results = Vec::with_capacity(self.steps.len());
        let mut errors = Vec::new();
        if options.validate_tools {
            errors = self.validate(&run.runtime().tools()).errors;
            if !errors.is_empty() {
                return ChainResult {
                    success: false,
                    context,
                    step_results,
                    errors,
                    duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                };
            }
        }
        for (step, s) in self.steps.iter().enumerate() {
            let stops = options.stop_on_failure && s.stop_on_failure;
            // No mapping: the step gets the context so far.
            let input = if s.input_mapping.is_empty() {
                StepInput::State
            } else {
                StepInput::Fields(&s.input_mapping)
            };
            let output = if s.output_key.is_empty() {
                StepOutput::Merge
            } else {
                StepOutput::Key(&s.output_key)
            };
            let (called, placed) =
                run_step(run, &s.tool_name, input, output, &mut context, ctx).await;
            let failed = match placed {
                Ok(()) => false,
                Err(StepError::Missing(path)) => {
                    errors.push(ChainError::MissingPath { step, path }.to_string());
                    if stops {
                        break;
                    }
                    continue;
                }
                Err(StepError::NotAnObject) => {
                    errors.push(ChainError::NotAnObject { step }.to_string());
                    true
                }
                Err(StepError::Call) => {
                    if let Some(Err(e)) = called.as_ref().map(|c| &c.result) {
                        errors.push(format!("step {step}: {e}"));
                    }
                    true
                }
            };
            if let Some(called) = called {
                let key = run
                    .runtime()
                    .registry()
                    .get(&s.tool_name)
                    .map_or(s.tool_name.as_str(), |t| t.key());
                step_results.push(InvokeResult::from_outcome(
                    key,
                    called.result,
                    called.duration_ms,
                ));
            }
            if failed && stops {
                break;
            }
        }
        ChainResult {
            success: errors.is_empty(),
            context,
            step_results,
            errors,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

/// `value` without the object fields that are `null` (left out, as a document would).
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

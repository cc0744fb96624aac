//! The one executor of steps over a JSON state.
//!
//! A tool chain ([`crate::chain`]) and a pipeline's tool nodes ([`super`]) are both
//! sequences of the same step: make the tool's input from the state, call the tool
//! through the door (as a call of the run), put its output back into the state. They
//! differ only in how the input is made (a chain's field mapping or the whole state, a
//! pipeline's `{{state.path}}` templates) and where the output goes (a key, or merged
//! into the state), and in what they do when a step fails; [`run_step`] is the step
//! for both.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Map, Value};

use tackle_core::context::ToolContext;
use tackle_core::error::ToolError;
use tackle_core::run::Run;

/// How a step makes its tool's input from the state.
pub(crate) enum StepInput<'a> {
    /// The whole state so far.
    State,
    /// Input field -> path in the state (see [`lookup`]); a missing path fails the
    /// step before the call.
    Fields(&'a BTreeMap<String, String>),
    /// A value whose strings may hold `{{state.path}}` templates (see
    /// [`super::render`]).
    Template(&'a Map<String, Value>),
}

/// Where a step puts its tool's output.
pub(crate) enum StepOutput<'a> {
    /// Under this key.
    Key(&'a str),
    /// Merged into the state (the output must be an object).
    Merge,
}

/// Why a step failed.
pub(crate) enum StepError {
    /// A path the input needs is not in the state (no call was made).
    Missing(String),
    /// The output was to be merged and is not an object.
    NotAnObject,
    /// The call failed: its error is the call's result.
    Call,
}

/// A call a step made: its result and how long it took.
pub(crate) struct Called {
    /// What the door gave.
    pub(crate) result: Result<Value, ToolError>,
    /// The call's duration in milliseconds.
    pub(crate) duration_ms: f64,
}

/// Runs one step on `state`: the call, when one was made, and whether the state took
/// its output.
pub(crate) async fn run_step(
    run: &Run,
    tool: &str,
    input: StepInput<'_>,
    output: StepOutput<'_>,
    state: &mut Map<String, Value>,
    ctx: &ToolContext,
) -> (Option<Called>, Result<(), StepError>) {
    let arguments = match input {
        StepInput::State => Value::Object(state.clone()),
        StepInput::Fields(fields) => {
            let mut arguments = Map::new();
            for (field, path) in fields {
                match lookup(state, path) {
                    Some(value) => {
                        arguments.insert(field.clone(), value.clone());
                    }
                    None => return (None, Err(StepError::Missing(path.clone()))),
                }
            }
            Value::Object(arguments)
        }
        StepInput::Template(template) => match super::render_object(template, state) {
            Ok(arguments) => arguments,
            Err(path) => return (None, Err(StepError::Missing(path))),
        },
    };
    let begun = Instant::now();
    let result = run.call(tool, arguments, ctx).await;
    let duration_ms = begun.elapsed().as_secs_f64() * 1000.0;
    let placed = match (&result, output) {
        (Ok(value), StepOutput::Key(key)) => {
            state.insert(key.to_owned(), value.clone());
            Ok(())
        }
        (Ok(Value::Object(fields)), StepOutput::Merge) => {
            state.extend(fields.clone());
            Ok(())
        }
        (Ok(_), StepOutput::Merge) => Err(StepError::NotAnObject),
        (Err(_), _) => Err(StepError::Call),
    };
    (
        Some(Called {
            result,
            duration_ms,
        }),
        placed,
    )
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

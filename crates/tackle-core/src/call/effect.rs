//! Effects: what a call through the door gives back, typed.
//!
//! Every call passes the same stages, but not every effect is JSON. A tool takes and
//! gives JSON ([`Json`], the case every registered tool is). A model completion takes a
//! typed request and gives a typed reply, with an error of its own: turning the reply
//! into JSON and back on each call, and carrying its real error beside the door's,
//! would cost every call what only a recording needs. So an operation names its
//! [`Effect`]: the type of its output and of its error, and whether its calls may be
//! made again after a crash ([`Effect::RERUN_SAFE`]), which the door reads from the
//! type (never from the operation's key).
//!
//! The door keeps the outcome in the effect's own types from the code that made it to
//! the caller. A stage that needs JSON (recording to a cassette, checking an output
//! schema, sanitizing, an audit event's error) asks for a *view* when it needs it:
//! [`Effect::view`] for the output, [`Effect::error_view`] for the error. A replayed
//! outcome comes back through [`Effect::from_view`] and [`Effect::from_error`]. The
//! door's own errors (denied, cancelled, timed out, a replay miss) reach the caller
//! as the effect's error through [`Effect::from_error`]. A typed output is never
//! shaped (cut, it would no longer be of its type); its bounds are checked by
//! [`Effect::check_bounds`] and its secrets taken out by [`Effect::scrub`], each
//! without a view when the effect says how.

use std::borrow::Cow;

use serde_json::Value;

use crate::bounds::{Exceeded, Limits};
use crate::error::ToolError;
use crate::secrets::Scrubber;

/// The types of an effect that passes the door: its output, its error, whether it is
/// safe to make again, and how the stages that need JSON see them. See the [module docs](self).
///
/// [`Json`] is the effect of every tool (and of an operation made with
/// [`Operation::new`](super::Operation::new)); an operation of another effect is made
/// with [`Operation::typed`](super::Operation::typed).
pub trait Effect: 'static {
    /// What the effect gives on success.
    type Output: Send + 'static;
    /// What it gives on failure: its own errors, and the door's (see
    /// [`Effect::from_error`]).
    type Error: Send + 'static;
    /// Whether a call of this effect may be made again after a crash, whatever its
    /// spec's side effects: `true` for an effect that changes nothing in the world
    /// (a model's completion: it costs, and a replay never makes it, but asking again
    /// changes nothing). `false` by default: then the spec decides
    /// ([`ToolSpec::rerun_safe`](crate::spec::ToolSpec::rerun_safe)).
    const RERUN_SAFE: bool = false;

    /// The output as JSON for a stage that needs it: recorded to a cassette or a
    /// journal, checked against an output schema, sanitized, kept for a later call
    /// with the same idempotency key. `Err` says why it cannot be one (the door
    /// reports it as the call's `Execution` error).
    fn view(output: &Self::Output) -> Result<Cow<'_, Value>, String>;

    /// The output a view stands for: a replayed or deduplicated outcome, or one a
    /// stage changed. An error when the view does not fit the type (a recording of
    /// another shape). A conversion and nothing more: for a replayed call it runs
    /// while the run's cassette is held.
    fn from_view(view: Value) -> Result<Self::Output, Self::Error>;

    /// The error as the door's, for the audit event, the counters and a recording.
    /// `key` is the operation's.
    fn error_view<'e>(error: &'e Self::Error, key: &str) -> Cow<'e, ToolError>;

    /// The effect's error for one of the door's (denied, cancelled, timed out, a
    /// replay miss, a journal that could not hold the call) or a recorded one.
    fn from_error(error: ToolError) -> Self::Error;

    /// Takes the call's secrets out of an outcome (see [`crate::secrets`]): every text
    /// of the output unless `keep_output` (a tool that reveals secrets to its caller),
    /// every text of the error. The door calls it after [`Effect::check_bounds`]
    /// passed, so a walk of the output's JSON parts
    /// ([`Scrubber::value`](crate::secrets::Scrubber::value)) is bounded.
    fn scrub(
        outcome: &mut Result<Self::Output, Self::Error>,
        scrubber: &Scrubber<'_>,
        keep_output: bool,
    );

    /// Checks the output, live or replayed, against the door's limits (see
    /// [`crate::bounds`]): over them, the call ends with `InvalidOutput`. By default
    /// the JSON output itself, or else the view; an effect whose output holds JSON
    /// parts checks them where they sit (a completion: its text and each tool call's
    /// arguments) without making a view.
    fn check_bounds(output: &Self::Output, limits: &Limits) -> Result<(), Exceeded> {
        match Self::as_json(output) {
            Some(value) => limits.check(value),
            None => match Self::view(output) {
                Ok(view) => limits.check(&view),
                // No view: the stages that need one fail the call.
                Err(_) => Ok(()),
            },
        }
    }

    /// The output as JSON when it is JSON already (a tool's): the stages that read
    /// or change JSON in place (bounds, shaping) use it; a typed output has none.
    #[inline]
    fn as_json(output: &Self::Output) -> Option<&Value> {
        let _ = output;
        None
    }

    /// [`Effect::as_json`], to change in place.
    #[inline]
    fn as_json_mut(output: &mut Self::Output) -> Option<&mut Value> {
        let _ = output;
        None
    }

    /// The key an error of the effect names, to be the operation's registered key.
    #[inline]
    fn error_key(error: &mut Self::Error) -> Option<&mut String> {
        let _ = error;
        None
    }
}

/// The effect of every tool, and of operations made with
/// [`Operation::new`](super::Operation::new): JSON in, JSON out, the door's
/// [`ToolError`] as its error. Every view is the value itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json;

impl Effect for Json {
    type Output = Value;
    type Error = ToolError;
    #[inline]
    fn view(output: &Value) -> Result<Cow<'_, Value>, String> {
        Ok(Cow::Borrowed(output))
    }

    #[inline]
    fn from_view(view: Value) -> Result<Value, ToolError> {
        Ok(view)
    }

    #[inline]
    fn error_view<'e>(error: &'e ToolError, _key: &str) -> Cow<'e, ToolError> {
        Cow::Borrowed(error)
    }

    #[inline]
    fn from_error(error: ToolError) -> ToolError {
        error
    }

    #[inline]
    fn scrub(outcome: &mut Result<Value, ToolError>, scrubber: &Scrubber<'_>, keep_output: bool) {
        scrubber.outcome(outcome, keep_output);
    }

    #[inline]
    fn as_json(output: &Value) -> Option<&Value> {
        Some(output)
    }

    #[inline]
    fn as_json_mut(output: &mut Value) -> Option<&mut Value> {
        Some(output)
    }

    #[inline]
    fn error_key(error: &mut ToolError) -> Option<&mut String> {
        error.key_mut()
    }
}

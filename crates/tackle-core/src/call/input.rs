//! A call's input as the stages see it: the value (or, for an operation, the function
//! that makes it when a stage needs it), and its form scrubbed of secrets.

use serde_json::Value;

/// A call's input as scrubbed of secrets (see [`crate::secrets`]): made by the first
/// stage that needs it (the replay router, approval), read by the next.
#[derive(Default)]
pub(crate) enum ScrubbedInput {
    /// Not scrubbed yet.
    #[default]
    NotYet,
    /// Scrubbing changed nothing: the input is its own scrubbed form.
    Unchanged,
    /// Scrubbing took secrets out: this is what stages after it show and key.
    Scrubbed(Value),
}

/// A call's input: a value, or (for operations) a function that makes one, called
/// only when a stage needs the value, so a model call outside a recording never
/// serializes its request.
pub(crate) enum Input<'a> {
    Value(Value),
    Lazy(Box<dyn FnOnce() -> Result<Value, String> + Send + 'a>),
    /// A lazy input whose view could not be made: the stage that needed it ended
    /// the call, with the reason (see [`Call::made_input`](super::Call::made_input)).
    Unmade,
    Taken,
}

impl Input<'_> {
    /// The value, made now if it was lazy.
    #[inline]
    pub(crate) fn get(&mut self) -> &Value {
        if matches!(self, Input::Lazy(_)) {
            self.make();
        }
        match self {
            Input::Value(value) => value,
            // Taken only by execution, after every stage that reads the input; an
            // unmade input is refused by the stage that asked (`Call::made_input`).
            _ => &Value::Null,
        }
    }

    /// Whether the input is still to be made (an operation's, before any stage
    /// needed it).
    #[inline]
    pub(crate) fn is_lazy(&self) -> bool {
        matches!(self, Input::Lazy(_))
    }

    /// The value as made (by [`Input::get`]); `null` before, and when it could not be
    /// made.
    #[inline]
    pub(crate) fn peek(&self) -> &Value {
        match self {
            Input::Value(value) => value,
            _ => &Value::Null,
        }
    }

    /// The value, for the tool to own (only a tool's input is taken, and it is made).
    #[inline]
    pub(crate) fn take(&mut self) -> Value {
        match std::mem::replace(self, Input::Taken) {
            Input::Value(value) => value,
            other => Input::take_cold(other),
        }
    }

    #[cold]
    fn take_cold(input: Input<'_>) -> Value {
        match input {
            Input::Lazy(make) => make().unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    #[cold]
    fn make(&mut self) {
        if let Input::Lazy(make) = std::mem::replace(self, Input::Taken) {
            *self = match make() {
                Ok(value) => Input::Value(value),
                Err(_) => Input::Unmade,
            };
        }
    }
}

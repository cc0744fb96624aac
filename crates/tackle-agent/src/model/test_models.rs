//! The models for tests and examples, which need no network: [`ScriptedModel`],
//! [`FunctionModel`] and [`TestModel`].

use std::fmt;
use std::sync::{Mutex, PoisonError};

use super::schema_example::example_of;
use super::{ChatModel, ChatRequest, ChatResponse, ModelError, ModelFuture, Role, ToolCallRequest};

/// A model that answers with scripted turns, in order.
///
/// Its `n`th turn answers the conversation's `n`th model reply: the turn it gives a
/// request is the number of assistant messages the request holds (or, when it was
/// called more often than that, its own count of calls). So a run resumed in another
/// process, whose earlier turns come from its journal, gets the next turn, not the
/// first one again. A model that answers only part of a conversation (one given with
/// [`ReactSkill::with_model_for`](crate::react::ReactSkill::with_model_for))
/// counts its own calls instead: make it with [`ScriptedModel::in_call_order`].
pub struct ScriptedModel {
    turns: Vec<Result<ChatResponse, ModelError>>,
    next: Mutex<usize>,
    requests: Mutex<Vec<ChatRequest>>,
    by_conversation: bool,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("turns", &self.turns.len())
            .field("used", &self.used())
            .finish()
    }
}

impl ScriptedModel {
    /// A model whose `n`th answer is `turns[n]`.
    pub fn new(turns: impl IntoIterator<Item = ChatResponse>) -> ScriptedModel {
        ScriptedModel::with_results(turns.into_iter().map(Ok))
    }

    /// A model whose answers may be failures too.
    pub fn with_results(
        turns: impl IntoIterator<Item = Result<ChatResponse, ModelError>>,
    ) -> ScriptedModel {
        ScriptedModel {
            turns: turns.into_iter().collect(),
            next: Mutex::new(0),
            requests: Mutex::new(Vec::new()),
            by_conversation: true,
        }
    }

    /// A model whose `n`th call gets `turns[n]`, whatever the conversation holds: for
    /// a model that answers only some steps of a run. Not safe to resume in another
    /// process (its count starts again from the first turn).
    pub fn in_call_order(turns: impl IntoIterator<Item = ChatResponse>) -> ScriptedModel {
        ScriptedModel {
            by_conversation: false,
            ..ScriptedModel::new(turns)
        }
    }

    /// How many turns were used.
    pub fn used(&self) -> usize {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The requests it received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Checks that every turn was used; the error says how many were not.
    pub fn finish(&self) -> Result<(), ModelError> {
        let used = self.used();
        if used < self.turns.len() {
            return Err(ModelError::Failed {
                message: format!(
                    "{} of {} scripted turn(s) were never used",
                    self.turns.len() - used,
                    self.turns.len()
                ),
            });
        }
        Ok(())
    }
}

impl ChatModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "script"
    }

    fn is_scripted(&self) -> bool {
        true
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let replies = if self.by_conversation {
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count()
        } else {
            0
        };
        let at = (*next).max(replies);
        let answer = match self.turns.get(at) {
            Some(turn) => turn.clone(),
            None => Err(ModelError::ScriptExhausted {
                turns: self.turns.len(),
                call: at + 1,
            }),
        };
        *next = at + 1;
        Box::pin(std::future::ready(answer))
    }
}

/// A model made of a closure over the request.
pub struct FunctionModel<F> {
    name: String,
    f: F,
}

impl<F> FunctionModel<F>
where
    F: Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync,
{
    /// A model named `name` that answers with `f`.
    pub fn new(name: impl Into<String>, f: F) -> FunctionModel<F> {
        FunctionModel {
            name: name.into(),
            f,
        }
    }
}

impl<F> fmt::Debug for FunctionModel<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionModel")
            .field("name", &self.name)
            .finish()
    }
}

impl<F> ChatModel for FunctionModel<F>
where
    F: Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync,
{
    fn provider(&self) -> &str {
        "function"
    }

    fn model(&self) -> &str {
        &self.name
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(std::future::ready((self.f)(request)))
    }
}

/// A model that calls every offered tool once, with arguments made from its input
/// schema, then answers with a summary of the results.
#[derive(Debug, Default)]
pub struct TestModel;

impl ChatModel for TestModel {
    fn provider(&self) -> &str {
        "test"
    }

    fn model(&self) -> &str {
        "every-tool-once"
    }

    fn is_scripted(&self) -> bool {
        true
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        let answered = request.messages.iter().any(|m| m.role == Role::Tool);
        let response = if answered || request.tools.is_empty() {
            let results = request
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .count();
            ChatResponse::text(format!("called {results} tool(s)"))
        } else {
            ChatResponse::calls(
                "calling every tool once",
                request
                    .tools
                    .iter()
                    .enumerate()
                    .map(|(i, tool)| ToolCallRequest {
                        id: format!("test_{i}"),
                        name: tool.name.clone(),
                        arguments: example_of(&tool.parameters, &tool.parameters, 0),
                    })
                    .collect(),
            )
        };
        Box::pin(std::future::ready(Ok(response)))
    }
}

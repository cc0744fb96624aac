//! The LLM judge: a model grades an answer by a rubric, with a structured verdict.
//! Its model call goes through the case's run, so a judged eval records and replays
//! like any run.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use tackle_core::call::Operation;
use tackle_core::context::ToolContext;

use super::evaluators::{short, CaseOutcome, EvalFuture, Evaluation, Evaluator};
use crate::model::{complete, completion, ChatModel, ChatRequest, Completion, Message};

/// A model that judges answers by a rubric.
///
/// ```
/// use tackle::agent::model::{ChatResponse, ScriptedModel};
/// use tackle::evals::LlmJudge;
///
/// let judge = LlmJudge::new(
///     ScriptedModel::new([ChatResponse::text(r#"{"pass": true, "score": 0.9, "reason": "polite"}"#)]),
///     "The answer is polite and names the fee.",
/// );
/// # let _ = judge;
/// ```
pub struct LlmJudge {
    model: Arc<dyn ChatModel>,
    completion: Operation<Completion>,
    rubric: String,
    include_input: bool,
    include_expected: bool,
}

/// The verdict a judge answers with.
#[derive(Deserialize)]
struct Verdict {
    pass: bool,
    score: f64,
    reason: String,
}

impl LlmJudge {
    /// A judge asking `model` whether an answer meets `rubric` (shown the task, not the
    /// expected answer).
    pub fn new(model: impl ChatModel + 'static, rubric: impl Into<String>) -> LlmJudge {
        LlmJudge::with_model(Arc::new(model), rubric)
    }

    /// [`new`](Self::new), with a shared model.
    pub fn with_model(model: Arc<dyn ChatModel>, rubric: impl Into<String>) -> LlmJudge {
        let completion = completion(model.as_ref());
        LlmJudge {
            model,
            completion,
            rubric: rubric.into(),
            include_input: true,
            include_expected: false,
        }
    }

    /// Whether the judge sees the task (default `true`).
    pub fn include_input(mut self, shown: bool) -> LlmJudge {
        self.include_input = shown;
        self
    }

    /// Whether the judge sees the case's expected answer (default `false`).
    pub fn include_expected(mut self, shown: bool) -> LlmJudge {
        self.include_expected = shown;
        self
    }

    /// The request for `outcome`'s answer.
    fn request(&self, outcome: &CaseOutcome<'_>, output: &Value) -> ChatRequest {
        let mut shown = format!("<rubric>\n{}\n</rubric>\n", self.rubric);
        if self.include_input {
            shown.push_str(&format!(
                "<input>\n{}\n</input>\n",
                outcome.case.task_text()
            ));
        }
        if self.include_expected {
            if let Some(expected) = &outcome.case.expected_output {
                shown.push_str(&format!("<expected>\n{}\n</expected>\n", text_of(expected)));
            }
        }
        shown.push_str(&format!("<output>\n{}\n</output>", text_of(output)));
        ChatRequest {
            messages: vec![
                Message::system(
                    "You grade an AI agent's output against a rubric. Answer with one JSON \
                     object and nothing else: {\"pass\": true or false, \"score\": a number \
                     from 0 to 1, \"reason\": one sentence saying why}.",
                ),
                Message::user(shown),
            ],
            tools: Arc::default(),
            response_schema: Some(json!({
                "type": "object",
                "properties": {
                    "pass": {"type": "boolean"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "reason": {"type": "string"}
                },
                "required": ["pass", "score", "reason"],
                "additionalProperties": false
            })),
        }
    }
}

/// A text as itself, any other value as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The verdict in a reply: the text, or a fenced JSON block in it.
fn verdict_of(text: &str) -> Result<Verdict, String> {
    let verdict: Verdict = serde_json::from_str(crate::react::json_body(text)).map_err(|e| {
        format!(
            "the judge's reply is not a verdict ({e}): {}",
            short(&Value::String(text.to_owned()))
        )
    })?;
    if !(0.0..=1.0).contains(&verdict.score) {
        return Err(format!(
            "the judge's score {} is not from 0 to 1",
            verdict.score
        ));
    }
    Ok(verdict)
}

impl Evaluator for LlmJudge {
    fn name(&self) -> String {
        "LLMJudge".to_owned()
    }

    fn evaluate<'a>(&'a self, outcome: &'a CaseOutcome<'a>) -> EvalFuture<'a> {
        Box::pin(async move {
            let name = self.name();
            let Some(output) = outcome.output else {
                return Evaluation::fail(name, "no answer to judge");
            };
            let request = self.request(outcome, output);
            // The program chose its judge: outside a tool call its model needs no grant
            // (as an agent's own model); inside one it does.
            let ctx: Cow<'_, ToolContext> = if outcome.ctx.call_id().is_some() {
                Cow::Borrowed(outcome.ctx)
            } else {
                Cow::Owned(
                    self.completion
                        .spec()
                        .permissions
                        .iter()
                        .fold(outcome.ctx.clone(), |ctx, p| ctx.with_grant(p.clone())),
                )
            };
            match complete(
                outcome.run,
                &self.completion,
                self.model.as_ref(),
                &request,
                &ctx,
            )
            .await
            {
                Err(error) => Evaluation::fail(name, format!("the judge's model failed: {error}")),
                Ok(reply) => match verdict_of(&reply.text) {
                    Err(why) => Evaluation::fail(name, why),
                    Ok(verdict) => Evaluation {
                        evaluator: name,
                        passed: verdict.pass,
                        score: verdict.score,
                        reason: verdict.reason,
                    },
                },
            }
        })
    }
}

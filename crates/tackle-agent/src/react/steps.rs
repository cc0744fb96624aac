//! The loop: from a start or a checkpoint, step by step, until the model answers,
//! a limit is reached or the observer pauses the run.

use std::sync::Arc;

use rust_decimal::Decimal;
use serde_json::Value;
use tackle_core::context::ToolContext;
use tackle_core::run::Run;
use tackle_core::validate::SchemaValidator;

use super::answers::{answer_value, substantive};
use super::{
    AgentError, LocalEffects, ReactCheckpoint, ReactSkill, ReactState, ReactStep, StepEffects,
    StopReason, TextAnswers, Turn,
};
use crate::model::{ChatRequest, Message, Role};

/// What a step observer ([`AgentRun::observe`](super::AgentRun::observe)) tells
/// the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepControl {
    /// Go on with the next step.
    Continue,
    /// Stop at this step boundary.
    Pause,
}

impl ReactSkill {
    /// Runs the loop on `task`, showing `observe` the state at each step boundary
    /// (after a step's observations, before the next model call); when it answers
    /// [`StepControl::Pause`], the run stops there, not done, with `stop_reason` saying
    /// so. A durable run checkpoints its state this way (see [`crate::durable`]).
    pub(crate) async fn run_observed(
        &self,
        run: &Run,
        task: &str,
        ctx: &ToolContext,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactState, AgentError> {
        let effects = LocalEffects::new(self, run, ctx);
        let turn = self
            .converse(&[], task, self.answer_schema.as_ref(), &effects, observe)
            .await?;
        Ok(turn.state)
    }

    /// The loop over a conversation: `history` (earlier turns, without the system
    /// prompt), then `task` as the user's message. Returns the state and the new
    /// messages (the task, the model's turns, the tool results, the answer).
    async fn converse<E: StepEffects>(
        &self,
        history: &[Message],
        task: &str,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<Turn, AgentError> {
        let start = self.begin(history, task, answer_schema);
        let first_new = start.messages.len() - 1;
        let mut at = self.go_on(start, answer_schema, effects, observe).await?;
        let new_messages = at.messages.split_off(first_new.min(at.messages.len()));
        Ok(Turn {
            state: at.state,
            new_messages,
        })
    }

    /// Where a run on `task` after the messages `history` starts (see
    /// [`checkpoint`](Self::checkpoint)), with this skill's answer schema.
    pub(crate) fn start(&self, history: &[Message], task: &str) -> ReactCheckpoint {
        self.begin(history, task, self.answer_schema.as_ref())
    }

    /// Where a run on `task` starts: no step taken, the system prompt and the task
    /// as the conversation, the skill's tools offered. [`run_from`](Self::run_from)
    /// runs from it.
    pub fn checkpoint(&self, task: &str) -> ReactCheckpoint {
        self.begin(&[], task, self.answer_schema.as_ref())
    }

    /// Runs the loop from `checkpoint` (a start from [`checkpoint`](Self::checkpoint),
    /// or where an earlier run paused), its model and tool calls going to `effects`,
    /// showing `observe` each step boundary as
    /// [`AgentRun::observe`](super::AgentRun::observe)
    /// does. Returns where the run stands when it stops: ended (its state's
    /// `stop_reason` says why), or paused by `observe`, to go on from later, in this
    /// process or another. Runs of the skill's answer schema, if it has one.
    pub async fn run_from<E: StepEffects>(
        &self,
        checkpoint: ReactCheckpoint,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactCheckpoint, AgentError> {
        self.go_on(checkpoint, self.answer_schema.as_ref(), effects, observe)
            .await
    }

    /// The start of a run: `history` (earlier turns, without the system prompt),
    /// then `task` as the user's message.
    fn begin(
        &self,
        history: &[Message],
        task: &str,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
    ) -> ReactCheckpoint {
        // Room for a few steps' messages (a reply and a tool result each) before the
        // conversation grows.
        let mut messages = Vec::with_capacity(history.len() + 8);
        messages.push(Message::system(&self.system_prompt));
        messages.extend(history.iter().filter(|m| m.role != Role::System).cloned());
        messages.push(Message::user(task));
        if let Some((schema, _)) = answer_schema {
            if !self.model.structured_output() {
                // This model does not enforce the schema: it reads it.
                messages[0].content.push_str(&format!(
                    "\n\nWhen you answer (without calling a tool), answer with one JSON \
                     document matching this JSON Schema, and nothing else:\n{schema}"
                ));
            }
        }
        ReactCheckpoint {
            task: task.to_owned(),
            state: ReactState {
                error_budget: self.error_budget,
                ..ReactState::default()
            },
            messages,
            tools: self.tools(),
            model: None,
        }
    }

    /// The loop, from `at` until it ends or `observe` pauses it.
    async fn go_on<E: StepEffects>(
        &self,
        at: ReactCheckpoint,
        answer_schema: Option<&(Value, Arc<SchemaValidator>)>,
        effects: &E,
        observe: &mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Result<ReactCheckpoint, AgentError> {
        let ReactCheckpoint {
            task,
            mut state,
            messages,
            tools,
            model: mut preferred,
        } = at;
        let task = task.as_str();
        if matches!(state.stop_reason, Some(StopReason::Paused { .. })) {
            state.stop_reason = None;
        }
        let first_step = state.step_index;
        // The conversation and the offered tools grow in place, step by step.
        let mut request = ChatRequest {
            messages,
            tools,
            response_schema: answer_schema.map(|(schema, _)| schema.clone()),
        };
        while !state.done && state.error_budget > 0 && state.step_index < self.max_steps {
            let step = state.step_index;
            if step > first_step && observe(&state) == StepControl::Pause {
                state.stop_reason = Some(StopReason::Paused { after_steps: step });
                break;
            }
            let (model, _) = self.model_at(preferred);
            // Boxed, as the tool calls below: a run's future holds the loop's own
            // state, and each step's call only while it runs, so many runs at once
            // (each waiting on its model) stay small.
            let response = Box::pin(effects.complete(step, preferred, &request))
                .await
                .map_err(|error| AgentError::Model { step, error })?;
            if let Some(usage) = response.usage {
                state.usage += usage;
                if let Some(price) = self.pricing.get(model.model()) {
                    let cost = state.cost.get_or_insert(Decimal::ZERO);
                    *cost += price.cost(usage);
                }
            }
            preferred = self.preferred_after(&response.tool_calls);
            state.step_index += 1;
            if response.tool_calls.is_empty() {
                let checked = match answer_schema {
                    Some((schema, validator)) => answer_value(&response.text, schema, validator)
                        .map(Some)
                        .map_err(|problem| {
                            format!(
                                "{problem}. Answer again with one JSON document matching the \
                                 required schema, or call a tool."
                            )
                        }),
                    None if self.text_answers == TextAnswers::Substantive => {
                        substantive(&response.text, task, &self.system_normal)
                            .map(|()| None)
                            .map_err(|problem| {
                                format!("{problem}. Answer the task, or call a tool.")
                            })
                    }
                    None => Ok(None),
                };
                match checked {
                    Err(problem) => {
                        // Not an answer: a repair turn, while they last (the error
                        // budget is for failed tool calls).
                        let observation = format!("not an answer: {problem}");
                        let repairs = state
                            .trajectory
                            .iter()
                            .filter(|s| s.tool_call.is_none() && s.observation.is_some())
                            .count();
                        if repairs >= self.repair_turns as usize {
                            state.trajectory.push(ReactStep {
                                thought: response.text.clone(),
                                tool_call: None,
                                observation: Some(observation),
                            });
                            request
                                .messages
                                .push(Message::assistant(response.text, Vec::new()));
                            state.stop_reason = Some(StopReason::RepairTurnsSpent {
                                max_repair_turns: self.repair_turns,
                            });
                            break;
                        }
                        state.trajectory.push(ReactStep {
                            thought: response.text.clone(),
                            tool_call: None,
                            observation: Some(observation.clone()),
                        });
                        request
                            .messages
                            .push(Message::assistant(response.text, Vec::new()));
                        request.messages.push(Message::user(observation));
                        continue;
                    }
                    Ok(Some(value)) => state.final_value = Some(value),
                    Ok(None) => {}
                }
                state.trajectory.push(ReactStep {
                    thought: response.text.clone(),
                    tool_call: None,
                    observation: None,
                });
                request
                    .messages
                    .push(Message::assistant(response.text.clone(), Vec::new()));
                state.final_answer = Some(response.text);
                state.done = true;
                state.stop_reason = Some(StopReason::Done);
                break;
            }
            let observations = Box::pin(self.act(
                step,
                &response.text,
                (&response.tool_calls, &response.unreadable),
                effects,
                &mut state,
                &mut request.tools,
            ))
            .await;
            let results: Vec<Message> = response
                .tool_calls
                .iter()
                .zip(observations)
                .map(|(call, (content, parts))| Message::tool(&call.id, content).with_parts(parts))
                .collect();
            request
                .messages
                .push(Message::assistant(response.text, response.tool_calls));
            request.messages.extend(results);
        }
        if !state.done && state.stop_reason.is_none() {
            state.stop_reason = Some(if state.error_budget == 0 {
                StopReason::ErrorBudgetSpent
            } else {
                StopReason::StepLimit {
                    max_steps: self.max_steps,
                }
            });
        }
        Ok(ReactCheckpoint {
            task: task.to_owned(),
            state,
            messages: request.messages,
            tools: request.tools,
            model: preferred,
        })
    }
}

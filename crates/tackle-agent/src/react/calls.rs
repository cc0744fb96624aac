//! A step's tool calls: each name the model used resolved to a tool the run offers,
//! `tool_search` answered here, the rest run as one batch through the run's effects,
//! a repair round for invalid arguments, and each outcome made an observation.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tackle_core::content::{split_output, ContentPart};
use tackle_core::error::{ToolError, ToolErrorKind};
use tackle_core::executor::ToolCall;
use tackle_core::validate::ValidationIssue;

use super::skill::SEARCH_TOOL;
use super::{ReactSkill, ReactState, ReactStep, StepEffects, ToolCallRecord};
use crate::model::{ToolCallRequest, ToolDefinition, UnreadableCall};

impl ReactSkill {
    /// Runs one turn's tool calls (the registry's as one batch; `tool_search`
    /// here); returns each call's observation text, and the images and files of its
    /// result, in call order. A call whose
    /// arguments could not be read runs nothing: its observation says why, so the model
    /// can send it again.
    pub(super) async fn act<E: StepEffects>(
        &self,
        step: usize,
        thought: &str,
        (calls, unreadable): (&[ToolCallRequest], &[UnreadableCall]),
        effects: &E,
        state: &mut ReactState,
        offered: &mut Arc<Vec<ToolDefinition>>,
    ) -> Vec<(String, Vec<ContentPart>)> {
        let mut outcomes: Vec<Option<Result<Value, ToolError>>> = vec![None; calls.len()];
        let mut keys = Vec::with_capacity(calls.len());
        let (mut indices, mut to_run) = (Vec::new(), Vec::new());
        for (i, c) in calls.iter().enumerate() {
            let offered_key = self.offered_key(&c.name);
            let key = offered_key.clone().unwrap_or_else(|| c.name.clone());
            if let Some(bad) = unreadable.iter().find(|u| u.index == i) {
                outcomes[i] = Some(Err(ToolError::InvalidInput {
                    key: key.clone(),
                    errors: vec![ValidationIssue::new(
                        "",
                        format!(
                            "{}; send the call again with complete JSON arguments",
                            bad.error
                        ),
                    )],
                }));
            } else if c.name == SEARCH_TOOL && self.deferred_index.is_some() {
                let (query, k) = search_arguments(&c.arguments);
                let found = effects.search(self, query, k).await;
                outcomes[i] = Some(Ok(self.offer_found(found, offered)));
            } else if offered_key.is_none() {
                // Not a tool of this run: whatever it names in the registry, it is not
                // the model's to call.
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: self.closest_offered(&c.name),
                    registry_empty: false,
                }));
            } else if self.deferred.contains_key(&key)
                && !offered
                    .iter()
                    .any(|t| self.names.key_of(&t.name) == Some(key.as_str()))
            {
                outcomes[i] = Some(Err(ToolError::NotFound {
                    query: c.name.clone(),
                    suggestions: vec![format!("find it first with `{SEARCH_TOOL}`")],
                    registry_empty: false,
                }));
            } else {
                indices.push(i);
                to_run.push(ToolCall::new(
                    c.id.clone(),
                    key.clone(),
                    c.arguments.clone(),
                ));
            }
            keys.push(key);
        }
        let ran = effects.execute(step, to_run).await;
        // Arguments that a repair round replaced, by call.
        // (Empty unless a repair round ran: most turns have none.)
        let mut repaired: Vec<Option<Value>> = Vec::new();
        for (i, mut result) in indices.into_iter().zip(ran) {
            if let (Err(e), true) = (&result, self.repair.is_some()) {
                if e.kind() == ToolErrorKind::InvalidInput {
                    if let Some(fixed) = effects.repair(self, &calls[i], e).await {
                        let retry =
                            ToolCall::new(calls[i].id.clone(), keys[i].clone(), fixed.clone());
                        result = effects
                            .execute(step, vec![retry])
                            .await
                            .pop()
                            .unwrap_or_else(|| {
                                Err(ToolError::Aborted {
                                    key: keys[i].clone(),
                                    grace_ms: 0,
                                })
                            });
                        repaired.resize(calls.len(), None);
                        repaired[i] = Some(fixed);
                    }
                }
            }
            outcomes[i] = Some(result);
        }
        let mut texts = Vec::with_capacity(calls.len());
        for (i, c) in calls.iter().enumerate() {
            let result = outcomes[i].take().unwrap_or_else(|| {
                Err(ToolError::Aborted {
                    key: keys[i].clone(),
                    grace_ms: 0,
                })
            });
            let arguments = repaired
                .get_mut(i)
                .and_then(Option::take)
                .unwrap_or_else(|| c.arguments.clone());
            let (content, parts) = match &result {
                Ok(Value::String(s)) => (s.clone(), Vec::new()),
                // An image or a file goes beside the text, which names it.
                Ok(value) => split_output(value).unwrap_or_else(|| (value.to_string(), Vec::new())),
                Err(e) => (e.to_string(), Vec::new()),
            };
            if result.is_err() {
                state.error_budget = state.error_budget.saturating_sub(1);
            }
            let record = ToolCallRecord {
                name: std::mem::take(&mut keys[i]),
                arguments,
                error: result.as_ref().err().map(ToString::to_string),
                error_kind: result.as_ref().err().map(ToolError::kind),
                result: result.ok(),
                call_id: Some(c.id.clone()),
                step,
            };
            state.trajectory.push(ReactStep {
                // The turn's thought goes with its first call.
                thought: if i == 0 {
                    thought.to_owned()
                } else {
                    String::new()
                },
                tool_call: Some(record.clone()),
                observation: Some(content.clone()),
            });
            state.tool_calls.push(record);
            texts.push((content, parts));
        }
        texts
    }

    /// The key of the run's tool that `name` calls: the name the model was given, or
    /// the tool's key, `namespace.name` or bare name. `None` for anything else.
    fn offered_key(&self, name: &str) -> Option<String> {
        self.names
            .key_of(name)
            .or_else(|| self.aliases.get(name).map(String::as_str))
            .map(str::to_owned)
    }

    /// Up to three of the run's tools close to `name`, closest first, one per tool:
    /// each as the form of its names (the name the model was offered, its key,
    /// `namespace.name` or bare name) closest to `name`, so `bank.balnce` is told
    /// `bank.balance` and `bank_balnce` is told `bank_balance`.
    fn closest_offered(&self, name: &str) -> Vec<String> {
        if name.len() > tackle_core::registry::query::SUGGEST_MAX_LEN {
            return Vec::new();
        }
        let mut best: HashMap<&str, (f64, &str)> = HashMap::new();
        let offered = self.names.iter().map(|(key, name)| (name, key));
        let aliases = self.aliases.iter().map(|(a, k)| (a.as_str(), k.as_str()));
        for (candidate, key) in offered.chain(aliases) {
            let score = strsim::normalized_damerau_levenshtein(name, candidate);
            let entry = best.entry(key).or_insert((score, candidate));
            if score > entry.0 || (score == entry.0 && candidate < entry.1) {
                *entry = (score, candidate);
            }
        }
        let mut scored: Vec<(f64, &str)> = best
            .into_values()
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(3)
            .map(|(_, n)| n.to_owned())
            .collect()
    }

    /// New arguments for `call`, which failed validation with `error`, from the
    /// skill's repair hook (`None` without one, or when it has none to give): what
    /// [`StepEffects::repair`] runs.
    pub fn repair_arguments(&self, call: &ToolCallRequest, error: &ToolError) -> Option<Value> {
        self.repair
            .as_ref()
            .and_then(|hook| hook.repair(call, error))
    }

    /// The keys of the deferred tools that `tool_search` finds for `query`, best
    /// first, at most `k`: what [`StepEffects::search`] runs.
    pub fn search_deferred(&self, query: &str, k: usize) -> Vec<String> {
        self.deferred_index
            .as_ref()
            .map(|index| index.search(query, k))
            .unwrap_or_default()
            .into_iter()
            .map(|hit| hit.key)
            .collect()
    }

    /// Offers the deferred tools `found` (keys) and says what they are.
    fn offer_found(&self, found: Vec<String>, offered: &mut Arc<Vec<ToolDefinition>>) -> Value {
        let mut listed = Vec::with_capacity(found.len());
        for key in found {
            if let Some(definition) = self.deferred.get(&key) {
                if !offered.iter().any(|t| t.name == definition.name) {
                    // The run's own list from here on: the skill's is not changed.
                    Arc::make_mut(offered).push(definition.clone());
                }
                listed.push(serde_json::json!({
                    "name": definition.name,
                    "description": definition.description,
                }));
            }
        }
        Value::Array(listed)
    }
}

/// The query and the number of results of a `tool_search` call (5 unless it asks for
/// 1 to 20).
fn search_arguments(arguments: &Value) -> (&str, usize) {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let k = arguments
        .get("k")
        .and_then(Value::as_u64)
        .map_or(5, |k| k.clamp(1, 20) as usize);
    (query, k)
}

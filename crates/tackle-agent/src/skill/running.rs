//! Running a skill: as a ReAct loop over its tools whose answer is its state, or as
//! its workflow subgraph, after the door let the caller in.

use std::any::type_name;
use std::sync::Arc;

use serde_json::Value;
use tackle_core::call::Runtime;
use tackle_core::context::ToolContext;
use tackle_core::error::ToolErrorKind;
use tackle_core::registry::Registry;
use tackle_core::run::Run;

use super::{check_against, Skill, SkillError, SkillKind, SkillRun, SkillState};
use crate::model::ChatModel;
use crate::react::{ReactSkill, ReactState, StepControl};

impl Skill {
    /// Runs the subgraph over `inputs` (a JSON object, the initial state) with no
    /// model, after checking `requires` against `ctx`; the state's declared keys are
    /// read back as `S`. See the [module docs](super).
    pub async fn run_workflow<S: SkillState>(
        &self,
        run: &Run,
        inputs: Value,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, SkillError> {
        let site_id = self.site_id();
        self.check_state::<S>()?;
        let Some(graph) = &self.graph else {
            return Err(SkillError::NoSubgraph(site_id));
        };
        self.enter(run.runtime(), ctx).await?;
        let run = &self.events_scope(run);
        let input_keys: Vec<String> = inputs
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let end = graph
            .run(run, inputs, ctx)
            .await
            .map_err(|error| SkillError::Workflow {
                site_id: site_id.clone(),
                error: Box::new(error),
            })?;
        let Value::Object(end) = end else {
            return Err(SkillError::NoSubgraph(site_id));
        };
        // The boundary: every key the run added is declared (the build checked the
        // nodes; this holds whatever a node did).
        if let Some(key) = end
            .keys()
            .find(|k| !input_keys.contains(k) && !self.output_keys.contains(k))
        {
            return Err(SkillError::UndeclaredWrite {
                site_id,
                node: "(subgraph)".into(),
                key: key.clone(),
                declared: self.output_keys.clone(),
            });
        }
        let out: serde_json::Map<String, Value> = end
            .iter()
            .filter(|(k, _)| self.output_keys.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let out = Value::Object(out);
        let bad = |problems: String| SkillError::BadState {
            site_id: site_id.clone(),
            problems,
            state: Box::new(Value::Object(end.clone())),
        };
        check_against(&self.state_schema, &out).map_err(bad)?;
        let state = serde_json::from_value(out).map_err(|e| bad(e.to_string()))?;
        Ok(SkillRun {
            state,
            run: ReactState::default(),
            graph_state: Some(Value::Object(end)),
        })
    }

    /// The run the skill's calls are made on: the caller's, or the same run without
    /// its event sink when the skill keeps its events to itself (`bubble_events =
    /// false`).
    fn events_scope(&self, run: &Run) -> Run {
        if self.bubble_events {
            run.clone()
        } else {
            run.without_events()
        }
    }

    fn check_state<S: SkillState>(&self) -> Result<(), SkillError> {
        if type_name::<S>() != self.state_type {
            return Err(SkillError::WrongState {
                site_id: self.site_id(),
                declared: self.state_type,
                asked: type_name::<S>(),
            });
        }
        Ok(())
    }

    /// Runs the skill on `task`: checks `requires` against `ctx` first, then runs the
    /// ReAct loop with `model` over the skill's tools, and reads the final answer as
    /// the state `S` (which must be the skill's state type). A skill with a subgraph
    /// whose kind is not `agent` runs the subgraph instead, with the state
    /// `{"task": task}` and no model call ([`run_workflow`](Self::run_workflow)).
    pub async fn run<S: SkillState>(
        &self,
        model: Arc<dyn ChatModel>,
        run: &Run,
        task: &str,
        ctx: &ToolContext,
    ) -> Result<SkillRun<S>, SkillError> {
        let site_id = self.site_id();
        self.check_state::<S>()?;
        if self.graph.is_some() && self.kind != SkillKind::Agent {
            let inputs = serde_json::json!({ "task": task });
            return self.run_workflow(run, inputs, ctx).await;
        }
        self.enter(run.runtime(), ctx).await?;
        let react = self.react(model, &run.runtime().tools())?;
        let run = &self.events_scope(run);
        let run = react
            .run_observed(run, task, ctx, &mut |_| StepControl::Continue)
            .await
            .map_err(|error| SkillError::Agent {
                site_id: site_id.clone(),
                error,
            })?;
        self.answer(run)
    }

    /// Whether the skill runs as an agent (a ReAct loop), not as a workflow subgraph.
    pub(crate) fn runs_as_agent(&self) -> bool {
        self.graph.is_none() || self.kind == SkillKind::Agent
    }

    /// Enters the skill: the door checks that `ctx` holds what the skill requires,
    /// as the operation `skill.<name>@<version>` (audited, let in or refused; see
    /// `tackle_core::call`), before anything of the skill runs.
    pub(crate) async fn enter(
        &self,
        runtime: &Runtime,
        ctx: &ToolContext,
    ) -> Result<(), SkillError> {
        let site_id = self.site_id();
        let what = format!("the skill `{site_id}`");
        let gate = ("skill", self.name.as_str(), self.version.as_str());
        match tackle_core::call::enter(runtime, gate, &self.requires, &what, ctx).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == ToolErrorKind::CapabilityDenied => {
                Err(SkillError::Denied {
                    missing: self.missing_capabilities(ctx),
                    site_id,
                })
            }
            Err(error) => Err(SkillError::Entry { site_id, error }),
        }
    }

    /// The ReAct loop this skill runs for an agent: its tools and prompt, with
    /// `model` over tools of `registry` (call [`enter`](Self::enter) first).
    pub(crate) fn react(
        &self,
        model: Arc<dyn ChatModel>,
        registry: &Registry,
    ) -> Result<ReactSkill, SkillError> {
        let site_id = self.site_id();
        let keys: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        // The state's schema is the answer's: sent natively to models that enforce
        // it, and a reply that does not fit is a repair turn, not the run's end.
        ReactSkill::new(model, registry, &keys)
            .and_then(|react| react.with_answer_schema(self.state_schema.clone()))
            .map(|react| react.with_system_prompt(self.prompt()))
            .map_err(|error| SkillError::Agent { site_id, error })
    }

    /// Reads a finished ReAct run's answer as the state `S`.
    pub(crate) fn answer<S: SkillState>(&self, run: ReactState) -> Result<SkillRun<S>, SkillError> {
        self.check_state::<S>()?;
        let site_id = self.site_id();
        let Some(answer) = run.final_answer.as_deref() else {
            let reason = run
                .stop_reason
                .as_ref()
                .map_or_else(|| "no answer".to_owned(), ToString::to_string);
            return Err(SkillError::NoAnswer {
                site_id,
                reason,
                run: Box::new(run),
            });
        };
        match self.read_state::<S>(answer) {
            Ok(state) => Ok(SkillRun {
                state,
                run,
                graph_state: None,
            }),
            Err(problems) => Err(SkillError::BadAnswer {
                site_id,
                problems,
                run: Box::new(run),
            }),
        }
    }

    /// The system prompt with the answer's required form appended.
    fn prompt(&self) -> String {
        format!(
            "{}\n\nWhen you are done, answer with only a JSON object with the keys {} matching this schema: {}",
            self.system_prompt,
            self.output_keys.join(", "),
            self.state_schema
        )
    }

    /// Reads an answer as the state: a JSON object, possibly in a ```json fence.
    fn read_state<S: SkillState>(&self, answer: &str) -> Result<S, String> {
        let text = answer.trim();
        let text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|t| t.strip_suffix("```"))
            .unwrap_or(text)
            .trim();
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        if let Some(key) = value
            .as_object()
            .and_then(|m| m.keys().find(|k| !self.output_keys.contains(k)))
        {
            return Err(format!(
                "it writes `{key}`, which is not a declared output key ({})",
                self.output_keys.join(", ")
            ));
        }
        check_against(&self.state_schema, &value)?;
        serde_json::from_value(value).map_err(|e| e.to_string())
    }
}

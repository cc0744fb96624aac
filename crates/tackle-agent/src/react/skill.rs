//! The loop's settings, [`ReactSkill`]: its model, the tools it offers and the names
//! it offers them under (`tool_search` among them when some are deferred), its
//! prompt, limits, answer schema, prices and hooks.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::Value;
use tackle_core::call::Operation;
use tackle_core::error::ToolError;
use tackle_core::registry::{Registry, Tool};
use tackle_core::spec::{ModelHint, PreferredModel};
use tackle_core::validate::SchemaValidator;

use super::answers::normal;
use super::AgentError;
use crate::model::{completion, ChatModel, Completion, Pricing, ToolCallRequest, ToolDefinition};
use crate::providers::{NameTaken, Provider, ProviderNames};
use crate::search::{Embedder, ToolIndex};

/// Gets a second chance at invalid arguments: given the call and the problems, new
/// arguments to try once, or `None`.
pub trait RepairHook: Send + Sync {
    /// New arguments for `call`, which failed validation with `error`.
    fn repair(&self, call: &ToolCallRequest, error: &ToolError) -> Option<Value>;
}

/// Adds `key` under its model name to `names`, refusing a name another key has.
fn offer(names: &mut ProviderNames, key: &str) -> Result<String, AgentError> {
    match names.insert(key) {
        Ok(name) => Ok(name.to_owned()),
        Err(NameTaken {
            name,
            first,
            second,
        }) => Err(AgentError::NameCollision {
            name,
            first,
            second,
        }),
    }
}

/// Seed 004's ReAct loop over some tools: the loop an [`Agent`](super::Agent)
/// runs. See the [module docs](super).
///
/// Programs define and run an [`Agent`](super::Agent); a `ReactSkill` is what
/// an agent makes for each run (its settings, offering the tools of the run's
/// registry), and what an engine that drives the loop step by step elsewhere holds
/// ([`checkpoint`](Self::checkpoint), [`run_from`](Self::run_from)).
///
/// ```
/// use std::sync::Arc;
/// use tackle::agent::model::ScriptedModel;
/// use tackle::agent::react::ReactSkill;
/// use tackle::{tool, Runtime};
///
/// /// Adds two integers.
/// #[tool(namespace = "math", side_effects = none)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::from_inventory()?;
/// let model = Arc::new(ScriptedModel::new([]));
/// let skill = ReactSkill::new(model, runtime.registry(), &[add::KEY])?.with_max_steps(4);
/// assert_eq!(skill.tools()[0].name, "math_add"); // the name the model is offered
/// let start = skill.checkpoint("What is 2 + 3?"); // where an engine starts the loop
/// assert_eq!((start.state.step_index, start.messages.len()), (0, 2));
/// # Ok(())
/// # }
/// ```
pub struct ReactSkill {
    pub(super) model: Arc<dyn ChatModel>,
    pub(super) completion: Operation<Completion>,
    /// The tools a run is offered at its start (`tool_search` among them when some
    /// are deferred): one copy, shared by every run.
    pub(super) tools: Arc<Vec<ToolDefinition>>,
    /// The model name of every offered tool ([`model_name`]), both ways.
    pub(super) names: ProviderNames,
    /// The `preferred_model` of offered tools that have one, by key.
    pub(super) preferences: HashMap<String, PreferredModel>,
    /// Other names an offered tool answers to (its key, `namespace.name`, a bare
    /// name no other offered tool has), and its key.
    pub(super) aliases: HashMap<String, String>,
    pub(super) deferred: HashMap<String, ToolDefinition>,
    pub(super) deferred_tools: Vec<Arc<Tool>>,
    pub(super) deferred_index: Option<ToolIndex>,
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    /// Models for tools' `preferred_model`, with their completion operations.
    pub(super) preferred: Vec<(PreferredModel, Arc<dyn ChatModel>, Operation<Completion>)>,
    pub(super) system_prompt: String,
    /// The system prompt, [`normal`]ized (to spot a reply that says it back).
    pub(super) system_normal: String,
    pub(super) max_steps: usize,
    pub(super) error_budget: u32,
    /// The most replies a run takes that are not answers (repair turns).
    pub(super) repair_turns: u32,
    pub(super) repair: Option<Arc<dyn RepairHook>>,
    /// Prices of models, by model name.
    pub(super) pricing: HashMap<String, Pricing>,
    /// The schema a final answer must match, and its validator.
    pub(super) answer_schema: Option<(Value, Arc<SchemaValidator>)>,
    /// The Rust type that schema was made from ([`ReactSkill::with_answer`]).
    pub(super) answer_type: Option<TypeId>,
    /// Which replies without tool calls are answers (when there is no schema).
    pub(super) text_answers: TextAnswers,
}

/// Which replies without tool calls a run takes as its answer, when it requires no
/// answer schema ([`ReactSkill::with_text_answers`]). A reply that is not an answer is a
/// repair turn: the model is told why. Repair turns do not spend the error budget
/// (only failed tool calls do); they have their own limit
/// ([`ReactSkill::with_repair_turns`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextAnswers {
    /// Any reply without tool calls.
    Any,
    /// A reply with something to say (the default): not empty, and not the task or
    /// the system prompt said back (a small model echoing its prompt).
    #[default]
    Substantive,
}

impl std::fmt::Debug for ReactSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactSkill")
            .field("model", &self.model.model())
            .field("tools", &self.names)
            .field("max_steps", &self.max_steps)
            .field("error_budget", &self.error_budget)
            .field("repair_turns", &self.repair_turns)
            .finish()
    }
}

/// The name a model sees for a tool key: letters, digits, `_` and `-` only (the
/// strictest providers' rule), `namespace_name`: [`Provider::name_for`] of the
/// chat providers, or a stand-in for a name client libraries make a built-in tool of
/// ([`RESERVED_NAMES`](crate::providers::RESERVED_NAMES): `web.search@1` is
/// `web_search_v1`), as the skill's [`ProviderNames`] gives it.
pub fn model_name(key: &str) -> String {
    let mut names = ProviderNames::empty(Provider::OpenAi);
    match names.insert(key) {
        Ok(name) => name.to_owned(),
        Err(taken) => taken.name,
    }
}

impl ReactSkill {
    /// The most steps a run takes unless told otherwise: 10.
    pub const DEFAULT_MAX_STEPS: usize = 10;

    /// The failed calls a run tolerates unless told otherwise: 3.
    pub const DEFAULT_ERROR_BUDGET: u32 = 3;

    /// The replies that are not answers (empty, the prompt said back, not the
    /// required JSON) a run takes unless told otherwise: 3. Each is a repair turn;
    /// one more ends the run ([`StopReason::RepairTurnsSpent`](super::StopReason::RepairTurnsSpent)).
    pub const DEFAULT_REPAIR_TURNS: u32 = 3;

    /// A skill that lets `model` use the tools `keys` (each must resolve in
    /// `registry`), with default limits. Tools whose spec sets `defer_loading` are
    /// deferred (see [`with_deferred`](Self::with_deferred)). The skill keeps the
    /// tools' definitions, not the registry: it runs on any [`Run`](tackle_core::run::Run) whose runtime has
    /// those tools.
    pub fn new(
        model: Arc<dyn ChatModel>,
        registry: &Registry,
        keys: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        ReactSkill::bare(model).offering(registry, keys, &[])
    }

    /// A skill of `model` that offers no tool yet, with default limits.
    pub(crate) fn bare(model: Arc<dyn ChatModel>) -> ReactSkill {
        ReactSkill {
            completion: completion(model.as_ref()),
            model,
            tools: Arc::new(Vec::new()),
            names: ProviderNames::empty(Provider::OpenAi),
            aliases: HashMap::new(),
            preferences: HashMap::new(),
            deferred: HashMap::new(),
            deferred_tools: Vec::new(),
            deferred_index: None,
            embedder: None,
            preferred: Vec::new(),
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            system_normal: normal(DEFAULT_SYSTEM_PROMPT),
            max_steps: ReactSkill::DEFAULT_MAX_STEPS,
            error_budget: ReactSkill::DEFAULT_ERROR_BUDGET,
            repair_turns: ReactSkill::DEFAULT_REPAIR_TURNS,
            repair: None,
            pricing: HashMap::new(),
            answer_schema: None,
            answer_type: None,
            text_answers: TextAnswers::default(),
        }
    }

    /// This skill's settings (model, prompt, limits, answer, hooks), offering no tool.
    pub(crate) fn clone_settings(&self) -> ReactSkill {
        ReactSkill {
            completion: completion(self.model.as_ref()),
            model: Arc::clone(&self.model),
            tools: Arc::new(Vec::new()),
            names: ProviderNames::empty(Provider::OpenAi),
            aliases: HashMap::new(),
            preferences: HashMap::new(),
            deferred: HashMap::new(),
            deferred_tools: Vec::new(),
            deferred_index: None,
            embedder: self.embedder.clone(),
            preferred: self
                .preferred
                .iter()
                .map(|(p, model, _)| (p.clone(), Arc::clone(model), completion(model.as_ref())))
                .collect(),
            system_prompt: self.system_prompt.clone(),
            system_normal: self.system_normal.clone(),
            max_steps: self.max_steps,
            error_budget: self.error_budget,
            repair_turns: self.repair_turns,
            repair: self.repair.clone(),
            pricing: self.pricing.clone(),
            answer_schema: self.answer_schema.clone(),
            answer_type: self.answer_type,
            text_answers: self.text_answers,
        }
    }

    /// This skill's settings (model, prompt, limits, answer, hooks) offering the tools
    /// `keys` of `registry`, and the tools `deferred` behind `tool_search`, in place of
    /// the tools it offers. An [`Agent`](super::Agent) makes its skill this
    /// way for each run, from the run's registry.
    pub(crate) fn offering(
        &self,
        registry: &Registry,
        keys: &[&str],
        deferred: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        let mut skill = self.clone_settings();
        let mut late: Vec<&str> = Vec::new();
        let tools = Arc::make_mut(&mut skill.tools);
        tools.reserve(keys.len());
        for key in keys {
            let tool = resolve(&mut skill.preferences, registry, key)?;
            if tool.spec().defer_loading {
                late.push(tool.key());
                continue;
            }
            let name = offer(&mut skill.names, tool.key())?;
            tools.push(ToolDefinition {
                name,
                description: tool.spec().description.clone(),
                parameters: tool.spec().input_schema.clone(),
            });
        }
        late.extend_from_slice(deferred);
        if late.is_empty() {
            return Ok(skill.with_aliases());
        }
        skill.with_deferred(registry, &late)
    }

    /// Fills the other names offered tools answer to from their keys.
    fn with_aliases(mut self) -> ReactSkill {
        let mut aliases: HashMap<String, String> = HashMap::new();
        for (key, _) in self.names.iter() {
            let path = key.split_once('@').map_or(key, |(p, _)| p);
            aliases.insert(key.to_owned(), key.to_owned());
            aliases.insert(path.to_owned(), key.to_owned());
        }
        for (bare, key) in self.names.unique_bare_names() {
            aliases.entry(bare).or_insert_with(|| key.to_owned());
        }
        self.aliases = aliases;
        self
    }

    /// Gives `tool_search` an embedder: its first tier ranks the deferred tools by
    /// the cosine similarity of their text to the query, before BM25 and name match
    /// (see [`ToolIndex`]).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> ReactSkill {
        self.embedder = Some(embedder);
        if self.deferred_index.is_some() {
            self.deferred_index = Some(ToolIndex::over(
                self.deferred_tools.iter().map(|t| &**t),
                self.embedder.clone(),
            ));
        }
        self
    }

    /// Requires the final answer to be a JSON document matching `schema` (a skill's
    /// state schema, say). Each request carries it as
    /// [`ChatRequest::response_schema`](crate::model::ChatRequest::response_schema): a model that [enforces
    /// it](ChatModel::structured_output) gets it natively, others in the system prompt.
    /// A reply without tool calls is the answer only when it parses and validates (a
    /// fenced `json` block is accepted); otherwise the model is told what was wrong and
    /// asked again (a repair turn, which does not spend the error budget: at most
    /// [`with_repair_turns`](Self::with_repair_turns) of them). The answer's value is
    /// [`ReactState::final_value`](super::ReactState::final_value).
    ///
    /// Without an answer schema, a reply without tool calls is the answer as the
    /// [`TextAnswers`] policy says (by default, one that says something).
    pub fn with_answer_schema(mut self, schema: Value) -> Result<ReactSkill, AgentError> {
        let validator =
            SchemaValidator::compile(&schema).map_err(AgentError::InvalidAnswerSchema)?;
        self.answer_schema = Some((schema, Arc::new(validator)));
        self.answer_type = None;
        Ok(self)
    }

    /// Sets which replies without tool calls are answers when the run has no answer
    /// schema (default [`TextAnswers::Substantive`]).
    pub fn with_text_answers(mut self, policy: TextAnswers) -> ReactSkill {
        self.text_answers = policy;
        self
    }

    /// Prices the calls of the model named `model` at `pricing`: a run's
    /// [`ReactState::cost`](super::ReactState::cost) sums the cost of the tokens its priced calls used.
    pub fn with_pricing(mut self, model: impl Into<String>, pricing: Pricing) -> ReactSkill {
        self.pricing.insert(model.into(), pricing);
        self
    }

    /// The model to use for a tool's `preferred_model` (a tier such as `smart`, or a
    /// model's name). After a step whose tools prefer a model, the next step asks that
    /// model: a named model wins over a tier, a smarter tier over a faster one, and a
    /// preference with no model given here is ignored. Other steps ask the run's model.
    pub fn with_model_for(
        mut self,
        preferred: PreferredModel,
        model: Arc<dyn ChatModel>,
    ) -> ReactSkill {
        let operation = completion(model.as_ref());
        self.preferred.retain(|(p, _, _)| *p != preferred);
        self.preferred.push((preferred, model, operation));
        self
    }

    /// The model the tools called in a step prefer for the next one, if one was given.
    pub(super) fn preferred_after(&self, calls: &[ToolCallRequest]) -> Option<usize> {
        if self.preferred.is_empty() {
            return None;
        }
        let wanted: Vec<PreferredModel> = calls
            .iter()
            .filter_map(|c| self.names.key_of(&c.name))
            .filter_map(|key| self.preferences.get(key).cloned())
            .collect();
        let index_of = |p: &PreferredModel| self.preferred.iter().position(|(q, _, _)| q == p);
        let named = wanted
            .iter()
            .filter(|p| matches!(p, PreferredModel::Model(_)))
            .find_map(index_of);
        named.or_else(|| {
            [ModelHint::Smart, ModelHint::Balanced, ModelHint::Fast]
                .into_iter()
                .map(PreferredModel::Hint)
                .filter(|tier| wanted.contains(tier))
                .find_map(|tier| index_of(&tier))
        })
    }

    /// Replaces the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> ReactSkill {
        self.system_prompt = prompt.into();
        self.system_normal = normal(&self.system_prompt);
        self
    }

    /// Sets the most steps a run may take (default 10).
    pub fn with_max_steps(mut self, steps: usize) -> ReactSkill {
        self.max_steps = steps;
        self
    }

    /// Sets how many failed calls a run tolerates (default 3). Only failed tool
    /// calls spend it (seed 004); replies that are not answers have their own limit,
    /// [`with_repair_turns`](Self::with_repair_turns).
    pub fn with_error_budget(mut self, budget: u32) -> ReactSkill {
        self.error_budget = budget;
        self
    }

    /// Sets how many replies that are not answers a run takes, each a repair turn
    /// telling the model what is wrong (default 3); the next ends the run, not
    /// done, with [`StopReason::RepairTurnsSpent`](super::StopReason::RepairTurnsSpent).
    pub fn with_repair_turns(mut self, turns: u32) -> ReactSkill {
        self.repair_turns = turns;
        self
    }

    /// Gives invalid arguments one repair round through `hook`.
    pub fn with_repair(mut self, hook: impl RepairHook + 'static) -> ReactSkill {
        self.repair = Some(Arc::new(hook));
        self
    }

    /// Adds tools that are not offered at first: the model gets a `tool_search` tool
    /// instead, and each tool it finds is offered from the next step on. For large
    /// toolsets, where offering everything would drown the model.
    pub fn with_deferred(
        mut self,
        registry: &Registry,
        keys: &[&str],
    ) -> Result<ReactSkill, AgentError> {
        for key in keys {
            let tool = resolve(&mut self.preferences, registry, key)?;
            let name = offer(&mut self.names, tool.key())?;
            self.deferred.insert(
                tool.key().to_owned(),
                ToolDefinition {
                    name,
                    description: tool.spec().description.clone(),
                    parameters: tool.spec().input_schema.clone(),
                },
            );
            if !self.deferred_tools.iter().any(|t| t.key() == tool.key()) {
                self.deferred_tools.push(Arc::clone(tool));
            }
        }
        self.deferred_index = Some(ToolIndex::over(
            self.deferred_tools.iter().map(|t| &**t),
            self.embedder.clone(),
        ));
        let search = search_definition();
        if !self.tools.iter().any(|t| t.name == search.name) {
            Arc::make_mut(&mut self.tools).push(search);
        }
        Ok(self.with_aliases())
    }

    /// The tool definitions the model is offered at the start of a run (with
    /// `tool_search` when some tools are deferred).
    pub fn tools(&self) -> Arc<Vec<ToolDefinition>> {
        Arc::clone(&self.tools)
    }

    /// Requires the answer to be a `T`: its schema
    /// ([`tackle_core::schema::answer_schema`]) becomes the skill's answer schema (see
    /// [`with_answer_schema`](Self::with_answer_schema)), and a run
    /// reads the answer as a `T`.
    pub fn with_answer<T: JsonSchema + 'static>(self) -> Result<ReactSkill, AgentError> {
        let mut skill = self.with_answer_schema(tackle_core::schema::answer_schema::<T>())?;
        skill.answer_type = Some(TypeId::of::<T>());
        Ok(skill)
    }
}

/// The system prompt of a skill that sets none.
const DEFAULT_SYSTEM_PROMPT: &str = "You solve the task step by step. Call tools when they help; answer in plain text when you are done.";

/// The name of the search tool offered when some tools are deferred.
pub const SEARCH_TOOL: &str = "tool_search";

fn search_definition() -> ToolDefinition {
    ToolDefinition {
        name: SEARCH_TOOL.to_owned(),
        description: "Find more tools by describing what you need; the tools found can be called from the next step on.".to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do."},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "How many tools at most (default 5)."}
            },
            "required": ["query"]
        }),
    }
}

/// The tool `key` names in `registry`, its preferred model (if any) noted in
/// `preferences`: what offering a tool and deferring one both do first.
fn resolve<'r>(
    preferences: &mut HashMap<String, PreferredModel>,
    registry: &'r Registry,
    key: &str,
) -> Result<&'r Arc<Tool>, AgentError> {
    let tool = registry
        .resolve(key)
        .map_err(|error| AgentError::UnknownTool {
            key: key.to_owned(),
            error,
        })?;
    if let Some(preferred) = &tool.spec().preferred_model {
        preferences.insert(tool.key().to_owned(), preferred.clone());
    }
    Ok(tool)
}

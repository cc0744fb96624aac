//! [`Agent`]: what an agent is (its model, tools, instructions, answer type and
//! limits), and [`AgentRun`], the one way to run it.
//!
//! An agent is a definition: it holds no runtime, no registry and no run. Each run is
//! made on a [`Run`] (which owns the run's cassette, cancellation, events and memory),
//! and the agent's tools are found in that run's registry when the run starts, so one
//! agent serves many runtimes and many runs at once.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tackle::agent::model::{ChatResponse, ScriptedModel, ToolCallRequest};
//! use tackle::{tool, Agent, Run, Runtime};
//!
//! /// Adds two integers.
//! #[tool(namespace = "math", side_effects = none)]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = ScriptedModel::new([
//!     ChatResponse::calls("adding", vec![ToolCallRequest::new("c1", "math_add", json!({"a": 2, "b": 3}))]),
//!     ChatResponse::text("2 + 3 = 5"),
//! ]);
//! let agent = Agent::new(model).tools([add::KEY]).max_steps(4);
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let answer = agent.run(&Run::new(&runtime), "What is 2 + 3?").await?;
//! assert_eq!(answer.value, "2 + 3 = 5");
//! assert_eq!(answer.state.tool_calls[0].result, Some(json!(5)));
//! # Ok(())
//! # }
//! ```
//!
//! The run's model calls need no grant from your program (it chose the model); its
//! tool calls are made with the caller's context
//! ([`AgentRun::context`], by default an empty one: tools that require a permission
//! need it granted there). Run inside a tool call, an agent's model calls need their
//! grants as any call does (see `docs/security.md`).

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use tackle_core::call::Runtime;
use tackle_core::context::ToolContext;
use tackle_core::run::Run;

use super::{
    AgentError, Answer, LocalEffects, ReactCheckpoint, ReactSkill, ReactState, StepControl,
    StepEffects, StopReason,
};
use crate::model::{ChatModel, Message};

/// How a run's final state becomes its answer.
type Decode<T> = fn(ReactState) -> Result<(T, ReactState), AgentError>;

/// An agent: a model, the tools it may call, its instructions, the type of its answer
/// and its limits. It holds no runtime: its tools are found in the registry of each
/// run it makes ([`Agent::run`]).
///
/// `T` is the answer's type: `String` (the model's final text) unless set with
/// [`answer`](Agent::answer). The loop it runs is the ReAct loop of
/// [`ReactSkill`] (seed 004), whose state
/// ([`ReactState`]) every answer carries.
pub struct Agent<T = String> {
    /// The model and every setting but the tools (a skill offering none).
    settings: ReactSkill,
    /// The keys of the tools offered from the start.
    tools: Vec<String>,
    /// The keys of the tools found through `tool_search`.
    deferred: Vec<String>,
    /// An answer type whose schema does not compile (reported when a run starts).
    invalid: Option<String>,
    decode: Decode<T>,
    /// The loop made for the last runtime run on (see [`Agent::skill`]).
    kept: Mutex<Option<(Weak<Runtime>, Arc<ReactSkill>)>>,
    answer: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Agent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("settings", &self.settings)
            .field("tools", &self.tools)
            .field("deferred", &self.deferred)
            .field("answer", &std::any::type_name::<T>())
            .finish()
    }
}

fn text_answer(state: ReactState) -> Result<(String, ReactState), AgentError> {
    match state.final_answer.clone() {
        Some(text) if state.done => Ok((text, state)),
        _ => Err(AgentError::NoAnswer {
            state: Box::new(state),
        }),
    }
}

fn typed_answer<T: DeserializeOwned>(state: ReactState) -> Result<(T, ReactState), AgentError> {
    let Some(value) = state.final_value.clone().filter(|_| state.done) else {
        return Err(AgentError::NoAnswer {
            state: Box::new(state),
        });
    };
    match serde_json::from_value(value) {
        Ok(value) => Ok((value, state)),
        Err(e) => Err(AgentError::AnswerType {
            type_name: std::any::type_name::<T>(),
            message: e.to_string(),
            state: Box::new(state),
        }),
    }
}

impl Agent<String> {
    /// An agent of `model` that answers in text, offering no tools yet, with the
    /// default instructions and limits (10 steps, an error budget of 3 failed calls, 3
    /// repair turns).
    pub fn new(model: impl ChatModel + 'static) -> Agent<String> {
        Agent::with_model(Arc::new(model))
    }

    /// [`Agent::new`] for a model already shared.
    pub fn with_model(model: Arc<dyn ChatModel>) -> Agent<String> {
        Agent {
            settings: ReactSkill::bare(model),
            tools: Vec::new(),
            deferred: Vec::new(),
            invalid: None,
            decode: text_answer,
            kept: Mutex::new(None),
            answer: PhantomData,
        }
    }
}

impl<T> Agent<T> {
    /// Offers the tools `keys` (`namespace.name@version`, or any query the registry
    /// resolves, such as `my_tool::KEY`). They are found in the registry of each run's
    /// runtime when the run starts: a key that names no tool there fails that run with
    /// [`AgentError::UnknownTool`], naming the closest keys.
    pub fn tools<K: AsRef<str>>(mut self, keys: impl IntoIterator<Item = K>) -> Agent<T> {
        self.forget();
        self.tools
            .extend(keys.into_iter().map(|k| k.as_ref().to_owned()));
        self
    }

    /// Offers the tools `keys` through a `tool_search` tool instead of at the start: a
    /// tool the model finds is offered from the next step on. For toolsets too large to
    /// offer whole (see [`ReactSkill::with_deferred`]).
    pub fn deferred_tools<K: AsRef<str>>(mut self, keys: impl IntoIterator<Item = K>) -> Agent<T> {
        self.forget();
        self.deferred
            .extend(keys.into_iter().map(|k| k.as_ref().to_owned()));
        self
    }

    /// Replaces the instructions (the system prompt).
    pub fn instructions(mut self, text: impl Into<String>) -> Agent<T> {
        self.forget();
        self.settings = self.settings.with_system_prompt(text);
        self
    }

    /// Sets the most steps a run takes (default 10).
    pub fn max_steps(mut self, steps: usize) -> Agent<T> {
        self.forget();
        self.settings = self.settings.with_max_steps(steps);
        self
    }

    /// Sets how many failed tool calls a run tolerates (default 3).
    pub fn error_budget(mut self, budget: u32) -> Agent<T> {
        self.forget();
        self.settings = self.settings.with_error_budget(budget);
        self
    }

    /// Sets how many replies that are not answers a run takes before it stops
    /// (default 3; see [`ReactSkill::with_repair_turns`]).
    pub fn repair_turns(mut self, turns: u32) -> Agent<T> {
        self.forget();
        self.settings = self.settings.with_repair_turns(turns);
        self
    }

    /// Sets any other setting of the loop (pricing, a repair hook, models for tools'
    /// preferred models, an embedder for tool search, which texts are answers) with
    /// [`ReactSkill`]'s `with_*` methods:
    /// `agent.configure(|skill| skill.with_pricing("gpt-4o-mini", price))`.
    pub fn configure(mut self, change: impl FnOnce(ReactSkill) -> ReactSkill) -> Agent<T> {
        self.forget();
        self.settings = change(self.settings);
        self
    }

    /// An agent whose answer is a `U`: the model must answer with a JSON document
    /// matching `U`'s schema (sent natively to a model whose provider enforces schemas,
    /// told in the instructions otherwise); a reply that does not parse or match is a
    /// repair turn, and [`Answer::value`] is the `U` read from it.
    pub fn answer<U: JsonSchema + DeserializeOwned + 'static>(self) -> Agent<U> {
        let (settings, invalid) = match self.settings.clone_settings().with_answer::<U>() {
            Ok(settings) => (settings, None),
            Err(error) => (self.settings, Some(error.to_string())),
        };
        Agent {
            settings,
            tools: self.tools,
            deferred: self.deferred,
            invalid,
            decode: typed_answer::<U>,
            kept: Mutex::new(None),
            answer: PhantomData,
        }
    }

    /// Drops the loop kept for the last runtime: the settings change.
    fn forget(&mut self) {
        *self.kept.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The loop a run on `run` runs: the agent's settings, offering its tools as the
    /// registry of `run`'s runtime has them. Made once per runtime and kept (while the
    /// runtime has no live tools, whose set may change between runs).
    pub fn skill(&self, run: &Run) -> Result<Arc<ReactSkill>, AgentError> {
        if let Some(message) = &self.invalid {
            return Err(AgentError::InvalidAnswerSchema(message.clone()));
        }
        let runtime = run.runtime();
        let registry = runtime.tools();
        let fixed = matches!(registry, Cow::Borrowed(_));
        if fixed {
            let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((of, skill)) = kept.as_ref() {
                if Weak::ptr_eq(of, &Arc::downgrade(runtime)) {
                    return Ok(Arc::clone(skill));
                }
            }
        }
        let keys: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        let deferred: Vec<&str> = self.deferred.iter().map(String::as_str).collect();
        let skill = Arc::new(self.settings.offering(&registry, &keys, &deferred)?);
        if fixed {
            *self.kept.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((Arc::downgrade(runtime), Arc::clone(&skill)));
        }
        Ok(skill)
    }

    /// Runs the agent on `task` as calls of `run`. Await what this returns, after
    /// setting any of [`AgentRun`]'s options:
    ///
    /// ```text
    /// let answer = agent.run(&run, "task").await?;                     // the answer
    /// let answer = agent.run(&run, "task").context(&ctx).await?;       // the caller's grants, secrets
    /// let answer = agent.run(&run, "again").history(&earlier).await?;  // continue a conversation
    /// ```
    pub fn run<'a>(&'a self, run: &'a Run, task: impl Into<String>) -> AgentRun<'a, T> {
        AgentRun {
            agent: self,
            run,
            task: task.into(),
            ctx: None,
            history: &[],
            start: None,
            observe: None,
            effects: Local,
        }
    }
}

/// The effects of a run made here, through the run's door (the default).
#[derive(Clone, Copy, Debug)]
pub struct Local;

/// A step observer ([`AgentRun::observe`]).
type Observer<'a> = &'a mut (dyn FnMut(&ReactState) -> StepControl + Send);

/// A run of an [`Agent`] about to start: set its options, then `.await` it for the
/// [`Answer`]. Made by [`Agent::run`].
///
/// A run that ends without an answer is [`AgentError::NoAnswer`] with its state (its
/// `stop_reason` says why: the step limit, the error budget, repair turns); one paused
/// by its observer is [`AgentError::Paused`], with where to go on from.
#[must_use = "a run does nothing until it is awaited"]
pub struct AgentRun<'a, T, E = Local> {
    agent: &'a Agent<T>,
    run: &'a Run,
    task: String,
    ctx: Option<&'a ToolContext>,
    history: &'a [Message],
    start: Option<ReactCheckpoint>,
    observe: Option<Observer<'a>>,
    effects: E,
}

impl<T, E> std::fmt::Debug for AgentRun<'_, T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("agent", &self.agent)
            .field("run", &self.run.id())
            .field("task", &self.task)
            .field("history", &self.history.len())
            .field("from", &self.start.as_ref().map(|c| c.state.step_index))
            .finish()
    }
}

impl<'a, T, E> AgentRun<'a, T, E> {
    /// The caller: its grants (for the tools that require permissions), secrets and
    /// resources. By default an empty context.
    pub fn context(mut self, ctx: &'a ToolContext) -> Self {
        self.ctx = Some(ctx);
        self
    }

    /// Continues a conversation: `history` is the messages of earlier turns
    /// ([`Answer::messages`] of each, in order), and the task is the user's next
    /// message.
    pub fn history(mut self, history: &'a [Message]) -> Self {
        self.history = history;
        self
    }

    /// Starts from `checkpoint` (where a run paused, or a start made elsewhere) instead
    /// of from the task's first step. The checkpoint's task must be this run's task.
    pub fn from(mut self, checkpoint: ReactCheckpoint) -> Self {
        self.start = Some(checkpoint);
        self
    }

    /// Shows `observe` the state at each step boundary (after a step's observations,
    /// before the next model call); when it answers [`StepControl::Pause`] the run stops
    /// there with [`AgentError::Paused`]. For the calls themselves as they happen, give
    /// the [`Run`] an event sink.
    pub fn observe(
        mut self,
        observe: &'a mut (dyn FnMut(&ReactState) -> StepControl + Send),
    ) -> Self {
        self.observe = Some(observe);
        self
    }

    /// Sends the run's model and tool calls to `effects` instead of this run's door:
    /// for an engine that runs them elsewhere (`tackle-temporal` makes each an
    /// activity), while the loop decides here.
    pub fn effects<F: StepEffects>(self, effects: &'a F) -> AgentRun<'a, T, &'a F> {
        AgentRun {
            agent: self.agent,
            run: self.run,
            task: self.task,
            ctx: self.ctx,
            history: self.history,
            start: self.start,
            observe: self.observe,
            effects,
        }
    }
}

/// The empty context of a run given none.
static NO_CONTEXT: std::sync::LazyLock<ToolContext> = std::sync::LazyLock::new(ToolContext::new);

impl<'a, T: 'a, E> AgentRun<'a, T, E> {
    /// Runs the loop with `effects` (given the skill made for this run).
    async fn go<X: StepEffects>(
        self,
        skill: &ReactSkill,
        effects: &X,
    ) -> Result<Answer<T>, AgentError> {
        let AgentRun {
            agent,
            task,
            history,
            start,
            observe,
            ..
        } = self;
        let start = match start {
            Some(checkpoint) if checkpoint.task != task => {
                return Err(AgentError::CheckpointTask {
                    task,
                    checkpoint: checkpoint.task,
                })
            }
            Some(checkpoint) => checkpoint,
            None => skill.start(history, &task),
        };
        let first_new = start.messages.len().saturating_sub(1);
        let mut keep_going = |_: &ReactState| StepControl::Continue;
        let observe: Observer<'_> = match observe {
            Some(observe) => observe,
            None => &mut keep_going,
        };
        let mut at = skill.run_from(start, effects, observe).await?;
        if matches!(at.state.stop_reason, Some(StopReason::Paused { .. })) {
            return Err(AgentError::Paused {
                checkpoint: Box::new(at),
            });
        }
        let messages = at.messages.split_off(first_new.min(at.messages.len()));
        let (value, state) = (agent.decode)(at.state)?;
        Ok(Answer {
            value,
            state,
            messages,
        })
    }
}

/// A boxed future of a run's answer.
type AnswerFuture<'a, T> = Pin<Box<dyn Future<Output = Result<Answer<T>, AgentError>> + Send + 'a>>;

impl<'a, T: Send + 'a> IntoFuture for AgentRun<'a, T, Local> {
    type Output = Result<Answer<T>, AgentError>;
    type IntoFuture = AnswerFuture<'a, T>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let skill = self.agent.skill(self.run)?;
            let ctx = self.ctx.unwrap_or(&NO_CONTEXT);
            let effects = LocalEffects::new(&skill, self.run, ctx);
            self.go(&skill, &effects).await
        })
    }
}

impl<'a, T: 'a, F: StepEffects> IntoFuture for AgentRun<'a, T, &'a F> {
    type Output = Result<Answer<T>, AgentError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Answer<T>, AgentError>> + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let skill = self.agent.skill(self.run)?;
            let effects = self.effects;
            self.go(&skill, effects).await
        })
    }
}

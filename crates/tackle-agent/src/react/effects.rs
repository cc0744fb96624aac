//! Where a run's effects go ([`StepEffects`]): its model calls and its tool calls,
//! through this process's door ([`LocalEffects`]) or an engine's.

use std::borrow::Cow;
use std::future::Future;

use serde_json::Value;
use tackle_core::call::Operation;
use tackle_core::context::ToolContext;
use tackle_core::error::ToolError;
use tackle_core::executor::ToolCall;
use tackle_core::run::Run;

use super::ReactSkill;
use crate::model::{
    complete, complete_growing, ChatModel, ChatRequest, ChatResponse, Completion, Conversation,
    ModelError, ToolCallRequest,
};

/// Where a run's effects go: its model calls and its tool calls.
///
/// A run made here ([`Agent::run`](super::Agent::run)) sends them through the
/// door as calls of its run,
/// in this process, with the caller's context. A run driven elsewhere implements this
/// trait: `tackle-temporal` makes each call an activity that a worker runs through its
/// own door, while the loop itself, which only decides, runs as a workflow. Given the
/// same outcomes, the loop takes the same steps: it keeps no clock, no randomness and
/// no state besides what it is given.
pub trait StepEffects {
    /// Asks a model for step `step`'s reply to `request`: the run's model when `model`
    /// is `None`, else the `model`-th model given with [`ReactSkill::with_model_for`]
    /// (see [`ReactSkill::ask_model`]).
    fn complete(
        &self,
        step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ModelError>>;

    /// Runs step `step`'s tool calls through the door, one outcome per call, in call
    /// order (see [`ReactSkill::run_calls`]).
    fn execute(
        &self,
        step: usize,
        calls: Vec<ToolCall>,
    ) -> impl Future<Output = Vec<Result<Value, ToolError>>>;

    /// Asks `skill`'s repair hook ([`ReactSkill::with_repair`]) for new arguments for
    /// `call`, which failed validation with `error` ([`ReactSkill::repair_arguments`]).
    /// Here, by default. An engine that replays the loop runs it as an effect, so
    /// that a hook that is not deterministic (a model, a clock) cannot change a
    /// replay: `tackle-temporal` makes it an activity.
    fn repair(
        &self,
        skill: &ReactSkill,
        call: &ToolCallRequest,
        error: &ToolError,
    ) -> impl Future<Output = Option<Value>> {
        std::future::ready(skill.repair_arguments(call, error))
    }

    /// Searches `skill`'s deferred tools for `tool_search`, its embedder tier
    /// included ([`ReactSkill::search_deferred`]): the keys found, best first. Here,
    /// by default; an engine that replays the loop runs it as an effect (an
    /// embedder may call a service).
    fn search(
        &self,
        skill: &ReactSkill,
        query: &str,
        k: usize,
    ) -> impl Future<Output = Vec<String>> {
        std::future::ready(skill.search_deferred(query, k))
    }
}

/// The effects of a run in this process: calls of `run` through its runtime's door,
/// with the caller's context. Each serves one conversation of the loop.
pub(crate) struct LocalEffects<'a> {
    skill: &'a ReactSkill,
    run: &'a Run,
    /// The context of the run's tool calls: the caller's.
    ctx: &'a ToolContext,
    /// The context of the run's model calls (see [`model_context`]).
    model_ctx: Cow<'a, ToolContext>,
    conversation: Conversation,
}

impl<'a> LocalEffects<'a> {
    /// The effects of a run of `skill` on `run`, for the caller `ctx`.
    pub(crate) fn new(skill: &'a ReactSkill, run: &'a Run, ctx: &'a ToolContext) -> Self {
        LocalEffects {
            skill,
            run,
            ctx,
            model_ctx: model_context(skill, ctx),
            conversation: Conversation::new(),
        }
    }
}

/// The context a run's model calls are made with.
///
/// A program that runs its own agent chose its models: a caller outside any tool call
/// (the program's own code) needs no grant for them, so the models' permissions are
/// granted for the model calls alone (the tool calls keep the caller's grants, and no
/// tool sees these). Inside a tool call (a tool that runs an agent, on behalf of
/// whoever called it: an MCP client, another agent, a pipeline served as a tool) the
/// model calls need the grants as any call does: deny by default.
fn model_context<'a>(skill: &ReactSkill, ctx: &'a ToolContext) -> Cow<'a, ToolContext> {
    if ctx.call_id().is_some() {
        return Cow::Borrowed(ctx);
    }
    // The permissions each model's completion operation requires (made once, with the
    // skill): nothing to copy when the caller grants them already.
    let operations =
        std::iter::once(&skill.completion).chain(skill.preferred.iter().map(|(_, _, op)| op));
    let required = || {
        operations
            .clone()
            .flat_map(|op| op.spec().permissions.iter())
    };
    if required().all(|permission| ctx.capabilities().allows(permission)) {
        return Cow::Borrowed(ctx);
    }
    Cow::Owned(required().fold(ctx.clone(), |granted, permission| {
        granted.with_grant(permission.clone())
    }))
}

impl StepEffects for LocalEffects<'_> {
    fn complete(
        &self,
        _step: usize,
        model: Option<usize>,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, ModelError>> {
        // The loop only appends to its conversation between model calls.
        self.conversation.asking(request.messages.len());
        let (model, operation) = self.skill.model_at(model);
        complete_growing(
            self.run,
            operation,
            model,
            request,
            &self.model_ctx,
            Some(&self.conversation),
        )
    }

    fn execute(
        &self,
        _step: usize,
        calls: Vec<ToolCall>,
    ) -> impl Future<Output = Vec<Result<Value, ToolError>>> {
        self.skill.run_calls(self.run, calls, self.ctx)
    }
}

impl ReactSkill {
    /// Asks a model through the door as a call of `run`: the skill's model when
    /// `model` is `None`, else the `model`-th model given with
    /// [`with_model_for`](Self::with_model_for) (`None` past the last). The effect of
    /// a run's model call ([`StepEffects::complete`]). Outside a tool call the skill's
    /// models need no grant from `ctx` (the program chose them); inside one they do
    /// (see `docs/security.md`).
    pub async fn ask_model(
        &self,
        run: &Run,
        model: Option<usize>,
        request: &ChatRequest,
        ctx: &ToolContext,
    ) -> Result<ChatResponse, ModelError> {
        let (model, operation) = self.model_at(model);
        complete(run, operation, model, request, &model_context(self, ctx)).await
    }

    /// Runs tool calls as one batch of `run` (in parallel where safe, every call
    /// through the door), one outcome per call, in call order. The effect of a run's
    /// tool calls ([`StepEffects::execute`]).
    pub async fn run_calls(
        &self,
        run: &Run,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<Result<Value, ToolError>> {
        run.execute_results(calls, ctx).await
    }

    /// The model `model` names (see [`ask_model`](Self::ask_model)), with its
    /// completion operation.
    pub(super) fn model_at(
        &self,
        model: Option<usize>,
    ) -> (&dyn ChatModel, &Operation<Completion>) {
        match model.and_then(|i| self.preferred.get(i)) {
            Some((_, model, operation)) => (model.as_ref(), operation),
            None => (self.model.as_ref(), &self.completion),
        }
    }
}

//! What the workflow sends its activities and what they answer: a model call (sent as
//! a delta of the run's previous request), a repair, a search, a tool call and how it
//! ended. Each is an activity's payload in the run's history.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_agent::durable::{ApprovalRecord, PendingApproval};
use tackle_agent::model::{ChatRequest, ToolCallRequest};
use tackle_core::ToolError;

/// A model call, as an activity's input.
///
/// So that a run's history grows with its steps, not with their square, a request
/// after the run's first goes as what it adds to the one before ([`Extends`]): the
/// new messages only. The worker that runs the call keeps the run's recent requests;
/// one that does not have the previous request (another worker ran it, or it
/// restarted) rebuilds it from the run's history, which holds every delta. That
/// rebuild reads the whole history (time linear in the run's length, memory of one
/// request), so a run whose model calls land on many workers costs more CPU on the
/// workers, not more history; model calls are not yet routed to the worker that ran
/// the previous one. The rebuild reads payloads as the default JSON converter writes
/// them (a payload codec, such as encryption, is not supported yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The agent's name.
    pub agent: String,
    /// Which model ([`ReactSkill::ask_model`]).
    ///
    /// [`ReactSkill::ask_model`]: tackle_agent::react::ReactSkill::ask_model
    pub model: Option<usize>,
    /// The call's number among the run's model calls, from 0.
    #[serde(default)]
    pub seq: u64,
    /// The request: whole, or (with `extends`) its new messages, and its tools and
    /// answer schema when they changed.
    pub request: ChatRequest,
    /// What of the previous request (call `seq - 1`) this one keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<Extends>,
}

/// What a model request keeps of the run's previous one ([`ModelCall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extends {
    /// How many of its messages come first, unchanged.
    pub kept: usize,
    /// Whether its tools and answer schema are the previous ones (and left out).
    pub same_tools: bool,
}

impl ModelCall {
    /// The whole request, given the previous one (`None` for a call that extends
    /// nothing): `None` when the call extends a request it is not given, or keeps
    /// more messages than it has.
    pub fn whole(&self, previous: Option<&ChatRequest>) -> Option<ChatRequest> {
        let Some(extends) = self.extends else {
            return Some(self.request.clone());
        };
        let previous = previous?;
        let kept = previous.messages.get(..extends.kept)?;
        let mut whole = ChatRequest {
            messages: Vec::with_capacity(kept.len() + self.request.messages.len()),
            ..self.request.clone()
        };
        whole.messages.extend_from_slice(kept);
        whole.messages.extend_from_slice(&self.request.messages);
        if extends.same_tools {
            whole.tools.clone_from(&previous.tools);
            whole.response_schema.clone_from(&previous.response_schema);
        }
        Some(whole)
    }
}

/// A repair of a call's invalid arguments, as an activity's input: the agent's
/// repair hook runs on a worker, so the workflow replays its answer from history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairCall {
    /// The agent's name.
    pub agent: String,
    /// The call as the model made it.
    pub call: ToolCallRequest,
    /// Why its arguments were refused.
    pub error: ToolError,
}

/// A `tool_search` over the agent's deferred tools, as an activity's input (its
/// embedder may call a service: it runs on a worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchCall {
    /// The agent's name.
    pub agent: String,
    /// What the model searched for.
    pub query: String,
    /// How many results, at most.
    pub k: usize,
}

/// A tool call, as an activity's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoorCall {
    /// The agent's name.
    pub agent: String,
    /// The model's id for the call.
    pub id: String,
    /// The tool's key.
    pub key: String,
    /// The arguments.
    pub input: Value,
    /// The decisions on the call's approval requests.
    #[serde(default)]
    pub decisions: Vec<ApprovalRecord>,
}

/// How a tool call's activity ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DoorOutcome {
    /// The door ran the call, or refused it: its result.
    Done {
        /// The call's result.
        result: Result<Value, ToolError>,
    },
    /// The call needs decisions it does not have; nothing ran.
    AwaitingApproval {
        /// The requests.
        requests: Vec<PendingApproval>,
    },
    /// An earlier attempt of this call may have run, and running it again is not safe;
    /// or the run was cancelled while this write ran and it did not stop within the
    /// grace window, so it may still land.
    UnknownOutcome {
        /// This attempt's number.
        attempt: u32,
    },
}

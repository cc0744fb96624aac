//! The client on the other side of a served call: its model and its human.
//!
//! While a server handles a client's request, a tool it runs can reach that client:
//! [`Client::current`] is the connection of the request being served (`None`
//! elsewhere). Through it a tool uses tackle's own abstractions, backed by the client:
//!
//! * [`Client::model`] is a [`ChatModel`] whose completions the client makes
//!   (`sampling/createMessage`): the client's model and its user's consent, not the
//!   server's API key. As every model, it runs through the door when called through
//!   [`tackle_agent::model::complete`] or a ReAct run (key
//!   `llm.mcp-client.complete@sampling`, permission `llm:mcp-client`); called
//!   directly (`complete`), it asks the client without the door.
//! * [`Client::approver`] is an [`Approver`] that asks the human at the client
//!   (`elicitation/create`): the request names the tool and shows its exact arguments
//!   (secret ones as `[REDACTED]`), the answer approves that one call only, bound to
//!   those arguments as every approval is.
//!   [`McpServer::with_client_approval`](crate::McpServer::with_client_approval) makes
//!   it the approver of every served call.
//! * [`Client::elicit`] asks the human anything, with a form schema (SEP-1034 defaults
//!   and SEP-1330 enums pass through as given).
//!
//! * [`Client::roots`] lists the client's roots (`roots/list`).
//!
//! Under MCP's 2026-07-28 revision a server sends no requests: each question is
//! answered in another round of the same request (see [`crate::rounds`]). The tool
//! asks the same way; the question ends its call with
//! [`ClientError::InputRequired`] (a tool passes it on with `?`), the client is sent
//! the question, and the retried call gets the answer at once. A tool that asks
//! before it acts runs its effects once. [`Client::elicit_as`] and
//! [`Client::sample_as`] name the question's key, which a client sees; the others
//! number them (`elicitation-1`, `sampling-1`, `roots-1`, `approval-1`).
//!
//! A client is asked only for what it declared (`sampling`, `elicitation`, `roots`): otherwise
//! the call fails at once with [`ClientError::NotSupported`] (an approval is denied).
//! A person has [`ELICITATION_TIMEOUT`] to answer. Client approval is the *requesting*
//! client's approval: an automated client can approve its own calls, so use it where
//! the client is a person's, and keep the runtime's approver where it is not.
//!
//! The connection is known to the task that handles the request; work handed to
//! another task or thread does not see it.

// MCP's sampling is deprecated by the 2026-07-28 revision (SEP-2577) and rmcp marks it so;
// it is served for clients of the 2025-06-18 and 2025-11-25 revisions.
#![allow(deprecated)]

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams, ElicitResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::RoleServer;
use serde_json::{json, Value};
use tackle_agent::model::{ChatModel, ChatRequest, ChatResponse, ModelError, ModelFuture, Role};
use tackle_core::approval::{ApprovalDecision, ApprovalFuture, ApprovalRequest, Approver};

use crate::rounds::Rounds;
use crate::task_input::{Gate, TaskInbox};

tokio::task_local! {
    static CURRENT: Client;
}

/// How long a person at the client has to answer an elicitation (an approval
/// included): 10 minutes; then the request fails, and an approval is denied.
pub const ELICITATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The connected client of the request being served. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    /// The connection the request came on (`None` for a task resumed by the server
    /// itself, which asks only through its inbox).
    peer: Option<Peer<RoleServer>>,
    /// What the client declared with the request (2026-07-28); `None`: what it
    /// declared at `initialize`.
    capabilities: Option<ClientCapabilities>,
    /// The request's input rounds, when it is of the 2026-07-28 revision.
    rounds: Option<Arc<Rounds>>,
    /// How a task's call asks, when the call is a task's of a 2026-07-28 client.
    task: Option<TaskAsking>,
}

/// How a task's call asks its client: through the task's inbox (see
/// [`crate::task_input`]), or, while the request that made the task still takes its
/// questions (see [`Gate`]), in that request's rounds.
#[derive(Clone, Debug)]
pub(crate) struct TaskAsking {
    /// The task's inbox.
    pub(crate) inbox: Arc<TaskInbox>,
    /// The request that made the task, its rounds and its gate, when its questions
    /// go back in its answer first.
    pub(crate) request: Option<(Arc<Rounds>, Arc<Gate>)>,
}

/// What a client answered to an elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicited {
    /// It accepted, with the form's content.
    Accept(Value),
    /// It declined.
    Decline,
    /// It cancelled (closed the form).
    Cancel,
}

/// Why asking the client failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client did not declare the capability (`sampling`, `elicitation`), so it
    /// may not be asked.
    #[error("the MCP client does not offer {0}")]
    NotSupported(&'static str),
    /// The request could not be made, or the client answered with an error.
    #[error("the MCP client did not answer: {0}")]
    Failed(String),
    /// The question goes to the client in the answer to its request (MCP 2026-07-28):
    /// the call ends here, and the client retries it with the answer under `key`.
    /// A tool passes this on (`?`) rather than working around it.
    #[error("the MCP client is asked for input `{key}`; the call is retried with the answer")]
    InputRequired {
        /// The question's key.
        key: String,
    },
    /// The client accepted the form with an answer that does not fit the form's
    /// schema (a string where an object was asked for, a field of the wrong type, a
    /// required field left out): it is not given as the person's answer.
    #[error("the MCP client's answer does not fit the form: {reason}")]
    InvalidAnswer {
        /// What the client sent.
        content: Value,
        /// Where it does not fit the schema.
        reason: String,
    },
}

/// The longest account of why an answer does not fit its form.
const REASON_CHARS: usize = 512;

/// Checks a form's answer against the form's schema: why it does not fit, if it
/// does not (a schema that does not compile fits nothing).
pub(crate) fn check_answer(content: &Value, schema: &Value) -> Result<(), String> {
    let validator = tackle_core::SchemaValidator::compile(schema)
        .map_err(|e| format!("the form's schema is not valid JSON Schema: {e}"))?;
    let result = validator.validate(content);
    if result.valid {
        return Ok(());
    }
    let mut reason = result
        .issues
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if let Some((cut, _)) = reason.char_indices().nth(REASON_CHARS) {
        reason.truncate(cut);
        reason.push_str("...");
    }
    Err(reason)
}

impl Client {
    /// The client of `context`'s request.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Client {
        Client {
            peer: Some(context.peer.clone()),
            // A 2026-07-28 request declares them itself; a session did at `initialize`
            // (read when a tool asks, not on every call).
            capabilities: context.meta.client_capabilities(),
            rounds: None,
            task: None,
        }
    }

    /// The client of a task's call that asks through `asking`: the client that
    /// declared `capabilities`, on `peer` when a request of it is being served.
    pub(crate) fn for_task(
        peer: Option<Peer<RoleServer>>,
        capabilities: ClientCapabilities,
        asking: TaskAsking,
    ) -> Client {
        Client {
            peer,
            capabilities: Some(capabilities),
            rounds: None,
            task: Some(asking),
        }
    }

    /// What the client declared, as far as this request knows.
    pub(crate) fn capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities.clone().or_else(|| {
            self.peer
                .as_ref()
                .and_then(|peer| peer.peer_info())
                .map(|info| info.capabilities.clone())
        })
    }

    /// The connection to ask on, for a request of an earlier revision.
    fn peer(&self) -> Result<&Peer<RoleServer>, ClientError> {
        self.peer
            .as_ref()
            .ok_or_else(|| ClientError::Failed("no connection to the client".to_owned()))
    }

    /// The same client, asked through `rounds` (a 2026-07-28 request).
    pub(crate) fn with_rounds(mut self, rounds: Arc<Rounds>) -> Client {
        self.rounds = Some(rounds);
        self
    }

    /// Whether the client declared `capability`; when it did not, a 2026-07-28
    /// request notes that its call needed it.
    fn offers(&self, capability: &'static str) -> bool {
        let declared = |c: &ClientCapabilities| match capability {
            "sampling" => c.sampling.is_some(),
            "elicitation" => c.elicitation.is_some(),
            "roots" => c.roots.is_some(),
            _ => false,
        };
        let offers = match &self.capabilities {
            Some(capabilities) => declared(capabilities),
            None => self
                .peer
                .as_ref()
                .and_then(|peer| peer.peer_info())
                .is_some_and(|info| declared(&info.capabilities)),
        };
        if !offers {
            if let Some(rounds) = &self.rounds {
                rounds.refuse(capability);
            }
        }
        offers
    }

    /// In a 2026-07-28 request: the answer to `key`, or the question noted and
    /// [`ClientError::InputRequired`]; in a task's call, the answer once the client
    /// gives it (see [`crate::task_input`]). `None` in an earlier revision's request
    /// (ask the client now). An answer that is not an object is asked again (in a
    /// task, it fails the question).
    async fn answered(
        &self,
        key: &str,
        bound: bool,
        question: impl FnOnce() -> Value,
    ) -> Option<Result<Value, ClientError>> {
        if let Some(task) = &self.task {
            if let Some((rounds, gate)) = &task.request {
                match rounds.answer(key, bound) {
                    Some(answer) if answer.is_object() => return Some(Ok(answer)),
                    // Asked in the request that made the task, while it takes questions.
                    _ if gate.ask() => {
                        rounds.ask(key, question());
                        return Some(Err(ClientError::InputRequired {
                            key: key.to_owned(),
                        }));
                    }
                    _ => {}
                }
            }
            return Some(match task.inbox.ask(key, bound, question()).await {
                Ok(answer) if answer.is_object() => Ok(answer),
                Ok(answer) => Err(ClientError::Failed(format!(
                    "the client's answer to `{key}` is not an object: {answer}"
                ))),
                Err(error) => Err(ClientError::Failed(error)),
            });
        }
        let rounds = self.rounds.as_ref()?;
        Some(match rounds.answer(key, bound) {
            Some(answer) if answer.is_object() => Ok(answer),
            _ => {
                rounds.ask(key, question());
                Err(ClientError::InputRequired {
                    key: key.to_owned(),
                })
            }
        })
    }

    /// A key of `kind` for a question the caller did not name.
    fn key(&self, kind: &'static str) -> String {
        if let Some(task) = &self.task {
            return task.inbox.key(kind);
        }
        match &self.rounds {
            Some(rounds) => rounds.key(kind),
            None => kind.to_owned(),
        }
    }

    /// Runs `work` as the handling of this client's request.
    pub(crate) async fn scope<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }

    /// The client of the request being served, if the calling task serves one.
    pub fn current() -> Option<Client> {
        CURRENT.try_with(Client::clone).ok()
    }

    /// The client's name, as it gave it (`None` before it said).
    pub fn name(&self) -> Option<String> {
        self.peer
            .as_ref()
            .and_then(|peer| peer.peer_info())
            .map(|info| info.client_info.name.clone())
    }

    /// A chat model backed by the client's sampling.
    pub fn model(&self) -> ClientModel {
        ClientModel {
            client: self.clone(),
            max_tokens: 1024,
        }
    }

    /// An approver that asks the human at the client.
    pub fn approver(&self) -> ClientApprover {
        ClientApprover {
            client: self.clone(),
        }
    }

    /// Asks the human at the client to fill in a form: `message`, and
    /// `requested_schema` (an object schema of flat properties). An accepted answer
    /// is checked against the schema: one that does not fit it is
    /// [`ClientError::InvalidAnswer`], never `Accept`.
    pub async fn elicit(
        &self,
        message: &str,
        requested_schema: Value,
    ) -> Result<Elicited, ClientError> {
        let key = self.key("elicitation");
        self.elicit_keyed(&key, false, message, requested_schema)
            .await
    }

    /// [`Client::elicit`], the question under `key` when it goes to the client in the
    /// answer to a 2026-07-28 request (the key a client answers by; unique within
    /// the call).
    pub async fn elicit_as(
        &self,
        key: &str,
        message: &str,
        requested_schema: Value,
    ) -> Result<Elicited, ClientError> {
        self.elicit_keyed(key, false, message, requested_schema)
            .await
    }

    async fn elicit_keyed(
        &self,
        key: &str,
        bound: bool,
        message: &str,
        requested_schema: Value,
    ) -> Result<Elicited, ClientError> {
        if !self.offers("elicitation") {
            return Err(ClientError::NotSupported("elicitation"));
        }
        // The form's own schema is checked before anyone is asked.
        tackle_core::SchemaValidator::compile(&requested_schema).map_err(|e| {
            ClientError::Failed(format!("the form's schema is not valid JSON Schema: {e}"))
        })?;
        let form = json!({
            "mode": "form",
            "message": message,
            "requestedSchema": requested_schema,
        });
        let params: ElicitRequestParams = serde_json::from_value(form.clone())
            .map_err(|e| ClientError::Failed(format!("the form cannot be sent: {e}")))?;
        let wire = match self
            .answered(
                key,
                bound,
                || json!({"method": "elicitation/create", "params": form}),
            )
            .await
        {
            Some(answer) => answer?,
            None => {
                let result: ElicitResult = self
                    .peer()?
                    .create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT))
                    .await
                    .map_err(|e| ClientError::Failed(e.to_string()))?;
                serde_json::to_value(&result).unwrap_or(Value::Null)
            }
        };
        Ok(match wire.get("action").and_then(Value::as_str) {
            Some("accept") => {
                let content = wire.get("content").cloned().unwrap_or(json!({}));
                if let Err(reason) = check_answer(&content, &requested_schema) {
                    return Err(ClientError::InvalidAnswer { content, reason });
                }
                Elicited::Accept(content)
            }
            Some("decline") => Elicited::Decline,
            _ => Elicited::Cancel,
        })
    }

    /// Asks the client's model (`sampling/createMessage`) with `params` in MCP's form;
    /// its result in MCP's form.
    pub async fn sample(&self, params: Value) -> Result<Value, ClientError> {
        let key = self.key("sampling");
        self.sample_as(&key, params).await
    }

    /// [`Client::sample`], the question under `key` when it goes to the client in the
    /// answer to a 2026-07-28 request.
    pub async fn sample_as(&self, key: &str, params: Value) -> Result<Value, ClientError> {
        if !self.offers("sampling") {
            return Err(ClientError::NotSupported("sampling"));
        }
        let wire = params.clone();
        let params: CreateMessageRequestParams = serde_json::from_value(params)
            .map_err(|e| ClientError::Failed(format!("the request cannot be sent: {e}")))?;
        if let Some(answer) = self
            .answered(
                key,
                false,
                || json!({"method": "sampling/createMessage", "params": wire}),
            )
            .await
        {
            return answer;
        }
        #[allow(deprecated)]
        let result = self
            .peer()?
            .create_message(params)
            .await
            .map_err(|e| ClientError::Failed(e.to_string()))?;
        Ok(serde_json::to_value(&result).unwrap_or(Value::Null))
    }

    /// The client's roots (`roots/list`): each `{"uri", "name"?}` as the client gave
    /// it.
    pub async fn roots(&self) -> Result<Vec<Value>, ClientError> {
        if !self.offers("roots") {
            return Err(ClientError::NotSupported("roots"));
        }
        let key = self.key("roots");
        let wire = match self
            .answered(&key, false, || json!({"method": "roots/list"}))
            .await
        {
            Some(answer) => answer?,
            None => {
                let result = self
                    .peer()?
                    .list_roots()
                    .await
                    .map_err(|e| ClientError::Failed(e.to_string()))?;
                serde_json::to_value(&result).unwrap_or(Value::Null)
            }
        };
        match wire.get("roots") {
            Some(Value::Array(roots)) => Ok(roots.clone()),
            _ => Err(ClientError::Failed(
                "the client's roots are not a list of roots".to_owned(),
            )),
        }
    }
}

/// A [`ChatModel`] whose completions the connected client makes (see the
/// [module docs](self)). It sends the conversation's text; it offers no tools (the
/// client's sampling does not call the server's tools).
#[derive(Clone, Debug)]
pub struct ClientModel {
    client: Client,
    max_tokens: u32,
}

impl ClientModel {
    /// The most tokens a reply may take (1,024 by default).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> ClientModel {
        self.max_tokens = max_tokens;
        self
    }
}

impl ChatModel for ClientModel {
    fn provider(&self) -> &str {
        "mcp-client"
    }

    /// `sampling`: one name whatever the client, so a recording replays under
    /// another client (which model the client used is its own business).
    fn model(&self) -> &str {
        "sampling"
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            let system: Vec<&str> = request
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str())
                .collect();
            let messages: Vec<Value> = request
                .messages
                .iter()
                .filter(|m| m.role != Role::System)
                .map(|m| {
                    let role = if m.role == Role::Assistant {
                        "assistant"
                    } else {
                        "user"
                    };
                    json!({"role": role, "content": {"type": "text", "text": m.content}})
                })
                .collect();
            let mut params = json!({"messages": messages, "maxTokens": self.max_tokens});
            if !system.is_empty() {
                params["systemPrompt"] = json!(system.join("\n\n"));
            }
            let result = self
                .client
                .sample(params)
                .await
                .map_err(|e| ModelError::Failed {
                    message: e.to_string(),
                })?;
            let text = match result.get("content") {
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(""),
                Some(block) => block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                None => String::new(),
            };
            Ok(ChatResponse::text(text))
        })
    }
}

/// What a client sends in an approval form's `content` to approve the call.
const APPROVE: &str = r#"{"approve": true}"#;

/// The refusal of an accepted approval form whose content has no boolean `approve`.
fn not_an_answer(content: &Value) -> String {
    const SHOWN: usize = 120;
    let mut sent = content.to_string();
    if let Some((cut, _)) = sent.char_indices().nth(SHOWN) {
        sent.truncate(cut);
        sent.push_str("...");
    }
    format!(
        "the client accepted the approval form without a boolean `approve` (it sent {sent}), \
         so the call is refused: the form expects {APPROVE} to approve it \
         (a client answers {{\"action\": \"accept\", \"content\": {APPROVE}}}), \
         or {{\"approve\": false}} to refuse it"
    )
}

/// An [`Approver`] that asks the human at the connected client (see the
/// [module docs](self)). A client that cannot be asked, declines or cancels denies the
/// call. The form asks for one required boolean, `approve`: only an accepted form
/// with `{"approve": true}` approves; an accepted form without a boolean `approve`
/// (`{}`) is refused, and the refusal says what the form expects.
#[derive(Clone, Debug)]
pub struct ClientApprover {
    client: Client,
}

impl Approver for ClientApprover {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        Box::pin(async move {
            let arguments =
                serde_json::to_string_pretty(&request.input).unwrap_or_else(|_| "{}".to_owned());
            let message = format!(
                "Run `{}` with these arguments?\n{arguments}\n(call {}, binding {})\n\
                 Accept with {APPROVE} to run it.",
                request.key, request.call_id, request.binding
            );
            let schema = json!({
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Approve",
                        "description": "Run this call, with exactly these arguments.",
                        "default": false,
                    },
                },
                "required": ["approve"],
            });
            // An approval is taken only from a form this server showed (bound).
            let key = self.client.key("approval");
            match self.client.elicit_keyed(&key, true, &message, schema).await {
                Ok(Elicited::Accept(content)) => match content.get("approve") {
                    Some(Value::Bool(true)) => request.approve(),
                    Some(Value::Bool(false)) => request.deny("the user did not approve it"),
                    // Accepted, but not the form's answer: never taken as a yes, and
                    // said so, so a client that sends `{}` learns what to send.
                    _ => request.deny(not_an_answer(&content)),
                },
                // Accepted with what does not fit the form (`{}`, a string): the same.
                Err(ClientError::InvalidAnswer { content, .. }) => {
                    request.deny(not_an_answer(&content))
                }
                Ok(Elicited::Decline) => request.deny("the user declined"),
                Ok(Elicited::Cancel) => request.deny("the user cancelled"),
                Err(error @ ClientError::InputRequired { .. }) => {
                    ApprovalDecision::Deny(format!("not approved yet: {error}"))
                }
                Err(error) => ApprovalDecision::Deny(format!("no approval: {error}")),
            }
        })
    }
}

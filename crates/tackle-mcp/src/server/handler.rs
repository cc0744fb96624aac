//! The MCP protocol side of [`McpServer`]: its `ServerHandler`, which answers
//! `initialize`, the tools, resources, prompts, completion, logging and subscription
//! requests, and the Tasks extension's requests, each as the client's grants allow.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams, TASKS_EXTENSION_ID,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tackle_core::events::DEFAULT_EVENT_QUEUE_DEPTH;
use tackle_core::{event_queue, Run, ToolEventKind};
use tracing::Instrument;

use super::subscriptions::{Listener, MAX_SESSION_SUBSCRIPTIONS};
use super::tools::{result_of, unwrapped_outputs};
use super::{
    next_session, McpServer, LOG_GRANT, MAX_COMPLETION_BYTES, MAX_COMPLETION_INPUT_BYTES,
    MAX_COMPLETION_VALUES,
};
use crate::client::{Client, ELICITATION_TIMEOUT};
use crate::prompts::PromptArguments;
use crate::rounds::{self, Rounds};
use crate::server::tasks::Asker;
use crate::tasks::TaskSupport;
use std::sync::Arc;

/// MCP's "resource not found" (`-32002`) for `uri`: also what a client is told of a
/// resource its grants hide.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource `{uri}`"), Some(json!({ "uri": uri })))
}

/// A JSON-RPC "invalid params" error with `message`.
fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// The client of `context`'s request, asked through `rounds` when it has them.
fn client_of(context: &RequestContext<RoleServer>, rounds: Option<&Arc<Rounds>>) -> Client {
    let client = Client::of(context);
    match rounds {
        Some(rounds) => client.with_rounds(rounds.clone()),
        None => client,
    }
}

/// MCP's "missing required client capability" (`-32021`) naming the capabilities
/// `required` (in the form a client declares them).
fn missing(required: Value) -> ErrorData {
    match wire(required) {
        Ok(required) => ErrorData::missing_required_client_capability(required),
        Err(e) => e,
    }
}

/// [`missing`] for a call that needed `capability`, which the client did not
/// declare.
fn missing_capability(capability: &str) -> ErrorData {
    let mut required = serde_json::Map::new();
    required.insert(capability.to_owned(), json!({}));
    missing(Value::Object(required))
}

/// [`missing`] for a tool whose calls are tasks only, asked by a client that did not
/// declare the Tasks extension.
fn missing_tasks_extension() -> ErrorData {
    missing(json!({"extensions": {TASKS_EXTENSION_ID: {}}}))
}

/// `value` as the rmcp type `T`, or an internal error.
fn wire<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A complete result (`resultType: "complete"`, which the 2026-07-28 revision requires
/// of every result) from `value`'s fields, as the rmcp type `T`. rmcp leaves the field
/// out for clients of the earlier revisions.
fn complete<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Value::Object(fields) = &mut value {
        fields.insert("resultType".to_owned(), json!("complete"));
    }
    wire(value)
}

impl ServerHandler for McpServer {
    // Logging is served for clients of the revisions before 2026-07-28 (see `set_level`).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        if !self.resources.is_empty() {
            capabilities.resources =
                Some(wire(json!({"subscribe": true, "listChanged": false})).unwrap_or_default());
        }
        if !self.prompts.is_empty() {
            capabilities.prompts = Some(wire(json!({"listChanged": false})).unwrap_or_default());
        }
        if !self.resources.is_empty() || !self.prompts.is_empty() {
            capabilities.completions = Some(wire(json!({})).unwrap_or_default());
        }
        if self.tasks.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    TASKS_EXTENSION_ID.to_owned(),
                    rmcp::model::JsonObject::new(),
                );
        }
        let mut info = ServerConfig::new(capabilities);
        let mut implementation =
            Implementation::new(self.identity.name.clone(), self.identity.version.clone());
        implementation.title = Some(self.identity.name.clone());
        info.server_info = implementation;
        info.instructions = self.identity.instructions.clone();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let unwrapped = unwrapped_outputs(&context);
        let visible = self
            .tools
            .iter()
            .filter(|served| self.allows(&served.needs))
            .map(|served| {
                if unwrapped {
                    served.current.clone()
                } else {
                    served.legacy.clone()
                }
            })
            .collect();
        Ok(ListToolsResult::with_all_items(visible))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .iter()
            .find(|served| served.legacy.name == name && self.allows(&served.needs))
            .map(|served| served.legacy.clone())
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown =
            || ErrorData::invalid_params(format!("unknown tool `{}`", request.name), None);
        let key = self.names.key_of(&request.name).ok_or_else(unknown)?;
        let tool = self
            .runtime
            .registry()
            .resolve(key)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        // A tool this client's grants cannot call is not listed to it, and is unknown
        // to it; the call still passes the door, which refuses and audits it.
        if !self.allows(&tool.spec().permissions) {
            let input = Value::Object(request.arguments.unwrap_or_default());
            let run = Run::new(&self.runtime);
            let _refused = run.call_report(key, input, &self.ctx).await;
            return Err(unknown());
        }
        let input = Value::Object(request.arguments.unwrap_or_default());
        // A request of the 2026-07-28 revision asks its client in rounds: its state
        // is opened before anything runs, and a forged one refused by the door (its
        // typed outcome, `InvalidInput`, and its audit event).
        let rounds = match self.rounds_of(
            &context,
            "tools/call",
            &request.name,
            &input,
            request.request_state.take(),
            request.input_responses.take(),
        ) {
            Ok(rounds) => rounds,
            Err(error) => {
                let why = tackle_core::ValidationIssue::new("", error.message.to_string());
                let _refused = Run::new(&self.runtime).refuse(key, input, &self.ctx, why);
                return Err(error);
            }
        };
        if self.tasks.is_some() {
            let asks = context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
            let support = self.task_support(key);
            if support == TaskSupport::Required && !asks {
                return Err(missing_tasks_extension());
            }
            // Secrets are never stored, and a task keeps its call's arguments.
            if asks
                && support != TaskSupport::Forbidden
                && self.runtime.secret_arguments(tool, &input).is_empty()
            {
                // A 2026-07-28 client can be asked for input by the task's call.
                let window = self.questions_first(key);
                let asker = rounds.as_ref().map(|rounds| Asker {
                    peer: context.peer.clone(),
                    capabilities: Client::of(&context).capabilities().unwrap_or_default(),
                    rounds: Arc::clone(rounds),
                    first: window.is_some(),
                });
                let (key, arguments) = (key.to_owned(), input.clone());
                let started = self
                    .with_tasks_off_workers(move |tasks, server| {
                        Ok(tasks.start(server, &key, arguments, asker))
                    })
                    .await?;
                if let Some(created) = started {
                    let (created, gate) = created?;
                    if let (Some(gate), Some(window)) = (gate, window) {
                        // The call's first questions go back in this answer.
                        if gate.settle(window).await {
                            if let Some(asked) = self.asked(rounds.as_deref(), true)? {
                                return Ok(CallToolResponse::InputRequired(asked));
                            }
                        }
                    }
                    return Ok(CallToolResponse::Task(created));
                }
            }
        }
        // Each request is a run of its own: the client's cancellation is the run's.
        let mut run = Run::new(&self.runtime).with_cancellation(context.ct.clone());
        // Only a tool that sees its context can report progress.
        let progress = context
            .meta
            .get_progress_token()
            .filter(|_| tool.takes_context());
        let forwarder = progress.map(|token| {
            let (sink, mut events) = event_queue(DEFAULT_EVENT_QUEUE_DEPTH);
            run = run.clone().with_events(sink.clone());
            let peer = context.peer.clone();
            let task = tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    if let ToolEventKind::Progress { done, total } = event.kind {
                        let mut note = ProgressNotificationParam::new(token.clone(), done as f64);
                        note.total = total.map(|t| t as f64);
                        // A client that went away cannot be told; the call goes on.
                        let _ = peer.notify_progress(note).await;
                    }
                }
            });
            (sink, task)
        });
        let client = client_of(&context, rounds.as_ref());
        if self.client_approval {
            run = run.with_approver(client.approver());
        }
        // The caller's trace goes on here (W3C trace context in `_meta`, feature
        // `otel`).
        let span = crate::trace::served_span(&request.name, &context.meta);
        let report = client
            .scope(
                self.log
                    .scope(&self.ctx, run.call_report(key, input, &self.ctx)),
            )
            .instrument(span)
            .await;
        if let Some((sink, task)) = forwarder {
            sink.close();
            let _ = task.await;
        }
        if let Some(asked) = self.asked(rounds.as_deref(), report.result.is_err())? {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        Ok(CallToolResponse::Complete(result_of(
            report.result,
            tool.spec(),
            unwrapped_outputs(&context),
        )))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let unwrapped = unwrapped_outputs(&context);
        self.with_tasks_off_workers(move |tasks, server| {
            tasks.get(server, &request.task_id, unwrapped)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.with_tasks_off_workers(move |tasks, server| tasks.cancel(server, &request.task_id))
            .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.with_tasks_off_workers(move |tasks, server| {
            tasks.update(server, &request.task_id, &request.input_responses)
        })
        .await
    }

    // MCP's logging is deprecated by the 2026-07-28 revision (SEP-2577); it is served
    // for clients of the earlier revisions.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The server's log can say more than its tools do: reading it is a grant.
        if !self.ctx.capabilities().allows(LOG_GRANT) {
            return Err(invalid(format!(
                "this client may not read the server's log (it needs the grant `{LOG_GRANT}`)"
            )));
        }
        self.log.set_level(request.level, &context.peer);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let resources: Vec<Value> = self
            .resources
            .statics()
            .filter(|e| self.may_read(e))
            .map(crate::resources::Entry::listing)
            .collect();
        complete(json!({ "resources": resources }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<Value> = self
            .resources
            .templates()
            .filter(|e| self.may_read(e))
            .map(crate::resources::Entry::listing)
            .collect();
        complete(json!({ "resourceTemplates": templates }))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let Some((entry, arguments)) = self.resources.find_where(uri, |e| self.may_read(e)) else {
            return Err(not_found(uri));
        };
        let run = Run::new(&self.runtime).with_cancellation(context.ct.clone());
        let client = Client::of(&context);
        let contents = client
            .scope(
                self.log
                    .scope(&self.ctx, entry.read(&run, uri, arguments, &self.ctx)),
            )
            .await
            .map_err(|e| match e {
                tackle_core::ToolError::InvalidInput { .. } => invalid(e.to_string()),
                other => ErrorData::internal_error(other.to_string(), None),
            })?;
        Ok(rmcp::model::ReadResourceResponse::Complete(complete(
            json!({
                "contents": contents
            }),
        )?))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // A resource this client cannot read is unknown to it, here as everywhere.
        if self
            .resources
            .find_where(&request.uri, |e| self.may_read(e))
            .is_none()
        {
            return Err(not_found(&request.uri));
        }
        self.subscriptions
            .add(
                &request.uri,
                self.session,
                Listener::Session(context.peer.clone()),
            )
            .map_err(invalid)
    }

    /// A 2026-07-28 client's subscriptions: the resources it asked to follow that
    /// exist and that it may read, within the caps (list changes are never sent: the
    /// lists do not change).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let uris: Vec<&String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| {
                self.resources
                    .find_where(uri, |e| self.may_read(e))
                    .is_some()
            })
            .take(MAX_SESSION_SUBSCRIPTIONS)
            .collect();
        Some(
            rmcp::model::SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    /// Follows the accepted resources until the client cancels the request or goes.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let id = next_session();
        let listener = Listener::Stream(context.sink().clone());
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            if let Err(refused) = self.subscriptions.add(uri, id, listener.clone()) {
                self.subscriptions.forget(id);
                return Err(invalid(refused));
            }
        }
        context.cancelled().await;
        self.subscriptions.forget(id);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.remove(&request.uri, self.session);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let prompts: Vec<Value> = self
            .prompts
            .iter()
            .filter(|p| self.allows(p.required()))
            .map(|p| p.listing())
            .collect();
        complete(json!({ "prompts": prompts }))
    }

    async fn get_prompt(
        &self,
        mut request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let Some(prompt) = self
            .prompts
            .get(&request.name)
            .filter(|p| self.allows(p.required()))
        else {
            return Err(invalid(format!("no prompt `{}`", request.name)));
        };
        let given = Value::Object(request.arguments.take().unwrap_or_default());
        let arguments: PromptArguments = given
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                _ => Err(invalid(format!("the argument `{k}` must be a string"))),
            })
            .collect::<Result<_, _>>()?;
        let mut messages = match prompt.asking_render(&arguments) {
            // A prompt that asks its client renders in a task of its own (a panic
            // stays there), as the handling of this client's request.
            Some(rendering) => {
                let rendering = rendering.map_err(invalid)?;
                let rounds = self.rounds_of(
                    &context,
                    "prompts/get",
                    &request.name,
                    &given,
                    request.request_state.take(),
                    request.input_responses.take(),
                )?;
                let client = client_of(&context, rounds.as_ref());
                let rendered = tokio::spawn(client.scope(rendering))
                    .await
                    .map_err(|_| "it panicked".to_owned());
                let failed = !matches!(rendered, Ok(Ok(_)));
                if let Some(asked) = self.asked(rounds.as_deref(), failed)? {
                    return Ok(rmcp::model::GetPromptResponse::InputRequired(asked));
                }
                rendered
                    .map_err(|e| {
                        ErrorData::internal_error(format!("the prompt failed: {e}"), None)
                    })?
                    .map_err(invalid)?
            }
            None => crate::resources::guarded(|| prompt.render(&arguments))
                .map_err(|e| ErrorData::internal_error(format!("the prompt failed: {e}"), None))?
                .map_err(invalid)?,
        };
        // A skill's tools, as this client sees them: the names it can call them by,
        // and none it cannot.
        let tools: Vec<&str> = prompt
            .tools()
            .iter()
            .filter_map(|key| self.runtime.registry().resolve(key).ok())
            .filter(|tool| self.allows(&tool.spec().permissions))
            .filter_map(|tool| self.names.name_of(tool.key()))
            .collect();
        if !tools.is_empty() {
            messages.push(crate::prompts::PromptMessage::user(format!(
                "(Tools for this: {}.)",
                tools.join(", ")
            )));
        }
        let messages: Vec<Value> = messages.iter().map(|m| m.to_wire()).collect();
        Ok(rmcp::model::GetPromptResponse::Complete(complete(json!({
            "messages": messages
        }))?))
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let wire_request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let reference = &wire_request["ref"];
        let argument = wire_request["argument"]["name"]
            .as_str()
            .unwrap_or_default();
        let value = wire_request["argument"]["value"]
            .as_str()
            .unwrap_or_default();
        if value.len() > MAX_COMPLETION_INPUT_BYTES {
            return Err(invalid(format!(
                "the value to complete is {} bytes; this server completes values of at most \
                 {MAX_COMPLETION_INPUT_BYTES} bytes",
                value.len()
            )));
        }
        // What this client cannot see is unknown to it: no completion of it either.
        let completed = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or_default();
                self.prompts
                    .complete(name, argument, value, |p| self.allows(p.required()))
                    .ok_or_else(|| invalid(format!("no prompt `{name}`")))?
            }
            Some("ref/resource") => {
                let uri = reference["uri"].as_str().unwrap_or_default();
                self.resources
                    .complete(uri, argument, value, |e| self.may_read(e))
                    .ok_or_else(|| not_found(uri))?
            }
            _ => return Err(invalid("`ref` must be `ref/prompt` or `ref/resource`")),
        };
        let values = completed
            .map_err(|e| ErrorData::internal_error(format!("the completion failed: {e}"), None))?;
        let total = values.len();
        let values = capped(values);
        complete(json!({"completion": {
            "values": values,
            "total": total,
            "hasMore": values.len() < total,
        }}))
    }
}

impl McpServer {
    /// The input rounds of a request of the 2026-07-28 revision (one that carries its
    /// version in `_meta`), its state opened (a forged one refused) before anything
    /// runs; `None` for a request of an earlier revision.
    fn rounds_of(
        &self,
        context: &RequestContext<RoleServer>,
        method: &str,
        name: &str,
        arguments: &Value,
        state: Option<String>,
        responses: Option<rmcp::model::InputResponses>,
    ) -> Result<Option<Arc<Rounds>>, ErrorData> {
        if context.meta.protocol_version().is_none() {
            return Ok(None);
        }
        let binding = rounds::binding(method, name, arguments, self.owner.as_deref());
        Rounds::open(&self.request_state, binding, state.as_deref(), responses)
            .map(|rounds| Some(Arc::new(rounds)))
    }

    /// What a request's work asked its client, as the answer to the request: the
    /// questions go to the client whatever the work made of not having the answers
    /// yet. Work that `failed` for a capability the client did not declare is MCP's
    /// `-32021`.
    fn asked(
        &self,
        rounds: Option<&Rounds>,
        failed: bool,
    ) -> Result<Option<rmcp::model::InputRequiredResult>, ErrorData> {
        let Some(rounds) = rounds else {
            return Ok(None);
        };
        if let Some(asked) = rounds.input_required(&self.request_state, ELICITATION_TIMEOUT)? {
            return Ok(Some(asked));
        }
        match (failed, rounds.refused()) {
            (true, Some(capability)) => Err(missing_capability(capability)),
            _ => Ok(None),
        }
    }
}

/// The first of `values` that an answer holds: at most [`MAX_COMPLETION_VALUES`], and
/// no more than [`MAX_COMPLETION_BYTES`] as JSON, in order (the first that would pass
/// it, and all after, are left out).
fn capped(values: Vec<String>) -> Vec<String> {
    let mut bytes = 0;
    values
        .into_iter()
        .take(MAX_COMPLETION_VALUES)
        .take_while(|value| {
            // Its JSON form: quotes, escapes, and the comma before the next.
            bytes += serde_json::to_string(value).map_or(usize::MAX / 2, |s| s.len()) + 1;
            bytes <= MAX_COMPLETION_BYTES
        })
        .collect()
}

//! A call of an imported tool: the request (with the caller's trace context), made
//! again on a new connection when that is safe, authorized when the server asks, and
//! a remote task polled until it ends (its id kept as the call's checkpoint).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetTaskParams, TaskPayload,
};
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde_json::json;
use serde_json::{Map, Value};
use tackle_core::{ToolError, ToolHandler};

use super::authorize::authorized;
use super::connection::{connection_lost, InFlight, Link};
use super::content::value_of;

/// Calls the remote tool (the door holds it to the spec's `timeout_ms`). A call whose
/// connection is lost while it is in flight is made again on a new connection when
/// the tool is safe to run again (`rerun_safe`), and fails with `Disconnected`
/// otherwise.
pub(super) fn tool_handler(
    link: Arc<Link>,
    remote: String,
    key: String,
    rerun_safe: bool,
) -> ToolHandler {
    ToolHandler::new(move |ctx, input| {
        let (link, remote, key) = (Arc::clone(&link), remote.clone(), key.clone());
        Box::pin(async move {
            let server = link.server.clone();
            let failed = |message: String| ToolError::Execution {
                key: key.clone(),
                message,
            };
            let _in_flight = InFlight::new(&link.handler, &key);
            // Made again after a crash of a durable run while the server worked on it
            // as a task: go on polling that task; never start the work twice.
            if let Some(task) = ctx
                .resumed_checkpoint()
                .and_then(|note| note.get(TASK_NOTE))
                .and_then(Value::as_str)
            {
                let result = poll_task(&link, &key, task, None, None).await?;
                return value_of(result, &key);
            }
            let arguments = match input {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            let mut request = CallToolRequestParams::new(remote).with_arguments(arguments);
            // The door's span is this call's: its trace goes with the request (W3C
            // trace context in `_meta`, feature `otel`).
            let mut meta = rmcp::model::MetaObject::new();
            if link.trace_context {
                crate::trace::inject(&mut meta);
            }
            if !meta.0.is_empty() {
                request.meta = Some(rmcp::model::RequestMetaObject(meta));
            }
            let (mut peer, mut generation) = link.peer().await.map_err(&failed)?;
            let mut answer = send(
                &link,
                (&mut peer, &mut generation),
                &request,
                rerun_safe,
                &key,
            )
            .await?;
            // A server of 2026-07-28 that needs input returns its questions: the call
            // answers them (the import's elicitation handler or door, its model) and
            // is made again with the answers and the server's state.
            let mut rounds = 0;
            let result = loop {
                match answer {
                    Err(e) => {
                        return Err(failed(format!("the MCP server `{server}` failed: {e}")))
                    }
                    Ok(CallToolResponse::Complete(result)) => break result,
                    Ok(CallToolResponse::Task(created)) => {
                        let task = created.task.task_id;
                        // Kept before the first poll: a durable run that dies from here
                        // on goes on with this task rather than starting another.
                        ctx.checkpoint(json!({ TASK_NOTE: task }))?;
                        // A task no resume can find again is cancelled if the call
                        // gives up on it (its time limit, its run's cancellation).
                        let orphan = (!ctx.keeps_checkpoints()).then(|| peer.clone());
                        break poll_task(&link, &key, &task, created.task.poll_interval_ms, orphan)
                            .await?;
                    }
                    Ok(CallToolResponse::InputRequired(asked)) => {
                        rounds += 1;
                        if rounds > MAX_INPUT_ROUNDS {
                            return Err(failed(format!(
                                "the MCP server `{server}` asked for input more than {MAX_INPUT_ROUNDS} times in one call"
                            )));
                        }
                        let questions = asked.input_requests.unwrap_or_default();
                        if questions.is_empty() && asked.request_state.is_none() {
                            return Err(failed(format!(
                                "the MCP server `{server}` asked for input with neither a question nor a state"
                            )));
                        }
                        let responses = link.handler.answer_inputs(questions).await;
                        // An answer is a result; one the import could not give (its
                        // door refused the model call, it has no model) ends the call
                        // here, where 2025-11-25 would have sent the server an error.
                        if let Some(refused) = responses.values().find_map(|a| a.get("error")) {
                            let why = message_of(refused);
                            return Err(failed(format!(
                                "the MCP server `{server}` asked for input the import could not give: {why}"
                            )));
                        }
                        request.input_responses = (!responses.is_empty()).then_some(responses);
                        request.request_state = asked.request_state;
                        answer = send(&link, (&mut peer, &mut generation), &request, rerun_safe, &key)
                            .await?;
                    }
                    Ok(_) => {
                        return Err(failed(format!(
                            "the MCP server `{server}` answered the call with something that is not a tool's result"
                        )))
                    }
                }
            };
            value_of(result, &key)
        })
    })
}

/// Sends `request` on `peer` (authorized when the server asks). A connection lost
/// while it is in flight is made again (`peer` and its `generation` with it) when the tool is safe to
/// run again; otherwise the call fails with `Disconnected`.
async fn send(
    link: &Link,
    (peer, generation): (&mut Peer<RoleClient>, &mut u64),
    request: &CallToolRequestParams,
    rerun_safe: bool,
    key: &str,
) -> Result<Result<CallToolResponse, rmcp::ServiceError>, ToolError> {
    let failed = |message: String| ToolError::Execution {
        key: key.to_owned(),
        message,
    };
    let auth = link.dial.auth();
    let first = authorized(auth, || peer.call_tool_once(request.clone()))
        .await
        .map_err(&failed)?;
    match first {
        Err(e) if connection_lost(&e) && rerun_safe => {
            (*peer, *generation) = link.redial(*generation).await.map_err(&failed)?;
            authorized(auth, || peer.call_tool_once(request.clone()))
                .await
                .map_err(&failed)
        }
        Err(e) if connection_lost(&e) => Err(ToolError::Disconnected {
            key: key.to_owned(),
            reason: format!(
                "the connection to the MCP server `{}` was lost ({e}); the call may have reached it, and the tool is not safe to run again, so it was not retried (the next call connects again)",
                link.server
            ),
        }),
        answer => Ok(answer),
    }
}

/// The `message` of a JSON-RPC error object.
fn message_of(error: &Value) -> &str {
    error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no reason given")
}

/// The most times one call may be answered with questions (`InputRequiredResult`).
const MAX_INPUT_ROUNDS: usize = 10;

/// The note a call of a task-based remote tool keeps: the task's id, under this key.
const TASK_NOTE: &str = "mcp_task";

/// The most requests for input one remote task may make.
const MAX_TASK_INPUTS: usize = 32;

/// The waits between polls of a remote task: what the server suggests, within these.
const TASK_POLL_MIN: Duration = Duration::from_millis(20);
const TASK_POLL_MAX: Duration = Duration::from_secs(5);

/// Polls the remote task `task` until it ends (the door's time limit bounds the
/// wait): its result, or why there is none. A lost connection is made again and the
/// polling goes on (asking about a task changes nothing). Requests the task waits for
/// (`input_required`) are answered as the server's own requests are (the import's
/// elicitation handler or door, its model) and sent with `tasks/update`.
async fn poll_task(
    link: &Link,
    key: &str,
    task: &str,
    suggested: Option<u64>,
    orphan: Option<Peer<RoleClient>>,
) -> Result<CallToolResult, ToolError> {
    let mut abandon = Abandon {
        peer: orphan,
        task: task.to_owned(),
    };
    let polled = poll(link, key, task, suggested).await;
    abandon.peer = None;
    polled
}

/// Cancels a remote task when dropped with a peer (its poll was given up).
struct Abandon {
    peer: Option<Peer<RoleClient>>,
    task: String,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let params = rmcp::model::CancelTaskParams::new(std::mem::take(&mut self.task));
        runtime.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), peer.cancel_task(params)).await;
        });
    }
}

/// [`poll_task`]'s loop.
async fn poll(
    link: &Link,
    key: &str,
    task: &str,
    suggested: Option<u64>,
) -> Result<CallToolResult, ToolError> {
    let failed = |message: String| ToolError::Execution {
        key: key.to_owned(),
        message,
    };
    let server = &link.server;
    let mut answered: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut wait = suggested
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_millis(500))
        .clamp(TASK_POLL_MIN, TASK_POLL_MAX);
    loop {
        let (peer, generation) = link.peer().await.map_err(&failed)?;
        let asked = authorized(link.dial.auth(), || {
            peer.get_task(GetTaskParams::new(task.to_owned()))
        })
        .await
        .map_err(&failed)?;
        let got = match asked {
            Ok(got) => got,
            Err(e) if connection_lost(&e) => {
                link.redial(generation).await.map_err(&failed)?;
                continue;
            }
            Err(e) => {
                return Err(failed(format!(
                    "the MCP server `{server}` could not say how its task `{task}` stands: {e}"
                )))
            }
        };
        if let Some(ms) = got.task.task.poll_interval_ms {
            wait = Duration::from_millis(ms).clamp(TASK_POLL_MIN, TASK_POLL_MAX);
        }
        match got.task.payload {
            TaskPayload::Completed { result } => {
                return serde_json::from_value(Value::Object(result)).map_err(|e| {
                    failed(format!(
                        "the MCP server `{server}` ended its task `{task}` with a result that is not a tool's: {e}"
                    ))
                })
            }
            TaskPayload::Failed { error } => {
                let error = Value::Object(error);
                return Err(failed(format!(
                    "the MCP server `{server}`'s task `{task}` failed: {}",
                    message_of(&error)
                )));
            }
            TaskPayload::Cancelled => {
                return Err(ToolError::Cancelled {
                    key: key.to_owned(),
                })
            }
            TaskPayload::InputRequired { input_requests } => {
                // Each request is answered once, even if a poll shows it again before
                // the server took the answer.
                let fresh: rmcp::model::InputRequests = input_requests
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if fresh.is_empty() {
                    tokio::time::sleep(wait).await;
                    continue;
                }
                if answered.len() + fresh.len() > MAX_TASK_INPUTS {
                    return Err(failed(format!(
                        "the MCP server `{server}`'s task `{task}` asked for input more than {MAX_TASK_INPUTS} times"
                    )));
                }
                answered.extend(fresh.keys().cloned());
                let responses = link.handler.answer_inputs(fresh).await;
                let update = rmcp::model::UpdateTaskParams::new(task.to_owned(), responses);
                let sent = authorized(link.dial.auth(), || peer.update_task(update.clone()))
                    .await
                    .map_err(&failed)?;
                if let Err(e) = sent {
                    return Err(failed(format!(
                        "the MCP server `{server}` did not take the answers for its task `{task}`: {e}"
                    )));
                }
            }
            _ => tokio::time::sleep(wait).await,
        }
    }
}

//! The sessions of one HTTP service: rmcp's local sessions, with each session's
//! JSON-RPC request ids in flight kept apart.
//!
//! A session routes a request's answer by its JSON-RPC id: two requests with one id at
//! once would share a route, and all but one would wait for an answer that never comes.
//! So a request whose id is one still in flight on its session is answered at once
//! with a JSON-RPC error (`-32600`, naming the id), and the one in flight goes on; the
//! id is free again once that request's answer stream ends (its answer was sent, or
//! its client went away).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{EventStore, RestoreOutcome};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

/// The request ids in flight, by session.
type InFlightIds = Arc<Mutex<HashMap<SessionId, HashSet<RequestId>>>>;

/// rmcp's local sessions, refusing a request id already in flight on its session (see
/// the [module docs](self)).
#[derive(Default)]
pub(crate) struct Sessions {
    /// The sessions themselves.
    pub(crate) local: LocalSessionManager,
    /// The request ids in flight, by session.
    in_flight: InFlightIds,
}

impl Sessions {
    /// `local`'s sessions, with request ids kept apart.
    pub(crate) fn new(local: LocalSessionManager) -> Sessions {
        Sessions {
            local,
            in_flight: InFlightIds::default(),
        }
    }

    /// Takes `request` as in flight on `session`: its place, held until dropped, or
    /// `None` when a request with that id is in flight there already.
    fn take(&self, session: &SessionId, request: &RequestId) -> Option<InFlight> {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ids = in_flight.entry(session.clone()).or_default();
        if !ids.insert(request.clone()) {
            return None;
        }
        Some(InFlight {
            ids: Arc::clone(&self.in_flight),
            session: session.clone(),
            request: request.clone(),
        })
    }
}

/// A request id's place among its session's requests in flight.
struct InFlight {
    ids: InFlightIds,
    session: SessionId,
    request: RequestId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut in_flight = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(ids) = in_flight.get_mut(&self.session) {
            ids.remove(&self.request);
            if ids.is_empty() {
                in_flight.remove(&self.session);
            }
        }
    }
}

/// The stream of a request's answer.
enum Answer {
    /// The session's, holding the request's id in flight until it ends or is dropped.
    Served {
        stream: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
        _in_flight: Option<InFlight>,
    },
    /// A refusal, sent once.
    Refused(Option<ServerSseMessage>),
}

impl Stream for Answer {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        match self.get_mut() {
            Answer::Served { stream, .. } => stream.as_mut().poll_next(cx),
            Answer::Refused(refusal) => Poll::Ready(refusal.take()),
        }
    }
}

/// The refusal of a request whose id `id` is in flight on its session already.
fn duplicate(id: RequestId) -> ServerSseMessage {
    let error = ErrorData::invalid_request(
        format!(
            "request id {id} is already in flight on this session: wait for its answer, or \
             give this request another id"
        ),
        Some(serde_json::json!({ "id": id })),
    );
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(id)))
}

type LocalError = <LocalSessionManager as SessionManager>::Error;
type LocalTransport = <LocalSessionManager as SessionManager>::Transport;

impl SessionManager for Sessions {
    type Error = LocalError;
    type Transport = LocalTransport;

    fn create_session(
        &self,
    ) -> impl Future<Output = Result<(SessionId, LocalTransport), LocalError>> + Send {
        self.local.create_session()
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, LocalError>> + Send {
        self.local.initialize_session(id, message)
    }

    fn has_session(&self, id: &SessionId) -> impl Future<Output = Result<bool, LocalError>> + Send {
        self.local.has_session(id)
    }

    fn close_session(&self, id: &SessionId) -> impl Future<Output = Result<(), LocalError>> + Send {
        self.local.close_session(id)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, LocalError> {
        let in_flight = match &message {
            ClientJsonRpcMessage::Request(request) => match self.take(id, &request.id) {
                Some(place) => Some(place),
                None => return Ok(Answer::Refused(Some(duplicate(request.id.clone())))),
            },
            _ => None,
        };
        let stream = self.local.create_stream(id, message).await?;
        Ok(Answer::Served {
            stream: Box::pin(stream),
            _in_flight: in_flight,
        })
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), LocalError>> + Send {
        self.local.accept_message(id, message)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, LocalError> {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, LocalError> {
        self.local.resume(id, last_event_id).await
    }

    fn restore_session(
        &self,
        id: SessionId,
    ) -> impl Future<Output = Result<RestoreOutcome<LocalTransport>, LocalError>> + Send {
        self.local.restore_session(id)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

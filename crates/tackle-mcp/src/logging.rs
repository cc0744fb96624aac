//! Logging to MCP clients: `logging/setLevel` and `notifications/message`.
//!
//! A client may ask a server for its log (`logging/setLevel` with a level), if its
//! grants hold [`LOG_GRANT`](crate::server::LOG_GRANT) (`mcp:log`): a log can say
//! more than the tools do. From then on, every `tracing` event at or above that level
//! (`DEBUG` at the lowest, never `TRACE`) that happens *while the server handles one
//! of that client's tool calls or resource reads* is sent to that client as
//! `notifications/message`, with the event's target as the logger and its message (and
//! other fields) as the data. Each client gets only the events of its own requests, at
//! its own level; a client that never set a level gets none.
//!
//! The events reach the server through a `tracing` layer that the program installs
//! beside its own output:
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//!
//! tracing_subscriber::registry()
//!     .with(tackle_mcp::logging::layer())
//!     .init();
//! ```
//!
//! The server context's secrets, token-shaped strings (`Bearer ...`, `sk-...` keys,
//! JWTs) and, for an event a tool's code logs, the secrets of that call (its caller's
//! and its secret arguments' values: [`tackle_core::secrets::scrub_running`]) are
//! scrubbed from what is sent; a value logged in another form (encoded, split) is not recognised, so log no
//! secrets. Events from a thread the request handed work to (a tool with a time limit runs
//! on a blocking thread) are not the request's and are not sent. Messages are sent in
//! order through a queue of [`QUEUE_DEPTH`] per client; past it, events are dropped
//! rather than slow the server down.

// MCP's logging is deprecated by the 2026-07-28 revision (SEP-2577) and rmcp marks it so;
// it is served for clients of the 2025-06-18 and 2025-11-25 revisions.
#![allow(deprecated)]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use tackle_core::ToolContext;

/// How many messages wait for one client at most.
pub const QUEUE_DEPTH: usize = 1024;

/// No level set: nothing is sent.
const OFF: u8 = u8::MAX;

tokio::task_local! {
    /// The log of the client whose request this task handles.
    static CURRENT: Scope;
}

/// A request's log: the client's, and the context whose secrets are scrubbed.
struct Scope {
    log: Arc<SessionLog>,
    ctx: ToolContext,
}

/// One client's log: its level, and the queue to it.
#[derive(Debug)]
pub(crate) struct SessionLog {
    level: AtomicU8,
    queue: Mutex<Option<mpsc::Sender<LoggingMessageNotificationParam>>>,
}

impl Default for SessionLog {
    fn default() -> SessionLog {
        SessionLog {
            level: AtomicU8::new(OFF),
            queue: Mutex::new(None),
        }
    }
}

impl SessionLog {
    /// Sets the client's level; the first time, starts the task that sends to `peer`.
    pub(crate) fn set_level(&self, level: LoggingLevel, peer: &Peer<RoleServer>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.is_none() {
            let (sender, mut receiver) = mpsc::channel(QUEUE_DEPTH);
            let peer = peer.clone();
            tokio::spawn(async move {
                while let Some(message) = receiver.recv().await {
                    #[allow(deprecated)]
                    if peer.notify_logging_message(message).await.is_err() {
                        // The client is gone.
                        return;
                    }
                }
            });
            *queue = Some(sender);
        }
        self.level.store(rank(level), Ordering::Relaxed);
    }

    /// Runs `work` as this client's, with `ctx`'s secrets scrubbed: its events go to
    /// this log.
    pub(crate) async fn scope<F: std::future::Future>(
        self: &Arc<Self>,
        ctx: &ToolContext,
        work: F,
    ) -> F::Output {
        if self.level.load(Ordering::Relaxed) == OFF {
            // Nothing to send: no scope to keep.
            return work.await;
        }
        let scope = Scope {
            log: Arc::clone(self),
            ctx: ctx.clone(),
        };
        CURRENT.scope(scope, work).await
    }

    /// Queues `event` when it is at or above the client's level (never `TRACE`).
    fn offer(&self, event: &Event<'_>, ctx: &ToolContext) {
        if *event.metadata().level() == tracing::Level::TRACE {
            return;
        }
        let level = level_of(*event.metadata().level());
        if rank(level) < self.level.load(Ordering::Relaxed) {
            return;
        }
        // Formatted before the queue is locked: a value's `Debug` may log too.
        let mut fields = Fields {
            ctx: Some(ctx),
            ..Fields::default()
        };
        event.record(&mut fields);
        let mut message = LoggingMessageNotificationParam::new(level, fields.data());
        message.logger = Some(event.metadata().target().to_owned());
        let sender = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(sender) = sender {
            // A full queue drops the event rather than wait.
            let _ = sender.try_send(message);
        }
    }
}

/// The layer that sends events to the clients that asked for them (see the
/// [module docs](self)).
pub fn layer() -> McpLogLayer {
    McpLogLayer { _private: () }
}

/// A `tracing` layer: see [`layer`].
#[derive(Debug)]
pub struct McpLogLayer {
    _private: (),
}

impl<S: Subscriber> Layer<S> for McpLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let _ = CURRENT.try_with(|scope| scope.log.offer(event, &scope.ctx));
    }
}

/// The MCP level of a `tracing` level.
fn level_of(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// A level's rank, from `debug` (0) to `emergency` (7).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// An event's fields, scrubbed of the context's secrets and token-shaped strings.
#[derive(Default)]
struct Fields<'a> {
    message: Option<String>,
    others: Map<String, Value>,
    ctx: Option<&'a ToolContext>,
}

impl Fields<'_> {
    /// The notification's data: the message alone when there is nothing else, else an
    /// object of the message and the other fields.
    fn data(self) -> Value {
        match (self.message, self.others.is_empty()) {
            (Some(message), true) => Value::String(message),
            (message, _) => {
                let mut data = self.others;
                if let Some(message) = message {
                    data.insert("message".into(), Value::String(message));
                }
                Value::Object(data)
            }
        }
    }

    fn put(&mut self, field: &Field, value: String) {
        // The door's rules for what leaves a running call (see `tackle::secrets`): the
        // scope's context (the server's secrets, token shapes), then the secrets of
        // the call whose code logged it (its caller's and its secret arguments).
        let mut value = match self.ctx {
            Some(ctx) => {
                let mut value = value;
                ctx.redact_secrets(&mut value);
                value
            }
            None => scrub(value),
        };
        tackle_core::secrets::scrub_running(&mut value);
        if field.name() == "message" {
            self.message = Some(value);
        } else {
            self.others
                .insert(field.name().to_owned(), Value::String(value));
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put(field, text);
    }
}

/// `text` without token-shaped strings.
fn scrub(text: String) -> String {
    match tackle_core::secrets::Redactor::new().redact_str(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(scrubbed) => scrubbed,
    }
}

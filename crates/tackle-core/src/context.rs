//! The caller's context, handed to every call.
//!
//! A [`ToolContext`] carries what a call needs from its caller but is not part of the
//! tool's input:
//!
//! * the caller's [`Capabilities`], checked at the door;
//! * shared resources such as a database pool or an HTTP client;
//! * secrets, which a tool reads with [`ToolContext::secret`] only if its spec declares
//!   them.
//!
//! What belongs to the run a call is part of (its cancellation, time limits, events,
//! id) is the [`Run`](crate::run::Run)'s, not the caller's: a tool sees it through its
//! context inside a call ([`ToolContext::cancelled`], [`ToolContext::run_id`],
//! [`ToolContext::report_progress`], [`ToolContext::stream`]).
//!
//! A tool receives it by declaring a `&ToolContext` parameter, or receives one
//! resource by declaring a [`Resource<T>`] parameter; neither appears in the tool's
//! input schema. Inside a call, the door adds what belongs to that call alone (its id,
//! the tool's declared secrets, the streamed chunks so far, its run).
//!
//! A context is cheap to clone (it is reference-counted) and immutable once built.

use std::any::{type_name, Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use tokio_util::sync::CancellationToken;

use serde_json::Value;

use crate::capability::Capabilities;
use crate::error::ToolError;
use crate::events::{EventSink, ToolEventKind};

/// What a call needs from its caller: capabilities, resources and secrets.
///
/// ```
/// use tackle::ToolContext;
///
/// struct Db;
/// let ctx = ToolContext::new()
///     .with_grant("db:read")        // a permission the door checks
///     .with_grant("llm:*")          // every model
///     .with_resource(Db)            // found by tools that take `Resource<Db>`
///     .with_secret("API_KEY", "s3cr3t"); // only for tools that declare it
/// assert!(ctx.capabilities().allows("db:read"));
/// assert!(!ctx.capabilities().allows("db:write"));
/// assert!(ctx.resource::<Db>().is_ok());
/// ```
#[derive(Clone, Default)]
pub struct ToolContext {
    inner: Arc<ContextInner>,
    call: Option<Arc<CallScope>>,
}

#[derive(Clone, Default)]
struct ContextInner {
    capabilities: Capabilities,
    resources: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    secrets: HashMap<String, Secret>,
}

/// What a run shares with its calls' tools: its id, cancellation, time limits and
/// event sink (the run module's `Run` holds it; the door hands it to each call).
#[derive(Clone, Debug)]
pub(crate) struct RunScope {
    /// The run's id, given or generated when first read.
    id: OnceLock<Arc<str>>,
    pub(crate) cancel: CancellationToken,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) grace: Duration,
    pub(crate) events: Option<EventSink>,
}

impl RunScope {
    /// A run's scope with the defaults: no time limit, [`DEFAULT_GRACE`], no events;
    /// its id is generated when first read.
    pub(crate) fn new() -> RunScope {
        RunScope {
            id: OnceLock::new(),
            cancel: CancellationToken::new(),
            default_timeout: None,
            grace: DEFAULT_GRACE,
            events: None,
        }
    }

    /// The run's id: the one given, else a process-unique `run-<pid>-<time>-<n>`
    /// made when first read (most runs never need one).
    pub(crate) fn id(&self) -> &str {
        self.id.get_or_init(generated_id)
    }

    /// Names the run.
    pub(crate) fn set_id(&mut self, id: Arc<str>) {
        self.id = OnceLock::from(id);
    }
}

/// A process-unique run id: `run-<pid>-<time>-<n>`.
fn generated_id() -> Arc<str> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Arc::from(format!("run-{}-{nanos:x}-{n}", std::process::id()))
}

/// Where a running call of a journaled run keeps how far it got (the replay layer's
/// journal: see [`ToolContext::checkpoint`]).
pub(crate) trait Checkpoints: Send + Sync + fmt::Debug {
    /// Keeps `note` for the call.
    fn keep(&self, note: &Value) -> Result<(), String>;
    /// The note the same call left in an earlier attempt of the run.
    fn resumed(&self) -> Option<&Value>;
}

/// What the door adds to the context for one call.
#[derive(Debug)]
pub(crate) struct CallScope {
    /// The call's id, unique within the runtime.
    pub(crate) id: u64,
    /// The tool's registered key.
    pub(crate) key: Arc<str>,
    /// The secrets the tool declared.
    pub(crate) secrets: Arc<[String]>,
    /// The values of the call's secret arguments, which its events do not carry.
    pub(crate) arg_secrets: Option<Arc<[String]>>,
    /// The run the call belongs to (none for a plain call).
    pub(crate) run: Option<Arc<RunScope>>,
    /// Where the call keeps how far it got, in a journaled run.
    pub(crate) checkpoint: Option<Box<dyn Checkpoints>>,
    /// Every chunk streamed so far, concatenated (never dropped).
    stream: Mutex<String>,
    streamed: AtomicBool,
}

impl CallScope {
    pub(crate) fn new(
        id: u64,
        key: Arc<str>,
        secrets: Arc<[String]>,
        run: Option<Arc<RunScope>>,
    ) -> CallScope {
        CallScope {
            id,
            key,
            secrets,
            arg_secrets: None,
            run,
            checkpoint: None,
            stream: Mutex::new(String::new()),
            streamed: AtomicBool::new(false),
        }
    }

    /// The streamed chunks, concatenated, if the tool streamed any.
    pub(crate) fn take_stream(&self) -> Option<String> {
        if !self.streamed.load(Ordering::Acquire) {
            return None;
        }
        let mut stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        Some(std::mem::take(&mut *stream))
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut secrets: Vec<&str> = self.inner.secrets.keys().map(String::as_str).collect();
        secrets.sort_unstable();
        f.debug_struct("ToolContext")
            .field("capabilities", &self.inner.capabilities)
            .field("resources", &self.inner.resources.len())
            .field("secrets", &secrets)
            .field("call", &self.call.as_ref().map(|c| c.id))
            .finish()
    }
}

impl ToolContext {
    /// A context with no grants and no resources.
    pub fn new() -> ToolContext {
        ToolContext::default()
    }

    /// Adds a grant (an exact permission or a `*` glob, see [`Capabilities`]).
    pub fn with_grant(mut self, pattern: impl Into<String>) -> ToolContext {
        let inner = Arc::make_mut(&mut self.inner);
        inner.capabilities = std::mem::take(&mut inner.capabilities).with_grant(pattern);
        self
    }

    /// Replaces the grants.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> ToolContext {
        Arc::make_mut(&mut self.inner).capabilities = capabilities;
        self
    }

    /// The caller's grants.
    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.capabilities
    }

    /// Adds a shared resource, found later by its type. A second value of the same
    /// type replaces the first.
    pub fn with_resource<T: Send + Sync + 'static>(mut self, value: T) -> ToolContext {
        Arc::make_mut(&mut self.inner)
            .resources
            .insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The resource of type `T`, or an error naming the type when the caller did not
    /// provide one.
    pub fn resource<T: Send + Sync + 'static>(&self) -> Result<Resource<T>, MissingResource> {
        self.inner
            .resources
            .get(&TypeId::of::<T>())
            .and_then(|r| Arc::clone(r).downcast::<T>().ok())
            .map(Resource)
            .ok_or(MissingResource {
                type_name: type_name::<T>(),
            })
    }

    /// Adds a secret. Tools read it with [`ToolContext::secret`], and only the tools
    /// whose spec lists `name` in `secrets`.
    pub fn with_secret(mut self, name: impl Into<String>, value: impl Into<String>) -> ToolContext {
        let value: String = value.into();
        Arc::make_mut(&mut self.inner)
            .secrets
            .insert(name.into(), Secret(value.into()));
        self
    }

    /// The secret `name`, if the running tool declared it and the caller provided it.
    ///
    /// Outside a call (a context that did not come through the door) every secret is
    /// refused.
    pub fn secret(&self, name: &str) -> Result<Secret, SecretError> {
        let Some(call) = &self.call else {
            return Err(SecretError::OutsideCall {
                name: name.to_owned(),
            });
        };
        if !call.secrets.iter().any(|s| s == name) {
            return Err(SecretError::NotDeclared {
                name: name.to_owned(),
                key: call.key.to_string(),
            });
        }
        self.inner
            .secrets
            .get(name)
            .cloned()
            .ok_or_else(|| SecretError::NotProvided {
                name: name.to_owned(),
            })
    }

    /// The value of the secret `name`, if the caller provided it (for the door, which
    /// hands a sandboxed tool its declared secrets).
    pub(crate) fn provided_secret(&self, name: &str) -> Option<&str> {
        self.inner.secrets.get(name).map(Secret::expose)
    }

    /// Every secret value the caller provided, to scrub them from errors.
    pub(crate) fn secret_values(&self) -> impl Iterator<Item = &str> {
        self.inner.secrets.values().map(|s| s.expose())
    }

    /// Whether the caller provided any secret.
    pub(crate) fn has_secrets(&self) -> bool {
        !self.inner.secrets.is_empty()
    }

    /// The run of the running call, if it belongs to one.
    fn run(&self) -> Option<&RunScope> {
        self.call.as_ref().and_then(|c| c.run.as_deref())
    }

    /// The cancellation token of the running call's run; `None` outside a call or
    /// for a call made with no run.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.run().map(|run| &run.cancel)
    }

    /// Whether the running call's run has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.run().is_some_and(|run| run.cancel.is_cancelled())
    }

    /// Completes when the running call's run is cancelled; never, outside a call or
    /// for a call made with no run. A long-running tool selects on it to stop early;
    /// one that ignores it is stopped by the door after the run's grace window.
    pub async fn cancelled(&self) {
        match self.cancellation() {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The id of the running call's run, when it belongs to one.
    pub fn run_id(&self) -> Option<&str> {
        self.run().map(RunScope::id)
    }

    /// The id of the running call; `None` outside a call.
    pub fn call_id(&self) -> Option<u64> {
        self.call.as_ref().map(|c| c.id)
    }

    /// Reports progress of the running call: `done` units of `total` (when known).
    /// Does nothing outside a call or when the caller listens to no events.
    pub fn report_progress(&self, done: u64, total: Option<u64>) {
        self.emit(ToolEventKind::Progress { done, total });
    }

    /// Streams a chunk of the running call's result. The caller sees it as an event
    /// (with the caller's secrets replaced by `[REDACTED]`); a tool that returns `()`
    /// gets the concatenation of its chunks as its output.
    /// Outside a call it does nothing.
    pub fn stream(&self, chunk: impl Into<String>) {
        let Some(call) = &self.call else { return };
        let chunk: String = chunk.into();
        {
            let mut stream = call.stream.lock().unwrap_or_else(PoisonError::into_inner);
            stream.push_str(&chunk);
            call.streamed.store(true, Ordering::Release);
        }
        // The caller's secrets do not travel in events (a secret split across two
        // chunks is caught in the assembled output, which the door scrubs whole).
        let mut chunk = chunk;
        self.redact_secrets(&mut chunk);
        self.emit(ToolEventKind::Chunk(chunk));
    }

    /// Scrubs `text` as the door scrubs a call's outcome (see [`crate::secrets`]), for
    /// what leaves while a call runs (streamed chunks, model deltas, log messages): this
    /// context's secret values become `[REDACTED]`, then token-shaped strings, then
    /// the running call's secret arguments' values;
    /// whether anything was replaced.
    pub fn redact_secrets(&self, text: &mut String) -> bool {
        let arguments = self
            .call
            .as_ref()
            .and_then(|c| c.arg_secrets.as_deref())
            .unwrap_or_default();
        self.scrubber(arguments, &[], None).text(text)
    }

    /// The scrubber of a call of this caller (see [`crate::secrets`]) whose secret
    /// arguments have `arguments` values and are named `fields`, and whose cassette (if
    /// any) redacts with `cassette`. Collects no secret list when there is none.
    pub(crate) fn scrubber<'s>(
        &'s self,
        arguments: &'s [String],
        fields: &'s [String],
        cassette: Option<&'s crate::secrets::Redactor>,
    ) -> crate::secrets::Scrubber<'s> {
        if self.has_secrets() {
            crate::secrets::Scrubber::new(self.secret_values(), arguments, fields, cassette)
        } else {
            crate::secrets::Scrubber::new([], arguments, fields, cassette)
        }
    }

    /// Whether anyone listens to the running call's events (its run has an event
    /// sink).
    pub fn listens(&self) -> bool {
        self.run().is_some_and(|run| run.events.is_some())
    }

    /// Sends an event about the running call, if anyone listens.
    pub(crate) fn emit(&self, kind: ToolEventKind) {
        if let Some(call) = &self.call {
            if let Some(sink) = call.run.as_ref().and_then(|run| run.events.as_ref()) {
                sink.push(call.id, &call.key, kind);
            }
        }
    }

    /// Keeps how far the running call got, when its run has a journal (a durable
    /// run): `note` is what the call needs to go on rather than start again, such as
    /// the id of remote work it started. If the process dies while the call runs, the
    /// resumed run makes the same call again (same key and input) and hands it the
    /// last note ([`resumed_checkpoint`](Self::resumed_checkpoint)), and a call that
    /// kept a note counts as safe to make again. Outside a journaled run, and outside
    /// a call, nothing is kept. The note is stored redacted, as a cassette keeps
    /// inputs (the caller's secrets and token-shaped strings replaced): keep in it only
    /// what the call needs to find its work again. An error says the journal could
    /// not take it (the call should not go on as if it had).
    pub fn checkpoint(&self, note: Value) -> Result<(), ToolError> {
        let Some(call) = self.call.as_deref() else {
            return Ok(());
        };
        let Some(checkpoint) = &call.checkpoint else {
            return Ok(());
        };
        // The caller's secrets never reach the journal.
        let mut text = note.to_string();
        let note = if self.redact_secrets(&mut text) {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        } else {
            note
        };
        checkpoint.keep(&note).map_err(|why| ToolError::Execution {
            key: call.key.to_string(),
            message: format!("the run's journal could not keep the call's progress: {why}"),
        })
    }

    /// Whether [`checkpoint`](Self::checkpoint) keeps notes here: the call belongs to
    /// a run with a journal, which a resume goes on from. Work the call started that
    /// no resume can find again (this is `false`) is the call's to stop if it gives
    /// up on it.
    pub fn keeps_checkpoints(&self) -> bool {
        self.call
            .as_deref()
            .is_some_and(|call| call.checkpoint.is_some())
    }

    /// The note this call kept with [`checkpoint`](Self::checkpoint) in an earlier
    /// attempt of its run, when the run was resumed while the call was in flight:
    /// go on from it.
    pub fn resumed_checkpoint(&self) -> Option<&Value> {
        self.call
            .as_deref()
            .and_then(|call| call.checkpoint.as_deref())
            .and_then(|checkpoint| checkpoint.resumed())
    }

    /// This context for one call.
    pub(crate) fn for_call(&self, scope: CallScope) -> ToolContext {
        ToolContext {
            inner: Arc::clone(&self.inner),
            call: Some(Arc::new(scope)),
        }
    }

    /// The call scope, when inside a call.
    pub(crate) fn call_scope(&self) -> Option<&CallScope> {
        self.call.as_deref()
    }
}

/// How long a tool may go on after its run is cancelled before the door stops it,
/// unless the run says otherwise ([`Run::with_grace`](crate::run::Run::with_grace)).
pub const DEFAULT_GRACE: Duration = Duration::from_millis(50);

/// A secret value. Its `Debug` and `Display` never show the value; read it with
/// [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// The value. Keep it out of outputs and error messages (the door scrubs error
    /// messages, but cannot scrub what a tool does with the value elsewhere).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", crate::secrets::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::secrets::REDACTED)
    }
}

/// A tool asked for a secret it may not read, or one the caller did not provide.
/// No variant carries a secret's value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The tool's spec does not list this secret in `secrets`.
    #[error(
        "`{key}` may not read the secret `{name}`: it is not among the secrets the tool declares"
    )]
    NotDeclared {
        /// The secret's name.
        name: String,
        /// The tool's key.
        key: String,
    },
    /// The tool declares the secret, but the caller's context does not hold it.
    #[error("the secret `{name}` was not provided; add it with ToolContext::with_secret")]
    NotProvided {
        /// The secret's name.
        name: String,
    },
    /// The context did not come through the door, so no tool is known to hold a grant.
    #[error("the secret `{name}` was asked for outside a tool call")]
    OutsideCall {
        /// The secret's name.
        name: String,
    },
}

/// A shared resource taken from the caller's [`ToolContext`].
///
/// As a tool parameter (`db: Resource<Db>`) it is injected by the door and is not part
/// of the input schema; when the caller's context has no `Db`, the call fails with a
/// `MissingContext` error before the tool runs.
pub struct Resource<T>(Arc<T>);

impl<T> Resource<T> {
    /// The shared pointer to the resource, to keep it beyond the call.
    pub fn into_arc(self) -> Arc<T> {
        self.0
    }
}

impl<T> Deref for Resource<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for Resource<T> {
    fn clone(&self) -> Self {
        Resource(Arc::clone(&self.0))
    }
}

impl<T: fmt::Debug> fmt::Debug for Resource<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A resource was asked for that the caller's context does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the context holds no resource of type `{type_name}`; add one with ToolContext::with_resource"
)]
pub struct MissingResource {
    /// The Rust type that was asked for.
    pub type_name: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Db(u32);

    #[test]
    fn grants_and_resources() {
        let base = ToolContext::new().with_grant("a:*");
        let ctx = base.clone().with_grant("b").with_resource(Db(7));
        assert!(ctx.capabilities().allows("a:x"));
        assert!(ctx.capabilities().allows("b"));
        assert!(
            !base.capabilities().allows("b"),
            "contexts are values: the base is unchanged"
        );
        assert_eq!(*ctx.resource::<Db>().unwrap(), Db(7));
        let missing = base.resource::<Db>().unwrap_err();
        assert!(missing.to_string().contains("Db"), "{missing}");
    }
}

//! Live tools: tools that come and go while the program runs.
//!
//! A runtime's registry is fixed once the runtime is built. Some tools are not: an
//! MCP server adds, removes and changes tools and says so
//! (`notifications/tools/list_changed`). Such tools live in the runtime's *live
//! tools* ([`Runtime::live_tools`](crate::Runtime::live_tools)), a second registry
//! beside the fixed one, replaced whole at each change (copy on write), so that a call
//! always sees one consistent set:
//!
//! * the door resolves a key in the fixed registry first, then in the live tools (a
//!   live tool never shadows a fixed one);
//! * a call keeps the tool it resolved until it ends, even if the tool is removed
//!   meanwhile; the next call of a removed key gets `NotFound`;
//! * a changed tool's new schemas validate the next call;
//! * every change is audited: [`AuditSink::tools_changed`] gets one [`ToolChange`]
//!   per key added, removed or changed, and a `tracing` event is logged.
//!
//! [`Runtime::tools`](crate::Runtime::tools) lists both, for what builds from the
//! tools at hand (an agent's tool list, a search).
//!
//! ```
//! use serde_json::json;
//! use tackle::audit::MemoryAudit;
//! use tackle::registry::ToolChangeKind;
//! use tackle::{registry::DynamicTool, Runtime, SideEffects, ToolContext, ToolErrorKind, ToolSpec};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let audit = Arc::new(MemoryAudit::new());
//! let rt = Runtime::default().with_audit(Arc::clone(&audit));
//! let live = rt.live_tools();
//! let spec = ToolSpec::new("remote", "ping", "1", SideEffects::None, "Answers pong.");
//! live.change("example", |tools| {
//!     tools.register(DynamicTool::new(spec, |_ctx, _input| async { Ok::<_, String>(json!("pong")) }))
//! })?;
//! let ctx = ToolContext::new();
//! assert_eq!(rt.call("remote.ping", json!({}), &ctx).await?, json!("pong"));
//!
//! live.change("example", |tools| tools.unregister("remote.ping@1"))?;
//! let gone = rt.call("remote.ping", json!({}), &ctx).await.unwrap_err();
//! assert_eq!(gone.kind(), ToolErrorKind::NotFound);
//! let kinds: Vec<_> = audit.changes().into_iter().map(|c| c.change).collect();
//! assert_eq!(kinds, [ToolChangeKind::Added, ToolChangeKind::Removed]);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::{Registry, Tool};
use crate::audit::{AuditSink, ToolChange, ToolChangeKind};

/// The state shared by a runtime and the handles to its live tools.
#[derive(Default)]
pub(crate) struct Shared {
    /// Whether there is any live tool: the door looks no further when there is not.
    any: AtomicBool,
    now: RwLock<Arc<Registry>>,
    /// Held while a change is made, so that changes do not lose each other.
    writing: Mutex<()>,
}

impl Shared {
    /// Whether there is any live tool (one relaxed load: the door's fast path).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// The live tools now.
    pub(crate) fn snapshot(&self) -> Arc<Registry> {
        Arc::clone(&self.now.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The tool `query` names among the live tools now.
    pub(crate) fn find(&self, query: &str) -> Option<Arc<Tool>> {
        let now = self.now.read().unwrap_or_else(PoisonError::into_inner);
        now.resolve(query).ok().map(Arc::clone)
    }
}

/// A handle to a runtime's live tools (see the [module docs](self)): cheap to clone,
/// it may be kept by whatever adds and removes tools (an MCP import).
#[derive(Clone)]
pub struct LiveTools {
    shared: Arc<Shared>,
    audit: Option<Arc<dyn AuditSink>>,
}

impl fmt::Debug for LiveTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveTools")
            .field("tools", &self.snapshot().list_names())
            .field("audit", &self.audit.is_some())
            .finish()
    }
}

impl LiveTools {
    /// A handle on `shared` whose changes go to `audit`.
    pub(crate) fn new(shared: Arc<Shared>, audit: Option<Arc<dyn AuditSink>>) -> LiveTools {
        LiveTools { shared, audit }
    }

    /// The live tools now: a registry that stays as it is while it is held.
    pub fn snapshot(&self) -> Arc<Registry> {
        self.shared.snapshot()
    }

    /// The keys of the live tools now, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.snapshot().list_names()
    }

    /// Changes the live tools: `edit` gets a copy of them to change
    /// ([`Registry::register`], [`Registry::unregister`]); when it succeeds, the copy
    /// replaces them at once and each key added, removed or changed is audited as
    /// changed by `source`. When it fails, nothing changes. Changes are made one at a
    /// time.
    pub fn change<R, E>(
        &self,
        source: &str,
        edit: impl FnOnce(&mut Registry) -> Result<R, E>,
    ) -> Result<R, E> {
        let (answer, changes) = {
            let _one_at_a_time = self
                .shared
                .writing
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let before = self.shared.snapshot();
            let mut after = Registry::clone(&before);
            let answer = edit(&mut after)?;
            let changes = differences(&before, &after, source);
            let any = !after.is_empty();
            *self
                .shared
                .now
                .write()
                .unwrap_or_else(PoisonError::into_inner) = Arc::new(after);
            self.shared.any.store(any, Ordering::Relaxed);
            (answer, changes)
        };
        // Audited once the change is made and let go: a sink may look at the tools.
        for change in &changes {
            tracing::info!(
                key = %change.key,
                change = ?change.change,
                source = %change.source,
                "live tool changed"
            );
            if let Some(audit) = &self.audit {
                audit.tools_changed(change);
            }
        }
        Ok(answer)
    }
}

/// The keys added, removed and changed from `before` to `after`, sorted by key.
fn differences(before: &Registry, after: &Registry, source: &str) -> Vec<ToolChange> {
    let change = |key: &str, change| ToolChange {
        key: key.to_owned(),
        change,
        source: source.to_owned(),
    };
    let mut changes = Vec::new();
    for tool in before.list() {
        match after.by_key.get(tool.key()) {
            None => changes.push(change(tool.key(), ToolChangeKind::Removed)),
            Some(&i) => {
                let now = &after.tools[i];
                if !Arc::ptr_eq(tool, now) && tool.spec() != now.spec() {
                    changes.push(change(tool.key(), ToolChangeKind::Changed));
                }
            }
        }
    }
    for tool in after.list() {
        if !before.by_key.contains_key(tool.key()) {
            changes.push(change(tool.key(), ToolChangeKind::Added));
        }
    }
    changes.sort_by(|a, b| a.key.cmp(&b.key));
    changes
}

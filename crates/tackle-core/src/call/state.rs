//! What the door keeps of a run: the state a [`Run`](crate::run::Run) owns, as the
//! stages read it.
//!
//! The door takes it from the call (`Call::run`); a plain call has none. The scope
//! (id, cancellation, time limits, events) is what the run shares with its tools'
//! contexts; the memory (idempotency, remembered approvals, numbering, and the
//! values upper layers keep per run) is what the run learns as it goes.

use std::any::{Any, TypeId};
use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use super::dedupe::Idempotency;
use crate::approval::{ApprovalBinding, Approver};
use crate::context::RunScope;
use crate::replay::Cassette;

/// A run's state, as the door reads it. Cheap to clone: clones share the memory.
#[derive(Clone)]
pub(crate) struct RunState {
    pub(crate) scope: Arc<RunScope>,
    pub(crate) cassette: Option<Cassette>,
    /// Asked instead of the runtime's approver (a durable run's decisions).
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) memory: Arc<RunMemory>,
}

/// What a run learns as it goes.
#[derive(Default)]
pub(crate) struct RunMemory {
    pub(crate) idempotency: Idempotency,
    pub(crate) remembered: Mutex<HashSet<ApprovalBinding>>,
    pub(crate) next_call: AtomicU64,
    pub(crate) extensions: Extensions,
}

/// The values upper layers keep per run, one per type (see
/// [`Run::extension`](crate::run::Run::extension)): few, so a list.
#[derive(Default)]
pub(crate) struct Extensions(Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>);

impl Extensions {
    /// The value of type `T`, made with `T::default()` on the first ask.
    pub(crate) fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut values = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let id = TypeId::of::<T>();
        if let Some(found) = values
            .iter()
            .find(|(of, _)| *of == id)
            .and_then(|(_, value)| Arc::clone(value).downcast::<T>().ok())
        {
            return found;
        }
        let made = Arc::new(T::default());
        values.push((id, Arc::clone(&made) as Arc<dyn Any + Send + Sync>));
        made
    }
}

impl RunState {
    /// A run's state with the default scope.
    pub(crate) fn new() -> RunState {
        RunState {
            scope: Arc::new(RunScope::new()),
            cassette: None,
            approver: None,
            memory: Arc::default(),
        }
    }

    /// Whether the run was cancelled.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        self.scope.cancel.is_cancelled()
    }
}

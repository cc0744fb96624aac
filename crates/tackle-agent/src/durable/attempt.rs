//! What one attempt of a run holds, shared by its handle, its journal and its
//! approver ([`Attempt`]): the record as last saved, the lease, whether the journal
//! failed; and how it saves the record and takes the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tackle_core::call::Runtime;
use tackle_core::replay::CallStarted;
use tokio_util::sync::CancellationToken;

use super::error::DurableError;
use super::lease::{held_by_other, millis, now_ms, DurableOptions};
use super::store::{InFlight, Lease, RunRecord, RunStore, StoreError};
use super::SAVE_ATTEMPTS;

pub(super) fn load(store: &dyn RunStore, run_id: &str) -> Result<RunRecord, DurableError> {
    store.load(run_id)?.ok_or_else(|| DurableError::NotFound {
        run_id: run_id.to_owned(),
    })
}

/// What one attempt shares between its handle, its journal and its approver: the
/// record as last saved, the lease, and whether the journal failed.
pub(super) struct Attempt {
    pub(super) store: Arc<dyn RunStore>,
    pub(super) record: Mutex<RunRecord>,
    pub(super) options: DurableOptions,
    /// Journal entries known to be in the store.
    pub(super) journaled: AtomicU64,
    /// Why the journal failed, once it has: the attempt then runs nothing more.
    pub(super) failure: Mutex<Option<String>>,
    /// Whether [`DurableRun::drive`] ran (an attempt drives once).
    pub(super) driven: AtomicBool,
    /// Fires when the lease is lost: the run's calls stop.
    pub(super) lost: CancellationToken,
    /// The runtime the attempt's calls run on (set by [`DurableRun::run`]): where the
    /// schema fingerprints of the tools it calls are read.
    pub(super) runtime: Mutex<Weak<Runtime>>,
    /// Tools the journal called before this attempt whose fingerprints the record
    /// lacks (a run journaled before records kept them): noted when the attempt
    /// drives.
    pub(super) unnoted: Mutex<Vec<String>>,
    /// Calls an operator asked to run again, not yet made again (key, canonical
    /// input): a restored run makes them rather than hold them.
    pub(super) permits: Mutex<Vec<(String, String)>>,
    /// Writes of a restored run held as unknown outcomes in this attempt.
    pub(super) held: Mutex<Vec<InFlight>>,
    /// The first stored decision that did not verify with the run's approval key
    /// (its tool's key, and why): the attempt ends with
    /// [`DurableError::ForgedDecision`].
    pub(super) forged: Mutex<Option<(String, super::SignatureError)>>,
}

impl Attempt {
    /// An attempt at `record` (as last read or created), not yet holding the run
    /// unless the record says so.
    pub(super) fn new(
        store: Arc<dyn RunStore>,
        record: RunRecord,
        options: DurableOptions,
    ) -> Arc<Attempt> {
        Arc::new(Attempt {
            store,
            journaled: AtomicU64::new(record.journaled),
            record: Mutex::new(record),
            options,
            failure: Mutex::new(None),
            driven: AtomicBool::new(false),
            lost: CancellationToken::new(),
            runtime: Mutex::new(Weak::new()),
            unnoted: Mutex::new(Vec::new()),
            permits: Mutex::new(Vec::new()),
            held: Mutex::new(Vec::new()),
            forged: Mutex::new(None),
        })
    }

    /// Uses up the operator's permit to make `call` again, when there is one.
    pub(super) fn permit(&self, call: &CallStarted) -> bool {
        let canonical = tackle_core::canonical::canonical(&call.input);
        let mut permits = self.permits.lock().unwrap_or_else(PoisonError::into_inner);
        let found = permits
            .iter()
            .position(|(key, input)| *key == call.key && *input == canonical);
        found.map(|at| permits.remove(at)).is_some()
    }

    /// Notes a write held as an unknown outcome.
    pub(super) fn hold(&self, call: InFlight) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    /// The writes held in this attempt.
    pub(super) fn held(&self) -> Vec<InFlight> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Notes in the record the schema fingerprint of each tool of `keys` it lacks, as
    /// the runtime's tool of that key has it now (a key the runtime does not hold is
    /// left out): one save, and only when something is new. Made before a tool's
    /// first call runs, so an export of the journal has the fingerprint of every tool
    /// it called (a cassette's `tools`).
    pub(super) fn note_schemas<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<(), DurableError> {
        let missing: Vec<&str> = {
            let record = self.record();
            keys.into_iter()
                .filter(|key| !record.tools.contains_key(*key))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade();
        let Some(runtime) = runtime else {
            return Ok(());
        };
        let found: Vec<(String, String)> = missing
            .into_iter()
            .filter_map(|key| Some((key.to_owned(), schema_fingerprint(&runtime, key)?)))
            .collect();
        if found.is_empty() {
            return Ok(());
        }
        self.save(false, |record| record.tools.extend(found.iter().cloned()))
    }

    pub(super) fn record(&self) -> MutexGuard<'_, RunRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Notes a stored decision on `key` that did not verify (the first one stays).
    pub(super) fn forged(&self, key: &str, why: super::SignatureError) {
        self.forged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert((key.to_owned(), why));
    }

    /// The error of an attempt that met a forged decision, if it did.
    pub(super) fn forgery(&self) -> Option<DurableError> {
        let forged = self.forged.lock().unwrap_or_else(PoisonError::into_inner);
        forged
            .as_ref()
            .map(|(key, why)| DurableError::ForgedDecision {
                run_id: self.record().run_id.clone(),
                key: key.clone(),
                why: why.clone(),
            })
    }

    pub(super) fn fail(&self, message: String) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure.get_or_insert(message);
    }

    pub(super) fn run_id(&self) -> String {
        self.record().run_id.clone()
    }

    /// Applies `change` to the record and saves it, holding the lease (renewed) unless
    /// `release`. A save that lost a race to another writer (an operator's decision)
    /// is made again over the fresh record, unless someone else holds the run now:
    /// then [`DurableError::Held`], and the attempt's calls stop.
    pub(super) fn save(
        &self,
        release: bool,
        mut change: impl FnMut(&mut RunRecord),
    ) -> Result<(), DurableError> {
        let mut record = self.record();
        for _ in 0..SAVE_ATTEMPTS {
            let mut next = record.clone();
            change(&mut next);
            let now = now_ms();
            next.lease = (!release).then(|| Lease {
                holder: self.options.holder.clone(),
                until_ms: now.saturating_add(millis(self.options.lease)),
            });
            next.journaled = self.journaled.load(Ordering::SeqCst);
            match self.store.save(&next, &[]) {
                Ok(()) => {
                    next.version += 1;
                    *record = next;
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => {
                    let fresh = load(&*self.store, &record.run_id)?;
                    if let Some(held) = held_by_other(&fresh, &self.options.holder, now) {
                        self.lost.cancel();
                        return Err(held);
                    }
                    let holder = self.options.holder.as_str();
                    let ours = |r: &RunRecord| r.lease.as_ref().is_some_and(|l| l.holder == holder);
                    if ours(&record) && !ours(&fresh) {
                        // Our lease lapsed and someone else took the run, then let
                        // it go: what we hold is stale.
                        self.lost.cancel();
                        return Err(DurableError::LeaseLost {
                            run_id: fresh.run_id.clone(),
                        });
                    }
                    *record = fresh;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(DurableError::Conflict {
            run_id: record.run_id.clone(),
        })
    }

    /// Renews the lease when less than half of it is left.
    pub(super) fn keep_lease(&self) -> Result<(), DurableError> {
        let left = {
            let record = self.record();
            match &record.lease {
                Some(lease) if lease.holder == self.options.holder => {
                    lease.until_ms.saturating_sub(now_ms())
                }
                _ => 0,
            }
        };
        if left > millis(self.options.lease) / 2 {
            return Ok(());
        }
        self.save(false, |_| {})
    }
}

/// Takes the run for `attempt` (or keeps it): [`DurableError::Held`] when another
/// process holds it.
pub(super) fn take(attempt: &Attempt) -> Result<(), DurableError> {
    let stale = {
        let record = attempt.record();
        if let Some(held) = held_by_other(&record, &attempt.options.holder, now_ms()) {
            return Err(held);
        }
        let holder = attempt.options.holder.as_str();
        let holds = record.lease.as_ref().is_some_and(|l| l.holder == holder);
        // An attempt that let the run go holds no claim on what the run became since:
        // it may take it back only as it left it.
        (!holds).then(|| (record.run_id.clone(), record.version))
    };
    if let Some((run_id, version)) = stale {
        let stored = load(&*attempt.store, &run_id)?;
        if stored.version != version {
            if let Some(held) = held_by_other(&stored, &attempt.options.holder, now_ms()) {
                return Err(held);
            }
            return Err(DurableError::Conflict { run_id });
        }
    }
    attempt.save(false, |_| {})
}

/// The schema fingerprint of the tool `key` names in `runtime` (fixed or live), as
/// the door records it in a cassette's `tools`.
fn schema_fingerprint(runtime: &Runtime, key: &str) -> Option<String> {
    if let Some(tool) = runtime.registry().get(key) {
        return Some(tool.schema_fingerprint().to_owned());
    }
    let live = runtime.live_tools().snapshot();
    let tool = live.get(key)?;
    Some(tool.schema_fingerprint().to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::durable::{DurableError, DurableOptions, DurableRun, MemoryStore, RunStore};

    /// An attempt whose lease lapsed while another process took the run and let it
    /// go says so, not that an unnamed holder holds the run for 0 s.
    #[test]
    fn a_lapsed_lease_taken_over_says_so() {
        let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
        let first = DurableOptions::default()
            .with_holder("first")
            .with_lease(Duration::from_millis(1));
        let run = DurableRun::start_with(Arc::clone(&store), "r", "Task.", first).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let second = DurableOptions::default().with_holder("second");
        let other = DurableRun::resume_with(Arc::clone(&store), "r", second).unwrap();
        drop(other);
        let error = run.release().unwrap_err();
        assert!(
            matches!(&error, DurableError::LeaseLost { run_id } if run_id == "r"),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("lapsed"), "{message}");
        assert!(!message.contains("unnamed"), "{message}");
    }
}

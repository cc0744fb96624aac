//! One process at a time: the leases a run is held by ([`DurableOptions`] sets an
//! attempt's), and who holds a run now.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::DurableError;
use super::store::RunRecord;
use super::DEFAULT_LEASE;

/// Milliseconds since the Unix epoch, as leases count.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A name for this process's leases: its pid, the time and a counter.
fn holder_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("pid{}-{nanos:x}-{n}", std::process::id())
}

/// [`DurableError::Held`] while any process holds `record` (its lease has not lapsed).
pub(super) fn not_held(record: &RunRecord, run_id: &str) -> Result<(), DurableError> {
    match record.lease.as_ref().filter(|l| l.holds_at(now_ms())) {
        Some(lease) => Err(DurableError::Held {
            run_id: run_id.to_owned(),
            holder: lease.holder.clone(),
            remaining_ms: lease.until_ms.saturating_sub(now_ms()),
        }),
        None => Ok(()),
    }
}

/// Whether `record` is held by someone other than `holder` at `now`: the error, if so.
pub(super) fn held_by_other(record: &RunRecord, holder: &str, now: u64) -> Option<DurableError> {
    match &record.lease {
        Some(lease) if lease.holder != holder && lease.holds_at(now) => Some(DurableError::Held {
            run_id: record.run_id.clone(),
            holder: lease.holder.clone(),
            remaining_ms: lease.until_ms - now,
        }),
        _ => None,
    }
}

/// Options of a durable run's attempt.
#[derive(Clone)]
pub struct DurableOptions {
    pub(super) lease: Duration,
    pub(super) holder: String,
    /// The key every decision the run takes must be signed with, when set.
    pub(super) approval_key: Option<std::sync::Arc<super::ApprovalKey>>,
    /// The rules that decide calls before a person is asked, when set.
    pub(super) approval_policy: Option<std::sync::Arc<dyn super::ApprovalPolicy>>,
}

impl std::fmt::Debug for DurableOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableOptions")
            .field("lease", &self.lease)
            .field("holder", &self.holder)
            .field("approval_key", &self.approval_key)
            .field("approval_policy", &self.approval_policy.is_some())
            .finish()
    }
}

impl Default for DurableOptions {
    fn default() -> DurableOptions {
        DurableOptions {
            lease: DEFAULT_LEASE,
            holder: holder_name(),
            approval_key: None,
            approval_policy: None,
        }
    }
}

impl DurableOptions {
    /// The default options: a [`DEFAULT_LEASE`] lease, held under a name made for
    /// this attempt.
    pub fn new() -> DurableOptions {
        DurableOptions::default()
    }

    /// How long the attempt's lease lasts (renewed at a third of it while the run is
    /// driven): how soon another process may take over a run whose process died. A
    /// zero lease is taken as one millisecond.
    pub fn with_lease(mut self, lease: Duration) -> DurableOptions {
        self.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// The name the lease is held under (say, the worker's host and pid), shown to a
    /// process refused with [`DurableError::Held`].
    pub fn with_holder(mut self, holder: impl Into<String>) -> DurableOptions {
        self.holder = holder.into();
        self
    }

    /// Takes only approval decisions signed with `key` (see
    /// [`signing`](super::signing)): a decision in the store that does not verify
    /// refuses its call, and the attempt ends with
    /// [`DurableError::ForgedDecision`](super::DurableError::ForgedDecision).
    pub fn with_approval_key(mut self, key: super::ApprovalKey) -> DurableOptions {
        self.approval_key = Some(std::sync::Arc::new(key));
        self
    }

    /// Asks `policy` about each call that needs approval and has no decision yet,
    /// before a person is asked (see [`policy`](super::policy)).
    pub fn with_approval_policy(
        mut self,
        policy: impl super::ApprovalPolicy + 'static,
    ) -> DurableOptions {
        self.approval_policy = Some(std::sync::Arc::new(policy));
        self
    }

    /// How long the lease lasts.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The name the lease is held under.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}

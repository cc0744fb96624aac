//! Starting a run and resuming it, in this process or another ([`DurableRun::open`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use tackle_core::replay::{Cassette, CassetteConfig, Interaction, InteractionKind};

use super::attempt::{load, take, Attempt};
use super::error::DurableError;
use super::journal::{replay, StoreJournal};
use super::lease::{held_by_other, millis, now_ms, DurableOptions};
use super::store::{Lease, RunRecord, RunStatus, RunStore, StoreError};
use super::DurableRun;

impl DurableRun {
    /// Starts a new run `run_id` of `task` in `store`, holding it.
    pub fn start(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        DurableRun::start_with(store, run_id, task, DurableOptions::default())
    }

    /// [`start`](Self::start) with `options`.
    pub fn start_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        let mut record = RunRecord::new(run_id, task);
        record.lease = Some(Lease {
            holder: options.holder.clone(),
            until_ms: now_ms().saturating_add(millis(options.lease)),
        });
        store.create(&record)?;
        let number = record.attempts;
        let attempt = Attempt::new(store, record, options);
        Ok(DurableRun::with_attempt(attempt, number, Vec::new(), 0))
    }

    /// Resumes the run `run_id` of `store`, in this process: a new attempt over the
    /// run's journal, holding the run. Fails with [`DurableError::Held`] while another
    /// process holds it, with [`DurableError::UnknownOutcome`] (and records that
    /// status) when calls in flight may not run again, with
    /// [`DurableError::AwaitingApproval`] while a request waits for its decision, and
    /// with [`DurableError::Ended`] when the run is done or failed.
    pub fn resume(store: Arc<dyn RunStore>, run_id: &str) -> Result<DurableRun, DurableError> {
        DurableRun::resume_with(store, run_id, DurableOptions::default())
    }

    /// [`resume`](Self::resume) with `options`.
    pub fn resume_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        let record = load(&*store, run_id)?;
        if matches!(record.status, RunStatus::Done | RunStatus::Failed { .. }) {
            return Err(DurableError::Ended {
                run_id: run_id.to_owned(),
                status: record.status,
            });
        }
        if let Some(held) = held_by_other(&record, &options.holder, now_ms()) {
            return Err(held);
        }
        // Take the run first: of several processes resuming it at once, one does.
        let attempt = Attempt::new(Arc::clone(&store), record, options);
        take(&attempt)?;
        let status = attempt.record().status.clone();
        if matches!(status, RunStatus::Done | RunStatus::Failed { .. }) {
            // It ended while this process was taking it.
            let _ = attempt.save(true, |_| {});
            return Err(DurableError::Ended {
                run_id: run_id.to_owned(),
                status,
            });
        }
        let journal = store.journal(run_id)?;
        let expected = attempt.record().journaled;
        if (journal.len() as u64) < expected {
            let _ = attempt.save(true, |_| {});
            return Err(StoreError::Corrupt {
                message: format!(
                    "the journal of run `{run_id}` has {} entries, and had {expected} at its \
                     last save: entries are missing",
                    journal.len()
                ),
            }
            .into());
        }
        attempt
            .journaled
            .store(journal.len() as u64, Ordering::SeqCst);
        let replayed = replay(journal);
        if !replayed.unknown.is_empty() {
            let calls = replayed.unknown.clone();
            attempt.save(true, |r| {
                r.status = RunStatus::UnknownOutcome {
                    calls: calls.clone(),
                }
            })?;
            return Err(DurableError::UnknownOutcome {
                run_id: run_id.to_owned(),
                calls: replayed.unknown,
            });
        }
        let pending = attempt.record().pending.clone();
        if !pending.is_empty() {
            // Not every request has its decision: resuming now would stop again.
            attempt.save(true, |r| r.status = RunStatus::AwaitingApproval)?;
            return Err(DurableError::AwaitingApproval {
                run_id: run_id.to_owned(),
                pending,
            });
        }
        attempt.save(false, |r| {
            r.attempts = r.attempts.saturating_add(1);
            r.status = RunStatus::Running;
        })?;
        let number = attempt.record().attempts;
        *attempt
            .permits
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = replayed.retried;
        let run = DurableRun::with_attempt(attempt, number, replayed.recorded, replayed.next_call);
        run.cassette.resume_progress(replayed.resumable);
        Ok(run)
    }

    /// Resumes the run `run_id` when the store has it, else starts it with `task`:
    /// what a process that may have been restarted calls.
    pub fn open(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
    ) -> Result<DurableRun, DurableError> {
        DurableRun::open_with(store, run_id, task, DurableOptions::default())
    }

    /// [`open`](Self::open) with `options`.
    pub fn open_with(
        store: Arc<dyn RunStore>,
        run_id: &str,
        task: &str,
        options: DurableOptions,
    ) -> Result<DurableRun, DurableError> {
        if store.load(run_id)?.is_some() {
            return DurableRun::resume_with(store, run_id, options);
        }
        match DurableRun::start_with(Arc::clone(&store), run_id, task, options.clone()) {
            // Another process started it first.
            Err(DurableError::Store(StoreError::Exists { .. })) => {
                DurableRun::resume_with(store, run_id, options)
            }
            other => other,
        }
    }

    fn with_attempt(
        attempt: Arc<Attempt>,
        number: u32,
        recorded: Vec<Interaction>,
        first_call: u64,
    ) -> DurableRun {
        let run_id = attempt.run_id();
        {
            let record = attempt.record();
            let mut unnoted = attempt
                .unnoted
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for interaction in &recorded {
                let key = &interaction.key;
                if interaction.kind == InteractionKind::Tool
                    && !record.tools.contains_key(key)
                    && !unnoted.contains(key)
                {
                    unnoted.push(key.clone());
                }
            }
        }
        let journal = Arc::new(StoreJournal {
            attempt: Arc::clone(&attempt),
            number,
            run_id: run_id.clone(),
        });
        let cassette = Cassette::journaled(
            run_id,
            recorded,
            first_call,
            journal,
            CassetteConfig::new().with_env_overrides(false),
        );
        DurableRun { attempt, cassette }
    }
}

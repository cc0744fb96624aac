//! A run store in memory: for tests, and for runs that need pausing but not a crash.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::{JournalEntry, RunRecord, RunStore, StoreError};

/// A [`RunStore`] in this process's memory: runs survive a pause, not the process.
/// It keeps the whole store contract (versioned saves, a save and its entries at once).
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<BTreeMap<String, (RunRecord, Vec<JournalEntry>)>>,
}

impl MemoryStore {
    fn runs(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (RunRecord, Vec<JournalEntry>)>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn missing(run_id: &str) -> StoreError {
    StoreError::NotFound {
        run_id: run_id.to_owned(),
    }
}

impl RunStore for MemoryStore {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        let mut runs = self.runs();
        if runs.contains_key(&record.run_id) {
            return Err(StoreError::Exists {
                run_id: record.run_id.clone(),
            });
        }
        let mut record = record.clone();
        record.version = 0;
        runs.insert(record.run_id.clone(), (record, Vec::new()));
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        Ok(self.runs().get(run_id).map(|(record, _)| record.clone()))
    }

    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError> {
        let mut runs = self.runs();
        let run = runs
            .get_mut(&record.run_id)
            .ok_or_else(|| missing(&record.run_id))?;
        if run.0.version != record.version {
            return Err(StoreError::Conflict {
                run_id: record.run_id.clone(),
                stored: run.0.version,
                saved: record.version,
            });
        }
        run.0 = record.clone();
        run.0.version = record.version + 1;
        run.1.extend_from_slice(entries);
        Ok(())
    }

    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        let mut runs = self.runs();
        let run = runs.get_mut(run_id).ok_or_else(|| missing(run_id))?;
        run.1.push(entry.clone());
        Ok(())
    }

    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let runs = self.runs();
        let run = runs.get(run_id).ok_or_else(|| missing(run_id))?;
        Ok(run.1.clone())
    }

    fn runs(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.runs().keys().cloned().collect())
    }
}

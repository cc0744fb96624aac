//! The embedded run store of tackle's durable runs: one SQLite file.
//!
//! [`SqliteStore`] implements [`RunStore`] over a single file, with SQLite compiled in
//! (nothing to install). Every write is its own transaction, committed in write-ahead
//! log mode with `synchronous = FULL`: when [`RunStore::append`] returns, the journal
//! entry survives the process being killed, and a process killed in the middle of a
//! write leaves the file as it was before it. Several processes may open one file (a
//! worker resuming a run, an operator resolving a call); SQLite serializes their
//! writes, waiting up to five seconds for a lock.
//!
//! ```
//! use tackle_runtime::durable::{RunRecord, RunStore};
//! use tackle_sqlite::SqliteStore;
//!
//! let path = std::env::temp_dir().join(format!("tackle-sqlite-doc-{}.db", std::process::id()));
//! let store = SqliteStore::open(&path)?;
//! store.create(&RunRecord::new("run-1", "Say hello."))?;
//! drop(store);
//! let again = SqliteStore::open(&path)?;
//! assert_eq!(again.load("run-1")?.unwrap().task, "Say hello.");
//! again.check()?;
//! # drop(again);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), tackle_runtime::durable::StoreError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use tackle_runtime::durable::{JournalEntry, RunRecord, RunStore, StoreError};

/// A [`RunStore`] in one SQLite file. See the [crate docs](crate).
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

fn io(error: rusqlite::Error) -> StoreError {
    StoreError::Io {
        message: error.to_string(),
    }
}

fn corrupt(what: &str, error: serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        message: format!("{what}: {error}"),
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Io {
        message: format!("could not encode: {e}"),
    })
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file and its tables when missing.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let connection = Connection::open(&path).map_err(|e| StoreError::Io {
            message: format!("{}: {e}", path.display()),
        })?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .map_err(io)?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 CREATE TABLE IF NOT EXISTS runs (
                     run_id TEXT PRIMARY KEY,
                     record TEXT NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS journal (
                     run_id TEXT NOT NULL,
                     seq INTEGER NOT NULL,
                     entry TEXT NOT NULL,
                     PRIMARY KEY (run_id, seq)
                 );",
            )
            .map_err(io)?;
        Ok(SqliteStore {
            path,
            connection: Mutex::new(connection),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the file with SQLite's `PRAGMA integrity_check`: `Corrupt` with what it
    /// found, unless it found nothing wrong.
    pub fn check(&self) -> Result<(), StoreError> {
        let verdict: String = self
            .connection()
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .map_err(io)?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(StoreError::Corrupt { message: verdict })
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while the lock was held leaves the connection as SQLite left it:
        // every statement is its own transaction.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl RunStore for SqliteStore {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        let text = encode(record)?;
        let inserted = self
            .connection()
            .execute(
                "INSERT OR IGNORE INTO runs (run_id, record) VALUES (?1, ?2)",
                params![record.run_id, text],
            )
            .map_err(io)?;
        if inserted == 0 {
            return Err(StoreError::Exists {
                run_id: record.run_id.clone(),
            });
        }
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let text: Option<String> = self
            .connection()
            .query_row(
                "SELECT record FROM runs WHERE run_id = ?1",
                params![run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(io)?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| corrupt("a run record", e)))
            .transpose()
    }

    fn save(&self, record: &RunRecord) -> Result<(), StoreError> {
        let text = encode(record)?;
        let updated = self
            .connection()
            .execute(
                "UPDATE runs SET record = ?2 WHERE run_id = ?1",
                params![record.run_id, text],
            )
            .map_err(io)?;
        if updated == 0 {
            return Err(StoreError::Io {
                message: format!("no run `{}`", record.run_id),
            });
        }
        Ok(())
    }

    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        let text = encode(entry)?;
        self.connection()
            .execute(
                "INSERT INTO journal (run_id, seq, entry)
                 SELECT ?1, COALESCE(MAX(seq) + 1, 0), ?2 FROM journal WHERE run_id = ?1",
                params![run_id, text],
            )
            .map_err(io)?;
        Ok(())
    }

    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT entry FROM journal WHERE run_id = ?1 ORDER BY seq")
            .map_err(io)?;
        let rows = statement
            .query_map(params![run_id], |row| row.get::<_, String>(0))
            .map_err(io)?;
        let mut entries = Vec::new();
        for row in rows {
            let text = row.map_err(io)?;
            entries.push(serde_json::from_str(&text).map_err(|e| corrupt("a journal entry", e))?);
        }
        Ok(entries)
    }

    fn runs(&self) -> Result<Vec<String>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT run_id FROM runs ORDER BY run_id")
            .map_err(io)?;
        let ids = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(io)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        Ok(ids)
    }
}

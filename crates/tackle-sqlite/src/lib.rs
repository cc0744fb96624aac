//! The embedded run store of tackle's durable runs: one SQLite file.
//!
//! [`SqliteStore`] implements [`RunStore`] over a single file, with SQLite compiled in
//! (nothing to install). Every write is its own transaction, taken with the write
//! lock up front (`BEGIN IMMEDIATE`) and committed in write-ahead log mode with
//! `synchronous = FULL`: when [`RunStore::append`] returns, the journal entry survives
//! the process being killed, and a process killed in the middle of a write leaves the
//! file as it was before it. Several processes may open one file (a worker resuming a
//! run, an operator deciding an approval); SQLite serializes their writes, waiting up
//! to five seconds for the lock ([`SqliteStore::with_busy_timeout`]). A record is saved
//! only over the version it was read at, so two writers cannot overwrite each other.
//!
//! **The store is the file and its `-wal` file.** Committed writes live in the
//! write-ahead log until SQLite copies them into the main file, so a copy of the main
//! file alone is an older state of the runs: resuming from it would run completed
//! calls again. Back a store up with [`SqliteStore::backup`] (SQLite's online backup,
//! safe while runs are written; `cargo tackle runs --store PATH backup TO` from a
//! shell), or copy both files while no process has the store open.
//!
//! [`SqliteStore::open`] checks the file first (`PRAGMA quick_check`) and refuses a
//! damaged one, or an empty file where a store was expected, with
//! [`StoreError::Corrupt`] naming it; [`check`](RunStore::check) runs SQLite's full
//! `integrity_check`.
//!
//! ```
//! use tackle_agent::durable::{RunRecord, RunStore};
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
//! # for end in ["", "-wal", "-shm"] { std::fs::remove_file(format!("{}{end}", path.display())).ok(); }
//! # Ok::<(), tackle_agent::durable::StoreError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use tackle_agent::durable::{JournalEntry, RunRecord, RunStore, StoreError};

/// How long a write waits for another process's lock unless told otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`RunStore`] in one SQLite file. See the [crate docs](crate).
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
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
    /// Opens the store at `path`, creating the file and its tables when there is no
    /// file (whole or not at all: a process killed while creating it leaves no file
    /// at `path`). An existing file is checked first (`PRAGMA quick_check`): a
    /// damaged or truncated one, or an empty one, is refused with
    /// [`StoreError::Corrupt`].
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(&path)?,
            _ => {}
        }
        let existed = match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == 0 => {
                return Err(StoreError::Corrupt {
                    message: format!(
                        "{} is an empty file, not a run store (truncated?); move it away to \
                         start a new store there",
                        path.display()
                    ),
                })
            }
            Ok(meta) => {
                check_header(&path, meta.len())?;
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => {
                return Err(StoreError::Io {
                    message: format!("{}: {e}", path.display()),
                })
            }
        };
        let failed = |e: rusqlite::Error| file_error(&path, e);
        let connection = Connection::open(&path).map_err(failed)?;
        connection
            .busy_timeout(DEFAULT_BUSY_TIMEOUT)
            .map_err(failed)?;
        if existed {
            let verdict: String = connection
                .query_row("PRAGMA quick_check", [], |row| row.get(0))
                .map_err(failed)?;
            if verdict != "ok" {
                return Err(StoreError::Corrupt {
                    message: format!("{} is damaged: {verdict}", path.display()),
                });
            }
        }
        connection.execute_batch(SETTINGS).map_err(failed)?;
        // The tables and the migration of an older store, in one transaction that
        // holds the write lock from its start: processes that open one new store at
        // the same moment take turns (each waiting up to the busy timeout), so none
        // sees a column half-added by another.
        let mut connection = connection;
        let migration = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(failed)?;
        migration.execute_batch(SCHEMA).map_err(failed)?;
        // Stores written before records had versions gain the column.
        let versioned: bool = migration
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'version'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map_err(failed)?
            > 0;
        if !versioned {
            migration
                .execute_batch("ALTER TABLE runs ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
                .map_err(failed)?;
        }
        migration.commit().map_err(failed)?;
        Ok(SqliteStore {
            path,
            connection: Mutex::new(connection),
        })
    }

    /// How long a write waits for another process's lock before it fails (default
    /// [`DEFAULT_BUSY_TIMEOUT`]). A journal write that fails stops the run it is for.
    pub fn with_busy_timeout(self, timeout: Duration) -> Result<SqliteStore, StoreError> {
        self.connection()
            .busy_timeout(timeout)
            .map_err(|e| self.error(e))?;
        Ok(self)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a consistent copy of the store to `to` (a new file, or one replaced),
    /// with SQLite's online backup: safe while other processes write runs, and
    /// complete, write-ahead log included.
    pub fn backup(&self, to: impl AsRef<Path>) -> Result<(), StoreError> {
        let to = to.as_ref();
        self.connection()
            .backup("main", to, None::<fn(rusqlite::backup::Progress)>)
            .map_err(|e| StoreError::Io {
                message: format!(
                    "backing {} up to {}: {e}",
                    self.path.display(),
                    to.display()
                ),
            })
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while the lock was held leaves the connection as SQLite left it:
        // every write is its own transaction, rolled back unless committed.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn error(&self, error: rusqlite::Error) -> StoreError {
        file_error(&self.path, error)
    }
}

/// Checks what SQLite's own check passes over: that the file starts as a database
/// does, and that it is as long as its header says (a copy cut short is refused).
/// The store's settings (outside a transaction: the journal mode cannot change in
/// one).
const SETTINGS: &str = "PRAGMA journal_mode = WAL;
     PRAGMA synchronous = FULL;";

/// The store's tables (`IF NOT EXISTS`: run on every open).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS runs (
         run_id TEXT PRIMARY KEY,
         record TEXT NOT NULL
     );
     CREATE TABLE IF NOT EXISTS journal (
         run_id TEXT NOT NULL,
         seq INTEGER NOT NULL,
         entry TEXT NOT NULL,
         PRIMARY KEY (run_id, seq)
     );";

/// Creates a new store at `path`, whole or not at all: the tables are written to a
/// file beside it, synced, then linked into place, so a process killed half-way
/// leaves no file at `path` (SQLite would otherwise leave an empty file there between
/// creating it and its first write, which [`SqliteStore::open`] rightly refuses).
/// When another process created the store meanwhile, that one is used.
fn create(path: &Path) -> Result<(), StoreError> {
    let io = |e: std::io::Error| StoreError::Io {
        message: format!("{}: {e}", path.display()),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "runs.db".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = path.with_file_name(format!(".{name}.creating-{}-{nanos}", std::process::id()));
    let cleanup = |temp: &Path| {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = temp.as_os_str().to_owned();
            file.push(suffix);
            let _ = std::fs::remove_file(std::path::PathBuf::from(file));
        }
    };
    let made = (|| {
        let connection = Connection::open(&temp).map_err(|e| file_error(&temp, e))?;
        connection
            .execute_batch(SETTINGS)
            .and_then(|()| connection.execute_batch(SCHEMA))
            .map_err(|e| file_error(&temp, e))?;
        // Closing checkpoints the log into the file.
        drop(connection);
        std::fs::File::open(&temp)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
        match std::fs::hard_link(&temp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
        }
        Ok(())
    })();
    cleanup(&temp);
    made
}

fn check_header(path: &Path, len: u64) -> Result<(), StoreError> {
    use std::io::Read;
    let refuse = |why: String| StoreError::Corrupt {
        message: format!("{} {why}", path.display()),
    };
    let mut header = [0u8; 100];
    let read = std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .map_err(|e| refuse(format!("has no whole database header ({len} bytes): {e}")));
    read?;
    if &header[..16] != b"SQLite format 3\0" {
        return Err(refuse("is not a SQLite database".to_owned()));
    }
    let page = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    if page < 512 || !page.is_power_of_two() {
        return Err(refuse(format!("has a damaged header (page size {page})")));
    }
    if !len.is_multiple_of(page) {
        return Err(refuse(format!(
            "is not a whole number of {page}-byte pages ({len} bytes): truncated?"
        )));
    }
    let word = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    // The page count in the header holds when written by the same change as the file,
    // and when no write-ahead log holds pages still to be copied in (a checkpoint
    // that a crash cut short writes the header first; SQLite finishes it from the log).
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let logged = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    if !logged && word(92) == word(24) && u64::from(word(28)) * page > len {
        return Err(refuse(format!(
            "is shorter ({len} bytes) than its {} pages: truncated?",
            word(28)
        )));
    }
    Ok(())
}

/// A SQLite error as a store error: `Corrupt` when the file is damaged or not a
/// database, naming it; `Io` otherwise.
fn file_error(path: &Path, error: rusqlite::Error) -> StoreError {
    let damaged = matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    );
    let message = format!("{}: {error}", path.display());
    if damaged {
        StoreError::Corrupt { message }
    } else {
        StoreError::Io { message }
    }
}

fn decode_record(text: &str, version: i64) -> Result<RunRecord, StoreError> {
    let mut record: RunRecord =
        serde_json::from_str(text).map_err(|e| corrupt("a run record", e))?;
    record.version = u64::try_from(version).unwrap_or_default();
    Ok(record)
}

fn insert_entry(
    tx: &Connection,
    run_id: &str,
    entry: &JournalEntry,
) -> Result<(), rusqlite::Error> {
    let text = serde_json::to_string(entry)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.execute(
        "INSERT INTO journal (run_id, seq, entry)
         SELECT ?1, COALESCE(MAX(seq) + 1, 0), ?2 FROM journal WHERE run_id = ?1",
        params![run_id, text],
    )?;
    Ok(())
}

impl RunStore for SqliteStore {
    fn create(&self, record: &RunRecord) -> Result<(), StoreError> {
        let text = encode(record)?;
        let inserted = self
            .connection()
            .execute(
                "INSERT OR IGNORE INTO runs (run_id, record, version) VALUES (?1, ?2, 0)",
                params![record.run_id, text],
            )
            .map_err(|e| self.error(e))?;
        if inserted == 0 {
            return Err(StoreError::Exists {
                run_id: record.run_id.clone(),
            });
        }
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let row: Option<(String, i64)> = self
            .connection()
            .query_row(
                "SELECT record, version FROM runs WHERE run_id = ?1",
                params![run_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        row.map(|(text, version)| decode_record(&text, version))
            .transpose()
    }

    fn save(&self, record: &RunRecord, entries: &[JournalEntry]) -> Result<(), StoreError> {
        let text = encode(record)?;
        let mut connection = self.connection();
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let stored: Option<i64> = tx
            .query_row(
                "SELECT version FROM runs WHERE run_id = ?1",
                params![record.run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        let Some(stored) = stored else {
            return Err(StoreError::NotFound {
                run_id: record.run_id.clone(),
            });
        };
        let stored = u64::try_from(stored).unwrap_or_default();
        if stored != record.version {
            return Err(StoreError::Conflict {
                run_id: record.run_id.clone(),
                stored,
                saved: record.version,
            });
        }
        let next = i64::try_from(record.version.saturating_add(1)).unwrap_or(i64::MAX);
        tx.execute(
            "UPDATE runs SET record = ?2, version = ?3 WHERE run_id = ?1",
            params![record.run_id, text, next],
        )
        .map_err(|e| self.error(e))?;
        for entry in entries {
            insert_entry(&tx, &record.run_id, entry).map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))
    }

    fn append(&self, run_id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        insert_entry(&tx, run_id, entry).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))
    }

    fn journal(&self, run_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT entry FROM journal WHERE run_id = ?1 ORDER BY seq")
            .map_err(|e| self.error(e))?;
        let mut rows = statement
            .query(params![run_id])
            .map_err(|e| self.error(e))?;
        let mut entries = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            let text = row.get_ref(0).map_err(|e| self.error(e))?;
            let text = text.as_str().map_err(|e| StoreError::Corrupt {
                message: format!("a journal entry: {e}"),
            })?;
            entries.push(serde_json::from_str(text).map_err(|e| corrupt("a journal entry", e))?);
        }
        Ok(entries)
    }

    fn runs(&self) -> Result<Vec<String>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT run_id FROM runs ORDER BY run_id")
            .map_err(|e| self.error(e))?;
        let ids = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(ids)
    }

    fn check(&self) -> Result<(), StoreError> {
        let verdict: String = self
            .connection()
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .map_err(|e| self.error(e))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(StoreError::Corrupt {
                message: format!("{} is damaged: {verdict}", self.path.display()),
            })
        }
    }
}

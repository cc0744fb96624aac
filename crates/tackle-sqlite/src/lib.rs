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
//! shell), or copy both files while no process has the store open. Each process
//! that opens the store keeps a row in it (an `openers` table, written into the main
//! file at once) until it closes the store: a main file that says it was open while
//! no log is beside it (a copy of the main file alone, or a store whose log was
//! deleted) is refused at [`open`](SqliteStore::open) with [`StoreError::Corrupt`]
//! saying what to do, rather than resumed without its latest writes.
//!
//! **A backup is marked as one** ([`SqliteStore::backup`]): restored, its runs that
//! had not ended do not make again, blindly, the writes they may have made after the
//! backup's moment (`tackle_agent::durable`, "Backups and restores").
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
use tackle_agent::durable::{JournalEntry, Restored, RunRecord, RunStore, StoreError};

/// How long a write waits for another process's lock unless told otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`RunStore`] in one SQLite file. See the [crate docs](crate).
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    /// This opener's row in the `openers` table, deleted when it closes.
    token: String,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // A clean close: this opener's row goes, and those of processes that died.
        // Then SQLite closes the file, copying the log into it when no other process
        // has it open.
        let connection = self.connection();
        // Not synced on its own: closing copies the log into the file and syncs it.
        let _ = connection.execute_batch("PRAGMA synchronous = NORMAL");
        let _ = connection.execute("DELETE FROM openers WHERE token = ?1", params![self.token]);
        forget_dead_openers(&connection);
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
        // The opener's row needs no sync of its own: the checkpoint below writes it
        // into the file and syncs that; a migration lost to a power cut runs again.
        connection
            .execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(failed)?;
        let migration = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(failed)?;
        // What the log holds before this opener writes: a process that had the store
        // open and died left its writes there; a log made just now by this opener is
        // empty.
        let logged = std::fs::metadata(wal_of(&path)).map_or(0, |m| m.len()) > 0;
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
        let here = std::fs::canonicalize(&path)
            .unwrap_or_else(|_| path.clone())
            .to_string_lossy()
            .into_owned();
        if logged {
            forget_dead_openers(&migration);
        } else {
            refuse_lost_log(&migration, &path, &here)?;
        }
        let token = opener_token();
        migration
            .execute(
                "INSERT INTO openers (token, pid, path) VALUES (?1, ?2, ?3)",
                params![token, i64::from(std::process::id()), here],
            )
            .map_err(failed)?;
        migration.commit().map_err(failed)?;
        // The row into the main file at once, so that a copy of the main file alone
        // made from now on says it was open (best effort: a busy log is copied later).
        let _ = connection.execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
        // Every write from here on is synced before it returns.
        connection
            .execute_batch("PRAGMA synchronous = FULL")
            .map_err(failed)?;
        Ok(SqliteStore {
            path,
            connection: Mutex::new(connection),
            token,
        })
    }

    /// When the backup this store was restored from was taken, in milliseconds since
    /// the Unix epoch; `None` for a store that is not a restored backup. See
    /// [`backup`](Self::backup).
    pub fn backed_up_at_ms(&self) -> Result<Option<u64>, StoreError> {
        let taken: Option<String> = self
            .connection()
            .query_row(
                "SELECT value FROM meta WHERE name = 'backed_up_at_ms'",
                [],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        Ok(taken.and_then(|t| t.parse().ok()))
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

    /// Writes a consistent copy of the store to `to` (a new file, or one replaced
    /// that no process has open), with SQLite's online backup: safe while other
    /// processes write runs, and complete, write-ahead log included. Whole or not at
    /// all: the copy is made beside `to` and moved into place once marked.
    ///
    /// **A backup is marked as one.** It keeps the moment it was taken
    /// ([`backed_up_at_ms`](Self::backed_up_at_ms)), and each run it copies that had
    /// not ended is marked [`restored`](RunRecord::restored): restored and resumed,
    /// such a run does not make again, blindly, the writes it may have made after the
    /// backup's moment; each waits as an unknown outcome for an operator (see
    /// `tackle_agent::durable`, "Backups and restores").
    pub fn backup(&self, to: impl AsRef<Path>) -> Result<(), StoreError> {
        let to = to.as_ref();
        let failed = |e: String| StoreError::Io {
            message: format!(
                "backing {} up to {}: {e}",
                self.path.display(),
                to.display()
            ),
        };
        if wal_of(to).exists() {
            return Err(failed(format!(
                "{} is beside it: a store there is open, or was not closed cleanly",
                wal_of(to).display()
            )));
        }
        let temp = beside(to, "backup");
        let made = (|| {
            self.connection()
                .backup("main", &temp, None::<fn(rusqlite::backup::Progress)>)
                .map_err(|e| failed(e.to_string()))?;
            mark_backup(&temp).map_err(|e| failed(e.to_string()))?;
            std::fs::File::open(&temp)
                .and_then(|f| f.sync_all())
                .and_then(|()| std::fs::rename(&temp, to))
                .map_err(|e| failed(e.to_string()))?;
            sync_parent(to).map_err(|e| failed(e.to_string()))
        })();
        remove_with_logs(&temp);
        made
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
     );
     CREATE TABLE IF NOT EXISTS openers (
         token TEXT PRIMARY KEY,
         pid INTEGER NOT NULL,
         path TEXT NOT NULL
     );
     CREATE TABLE IF NOT EXISTS meta (
         name TEXT PRIMARY KEY,
         value TEXT NOT NULL
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
    let temp = beside(path, "creating");
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
        sync_parent(path).map_err(io)
    })();
    remove_with_logs(&temp);
    made
}

/// A new file's name beside `path`, for work moved into place once done.
fn beside(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "runs.db".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    path.with_file_name(format!(".{name}.{what}-{}-{nanos}", std::process::id()))
}

/// Removes a database file and the files SQLite keeps beside it.
fn remove_with_logs(file: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Syncs the folder holding `path`, so a file linked or moved there stays.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::File::open(dir).and_then(|d| d.sync_all()),
        None => Ok(()),
    }
}

/// The write-ahead log beside the store `path`.
fn wal_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// A token naming this opener in the `openers` table.
fn opener_token() -> String {
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let nth = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{nanos}-{nth}", std::process::id())
}

/// Whether the process `pid` is alive (where the system says; elsewhere it is
/// taken as gone, which at worst misses a lost log, never refuses a whole store).
fn alive(pid: i64) -> bool {
    cfg!(target_os = "linux") && Path::new(&format!("/proc/{pid}")).exists()
}

/// Deletes the rows of openers whose process died (their log, if any, is recovered
/// by SQLite).
fn forget_dead_openers(connection: &Connection) {
    let pids: Vec<i64> = connection
        .prepare("SELECT DISTINCT pid FROM openers")
        .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect())
        .unwrap_or_default();
    for pid in pids.into_iter().filter(|pid| !alive(*pid)) {
        let _ = connection.execute("DELETE FROM openers WHERE pid = ?1", params![pid]);
    }
}

/// Refuses a store whose log is empty although a process that had it open left its
/// row in it: a process that died (its writes would be in its log), or one that had
/// the store open at another path (the file was copied while open). Either way this
/// is a copy of the main file alone, or a store whose log was deleted: its latest
/// writes are missing, and resuming its runs would make completed calls again. Rows
/// of live processes at this path are openers now, and stay.
fn refuse_lost_log(connection: &Connection, path: &Path, here: &str) -> Result<(), StoreError> {
    let rows: Vec<(i64, String)> = connection
        .prepare("SELECT pid, path FROM openers")
        .and_then(|mut s| {
            s.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect()
        })
        .map_err(|e| file_error(path, e))?;
    let lost: Vec<String> = rows
        .iter()
        .filter(|(pid, at)| at != here || !alive(*pid))
        .map(|(pid, at)| format!("process {pid} at {at}"))
        .collect();
    if lost.is_empty() {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        message: format!(
            "{} was open ({}) when it was copied or its write-ahead log was removed, and \
             no log is beside it ({}): its latest writes are missing, and resuming its \
             runs would make completed calls again. Put the -wal file back beside it, or \
             restore a backup made with `cargo tackle runs --store PATH backup TO`. (Only \
             if the log is known to hold nothing, say its writer died and another program \
             closed the store since: `DELETE FROM openers` in it.)",
            path.display(),
            lost.join(", "),
            wal_of(path).display()
        ),
    })
}

/// Marks the copy `file` as a backup taken now: the moment in `meta`, each run not
/// ended `restored`, and no openers (a copy is open nowhere). One transaction.
fn mark_backup(file: &Path) -> Result<(), rusqlite::Error> {
    let taken = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut connection = Connection::open(file)?;
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    tx.execute("DELETE FROM openers", [])?;
    tx.execute(
        "INSERT OR REPLACE INTO meta (name, value) VALUES ('backed_up_at_ms', ?1)",
        params![taken.to_string()],
    )?;
    let runs: Vec<(String, String)> = tx
        .prepare("SELECT run_id, record FROM runs")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (run_id, text) in runs {
        let Ok(mut record) = serde_json::from_str::<RunRecord>(&text) else {
            // A record the store cannot read is left for `open` and `check` to report.
            continue;
        };
        if record.ended() {
            continue;
        }
        record.restored = Some(Restored {
            backed_up_at_ms: taken,
        });
        let text = serde_json::to_string(&record)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        tx.execute(
            "UPDATE runs SET record = ?2 WHERE run_id = ?1",
            params![run_id, text],
        )?;
    }
    tx.commit()?;
    // Closing copies the log into the file and removes it.
    connection.close().map_err(|(_, e)| e)
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

//! The SQLite store passes the run stores' conformance kit: each check on a file of
//! its own, every handle of a check its own connection to that file.

use std::path::PathBuf;
use std::sync::Arc;

use tackle_agent::durable::{conformance, RunStore};
use tackle_sqlite::SqliteStore;

#[tokio::test]
async fn the_sqlite_store_passes_the_conformance_kit() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("tackle-sqlite-kit-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let open = |name: &str| -> Arc<dyn RunStore> {
        Arc::new(SqliteStore::open(dir.join(format!("{name}.db"))).expect("the store opens"))
    };
    let report = conformance::check(&open).await;
    report.assert_passed();
    assert_eq!(report.passed.len(), conformance::CHECKS.len());
    std::fs::remove_dir_all(&dir).ok();
}

/// A new store is created whole or not at all: after opening, the folder holds the
/// store (and SQLite's log files), no empty file and no leftover of the creation; a
/// leftover of a creation a killed process did not finish does not stand in the way;
/// and an empty file at the path (not one the store made) is still refused.
#[test]
fn a_new_store_is_created_whole_and_leaves_nothing_behind() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("tackle-sqlite-create-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    // What a process killed while creating leaves: a half-made file beside the path.
    std::fs::write(dir.join(".runs.db.creating-1-2"), b"").expect("leftover");
    let store = SqliteStore::open(dir.join("runs.db")).expect("the store opens");
    drop(store);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".runs.db.creating-1-2")
        .collect();
    names.sort();
    assert!(
        names.iter().all(|n| n.starts_with("runs.db")),
        "nothing else is left: {names:?}"
    );
    let size = std::fs::metadata(dir.join("runs.db"))
        .expect("the store")
        .len();
    assert!(size > 0, "the store file has its tables");
    assert!(
        SqliteStore::open(dir.join("runs.db")).is_ok(),
        "it opens again"
    );
    std::fs::write(dir.join("empty.db"), b"").expect("an empty file");
    assert!(SqliteStore::open(dir.join("empty.db")).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

/// No one ever sees an empty file at a store's path while it is being created (what a
/// process killed at that moment would leave, and what `open` then refuses): a watcher
/// looks at each new path as fast as it can while the store is made there.
#[test]
fn a_store_being_created_is_never_seen_empty() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("tackle-sqlite-watch-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    for i in 0..50 {
        let path = dir.join(format!("runs-{i}.db"));
        let seen = {
            let path = path.clone();
            std::thread::spawn(move || {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                loop {
                    if let Ok(meta) = std::fs::metadata(&path) {
                        return Some(meta.len());
                    }
                    if std::time::Instant::now() > deadline {
                        return None;
                    }
                    std::hint::spin_loop();
                }
            })
        };
        let store = SqliteStore::open(&path).expect("the store opens");
        let first = seen.join().expect("the watcher");
        assert_ne!(first, Some(0), "{} was seen empty", path.display());
        drop(store);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Eight openers of one new store at the same moment (threads, each with its own
/// connection, as processes have): every open succeeds, in every round. The tables
/// and the migration of an older store are one transaction that holds the write
/// lock, so none sees another's column half-added ("duplicate column name").
#[test]
fn eight_openers_of_one_new_store_at_once_all_succeed() {
    for round in 0..20 {
        let dir = std::env::temp_dir().join(format!(
            "tackle-sqlite-openers-{}-{round}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("runs.db");
        let start = Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    SqliteStore::open(&path).map(|_| ())
                })
            })
            .collect();
        let failures: Vec<String> = openers
            .into_iter()
            .filter_map(|o| o.join().expect("the opener ran").err())
            .map(|e| e.to_string())
            .collect();
        assert!(failures.is_empty(), "round {round}: {failures:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

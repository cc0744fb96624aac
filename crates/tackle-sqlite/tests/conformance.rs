//! The SQLite store passes the run stores' conformance kit: each check on a file of
//! its own, every handle of a check its own connection to that file.

use std::path::PathBuf;
use std::sync::Arc;

use tackle_runtime::durable::{conformance, RunStore};
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

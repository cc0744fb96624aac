//! The runner of the test binaries that have their own `main` (`harness = false`):
//! runs the named checks the command line's filters select, each caught if it panics,
//! and reports them the way libtest does.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Instant;

/// A Tokio runtime for a check: two workers, every driver.
pub fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

/// Runs `checks` (filtered by the non-flag arguments, as `cargo test NAME` passes them).
pub fn run(checks: &[(&str, fn())]) -> ExitCode {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let chosen: Vec<_> = checks
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in chosen {
        let started = Instant::now();
        match catch_unwind(AssertUnwindSafe(check)) {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({} ms)", started.elapsed().as_millis());
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

//! The outside world of the durable-run crash tests: a ledger file (from
//! `TACKLE_LEDGER`) that tools append to, each line on disk before the tool goes on,
//! and a small seeded generator for kill points and victims.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The ledger file of this run, from the environment.
pub fn ledger() -> PathBuf {
    PathBuf::from(std::env::var_os("TACKLE_LEDGER").unwrap_or_default())
}

/// The lines of the file at `path` (none when it does not exist).
pub fn ledger_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Appends `line` to the ledger.
pub fn append_line(line: &str) {
    append_to(&ledger(), line);
}

/// Appends `line` to the file at `path`, synced to disk before returning.
pub fn append_to(path: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("ledger");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("write");
    file.sync_all().expect("sync");
}

/// A small xorshift generator: kill points and victims without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

//! tackle from a terminal.
//!
//! Two command-line programs share this crate:
//!
//! - **Your tools** ([`tools`]). Tools live in your binary (they register at link time),
//!   so this CLI is a library entry your program calls. With the facade's `cli`
//!   feature, `src/bin/tools.rs` is three lines:
//!
//!   ```text
//!   fn main() {
//!       tackle_cli::tools::main()
//!   }
//!   ```
//!
//!   (`tackle::cli::main()` through the facade.) Then `cargo run --bin tools -- list`,
//!   `show KEY --form openai`, `search QUERY`, `call KEY JSON --grant CAP`,
//!   `serve --stdio`, `pipeline run FILE`.
//! - **Cassettes** ([`cassettes`]), the `cargo-tackle` binary (`cargo install
//!   tackle-cli`, then `cargo tackle ...`): `cassette show`, `cassette diff`,
//!   `cassette verify`, `cassette prune`, and `review` / `accept` / `reject` of the
//!   pending recordings that `TACKLE_CASSETTE=review` writes beside cassettes; and
//!   `runs --store PATH` for durable runs ([`runs`]): list, show, approve, reject,
//!   resolve, export, backup; and `eval` for evals against their baselines
//!   ([`evals`]): `eval run` (`cargo test`, collecting the reports), `eval report`,
//!   `eval diff` (the cases that got worse, better or changed) and `eval accept` (a
//!   run as the new baseline, a review step).
//!
//! Both exit with the codes of [`Exit`], which scripts can rely on, and colour their
//! output only on a terminal (never with `NO_COLOR` set).

pub mod cassettes;
pub mod evals;
mod exit;
mod files;
pub mod runs;
mod term;
pub mod tools;

pub use exit::{CliError, Exit, CLOSED_OUTPUT};
/// The JSON-pointer differences the review shows (the core's, which a replay reports
/// too).
pub use tackle_core::replay::changes::{json_diff, Change};

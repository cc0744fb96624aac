//! Replay: record a run's side-effecting calls once, then replay them offline.
//!
//! A [`Cassette`] sits inside the door, at its replay stage. Every call through the
//! door (tool calls, and operations such as model completions and broker requests) is
//! keyed by its key and the canonical JSON of its redacted input. What happens then
//! depends on the call's [`ReplayPolicy`](crate::spec::ReplayPolicy) and the
//! cassette's [`Mode`]:
//!
//! | policy \ mode | replay | once (file exists: as replay) | new | rewrite | live |
//! |---|---|---|---|---|---|
//! | must-stub | hit: recorded; miss: `CassetteMiss`, never executed | file missing: execute + record | miss: execute + append | execute + record | execute |
//! | fail-loud | `ReplayGap` before any lookup, never executed | file missing: execute, record a tombstone | execute, tombstone | execute, tombstone | execute |
//! | recorded-result | hit: recorded; miss: execute, and [`Cassette::finish`] fails naming the call (a warning when live reads are allowed; the call's own error when strict) | file missing: execute + record | miss: execute + append | execute + record | execute |
//!
//! Mode `review` routes as `rewrite`, but [`Cassette::finish`] writes the recording
//! beside the cassette as a pending file ([`file::pending_path`]) for a person to
//! accept or reject, and leaves the cassette as it was. A replay with
//! `TACKLE_CASSETTE_USAGE=1` writes which recorded calls it used
//! ([`file::Usage`]), for pruning the rest.
//!
//! A replay also runs what it can run without touching the world, to notice when
//! the code under test changed: pure tools (`side_effects = none`, `recorded-result`),
//! operations that ask for it ([`Operation::with_replay_check`](crate::call::Operation::with_replay_check):
//! scripted test models) and, in mode `check`, `read` tools. Each such call's caller
//! gets the recording; an outcome that differs is a
//! [`CassetteWarning::OutcomeChanged`], and [`Cassette::finish`] fails listing them
//! with their JSON-pointer [`changes`]. [`CassetteConfig::with_recorded_results`]
//! turns this off (the specification's `recorded-result`: served, never run).
//!
//! Identical calls form a FIFO consumed in recorded order; a call never replays
//! something recorded in the same run. Tool calls match by key in any order (parallel
//! calls finish in any order); operations must come in their recorded order, and one
//! out of position is a `Divergence`. The door records the outcome its caller gets
//! (shaped, sanitized, errors scrubbed of secrets); errors replay as errors. A
//! replayed output is validated against the tool's *current* output schema, unless
//! it was recorded shaped.
//!
//! The mode comes from [`CassetteConfig`], overridden by `TACKLE_CASSETTE`; when `CI`
//! is set, writing modes are refused unless `TACKLE_CASSETTE_ALLOW_CI=1`. A cassette
//! is written only by [`Cassette::finish`], so a test that panics never overwrites a
//! good cassette.
//!
//! The parts: [`mode`] (modes and configuration), [`cassette`] (one run's recording),
//! `router` (the table above, for one call), [`diagnose`] (misses and warnings),
//! [`changes`] (JSON-pointer differences, as checks and the review show them),
//! [`file`](mod@file) (the file format), [`redact`] (secrets out before hashing and saving),
//! [`journal`] (each call appended as it happens, for durable runs).

pub mod cassette;
pub mod changes;
pub mod diagnose;
pub mod file;
pub mod journal;
pub mod mode;
pub mod redact;
pub(crate) mod router;
pub mod warning;

pub use cassette::{Cassette, FinishReport};
pub use diagnose::diff;
pub use file::{load, CassetteError, CassetteFile, Interaction, InteractionKind, Outcome};
pub use journal::{CallStarted, Journal};
pub use mode::{CassetteConfig, Mode};
pub use redact::Redactor;
pub use warning::CassetteWarning;

/// Opens the cassette of the enclosing test, named after its module path and function:
/// `<crate>/tests/cassettes/<test binary>.<module>.<test>.json`.
///
/// ```text
/// let cassette = tackle::cassette!()?;                        // CassetteConfig::new()
/// let cassette = tackle::cassette!(CassetteConfig::new().with_secret(key))?;
/// ```
#[macro_export]
macro_rules! cassette {
    () => {
        $crate::cassette!($crate::replay::CassetteConfig::new())
    };
    ($config:expr) => {{
        fn __tackle_here() {}
        $crate::replay::Cassette::for_test(
            ::core::env!("CARGO_MANIFEST_DIR"),
            ::core::any::type_name_of_val(&__tackle_here),
            $config,
        )
    }};
}

#[cfg(test)]
mod tests {
    use super::cassette::test_name;

    #[test]
    fn test_names_from_type_names() {
        assert_eq!(
            test_name("replay::cells::records::{{closure}}::__tackle_here"),
            "replay.cells.records"
        );
        assert_eq!(
            test_name("door::plain_test::__tackle_here"),
            "door.plain_test"
        );
    }
}

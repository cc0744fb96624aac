//! The cassette's mode: whether a run replays, records, or neither.
//!
//! The mode comes from [`CassetteConfig`], overridden by `TACKLE_CASSETTE`; when `CI`
//! is set, writing modes are refused unless `TACKLE_CASSETTE_ALLOW_CI=1`.

use std::fmt;
use std::str::FromStr;

use super::file::CassetteError;
use super::redact::Redactor;

/// How a cassette treats calls; see the table in the [module docs](super).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Serve recorded outcomes; never write. The default. Pure tools
    /// (`side_effects = none`) and test models that say so
    /// ([`Operation::with_replay_check`](crate::call::Operation::with_replay_check))
    /// also run, and each outcome that differs from its recording fails the run at
    /// [`Cassette::finish`](super::Cassette::finish) (see the [module docs](super)).
    #[default]
    Replay,
    /// Record when the file is missing; otherwise as `Replay`.
    Once,
    /// Serve what is recorded, execute and append what is not.
    New,
    /// Execute everything and write a fresh file.
    Rewrite,
    /// No cassette: execute everything, write nothing.
    Live,
    /// Execute everything, as `rewrite`, but write the fresh recording beside the
    /// cassette as a pending file ([`pending_path`](super::file::pending_path)), for
    /// a person to accept or reject (`cargo tackle review`). The cassette itself is
    /// not touched; a recording identical to it writes nothing.
    Review,
    /// As `replay`, and `read` tools run too: each output that differs from its
    /// recording fails the run at [`Cassette::finish`](super::Cassette::finish). For
    /// checking that the services a cassette recorded still answer the same; it
    /// needs them, so it is never the default.
    Check,
}

impl Mode {
    /// Every mode, by name.
    pub const ALL: [(&'static str, Mode); 7] = [
        ("replay", Mode::Replay),
        ("once", Mode::Once),
        ("new", Mode::New),
        ("rewrite", Mode::Rewrite),
        ("live", Mode::Live),
        ("review", Mode::Review),
        ("check", Mode::Check),
    ];

    /// Whether this mode may write a cassette.
    pub fn writes(self) -> bool {
        matches!(self, Mode::Once | Mode::New | Mode::Rewrite | Mode::Review)
    }

    /// The mode in force: `TACKLE_CASSETTE` overrides `configured`; under `CI`, a
    /// writing mode is refused unless `TACKLE_CASSETTE_ALLOW_CI=1`. `var` reads the
    /// environment (pass `|k| std::env::var(k).ok()`).
    pub fn resolve(
        configured: Mode,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Mode, CassetteError> {
        let mode = match var("TACKLE_CASSETTE") {
            Some(value) if !value.trim().is_empty() => value.parse()?,
            _ => configured,
        };
        let ci = var("CI").is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"));
        if mode.writes() && ci && var("TACKLE_CASSETTE_ALLOW_CI").as_deref() != Some("1") {
            return Err(CassetteError::WritingInCi {
                mode: mode.to_string(),
            });
        }
        Ok(mode)
    }
}

impl FromStr for Mode {
    type Err = CassetteError;
    fn from_str(s: &str) -> Result<Mode, CassetteError> {
        let wanted = s.trim().to_ascii_lowercase();
        Mode::ALL
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| CassetteError::UnknownMode {
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Mode::ALL
            .iter()
            .find(|(_, m)| m == self)
            .map_or("replay", |(n, _)| n);
        f.write_str(name)
    }
}

/// How to open a cassette.
#[derive(Clone, Debug)]
pub struct CassetteConfig {
    pub(super) mode: Mode,
    pub(super) strict: bool,
    pub(super) live_reads: bool,
    pub(super) redactor: Redactor,
    pub(super) use_env: bool,
    pub(super) recorded_results: bool,
    pub(super) live_operations: bool,
}

impl Default for CassetteConfig {
    fn default() -> Self {
        CassetteConfig::new()
    }
}

impl CassetteConfig {
    /// Replay mode, not strict, live reads not allowed, token redaction,
    /// environment overrides on.
    pub fn new() -> CassetteConfig {
        CassetteConfig {
            mode: Mode::Replay,
            strict: false,
            live_reads: false,
            redactor: Redactor::new(),
            use_env: true,
            recorded_results: false,
            live_operations: false,
        }
    }

    /// The configured mode (`TACKLE_CASSETTE` still overrides it).
    pub fn with_mode(mut self, mode: Mode) -> CassetteConfig {
        self.mode = mode;
        self
    }

    /// Strict: a recorded-result miss under replay is an error of the call itself,
    /// and nothing runs (by default the call runs live and the run fails at
    /// [`Cassette::finish`](super::Cassette::finish)).
    pub fn with_strict(mut self, strict: bool) -> CassetteConfig {
        self.strict = strict;
        self
    }

    /// Allows `recorded-result` calls that are not in the cassette to run live during
    /// a replay: each is a [`CassetteWarning::RanLive`](super::CassetteWarning::RanLive)
    /// in the finish report instead of a failed run (default `false`: a replay that
    /// needed the live world fails at [`Cassette::finish`](super::Cassette::finish),
    /// naming the calls).
    pub fn with_live_reads(mut self, allowed: bool) -> CassetteConfig {
        self.live_reads = allowed;
        self
    }

    /// The `recorded-result` policy exactly as the specification has it: under replay
    /// a recorded output is served and the tool does not run, pure tools included
    /// (default `false`: pure tools and test models run and are compared with their
    /// recordings, see the [module docs](super)). For a cassette whose pure tools are
    /// costly to run, or whose recordings were edited by hand.
    pub fn with_recorded_results(mut self, served: bool) -> CassetteConfig {
        self.recorded_results = served;
        self
    }

    /// Operations (a model's completions, and any other code handed to the door as an
    /// [`Operation`](crate::call::Operation)) run live whatever the mode, and are
    /// neither served nor recorded; tool calls go as the mode says (default `false`).
    /// With mode `replay`, [`with_recorded_results`](Self::with_recorded_results) and
    /// [`with_strict`](Self::with_strict), this is a *counterfactual* replay: a new
    /// model, prompt or tool description asked live, while every tool call is answered
    /// from the recording and a call it does not hold fails with `CassetteMiss` (tools
    /// that write never run). Recordings left unused are expected then: such a run is
    /// not [`finish`](super::Cassette::finish)ed as a check.
    pub fn with_live_operations(mut self, live: bool) -> CassetteConfig {
        self.live_operations = live;
        self
    }

    /// Redacts this secret value wherever it occurs.
    pub fn with_secret(mut self, value: impl Into<String>) -> CassetteConfig {
        self.redactor = self.redactor.with_secret(value);
        self
    }

    /// Whether `TACKLE_CASSETTE` and `CI` may override the configured mode (default
    /// `true`). `false` uses the configured mode as is, for programs and tests that
    /// manage their own cassettes in temporary folders.
    pub fn with_env_overrides(mut self, read: bool) -> CassetteConfig {
        self.use_env = read;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_resolve_against_the_environment() {
        assert_eq!("Rewrite".parse::<Mode>().unwrap(), Mode::Rewrite);
        let err = "record".parse::<Mode>().unwrap_err().to_string();
        assert!(
            err.contains("`record`")
                && err.contains("replay, once, new, rewrite, live, review, check"),
            "{err}"
        );

        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(Mode::resolve(Mode::Replay, env(&[])).unwrap(), Mode::Replay);
        assert_eq!(
            Mode::resolve(Mode::Replay, env(&[("TACKLE_CASSETTE", "new")])).unwrap(),
            Mode::New
        );
        assert!(Mode::resolve(Mode::Replay, env(&[("TACKLE_CASSETTE", "bogus")])).is_err());
        let refused = Mode::resolve(
            Mode::Replay,
            env(&[("TACKLE_CASSETTE", "once"), ("CI", "true")]),
        )
        .unwrap_err();
        assert!(
            matches!(refused, CassetteError::WritingInCi { .. }),
            "{refused}"
        );
        assert!(
            Mode::resolve(Mode::Rewrite, env(&[("CI", "1")])).is_err(),
            "the configured mode is refused too"
        );
        assert_eq!(
            Mode::resolve(Mode::Replay, env(&[("CI", "true")])).unwrap(),
            Mode::Replay,
            "replaying is fine in CI"
        );
        assert_eq!(
            Mode::resolve(Mode::Live, env(&[("CI", "true")])).unwrap(),
            Mode::Live
        );
        assert_eq!(
            Mode::resolve(
                Mode::New,
                env(&[("CI", "true"), ("TACKLE_CASSETTE_ALLOW_CI", "1")])
            )
            .unwrap(),
            Mode::New
        );
        assert_eq!(
            Mode::resolve(Mode::New, env(&[("CI", "false")])).unwrap(),
            Mode::New
        );
    }
}

//! The modes a dataset runs in, and why a run cannot start.

use serde::{Deserialize, Serialize};

/// How a dataset's cases run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalMode {
    /// Each case from its cassette, offline and deterministic: the default, and CI's.
    #[default]
    Replay,
    /// Each case live (model and tools), written to its cassette: to make or refresh
    /// the cassettes.
    Record,
    /// The model live (a new model, prompt or tool description), the tools answered
    /// from each case's recording: writes never run; the first call the recording does
    /// not hold ends the case there (its [`Divergence`](super::Divergence)), scored as far as it went.
    Counterfactual,
    /// Everything live, nothing recorded.
    Live,
}

impl EvalMode {
    /// Every mode, by name (`TACKLE_EVAL` takes these).
    pub const ALL: [(&'static str, EvalMode); 4] = [
        ("replay", EvalMode::Replay),
        ("record", EvalMode::Record),
        ("counterfactual", EvalMode::Counterfactual),
        ("live", EvalMode::Live),
    ];

    /// The mode `TACKLE_EVAL` names, if it is set.
    pub fn from_env() -> Result<Option<EvalMode>, EvalError> {
        match std::env::var("TACKLE_EVAL") {
            Err(_) => Ok(None),
            Ok(name) => EvalMode::ALL
                .iter()
                .find(|(n, _)| *n == name.trim())
                .map(|(_, mode)| Some(*mode))
                .ok_or_else(|| {
                    EvalError::Invalid(format!(
                        "TACKLE_EVAL={name}: the modes are replay, record, counterfactual and live"
                    ))
                }),
        }
    }
}

impl std::fmt::Display for EvalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = EvalMode::ALL
            .iter()
            .find(|(_, m)| m == self)
            .map_or("replay", |(n, _)| n);
        f.write_str(name)
    }
}

/// Why a dataset could not run (a case that fails is in the report, not here).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The run's settings or the dataset cannot be used as they are.
    #[error("{0}")]
    Invalid(String),
    /// The report could not be written where `TACKLE_EVAL_REPORTS` says.
    #[error("the eval report {path} could not be written: {source}")]
    Report {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

//! Evaluators as data: what a dataset file names, with their settings.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An evaluator as a dataset file names it. In YAML, one without settings is its name
/// (`- EqualsExpected`), one with settings a map (`- Contains: {value: "4.90"}`).
///
/// Each is an [`Evaluator`](super::Evaluator) once the run starts
/// (the run builds it); custom evaluators are written in Rust (the trait) and
/// given to the run ([`Eval::evaluator`](super::Eval::evaluator)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum EvaluatorSpec {
    /// The answer equals the case's `expected_output` (JSON equality; a text answer
    /// against a text).
    EqualsExpected,
    /// The answer equals `value`.
    Equals {
        /// The value.
        value: Value,
    },
    /// The answer contains `value`: a text within a text answer, members within an
    /// object answer (each equal), an element within an array answer.
    Contains {
        /// What must be in the answer.
        value: Value,
        /// Whether letter case matters, for texts (default `true`).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        case_sensitive: bool,
    },
    /// The answer is valid for a JSON Schema (for a Rust type, see
    /// [`IsInstance`](super::IsInstance)).
    MatchesSchema {
        /// The schema.
        schema: Value,
    },
    /// The case took at most this long.
    MaxDuration {
        /// Seconds.
        seconds: f64,
    },
    /// The case's model calls cost at most this much (as the agent's pricing says; a
    /// case without a price passes).
    MaxCost {
        /// The most it may cost, in the pricing's currency (a decimal number).
        #[schemars(with = "f64")]
        amount: rust_decimal::Decimal,
    },
    /// The case's model calls used at most these many tokens (each limit optional).
    MaxTokens {
        /// Prompt tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<u64>,
        /// Answer tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<u64>,
        /// Both together.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// The agent called tools at most `max` times.
    MaxToolCalls {
        /// The most.
        max: usize,
    },
    /// The agent asked its model at most `max` times.
    MaxModelRequests {
        /// The most.
        max: usize,
    },
    /// The tools called are the tools of the case's `expected_trajectory`, as a
    /// multiset (order and arguments aside); the score is the share in common.
    ToolCorrectness,
    /// The tool calls match the case's `expected_trajectory` in `mode`, arguments
    /// compared by each tool's matcher.
    TrajectoryMatch {
        /// How the sequences must match (default `strict`).
        #[serde(default, skip_serializing_if = "is_default")]
        mode: TrajectoryMode,
        /// How arguments are compared, by tool (its key, or its key without the
        /// version); tools not named use `default_arguments`.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        arguments: BTreeMap<String, ArgumentMatch>,
        /// How arguments of tools not named in `arguments` are compared (default
        /// `exact`).
        #[serde(default, skip_serializing_if = "is_default")]
        default_arguments: ArgumentMatch,
    },
    /// A model judges the answer by `rubric`, with a structured verdict (pass, score,
    /// reason); its call goes through the door, so it records and replays with the
    /// case. The model is the run's judge ([`Eval::judge`](super::Eval::judge)).
    #[serde(rename = "LLMJudge")]
    LlmJudge {
        /// What a good answer is.
        rubric: String,
        /// Whether the judge sees the task (default `true`).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        include_input: bool,
        /// Whether the judge sees the expected answer (default `false`).
        #[serde(default, skip_serializing_if = "is_false")]
        include_expected: bool,
    },
}

/// How a trajectory must match the expected one (the modes of agentevals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrajectoryMode {
    /// The same calls in the same order.
    #[default]
    Strict,
    /// The same calls in any order.
    Unordered,
    /// Every call made is an expected one (some expected may be missing).
    Subset,
    /// Every expected call was made (others may be made too).
    Superset,
}

/// How a call's arguments are compared with the expected ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArgumentMatch {
    /// Equal, as JSON.
    #[default]
    Exact,
    /// Not compared.
    Ignore,
    /// Each argument given is an expected one, with its value (some may be left out).
    Subset,
    /// Each expected argument is given, with its value (others may be given too).
    Superset,
}

/// Evaluator lists as plain data (a name, or a map of a name to its settings), in any
/// format: YAML's own enum form (tags such as `!Contains`) is neither read nor written.
pub(super) mod as_data {
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use super::EvaluatorSpec;

    pub(crate) fn serialize<S: Serializer>(
        specs: &[EvaluatorSpec],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let values = specs
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<Value>, _>>()
            .map_err(S::Error::custom)?;
        values.serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<EvaluatorSpec>, D::Error> {
        Vec::<Value>::deserialize(deserializer)?
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                serde_json::from_value(value)
                    .map_err(|e| D::Error::custom(format!("evaluator #{}: {e}", i + 1)))
            })
            .collect()
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

impl EvaluatorSpec {
    /// The evaluator's name, as reports show it.
    pub fn name(&self) -> &'static str {
        match self {
            EvaluatorSpec::EqualsExpected => "EqualsExpected",
            EvaluatorSpec::Equals { .. } => "Equals",
            EvaluatorSpec::Contains { .. } => "Contains",
            EvaluatorSpec::MatchesSchema { .. } => "MatchesSchema",
            EvaluatorSpec::MaxDuration { .. } => "MaxDuration",
            EvaluatorSpec::MaxCost { .. } => "MaxCost",
            EvaluatorSpec::MaxTokens { .. } => "MaxTokens",
            EvaluatorSpec::MaxToolCalls { .. } => "MaxToolCalls",
            EvaluatorSpec::MaxModelRequests { .. } => "MaxModelRequests",
            EvaluatorSpec::ToolCorrectness => "ToolCorrectness",
            EvaluatorSpec::TrajectoryMatch { .. } => "TrajectoryMatch",
            EvaluatorSpec::LlmJudge { .. } => "LLMJudge",
        }
    }

    /// A trajectory match in `mode`, every tool's arguments compared exactly.
    pub fn trajectory(mode: TrajectoryMode) -> EvaluatorSpec {
        EvaluatorSpec::TrajectoryMatch {
            mode,
            arguments: BTreeMap::new(),
            default_arguments: ArgumentMatch::Exact,
        }
    }

    /// Contains `value`, letter case mattering.
    pub fn contains(value: impl Into<Value>) -> EvaluatorSpec {
        EvaluatorSpec::Contains {
            value: value.into(),
            case_sensitive: true,
        }
    }
}

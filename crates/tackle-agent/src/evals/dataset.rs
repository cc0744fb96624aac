//! Datasets: cases to run an agent on, as data (YAML or JSON files, or built in Rust).

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spec::EvaluatorSpec;
use crate::model::Message;

/// A named set of [`Case`]s, with evaluators that apply to every case.
///
/// ```
/// use tackle::evals::{Case, Dataset, EvaluatorSpec};
///
/// let dataset = Dataset::from_yaml(r#"
/// name: fees
/// evaluators: [EqualsExpected]
/// cases:
///   - name: small order
///     input: What is the fee on 32.00?
///     expected_output: The fee is 4.90.
/// "#)?;
/// assert_eq!(dataset.cases[0].name, "small order");
/// assert_eq!(dataset.evaluators, [EvaluatorSpec::EqualsExpected]);
///
/// // The same dataset, built in Rust.
/// let built = Dataset::new("fees")
///     .evaluator(EvaluatorSpec::EqualsExpected)
///     .case(Case::new("small order", "What is the fee on 32.00?").expect_output("The fee is 4.90."));
/// assert_eq!(built, dataset);
/// # Ok::<(), tackle::evals::DatasetError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// The dataset's name (reports and cassette folders use it).
    pub name: String,
    /// Evaluators applied to every case, before the case's own.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "super::spec::as_data"
    )]
    #[schemars(with = "Vec<EvaluatorSpec>")]
    pub evaluators: Vec<EvaluatorSpec>,
    /// The cases, in order.
    pub cases: Vec<Case>,
}

/// One task for the agent, with what is expected of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name: unique in its dataset (its cassette is named after it).
    pub name: String,
    /// The task: a text, or a conversation whose last turn is the user's task.
    pub input: CaseInput,
    /// The expected answer: a text, or the typed answer as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<Value>,
    /// The tool calls expected, in order (for trajectory evaluators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_trajectory: Option<Vec<ExpectedCall>>,
    /// Anything else worth keeping with the case (copied into its report).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schemars(with = "Map<String, Value>")]
    pub metadata: Map<String, Value>,
    /// Evaluators for this case alone, after the dataset's.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "super::spec::as_data"
    )]
    #[schemars(with = "Vec<EvaluatorSpec>")]
    pub evaluators: Vec<EvaluatorSpec>,
}

/// What a case asks: a task, or a conversation ending with the user's task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CaseInput {
    /// The user's task.
    Task(String),
    /// Earlier turns, then the user's task (the last turn, a `user` one).
    Conversation {
        /// The turns, in order.
        conversation: Vec<Turn>,
    },
}

/// One turn of a conversation given as a case's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Who spoke.
    pub role: TurnRole,
    /// What was said.
    pub content: String,
}

/// Who spoke a [`Turn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TurnRole {
    /// The user.
    User,
    /// The agent.
    Assistant,
}

/// A tool call a case expects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCall {
    /// The tool: its key (`namespace.name@version`), or its key without the version
    /// (any version then matches).
    pub tool: String,
    /// The arguments expected, compared as the evaluator's matcher for the tool says;
    /// none: any arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl ExpectedCall {
    /// A call of `tool` with any arguments.
    pub fn new(tool: impl Into<String>) -> ExpectedCall {
        ExpectedCall {
            tool: tool.into(),
            arguments: None,
        }
    }

    /// A call of `tool` with `arguments`.
    pub fn with(tool: impl Into<String>, arguments: Value) -> ExpectedCall {
        ExpectedCall {
            tool: tool.into(),
            arguments: Some(arguments),
        }
    }

    /// Whether `key` (a called tool's key) is this call's tool.
    pub fn names(&self, key: &str) -> bool {
        key == self.tool
            || (!self.tool.contains('@')
                && key
                    .split_once('@')
                    .is_some_and(|(unversioned, _)| unversioned == self.tool))
    }
}

/// Why a dataset could not be read, written or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The document is not a dataset: its line and column (from 1; 0 when unknown).
    #[error("{path}line {line} column {column}: {message}", path = path_prefix(path.as_deref()))]
    Parse {
        /// The file, when read from one.
        path: Option<String>,
        /// From 1 (0 when unknown).
        line: usize,
        /// From 1 (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The dataset reads, but is not usable as it is.
    #[error("dataset `{dataset}`: {message}")]
    Invalid {
        /// The dataset's name.
        dataset: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file name that ends neither in `.yaml`/`.yml` nor in `.json`.
    #[error("{0}: a dataset file ends in .yaml, .yml or .json")]
    UnknownFormat(String),
}

fn path_prefix(path: Option<&str>) -> String {
    path.map_or_else(String::new, |p| format!("{p}: "))
}

impl Case {
    /// A case named `name` asking `task`.
    pub fn new(name: impl Into<String>, task: impl Into<String>) -> Case {
        Case {
            name: name.into(),
            input: CaseInput::Task(task.into()),
            expected_output: None,
            expected_trajectory: None,
            metadata: Map::new(),
            evaluators: Vec::new(),
        }
    }

    /// A case named `name` continuing `conversation` (its last turn is the user's task).
    pub fn conversation(name: impl Into<String>, conversation: Vec<Turn>) -> Case {
        Case {
            input: CaseInput::Conversation { conversation },
            ..Case::new(name, "")
        }
    }

    /// Expects `output` as the answer (a text, or the typed answer as JSON).
    pub fn expect_output(mut self, output: impl Into<Value>) -> Case {
        self.expected_output = Some(output.into());
        self
    }

    /// Expects these tool calls, in order.
    pub fn expect_calls(mut self, calls: impl IntoIterator<Item = ExpectedCall>) -> Case {
        self.expected_trajectory = Some(calls.into_iter().collect());
        self
    }

    /// Adds an evaluator for this case alone.
    pub fn evaluator(mut self, evaluator: EvaluatorSpec) -> Case {
        self.evaluators.push(evaluator);
        self
    }

    /// Keeps `value` under `key` in the case's metadata.
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Case {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The task (the last user turn) and the earlier turns as messages.
    pub fn task_and_history(&self) -> (String, Vec<Message>) {
        match &self.input {
            CaseInput::Task(task) => (task.clone(), Vec::new()),
            CaseInput::Conversation { conversation } => {
                let (last, earlier) = match conversation.split_last() {
                    Some((last, earlier)) => (last.content.clone(), earlier),
                    None => (String::new(), &[][..]),
                };
                let history = earlier
                    .iter()
                    .map(|turn| match turn.role {
                        TurnRole::User => Message::user(turn.content.clone()),
                        TurnRole::Assistant => Message::assistant(turn.content.clone(), Vec::new()),
                    })
                    .collect();
                (last, history)
            }
        }
    }

    /// The task as one text (for reports and judges).
    pub fn task_text(&self) -> String {
        self.task_and_history().0
    }
}

impl Dataset {
    /// An empty dataset named `name`.
    pub fn new(name: impl Into<String>) -> Dataset {
        Dataset {
            name: name.into(),
            evaluators: Vec::new(),
            cases: Vec::new(),
        }
    }

    /// Adds a case.
    pub fn case(mut self, case: Case) -> Dataset {
        self.cases.push(case);
        self
    }

    /// Adds an evaluator for every case.
    pub fn evaluator(mut self, evaluator: EvaluatorSpec) -> Dataset {
        self.evaluators.push(evaluator);
        self
    }

    /// Reads a dataset from YAML. Unknown fields are refused, with their line.
    pub fn from_yaml(text: &str) -> Result<Dataset, DatasetError> {
        Self::yaml(text, None)
    }

    /// Reads a dataset from JSON. Unknown fields are refused, with their line.
    pub fn from_json(text: &str) -> Result<Dataset, DatasetError> {
        Self::json(text, None)
    }

    fn yaml(text: &str, path: Option<&str>) -> Result<Dataset, DatasetError> {
        crate::pipeline::nesting::scan(text, "a dataset").map_err(|(line, column, message)| {
            DatasetError::Parse {
                path: path.map(str::to_owned),
                line,
                column,
                message,
            }
        })?;
        let dataset: Dataset = yaml_serde::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
            let text = e.to_string();
            let suffix = format!(" at line {line} column {column}");
            DatasetError::Parse {
                path: path.map(str::to_owned),
                line,
                column,
                message: text.strip_suffix(&suffix).unwrap_or(&text).to_owned(),
            }
        })?;
        dataset.check()?;
        Ok(dataset)
    }

    fn json(text: &str, path: Option<&str>) -> Result<Dataset, DatasetError> {
        let dataset: Dataset = serde_json::from_str(text).map_err(|e| {
            let text = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            DatasetError::Parse {
                path: path.map(str::to_owned),
                line: e.line(),
                column: e.column(),
                message: text.strip_suffix(&suffix).unwrap_or(&text).to_owned(),
            }
        })?;
        dataset.check()?;
        Ok(dataset)
    }

    /// The dataset as YAML.
    pub fn to_yaml(&self) -> String {
        yaml_serde::to_string(self).unwrap_or_default()
    }

    /// The dataset as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a dataset file: YAML (`.yaml`, `.yml`) or JSON (`.json`).
    pub fn load(path: impl AsRef<Path>) -> Result<Dataset, DatasetError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let yaml = is_yaml(path).ok_or_else(|| DatasetError::UnknownFormat(shown.clone()))?;
        let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Io {
            path: shown.clone(),
            source,
        })?;
        if yaml {
            Self::yaml(&text, Some(&shown))
        } else {
            Self::json(&text, Some(&shown))
        }
    }

    /// Writes the dataset to `path`, as YAML or JSON by its extension (whole or not at
    /// all: through a temporary file beside it).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), DatasetError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let yaml = is_yaml(path).ok_or_else(|| DatasetError::UnknownFormat(shown.clone()))?;
        let text = if yaml {
            self.to_yaml()
        } else {
            self.to_json() + "\n"
        };
        super::write_whole(path, text.as_bytes()).map_err(|source| DatasetError::Io {
            path: shown,
            source,
        })
    }

    /// The JSON Schema of dataset files, for editors (`docs/evals.schema.json` is this
    /// schema; a `# yaml-language-server: $schema=...` line points an editor at it).
    pub fn json_schema() -> Value {
        let schema = schemars::schema_for!(Dataset);
        serde_json::to_value(schema).unwrap_or(Value::Null)
    }

    /// Refuses what reads but cannot run: no name, a case without a name, two cases
    /// of one name.
    fn check(&self) -> Result<(), DatasetError> {
        let invalid = |message: String| DatasetError::Invalid {
            dataset: self.name.clone(),
            message,
        };
        if self.name.trim().is_empty() {
            return Err(invalid("the dataset has no name".to_owned()));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, case) in self.cases.iter().enumerate() {
            if case.name.trim().is_empty() {
                return Err(invalid(format!("case #{} has no name", i + 1)));
            }
            if !names.insert(case.name.as_str()) {
                return Err(invalid(format!("two cases are named `{}`", case.name)));
            }
            if let CaseInput::Conversation { conversation } = &case.input {
                if conversation.last().is_none_or(|t| t.role != TurnRole::User) {
                    return Err(invalid(format!(
                        "case `{}`: a conversation ends with the user's task",
                        case.name
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Whether `path` names a YAML file (`Some(true)`), a JSON one (`Some(false)`), or
/// neither.
fn is_yaml(path: &Path) -> Option<bool> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => Some(true),
        Some("json") => Some(false),
        _ => None,
    }
}

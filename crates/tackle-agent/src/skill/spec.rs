//! The portable shapes of a skill: [`SkillSpec`], [`Example`] and [`Subgraph`].
//!
//! A [`Skill`](super::Skill) is bound to a Rust state type; a [`SkillSpec`] is the same
//! skill as plain data (its state as a JSON Schema), to write to JSON or YAML, send to
//! another process or language, and read back. [`Skill::to_spec`](super::Skill::to_spec)
//! makes one; [`Skill::from_spec`](super::Skill::from_spec) binds one to a state type
//! again, checking that the type declares the same output keys.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::SkillKind;
use crate::pipeline::Pipeline;

/// An example of a skill's use: the inputs it is given and, optionally, the output
/// expected (a state of the skill; checked against its schema when the skill is
/// built). An agent skill reads its task from `inputs["task"]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The inputs.
    pub inputs: Map<String, Value>,
    /// The output expected, if stated.
    #[serde(default)]
    pub expected_output: Option<Map<String, Value>>,
}

impl Example {
    /// An example with `inputs` and no expected output.
    pub fn new(inputs: Map<String, Value>) -> Example {
        Example {
            inputs,
            expected_output: None,
        }
    }

    /// The same example with the output expected.
    pub fn with_expected_output(mut self, output: Map<String, Value>) -> Example {
        self.expected_output = Some(output);
        self
    }
}

/// A skill's subgraph: a pipeline document, by path or inline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Subgraph {
    /// The path of a YAML pipeline document, read when the skill is built.
    Path(String),
    /// The document itself.
    Inline(Box<Pipeline>),
}

/// A skill as portable data: no Rust types, its state as a JSON Schema. Serializes with
/// the seed's field names; `site_id` is derived, not stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillSpec {
    /// A slug.
    pub name: String,
    /// Semver.
    pub version: String,
    /// Agent, workflow or utility.
    pub kind: SkillKind,
    /// What the skill does.
    pub description: String,
    /// Tool ids it may call.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Its subgraph, if it has one.
    #[serde(default)]
    pub subgraph: Option<Subgraph>,
    /// Its instructions.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The state's JSON Schema; its properties are the declared output channels.
    pub state_schema: Value,
    /// Capabilities the caller must hold.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Examples.
    #[serde(default)]
    pub examples: Vec<Example>,
    /// Whether the events of its tool calls reach the caller (default true).
    #[serde(default = "yes")]
    pub bubble_events: bool,
    /// The state's keys: the only keys the skill may write.
    #[serde(default)]
    pub declared_output_keys: Vec<String>,
}

fn yes() -> bool {
    true
}

impl SkillSpec {
    /// `name@version`.
    pub fn site_id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

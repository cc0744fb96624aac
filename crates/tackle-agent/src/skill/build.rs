//! Building a skill ([`SkillBuilder`], from [`Skill::builder`] or a portable spec),
//! and every check a skill passes before it exists.

use std::any::type_name;

use serde_json::Value;
use tackle_core::schema::output_schema;

use super::spec::{Example, SkillSpec, Subgraph};
use super::{check_against, Skill, SkillError, SkillKind, SkillState};
use crate::pipeline::{Pipeline, PipelineError};

/// Builds a [`Skill`]; start with [`Skill::builder`].
#[derive(Debug)]
#[must_use]
pub struct SkillBuilder {
    skill: Skill,
    raw_examples: Vec<(Value, Option<Value>)>,
}

impl Skill {
    /// Starts a skill named `name` (the rules of a tool's name) at `version` (semver) whose state is `S`.
    pub fn builder<S: SkillState>(
        name: impl Into<String>,
        version: impl Into<String>,
        kind: SkillKind,
    ) -> SkillBuilder {
        let state_schema = output_schema::<S>();
        let output_keys = state_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        SkillBuilder {
            skill: Skill {
                name: name.into(),
                version: version.into(),
                kind,
                description: String::new(),
                tools: Vec::new(),
                system_prompt: String::new(),
                requires: Vec::new(),
                examples: Vec::new(),
                subgraph: None,
                graph: None,
                bubble_events: true,
                state_type: type_name::<S>(),
                state_schema,
                output_keys,
            },
            raw_examples: Vec::new(),
        }
    }

    /// Binds a portable spec to the state type `S`: the spec's declared output keys
    /// (when it lists them) must be `S`'s, and everything is checked as
    /// [`SkillBuilder::build`] checks it (a subgraph path is read).
    pub fn from_spec<S: SkillState>(spec: SkillSpec) -> Result<Skill, SkillError> {
        let mut builder = Skill::builder::<S>(spec.name, spec.version, spec.kind)
            .with_description(spec.description)
            .with_bubble_events(spec.bubble_events);
        builder.skill.tools = spec.tools;
        builder.skill.requires = spec.requires;
        builder.skill.system_prompt = spec.system_prompt.unwrap_or_default();
        builder.skill.subgraph = spec.subgraph;
        builder.skill.examples = spec.examples;
        let mut declared = spec.declared_output_keys;
        declared.sort();
        let mut actual = builder.skill.output_keys.clone();
        actual.sort();
        if !declared.is_empty() && declared != actual {
            return Err(SkillError::SpecMismatch {
                site_id: builder.skill.site_id(),
                spec: declared,
                state: builder.skill.state_type,
                actual,
            });
        }
        builder.build()
    }
}

impl SkillBuilder {
    /// What the skill does (required).
    pub fn with_description(mut self, text: impl Into<String>) -> SkillBuilder {
        self.skill.description = text.into();
        self
    }

    /// The tools it may use: registry keys (`ns.name@v`, `ns.name` or a bare name).
    pub fn with_tools(mut self, keys: &[&str]) -> SkillBuilder {
        self.skill.tools = keys.iter().map(|k| (*k).to_owned()).collect();
        self
    }

    /// The system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> SkillBuilder {
        self.skill.system_prompt = prompt.into();
        self
    }

    /// Capabilities (grant patterns are matched against them) the caller must hold.
    pub fn with_requires(mut self, capabilities: &[&str]) -> SkillBuilder {
        self.skill.requires = capabilities.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Adds an example: `inputs` (a JSON object; an agent skill's task is
    /// `inputs["task"]`) and the output expected, if stated (a state of the skill).
    /// Both are checked by [`build`](Self::build).
    pub fn with_example(mut self, inputs: Value, expected_output: Option<Value>) -> SkillBuilder {
        self.raw_examples.push((inputs, expected_output));
        self
    }

    /// The subgraph: a pipeline document run by [`Skill::run_workflow`].
    pub fn with_subgraph(mut self, graph: Pipeline) -> SkillBuilder {
        self.skill.subgraph = Some(Subgraph::Inline(Box::new(graph)));
        self
    }

    /// The subgraph, from a YAML pipeline document at `path` (read by
    /// [`build`](Self::build)).
    pub fn with_subgraph_file(mut self, path: impl Into<String>) -> SkillBuilder {
        self.skill.subgraph = Some(Subgraph::Path(path.into()));
        self
    }

    /// Whether tool events reach the caller's event sink (default true).
    pub fn with_bubble_events(mut self, bubble: bool) -> SkillBuilder {
        self.skill.bubble_events = bubble;
        self
    }

    /// Checks the name, version, description, state and examples, reads the subgraph
    /// and checks that its nodes write only declared output keys.
    pub fn build(self) -> Result<Skill, SkillError> {
        let mut skill = self.skill;
        if !tackle_contract::is_name(&skill.name) {
            return Err(SkillError::BadName(skill.name));
        }
        if !is_semver(&skill.version) {
            return Err(SkillError::BadVersion {
                name: skill.name,
                version: skill.version,
            });
        }
        if skill.description.trim().is_empty() {
            return Err(SkillError::NoDescription(skill.name));
        }
        if skill.output_keys.is_empty() {
            return Err(SkillError::StateNotObject {
                site_id: skill.site_id(),
                state: skill.state_type,
            });
        }
        let first_raw = skill.examples.len();
        for (i, (inputs, expected)) in self.raw_examples.into_iter().enumerate() {
            let bad = |problems: String| SkillError::BadExample {
                site_id: skill.site_id(),
                index: first_raw + i,
                problems,
            };
            let Value::Object(inputs) = inputs else {
                return Err(bad("the inputs are not a JSON object".into()));
            };
            let expected_output = match expected {
                None => None,
                Some(Value::Object(out)) => Some(out),
                Some(_) => return Err(bad("the expected output is not a JSON object".into())),
            };
            skill.examples.push(Example {
                inputs,
                expected_output,
            });
        }
        for (index, example) in skill.examples.iter().enumerate() {
            if let Some(out) = &example.expected_output {
                check_against(&skill.state_schema, &Value::Object(out.clone())).map_err(
                    |problems| SkillError::BadExample {
                        site_id: skill.site_id(),
                        index,
                        problems: format!("the expected output does not fit the state: {problems}"),
                    },
                )?;
            }
        }
        skill.graph = match &skill.subgraph {
            None => None,
            Some(Subgraph::Inline(graph)) => Some((**graph).clone()),
            Some(Subgraph::Path(path)) => {
                let read = std::fs::read_to_string(path).map_err(|e| PipelineError::Parse {
                    line: 0,
                    column: 0,
                    message: format!("cannot read `{path}`: {e}"),
                });
                let graph = read.and_then(|text| Pipeline::from_yaml(&text));
                Some(graph.map_err(|error| SkillError::Subgraph {
                    site_id: skill.site_id(),
                    error: Box::new(error),
                })?)
            }
        };
        if let Some(graph) = &skill.graph {
            for node in &graph.nodes {
                let key = node.output_key();
                if !skill.output_keys.iter().any(|k| k == key) {
                    return Err(SkillError::UndeclaredWrite {
                        site_id: skill.site_id(),
                        node: node.id.clone(),
                        key: key.to_owned(),
                        declared: skill.output_keys.clone(),
                    });
                }
            }
        }
        Ok(skill)
    }
}

/// `MAJOR.MINOR.PATCH`, optionally `-pre.release` and `+build`, numbers without
/// leading zeros.
fn is_semver(version: &str) -> bool {
    let (main, build) = match version.split_once('+') {
        Some((m, b)) => (m, Some(b)),
        None => (version, None),
    };
    let (core, pre) = match main.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (main, None),
    };
    let number = |p: &str| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p == "0" || !p.starts_with('0'))
    };
    let ident =
        |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && pre.is_none_or(|p| {
            p.split('.')
                .all(|id| ident(id) && (!id.bytes().all(|b| b.is_ascii_digit()) || number(id)))
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver() {
        for good in [
            "0.0.0",
            "1.2.3",
            "10.20.30",
            "1.0.0-rc.1",
            "1.0.0-alpha-x.0",
            "1.0.0+build.7",
            "1.0.0-beta+exp.sha.5114f85",
        ] {
            assert!(is_semver(good), "{good}");
        }
        for bad in [
            "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+", "v1.2.3",
            "1.2.x", "",
        ] {
            assert!(!is_semver(bad), "{bad}");
        }
    }
}

//! The agents a worker runs: each a skill and the context its calls run with on the
//! worker, by name, over the worker's runtime.

use std::collections::HashMap;
use std::sync::Arc;

use tackle_agent::react::ReactSkill;
use tackle_core::{Runtime, ToolContext};

/// An agent a worker can run: a skill, and the context its calls run with there
/// (its grants, secrets and resources: the worker's, not the caller's).
#[derive(Clone)]
pub struct Agent {
    pub(crate) skill: Arc<ReactSkill>,
    pub(crate) context: ToolContext,
    pub(crate) runtime: Arc<Runtime>,
}

impl Agent {
    /// The skill.
    pub fn skill(&self) -> &ReactSkill {
        &self.skill
    }
}

/// The agents a worker runs, by name, over the worker's runtime. Every worker of a
/// task queue must have the same agents, built the same way: a workflow replayed on
/// another worker must take the same steps.
#[derive(Clone)]
pub struct Agents {
    runtime: Arc<Runtime>,
    agents: HashMap<String, Agent>,
}

impl Default for Agents {
    /// No agents, over an empty runtime.
    fn default() -> Agents {
        Agents::new(&Arc::new(Runtime::default()))
    }
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.agents.keys().collect();
        names.sort();
        f.debug_struct("Agents").field("names", &names).finish()
    }
}

impl Agents {
    /// No agents yet, over `runtime` (every activity is a run of it).
    pub fn new(runtime: &Arc<Runtime>) -> Agents {
        Agents {
            runtime: Arc::clone(runtime),
            agents: HashMap::new(),
        }
    }

    /// The runtime the agents' calls go through.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Adds `skill` under `name`, its calls running with `context` (replacing an agent
    /// of that name).
    pub fn with(
        mut self,
        name: impl Into<String>,
        skill: ReactSkill,
        context: ToolContext,
    ) -> Agents {
        self.agents.insert(
            name.into(),
            Agent {
                skill: Arc::new(skill),
                context,
                runtime: Arc::clone(&self.runtime),
            },
        );
        self
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.get(name)
    }
}

//! Agents and what they run on: models and providers on the wire, the ReAct loop, streaming, replay (cassettes, files, tables, workflows), durable runs, many runs at once, chains, pipelines and skills.
//!
//! One test binary for the area (each module is one former test file): the facade is
//! linked once here, not once per file. A module's tools stay its own: each builds its
//! runtime with `Runtime::from_inventory_in(module_path!())`.

mod agent_models;
mod agent_react;
mod chain;
mod durable;
mod evals;
mod evals_html;
mod genai_tracing;
mod local_model;
mod many_runs;
mod openai_client;
mod pipeline;
mod provider_oracles;
mod providers;
mod providers_wire;
mod providers_wire_classes;
mod replay_behaviour;
mod replay_files;
mod replay_table;
mod replay_workflow;
mod runs;
mod salience;
mod seed_broker;
mod seed_codomyrmex;
mod skills;
mod streaming;

/// Helpers the modules share (`suite/tests/support/`), compiled once.
mod support {
    #[path = "../support/capture.rs"]
    pub mod capture;
    #[path = "../support/fake_endpoint.rs"]
    pub mod fake_endpoint;
    #[path = "../support/interest.rs"]
    pub mod interest;
}

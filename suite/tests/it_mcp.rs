//! The MCP bridge end to end: serving a runtime (stdio and HTTP), resources and prompts, the HTTP front's limits, importing servers (requests, OAuth, attacks).
//!
//! One test binary for the area (each module is one former test file): the facade is
//! linked once here, not once per file. A module's tools stay its own: each builds its
//! runtime with `Runtime::from_inventory_in(module_path!())`.

mod mcp_http_limits;
mod mcp_import_attacks;
mod mcp_import_requests;
mod mcp_oauth_import;
mod mcp_resources;
mod mcp_rounds;
mod mcp_serve;

/// Helpers the modules share (`suite/tests/support/`), compiled once.
mod support {
    #[path = "../support/interest.rs"]
    pub mod interest;
    #[path = "../support/stateless.rs"]
    pub mod stateless;
}

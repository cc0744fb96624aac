//! The MCP bridge of tackle, on the official Rust SDK (`rmcp`).
//!
//! MCP (the Model Context Protocol) is how agents outside Rust reach tools. This crate
//! goes both ways:
//!
//! * **serving**: [`McpServer`] gives MCP clients every tool of a
//!   [`Runtime`](tackle_core::Runtime), over stdio ([`serve_stdio`]) or streamable
//!   HTTP ([`serve_http`], or [`serve_http_with`] and [`HttpOptions`]: loopback
//!   `Host` and `Origin` values only unless told otherwise). Every call goes
//!   through the door with the grants the server was configured with; with
//!   [`McpServer::with_tasks`], calls of clients that ask for MCP tasks become durable
//!   tasks that survive the server process ([`tasks`]);
//! * **importing**: [`import_stdio`] and [`import_http`] register an MCP server's
//!   tools as dynamic tools under the `mcp` namespace, so they pass the same gates,
//!   validation and replay as local ones; into a runtime's live tools, they follow the
//!   server's list changes ([`ImportTarget`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use tackle_mcp::{identity, serve_stdio, McpServer};
//! use tackle_core::{Runtime, ToolContext};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Arc::new(Runtime::from_inventory()?);
//! let server = McpServer::new(runtime, identity!(), ToolContext::new().with_grant("tools:*"))?;
//! serve_stdio(server).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod client;
mod error;
mod http;
pub mod import;
pub mod logging;
pub mod names;
pub mod oauth;
pub mod oauth_client;
pub mod prompts;
pub mod resources;
pub mod rounds;
pub mod server;
pub mod stdio;
pub mod task_input;
pub mod tasks;
pub mod trace;

pub use self::http::{serve_http, serve_http_with, HttpOptions, HttpServer};
pub use error::McpError;
pub use import::{
    import_http, import_stdio, import_stdio_with, register_offline, Elicitation,
    ElicitationHandler, ImportOptions, ImportTarget, Lifecycle, McpImport, ServerStderr,
};
pub use names::NameMap;
pub use oauth::{AccessGrant, Introspection, OAuthResource, TokenRejected, TokenValidator};
pub use oauth_client::{Authorizer, ClientIdentity, OAuthClient};
pub use server::{Identity, McpServer};
pub use stdio::{serve_io, serve_stdio, serve_stdio_with, StdioOptions, DEFAULT_MAX_LINE_BYTES};
pub use tasks::{TaskOptions, TaskSupport};

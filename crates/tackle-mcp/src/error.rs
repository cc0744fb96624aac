//! [`McpError`]: what can go wrong serving or importing, one enum for both sides
//! of the bridge.

/// What can go wrong serving or importing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// Two served tools would get the same MCP name.
    #[error("the tools `{first}` and `{second}` would both be served as `{name}`")]
    NameCollision {
        /// The name.
        name: String,
        /// The first tool's key.
        first: String,
        /// The second tool's key.
        second: String,
    },
    /// A served name would be longer than MCP allows.
    #[error("`{key}` would be served as `{name}`, longer than MCP's 128 characters")]
    NameTooLong {
        /// The tool's key.
        key: String,
        /// The name.
        name: String,
    },
    /// A tool's spec could not be put in MCP's form.
    #[error("`{key}` cannot be described to MCP clients: {message}")]
    Describe {
        /// The tool's key.
        key: String,
        /// Why.
        message: String,
    },
    /// A server's setting is not valid (a `requestState` key shorter than 32 bytes).
    #[error("the MCP server cannot be set up so: {0}")]
    Config(String),
    /// Serving failed (the transport could not start, or broke).
    #[error("serving MCP failed: {0}")]
    Serve(String),
    /// Connecting to a server to import from failed, or it did not answer in time.
    #[error("cannot import from the MCP server {server}: {message}")]
    Connect {
        /// The command or URL.
        server: String,
        /// Why.
        message: String,
    },
    /// An import did not finish within its time limit
    /// ([`ImportOptions::connect_timeout`](crate::ImportOptions::connect_timeout)):
    /// connecting, listing the tools (every page) and registering them, not counting
    /// the time a person takes to authorize (the OAuth client's own limit). Nothing
    /// of the import stays.
    #[error("cannot import from the MCP server {server}: not done within {} ms", limit.as_millis())]
    Timeout {
        /// The command or URL.
        server: String,
        /// The time limit.
        limit: std::time::Duration,
    },
    /// A protected server (HTTP `401` or `403`) could not be authorized: the import
    /// has no OAuth client, or the authorization failed. Not retried: asking again
    /// would not change the answer.
    #[error("the MCP server {server} requires authorization: {message}")]
    Authorization {
        /// The URL.
        server: String,
        /// Why it could not be authorized.
        message: String,
    },
    /// Two tools of a server would be imported under one key.
    #[error(
        "the MCP server {server} has tools `{first}` and `{second}`, which would both be imported as `{key}`; nothing was imported"
    )]
    ImportCollision {
        /// The server's name.
        server: String,
        /// The first remote tool name.
        first: String,
        /// The second remote tool name.
        second: String,
        /// The key both would get.
        key: String,
    },
    /// The server's task store failed.
    #[error("the MCP server's tasks: {message}")]
    Tasks {
        /// What failed.
        message: String,
    },
    /// An imported tool could not be registered; nothing of the import stays.
    #[error("an imported tool could not be registered: {0}")]
    Register(#[from] tackle_core::RegistryError),
    /// A socket could not be bound or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A resource cannot be published as given.
    #[error("the resource `{uri}` cannot be published: {message}")]
    Resource {
        /// Its URI or URI template.
        uri: String,
        /// Why.
        message: String,
    },
    /// A prompt cannot be published as given.
    #[error("the prompt `{name}` cannot be published: {message}")]
    Prompt {
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
}

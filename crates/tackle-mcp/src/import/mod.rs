//! Importing an MCP server's tools into a registry, behind the door.
//!
//! [`import_stdio`] starts a server as a child process and speaks MCP over its stdio;
//! [`import_http`] connects to a streamable-HTTP endpoint. Either lists the server's
//! tools and registers each as a dynamic tool:
//!
//! * key `mcp.<server>.<tool>@<server version>`: `<server>` is the name the importer
//!   gives ([`ImportOptions::new`]), never the remote server's own (a server must not
//!   choose the permission its tools require), and names are brought to registry form
//!   (characters other than letters, digits, `_` and `-` become `_`);
//! * side effects `read` when the tool says `readOnlyHint: true`, else `external`;
//! * trust `mcp` (results are sanitized by the `mcp` policy);
//! * the permission `mcp:<server>` required of callers (deny by default), unless
//!   [`ImportOptions::with_requires`] says otherwise;
//! * the server's input and output schemas.
//!
//! A call's value is the result's `structuredContent`; without one, its text (or the
//! JSON object or array the text holds, as many servers return JSON as text). A result
//! whose content holds images, audio or binary resources keeps them, structured
//! content or not: its value is then the list of its blocks as [`ContentPart`]s (`{"type": "image", "mimeType", "data"}`,
//! files for audio and blobs, text for the rest; see `tackle::content`).
//!
//! The tools go into a registry (before the runtime is built from it: they stay as
//! listed) or into a runtime's live tools
//! ([`Runtime::live_tools`](tackle_core::Runtime::live_tools), see
//! [`ImportTarget`]): those follow the server's `notifications/tools/list_changed`,
//! each key added, removed or changed audited.
//!
//! An import declares MCP's Tasks extension ([`ImportOptions::with_tasks`]): a server
//! that answers a call with a task is polled until the task ends, and the task's id is
//! kept as the call's checkpoint first (`ToolContext::checkpoint`), so a durable run
//! resumed after a crash goes on polling the same task instead of starting the work
//! again.
//!
//! Calls then go through the door like any other: capabilities, validation, approval,
//! replay (a cassette replays MCP calls offline), shaping, sanitization, audit.
//!
//! An import lives as long as the program: a connection that is gone (a session a
//! restarted server forgot, or a child that exited, for [`import_stdio_with`], which
//! knows how to start it again) is made again at the next call, with backoff. A call in flight when its connection is lost is made again only when its
//! tool is safe to run again (`ToolSpec::rerun_safe`), and fails with `Disconnected`
//! otherwise: it may have reached the server. The call timeout
//! ([`ImportOptions::with_call_timeout`]) is each imported tool's `timeout_ms`, held
//! by the door like any tool's: a server that does not answer in time gives a
//! `Timeout` error, and the request is dropped: never a hang.
//!
//! The import itself is bounded by [`ImportOptions::connect_timeout`]: connecting,
//! listing every page of tools and registering them, not counting the time a person
//! takes to authorize; past it, [`McpError::Timeout`] and nothing of the import stays.
//! The tools are registered in one batch, in time linear in their number. Over stdio,
//! a line the server cuts short costs its own message only (see `child`).
//!
//! [`ContentPart`]: tackle_core::content::ContentPart

mod authorize;
mod call;
mod child;
mod connection;
mod content;
mod listing;
mod options;
mod requests;
mod spec;

use std::sync::Arc;

use tackle_core::registry::LiveTools;
use tackle_core::{DynamicTool, Registry, ToolError, ToolHandler, ToolSpec};

use crate::oauth_client::Authorization;
use crate::McpError;
use connection::{
    listen_for_changes, refresh_soon, spawn, Budget, Client, Dial, Follow, ImportHandler, Link,
    Listed, MakeCommand,
};
use listing::{is_ours, list, put_tools};
use spec::slug;

pub use options::{
    ElicitFuture, Elicitation, ElicitationHandler, ImportOptions, Lifecycle, ServerStderr,
};

/// A connection to an imported server; its tools stay usable while it lives. A
/// connection that drops (a restarted server, a dead child process, a lost HTTP
/// session) is made again with backoff at the next call (see the module docs).
pub struct McpImport {
    link: Arc<Link>,
    server: String,
    remote_name: Option<String>,
    now: Arc<std::sync::Mutex<Listed>>,
}

impl std::fmt::Debug for McpImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpImport")
            .field("server", &self.server)
            .field("keys", &self.keys())
            .finish()
    }
}

impl McpImport {
    fn now(&self) -> std::sync::MutexGuard<'_, Listed> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The registry keys of the imported tools now, sorted (an import into live
    /// tools follows the server's changes).
    pub fn keys(&self) -> Vec<String> {
        self.now().keys.clone()
    }

    /// The `<server>` part of the keys: the name the importer gave.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The name the remote server gives itself (for display only).
    pub fn remote_name(&self) -> Option<&str> {
        self.remote_name.as_deref()
    }

    /// The specs of the imported tools now, sorted by key: save them beside a
    /// cassette to replay the tools' calls offline with [`register_offline`].
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.now().specs.clone()
    }

    /// Closes the connection and waits until it is closed (a child process is asked
    /// to stop, then killed). Calls of its tools fail from then on; an import into
    /// live tools takes its tools out of them (audited as removed). Dropping an
    /// import closes it too, without waiting.
    pub async fn close(self) {
        // Closed first: a listing under way then puts nothing back.
        let client = self.link.close();
        self.withdraw();
        if let Some(client) = client {
            let _ = client.cancel().await;
        }
    }

    /// Takes an import's live tools out of the runtime's live tools (audited as
    /// removed); an import into a registry leaves its registry as it is.
    fn withdraw(&self) {
        let Some(follow) = self.link.handler.follow.get() else {
            return;
        };
        let keys = std::mem::take(&mut self.now().keys);
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let source = format!("mcp:{}", self.server);
        let _ = follow.live.change(&source, |registry| {
            registry.unregister_where(|tool| keys.contains(tool.key()) && is_ours(tool, &source));
            Ok::<_, std::convert::Infallible>(())
        });
    }
}

impl Drop for McpImport {
    fn drop(&mut self) {
        // Dropping the running client closes it, without waiting.
        let client = self.link.close();
        self.withdraw();
        drop(client);
    }
}

/// Starts `command` as an MCP server over stdio and registers its tools `into` a
/// registry or a runtime's live tools ([`ImportTarget`]). The command runs once: if the process exits, calls fail from then on (its settings, such as
/// `env_clear`, cannot all be read back to start it the same way again; use
/// [`import_stdio_with`] for a server that is started again).
pub async fn import_stdio<'a>(
    into: impl Into<ImportTarget<'a>>,
    command: tokio::process::Command,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    start_stdio(into.into(), command, None, options).await
}

/// Starts the command `make` builds as an MCP server over stdio and registers its
/// tools `into` a registry or a runtime's live tools ([`ImportTarget`]); when the process exits, the next call starts a new one with a command from
/// `make` (with backoff), so the imported tools live as long as the program.
pub async fn import_stdio_with<'a>(
    into: impl Into<ImportTarget<'a>>,
    make: impl Fn() -> tokio::process::Command + Send + Sync + 'static,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let make: MakeCommand = Arc::new(make);
    let command = make();
    start_stdio(into.into(), command, Some(make), options).await
}

/// Starts `command` and registers its tools; `make` starts it again later, if given.
async fn start_stdio(
    into: ImportTarget<'_>,
    command: tokio::process::Command,
    make: Option<MakeCommand>,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let program = format!("{:?}", command.as_std().get_program());
    let handler = handler_of(&options);
    let budget = Budget::new(options.connect_timeout, None);
    let (client, listed) = budget
        .run(&program, async {
            let client = spawn(
                handler.clone(),
                command,
                options.stderr,
                &program,
                options.connect_timeout,
            )
            .await?;
            listed_or_closed(client, None, &program, &options).await
        })
        .await?;
    let dial = Dial::Stdio {
        make,
        stderr: options.stderr,
    };
    let deadline = budget.deadline();
    register(
        into, client, listed, dial, handler, &program, &options, deadline,
    )
    .await
}

/// The client and the server's tools, listed on it; a failed listing closes the
/// client.
async fn listed_or_closed(
    client: Client,
    auth: Option<&Authorization>,
    origin: &str,
    options: &ImportOptions,
) -> Result<(Client, Vec<(rmcp::model::Tool, ToolSpec)>), McpError> {
    match list(client.peer(), auth, origin, options).await {
        Ok(listed) => Ok((client, listed)),
        Err(error) => {
            client.cancel().await.ok();
            Err(error)
        }
    }
}

/// Connects to the streamable-HTTP MCP endpoint at `url` and registers its tools
/// `into` a registry or a runtime's live tools ([`ImportTarget`]). A session that is lost (the server restarted) is opened again at the next call.
pub async fn import_http<'a>(
    into: impl Into<ImportTarget<'a>>,
    url: &str,
    options: ImportOptions,
) -> Result<McpImport, McpError> {
    let auth = match &options.oauth {
        Some(oauth) => {
            // A misconfigured client is refused before any request.
            oauth.check().map_err(|message| McpError::Authorization {
                server: url.to_owned(),
                message,
            })?;
            Some(Arc::new(
                Authorization::new(url, oauth.clone())
                    .await
                    .map_err(|message| McpError::Connect {
                        server: url.to_owned(),
                        message,
                    })?,
            ))
        }
        None => None,
    };
    let dial = Dial::Http {
        url: url.to_owned(),
        auth,
    };
    let handler = handler_of(&options);
    let budget = Budget::new(options.connect_timeout, dial.auth());
    let (client, listed) = budget
        .run(url, async {
            let client = dial.connect(&handler, url, options.connect_timeout).await?;
            listed_or_closed(client, dial.auth(), url, &options).await
        })
        .await?;
    let deadline = budget.deadline();
    register(
        into.into(),
        client,
        listed,
        dial,
        handler,
        url,
        &options,
        deadline,
    )
    .await
}

/// The client side of an import made with `options`.
fn handler_of(options: &ImportOptions) -> ImportHandler {
    ImportHandler {
        server: slug(&options.name),
        elicitation: options.elicitation.clone(),
        sampling: options.sampling.clone(),
        door: options.door.clone(),
        tasks: options.tasks,
        lifecycle: options.lifecycle,
        calls: Arc::default(),
        asking: Arc::default(),
        follow: Arc::default(),
        missed: Arc::default(),
    }
}

/// Registers what was `listed` on `client` `into` its target, by `deadline` (the
/// import's time limit, and the limit itself).
#[allow(clippy::too_many_arguments)] // the parts of one import, each used once
async fn register(
    into: ImportTarget<'_>,
    client: Client,
    listed: Vec<(rmcp::model::Tool, ToolSpec)>,
    dial: Dial,
    handler: ImportHandler,
    origin: &str,
    options: &ImportOptions,
    deadline: (std::time::Instant, std::time::Duration),
) -> Result<McpImport, McpError> {
    let info = client.peer_info();
    let server = slug(&options.name);
    let remote_name = info
        .as_deref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| s.name.clone());
    let follow = handler.follow.clone();
    let link = Arc::new(Link {
        dial,
        handler,
        trace_context: options.trace_context,
        origin: origin.to_owned(),
        server: server.clone(),
        connect_timeout: options.connect_timeout,
        now: std::sync::Mutex::new((Some(client), 0)),
        redialing: tokio::sync::Mutex::new(()),
    });
    let source = format!("mcp:{server}");
    let put = match &into {
        ImportTarget::Registry(_) => None,
        ImportTarget::Live(live) => Some(live.clone()),
    };
    let deadline = Some(deadline);
    let registered = match into {
        ImportTarget::Registry(registry) => {
            put_tools(registry, &link, &listed, &server, &[], deadline)
        }
        ImportTarget::Live(live) => live.change(&source, |registry| {
            put_tools(registry, &link, &listed, &server, &[], deadline)
        }),
    };
    let keys = match registered {
        Ok(keys) => keys,
        Err(error) => {
            if let Some(client) = link.close() {
                client.cancel().await.ok();
            }
            return Err(error);
        }
    };
    let mut specs: Vec<ToolSpec> = listed.into_iter().map(|(_, spec)| spec).collect();
    specs.sort_by_key(ToolSpec::key);
    let now = Arc::new(std::sync::Mutex::new(Listed { keys, specs }));
    if let Some(live) = put {
        // From now on, the server's list changes reach the live tools.
        let _ = follow.set(Follow {
            live,
            link: Arc::downgrade(&link),
            options: options.clone(),
            now: Arc::clone(&now),
            refreshing: tokio::sync::Mutex::new(()),
            dirty: std::sync::atomic::AtomicBool::new(false),
        });
        if let Ok((peer, _)) = link.peer().await {
            listen_for_changes(&follow, &peer);
        }
        if link
            .handler
            .missed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            // The tools changed while the first listing was being registered.
            if let Ok((peer, _)) = link.peer().await {
                refresh_soon(&follow, peer);
            }
        }
    }
    Ok(McpImport {
        link,
        server,
        remote_name,
        now,
    })
}

/// Where an import puts the server's tools.
pub enum ImportTarget<'a> {
    /// A registry, before the runtime is built from it: the tools stay as the server
    /// listed them at import (a later `notifications/tools/list_changed` is ignored).
    Registry(&'a mut Registry),
    /// A runtime's live tools ([`Runtime::live_tools`](tackle_core::Runtime::live_tools)):
    /// the tools follow the server's `notifications/tools/list_changed` (and what a
    /// restarted server lists), each change audited.
    Live(LiveTools),
}

impl std::fmt::Debug for ImportTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportTarget::Registry(_) => f.write_str("ImportTarget::Registry"),
            ImportTarget::Live(_) => f.write_str("ImportTarget::Live"),
        }
    }
}

impl<'a> From<&'a mut Registry> for ImportTarget<'a> {
    fn from(registry: &'a mut Registry) -> ImportTarget<'a> {
        ImportTarget::Registry(registry)
    }
}

impl From<LiveTools> for ImportTarget<'_> {
    fn from(live: LiveTools) -> Self {
        ImportTarget::Live(live)
    }
}

impl From<&LiveTools> for ImportTarget<'_> {
    fn from(live: &LiveTools) -> Self {
        ImportTarget::Live(live.clone())
    }
}

/// Registers tools imported earlier (their [`McpImport::specs`]) without a server:
/// under a replaying cassette the door serves their recorded calls; a call that would
/// have to reach the server fails with an `Execution` error saying it is offline.
pub fn register_offline(
    registry: &mut Registry,
    specs: Vec<ToolSpec>,
) -> Result<Vec<String>, McpError> {
    let tools = specs.into_iter().map(|spec| {
        let key = spec.key();
        let source = format!("mcp-offline:{}", spec.namespace);
        let handler = ToolHandler::new(move |_ctx, _input| {
            let key = key.clone();
            Box::pin(async move {
                Err(ToolError::Execution {
                    message: format!(
                        "`{key}` comes from an MCP server that is not connected; only recorded calls can be served"
                    ),
                    key,
                })
            })
        });
        DynamicTool::from_handler(spec, handler).with_source(source)
    });
    Ok(registry.register_all(tools)?)
}

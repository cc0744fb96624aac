//! The imported tools: listing the server's tools as specs (all or nothing on a key
//! collision), registering them as dynamic tools that call through the import's
//! link, and listing them again when the server says they changed.

use std::sync::Arc;

use rmcp::model::Tool;
use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};
use tackle_core::{DynamicTool, Registry, ToolSpec};

use super::authorize::authorized;
use super::call::tool_handler;
use super::connection::{Follow, Link, Listed};
use super::options::ImportOptions;
use super::spec::{slug, spec_of, version_of};
use crate::oauth_client::Authorization;
use crate::McpError;

/// Lists the server's tools (bounded by the connect timeout; the person's time to
/// authorize is the OAuth client's own limit), with the spec each is imported as.
pub(super) async fn list(
    peer: &Peer<RoleClient>,
    auth: Option<&Authorization>,
    origin: &str,
    options: &ImportOptions,
) -> Result<Vec<(Tool, ToolSpec)>, McpError> {
    let server = slug(&options.name);
    let version = version_of(
        peer.peer_info()
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|s| s.version.as_str())
            .unwrap_or("0"),
    );
    let limit = options.connect_timeout;
    let listed = authorized(auth, || async {
        tokio::time::timeout(limit, peer.list_all_tools())
            .await
            .unwrap_or(Err(ServiceError::Timeout { timeout: limit }))
    })
    .await;
    let tools = match listed {
        Ok(Ok(tools)) => tools,
        Ok(Err(ServiceError::Timeout { timeout })) => {
            return Err(McpError::Timeout {
                server: origin.to_owned(),
                limit: timeout,
            })
        }
        Err(message) => {
            return Err(McpError::Authorization {
                server: origin.to_owned(),
                message,
            })
        }
        Ok(Err(e)) if e.auth_challenge().is_some() => {
            return Err(McpError::Authorization {
                server: origin.to_owned(),
                message: "it asks for a token, and the import has no OAuth client (`ImportOptions::with_oauth`)"
                    .to_owned(),
            })
        }
        Ok(Err(e)) => {
            return Err(McpError::Connect {
                server: origin.to_owned(),
                message: format!("tools/list failed: {e}"),
            })
        }
    };
    // Every key is checked before any is registered: all or nothing.
    let mut listed = Vec::with_capacity(tools.len());
    let mut by_key: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for tool in tools {
        let mut spec = spec_of(&tool, &server, &version);
        // The door keeps the time limit, as for every tool: a server that does not
        // answer in time gives `Timeout`, and the request is dropped (cancelled).
        spec.timeout_ms = Some(u64::try_from(options.call_timeout.as_millis()).unwrap_or(u64::MAX));
        spec.permissions = options
            .requires
            .clone()
            .unwrap_or_else(|| vec![format!("mcp:{server}")]);
        if let Some(first) = by_key.insert(spec.key(), tool.name.to_string()) {
            return Err(McpError::ImportCollision {
                server,
                first,
                second: tool.name.to_string(),
                key: spec.key(),
            });
        }
        listed.push((tool, spec));
    }
    Ok(listed)
}

/// Registers the listed tools of `server` in `registry`, calling through `link`, in
/// place of `old` (the keys registered before, taken out first), in one batch (time
/// linear in their number): all or nothing. Given a `deadline`, a registration not
/// done by then is taken back out, and is [`McpError::Timeout`] after `limit`. The
/// keys registered, sorted.
pub(super) fn put_tools(
    registry: &mut Registry,
    link: &Arc<Link>,
    listed: &[(Tool, ToolSpec)],
    server: &str,
    old: &[String],
    deadline: Option<(std::time::Instant, std::time::Duration)>,
) -> Result<Vec<String>, McpError> {
    let source = format!("mcp:{server}");
    let ours = |tool: &tackle_core::registry::Tool| is_ours(tool, &source);
    if !old.is_empty() {
        let old: std::collections::HashSet<&str> = old.iter().map(String::as_str).collect();
        registry.unregister_where(|tool| old.contains(tool.key()) && ours(tool));
    }
    let late = std::cell::Cell::new(false);
    let tools = listed
        .iter()
        .enumerate()
        .take_while(|(n, _)| {
            // The clock is read every 64 tools: registering one takes microseconds.
            if n % 64 == 0 && deadline.is_some_and(|(at, _)| std::time::Instant::now() >= at) {
                late.set(true);
            }
            !late.get()
        })
        .map(|(_, (tool, spec))| {
            let calls = tool_handler(
                Arc::clone(link),
                tool.name.to_string(),
                spec.key(),
                spec.rerun_safe(),
            );
            DynamicTool::from_handler(spec.clone(), calls).with_source(source.clone())
        });
    let registered = registry.register_all(tools)?;
    // Under a collision strategy that keeps the tool already there, the key is not
    // this import's: it is neither listed nor taken back out.
    let mut keys: Vec<String> = registered
        .into_iter()
        .filter(|key| registry.get(key).is_some_and(ours))
        .collect();
    if let (true, Some((_, limit))) = (late.get(), deadline) {
        let added: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        registry.unregister_where(|tool| added.contains(tool.key()) && ours(tool));
        return Err(McpError::Timeout {
            server: link.origin.clone(),
            limit,
        });
    }
    keys.sort();
    Ok(keys)
}

impl Follow {
    fn now(&self) -> std::sync::MutexGuard<'_, Listed> {
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists the server's tools again and puts them in place of the import's tools
    /// (the live tools audit what was added, removed or changed). A failure leaves
    /// the tools as they were, and is logged.
    pub(super) async fn refresh(&self, peer: &Peer<RoleClient>) {
        let _one_at_a_time = self.refreshing.lock().await;
        // Begun: a change notified from now on asks for another listing.
        self.dirty.store(false, std::sync::atomic::Ordering::SeqCst);
        let Some(link) = self.link.upgrade() else {
            return;
        };
        let server = link.server.clone();
        let listed = match list(peer, link.dial.auth(), &link.origin, &self.options).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(%server, %error, "the imported MCP server's tools could not be listed again; they stay as they were");
                return;
            }
        };
        let old = self.now().keys.clone();
        let source = format!("mcp:{server}");
        let put = self.live.change(&source, |registry| {
            if link.state().0.is_none() {
                // Closed meanwhile: its tools were taken out, and stay out.
                return Ok(None);
            }
            put_tools(registry, &link, &listed, &server, &old, None).map(Some)
        });
        match put {
            Ok(None) => {}
            Ok(Some(keys)) => {
                let mut specs: Vec<ToolSpec> = listed.into_iter().map(|(_, spec)| spec).collect();
                specs.sort_by_key(ToolSpec::key);
                *self.now() = Listed { keys, specs };
            }
            Err(error) => {
                tracing::warn!(%server, %error, "the imported MCP server's new tools could not be registered; they stay as they were");
            }
        }
    }
}

/// Whether `tool` is one an import registered under `source` (`mcp:<server>`).
pub(super) fn is_ours(tool: &tackle_core::registry::Tool, source: &str) -> bool {
    matches!(tool.origin(), tackle_core::ToolOrigin::Dynamic { source: s } if s == source)
}

//! Errors: every failure of a call is a [`ToolError`], every failure to build a
//! registry a [`RegistryError`].
//!
//! Both are enums a caller can match on, with a readable `Display`. For code that only
//! wants to branch on the category, [`ToolError::kind`] gives a plain, copyable
//! [`ToolErrorKind`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::validate::ValidationIssue;

/// The category of a [`ToolError`], for matching without the details.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// No tool matches the key.
    NotFound,
    /// A bare name matches tools in several namespaces.
    Ambiguous,
    /// The input breaks the tool's input schema.
    InvalidInput,
    /// The caller lacks a permission the tool requires.
    CapabilityDenied,
    /// The tool needs a resource the caller's context does not hold.
    MissingContext,
    /// The tool ran and returned an error of its own.
    Execution,
    /// The tool panicked.
    Panicked,
    /// The tool's output breaks its output schema.
    InvalidOutput,
    /// The tool's schema could not be compiled.
    InvalidSchema,
    /// Replay found no recorded outcome for a call that must not run.
    CassetteMiss,
    /// Replay reached a tool that may never run under replay (`fail-loud`).
    ReplayGap,
    /// A recorded run and this run went different ways (a call out of position).
    Divergence,
    /// The call needed approval and was denied (or no approver was configured).
    ApprovalDenied,
    /// The call ran longer than its time limit.
    Timeout,
    /// The run was cancelled and the tool did not stop within the grace window.
    Aborted,
    /// The run was cancelled before the call started; the tool never ran.
    Cancelled,
    /// The result held instruction-like text and the sanitization policy fails closed.
    UnsafeOutput,
    /// The tool's sandbox could not run it, or stopped it at one of its limits.
    Sandbox,
    /// The connection to the server behind the tool (an imported MCP server) was lost
    /// during the call, and the call was not retried.
    Disconnected,
}

impl ToolErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ToolErrorKind; 19] = [
        ToolErrorKind::NotFound,
        ToolErrorKind::Ambiguous,
        ToolErrorKind::InvalidInput,
        ToolErrorKind::CapabilityDenied,
        ToolErrorKind::MissingContext,
        ToolErrorKind::Execution,
        ToolErrorKind::Panicked,
        ToolErrorKind::InvalidOutput,
        ToolErrorKind::InvalidSchema,
        ToolErrorKind::CassetteMiss,
        ToolErrorKind::ReplayGap,
        ToolErrorKind::Divergence,
        ToolErrorKind::ApprovalDenied,
        ToolErrorKind::Timeout,
        ToolErrorKind::Aborted,
        ToolErrorKind::Cancelled,
        ToolErrorKind::UnsafeOutput,
        ToolErrorKind::Sandbox,
        ToolErrorKind::Disconnected,
    ];

    /// The kind's name, as in `ALL` and in serialized errors.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::NotFound => "NotFound",
            ToolErrorKind::Ambiguous => "Ambiguous",
            ToolErrorKind::InvalidInput => "InvalidInput",
            ToolErrorKind::CapabilityDenied => "CapabilityDenied",
            ToolErrorKind::MissingContext => "MissingContext",
            ToolErrorKind::Execution => "Execution",
            ToolErrorKind::Panicked => "Panicked",
            ToolErrorKind::InvalidOutput => "InvalidOutput",
            ToolErrorKind::InvalidSchema => "InvalidSchema",
            ToolErrorKind::CassetteMiss => "CassetteMiss",
            ToolErrorKind::ReplayGap => "ReplayGap",
            ToolErrorKind::Divergence => "Divergence",
            ToolErrorKind::ApprovalDenied => "ApprovalDenied",
            ToolErrorKind::Timeout => "Timeout",
            ToolErrorKind::Aborted => "Aborted",
            ToolErrorKind::Cancelled => "Cancelled",
            ToolErrorKind::UnsafeOutput => "UnsafeOutput",
            ToolErrorKind::Sandbox => "Sandbox",
            ToolErrorKind::Disconnected => "Disconnected",
        }
    }

    /// The position of this kind in [`ToolErrorKind::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of a tool's two schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaSide {
    /// The input schema.
    Input,
    /// The output schema.
    Output,
}

impl fmt::Display for SchemaSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchemaSide::Input => "input",
            SchemaSide::Output => "output",
        })
    }
}

/// Why a call failed. See [`ToolError::kind`] for the category alone.
///
/// Errors are data: they serialize (tagged by `kind`), so a recorded run can replay a
/// tool's failure exactly as it happened.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool matches the key; `suggestions` holds the closest keys.
    #[error("no tool matches `{query}`{}{}", Suggestions(suggestions), EmptyRegistry(*registry_empty))]
    NotFound {
        /// What the caller asked for.
        query: String,
        /// Registered keys close to it, closest first.
        suggestions: Vec<String>,
        /// Whether the registry holds no tool at all (most often: the crate that
        /// holds the tools is not linked into the program).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        registry_empty: bool,
    },
    /// A bare name matches tools in several namespaces.
    #[error("`{query}` is ambiguous: it names {}; call one by its key", candidates.join(", "))]
    Ambiguous {
        /// What the caller asked for.
        query: String,
        /// The keys it could mean.
        candidates: Vec<String>,
    },
    /// The input breaks the tool's input schema; every problem is listed.
    #[error("invalid input for `{key}`: {}", Issues(errors))]
    InvalidInput {
        /// The tool's key.
        key: String,
        /// Every problem, each with its JSON pointer.
        errors: Vec<ValidationIssue>,
    },
    /// The caller lacks permissions the tool requires. The message names them and the
    /// grant that lets the call through (`ToolContext::with_grant("<permission>")`,
    /// and the `<prefix>:*` glob when the permissions share a prefix).
    #[error(
        "`{key}` requires {} which the caller was not granted: {}",
        Quoted(missing),
        GrantHint(missing)
    )]
    CapabilityDenied {
        /// The tool's key.
        key: String,
        /// The permissions not granted.
        missing: Vec<String>,
    },
    /// The tool needs something in its context that the caller did not provide.
    #[error("`{key}` needs {what} in its context, which the caller did not provide")]
    MissingContext {
        /// The tool's key.
        key: String,
        /// What is missing.
        what: String,
    },
    /// The tool returned an error of its own.
    #[error("`{key}` failed: {message}")]
    Execution {
        /// The tool's key.
        key: String,
        /// The tool's error, as text.
        message: String,
    },
    /// The tool panicked; the process goes on.
    #[error("`{key}` panicked: {message}")]
    Panicked {
        /// The tool's key.
        key: String,
        /// The panic message.
        message: String,
    },
    /// The tool's output breaks its output schema; every problem is listed.
    #[error(
        "`{key}` returned output that breaks its output schema: {}",
        Issues(errors)
    )]
    InvalidOutput {
        /// The tool's key.
        key: String,
        /// Every problem, each with its JSON pointer.
        errors: Vec<ValidationIssue>,
    },
    /// One of the tool's schemas is not a valid JSON Schema.
    #[error("the {which} schema of `{key}` is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// The tool's key.
        key: String,
        /// Which schema.
        which: SchemaSide,
        /// What is wrong with it.
        message: String,
    },
    /// Replay found no recorded outcome for this call, and the tool must not run.
    #[error("cassette miss for `{key}` (call #{call}): {message}")]
    CassetteMiss {
        /// The tool or operation key.
        key: String,
        /// The call's position in this run, from 0.
        call: u64,
        /// What was recorded instead: the nearest recorded inputs with their differences.
        message: String,
    },
    /// Under replay, a `fail-loud` tool was called: it may never run, and nothing
    /// recorded stands in for it.
    #[error("`{key}` (call #{call}) is fail-loud: it cannot be replayed; run with a recording mode (TACKLE_CASSETTE=new) or stub it")]
    ReplayGap {
        /// The tool key.
        key: String,
        /// The call's position in this run, from 0.
        call: u64,
    },
    /// This run left the recorded path, for example a model call out of position.
    #[error("replay divergence at `{key}` (call #{call}): {message}")]
    Divergence {
        /// The key of the call that diverged.
        key: String,
        /// The call's position in this run, from 0.
        call: u64,
        /// What was expected instead, with the differences.
        message: String,
    },
    /// The call needed approval and did not get it.
    #[error("`{key}` was not approved: {reason}")]
    ApprovalDenied {
        /// The tool's key.
        key: String,
        /// The approver's reason, or why no approval could be asked for.
        reason: String,
    },
    /// The call ran longer than its time limit. Its caller stopped waiting; an async
    /// tool was stopped, but synchronous work on a blocking thread cannot be, and goes
    /// on (`still_running`): its effects may still happen.
    #[error("`{key}` timed out after {after_ms} ms{}", if *still_running { "; it is still running on a blocking thread, so its effects may still happen" } else { "" })]
    Timeout {
        /// The tool's key.
        key: String,
        /// The limit that was reached, in milliseconds.
        after_ms: u64,
        /// Whether the tool's work goes on after the timeout (synchronous work on a
        /// blocking thread).
        still_running: bool,
    },
    /// The run was cancelled and the tool did not finish within the grace window, so
    /// it was stopped.
    #[error(
        "`{key}` was aborted: the run was cancelled and the tool did not stop within {grace_ms} ms"
    )]
    Aborted {
        /// The tool's key.
        key: String,
        /// The grace window it was given, in milliseconds.
        grace_ms: u64,
    },
    /// The run was cancelled before the call started; the tool never ran.
    #[error("`{key}` was not started: the run was cancelled")]
    Cancelled {
        /// The tool's key.
        key: String,
    },
    /// The result held instruction-like text and the sanitization policy fails closed.
    #[error("the result of `{key}` was withheld: it holds instruction-like text ({})", patterns.join(", "))]
    UnsafeOutput {
        /// The tool's key.
        key: String,
        /// The names of the patterns that matched.
        patterns: Vec<String>,
    },
    /// The tool's sandbox could not run it (no sandbox configured, a child that did
    /// not answer), or stopped it at one of its limits (CPU time, memory). The reason
    /// says which, and quotes the end of the child's standard error.
    #[error("the sandbox of `{key}` {reason}")]
    Sandbox {
        /// The tool's key.
        key: String,
        /// What happened, e.g. "stopped it: it exceeded its CPU-time limit of 2 s".
        reason: String,
    },
    /// The connection to the server behind the tool (an imported MCP server) was lost
    /// while the call was in flight. The call may or may not have reached the server;
    /// it was not retried, because the tool is not safe to run again (see
    /// `ToolSpec::rerun_safe`). The next call connects again.
    #[error("`{key}` lost its connection during the call: {reason}")]
    Disconnected {
        /// The tool's key.
        key: String,
        /// What was lost, and why the call was not retried.
        reason: String,
    },
}

impl ToolError {
    /// Calls `f` on every text of the error (the key, messages, reasons, names,
    /// validation issues' pointers and messages): what scrubbing an error's secrets
    /// needs, without a trip through JSON (see [`crate::secrets`]).
    pub fn for_each_text(&mut self, f: &mut dyn FnMut(&mut String)) {
        match self {
            ToolError::NotFound {
                query, suggestions, ..
            } => {
                f(query);
                suggestions.iter_mut().for_each(f);
            }
            ToolError::Ambiguous { query, candidates } => {
                f(query);
                candidates.iter_mut().for_each(f);
            }
            ToolError::InvalidInput { key, errors } | ToolError::InvalidOutput { key, errors } => {
                f(key);
                for issue in errors {
                    f(&mut issue.pointer);
                    f(&mut issue.schema_path);
                    f(&mut issue.message);
                }
            }
            ToolError::CapabilityDenied { key, missing } => {
                f(key);
                missing.iter_mut().for_each(f);
            }
            ToolError::UnsafeOutput { key, patterns } => {
                f(key);
                patterns.iter_mut().for_each(f);
            }
            ToolError::MissingContext { key, what: text }
            | ToolError::Execution { key, message: text }
            | ToolError::Panicked { key, message: text }
            | ToolError::InvalidSchema {
                key, message: text, ..
            }
            | ToolError::CassetteMiss {
                key, message: text, ..
            }
            | ToolError::Divergence {
                key, message: text, ..
            }
            | ToolError::ApprovalDenied { key, reason: text }
            | ToolError::Sandbox { key, reason: text }
            | ToolError::Disconnected { key, reason: text } => {
                f(key);
                f(text);
            }
            ToolError::ReplayGap { key, .. }
            | ToolError::Timeout { key, .. }
            | ToolError::Aborted { key, .. }
            | ToolError::Cancelled { key } => f(key),
        }
    }
}

impl ToolError {
    /// The category of this error.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            ToolError::NotFound { .. } => ToolErrorKind::NotFound,
            ToolError::Ambiguous { .. } => ToolErrorKind::Ambiguous,
            ToolError::InvalidInput { .. } => ToolErrorKind::InvalidInput,
            ToolError::CapabilityDenied { .. } => ToolErrorKind::CapabilityDenied,
            ToolError::MissingContext { .. } => ToolErrorKind::MissingContext,
            ToolError::Execution { .. } => ToolErrorKind::Execution,
            ToolError::Panicked { .. } => ToolErrorKind::Panicked,
            ToolError::InvalidOutput { .. } => ToolErrorKind::InvalidOutput,
            ToolError::InvalidSchema { .. } => ToolErrorKind::InvalidSchema,
            ToolError::CassetteMiss { .. } => ToolErrorKind::CassetteMiss,
            ToolError::ReplayGap { .. } => ToolErrorKind::ReplayGap,
            ToolError::Divergence { .. } => ToolErrorKind::Divergence,
            ToolError::ApprovalDenied { .. } => ToolErrorKind::ApprovalDenied,
            ToolError::Timeout { .. } => ToolErrorKind::Timeout,
            ToolError::Aborted { .. } => ToolErrorKind::Aborted,
            ToolError::Cancelled { .. } => ToolErrorKind::Cancelled,
            ToolError::UnsafeOutput { .. } => ToolErrorKind::UnsafeOutput,
            ToolError::Sandbox { .. } => ToolErrorKind::Sandbox,
            ToolError::Disconnected { .. } => ToolErrorKind::Disconnected,
        }
    }

    /// The key field, for rewriting; `None` for resolution errors.
    pub(crate) fn key_mut(&mut self) -> Option<&mut String> {
        match self {
            ToolError::NotFound { .. } | ToolError::Ambiguous { .. } => None,
            ToolError::InvalidInput { key, .. }
            | ToolError::CapabilityDenied { key, .. }
            | ToolError::MissingContext { key, .. }
            | ToolError::Execution { key, .. }
            | ToolError::Panicked { key, .. }
            | ToolError::InvalidOutput { key, .. }
            | ToolError::InvalidSchema { key, .. }
            | ToolError::CassetteMiss { key, .. }
            | ToolError::ReplayGap { key, .. }
            | ToolError::Divergence { key, .. }
            | ToolError::ApprovalDenied { key, .. }
            | ToolError::Timeout { key, .. }
            | ToolError::Aborted { key, .. }
            | ToolError::Cancelled { key }
            | ToolError::UnsafeOutput { key, .. }
            | ToolError::Sandbox { key, .. }
            | ToolError::Disconnected { key, .. } => Some(key),
        }
    }

    /// The validation problems of an `InvalidInput` or `InvalidOutput` error; empty otherwise.
    pub fn validation_errors(&self) -> &[ValidationIssue] {
        match self {
            ToolError::InvalidInput { errors, .. } | ToolError::InvalidOutput { errors, .. } => {
                errors
            }
            _ => &[],
        }
    }
}

/// Where a registered tool was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolOrigin {
    /// A `#[tool]` function, registered at link time.
    Static {
        /// Source file of the function.
        file: &'static str,
        /// Line of the function.
        line: u32,
        /// Module path of the function.
        module: &'static str,
    },
    /// A method of a toolset (`#[tools]` on an `impl` block), added at run time.
    Toolset {
        /// The toolset's type, by its path (`my_crate::bank::Bank`).
        type_name: &'static str,
        /// Source file of the method.
        file: &'static str,
        /// Line of the method.
        line: u32,
    },
    /// A tool registered at run time, with the name of whoever registered it.
    Dynamic {
        /// Who registered it (for example `mcp:weather`), `dynamic` by default.
        source: String,
    },
}

impl ToolOrigin {
    /// The crate (for static tools) or source (for dynamic ones) the tool comes from.
    pub fn source_name(&self) -> &str {
        match self {
            ToolOrigin::Static { module, .. }
            | ToolOrigin::Toolset {
                type_name: module, ..
            } => module.split("::").next().unwrap_or(module),
            ToolOrigin::Dynamic { source } => source,
        }
    }
}

impl fmt::Display for ToolOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOrigin::Static { file, line, module } => write!(f, "{file}:{line} ({module})"),
            ToolOrigin::Toolset {
                type_name,
                file,
                line,
                ..
            } => write!(f, "{file}:{line} (a method of the toolset `{type_name}`)"),
            ToolOrigin::Dynamic { source } => write!(f, "dynamic tool from `{source}`"),
        }
    }
}

/// Why a registry could not be built or changed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools have the same key and the collision strategy does not resolve it.
    #[error("duplicate tool key `{key}`: defined at {first} and again at {second}")]
    DuplicateKey {
        /// The shared key.
        key: String,
        /// The tool registered first.
        first: ToolOrigin,
        /// The tool that collided with it.
        second: ToolOrigin,
    },
    /// A spec breaks a rule (bad name, empty description, bad schema, ...).
    #[error("invalid tool `{key}` at {origin}: {reason}")]
    InvalidSpec {
        /// The tool's key.
        key: String,
        /// Where it was defined.
        origin: ToolOrigin,
        /// What is wrong.
        reason: String,
    },
    /// An example does not match the tool's schema.
    #[error(
        "example {index} of `{key}` at {origin} does not match the {which} schema: {}",
        Issues(errors)
    )]
    InvalidExample {
        /// The tool's key.
        key: String,
        /// Where it was defined.
        origin: ToolOrigin,
        /// The example's position, from 0.
        index: usize,
        /// `input` or `output`.
        which: &'static str,
        /// Every problem.
        errors: Vec<ValidationIssue>,
    },
    /// No tool with this key is registered.
    #[error("no tool with key `{key}` is registered")]
    NotRegistered {
        /// The key asked for.
        key: String,
    },
    /// Registering a tool would change what a key or `namespace.name` resolves to,
    /// away from a gated tool, and the newcomer does not require all of its
    /// permissions (see `DynamicTool::with_gated_takeover`).
    #[error(
        "registering `{key}` would make `{name}` resolve to it instead of `{displaced}`, which requires {} that `{key}` does not; require them too, or opt in with DynamicTool::with_gated_takeover(true)",
        Quoted(missing)
    )]
    GatedTakeover {
        /// The key of the tool being registered.
        key: String,
        /// The key or `namespace.name` whose resolution would change.
        name: String,
        /// The gated tool it resolves to now.
        displaced: String,
        /// The permissions of the displaced tool that the newcomer does not require.
        missing: Vec<String>,
    },
}

/// Displays validation issues as `at /a: ...; at /b: ...`.
struct Issues<'a>(&'a [ValidationIssue]);

impl fmt::Display for Issues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

/// Displays `; did you mean `a`, `b`?` or nothing.
struct Suggestions<'a>(&'a [String]);

impl fmt::Display for Suggestions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        write!(f, "; did you mean {}?", Quoted(self.0))
    }
}

/// The hint for a lookup in a registry with no tools.
struct EmptyRegistry(bool);

impl fmt::Display for EmptyRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0 {
            return Ok(());
        }
        f.write_str(
            "; the registry holds no tools at all: if they are defined in another crate, \
             that crate may not be linked into this program (tools register when their \
             crate is linked); add `use my_tools as _;` (with that crate's name) where the \
             program starts",
        )
    }
}

/// Displays a list as `` `a`, `b` ``.
struct Quoted<'a>(&'a [String]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{s}`")?;
        }
        Ok(())
    }
}

/// How to grant missing permissions: the exact grants, and the one glob that covers
/// them all when they share a `prefix:` (say `llm:*` for `llm:scripted`).
struct GrantHint<'a>(&'a [String]);

impl<'a> fmt::Display for GrantHint<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("grant what it requires with ToolContext::with_grant");
        }
        let pronoun = if self.0.len() == 1 { "it" } else { "them" };
        write!(f, "grant {pronoun} with ToolContext")?;
        for (i, permission) in self.0.iter().enumerate() {
            let sep = if i == 0 { "::" } else { "." };
            write!(f, "{sep}with_grant({permission:?})")?;
        }
        let prefix = |p: &'a String| p.split_once(':').map(|(prefix, _)| prefix);
        let shared = self.0.first().and_then(prefix).filter(|first| {
            !first.is_empty()
                && !first.contains('*')
                && self.0.iter().all(|p| prefix(p) == Some(*first))
        });
        if let Some(prefix) = shared {
            let glob = format!("{prefix}:*");
            if !self.0.contains(&glob) {
                write!(
                    f,
                    ", or ToolContext::with_grant({glob:?}) for every `{prefix}:` permission"
                )?;
            }
        }
        Ok(())
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "the panic carried no message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each kind, `S3CRET` in every text it has.
    fn every_kind() -> Vec<ToolError> {
        let s = || "S3CRET".to_owned();
        let issue = || ValidationIssue {
            pointer: s(),
            schema_path: s(),
            message: s(),
        };
        vec![
            ToolError::NotFound {
                query: s(),
                suggestions: vec![s()],
                registry_empty: false,
            },
            ToolError::Ambiguous {
                query: s(),
                candidates: vec![s()],
            },
            ToolError::InvalidInput {
                key: s(),
                errors: vec![issue()],
            },
            ToolError::CapabilityDenied {
                key: s(),
                missing: vec![s()],
            },
            ToolError::MissingContext {
                key: s(),
                what: s(),
            },
            ToolError::Execution {
                key: s(),
                message: s(),
            },
            ToolError::Panicked {
                key: s(),
                message: s(),
            },
            ToolError::InvalidOutput {
                key: s(),
                errors: vec![issue()],
            },
            ToolError::InvalidSchema {
                key: s(),
                which: SchemaSide::Input,
                message: s(),
            },
            ToolError::CassetteMiss {
                key: s(),
                call: 1,
                message: s(),
            },
            ToolError::ReplayGap { key: s(), call: 1 },
            ToolError::Divergence {
                key: s(),
                call: 1,
                message: s(),
            },
            ToolError::ApprovalDenied {
                key: s(),
                reason: s(),
            },
            ToolError::Timeout {
                key: s(),
                after_ms: 1,
                still_running: false,
            },
            ToolError::Aborted {
                key: s(),
                grace_ms: 1,
            },
            ToolError::Cancelled { key: s() },
            ToolError::UnsafeOutput {
                key: s(),
                patterns: vec![s()],
            },
            ToolError::Sandbox {
                key: s(),
                reason: s(),
            },
            ToolError::Disconnected {
                key: s(),
                reason: s(),
            },
        ]
    }

    #[test]
    fn every_text_of_every_kind_is_reached() {
        let errors = every_kind();
        // Every kind is here, once (`for_each_text` matches them all: a new kind is a
        // compile error there, and belongs here too).
        let kinds: std::collections::HashSet<_> = errors.iter().map(ToolError::kind).collect();
        assert_eq!((kinds.len(), errors.len()), (19, 19));
        for mut error in errors {
            assert!(format!("{error:?}").contains("S3CRET"));
            error.for_each_text(&mut |text| *text = text.replace("S3CRET", "x"));
            let seen = format!("{error:?} {error}");
            assert!(!seen.contains("S3CRET"), "{seen}");
        }
    }
}

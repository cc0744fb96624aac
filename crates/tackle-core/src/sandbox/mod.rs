//! Sandboxes: where a tool runs, decided at the door.
//!
//! Most tools run in the program's process, like any function: fast, and as trusted as
//! the program. That has a limit. A tool that loops forever holds a thread until the
//! process ends, however its time limit expired; a tool that allocates without bound
//! takes the whole process down; a tool reads every environment variable the program
//! has. A **sandbox** runs a tool where the door can limit it and, when needed, kill it.
//!
//! **Resolution.** Each live call's sandbox is resolved at the door, after the key
//! resolves: a [`SandboxResolver`] maps the tool's spec to a [`SandboxPolicy`]. The
//! default resolver reads the spec's `sandbox` field (`#[tool(sandbox = process)]`)
//! with the default limits; [`crate::Runtime::with_sandbox_resolver`] injects another,
//! for example one that sends every `untrusted` or `mcp` tool to a process. A policy
//! the resolver chose against the spec's is *forced* (the span says so).
//!
//! **The `process` runner.** [`ProcessSandbox`] runs one call in a child process of the
//! same program, started for that call:
//!
//! * the environment is cleared: the child sees only the secrets the tool declares
//!   (as environment variables, and through [`ToolContext::secret`](crate::ToolContext::secret));
//! * CPU time and address space are limited (`RLIMIT_CPU`, `RLIMIT_AS`), and no core
//!   file is written;
//! * the network is cut where the platform allows it (a new, empty network namespace
//!   on Linux); where it does not, the call still runs and the span records
//!   `tool.sandbox.no_network = false`;
//! * with the network allowed or not, the child reaches no abstract Unix socket made
//!   outside it (the host's D-Bus, X11 and the like), where the kernel scopes them
//!   (Landlock, Linux 6.12+: [`abstract_sockets_scoped`]);
//! * the child is killed (`SIGKILL`) when the call's time limit passes, when the run is
//!   cancelled and the grace window ends, or when the caller stops waiting. A
//!   sandboxed tool that times out is stopped: its `Timeout` says it is not still
//!   running.
//!
//! The child is the program itself, so the program's `main` must hand such a child to
//! [`serve_child`] before it does anything else:
//!
//! ```no_run
//! # use tackle::sandbox::ProcessSandbox;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! tackle::sandbox::serve_child(); // returns at once unless this process is a sandbox child
//! let rt = tackle::Runtime::from_inventory()?.with_sandbox(ProcessSandbox::current_exe()?);
//! # drop(rt);
//! # Ok(())
//! # }
//! ```
//!
//! Only `#[tool]` functions can run in a process: the child finds the tool among the
//! program's link-time registrations. A tool made at run time (a closure, an imported
//! MCP tool) cannot be sent to a child; its sandboxed call fails with
//! [`ToolError::Sandbox`]. A sandboxed tool's progress
//! events and stream stay in the child; its result, or its error, comes back.
//!
//! Without a runner ([`crate::Runtime::with_sandbox`]), a call whose policy asks for a
//! process fails with [`ToolError::Sandbox`]: the door never
//! runs it in process instead.

#[cfg(feature = "process")]
mod cgroup;
#[cfg(feature = "process")]
mod child;
#[cfg(feature = "process")]
mod process;

use std::future::Future;
use std::pin::Pin;

#[cfg(feature = "process")]
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "process")]
pub use child::serve_child;
#[cfg(feature = "process")]
pub use process::abstract_sockets_scoped;
#[cfg(feature = "process")]
pub use process::ProcessSandbox;
pub use tackle_contract::SandboxKind;

use crate::error::ToolError;
use crate::spec::ToolSpec;

/// The CPU time a sandboxed call may use by default: 60 seconds.
pub const DEFAULT_CPU_SECONDS: u64 = 60;

/// The address space a sandboxed call may use by default: 1 GiB.
pub const DEFAULT_MEMORY_BYTES: u64 = 1 << 30;

/// The environment variable that marks a sandbox child (see [`serve_child`]).
pub const CHILD_ENV: &str = "TACKLE_SANDBOX_CHILD";

/// Where one call runs, and within which limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// In process, or in a child process.
    pub kind: SandboxKind,
    /// The CPU time the child may use, in seconds (`None`: unlimited).
    pub cpu_seconds: Option<u64>,
    /// The address space the child may use, in bytes (`None`: unlimited).
    pub memory_bytes: Option<u64>,
    /// Whether the child is cut from the network (where the platform allows it).
    pub no_network: bool,
    /// The longest the child may run, in seconds, even when the call has no time
    /// limit of its own (`None`: no limit but the call's).
    pub wall_seconds: Option<u64>,
    /// The most processes (threads count) the child and what it starts may run at
    /// once (`None`: unlimited). On Linux, where this program may make cgroups (root,
    /// or a delegated cgroup), each call gets a `pids` cgroup of its own with this
    /// limit, which binds every user, root included. Elsewhere it is `RLIMIT_NPROC`,
    /// counted within the child's own user namespace, which binds a user other than
    /// root only (the kernel exempts root).
    pub max_processes: Option<u64>,
}

impl SandboxPolicy {
    /// In the program's process: no sandbox.
    pub const fn in_process() -> SandboxPolicy {
        SandboxPolicy {
            kind: SandboxKind::InProcess,
            cpu_seconds: None,
            memory_bytes: None,
            no_network: false,
            wall_seconds: None,
            max_processes: None,
        }
    }

    /// In a child process, with the default limits: [`DEFAULT_CPU_SECONDS`],
    /// [`DEFAULT_MEMORY_BYTES`], [`DEFAULT_WALL_SECONDS`], no network.
    pub const fn process() -> SandboxPolicy {
        SandboxPolicy {
            kind: SandboxKind::Process,
            cpu_seconds: Some(DEFAULT_CPU_SECONDS),
            memory_bytes: Some(DEFAULT_MEMORY_BYTES),
            no_network: true,
            wall_seconds: Some(DEFAULT_WALL_SECONDS),
            max_processes: Some(DEFAULT_MAX_PROCESSES),
        }
    }

    /// The policy the spec asks for, with the default limits.
    pub fn for_spec(spec: &ToolSpec) -> SandboxPolicy {
        match spec.sandbox {
            SandboxKind::InProcess => SandboxPolicy::in_process(),
            SandboxKind::Process => SandboxPolicy::process(),
        }
    }

    /// Sets the CPU-time limit, in seconds.
    pub fn with_cpu_seconds(mut self, seconds: u64) -> SandboxPolicy {
        self.cpu_seconds = Some(seconds);
        self
    }

    /// Sets the address-space limit, in bytes.
    pub fn with_memory_bytes(mut self, bytes: u64) -> SandboxPolicy {
        self.memory_bytes = Some(bytes);
        self
    }

    /// Sets the longest the child may run, in seconds.
    pub fn with_wall_seconds(mut self, seconds: u64) -> SandboxPolicy {
        self.wall_seconds = Some(seconds);
        self
    }

    /// Sets the most processes the child's user may run at once (see
    /// [`max_processes`](Self::max_processes)).
    pub fn with_max_processes(mut self, processes: u64) -> SandboxPolicy {
        self.max_processes = Some(processes);
        self
    }

    /// Lets the child use the network (`true`) or cuts it (`false`, the default).
    pub fn with_network(mut self, allowed: bool) -> SandboxPolicy {
        self.no_network = !allowed;
        self
    }
}

/// Decides each call's sandbox from the tool's spec (see the [module docs](self)).
///
/// Any `Fn(&ToolSpec) -> SandboxPolicy` is a resolver:
///
/// ```
/// use tackle::sandbox::SandboxPolicy;
/// use tackle::spec::Trust;
/// use tackle::{Runtime, ToolSpec};
///
/// let rt = Runtime::default().with_sandbox_resolver(|spec: &ToolSpec| {
///     if spec.trust <= Trust::Untrusted {
///         SandboxPolicy::process().with_memory_bytes(256 << 20)
///     } else {
///         SandboxPolicy::for_spec(spec)
///     }
/// });
/// # drop(rt);
/// ```
pub trait SandboxResolver: Send + Sync {
    /// The policy for a call of the tool with this spec.
    fn resolve(&self, spec: &ToolSpec) -> SandboxPolicy;
}

impl<F> SandboxResolver for F
where
    F: Fn(&ToolSpec) -> SandboxPolicy + Send + Sync,
{
    fn resolve(&self, spec: &ToolSpec) -> SandboxPolicy {
        self(spec)
    }
}

/// One call for a sandbox to run: the tool, its validated input, its secrets.
#[derive(Debug)]
pub struct SandboxJob<'a> {
    /// The tool's registered key.
    pub key: &'a str,
    /// Where the `#[tool]` function is defined (its file and line), so the child runs
    /// exactly that function.
    pub defined_at: (&'a str, u32),
    /// The validated input.
    pub input: Value,
    /// The call's id, unique within the runtime.
    pub call_id: u64,
    /// The secrets the tool declares that the caller provided, by name.
    pub secrets: Vec<(String, String)>,
    /// The limits to run it within.
    pub policy: &'a SandboxPolicy,
    /// The largest response the child may send, in bytes (the door's size limit).
    pub max_bytes: usize,
}

/// What a sandbox reports about a call it ran.
#[derive(Debug)]
pub struct SandboxRun {
    /// The tool's result or error.
    pub result: Result<Value, ToolError>,
    /// Whether the child really was cut from the network.
    pub no_network: bool,
    /// Whether what the child started was contained with it: in a PID namespace of
    /// its own, so nothing outlives the call (Linux, where the platform allows it);
    /// `false` where only its process group holds it.
    pub contained: bool,
}

/// The future a [`Sandbox`] returns.
pub type SandboxFuture<'a> = Pin<Box<dyn Future<Output = SandboxRun> + Send + 'a>>;

/// Runs calls out of process. Dropping the future stops the call: the door drops it
/// when the time limit passes or the run's grace window ends, and a runner must then
/// kill what it started.
pub trait Sandbox: Send + Sync {
    /// Runs one call.
    fn run<'a>(&'a self, job: SandboxJob<'a>) -> SandboxFuture<'a>;
}

/// What the parent sends a child on its standard input: this header as one JSON line,
/// then the input as a JSON document of its own (so the input keeps the whole nesting
/// a JSON parser allows).
#[cfg(feature = "process")]
#[derive(Serialize, Deserialize)]
struct ChildRequest {
    key: String,
    file: String,
    line: u32,
    call_id: u64,
    secrets: Vec<(String, String)>,
}

/// How a child's answer starts: `ok` or `err` and a newline, then the output or the
/// error as a JSON document.
#[cfg(feature = "process")]
const OK: &[u8] = b"ok\n";
#[cfg(feature = "process")]
const ERR: &[u8] = b"err\n";

/// The longest a sandboxed call may take by default, whatever its own time limit: 10
/// minutes. A tool that sleeps uses no CPU time; this stops it all the same.
pub const DEFAULT_WALL_SECONDS: u64 = 600;

/// The most processes a sandboxed call may run at once by default: 64.
pub const DEFAULT_MAX_PROCESSES: u64 = 64;

//! The parent's side of the `process` sandbox: start a child of this program for one
//! call, limit it, read its answer, kill it when the door stops waiting.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::cgroup::ProcessCap;
use super::{
    ChildRequest, Sandbox, SandboxFuture, SandboxJob, SandboxPolicy, SandboxRun, CHILD_ENV, ERR, OK,
};
use crate::error::ToolError;

/// How much of a child's standard error is kept to explain its end.
const STDERR_TAIL: usize = 16 * 1024;

/// How much of that tail an error message quotes.
const STDERR_QUOTE: usize = 1024;

/// How long the end of a child's standard error is waited for once it has exited.
const STDERR_GRACE: Duration = Duration::from_millis(100);

/// Runs each sandboxed call in a child process of a program that hands its children
/// to [`serve_child`](super::serve_child), normally this program itself (see the
/// [module docs](super)).
///
/// ```no_run
/// use tackle::sandbox::ProcessSandbox;
/// use tackle::Runtime;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// tackle::sandbox::serve_child();
/// let rt = Runtime::from_inventory()?.with_sandbox(ProcessSandbox::current_exe()?);
/// # drop(rt);
/// # Ok(())
/// # }
/// ```
///
/// The child is started by Tokio, so calls must run on a Tokio runtime with its I/O
/// driver enabled (`#[tokio::main]` is).
#[derive(Clone, Debug)]
pub struct ProcessSandbox {
    program: PathBuf,
    args: Vec<OsString>,
}

/// Whether this platform keeps a sandboxed child from the abstract Unix sockets made
/// outside it, network allowed or not (Landlock's scope, Linux 6.12+). Where it does
/// not, a child with the network allowed shares the host's network namespace, and its
/// abstract sockets with it.
pub fn abstract_sockets_scoped() -> bool {
    limits::sockets_scoped()
}

impl ProcessSandbox {
    /// Children of this program (`std::env::current_exe`), started with no arguments.
    pub fn current_exe() -> std::io::Result<ProcessSandbox> {
        Ok(ProcessSandbox::new(std::env::current_exe()?))
    }

    /// Children of `program`, which must call [`serve_child`](super::serve_child) first
    /// thing and link the same tools.
    pub fn new(program: impl Into<PathBuf>) -> ProcessSandbox {
        ProcessSandbox {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Adds an argument to every child's command line (a test harness may need one to
    /// run no tests of its own).
    pub fn arg(mut self, arg: impl Into<OsString>) -> ProcessSandbox {
        self.args.push(arg.into());
        self
    }

    /// Runs one job (see [`Sandbox::run`]), within the policy's wall-clock limit.
    async fn run_job(&self, job: SandboxJob<'_>) -> SandboxRun {
        let key = job.key;
        match job.policy.wall_seconds {
            Some(seconds) => {
                let limit = Duration::from_secs(seconds);
                match tokio::time::timeout(limit, self.run_child(job)).await {
                    Ok(run) => run,
                    // Dropping the child's future killed its process group.
                    Err(_) => failed(
                        key,
                        format!(
                            "stopped it: it ran longer than its wall-clock limit of {seconds} s"
                        ),
                    ),
                }
            }
            None => self.run_child(job).await,
        }
    }

    /// Starts the child, hands it the call and reads its answer.
    async fn run_child(&self, job: SandboxJob<'_>) -> SandboxRun {
        let key = job.key;
        let fail = |reason: String| failed(key, reason);
        let header = ChildRequest {
            key: key.to_owned(),
            file: job.defined_at.0.to_owned(),
            line: job.defined_at.1,
            call_id: job.call_id,
            secrets: job.secrets.clone(),
        };
        let request = match serde_json::to_vec(&header).and_then(|mut request| {
            request.push(b'\n');
            serde_json::to_writer(&mut request, &job.input).map(|()| request)
        }) {
            Ok(request) => request,
            Err(error) => return fail(format!("could not run it: the request: {error}")),
        };
        drop(job.input);
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in &job.secrets {
            if is_env_name(name) {
                command.env(name, value);
            }
        }
        // A cap on the processes of the call where the platform offers one that binds
        // every user (root too); `RLIMIT_NPROC` otherwise.
        let cap = job.policy.max_processes.and_then(ProcessCap::new);
        limits::apply(&mut command, job.policy, cap.as_ref());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                return fail(format!(
                    "could not start `{}`: {error}",
                    self.program.display()
                ))
            }
        };
        // Whatever happens from here, the child and every process it started go when
        // this call does.
        let _group = child.id().map(limits::Group);
        let no_network = job.policy.no_network && child.id().is_some_and(limits::isolated);
        let contained = child.id().is_some_and(limits::contained);
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return fail("could not run it: the child's pipes are missing".to_owned());
        };
        let write = async move {
            // A child that dies early closes its end: what it says about that is in
            // its status and its standard error.
            let _ = stdin.write_all(&request).await;
            drop(stdin);
        };
        let limit = u64::try_from(job.max_bytes).unwrap_or(u64::MAX);
        let read = async move {
            let mut response = Vec::new();
            let read = stdout
                .take(limit.saturating_add(1))
                .read_to_end(&mut response)
                .await;
            (response, read)
        };
        // Standard error is read on the side: a process the tool started may hold it
        // open after the child has gone.
        let tail_of_stderr = Arc::new(Mutex::new(Vec::new()));
        let reader = tokio::spawn(tail(stderr, Arc::clone(&tail_of_stderr)));
        let ((), (response, read)) = tokio::join!(write, read);
        if response.len() > job.max_bytes {
            reader.abort();
            return fail(format!(
                "stopped it: its response is larger than {} bytes",
                job.max_bytes
            ));
        }
        let status = match child.wait().await {
            Ok(status) => status,
            Err(error) => return fail(format!("lost the child: {error}")),
        };
        // Every process of the call is gone now (see `limits::contain`): its cgroup can go.
        drop(cap);
        let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
        let tail = tail_of_stderr
            .lock()
            .map(|kept| kept.clone())
            .unwrap_or_default();
        if let Err(error) = read {
            return fail(format!("could not read the child's response: {error}"));
        }
        let result = if status.success() {
            answer_of(&response).unwrap_or_else(|reason| {
                Err(ToolError::Sandbox {
                    key: key.to_owned(),
                    reason: if response.is_empty() {
                        format!(
                            "could not run it: the child gave no response; does the `main` of `{}` \
                             call `tackle::sandbox::serve_child()` first?{}",
                            self.program.display(),
                            quote(&tail)
                        )
                    } else {
                        format!("could not read the child's response: {reason}")
                    },
                })
            })
        } else {
            Err(ToolError::Sandbox {
                key: key.to_owned(),
                reason: format!("{}{}", ended(status, job.policy, &tail), quote(&tail)),
            })
        };
        SandboxRun {
            result,
            no_network,
            contained,
        }
    }
}

/// A run that ended with the sandbox's own error.
fn failed(key: &str, reason: String) -> SandboxRun {
    SandboxRun {
        result: Err(ToolError::Sandbox {
            key: key.to_owned(),
            reason,
        }),
        no_network: false,
        contained: false,
    }
}

/// The tool's result or error from a child's answer, or why it cannot be read.
fn answer_of(response: &[u8]) -> Result<Result<Value, ToolError>, String> {
    if let Some(document) = response.strip_prefix(OK) {
        serde_json::from_slice(document)
            .map(Ok)
            .map_err(|e| e.to_string())
    } else if let Some(document) = response.strip_prefix(ERR) {
        serde_json::from_slice(document)
            .map(Err)
            .map_err(|e| e.to_string())
    } else {
        Err("it does not start with `ok` or `err`".to_owned())
    }
}

impl Sandbox for ProcessSandbox {
    fn run<'a>(&'a self, job: SandboxJob<'a>) -> SandboxFuture<'a> {
        Box::pin(self.run_job(job))
    }
}

/// Reads a stream to its end, keeping its last [`STDERR_TAIL`] bytes in `kept`.
async fn tail(mut stream: impl AsyncRead + Unpin, kept: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let Ok(mut kept) = kept.lock() else { return };
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 2 * STDERR_TAIL {
                    let cut = kept.len() - STDERR_TAIL;
                    kept.drain(..cut);
                }
            }
        }
    }
}

/// The end of a child's standard error, for an error message (empty when it said
/// nothing).
fn quote(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let mut start = text.len().saturating_sub(STDERR_QUOTE);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("; its standard error ends with: {}", &text[start..])
}

/// Why a child ended without a response, from its status and its standard error.
fn ended(status: ExitStatus, policy: &SandboxPolicy, tail: &[u8]) -> String {
    let out_of_memory = String::from_utf8_lossy(tail).contains("memory allocation of");
    match (limits::signal(status), out_of_memory, policy.memory_bytes) {
        (_, true, Some(bytes)) => format!(
            "stopped it: it exceeded its memory limit of {} MiB",
            bytes >> 20
        ),
        (Some(limits::SIGXCPU), _, _) => format!(
            "stopped it: it exceeded its CPU-time limit of {} s",
            policy.cpu_seconds.unwrap_or(0)
        ),
        (Some(limits::SIGKILL), _, _) => match policy.cpu_seconds {
            Some(seconds) => format!(
                "stopped it: it was killed (by its CPU-time limit of {seconds} s, or by the system)"
            ),
            None => "stopped it: it was killed by the system".to_owned(),
        },
        _ if status.code() == Some(limits::NOT_CONTAINED) && tail.is_empty() => {
            "could not run it: its process namespace could not get a /proc of its own".to_owned()
        }
        _ => format!("could not run it: the child ended ({status}) with no response"),
    }
}

/// Whether `name` can be an environment variable's name.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The platform's limits: resource limits and a network namespace on Linux, resource
/// limits on other Unix systems, none elsewhere.
#[cfg(unix)]
mod limits {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::SandboxPolicy;

    pub(super) const SIGXCPU: i32 = libc::SIGXCPU;

    /// The exit code of a child whose `/proc` could not be replaced (see `contain`).
    pub(super) const NOT_CONTAINED: i32 = 126;
    pub(super) const SIGKILL: i32 = libc::SIGKILL;

    /// Sets the child's limits between `fork` and `exec`. With `cap`, the child joins
    /// that cgroup first (while it still has its privileges), and `RLIMIT_NPROC` is
    /// left unset.
    pub(super) fn apply(
        command: &mut tokio::process::Command,
        policy: &SandboxPolicy,
        cap: Option<&ProcessCap>,
    ) {
        let (cpu, memory, no_network) =
            (policy.cpu_seconds, policy.memory_bytes, policy.no_network);
        let processes = policy.max_processes.filter(|_| cap.is_none());
        let join = cap.map(ProcessCap::procs_file);
        // A group of its own, so the child and what it starts can be killed together.
        command.process_group(0);
        // SAFETY: the closure runs in the forked child before `exec` and only makes
        // system calls that are safe there (`setrlimit`, `unshare`, `fork`, `waitpid`,
        // `mount`, `prctl`, `close`, `_exit`); it allocates nothing and takes no lock.
        unsafe {
            command.pre_exec(move || {
                if let Some(procs) = &join {
                    cgroup::join(procs)?;
                }
                limit(libc::RLIMIT_CORE, 0, 0)?;
                if let Some(seconds) = cpu {
                    // SIGXCPU at the soft limit, SIGKILL a second later.
                    limit(libc::RLIMIT_CPU, seconds, seconds.saturating_add(1))?;
                }
                if let Some(bytes) = memory {
                    limit(libc::RLIMIT_AS, bytes, bytes)?;
                }
                contain(no_network, processes)
            });
        }
    }

    use crate::sandbox::cgroup::{self, ProcessCap};

    #[cfg(any(target_os = "linux", target_os = "android"))]
    type Resource = libc::__rlimit_resource_t;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    type Resource = libc::c_int;

    /// One `setrlimit`.
    fn limit(resource: Resource, soft: u64, hard: u64) -> std::io::Result<()> {
        let limit = libc::rlimit {
            rlim_cur: soft as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: a plain system call with a valid pointer to a local.
        if unsafe { libc::setrlimit(resource, &limit) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Contains the child, in the forked process before `exec`: new user, PID and
    /// mount namespaces (and a new, empty network namespace with `no_network`: only a
    /// loopback interface that is down). This process stays outside the new PID
    /// namespace: it forks the child that `exec`s, which is the namespace's first
    /// process, with a `/proc` of its own (no process outside it can be seen, so no
    /// other process's environment can be read), waits for it and ends as it ended.
    /// When that child ends, the kernel kills every process left in its namespace, so
    /// nothing the tool started (even in a session of its own) outlives the call or
    /// holds its pipes open.
    ///
    /// Where the platform refuses the namespaces (no unprivileged user namespaces),
    /// the child runs in this process as before, in its process group only; see
    /// [`contained`] and [`isolated`].
    #[cfg(target_os = "linux")]
    fn contain(no_network: bool, processes: Option<u64>) -> std::io::Result<()> {
        let namespaces = libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        let network = if no_network { libc::CLONE_NEWNET } else { 0 };
        // SAFETY: plain system calls in a forked child with one thread, as
        // `CLONE_NEWUSER` requires.
        unsafe {
            if libc::unshare(namespaces | network) != 0 {
                // No PID namespace here: the network alone, if asked for.
                if no_network {
                    libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET);
                }
                scope_abstract_sockets();
                return Ok(());
            }
            if let Some(count) = processes {
                // Set in the new user namespace, it counts that namespace's processes
                // only (a user other than root; the kernel exempts root).
                limit(libc::RLIMIT_NPROC, count, count)?;
            }
            let pid = libc::fork();
            if pid < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if pid > 0 {
                reap(pid);
            }
            // The namespace's first process: a `/proc` of its own, and an end with the
            // process that waits for it.
            let none: *const libc::c_char = std::ptr::null();
            libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            );
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            let own_proc = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                flags,
                std::ptr::null(),
            ) == 0;
            // Where a new `/proc` is refused (a container that masks parts of its
            // own), an empty one hides every process all the same; where neither can
            // be mounted, the tool does not run as if it were contained.
            if !own_proc
                && libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/proc".as_ptr(),
                    c"tmpfs".as_ptr(),
                    flags | libc::MS_RDONLY,
                    std::ptr::null(),
                ) != 0
            {
                libc::_exit(NOT_CONTAINED);
            }
            // After the mounts: a process Landlock scopes may not change them.
            scope_abstract_sockets();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        Ok(())
    }

    /// The process outside the namespace: lets go of every file (so only the
    /// namespace's processes hold the call's pipes, and the parent's `spawn` learns
    /// that `exec` happened), waits for the namespace's first process, and ends as it
    /// ended: its exit code, or its signal raised again.
    #[cfg(target_os = "linux")]
    unsafe fn reap(pid: libc::pid_t) -> ! {
        // SAFETY (whole body): system calls that are safe in a forked child.
        unsafe {
            if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
                for fd in 0..4096 {
                    libc::close(fd);
                }
            }
            let mut status = 0;
            loop {
                let waited = libc::waitpid(pid, &mut status, 0);
                if waited == pid {
                    break;
                }
                if waited < 0 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(127);
                }
            }
            if libc::WIFSIGNALED(status) {
                let signal = libc::WTERMSIG(status);
                libc::signal(signal, libc::SIG_DFL);
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut all);
                libc::sigaddset(&mut all, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &all, std::ptr::null_mut());
                libc::kill(libc::getpid(), signal);
            }
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128
            })
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn contain(_no_network: bool, _processes: Option<u64>) -> std::io::Result<()> {
        Ok(())
    }

    /// Whether the process `pid`'s children are in another PID namespace than this
    /// process (the child is contained: see `contain`).
    #[cfg(target_os = "linux")]
    pub(super) fn contained(pid: u32) -> bool {
        other_namespace(pid, "pid", "pid_for_children")
    }

    /// Whether namespace link `theirs` of process `pid` differs from this process's
    /// link `ours` (both under `/proc/<pid>/ns/`).
    #[cfg(target_os = "linux")]
    fn other_namespace(pid: u32, ours: &str, theirs: &str) -> bool {
        match (
            std::fs::read_link(format!("/proc/self/ns/{ours}")),
            std::fs::read_link(format!("/proc/{pid}/ns/{theirs}")),
        ) {
            (Ok(ours), Ok(theirs)) => ours != theirs,
            _ => false,
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn contained(_pid: u32) -> bool {
        false
    }

    /// Landlock's ruleset attributes, as of its ABI 6 (the `scoped` field).
    #[cfg(target_os = "linux")]
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }

    /// Landlock's scope of abstract Unix sockets (ABI 6).
    #[cfg(target_os = "linux")]
    const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;

    /// Whether the kernel scopes abstract Unix sockets (Landlock ABI 6, Linux 6.12+).
    #[cfg(target_os = "linux")]
    pub(super) fn sockets_scoped() -> bool {
        // SAFETY: a plain system call; with a null attribute and this flag it only
        // answers the ABI version (`LANDLOCK_CREATE_RULESET_VERSION`).
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                1u32,
            )
        };
        abi >= 6
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn sockets_scoped() -> bool {
        false
    }

    /// Scopes the calling process and what it starts with Landlock, in the forked
    /// child before `exec`: no abstract Unix socket made outside it can be connected
    /// to (the host's D-Bus, X11 and the like listen on them, in the network namespace
    /// a child with the network allowed shares). Nothing else is restricted. A kernel
    /// without the scope (before Linux 6.12) refuses the ruleset, and the child runs
    /// as before.
    ///
    /// # Safety
    ///
    /// Plain system calls, for a forked child with one thread.
    #[cfg(target_os = "linux")]
    unsafe fn scope_abstract_sockets() {
        let attr = RulesetAttr {
            handled_access_fs: 0,
            handled_access_net: 0,
            scoped: SCOPE_ABSTRACT_UNIX_SOCKET,
        };
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        );
        let Ok(fd) = libc::c_int::try_from(fd) else {
            return;
        };
        if fd < 0 {
            return;
        }
        // Landlock asks for it (no gaining privileges by `exec` from here on).
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32);
        libc::close(fd);
    }

    /// Whether the process `pid` is in another network namespace than this one.
    #[cfg(target_os = "linux")]
    pub(super) fn isolated(pid: u32) -> bool {
        other_namespace(pid, "net", "net")
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn isolated(_pid: u32) -> bool {
        false
    }

    /// The signal that ended a process, if one did.
    pub(super) fn signal(status: ExitStatus) -> Option<i32> {
        status.signal()
    }

    /// A child's process group (the child leads it): dropped, every process in it is
    /// killed, so nothing a sandboxed tool started outlives its call.
    pub(super) struct Group(pub(super) u32);

    impl Drop for Group {
        fn drop(&mut self) {
            if let Ok(pid) = libc::pid_t::try_from(self.0) {
                // SAFETY: a plain system call; a group that is already gone is ESRCH.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// No limits on this platform: the child runs with a cleared environment and is
/// killed on timeout, nothing more.
#[cfg(not(unix))]
mod limits {
    use std::process::ExitStatus;

    use super::SandboxPolicy;

    pub(super) const SIGXCPU: i32 = -1;
    pub(super) const NOT_CONTAINED: i32 = 126;
    pub(super) const SIGKILL: i32 = -2;

    pub(super) fn apply(
        _command: &mut tokio::process::Command,
        _policy: &SandboxPolicy,
        _cap: Option<&super::ProcessCap>,
    ) {
    }

    pub(super) fn isolated(_pid: u32) -> bool {
        false
    }

    pub(super) fn sockets_scoped() -> bool {
        false
    }

    pub(super) fn contained(_pid: u32) -> bool {
        false
    }

    pub(super) fn signal(_status: ExitStatus) -> Option<i32> {
        None
    }

    /// No process groups here: the child alone is killed (`kill_on_drop`).
    pub(super) struct Group(pub(super) u32);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_names_are_checked() {
        assert!(is_env_name("API_KEY"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A=B"));
        assert!(!is_env_name(""));
    }

    #[test]
    fn quotes_keep_the_end_of_standard_error() {
        assert_eq!(quote(b"  \n"), "");
        let long = "x".repeat(3000) + "the end";
        let quoted = quote(long.as_bytes());
        assert!(quoted.ends_with("the end"));
        assert!(quoted.len() < STDERR_QUOTE + 50);
    }
}

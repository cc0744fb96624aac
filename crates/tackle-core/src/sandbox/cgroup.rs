//! A cap on how many processes one sandboxed call runs at once, that binds every user.
//!
//! `RLIMIT_NPROC` counts a user's processes, and the kernel exempts root from it, so a
//! tool run as root (a container's usual user) could start processes without bound.
//! A cgroup of the `pids` controller binds whoever is in it: on Linux, where this
//! process may make one (root, or a delegated cgroup), each call gets a cgroup of its
//! own with `pids.max` set, and the child joins it between `fork` and `exec`, before it
//! leaves its user namespace. The cgroup is removed when the call ends. Where none can
//! be made, the child keeps `RLIMIT_NPROC` (see `SandboxPolicy::max_processes`).

use std::ffi::{CStr, CString};

/// One call's `pids` cgroup: made with its limit, removed when dropped.
#[derive(Debug)]
pub(crate) struct ProcessCap {
    #[cfg(target_os = "linux")]
    dir: std::path::PathBuf,
    procs: CString,
}

impl ProcessCap {
    /// A new cgroup allowing `max` processes (threads count), or `None` where this
    /// process cannot make one.
    #[cfg(target_os = "linux")]
    pub(crate) fn new(max: u64) -> Option<ProcessCap> {
        use std::os::unix::ffi::OsStringExt;
        use std::sync::atomic::{AtomicU64, Ordering};

        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = linux::hierarchy()?;
        linux::sweep();
        let name = format!(
            "tackle-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(name);
        std::fs::create_dir(&dir).ok()?;
        // A cgroup without a `pids.max` (the controller not enabled below this one,
        // under cgroup v2) bounds nothing: it is removed again.
        if std::fs::write(dir.join("pids.max"), max.to_string()).is_err() {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        let procs = CString::new(dir.join("cgroup.procs").into_os_string().into_vec()).ok()?;
        Some(ProcessCap { dir, procs })
    }

    /// No cgroups on this platform.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn new(_max: u64) -> Option<ProcessCap> {
        None
    }

    /// The file a process writes `0` to, to join the cgroup.
    pub(crate) fn procs_file(&self) -> CString {
        self.procs.clone()
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs`. Runs in
/// a forked child before `exec`: system calls only, no allocation.
#[cfg(unix)]
pub(crate) fn join(procs: &CStr) -> std::io::Result<()> {
    // SAFETY: plain system calls with a valid path and a one-byte buffer.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, b"0".as_ptr().cast(), 1);
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(error);
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
impl Drop for ProcessCap {
    fn drop(&mut self) {
        // A process killed a moment ago may still be leaving: a cgroup that is not
        // empty yet is removed by a later call.
        if std::fs::remove_dir(&self.dir).is_err() {
            linux::later(std::mem::take(&mut self.dir));
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock};

    /// Cgroups whose removal failed (still emptying), tried again at the next call.
    static LEFTOVERS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// The most leftovers kept: past it, the oldest are forgotten (left in place).
    const MAX_LEFTOVERS: usize = 1024;

    /// Remembers a cgroup to remove later.
    pub(super) fn later(dir: PathBuf) {
        if let Ok(mut leftovers) = LEFTOVERS.lock() {
            if leftovers.len() >= MAX_LEFTOVERS {
                leftovers.remove(0);
            }
            leftovers.push(dir);
        }
    }

    /// Removes the leftovers that have emptied since.
    pub(super) fn sweep() {
        if let Ok(mut leftovers) = LEFTOVERS.lock() {
            leftovers.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
        }
    }

    /// The folder of this process's `pids` cgroup, where children can be made: under
    /// cgroup v1 the `pids` hierarchy, under v2 the unified one when its `pids`
    /// controller is enabled for children. Found once.
    pub(super) fn hierarchy() -> Option<PathBuf> {
        static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
                let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
                find(&cgroups, &mounts)
            })
            .clone()
    }

    /// [`hierarchy`] from the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`.
    fn find(cgroups: &str, mounts: &str) -> Option<PathBuf> {
        let v1 = cgroups.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            controllers.split(',').any(|c| c == "pids").then_some(path)
        });
        if let Some(path) = v1 {
            let (root, mount) = mount_of(mounts, |kind, options| {
                kind == "cgroup" && options.split(',').any(|o| o == "pids")
            })?;
            return Some(within(&mount, &root, path));
        }
        let path = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
        let (root, mount) = mount_of(mounts, |kind, _| kind == "cgroup2")?;
        let dir = within(&mount, &root, path);
        let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
        enabled
            .split_whitespace()
            .any(|c| c == "pids")
            .then_some(dir)
    }

    /// The root and mount point of the first mount whose file-system type and super
    /// options pass `wanted`.
    fn mount_of(mounts: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
        mounts.lines().find_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let mut head = head.split(' ');
            let (root, point) = (head.nth(3)?, head.next()?);
            let mut tail = tail.split(' ');
            let (kind, _source, options) = (tail.next()?, tail.next()?, tail.next()?);
            wanted(kind, options).then(|| (root.to_owned(), PathBuf::from(point)))
        })
    }

    /// Where the cgroup `path` is under a hierarchy mounted at `mount` from `root`.
    fn within(mount: &Path, root: &str, path: &str) -> PathBuf {
        let relative = path.strip_prefix(root).unwrap_or(path);
        mount.join(relative.trim_start_matches('/'))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn finds_the_v1_pids_hierarchy_below_a_container_root() {
            let cgroups = "8:pids:/box/one\n4:memory:/box/one\n0::/\n";
            let mounts = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                          34 25 0:30 /box /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";
            assert_eq!(
                find(cgroups, mounts),
                Some(PathBuf::from("/sys/fs/cgroup/pids/one"))
            );
        }

        #[test]
        fn no_pids_controller_means_no_hierarchy() {
            let cgroups = "4:memory:/\n";
            let mounts = "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
            assert_eq!(find(cgroups, mounts), None);
        }
    }
}

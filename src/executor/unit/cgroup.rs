//! cgroup v2 units: one cgroup per stack process tree, created under campaign's own cgroup.
//!
//! A process cannot leave its cgroup by changing its process group or session, so a cgroup
//! holds everything a stack starts. Stopping a unit writes `cgroup.kill` (Linux 5.14+; older
//! kernels get a signal per pid from `cgroup.procs`), and `cgroup.procs` says what is left.
//! Used when this machine lets campaign create a cgroup next to its own (a writable cgroup2
//! mount: as root, or with a delegated subtree); otherwise the unit falls back to its cookie.

use std::path::{Path, PathBuf};

/// Prefix of every unit cgroup's directory name.
pub(crate) const PREFIX: &str = "campaign-";

/// Where unit cgroups are created: campaign's own cgroup, if this process may create children
/// in it and move processes into them. `None` means no usable cgroup v2 here.
pub(crate) fn detect() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (root, mount) = cgroup2_mount(&mountinfo)?;
    let rel = rel
        .strip_prefix(&root)
        .unwrap_or(&rel)
        .trim_start_matches('/');
    let base = Path::new(&mount).join(rel);
    // Moving a process into a child needs write access to the common ancestor's procs file.
    let probe = base.join(format!("{PREFIX}probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    let usable = probe.join("cgroup.procs").exists()
        && std::fs::OpenOptions::new()
            .write(true)
            .open(base.join("cgroup.procs"))
            .is_ok();
    let _ = std::fs::remove_dir(&probe);
    usable.then_some(base)
}

/// `(root, mount point)` of the first cgroup2 mount in a mountinfo text.
pub(crate) fn cgroup2_mount(mountinfo: &str) -> Option<(String, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut f = left.split_whitespace();
        let root = f.nth(3)?.to_string();
        let mount = f.next()?.to_string();
        Some((root, mount))
    })
}

/// Create (or reuse, for the next round of the same run) the unit's cgroup; true when it was
/// made now (so it has never held a process).
pub(crate) fn create(path: &Path) -> std::io::Result<bool> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The cgroup's directory, open (processes are created into it through this descriptor).
pub(crate) fn open_dir(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
}

/// Live pids in the cgroup (zombies have left `cgroup.procs` already). A cgroup that does not
/// exist holds nothing.
pub(crate) fn procs(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path.join("cgroup.procs"))
        .map(|s| parse_procs(&s))
        .unwrap_or_default()
}

/// The pids of a `cgroup.procs` text.
pub(crate) fn parse_procs(text: &str) -> Vec<i32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// A control file of a kept cgroup, open once and read again from the start each time (the
/// kernel regenerates it on every read from offset 0): one system call per reading.
#[derive(Debug)]
pub(crate) struct Control(std::fs::File);

impl Control {
    pub(crate) fn open(dir: &std::fs::File, name: &std::ffi::CStr) -> Option<Control> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: openat on an open directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        // SAFETY: fd was just opened and is owned by nothing else.
        (fd >= 0).then(|| Control(unsafe { std::fs::File::from_raw_fd(fd) }))
    }

    pub(crate) fn read(&self) -> Option<String> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; 512];
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            match self.0.read_at(&mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        buf.truncate(len);
        String::from_utf8(buf).ok()
    }
}

/// SIGKILL everything in the cgroup at once; falls back to one signal per pid where the kernel
/// has no `cgroup.kill`.
pub(crate) fn kill(path: &Path) {
    if std::fs::write(path.join("cgroup.kill"), "1").is_err() {
        for pid in procs(path) {
            super::signal(pid, libc::SIGKILL);
        }
    }
}

/// `total=` of the `full` line of a pressure file (`cpu.pressure`), in microseconds: how long
/// every runnable task of the cgroup waited for a CPU at once — the unit had no CPU although it
/// was ready, because processes outside it held them all. (The "some" total would also count
/// the unit's own tasks waiting for each other: mpirun beside its ranks, more ranks than CPUs.)
pub(crate) fn parse_full_total(text: &str) -> Option<std::time::Duration> {
    let line = text.lines().find(|l| l.starts_with("full "))?;
    let total = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?;
    total.parse().ok().map(std::time::Duration::from_micros)
}

/// Remove an empty cgroup; false (harmlessly) while a process is still in it. Succeeding
/// proves the cgroup was empty: nothing can have escaped it, and nothing can join it any more.
pub(crate) fn remove(path: &Path) -> bool {
    std::fs::remove_dir(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_total_of_a_pressure_file_is_read_in_microseconds() {
        let text = "some avg10=1.50 avg60=0.35 avg300=14.28 total=13051632742\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7021\n";
        assert_eq!(
            parse_full_total(text),
            Some(std::time::Duration::from_micros(7021))
        );
        assert_eq!(parse_full_total("some avg10=0.00 total=7\n"), None);
        assert_eq!(parse_full_total("full avg10=0.00 total=x\n"), None);
    }

    #[test]
    fn finds_the_cgroup2_mount_among_v1_mounts() {
        let info = "\
30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
38 25 0:34 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        assert_eq!(
            cgroup2_mount(info),
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        assert_eq!(cgroup2_mount("30 25 0:26 / /x rw - cgroup c rw"), None);
    }
}

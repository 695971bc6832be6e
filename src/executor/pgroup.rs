//! Process groups: signal a whole group and find out whether any member still runs.
//!
//! Every stack process is the leader of its own group, so one `killpg` reaches everything it
//! forked (unless a descendant moved itself to another group or session, which only cgroups
//! could catch). This module only signals and inspects; it never spawns or waits.

/// Send `signal` to every process of group `pgid`. A group that no longer exists is not an
/// error (it is the state we want).
pub(crate) fn signal_group(pgid: i32, signal: i32) {
    if pgid <= 1 {
        // Never signal group 0 (our own) or 1: a bug upstream must not kill campaign or init.
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; errors are reported through errno.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Does group `pgid` still have a member that is not a zombie?
///
/// Zombies are ignored: an orphaned child that died is reparented to init (or a container's
/// PID 1) and may stay unreaped there for a while, but it runs nothing and holds no device.
///
/// One `kill(-pgid, 0)` answers the common case: `ESRCH` means no process at all (zombies
/// included) has this group id, so nothing can be running. Only when some member exists is
/// /proc read, to tell running members from zombies — a scan of every process costs about a
/// millisecond, which used to be paid after every run although the group was nearly always
/// already empty. The kernel does not hand out a pid as a new group id while that group still
/// has members, so `ESRCH` cannot be the answer for a group that merely changed hands.
pub(crate) fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    if !group_exists(pgid) {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        !live_members(pgid).is_empty()
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// Does any process (zombies included) have group id `pgid`? `EPERM` (a member we may not
/// signal, such as a setuid helper) still means the member exists.
fn group_exists(pgid: i32) -> bool {
    // SAFETY: killpg has no memory-safety preconditions; signal 0 only checks for existence.
    let rc = unsafe { libc::killpg(pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Pids of the non-zombie processes whose process group is `pgid` (read from /proc).
#[cfg(target_os = "linux")]
pub fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && state != 'Z' && state != 'X' {
                out.push(pid);
            }
        }
    }
    out
}

/// State and process group from a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted from the
/// last `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_stat_handles_odd_command_names() {
        let line = "4242 (my (odd) prog) S 1 4240 4240 0 -1 4194560 100 0 0 0";
        assert_eq!(parse_stat(line), Some(('S', 4240)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn our_own_group_is_alive_and_group_one_is_never_touched() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        if own > 1 {
            assert!(group_alive(own));
        }
        assert!(!group_alive(1));
        assert!(!group_alive(0));
    }

    /// A child in its own group, started with `sh -c script`.
    fn spawn_group(script: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_running_group_is_alive_and_a_reaped_one_is_gone() {
        let mut child = spawn_group("exec sleep 1000");
        let pgid = child.id() as i32;
        assert!(group_alive(pgid));
        assert_eq!(live_members(pgid), vec![pgid]);
        signal_group(pgid, libc::SIGKILL);
        child.wait().unwrap();
        // Reaped and alone: the group no longer exists at all (the fast path answers).
        assert!(!group_exists(pgid));
        assert!(!group_alive(pgid));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_group_of_only_zombies_counts_as_gone() {
        let mut child = spawn_group("exit 0");
        let pgid = child.id() as i32;
        // Not reaped yet: the group still exists, but its one member is a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !zombie(pgid) {
            assert!(std::time::Instant::now() < deadline, "{pgid} never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(group_exists(pgid));
        assert!(!group_alive(pgid));
        child.wait().unwrap();
    }

    #[cfg(target_os = "linux")]
    fn zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
            .is_some_and(|(state, _)| state == 'Z')
    }
}

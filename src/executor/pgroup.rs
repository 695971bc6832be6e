//! Process groups: signal a whole group and find out whether any member still runs.
//!
//! Every stack process is the leader of its own group, so one `killpg` reaches everything it
//! forked (unless a descendant moved itself to another group or session, which only cgroups
//! could catch). This module only signals and inspects; it never spawns or waits.

/// Send `signal` to every process of group `pgid`. A group that no longer exists is not an
/// error (it is the state we want).
pub fn signal_group(pgid: i32, signal: i32) {
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
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        !live_members(pgid).is_empty()
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: as above; signal 0 only checks for existence.
        unsafe { libc::killpg(pgid, 0) == 0 }
    }
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
pub fn parse_stat(stat: &str) -> Option<(char, i32)> {
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
}

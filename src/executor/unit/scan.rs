//! Reading `/proc`: which processes carry a unit's cookie, their descendants, their state.
//!
//! The portable half of containment. A cookie (`CAMPAIGN_UNIT=<id>` in the environment) is
//! inherited by everything a stack starts, whatever it does with process groups or sessions,
//! so a scan of `/proc/*/environ` finds a run's leftovers even after they were reparented to
//! init (the way some CI servers find a build's leftovers). This module only reads; it never
//! signals or waits.

use std::collections::{BTreeMap, BTreeSet};

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) state: char,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
}

impl Stat {
    /// A zombie runs nothing and holds no device: it counts as gone.
    pub(crate) fn live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// State, parent and process group from a `/proc/<pid>/stat` line. The command name (field 2)
/// is in parentheses and may itself contain spaces and parentheses, so fields are counted from
/// the last `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// `/proc/<pid>/stat`, parsed; `None` when the process is gone.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name of `pid` (`/proc/<pid>/comm`), for messages.
pub(crate) fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Does an environ block (NUL-separated `KEY=value`) hold exactly `cookie`?
pub(crate) fn environ_has(environ: &[u8], cookie: &[u8]) -> bool {
    environ.split(|b| *b == 0).any(|entry| entry == cookie)
}

/// Campaign's own direct children (every thread's), from `/proc/self/task/*/children`; `None`
/// where the kernel does not provide that file.
pub(crate) fn own_children() -> Option<Vec<i32>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).ok()?;
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    Some(out)
}

fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// Live processes that carry `cookie` (`CAMPAIGN_UNIT=<id>`) or descend from one that does or
/// from `roots` (a process that cleared its environment still has a parent chain). Our own
/// process is never part of the answer.
pub(crate) fn members(cookie: &str, roots: &[i32]) -> Vec<i32> {
    members_of(&[cookie], roots).pop().unwrap_or_default()
}

/// [`members`] for several cookies in one pass over `/proc` (`roots` belong to the first).
pub(crate) fn members_of(cookies: &[&str], roots: &[i32]) -> Vec<Vec<i32>> {
    let me = std::process::id() as i32;
    let mut stats: BTreeMap<i32, Stat> = BTreeMap::new();
    let mut found: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); cookies.len()];
    for pid in all_pids() {
        if pid == me {
            continue;
        }
        let Some(s) = stat(pid) else { continue };
        if !s.live() {
            continue;
        }
        stats.insert(pid, s);
        if roots.contains(&pid) && !found.is_empty() {
            found[0].insert(pid);
            continue;
        }
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if let Some(i) = cookies.iter().position(|c| environ_has(&env, c.as_bytes())) {
                found[i].insert(pid);
            }
        }
    }
    // Close over children: repeat until no process whose parent is a member is left out.
    for set in &mut found {
        loop {
            let more: Vec<i32> = stats
                .iter()
                .filter(|(pid, s)| !set.contains(pid) && set.contains(&s.ppid))
                .map(|(pid, _)| *pid)
                .collect();
            if more.is_empty() {
                break;
            }
            set.extend(more);
        }
    }
    found.into_iter().map(|s| s.into_iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_stat_handles_odd_command_names() {
        let line = "4242 (my (odd) prog) S 1 4240 4240 0 -1 4194560 100 0 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                ppid: 1,
                pgrp: 4240
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_cookie_must_match_a_whole_entry() {
        let env = b"A=1\0CAMPAIGN_UNIT=abc\0B=2\0";
        assert!(environ_has(env, b"CAMPAIGN_UNIT=abc"));
        assert!(!environ_has(env, b"CAMPAIGN_UNIT=ab"));
        assert!(!environ_has(b"XCAMPAIGN_UNIT=abc\0", b"CAMPAIGN_UNIT=abc"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_setsid_child_carrying_the_cookie_is_found_and_others_are_not() {
        let cookie = format!("CAMPAIGN_UNIT=scan-test-{}", std::process::id());
        let (k, v) = cookie.split_once('=').unwrap();
        let mut tagged = std::process::Command::new("setsid")
            .args(["sleep", "60"])
            .env(k, v)
            .spawn()
            .unwrap();
        let mut plain = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let found = loop {
            let found = members(&cookie, &[]);
            if !found.is_empty() || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::yield_now();
        };
        assert!(found.contains(&(tagged.id() as i32)), "{found:?}");
        assert!(!found.contains(&(plain.id() as i32)), "{found:?}");
        for c in [&mut tagged, &mut plain] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

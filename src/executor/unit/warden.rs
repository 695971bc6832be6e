//! The warden: one helper process per campaign (with cgroup containment) that keeps the runs'
//! deadlines when campaign cannot.
//!
//! Campaign enforces every timeout itself, but a SIGKILLed (or crashed) campaign enforces
//! nothing, and its stacks used to run on until someone resumed. So the `campaign` binary starts
//! `campaign __warden` (its own process group, so a terminal's Ctrl-C does not reach it; no
//! stdio but a pipe from campaign) the first time a unit with a timeout starts, and tells it over
//! the pipe `watch <unit> <deadline unix ms> <grace ms>` and `done <unit>`. When the pipe closes
//! — campaign exited, however it did — the warden forgets units that have nothing alive, waits
//! for each remaining unit's deadline (later than campaign's own timeout, grace and kill wait,
//! so a living campaign always acts first) and stops whatever still carries that unit's cookie:
//! SIGTERM, the grace, SIGKILL. Then it exits. Only processes with the unit's cookie (and their
//! descendants) are touched: the warden never kills a cgroup wholesale, because a resumed run
//! may already be reusing the slot. In the cookie fallback each unit's shepherd keeps its own
//! deadline (`shepherd`) and no warden is started.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{scan, signal, COOKIE};

/// The hidden first argument that makes the `campaign` binary a warden.
pub const ARG: &str = "__warden";

/// How often a grace period is checked for the unit's processes being gone.
const POLL: Duration = Duration::from_millis(50);

/// The pipe to this campaign's warden: `None` before the first unit or when no warden could be
/// started (then nothing is kept after campaign's death; campaign itself is unaffected).
static PIPE: Mutex<Option<Option<ChildStdin>>> = Mutex::new(None);

/// Tell the warden that unit `id` may run for `after` from now, then gets `grace`.
pub(crate) fn watch(id: &str, after: Duration, grace: Duration) {
    let at = SystemTime::now() + after;
    let ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    send(&format!("watch {id} {ms} {}\n", grace.as_millis()));
}

/// Tell the warden that unit `id` is over.
pub(crate) fn done(id: &str) {
    send(&format!("done {id}\n"));
}

fn send(line: &str) {
    let Ok(mut pipe) = PIPE.lock() else { return };
    let pipe = pipe.get_or_insert_with(start);
    if let Some(stdin) = pipe {
        // A warden that died costs only its backup: campaign goes on without one.
        if stdin.write_all(line.as_bytes()).is_err() {
            *pipe = None;
        }
    }
}

/// Start the warden, when this process is the `campaign` binary.
fn start() -> Option<ChildStdin> {
    let exe = super::shepherd::exe()?;
    let mut child = Command::new(exe)
        .arg(ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove(COOKIE)
        .process_group(0)
        .spawn()
        .ok()?;
    child.stdin.take()
}

/// One unit the warden keeps a deadline for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watched {
    deadline_ms: u128,
    grace: Duration,
}

/// Apply one line of campaign's to the watched units (unknown lines are ignored).
fn apply(units: &mut BTreeMap<String, Watched>, line: &str) {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["watch", id, deadline, grace] => {
            if let (Ok(deadline_ms), Ok(grace)) = (deadline.parse(), grace.parse()) {
                let grace = Duration::from_millis(grace);
                units.insert(id.to_string(), Watched { deadline_ms, grace });
            }
        }
        ["done", id] => {
            units.remove(*id);
        }
        _ => {}
    }
}

/// Run as the warden until campaign's pipe closes and every deadline left has been kept.
pub fn main(_args: &[OsString]) -> i32 {
    let mut units = BTreeMap::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        match line {
            Ok(line) => apply(&mut units, &line),
            Err(_) => break,
        }
    }
    // Campaign is gone: keep the deadlines of units with something alive, checking every
    // `IDLE` so that units another process (a resume) stopped are forgotten early.
    while let Some((id, watched)) = next_alive(&mut units) {
        let wait = watched.deadline_ms.saturating_sub(now_ms());
        if wait > IDLE.as_millis() {
            std::thread::sleep(IDLE);
            continue;
        }
        keep(&id, &watched);
        units.remove(&id);
    }
    0
}

/// How often a warden whose campaign is gone checks that its units still have processes.
const IDLE: Duration = Duration::from_secs(1);

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// Forget units with nothing alive; the one with the nearest deadline among the rest.
fn next_alive(units: &mut BTreeMap<String, Watched>) -> Option<(String, Watched)> {
    let ids: Vec<String> = units.keys().cloned().collect();
    let cookies: Vec<String> = ids.iter().map(|id| format!("{COOKIE}={id}")).collect();
    let refs: Vec<&str> = cookies.iter().map(String::as_str).collect();
    for (id, members) in ids.into_iter().zip(scan::members_of(&refs, &[])) {
        if members.is_empty() {
            units.remove(&id);
        }
    }
    units
        .iter()
        .min_by_key(|(_, w)| w.deadline_ms)
        .map(|(id, w)| (id.clone(), w.clone()))
}

/// Wait for `watched`'s deadline (at most `IDLE` away), then stop what still carries `id`'s
/// cookie.
fn keep(id: &str, watched: &Watched) {
    let wait = watched.deadline_ms.saturating_sub(now_ms());
    std::thread::sleep(Duration::from_millis(wait.min(u64::MAX as u128) as u64));
    let cookie = format!("{COOKIE}={id}");
    let members = scan::members(&cookie, &[]);
    members.iter().for_each(|pid| signal(*pid, libc::SIGTERM));
    let until = std::time::Instant::now() + watched.grace;
    while std::time::Instant::now() < until && !scan::members(&cookie, &[]).is_empty() {
        std::thread::sleep(POLL);
    }
    for pid in scan::members(&cookie, &[]) {
        signal(pid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_and_done_lines_keep_the_units_still_running() {
        let mut units = BTreeMap::new();
        apply(&mut units, "watch a-1 1000 2000");
        apply(&mut units, "watch b-1 3000 0");
        apply(&mut units, "done a-1");
        apply(&mut units, "watch c-1 soon 0");
        apply(&mut units, "garbage");
        assert_eq!(units.len(), 1);
        assert_eq!(
            units["b-1"],
            Watched {
                deadline_ms: 3000,
                grace: Duration::ZERO
            }
        );
    }
}

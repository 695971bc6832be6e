//! Containment units: every stack process (run, build, probe) runs in a unit that catches
//! everything it starts, whatever it does with process groups and sessions.
//!
//! A unit is a cgroup v2 next to campaign's own cgroup where the machine allows one — a run's
//! unit a kept cgroup the runs of its campaign take turns in ([`slots`]), any other unit its
//! own `campaign-<id>` — else the portable fallback: campaign is a child subreaper (orphans of a stack
//! are reparented to campaign, not to init) and every process of the unit inherits the cookie
//! `CAMPAIGN_UNIT=<id>`, found again by a `/proc` scan (`unit::scan`). Either way a unit can be
//! signalled, killed and asked what is still alive; `Drop` kills what is left, so an error path
//! or a cancelled future never leaves a stack running. Unit ids of runs are derived from the
//! run dir, step and attempt and journaled, so `campaign resume` can reap what a SIGKILLed
//! session left ([`reap`]). This module never decides run status and never reads output.

pub(crate) mod cgroup;
pub(crate) mod scan;
pub mod shepherd;
pub(crate) mod slots;
pub(crate) mod warden;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The environment variable every process of a unit carries.
pub const COOKIE: &str = "CAMPAIGN_UNIT";

/// Forces the fallback (`cookie`) even where cgroups are usable; documented, and how tests
/// exercise the fallback on a machine with cgroups.
pub const CONTAINMENT_ENV: &str = "CAMPAIGN_CONTAINMENT";

/// Poll interval while waiting for a unit's last processes to disappear.
const POLL: Duration = Duration::from_millis(20);

/// How long to wait for SIGKILLed processes to disappear before reporting them.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// How this machine contains stack processes (decided once per campaign process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// One cgroup per unit, created in this directory.
    Cgroup(PathBuf),
    /// Child subreaper plus the environment cookie.
    Cookie,
}

impl Containment {
    /// `cgroup (<dir>)` or `subreaper + CAMPAIGN_UNIT cookie`, for `doctor`.
    pub fn describe(&self) -> String {
        match self {
            Containment::Cgroup(dir) => format!(
                "cgroup v2 per running run (kept, reused run after run) under {}",
                dir.display()
            ),
            Containment::Cookie => format!(
                "child subreaper + {COOKIE} environment cookie (no writable cgroup v2 here)"
            ),
        }
    }
}

static CONTAINMENT: OnceLock<Containment> = OnceLock::new();

/// Is campaign a child subreaper (the cookie fallback's fast path relies on it)?
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Leaders of units alive in this process (pids campaign spawned and waits for itself).
fn leaders() -> &'static Mutex<BTreeSet<i32>> {
    static LEADERS: OnceLock<Mutex<BTreeSet<i32>>> = OnceLock::new();
    LEADERS.get_or_init(|| Mutex::new(BTreeSet::new()))
}

/// Nothing of a unit whose leader is gone can be alive when campaign, a subreaper, has no child
/// but running leaders: every orphan of a stack — whatever its session or group — would have
/// been reparented to campaign. Answers in one read of `/proc/self/task/*/children` instead of
/// a scan of every process's environment. `false` when it cannot tell.
fn provably_empty(leader: i32) -> bool {
    if !SUBREAPER.load(std::sync::atomic::Ordering::SeqCst)
        || scan::stat(leader).is_some_and(|s| s.live())
    {
        return false;
    }
    let Some(children) = scan::own_children() else {
        return false;
    };
    let leaders = leaders().lock().unwrap_or_else(|e| e.into_inner());
    children
        .iter()
        .all(|c| *c != leader && leaders.contains(c) && scan::stat(*c).is_some_and(|s| s.live()))
}

/// The containment in use; the first call decides it (and makes campaign a subreaper for the
/// fallback).
pub fn containment() -> &'static Containment {
    CONTAINMENT.get_or_init(|| {
        let forced = std::env::var(CONTAINMENT_ENV).ok();
        let chosen = match forced.as_deref() {
            Some("cookie") => Containment::Cookie,
            _ => cgroup::detect().map_or(Containment::Cookie, Containment::Cgroup),
        };
        if chosen == Containment::Cookie {
            // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
            #[cfg(target_os = "linux")]
            let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
            #[cfg(not(target_os = "linux"))]
            let rc = -1;
            SUBREAPER.store(rc == 0, std::sync::atomic::Ordering::SeqCst);
        }
        chosen
    })
}

/// When this process was started as one of containment's helpers (`campaign __shepherd ...`,
/// `campaign __warden`), run it and give its exit code; `None` for any other command line. The
/// `campaign` binary calls this first, then [`shepherd::enable`].
pub fn helper_main(args: &[std::ffi::OsString]) -> Option<i32> {
    match args.get(1).and_then(|a| a.to_str()) {
        Some(shepherd::ARG) => Some(shepherd::main(args)),
        Some(warden::ARG) => Some(warden::main(args)),
        _ => None,
    }
}

/// The unit id of attempt `attempt` of step `step` in `run_dir`: stable, so the journal can
/// name it before the process starts and a resume can find it.
pub fn id_for(run_dir: &Path, step: &str, attempt: u32) -> String {
    let text = format!("{}\0{step}\0{attempt}", run_dir.display());
    let hash = crate::model::digest::sha256_hex(text.as_bytes(), 8);
    format!("{hash}-{attempt}")
}

/// A unit id for a process no journal names (doctor's readiness probe, health probes).
pub fn fresh_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "p{}-{}-{:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    )
}

/// The cgroup a unit with this id gets here, when cgroups are in use.
pub fn cgroup_for(id: &str) -> Option<PathBuf> {
    match containment() {
        Containment::Cgroup(base) => Some(base.join(format!("{}{id}", cgroup::PREFIX))),
        Containment::Cookie => None,
    }
}

/// The cgroup the unit `id` of a run of `run_dir` will run in, claimed now so the journal can
/// name it before the process starts: a kept slot of the run dir ([`slots`]), or the unit's own
/// cgroup where no slot can be made; `None` without cgroups. [`slots::release`] gives it back.
pub fn claim_run_cgroup(run_dir: &Path, id: &str) -> Option<PathBuf> {
    match containment() {
        Containment::Cgroup(base) => slots::claim(base, run_dir, id)
            .ok()
            .or_else(|| cgroup_for(id)),
        Containment::Cookie => None,
    }
}

/// Units alive in this process, for the second Ctrl-C ([`kill_all`]).
fn live() -> &'static Mutex<BTreeMap<String, Option<PathBuf>>> {
    static LIVE: OnceLock<Mutex<BTreeMap<String, Option<PathBuf>>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Send `sig` to one process; a process that is gone is not an error.
pub(crate) fn signal(pid: i32, sig: i32) {
    if pid <= 1 || pid == std::process::id() as i32 {
        // Never signal init or campaign itself, whatever a scan returned.
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// A unit cgroup's control files, open while the cgroup is in use (for a kept cgroup,
/// [`slots`], as long as the campaign): each reading is one `pread`.
#[derive(Debug)]
pub(crate) struct Files {
    procs: Option<cgroup::Control>,
    pressure: Option<cgroup::Control>,
}

impl Files {
    fn open(dir: &std::fs::File) -> Files {
        Files {
            procs: cgroup::Control::open(dir, c"cgroup.procs"),
            pressure: cgroup::Control::open(dir, c"cpu.pressure"),
        }
    }

    /// Live pids (`None` when `cgroup.procs` cannot be read).
    fn pids(&self) -> Option<Vec<i32>> {
        let text = self.procs.as_ref()?.read()?;
        Some(cgroup::parse_procs(&text))
    }

    /// The "full" CPU stall total of `cpu.pressure` ([`cgroup::parse_full_total`]).
    fn stalled(&self) -> Option<Duration> {
        cgroup::parse_full_total(&self.pressure.as_ref()?.read()?)
    }
}

/// One containment unit.
#[derive(Debug)]
pub struct Unit {
    id: String,
    cookie: String,
    cgroup: Option<PathBuf>,
    /// The unit's cgroup directory, opened before spawning: the child is created in it
    /// (`executor::spawn`).
    dir: Option<std::sync::Arc<std::fs::File>>,
    /// The cgroup's CPU stall total before the unit's first process, when known without
    /// reading it: zero for a cgroup this `open` made, a kept slot's total after its last run.
    stalled_before: Option<Duration>,
    /// The cgroup's control files, open.
    files: Option<std::sync::Arc<Files>>,
    /// The cgroup is a run slot (`slots`): kept, not removed, when the unit ends.
    kept: bool,
    /// The last [`Unit::cpu_wait`] read (a slot's starting point for its next run).
    last_wait: Option<Duration>,
    leader: i32,
    /// The limits a shepherd (cookie fallback) or the warden (cgroups) keeps if campaign dies.
    limits: shepherd::Bound,
    /// The warden was told this unit's deadline ([`Unit::bound`]) and must hear its end.
    watched: bool,
    /// Every pid the unit was seen to hold (zombie orphans among them are reaped).
    seen: BTreeSet<i32>,
    /// `cgroup.kill` was written to the unit's cgroup: a kept slot is retired, never reused
    /// (see [`Unit::kill`]).
    cgroup_killed: bool,
    done: bool,
}

impl Unit {
    /// Open unit `id`: its cgroup is created (or reused by the next round of the same run).
    pub fn open(id: &str) -> std::io::Result<Unit> {
        let (cgroup, dir, files, stalled_before, kept) = match slots::claimed(id) {
            Some(claimed) => (
                Some(claimed.path),
                Some(claimed.dir),
                Some(claimed.files),
                claimed.total,
                true,
            ),
            None => match cgroup_for(id) {
                Some(path) => {
                    let made = cgroup::create(&path)?;
                    let dir = cgroup::open_dir(&path)?;
                    let files = std::sync::Arc::new(Files::open(&dir));
                    let before = made.then_some(Duration::ZERO);
                    (Some(path), Some(dir.into()), Some(files), before, false)
                }
                None => (None, None, None, None, false),
            },
        };
        if let Ok(mut l) = live().lock() {
            l.insert(id.to_string(), cgroup.clone());
        }
        Ok(Unit {
            id: id.to_string(),
            cookie: format!("{COOKIE}={id}"),
            cgroup,
            dir,
            stalled_before,
            files,
            kept,
            last_wait: None,
            leader: 0,
            limits: shepherd::Bound::default(),
            watched: false,
            seen: BTreeSet::new(),
            cgroup_killed: false,
            done: false,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The unit's cgroup, when cgroups are in use.
    pub fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }

    /// The unit's cgroup directory, open: `executor::spawn` creates the child in it (or the
    /// child moves itself there before `exec`), so nothing it forks can be missed.
    pub(crate) fn cgroup_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.dir.as_ref().map(|f| f.as_raw_fd())
    }

    /// Time the unit has been stalled for a CPU since its cgroup was made: every runnable
    /// process of it waiting (the "full" total of `cpu.pressure`, Linux pressure stall
    /// information); None without a cgroup or without PSI in the kernel.
    pub fn cpu_wait(&mut self) -> Option<Duration> {
        self.last_wait = self.files.as_deref().and_then(Files::stalled);
        self.last_wait
    }

    /// [`Unit::cpu_wait`] before the unit's first process starts, read only when not known
    /// already (a kernel without pressure totals makes the reading after the run `None`, and
    /// the difference with it).
    pub fn cpu_wait_before(&mut self) -> Option<Duration> {
        match self.stalled_before.take() {
            Some(known) => Some(known),
            None => self.cpu_wait(),
        }
    }

    /// The run's timeout and grace, kept by a shepherd or the warden should campaign die
    /// (`shepherd`, `warden`); set before the process is spawned.
    pub fn bound(&mut self, limits: shepherd::Bound) {
        self.limits = limits;
        // Told before the process exists: a campaign SIGKILLed right after the stack starts
        // (even before `spawn` returns) still leaves the warden its deadline.
        if self.cgroup.is_some() && !self.watched {
            if let Some(deadline) = limits.backup_deadline() {
                warden::watch(&self.id, deadline, limits.grace);
                self.watched = true;
            }
        }
    }

    pub(crate) fn limits(&self) -> shepherd::Bound {
        self.limits
    }

    /// The executable to start as this unit's leader in place of the stack: campaign itself
    /// as shepherd, in the cookie fallback of the `campaign` binary; `None` otherwise.
    pub(crate) fn shepherd(&self) -> Option<&'static Path> {
        match (&self.cgroup, containment()) {
            (None, Containment::Cookie) => shepherd::exe(),
            _ => None,
        }
    }

    /// The pid campaign started (it counts as a member even without the cookie).
    pub fn set_leader(&mut self, pid: i32) {
        self.leader = pid;
        if let Ok(mut l) = leaders().lock() {
            l.insert(pid);
        }
    }

    /// Live processes of the unit.
    pub fn members(&mut self) -> Vec<i32> {
        let found = match &self.cgroup {
            Some(path) => {
                (self.files.as_deref().and_then(Files::pids)).unwrap_or_else(|| cgroup::procs(path))
            }
            None if self.leader > 1 && provably_empty(self.leader) => Vec::new(),
            None => {
                let roots: Vec<i32> = (self.leader > 1)
                    .then_some(self.leader)
                    .into_iter()
                    .collect();
                scan::members(&self.cookie, &roots)
            }
        };
        self.seen.extend(found.iter().copied());
        found
    }

    pub fn alive(&mut self) -> bool {
        !self.members().is_empty()
    }

    /// Send `sig` to every process of the unit.
    pub fn signal(&mut self, sig: i32) {
        for pid in self.members() {
            signal(pid, sig);
        }
    }

    /// SIGKILL every process of the unit.
    ///
    /// A cgroup that was killed through `cgroup.kill` is not handed to another run: on the
    /// kernels of this machine kind (6.18), every process later born into it by `clone3`'s
    /// `CLONE_INTO_CGROUP` is SIGKILLed at birth, so one stack that ignored SIGTERM and
    /// timed out killed every later run of its slot within milliseconds (issue 43, item 1). Its
    /// slot is retired ([`slots::retire`]) and the next run gets a fresh one.
    pub fn kill(&mut self) {
        let current = self.members();
        match &self.cgroup {
            Some(path) => {
                self.cgroup_killed = true;
                cgroup::kill(path)
            }
            None => current
                .into_iter()
                .for_each(|pid| signal(pid, libc::SIGKILL)),
        }
    }

    /// Wait until nothing of the unit is alive: SIGTERM now unless `termed` (already sent),
    /// SIGKILL at `kill_at` (or `grace` from now), then wait for the kill to take effect. Reaps
    /// orphans reparented to campaign and removes the cgroup. Returns the pids that outlived
    /// even SIGKILL's wait (normally none).
    pub async fn finish(
        &mut self,
        kill_at: Option<tokio::time::Instant>,
        grace: Duration,
    ) -> Vec<i32> {
        use tokio::time::{sleep, Instant};
        // The common end: the cgroup is empty. A kept slot is read once; any other cgroup is
        // removed, which proves it empty in one call without reading what it holds.
        let empty = match &self.cgroup {
            Some(_) if self.kept && self.cgroup_killed => false,
            Some(_) if self.kept => self.members().is_empty(),
            Some(path) => cgroup::remove(path),
            None => false,
        };
        if empty {
            if self.kept {
                slots::settle(&self.id, self.last_wait);
            }
            self.reap_orphans();
            self.forget();
            return Vec::new();
        }
        if self.alive() {
            let kill_at = match kill_at {
                Some(at) => at,
                None => {
                    self.signal(libc::SIGTERM);
                    Instant::now() + grace
                }
            };
            while Instant::now() < kill_at {
                sleep(POLL).await;
                self.reap_orphans();
                if !self.alive() {
                    break;
                }
            }
            if self.alive() {
                self.kill();
                let until = Instant::now() + KILL_WAIT;
                while self.alive() && Instant::now() < until {
                    sleep(POLL).await;
                    self.reap_orphans();
                }
            }
        }
        self.reap_orphans();
        let left = self.members();
        self.close();
        left
    }

    /// Reap zombies this unit left as campaign's children (the subreaper makes orphans ours).
    /// The leader is `executor::spawn`'s to wait for; only pids the unit was seen to hold are touched, so
    /// no other part of campaign loses a child's exit status.
    fn reap_orphans(&mut self) {
        let me = std::process::id() as i32;
        let leader = self.leader;
        self.seen.retain(|&pid| {
            if pid == leader {
                return true;
            }
            match scan::stat(pid) {
                Some(s) if s.ppid == me && !s.live() => {
                    // SAFETY: waitpid on a specific zombie child; no memory involved.
                    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                    false
                }
                Some(_) => true,
                None => false,
            }
        });
    }

    fn close(&mut self) {
        match &self.cgroup {
            // A slot is kept for the next run when nothing is left in it; it starts from an
            // unknown total (this unit's last reading may predate its last process).
            Some(_) if self.kept => match self.members().is_empty() && !self.cgroup_killed {
                true => slots::settle(&self.id, None),
                false => slots::retire(&self.id),
            },
            Some(path) => {
                cgroup::remove(path);
            }
            None => {}
        }
        self.forget();
    }

    /// The unit is over: no longer alive for [`kill_all`], its leader no longer one of ours.
    fn forget(&mut self) {
        if let Ok(mut l) = live().lock() {
            l.remove(&self.id);
        }
        if std::mem::take(&mut self.watched) {
            warden::done(&self.id);
        }
        if let Ok(mut l) = leaders().lock() {
            l.remove(&self.leader);
        }
        self.done = true;
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // An early return or a dropped future: leave nothing running.
        self.kill();
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < until && self.alive() {
            std::thread::sleep(POLL);
        }
        self.reap_orphans();
        self.close();
    }
}

/// SIGKILL every unit alive in this process (the second Ctrl-C, just before exiting) and remove
/// the kept run cgroups no run holds (they are empty). Nothing waits for the kill: campaign exits
/// at once, before any killed run can be recorded, and the cgroups of the killed runs are
/// `resume`'s to reap and remove (the journal names them).
pub fn kill_all() {
    let units: Vec<(String, Option<PathBuf>)> = live()
        .lock()
        .map(|l| l.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    for (id, cgroup) in units {
        match cgroup {
            Some(path) => cgroup::kill(&path),
            None => {
                for pid in scan::members(&format!("{COOKIE}={id}"), &[]) {
                    signal(pid, libc::SIGKILL);
                }
            }
        }
    }
    slots::remove_free();
}

/// What of a journaled unit may be reaped ([`vouch`]), and why the rest is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    /// `(unit id, cgroup)` to reap: the id when it is this run dir's, its cgroup only when it
    /// is one campaign makes for that id.
    pub unit: Option<(String, Option<PathBuf>)>,
    /// Why (part of) what the line names is not this run dir's.
    pub refused: Option<String>,
}

/// What a journal's `started` line says an attempt ran in, checked against what this run dir
/// would have made: the unit id must be [`id_for`] of this run dir, step and attempt, and the
/// cgroup (if any) one of campaign's own for this run dir — `campaign-<that id>` or one of the run
/// dir's kept slots (`campaign-<tag>-s<k>`, [`slots`]) — at a plain absolute path inside the
/// cgroup2 mount. A journal is a file anyone can hand over with a run dir: nothing it names is
/// signalled or removed unless campaign would have named it so itself. An untrusted cgroup alone
/// leaves the (checked) unit id, whose cookie still finds the unit's processes.
pub fn vouch(
    run_dir: &Path,
    step: &str,
    attempt: u32,
    unit: &str,
    cgroup: Option<&Path>,
) -> Vouched {
    let expected = id_for(run_dir, step, attempt);
    if unit != expected {
        return Vouched {
            unit: None,
            refused: Some(format!(
                "its unit `{unit}` is not the one this run dir gives attempt {attempt} (`{expected}`)"
            )),
        };
    }
    let Some(path) = cgroup else {
        return Vouched {
            unit: Some((expected, None)),
            refused: None,
        };
    };
    let mount = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|m| cgroup::cgroup2_mount(&m))
        .map(|(_, mount)| PathBuf::from(mount));
    match own_cgroup_path(run_dir, &expected, path, mount.as_deref()) {
        Ok(()) => Vouched {
            unit: Some((expected, Some(path.to_path_buf()))),
            refused: None,
        },
        Err(why) => Vouched {
            unit: Some((expected, None)),
            refused: Some(format!("its cgroup `{}` {why}", path.display())),
        },
    }
}

/// Is `path` a cgroup campaign makes for unit `id` of `run_dir` (see [`vouch`])?
fn own_cgroup_path(
    run_dir: &Path,
    id: &str,
    path: &Path,
    mount: Option<&Path>,
) -> std::result::Result<(), &'static str> {
    use std::path::Component;
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Err("is not a plain absolute path");
    }
    let Some(mount) = mount else {
        return Err("cannot be checked: no cgroup2 mount here");
    };
    if path == mount || !path.starts_with(mount) {
        return Err("is not a cgroup below the cgroup2 mount");
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let own = name
        .strip_prefix(cgroup::PREFIX)
        .is_some_and(|rest| rest == id || slots::is_slot_name(run_dir, rest));
    if !own {
        return Err("is not one campaign makes for this run dir");
    }
    Ok(())
}

/// One process a [`reap`] killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub pid: i32,
    pub comm: String,
}

/// Poll interval while reaped processes disappear (SIGKILL takes effect within milliseconds).
const REAP_POLL: Duration = Duration::from_millis(2);

/// Kill whatever is left of units from an earlier session — each `(id, journaled cgroup)`: the
/// cgroup, if any, and every process carrying the unit's cookie — and wait for it to be gone.
/// One `/proc` pass serves every unit. Returns what was killed, per unit (same order).
pub fn reap(units: &[(String, Option<PathBuf>)]) -> Vec<Vec<Reaped>> {
    let cookies: Vec<String> = units
        .iter()
        .map(|(id, _)| format!("{COOKIE}={id}"))
        .collect();
    let refs: Vec<&str> = cookies.iter().map(String::as_str).collect();
    let find = || -> Vec<BTreeSet<i32>> {
        let mut found: Vec<BTreeSet<i32>> = scan::members_of(&refs, &[])
            .into_iter()
            .map(|v| v.into_iter().collect())
            .collect();
        for (set, (_, cgroup)) in found.iter_mut().zip(units) {
            if let Some(path) = cgroup {
                set.extend(cgroup::procs(path));
            }
        }
        found
    };
    let found = find();
    let killed: Vec<Vec<Reaped>> = found
        .iter()
        .map(|set| {
            set.iter()
                .map(|&pid| Reaped {
                    pid,
                    comm: scan::comm(pid),
                })
                .collect()
        })
        .collect();
    for (set, (_, cgroup)) in found.iter().zip(units) {
        if let Some(path) = cgroup {
            cgroup::kill(path);
        }
        for &pid in set {
            signal(pid, libc::SIGKILL);
        }
    }
    let until = std::time::Instant::now() + KILL_WAIT;
    let mut left = found.iter().any(|s| !s.is_empty());
    while left && std::time::Instant::now() < until {
        std::thread::sleep(REAP_POLL);
        left = find().iter().any(|s| !s.is_empty());
    }
    for (_, cgroup) in units {
        if let Some(path) = cgroup {
            cgroup::remove(path);
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_run_dirs_own_units_and_cgroups_are_vouched_for() {
        let run_dir = Path::new("/r/run_1");
        let step = "run:c:s";
        let id = id_for(run_dir, step, 2);
        let mount = Some(Path::new("/sys/fs/cgroup"));
        let slot = format!("/sys/fs/cgroup/x/campaign-{}-s3", slots::tag(run_dir));
        let own = format!("/sys/fs/cgroup/x/campaign-{id}");
        for ok in [slot.as_str(), own.as_str()] {
            assert_eq!(
                own_cgroup_path(run_dir, &id, Path::new(ok), mount),
                Ok(()),
                "{ok}"
            );
        }
        let other_slot = format!(
            "/sys/fs/cgroup/x/campaign-{}-s0",
            slots::tag(Path::new("/r/run_2"))
        );
        for bad in [
            "/sys/fs/cgroup",
            "/sys/fs/cgroup/",
            "/sys/fs/cgroup/user.slice",
            "/sys/fs/cgroup/x/campaign-0123456789abcdef-1",
            other_slot.as_str(),
            &format!("/sys/fs/cgroup/x/campaign-{id}/.."),
            &format!("/sys/fs/cgroup/../x/campaign-{id}"),
            &format!("sys/fs/cgroup/x/campaign-{id}"),
            &format!("/tmp/campaign-{id}"),
            &format!("/sys/fs/cgroup/x/campaign-{}-sx", slots::tag(run_dir)),
        ] {
            assert!(
                own_cgroup_path(run_dir, &id, Path::new(bad), mount).is_err(),
                "{bad} must not be vouched for"
            );
        }
        assert!(own_cgroup_path(run_dir, &id, Path::new(&own), None).is_err());
        // A unit id this run dir does not give that attempt is refused outright.
        for other in [
            vouch(run_dir, step, 1, &id, None),
            vouch(Path::new("/r/run_2"), step, 2, &id, None),
        ] {
            assert!(other.unit.is_none() && other.refused.is_some());
        }
        let ok = vouch(run_dir, step, 2, &id, None);
        assert_eq!(
            ok,
            Vouched {
                unit: Some((id.clone(), None)),
                refused: None
            }
        );
        // A foreign cgroup with the right id: only the id (its cookie) is kept.
        let foreign = vouch(
            run_dir,
            step,
            2,
            &id,
            Some(Path::new("/sys/fs/cgroup/user.slice")),
        );
        assert_eq!(foreign.unit, Some((id.clone(), None)));
        assert!(foreign.refused.is_some());
    }

    #[test]
    fn unit_ids_are_stable_per_step_and_attempt() {
        let a = id_for(Path::new("/r/run_1"), "run:c:s", 1);
        assert_eq!(a, id_for(Path::new("/r/run_1"), "run:c:s", 1));
        assert_ne!(a, id_for(Path::new("/r/run_1"), "run:c:s", 2));
        assert_ne!(a, id_for(Path::new("/r/run_2"), "run:c:s", 1));
        assert!(a.ends_with("-1"));
        assert_ne!(fresh_id(), fresh_id());
    }
}

//! Ctrl-C and SIGTERM during a campaign.
//!
//! Owns the signal listener and the two-stage contract: the first SIGINT/SIGTERM sets a flag the
//! scheduler watches (stop launching, terminate running process groups, journal them
//! `interrupted`, write results files, exit 3 with the hint from [`resume_hint`]); a second one
//! SIGKILLs every process group still registered here and exits at once with code 3. The journal
//! stays consistent through that because every journal line is one append and replay ignores a
//! torn last line. It never touches the journal or the executor itself: they register with it.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::error::{exit, Error, Result};

type OnSecond = Box<dyn Fn() + Send + Sync>;

struct Inner {
    count: AtomicU32,
    tx: watch::Sender<bool>,
    groups: Mutex<BTreeSet<i32>>,
    on_second: OnSecond,
}

/// Shared interrupt state; cheap to clone, one per campaign process.
#[derive(Clone)]
pub(crate) struct Interrupt {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt")
            .field("signals", &self.signals())
            .finish()
    }
}

/// Removes its process group from the registry when dropped (the process was reaped).
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct GroupGuard {
    interrupt: Interrupt,
    pgid: i32,
}

#[cfg(test)]
impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Ok(mut g) = self.interrupt.inner.groups.lock() {
            g.remove(&self.pgid);
        }
    }
}

impl Interrupt {
    /// Listen for SIGINT and SIGTERM. Must be called inside a tokio runtime with signals
    /// enabled; from then on the default "die at once" action of both signals is replaced.
    pub(crate) fn install() -> Result<Interrupt> {
        Self::install_with(Box::new(exit_now))
    }

    /// [`Interrupt::install`] with another action for the second signal (tests keep the test
    /// process alive with it).
    pub(crate) fn install_with(on_second: OnSecond) -> Result<Interrupt> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| {
                Error::Environment(format!("cannot listen for {name} (Ctrl-C handling): {e}"))
            })
        };
        // Both streams are registered here, before returning, so no signal can slip through
        // between install and the listener task's first poll.
        let mut int = listen(SignalKind::interrupt(), "SIGINT")?;
        let mut term = listen(SignalKind::terminate(), "SIGTERM")?;
        let this = Self::with_action(on_second);
        let handle = this.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    s = int.recv() => if s.is_none() { break },
                    s = term.recv() => if s.is_none() { break },
                }
                handle.deliver();
            }
        });
        Ok(this)
    }

    /// An interrupt that listens to no signal: [`Interrupt::deliver`] is the only trigger.
    #[cfg(test)]
    pub(crate) fn manual() -> Interrupt {
        Self::with_action(Box::new(exit_now))
    }

    fn with_action(on_second: OnSecond) -> Interrupt {
        let (tx, _rx) = watch::channel(false);
        Interrupt {
            inner: Arc::new(Inner {
                count: AtomicU32::new(0),
                tx,
                groups: Mutex::new(BTreeSet::new()),
                on_second,
            }),
        }
    }

    /// What a received signal does: the first requests a clean stop, the second kills every
    /// registered process group and runs the exit action.
    pub(crate) fn deliver(&self) {
        let n = self.inner.count.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            eprintln!(
                "interrupted: stopping runs and saving the journal and results (interrupt again to exit at once)"
            );
            self.inner.tx.send_replace(true);
            return;
        }
        if n == 2 {
            self.kill_groups(libc::SIGKILL);
            eprintln!(
                "interrupted twice: exiting now; `campaign resume` re-runs what was in flight"
            );
            (self.inner.on_second)();
        }
    }

    /// Signals received so far.
    pub(crate) fn signals(&self) -> u32 {
        self.inner.count.load(Ordering::SeqCst)
    }

    /// Has a stop been requested? (The scheduler checks before launching each run.)
    #[cfg(test)]
    pub(crate) fn requested(&self) -> bool {
        self.signals() > 0
    }

    /// Resolves when a stop is requested (immediately if it already was); for `select!` next to
    /// running processes.
    #[cfg(test)]
    pub(crate) async fn wait(&self) {
        let mut rx = self.inner.tx.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    /// A receiver that turns `true` on the first signal (the executor's `cancel` input).
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.inner.tx.subscribe()
    }

    /// Register a running process group so a second signal kills it before exiting.
    #[cfg(test)]
    pub(crate) fn track_group(&self, pgid: i32) -> GroupGuard {
        if let Ok(mut g) = self.inner.groups.lock() {
            g.insert(pgid);
        }
        GroupGuard {
            interrupt: self.clone(),
            pgid,
        }
    }

    /// Process groups currently registered.
    pub(crate) fn groups(&self) -> Vec<i32> {
        self.inner
            .groups
            .lock()
            .map(|g| g.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Send `sig` to every registered process group (SIGTERM on the first signal is the
    /// executor's job, with its grace period; this is the fallback for both).
    pub(crate) fn kill_groups(&self, sig: i32) {
        for pgid in self.groups() {
            if pgid > 0 {
                // SAFETY: kill(2) on a negative pid signals that process group; no memory involved.
                unsafe { libc::kill(-pgid, sig) };
            }
        }
    }
}

/// The default second-signal action: kill what is left of every stack process, exit 3.
fn exit_now() {
    kill_child_groups(libc::SIGKILL);
    std::process::exit(exit::INTERRUPTED);
}

/// Send `sig` to the process group of every direct child that leads its own group — how the
/// executor starts stack processes — so a second signal leaves nothing running even for groups
/// nobody registered. Reads `/proc`; elsewhere it does nothing.
pub(crate) fn kill_child_groups(sig: i32) {
    for pgid in child_group_leaders() {
        // SAFETY: kill(2) on a negative pid signals that process group; no memory involved.
        unsafe { libc::kill(-pgid, sig) };
    }
}

/// Pids of our direct children whose process group id is their own pid.
fn child_group_leaders() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may contain spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(ppid), Some(pgrp)) = (
            fields.get(1).and_then(|f| f.parse::<i32>().ok()),
            fields.get(2).and_then(|f| f.parse::<i32>().ok()),
        ) else {
            continue;
        };
        if ppid == me && pgrp == pid && pid > 1 {
            out.push(pid);
        }
    }
    out
}

/// The line printed when a campaign stops early.
pub(crate) fn resume_hint(run_dir: &Path) -> String {
    format!(
        "interrupted; continue with: campaign resume {}",
        run_dir.display()
    )
}

/// The error a command returns after an interrupted campaign saved its state (exit code 3).
pub(crate) fn interrupted(run_dir: &Path) -> Error {
    Error::Interrupted(resume_hint(run_dir))
}

/// Set by the preparation handler: a SIGINT/SIGTERM arrived before the campaign's listener.
static EARLY_SIGNAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_early_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    EARLY_SIGNAL.store(true, Ordering::SeqCst);
}

/// Honour Ctrl-C/SIGTERM while a campaign is prepared (cases expanded, stacks checked), before
/// [`Interrupt::install`] takes over: a process started in the background of a script inherits
/// SIGINT *ignored*, and a big plan takes a while to prepare. The handler only sets a flag that
/// preparation polls ([`check_preparation`]); nothing exists on disk yet, so stopping is clean.
pub(crate) fn listen_during_preparation() {
    let handler = note_early_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs an async-signal-safe handler (one atomic store) for two signals.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// `Err(Interrupted)` once a signal arrived during preparation (exit 3, nothing was started).
pub(crate) fn check_preparation() -> Result<()> {
    if EARLY_SIGNAL.load(Ordering::SeqCst) {
        Err(Error::Interrupted(
            "interrupted while preparing the campaign: nothing was started and no run dir was made"
                .into(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::sync::atomic::AtomicBool;

    #[test]
    fn first_signal_requests_stop_second_kills_groups_and_exits() {
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        rt.block_on(async {
            let i = Interrupt::install_with(Box::new(move || flag.store(true, Ordering::SeqCst)))
                .unwrap();
            let guard = i.track_group(child.id() as i32);
            assert!(!i.requested());
            // A real SIGTERM to ourselves goes through the tokio listener.
            // SAFETY: kill(2) on our own pid with a signal we now handle.
            unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
            tokio::time::timeout(std::time::Duration::from_secs(30), i.wait())
                .await
                .expect("stop requested after SIGTERM");
            assert!(i.requested());
            assert!(!exited.load(Ordering::SeqCst));
            assert_eq!(i.groups(), vec![child.id() as i32]);
            // SAFETY: as above.
            unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
            let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
                .await
                .unwrap();
            assert_eq!(status.signal(), Some(libc::SIGKILL));
            for _ in 0..3000 {
                if exited.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert!(exited.load(Ordering::SeqCst));
            drop(guard);
            assert!(i.groups().is_empty());
        });
    }

    #[test]
    fn child_group_leaders_finds_our_own_group_leading_children_only() {
        let mut leader = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut plain = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let found = child_group_leaders();
        assert!(found.contains(&(leader.id() as i32)), "{found:?}");
        assert!(!found.contains(&(plain.id() as i32)), "{found:?}");
        // SAFETY: signalling our own children.
        unsafe { libc::kill(leader.id() as i32, libc::SIGKILL) };
        unsafe { libc::kill(plain.id() as i32, libc::SIGKILL) };
        leader.wait().unwrap();
        plain.wait().unwrap();
    }

    #[test]
    fn manual_interrupt_and_hint() {
        let i = Interrupt::manual();
        let mut rx = i.subscribe();
        assert!(!*rx.borrow_and_update());
        let g = i.track_group(12345);
        assert_eq!(i.groups(), vec![12345]);
        drop(g);
        assert!(i.groups().is_empty());
        i.deliver();
        assert!(i.requested());
        assert!(rx.has_changed().unwrap() && *rx.borrow());
        let err = interrupted(Path::new("results/campaigns/x/run_1"));
        assert_eq!(err.exit_code(), exit::INTERRUPTED);
        assert_eq!(
            err.to_string(),
            "interrupted; continue with: campaign resume results/campaigns/x/run_1"
        );
    }
}

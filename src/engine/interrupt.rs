//! Ctrl-C, SIGTERM and SIGHUP during a campaign.
//!
//! Owns the signal listener and the two-stage contract: the first SIGINT/SIGTERM/SIGHUP (a lost
//! SSH session is a hang-up) sets a flag the scheduler watches (stop launching, stop running
//! units, journal them `interrupted`, write results files, exit 3 with the hint from
//! [`resume_hint`]); a second one SIGKILLs every containment unit still alive
//! (`executor::unit::kill_all`) and exits at once with code 3. The journal stays consistent
//! through that because every journal line is one append and replay ignores a torn last line.
//! It never touches the journal; executors find the stop request through [`Interrupt::subscribe`].

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use crate::error::{exit, Error, Result};

type OnSecond = Box<dyn Fn() + Send + Sync>;

struct Inner {
    count: AtomicU32,
    tx: watch::Sender<bool>,
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

impl Interrupt {
    /// Listen for SIGINT, SIGTERM and SIGHUP. Must be called inside a tokio runtime with signals
    /// enabled; from then on the default "die at once" action of the three signals is replaced.
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
        // The streams are registered here, before returning, so no signal can slip through
        // between install and the listener task's first poll.
        let mut int = listen(SignalKind::interrupt(), "SIGINT")?;
        let mut term = listen(SignalKind::terminate(), "SIGTERM")?;
        let mut hup = listen(SignalKind::hangup(), "SIGHUP")?;
        let this = Self::with_action(on_second);
        // A signal that came after preparation's last look (while the run dir, its journal and
        // the schedule of a big plan were being made) is the first signal of the campaign: it
        // must stop it now, not be lost.
        if EARLY_SIGNAL.swap(false, Ordering::SeqCst) {
            this.deliver();
        }
        let handle = this.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    s = int.recv() => if s.is_none() { break },
                    s = term.recv() => if s.is_none() { break },
                    s = hup.recv() => if s.is_none() { break },
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
                on_second,
            }),
        }
    }

    /// What a received signal does: the first requests a clean stop, the second kills every
    /// live containment unit and runs the exit action.
    pub(crate) fn deliver(&self) {
        let n = self.inner.count.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            crate::tell!(
                "interrupted: stopping runs and saving the journal and results (interrupt again to exit at once)"
            );
            self.inner.tx.send_replace(true);
            return;
        }
        if n == 2 {
            crate::executor::unit::kill_all();
            crate::tell!(
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

    /// A receiver that turns `true` on the first signal (the executor's `cancel` input). When
    /// the stop was requested before it subscribed (a signal during preparation), it reports a
    /// change at once, so a `changed().await` loop does not wait for a second signal.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        let mut rx = self.inner.tx.subscribe();
        if *rx.borrow() {
            rx.mark_changed();
        }
        rx
    }
}

/// The default second-signal action (units are already killed): exit 3.
fn exit_now() {
    std::process::exit(exit::INTERRUPTED);
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
    use crate::executor::unit::Unit;
    use std::sync::atomic::AtomicBool;

    /// The tests that touch the process-wide signal state, one at a time.
    static SIGNAL_STATE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_signal_between_preparation_and_the_listener_stops_the_campaign() {
        let _one = SIGNAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            // What the preparation handler does on a Ctrl-C after `check_preparation`.
            note_early_signal(libc::SIGINT);
            let i = Interrupt::install_with(Box::new(|| {})).unwrap();
            assert_eq!(i.signals(), 1, "the early signal counts as the first");
            // Subscribed after the stop: a `changed()` loop still hears it.
            let mut rx = i.subscribe();
            tokio::time::timeout(std::time::Duration::from_secs(60), rx.changed())
                .await
                .expect("the change is reported at once")
                .unwrap();
            assert!(*rx.borrow(), "a stop is requested");
            assert!(check_preparation().is_ok(), "the flag was handed over");
        });
    }

    #[test]
    fn first_signal_requests_stop_second_kills_units_and_exits() {
        let _one = SIGNAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            // A unit holding a process that left campaign's process group and session (and
            // the shell waiting for it).
            let mut unit = Unit::open(&crate::executor::unit::fresh_id()).unwrap();
            let argv = ["sh", "-c", "setsid sleep 60 & wait"].map(String::from);
            let mut child =
                crate::executor::spawn::spawn(&argv, &[], Path::new("/"), &unit).unwrap();
            unit.set_leader(child.id());
            let i = Interrupt::install_with(Box::new(move || flag.store(true, Ordering::SeqCst)))
                .unwrap();
            assert!(!i.requested());
            // A real SIGHUP to ourselves goes through the tokio listener, like SIGTERM.
            // SAFETY: kill(2) on our own pid with a signal we now handle.
            unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
            tokio::time::timeout(std::time::Duration::from_secs(30), i.wait())
                .await
                .expect("stop requested after SIGHUP");
            assert!(i.requested());
            assert!(!exited.load(Ordering::SeqCst));
            // SAFETY: as above.
            unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
            let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
                .await
                .expect("the unit's process was killed")
                .unwrap();
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(libc::SIGKILL));
            for _ in 0..3000 {
                if exited.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert!(exited.load(Ordering::SeqCst));
            assert!(unit
                .finish(None, std::time::Duration::ZERO)
                .await
                .is_empty());
        });
    }

    #[test]
    fn manual_interrupt_and_hint() {
        let i = Interrupt::manual();
        let mut rx = i.subscribe();
        assert!(!*rx.borrow_and_update());
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

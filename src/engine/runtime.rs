//! Running a built campaign: the session's tokio runtime (two workers), the backend's start,
//! the two-stage Ctrl-C (`engine::interrupt`: the first stops launching and lets the backend
//! decide about its work outside campaign, a second kills every child group and exits 3), and
//! the scheduler driven to its end on a worker.
//!
//! Owns the runtime and the signal task for one session. It must not decide statuses or order
//! (the scheduler does) nor write results (`drive` finishes).

use crate::engine::campaign::Campaign;
use crate::engine::dispatch::Dispatcher;
use crate::engine::schedule::types::Summary;
use crate::error::{Error, Result};
use crate::executor::Earlier;

/// Run `campaign` to its end; `stale` are the earlier session's jobs of runs that run again,
/// which the backend stops before anything starts. Hands the dispatcher back with the summary.
pub(crate) fn run(campaign: Campaign, earlier: Earlier) -> Result<(Summary, Dispatcher)> {
    let Campaign {
        scheduler,
        mut dispatcher,
    } = campaign;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let backend = dispatcher.backend.clone();
    let (cancel_tx, cancel) = (
        dispatcher.stop.cancel_tx.clone(),
        dispatcher.stop.cancel.clone(),
    );
    rt.block_on(async move {
        backend.start(earlier).await;
        // First Ctrl-C/SIGTERM: stop launching, stop running processes, record them
        // `interrupted`; a second one kills every child group and exits 3.
        let interrupt = crate::engine::interrupt::Interrupt::install()?;
        let mut signals = interrupt.subscribe();
        tokio::spawn(async move {
            while signals.changed().await.is_ok() {
                if *signals.borrow() {
                    // Stop launching first; then the backend decides about its work outside.
                    let _ = cancel_tx.send(true);
                    backend.interrupted().await;
                    break;
                }
            }
        });
        // The scheduler runs on a worker like the runs it starts, so a finished run's report
        // wakes it on the same thread instead of crossing to the main thread and back.
        let joined = tokio::spawn(async move {
            let mut summary = scheduler.run(&mut dispatcher, cancel).await;
            // Profiled runs only after every timed run ended, and only in a campaign that can
            // still record (`engine::profiled`).
            if !summary.interrupted && dispatcher.stop.fatal.is_none() {
                dispatcher.profile().await;
                summary.interrupted |= *dispatcher.stop.cancel.borrow();
            }
            // The scheduler and its graph are gone: the report renders beside the results only,
            // and a Ctrl-C meanwhile is still heard.
            dispatcher.conclude(&mut summary);
            (summary, dispatcher)
        })
        .await;
        joined.map_err(|e| Error::Environment(format!("the scheduler stopped: {e}")))
    })
}

//! `execute` and `resume`: the campaign's story once it is prepared — claim a run dir (new, or
//! the existing one with its journal), build the campaign (`campaign`), run it (`runtime`), and
//! finish: the results files written, what an interrupt did to work outside campaign journaled,
//! every `finished` line durable.
//!
//! Owns the order of those steps and nothing else: it must not decide statuses or order, and
//! it prints only the lines a session without runs answers with.

use crate::engine::campaign;
use crate::engine::dispatch::{AfterStep, Dispatcher, RunState};
use crate::engine::finished::Finished;
use crate::engine::prepare::{Options, Prepared};
use crate::engine::{runtime, session};
use crate::error::{Error, Result};

/// Claim a new run dir and run every step. `after` are steps after `collect`, in order.
pub(crate) fn execute(
    prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
) -> Result<Finished> {
    let claimed = session::claim_new(&prep, opts)?;
    drive(prep, opts, after, claimed)
}

/// Continue the campaign of an existing run dir: runs the journal does not show as done run,
/// the others keep their bundles; results files and `after` steps are rebuilt from all of them.
pub(crate) fn resume(
    mut prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    state: session::Resume,
) -> Result<Finished> {
    let claimed = session::claim_resume(&mut prep, state, opts.results_dir.as_deref())?;
    drive(prep, opts, after, claimed)
}

/// Prepare → claim → build → run → finish, on a claimed run dir.
fn drive(
    prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    claimed: session::Claimed,
) -> Result<Finished> {
    let session::Claimed {
        run_dir,
        lock: _lock,
        journal,
        fingerprints,
        kept,
        earlier_quarantine,
        decisions,
        census_line,
        pending,
        reattach,
        stale_jobs,
        settled,
    } = claimed;
    if let Some(finished) = settled {
        // Nothing to run, and the results files and report already show every run: a resume
        // of a finished run dir of any size answers from the journal alone.
        crate::say!(
            "nothing to run: every planned run is done; results files and report are up to date"
        );
        session::drop_aside((prep, fingerprints, kept));
        return Ok(finished);
    }
    let earlier = crate::executor::Earlier {
        stale: stale_jobs,
        reattach: reattach.values().copied().collect(),
        run_dir: run_dir.path.clone(),
    };
    let mut state = RunState::new(journal, fingerprints, kept, reattach);
    state.earlier_quarantine = earlier_quarantine;
    state.decisions = decisions;
    state.census_line = census_line;
    let built = campaign::build(prep, opts, after, run_dir.clone(), state, pending)?;
    if pending == 0 {
        crate::say!("nothing to run: every planned run is done; rebuilding results and report");
    }
    let ran = runtime::run(built, earlier);
    // Every run has reported: the runs' kept cgroups are empty and go.
    crate::executor::unit::slots::remove_all(&run_dir.path);
    let (_summary, dispatcher) = ran?;
    finish(dispatcher)
}

/// The end of a session, once [`Dispatcher::conclude`] ran: how the campaign ended — or the
/// fatal error, with how to go on.
fn finish(mut dispatcher: Dispatcher) -> Result<Finished> {
    let run_dir = dispatcher.plan.run_dir.clone();
    let concluded = dispatcher.out.concluded.take();
    if let Some(e) = dispatcher.stop.fatal.take() {
        // Whatever could still be written helps `status`; the journal and bundles already hold
        // everything recorded, so a failure there changes nothing.
        return Err(Error::Environment(format!(
            "{e}\nthe campaign stopped: everything recorded before is intact; once the problem is fixed, `campaign resume {}` continues",
            run_dir.path.display()
        )));
    }
    let Some((mut finished, recorded)) = concluded else {
        return Err(Error::Environment(
            "the campaign ended without its results".into(),
        ));
    };
    // The results files written and every `finished` line of the session on disk before
    // campaign says it is done.
    recorded?;
    finished.after_failed = std::mem::take(&mut dispatcher.out.after_failed);
    Ok(finished)
}

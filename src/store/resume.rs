//! Resume planning: given what the journal says and what the plan wants, decide which runs are
//! done and which run again.
//!
//! Owns the resume rules (docs/journal.md, "Resume rules"): runs never started, interrupted
//! (started without finished), `interrupted` and `blocked` run; `--retry-failed` also re-runs
//! `fail` and `timeout`; a run whose fingerprint changed since it finished is `changed` and runs;
//! a run that finished `pass` with the same fingerprint never runs again. Pure: no I/O, no
//! scheduling, no printing besides the [`ResumePlan`] summary's `Display`.

use crate::model::results::RunStatus;
use crate::store::journal::StepState;

/// What resume does with one planned step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Finished and kept (pass, or fail/timeout without `--retry-failed`, skipped, unavailable).
    Done,
    /// Never started, interrupted, or blocked: runs.
    Run,
    /// Finished, but its fingerprint differs from the planned one: runs.
    Changed,
    /// Failed or timed out, and `--retry-failed` was given: runs.
    Retry,
}

/// The result of [`plan`]: planned runs (indices into the planned list) by decision, each in
/// planned order. Indices, not step keys: a resume of 100,000 runs would copy every key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ResumePlan {
    pub(crate) done: Vec<usize>,
    pub(crate) to_run: Vec<usize>,
    pub(crate) changed: Vec<usize>,
    pub(crate) to_retry: Vec<usize>,
    /// Of `done`: runs that failed or timed out and are kept (a hint for `--retry-failed`).
    pub(crate) kept_failures: usize,
}

impl ResumePlan {
    /// Every planned run that will run, in planned order.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> Vec<usize> {
        let mut runs: Vec<usize> = (self.to_run.iter())
            .chain(&self.changed)
            .chain(&self.to_retry)
            .copied()
            .collect();
        runs.sort_unstable();
        runs
    }

    /// Number of steps that will run.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.to_run.len() + self.changed.len() + self.to_retry.len()
    }

    #[cfg(test)]
    pub(crate) fn is_complete(&self) -> bool {
        self.pending() == 0
    }
}

impl std::fmt::Display for ResumePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} done, {} to run, {} changed, {} to retry",
            self.done.len(),
            self.to_run.len(),
            self.changed.len(),
            self.to_retry.len()
        )?;
        if self.kept_failures > 0 && self.to_retry.is_empty() {
            write!(
                f,
                " ({} failed or timed out and kept; --retry-failed runs them again)",
                self.kept_failures
            )?;
        }
        Ok(())
    }
}

/// Decide every planned run against the journal: its journaled state (`Replay::step` of its
/// step key, looked up once by the caller) and its planned fingerprint.
pub(crate) fn plan<'a>(
    planned: impl IntoIterator<Item = (Option<&'a StepState>, &'a str)>,
    retry_failed: bool,
) -> ResumePlan {
    let mut out = ResumePlan::default();
    for (i, (state, fingerprint)) in planned.into_iter().enumerate() {
        let list = match decide(state, fingerprint, retry_failed) {
            Decision::Done => {
                if state
                    .and_then(StepState::status)
                    .is_some_and(RunStatus::is_failure)
                {
                    out.kept_failures += 1;
                }
                &mut out.done
            }
            Decision::Run => &mut out.to_run,
            Decision::Changed => &mut out.changed,
            Decision::Retry => &mut out.to_retry,
        };
        list.push(i);
    }
    out
}

/// The rule for one step (`state`: what the journal says of it, if anything).
pub(crate) fn decide(state: Option<&StepState>, fingerprint: &str, retry_failed: bool) -> Decision {
    let Some(state) = state else {
        return Decision::Run;
    };
    let Some(status) = state.status() else {
        // Started and never finished: a crash or kill took it.
        return Decision::Run;
    };
    if state.fingerprint != fingerprint {
        return Decision::Changed;
    }
    match status {
        // A spared run was not needed when it was decided (its point decided, or the budget
        // spent): a resume does not bring it back.
        RunStatus::Pass | RunStatus::Skipped | RunStatus::Unavailable | RunStatus::Spared => {
            Decision::Done
        }
        // Interrupted runs were stopped by the user; blocked ones never ran (no healthy device
        // in that session, and every session probes its devices afresh).
        RunStatus::Interrupted | RunStatus::Blocked => Decision::Run,
        RunStatus::Fail | RunStatus::Timeout => {
            if retry_failed {
                Decision::Retry
            } else {
                Decision::Done
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::journal::{Finished, Replay};

    /// [`plan`] of `(step key, fingerprint)` pairs against `replay`.
    fn plan_keys(replay: &Replay, planned: &[(&str, &str)], retry_failed: bool) -> ResumePlan {
        plan(
            planned.iter().map(|(k, f)| (replay.step(k), *f)),
            retry_failed,
        )
    }

    fn finished(status: RunStatus, fp: &str) -> StepState {
        StepState {
            attempts: 1,
            fingerprint: fp.into(),
            open_since: None,
            last_finished: Some(Finished {
                status,
                reason: None,
                attempt: 1,
                fingerprint: fp.into(),
                t: String::new(),
                duration: None,
                line: 2,
                samples: None,
                content: None,
            }),
            slurm_job: None,
            unit: None,
        }
    }

    fn started(fp: &str, earlier: Option<RunStatus>) -> StepState {
        let mut s = earlier.map_or_else(StepState::default, |st| finished(st, "old"));
        s.attempts += 1;
        s.fingerprint = fp.into();
        s.open_since = Some("t".into());
        s
    }

    #[test]
    fn decision_table() {
        use Decision::*;
        use RunStatus::*;
        // (journal state, planned fingerprint, retry_failed, expected)
        let table: Vec<(Option<StepState>, &str, bool, Decision)> = vec![
            (None, "f", false, Run),
            (Some(started("f", None)), "f", false, Run),
            (Some(started("f", Some(Pass))), "f", false, Run),
            (Some(finished(Pass, "f")), "f", false, Done),
            (Some(finished(Pass, "f")), "f", true, Done),
            (Some(finished(Pass, "f")), "g", false, Changed),
            (Some(finished(Fail, "f")), "f", false, Done),
            (Some(finished(Fail, "f")), "f", true, Retry),
            (Some(finished(Timeout, "f")), "f", false, Done),
            (Some(finished(Timeout, "f")), "f", true, Retry),
            (Some(finished(Fail, "f")), "g", true, Changed),
            (Some(finished(Interrupted, "f")), "f", false, Run),
            (Some(finished(Blocked, "f")), "f", false, Run),
            (Some(finished(Skipped, "f")), "f", true, Done),
            (Some(finished(Unavailable, "f")), "f", true, Done),
        ];
        for (i, (state, fp, retry, want)) in table.into_iter().enumerate() {
            assert_eq!(decide(state.as_ref(), fp, retry), want, "row {i}");
        }
    }

    #[test]
    fn plan_groups_in_planned_order_and_prints_the_diff() {
        let mut replay = Replay::default();
        replay
            .steps
            .insert("run:a:s".into(), finished(RunStatus::Pass, "fa"));
        replay
            .steps
            .insert("run:b:s".into(), finished(RunStatus::Fail, "fb"));
        replay.steps.insert("run:c:s".into(), started("fc", None));
        replay
            .steps
            .insert("run:d:s".into(), finished(RunStatus::Pass, "old"));
        // Indices 0-4: e, d, c, b, a.
        let planned = [
            ("run:e:s", "fe"),
            ("run:d:s", "fd"),
            ("run:c:s", "fc"),
            ("run:b:s", "fb"),
            ("run:a:s", "fa"),
        ];

        let p = plan_keys(&replay, &planned, false);
        assert_eq!(p.done, vec![3, 4]);
        assert_eq!(p.to_run, vec![0, 2]);
        assert_eq!(p.changed, vec![1]);
        assert!(p.to_retry.is_empty());
        assert_eq!(
            p.to_string(),
            "2 done, 2 to run, 1 changed, 0 to retry (1 failed or timed out and kept; --retry-failed runs them again)"
        );
        assert_eq!(p.runs(), vec![0, 1, 2]);

        let p = plan_keys(&replay, &planned, true);
        assert_eq!(p.to_string(), "1 done, 2 to run, 1 changed, 1 to retry");
        assert_eq!(p.pending(), 4);
        assert_eq!(p.runs(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_finished_campaign_has_nothing_to_run() {
        let mut replay = Replay::default();
        replay
            .steps
            .insert("run:a:s".into(), finished(RunStatus::Pass, "fa"));
        let p = plan_keys(&replay, &[("run:a:s", "fa")], true);
        assert!(p.is_complete());
        assert_eq!(p.to_string(), "1 done, 0 to run, 0 changed, 0 to retry");
    }
}

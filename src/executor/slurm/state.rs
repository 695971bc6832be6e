//! Slurm job states and what they mean for a run: the one mapping from Slurm's word for how a
//! job ended to a campaign verdict (parse the bundle, fail, timeout, interrupted).
//!
//! Owns the state names Slurm prints (`squeue %T`, `scontrol JobState=`, the jobcomp file) and
//! the verdict rules. It does not query Slurm (that is `poll`) nor read bundles (that is
//! `bundle`); it is a pure function of what those found.

use std::fmt;

use crate::model::results::RunStatus;

/// A job state as Slurm spells it (long form, upper case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobState {
    Pending,
    Running,
    Suspended,
    Completing,
    Configuring,
    Requeued,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    NodeFail,
    OutOfMemory,
    BootFail,
    Deadline,
    Preempted,
    /// Any other word Slurm may print (`RESV_DEL_HOLD`, `SPECIAL_EXIT`, `REVOKED`, …).
    Other(String),
}

/// Words Slurm prints for states that never change again.
const OTHER_TERMINAL: &[&str] = &["SPECIAL_EXIT", "REVOKED"];

impl JobState {
    /// Parse Slurm's word. Only the first word counts (`CANCELLED by 0` is CANCELLED).
    pub(crate) fn parse(text: &str) -> JobState {
        let word = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        match word.as_str() {
            "PENDING" | "PD" => JobState::Pending,
            "RUNNING" | "R" => JobState::Running,
            "SUSPENDED" | "S" => JobState::Suspended,
            "COMPLETING" | "CG" => JobState::Completing,
            "CONFIGURING" | "CF" => JobState::Configuring,
            "REQUEUED" | "RQ" => JobState::Requeued,
            "COMPLETED" | "CD" => JobState::Completed,
            "FAILED" | "F" => JobState::Failed,
            "CANCELLED" | "CA" => JobState::Cancelled,
            "TIMEOUT" | "TO" => JobState::Timeout,
            "NODE_FAIL" | "NF" => JobState::NodeFail,
            "OUT_OF_MEMORY" | "OOM" => JobState::OutOfMemory,
            "BOOT_FAIL" | "BF" => JobState::BootFail,
            "DEADLINE" | "DL" => JobState::Deadline,
            "PREEMPTED" | "PR" => JobState::Preempted,
            _ => JobState::Other(word),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completing => "COMPLETING",
            JobState::Configuring => "CONFIGURING",
            JobState::Requeued => "REQUEUED",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::Preempted => "PREEMPTED",
            JobState::Other(word) => word,
        }
    }

    /// Has the job ended for good? (A COMPLETING job still runs its epilog; a PREEMPTED job
    /// that Slurm requeues comes back as PENDING, which the next poll sees.)
    pub(crate) fn is_terminal(&self) -> bool {
        match self {
            JobState::Completed
            | JobState::Failed
            | JobState::Cancelled
            | JobState::Timeout
            | JobState::NodeFail
            | JobState::OutOfMemory
            | JobState::BootFail
            | JobState::Deadline
            | JobState::Preempted => true,
            JobState::Other(word) => OTHER_TERMINAL.contains(&word.as_str()),
            _ => false,
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the engine does with an ended job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The stack ran to its end inside the job (its exit code is in the bundle): parse the
    /// bundle's `run.log` exactly like a local run's output.
    Parse,
    /// The job ended without the stack's result; the text carries Slurm's state and reason.
    Fail(String),
    /// Slurm stopped the job at its time limit; the text carries Slurm's reason.
    Timeout(String),
    /// campaign cancelled it (scancel), or Slurm no longer knows a job that left no result:
    /// `campaign resume` runs it again.
    Interrupted(String),
}

impl Verdict {
    /// The run status this verdict fixes; `None` for `Parse` (the parser decides).
    pub(crate) fn status(&self) -> Option<RunStatus> {
        match self {
            Verdict::Parse => None,
            Verdict::Fail(_) => Some(RunStatus::Fail),
            Verdict::Timeout(_) => Some(RunStatus::Timeout),
            Verdict::Interrupted(_) => Some(RunStatus::Interrupted),
        }
    }

    /// The reason to record (`None` for `Parse`).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Parse => None,
            Verdict::Fail(r) | Verdict::Timeout(r) | Verdict::Interrupted(r) => Some(r),
        }
    }
}

/// What is known about an ended job when its verdict is decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending<'a> {
    pub(crate) job_id: u64,
    pub(crate) state: &'a JobState,
    /// Slurm's reason (`None`, `NonZeroExitCode`, `TimeLimit`, …), when Slurm gave one.
    pub(crate) reason: Option<&'a str>,
    /// Slurm's `ExitCode=code:signal`, when known.
    pub(crate) slurm_exit: Option<&'a str>,
    /// The bundle holds the stack's exit code (the batch script reached its end).
    pub(crate) has_result: bool,
    /// campaign itself cancelled the job.
    pub(crate) cancelled_by_us: bool,
}

/// Decide what an ended job means for its run.
///
/// Slurm's own judgement wins where it killed the job (TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, …)
/// even if the script managed to record an exit code; a stack that exited by itself
/// (COMPLETED or FAILED with a result in the bundle) is handed to the parser like a local run.
pub(crate) fn verdict(end: &Ending<'_>) -> Verdict {
    let described = describe(end);
    match end.state {
        JobState::Timeout => Verdict::Timeout(described),
        JobState::Cancelled if end.cancelled_by_us => {
            Verdict::Interrupted(format!("{described} (cancelled by campaign)"))
        }
        JobState::Completed | JobState::Failed if end.has_result => Verdict::Parse,
        JobState::Completed => Verdict::Fail(format!(
            "{described}, but the batch script left no exit code in the bundle"
        )),
        _ => Verdict::Fail(described),
    }
}

/// `Slurm job 12 TIMEOUT (reason TimeLimit, exit code 0:15)`.
fn describe(end: &Ending<'_>) -> String {
    let mut details = Vec::new();
    if let Some(reason) = end.reason.filter(|r| !r.is_empty() && *r != "None") {
        details.push(format!("reason {reason}"));
    }
    if let Some(code) = end.slurm_exit.filter(|c| *c != "0:0") {
        details.push(format!("exit code {code}"));
    }
    let mut text = format!("Slurm job {} {}", end.job_id, end.state);
    if !details.is_empty() {
        text.push_str(&format!(" ({})", details.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end<'a>(state: &'a JobState, reason: Option<&'a str>, has_result: bool) -> Ending<'a> {
        Ending {
            job_id: 7,
            state,
            reason,
            slurm_exit: None,
            has_result,
            cancelled_by_us: false,
        }
    }

    #[test]
    fn parses_long_and_short_names_and_keeps_unknown_words() {
        assert_eq!(JobState::parse("COMPLETED"), JobState::Completed);
        assert_eq!(JobState::parse("CANCELLED by 0"), JobState::Cancelled);
        assert_eq!(JobState::parse("oom"), JobState::OutOfMemory);
        assert_eq!(JobState::parse("NODE_FAIL"), JobState::NodeFail);
        assert_eq!(
            JobState::parse("RESV_DEL_HOLD"),
            JobState::Other("RESV_DEL_HOLD".into())
        );
        assert_eq!(
            JobState::parse("OUT_OF_MEMORY").to_string(),
            "OUT_OF_MEMORY"
        );
    }

    #[test]
    fn only_ended_states_are_terminal() {
        for s in ["PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"] {
            assert!(!JobState::parse(s).is_terminal(), "{s}");
        }
        for s in [
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "BOOT_FAIL",
            "DEADLINE",
            "PREEMPTED",
            "SPECIAL_EXIT",
        ] {
            assert!(JobState::parse(s).is_terminal(), "{s}");
        }
    }

    #[test]
    fn a_stack_that_exited_is_parsed_whatever_its_code() {
        assert_eq!(
            verdict(&end(&JobState::Completed, None, true)),
            Verdict::Parse
        );
        assert_eq!(
            verdict(&end(&JobState::Failed, Some("NonZeroExitCode"), true)),
            Verdict::Parse
        );
    }

    #[test]
    fn timeout_carries_slurm_reason() {
        let v = verdict(&end(&JobState::Timeout, Some("TimeLimit"), false));
        assert_eq!(
            v,
            Verdict::Timeout("Slurm job 7 TIMEOUT (reason TimeLimit)".into())
        );
        assert_eq!(v.status(), Some(RunStatus::Timeout));
        // Even when the script wrote an exit code before dying, Slurm's judgement wins.
        assert!(matches!(
            verdict(&end(&JobState::Timeout, Some("TimeLimit"), true)),
            Verdict::Timeout(_)
        ));
    }

    #[test]
    fn slurm_killed_jobs_fail_with_state_reason_and_exit_code() {
        for (state, word) in [
            (JobState::NodeFail, "NODE_FAIL"),
            (JobState::OutOfMemory, "OUT_OF_MEMORY"),
            (JobState::BootFail, "BOOT_FAIL"),
            (JobState::Deadline, "DEADLINE"),
            (JobState::Preempted, "PREEMPTED"),
        ] {
            let mut e = end(&state, Some("None"), true);
            e.slurm_exit = Some("0:9");
            let v = verdict(&e);
            assert_eq!(
                v,
                Verdict::Fail(format!("Slurm job 7 {word} (exit code 0:9)"))
            );
            assert_eq!(v.status(), Some(RunStatus::Fail));
        }
        let v = verdict(&end(&JobState::Failed, Some("NonZeroExitCode"), false));
        assert_eq!(
            v.reason(),
            Some("Slurm job 7 FAILED (reason NonZeroExitCode)")
        );
    }

    #[test]
    fn completed_without_result_fails() {
        let v = verdict(&end(&JobState::Completed, None, false));
        assert_eq!(
            v.reason(),
            Some("Slurm job 7 COMPLETED, but the batch script left no exit code in the bundle")
        );
    }

    #[test]
    fn cancel_is_interrupted_only_when_campaign_cancelled() {
        let mut e = end(&JobState::Cancelled, Some("None"), false);
        assert!(matches!(verdict(&e), Verdict::Fail(_)));
        e.cancelled_by_us = true;
        let v = verdict(&e);
        assert_eq!(v.status(), Some(RunStatus::Interrupted));
        assert_eq!(
            v.reason(),
            Some("Slurm job 7 CANCELLED (cancelled by campaign)")
        );
    }
}

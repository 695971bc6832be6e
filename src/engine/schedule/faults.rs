//! Fault policy: when a finished attempt is retried (and after what cooldown), and when a run of
//! failures takes a device out of service.
//!
//! Owns the pure rules only — `[run] retries / retry_on / cooldown` and `quarantine_after`
//! applied to statuses — and is the one place they live: the scheduler asks [`Policy`] and
//! [`Streaks`] and acts (holds leases through the cooldown, asks for health probes, quarantines in
//! the pool, re-places runs). The pool owns which devices are quarantined. Nothing here spawns,
//! sleeps, writes or reads the clock.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::plan::RunConfig;
use crate::model::results::RunStatus;

/// Retry and quarantine settings of one campaign.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Policy {
    /// Extra attempts per run and session.
    pub(crate) retries: u32,
    /// Statuses that are retried (only `fail` and `timeout` ever are).
    pub(crate) retry_on: Vec<RunStatus>,
    /// How long the devices of a failed attempt rest before its retry.
    pub(crate) cooldown: Duration,
    /// Quarantine a device after this many failed runs in a row on it (0 = never).
    pub(crate) quarantine_after: u32,
}

impl Policy {
    pub(crate) fn from_config(cfg: &RunConfig) -> Policy {
        Policy {
            retries: cfg.retries,
            retry_on: RunStatus::ALL
                .iter()
                .copied()
                .filter(|s| cfg.retry_on.iter().any(|r| r == s.as_str()))
                .collect(),
            cooldown: cfg.cooldown,
            quarantine_after: cfg.quarantine_after,
        }
    }

    /// After attempt `attempt` (1-based, counted within this session) ended with `status`:
    /// `Some(cooldown)` when another attempt follows after resting that long, `None` when this
    /// attempt is final. A run gets at most `1 + retries` attempts per session, and only
    /// statuses listed in `retry_on` are retried (never pass, skipped, unavailable, interrupted
    /// or blocked).
    pub(crate) fn retry_after(&self, status: RunStatus, attempt: u32) -> Option<Duration> {
        let retryable = matches!(status, RunStatus::Fail | RunStatus::Timeout)
            && self.retry_on.contains(&status)
            && attempt <= self.retries;
        retryable.then_some(self.cooldown)
    }
}

/// Failed runs in a row per device, for `quarantine_after`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Streaks {
    after: u32,
    streak: BTreeMap<u32, u32>,
}

impl Streaks {
    pub(crate) fn new(quarantine_after: u32) -> Streaks {
        Streaks {
            after: quarantine_after,
            streak: BTreeMap::new(),
        }
    }

    /// A run (or an attempt) on `devices` ended with `status`. `pass` resets the devices'
    /// streaks; `fail`/`timeout` extend them; other statuses say nothing about a device's health
    /// (the stack could not run, the user stopped it) and leave them alone. Returns the devices
    /// whose streak just reached `quarantine_after`, with the reason to record.
    pub(crate) fn record_run(&mut self, devices: &[u32], status: RunStatus) -> Vec<(u32, String)> {
        let mut newly = Vec::new();
        for &d in devices {
            match status {
                RunStatus::Pass => {
                    self.streak.remove(&d);
                }
                RunStatus::Fail | RunStatus::Timeout => {
                    let n = self.streak.entry(d).or_insert(0);
                    *n += 1;
                    if self.after > 0 && *n == self.after {
                        newly.push((
                            d,
                            format!("{n} runs in a row failed on it (last: {status})"),
                        ));
                    }
                }
                _ => {}
            }
        }
        newly
    }
}

/// The quarantine reason of a device whose health probe failed.
pub(crate) fn probe_failed(detail: &str) -> String {
    if detail.is_empty() {
        "health probe failed".to_string()
    } else {
        format!("health probe failed: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(retries: u32, retry_on: &[&str], cooldown_s: u64) -> Policy {
        Policy::from_config(&RunConfig {
            retries,
            retry_on: retry_on.iter().map(|s| s.to_string()).collect(),
            cooldown: Duration::from_secs(cooldown_s),
            ..RunConfig::default()
        })
    }

    #[test]
    fn retries_follow_count_statuses_and_cooldown() {
        let p = policy(2, &["timeout", "fail"], 20);
        assert_eq!(
            p.retry_after(RunStatus::Fail, 1),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            p.retry_after(RunStatus::Timeout, 2),
            Some(Duration::from_secs(20))
        );
        // Attempt 3 was the last of 1 + 2.
        assert_eq!(p.retry_after(RunStatus::Fail, 3), None);
        for s in [
            RunStatus::Pass,
            RunStatus::Skipped,
            RunStatus::Unavailable,
            RunStatus::Interrupted,
            RunStatus::Blocked,
        ] {
            assert_eq!(p.retry_after(s, 1), None, "{s}");
        }
        let only_timeouts = policy(1, &["timeout"], 0);
        assert_eq!(only_timeouts.retry_after(RunStatus::Fail, 1), None);
        assert_eq!(
            only_timeouts.retry_after(RunStatus::Timeout, 1),
            Some(Duration::ZERO)
        );
        let default = Policy::from_config(&RunConfig::default());
        assert_eq!(default.retry_after(RunStatus::Timeout, 1), None);
        assert_eq!(default.quarantine_after, 3);
    }

    #[test]
    fn consecutive_failures_quarantine_once_and_a_pass_resets() {
        let mut q = Streaks::new(3);
        assert!(q.record_run(&[0, 1], RunStatus::Fail).is_empty());
        assert!(q.record_run(&[0, 1], RunStatus::Timeout).is_empty());
        assert!(q.record_run(&[1, 2], RunStatus::Pass).is_empty());
        // Skipped/unavailable/interrupted do not break or extend a streak.
        assert!(q.record_run(&[0], RunStatus::Unavailable).is_empty());
        assert!(q.record_run(&[0], RunStatus::Interrupted).is_empty());
        let newly = q.record_run(&[0, 1], RunStatus::Timeout);
        assert_eq!(
            newly,
            vec![(
                0,
                "3 runs in a row failed on it (last: timeout)".to_string()
            )]
        );
        // Reported once, when the streak reaches the limit.
        assert!(q.record_run(&[0], RunStatus::Fail).is_empty());
        let mut never = Streaks::new(0);
        for _ in 0..10 {
            assert!(never.record_run(&[1], RunStatus::Fail).is_empty());
        }
        assert_eq!(
            probe_failed("exit code 7"),
            "health probe failed: exit code 7"
        );
        assert_eq!(probe_failed(""), "health probe failed");
    }
}

//! Fault policy: when a finished attempt is retried, and when a device is quarantined.
//!
//! Owns the pure decisions only — `[run] retries / retry_on / cooldown` and `quarantine_after`
//! applied to statuses and probe outcomes. The scheduler calls these and acts (sleeps, probes,
//! journals, re-places runs); nothing here spawns, sleeps, writes or reads the clock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::plan::model::RunConfig;
use crate::results::RunStatus;

/// After attempt `attempt` (1-based, counted within this session) ended with `status`: `Some(wait)`
/// when another attempt should follow after `wait` (the cooldown), `None` when this is final.
/// A run gets at most `1 + retries` attempts per session, and only statuses listed in `retry_on`
/// are retried (never pass, skipped, unavailable, interrupted or blocked).
pub fn should_retry(status: RunStatus, attempt: u32, cfg: &RunConfig) -> Option<Duration> {
    if !matches!(status, RunStatus::Fail | RunStatus::Timeout) {
        return None;
    }
    if !cfg.retry_on.iter().any(|s| s == status.as_str()) {
        return None;
    }
    if attempt > cfg.retries {
        return None;
    }
    Some(cfg.cooldown)
}

/// Devices taken out of the pool for the rest of the session, and the run of failures per device
/// that leads there.
#[derive(Debug, Clone, Default)]
pub struct Quarantine {
    /// Quarantine after this many failed runs in a row on one device (0 = never by runs).
    after: u32,
    streak: BTreeMap<u32, (u32, RunStatus)>,
    quarantined: BTreeMap<u32, String>,
}

impl Quarantine {
    pub fn new(quarantine_after: u32) -> Quarantine {
        Quarantine {
            after: quarantine_after,
            ..Quarantine::default()
        }
    }

    /// A health probe of `device` ended. A failed probe quarantines the device at once; returns
    /// the reason to journal when it was newly quarantined.
    pub fn record_probe(&mut self, device: u32, ok: bool, detail: &str) -> Option<String> {
        if ok || self.is_quarantined(device) {
            return None;
        }
        let reason = if detail.is_empty() {
            "health probe failed".to_string()
        } else {
            format!("health probe failed: {detail}")
        };
        self.quarantined.insert(device, reason.clone());
        Some(reason)
    }

    /// A run on `devices` ended with `status`. `pass` resets the devices' failure streaks;
    /// `fail`/`timeout` extend them; other statuses say nothing about the device's health (the
    /// stack could not run, the user stopped it) and leave them alone. Returns the devices newly
    /// quarantined with their reasons, to journal.
    pub fn record_run(&mut self, devices: &[u32], status: RunStatus) -> Vec<(u32, String)> {
        let mut newly = Vec::new();
        for &d in devices {
            match status {
                RunStatus::Pass => {
                    self.streak.remove(&d);
                }
                RunStatus::Fail | RunStatus::Timeout => {
                    let entry = self.streak.entry(d).or_insert((0, status));
                    entry.0 += 1;
                    entry.1 = status;
                    let n = entry.0;
                    if self.after > 0 && n >= self.after && !self.is_quarantined(d) {
                        let reason = format!("{n} runs in a row failed on it (last: {status})");
                        self.quarantined.insert(d, reason.clone());
                        newly.push((d, reason));
                    }
                }
                _ => {}
            }
        }
        newly
    }

    pub fn is_quarantined(&self, device: u32) -> bool {
        self.quarantined.contains_key(&device)
    }

    /// Why `device` is quarantined.
    pub fn reason(&self, device: u32) -> Option<&str> {
        self.quarantined.get(&device).map(String::as_str)
    }

    /// The devices of `pool` still usable, in pool order.
    pub fn healthy(&self, pool: &[u32]) -> Vec<u32> {
        pool.iter()
            .copied()
            .filter(|d| !self.is_quarantined(*d))
            .collect()
    }

    pub fn quarantined(&self) -> BTreeSet<u32> {
        self.quarantined.keys().copied().collect()
    }

    /// The `blocked` reason of a run needing `p` devices when fewer healthy ones remain, or
    /// `None` when placement can still find `p`.
    pub fn blocked_reason(&self, pool: &[u32], p: usize) -> Option<String> {
        let healthy = self.healthy(pool).len();
        if healthy >= p {
            return None;
        }
        let q: Vec<String> = self.quarantined.keys().map(u32::to_string).collect();
        Some(format!(
            "needs {p} devices but only {healthy} healthy remain (quarantined: {})",
            q.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(retries: u32, retry_on: &[&str], cooldown_s: u64) -> RunConfig {
        RunConfig {
            retries,
            retry_on: retry_on.iter().map(|s| s.to_string()).collect(),
            cooldown: Duration::from_secs(cooldown_s),
            ..RunConfig::default()
        }
    }

    #[test]
    fn retries_follow_count_statuses_and_cooldown() {
        let c = cfg(2, &["timeout", "fail"], 20);
        assert_eq!(
            should_retry(RunStatus::Fail, 1, &c),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            should_retry(RunStatus::Timeout, 2, &c),
            Some(Duration::from_secs(20))
        );
        // Attempt 3 was the last of 1 + 2.
        assert_eq!(should_retry(RunStatus::Fail, 3, &c), None);
        for s in [
            RunStatus::Pass,
            RunStatus::Skipped,
            RunStatus::Unavailable,
            RunStatus::Interrupted,
            RunStatus::Blocked,
        ] {
            assert_eq!(should_retry(s, 1, &c), None, "{s}");
        }
        let only_timeouts = cfg(1, &["timeout"], 0);
        assert_eq!(should_retry(RunStatus::Fail, 1, &only_timeouts), None);
        assert_eq!(
            should_retry(RunStatus::Timeout, 1, &only_timeouts),
            Some(Duration::ZERO)
        );
        assert_eq!(
            should_retry(RunStatus::Timeout, 1, &RunConfig::default()),
            None
        );
    }

    #[test]
    fn consecutive_failures_quarantine_and_a_pass_resets() {
        let mut q = Quarantine::new(3);
        assert!(q.record_run(&[0, 1], RunStatus::Fail).is_empty());
        assert!(q.record_run(&[0, 1], RunStatus::Timeout).is_empty());
        assert!(q.record_run(&[1, 2], RunStatus::Pass).is_empty());
        // Skipped/unavailable/interrupted do not break or extend a streak.
        assert!(q.record_run(&[0], RunStatus::Unavailable).is_empty());
        let newly = q.record_run(&[0, 1], RunStatus::Timeout);
        assert_eq!(
            newly,
            vec![(
                0,
                "3 runs in a row failed on it (last: timeout)".to_string()
            )]
        );
        assert!(q.is_quarantined(0));
        assert!(!q.is_quarantined(1));
        // Already quarantined: not reported twice.
        assert!(q.record_run(&[0], RunStatus::Fail).is_empty());
        assert_eq!(q.healthy(&[0, 1, 2, 3]), vec![1, 2, 3]);
    }

    #[test]
    fn probe_failure_quarantines_at_once_and_blocks_when_too_few_remain() {
        let mut q = Quarantine::new(0);
        assert_eq!(q.record_probe(2, true, ""), None);
        assert_eq!(
            q.record_probe(2, false, "exit code 7").as_deref(),
            Some("health probe failed: exit code 7")
        );
        assert_eq!(q.record_probe(2, false, "again"), None);
        assert_eq!(q.reason(2), Some("health probe failed: exit code 7"));
        // quarantine_after = 0 never quarantines by runs.
        for _ in 0..10 {
            assert!(q.record_run(&[1], RunStatus::Fail).is_empty());
        }
        let pool = [0, 1, 2, 3];
        assert_eq!(q.blocked_reason(&pool, 3), None);
        assert_eq!(
            q.blocked_reason(&pool, 4).as_deref(),
            Some("needs 4 devices but only 3 healthy remain (quarantined: 2)")
        );
        assert_eq!(q.quarantined().into_iter().collect::<Vec<_>>(), vec![2]);
    }
}

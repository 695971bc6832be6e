//! The state of a run dir as `campaign status` shows it: counts by status, every run that did not
//! pass with its reason and bundle, quarantined devices, runs left and an ETA.
//!
//! Built from the journal (the authority on what ran) plus bundle manifests when present (for
//! reasons the journal lacks, and for runs of run dirs without a journal). Read-only: it never
//! takes the run-dir lock for writing and never changes a file, so it works while a campaign runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::results::RunStatus;
use crate::model::units::format_bandwidth;
use crate::store::journal;
use crate::store::journal::{parse_run_step, Replay, TornLine};

/// Where one planned run stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunState {
    Finished(RunStatus),
    /// Started, never finished: in flight if a campaign holds the run dir, else interrupted.
    Open {
        since: String,
    },
    NotStarted,
}

/// One run as `status` lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunLine {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) state: RunState,
    pub(crate) reason: Option<String>,
    /// `cases/<case_id>/<stack>` when that folder exists.
    pub(crate) bundle: Option<PathBuf>,
}

/// Everything `campaign status` prints.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunDirStatus {
    pub(crate) run_dir: PathBuf,
    pub(crate) campaign: Option<String>,
    pub(crate) runs: Vec<RunLine>,
    pub(crate) quarantined: BTreeMap<u32, String>,
    pub(crate) torn: Option<TornLine>,
    /// A campaign process holds the run dir right now.
    pub(crate) active: bool,
    /// Durations of finished runs that actually executed (pass/fail/timeout).
    pub(crate) durations: Vec<Duration>,
    /// Mean number of runs in flight while runs executed (≥ 1).
    pub(crate) concurrency: f64,
    /// Planned runs not named anywhere: a large campaign's header keeps only `planned_runs`
    /// (no `steps` list), so its runs that never started are counted, not listed.
    pub(crate) unlisted: usize,
    /// Runs the journal's lines name that its header's plan does not: not counted.
    pub(crate) unplanned: usize,
    /// Decisions of sequential repeats: (points stopped, decisions to go on).
    pub(crate) decisions: (usize, usize),
    /// The device-time budget the header records.
    pub(crate) budget: Option<Duration>,
    /// The latest `census` line (a census plan's findings, `engine::census_step`).
    pub(crate) census: Option<serde_json::Map<String, Value>>,
}

impl RunDirStatus {
    /// Read `run_dir`'s journal and bundles.
    pub(crate) fn load(run_dir: &Path) -> Result<RunDirStatus> {
        let journal_path = run_dir.join(journal::FILE_NAME);
        if !journal_path.exists() {
            return Err(Error::Usage(format!(
                "{} is not a campaign run dir: no {} (expected results/campaigns/<name>/run_<time>/)",
                run_dir.display(),
                journal::FILE_NAME
            )));
        }
        let replay = journal::replay(&journal_path)?;
        // The planned runs, when the header names them: a line for a run the plan does not
        // have (a journal edited or pieced together) is not counted (issue 43, item 7). A large
        // campaign's header names none: its runs are those its lines name.
        let planned = planned_steps(&replay);
        let listed = replay.header.get("steps").is_some_and(Value::is_array);
        let mut seen: std::collections::HashSet<String> = planned.iter().cloned().collect();
        let mut keys = planned;
        let mut unplanned = 0;
        for k in &replay.order {
            if parse_run_step(k).is_some() && seen.insert(k.clone()) {
                match listed {
                    true => unplanned += 1,
                    false => keys.push(k.clone()),
                }
            }
        }
        let mut runs = Vec::new();
        for key in &keys {
            let Some((case_id, stack)) = parse_run_step(key) else {
                continue;
            };
            runs.push(run_line(run_dir, &replay, key, case_id, stack));
        }
        let unlisted = match replay.header.get("steps") {
            Some(Value::Array(_)) => 0,
            _ => replay
                .header
                .get("planned_runs")
                .and_then(Value::as_u64)
                .map_or(0, |n| (n as usize).saturating_sub(runs.len())),
        };
        let (durations, concurrency) = timing(&replay);
        let stopped = replay.decisions.iter().filter(|d| d.2.is_some()).count();
        let budget = (replay.header.get("budget_s"))
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
            .map(Duration::from_secs_f64);
        Ok(RunDirStatus {
            run_dir: run_dir.to_path_buf(),
            campaign: replay
                .header
                .get("campaign")
                .and_then(Value::as_str)
                .map(str::to_string),
            runs,
            quarantined: replay.quarantined.clone(),
            torn: replay.torn.clone(),
            active: crate::store::lock::is_held(run_dir),
            durations,
            concurrency,
            unlisted,
            unplanned,
            decisions: (stopped, replay.decisions.len() - stopped),
            budget,
            census: replay.events.get("census").cloned(),
        })
    }

    /// Count per status word (`pass`, …, plus `running`/`interrupted` for open runs and
    /// `not started`), in a fixed order.
    pub(crate) fn counts(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        let mut add = |label: String| match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => out.push((label, 1)),
        };
        let mut labels: Vec<String> = self.runs.iter().map(|r| self.label(&r.state)).collect();
        let order = |l: &String| {
            RunStatus::ALL
                .iter()
                .position(|s| s.as_str() == l)
                .unwrap_or(RunStatus::ALL.len() + usize::from(l == "not started"))
        };
        labels.sort_by_key(order);
        for l in labels {
            add(l);
        }
        if self.unlisted > 0 {
            match out.iter_mut().find(|(l, _)| l == "not started") {
                Some((_, n)) => *n += self.unlisted,
                None => out.push(("not started".into(), self.unlisted)),
            }
        }
        out
    }

    fn label(&self, state: &RunState) -> String {
        match state {
            RunState::Finished(s) => s.as_str().to_string(),
            RunState::Open { .. } if self.active => "running".into(),
            RunState::Open { .. } => "interrupted".into(),
            RunState::NotStarted => "not started".into(),
        }
    }

    /// Runs a resume (or the running campaign) still has to do.
    pub(crate) fn left(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| match &r.state {
                RunState::Finished(s) => matches!(s, RunStatus::Interrupted | RunStatus::Blocked),
                _ => true,
            })
            .count()
            + self.unlisted
    }

    /// Mean run time × runs left ÷ observed concurrency; `None` before any run finished.
    pub(crate) fn eta(&self) -> Option<Duration> {
        if self.durations.is_empty() {
            return None;
        }
        let mean: f64 = self
            .durations
            .iter()
            .map(Duration::as_secs_f64)
            .sum::<f64>()
            / self.durations.len() as f64;
        Some(Duration::from_secs_f64(
            mean * self.left() as f64 / self.concurrency.max(1.0),
        ))
    }

    /// Where the stragglers are, once a run passed: per-rank times live in each bundle's
    /// timing.json, and status reads none of them (it reads the journal and manifests only).
    fn stragglers_pointer(&self) -> String {
        if !(self.runs.iter()).any(|r| r.state == RunState::Finished(RunStatus::Pass)) {
            return String::new();
        }
        format!(
            "stragglers: see {} or results.json `stragglers` (status reads no bundle's per-rank times)\n",
            self.run_dir.join("reports").join("summary.md").display()
        )
    }

    /// The text `campaign status` prints.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("run dir: {}\n", self.run_dir.display()));
        if let Some(c) = &self.campaign {
            out.push_str(&format!("campaign: {c}\n"));
        }
        if self.active {
            out.push_str("state: a campaign is running in this run dir now\n");
        }
        if let Some(t) = &self.torn {
            out.push_str(&format!("journal: {t}\n"));
        }
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(l, n)| format!("{n} {l}"))
            .collect();
        out.push_str(&format!(
            "runs: {} ({})\n",
            self.runs.len(),
            counts.join(", ")
        ));
        if self.decisions != (0, 0) {
            out.push_str(&format!(
                "decisions: {} point(s) stopped their repeats (every row decided), {} went on (rows undecided)\n",
                self.decisions.0, self.decisions.1
            ));
        }
        if let Some(budget) = self.budget {
            let used =
                Duration::from_secs_f64(self.durations.iter().map(Duration::as_secs_f64).sum());
            out.push_str(&format!(
                "budget: {} of {} run time used\n",
                human(used),
                human(budget)
            ));
        }
        if self.unplanned > 0 {
            out.push_str(&format!(
                "journal: {} line(s) name runs the header's plan does not have (an edited or pieced-together journal, or runs a later edit of the plan added); not counted\n",
                self.unplanned
            ));
        }
        let not_passed: Vec<&RunLine> = self
            .runs
            .iter()
            .filter(|r| {
                !matches!(
                    r.state,
                    RunState::Finished(RunStatus::Pass | RunStatus::Spared) | RunState::NotStarted
                )
            })
            .collect();
        if !not_passed.is_empty() {
            out.push_str("not passed:\n");
            for r in not_passed {
                let reason = match (&r.state, &r.reason) {
                    (RunState::Open { since }, _) => format!("started {since}, never finished"),
                    (_, Some(reason)) => reason.clone(),
                    (_, None) => "no reason recorded".into(),
                };
                let bundle = r
                    .bundle
                    .as_ref()
                    .map_or_else(|| "(no bundle)".to_string(), |b| b.display().to_string());
                out.push_str(&format!(
                    "  {:<11} {} / {}: {}  [{}]\n",
                    self.label(&r.state),
                    r.case_id,
                    r.stack,
                    reason,
                    bundle
                ));
            }
        }
        out.push_str(&self.stragglers_pointer());
        if let Some(c) = &self.census {
            out.push_str(&census_lines(c));
        }
        if !self.quarantined.is_empty() {
            out.push_str("quarantined devices:\n");
            for (d, reason) in &self.quarantined {
                out.push_str(&format!("  device {d}: {reason}\n"));
            }
        }
        let left = self.left();
        if left == 0 {
            out.push_str("left: nothing, every run finished\n");
        } else {
            let eta = match self.eta() {
                Some(eta) => format!(
                    "ETA ~{} ({} per run over {} runs, {:.1} at a time)",
                    human(eta),
                    human(Duration::from_secs_f64(
                        self.durations
                            .iter()
                            .map(Duration::as_secs_f64)
                            .sum::<f64>()
                            / self.durations.len() as f64
                    )),
                    self.durations.len(),
                    self.concurrency
                ),
                None => "ETA unknown (no run finished yet)".into(),
            };
            out.push_str(&format!("left: {left} runs, {eta}\n"));
            if !self.active {
                out.push_str(&format!(
                    "continue with: campaign resume {}\n",
                    self.run_dir.display()
                ));
            }
        }
        out
    }
}

/// What a `census` journal line says (`analysis::census::Summary`): the pairs measured and
/// scored, each link class's median, each finding; the whole record is results.json's `census`.
fn census_lines(c: &serde_json::Map<String, Value>) -> String {
    let count = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let list = |v: Option<&Value>| -> Vec<Value> {
        v.and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let classes: Vec<String> = (list(c.get("classes")).iter())
        .map(|k| {
            let class = text(k, "class").replace('_', " ");
            let pairs = k.get("pairs").and_then(Value::as_u64).unwrap_or(0);
            let median = k.get("median_busbw_gb_s").and_then(Value::as_f64);
            let median = median.map_or("–".into(), |g| format_bandwidth(g * 1e9));
            format!("{class}: {pairs} pairs, median busbw {median}")
        })
        .collect();
    let stack = c.get("stack").and_then(Value::as_str).unwrap_or("?");
    let mut out = format!(
        "census: {} of {} pairs measured on {}, {} scored ({})\n",
        count("measured"),
        count("planned_pairs"),
        crate::model::text::visible(stack),
        count("scored"),
        classes.join("; ")
    );
    let quarantined: Vec<u64> = (list(c.get("quarantined")).iter())
        .filter_map(Value::as_u64)
        .collect();
    let findings = list(c.get("findings"));
    for f in &findings {
        let devices: Vec<String> = (list(f.get("devices")).iter())
            .filter_map(Value::as_u64)
            .map(|d| d.to_string())
            .collect();
        let held = (list(f.get("devices")).iter())
            .filter_map(Value::as_u64)
            .any(|d| text(f, "kind") == "device" && quarantined.contains(&d));
        out.push_str(&format!(
            "  slow {} {}: {}{}\n",
            text(f, "kind"),
            devices.join("–"),
            crate::model::text::visible(&text(f, "label")),
            if held { " — quarantined" } else { "" }
        ));
    }
    if findings.is_empty() {
        out.push_str(&match count("scored") {
            0 => "  nothing judged: no link class had enough pairs to score\n".to_string(),
            n => format!("  no slow link or device among the {n} pairs scored\n"),
        });
    }
    out
}

/// The header's `steps` (planned run step keys), when the engine recorded them.
fn planned_steps(replay: &Replay) -> Vec<String> {
    replay
        .header
        .get("steps")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn run_line(run_dir: &Path, replay: &Replay, key: &str, case_id: &str, stack: &str) -> RunLine {
    let rel = PathBuf::from("cases").join(case_id).join(stack);
    let bundle = run_dir.join(&rel).is_dir().then_some(rel.clone());
    let manifest = bundle
        .as_ref()
        .and_then(|_| {
            crate::model::file::read_regular_text(
                &run_dir.join(&rel).join("manifest.json"),
                crate::model::file::MAX_INPUT_BYTES,
            )
            .ok()
        })
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let manifest_reason = manifest.as_ref().and_then(|m| {
        ["reason", "error"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(str::to_string)
    });
    let (state, reason) = match replay.step(key) {
        Some(s) if s.is_interrupted() => (
            RunState::Open {
                since: s.open_since.clone().unwrap_or_default(),
            },
            None,
        ),
        Some(s) => match &s.last_finished {
            Some(f) => (
                RunState::Finished(f.status),
                f.reason.clone().or(manifest_reason),
            ),
            None => (RunState::NotStarted, None),
        },
        None => (RunState::NotStarted, None),
    };
    RunLine {
        case_id: case_id.to_string(),
        stack: stack.to_string(),
        state,
        reason,
        bundle,
    }
}

/// Durations of runs that executed, and how many ran at once on average: total run time over
/// the length of the union of their intervals (gaps between sessions do not count).
fn timing(replay: &Replay) -> (Vec<Duration>, f64) {
    let mut durations = Vec::new();
    let mut intervals: Vec<(f64, f64)> = Vec::new();
    for (key, state) in replay.steps_in_key_order() {
        let Some(f) = &state.last_finished else {
            continue;
        };
        if parse_run_step(key).is_none()
            || !matches!(
                f.status,
                RunStatus::Pass | RunStatus::Fail | RunStatus::Timeout
            )
        {
            continue;
        }
        let Some(d) = f.duration else { continue };
        durations.push(d);
        if let Ok(end) = chrono::DateTime::parse_from_rfc3339(&f.t) {
            let end = end.timestamp_millis() as f64 / 1000.0;
            intervals.push((end - d.as_secs_f64(), end));
        }
    }
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut covered = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (s, e) in intervals {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                covered += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        covered += ce - cs;
    }
    let total: f64 = durations.iter().map(Duration::as_secs_f64).sum();
    let concurrency = if covered > 0.0 {
        (total / covered).max(1.0)
    } else {
        1.0
    };
    (durations, concurrency)
}

/// `2h 05m`, `3m 20s`, `12s`, `0.4s`.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        return format!("{s:.1}s");
    }
    let s = s.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_campaign_header_counts_its_runs_instead_of_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        let header = serde_json::json!({"campaign": "big", "steps": null, "planned_runs": 12000});
        drop(crate::store::journal::Journal::create(tmp.path(), header).unwrap());
        let st = RunDirStatus::load(tmp.path()).unwrap();
        assert!(st.runs.is_empty());
        assert_eq!(st.counts(), vec![("not started".to_string(), 12000)]);
        assert_eq!(st.left(), 12000);
    }

    #[test]
    fn a_census_line_is_summarised_with_its_findings() {
        let line = |v: serde_json::Value| v.as_object().unwrap().clone();
        let slow = census_lines(&line(serde_json::json!({
            "stack": "hccl", "devices": [0, 1, 2, 3, 4, 5, 6, 7], "planned_pairs": 28,
            "rounds": 7, "measured": 27, "scored": 27,
            "findings": [
                {"kind": "device", "devices": [6], "label": "7 of its 7 links are slow"},
                {"kind": "link", "devices": [2, 5], "label": "same node: busbw 60 %"}
            ],
            "classes": [{"class": "same_node", "pairs": 27, "median_busbw_gb_s": 41.2,
                         "spread_gb_s": 0.8}],
            "quarantined": [6]
        })));
        assert_eq!(
            slow,
            "census: 27 of 28 pairs measured on hccl, 27 scored (same node: 27 pairs, median busbw 41.2 GB/s)\n\
             \x20 slow device 6: 7 of its 7 links are slow — quarantined\n\
             \x20 slow link 2–5: same node: busbw 60 %\n"
        );
        let none = census_lines(&line(serde_json::json!({
            "stack": "host", "planned_pairs": 6, "measured": 6, "scored": 0, "findings": [],
            "classes": [{"class": "same_node", "pairs": 6, "median_busbw_gb_s": 1.5}]
        })));
        assert!(
            none.ends_with("  nothing judged: no link class had enough pairs to score\n"),
            "{none}"
        );
        let clean = census_lines(&line(serde_json::json!({"measured": 28, "scored": 28})));
        assert!(
            clean.ends_with("  no slow link or device among the 28 pairs scored\n"),
            "{clean}"
        );
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(400)), "0.4s");
        assert_eq!(human(Duration::from_secs(12)), "12s");
        assert_eq!(human(Duration::from_secs(200)), "3m 20s");
        assert_eq!(human(Duration::from_secs(7500)), "2h 05m");
    }
}

//! A census's judgement, taken while the campaign runs: once every census run ended — and
//! before any other run is placed, since the step graph holds a sweep's runs behind the census
//! (`Dag::after_census`) — what `analysis::census` found is journaled as one `census` line (pairs
//! measured, link classes, the slow link or device named, the devices quarantined for it: what
//! `campaign status` summarises) and, with `[census] quarantine` (`campaign census
//! --quarantine`), the devices it names leave the pool: the scheduler quarantines them (a
//! `quarantined` line each) and every run still to come that is pinned to one becomes a planned
//! skip naming why.
//!
//! The `census` line is the decision: a resume that finds it replays it (the same devices out,
//! the same skips) instead of judging again, as `decision` lines are replayed. Only devices are
//! quarantined: a slow link is a property of two devices together, and taking either out would
//! punish the healthy one. It decides nothing the analysis did not name and runs nothing.

use serde_json::{Map, Value};

use crate::analysis::census::{census, Summary};
use crate::error::Result;
use crate::model::plan::CensusConfig;
use crate::model::results::{ResultSet, RunResult};
use crate::store::journal::Journal;

/// The journal event a census's findings are recorded as.
pub(crate) const EVENT: &str = "census";

/// The census of a session: its settings, its runs' results as they end, and the line an
/// earlier session journaled.
pub(crate) struct Gate {
    config: CensusConfig,
    /// How many of the campaign's cases, the first, are the census's (`Prepared::census_cases`).
    cases: usize,
    results: Vec<RunResult>,
    replayed: Option<Map<String, Value>>,
}

/// What judging found: the `census` line to journal (None when replayed) and the devices to
/// quarantine, with why.
pub(crate) struct Judged {
    pub(crate) line: Option<Summary>,
    pub(crate) quarantine: Vec<(u32, String)>,
}

impl Gate {
    /// The gate of a plan with `[census]`; `replayed`: the journal's latest `census` line.
    pub(crate) fn new(
        config: CensusConfig,
        cases: usize,
        replayed: Option<Map<String, Value>>,
    ) -> Gate {
        Gate {
            config,
            cases,
            results: Vec::new(),
            replayed,
        }
    }

    /// A run of case `case_index` ended with `result`: kept when it is a census run (a census
    /// holds a few dozen runs; the results files hold the one copy of the rest).
    pub(crate) fn ended(&mut self, case_index: usize, result: &RunResult) {
        if case_index < self.cases {
            self.results.push(result.clone());
        }
    }

    /// Judge the census from its runs' results, or replay the earlier session's line.
    pub(crate) fn judge(&mut self) -> Judged {
        if let Some(line) = self.replayed.take() {
            return Judged {
                line: None,
                quarantine: replayed_quarantine(&line),
            };
        }
        let set = ResultSet {
            runs: std::mem::take(&mut self.results),
            ..ResultSet::default()
        };
        let found = census(&set, &self.config.devices, &self.config.stack);
        let quarantine: Vec<(u32, String)> = (found.findings.iter())
            .filter(|f| self.config.quarantine && f.kind == "device")
            .map(|f| (f.devices[0], reason(&f.label)))
            .collect();
        let line = found.summary(|d| quarantine.iter().any(|(q, _)| *q == d));
        Judged {
            line: Some(line),
            quarantine,
        }
    }
}

/// A quarantined device's reason: what the census found of it.
fn reason(label: &str) -> String {
    format!("link census: {label}")
}

/// The devices a journaled `census` line quarantined, with the reasons its findings give.
fn replayed_quarantine(line: &Map<String, Value>) -> Vec<(u32, String)> {
    let ids = (line.get("quarantined").and_then(Value::as_array))
        .map(|a| a.iter().filter_map(Value::as_u64).collect::<Vec<_>>())
        .unwrap_or_default();
    let findings = (line.get("findings").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default();
    ids.into_iter()
        .filter_map(|d| u32::try_from(d).ok())
        .map(|d| {
            let label = (findings.iter())
                .find(|f| {
                    f.get("kind").and_then(Value::as_str) == Some("device")
                        && f.get("devices")
                            .and_then(|v| v.get(0))
                            .and_then(Value::as_u64)
                            == Some(u64::from(d))
                })
                .and_then(|f| f.get("label").and_then(Value::as_str))
                .unwrap_or("named slow");
            (d, reason(label))
        })
        .collect()
}

/// Journal `summary` as the `census` line (fsynced).
pub(crate) fn record(journal: &mut Journal, summary: &Summary) -> Result<()> {
    let fields = match serde_json::to_value(summary) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    journal.event(EVENT, fields)
}

/// How the census reads on the progress line: "census: 28 pairs measured; slow device 6".
pub(crate) fn said(summary: &Summary) -> String {
    let named: Vec<String> = (summary.findings.iter())
        .map(|f| {
            let ids: Vec<String> = f.devices.iter().map(u32::to_string).collect();
            format!("slow {} {}", f.kind, ids.join("–"))
        })
        .collect();
    let verdict = match (named.is_empty(), summary.scored) {
        (false, _) => named.join(", "),
        (true, 0) => "nothing judged (no link class large enough to score)".into(),
        (true, n) => format!("no slow link or device among {n} pairs scored"),
    };
    format!(
        "census: {} of {} pairs measured; {verdict}",
        summary.measured, summary.planned_pairs
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replayed_line_quarantines_the_devices_it_names_with_their_findings() {
        let line = json!({
            "findings": [
                {"kind": "link", "devices": [2, 5], "label": "same node: busbw 60 %"},
                {"kind": "device", "devices": [6], "label": "7 of its 7 links are slow"}
            ],
            "quarantined": [6]
        });
        let config = CensusConfig {
            devices: (0..8).collect(),
            stack: "s".into(),
            op: crate::model::case::Op::Allreduce,
            count: 8,
            nodes: 1,
            quarantine: true,
            then_sweep: true,
        };
        let mut gate = Gate::new(config, 28, line.as_object().cloned());
        let judged = gate.judge();
        assert!(judged.line.is_none(), "replayed, not journaled again");
        assert_eq!(
            judged.quarantine,
            vec![(6, "link census: 7 of its 7 links are slow".to_string())]
        );
    }
}

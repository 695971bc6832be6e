//! Progress output of a campaign — the only place that draws progress.
//!
//! On a terminal: an indicatif overall bar (runs done / total, counts by status, ETA) and one
//! line per running step with its devices. Otherwise: plain timestamped lines, one when a step
//! starts and one when it ends. `--quiet`: nothing (the final summary is printed by the command).
//! It must not decide anything: it is told what happened.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::results::RunStatus;

enum Mode {
    Bars {
        multi: MultiProgress,
        overall: ProgressBar,
        running: BTreeMap<String, ProgressBar>,
    },
    Plain,
    Quiet,
}

pub(crate) struct Progress {
    mode: Mode,
    total: usize,
    done: usize,
    counts: BTreeMap<RunStatus, usize>,
    /// What the campaign decided so far (budget used, points decided), after the counts.
    note: String,
}

fn now() -> String {
    chrono::Local::now().format("%H:%M:%S").to_string()
}

impl Mode {
    fn bars(total_runs: usize, target: ProgressDrawTarget) -> Mode {
        let multi = MultiProgress::with_draw_target(target);
        let overall = multi.add(ProgressBar::new(total_runs as u64));
        let style = ProgressStyle::with_template(
            "{bar:30.cyan/blue} {pos}/{len} runs  {msg}  [{elapsed_precise}, ETA {eta}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        overall.set_style(style);
        overall.enable_steady_tick(Duration::from_millis(250));
        Mode::Bars {
            multi,
            overall,
            running: BTreeMap::new(),
        }
    }
}

impl Progress {
    /// Bars when stdout is a terminal, plain lines otherwise, nothing when `quiet`.
    pub(crate) fn new(total_runs: usize, quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stdout().is_terminal() {
            Mode::bars(total_runs, ProgressDrawTarget::stdout())
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            total: total_runs,
            done: 0,
            counts: BTreeMap::new(),
            note: String::new(),
        }
    }

    fn counts_text(&self) -> String {
        let counts = (self.counts.iter())
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        match self.note.is_empty() {
            true => counts,
            false => format!("{counts}  ({})", self.note),
        }
    }

    /// What the campaign decided so far ("budget 12s of 45m, 3 points decided"), shown after
    /// the overall bar's counts.
    pub(crate) fn set_note(&mut self, note: String) {
        self.note = note;
    }

    /// A line of text that must not tear the bars (run dir, warnings).
    pub(crate) fn println(&self, text: &str) {
        match &self.mode {
            Mode::Bars { multi, .. } => {
                let _ = multi.println(text);
            }
            Mode::Plain => crate::say!("[{}] {text}", now()),
            Mode::Quiet => {}
        }
    }

    /// A step started (`devices` empty for steps that lease nothing).
    pub(crate) fn started(&mut self, key: &str, devices: &[u32]) {
        let on = if devices.is_empty() {
            String::new()
        } else {
            format!(" on {}", crate::engine::schedule::pool::join(devices))
        };
        match &mut self.mode {
            Mode::Bars { multi, running, .. } => {
                let line = multi.add(ProgressBar::new_spinner());
                line.set_style(
                    ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                line.set_message(format!("{key}{on}"));
                line.enable_steady_tick(Duration::from_millis(250));
                running.insert(key.to_string(), line);
            }
            Mode::Plain => crate::say!("[{}] start {key}{on}", now()),
            Mode::Quiet => {}
        }
    }

    /// A step ended. `status` is set for runs (they count towards the bar); `detail` is the
    /// reason of a run that did not pass, or a note.
    pub(crate) fn finished(&mut self, key: &str, status: Option<RunStatus>, detail: &str) {
        if let Some(s) = status {
            self.done += 1;
            *self.counts.entry(s).or_default() += 1;
        }
        let counts = self.counts_text();
        let what = status.map_or("done".to_string(), |s| s.to_string());
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(": {}", crate::model::text::visible(detail))
        };
        match &mut self.mode {
            Mode::Bars {
                multi,
                overall,
                running,
            } => {
                if let Some(line) = running.remove(key) {
                    line.finish_and_clear();
                    multi.remove(&line);
                }
                if status.is_some() {
                    overall.inc(1);
                    overall.set_message(counts);
                }
                if status.is_some_and(|s| s != RunStatus::Pass)
                    || status.is_none() && !detail.is_empty()
                {
                    let _ = multi.println(format!("{what} {key}{detail}"));
                }
            }
            Mode::Plain => {
                let n = if status.is_some() {
                    format!(" ({}/{})", self.done, self.total)
                } else {
                    String::new()
                };
                crate::say!("[{}] {what} {key}{n}{detail}", now());
            }
            Mode::Quiet => {}
        }
    }

    /// Clear the running lines and leave the overall bar where it is: after a Ctrl-C it must
    /// show the runs really done (`finish` would jump to N/N), after a full campaign it is N/N.
    pub(crate) fn finish(&mut self) {
        if let Mode::Bars {
            overall, running, ..
        } = &mut self.mode
        {
            for line in running.values() {
                line.finish_and_clear();
            }
            overall.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden_bars(total: usize) -> Progress {
        Progress {
            mode: Mode::bars(total, ProgressDrawTarget::hidden()),
            total,
            done: 0,
            counts: BTreeMap::new(),
            note: String::new(),
        }
    }

    fn shown(p: &Progress) -> (u64, Option<u64>) {
        match &p.mode {
            Mode::Bars { overall, .. } => (overall.position(), overall.length()),
            _ => unreachable!("bars"),
        }
    }

    #[test]
    fn an_interrupted_campaign_leaves_the_bar_at_the_runs_done() {
        let mut p = hidden_bars(36);
        for key in ["a", "b", "c"] {
            p.started(key, &[0]);
        }
        p.finished("a", Some(RunStatus::Pass), "");
        p.finished("b", Some(RunStatus::Fail), "exit 1");
        // "c" is still running when Ctrl-C stops the campaign.
        p.finish();
        assert_eq!(shown(&p), (2, Some(36)));
    }

    #[test]
    fn a_finished_campaign_shows_every_run_done() {
        let mut p = hidden_bars(2);
        p.finished("a", Some(RunStatus::Pass), "");
        p.finished("prepare", None, "");
        p.finished("b", Some(RunStatus::Pass), "");
        p.finish();
        assert_eq!(shown(&p), (2, Some(2)));
    }
}

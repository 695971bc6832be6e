//! Parser `markers`: phases timed by marker lines, each timestamped when its line arrives.
//!
//! A marker set maps a phase name to the text that ENDS it; a phase starts where the previous
//! marker (in arrival order) was seen, the first one at process start. With simpler's set:
//! startup = start → `compiling `, compile → `init worker`, init → `running `, execute →
//! `matched golden`; when `compiling ` never prints, compile = start → `init worker`.
//! Reserved names: `fail` (a declared failure, e.g. `golden check FAILED`) and `ok` (a success
//! marker other than the end of `execute`); success is otherwise the end of `execute`.
//!
//! The def's `markers` table selects a built-in set with `builtin = "simpler" | "pypto" |
//! "none"` (default `simpler`) and overrides or adds phases by name. One process gives one
//! sample (the `subprocess` shape); the engine numbers it and sets its `wall_s` (the process's
//! elapsed time). Only stdout lines are markers. The arrival time on each line is
//! the only clock.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::output::{OutputLine, Stream};
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::hccl::bandwidth;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

/// simpler's markers (current and older forms: `init worker (forks…`, `ring all ranks matched
/// golden` contain the same text).
pub(crate) const SIMPLER: &[(&str, &str)] = &[
    ("startup", "compiling "),
    ("compile", "init worker"),
    ("init", "running "),
    ("execute", "matched golden"),
    ("fail", "golden check FAILED"),
];

/// pypto's older pytest markers.
pub(crate) const PYPTO: &[(&str, &str)] = &[
    ("startup", "PYPTO_COMPILE_BEGIN"),
    ("compile", "PYPTO_RUNTIME_INIT_BEGIN"),
    ("init", "PYPTO_RUNTIME_EXECUTE_BEGIN"),
    ("execute", "PYPTO_ALLREDUCE_OK"),
];

/// Phases in their natural order: a phase whose end marker never printed but whose successor's
/// did is attributed from the previous marker (how compile absorbs startup when `compiling `
/// is missing).
const ORDER: &[&str] = &["startup", "compile", "init", "execute"];

/// A marker set: phase → the text that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MarkerSet {
    pub(crate) ends: BTreeMap<String, String>,
}

impl MarkerSet {
    /// From a def's `markers` table (see the module doc).
    pub(crate) fn from_table(table: &BTreeMap<String, String>) -> Result<MarkerSet, String> {
        let base: &[(&str, &str)] = match table.get("builtin").map(String::as_str) {
            None | Some("simpler") => SIMPLER,
            Some("pypto") => PYPTO,
            Some("none") => &[],
            Some(other) => {
                return Err(format!(
                    "unknown built-in marker set `{other}` (expected simpler, pypto or none)"
                ))
            }
        };
        let mut ends: BTreeMap<String, String> = base
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in table {
            if k != "builtin" {
                ends.insert(k.clone(), v.clone());
            }
        }
        Ok(MarkerSet { ends })
    }

    pub(crate) fn builtin(set: &[(&str, &str)]) -> MarkerSet {
        MarkerSet {
            ends: set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The phase a line ends, if it carries a marker not seen yet. Phases are tried in their
    /// natural order so that a line matching two markers ends the earlier phase.
    fn phase_of(&self, text: &str, seen: &BTreeMap<String, Duration>) -> Option<String> {
        let mut names: Vec<&String> = self.ends.keys().collect();
        names.sort_by_key(|n| ORDER.iter().position(|o| o == n).unwrap_or(ORDER.len()));
        names
            .into_iter()
            .find(|name| !seen.contains_key(*name) && text.contains(self.ends[*name].as_str()))
            .cloned()
    }
}

pub fn parser(def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    let (set, warning) = match MarkerSet::from_table(&def.markers) {
        Ok(set) => (set, None),
        Err(e) => (MarkerSet::builtin(SIMPLER), Some(e)),
    };
    let mut p = MarkersParser::new(set, ctx);
    p.out.warnings.extend(warning);
    Box::new(p)
}

/// The markers state machine, reusable by other parsers (pypto's older output).
pub(crate) struct MarkersParser {
    set: MarkerSet,
    n_bytes: u64,
    /// Phase name → arrival time of its end marker.
    seen: BTreeMap<String, Duration>,
    last: Duration,
    pub(crate) out: Parsed,
}

impl MarkersParser {
    pub(crate) fn new(set: MarkerSet, ctx: &ParseContext) -> MarkersParser {
        MarkersParser {
            set,
            n_bytes: ctx.n_bytes,
            seen: BTreeMap::new(),
            last: Duration::ZERO,
            out: Parsed::default(),
        }
    }

    /// Did any marker arrive?
    pub(crate) fn any_marker(&self) -> bool {
        !self.seen.is_empty()
    }

    pub(crate) fn feed_line(&mut self, line: &OutputLine) {
        self.last = self.last.max(line.at);
        // Markers are stdout lines; stderr carries logs (STRACE, runtime chatter) whose text
        // could contain a marker word by accident.
        if line.stream != Stream::Stdout {
            return;
        }
        let Some(name) = self.set.phase_of(&line.text, &self.seen) else {
            return;
        };
        self.seen.insert(name.clone(), line.at);
        match name.as_str() {
            "fail" => {
                self.out.correctness = Some(false);
                self.out
                    .error
                    .get_or_insert_with(|| line.text.trim().to_string());
            }
            "ok" | "execute" => {
                let ok_marker = self.set.ends.contains_key("ok");
                if (name == "ok" || !ok_marker) && self.out.correctness.is_none() {
                    self.out.correctness = Some(true);
                }
            }
            _ => {}
        }
    }

    /// The one sample of this process: phases between consecutive markers in arrival order.
    pub(crate) fn sample(&mut self) -> Sample {
        let mut ends: Vec<(&String, Duration)> = self
            .seen
            .iter()
            .filter(|(n, _)| *n != "fail" && *n != "ok")
            .map(|(n, t)| (n, *t))
            .collect();
        ends.sort_by_key(|(n, t)| (*t, ORDER.iter().position(|o| o == n)));
        let mut phases = BTreeMap::new();
        let mut start = Duration::ZERO;
        for (name, at) in ends {
            phases.insert(name.clone(), at.saturating_sub(start).as_secs_f64());
            start = at;
        }
        let execute = phases.get("execute").copied();
        let ok = self.out.correctness == Some(true);
        // wall_s is the process's elapsed time, which only the engine knows.
        Sample {
            execute_s: execute,
            ok,
            bw_execute_mb_s: execute.and_then(|e| bandwidth(self.n_bytes, e)),
            phases,
            ..Sample::default()
        }
    }

    pub(crate) fn into_parsed(mut self) -> Parsed {
        if self.any_marker() || self.last > Duration::ZERO {
            let sample = self.sample();
            if self.out.correctness.is_none() {
                let open = ORDER
                    .iter()
                    .find(|p| self.set.ends.contains_key(**p) && !self.seen.contains_key(**p))
                    .unwrap_or(&"execute");
                self.out
                    .warnings
                    .push(format!("output ended during phase {open}"));
            }
            self.out.samples.push(sample);
        }
        self.out
    }
}

impl Parser for MarkersParser {
    fn feed(&mut self, line: &OutputLine) {
        self.feed_line(line);
    }

    fn finish(self: Box<Self>) -> Parsed {
        (*self).into_parsed()
    }
}

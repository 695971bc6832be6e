//! Profiles as data: the kinds a plan's `[profile]` (or `run --profile`) may ask for, how many
//! profiled runs each (case, stack) gets, and how a stack definition switches an upstream kind on
//! (`[stacks.NAME.profile.KIND]`).
//!
//! A profiled run is an extra run of its own, marked as profiled, never one of the timed runs:
//! nothing here decides where it runs or what it writes (`engine::profiled` does). No I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One kind of profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileKind {
    /// Sampled call stacks of the run's processes (`perf record`) as a flame graph.
    Cpu,
    /// Software counters of the run's processes (`perf stat`) as CSV.
    Counters,
    /// An upstream swimlane (simpler's chip swimlane, pypto's L2 swimlane).
    Swimlane,
    /// An upstream PMU counter capture.
    Pmu,
    /// An upstream dependency graph (simpler's dep-gen).
    Dep,
}

impl ProfileKind {
    /// Every kind, in the order profiled runs are made.
    pub const ALL: &'static [ProfileKind] = &[
        ProfileKind::Cpu,
        ProfileKind::Counters,
        ProfileKind::Swimlane,
        ProfileKind::Pmu,
        ProfileKind::Dep,
    ];

    /// Its name in `[profile] kinds`, `--profile`, folder names and `profiles.json`.
    pub const fn name(self) -> &'static str {
        match self {
            ProfileKind::Cpu => "cpu",
            ProfileKind::Counters => "counters",
            ProfileKind::Swimlane => "swimlane",
            ProfileKind::Pmu => "pmu",
            ProfileKind::Dep => "dep",
        }
    }

    /// The kind called `name`, if there is one.
    pub fn parse(name: &str) -> Option<ProfileKind> {
        ProfileKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Kinds campaign makes itself with `perf` around a stack's processes (CPU stacks); the
    /// others are switched on by the stack's own program (`[stacks.NAME.profile.KIND]`).
    pub const fn by_perf(self) -> bool {
        matches!(self, ProfileKind::Cpu | ProfileKind::Counters)
    }

    /// The names of every kind, for messages.
    pub fn names() -> Vec<&'static str> {
        ProfileKind::ALL.iter().map(|k| k.name()).collect()
    }
}

/// Most profiled runs per (case, stack, kind): each is a whole extra run.
pub const MAX_PROFILE_RUNS: u32 = 100;

/// `[profile]`: which kinds, and how many profiled runs of each per (case, stack).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileConfig {
    /// Empty: no profiled runs.
    pub kinds: Vec<ProfileKind>,
    /// Profiled runs per (case, stack, kind); default 1.
    pub runs: u32,
}

impl Default for ProfileConfig {
    fn default() -> ProfileConfig {
        ProfileConfig {
            kinds: Vec::new(),
            runs: 1,
        }
    }
}

impl ProfileConfig {
    /// Does the campaign make any profiled run?
    pub fn any(&self) -> bool {
        !self.kinds.is_empty() && self.runs > 0
    }
}

/// Parse `--profile cpu,counters`: kinds separated by commas, each named once.
pub fn parse_kinds(text: &str) -> Result<Vec<ProfileKind>, String> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let kind = ProfileKind::parse(word).ok_or_else(|| {
            format!(
                "unknown profile kind `{word}`; expected one of: {}",
                ProfileKind::names().join(", ")
            )
        })?;
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no profile kind named; expected one or more of: {}",
            ProfileKind::names().join(", ")
        ));
    }
    Ok(out)
}

/// `[stacks.NAME.profile.KIND]`: how the stack's own program makes a profile of `KIND`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Arguments appended to the rendered command, as written (a shell stack's are quoted onto
    /// its command line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment added to the run's, as written (replacing a variable of the same name).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where the program writes its files: glob patterns relative to the stack's root when it
    /// has one (where the upstream programs run and write `outputs/`), else to the profiled
    /// run's folder; every match written during the profiled run is moved into its folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Cases the program refuses this kind for: a `where` expression over the case's fields
    /// that makes the profiled run a planned skip, and the reason it names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refuse: Vec<ProfileRefusal>,
    /// The profiled run runs this many timed rounds and no warmup (simpler collects swimlane,
    /// PMU and dep-gen only when `--rounds` is 1); absent: the case's rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
}

/// One case shape a stack's program refuses a kind for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRefusal {
    /// An expression over the case's fields (like the stack's `where`); true = refused.
    #[serde(rename = "where")]
    pub when: String,
    /// What the upstream program says, or why.
    pub reason: String,
}

/// `profiles.json` in a run dir: what the campaign profiles and every profiled run so far. A
/// resume reads it back (the kinds a `run --profile` asked for included) and makes only the
/// profiled runs it does not list as done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilesFile {
    pub kinds: Vec<ProfileKind>,
    pub runs: u32,
    #[serde(default)]
    pub profiles: Vec<ProfileEntry>,
}

impl ProfilesFile {
    pub fn new(config: &ProfileConfig) -> ProfilesFile {
        ProfilesFile {
            kinds: config.kinds.clone(),
            runs: config.runs,
            profiles: Vec::new(),
        }
    }

    /// The config it records.
    pub fn config(&self) -> ProfileConfig {
        ProfileConfig {
            kinds: self.kinds.clone(),
            runs: self.runs,
        }
    }

    /// The entry of one profiled run, if recorded.
    pub fn find(
        &self,
        case_id: &str,
        stack: &str,
        kind: ProfileKind,
        run: u32,
    ) -> Option<&ProfileEntry> {
        (self.profiles.iter())
            .find(|e| e.case_id == case_id && e.stack == stack && e.kind == kind && e.run == run)
    }

    /// Record `entry`, replacing an earlier one of the same profiled run.
    pub fn put(&mut self, entry: ProfileEntry) {
        self.profiles.retain(|e| {
            !(e.case_id == entry.case_id
                && e.stack == entry.stack
                && e.kind == entry.kind
                && e.run == entry.run)
        });
        self.profiles.push(entry);
    }
}

/// One profiled run: marked as profiled everywhere it is written, never a row of the results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// The case (no repeat mark: a profile belongs to the case, not to a repeat).
    pub case_id: String,
    pub stack: String,
    pub kind: ProfileKind,
    /// 1..=`runs`.
    pub run: u32,
    /// `pass`, `fail`, `timeout`, `interrupted`, or `skipped` (a planned skip: `reason` says why).
    pub status: crate::model::results::RunStatus,
    #[serde(default)]
    pub reason: Option<String>,
    /// Its folder, relative to the run dir (`cases/<case_id>/<stack>/profiling/<kind>[-<run>]`).
    pub bundle: String,
    /// What it holds, by role (`flamegraph`, `folded`, `perf_data`, `counters`, or an upstream
    /// file's name), relative to `bundle`.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Wall time of the profiled run's processes (perf's own overhead included), seconds.
    #[serde(default)]
    pub wall_s: Option<f64>,
}

impl ProfileEntry {
    /// Is it settled (a resume does not make it again)? A passed or planned-skip run is; a
    /// failed, timed-out or interrupted one is made again.
    pub fn settled(&self) -> bool {
        matches!(
            self.status,
            crate::model::results::RunStatus::Pass | crate::model::results::RunStatus::Skipped
        )
    }
}

/// The folder of profiled run `run` of `kind` under a run's `profiling/`: `cpu`, `cpu-2`, …
pub fn folder(kind: ProfileKind, run: u32) -> String {
    if run <= 1 {
        kind.name().to_string()
    } else {
        format!("{}-{run}", kind.name())
    }
}

/// The name of the run dir file that lists the profiled runs.
pub const PROFILES_FILE: &str = "profiles.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_name_and_refuse_unknown_ones() {
        assert_eq!(
            parse_kinds("cpu, counters,cpu").unwrap(),
            vec![ProfileKind::Cpu, ProfileKind::Counters]
        );
        let e = parse_kinds("cpu,flame").unwrap_err();
        assert!(e.contains("`flame`") && e.contains("swimlane"), "{e}");
        assert!(parse_kinds(" , ").is_err());
        for k in ProfileKind::ALL {
            assert_eq!(ProfileKind::parse(k.name()), Some(*k));
        }
    }

    #[test]
    fn only_cpu_and_counters_are_made_with_perf() {
        let perf: Vec<_> = (ProfileKind::ALL.iter()).filter(|k| k.by_perf()).collect();
        assert_eq!(perf, [&ProfileKind::Cpu, &ProfileKind::Counters]);
    }
}

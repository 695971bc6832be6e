//! `[stacks.NAME]` — the stack definition as users write it in plans and in `stacks/*.toml`.
//!
//! Owns the pinned keys and their serde shape (unknown keys rejected). Rendering a definition
//! into argv/env for one run is `stack/render.rs`; availability checks are `stack/probe.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::case::{Dtype, Op, Platform, Variant};

mod constraint;
mod domain;

pub(crate) use domain::{probe_regex, ran_regex, COMPONENT_READERS};

/// A command: an argv of minijinja templates, or one shell string (only with `shell = true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandSpec {
    Argv(Vec<String>),
    Shell(String),
}

/// `campaign` = one process runs every round; `subprocess` = one process per round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Shape {
    #[default]
    Campaign,
    Subprocess,
}

/// What a run of this stack leases from the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    #[default]
    Npu,
    Gpu,
    Cpu,
    None,
}

/// Which counts a stack supports: a list, or bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Counts {
    List(Vec<u64>),
    Range {
        #[serde(default)]
        min: Option<u64>,
        #[serde(default)]
        max: Option<u64>,
    },
}

impl Counts {
    pub(crate) fn allows(&self, count: u64) -> bool {
        match self {
            Counts::List(list) => list.contains(&count),
            Counts::Range { min, max } => {
                min.is_none_or(|m| count >= m) && max.is_none_or(|m| count <= m)
            }
        }
    }
}

/// One stack definition. Every key is optional in TOML so that a plan can override a shipped
/// definition key by key; `command` must be present after merging.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackDef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// argv templates (or a shell string with `shell = true`). `host` needs none: it is built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shell: Option<bool>,
    /// Extra environment, values are templates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) env: BTreeMap<String, String>,
    /// Working directory (template); default: the run's bundle dir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shape: Option<Shape>,
    /// `native` (default), `regex`, `hccl`, `markers`, `gtest`, `pypto`, `nccl-tests`, `osu`,
    /// `hccl_test`, `simpler-own`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parser: Option<String>,
    /// For `parser = "regex"`: sample field → regex with named captures.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) patterns: BTreeMap<String, String>,
    /// For `parser = "markers"`: phase boundary name → substring that marks it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub markers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) variants: Option<Vec<Variant>>,
    /// The collectives the stack runs; absent = `["allreduce"]` (every stack before the op
    /// axis). A case of another op is a planned `skipped` run naming the ops it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ops: Option<Vec<Op>>,
    /// Variants valid for one op, where they differ from `variants` (e.g. the host stack's
    /// allgather has `ring` and `direct`, not `mesh`); a case whose (op, variant) is not listed
    /// is a planned `skipped` run naming the op's variants.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) variants_by_op: BTreeMap<Op, Vec<Variant>>,
    /// The variant the stack runs when a plan names none, and the one "What the default loses"
    /// judges (the library's own choice: `default` for mpi, hccl and nccl); absent, or not an
    /// algorithm of the op: its first algorithm of the op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) default_variant: Option<Variant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtypes: Option<Vec<Dtype>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) platforms: Option<Vec<Platform>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counts: Option<Counts>,
    /// Each entry: `NAME` (an upper-case env var that must be set), a path containing `/` that
    /// must exist (templates allowed, `root` in scope), or a program that must be on PATH.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Requirements of one platform only (same forms as `requires`), e.g. simpler's sim
    /// platforms compile with `g++-15`: `{ a2a3sim = ["g++-15"], a5sim = ["g++-15"] }`. Runs on
    /// that platform are `unavailable` when one is missing; other platforms never need them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) requires_on: BTreeMap<Platform, Vec<String>>,
    /// Shown after an `unavailable` reason, e.g. how to install what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Built once per campaign before any run of the stack (templates: `run_dir`, `root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<CommandSpec>,
    /// Health probe run before the first run and each retry on the run's devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) probe: Option<CommandSpec>,
    /// Name of the root this stack lives in (`PYPTO_ROOT`, `SIMPLER_ROOT`, `PTO_ISA_ROOT`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) root: Option<String>,
    /// Wall-clock limit of one process, e.g. `"10m"`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::model::units::duration_opt"
    )]
    pub(crate) timeout: Option<Duration>,
    /// Kill when neither stdout nor stderr printed for this long.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::model::units::duration_opt"
    )]
    pub(crate) no_output_timeout: Option<Duration>,
    /// Readiness probe (argv, or one string run with `sh -c`): run by `doctor` and by the
    /// engine's pre-flight; a non-zero exit makes the stack `unavailable` with its output as the
    /// reason (e.g. `python3 -c "import simpler, torch"`). Scope: `root`, `campaign_exe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ready: Option<CommandSpec>,
    /// Readiness probes of one platform only (same forms and scope as `ready`), run after
    /// `ready` for each platform the campaign runs the stack on, e.g. simpler's sim platforms
    /// need a GCC >= 13 named `g++-15` where the stack's interpreter looks for it. A failure makes
    /// the stack `unavailable` with the platform and the probe's output as the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) ready_on: BTreeMap<Platform, CommandSpec>,
    /// Fewest ranks the stack runs with; a case below is `skipped` at plan time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_p: Option<u32>,
    /// Most ranks the stack runs with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_p: Option<u32>,
    /// Most nodes one run may span (default 1: a stack that does not say runs on one node; the
    /// `mpi` stack spans many). A case over it is `skipped` at plan time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_nodes: Option<u32>,
    /// P must be a multiple of this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p_multiple_of: Option<u32>,
    /// Expressions over the case's fields (minijinja, like `[filter] where`) that must all be
    /// true, e.g. `variant != 'ibing' or p == 2`; a case failing one is `skipped`, the
    /// expression named in the reason.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub(crate) constraints: Option<Vec<String>>,
    /// The headline metric (`execute_s`, `device_wall_s`, `wall_s`): what the report's table
    /// and paired comparisons use for this stack. Default `execute_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metric: Option<crate::model::results::Metric>,
    /// The program takes only consecutive device ids (a range `lo-hi`, like simpler's `-d`):
    /// the pool offers such a run only contiguous windows, and a case that cannot get one
    /// (pinned ids with a gap, a pool without such a window) is `skipped` with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) contiguous_devices: Option<bool>,
    /// Fixed test shapes: test name → elements per rank and dtype of what that test really
    /// moves (pto-isa's gtests ignore the case's count); bandwidth of a sample is computed from
    /// the tests that ran, not from the case.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) fixed_shapes: BTreeMap<String, FixedShape>,
    /// What the stack promises about its upstream program, checked by `campaign doctor
    /// --contract` without collective work (see docs/stack-definitions.md, "Contract").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) contract: Vec<ContractItem>,
    /// How to learn which algorithm a run really used, from its own output (`[stacks.NAME.ran]`;
    /// `stack::ran`): recorded per run as `algo_ran`, `proto`, `channels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ran: Option<RanSpec>,
    /// How to ask the installed library which algorithms it has per op
    /// (`[stacks.NAME.variants_probe]`; `engine::variant_check`): a planned variant it lacks is
    /// refused at validate instead of failing at run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) variants_probe: Option<VariantsProbe>,
    /// How the stack's own program makes each upstream profile kind (`[stacks.NAME.profile.KIND]`:
    /// arguments, environment, the files it writes). `cpu` and `counters` need no entry: campaign
    /// makes them with `perf` around any CPU stack's processes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) profile:
        BTreeMap<crate::model::profile::ProfileKind, crate::model::profile::ProfileSpec>,
}

/// `[stacks.NAME.ran]`: a pattern over a run's output lines (stdout and stderr) whose named
/// groups say what ran — `algo` (required), `proto` and `channels` where the stack prints them —
/// and, optionally, what `algo` must read for the run's pin to count as honoured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RanSpec {
    /// A regex (Rust `regex` syntax) with a named group `algo`.
    pub(crate) pattern: String,
    /// A template over the run scope, e.g. `{{ variant }}`: the algorithm the run was pinned
    /// to. Rendered empty (or absent): nothing was pinned, nothing is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expect: Option<String>,
    /// A named reader of the library's own log that says which component serves the run's op
    /// (`open-mpi`: Open MPI's coll selection log, `stack::coll_select`); recorded per run as
    /// `component`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) component: Option<String>,
    /// A template over the run scope: the component that must serve the op for the pin to count
    /// (e.g. `tuned` when an algorithm of Open MPI's tuned component is pinned). Rendered empty
    /// (or absent): not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) component_expect: Option<String>,
}

/// `[stacks.NAME.variants_probe]`: a command whose output lists the algorithms the installed
/// library has, one per line matched by `pattern` (named groups `op` and `variant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VariantsProbe {
    /// argv, run without a shell (e.g. `ompi_info --param coll tuned --level 9 --parsable`).
    pub(crate) command: Vec<String>,
    /// A regex (Rust `regex` syntax) with named groups `op` and `variant`.
    pub(crate) pattern: String,
    /// The probe's name of a campaign op where it differs (`broadcast = "bcast"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) ops: BTreeMap<String, String>,
}

/// One test's fixed shape (`fixed_shapes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FixedShape {
    pub(crate) count: u64,
    pub(crate) dtype: Dtype,
}

/// One contract item: a command that must exit 0 and print every `expect` string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContractItem {
    /// What is promised, e.g. `test ids exist`.
    pub(crate) item: String,
    /// argv templates, or one string run with `sh -c`; scope `root`, `campaign_exe`.
    pub(crate) command: CommandSpec,
    /// Substrings the output (stdout and stderr) must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) expect: Vec<String>,
}

impl StackDef {
    /// Overlay `other`'s present keys on `self` (plan overrides a shipped definition).
    pub(crate) fn overlay(&mut self, other: &StackDef) {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f.clone(); } )* };
        }
        take!(
            description,
            command,
            shell,
            cwd,
            shape,
            parser,
            resource,
            variants,
            ops,
            dtypes,
            platforms,
            counts,
            hint,
            build,
            probe,
            root,
            timeout,
            no_output_timeout,
            ready,
            min_p,
            max_p,
            max_nodes,
            p_multiple_of,
            constraints,
            metric,
            contiguous_devices,
            ran,
            variants_probe,
            default_variant
        );
        if !other.fixed_shapes.is_empty() {
            self.fixed_shapes = other.fixed_shapes.clone();
        }
        if !other.contract.is_empty() {
            self.contract = other.contract.clone();
        }
        for (k, v) in &other.profile {
            self.profile.insert(*k, v.clone());
        }
        for (k, v) in &other.env {
            self.env.insert(k.clone(), v.clone());
        }
        for (k, v) in &other.patterns {
            self.patterns.insert(k.clone(), v.clone());
        }
        for (k, v) in &other.markers {
            self.markers.insert(k.clone(), v.clone());
        }
        if !other.requires.is_empty() {
            self.requires = other.requires.clone();
        }
        for (k, v) in &other.requires_on {
            self.requires_on.insert(*k, v.clone());
        }
        for (k, v) in &other.variants_by_op {
            self.variants_by_op.insert(*k, v.clone());
        }
        for (k, v) in &other.ready_on {
            self.ready_on.insert(*k, v.clone());
        }
    }

    /// The algorithms this stack has for `op`, its default first: `variants_by_op` for the op
    /// (kept to those in `variants` when both are given, so a plan's `variants = [...]` narrows
    /// a shipped stack), else `variants`; `None` when the stack lists none (it takes any name).
    pub(crate) fn algorithms(&self, op: Op) -> Option<std::borrow::Cow<'_, [Variant]>> {
        use std::borrow::Cow;
        match (self.variants_by_op.get(&op), &self.variants) {
            (Some(by_op), Some(all)) => Some(Cow::Owned(
                by_op.iter().filter(|v| all.contains(v)).copied().collect(),
            )),
            (Some(by_op), None) => Some(Cow::Borrowed(by_op)),
            (None, Some(all)) => Some(Cow::Borrowed(all)),
            (None, None) => None,
        }
    }

    /// The variant this stack runs for `op` when a plan names none: `default_variant` where it
    /// is one of the op's algorithms, else the first of them; none for a stack without
    /// algorithms.
    pub(crate) fn default_variant(&self, op: Op) -> Option<Variant> {
        let own = self.algorithms(op)?;
        match self.default_variant {
            Some(d) if own.contains(&d) => Some(d),
            _ => own.first().copied(),
        }
    }

    /// The ops this stack runs (`ops`, default allreduce).
    pub(crate) fn ops(&self) -> &[Op] {
        self.ops.as_deref().unwrap_or(&[Op::Allreduce])
    }

    /// Why this stack cannot run `case`'s op, or its (op, variant), if it cannot.
    fn op_reason(&self, case: &crate::model::case::Case) -> Option<String> {
        let join = |items: Vec<&str>| items.join(", ");
        if !self.ops().contains(&case.op) {
            return Some(format!(
                "op {} not supported by this stack (it runs: {})",
                case.op,
                join(self.ops().iter().map(|o| o.as_str()).collect())
            ));
        }
        match self.variants_by_op.get(&case.op) {
            Some(v) if !v.iter().any(|x| x.same(case.variant)) => Some(format!(
                "variant {} is not one of this stack's {} algorithms ({})",
                case.variant,
                case.op,
                join(v.iter().map(|v| v.as_str()).collect())
            )),
            _ => None,
        }
    }

    pub(crate) fn shape(&self) -> Shape {
        self.shape.unwrap_or_default()
    }

    pub(crate) fn resource(&self) -> Resource {
        self.resource.unwrap_or_default()
    }

    pub fn parser(&self) -> &str {
        self.parser.as_deref().unwrap_or("native")
    }

    /// Why this stack cannot run `case`, if it cannot (the reason of a `skipped` run).
    pub fn unsupported_reason(&self, case: &crate::model::case::Case) -> Option<String> {
        if let Some(reason) = self.op_reason(case) {
            return Some(reason);
        }
        if let Some(v) = &self.variants {
            if !v.iter().any(|x| x.same(case.variant)) {
                return Some(format!(
                    "variant {} not supported by this stack",
                    case.variant
                ));
            }
        }
        if let Some(d) = &self.dtypes {
            if !d.contains(&case.dtype) {
                return Some(format!("dtype {} not supported by this stack", case.dtype));
            }
        }
        if let Some(p) = &self.platforms {
            if !p.contains(&case.platform) {
                return Some(format!(
                    "platform {} not supported by this stack",
                    case.platform
                ));
            }
        }
        if let Some(c) = &self.counts {
            if !c.allows(case.count) {
                return Some(format!("count {} outside this stack's limits", case.count));
            }
        }
        if let Some(min) = self.min_p.filter(|m| case.p < *m) {
            return Some(format!("p = {} below this stack's min_p = {min}", case.p));
        }
        if let Some(max) = self.max_p.filter(|m| case.p > *m) {
            return Some(format!("p = {} above this stack's max_p = {max}", case.p));
        }
        let max_nodes = self.max_nodes.unwrap_or(1);
        if case.nodes > max_nodes {
            return Some(format!(
                "nodes = {} above this stack's max_nodes = {max_nodes}{}",
                case.nodes,
                if self.max_nodes.is_none() {
                    " (a stack that does not declare max_nodes runs on one node)"
                } else {
                    ""
                }
            ));
        }
        if let Some(k) = self
            .p_multiple_of
            .filter(|k| *k > 0 && !case.p.is_multiple_of(*k))
        {
            return Some(format!(
                "p = {} not a multiple of this stack's p_multiple_of = {k}",
                case.p
            ));
        }
        for text in self.constraints.iter().flatten() {
            match constraint::holds(text, case) {
                Ok(true) => {}
                Ok(false) => {
                    return Some(format!(
                        "this stack's constraint `{text}` does not hold (variant {}, p = {}, count = {})",
                        case.variant, case.p, case.count
                    ))
                }
                Err(e) => return Some(e),
            }
        }
        None
    }

    /// Why a stack that takes only consecutive device ids (`contiguous_devices`) cannot be given
    /// `case`'s devices by this pool, if it cannot: pinned ids with a gap, or no window of P
    /// consecutive ids inside one group. Pure; the reason of a planned `skipped` run.
    /// `pool` is the plan's device ids, `pinned` whether cases keep their own ids.
    pub(crate) fn placement_reason(
        &self,
        case: &crate::model::case::Case,
        pool: &[u32],
        pinned: bool,
    ) -> Option<String> {
        if self.contiguous_devices != Some(true)
            || !matches!(self.resource(), Resource::Npu | Resource::Gpu)
            || pool.is_empty()
            // Too few devices at all is the plan error every stack gets, not a skip.
            || (!pinned && case.p as usize > pool.len())
        {
            return None;
        }
        let join = |ids: &[u32]| ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let consecutive = |ids: &[u32]| ids.windows(2).all(|w| w[1] == w[0] + 1);
        if pinned {
            return (!consecutive(&case.device_ids)).then(|| {
                format!(
                    "pinned device ids {} are not consecutive and this stack takes only a range lo-hi (contiguous_devices)",
                    join(&case.device_ids)
                )
            });
        }
        let p = case.p as usize;
        // Consecutive ids anywhere in the pool (across topology groups, as placement falls
        // back to when no group holds P).
        let mut ids = pool.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let fits = p <= ids.len() && ids.windows(p.max(1)).any(consecutive);
        (!fits).then(|| {
            format!(
                "this stack takes only consecutive device ids (a range lo-hi) and the pool ({}) has no {p} consecutive ids",
                join(pool)
            )
        })
    }

    /// Why a profiled run of `kind` on `case` is a planned skip, if it is: `cpu` and
    /// `counters` need a CPU stack (campaign runs `perf` around its processes on this machine);
    /// an upstream kind needs the stack's `[stacks.NAME.profile.KIND]` and a case its program
    /// does not refuse the kind for. Pure: whether `perf` works here is the engine's question.
    pub(crate) fn profile_reason(
        &self,
        kind: crate::model::profile::ProfileKind,
        case: &crate::model::case::Case,
    ) -> Option<String> {
        if kind.by_perf() {
            return (self.resource() != Resource::Cpu).then(|| {
                format!(
                    "`{}` profiles are made with perf around a CPU stack's processes; this stack runs on {} devices (its own profile kinds: {})",
                    kind.name(),
                    format!("{:?}", self.resource()).to_lowercase(),
                    self.profile_kinds()
                )
            });
        }
        let Some(spec) = self.profile.get(&kind) else {
            return Some(format!(
                "this stack does not say how to switch `{}` on (no [stacks.NAME.profile.{}]; its profile kinds: {})",
                kind.name(),
                kind.name(),
                self.profile_kinds()
            ));
        };
        for r in &spec.refuse {
            match constraint::holds(&r.when, case) {
                Ok(false) => {}
                Ok(true) => return Some(r.reason.clone()),
                Err(e) => return Some(e),
            }
        }
        None
    }

    /// The profile kinds this stack makes, for messages.
    fn profile_kinds(&self) -> String {
        let mut kinds: Vec<&str> = Vec::new();
        if self.resource() == Resource::Cpu {
            kinds.extend(["cpu", "counters"]);
        }
        kinds.extend(self.profile.keys().map(|k| k.name()));
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    }

    /// Every `where` constraint and profile `refuse.when` that cannot be evaluated on `case` (a
    /// name that is no case field, a type error, fuel spent), as `(key, why)`: what validation
    /// refuses before a run would turn it into a skip of every case.
    pub(crate) fn constraint_problems(
        &self,
        case: &crate::model::case::Case,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, text) in self.constraints.iter().flatten().enumerate() {
            if let Err(e) = constraint::holds(text, case) {
                out.push((format!("where[{i}]"), e));
            }
        }
        for (kind, spec) in &self.profile {
            for (i, r) in spec.refuse.iter().enumerate() {
                if let Err(e) = constraint::holds(&r.when, case) {
                    out.push((format!("profile.{}.refuse[{i}].when", kind.name()), e));
                }
            }
        }
        out
    }

    /// Check the `where` constraints compile (plan validation names the stack and the key,
    /// `where[i]` or `profile.KIND.refuse[i].when`).
    pub(crate) fn check_constraints(&self) -> Result<(), (String, String)> {
        for (i, text) in self.constraints.iter().flatten().enumerate() {
            constraint::compile(text).map_err(|e| (format!("where[{i}]"), e))?;
        }
        for (kind, spec) in &self.profile {
            for (i, r) in spec.refuse.iter().enumerate() {
                constraint::compile(&r.when).map_err(|e| {
                    let key = format!("profile.{}.refuse[{i}].when", kind.name());
                    (key.clone(), format!("{key}: {e}"))
                })?;
            }
        }
        Ok(())
    }
}

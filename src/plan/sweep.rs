//! The sweep: a validated plan → its cases, lazily, in a documented and stable order.
//!
//! Order: the Cartesian product of the axes in file order (first axis varies slowest; `[case]`
//! supplies every other field), each point completed (device_ids `0..p` unless given, rounds
//! from `[rounds]` unless `warmup_rounds`/`timed_rounds` are given), then dropped if it matches
//! an `[[exclude]]` rule, then kept only if the `[filter] where` expression (and the command
//! line's `--filter`) is true. With `[cases] files`, the seed case files are the points instead.
//! Nothing is collected: a million cases stream in constant memory. This module never prints.

use itertools::Itertools;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use minijinja::value::{Enumerator, Object};
use minijinja::{Environment, Expression, UndefinedBehavior};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::case::{set_field, Case, Variant, CASE_FIELDS, DERIVED_FIELDS};
use crate::model::plan::Plan;

/// Names a filter expression may use: the case fields, the derived ones, and `case_id`.
pub(crate) fn filter_names() -> impl Iterator<Item = &'static str> {
    CASE_FIELDS
        .iter()
        .chain(DERIVED_FIELDS.iter())
        .copied()
        .chain(std::iter::once("case_id"))
}

fn filter_env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        // A misspelled name must be an error, not a silently false filter.
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(crate::model::limits::FUEL_EXPRESSION));
        env
    })
}

/// A compiled filter expression (compiled once, evaluated per case).
pub(crate) struct Filter {
    text: String,
    expr: Expression<'static, 'static>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Filter").field(&self.text).finish()
    }
}

impl Filter {
    /// Compile, and reject names that are not case fields (with a suggestion).
    pub(crate) fn compile(text: &str) -> std::result::Result<Filter, String> {
        crate::model::limits::check_expression(text)
            .map_err(|why| format!("filter expression refused: {why}"))?;
        let env = filter_env();
        let expr = env
            .compile_expression_owned(text.to_string())
            .map_err(|e| {
                format!(
                    "filter expression `{text}` does not parse: {}",
                    error_text(&e)
                )
            })?;
        let mut unknown: Vec<String> = expr
            .undeclared_variables(false)
            .into_iter()
            .filter(|n| !filter_names().any(|f| f == n) && !env.globals().any(|(g, _)| g == n))
            .collect();
        unknown.sort();
        if let Some(name) = unknown.first() {
            let hint = crate::plan::diag::did_you_mean(name, filter_names());
            return Err(format!(
                "filter expression uses unknown name `{name}`{hint}; case fields in scope: {}",
                filter_names().join(", ")
            ));
        }
        Ok(Filter {
            text: text.to_string(),
            expr,
        })
    }

    /// Does `text` compile? (The message says why not.)
    pub(crate) fn check(text: &str) -> std::result::Result<(), String> {
        Filter::compile(text).map(|_| ())
    }

    /// Is the expression true for this case?
    pub(crate) fn matches(&self, case: &Case) -> std::result::Result<bool, String> {
        let view = minijinja::Value::from_object(CaseView(case.clone()));
        self.expr.eval(view).map(|v| v.is_true()).map_err(|e| {
            format!(
                "filter `{}` failed on {}: {}",
                self.text,
                case.case_id(),
                error_text(&e)
            )
        })
    }
}

fn error_text(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(detail) => format!("{} ({detail})", e.kind()),
        None => e.kind().to_string(),
    }
}

/// A case as the filter sees it: its fields by name, computed on lookup.
#[derive(Debug)]
struct CaseView(Case);

impl Object for CaseView {
    fn get_value(self: &Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        let c = &self.0;
        let key = key.as_str()?;
        Some(match key {
            "case_id" => c.case_id().into(),
            "n_bytes" => c.n_bytes().into(),
            "window_nbytes" => c.window_nbytes().into(),
            "size_tier" => c.size_tier().into(),
            "bytes_per_rank_per_round" => c.bytes_per_rank_per_round().into(),
            _ => field(c, key)?,
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&[])
    }
}

/// One field of a case as JSON (exclude rules, filters, tables).
pub(crate) fn field_value(c: &Case, name: &str) -> Option<Value> {
    field(c, name)
}

/// One primary field of a case as any value type both JSON and the filter's minijinja values
/// convert from (one list of fields for both).
fn field<V>(c: &Case, name: &str) -> Option<V>
where
    V: for<'a> From<&'a str> + From<u32> + From<u64> + From<Option<i64>> + From<Vec<u32>>,
{
    Some(match name {
        "variant" => c.variant.as_str().into(),
        "p" => c.p.into(),
        "count" => c.count.into(),
        "dtype" => c.dtype.as_str().into(),
        "device_ids" => c.device_ids.clone().into(),
        "platform" => c.platform.as_str().into(),
        "runtime" => c.runtime.as_str().into(),
        "input_formula" => c.input_formula.as_str().into(),
        "golden" => c.golden.as_str().into(),
        "orch_profile" => c.orch_profile.as_str().into(),
        "orch_tier" => c.orch_tier.as_str().into(),
        "block_dim" => c.block_dim.into(),
        "aicpu_thread_num" => c.aicpu_thread_num.into(),
        "core_num" => c.core_num.into(),
        "warmup_rounds" => c.warmup_rounds.into(),
        "timed_rounds" => c.timed_rounds.into(),
        "measure" => c.measure.as_str().into(),
        "nodes" => c.nodes.into(),
        "ranks_per_node" => c.ranks_per_node().into(),
        "placement" => c.placement.as_str().into(),
        "op" => c.op.as_str().into(),
        "root" => match c.root {
            Some(r) => r.into(),
            None => None::<i64>.into(),
        },
        _ => return None,
    })
}

/// Copy one field from `src` to `dst` (axis values are held as typed scratch cases).
fn copy_field(dst: &mut Case, src: &Case, field: &str) {
    match field {
        "variant" => dst.variant = src.variant,
        "p" => dst.p = src.p,
        "count" => dst.count = src.count,
        "dtype" => dst.dtype = src.dtype,
        "device_ids" => dst.device_ids.clone_from(&src.device_ids),
        "platform" => dst.platform = src.platform,
        "runtime" => dst.runtime.clone_from(&src.runtime),
        "input_formula" => dst.input_formula.clone_from(&src.input_formula),
        "golden" => dst.golden.clone_from(&src.golden),
        "orch_profile" => dst.orch_profile.clone_from(&src.orch_profile),
        "orch_tier" => dst.orch_tier.clone_from(&src.orch_tier),
        "block_dim" => dst.block_dim = src.block_dim,
        "aicpu_thread_num" => dst.aicpu_thread_num = src.aicpu_thread_num,
        "core_num" => dst.core_num = src.core_num,
        "warmup_rounds" => dst.warmup_rounds = src.warmup_rounds,
        "timed_rounds" => dst.timed_rounds = src.timed_rounds,
        "nodes" => dst.nodes = src.nodes,
        "ranks_per_node" => dst.ranks_per_node = src.ranks_per_node,
        "placement" => dst.placement = src.placement,
        "op" => dst.op = src.op,
        "root" => dst.root = src.root,
        _ => dst.measure.clone_from(&src.measure),
    }
}

fn field_eq(a: &Case, b: &Case, field: &str) -> bool {
    match field {
        "variant" => a.variant == b.variant,
        "p" => a.p == b.p,
        "count" => a.count == b.count,
        "dtype" => a.dtype == b.dtype,
        "device_ids" => a.device_ids == b.device_ids,
        "platform" => a.platform == b.platform,
        "core_num" => a.core_num == b.core_num,
        "warmup_rounds" => a.warmup_rounds == b.warmup_rounds,
        "timed_rounds" => a.timed_rounds == b.timed_rounds,
        "block_dim" => a.block_dim == b.block_dim,
        "aicpu_thread_num" => a.aicpu_thread_num == b.aicpu_thread_num,
        "op" => a.op == b.op,
        "root" => a.root == b.root,
        other => field_value(a, other) == field_value(b, other),
    }
}

/// A typed value of one field, held in a scratch case.
fn scratch(field: &str, v: &Value) -> Result<Case> {
    let mut c = Case::new(Variant::Mesh, 2, 1);
    set_field(&mut c, field, v).map_err(|m| Error::Usage(format!("{field}: {m}")))?;
    Ok(c)
}

/// An `[[exclude]]` rule: every key must match one of its values.
struct Rule {
    keys: Vec<(&'static str, Vec<Case>)>,
}

impl Rule {
    fn new(rule: &std::collections::BTreeMap<String, Value>) -> Result<Rule> {
        let mut keys = Vec::new();
        for (name, value) in rule {
            let field = static_field(name)?;
            let options = match value {
                Value::Array(items) => items
                    .iter()
                    .map(|v| scratch(field, v))
                    .collect::<Result<_>>()?,
                v => vec![scratch(field, v)?],
            };
            keys.push((field, options));
        }
        Ok(Rule { keys })
    }

    fn matches(&self, case: &Case) -> bool {
        self.keys
            .iter()
            .all(|(f, opts)| opts.iter().any(|o| field_eq(case, o, f)))
    }
}

fn static_field(name: &str) -> Result<&'static str> {
    CASE_FIELDS
        .iter()
        .find(|f| **f == name)
        .copied()
        .ok_or_else(|| Error::Usage(format!("`{name}` is not a case field")))
}

/// Where the points come from.
enum Points<'p> {
    Product {
        axes: Vec<(&'static str, Vec<Case>)>,
        index: Vec<usize>,
        /// Number of the next point (0-based, in sweep order) and the end of the window.
        next: u64,
        end: u64,
        /// The first point has not been made yet (every axis must be applied).
        fresh: bool,
        done: bool,
        explicit_devices: bool,
        explicit_warmup: bool,
        explicit_timed: bool,
        explicit_p: bool,
        explicit_nodes: bool,
        rounds: crate::model::plan::Rounds,
        /// `root` and `golden` before normalization (`[case]` or the default): normalizing a
        /// point to its op rewrites them, so each point starts again from these (or from its
        /// axis value).
        base_root: Option<u32>,
        base_golden: String,
        /// `p`, `nodes`, `ranks_per_node` and `placement` before [`Case::complete_layout`]
        /// (`[case]` or the default): completing a point's layout rewrites them (one node
        /// drops `ranks_per_node`), so each point starts again from these (or its axis value) —
        /// else `[case] ranks_per_node = 2` was lost after a one-node point of a `nodes` axis.
        base_layout: (u32, u32, u32, crate::model::case::RankPlacement),
        /// The axes on a layout field, and on `root` or `golden`: the ones each point applies
        /// again after restoring the bases above (found once, not by name for every point).
        layout_axes: Vec<usize>,
        late_axes: Vec<usize>,
    },
    Files {
        files: &'p [PathBuf],
        next: u64,
        end: u64,
    },
}

/// The lazy case iterator returned by [`cases`]. `next_ref` lends the current case without
/// copying it (what listings of millions of cases use); `Iterator::next` hands out clones.
pub(crate) struct Cases<'p> {
    points: Points<'p>,
    current: Case,
    rules: Vec<Rule>,
    filters: Vec<Filter>,
    /// How many points each `[[exclude]]` rule dropped so far.
    pub(crate) excluded_by: Vec<u64>,
    /// How many points the filters dropped so far.
    pub(crate) filtered: u64,
    /// Which stacks run which (op, variant): a point no stack runs is not a case.
    claims: super::variants::Claims,
}

/// The cases of `plan`, lazily: axes product (first axis slowest) → `[[exclude]]` → `[filter]`
/// ANDed with `extra_filter` (the command line's `--filter`). A bad `extra_filter` is a
/// usage error; a filter that fails on a case yields that error in place of the case.
pub(crate) fn cases<'p>(plan: &'p Plan, extra_filter: Option<&str>) -> Result<Cases<'p>> {
    cases_on(plan, &plan.stacks, extra_filter)
}

/// [`cases`] for the stacks `stacks` of the plan (`--stacks` narrows them): the variant axis
/// walks what those stacks run (`plan::variants`), and a point none of them runs is no case.
pub(crate) fn cases_on<'p>(
    plan: &'p Plan,
    stacks: &[String],
    extra_filter: Option<&str>,
) -> Result<Cases<'p>> {
    let claims = super::variants::Claims::resolve(plan, stacks)?;
    let mut filters = Vec::new();
    if let Some(f) = &plan.filter {
        filters.push(Filter::compile(f).map_err(|m| Error::invalid(&plan.source, m))?);
    }
    if let Some(f) = extra_filter {
        filters.push(Filter::compile(f).map_err(|m| Error::Usage(format!("--filter: {m}")))?);
    }
    let rules = plan
        .excludes
        .iter()
        .map(Rule::new)
        .collect::<Result<Vec<_>>>()?;
    let mut current = Case::new(Variant::Mesh, 2, 1);
    let points = if plan.case_files.is_empty() {
        for (name, v) in &plan.case_defaults {
            set_field(&mut current, name, v)
                .map_err(|m| Error::invalid(&plan.source, format!("case.{name}: {m}")))?;
        }
        // The variant axis walks every variant some stack runs (the plan's names first), where
        // the plan put its variant axis, else last (fastest: a point's variants together).
        let variant_axis = || -> Result<(&'static str, Vec<Case>)> {
            let values = (claims.candidates().iter())
                .map(|v| scratch("variant", &Value::String(v.to_string())))
                .collect::<Result<Vec<_>>>()?;
            Ok(("variant", values))
        };
        let mut axes = Vec::new();
        for axis in &plan.axes {
            if axis.name == "variant" {
                axes.push(variant_axis()?);
                continue;
            }
            let field = static_field(&axis.name)?;
            let values = axis
                .values
                .iter()
                .map(|v| scratch(field, v))
                .collect::<Result<Vec<_>>>()?;
            axes.push((field, values));
        }
        if !axes.iter().any(|(f, _)| *f == "variant") {
            axes.push(variant_axis()?);
        }
        let given =
            |f: &str| plan.case_defaults.contains_key(f) || plan.axes.iter().any(|a| a.name == f);
        let axes_on = |fields: &[&str]| -> Vec<usize> {
            (axes.iter().enumerate())
                .filter(|(_, (f, _))| fields.contains(f))
                .map(|(i, _)| i)
                .collect()
        };
        let layout_axes = axes_on(&["p", "nodes", "ranks_per_node", "placement"]);
        let late_axes = axes_on(&["root", "golden"]);
        Points::Product {
            done: axes.iter().any(|(_, v)| v.is_empty()),
            fresh: true,
            index: vec![0; axes.len()],
            next: 0,
            end: u64::MAX,
            axes,
            explicit_devices: given("device_ids"),
            explicit_warmup: given("warmup_rounds"),
            explicit_timed: given("timed_rounds"),
            explicit_p: given("p"),
            explicit_nodes: given("nodes"),
            rounds: plan.rounds,
            base_root: current.root,
            base_golden: current.golden.clone(),
            base_layout: (
                current.p,
                current.nodes,
                current.ranks_per_node,
                current.placement,
            ),
            layout_axes,
            late_axes,
        }
    } else {
        Points::Files {
            files: &plan.case_files,
            next: 0,
            end: u64::MAX,
        }
    };
    Ok(Cases {
        points,
        current,
        excluded_by: vec![0; rules.len()],
        rules,
        filters,
        filtered: 0,
        claims,
    })
}

impl Points<'_> {
    /// Make the next point in `case`; `None` when the sweep is over.
    fn advance(&mut self, case: &mut Case) -> Option<Result<()>> {
        match self {
            Points::Files { files, next, end } => {
                if *next >= *end {
                    return None;
                }
                let path = files.get(usize::try_from(*next).ok()?)?;
                *next += 1;
                Some(Case::load(path).map(|c| *case = c))
            }
            Points::Product {
                axes,
                index,
                next,
                end,
                fresh,
                done,
                explicit_devices,
                explicit_warmup,
                explicit_timed,
                explicit_p,
                explicit_nodes,
                rounds,
                base_root,
                base_golden,
                base_layout,
                layout_axes,
                late_axes,
            } => {
                if *done || *next >= *end {
                    return None;
                }
                *next += 1;
                if *fresh {
                    for ((field, values), &i) in axes.iter().zip(index.iter()) {
                        copy_field(case, &values[i], field);
                    }
                    *fresh = false;
                } else {
                    // Odometer: the last axis varies fastest; only the axes that moved are
                    // copied into the case.
                    let mut k = index.len();
                    loop {
                        if k == 0 {
                            *done = true;
                            return None;
                        }
                        k -= 1;
                        index[k] += 1;
                        if index[k] < axes[k].1.len() {
                            break;
                        }
                        index[k] = 0;
                    }
                    for j in k..index.len() {
                        let (field, values) = &axes[j];
                        copy_field(case, &values[index[j]], field);
                    }
                }
                (case.p, case.nodes, case.ranks_per_node, case.placement) = *base_layout;
                for &a in layout_axes.iter() {
                    let (field, values) = &axes[a];
                    copy_field(case, &values[index[a]], field);
                }
                case.complete_layout(*explicit_p, *explicit_nodes);
                if !*explicit_devices {
                    case.device_ids.clear();
                    // A p above the maximum (nodes × ranks_per_node) is refused by the case's
                    // checks; its ids are not made (millions of them, in every message).
                    if case.p <= crate::model::case::MAX_P {
                        case.device_ids.extend(0..case.p);
                    }
                }
                let (w, t) = rounds.resolve(case.count);
                if !*explicit_warmup {
                    case.warmup_rounds = w;
                }
                if !*explicit_timed {
                    case.timed_rounds = t;
                }
                case.root = *base_root;
                case.golden.clone_from(base_golden);
                for &a in late_axes.iter() {
                    let (field, values) = &axes[a];
                    copy_field(case, &values[index[a]], field);
                }
                case.normalize_op();
                Some(Ok(()))
            }
        }
    }
}

impl Points<'_> {
    /// How many points the sweep has (before `[[exclude]]` and filters).
    fn total(&self) -> u64 {
        match self {
            Points::Files { files, .. } => files.len() as u64,
            Points::Product { axes, .. } => axes
                .iter()
                .fold(1u64, |n, (_, v)| n.saturating_mul(v.len() as u64)),
        }
    }

    /// Make only the points numbered `range` (sweep order) from now on.
    fn window(&mut self, range: std::ops::Range<u64>) {
        let total = self.total();
        match self {
            Points::Files { next, end, .. } => {
                *next = range.start;
                *end = range.end;
            }
            Points::Product {
                axes,
                index,
                next,
                end,
                fresh,
                done,
                ..
            } => {
                *next = range.start;
                *end = range.end;
                *done = range.start >= total;
                if !*done {
                    // Mixed-radix digits of the point number, the last axis fastest; the next
                    // point copies every axis into the case.
                    let mut rest = range.start;
                    for (i, (_, values)) in axes.iter().enumerate().rev() {
                        let n = values.len() as u64;
                        index[i] = (rest % n) as usize;
                        rest /= n;
                    }
                    *fresh = true;
                }
            }
        }
    }
}

impl Cases<'_> {
    /// How many points the sweep makes before `[[exclude]]` and filters drop some: the range
    /// of point numbers [`Cases::window`] takes.
    pub(crate) fn points(&self) -> u64 {
        self.points.total()
    }

    /// Restrict the sweep to the points numbered `range` (0-based, sweep order, before
    /// `[[exclude]]` and filters), from any state: the cases of consecutive windows, in
    /// order, are the cases of the whole sweep. Listings split a sweep into blocks this way
    /// and make them on two threads.
    pub(crate) fn window(&mut self, range: std::ops::Range<u64>) {
        self.points.window(range);
    }

    /// Which stacks run which case (`plan::variants`).
    pub(crate) fn claims(&self) -> &super::variants::Claims {
        &self.claims
    }

    /// The next case, lent: valid until the next call.
    pub(crate) fn next_ref(&mut self) -> Option<Result<&Case>> {
        'points: loop {
            if let Err(e) = self.points.advance(&mut self.current)? {
                return Some(Err(e));
            }
            if !self.claims.claimed(&self.current) {
                continue 'points;
            }
            for (i, rule) in self.rules.iter().enumerate() {
                if rule.matches(&self.current) {
                    self.excluded_by[i] += 1;
                    continue 'points;
                }
            }
            for f in &self.filters {
                match f.matches(&self.current) {
                    Ok(true) => {}
                    Ok(false) => {
                        self.filtered += 1;
                        continue 'points;
                    }
                    Err(m) => return Some(Err(Error::Usage(m))),
                }
            }
            return Some(Ok(&self.current));
        }
    }
}

/// The command line's `--filter` must leave at least one case: a filter that drops everything
/// is bad input (exit 2, as a plan whose `[filter]` drops everything), refused before any run
/// dir exists. Walks the sweep only up to its first case.
pub(crate) fn require_some(plan: &Plan, extra_filter: Option<&str>) -> Result<()> {
    let Some(expr) = extra_filter else {
        return Ok(());
    };
    let mut it = cases(plan, Some(expr))?;
    match it.next_ref() {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(e),
        None => Err(no_case_left(expr, it.filtered)),
    }
}

/// The one message for a `--filter` that leaves nothing.
pub(crate) fn no_case_left(expr: &str, dropped: u64) -> Error {
    Error::Usage(format!(
        "--filter `{expr}` leaves no case of the plan (it dropped {dropped}); nothing to run"
    ))
}

impl Iterator for Cases<'_> {
    type Item = Result<Case>;

    fn next(&mut self) -> Option<Result<Case>> {
        self.next_ref().map(|r| r.cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_rejects_unknown_names_with_suggestion() {
        let err = Filter::compile("cont > 4").unwrap_err();
        assert!(err.contains("did you mean `count`"), "{err}");
        assert!(Filter::compile("count % p == 0 or variant == 'mesh'").is_ok());
        assert!(Filter::compile("count >")
            .unwrap_err()
            .contains("does not parse"));
    }

    #[test]
    fn filter_sees_fields_and_derived_values() {
        let f = Filter::compile("n_bytes == 1024 and variant == 'mesh' and device_ids[1] == 1")
            .unwrap();
        let c = Case::new(Variant::Mesh, 2, 256);
        assert!(f.matches(&c).unwrap());
        let r = Case::new(Variant::Ring, 2, 256);
        assert!(!f.matches(&r).unwrap());
    }
}

//! Checks that need the whole plan: the report baseline is a stack of the plan, every case of
//! the product is a valid seed case (device_ids length, fp16 range, core_num, …) and fits the
//! device pool, and the product is not empty after `[[exclude]]` and `[filter]`.
//!
//! It walks the sweep once without keeping cases (a million-case plan stays flat in memory).
//! Problems repeated over many cases are reported once per field with a count, pointing at the
//! `[axes]`/`[case]` line that set the field. It must not print.

use std::collections::BTreeMap;

use super::diag::Spans;
use super::raw::Ctx;
use crate::error::{Diagnostic, Error};
use crate::model::case::Case;
use crate::model::plan::{DeviceKind, Placement, Plan};

/// The most cases a plan's product (before `[[exclude]]`/`[filter]`) or its seed files may make.
/// Validation walks every case, so this bounds its time; documented in docs/plan-format.md.
pub(crate) const MAX_CASES: u64 = 1_000_000;

/// The fields `case_id` is made of.
const ID_FIELDS: &[&str] = &[
    "variant",
    "p",
    "count",
    "dtype",
    "platform",
    "device_ids",
    "core_num",
    "nodes",
    "placement",
    // p and nodes are in case_id, so ranks_per_node (p / nodes) is too.
    "ranks_per_node",
];

/// Problems of one kind: the first, located, and how many more cases had it.
struct Grouped {
    first: Diagnostic,
    more: u64,
}

#[derive(Default)]
struct Collector {
    errors: BTreeMap<String, Grouped>,
    warnings: BTreeMap<String, Grouped>,
}

impl Collector {
    /// Count one more case with problem `key` (looked up by reference: most cases only count).
    fn add(
        map: &mut BTreeMap<String, Grouped>,
        key: impl AsRef<str> + Into<String>,
        make: impl FnOnce() -> Diagnostic,
    ) {
        match map.get_mut(key.as_ref()) {
            Some(g) => g.more += 1,
            None => {
                map.insert(
                    key.into(),
                    Grouped {
                        first: make(),
                        more: 0,
                    },
                );
            }
        }
    }

    fn finish(map: BTreeMap<String, Grouped>) -> Vec<Diagnostic> {
        map.into_values()
            .map(|g| {
                let mut d = g.first;
                if g.more > 0 {
                    d.message
                        .push_str(&format!(" (and {} more cases like it)", g.more));
                }
                d
            })
            .collect()
    }
}

/// Locate a per-case problem at the line that set `field`, or at the file when it was defaulted.
fn at_field(cx: &Ctx<'_>, spans: &Spans, field: &str, message: String) -> Diagnostic {
    match spans.fields.get(field) {
        Some(span) => cx.src.at(span, Some(field), message),
        None => cx.src.whole(Some(field), message),
    }
}

/// The field a case problem is reported at: a `p` above the maximum that the plan does not
/// write is the product `nodes × ranks_per_node`, so it is named at the line of the factor
/// that makes it large (the larger of the two the plan writes), not at the whole file.
fn layout_field(spans: &Spans, case: &Case, field: String) -> String {
    if field != "p" || case.p <= crate::model::case::MAX_P || spans.fields.contains_key("p") {
        return field;
    }
    let factors = [
        ("nodes", case.nodes),
        ("ranks_per_node", case.ranks_per_node()),
    ];
    factors
        .into_iter()
        .filter(|(name, _)| spans.fields.contains_key(*name))
        .max_by_key(|(_, value)| *value)
        .map_or(field, |(name, _)| name.to_string())
}

fn name_case(case: &Case, msg: &str) -> String {
    let id = case.case_id();
    if msg.starts_with(&id) {
        msg.to_string()
    } else {
        format!("case {id}: {msg}")
    }
}

/// The report's baseline must be one of the plan's stacks.
pub(crate) fn check_baseline(cx: &mut Ctx<'_>, plan: &Plan, spans: &Spans) {
    if let Some(base) = &plan.report.baseline {
        if !plan.stacks.contains(base) {
            let msg = format!(
                "baseline `{base}` is not one of the plan's stacks ({})",
                plan.stacks.join(", ")
            );
            match &spans.baseline {
                Some(span) => cx.error(span, "report.baseline", msg),
                None => cx.diags.error(cx.src.whole(Some("report.baseline"), msg)),
            }
        }
    }
}

/// What sees each case of the check walk, with its claims mask (`plan::load_observing`).
pub(crate) type Observer<'a> = &'a mut dyn FnMut(&Plan, &crate::model::case::Case, u64);

/// Run every whole-plan check; records diagnostics in `cx`, fills `plan.case_count` and the
/// default device ids. `observer` sees every case the sweep makes.
pub(crate) fn check(
    cx: &mut Ctx<'_>,
    plan: &mut Plan,
    spans: &Spans,
    mut observer: Option<Observer<'_>>,
) {
    // Under Slurm the cluster grants devices: the local pool bounds nothing (docs/slurm.md).
    let pool_ids = if plan.run.executor == crate::model::plan::ExecutorKind::Slurm {
        Vec::new()
    } else {
        plan.devices.ids.clone()
    };
    let pinned = plan.devices.placement == Placement::Pinned;
    if !within_case_limit(cx, plan, spans) {
        return;
    }
    let mut out = Collector::default();
    let mut count = 0u64;
    // (case, stack) pairs: the runs of one repeat (a stack runs only its own variants).
    let mut pairs = 0u64;
    let mut max_p = 0u32;
    let mut max_id = 0u32;
    // case_id names the results folder, so two cases must never share it. Only axes on fields
    // that case_id does not show (or seed files) can collide; track ids only then.
    let may_collide = !plan.case_files.is_empty()
        || plan
            .axes
            .iter()
            .any(|a| a.values.len() > 1 && !ID_FIELDS.contains(&a.name.as_str()));
    let mut seen_ids = std::collections::HashSet::new();
    let allow_uneven = plan.campaign.allows(crate::model::plan::UNEVEN_CHUNKS);
    let mut iter = match crate::plan::sweep::cases(plan, None) {
        Ok(it) => it,
        Err(e) => {
            push_error(cx, spans, e);
            return;
        }
    };
    let claims = iter.claims().clone();
    while let Some(item) = iter.next_ref() {
        let case = match item {
            Ok(c) => c,
            Err(Error::Invalid(diags)) => {
                // A seed case file of `[cases] files` is bad: its own diagnostics say where.
                cx.diags.errors.extend(diags);
                continue;
            }
            Err(e) => {
                push_error(cx, spans, e);
                break;
            }
        };
        count += 1;
        let mask = claims.mask(case);
        pairs += crate::plan::variants::Claims::count_in(mask, plan.stacks.len());
        if let Some(observe) = observer.as_mut() {
            observe(plan, case, mask);
        }
        if may_collide && !seen_ids.insert(case.case_id()) {
            Collector::add(&mut out.errors, "duplicate", || {
                let axes: Vec<&str> = plan
                    .axes
                    .iter()
                    .map(|a| a.name.as_str())
                    .filter(|n| !ID_FIELDS.contains(n))
                    .collect();
                let msg = format!(
                    "two cases share case_id {} (case_id shows only {}; they differ in {}); exclude one or move that field to [case]",
                    case.case_id(),
                    ID_FIELDS.join(", "),
                    if axes.is_empty() { "fields of their seed files".to_string() } else { axes.join(", ") }
                );
                match axes.first() {
                    Some(f) => at_field(cx, spans, f, msg),
                    None => cx.src.whole(Some("cases.files"), msg),
                }
            });
        }
        max_p = max_p.max(case.p);
        max_id = (case.device_ids.iter()).fold(max_id, |m, &d| m.max(d));
        for (field, msg) in case.problems() {
            let field = layout_field(spans, case, field);
            Collector::add(
                &mut out.errors,
                format!(
                    "{field}:{}",
                    kind_of(msg.trim_start_matches(&case.case_id()))
                ),
                || at_field(cx, spans, &field, name_case(case, &msg)),
            );
        }
        check_pool(cx, spans, &mut out, case, &pool_ids, pinned);
        let warns = case.warns();
        if warns && !allow_uneven {
            Collector::add(&mut out.warnings, "uneven", || {
                let hint = format!(
                    "; if that is deliberate, say so with `[campaign] allow = [\"{}\"]`",
                    crate::model::plan::UNEVEN_CHUNKS
                );
                at_field(cx, spans, "count", case.warnings().join("; ") + &hint)
            });
        }
    }
    cx.diags.errors.extend(Collector::finish(out.errors));
    cx.diags.warnings.extend(Collector::finish(out.warnings));

    warn_idle_excludes(cx, spans, &iter.excluded_by);
    if count == 0 && !cx.diags.has_errors() {
        refuse_empty(cx, spans, iter.excluded_by.iter().sum(), iter.filtered);
    }
    plan.case_count = count;
    check_run_limit(cx, plan, count, pairs);
    if plan.devices.ids.is_empty() {
        plan.devices.ids = default_pool(plan.devices.kind, max_p, max_id);
    }
}

/// A case's devices against a local pool: more than the pool holds, or pinned outside it.
fn check_pool(
    cx: &mut Ctx<'_>,
    spans: &Spans,
    out: &mut Collector,
    case: &crate::model::case::Case,
    pool_ids: &[u32],
    pinned: bool,
) {
    if pool_ids.is_empty() {
        return;
    }
    let pool_text = format!("devices.ids = {:?}", pool_ids);
    if case.p as usize > pool_ids.len() {
        Collector::add(&mut out.errors, format!("pool:{}", case.p), || {
            at_field(
                cx,
                spans,
                "p",
                format!(
                    "case {} needs {} devices but the pool has only {} ({}); run it through Slurm (--executor slurm) or add devices",
                    case.case_id(),
                    case.p,
                    pool_ids.len(),
                    pool_text
                ),
            )
        });
    } else if pinned {
        if let Some(d) = case.device_ids.iter().find(|d| !pool_ids.contains(d)) {
            Collector::add(&mut out.errors, "pinned", || {
                at_field(
                    cx,
                    spans,
                    "device_ids",
                    format!(
                        "case {} is pinned to device {d}, which is not in the pool ({pool_text})",
                        case.case_id()
                    ),
                )
            });
        }
    }
}

/// An `[[exclude]]` rule that dropped no case is probably a typo: say which.
fn warn_idle_excludes(cx: &mut Ctx<'_>, spans: &Spans, excluded_by: &[u64]) {
    for (i, n) in excluded_by.iter().enumerate() {
        if *n == 0 {
            if let Some(span) = spans.excludes.get(i) {
                cx.warn(
                    span,
                    &format!("exclude[{i}]"),
                    "this rule drops no case (nothing matches it, or earlier rules already dropped those cases)".into(),
                );
            }
        }
    }
}

/// A plan whose rules and filter leave no case is an error, pointed at the filter or a rule.
fn refuse_empty(cx: &mut Ctx<'_>, spans: &Spans, dropped: u64, filtered: u64) {
    let msg = format!(
        "the plan makes no cases: [[exclude]] rules dropped {dropped} and the filter dropped {filtered}"
    );
    let span = spans
        .filter
        .clone()
        .or_else(|| spans.excludes.first().cloned());
    match span {
        Some(s) => cx.error(&s, "exclude", msg),
        None => cx.diags.error(cx.src.whole(None, msg)),
    }
}

/// The run limit `run` enforces, said at validate too (before hours of a huge sweep).
fn check_run_limit(cx: &mut Ctx<'_>, plan: &Plan, count: u64, pairs: u64) {
    // Sequential repeats count at their most: what the campaign may run.
    let runs = pairs.saturating_mul(u64::from(plan.run.repeats_max.max(1)));
    if runs > crate::model::plan::MAX_RUNS as u64 {
        let msg = format!(
            "the plan makes {runs} runs ({}), more than the maximum of {}; split it into several plans, or narrow it with [filter]/[[exclude]] or fewer repeats",
            super::variants::breakdown(
                count,
                plan.stacks.len() as u64,
                pairs,
                u64::from(plan.run.repeats_max.max(1))
            ),
            crate::model::plan::MAX_RUNS
        );
        cx.diags.error(cx.src.whole(Some("axes"), msg));
    }
}

/// Default pool: CPUs are logical slots (at least the largest P, so a P=8 plan still runs on a
/// 2-core machine); NPUs/GPUs default to the ids the cases name.
fn default_pool(kind: DeviceKind, max_p: u32, max_id: u32) -> Vec<u32> {
    let n = match kind {
        DeviceKind::Cpu => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            cpus.max(max_p)
        }
        DeviceKind::Npu | DeviceKind::Gpu => max_p.max(max_id.saturating_add(1)),
    };
    (0..n).collect()
}

/// Refuse a product larger than [`MAX_CASES`] before walking it (a typo such as an extra zero
/// in a range must not make `validate` run for hours).
fn within_case_limit(cx: &mut Ctx<'_>, plan: &Plan, spans: &Spans) -> bool {
    let product = if plan.case_files.is_empty() {
        plan.axes
            .iter()
            .fold(1u64, |n, a| n.saturating_mul(a.values.len() as u64))
    } else {
        plan.case_files.len() as u64
    };
    if product <= MAX_CASES {
        return true;
    }
    let sizes: Vec<String> = plan
        .axes
        .iter()
        .map(|a| format!("{} {}", a.values.len(), a.name))
        .collect();
    let msg = format!(
        "the plan makes {product} cases ({}), more than the maximum of {MAX_CASES}; split it into several plans or shorten an axis",
        if sizes.is_empty() { "seed files".to_string() } else { sizes.join(" × ") }
    );
    let longest = plan.axes.iter().max_by_key(|a| a.values.len());
    match longest.and_then(|a| spans.fields.get(&a.name)) {
        Some(span) => cx.error(
            span,
            &format!("axes.{}", longest.map_or("", |a| &a.name)),
            msg,
        ),
        None => cx.diags.error(cx.src.whole(Some("axes"), msg)),
    }
    false
}

/// The kind of a per-case message, without the case-specific numbers, for grouping.
fn kind_of(msg: &str) -> String {
    msg.chars()
        .filter(|c| !c.is_ascii_digit())
        .take(40)
        .collect()
}

fn push_error(cx: &mut Ctx<'_>, spans: &Spans, e: Error) {
    let msg = e.to_string();
    match &spans.filter {
        Some(span) => cx.error(span, "filter.where", msg),
        None => cx.diags.error(cx.src.whole(None, msg)),
    }
}

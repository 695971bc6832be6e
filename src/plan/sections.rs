//! The sweep sections of a plan: `[case]`, `[axes]`, `[[exclude]]`, `[filter]`, `[rounds]`
//! and `[cases]` → the model's defaults, axes, rules and seed files.
//!
//! Every value of a case field is type-checked where it is written (through `case::set_field`,
//! so the rules cannot drift from seed case files). Per-case rules that depend on several fields
//! (device_ids length, fp16 range) are `validate.rs`'s. Problems are recorded, never thrown.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use serde_json::Value;
use toml::de::DeValue;

use super::diag::Spans;
use super::diag::{did_you_mean, relative_to};
use super::raw::{entries, to_json, Ctx, Item};
use crate::model::case::{
    set_field, Case, Variant, CASE_FIELDS, DERIVED_FIELDS, GOLDENS, INPUT_FORMULAS, ORCH_PROFILES,
    ORCH_TIERS,
};
use crate::model::plan::{Axis, Plan, RoundRule};

/// Type-check one value of a case field; returns it as JSON.
pub(crate) fn case_value(
    cx: &mut Ctx<'_>,
    field: &str,
    item: &Item<'_>,
    path: &str,
) -> Option<Value> {
    let value = match to_json(item.get_ref()) {
        Ok(v) => v,
        Err(msg) => {
            cx.error(&item.span(), path, msg);
            return None;
        }
    };
    let mut scratch = Case::new(Variant::Mesh, 2, 1);
    if let Err(msg) = set_field(&mut scratch, field, &value) {
        cx.error(&item.span(), path, msg);
        return None;
    }
    let known: Option<&[&str]> = match field {
        "orch_profile" => Some(ORCH_PROFILES),
        "input_formula" => Some(INPUT_FORMULAS),
        "golden" => Some(GOLDENS),
        "orch_tier" => Some(ORCH_TIERS),
        _ => None,
    };
    if let (Some(list), Some(s)) = (known, value.as_str()) {
        if !list.contains(&s) {
            let hint = did_you_mean(s, list.iter().copied());
            cx.error(
                &item.span(),
                path,
                format!(
                    "unknown {field} `{s}`{hint}; expected one of: {}",
                    list.join(", ")
                ),
            );
            return None;
        }
    }
    if field == "timed_rounds" && value.as_u64() == Some(0) {
        cx.error(&item.span(), path, "timed_rounds must be >= 1".into());
        return None;
    }
    Some(value)
}

/// Report a key that is not a case field (derived fields get their own explanation).
fn unknown_case_key(
    cx: &mut Ctx<'_>,
    key: &str,
    span: &Range<usize>,
    section: &str,
    extra: &[&str],
) {
    let path = format!("{section}.{key}");
    if DERIVED_FIELDS.contains(&key) {
        cx.error(
            span,
            &path,
            format!("`{key}` is derived from the other fields and cannot be set"),
        );
        return;
    }
    let candidates = CASE_FIELDS.iter().chain(extra.iter()).copied();
    let hint = did_you_mean(key, candidates);
    cx.error(
        span,
        &path,
        format!(
            "unknown key `{key}` in [{section}]{hint}; expected a case field: {}",
            CASE_FIELDS.join(", ")
        ),
    );
}

/// `variant = "*"` (in `[case]` or `[axes]`): every algorithm of each stack (`plan::variants`).
fn every_variant(key: &str, item: &Item<'_>) -> bool {
    key == "variant" && matches!(item.get_ref(), DeValue::String(s) if s == "*")
}

pub(crate) fn read_case(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
    let Some(table) = cx.table(item, "case") else {
        return;
    };
    for e in entries(table) {
        if !CASE_FIELDS.contains(&e.key) {
            unknown_case_key(cx, e.key, &e.key_span, "case", &[]);
            continue;
        }
        let path = format!("case.{}", e.key);
        // Recorded even when the value is bad, so no "missing field" follows the type error.
        spans.fields.insert(e.key.to_string(), e.item.span());
        if every_variant(e.key, e.item) {
            plan.every_variant = true;
            continue;
        }
        if let Some(v) = case_value(cx, e.key, e.item, &path) {
            plan.case_defaults.insert(e.key.to_string(), v);
        }
    }
}

pub(crate) fn read_axes(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
    let Some(table) = cx.table(item, "axes") else {
        return;
    };
    for e in entries(table) {
        let path = format!("axes.{}", e.key);
        if e.key == "stacks" {
            spans.stacks = Some(e.item.span());
            if let Some(list) = cx.strings(e.item, &path) {
                plan.stacks = list;
            }
            continue;
        }
        if !CASE_FIELDS.contains(&e.key) {
            unknown_case_key(cx, e.key, &e.key_span, "axes", &["stacks"]);
            continue;
        }
        if let Some(case_span) = spans.fields.get(e.key).cloned() {
            cx.error(
                &case_span,
                &format!("case.{}", e.key),
                format!("`{}` is both a [case] default and an axis; keep one", e.key),
            );
        }
        spans.fields.insert(e.key.to_string(), e.item.span());
        if every_variant(e.key, e.item) {
            plan.every_variant = true;
            continue;
        }
        let Some(elems) = cx.array(e.item, &path) else {
            continue;
        };
        if elems.is_empty() {
            cx.error(
                &e.item.span(),
                &path,
                "an axis needs at least one value (an empty axis makes no cases)".into(),
            );
            continue;
        }
        let mut values: Vec<Value> = Vec::new();
        // Seen values by their JSON text: a set keeps a 100k-value axis linear.
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        for (i, elem) in elems.iter().enumerate() {
            let epath = format!("{path}[{i}]");
            if let Some(v) = case_value(cx, e.key, elem, &epath) {
                if !seen.insert(v.to_string()) {
                    cx.error(
                        &elem.span(),
                        &epath,
                        format!("value {v} appears twice in this axis"),
                    );
                } else {
                    values.push(v);
                }
            }
        }
        plan.axes.push(Axis {
            name: e.key.to_string(),
            values,
        });
    }
}

pub(crate) fn read_excludes(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
    let DeValue::Array(rules) = item.get_ref() else {
        cx.error(
            &item.span(),
            "exclude",
            "expected [[exclude]] tables (an array of tables)".into(),
        );
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let path = format!("exclude[{i}]");
        let Some(table) = cx.table(rule, &path) else {
            continue;
        };
        spans.excludes.push(rule.span());
        let mut out = BTreeMap::new();
        for e in entries(table) {
            if !CASE_FIELDS.contains(&e.key) {
                unknown_case_key(cx, e.key, &e.key_span, "exclude", &[]);
                continue;
            }
            let kpath = format!("{path}.{}", e.key);
            // A list means "any of" (for device_ids: a list of lists).
            let is_any_of = match e.item.get_ref() {
                DeValue::Array(a) => {
                    e.key != "device_ids" || a.iter().all(|x| x.get_ref().is_array())
                }
                _ => false,
            };
            if is_any_of {
                let DeValue::Array(a) = e.item.get_ref() else {
                    continue;
                };
                let vals: Vec<Value> = a
                    .iter()
                    .enumerate()
                    .filter_map(|(j, x)| case_value(cx, e.key, x, &format!("{kpath}[{j}]")))
                    .collect();
                out.insert(e.key.to_string(), Value::Array(vals));
            } else if let Some(v) = case_value(cx, e.key, e.item, &kpath) {
                let v = if e.key == "device_ids" {
                    Value::Array(vec![v])
                } else {
                    v
                };
                out.insert(e.key.to_string(), v);
            }
        }
        if table.is_empty() {
            cx.error(
                &rule.span(),
                &path,
                "an empty [[exclude]] would drop every case".into(),
            );
        }
        plan.excludes.push(out);
    }
}

pub(crate) fn read_filter(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
    let Some(table) = cx.table(item, "filter") else {
        return;
    };
    for e in cx.known_entries(table, "filter", &["where"]) {
        let Some(expr) = cx.string(e.item, "filter.where") else {
            continue;
        };
        spans.filter = Some(e.item.span());
        if let Err(msg) = crate::plan::sweep::Filter::check(&expr) {
            cx.error(&e.item.span(), "filter.where", msg);
        }
        plan.filter = Some(expr);
    }
}

pub(crate) fn read_rounds(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &Spans) {
    let Some(table) = cx.table(item, "rounds") else {
        return;
    };
    for e in cx.known_entries(table, "rounds", &["warmup", "timed"]) {
        let path = format!("rounds.{}", e.key);
        let rule = match e.item.get_ref() {
            DeValue::String(s) if s == "auto" => Some(RoundRule::Auto),
            DeValue::Integer(_) => {
                let min = u64::from(e.key == "timed");
                match cx.uint(e.item, &path, u64::from(crate::model::case::MAX_ROUNDS)) {
                    Some(n) if n >= min => Some(RoundRule::Fixed(n as u32)),
                    Some(_) => {
                        cx.error(&e.item.span(), &path, "timed rounds must be >= 1".into());
                        None
                    }
                    None => None,
                }
            }
            other => {
                cx.error(
                    &e.item.span(),
                    &path,
                    format!(
                        "expected \"auto\" or an integer, got {}",
                        super::raw::type_name(other)
                    ),
                );
                None
            }
        };
        let field = if e.key == "warmup" {
            "warmup_rounds"
        } else {
            "timed_rounds"
        };
        // Two places for one number: which one was meant is not for campaign to guess.
        if spans.fields.contains_key(field) {
            cx.error(
                &e.item.span(),
                &path,
                format!("`{field}` is also set in [case] or [axes]; give the round count in one place (remove this key or that one)"),
            );
        }
        if let Some(rule) = rule {
            if e.key == "warmup" {
                plan.rounds.warmup = rule;
            } else {
                plan.rounds.timed = rule;
            }
        }
    }
}

pub(crate) fn read_case_files(
    cx: &mut Ctx<'_>,
    item: &Item<'_>,
    plan: &mut Plan,
    axes: Option<&Range<usize>>,
) {
    let Some(table) = cx.table(item, "cases") else {
        return;
    };
    for e in cx.known_entries(table, "cases", &["files"]) {
        let Some(patterns) = cx.strings(e.item, "cases.files") else {
            continue;
        };
        if patterns.is_empty() {
            cx.error(
                &e.item.span(),
                "cases.files",
                "list at least one glob".into(),
            );
        }
        let mut files: Vec<PathBuf> = Vec::new();
        let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        for pat in &patterns {
            let full = relative_to(&plan.source, pat);
            let matched: Vec<PathBuf> = match glob::glob(&full.to_string_lossy()) {
                Ok(paths) => paths
                    .filter_map(|p| p.ok())
                    .filter(|p| p.is_file())
                    .collect(),
                Err(err) => {
                    cx.error(
                        &e.item.span(),
                        "cases.files",
                        format!("bad glob `{pat}`: {err}"),
                    );
                    continue;
                }
            };
            if matched.is_empty() {
                cx.error(
                    &e.item.span(),
                    "cases.files",
                    format!("`{pat}` matches no file (looked for {})", full.display()),
                );
            }
            for m in matched {
                if seen.insert(m.clone()) {
                    files.push(m);
                }
            }
        }
        plan.case_files = files;
    }
    if !plan.case_files.is_empty() && !plan.axes.is_empty() {
        let span = axes.cloned().unwrap_or(item.span());
        cx.error(
            &span,
            "axes",
            "[cases] files replace the axes product: keep only `stacks` in [axes]".into(),
        );
    }
}

/// A `root` given in [case] or [axes] when no op of the plan takes one (every op rootless, the
/// default allreduce included) would be dropped from every case without a word (issue 43,
/// item 4): refused at its line.
pub(crate) fn refuse_rootless_root(
    cx: &mut Ctx<'_>,
    plan: &crate::model::plan::Plan,
    spans: &Spans,
) {
    let Some(span) = spans.fields.get("root") else {
        return;
    };
    let ops = super::variants::swept_ops(plan);
    if !ops.iter().any(|o| o.has_root()) {
        let ops: Vec<&str> = ops.iter().map(|o| o.as_str()).collect();
        cx.error(
            span,
            "root",
            format!(
                "`root` means nothing for {}: only broadcast and reduce have a root; remove it, or add one of them to `op`",
                ops.join(", ")
            ),
        );
    }
}

/// p and count must come from [case] or [axes] (a bad value there is reported already);
/// `ranks_per_node` stands in for p (p = nodes × ranks_per_node). `variant` may be left out:
/// each stack then runs its default (`plan::variants`).
pub(crate) fn require_case_shape(cx: &mut Ctx<'_>, spans: &Spans, axes: Option<&Range<usize>>) {
    for field in ["p", "count"] {
        let derived = field == "p" && spans.fields.contains_key("ranks_per_node");
        if !spans.fields.contains_key(field) && !derived {
            let msg = format!(
                "no value for `{field}`: give it as an axis in [axes] or a default in [case]"
            );
            match axes {
                Some(span) => cx.error(span, &format!("axes.{field}"), msg),
                None => {
                    let d = cx.src.whole(Some(&format!("axes.{field}")), msg);
                    cx.diags.error(d);
                }
            }
        }
    }
}

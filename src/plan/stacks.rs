//! `[stacks.NAME]` tables and the `axes.stacks` list: which stacks a plan runs, and the
//! `--stacks a,b` selection on the command line.
//!
//! The table shape is `crate::model::stack::StackDef` (serde, unknown keys denied); this file only adds
//! located diagnostics with suggestions and the name rules. Resolving definitions against the
//! shipped ones for a run is the stack module's job.

use itertools::Itertools;
use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::diag::did_you_mean;
use super::diag::Spans;
use super::raw::{entries, Ctx, Item};
use crate::error::{Error, Result};
use crate::model::plan::Plan;
use crate::model::stack::StackDef;
use crate::stack::registry::shipped;

/// The keys `StackDef` accepts, read from its serde derive so this list cannot drift.
pub(crate) fn stackdef_keys() -> &'static [&'static str] {
    struct Capture(&'static [&'static str]);
    impl<'de> Deserializer<'de> for &mut Capture {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(
            self,
            _v: V,
        ) -> std::result::Result<V::Value, Self::Error> {
            Err(de::Error::custom("field capture only"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _v: V,
        ) -> std::result::Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("field capture only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut cap = Capture(&[]);
    let _ = StackDef::deserialize(&mut cap);
    cap.0
}

/// Only the `stacks` table of a plan, for serde's type checking with toml's spans.
#[derive(Deserialize)]
struct StacksOnly {
    #[serde(default)]
    stacks: BTreeMap<String, StackDef>,
}

pub(crate) fn read_defs(
    cx: &mut Ctx<'_>,
    item: &Item<'_>,
    text: &str,
) -> BTreeMap<String, StackDef> {
    let Some(table) = cx.table(item, "stacks") else {
        return BTreeMap::new();
    };
    let keys = stackdef_keys();
    let shipped = shipped();
    let before = cx.diags.errors.len();
    let mut needs_command = Vec::new();
    for e in entries(table) {
        let path = format!("stacks.{}", e.key);
        if let Err(msg) = crate::model::plan::check_campaign_name(e.key) {
            let msg = if e.key.len() > crate::model::plan::MAX_NAME_LEN {
                format!("stack {msg}")
            } else {
                format!(
                    "stack name `{}` must match [a-z0-9_-]+ (it becomes a folder name)",
                    e.key
                )
            };
            cx.error(&e.key_span, &path, msg);
        }
        let Some(def) = cx.table(e.item, &path) else {
            continue;
        };
        let mut has_command = false;
        for k in entries(def) {
            if k.key == "command" {
                has_command = true;
            }
            // serde reads `counts` as a list or as bounds and would ignore a stray key.
            if let (true, toml::de::DeValue::Table(t)) = (k.key == "counts", k.item.get_ref()) {
                cx.known_entries(t, &format!("{path}.counts"), &["min", "max"]);
            }
            if !keys.contains(&k.key) {
                let hint = did_you_mean(k.key, keys.iter().copied());
                cx.error(
                    &k.key_span,
                    &format!("{path}.{}", k.key),
                    format!(
                        "unknown key `{}` in [{path}]{hint}; expected one of: {}",
                        k.key,
                        keys.join(", ")
                    ),
                );
            }
        }
        if !has_command && !shipped.contains_key(e.key) {
            needs_command.push((e.key_span.clone(), path));
        }
    }
    for (span, path) in needs_command {
        cx.error(
            &span,
            &path,
            "a stack that is not shipped needs `command = [...]`".to_string()
                + &format!(" (shipped stacks: {})", shipped.keys().join(", ")),
        );
    }
    // After a problem the names are still known, so `axes.stacks` is not reported as well.
    let names_only = || -> BTreeMap<String, StackDef> {
        entries(table)
            .iter()
            .map(|e| (e.key.to_string(), StackDef::default()))
            .collect()
    };
    if cx.diags.errors.len() > before {
        return names_only();
    }
    match toml::from_str::<StacksOnly>(text) {
        Ok(s) => {
            for (name, def) in &s.stacks {
                let span_of = |key: &str| key_span(table, name, key).unwrap_or(item.span());
                if let Err((key, msg)) = def.check_constraints() {
                    let field = format!("stacks.{name}.{key}");
                    cx.error(&span_of(&key), &field, msg);
                }
                for (key, msg) in def.domain_problems() {
                    cx.error(&span_of(&key), &format!("stacks.{name}.{key}"), msg);
                }
            }
            s.stacks
        }
        Err(err) => {
            let span = err.span().unwrap_or(item.span());
            let field = key_at(table, &span).unwrap_or_else(|| "stacks".into());
            cx.error(&span, &field, err.message().trim_end().to_string());
            names_only()
        }
    }
}

/// Where `[stacks.NAME]`'s key `key` is written: its first part before `.` or `[`, and the
/// element of that array when the key goes on with `[i]` (`where[1]`).
fn key_span(table: &toml::de::DeTable<'_>, name: &str, key: &str) -> Option<Range<usize>> {
    let first = key.split(['.', '[']).next().unwrap_or(key);
    let (_, def) = table.iter().find(|(k, _)| k.get_ref().as_ref() == name)?;
    let toml::de::DeValue::Table(def) = def.get_ref() else {
        return None;
    };
    let (_, value) = def.iter().find(|(k, _)| k.get_ref().as_ref() == first)?;
    let index = (key[first.len()..].strip_prefix('['))
        .and_then(|rest| rest.split(']').next())
        .and_then(|i| i.parse::<usize>().ok());
    match (index, value.get_ref()) {
        (Some(i), toml::de::DeValue::Array(items)) => items.get(i).map(|e| e.span()),
        _ => None,
    }
    .or(Some(value.span()))
}

/// The `stacks.NAME.KEY` whose value holds `span` (where serde found a bad value), if any.
fn key_at(table: &toml::de::DeTable<'_>, span: &Range<usize>) -> Option<String> {
    let inside = |outer: Range<usize>| outer.start <= span.start && span.end <= outer.end;
    table.iter().find_map(|(name, def)| {
        let toml::de::DeValue::Table(def) = def.get_ref() else {
            return None;
        };
        let (key, _) = def.iter().find(|(_, v)| inside(v.span()))?;
        Some(format!("stacks.{}.{}", name.get_ref(), key.get_ref()))
    })
}

/// Every name in `axes.stacks` is shipped or defined in `[stacks]`; no name twice; not empty.
pub(crate) fn check_axis(cx: &mut Ctx<'_>, plan: &Plan, spans: &Spans) {
    let span: Range<usize> = spans.stacks.clone().unwrap_or(0..0);
    let located = spans.stacks.is_some();
    let report = |cx: &mut Ctx<'_>, msg: String| {
        if located {
            cx.error(&span, "axes.stacks", msg);
        } else {
            let d = cx.src.whole(Some("axes.stacks"), msg);
            cx.diags.error(d);
        }
    };
    if plan.stacks.is_empty() {
        report(cx, "list at least one stack".into());
    }
    let known = known_stacks(plan);
    // A census ahead of a sweep runs on a stack the sweep need not name.
    if let Some(c) = plan.census.as_ref().filter(|c| c.then_sweep) {
        if !known.contains(&c.stack) {
            let hint = did_you_mean(&c.stack, known.iter().map(String::as_str));
            let msg = format!(
                "unknown stack `{}`{hint}; shipped or defined in [stacks]: {}",
                c.stack,
                known.join(", ")
            );
            let d = cx.src.whole(Some("census.stack"), msg);
            cx.diags.error(d);
        }
    }
    for (i, name) in plan.stacks.iter().enumerate() {
        if plan.stacks[..i].contains(name) {
            report(cx, format!("stack `{name}` is listed twice"));
        } else if !known.contains(name) {
            let hint = did_you_mean(name, known.iter().map(String::as_str));
            report(
                cx,
                format!(
                    "unknown stack `{name}`{hint}; shipped or defined in [stacks]: {}",
                    known.join(", ")
                ),
            );
        }
    }
}

/// Variant names are free, but a variant no stack of the plan has (for any op it runs) is a
/// typo, not a plan: it is rejected naming the variants the plan's stacks do have. A stack that
/// lists no algorithms takes every name.
pub(crate) fn check_variants(cx: &mut Ctx<'_>, plan: &Plan, spans: &Spans) {
    let shipped = shipped();
    let mut supported: Vec<&str> = Vec::new();
    for name in &plan.stacks {
        let mut def = shipped.get(name).cloned().unwrap_or_default();
        if let Some(overlay) = plan.stack_defs.get(name) {
            def.overlay(overlay);
        }
        for op in def.ops().to_vec() {
            match def.algorithms(op) {
                None => return,
                Some(v) => supported.extend(v.iter().map(|v| v.as_str())),
            }
        }
    }
    supported.sort_unstable();
    supported.dedup();
    let values: Vec<String> = std::iter::once(plan.case_defaults.get("variant"))
        .flatten()
        .chain(
            plan.axes
                .iter()
                .filter(|a| a.name == "variant")
                .flat_map(|a| a.values.iter()),
        )
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let span = spans.fields.get("variant").cloned().unwrap_or(0..0);
    for v in values {
        if !supported.contains(&v.as_str()) {
            let hint = did_you_mean(&v, supported.iter().copied());
            cx.error(
                &span,
                "variant",
                format!(
                    "unknown variant `{v}`{hint}: no stack of this plan has it (they have: {}); leave `variant` out to run each stack's default",
                    supported.join(", ")
                ),
            );
        }
    }
}

fn known_stacks(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = shipped().into_keys().collect();
    for k in plan.stack_defs.keys() {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
}

/// The plan's stacks after a `--stacks a,b` selection (empty selection = all, in plan order).
/// Selected names keep the order given; each must be one of the plan's stacks.
pub(crate) fn select_stacks(plan: &Plan, selection: &[String]) -> Result<Vec<String>> {
    let wanted: Vec<&str> = selection
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(plan.stacks.clone());
    }
    let mut out: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    for name in wanted {
        if plan.stacks.iter().any(|s| s == name) {
            if !out.iter().any(|s| s == name) {
                out.push(name.to_string());
            }
        } else {
            let hint = did_you_mean(name, plan.stacks.iter().map(String::as_str));
            problems.push(format!(
                "--stacks: `{name}` is not a stack of this plan{hint} (its stacks: {})",
                plan.stacks.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Usage(problems.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_definition_is_within_its_domain() {
        for (name, def) in shipped() {
            assert_eq!(def.domain_problems(), Vec::new(), "shipped stack {name}");
        }
    }

    #[test]
    fn stackdef_keys_come_from_serde() {
        let keys = stackdef_keys();
        assert!(keys.contains(&"command"));
        assert!(keys.contains(&"no_output_timeout"));
        assert!(!keys.contains(&"comand"));
    }
}

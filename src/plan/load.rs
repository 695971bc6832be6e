//! `plan::load` / `plan::parse`: TOML text → validated [`Plan`].
//!
//! Owns the top-level table list and the sweep sections (`[campaign]`, `[case]`, `[axes]`,
//! `[[exclude]]`, `[filter]`, `[rounds]`, `[cases]`); `config.rs` reads the run-time sections,
//! `stacks.rs` the stack tables, `validate.rs` the cross-checks over the whole product. Every
//! problem is collected before failing so a user sees all of them at once.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use toml::de::{DeTable, DeValue};

use super::diag::{did_you_mean, relative_to, Source};
use super::model::{Axis, CampaignMeta, Plan, RoundRule, Rounds};
use super::raw::{entries, to_json, Ctx, Item};
use super::{config, stacks, validate};
use crate::case::{
    set_field, Case, Variant, CASE_FIELDS, DERIVED_FIELDS, GOLDENS, INPUT_FORMULAS, ORCH_PROFILES,
    ORCH_TIERS,
};
use crate::error::{Error, Result};

/// Every top-level table a plan may have.
pub const TOP_KEYS: &[&str] = &[
    "campaign", "case", "axes", "exclude", "filter", "rounds", "run", "devices", "stacks",
    "report", "slurm", "cases",
];

/// Where each case field got its value in the file (an axis array or a `[case]` entry), so
/// per-case problems can point at the line that caused them.
#[derive(Debug, Default)]
pub struct Spans {
    pub fields: HashMap<String, Range<usize>>,
    pub stacks: Option<Range<usize>>,
    pub filter: Option<Range<usize>>,
    pub excludes: Vec<Range<usize>>,
    pub devices: Option<Range<usize>>,
    pub baseline: Option<Range<usize>>,
}

/// Read and parse a plan file.
pub fn load(path: &Path) -> Result<Plan> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(&text, path)
}

/// Parse and validate plan text; `path` locates diagnostics and plan-relative files.
pub fn parse(text: &str, path: &Path) -> Result<Plan> {
    let src = Source::new(path, text);
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let message = format!("TOML syntax error: {}", e.message().trim_end());
            return Err(Error::Invalid(vec![src.at(&span, None, message)]));
        }
    };
    let mut cx = Ctx::new(&src);
    let mut spans = Spans::default();
    let mut sections: BTreeMap<&str, &Item<'_>> = BTreeMap::new();
    for e in cx.known_entries(doc.get_ref(), "", TOP_KEYS) {
        sections.insert(e.key, e.item);
    }

    let mut plan = Plan {
        source: path.to_path_buf(),
        hash: hash16(text.as_bytes()),
        text: text.to_string(),
        campaign: CampaignMeta {
            name: String::new(),
            description: String::new(),
        },
        case_defaults: BTreeMap::new(),
        axes: Vec::new(),
        stacks: vec!["host".to_string()],
        excludes: Vec::new(),
        filter: None,
        rounds: Rounds::default(),
        run: Default::default(),
        devices: Default::default(),
        stack_defs: BTreeMap::new(),
        report: Default::default(),
        slurm: Default::default(),
        case_files: Vec::new(),
        case_count: 0,
        warnings: Vec::new(),
    };

    read_campaign(&mut cx, sections.get("campaign").copied(), &mut plan);
    if let Some(item) = sections.get("case") {
        read_case(&mut cx, item, &mut plan, &mut spans);
    }
    let axes_span = sections.get("axes").map(|i| i.span());
    if let Some(item) = sections.get("axes") {
        read_axes(&mut cx, item, &mut plan, &mut spans);
    }
    if let Some(item) = sections.get("exclude") {
        read_excludes(&mut cx, item, &mut plan, &mut spans);
    }
    if let Some(item) = sections.get("filter") {
        read_filter(&mut cx, item, &mut plan, &mut spans);
    }
    if let Some(item) = sections.get("rounds") {
        read_rounds(&mut cx, item, &mut plan, &spans);
    }
    if let Some(item) = sections.get("cases") {
        read_case_files(&mut cx, item, &mut plan, axes_span.as_ref());
    }
    if !sections.contains_key("cases") {
        require_case_shape(&mut cx, &spans, axes_span.as_ref());
    }
    if let Some(item) = sections.get("stacks") {
        plan.stack_defs = stacks::read_defs(&mut cx, item, text);
    }
    stacks::check_axis(&mut cx, &plan, &spans);
    if let Some(item) = sections.get("run") {
        plan.run = config::read_run(&mut cx, item);
    }
    if let Some(item) = sections.get("devices") {
        spans.devices = Some(item.span());
        plan.devices = config::read_devices(&mut cx, item);
    }
    if let Some(item) = sections.get("report") {
        plan.report = config::read_report(&mut cx, item, path, &mut spans);
    }
    if let Some(item) = sections.get("slurm") {
        plan.slurm = config::read_slurm(&mut cx, item);
    }

    validate::check_baseline(&mut cx, &plan, &spans);
    // The product check needs well-formed sections; stop here if they are not.
    cx.diags.check()?;
    validate::check(&mut cx, &mut plan, &spans);
    cx.diags.check()?;
    plan.warnings = std::mem::take(&mut cx.diags.warnings);
    Ok(plan)
}

fn hash16(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn read_campaign(cx: &mut Ctx<'_>, item: Option<&Item<'_>>, plan: &mut Plan) {
    let Some(item) = item else {
        let d = cx.src.whole(
            Some("campaign.name"),
            "missing [campaign] table with `name = \"...\"` (it names the results folder)".into(),
        );
        cx.diags.error(d);
        return;
    };
    let Some(table) = cx.table(item, "campaign") else {
        return;
    };
    let known = cx.known_entries(table, "campaign", &["name", "description"]);
    let mut named = false;
    for e in known {
        match e.key {
            "name" => {
                named = true;
                if let Some(name) = cx.string(e.item, "campaign.name") {
                    if let Err(msg) = check_campaign_name(&name) {
                        cx.error(&e.item.span(), "campaign.name", msg);
                    }
                    plan.campaign.name = name;
                }
            }
            _ => {
                if let Some(d) = cx.string(e.item, "campaign.description") {
                    plan.campaign.description = d;
                }
            }
        }
    }
    if !named {
        cx.error(
            &item.span(),
            "campaign.name",
            "missing `name = \"...\"` (it names the results folder)".into(),
        );
    }
}

/// `[a-z0-9_-]+`: the name becomes a folder, so no separators, dots or upper case.
pub fn check_campaign_name(name: &str) -> std::result::Result<(), String> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "campaign name `{name}` must match [a-z0-9_-]+ (it becomes a folder name; no `/`, `..`, spaces or upper case)"
        ))
    }
}

/// Type-check one value of a case field; returns it as JSON.
pub fn case_value(cx: &mut Ctx<'_>, field: &str, item: &Item<'_>, path: &str) -> Option<Value> {
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

fn read_case(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
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
        if let Some(v) = case_value(cx, e.key, e.item, &path) {
            plan.case_defaults.insert(e.key.to_string(), v);
        }
    }
}

fn read_axes(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
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
        for (i, elem) in elems.iter().enumerate() {
            let epath = format!("{path}[{i}]");
            if let Some(v) = case_value(cx, e.key, elem, &epath) {
                if values.contains(&v) {
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

fn read_excludes(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
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

fn read_filter(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &mut Spans) {
    let Some(table) = cx.table(item, "filter") else {
        return;
    };
    for e in cx.known_entries(table, "filter", &["where"]) {
        let Some(expr) = cx.string(e.item, "filter.where") else {
            continue;
        };
        spans.filter = Some(e.item.span());
        if let Err(msg) = crate::sweep::Filter::check(&expr) {
            cx.error(&e.item.span(), "filter.where", msg);
        }
        plan.filter = Some(expr);
    }
}

fn read_rounds(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan, spans: &Spans) {
    let Some(table) = cx.table(item, "rounds") else {
        return;
    };
    for e in cx.known_entries(table, "rounds", &["warmup", "timed"]) {
        let path = format!("rounds.{}", e.key);
        let rule = match e.item.get_ref() {
            DeValue::String(s) if s == "auto" => Some(RoundRule::Auto),
            DeValue::Integer(_) => {
                let min = u64::from(e.key == "timed");
                match cx.uint(e.item, &path, u64::from(u32::MAX)) {
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
        if spans.fields.contains_key(field) {
            cx.warn(
                &e.item.span(),
                &path,
                format!("`{field}` is set in [case] or [axes]; that value wins over [rounds]"),
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

fn read_case_files(
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
                if !files.contains(&m) {
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

/// variant, p and count must come from [case] or [axes] (a bad value there is reported already).
fn require_case_shape(cx: &mut Ctx<'_>, spans: &Spans, axes: Option<&Range<usize>>) {
    for field in ["variant", "p", "count"] {
        if !spans.fields.contains_key(field) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{select_stacks, DeviceKind};
    use proptest::prelude::*;

    const BASE: &str = "[campaign]\nname = \"t\"\n\n[axes]\nvariant = [\"mesh\", \"ring\"]\np = [2, 4]\ncount = [256]\n";

    fn plan(extra: &str) -> Result<Plan> {
        parse(&format!("{BASE}{extra}"), Path::new("t.toml"))
    }

    fn messages(r: Result<Plan>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(_) => panic!("expected the plan to be rejected"),
        }
    }

    #[test]
    fn axes_keep_file_order_and_defaults_fill_in() {
        let p = plan("platform = [\"host\", \"a5\"]\n").unwrap();
        let names: Vec<&str> = p.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["variant", "p", "count", "platform"]);
        assert_eq!(p.stacks, ["host"]);
        assert_eq!(p.case_count, 8);
        assert_eq!(p.devices.kind, DeviceKind::Cpu);
        assert!(
            p.devices.ids.len() >= 4,
            "cpu pool is at least the largest p"
        );
    }

    #[test]
    fn a_plan_without_axes_is_one_case() {
        let p = parse(
            "[campaign]\nname = \"one\"\n[case]\nvariant = \"ring\"\np = 3\ncount = 9\n",
            Path::new("one.toml"),
        )
        .unwrap();
        let all: Vec<_> = crate::sweep::cases(&p, None).unwrap().collect();
        assert_eq!(all.len(), 1);
        assert_eq!(
            all[0].as_ref().unwrap().case_id(),
            "ring_p3_count9_fp32_a2a3_d0-1-2"
        );
    }

    #[test]
    fn exclude_lists_mean_any_of() {
        let p = plan("\n[[exclude]]\nvariant = \"ring\"\np = [2, 4]\n").unwrap();
        assert_eq!(p.case_count, 2);
    }

    #[test]
    fn explicit_rounds_win_over_rounds_table_with_a_warning() {
        let p = plan("\n[case]\ntimed_rounds = 9\n\n[rounds]\ntimed = 4\n").unwrap();
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(p.warnings[0].message.contains("wins over [rounds]"));
        let case = crate::sweep::cases(&p, None)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(case.timed_rounds, 9);
        assert_eq!(case.warmup_rounds, 3);
    }

    #[test]
    fn field_in_case_and_axes_is_an_error() {
        assert!(messages(plan("\n[case]\np = 2\n")).contains("both a [case] default and an axis"));
    }

    #[test]
    fn groups_must_be_inside_ids_and_baseline_a_stack() {
        let err = messages(plan(
            "\n[devices]\nkind = \"npu\"\nids = \"0-3\"\ngroups = [\"0-3\", \"4-7\"]\n\n[report]\nbaseline = \"hccl\"\n",
        ));
        assert!(
            err.contains("device 4 is in a group but not in devices.ids"),
            "{err}"
        );
        assert!(
            err.contains("baseline `hccl` is not one of the plan's stacks"),
            "{err}"
        );
    }

    #[test]
    fn run_section_is_typed() {
        let p =
            plan("\n[run]\ntimeout = \"90s\"\nretries = 2\norder = \"given\"\njobs = 3\n").unwrap();
        assert_eq!(p.run.timeout, std::time::Duration::from_secs(90));
        assert_eq!(p.run.retries, 2);
        assert_eq!(p.run.jobs, Some(3));
        let err = messages(plan(
            "\n[run]\ntimeout = \"ten minutes\"\norder = \"random\"\n",
        ));
        assert!(err.contains("run.timeout"), "{err}");
        assert!(err.contains("unknown value `random`"), "{err}");
    }

    #[test]
    fn axis_on_a_field_case_id_does_not_show_must_not_collide() {
        let err = messages(plan("orch_tier = [\"logical\", \"strict_window\"]\n"));
        assert!(err.contains("two cases share case_id"), "{err}");
    }

    #[test]
    fn stack_selection() {
        let p =
            plan("stacks = [\"host\", \"mine\"]\n\n[stacks.mine]\ncommand = [\"true\"]\n").unwrap();
        assert_eq!(select_stacks(&p, &[]).unwrap(), ["host", "mine"]);
        assert_eq!(select_stacks(&p, &["mine".into()]).unwrap(), ["mine"]);
        let err = select_stacks(&p, &["hccl".into()]).unwrap_err().to_string();
        assert!(err.contains("`hccl` is not a stack of this plan"), "{err}");
        assert!(messages(plan("stacks = [\"nccl\"]\n")).contains("unknown stack `nccl`"));
    }

    #[test]
    fn stack_table_types_are_checked_with_position() {
        let err = messages(plan(
            "stacks = [\"mine\"]\n\n[stacks.mine]\ncommand = [\"x\"]\nshape = 3\n",
        ));
        assert!(err.contains("t.toml:12:9"), "{err}");
        assert!(!err.contains("unknown stack"), "no follow-on error: {err}");
    }

    /// Fragments that reach deep into the parser when shuffled together.
    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("[campaign]\nname = \"x\"\n".to_string()),
            Just("[axes]\n".to_string()),
            Just("[case]\n".to_string()),
            Just("[[exclude]]\n".to_string()),
            Just("[filter]\nwhere = \"count > p\"\n".to_string()),
            Just("[rounds]\nwarmup = \"auto\"\n".to_string()),
            Just("[devices]\nids = \"0-3\"\ngroups = [[0, 9]]\n".to_string()),
            Just("[stacks.s]\ncommand = 1\n".to_string()),
            Just("[cases]\nfiles = [\"*.nothing\"]\n".to_string()),
            "(variant|p|count|dtype|device_ids|core_num|stacks|timed_rounds) = ".prop_map(|s| s),
            "\\[[0-9, \"a-z\\[\\]-]{0,12}\\]\n".prop_map(|s| s),
            "-?[0-9]{1,20}\n".prop_map(|s| s),
            "\"[a-z0-9_./]{0,8}\"\n".prop_map(|s| s),
            any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = parse(&text, Path::new("fuzz.toml"));
        }

        #[test]
        fn plan_shaped_text_never_panics(parts in proptest::collection::vec(fragment(), 0..14)) {
            let text = parts.concat();
            if let Err(e) = parse(&text, Path::new("fuzz.toml")) {
                prop_assert_eq!(e.exit_code(), crate::error::exit::BAD_INPUT);
            }
        }
    }
}

//! `plan::load` / `plan::parse`: TOML text → validated [`Plan`].
//!
//! Owns the top-level table list, `[campaign]`, and the order in which sections are read;
//! `sections.rs` reads the sweep sections, `config.rs` the run-time ones, `stacks.rs` the stack
//! tables, `validate.rs` the cross-checks over the whole product. Every problem is collected
//! before failing so a user sees all of them at once.

use std::collections::BTreeMap;
use std::path::Path;

use toml::de::DeTable;

use super::diag::{Source, Spans};
use super::raw::{Ctx, Item};
use super::sections::{
    read_axes, read_case, read_case_files, read_excludes, read_filter, read_rounds,
    refuse_rootless_root, require_case_shape,
};
use super::{census_plan, config, stacks, validate};
use crate::error::{Error, Result};
use crate::model::plan::{CampaignMeta, ExecutorKind, Plan, Rounds};

/// Every top-level table a plan may have.
pub(crate) const TOP_KEYS: &[&str] = &[
    "campaign", "case", "axes", "exclude", "filter", "rounds", "run", "devices", "stacks",
    "report", "slurm", "cases", "adapt", "census", "profile",
];

/// What a command line replaces in a plan before its whole-plan checks: `--executor` decides
/// whether the local device pool bounds the cases (under Slurm the cluster grants devices), and
/// `--repeats` how many runs the plan makes (the run limit counts the runs that will happen, so
/// `run --repeats 1` of a plan of a million cases is not refused for its `[run] repeats = 3`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Overrides {
    pub(crate) executor: Option<ExecutorKind>,
    pub(crate) repeats: Option<u32>,
    /// `--budget`: replaces `[run] budget`.
    pub(crate) budget: Option<std::time::Duration>,
}

/// Read and parse a plan file.
pub(crate) fn load(path: &Path) -> Result<Plan> {
    load_with(path, Overrides::default())
}

/// Read and parse a plan file as run with the command line's [`Overrides`].
pub(crate) fn load_with(path: &Path, cli: Overrides) -> Result<Plan> {
    let text = read_text(path)?;
    parse_with(&text, path, cli)
}

/// [`load`], showing `observer` every case of the check walk with its claims mask
/// (`plan::variants::Claims::mask`): whoever needs a count over the sweep (`validate`'s
/// planned runs) gets it from the walk the load makes anyway, not from a second walk of a
/// million cases. The plan it is shown is the plan as checked so far (its device pool is
/// defaulted only after the walk).
pub(crate) fn load_observing(path: &Path, observer: validate::Observer<'_>) -> Result<Plan> {
    let text = read_text(path)?;
    parse_observing(&text, path, Overrides::default(), Some(observer))
}

/// A plan file's text. Every way of not having one — missing, unreadable, a directory, not
/// UTF-8 — is bad input (exit 2) for every subcommand, with one wording.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    if path.is_dir() {
        return Err(Error::invalid(
            path,
            "is a directory; expected a plan file (.toml)",
        ));
    }
    let max = crate::model::file::MAX_INPUT_BYTES;
    crate::model::file::read_regular_text(path, max).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => e.to_string(),
        };
        match e.kind() {
            std::io::ErrorKind::InvalidData => Error::invalid(path, format!("the plan {why}")),
            _ => Error::invalid(path, format!("cannot read the plan: {why}")),
        }
    })
}

/// Parse and validate plan text; `path` locates diagnostics and plan-relative files.
#[cfg(test)]
pub(crate) fn parse(text: &str, path: &Path) -> Result<Plan> {
    parse_with(text, path, Overrides::default())
}

impl Overrides {
    /// Replace the plan's `[run]` settings the command line gives (`--executor`, `--repeats`:
    /// a fixed count, `--budget`), before the whole-plan checks count its runs.
    fn apply(self, plan: &mut Plan) {
        if let Some(executor) = self.executor {
            plan.run.executor = executor;
        }
        if let Some(repeats) = self.repeats {
            (plan.run.repeats, plan.run.repeats_max) = (repeats, repeats);
        }
        if let Some(budget) = self.budget {
            plan.run.budget = Some(budget);
        }
    }
}

/// [`parse`], with the command line's [`Overrides`] replacing the plan's `[run] executor` and
/// `[run] repeats` before the whole-plan checks.
pub(crate) fn parse_with(text: &str, path: &Path, cli: Overrides) -> Result<Plan> {
    parse_observing(text, path, cli, None)
}

fn parse_observing(
    text: &str,
    path: &Path,
    cli: Overrides,
    observer: Option<validate::Observer<'_>>,
) -> Result<Plan> {
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
            allow: Vec::new(),
        },
        case_defaults: BTreeMap::new(),
        axes: Vec::new(),
        every_variant: false,
        stacks: vec!["host".to_string()],
        excludes: Vec::new(),
        filter: None,
        rounds: Rounds::default(),
        run: Default::default(),
        devices: Default::default(),
        stack_defs: BTreeMap::new(),
        report: Default::default(),
        slurm: Default::default(),
        adapt: Default::default(),
        census: None,
        profile: Default::default(),
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
    if let Some(item) = sections.get("census") {
        census_plan::read(&mut cx, item, &mut plan);
        // The first section that would make cases of its own beside the census's.
        let sweep = (["axes", "cases", "exclude", "filter"].into_iter())
            .find_map(|s| sections.get(s).map(|i| (s, i.span())));
        census_plan::expand(&mut cx, item, &mut plan, &mut spans, sweep);
    }
    if !sections.contains_key("cases") && !sections.contains_key("census") {
        require_case_shape(&mut cx, &spans, axes_span.as_ref());
        refuse_rootless_root(&mut cx, &plan, &spans);
    }
    if let Some(item) = sections.get("stacks") {
        plan.stack_defs = stacks::read_defs(&mut cx, item, text);
    }
    stacks::check_axis(&mut cx, &plan, &spans);
    stacks::check_variants(&mut cx, &plan, &spans);
    if let Some(item) = sections.get("run") {
        plan.run = config::read_run(&mut cx, item);
    }
    cli.apply(&mut plan);
    if let Some(item) = sections.get("devices") {
        spans.devices = Some(item.span());
        plan.devices = config::read_devices(&mut cx, item);
    }
    census_plan::pool(&mut plan);
    if let Some(item) = sections.get("report") {
        plan.report = config::read_report(&mut cx, item, path, &mut spans);
    }
    plan.report.looks = crate::analysis::sequential::looks(plan.run.repeats, plan.run.repeats_max);
    if let Some(item) = sections.get("slurm") {
        plan.slurm = config::read_slurm(&mut cx, item);
    }
    if let Some(item) = sections.get("adapt") {
        read_adapt(&mut cx, item, &mut plan);
    }
    if let Some(item) = sections.get("profile") {
        plan.profile = super::profile_section::read_profile(&mut cx, item);
    }

    validate::check_baseline(&mut cx, &plan, &spans);
    // The product check needs well-formed sections; stop here if they are not.
    cx.diags.check()?;
    validate::check(&mut cx, &mut plan, &spans, observer);
    cx.diags.check()?;
    plan.warnings = std::mem::take(&mut cx.diags.warnings);
    Ok(plan)
}

/// `[adapt]`, checked against the sweep (a `count` axis of two or more sizes), and what the
/// report needs of it (the resolution and the plan's own sizes).
fn read_adapt(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan) {
    plan.adapt = config::read_adapt(cx, item);
    if !plan.adapt.crossover {
        return;
    }
    let counts: Vec<u64> = (plan.axes.iter())
        .filter(|a| a.name == "count")
        .flat_map(|a| a.values.iter().filter_map(serde_json::Value::as_u64))
        .collect();
    if counts.len() < 2 {
        cx.error(
            &item.span(),
            "adapt.crossover",
            "adding sizes where the winner changes needs a `count` axis with two or more sizes"
                .into(),
        );
    }
    plan.report.adapt = Some((plan.adapt.resolution, counts));
}

fn hash16(bytes: &[u8]) -> String {
    crate::model::digest::sha256_hex(bytes, 8)
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
    let known = cx.known_entries(table, "campaign", &["name", "description", "allow"]);
    let mut named = false;
    for e in known {
        match e.key {
            "name" => {
                named = true;
                if let Some(name) = cx.string(e.item, "campaign.name") {
                    if let Err(msg) = crate::model::plan::check_campaign_name(&name) {
                        cx.error(&e.item.span(), "campaign.name", msg);
                    }
                    plan.campaign.name = name;
                }
            }
            "allow" => {
                let Some(elems) = cx.array(e.item, "campaign.allow") else {
                    continue;
                };
                for (i, elem) in elems.into_iter().enumerate() {
                    let field = format!("campaign.allow[{i}]");
                    let known = crate::model::plan::ALLOWABLE_WARNINGS;
                    if let Some(name) = cx.choice(elem, &field, known) {
                        plan.campaign.allow.push(name);
                    }
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

/// A diagnostic about the plan key at dotted `field` (`stacks.mine.command[0]`,
/// `stacks.mine.env.FOO`), located at the deepest part of that path the plan's text has, so a
/// problem found after loading (a stack definition that does not render) still points at its
/// line. Keys the plan does not write (a shipped definition's) get the file without a line.
pub(crate) fn locate(plan: &Plan, field: &str, message: String) -> crate::error::Diagnostic {
    let src = Source::new(&plan.source, &plan.text);
    let Ok(doc) = DeTable::parse(&plan.text) else {
        return src.whole(Some(field), message);
    };
    let mut span = None;
    let mut table = Some(doc.get_ref());
    for part in field.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let Some(found) = table.and_then(|t| t.get(key)) else {
            break;
        };
        span = Some(found.span());
        let mut item = found;
        if let (Some(i), toml::de::DeValue::Array(a)) = (index, found.get_ref()) {
            if let Some(elem) = a.get(i) {
                span = Some(elem.span());
                item = elem;
            }
        }
        table = match item.get_ref() {
            toml::de::DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    match span {
        Some(s) if s != (0..0) => src.at(&s, Some(field), message),
        _ => src.whole(Some(field), message),
    }
}

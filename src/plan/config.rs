//! The run-time sections of a plan: `[run]`, `[devices]`, `[report]`, `[slurm]` → model structs.
//!
//! Each key is type-checked and range-checked where it is written; cross-section rules (the
//! baseline is one of the stacks, the pool fits every case) live in `validate.rs`. Nothing here
//! touches devices or the file system beyond checking that a named template exists.

use crate::model::limits::{check_template, MAX_TEMPLATE_BYTES};
use crate::model::results::Metric;
use std::path::Path;

use super::diag::relative_to;
use super::diag::Spans;
use super::raw::{Ctx, Item};
use crate::model::plan::{
    AdaptConfig, DeviceKind, DevicesConfig, ExecutorKind, Placement, ReportConfig, RunConfig,
    SlurmConfig, StackOrder, AUTO_REPEATS_MAX, KNOWN_FIGURES, RETRY_STATUSES,
};

/// Upper bound of `[run] repeats` (and `--repeats`): beyond it a typo, not a plan.
pub(crate) const MAX_REPEATS: u64 = 1000;

/// `[run] repeats`: a fixed count (`5`), sequential repeats (`{ min = 3, max = 20 }`), or
/// `"auto"` (from 3 up to `AUTO_REPEATS_MAX`). Returns (min, max).
fn read_repeats(cx: &mut Ctx<'_>, it: &Item<'_>, path: &str) -> Option<(u32, u32)> {
    use toml::de::DeValue;
    let at_least = crate::analysis::verdict::MIN_REPEATS as u64;
    match it.get_ref() {
        DeValue::String(s) if s.as_ref() == "auto" => Some((at_least as u32, AUTO_REPEATS_MAX)),
        DeValue::String(s) => {
            cx.error(
                &it.span(),
                path,
                format!("unknown value `{s}`; expected a number of repeats, \"auto\" or {{ min = 3, max = 20 }}"),
            );
            None
        }
        DeValue::Table(_) => {
            let table = cx.table(it, path)?;
            let (mut min, mut max) = (None, None);
            for e in cx.known_entries(table, path, &["min", "max"]) {
                let field = format!("{path}.{}", e.key);
                let n = cx.uint(e.item, &field, MAX_REPEATS)?;
                if e.key == "min" {
                    if n < at_least {
                        cx.error(&e.item.span(), &field, format!("sequential repeats start at {at_least} or more: a verdict needs {at_least} repeats a side"));
                        return None;
                    }
                    min = Some(n as u32);
                } else {
                    max = Some(n as u32);
                }
            }
            let (Some(min), Some(max)) = (min, max) else {
                cx.error(
                    &it.span(),
                    path,
                    "sequential repeats need both `min` and `max`, e.g. { min = 3, max = 20 }"
                        .into(),
                );
                return None;
            };
            if max < min {
                cx.error(
                    &it.span(),
                    path,
                    format!("max ({max}) is below min ({min})"),
                );
                return None;
            }
            Some((min, max))
        }
        _ => match cx.uint(it, path, MAX_REPEATS) {
            Some(0) => {
                cx.error(&it.span(), path, "repeats must be >= 1".into());
                None
            }
            Some(n) => Some((n as u32, n as u32)),
            None => None,
        },
    }
}

/// `[adapt]`: `crossover` (boolean) and `resolution` (a number above 1, at most 16).
pub(crate) fn read_adapt(cx: &mut Ctx<'_>, item: &Item<'_>) -> AdaptConfig {
    use toml::de::DeValue;
    let mut adapt = AdaptConfig::default();
    let Some(table) = cx.table(item, "adapt") else {
        return adapt;
    };
    for e in cx.known_entries(table, "adapt", &["crossover", "resolution"]) {
        let path = format!("adapt.{}", e.key);
        match e.key {
            "crossover" => adapt.crossover = cx.boolean(e.item, &path).unwrap_or(false),
            _ => {
                let x = match e.item.get_ref() {
                    DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
                    DeValue::Integer(i) => i.as_str().parse::<f64>().ok(),
                    _ => None,
                };
                match x.filter(|x| *x > 1.0 && *x <= 16.0) {
                    Some(x) => adapt.resolution = x,
                    None => cx.error(
                        &e.item.span(),
                        &path,
                        "expected a number above 1 and at most 16 (hi/lo of a crossover's bracket, e.g. 1.25)".into(),
                    ),
                }
            }
        }
    }
    adapt
}

pub(crate) fn read_run(cx: &mut Ctx<'_>, item: &Item<'_>) -> RunConfig {
    let mut run = RunConfig::default();
    let Some(table) = cx.table(item, "run") else {
        return run;
    };
    const KEYS: &[&str] = &[
        "timeout",
        "no_output_timeout",
        "retries",
        "retry_on",
        "cooldown",
        "order",
        "jobs",
        "exclusive",
        "seed",
        "executor",
        "quarantine_after",
        "repeats",
        "budget",
    ];
    for e in cx.known_entries(table, "run", KEYS) {
        let path = format!("run.{}", e.key);
        let it = e.item;
        match e.key {
            "timeout" => {
                if let Some(d) = cx.duration(it, &path) {
                    if d.is_zero() {
                        cx.error(
                            &it.span(),
                            &path,
                            "a timeout must be longer than zero".into(),
                        );
                    }
                    run.timeout = d;
                }
            }
            "no_output_timeout" => {
                run.no_output_timeout = cx.duration(it, &path);
                // Zero would kill every run at its first instant of silence.
                if run.no_output_timeout.is_some_and(|d| d.is_zero()) {
                    cx.error(
                        &it.span(),
                        &path,
                        "a timeout must be longer than zero (leave it out for none)".into(),
                    );
                }
            }
            "retries" => run.retries = cx.uint(it, &path, 100).map_or(run.retries, |n| n as u32),
            "retry_on" => {
                if let Some(list) = cx.strings(it, &path) {
                    for s in &list {
                        if !RETRY_STATUSES.contains(&s.as_str()) {
                            cx.error(
                                &it.span(),
                                &path,
                                format!(
                                    "cannot retry on `{s}`; expected some of: {}",
                                    RETRY_STATUSES.join(", ")
                                ),
                            );
                        }
                    }
                    run.retry_on = list;
                }
            }
            "cooldown" => run.cooldown = cx.duration(it, &path).unwrap_or(run.cooldown),
            "order" => {
                run.order = match cx.choice(it, &path, &["shuffled", "given"]).as_deref() {
                    Some("given") => StackOrder::Given,
                    _ => StackOrder::Shuffled,
                }
            }
            "jobs" => match cx.uint(it, &path, 4096) {
                Some(0) => cx.error(&it.span(), &path, "jobs must be >= 1".into()),
                Some(n) => run.jobs = Some(n as usize),
                None => {}
            },
            "exclusive" => run.exclusive = cx.boolean(it, &path).unwrap_or(false),
            "seed" => run.seed = cx.uint(it, &path, i64::MAX as u64),
            "repeats" => {
                if let Some((min, max)) = read_repeats(cx, it, &path) {
                    (run.repeats, run.repeats_max) = (min, max);
                }
            }
            "budget" => {
                if let Some(d) = cx.duration(it, &path) {
                    if d.is_zero() {
                        cx.error(
                            &it.span(),
                            &path,
                            "a budget must be longer than zero".into(),
                        );
                    } else {
                        run.budget = Some(d);
                    }
                }
            }
            "executor" => {
                let names = ExecutorKind::names();
                run.executor = (cx.choice(it, &path, &names).as_deref())
                    .and_then(ExecutorKind::named)
                    .unwrap_or_default()
            }
            _ => {
                run.quarantine_after = cx
                    .uint(it, &path, 1000)
                    .map_or(run.quarantine_after, |n| n as u32)
            }
        }
    }
    run
}

/// Device ids as `"0-7"`, `"0,2,4-6"` or a list of integers; `None` after reporting a problem.
pub(crate) fn id_list(cx: &mut Ctx<'_>, item: &Item<'_>, path: &str) -> Option<Vec<u32>> {
    let ids = if let toml::de::DeValue::String(s) = item.get_ref() {
        match parse_id_ranges(s) {
            Ok(ids) => ids,
            Err(msg) => {
                cx.error(&item.span(), path, msg);
                return None;
            }
        }
    } else {
        let elems = cx.array(item, path)?;
        let mut ids = Vec::new();
        for (i, e) in elems.into_iter().enumerate() {
            ids.push(cx.uint(e, &format!("{path}[{i}]"), u64::from(u32::MAX))? as u32);
        }
        ids
    };
    let mut seen = std::collections::BTreeSet::new();
    for id in &ids {
        if !seen.insert(*id) {
            cx.error(
                &item.span(),
                path,
                format!("device id {id} is listed twice"),
            );
            return None;
        }
    }
    if ids.is_empty() {
        cx.error(&item.span(), path, "list at least one device id".into());
        return None;
    }
    Some(ids)
}

/// `"0-3,6"` → `[0, 1, 2, 3, 6]`.
pub(crate) fn parse_id_ranges(text: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("`{text}` is not a device list (expected e.g. \"0-7\" or \"0,2,4-6\")");
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        // "0,,1", a leading or trailing comma: a typo, not a shorter list.
        if part.is_empty() {
            return Err(bad());
        }
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: u32 = a.trim().parse().map_err(|_| bad())?;
        let b: u32 = b.trim().parse().map_err(|_| bad())?;
        if b < a || b - a > 65536 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    Ok(out)
}

pub(crate) fn read_devices(cx: &mut Ctx<'_>, item: &Item<'_>) -> DevicesConfig {
    let mut dev = DevicesConfig::default();
    let Some(table) = cx.table(item, "devices") else {
        return dev;
    };
    const KEYS: &[&str] = &["kind", "ids", "groups", "placement", "probe"];
    let mut groups_span = None;
    for e in cx.known_entries(table, "devices", KEYS) {
        let path = format!("devices.{}", e.key);
        let it = e.item;
        match e.key {
            "kind" => {
                dev.kind = match cx.choice(it, &path, &["npu", "gpu", "cpu"]).as_deref() {
                    Some("npu") => DeviceKind::Npu,
                    Some("gpu") => DeviceKind::Gpu,
                    _ => DeviceKind::Cpu,
                }
            }
            "ids" => dev.ids = id_list(cx, it, &path).unwrap_or_default(),
            "groups" => {
                groups_span = Some(it.span());
                if let Some(elems) = cx.array(it, &path) {
                    for (i, g) in elems.into_iter().enumerate() {
                        if let Some(ids) = id_list(cx, g, &format!("{path}[{i}]")) {
                            dev.groups.push(ids);
                        }
                    }
                }
            }
            "placement" => {
                dev.placement = match cx.choice(it, &path, &["auto", "pinned"]).as_deref() {
                    Some("pinned") => Placement::Pinned,
                    _ => Placement::Auto,
                }
            }
            _ => {
                if let Some(argv) = cx.strings(it, &path) {
                    if argv.is_empty() {
                        cx.error(
                            &it.span(),
                            &path,
                            "a probe needs a program (argv list)".into(),
                        );
                    }
                    // The size and NUL rules of every stack template (it is one: rendered per
                    // device, in a run's scope, by `engine::stack_check` and the health probe).
                    let elems = cx.array(it, &path).unwrap_or_default();
                    for (i, arg) in argv.iter().enumerate() {
                        if let Err(why) = check_template(arg, MAX_TEMPLATE_BYTES) {
                            let span = elems.get(i).map_or(it.span(), |e| e.span());
                            cx.error(
                                &span,
                                &format!("{path}[{i}]"),
                                format!("template refused: {why}"),
                            );
                        }
                    }
                    dev.probe = Some(argv);
                }
            }
        }
    }
    if let Some(span) = groups_span {
        if dev.ids.is_empty() && !dev.groups.is_empty() {
            cx.error(
                &span,
                "devices.groups",
                "groups need `ids` to say which devices exist".into(),
            );
        }
        let mut owner = std::collections::BTreeMap::new();
        for (i, g) in dev.groups.iter().enumerate() {
            if let Some(stray) = g.iter().find(|d| !dev.ids.contains(d)) {
                cx.error(
                    &span,
                    "devices.groups",
                    format!("device {stray} is in a group but not in devices.ids"),
                );
            }
            for d in g {
                if let Some(first) = owner.insert(*d, i) {
                    cx.error(
                        &span,
                        "devices.groups",
                        format!("device {d} is in group {first} and in group {i}; groups must be disjoint"),
                    );
                }
            }
        }
    }
    dev
}

pub(crate) fn read_report(
    cx: &mut Ctx<'_>,
    item: &Item<'_>,
    plan_file: &Path,
    spans: &mut Spans,
) -> ReportConfig {
    let mut rep = ReportConfig::default();
    let Some(table) = cx.table(item, "report") else {
        return rep;
    };
    for e in cx.known_entries(
        table,
        "report",
        &[
            "baseline",
            "template",
            "figures",
            "title",
            "compare_metric",
            "equivalence",
        ],
    ) {
        let path = format!("report.{}", e.key);
        let it = e.item;
        match e.key {
            "baseline" => {
                spans.baseline = Some(it.span());
                rep.baseline = cx.string(it, &path);
            }
            "template" => {
                if let Some(t) = cx.string(it, &path) {
                    let full = relative_to(plan_file, &t);
                    if !full.is_file() {
                        cx.error(
                            &it.span(),
                            &path,
                            format!(
                                "template {} does not exist or is not a regular file (paths are relative to the plan)",
                                full.display()
                            ),
                        );
                    } else if let Err(msg) = check_report_template(&full) {
                        cx.error(&it.span(), &path, msg);
                    }
                    rep.template = Some(full);
                }
            }
            "figures" => {
                if let Some(elems) = cx.array(it, &path) {
                    for (i, f) in elems.into_iter().enumerate() {
                        if let Some(name) = cx.choice(f, &format!("{path}[{i}]"), KNOWN_FIGURES) {
                            rep.figures.push(name);
                        }
                    }
                }
            }
            "compare_metric" => {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.as_str()).collect();
                rep.compare_metric = cx.choice(it, &path, &names).and_then(|m| Metric::parse(&m));
            }
            "equivalence" => {
                if let Some(text) = cx.string(it, &path) {
                    match margin(&text) {
                        Some(m) => rep.equivalence = Some(m),
                        None => cx.error(
                            &it.span(),
                            &path,
                            format!(
                                "`{text}` is no equivalence margin: expected a percentage above 0 and below 100, such as \"5%\""
                            ),
                        ),
                    }
                }
            }
            _ => rep.title = cx.string(it, &path),
        }
    }
    rep
}

/// A margin such as `5%` or `2.5 %` as a fraction (0.05): above 0, below 100 %.
fn margin(text: &str) -> Option<f64> {
    let pct: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (pct > 0.0 && pct < 100.0).then_some(pct / 100.0)
}

pub(crate) fn read_slurm(cx: &mut Ctx<'_>, item: &Item<'_>) -> SlurmConfig {
    let mut s = SlurmConfig::default();
    let Some(table) = cx.table(item, "slurm") else {
        return s;
    };
    const KEYS: &[&str] = &[
        "partition",
        "account",
        "qos",
        "time_limit",
        "extra_args",
        "devices_arg",
        "poll_interval",
        "max_jobs",
    ];
    for e in cx.known_entries(table, "slurm", KEYS) {
        let path = format!("slurm.{}", e.key);
        let it = e.item;
        match e.key {
            "partition" => s.partition = cx.string(it, &path),
            "account" => s.account = cx.string(it, &path),
            "qos" => s.qos = cx.string(it, &path),
            "time_limit" => {
                s.time_limit = cx.string(it, &path);
                if let Some(Err(msg)) = s.time_limit.as_deref().map(check_time_limit) {
                    cx.error(&it.span(), &path, msg);
                }
            }
            "extra_args" => s.extra_args = cx.strings(it, &path).unwrap_or_default(),
            "devices_arg" => {
                if let Some(t) = cx.string(it, &path) {
                    let env = minijinja::Environment::new();
                    if let Err(why) = check_template(&t, MAX_TEMPLATE_BYTES) {
                        cx.error(&it.span(), &path, format!("template refused: {why}"));
                    } else if let Err(err) = env.template_from_str(&t) {
                        cx.error(&it.span(), &path, format!("not a valid template: {err}"));
                    }
                    s.devices_arg = Some(t);
                }
            }
            "max_jobs" => match cx.uint(it, &path, 100_000) {
                Some(0) => cx.error(&it.span(), &path, "must be at least 1".into()),
                n => s.max_jobs = n.map(|n| n as usize),
            },
            _ => {
                s.poll_interval = cx.duration(it, &path);
                if let Some(d) = s.poll_interval {
                    if !(MIN_POLL_INTERVAL..=MAX_POLL_INTERVAL).contains(&d) {
                        cx.error(
                            &it.span(),
                            &path,
                            "expected a poll interval between 10ms and 1h".into(),
                        );
                        s.poll_interval = None;
                    }
                }
            }
        }
    }
    s
}

/// A report template is checked when the plan is, not after the campaign has run: a regular
/// file within the size limit, minijinja syntax, no `include`/`extends`/`import` (the report
/// renders one template alone), operators within `model::limits`.
fn check_report_template(file: &std::path::Path) -> Result<(), String> {
    use crate::model::limits::{check_template, MAX_REPORT_TEMPLATE_BYTES};
    let name = file.display();
    let text = crate::model::file::read_regular_text(file, MAX_REPORT_TEMPLATE_BYTES as u64)
        .map_err(|e| format!("template {name} cannot be read: it {e}"))?;
    check_template(&text, MAX_REPORT_TEMPLATE_BYTES)
        .map_err(|why| format!("template {name} refused: {why}"))?;
    let env = minijinja::Environment::new();
    env.template_from_str(&text)
        .map_err(|e| format!("template {name} does not parse: {e}"))?;
    let refers = ["include", "extends", "import", "from"].iter().find(|w| {
        text.split("{%").skip(1).any(|block| {
            block
                .trim_start_matches(['-', '+'])
                .trim_start()
                .starts_with(*w)
        })
    });
    if let Some(word) = refers {
        return Err(format!(
            "template {name} uses `{{% {word} %}}`: a report template is rendered alone, so it cannot refer to other templates"
        ));
    }
    Ok(())
}

/// Slurm's poll interval bounds: below 10 ms campaign would busy-loop on squeue; above an
/// hour a finished job waits that long to be noticed.
const MIN_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);
const MAX_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// One of the time formats `sbatch --time` accepts: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`,
/// `D-H:M:S`, or `UNLIMITED`/`infinite` (checked here so a typo fails at validate, not at the
/// first submission).
pub(crate) fn check_time_limit(text: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "`{text}` is not a Slurm time limit (expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED)"
        )
    };
    if matches!(text, "UNLIMITED" | "unlimited" | "infinite" | "INFINITE") {
        return Ok(());
    }
    let number = |p: &str| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match text.split_once('-') {
        Some((d, rest)) => (Some(d), rest),
        None => (None, text),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let shape_ok = match days {
        Some(d) => number(d) && (1..=3).contains(&parts.len()),
        None => (1..=3).contains(&parts.len()),
    };
    if !shape_ok || !parts.iter().all(|p| number(p)) {
        return Err(bad());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_time_limits() {
        for ok in [
            "30",
            "30:00",
            "1:30:00",
            "2-0",
            "2-12:30",
            "2-12:30:00",
            "UNLIMITED",
        ] {
            assert!(check_time_limit(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "abc",
            "1h",
            "1:2:3:4",
            "-1",
            "2-",
            "1:",
            "1::2",
            "2-1:2:3:4",
            "1 0",
        ] {
            assert!(check_time_limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_ranges() {
        assert_eq!(parse_id_ranges("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_id_ranges("0,2,4-5").unwrap(), vec![0, 2, 4, 5]);
        assert!(parse_id_ranges("3-1").is_err());
        assert!(parse_id_ranges("a-b").is_err());
        for typo in ["0,,1", ",0", "0,", ""] {
            assert!(parse_id_ranges(typo).is_err(), "{typo}");
        }
    }
}

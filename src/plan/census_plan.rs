//! `[census]`: a plan that is (or starts with) a link census. Reads the section and turns it
//! into the sweep the engine already runs — two-rank cases pinned to every pair of the census's
//! devices, in the rounds of `analysis::census::rounds` — so journal, resume, bundles and results
//! need nothing of their own.
//!
//! Owns the section's keys, their defaults and the two shapes a census plan takes. Alone, its
//! cases come from the section: it has no `p` or `device_ids` in `[case]`, and its pool is its
//! devices, pinned. Beside a sweep (`[axes]`, `[cases]`), the plan's axes stay the sweep's and
//! the census's cases are made apart ([`census_only`]) and run first, gated ahead of the sweep
//! (`engine::census_step`), so a device the census quarantines is out of every sweep run. It
//! must not run anything: the rounds' order is the run list's, and `engine` makes each round
//! wait for the one before.

use serde_json::Value;

use super::diag::Spans;
use super::raw::{Ctx, Item};
use crate::analysis::census::rounds;
use crate::model::plan::{CensusConfig, Placement, Plan, CENSUS_COUNT};

const KEYS: &[&str] = &["devices", "stack", "op", "count", "nodes", "quarantine"];

/// Most nodes a census spreads its devices over (beyond it a typo, not a cluster).
const MAX_NODES: u64 = 4096;

/// Read `[census]` into `plan.census`; None (with the problems recorded) when it is unusable.
pub(crate) fn read(cx: &mut Ctx<'_>, item: &Item<'_>, plan: &mut Plan) {
    let Some(table) = cx.table(item, "census") else {
        return;
    };
    let (mut devices, mut stack) = (None, None);
    // Keys given (a wrong value is its own error, not a missing key).
    let mut given = Vec::new();
    let mut census = CensusConfig {
        devices: Vec::new(),
        stack: String::new(),
        op: crate::model::case::Op::Allreduce,
        count: CENSUS_COUNT,
        nodes: 1,
        quarantine: false,
        then_sweep: false,
    };
    for e in cx.known_entries(table, "census", KEYS) {
        let path = format!("census.{}", e.key);
        let it = e.item;
        given.push(e.key);
        match e.key {
            "devices" => devices = super::config::id_list(cx, it, &path),
            "stack" => stack = cx.string(it, &path),
            "op" => {
                if let Some(op) = cx.string(it, &path) {
                    match op.parse() {
                        Ok(op) => census.op = op,
                        Err(msg) => cx.error(&it.span(), &path, msg),
                    }
                }
            }
            "count" => {
                let parsed = match it.get_ref() {
                    toml::de::DeValue::String(s) => crate::model::units::parse_count(s),
                    _ => match cx.uint(it, &path, u64::MAX) {
                        Some(0) => Err("count must be at least 1".to_string()),
                        Some(n) => Ok(n),
                        None => continue,
                    },
                };
                match parsed {
                    Ok(n) => census.count = n,
                    Err(msg) => cx.error(&it.span(), &path, msg),
                }
            }
            "nodes" => match cx.uint(it, &path, MAX_NODES) {
                Some(0) => cx.error(&it.span(), &path, "nodes must be at least 1".into()),
                Some(n) => census.nodes = n as u32,
                None => {}
            },
            _ => census.quarantine = cx.boolean(it, &path).unwrap_or(false),
        }
    }
    for key in ["devices", "stack"] {
        if !given.contains(&key) {
            let msg = format!("[census] needs `{key}` (e.g. devices = \"0-7\", stack = \"host\")");
            cx.error(&item.span(), &format!("census.{key}"), msg);
        }
    }
    if let (Some(mut ids), Some(name)) = (devices, stack) {
        ids.sort_unstable();
        if ids.len() < 2 {
            let msg = "a census needs at least two devices (it measures pairs)".to_string();
            cx.error(&item.span(), "census.devices", msg);
            return;
        }
        if ids.len() % census.nodes as usize != 0 {
            let msg = format!(
                "{} devices do not split evenly over {} nodes (each node holds the same number \
                 of consecutive devices)",
                ids.len(),
                census.nodes
            );
            cx.error(&item.span(), "census.nodes", msg);
            return;
        }
        census.devices = ids;
        census.stack = name;
        plan.census = Some(census);
    }
}

/// Make the census's cases. Beside a sweep (`sweep`: the `[axes]`/`[cases]` span when the plan
/// has one) the plan stays the sweep's and the census is marked to run first ([`census_only`]
/// makes its cases); alone, the plan becomes the census: `p = 2`, its `count` and `op`, one
/// `device_ids` axis value per pair in round order, its stack alone — and refuses the case
/// fields the census sets.
pub(crate) fn expand(
    cx: &mut Ctx<'_>,
    item: &Item<'_>,
    plan: &mut Plan,
    spans: &mut Spans,
    sweep: Option<(&str, std::ops::Range<usize>)>,
) {
    let Some(census) = plan.census.as_mut() else {
        return;
    };
    if sweep.is_some() {
        census.then_sweep = true;
        plan.report.census = Some(census.clone());
        return;
    }
    let census = census.clone();
    for field in [
        "p",
        "device_ids",
        "nodes",
        "ranks_per_node",
        "placement",
        "count",
        "op",
    ] {
        if let Some(span) = spans.fields.get(field).cloned() {
            let msg = format!("`{field}` is set by [census]; leave it out of [case]");
            cx.error(&span, &format!("case.{field}"), msg);
        }
    }
    let span = item.span();
    for field in ["p", "count", "op", "device_ids"] {
        spans.fields.insert(field.to_string(), span.clone());
    }
    spans.stacks = Some(span.clone());
    census_sweep(plan, spans, &census, span);
    plan.report.census = Some(census);
}

/// Turn `plan` into the census's own sweep: its case fields, the pairs as a `device_ids` axis
/// (and `nodes` over several nodes), its stack alone.
fn census_sweep(
    plan: &mut Plan,
    spans: &mut Spans,
    census: &CensusConfig,
    span: std::ops::Range<usize>,
) {
    let defaults = &mut plan.case_defaults;
    for field in ["nodes", "ranks_per_node", "placement"] {
        defaults.remove(field);
    }
    defaults.insert("p".into(), Value::from(2));
    defaults.insert("count".into(), Value::from(census.count));
    defaults.insert("op".into(), Value::from(census.op.as_str()));
    let pairs: Vec<(u32, u32)> = rounds(&census.devices).into_iter().flatten().collect();
    plan.axes = vec![crate::model::plan::Axis {
        name: "device_ids".into(),
        values: pairs
            .iter()
            .map(|&(a, b)| Value::from(vec![a, b]))
            .collect(),
    }];
    plan.excludes.clear();
    if census.nodes > 1 {
        spread_over_nodes(plan, spans, census, &pairs, span);
    }
    plan.stacks = vec![census.stack.clone()];
}

/// The census's own plan of a plan whose census runs ahead of its sweep (`then_sweep`): the
/// plan's settings, its `[case]` fields but those the census sets, no sweep of its own, its
/// pairs pinned. None for a plan without such a census. Its cases are the census's, in round
/// order (`plan::sweep::cases`).
pub(crate) fn census_only(plan: &Plan) -> Option<Plan> {
    let census = plan.census.as_ref().filter(|c| c.then_sweep)?;
    let mut sub = plan.clone();
    sub.case_files.clear();
    sub.filter = None;
    sub.case_defaults.remove("device_ids");
    let mut spans = Spans::default();
    census_sweep(&mut sub, &mut spans, census, 0..0);
    sub.devices.placement = Placement::Pinned;
    sub.case_count = rounds(&census.devices).iter().map(Vec::len).sum::<usize>() as u64;
    Some(sub)
}

/// A census over several nodes: a pair inside one node's block of devices is a one-node case, a
/// pair across two blocks a two-node case with one rank on each (`nodes` as a second axis, each
/// pair's other node count excluded), so the executor places the ranks as the census says and
/// the records say where they ran.
fn spread_over_nodes(
    plan: &mut Plan,
    spans: &mut Spans,
    census: &CensusConfig,
    pairs: &[(u32, u32)],
    span: std::ops::Range<usize>,
) {
    let per = census.devices.len() / census.nodes as usize;
    let block = |d: u32| census.devices.iter().position(|&x| x == d).unwrap_or(0) / per;
    let nodes_of = |&(a, b): &(u32, u32)| if block(a) == block(b) { 1u32 } else { 2 };
    let mut used: Vec<u32> = pairs.iter().map(nodes_of).collect();
    used.sort_unstable();
    used.dedup();
    spans.fields.insert("nodes".into(), span.clone());
    if let [only] = used.as_slice() {
        plan.case_defaults
            .insert("nodes".into(), Value::from(*only));
        return;
    }
    plan.axes.push(crate::model::plan::Axis {
        name: "nodes".into(),
        values: vec![Value::from(1), Value::from(2)],
    });
    // Two rules: the one-node pairs never run on two nodes, the two-node pairs never on one.
    for (keep, drop) in [(1u32, 2u32), (2, 1)] {
        let these: Vec<Value> = (pairs.iter())
            .filter(|p| nodes_of(p) == keep)
            .map(|&(a, b)| Value::from(vec![a, b]))
            .collect();
        let mut rule = std::collections::BTreeMap::new();
        rule.insert("device_ids".to_string(), Value::Array(these));
        rule.insert("nodes".to_string(), Value::from(drop));
        plan.excludes.push(rule);
        spans.excludes.push(span.clone());
    }
}

/// The pool of a census plan: its devices (unless `[devices] ids` names a pool, which must then
/// hold them — `validate` says so), each case on its own pair. A census ahead of a sweep keeps
/// the sweep's placement (its own cases are pinned apart).
pub(crate) fn pool(plan: &mut Plan) {
    let Some(census) = &plan.census else {
        return;
    };
    if plan.devices.ids.is_empty() {
        plan.devices.ids = census.devices.clone();
    }
    if !census.then_sweep {
        plan.devices.placement = Placement::Pinned;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::model::plan::Placement;
    use crate::plan::load::parse;

    fn census(body: &str) -> crate::error::Result<crate::model::plan::Plan> {
        parse(
            &format!("[campaign]\nname = \"c\"\n{body}"),
            Path::new("c.toml"),
        )
    }

    fn refused(body: &str) -> String {
        census(body).expect_err("refused").to_string()
    }

    #[test]
    fn a_census_is_every_pair_of_its_devices_pinned_in_round_order() {
        let plan = census("[census]\ndevices = \"0-7\"\nstack = \"host\"\ncount = \"4Ki\"\n")
            .expect("loads");
        assert_eq!(plan.case_count, 28);
        let cases: Vec<_> = crate::plan::sweep::cases(&plan, None)
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        let flat: Vec<(u32, u32)> = crate::analysis::census::rounds(&(0..8).collect::<Vec<_>>())
            .into_iter()
            .flatten()
            .collect();
        let got: Vec<(u32, u32)> = (cases.iter())
            .map(|c| (c.device_ids[0], c.device_ids[1]))
            .collect();
        assert_eq!(got, flat);
        assert!(cases.iter().all(|c| c.p == 2 && c.count == 4096));
        assert_eq!(plan.devices.ids, (0..8).collect::<Vec<u32>>());
        assert_eq!(plan.report.census, plan.census);
        assert_eq!(plan.census.unwrap().count, 4096);
    }

    #[test]
    fn bad_census_input_is_refused_naming_the_field() {
        let msg = refused("[census]\nstack = \"host\"\n");
        assert!(
            msg.contains("census.devices") && msg.contains("needs `devices`"),
            "{msg}"
        );
        let msg = refused("[census]\ndevices = [3]\nstack = \"host\"\n");
        assert!(msg.contains("at least two devices"), "{msg}");
        let msg = refused("[census]\ndevices = \"0-3\"\nstack = \"host\"\ncount = \"64MB\"\n");
        assert!(
            msg.contains("census.count") && msg.contains("not an element count"),
            "{msg}"
        );
        let msg = refused("[census]\ndevices = \"0-3\"\nstack = \"host\"\nop = \"allsum\"\n");
        assert!(
            msg.contains("census.op") && msg.contains("unknown op"),
            "{msg}"
        );
        let msg = refused("[census]\ndevices = \"0-3\"\nstack = \"nosuch\"\n");
        assert!(msg.contains("unknown stack `nosuch`"), "{msg}");
        let msg = refused("[census]\ndevices = \"0-3\"\nstack = \"host\"\nrepeat = 2\n");
        assert!(msg.contains("unknown key `repeat` in [census]"), "{msg}");
    }

    #[test]
    fn a_census_over_two_nodes_makes_cross_node_pairs_two_node_cases() {
        let plan = census("[census]\ndevices = \"0-3\"\nstack = \"mpi\"\nnodes = 2\ncount = 8\n")
            .expect("loads");
        let cases: Vec<_> = crate::plan::sweep::cases(&plan, None)
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        let layout: Vec<(Vec<u32>, u32)> = cases
            .iter()
            .map(|c| (c.device_ids.clone(), c.nodes))
            .collect();
        // Devices 0-1 on the first node, 2-3 on the second; the rounds' order is kept.
        let want: Vec<(Vec<u32>, u32)> = crate::analysis::census::rounds(&[0, 1, 2, 3])
            .into_iter()
            .flatten()
            .map(|(a, b)| (vec![a, b], if (a < 2) == (b < 2) { 1 } else { 2 }))
            .collect();
        assert_eq!(layout, want);
        assert!(cases.iter().all(|c| c.ranks_per_node() == 2 / c.nodes));
        let msg = refused("[census]\ndevices = \"0-4\"\nstack = \"mpi\"\nnodes = 2\n");
        assert!(
            msg.contains("census.nodes") && msg.contains("do not split evenly"),
            "{msg}"
        );
    }

    #[test]
    fn a_census_beside_a_sweep_keeps_the_sweep_and_makes_its_own_cases() {
        let plan = census(
            "[axes]\ncount = [1, 2]\n[case]\np = 4\n\
             [census]\ndevices = \"0-3\"\nstack = \"host\"\ncount = 8\nquarantine = true\n",
        )
        .expect("loads");
        let c = plan.census.clone().expect("[census]");
        assert!(c.then_sweep && c.quarantine);
        assert_eq!(plan.report.census, plan.census);
        // The plan's own cases are the sweep's, placed as the plan says.
        let sweep: Vec<_> = crate::plan::sweep::cases(&plan, None)
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        assert_eq!(sweep.len(), 2);
        assert!(sweep.iter().all(|c| c.p == 4), "{sweep:?}");
        assert_eq!(plan.devices.placement, Placement::Auto);
        assert_eq!(plan.devices.ids, vec![0, 1, 2, 3]);
        // The census's own: every pair, pinned, in round order, on its stack.
        let sub = super::census_only(&plan).expect("a census ahead of the sweep");
        let pairs: Vec<(u32, u32)> = crate::plan::sweep::cases(&sub, None)
            .unwrap()
            .map(|c| c.unwrap())
            .inspect(|c| assert!(c.p == 2 && c.count == 8, "{c:?}"))
            .map(|c| (c.device_ids[0], c.device_ids[1]))
            .collect();
        let want: Vec<(u32, u32)> = crate::analysis::census::rounds(&[0, 1, 2, 3])
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(pairs, want);
        assert_eq!(sub.stacks, vec!["host".to_string()]);
        assert_eq!(sub.devices.placement, Placement::Pinned);
        // A census alone is the plan itself: nothing apart.
        let alone = census("[census]\ndevices = \"0-3\"\nstack = \"host\"\n").unwrap();
        assert!(super::census_only(&alone).is_none());
        let msg = refused("[case]\np = 4\n[census]\ndevices = \"0-3\"\nstack = \"host\"\n");
        assert!(msg.contains("`p` is set by [census]"), "{msg}");
        // A pool that does not hold the census's devices is the pool check's error.
        let msg =
            refused("[census]\ndevices = \"0-3\"\nstack = \"host\"\n[devices]\nids = \"0-1\"\n");
        assert!(msg.contains("2"), "{msg}");
    }
}

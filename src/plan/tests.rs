//! Unit tests of plan parsing: sections, precedence, cross-checks, and a property test that
//! feeds arbitrary and plan-shaped text to the parser (no panics, only exit-code-2 errors).

use std::path::Path;

use super::load::parse;
use crate::error::Result;
use crate::model::plan::{DeviceKind, Plan};
use crate::plan::select_stacks;
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
    let all: Vec<_> = crate::plan::sweep::cases(&p, None).unwrap().collect();
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
fn rounds_in_case_and_in_the_rounds_table_is_an_error() {
    let e = plan("\n[case]\ntimed_rounds = 9\n\n[rounds]\ntimed = 4\n").unwrap_err();
    assert!(
        e.to_string().contains("give the round count in one place"),
        "{e}"
    );
    let p = plan("\n[case]\ntimed_rounds = 9\n").unwrap();
    let case = crate::plan::sweep::cases(&p, None)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(case.timed_rounds, 9);
    assert_eq!(case.warmup_rounds, 3);
}

#[test]
fn round_counts_are_bounded() {
    for text in [
        "\n[rounds]\ntimed = 2147483648\n",
        "\n[case]\ntimed_rounds = 1000000000\n",
        "\n[case]\nwarmup_rounds = 1000000000\n",
        "\n[case]\nblock_dim = -1\n",
        "\n[case]\naicpu_thread_num = 0\n",
    ] {
        let e = plan(text).unwrap_err();
        assert!(e.to_string().contains("between"), "{text}: {e}");
    }
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
    let p = plan("\n[run]\ntimeout = \"90s\"\nretries = 2\norder = \"given\"\njobs = 3\n").unwrap();
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
fn repeats_default_to_three_and_zero_is_refused() {
    assert_eq!(plan("").unwrap().run.repeats, 3);
    assert_eq!(
        plan("").unwrap().run.repeats as usize,
        crate::analysis::verdict::MIN_REPEATS
    );
    assert_eq!(plan("\n[run]\nrepeats = 5\n").unwrap().run.repeats, 5);
    let err = messages(plan("\n[run]\nrepeats = 0\n"));
    assert!(
        err.contains("run.repeats") && err.contains("repeats must be >= 1"),
        "{err}"
    );
    let err = messages(plan("\n[run]\nrepeats = 5000\n"));
    assert!(
        err.contains("expected an integer between 0 and 1000"),
        "{err}"
    );
}

#[test]
fn axis_on_a_field_case_id_does_not_show_must_not_collide() {
    let err = messages(plan("orch_tier = [\"logical\", \"strict_window\"]\n"));
    assert!(err.contains("two cases share case_id"), "{err}");
}

#[test]
fn stack_selection() {
    let p = plan("stacks = [\"host\", \"mine\"]\n\n[stacks.mine]\ncommand = [\"true\"]\n").unwrap();
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

#[test]
fn durations_have_a_maximum_and_may_be_bare_seconds() {
    let p = plan("\n[run]\ntimeout = 30\ncooldown = 0.5\n").unwrap();
    assert_eq!(p.run.timeout, std::time::Duration::from_secs(30));
    assert_eq!(p.run.cooldown, std::time::Duration::from_millis(500));
    for bad in [
        "\"3000000000000000h\"",
        "\"99999999999999999h\"",
        "604801",
        "-3",
    ] {
        let err = messages(plan(&format!("\n[run]\ntimeout = {bad}\n")));
        assert!(err.contains("t.toml:10:11: run.timeout"), "{bad}: {err}");
    }
    let err = messages(plan(
        "stacks = [\"mine\"]\n[stacks.mine]\ncommand = [\"x\"]\ntimeout = \"900000h\"\n",
    ));
    assert!(err.contains("maximum duration of 7 days"), "{err}");
}

#[test]
fn sizes_and_names_have_limits() {
    let err = messages(parse(
        "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\np = 20000\ncount = 4611686018427387904\n",
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("p = 20000 is above the maximum of 4096 ranks"),
        "{err}"
    );
    let err = messages(parse(
        "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\np = 2\ncount = 4611686018427387904\n",
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("maximum message of 1099511627776 bytes"),
        "{err}"
    );
    // 200 ranks: every id fits, but the case_id (a folder name) would not.
    let err = messages(parse(
        "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\np = 200\ncount = 64\n",
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("more than the 255 bytes a folder name may have"),
        "{err}"
    );
    let long = "a".repeat(5000);
    let err = messages(parse(
        &format!("[campaign]\nname = \"{long}\"\n[case]\nvariant = \"mesh\"\np = 2\ncount = 64\n"),
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("name is 5000 characters long; at most 100"),
        "{err}"
    );
}

#[test]
fn a_product_above_the_case_limit_is_refused_before_it_is_walked() {
    let counts: Vec<String> = (1..=2000).map(|n| n.to_string()).collect();
    let ps: Vec<String> = (2..=600).map(|n| n.to_string()).collect();
    let err = messages(parse(
        &format!(
            "[campaign]\nname = \"t\"\n[axes]\nvariant = [\"mesh\"]\np = [{}]\ncount = [{}]\n",
            ps.join(","),
            counts.join(",")
        ),
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("the plan makes 1198000 cases (1 variant × 599 p × 2000 count), more than the maximum of 1000000"),
        "{err}"
    );
}

#[test]
fn duplicate_detection_in_a_long_axis_is_linear_and_exact() {
    let mut counts: Vec<String> = (1..=50_000).map(|n| n.to_string()).collect();
    counts.push("777".into());
    let err = messages(parse(
        &format!(
            "[campaign]\nname = \"t\"\n[axes]\nvariant = [\"mesh\"]\np = [2]\ncount = [{}]\n",
            counts.join(",")
        ),
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("axes.count[50000]: value 777 appears twice"),
        "{err}"
    );
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

/// Windows of point numbers, made one after another from one iterator (as the listing's
/// blocks are), give exactly the cases of the whole sweep in order — with `[[exclude]]`
/// rules and a filter dropping points inside windows, and windows past the end.
#[test]
fn point_windows_concatenate_to_the_whole_sweep() {
    let p = parse(
        "[campaign]\nname = \"w\"\n\n[axes]\nvariant = [\"mesh\", \"ring\", \"twophase\"]\np = [2, 3, 4]\ncount = [64, 96, 128, 256]\ndtype = [\"fp32\", \"int32\"]\n\n[[exclude]]\nvariant = \"ring\"\np = 3\n\n[filter]\nwhere = \"count != 96\"\n",
        Path::new("w.toml"),
    )
    .unwrap();
    let ids = |it: &mut crate::plan::sweep::Cases<'_>| {
        let mut out = Vec::new();
        while let Some(c) = it.next_ref() {
            out.push(c.unwrap().case_id());
        }
        out
    };
    let whole = ids(&mut crate::plan::sweep::cases(&p, None).unwrap());
    assert_eq!(whole.len() as u64, p.case_count);
    let mut it = crate::plan::sweep::cases(&p, None).unwrap();
    assert_eq!(it.points(), 72);
    for block in [1u64, 5, 7, 72, 100] {
        let mut joined = Vec::new();
        // Out of order on purpose: odd blocks first, then even ones, then put back in order.
        let n = it.points().div_ceil(block);
        let mut parts = vec![Vec::new(); n as usize + 1];
        for b in (1..=n).step_by(2).chain((0..=n).step_by(2)) {
            it.window(b * block..(b + 1) * block);
            parts[b as usize] = ids(&mut it);
        }
        for part in parts {
            joined.extend(part);
        }
        assert_eq!(joined, whole, "block of {block} points");
    }
}

#[test]
fn the_run_limit_counts_the_repeats_the_command_line_asks_for() {
    // 2 p × 170,000 counts = 340,000 cases: 1.02 million runs at the default 3 repeats.
    let p = ["2", "4"];
    let count: Vec<String> = (1..=170_000).map(|n| (n * 8).to_string()).collect();
    let text = format!(
        "[campaign]\nname = \"t\"\n[axes]\nvariant = [\"mesh\"]\np = [{}]\ncount = [{}]\n",
        p.join(","),
        count.join(",")
    );
    let err = messages(parse(&text, Path::new("t.toml")));
    assert!(
        err.contains("the plan makes 1020000 runs (340000 cases × 1 stacks × 3 repeats)"),
        "{err}"
    );
    // `run --repeats 1` / `dry-run --repeats 1`: 340,000 runs, within the limit.
    let cli = crate::plan::Overrides {
        repeats: Some(1),
        ..Default::default()
    };
    let plan = crate::plan::parse_with(&text, Path::new("t.toml"), cli).unwrap();
    assert_eq!((plan.case_count, plan.run.repeats), (340_000, 1));
}

/// Issue 43, item 4: `[case] ranks_per_node` holds on every point of a `nodes` axis (it was
/// replaced by 1 after a one-node point), and layout fields above the rank maximum are refused
/// at their line at once, never multiplied into millions of device ids.
#[test]
fn node_layout_fields_hold_per_point_and_are_bounded() {
    let p = parse(
        "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\nranks_per_node = 2\n[axes]\nvariant = [\"mesh\"]\nnodes = [1, 2, 3]\ncount = [256]\n",
        Path::new("t.toml"),
    )
    .unwrap();
    let cases: Vec<_> = crate::plan::sweep::cases(&p, None)
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let layout: Vec<(u32, u32, u32)> = cases
        .iter()
        .map(|c| (c.nodes, c.ranks_per_node(), c.p))
        .collect();
    assert_eq!(layout, [(1, 2, 2), (2, 2, 4), (3, 2, 6)]);
    let err = messages(parse(
        "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\nranks_per_node = 4294967295\n[axes]\nvariant = [\"mesh\"]\nnodes = [4294967295]\ncount = [256]\n",
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("t.toml:5:18: case.ranks_per_node: ranks_per_node = 4294967295 is above the maximum of 4096 ranks"),
        "{err}"
    );
    assert!(err.contains("t.toml:8:10: axes.nodes[0]"), "{err}");
}

/// Issue 43, item 4: a `root` that no op of the plan takes is refused at its line, not dropped.
#[test]
fn a_root_no_op_takes_is_refused_at_its_line() {
    let err = messages(parse(
        "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\nroot = 1\n[axes]\nvariant = [\"mesh\"]\np = [2]\ncount = [256]\n",
        Path::new("t.toml"),
    ));
    assert!(
        err.contains("t.toml:5:8: root: `root` means nothing for allreduce"),
        "{err}"
    );
    let ok = parse(
        "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\nroot = 1\n[axes]\nop = [\"allreduce\", \"reduce\"]\nvariant = [\"tree\"]\np = [2]\ncount = [256]\n",
        Path::new("t.toml"),
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
}

/// `[report] equivalence` is a percentage above 0 and below 100, kept as a fraction; anything
/// else is refused at its line.
#[test]
fn report_equivalence_is_a_percentage() {
    let base = "[campaign]\nname = \"e\"\n[case]\np = 2\ncount = 64\n[report]\n";
    let p = parse(
        &format!("{base}equivalence = \"2.5%\"\n"),
        Path::new("e.toml"),
    )
    .unwrap();
    assert_eq!(p.report.equivalence, Some(0.025));
    for bad in ["\"0%\"", "\"100%\"", "\"5\"", "\"five%\""] {
        let err = messages(parse(
            &format!("{base}equivalence = {bad}\n"),
            Path::new("e.toml"),
        ));
        assert!(
            err.contains("e.toml:7:")
                && err.contains("report.equivalence")
                && err.contains("no equivalence margin"),
            "{bad}: {err}"
        );
    }
}

/// `[run] repeats` takes a count, `{ min, max }` or `"auto"`; `--repeats` makes it fixed again;
/// `[run] budget` is a duration; the report learns the looks.
#[test]
fn sequential_repeats_and_the_budget_are_read() {
    let p = plan("[run]\nrepeats = { min = 3, max = 20 }\nbudget = \"45m\"\n").unwrap();
    assert_eq!((p.run.repeats, p.run.repeats_max), (3, 20));
    assert_eq!(p.run.budget, Some(std::time::Duration::from_secs(45 * 60)));
    assert_eq!(p.report.looks, [3, 5, 8, 12, 18, 20]);
    let auto = plan("[run]\nrepeats = \"auto\"\n").unwrap();
    assert_eq!((auto.run.repeats, auto.run.repeats_max), (3, 10));
    let fixed = plan("[run]\nrepeats = 5\n").unwrap();
    assert!(!fixed.run.sequential());
    assert_eq!(fixed.report.looks, [5]);
    let cli = crate::plan::Overrides {
        repeats: Some(4),
        ..Default::default()
    };
    let text = format!("{BASE}[run]\nrepeats = {{ min = 3, max = 20 }}\n");
    let over = crate::plan::parse_with(&text, Path::new("t.toml"), cli).unwrap();
    assert_eq!((over.run.repeats, over.run.repeats_max), (4, 4));
    let adapt = plan("[adapt]\ncrossover = true\n");
    // One size only in BASE: nothing to bisect.
    assert!(messages(adapt).contains("two or more sizes"));
}

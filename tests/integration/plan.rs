//! Plans → cases through the real binary: `validate`, `dry-run`, `cases`, and every kind of bad
//! plan (exit code 2, located message, never a panic).

use crate::util::{run, stderr, stdout, tempdir};

const FIX: &str = "tests/integration/fixtures/plan";

fn fixture(name: &str) -> String {
    format!("{FIX}/{name}")
}

/// Run `validate` on a bad fixture: exit 2, no panic, and the message.
fn rejected(name: &str) -> String {
    let out = run(&["validate", &fixture(name)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(stdout(&out).is_empty(), "{name}: nothing on stdout");
    err
}

#[test]
fn syntax_error_has_line_column_and_caret() {
    let err = rejected("syntax.toml");
    assert!(err.contains("syntax.toml:6:1"), "{err}");
    assert!(err.contains("TOML syntax error"), "{err}");
    assert!(err.contains("6 | count = [256]"), "{err}");
    assert!(err.contains("  | ^"), "{err}");
}

#[test]
fn wrong_type_names_field_and_expectation() {
    let err = rejected("wrong_type.toml");
    assert!(err.contains("wrong_type.toml:6:6: axes.p[0]"), "{err}");
    assert!(err.contains("expected a non-negative integer"), "{err}");
}

#[test]
fn unknown_key_is_rejected_with_suggestion() {
    let err = rejected("unknown_key.toml");
    assert!(err.contains("unknown_key.toml:5:1"), "{err}");
    assert!(err.contains("did you mean `variant`?"), "{err}");
}

#[test]
fn unknown_keys_in_stack_and_run_tables_are_rejected_together() {
    let err = rejected("stack_typo.toml");
    assert!(err.contains("did you mean `command`?"), "{err}");
    assert!(err.contains("did you mean `timeout`?"), "{err}");
    assert!(err.contains("stack_typo.toml:11:1"), "{err}");
    assert!(err.contains("problems found"), "{err}");
}

#[test]
fn empty_axis_p_below_two_and_unknown_values() {
    assert!(rejected("empty_axis.toml").contains("an axis needs at least one value"));
    let err = rejected("p_too_small.toml");
    assert!(err.contains("p_too_small.toml:6:6"), "{err}");
    assert!(err.contains("p must be >= 2, got 1"), "{err}");
    let err = rejected("unknown_values.toml");
    assert!(err.contains("unknown platform `a9`"), "{err}");
    assert!(
        err.contains("unknown variant `star`: no stack of this plan has it"),
        "{err}"
    );
    assert!(err.contains("unknown dtype `fp64`"), "{err}");
    assert!(err.contains("3 problems found"), "{err}");
}

#[test]
fn device_ids_of_wrong_length_point_at_their_line() {
    let err = rejected("device_ids_length.toml");
    assert!(err.contains("device_ids_length.toml:5:14"), "{err}");
    assert!(err.contains("device_ids has 3 entries but p = 2"), "{err}");
    assert!(err.contains("mesh_p2_count256_fp32_a2a3_d0-1-2"), "{err}");
}

#[test]
fn campaign_name_must_be_a_plain_folder_name() {
    let err = rejected("bad_name.toml");
    assert!(err.contains("must match [a-z0-9_-]+"), "{err}");
    assert!(err.contains("bad_name.toml:2:8"), "{err}");
}

#[test]
fn filter_that_does_not_parse() {
    let err = rejected("bad_filter.toml");
    assert!(err.contains("bad_filter.toml:10:9: filter.where"), "{err}");
    assert!(err.contains("does not parse"), "{err}");
}

#[test]
fn empty_product_after_exclusions() {
    let err = rejected("empty_product.toml");
    assert!(err.contains("the plan makes no cases"), "{err}");
    assert!(err.contains("dropped 2"), "{err}");
}

#[test]
fn two_problems_are_reported_together() {
    let err = rejected("two_problems.toml");
    assert!(err.contains("two_problems.toml:6:6"), "{err}");
    assert!(err.contains("two_problems.toml:8:10"), "{err}");
    assert!(err.contains("2 problems found"), "{err}");
}

#[test]
fn fp16_overflow_names_case_value_and_the_dtype_line() {
    let err = rejected("fp16_range.toml");
    assert!(err.contains("fp16_range.toml:8:9"), "{err}");
    assert!(err.contains("mesh_p2_count65536_fp16_a2a3_d0-1"), "{err}");
    assert!(err.contains("131170"), "largest value named: {err}");
    assert!(err.contains("rank_mod16_v1"), "{err}");
}

#[test]
fn pool_smaller_than_p_is_refused() {
    let err = rejected("pool_too_small.toml");
    assert!(
        err.contains("mesh_p8_count256_fp32_a2a3_d0-1-2-3-4-5-6-7"),
        "{err}"
    );
    assert!(
        err.contains("needs 8 devices but the pool has only"),
        "{err}"
    );
    assert!(err.contains("pool_too_small.toml:6:5"), "{err}");
}

#[test]
fn validate_plan_and_seed_case() {
    let out = run(&["validate", "plans/full_sweep.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The planned skips are counted as `dry-run` counts them (issue 44: validate did not).
    assert_eq!(
        stdout(&out),
        "ok: 108 cases\n\
         planned skips: 99 of 540 runs (not failures; `campaign dry-run` lists the cases)\n\
         \x20 simpler: count 1048576 outside this stack's limits (9 runs)\n\
         \x20 simpler: count 16384 outside this stack's limits (9 runs)\n\
         \x20 simpler: count 262144 outside this stack's limits (9 runs)\n\
         \x20 simpler: count 4096 outside this stack's limits (9 runs)\n\
         \x20 simpler: count 65536 outside this stack's limits (9 runs)\n\
         \x20 simpler: dtype fp16 not supported by this stack (54 runs)\n"
    );
    let dry = stdout(&run(&["dry-run", "plans/full_sweep.toml"]));
    assert!(dry.contains("= 540 runs (99 skipped"), "{dry}");
    let out = run(&[
        "validate",
        &fixture("seed/mesh_p2_count256_fp32_a2a3_d0-1.json"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "case_id=mesh_p2_count256_fp32_a2a3_d0-1\nequivalence_hash=4ca59d34ec615378\n"
    );
}

#[test]
fn validate_reports_every_bad_file() {
    let out = run(&[
        "validate",
        &fixture("p_too_small.toml"),
        &fixture("bad_name.toml"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("p_too_small.toml") && err.contains("bad_name.toml"),
        "{err}"
    );
}

#[test]
fn dry_run_table_ends_with_summary() {
    let out = run(&["dry-run", "plans/full_sweep.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // Header, 108 cases, the summary, then one line per (stack, skip reason).
    assert_eq!(lines.len(), 1 + 108 + 1 + 6, "{text}");
    assert!(
        lines[110..]
            .contains(&"  skipped simpler: dtype fp16 not supported by this stack (54 runs)"),
        "{text}"
    );
    assert!(lines[0].starts_with("case_id"));
    assert!(
        lines[1].starts_with("mesh_p2_count256_fp32_a2a3_d0-1 "),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with("  hccl,simpler,host"), "{}", lines[1]);
    // Variants belong to stacks: ring is host's alone (hccl's ring is `algo_ring`, simpler
    // has mesh only), so a ring case runs on host and nowhere else — not as a skip.
    assert!(
        (lines.iter().filter(|l| l.starts_with("ring_"))).all(|l| l.ends_with("  host")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("  hccl,simpler(skip),host")),
        "stacks that cannot run a case they claim are marked"
    );
    // How many are skipped depends on the shipped stack definitions' limits.
    let last = lines[109];
    assert!(
        last.starts_with(
            "108 cases on 3 stacks (each runs its own variants: 180 (case, stack) pairs) × 3 repeats = 540 runs ("
        ),
        "{last}"
    );
    assert!(
        last.ends_with(" skipped: not supported by their stack)"),
        "{last}"
    );
}

#[test]
fn dry_run_json_is_only_json_and_follows_axis_order() {
    let out = run(&["dry-run", "plans/smoke.toml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 18);
    // First axis (variant) slowest, last (count) fastest.
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["case_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "mesh_p2_count64_fp32_host_d0-1");
    assert_eq!(ids[1], "mesh_p2_count1000_fp32_host_d0-1");
    assert_eq!(ids[3], "mesh_p3_count64_fp32_host_d0-1-2");
    assert_eq!(ids[6], "ring_p2_count64_fp32_host_d0-1");
    assert_eq!(rows[0]["warmup"], 3);
    assert_eq!(rows[0]["timed"], 30);
    assert_eq!(rows[0]["stacks"], serde_json::json!(["host"]));
    // Every record names its op, allreduce too (a filter on `op` sees every row).
    assert!(rows.iter().all(|r| r["op"] == "allreduce"), "{v}");
}

#[test]
fn dry_run_csv_with_excludes_filter_and_fixed_rounds() {
    let out = run(&["dry-run", &fixture("excludes.toml"), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "case_id,variant,p,count,dtype,bytes,warmup,timed,equivalence_hash,stacks"
    );
    let ids: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "mesh_p2_count256_fp32_host_d0-1",
            "mesh_p4_count256_fp32_host_d0-1-2-3",
            "mesh_p8_count256_fp32_host_d0-1-2-3-4-5-6-7",
            "ring_p8_count256_fp32_host_d0-1-2-3-4-5-6-7",
        ]
    );
    assert!(lines[1].contains(",1024,0,7,"), "{}", lines[1]);
}

#[test]
fn dry_run_cli_filter_and_stack_selection() {
    let out = run(&[
        "dry-run",
        "plans/full_sweep.toml",
        "--filter",
        "p == 8 and dtype == 'fp16'",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "\n18 cases on 3 stacks (each runs its own variants: 30 (case, stack) pairs) × 3 repeats = 90 runs"
        ),
        "{}",
        stdout(&out)
    );

    let out = run(&[
        "dry-run",
        "plans/full_sweep.toml",
        "--stacks",
        "host",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).lines().skip(1).all(|l| l.ends_with(",host")));

    let out = run(&["dry-run", "plans/full_sweep.toml", "--stacks", "hots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`hots` is not a stack of this plan (did you mean `host`?)"));

    let out = run(&["dry-run", "plans/full_sweep.toml", "--filter", "cont > 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `count`"),
        "{}",
        stderr(&out)
    );

    // The Slurm schedule: one sbatch command per run (details in tests/integration/slurm_host.rs).
    let out = run(&["dry-run", "plans/smoke.toml", "--executor", "slurm"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("sbatch --parsable "));
}

#[test]
fn seed_case_files_replace_the_product() {
    let out = run(&["dry-run", &fixture("seed_files.toml"), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "mesh_p2_count256_fp32_a2a3_d0-1,mesh,2,256,fp32,1024,3,50,4ca59d34ec615378,host"
        ),
        "{text}"
    );
    assert!(
        text.contains("ring_p4_count1024_fp32_a2a3_d0-1-2-3,ring,4,1024,fp32,4096,3,10,"),
        "{text}"
    );
    let err = rejected("no_files.toml");
    assert!(err.contains("matches no file"), "{err}");
}

#[test]
fn cases_writes_seed_files_and_rewrites_only_changes() {
    let dir = tempdir();
    let out_dir = dir.path().join("cases");
    let o = out_dir.to_str().unwrap();
    let out = run(&["cases", "plans/smoke.toml", "--out", o]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("wrote 18, unchanged 0, stale 0"),
        "{}",
        stdout(&out)
    );
    let file = out_dir.join("ring_p3_count1000_fp32_host_d0-1-2.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("{\n  \"variant\": \"ring\",\n  \"p\": 3,"),
        "{text}"
    );
    assert!(
        text.contains("\"bytes_per_rank_per_round\": 1333"),
        "{text}"
    );

    std::fs::write(&file, "{}").unwrap();
    std::fs::write(out_dir.join("someone_elses.json"), "{}").unwrap();
    let out = run(&["cases", "plans/smoke.toml", "--out", o, "--dry-run"]);
    assert!(
        stdout(&out).starts_with("would write 1, unchanged 17, stale 1"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{}",
        "--dry-run writes nothing"
    );
    let out = run(&["cases", "plans/smoke.toml", "--out", o]);
    assert!(
        stdout(&out).starts_with("wrote 1, unchanged 17, stale 1"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("someone_elses.json"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(
        out_dir.join("someone_elses.json").exists(),
        "unknown files are kept"
    );
}

#[test]
fn committed_cases_match_the_full_sweep_plan() {
    let out = run(&[
        "cases",
        "plans/full_sweep.toml",
        "--out",
        "cases",
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("would write 0, unchanged 108, stale 0"),
        "regenerate with `campaign cases plans/full_sweep.toml --out cases`: {}",
        stdout(&out)
    );
}

#[test]
fn every_shipped_plan_validates() {
    for (plan, n) in [
        ("plans/strong_scaling.toml", 36),
        ("plans/cross_variant.toml", 18),
        ("plans/full_sweep.toml", 108),
        ("plans/smoke.toml", 18),
    ] {
        let out = run(&["validate", plan]);
        assert_eq!(out.status.code(), Some(0), "{plan}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.starts_with(&format!("ok: {n} cases\n")),
            "{plan}: {text}"
        );
    }
}

/// The local pool bounds P only for local runs: `--executor slurm` on the command line lifts
/// the check just as `[run] executor = "slurm"` in the plan does (the cluster grants devices).
#[test]
fn executor_slurm_on_the_command_line_lifts_the_local_pool_check() {
    let dir = tempdir();
    let plan = dir.path().join("big.toml");
    std::fs::write(
        &plan,
        "[campaign]\nname = \"big\"\n\n[axes]\nvariant = [\"mesh\"]\np = [4]\ncount = [256]\nstacks = [\"host\"]\n\n[devices]\nkind = \"npu\"\nids = \"0-1\"\n",
    )
    .unwrap();
    let path = plan.to_str().unwrap();
    let local = run(&["dry-run", path]);
    assert_eq!(local.status.code(), Some(2), "{}", stdout(&local));
    assert!(
        stderr(&local).contains("needs 4 devices but the pool has only 2"),
        "{}",
        stderr(&local)
    );
    let slurm = run(&["dry-run", path, "--executor", "slurm"]);
    assert_eq!(slurm.status.code(), Some(0), "{}", stderr(&slurm));
    assert!(stdout(&slurm).contains("sbatch"), "{}", stdout(&slurm));
}

/// A plan made by appending `extra` to a small valid one (and `edit` applied to it).
fn hostile_plan(
    dir: &std::path::Path,
    name: &str,
    edit: &dyn Fn(String) -> String,
    extra: &str,
) -> String {
    let base =
        "[campaign]\nname = \"h\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\n\
                p = [2]\ncount = [64]\nstacks = [\"host\"]\n[rounds]\nwarmup = 1\ntimed = 3\n\
                [devices]\nkind = \"cpu\"\n";
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("{}{extra}", edit(base.to_string()))).unwrap();
    path.display().to_string()
}

/// Every class of nonsense or hostility a plan can hold is refused by `validate` before anything
/// runs: exit 2, the field located with file:line:col, what was expected — never a crash, a hang
/// or an accepted value.
#[test]
fn hostile_and_nonsensical_plans_are_refused_at_validate() {
    let tmp = tempdir();
    let same = |s: String| s;
    let ors = vec!["p == 2"; 5000].join(" or ");
    let nots = format!("{}p == 2", "not ".repeat(5000));
    let template = tmp.path().join("broken.md.j2");
    std::fs::write(&template, "{% for r in runs %}{{ r.case_id }\n").unwrap();
    let include = tmp.path().join("include.md.j2");
    std::fs::write(&include, "{% include \"other.md.j2\" %}\n").unwrap();
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "ors",
            hostile_plan(
                tmp.path(),
                "ors",
                &same,
                &format!("[filter]\nwhere = \"{ors}\"\n"),
            ),
            "filter.where",
            "bytes long",
        ),
        (
            "nots",
            hostile_plan(
                tmp.path(),
                "nots",
                &same,
                &format!("[filter]\nwhere = \"{}\"\n", &nots[..1200]),
            ),
            "filter.where",
            "operators",
        ),
        (
            "adapt_one_size",
            hostile_plan(
                tmp.path(),
                "adapt_one_size",
                &same,
                "[adapt]\ncrossover = true\n",
            ),
            "adapt.crossover",
            "a `count` axis with two or more sizes",
        ),
        (
            "adapt_resolution",
            hostile_plan(
                tmp.path(),
                "adapt_resolution",
                &same,
                "[adapt]\nresolution = 1.0\n",
            ),
            "adapt.resolution",
            "a number above 1 and at most 16",
        ),
        (
            "repeats_min",
            hostile_plan(
                tmp.path(),
                "repeats_min",
                &same,
                "[run]\nrepeats = { min = 2, max = 9 }\n",
            ),
            "run.repeats.min",
            "a verdict needs 3 repeats",
        ),
        (
            "repeats_order",
            hostile_plan(
                tmp.path(),
                "repeats_order",
                &same,
                "[run]\nrepeats = { min = 5, max = 4 }\n",
            ),
            "run.repeats",
            "max (4) is below min (5)",
        ),
        (
            "repeats_word",
            hostile_plan(
                tmp.path(),
                "repeats_word",
                &same,
                "[run]\nrepeats = \"many\"\n",
            ),
            "run.repeats",
            "expected a number of repeats, \"auto\"",
        ),
        (
            "budget_zero",
            hostile_plan(tmp.path(), "budget_zero", &same, "[run]\nbudget = \"0s\"\n"),
            "run.budget",
            "longer than zero",
        ),
        (
            "timed",
            hostile_plan(
                tmp.path(),
                "timed",
                &|s| s.replace("timed = 3", "timed = 2147483648"),
                "",
            ),
            "rounds.timed",
            "between 0 and 100000",
        ),
        (
            "case_timed",
            hostile_plan(
                tmp.path(),
                "case_timed",
                &|s| {
                    s.replace("[rounds]\nwarmup = 1\ntimed = 3\n", "").replace(
                        "platform = \"host\"",
                        "platform = \"host\"\ntimed_rounds = 1000000000",
                    )
                },
                "",
            ),
            "case.timed_rounds",
            "between 1 and 100000",
        ),
        (
            "both_rounds",
            hostile_plan(
                tmp.path(),
                "both_rounds",
                &|s| {
                    s.replace(
                        "platform = \"host\"",
                        "platform = \"host\"\ntimed_rounds = 5",
                    )
                },
                "",
            ),
            "rounds.timed",
            "in one place",
        ),
        (
            "block_dim",
            hostile_plan(
                tmp.path(),
                "block_dim",
                &|s| s.replace("platform = \"host\"", "platform = \"host\"\nblock_dim = -1"),
                "",
            ),
            "case.block_dim",
            "between 1 and",
        ),
        (
            "env_key",
            hostile_plan(
                tmp.path(),
                "env_key",
                &same,
                "[stacks.x]\ncommand = [\"true\"]\nenv = { \"X=1; touch FILE; Y\" = \"1\" }\n",
            ),
            "stacks.x.env.X=1; touch FILE; Y",
            "not an environment variable name",
        ),
        (
            "nul",
            hostile_plan(
                tmp.path(),
                "nul",
                &same,
                "[stacks.x]\ncommand = [\"a\\u0000b\"]\n",
            ),
            "stacks.x.command[0]",
            "NUL",
        ),
        (
            "min_max_p",
            hostile_plan(
                tmp.path(),
                "min_max_p",
                &same,
                "[stacks.x]\ncommand = [\"true\"]\nmin_p = 8\nmax_p = 4\n",
            ),
            "stacks.x.min_p",
            "above max_p",
        ),
        (
            "multiple_of",
            hostile_plan(
                tmp.path(),
                "multiple_of",
                &same,
                "[stacks.x]\ncommand = [\"true\"]\np_multiple_of = 0\n",
            ),
            "stacks.x.p_multiple_of",
            "between 1 and",
        ),
        (
            "counts",
            hostile_plan(
                tmp.path(),
                "counts",
                &same,
                "[stacks.x]\ncommand = [\"true\"]\ncounts = { min = 100, max = 10 }\n",
            ),
            "stacks.x.counts",
            "above counts.max",
        ),
        (
            "counts_key",
            hostile_plan(
                tmp.path(),
                "counts_key",
                &same,
                "[stacks.x]\ncommand = [\"true\"]\ncounts = { min = 1, maxx = 10 }\n",
            ),
            "stacks.x.counts.maxx",
            "unknown key",
        ),
        (
            "where",
            hostile_plan(
                tmp.path(),
                "where",
                &same,
                &format!(
                    "[stacks.x]\ncommand = [\"true\"]\nwhere = [\"{}\"]\n",
                    vec!["p"; 400].join(" or ")
                ),
            ),
            "stacks.x.where[0]",
            "operators",
        ),
        (
            "ids",
            hostile_plan(
                tmp.path(),
                "ids",
                &|s| s.replace("kind = \"cpu\"", "kind = \"npu\"\nids = \"0,,1\""),
                "",
            ),
            "devices.ids",
            "not a device list",
        ),
        (
            "groups",
            hostile_plan(
                tmp.path(),
                "groups",
                &|s| {
                    s.replace(
                        "kind = \"cpu\"",
                        "kind = \"npu\"\nids = \"0-3\"\ngroups = [\"0-1\", \"1-2\"]",
                    )
                },
                "",
            ),
            "devices.groups",
            "must be disjoint",
        ),
        (
            "poll",
            hostile_plan(
                tmp.path(),
                "poll",
                &same,
                "[slurm]\npoll_interval = \"0s\"\n",
            ),
            "slurm.poll_interval",
            "between 10ms and 1h",
        ),
        (
            "time_limit",
            hostile_plan(
                tmp.path(),
                "time_limit",
                &same,
                "[slurm]\ntime_limit = \"abc\"\n",
            ),
            "slurm.time_limit",
            "not a Slurm time limit",
        ),
        (
            "template",
            hostile_plan(
                tmp.path(),
                "template",
                &same,
                &format!("[report]\ntemplate = \"{}\"\n", template.display()),
            ),
            "report.template",
            "does not parse",
        ),
        (
            "include",
            hostile_plan(
                tmp.path(),
                "include",
                &same,
                &format!("[report]\ntemplate = \"{}\"\n", include.display()),
            ),
            "report.template",
            "cannot refer to other templates",
        ),
        (
            "runs",
            hostile_plan(
                tmp.path(),
                "runs",
                &|s| {
                    s.replace(
                        "count = [64]",
                        &format!(
                            "count = [{}]",
                            (1..=1001)
                                .map(|c| c.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                },
                "[run]\nrepeats = 1000\n",
            ),
            "axes",
            "more than the maximum of 1000000",
        ),
    ];
    for (name, path, field, expected) in cases {
        let out = run(&["validate", &path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("overflow"),
            "{name}: {err}"
        );
        assert!(
            err.contains(&format!("{name}.toml:")),
            "{name}: not located: {err}"
        );
        assert!(
            err.contains(&format!(": {field}: ")),
            "{name}: field {field} not named: {err}"
        );
        assert!(
            err.contains(expected),
            "{name}: `{expected}` not said: {err}"
        );
    }
}

/// A plan path that is a FIFO or a device is refused at once (nothing ever writes the FIFO:
/// a blocking open would hang `validate` for good).
#[test]
fn plans_that_are_not_regular_files_are_refused_without_blocking() {
    let tmp = tempdir();
    let fifo = tmp.path().join("plan.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = tmp.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (path, what) in [
        (fifo.to_str().unwrap(), "a FIFO"),
        (zero.to_str().unwrap(), "a device"),
    ] {
        for cmd in ["validate", "dry-run"] {
            let out = run(&[cmd, path]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd} {path}: {err}");
            assert!(
                err.contains(what) && err.contains("not a regular file"),
                "{err}"
            );
        }
    }
}

/// A host plan of one case of P ranks (mesh, 256 elements, few rounds).
fn one_case_plan(dir: &std::path::Path, p: usize) -> std::path::PathBuf {
    let plan = dir.join(format!("p{p}.toml"));
    std::fs::write(
        &plan,
        format!(
            "[campaign]\nname = \"over\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\np = [{p}]\ncount = [256]\n[rounds]\nwarmup = 0\ntimed = 2\n[devices]\nkind = \"cpu\"\n"
        ),
    )
    .unwrap();
    plan
}

#[test]
fn a_plan_whose_p_exceeds_the_cpus_says_so_at_validate_dry_run_and_before_run() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let tmp = crate::util::tempdir();
    let plan = one_case_plan(tmp.path(), cpus + 1);
    let plan = plan.to_str().unwrap();
    let says = |err: &str, over: usize| {
        err.starts_with("warning: ")
            && err.contains(&format!(
            "{over} of {over} runs oversubscribe this machine: their P (up to {}) exceeds its {cpus} CPU",
            cpus + 1
        ))
    };
    let out = run(&["validate", plan]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(says(&stderr(&out), 3), "validate: {}", stderr(&out));
    let out = run(&["dry-run", plan]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(says(&stderr(&out), 3), "dry-run: {}", stderr(&out));
    assert!(stdout(&out).ends_with("1 case × 1 stack × 3 repeats = 3 runs\n"));
    let results = tmp.path().join("results");
    let out = run(&[
        "run",
        plan,
        "-q",
        "--repeats",
        "1",
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(says(&stderr(&out), 1), "run: {}", stderr(&out));
    // The warning is the truth the results row records.
    let run_dir = std::fs::read_dir(results.join("over"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(rows["runs"][0]["oversubscribed"], true, "{rows}");

    // P within the machine: nothing to warn about.
    if cpus >= 2 {
        let fits = one_case_plan(tmp.path(), 2);
        for cmd in ["validate", "dry-run"] {
            let out = run(&[cmd, fits.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            assert!(
                !stderr(&out).contains("oversubscribe"),
                "{cmd}: {}",
                stderr(&out)
            );
        }
    }
}

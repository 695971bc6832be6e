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
        err.contains("unknown variant `star`: no stack of this plan supports it"),
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
    assert_eq!(stdout(&out), "ok: 108 cases\n");
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
    assert_eq!(lines.len(), 1 + 108 + 1 + 10, "{text}");
    assert!(
        lines[110..]
            .contains(&"  skipped hccl: variant ring not supported by this stack (36 runs)"),
        "{text}"
    );
    assert!(lines[0].starts_with("case_id"));
    assert!(
        lines[1].starts_with("mesh_p2_count256_fp32_a2a3_d0-1 "),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with("  hccl,simpler,host"), "{}", lines[1]);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ring_") && l.ends_with("hccl(skip),simpler(skip),host")),
        "unsupported stacks are marked"
    );
    // How many are skipped depends on the shipped stack definitions' limits.
    let last = lines[109];
    assert!(
        last.starts_with("108 cases × 3 stacks = 324 runs ("),
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
    assert_eq!(rows[0]["warmup"], 1);
    assert_eq!(rows[0]["timed"], 3);
    assert_eq!(rows[0]["stacks"], serde_json::json!(["host"]));
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
        stdout(&out).contains("\n18 cases × 3 stacks = 54 runs"),
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
        assert_eq!(stdout(&out), format!("ok: {n} cases\n"), "{plan}");
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

use std::collections::BTreeMap;

use super::ingest::Ingested;
use super::query::SeriesFilter;
use super::*;
use crate::model::case::{Case, Variant};
use crate::model::results::{Provenance, ResultSet, RunResult, RunStatus, Sample, StackRoot};

/// A passing run of `stack` (mesh, P = 2, 256) with one warmup round and `times` timed.
pub(crate) fn run(stack: &str, times: &[f64], started: &str) -> RunResult {
    let case = Case::new(Variant::Mesh, 2, 256);
    let mut samples = vec![Sample {
        round: 1,
        phase: "warmup-1".into(),
        execute_s: Some(1.0),
        ok: true,
        ..Sample::default()
    }];
    for (i, t) in times.iter().enumerate() {
        samples.push(Sample {
            round: i as u32 + 2,
            phase: Sample::label(true, i as u32 + 1),
            execute_s: Some(*t),
            ok: true,
            ..Sample::default()
        });
    }
    RunResult {
        case_id: case.case_id(),
        case,
        stack: stack.into(),
        status: RunStatus::Pass,
        error: None,
        samples,
        bundle: "cases/x/y".into(),
        attempt: 1,
        exit_code: Some(0),
        started: Some(started.into()),
        ended: None,
        timing_source: Some("stack".into()),
        cpus: None,
        cpu_contention: None,
        rank_nodes: None,
        node_hardware: Vec::new(),
        ran: None,
    }
}

/// A result set of campaign `c` stamped `stamp`, with a `host` stack root.
pub(crate) fn set(stamp: &str, runs: Vec<RunResult>) -> ResultSet {
    let mut roots = BTreeMap::new();
    roots.insert(
        "host".to_string(),
        StackRoot {
            path: None,
            git_commit: Some(format!("commit-{stamp}")),
            ..StackRoot::default()
        },
    );
    ResultSet {
        campaign: "c".into(),
        timestamp: stamp.into(),
        provenance: Provenance {
            campaign_version: "0.1.0".into(),
            host: "node1".into(),
            cpu: "cpu".into(),
            stack_roots: roots,
            ..Provenance::default()
        },
        runs,
        quarantined: BTreeMap::new(),
        metrics: BTreeMap::new(),
    }
}

#[test]
fn migrates_to_the_latest_version_and_refuses_a_newer_store() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("sub/history.sqlite");
    let h = History::open(&path).unwrap();
    assert_eq!(h.version().unwrap(), schema::latest());
    drop(h);
    // Reopening applies nothing twice.
    assert_eq!(
        History::open(&path).unwrap().version().unwrap(),
        schema::latest()
    );
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let err = History::open(&path).err().unwrap().to_string();
    assert!(err.contains("schema version 99"), "{err}");
    let missing = History::open_existing(&tmp.path().join("none.sqlite"));
    assert!(missing
        .err()
        .unwrap()
        .to_string()
        .contains("no history store"));
}

#[test]
fn ingest_is_idempotent_and_a_changed_run_dir_keeps_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let a = tmp.path().join("run_20260101_000000");
    let b = tmp.path().join("run_20260102_000000");
    let rs_a = set(
        "20260101_000000",
        vec![run("host", &[1.0, 1.1, 0.9], "2026-01-01T00:00:01+00:00")],
    );
    let rs_b = set(
        "20260102_000000",
        vec![run("host", &[2.0, 2.1, 1.9], "2026-01-02T00:00:01+00:00")],
    );
    assert_eq!(h.ingest(&b, &rs_b).unwrap(), Ingested::Added);
    assert_eq!(h.ingest(&a, &rs_a).unwrap(), Ingested::Added);
    assert_eq!(h.ingest(&a, &rs_a).unwrap(), Ingested::Unchanged);
    let series = h.series(&SeriesFilter::default()).unwrap();
    assert_eq!(series.len(), 1);
    let s = &series[0];
    // Time order, not ingest order; the commit labels each point.
    let medians: Vec<f64> = s.points.iter().map(|p| p.median_s).collect();
    assert_eq!(medians, vec![1.0, 2.0]);
    assert_eq!(
        s.points[0].commit.as_deref(),
        Some("commit-20260101_000000")
    );
    assert!(s.points[0].ci_lo_s <= 1.0 && s.points[0].ci_hi_s >= 1.0);
    assert_eq!(s.points[0].n, 3);
    assert_eq!(s.key.host_fingerprint, host_fingerprint("node1", "cpu"));
    let id_a = s.points[0].run_dir_id;
    // A resumed run dir (more runs) replaces its rows under the same id.
    let mut more = rs_a.clone();
    more.runs
        .push(run("other", &[3.0], "2026-01-01T00:00:02+00:00"));
    assert_eq!(h.ingest(&a, &more).unwrap(), Ingested::Updated);
    let dirs = h.run_dirs().unwrap();
    assert_eq!(dirs.len(), 2);
    assert_eq!(dirs[0].stamp, "20260102_000000", "newest first");
    assert_eq!((dirs[1].id, dirs[1].runs), (id_a, 2));
    // What a settled resume asks: the run count of one run dir, or none for an unknown one.
    assert_eq!(h.runs_of(&dirs[1].path).unwrap(), Some(2));
    assert_eq!(h.runs_of(&dirs[0].path).unwrap(), Some(1));
    assert_eq!(h.runs_of("/nowhere/run_20260101_000000").unwrap(), None);
    let samples: i64 = h
        .conn
        .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
        .unwrap();
    assert_eq!(samples, 4 + 4 + 2, "warmup rounds are kept too");
    let only = SeriesFilter::new(Some("ring_*"), None).unwrap();
    assert!(h.series(&only).unwrap().is_empty());
    assert!(SeriesFilter::new(Some("[x"), None).is_err());
}

#[test]
fn nested_checkouts_are_found_below_a_root() {
    let tmp = tempfile::tempdir().unwrap();
    for (dir, commit) in [("", "aaa"), ("runtime", "bbb"), ("third/party/lib", "ccc")] {
        let g = tmp.path().join(dir).join(".git");
        std::fs::create_dir_all(&g).unwrap();
        std::fs::write(g.join("HEAD"), format!("{commit}\n")).unwrap();
    }
    let found = ingest::nested_checkouts(tmp.path());
    let got: Vec<(String, Option<String>)> = found
        .iter()
        .map(|(p, c)| {
            (
                p.strip_prefix(tmp.path()).unwrap().display().to_string(),
                c.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("runtime".to_string(), Some("bbb".to_string())),
            ("third/party/lib".to_string(), Some("ccc".to_string())),
        ]
    );
    assert_eq!(host_fingerprint("", ""), "unknown");
}

#[test]
fn store_paths_follow_the_results_dir() {
    assert_eq!(store_path(None), Path::new("results/history.sqlite"));
    assert_eq!(
        store_path(Some(Path::new("/x/results/campaigns"))),
        Path::new("/x/results/history.sqlite")
    );
    assert_eq!(
        store_path(Some(Path::new("/data/bench"))),
        Path::new("/data/bench/history.sqlite")
    );
    assert_eq!(
        results_dir_of(Path::new("/data/bench/smoke/run_20260101_000000"), "smoke"),
        Some(PathBuf::from("/data/bench"))
    );
    assert_eq!(
        results_dir_of(Path::new("/tmp/x/run_20260101_000000"), "smoke"),
        None
    );
    assert_eq!(
        results_dir_of(Path::new("/data/bench/smoke/copy"), "smoke"),
        None
    );
}

#[test]
fn repeats_of_a_case_are_one_point_over_all_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let dir = tmp.path().join("c/20260101_000000");
    let mut r2 = run("host", &[3.0, 3.1, 2.9], "2026-01-01T00:00:02+00:00");
    r2.case_id = crate::model::results::run_id(&r2.case_id, 2);
    let rs = set(
        "20260101_000000",
        vec![
            run("host", &[1.0, 1.1, 0.9], "2026-01-01T00:00:01+00:00"),
            r2,
        ],
    );
    h.ingest(&dir, &rs).unwrap();
    let series = h.series(&SeriesFilter::default()).unwrap();
    assert_eq!(series.len(), 1, "two repeats are one series");
    let points = &series[0].points;
    assert_eq!(points.len(), 1, "and one point of it");
    // The mean of the repeats' medians (1.0 and 3.0), over 3 + 3 timed rounds.
    assert_eq!(points[0].median_s, 2.0);
    assert_eq!(points[0].n, 6);
    // Resampling repeats: the interval spans the two repeats' medians, not one repeat's rounds.
    assert!(
        points[0].ci_lo_s <= 1.1 && points[0].ci_hi_s >= 2.9,
        "{:?}",
        points[0]
    );
}

#[test]
fn a_time_that_cannot_be_one_never_reaches_the_series() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let a = tmp.path().join("run_20260101_000000");
    let b = tmp.path().join("run_20260102_000000");
    let rs_a = set(
        "20260101_000000",
        vec![run("host", &[1.0, 1e308, 0.9], "2026-01-01T00:00:01+00:00")],
    );
    let rs_b = set(
        "20260102_000000",
        vec![run(
            "host",
            &[f64::INFINITY, -1.0],
            "2026-01-02T00:00:01+00:00",
        )],
    );
    h.ingest(&a, &rs_a).unwrap();
    h.ingest(&b, &rs_b).unwrap();
    let series = h.series(&SeriesFilter::default()).unwrap();
    // Only the first run dir has a point, from its two real rounds; the second has none.
    assert_eq!(series.len(), 1);
    let points = &series[0].points;
    assert_eq!(points.len(), 1, "{points:?}");
    assert!(points[0].median_s.is_finite() && points[0].median_s <= 1.0);
}

/// Three repeats of one (case, stack): each `(level, cpu_contention)` is one repeat's 30 rounds.
fn repeats(levels: &[(f64, Option<f64>)], started: &str) -> Vec<RunResult> {
    levels
        .iter()
        .enumerate()
        .map(|(k, (m, contention))| {
            let rounds: Vec<f64> = (0..30).map(|i| m * (1.0 + 0.002 * i as f64)).collect();
            let mut r = run("host", &rounds, started);
            if k > 0 {
                r.case_id = format!(
                    "{}{}{}",
                    r.case_id,
                    crate::model::results::REPEAT_MARK,
                    k + 1
                );
            }
            r.cpu_contention = *contention;
            r
        })
        .collect()
}

/// Ingest one run dir per entry (its stamp, start time and repeats) and return the steps of
/// the one series, as `history regressions` finds them.
fn steps_of(dirs: &[(String, Vec<RunResult>)]) -> Vec<crate::model::series::Step> {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    for (stamp, runs) in dirs {
        let dir = tmp.path().join(format!("run_{stamp}"));
        h.ingest(&dir, &set(stamp, runs.clone())).unwrap();
    }
    let series = h.series(&SeriesFilter::default()).unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    assert_eq!(series[0].points.len(), dirs.len());
    crate::analysis::changepoint::series_steps(
        &series[0],
        &crate::analysis::changepoint::Params::default(),
    )
}

/// The first false alarm: two runs of identical code six minutes apart, the second
/// 30 % faster (a busy machine). One earlier point cannot measure the series' noise: no step.
#[test]
fn two_runs_six_minutes_apart_thirty_percent_apart_are_no_step() {
    let calm = |m| vec![(m, None), (m, None), (m, None)];
    let steps = steps_of(&[
        (
            "20261201_100000".into(),
            repeats(&calm(1e-3), "2026-12-01T10:00:00Z"),
        ),
        (
            "20261201_100600".into(),
            repeats(&calm(0.7e-3), "2026-12-01T10:06:00Z"),
        ),
    ]);
    assert!(steps.is_empty(), "{steps:?}");
}

/// The second false alarm: one repeat starved of CPU (2 ms where its siblings took
/// 1.3 µs) made its point 695 µs and the next run a −99.8 % step; the same the other way round
/// is a false regression with exit 1. Neither is a step now: the point is the median of its
/// repeats, and a contended point is left out.
#[test]
fn one_starved_repeat_is_no_step_either_way() {
    let calm = vec![(1.3e-6, Some(0.0)), (1.31e-6, Some(0.01)), (1.29e-6, None)];
    let starved = vec![
        (1.3e-6, Some(0.0)),
        (1.32e-6, Some(0.02)),
        (2.0e-3, Some(0.7)),
    ];
    let dir = |i: usize, r: &Vec<(f64, Option<f64>)>| {
        let start = format!("2026-12-01T10:{i:02}:00Z");
        (format!("20261201_10{i:02}00"), repeats(r, &start))
    };
    // Starved in the newest run: would be "REGRESSION slower ×500".
    let newest: Vec<_> = (0..4)
        .map(|i| dir(i, if i == 3 { &starved } else { &calm }))
        .collect();
    assert!(steps_of(&newest).is_empty());
    // Starved in the first run, calm after: would be "faster −99.8 %".
    let first: Vec<_> = (0..4)
        .map(|i| dir(i, if i == 0 { &starved } else { &calm }))
        .collect();
    assert!(steps_of(&first).is_empty());
}

#[test]
/// Contention is weighed, not a veto (issue 45, item 1): a doubling at a point stalled 45 % of
/// its time (which could explain at most ×1.82) is still a regression; stalled 60 % (up to
/// ×2.5) it is not called; calm it is.
fn a_contended_point_is_weighed_and_the_same_point_calm_is_a_regression() {
    let level = |m: f64, c: Option<f64>| vec![(m, c), (m * 1.01, c), (m * 0.99, c)];
    let dirs = |newest_contention: Option<f64>| -> Vec<(String, Vec<RunResult>)> {
        (0..4)
            .map(|i| {
                let start = format!("2026-12-01T1{i}:00:00Z");
                let r = if i == 3 {
                    level(2e-3, newest_contention)
                } else {
                    level(1e-3, Some(0.0))
                };
                (format!("20261201_1{i}0000"), repeats(&r, &start))
            })
            .collect()
    };
    assert!(steps_of(&dirs(Some(0.60))).is_empty());
    let weighed = steps_of(&dirs(Some(0.45)));
    assert_eq!(weighed.len(), 1, "{weighed:?}");
    assert!(weighed[0].current && weighed[0].at == 3, "{weighed:?}");
    let calm = steps_of(&dirs(Some(0.01)));
    assert_eq!(calm.len(), 1, "{calm:?}");
    assert!(calm[0].current && calm[0].at == 3, "{calm:?}");
}

/// Series are keyed by op: an allgather of the same shape is its own series, and a stored case
/// without `op` (every store before the op axis) reads as allreduce, listed first.
#[test]
fn series_are_keyed_by_op_and_old_cases_are_allreduce() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let mut gather = run("host", &[2.0, 2.1, 1.9], "2026-01-01T00:00:02+00:00");
    gather.case = gather
        .case
        .clone()
        .with_op(crate::model::case::Op::Allgather);
    gather.case_id = gather.case.case_id();
    let rs = set(
        "20260101_000000",
        vec![
            gather,
            run("host", &[1.0, 1.1, 0.9], "2026-01-01T00:00:01+00:00"),
        ],
    );
    h.ingest(&tmp.path().join("c/20260101_000000"), &rs)
        .unwrap();
    let series = h.series(&SeriesFilter::default()).unwrap();
    let names: Vec<(&str, &str)> = series
        .iter()
        .map(|s| (s.op.as_str(), s.case_id.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("allreduce", "mesh_p2_count256_fp32_a2a3_d0-1"),
            ("allgather", "allgather_mesh_p2_count256_fp32_a2a3_d0-1"),
        ]
    );
    assert_ne!(series[0].key.case_key, series[1].key.case_key);
}

/// Issue 44: a series is one campaign's runs of a case with the same timing settings — the same
/// case run by another plan, with other rounds, or sharing the machine where the others ran
/// alone, starts a series of its own; runs that agree on all of it are one series.
#[test]
fn series_are_kept_apart_by_campaign_rounds_exclusive_runs_and_pinned_placement() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let mut ingest = |n: u32, edit: &dyn Fn(&mut ResultSet)| {
        let stamp = format!("2026010{n}_000000");
        let started = format!("2026-01-0{n}T00:00:01+00:00");
        let mut rs = set(&stamp, vec![run("host", &[1.0, 1.1, 0.9], &started)]);
        rs.provenance.exclusive = Some(true);
        edit(&mut rs);
        let dir = tmp.path().join(format!("run_{stamp}"));
        h.ingest(&dir, &rs).unwrap();
    };
    ingest(1, &|_| {});
    ingest(2, &|_| {});
    ingest(3, &|rs| rs.campaign = "other".into());
    ingest(4, &|rs| rs.runs[0].case.timed_rounds += 7);
    ingest(5, &|rs| rs.provenance.exclusive = Some(false));
    // Pinned devices start their own series; two pinned campaigns are one.
    ingest(6, &|rs| rs.provenance.placement = Some("pinned".into()));
    ingest(7, &|rs| rs.provenance.placement = Some("pinned".into()));
    let series = h.series(&SeriesFilter::default()).unwrap();
    let mut sizes: Vec<(String, usize)> = (series.iter())
        .map(|s| (s.campaign.clone(), s.points.len()))
        .collect();
    sizes.sort();
    assert_eq!(
        sizes,
        vec![
            ("c".to_string(), 1),
            ("c".to_string(), 1),
            ("c".to_string(), 2),
            ("c".to_string(), 2),
            ("other".to_string(), 1)
        ]
    );
}

/// A store from before series keys (version 3) is migrated: its rows keep their case key with
/// their campaign's name, so two campaigns' old runs of one case are two series.
#[test]
fn an_older_store_gets_series_keys_by_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("history.sqlite");
    let mut h = History::open(&path).unwrap();
    for (n, campaign) in [(1, "a"), (2, "b")] {
        let stamp = format!("2026010{n}_000000");
        let started = format!("2026-01-0{n}T00:00:01+00:00");
        let mut rs = set(&stamp, vec![run("host", &[1.0], &started)]);
        rs.campaign = campaign.into();
        h.ingest(&tmp.path().join(format!("run_{stamp}")), &rs)
            .unwrap();
    }
    drop(h);
    // Back to version 3: no series keys (and no straggler cells, version 5's, nor stack
    // definitions, version 6's).
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "DROP TABLE straggler_cells; DROP INDEX runs_by_series_key; \
         ALTER TABLE runs DROP COLUMN series_key; ALTER TABLE runs DROP COLUMN stack_definition;",
    )
    .unwrap();
    c.pragma_update(None, "user_version", 3).unwrap();
    drop(c);
    let h = History::open(&path).unwrap();
    assert_eq!(h.version().unwrap(), schema::latest());
    let series = h.series(&SeriesFilter::default()).unwrap();
    assert_eq!(series.len(), 2);
    assert!(series
        .iter()
        .all(|s| s.key.series.ends_with(&format!("@{}", s.campaign))));
}

/// A run of `run` whose 12 timed rounds carry per-rank times, rank 1 (device 1) 20 % late.
fn late_run(started: &str) -> RunResult {
    let mut r = run("host", &[1.2e-3; 12], started);
    r.case.device_ids = vec![0, 1];
    for s in r.samples.iter_mut().filter(|s| s.is_timed()) {
        s.per_rank_execute_s = vec![1.0e-3, 1.2e-3];
    }
    r
}

/// Each ingested run dir keeps its straggler cells; a run dir reads back those of the earlier
/// run dirs of its machine only (not its own, not later ones, not another machine's).
#[test]
fn straggler_cells_of_earlier_campaigns_on_the_machine_come_back() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let dirs: Vec<String> = (1..=3)
        .map(|i| tmp.path().join(format!("run_{i}")).display().to_string())
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        let t = format!("2026-01-0{}T00:00:00+00:00", i + 1);
        let mut s = set(&format!("2026010{}_000000", i + 1), vec![late_run(&t)]);
        if i == 2 {
            s.provenance.host = "elsewhere".into();
        }
        h.ingest(std::path::Path::new(dir), &s).unwrap();
    }
    let first = h.earlier_stragglers(&dirs[0]).unwrap();
    assert_eq!((first.campaigns, first.cells.len()), (0, 0));
    let second = h.earlier_stragglers(&dirs[1]).unwrap();
    assert_eq!(second.campaigns, 1);
    // One cell per device of the run, on the host stack, every round kept.
    assert_eq!(second.cells.len(), 2, "{:?}", second.cells);
    let one = second.cells.iter().find(|c| c.id == 1).unwrap();
    assert_eq!((one.kind.as_str(), one.stack.as_str()), ("device", "host"));
    assert_eq!((one.rounds, one.rel.len(), one.z.len()), (12, 12, 12));
    assert_eq!(one.last, 12.0);
    assert!(
        (f64::from(one.rel[0]) - 0.0909).abs() < 1e-3,
        "{:?}",
        one.rel
    );
    // Another machine's run dir pools nothing of these.
    assert_eq!(h.earlier_stragglers(&dirs[2]).unwrap().campaigns, 0);
    assert_eq!(h.earlier_stragglers("/not/recorded").unwrap().campaigns, 0);
}

/// Only the newest `MAX_POOLED` earlier campaigns of a machine are pooled.
#[test]
fn at_most_the_newest_campaigns_are_pooled() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
    let n = stragglers::MAX_POOLED + 2;
    let mut last = String::new();
    for i in 0..n {
        last = tmp.path().join(format!("run_{i:02}")).display().to_string();
        let t = format!("2026-02-01T00:{i:02}:00+00:00");
        let s = set(&format!("20260201_00{i:02}00"), vec![late_run(&t)]);
        h.ingest(std::path::Path::new(&last), &s).unwrap();
    }
    let pooled = h.earlier_stragglers(&last).unwrap();
    assert_eq!(pooled.campaigns, stragglers::MAX_POOLED);
    assert_eq!(pooled.cells.len(), 2 * stragglers::MAX_POOLED);
}

/// Migration 7 rebuilds `samples` WITHOUT ROWID (one B-tree, not two): every sample of a store
/// recorded before is still there, in the same columns, and removing a run dir still removes
/// its samples.
#[test]
fn clustered_samples_keep_every_round_of_an_older_store() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("history.sqlite");
    let dir = tmp.path().join("run_20260101_000000");
    {
        // A store as version 6 left it, with one run dir recorded.
        let c = rusqlite::Connection::open(&path).unwrap();
        for (i, m) in schema::MIGRATIONS.iter().take(6).enumerate() {
            c.execute_batch(m).unwrap();
            c.pragma_update(None, "user_version", i as u32 + 1).unwrap();
        }
    }
    let rs = set(
        "20260101_000000",
        vec![run("host", &[1.0, 1.5, 0.5], "2026-01-01T00:00:01+00:00")],
    );
    {
        // Recorded by this build's ingest into the old table (opened without migrating).
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute(
            "INSERT INTO run_dirs (id, path, campaign, stamp, sort_time, origin, campaign_version,
                 plan_hash, host, kernel, cpu, host_fingerprint, executor, content_hash)
             VALUES (1, 'p', 'c', 's', 't', 'campaign', 'v', 'h', 'n', 'k', 'c', 'f', NULL, 'x')",
            [],
        )
        .unwrap();
        c.execute(
            "INSERT INTO runs (id, run_dir_id, case_id, case_key, equivalence_hash, case_json,
                 stack, status, attempt, n_timed) VALUES (1, 1, 'a', 'k', 'e', '{}', 'host',
                 'pass', 1, 3)",
            [],
        )
        .unwrap();
        for seq in 0..4 {
            c.execute(
                "INSERT INTO samples (run_id, seq, round, phase, ok, execute_s) VALUES
                     (1, ?1, ?1, 'timed', 1, ?2)",
                rusqlite::params![seq, 0.25 * seq as f64],
            )
            .unwrap();
        }
    }
    let mut h = History::open(&path).unwrap();
    assert_eq!(h.version().unwrap(), schema::latest());
    let sql: String = h
        .conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'samples'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(sql.contains("WITHOUT ROWID"), "{sql}");
    let kept: Vec<(i64, f64)> = h
        .conn
        .prepare("SELECT seq, execute_s FROM samples WHERE run_id = 1 ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kept, vec![(0, 0.0), (1, 0.25), (2, 0.5), (3, 0.75)]);
    // New rounds go into the rebuilt table, and a run dir's removal takes its samples along.
    h.ingest(&dir, &rs).unwrap();
    let count = |h: &History| -> i64 {
        h.conn
            .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&h), 4 + 4);
    h.conn
        .execute("DELETE FROM run_dirs WHERE id = 1", [])
        .unwrap();
    assert_eq!(count(&h), 4);
}

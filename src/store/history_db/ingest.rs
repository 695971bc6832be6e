//! Ingest: one run dir's `ResultSet` into the store, in one transaction, idempotently.
//!
//! The run dir is keyed by its absolute path and fingerprinted by a hash of its result set: the
//! same content ingested again writes nothing; new content (a resumed run dir, a re-rendered
//! old harness dir) replaces the old rows under the same id, so the run dir keeps its place in
//! time. Per run it keeps the summary the history needs (the series point — with repeats, the
//! estimate over all repeats of the (case, stack), carried by each repeat's row —, its bootstrap
//! interval, mean, n) beside every round's sample, the case key and equivalence hash, status and the stack's
//! commit; per run dir the provenance, the environment overrides and every stack root's git
//! checkout with the checkouts nested inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};

use super::{db_error, History};
use crate::analysis::stats::memo::{Memo, Resampling};
use crate::analysis::stats::{self, bootstrap, hierarchical, Bootstrap};
use crate::error::{Error, Result};
use crate::model::results::{Metric, ResultSet, RunResult, RunStatus};
use crate::store::fingerprint::HashWriter;

/// What an ingest did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingested {
    /// A run dir new to the store.
    Added,
    /// A known run dir whose results changed (e.g. resumed); its rows were replaced.
    Updated,
    /// A known run dir with the same results: nothing was written.
    Unchanged,
}

impl std::fmt::Display for Ingested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Ingested::Added => "added",
            Ingested::Updated => "updated",
            Ingested::Unchanged => "unchanged",
        })
    }
}

/// How deep below a stack root nested git checkouts are looked for.
const NESTED_DEPTH: usize = 3;
/// At most this many nested checkouts are recorded per root.
const NESTED_MAX: usize = 32;

pub use crate::model::digest::host_fingerprint;

/// Where a run dir came from.
fn origin(results: &ResultSet) -> &'static str {
    if results.provenance.campaign_version.is_empty() {
        "seed-harness"
    } else {
        "campaign"
    }
}

/// A point in time for ordering: the earliest run start, else the results' timestamp, else
/// the run dir's `run_<stamp>` name; UTC RFC 3339 so strings sort in time order.
fn sort_time(results: &ResultSet, run_dir: &Path) -> String {
    let utc = |t: chrono::DateTime<chrono::FixedOffset>| {
        t.with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    let started = results
        .runs
        .iter()
        .filter_map(|r| r.started.as_deref())
        .filter_map(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .min();
    if let Some(t) = started {
        return utc(t);
    }
    let stamp_time = |s: &str| {
        let s = s.strip_prefix("run_").unwrap_or(s);
        let s = s.get(..15).unwrap_or(s);
        chrono::NaiveDateTime::parse_from_str(s, "%Y%m%d_%H%M%S")
            .ok()
            .and_then(|n| n.and_local_timezone(chrono::Local).earliest())
            .map(|t| utc(t.fixed_offset()))
    };
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(&results.timestamp) {
        return utc(t);
    }
    stamp_time(&results.timestamp)
        .or_else(|| stamp_time(&run_dir.file_name()?.to_string_lossy()))
        .unwrap_or_default()
}

/// The stack's git commit as the run dir recorded it.
fn stack_commit(results: &ResultSet, stack: &str) -> Option<String> {
    results
        .provenance
        .stack_roots
        .get(stack)
        .and_then(|r| r.git_commit.clone())
}

/// Every stack root with its commit, and the git checkouts nested inside it (read now).
fn checkouts(results: &ResultSet) -> Vec<(String, String, Option<String>, bool)> {
    let mut out = Vec::new();
    for (stack, root) in &results.provenance.stack_roots {
        let Some(path) = &root.path else { continue };
        out.push((stack.clone(), path.clone(), root.git_commit.clone(), false));
        for (nested, commit) in nested_checkouts(Path::new(path)) {
            out.push((stack.clone(), nested.display().to_string(), commit, true));
        }
    }
    out
}

/// Git checkouts (folders with a `.git`) below `root`, up to [`NESTED_DEPTH`] levels down.
pub(crate) fn nested_checkouts(root: &Path) -> Vec<(PathBuf, Option<String>)> {
    let mut found = Vec::new();
    let mut frontier = vec![root.to_path_buf()];
    for _ in 0..NESTED_DEPTH {
        let mut next = Vec::new();
        for dir in frontier {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut subdirs: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect();
            subdirs.sort();
            for sub in subdirs {
                if sub.join(".git").exists() && found.len() < NESTED_MAX {
                    let commit = crate::store::provenance::git_commit(&sub);
                    found.push((sub.clone(), commit));
                }
                next.push(sub);
            }
        }
        frontier = next;
    }
    found
}

/// The series point of one (case, stack) of a run dir: the estimate over its passing repeats
/// (the mean of the repeats' medians; with one repeat, its median), its 95 % hierarchical
/// bootstrap interval and the mean of every timed round, all on the stack's headline metric.
/// The same numbers, from the same seeded stream, as the run dir's report: drawn through the
/// report's `memo`, so the report that follows takes the interval instead of drawing it again.
fn point(
    runs: &[&RunResult],
    results: &ResultSet,
    boot: &Bootstrap,
    memo: &Memo,
) -> Option<(f64, f64, f64, f64)> {
    let first = runs.first()?;
    let metric = results.metric(&first.stack);
    let mut repeats: Vec<Vec<f64>> = Vec::new();
    let mut all = Vec::new();
    for run in runs {
        let mut v = run.timed(metric);
        // A time that cannot be one (non-finite, negative, above a million seconds) is left
        // out: one such value would turn every later mean and interval of the series into
        // infinities that no report or query can print.
        v.retain(|&x| plausible(x));
        if v.is_empty() {
            continue;
        }
        all.extend_from_slice(&v);
        v.sort_by(f64::total_cmp);
        repeats.push(v);
    }
    let estimate = hierarchical::estimate(&repeats)?;
    // The stream key of execute_s keeps its old name, so intervals of old runs reproduce.
    let key = match metric {
        Metric::ExecuteS => format!("{}/{}", first.base_case_id(), first.stack),
        m => format!("{}/{}/{m}", first.base_case_id(), first.stack),
    };
    let ci = memo.interval(&Resampling::new(boot, repeats, key));
    let point = (estimate, ci.lo, ci.hi, stats::mean(&all)?);
    [point.0, point.1, point.2, point.3]
        .iter()
        .all(|&x| plausible(x))
        .then_some(point)
}

/// The series point of each group of runs ([`point`]), the groups shared among the cores in
/// contiguous parts: each interval has its own keyed stream, so the split changes no bit.
fn points(
    groups: &[Vec<&RunResult>],
    results: &ResultSet,
    boot: &Bootstrap,
    memo: &Memo,
) -> Vec<Option<(f64, f64, f64, f64)>> {
    crate::analysis::on_cores::map_in_order(groups, crate::analysis::on_cores::threads(), |runs| {
        point(runs, results, boot, memo)
    })
}

/// Longest time, in seconds, the store takes as a measurement (11.6 days).
const MAX_SECONDS: f64 = 1e6;

/// Could `x` be a measured time in seconds?
fn plausible(x: f64) -> bool {
    x.is_finite() && (0.0..=MAX_SECONDS).contains(&x)
}

/// A sample's time as stored: `None` (not measured) when it cannot be a time.
fn stored(x: Option<f64>) -> Option<f64> {
    x.filter(|&x| plausible(x))
}

impl History {
    /// Record the run dir `run_dir` holding `results`.
    #[cfg(test)]
    pub fn ingest(&mut self, run_dir: &Path, results: &ResultSet) -> Result<Ingested> {
        self.ingest_holding(run_dir, results, (&Memo::default(), &|| ()), None)
    }

    /// [`History::ingest`] drawing the series points' intervals through `memo`, the one the
    /// run dir's report reads next (`report::run_memo`). `warm` is called once, before any
    /// interval is drawn, when the store does not hold these results yet: the report draws
    /// its statistics into `memo` there (`report::warm_memo`), so the ingest takes their
    /// intervals instead of resampling every (case, stack) a second time.
    pub(crate) fn ingest_remembering(
        &mut self,
        run_dir: &Path,
        results: &ResultSet,
        memo: &Memo,
        warm: &dyn Fn(),
    ) -> Result<Ingested> {
        self.ingest_holding(run_dir, results, (memo, warm), None)
    }

    /// The id and content hash the store holds for the run dir at `path`.
    fn known(conn: &rusqlite::Connection, path: &str) -> rusqlite::Result<Option<(i64, String)>> {
        conn.query_row(
            "SELECT id, content_hash FROM run_dirs WHERE path = ?1",
            [path],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    }

    /// [`History::ingest`], and when `hold` is given, write that file just before the commit
    /// and wait there for ever: the test of a SIGKILL mid-ingest kills the process at that
    /// event (`campaign history ingest --hold-before-commit`, hidden).
    pub fn ingest_holding(
        &mut self,
        run_dir: &Path,
        results: &ResultSet,
        (memo, warm): (&Memo, &dyn Fn()),
        hold: Option<&Path>,
    ) -> Result<Ingested> {
        let abs = std::path::absolute(run_dir).map_err(|e| Error::io(run_dir, e))?;
        let path = abs.display().to_string();
        // The hash of the results' JSON text, serialized straight into the hash (a 10,000-run
        // set is ~40 MB of text) through a 64 KiB buffer: the serializer writes a few bytes at
        // a time, and each write straight into the hash costs a call of its own.
        let cannot =
            |e: String| Error::Environment(format!("{path}: cannot serialise results: {e}"));
        let mut text = std::io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
        serde_json::to_writer(&mut text, results).map_err(|e| cannot(e.to_string()))?;
        let hasher = text
            .into_inner()
            .map_err(|e| cannot(e.error().to_string()))?;
        let content_hash = crate::model::digest::hex_prefix(&hasher.0.finalize(), 32);
        let store = self.path.clone();
        let e = |err| db_error(&store, err);
        if let Some((_, held)) = Self::known(&self.conn, &path).map_err(e)? {
            if held == content_hash {
                return Ok(Ingested::Unchanged);
            }
        }
        // Outside the transaction: the report's statistics take seconds for a large run dir,
        // and the store stays open to other writers meanwhile.
        warm();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        // Asked again under the write lock: another process may have recorded it since.
        let known = Self::known(&tx, &path).map_err(e)?;
        let outcome = match &known {
            Some((_, h)) if *h == content_hash => return Ok(Ingested::Unchanged),
            Some((id, _)) => {
                tx.execute("DELETE FROM run_dirs WHERE id = ?1", [id])
                    .map_err(e)?;
                Ingested::Updated
            }
            None => Ingested::Added,
        };
        let id = known.map(|k| k.0);
        write_run_dir(&tx, id, (&path, &abs), results, &content_hash, memo).map_err(e)?;
        if let Some(hold) = hold {
            crate::store::atomic::write_atomic(hold, b"holding before commit\n")?;
            loop {
                std::thread::park();
            }
        }
        tx.commit().map_err(e)?;
        Ok(outcome)
    }
}

fn write_run_dir(
    tx: &Transaction<'_>,
    id: Option<i64>,
    (path, abs): (&str, &Path),
    results: &ResultSet,
    content_hash: &str,
    memo: &Memo,
) -> rusqlite::Result<()> {
    let p = &results.provenance;
    tx.execute(
        "INSERT INTO run_dirs (id, path, campaign, stamp, sort_time, origin, campaign_version,
             plan_hash, host, kernel, cpu, host_fingerprint, executor, content_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            id,
            path,
            results.campaign,
            results.timestamp,
            sort_time(results, abs),
            origin(results),
            p.campaign_version,
            p.plan_hash,
            p.host,
            p.kernel,
            p.cpu,
            host_fingerprint(&p.host, &p.cpu),
            p.executor,
            content_hash,
        ],
    )?;
    let dir_id = tx.last_insert_rowid();
    for (name, value) in &p.env {
        tx.execute(
            "INSERT INTO env (run_dir_id, name, value) VALUES (?1, ?2, ?3)",
            params![dir_id, name, value],
        )?;
    }
    let mut seen = BTreeMap::new();
    for (stack, root, commit, nested) in checkouts(results) {
        if seen.insert((stack.clone(), root.clone()), ()).is_some() {
            continue;
        }
        tx.execute(
            "INSERT INTO checkouts (run_dir_id, stack, path, git_commit, nested)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![dir_id, stack, root, commit, nested],
        )?;
    }
    let boot = Bootstrap {
        seed: p.seed.unwrap_or(bootstrap::DEFAULT_SEED),
        ..Bootstrap::default()
    };
    // A run listed twice (two attempts in one old harness file) keeps its last row.
    let mut last: BTreeMap<(&str, &str), &RunResult> = BTreeMap::new();
    for run in &results.runs {
        last.insert((run.case_id.as_str(), run.stack.as_str()), run);
    }
    // Repeats of a (case, stack) are one point of its series: every repeat's row carries it.
    let mut groups: BTreeMap<(&str, &str), Vec<&RunResult>> = BTreeMap::new();
    for run in last.into_values() {
        (groups
            .entry((run.base_case_id(), run.stack.as_str()))
            .or_default())
        .push(run);
    }
    super::stragglers::write_cells(tx, dir_id, results)?;
    let groups: Vec<Vec<&RunResult>> = groups.into_values().collect();
    let points = points(&groups, results, &boot, memo);
    for (runs, p) in groups.iter().zip(points) {
        for run in runs {
            let p = p.filter(|_| run.status == RunStatus::Pass);
            write_run(
                tx,
                dir_id,
                run,
                stack_commit(results, &run.stack),
                p,
                results,
            )?;
        }
    }
    Ok(())
}

/// What makes two runs one series (issue 44): the case (`Case::case_key`, every field but the
/// round counts), the campaign, and the settings that change timing — warmup and timed rounds,
/// whether runs ran one at a time (`provenance.exclusive`), the executor, and pinned placement
/// (`provenance.placement`). A digest of them; the same case run by another plan, with other
/// rounds, under Slurm or pinned starts its own series. Auto placement adds nothing to the
/// digest, so series recorded before placement was known go on unbroken.
/// `case_key` is the run's `Case::case_key` (worked out once per run by the caller).
pub(crate) fn series_key(run: &RunResult, case_key: &str, results: &ResultSet) -> String {
    let p = &results.provenance;
    let pinned = match p.placement.as_deref() {
        Some(placement) => format!("placement={placement}\n"),
        None => String::new(),
    };
    let facts = format!(
        "case={}\ncampaign={}\nwarmup={}\ntimed={}\nexclusive={}\nexecutor={}\n{pinned}",
        case_key,
        results.campaign,
        run.case.warmup_rounds,
        run.case.timed_rounds,
        p.exclusive
            .map_or("unknown", |e| if e { "yes" } else { "no" }),
        p.executor.as_deref().unwrap_or("local"),
    );
    crate::model::digest::sha256_hex(facts.as_bytes(), 8)
}

fn write_run(
    tx: &Transaction<'_>,
    dir_id: i64,
    run: &RunResult,
    commit: Option<String>,
    s: Option<(f64, f64, f64, f64)>,
    results: &ResultSet,
) -> rusqlite::Result<()> {
    let n_timed = run.timed(results.metric(&run.stack)).len() as i64;
    let case_json = serde_json::to_string(&run.case.to_json()).unwrap_or_default();
    let case_key = run.case.case_key();
    // Prepared once per transaction, not once per run (10,000 runs: 10,000 compilations).
    tx.prepare_cached(
        "INSERT INTO runs (run_dir_id, case_id, case_key, equivalence_hash, case_json,
             stack, status, reason, attempt, started, ended, timing_source, stack_commit,
             n_timed, median_s, ci_lo_s, ci_hi_s, mean_s, cpu_contention, oversubscribed,
             series_key, stack_definition)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                 ?19, ?20, ?21, ?22)",
    )?
    .execute(params![
        dir_id,
        run.case_id,
        case_key,
        run.case.equivalence_hash(),
        case_json,
        run.stack,
        run.status.as_str(),
        run.error,
        run.attempt,
        run.started,
        run.ended,
        run.timing_source,
        commit,
        n_timed,
        s.map(|s| s.0),
        s.map(|s| s.1),
        s.map(|s| s.2),
        s.map(|s| s.3),
        run.cpu_contention.filter(|c| c.is_finite()),
        run.oversubscribed(),
        series_key(run, &case_key, results),
        (results.provenance.stack_roots.get(&run.stack)).and_then(|r| r.definition.clone()),
    ])?;
    let run_id = tx.last_insert_rowid();
    let mut insert = tx.prepare_cached(
        "INSERT INTO samples (run_id, seq, round, phase, ok, execute_s, wall_s, device_wall_s,
             setup_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, sample) in run.samples.iter().enumerate() {
        insert.execute(params![
            run_id,
            seq as i64,
            sample.round,
            sample.phase,
            sample.ok,
            stored(sample.execute_s),
            stored(sample.wall_s),
            stored(sample.device_wall_s),
            stored(sample.setup_s),
        ])?;
    }
    Ok(())
}

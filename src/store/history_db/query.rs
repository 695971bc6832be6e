//! Reading the store back: run dirs newest first, and series (case key, stack, host
//! fingerprint) with their passing points in time order.
//!
//! Filters here are the ones every history command shares (`--case GLOB`, `--stack S`); what
//! the points mean (steps, verdicts) is decided by `analysis::changepoint` and the CLI.

use rusqlite::params;
use serde::Serialize;

use super::{db_error, History};
use crate::error::{Error, Result};
use crate::model::series::{Point, Series, SeriesKey};

/// One run dir in the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDirRow {
    pub id: i64,
    pub path: String,
    pub campaign: String,
    pub stamp: String,
    pub sort_time: String,
    /// `campaign` or `seed-harness`.
    pub origin: String,
    pub host: String,
    pub host_fingerprint: String,
    pub campaign_version: String,
    pub runs: i64,
    pub passed: i64,
}

/// Which series to read.
#[derive(Debug, Clone, Default)]
pub struct SeriesFilter {
    /// Glob over the case id (`mesh_p2_*`).
    pub case_glob: Option<glob::Pattern>,
    pub stack: Option<String>,
    /// Only series that have a run in this run dir (absolute path as ingested).
    pub run_dir: Option<String>,
}

impl SeriesFilter {
    /// A filter from the command line's `--case` and `--stack`.
    pub fn new(case_glob: Option<&str>, stack: Option<&str>) -> Result<SeriesFilter> {
        let case_glob = case_glob
            .map(|g| {
                glob::Pattern::new(g)
                    .map_err(|e| Error::Usage(format!("--case `{g}`: not a glob pattern: {e}")))
            })
            .transpose()?;
        Ok(SeriesFilter {
            case_glob,
            stack: stack.map(String::from),
            run_dir: None,
        })
    }
}

impl History {
    /// How many runs the store holds of the run dir at `path` (absolute, as ingested); `None`
    /// when it does not list that run dir. Counted in the `(run_dir_id, case_id, stack)` index
    /// alone: no run row is read (`run_dirs` reads every row for its pass count, tens of
    /// megabytes for a 100,000-run dir with a cold cache).
    pub fn runs_of(&self, path: &str) -> Result<Option<i64>> {
        let e = |err| db_error(&self.path, err);
        let id: Option<i64> = (self.conn)
            .query_row(
                "SELECT id FROM run_dirs WHERE path = ?1",
                params![path],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|err| match err {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                other => Err(other),
            })
            .map_err(e)?;
        let Some(id) = id else {
            return Ok(None);
        };
        (self.conn)
            .query_row(
                "SELECT COUNT(*) FROM runs WHERE run_dir_id = ?1",
                params![id],
                |r| r.get(0),
            )
            .map(Some)
            .map_err(e)
    }

    /// Every run dir, newest first.
    pub fn run_dirs(&self) -> Result<Vec<RunDirRow>> {
        let e = |err| db_error(&self.path, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT d.id, d.path, d.campaign, d.stamp, d.sort_time, d.origin, d.host,
                        d.host_fingerprint, d.campaign_version,
                        (SELECT COUNT(*) FROM runs r WHERE r.run_dir_id = d.id),
                        (SELECT COUNT(*) FROM runs r WHERE r.run_dir_id = d.id
                                                      AND r.status = 'pass')
                 FROM run_dirs d ORDER BY d.sort_time DESC, d.id DESC",
            )
            .map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunDirRow {
                    id: r.get(0)?,
                    path: r.get(1)?,
                    campaign: r.get(2)?,
                    stamp: r.get(3)?,
                    sort_time: r.get(4)?,
                    origin: r.get(5)?,
                    host: r.get(6)?,
                    host_fingerprint: r.get(7)?,
                    campaign_version: r.get(8)?,
                    runs: r.get(9)?,
                    passed: r.get(10)?,
                })
            })
            .map_err(e)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(e)
    }

    /// Series matching `filter`, each with its passing points oldest first; sorted by case id,
    /// stack and host.
    ///
    /// The run dir's series are one uncorrelated `IN (SELECT …)`: SQLite builds that set once
    /// (an ephemeral index), where a correlated `EXISTS` scanned every run of the run dir again
    /// for each row — quadratic in its runs (a 10,000-run report step spent minutes there).
    pub fn series(&self, filter: &SeriesFilter) -> Result<Vec<Series>> {
        let e = |err| db_error(&self.path, err);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.case_key, r.stack, d.host_fingerprint, r.case_id, d.host, d.id, d.path,
                        d.stamp, d.sort_time, r.stack_commit, r.median_s,
                        r.ci_lo_s, r.ci_hi_s, r.n_timed, r.cpu_contention, r.oversubscribed,
                        COALESCE(json_extract(r.case_json, '$.op'), 'allreduce'),
                        json_extract(r.case_json, '$.count'), json_extract(r.case_json, '$.dtype'),
                        COALESCE(r.series_key, r.case_key), d.campaign, r.stack_definition
                 FROM runs r JOIN run_dirs d ON d.id = r.run_dir_id
                 WHERE r.status = 'pass' AND r.median_s > 0
                   AND (?1 IS NULL OR r.stack = ?1)
                   AND (?2 IS NULL OR (COALESCE(r.series_key, r.case_key), r.stack,
                                       d.host_fingerprint) IN (
                        SELECT COALESCE(o.series_key, o.case_key), o.stack, od.host_fingerprint
                        FROM runs o JOIN run_dirs od ON od.id = o.run_dir_id
                        WHERE od.path = ?2))
                 ORDER BY COALESCE(r.series_key, r.case_key), r.stack, d.host_fingerprint,
                          d.sort_time, d.id",
            )
            .map_err(e)?;
        let rows = stmt
            .query_map(params![filter.stack, filter.run_dir], |r| {
                let key = SeriesKey {
                    series: r.get(19)?,
                    case_key: r.get(0)?,
                    stack: r.get(1)?,
                    host_fingerprint: r.get(2)?,
                };
                // A series is named by its planned case: repeat n's run id `<case_id>~r<n>`
                // names one run of it, not the series.
                let run_id: String = r.get(3)?;
                let case_id = crate::model::results::split_run_id(&run_id).0.to_string();
                let host: String = r.get(4)?;
                let point = Point {
                    run_dir_id: r.get(5)?,
                    run_dir: r.get(6)?,
                    stamp: r.get(7)?,
                    date: r.get(8)?,
                    commit: r.get(9)?,
                    median_s: r.get(10)?,
                    ci_lo_s: r.get(11)?,
                    ci_hi_s: r.get(12)?,
                    n: r.get::<_, i64>(13)? as usize,
                    cpu_contention: r.get(14)?,
                    oversubscribed: r.get(15)?,
                    definition: r.get(21)?,
                };
                let op: String = r.get(16)?;
                let count: Option<i64> = r.get(17).ok().flatten();
                let dtype: Option<String> = r.get(18).ok().flatten();
                let bytes = (count.zip(dtype))
                    .and_then(|(c, d)| {
                        let d: crate::model::case::Dtype = d.parse().ok()?;
                        u64::try_from(c).ok()?.checked_mul(d.elem_bytes())
                    })
                    .unwrap_or(0);
                let campaign: String = r.get(20)?;
                Ok(((key, op), case_id, (host, campaign), point, bytes))
            })
            .map_err(e)?;
        let mut out: Vec<Series> = Vec::new();
        for row in rows {
            let ((key, op), case_id, (host, campaign), point, bytes) = row.map_err(e)?;
            if let Some(g) = &filter.case_glob {
                if !g.matches(&case_id) {
                    continue;
                }
            }
            match out.last_mut() {
                Some(s) if s.key == key => {
                    // The newest name wins: a case id may have been spelled differently by the
                    // old harness.
                    s.case_id = case_id;
                    match s.points.last_mut() {
                        // Repeats of one run dir share its point; their rounds add up, and what
                        // the machine did to any of them is the point's.
                        Some(last) if last.run_dir_id == point.run_dir_id => {
                            last.n += point.n;
                            last.oversubscribed |= point.oversubscribed;
                            last.cpu_contention = match (last.cpu_contention, point.cpu_contention)
                            {
                                (Some(x), Some(y)) => Some(x.max(y)),
                                (x, y) => x.or(y),
                            };
                        }
                        _ => s.points.push(point),
                    }
                }
                _ => out.push(Series {
                    key,
                    case_id,
                    op,
                    host,
                    campaign,
                    bytes,
                    points: vec![point],
                }),
            }
        }
        // Grouped by op (allreduce first, as `Op::EVERY`), then by name.
        let rank = |op: &str| {
            crate::model::case::Op::EVERY
                .iter()
                .position(|o| o.as_str() == op)
                .unwrap_or(usize::MAX)
        };
        out.sort_by(|a, b| {
            (rank(&a.op), &a.case_id, &a.key.stack, &a.host, &a.campaign).cmp(&(
                rank(&b.op),
                &b.case_id,
                &b.key.stack,
                &b.host,
                &b.campaign,
            ))
        });
        Ok(out)
    }
}

/// Earlier campaigns' points of one series, keyed by (case id, stack).
pub type EarlierPoints = std::collections::BTreeMap<(String, String), Vec<Point>>;

impl History {
    /// For every series measured on the machine `host_fingerprint` (`ingest::host_fingerprint`),
    /// the points of its run dirs other than `leave_out` (the two campaigns being compared,
    /// absolute paths as ingested), for `compare`'s campaign-to-campaign spread
    /// (`analysis::between`, which pools them within builds: the stack's commit).
    pub fn earlier_points(
        &self,
        (host_fingerprint, campaign): (&str, &str),
        leave_out: &[String],
    ) -> Result<EarlierPoints> {
        let mut out = EarlierPoints::new();
        for s in self.series(&SeriesFilter::default())? {
            // Only the machine's runs of the same campaign: another plan's runs of the case
            // ran with other settings (issue 44).
            if s.key.host_fingerprint != host_fingerprint || s.campaign != campaign {
                continue;
            }
            // Contended points stay: the spread they add makes a verdict more careful, never
            // less (`regressions`, which calls steps from the points themselves, leaves them out).
            let points: Vec<Point> = s
                .points
                .into_iter()
                .filter(|p| !leave_out.contains(&p.run_dir))
                .collect();
            if !points.is_empty() {
                out.entry((s.case_id, s.key.stack))
                    .or_default()
                    .extend(points);
            }
        }
        Ok(out)
    }
}

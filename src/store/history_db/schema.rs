//! The schema of `history.sqlite` as an ordered list of migrations; `PRAGMA user_version` holds
//! how many have been applied.
//!
//! Migrations only ever get appended: a store written by an older campaign is brought forward
//! on open, one transaction per migration, and a store from a newer campaign (a version above
//! the list) is refused rather than misread. docs/history.md describes every table.

/// Migration `i` brings the store from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: run dirs with their provenance, runs with their summaries, per-round samples.
    r#"
CREATE TABLE run_dirs (
    id               INTEGER PRIMARY KEY,
    path             TEXT NOT NULL UNIQUE,
    campaign         TEXT NOT NULL,
    stamp            TEXT NOT NULL,
    sort_time        TEXT NOT NULL,
    origin           TEXT NOT NULL,
    campaign_version TEXT NOT NULL,
    plan_hash        TEXT,
    host             TEXT NOT NULL,
    kernel           TEXT NOT NULL,
    cpu              TEXT NOT NULL,
    host_fingerprint TEXT NOT NULL,
    executor         TEXT,
    content_hash     TEXT NOT NULL
);
CREATE TABLE env (
    run_dir_id INTEGER NOT NULL REFERENCES run_dirs(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (run_dir_id, name)
);
CREATE TABLE checkouts (
    run_dir_id INTEGER NOT NULL REFERENCES run_dirs(id) ON DELETE CASCADE,
    stack      TEXT NOT NULL,
    path       TEXT NOT NULL,
    git_commit TEXT,
    nested     INTEGER NOT NULL,
    PRIMARY KEY (run_dir_id, stack, path)
);
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    run_dir_id       INTEGER NOT NULL REFERENCES run_dirs(id) ON DELETE CASCADE,
    case_id          TEXT NOT NULL,
    case_key         TEXT NOT NULL,
    equivalence_hash TEXT NOT NULL,
    case_json        TEXT NOT NULL,
    stack            TEXT NOT NULL,
    status           TEXT NOT NULL,
    reason           TEXT,
    attempt          INTEGER NOT NULL,
    started          TEXT,
    ended            TEXT,
    timing_source    TEXT,
    stack_commit     TEXT,
    n_timed          INTEGER NOT NULL,
    median_s         REAL,
    ci_lo_s          REAL,
    ci_hi_s          REAL,
    mean_s           REAL,
    UNIQUE (run_dir_id, case_id, stack)
);
CREATE INDEX runs_by_series ON runs (case_key, stack);
CREATE TABLE samples (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    round         INTEGER NOT NULL,
    phase         TEXT NOT NULL,
    ok            INTEGER NOT NULL,
    execute_s     REAL,
    wall_s        REAL,
    device_wall_s REAL,
    setup_s       REAL,
    PRIMARY KEY (run_id, seq)
);
"#,
    // 2: what the machine did to each run, so `history regressions` can leave distorted points
    // out: its share of time stalled for a CPU and whether it had more ranks than CPUs.
    r#"
ALTER TABLE runs ADD COLUMN cpu_contention REAL;
ALTER TABLE runs ADD COLUMN oversubscribed INTEGER NOT NULL DEFAULT 0;
"#,
    // 3: calibrations (`campaign calibrate`): a machine's measured noise per size class, the
    // newest of a machine used by report, compare and history regressions.
    r#"
CREATE TABLE calibrations (
    id       INTEGER PRIMARY KEY,
    machine  TEXT NOT NULL,
    created  TEXT NOT NULL,
    plan     TEXT NOT NULL,
    run_dir  TEXT NOT NULL,
    body     TEXT NOT NULL
);
CREATE INDEX calibrations_by_machine ON calibrations (machine, created);
"#,
    // 4: series keyed by what makes runs comparable (issue 44): the case, the campaign and the
    // settings that change timing (rounds, one run at a time or several, the executor) —
    // `series_key`, a digest of them (`ingest::series_key`). Rows from before keep their case
    // key with their campaign's name: their settings were not recorded, so they are never
    // merged with newer runs or with another campaign's.
    r#"
ALTER TABLE runs ADD COLUMN series_key TEXT;
UPDATE runs SET series_key = case_key || '@' ||
    (SELECT campaign FROM run_dirs d WHERE d.id = runs.run_dir_id);
CREATE INDEX runs_by_series_key ON runs (series_key, stack);
"#,
    // 5: straggler evidence per run dir (issue 48): per (unit, stack) cell the counts and each
    // round's lateness and score (`f32` little-endian blobs), pooled over the earlier campaigns
    // of one machine by the report's straggler attribution (`history_db::stragglers`). Run dirs
    // recorded before carry none.
    r#"
CREATE TABLE straggler_cells (
    run_dir_id INTEGER NOT NULL REFERENCES run_dirs(id) ON DELETE CASCADE,
    unit_kind  TEXT NOT NULL,
    unit_node  TEXT NOT NULL,
    unit_id    INTEGER NOT NULL,
    stack      TEXT NOT NULL,
    rounds     INTEGER NOT NULL,
    runs       INTEGER NOT NULL,
    late_runs  INTEGER NOT NULL,
    last       REAL NOT NULL,
    chance     REAL NOT NULL,
    var        REAL NOT NULL,
    rel        BLOB NOT NULL,
    z          BLOB NOT NULL,
    PRIMARY KEY (run_dir_id, unit_kind, unit_node, unit_id, stack)
);
"#,
    // 6: the fingerprint of the stack's definition each run ran under (issue 43): two plans
    // defining one stack name differently stay one series, and a step where the definition
    // changed says so. Runs stored before have none (NULL: unknown, never "changed").
    r#"
ALTER TABLE runs ADD COLUMN stack_definition TEXT;
"#,
    // 7: samples clustered by their key (issue 50, item 2): a rowid table with a
    // `(run_id, seq)` primary key keeps every round twice — in the table and in the key's
    // index — and recording 10,000 runs × 51 rounds wrote both B-trees for each of the
    // 510,000 rows. WITHOUT ROWID stores a row once, in key order (the same order a run's
    // rounds are inserted and read in); the columns and their meaning are unchanged.
    r#"
CREATE TABLE samples_clustered (
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    round         INTEGER NOT NULL,
    phase         TEXT NOT NULL,
    ok            INTEGER NOT NULL,
    execute_s     REAL,
    wall_s        REAL,
    device_wall_s REAL,
    setup_s       REAL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO samples_clustered (run_id, seq, round, phase, ok, execute_s, wall_s, device_wall_s,
    setup_s)
    SELECT run_id, seq, round, phase, ok, execute_s, wall_s, device_wall_s, setup_s FROM samples;
DROP TABLE samples;
ALTER TABLE samples_clustered RENAME TO samples;
"#,
];

/// The version a store has once every migration is applied.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.len() as u32
}

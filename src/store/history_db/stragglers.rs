//! The straggler evidence of each recorded run dir (`straggler_cells`, schema version 5): per
//! (unit, stack) cell the counts and per-round lateness `analysis::straggler` tallies, written
//! when a run dir is ingested, and read back as the earlier campaigns of one machine so the
//! report pools them into its attribution (`analysis::straggler::attribute_pooled`).
//!
//! Owns the cells' rows and their encoding (each round's lateness and score as little-endian
//! `f32`s in a blob). It computes nothing: the cells come from `analysis::straggler::cells`.

use rusqlite::{params, OptionalExtension, Transaction};

use super::{db_error, History};
use crate::error::Result;
use crate::model::results::ResultSet;
use crate::model::series::{EarlierStragglers, StragglerCell};

/// Write the straggler cells of `results` for run dir `dir_id` (inside the ingest's
/// transaction).
pub(crate) fn write_cells(
    tx: &Transaction<'_>,
    dir_id: i64,
    results: &ResultSet,
) -> rusqlite::Result<()> {
    let mut insert = tx.prepare(
        "INSERT INTO straggler_cells (run_dir_id, unit_kind, unit_node, unit_id, stack, rounds,
             runs, late_runs, last, chance, var, rel, z)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?;
    for c in crate::analysis::straggler::cells(results) {
        insert.execute(params![
            dir_id,
            c.kind,
            c.node,
            c.id,
            c.stack,
            c.rounds as i64,
            c.runs as i64,
            c.late_runs as i64,
            c.last,
            c.chance,
            c.var,
            encode(&c.rel),
            encode(&c.z),
        ])?;
    }
    Ok(())
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(b: &[u8]) -> Vec<f32> {
    (b.chunks_exact(4))
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The most earlier campaigns pooled: the newest ones (each cell keeps every round's lateness,
/// so the pooled evidence grows with every campaign recorded; a machine's recent past is what
/// says how its devices behave now).
pub(crate) const MAX_POOLED: usize = 16;

impl History {
    /// The straggler cells of the campaigns recorded on the machine of run dir `run_dir` (its
    /// host fingerprint) before it (earlier `sort_time`), the newest [`MAX_POOLED`] of them,
    /// itself left out; none when `run_dir` is not recorded. Run dirs recorded before schema
    /// version 5 have no cells and count for nothing.
    pub(crate) fn earlier_stragglers(&self, run_dir: &str) -> Result<EarlierStragglers> {
        let e = |err| db_error(&self.path, err);
        let this: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT host_fingerprint, sort_time FROM run_dirs WHERE path = ?1",
                [run_dir],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(e)?;
        let Some((host, sort_time)) = this else {
            return Ok(EarlierStragglers::default());
        };
        let mut q = self
            .conn
            .prepare(
                "SELECT c.run_dir_id, c.unit_kind, c.unit_node, c.unit_id, c.stack, c.rounds,
                    c.runs, c.late_runs, c.last, c.chance, c.var, c.rel, c.z
                 FROM straggler_cells c JOIN run_dirs d ON d.id = c.run_dir_id
                 WHERE d.id IN (
                     SELECT id FROM run_dirs
                     WHERE host_fingerprint = ?1 AND path != ?2 AND sort_time < ?3
                         AND id IN (SELECT run_dir_id FROM straggler_cells)
                     ORDER BY sort_time DESC LIMIT ?4)
                 ORDER BY d.sort_time, c.run_dir_id, c.unit_kind, c.unit_node, c.unit_id, c.stack",
            )
            .map_err(e)?;
        let rows = q
            .query_map(params![host, run_dir, sort_time, MAX_POOLED as i64], |r| {
                let count = |i: usize| r.get::<_, i64>(i).map(|n| n.max(0) as usize);
                Ok((
                    r.get::<_, i64>(0)?,
                    StragglerCell {
                        kind: r.get(1)?,
                        node: r.get(2)?,
                        id: r.get(3)?,
                        stack: r.get(4)?,
                        rounds: count(5)?,
                        runs: count(6)?,
                        late_runs: count(7)?,
                        last: r.get(8)?,
                        chance: r.get(9)?,
                        var: r.get(10)?,
                        rel: decode(&r.get::<_, Vec<u8>>(11)?),
                        z: decode(&r.get::<_, Vec<u8>>(12)?),
                    },
                ))
            })
            .map_err(e)?;
        let mut out = EarlierStragglers::default();
        let mut dirs = std::collections::BTreeSet::new();
        for row in rows {
            let (dir, cell) = row.map_err(e)?;
            dirs.insert(dir);
            out.cells.push(cell);
        }
        out.campaigns = dirs.len();
        Ok(out)
    }
}

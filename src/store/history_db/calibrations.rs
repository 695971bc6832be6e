//! Calibrations in the history store (`analysis::calibration`): saved by `campaign calibrate`,
//! the newest of a machine read by report, compare and history regressions. The body is the
//! calibration as JSON (its classes change with the analysis, never the table's columns); a
//! body this build cannot read is no calibration, said as such.

use rusqlite::{params, OptionalExtension};

use super::{db_error, History};
use crate::analysis::calibration::Calibration;
use crate::error::Result;

impl History {
    /// Keep `cal` (one row; earlier calibrations of the machine stay, the newest is used).
    pub(crate) fn save_calibration(&mut self, cal: &Calibration) -> Result<()> {
        let body = serde_json::to_string(cal).unwrap_or_default();
        self.conn
            .execute(
                "INSERT INTO calibrations (machine, created, plan, run_dir, body) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![cal.machine, cal.created, cal.plan, cal.run_dir, body],
            )
            .map_err(|e| db_error(&self.path, e))?;
        Ok(())
    }

    /// The newest calibration of `machine` (`analysis::calibration::machine_of`), if any this
    /// build can read.
    pub(crate) fn calibration_of(&self, machine: &str) -> Result<Option<Calibration>> {
        let body: Option<String> = self
            .conn
            .query_row(
                "SELECT body FROM calibrations WHERE machine = ?1 \
                 ORDER BY created DESC, id DESC LIMIT 1",
                params![machine],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| db_error(&self.path, e))?;
        Ok(body.and_then(|b| serde_json::from_str(&b).ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(machine: &str, created: &str, band: f64) -> Calibration {
        Calibration {
            machine: machine.into(),
            machine_text: "host h (cpu)".into(),
            created: created.into(),
            plan: "plans/p.toml".into(),
            run_dir: "results/r".into(),
            repeats: 10,
            classes: vec![crate::analysis::calibration::ClassNoise {
                class: "< 4 KiB".into(),
                lo_bytes: 0,
                hi_bytes: Some(4096),
                rows: 3,
                false_alarms: 0,
                noise_pct: band,
                band_pct: band,
            }],
        }
    }

    #[test]
    fn the_newest_calibration_of_the_machine_is_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
        assert_eq!(h.calibration_of("m1").unwrap(), None);
        h.save_calibration(&cal("m1", "2026-12-01T00:00:00Z", 3.0))
            .unwrap();
        h.save_calibration(&cal("m1", "2026-12-02T00:00:00Z", 4.0))
            .unwrap();
        h.save_calibration(&cal("m2", "2026-12-03T00:00:00Z", 9.0))
            .unwrap();
        let got = h.calibration_of("m1").unwrap().unwrap();
        assert_eq!(got, cal("m1", "2026-12-02T00:00:00Z", 4.0));
        assert_eq!(h.calibration_of("m3").unwrap(), None);
    }
}

//! The sample values no measurement can produce, checked the same way wherever samples come
//! from: a live run's parsed output (`engine::run_status`) and a bundle read back from disk
//! (`store::load`, so a received or edited run dir cannot report a negative, zero, NaN or
//! 10³⁰⁸-second time, or a subnormal one, as a passing result: issue 43, item 3). Pure.

use std::time::Duration;

use crate::model::results::Sample;

/// Sample values no measurement can produce: not finite, not positive (times), negative
/// (phases), or longer than the run's whole timeout. Each names its round and field.
pub(crate) fn protocol_errors(samples: &[Sample], timeout: Option<Duration>) -> Vec<String> {
    let limit = timeout.map(|t| t.as_secs_f64());
    let mut out = Vec::new();
    for s in samples {
        let mut check = |field: &str, v: f64, zero_ok: bool| {
            let why = if !v.is_finite() {
                Some("is not a finite number".to_string())
            } else if v < 0.0 || (v == 0.0 && !zero_ok) {
                Some(format!(
                    "= {v} (must be {})",
                    if zero_ok { ">= 0" } else { "> 0" }
                ))
            } else if v != 0.0 && !v.is_normal() {
                // Below 2.2e-308 s no clock measures, and bytes over it overflow to an
                // infinite bandwidth (NaN further on): found by the run-dir fuzzer.
                Some(format!(
                    "= {v:e} is subnormal (no measurement is that small)"
                ))
            } else {
                limit
                    .filter(|l| v > *l)
                    .map(|l| format!("= {v} s, longer than the run's timeout ({l} s)"))
            };
            if let Some(why) = why {
                out.push(format!("round {} ({}) {field} {why}", s.round, s.phase));
            }
        };
        let times = [
            ("execute_s", s.execute_s),
            ("wall_s", s.wall_s),
            ("device_wall_s", s.device_wall_s),
        ];
        for (field, v) in times {
            if let Some(v) = v {
                check(field, v, false);
            }
        }
        if let Some(v) = s.setup_s {
            check("setup_s", v, true);
        }
        for (i, v) in s.per_rank_execute_s.iter().enumerate() {
            check(&format!("per_rank_execute_s[{i}]"), *v, false);
        }
        for (name, v) in &s.phases {
            check(&format!("phases.{name}"), *v, true);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnormal_times_and_phases_are_refused_and_the_smallest_normal_one_is_not() {
        let mut s = Sample {
            round: 3,
            phase: "timed-2".into(),
            execute_s: Some(1e-310),
            ok: true,
            ..Default::default()
        };
        s.phases.insert("init".into(), 5e-324);
        let errs = protocol_errors(std::slice::from_ref(&s), None);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].starts_with("round 3 (timed-2) execute_s = 1e-310 is subnormal"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("phases.init = 5e-324 is subnormal"),
            "{errs:?}"
        );
        s.execute_s = Some(f64::MIN_POSITIVE);
        s.phases.insert("init".into(), 0.0);
        assert!(protocol_errors(&[s], None).is_empty());
    }
}

//! `--executor slurm` without a reachable Slurm: one environment error (exit 4) naming
//! SLURM_CONF, before any run dir or job exists. Needs no cluster: it points SLURM_CONF at a
//! file that is not there.

use std::path::Path;

use crate::util::{campaign, stderr, tempdir};

fn run_with_conf(conf: &Path, results: &Path) -> (Option<i32>, String) {
    let o = campaign()
        .args([
            "run",
            "plans/smoke.toml",
            "-q",
            "--executor",
            "slurm",
            "--results-dir",
        ])
        .arg(results)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    (o.status.code(), stderr(&o))
}

#[test]
fn an_unreachable_slurm_is_one_environment_error_before_anything_is_submitted() {
    let tmp = tempdir();
    let results = tmp.path().join("results");
    // A cluster whose controller does not answer, and a SLURM_CONF that is not there.
    let dead = tmp.path().join("dead.conf");
    std::fs::write(
        &dead,
        "ClusterName=gone\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\n",
    )
    .unwrap();
    let missing = tmp.path().join("no-such-slurm.conf");
    for (conf, why) in [(&dead, "`scontrol ping`"), (&missing, "does not exist")] {
        let (code, err) = run_with_conf(conf, &results);
        assert_eq!(code, Some(4), "{err}");
        assert!(
            err.contains("Slurm is not reachable, so nothing was submitted"),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
        assert!(
            err.contains(&format!("now SLURM_CONF={}", conf.display())),
            "{err}"
        );
        assert_eq!(err.matches("error:").count(), 1, "one message: {err}");
        assert!(!err.contains("sbatch"), "nothing was submitted: {err}");
        assert!(!results.exists(), "no run dir");
    }
}

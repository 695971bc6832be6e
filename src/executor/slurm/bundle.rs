//! The files a batch job leaves in its run's bundle, and reading them back: the script itself,
//! the devices Slurm granted (`slurm.devices`) and the stack's exit code and times
//! (`slurm.result`).
//!
//! Owns the file names and their `key=value` line format. It only reads (the batch script
//! writes them, see `script`) and never decides a run's status (that is `state`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::executor::ProcessOutcome;

/// The batch script, kept in the bundle so a run can be re-submitted or read by hand.
pub(crate) const SCRIPT_FILE: &str = "slurm.sh";
/// Written when the job starts: the visible-device variables Slurm set and the chosen list.
pub(crate) const DEVICES_FILE: &str = "slurm.devices";
/// Written when the stack exits: `exit_code`, `started_ns`, `ended_ns`.
pub(crate) const RESULT_FILE: &str = "slurm.result";

/// The devices Slurm granted the job, as the batch script saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct GrantedDevices {
    /// The list the script exported as `CAMPAIGN_DEVICES` (first non-empty of
    /// NPU_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS, SLURM_STEP_GPUS), verbatim.
    pub granted: String,
    /// `granted` as numbers, when every entry is one (GPU UUIDs are not).
    pub ids: Option<Vec<u32>>,
    /// Node the job ran on.
    pub(crate) node: Option<String>,
    /// Every variable the script recorded (empty ones left out).
    pub variables: BTreeMap<String, String>,
}

/// Read `slurm.devices`; `None` when the job never started (or the file is unreadable).
pub(crate) fn read_devices(bundle_dir: &Path) -> Option<GrantedDevices> {
    let text = std::fs::read_to_string(bundle_dir.join(DEVICES_FILE)).ok()?;
    Some(parse_devices(&text))
}

pub(crate) fn parse_devices(text: &str) -> GrantedDevices {
    let mut out = GrantedDevices::default();
    for (key, value) in key_values(text) {
        match key {
            "granted" => out.granted = value.to_string(),
            "SLURMD_NODENAME" if !value.is_empty() => out.node = Some(value.to_string()),
            _ if !value.is_empty() => {
                out.variables.insert(key.to_string(), value.to_string());
            }
            _ => {}
        }
    }
    out.ids = parse_ids(&out.granted);
    out
}

/// `0,1,2` → `[0, 1, 2]`; `None` for an empty list or any non-number.
fn parse_ids(list: &str) -> Option<Vec<u32>> {
    if list.trim().is_empty() {
        return None;
    }
    list.split(',').map(|p| p.trim().parse().ok()).collect()
}

/// Read `slurm.result` as the outcome of the stack process; `None` when the stack did not
/// reach its end (the script was killed, or never started) or the file is malformed.
///
/// The shell reports a process killed by signal N as status 128+N, so such a status becomes
/// `signal = N` (as the local executor reports it).
pub(crate) fn read_result(bundle_dir: &Path) -> Option<ProcessOutcome> {
    let text = std::fs::read_to_string(bundle_dir.join(RESULT_FILE)).ok()?;
    parse_result(&text)
}

pub(crate) fn parse_result(text: &str) -> Option<ProcessOutcome> {
    let mut code = None;
    let mut started = None;
    let mut ended = None;
    let (mut psi_before, mut psi_after) = (None, None);
    for (key, value) in key_values(text) {
        match key {
            "exit_code" => code = value.parse::<i32>().ok(),
            "started_ns" => started = value.parse::<u128>().ok(),
            "ended_ns" => ended = value.parse::<u128>().ok(),
            "psi_full_before_us" => psi_before = value.parse::<u64>().ok(),
            "psi_full_after_us" => psi_after = value.parse::<u64>().ok(),
            _ => {}
        }
    }
    // The job's stall for a CPU, as a local run's cgroup measures it (none where its cgroup
    // has no pressure file, or the counter went backwards: another cgroup).
    let cpu_wait = (psi_before.zip(psi_after))
        .and_then(|(b, a)| a.checked_sub(b))
        .map(Duration::from_micros);
    let code = code?;
    let elapsed = match (started, ended) {
        (Some(s), Some(e)) if e >= s => {
            Duration::from_nanos(u64::try_from(e - s).unwrap_or(u64::MAX))
        }
        _ => Duration::ZERO,
    };
    let (exit_code, signal) = if (129..=192).contains(&code) {
        (None, Some(code - 128))
    } else {
        (Some(code), None)
    };
    Some(ProcessOutcome {
        exit_code,
        signal,
        killed: None,
        elapsed,
        cpu_wait,
    })
}

/// The CPUs the job's cpuset allowed where its script ran (`cpus_allowed`, a list such as
/// `0-1,4`), as the script recorded them: what oversubscription is judged against under Slurm,
/// whatever the cluster advertises. None when not recorded or not a list of CPU ids.
pub(crate) fn read_cpus(bundle_dir: &Path) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(bundle_dir.join(RESULT_FILE)).ok()?;
    let (_, list) = key_values(&text).find(|(k, _)| *k == "cpus_allowed")?;
    parse_cpu_list(list)
}

/// Most CPU ids a list may name (a machine with more is not one this tool was run on).
const MAX_CPUS: u32 = 1 << 16;

/// A kernel CPU list (`0-3,8,10-11`) as ids; None when empty, malformed or larger than
/// [`MAX_CPUS`].
pub(crate) fn parse_cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (
                lo.trim().parse::<u32>().ok()?,
                hi.trim().parse::<u32>().ok()?,
            ),
            None => {
                let one = part.trim().parse::<u32>().ok()?;
                (one, one)
            }
        };
        if lo > hi || hi >= MAX_CPUS || out.len() as u32 + (hi - lo) >= MAX_CPUS {
            return None;
        }
        out.extend(lo..=hi);
    }
    (!out.is_empty()).then_some(out)
}

/// Remove what an earlier attempt left, so a stale result never describes a new job.
pub(crate) fn clear(bundle_dir: &Path) {
    for name in [DEVICES_FILE, RESULT_FILE] {
        let _ = std::fs::remove_file(bundle_dir.join(name));
    }
}

fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_prefer_the_first_nonempty_variable_and_parse_ids() {
        let text = "SLURM_JOB_ID=12\nSLURMD_NODENAME=vm\nNPU_VISIBLE_DEVICES=\n\
                    CUDA_VISIBLE_DEVICES=2,3\nSLURM_JOB_GPUS=2,3\nSLURM_STEP_GPUS=\ngranted=2,3\n";
        let d = parse_devices(text);
        assert_eq!(d.granted, "2,3");
        assert_eq!(d.ids, Some(vec![2, 3]));
        assert_eq!(d.node.as_deref(), Some("vm"));
        assert_eq!(
            d.variables.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            Some("2,3")
        );
        assert!(!d.variables.contains_key("NPU_VISIBLE_DEVICES"));
    }

    #[test]
    fn non_numeric_or_empty_grants_have_no_ids() {
        assert_eq!(parse_devices("granted=GPU-1a2b,GPU-3c4d\n").ids, None);
        assert_eq!(parse_devices("granted=\n").ids, None);
    }

    #[test]
    fn result_gives_exit_code_and_elapsed() {
        let o = parse_result("exit_code=3\nstarted_ns=1000000000\nended_ns=3500000000\n").unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert_eq!(o.signal, None);
        assert_eq!(o.elapsed, Duration::from_millis(2500));
        assert!(!o.success());
    }

    #[test]
    fn shell_status_above_128_is_a_signal() {
        // The job's cgroup's CPU pressure before and after: its stall for a CPU.
        let o = parse_result(
            "exit_code=0\nstarted_ns=0\nended_ns=2000000000\ncpus_allowed=0-1\npsi_full_before_us=1000\npsi_full_after_us=251000\n",
        )
        .unwrap();
        assert_eq!(o.cpu_wait, Some(Duration::from_millis(250)));
        let o = parse_result("exit_code=0\npsi_full_before_us=\npsi_full_after_us=\n").unwrap();
        assert_eq!(o.cpu_wait, None, "no pressure file: not measured");
        let o = parse_result("exit_code=0\npsi_full_before_us=9\npsi_full_after_us=3\n").unwrap();
        assert_eq!(o.cpu_wait, None);
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        for bad in ["", "x", "3-1", "0-4294967295", "1,-"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad}");
        }
        let o = parse_result("exit_code=137\n").unwrap();
        assert_eq!((o.exit_code, o.signal), (None, Some(9)));
        assert_eq!(o.elapsed, Duration::ZERO);
    }

    #[test]
    fn truncated_result_is_no_result() {
        assert_eq!(parse_result("started_ns=1\n"), None);
        assert_eq!(parse_result("exit_code=\n"), None);
    }

    #[test]
    fn clear_removes_stale_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), "exit_code=0\n").unwrap();
        std::fs::write(dir.path().join(DEVICES_FILE), "granted=0\n").unwrap();
        clear(dir.path());
        assert!(read_result(dir.path()).is_none());
        assert!(read_devices(dir.path()).is_none());
    }
}

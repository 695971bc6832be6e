//! Runs that span several Slurm nodes, on the two-node test cluster of scripts/slurm-up.sh (n1
//! and n2, two slurmd on 127.0.0.1): the `mpi` stack's 2 × 2 and 2 × 1 runs really run their
//! ranks on both nodes in the asked layout (read from the records), a case asking for more
//! nodes than the cluster has is refused before anything is submitted, and a job whose node dies
//! mid-run ends as a failed run with Slurm's reason, which `resume --retry-failed` runs again
//! once the node is back.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::slurm::cluster;
use crate::util;

/// Longest wait for one event (a job to start, a node to be declared down, a campaign to end).
const GUARD: Duration = Duration::from_secs(180);

/// OpenMPI across two "nodes" that share one host: TCP on loopback only (its shared-memory
/// transport crashes there, docs/slurm.md).
const MPI_ENV: &str = r#"env = { OMPI_MCA_btl = "self,tcp", OMPI_MCA_btl_tcp_if_include = "lo", OMPI_MCA_oob_tcp_if_include = "lo", OMPI_MCA_mpi_yield_when_idle = "1" }"#;

/// The tests of this file one at a time: OpenMPI jobs whose "nodes" share one host can collide
/// in OpenMPI's session dir (both nodes' daemons name it after the same host name) when a
/// second multi-node job starts beside them; on a real cluster each node has its own /tmp.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn plan(dir: &Path, name: &str, axes: &str, stacks: &str) -> PathBuf {
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"
count = 256

[axes]
{axes}

[rounds]
warmup = 1
timed = 2

[run]
timeout = "5m"
repeats = 1

[devices]
kind = "cpu"

[slurm]
poll_interval = "200ms"
# One job at a time (see ONE_AT_A_TIME).
max_jobs = 1

{stacks}
"#
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn campaign(dir: &Path, conf: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(util::exe());
    c.current_dir(dir)
        .args(args)
        .args(["--results-dir", dir.join("results").to_str().unwrap(), "-q"])
        .env("SLURM_CONF", conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn show(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        util::stdout(out),
        util::stderr(out)
    )
}

/// The one run dir of campaign `name` under `dir/results`.
fn run_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir.join("results").join(name))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("journal.jsonl").is_file())
}

fn manifest(run: &Path, case_id: &str, stack: &str) -> Value {
    let path = run
        .join("cases")
        .join(case_id)
        .join(stack)
        .join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Each rank's node, in rank order, from the manifest's Slurm record.
fn rank_nodes(m: &Value) -> Vec<String> {
    m["slurm"]["ranks"]
        .as_array()
        .unwrap_or_else(|| panic!("no ranks recorded: {m}"))
        .iter()
        .map(|r| r["node"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn mpi_runs_span_both_nodes_in_the_asked_layout() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let tmp = util::tempdir();
    let name = format!("nodes-{}", std::process::id());
    let stacks = format!("[stacks.mpi]\n{MPI_ENV}\n");
    let plan = plan(
        tmp.path(),
        &name,
        "nodes = [2]\nranks_per_node = [1, 2]\nstacks = [\"mpi\"]",
        &stacks,
    );
    let out = campaign(
        tmp.path(),
        &conf,
        &["run", plan.to_str().unwrap(), "--executor", "slurm"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let run = run_dir(tmp.path(), &name).expect("run dir");
    // The results rows say the runs were inter-node, with their layout.
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let layouts: Vec<(u64, u64)> = (results["runs"].as_array().unwrap().iter())
        .map(|r| {
            (
                r["nodes"].as_u64().unwrap(),
                r["ranks_per_node"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(layouts.len(), 2, "{results}");
    assert!(
        layouts.contains(&(2, 1)) && layouts.contains(&(2, 2)),
        "{layouts:?}"
    );
    for (case_id, want) in [
        ("default_p2_count256_fp32_host_d0-1_n2", vec!["n1", "n2"]),
        (
            "default_p4_count256_fp32_host_d0-1-2-3_n2",
            vec!["n1", "n1", "n2", "n2"],
        ),
    ] {
        let m = manifest(&run, case_id, "mpi");
        assert_eq!(m["status"], "pass", "{m}");
        assert_eq!(m["case"]["nodes"], 2, "{m}");
        assert_eq!(m["slurm"]["nodes"], serde_json::json!(["n1", "n2"]), "{m}");
        assert_eq!(rank_nodes(&m), want, "{case_id}: {m}");
        // The job asked Slurm for exactly this shape, always with --nodes.
        let script_dir = run.join("cases").join(case_id).join("mpi");
        let hostfile = std::fs::read_to_string(script_dir.join("hostfile")).unwrap();
        let k = want.len() / 2;
        assert_eq!(hostfile, format!("n1 slots={k}\nn2 slots={k}\n"));
        // Every sample names its ranks' nodes, in rank order beside their times.
        assert_eq!(m["rank_nodes"], serde_json::json!(want), "{m}");
        let samples = std::fs::read_to_string(run.join("samples.csv")).unwrap();
        let mut rd = csv::Reader::from_reader(samples.as_bytes());
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name);
        let (id, node) = (col("case_id").unwrap(), col("node").expect("a node column"));
        let rows: Vec<_> = rd.records().map(|r| r.unwrap()).collect();
        let mine: Vec<_> = rows.iter().filter(|r| &r[id] == case_id).collect();
        assert_eq!(mine.len(), 3, "{samples}");
        assert!(mine.iter().all(|r| r[node] == want.join(";")), "{samples}");
        // The run's results row names its nodes and each one's hardware fingerprint.
        let row = (results["runs"].as_array().unwrap().iter())
            .find(|r| r["case_id"] == case_id)
            .unwrap_or_else(|| panic!("no results row for {case_id}"));
        assert_eq!(row["node_list"], serde_json::json!(["n1", "n2"]), "{row}");
        let prints = row["node_fingerprints"].as_array().unwrap();
        assert_eq!(prints.len(), 2, "{row}");
        assert!(
            prints.iter().all(|f| f.as_str().unwrap().len() == 16),
            "{row}"
        );
    }
    // Provenance names the nodes the runs spanned.
    assert_eq!(
        results["provenance"]["nodes"],
        serde_json::json!(["n1", "n2"]),
        "{}",
        results["provenance"]
    );
    // … and each node's hardware as the job saw it there (both "nodes" are this machine).
    let hardware = results["provenance"]["node_hardware"]
        .as_array()
        .unwrap_or_else(|| panic!("no node hardware: {}", results["provenance"]));
    let names: Vec<&str> = hardware
        .iter()
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["n1", "n2"], "{hardware:?}");
    let here = this_machine();
    for node in hardware {
        for (key, want) in &here {
            assert_eq!(&node[key.as_str()], want, "{key} of {node}");
        }
        let fingerprint = node["fingerprint"].as_str().unwrap();
        assert_eq!(fingerprint.len(), 16, "{node}");
    }
    assert_eq!(hardware[0]["fingerprint"], hardware[1]["fingerprint"]);
    // Every run's manifest names the hardware of the nodes its job ran on.
    let m = manifest(&run, "default_p2_count256_fp32_host_d0-1_n2", "mpi");
    let nodes: Vec<&str> = (m["node_hardware"].as_array())
        .unwrap_or_else(|| panic!("no node hardware: {m}"))
        .iter()
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["n1", "n2"], "{m}");
    // The report's provenance names each node with its hardware.
    let report = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    for node in ["n1", "n2"] {
        let line = (report.lines())
            .find(|l| l.starts_with(&format!("| node {node} |")))
            .unwrap_or_else(|| panic!("no row for node {node}:\n{report}"));
        assert!(line.contains(here["cpu"].as_str().unwrap()), "{line}");
        assert!(line.contains(fingerprint_of(hardware, node)), "{line}");
    }
}

fn fingerprint_of<'a>(hardware: &'a [Value], node: &str) -> &'a str {
    (hardware.iter())
        .find(|n| n["node"] == node)
        .and_then(|n| n["fingerprint"].as_str())
        .unwrap()
}

/// The facts a node record of this machine must hold, read from its /proc and uname.
fn this_machine() -> std::collections::BTreeMap<String, Value> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    let cpuinfo = read("/proc/cpuinfo");
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let model = (cpuinfo.lines())
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_default();
    let cpu = if model.is_empty() {
        format!("{cpus} CPUs")
    } else {
        format!("{model} ({cpus} CPUs)")
    };
    let memory_kb: u64 = (read("/proc/meminfo").lines())
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    let kernel = format!(
        "{} {}",
        read("/proc/sys/kernel/ostype").trim(),
        read("/proc/sys/kernel/osrelease").trim()
    );
    let host = read("/proc/sys/kernel/hostname").trim().to_string();
    [
        ("host", Value::from(host)),
        ("kernel", Value::from(kernel)),
        ("cpu", Value::from(cpu)),
        ("cpus", Value::from(cpus)),
        ("memory_kb", Value::from(memory_kb)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn a_case_asking_for_more_nodes_than_the_cluster_has_is_refused_before_submission() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let tmp = util::tempdir();
    let name = format!("too-many-{}", std::process::id());
    let stacks = format!("[stacks.mpi]\n{MPI_ENV}\n");
    let plan = plan(
        tmp.path(),
        &name,
        "nodes = [2, 3]\nranks_per_node = [1]\nstacks = [\"mpi\"]",
        &stacks,
    );
    let out = campaign(
        tmp.path(),
        &conf,
        &["run", plan.to_str().unwrap(), "--executor", "slurm"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = util::stderr(&out);
    assert_eq!(
        err.matches("more nodes than the cluster has").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("asks for 3 nodes") && err.contains("has (2)"),
        "{err}"
    );
    assert!(err.contains("nothing was submitted"), "{err}");
    // Nothing reached Slurm: no journal with a submitted job, no run dir at all.
    assert!(run_dir(tmp.path(), &name).is_none());
}

/// Restarts every slurmd of the test cluster when dropped, so a test that kills one never
/// leaves the cluster broken for the tests after it.
struct RestoreNodes(PathBuf);

impl Drop for RestoreNodes {
    fn drop(&mut self) {
        let out = Command::new("bash")
            .arg(util::root().join("scripts/slurm-up.sh"))
            .arg(&self.0)
            .output();
        if let Ok(out) = out {
            if !out.status.success() {
                eprintln!("restoring the test cluster failed: {}", util::stderr(&out));
            }
        }
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < GUARD, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_job_whose_node_dies_fails_with_the_reason_and_resume_runs_it_again() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let cluster_dir = conf.parent().unwrap().to_path_buf();
    let tmp = util::tempdir();
    let name = format!("node-dies-{}", std::process::id());
    let hold = tmp.path().join("hold");
    std::fs::write(&hold, "").unwrap();
    // Each rank (one per node, started by srun inside the allocation) says it started, then
    // waits while the hold file exists; with it gone the run passes at once (the fixture speaks
    // the native protocol).
    let stacks = format!(
        r#"[stacks.spans]
command = ["sh", "-c", "srun --ntasks-per-node=1 \"$0\" sh -c 'touch \"$CAMPAIGN_BUNDLE_DIR/started.$SLURM_NODEID\"; while [ -e {hold} ]; do sleep 0.2; done' && exec sh {fixture} /dev/null", "{{{{ rank_wrap }}}}"]
resource = "none"
max_nodes = 2
"#,
        hold = hold.display(),
        fixture = util::root()
            .join("tests/integration/fixtures/resume/counting.sh")
            .display(),
    );
    let plan = plan(
        tmp.path(),
        &name,
        "nodes = [2]\nranks_per_node = [1]\nstacks = [\"spans\"]",
        &stacks,
    );
    let _restore = RestoreNodes(cluster_dir.clone());
    let mut child = campaign(
        tmp.path(),
        &conf,
        &["run", plan.to_str().unwrap(), "--executor", "slurm"],
    )
    .spawn()
    .unwrap();
    let bundle = |tmp: &Path| {
        run_dir(tmp, &name).map(|r| r.join("cases/default_p2_count256_fp32_host_d0-1_n2/spans"))
    };
    wait_for("the rank on n2 to start", || {
        bundle(tmp.path()).is_some_and(|b| b.join("started.1").exists())
    });
    let pid = std::fs::read_to_string(cluster_dir.join("run/slurmd-n2.pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < GUARD,
            "the campaign never saw node n2 die"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let b = bundle(tmp.path()).unwrap();
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"], "fail", "{m}");
    assert!(
        m["reason"].as_str().unwrap_or("").contains("NODE_FAIL"),
        "{m}"
    );
    // The node comes back; the run runs again and passes.
    drop(_restore);
    std::fs::remove_file(&hold).unwrap();
    let run = run_dir(tmp.path(), &name).unwrap();
    let out = campaign(
        tmp.path(),
        &conf,
        &["resume", run.to_str().unwrap(), "--retry-failed"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"], "pass", "{m}");
    assert_eq!(m["attempt"], 2, "{m}");
}

#[test]
fn ranks_that_ran_elsewhere_than_asked_fail_the_run_with_the_reason() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let tmp = util::tempdir();
    let name = format!("misplaced-{}", std::process::id());
    // The case asks for 2 nodes × 2 ranks in blocks (`pack`); the stack starts its 4 ranks
    // round-robin instead (and says its run passed): the placement check must fail the run.
    let stacks = format!(
        r#"[stacks.lopsided]
command = ["sh", "-c", "srun --distribution=cyclic \"$0\" true && exec sh {fixture} /dev/null", "{{{{ rank_wrap }}}}"]
resource = "none"
max_nodes = 2
"#,
        fixture = util::root()
            .join("tests/integration/fixtures/resume/counting.sh")
            .display(),
    );
    let plan = plan(
        tmp.path(),
        &name,
        "nodes = [2]\nranks_per_node = [2]\nstacks = [\"lopsided\"]",
        &stacks,
    );
    let out = campaign(
        tmp.path(),
        &conf,
        &["run", plan.to_str().unwrap(), "--executor", "slurm"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let run = run_dir(tmp.path(), &name).unwrap();
    let m = manifest(
        &run,
        "default_p4_count256_fp32_host_d0-1-2-3_n2",
        "lopsided",
    );
    assert_eq!(m["status"], "fail", "{m}");
    assert_eq!(
        m["reason"], "placement: rank 1 ran on node 1 (n2), expected node 0",
        "{m}"
    );
}

#[test]
fn multi_node_cases_are_planned_skips_where_runs_stay_on_one_machine() {
    let tmp = util::tempdir();
    let plan = plan(
        tmp.path(),
        "one-machine",
        "p = [2]\nnodes = [1, 2]\nstacks = [\"host\", \"mpi\"]",
        "",
    );
    let out = campaign(
        tmp.path(),
        Path::new("/nonexistent"),
        &["run", plan.to_str().unwrap(), "--repeats", "1"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let run = run_dir(tmp.path(), "one-machine").unwrap();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let runs = results["runs"].as_array().unwrap();
    let find = |case: &str, stack: &str| {
        runs.iter()
            .find(|r| r["case_id"] == case && r["stack"] == stack)
            .unwrap_or_else(|| panic!("no run {case}/{stack}: {results}"))
            .clone()
    };
    // No variant named: host runs its default (mesh), mpi Open MPI's own choice (default).
    let (one, one_mpi) = (
        "mesh_p2_count256_fp32_host_d0-1",
        "default_p2_count256_fp32_host_d0-1",
    );
    let (two, two_mpi) = (
        "mesh_p2_count256_fp32_host_d0-1_n2",
        "default_p2_count256_fp32_host_d0-1_n2",
    );
    assert_eq!(find(one, "host")["status"], "pass");
    assert_eq!(find(one_mpi, "mpi")["status"], "pass");
    let host = find(two, "host");
    assert_eq!(host["status"], "skipped");
    assert_eq!(
        host["reason"],
        "nodes = 2 above this stack's max_nodes = 1 (a stack that does not declare max_nodes runs on one node)"
    );
    let mpi = find(two_mpi, "mpi");
    assert_eq!(mpi["status"], "skipped");
    assert!(
        mpi["reason"]
            .as_str()
            .unwrap()
            .starts_with("nodes = 2: this executor runs every run on this one machine"),
        "{mpi}"
    );
}

/// The shipped `hccl` stack over both nodes (its helper built against the fake CANN): srun
/// starts one helper process per rank through `rank.sh`, they form one communicator from the
/// root info rank 0 wrote into the bundle, and the run passes with every rank's time and node.
#[test]
fn hccl_runs_one_process_per_rank_over_both_nodes_from_a_root_info_file() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let tmp = util::tempdir();
    let Some(bundle) = run_hccl_over_both_nodes(&conf, tmp.path(), "hccl-nodes", |_| String::new())
    else {
        return;
    };
    let head = std::fs::read(bundle.join("hccl_root_info")).unwrap();
    assert!(
        head.starts_with(b"campaign-hccl-root-info v1 job="),
        "{head:?}"
    );
    assert_every_round_has_both_ranks(&bundle);
}

/// `dry-run` plans as `run` does: under the local executor a multi-node case is a planned skip
/// of every stack, with the very reason `run` records (and the one-node case runs on both).
#[test]
fn dry_run_lists_the_multi_node_skips_that_run_applies() {
    let tmp = util::tempdir();
    let plan = plan(
        tmp.path(),
        "one-machine-dry",
        "p = [2]\nnodes = [1, 2]\nstacks = [\"host\", \"mpi\"]",
        "",
    );
    let dry_run = |args: &[&str]| {
        Command::new(util::exe())
            .current_dir(tmp.path())
            .arg("dry-run")
            .arg(&plan)
            .args(args)
            .env("SLURM_CONF", "/nonexistent")
            .output()
            .unwrap()
    };
    let listed = dry_run(&["--format", "json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", show(&listed));
    let rows: Value = serde_json::from_str(&util::stdout(&listed)).unwrap();
    let row = |case: &str| {
        (rows.as_array().unwrap().iter())
            .find(|r| r["case_id"] == case)
            .unwrap_or_else(|| panic!("no row {case}: {rows}"))
            .clone()
    };
    // Each stack at its default variant: host's mesh, mpi's default.
    for (variant, stack) in [("mesh", "host"), ("default", "mpi")] {
        let one = row(&format!("{variant}_p2_count256_fp32_host_d0-1"));
        assert_eq!(one["stacks"], serde_json::json!([stack]), "{one}");
        assert_eq!(one["skipped_stacks"], serde_json::json!([]), "{one}");
        let two = row(&format!("{variant}_p2_count256_fp32_host_d0-1_n2"));
        assert_eq!(two["stacks"], serde_json::json!([]), "{two}");
        assert_eq!(two["skipped_stacks"], serde_json::json!([stack]), "{two}");
    }

    // The table says why, once per (stack, reason).
    let table = dry_run(&[]);
    assert_eq!(table.status.code(), Some(0), "{}", show(&table));
    let text = util::stdout(&table);
    assert!(
        text.contains("  skipped mpi: nodes = 2: this executor runs every run on this one machine"),
        "{text}"
    );

    // The reasons are the ones `run` gives the same runs.
    let out = campaign(
        tmp.path(),
        Path::new("/nonexistent"),
        &["run", plan.to_str().unwrap(), "--repeats", "1"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let run = run_dir(tmp.path(), "one-machine-dry").unwrap();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let skipped: Vec<(String, String, String)> = (results["runs"].as_array().unwrap().iter())
        .filter(|r| r["status"] == "skipped")
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("case_id"), s("stack"), s("reason"))
        })
        .collect();
    assert_eq!(skipped.len(), 2, "{results}");
    for (case, stack, reason) in &skipped {
        let r = row(case);
        let at = (r["skipped_stacks"].as_array().unwrap().iter())
            .position(|s| s == stack.as_str())
            .unwrap_or_else(|| panic!("dry-run does not skip {case}/{stack}: {r}"));
        assert_eq!(r["skip_reasons"][at], reason.as_str(), "{r}");
    }
}

/// The shipped `hccl` stack over both nodes with `HCCL_INIT = "rank_table"`: the job gathers
/// each node's hccn.conf (here one file per node through `CAMPAIGN_HCCN_CONF`'s `%n`) and makes
/// HCCL's rank table in the bundle, every rank joins through HcclCommInitClusterInfo (the fake
/// CANN), no root info is written, and the run passes with every rank's time.
#[test]
fn hccl_runs_over_both_nodes_from_the_rank_table_the_job_makes() {
    let Some(conf) = cluster() else { return };
    let _serial = serial();
    let tmp = util::tempdir();
    for (node, ip) in [("n1", "192.168.100.101"), ("n2", "192.168.100.102")] {
        std::fs::write(
            tmp.path().join(format!("hccn-{node}.conf")),
            format!("address_0={ip}\nnetmask_0=255.255.255.0\n"),
        )
        .unwrap();
    }
    let env = |tmp: &str| {
        format!(r#", HCCL_INIT = "rank_table", CAMPAIGN_HCCN_CONF = "{tmp}/hccn-%n.conf""#)
    };
    let Some(bundle) = run_hccl_over_both_nodes(&conf, tmp.path(), "hccl-table", env) else {
        return;
    };
    assert!(
        !bundle.join("hccl_root_info").exists(),
        "rank table, not root info"
    );
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("rank_table.json")).unwrap())
            .unwrap();
    assert_eq!(table["status"], "completed", "{table}");
    assert_eq!(table["server_count"], "2", "{table}");
    let servers = table["server_list"].as_array().unwrap();
    // Both nodes of the test cluster are 127.0.0.1 (their NodeAddr); each device's IP is its
    // own node's hccn.conf's, and the ranks follow the nodes.
    for (i, ip) in ["192.168.100.101", "192.168.100.102"].iter().enumerate() {
        assert_eq!(servers[i]["server_id"], "127.0.0.1", "{table}");
        let device = &servers[i]["device"][0];
        assert_eq!(device["device_ip"], *ip, "{table}");
        assert_eq!(device["rank_id"], i.to_string(), "{table}");
    }
    assert_every_round_has_both_ranks(&bundle);
}

/// Run the shipped `hccl` stack (the stand-in helper against the fake CANN) over both nodes,
/// 2 × 1 ranks, with `extra_env(tmp)` appended to its env table; asserts the run passed with a
/// rank on each node and returns its bundle. None when the helper cannot be built here.
fn run_hccl_over_both_nodes(
    conf: &Path,
    dir: &Path,
    prefix: &str,
    extra_env: impl Fn(&str) -> String,
) -> Option<PathBuf> {
    let bin = crate::stacks::build_helper(dir)?;
    let cann = dir.join("cann");
    std::fs::create_dir_all(&cann).unwrap();
    let name = format!("{prefix}-{}", std::process::id());
    let tmp = dir.display().to_string();
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "a2a3"
variant = "mesh"
count = 256

[axes]
nodes = [2]
ranks_per_node = [1]
stacks = ["hccl"]

[rounds]
warmup = 1
timed = 2

[run]
timeout = "5m"

[devices]
kind = "npu"
ids = [0, 1]

[slurm]
poll_interval = "200ms"
max_jobs = 1

[stacks.hccl]
ready = ["true"]
build = "mkdir -p {{{{ run_dir }}}}/bin && cp {bin} {{{{ run_dir }}}}/bin/hccl_allreduce"
env = {{ TMPDIR = "{tmp}"{extra} }}
"#,
        bin = bin.display(),
        extra = extra_env(&tmp),
    );
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, text).unwrap();
    let out = campaign(
        dir,
        conf,
        &["run", plan.to_str().unwrap(), "--executor", "slurm"],
    )
    .env("ASCEND_HOME_PATH", &cann)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let run = run_dir(dir, &name).expect("run dir");
    let case_id = "mesh_p2_count256_fp32_a2a3_d0-1_n2";
    let m = manifest(&run, case_id, "hccl");
    assert_eq!(m["status"], "pass", "{m}");
    assert_eq!(rank_nodes(&m), vec!["n1", "n2"], "{m}");
    Some(run.join("cases").join(case_id).join("hccl"))
}

/// The bundle's timing.json: one warmup and two timed rounds, each with both ranks' times.
fn assert_every_round_has_both_ranks(bundle: &Path) {
    let timing: Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("timing.json")).unwrap())
            .unwrap();
    let samples = timing.as_array().unwrap();
    assert_eq!(samples.len(), 3, "{timing}");
    assert!(
        samples
            .iter()
            .all(|s| s["per_rank_execute_s"].as_array().map(Vec::len) == Some(2)),
        "{timing}"
    );
}

//! Tests of `script`: the sbatch argv and the batch script text (run with a real `sh`).

use std::process::Command;

use super::*;
use crate::executor::NodeLayout;

fn job(dir: &Path) -> BatchJob {
    BatchJob {
        campaign: "demo".into(),
        case_id: "allreduce_p2_c256_fp32".into(),
        stack: "host".into(),
        devices: 2,
        layout: Default::default(),
        kind: DeviceKind::Npu,
        process: ProcessSpec {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo \"it's $CAMPAIGN_DEVICES\"".into(),
            ],
            env: vec![
                ("CAMPAIGN_DEVICES".into(), "0,1".into()),
                ("GREETING".into(), "a b 'c'".into()),
            ],
            cwd: dir.to_path_buf(),
            timeout: Some(Duration::from_secs(90)),
            no_output_timeout: None,
            grace: Duration::from_secs(5),
            log_path: dir.join("run.log"),
            unit: None,
        },
        bundle_dir: dir.to_path_buf(),
    }
}

#[test]
fn sbatch_command_carries_name_output_time_and_devices() {
    let j = job(Path::new("/runs/b"));
    let argv = sbatch_command(&SlurmConfig::default(), &j).unwrap();
    assert_eq!(
        argv,
        vec![
            "sbatch",
            "--parsable",
            "--job-name=campaign:demo:allreduce_p2_c256_fp32:host",
            "--output=/runs/b/run.log",
            "--chdir=/runs/b",
            "--no-requeue",
            "--time=0:02:00",
            "--nodes=1",
            "--gres=gpu:2",
            "/runs/b/slurm.sh",
        ]
    );
}

#[test]
fn a_multi_node_job_asks_for_its_shape_and_devices_per_node() {
    let mut j = job(Path::new("/runs/b"));
    j.devices = 4;
    j.layout = NodeLayout {
        nodes: 2,
        ranks_per_node: 2,
        spread: true,
    };
    let argv = sbatch_command(&SlurmConfig::default(), &j).unwrap();
    assert_eq!(
        argv[7..].to_vec(),
        vec![
            "--nodes=2",
            "--ntasks-per-node=2",
            "--distribution=cyclic",
            "--gres=gpu:2",
            "/runs/b/slurm.sh",
        ]
    );
    j.kind = DeviceKind::Cpu;
    let argv = sbatch_command(&SlurmConfig::default(), &j).unwrap();
    assert!(
        !argv.iter().any(|a| a.starts_with("--cpus-per-task")),
        "{argv:?}"
    );
}

#[test]
fn allocation_placeholders_are_expanded_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(dir.path());
    j.process.argv = vec![
        "sh".into(),
        "-c".into(),
        "echo \"$0|$1\"".into(),
        "at=${CAMPAIGN_MASTER_ADDR}:29500".into(),
        "$HOME ${CAMPAIGN_NODE_LIST}".into(),
    ];
    let script = render_script(&j);
    std::fs::write(dir.path().join("s.sh"), &script).unwrap();
    let out = Command::new("sh")
        .arg(dir.path().join("s.sh"))
        .env("SLURMD_NODENAME", "nodeA")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("at=nodeA:29500|$HOME nodeA"),
        "{log}\n{script}"
    );
    let hostfile = std::fs::read_to_string(dir.path().join("hostfile")).unwrap();
    assert_eq!(hostfile, "nodeA slots=2\n");
}

#[test]
fn sbatch_command_uses_every_slurm_key() {
    let config = SlurmConfig {
        partition: Some("ascend".into()),
        account: Some("perf".into()),
        qos: Some("high".into()),
        time_limit: Some("00:10:00".into()),
        extra_args: vec!["--exclusive".into()],
        devices_arg: Some("--gres=npu:{{ p }} --ntasks={{ p }}".into()),
        poll_interval: None,
        max_jobs: None,
    };
    let argv = sbatch_command(&config, &job(Path::new("/b"))).unwrap();
    assert_eq!(
        argv[6..].to_vec(),
        vec![
            "--time=00:10:00",
            "--partition=ascend",
            "--account=perf",
            "--qos=high",
            "--nodes=1",
            "--gres=npu:2",
            "--ntasks=2",
            "--exclusive",
            "/b/slurm.sh",
        ]
    );
}

#[test]
fn time_limit_rounds_up_to_whole_minutes() {
    let c = SlurmConfig::default();
    let t = |s: u64| time_limit(&c, Some(Duration::from_secs(s)));
    assert_eq!(t(1).as_deref(), Some("0:01:00"));
    assert_eq!(t(60).as_deref(), Some("0:01:00"));
    assert_eq!(t(61).as_deref(), Some("0:02:00"));
    assert_eq!(t(600).as_deref(), Some("0:10:00"));
    assert_eq!(t(3 * 3600 + 1).as_deref(), Some("3:01:00"));
    assert_eq!(t(2 * 86400 + 3600).as_deref(), Some("2-01:00:00"));
    assert_eq!(time_limit(&c, None), None);
}

#[test]
fn devices_request_defaults_by_kind_and_nothing_for_zero() {
    let c = SlurmConfig::default();
    assert_eq!(
        devices_args(&c, 4, DeviceKind::Gpu).unwrap(),
        vec!["--gres=gpu:4"]
    );
    assert_eq!(
        devices_args(&c, 4, DeviceKind::Cpu).unwrap(),
        vec!["--cpus-per-task=4"]
    );
    assert!(devices_args(&c, 0, DeviceKind::Npu).unwrap().is_empty());
    let kinded = SlurmConfig {
        devices_arg: Some("--gres={{ kind }}:{{ p }}".into()),
        ..SlurmConfig::default()
    };
    assert_eq!(
        devices_args(&kinded, 8, DeviceKind::Npu).unwrap(),
        vec!["--gres=npu:8"]
    );
}

#[test]
fn bad_devices_template_is_a_usage_error_naming_the_key() {
    let c = SlurmConfig {
        devices_arg: Some("--gpus={{ ranks }}".into()),
        ..SlurmConfig::default()
    };
    let e = devices_args(&c, 2, DeviceKind::Gpu).unwrap_err();
    assert_eq!(e.exit_code(), crate::error::exit::BAD_INPUT);
    let text = e.to_string();
    assert!(
        text.contains("[slurm] devices_arg `--gpus={{ ranks }}`"),
        "{text}"
    );
    assert!(text.contains("--gres=gpu:{{ p }}"), "{text}");
    assert!(validate_devices_arg("--gpus={{ p }}").is_ok());
    assert!(validate_devices_arg("--gpus={{ p").is_err());
}

#[test]
fn shell_line_quotes_only_what_needs_it() {
    let argv: Vec<String> = [
        "sbatch",
        "--job-name=campaign:d:c:host",
        "--gres=gpu:2",
        "/a b/slurm.sh",
        "",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        shell_line(&argv),
        "sbatch --job-name=campaign:d:c:host --gres=gpu:2 '/a b/slurm.sh' ''"
    );
}

#[test]
fn quote_survives_single_quotes() {
    assert_eq!(quote("it's"), r"'it'\''s'");
}

/// Run the rendered script with `sh`, as Slurm would, with the variables Slurm sets.
fn run_script(j: &BatchJob, vars: &[(&str, &str)]) -> std::process::Output {
    std::fs::write(j.script_path(), render_script(j)).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg(j.script_path());
    for v in [
        "NPU_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "SLURM_JOB_GPUS",
        "SLURM_STEP_GPUS",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(vars.iter().copied());
    cmd.output().unwrap()
}

#[test]
fn script_records_granted_devices_and_exports_them() {
    let dir = tempfile::tempdir().unwrap();
    let j = job(dir.path());
    let out = run_script(
        &j,
        &[
            ("CUDA_VISIBLE_DEVICES", "4,5"),
            ("SLURM_JOB_GPUS", "4,5"),
            ("SLURMD_NODENAME", "n1"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "it's 4,5\n");
    let devices = crate::executor::slurm::bundle::read_devices(dir.path()).unwrap();
    assert_eq!(devices.ids, Some(vec![4, 5]));
    assert_eq!(devices.node.as_deref(), Some("n1"));
    let result = crate::executor::slurm::bundle::read_result(dir.path()).unwrap();
    assert_eq!(result.exit_code, Some(0));
}

#[test]
fn script_keeps_rendered_devices_when_slurm_grants_none() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_script(&job(dir.path()), &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "it's 0,1\n");
}

#[test]
fn script_exports_env_values_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(dir.path());
    j.process.argv = vec!["sh".into(), "-c".into(), "printf '%s' \"$GREETING\"".into()];
    let out = run_script(&j, &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a b 'c'");
}

#[test]
fn script_records_and_returns_the_stack_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(dir.path());
    j.process.argv = vec!["sh".into(), "-c".into(), "exit 3".into()];
    let out = run_script(&j, &[]);
    assert_eq!(out.status.code(), Some(3));
    let result = crate::executor::slurm::bundle::read_result(dir.path()).unwrap();
    assert_eq!(result.exit_code, Some(3));
}

#[test]
fn script_without_its_working_dir_records_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(dir.path());
    j.process.cwd = dir.path().join("missing dir");
    let out = run_script(&j, &[]);
    assert_eq!(out.status.code(), Some(NO_CWD_EXIT));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot enter"));
    assert!(crate::executor::slurm::bundle::read_result(dir.path()).is_none());
}

#[test]
fn relative_paths_become_absolute() {
    let mut j = job(Path::new("results/b"));
    j.process.log_path = PathBuf::from("results/b/run.log");
    let argv = sbatch_command(&SlurmConfig::default(), &j).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        argv[3],
        format!("--output={}", cwd.join("results/b/run.log").display())
    );
    assert_eq!(
        argv[4],
        format!("--chdir={}", cwd.join("results/b").display())
    );
    assert!(render_script(&j).contains(&format!("bundle='{}'", cwd.join("results/b").display())));
}

#[test]
fn hostile_env_keys_and_values_stay_assignments_in_the_job_script() {
    let tmp = tempfile::tempdir().unwrap();
    let mut job = job(tmp.path());
    let marker = tmp.path().join("FILE");
    job.process.env = vec![
        (format!("X=1; touch {}; Y", marker.display()), "1".into()),
        (
            "V".into(),
            format!(
                "$(touch {})'\"`touch {}`",
                marker.display(),
                marker.display()
            ),
        ),
    ];
    let script = render_script(&job);
    let path = tmp.path().join("job.sh");
    // Only the assignments: cut the script before the stack runs.
    let head: String = script
        .lines()
        .take_while(|l| !l.starts_with("# The devices Slurm granted"))
        .filter(|l| l.starts_with("export "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, format!("{head}printf '%s' \"$V\"\n")).unwrap();
    let out = std::process::Command::new("sh")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!marker.exists(), "a value or key ran as a command:\n{head}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "$(touch {})'\"`touch {}`",
            marker.display(),
            marker.display()
        )
    );
}

/// A stack that names the bundle's rank table gets each node's hccn.conf (`%n` the node's
/// name) and granted devices gathered for `campaign __rank-table`; one that does not, nothing.
#[test]
fn a_stack_naming_the_rank_table_gets_each_nodes_hccn_conf_gathered() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("hccn-n1.conf");
    std::fs::write(&conf, "address_0=10.1.0.1\naddress_1=10.1.0.2\n").unwrap();
    let mut j = job(tmp.path());
    let plain = render_script(&j);
    assert!(
        !plain.contains(crate::executor::slurm::rank_table::ARG),
        "{plain}"
    );
    let table = tmp.path().join("rank_table.json");
    j.process.argv = vec![
        "sh".into(),
        "-c".into(),
        "true".into(),
        table.display().to_string(),
    ];
    j.process.env.push((
        "CAMPAIGN_HCCN_CONF".into(),
        tmp.path().join("hccn-%n.conf").display().to_string(),
    ));
    let text = render_script(&j);
    assert!(
        text.contains(&format!(
            " {} \"$bundle/hccn\" 2 pack \"$bundle/rank_table.json\"",
            crate::executor::slurm::rank_table::ARG
        )),
        "{text}"
    );
    let out = run_script(
        &j,
        &[
            ("SLURMD_NODENAME", "n1"),
            ("SLURM_JOB_NODELIST", "n1"),
            ("CUDA_VISIBLE_DEVICES", "2,3"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let hccn = tmp.path().join("hccn");
    let servers = std::fs::read_to_string(hccn.join("servers")).unwrap();
    assert!(servers.starts_with("n1 "), "{servers}");
    assert_eq!(
        std::fs::read_to_string(hccn.join("n1.conf")).unwrap(),
        "address_0=10.1.0.1\naddress_1=10.1.0.2\n"
    );
    assert_eq!(
        std::fs::read_to_string(hccn.join("n1.devices")).unwrap(),
        "2,3\n"
    );
}

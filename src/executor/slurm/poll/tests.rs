//! Parsers of `poll` on output recorded from a real Slurm 22.05 (tests/integration/fixtures/slurm).

use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/integration/fixtures/slurm/",
            $name
        ))
    };
}

fn record(id: u64, state: JobState, reason: Option<&str>, exit: Option<&str>) -> JobRecord {
    JobRecord {
        id: JobId(id),
        state,
        reason: reason.map(String::from),
        exit_code: exit.map(String::from),
    }
}

#[test]
fn squeue_argv_is_one_batched_call() {
    assert_eq!(
        squeue_argv(&[JobId(3), JobId(10), JobId(11)]).join(" "),
        "squeue -h -t all -j 3,10,11 -o %i|%T|%r"
    );
}

#[test]
fn squeue_recorded_output_gives_every_state_and_reason() {
    let rows = parse_squeue(fixture!("squeue_mixed.txt")).unwrap();
    assert_eq!(
        rows,
        vec![
            record(1, JobState::Completed, None, None),
            record(3, JobState::Failed, Some("NonZeroExitCode"), None),
            record(11, JobState::Pending, Some("Resources"), None),
            record(9, JobState::Pending, Some("JobHeldUser"), None),
            record(8, JobState::Running, None, None),
            record(10, JobState::Running, None, None),
            record(2, JobState::Timeout, Some("TimeLimit"), None),
        ]
    );
}

#[test]
fn squeue_garbage_is_an_error_naming_the_line() {
    let e = parse_squeue("12|RUNNING|None\nsqueue: error: oops\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "squeue output line 2: expected `jobid|STATE|reason`, got `squeue: error: oops`"
    );
    let e = parse_squeue("abc|RUNNING|None\n").unwrap_err();
    assert!(e.to_string().contains("numeric job id"), "{e}");
}

#[test]
fn scontrol_recorded_jobs_give_state_reason_and_exit_code() {
    let cases = [
        (
            fixture!("scontrol_completed.txt"),
            record(1, JobState::Completed, None, Some("0:0")),
        ),
        (
            fixture!("scontrol_failed.txt"),
            record(3, JobState::Failed, Some("NonZeroExitCode"), Some("3:0")),
        ),
        (
            fixture!("scontrol_timeout.txt"),
            record(2, JobState::Timeout, Some("TimeLimit"), Some("0:15")),
        ),
        (
            fixture!("scontrol_cancelled.txt"),
            record(8, JobState::Cancelled, None, Some("143:0")),
        ),
        (
            fixture!("scontrol_running.txt"),
            record(8, JobState::Running, None, Some("0:0")),
        ),
        (
            fixture!("scontrol_pending.txt"),
            record(11, JobState::Pending, Some("Resources"), Some("0:0")),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_job_record(text), Some(expected));
    }
}

#[test]
fn scontrol_error_text_is_no_record() {
    assert_eq!(parse_job_record(fixture!("scontrol_invalid.txt")), None);
    assert!(fixture!("squeue_invalid.txt").contains(INVALID_JOB_ID));
}

#[test]
fn key_values_keep_equals_in_values_and_join_spaced_words() {
    let pairs = parse_key_values("TRES=cpu=1,node=1 Command=/a b/c.sh WorkDir=/x\n  Power=");
    assert_eq!(
        pairs,
        vec![
            ("TRES".to_string(), "cpu=1,node=1".to_string()),
            ("Command".to_string(), "/a b/c.sh".to_string()),
            ("WorkDir".to_string(), "/x".to_string()),
            ("Power".to_string(), String::new()),
        ]
    );
}

#[test]
fn jobcomp_finds_the_last_line_of_exactly_that_job() {
    let text = fixture!("jobcomp.txt");
    assert_eq!(
        find_in_jobcomp(text, JobId(3)),
        Some(record(3, JobState::Failed, None, Some("3:0")))
    );
    assert_eq!(
        find_in_jobcomp(text, JobId(2)).map(|r| r.state),
        Some(JobState::Timeout)
    );
    // Job 1 must not match the lines of jobs 10 and 11.
    assert_eq!(
        find_in_jobcomp(text, JobId(1)).map(|r| r.state),
        Some(JobState::Completed)
    );
    assert_eq!(find_in_jobcomp(text, JobId(424242)), None);
    let twice = "JobId=5 JobState=PENDING ExitCode=0:0\nJobId=5 JobState=CANCELLED ExitCode=0:0\n";
    assert_eq!(
        find_in_jobcomp(twice, JobId(5)).map(|r| r.state),
        Some(JobState::Cancelled)
    );
}

#[test]
fn jobcomp_location_only_for_the_file_plugin() {
    assert_eq!(
        jobcomp_location(fixture!("scontrol_config.txt")),
        Some(PathBuf::from("/tmp/campaign-slurm/jobcomp.txt"))
    );
    assert_eq!(
        jobcomp_location("JobCompLoc = /var/log/x\nJobCompType = jobcomp/none\n"),
        None
    );
}

#[test]
fn backoff_grows_while_quiet_and_resets_on_change() {
    let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(1));
    assert_eq!(b.current(), Duration::from_millis(200));
    assert_eq!(b.observe(false), Duration::from_millis(300));
    assert_eq!(b.observe(false), Duration::from_millis(450));
    assert_eq!(b.observe(false), Duration::from_millis(675));
    assert_eq!(b.observe(false), Duration::from_secs(1));
    assert_eq!(b.observe(false), Duration::from_secs(1));
    assert_eq!(b.observe(true), Duration::from_millis(200));
    b.observe(false);
    b.reset();
    assert_eq!(b.current(), Duration::from_millis(200));
}

#[test]
fn backoff_max_below_base_is_base() {
    let mut b = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
    assert_eq!(b.observe(false), Duration::from_secs(5));
}

#[test]
fn squeue_commands_are_read_per_job_and_odd_lines_refused() {
    let rows = parse_commands("12|/r/run_1/cases/c/s/slurm.sh\n13|/bin/sh -c a|b\n\n").unwrap();
    assert_eq!(
        rows[&JobId(12)],
        PathBuf::from("/r/run_1/cases/c/s/slurm.sh")
    );
    assert_eq!(rows[&JobId(13)], PathBuf::from("/bin/sh -c a|b"));
    assert!(parse_commands("twelve|/x\n").is_err());
    assert!(parse_commands("12\n").is_err());
}

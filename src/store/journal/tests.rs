use std::io::Write;

use serde_json::{json, Map, Value};

use super::*;

fn meta() -> Value {
    json!({"campaign": "smoke", "plan_hash": "abc", "steps": ["run:a:host"]})
}

fn no_extra() -> Map<String, Value> {
    Map::new()
}

#[test]
fn round_trip_keeps_latest_state_attempts_and_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    j.started("run:a:host", 1, "f1", no_extra()).unwrap();
    j.finished(
        "run:a:host",
        1,
        "f1",
        RunStatus::Fail,
        Some("exit code 1"),
        no_extra(),
    )
    .unwrap();
    j.started("run:a:host", 2, "f1", no_extra()).unwrap();
    j.finished("run:a:host", 2, "f1", RunStatus::Pass, None, no_extra())
        .unwrap();
    let mut extra = Map::new();
    extra.insert("bundle".into(), json!("cases/b/host"));
    extra.insert("samples".into(), json!(7));
    j.started("run:b:host", 1, "f2", no_extra()).unwrap();
    j.finished(
        "run:b:host",
        1,
        "f2",
        RunStatus::Timeout,
        Some("killed after 1s"),
        extra,
    )
    .unwrap();
    j.quarantined(3, "probe failed: exit code 7").unwrap();
    drop(j);

    let r = replay(&dir.path().join(FILE_NAME)).unwrap();
    assert_eq!(r.version, 1);
    assert_eq!(r.header["campaign"], "smoke");
    assert_eq!(r.header["journal"], "campaign");
    assert!(r.torn.is_none());
    let a = r.step("run:a:host").unwrap();
    assert_eq!(a.attempts, 2);
    assert_eq!(a.status(), Some(RunStatus::Pass));
    assert_eq!(r.next_attempt("run:a:host"), 3);
    assert_eq!(r.next_attempt("run:never:host"), 1);
    let b = r.step("run:b:host").unwrap();
    let fin = b.last_finished.as_ref().unwrap();
    assert_eq!(fin.status, RunStatus::Timeout);
    assert_eq!(fin.reason.as_deref(), Some("killed after 1s"));
    assert_eq!(fin.fingerprint, "f2");
    assert_eq!(fin.samples, Some(7));
    assert_eq!(a.last_finished.as_ref().unwrap().samples, None);
    assert!(fin.duration.is_some());
    assert_eq!(r.order, vec!["run:a:host", "run:b:host"]);
    assert_eq!(
        r.quarantined.get(&3).map(String::as_str),
        Some("probe failed: exit code 7")
    );
}

#[test]
fn started_without_finished_replays_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    j.started("run:a:host", 1, "f1", no_extra()).unwrap();
    j.finished("run:a:host", 1, "f1", RunStatus::Pass, None, no_extra())
        .unwrap();
    // A fingerprint change made resume run it again, and the process died meanwhile.
    j.started("run:a:host", 2, "f9", no_extra()).unwrap();
    j.started("run:b:host", 1, "f2", no_extra()).unwrap();
    drop(j);
    let r = replay(&dir.path().join(FILE_NAME)).unwrap();
    let a = r.step("run:a:host").unwrap();
    assert!(a.is_interrupted());
    assert_eq!(a.status(), None);
    assert_eq!(a.fingerprint, "f9");
    assert_eq!(a.last_finished.as_ref().unwrap().status, RunStatus::Pass);
    assert!(r.step("run:b:host").unwrap().is_interrupted());
}

#[test]
fn finished_and_quarantined_lines_are_fsynced_started_lines_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    let base = j.syncs();
    j.started("run:a:host", 1, "f", no_extra()).unwrap();
    assert_eq!(j.syncs(), base);
    j.finished("run:a:host", 1, "f", RunStatus::Pass, None, no_extra())
        .unwrap();
    j.finished("run:b:host", 1, "f", RunStatus::Pass, None, no_extra())
        .unwrap();
    // Group commit: both lines are durable after one or two syncs, at the latest when
    // `durable` returns.
    j.durable().unwrap();
    let after_finished = j.syncs();
    assert!(
        (base + 1..=base + 2).contains(&after_finished),
        "{base} {after_finished}"
    );
    j.durable().unwrap();
    assert_eq!(j.syncs(), after_finished, "nothing new to sync");
    j.quarantined(1, "x").unwrap();
    assert_eq!(
        j.syncs(),
        after_finished + 1,
        "quarantined is synced at once"
    );
}

#[test]
fn a_failed_group_sync_is_reported_by_durable() {
    // Syncing a pipe fails (EINVAL): the error surfaces, naming the journal, and later
    // durable lines are refused.
    let (reader, writer) = std::io::pipe().unwrap();
    let mut j = Journal::from_file(
        PathBuf::from("pipe-journal"),
        File::from(std::os::fd::OwnedFd::from(writer)),
    );
    j.finished("run:a:host", 1, "f", RunStatus::Pass, None, no_extra())
        .unwrap();
    let err = j.durable().unwrap_err();
    assert!(err.to_string().contains("pipe-journal"), "{err}");
    assert_eq!(err.exit_code(), crate::error::exit::ENVIRONMENT);
    assert!(j
        .finished("run:b:host", 1, "f", RunStatus::Pass, None, no_extra())
        .is_err());
    drop(reader);
}

#[test]
fn torn_last_line_is_ignored_reported_and_cut_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    j.started("run:a:host", 1, "f", no_extra()).unwrap();
    j.finished("run:a:host", 1, "f", RunStatus::Pass, None, no_extra())
        .unwrap();
    drop(j);
    let path = dir.path().join(FILE_NAME);
    let good_len = std::fs::metadata(&path).unwrap().len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"t":"2026-01-01T00:00:00Z","event":"finished","step":"run:b:ho"#)
        .unwrap();
    drop(f);

    let r = replay(&path).unwrap();
    let torn = r.torn.clone().expect("torn line reported");
    assert_eq!(torn.line, 4);
    assert_eq!(torn.offset, good_len);
    assert!(torn.to_string().contains("line 4"));
    assert!(r.step("run:b:host").is_none());
    assert_eq!(
        r.step("run:a:host").unwrap().status(),
        Some(RunStatus::Pass)
    );

    // Reopening cuts the fragment so the next line starts on a line boundary.
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.repaired().map(|t| t.line), Some(4));
    j.started("run:b:host", 1, "f", no_extra()).unwrap();
    drop(j);
    let r = replay(&path).unwrap();
    assert!(r.torn.is_none());
    assert!(r.step("run:b:host").unwrap().is_interrupted());
}

#[test]
fn garbage_last_line_after_power_loss_is_torn_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    Journal::create(dir.path(), meta()).unwrap();
    let path = dir.path().join(FILE_NAME);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(&[0u8; 12]).unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    let r = replay(&path).unwrap();
    assert_eq!(r.torn.as_ref().map(|t| t.line), Some(2));
}

#[test]
fn torn_middle_line_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(
        &path,
        concat!(
            "{\"journal\":\"campaign\",\"version\":1}\n",
            "{\"t\":\"x\",\"event\":\"started\",\"step\":\"run:a:host\",\"attempt\":1}\n",
            "{\"t\":\"x\",\"event\":\"fini\n",
            "{\"t\":\"x\",\"event\":\"started\",\"step\":\"run:b:host\",\"attempt\":1}\n",
        ),
    )
    .unwrap();
    let err = replay(&path).unwrap_err().to_string();
    assert!(err.contains("journal.jsonl:3:"), "{err}");
    assert!(err.contains("damaged or edited"), "{err}");
}

#[test]
fn newer_format_version_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, "{\"journal\":\"campaign\",\"version\":2}\n").unwrap();
    let err = Journal::open(dir.path()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("version 2"), "{text}");
    assert!(text.contains("newer campaign"), "{text}");
    assert!(text.contains("journal.jsonl:1"), "{text}");
    assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
    // A newer journal's torn tail is not cut either: nothing is touched before the refusal.
    let text = "{\"journal\":\"campaign\",\"version\":2}\n{\"t\":\"x\",\"ev";
    std::fs::write(&path, text).unwrap();
    assert!(Journal::open(dir.path()).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

/// Opening finds the torn tail from the last line alone, exactly as a full replay does: an
/// intact journal is left whole, a whitespace last line is not torn, a non-object last line is.
#[test]
fn open_cuts_the_same_tail_a_replay_calls_torn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let head = "{\"journal\":\"campaign\",\"version\":1}\n{\"t\":\"x\",\"event\":\"started\",\"step\":\"run:a:host\",\"attempt\":1}\n";
    for (tail, torn) in [
        ("", false),
        ("  \n", false),
        ("[1]\n", true),
        ("{\"t\":1}", true),
    ] {
        std::fs::write(&path, format!("{head}{tail}")).unwrap();
        let replayed = replay(&path).unwrap().torn.map(|t| t.line);
        assert_eq!(replayed.is_some(), torn, "{tail:?}");
        let j = Journal::open(dir.path()).unwrap();
        assert_eq!(j.repaired().map(|t| t.line), replayed, "{tail:?}");
        drop(j);
        let kept = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            kept,
            if torn {
                head.to_string()
            } else {
                format!("{head}{tail}")
            }
        );
    }
}

#[test]
fn bad_fields_name_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(
        &path,
        concat!(
            "{\"journal\":\"campaign\",\"version\":1}\n",
            "{\"t\":\"x\",\"event\":\"finished\",\"step\":\"run:a:host\",\"attempt\":1,\"status\":\"great\"}\n",
            "{\"t\":\"x\",\"event\":\"session\"}\n",
        ),
    )
    .unwrap();
    let err = replay(&path).unwrap_err().to_string();
    assert!(err.contains(":2: status: unknown status `great`"), "{err}");
    std::fs::write(&path, "{\"journal\":\"other\",\"version\":1}\n").unwrap();
    assert!(replay(&path)
        .unwrap_err()
        .to_string()
        .contains("not a campaign journal"));
}

#[test]
fn create_refuses_an_existing_journal_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    j.started("run:a:host", 1, "f", no_extra()).unwrap();
    drop(j);
    let err = Journal::create(dir.path(), meta()).unwrap_err();
    assert!(matches!(err, crate::error::Error::Io { .. }));
    assert!(replay(&dir.path().join(FILE_NAME))
        .unwrap()
        .step("run:a:host")
        .is_some());
}

#[test]
fn disk_full_is_an_io_error_naming_the_journal() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let mut j = Journal::from_file(PathBuf::from("/dev/full"), full);
    let err = j
        .finished("run:a:host", 1, "f", RunStatus::Pass, None, no_extra())
        .unwrap_err();
    match &err {
        crate::error::Error::Io { path, .. } => assert_eq!(path, Path::new("/dev/full")),
        other => panic!("expected Io, got {other:?}"),
    }
    assert_eq!(err.exit_code(), crate::error::exit::ENVIRONMENT);
}

#[test]
fn other_events_are_kept_and_step_keys_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    let mut fields = Map::new();
    fields.insert("running".into(), json!(2));
    j.event("interrupted", fields).unwrap();
    drop(j);
    let r = replay(&dir.path().join(FILE_NAME)).unwrap();
    assert_eq!(r.events["interrupted"]["running"], 2);
    let key = run_step("mesh_p2_count256_fp32_host_d0-1", "host");
    assert_eq!(
        parse_run_step(&key),
        Some(("mesh_p2_count256_fp32_host_d0-1", "host"))
    );
    assert_eq!(parse_run_step(&build_step("hccl")), None);
    assert_eq!(probe_step("hccl"), "probe:hccl");
}

#[test]
fn submitted_slurm_job_is_kept_per_attempt_and_cleared_by_the_next_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::create(dir.path(), meta()).unwrap();
    let base = j.syncs();
    j.started("run:a:host", 1, "f1", no_extra()).unwrap();
    j.submitted("run:a:host", 1, 41, false).unwrap();
    assert_eq!(j.syncs(), base + 1, "the job id is durable at once");
    j.started("run:b:host", 1, "f2", no_extra()).unwrap();
    j.submitted("run:b:host", 1, 42, false).unwrap();
    j.finished("run:b:host", 1, "f2", RunStatus::Fail, None, no_extra())
        .unwrap();
    j.started("run:b:host", 2, "f2", no_extra()).unwrap();
    // A resume re-attaching to the same attempt restarts it and journals the job again.
    j.started("run:a:host", 1, "f1", no_extra()).unwrap();
    drop(j);
    let r = replay(&dir.path().join(FILE_NAME)).unwrap();
    let a = r.step("run:a:host").unwrap();
    assert!(a.is_interrupted());
    assert_eq!(a.slurm_job, Some(SlurmJob { id: 41, attempt: 1 }));
    let b = r.step("run:b:host").unwrap();
    assert_eq!(b.slurm_job, None, "attempt 2 has no job yet");
    assert_eq!(r.next_attempt("run:b:host"), 3);

    let path = dir.path().join(FILE_NAME);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(
        f,
        r#"{{"t":"x","event":"submitted","step":"run:c:host","attempt":1}}"#
    )
    .unwrap();
    writeln!(f, r#"{{"t":"x","event":"session"}}"#).unwrap();
    drop(f);
    let err = replay(&path).unwrap_err().to_string();
    assert!(err.contains("slurm_job_id"), "{err}");
}

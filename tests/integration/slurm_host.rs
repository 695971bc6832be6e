//! The built-in `host` stack through the real Slurm and locally: the same cases, rendered the
//! same way, give the same set of passing runs and the same number of samples (the engine's
//! `--executor slurm` path, minus the scheduler and journal).

use std::path::Path;
use std::time::Duration;

use campaign::case::{Case, Variant};
use campaign::executor::local::run_process;
use campaign::executor::slurm::{process_outcome, replay_log, BatchJob, SlurmService, Verdict};
use campaign::executor::{ProcessOutcome, ProcessSpec};
use campaign::plan::model::DeviceKind;
use campaign::stack::parsers::{self, OutputLine, ParseContext, Parsed};
use campaign::stack::registry;
use campaign::stack::render::{render, RenderContext};
use tokio::sync::watch;

use crate::slurm::{cluster, executor};
use crate::util;

const GUARD: Duration = Duration::from_secs(90);

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (variant, p, count) in [
        (Variant::Mesh, 2, 256),
        (Variant::Ring, 4, 4096),
        (Variant::Twophase, 2, 1024),
    ] {
        let mut case = Case::new(variant, p, count);
        case.warmup_rounds = 1;
        case.timed_rounds = 3;
        out.push(case);
    }
    // The fourth run gets a wrong value injected (see `spec`): it must fail both ways.
    let mut bad = Case::new(Variant::Twophase, 4, 10);
    bad.warmup_rounds = 1;
    bad.timed_rounds = 3;
    out.push(bad);
    out
}

fn spec(case: &Case, bundle: &Path) -> ProcessSpec {
    std::fs::create_dir_all(bundle).unwrap();
    let case_file = bundle.join("case.json");
    std::fs::write(&case_file, case.to_pretty_json()).unwrap();
    let ctx = RenderContext {
        case: case.clone(),
        devices: (0..case.p).collect(),
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file,
        bundle_dir: bundle.to_path_buf(),
        run_dir: bundle.to_path_buf(),
        root: None,
        campaign_exe: util::exe(),
    };
    let mut rendered = render("host", &registry::host(), &ctx).expect("render host");
    if case.count == 10 {
        // Rank 1 writes a wrong value in timed round 2: a golden mismatch.
        rendered
            .argv
            .extend(["--inject-fault".into(), "1:2".into()]);
    }
    ProcessSpec {
        argv: rendered.argv,
        env: rendered.env,
        cwd: rendered.cwd,
        timeout: Some(Duration::from_secs(120)),
        no_output_timeout: None,
        grace: Duration::from_secs(1),
        log_path: bundle.join("run.log"),
    }
}

fn parser_for(case: &Case) -> Box<dyn parsers::Parser> {
    let ctx = ParseContext {
        n_bytes: case.n_bytes(),
        p: case.p,
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
    };
    parsers::make(&registry::host(), &ctx).unwrap()
}

/// The engine's pass rule in short: clean exit, declared pass, every round present and ok.
fn passed(case: &Case, outcome: &ProcessOutcome, parsed: &Parsed) -> bool {
    outcome.success()
        && parsed.correctness == Some(true)
        && parsed.samples.len() == (case.warmup_rounds + case.timed_rounds) as usize
        && parsed.samples.iter().all(|s| s.ok)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_cases_pass_the_same_through_slurm_as_locally() {
    let Some(conf) = cluster() else { return };
    let dir = util::tempdir();
    let cases = cases();

    let mut local = Vec::new();
    for case in &cases {
        let spec = spec(case, &dir.path().join("local").join(case.case_id()));
        let mut parser = parser_for(case);
        let (_tx, rx) = watch::channel(false);
        let mut on_line = |line: OutputLine| parser.feed(&line);
        let outcome = run_process(&spec, &mut on_line, rx)
            .await
            .expect("local run");
        local.push(passed(case, &outcome, &parser.finish()));
    }

    let (service, task) = SlurmService::start(executor(&conf, None));
    let mut jobs = Vec::new();
    for case in &cases {
        let bundle = dir.path().join("slurm").join(case.case_id());
        let job = BatchJob {
            campaign: format!("it-host-{}", std::process::id()),
            case_id: case.case_id(),
            stack: "host".into(),
            devices: case.p,
            kind: DeviceKind::Cpu,
            process: spec(case, &bundle),
            bundle_dir: bundle,
        };
        let submitted = service.submit(job.clone()).await.expect("submit");
        jobs.push((job, submitted));
    }
    let mut through_slurm = Vec::new();
    for ((job, submitted), case) in jobs.into_iter().zip(&cases) {
        let end = tokio::time::timeout(GUARD, submitted.end)
            .await
            .expect("job ended in time")
            .expect("end delivered");
        assert_eq!(end.verdict, Verdict::Parse, "{end:?}");
        let mut parser = parser_for(case);
        replay_log(&job.process.log_path, &mut |line| parser.feed(&line)).unwrap();
        through_slurm.push(passed(case, &process_outcome(&end), &parser.finish()));
    }
    drop(service);
    task.await.unwrap().unwrap();

    assert_eq!(through_slurm, local);
    assert_eq!(
        local,
        vec![true, true, true, false],
        "the injected fault fails"
    );
}

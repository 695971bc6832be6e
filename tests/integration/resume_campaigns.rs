//! Real campaigns that are killed, interrupted, retried, quarantined or stopped by a write
//! failure, then resumed. Every stack is a shell script that counts its own invocations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::util;

fn fixture(dir: &str, name: &str) -> String {
    util::root()
        .join("tests/integration/fixtures")
        .join(dir)
        .join(name)
        .display()
        .to_string()
}

/// A plan of `variants × counts` cases (P=2) on the stacks in `defs`.
fn plan(name: &str, variants: &str, counts: &str, stacks: &str, run: &str, defs: &str) -> String {
    format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
variant = [{variants}]
p = [2]
count = [{counts}]
stacks = [{stacks}]

[rounds]
warmup = 1
timed = 2

[run]
timeout = "20s"
order = "given"
# One run per (case, stack) unless a test says otherwise: the tests count runs.
repeats = 1
{run}

[devices]
kind = "npu"
ids = "0-3"

{defs}"#
    )
}

struct Campaign {
    tmp: tempfile::TempDir,
    plan: PathBuf,
    results: PathBuf,
    counter: PathBuf,
}

impl Campaign {
    fn new(text: impl Fn(&Path) -> String) -> Campaign {
        let tmp = util::tempdir();
        let counter = tmp.path().join("count.log");
        let plan = tmp.path().join("plan.toml");
        std::fs::write(&plan, text(&counter)).unwrap();
        let results = tmp.path().join("results");
        Campaign {
            tmp,
            plan,
            results,
            counter,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(util::exe());
        c.current_dir(self.tmp.path())
            .args(args)
            .args(["--results-dir", self.results.to_str().unwrap(), "-q"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn spawn_run(&self) -> Child {
        self.command(&["run", self.plan.to_str().unwrap()])
            .spawn()
            .unwrap()
    }

    fn run(&self) -> Output {
        self.command(&["run", self.plan.to_str().unwrap()])
            .output()
            .unwrap()
    }

    fn resume(&self, extra: &[&str]) -> Output {
        let dir = self.run_dir().unwrap();
        let mut args = vec!["resume", dir.to_str().unwrap()];
        args.extend(extra);
        self.command(&args).output().unwrap()
    }

    /// The run dir with a journal, if one exists yet.
    fn run_dir(&self) -> Option<PathBuf> {
        let name = std::fs::read_to_string(&self.plan)
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("name = \"")
                    .map(|n| n.trim_end_matches('"').to_string())
            })
            .unwrap();
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.results.join(name))
            .ok()?
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("journal.jsonl").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    }

    /// Lines `<case_id> start|pass` the counting stack appended.
    fn counts(&self, word: &str) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for line in std::fs::read_to_string(&self.counter)
            .unwrap_or_default()
            .lines()
        {
            if let Some((id, w)) = line.split_once(' ') {
                if w == word {
                    *out.entry(id.to_string()).or_insert(0) += 1;
                }
            }
        }
        out
    }
}

fn show(o: &Output) -> String {
    format!("{}{}", util::stdout(o), util::stderr(o))
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every journal line parses (a torn last line is tolerated); returns them.
fn journal(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str::<Value>(l) {
            Ok(v) => out.push(v),
            Err(e) => assert!(
                i + 1 == lines.len() && !text.ends_with('\n'),
                "journal line {} unreadable: {e}",
                i + 1
            ),
        }
    }
    out
}

/// Run step keys whose latest journal line is `finished` with `status`.
fn finished_with(lines: &[Value], status: &str) -> BTreeSet<String> {
    let mut last: BTreeMap<String, &Value> = BTreeMap::new();
    for l in lines {
        if let Some(step) = l["step"].as_str().filter(|s| s.starts_with("run:")) {
            last.insert(step.to_string(), l);
        }
    }
    last.into_iter()
        .filter(|(_, l)| l["event"] == "finished" && l["status"] == status)
        .map(|(k, _)| k)
        .collect()
}

fn rows(dir: &Path) -> Vec<Value> {
    json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

fn case_id(step: &str) -> String {
    step.trim_start_matches("run:")
        .rsplit_once(':')
        .unwrap()
        .0
        .to_string()
}

/// Wait (generous cap) until the campaign's journal has one more `event` line of a run step
/// than when called,
/// or the child has exited (it may have nothing left to do).
fn wait_for_more(c: &Campaign, child: &mut Child, event: &str) {
    let count = |c: &Campaign| {
        c.run_dir()
            .map(|d| {
                journal(&d)
                    .iter()
                    .filter(|l| {
                        l["event"] == event
                            && l["step"].as_str().is_some_and(|s| s.starts_with("run:"))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let before = count(c);
    let cap = std::time::Instant::now() + Duration::from_secs(120);
    while count(c) <= before {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        assert!(
            std::time::Instant::now() < cap,
            "no new `{event}` journal line within 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn counting_plan(name: &str, counts: &str, sleep: &str, run: &str) -> impl Fn(&Path) -> String {
    let (name, counts, sleep, run) = (
        name.to_string(),
        counts.to_string(),
        sleep.to_string(),
        run.to_string(),
    );
    move |counter: &Path| {
        let defs = format!(
            "[stacks.count]\ncommand = [\"{}\", \"{}\", \"{sleep}\"]\nresource = \"none\"\n",
            fixture("resume", "counting.sh"),
            counter.display()
        );
        plan(
            &name,
            r#""mesh", "ring""#,
            &counts,
            r#""count""#,
            &run,
            &defs,
        )
    }
}

#[test]
fn sigkill_at_20_random_moments_then_resume_runs_every_run_once() {
    let counts: Vec<String> = (1..=20).map(|i| (i * 64).to_string()).collect();
    let c = Campaign::new(counting_plan(
        "killed",
        &counts.join(", "),
        "0.05",
        "jobs = 1",
    ));
    let seed: u64 = std::env::var("CAMPAIGN_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("kill seed: {seed} (CAMPAIGN_KILL_SEED={seed} repeats it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut mid_campaign = 0;
    for kill in 0..20 {
        // Runs that had finished `pass` before this session, with how often each started.
        let passed_before = c
            .run_dir()
            .map(|d| finished_with(&journal(&d), "pass"))
            .unwrap_or_default();
        let starts_before = c.counts("start");
        let mut child = match c.run_dir() {
            None => c.spawn_run(),
            Some(d) => c.command(&["resume", d.to_str().unwrap()]).spawn().unwrap(),
        };
        // Kill at an event, not after a guessed delay (a busy machine may not have started
        // anything in 200 ms): right away, or once this session journaled one more `started`
        // or `finished` line — then after a random jitter shorter than a run, so the moment
        // within a step varies.
        let event = ["", "started", "finished"][kill % 3];
        if !event.is_empty() {
            wait_for_more(&c, &mut child, event);
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..30)));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        let starts = c.counts("start");
        for step in &passed_before {
            let id = case_id(step);
            assert_eq!(
                starts.get(&id),
                starts_before.get(&id),
                "kill {kill} (seed {seed}): {step} had passed and started again"
            );
        }
        if let Some(d) = c.run_dir() {
            if finished_with(&journal(&d), "pass").len() < 40 {
                mid_campaign += 1;
            }
        }
    }
    let dir = c.run_dir().expect("a run dir with a journal");
    let passed_before = finished_with(&journal(&dir), "pass");
    println!(
        "{} of 40 runs passed before the final resume; {mid_campaign} kills left runs to do",
        passed_before.len()
    );
    assert!(
        !passed_before.is_empty(),
        "seed {seed}: no session finished a run"
    );
    // A session is killed at most 30 ms after its first `finished` line, and a run takes over
    // 50 ms one at a time, so no session finishes more than two runs: 40 need over 19 sessions.
    assert!(mid_campaign >= 10, "seed {seed}");
    let starts_before = c.counts("start");
    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(0), "seed {seed}: {}", show(&out));
    let starts = c.counts("start");
    for step in &passed_before {
        assert_eq!(
            starts.get(&case_id(step)),
            starts_before.get(&case_id(step))
        );
    }
    let runs = rows(&dir);
    let ids: Vec<String> = runs
        .iter()
        .map(|r| r["case_id"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), 40, "seed {seed}: every run once: {ids:?}");
    assert_eq!(unique.len(), 40, "seed {seed}: no run twice");
    assert!(runs.iter().all(|r| r["status"] == "pass"), "seed {seed}");
    // Each run finished `pass` exactly once in the journal.
    let lines = journal(&dir);
    let mut passes: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        if l["event"] == "finished" && l["status"] == "pass" {
            if let Some(s) = l["step"].as_str().filter(|s| s.starts_with("run:")) {
                *passes.entry(s).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(passes.len(), 40);
    assert!(passes.values().all(|n| *n == 1), "seed {seed}: {passes:?}");
    for r in &runs {
        let bundle = dir.join(r["artifact_bundle"].as_str().unwrap());
        for f in std::fs::read_dir(&bundle).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                json(&f);
            }
        }
    }
}

#[test]
fn hung_stack_is_killed_at_its_timeout_and_a_transient_failure_is_retried() {
    let c = Campaign::new(|tmp: &Path| {
        let dir = tmp.parent().unwrap();
        let defs = format!(
            r#"[stacks.hang]
command = ["{hang}", "{pid}"]
resource = "none"
timeout = "1s"

[stacks.flaky]
command = ["{flaky}", "{markers}"]
resource = "none"
"#,
            hang = fixture("run", "hang.sh"),
            pid = dir.join("hang.pid").display(),
            flaky = fixture("resume", "flaky.sh"),
            markers = dir.display(),
        );
        plan(
            "faults",
            r#""mesh""#,
            "256",
            r#""flaky", "hang""#,
            "retries = 1\nretry_on = [\"timeout\", \"fail\"]\ncooldown = \"300ms\"",
            &defs,
        )
    });
    let out = c.run();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let dir = c.run_dir().unwrap();
    let by: BTreeMap<String, Value> = rows(&dir)
        .into_iter()
        .map(|r| (r["stack"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(by["flaky"]["status"], "pass", "{}", by["flaky"]);
    assert_eq!(by["hang"]["status"], "timeout");
    // The hung stack's child was killed with it (gone, or a zombie nobody reaped).
    let pid: i32 = std::fs::read_to_string(c.tmp.path().join("hang.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap()
                .trim_start()
                .starts_with('Z'),
        "child {pid} still running: {stat}"
    );
    // Each attempt keeps its own log; run.log is the latest.
    let flaky = dir.join(by["flaky"]["artifact_bundle"].as_str().unwrap());
    let first = std::fs::read_to_string(flaky.join("run.attempt1.log")).unwrap();
    assert_eq!(first, "transient fault\n");
    let second = std::fs::read_to_string(flaky.join("run.attempt2.log")).unwrap();
    assert!(second.contains("CAMPAIGN_DONE"), "{second}");
    assert_eq!(
        std::fs::read_to_string(flaky.join("run.log")).unwrap(),
        second
    );
    let m = json(&flaky.join("manifest.json"));
    assert_eq!(m["attempt"], 2);
    assert_eq!(m["logs"]["attempt1"], "run.attempt1.log");
    let hang = dir.join(by["hang"]["artifact_bundle"].as_str().unwrap());
    assert!(hang.join("run.attempt1.log").is_file());
    assert!(hang.join("run.attempt2.log").is_file());
    // The journal: attempt 1 failed, attempt 2 (after the 300ms cooldown) passed.
    let lines = journal(&dir);
    let flaky_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["step"]
                .as_str()
                .is_some_and(|s| s.starts_with("run:") && s.ends_with(":flaky"))
        })
        .collect();
    let seq: Vec<(String, u64, String)> = flaky_lines
        .iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap().to_string(),
                l["attempt"].as_u64().unwrap(),
                l["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        seq,
        vec![
            ("started".into(), 1, "".into()),
            ("finished".into(), 1, "fail".into()),
            ("started".into(), 2, "".into()),
            ("finished".into(), 2, "pass".into()),
        ]
    );
    let t = |l: &Value| chrono::DateTime::parse_from_rfc3339(l["t"].as_str().unwrap()).unwrap();
    let rested = t(flaky_lines[2]) - t(flaky_lines[1]);
    assert!(
        rested.num_milliseconds() >= 300,
        "the retry waited the cooldown: {rested}"
    );
}

#[test]
fn a_device_failing_its_probe_is_quarantined_and_the_rest_runs_elsewhere() {
    let c = Campaign::new(|_| {
        let defs = format!(
            "[stacks.dev]\ncommand = [\"{}\"]\nresource = \"npu\"\n",
            fixture("run", "native.sh")
        );
        plan("probed", r#""mesh", "ring""#, "64, 128, 256", r#""dev""#, "", &defs)
            .replace("p = [2]", "p = [2, 4]")
            .replace(
                "ids = \"0-3\"",
                "ids = \"0-3\"\nprobe = [\"sh\", \"-c\", \"echo probing $CAMPAIGN_DEVICES; test $CAMPAIGN_DEVICES != 2\"]",
            )
    });
    let out = c.run();
    assert_eq!(out.status.code(), Some(1), "blocked runs: {}", show(&out));
    let dir = c.run_dir().unwrap();
    let runs = rows(&dir);
    assert_eq!(runs.len(), 12);
    for r in &runs {
        let p = r["p"].as_u64().unwrap();
        if p == 4 {
            // 4 devices needed, 3 healthy: nowhere to go.
            assert_eq!(r["status"], "blocked", "{r}");
            assert_eq!(
                r["reason"],
                "needs 4 devices but only 3 healthy device(s) remain"
            );
        } else {
            assert_eq!(r["status"], "pass", "{r}");
            let m = json(
                &dir.join(r["artifact_bundle"].as_str().unwrap())
                    .join("manifest.json"),
            );
            let devices: Vec<u64> = m["devices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert!(!devices.contains(&2), "ran on the quarantined device: {r}");
        }
    }
    let doc = json(&dir.join("results.json"));
    assert_eq!(doc["quarantined"]["2"], "health probe failed: exit code 1");
    assert!(dir.join("probes/dev2.log").is_file());
    let status = util::run(&["status", dir.to_str().unwrap()]);
    let text = util::stdout(&status);
    assert!(
        text.contains("device 2: health probe failed: exit code 1"),
        "{text}"
    );
    assert!(
        util::stdout(&out).contains("device 2 quarantined"),
        "{}",
        show(&out)
    );
}

/// Wait (bounded) until the counting stack has started `n` runs.
fn wait_for_starts(c: &Campaign, n: usize) {
    let cap = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < cap {
        if c.counts("start").values().sum::<usize>() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the stack never started {n} runs within 120 s");
}

#[test]
fn ctrl_c_exits_3_resume_completes_and_a_second_resume_runs_nothing() {
    let c = Campaign::new(counting_plan("ctrlc", "64, 128, 256", "0.3", "jobs = 1"));
    let child = c.spawn_run();
    wait_for_starts(&c, 2);
    let dir = c.run_dir().unwrap();
    // The run dir is locked while the campaign runs.
    let refused = c.resume(&[]);
    assert_eq!(refused.status.code(), Some(4), "{}", show(&refused));
    assert!(util::stderr(&refused).contains("is in use by campaign pid"));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert!(
        util::stderr(&out).contains(&format!(
            "interrupted; continue with: campaign resume {}",
            dir.display()
        )),
        "{}",
        show(&out)
    );
    let interrupted = finished_with(&journal(&dir), "interrupted");
    assert_eq!(
        interrupted.len(),
        1,
        "the running run was journaled interrupted"
    );
    let partial = rows(&dir);
    assert!(partial.iter().any(|r| r["status"] == "interrupted"));
    let done = finished_with(&journal(&dir), "pass").len();

    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains(&format!(
            "resume: {done} done, {} to run, 0 changed, 0 to retry",
            6 - done
        )),
        "{}",
        show(&out)
    );
    let runs = rows(&dir);
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r["status"] == "pass"));
    let interrupted_bundle = dir
        .join("cases")
        .join(case_id(interrupted.iter().next().unwrap()));
    assert!(
        interrupted_bundle.join("count/run.attempt1.log").is_file(),
        "the interrupted attempt's log is kept"
    );
    assert!(dir.join("reports/summary.md").is_file(), "report rebuilt");

    let starts = c.counts("start");
    let again = c.resume(&[]);
    assert_eq!(again.status.code(), Some(0), "{}", show(&again));
    let text = util::stdout(&again);
    assert!(
        text.contains("resume: 6 done, 0 to run, 0 changed, 0 to retry"),
        "{text}"
    );
    assert!(text.contains("nothing to run"), "{text}");
    assert_eq!(c.counts("start"), starts, "nothing ran");
    assert_eq!(rows(&dir).len(), 6);

    // An up-to-date run dir still renders its report again with a template given to resume.
    let template = c.tmp.path().join("mine.md.j2");
    std::fs::write(&template, "my report of {{ runs | length }} runs\n").unwrap();
    let styled = c.resume(&["--template", template.to_str().unwrap()]);
    assert_eq!(styled.status.code(), Some(0), "{}", show(&styled));
    assert_eq!(c.counts("start"), starts, "still nothing ran");
    let summary = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert_eq!(
        summary.trim_end(),
        "my report of 6 runs",
        "{}",
        show(&styled)
    );
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_the_journal_stays_readable() {
    // A stack that ignores SIGTERM: after the first Ctrl-C the engine would wait out the grace
    // period before SIGKILL; the second Ctrl-C ends everything at once.
    let c = Campaign::new(|counter: &Path| {
        let defs = format!(
            "[stacks.stubborn]\ncommand = \"echo $CAMPAIGN_CASE_ID start >> {}; trap '' TERM; sleep 30\"\nshell = true\nresource = \"none\"\n",
            counter.display()
        );
        plan(
            "twice",
            r#""mesh""#,
            "64, 128",
            r#""stubborn""#,
            "jobs = 1",
            &defs,
        )
    });
    let mut child = c.spawn_run();
    wait_for_starts(&c, 1);
    // Read stderr as it comes: the second Ctrl-C goes only after the campaign said it heard
    // the first (two signals sent back to back may be delivered as one).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the campaign acknowledges the first Ctrl-C within 120 s");
        if line.starts_with("interrupted: stopping runs") {
            break;
        }
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("interrupted twice"), "{err}");
    let dir = c.run_dir().unwrap();
    // Consistent: every line reads; the run that was cut short is open (started, not
    // finished), so resume runs it again.
    let lines = journal(&dir);
    assert!(finished_with(&lines, "interrupted").is_empty());
    // The second Ctrl-C killed what the cut-short run held: its cgroup (the journal names it,
    // for resume to remove) empties without anything else happening.
    for cgroup in lines.iter().filter_map(|l| l["cgroup"].as_str()) {
        let procs = Path::new(cgroup).join("cgroup.procs");
        let until = std::time::Instant::now() + Duration::from_secs(120);
        while std::fs::read_to_string(&procs).is_ok_and(|p| !p.trim().is_empty()) {
            assert!(
                std::time::Instant::now() < until,
                "{cgroup} still holds processes"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let status = util::run(&["status", dir.to_str().unwrap()]);
    assert_eq!(status.status.code(), Some(0), "{}", show(&status));
    let text = util::stdout(&status);
    assert!(text.contains("1 interrupted"), "{text}");
    assert!(text.contains("continue with: campaign resume"), "{text}");
}

#[test]
fn retry_failed_reruns_failures_and_a_changed_stack_reruns_its_runs() {
    let c = Campaign::new(|counter: &Path| {
        let defs = format!(
            r#"[stacks.flaky]
command = ["{flaky}", "{markers}"]
resource = "none"

[stacks.count]
command = ["{count}", "{counter}"]
resource = "none"
"#,
            flaky = fixture("resume", "flaky.sh"),
            markers = counter.parent().unwrap().display(),
            count = fixture("resume", "counting.sh"),
            counter = counter.display(),
        );
        plan(
            "changes",
            r#""mesh""#,
            "64, 128",
            r#""flaky", "count""#,
            "",
            &defs,
        )
    });
    let out = c.run();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let dir = c.run_dir().unwrap();
    let failed = |dir: &Path| rows(dir).iter().filter(|r| r["status"] == "fail").count();
    assert_eq!(failed(&dir), 2);

    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("resume: 4 done, 0 to run, 0 changed, 0 to retry (2 failed or timed out and kept; --retry-failed runs them again)"),
        "{}",
        show(&out)
    );

    let out = c.resume(&["--retry-failed"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("resume: 2 done, 0 to run, 0 changed, 2 to retry"),
        "{}",
        show(&out)
    );
    assert_eq!(failed(&dir), 0);
    let m = json(&dir.join("cases/mesh_p2_count64_fp32_host_d0-1/flaky/manifest.json"));
    assert_eq!(m["attempt"], 2, "attempts continue across sessions");
    assert!(dir
        .join("cases/mesh_p2_count64_fp32_host_d0-1/flaky/run.attempt1.log")
        .is_file());

    // Edit the frozen plan: the `count` stack's command changes, so its runs re-run.
    let frozen = dir.join("plan.toml");
    let text = std::fs::read_to_string(&frozen).unwrap();
    let edited = text.replace(
        &format!("\"{}\"]", c.counter.display()),
        &format!("\"{}\", \"0\"]", c.counter.display()),
    );
    assert_ne!(text, edited);
    std::fs::write(&frozen, edited).unwrap();
    let before = c.counts("start");
    // An edited plan is refused unless the resume says the edit was meant (issue 43 item 7),
    // naming both plan hashes; nothing runs.
    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = util::stderr(&out);
    assert!(
        err.contains("the journal recorded plan hash `") && err.contains("now has plan hash `"),
        "{err}"
    );
    assert!(err.contains("--plan-edited"), "{err}");
    assert_eq!(c.counts("start"), before, "a refused resume runs nothing");
    let out = c.resume(&["--plan-edited"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("resume: 2 done, 0 to run, 2 changed, 0 to retry"),
        "{}",
        show(&out)
    );
    assert!(
        util::stdout(&out).contains("resume: plan.toml was edited (plan hash "),
        "{}",
        show(&out)
    );
    let after = c.counts("start");
    for (id, n) in &before {
        assert_eq!(after[id], n + 1, "{id} ran once more");
    }
    // The journal disagreed with that session's fingerprints, so it did not vouch for its
    // context; the next resume renders, finds every fingerprint agreeing, and records it.
    let last_session = || {
        let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
        let line = journal
            .lines()
            .rfind(|l| l.contains(r#""event":"session""#))
            .unwrap()
            .to_string();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    assert!(last_session().get("fingerprint_context").is_none());
    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        util::stdout(&out).contains("resume: 4 done, 0 to run, 0 changed, 0 to retry"),
        "{}",
        show(&out)
    );
    assert_eq!(c.counts("start"), after, "nothing ran");
    let context = last_session()["fingerprint_context"].clone();
    assert!(context.is_string(), "{context}");
    let header = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let header: serde_json::Value = serde_json::from_str(header.lines().next().unwrap()).unwrap();
    assert_ne!(header["fingerprint_context"], context, "the stack changed");
}

#[test]
fn a_write_failure_stops_the_campaign_cleanly_and_resume_finishes_it() {
    // The stack of one case replaces its own bundle folder with a file (once): its bundle
    // cannot be written, as on a full disk.
    let c = Campaign::new(|counter: &Path| {
        let marker = counter.parent().unwrap().join("sabotaged");
        let defs = format!(
            r#"[stacks.count]
command = "if [ \"$CAMPAIGN_CASE_ID\" = mesh_p2_count128_fp32_host_d0-1 ] && [ ! -e {marker} ]; then touch {marker}; rm -rf \"$CAMPAIGN_BUNDLE_DIR\"; echo blocker > \"$CAMPAIGN_BUNDLE_DIR\"; fi; exec {count} {counter}"
shell = true
resource = "none"
"#,
            marker = marker.display(),
            count = fixture("resume", "counting.sh"),
            counter = counter.display(),
        );
        plan(
            "diskfull",
            r#""mesh", "ring""#,
            "64, 128",
            r#""count""#,
            "jobs = 1",
            &defs,
        )
    });
    let out = c.run();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    // The first failed write stops launching: the sabotaged run is the last that started.
    let log = std::fs::read_to_string(&c.counter).unwrap();
    let starts: Vec<&str> = log.lines().filter(|l| l.ends_with(" start")).collect();
    // (Longest first: the count-128 runs start first, mesh before ring.)
    assert_eq!(
        starts,
        ["mesh_p2_count128_fp32_host_d0-1 start"],
        "runs started after the write failure"
    );
    let dir = c.run_dir().unwrap();
    let blocker = dir.join("cases/mesh_p2_count128_fp32_host_d0-1/count");
    let err = util::stderr(&out);
    assert!(err.contains(&blocker.display().to_string()), "{err}");
    assert!(
        err.contains(&format!("`campaign resume {}` continues", dir.display())),
        "{err}"
    );
    // Nothing recorded is damaged: the journal reads, finished runs have whole bundles, and the
    // run that could not be recorded is not `finished`.
    let lines = journal(&dir);
    let passed = finished_with(&lines, "pass");
    assert!(!passed.iter().any(|s| s.contains("mesh_p2_count128")));
    for step in &passed {
        let b = dir.join("cases").join(case_id(step)).join("count");
        json(&b.join("manifest.json"));
        json(&b.join("timing.json"));
    }
    // Space is back.
    std::fs::remove_file(&blocker).unwrap();
    let out = c.resume(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let runs = rows(&dir);
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "pass"), "{runs:?}");
}

//! Structured fuzzing of run dirs as campaign reads them back: one real run dir (a trivial
//! shell stack, a few runs) is made once, then seeded mutations of its files — journal lines
//! (truncated, duplicated, reordered, wrong types, huge numbers, another campaign's header, a
//! run not in the plan), manifest.json and timing.json (negative, zero, denormal, huge and
//! non-numeric times, wrong lengths, missing keys), the results stamp, the report stamp and
//! the bootstrap memo, missing files, binary garbage, NUL bytes, deep JSON nesting, a FIFO or
//! /dev/zero in a file's place — each go through `status` and one of `report`,
//! `resume --verify`, `compare` and `history ingest`.
//!
//! Asserted for every mutant: no panic (exit 101) and no death by signal, no hang (each
//! command has a generous cap), an exit code from the documented set, and nothing reported that
//! the bundles do not hold: a run the results files count as passing holds only valid timed
//! samples, and only planned runs are in them. `CAMPAIGN_FUZZ_SEED=<n>` repeats a run;
//! `CAMPAIGN_FUZZ_RUN_DIRS=<n>` changes how many mutants are tried.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::util::{exe, tempdir};

/// Mutants per run of the test: sized for a debug build on a busy 2-core machine.
const MUTANTS: usize = 100;

/// Longest any one command may take before it counts as a hang.
const CAP: Duration = Duration::from_secs(120);

const CASES: [&str; 2] = [
    "mesh_p2_count64_fp32_host_d0-1",
    "mesh_p2_count4096_fp32_host_d0-1",
];
const STACKS: [&str; 2] = ["a", "b"];

/// Two stacks of fixed times (1–5 ms) with phases; every value it prints is valid.
const PLAN: &str = r#"[campaign]
name = "fuzzed"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [64, 4096]
stacks = ["a", "b"]
[rounds]
warmup = 1
timed = 5
[run]
repeats = 1
[stacks.a]
command = ["sh", "-c", "for i in 1 2 3 4 5 6; do echo \"CAMPAIGN_SAMPLE {\\\"execute_s\\\":0.00$((i % 5 + 1)),\\\"ok\\\":true,\\\"phases\\\":{\\\"init\\\":0.000$i,\\\"execute\\\":0.00$((i % 5 + 1))}}\"; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
[stacks.b]
command = ["sh", "-c", "for i in 1 2 3 4 5 6; do echo \"CAMPAIGN_SAMPLE {\\\"execute_s\\\":0.00$((i % 4 + 2)),\\\"ok\\\":true}\"; done; echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'"]
resource = "none"
"#;

/// Values a JSON leaf is replaced with: wrong types, huge, tiny, negative, denormal.
const HOSTILE: &[&str] = &[
    "-1",
    "0",
    "-0.0",
    "5e-324",
    "1e-310",
    "1e308",
    "1.7976931348623157e308",
    "18446744073709551616",
    "-9223372036854775809",
    "\"NaN\"",
    "\"inf\"",
    "null",
    "true",
    "\"\"",
    "\"x\\u0000y\"",
    "[]",
    "{}",
    "[1,2,3]",
];

/// Times a stack could never print validly: a passing run must never hold one.
fn invalid_time(v: f64) -> bool {
    !(f64::MIN_POSITIVE..=1e6).contains(&v)
}

/// What was done to one mutant (printed when an assertion fails).
struct Mutant {
    dir: PathBuf,
    did: Vec<String>,
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Every regular file of the run dir, relative to it (a FIFO or link an earlier mutation put
/// in a file's place is not read again).
fn files(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            files(&e.path(), base, out);
        } else if kind.is_file() {
            out.push(e.path().strip_prefix(base).unwrap().to_path_buf());
        }
    }
}

/// A random leaf of `v` (by path), replaced by `with`.
fn replace_leaf(v: &mut Value, rng: &mut ChaCha8Rng, with: Value) -> String {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = keys.choose(rng).unwrap().clone();
            if rng.random_bool(0.1) {
                m.remove(&k);
                return format!("-{k}");
            }
            format!("{k}.{}", replace_leaf(m.get_mut(&k).unwrap(), rng, with))
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.random_range(0..a.len());
            match rng.random_range(0..10) {
                0 => {
                    a.remove(i);
                    format!("[-{i}]")
                }
                1 => {
                    let dup = a[i].clone();
                    a.push(dup);
                    format!("[+{i}]")
                }
                _ => format!("[{i}].{}", replace_leaf(&mut a[i], rng, with)),
            }
        }
        leaf => {
            *leaf = with;
            "=".into()
        }
    }
}

/// A timed sample's `execute_s` set to a value no live run could record.
fn bad_time(v: &mut Value, rng: &mut ChaCha8Rng) -> Option<String> {
    let samples = v.as_array_mut()?;
    let timed: Vec<usize> = (0..samples.len())
        .filter(|&i| {
            samples[i]["phase"]
                .as_str()
                .is_some_and(|p| p.starts_with("timed"))
        })
        .collect();
    let &i = timed.choose(rng)?;
    let with = *["-1", "0", "5e-324", "1e-310", "1e308", "-0.0"].choose(rng)?;
    samples[i]["execute_s"] = serde_json::from_str(with).ok()?;
    Some(format!("sample {i} execute_s = {with}"))
}

/// One mutation of one file of `m`.
fn mutate(m: &mut Mutant, rng: &mut ChaCha8Rng) {
    let mut all = Vec::new();
    files(&m.dir, &m.dir, &mut all);
    all.sort();
    // The files campaign reads back are chosen more often than the rest.
    let weighted: Vec<&PathBuf> = all
        .iter()
        .flat_map(|f| {
            let name = f.file_name().unwrap().to_string_lossy();
            let w = match name.as_ref() {
                "journal.jsonl" | "timing.json" | "manifest.json" => 4,
                ".results-stamp" | ".report-stamp" | ".bootstrap-memo" => 2,
                _ => 1,
            };
            std::iter::repeat_n(f, w)
        })
        .collect();
    let Some(&rel) = weighted.choose(rng) else {
        return;
    };
    let path = m.dir.join(rel);
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    let name = rel.display().to_string();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let kind = rng.random_range(0..16);
    let (new, what): (Vec<u8>, String) = match kind {
        // Journal-shaped edits of any line-based file.
        0..=3 => {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if lines.is_empty() {
                lines.push(String::new());
            }
            let i = rng.random_range(0..lines.len());
            let what = match kind {
                0 => {
                    let cut = rng.random_range(0..=lines[i].len());
                    let cut = (0..=cut)
                        .rev()
                        .find(|&c| lines[i].is_char_boundary(c))
                        .unwrap();
                    lines[i].truncate(cut);
                    format!("line {} cut at {cut}", i + 1)
                }
                1 => {
                    let dup = lines[i].clone();
                    let at = rng.random_range(0..=lines.len());
                    lines.insert(at, dup);
                    format!("line {} copied to {at}", i + 1)
                }
                2 => {
                    let j = rng.random_range(0..lines.len());
                    lines.swap(i, j);
                    format!("lines {} and {} swapped", i + 1, j + 1)
                }
                _ => {
                    let foreign = [
                        lines[0]
                            .replace("fuzzed", "another")
                            .replace("\"plan_hash\":\"", "\"plan_hash\":\"0"),
                        lines[i].replace(CASES[0], "mesh_p2_count8_fp32_host_d0-1"),
                        lines[i].replace("\"pass\"", "\"fail\""),
                        lines[i].replace("\"fail\"", "\"pass\""),
                        lines[i].replace("\"samples\":5", "\"samples\":18446744073709551615"),
                        lines[i].replace("\"attempt\":1", "\"attempt\":\"1\""),
                        "\u{0}\u{0}{\"kind\":\u{0}}".to_string(),
                    ];
                    let pick = rng.random_range(0..foreign.len());
                    lines.insert(i, foreign[pick].clone());
                    format!("line {} inserted (kind {pick})", i + 1)
                }
            };
            let mut s = lines.join("\n");
            if rng.random_bool(0.8) {
                s.push('\n');
            }
            (s.into_bytes(), what)
        }
        // JSON-shaped edits.
        4..=8 => match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut v) => {
                let what = if name.ends_with("timing.json") && rng.random_bool(0.5) {
                    bad_time(&mut v, rng).unwrap_or_default()
                } else {
                    let with: Value =
                        serde_json::from_str(HOSTILE.choose(rng).unwrap()).unwrap_or(Value::Null);
                    let shown = with.to_string();
                    format!("{} → {shown}", replace_leaf(&mut v, rng, with))
                };
                (serde_json::to_vec_pretty(&v).unwrap(), what)
            }
            Err(_) => (bytes.clone(), "not JSON: left".into()),
        },
        9 => {
            let cut = rng.random_range(0..=bytes.len());
            (bytes[..cut].to_vec(), format!("truncated to {cut} bytes"))
        }
        10 => {
            let mut b = bytes.clone();
            let n = rng.random_range(1..64);
            for _ in 0..n {
                if b.is_empty() {
                    break;
                }
                let at = rng.random_range(0..b.len());
                b[at] = rng.random();
            }
            (b, format!("{n} random bytes"))
        }
        11 => {
            let mut b = bytes.clone();
            let at = rng.random_range(0..=b.len());
            b.insert(at, 0);
            (b, format!("NUL at {at}"))
        }
        12 => {
            let depth = *[64usize, 1000, 100_000].choose(rng).unwrap();
            let mut s = "[".repeat(depth);
            s.push_str(&"]".repeat(depth));
            (s.into_bytes(), format!("nesting {depth} deep"))
        }
        13 => {
            std::fs::remove_file(&path).unwrap();
            m.did.push(format!("{name}: removed"));
            return;
        }
        14 => {
            std::fs::remove_file(&path).unwrap();
            let what = match rng.random_range(0..3) {
                0 => {
                    std::fs::create_dir(&path).unwrap();
                    "a directory"
                }
                1 => {
                    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
                    // SAFETY: mkfifo(3) on a path we own.
                    unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
                    "a FIFO"
                }
                _ => {
                    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
                    "a link to /dev/zero"
                }
            };
            m.did.push(format!("{name}: replaced by {what}"));
            return;
        }
        _ => {
            let n = rng.random_range(0..4096);
            let b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            (b, format!("{n} bytes of garbage"))
        }
    };
    std::fs::write(&path, new).unwrap();
    m.did.push(format!("{name}: {what}"));
}

/// Run `campaign args…` to its end within [`CAP`]; the exit code (None: killed by a signal).
fn run_capped(cwd: &Path, args: &[&str], m: &Mutant) -> (Option<i32>, String) {
    let mut child = Command::new(exe())
        .current_dir(cwd)
        .args(args)
        .env("CAMPAIGN_CONTAINMENT", "cookie")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut { err }, &mut s);
        s
    });
    let until = Instant::now() + CAP;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`campaign {}` hung (over {CAP:?}) on {:?}",
                args.join(" "),
                m.did
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (status.code(), reader.join().unwrap())
}

/// Nothing in the results files that the bundles do not hold: only planned runs, once each,
/// and a passing run's timed samples all valid times.
fn check_results(dir: &Path, m: &Mutant, cmd: &str) {
    let Ok(text) = std::fs::read_to_string(dir.join("results.json")) else {
        return;
    };
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let planned: BTreeSet<(String, String)> = CASES
        .iter()
        .flat_map(|c| STACKS.iter().map(move |s| (c.to_string(), s.to_string())))
        .collect();
    let mut seen = BTreeSet::new();
    for r in doc["runs"].as_array().into_iter().flatten() {
        let key = (
            r["case_id"].as_str().unwrap_or_default().to_string(),
            r["stack"].as_str().unwrap_or_default().to_string(),
        );
        assert!(
            planned.contains(&key),
            "{cmd}: unplanned run {key:?} in results.json after {:?}",
            m.did
        );
        assert!(
            seen.insert(key.clone()),
            "{cmd}: run {key:?} twice in results.json after {:?}",
            m.did
        );
    }
    let Ok(csv) = std::fs::read_to_string(dir.join("samples.csv")) else {
        return;
    };
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (Some(status), Some(timed), Some(exec)) =
        (col("run_status"), col("timed"), col("execute_s"))
    else {
        return;
    };
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.get(status) != Some(&"pass") || cells.get(timed) != Some(&"true") {
            continue;
        }
        let v: f64 = cells
            .get(exec)
            .and_then(|c| c.parse().ok())
            .unwrap_or(f64::NAN);
        assert!(
            !invalid_time(v),
            "{cmd}: a passing run holds the time {v} in samples.csv ({line}) after {:?}",
            m.did
        );
    }
}

fn seed() -> u64 {
    std::env::var("CAMPAIGN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x43_11)
}

#[test]
fn mutated_run_dirs_never_panic_hang_or_report_what_their_bundles_do_not_hold() {
    let seed = seed();
    let mutants = std::env::var("CAMPAIGN_FUZZ_RUN_DIRS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(MUTANTS);
    let tmp = tempdir();
    let (out, pristine) = crate::honest::run_plan_with(
        tmp.path(),
        "fuzzed",
        PLAN,
        &[],
        &[("CAMPAIGN_CONTAINMENT", "cookie")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::stderr(&out));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut codes = std::collections::BTreeMap::<(String, i32), usize>::new();
    for i in 0..mutants {
        let dir = tmp.path().join(format!("m{i}"));
        copy_dir(&pristine, &dir);
        let mut m = Mutant {
            dir: dir.clone(),
            did: Vec::new(),
        };
        for _ in 0..rng.random_range(1..=3) {
            mutate(&mut m, &mut rng);
        }
        let d = dir.to_str().unwrap();
        let p = pristine.to_str().unwrap();
        let store = tmp.path().join("store");
        let store = store.to_str().unwrap();
        let mut commands: Vec<Vec<&str>> = vec![vec!["status", d]];
        commands.push(match i % 4 {
            0 => vec!["report", d],
            1 => vec!["resume", "--verify", d, "-q"],
            2 => vec!["compare", p, d, "--format", "json", "--no-history"],
            _ => vec!["history", "ingest", d, "--results-dir", store],
        });
        for args in &commands {
            let (code, err) = run_capped(tmp.path(), args, &m);
            let cmd = args[0].to_string();
            match code {
                Some(c @ 0..=7) => *codes.entry((cmd.clone(), c)).or_default() += 1,
                other => panic!(
                    "mutant {i} (seed {seed}): `campaign {}` ended with {other:?} after {:?}:\n{err}",
                    args.join(" "),
                    m.did
                ),
            }
            assert!(
                !err.contains("panicked at"),
                "mutant {i} (seed {seed}): `campaign {}` panicked after {:?}:\n{err}",
                args.join(" "),
                m.did
            );
            if matches!(code, Some(0 | 1)) && matches!(args[0], "report" | "resume") {
                check_results(&dir, &m, &format!("mutant {i} (seed {seed}) {cmd}"));
            }
        }
        // A mutant is small; thousands of them are not kept.
        let _ = std::fs::remove_dir_all(&dir);
    }
    eprintln!("exit codes by command over {mutants} mutants (seed {seed}): {codes:?}");
    // Both a clean read and a refusal must happen, or the mutations test nothing.
    assert!(
        codes.keys().any(|(c, x)| c == "status" && *x == 0),
        "{codes:?}"
    );
    assert!(codes.keys().any(|(_, x)| *x != 0), "{codes:?}");
}

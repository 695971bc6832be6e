//! Structured fuzzing of the bad-input path: thousands of plans built from plan-shaped parts —
//! every section and key, wrong types, huge and tiny numbers, durations past every limit,
//! stack definitions with broken templates, regexes and commands — go through what `validate`
//! and `dry-run` do (load, stack check, the listing in every format, `prepare`). None may panic;
//! every refusal is a bad-input error (exit 2). Work is bounded by construction (small axes, the
//! plan limits), not by a clock. `CAMPAIGN_FUZZ_SEED=<n>` repeats a run.

use std::path::Path;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cli::args::{DryRunArgs, ListFormat};
use crate::error::exit;

/// Plans per run of the test.
const PLANS: usize = 3000;

const INTS: &[&str] = &[
    "-1",
    "0",
    "1",
    "2",
    "3",
    "8",
    "64",
    "1000",
    "4096",
    "4097",
    "20000",
    "1000000",
    "274877906944",
    "4611686018427387904",
    "9223372036854775807",
    "0x10",
    "1e3",
    "0.5",
    "nan",
    "\"64\"",
    "true",
    "[]",
    "{}",
];

const DURATIONS: &[&str] = &[
    "\"10m\"",
    "\"500ms\"",
    "30",
    "0.25",
    "0",
    "-1",
    "604800",
    "604801",
    "\"7d\"",
    "\"8d\"",
    "\"3000000000000000h\"",
    "\"99999999999999999h\"",
    "\"1e300\"",
    "\"ten minutes\"",
    "\"\"",
    "1e308",
    "[1]",
];

const TEMPLATES: &[&str] = &[
    "echo",
    "{{ p }}",
    "{{ ranks }}",
    "{{ case.count }}",
    "{{ root }}",
    "{% if p > 2 %}big{% endif %}",
    "{% if %}",
    "{{",
    "{{ devices | join(',') }}",
    "",
    "{{ case_file }}",
    "{% for i in range(100000000) %}x{% endfor %}",
    "a\0b",
    "/x/{{ nope }}",
    "{{ root_rank }}",
];

/// Loops nested past the fuel: each costs a full fuel's rendering, so it is drawn rarely
/// ([`template`]) to keep the test's time.
const NESTED: &str =
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";

/// A template from [`TEMPLATES`], or now and then [`NESTED`].
fn template(rng: &mut ChaCha8Rng) -> &'static str {
    if rng.random_bool(0.02) {
        NESTED
    } else {
        pick(rng, TEMPLATES)
    }
}

/// Templates no stack field may take (an undefined name, broken syntax, loops nested past the
/// fuel, a NUL byte): a plan that runs `mine` with one of these in `[stacks.mine]` or in
/// `[devices] probe` and is accepted is a validation hole.
const BAD_TEMPLATES: &[&str] = &["{{ ranks }}", "{% if %}", NESTED, "a\0b", "/x/{{ nope }}"];

/// `where` expressions no stack may take: an undefined name, broken syntax, a NUL.
const BAD_EXPRESSIONS: &[&str] = &["nope == 1", "p ==", "'a\0b' != variant"];

/// `where` expressions: good, undefined names, broken syntax, a NUL.
const EXPRESSIONS: &[&str] = &[
    "p > 1",
    "variant != 'ring' or p == 2",
    "nope == 1",
    "p ==",
    "'a\0b' != variant",
];

/// `text` as a TOML basic string (a NUL written as the escape TOML knows).
fn toml_string(text: &str) -> String {
    format!("{text:?}").replace("\\0", "\\u0000")
}

fn pick<'a>(rng: &mut ChaCha8Rng, list: &[&'a str]) -> &'a str {
    list.choose(rng).copied().unwrap_or("")
}

/// Mostly a good value, sometimes anything from `wild` (so whole plans are often valid and
/// reach the listing, and every bad value is still tried often).
fn good_or<'a>(rng: &mut ChaCha8Rng, good: &[&'a str], wild: &[&'a str]) -> &'a str {
    if rng.random_bool(0.9) {
        pick(rng, good)
    } else {
        pick(rng, wild)
    }
}

/// An axis: 1–3 distinct good values, or (sometimes) anything.
fn axis(rng: &mut ChaCha8Rng, good: &[&str], wild: &[&str]) -> String {
    if rng.random_bool(0.9) {
        let n = rng.random_range(1..=good.len().min(3));
        let items: Vec<&str> = good.choose_multiple(rng, n).copied().collect();
        format!("[{}]", items.join(", "))
    } else {
        array(rng, wild, 4)
    }
}

fn array(rng: &mut ChaCha8Rng, list: &[&str], max: usize) -> String {
    let n = rng.random_range(0..=max);
    let items: Vec<&str> = (0..n).map(|_| pick(rng, list)).collect();
    format!("[{}]", items.join(", "))
}

fn value(rng: &mut ChaCha8Rng, list: &[&str]) -> String {
    if rng.random_bool(0.7) {
        pick(rng, list).to_string()
    } else {
        array(rng, list, 4)
    }
}

fn quoted_templates(rng: &mut ChaCha8Rng, max: usize) -> String {
    let n = rng.random_range(0..=max);
    let items: Vec<String> = (0..n).map(|_| toml_string(template(rng))).collect();
    format!("[{}]", items.join(", "))
}

/// One random plan, section by section; each section is present with some probability and
/// each key gets a value from the lists above, right or wrong.
fn plan(rng: &mut ChaCha8Rng) -> String {
    let mut t = String::new();
    if rng.random_bool(0.95) {
        let long = "n".repeat(150);
        let name = good_or(rng, &["fuzz", "ok_1"], &["", "Bad Name", &long, "a/b"]);
        t.push_str(&format!("[campaign]\nname = {name:?}\n"));
    }
    if rng.random_bool(0.6) {
        t.push_str("[case]\n");
        for (key, list) in [
            ("platform", &["\"host\"", "\"a2a3\"", "\"mars\"", "3"][..]),
            ("p", INTS),
            ("count", INTS),
            ("core_num", INTS),
            ("timed_rounds", INTS),
            (
                "dtype",
                &["\"fp16\"", "\"bf16\"", "\"int32\"", "\"f64\""][..],
            ),
            (
                "device_ids",
                &["[0, 1]", "[0, 0]", "[4294967295, 1]", "\"0-1\""][..],
            ),
        ] {
            if rng.random_bool(0.1) {
                t.push_str(&format!("{key} = {}\n", pick(rng, list)));
            }
        }
    }
    t.push_str("[axes]\n");
    let variants = ["\"mesh\"", "\"ring\"", "\"twophase\""];
    let dtypes = ["\"fp32\"", "\"fp16\"", "\"bf16\"", "\"int32\""];
    for (key, good, wild, chance) in [
        (
            "variant",
            &variants[..],
            &["\"tree\"", "1", "\"mesh\""][..],
            0.97,
        ),
        ("p", &["2", "3", "4"][..], INTS, 0.97),
        ("count", &["1", "64", "1000", "4096"][..], INTS, 0.97),
        ("dtype", &dtypes[..], &["\"f64\"", "1"][..], 0.5),
        (
            "orch_tier",
            &["\"logical\""][..],
            &["\"strict_window\"", "\"logical\""][..],
            0.1,
        ),
    ] {
        if rng.random_bool(chance) {
            t.push_str(&format!("{key} = {}\n", axis(rng, good, wild)));
        }
    }
    if rng.random_bool(0.5) {
        let stacks = axis(
            rng,
            &["\"host\"", "\"mine\""],
            &["\"host\"", "\"mine\"", "\"hccl\"", "\"nope\""],
        );
        t.push_str(&format!("stacks = {stacks}\n"));
    }
    if rng.random_bool(0.2) {
        t.push_str(&format!(
            "[[exclude]]\nvariant = {}\n",
            value(rng, &["\"mesh\"", "\"ring\""])
        ));
    }
    if rng.random_bool(0.2) {
        let expr = pick(
            rng,
            &[
                "count > p",
                "false",
                "p == 3 and variant == 'ring'",
                "{{",
                "nope > 1",
                "count / 0",
            ],
        );
        t.push_str(&format!("[filter]\nwhere = {expr:?}\n"));
    }
    if rng.random_bool(0.3) {
        t.push_str(&format!(
            "[rounds]\nwarmup = {}\ntimed = {}\n",
            pick(rng, &["0", "1", "\"auto\"", "-1", "4294967296"]),
            pick(rng, &["1", "3", "0", "\"auto\"", "99999999999"])
        ));
    }
    if rng.random_bool(0.5) {
        t.push_str("[run]\n");
        for key in ["timeout", "no_output_timeout", "cooldown"] {
            if rng.random_bool(0.5) {
                let d = good_or(rng, &["\"10m\"", "30", "0.5", "\"7d\""], DURATIONS);
                t.push_str(&format!("{key} = {d}\n"));
            }
        }
        if rng.random_bool(0.3) {
            t.push_str(&format!("retries = {}\n", pick(rng, INTS)));
        }
        if rng.random_bool(0.3) {
            t.push_str(&format!("jobs = {}\n", pick(rng, INTS)));
        }
    }
    if rng.random_bool(0.1) {
        t.push_str(&format!(
            "[devices]\nkind = {}\nids = {}\n",
            pick(rng, &["\"cpu\"", "\"npu\"", "\"gpu\"", "\"tpu\""]),
            pick(rng, &["\"0-3\"", "\"0-99999\"", "[0, 1]", "\"3-1\"", "[]"])
        ));
        if rng.random_bool(0.4) {
            t.push_str(&format!("probe = {}\n", quoted_templates(rng, 2)));
        }
    }
    if rng.random_bool(0.5) {
        t.push_str("[stacks.mine]\n");
        if rng.random_bool(0.7) {
            t.push_str("command = [\"echo\", \"{{ p }}\", \"{{ devices_csv }}\"]\n");
        } else if rng.random_bool(0.5) {
            t.push_str(&format!("command = {}\n", quoted_templates(rng, 3)));
        } else {
            t.push_str(&format!("command = {}\n", toml_string(template(rng))));
        }
        if rng.random_bool(0.4) {
            t.push_str(&format!("shell = {}\n", pick(rng, &["true", "false", "1"])));
        }
        if rng.random_bool(0.4) {
            t.push_str(&format!(
                "parser = {}\n",
                pick(rng, &["\"native\"", "\"regex\"", "\"markers\"", "\"nope\""])
            ));
        }
        if rng.random_bool(0.3) {
            t.push_str(&format!(
                "patterns = {{ execute_s = {:?} }}\n",
                pick(rng, &["([", "(?P<value_s>[0-9.]+)", "x", "(?P<nope>.)"])
            ));
        }
        if rng.random_bool(0.3) {
            t.push_str(&format!(
                "env = {{ {} = {} }}\n",
                pick(
                    rng,
                    &["X", "CAMPAIGN_CASE_ID", "CAMPAIGN_TIMED", "LD_PRELOAD"]
                ),
                toml_string(template(rng))
            ));
        }
        for key in ["cwd", "probe", "build"] {
            if rng.random_bool(0.15) {
                t.push_str(&format!("{key} = {}\n", quoted_templates(rng, 2)));
            }
        }
        more_stack_templates(rng, &mut t);
        for key in ["timeout", "no_output_timeout"] {
            if rng.random_bool(0.2) {
                t.push_str(&format!("{key} = {}\n", pick(rng, DURATIONS)));
            }
        }
    }
    if rng.random_bool(0.1) {
        t.push_str(&format!(
            "[report]\nbaseline = {}\n",
            pick(rng, &["\"host\"", "\"mine\"", "1"])
        ));
    }
    t
}

/// The other templated keys of a stack definition: `ready`, `ready_on`, `requires`,
/// `requires_on`, a contract command, `ran.expect` and `where`.
fn more_stack_templates(rng: &mut ChaCha8Rng, t: &mut String) {
    for key in ["ready", "requires"] {
        if rng.random_bool(0.15) {
            t.push_str(&format!("{key} = {}\n", quoted_templates(rng, 2)));
        }
    }
    for key in ["ready_on", "requires_on"] {
        if rng.random_bool(0.1) {
            t.push_str(&format!(
                "{key} = {{ host = {} }}\n",
                quoted_templates(rng, 2)
            ));
        }
    }
    if rng.random_bool(0.1) {
        t.push_str(&format!(
            "contract = [{{ item = \"x\", command = {} }}]\n",
            quoted_templates(rng, 2)
        ));
    }
    if rng.random_bool(0.1) {
        t.push_str(&format!(
            "ran = {{ pattern = \"(?P<algo>x)\", expect = {} }}\n",
            toml_string(template(rng))
        ));
    }
    if rng.random_bool(0.15) {
        let exprs: Vec<String> = (0..rng.random_range(1..=2))
            .map(|_| toml_string(pick(rng, EXPRESSIONS)))
            .collect();
        t.push_str(&format!("where = [{}]\n", exprs.join(", ")));
    }
}

/// What `validate` and `dry-run` do with one plan text; `Err` carries the exit code.
fn validate_and_list(text: &str, rng: &mut ChaCha8Rng) -> Result<(), i32> {
    let path = Path::new("fuzz.toml");
    let plan =
        crate::plan::parse_with(text, path, Default::default()).map_err(|e| e.exit_code())?;
    crate::engine::stack_check::check_stacks(&plan, &plan.stacks).map_err(|e| e.exit_code())?;
    let args = DryRunArgs {
        plan: path.to_path_buf(),
        format: *[ListFormat::Table, ListFormat::Json, ListFormat::Csv]
            .choose(rng)
            .unwrap_or(&ListFormat::Table),
        filter: rng
            .random_bool(0.2)
            .then(|| pick(rng, &["p > 2", "false", "{{", "count"]).to_string()),
        stacks: Vec::new(),
        executor: None,
        repeats: None,
        profile: None,
    };
    let mut sink = Vec::new();
    crate::cli::dry_run::list(&plan, &args, &mut sink).map_err(|e| e.exit_code())?;
    if plan.stacks.iter().any(|s| s == "mine") {
        let mine = text.split("[stacks.mine]").nth(1).unwrap_or("");
        let mine = mine.split("\n[").next().unwrap_or("");
        let probe = plan.devices.probe.iter().flatten().map(String::as_str);
        let bad = (BAD_TEMPLATES.iter().chain(BAD_EXPRESSIONS))
            .find(|b| mine.contains(&toml_string(b)) || probe.clone().any(|p| p == **b));
        assert!(bad.is_none(), "accepted a stack template {bad:?}:\n{text}");
    }
    // `prepare` is left out: its Ctrl-C flag is process-wide, and other tests of this process
    // deliver signals to it.
    drop(plan);
    Ok(())
}

#[test]
fn thousands_of_structured_random_plans_never_panic_and_fail_only_as_bad_input() {
    let seed: u64 = std::env::var("CAMPAIGN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x15_15_15);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..PLANS {
        let text = plan(&mut rng);
        let mut sub = ChaCha8Rng::seed_from_u64(rng.random());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            validate_and_list(&text, &mut sub)
        }));
        match outcome {
            Ok(Ok(())) => accepted += 1,
            Ok(Err(code)) => {
                assert_eq!(
                    code,
                    exit::BAD_INPUT,
                    "plan {i} (seed {seed}) refused with exit {code}:\n{text}"
                );
                refused += 1;
            }
            Err(_) => panic!("plan {i} (seed {seed}) panicked:\n{text}"),
        }
    }
    crate::say!("{accepted} plans accepted, {refused} refused (seed {seed})");
    // Both paths must be exercised, or the generator tests nothing.
    assert!(accepted >= PLANS / 50, "only {accepted} plans accepted");
    assert!(refused >= PLANS / 2, "only {refused} plans refused");
}

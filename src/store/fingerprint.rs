//! Run fingerprints: a stable hash of everything that decides what a run measures, so resume can
//! tell a run that is unchanged since it finished from one whose definition changed.
//!
//! Owns the choice of what goes in and — as important — what stays out. In: the case (minus its
//! device ids), the stack definition keys that shape the process and its parsing, the rendered
//! argv and the stack's env. Out: where the run dir lives (bundle and case-file paths are masked
//! wherever they appear), which devices auto placement picks (device ids, `CAMPAIGN_DEVICES`),
//! timestamps, and cosmetic or scheduling-only stack keys (description, hint, timeouts, requires,
//! probe, support filters). It computes a hash and nothing else: no I/O, no rendering.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::model::case::{canonical_json, Case};
use crate::model::stack::StackDef;

/// Feeds serialized bytes into a SHA-256 without building them in memory first (the session's
/// fingerprint context, the history's content hash of a run dir).
pub(crate) struct HashWriter(pub(crate) Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Env vars the engine sets per run whose values are paths or leased devices: left out of the
/// fingerprint, and their values masked inside argv and other env values.
const VOLATILE_ENV: &[(&str, &str)] = &[
    ("CAMPAIGN_BUNDLE_DIR", "{bundle_dir}"),
    ("CAMPAIGN_CASE_FILE", "{case_file}"),
    ("CAMPAIGN_DEVICES", "{devices}"),
];

/// Stack definition keys that change what a run does or how its output is read.
const STACK_KEYS: &[&str] = &[
    "command", "shell", "env", "cwd", "shape", "parser", "patterns", "markers", "resource",
    "build", "root",
];

/// Fingerprint of one run: 16 hex digits of SHA-256 over a canonical JSON of its inputs.
///
/// `argv`/`env` are what the engine gives the process (the stack's rendered command and env plus
/// the `CAMPAIGN_*` variables), not campaign's inherited environment. Compute it from the
/// *planned* case: a run's fingerprint is taken once when it is planned and written on every
/// journal line of that run, so it must not depend on the devices the run later leases.
pub(crate) fn run_fingerprint(
    case: &Case,
    stack_def: &StackDef,
    argv: &[String],
    env: &[(String, String)],
) -> String {
    let masks = masks(env);
    let mut case_json = case.to_json();
    if let Value::Object(map) = &mut case_json {
        map.remove("device_ids");
    }
    let stack_json = shaping_keys(stack_def);
    let argv: Vec<String> = argv.iter().map(|a| mask(a, &masks)).collect();
    let mut env: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| !VOLATILE_ENV.iter().any(|(v, _)| v == k))
        .map(|(k, v)| (k.clone(), mask(v, &masks)))
        .collect();
    env.sort();
    let doc = json!({
        "scheme": 1,
        "case": case_json,
        "stack": stack_json,
        "argv": argv,
        "env": env,
    });
    crate::model::digest::sha256_hex(canonical_json(&doc).as_bytes(), 8)
}

/// The stack definition's keys that shape the process and its parsing (`STACK_KEYS`), as JSON.
fn shaping_keys(stack_def: &StackDef) -> Value {
    match serde_json::to_value(stack_def) {
        Ok(Value::Object(map)) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| STACK_KEYS.contains(&k.as_str()))
                .collect::<Map<String, Value>>(),
        ),
        _ => Value::Null,
    }
}

/// Fingerprint of a stack definition: 16 hex digits of SHA-256 over the canonical JSON of the
/// keys that shape what its runs do and how their output is read (those of a run's
/// fingerprint). Two plans defining one stack name differently give two fingerprints; a
/// description, a hint or a timeout changes nothing. History points carry it, so a step
/// across a definition change says so.
pub(crate) fn definition_fingerprint(stack_def: &StackDef) -> String {
    let doc = json!({ "scheme": 1, "stack": shaping_keys(stack_def) });
    crate::model::digest::sha256_hex(canonical_json(&doc).as_bytes(), 8)
}

/// `(value, placeholder)` pairs, longest value first so a bundle dir is masked before the run
/// dir it starts with.
fn masks(env: &[(String, String)]) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for (key, placeholder) in VOLATILE_ENV {
        if let Some((_, value)) = env.iter().find(|(k, _)| k == key) {
            // Device lists are only masked when unambiguous ("0,1"), never a lone "0" that could
            // be any argument.
            let ambiguous = *key == "CAMPAIGN_DEVICES" && !value.contains(',');
            if !value.is_empty() && !ambiguous {
                out.push((value.clone(), *placeholder));
            }
        }
    }
    if let Some((_, bundle)) = env.iter().find(|(k, _)| k == "CAMPAIGN_BUNDLE_DIR") {
        // The run dir is the bundle dir minus `cases/<case_id>/<stack>`.
        let run_dir = std::path::Path::new(bundle).ancestors().nth(3);
        if let Some(run_dir) = run_dir.and_then(|p| p.to_str()).filter(|p| p.len() > 1) {
            out.push((run_dir.to_string(), "{run_dir}"));
        }
    }
    out.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    out
}

fn mask(text: &str, masks: &[(String, &'static str)]) -> String {
    let mut out = text.to_string();
    for (value, placeholder) in masks {
        if out.contains(value.as_str()) {
            out = out.replace(value.as_str(), placeholder);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Dtype, Variant};
    use crate::model::stack::CommandSpec;

    fn stack() -> StackDef {
        StackDef {
            command: Some(CommandSpec::Argv(vec![
                "bench".into(),
                "--case".into(),
                "{{ case_file }}".into(),
            ])),
            description: Some("a stack".into()),
            ..StackDef::default()
        }
    }

    fn run_env(run_dir: &str, devices: &str) -> (Vec<String>, Vec<(String, String)>) {
        let bundle = format!("{run_dir}/cases/mesh_p2/host");
        let argv = vec![
            "bench".to_string(),
            "--case".to_string(),
            format!("{bundle}/../case.json"),
            format!("--out={bundle}"),
            format!("--devices={devices}"),
        ];
        let env = vec![
            ("CAMPAIGN_BUNDLE_DIR".to_string(), bundle.clone()),
            (
                "CAMPAIGN_CASE_FILE".to_string(),
                format!("{run_dir}/cases/mesh_p2/case.json"),
            ),
            ("CAMPAIGN_DEVICES".to_string(), devices.to_string()),
            ("CAMPAIGN_WARMUP".to_string(), "3".to_string()),
            ("HCCL_BUFFSIZE".to_string(), "200".to_string()),
        ];
        (argv, env)
    }

    fn fp(case: &Case, def: &StackDef, run_dir: &str, devices: &str) -> String {
        let (argv, env) = run_env(run_dir, devices);
        run_fingerprint(case, def, &argv, &env)
    }

    #[test]
    fn unchanged_run_keeps_its_fingerprint_wherever_it_lands() {
        let case = Case::new(Variant::Mesh, 2, 256);
        let a = fp(&case, &stack(), "/r/campaigns/x/run_1", "0,1");
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        // Same inputs → same hash, every time.
        assert_eq!(a, fp(&case, &stack(), "/r/campaigns/x/run_1", "0,1"));
        // The run dir moved, auto placement chose other devices, the case records them.
        let mut moved = case.clone();
        moved.device_ids = vec![4, 5];
        assert_eq!(a, fp(&moved, &stack(), "/mnt/backup/run_1", "4,5"));
        // Env order is not meaningful.
        let (argv, mut env) = run_env("/r/campaigns/x/run_1", "0,1");
        env.reverse();
        assert_eq!(a, run_fingerprint(&case, &stack(), &argv, &env));
        // Cosmetic and scheduling-only keys.
        let mut def = stack();
        def.description = Some("reworded".into());
        def.hint = Some("install it".into());
        def.timeout = Some(std::time::Duration::from_secs(1200));
        def.requires = vec!["FOO_ROOT".into()];
        assert_eq!(a, fp(&case, &def, "/r/campaigns/x/run_1", "0,1"));
    }

    #[test]
    fn changes_to_case_stack_command_or_env_change_the_fingerprint() {
        let case = Case::new(Variant::Mesh, 2, 256);
        let base = fp(&case, &stack(), "/r/run_1", "0,1");
        let mut other = case.clone();
        other.dtype = Dtype::Fp16;
        assert_ne!(base, fp(&other, &stack(), "/r/run_1", "0,1"));
        let mut rounds = case.clone();
        rounds.timed_rounds = 99;
        assert_ne!(base, fp(&rounds, &stack(), "/r/run_1", "0,1"));

        let mut def = stack();
        def.parser = Some("regex".into());
        assert_ne!(base, fp(&case, &def, "/r/run_1", "0,1"));
        let mut def = stack();
        def.env.insert("HCCL_OP_EXPANSION".into(), "1".into());
        assert_ne!(base, fp(&case, &def, "/r/run_1", "0,1"));

        let (mut argv, env) = run_env("/r/run_1", "0,1");
        argv.push("--fast".into());
        assert_ne!(base, run_fingerprint(&case, &stack(), &argv, &env));
        let (argv, mut env) = run_env("/r/run_1", "0,1");
        env[4].1 = "400".into();
        assert_ne!(base, run_fingerprint(&case, &stack(), &argv, &env));
    }

    #[test]
    fn a_definition_fingerprint_follows_what_shapes_runs_only() {
        let base = definition_fingerprint(&stack());
        assert_eq!(base.len(), 16);
        assert_eq!(base, definition_fingerprint(&stack()));
        // Words and scheduling keys change nothing a run measures.
        let mut cosmetic = stack();
        cosmetic.description = Some("another description".into());
        assert_eq!(base, definition_fingerprint(&cosmetic));
        // The command, its env or its parser make another definition.
        let mut def = stack();
        def.env.insert("MODE".into(), "two".into());
        assert_ne!(base, definition_fingerprint(&def));
        let mut def = stack();
        def.parser = Some("regex".into());
        assert_ne!(base, definition_fingerprint(&def));
        let mut def = stack();
        def.command = Some(CommandSpec::Argv(vec!["other".into()]));
        assert_ne!(base, definition_fingerprint(&def));
    }
}

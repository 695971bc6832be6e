//! Shipped stack definitions and how a plan's `[stacks.NAME]` overlays them.
//!
//! `host` is built in (the campaign binary's own `bench collective`); other shipped definitions
//! are TOML files under `stacks/`, embedded at build time ([`FILES`]; add a file there to ship
//! more). Plans override them key by key ([`resolve`]). This module only parses and merges
//! definitions: it does not check availability (`stack::availability`) or render templates.

use itertools::Itertools;
use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{Diagnostic, Error, Result};
use crate::model::stack::{CommandSpec, Resource, StackDef};

/// Stack files shipped inside the binary: (file name under `stacks/`, contents).
pub(crate) const FILES: &[(&str, &str)] = &[
    ("ascend.toml", include_str!("../../stacks/ascend.toml")),
    (
        "ecosystems.toml",
        include_str!("../../stacks/ecosystems.toml"),
    ),
    ("mpi.toml", include_str!("../../stacks/mpi.toml")),
];

/// The shape of one stack file: `[stacks.NAME]` tables, the same syntax as in a plan.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackFile {
    #[serde(default)]
    stacks: BTreeMap<String, StackDef>,
}

/// The built-in `host` stack: this binary's `bench collective` (which runs the case file's op),
/// leasing CPU cores. Its ops and each op's algorithms are `Op::host_variants`.
pub fn host() -> StackDef {
    use crate::model::case::Op;
    let mut variants: Vec<crate::model::case::Variant> = Vec::new();
    for op in Op::EVERY {
        for v in op.host_variants() {
            if !variants.contains(v) {
                variants.push(*v);
            }
        }
    }
    StackDef {
        description: Some("campaign's built-in CPU collectives (threads as ranks)".into()),
        command: Some(CommandSpec::Argv(vec![
            "{{ campaign_exe }}".into(),
            "bench".into(),
            "collective".into(),
            "--case-file".into(),
            "{{ case_file }}".into(),
        ])),
        parser: Some("native".into()),
        resource: Some(Resource::Cpu),
        // What `bench collective` implements; other variant names belong to other stacks.
        variants: Some(variants),
        ops: Some(Op::EVERY.to_vec()),
        variants_by_op: Op::EVERY
            .iter()
            .map(|op| (*op, op.host_variants().to_vec()))
            .collect(),
        ..StackDef::default()
    }
}

/// Parse one stack file's text. `name` is used in diagnostics (`stacks/ascend.toml:12:3`).
pub(crate) fn parse_file(name: &str, text: &str) -> Result<BTreeMap<String, StackDef>> {
    let file: StackFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map(|span| line_col(text, span.start)).unzip();
        Error::Invalid(vec![Diagnostic {
            file: format!("stacks/{name}").into(),
            line,
            column,
            field: None,
            message: e.message().to_string(),
            snippet: None,
        }])
    })?;
    Ok(file.stacks)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Every shipped definition by name: `host` plus every stack of every file in [`FILES`].
///
/// An error here is a bug in a shipped file (the tests parse every one), so it is reported as
/// an invalid-input error naming the file and line rather than a panic.
pub fn try_shipped() -> Result<BTreeMap<String, StackDef>> {
    let mut out = BTreeMap::new();
    out.insert("host".to_string(), host());
    for (name, text) in FILES {
        for (stack, def) in parse_file(name, text)? {
            if out.contains_key(&stack) {
                return Err(Error::invalid(
                    format!("stacks/{name}"),
                    format!("stack `{stack}` is defined twice among the shipped stack files"),
                ));
            }
            out.insert(stack, def);
        }
    }
    Ok(out)
}

/// Every shipped definition by name. Shipped files are tested to parse; should one not (a
/// build from edited sources), only `host` is returned and [`try_shipped`] says why.
pub(crate) fn shipped() -> BTreeMap<String, StackDef> {
    try_shipped().unwrap_or_else(|_| {
        let mut out = BTreeMap::new();
        out.insert("host".to_string(), host());
        out
    })
}

/// The definitions a plan runs with: shipped definitions with the plan's `[stacks.NAME]`
/// overlaid key by key; a name the plan defines that is not shipped is taken as written and
/// must give a `command`. `plan_file` names the plan in diagnostics.
pub(crate) fn resolve(
    plan_defs: &BTreeMap<String, StackDef>,
    plan_file: &std::path::Path,
) -> Result<BTreeMap<String, StackDef>> {
    let mut out = try_shipped()?;
    let mut problems = Vec::new();
    for (name, over) in plan_defs {
        match out.get_mut(name) {
            Some(def) => def.overlay(over),
            None => {
                if over.command.is_none() {
                    problems.push(Diagnostic {
                        file: plan_file.to_path_buf(),
                        line: None,
                        column: None,
                        field: Some(format!("stacks.{name}.command")),
                        message: format!(
                            "`{name}` is not a shipped stack, so it needs a `command` (shipped: {})",
                            out.keys().join(", ")
                        ),
                        snippet: None,
                    });
                    continue;
                }
                out.insert(name.clone(), over.clone());
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Invalid(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stack::Shape;

    #[test]
    fn shipped_profile_kinds_say_what_upstream_does() {
        use crate::model::profile::ProfileKind::{Counters, Cpu, Dep, Pmu, Swimlane};
        let all = try_shipped().unwrap();
        let case = crate::model::case::Case::new(crate::model::case::Variant::Mesh, 2, 256);
        // CPU stacks: perf kinds only, the upstream ones named as missing.
        for name in ["host", "mpi", "osu"] {
            let def = &all[name];
            assert_eq!(def.profile_reason(Cpu, &case), None, "{name}");
            assert_eq!(def.profile_reason(Counters, &case), None, "{name}");
            let why = def.profile_reason(Pmu, &case).unwrap();
            assert!(why.contains("its profile kinds: cpu, counters"), "{why}");
        }
        // simpler-scene: every test is L3, for which simpler refuses the chip swimlane.
        let scene = &all["simpler-scene"];
        let why = scene.profile_reason(Swimlane, &case).unwrap();
        assert!(why.contains("L3"), "{why}");
        for kind in [Pmu, Dep] {
            assert_eq!(scene.profile_reason(kind, &case), None);
            assert_eq!(
                scene.profile[&kind].rounds,
                Some(1),
                "collected only at --rounds 1"
            );
        }
        assert!(scene
            .profile_reason(Cpu, &case)
            .unwrap()
            .contains("npu devices"));
        for name in ["pypto-composite", "pypto-host"] {
            for kind in [Swimlane, Pmu, Dep] {
                assert_eq!(all[name].profile_reason(kind, &case), None, "{name}");
            }
        }
        assert!(all["hccl"]
            .profile_reason(Pmu, &case)
            .unwrap()
            .contains("none"));
        // hccl_test: HCCL_TEST_PROFILING=1 into a folder of campaign's own, as its swimlane.
        let hccl_test = &all["hccl_test"];
        assert_eq!(hccl_test.profile_reason(Swimlane, &case), None);
        let spec = &hccl_test.profile[&Swimlane];
        assert_eq!(spec.env["HCCL_TEST_PROFILING"], "1");
        assert!(spec.files[0].starts_with(&spec.env["HCCL_TEST_PROFILING_PATH"]));
        let why = hccl_test.profile_reason(Pmu, &case).unwrap();
        assert!(why.contains("its profile kinds: swimlane"), "{why}");
        // Every shipped profile table is in its domain (files named, env names, no perf kind).
        for (name, def) in &all {
            let bad: Vec<_> = (def.domain_problems().into_iter())
                .filter(|(k, _)| k.starts_with("profile"))
                .collect();
            assert!(bad.is_empty(), "{name}: {bad:?}");
        }
        let mut wrong = all["host"].clone();
        wrong
            .profile
            .insert(Cpu, crate::model::profile::ProfileSpec::default());
        let keys: Vec<String> = (wrong.domain_problems().into_iter())
            .map(|(k, _)| k)
            .collect();
        assert!(keys.contains(&"profile.cpu".to_string()), "{keys:?}");
        assert!(keys.contains(&"profile.cpu.files".to_string()), "{keys:?}");
    }

    #[test]
    fn every_shipped_file_parses() {
        for (name, text) in FILES {
            let defs = parse_file(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(!defs.is_empty(), "{name} defines no stack");
            for (stack, def) in &defs {
                assert!(def.command.is_some(), "{name}: {stack} has no command");
                assert!(
                    def.description.is_some(),
                    "{name}: {stack} has no description"
                );
            }
        }
    }

    #[test]
    fn the_libraries_that_choose_their_own_algorithm_default_to_that_choice() {
        // What a plan naming no variant runs, and what the regret rows judge: the library as
        // shipped (issue 47), never a pinned knob such as hccl's `mesh` (AI_CPU set).
        let all = try_shipped().unwrap();
        for name in ["mpi", "nccl-tests", "osu", "hccl", "hccl_test"] {
            let d = all[name].default_variant(crate::model::case::Op::Allreduce);
            assert_eq!(d.map(|v| v.to_string()), Some("default".into()), "{name}");
        }
    }

    #[test]
    fn shipped_has_host_and_the_six_ascend_stacks_and_ecosystems() {
        let all = try_shipped().unwrap();
        for name in [
            "host",
            "hccl",
            "simpler",
            "simpler-own",
            "pypto-composite",
            "pypto-host",
            "pto-isa",
            "nccl-tests",
            "osu",
            "hccl_test",
        ] {
            assert!(all.contains_key(name), "missing {name}");
        }
        let hccl = &all["hccl"];
        assert_eq!(hccl.parser(), "hccl");
        assert_eq!(hccl.root.as_deref(), Some("ASCEND_HOME_PATH"));
        assert!(hccl.env["HCCL_OP_EXPANSION_MODE"].contains("HOST_TS"));
        assert_eq!(all["simpler"].shape(), Shape::Subprocess);
        assert_eq!(all["simpler"].markers["builtin"], "simpler");
        // The helper is built from the sources the engine writes into the run dir.
        let build = format!("{:?}", hccl.build);
        assert!(
            build.contains("{{ run_dir }}/builds/hccl/build.sh"),
            "{build}"
        );
    }

    #[test]
    fn multi_node_cases_render_per_node_values_for_hccl_test_and_mpi() {
        use crate::model::case::{Case, RankPlacement, Variant};
        use crate::stack::render::{render, RenderContext};
        let mut case = Case::new(Variant::Mesh, 16, 1024);
        case.nodes = 2;
        case.complete_layout(true, true);
        assert_eq!(case.ranks_per_node(), 8);
        let mut ctx = RenderContext {
            case: case.clone(),
            devices: (0..16).collect(),
            warmup: 2,
            timed: 5,
            case_file: "/r/cases/c.json".into(),
            bundle_dir: "/r/cases/c/s".into(),
            run_dir: "/r".into(),
            root: Some("/root-dir".into()),
            campaign_exe: "/bin/campaign".into(),
        };
        let all = try_shipped().unwrap();
        let r = render("hccl_test", &all["hccl_test"], &ctx).unwrap();
        let at = |flag: &str| r.argv[r.argv.iter().position(|a| a == flag).unwrap() + 1].clone();
        // hccl_test's -p is NPUs per node: mpirun -n 16 … -p 8.
        assert_eq!(r.argv[..4], ["mpirun", "--allow-run-as-root", "-n", "16"]);
        assert_eq!(at("-p"), "8");
        let visible = r.env.iter().find(|(k, _)| k == "ASCEND_RT_VISIBLE_DEVICES");
        assert_eq!(visible.unwrap().1, "0,1,2,3,4,5,6,7");
        // mpi: the per-rank wrapper and round-robin mapping for `spread`.
        ctx.case.placement = RankPlacement::Spread;
        let r = render("mpi", &all["mpi"], &ctx).unwrap();
        assert!(
            r.argv.contains(&"/r/cases/c/s/rank.sh".to_string()),
            "{:?}",
            r.argv
        );
        assert_eq!(
            r.argv[r.argv.iter().position(|a| a == "--map-by").unwrap() + 1],
            "node"
        );
        // On one node nothing changes: -p is p, the wrapper is `env`.
        ctx.case = Case::new(Variant::Mesh, 4, 1024);
        let r = render("hccl_test", &all["hccl_test"], &ctx).unwrap();
        assert_eq!(
            r.argv[r.argv.iter().position(|a| a == "-p").unwrap() + 1],
            "4"
        );
        let r = render("mpi", &all["mpi"], &ctx).unwrap();
        assert!(r.argv.contains(&"env".to_string()), "{:?}", r.argv);
    }

    #[test]
    fn every_shipped_stack_renders_for_a_case() {
        use crate::model::case::{Case, Variant};
        use crate::stack::render::{render, render_build, RenderContext};
        let mut case = Case::new(Variant::Mesh, 4, 1024);
        case.device_ids = vec![4, 5, 6, 7];
        let ctx = RenderContext {
            case,
            devices: vec![4, 5, 6, 7],
            warmup: 2,
            timed: 5,
            case_file: "/r/cases/c.json".into(),
            bundle_dir: "/r/cases/c/s".into(),
            run_dir: "/r".into(),
            root: Some("/root-dir".into()),
            campaign_exe: "/bin/campaign".into(),
        };
        for (name, def) in try_shipped().unwrap() {
            let r = render(&name, &def, &ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!r.argv.is_empty(), "{name}");
            render_build(
                &name,
                &def,
                std::path::Path::new("/r"),
                Some(std::path::Path::new("/c")),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            if name == "simpler" {
                assert!(
                    r.argv
                        .ends_with(&["-p".into(), "a2a3".into(), "-d".into(), "4-7".into()]),
                    "{:?}",
                    r.argv
                );
            }
            if name == "hccl" {
                // On one node `env -- env` (srun and rank.sh on several) runs the helper.
                assert_eq!(r.argv[..4], ["env", "--", "env", "/r/bin/hccl_allreduce"]);
                assert!(r
                    .env
                    .contains(&("ASCEND_RT_VISIBLE_DEVICES".into(), "4,5,6,7".into())));
            }
            if name == "nccl-tests" {
                assert!(
                    r.argv[2].contains("-d float -b 4096 -e 4096 -w 2 -n 5"),
                    "{:?}",
                    r.argv
                );
            }
        }
    }

    #[test]
    fn unknown_key_in_a_stack_file_is_an_error_with_position() {
        let err = parse_file("x.toml", "[stacks.a]\ncommand = [\"a\"]\ncomand = 1\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("stacks/x.toml:3:1"), "{text}");
        assert!(text.contains("comand"), "{text}");
    }

    #[test]
    fn plan_overrides_key_by_key_and_adds_new_stacks() {
        let mut plan = BTreeMap::new();
        plan.insert(
            "simpler".to_string(),
            StackDef {
                counts: Some(crate::model::stack::Counts::List(vec![256, 4096])),
                env: [("EXTRA".to_string(), "1".to_string())].into(),
                ..StackDef::default()
            },
        );
        plan.insert(
            "mine".to_string(),
            StackDef {
                command: Some(CommandSpec::Argv(vec!["true".into()])),
                ..StackDef::default()
            },
        );
        let all = resolve(&plan, std::path::Path::new("p.toml")).unwrap();
        let simpler = &all["simpler"];
        assert_eq!(
            simpler.counts,
            Some(crate::model::stack::Counts::List(vec![256, 4096]))
        );
        assert_eq!(simpler.env["EXTRA"], "1");
        assert_eq!(simpler.env["PYTHONUNBUFFERED"], "1");
        assert_eq!(simpler.parser(), "markers");
        assert!(all.contains_key("mine"));

        let mut bad = BTreeMap::new();
        bad.insert("nocmd".to_string(), StackDef::default());
        let err = resolve(&bad, std::path::Path::new("p.toml")).unwrap_err();
        assert!(err.to_string().contains("stacks.nocmd.command"), "{err}");
    }
}

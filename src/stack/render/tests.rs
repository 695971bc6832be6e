//! Tests of `stack::render`: scope, strict undefined errors, shell rules, env, cwd, build, probe.

use super::*;
use crate::model::case::{Dtype, Variant};
use crate::stack::registry;

fn ctx() -> RenderContext {
    let mut case = Case::new(Variant::Ring, 4, 4096);
    case.dtype = Dtype::Fp16;
    case.device_ids = vec![4, 5, 6, 7];
    RenderContext {
        case,
        devices: vec![4, 5, 6, 7],
        warmup: 3,
        timed: 20,
        case_file: "/runs/r1/cases/x/case.json".into(),
        bundle_dir: "/runs/r1/cases/x/hccl".into(),
        run_dir: "/runs/r1".into(),
        root: Some("/opt/pypto".into()),
        campaign_exe: "/usr/bin/campaign".into(),
    }
}

fn argv_def(args: &[&str]) -> StackDef {
    StackDef {
        command: Some(CommandSpec::Argv(
            args.iter().map(|s| s.to_string()).collect(),
        )),
        ..StackDef::default()
    }
}

fn env_of<'a>(r: &'a Rendered, key: &str) -> Option<&'a str> {
    r.env
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn host_stack_renders_to_campaign_bench() {
    let r = render("host", &registry::host(), &ctx()).unwrap();
    assert_eq!(
        r.argv,
        vec![
            "/usr/bin/campaign",
            "bench",
            "collective",
            "--case-file",
            "/runs/r1/cases/x/case.json"
        ]
    );
    assert_eq!(r.cwd, PathBuf::from("/runs/r1/cases/x/hccl"));
    let keys: Vec<&str> = r.env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, CAMPAIGN_VARS);
    assert_eq!(env_of(&r, "CAMPAIGN_DEVICES"), Some("4,5,6,7"));
    assert_eq!(
        env_of(&r, "CAMPAIGN_CASE_ID"),
        Some("ring_p4_count4096_fp16_a2a3_d4-5-6-7")
    );
    assert_eq!(env_of(&r, "CAMPAIGN_WARMUP"), Some("3"));
    assert_eq!(env_of(&r, "CAMPAIGN_TIMED"), Some("20"));
    assert_eq!(
        env_of(&r, "CAMPAIGN_BUNDLE_DIR"),
        Some("/runs/r1/cases/x/hccl")
    );
}

#[test]
fn every_scope_variable_renders() {
    let def = argv_def(&[
        "{{ root }}/bin/t",
        "--count={{ count }}",
        "--p={{ p }}",
        "{{ dtype }}/{{ variant }}/{{ platform }}",
        "{{ devices | join(':') }}",
        "{{ devices_csv }}",
        "{{ devices_range }}",
        "{{ warmup }}+{{ timed }}",
        "{{ case.n_bytes }} {{ case.size_tier }} {{ case.core_num }}",
        "{{ case_id }}",
        "{{ case_file }} {{ bundle_dir }} {{ run_dir }} {{ campaign_exe }}",
        "{% if p > 2 %}big{% else %}small{% endif %}",
    ]);
    let r = render("t", &def, &ctx()).unwrap();
    assert_eq!(
        r.argv,
        vec![
            "/opt/pypto/bin/t",
            "--count=4096",
            "--p=4",
            "fp16/ring/a2a3",
            "4:5:6:7",
            "4,5,6,7",
            "4-7",
            "3+20",
            "8192 16 KiB (L1) 1",
            "ring_p4_count4096_fp16_a2a3_d4-5-6-7",
            "/runs/r1/cases/x/case.json /runs/r1/cases/x/hccl /runs/r1 /usr/bin/campaign",
            "big",
        ]
    );
}

#[test]
fn an_undefined_variable_names_stack_template_and_variable() {
    let err = render("nccl", &argv_def(&["run", "--n={{ ranks }}"]), &ctx()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("error: stack `nccl`: command[1]: template `--n={{ ranks }}`"),
        "{text}"
    );
    assert!(text.contains("undefined variable `ranks`"), "{text}");
    assert!(text.contains("in scope: case, case_id, p"), "{text}");
    assert_eq!(err.exit_code(), 2);

    let err = render("nccl", &argv_def(&["{{ case.ranks }}"]), &ctx()).unwrap_err();
    assert!(
        err.to_string().contains("undefined variable `case.ranks`"),
        "{err}"
    );
}

#[test]
fn root_is_undefined_without_a_root_and_the_message_says_so() {
    let mut c = ctx();
    c.root = None;
    let err = render("pypto", &argv_def(&["{{ root }}/x"]), &c).unwrap_err();
    assert!(
        err.to_string()
            .contains("undefined variable `root` (this stack has no root"),
        "{err}"
    );
}

#[test]
fn shell_rules_are_enforced() {
    let mut def = StackDef {
        command: Some(CommandSpec::Shell("echo {{ p }} | cat".into())),
        ..StackDef::default()
    };
    let err = render("s", &def, &ctx()).unwrap_err();
    assert!(
        err.to_string()
            .contains("stack `s`: command: command is one string but shell is not true"),
        "{err}"
    );
    def.shell = Some(true);
    assert_eq!(
        render("s", &def, &ctx()).unwrap().argv,
        vec!["sh", "-c", "echo 4 | cat"]
    );

    let mut def = argv_def(&["echo"]);
    def.shell = Some(true);
    let err = render("a", &def, &ctx()).unwrap_err();
    assert!(
        err.to_string()
            .contains("stack `a`: command: shell = true needs command to be one string"),
        "{err}"
    );

    let err = render("e", &argv_def(&[]), &ctx()).unwrap_err();
    assert!(err.to_string().contains("command: empty array"), "{err}");
    let err = render("n", &StackDef::default(), &ctx()).unwrap_err();
    assert!(
        err.to_string().contains("stack `n`: command: no command"),
        "{err}"
    );
}

#[test]
fn env_values_are_templates_and_campaign_vars_are_reserved() {
    let mut def = argv_def(&["t"]);
    def.env.insert(
        "ASCEND_RT_VISIBLE_DEVICES".into(),
        "{{ devices_csv }}".into(),
    );
    def.env
        .insert("HCCL_OP_EXPANSION_MODE".into(), "AI_CPU".into());
    let r = render("hccl", &def, &ctx()).unwrap();
    assert_eq!(env_of(&r, "ASCEND_RT_VISIBLE_DEVICES"), Some("4,5,6,7"));
    assert_eq!(env_of(&r, "HCCL_OP_EXPANSION_MODE"), Some("AI_CPU"));
    assert_eq!(r.env.len(), 2 + CAMPAIGN_VARS.len());

    def.env.insert("CAMPAIGN_DEVICES".into(), "0".into());
    let err = render("hccl", &def, &ctx()).unwrap_err();
    assert!(
        err.to_string()
            .contains("env.CAMPAIGN_DEVICES: CAMPAIGN_DEVICES is set by campaign"),
        "{err}"
    );
}

#[test]
fn cwd_is_a_template_relative_to_the_bundle_dir() {
    let mut def = argv_def(&["t"]);
    def.cwd = Some("{{ root }}/examples".into());
    assert_eq!(
        render("t", &def, &ctx()).unwrap().cwd,
        PathBuf::from("/opt/pypto/examples")
    );
    def.cwd = Some("work".into());
    assert_eq!(
        render("t", &def, &ctx()).unwrap().cwd,
        PathBuf::from("/runs/r1/cases/x/hccl/work")
    );
}

#[test]
fn syntax_errors_name_the_template() {
    let err = render("t", &argv_def(&["{{ p "]), &ctx()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("stack `t`: command[0]: template `{{ p `: syntax error"),
        "{text}"
    );
}

#[test]
fn build_scope_is_run_dir_root_and_exe_and_run_only_env_is_left_out() {
    let mut def = argv_def(&["t"]);
    def.build = Some(CommandSpec::Shell(
        "make -C {{ root }} OUT={{ run_dir }}/build".into(),
    ));
    def.env.insert("CC".into(), "gcc".into());
    def.env.insert("OUT".into(), "{{ run_dir }}/o".into());
    def.env.insert(
        "ASCEND_RT_VISIBLE_DEVICES".into(),
        "{{ devices_csv }}".into(),
    );
    let r = render_build("b", &def, Path::new("/runs/r1"), Some(Path::new("/opt/x")))
        .unwrap()
        .unwrap();
    assert_eq!(
        r.argv,
        vec!["sh", "-c", "make -C /opt/x OUT=/runs/r1/build"]
    );
    assert_eq!(r.cwd, PathBuf::from("/opt/x"));
    assert_eq!(env_of(&r, "CC"), Some("gcc"));
    assert_eq!(env_of(&r, "OUT"), Some("/runs/r1/o"));
    assert_eq!(env_of(&r, "ASCEND_RT_VISIBLE_DEVICES"), None);
    assert_eq!(env_of(&r, "CAMPAIGN_RUN_DIR"), Some("/runs/r1"));

    def.build = Some(CommandSpec::Argv(vec!["make".into(), "{{ p }}".into()]));
    let err = render_build("b", &def, Path::new("/r"), None).unwrap_err();
    assert!(
        err.to_string()
            .contains("build[1]: template `{{ p }}`: undefined variable `p`"),
        "{err}"
    );
    let no_root = render_build("b", &argv_def(&["t"]), Path::new("/r"), None).unwrap();
    assert_eq!(no_root, None);
}

#[test]
fn probe_renders_like_a_run() {
    let mut def = argv_def(&["t"]);
    assert_eq!(render_probe("p", &def, &ctx()).unwrap(), None);
    def.probe = Some(CommandSpec::Argv(vec![
        "npu-smi".into(),
        "-d={{ devices_csv }}".into(),
    ]));
    let r = render_probe("p", &def, &ctx()).unwrap().unwrap();
    assert_eq!(r.argv, vec!["npu-smi", "-d=4,5,6,7"]);
    assert_eq!(env_of(&r, "CAMPAIGN_DEVICES"), Some("4,5,6,7"));
}

#[test]
fn device_ranges() {
    assert_eq!(devices_range(&[0, 1, 2, 3]), "0-3");
    assert_eq!(devices_range(&[0, 2]), "0,2");
    assert_eq!(devices_range(&[3, 2]), "3,2");
    assert_eq!(devices_range(&[5]), "5");
    assert_eq!(devices_range(&[]), "");
}

#[test]
fn shell_quote_makes_one_word_of_anything() {
    assert_eq!(shell_quote("/runs/r1/x.json"), "/runs/r1/x.json");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("a;touch pwned"), "'a;touch pwned'");
    assert_eq!(shell_quote("it's"), "'it'\\''s'");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("$(id)"), "'$(id)'");
}

/// Run `sh -c text` and return what it printed.
fn sh_output(argv: &[String]) -> String {
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn shell_strings_quote_every_value_unless_opted_out() {
    let mut c = ctx();
    c.bundle_dir = "/tmp/odd dir/it's;touch pwned/b".into();
    let def = StackDef {
        command: Some(CommandSpec::Shell(
            "printf '%s|' {{ bundle_dir }}/x.json {{ p }} {{ '$HOME' }} {{ 'a b' | safe }}".into(),
        )),
        shell: Some(true),
        ..StackDef::default()
    };
    let r = render("s", &def, &c).unwrap();
    assert_eq!(
        r.argv[2],
        "printf '%s|' '/tmp/odd dir/it'\\''s;touch pwned/b'/x.json 4 '$HOME' a b"
    );
    // The shell sees exactly one word per value; `| safe` pasted its value as code.
    assert_eq!(
        sh_output(&r.argv),
        "/tmp/odd dir/it's;touch pwned/b/x.json|4|$HOME|a|b|"
    );
    // build/probe/ready strings are shell strings too.
    let def = StackDef {
        command: Some(CommandSpec::Argv(vec!["true".into()])),
        build: Some(CommandSpec::Shell("echo {{ run_dir }}".into())),
        ..StackDef::default()
    };
    let b = render_build("s", &def, Path::new("/r/a b;c"), None)
        .unwrap()
        .unwrap();
    assert_eq!(b.argv[2], "echo '/r/a b;c'");
}

#[test]
fn shipped_nccl_tests_survives_a_bundle_path_with_spaces_quotes_and_semicolons() {
    let def = registry::shipped()["nccl-tests"].clone();
    let mut c = ctx();
    c.case.dtype = Dtype::Fp32;
    c.bundle_dir = "/tmp/r s/it's;x/nccl-tests".into();
    let r = render("nccl-tests", &def, &c).unwrap();
    let text = &r.argv[2];
    assert!(
        text.contains("-J '/tmp/r s/it'\\''s;x/nccl-tests'/nccl-tests.json"),
        "{text}"
    );
    assert!(text.contains(" -d float -b 16384 -e 16384 "), "{text}");
}

#[test]
fn literal_text_renders_as_minijinja_would_without_building_the_scope() {
    // Whatever takes the fast path must give exactly what minijinja gives.
    for text in [
        "/opt/x/bin/tool",
        "--flag=a b",
        "tab\there",
        "two\nlines",
        "%} #} }}",
        "",
    ] {
        assert!(literal(text), "{text:?}");
        let plain = Renderer::new("t", json!({})).render("f", text).unwrap();
        let via_minijinja = environments()
            .0
            .render_named_str("f", text, minijinja::Value::UNDEFINED)
            .unwrap();
        assert_eq!(plain, via_minijinja, "{text:?}");
    }
    // A trailing newline (which minijinja drops) and anything with `{` go through minijinja.
    assert!(!literal("line\n"));
    assert!(!literal("{{ p }}"));
    assert_eq!(
        Renderer::new("t", json!({})).render("f", "line\n").unwrap(),
        "line"
    );
    // A literal command never builds the run scope; a templated one does, once.
    let built = std::cell::Cell::new(0);
    let renderer = Renderer::lazy("t", || {
        built.set(built.get() + 1);
        json!({"p": 4})
    });
    assert_eq!(
        renderer.render("command[0]", "/bin/true").unwrap(),
        "/bin/true"
    );
    assert_eq!(built.get(), 0);
    assert_eq!(renderer.render("command[1]", "-n{{ p }}").unwrap(), "-n4");
    assert_eq!(
        renderer.render_shell("command", "echo {{ p }}").unwrap(),
        "echo 4"
    );
    assert_eq!(built.get(), 1);
}

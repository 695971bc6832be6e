//! Issue 43 item 10: every template a plan hands to a run — each templated key of a stack
//! definition, `[devices] probe`, `[slurm] devices_arg`, a `[report]` template — is rendered by
//! `validate` and `dry-run` in the scope a run gives it, and a fault (an undefined name, broken
//! syntax, loops nested past the fuel, a NUL byte) is refused with exit 2 at its file, line and
//! field, instead of being accepted and failing or hanging the runs. Also the zero timeouts and
//! (item 4) the line of a `nodes × ranks_per_node` product above the maximum.

use crate::util::{run, stderr, tempdir};

/// The plan's first lines; line 12 is `[stacks.mine]`, a stack field goes on line 15.
const HEAD: &str = "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\n[axes]\n\
variant = [\"mesh\"]\np = [2]\ncount = [64]\nstacks = [\"mine\"]\n[devices]\nkind = \"cpu\"\n\
[stacks.mine]\nresource = \"none\"\ncommand = [\"true\"]\n";

/// One fault of each kind, as TOML string content, and what the refusal says about it.
const FAULTS: &[(&str, &str, &str)] = &[
    ("undefined", "{{ nope }}", "undefined variable `nope`"),
    ("syntax", "{% if %}", "syntax error"),
    (
        "nested",
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "more work than a stack template may",
    ),
    ("nul", "a\\u0000b", "NUL byte"),
];

/// Each templated stack key: the line that holds template `T`, and the field the refusal names.
const FIELDS: &[(&str, &str, &str)] = &[
    ("env", "env = { X = \"T\" }", "stacks.mine.env.X"),
    ("cwd", "cwd = \"T\"", "stacks.mine.cwd"),
    ("build", "build = [\"echo\", \"T\"]", "stacks.mine.build[1]"),
    ("probe", "probe = [\"echo\", \"T\"]", "stacks.mine.probe[1]"),
    ("ready", "ready = [\"echo\", \"T\"]", "stacks.mine.ready[1]"),
    ("ready_shell", "ready = \"echo T\"", "stacks.mine.ready"),
    (
        "ready_on",
        "ready_on = { host = [\"echo\", \"T\"] }",
        "stacks.mine.ready_on.host[1]",
    ),
    (
        "requires",
        "requires = [\"/opt/T\"]",
        "stacks.mine.requires[0]",
    ),
    (
        "requires_on",
        "requires_on = { host = [\"/opt/T\"] }",
        "stacks.mine.requires_on.host[0]",
    ),
    (
        "contract",
        "contract = [{ item = \"x\", command = [\"echo\", \"T\"] }]",
        "stacks.mine.contract[0].command[1]",
    ),
    (
        "ran_expect",
        "ran = { pattern = \"(?P<algo>x)\", expect = \"T\" }",
        "stacks.mine.ran.expect",
    ),
    // `command` is line 14 itself (the test edits it there).
    ("command", "", "stacks.mine.command[1]"),
];

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `validate` and `dry-run` both refuse `plan` with exit 2, naming `at` (file:line) and
/// `field`, and saying `why`.
fn refused(plan: &str, at: &str, field: &str, why: &str) {
    for command in ["validate", "dry-run"] {
        let out = run(&[command, plan]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command} {plan}:\n{err}");
        assert!(
            err.lines()
                .any(|l| l.contains(at) && l.contains(&format!(": {field}: "))),
            "{command} {plan}: want `{at}…: {field}:`:\n{err}"
        );
        assert!(err.contains(why), "{command} {plan}: want `{why}`:\n{err}");
    }
}

#[test]
fn a_fault_in_any_stack_template_is_refused_at_its_line() {
    let tmp = tempdir();
    for (key, line, field) in FIELDS {
        for (fault, template, why) in FAULTS {
            let name = format!("{key}_{fault}");
            let text = if *key == "command" {
                HEAD.replace(
                    "command = [\"true\"]",
                    &format!("command = [\"echo\", \"{template}\"]"),
                )
            } else {
                format!("{HEAD}{}\n", line.replace('T', template))
            };
            let plan = write(tmp.path(), &name, &text);
            let at_line = if *key == "command" { 14 } else { 15 };
            refused(&plan, &format!("{name}.toml:{at_line}:"), field, why);
        }
    }
}

#[test]
fn a_fault_in_a_where_constraint_is_refused_at_its_line() {
    let tmp = tempdir();
    for (fault, expr, why) in [
        ("undefined", "nope == 2", "`nope` is undefined"),
        ("syntax", "p ==", "does not parse"),
        ("nul", "variant != 'a\\u0000b'", "NUL byte"),
    ] {
        let name = format!("where_{fault}");
        let text = format!("{HEAD}where = [\"p > 1\", \"{expr}\"]\n");
        let plan = write(tmp.path(), &name, &text);
        refused(
            &plan,
            &format!("{name}.toml:15:"),
            "stacks.mine.where[1]",
            why,
        );
    }
    // Fields a case file leaves out when implied (one node's layout, an op without a root)
    // are still names a constraint may use.
    let text = format!(
        "{HEAD}where = [\"nodes == 1 and ranks_per_node == p and placement == 'block' and root is none\"]\n"
    );
    let plan = write(tmp.path(), "where_layout", &text);
    let out = run(&["validate", &plan]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_fault_in_the_pool_probe_or_slurm_devices_arg_is_refused_at_its_line() {
    let tmp = tempdir();
    for (fault, template, why) in FAULTS {
        let name = format!("pool_probe_{fault}");
        let text = HEAD.replace(
            "kind = \"cpu\"\n",
            &format!("kind = \"cpu\"\nprobe = [\"echo\", \"{template}\"]\n"),
        );
        let plan = write(tmp.path(), &name, &text);
        refused(&plan, &format!("{name}.toml:12:"), "devices.probe[1]", why);
        let name = format!("devices_arg_{fault}");
        let text = format!("{HEAD}[slurm]\ndevices_arg = \"--gres=npu:{template}\"\n");
        let plan = write(tmp.path(), &name, &text);
        let why = match *fault {
            "undefined" => "`nope` is undefined",
            "syntax" => "not a valid template",
            "nested" => "fuel",
            _ => why,
        };
        refused(&plan, &format!("{name}.toml:16:"), "slurm.devices_arg", why);
    }
}

#[test]
fn zero_timeouts_are_refused_at_their_line() {
    let tmp = tempdir();
    for (name, text, at, field) in [
        (
            "run_no_output",
            format!("{HEAD}[run]\nno_output_timeout = 0\n"),
            16,
            "run.no_output_timeout",
        ),
        (
            "run_timeout",
            format!("{HEAD}[run]\ntimeout = \"0s\"\n"),
            16,
            "run.timeout",
        ),
        (
            "stack_no_output",
            format!("{HEAD}no_output_timeout = 0\n"),
            15,
            "stacks.mine.no_output_timeout",
        ),
        (
            "stack_timeout",
            format!("{HEAD}timeout = -1\n"),
            15,
            "stacks.mine.timeout",
        ),
    ] {
        let plan = write(tmp.path(), name, &text);
        let out = run(&["validate", &plan]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}:\n{err}");
        assert!(
            err.contains(&format!("{name}.toml:{at}:")) && err.contains(field),
            "{name}:\n{err}"
        );
    }
}

/// A report template whose loops are nested over ranges is refused at `validate` by fuel,
/// naming the template's line — not left to the memory limit or to the end of a campaign.
#[test]
fn a_report_template_with_nested_loops_is_refused_at_validate() {
    let tmp = tempdir();
    let template = tmp.path().join("nested.md.j2");
    std::fs::write(
        &template,
        "# {{ title }}\n{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}\n",
    )
    .unwrap();
    let text = format!("{HEAD}[report]\ntemplate = \"nested.md.j2\"\n");
    let plan = write(tmp.path(), "report_nested", &text);
    let out = run(&["validate", &plan]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nested.md.j2:2"), "{err}");
    assert!(err.contains("more work than a report may"), "{err}");
}

/// Issue 43 item 4: a P above the maximum that `nodes × ranks_per_node` makes is refused at the
/// line of the factor that makes it large, with a short message.
#[test]
fn a_node_layout_above_the_maximum_names_its_line() {
    let tmp = tempdir();
    for (name, layout, at, field) in [
        (
            "rpn_axis",
            "nodes = [64]\nranks_per_node = [128]\n",
            10,
            "ranks_per_node",
        ),
        (
            "both_max",
            "nodes = [4096]\nranks_per_node = [4096]\n",
            10,
            "ranks_per_node",
        ),
        (
            "nodes_big",
            "nodes = [4000]\nranks_per_node = [2]\n",
            9,
            "nodes",
        ),
    ] {
        let text = format!(
            "[campaign]\nname = \"t\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\n\
             count = [64]\nstacks = [\"host\"]\n{layout}"
        );
        let plan = write(tmp.path(), name, &text);
        let out = run(&["validate", &plan]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}:\n{err}");
        assert!(
            err.contains(&format!("{name}.toml:{at}:")) && err.contains(field),
            "{name}:\n{err}"
        );
        assert!(
            err.contains("above the maximum of 4096 ranks"),
            "{name}:\n{err}"
        );
        assert!(err.len() < 2000, "{name}: {} bytes of error", err.len());
    }
}

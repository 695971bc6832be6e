//! Rendering a stack definition into the argv, env and cwd of one process.
//!
//! Owns the template scope (what a `[stacks.NAME]` template may use), strict-undefined
//! rendering with errors that name the stack, the template and the missing variable, the
//! `command`/`shell` rules and the `CAMPAIGN_*` variables every run gets. It renders only: it
//! does not spawn (that is `executor`) nor check that programs exist (that is `probe`).

use itertools::Itertools;
use std::path::{Path, PathBuf};

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::{json, Map, Value};

use crate::error::{Diagnostic, Error, Result};
use crate::model::case::Case;
use crate::model::stack::{CommandSpec, StackDef};

/// Environment variables campaign sets for every run; a definition may not set them itself.
pub(crate) const CAMPAIGN_VARS: &[&str] = &[
    "CAMPAIGN_CASE_FILE",
    "CAMPAIGN_CASE_ID",
    "CAMPAIGN_DEVICES",
    "CAMPAIGN_BUNDLE_DIR",
    "CAMPAIGN_WARMUP",
    "CAMPAIGN_TIMED",
];

/// Everything a run's templates may refer to.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderContext {
    /// The case as run (its `device_ids` are the leased devices).
    pub case: Case,
    /// Leased device ids, in rank order.
    pub devices: Vec<u32>,
    /// Rounds this process must run (for `subprocess` shape: the one round it runs).
    pub warmup: u32,
    pub timed: u32,
    pub case_file: PathBuf,
    pub bundle_dir: PathBuf,
    pub run_dir: PathBuf,
    /// The stack's resolved root (`PYPTO_ROOT`, …), when it has one.
    pub root: Option<PathBuf>,
    /// This campaign binary (the `host` stack runs `campaign bench collective`).
    pub campaign_exe: PathBuf,
}

/// A rendered process: what the executor runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub argv: Vec<String>,
    /// Added to campaign's own environment (definition's `env`, then `CAMPAIGN_*`).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// This campaign binary, as the templates' `campaign_exe` names it: resolved once per process
/// (the path stays the one campaign started from, even if the file is replaced meanwhile).
pub fn campaign_exe() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().unwrap_or_else(|_| PathBuf::from("campaign")))
        .clone()
}

/// Render `def`'s run command for one run.
pub fn render(name: &str, def: &StackDef, ctx: &RenderContext) -> Result<Rendered> {
    let command = def.command.as_ref().ok_or_else(|| {
        stack_error(
            name,
            "command",
            "no command (expected an array of argument templates, or one string with shell = true)",
        )
    })?;
    let renderer = Renderer::lazy(name, || run_scope(ctx));
    let argv = run_argv(&renderer, command, def.shell.unwrap_or(false))?;
    Ok(Rendered {
        argv,
        env: run_env(&renderer, def, ctx)?,
        cwd: run_cwd(&renderer, def, &ctx.bundle_dir)?,
    })
}

/// Render `def`'s `ran.expect` and `ran.component_expect` for one run: the algorithm the run is
/// pinned to and the component that must serve it. `None` where the definition has no such
/// key; an empty text means nothing is pinned.
pub(crate) fn render_ran_expect(
    name: &str,
    def: &StackDef,
    ctx: &RenderContext,
) -> Result<(Option<String>, Option<String>)> {
    let Some(ran) = def.ran.as_ref() else {
        return Ok((None, None));
    };
    let renderer = Renderer::lazy(name, || run_scope(ctx));
    let algo = (ran.expect.as_deref())
        .map(|e| renderer.render("ran.expect", e))
        .transpose()?;
    let component = (ran.component_expect.as_deref())
        .map(|e| renderer.render("ran.component_expect", e))
        .transpose()?;
    Ok((algo, component))
}

/// Render `def`'s health probe for the devices in `ctx` (same scope and env as a run).
/// `None` when the definition has no `probe`.
pub(crate) fn render_probe(
    name: &str,
    def: &StackDef,
    ctx: &RenderContext,
) -> Result<Option<Rendered>> {
    let Some(probe) = &def.probe else {
        return Ok(None);
    };
    let renderer = Renderer::new(name, run_scope(ctx));
    Ok(Some(Rendered {
        argv: free_argv(&renderer, "probe", probe)?,
        env: run_env(&renderer, def, ctx)?,
        cwd: run_cwd(&renderer, def, &ctx.bundle_dir)?,
    }))
}

/// Render `def`'s `build` command (scope: `run_dir`, `root`, `campaign_exe`). It runs in the
/// root when there is one, else in the run dir. `env` entries that only use build-scope
/// variables are rendered; entries that need a run (`devices`, `case`, …) are left out.
/// `None` when the definition has no `build`.
pub fn render_build(
    name: &str,
    def: &StackDef,
    run_dir: &Path,
    root: Option<&Path>,
) -> Result<Option<Rendered>> {
    let Some(build) = &def.build else {
        return Ok(None);
    };
    let exe = campaign_exe();
    let mut scope = Map::new();
    scope.insert("run_dir".into(), path_value(run_dir));
    scope.insert("campaign_exe".into(), path_value(&exe));
    if let Some(root) = root {
        scope.insert("root".into(), path_value(root));
    }
    let renderer = Renderer::new(name, Value::Object(scope));
    let mut env = scoped_env(&renderer, def)?;
    env.push(("CAMPAIGN_RUN_DIR".into(), path_string(run_dir)));
    if let Some(root) = root {
        env.push(("CAMPAIGN_ROOT".into(), path_string(root)));
    }
    Ok(Some(Rendered {
        argv: free_argv(&renderer, "build", build)?,
        env,
        cwd: root.unwrap_or(run_dir).to_path_buf(),
    }))
}

/// The `env` entries of `def` that use nothing beyond `renderer`'s scope, rendered (build and
/// readiness probes have no case: entries that need one are left out).
fn scoped_env(renderer: &Renderer, def: &StackDef) -> Result<Vec<(String, String)>> {
    let mut env = Vec::new();
    for (key, template) in &def.env {
        if renderer.uses_only_scope(template) {
            env.push((
                key.clone(),
                renderer.render(&format!("env.{key}"), template)?,
            ));
        }
    }
    Ok(env)
}

/// Render `def`'s readiness probe `ready` (scope: `root`, `campaign_exe`; `env` entries that
/// use nothing else). It runs in the root when there is one, else in `cwd`. `None` when the
/// definition declares none.
pub fn render_ready(
    name: &str,
    def: &StackDef,
    root: Option<&Path>,
    cwd: &Path,
) -> Result<Option<Rendered>> {
    match &def.ready {
        Some(ready) => render_ready_probe(name, "ready", ready, None, def, root, cwd).map(Some),
        None => Ok(None),
    }
}

/// Render `def`'s readiness probe of one platform, `ready_on.<platform>` (the scope of `ready`
/// plus `platform`). `None` when the definition declares none for it.
pub fn render_ready_on(
    name: &str,
    def: &StackDef,
    platform: crate::model::case::Platform,
    root: Option<&Path>,
    cwd: &Path,
) -> Result<Option<Rendered>> {
    let Some(spec) = def.ready_on.get(&platform) else {
        return Ok(None);
    };
    let key = format!("ready_on.{platform}");
    render_ready_probe(name, &key, spec, Some(platform), def, root, cwd).map(Some)
}

/// Render a readiness-scoped command named `key` (`ready`, `ready_on.<platform>`, a contract
/// item's `contract[i].command`): the scope of `ready`, plus `platform` when given.
pub(crate) fn render_ready_probe(
    name: &str,
    key: &str,
    spec: &CommandSpec,
    platform: Option<crate::model::case::Platform>,
    def: &StackDef,
    root: Option<&Path>,
    cwd: &Path,
) -> Result<Rendered> {
    let exe = campaign_exe();
    let mut scope = Map::new();
    scope.insert("campaign_exe".into(), path_value(&exe));
    if let Some(root) = root {
        scope.insert("root".into(), path_value(root));
    }
    if let Some(platform) = platform {
        scope.insert("platform".into(), json!(platform.as_str()));
    }
    let renderer = Renderer::new(name, Value::Object(scope));
    let mut env = scoped_env(&renderer, def)?;
    if let Some(root) = root {
        env.push(("CAMPAIGN_ROOT".into(), path_string(root)));
    }
    Ok(Rendered {
        argv: free_argv(&renderer, key, spec)?,
        env,
        cwd: root.unwrap_or(cwd).to_path_buf(),
    })
}

/// Render one `requires` entry (`field` names it, e.g. `requires[0]`): scope `root` alone, the
/// stack's resolved root when it has one. Strict and fuelled like every stack template, so a
/// misspelt name is an error rather than an empty path, and a loop cannot hang the check.
pub(crate) fn render_requirement(
    name: &str,
    field: &str,
    template: &str,
    root: Option<&Path>,
) -> Result<String> {
    let mut scope = Map::new();
    if let Some(root) = root {
        scope.insert("root".into(), path_value(root));
    }
    Renderer::new(name, Value::Object(scope)).render(field, template)
}

/// What `def` gives every run of `variant`, whatever else the run is: its templated `env`
/// entries and argv flag values whose templates use only `variant` (hccl's
/// `HCCL_OP_EXPANSION_MODE` and `--algo`), rendered; an argv value is keyed by the flag before
/// it. Recorded per variant in provenance: what each variant set, by name.
pub(crate) fn variant_settings(
    name: &str,
    def: &StackDef,
    variant: &str,
) -> std::collections::BTreeMap<String, String> {
    let renderer = Renderer::new(name, json!({ "variant": variant }));
    let templated = |t: &str| t.contains("{{") || t.contains("{%");
    let mut out = std::collections::BTreeMap::new();
    for (key, template) in &def.env {
        if templated(template) && renderer.uses_only_scope(template) {
            if let Ok(v) = renderer.render(&format!("env.{key}"), template) {
                out.insert(key.clone(), v);
            }
        }
    }
    if let Some(CommandSpec::Argv(argv)) = &def.command {
        for (i, arg) in argv.iter().enumerate().skip(1) {
            let flag = &argv[i - 1];
            if flag.starts_with('-') && templated(arg) && renderer.uses_only_scope(arg) {
                if let Ok(v) = renderer.render(&format!("command[{i}]"), arg) {
                    out.insert(flag.clone(), v);
                }
            }
        }
    }
    out
}

/// The run scope as a JSON object (also what `requires` and docs describe).
pub(crate) fn run_scope(ctx: &RenderContext) -> Value {
    let devices_csv = join_ids(&ctx.devices);
    let mut scope = Map::new();
    scope.insert("case".into(), ctx.case.to_json());
    scope.insert("case_id".into(), json!(ctx.case.case_id()));
    scope.insert("p".into(), json!(ctx.case.p));
    scope.insert("count".into(), json!(ctx.case.count));
    scope.insert("dtype".into(), json!(ctx.case.dtype.as_str()));
    scope.insert("variant".into(), json!(ctx.case.variant.as_str()));
    // The collective and its root rank (`root` is the stack's root directory).
    scope.insert("op".into(), json!(ctx.case.op.as_str()));
    scope.insert("root_rank".into(), json!(ctx.case.root.unwrap_or(0)));
    scope.insert("platform".into(), json!(ctx.case.platform.as_str()));
    scope.insert("devices".into(), json!(ctx.devices));
    scope.insert("devices_csv".into(), json!(devices_csv));
    scope.insert("devices_range".into(), json!(devices_range(&ctx.devices)));
    scope.insert("warmup".into(), json!(ctx.warmup));
    scope.insert("timed".into(), json!(ctx.timed));
    scope.insert("case_file".into(), path_value(&ctx.case_file));
    scope.insert("bundle_dir".into(), path_value(&ctx.bundle_dir));
    scope.insert("run_dir".into(), path_value(&ctx.run_dir));
    scope.insert("campaign_exe".into(), path_value(&ctx.campaign_exe));
    if let Some(root) = &ctx.root {
        scope.insert("root".into(), path_value(root));
    }
    layout_scope(&mut scope, ctx);
    Value::Object(scope)
}

/// The node layout: `nodes`, `ranks_per_node`, `placement`, and what a launcher inside a
/// multi-node allocation needs. `hostfile` is a file the executor writes into the bundle from
/// the allocation; on several nodes `node_list` and `master_addr` are placeholders the running
/// job fills in and `rank_wrap` is the bundle's per-rank wrapper (it records each rank's node);
/// on one node they are `localhost`, `127.0.0.1` and `env` (a wrapper that changes nothing).
fn layout_scope(scope: &mut Map<String, Value>, ctx: &RenderContext) {
    use crate::model::nodes as place;
    let case = &ctx.case;
    let multi = case.nodes > 1;
    scope.insert("nodes".into(), json!(case.nodes.max(1)));
    scope.insert("ranks_per_node".into(), json!(case.ranks_per_node()));
    scope.insert("placement".into(), json!(case.placement.as_str()));
    scope.insert(
        "hostfile".into(),
        path_value(&ctx.bundle_dir.join(place::HOSTFILE)),
    );
    // Made by the Slurm job when a command or env names it (executor::slurm::rank_table).
    scope.insert(
        "rank_table".into(),
        path_value(&ctx.bundle_dir.join(place::RANK_TABLE)),
    );
    let (list, addr, wrap) = if multi {
        (
            place::NODE_LIST_TOKEN.to_string(),
            place::MASTER_ADDR_TOKEN.to_string(),
            path_string(&ctx.bundle_dir.join(place::RANK_WRAPPER)),
        )
    } else {
        ("localhost".into(), "127.0.0.1".into(), "env".into())
    };
    scope.insert("node_list".into(), json!(list));
    scope.insert("master_addr".into(), json!(addr));
    scope.insert("rank_wrap".into(), json!(wrap));
}

/// `0-3` for ascending contiguous ids (the form `simpler -d` takes), else `0,2,5`.
pub(crate) fn devices_range(ids: &[u32]) -> String {
    let contiguous = ids.len() > 1 && ids.windows(2).all(|w| w[0].checked_add(1) == Some(w[1]));
    if contiguous {
        format!("{}-{}", ids[0], ids[ids.len() - 1])
    } else {
        join_ids(ids)
    }
}

fn join_ids(ids: &[u32]) -> String {
    ids.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn run_argv(renderer: &Renderer, command: &CommandSpec, shell: bool) -> Result<Vec<String>> {
    match (command, shell) {
        (CommandSpec::Shell(text), true) => Ok(vec![
            "sh".into(),
            "-c".into(),
            renderer.render_shell("command", text)?,
        ]),
        (CommandSpec::Shell(_), false) => Err(renderer.error(
            "command",
            "command is one string but shell is not true (write it as an array of arguments, or set shell = true to run it with sh -c)",
        )),
        (CommandSpec::Argv(_), true) => Err(renderer.error(
            "command",
            "shell = true needs command to be one string, got an array (drop shell, or join the command into one string)",
        )),
        (CommandSpec::Argv(args), false) => render_args(renderer, "command", args),
    }
}

/// `build`, `probe` and `ready`: an array is an argv, a string runs with `sh -c` (no `shell` key
/// needed; its values are shell-quoted like a shell `command`'s).
fn free_argv(renderer: &Renderer, field: &str, command: &CommandSpec) -> Result<Vec<String>> {
    match command {
        CommandSpec::Shell(text) => Ok(vec![
            "sh".into(),
            "-c".into(),
            renderer.render_shell(field, text)?,
        ]),
        CommandSpec::Argv(args) => render_args(renderer, field, args),
    }
}

fn render_args(renderer: &Renderer, field: &str, args: &[String]) -> Result<Vec<String>> {
    if args.is_empty() {
        return Err(renderer.error(field, "empty array (expected a program and its arguments)"));
    }
    let argv = args
        .iter()
        .enumerate()
        .map(|(i, t)| renderer.render(&format!("{field}[{i}]"), t))
        .collect::<Result<Vec<_>>>()?;
    if argv[0].trim().is_empty() {
        return Err(renderer.error(
            &format!("{field}[0]"),
            format!("`{}` rendered to an empty program name", args[0]),
        ));
    }
    Ok(argv)
}

fn run_env(
    renderer: &Renderer,
    def: &StackDef,
    ctx: &RenderContext,
) -> Result<Vec<(String, String)>> {
    let mut env = Vec::with_capacity(def.env.len() + CAMPAIGN_VARS.len());
    for (key, template) in &def.env {
        if CAMPAIGN_VARS.contains(&key.as_str()) {
            return Err(renderer.error(
                &format!("env.{key}"),
                format!("{key} is set by campaign for every run and cannot be overridden"),
            ));
        }
        env.push((
            key.clone(),
            renderer.render(&format!("env.{key}"), template)?,
        ));
    }
    env.push(("CAMPAIGN_CASE_FILE".into(), path_string(&ctx.case_file)));
    env.push(("CAMPAIGN_CASE_ID".into(), ctx.case.case_id()));
    env.push(("CAMPAIGN_DEVICES".into(), join_ids(&ctx.devices)));
    env.push(("CAMPAIGN_BUNDLE_DIR".into(), path_string(&ctx.bundle_dir)));
    env.push(("CAMPAIGN_WARMUP".into(), ctx.warmup.to_string()));
    env.push(("CAMPAIGN_TIMED".into(), ctx.timed.to_string()));
    Ok(env)
}

/// `cwd` template, relative paths taken from the bundle dir; default the bundle dir.
fn run_cwd(renderer: &Renderer, def: &StackDef, bundle_dir: &Path) -> Result<PathBuf> {
    match &def.cwd {
        None => Ok(bundle_dir.to_path_buf()),
        Some(template) => {
            let text = renderer.render("cwd", template)?;
            if text.trim().is_empty() {
                return Err(
                    renderer.error("cwd", format!("`{template}` rendered to an empty path"))
                );
            }
            Ok(bundle_dir.join(text))
        }
    }
}

fn path_value(path: &Path) -> Value {
    Value::String(path_string(path))
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// An error about one key of `[stacks.NAME]`.
pub(crate) fn stack_error(name: &str, field: &str, message: impl Into<String>) -> Error {
    Error::Invalid(vec![Diagnostic {
        file: PathBuf::from(format!("stack `{name}`")),
        line: None,
        column: None,
        field: Some(field.to_string()),
        message: message.into(),
        snippet: None,
    }])
}

/// Strict-undefined minijinja rendering against one scope, with errors naming the stack. The
/// scope is built on first use: a definition whose fields are all literal text (no `{`) renders
/// without it and without minijinja.
pub(crate) struct Renderer<'n> {
    name: &'n str,
    make_scope: Box<dyn Fn() -> Value + 'n>,
    /// The scope, and the same as a minijinja value.
    scope: std::cell::OnceCell<(Value, minijinja::Value)>,
}

/// The two environments every template renders in (the same for every stack and run, so made
/// once): plain for arguments and `env` values, and one for shell strings where every
/// `{{ … }}` output is shell-quoted ([`shell_quote`]) unless marked `| safe` / `| unquoted`.
fn environments() -> &'static (Environment<'static>, Environment<'static>) {
    static ENVIRONMENTS: std::sync::OnceLock<(Environment<'static>, Environment<'static>)> =
        std::sync::OnceLock::new();
    ENVIRONMENTS.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // A loop in a template stops with an error instead of growing memory without bound.
        env.set_fuel(Some(crate::model::limits::FUEL_TEMPLATE));
        // Commands are not HTML: never escape, whatever a template's name looks like.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.add_filter("unquoted", minijinja::filters::safe);
        let mut shell_env = env.clone();
        shell_env.set_formatter(|out, _state, value| {
            let text = value.to_string();
            let quoted = if value.is_safe() {
                text
            } else {
                shell_quote(&text)
            };
            out.write_str(&quoted).map_err(minijinja::Error::from)
        });
        (env, shell_env)
    })
}

/// Text minijinja would render as itself: no tag can start without `{`, and a single trailing
/// newline — which minijinja drops — is not there.
fn literal(source: &str) -> bool {
    !source.contains('{') && !source.ends_with('\n')
}

/// Quote `text` as one word for `sh` (the one quoter, `model::shell`).
pub(crate) use crate::model::shell::quote_word as shell_quote;

impl<'n> Renderer<'n> {
    pub(crate) fn new(name: &'n str, scope: Value) -> Self {
        Renderer::lazy(name, move || scope.clone())
    }

    /// A renderer whose scope `make_scope` builds only if a template needs it.
    pub(crate) fn lazy(name: &'n str, make_scope: impl Fn() -> Value + 'n) -> Self {
        Renderer {
            name,
            make_scope: Box::new(make_scope),
            scope: std::cell::OnceCell::new(),
        }
    }

    fn scope(&self) -> &Value {
        &self.scoped().0
    }

    fn scoped(&self) -> &(Value, minijinja::Value) {
        self.scope.get_or_init(|| {
            let scope = (self.make_scope)();
            let context = minijinja::Value::from(minijinja::value::Serde(&scope));
            (scope, context)
        })
    }

    /// Render a shell string (`sh -c` text): every value is shell-quoted unless the template
    /// opts out with `| safe` (or its alias `| unquoted`), so a value can never become code.
    pub(crate) fn render_shell(&self, field: &str, source: &str) -> Result<String> {
        if literal(source) {
            return Ok(source.to_string());
        }
        environments()
            .1
            .render_named_str(field, source, self.scoped().1.clone())
            .map_err(|e| self.explain(field, source, &e))
    }

    pub(crate) fn error(&self, field: &str, message: impl Into<String>) -> Error {
        stack_error(self.name, field, message)
    }

    /// Render `source` (the value of `field`).
    pub(crate) fn render(&self, field: &str, source: &str) -> Result<String> {
        if literal(source) {
            return Ok(source.to_string());
        }
        environments()
            .0
            .render_named_str(field, source, self.scoped().1.clone())
            .map_err(|e| self.explain(field, source, &e))
    }

    /// Does `source` refer only to variables of this scope (so it can render here)?
    pub(crate) fn uses_only_scope(&self, source: &str) -> bool {
        let env = Environment::new();
        match env.template_from_str(source) {
            Ok(t) => t
                .undeclared_variables(true)
                .iter()
                .all(|path| resolves(self.scope(), path)),
            Err(_) => true,
        }
    }

    fn explain(&self, field: &str, source: &str, e: &minijinja::Error) -> Error {
        let mut message = format!("template `{source}`: ");
        let missing = missing_variables(self.scope(), source);
        if e.kind() == minijinja::ErrorKind::UndefinedError && !missing.is_empty() {
            message.push_str(&format!("undefined variable {}", missing.join(", ")));
            if missing.iter().any(|m| m == "`root`") {
                message
                    .push_str(" (this stack has no root: set `root` and its environment variable)");
            }
            message.push_str(&format!("; in scope: {}", scope_names(self.scope())));
        } else if e.kind() == minijinja::ErrorKind::OutOfFuel {
            message.push_str(&format!(
                "does more work than a stack template may ({} instructions: a loop too long, or loops nested)",
                crate::model::limits::FUEL_TEMPLATE
            ));
        } else {
            message.push_str(&e.kind().to_string());
            if let Some(detail) = e.detail() {
                message.push_str(&format!(": {detail}"));
            }
            if let Some(line) = e.line().filter(|_| source.contains('\n')) {
                message.push_str(&format!(" (template line {line})"));
            }
        }
        self.error(field, message)
    }
}

/// Variables (dotted paths) a template uses that the scope does not define, quoted.
fn missing_variables(scope: &Value, source: &str) -> Vec<String> {
    let env = Environment::new();
    let Ok(template) = env.template_from_str(source) else {
        return Vec::new();
    };
    let mut missing: Vec<String> = template
        .undeclared_variables(true)
        .into_iter()
        .filter(|path| !resolves(scope, path))
        .map(|path| format!("`{path}`"))
        .collect();
    missing.sort();
    missing
}

fn resolves(scope: &Value, path: &str) -> bool {
    let mut at = scope;
    for part in path.split('.') {
        match at.get(part) {
            Some(next) => at = next,
            // Attribute access on a string or list (e.g. a method) is minijinja's business.
            None => return !at.is_object(),
        }
    }
    true
}

fn scope_names(scope: &Value) -> String {
    let names = scope
        .as_object()
        .map(|m| m.keys().join(", "))
        .unwrap_or_default();
    if names.is_empty() {
        "nothing (here only `root` is, and this stack has none)".into()
    } else {
        names
    }
}

#[cfg(test)]
mod tests;

//! The domain of every key of a stack definition, checked before anything runs: names and
//! numbers in range, ranges ordered, divisors non-zero, environment keys that are POSIX names,
//! no NUL byte in anything that reaches a process, and templates within the size limits of
//! `model::limits`. Pure: returns problems as `(key, message)`; the plan loader locates them.

use super::{CommandSpec, Counts, StackDef};
use crate::model::case::MAX_P;
use crate::model::limits::{check_template, MAX_TEMPLATE_BYTES};
use crate::model::units::MAX_DURATION;

/// Is `key` a valid environment variable name (`[A-Za-z_][A-Za-z0-9_]*`)? Anything else — an
/// `=`, a `;`, a space — would change what a shell or `env` makes of it.
pub(crate) fn is_env_name(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A `{{ … }}` written inside quotes in a shell-string template, if any. Campaign quotes every
/// value it renders into a shell string (one word, single-quoted when needed); quotes written
/// around it undo that — inside `"…"` a value's `$(…)` would run — so they are refused, with
/// `| unquoted` as the explicit way to take a value as shell text.
pub(crate) fn quoted_value(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' && matches!(bytes.get(i + 1), Some(b'{') | Some(b'%') | Some(b'#')) {
            let close: &[u8] = match bytes[i + 1] {
                b'{' => b"}}",
                b'%' => b"%}",
                _ => b"#}",
            };
            let end = (i + 2..bytes.len().saturating_sub(1))
                .find(|&j| &bytes[j..j + 2] == close)
                .map_or(bytes.len(), |j| j + 2);
            let block = &text[i..end];
            if bytes[i + 1] == b'{' && (single || double) && !block.contains("unquoted") {
                let quote = if double {
                    "double quotes"
                } else {
                    "single quotes"
                };
                return Some(format!(
                    "`{block}` is written inside {quote}: campaign already quotes every value it puts into a shell string, and quotes around it undo that (drop them, or write `| unquoted` to take the value as shell text on purpose)"
                ));
            }
            i = end;
            continue;
        }
        match bytes[i] {
            b'\\' if !single => i += 1,
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ => {}
        }
        i += 1;
    }
    None
}

impl StackDef {
    /// Every problem of this definition's values, as `(key, what was expected)`.
    pub(crate) fn domain_problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut out_shell = Vec::new();
        let mut template = |key: String, text: &str| {
            if let Err(why) = check_template(text, MAX_TEMPLATE_BYTES) {
                out.push((key, format!("template refused: {why}")));
            }
        };
        let mut commands: Vec<(String, Option<&CommandSpec>)> = [
            ("command", &self.command),
            ("build", &self.build),
            ("probe", &self.probe),
            ("ready", &self.ready),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.as_ref()))
        .collect();
        for (platform, spec) in &self.ready_on {
            commands.push((format!("ready_on.{platform}"), Some(spec)));
        }
        for (key, spec) in commands {
            let key = key.as_str();
            match spec {
                Some(CommandSpec::Argv(argv)) => {
                    for (i, arg) in argv.iter().enumerate() {
                        template(format!("{key}[{i}]"), arg);
                    }
                }
                Some(CommandSpec::Shell(text)) => {
                    template(key.to_string(), text);
                    if let Some(why) = quoted_value(text) {
                        out_shell.push((key.to_string(), why));
                    }
                }
                None => {}
            }
        }
        for (k, v) in &self.env {
            template(format!("env.{k}"), v);
        }
        if let Some(cwd) = &self.cwd {
            template("cwd".into(), cwd);
        }
        for (i, r) in self.requires.iter().enumerate() {
            template(format!("requires[{i}]"), r);
        }
        for (platform, list) in &self.requires_on {
            for (i, r) in list.iter().enumerate() {
                template(format!("requires_on.{platform}[{i}]"), r);
            }
        }
        for (i, item) in self.contract.iter().enumerate() {
            let key = format!("contract[{i}].command");
            match &item.command {
                CommandSpec::Argv(argv) => {
                    for (j, arg) in argv.iter().enumerate() {
                        template(format!("{key}[{j}]"), arg);
                    }
                }
                CommandSpec::Shell(text) => template(key, text),
            }
        }
        if let Some(ran) = &self.ran {
            if let Some(expect) = &ran.expect {
                template("ran.expect".into(), expect);
            }
            if let Some(expect) = &ran.component_expect {
                template("ran.component_expect".into(), expect);
            }
            if let Err(why) = ran_regex(&ran.pattern) {
                out_shell.push(("ran.pattern".into(), why));
            }
            if let Some(reader) = &ran.component {
                if !COMPONENT_READERS.contains(&reader.as_str()) {
                    out_shell.push((
                        "ran.component".into(),
                        format!(
                            "unknown reader `{reader}` (known: {})",
                            COMPONENT_READERS.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(probe) = &self.variants_probe {
            if let Err(why) = probe_regex(&probe.pattern) {
                out_shell.push(("variants_probe.pattern".into(), why));
            }
            if probe.command.is_empty() {
                out_shell.push(("variants_probe.command".into(), "is empty".into()));
            }
            for op in probe.ops.keys() {
                if let Err(why) = op.parse::<crate::model::case::Op>() {
                    out_shell.push((format!("variants_probe.ops.{op}"), why));
                }
            }
        }
        for (k, v) in self.markers.iter().chain(&self.patterns) {
            if v.contains('\0') || k.contains('\0') {
                out.push((format!("markers.{k}"), "contains a NUL byte".into()));
            }
        }
        out.extend(out_shell);
        for k in self.env.keys() {
            if !is_env_name(k) {
                out.push((
                    format!("env.{k}"),
                    format!(
                        "`{}` is not an environment variable name (expected letters, digits and `_`, not starting with a digit)",
                        k.escape_default()
                    ),
                ));
            }
        }
        out.extend(self.limit_problems());
        out.extend(self.default_problem());
        out.extend(self.profile_problems());
        out
    }

    /// `[stacks.NAME.profile.KIND]`: only the upstream kinds (campaign makes `cpu` and
    /// `counters` itself), environment names that are names, no NUL, at least one file pattern
    /// (where else would the profile be?), and a round count in range.
    fn profile_problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (kind, spec) in &self.profile {
            let key = format!("profile.{}", kind.name());
            if kind.by_perf() {
                out.push((
                    key.clone(),
                    "campaign makes `cpu` and `counters` profiles itself with perf around a CPU stack's processes; a definition declares only swimlane, pmu and dep".into(),
                ));
            }
            for k in spec.env.keys() {
                if !is_env_name(k) {
                    out.push((
                        format!("{key}.env.{k}"),
                        "not an environment variable name (letters, digits and `_`)".into(),
                    ));
                }
            }
            let texts = (spec.args.iter())
                .chain(spec.env.values())
                .chain(&spec.files);
            if texts.into_iter().any(|t| t.contains('\0')) {
                out.push((key.clone(), "contains a NUL byte".into()));
            }
            if spec.files.is_empty() {
                out.push((format!("{key}.files"), "name where the program writes the profile (glob patterns, relative to the stack's root)".into()));
            }
            if spec.rounds.is_some_and(|r| r == 0 || r > 100_000) {
                out.push((
                    format!("{key}.rounds"),
                    "expected an integer between 1 and 100000".into(),
                ));
            }
        }
        out
    }

    /// `default_variant` must be an algorithm the stack has for some op it runs.
    fn default_problem(&self) -> Option<(String, String)> {
        let d = self.default_variant?;
        let mut known: Vec<crate::model::case::Variant> = Vec::new();
        for op in self.ops() {
            for v in self
                .algorithms(*op)
                .into_iter()
                .flat_map(|a| a.into_owned())
            {
                if !known.contains(&v) {
                    known.push(v);
                }
            }
        }
        (!known.is_empty() && !known.contains(&d)).then(|| {
            let names: Vec<&str> = known.iter().map(|v| v.as_str()).collect();
            (
                "default_variant".to_string(),
                format!(
                    "`{d}` is none of this stack's algorithms ({})",
                    names.join(", ")
                ),
            )
        })
    }

    /// P bounds, counts and timeouts.
    fn limit_problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let p_range = format!("expected an integer between 1 and {MAX_P}");
        for (key, value) in [
            ("min_p", self.min_p),
            ("max_p", self.max_p),
            ("p_multiple_of", self.p_multiple_of),
        ] {
            if value.is_some_and(|n| n == 0 || n > MAX_P) {
                out.push((key.to_string(), p_range.clone()));
            }
        }
        if let (Some(min), Some(max)) = (self.min_p, self.max_p) {
            if min > max {
                out.push((
                    "min_p".into(),
                    format!("min_p = {min} is above max_p = {max}: no P could run"),
                ));
            }
        }
        match &self.counts {
            Some(Counts::Range {
                min: Some(min),
                max: Some(max),
            }) if min > max => out.push((
                "counts".into(),
                format!("counts.min = {min} is above counts.max = {max}: no count could run"),
            )),
            Some(Counts::Range { min: Some(0), .. }) => {
                out.push(("counts.min".into(), "counts start at 1".into()))
            }
            Some(Counts::List(list)) if list.is_empty() || list.contains(&0) => out.push((
                "counts".into(),
                "expected a non-empty list of counts >= 1".into(),
            )),
            _ => {}
        }
        for (key, value) in [
            ("timeout", self.timeout),
            ("no_output_timeout", self.no_output_timeout),
        ] {
            if value.is_some_and(|d| d.is_zero() || d > MAX_DURATION) {
                out.push((
                    key.to_string(),
                    "expected a duration above 0 and at most 7 days".into(),
                ));
            }
        }
        out
    }
}

/// `pattern` as a `variants_probe.pattern`: a regex with groups named `op` and `variant`, or
/// why it cannot be one.
pub(crate) fn probe_regex(pattern: &str) -> Result<regex::Regex, String> {
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("not a regular expression: {e}"))?;
    for group in ["op", "variant"] {
        if !re.capture_names().any(|n| n == Some(group)) {
            return Err(format!(
                "has no group named `{group}` (write `(?P<{group}>…)` around it)"
            ));
        }
    }
    Ok(re)
}

/// The readers `ran.component` may name (`stack::coll_select` reads them).
pub(crate) const COMPONENT_READERS: &[&str] = &["open-mpi"];

/// `pattern` as a `ran.pattern`: a regex within the size limit with a group named `algo` (the
/// one thing it must capture), or why it cannot be one.
pub(crate) fn ran_regex(pattern: &str) -> Result<regex::Regex, String> {
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("not a regular expression: {e}"))?;
    if !re.capture_names().any(|n| n == Some("algo")) {
        return Err(
            "has no group named `algo` (write `(?P<algo>…)` around what names the algorithm)"
                .into(),
        );
    }
    Ok(re)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(text: &str) -> StackDef {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn env_names_are_posix_names() {
        for ok in ["X", "_A1", "HCCL_BUFFSIZE"] {
            assert!(is_env_name(ok), "{ok}");
        }
        for bad in ["", "1X", "X=1; touch FILE; Y", "A B", "A-B", "X\0"] {
            assert!(!is_env_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn values_quoted_by_hand_in_shell_strings_are_refused() {
        for bad in [
            "echo \"{{ case.runtime }}\"",
            "echo '{{ root }}/x'",
            "sh -c \"run {{ p }}\"",
        ] {
            assert!(quoted_value(bad).is_some(), "{bad}");
        }
        for ok in [
            "echo {{ case.runtime }} \"literal text\"",
            "cd {{ root }} && ./run -p {{ p }} 'a b'",
            "echo \"{{ flags | unquoted }}\"",
            "echo \\\"{{ p }}",
            "{% if p > 2 %}echo \"big\"{% endif %} {{ p }}",
        ] {
            assert_eq!(quoted_value(ok), None, "{ok}");
        }
    }

    #[test]
    fn every_problem_is_named_by_its_key() {
        let d = def(r#"
command = ["a\u0000b"]
env = { "X=1; touch FILE; Y" = "1", OK = "v\u0000" }
min_p = 8
max_p = 4
p_multiple_of = 0
counts = { min = 10, max = 1 }
timeout = "0s"
"#);
        let keys: Vec<String> = d.domain_problems().into_iter().map(|(k, _)| k).collect();
        for key in [
            "command[0]",
            "env.X=1; touch FILE; Y",
            "env.OK",
            "min_p",
            "p_multiple_of",
            "counts",
            "timeout",
        ] {
            assert!(keys.iter().any(|k| k == key), "{key} not in {keys:?}");
        }
        assert!(def("command = [\"true\"]\nmin_p = 2\nmax_p = 16\n")
            .domain_problems()
            .is_empty());
    }

    /// `default_variant` names the variant a plan that names none runs (where the op has it),
    /// and must be one of the stack's algorithms.
    #[test]
    fn the_default_variant_is_one_of_the_stacks_algorithms() {
        use crate::model::case::{Op, Variant};
        let d = def(
            "command = [\"true\"]\nvariants = [\"mesh\", \"ring\"]\ndefault_variant = \"ring\"\n",
        );
        assert!(d.domain_problems().is_empty());
        assert_eq!(d.default_variant(Op::Allreduce), Some(Variant::Ring));
        let none = def("command = [\"true\"]\nvariants = [\"mesh\", \"ring\"]\n");
        assert_eq!(none.default_variant(Op::Allreduce), Some(Variant::Mesh));
        let bad = def("command = [\"true\"]\nvariants = [\"mesh\", \"ring\"]\ndefault_variant = \"twophase\"\n");
        let problems = bad.domain_problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "default_variant");
        assert!(problems[0].1.contains("mesh, ring"), "{problems:?}");
    }
}

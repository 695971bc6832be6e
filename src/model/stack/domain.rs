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

impl StackDef {
    /// Every problem of this definition's values, as `(key, what was expected)`.
    pub(crate) fn domain_problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut template = |key: String, text: &str| {
            if let Err(why) = check_template(text, MAX_TEMPLATE_BYTES) {
                out.push((key, format!("template refused: {why}")));
            }
        };
        let commands = [
            ("command", &self.command),
            ("build", &self.build),
            ("probe", &self.probe),
            ("ready", &self.ready),
        ];
        for (key, spec) in commands {
            match spec {
                Some(CommandSpec::Argv(argv)) => {
                    for (i, arg) in argv.iter().enumerate() {
                        template(format!("{key}[{i}]"), arg);
                    }
                }
                Some(CommandSpec::Shell(text)) => template(key.to_string(), text),
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
        for (k, v) in self.markers.iter().chain(&self.patterns) {
            if v.contains('\0') || k.contains('\0') {
                out.push((format!("markers.{k}"), "contains a NUL byte".into()));
            }
        }
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
        out
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
}

//! The raw side of plan parsing: toml's spanned document (`toml::de::DeTable`) read in file
//! order, with typed accessors that record a located diagnostic instead of failing.
//!
//! It knows TOML value shapes, not plan semantics: callers decide which keys exist and what
//! they mean. Accessors return `None` after recording an error so parsing can go on and report
//! every problem of a plan together.

use std::ops::Range;
use std::time::Duration;

use serde_json::Value;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::diag::{did_you_mean, Diags, Source};

/// A spanned TOML value.
pub(crate) type Item<'i> = Spanned<DeValue<'i>>;

/// One `key = value` of a table: key text, key span, value.
pub(crate) struct Entry<'a, 'i> {
    pub(crate) key: &'a str,
    pub(crate) key_span: Range<usize>,
    pub(crate) item: &'a Item<'i>,
}

/// Entries of a table in the order they appear in the file (toml stores them sorted).
pub(crate) fn entries<'a, 'i>(table: &'a DeTable<'i>) -> Vec<Entry<'a, 'i>> {
    let mut out: Vec<Entry<'a, 'i>> = table
        .iter()
        .map(|(k, v)| Entry {
            key: k.get_ref().as_ref(),
            key_span: k.span(),
            item: v,
        })
        .collect();
    out.sort_by_key(|e| e.key_span.start);
    out
}

/// Human name of a TOML value's type, for "expected X, got Y" messages.
pub(crate) fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Convert to JSON (the case fields' value space). Date-times and out-of-range integers are
/// reported as messages.
pub(crate) fn to_json(v: &DeValue<'_>) -> Result<Value, String> {
    Ok(match v {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => {
            let n = i64::from_str_radix(i.as_str(), i.radix())
                .map_err(|_| format!("integer {} is out of range", i.as_str()))?;
            Value::from(n)
        }
        DeValue::Float(f) => {
            let x: f64 = f
                .as_str()
                .parse()
                .map_err(|_| format!("`{}` is not a finite number", f.as_str()))?;
            serde_json::Number::from_f64(x)
                .map(Value::Number)
                .ok_or_else(|| format!("`{}` is not a finite number", f.as_str()))?
        }
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(_) => return Err("date-times are not accepted in plans".into()),
        DeValue::Array(a) => Value::Array(
            a.iter()
                .map(|e| to_json(e.get_ref()))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(t) => Value::Object(
            entries(t)
                .into_iter()
                .map(|e| Ok((e.key.to_string(), to_json(e.item.get_ref())?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// The parsing context: source positions plus the diagnostics collector.
pub(crate) struct Ctx<'s> {
    pub(crate) src: &'s Source<'s>,
    pub(crate) diags: Diags,
}

impl<'s> Ctx<'s> {
    pub(crate) fn new(src: &'s Source<'s>) -> Ctx<'s> {
        Ctx {
            src,
            diags: Diags::default(),
        }
    }

    pub(crate) fn error(&mut self, span: &Range<usize>, field: &str, message: String) {
        let d = self.src.at(span, Some(field), message);
        self.diags.error(d);
    }

    pub(crate) fn warn(&mut self, span: &Range<usize>, field: &str, message: String) {
        let d = self.src.at(span, Some(field), message);
        self.diags.warn(d);
    }

    fn wrong_type(&mut self, item: &Item<'_>, field: &str, expected: &str) {
        let got = type_name(item.get_ref());
        self.error(
            &item.span(),
            field,
            format!("expected {expected}, got {got}"),
        );
    }

    /// Report keys of `table` not in `allowed` (with a suggestion); returns the known entries.
    pub(crate) fn known_entries<'a, 'i>(
        &mut self,
        table: &'a DeTable<'i>,
        section: &str,
        allowed: &[&str],
    ) -> Vec<Entry<'a, 'i>> {
        let mut out = Vec::new();
        for e in entries(table) {
            if allowed.contains(&e.key) {
                out.push(e);
            } else {
                let hint = did_you_mean(e.key, allowed.iter().copied());
                let field = join(section, e.key);
                self.error(
                    &e.key_span,
                    &field,
                    format!(
                        "unknown key `{}` in [{section}]{hint}; expected one of: {}",
                        e.key,
                        allowed.join(", ")
                    ),
                );
            }
        }
        out
    }

    pub(crate) fn table<'a, 'i>(
        &mut self,
        item: &'a Item<'i>,
        field: &str,
    ) -> Option<&'a DeTable<'i>> {
        match item.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => {
                self.wrong_type(item, field, "a table");
                None
            }
        }
    }

    pub(crate) fn string(&mut self, item: &Item<'_>, field: &str) -> Option<String> {
        match item.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong_type(item, field, "a string");
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, item: &Item<'_>, field: &str) -> Option<bool> {
        match item.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong_type(item, field, "a boolean (true or false)");
                None
            }
        }
    }

    /// A non-negative integer no larger than `max`.
    pub(crate) fn uint(&mut self, item: &Item<'_>, field: &str, max: u64) -> Option<u64> {
        let DeValue::Integer(i) = item.get_ref() else {
            self.wrong_type(item, field, "a non-negative integer");
            return None;
        };
        match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) if n >= 0 && (n as u64) <= max => Some(n as u64),
            _ => {
                self.error(
                    &item.span(),
                    field,
                    format!("expected an integer between 0 and {max}"),
                );
                None
            }
        }
    }

    pub(crate) fn duration(&mut self, item: &Item<'_>, field: &str) -> Option<Duration> {
        // A bare number is seconds (docs/plan-format.md), so `timeout = 30` is 30 s.
        let text = match item.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix())
                .map_or_else(|_| i.as_str().to_string(), |n| n.to_string()),
            DeValue::Float(f) => f.as_str().to_string(),
            _ => {
                self.wrong_type(
                    item,
                    field,
                    "a duration such as \"30s\" or \"10m\", or a number of seconds",
                );
                return None;
            }
        };
        match crate::model::units::parse_duration(&text) {
            Ok(d) => Some(d),
            Err(msg) => {
                self.error(&item.span(), field, msg);
                None
            }
        }
    }

    /// An array of items; each element is checked by the caller.
    pub(crate) fn array<'a, 'i>(
        &mut self,
        item: &'a Item<'i>,
        field: &str,
    ) -> Option<Vec<&'a Item<'i>>> {
        match item.get_ref() {
            DeValue::Array(a) => Some(a.iter().collect()),
            _ => {
                self.wrong_type(item, field, "an array");
                None
            }
        }
    }

    pub(crate) fn strings(&mut self, item: &Item<'_>, field: &str) -> Option<Vec<String>> {
        let elems = self.array(item, field)?;
        let mut out = Vec::new();
        let mut ok = true;
        for (i, e) in elems.into_iter().enumerate() {
            match self.string(e, &format!("{field}[{i}]")) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// One of `choices`, with a suggestion when it is not.
    pub(crate) fn choice(
        &mut self,
        item: &Item<'_>,
        field: &str,
        choices: &[&str],
    ) -> Option<String> {
        let s = self.string(item, field)?;
        if choices.contains(&s.as_str()) {
            Some(s)
        } else {
            let hint = did_you_mean(&s, choices.iter().copied());
            self.error(
                &item.span(),
                field,
                format!(
                    "unknown value `{s}`{hint}; expected one of: {}",
                    choices.join(", ")
                ),
            );
            None
        }
    }
}

/// `section.key`, or just `key` at the top level.
pub(crate) fn join(section: &str, key: &str) -> String {
    if section.is_empty() {
        key.to_string()
    } else {
        format!("{section}.{key}")
    }
}

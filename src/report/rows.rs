//! The long lists of the report context (a row per case, per run, per failure, per pair, per
//! results-table row), shared between the JSON writer and the templates without a copy each.
//!
//! `Rows<T>` serializes as a plain list everywhere (`context.json` is unchanged), but when
//! minijinja converts the context into its own values it becomes a lazy sequence object: the
//! template gets one row's values at the moment it reads that row, and they are freed when the
//! loop moves on. Converting a 100,000-run context whole made a second, larger copy of it
//! (hundreds of bytes per field of every row) that lived for the whole render. Owns nothing
//! else: what the rows hold is `context`'s and `html`'s business.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use serde::{Serialize, Serializer};

/// A list of context rows, shared by reference count (cloning it copies no row).
#[derive(Debug)]
pub(crate) struct Rows<T>(Arc<Vec<T>>);

impl<T> Clone for Rows<T> {
    fn clone(&self) -> Self {
        Rows(Arc::clone(&self.0))
    }
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows(Arc::new(Vec::new()))
    }
}

impl<T> From<Vec<T>> for Rows<T> {
    fn from(rows: Vec<T>) -> Self {
        Rows(Arc::new(rows))
    }
}

impl<T> Rows<T> {
    /// The rows to change in place, while no one else holds them (right after they were
    /// built); `None` once they are shared.
    pub(crate) fn get_mut(&mut self) -> Option<&mut [T]> {
        Arc::get_mut(&mut self.0).map(Vec::as_mut_slice)
    }
}

impl<T> std::ops::Deref for Rows<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> Serialize for Rows<T>
where
    T: Serialize + std::fmt::Debug + Send + Sync + 'static,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if minijinja::value::serializing_for_value() {
            // A minijinja value serializes as a handle to itself, so the list reaches the
            // template as this object, not as a converted copy of every row.
            Value::from_object(Lazy(Arc::clone(&self.0))).serialize(s)
        } else {
            self.0.serialize(s)
        }
    }
}

/// The sequence object minijinja sees: row `i` converted when the template asks for it.
#[derive(Debug)]
struct Lazy<T>(Arc<Vec<T>>);

impl<T> Object for Lazy<T>
where
    T: Serialize + std::fmt::Debug + Send + Sync + 'static,
{
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let row = self.0.get(key.as_usize()?)?;
        Some(Value::from(minijinja::value::Serde(row)))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize)]
    struct Row {
        name: String,
        n: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        extra: Option<String>,
    }

    #[derive(Debug, Serialize)]
    struct Ctx {
        rows: Rows<Row>,
    }

    /// The same context as minijinja would see it without `Rows`.
    #[derive(Debug, Serialize)]
    struct Plain {
        rows: Vec<Row>,
    }

    fn ctx() -> Ctx {
        Ctx {
            rows: rows().into(),
        }
    }

    fn rows() -> Vec<Row> {
        vec![
            Row {
                name: "a".into(),
                n: 1,
                extra: None,
            },
            Row {
                name: "b|c".into(),
                n: 2,
                extra: Some("x".into()),
            },
        ]
    }

    #[test]
    fn json_is_a_plain_list() {
        let json = serde_json::to_string(&ctx()).unwrap();
        assert_eq!(
            json,
            r#"{"rows":[{"name":"a","n":1},{"name":"b|c","n":2,"extra":"x"}]}"#
        );
    }

    #[test]
    fn templates_see_the_same_list_as_a_converted_one() {
        let source = "{{ rows | length }} {% for r in rows %}{{ r.name }}={{ r.n }}\
                      {% if r.extra is defined %}+{{ r.extra }}{% endif %}\
                      {% if not loop.last %},{% endif %}{% endfor %} last={{ rows[-1].name }} \
                      {{ rows | map(attribute='n') | sum }} {% if rows %}some{% endif %} {{ rows }}";
        let env = minijinja::Environment::new();
        let lazy = env
            .render_str(source, minijinja::value::Serde(&ctx()))
            .unwrap();
        let plain = env
            .render_str(source, minijinja::value::Serde(Plain { rows: rows() }))
            .unwrap();
        assert_eq!(lazy, plain);
        assert!(lazy.starts_with("2 a=1,b|c=2+x last=b|c 3 some"), "{lazy}");
    }
}

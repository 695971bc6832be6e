//! One journal line read as the few typed fields a replay needs, borrowed from the file's bytes:
//! no map, no owned string per key. A field of an unexpected JSON type reads as absent, exactly
//! as `Value::as_str`/`as_u64` did, so the replay's "missing; expected …" errors are unchanged;
//! a repeated key keeps its last value, as a JSON map would.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A JSON value reduced to what the replay looks at: text, a non-negative integer, or other.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) enum Scalar<'a> {
    Text(Cow<'a, str>),
    Unsigned(u64),
    #[default]
    Other,
}

impl<'a> Scalar<'a> {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Text(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::Unsigned(n) => Some(*n),
            _ => None,
        }
    }
}

/// The keys of a step, device or event line that the replay reads; every other key is skipped
/// without being built.
#[derive(Debug, Default)]
pub(super) struct Fields<'a> {
    pub(super) event: Option<Scalar<'a>>,
    pub(super) t: Option<Scalar<'a>>,
    pub(super) step: Option<Scalar<'a>>,
    pub(super) attempt: Option<Scalar<'a>>,
    pub(super) fingerprint: Option<Scalar<'a>>,
    pub(super) status: Option<Scalar<'a>>,
    pub(super) reason: Option<Scalar<'a>>,
    pub(super) samples: Option<Scalar<'a>>,
    pub(super) content: Option<Scalar<'a>>,
    pub(super) unit: Option<Scalar<'a>>,
    pub(super) cgroup: Option<Scalar<'a>>,
    pub(super) slurm_job_id: Option<Scalar<'a>>,
    pub(super) device: Option<Scalar<'a>>,
    pub(super) point: Option<Scalar<'a>>,
    pub(super) look: Option<Scalar<'a>>,
}

/// A parsed line: an object's fields, or some other JSON value (an error for the replay).
// One value per line, on the stack: boxing the fields would bring back an allocation per line.
#[allow(clippy::large_enum_variant)]
pub(super) enum Line<'a> {
    Object(Fields<'a>),
    NotObject,
}

/// Parse one terminated line. Syntax errors (and trailing garbage) are serde_json's errors.
pub(super) fn parse(raw: &[u8]) -> serde_json::Result<Line<'_>> {
    serde_json::from_slice(raw)
}

fn text<'a>(s: &str) -> Scalar<'a> {
    Scalar::Text(Cow::Owned(s.to_string()))
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(text(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Owned(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Unsigned(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).map_or(Scalar::Other, Scalar::Unsigned))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Fields::default();
        while let Some(key) = map.next_key::<Scalar<'de>>()? {
            let slot = match key.as_str() {
                Some("event") => &mut out.event,
                Some("t") => &mut out.t,
                Some("step") => &mut out.step,
                Some("attempt") => &mut out.attempt,
                Some("fingerprint") => &mut out.fingerprint,
                Some("status") => &mut out.status,
                Some("reason") => &mut out.reason,
                Some("samples") => &mut out.samples,
                Some("content") => &mut out.content,
                Some("unit") => &mut out.unit,
                Some("cgroup") => &mut out.cgroup,
                Some("slurm_job_id") => &mut out.slurm_job_id,
                Some("device") => &mut out.device,
                Some("point") => &mut out.point,
                Some("look") => &mut out.look,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(Line::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Line::NotObject)
    }
    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Line::NotObject)
    }
}

impl<'de> Deserialize<'de> for Line<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LineVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(raw: &str) -> Fields<'_> {
        match parse(raw.as_bytes()).unwrap() {
            Line::Object(f) => f,
            Line::NotObject => panic!("{raw} is an object"),
        }
    }

    #[test]
    fn reads_only_the_replay_keys_borrowing_plain_text() {
        let f = fields(
            r#"{"t":"x","event":"finished","step":"run:a\"b:host","attempt":2,"samples":7,"bundle":{"k":[1,2]},"fingerprint":"ab"}"#,
        );
        assert_eq!(f.event.as_ref().and_then(Scalar::as_str), Some("finished"));
        assert!(matches!(f.event, Some(Scalar::Text(Cow::Borrowed(_)))));
        // An escaped string cannot be borrowed and is decoded.
        assert_eq!(
            f.step.as_ref().and_then(Scalar::as_str),
            Some("run:a\"b:host")
        );
        assert_eq!(f.attempt.as_ref().and_then(Scalar::as_u64), Some(2));
        assert_eq!(f.samples.as_ref().and_then(Scalar::as_u64), Some(7));
        assert!(f.status.is_none() && f.unit.is_none());
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent_and_a_repeated_key_keeps_the_last() {
        let f = fields(r#"{"attempt":"2","samples":-1,"step":3,"event":"a","event":"b"}"#);
        assert_eq!(f.attempt.as_ref().and_then(Scalar::as_u64), None);
        assert_eq!(f.samples.as_ref().and_then(Scalar::as_u64), None);
        assert_eq!(f.step.as_ref().and_then(Scalar::as_str), None);
        assert_eq!(f.event.as_ref().and_then(Scalar::as_str), Some("b"));
    }

    #[test]
    fn other_values_are_not_objects_and_bad_json_is_an_error() {
        for raw in ["[1,{}]", "\"x\"", "3", "-3", "1.5", "true", "null"] {
            assert!(
                matches!(parse(raw.as_bytes()), Ok(Line::NotObject)),
                "{raw}"
            );
        }
        for raw in ["{\"a\":", "{} x", "{\"a\":1,}", ""] {
            assert!(parse(raw.as_bytes()).is_err(), "{raw}");
        }
    }
}

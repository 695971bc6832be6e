//! A SHA-256 of any `Serialize` value, fed its fields in a compact tagged binary form instead
//! of text: what the results files of a result set are a function of, digested in a fraction of
//! the time writing them as JSON and CSV takes (a 10,000-run set is 3 million floats, which as
//! text cost more to format than to hash).
//!
//! Owns only the encoding's injectivity: every value carries a tag, strings, byte strings and
//! sequences their length, structs and maps their keys (so a field skipped by
//! `skip_serializing_if` is told apart from a present one), and a map or sequence of unknown
//! length an end mark. A struct field's name is hashed in full the first time it is met and as
//! its number (in order of first meeting) after that — the stream still names every field, but
//! half a million samples do not hash their ten field names each. Floats are hashed by their bits, so any change of a value changes the
//! digest. No I/O.

use serde::ser::{self, Serialize};
use sha2::{Digest, Sha256};

/// The SHA-256 of `value` in the tagged encoding above.
pub(crate) fn digest<T: Serialize + ?Sized>(value: &T) -> [u8; 32] {
    let mut h = Hasher {
        sha: Sha256::new(),
        buf: Vec::with_capacity(BUF),
        fields: Vec::new(),
        next: 0,
    };
    // The encoding never fails: `Error` is only named because serde requires one.
    let _ = value.serialize(&mut h);
    h.flush();
    h.sha.finalize().into()
}

/// Bytes gathered before they are handed to SHA-256 in one call.
const BUF: usize = 1 << 16;

struct Hasher {
    sha: Sha256,
    buf: Vec<u8>,
    /// Field names met so far, by number (`field`).
    fields: Vec<&'static str>,
    /// The number the next field probably has: the one after the last (fields come in order).
    next: usize,
}

impl Hasher {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        if self.buf.len() + bytes.len() > BUF {
            self.flush();
        }
        if bytes.len() > BUF {
            self.sha.update(bytes);
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn flush(&mut self) {
        self.sha.update(&self.buf);
        self.buf.clear();
    }

    #[inline]
    fn tag(&mut self, tag: u8) {
        self.put(&[tag]);
    }

    #[inline]
    fn len(&mut self, n: usize) {
        self.put(&(n as u64).to_le_bytes());
    }

    fn text(&mut self, tag: u8, s: &[u8]) {
        self.tag(tag);
        self.len(s.len());
        self.put(s);
    }

    /// A struct field's name (`tag` FIELD or SKIPPED): in full the first time, with the number
    /// it gets; its number after that.
    fn field(&mut self, tag: u8, key: &'static str) {
        let known = match self.fields.get(self.next) {
            Some(k) if k.as_ptr() == key.as_ptr() && k.len() == key.len() => Some(self.next),
            _ => (self.fields.iter())
                .position(|k| k.as_ptr() == key.as_ptr() && k.len() == key.len()),
        };
        let number = match known {
            Some(n) => n,
            None => {
                // New (or the same text at another address: named again, still unambiguous).
                self.text(NEW_FIELD, key.as_bytes());
                self.fields.push(key);
                self.fields.len() - 1
            }
        };
        self.next = number + 1;
        self.tag(tag);
        self.put(&(number as u32).to_le_bytes());
    }

    /// A container's start: its length, or the mark of an unknown one (closed by `END`).
    fn open(&mut self, tag: u8, len: Option<usize>) {
        self.tag(tag);
        match len {
            Some(n) => self.len(n),
            None => self.tag(UNSIZED),
        }
    }
}

// One tag per kind of value.
const UNIT: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const UINT: u8 = 3;
const FLOAT: u8 = 4;
const CHAR: u8 = 5;
const STR: u8 = 6;
const BYTES: u8 = 7;
const NONE: u8 = 8;
const SOME: u8 = 9;
const VARIANT: u8 = 10;
const SEQ: u8 = 11;
const MAP: u8 = 12;
const STRUCT: u8 = 13;
const FIELD: u8 = 14;
const SKIPPED: u8 = 15;
const NEWTYPE: u8 = 16;
const UNSIZED: u8 = 17;
const END: u8 = 18;
const NEW_FIELD: u8 = 19;

#[derive(Debug)]
struct Never(String);

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Never(msg.to_string())
    }
}

type R = Result<(), Never>;

impl ser::Serializer for &mut Hasher {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> R {
        self.put(&[BOOL, u8::from(v)]);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> R {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> R {
        self.tag(INT);
        self.put(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> R {
        self.tag(INT);
        self.put(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> R {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> R {
        self.tag(UINT);
        self.put(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> R {
        self.tag(UINT);
        self.put(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> R {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.tag(FLOAT);
        self.put(&v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.tag(CHAR);
        self.put(&u32::from(v).to_le_bytes());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> R {
        self.text(STR, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.text(BYTES, v);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.tag(NONE);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
        self.tag(SOME);
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.tag(UNIT);
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> R {
        self.text(UNIT, name.as_bytes());
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.text(VARIANT, variant.as_bytes());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, value: &T) -> R {
        self.text(NEWTYPE, name.as_bytes());
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> R {
        self.text(VARIANT, variant.as_bytes());
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, Never> {
        self.open(SEQ, len);
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self, Never> {
        self.open(SEQ, Some(len));
        Ok(self)
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<Self, Never> {
        self.text(NEWTYPE, name.as_bytes());
        self.open(SEQ, Some(len));
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, Never> {
        self.text(VARIANT, variant.as_bytes());
        self.open(SEQ, Some(len));
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self, Never> {
        self.open(MAP, len);
        Ok(self)
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Self, Never> {
        // Fields are keyed and the struct closed by `END`: a skipped field is its own mark.
        self.text(STRUCT, name.as_bytes());
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        self.text(VARIANT, variant.as_bytes());
        self.tag(STRUCT);
        Ok(self)
    }
}

impl ser::SerializeSeq for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeTuple for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeTupleStruct for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeTupleVariant for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeMap for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> R {
        self.field(FIELD, key);
        value.serialize(&mut **self)
    }
    fn skip_field(&mut self, key: &'static str) -> R {
        self.field(SKIPPED, key);
        Ok(())
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Hasher {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> R {
        self.field(FIELD, key);
        value.serialize(&mut **self)
    }
    fn skip_field(&mut self, key: &'static str) -> R {
        self.field(SKIPPED, key);
        Ok(())
    }
    fn end(self) -> R {
        self.tag(END);
        Ok(())
    }
}

/// The digest of what a run's bundle holds — its status, reason and every sample value, as
/// written and as `store::load` reads them back — in 16 hex digits: the `content` of its
/// journal `finished` line, which `resume --verify` checks against the bundle, so an edited
/// value (an `execute_s` ×1000, a status flipped) is found, not only a changed count.
pub(crate) fn bundle_digest(result: &crate::model::results::RunResult) -> String {
    let sum = digest(&(result.status, &result.error, &result.samples));
    crate::model::digest::hex_prefix(&sum, 8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize, Clone)]
    struct Row {
        a: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        b: Option<f64>,
        names: Vec<String>,
        means: BTreeMap<String, f64>,
    }

    fn row() -> Row {
        Row {
            a: Some(1.5),
            b: None,
            names: vec!["ab".into(), "c".into()],
            means: [("init".to_string(), 0.25)].into(),
        }
    }

    #[test]
    fn equal_values_have_equal_digests_and_any_change_changes_it() {
        assert_eq!(digest(&row()), digest(&row()));
        let base = digest(&row());
        let changes: Vec<Row> = vec![
            Row { a: None, ..row() },
            Row {
                b: Some(1.5),
                ..row()
            },
            // The same bytes split differently between two strings.
            Row {
                names: vec!["a".into(), "bc".into()],
                ..row()
            },
            Row {
                means: [("init".to_string(), 0.25000000000000006)].into(),
                ..row()
            },
            // -0.0 and 0.0 print alike in some writers but are different values.
            Row {
                a: Some(-0.0),
                ..row()
            },
        ];
        let mut seen = vec![base];
        for (i, r) in changes.iter().enumerate() {
            let d = digest(r);
            assert!(!seen.contains(&d), "change {i} collides");
            seen.push(d);
        }
        assert_ne!(
            digest(&Row {
                a: Some(0.0),
                ..row()
            }),
            digest(&Row {
                a: Some(-0.0),
                ..row()
            })
        );
    }

    #[test]
    fn a_value_in_one_field_is_not_the_same_value_in_the_next() {
        // `b` present and `a` absent must not equal `a` present and `b` absent.
        let one = Row {
            a: None,
            b: Some(2.0),
            ..row()
        };
        let other = Row {
            a: Some(2.0),
            b: None,
            ..row()
        };
        assert_ne!(digest(&one), digest(&other));
    }

    #[test]
    fn long_values_cross_the_buffer_without_changing_the_digest_of_equal_data() {
        let long: Vec<f64> = (0..100_000).map(|i| f64::from(i) * 0.5).collect();
        let mut other = long.clone();
        assert_eq!(digest(&long), digest(&other));
        other[99_999] = 1.0;
        assert_ne!(digest(&long), digest(&other));
        let text = "x".repeat(BUF * 2 + 3);
        assert_ne!(digest(&text), digest(&"x".repeat(BUF * 2 + 4)));
    }
}

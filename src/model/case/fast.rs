//! Fast writers of a case's `case_id` and `equivalence_hash`, for listings of millions of cases
//! (`dry-run`).
//!
//! `case.rs` owns both definitions (the hash is Python's `json.dumps(sort_keys=True,
//! separators=(",", ":"))` over every field plus the derived ones); building a
//! `serde_json::Value` and sorting it per case costs ~20 µs, which made a million-case dry-run
//! take 20 s. This writes the same bytes straight into reused buffers. The tests (and a property
//! test) hold it byte-identical to `case.rs`; it must never define anything of its own.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::model::case::{canonical_json, Case};

/// Reusable buffers; one per listing.
#[derive(Debug, Default)]
pub(crate) struct Hasher {
    buf: Vec<u8>,
    id: Vec<u8>,
    /// The first SHA-256 block of the last canonical text and the state after it: the text
    /// starts with keys in sorted order, so consecutive cases nearly always share those 64
    /// bytes, and hashing them once saves one block of about seven per case.
    first_block: Option<([u8; 64], Sha256)>,
}

impl Hasher {
    /// The same text as `case.case_id()`, borrowed until the next call.
    pub(crate) fn case_id(&mut self, c: &Case) -> &str {
        let id = &mut self.id;
        id.clear();
        if !c.op.is_allreduce() {
            id.extend_from_slice(c.op.as_str().as_bytes());
            id.push(b'_');
        }
        id.extend_from_slice(c.variant.as_str().as_bytes());
        id.extend_from_slice("_p".as_bytes());
        push_u64(id, u64::from(c.p));
        id.extend_from_slice("_count".as_bytes());
        push_u64(id, c.count);
        id.push(b'_');
        id.extend_from_slice(c.dtype.as_str().as_bytes());
        id.push(b'_');
        id.extend_from_slice(c.platform.as_str().as_bytes());
        id.extend_from_slice("_d".as_bytes());
        for (i, d) in c.device_ids.iter().enumerate() {
            if i > 0 {
                id.push(b'-');
            }
            push_u64(id, u64::from(*d));
        }
        if c.core_num != 1 {
            id.extend_from_slice("_cn".as_bytes());
            push_u64(id, u64::from(c.core_num));
        }
        if c.nodes != 1 {
            id.extend_from_slice("_n".as_bytes());
            push_u64(id, u64::from(c.nodes));
        }
        if !c.placement.is_pack() {
            id.push(b'_');
            id.extend_from_slice(c.placement.as_str().as_bytes());
        }
        if let Some(root) = c.root.filter(|r| *r != 0) {
            id.extend_from_slice("_root".as_bytes());
            push_u64(id, u64::from(root));
        }
        // Only ASCII was written (enum spellings, digits, separators).
        std::str::from_utf8(id).unwrap_or_default()
    }

    /// The same 16 hex digits as `case.equivalence_hash_reference()`.
    pub(crate) fn equivalence_hash(&mut self, case: &Case) -> String {
        self.buf.clear();
        write_canonical(&mut self.buf, case);
        let Some((head, rest)) = self.buf.split_first_chunk::<64>() else {
            return hex16(&Sha256::digest(&self.buf)[..8]);
        };
        let mut sha = match &self.first_block {
            Some((block, state)) if block == head => state.clone(),
            _ => {
                let mut state = Sha256::new();
                state.update(head);
                self.first_block = Some((*head, state.clone()));
                state
            }
        };
        sha.update(rest);
        hex16(&sha.finalize()[..8])
    }
}

/// Most distinct cases one thread's memo holds before it starts over (≈ 8 MiB: an entry is
/// about 40 bytes); a campaign of more cases than this still hashes each run at most once per
/// rewrite, as before the memo.
const MEMO_CAP: usize = 200_000;

/// What the memo keys a case's canonical text by: two independently keyed 64-bit SipHashes of
/// it and its length — a few bytes instead of the text itself (~450 bytes, which made the memo
/// the engine's largest per-run record). A hit is another text's hash only if two texts of the
/// same length collide on both hashes, whose keys are random per process: about N² / 2¹²⁹ for
/// N cases, never in practice.
type MemoKey = (u64, u64, usize);

/// A thread's memo: reused buffers, the two hash keys, and text key → the hash's 16 hex digits.
#[derive(Default)]
struct Memo {
    hasher: Hasher,
    keys: [std::hash::RandomState; 2],
    hashes: std::collections::HashMap<MemoKey, [u8; 16]>,
}

impl Memo {
    fn key(&self, text: &[u8]) -> MemoKey {
        use std::hash::BuildHasher;
        let [a, b] = &self.keys;
        (a.hash_one(text), b.hash_one(text), text.len())
    }
}

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::new(Default::default());
}

/// `case.equivalence_hash()` through a per-thread memo keyed by the canonical bytes' digest
/// ([`MemoKey`]).
pub(crate) fn memo_equivalence_hash(case: &Case) -> String {
    MEMO.with(|cell| {
        let memo = &mut *cell.borrow_mut();
        memo.hasher.buf.clear();
        write_canonical(&mut memo.hasher.buf, case);
        let key = memo.key(&memo.hasher.buf);
        if let Some(hex) = memo.hashes.get(&key) {
            return String::from_utf8_lossy(hex).into_owned();
        }
        let digest = Sha256::digest(&memo.hasher.buf);
        let hex = hex16(&digest[..8]);
        if memo.hashes.len() >= MEMO_CAP {
            memo.hashes.clear();
        }
        let mut value = [0u8; 16];
        value.copy_from_slice(hex.as_bytes());
        memo.hashes.insert(key, value);
        hex
    })
}

/// 16 lowercase hex digits of 8 bytes.
fn hex16(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(16);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// Keys in Python's sorted order (code points), each with its value. Each key is written as
/// one literal with its quotes, colon and leading comma: copies of a known length, which the
/// compiler turns into a few moves instead of a `memcpy` call per piece.
fn write_canonical(out: &mut Vec<u8>, c: &Case) {
    out.reserve(512);
    out.push(b'{');
    out.extend_from_slice(br#""aicpu_thread_num":"#);
    opt(out, c.aicpu_thread_num);
    out.extend_from_slice(br#","block_dim":"#);
    opt(out, c.block_dim);
    out.extend_from_slice(br#","bytes_per_rank_per_round":"#);
    num(out, c.bytes_per_rank_per_round());
    out.extend_from_slice(br#","core_num":"#);
    num(out, c.core_num);
    out.extend_from_slice(br#","count":"#);
    num(out, c.count);
    out.extend_from_slice(br#","device_ids":"#);
    out.push(b'[');
    for (i, d) in c.device_ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        num(out, *d);
    }
    out.push(b']');
    out.extend_from_slice(br#","dtype":"#);
    string(out, c.dtype.as_str());
    out.extend_from_slice(br#","golden":"#);
    string(out, &c.golden);
    out.extend_from_slice(br#","input_formula":"#);
    string(out, &c.input_formula);
    out.extend_from_slice(br#","measure":"#);
    string(out, &c.measure);
    out.extend_from_slice(br#","n_bytes":"#);
    num(out, c.n_bytes());
    // Layout fields only off their defaults (as the serde form leaves them out).
    if c.nodes != 1 {
        out.extend_from_slice(br#","nodes":"#);
        num(out, c.nodes);
    }
    // Absent for allreduce (the seed's bytes); present for every other op.
    if !c.op.is_allreduce() {
        out.extend_from_slice(br#","op":"#);
        string(out, c.op.as_str());
    }
    out.extend_from_slice(br#","orch_profile":"#);
    string(out, &c.orch_profile);
    out.extend_from_slice(br#","orch_tier":"#);
    string(out, &c.orch_tier);
    out.extend_from_slice(br#","p":"#);
    num(out, c.p);
    if !c.placement.is_pack() {
        out.extend_from_slice(br#","placement":"#);
        string(out, c.placement.as_str());
    }
    out.extend_from_slice(br#","platform":"#);
    string(out, c.platform.as_str());
    if c.ranks_per_node != 0 {
        out.extend_from_slice(br#","ranks_per_node":"#);
        num(out, c.ranks_per_node);
    }
    if let Some(root) = c.root {
        out.extend_from_slice(br#","root":"#);
        num(out, root);
    }
    out.extend_from_slice(br#","runtime":"#);
    string(out, &c.runtime);
    out.extend_from_slice(br#","size_tier":"#);
    string(out, c.size_tier());
    out.extend_from_slice(br#","timed_rounds":"#);
    num(out, c.timed_rounds);
    out.extend_from_slice(br#","variant":"#);
    string(out, c.variant.as_str());
    out.extend_from_slice(br#","warmup_rounds":"#);
    num(out, c.warmup_rounds);
    out.extend_from_slice(br#","window_nbytes":"#);
    num(out, c.window_nbytes());
    out.push(b'}');
}

fn num(out: &mut Vec<u8>, n: impl Into<u64>) {
    push_u64(out, n.into());
}

fn opt(out: &mut Vec<u8>, n: Option<i64>) {
    match n {
        Some(n) if n < 0 => {
            out.push(b'-');
            push_u64(out, n.unsigned_abs());
        }
        Some(n) => push_u64(out, n as u64),
        None => out.extend_from_slice(b"null"),
    }
}

/// Decimal digits of `n` (what `Display` writes), without going through `core::fmt`.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Byte by byte: numbers are short, and a copy of unknown length is a `memcpy` call.
    for &d in &digits[i..] {
        out.push(d);
    }
}

/// Plain printable ASCII without quotes or backslashes is written as is; anything else goes
/// through `case.rs`'s own escaping so the bytes cannot differ.
fn string(out: &mut Vec<u8>, s: &str) {
    let plain = s
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(canonical_json(&Value::String(s.to_string())).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Dtype, Platform, Variant};
    use proptest::prelude::*;

    #[test]
    fn matches_the_reference_vector() {
        let mut c = Case::new(Variant::Mesh, 2, 256);
        c.timed_rounds = 50;
        assert_eq!(Hasher::default().equivalence_hash(&c), "4ca59d34ec615378");
    }

    /// One hasher over cases whose first 64 canonical bytes change and stay alike (the
    /// cached first block must be used only when they are the same).
    #[test]
    fn a_reused_hasher_matches_the_reference_for_every_case() {
        let mut h = Hasher::default();
        for i in 0..40u64 {
            let mut c = Case::new(Variant::Ring, 2 + (i % 3) as u32, 64 + i);
            c.block_dim = [None, Some(-1), Some(7), None][(i % 4) as usize];
            c.aicpu_thread_num = (i % 5 == 0).then_some(4);
            c.runtime = "x".repeat((i % 7) as usize);
            assert_eq!(
                h.equivalence_hash(&c),
                c.equivalence_hash_reference(),
                "case {i}"
            );
        }
    }

    /// The memo answers every case with its own hash, whether seen before or not: cases that
    /// differ in one field only, asked for twice, interleaved.
    #[test]
    fn the_memo_gives_each_case_its_own_hash() {
        let cases: Vec<Case> = (0..200u64)
            .map(|i| {
                let mut c = Case::new(Variant::Mesh, 2, 1 + i / 2);
                c.timed_rounds = 1 + (i % 2) as u32;
                c
            })
            .collect();
        for _ in 0..2 {
            for c in cases.iter().rev().chain(&cases) {
                assert_eq!(memo_equivalence_hash(c), c.equivalence_hash_reference());
            }
        }
        let distinct: std::collections::BTreeSet<String> =
            cases.iter().map(memo_equivalence_hash).collect();
        assert_eq!(distinct.len(), cases.len());
    }

    proptest! {
        #[test]
        fn byte_identical_to_case_rs(
            v in 0usize..3, p in 2u32..40, count in 1u64..5_000_000, d in 0usize..4, pl in 0usize..5,
            runtime in "\\PC{0,12}", measure in "[ -~]{0,8}", block in proptest::option::of(-5i64..1000),
            core in 1u32..4, ids in proptest::collection::vec(0u32..100, 0..10), w in 0u32..9, t in 1u32..60,
            op in 0usize..6, root in proptest::option::of(0u32..5),
        ) {
            let variants = [Variant::Mesh, Variant::Ring, Variant::Twophase];
            let dtypes = [Dtype::Fp32, Dtype::Fp16, Dtype::Bf16, Dtype::Int32];
            let platforms = [Platform::A2a3, Platform::A2a3sim, Platform::A5, Platform::A5sim, Platform::Host];
            let mut c = Case::new(variants[v], p, count);
            c.dtype = dtypes[d];
            c.platform = platforms[pl];
            c.runtime = runtime;
            c.measure = measure;
            c.block_dim = block;
            c.core_num = core;
            c.device_ids = ids;
            c.warmup_rounds = w;
            c.timed_rounds = t;
            c = c.with_op(crate::model::case::Op::EVERY[op]);
            if c.root.is_some() {
                c.root = root.or(c.root);
            }
            let mut h = Hasher::default();
            prop_assert_eq!(h.equivalence_hash(&c), c.equivalence_hash_reference());
            prop_assert_eq!(c.equivalence_hash(), c.equivalence_hash_reference());
            prop_assert_eq!(h.case_id(&c), c.case_id());
        }
    }
}

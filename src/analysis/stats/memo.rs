//! Bootstrap intervals remembered between reports of the same run dir, so re-rendering a report
//! does not resample (the bootstrap is the largest share of a 10,000-run report's statistics).
//!
//! A set of hierarchical draws is a pure function of its inputs — the sorted repeats, the seed,
//! the number of resamples and the stream key — so it is named by a digest of them
//! ([`Resampling`]), and every interval drawn from draws is named by the digests of its draws
//! (and, for a ratio, its confidence level). The memo maps those names to intervals: a hit
//! gives the very bits the draws would give, and the draws themselves are then never made
//! (they are drawn lazily, on the first miss that needs them). Changed data, seed or resample
//! count name different draws and simply miss. The history ingest that records a new run dir
//! takes its series points' intervals from the same memo, after the report's statistics were
//! drawn into it, so a first report resamples each (case, stack) once, not twice.
//!
//! Owns the memo's byte format: a magic line, a version, the entries, and a SHA-256 of all of
//! it; anything that is not exactly that (truncated, flipped, another file) reads as an empty
//! memo. Pure: bytes in, bytes out; the report room reads and writes the file.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::bootstrap::{self, Bootstrap, Interval};
use super::hierarchical;

/// The name of a set of draws or of an interval: the first 16 bytes of a SHA-256.
type Name = [u8; 16];

fn name(parts: &[&[u8]]) -> Name {
    let mut sha = Sha256::new();
    for p in parts {
        sha.update((p.len() as u64).to_le_bytes());
        sha.update(p);
    }
    let full: [u8; 32] = sha.finalize().into();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// The hierarchical bootstrap of one side's sorted repeats: the repeats, the name of their
/// draws, and the draws once something needs them.
pub(crate) struct Resampling {
    pub(crate) repeats: Vec<Vec<f64>>,
    boot: Bootstrap,
    key: String,
    id: Name,
    /// Has an estimate (every repeat non-empty, at least one): the draws are not empty.
    drawable: bool,
    draws: OnceLock<Vec<f64>>,
}

impl std::fmt::Debug for Resampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resampling")
            .field("key", &self.key)
            .field("repeats", &self.repeats)
            .finish()
    }
}

impl Resampling {
    /// The draws `boot.hierarchical_draws(&repeats, &key)` would give, not drawn yet.
    pub(crate) fn new(boot: &Bootstrap, repeats: Vec<Vec<f64>>, key: String) -> Resampling {
        let mut values = Vec::with_capacity(8 * repeats.iter().map(Vec::len).sum::<usize>());
        let mut lens = Vec::with_capacity(8 * repeats.len());
        for r in &repeats {
            lens.extend_from_slice(&(r.len() as u64).to_le_bytes());
            for x in r {
                values.extend_from_slice(&x.to_bits().to_le_bytes());
            }
        }
        let id = name(&[
            b"hierarchical draws 1",
            &boot.seed.to_le_bytes(),
            &boot.resamples.to_le_bytes(),
            key.as_bytes(),
            &lens,
            &values,
        ]);
        Resampling {
            drawable: hierarchical::estimate(&repeats).is_some(),
            repeats,
            boot: *boot,
            key,
            id,
            draws: OnceLock::new(),
        }
    }

    /// No draws can be made (no repeat, or an empty one).
    pub(crate) fn is_empty(&self) -> bool {
        !self.drawable
    }

    /// The draws, made on first use.
    pub(crate) fn draws(&self) -> &[f64] {
        self.draws
            .get_or_init(|| self.boot.hierarchical_draws(&self.repeats, &self.key))
    }
}

/// Intervals by name: those a memo file held, those used in this process (the report's, and the
/// history ingest's of the same run dir: one memo serves both), and how many it drew.
#[derive(Default)]
pub(crate) struct Memo {
    known: HashMap<Name, Interval>,
    used: Mutex<HashMap<Name, Interval>>,
    drawn: AtomicUsize,
}

/// The first line of a memo file.
const MAGIC: &[u8] = b"campaign bootstrap memo\n";
const VERSION: u32 = 1;
/// Bytes per entry: name, lo, hi.
const ENTRY: usize = 16 + 8 + 8;

impl Memo {
    /// The 95 % percentile interval of `s`'s draws (`bootstrap::interval`).
    pub(crate) fn interval(&self, s: &Resampling) -> Interval {
        let estimate = hierarchical::estimate(&s.repeats);
        self.remember(name(&[b"interval", &s.id]), estimate, || {
            bootstrap::interval(s.draws())
        })
    }

    /// The percentile interval at `level` of `median(a) / median(b)` over their paired draws
    /// (`bootstrap::ratio_interval_at`).
    pub(crate) fn ratio(&self, a: &Resampling, b: &Resampling, level: f64) -> Interval {
        let key = name(&[b"ratio", &a.id, &b.id, &level.to_bits().to_le_bytes()]);
        let estimate = hierarchical::estimate(&a.repeats)
            .zip(hierarchical::estimate(&b.repeats))
            .map(|(x, y)| x / y);
        self.remember(key, estimate, || {
            bootstrap::ratio_interval_at(a.draws(), b.draws(), level)
        })
    }

    /// The interval named `key`: the memo's when it is one the draws could have given — finite,
    /// `lo ≤ hi`, holding the point `estimate` — else drawn. A memo is a file anyone can edit
    /// and re-sign (its checksum proves only that it is whole), so what it holds is checked
    /// before a report prints it (issue 43, item 6).
    fn remember(
        &self,
        key: Name,
        estimate: Option<f64>,
        draw: impl FnOnce() -> Interval,
    ) -> Interval {
        let plausible = |v: &Interval| {
            v.lo.is_finite()
                && v.hi.is_finite()
                && v.lo <= v.hi
                && estimate.is_none_or(|m| !m.is_finite() || (v.lo <= m && m <= v.hi))
        };
        let used = || self.used.lock().unwrap_or_else(|e| e.into_inner());
        // Else one drawn earlier in this process (the report's statistics, drawn before the
        // history ingest asks for the same intervals): the very bits again.
        let held = (self.known.get(&key).copied())
            .filter(plausible)
            .or_else(|| used().get(&key).copied());
        let value = held.unwrap_or_else(|| {
            self.drawn.fetch_add(1, Ordering::Relaxed);
            draw()
        });
        used().insert(key, value);
        value
    }

    /// How many intervals were not in the memo and were drawn.
    pub(crate) fn drawn(&self) -> usize {
        self.drawn.load(Ordering::Relaxed)
    }

    /// Does the memo to keep (the intervals this report used) differ from the one read?
    pub(crate) fn changed(&self) -> bool {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        self.drawn() > 0 || used.len() != self.known.len()
    }

    /// The memo read from `bytes`; empty unless they are exactly a memo of this version.
    pub(crate) fn decode(bytes: &[u8]) -> Memo {
        Memo {
            known: decode_entries(bytes).unwrap_or_default(),
            ..Memo::default()
        }
    }

    /// The intervals this report used, as the bytes of a memo file (entries in name order, so
    /// equal memos are equal files).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let mut entries: Vec<(&Name, &Interval)> = used.iter().collect();
        entries.sort_by_key(|(k, _)| **k);
        let mut out = Vec::with_capacity(MAGIC.len() + 12 + entries.len() * ENTRY + 32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (k, v) in entries {
            out.extend_from_slice(k);
            out.extend_from_slice(&v.lo.to_bits().to_le_bytes());
            out.extend_from_slice(&v.hi.to_bits().to_le_bytes());
        }
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum);
        out
    }
}

fn decode_entries(bytes: &[u8]) -> Option<HashMap<Name, Interval>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if Sha256::digest(body).as_slice() != sum {
        return None;
    }
    let rest = body.strip_prefix(MAGIC)?;
    let (version, rest) = rest.split_at_checked(4)?;
    let (count, rest) = rest.split_at_checked(8)?;
    if u32::from_le_bytes(version.try_into().ok()?) != VERSION {
        return None;
    }
    let count = usize::try_from(u64::from_le_bytes(count.try_into().ok()?)).ok()?;
    if rest.len() != count.checked_mul(ENTRY)? {
        return None;
    }
    let word = |b: &[u8]| f64::from_bits(u64::from_le_bytes(b.try_into().unwrap_or_default()));
    Some(
        rest.chunks_exact(ENTRY)
            .map(|e| {
                let mut k = [0u8; 16];
                k.copy_from_slice(&e[..16]);
                let interval = Interval {
                    lo: word(&e[16..24]),
                    hi: word(&e[24..32]),
                };
                (k, interval)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sides() -> (Resampling, Resampling) {
        let boot = Bootstrap {
            resamples: 300,
            seed: 11,
        };
        let a: Vec<Vec<f64>> = vec![(1..=40).map(|i| 1.0 + f64::from(i % 7) * 0.01).collect()];
        let b: Vec<Vec<f64>> = vec![
            (1..=30).map(|i| 2.0 + f64::from(i % 5) * 0.02).collect(),
            (1..=30).map(|i| 2.1 + f64::from(i % 3) * 0.02).collect(),
        ];
        (
            Resampling::new(&boot, a, "c/a".into()),
            Resampling::new(&boot, b, "c/b".into()),
        )
    }

    fn bits(i: Interval) -> (u64, u64) {
        (i.lo.to_bits(), i.hi.to_bits())
    }

    /// A re-signed memo holding an interval no draws could give (not finite, lo > hi, or not
    /// holding its own estimate) is a miss: the interval is drawn again.
    #[test]
    fn implausible_remembered_intervals_are_drawn_again() {
        let (a, b) = sides();
        let fresh = Memo::default();
        let want = (fresh.interval(&a), fresh.ratio(&a, &b, 0.99));
        let keys = [
            name(&[b"interval", &a.id]),
            name(&[b"ratio", &a.id, &b.id, &0.99f64.to_bits().to_le_bytes()]),
        ];
        for bad in [
            Interval {
                lo: f64::NAN,
                hi: 1.0,
            },
            Interval {
                lo: 0.0,
                hi: f64::INFINITY,
            },
            Interval { lo: 3.0, hi: 0.1 },
            Interval {
                lo: 100.0,
                hi: 200.0,
            },
        ] {
            let forged = Memo::default();
            forged
                .used
                .lock()
                .unwrap()
                .extend(keys.iter().map(|k| (*k, bad)));
            // Encoding signs it: the checksum holds, the values do not.
            let memo = Memo::decode(&forged.encode());
            assert_eq!(memo.known.len(), 2);
            assert_eq!(bits(memo.interval(&a)), bits(want.0), "{bad:?}");
            assert_eq!(bits(memo.ratio(&a, &b, 0.99)), bits(want.1), "{bad:?}");
            assert_eq!(memo.drawn(), 2, "{bad:?}");
        }
    }

    #[test]
    fn remembered_intervals_are_bit_identical_and_need_no_draws() {
        let (a, b) = sides();
        let fresh = Memo::default();
        let want = (fresh.interval(&a), fresh.ratio(&a, &b, 0.99));
        assert_eq!(
            bits(want.0),
            bits(bootstrap::interval(
                &Bootstrap {
                    resamples: 300,
                    seed: 11
                }
                .hierarchical_draws(&a.repeats, "c/a")
            ))
        );
        assert_eq!(fresh.drawn(), 2);
        assert!(fresh.changed());
        let memo = Memo::decode(&fresh.encode());
        let (a, b) = sides();
        let got = (memo.interval(&a), memo.ratio(&a, &b, 0.99));
        assert_eq!((bits(got.0), bits(got.1)), (bits(want.0), bits(want.1)));
        assert_eq!(memo.drawn(), 0);
        // Nothing was drawn: the draws of neither side were ever made.
        assert!(a.draws.get().is_none() && b.draws.get().is_none());
        assert!(!memo.changed());
        // Another level is another interval.
        memo.ratio(&a, &b, 0.95);
        assert_eq!(memo.drawn(), 1);
    }

    #[test]
    fn other_data_seed_or_resamples_miss() {
        let (a, _) = sides();
        let memo = Memo::default();
        memo.interval(&a);
        let memo = Memo::decode(&memo.encode());
        let mut moved = a.repeats.clone();
        moved[0][0] += 1e-12;
        for boot in [
            Bootstrap {
                resamples: 300,
                seed: 11,
            },
            Bootstrap {
                resamples: 301,
                seed: 11,
            },
            Bootstrap {
                resamples: 300,
                seed: 12,
            },
        ] {
            let data = if boot.resamples == 300 && boot.seed == 11 {
                moved.clone()
            } else {
                a.repeats.clone()
            };
            memo.interval(&Resampling::new(&boot, data, "c/a".into()));
        }
        assert_eq!(memo.drawn(), 3);
    }

    #[test]
    fn a_damaged_or_foreign_memo_is_empty() {
        let (a, b) = sides();
        let memo = Memo::default();
        let want = memo.ratio(&a, &b, 0.95);
        let good = memo.encode();
        let mut flipped = good.clone();
        flipped[MAGIC.len() + 20] ^= 1;
        let truncated = &good[..good.len() - 1];
        let foreign = b"{\"not\": \"a memo\"}\n".to_vec();
        for bytes in [flipped.as_slice(), truncated, &foreign, &[], &good[..10]] {
            let m = Memo::decode(bytes);
            assert!(m.known.is_empty());
            assert_eq!(bits(m.ratio(&a, &b, 0.95)), bits(want));
            assert_eq!(m.drawn(), 1);
        }
        assert_eq!(Memo::decode(&good).known.len(), 1);
    }
}

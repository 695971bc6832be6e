//! The one hex encoder: short names made from SHA-256 digests.
//!
//! Unit ids, slot names, run and stack fingerprints, plan and case hashes, the session context
//! and host fingerprints are all the first bytes of a SHA-256 digest in lower-case hex. Journals,
//! run dirs and the history store hold these strings, so they must never change spelling:
//! every one of them is made here (`hex::encode`, two lower-case digits per byte).

use sha2::{Digest, Sha256};

/// The first `bytes` bytes of `digest` as `2 × bytes` lower-case hex digits.
pub(crate) fn hex_prefix(digest: &[u8], bytes: usize) -> String {
    hex::encode(&digest[..bytes.min(digest.len())])
}

/// The first `bytes` bytes of SHA-256 over `data`, in lower-case hex.
pub(crate) fn sha256_hex(data: &[u8], bytes: usize) -> String {
    hex_prefix(&Sha256::digest(data), bytes)
}

/// Short, stable identity of the machine: host name and CPU model (the history's series and
/// calibrations are kept per machine). Old harness dirs recorded neither and share the
/// fingerprint `unknown`.
pub fn host_fingerprint(host: &str, cpu: &str) -> String {
    if host.is_empty() && cpu.is_empty() {
        return "unknown".to_string();
    }
    sha256_hex(format!("{host}\n{cpu}").as_bytes(), 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spelling the journals already hold: two lower-case digits per byte, zero-padded.
    #[test]
    fn spells_bytes_as_the_old_loops_did() {
        let digest = Sha256::digest(b"campaign");
        let old: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        for n in [6, 8, 16, 32] {
            assert_eq!(hex_prefix(&digest, n), old[..2 * n]);
            assert_eq!(sha256_hex(b"campaign", n), old[..2 * n]);
        }
        assert_eq!(hex_prefix(&[0x00, 0x0a, 0xff], 3), "000aff");
        assert_eq!(hex_prefix(&[1, 2], 8), "0102");
    }
}

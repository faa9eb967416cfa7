//! Keys and values of the YCSB table.
//!
//! **Keys** are YCSB's (`CoreWorkload.buildKeyName` with its defaults, hashed inserts and no
//! zero padding): `user` followed by the decimal digits of `fnvhash64(ordinal)`, the FNV-1a
//! hash of the record's ordinal with Java's `Math.abs` applied, so consecutive ordinals land
//! all over the key space and a scan (workload E) reads records of unrelated ordinals. The keys
//! of the ordinals `0..100,000,000` (the most a configuration accepts) are 15 to 23 bytes long
//! and distinct: the hash is not proven injective, so a test checks them all (ignored by
//! default; `docs/ycsb.md`).
//!
//! **Values** are a 24-byte header and then the fields (YCSB: 10 fields of 100 bytes of random
//! characters; here random bytes), one value per record. The header makes a value
//! self-describing, so that damage is found: bytes 0..8 the record's ordinal, 8..16 a stamp
//! naming the write (0 from the loader; else the writing worker's stream and its write count),
//! 16..24 a checksum of the other bytes, all little-endian.

use rand::RngCore;
use std::io::Write;

use super::generator::fnv64;
use crate::workloads::WorkloadError;

/// The YCSB table's tree.
pub const TABLE: &str = "ycsb-usertable";

/// Bytes of a value's header.
pub const HEADER: usize = 24;

/// YCSB's key number of `ordinal`: `Math.abs(fnvhash64(ordinal))` (which leaves `i64::MIN` as
/// it is).
#[must_use]
pub fn key_number(ordinal: u64) -> i64 {
    (fnv64(ordinal) as i64).wrapping_abs()
}

/// Writes the key of record `ordinal` into `buf`.
pub fn key_into(ordinal: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(b"user");
    // Writing to a Vec cannot fail.
    let _ = write!(buf, "{}", key_number(ordinal));
}

/// The key of record `ordinal`.
#[must_use]
pub fn key(ordinal: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    key_into(ordinal, &mut k);
    k
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// The checksum of a value: a multiply-rotate hash over its 8-byte words, header's checksum
/// field left out. A change confined to one word always changes it.
#[must_use]
pub fn checksum(value: &[u8]) -> u64 {
    let mut h = 0x9E37_79B9_7F4A_7C15u64 ^ value.len() as u64;
    let mut mix = |w: u64| h = (h.rotate_left(5) ^ w).wrapping_mul(0x517C_C1B7_2722_0A95);
    for c in value[..value.len().min(16)].chunks(8) {
        mix(word(c));
    }
    if value.len() > HEADER {
        for c in value[HEADER..].chunks(8) {
            mix(word(c));
        }
    }
    h ^ (h >> 31)
}

/// The header's fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The record's ordinal.
    pub ordinal: u64,
    /// Which write made this value.
    pub stamp: u64,
    /// The stored checksum.
    pub checksum: u64,
}

/// Reads the header of a value of `len` bytes.
///
/// # Errors
/// [`WorkloadError::Corrupt`] if `value` is not `len` bytes long.
pub fn header(value: &[u8], len: usize) -> Result<Header, WorkloadError> {
    if value.len() != len || len < HEADER {
        return Err(WorkloadError::Corrupt { table: TABLE, len: value.len(), expected: len });
    }
    Ok(Header { ordinal: word(&value[..8]), stamp: word(&value[8..16]), checksum: word(&value[16..24]) })
}

/// Reads the header of a value that must belong to record `ordinal` (a read checks this much;
/// [`full_check`] also the checksum).
///
/// # Errors
/// [`WorkloadError::Corrupt`] for a wrong length, [`WorkloadError::Inconsistent`] for a value
/// of another record.
pub fn check(value: &[u8], ordinal: u64, len: usize) -> Result<Header, WorkloadError> {
    let h = header(value, len)?;
    if h.ordinal != ordinal {
        return Err(WorkloadError::Inconsistent {
            condition: "record header",
            detail: format!(
                "the value under the key of record {ordinal} ({}) says it is record {}",
                String::from_utf8_lossy(&key(ordinal)),
                h.ordinal
            ),
        });
    }
    Ok(h)
}

/// [`check`] and the checksum.
///
/// # Errors
/// As [`check`], and [`WorkloadError::Inconsistent`] for a checksum that does not match.
pub fn full_check(value: &[u8], ordinal: u64, len: usize) -> Result<Header, WorkloadError> {
    let h = check(value, ordinal, len)?;
    let sum = checksum(value);
    if h.checksum != sum {
        return Err(WorkloadError::Inconsistent {
            condition: "record checksum",
            detail: format!(
                "record {ordinal} ({}): stored checksum {:#018x}, computed {sum:#018x}",
                String::from_utf8_lossy(&key(ordinal)),
                h.checksum
            ),
        });
    }
    Ok(h)
}

/// Stores `ordinal` and `stamp` in a value's header and seals it with its checksum.
pub fn seal(value: &mut [u8], ordinal: u64, stamp: u64) {
    value[..8].copy_from_slice(&ordinal.to_le_bytes());
    value[8..16].copy_from_slice(&stamp.to_le_bytes());
    let sum = checksum(value);
    value[16..24].copy_from_slice(&sum.to_le_bytes());
}

/// Makes a new value of `len` bytes (at least [`HEADER`]) in `buf`: random fields, sealed.
pub fn fill(buf: &mut Vec<u8>, len: usize, ordinal: u64, stamp: u64, rng: &mut impl RngCore) {
    buf.clear();
    buf.resize(len, 0);
    rng.fill_bytes(&mut buf[HEADER..]);
    seal(buf, ordinal, stamp);
}

/// Replaces field `field` of a value with `bytes` (a field's length) and seals it with `stamp`.
pub fn replace_field(value: &mut [u8], field: usize, bytes: &[u8], stamp: u64) {
    let at = HEADER + field * bytes.len();
    value[at..at + bytes.len()].copy_from_slice(bytes);
    let ordinal = word(&value[..8]);
    seal(value, ordinal, stamp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn keys_are_ycsbs() {
        // YCSB's CoreWorkload.buildKeyName(0), (1) and (12345) with hashed inserts.
        assert_eq!(key(0), b"user6284781860667377211");
        assert_eq!(key(1), b"user8517097267634966620");
        assert_eq!(key(12345), b"user1792800413050876852");
    }

    #[test]
    fn damage_to_any_byte_is_found() {
        let mut rng = SmallRng::seed_from_u64(9);
        let mut v = Vec::new();
        fill(&mut v, HEADER + 1000, 77, 5, &mut rng);
        assert_eq!(
            full_check(&v, 77, v.len()).unwrap(),
            Header { ordinal: 77, stamp: 5, checksum: checksum(&v) }
        );
        for i in (0..v.len()).step_by(7) {
            let mut bad = v.clone();
            bad[i] ^= 0x10;
            assert!(full_check(&bad, 77, v.len()).is_err(), "a flip at byte {i} went unnoticed");
        }
        assert!(matches!(check(&v, 78, v.len()), Err(WorkloadError::Inconsistent { .. })));
        assert!(matches!(check(&v[..100], 77, v.len()), Err(WorkloadError::Corrupt { len: 100, .. })));
        let before = v.clone();
        replace_field(&mut v, 3, &[7; 100], 6);
        assert_eq!(full_check(&v, 77, v.len()).unwrap().stamp, 6);
        assert_eq!(&v[HEADER + 300..HEADER + 400], &[7; 100][..]);
        assert_eq!(v[HEADER..HEADER + 300], before[HEADER..HEADER + 300]);
        assert_eq!(v[HEADER + 400..], before[HEADER + 400..]);
    }
}

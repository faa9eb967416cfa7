//! libCacheSim's `oracleGeneral` binary trace: packed little-endian records of 24 bytes, no
//! header.
//!
//! ```text
//! offset size  field
//!  0      4    timestamp          u32  (the trace's clock, seconds in libCacheSim's traces)
//!  4      8    object id          u64
//! 12      4    object size        u32  (bytes; records of size 0 are skipped on reading)
//! 16      8    next access vtime  i64  (1-based number of the next request to the same
//!                                       object, -1 if there is none)
//! ```

use super::input::Input;
use super::lines::Request;
use crate::trace::TraceError;
use rustc_hash::FxHashMap;
use std::io::{Read, Write};

/// Bytes per record.
pub const RECORD_LEN: usize = 24;
const TIME: usize = 0;
const ID: usize = 4;
const SIZE: usize = 12;
const NEXT: usize = 16;
const _: () = assert!(NEXT + 8 == RECORD_LEN && SIZE + 4 == NEXT && ID + 8 == SIZE && TIME + 4 == ID);

/// `next access vtime` of a request whose object is never requested again.
pub const NO_NEXT_ACCESS: i64 = -1;

/// One decoded record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OracleRecord {
    /// Timestamp.
    pub time: u32,
    /// Object id.
    pub id: u64,
    /// Object size in bytes.
    pub size: u32,
    /// 1-based number of the next request to the same object, or [`NO_NEXT_ACCESS`].
    pub next_access: i64,
}

impl OracleRecord {
    /// The record's 24 bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        b[TIME..ID].copy_from_slice(&self.time.to_le_bytes());
        b[ID..SIZE].copy_from_slice(&self.id.to_le_bytes());
        b[SIZE..NEXT].copy_from_slice(&self.size.to_le_bytes());
        b[NEXT..].copy_from_slice(&self.next_access.to_le_bytes());
        b
    }

    /// Decodes 24 bytes.
    #[must_use]
    pub fn decode(b: &[u8; RECORD_LEN]) -> OracleRecord {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(w)
        };
        OracleRecord {
            time: u32_at(TIME),
            id: u64_at(ID),
            size: u32_at(SIZE),
            next_access: u64_at(NEXT) as i64,
        }
    }
}

/// Reads records one at a time, skipping those of size 0 (as libCacheSim does by default).
pub(super) struct OracleReader {
    reader: Box<dyn std::io::BufRead + Send>,
    name: String,
    zstd: bool,
    offset: u64,
    pub(super) skipped: u64,
}

impl OracleReader {
    pub(super) fn new(reader: Box<dyn std::io::BufRead + Send>, name: String, zstd: bool) -> Self {
        OracleReader { reader, name, zstd, offset: 0, skipped: 0 }
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        loop {
            let mut b = [0u8; RECORD_LEN];
            let mut n = 0;
            while n < RECORD_LEN {
                match self.reader.read(&mut b[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Input::read_error(&self.name, self.zstd, e)),
                }
            }
            if n == 0 {
                return Ok(None);
            }
            if n < RECORD_LEN {
                return Err(TraceError::Truncated {
                    format: "oracleGeneral",
                    offset: self.offset,
                    expected: RECORD_LEN,
                    found: n,
                    decompressed: self.zstd,
                });
            }
            self.offset += RECORD_LEN as u64;
            let r = OracleRecord::decode(&b);
            if r.size == 0 {
                self.skipped += 1;
                continue;
            }
            return Ok(Some(Request { time: u64::from(r.time), id: r.id, size: u64::from(r.size) }));
        }
    }
}

/// Writes `requests` as an oracleGeneral trace, computing each record's next access: the
/// 1-based number of the next request to the same object, or -1. Returns the records written.
///
/// # Errors
/// [`TraceError::FieldOverflow`] for a time or size above `u32::MAX`, or a size of 0 (libCacheSim
/// would skip the record), before anything is written; [`TraceError::Io`] if writing fails.
pub fn write_oracle_general(writer: impl Write, requests: &[Request], what: &str) -> Result<u64, TraceError> {
    let overflow = |position, field, value| TraceError::FieldOverflow {
        position,
        format: "oracleGeneral",
        field,
        value,
        bits: 32,
    };
    for (i, r) in requests.iter().enumerate() {
        if r.time > u64::from(u32::MAX) {
            return Err(overflow(i, "time", r.time));
        }
        if r.size == 0 || r.size > u64::from(u32::MAX) {
            return Err(overflow(i, "size (1 to 2^32-1)", r.size));
        }
    }
    let next = next_access(requests);
    let io = |source| TraceError::Io { action: "write", what: what.to_owned(), source };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, writer);
    for (r, next_access) in requests.iter().zip(next) {
        let record = OracleRecord { time: r.time as u32, id: r.id, size: r.size as u32, next_access };
        w.write_all(&record.encode()).map_err(io)?;
    }
    w.flush().map_err(io)?;
    Ok(requests.len() as u64)
}

/// For each request, the 1-based number of the next request to the same object, or
/// [`NO_NEXT_ACCESS`]: one backward pass.
#[must_use]
pub fn next_access(requests: &[Request]) -> Vec<i64> {
    let mut next = vec![NO_NEXT_ACCESS; requests.len()];
    let mut later: FxHashMap<u64, i64> = FxHashMap::default();
    for (i, r) in requests.iter().enumerate().rev() {
        if let Some(&n) = later.get(&r.id) {
            next[i] = n;
        }
        // Positions are below isize::MAX, so they fit an i64.
        later.insert(r.id, i as i64 + 1);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_encode_at_their_documented_offsets() {
        let r = OracleRecord { time: 7, id: 0x0102_0304_0506_0708, size: 4096, next_access: -1 };
        let b = r.encode();
        assert_eq!(&b[0..4], &7u32.to_le_bytes());
        assert_eq!(&b[4..12], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&b[12..16], &4096u32.to_le_bytes());
        assert_eq!(&b[16..24], &[0xFF; 8]);
        assert_eq!(OracleRecord::decode(&b), r);
    }

    #[test]
    fn next_access_is_the_one_based_number_of_the_next_request() {
        let reqs: Vec<Request> =
            [5u64, 6, 5, 5, 7].iter().map(|&id| Request { time: 0, id, size: 1 }).collect();
        assert_eq!(next_access(&reqs), vec![3, -1, 4, -1, -1]);
    }
}

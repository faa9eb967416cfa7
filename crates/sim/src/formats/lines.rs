//! What every format's reader shares: the [`Request`] it yields, a line reader for the text
//! formats, and the parsing of ids.

use super::input::Input;
use crate::trace::TraceError;
use std::io::BufRead;

/// One request of a trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Timestamp in the trace's own unit (0 where the format has none).
    pub time: u64,
    /// Object (page) id.
    pub id: u64,
    /// Object size in bytes (1 where the format has none).
    pub size: u64,
}

/// A line reader that counts lines and hands out each line without its `\n` or `\r\n`.
pub(crate) struct Lines<R = Box<dyn BufRead + Send>> {
    reader: R,
    name: String,
    zstd: bool,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(reader: R, name: String, zstd: bool) -> Lines<R> {
        Lines { reader, name, zstd, buf: Vec::with_capacity(128), number: 0 }
    }

    /// The next line and its number (from 1).
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, TraceError> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Input::read_error(&self.name, self.zstd, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        let mut line = &self.buf[..];
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l;
        }
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        Ok(Some((self.number, line)))
    }
}

/// The u64 standing for a string object id: XXH64 with seed 0 of its bytes. Different strings
/// may collide (for n distinct ids, with probability about n²/2^65: 3·10^-6 for 10^7 ids), in
/// which case two objects count as one.
#[must_use]
pub fn hash_id(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

/// Decimal digits only, no sign, no overflow.
pub(crate) fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut v = 0u64;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

pub(crate) fn shorten(mut s: String) -> String {
    if let Some((i, _)) = s.char_indices().nth(80) {
        s.truncate(i);
        s.push('…');
    }
    s
}

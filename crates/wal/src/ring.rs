//! The in-memory log buffer: a ring of 64-bit words indexed by LSN (README W4).
//!
//! Every frame is 8-byte aligned and a multiple of 8 long, so a frame covers whole words and two
//! frames never share one. Appenders store their own words with relaxed atomic stores, with no
//! lock held, and the writer loads them after it has seen their publication (an acquire load of
//! the completed prefix). The words are atomics only so that this sharing needs no `unsafe`; no
//! two threads ever touch the same word at the same time (W4 says why).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The ring buffer. LSN `l` (a multiple of 8) lives in word `(l / 8) % words.len()`.
#[derive(Debug)]
pub(crate) struct Ring {
    words: Box<[AtomicU64]>,
}

impl Ring {
    /// A ring of `bytes` bytes (a multiple of 8).
    pub(crate) fn new(bytes: usize) -> Ring {
        debug_assert_eq!(bytes % 8, 0);
        Ring { words: (0..bytes / 8).map(|_| AtomicU64::new(0)).collect() }
    }

    /// The ring's size in bytes.
    pub(crate) fn capacity(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    #[inline]
    fn index(&self, lsn: u64) -> usize {
        ((lsn / 8) % self.words.len() as u64) as usize
    }

    /// Stores `bytes` from `lsn` on (a multiple of 8), padded with zeros to whole words. The caller
    /// owns that LSN range (W4).
    pub(crate) fn store(&self, lsn: u64, bytes: &[u8]) {
        debug_assert_eq!(lsn % 8, 0, "W2: frames are 8-byte aligned");
        let mut i = self.index(lsn);
        let n = self.words.len();
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.words[i].store(u64::from_le_bytes(c.try_into().expect("8 bytes")), Relaxed);
            i += 1;
            if i == n {
                i = 0;
            }
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Assembled in a register: a byte copy into a stack word would go through `memcpy`
            // and a store-forwarding stall on the load after it.
            let w = rest.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
            self.words[i].store(w, Relaxed);
        }
    }

    /// Stores `len` zero bytes from `lsn` on (both multiples of 8).
    pub(crate) fn zero(&self, lsn: u64, len: u64) {
        let mut i = self.index(lsn);
        for _ in 0..len / 8 {
            self.words[i].store(0, Relaxed);
            i = (i + 1) % self.words.len();
        }
    }

    /// Appends the bytes of LSNs `from..to` (multiples of 8, at most the capacity apart) to `out`.
    pub(crate) fn load(&self, from: u64, to: u64, out: &mut Vec<u8>) {
        debug_assert!(to - from <= self.capacity());
        out.reserve((to - from) as usize);
        let mut i = self.index(from);
        for _ in 0..(to - from) / 8 {
            out.extend_from_slice(&self.words[i].load(Relaxed).to_le_bytes());
            i += 1;
            if i == self.words.len() {
                i = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w4_store_load_wraps_around() {
        let ring = Ring::new(64);
        let data: Vec<u8> = (0u8..40).collect();
        ring.store(48, &data); // words 6, 7, then 0, 1, 2
        let mut out = Vec::new();
        ring.load(48, 88, &mut out);
        assert_eq!(out, data);
        let mut first = Vec::new();
        ring.load(64, 72, &mut first);
        assert_eq!(first, (16u8..24).collect::<Vec<_>>(), "LSN 64 is word 0 of a 64-byte ring");
    }

    #[test]
    fn w2_partial_word_is_zero_padded() {
        let ring = Ring::new(32);
        ring.store(0, &[0xff; 16]);
        ring.store(0, &[1, 2, 3]);
        let mut out = Vec::new();
        ring.load(0, 16, &mut out);
        assert_eq!(out, [1, 2, 3, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        ring.zero(0, 16);
        out.clear();
        ring.load(0, 16, &mut out);
        assert_eq!(out, [0; 16]);
    }
}

//! The in-memory log buffer: a ring of 64-bit words indexed by LSN (README W4, W5).
//!
//! Every frame is 8-byte aligned and a multiple of 8 long, so a frame covers whole words and two
//! frames never share one. Appenders store their own words with relaxed atomic stores, with no
//! lock held, and the frame's header word last, with release: that store is the frame's
//! publication (W5). A reader of the completed prefix loads header words with acquire, and so
//! sees the body of every frame whose header it sees. Free words (never used, or written out
//! since their last use) hold [`FREE_WORD`], which no header is. The words are atomics only so
//! that this sharing needs no `unsafe`; no two threads ever store into the same word at the same
//! time (W4 says why).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::frame::{FREE_WORD, HEADER};

/// The ring buffer. LSN `l` (a multiple of 8) lives in word `(l / 8) % words.len()`.
#[derive(Debug)]
pub(crate) struct Ring {
    words: Box<[AtomicU64]>,
}

impl Ring {
    /// A ring of `bytes` bytes (a multiple of 8), every word free.
    pub(crate) fn new(bytes: usize) -> Ring {
        debug_assert_eq!(bytes % 8, 0);
        Ring { words: (0..bytes / 8).map(|_| AtomicU64::new(FREE_WORD)).collect() }
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

    /// W5: stores the frame at `lsn` — its body first, then its `header` with release, which
    /// publishes it. The caller owns the frame's LSN range (W4).
    pub(crate) fn store_frame(&self, lsn: u64, header: [u8; 8], body: &[u8]) {
        self.store(lsn + HEADER, body);
        self.words[self.index(lsn)].store(u64::from_le_bytes(header), Release);
    }

    /// The header word at `lsn` (a frame boundary), loaded with acquire: [`FREE_WORD`] until the
    /// frame there is published, then its header (W5).
    #[inline]
    pub(crate) fn header_word(&self, lsn: u64) -> u64 {
        self.words[self.index(lsn)].load(Acquire)
    }

    /// Marks the words of LSNs `from..to` (multiples of 8, at most the capacity apart) free
    /// again, after the writer has copied them out (W4, W5).
    pub(crate) fn free(&self, from: u64, to: u64) {
        debug_assert!(to - from <= self.capacity());
        let mut i = self.index(from);
        for _ in 0..(to - from) / 8 {
            self.words[i].store(FREE_WORD, Relaxed);
            i += 1;
            if i == self.words.len() {
                i = 0;
            }
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
    fn w5_a_frame_is_published_by_its_header_and_freed_words_read_as_unpublished() {
        let ring = Ring::new(64);
        assert_eq!(ring.header_word(8), FREE_WORD);
        ring.store_frame(56, [1, 0, 0, 0, 9, 9, 9, 9], &[0xee; 9]); // header word 7, body words 0 and 1
        assert_eq!(ring.header_word(56), u64::from_le_bytes([1, 0, 0, 0, 9, 9, 9, 9]));
        let mut out = Vec::new();
        ring.load(56, 88, &mut out);
        assert_eq!(&out[8..17], &[0xee; 9]);
        assert_eq!(&out[17..24], &[0; 7], "W2: the last word is padded with zeros");
        ring.free(56, 88);
        assert_eq!(ring.header_word(56), FREE_WORD);
        assert_eq!(ring.header_word(64), FREE_WORD);
        assert_eq!(ring.header_word(72), FREE_WORD);
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

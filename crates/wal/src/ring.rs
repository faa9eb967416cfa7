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

    /// The words of `count` words from `lsn` on, as one or two runs of the array (the second
    /// one empty unless the range wraps around its end), so that loops over them need no
    /// wrap-around test per word.
    #[inline]
    fn runs(&self, lsn: u64, count: usize) -> (&[AtomicU64], &[AtomicU64]) {
        debug_assert!(count <= self.words.len());
        let i = self.index(lsn);
        let first = count.min(self.words.len() - i);
        (&self.words[i..i + first], &self.words[..count - first])
    }

    /// Stores `bytes` from `lsn` on (a multiple of 8), padded with zeros to whole words. The caller
    /// owns that LSN range (W4).
    pub(crate) fn store(&self, lsn: u64, bytes: &[u8]) {
        debug_assert_eq!(lsn % 8, 0, "W2: frames are 8-byte aligned");
        let (a, b) = self.runs(lsn, bytes.len().div_ceil(8));
        let (first, second) = bytes.split_at(bytes.len().min(a.len() * 8));
        store_run(a, first);
        store_run(b, second);
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
        self.fill(from, to - from, FREE_WORD);
    }

    /// Stores `len` zero bytes from `lsn` on (both multiples of 8).
    pub(crate) fn zero(&self, lsn: u64, len: u64) {
        self.fill(lsn, len, 0);
    }

    fn fill(&self, lsn: u64, len: u64, word: u64) {
        let (a, b) = self.runs(lsn, (len / 8) as usize);
        for run in [a, b] {
            for w in run {
                w.store(word, Relaxed);
            }
        }
    }

    /// Appends the bytes of LSNs `from..to` (multiples of 8, at most the capacity apart) to `out`.
    pub(crate) fn load(&self, from: u64, to: u64, out: &mut Vec<u8>) {
        let (a, b) = self.runs(from, ((to - from) / 8) as usize);
        let start = out.len();
        out.resize(start + (to - from) as usize, 0);
        let (first, second) = out[start..].split_at_mut(a.len() * 8);
        for (run, bytes) in [(a, first), (b, second)] {
            for (w, c) in run.iter().zip(bytes.chunks_exact_mut(8)) {
                c.copy_from_slice(&w.load(Relaxed).to_le_bytes());
            }
        }
    }
}

/// Stores `bytes` into `words` (at least `bytes.len()` rounded up to 8 bytes of them), the last
/// word padded with zeros.
#[inline]
fn store_run(words: &[AtomicU64], bytes: &[u8]) {
    let mut chunks = bytes.chunks_exact(8);
    for (w, c) in words.iter().zip(&mut chunks) {
        w.store(u64::from_le_bytes(c.try_into().expect("8 bytes")), Relaxed);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // Assembled in a register: a byte copy into a stack word would go through `memcpy`
        // and a store-forwarding stall on the load after it.
        let w = rest.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
        words[bytes.len() / 8].store(w, Relaxed);
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
        // A partial last word after the wrap, and a load appended to what `out` holds.
        let odd: Vec<u8> = (100u8..137).collect();
        ring.store(40, &odd); // words 5, 6, 7, then 0 and 1 (5 bytes and 3 of padding)
        let mut out = vec![9];
        ring.load(40, 80, &mut out);
        assert_eq!(out[0], 9);
        assert_eq!(&out[1..38], &odd[..]);
        assert_eq!(&out[38..], &[0, 0, 0], "W2: zero padding to the word's end");
        ring.free(40, 80);
        ring.zero(48, 16);
        let mut words = Vec::new();
        ring.load(0, 64, &mut words);
        let word = |i: usize| u64::from_le_bytes(words[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!([word(0), word(1), word(5)], [FREE_WORD; 3]);
        assert_eq!([word(6), word(7)], [0, 0]);
        assert_eq!(
            word(2),
            u64::from_le_bytes([16, 17, 18, 19, 20, 21, 22, 23]) + 0x1010_1010_1010_1010,
            "untouched"
        );
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

//! Identifier newtypes. No sentinel values: absence is `Option<PageId>`, never a magic number.

use std::fmt;

/// Identifies a page of the database file; page `n` lives at byte offset `n * page_size`.
///
/// Page ids are below 2^63: the top bit of a swip marks a frame reference (buffer `README.md`, B7).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageId(u64);

impl PageId {
    /// The largest representable page id plus one; the top bit is reserved for swips.
    pub const LIMIT: u64 = 1 << 63;
    /// Page 0 holds the file's metadata (format version, catalog, free pages).
    pub const META: PageId = PageId(0);

    /// Wraps a raw page number. Returns `None` if it uses the reserved top bit.
    #[inline]
    #[must_use]
    pub const fn new(raw: u64) -> Option<PageId> {
        if raw < Self::LIMIT {
            Some(PageId(raw))
        } else {
            None
        }
    }

    /// The raw page number.
    #[inline]
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {}", self.0)
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Index of a frame in the buffer pool's frame array.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FrameId(pub u32);

impl FrameId {
    /// The index as `usize`, for array access.
    #[inline]
    #[must_use]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {}", self.0)
    }
}

/// Log sequence number: the byte offset of a record in the write-ahead log. `Lsn(0)` is never a
/// record's LSN: it means "never logged".
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Lsn(pub u64);

/// A transaction's number: assigned in increasing order as transactions begin, so a smaller
/// number is an older transaction (deadlock detection and wait-die compare them). `TxnId(0)` is no transaction (the
/// system transactions of structure changes log under it).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct TxnId(pub u64);

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "txn {}", self.0)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LSN {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_id_rejects_reserved_bit() {
        assert!(PageId::new(PageId::LIMIT).is_none());
        assert!(PageId::new(u64::MAX).is_none());
        assert_eq!(PageId::new(PageId::LIMIT - 1).map(PageId::get), Some(PageId::LIMIT - 1));
    }
}

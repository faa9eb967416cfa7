//! Swips: child references stored in B-tree nodes (rule B7 of `README.md`).
//!
//! ```text
//!  bit 63        bits 0..=62
//! +----------+---------------------------------+
//! | SWIZZLED | page id   (SWIZZLED = 0)        |
//! |          | frame id  (SWIZZLED = 1)        |
//! +----------+---------------------------------+
//! ```
//! A swizzled swip names the frame that holds the child; it exists only in memory. Pages are
//! always written with page ids (B8).

use swizzledb_sync::{FrameId, PageId};

const SWIZZLED: u64 = 1 << 63;
const _: () = assert!(PageId::LIMIT == SWIZZLED, "page ids must leave the marker bit free");
const _: () = assert!((u32::MAX as u64) < SWIZZLED, "frame ids fit below the marker bit");

/// A child reference: a page id, or (swizzled) the frame holding the child.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Swip(u64);

/// What a swip points at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum SwipTarget {
    /// Not swizzled: the child's page id.
    Page(PageId),
    /// Swizzled: the frame that holds the child.
    Frame(FrameId),
}

impl Swip {
    /// An unswizzled swip naming `page`.
    #[inline]
    #[must_use]
    pub const fn page(page: PageId) -> Swip {
        Swip(page.get())
    }

    /// A swizzled swip naming `frame`.
    #[inline]
    #[must_use]
    pub const fn frame(frame: FrameId) -> Swip {
        Swip(frame.0 as u64 | SWIZZLED)
    }

    /// The raw 64-bit encoding, as stored in a page.
    #[inline]
    #[must_use]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Decodes a raw value read from a page. Every u64 is a valid swip encoding, but a swizzled
    /// value whose frame id exceeds u32 is rejected.
    #[inline]
    #[must_use]
    pub fn from_raw(raw: u64) -> Option<Swip> {
        if raw & SWIZZLED != 0 && (raw & !SWIZZLED) > u64::from(u32::MAX) {
            None
        } else {
            Some(Swip(raw))
        }
    }

    /// True if the swip names a frame.
    #[inline]
    #[must_use]
    pub const fn is_swizzled(self) -> bool {
        self.0 & SWIZZLED != 0
    }

    /// Decodes the target.
    #[inline]
    #[must_use]
    pub fn target(self) -> SwipTarget {
        if self.is_swizzled() {
            // from_raw/frame keep the low bits within u32.
            SwipTarget::Frame(FrameId((self.0 & !SWIZZLED) as u32))
        } else {
            SwipTarget::Page(PageId::new(self.0).expect("marker bit clear"))
        }
    }
}

impl std::fmt::Debug for Swip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.target() {
            SwipTarget::Page(p) => write!(f, "Swip({p:?})"),
            SwipTarget::Frame(fr) => write!(f, "Swip(→{fr})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b7_encoding_roundtrip() {
        let p = PageId::new(12345).unwrap();
        let s = Swip::page(p);
        assert!(!s.is_swizzled());
        assert_eq!(s.target(), SwipTarget::Page(p));
        let f = Swip::frame(FrameId(77));
        assert!(f.is_swizzled());
        assert_eq!(f.target(), SwipTarget::Frame(FrameId(77)));
        assert_eq!(Swip::from_raw(f.raw()), Some(f));
        assert_eq!(Swip::from_raw(s.raw()), Some(s));
        assert_eq!(Swip::from_raw(SWIZZLED | (1 << 40)), None);
        let max = PageId::new(PageId::LIMIT - 1).unwrap();
        assert_eq!(Swip::page(max).target(), SwipTarget::Page(max));
    }
}

//! Large values (README T22): a value longer than [`max_inline_value_len`] lives in a chain of
//! overflow pages, and its leaf record holds a fixed-size *stub* naming the chain.
//!
//! ```text
//! stub (the record's value field, STUB_LEN bytes, flagged in the record's length field):
//!      0   8  the value's length
//!      8   8  the first overflow page
//!     16   4  CRC-32C of the value
//! overflow page:
//!      0  32  common page header (buffer::page), type Overflow, level 0
//!     32   8  the next page of the chain (0: this is the last)
//!     40   4  bytes of the value on this page
//!     44   4  reserved (0)
//!     48      the value's bytes
//! ```
//!
//! A chain belongs to exactly one stub, and is reached only through its leaf: readers latch the
//! leaf, then the chain's pages in order (latch order leaf → chain, T8), so a chain never
//! changes under a reader. Writers build a new chain on pages nobody can reach yet, log the
//! leaf change with the chain's page ids and the value (one record: the leaf, every page of the
//! new chain, and the pages of the chain it frees, T11/T12), and only then make the stub
//! visible; the replaced or deleted value's chain is freed after that record. Every page of a
//! chain being written or freed is latched exclusively at once, so a value may occupy at most
//! an eighth of the pool ([`Tree::max_value_len`]).

use swizzledb_buffer::page::{self, get_u32, get_u64, put_u32, put_u64, PageType, HEADER_SIZE};
use swizzledb_buffer::{ExclusiveGuard, PageId};
use swizzledb_sync::Lsn;

/// The value field a leaf stores for `value` (T22): the value itself, or — for a large value
/// — the stub of its chain `chain`, written into `stub`. `chain` must hold exactly the pages
/// the value needs (none for a value stored in its leaf).
///
/// # Errors
/// The chain does not match the value's size.
pub fn stored_form<'v>(
    page_size: usize,
    value: &'v [u8],
    chain: &[PageId],
    stub: &'v mut [u8; STUB_LEN],
) -> Result<(&'v [u8], bool), String> {
    let want = chain_len(page_size, value.len());
    if chain.len() != want {
        return Err(format!(
            "a value of {} bytes with {} overflow pages (it needs {want})",
            value.len(),
            chain.len()
        ));
    }
    if want == 0 {
        return Ok((value, false));
    }
    *stub = Stub::of(value, chain[0]).encode();
    Ok((&stub[..], true))
}

/// Bytes of a stub.
pub const STUB_LEN: usize = 20;

/// The longest value any tree accepts (T22). A tree's own limit ([`Tree::max_value_len`]) may
/// be lower: a value's chain must fit in an eighth of the pool, and its log record in the log.
pub const MAX_VALUE_LEN: usize = 4 << 20;

const NEXT: usize = HEADER_SIZE;
const LEN: usize = HEADER_SIZE + 8;
const RESERVED: usize = HEADER_SIZE + 12;
const DATA: usize = HEADER_SIZE + 16;

/// Longest value stored in its leaf record for a page size (T6): a node must hold its fence
/// keys and two records. Longer values go to overflow pages (T22).
#[must_use]
#[inline]
pub fn max_inline_value_len(page_size: usize) -> usize {
    page_size / 4
}

/// Whether a value of `len` bytes lives in overflow pages at this page size.
#[must_use]
#[inline]
pub fn is_large(page_size: usize, len: usize) -> bool {
    len > max_inline_value_len(page_size)
}

/// Bytes a leaf record's value field takes for a value of `len` bytes: the value, or its stub.
#[must_use]
#[inline]
pub fn stored_len(page_size: usize, len: usize) -> usize {
    if is_large(page_size, len) {
        STUB_LEN
    } else {
        len
    }
}

/// Value bytes one overflow page holds.
#[must_use]
pub fn page_payload(page_size: usize) -> usize {
    page_size - DATA
}

/// Overflow pages of a value of `len` bytes (0 for a value stored in its leaf).
#[must_use]
pub fn chain_len(page_size: usize, len: usize) -> usize {
    if is_large(page_size, len) {
        len.div_ceil(page_payload(page_size))
    } else {
        0
    }
}

/// A decoded stub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub {
    /// The value's length.
    pub len: u64,
    /// Its first overflow page.
    pub first: PageId,
    /// CRC-32C of the value.
    pub crc: u32,
}

impl Stub {
    /// The stub of `value`, whose chain starts at `first`.
    #[must_use]
    pub fn of(value: &[u8], first: PageId) -> Stub {
        Stub { len: value.len() as u64, first, crc: crc32c::crc32c(value) }
    }

    /// Its bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; STUB_LEN] {
        let mut b = [0u8; STUB_LEN];
        b[..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.first.get().to_le_bytes());
        b[16..].copy_from_slice(&self.crc.to_le_bytes());
        b
    }

    /// Reads a stub; `None` if `b` is not one (wrong size, no first page).
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Stub> {
        if b.len() != STUB_LEN {
            return None;
        }
        Some(Stub {
            len: get_u64(b, 0),
            first: PageId::new(get_u64(b, 8)).filter(|p| p.get() != 0)?,
            crc: get_u32(b, 16),
        })
    }
}

/// Writes page `i` of `value`'s chain `chain` into `page` (a page of the pool's size, whose
/// header names `chain[i]`), leaving the page LSN as it is.
pub fn fill_page(page: &mut [u8], value: &[u8], chain: &[PageId], i: usize) {
    let per = page_payload(page.len());
    let part = &value[(i * per).min(value.len())..((i + 1) * per).min(value.len())];
    page::set_type(page, PageType::Overflow, 0);
    put_u64(page, NEXT, chain.get(i + 1).map_or(0, |p| p.get()));
    put_u32(page, LEN, u32::try_from(part.len()).expect("a page's payload fits a u32"));
    put_u32(page, RESERVED, 0);
    page[DATA..DATA + part.len()].copy_from_slice(part);
    page[DATA + part.len()..].fill(0);
}

/// The image of page `i` of `value`'s chain `chain` (what redo installs, T12), page LSN 0.
#[must_use]
pub fn page_image(page_size: usize, value: &[u8], chain: &[PageId], i: usize) -> Vec<u8> {
    let mut p = vec![0u8; page_size];
    page::format(&mut p, chain[i], PageType::Overflow, 0);
    fill_page(&mut p, value, chain, i);
    p
}

/// Checks an overflow page's own structure (T17 for overflow pages): type and level, a length
/// within the page, no next page naming the page itself, zero bytes past the value.
///
/// # Errors
/// The first inconsistency found.
pub fn validate(p: &[u8]) -> std::result::Result<(), String> {
    if page::page_type(p) != Some(PageType::Overflow) || page::level(p) != 0 {
        return Err(format!(
            "page type {:?} at level {} is not an overflow page",
            page::page_type(p),
            page::level(p)
        ));
    }
    let len = get_u32(p, LEN) as usize;
    if len > page_payload(p.len()) {
        return Err(format!("an overflow page holding {len} bytes, more than its {}", page_payload(p.len())));
    }
    if get_u64(p, NEXT) == page::page_id(p) && get_u64(p, NEXT) != 0 {
        return Err("an overflow page naming itself as the next".into());
    }
    if get_u32(p, RESERVED) != 0 || p[DATA + len..].iter().any(|&b| b != 0) {
        return Err("an overflow page with bytes outside its value".into());
    }
    Ok(())
}

/// The next page of the chain after overflow page `p` (`None`: the last).
#[must_use]
pub fn next(p: &[u8]) -> Option<PageId> {
    match get_u64(p, NEXT) {
        0 => None,
        n => PageId::new(n),
    }
}

/// The value bytes on overflow page `p` (validated).
#[must_use]
pub fn data(p: &[u8]) -> &[u8] {
    let len = (get_u32(p, LEN) as usize).min(page_payload(p.len()));
    &p[DATA..DATA + len]
}

/// What [`append`] found on a page of a chain.
pub(crate) struct Appended {
    /// Value bytes appended.
    pub(crate) bytes: usize,
    /// The next page.
    pub(crate) next: Option<PageId>,
    /// The page's type (nothing is appended unless it is `Overflow`).
    pub(crate) ty: Option<PageType>,
}

/// Appends the value bytes of overflow page `p` to `out` (nothing if `p` is another kind of
/// page), with no copy in between.
pub(crate) fn append(p: &[u8], out: &mut Vec<u8>) -> Appended {
    let ty = page::page_type(p);
    if ty != Some(PageType::Overflow) {
        return Appended { bytes: 0, next: None, ty };
    }
    let bytes = data(p);
    out.extend_from_slice(bytes);
    Appended { bytes: bytes.len(), next: next(p), ty }
}

/// A chain latched exclusively: a new one being written (`fresh`), or an old one being freed.
/// A fresh chain not yet logged is freed when dropped (its pages were never reachable); an old
/// one is freed only by [`Chain::free`], after the change that frees it is logged.
pub(crate) struct Chain<'a> {
    pub(crate) guards: Vec<ExclusiveGuard<'a>>,
    fresh: bool,
    /// An old chain's free, announced to checkpoints from its latching to its free (buffer
    /// B37): the change that frees it is logged in between.
    _announced: Option<swizzledb_buffer::Announced<'a>>,
}

impl<'a> Chain<'a> {
    #[inline]
    pub(crate) fn none() -> Chain<'a> {
        Chain { guards: Vec::new(), fresh: false, _announced: None }
    }

    /// A new chain on `guards`, freed when dropped until [`Chain::keep`].
    #[inline]
    pub(crate) fn fresh(guards: Vec<ExclusiveGuard<'a>>) -> Chain<'a> {
        Chain { guards, fresh: true, _announced: None }
    }

    /// An old chain on `guards`, freed only by [`Chain::free`], its free `announced` until then.
    #[inline]
    pub(crate) fn old(
        guards: Vec<ExclusiveGuard<'a>>,
        announced: swizzledb_buffer::Announced<'a>,
    ) -> Chain<'a> {
        Chain { guards, fresh: false, _announced: Some(announced) }
    }

    #[inline]
    pub(crate) fn ids(&self) -> Vec<PageId> {
        self.guards.iter().map(ExclusiveGuard::page_id).collect()
    }

    /// The value field a leaf stores for `value`, written to this chain (T22): the value itself
    /// when the chain is empty, else its stub, encoded into `stub`.
    #[inline(always)]
    pub(crate) fn stored_form<'v>(&self, value: &'v [u8], stub: &'v mut [u8; STUB_LEN]) -> (&'v [u8], bool) {
        if self.guards.is_empty() {
            return (value, false);
        }
        self.stub_form(value, stub)
    }

    #[cold]
    fn stub_form<'v>(&self, value: &'v [u8], stub: &'v mut [u8; STUB_LEN]) -> (&'v [u8], bool) {
        let ps = self.guards[0].pool().page_size();
        stored_form(ps, value, &self.ids(), stub).expect("T22: the chain was written for this value")
    }

    /// The change that wrote this chain is logged at `lsn`: the chain is the stub's now.
    #[inline]
    pub(crate) fn keep(mut self, lsn: Option<Lsn>) {
        if self.guards.is_empty() {
            return;
        }
        if let Some(lsn) = lsn {
            for g in &mut self.guards {
                g.set_page_lsn(lsn);
            }
        }
        self.fresh = false;
    }

    /// Returns every page to the free-page set (B11: overflow pages hold no swips).
    pub(crate) fn free(mut self) {
        self.fresh = false;
        for g in self.guards.drain(..) {
            g.pool().free_page(g);
        }
    }
}

impl Drop for Chain<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.fresh {
            for g in self.guards.drain(..) {
                g.pool().free_page(g);
            }
        }
    }
}

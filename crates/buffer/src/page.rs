//! The common page header, present on every page of the file.
//!
//! ```text
//! offset  size  field
//!      0     4  CRC-32C of bytes 4..page_size (written on every write, checked on every read)
//!      4     1  page type (PageType)
//!      5     1  level (0 = leaf; B-tree pages only)
//!      6     2  reserved (zero)
//!      8     8  page id (little endian) — catches misdirected reads and writes
//!     16     8  page LSN (0 until the write-ahead log exists)
//!     24     8  reserved (zero)
//!     32        page body, owned by the page's user
//! ```
//! All integers are little endian.

use swizzledb_sync::{Lsn, PageId};

/// Size of the common header; page bodies start here.
pub const HEADER_SIZE: usize = 32;
/// Smallest supported page size.
pub const MIN_PAGE_SIZE: usize = 4096;
/// Largest supported page size (slot offsets in B-tree nodes are 16 bits).
pub const MAX_PAGE_SIZE: usize = 32768;
/// Default page size.
pub const DEFAULT_PAGE_SIZE: usize = 8192;

/// What a page holds.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum PageType {
    /// Page 0: format version, page count, free-page chain head, catalog.
    Meta = 1,
    /// B-tree inner node.
    Inner = 2,
    /// B-tree leaf.
    Leaf = 3,
    /// A free page, linked into the free-page chain.
    Free = 4,
    /// A page of a large value's overflow chain (btree README T22).
    Overflow = 5,
}

impl PageType {
    /// Decodes a page-type byte.
    #[must_use]
    pub fn from_u8(b: u8) -> Option<PageType> {
        match b {
            1 => Some(PageType::Meta),
            2 => Some(PageType::Inner),
            3 => Some(PageType::Leaf),
            4 => Some(PageType::Free),
            5 => Some(PageType::Overflow),
            _ => None,
        }
    }
}

/// True if `size` is a supported page size (a power of two in 4 KiB..=32 KiB).
#[must_use]
pub fn valid_page_size(size: usize) -> bool {
    size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size)
}

/// Reads a little-endian u16 at `off`.
#[inline]
#[must_use]
pub fn get_u16(page: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([page[off], page[off + 1]])
}

/// Writes a little-endian u16 at `off`.
#[inline]
pub fn put_u16(page: &mut [u8], off: usize, v: u16) {
    page[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u32 at `off`.
#[inline]
#[must_use]
pub fn get_u32(page: &[u8], off: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&page[off..off + 4]);
    u32::from_le_bytes(b)
}

/// Writes a little-endian u32 at `off`.
#[inline]
pub fn put_u32(page: &mut [u8], off: usize, v: u32) {
    page[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u64 at `off`.
#[inline]
#[must_use]
pub fn get_u64(page: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&page[off..off + 8]);
    u64::from_le_bytes(b)
}

/// Writes a little-endian u64 at `off`.
#[inline]
pub fn put_u64(page: &mut [u8], off: usize, v: u64) {
    page[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The page type byte, if valid.
#[inline]
#[must_use]
pub fn page_type(page: &[u8]) -> Option<PageType> {
    PageType::from_u8(page[4])
}

/// Offset of the level byte in the header.
pub const LEVEL: usize = 5;

/// The B-tree level (0 = leaf).
#[inline]
#[must_use]
pub fn level(page: &[u8]) -> u8 {
    page[LEVEL]
}

/// The page id stored in the header.
#[inline]
#[must_use]
pub fn page_id(page: &[u8]) -> u64 {
    get_u64(page, 8)
}

/// The page LSN stored in the header.
#[inline]
#[must_use]
pub fn page_lsn(page: &[u8]) -> Lsn {
    Lsn(get_u64(page, 16))
}

/// Asks the CPU to bring the cache line holding `bytes[off]` into its caches (F12): a hint that
/// changes no result, so a search can start the misses of the lines it will read next in
/// parallel instead of one after the other. Does nothing if `off` is out of range, off x86-64,
/// or under Miri.
#[inline(always)]
pub fn prefetch(bytes: &[u8], off: usize) {
    if let Some(b) = bytes.get(off) {
        prefetch_addr(std::ptr::from_ref(b));
    }
}

/// [`prefetch`] for an address: any address, since a prefetch neither faults nor reads anything
/// the program sees (F12).
#[inline(always)]
pub(crate) fn prefetch_addr(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: F12 — a prefetch reads nothing the program observes and cannot fault, whatever
    // the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// Clears the page and writes a fresh header.
pub fn format(page: &mut [u8], id: PageId, ty: PageType, level: u8) {
    page.fill(0);
    page[4] = ty as u8;
    page[5] = level;
    put_u64(page, 8, id.get());
}

/// Sets the page type and level, keeping the rest of the header.
pub fn set_type(page: &mut [u8], ty: PageType, level: u8) {
    page[4] = ty as u8;
    page[5] = level;
}

/// Sets the page LSN.
pub fn set_page_lsn(page: &mut [u8], lsn: Lsn) {
    put_u64(page, 16, lsn.0);
}

/// Computes the checksum over everything after the checksum field.
#[must_use]
pub fn checksum(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[4..])
}

/// Stores the checksum; call just before writing the page out.
pub fn seal(page: &mut [u8]) {
    let c = checksum(page);
    put_u32(page, 0, c);
}

/// Checks checksum, page id and page type of a page just read as `expected`.
///
/// # Errors
/// A description of the first failed check.
pub fn verify(page: &[u8], expected: PageId) -> Result<(), String> {
    let stored = get_u32(page, 0);
    let actual = checksum(page);
    if stored != actual {
        if page.iter().all(|&b| b == 0) {
            return Err("page was never written (all zeroes)".into());
        }
        return Err(format!("checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"));
    }
    if page_id(page) != expected.get() {
        return Err(format!("header names page {} (misdirected write?)", page_id(page)));
    }
    if page_type(page).is_none() {
        return Err(format!("unknown page type {}", page[4]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_checksum() {
        let mut p = vec![0u8; 4096];
        let id = PageId::new(7).unwrap();
        format(&mut p, id, PageType::Leaf, 0);
        set_page_lsn(&mut p, Lsn(99));
        seal(&mut p);
        assert_eq!(verify(&p, id), Ok(()));
        assert_eq!(page_type(&p), Some(PageType::Leaf));
        assert_eq!(page_lsn(&p), Lsn(99));
        assert!(verify(&p, PageId::new(8).unwrap()).unwrap_err().contains("misdirected"));
        p[100] ^= 1;
        assert!(verify(&p, id).unwrap_err().contains("checksum"));
    }

    #[test]
    fn zero_page_is_reported_as_unwritten() {
        let p = vec![0u8; 4096];
        assert!(verify(&p, PageId::new(1).unwrap()).unwrap_err().contains("never written"));
    }

    #[test]
    fn page_sizes() {
        assert!(valid_page_size(4096) && valid_page_size(8192) && valid_page_size(32768));
        assert!(!valid_page_size(65536) && !valid_page_size(5000) && !valid_page_size(2048));
    }
}

//! The metadata page (page 0): format version, page size, page count, free-page chain head and
//! the catalog of trees.
//!
//! Byte layout of page 0 (all integers little endian). Bytes 0..32 are the common page header
//! (`page.rs`) with page type `Meta`, page id 0, level 0.
//!
//! ```text
//! offset  size  field
//!      0    32  common page header (checksum, type = Meta, page id 0, ...)
//!     32     8  magic b"SWIZZLDB"
//!     40     4  format version (FORMAT_VERSION)
//!     44     4  page size in bytes
//!     48     8  page count (pages 0..page_count are in use or free)
//!     56     8  free-page chain head (0 = no free pages)
//!     64     4  flags: bit 0 LOGGED (the database has a write-ahead log), bit 1 CLEAN (closed
//!               cleanly: no page was written since page 0 was last written with it, F11)
//!     68     4  reserved (zero)
//!     72     8  database id (random at creation; the log directory records it too)
//!     80     4  tree count n
//!     84        n catalog entries, back to back:
//!                 2  name length L (1..=MAX_TREE_NAME)
//!                 L  name, UTF-8
//!                 8  root page id (1..page_count)
//!      ...      zero up to the end of the page
//! ```
//!
//! The free pages themselves are not listed here: they form a chain of `Free` pages whose body
//! starts with the next free page id (see `file.rs`), and [`Meta::free_pages`] is filled by
//! `PageFile::open` from that chain. Decoding treats the bytes as untrusted (crate README, F8):
//! every length and id is range-checked and a bad page is an error, never a panic.

use std::collections::BTreeMap;
use std::path::Path;

use swizzledb_sync::PageId;

use crate::error::{BufferError, Result};
use crate::page::{self, PageType, HEADER_SIZE};

/// Identifies a SwizzleDB file; stored right after the page header of page 0.
pub const MAGIC: [u8; 8] = *b"SWIZZLDB";
/// The on-disk format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 2;
/// Longest tree name, in bytes of UTF-8.
pub const MAX_TREE_NAME: usize = 64;

/// Offset of the magic.
pub(crate) const OFF_MAGIC: usize = HEADER_SIZE;
/// Offset of the format version.
pub(crate) const OFF_VERSION: usize = HEADER_SIZE + 8;
/// Offset of the page size.
pub(crate) const OFF_PAGE_SIZE: usize = HEADER_SIZE + 12;
/// Offset of the page count.
const OFF_PAGE_COUNT: usize = HEADER_SIZE + 16;
/// Offset of the free-page chain head.
const OFF_FREE_HEAD: usize = HEADER_SIZE + 24;
/// Offset of the flags word.
pub(crate) const OFF_FLAGS: usize = HEADER_SIZE + 32;
/// Offset of the database id.
const OFF_ID: usize = HEADER_SIZE + 40;
/// Offset of the tree count.
const OFF_TREE_COUNT: usize = HEADER_SIZE + 48;
/// Offset of the first catalog entry.
const OFF_CATALOG: usize = HEADER_SIZE + 52;
/// Flag: the database has a write-ahead log.
pub(crate) const FLAG_LOGGED: u32 = 1;
/// Flag: the file was closed cleanly (F11).
pub(crate) const FLAG_CLEAN: u32 = 2;
const KNOWN_FLAGS: u32 = FLAG_LOGGED | FLAG_CLEAN;
/// Fixed bytes of one catalog entry besides the name: name length and root page id.
const ENTRY_OVERHEAD: usize = 2 + 8;

/// The decoded metadata page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Page size of the file in bytes.
    pub page_size: usize,
    /// Number of pages in use or free, including page 0; the file holds at least this many.
    pub page_count: u64,
    /// Free pages, in chain order (the first is the chain head). Never contains page 0.
    pub free_pages: Vec<PageId>,
    /// The catalog: tree name to root page id.
    pub trees: BTreeMap<String, PageId>,
    /// The database has a write-ahead log: it is opened only through restart.
    pub logged: bool,
    /// The file was closed cleanly: every page is as the last close left it (F11).
    pub clean: bool,
    /// Identifies the database; its log directory records the same id.
    pub id: u64,
}

/// A new database id: random (std's per-process random hash keys, mixed with the time).
#[must_use]
pub fn new_database_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish().max(1)
}

/// Checks a tree name: 1..=[`MAX_TREE_NAME`] bytes of UTF-8.
///
/// # Errors
/// A description of what is wrong with the name, suitable for showing to the user.
pub fn validate_tree_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("tree name is empty; use 1 to 64 bytes of UTF-8".into());
    }
    if name.len() > MAX_TREE_NAME {
        return Err(format!(
            "tree name is {} bytes long; at most {MAX_TREE_NAME} bytes of UTF-8 are allowed",
            name.len()
        ));
    }
    Ok(())
}

/// The bytes of `page` at `off..off + n`, or `None` if they are not all inside the page.
fn field(page: &[u8], off: usize, n: usize) -> Option<&[u8]> {
    page.get(off..off.checked_add(n)?)
}

/// Little-endian u16 at `off`, bounds-checked.
fn read_u16(page: &[u8], off: usize) -> Option<u16> {
    let b = field(page, off, 2)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Little-endian u32 at `off`, bounds-checked.
fn read_u32(page: &[u8], off: usize) -> Option<u32> {
    let b: [u8; 4] = field(page, off, 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// Little-endian u64 at `off`, bounds-checked.
fn read_u64(page: &[u8], off: usize) -> Option<u64> {
    let b: [u8; 8] = field(page, off, 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Checks magic and format version of the start of a meta page and returns the page size it
/// records (not yet validated). Needs only the first `HEADER_SIZE + 16` bytes.
///
/// # Errors
/// [`BufferError::NotADatabase`] if the bytes are too few or the magic is wrong,
/// [`BufferError::FormatVersion`] if the version differs from [`FORMAT_VERSION`].
pub(crate) fn check_prefix(page: &[u8], file: &Path) -> Result<u32> {
    let not_db =
        |reason: &str| BufferError::NotADatabase { file: file.to_path_buf(), reason: reason.to_string() };
    let magic = field(page, OFF_MAGIC, MAGIC.len()).ok_or_else(|| not_db("file too short"))?;
    if magic != MAGIC {
        return Err(not_db("bad magic: the metadata page does not start with SWIZZLDB"));
    }
    let version = read_u32(page, OFF_VERSION).ok_or_else(|| not_db("file too short"))?;
    if version != FORMAT_VERSION {
        return Err(BufferError::FormatVersion {
            file: file.to_path_buf(),
            found: version,
            expected: FORMAT_VERSION,
        });
    }
    read_u32(page, OFF_PAGE_SIZE).ok_or_else(|| not_db("file too short"))
}

impl Meta {
    /// Metadata of a new, empty, unlogged and clean file: one page (the meta page), no free
    /// pages, no trees, a new database id.
    #[must_use]
    pub fn new(page_size: usize) -> Meta {
        Meta {
            page_size,
            page_count: 1,
            free_pages: Vec::new(),
            trees: BTreeMap::new(),
            logged: false,
            clean: true,
            id: new_database_id(),
        }
    }

    /// F16: the allocation is consistent: no free page is page 0, at or beyond the page count,
    /// or listed twice; no tree's root is free; no two trees share a root. `Err` names the
    /// first page found wrong and what is wrong with it.
    pub fn check_allocation(&self) -> std::result::Result<(), (PageId, String)> {
        let mut free = std::collections::HashSet::with_capacity(self.free_pages.len());
        for &id in &self.free_pages {
            let problem = if id == PageId::META {
                "the metadata page cannot be free"
            } else if id.get() >= self.page_count {
                "listed as free but beyond the page count"
            } else if !free.insert(id) {
                "listed as free twice"
            } else {
                continue;
            };
            return Err((id, problem.to_string()));
        }
        Meta::check_roots(self.trees.iter().map(|(name, &root)| (name.as_str(), root)), |p| free.contains(&p))
    }

    /// F16, the catalog's part: no tree's root `is_free`, and no two trees share a root. `Err`
    /// names the first root found wrong and what is wrong with it. Restart's analysis asks the
    /// same of a checkpoint's catalog (RECOVERY.md R10).
    pub fn check_roots<'a>(
        trees: impl IntoIterator<Item = (&'a str, PageId)>,
        is_free: impl Fn(PageId) -> bool,
    ) -> std::result::Result<(), (PageId, String)> {
        let mut roots: std::collections::HashMap<PageId, &str> = std::collections::HashMap::new();
        for (name, root) in trees {
            if is_free(root) {
                return Err((root, format!("the root of tree {name:?} is listed as free")));
            }
            if let Some(other) = roots.insert(root, name) {
                return Err((root, format!("the root of both tree {other:?} and tree {name:?}")));
            }
        }
        Ok(())
    }

    /// Bytes of page 0 that [`encode`](Self::encode) needs for this catalog; it fits if this
    /// is at most `page_size`.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.trees.keys().fold(OFF_CATALOG, |n, name| n.saturating_add(ENTRY_OVERHEAD + name.len()))
    }

    /// Formats `page` as the meta page (header included) describing `self`. The free-chain head
    /// is `free_pages[0]` (or 0); the chain itself is written by `PageFile::write_meta`.
    /// The page is not sealed: `PageFile::write_page` does that (F2).
    ///
    /// # Errors
    /// [`BufferError::Config`] if `page.len()` is not `self.page_size`, the page size is not
    /// supported, or a tree name is invalid; [`BufferError::CatalogFull`] if the catalog does not
    /// fit the page. On error `page` is left unchanged.
    pub fn encode(&self, page: &mut [u8]) -> Result<()> {
        if !page::valid_page_size(self.page_size) {
            return Err(BufferError::Config(format!(
                "unsupported page size {}: use a power of two from {} to {} bytes",
                self.page_size,
                page::MIN_PAGE_SIZE,
                page::MAX_PAGE_SIZE
            )));
        }
        if page.len() != self.page_size {
            return Err(BufferError::Config(format!(
                "meta page buffer is {} bytes but the page size is {}",
                page.len(),
                self.page_size
            )));
        }
        for name in self.trees.keys() {
            validate_tree_name(name)
                .map_err(|e| BufferError::Config(format!("cannot store tree {name:?}: {e}")))?;
        }
        if self.encoded_len() > page.len() {
            return Err(BufferError::CatalogFull { trees: self.trees.len() });
        }
        let tree_count = u32::try_from(self.trees.len())
            .map_err(|_| BufferError::CatalogFull { trees: self.trees.len() })?;
        let page_size = u32::try_from(self.page_size)
            .map_err(|_| BufferError::Config(format!("unsupported page size {}", self.page_size)))?;
        let head = self.free_pages.first().map_or(0, |p| p.get());

        page::format(page, PageId::META, PageType::Meta, 0);
        page[OFF_MAGIC..OFF_MAGIC + MAGIC.len()].copy_from_slice(&MAGIC);
        page::put_u32(page, OFF_VERSION, FORMAT_VERSION);
        page::put_u32(page, OFF_PAGE_SIZE, page_size);
        page::put_u64(page, OFF_PAGE_COUNT, self.page_count);
        page::put_u64(page, OFF_FREE_HEAD, head);
        let flags = if self.logged { FLAG_LOGGED } else { 0 } | if self.clean { FLAG_CLEAN } else { 0 };
        page::put_u32(page, OFF_FLAGS, flags);
        page::put_u64(page, OFF_ID, self.id);
        page::put_u32(page, OFF_TREE_COUNT, tree_count);
        let mut off = OFF_CATALOG;
        for (name, root) in &self.trees {
            // Names are 1..=64 bytes (validated above), so the length fits a u16; offsets stay
            // inside the page (encoded_len checked above).
            let len = name.len() as u16;
            page::put_u16(page, off, len);
            off += 2;
            page[off..off + name.len()].copy_from_slice(name.as_bytes());
            off += name.len();
            page::put_u64(page, off, root.get());
            off += 8;
        }
        Ok(())
    }

    /// Decodes a meta page (checksum already verified by the caller) into a `Meta` whose
    /// `free_pages` is empty; the chain head is not returned (see
    /// [`decode_with_free_head`](Self::decode_with_free_head)).
    ///
    /// # Errors
    /// [`BufferError::NotADatabase`] (too short, bad magic), [`BufferError::FormatVersion`], or
    /// [`BufferError::Corrupted`] on page 0 for any inconsistent field. Never panics.
    #[cfg(test)]
    pub fn decode(page: &[u8], file: &Path) -> Result<Meta> {
        Self::decode_with_free_head(page, file).map(|(meta, _)| meta)
    }

    /// Like [`decode`](Self::decode), also returning the free-page chain head (`None` = empty).
    /// The head is checked to be below `page_count`.
    ///
    /// # Errors
    /// As for [`decode`](Self::decode).
    pub(crate) fn decode_with_free_head(page: &[u8], file: &Path) -> Result<(Meta, Option<PageId>)> {
        let page_size_field = check_prefix(page, file)?;
        let corrupt =
            |reason: String| BufferError::Corrupted { file: file.to_path_buf(), page: PageId::META, reason };
        let short = || corrupt("metadata page is truncated".to_string());

        let page_size = usize::try_from(page_size_field).unwrap_or(usize::MAX);
        if !page::valid_page_size(page_size) {
            return Err(corrupt(format!("invalid page size {page_size_field} in metadata page")));
        }
        if page.len() != page_size {
            return Err(corrupt(format!(
                "metadata page records {page_size}-byte pages but {} bytes were read",
                page.len()
            )));
        }
        match page.get(4).copied().and_then(PageType::from_u8) {
            Some(PageType::Meta) => {}
            other => {
                return Err(corrupt(format!(
                    "page 0 has page type {}, expected the metadata page",
                    other.map_or_else(|| "unknown".to_string(), |t| format!("{t:?}"))
                )))
            }
        }
        let page_count = read_u64(page, OFF_PAGE_COUNT).ok_or_else(short)?;
        if page_count == 0 || page_count >= PageId::LIMIT {
            return Err(corrupt(format!("invalid page count {page_count}")));
        }
        let head_raw = read_u64(page, OFF_FREE_HEAD).ok_or_else(short)?;
        let free_head = if head_raw == 0 {
            None
        } else if head_raw < page_count {
            PageId::new(head_raw)
        } else {
            return Err(corrupt(format!(
                "free-page chain head {head_raw} is beyond the page count {page_count}"
            )));
        };
        let flags = read_u32(page, OFF_FLAGS).ok_or_else(short)?;
        if flags & !KNOWN_FLAGS != 0 {
            return Err(corrupt(format!("unknown flags {flags:#x} in the metadata page")));
        }
        let id = read_u64(page, OFF_ID).ok_or_else(short)?;
        let tree_count = read_u32(page, OFF_TREE_COUNT).ok_or_else(short)?;

        let mut trees = BTreeMap::new();
        let mut off = OFF_CATALOG;
        for i in 0..tree_count {
            let entry_corrupt = |what: &str| corrupt(format!("catalog entry {i}: {what}"));
            let name_len = usize::from(
                read_u16(page, off).ok_or_else(|| entry_corrupt("runs past the end of the page"))?,
            );
            off += 2;
            let name_bytes = field(page, off, name_len)
                .ok_or_else(|| entry_corrupt("name runs past the end of the page"))?;
            let name =
                std::str::from_utf8(name_bytes).map_err(|_| entry_corrupt("name is not valid UTF-8"))?;
            validate_tree_name(name).map_err(|e| entry_corrupt(&e))?;
            off += name_len;
            let root_raw = read_u64(page, off)
                .ok_or_else(|| entry_corrupt("root page id runs past the end of the page"))?;
            off += 8;
            let root = match PageId::new(root_raw) {
                Some(root) if root_raw != 0 && root_raw < page_count => root,
                _ => {
                    return Err(entry_corrupt(&format!(
                        "tree {name:?} has root page {root_raw}, outside 1..{page_count}"
                    )))
                }
            };
            if trees.insert(name.to_string(), root).is_some() {
                return Err(entry_corrupt(&format!("tree {name:?} appears twice")));
            }
        }
        let meta = Meta {
            page_size,
            page_count,
            free_pages: Vec::new(),
            trees,
            logged: flags & FLAG_LOGGED != 0,
            clean: flags & FLAG_CLEAN != 0,
            id,
        };
        Ok((meta, free_head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(n: u64) -> PageId {
        PageId::new(n).expect("small page id")
    }

    fn sample() -> Meta {
        let mut m = Meta::new(4096);
        m.page_count = 10;
        m.free_pages = vec![pid(4), pid(7)];
        m.trees.insert("users".into(), pid(2));
        m.trees.insert("ünïcödé".into(), pid(9));
        m
    }

    #[test]
    fn f16_an_allocation_that_contradicts_itself_is_named() {
        assert_eq!(sample().check_allocation(), Ok(()));
        type Case = (fn(&mut Meta), u64, &'static str);
        let cases: [Case; 6] = [
            (|m| m.free_pages.push(PageId::META), 0, "metadata page"),
            (|m| m.free_pages.push(pid(10)), 10, "beyond the page count"),
            (|m| m.free_pages.push(pid(7)), 7, "free twice"),
            (|m| m.free_pages.push(pid(2)), 2, "root of tree \"users\" is listed as free"),
            (
                |m| {
                    m.trees.insert("orders".into(), pid(9));
                },
                9,
                "root of both tree",
            ),
            (
                |m| {
                    m.trees.insert("zz".into(), pid(2));
                },
                2,
                "\"users\" and tree \"zz\"",
            ),
        ];
        for (change, page, what) in cases {
            let mut m = sample();
            change(&mut m);
            let (id, problem) = m.check_allocation().expect_err(what);
            assert_eq!(id.get(), page, "{problem}");
            assert!(problem.contains(what), "{problem:?} lacks {what:?}");
        }
    }

    #[test]
    fn encode_decode_roundtrip() {
        let m = sample();
        let mut page = vec![0u8; 4096];
        m.encode(&mut page).expect("encode");
        page::seal(&mut page);
        assert_eq!(page::verify(&page, PageId::META), Ok(()));
        let (d, head) = Meta::decode_with_free_head(&page, Path::new("x.db")).expect("decode");
        assert_eq!(head, Some(pid(4)));
        assert_eq!(d.page_size, 4096);
        assert_eq!(d.page_count, 10);
        assert_eq!(d.trees, m.trees);
        assert!(d.free_pages.is_empty());
        assert_eq!(m.encoded_len(), OFF_CATALOG + 2 * ENTRY_OVERHEAD + 5 + "ünïcödé".len());
    }

    #[test]
    fn tree_names_are_validated() {
        assert!(validate_tree_name("a").is_ok());
        assert!(validate_tree_name(&"x".repeat(MAX_TREE_NAME)).is_ok());
        assert!(validate_tree_name("").is_err());
        assert!(validate_tree_name(&"x".repeat(MAX_TREE_NAME + 1)).is_err());
        let mut m = Meta::new(4096);
        m.trees.insert(String::new(), pid(1));
        m.page_count = 2;
        let mut page = vec![0u8; 4096];
        assert!(matches!(m.encode(&mut page), Err(BufferError::Config(_))));
    }

    #[test]
    fn catalog_overflow_is_catalog_full() {
        let mut m = Meta::new(4096);
        m.page_count = 1000;
        let mut page = vec![0u8; 4096];
        let mut n = 0u64;
        loop {
            let name = format!("{:0>60}", n);
            m.trees.insert(name, pid(n + 1));
            n += 1;
            match m.encode(&mut page) {
                Ok(()) => assert!(m.encoded_len() <= 4096),
                Err(BufferError::CatalogFull { trees }) => {
                    assert_eq!(trees, m.trees.len());
                    assert!(m.encoded_len() > 4096);
                    break;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        // (4096 - 84) / (60 + 10) = 57 entries fit.
        assert_eq!(n, 58);
    }

    #[test]
    fn encode_rejects_wrong_buffer_size() {
        let m = Meta::new(8192);
        let mut page = vec![0u8; 4096];
        assert!(matches!(m.encode(&mut page), Err(BufferError::Config(_))));
        let m = Meta::new(5000);
        let mut page = vec![0u8; 5000];
        assert!(matches!(m.encode(&mut page), Err(BufferError::Config(_))));
    }

    #[test]
    fn decode_reports_bad_magic_and_version() {
        let file = Path::new("f.db");
        assert!(matches!(
            Meta::decode(&[], file),
            Err(BufferError::NotADatabase { reason, .. }) if reason.contains("too short")
        ));
        let page = vec![0u8; 4096];
        assert!(matches!(
            Meta::decode(&page, file),
            Err(BufferError::NotADatabase { reason, .. }) if reason.contains("bad magic")
        ));
        let mut page = vec![0u8; 4096];
        sample().encode(&mut page).expect("encode");
        page::put_u32(&mut page, OFF_VERSION, 1);
        assert!(matches!(
            Meta::decode(&page, file),
            Err(BufferError::FormatVersion { found: 1, expected: FORMAT_VERSION, .. })
        ));
    }

    #[test]
    fn decode_rejects_inconsistent_fields() {
        let file = Path::new("f.db");
        let good = {
            let mut p = vec![0u8; 4096];
            sample().encode(&mut p).expect("encode");
            p
        };
        let expect_corrupt = |p: &[u8], what: &str| match Meta::decode(p, file) {
            Err(BufferError::Corrupted { page, reason, .. }) => {
                assert_eq!(page, PageId::META);
                assert!(reason.contains(what), "{reason:?} should mention {what:?}");
            }
            other => panic!("expected Corrupted ({what}), got {other:?}"),
        };
        let mut p = good.clone();
        page::put_u32(&mut p, OFF_PAGE_SIZE, 5000);
        expect_corrupt(&p, "invalid page size");
        let mut p = good.clone();
        page::put_u32(&mut p, OFF_PAGE_SIZE, 8192);
        expect_corrupt(&p, "bytes were read");
        let mut p = good.clone();
        page::put_u64(&mut p, OFF_PAGE_COUNT, 0);
        expect_corrupt(&p, "page count");
        let mut p = good.clone();
        page::put_u64(&mut p, OFF_FREE_HEAD, 10);
        expect_corrupt(&p, "chain head");
        let mut p = good.clone();
        page::put_u32(&mut p, OFF_TREE_COUNT, u32::MAX);
        expect_corrupt(&p, "catalog entry");
        let mut p = good.clone();
        page::put_u16(&mut p, OFF_CATALOG, 4000);
        expect_corrupt(&p, "catalog entry 0");
        let mut p = good.clone();
        p[OFF_CATALOG + 2] = 0xff;
        expect_corrupt(&p, "UTF-8");
        let mut p = good.clone();
        p[4] = PageType::Leaf as u8;
        expect_corrupt(&p, "page type");
        // Root of "users" (first entry: 2 + 5 bytes, then the root).
        let mut p = good.clone();
        page::put_u64(&mut p, OFF_CATALOG + 7, 10);
        expect_corrupt(&p, "root page");
        // Two entries with the same name.
        let mut p = good;
        let second = OFF_CATALOG + 2 + 5 + 8;
        page::put_u16(&mut p, second, 5);
        p[second + 2..second + 7].copy_from_slice(b"users");
        page::put_u64(&mut p, second + 7, 3);
        expect_corrupt(&p, "twice");
    }

    /// Seeded xorshift64*, so the test needs no `rand` and is reproducible.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn decoding_random_pages_never_panics() {
        let mut rng = XorShift(0x5eed_1234_abcd_ef01);
        let file = Path::new("fuzz.db");
        let mut valid = vec![0u8; 4096];
        sample().encode(&mut valid).expect("encode");
        let (mut ok, mut errors) = (0, 0);
        for i in 0..1000 {
            let p: Vec<u8> = match i % 3 {
                // Pure noise of random length (mostly "too short" / "bad magic").
                0 => {
                    let len = (rng.next() % 9000) as usize;
                    (0..len).map(|_| rng.next() as u8).collect()
                }
                // A valid prefix followed by noise: exercises the count and catalog parsers.
                1 => {
                    let len = if rng.next().is_multiple_of(2) { 4096 } else { 8192 };
                    let mut p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    p[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&MAGIC);
                    page::put_u32(&mut p, OFF_VERSION, FORMAT_VERSION);
                    page::put_u32(&mut p, OFF_PAGE_SIZE, len as u32);
                    p[4] = PageType::Meta as u8;
                    page::put_u64(&mut p, OFF_PAGE_COUNT, rng.next() % 100);
                    page::put_u64(&mut p, OFF_FREE_HEAD, rng.next() % 100);
                    page::put_u32(&mut p, OFF_TREE_COUNT, (rng.next() % 4) as u32);
                    page::put_u16(&mut p, OFF_CATALOG, (rng.next() % 70) as u16);
                    p
                }
                // A valid page with a few bytes of the body changed.
                _ => {
                    let mut p = valid.clone();
                    for _ in 0..(1 + rng.next() % 3) {
                        let off = HEADER_SIZE + (rng.next() % 80) as usize;
                        p[off] = rng.next() as u8;
                    }
                    p
                }
            };
            match Meta::decode(&p, file) {
                Ok(m) => {
                    ok += 1;
                    assert!(page::valid_page_size(m.page_size) && m.page_count >= 1);
                }
                Err(e) => {
                    errors += 1;
                    assert!(e.to_string().contains("fuzz.db"), "error must name the file: {e}");
                }
            }
        }
        assert_eq!(ok + errors, 1000);
        assert!(ok > 0 && errors > 0, "ok {ok}, errors {errors}");
    }
}

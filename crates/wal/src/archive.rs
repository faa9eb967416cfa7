//! The log archive (README A1–A9; Lersch 2015, Sec. 2.3): logged page changes sorted by
//! (page id, LSN) into runs, each covering one LSN interval and indexed by page, so that the
//! changes of one page, or of a range of pages, are read without scanning the log.
//!
//! The archive stores opaque entries — a page id, an LSN and a body — as the log manager
//! stores opaque records: the engine decides which records are page changes and what an
//! entry's body holds. Each run also carries an opaque **state**: bytes the engine computed as
//! of the run's end LSN (for instant restart, its analysis state), read back by
//! [`Archive::newest_state`]. With the index's last LSN per page ([`Archive::last_lsns_since`])
//! restart learns what the log would have told it without scanning the log (A9).
//!
//! Run file `<begin LSN, 16 hex digits>-<end LSN, 16 hex digits>.run`, all integers little
//! endian:
//!
//! ```text
//! offset  size  header
//!      0     8  magic "SWZARCRN"
//!      8     4  format version (2)
//!     12     4  zero
//!     16     8  begin LSN (inclusive)
//!     24     8  end LSN (exclusive)
//!     32     8  entries
//!     40     8  bytes of the entry section (it starts at 64)
//!     48     8  pages: entries of the index
//!     56     4  bytes of the state (unpadded)
//!     60     4  CRC-32C of bytes 0..60
//!     64        entries, sorted by (page id, LSN), each 8-aligned:
//!                 page id u64, LSN u64, body length u32, CRC-32C u32 of (the 20 bytes before
//!                 it, the body), body, zero bytes to a multiple of 8
//!      …        index, one per page (32 bytes): page id u64, offset of its first entry u64,
//!               entries u32, zero u32, LSN of its last entry u64; then CRC-32C u32 of the
//!               index bytes and a zero u32
//!      …        state section: the state bytes, zero bytes to a multiple of 8, then CRC-32C
//!               u32 of the (unpadded) state bytes and a zero u32; present in every run, 8
//!               bytes for an empty state
//! ```
//!
//! Version 1 (24-byte index entries, no state section) is refused (A3): its runs cannot answer
//! [`Archive::last_lsns_since`] or [`Archive::newest_state`].

use crate::error::{LogError, Result};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb_io::{OpenMode, Vfs, VfsFile};
use swizzledb_sync::Lsn;

const MAGIC: &[u8; 8] = b"SWZARCRN";
const VERSION: u32 = 2;
const HEADER: usize = 64;
const ENTRY_HEADER: usize = 24;
const INDEX_ENTRY: usize = 32;
/// The CRC-32C and the zero word after the index, and after the state.
const TRAILER: usize = 8;
/// Entries larger than this are refused (A2): far above any page change the engine logs, and a
/// bound on what a damaged length field can make a reader allocate.
pub const MAX_ENTRY_BODY: usize = 64 << 20;
/// A run's state larger than this is refused (A4): a reader reads the state whole, so this
/// bounds what it allocates.
pub const MAX_STATE: usize = 256 << 20;
/// Bytes a merge or scan reads from a run at a time.
const READ_CHUNK: usize = 1 << 20;

/// One archived page change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The page changed.
    pub page: u64,
    /// The LSN of the log record it came from.
    pub lsn: Lsn,
    /// What the engine stored for it.
    pub body: Vec<u8>,
}

/// What the archive holds, run by run (oldest first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// First LSN the run covers.
    pub begin: Lsn,
    /// First LSN after it.
    pub end: Lsn,
    /// Entries in the run.
    pub entries: u64,
    /// Distinct pages in the run.
    pub pages: u64,
    /// The run file's size in bytes.
    pub bytes: u64,
    /// Bytes of the run's state (A9), 0 if it has none.
    pub state_bytes: u64,
}

/// One page's entry of a run's index (A2).
#[derive(Clone, Copy, Debug)]
struct PageRef {
    page: u64,
    /// File offset of the page's first entry.
    offset: u64,
    /// The page's entries in the run.
    entries: u32,
    /// The LSN of the page's last entry in the run.
    last: Lsn,
}

/// One run file, opened and checked (A3): its header and index in memory; its state stays on
/// disk and is read (and checked) on demand.
struct Run {
    path: PathBuf,
    file: Arc<dyn VfsFile>,
    summary: RunSummary,
    /// Bytes of the entry section (it starts at [`HEADER`]).
    data: u64,
    /// Sorted by page id.
    index: Vec<PageRef>,
    /// File offset of the state section.
    state_at: u64,
}

/// The log archive: a directory of runs over consecutive LSN intervals (A1).
pub struct Archive {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    /// The runs, oldest first; replaced whole when a run is added or runs are merged.
    runs: Mutex<Arc<Vec<Arc<Run>>>>,
    /// Held by `add_run` (A4): one new run at a time, always at the end.
    appender: Mutex<()>,
    /// Held by `merge` (A7): one merge at a time. A merge runs beside `add_run`: it replaces
    /// runs of the list's prefix, where `add_run` never writes.
    merger: Mutex<()>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive").field("dir", &self.dir).field("runs", &self.runs().len()).finish()
    }
}

fn corrupted(path: &Path, reason: impl Into<String>) -> LogError {
    LogError::ArchiveCorrupted { run: path.to_path_buf(), reason: reason.into() }
}

fn run_name(begin: Lsn, end: Lsn) -> String {
    format!("{:016x}-{:016x}.run", begin.0, end.0)
}

/// The interval a run file's name states, if it is a run file's name.
fn parse_name(path: &Path) -> Option<(Lsn, Lsn)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".run")?;
    let (b, e) = stem.split_once('-')?;
    if b.len() != 16 || e.len() != 16 {
        return None;
    }
    Some((Lsn(u64::from_str_radix(b, 16).ok()?), Lsn(u64::from_str_radix(e, 16).ok()?)))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

fn padded(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Reads exactly `buf.len()` bytes at `off`; a short file is damage.
fn read_exact(file: &dyn VfsFile, path: &Path, buf: &mut [u8], off: u64) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = file
            .read_at(&mut buf[done..], off + done as u64)
            .map_err(|e| LogError::io("reading", path, e))?;
        if n == 0 {
            return Err(corrupted(path, format!("the file ends before byte {}", off + buf.len() as u64)));
        }
        done += n;
    }
    Ok(())
}

/// Appends the encoding of `e` to `out` (A2).
fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&e.page.to_le_bytes());
    out.extend_from_slice(&e.lsn.0.to_le_bytes());
    out.extend_from_slice(&u32::try_from(e.body.len()).expect("bounded by MAX_ENTRY_BODY").to_le_bytes());
    let mut crc = crc32c::crc32c(&out[start..start + 20]);
    crc = crc32c::crc32c_append(crc, &e.body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&e.body);
    out.resize(start + ENTRY_HEADER + padded(e.body.len()), 0);
}

/// Decodes the entry at the start of `b` (at file offset `off`): the entry and its encoded
/// length, `Ok(None)` if `b` holds only part of it.
fn decode_entry(path: &Path, b: &[u8], off: u64) -> Result<Option<(Entry, usize)>> {
    if b.len() < ENTRY_HEADER {
        return Ok(None);
    }
    let len = u32_at(b, 16) as usize;
    if len > MAX_ENTRY_BODY {
        return Err(corrupted(path, format!("entry at byte {off} claims {len} bytes")));
    }
    let total = ENTRY_HEADER + padded(len);
    if b.len() < total {
        return Ok(None);
    }
    let body = &b[ENTRY_HEADER..ENTRY_HEADER + len];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&b[..20]), body);
    if crc != u32_at(b, 20) {
        return Err(corrupted(path, format!("entry at byte {off} fails its checksum")));
    }
    Ok(Some((Entry { page: u64_at(b, 0), lsn: Lsn(u64_at(b, 8)), body: body.to_vec() }, total)))
}

impl Run {
    /// Opens and checks the run at `path` (A3): header, name, size and index. The state's
    /// checksum is checked when the state is read ([`Run::state`]), not here.
    fn open(vfs: &dyn Vfs, path: &Path, (begin, end): (Lsn, Lsn)) -> Result<Run> {
        let file = vfs.open(path, OpenMode::EXISTING).map_err(|e| LogError::io("opening", path, e))?;
        let len = file.len().map_err(|e| LogError::io("reading the length of", path, e))?;
        let mut h = [0u8; HEADER];
        read_exact(&*file, path, &mut h, 0)?;
        if &h[..8] != MAGIC {
            return Err(corrupted(path, "not an archive run (wrong magic)"));
        }
        if crc32c::crc32c(&h[..60]) != u32_at(&h, 60) {
            return Err(corrupted(path, "header fails its checksum"));
        }
        match u32_at(&h, 8) {
            VERSION => {}
            v if v < VERSION => {
                return Err(corrupted(
                    path,
                    format!(
                        "the run was written by an older version of SwizzleDB (run format {v}, this \
                         version reads format {VERSION} only); move the archive directory away to \
                         start a new one (the log still holds everything restart needs)"
                    ),
                ))
            }
            v => {
                return Err(corrupted(
                    path,
                    format!(
                        "run format {v} is newer than this version reads ({VERSION}); open the \
                         archive with a newer SwizzleDB"
                    ),
                ))
            }
        }
        if (Lsn(u64_at(&h, 16)), Lsn(u64_at(&h, 24))) != (begin, end) {
            return Err(corrupted(path, "the header's LSN interval differs from the file name's"));
        }
        let (entries, data, pages) = (u64_at(&h, 32), u64_at(&h, 40), u64_at(&h, 48));
        let state_len = u32_at(&h, 56) as usize;
        if state_len > MAX_STATE {
            return Err(corrupted(path, format!("the header claims a state of {state_len} bytes")));
        }
        let state_section = (padded(state_len) + TRAILER) as u64;
        let index_bytes = pages.checked_mul(INDEX_ENTRY as u64);
        let want = index_bytes
            .and_then(|i| i.checked_add((HEADER + TRAILER) as u64 + state_section))
            .and_then(|x| x.checked_add(data));
        if want != Some(len) || pages > entries {
            return Err(corrupted(
                path,
                format!(
                    "{len} bytes do not fit {entries} entries of {data} bytes on {pages} pages and a \
                     state of {state_len} bytes"
                ),
            ));
        }
        let mut ib = vec![0u8; index_bytes.unwrap_or(0) as usize + TRAILER];
        read_exact(&*file, path, &mut ib, HEADER as u64 + data)?;
        let (body, tail) = ib.split_at(ib.len() - TRAILER);
        if crc32c::crc32c(body) != u32_at(tail, 0) {
            return Err(corrupted(path, "index fails its checksum"));
        }
        let mut index: Vec<PageRef> = Vec::with_capacity(pages as usize);
        let mut counted = 0u64;
        for chunk in body.chunks_exact(INDEX_ENTRY) {
            let r = PageRef {
                page: u64_at(chunk, 0),
                offset: u64_at(chunk, 8),
                entries: u32_at(chunk, 16),
                last: Lsn(u64_at(chunk, 24)),
            };
            let in_data = r.offset >= HEADER as u64 && r.offset < HEADER as u64 + data;
            let in_run = r.last >= begin && r.last < end;
            if !in_data || !in_run || r.entries == 0 || index.last().is_some_and(|p| p.page >= r.page) {
                return Err(corrupted(
                    path,
                    format!("index entry for page {} is out of order or range", r.page),
                ));
            }
            counted += u64::from(r.entries);
            index.push(r);
        }
        if counted != entries {
            return Err(corrupted(path, format!("the index counts {counted} entries, the header {entries}")));
        }
        let summary = RunSummary { begin, end, entries, pages, bytes: len, state_bytes: state_len as u64 };
        let state_at = HEADER as u64 + data + ib.len() as u64;
        Ok(Run { path: path.to_path_buf(), file, summary, data, index, state_at })
    }

    /// The run's state, read and checked against its checksum (A3, A9).
    fn state(&self) -> Result<Vec<u8>> {
        let len = self.summary.state_bytes as usize;
        let mut buf = vec![0u8; padded(len) + TRAILER];
        read_exact(&*self.file, &self.path, &mut buf, self.state_at)?;
        let (padding, tail) = buf[len..].split_at(buf.len() - len - TRAILER);
        if crc32c::crc32c(&buf[..len]) != u32_at(tail, 0) {
            return Err(corrupted(&self.path, "the state fails its checksum"));
        }
        if padding.iter().chain(&tail[4..]).any(|&b| b != 0) {
            return Err(corrupted(&self.path, "the state's padding is not zero"));
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// The entries of `page` with an LSN of at least `from`, in LSN order (A5). Each entry is
    /// checked (A3), and so is the index's last LSN against the page's last entry.
    fn page_entries(&self, page: u64, from: Lsn, out: &mut Vec<Entry>) -> Result<()> {
        let Ok(i) = self.index.binary_search_by_key(&page, |r| r.page) else { return Ok(()) };
        let PageRef { offset, entries, last, .. } = self.index[i];
        // A5: the index's last LSN says whether the run holds anything at or after `from`.
        if last < from {
            return Ok(());
        }
        // The page's entries are contiguous: up to the next page's, or the end of the entries.
        let data_end = HEADER as u64 + self.data;
        let extent_end = self.index.get(i + 1).map_or(data_end, |r| r.offset);
        if extent_end <= offset || extent_end > data_end {
            return Err(corrupted(
                &self.path,
                format!("index entry for page {page} is out of order or range"),
            ));
        }
        let mut buf = vec![0u8; usize::try_from(extent_end - offset).unwrap_or(usize::MAX)];
        read_exact(&*self.file, &self.path, &mut buf, offset)?;
        let mut at = 0usize;
        let mut previous: Option<Lsn> = None;
        for _ in 0..entries {
            let off = offset + at as u64;
            let Some((e, total)) = decode_entry(&self.path, &buf[at..], off)? else {
                return Err(corrupted(
                    &self.path,
                    format!("entry at byte {off} runs past page {page}'s entries"),
                ));
            };
            let in_order = previous.is_none_or(|p| p < e.lsn);
            if e.page != page || e.lsn < self.summary.begin || e.lsn >= self.summary.end || !in_order {
                return Err(corrupted(
                    &self.path,
                    format!("entry at byte {off} is not page {page}'s next in the run's interval"),
                ));
            }
            previous = Some(e.lsn);
            if e.lsn >= from {
                out.push(e);
            }
            at += total;
        }
        if previous != Some(last) || at != buf.len() {
            return Err(corrupted(
                &self.path,
                format!("the index gives page {page}'s last LSN as {last}, its entries end at {previous:?}"),
            ));
        }
        Ok(())
    }

    /// Every entry, in (page, LSN) order (A2), read in chunks.
    fn scan(self: &Arc<Run>) -> RunScan {
        RunScan {
            run: Arc::clone(self),
            buf: Vec::new(),
            at: 0,
            off: HEADER as u64,
            left: self.summary.entries,
        }
    }
}

/// A run's entries in order; damage is an error naming the run.
struct RunScan {
    run: Arc<Run>,
    buf: Vec<u8>,
    at: usize,
    off: u64,
    left: u64,
}

impl RunScan {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        if self.left == 0 {
            return Ok(None);
        }
        let end = HEADER as u64 + self.run.data;
        loop {
            if let Some((e, n)) = decode_entry(&self.run.path, &self.buf[self.at..], self.off)? {
                self.at += n;
                self.off += n as u64;
                self.left -= 1;
                return Ok(Some(e));
            }
            // Keep the partial entry and read the next chunk after it.
            self.buf.drain(..self.at);
            self.at = 0;
            let have = self.buf.len() as u64;
            let want = (end - self.off - have).min(READ_CHUNK as u64) as usize;
            if want == 0 {
                return Err(corrupted(
                    &self.run.path,
                    format!("entry at byte {} runs past the entries", self.off),
                ));
            }
            let start = self.buf.len();
            self.buf.resize(start + want, 0);
            read_exact(&*self.run.file, &self.run.path, &mut self.buf[start..], self.off + have)?;
        }
    }
}

/// Writes a run of `entries` (sorted by page and LSN) covering `[begin, end)` with `state` to its
/// file (A4): a temporary file, synced, renamed to the run's name, the directory synced.
fn write_run(
    vfs: &dyn Vfs,
    dir: &Path,
    (begin, end): (Lsn, Lsn),
    entries: &mut dyn Iterator<Item = Result<Entry>>,
    state: &[u8],
) -> Result<PathBuf> {
    let path = dir.join(run_name(begin, end));
    let tmp = dir.join(format!("{}.tmp", run_name(begin, end)));
    write_run_file(vfs, &tmp, (begin, end), entries, state, true)?;
    vfs.rename(&tmp, &path).map_err(|e| LogError::io("renaming", &tmp, e))?;
    vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
    Ok(path)
}

/// Writes a run file at `tmp` (any earlier file there removed), synced if `sync`: [`write_run`]
/// before the rename, and a spilled chunk of a [`RunBuilder`] (A4b), which is read back by the
/// same process and never renamed, so it needs no sync.
fn write_run_file(
    vfs: &dyn Vfs,
    tmp: &Path,
    (begin, end): (Lsn, Lsn),
    entries: &mut dyn Iterator<Item = Result<Entry>>,
    state: &[u8],
    sync: bool,
) -> Result<()> {
    let Some(state_len) = u32::try_from(state.len()).ok().filter(|&n| n as usize <= MAX_STATE) else {
        return Err(LogError::BadConfig {
            reason: format!(
                "an archive run's state of {} bytes exceeds the maximum of {MAX_STATE} bytes; keep \
                 the engine's state smaller",
                state.len()
            ),
        });
    };
    match vfs.remove(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(LogError::io("removing", tmp, e)),
        _ => {}
    }
    let file = vfs.open(tmp, OpenMode::CREATE_NEW).map_err(|e| LogError::io("creating", tmp, e))?;
    let mut out = Vec::with_capacity(READ_CHUNK + 4096);
    let mut off = HEADER as u64;
    let (mut count, mut index): (u64, Vec<PageRef>) = (0, Vec::new());
    let mut last: Option<(u64, Lsn)> = None;
    for e in entries {
        let e = e?;
        if e.lsn < begin || e.lsn >= end || e.body.len() > MAX_ENTRY_BODY {
            return Err(LogError::BadConfig {
                reason: format!("archive entry of page {} at {} (body of {} bytes) does not belong in a run of [{begin}, {end})", e.page, e.lsn, e.body.len()),
            });
        }
        if last.is_some_and(|l| l >= (e.page, e.lsn)) {
            return Err(LogError::BadConfig {
                reason: format!("archive entries out of (page, LSN) order at page {} {}", e.page, e.lsn),
            });
        }
        match index.last_mut() {
            Some(r) if r.page == e.page && r.entries < u32::MAX => {
                r.entries += 1;
                r.last = e.lsn;
            }
            Some(r) if r.page == e.page => {
                return Err(LogError::BadConfig {
                    reason: format!("page {} has more than {} entries in one archive run", e.page, u32::MAX),
                });
            }
            _ => {
                index.push(PageRef { page: e.page, offset: off + out.len() as u64, entries: 1, last: e.lsn })
            }
        }
        last = Some((e.page, e.lsn));
        count += 1;
        encode_entry(&e, &mut out);
        if out.len() >= READ_CHUNK {
            file.write_all_at(&out, off).map_err(|e| LogError::io("writing", tmp, e))?;
            off += out.len() as u64;
            out.clear();
        }
    }
    let data = off + out.len() as u64 - HEADER as u64;
    let index_start = out.len();
    for r in &index {
        out.extend_from_slice(&r.page.to_le_bytes());
        out.extend_from_slice(&r.offset.to_le_bytes());
        out.extend_from_slice(&r.entries.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&r.last.0.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out[index_start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    // The state section (A2): the state, zero bytes to a multiple of 8, its checksum, a zero
    // word. A large state is written from the caller's buffer rather than copied.
    let mut tail = vec![0u8; padded(state.len()) - state.len()];
    tail.extend_from_slice(&crc32c::crc32c(state).to_le_bytes());
    tail.extend_from_slice(&0u32.to_le_bytes());
    if state.len() <= READ_CHUNK {
        out.extend_from_slice(state);
        out.extend_from_slice(&tail);
    } else {
        for part in [&out[..], state] {
            file.write_all_at(part, off).map_err(|e| LogError::io("writing", tmp, e))?;
            off += part.len() as u64;
        }
        out = tail;
    }
    file.write_all_at(&out, off).map_err(|e| LogError::io("writing", tmp, e))?;
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&begin.0.to_le_bytes());
    h[24..32].copy_from_slice(&end.0.to_le_bytes());
    h[32..40].copy_from_slice(&count.to_le_bytes());
    h[40..48].copy_from_slice(&data.to_le_bytes());
    h[48..56].copy_from_slice(&(index.len() as u64).to_le_bytes());
    h[56..60].copy_from_slice(&state_len.to_le_bytes());
    let crc = crc32c::crc32c(&h[..60]);
    h[60..].copy_from_slice(&crc.to_le_bytes());
    file.write_all_at(&h, 0).map_err(|e| LogError::io("writing", tmp, e))?;
    if sync {
        file.sync().map_err(|e| LogError::io("syncing", tmp, e))?;
    }
    Ok(())
}

/// Bytes an entry held by a [`RunBuilder`] is counted for besides its body: the entry itself
/// and the allocator's bookkeeping of the body.
const HELD_OVERHEAD: usize = std::mem::size_of::<Entry>() + 16;

/// One new run's entries, gathered within a memory budget ([`Archive::run_builder`], A4b).
pub struct RunBuilder<'a> {
    archive: &'a Archive,
    budget: usize,
    /// Entries not spilled yet, in arrival order.
    held: Vec<Entry>,
    /// What `held` is counted for (bodies plus [`HELD_OVERHEAD`] each).
    held_bytes: usize,
    /// The chunks spilled so far, each sorted, open and already unlinked (A4b), with its
    /// level: 0 for a chunk of entries held, one more than its inputs' for a merge of chunks.
    /// Levels never rise toward the end.
    spills: Vec<(Arc<Run>, u32)>,
}

impl RunBuilder<'_> {
    /// Adds an entry; spills the entries held once they are counted over the budget.
    ///
    /// # Errors
    /// I/O errors writing or reading back a spilled chunk; the archive is as before, and the
    /// builder should be dropped.
    pub fn push(&mut self, entry: Entry) -> Result<()> {
        self.held_bytes += entry.body.len() + HELD_OVERHEAD;
        self.held.push(entry);
        if self.held_bytes > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Whether no entry was pushed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.spills.is_empty()
    }

    /// Sorts the entries held and writes them to a temporary run file (named `….spill.tmp`,
    /// which [`Archive::open`] removes if a crash leaves it); at [`MAX_SPILLS`] chunks, merges
    /// them with the chunks of the lowest level (the newest) into one of the next level
    /// instead, so that a builder keeps a bounded number of files open and rewrites each entry
    /// once per level. (Merging every chunk into one rewrote the whole run so far every
    /// MAX_SPILLS − 1 chunks: a run of n budgets cost about n²/62 budgets of writes.)
    fn spill(&mut self) -> Result<()> {
        let mut chunk = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        chunk.sort_by_key(|e| (e.page, e.lsn));
        if self.spills.len() + 1 >= MAX_SPILLS {
            let level = self.spills.last().map_or(0, |(_, l)| *l);
            let from = self.spills.iter().rposition(|(_, l)| *l != level).map_or(0, |i| i + 1);
            let inputs: Vec<Arc<Run>> = self.spills.drain(from..).map(|(r, _)| r).collect();
            let merged = self.write_spill(&mut kway(&inputs, chunk)?)?;
            self.spills.push((merged, level + 1));
        } else {
            let spill = self.write_spill(&mut chunk.into_iter().map(Ok))?;
            self.spills.push((spill, 0));
        }
        Ok(())
    }

    /// Writes `entries` (sorted, at least one) to a temporary run file, opens it and unlinks
    /// it: the open handle reads it until the builder is done (io README IO9).
    fn write_spill(&self, entries: &mut dyn Iterator<Item = Result<Entry>>) -> Result<Arc<Run>> {
        let a = self.archive;
        // A spill's interval only has to hold its entries' LSNs: the whole of them.
        let (lo, hi) = (Lsn(0), Lsn(u64::MAX));
        // Unique in the process, so that builders of one archive never share a file.
        static SPILLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SPILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = a.dir.join(format!("{}.{n}.spill.tmp", run_name(lo, hi)));
        write_run_file(&*a.vfs, &path, (lo, hi), entries, &[], false)?;
        let run = Run::open(&*a.vfs, &path, (lo, hi));
        a.vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
        Ok(Arc::new(run?))
    }

    /// Writes the run over `[begin, end)` with `state`, as [`Archive::add_run_with_state`]
    /// would have with every entry pushed: a k-way merge of the spilled chunks and the sorted
    /// rest when anything was spilled.
    ///
    /// # Errors
    /// As [`Archive::add_run_with_state`]; the archive is then as before.
    pub fn finish(self, begin: Lsn, end: Lsn, state: &[u8]) -> Result<RunSummary> {
        let RunBuilder { archive: a, mut held, spills, .. } = self;
        let spills: Vec<Arc<Run>> = spills.into_iter().map(|(r, _)| r).collect();
        let _a = a.appender.lock();
        a.check_follows(begin, end)?;
        held.sort_by_key(|e| (e.page, e.lsn));
        let path = write_run(&*a.vfs, &a.dir, (begin, end), &mut kway(&spills, held)?, state)?;
        a.install(&path, (begin, end))
    }
}

/// Spilled chunks a [`RunBuilder`] keeps before it merges them into one (A4b).
const MAX_SPILLS: usize = 32;

/// The k-way merge, in (page, LSN) order, of `runs` (each in that order) and `rest` (sorted).
fn kway(runs: &[Arc<Run>], rest: Vec<Entry>) -> Result<impl Iterator<Item = Result<Entry>>> {
    let mut scans: Vec<RunScan> = runs.iter().map(Run::scan).collect();
    let mut rest = rest.into_iter();
    // The heap's sources: the runs' scans, then the rest (`own`).
    let own = scans.len();
    let mut heap = BinaryHeap::with_capacity(own + 1);
    for (i, s) in scans.iter_mut().enumerate() {
        if let Some(entry) = s.next_entry()? {
            heap.push(Head { entry, source: i });
        }
    }
    if let Some(entry) = rest.next() {
        heap.push(Head { entry, source: own });
    }
    Ok(std::iter::from_fn(move || {
        let Head { entry, source } = heap.pop()?;
        let next = if source == own { Ok(rest.next()) } else { scans[source].next_entry() };
        match next {
            Ok(Some(next)) => heap.push(Head { entry: next, source }),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(entry))
    }))
}

impl std::fmt::Debug for RunBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunBuilder")
            .field("budget", &self.budget)
            .field("held", &self.held.len())
            .field("spills", &self.spills.len())
            .finish_non_exhaustive()
    }
}

/// The archived entries of an LSN interval in (page, LSN) order ([`Archive::between`], A5b).
pub struct Between {
    scans: Vec<RunScan>,
    /// The next entry in the interval of each scan that has one.
    heap: BinaryHeap<Head>,
    from: Lsn,
    to: Lsn,
}

impl Between {
    /// The next entry: the smallest (page, LSN) left in the interval.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming a damaged run.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        let Some(Head { entry, source }) = self.heap.pop() else { return Ok(None) };
        self.refill(source)?;
        Ok(Some(entry))
    }

    /// Puts scan `i`'s next entry in the interval on the heap, if it has one.
    fn refill(&mut self, i: usize) -> Result<()> {
        while let Some(entry) = self.scans[i].next_entry()? {
            if entry.lsn >= self.from && entry.lsn < self.to {
                self.heap.push(Head { entry, source: i });
                break;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Between {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Between")
            .field("runs", &self.scans.len())
            .field("from", &self.from)
            .field("to", &self.to)
            .finish()
    }
}

/// The next entry of a k-way merge: the smallest (page, LSN) at the head of a run's scan.
struct Head {
    entry: Entry,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        (self.entry.page, self.entry.lsn) == (other.entry.page, other.entry.lsn)
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    // Reversed: BinaryHeap is a max-heap, the merge wants the smallest first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.entry.page, other.entry.lsn).cmp(&(self.entry.page, self.entry.lsn))
    }
}

impl Archive {
    /// Opens the archive in `dir`, creating the directory if needed (A6): removes temporary
    /// files and runs whose interval another run covers (inputs of a finished merge), then
    /// checks every run and that the runs' intervals follow each other without gap or overlap.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming the first damaged run, or the runs
    /// around a gap or an overlap.
    pub fn open(vfs: Arc<dyn Vfs>, dir: impl Into<PathBuf>) -> Result<Archive> {
        let dir = dir.into();
        vfs.create_dir_all(&dir).map_err(|e| LogError::io("creating directory", &dir, e))?;
        let mut found: Vec<(Lsn, Lsn, PathBuf)> = Vec::new();
        let mut removed = false;
        for path in vfs.list(&dir).map_err(|e| LogError::io("listing", &dir, e))? {
            if path.extension().is_some_and(|x| x == "tmp") {
                vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
                removed = true;
            } else if let Some((b, e)) = parse_name(&path) {
                if b >= e {
                    return Err(corrupted(&path, "the name's interval is empty"));
                }
                found.push((b, e, path));
            }
        }
        // Widest first among runs starting at the same LSN, so covered runs follow their cover.
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut kept: Vec<(Lsn, Lsn, PathBuf)> = Vec::new();
        for (b, e, path) in found {
            if let Some(last) = kept.last() {
                if e <= last.1 {
                    // A6: an input of a merge whose output is complete.
                    vfs.remove(&path).map_err(|err| LogError::io("removing", &path, err))?;
                    removed = true;
                    continue;
                }
                if b != last.1 {
                    let what = if b < last.1 { "overlaps" } else { "leaves a gap after" };
                    return Err(corrupted(
                        &path,
                        format!("its interval [{b}, {e}) {what} the run ending at {}", last.1),
                    ));
                }
            }
            kept.push((b, e, path));
        }
        if removed {
            vfs.sync_dir(&dir).map_err(|e| LogError::io("syncing directory", &dir, e))?;
        }
        let runs = kept
            .into_iter()
            .map(|(b, e, path)| Run::open(&*vfs, &path, (b, e)).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Archive {
            vfs,
            dir,
            runs: Mutex::new(Arc::new(runs)),
            appender: Mutex::new(()),
            merger: Mutex::new(()),
        })
    }

    /// The archive's directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The runs, oldest first.
    #[must_use]
    pub fn runs(&self) -> Vec<RunSummary> {
        self.runs.lock().iter().map(|r| r.summary.clone()).collect()
    }

    /// The first LSN not archived yet (the newest run's end), `None` while the archive is empty.
    #[must_use]
    pub fn end(&self) -> Option<Lsn> {
        self.runs.lock().last().map(|r| r.summary.end)
    }

    /// The first LSN archived (the oldest run's begin), `None` while the archive is empty.
    #[must_use]
    pub fn begin(&self) -> Option<Lsn> {
        self.runs.lock().first().map(|r| r.summary.begin)
    }

    /// Adds a run covering `[begin, end)` holding `entries` and no state:
    /// [`Archive::add_run_with_state`] with an empty state.
    ///
    /// # Errors
    /// As [`Archive::add_run_with_state`].
    pub fn add_run(&self, begin: Lsn, end: Lsn, entries: Vec<Entry>) -> Result<RunSummary> {
        self.add_run_with_state(begin, end, entries, &[])
    }

    /// Adds a run covering `[begin, end)` holding `entries` (any order; sorted here) and `state`,
    /// the engine's opaque state as of `end` (A4, A9; empty for none). The run must start where
    /// the archive ends (or anywhere, while it is empty), and every entry's LSN must lie in the
    /// interval. The run is durable when this returns.
    ///
    /// # Errors
    /// [`LogError::BadConfig`] for an interval that does not follow the archive, an entry
    /// outside it, or a state larger than [`MAX_STATE`]; I/O errors (the archive is then as
    /// before: the run's temporary file is removed at the next open).
    pub fn add_run_with_state(
        &self,
        begin: Lsn,
        end: Lsn,
        mut entries: Vec<Entry>,
        state: &[u8],
    ) -> Result<RunSummary> {
        let _a = self.appender.lock();
        self.check_follows(begin, end)?;
        entries.sort_by_key(|e| (e.page, e.lsn));
        let path = write_run(&*self.vfs, &self.dir, (begin, end), &mut entries.into_iter().map(Ok), state)?;
        self.install(&path, (begin, end))
    }

    /// Entries for one new run gathered within `budget` bytes of memory (A4b): push them in any
    /// order, then [`RunBuilder::finish`] writes the run as [`Archive::add_run_with_state`] does.
    /// Past the budget the entries held are sorted and spilled to a temporary file, and `finish`
    /// merges the spilled chunks with the rest, so a run of any size costs about `budget` bytes
    /// plus a read buffer per chunk. A budget of 0 spills every entry.
    #[must_use]
    pub fn run_builder(&self, budget: usize) -> RunBuilder<'_> {
        RunBuilder { archive: self, budget, held: Vec::new(), held_bytes: 0, spills: Vec::new() }
    }

    /// A4: a new run must start where the archive ends (anywhere, while it is empty).
    fn check_follows(&self, begin: Lsn, end: Lsn) -> Result<()> {
        if begin >= end || self.end().is_some_and(|e| e != begin) {
            return Err(LogError::BadConfig {
                reason: format!(
                    "a run of [{begin}, {end}) does not follow the archive, which ends at {:?}",
                    self.end()
                ),
            });
        }
        Ok(())
    }

    /// Opens the run just written at `path` and appends it to the list (the appender held).
    fn install(&self, path: &Path, (begin, end): (Lsn, Lsn)) -> Result<RunSummary> {
        let run = Arc::new(Run::open(&*self.vfs, path, (begin, end))?);
        let summary = run.summary.clone();
        let mut runs = self.runs.lock();
        let mut next = Vec::clone(&runs);
        next.push(run);
        *runs = Arc::new(next);
        Ok(summary)
    }

    /// Merges the `n` oldest runs into one: [`Archive::merge`] of `0..n`.
    ///
    /// # Errors
    /// As [`Archive::merge`].
    pub fn merge_oldest(&self, n: usize) -> Result<Option<RunSummary>> {
        self.merge(0, n)
    }

    /// Merges the `n` adjacent runs from the `first` (0 = the oldest) into one (A7; at least two),
    /// by a k-way merge that reads each in chunks. The merged run carries the state of its
    /// newest input (read and checked first). It is durable before its inputs are removed; a
    /// crash in between leaves both, and [`Archive::open`] removes the inputs. Returns the
    /// merged run, or `None` if the range holds fewer than two runs.
    ///
    /// # Errors
    /// I/O errors and damage in an input ([`LogError::ArchiveCorrupted`] naming it); the
    /// archive is then as before.
    pub fn merge(&self, first: usize, n: usize) -> Result<Option<RunSummary>> {
        let _m = self.merger.lock();
        let all = Arc::clone(&self.runs.lock());
        let first = first.min(all.len());
        let n = n.min(all.len() - first);
        if n < 2 {
            return Ok(None);
        }
        let inputs = &all[first..first + n];
        let (begin, end) = (inputs[0].summary.begin, inputs[n - 1].summary.end);
        // The state as of `end` is the newest input's.
        let state = inputs[n - 1].state()?;
        let path = write_run(&*self.vfs, &self.dir, (begin, end), &mut kway(inputs, Vec::new())?, &state)?;
        drop(state);
        let run = Arc::new(Run::open(&*self.vfs, &path, (begin, end))?);
        let summary = run.summary.clone();
        {
            // Only merges replace runs, and this is the only one running; `add_run` may have
            // appended meanwhile, after the inputs: they are still at `first..first + n`.
            let mut runs = self.runs.lock();
            let mut next: Vec<Arc<Run>> = runs[..first].to_vec();
            next.push(run);
            next.extend(runs[first + n..].iter().cloned());
            *runs = Arc::new(next);
        }
        // Readers that still hold an input read it through its open handle (io README IO9).
        for r in inputs {
            self.vfs.remove(&r.path).map_err(|e| LogError::io("removing", &r.path, e))?;
        }
        self.vfs.sync_dir(&self.dir).map_err(|e| LogError::io("syncing directory", &self.dir, e))?;
        Ok(Some(summary))
    }

    /// The newest run's end LSN and its state (A9): what the engine stored with
    /// [`Archive::add_run_with_state`] as of that LSN. `None` if the archive is empty or the
    /// newest run has no state. Reads the state from the run file and checks it (A3).
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming the newest run if its state is damaged.
    pub fn newest_state(&self) -> Result<Option<(Lsn, Vec<u8>)>> {
        let runs = Arc::clone(&self.runs.lock());
        let Some(run) = runs.last() else { return Ok(None) };
        if run.summary.state_bytes == 0 {
            return Ok(None);
        }
        Ok(Some((run.summary.end, run.state()?)))
    }

    /// For every page with an entry in a run whose interval ends after `from`, the LSN of its
    /// newest entry in those runs, sorted by page id (A9). The granularity is the run: if `from`
    /// lies inside a run, that run's pages all count, also those whose entries there are all
    /// below `from` (their LSN is then below `from`; filter on `lsn >= from` for exactly the
    /// pages changed since `from`). Reads only the in-memory indexes: one k-way merge of the
    /// runs' page lists, no entry is read.
    #[must_use]
    pub fn last_lsns_since(&self, from: Lsn) -> Vec<(u64, Lsn)> {
        let runs = Arc::clone(&self.runs.lock());
        let lists: Vec<&[PageRef]> =
            runs.iter().filter(|r| r.summary.end > from).map(|r| &r.index[..]).collect();
        let mut at = vec![0usize; lists.len()];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
            lists.iter().enumerate().filter_map(|(i, l)| Some(Reverse((l.first()?.page, i)))).collect();
        let mut out: Vec<(u64, Lsn)> = Vec::with_capacity(lists.iter().map(|l| l.len()).max().unwrap_or(0));
        while let Some(Reverse((page, i))) = heap.pop() {
            let last = lists[i][at[i]].last;
            at[i] += 1;
            if let Some(next) = lists[i].get(at[i]) {
                heap.push(Reverse((next.page, i)));
            }
            match out.last_mut() {
                Some((p, l)) if *p == page => *l = (*l).max(last),
                _ => out.push((page, last)),
            }
        }
        out
    }

    /// Every archived change of `page` with an LSN of at least `from`, in LSN order (A5): one
    /// index lookup per run whose interval ends after `from`.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming the run an entry is damaged in.
    pub fn page_entries(&self, page: u64, from: Lsn) -> Result<Vec<Entry>> {
        let runs = Arc::clone(&self.runs.lock());
        let mut out = Vec::new();
        for r in runs.iter().filter(|r| r.summary.end > from) {
            r.page_entries(page, from, &mut out)?;
        }
        Ok(out)
    }

    /// Every archived entry with an LSN in `[from, to)`, in (page, LSN) order (A5b), in memory:
    /// [`Archive::between`] collected.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming a damaged run.
    pub fn entries_between(&self, from: Lsn, to: Lsn) -> Result<Vec<Entry>> {
        let mut between = self.between(from, to)?;
        let mut out = Vec::new();
        while let Some(e) = between.next_entry()? {
            out.push(e);
        }
        Ok(out)
    }

    /// The archived entries with an LSN in `[from, to)`, in (page, LSN) order, read as they are
    /// taken (A5b): what the decoupled page cleaner replays (Lersch 2015, Sec. 4.1). A k-way
    /// merge of the runs whose interval meets `[from, to)` (a snapshot of the run list, A8),
    /// each already in that order, so the interval is never held in memory whole.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming a damaged run.
    pub fn between(&self, from: Lsn, to: Lsn) -> Result<Between> {
        let runs = Arc::clone(&self.runs.lock());
        let scans: Vec<RunScan> =
            runs.iter().filter(|r| r.summary.end > from && r.summary.begin < to).map(Run::scan).collect();
        let mut between = Between { heap: BinaryHeap::with_capacity(scans.len()), scans, from, to };
        for i in 0..between.scans.len() {
            between.refill(i)?;
        }
        Ok(between)
    }

    /// Every archived entry, run by run (oldest first), each run in (page, LSN) order.
    ///
    /// # Errors
    /// I/O errors; [`LogError::ArchiveCorrupted`] naming a damaged run.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let runs = Arc::clone(&self.runs.lock());
        let mut out = Vec::new();
        for r in runs.iter() {
            let mut s = r.scan();
            while let Some(e) = s.next_entry()? {
                out.push(e);
            }
        }
        Ok(out)
    }
}

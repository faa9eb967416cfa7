//! Buffer reference traces (rule B17 of the crate README; byte layout in `docs/trace-format.md`).
//!
//! A pool opened with [`crate::PoolConfig::trace`] records every fix, unfix, page read,
//! eviction, allocation and free as a [`TraceEvent`]. Each thread appends its events to its own
//! block buffer without any lock; a full block (64 KiB) is written to the trace file under the
//! file's mutex, so the only lock is one per block. When the pool is dropped (or
//! [`crate::BufferPool::finish_trace`] is called) the partial blocks of every thread are written.
//!
//! The same block encoding is available to other producers through [`TraceWriter`] (synthetic
//! reference strings), and [`TraceReader`] decodes a file with typed errors for bad input.
//!
//! ```
//! use swizzledb_buffer::{EventKind, PoolMode, TraceEvent, TraceHeader, TraceReader, TraceWriter};
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("refs.swzt");
//! let header = TraceHeader { page_size: 8192, mode: PoolMode::Swizzling, frames: 100, start_unix_ns: 0 };
//! let mut w = TraceWriter::create(&path, &header)?;
//! for (i, page) in [7u64, 3, 7].into_iter().enumerate() {
//!     w.write(&TraceEvent::fix(0, i as u64, page, None, swizzledb_sync::LatchMode::Shared, true))?;
//! }
//! w.finish()?;
//! assert_eq!(swizzledb_buffer::page_references(&path)?, vec![7, 3, 7]);
//! let events: Vec<_> = TraceReader::open(&path)?.collect::<Result<_, _>>()?;
//! assert!(events.iter().all(|e| e.kind == EventKind::Fix));
//! # Ok::<(), swizzledb_buffer::TraceError>(())
//! ```

use crate::pool::PoolMode;
use parking_lot::Mutex;
use std::cell::{RefCell, UnsafeCell};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use swizzledb_sync::{LatchMode, PageId};

/// The first eight bytes of every trace file.
pub const TRACE_MAGIC: [u8; 8] = *b"SWZTRACE";
/// The trace format version this build writes and reads.
pub const TRACE_VERSION: u32 = 1;
/// Bytes of the file header.
const HEADER_LEN: usize = 32;
/// Bytes of a block header: thread, event count, payload length, base timestamp.
const BLOCK_HEADER_LEN: usize = 20;
/// A thread's block is written once its payload reaches this many bytes.
const BLOCK_BYTES: usize = 64 << 10;
/// The largest encoded event: tag, three 10-byte varints.
const MAX_EVENT_LEN: usize = 31;
/// Readers reject blocks with a larger payload (a bad length must not allocate gigabytes).
const MAX_BLOCK_PAYLOAD: u32 = 16 << 20;

/// What happened to a page.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum EventKind {
    /// A fix (the page was latched and handed out); carries latch mode and hit/miss.
    Fix,
    /// The fix guard was dropped; carries the latch mode released.
    Unfix,
    /// The page was read from the file (a miss; the `Fix` with `hit == Some(false)` follows).
    Read,
    /// The page's frame was freed by eviction (B13/B14); carries the parent the page was
    /// swizzled in, if any.
    Evict,
    /// A new page was allocated and fixed exclusively (it has no `Fix` event; its `Unfix` or
    /// `Free` ends the hold).
    Alloc,
    /// The page was freed (B11); this also ends the hold of its guard (no `Unfix` follows).
    Free,
}

impl EventKind {
    /// All kinds, in code order.
    pub const ALL: [EventKind; 6] = [
        EventKind::Fix,
        EventKind::Unfix,
        EventKind::Read,
        EventKind::Evict,
        EventKind::Alloc,
        EventKind::Free,
    ];

    /// The name used in CSV files.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Fix => "fix",
            EventKind::Unfix => "unfix",
            EventKind::Read => "read",
            EventKind::Evict => "evict",
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Option<EventKind> {
        EventKind::ALL.get(usize::from(c)).copied()
    }

    /// True for the kinds that carry a latch mode (fix, unfix, alloc).
    #[must_use]
    pub fn has_latch(self) -> bool {
        matches!(self, EventKind::Fix | EventKind::Unfix | EventKind::Alloc)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One recorded buffer event.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TraceEvent {
    /// What happened.
    pub kind: EventKind,
    /// The recording thread's number within the trace (0, 1, … in order of first event).
    pub thread: u32,
    /// Nanoseconds since the trace started.
    pub time_ns: u64,
    /// The page.
    pub page: PageId,
    /// The page holding the reference that led here, if known: the parent of a fix through
    /// `fix_child`, the swizzled parent of an evicted page.
    pub parent: Option<PageId>,
    /// The latch mode, for fix, unfix and alloc (and only for those).
    pub latch: Option<LatchMode>,
    /// Hit (true) or miss (false), for fix (and only for fix).
    pub hit: Option<bool>,
}

impl TraceEvent {
    /// A fix event. Page ids at or above 2^63 are clamped into range (they cannot occur in a
    /// pool); use the struct literal with [`PageId::new`] to check instead.
    #[must_use]
    pub fn fix(
        thread: u32,
        time_ns: u64,
        page: u64,
        parent: Option<u64>,
        latch: LatchMode,
        hit: bool,
    ) -> Self {
        TraceEvent {
            kind: EventKind::Fix,
            thread,
            time_ns,
            page: clamp_page(page),
            parent: parent.map(clamp_page),
            latch: Some(latch),
            hit: Some(hit),
        }
    }

    /// Checks that latch and hit are present exactly for the kinds that carry them.
    ///
    /// # Errors
    /// [`TraceError::InvalidEvent`] naming the field.
    pub fn validate(&self) -> Result<(), TraceError> {
        if self.latch.is_some() != self.kind.has_latch() {
            return Err(TraceError::InvalidEvent {
                reason: format!(
                    "a {} event must {}carry a latch mode",
                    self.kind,
                    neg(self.kind.has_latch())
                ),
            });
        }
        if self.hit.is_some() != (self.kind == EventKind::Fix) {
            return Err(TraceError::InvalidEvent {
                reason: format!(
                    "a {} event must {}carry hit/miss",
                    self.kind,
                    neg(self.kind == EventKind::Fix)
                ),
            });
        }
        Ok(())
    }
}

fn neg(yes: bool) -> &'static str {
    if yes {
        ""
    } else {
        "not "
    }
}

fn clamp_page(p: u64) -> PageId {
    PageId::new(p.min(PageId::LIMIT - 1)).expect("clamped below the limit")
}

/// The file header: how the recording pool was configured.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TraceHeader {
    /// Page size in bytes (0 if not applicable, e.g. synthetic traces).
    pub page_size: u32,
    /// The recording pool's mode.
    pub mode: PoolMode,
    /// The recording pool's capacity in frames (0 if not applicable).
    pub frames: u32,
    /// Wall-clock time the trace started, nanoseconds since the Unix epoch (0 if unknown).
    pub start_unix_ns: u64,
}

impl TraceHeader {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&TRACE_MAGIC);
        b[8..12].copy_from_slice(&TRACE_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16] = mode_code(self.mode);
        b[20..24].copy_from_slice(&self.frames.to_le_bytes());
        b[24..32].copy_from_slice(&self.start_unix_ns.to_le_bytes());
        b
    }
}

fn mode_code(m: PoolMode) -> u8 {
    match m {
        PoolMode::Traditional => 0,
        PoolMode::Swizzling => 1,
        PoolMode::MainMemory => 2,
    }
}

/// What a finished trace file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    /// The trace file.
    pub path: PathBuf,
    /// Events written.
    pub events: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Threads that recorded events.
    pub threads: u32,
}

/// What can go wrong writing or reading a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The operating system reported an I/O error on a trace or CSV file.
    #[error("I/O error on {file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The file does not start with the trace magic.
    #[error("{file} is not a SwizzleDB trace ({reason}); record one with `swizzledb trace record`")]
    NotATrace {
        /// The file.
        file: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file was written in another format version.
    #[error("{file} has trace format version {found}; this build reads version {expected}")]
    Version {
        /// The file.
        file: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The file ends inside a header, block or event (e.g. the recording process was killed).
    #[error(
        "{file} is truncated: the {what} at byte {offset} is incomplete (the recording did not \
         finish; events before it are usable)"
    )]
    Truncated {
        /// The file.
        file: PathBuf,
        /// Byte offset where the incomplete part starts.
        offset: u64,
        /// What is incomplete: "header", "block header", "block".
        what: &'static str,
    },
    /// A block or event that cannot be decoded.
    #[error("{file} is corrupted at byte {offset}: {reason}")]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// Byte offset of the bad block or event.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// An event given to [`TraceWriter::write`] that the format cannot represent.
    #[error("invalid trace event: {reason}")]
    InvalidEvent {
        /// What is wrong with it.
        reason: String,
    },
}

fn io_err(file: &Path) -> impl FnOnce(io::Error) -> TraceError + '_ {
    move |source| TraceError::Io { file: file.to_path_buf(), source }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

const TAG_KIND: u8 = 0b0000_0111;
const TAG_EXCLUSIVE: u8 = 0b0000_1000;
const TAG_HIT: u8 = 0b0001_0000;
const TAG_PARENT: u8 = 0b0010_0000;
const TAG_RESERVED: u8 = 0b1100_0000;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a varint at `*pos`; `None` if it runs past the end or exceeds 64 bits.
fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        let bits = u64::from(byte & 0x7F);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// One thread's pending block: the 20-byte header space followed by encoded events.
struct Block {
    thread: u32,
    count: u32,
    base_ns: u64,
    last_ns: u64,
    bytes: Vec<u8>,
}

impl Block {
    fn new(thread: u32) -> Block {
        let mut bytes = Vec::with_capacity(BLOCK_HEADER_LEN + BLOCK_BYTES + MAX_EVENT_LEN);
        bytes.resize(BLOCK_HEADER_LEN, 0);
        Block { thread, count: 0, base_ns: 0, last_ns: 0, bytes }
    }

    /// Appends an event (the caller has validated it). Timestamps are stored as zigzag deltas
    /// from the previous event of the block, so any order can be represented.
    fn push(
        &mut self,
        kind: EventKind,
        time_ns: u64,
        page: u64,
        parent: Option<u64>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        if self.count == 0 {
            self.base_ns = time_ns;
            self.last_ns = time_ns;
        }
        let mut tag = kind.code();
        if latch == Some(LatchMode::Exclusive) {
            tag |= TAG_EXCLUSIVE;
        }
        if hit == Some(true) {
            tag |= TAG_HIT;
        }
        if parent.is_some() {
            tag |= TAG_PARENT;
        }
        self.bytes.push(tag);
        put_varint(&mut self.bytes, zigzag(time_ns.wrapping_sub(self.last_ns) as i64));
        put_varint(&mut self.bytes, page);
        if let Some(p) = parent {
            put_varint(&mut self.bytes, p);
        }
        self.last_ns = time_ns;
        self.count += 1;
    }

    fn is_full(&self) -> bool {
        self.bytes.len() >= BLOCK_HEADER_LEN + BLOCK_BYTES || self.count == u32::MAX
    }

    /// Fills in the header, hands the block's bytes to `write`, and empties the block.
    fn drain(&mut self, write: impl FnOnce(&[u8], u32) -> Result<(), TraceError>) -> Result<(), TraceError> {
        if self.count == 0 {
            return Ok(());
        }
        let payload = (self.bytes.len() - BLOCK_HEADER_LEN) as u32;
        self.bytes[0..4].copy_from_slice(&self.thread.to_le_bytes());
        self.bytes[4..8].copy_from_slice(&self.count.to_le_bytes());
        self.bytes[8..12].copy_from_slice(&payload.to_le_bytes());
        self.bytes[12..20].copy_from_slice(&self.base_ns.to_le_bytes());
        let result = write(&self.bytes, self.count);
        self.bytes.truncate(BLOCK_HEADER_LEN);
        self.count = 0;
        result
    }
}

/// The trace file: header written at creation, then whole blocks.
struct Sink {
    path: PathBuf,
    file: BufWriter<File>,
    events: u64,
    bytes: u64,
    /// The first write error; later blocks are dropped and `finish` reports it.
    error: Option<TraceError>,
}

impl Sink {
    fn create(path: &Path, header: &TraceHeader) -> Result<Sink, TraceError> {
        let file = File::create(path).map_err(io_err(path))?;
        let mut file = BufWriter::with_capacity(BLOCK_HEADER_LEN + BLOCK_BYTES + MAX_EVENT_LEN, file);
        file.write_all(&header.encode()).map_err(io_err(path))?;
        Ok(Sink { path: path.to_path_buf(), file, events: 0, bytes: HEADER_LEN as u64, error: None })
    }

    /// Writes a block (if it holds events) and empties it.
    fn try_write_block(&mut self, block: &mut Block) -> Result<(), TraceError> {
        let Sink { path, file, events, bytes, .. } = self;
        block.drain(|b, n| {
            file.write_all(b).map_err(io_err(path))?;
            *events += u64::from(n);
            *bytes += b.len() as u64;
            Ok(())
        })
    }

    /// As `try_write_block`, keeping the first error for `finish` and dropping blocks after it.
    fn write_block(&mut self, block: &mut Block) {
        if self.error.is_some() {
            block.drain(|_, _| Ok(())).expect("discarding cannot fail");
            return;
        }
        if let Err(e) = self.try_write_block(block) {
            self.error = Some(e);
        }
    }

    fn finish(&mut self, threads: u32) -> Result<TraceSummary, TraceError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.file.flush().map_err(io_err(&self.path))?;
        Ok(TraceSummary { path: self.path.clone(), events: self.events, bytes: self.bytes, threads })
    }
}

fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

// ---------------------------------------------------------------------------------------------
// The pool's recorder
// ---------------------------------------------------------------------------------------------

/// One thread's block buffer for one tracer.
struct ThreadBuf {
    block: UnsafeCell<Block>,
}

// SAFETY: B17 — a `ThreadBuf` is shared between its owner thread (through the thread-local list)
// and its tracer (through `Tracer::threads`), but its block is only touched by the owner thread
// inside `Tracer::record` (which borrows the tracer, hence the pool, shared) and by the tracer in
// `close` (which holds the tracer exclusively, so no `record` of that tracer runs or can run
// again: its id is never reused). The exclusive borrow in `close` is ordered after every earlier
// shared borrow of the pool, so the owner's writes are visible.
unsafe impl Sync for ThreadBuf {}

static NEXT_TRACER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static BUFS: RefCell<Vec<(u64, Arc<ThreadBuf>)>> = const { RefCell::new(Vec::new()) };
}

/// A pool's recorder: per-thread blocks, one file.
pub(crate) struct Tracer {
    id: u64,
    start: Instant,
    sink: Mutex<Sink>,
    /// Every thread's buffer, in order of thread number; locked only when a thread registers.
    threads: Mutex<Vec<Arc<ThreadBuf>>>,
    closed: bool,
}

impl Tracer {
    /// Creates the trace file and writes its header.
    pub(crate) fn create(
        path: &Path,
        page_size: usize,
        mode: PoolMode,
        frames: usize,
    ) -> Result<Tracer, TraceError> {
        let header = TraceHeader {
            page_size: u32::try_from(page_size).unwrap_or(u32::MAX),
            mode,
            frames: u32::try_from(frames).unwrap_or(u32::MAX),
            start_unix_ns: now_unix_ns(),
        };
        let sink = Sink::create(path, &header)?;
        Ok(Tracer {
            id: NEXT_TRACER.fetch_add(1, Relaxed),
            start: Instant::now(),
            sink: Mutex::new(sink),
            threads: Mutex::new(Vec::new()),
            closed: false,
        })
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.sink.lock().path.clone()
    }

    /// Records one event of the calling thread (B17): no lock unless the thread's block is full
    /// or this is the thread's first event.
    #[cold]
    #[inline(never)]
    pub(crate) fn record(
        &self,
        kind: EventKind,
        page: PageId,
        parent: Option<PageId>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        let time_ns = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // A thread whose thread-locals are being destroyed cannot record; its event is lost.
        let _ = BUFS.try_with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            let i = match bufs.iter().position(|(id, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    // Forget buffers of tracers that are gone (only this list still holds them).
                    bufs.retain(|(_, b)| Arc::strong_count(b) > 1);
                    let mut threads = self.threads.lock();
                    let buf = Arc::new(ThreadBuf {
                        block: UnsafeCell::new(Block::new(u32::try_from(threads.len()).unwrap_or(u32::MAX))),
                    });
                    threads.push(Arc::clone(&buf));
                    bufs.push((self.id, buf));
                    bufs.len() - 1
                }
            };
            // SAFETY: B17 — this thread owns this buffer (it is in this thread's list under this
            // tracer's id), and the tracer touches it only in `close`, which cannot run while
            // `&self` is borrowed. No other reference to the block is alive here.
            let block = unsafe { &mut *bufs[i].1.block.get() };
            block.push(kind, time_ns, page.get(), parent.map(PageId::get), latch, hit);
            if block.is_full() {
                self.sink.lock().write_block(block);
            }
        });
    }

    /// Writes every thread's partial block and flushes the file.
    pub(crate) fn close(&mut self) -> Result<TraceSummary, TraceError> {
        self.closed = true;
        let threads = std::mem::take(&mut *self.threads.lock());
        let sink = self.sink.get_mut();
        for buf in &threads {
            // SAFETY: B17 — `&mut self` excludes every `record` of this tracer, now and later
            // (`closed` is set and the id is never reused), so no owner thread touches the block.
            let block = unsafe { &mut *buf.block.get() };
            sink.write_block(block);
            // The owner thread's list may keep the buffer until it next registers or exits.
            block.bytes.truncate(BLOCK_HEADER_LEN);
            block.bytes.shrink_to_fit();
        }
        sink.finish(u32::try_from(threads.len()).unwrap_or(u32::MAX))
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported from a drop; `BufferPool::finish_trace` reports them.
            let _ = self.close();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Writer for other producers
// ---------------------------------------------------------------------------------------------

/// Writes a trace file from a sequence of events (for synthetic reference strings and tests).
/// Events are grouped into blocks per thread number, in the order given; call
/// [`TraceWriter::finish`] to write the partial blocks and see any error (dropping the writer
/// also writes them, ignoring errors).
pub struct TraceWriter {
    sink: Sink,
    blocks: Vec<Block>,
    finished: bool,
}

impl TraceWriter {
    /// Creates (or truncates) `path` and writes the header.
    ///
    /// # Errors
    /// I/O errors creating or writing the file.
    pub fn create(path: &Path, header: &TraceHeader) -> Result<TraceWriter, TraceError> {
        Ok(TraceWriter { sink: Sink::create(path, header)?, blocks: Vec::new(), finished: false })
    }

    /// Appends one event.
    ///
    /// # Errors
    /// The event carries a latch mode or hit flag its kind does not have (or lacks one it
    /// has); I/O errors writing a full block.
    pub fn write(&mut self, e: &TraceEvent) -> Result<(), TraceError> {
        e.validate()?;
        let i = match self.blocks.iter().position(|b| b.thread == e.thread) {
            Some(i) => i,
            None => {
                self.blocks.push(Block::new(e.thread));
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[i];
        block.push(e.kind, e.time_ns, e.page.get(), e.parent.map(PageId::get), e.latch, e.hit);
        if block.is_full() {
            self.sink.write_block(block);
            if let Some(err) = self.sink.error.take() {
                self.sink.error = Some(TraceError::Io {
                    file: self.sink.path.clone(),
                    source: io::Error::other("an earlier write to this trace failed"),
                });
                return Err(err);
            }
        }
        Ok(())
    }

    /// Writes the partial blocks and flushes the file.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<TraceSummary, TraceError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<TraceSummary, TraceError> {
        self.finished = true;
        for block in &mut self.blocks {
            self.sink.write_block(block);
        }
        self.sink.finish(u32::try_from(self.blocks.len()).unwrap_or(u32::MAX))
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.finish_inner();
        }
    }
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter").field("path", &self.sink.path).finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// Iterates the events of a trace file in file order: the events of one thread appear in the
/// order it recorded them; threads interleave block by block. After the first error the
/// iterator ends.
pub struct TraceReader<R = BufReader<File>> {
    file: PathBuf,
    input: R,
    header: TraceHeader,
    /// File offset of the next unread byte.
    offset: u64,
    payload: Vec<u8>,
    /// File offset of `payload[0]`.
    payload_offset: u64,
    pos: usize,
    left: u32,
    thread: u32,
    last_ns: u64,
    done: bool,
}

impl TraceReader {
    /// Opens a trace file and checks its header.
    ///
    /// # Errors
    /// I/O errors; [`TraceError::NotATrace`], [`TraceError::Version`], [`TraceError::Truncated`]
    /// or [`TraceError::Corrupt`] for a bad header.
    pub fn open(path: impl AsRef<Path>) -> Result<TraceReader, TraceError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(io_err(path))?;
        TraceReader::from_reader(BufReader::with_capacity(1 << 16, f), path)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> TraceReader<R> {
    /// Reads a trace from any byte source; `name` is used in error messages.
    ///
    /// # Errors
    /// As [`TraceReader::open`].
    pub fn from_reader(mut input: R, name: impl AsRef<Path>) -> Result<TraceReader<R>, TraceError> {
        let file = name.as_ref().to_path_buf();
        let mut h = [0u8; HEADER_LEN];
        let n = read_full(&mut input, &mut h).map_err(io_err(&file))?;
        if n < TRACE_MAGIC.len() || h[0..8] != TRACE_MAGIC {
            let reason = if n == 0 {
                "the file is empty".to_string()
            } else if n < TRACE_MAGIC.len() {
                format!("only {n} bytes")
            } else {
                format!("it starts with {:?}", String::from_utf8_lossy(&h[0..8]))
            };
            return Err(TraceError::NotATrace { file, reason });
        }
        if n >= 12 {
            let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
            if version != TRACE_VERSION {
                return Err(TraceError::Version { file, found: version, expected: TRACE_VERSION });
            }
        }
        if n < HEADER_LEN {
            return Err(TraceError::Truncated { file, offset: 0, what: "header" });
        }
        let mode = match h[16] {
            0 => PoolMode::Traditional,
            1 => PoolMode::Swizzling,
            2 => PoolMode::MainMemory,
            m => {
                return Err(TraceError::Corrupt {
                    file,
                    offset: 16,
                    reason: format!("unknown pool mode {m}"),
                })
            }
        };
        let header = TraceHeader {
            page_size: u32::from_le_bytes(h[12..16].try_into().expect("4 bytes")),
            mode,
            frames: u32::from_le_bytes(h[20..24].try_into().expect("4 bytes")),
            start_unix_ns: u64::from_le_bytes(h[24..32].try_into().expect("8 bytes")),
        };
        Ok(TraceReader {
            file,
            input,
            header,
            offset: HEADER_LEN as u64,
            payload: Vec::new(),
            payload_offset: 0,
            pos: 0,
            left: 0,
            thread: 0,
            last_ns: 0,
            done: false,
        })
    }

    /// The file header.
    #[must_use]
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> TraceError {
        TraceError::Corrupt { file: self.file.clone(), offset, reason: reason.into() }
    }

    /// Loads the next block; `Ok(false)` at a clean end of file.
    fn next_block(&mut self) -> Result<bool, TraceError> {
        if self.pos != self.payload.len() {
            return Err(self.corrupt(
                self.payload_offset + self.pos as u64,
                format!("{} bytes after the block's last event", self.payload.len() - self.pos),
            ));
        }
        let mut h = [0u8; BLOCK_HEADER_LEN];
        let start = self.offset;
        let n = read_full(&mut self.input, &mut h).map_err(io_err(&self.file))?;
        if n == 0 {
            return Ok(false);
        }
        if n < BLOCK_HEADER_LEN {
            return Err(TraceError::Truncated {
                file: self.file.clone(),
                offset: start,
                what: "block header",
            });
        }
        let thread = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes"));
        let count = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        let base = u64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
        if count == 0 {
            return Err(self.corrupt(start, "a block with no events"));
        }
        if len > MAX_BLOCK_PAYLOAD {
            return Err(
                self.corrupt(start, format!("block payload of {len} bytes (at most {MAX_BLOCK_PAYLOAD})"))
            );
        }
        // Each event takes at least 3 bytes (tag, time delta, page).
        if u64::from(count) * 3 > u64::from(len) {
            return Err(self.corrupt(start, format!("{count} events cannot fit in {len} bytes")));
        }
        self.payload.resize(len as usize, 0);
        let got = read_full(&mut self.input, &mut self.payload).map_err(io_err(&self.file))?;
        if got < len as usize {
            return Err(TraceError::Truncated { file: self.file.clone(), offset: start, what: "block" });
        }
        self.offset = start + (BLOCK_HEADER_LEN as u64) + u64::from(len);
        self.payload_offset = start + BLOCK_HEADER_LEN as u64;
        self.pos = 0;
        self.left = count;
        self.thread = thread;
        self.last_ns = base;
        Ok(true)
    }

    fn decode(&mut self) -> Result<TraceEvent, TraceError> {
        let at = self.payload_offset + self.pos as u64;
        let b = &self.payload;
        let mut pos = self.pos;
        let past_end = || "event runs past the end of its block".to_string();
        let tag = *b.get(pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        pos += 1;
        if tag & TAG_RESERVED != 0 {
            return Err(self.corrupt(at, format!("reserved bits set in event tag {tag:#04x}")));
        }
        let kind = EventKind::from_code(tag & TAG_KIND)
            .ok_or_else(|| self.corrupt(at, format!("unknown event kind {}", tag & TAG_KIND)))?;
        let latch = if kind.has_latch() {
            Some(if tag & TAG_EXCLUSIVE != 0 { LatchMode::Exclusive } else { LatchMode::Shared })
        } else if tag & TAG_EXCLUSIVE != 0 {
            return Err(self.corrupt(at, format!("a {kind} event with a latch mode")));
        } else {
            None
        };
        let hit = if kind == EventKind::Fix {
            Some(tag & TAG_HIT != 0)
        } else if tag & TAG_HIT != 0 {
            return Err(self.corrupt(at, format!("a {kind} event with a hit flag")));
        } else {
            None
        };
        let dt = get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        let page_raw = get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?;
        let parent_raw = if tag & TAG_PARENT != 0 {
            Some(get_varint(b, &mut pos).ok_or_else(|| self.corrupt(at, past_end()))?)
        } else {
            None
        };
        let page = PageId::new(page_raw)
            .ok_or_else(|| self.corrupt(at, format!("page id {page_raw} out of range")))?;
        let parent = match parent_raw {
            None => None,
            Some(p) => Some(
                PageId::new(p).ok_or_else(|| self.corrupt(at, format!("parent page id {p} out of range")))?,
            ),
        };
        let time_ns = self.last_ns.wrapping_add(unzigzag(dt) as u64);
        self.last_ns = time_ns;
        self.pos = pos;
        self.left -= 1;
        Ok(TraceEvent { kind, thread: self.thread, time_ns, page, parent, latch, hit })
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.left == 0 {
            match self.next_block() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let r = self.decode();
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

impl<R> std::fmt::Debug for TraceReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("file", &self.file)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// The page ids of the fix events of a trace, in timestamp order (events of equal timestamp in
/// file order): the reference string the offline simulator replays.
///
/// # Errors
/// As [`TraceReader`].
pub fn page_references(path: impl AsRef<Path>) -> Result<Vec<u64>, TraceError> {
    let mut refs: Vec<(u64, u64)> = Vec::new();
    let mut threads = None;
    let mut many = false;
    for e in TraceReader::open(path)? {
        let e = e?;
        if e.kind == EventKind::Fix {
            many |= *threads.get_or_insert(e.thread) != e.thread;
            refs.push((e.time_ns, e.page.get()));
        }
    }
    if many {
        // Stable: ties keep file order, which is each thread's own order.
        refs.sort_by_key(|&(t, _)| t);
    }
    Ok(refs.into_iter().map(|(_, p)| p).collect())
}

/// The CSV header written by [`export_csv`] (the columns of Gilbert 2017, Appendix B, that
/// SwizzleDB records).
pub const CSV_HEADER: &str = "event,thread,page,parent,latch,hit,time_ns";

/// Writes the events of a trace as CSV (header [`CSV_HEADER`]; empty cells for absent values),
/// in file order. Returns the number of rows.
///
/// # Errors
/// Errors reading the trace (as [`TraceReader`]) or writing `out` (named as `out_name`).
pub fn write_csv<R: Read, W: Write>(
    reader: TraceReader<R>,
    out: W,
    out_name: &Path,
) -> Result<u64, TraceError> {
    let mut out = BufWriter::new(out);
    let err = io_err(out_name);
    let mut rows = 0u64;
    let write = || -> Result<(), TraceError> {
        writeln!(out, "{CSV_HEADER}").map_err(io_err(out_name))?;
        for e in reader {
            let e = e?;
            let parent = e.parent.map(|p| p.get().to_string()).unwrap_or_default();
            let latch = match e.latch {
                None => "",
                Some(LatchMode::Shared) => "shared",
                Some(LatchMode::Exclusive) => "exclusive",
            };
            let hit = match e.hit {
                None => "",
                Some(true) => "hit",
                Some(false) => "miss",
            };
            writeln!(out, "{},{},{},{parent},{latch},{hit},{}", e.kind, e.thread, e.page.get(), e.time_ns)
                .map_err(io_err(out_name))?;
            rows += 1;
        }
        Ok(())
    };
    write()?;
    out.flush().map_err(err)?;
    Ok(rows)
}

/// Exports the trace at `input` as CSV to `output` (see [`write_csv`]). Returns the number of
/// rows.
///
/// # Errors
/// As [`write_csv`]; I/O errors creating `output`.
pub fn export_csv(input: &Path, output: &Path) -> Result<u64, TraceError> {
    let reader = TraceReader::open(input)?;
    let out = File::create(output).map_err(io_err(output))?;
    write_csv(reader, out, output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> TraceHeader {
        TraceHeader { page_size: 8192, mode: PoolMode::Traditional, frames: 64, start_unix_ns: 12345 }
    }

    fn event_strategy() -> impl Strategy<Value = TraceEvent> {
        (
            0usize..6,
            0u32..4,
            any::<u64>(),
            0u64..PageId::LIMIT,
            proptest::option::of(0u64..PageId::LIMIT),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(k, thread, time_ns, page, parent, x, hit)| {
                let kind = EventKind::ALL[k];
                TraceEvent {
                    kind,
                    thread,
                    time_ns,
                    page: PageId::new(page).unwrap(),
                    parent: parent.map(|p| PageId::new(p).unwrap()),
                    latch: kind.has_latch().then_some(if x {
                        LatchMode::Exclusive
                    } else {
                        LatchMode::Shared
                    }),
                    hit: (kind == EventKind::Fix).then_some(hit),
                }
            })
    }

    fn write_all(path: &Path, events: &[TraceEvent]) -> TraceSummary {
        let mut w = TraceWriter::create(path, &header()).unwrap();
        for e in events {
            w.write(e).unwrap();
        }
        w.finish().unwrap()
    }

    fn read_all(path: &Path) -> Result<Vec<TraceEvent>, TraceError> {
        TraceReader::open(path)?.collect()
    }

    /// The reader yields each thread's events in the order written (threads interleave by
    /// block), so compare per thread.
    fn per_thread(events: &[TraceEvent]) -> std::collections::BTreeMap<u32, Vec<TraceEvent>> {
        let mut m = std::collections::BTreeMap::<u32, Vec<TraceEvent>>::new();
        for e in events {
            m.entry(e.thread).or_default().push(*e);
        }
        m
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// B17: whatever is written (any timestamps, ids up to 2^63 - 1, any kinds) reads back
        /// identically, thread by thread, and the summary counts every event and byte.
        #[test]
        fn b17_writer_reader_round_trip(events in proptest::collection::vec(event_strategy(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.swzt");
            let summary = write_all(&path, &events);
            prop_assert_eq!(summary.events, events.len() as u64);
            prop_assert_eq!(summary.bytes, std::fs::metadata(&path).unwrap().len());
            let back = read_all(&path).unwrap();
            prop_assert_eq!(back.len(), events.len());
            prop_assert_eq!(per_thread(&back), per_thread(&events));
            prop_assert_eq!(*TraceReader::open(&path).unwrap().header(), header());
        }

        /// Cutting a valid file anywhere after the header gives `Truncated` (or, at a block
        /// boundary, a shorter valid trace) — never a panic, never a wrong event.
        #[test]
        fn b17_any_prefix_is_truncated_or_a_prefix(
            events in proptest::collection::vec(event_strategy(), 1..60),
            cut in any::<proptest::sample::Index>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.swzt");
            write_all(&path, &events);
            let bytes = std::fs::read(&path).unwrap();
            let n = HEADER_LEN + cut.index(bytes.len() - HEADER_LEN);
            std::fs::write(&path, &bytes[..n]).unwrap();
            let mut got = Vec::new();
            for e in TraceReader::open(&path).unwrap() {
                match e {
                    Ok(e) => got.push(e),
                    Err(TraceError::Truncated { .. }) => break,
                    Err(other) => panic!("unexpected error {other}"),
                }
            }
            let want = per_thread(&events);
            for (t, evs) in per_thread(&got) {
                prop_assert_eq!(&want[&t][..evs.len()], &evs[..]);
            }
        }

        /// Random bytes after a valid header never panic the reader.
        #[test]
        fn b17_garbage_blocks_give_errors_not_panics(tail in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut bytes = header().encode().to_vec();
            bytes.extend_from_slice(&tail);
            let reader = TraceReader::from_reader(&bytes[..], "garbage").unwrap();
            for e in reader {
                if e.is_err() {
                    break;
                }
            }
        }
    }

    /// Blocks are cut at 64 KiB: a long single-thread trace spans several blocks and reads back
    /// in order.
    #[test]
    fn b17_many_blocks_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swzt");
        let events: Vec<_> = (0..100_000u64)
            .map(|i| {
                TraceEvent::fix(0, i * 3, i * 7919 % 100_003, Some(i % 5), LatchMode::Shared, i % 3 == 0)
            })
            .collect();
        let s = write_all(&path, &events);
        assert!(s.bytes > 3 * BLOCK_BYTES as u64, "several blocks: {} bytes", s.bytes);
        assert_eq!(read_all(&path).unwrap(), events);
        let refs: Vec<u64> = events.iter().map(|e| e.page.get()).collect();
        assert_eq!(page_references(&path).unwrap(), refs);
    }

    /// Hand-worked encoding of one event: tag, zigzag time delta, page, parent.
    #[test]
    fn b17_event_encoding_by_hand() {
        let mut b = Block::new(3);
        b.push(EventKind::Fix, 1000, 300, Some(1), Some(LatchMode::Exclusive), Some(true));
        b.push(EventKind::Evict, 999, 5, None, None, None);
        let mut out = Vec::new();
        b.drain(|bytes, n| {
            assert_eq!(n, 2);
            out = bytes.to_vec();
            Ok(())
        })
        .unwrap();
        let payload = &out[BLOCK_HEADER_LEN..];
        // Fix (0) | exclusive (8) | hit (16) | parent (32) = 56; delta 0; 300 = 0xAC 0x02; parent 1.
        // Evict (3); delta -1 zigzags to 1; page 5.
        assert_eq!(payload, &[56, 0, 0xAC, 0x02, 1, 3, 1, 5]);
        assert_eq!(&out[0..4], &3u32.to_le_bytes());
        assert_eq!(&out[4..8], &2u32.to_le_bytes());
        assert_eq!(&out[8..12], &8u32.to_le_bytes());
        assert_eq!(&out[12..20], &1000u64.to_le_bytes());
    }

    #[test]
    fn b17_bad_files_give_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad");
        let open = |bytes: &[u8]| {
            std::fs::write(&p, bytes).unwrap();
            TraceReader::open(&p).map(|_| ())
        };
        assert!(matches!(open(b""), Err(TraceError::NotATrace { .. })));
        assert!(matches!(open(b"SWZ"), Err(TraceError::NotATrace { .. })));
        assert!(matches!(
            open(b"SWIZZLDB and more bytes to make up a header.."),
            Err(TraceError::NotATrace { .. })
        ));
        let mut h = header().encode();
        h[8] = 2;
        assert!(matches!(open(&h), Err(TraceError::Version { found: 2, expected: 1, .. })));
        let h = header().encode();
        assert!(matches!(open(&h[..20]), Err(TraceError::Truncated { what: "header", offset: 0, .. })));
        let mut h = header().encode();
        h[16] = 9;
        assert!(matches!(open(&h), Err(TraceError::Corrupt { offset: 16, .. })));
        assert!(
            TraceReader::open(dir.path().join("missing")).is_err_and(|e| matches!(e, TraceError::Io { .. }))
        );

        // Block-level damage: one valid block of two events, then variations.
        let good = dir.path().join("good");
        write_all(
            &good,
            &[
                TraceEvent::fix(0, 5, 9, None, LatchMode::Shared, false),
                TraceEvent::fix(0, 6, 9, None, LatchMode::Shared, true),
            ],
        );
        let bytes = std::fs::read(&good).unwrap();
        let events = |bytes: &[u8]| -> Result<Vec<TraceEvent>, TraceError> {
            std::fs::write(&p, bytes).unwrap();
            read_all(&p)
        };
        assert_eq!(events(&bytes).unwrap().len(), 2);
        let b0 = HEADER_LEN as u64;
        assert!(
            matches!(events(&bytes[..HEADER_LEN + 7]), Err(TraceError::Truncated { what: "block header", offset, .. }) if offset == b0)
        );
        assert!(
            matches!(events(&bytes[..bytes.len() - 1]), Err(TraceError::Truncated { what: "block", offset, .. }) if offset == b0)
        );
        let mut more = bytes.clone();
        more[HEADER_LEN + 4] = 3; // claims 3 events: the third runs past the block
        assert!(matches!(events(&more), Err(TraceError::Corrupt { .. })));
        let mut fewer = bytes.clone();
        fewer[HEADER_LEN + 4] = 1; // claims 1 event: bytes left over
        assert!(events(&fewer).is_err_and(|e| e.to_string().contains("after the block's last event")));
        let mut tag = bytes.clone();
        tag[HEADER_LEN + BLOCK_HEADER_LEN] = 0x40; // reserved bit
        assert!(matches!(events(&tag), Err(TraceError::Corrupt { offset, .. }) if offset == b0 + 20));
        let mut kind = bytes.clone();
        kind[HEADER_LEN + BLOCK_HEADER_LEN] = 7; // no kind 7
        assert!(events(&kind).is_err_and(|e| e.to_string().contains("unknown event kind 7")));
        let mut huge = bytes.clone();
        huge[HEADER_LEN + 8..HEADER_LEN + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(events(&huge).is_err_and(|e| e.to_string().contains("block payload")));
    }

    #[test]
    fn b17_writer_rejects_events_the_format_cannot_hold() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TraceWriter::create(&dir.path().join("t"), &header()).unwrap();
        let mut e = TraceEvent::fix(0, 0, 1, None, LatchMode::Shared, true);
        e.kind = EventKind::Read;
        assert!(matches!(w.write(&e), Err(TraceError::InvalidEvent { .. })));
        e.kind = EventKind::Unfix;
        assert!(w.write(&e).is_err_and(|e| e.to_string().contains("hit/miss")));
        e.hit = None;
        w.write(&e).unwrap();
        assert_eq!(w.finish().unwrap().events, 1);
    }

    #[test]
    fn b17_csv_has_header_and_one_row_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swzt");
        let events = [
            TraceEvent::fix(1, 10, 4, Some(2), LatchMode::Exclusive, false),
            TraceEvent {
                kind: EventKind::Evict,
                thread: 1,
                time_ns: 12,
                page: PageId::new(4).unwrap(),
                parent: None,
                latch: None,
                hit: None,
            },
        ];
        write_all(&path, &events);
        let csv = dir.path().join("t.csv");
        assert_eq!(export_csv(&path, &csv).unwrap(), 2);
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text, format!("{CSV_HEADER}\nfix,1,4,2,exclusive,miss,10\nevict,1,4,,,,12\n"));
    }

    #[test]
    fn b17_page_references_merge_threads_by_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swzt");
        let fix = |t, ns, p| TraceEvent::fix(t, ns, p, None, LatchMode::Shared, true);
        // Thread 0 at t = 1, 4; thread 1 at t = 2, 3; and an unfix that must be ignored.
        let mut unfix = fix(1, 3, 99);
        unfix.kind = EventKind::Unfix;
        unfix.hit = None;
        write_all(&path, &[fix(0, 1, 10), fix(0, 4, 40), fix(1, 2, 20), unfix, fix(1, 3, 30)]);
        assert_eq!(page_references(&path).unwrap(), vec![10, 20, 30, 40]);
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0, 1, 127, 128, 16383, 16384, u64::MAX >> 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut pos = 0;
            assert_eq!(get_varint(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
        // 11 continuation bytes, or a tenth byte above 1, exceed 64 bits.
        assert_eq!(get_varint(&[0xFF; 11], &mut 0), None);
        assert_eq!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], &mut 0), None);
        for d in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }
}

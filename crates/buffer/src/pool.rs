//! The buffer pool: frames, descriptors, fix paths, swizzling, eviction and flushing.
//! The rules cited as B1… are in this crate's `README.md`.

use crate::aligned::AlignedBuf;
use crate::error::{BufferError, Result};
use crate::file::PageFile;
use crate::guard::{Exclusive, LatchKind, PageGuard};
use crate::meta::Meta;
use crate::page::{self, get_u64, put_u64, PageType};
use crate::page_table::PageTable;
use crate::stats::{add, bump, Registry, Stats};
use crate::swip::{Swip, SwipTarget};
use crate::trace::{EventKind, TraceError, TraceSummary, Tracer};
use crate::wal::LogFlush;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;
use swizzledb_replacement::{Evictor, FrameHook, HookTable, Policy, PolicySpec, Rejection, Verdict};
use swizzledb_sync::{FrameId, Latch, LatchMode, Lsn, OsFs, PageId, Vfs};

/// How child references are followed (chosen at open; all other code is shared).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum PoolMode {
    /// Child references stay page ids; every step goes through the page table.
    Traditional,
    /// Child references are swizzled to frame references on first use (Graefe et al. 2014).
    Swizzling,
    /// Everything is loaded at open and referenced directly; no page table on any path, no
    /// eviction; running out of frames is an error.
    MainMemory,
}

impl PoolMode {
    /// All modes, in the order experiments print them.
    pub const ALL: [PoolMode; 3] = [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory];

    /// True if child references are turned into frame references.
    #[inline]
    #[must_use]
    pub fn swizzles(self) -> bool {
        self != PoolMode::Traditional
    }

    /// Short name used on the command line and in CSV files.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Traditional => "traditional",
            PoolMode::Swizzling => "swizzling",
            PoolMode::MainMemory => "main-memory",
        }
    }
}

impl std::fmt::Display for PoolMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PoolMode {
    type Err = BufferError;
    fn from_str(s: &str) -> Result<PoolMode> {
        match s.to_ascii_lowercase().as_str() {
            "traditional" | "trad" => Ok(PoolMode::Traditional),
            "swizzling" | "swizzle" => Ok(PoolMode::Swizzling),
            "main-memory" | "mainmemory" | "mm" | "main_memory" => Ok(PoolMode::MainMemory),
            _ => Err(BufferError::Config(format!(
                "unknown mode {s:?}; expected traditional, swizzling or main-memory"
            ))),
        }
    }
}

/// Buffer-pool settings.
#[derive(Clone)]
pub struct PoolConfig {
    /// The file system the database file lives on (default: the operating system's, [`OsFs`]);
    /// tests pass a `FaultFs` to crash it or fail chosen calls.
    pub vfs: Arc<dyn Vfs>,
    /// How child references are followed.
    pub mode: PoolMode,
    /// Memory for frames, in bytes (the memory limit in main-memory mode).
    pub pool_bytes: usize,
    /// Page size for new files; must match the file when opening.
    pub page_size: usize,
    /// Replacement policy and its wrappers (ignored in main-memory mode).
    pub policy: PolicySpec,
    /// Seed for randomized policies.
    pub seed: u64,
    /// Open the file with O_DIRECT.
    pub direct_io: bool,
    /// Record a buffer reference trace to this file (B17): every fix, unfix, read, eviction,
    /// allocation and free, per thread. `None` (the default) records nothing and costs one
    /// predictable branch per event.
    pub trace: Option<PathBuf>,
    /// The write-ahead log the pool flushes before writing a page (B18) and tells of every page
    /// write (B20). `None` (the default): logging is off and no log call is made on any path.
    pub log: Option<Arc<dyn LogFlush>>,
}

impl std::fmt::Debug for PoolConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolConfig")
            .field("vfs", &self.vfs)
            .field("mode", &self.mode)
            .field("pool_bytes", &self.pool_bytes)
            .field("page_size", &self.page_size)
            .field("policy", &self.policy)
            .field("seed", &self.seed)
            .field("direct_io", &self.direct_io)
            .field("trace", &self.trace)
            .field("log", &self.log.as_ref().map(|_| "LogFlush"))
            .finish()
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            vfs: Arc::new(OsFs),
            mode: PoolMode::Swizzling,
            pool_bytes: 64 << 20,
            page_size: page::DEFAULT_PAGE_SIZE,
            policy: PolicySpec::default(),
            seed: 0x5EED,
            direct_io: false,
            trace: None,
            log: None,
        }
    }
}

/// Smallest pool, in frames.
pub const MIN_FRAMES: usize = 16;

/// What the pool needs to know about the pages it holds (the PageOwner seam of ARCHITECTURE.md).
/// The B-tree implements it; eviction, un-swizzling and flushing use nothing else.
pub trait PageOwner: Send + Sync {
    /// Appends the byte offset of every child reference (swip) in `page` to `out`, the foster
    /// reference included. Called under the page's latch.
    fn swip_offsets(&self, page: &[u8], out: &mut Vec<usize>);

    /// Checks the structure of a page just read from the file (after its checksum passed), so that
    /// no later code can be led out of bounds by it.
    ///
    /// # Errors
    /// A description of the first inconsistency.
    fn check_page(&self, page: &[u8]) -> std::result::Result<(), String>;

    /// The offset of the swip in `parent` that holds `raw` (a swizzled reference to `child`'s
    /// frame), or `None` if there is none. Eviction calls this with both pages latched
    /// exclusively (B6, B13). The default scans [`PageOwner::swip_offsets`]; an owner that can
    /// search by key (the B-tree, by `child`'s low fence) makes it O(log n).
    fn find_swip(&self, parent: &[u8], child: &[u8], raw: u64) -> Option<usize> {
        let _ = child;
        let mut offs = Vec::new();
        self.swip_offsets(parent, &mut offs);
        offs.into_iter().find(|&o| get_u64(parent, o) == raw)
    }
}

const FREE: u8 = 0;
const LOADING: u8 = 1;
const RESIDENT: u8 = 2;
const NO_PARENT: u32 = u32::MAX;
/// At most this many sweeps per eviction batch (R9: enough for GCLOCK's default k = 10 to age a
/// leaf hit just before the batch down to 0).
const SWEEP_PASSES: usize = 12;

/// A frame descriptor: everything about a frame except its page bytes (B4 names the protection of
/// each field).
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct FrameDesc {
    pub(crate) latch: Latch,
    /// Page held; written under the exclusive latch while the frame leaves or enters FREE.
    page_id: AtomicU64,
    /// FREE, LOADING or RESIDENT; changed only under the exclusive latch.
    state: AtomicU8,
    /// The page differs from its copy in the file; set under the exclusive latch.
    dirty: AtomicBool,
    /// The page is a tree root: never evicted.
    root: AtomicBool,
    /// The frame whose page holds the swizzled swip to this frame (B6), or NO_PARENT.
    parent: AtomicU32,
    /// How many resident frames name this one as their parent: its swizzled children (B16).
    kids: AtomicU32,
    /// Recovery LSN (B19): the LSN of the oldest change not yet in the file, 0 if the page is
    /// clean or its changes carried no LSN. Set by `set_page_lsn` under the exclusive latch,
    /// reset to 0 by a successful write-back under the latch that protects the write; read
    /// without a latch by `dirty_pages`.
    pub(crate) rec_lsn: AtomicU64,
    /// The replacement policy's word for this frame (R7 of the replacement README): on the
    /// cache line the fix has just loaded for the latch.
    hook: FrameHook,
}

// One descriptor per cache line: the hit path touches the latch, the hook and nothing else.
const _: () = assert!(std::mem::size_of::<FrameDesc>() == 64);

/// The policy's view of the hooks in the descriptors.
struct DescHooks<'a>(&'a [FrameDesc]);

impl HookTable for DescHooks<'_> {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self.0[frame.index()].hook
    }
}

/// B3, B10: latches a frame the page table named for `pid`, waiting only while the frame still
/// holds `pid` (read racily). The caller may hold the parent's latch: if the frame was evicted
/// and reused for another page — an ancestor held exclusively by a thread that now waits for
/// that parent — a blocking wait would never end. Returns false when the frame no longer holds
/// the page (look it up again).
#[inline]
fn latch_while_holding(d: &FrameDesc, pid: PageId, mode: LatchMode) -> bool {
    d.latch.try_lock(mode) || latch_while_holding_slow(d, pid, mode)
}

/// The waiting part of [`latch_while_holding`], out of the hit path.
#[cold]
#[inline(never)]
fn latch_while_holding_slow(d: &FrameDesc, pid: PageId, mode: LatchMode) -> bool {
    let mut tries = 0u32;
    loop {
        if d.latch.try_lock(mode) {
            return true;
        }
        if d.page_id.load(Relaxed) != pid.get() || d.state.load(Acquire) == FREE {
            return false;
        }
        tries += 1;
        if tries < 64 {
            std::hint::spin_loop();
        } else if tries < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

impl FrameDesc {
    #[inline]
    pub(crate) fn mark_dirty(&self) {
        if !self.dirty.load(Relaxed) {
            self.dirty.store(true, Relaxed);
        }
    }

    fn parent(&self) -> Option<FrameId> {
        match self.parent.load(Acquire) {
            NO_PARENT => None,
            p => Some(FrameId(p)),
        }
    }

    fn set_parent(&self, p: Option<FrameId>) {
        self.parent.store(p.map_or(NO_PARENT, |f| f.0), Release);
    }
}

/// The buffer pool. See the crate README for its rules.
pub struct BufferPool {
    mode: PoolMode,
    page_size: usize,
    frames: Box<[FrameDesc]>,
    /// Base of the frame region (`memory`), cached as a raw pointer for page access (B1).
    base: *mut u8,
    memory: AlignedBuf,
    table: PageTable,
    free: Mutex<VecDeque<FrameId>>,
    free_count: AtomicUsize,
    evict_lock: Mutex<()>,
    low_watermark: usize,
    high_watermark: usize,
    policy: Box<dyn Policy>,
    /// Whether unfixes are reported to the policy (cached `Policy::uses_unfix`).
    unfix_hook: bool,
    owner: Arc<dyn PageOwner>,
    file: PageFile,
    meta: Mutex<Meta>,
    roots: Mutex<Vec<FrameId>>,
    sweep_cursor: AtomicUsize,
    stats: Registry,
    /// The reference-trace recorder (B17); `None` when tracing is off.
    trace: Option<Box<Tracer>>,
    /// The write-ahead log (B18–B20); `None` when logging is off.
    log: Option<Arc<dyn LogFlush>>,
    /// What page 0 said when the file was opened (or created).
    opened: FileState,
    /// Set by [`BufferPool::close`] (B22): tree operations refuse from then on.
    closed: std::sync::atomic::AtomicBool,
}

/// What page 0 of a database file records about the file (F11).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FileState {
    /// The database has a write-ahead log.
    pub logged: bool,
    /// The file was closed cleanly (always true for a file just created).
    pub clean: bool,
    /// The database id (random at creation).
    pub id: u64,
}

impl FileState {
    fn of(meta: &Meta) -> FileState {
        FileState { logged: meta.logged, clean: meta.clean, id: meta.id }
    }
}

// SAFETY: B1 — `base` points into `memory`, which the pool owns for its whole life; all access to
// page bytes goes through latched guards or pool code holding the frame's latch.
unsafe impl Send for BufferPool {}
// SAFETY: B1 — as above; shared access to page bytes is serialized by frame latches.
unsafe impl Sync for BufferPool {}

/// Which pages exist and which are free, and the catalog: what a logged database keeps in its
/// checkpoints instead of trusting page 0 (F10).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// Pages in the file, page 0 included.
    pub page_count: u64,
    /// The free-page set.
    pub free_pages: Vec<PageId>,
    /// Tree name to root page.
    pub trees: std::collections::BTreeMap<String, PageId>,
}

impl BufferPool {
    /// Creates a new database file and a pool over it.
    ///
    /// # Errors
    /// Invalid configuration or I/O errors.
    pub fn create(path: &Path, config: &PoolConfig, owner: Arc<dyn PageOwner>) -> Result<BufferPool> {
        let file = PageFile::create(&*config.vfs, path, config.page_size, config.direct_io)?;
        let mut meta = Meta::new(config.page_size);
        meta.logged = config.log.is_some();
        file.write_meta(&meta)?;
        file.sync()?;
        BufferPool::new(file, meta, config, owner)
    }

    /// Opens an existing database file.
    ///
    /// # Errors
    /// The file is not a SwizzleDB file, has another version or page size, is corrupted, or I/O
    /// fails.
    pub fn open(path: &Path, config: &PoolConfig, owner: Arc<dyn PageOwner>) -> Result<BufferPool> {
        let (file, meta) = PageFile::open(&*config.vfs, path, config.direct_io)?;
        if meta.page_size != config.page_size {
            return Err(BufferError::PageSizeMismatch {
                file: path.to_path_buf(),
                found: meta.page_size,
                requested: config.page_size,
            });
        }
        BufferPool::new(file, meta, config, owner)
    }

    /// Opens a database whose allocation state comes from its write-ahead log (F10): page 0's
    /// page count, free-page chain and catalog are replaced by `allocation`, which restart
    /// rebuilt from the last checkpoint and the log after it.
    ///
    /// # Errors
    /// As [`BufferPool::open`].
    pub fn open_recovered(
        path: &Path,
        config: &PoolConfig,
        owner: Arc<dyn PageOwner>,
        allocation: Allocation,
    ) -> Result<BufferPool> {
        let (file, mut meta) = PageFile::open_logged(&*config.vfs, path, config.direct_io)?;
        if meta.page_size != config.page_size {
            return Err(BufferError::PageSizeMismatch {
                file: path.to_path_buf(),
                found: meta.page_size,
                requested: config.page_size,
            });
        }
        meta.page_count = allocation.page_count.max(1);
        meta.free_pages = allocation.free_pages;
        meta.trees = allocation.trees;
        BufferPool::new(file, meta, config, owner)
    }

    /// The allocation state and catalog as they are now, for a checkpoint (F10).
    #[must_use]
    pub fn allocation(&self) -> Allocation {
        let meta = self.meta.lock();
        Allocation {
            page_count: meta.page_count,
            free_pages: meta.free_pages.clone(),
            trees: meta.trees.clone(),
        }
    }

    /// Makes every page write that completed before this call durable (a checkpoint's data-file
    /// sync: pages it saw clean must be on disk before it is complete).
    ///
    /// # Errors
    /// I/O errors (sticky, F4).
    pub fn sync_file(&self) -> Result<()> {
        self.file.sync()
    }

    fn new(
        file: PageFile,
        mut meta: Meta,
        config: &PoolConfig,
        owner: Arc<dyn PageOwner>,
    ) -> Result<BufferPool> {
        let opened = FileState::of(&meta);
        // From now on page 0 is written without the CLEAN flag; only `close` sets it (F11).
        meta.clean = false;
        let page_size = meta.page_size;
        let capacity = config.pool_bytes / page_size;
        if capacity < MIN_FRAMES {
            return Err(BufferError::Config(format!(
                "a pool of {} bytes holds {capacity} pages of {page_size} bytes; at least {MIN_FRAMES} \
                 pages are needed",
                config.pool_bytes
            )));
        }
        if capacity >= NO_PARENT as usize {
            return Err(BufferError::Config(format!("a pool of {capacity} frames is too large")));
        }
        // One lazily committed region, aligned and advised for huge pages: fewer TLB misses on
        // the hit path, and main-memory mode takes memory only as pages are created.
        let mut memory = AlignedBuf::new_lazy(capacity * page_size)?;
        let base = memory.as_mut_ptr();
        let frames: Box<[FrameDesc]> = (0..capacity).map(|_| FrameDesc::default()).collect();
        for d in frames.iter() {
            d.parent.store(NO_PARENT, Relaxed);
        }
        let low = (capacity / 64).clamp(2, 256);
        let policy = config.policy.build(capacity, config.seed);
        let trace = match &config.trace {
            Some(p) => Some(Box::new(Tracer::create(p, page_size, config.mode, capacity)?)),
            None => None,
        };
        Ok(BufferPool {
            mode: config.mode,
            page_size,
            frames,
            base,
            memory,
            table: PageTable::new(capacity),
            free: Mutex::new((0..capacity as u32).map(FrameId).collect()),
            free_count: AtomicUsize::new(capacity),
            evict_lock: Mutex::new(()),
            low_watermark: low,
            high_watermark: (low * 2).min(capacity / 2),
            unfix_hook: policy.uses_unfix() && config.mode != PoolMode::MainMemory,
            policy,
            owner,
            file,
            meta: Mutex::new(meta),
            roots: Mutex::new(Vec::new()),
            sweep_cursor: AtomicUsize::new(0),
            stats: Registry::new(),
            trace,
            log: config.log.clone(),
            opened,
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// What page 0 recorded when the file was opened or created (F11).
    #[must_use]
    pub fn file_state(&self) -> FileState {
        self.opened
    }

    /// Closes the pool (B22): from now on [`BufferPool::is_closed`] is true, and every tree
    /// operation refuses. Then writes every dirty page, the free-page chain and page 0, syncs,
    /// and writes page 0 again with its CLEAN flag and syncs (F11), so the next `open` knows
    /// nothing was written after. A failure leaves the pool closed and the file unclean.
    ///
    /// # Errors
    /// As [`BufferPool::flush`].
    pub fn close(&self) -> Result<()> {
        self.closed.store(true, Release);
        self.flush()?;
        let meta = self.meta.lock().clone();
        self.file.mark_clean(&meta)
    }

    /// Records in page 0 that the database now has a write-ahead log (F11), and syncs: the
    /// last step of converting an unlogged database that was opened clean and not changed
    /// since, after its log holds a checkpoint.
    ///
    /// # Errors
    /// As [`PageFile::write_meta`] and [`PageFile::sync`].
    pub fn mark_logged(&self) -> Result<()> {
        let mut meta = self.meta.lock();
        meta.logged = true;
        // Page 0 alone, in one write: the file changes from "unlogged, clean" to "logged" with
        // nothing in between (F11).
        self.file.mark_clean(&meta)
    }

    /// Marks the pool closed without writing anything (B22): for an owner that gives up on it.
    pub fn mark_closed(&self) {
        self.closed.store(true, Release);
    }

    /// Whether [`BufferPool::close`] (or [`BufferPool::mark_closed`]) was called.
    #[inline]
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// The pool's mode.
    #[inline]
    #[must_use]
    pub fn mode(&self) -> PoolMode {
        self.mode
    }

    /// Page size in bytes.
    #[inline]
    #[must_use]
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of frames.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.frames.len()
    }

    /// Bytes of memory held by frames and descriptors.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.memory.len() + self.frames.len() * std::mem::size_of::<FrameDesc>()
    }

    /// The replacement policy's name.
    #[must_use]
    pub fn policy_name(&self) -> String {
        if self.mode == PoolMode::MainMemory {
            "none".into()
        } else {
            self.policy.name()
        }
    }

    /// True if the file was opened with O_DIRECT.
    #[must_use]
    pub fn direct_io(&self) -> bool {
        self.file.is_direct()
    }

    /// The database file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Counters summed over all threads.
    #[must_use]
    pub fn stats(&self) -> Stats {
        let mut stats = self.stats.snapshot();
        if let Some(lock) = self.policy.lock_stats() {
            stats.policy_lock_acquisitions = lock.lock_acquisitions;
            stats.policy_lock_failed_tries = lock.failed_try_locks;
            stats.policy_lock_waits = lock.blocking_waits;
            stats.policy_lock_timed_holds = lock.timed_holds;
            stats.policy_lock_hold_nanos = lock.timed_hold_nanos;
            stats.policy_accesses = lock.accesses;
            stats.policy_dropped_hits = lock.dropped_hits;
        }
        stats
    }

    /// Frames currently holding a page.
    #[must_use]
    pub fn resident_pages(&self) -> usize {
        self.frames.len() - self.free_count.load(Relaxed)
    }

    #[inline]
    pub(crate) fn desc(&self, f: FrameId) -> &FrameDesc {
        &self.frames[f.index()]
    }

    #[inline]
    pub(crate) fn frame_page_id(&self, f: FrameId) -> PageId {
        PageId::new(self.desc(f).page_id.load(Relaxed)).expect("frame holds a valid page id")
    }

    /// The page bytes of frame `f`.
    ///
    /// # Safety
    /// B1: the caller holds `f`'s latch (any mode) for as long as the slice lives, and no
    /// `page_mut` borrow of `f` is alive.
    #[inline]
    pub(crate) unsafe fn page(&self, f: FrameId) -> &[u8] {
        debug_assert!(f.index() < self.frames.len());
        // SAFETY: B1 — the frame lies inside `memory` (index checked against capacity) and the
        // caller's latch keeps writers out.
        unsafe { std::slice::from_raw_parts(self.base.add(f.index() * self.page_size), self.page_size) }
    }

    /// The page bytes of frame `f`, mutably.
    ///
    /// # Safety
    /// B1: the caller holds `f`'s latch exclusively and no other borrow of the page is alive.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn page_mut(&self, f: FrameId) -> &mut [u8] {
        debug_assert!(f.index() < self.frames.len());
        // SAFETY: B1 — inside `memory`; the exclusive latch makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(f.index() * self.page_size), self.page_size) }
    }

    #[inline]
    fn count(&self, f: impl FnOnce(&crate::stats::Block)) {
        self.stats.with(f);
    }

    /// The reference-trace file, if this pool records one (B17).
    #[must_use]
    pub fn trace_path(&self) -> Option<PathBuf> {
        self.trace.as_ref().map(|t| t.path())
    }

    /// Ends the reference trace (B17): writes every thread's pending events and flushes the file.
    /// Returns `None` if the pool records no trace. Dropping the pool does the same but cannot
    /// report errors.
    ///
    /// # Errors
    /// I/O errors writing the trace file.
    pub fn finish_trace(&mut self) -> std::result::Result<Option<TraceSummary>, TraceError> {
        match self.trace.take() {
            Some(mut t) => t.close().map(Some),
            None => Ok(None),
        }
    }

    /// Trace hook (B17): one predictable branch when tracing is off. `f` (and `parent`) are
    /// latched by the caller, so their page ids are current.
    #[inline(always)]
    fn trace(
        &self,
        kind: EventKind,
        f: FrameId,
        parent: Option<FrameId>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        if let Some(t) = &self.trace {
            self.trace_slow(t, kind, f, parent, latch, hit);
        }
    }

    #[cold]
    #[inline(never)]
    fn trace_slow(
        &self,
        t: &Tracer,
        kind: EventKind,
        f: FrameId,
        parent: Option<FrameId>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        let page = |f: FrameId| PageId::new(self.desc(f).page_id.load(Relaxed));
        let Some(pid) = page(f) else { return };
        t.record(kind, pid, parent.and_then(page), latch, hit);
    }

    #[inline]
    pub(crate) fn unfix(&self, f: FrameId, mode: LatchMode) {
        self.trace(EventKind::Unfix, f, None, Some(mode), None);
        if self.unfix_hook {
            self.policy.on_unfix(f, &self.desc(f).hook);
        }
        self.desc(f).latch.unlock(mode);
    }

    fn corrupted(&self, page: PageId, reason: impl Into<String>) -> BufferError {
        BufferError::Corrupted { file: self.file.path().to_path_buf(), page, reason: reason.into() }
    }

    // ----------------------------------------------------------------------------------------
    // Roots and the catalog
    // ----------------------------------------------------------------------------------------

    /// The root page of the named tree, from the catalog on the metadata page.
    #[must_use]
    pub fn catalog_get(&self, name: &str) -> Option<PageId> {
        self.meta.lock().trees.get(name).copied()
    }

    /// Names of all trees in the catalog.
    #[must_use]
    pub fn catalog_names(&self) -> Vec<String> {
        self.meta.lock().trees.keys().cloned().collect()
    }

    /// Whether a tree named `name` would fit the catalog now, without adding it (a logged
    /// database checks before it logs the new tree).
    ///
    /// # Errors
    /// [`BufferError::CatalogFull`] (or `Config` for an invalid name) as `catalog_insert` would.
    pub fn catalog_fits(&self, name: &str) -> Result<()> {
        let mut meta = self.meta.lock().clone();
        meta.trees.insert(name.to_owned(), PageId::new(1).expect("page 1"));
        let mut probe = vec![0u8; self.page_size];
        meta.encode(&mut probe)
    }

    /// Records a tree in the catalog (persisted by the next flush).
    ///
    /// # Errors
    /// The catalog would no longer fit the metadata page.
    pub fn catalog_insert(&self, name: &str, root: PageId) -> Result<()> {
        let mut meta = self.meta.lock();
        meta.trees.insert(name.to_owned(), root);
        let mut probe = vec![0u8; self.page_size];
        if let Err(e) = meta.encode(&mut probe) {
            meta.trees.remove(name);
            return Err(e);
        }
        Ok(())
    }

    /// Loads a tree's root and keeps it resident for the pool's life (B5). In main-memory mode the
    /// whole tree is loaded and swizzled.
    ///
    /// # Errors
    /// I/O errors, corruption, or too little memory.
    pub fn load_root(&self, root: PageId) -> Result<FrameId> {
        let g = self.fix_page::<Exclusive>(root)?;
        self.desc(g.frame).root.store(true, Relaxed);
        let f = g.frame;
        self.roots.lock().push(f);
        if self.mode == PoolMode::MainMemory {
            let mut g = g;
            self.load_subtree(&mut g)?;
        }
        Ok(f)
    }

    /// Marks a freshly allocated page as a tree root (B5).
    pub fn make_root(&self, g: &PageGuard<'_, Exclusive>) {
        self.desc(g.frame).root.store(true, Relaxed);
        self.roots.lock().push(g.frame);
    }

    /// Main-memory mode: loads every descendant of `g` and swizzles every reference.
    fn load_subtree(&self, g: &mut PageGuard<'_, Exclusive>) -> Result<()> {
        let mut offs = Vec::new();
        self.owner.swip_offsets(g, &mut offs);
        for off in offs {
            let mut child = self.fix_child::<Exclusive, Exclusive>(g, off)?;
            self.load_subtree(&mut child)?;
        }
        Ok(())
    }

    /// Fixes a root frame returned by [`BufferPool::load_root`].
    #[inline]
    pub fn fix_root<M: LatchKind>(&self, root: FrameId) -> PageGuard<'_, M> {
        let d = self.desc(root);
        debug_assert!(d.root.load(Relaxed), "B5: fix_root on a non-root frame");
        d.latch.lock(M::MODE);
        self.count(|b| {
            bump(&b.fixes);
            bump(&b.hits);
        });
        self.trace(EventKind::Fix, root, None, Some(M::MODE), Some(true));
        PageGuard::adopt(self, root)
    }

    // ----------------------------------------------------------------------------------------
    // Fix paths
    // ----------------------------------------------------------------------------------------

    /// Fixes the child referenced by the swip at byte `swip_off` of the parent's page, latching
    /// the child before the caller releases the parent (lock coupling, B10). In swizzling modes an
    /// unswizzled swip is swizzled if the parent's latch can be held exclusively without waiting
    /// (B6).
    ///
    /// # Errors
    /// I/O errors, corruption, or no free frame.
    #[inline]
    pub fn fix_child<'p, P: LatchKind, M: LatchKind>(
        &'p self,
        parent: &mut PageGuard<'_, P>,
        swip_off: usize,
    ) -> Result<PageGuard<'p, M>> {
        assert!(std::ptr::eq(parent.pool, self), "B1: the parent guard belongs to another pool");
        let raw = get_u64(parent, swip_off);
        let Some(swip) = Swip::from_raw(raw) else {
            return Err(self.corrupted(parent.page_id(), format!("invalid swip {raw:#x} at {swip_off}")));
        };
        match swip.target() {
            SwipTarget::Frame(f) => {
                let d = self.desc(f);
                d.latch.lock(M::MODE);
                self.count(|b| {
                    bump(&b.fixes);
                    bump(&b.hits);
                });
                if self.mode != PoolMode::MainMemory {
                    self.policy.on_page_hit(f, self.frame_page_id(f), &d.hook);
                }
                self.trace(EventKind::Fix, f, Some(parent.frame), Some(M::MODE), Some(true));
                Ok(PageGuard::adopt(self, f))
            }
            SwipTarget::Page(pid) => {
                let child = self.fix_page_from::<M>(pid, Some(parent.frame))?;
                if self.mode.swizzles() {
                    self.try_swizzle(parent, swip_off, &child);
                }
                Ok(child)
            }
        }
    }

    /// B6: swizzles the parent's swip at `off` to `child`'s frame, if the parent can be held
    /// exclusively without waiting.
    fn try_swizzle<P: LatchKind, M: LatchKind>(
        &self,
        parent: &mut PageGuard<'_, P>,
        off: usize,
        child: &PageGuard<'_, M>,
    ) {
        let cd = self.desc(child.frame);
        if cd.root.load(Relaxed) {
            return;
        }
        // B6 on a damaged file: a child that already has a swizzled holder (a page named by two
        // swips) or that holds the parent (a reference back up the tree) stays a page id, so a
        // second swizzled swip or a cycle of them (which eviction and the sweep would follow)
        // never exists. The owner reports the damage; the pool only stays sound.
        if cd.parent().is_some() || self.holds(child.frame, parent.frame) {
            return;
        }
        let pd = self.desc(parent.frame);
        let upgraded = match P::MODE {
            LatchMode::Exclusive => false,
            LatchMode::Shared => {
                if !pd.latch.try_upgrade() {
                    return;
                }
                true
            }
        };
        // SAFETY: B1 — the parent (a frame of this pool, asserted in fix_child) is now latched
        // exclusively by this thread, and `&mut parent` guarantees no slice borrowed from the
        // guard is alive.
        let page = unsafe { self.page_mut(parent.frame) };
        debug_assert_eq!(
            get_u64(page, off),
            Swip::page(child.page_id()).raw(),
            "B6: swip changed under latch"
        );
        cd.set_parent(Some(parent.frame));
        put_u64(page, off, Swip::frame(child.frame).raw());
        self.gained_child(parent.frame);
        if upgraded {
            pd.latch.downgrade();
        }
        self.count(|b| bump(&b.swizzles));
    }

    /// Whether `frame` is `of` or one of its swizzled ancestors (parent frames, B6). A chain
    /// longer than any tree (B6 makes the parent links a forest) counts as holding.
    fn holds(&self, frame: FrameId, of: FrameId) -> bool {
        let mut at = Some(of);
        for _ in 0..64 {
            match at {
                None => return false,
                Some(f) if f == frame => return true,
                Some(f) => at = self.desc(f).parent(),
            }
        }
        true
    }

    /// Fixes a page by id through the page table, reading it on a miss (B3).
    ///
    /// # Errors
    /// I/O errors, corruption, or no free frame.
    pub fn fix_page<M: LatchKind>(&self, pid: PageId) -> Result<PageGuard<'_, M>> {
        self.fix_page_from(pid, None)
    }

    /// `fix_page`, naming the latched parent frame the page id came from (for the trace, B17).
    fn fix_page_from<M: LatchKind>(&self, pid: PageId, parent: Option<FrameId>) -> Result<PageGuard<'_, M>> {
        loop {
            self.count(|b| bump(&b.page_table_lookups));
            if let Some(f) = self.table.get(pid) {
                #[cfg(test)]
                race_tests::found_in_table(pid, f);
                let d = self.desc(f);
                if !latch_while_holding(d, pid, M::MODE) {
                    continue;
                }
                // B3: a frame found in the table may have been reused before we latched it.
                if d.state.load(Acquire) == RESIDENT && d.page_id.load(Relaxed) == pid.get() {
                    self.count(|b| {
                        bump(&b.fixes);
                        bump(&b.hits);
                    });
                    if self.mode != PoolMode::MainMemory {
                        self.policy.on_page_hit(f, pid, &d.hook);
                    }
                    self.trace(EventKind::Fix, f, parent, Some(M::MODE), Some(true));
                    return Ok(PageGuard::adopt(self, f));
                }
                d.latch.unlock(M::MODE);
                std::thread::yield_now();
                continue;
            }
            let f = self.grab_free_frame()?;
            let d = self.desc(f);
            d.latch.lock_exclusive();
            d.page_id.store(pid.get(), Relaxed);
            d.state.store(LOADING, Release);
            if self.table.insert_if_absent(pid, f).is_err() {
                // Another thread is loading the same page; use its frame.
                d.state.store(FREE, Release);
                d.latch.unlock_exclusive();
                self.push_free(f);
                continue;
            }
            if self.mode != PoolMode::MainMemory {
                // The insert follows the read: the policy's words for it can load meanwhile.
                self.policy.prefetch_accesses(&[f], &[pid]);
            }
            // SAFETY: B1 — we hold the exclusive latch of a frame nobody else can have reached
            // in a usable state (it is LOADING).
            let page = unsafe { self.page_mut(f) };
            let loaded = self.file.read_page(pid, page).and_then(|()| self.check_loaded(pid, page));
            if let Err(e) = loaded {
                self.table.remove(pid, f);
                d.state.store(FREE, Release);
                d.latch.unlock_exclusive();
                self.push_free(f);
                return Err(e);
            }
            d.dirty.store(false, Relaxed);
            d.rec_lsn.store(0, Relaxed);
            d.set_parent(None);
            d.state.store(RESIDENT, Release);
            if self.mode != PoolMode::MainMemory {
                self.policy.on_insert(f, pid, &d.hook);
            }
            self.count(|b| {
                bump(&b.fixes);
                bump(&b.misses);
                bump(&b.pages_read);
            });
            self.trace(EventKind::Read, f, None, None, None);
            self.trace(EventKind::Fix, f, parent, Some(M::MODE), Some(false));
            return Ok(PageGuard::<Exclusive>::adopt(self, f).into_mode::<M>());
        }
    }

    /// B8: pages in the file never hold swizzled swips, and their structure must be sound.
    fn check_loaded(&self, pid: PageId, page: &[u8]) -> Result<()> {
        if page::page_type(page) == Some(PageType::Free) || page::page_type(page) == Some(PageType::Meta) {
            return Err(self.corrupted(pid, "expected a B-tree node, found a free or metadata page"));
        }
        self.owner.check_page(page).map_err(|r| self.corrupted(pid, r))?;
        let mut offs = Vec::new();
        self.owner.swip_offsets(page, &mut offs);
        if offs.is_empty() {
            return Ok(());
        }
        let page_count = self.meta.lock().page_count;
        for off in offs {
            let raw = get_u64(page, off);
            if Swip::from_raw(raw).is_none_or(Swip::is_swizzled) || raw == 0 {
                return Err(
                    self.corrupted(pid, format!("child reference {raw:#x} at {off} is not a page id"))
                );
            }
            if raw >= page_count || raw == pid.get() {
                return Err(self.corrupted(
                    pid,
                    format!("child reference to page {raw} at {off}: not another page of the {page_count} in the file"),
                ));
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------------------------------
    // Allocation and structure changes
    // ----------------------------------------------------------------------------------------

    /// Allocates a new page (reusing a free page if there is one), formatted as an empty leaf and
    /// fixed exclusively.
    ///
    /// # Errors
    /// No free frame (PoolExhausted / MemoryLimit) or I/O errors during eviction.
    pub fn allocate_page(&self) -> Result<PageGuard<'_, Exclusive>> {
        let f = self.grab_free_frame()?;
        let pid = {
            let mut meta = self.meta.lock();
            if let Some(p) = meta.free_pages.pop() {
                p
            } else {
                let p = PageId::new(meta.page_count).expect("page count below 2^63");
                meta.page_count += 1;
                p
            }
        };
        let d = self.desc(f);
        d.latch.lock_exclusive();
        d.page_id.store(pid.get(), Relaxed);
        let inserted = self.table.insert_if_absent(pid, f);
        debug_assert!(inserted.is_ok(), "B3: a newly allocated page cannot be resident");
        // SAFETY: B1 — exclusive latch on a frame taken from the free list.
        let page = unsafe { self.page_mut(f) };
        page::format(page, pid, PageType::Leaf, 0);
        d.dirty.store(true, Relaxed);
        d.rec_lsn.store(0, Relaxed);
        d.set_parent(None);
        d.state.store(RESIDENT, Release);
        if self.mode != PoolMode::MainMemory {
            self.policy.on_insert(f, pid, &d.hook);
        }
        self.trace(EventKind::Alloc, f, None, Some(LatchMode::Exclusive), None);
        Ok(PageGuard::adopt(self, f))
    }

    /// The swip a parent should store to reference `child` (B6/B7): swizzled in swizzling modes
    /// (recording the parent in the child's descriptor), the page id otherwise.
    pub fn swip_for(&self, child: &PageGuard<'_, Exclusive>, parent: &PageGuard<'_, Exclusive>) -> Swip {
        if self.mode.swizzles() {
            self.desc(child.frame).set_parent(Some(parent.frame));
            self.gained_child(parent.frame);
            self.count(|b| bump(&b.swizzles));
            Swip::frame(child.frame)
        } else {
            Swip::page(child.page_id())
        }
    }

    /// B6: a swip moved into `new_parent`'s page; if it is swizzled, the child's descriptor must
    /// name the new parent. The caller holds both the old and the new parent exclusively.
    pub fn note_swip_moved(&self, swip: Swip, new_parent: &PageGuard<'_, Exclusive>) {
        if let SwipTarget::Frame(f) = swip.target() {
            let d = self.desc(f);
            let old = d.parent();
            if old != Some(new_parent.frame) {
                d.set_parent(Some(new_parent.frame));
                self.gained_child(new_parent.frame);
                if let Some(old) = old {
                    self.lost_child(old);
                }
            }
        }
    }

    /// The page id a swip refers to (reads the descriptor for swizzled swips). The caller holds
    /// the latch of the page containing the swip, which keeps a swizzled child resident (B6).
    #[must_use]
    pub fn swip_page_id(&self, swip: Swip) -> PageId {
        match swip.target() {
            SwipTarget::Page(p) => p,
            SwipTarget::Frame(f) => self.frame_page_id(f),
        }
    }

    /// The page as it must reach the disk (B8): a copy of the latched page in which every
    /// swizzled swip holds its child's page id. The write-ahead log records these images.
    #[must_use]
    pub fn disk_image<M: LatchKind>(&self, g: &PageGuard<'_, M>) -> Vec<u8> {
        let mut out = g.to_vec();
        let mut offs = Vec::new();
        self.owner.swip_offsets(&out, &mut offs);
        for o in offs {
            if let Some(s) = Swip::from_raw(get_u64(&out, o)) {
                // Children of a latched page stay resident (B6), so the id is current.
                put_u64(&mut out, o, Swip::page(self.swip_page_id(s)).raw());
            }
        }
        out
    }

    /// The frame a swizzled swip's child records as its parent (for structural checks).
    #[must_use]
    pub fn swizzled_parent(&self, swip: Swip) -> Option<FrameId> {
        match swip.target() {
            SwipTarget::Page(_) => None,
            SwipTarget::Frame(f) => self.desc(f).parent(),
        }
    }

    /// Frees a page that no swip references any more and that holds no swizzled swips (B11). Its
    /// frame returns to the free list and its page id to the free-page set.
    pub fn free_page(&self, g: PageGuard<'_, Exclusive>) {
        debug_assert!(!self.has_swizzled_children(&g), "B11: freeing a page with swizzled children");
        let pid = g.page_id();
        let f = g.into_frame();
        let d = self.desc(f);
        debug_assert!(!d.root.load(Relaxed), "B5: roots are never freed");
        debug_assert_eq!(d.kids.load(Relaxed), 0, "B16: freeing a page with swizzled children");
        let parent = d.parent();
        self.trace(EventKind::Free, f, None, None, None);
        d.set_parent(None);
        if let Some(p) = parent {
            self.lost_child(p);
        }
        self.table.remove(pid, f);
        d.state.store(FREE, Release);
        d.dirty.store(false, Relaxed);
        d.rec_lsn.store(0, Relaxed);
        if self.mode != PoolMode::MainMemory {
            self.policy.on_remove(f, false, &d.hook);
        }
        d.latch.unlock_exclusive();
        self.push_free(f);
        self.meta.lock().free_pages.push(pid);
    }

    /// B16: `parent` now holds one more swizzled swip; the policy hears of its first (R8). Called
    /// with the parent latched exclusively.
    fn gained_child(&self, parent: FrameId) {
        let d = self.desc(parent);
        if d.kids.fetch_add(1, Relaxed) == 0 && self.mode != PoolMode::MainMemory {
            self.policy.on_children(parent, true, &d.hook);
        }
    }

    /// B16: `parent` holds one swizzled swip fewer; the policy hears of its last (R8). Called
    /// with the parent latched exclusively.
    fn lost_child(&self, parent: FrameId) {
        let d = self.desc(parent);
        let before = d.kids.fetch_sub(1, Relaxed);
        debug_assert!(before > 0, "B16: {parent} lost a swizzled child it did not have");
        if before == 1 && self.mode != PoolMode::MainMemory {
            self.policy.on_children(parent, false, &d.hook);
        }
    }

    fn has_swizzled_children(&self, page: &[u8]) -> bool {
        let mut offs = Vec::new();
        self.owner.swip_offsets(page, &mut offs);
        offs.iter().any(|&o| Swip::from_raw(get_u64(page, o)).is_some_and(Swip::is_swizzled))
    }

    // ----------------------------------------------------------------------------------------
    // Free frames and eviction
    // ----------------------------------------------------------------------------------------

    fn pop_free(&self) -> Option<FrameId> {
        let f = self.free.lock().pop_front();
        if f.is_some() {
            self.free_count.fetch_sub(1, Relaxed);
        }
        f
    }

    fn push_free(&self, f: FrameId) {
        self.free.lock().push_back(f);
        self.free_count.fetch_add(1, Relaxed);
    }

    /// Takes a free frame, evicting a batch first when free frames fall below the low watermark.
    fn grab_free_frame(&self) -> Result<FrameId> {
        if self.mode == PoolMode::MainMemory {
            return self.pop_free().ok_or(BufferError::MemoryLimit {
                limit_bytes: self.memory.len(),
                frames: self.frames.len(),
            });
        }
        loop {
            if self.free_count.load(Relaxed) < self.low_watermark {
                if let Some(_g) = self.evict_lock.try_lock() {
                    match self.evict_batch() {
                        Ok(()) => {}
                        Err(BufferError::PoolExhausted { .. }) if self.free_count.load(Relaxed) > 0 => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if let Some(f) = self.pop_free() {
                return Ok(f);
            }
            self.count(|b| bump(&b.free_frame_waits));
            let _g = self.evict_lock.lock();
            if let Some(f) = self.pop_free() {
                return Ok(f);
            }
            self.evict_batch()?;
        }
    }

    /// Frees frames for a caller that holds no latch (B13): operations that failed with
    /// [`BufferError::PoolExhausted`] while holding latches call this and retry, because a latch
    /// held on a parent keeps all its swizzled children from being evicted.
    ///
    /// # Errors
    /// `PoolExhausted` if nothing could be freed even so; I/O errors writing victims.
    pub fn make_room(&self) -> Result<()> {
        if self.mode == PoolMode::MainMemory {
            return Err(BufferError::MemoryLimit {
                limit_bytes: self.memory.len(),
                frames: self.frames.len(),
            });
        }
        let _g = self.evict_lock.lock();
        if self.free_count.load(Relaxed) >= self.low_watermark {
            return Ok(());
        }
        self.evict_batch()
    }

    /// Runs the depth-first sweep (B14) on its own until `frames` more frames are free (or the
    /// cached trees offer no more leaves); returns how many frames it freed. The pool falls
    /// back to the sweep by itself when the policy finds too few victims; this entry point lets
    /// experiments and tests drive it directly. Swizzling mode only (elsewhere it frees nothing).
    ///
    /// # Errors
    /// I/O errors writing dirty victims; [`BufferError::Wal`] if nothing was freed and the log
    /// could not be flushed for a victim (B18).
    pub fn sweep_evict(&self, frames: usize) -> Result<usize> {
        if self.mode != PoolMode::Swizzling {
            return Ok(0);
        }
        let _g = self.evict_lock.lock();
        let target = self.free_count.load(Relaxed) + frames;
        let mut freed = 0;
        let mut wal_error = None;
        while self.free_count.load(Relaxed) < target {
            let n = self.sweep_passes(target, &mut wal_error)?;
            if n == 0 {
                break;
            }
            freed += n;
        }
        match wal_error {
            Some(e) if freed == 0 => Err(e),
            _ => Ok(freed),
        }
    }

    /// Evicts until the high watermark of free frames is reached (B13), timing the batch. Called
    /// with the eviction lock held.
    fn evict_batch(&self) -> Result<()> {
        let started = Instant::now();
        let result = self.evict_batch_untimed();
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|b| {
            bump(&b.eviction_rounds);
            add(&b.eviction_nanos, nanos);
        });
        result
    }

    fn evict_batch_untimed(&self) -> Result<()> {
        let target = self.high_watermark.max(1);
        let mut freed = 0usize;
        // R9: a policy may ask for the sweep first; otherwise it is the fallback (B14).
        let sweep_first = self.mode == PoolMode::Swizzling && self.policy.prefers_sweep();
        // The first failure of the log (B18): reported only if nothing else could be freed.
        let mut wal_error = None;
        if sweep_first {
            freed += self.sweep_passes(target, &mut wal_error)?;
        }
        let max_proposals = 2 * self.frames.len() + 16;
        let mut proposals = 0;
        while self.free_count.load(Relaxed) < target && proposals < max_proposals {
            // R10: the policy records each verdict during the chunk; the victims reach the free
            // list only afterwards, in one go (B13).
            let mut chunk = EvictionChunk {
                pool: self,
                wanted: (target - self.free_count.load(Relaxed)).min(EVICTION_CHUNK),
                freed: Vec::new(),
                error: None,
                wal_error: None,
            };
            let made =
                self.policy.evict_batch(&DescHooks(&self.frames), &mut chunk, max_proposals - proposals);
            proposals += made;
            freed += chunk.freed.len();
            for &f in &chunk.freed {
                self.push_free(f);
            }
            self.count(|b| add(&b.evictions, chunk.freed.len() as u64));
            if let Some(e) = chunk.error {
                return Err(e);
            }
            if wal_error.is_none() {
                wal_error = chunk.wal_error;
            }
            if made == 0 {
                break; // the policy tracks nothing (R4)
            }
        }
        if !sweep_first && self.free_count.load(Relaxed) < target && self.mode == PoolMode::Swizzling {
            freed += self.sweep_passes(target, &mut wal_error)?;
        }
        if freed == 0 && self.free_count.load(Relaxed) == 0 {
            return Err(wal_error.unwrap_or(BufferError::PoolExhausted { frames: self.frames.len() }));
        }
        Ok(())
    }

    /// Tries to evict frame `f` without waiting for any latch (B13). `Ok(None)` if evicted: the
    /// frame is then `FREE` but neither on the free list nor removed from the policy; the caller
    /// does both, in that order (R10). A dirty victim is written only after the log is durable up
    /// to its page LSN (B18); if the log fails, the victim keeps its page and stays dirty.
    fn try_evict(&self, f: FrameId) -> Result<Option<Rejection>, EvictError> {
        let d = self.desc(f);
        if d.root.load(Relaxed) {
            return Ok(Some(Rejection::Root));
        }
        if d.state.load(Acquire) != RESIDENT {
            return Ok(Some(Rejection::NotResident));
        }
        // Latch order (B10): parent before child; both without waiting.
        let parent = d.parent();
        if let Some(p) = parent {
            if !self.desc(p).latch.try_lock_exclusive() {
                return Ok(Some(Rejection::InUse));
            }
        }
        let unlatch_parent = || {
            if let Some(p) = parent {
                self.desc(p).latch.unlock_exclusive();
            }
        };
        if !d.latch.try_lock_exclusive() {
            unlatch_parent();
            return Ok(Some(Rejection::InUse));
        }
        let reject = |why| {
            d.latch.unlock_exclusive();
            unlatch_parent();
            Ok(Some(why))
        };
        if d.state.load(Acquire) != RESIDENT || d.root.load(Relaxed) {
            return reject(Rejection::NotResident);
        }
        if d.parent() != parent {
            return reject(Rejection::InUse);
        }
        let pid = self.frame_page_id(f);
        // SAFETY: B1 — we hold f's latch exclusively.
        let page = unsafe { self.page_mut(f) };
        debug_assert_eq!(d.kids.load(Relaxed) > 0, self.has_swizzled_children(page), "B16 for {f}");
        if d.kids.load(Relaxed) > 0 {
            return reject(Rejection::SwizzledChildren);
        }
        // Find the swizzled swip in the parent before changing anything (B6).
        let parent_slot = match parent {
            None => None,
            Some(p) => {
                // SAFETY: B1 — we hold p's latch exclusively; `page` above is another frame.
                let ppage = unsafe { self.page_mut(p) };
                let me = Swip::frame(f).raw();
                match self.owner.find_swip(ppage, page, me) {
                    Some(o) => Some((ppage, o)),
                    None => {
                        debug_assert!(false, "B6: parent {p} does not reference {f}");
                        return reject(Rejection::InUse);
                    }
                }
            }
        };
        if d.dirty.load(Relaxed) {
            // The page has no swizzled swips, so its bytes are already the on-disk form (B8).
            let lsn = page::page_lsn(page);
            if let Err(e) = self.wal_before_write(pid, lsn) {
                d.latch.unlock_exclusive();
                unlatch_parent();
                self.count(|b| bump(&b.rejected_wal));
                return Err(EvictError::Wal(e));
            }
            if let Err(e) = self.file.write_page(pid, page) {
                d.latch.unlock_exclusive();
                unlatch_parent();
                return Err(EvictError::Io(e));
            }
            d.dirty.store(false, Relaxed);
            self.written(d, pid, lsn);
            self.count(|b| {
                bump(&b.write_backs);
                bump(&b.pages_written);
            });
        }
        if let Some((ppage, o)) = parent_slot {
            put_u64(ppage, o, Swip::page(pid).raw());
            self.count(|b| bump(&b.unswizzles));
        }
        d.set_parent(None);
        if let Some(p) = parent {
            self.lost_child(p);
        }
        self.table.remove(pid, f);
        d.state.store(FREE, Release);
        self.trace(EventKind::Evict, f, parent, None, None);
        d.latch.unlock_exclusive();
        unlatch_parent();
        Ok(None)
    }

    /// Repeats the sweep while it frees too little but the policy refused leaves (R9): each
    /// refusal ages a leaf, so a few passes reach leaves that were used recently. Bounded by
    /// [`SWEEP_PASSES`]; returns the frames freed.
    fn sweep_passes(&self, target: usize, wal_error: &mut Option<BufferError>) -> Result<usize> {
        let mut freed = 0;
        for _ in 0..SWEEP_PASSES {
            let (n, refused) = self.sweep(target, wal_error)?;
            freed += n;
            if self.free_count.load(Relaxed) >= target || (n == 0 && refused == 0) {
                break;
            }
        }
        Ok(freed)
    }

    /// Graefe's depth-first sweep (B14): walks the cached part of each tree from its root, leaf-first,
    /// and evicts pages without swizzled children that the policy admits (R9). Returns the frames
    /// freed and the leaves the policy refused. A victim the log could not be flushed for (B18)
    /// stays; the first such error is kept in `wal_error`.
    fn sweep(&self, target: usize, wal_error: &mut Option<BufferError>) -> Result<(usize, usize)> {
        let roots = self.roots.lock().clone();
        let start = self.sweep_cursor.fetch_add(1, Relaxed);
        let mut candidates = Vec::new();
        let mut stack: Vec<FrameId> = roots;
        let mut offs = Vec::new();
        let want = target.max(1) * 2;
        let mut refused = 0;
        while let Some(f) = stack.pop() {
            let d = self.desc(f);
            if !d.latch.try_lock_shared() {
                continue;
            }
            if d.state.load(Acquire) != RESIDENT {
                d.latch.unlock_shared();
                continue;
            }
            // SAFETY: B1 — shared latch held until unlock below.
            let page = unsafe { self.page(f) };
            offs.clear();
            self.owner.swip_offsets(page, &mut offs);
            let children: Vec<FrameId> = offs
                .iter()
                .filter_map(|&o| match Swip::from_raw(get_u64(page, o)).map(Swip::target) {
                    Some(SwipTarget::Frame(c)) => Some(c),
                    _ => None,
                })
                .collect();
            d.latch.unlock_shared();
            if children.is_empty() {
                if d.root.load(Relaxed) {
                    continue;
                }
                if !self.policy.sweep_admits(f, &d.hook) {
                    refused += 1;
                    continue;
                }
                candidates.push(f);
                if candidates.len() >= want {
                    break;
                }
            } else {
                // Rotate the starting child so successive sweeps resume elsewhere.
                let k = start % children.len();
                stack.extend(children[k..].iter().chain(&children[..k]).rev());
            }
        }
        let mut freed = 0;
        for c in candidates {
            if self.free_count.load(Relaxed) >= target {
                break;
            }
            match self.try_evict(c) {
                Ok(None) => {
                    self.policy.on_remove(c, true, &self.desc(c).hook);
                    self.push_free(c);
                    self.count(|b| bump(&b.evictions));
                    freed += 1;
                }
                Ok(Some(_)) => {}
                Err(EvictError::Wal(e)) => {
                    wal_error.get_or_insert(e);
                }
                Err(EvictError::Io(e)) => return Err(e),
            }
        }
        self.count(|b| {
            add(&b.sweep_evictions, freed as u64);
            add(&b.sweep_refusals, refused as u64);
        });
        Ok((freed, refused))
    }

    // ----------------------------------------------------------------------------------------
    // Flushing
    // ----------------------------------------------------------------------------------------

    /// Writes every dirty page (with page ids in place of swizzled swips, B8), the free-page chain
    /// and the metadata page, then syncs the file. Each page is written under its shared latch,
    /// after the log is durable up to its page LSN (B18).
    ///
    /// # Errors
    /// [`BufferError::Wal`] if the log could not be flushed for a page (that page and the ones
    /// after it stay dirty; the file stays usable); I/O errors, after which the pool refuses
    /// further I/O (sticky error, F4).
    pub fn flush(&self) -> Result<()> {
        let mut buf = AlignedBuf::new(self.page_size, 4096)?;
        let mut offs = Vec::new();
        for (i, d) in self.frames.iter().enumerate() {
            if !d.dirty.load(Relaxed) {
                continue;
            }
            // The shared latch is held through the write: no one changes the page meanwhile
            // (changes need the exclusive latch), eviction cannot take the frame (B2), and the
            // dirty flag and recovery LSN are reset for exactly the bytes written (B19).
            d.latch.lock_shared();
            let written = self.flush_frame(FrameId(i as u32), &mut buf, &mut offs);
            d.latch.unlock_shared();
            written?;
        }
        let meta = self.meta.lock();
        self.file.set_len_pages(meta.page_count)?;
        self.file.write_meta(&meta)?;
        self.count(|b| bump(&b.pages_written));
        self.file.sync()
    }

    /// The page cleaner's write-back (B23): writes the dirty pages whose recovery LSN is below
    /// `below`, oldest first up to `max` pages, then in page-id order, each under its shared
    /// latch as `flush` does, after the log is durable up to its page LSN (B18). Returns how many
    /// pages it wrote. Takes one latch at a time and no other lock, so it may wait.
    ///
    /// # Errors
    /// As [`BufferPool::flush`]: a log failure leaves that page dirty; I/O errors are sticky.
    pub fn write_back_older(&self, below: Lsn, max: usize) -> Result<usize> {
        let mut batch: Vec<(u64, u64, usize)> = self
            .frames
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let rec = d.rec_lsn.load(Acquire);
                (rec != 0 && rec < below.0 && d.state.load(Acquire) == RESIDENT)
                    .then(|| (rec, d.page_id.load(Relaxed), i))
            })
            .collect();
        if batch.len() > max {
            batch.select_nth_unstable(max);
            batch.truncate(max);
        }
        batch.sort_unstable_by_key(|&(_, page, _)| page);
        let mut buf = AlignedBuf::new(self.page_size, 4096)?;
        let mut offs = Vec::new();
        let mut written = 0;
        for (_, _, i) in batch {
            let d = &self.frames[i];
            d.latch.lock_shared();
            let r = self.flush_frame(FrameId(i as u32), &mut buf, &mut offs);
            d.latch.unlock_shared();
            written += usize::from(r?);
        }
        Ok(written)
    }

    /// `flush` of one frame, which the caller holds latched shared. Returns whether it wrote.
    fn flush_frame(&self, f: FrameId, buf: &mut AlignedBuf, offs: &mut Vec<usize>) -> Result<bool> {
        let d = self.desc(f);
        if d.state.load(Acquire) != RESIDENT || !d.dirty.load(Relaxed) {
            return Ok(false);
        }
        let pid = self.frame_page_id(f);
        // SAFETY: B1 — the caller holds f's latch (shared) while this borrow lives.
        let page = unsafe { self.page(f) };
        let out = buf.as_mut_slice();
        out.copy_from_slice(page);
        offs.clear();
        self.owner.swip_offsets(out, offs);
        for &o in offs.iter() {
            if let Some(s) = Swip::from_raw(get_u64(out, o)) {
                // Children of a latched page stay resident (B6), so the id is current.
                put_u64(out, o, Swip::page(self.swip_page_id(s)).raw());
            }
        }
        let lsn = page::page_lsn(out);
        self.wal_before_write(pid, lsn)?;
        // Claim the write: of two flushes holding the shared latch, only one writes (F9).
        if !d.dirty.swap(false, Relaxed) {
            return Ok(false);
        }
        if let Err(e) = self.file.write_page(pid, out) {
            d.dirty.store(true, Relaxed);
            return Err(e);
        }
        self.written(d, pid, lsn);
        self.count(|b| {
            bump(&b.write_backs);
            bump(&b.pages_written);
        });
        Ok(true)
    }

    /// B18 (WAL rule): before a page carrying `lsn` is written, the log must be durable up to
    /// `lsn`. No call when logging is off or the page carries no LSN.
    fn wal_before_write(&self, page: PageId, lsn: Lsn) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        if lsn == Lsn(0) {
            return Ok(());
        }
        self.count(|b| bump(&b.wal_flushes));
        log.flush_to(lsn).map_err(|source| BufferError::Wal {
            file: self.file.path().to_path_buf(),
            page,
            lsn,
            source,
        })
    }

    /// B19, B20: `page` of frame `d` is now in the file carrying `lsn`. Called with the latch
    /// that protected the write still held.
    fn written(&self, d: &FrameDesc, page: PageId, lsn: Lsn) {
        d.rec_lsn.store(0, Release);
        if let Some(log) = &self.log {
            log.page_written(page, lsn);
        }
    }

    /// The dirty pages and their recovery LSNs (B19), for a fuzzy checkpoint: `(page, rec_lsn)`
    /// of every resident dirty frame whose recovery LSN is set, in frame order.
    ///
    /// Reads the descriptors without latching or waiting, so the list is not a snapshot of one
    /// instant. That is safe for a checkpoint (README B19): a page written back meanwhile is at
    /// worst listed with its old recovery LSN (or listed although clean), which only makes redo
    /// start earlier or look at a page it need not change — redo compares page LSNs; a frame
    /// evicted and reused meanwhile can be listed under its old page id (same argument) or its
    /// new one with the old page's, older, recovery LSN.
    #[must_use]
    pub fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        self.frames
            .iter()
            .filter_map(|d| {
                let rec = d.rec_lsn.load(Acquire);
                // Not `dirty`: a write-back clears it before its write and resets `rec_lsn`
                // only after (B19), so `rec_lsn` alone keeps the page listed until it is in
                // the file.
                if rec == 0 || d.state.load(Acquire) != RESIDENT {
                    return None;
                }
                Some((PageId::new(d.page_id.load(Relaxed))?, Lsn(rec)))
            })
            .collect()
    }

    /// Debug check of the pool's own invariants (B3, B6): every resident frame is in the page
    /// table, and every frame recording a parent is referenced by a swizzled swip there.
    /// Must be called while no other thread uses the pool.
    ///
    /// # Errors
    /// A description of the first violated rule.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut resident = 0;
        let mut offs = Vec::new();
        let mut kids = vec![0u32; self.frames.len()];
        for d in self.frames.iter() {
            if d.state.load(Acquire) == RESIDENT {
                if let Some(p) = d.parent() {
                    kids[p.index()] += 1;
                }
            }
        }
        for (i, d) in self.frames.iter().enumerate() {
            if d.kids.load(Relaxed) != kids[i] {
                return Err(format!(
                    "B16: frame {i} counts {} swizzled children, {} frames name it as parent",
                    d.kids.load(Relaxed),
                    kids[i]
                ));
            }
            let f = FrameId(i as u32);
            if d.latch.is_latched() {
                return Err(format!("{f} is still latched"));
            }
            if d.state.load(Acquire) != RESIDENT {
                continue;
            }
            resident += 1;
            let pid = self.frame_page_id(f);
            if self.table.get(pid) != Some(f) {
                return Err(format!("B3: {pid:?} in {f} is missing from the page table"));
            }
            if let Some(p) = d.parent() {
                // SAFETY: B1 — no other thread uses the pool (documented precondition).
                let ppage = unsafe { self.page(p) };
                offs.clear();
                self.owner.swip_offsets(ppage, &mut offs);
                if !offs.iter().any(|&o| get_u64(ppage, o) == Swip::frame(f).raw()) {
                    return Err(format!("B6: {f} names {p} as parent, which does not reference it"));
                }
            }
        }
        if resident != self.table.len() {
            return Err(format!(
                "B3: {resident} resident frames but {} page-table entries",
                self.table.len()
            ));
        }
        if resident + self.free_count.load(Relaxed) != self.frames.len() {
            return Err("B13: resident + free frames != capacity".into());
        }
        Ok(())
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("mode", &self.mode)
            .field("frames", &self.frames.len())
            .field("page_size", &self.page_size)
            .field("path", &self.file.path())
            .finish_non_exhaustive()
    }
}

/// Victims one [`Policy::evict_batch`] call looks for at most: they reach the free list together
/// when the call returns (R10), so a chunk bounds how long they are withheld from other threads
/// (BP-Wrapper's reclamation batch F).
const EVICTION_CHUNK: usize = 64;

/// The pool's side of one eviction chunk (R10).
struct EvictionChunk<'a> {
    pool: &'a BufferPool,
    wanted: usize,
    freed: Vec<FrameId>,
    /// An I/O error writing a victim ends the chunk; the pool reports it after the chunk.
    error: Option<BufferError>,
    /// The first failure of the log (B18): its victim was rejected and the chunk goes on.
    wal_error: Option<BufferError>,
}

/// Why `try_evict` failed, beyond the rejections the policy hears of.
enum EvictError {
    /// The log could not be flushed to the victim's page LSN (B18): it keeps its page, dirty.
    Wal(BufferError),
    /// Writing the victim failed (sticky, F4).
    Io(BufferError),
}

impl Evictor for EvictionChunk<'_> {
    fn wants_more(&mut self) -> bool {
        self.error.is_none() && self.freed.len() < self.wanted
    }

    /// Starts loading the descriptor that `try_evict` reads first (replacement R10; a hint, sync
    /// H1). Worth it for policies whose victims come in no particular frame order: CLOCK's hand
    /// walks the descriptors in order, and the hardware prefetcher follows it.
    fn prefetch(&mut self, frame: FrameId) {
        if let Some(d) = self.pool.frames.get(frame.index()) {
            swizzledb_sync::hint::prefetch(d);
        }
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let pool = self.pool;
        pool.count(|b| bump(&b.proposals));
        let why = match pool.try_evict(frame) {
            Ok(None) => {
                self.freed.push(frame);
                return Verdict::Evicted;
            }
            Ok(Some(why)) => why,
            Err(EvictError::Wal(e)) => {
                // Counted as `rejected_wal` by try_evict; the policy keeps the frame.
                self.wal_error.get_or_insert(e);
                return Verdict::Rejected(Rejection::InUse);
            }
            Err(EvictError::Io(e)) => {
                // The victim keeps its page (the write failed before anything changed).
                self.error = Some(e);
                Rejection::InUse
            }
        };
        pool.count(|b| {
            bump(match why {
                Rejection::InUse => &b.rejected_in_use,
                Rejection::Root => &b.rejected_root,
                Rejection::SwizzledChildren => &b.rejected_swizzled_children,
                Rejection::NotResident => &b.rejected_not_resident,
            });
        });
        Verdict::Rejected(why)
    }
}

/// Deterministic tests of the page-table hit path (issue 19, fourth race), with their pause
/// point.
#[cfg(test)]
#[path = "pool_race_tests.rs"]
mod race_tests;

//! The buffer pool: frames, descriptors, fix paths, swizzling, eviction and flushing.
//! The rules cited as B1… are in this crate's `README.md`.
//!
//! This file holds the pool's state (descriptors, the pool itself) and what every path uses;
//! the paths live next to it, one job per file: [`catalog`] (roots and the catalog), [`fix`]
//! (fix paths and swizzling), [`alloc`] (allocation and structure changes), [`evict`] (free
//! frames and eviction) and [`flush`] (write-back and checkpoint support).

mod alloc;
mod announce;
mod catalog;
mod depend;
mod evict;
pub(crate) mod evictor;
mod fix;
mod flush;
mod free;
pub(crate) mod propagate;
pub(crate) mod view;
mod writes;

pub use announce::Announced;
pub use writes::WriteGuard;

use crate::aligned::AlignedBuf;
use crate::error::{BufferError, Result};
use crate::file::PageFile;
use crate::log_flush::LogFlush;
use crate::meta::Meta;
use crate::page::get_u64;
use crate::page_table::PageTable;
use crate::stats::{Registry, Stats};
use crate::swip::Swip;
use crate::trace::{EventKind, TraceError, TraceSummary, Tracer};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::Arc;
use swizzledb_replacement::{FrameHook, Policy};
use swizzledb_sync::{FrameId, Latch, LatchMode, PageId};

pub use crate::config::{PoolConfig, PoolMode};

/// Smallest pool, in frames.
pub const MIN_FRAMES: usize = 16;

/// What the pool needs to know about the pages it holds (the **owner** of the crate README's
/// vocabulary). The B-tree implements it; eviction, un-swizzling and flushing use nothing else.
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
/// Frames a pool can have: fewer than this, so that a frame id plus one fits the parent field.
const FRAME_LIMIT: u32 = u32::MAX;

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
    /// The frame whose page holds the swizzled swip to this frame (B6), plus one; 0 for none, so
    /// that a descriptor of zero bytes is one with no parent (see [`Descriptors`]).
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

impl FrameDesc {
    #[inline]
    pub(crate) fn mark_dirty(&self) {
        if !self.dirty.load(Relaxed) {
            self.dirty.store(true, Relaxed);
        }
    }

    fn parent(&self) -> Option<FrameId> {
        match self.parent.load(Acquire) {
            0 => None,
            p => Some(FrameId(p - 1)),
        }
    }

    fn set_parent(&self, p: Option<FrameId>) {
        // A frame id is below FRAME_LIMIT - 1 (`check_config`), so the sum fits.
        self.parent.store(p.map_or(0, |f| f.0 + 1), Release);
    }
}

/// The descriptor array (B4): one lazily committed region of zero bytes (F1), of which the
/// kernel backs only the pages touched. A descriptor of zero bytes is a free frame's as the
/// pool makes it (unlatched at version 0, no page, FREE, clean, no parent, no children, hook 0),
/// and a frame's descriptor is first touched when the frame is first handed out (B30), so a
/// large pool takes memory for the frames it uses, not for its size.
struct Descriptors {
    memory: AlignedBuf,
    len: usize,
}

// Every field of a descriptor is an atomic integer or bool (`Latch` and `FrameHook` are atomics
// too), for which zero bytes are a valid value, and none needs dropping.
const _: () = assert!(!std::mem::needs_drop::<FrameDesc>());

impl Descriptors {
    fn new(len: usize) -> Result<Descriptors> {
        let bytes = len.checked_mul(std::mem::size_of::<FrameDesc>()).ok_or_else(|| {
            BufferError::Config(format!("{len} frame descriptors do not fit in memory; use a smaller pool"))
        })?;
        Ok(Descriptors { memory: AlignedBuf::new_lazy(bytes)?, len })
    }
}

impl std::ops::Deref for Descriptors {
    type Target = [FrameDesc];

    #[inline]
    fn deref(&self) -> &[FrameDesc] {
        // `memory` is valid for `len * size_of::<FrameDesc>()` bytes (`new`), starts at a
        // multiple of HUGE_PAGE (a multiple of FrameDesc's 64-byte alignment), is zeroed, and
        // lives as long as `self`; zero bytes are a valid `FrameDesc` (the assertion and comment
        // above). The slice is shared: every write goes through the atomics' interior
        // mutability, never through `as_mut_slice`, and `as_ptr` is the mapping's own pointer.
        // SAFETY: F1 — a live, aligned, zero-filled mapping of `len` descriptors, read-write.
        unsafe { std::slice::from_raw_parts(self.memory.as_ptr().cast::<FrameDesc>(), self.len) }
    }
}

/// The buffer pool. See the crate README for its rules.
pub struct BufferPool {
    mode: PoolMode,
    page_size: usize,
    frames: Descriptors,
    /// Base of the frame region (`memory`), cached as a raw pointer for page access (B1).
    base: *mut u8,
    memory: AlignedBuf,
    table: PageTable,
    /// Free frames, partitioned (B30).
    free: free::FreeLists,
    /// At least the frames `free` holds (a push counts first, a pop counts after): a hint for
    /// eviction's targets, never below zero.
    free_count: AtomicUsize,
    evict_lock: Mutex<()>,
    /// The background evictor's wake-up and stop (B31).
    evictor: evictor::Signal,
    low_watermark: usize,
    high_watermark: usize,
    /// `PoolConfig::eviction_batch` set: every batch, the background evictor's too, frees up to
    /// `high_watermark` (B13).
    fixed_batch: bool,
    policy: Box<dyn Policy>,
    /// The policy's hits as one store the pool makes itself (replacement R12), if they are.
    hook_hit: Option<swizzledb_replacement::HookHit>,
    /// Whether unfixes are reported to the policy (cached `Policy::uses_unfix`).
    unfix_hook: bool,
    owner: Arc<dyn PageOwner>,
    file: PageFile,
    meta: Mutex<Meta>,
    /// B37: the threads between logging a free or catalog change and making it.
    announced: announce::Announcements,
    roots: Mutex<Vec<FrameId>>,
    sweep_cursor: AtomicUsize,
    stats: Registry,
    /// The reference-trace recorder (B17); `None` when tracing is off.
    trace: Option<Box<Tracer>>,
    /// The write-ahead log (B18–B20); `None` when logging is off.
    log: Option<Arc<dyn LogFlush>>,
    /// Stripes of per-page file write locks (B26): every write of a page to the file holds its
    /// stripe, and so does a writer outside the pool ([`crate::FilePage`]).
    write_locks: Box<[Mutex<()>]>,
    /// B27: eviction may leave dirty pages to the log.
    write_elision: bool,
    /// B34: nothing is ever written.
    read_only: bool,
    /// Whether fixes are timed (B12a).
    time_fixes: bool,
    /// Whether descents may read inner nodes optimistically (B24).
    optimistic: bool,
    /// Whether lookups may read leaves optimistically too (B33): `optimistic`, asked for
    /// (`PoolConfig::optimistic_leaf_reads`), and the policy takes hits without a latch
    /// (replacement R11) or there is none (main-memory mode).
    optimistic_leaves: bool,
    /// What page 0 said when the file was opened (or created).
    opened: FileState,
    /// Set by [`BufferPool::close`] (B22): tree operations refuse from then on.
    closed: std::sync::atomic::AtomicBool,
    /// The trees' writes in flight, which `close` waits for before its flush (B22).
    writes: writes::InFlight,
    /// B36: pages redo rebuilds from another page's history, until they are resolved.
    deps: depend::Dependants,
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
    /// Creates a new database file and a pool over it. The settings are checked first
    /// ([`BufferPool::check_config`]): a refusal creates no file, and a failure after the file
    /// was created removes it again.
    ///
    /// # Errors
    /// Invalid configuration or I/O errors.
    pub fn create(path: &Path, config: &PoolConfig, owner: Arc<dyn PageOwner>) -> Result<BufferPool> {
        BufferPool::check_config(config, config.page_size)?;
        let file = PageFile::create(&*config.vfs, path, config.page_size, config.direct_io)?;
        let made = (|| {
            let mut meta = Meta::new(config.page_size);
            meta.logged = config.log.is_some();
            // A logged file says CLEAN only once it was closed cleanly (F11), and so does one
            // that must not open before it is complete.
            meta.clean = !meta.logged && !config.create_unclean;
            file.write_meta(&meta)?;
            file.sync()?;
            BufferPool::new(file, meta, config, owner)
        })();
        if made.is_err() {
            // The file is this call's own (`PageFile::create` refuses one that exists).
            let _ = config.vfs.remove(path);
        }
        made
    }

    /// Whether `config` makes a pool over pages of `page_size` bytes — the checks
    /// [`BufferPool::create`], [`BufferPool::open`] and [`BufferPool::open_recovered`] make
    /// before the pool exists, for a caller that must refuse bad settings before it writes
    /// anything (a log, a double-write area, page 0): the page size is supported, the pool
    /// holds at least [`MIN_FRAMES`] and fewer than 2^32 − 1 frames, the eviction batch is not
    /// 0, and a BP-Wrapper policy's queue size and batch threshold fit.
    ///
    /// # Errors
    /// [`BufferError::Config`] naming the setting and what to change.
    pub fn check_config(config: &PoolConfig, page_size: usize) -> Result<()> {
        if !crate::page::valid_page_size(page_size) {
            return Err(BufferError::Config(format!(
                "unsupported page size {page_size}: use a power of two from {} to {} bytes",
                crate::page::MIN_PAGE_SIZE,
                crate::page::MAX_PAGE_SIZE
            )));
        }
        let capacity = config.pool_bytes / page_size;
        if capacity < MIN_FRAMES {
            return Err(BufferError::Config(format!(
                "a pool of {} bytes holds {capacity} pages of {page_size} bytes; at least {MIN_FRAMES} \
                 pages are needed: raise pool_bytes to {} or more",
                config.pool_bytes,
                MIN_FRAMES * page_size
            )));
        }
        if capacity >= FRAME_LIMIT as usize {
            return Err(BufferError::Config(format!(
                "a pool of {} bytes holds {capacity} pages of {page_size} bytes, more than the {} \
                 frames a pool can have: lower pool_bytes",
                config.pool_bytes,
                FRAME_LIMIT - 1
            )));
        }
        if config.eviction_batch == Some(0) {
            return Err(BufferError::Config(
                "an eviction batch of 0 frames frees nothing; use 1 or more".into(),
            ));
        }
        if let Some(variant) = config.policy.bp_wrapper {
            let bp = swizzledb_replacement::BpConfig {
                variant,
                queue_size: config.bp_queue_size,
                batch_threshold: config.bp_batch_threshold,
            };
            bp.check().map_err(|e| BufferError::Config(e.to_string()))?;
        }
        Ok(())
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
        // F16: an allocation whose free list or catalog contradicts itself (a damaged page 0 or
        // free chain, or a log that restart rebuilt it from) is refused before any page is used.
        if let Err((page, problem)) = meta.check_allocation() {
            return Err(BufferError::Corrupted {
                file: file.path().to_path_buf(),
                page,
                reason: format!("{problem}: the database's allocation is damaged; copy it aside and run `swizzledb verify` on the copy"),
            });
        }
        let opened = FileState::of(&meta);
        if let Some(area) = &config.double_write {
            file.use_double_write(Arc::clone(area));
        }
        // From now on page 0 is written without the CLEAN flag; only `close` sets it (F11).
        meta.clean = false;
        let page_size = meta.page_size;
        BufferPool::check_config(config, page_size)?;
        let capacity = config.pool_bytes / page_size;
        // One lazily committed region, aligned and advised for huge pages: fewer TLB misses on
        // the hit path, and main-memory mode takes memory only as pages are created.
        let mut memory = AlignedBuf::new_lazy(capacity * page_size)?;
        if config.prefault {
            memory.prefault();
        }
        let base = memory.as_mut_ptr();
        // Descriptors too (one cache line per frame), in a region of the same kind: committed
        // as frames are handed out, faulted in with the frames where those are.
        let mut frames = Descriptors::new(capacity)?;
        if config.prefault {
            frames.memory.prefault();
        }
        // B13: the watermarks, the default's or the configured batch's.
        let (low, high) = match config.eviction_batch {
            None => {
                let low = (capacity / 64).clamp(2, 256);
                (low, (low * 2).min(capacity / 2))
            }
            Some(n) => {
                let n = n.clamp(1, capacity / 2);
                (n, n)
            }
        };
        let policy = config
            .policy
            .build_with_queue(capacity, config.seed, config.bp_queue_size, config.bp_batch_threshold)
            .map_err(|e| BufferError::Config(e.to_string()))?;
        let optimistic =
            config.optimistic_reads && config.mode.swizzles() && config.trace.is_none() && !config.time_fixes;
        let optimistic_leaves = optimistic
            && config.optimistic_leaf_reads
            && (config.mode == PoolMode::MainMemory || policy.latch_free_hits());
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
            free: free::FreeLists::new(capacity),
            free_count: AtomicUsize::new(capacity),
            evict_lock: Mutex::new(()),
            evictor: evictor::Signal::default(),
            low_watermark: low,
            high_watermark: high,
            fixed_batch: config.eviction_batch.is_some(),
            unfix_hook: policy.uses_unfix() && config.mode != PoolMode::MainMemory,
            hook_hit: policy.hook_hit(),
            policy,
            owner,
            file,
            meta: Mutex::new(meta),
            announced: announce::Announcements::default(),
            roots: Mutex::new(Vec::new()),
            sweep_cursor: AtomicUsize::new(0),
            stats: Registry::new(),
            trace,
            log: config.log.clone(),
            write_locks: (0..propagate::WRITE_LOCKS).map(|_| Mutex::new(())).collect(),
            write_elision: config.write_elision && config.log.is_some(),
            read_only: config.read_only,
            time_fixes: config.time_fixes,
            optimistic,
            optimistic_leaves,
            opened,
            closed: std::sync::atomic::AtomicBool::new(false),
            writes: writes::InFlight::default(),
            deps: depend::Dependants::default(),
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
    /// nothing was written after; a file that says CLEAN and that nothing changed since is left
    /// as it is. A failure leaves the pool closed and the file unclean.
    ///
    /// # Errors
    /// As [`BufferPool::flush`].
    pub fn close(&self) -> Result<()> {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        // B22: a tree write that began before the store ends before the flush.
        self.writes.wait_for_none();
        // B31: no page is written behind the flush's back.
        self.evictor.stop();
        if self.read_only {
            // B34: nothing was changed, and nothing is written.
            return Ok(());
        }
        let meta = self.meta.lock().clone();
        let dirty = self.used_frames().any(|(_, d)| d.dirty.load(std::sync::atomic::Ordering::Acquire));
        if !dirty && self.file.clean_with(&meta) {
            // F11: an unlogged file that says CLEAN and that nothing changed since is left as
            // it is. Written again, it would lose CLEAN first (every write does), and a crash
            // before the close ended would leave it unclean after a close that changed nothing.
            return Ok(());
        }
        self.flush()?;
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
        self.file.mark_clean(&meta)?;
        // The converted database is open now: CLEAN returns at its clean close (F11).
        self.file.clear_clean()
    }

    /// Begins a tree's write (B22): `None` if the pool is closed. The pool's `close` waits
    /// until every guard handed out before it was dropped, then flushes; hold it for the
    /// whole write, structure changes included, and across no wait for another thread's
    /// progress.
    #[inline]
    pub fn begin_write(&self) -> Option<WriteGuard<'_>> {
        self.writes.enter(&self.closed)
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

    /// Whether page 0 says the file has a write-ahead log (F11), whether or not this pool was
    /// opened with one (a read-only open reads a logged file without its log, B34).
    #[must_use]
    pub fn file_is_logged(&self) -> bool {
        self.meta.lock().logged
    }

    /// Whether the pool was opened read-only (B34): its owner changes no page.
    #[inline]
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// F11: called by the owner before it changes a page in the pool. Before the first change
    /// since the file was last closed cleanly (an unlogged file whose page 0 says CLEAN), page 0
    /// is rewritten without CLEAN and synced, so that a crash from then on, before any page
    /// reaches the file, is seen as unclean too; after it, this is one atomic load.
    ///
    /// # Errors
    /// The write or sync of page 0 failed, or an earlier write, sync or resize of the file did
    /// (`PreviousIoError`, F4): the change must not be made then.
    #[inline]
    pub fn before_change(&self) -> Result<()> {
        self.file.before_change()
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

    /// The frames handed out at least once, with their descriptors, in frame order (B30). Any
    /// other frame is free, and its descriptor is the one the pool made ([`Descriptors`]): scans
    /// of the descriptors look at these alone, so they cost what the pool used, not its size.
    fn used_frames(&self) -> impl Iterator<Item = (usize, &FrameDesc)> + '_ {
        self.free.handed_out().flat_map(move |r| r.clone().zip(&self.frames[r]))
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
            stats.policy_lock_wait_nanos = lock.wait_nanos;
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

    /// The address of frame `f`'s first byte (frames never move). Computing it reads nothing;
    /// whoever reads through it keeps the rule of that read (B1 latched, B24 optimistic).
    #[inline]
    pub(crate) fn frame_addr(&self, f: FrameId) -> *mut u8 {
        self.base.wrapping_add(f.index() * self.page_size)
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
        unsafe { std::slice::from_raw_parts(self.frame_addr(f), self.page_size) }
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
        unsafe { std::slice::from_raw_parts_mut(self.frame_addr(f), self.page_size) }
    }

    #[inline]
    fn count<R>(&self, f: impl FnOnce(&crate::stats::Block) -> R) -> R {
        self.stats.with(f)
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

    /// Debug check of the pool's own invariants (B3, B6): every resident frame is in the page
    /// table, and every frame recording a parent is referenced by a swizzled swip there.
    /// Must be called while no other thread uses the pool; the background evictor (B31) is
    /// kept out of its rounds meanwhile.
    ///
    /// # Errors
    /// A description of the first violated rule.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let _quiet = self.evictor.quiesce();
        let mut resident = 0;
        let mut offs = Vec::new();
        let mut kids = vec![0u32; self.frames.len()];
        for (_, d) in self.used_frames() {
            if d.state.load(Acquire) == RESIDENT {
                if let Some(p) = d.parent() {
                    kids[p.index()] += 1;
                }
            }
        }
        // A frame never handed out is free, its descriptor as the pool made it (B30).
        for (i, d) in self.used_frames() {
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

/// Deterministic tests of the page-table hit path (README B3, B10), with their pause
/// point.
#[cfg(test)]
mod race_tests;

/// Optimistic reads (B24) against exclusive sections, eviction and frame reuse.
#[cfg(test)]
mod view_tests;

/// Dirty victims written outside the eviction lock (B29).
#[cfg(test)]
mod evict_tests;

/// The background evictor (B31).
#[cfg(test)]
mod evictor_tests;

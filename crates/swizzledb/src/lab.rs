//! The lab's way into the engine: research switches that a user of the key-value store does
//! not need, and the engine internals the experiments read.
//!
//! A user builds a database with [`Builder`]'s own setters. The experiments of the lab
//! (crates/lab) also turn the switches the papers compare — latching, fix timing, BP-Wrapper's
//! queue, the record locks, the cleaners and checkpoints of Lersch 2015, a reference trace —
//! through [`Builder::lab`] and [`LabOptions`], and reach the buffer pool and a tree's root page
//! through the extension traits [`DatabaseExt`] and [`TreeExt`]:
//!
//! ```
//! use swizzledb::lab::{DatabaseExt, TreeExt};
//! # let dir = tempfile::tempdir()?;
//! let db = swizzledb::Database::builder()
//!     .lab(|lab| lab.time_fixes(true).seed(7))
//!     .create(dir.path().join("lab.swz"))?;
//! let tree = db.create_tree("t")?;
//! tree.upsert(b"k", b"v")?;
//! assert!(db.pool().page_size() > 0 && tree.root_page().get() > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The switches choose how the engine logs, locks and propagates, never whether a logged
//! database's changes are logged. [`DatabaseExt::pool`] is different: it hands out the buffer
//! pool itself, for its counters and for the tests that damage pages on purpose, and whatever
//! is written through it bypasses the log. It is engine plumbing, not a user's way in: the
//! user's types ([`Database`], [`Builder`], [`Tree`], [`Transaction`](crate::Transaction))
//! have no path past the log.

use std::sync::Arc;

use swizzledb_buffer::{BufferPool, PoolConfig};
use swizzledb_sync::PageId;

use crate::builder::{Builder, Locking};
use crate::cleaner::Cleaner;
use crate::database::Database;
use crate::logging::CheckpointKind;
use crate::tree::Tree;

/// The research switches of a [`Builder`], set through [`Builder::lab`]. Each is off (or the
/// engine's default) unless set; none is needed to use SwizzleDB as a key-value store.
#[derive(Clone, Debug, Default)]
pub struct LabOptions(pub(crate) Builder);

impl Builder {
    /// The research switches the lab's experiments turn ([`LabOptions`]): latching, fix
    /// timing, BP-Wrapper's queue, record locks, the cleaners and checkpoints of Lersch 2015, a
    /// reference trace, the file system. None is needed to use SwizzleDB as a key-value store.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = swizzledb::Database::builder()
    ///     .lab(|lab| lab.time_fixes(true).locking(false))
    ///     .create(dir.path().join("measured.swz"))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn lab(self, options: impl FnOnce(LabOptions) -> LabOptions) -> Self {
        options(LabOptions(self)).0
    }
}

impl LabOptions {
    /// Seed for randomized policies.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.0.config.seed = seed;
        self
    }

    /// Time every page fix, by hit or miss and latch mode, into the `*_nanos` and `timed_*`
    /// counters of [`Database::stats`] (buffer README, B12a). Off by default: two clock reads
    /// per fix.
    #[must_use]
    pub fn time_fixes(mut self, on: bool) -> Self {
        self.0.config.time_fixes = on;
        self
    }

    /// Let tree descents read inner nodes without latching them, validated by version
    /// (optimistic latching; buffer README B24, btree README T20). On by default; it applies
    /// in the swizzling and main-memory modes only, and is off while a trace is recorded or
    /// fixes are timed. Turn it off to measure descents with shared-latch coupling, as the
    /// papers' engines ran them.
    #[must_use]
    pub fn optimistic_reads(mut self, on: bool) -> Self {
        self.0.config.optimistic_reads = on;
        self
    }

    /// Let point reads (`get`, `get_with` without record locks) read the leaf without latching
    /// it too (buffer README B33, btree README T21): no read-modify-write at all on a hit. Off
    /// by default: on this project's 2-core machine it costs about a sixth more instructions
    /// per in-memory lookup than latching the leaf (`docs/oom.md`); it is meant for many cores
    /// reading the same leaves. It needs [`LabOptions::optimistic_reads`] and a policy whose hits
    /// need no latch (CLOCK, GCLOCK, SIEVE; replacement README R11), or main-memory mode;
    /// otherwise reads latch the leaf as before.
    #[must_use]
    pub fn optimistic_leaf_reads(mut self, on: bool) -> Self {
        self.0.config.optimistic_leaf_reads = on;
        self
    }

    /// BP-Wrapper's queue size S and batch threshold T (default 64 and 32; replacement README,
    /// "BP-Wrapper") for a wrapped policy (`bpw-2q`, `bpw-batch-lru`, ...); ignored by others.
    /// `create` and `open` fail with [`BufferError::Config`](crate::BufferError::Config) unless
    /// `1 <= T <= S <= 65536` (each of the wrapper's 64 queues holds S entries).
    #[must_use]
    pub fn bp_queue(mut self, queue_size: usize, batch_threshold: usize) -> Self {
        self.0.config.bp_queue_size = queue_size;
        self.0.config.bp_batch_threshold = batch_threshold;
        self
    }

    /// Fault all of the pool's memory in when the database opens (buffer README F1b), so that
    /// a growing database pays no page faults while it runs: the memory is committed at once
    /// and opening takes longer. Off by default. The lab's benchmarks turn it on, so that a
    /// measurement does not include the operating system's (or hypervisor's) first touch of
    /// the pool.
    #[must_use]
    pub fn prefault(mut self, on: bool) -> Self {
        self.0.config.prefault = on;
        self
    }

    /// The file system the database file lives on (default: the operating system's). Tests
    /// pass a `swizzledb_io::FaultFs` to crash the database or fail chosen I/O calls. Every
    /// open goes through it, a read-only one too (RECOVERY.md R27), as do backups and
    /// compaction.
    #[must_use]
    pub fn vfs(mut self, vfs: Arc<dyn swizzledb_io::Vfs>) -> Self {
        self.0.config.vfs = vfs;
        self
    }

    /// Record a buffer reference trace to `path` (created or truncated): every fix (with hit or
    /// miss, latch mode and parent page), unfix, page read, eviction, allocation and free, with
    /// thread number and timestamp, in the binary format of `docs/trace-format.md` (rule B17 of
    /// the buffer README). Read it with [`TraceReader`](crate::TraceReader) or export it with
    /// `swizzledb trace export`. The trace is complete once [`Database::close`] returns (or the
    /// last handle to the pool is dropped). Off by default; off, it costs one predictable
    /// branch per fix and unfix. A `path` that names the database's own file or lies in its log
    /// directory would overwrite them: `create` and `open` refuse it with
    /// [`BufferError::Config`](crate::BufferError::Config) before anything is written. So do
    /// they a trace that cannot be created (its directory missing, a directory's path, no
    /// permission), with [`BufferError::Trace`](crate::BufferError::Trace) naming it.
    #[must_use]
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.0.config.trace = Some(path.into());
        self
    }

    /// With [`Builder::logging`]`(true)`, `open` converts a cleanly closed unlogged database into
    /// a logged one (a new log directory, page 0 marked logged) instead of refusing with
    /// [`Error::NotLogged`](crate::Error::NotLogged) (default `false`). A conversion that fails
    /// before page 0 is marked removes the log it made: the database stays unlogged, and the
    /// conversion can be tried again (RECOVERY.md R13). One killed before page 0 is marked
    /// leaves its log, which the next conversion removes once the log names this file.
    #[must_use]
    pub fn convert_to_logged(mut self, on: bool) -> Self {
        self.0.convert_to_logged = on;
        self
    }

    /// How often the background archiver archives the durable log (default: every
    /// [`DEFAULT_ARCHIVE_INTERVAL`](crate::DEFAULT_ARCHIVE_INTERVAL); `None`: only checkpoints, the decoupled cleaner and
    /// [`Database::archive_log`] archive). The archive then trails the log by about one
    /// interval, which is what instant restart reads at open instead of the log (R17, R22).
    /// Without [`Builder::log_archive`] it does nothing.
    #[must_use]
    pub fn archive_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.0.archive_every = Some(every);
        self
    }

    /// Bytes of archive entries one archiving holds in memory before it sorts them and spills
    /// them to a temporary file (default 64 MiB; RECOVERY.md R17, wal README A4b): however long
    /// the stretch of log, archiving it costs about this much memory. A small value makes every
    /// archiving spill (for tests); 0 spills every entry.
    #[must_use]
    pub fn archive_memory(mut self, bytes: usize) -> Self {
        self.0.archive_memory = Some(bytes);
        self
    }

    /// Whether a background thread keeps free frames ready (default: on; buffer README B31).
    /// On, a miss rarely evicts and almost never writes a dirty victim: the evictor thread,
    /// woken when free frames run low, evicts ahead of the misses and writes the dirty victims
    /// in batches. Off, the thread that misses evicts a batch itself when it finds too few
    /// free frames, and writes its dirty victims (B13, B29) — what Gilbert's and Graefe's
    /// pools did, and what their experiments time as the evictioner. Ignored in main-memory
    /// mode, which never evicts, and while a trace is recorded ([`LabOptions::trace`]), whose
    /// events stay the workload threads' own.
    #[must_use]
    pub fn background_eviction(mut self, on: bool) -> Self {
        self.0.no_background_eviction = !on;
        self
    }

    /// Frames one eviction batch frees (default `None`: the pool's watermarks, capacity/64 to
    /// twice that; buffer README B13). `Some(1)` evicts one victim per evictioner call when no
    /// frame is free — one replacement-policy proposal loop, one policy lock, per victim, as
    /// Zero's `pick_victim` (Gilbert 2017, Fig. 3.9) — and the background evictor, if on, keeps
    /// one frame free. A batch larger than half the frames frees half the frames; `create` and
    /// `open` fail with [`BufferError::Config`](crate::BufferError::Config) for `Some(0)`.
    #[must_use]
    pub fn eviction_batch(mut self, frames: Option<usize>) -> Self {
        self.0.config.eviction_batch = frames;
        self
    }

    /// Whether instant restart's background thread redoes pending pages (default: on). Off,
    /// pages are redone only when a fix loads them, until the first checkpoint, `flush` or
    /// `close` redoes the rest (RECOVERY.md R22) — to measure on-demand redo alone.
    #[must_use]
    pub fn background_redo(mut self, on: bool) -> Self {
        self.0.no_background_redo = !on;
        self
    }

    /// Which checkpoints the database takes (default [`CheckpointKind::Classical`], fuzzy
    /// checkpoints from the pool and the transaction table, RECOVERY.md R7);
    /// [`CheckpointKind::Decoupled`] computes them from the log instead (R19). Checkpoints at
    /// open, at the end of restart and at close are classical either way: the pool is exact
    /// then. Only with logging.
    #[must_use]
    pub fn checkpoint_kind(mut self, kind: CheckpointKind) -> Self {
        self.0.checkpoint_kind = kind;
        self
    }

    /// Lazy split images (RECOVERY.md R29): a split logs its new node as a *split-off* — the
    /// old node's records from the separator on, a few bytes — instead of the node's image,
    /// and the pool logs the image later only if the old node's history is about to be lost
    /// (its write, free or image) before the new node reached the file and a sync (buffer
    /// README B36). Fewer log bytes per insert (about 130 instead of 220 for a 100-byte
    /// auto-commit insert, docs/logging.md). On by default wherever nothing refuses it: with
    /// logging, without the log archive, whose page-local redo cannot follow a split-off, and
    /// with classical checkpoints; `true` with the archive or decoupled checkpoints makes
    /// `create` and `open` fail with `BadConfig`. `false` logs every split's new node whole,
    /// as with the archive: single-page recovery without an archive (R18) can then rebuild a
    /// page from its split as long as that record is in the log, where a split-off also needs
    /// its old node's history before it (R29 rule 6). The choice is per open: restart redoes
    /// split-offs in the log whatever it says.
    #[must_use]
    pub fn lazy_split_images(mut self, on: bool) -> Self {
        self.0.lazy_split_images = Some(on);
        self
    }

    /// Which page cleaner runs (default [`Cleaner::Classical`]); only with logging.
    /// [`Cleaner::Decoupled`] needs the log archive ([`Builder::log_archive`]; `create` and
    /// `open` refuse it without), and makes the checkpoints decoupled whatever
    /// [`LabOptions::checkpoint_kind`] says (RECOVERY.md R20).
    #[must_use]
    pub fn cleaner(mut self, cleaner: Cleaner) -> Self {
        self.0.cleaner = cleaner;
        self
    }

    /// Write elision (RECOVERY.md R21; Lersch 2015, Sec. 4.3): eviction may drop a dirty page
    /// without writing it, since the log and its archive hold every change of it; the next
    /// read finds the file's copy stale and rebuilds the page by single-page recovery (R18),
    /// and the decoupled cleaner brings the copy forward meanwhile. Off by default; only with
    /// logging, and it needs [`Cleaner::Decoupled`] (whose checkpoints keep such a page dirty
    /// until its copy is current): `create` and `open` of a logged database refuse it without.
    #[must_use]
    pub fn write_elision(mut self, on: bool) -> Self {
        self.0.config.write_elision = on;
        self
    }

    /// Makes the page cleaner also run a full round every `every` (default `None`: only when
    /// the log passes three quarters of [`Builder::max_log_bytes`], RECOVERY.md R15): the
    /// classical cleaner then writes back every dirty page, the decoupled one replays
    /// everything archived (R20). The cleaner-interval experiments of Lersch 2015 vary it.
    #[must_use]
    pub fn cleaner_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.0.cleaner_every = every;
        self
    }

    /// Record locks (default on): transactions lock the keys they read (shared) and write
    /// (exclusive) until they end, so they are serializable for point operations (LOCKS.md).
    /// Off, transactions see each other's uncommitted writes (for measuring what locking costs,
    /// Graefe et al. Fig. 14).
    #[must_use]
    pub fn locking(mut self, on: bool) -> Self {
        self.0.locking = if on { Locking::On } else { Locking::Off };
        self
    }

    /// How record locks keep transactions out of deadlocks (default
    /// [`DeadlockPolicy::Detect`](crate::lock::DeadlockPolicy::Detect): waits queue, and only
    /// a real deadlock fails a request, LOCKS.md K23); `WaitDie` fails every request that would
    /// wait for an older transaction (K6), for measuring what that costs in retries.
    #[must_use]
    pub fn deadlock_policy(mut self, policy: crate::lock::DeadlockPolicy) -> Self {
        self.0.deadlock_policy = policy;
        self
    }
    /// The pool settings these options and the builder make.
    #[must_use]
    pub fn config(&self) -> &PoolConfig {
        &self.0.config
    }
}

/// What the lab reads of an open database beyond the user's API.
pub trait DatabaseExt {
    /// The buffer pool (its counters, frames, policy and mode).
    fn pool(&self) -> &Arc<BufferPool>;
}

impl DatabaseExt for Database {
    fn pool(&self) -> &Arc<BufferPool> {
        &self.core.pool
    }
}

/// What the lab reads of a tree handle beyond the user's API.
pub trait TreeExt {
    /// The root's page id (stable for the tree's life: the root grows in place).
    fn root_page(&self) -> PageId;
}

impl TreeExt for Tree {
    fn root_page(&self) -> PageId {
        self.inner.root_page()
    }
}

/// The engine's log record format (RECOVERY.md, "Records"): what the lab's and the tests' log
/// readers decode. Not part of the user's API: it changes with the engine.
pub mod record {
    pub use crate::record::*;
}

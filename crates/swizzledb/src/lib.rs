//! SwizzleDB: an embeddable key-value storage engine and a lab for buffer management.
//!
//! A [`Database`] is one file of fixed-size pages, a buffer pool over it, and any number of
//! named [`Tree`]s (Foster B-trees). The pool runs in one of three [`PoolMode`]s that share all
//! other code: `Traditional` (page table on every step), `Swizzling` (child references become
//! frame references, Graefe et al. 2014) and `MainMemory` (everything resident, no page table).
//!
//! ```
//! use swizzledb::{Database, PoolMode};
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("example.swz");
//! let db = Database::builder().mode(PoolMode::Swizzling).pool_bytes(8 << 20).create(&path)?;
//! let accounts = db.create_tree("accounts")?;
//! accounts.insert(b"alice", b"100")?;
//! assert_eq!(accounts.get(b"alice")?.as_deref(), Some(&b"100"[..]));
//! db.close()?;
//!
//! let db = Database::builder().open(&path)?;
//! assert_eq!(db.tree("accounts")?.get(b"alice")?.as_deref(), Some(&b"100"[..]));
//! # Ok::<(), swizzledb::Error>(())
//! ```
//!
//! **Durability:** a database logs every change by default ([`Builder::logging`]): the trees'
//! own `insert`/`upsert`/`delete` each run as a transaction of their own (auto-commit, in the
//! builder's [`CommitMode`]), [`Transaction`]s batch several changes, a commit survives a crash,
//! and every open of a logged file restarts from its log (`RECOVERY.md`). A background page
//! cleaner keeps the log below [`Builder::max_log_bytes`]. `logging(false)` makes a scratch
//! database for measurements: only [`Database::close`] leaves its file consistent, and after a
//! crash `open` refuses it ([`Error::Unclean`]). One `Database` at a time may have a file open
//! ([`Error::AlreadyOpen`]); a closed database's tree handles refuse ([`TreeError::Closed`]).
//!
//! **Threads:** a [`Database`] (and a [`Builder`]), its [`Tree`] handles and their scans
//! ([`RangeIter`], [`RevRangeIter`]) are `Send + Sync`: share the database by reference or in an
//! `Arc` and use any handle from any thread. A [`Transaction`] is `Send` but not `Sync`: one
//! thread at a time uses it (it can move between threads); its range reads ([`TxnRange`],
//! [`TxnRevRange`]) are `Send + Sync`. Compile-time assertions in this crate hold these promises.
//!
//! Besides the log's background work, every database whose pool can evict (and
//! records no trace) runs a background evictor ([`Builder::background_eviction`]) that keeps free frames ready, so that a
//! miss rarely evicts and almost never writes a dirty page. `close` and drop stop and join
//! every background thread.
//!
//! **Features:** `serde` (off by default) makes the statistics types ([`Stats`], [`LogStats`],
//! [`CheckpointStats`], [`CheckpointCounts`], [`CleanerStats`], [`RestartStats`],
//! [`RedoProgress`], [`lock::LockStats`]) implement `serde::Serialize`.

#![forbid(unsafe_code)]

mod cleaner;
mod decoupled;
#[cfg(test)]
mod decoupled_tests;
mod files;
pub mod inspect;
mod instant;
mod isolation;
pub mod lock;
mod logging;
#[cfg(test)]
mod race_tests;
pub mod record;
mod repair;
mod restart;
mod txn;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use swizzledb_btree::{AutoCommit, BTreeOwner};
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogManager};

pub use crate::logging::{CheckpointKind, CheckpointStats};
use crate::logging::{PoolLog, SystemLog, TxnLog, Undo, Wal};
use crate::record::{Record, TxnState};
use swizzledb_buffer::PageFile;

pub use crate::cleaner::{Cleaner, CleanerStats};
pub use crate::instant::{RedoProgress, RestartMode};
pub use crate::logging::CommitMode;
pub use crate::restart::RestartStats;
pub use crate::txn::{Transaction, TxnRange, TxnRevRange};
pub use swizzledb_wal::{Archive, ArchiveEntry, LogError, LogStats, RunSummary};

pub use swizzledb_btree::{
    max_inline_value_len, max_key_len, max_value_len, CompareAndSwapError, KeyValue, RangeIter, RevRangeIter,
    Tree, TreeError, TreeShape, MAX_VALUE_LEN,
};
pub use swizzledb_buffer::{
    BpVariant, BufferError, EventKind, PolicyKind, PolicySpec, PoolConfig, PoolMode, Stats, TraceError,
    TraceEvent, TraceReader, TraceSummary,
};

/// Every error SwizzleDB returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tree of that name exists.
    #[error("no tree named {0:?}; create it with Database::create_tree")]
    TreeNotFound(String),
    /// The tree cannot be dropped now: a transaction kept running (or instant restart is still
    /// rolling back losers) for the two seconds [`Database::drop_tree`] waits.
    #[error(
        "the tree {0:?} cannot be dropped while transactions run; finish them (and any this thread \
         holds) and retry"
    )]
    TreeBusy(String),
    /// A tree of that name exists already.
    #[error("a tree named {0:?} exists already; open it with Database::tree")]
    TreeExists(String),
    /// The tree name is empty, too long or not valid.
    #[error("invalid tree name {name:?}: {reason}")]
    InvalidTreeName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The code running in [`Database::transact`] asked to roll back (it returned
    /// `Err(Error::Aborted(reason))`): the transaction was rolled back and not retried.
    #[error("the transaction rolled back at its own request: {0}")]
    Aborted(String),
    /// A tree operation failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The buffer pool or the file failed.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Writing the buffer reference trace failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The write-ahead log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A record lock could not be granted: abort the transaction and retry it (LOCKS.md).
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    /// A log record restart needs is damaged or missing (RECOVERY.md R10).
    #[error("log corrupted at {lsn}: {reason}; restore the database and its log from a backup")]
    LogCorrupted {
        /// Where.
        lsn: Lsn,
        /// What was found.
        reason: String,
    },
    /// A page's copy in the file is damaged or older than its last write, and single-page
    /// recovery could not rebuild it from the log (RECOVERY.md R18).
    #[error(
        "page {page} is damaged and cannot be rebuilt from the log: {reason}; restore the database \
         from a backup (a log archive, Builder::log_archive, makes every page rebuildable)"
    )]
    PageUnrecoverable {
        /// The page.
        page: PageId,
        /// Why it could not be rebuilt.
        reason: String,
    },
    /// A new database's log directory exists already and holds files: they belong to another
    /// database and would be replayed onto this one.
    #[error("the log directory {0} exists and is not empty; remove it or choose another path")]
    StaleLog(std::path::PathBuf),
    /// [`Builder::open`] found no file at the path.
    #[error("no database at {0}; create it with Builder::create or Builder::open_or_create")]
    NotFound(PathBuf),
    /// The database file is open already, in this or another process (RECOVERY.md R13).
    #[error("{0} is open already (in this or another process); close it there before opening it again")]
    AlreadyOpen(PathBuf),
    /// A logged database's log directory is missing, empty or damaged (R14): without it the
    /// committed changes since the last checkpoint cannot be recovered.
    #[error(
        "{file} is a logged database but its log {dir} cannot be used: {reason}; restore the log \
         directory beside the file (or, if the database was being created when it stopped, remove \
         the file and create it again)"
    )]
    LogMissing {
        /// The database file.
        file: PathBuf,
        /// Its log directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The log directory belongs to another database (R14).
    #[error("the log {dir} belongs to another database than {file}; put the file's own log beside it")]
    ForeignLog {
        /// The database file.
        file: PathBuf,
        /// The log directory found.
        dir: PathBuf,
    },
    /// `logging(true)` was asked of a database created without a log (R13).
    #[error(
        "{0} was created without a write-ahead log: open it without .logging(true), or convert it \
         with Builder::convert_to_logged(true)"
    )]
    NotLogged(PathBuf),
    /// An unlogged database was not closed cleanly (R13): its pages may be half-written and
    /// nothing can repair them.
    #[error(
        "{0} has no write-ahead log and was not closed cleanly, so it may be damaged and cannot be \
         recovered; restore it from a backup, or open it with Builder::discard_unclean(true) to \
         start over with an empty database"
    )]
    Unclean(PathBuf),
}

/// How many checkpoints a database took since it opened ([`Database::checkpoint_counts`]); the
/// fields are named as in [`CheckpointStats`], which has more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct CheckpointCounts {
    /// Every checkpoint that completed: at open, at close, by the background thread, by the page
    /// cleaner, and by [`Database::checkpoint`].
    pub checkpoints: u64,
    /// Those of `checkpoints` the background checkpointer took ([`Builder::checkpoint_interval`]).
    pub background: u64,
    /// Checkpoints that failed (not counted in `checkpoints`).
    pub failed: u64,
}

/// Result alias with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether transactions take record locks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum Locking {
    #[default]
    On,
    Off,
}

/// Settings for opening or creating a database.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    config: PoolConfig,
    /// `None`: not said (create logs; open follows the file).
    logging: Option<bool>,
    locking: Locking,
    commit_mode: CommitMode,
    log_segment_bytes: Option<u64>,
    checkpoint_every: Option<Option<std::time::Duration>>,
    max_log_bytes: Option<u64>,
    cleaner: Cleaner,
    cleaner_every: Option<std::time::Duration>,
    checkpoint_kind: CheckpointKind,
    log_archive: bool,
    archive_every: Option<Option<std::time::Duration>>,
    restart_mode: RestartMode,
    no_background_redo: bool,
    no_background_eviction: bool,
    discard_unclean: bool,
    convert_to_logged: bool,
    /// `page_size` was called: `open` checks the file's against it instead of adopting it.
    page_size_set: bool,
}

/// Default interval of the background archiver ([`Builder::archive_interval`]).
pub const DEFAULT_ARCHIVE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Default bound of the log kept on disk (R15).
pub const DEFAULT_MAX_LOG_BYTES: u64 = 128 << 20;

impl Builder {
    /// Buffer mode (default: swizzling).
    #[must_use]
    pub fn mode(mut self, mode: PoolMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Bytes of frame memory (default 64 MiB); the memory limit in main-memory mode.
    #[must_use]
    pub fn pool_bytes(mut self, bytes: usize) -> Self {
        self.config.pool_bytes = bytes;
        self
    }

    /// Page size for a new file (default 8 KiB; a power of two from 4 KiB to 32 KiB). `open`
    /// uses the file's page size, unless one is set here: then a file with another page size is
    /// an error.
    #[must_use]
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.config.page_size = bytes;
        self.page_size_set = true;
        self
    }

    /// Replacement policy (default GCLOCK with k = 10): a [`PolicyKind`], or a [`PolicySpec`] for
    /// a wrapped one such as `leaf-lru`.
    #[must_use]
    pub fn policy(mut self, policy: impl Into<PolicySpec>) -> Self {
        self.config.policy = policy.into();
        self
    }

    /// Seed for randomized policies.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// Open the file with O_DIRECT (bypassing the OS page cache).
    #[must_use]
    pub fn direct_io(mut self, on: bool) -> Self {
        self.config.direct_io = on;
        self
    }

    /// Time every page fix, by hit or miss and latch mode, into the `*_nanos` and `timed_*`
    /// counters of [`Database::stats`] (buffer README, B12a). Off by default: two clock reads
    /// per fix.
    #[must_use]
    pub fn time_fixes(mut self, on: bool) -> Self {
        self.config.time_fixes = on;
        self
    }

    /// Let tree descents read inner nodes without latching them, validated by version
    /// (optimistic latching; buffer README B24, btree README T20). On by default; it applies
    /// in the swizzling and main-memory modes only, and is off while a trace is recorded or
    /// fixes are timed. Turn it off to measure descents with shared-latch coupling, as the
    /// papers' engines ran them.
    #[must_use]
    pub fn optimistic_reads(mut self, on: bool) -> Self {
        self.config.optimistic_reads = on;
        self
    }

    /// Let point reads (`get`, `get_with` without record locks) read the leaf without latching
    /// it too (buffer README B33, btree README T21): no read-modify-write at all on a hit. Off
    /// by default: on this project's 2-core machine it costs about a sixth more instructions
    /// per in-memory lookup than latching the leaf (`docs/oom.md`); it is meant for many cores
    /// reading the same leaves. It needs [`Builder::optimistic_reads`] and a policy whose hits
    /// need no latch (CLOCK, GCLOCK, SIEVE; replacement README R11), or main-memory mode;
    /// otherwise reads latch the leaf as before.
    #[must_use]
    pub fn optimistic_leaf_reads(mut self, on: bool) -> Self {
        self.config.optimistic_leaf_reads = on;
        self
    }

    /// BP-Wrapper's queue size S and batch threshold T (default 64 and 32; replacement README,
    /// "BP-Wrapper") for a wrapped policy (`bpw-2q`, `bpw-batch-lru`, ...); ignored by others.
    /// `create` and `open` fail with [`BufferError::Config`] unless `1 <= T <= S`.
    #[must_use]
    pub fn bp_queue(mut self, queue_size: usize, batch_threshold: usize) -> Self {
        self.config.bp_queue_size = queue_size;
        self.config.bp_batch_threshold = batch_threshold;
        self
    }

    /// Fault all of the pool's memory in when the database opens (buffer README F1b), so that
    /// a growing database pays no page faults while it runs: the memory is committed at once
    /// and opening takes longer. Off by default. The lab's benchmarks turn it on, so that a
    /// measurement does not include the operating system's (or hypervisor's) first touch of
    /// the pool.
    #[must_use]
    pub fn prefault(mut self, on: bool) -> Self {
        self.config.prefault = on;
        self
    }

    /// The file system the database file lives on (default: the operating system's). Tests
    /// pass a `swizzledb_sync::FaultFs` to crash the database or fail chosen I/O calls.
    #[must_use]
    pub fn vfs(mut self, vfs: Arc<dyn swizzledb_buffer::Vfs>) -> Self {
        self.config.vfs = vfs;
        self
    }

    /// Record a buffer reference trace to `path` (created or truncated): every fix (with hit or
    /// miss, latch mode and parent page), unfix, page read, eviction, allocation and free, with
    /// thread number and timestamp, in the binary format of `docs/trace-format.md` (rule B17 of
    /// the buffer README). Read it with [`TraceReader`] or export it with
    /// `swizzledb trace export`. The trace is complete once [`Database::close`] returns (or the
    /// last handle to the pool is dropped). Off by default; off, it costs one predictable
    /// branch per fix and unfix.
    #[must_use]
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.config.trace = Some(path.into());
        self
    }

    /// Write-ahead logging for a new database (default on): every change is logged before it
    /// reaches the file, commits are durable, and every open restarts from the log
    /// (RECOVERY.md). The log lives in the directory `<path>.wal` beside the database file. The
    /// trees' own `insert`/`upsert`/`delete` run as single-operation transactions
    /// (auto-commit, in the [`CommitMode`]); a [`Transaction`] batches several.
    ///
    /// `false` makes a scratch database without a log, for measuring the buffer alone: its file
    /// is consistent only after [`Database::close`], and `open` refuses it after a crash
    /// ([`Error::Unclean`]).
    ///
    /// On `open`, the file decides (page 0 records whether it is logged): a logged database
    /// always restarts from its log; `logging(true)` on an unlogged one is [`Error::NotLogged`]
    /// unless [`Builder::convert_to_logged`] is set.
    #[must_use]
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = Some(on);
        self
    }

    /// How `open` treats an unlogged database that was not closed cleanly (default `false`:
    /// refuse with [`Error::Unclean`]). `true` discards it: the file is replaced by a new, empty
    /// unlogged database with this builder's settings. No effect on logged databases, which
    /// restart from their log.
    #[must_use]
    pub fn discard_unclean(mut self, on: bool) -> Self {
        self.discard_unclean = on;
        self
    }

    /// With [`Builder::logging`]`(true)`, `open` converts a cleanly closed unlogged database into
    /// a logged one (a new log directory, page 0 marked logged) instead of refusing with
    /// [`Error::NotLogged`] (default `false`).
    #[must_use]
    pub fn convert_to_logged(mut self, on: bool) -> Self {
        self.convert_to_logged = on;
        self
    }

    /// The bound of the log kept on disk, in bytes (default [`DEFAULT_MAX_LOG_BYTES`], at least
    /// four log segments): the page cleaner writes back the pages that hold older log and
    /// checkpoints once the log passes three quarters of it, and transactions that begin while
    /// it is over the bound wait for the cleaner (RECOVERY.md R15). Restart reads at most about this
    /// much log, plus what transactions running at the crash had written.
    #[must_use]
    pub fn max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = Some(bytes);
        self
    }

    /// How often the background archiver archives the durable log (default: every
    /// [`DEFAULT_ARCHIVE_INTERVAL`]; `None`: only checkpoints, the decoupled cleaner and
    /// [`Database::archive_log`] archive). The archive then trails the log by about one
    /// interval, which is what instant restart reads at open instead of the log (R17, R22).
    /// Without [`Builder::log_archive`] it does nothing.
    #[must_use]
    pub fn archive_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.archive_every = Some(every);
        self
    }

    fn archive_every(&self) -> Option<std::time::Duration> {
        self.archive_every.unwrap_or(Some(DEFAULT_ARCHIVE_INTERVAL))
    }

    /// How a logged database restarts after a crash (default: [`RestartMode::Classical`]).
    /// [`RestartMode::Instant`] needs [`Builder::log_archive`]; `open` and `create` refuse it
    /// without, before anything is written (RECOVERY.md R22).
    #[must_use]
    pub fn restart_mode(mut self, mode: RestartMode) -> Self {
        self.restart_mode = mode;
        self
    }

    /// Whether a background thread keeps free frames ready (default: on; buffer README B31).
    /// On, a miss rarely evicts and almost never writes a dirty victim: the evictor thread,
    /// woken when free frames run low, evicts ahead of the misses and writes the dirty victims
    /// in batches. Off, the thread that misses evicts a batch itself when it finds too few
    /// free frames, and writes its dirty victims (B13, B29) — what Gilbert's and Graefe's
    /// pools did, and what their experiments time as the evictioner. Ignored in main-memory
    /// mode, which never evicts, and while a trace is recorded ([`Builder::trace`]), whose
    /// events stay the workload threads' own.
    #[must_use]
    pub fn background_eviction(mut self, on: bool) -> Self {
        self.no_background_eviction = !on;
        self
    }

    /// Whether instant restart's background thread redoes pending pages (default: on). Off,
    /// pages are redone only when a fix loads them, until the first checkpoint, `flush` or
    /// `close` redoes the rest (RECOVERY.md R22) — to measure on-demand redo alone.
    #[must_use]
    pub fn background_redo(mut self, on: bool) -> Self {
        self.no_background_redo = !on;
        self
    }

    /// Keep a log archive (Lersch 2015; RECOVERY.md R17) in `<path>.wal/archive`: every
    /// checkpoint first sorts the page changes of the durable log into a new run, indexed by
    /// page (wal README A1–A8), and the log is never truncated past what is archived. Off by
    /// default; only with logging. With it, single-page recovery (RECOVERY.md R18) can rebuild
    /// any page whose copy in the file is damaged or stale; without it, only pages whose newest
    /// image is still in the log. It is also the input of Lersch's decoupled cleaner
    /// ([`Cleaner::Decoupled`], R20). The archiving is not cheap yet (with checkpoints every 100 ms a TPC-B run
    /// keeps about 0.4 of its throughput; measured in `docs/tpcb.md`).
    #[must_use]
    pub fn log_archive(mut self, on: bool) -> Self {
        self.log_archive = on;
        self
    }

    /// Which checkpoints the database takes (default [`CheckpointKind::Classical`], fuzzy
    /// checkpoints from the pool and the transaction table, RECOVERY.md R7);
    /// [`CheckpointKind::Decoupled`] computes them from the log instead (R19). Checkpoints at
    /// open, at the end of restart and at close are classical either way: the pool is exact
    /// then. Only with logging.
    #[must_use]
    pub fn checkpoint_kind(mut self, kind: CheckpointKind) -> Self {
        self.checkpoint_kind = kind;
        self
    }

    /// Which page cleaner runs (default [`Cleaner::Classical`]); only with logging.
    /// [`Cleaner::Decoupled`] needs the log archive ([`Builder::log_archive`]; `create` and
    /// `open` refuse it without), and makes the checkpoints decoupled whatever
    /// [`Builder::checkpoint_kind`] says (RECOVERY.md R20).
    #[must_use]
    pub fn cleaner(mut self, cleaner: Cleaner) -> Self {
        self.cleaner = cleaner;
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
        self.config.write_elision = on;
        self
    }

    /// Makes the page cleaner also run a full round every `every` (default `None`: only when
    /// the log passes three quarters of [`Builder::max_log_bytes`], RECOVERY.md R15): the
    /// classical cleaner then writes back every dirty page, the decoupled one replays
    /// everything archived (R20). The cleaner-interval experiments of Lersch 2015 vary it.
    #[must_use]
    pub fn cleaner_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.cleaner_every = every;
        self
    }

    /// Record locks (default on): transactions lock the keys they read (shared) and write
    /// (exclusive) until they end, so they are serializable for point operations (LOCKS.md).
    /// Off, transactions see each other's uncommitted writes (for measuring what locking costs,
    /// Graefe et al. Fig. 14).
    #[must_use]
    pub fn locking(mut self, on: bool) -> Self {
        self.locking = if on { Locking::On } else { Locking::Off };
        self
    }

    /// When commits return (default [`CommitMode::Sync`]); only with logging on.
    #[must_use]
    pub fn commit_mode(mut self, mode: CommitMode) -> Self {
        self.commit_mode = mode;
        self
    }

    /// How often a background thread takes a fuzzy checkpoint (default every 30 s; `None`: only
    /// at open, close, [`Database::checkpoint`] and the page cleaner's rounds). Restart reads
    /// the log back to the last checkpoint, and from the oldest change not yet written back:
    /// the page cleaner bounds that by [`Builder::max_log_bytes`].
    #[must_use]
    pub fn checkpoint_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.checkpoint_every = Some(every);
        self
    }

    fn checkpoint_every(&self) -> Option<std::time::Duration> {
        self.checkpoint_every.unwrap_or(Some(std::time::Duration::from_secs(30)))
    }

    /// Bytes per log segment file of a new database (default 16 MiB; a multiple of 8 from 4 KiB
    /// to 1 GiB). An existing database keeps the size it was created with.
    #[must_use]
    pub fn log_segment_bytes(mut self, bytes: u64) -> Self {
        self.log_segment_bytes = Some(bytes);
        self
    }

    /// The pool settings.
    #[must_use]
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Creates a new database file (fails if it exists), logged unless
    /// [`Builder::logging`]`(false)`.
    ///
    /// # Errors
    /// Invalid settings, a non-empty `<path>.wal` ([`Error::StaleLog`]), or I/O errors.
    pub fn create(self, path: impl AsRef<Path>) -> Result<Database> {
        self.create_at(path.as_ref())
    }

    fn create_at(self, path: &Path) -> Result<Database> {
        self.check_log_settings()?;
        if self.config.vfs.exists(path) {
            let source = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the database file exists");
            return Err(BufferError::Io { file: path.to_path_buf(), source }.into());
        }
        if self.logging == Some(false) {
            let pool = swizzledb_buffer::BufferPool::create(path, &self.config, Arc::new(BTreeOwner))?;
            let lock = files::FileLock::acquire(&*self.config.vfs, path, path)?;
            return Ok(self.database(pool, None, vec![lock]));
        }
        let dir = wal_dir(path);
        if self.config.vfs.list(&dir).is_ok_and(|files| !files.is_empty()) {
            return Err(Error::StaleLog(dir));
        }
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let archive = self.archive(path, &log)?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog::new(Arc::clone(&log), archive.clone())));
        let pool = swizzledb_buffer::BufferPool::create(path, &config, Arc::new(BTreeOwner))?;
        let mut locks = vec![files::FileLock::acquire(&*self.config.vfs, path, path)?];
        let segment_bytes = self.log_config(path).segment_bytes;
        locks.push(files::create_identity(
            &*self.config.vfs,
            &dir,
            pool.file_state().id,
            segment_bytes,
            path,
        )?);
        let wal = self.wal(log, archive);
        seed_new(&wal, &pool);
        let db = self.database(pool, Some(Arc::new(wal)), locks);
        db.checkpoint()?;
        self.start_background(&db);
        Ok(db)
    }

    /// The log archive of the database at `path`, if asked for, checked to continue `log`
    /// (R17).
    fn archive(&self, path: &Path, log: &LogManager) -> Result<Option<Arc<swizzledb_wal::Archive>>> {
        if !self.log_archive {
            return Ok(None);
        }
        let archive = swizzledb_wal::Archive::open(Arc::clone(&self.config.vfs), archive_dir(path))?;
        logging::check_archive(log, &archive)?;
        Ok(Some(Arc::new(archive)))
    }

    /// R20, R21: the decoupled cleaner replays the log archive, and write elision leaves pages
    /// to the decoupled cleaner and its checkpoints.
    fn check_propagation(&self) -> Result<()> {
        let refuse = |reason: &str| Err(Error::Log(LogError::BadConfig { reason: reason.into() }));
        if self.config.write_elision && self.cleaner != Cleaner::Decoupled {
            return refuse(
                "write elision needs the decoupled cleaner: add Builder::cleaner(Cleaner::Decoupled)",
            );
        }
        if self.cleaner == Cleaner::Decoupled && !self.log_archive {
            return refuse("Cleaner::Decoupled replays the log archive: add Builder::log_archive(true)");
        }
        if self.restart_mode == RestartMode::Instant && !self.log_archive {
            return refuse(
                "RestartMode::Instant reads the log archive instead of the log: add Builder::log_archive(true)",
            );
        }
        Ok(())
    }

    /// The engine's log over `log`, with the log archive if the database keeps one (R17).
    fn wal(&self, log: Arc<LogManager>, archive: Option<Arc<swizzledb_wal::Archive>>) -> Wal {
        // R20: with the decoupled cleaner the pool's recovery LSNs lag behind the file (it
        // writes pages without their frames), so a classical checkpoint could name log the
        // decoupled ones already truncated: every checkpoint but the exact ones at open,
        // restart and close is decoupled then.
        let kind = match self.cleaner {
            Cleaner::Decoupled => CheckpointKind::Decoupled,
            _ => self.checkpoint_kind,
        };
        Wal::new(log, self.commit_mode).with_archive(archive).with_checkpoint_kind(kind)
    }

    fn check_log_settings(&self) -> Result<()> {
        // Before anything is written; an unlogged database has no cleaner to check.
        if self.logging != Some(false) {
            self.check_propagation()?;
        }
        let segment = self.log_segment_bytes.unwrap_or(LogConfig::new("").segment_bytes);
        let bound = self.log_bound();
        if bound < 4 * segment {
            return Err(Error::Log(LogError::BadConfig {
                reason: format!(
                    "max_log_bytes = {bound} must be at least four log segments ({}): raise it or \
                     lower log_segment_bytes",
                    4 * segment
                ),
            }));
        }
        Ok(())
    }

    fn log_bound(&self) -> u64 {
        self.max_log_bytes.unwrap_or(DEFAULT_MAX_LOG_BYTES)
    }

    fn log_config(&self, path: &Path) -> LogConfig {
        let mut config = LogConfig::new(wal_dir(path));
        config.vfs = Arc::clone(&self.config.vfs);
        config.buffer_bytes = LOG_BUFFER_BYTES;
        if let Some(bytes) = self.log_segment_bytes {
            config.segment_bytes = bytes;
        }
        config
    }

    /// Opens an existing database file. A logged database restarts from its log (whatever
    /// [`Builder::logging`] says); an unlogged one must have been closed cleanly. In
    /// main-memory mode every tree is loaded here.
    ///
    /// # Errors
    /// [`Error::NotFound`] if there is no file; not a SwizzleDB file, another format version or
    /// page size, corruption, or I/O errors; [`Error::AlreadyOpen`]; for a logged database
    /// [`Error::LogMissing`], [`Error::ForeignLog`] or a restart error; for an unlogged one
    /// [`Error::Unclean`] and [`Error::NotLogged`].
    pub fn open(self, path: impl AsRef<Path>) -> Result<Database> {
        self.open_at(path.as_ref())
    }

    /// Opens the database at `path` if the file exists, creates it otherwise (as
    /// [`Builder::open`] and [`Builder::create`] do).
    ///
    /// A file that exists counts as a database, whatever its length: an empty or truncated
    /// file (a create that stopped before its first page reached the disk, or a file that is
    /// not a database) is refused by `open` with the page file's error, never overwritten —
    /// remove it to start over. The check and the create are not one atomic step against
    /// another process creating the same file; the file lock ([`Error::AlreadyOpen`]) still
    /// keeps the two from both opening it.
    ///
    /// # Errors
    /// As [`Builder::open`] for an existing file, as [`Builder::create`] otherwise.
    pub fn open_or_create(self, path: impl AsRef<Path>) -> Result<Database> {
        let path = path.as_ref();
        if self.config.vfs.exists(path) {
            self.open_at(path)
        } else {
            self.create_at(path)
        }
    }

    fn open_at(self, path: &Path) -> Result<Database> {
        let vfs = Arc::clone(&self.config.vfs);
        // The lock first, so that nothing below reads a file another opener is writing.
        let lock = match files::FileLock::open_database(&*vfs, path) {
            Ok(lock) => lock,
            Err(e @ (Error::AlreadyOpen(_) | Error::NotFound(_))) => return Err(e),
            // Let the page file name what is wrong with the path (missing, not a database...).
            Err(e) => {
                PageFile::open_logged(&*vfs, path, self.config.direct_io)?;
                return Err(e);
            }
        };
        let (_, meta) = PageFile::open_logged(&*vfs, path, self.config.direct_io)?;
        let mut this = self;
        if !this.page_size_set {
            this.config.page_size = meta.page_size;
        }
        let db = this.open_as(path, &meta, lock)?;
        if db.core.pool.mode() == PoolMode::MainMemory {
            for name in db.core.pool.catalog_names() {
                db.tree(&name)?;
            }
        }
        Ok(db)
    }

    /// `open` once the file is locked and its page 0 read.
    fn open_as(self, path: &Path, meta: &swizzledb_buffer::Meta, lock: files::FileLock) -> Result<Database> {
        let vfs = Arc::clone(&self.config.vfs);
        Ok(if meta.logged {
            let (log_lock, segment_bytes) = files::check_identity(&*vfs, &wal_dir(path), meta.id, path)?;
            // The log's segment size is the log's, whatever the builder says (R14).
            let mut this = self;
            this.log_segment_bytes = Some(segment_bytes);
            this.check_log_settings()?;
            this.restart(path, vec![lock, log_lock])?
        } else if self.logging == Some(true) && !self.convert_to_logged {
            return Err(Error::NotLogged(path.to_path_buf()));
        } else {
            if !meta.clean {
                if !self.discard_unclean {
                    return Err(Error::Unclean(path.to_path_buf()));
                }
                drop(lock);
                vfs.remove(path).map_err(|e| BufferError::Io { file: path.to_path_buf(), source: e })?;
                return self.logging(false).create_at(path);
            }
            if self.logging == Some(true) {
                return self.convert(path, lock);
            }
            let pool = swizzledb_buffer::BufferPool::open(path, &self.config, Arc::new(BTreeOwner))?;
            self.database(pool, None, vec![lock])
        })
    }

    /// Converts the cleanly closed unlogged database at `path` into a logged one: a new log
    /// with a first checkpoint of the file's state, then page 0 marked logged (R13). A crash
    /// before page 0 is written leaves the unlogged database, still clean, and a log directory
    /// that the next conversion refuses as stale ([`Error::StaleLog`]).
    fn convert(self, path: &Path, lock: files::FileLock) -> Result<Database> {
        self.check_log_settings()?;
        let dir = wal_dir(path);
        if self.config.vfs.list(&dir).is_ok_and(|files| !files.is_empty()) {
            return Err(Error::StaleLog(dir));
        }
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let archive = self.archive(path, &log)?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog::new(Arc::clone(&log), archive.clone())));
        let pool = swizzledb_buffer::BufferPool::open(path, &config, Arc::new(BTreeOwner))?;
        let segment_bytes = self.log_config(path).segment_bytes;
        let log_lock =
            files::create_identity(&*self.config.vfs, &dir, pool.file_state().id, segment_bytes, path)?;
        let wal = Arc::new(self.wal(log, archive));
        seed_new(&wal, &pool);
        wal.checkpoint_classical(&pool)?;
        pool.mark_logged()?;
        let db = self.database(pool, Some(wal), vec![lock, log_lock]);
        self.start_background(&db);
        Ok(db)
    }

    fn database(
        &self,
        pool: swizzledb_buffer::BufferPool,
        wal: Option<Arc<Wal>>,
        locks: Vec<files::FileLock>,
    ) -> Database {
        let cleaner = (wal.is_some() && self.cleaner != Cleaner::None)
            .then(|| Arc::new(cleaner::Shared::new(self.cleaner, self.cleaner_every, self.log_bound())));
        let core = Arc::new_cyclic(|me| Core {
            me: Mutex::new(me.clone()),
            pool: Arc::new(pool),
            trees: Mutex::new(HashMap::new()),
            wal,
            locks: (self.locking == Locking::On).then(|| Arc::new(lock::LockManager::new(64))),
            cleaner,
            next_txn: AtomicU64::new(1),
            restart_stats: Mutex::new(RestartStats::default()),
            running: std::sync::atomic::AtomicUsize::new(0),
            quiesce: std::sync::atomic::AtomicBool::new(false),
            dropping: Mutex::new(()),
        });
        let mut background = Background::default();
        if !self.no_background_eviction {
            // B31. Without it the misses evict for themselves: slower, not wrong.
            background.evictor = core.pool.start_evictor().unwrap_or_else(|e| {
                log::warn!("swizzledb: the background evictor could not start ({e}); misses evict");
                None
            });
        }
        Database {
            core,
            background: Box::new(Mutex::new(background)),
            files: Mutex::new(locks),
            closed: false,
        }
    }

    fn start_background(&self, db: &Database) {
        let Some(wal) = &db.core.wal else { return };
        let mut threads = db.background.lock();
        if !self.no_background_redo && wal.pending.as_ref().is_some_and(|p| !p.is_finished()) {
            threads.redo = Some(instant::RedoThread::start(Arc::clone(wal), Arc::clone(&db.core.pool)));
        }
        if let Some(every) = self.checkpoint_every() {
            threads.checkpointer =
                Some(logging::start_checkpointer(Arc::clone(wal), Arc::clone(&db.core.pool), every));
        }
        if let (Some(_), Some(every)) = (&wal.archive, self.archive_every()) {
            threads.archiver = Some(logging::start_archiver(Arc::clone(wal), every));
            threads.merger = Some(logging::start_merger(Arc::clone(wal), every));
        }
        if let Some(shared) = &db.core.cleaner {
            threads.cleaner =
                Some(cleaner::Thread::start(Arc::clone(shared), Arc::clone(wal), Arc::clone(&db.core.pool)));
        }
    }
}

impl Builder {
    /// Restart (RECOVERY.md R8–R11): analysis and redo on the file, then the pool opens with
    /// the recovered allocation, the losers are rolled back with compensation records, and a
    /// checkpoint ends it. Crashing anywhere in here and restarting again is safe (R11).
    fn restart(&self, path: &Path, locks: Vec<files::FileLock>) -> Result<Database> {
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let archive = self.archive(path, &log)?;
        if log.read_master()?.is_none() {
            return Err(Error::LogMissing {
                file: path.to_path_buf(),
                dir: wal_dir(path),
                reason: "it holds no checkpoint".into(),
            });
        }
        if self.restart_mode == RestartMode::Instant {
            if let Some(plan) = instant::plan(&log, archive.as_deref())? {
                return self.restart_instant(path, locks, log, archive, plan);
            }
        }
        let recovered = restart::analyze_and_redo(
            &*self.config.vfs,
            path,
            self.config.direct_io,
            &log,
            archive.as_deref(),
        )?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog::new(Arc::clone(&log), archive.clone())));
        let pool = swizzledb_buffer::BufferPool::open_recovered(
            path,
            &config,
            Arc::new(BTreeOwner),
            recovered.allocation,
        )?;
        let wal = self.wal(log, archive);
        // R22: the archive catches up with the log, storing restart's analysis state, so that
        // the archiver carries it forward from here. Not fatal: without it the runs carry no
        // state until the next restart, and instant restart falls back to classical.
        if let Err(e) = wal.archive_restart_end(&recovered.state) {
            log::warn!("restart could not archive the log's tail ({e}); the next checkpoint tries again");
        }
        let mut db = self.database(pool, Some(Arc::new(wal)), locks);
        db.core.next_txn.store(recovered.next_txn, Ordering::Relaxed);
        let mut stats = recovered.stats;
        finish_losers(&mut db, &recovered.unfinished, &mut stats)?;
        *db.core.restart_stats.lock() = stats;
        // Classical whatever the configured kind: redo wrote pages without page-write records,
        // and the pool knows exactly which pages are dirty now.
        if let Some(wal) = &db.core.wal {
            wal.checkpoint_classical(&db.core.pool)?;
        }
        self.start_background(&db);
        Ok(db)
    }

    /// Instant restart (RECOVERY.md R22): the archive catches up with the log's tail, carrying
    /// its analysis state forward over it; the pages changed since the checkpoint's redo LSN
    /// become pending (stale below their newest change, B25); the pool opens with the
    /// allocation of the state, and the losers are rolled back through the trees. Redo of the
    /// other pending pages is left to their first fetch and the background redo thread.
    fn restart_instant(
        &self,
        path: &Path,
        locks: Vec<files::FileLock>,
        log: Arc<LogManager>,
        archive: Option<Arc<swizzledb_wal::Archive>>,
        plan: instant::Plan,
    ) -> Result<Database> {
        let wal = self.wal(Arc::clone(&log), archive.clone());
        wal.seed_archiver(&plan.state);
        let analyzed_before = wal.stats.archived_records.load(Ordering::Relaxed);
        wal.archive_durable_unmerged()?;
        let analyzed = wal.stats.archived_records.load(Ordering::Relaxed) - analyzed_before;
        let state = wal.archiver_state().ok_or_else(|| {
            Error::Log(LogError::BadConfig { reason: "the archiver lost its analysis state".into() })
        })?;
        let archive_ref = archive.as_deref().expect("instant::plan needs the archive");
        let pages: Vec<(PageId, Lsn)> = archive_ref
            .last_lsns_since(plan.redo_from)
            .into_iter()
            .filter(|&(_, last)| last >= plan.redo_from)
            .filter_map(|(p, last)| PageId::new(p).map(|p| (p, last)))
            .collect();
        let page_count = state.tables.page_count;
        {
            // What the file holds now is what the pending pages' redo starts from: make it
            // durable (writes of the crashed process may be in the OS's cache only).
            let (file, _) = PageFile::open_logged(&*self.config.vfs, path, self.config.direct_io)?;
            if file.len_pages()? < page_count {
                file.set_len_pages(page_count)?;
            }
            file.sync()?;
        }
        let pending = Arc::new(instant::PendingRedo::new(&pages));
        let mut config = self.config.clone();
        let pool_log =
            PoolLog::new(Arc::clone(&log), archive.clone()).with_pending(Arc::clone(&pending), &pages);
        config.log = Some(Arc::new(pool_log));
        let allocation = swizzledb_buffer::Allocation {
            page_count,
            free_pages: state.tables.free.clone(),
            trees: state.tables.catalog.iter().cloned().collect(),
        };
        let pool =
            swizzledb_buffer::BufferPool::open_recovered(path, &config, Arc::new(BTreeOwner), allocation)?;
        let wal = wal.with_pending(pending);
        let mut db = self.database(pool, Some(Arc::new(wal)), locks);
        db.core.next_txn.store(state.max_txn + 1, Ordering::Relaxed);
        let mut stats = RestartStats {
            instant: true,
            analyzed,
            pages_deferred: pages.len() as u64,
            ..RestartStats::default()
        };
        // With record locks, losers are rolled back in the background, their keys locked until
        // then; without, here (R22).
        let mut background_undo = Vec::new();
        for entry in &state.tables.txns {
            if db.core.locks.is_none() || entry.state == TxnState::Committed {
                finish_losers(&mut db, std::slice::from_ref(entry), &mut stats)?;
                continue;
            }
            if let Err(e) = db.core.hold_loser(entry) {
                db.closed = true;
                db.core.pool.mark_closed();
                return Err(e);
            }
            stats.losers += 1;
            background_undo.push(entry.clone());
        }
        *db.core.restart_stats.lock() = stats;
        self.start_background(&db);
        if !background_undo.is_empty() {
            let pending = db.core.wal.as_ref().and_then(|w| w.pending.clone()).expect("instant restart");
            db.background.lock().undo =
                Some(instant::UndoThread::start(Arc::clone(&db.core), background_undo, pending));
        }
        Ok(db)
    }
}

/// R22: the archiver of a new log begins with the pool's (empty) tables.
fn seed_new(wal: &Wal, pool: &swizzledb_buffer::BufferPool) {
    let allocation = pool.allocation();
    let at = wal.log.end();
    wal.seed_archiver(&restart::ArchivedState {
        max_txn: 0,
        tables: record::Checkpoint {
            begin: at,
            page_count: allocation.page_count,
            free: allocation.free_pages,
            catalog: allocation.trees.into_iter().collect(),
            ..record::Checkpoint::default()
        },
    });
}

/// Restart's undo (R10): every transaction restart found unfinished is rolled back (or, if
/// committed, ended).
fn finish_losers(db: &mut Database, unfinished: &[record::TxnEntry], stats: &mut RestartStats) -> Result<()> {
    for entry in unfinished {
        match db.core.finish_loser(entry) {
            Ok(compensations) => stats.compensations += compensations,
            Err(e) => {
                // No checkpoint on the way out (Drop): it would list the unfinished losers
                // without their first records and truncate the log they still need.
                db.closed = true;
                db.core.pool.mark_closed();
                return Err(e);
            }
        }
        stats.losers += u64::from(entry.state != TxnState::Committed);
    }
    Ok(())
}

/// The log archive's directory of the database file at `path`: `<path>.wal/archive` (R17).
#[must_use]
pub fn archive_dir(path: &Path) -> std::path::PathBuf {
    wal_dir(path).join("archive")
}

/// The log directory of the database file at `path`: `<path>.wal`.
#[must_use]
pub fn wal_dir(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".wal");
    name.into()
}

/// An open database: a file, its buffer pool, and its named trees.
pub struct Database {
    core: Arc<Core>,
    background: Box<Mutex<Background>>,
    /// The advisory locks on the file and the log directory (R13), released at close.
    files: Mutex<Vec<files::FileLock>>,
    closed: bool,
}

/// The background threads of a database (all but the evictor only with a log).
#[derive(Default)]
struct Background {
    /// Keeps free frames ready (buffer README B31).
    evictor: Option<swizzledb_buffer::EvictorHandle>,
    undo: Option<instant::UndoThread>,
    redo: Option<instant::RedoThread>,
    checkpointer: Option<logging::Periodic>,
    archiver: Option<logging::Periodic>,
    merger: Option<logging::Periodic>,
    cleaner: Option<cleaner::Thread>,
}

/// What a database's transactions and tree handles share; tree handles reach it through a weak
/// reference (their auto-commit), so a dropped `Database` leaves them nothing to write to.
pub(crate) struct Core {
    /// This core, for the auto-commit of its tree handles; emptied at close, so that the pool
    /// can be had exclusively when no handle outlives the database.
    me: Mutex<Weak<Core>>,
    pool: Arc<swizzledb_buffer::BufferPool>,
    trees: Mutex<HashMap<String, Tree>>,
    wal: Option<Arc<Wal>>,
    pub(crate) locks: Option<Arc<lock::LockManager>>,
    cleaner: Option<Arc<cleaner::Shared>>,
    next_txn: AtomicU64,
    restart_stats: Mutex<RestartStats>,
    /// Transactions begun and not yet dropped (R23: a tree is dropped only when none runs).
    pub(crate) running: std::sync::atomic::AtomicUsize,
    /// Set while `drop_tree` waits for the running transactions to end or drops a tree: new
    /// transactions wait at `begin` meanwhile (R23).
    quiesce: std::sync::atomic::AtomicBool,
    /// Serializes `drop_tree` calls.
    dropping: Mutex<()>,
}

/// The longest value whose leaf change fits one log record of at most `max_body` bytes
/// (btree README T22): besides the value, a record holds the key, the leaf's base image, the
/// chain's page ids (at most 10 bytes per page of at least 4 KiB) and a few varints.
fn loggable_value_len(max_body: usize, page_size: usize) -> usize {
    let room = max_body.saturating_sub(swizzledb_btree::max_key_len(page_size) + page_size + 256);
    room - room / 256
}

/// The log buffer of every database: large enough that a record holding a value of
/// [`swizzledb_btree::MAX_VALUE_LEN`] bytes fits (a log record is at most a quarter of the
/// buffer, wal README W2).
const LOG_BUFFER_BYTES: usize = 17 << 20;

/// How long an auto-commit write retries a refused record lock before it gives up (T14).
const AUTO_COMMIT_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The auto-commit of a logged database's tree handles (btree T14, R12).
struct AutoCommitter(Weak<Core>);

impl AutoCommit for AutoCommitter {
    fn put(&self, tree: &Tree, key: &[u8], value: &[u8], replace: bool) -> Result<bool, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| {
            if replace {
                tx.put(tree, key, value)
            } else {
                tx.insert(tree, key, value).map(|()| false)
            }
        })
    }

    fn delete(&self, tree: &Tree, key: &[u8]) -> Result<bool, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| tx.delete(tree, key))
    }

    fn compare_and_swap(
        &self,
        tree: &Tree,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Result<(), CompareAndSwapError>, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| tx.compare_and_swap(tree, key, expected, new))
    }
}

/// An engine error as the tree's error type, for the tree's own writes (T14).
fn into_tree_error(e: Error) -> TreeError {
    match e {
        Error::Tree(t) => t,
        Error::Buffer(b) => TreeError::Buffer(b),
        Error::Log(l) => TreeError::Log(Box::new(l)),
        other => TreeError::Transaction(Box::new(other)),
    }
}

impl Core {
    /// Begins a transaction; first waits while the log is over its bound (R15).
    fn begin(&self) -> Transaction<'_> {
        self.begin_as(TxnId(self.next_txn.fetch_add(1, Ordering::Relaxed)))
    }

    /// Begins a transaction under a given number: a retry keeps its first attempt's, and with
    /// it its age under wait-die (K6), so it cannot starve.
    fn begin_as(&self, id: TxnId) -> Transaction<'_> {
        if let (Some(wal), Some(cleaner)) = (&self.wal, &self.cleaner) {
            cleaner.throttle(wal);
        }
        self.enter_txn();
        let shared = match &self.wal {
            Some(wal) => wal.register(id),
            None => Arc::new(logging::TxnShared::new(id)),
        };
        Transaction::new(self, self.wal.as_deref(), shared)
    }

    /// Runs `op` in a transaction and commits it. A refused record lock ([`Error::Lock`]) rolls
    /// the attempt back and runs `op` again under the same transaction number (so the retry
    /// only gets older, K6), backing off, until `give_up` says so for the time spent.
    fn run_retrying<R>(
        &self,
        mut op: impl FnMut(&mut Transaction<'_>) -> Result<R>,
        give_up: impl Fn(std::time::Duration) -> bool,
    ) -> Result<R> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(20);
        let id = TxnId(self.next_txn.fetch_add(1, Ordering::Relaxed));
        loop {
            let mut tx = self.begin_as(id);
            match op(&mut tx) {
                Ok(r) => return tx.commit().map(|()| r),
                Err(Error::Lock(lock::LockError::Conflict { .. })) if !give_up(started.elapsed()) => {
                    // A rollback that failed keeps the attempt's locks and its entry in the
                    // transaction table: no retry under its number then.
                    tx.abort()?;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    drop(tx);
                    return Err(e);
                }
            }
        }
    }

    /// Runs `op` as a transaction of its own and commits it (R12), retrying a refused record
    /// lock for up to `AUTO_COMMIT_RETRY`.
    fn auto_commit<R>(&self, op: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R, TreeError> {
        self.run_retrying(op, |spent| spent >= AUTO_COMMIT_RETRY).map_err(into_tree_error)
    }

    /// A tree handle for this database: on a logged one, its own writes auto-commit (T14) and
    /// its reads return only committed records (K14).
    fn handle(&self, tree: Tree) -> Tree {
        let Some(wal) = &self.wal else { return tree };
        let tree = tree
            .with_auto_commit(Arc::new(AutoCommitter(self.me.lock().clone())))
            .with_value_limit(loggable_value_len(wal.log.max_body(), self.pool.page_size()));
        match &self.locks {
            Some(locks) => tree.with_read_gate(Arc::new(isolation::CommittedReads {
                locks: Arc::clone(locks),
                wal: Arc::clone(wal),
            })),
            None => tree,
        }
    }

    /// Counts a transaction as running; waits first while a tree is being dropped (R23). The
    /// count and the flag are both sequentially consistent: either `drop_tree` sees this
    /// transaction running, or this transaction sees the drop and waits for it.
    fn enter_txn(&self) {
        loop {
            self.running.fetch_add(1, Ordering::SeqCst);
            if !self.quiesce.load(Ordering::SeqCst) {
                return;
            }
            self.running.fetch_sub(1, Ordering::SeqCst);
            while self.quiesce.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }

    /// Drops the tree `name` (R23); `Ok(false)` if there is none.
    fn drop_tree(&self, name: &str) -> Result<bool> {
        // One drop at a time: each owns the quiesce flag while it runs.
        let _one = self.dropping.lock();
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        if self.pool.catalog_get(name).is_none() {
            return Ok(false);
        }
        // R22: losers instant restart rolls back in the background may have changes in it.
        if let Some(p) = self.wal.as_ref().and_then(|w| w.pending.as_ref()).map(|p| p.progress()) {
            if p.losers > 0 {
                return Err(Error::TreeBusy(name.to_owned()));
            }
        }
        // No transaction may hold uncommitted changes of the tree: wait until none runs, new
        // ones waiting at `begin` meanwhile. No other lock is held while waiting (a rollback
        // running now may need the tree cache).
        self.quiesce.store(true, Ordering::SeqCst);
        let started = std::time::Instant::now();
        while self.running.load(Ordering::SeqCst) > 0 {
            if started.elapsed() >= AUTO_COMMIT_RETRY {
                self.quiesce.store(false, Ordering::SeqCst);
                return Err(Error::TreeBusy(name.to_owned()));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let result = self.drop_quiesced(name);
        self.quiesce.store(false, Ordering::SeqCst);
        result
    }

    /// `drop_tree` once no transaction runs: the catalog entry goes first, logged, so that a
    /// crash from here on finds the tree gone (R23); then the pages are freed, each group
    /// logged before it is freed. A failure after the first record leaves the pages not yet
    /// freed allocated and unreachable, never a catalog entry naming freed pages.
    fn drop_quiesced(&self, name: &str) -> Result<bool> {
        let mut trees = self.trees.lock();
        let Some(root) = self.pool.catalog_get(name) else { return Ok(false) };
        let tree = match trees.get(name) {
            Some(t) => t.clone(),
            None => Tree::open(&self.pool, root)?,
        };
        let log = self.wal.as_deref().map(SystemLog);
        if let Some(wal) = &self.wal {
            wal.append(&Record::DropTree { name: name.to_owned(), root })?;
        }
        // From here on the tree is gone, whatever fails below.
        self.pool.catalog_remove(name);
        trees.remove(name);
        drop(trees);
        tree.destroy(log.as_ref().map(|l| l as &dyn swizzledb_btree::ChangeLog))?;
        // Durable when it returns, like a commit in either commit mode.
        if let Some(wal) = &self.wal {
            wal.log.flush_all()?;
        }
        Ok(true)
    }

    /// Locks `key` of `tree` for `txn` (no-op with locking off).
    pub(crate) fn lock(&self, txn: TxnId, tree: &Tree, key: &[u8], mode: lock::LockMode) -> Result<()> {
        if let Some(locks) = &self.locks {
            let (t, k) = isolation::lock_name(tree, Some(key));
            locks.lock(txn, t, k, mode)?;
        }
        Ok(())
    }

    /// A transaction ended: it releases its locks and leaves the transaction table.
    pub(crate) fn finish_txn(&self, txn: TxnId) {
        if let Some(locks) = &self.locks {
            locks.release_all(txn);
        }
        if let Some(wal) = &self.wal {
            wal.forget(txn);
        }
    }

    /// The tree whose root is `root` (undo names trees by root page).
    pub(crate) fn tree_by_root(&self, root: PageId) -> Result<Tree> {
        let name = self
            .pool
            .allocation()
            .trees
            .into_iter()
            .find(|(_, r)| *r == root)
            .map(|(name, _)| name)
            .ok_or_else(|| Error::TreeNotFound(format!("<root page {root}>")))?;
        self.tree(&name)
    }

    /// Finishes a transaction restart found unfinished (R10): a committed one gets its end
    /// record; any other is rolled back along its undo chain from `undo_next`, with a
    /// compensation record per undone change. Returns the number of compensations.
    fn finish_loser(&self, entry: &record::TxnEntry) -> Result<u64> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let shared = wal.register(entry.txn);
        shared.last_lsn.store(entry.last_lsn.0, Ordering::Release);
        // The rest of its undo chain must stay in the log while it is rolled back, also when
        // checkpoints run meanwhile (R22's background undo).
        shared.first_lsn.store(wal.log.oldest().0, Ordering::Release);
        let log = TxnLog::new(Some(wal), shared);
        let txn = entry.txn;
        let mut compensations = 0;
        if entry.state != TxnState::Committed {
            if entry.state == TxnState::Active {
                log.append(|prev| Record::Abort { txn, prev })?;
            }
            self.walk_undo_chain(entry, |tree, change, prev| {
                let t = self.tree_by_root(tree)?;
                txn::compensate(&t, &log, &Undo::of(tree, change, prev))?;
                compensations += 1;
                Ok(())
            })?;
        }
        log.append(|prev| Record::End { txn, prev })?;
        wal.forget(txn);
        Ok(compensations)
    }

    /// Visits the changes a loser's rollback has left to undo, newest first (R6, R10): its undo
    /// chain from `undo_next`, compensation records skipped by their undo-next links.
    fn walk_undo_chain(
        &self,
        entry: &record::TxnEntry,
        mut each: impl FnMut(PageId, &record::Change, Lsn) -> Result<()>,
    ) -> Result<()> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let txn = entry.txn;
        let mut cursor = entry.undo_next;
        while cursor != Lsn(0) {
            let body = wal
                .log
                .read(cursor)
                .map_err(|e| Error::LogCorrupted { lsn: cursor, reason: e.to_string() })?;
            let rec = Record::decode(&body)
                .map_err(|e| Error::LogCorrupted { lsn: cursor, reason: e.to_string() })?;
            cursor = match rec {
                Record::Leaf { undo_next: Some(next), .. } => next,
                Record::Leaf { undo_next: None, tree, change, prev, .. } => {
                    each(tree, &change, prev)?;
                    prev
                }
                Record::Begin { .. } => Lsn(0),
                Record::Abort { prev, .. } | Record::Commit { prev, .. } => prev,
                // An unfinished transaction's undo chain reaches none of these (R6): the log
                // is damaged.
                other @ (Record::End { .. }
                | Record::Structure { .. }
                | Record::CreateTree { .. }
                | Record::DropTree { .. }
                | Record::CheckpointBegin
                | Record::CheckpointEnd(_)
                | Record::PageWrite { .. }) => {
                    return Err(Error::LogCorrupted {
                        lsn: cursor,
                        reason: format!("the undo chain of {txn} reaches a {other:?}"),
                    })
                }
            };
        }
        Ok(())
    }

    /// R22: a loser instant restart rolls back in the background: registered as running (so
    /// checkpoints list it and keep its log), and holding an exclusive record lock on every key
    /// its rollback will change, so that no transaction reads or writes those keys before the
    /// rollback restores them. Returns the number of keys locked.
    fn hold_loser(&self, entry: &record::TxnEntry) -> Result<u64> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let locks = self.locks.as_ref().expect("background undo needs record locks");
        let shared = wal.register(entry.txn);
        shared.last_lsn.store(entry.last_lsn.0, Ordering::Release);
        shared.first_lsn.store(wal.log.oldest().0, Ordering::Release);
        shared.undo_next.store(entry.undo_next.0, Ordering::Release);
        shared.set_state(entry.state);
        let mut keys = 0;
        self.walk_undo_chain(entry, |tree, change, _| {
            let t = self.tree_by_root(tree)?;
            let (id, key) = isolation::lock_name(&t, Some(change.borrow().key()));
            locks.lock(entry.txn, id, key, lock::LockMode::Exclusive)?;
            keys += 1;
            Ok(())
        })?;
        Ok(keys)
    }

    fn create_tree(&self, name: &str) -> Result<Tree> {
        swizzledb_buffer::validate_tree_name(name)
            .map_err(|reason| Error::InvalidTreeName { name: name.to_owned(), reason })?;
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        let mut trees = self.trees.lock();
        if trees.contains_key(name) || self.pool.catalog_get(name).is_some() {
            return Err(Error::TreeExists(name.to_owned()));
        }
        // Checked before anything is logged: a refused tree must leave no record behind.
        self.pool.catalog_fits(name)?;
        let tree = match &self.wal {
            None => Tree::create(&self.pool)?,
            Some(wal) => {
                let tree = Tree::create_logged(&self.pool, Some(&SystemLog(wal)))?;
                wal.append(&Record::CreateTree { name: name.to_owned(), root: tree.root_page() })?;
                tree
            }
        };
        self.pool.catalog_insert(name, tree.root_page())?;
        let tree = self.handle(tree);
        trees.insert(name.to_owned(), tree.clone());
        Ok(tree)
    }

    fn tree(&self, name: &str) -> Result<Tree> {
        let mut trees = self.trees.lock();
        if let Some(t) = trees.get(name) {
            return Ok(t.clone());
        }
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        let root = self.pool.catalog_get(name).ok_or_else(|| Error::TreeNotFound(name.to_owned()))?;
        let tree = self.handle(Tree::open(&self.pool, root)?);
        trees.insert(name.to_owned(), tree.clone());
        Ok(tree)
    }

    fn checkpoint(&self) -> Result<()> {
        match &self.wal {
            Some(wal) => wal.checkpoint(&self.pool).map(|_| ()),
            None => self.flush(),
        }
    }

    /// Writes every dirty page and syncs: unlogged, with page 0 and the free-page chain (no
    /// consistent point while writers run); logged, the pages only, after the whole log is
    /// durable — page 0 and the free chain of a logged database are written only at close
    /// (R13), since the records that freed a page may not be durable yet.
    fn flush(&self) -> Result<()> {
        match &self.wal {
            None => Ok(self.pool.flush()?),
            Some(wal) => {
                wal.log.flush_all()?;
                wal.finish_restart(&self.pool)?;
                self.replay_archive(wal)?;
                self.pool.write_back_older(Lsn(u64::MAX), usize::MAX)?;
                Ok(self.pool.sync_file()?)
            }
        }
    }

    /// With the decoupled cleaner, brings every page's copy in the file up to the durable log
    /// (R20): pages evicted without a write (R21) are in no frame for `flush` or `close` to
    /// write.
    fn replay_archive(&self, wal: &Wal) -> Result<()> {
        if self.cleaner.as_ref().is_some_and(|c| c.kind == Cleaner::Decoupled) {
            crate::decoupled::replay(wal, &self.pool, crate::decoupled::progress(wal)?)?;
        }
        Ok(())
    }

    /// The close sequence (R13): the log made durable (so no page, free-page chain or page 0
    /// reaches the file ahead of the records that explain it), every page and page 0 written,
    /// page 0 marked clean, and with a log a last checkpoint (which finds no dirty page and
    /// truncates the log to it).
    fn close(&self) -> Result<()> {
        if let Some(wal) = &self.wal {
            wal.log.flush_all()?;
            // R22: no page may be left stale in the file of a cleanly closed database.
            wal.finish_restart(&self.pool)?;
            self.replay_archive(wal)?;
        }
        self.pool.close()?;
        if let Some(wal) = &self.wal {
            wal.checkpoint_classical(&self.pool)?;
        }
        Ok(())
    }
}

impl Database {
    /// Settings for creating or opening a database.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Begins a transaction. While the log is over [`Builder::max_log_bytes`], first waits
    /// (up to about two seconds) for the page cleaner to shrink it.
    #[must_use]
    pub fn begin(&self) -> Transaction<'_> {
        self.core.begin()
    }

    /// Runs `op` in a transaction and commits it, retrying when a record lock is refused.
    ///
    /// If `op` fails with [`Error::Lock`] (wait-die chose this transaction, LOCKS.md K6), its
    /// changes are rolled back and `op` runs again from the start, backing off, under the same
    /// transaction number: every retry is as old as the first attempt, so it wins against the
    /// transactions that started after it and cannot be starved. Any other error of `op` rolls
    /// the transaction back and is returned; so is a failed commit. To roll back on purpose,
    /// return `Err(Error::Aborted(reason))`. `op` may run more than once:
    /// keep side effects out of it, or make them idempotent.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = swizzledb::Database::builder().create(&dir.path().join("bank.swz"))?;
    /// let accounts = db.create_tree("accounts")?;
    /// accounts.insert(b"alice", &100u64.to_be_bytes())?;
    /// accounts.insert(b"bob", &0u64.to_be_bytes())?;
    /// db.transact(|tx| {
    ///     let read = |v: Option<Vec<u8>>| u64::from_be_bytes(v.unwrap().try_into().unwrap());
    ///     let alice = read(tx.get(&accounts, b"alice")?);
    ///     let bob = read(tx.get(&accounts, b"bob")?);
    ///     tx.put(&accounts, b"alice", &(alice - 30).to_be_bytes())?;
    ///     tx.put(&accounts, b"bob", &(bob + 30).to_be_bytes())?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(accounts.get(b"bob")?, Some(30u64.to_be_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The first error of `op` other than a refused lock, a lock wait that timed out
    /// ([`crate::lock::LockError::Timeout`]), a rollback that failed (the pool or the log; no
    /// retry then), or the commit's error.
    pub fn transact<R>(&self, op: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R> {
        self.core.run_retrying(op, |_| false)
    }

    fn stop_background(&self) {
        let mut threads = self.background.lock();
        // The losers' rollback finishes first: it may need the other threads' work.
        if let Some(mut u) = threads.undo.take() {
            u.finish();
        }
        if let Some(mut e) = threads.evictor.take() {
            e.stop();
        }
        if let Some(mut c) = threads.cleaner.take() {
            c.stop();
        }
        if let Some(mut c) = threads.checkpointer.take() {
            c.stop();
        }
        if let Some(mut a) = threads.archiver.take() {
            a.stop();
        }
        if let Some(mut m) = threads.merger.take() {
            m.stop();
            if let Some(wal) = &self.core.wal {
                wal.background_merges.store(false, std::sync::atomic::Ordering::Release);
            }
        }
        if let Some(mut r) = threads.redo.take() {
            r.stop();
        }
    }

    /// Checkpoints taken since the database opened, by kind and outcome (`None` without
    /// logging).
    #[must_use]
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.core.wal.as_ref().map(|w| w.stats.snapshot())
    }

    /// Checkpoints taken since the database opened (all zero without logging);
    /// [`Database::checkpoint_stats`] has more.
    #[must_use]
    pub fn checkpoint_counts(&self) -> CheckpointCounts {
        self.core.wal.as_ref().map_or(CheckpointCounts::default(), |w| {
            let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
            CheckpointCounts {
                checkpoints: l(&w.stats.checkpoints),
                background: l(&w.stats.background_checkpoints),
                failed: l(&w.stats.failed_checkpoints),
            }
        })
    }

    /// What the page cleaner did since the database opened (`None` without logging).
    #[must_use]
    pub fn cleaner_stats(&self) -> Option<CleanerStats> {
        self.core.cleaner.as_ref().map(|c| c.counters.snapshot())
    }

    /// Bytes of log kept on disk now, from the oldest record restart could need (or not yet
    /// truncated) to the end (`None` without logging). The page cleaner keeps it below
    /// [`Builder::max_log_bytes`] (R15).
    #[must_use]
    pub fn log_bytes(&self) -> Option<u64> {
        self.core.wal.as_deref().map(cleaner::log_bytes)
    }

    /// The record lock manager's counters (`None` with locking off).
    #[must_use]
    pub fn lock_stats(&self) -> Option<lock::LockStats> {
        self.core.locks.as_deref().map(lock::LockManager::stats)
    }

    /// Whether this database logs its changes.
    #[must_use]
    pub fn is_logged(&self) -> bool {
        self.core.wal.is_some()
    }

    /// Archives the durable log now (R17): its page changes not archived yet become one new
    /// run. `None` without an archive ([`Builder::log_archive`]) or with nothing new to archive.
    /// Checkpoints do this too.
    ///
    /// # Errors
    /// Reading the log or writing the run failed; the archive is as before (wal README A4).
    pub fn archive_log(&self) -> Result<Option<RunSummary>> {
        match &self.core.wal {
            Some(wal) => wal.archive_durable(),
            None => Ok(None),
        }
    }

    /// The log archive's runs, oldest first (`None` without an archive).
    #[must_use]
    pub fn archive_runs(&self) -> Option<Vec<RunSummary>> {
        self.core.wal.as_ref().and_then(|w| w.archive.as_deref()).map(swizzledb_wal::Archive::runs)
    }

    /// The log's counters (`None` without logging).
    #[must_use]
    pub fn log_stats(&self) -> Option<LogStats> {
        self.core.wal.as_ref().map(|w| w.log.stats())
    }

    /// What instant restart's redo has done so far (RECOVERY.md R22): `None` unless this
    /// database opened by [`RestartMode::Instant`].
    #[must_use]
    pub fn redo_progress(&self) -> Option<RedoProgress> {
        self.core.wal.as_ref().and_then(|w| w.pending.as_ref()).map(|p| p.progress())
    }

    /// What the restart that opened this database did (all zero for a created database or one
    /// without logging).
    #[must_use]
    pub fn restart_stats(&self) -> RestartStats {
        *self.core.restart_stats.lock()
    }

    /// Takes a checkpoint (RECOVERY.md R7); without logging, flushes. After an instant restart
    /// whose redo is still pending, the first one (like `flush` and `close`) first redoes the
    /// pending pages in the file, then takes the checkpoint that ends restart (R22).
    ///
    /// # Errors
    /// Log or I/O errors.
    pub fn checkpoint(&self) -> Result<()> {
        self.core.checkpoint()
    }

    /// Creates a new, empty tree.
    ///
    /// # Errors
    /// The name is invalid or taken, the catalog is full, or no frame is free.
    pub fn create_tree(&self, name: &str) -> Result<Tree> {
        self.core.create_tree(name)
    }

    /// Opens an existing tree.
    ///
    /// # Errors
    /// No such tree, or I/O errors loading its root.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        self.core.tree(name)
    }

    /// Opens the tree, creating it if it does not exist.
    ///
    /// # Errors
    /// As [`Database::tree`] and [`Database::create_tree`].
    pub fn tree_or_create(&self, name: &str) -> Result<Tree> {
        match self.tree(name) {
            Err(Error::TreeNotFound(_)) => self.create_tree(name),
            other => other,
        }
    }

    /// Drops the tree `name`: removes it from the catalog and frees all its pages for reuse.
    /// Returns `false` if there is no such tree. On a logged database the drop is logged and
    /// survives a crash once `drop_tree` returns (RECOVERY.md R23): a restart finds the tree
    /// gone, or — if the crash came while the pages were being freed — gone with some of its
    /// pages still allocated (unreachable; not damage).
    ///
    /// Every [`Tree`] handle of the dropped tree refuses from then on
    /// ([`TreeError::Dropped`]); a new tree of the same name is a new, empty tree. The drop
    /// waits (up to about two seconds) until no [`Transaction`] runs — auto-commit writes of
    /// the trees' handles included — so that no transaction holds uncommitted changes of the
    /// tree, and new transactions wait for it at `begin`. Reads through handles of the tree
    /// are not waited for, nor (on an unlogged database) writes through them: do not drop a
    /// tree that other threads still use.
    ///
    /// # Errors
    /// [`Error::TreeBusy`] if a transaction kept running (one this thread holds, too) or
    /// instant restart is still rolling losers back; I/O errors reading the tree's pages, or
    /// the log failed.
    pub fn drop_tree(&self, name: &str) -> Result<bool> {
        self.core.drop_tree(name)
    }

    /// Names of all trees.
    #[must_use]
    pub fn tree_names(&self) -> Vec<String> {
        self.core.pool.catalog_names()
    }

    /// Writes every dirty page and fsyncs (a logged database's commits are durable without it;
    /// it shortens the next restart's redo). On an unlogged database it also writes the
    /// metadata, but it is no consistent point: writes running meanwhile may be half in the
    /// file, and only [`Database::close`] marks the file clean (R13).
    ///
    /// # Errors
    /// Log or I/O errors (sticky: reopen the database afterwards).
    pub fn flush(&self) -> Result<()> {
        self.core.flush()
    }

    /// Flushes and closes the database: every page written, page 0 marked clean, a last
    /// checkpoint with a log, the file locks released. Every [`Tree`] handle that outlives it
    /// refuses from then on ([`TreeError::Closed`]). If it records a trace and no [`Tree`]
    /// handle outlives the database, the trace is finished here and its errors reported;
    /// otherwise it is finished when the last handle is dropped.
    ///
    /// # Errors
    /// As [`Database::flush`]; I/O errors finishing the trace. The database is closed even
    /// then (its handles refuse); a logged one restarts from its log at the next open.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.stop_background();
        let result = self.core.close();
        self.core.pool.mark_closed();
        *self.core.me.lock() = Weak::new();
        self.core.trees.lock().clear();
        self.files.lock().clear();
        result?;
        if let Some(core) = Arc::get_mut(&mut self.core) {
            if let Some(pool) = Arc::get_mut(&mut core.pool) {
                pool.finish_trace()?;
            }
        }
        Ok(())
    }

    /// The buffer pool's counters, summed over all threads.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.core.pool.stats()
    }

    /// The buffer pool (for experiments and checks).
    #[must_use]
    pub fn pool(&self) -> &Arc<swizzledb_buffer::BufferPool> {
        &self.core.pool
    }
}

impl Drop for Database {
    /// Dropping without [`Database::close`] closes the same way; a failure is reported as a
    /// `log` error record (call `close` to get the error).
    fn drop(&mut self) {
        self.stop_background();
        if !self.closed {
            match self.core.close() {
                Ok(()) => log::debug!("swizzledb: {} closed by drop", self.core.pool.path().display()),
                Err(e) => log::error!(
                    "swizzledb: dropping the database {} could not close it cleanly: {e}; call \
                     Database::close to handle the error (a logged database restarts from its log \
                     at the next open)",
                    self.core.pool.path().display()
                ),
            }
            self.core.pool.mark_closed();
            self.core.trees.lock().clear();
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("pool", &self.core.pool).finish_non_exhaustive()
    }
}

/// What the docs promise about threads (crate doc, "Threads"), checked at compile time.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Database>();
    send_sync::<Builder>();
    send_sync::<Tree>();
    send_sync::<RangeIter<'static>>();
    send_sync::<RevRangeIter<'static>>();
    send_sync::<Error>();
    send_sync::<Stats>();
    send::<Transaction<'static>>();
    send_sync::<TxnRange<'static>>();
    send_sync::<TxnRevRange<'static>>();
};

/// The `serde` feature's promise: every statistics type implements `Serialize`.
#[cfg(feature = "serde")]
const _: fn() = || {
    fn serialize<T: serde::Serialize>() {}
    serialize::<Stats>();
    serialize::<LogStats>();
    serialize::<CheckpointStats>();
    serialize::<CheckpointCounts>();
    serialize::<CleanerStats>();
    serialize::<RestartStats>();
    serialize::<RedoProgress>();
    serialize::<lock::LockStats>();
};

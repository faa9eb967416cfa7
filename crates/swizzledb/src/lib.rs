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
//! **Durability:** without logging (the default for now), [`Database::flush`] and
//! [`Database::close`] write every dirty page and fsync, and a crash between flushes can lose
//! changes and leave the file inconsistent. With [`Builder::logging`], changes go through
//! [`Transaction`]s, are logged ahead of the pages, survive a crash once committed, and opening
//! after a crash restarts from the log (`RECOVERY.md`).

#![forbid(unsafe_code)]

pub mod lock;
mod logging;
pub mod record;
mod restart;
mod txn;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use swizzledb_btree::BTreeOwner;
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogError, LogManager};

use crate::logging::{PoolLog, SystemLog, TxnLog, Undo, Wal};
use crate::record::{Record, TxnState};

pub use crate::logging::CommitMode;
pub use crate::restart::RestartStats;
pub use crate::txn::Transaction;
pub use swizzledb_wal::LogStats;

pub use swizzledb_btree::{max_key_len, max_value_len, RangeIter, RevRangeIter, Tree, TreeError, TreeShape};
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
    /// A new database's log directory exists already and holds files: they belong to another
    /// database and would be replayed onto this one.
    #[error("the log directory {0} exists and is not empty; remove it or choose another path")]
    StaleLog(std::path::PathBuf),
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
    logging: bool,
    locking: Locking,
    commit_mode: CommitMode,
    log_segment_bytes: Option<u64>,
    checkpoint_every: Option<Option<std::time::Duration>>,
}

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

    /// Page size for a new file (default 8 KiB; a power of two from 4 KiB to 32 KiB). Opening
    /// a file with another page size is an error.
    #[must_use]
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.config.page_size = bytes;
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

    /// Write-ahead logging (default off for now): every change goes through a [`Transaction`],
    /// commits are durable, and opening after a crash restarts from the log (RECOVERY.md). The
    /// log lives in the directory `<path>.wal` beside the database file. With logging on, the
    /// trees' own `insert`/`upsert`/`delete` refuse with [`TreeError::NeedsTransaction`].
    #[must_use]
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = on;
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
    /// at open, close and [`Database::checkpoint`]). Restart reads the log back to the last
    /// checkpoint, so this bounds restart time.
    #[must_use]
    pub fn checkpoint_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.checkpoint_every = Some(every);
        self
    }

    fn checkpoint_every(&self) -> Option<std::time::Duration> {
        self.checkpoint_every.unwrap_or(Some(std::time::Duration::from_secs(30)))
    }

    /// Bytes per log segment file (default 16 MiB; a multiple of 8 from 4 KiB to 1 GiB).
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

    /// Creates a new database file (fails if it exists).
    ///
    /// # Errors
    /// Invalid settings or I/O errors.
    pub fn create(self, path: &Path) -> Result<Database> {
        if !self.logging {
            let pool = swizzledb_buffer::BufferPool::create(path, &self.config, Arc::new(BTreeOwner))?;
            return Ok(Database::with_pool(pool, None, self.locking));
        }
        let dir = wal_dir(path);
        if self.config.vfs.list(&dir).is_ok_and(|files| !files.is_empty()) {
            return Err(Error::StaleLog(dir));
        }
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog(Arc::clone(&log))));
        let pool = swizzledb_buffer::BufferPool::create(path, &config, Arc::new(BTreeOwner))?;
        let wal = Wal::new(log, self.commit_mode);
        let db = Database::with_pool(pool, Some(Arc::new(wal)), self.locking);
        db.checkpoint()?;
        db.start_checkpointer(self.checkpoint_every());
        Ok(db)
    }

    fn log_config(&self, path: &Path) -> LogConfig {
        let mut config = LogConfig::new(wal_dir(path));
        config.vfs = Arc::clone(&self.config.vfs);
        if let Some(bytes) = self.log_segment_bytes {
            config.segment_bytes = bytes;
        }
        config
    }

    /// Opens an existing database file. In main-memory mode every tree is loaded here.
    ///
    /// # Errors
    /// Not a SwizzleDB file, another format version or page size, corruption, or I/O errors.
    pub fn open(self, path: &Path) -> Result<Database> {
        let db = if self.logging {
            self.restart(path)?
        } else {
            let pool = swizzledb_buffer::BufferPool::open(path, &self.config, Arc::new(BTreeOwner))?;
            Database::with_pool(pool, None, self.locking)
        };
        if db.pool.mode() == PoolMode::MainMemory {
            for name in db.pool.catalog_names() {
                db.tree(&name)?;
            }
        }
        Ok(db)
    }
}

impl Builder {
    /// Restart (RECOVERY.md "Restart"): analysis and redo on the file, then the pool opens with
    /// the recovered allocation, the losers are rolled back with compensation records, and a
    /// checkpoint ends it. Crashing anywhere in here and restarting again is safe (R11).
    fn restart(&self, path: &Path) -> Result<Database> {
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let recovered = restart::analyze_and_redo(&*self.config.vfs, path, self.config.direct_io, &log)?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog(Arc::clone(&log))));
        let pool = swizzledb_buffer::BufferPool::open_recovered(
            path,
            &config,
            Arc::new(BTreeOwner),
            recovered.allocation,
        )?;
        let wal = Wal::new(log, self.commit_mode);
        let mut db = Database::with_pool(pool, Some(Arc::new(wal)), self.locking);
        db.next_txn.store(recovered.next_txn, std::sync::atomic::Ordering::Relaxed);
        let mut stats = recovered.stats;
        for entry in &recovered.unfinished {
            match db.finish_loser(entry) {
                Ok(compensations) => stats.compensations += compensations,
                Err(e) => {
                    // No checkpoint on the way out (Drop): it would list the unfinished losers
                    // without their first records and truncate the log they still need.
                    db.closed = true;
                    return Err(e);
                }
            }
            stats.losers += u64::from(entry.state != TxnState::Committed);
        }
        *db.restart_stats.lock() = stats;
        db.checkpoint()?;
        db.start_checkpointer(self.checkpoint_every());
        Ok(db)
    }
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
    pool: Arc<swizzledb_buffer::BufferPool>,
    trees: Mutex<HashMap<String, Tree>>,
    wal: Option<Arc<Wal>>,
    locks: Option<lock::LockManager>,
    checkpointer: Mutex<Option<logging::Checkpointer>>,
    next_txn: std::sync::atomic::AtomicU64,
    restart_stats: Mutex<RestartStats>,
    closed: bool,
}

impl Database {
    /// Settings for creating or opening a database.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn with_pool(pool: swizzledb_buffer::BufferPool, wal: Option<Arc<Wal>>, locking: Locking) -> Database {
        Database {
            pool: Arc::new(pool),
            trees: Mutex::new(HashMap::new()),
            wal,
            locks: (locking == Locking::On).then(|| lock::LockManager::new(64)),
            checkpointer: Mutex::new(None),
            next_txn: std::sync::atomic::AtomicU64::new(1),
            restart_stats: Mutex::new(RestartStats::default()),
            closed: false,
        }
    }

    /// Wraps a tree handle for this database: with logging on, its unlogged writes refuse.
    fn handle(&self, tree: Tree) -> Tree {
        if self.wal.is_some() {
            tree.logged_only()
        } else {
            tree
        }
    }

    /// Begins a transaction.
    #[must_use]
    pub fn begin(&self) -> Transaction<'_> {
        let id = TxnId(self.next_txn.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let shared = match &self.wal {
            Some(wal) => wal.register(id),
            None => Arc::new(logging::TxnShared::new(id)),
        };
        Transaction::new(self, self.wal.as_deref(), shared)
    }

    fn start_checkpointer(&self, every: Option<std::time::Duration>) {
        if let (Some(wal), Some(every)) = (&self.wal, every) {
            *self.checkpointer.lock() =
                Some(logging::Checkpointer::start(Arc::clone(wal), Arc::clone(&self.pool), every));
        }
    }

    fn stop_checkpointer(&self) {
        if let Some(mut c) = self.checkpointer.lock().take() {
            c.stop();
        }
    }

    /// Checkpoints taken since the database opened: `(all, by the background thread, failed)`
    /// (zeros without logging).
    #[must_use]
    pub fn checkpoint_counts(&self) -> (u64, u64, u64) {
        self.wal.as_ref().map_or((0, 0, 0), |w| {
            let l = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            (l(&w.stats.checkpoints), l(&w.stats.background_checkpoints), l(&w.stats.failed_checkpoints))
        })
    }

    /// Locks `key` of `tree` for `txn` (no-op with locking off).
    pub(crate) fn lock(&self, txn: TxnId, tree: &Tree, key: &[u8], mode: lock::LockMode) -> Result<()> {
        if let Some(locks) = &self.locks {
            let root = tree.root_page().get();
            // Trees are told apart by root page; folding it to 32 bits can only merge two trees'
            // lock names (a false conflict), never separate one's.
            locks.lock(txn, (root ^ (root >> 32)) as u32, key, mode)?;
        }
        Ok(())
    }

    /// The record lock manager's counters (`None` with locking off).
    #[must_use]
    pub fn lock_stats(&self) -> Option<lock::LockStats> {
        self.locks.as_ref().map(lock::LockManager::stats)
    }

    /// Whether this database logs its changes.
    #[must_use]
    pub fn is_logged(&self) -> bool {
        self.wal.is_some()
    }

    /// The log's counters (`None` without logging).
    #[must_use]
    pub fn log_stats(&self) -> Option<LogStats> {
        self.wal.as_ref().map(|w| w.log.stats())
    }

    /// What the restart that opened this database did (all zero for a created database or one
    /// without logging).
    #[must_use]
    pub fn restart_stats(&self) -> RestartStats {
        *self.restart_stats.lock()
    }

    /// Takes a checkpoint (RECOVERY.md R7); without logging, flushes.
    ///
    /// # Errors
    /// Log or I/O errors.
    pub fn checkpoint(&self) -> Result<()> {
        match &self.wal {
            Some(wal) => wal.checkpoint(&self.pool).map(|_| ()),
            None => self.flush(),
        }
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
        shared.last_lsn.store(entry.last_lsn.0, std::sync::atomic::Ordering::Release);
        let log = TxnLog::new(Some(wal), shared);
        let txn = entry.txn;
        let mut compensations = 0;
        if entry.state != TxnState::Committed {
            if entry.state == TxnState::Active {
                log.append(|prev| Record::Abort { txn, prev })?;
            }
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
                        let t = self.tree_by_root(tree)?;
                        txn::compensate(&t, &log, &Undo { tree, change, prev })?;
                        compensations += 1;
                        prev
                    }
                    Record::Begin { .. } => Lsn(0),
                    Record::Abort { prev, .. } | Record::Commit { prev, .. } => prev,
                    other => {
                        return Err(Error::LogCorrupted {
                            lsn: cursor,
                            reason: format!("the undo chain of {txn} reaches a {other:?}"),
                        })
                    }
                };
            }
        }
        log.append(|prev| Record::End { txn, prev })?;
        wal.forget(txn);
        Ok(compensations)
    }

    /// Creates a new, empty tree.
    ///
    /// # Errors
    /// The name is invalid or taken, the catalog is full, or no frame is free.
    pub fn create_tree(&self, name: &str) -> Result<Tree> {
        swizzledb_buffer::validate_tree_name(name)
            .map_err(|reason| Error::InvalidTreeName { name: name.to_owned(), reason })?;
        let mut trees = self.trees.lock();
        if trees.contains_key(name) || self.pool.catalog_get(name).is_some() {
            return Err(Error::TreeExists(name.to_owned()));
        }
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

    /// Opens an existing tree.
    ///
    /// # Errors
    /// No such tree, or I/O errors loading its root.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        let mut trees = self.trees.lock();
        if let Some(t) = trees.get(name) {
            return Ok(t.clone());
        }
        let root = self.pool.catalog_get(name).ok_or_else(|| Error::TreeNotFound(name.to_owned()))?;
        let tree = self.handle(Tree::open(&self.pool, root)?);
        trees.insert(name.to_owned(), tree.clone());
        Ok(tree)
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

    /// Names of all trees.
    #[must_use]
    pub fn tree_names(&self) -> Vec<String> {
        self.pool.catalog_names()
    }

    /// Writes every dirty page and the metadata, then fsyncs.
    ///
    /// # Errors
    /// I/O errors (sticky: reopen the database afterwards).
    pub fn flush(&self) -> Result<()> {
        Ok(self.pool.flush()?)
    }

    /// Flushes and closes the database. If it records a trace and no [`Tree`] handle outlives
    /// the database, the trace is finished here and its errors reported; otherwise it is
    /// finished when the last handle is dropped.
    ///
    /// # Errors
    /// As [`Database::flush`]; I/O errors finishing the trace.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.stop_checkpointer();
        self.flush()?;
        self.checkpoint()?;
        self.trees.lock().clear();
        if let Some(pool) = Arc::get_mut(&mut self.pool) {
            pool.finish_trace()?;
        }
        Ok(())
    }

    /// The buffer pool's counters, summed over all threads.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.pool.stats()
    }

    /// The buffer pool (for experiments and checks).
    #[must_use]
    pub fn pool(&self) -> &Arc<swizzledb_buffer::BufferPool> {
        &self.pool
    }
}

impl Drop for Database {
    /// Dropping without [`Database::close`] still flushes, ignoring errors (call `close` to see
    /// them).
    fn drop(&mut self) {
        self.stop_checkpointer();
        if !self.closed {
            let _ = self.checkpoint();
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("pool", &self.pool).finish_non_exhaustive()
    }
}

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
//! **Durability (for now):** [`Database::flush`] and [`Database::close`] write every dirty page
//! and fsync. There is no write-ahead log yet: a crash between flushes can lose the changes since
//! the last flush and can leave the file inconsistent. Crash safety arrives with the WAL.

#![forbid(unsafe_code)]

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use swizzledb_btree::BTreeOwner;

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
}

/// Result alias with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Settings for opening or creating a database.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    config: PoolConfig,
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
        let pool = swizzledb_buffer::BufferPool::create(path, &self.config, Arc::new(BTreeOwner))?;
        Ok(Database::with_pool(pool))
    }

    /// Opens an existing database file. In main-memory mode every tree is loaded here.
    ///
    /// # Errors
    /// Not a SwizzleDB file, another format version or page size, corruption, or I/O errors.
    pub fn open(self, path: &Path) -> Result<Database> {
        let pool = swizzledb_buffer::BufferPool::open(path, &self.config, Arc::new(BTreeOwner))?;
        let db = Database::with_pool(pool);
        if db.pool.mode() == PoolMode::MainMemory {
            for name in db.pool.catalog_names() {
                db.tree(&name)?;
            }
        }
        Ok(db)
    }
}

/// An open database: a file, its buffer pool, and its named trees.
pub struct Database {
    pool: Arc<swizzledb_buffer::BufferPool>,
    trees: Mutex<HashMap<String, Tree>>,
    closed: bool,
}

impl Database {
    /// Settings for creating or opening a database.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn with_pool(pool: swizzledb_buffer::BufferPool) -> Database {
        Database { pool: Arc::new(pool), trees: Mutex::new(HashMap::new()), closed: false }
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
        let tree = Tree::create(&self.pool)?;
        self.pool.catalog_insert(name, tree.root_page())?;
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
        let tree = Tree::open(&self.pool, root)?;
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
        self.flush()?;
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
        if !self.closed {
            let _ = self.pool.flush();
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("pool", &self.pool).finish_non_exhaustive()
    }
}

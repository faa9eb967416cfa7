//! Errors of the page file and buffer pool.

use std::path::PathBuf;
use swizzledb_sync::{Lsn, PageId};

/// What can go wrong below the B-tree: I/O, corruption, and running out of frames.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BufferError {
    /// The operating system reported an I/O error on the database file.
    #[error("I/O error on {file}: {source}")]
    Io {
        /// The database file.
        file: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A previous write or fsync failed; the in-memory state may be ahead of the file.
    #[error("a previous I/O error on {file} left the pool unusable: close and reopen the database")]
    PreviousIoError {
        /// The database file.
        file: PathBuf,
    },
    /// The file does not start with a SwizzleDB metadata page.
    #[error("{file} is not a SwizzleDB database file ({reason})")]
    NotADatabase {
        /// The file that was opened.
        file: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file was written by another format version.
    #[error("{file} has format version {found}, this build reads version {expected}")]
    FormatVersion {
        /// The file that was opened.
        file: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build understands.
        expected: u32,
    },
    /// The caller asked for a page size other than the one the file was created with.
    #[error("{file} was created with {found}-byte pages, but {requested}-byte pages were requested")]
    PageSizeMismatch {
        /// The file that was opened.
        file: PathBuf,
        /// Page size stored in the file.
        found: usize,
        /// Page size the caller asked for.
        requested: usize,
    },
    /// The write-ahead log could not be made durable up to a page's LSN, so the page was not
    /// written (WAL rule, B18); it stays dirty in memory.
    #[error(
        "the write-ahead log could not be made durable up to {lsn} before writing {page:?} of \
         {file}: {source}; the page stays dirty: fix the log device and flush again, or close and \
         recover"
    )]
    Wal {
        /// The database file.
        file: PathBuf,
        /// The page that was to be written.
        page: PageId,
        /// Its page LSN, which the log had to reach.
        lsn: Lsn,
        /// What the log reported.
        #[source]
        source: std::io::Error,
    },
    /// A page failed its checksum or header check.
    #[error("{file}: {page:?} is corrupted: {reason}")]
    Corrupted {
        /// The database file.
        file: PathBuf,
        /// The page that failed.
        page: PageId,
        /// What check failed.
        reason: String,
    },
    /// No frame could be freed: every resident page is latched, a root, or holds swizzled children.
    #[error(
        "buffer pool exhausted: none of its {frames} frames could be freed (pool too small for \
         every tree's root, which stays resident, plus tree height x threads; use a larger pool)"
    )]
    PoolExhausted {
        /// Frames in the pool.
        frames: usize,
    },
    /// Main-memory mode never evicts; the data no longer fits.
    #[error(
        "main-memory mode: the data needs more than the memory limit of {limit_bytes} bytes \
         ({frames} pages); raise the limit or use swizzling/traditional mode"
    )]
    MemoryLimit {
        /// The configured limit.
        limit_bytes: usize,
        /// Frames that fit in it.
        frames: usize,
    },
    /// An unsupported configuration value.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The catalog on the metadata page is full.
    #[error("the catalog on the metadata page is full ({trees} trees); no more trees can be created")]
    CatalogFull {
        /// Trees already in the catalog.
        trees: usize,
    },
    /// The reference trace file could not be created (B17).
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
}

/// Result alias for this crate.
pub type Result<T, E = BufferError> = std::result::Result<T, E>;

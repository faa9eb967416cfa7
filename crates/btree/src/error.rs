//! Errors of tree operations.

use swizzledb_buffer::BufferError;

/// What can go wrong in a tree operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The key is longer than the page size allows.
    #[error("key of {len} bytes exceeds the limit of {max} bytes for this page size")]
    KeyTooLarge {
        /// Length given.
        len: usize,
        /// Longest allowed.
        max: usize,
    },
    /// The value is longer than the tree takes (`Tree::max_value_len`: at most `MAX_VALUE_LEN`,
    /// an eighth of the pool in overflow pages, and one log record; T22).
    #[error(
        "value of {len} bytes exceeds this tree's limit of {max} bytes (Tree::max_value_len: bounded by \
         MAX_VALUE_LEN, an eighth of the buffer pool and one log record; raise pool_bytes or \
         log_segment_bytes, or split the value)"
    )]
    ValueTooLarge {
        /// Length given.
        len: usize,
        /// Longest allowed.
        max: usize,
    },
    /// `insert` found the key already present (use `upsert` to replace).
    #[error("key already present; use upsert to replace its value")]
    DuplicateKey,
    /// The tree's structure is broken (a page passed its checksum but contradicts T1–T3), found
    /// while following it; `Tree::verify` describes all of it.
    #[error("the tree is damaged at page {page}: {reason}; run verify and restore from a backup")]
    Damaged {
        /// Where it was noticed.
        page: swizzledb_buffer::PageId,
        /// What is wrong.
        reason: String,
    },
    /// The database this tree belongs to was closed or dropped (T15): nothing was read or
    /// changed.
    #[error("the database is closed; open it again and take a new tree handle")]
    Closed,
    /// The tree was dropped (`Database::drop_tree`, T25): this handle reads and changes
    /// nothing any more.
    #[error("the tree was dropped; create it again and take a new handle")]
    Dropped,
    /// A write through a database opened read-only (`Builder::read_only`, T31): nothing was
    /// changed.
    #[error("the database was opened read-only; open it without Builder::read_only to change it")]
    ReadOnly,
    /// The transaction or snapshot a tree operation ran in could not go on: an auto-commit
    /// write's transaction (T14) whose record lock stayed refused or whose engine failed, a
    /// transaction's range read refused, or a scan whose snapshot was ended for memory (the
    /// engine's `SnapshotTooOld`, T27). The source is the engine's error, which says what to
    /// do; a write changed nothing and may be retried, a scan ends.
    #[error("the transaction or snapshot of this tree operation failed: {0}")]
    Transaction(#[source] LogFailure),
    /// The write-ahead log could not record a change (T11): the change was not made, or — for a
    /// structure change — the engine stops writing pages until it is reopened and restarted.
    #[error("the write-ahead log failed: {0}; reopen the database to recover")]
    Log(#[source] LogFailure),
    /// The buffer pool or the file failed.
    #[error(transparent)]
    Buffer(#[from] BufferError),
}

/// A failure to log, from the engine's log; the operation that met it fails with
/// [`TreeError::Log`].
pub type LogFailure = Box<dyn std::error::Error + Send + Sync>;

/// Result alias for tree operations.
pub type Result<T, E = TreeError> = std::result::Result<T, E>;

/// A [`Tree::compare_and_swap`](crate::Tree::compare_and_swap) that did not swap: the key's
/// value was not the expected one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "compare-and-swap refused: the key's current value is not the expected one; read `current` and retry"
)]
pub struct CompareAndSwapError {
    /// The value the key held when it was compared (`None`: the key was absent).
    pub current: Option<Vec<u8>>,
}

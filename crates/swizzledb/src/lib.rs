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
//! crash `open` refuses it ([`Error::Unclean`]) — unless no write reached it since it was opened. One `Database` at a time may have a file open
//! ([`Error::AlreadyOpen`]); a closed database's tree handles refuse ([`TreeError::Closed`]).
//!
//! **Threads:** a [`Database`] (and a [`Builder`]), its [`Tree`] handles and their scans
//! ([`RangeIter`], [`RevRangeIter`]) are `Send + Sync`: share the database by reference or in an
//! `Arc` and use any handle from any thread. A [`Transaction`] is `Send` but not `Sync`: one
//! thread at a time uses it (it can move between threads); its range reads ([`TxnRange`],
//! [`TxnRevRange`]) are `Send + Sync`. A [`ReadTransaction`] (`Database::begin_read`: reads
//! at one snapshot, LOCKS.md K18) is `Send + Sync`. Compile-time assertions in this crate hold
//! these promises.
//!
//! Besides the log's background work, every database whose pool can evict (and records no
//! trace) runs a background evictor ([`lab::LabOptions::background_eviction`]) that keeps free
//! frames ready, so that a miss rarely evicts and almost never writes a dirty page. `close` and
//! drop stop and join every background thread.
//!
//! **The lab:** the switches the buffer-management papers compare (latching, fix timing,
//! BP-Wrapper's queue, record locks off, decoupled checkpoints and cleaning, write elision, a
//! reference trace, a fault-injecting file system) are not builder setters: they live in the
//! [`lab`] module, set through [`Builder::lab`], beside the engine internals the experiments
//! read ([`lab::DatabaseExt`], [`lab::TreeExt`], [`lab::record`]). A key-value store needs
//! none of them. The user's types have no way to change a logged database without logging the
//! change; the lab's `DatabaseExt::pool` is the buffer pool itself, and writes through it
//! bypass the log (tests damage pages with it).
//!
//! **Features:** `serde` (off by default) makes the statistics types ([`Stats`], [`LogStats`],
//! [`CheckpointStats`], [`CheckpointCounts`], [`CleanerStats`], [`RestartStats`],
//! [`RedoProgress`], [`lock::LockStats`]) implement `serde::Serialize`.

#![forbid(unsafe_code)]

mod backup;
mod builder;
mod cleaner;
mod compact;
mod database;
mod decoupled;
#[cfg(test)]
mod decoupled_tests;
mod engine;
mod error;
mod files;
pub mod inspect;
mod instant;
mod isolation;
pub mod lab;
pub mod lock;
mod logging;
mod open;
mod pause;
#[cfg(test)]
mod race_tests;
mod record;
mod redo;
mod repair;
mod restart;
mod snapshot;
mod tree;
mod txn;
pub mod typed;
mod version;
mod versions;

pub use crate::backup::BackupStats;
pub use crate::builder::{Builder, DEFAULT_ARCHIVE_INTERVAL, DEFAULT_MAX_LOG_BYTES, MIN_SEGMENT_PAGES};
pub use crate::cleaner::{Cleaner, CleanerStats};
pub use crate::compact::CompactStats;
pub use crate::database::{CheckpointCounts, Database};
pub use crate::error::{Error, Result};
pub use crate::files::{archive_dir, wal_dir};
pub use crate::instant::{RedoProgress, RestartMode};
pub use crate::logging::{CheckpointKind, CheckpointStats, CommitMode};
pub use crate::restart::RestartStats;
pub use crate::tree::Tree;
pub use crate::txn::{ReadTransaction, Transaction, TxnRange, TxnRevRange};
pub use crate::versions::{VersionStats, DEFAULT_VERSION_MEMORY};
pub use swizzledb_wal::{
    Archive, ArchiveEntry, CommitWait, Damage as LogDamage, LogError, LogStats, Recovery as LogRecovery,
    RunSummary,
};

pub use swizzledb_btree::{
    max_inline_value_len, max_key_len, max_value_len, CompareAndSwapError, KeyValue, RangeIter, RevRangeIter,
    TreeError, TreeShape, MAX_VALUE_LEN,
};
pub use swizzledb_buffer::{
    BpVariant, BufferError, EventKind, PolicyKind, PolicySpec, PoolConfig, PoolMode, Stats, TraceError,
    TraceEvent, TraceReader, TraceSummary,
};

/// The README's Rust examples, run as doc tests so that they keep compiling, and working.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;

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
    send_sync::<ReadTransaction<'static>>();
    send_sync::<VersionStats>();
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
    serialize::<VersionStats>();
};

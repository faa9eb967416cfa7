//! One version of a key (LOCKS.md K17): the value before a writer's first change of the key,
//! and the writer whose state decides which snapshots see it. The version store
//! (`versions.rs`) keeps them in chains; a running writer's version is parked in its key's lock
//! head (`lock.rs`), which is why these types sit below both.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use swizzledb_sync::PageId;

/// A writer that is still running (K17).
pub(crate) const ACTIVE: u64 = 0;
/// A writer between taking its commit timestamp and storing it: a reader waits the few
/// instructions until it is stored (K18).
pub(crate) const COMMITTING: u64 = 1;
/// A writer that rolled back: no snapshot sees it.
pub(crate) const ABORTED: u64 = 2;
/// The clock's first value; commit timestamps are above it.
pub(crate) const FIRST_TS: u64 = 16;

/// One transaction as a writer of versions: its state, shared by every version it made.
#[derive(Debug)]
pub(crate) struct Writer {
    /// `ACTIVE`, `COMMITTING`, `ABORTED` or the commit timestamp.
    pub(crate) state: AtomicU64,
}

/// A transaction's writer and the keys it made versions of (composite: tree, then key).
pub(crate) type Versioned = (Arc<Writer>, Vec<Key>);

/// A composite key (tree, then key), shared by its chain's map entry, the ordered index (K22)
/// and the writer's list: one allocation per chained key.
pub(crate) type Key = Arc<[u8]>;

#[derive(Debug)]
pub(crate) struct Version {
    pub(crate) writer: Arc<Writer>,
    /// The value before the writer's first change of the key (`None`: absent).
    pub(crate) before: Option<Box<[u8]>>,
}

/// K17: a running writer's version of a key, kept in the lock head of the key's exclusive lock
/// (`LockManager::with_head`) instead of the shared chains; its tree names the chain it moves
/// to if a snapshot still needs it when the writer ends.
#[derive(Debug)]
pub(crate) struct Parked {
    pub(crate) tree: PageId,
    pub(crate) version: Version,
}

impl Version {
    /// The memory the version counts against the bound (K20), with a key of `key_len` bytes.
    pub(crate) fn bytes(&self, key_len: usize) -> usize {
        VERSION_OVERHEAD + key_len + self.before.as_ref().map_or(0, |b| b.len())
    }
}

/// What a version costs besides its key and value (chain entry, map entry, allocations).
const VERSION_OVERHEAD: usize = 96;

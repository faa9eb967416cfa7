//! SwizzleDB's page file and buffer pool.
//!
//! One aligned region of frames, a separate array of frame descriptors, a page table, and three
//! ways of following child references ([`PoolMode`]): through the page table on every step
//! (traditional), through swizzled frame references (Graefe et al. 2014), or main-memory style
//! with everything resident. The rules the code relies on are numbered in `README.md` (B1…) and
//! cited by every `// SAFETY:` comment. A pool can record a buffer reference trace ([`trace`],
//! rule B17) for offline analysis. All file I/O goes through the [`Vfs`](swizzledb_io::Vfs) of
//! [`PoolConfig::vfs`], so tests can crash the file system or fail chosen calls
//! ([`swizzledb_io::fault`]);
//! with a [`LogFlush`] in [`PoolConfig::log`] the pool follows the WAL rule and keeps a recovery
//! LSN per dirty frame (rules B18–B20).

mod aligned;
mod config;
mod doublewrite;
mod error;
mod file;
mod guard;
mod log_flush;
mod meta;
pub mod page;
mod page_table;
mod pool;
mod stats;
mod swip;
pub mod trace;

pub use aligned::AlignedBuf;
pub use config::{PoolConfig, PoolMode};
pub use doublewrite::DoubleWrite;
pub use error::{BufferError, Result};
pub use file::PageFile;
pub use guard::{Exclusive, ExclusiveGuard, LatchKind, PageGuard, Shared, SharedGuard};
pub use log_flush::LogFlush;
pub use meta::{validate_tree_name, Meta, MAX_TREE_NAME};
pub use pool::evictor::EvictorHandle;
pub use pool::propagate::{FilePage, FilePages};
pub use pool::view::{PageView, Step};
pub use pool::{Allocation, Announced, BufferPool, FileState, PageOwner, WriteGuard, MIN_FRAMES};
pub use stats::Stats;
pub use swip::{Swip, SwipTarget};
pub use swizzledb_replacement::{PolicyKind, PolicySpec, Variant as BpVariant};
pub use swizzledb_sync::{FrameId, Lsn, PageId};
pub use trace::{
    export_csv, page_references, EventKind, TraceError, TraceEvent, TraceHeader, TraceReader, TraceSummary,
    TraceWriter, TRACE_MAGIC,
};

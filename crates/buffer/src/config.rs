//! Buffer-pool settings: how child references are followed ([`PoolMode`]) and everything else a
//! pool is opened with ([`PoolConfig`]). A leaf module: the pool, its errors and its trace
//! recorder all read it, and it needs nothing of them but the error type.

use crate::error::{BufferError, Result};
use crate::log_flush::LogFlush;
use crate::page;
use std::path::PathBuf;
use std::sync::Arc;
use swizzledb_io::{OsFs, Vfs};
use swizzledb_replacement::PolicySpec;

/// How child references are followed (chosen at open; all other code is shared).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum PoolMode {
    /// Child references stay page ids; every step goes through the page table.
    Traditional,
    /// Child references are swizzled to frame references on first use (Graefe et al. 2014).
    Swizzling,
    /// Everything is loaded at open and referenced directly; no page table on any path, no
    /// eviction; running out of frames is an error.
    MainMemory,
}

impl PoolMode {
    /// All modes, in the order experiments print them.
    pub const ALL: [PoolMode; 3] = [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory];

    /// True if child references are turned into frame references.
    #[inline]
    #[must_use]
    pub fn swizzles(self) -> bool {
        self != PoolMode::Traditional
    }

    /// Short name used on the command line and in CSV files.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Traditional => "traditional",
            PoolMode::Swizzling => "swizzling",
            PoolMode::MainMemory => "main-memory",
        }
    }
}

impl std::fmt::Display for PoolMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PoolMode {
    type Err = BufferError;
    fn from_str(s: &str) -> Result<PoolMode> {
        match s.to_ascii_lowercase().as_str() {
            "traditional" | "trad" => Ok(PoolMode::Traditional),
            "swizzling" | "swizzle" => Ok(PoolMode::Swizzling),
            "main-memory" | "mainmemory" | "mm" | "main_memory" => Ok(PoolMode::MainMemory),
            _ => Err(BufferError::Config(format!(
                "unknown mode {s:?}; expected traditional, swizzling or main-memory"
            ))),
        }
    }
}

/// Buffer-pool settings.
#[derive(Clone)]
pub struct PoolConfig {
    /// The file system the database file lives on (default: the operating system's, [`OsFs`]);
    /// tests pass a `FaultFs` to crash it or fail chosen calls.
    pub vfs: Arc<dyn Vfs>,
    /// How child references are followed.
    pub mode: PoolMode,
    /// Memory for frames, in bytes (the memory limit in main-memory mode).
    pub pool_bytes: usize,
    /// Page size for new files; must match the file when opening.
    pub page_size: usize,
    /// Replacement policy and its wrappers (ignored in main-memory mode).
    pub policy: PolicySpec,
    /// Seed for randomized policies.
    pub seed: u64,
    /// Open the file with O_DIRECT.
    pub direct_io: bool,
    /// Record a buffer reference trace to this file (B17): every fix, unfix, read, eviction,
    /// allocation and free, per thread. `None` (the default) records nothing and costs one
    /// predictable branch per event.
    pub trace: Option<PathBuf>,
    /// The write-ahead log the pool flushes before writing a page (B18) and tells of every page
    /// write (B20). `None` (the default): logging is off and no log call is made on any path.
    pub log: Option<Arc<dyn LogFlush>>,
    /// The double-write area every page write goes through (F15): a logged database's, so that
    /// a write torn by a crash is put back whole at the next open. `None` (the default): pages
    /// are written in place only.
    pub double_write: Option<Arc<crate::DoubleWrite>>,
    /// Time every fix and count the nanoseconds by hit or miss and latch mode (B12a; the
    /// `*_nanos` and `timed_*` counters of `Stats`). Off by default: timing costs two clock
    /// reads per fix.
    pub time_fixes: bool,
    /// Let tree descents read inner nodes without latching them, validated by each latch's
    /// version (B24), in the swizzling modes. On by default; it does nothing in traditional
    /// mode, or while a trace is recorded or fixes are timed (which count latched fixes).
    pub optimistic_reads: bool,
    /// Let point reads read the leaf through a view too (B33, btree T21), with the policy told
    /// of the hit afterwards, without a latch. Off by default (it costs more instructions per
    /// lookup than the leaf's latch where cores are few); it takes effect only with
    /// `optimistic_reads` and a policy whose hits need no latch (replacement R11), or in
    /// main-memory mode.
    pub optimistic_leaf_reads: bool,
    /// Fault the whole frame region in when the pool is made (F1b), so that a database growing
    /// into fresh frames pays no page faults later. The pool's memory is committed at once and
    /// opening takes longer (the kernel zeroes it all). Off by default.
    pub prefault: bool,
    /// Write elision (B27): eviction may drop a dirty page without writing it when the log
    /// says it can rebuild the page (`LogFlush::elide_write`). Off by default.
    pub write_elision: bool,
    /// The pool never writes (B34): opened over a file it may not change, for a database opened
    /// read-only. Its owner refuses every change before it touches a page. Off by default.
    pub read_only: bool,
    /// A new file's page 0 says not CLEAN until its first clean close (F11), even unlogged: a
    /// file that must not open before it is complete (a backup being written). Off by default.
    pub create_unclean: bool,
    /// BP-Wrapper's queue size S (replacement README, "BP-Wrapper"): a thread whose queue holds
    /// this many accesses blocks on the lock to commit them. Default 64; only a wrapped policy
    /// (`bpw-`, `bpw-batch-`) has a queue.
    pub bp_queue_size: usize,
    /// BP-Wrapper's batch threshold T: from this many queued accesses on, a thread tries the
    /// lock without blocking. Default 32; `1 <= T <= S`, else opening fails with
    /// [`crate::BufferError::Config`].
    pub bp_batch_threshold: usize,
    /// Frames an eviction batch frees (B13): `None` (the default) evicts when free frames fall
    /// below capacity/64 (2 to 256) and frees up to twice that; `Some(n)` evicts when fewer
    /// than `n` are free and frees up to `n` — `Some(1)` is one victim per evictioner call, as
    /// a `pick_victim` per miss. At most half the frames; `Some(0)` fails with
    /// [`crate::BufferError::Config`].
    pub eviction_batch: Option<usize>,
}

impl std::fmt::Debug for PoolConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolConfig")
            .field("vfs", &self.vfs)
            .field("mode", &self.mode)
            .field("pool_bytes", &self.pool_bytes)
            .field("page_size", &self.page_size)
            .field("policy", &self.policy)
            .field("seed", &self.seed)
            .field("direct_io", &self.direct_io)
            .field("trace", &self.trace)
            .field("log", &self.log.as_ref().map(|_| "LogFlush"))
            .field("double_write", &self.double_write)
            .field("time_fixes", &self.time_fixes)
            .field("optimistic_reads", &self.optimistic_reads)
            .field("optimistic_leaf_reads", &self.optimistic_leaf_reads)
            .field("prefault", &self.prefault)
            .field("write_elision", &self.write_elision)
            .field("read_only", &self.read_only)
            .field("create_unclean", &self.create_unclean)
            .field("bp_queue_size", &self.bp_queue_size)
            .field("bp_batch_threshold", &self.bp_batch_threshold)
            .field("eviction_batch", &self.eviction_batch)
            .finish()
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            vfs: Arc::new(OsFs),
            mode: PoolMode::Swizzling,
            pool_bytes: 64 << 20,
            page_size: page::DEFAULT_PAGE_SIZE,
            policy: PolicySpec::default(),
            seed: 0x5EED,
            direct_io: false,
            trace: None,
            log: None,
            double_write: None,
            time_fixes: false,
            optimistic_reads: true,
            optimistic_leaf_reads: false,
            prefault: false,
            write_elision: false,
            read_only: false,
            create_unclean: false,
            bp_queue_size: 64,
            bp_batch_threshold: 32,
            eviction_batch: None,
        }
    }
}

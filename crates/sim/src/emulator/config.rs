//! What an emulator run is made of: the variant, the sizes and the workload (README E1–E3).

use std::fmt;
use std::str::FromStr;

use swizzledb_replacement::{PolicyKind, Variant};

/// The Zipf exponent that gives LRU a hit ratio of about 90% with C = D/10, the paper's setting
/// (README E2; measured with this emulator at D = 10^6 and 10^7).
pub const DEFAULT_ZIPF: f64 = 1.1;

/// Full free lists hold at most 1/`FREE_SHARE` of a partition's frames ([`EmuConfig::effective_reclaim`]).
const FREE_SHARE: usize = 16;

/// The buffer variants of the paper's emulator (Figs. 11–13), plus CLOCK and prefetching alone.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum EmuVariant {
    /// bufLRU: one `BpWrapper(Variant::None)`: every hit takes the one lock, and so does every
    /// miss.
    Lru,
    /// bufDistLock: N partitions by page id, each its own `BpWrapper(Variant::None)` over its own
    /// policy instance and frames; a miss evicts within its partition.
    DistLock,
    /// bufBatching: one `BpWrapper(Variant::Batching)`, misses served from free lists.
    Batching,
    /// bufBat-Pref (full BP-Wrapper): one `BpWrapper(Variant::Both)`, free lists.
    BatPref,
    /// Prefetching alone (`Variant::Prefetching`): a lock per hit after the pre-read, and a lock
    /// per miss.
    Pref,
    /// bufBP-DistLock: partitions, each a `BpWrapper(Variant::Both)` with its own free lists.
    BpDistLock,
    /// bufBP-prim, the preliminary BP-Wrapper: `Variant::Both`, but every miss takes the lock to
    /// evict one victim (no free lists).
    Prim,
    /// CLOCK: hits set a reference bit without a lock; every miss takes the eviction lock.
    Clock,
}

impl EmuVariant {
    /// Every variant, in the order of tables and plots.
    pub const ALL: [EmuVariant; 8] = [
        EmuVariant::Lru,
        EmuVariant::DistLock,
        EmuVariant::Batching,
        EmuVariant::BatPref,
        EmuVariant::Pref,
        EmuVariant::BpDistLock,
        EmuVariant::Prim,
        EmuVariant::Clock,
    ];

    /// The name used on the command line and in the CSV.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EmuVariant::Lru => "lru",
            EmuVariant::DistLock => "distlock",
            EmuVariant::Batching => "batching",
            EmuVariant::BatPref => "bat-pref",
            EmuVariant::Pref => "pref",
            EmuVariant::BpDistLock => "bp-distlock",
            EmuVariant::Prim => "prim",
            EmuVariant::Clock => "clock",
        }
    }

    /// Whether the variant splits pages and frames into partitions (README E4).
    #[must_use]
    pub fn partitioned(self) -> bool {
        matches!(self, EmuVariant::DistLock | EmuVariant::BpDistLock)
    }

    /// Whether misses are served from free lists refilled in batches (README E6), given that
    /// free lists are on (`--free-lists` above 0).
    #[must_use]
    pub fn uses_free_lists(self) -> bool {
        matches!(self, EmuVariant::Batching | EmuVariant::BatPref | EmuVariant::BpDistLock)
    }

    /// The BP-Wrapper variant around the policy, or `None` for CLOCK (no wrapper).
    #[must_use]
    pub fn wrapper(self) -> Option<Variant> {
        match self {
            EmuVariant::Lru | EmuVariant::DistLock => Some(Variant::None),
            EmuVariant::Batching => Some(Variant::Batching),
            EmuVariant::Pref => Some(Variant::Prefetching),
            EmuVariant::BatPref | EmuVariant::BpDistLock | EmuVariant::Prim => Some(Variant::Both),
            EmuVariant::Clock => None,
        }
    }
}

impl fmt::Display for EmuVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A variant name that is not one of [`EmuVariant::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown emulator variant {0:?}; use lru, distlock, batching, bat-pref, pref, bp-distlock, prim or clock"
)]
pub struct UnknownVariant(pub String);

impl FromStr for EmuVariant {
    type Err = UnknownVariant;

    fn from_str(s: &str) -> Result<EmuVariant, UnknownVariant> {
        let lower = s.trim().to_ascii_lowercase();
        EmuVariant::ALL.into_iter().find(|v| v.name() == lower).ok_or_else(|| UnknownVariant(s.to_owned()))
    }
}

/// One emulator configuration (README E1–E7).
#[derive(Clone, Debug, PartialEq)]
pub struct EmuConfig {
    /// Which buffer variant.
    pub variant: EmuVariant,
    /// The replacement policy inside the wrappers (ignored by [`EmuVariant::Clock`]).
    pub policy: PolicyKind,
    /// D: pages of data, `0..data_pages`.
    pub data_pages: u32,
    /// C: frames of the buffer.
    pub buffer_pages: u32,
    /// T: worker threads.
    pub threads: usize,
    /// m: mean compute time after each access, in microseconds (exponentially distributed; 0 for
    /// none).
    pub compute_us: f64,
    /// Zipf exponent of the page choice (ignored in all-miss mode).
    pub zipf: f64,
    /// All-miss mode: each thread loops sequentially over all D pages from its own start, so
    /// (with D well above C) every access misses (Fig. 13).
    pub all_miss: bool,
    /// N: partitions of the partitioned variants.
    pub partitions: usize,
    /// L: free lists in all (split between partitions); 0 turns free lists off, so that every
    /// variant takes the lock to evict one victim per miss.
    pub free_lists: usize,
    /// F: victims reclaimed into an empty free list at once.
    pub reclaim: usize,
    /// Seed of the threads' page choices and compute times, and of randomized policies.
    pub seed: u64,
}

impl EmuConfig {
    /// The paper's setting for `variant`: D = 10M, C = 1M, 16 threads, LRU, 1 µs of compute,
    /// 64 partitions, 64 free lists, F = 64.
    #[must_use]
    pub fn new(variant: EmuVariant) -> EmuConfig {
        EmuConfig {
            variant,
            policy: PolicyKind::Lru,
            data_pages: 10_000_000,
            buffer_pages: 1_000_000,
            threads: 16,
            compute_us: 1.0,
            zipf: DEFAULT_ZIPF,
            all_miss: false,
            partitions: 64,
            free_lists: 64,
            reclaim: 64,
            seed: 42,
        }
    }

    /// Partitions actually built: N for the partitioned variants, else 1.
    #[must_use]
    pub fn effective_partitions(&self) -> usize {
        if self.variant.partitioned() {
            self.partitions
        } else {
            1
        }
    }

    /// Free lists per partition: `free_lists / partitions` (at least 1) for the variants with
    /// free lists, or `None` when misses evict one victim each (README E6).
    #[must_use]
    pub fn lists_per_partition(&self) -> Option<usize> {
        (self.variant.uses_free_lists() && self.free_lists > 0)
            .then(|| (self.free_lists / self.effective_partitions()).max(1))
    }

    /// F as used: `reclaim`, capped so that full free lists hold at most 1/16 of a partition's
    /// frames (at least 1 victim), or 1 without free lists (README E6). The cap only bites on
    /// small buffers: 64 lists of 64 victims need C >= 65,536.
    #[must_use]
    pub fn effective_reclaim(&self) -> usize {
        match self.lists_per_partition() {
            Some(lists) => {
                let smallest = self.buffer_pages as usize / self.effective_partitions();
                self.reclaim.min((smallest / (lists * FREE_SHARE)).max(1))
            }
            None => 1,
        }
    }

    /// Checks the sizes and parameters.
    ///
    /// # Errors
    /// The first [`EmuError`] found.
    pub fn validate(&self) -> Result<(), EmuError> {
        if self.threads == 0 {
            return Err(EmuError::NoThreads);
        }
        if self.data_pages == 0 || self.buffer_pages == 0 {
            return Err(EmuError::NoPages { data: self.data_pages, buffer: self.buffer_pages });
        }
        if !(self.compute_us.is_finite() && self.compute_us >= 0.0) {
            return Err(EmuError::Compute(self.compute_us));
        }
        if !(self.zipf.is_finite() && self.zipf >= 0.0) {
            return Err(EmuError::Zipf(self.zipf));
        }
        let n = self.effective_partitions();
        if n == 0 || n > self.buffer_pages as usize || n > self.data_pages as usize {
            return Err(EmuError::Partitions {
                partitions: self.partitions,
                buffer: self.buffer_pages,
                data: self.data_pages,
            });
        }
        if self.variant.uses_free_lists() && self.free_lists > 0 && self.reclaim == 0 {
            return Err(EmuError::Reclaim);
        }
        if self.all_miss && u64::from(self.data_pages) <= u64::from(self.buffer_pages) + self.threads as u64 {
            return Err(EmuError::AllMissFits { data: self.data_pages, buffer: self.buffer_pages });
        }
        Ok(())
    }
}

/// An emulator configuration that cannot run; each message says what to change.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// T = 0.
    #[error("the emulator needs at least one thread")]
    NoThreads,
    /// D or C is 0.
    #[error("data pages ({data}) and buffer pages ({buffer}) must both be at least 1")]
    NoPages {
        /// D.
        data: u32,
        /// C.
        buffer: u32,
    },
    /// A negative or non-finite compute time.
    #[error("mean compute time {0} us must be a finite number >= 0")]
    Compute(f64),
    /// A negative or non-finite Zipf exponent.
    #[error("Zipf exponent {0} must be a finite number >= 0 (0 is uniform)")]
    Zipf(f64),
    /// No partition, or more partitions than frames or pages.
    #[error(
        "{partitions} partitions do not fit {buffer} buffer pages and {data} data pages; \
         use between 1 and the smaller of the two"
    )]
    Partitions {
        /// N asked for.
        partitions: usize,
        /// C.
        buffer: u32,
        /// D.
        data: u32,
    },
    /// F = 0 with free lists on.
    #[error("the reclaim batch must be at least 1 victim (or turn free lists off with 0 lists)")]
    Reclaim,
    /// All-miss mode with the data fitting in the buffer (plus one page per thread).
    #[error(
        "all-miss mode needs more data pages ({data}) than buffer pages ({buffer}) plus threads; \
         raise the data pages (10 x the buffer is the paper's ratio)"
    )]
    AllMissFits {
        /// D.
        data: u32,
        /// C.
        buffer: u32,
    },
}

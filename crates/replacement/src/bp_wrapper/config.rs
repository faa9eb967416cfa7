//! The wrapper's parameters: which of the paper's techniques are on, S and T.
//!
//! The variants are spelled `locked-`, `bpw-pref-`, `bpw-batch-` and `bpw-` in policy names
//! (`Variant::PREFIXES`, parsed in `spec.rs`). S and T default to the paper's PostgreSQL setting (64 and 32);
//! `PolicySpec::build_with_queue` and the pool's `bp_queue_size` and `bp_batch_threshold` set
//! others, and `BpWrapper::with_config` refuses a T outside `1..=S` with [`BpConfigError`].

/// Which of the paper's two techniques are on (for the ablation).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum Variant {
    /// Every hit takes the lock and is forwarded at once: the "locked" baseline.
    None,
    /// Hits are queued and committed in batches; no pre-reading.
    Batching,
    /// Every hit takes the lock, after pre-reading what the critical section reads (`pgPref`).
    Prefetching,
    /// Batching, with the queue pre-read before every lock request.
    #[default]
    Both,
}

impl Variant {
    /// The prefixes that name the variants in policy names, one per variant (parsed by
    /// `PolicySpec`): `locked-` is the instrumented baseline (the lock on every access), `bpw-`
    /// the full wrapper, `bpw-batch-` and `bpw-pref-` the two techniques alone.
    pub(crate) const PREFIXES: [(&str, Variant); 4] = [
        ("locked-", Variant::None),
        ("bpw-batch-", Variant::Batching),
        ("bpw-pref-", Variant::Prefetching),
        ("bpw-", Variant::Both),
    ];

    /// The prefix that names the variant (also the prefix of the wrapper's `Policy::name`).
    pub(crate) fn prefix(self) -> &'static str {
        Variant::PREFIXES.iter().find(|(_, v)| *v == self).map_or("bpw-", |(p, _)| p)
    }

    pub(super) fn batches(self) -> bool {
        matches!(self, Variant::Batching | Variant::Both)
    }

    pub(super) fn prefetches(self) -> bool {
        matches!(self, Variant::Prefetching | Variant::Both)
    }
}

/// The wrapper's parameters.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct BpConfig {
    /// Which techniques are on.
    pub variant: Variant,
    /// S: a thread whose queue holds this many entries blocks on the lock to commit.
    pub queue_size: usize,
    /// T: from this many queued entries on, every access tries the lock without blocking.
    pub batch_threshold: usize,
}

impl BpConfig {
    /// Whether the wrapper can work with these parameters (what [`BpWrapper::with_config`]
    /// checks, for a caller that must refuse them before it does anything else).
    ///
    /// # Errors
    /// [`BpConfigError::Threshold`] unless `1 <= batch_threshold <= queue_size`;
    /// [`BpConfigError::QueueSize`] for a `queue_size` above [`MAX_QUEUE_SIZE`].
    ///
    /// [`BpWrapper::with_config`]: crate::BpWrapper::with_config
    pub fn check(&self) -> Result<(), BpConfigError> {
        if self.queue_size > MAX_QUEUE_SIZE {
            return Err(BpConfigError::QueueSize { size: self.queue_size });
        }
        if self.batch_threshold == 0 || self.batch_threshold > self.queue_size {
            return Err(BpConfigError::Threshold { threshold: self.batch_threshold, size: self.queue_size });
        }
        Ok(())
    }
}

impl Default for BpConfig {
    /// The paper's PostgreSQL setting: S = 64, T = 32, both techniques.
    fn default() -> BpConfig {
        BpConfig { variant: Variant::Both, queue_size: 64, batch_threshold: 32 }
    }
}

/// The largest queue size S: the wrapper allocates a ring of S entries (rounded up to a power
/// of two, 16 bytes each) for each of its `QUEUE_SLOTS`
/// slots, 64 MiB at this bound; a larger S would overflow the rounding or abort the process
/// on the allocation.
pub const MAX_QUEUE_SIZE: usize = 1 << 16;

/// A [`BpConfig`] the wrapper cannot work with.
#[derive(Copy, Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum BpConfigError {
    /// T must be at least 1 and at most S.
    #[error("batch threshold {threshold} must be between 1 and the queue size {size}; lower it or raise the queue size")]
    Threshold {
        /// The threshold asked for.
        threshold: usize,
        /// The queue size asked for.
        size: usize,
    },
    /// S must be at most [`MAX_QUEUE_SIZE`].
    #[error("queue size {size} is above the largest, {MAX_QUEUE_SIZE} (each of the wrapper's queues holds that many entries): lower it")]
    QueueSize {
        /// The queue size asked for.
        size: usize,
    },
}

//! The log manager. Its code is in `log_manager.rs`: reservation, publication, the writer
//! (group commit), open and truncation. This file holds the manager's public plain data: what
//! `open` does with damage in the durable log (README W7, W8), the choice a caller makes
//! ([`Recovery`]) and what `open` reports ([`OpenReport`], [`Damage`]), and the counters
//! ([`LogStats`]). It depends on nothing inside the crate, so that the error type can carry a
//! [`Damage`] without an import circle between the errors and the manager.

use swizzledb_sync::Lsn;

pub(crate) mod log_manager;

/// What `open` does when the frame that ends the log lies below a point an earlier sync round
/// made durable (README W8): damage in the durable log, not a torn tail. RocksDB calls the two
/// `kAbsoluteConsistency` and `kPointInTimeRecovery`; a torn tail (W7) is cut in both.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Recovery {
    /// Refuse to open with [`crate::LogError::DurableDamage`], changing nothing on disk: restore
    /// the log from a copy, or open with [`Recovery::PointInTime`] to accept the loss.
    #[default]
    Strict,
    /// Open at the last consistent point: the log ends at the damaged frame, everything from
    /// there on is dropped, and [`crate::LogManager::opened`] reports what was dropped. New
    /// records get LSNs above every frame that was dropped (W3).
    PointInTime,
}

/// How a committer waits for the sync round that makes its commit durable (README W6 steps 6
/// and 7). RocksDB offers the same choice as `enable_write_thread_adaptive_yield`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CommitWait {
    /// Spin out a round that was short last time while cores are free (step 6), and in a crowd
    /// keep one core awake by yielding it through a short round (step 7); sleep otherwise. It
    /// takes CPU the cores would otherwise spend idle (or halted, in a virtual machine): more
    /// commits per second where rounds are short and committers many.
    #[default]
    Adaptive,
    /// Always sleep until the round ends: no CPU spent waiting, at the cost of a wake-up per
    /// round, which a short round then waits for.
    Sleep,
}

/// What `open` found at the end of the log and cut (W7, W8): [`crate::LogManager::opened`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Bytes cut as a torn tail (W7): from the log's end to the end of the last bytes beyond it
    /// that were not zero (the zeros allocated there, W13, are not torn; a reused segment's old
    /// bytes are, W15), in the end segment and the later segment files removed. 0 after a clean
    /// close.
    pub torn_bytes: u64,
    /// Damage in the durable log that [`Recovery::PointInTime`] cut (W8); `None` otherwise.
    pub damage: Option<Damage>,
}

/// A damaged frame below a durable point (W8): the content of [`crate::LogError::DurableDamage`],
/// and of [`OpenReport::damage`] when [`Recovery::PointInTime`] cut the log there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The first frame that does not validate: where the log ends now (or would end).
    pub lsn: Lsn,
    /// A durable point above it: a sync marker (or a later segment's valid first frame) proves
    /// that every record below this LSN had been synced.
    pub durable: Lsn,
    /// Valid records found beyond the damage, all dropped by a cut (a lower bound).
    pub records_beyond: u64,
    /// Log bytes from the damaged frame to the end of the last valid frame beyond it.
    pub bytes_beyond: u64,
    /// What is wrong with the frame at `lsn`.
    pub reason: String,
}

/// Counters of a log's activity since it was opened. For every flush request exactly one of
/// `flush_already_durable`, `flush_led`, `flush_joined`, `flush_failed` is counted (W6).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Records appended.
    pub appends: u64,
    /// Body bytes appended.
    pub body_bytes: u64,
    /// Log bytes reserved: frame headers, alignment and segment padding included.
    pub log_bytes: u64,
    /// Times an appender found the ring full and had to wait for (or do) a write-out (W4).
    pub buffer_full_waits: u64,
    /// Calls of `flush` and `flush_all`.
    pub flush_requests: u64,
    /// Requests that found their LSN durable on entry and did no I/O.
    pub flush_already_durable: u64,
    /// Requests that led a sync round (each ran exactly one of the `fsyncs` rounds).
    pub flush_led: u64,
    /// Requests served by a round another thread (or the background flusher) ran.
    pub flush_joined: u64,
    /// Requests that returned an error.
    pub flush_failed: u64,
    /// Sync rounds run for flush requests: each writes the completed prefix and syncs every
    /// segment file it touched (one `sync`, or more when it crosses a segment boundary).
    pub fsyncs: u64,
    /// Sync rounds run by the background flusher.
    pub background_fsyncs: u64,
    /// `sync` calls on segment files, from every kind of round and write-out.
    pub file_syncs: u64,
    /// Segment files created (and allocated whole, README W13) for new segments.
    pub segments_created: u64,
    /// New segments that took a spare instead: a truncated segment's file, or one the background
    /// flusher prepared (W15).
    pub segments_recycled: u64,
    /// Spares the background flusher prepared, filled with zeros, ahead of need (W15).
    pub segments_prepared: u64,
    /// Waits for a sync round spent awake (W6 steps 6 and 7): spun out by a follower or a
    /// gathering leader, or kept awake by a crowd's keeper. Always 0 with
    /// [`CommitWait::Sleep`].
    pub busy_waits: u64,
}

impl LogStats {
    /// Successful flush requests per sync round: `(flush_requests - flush_failed) / (fsyncs +
    /// background_fsyncs)`, or 0 if there was no round. A request that found its LSN already
    /// durable was served by an earlier round, so it counts too.
    pub fn requests_per_fsync(&self) -> f64 {
        let rounds = self.fsyncs + self.background_fsyncs;
        if rounds == 0 {
            0.0
        } else {
            (self.flush_requests - self.flush_failed) as f64 / rounds as f64
        }
    }
}

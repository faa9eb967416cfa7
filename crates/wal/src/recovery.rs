//! What `open` does with damage in the durable log (README W7, W8): the choice a caller makes
//! ([`Recovery`]) and what `open` reports ([`OpenReport`], [`Damage`]). Plain data with no
//! dependency inside the crate, so that the error type can carry a [`Damage`].

use swizzledb_sync::Lsn;

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

/// What `open` found at the end of the log and cut (W7, W8): [`crate::LogManager::opened`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Bytes cut as a torn tail (W7): from the log's end to the end of the last bytes beyond it
    /// that were not zero (the zeros allocated there, W13, are not torn), in the end segment and
    /// the later segment files removed. 0 after a clean close.
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

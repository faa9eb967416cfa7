//! The log manager's errors. Each message says what went wrong and what the caller should do.

use crate::manager::Damage;
use std::io;
use std::path::PathBuf;
use swizzledb_sync::Lsn;

/// Everything a log operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The configuration cannot work (README W1, W2).
    #[error("invalid log configuration: {reason}; fix the LogConfig and open again")]
    BadConfig {
        /// What is wrong with it.
        reason: String,
    },

    /// The operating system refused a read, write, sync or directory change. If it was a write or
    /// a sync, the log is now failed (W11): every later append and flush returns
    /// [`LogError::Failed`].
    #[error("log I/O failed while {op} {path}: {source}; check the disk, then reopen the log")]
    Io {
        /// What the log was doing (`"writing"`, `"syncing"`, ...).
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// An earlier write or sync failed, so records may be lost from the tail (W11).
    #[error(
        "the log failed earlier ({cause}); nothing more can be appended or flushed: close and reopen it"
    )]
    Failed {
        /// The first failure.
        cause: String,
    },

    /// [`crate::LogManager::append_framed`] got fewer bytes than the room in front of a body.
    #[error("a framed append got {len} bytes, fewer than the {room} bytes of room in front of a body; put FRAME_ROOM bytes before the body")]
    NoFrameRoom {
        /// The length of the buffer given.
        len: usize,
        /// [`crate::FRAME_ROOM`].
        room: usize,
    },

    /// A body longer than the largest record the configuration allows (W2).
    #[error("log record of {len} bytes exceeds the maximum of {max} bytes; split it or raise buffer_bytes")]
    RecordTooLarge {
        /// The body's length.
        len: usize,
        /// The largest body this log accepts.
        max: usize,
    },

    /// Valid records follow a damaged frame: the log is damaged in the middle, not torn at the
    /// tail (W8), so durable records would be lost by ignoring the damage.
    #[error("log corrupted at {lsn}: {reason}; restore the log from a copy, do not reopen it as is")]
    Corrupted {
        /// The LSN of the first frame that does not validate.
        lsn: Lsn,
        /// What was found there.
        reason: String,
    },

    /// The frame that ends the log lies below a point an earlier sync round made durable, as a
    /// sync marker (or a later segment's valid first frame) beyond it proves (W8): damage in the
    /// durable log, not a torn tail. Acknowledged records would be lost by cutting there, so
    /// `open` refuses and changes nothing, unless opened with [`crate::Recovery::PointInTime`].
    #[error(
        "log damaged at {} ({}), below {} which an earlier sync made durable: {} valid records ({} bytes) \
         beyond the damage would be lost; restore the log from a backup, or open with point-in-time \
         recovery (Recovery::PointInTime) to accept losing everything from {} on",
        .0.lsn, .0.reason, .0.durable, .0.records_beyond, .0.bytes_beyond, .0.lsn
    )]
    DurableDamage(Box<Damage>),

    /// The LSN lies beyond the end of the log.
    #[error("{lsn} was never appended (the log ends at {end}); pass an LSN that append returned")]
    NotAppended {
        /// The LSN asked for.
        lsn: Lsn,
        /// The log's end at the time.
        end: Lsn,
    },

    /// No record starts at this LSN.
    #[error("no record starts at {lsn}: {reason}; pass an LSN that append or scan returned")]
    NotARecord {
        /// The LSN asked for.
        lsn: Lsn,
        /// What was found there.
        reason: String,
    },

    /// The LSN lies in a segment that `truncate_before` removed (W9).
    #[error("{lsn} was truncated (the oldest record kept is at {oldest}); read from {oldest} or later")]
    Truncated {
        /// The LSN asked for.
        lsn: Lsn,
        /// The first LSN still kept.
        oldest: Lsn,
    },

    /// A run of the log archive is damaged (A3): its header, index or an entry fails its
    /// checksum or does not fit, or its interval does not fit the runs around it.
    #[error("log archive run {} is damaged: {reason}; restore the archive from a copy, or rebuild it from the log if the log still holds the run's interval", run.display())]
    ArchiveCorrupted {
        /// The run file.
        run: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// The master record exists but is damaged (W10).
    #[error("the master record is damaged ({reason}); restart must scan the log from its oldest record")]
    MasterCorrupted {
        /// What is wrong with it.
        reason: String,
    },
}

/// The log manager's result type.
pub type Result<T, E = LogError> = std::result::Result<T, E>;

impl LogError {
    /// An [`LogError::Io`] for `op` on `path`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> LogError {
        LogError::Io { op, path: path.into(), source }
    }
}

//! SwizzleDB's write-ahead log manager.
//!
//! The log is a sequence of opaque records (`&[u8]` bodies; the record types live in the layer
//! above). Each record gets an [`Lsn`]: the byte offset of its frame in one global, monotone log
//! space that is cut into fixed-size segment files. Threads append concurrently: a record's
//! space is reserved in a short critical section, its bytes are copied into a ring buffer with
//! no lock held, and a writer moves the contiguous completed prefix to the segment files.
//! `flush` is a group commit: one thread writes and syncs for every thread waiting. `open`
//! finds the end of the log at the first frame that does not validate and cuts the torn tail.
//! `README.md` holds the rules (W1..W13) that the code and tests cite.
//!
//! ```
//! use swizzledb_wal::{LogConfig, LogManager};
//!
//! let dir = tempfile::tempdir()?;
//! let log = LogManager::open(LogConfig::new(dir.path()))?;
//! let a = log.append(b"first")?;
//! let b = log.append(b"second")?;
//! log.flush(b)?; // both records are durable now
//! assert!(a < b && b < log.durable());
//! log.close()?;
//!
//! let log = LogManager::open(LogConfig::new(dir.path()))?;
//! let records: Vec<_> = log.scan(swizzledb_wal::Lsn(0))?.collect::<Result<_, _>>()?;
//! assert_eq!(records, vec![(a, b"first".to_vec()), (b, b"second".to_vec())]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod archive;
pub mod error;
mod frame;
mod manager;
mod master;
mod publish;
mod ring;
mod segment;

pub use archive::{Archive, Between as ArchiveBetween, Entry as ArchiveEntry, RunBuilder, RunSummary};
pub use error::{LogError, Result};
pub use frame::FRAME_ROOM;
pub use manager::log_manager::{LogConfig, LogManager, LogScan};
pub use manager::{CommitWait, Damage, LogStats, OpenReport, Recovery};
pub use segment::is_spare;
pub use swizzledb_sync::Lsn;

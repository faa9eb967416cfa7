//! What can go wrong writing or reading a trace. A leaf module (nothing else of the crate), so
//! the crate's `BufferError` can wrap it without a cycle.

use std::io;
use std::path::{Path, PathBuf};

/// What can go wrong writing or reading a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The operating system reported an I/O error on a trace or CSV file.
    #[error("I/O error on {file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The file does not start with the trace magic.
    #[error("{file} is not a SwizzleDB trace ({reason}); record one with `swizzledb trace record`")]
    NotATrace {
        /// The file.
        file: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file was written in another format version.
    #[error("{file} has trace format version {found}; this build reads version {expected}")]
    Version {
        /// The file.
        file: PathBuf,
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The file ends inside a header, block or event (e.g. the recording process was killed).
    #[error(
        "{file} is truncated: the {what} at byte {offset} is incomplete (the recording did not \
         finish; events before it are usable)"
    )]
    Truncated {
        /// The file.
        file: PathBuf,
        /// Byte offset where the incomplete part starts.
        offset: u64,
        /// What is incomplete: "header", "block header", "block".
        what: &'static str,
    },
    /// A block or event that cannot be decoded.
    #[error("{file} is corrupted at byte {offset}: {reason}")]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// Byte offset of the bad block or event.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// An event given to [`TraceWriter::write`](super::TraceWriter::write) that the format cannot represent.
    #[error("invalid trace event: {reason}")]
    InvalidEvent {
        /// What is wrong with it.
        reason: String,
    },
}

pub(super) fn io_err(file: &Path) -> impl FnOnce(io::Error) -> TraceError + '_ {
    move |source| TraceError::Io { file: file.to_path_buf(), source }
}

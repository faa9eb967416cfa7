//! What goes wrong in LMDB, apart from the adapter (`lmdb.rs`), so that the workloads' error
//! type can name it without importing the adapter that returns it.

use swizzledb_peers::heed;
use swizzledb_peers::PeersError;

/// What went wrong in LMDB.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LmdbError {
    /// The environment could not be created.
    #[error(transparent)]
    Create(#[from] PeersError),
    /// The data outgrew the map.
    #[error(
        "LMDB's map of {map_mib} MiB is full: the data outgrew the size reserved for it; shorten the run \
         (--duration, --repeat, fewer inserting workloads) or report the sizing as a bug"
    )]
    MapFull {
        /// The map's size.
        map_mib: u64,
    },
    /// A table the workload needs is not there.
    #[error("LMDB: no table {0}; load the workload first")]
    NoTable(String),
    /// A table created twice.
    #[error("LMDB: the table {0} exists already")]
    TableExists(String),
    /// Any other error of LMDB or heed.
    #[error("LMDB: {0}")]
    Heed(#[from] heed::Error),
}

//! The contract between a workload and whatever runs it.
//!
//! A workload owns its schema and its random choices; the harness owns threads, time and
//! counting. The life of a workload over one database:
//!
//! 1. [`Workload::load`] once, on an empty database: creates the trees and the initial records.
//! 2. [`Workload::worker`] once per thread (and again for every measurement): the thread's state
//!    (tree handles, random generator, anything that must be unique per thread).
//! 3. [`Workload::run_one`] repeatedly on each thread: one operation (for TPC-C one
//!    transaction, retried inside until it commits or rolls back), returning its [`Outcome`].
//! 4. [`Workload::verify`] after the threads stopped: the workload's invariants hold, or a
//!    [`WorkloadError::Inconsistent`] names the one that does not.

//!
//! The workloads: [`tpcc`], [`tpcb`] and [`ycsb`]; what their bench drivers share is in
//! `bench.rs`, their transactions' common pieces in `txn.rs`.

pub(crate) mod bench;
pub mod tpcb;
pub mod tpcc;
pub(crate) mod txn;
pub mod ycsb;

use swizzledb::Database;

/// What one [`Workload::run_one`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Index of the operation's kind in [`Workload::kinds`].
    pub kind: usize,
    /// Times its body ran: 1, plus one per retry after a failed lock request.
    pub attempts: u32,
    /// It ended in a rollback the workload asked for (TPC-C's invalid New-Order items), not a
    /// commit.
    pub rolled_back: bool,
}

/// A workload: load, run one operation per thread, verify, over a database of type `Db`:
/// SwizzleDB's [`Database`] unless the workload runs on any [`crate::engine::Engine`] (YCSB).
pub trait Workload<Db: ?Sized = Database>: Send + Sync {
    /// Per-thread state, made by [`Workload::worker`].
    type Worker: Send;

    /// Short name, used in tables and file names.
    fn name(&self) -> &'static str;

    /// Names of the operation kinds [`Outcome::kind`] indexes.
    fn kinds(&self) -> &'static [&'static str];

    /// Creates the trees and the initial records in an empty database.
    ///
    /// # Errors
    /// The database failed, or its trees exist already.
    fn load(&self, db: &Db) -> Result<(), WorkloadError>;

    /// State for thread number `thread` of a run on `db` (loaded before).
    ///
    /// # Errors
    /// The workload's trees are missing.
    fn worker(&self, db: &Db, thread: usize) -> Result<Self::Worker, WorkloadError>;

    /// Runs one operation to its end (commit or rollback).
    ///
    /// # Errors
    /// The database failed, or a record the workload needs is missing or damaged.
    fn run_one(&self, db: &Db, worker: &mut Self::Worker) -> Result<Outcome, WorkloadError>;

    /// Checks the workload's invariants; call it while no operation runs.
    ///
    /// # Errors
    /// [`WorkloadError::Inconsistent`] for the first invariant that fails, or a database error.
    fn verify(&self, db: &Db) -> Result<(), WorkloadError>;
}

/// Every error of a workload or of the harness running it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A parameter is out of range (bad input: nothing was run).
    #[error("{0}")]
    Config(String),
    /// A file or directory named on the command line cannot be used (nothing was run): the
    /// command exits as for [`crate::UnusablePath`].
    #[error("{0}")]
    UnusablePath(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] swizzledb::Error),
    /// LMDB failed (a peer engine, `--engine lmdb`).
    #[cfg(feature = "lmdb")]
    #[error(transparent)]
    Lmdb(#[from] crate::engine::lmdb_error::LmdbError),
    /// A record the workload wrote is not there.
    #[error("{table}: no record {key}; the database was not loaded by this workload, or it is damaged")]
    Missing {
        /// The tree.
        table: &'static str,
        /// The key, decoded.
        key: String,
    },
    /// A record has the wrong size for its table.
    #[error("{table}: a record of {len} bytes where {expected} were expected; the database is damaged")]
    Corrupt {
        /// The tree.
        table: &'static str,
        /// Bytes found.
        len: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// An invariant of the workload does not hold.
    #[error("consistency condition {condition} fails: {detail}")]
    Inconsistent {
        /// Which one (for TPC-C the clause number, e.g. `3.3.2.1`).
        condition: &'static str,
        /// Where and by how much.
        detail: String,
    },
    /// Writing results failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A worker thread panicked.
    #[error("a worker thread panicked: {0}")]
    Panicked(String),
}

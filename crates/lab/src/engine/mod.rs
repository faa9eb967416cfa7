//! Engine adapters: what a workload needs of a storage engine, so that the same workload runs
//! on SwizzleDB and on its peers in one harness.
//!
//! [`Engine`] is small on purpose: tables of byte keys and values, and two levels of use.
//!
//! - **Single operations** (what YCSB makes), each atomic (a transaction of its own): a read
//!   that borrows the value through a closure, an update of an existing record, an insert, a
//!   scan of n records from a key, and a read-modify-write; a bulk load in batches; walks over
//!   a table (or a key range of it) for checks.
//! - **Transactions over several tables** (what TPC-C makes): [`Engine::transact`] runs a body
//!   on a [`TxWrite`] (point reads, inserts, puts, in-place updates, deletes, and scans of the
//!   first n records of a key range, forward or backward), [`Engine::transact_read`] a
//!   read-only body on a [`TxRead`]. The body returns [`Abort::Rollback`] to roll back; any
//!   other error rolls back and is returned.
//!
//! Every operation and transaction returns how many times it ran (1, plus one per retry after
//! SwizzleDB refused a lock: a deadlock's victim).
//!
//! | engine | adapter | transactions |
//! |---|---|---|
//! | SwizzleDB | `impl Engine for swizzledb::Database` | [`Database::transact`], [`Database::transact_snapshot`] for [`Engine::transact_read`] and [`Database::begin_read_committed`] for [`Engine::transact_read_committed`]; `TxRead` and `TxWrite` are `swizzledb::Transaction` itself, so the workloads make exactly the calls they made before there were adapters |
//! | LMDB | [`Lmdb`] (feature `lmdb`, through heed) | one write transaction per write or [`Engine::transact`] (LMDB serializes writers), one read transaction per read, scan or [`Engine::transact_read`] |

mod contract;
mod database;
#[cfg(feature = "lmdb")]
mod lmdb;
#[cfg(feature = "lmdb")]
pub(crate) mod lmdb_error;

pub use contract::{Engine, EngineName, TxRead, TxWrite};
#[cfg(feature = "lmdb")]
pub use lmdb::{Lmdb, LmdbError, LmdbRead, LmdbReadTxn, LmdbTable, LmdbWrite};

pub use crate::workloads::txn::Abort;

#[cfg(doc)]
use swizzledb::Database;

//! The lab: SwizzleDB's experiments as a library, so that the `swizzledb` command only parses
//! arguments and a new workload is one folder.
//!
//! - [`workload`]: the [`Workload`] contract (load, run one operation on a thread, verify) and
//!   its error type.
//! - [`harness`]: runs a workload on several threads for a time or a number of operations and
//!   counts what finished, per operation kind.
//! - [`tpcc`]: TPC-C (all five transactions, the nine tables and two secondary indexes), laid out
//!   as vmcache's public driver lays it out, and the `bench tpcc` experiment.
//! - [`tpcb`]: TPC-B (branches, tellers, accounts, history; one transaction moving a random
//!   delta), its consistency conditions, and the `bench tpcb` experiment.
//! - [`ycsb`]: the YCSB core workloads A–F over one table (scrambled zipfian and `latest`
//!   requests, scans, read-modify-writes, inserts), every record checked afterwards, and the
//!   `bench ycsb` experiment.
//!
//! ```
//! use swizzledb_lab::tpcc::{Tpcc, TpccConfig};
//! use swizzledb_lab::{harness, Workload};
//! # let dir = tempfile::tempdir()?;
//! let db = swizzledb::Database::builder().logging(false).create(&dir.path().join("t.swz"))?;
//! let tpcc = Tpcc::new(TpccConfig::tiny(1))?;
//! tpcc.load(&db)?;
//! let m = harness::run(&tpcc, &db, 1, harness::Until::Operations(200))?;
//! assert_eq!(m.operations(), 200);
//! tpcc.verify(&db)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod bench;
pub mod harness;
pub mod tpcb;
pub mod tpcc;
mod txn;
pub mod workload;
pub mod ycsb;

pub use workload::{Outcome, Workload, WorkloadError};

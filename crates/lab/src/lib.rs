//! The lab: SwizzleDB's workloads, benchmarks and paper experiments as a library. The
//! `swizzledb` command only holds the command tree; every command's options, run, tables,
//! checks and output files live here.
//!
//! - [`workloads`]: the [`Workload`] contract (load, run one operation on a thread, verify) and
//!   the workloads: [`workloads::tpcc`] (TPC-C: all five transactions, the nine tables and two
//!   secondary indexes, laid out as vmcache's public driver lays it out), [`workloads::tpcb`]
//!   (TPC-B: branches, tellers, accounts, history; one transaction moving a random delta, and
//!   its consistency conditions) and [`workloads::ycsb`] (the YCSB core workloads A–F over one
//!   table, every record checked afterwards).
//! - [`harness`]: the harnesses that run workloads and buffer measurements, and the shape every
//!   experiment has ([`harness::experiment`]).
//! - [`engine`]: the engine adapter YCSB runs on: SwizzleDB's `Database`, and LMDB (feature
//!   `lmdb`) beside it.
//! - [`experiments`]: every benchmark and experiment, by kind: `bench/`, `papers/<paper>/`,
//!   `tools/`.
//! - [`reproduce`]: every figure of the five papers and the report of them.
//! - [`support`]: the shared pieces every experiment uses (medians and intervals, number
//!   formatting, result files, charts, option parsers, progress).
//!
//! ```
//! use swizzledb_lab::workloads::tpcc::{Tpcc, TpccConfig};
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

pub mod engine;
pub mod experiments;
pub mod harness;
pub mod reproduce;
pub mod support;
pub mod workloads;

pub use workloads::bench::Setting;
pub use workloads::{Outcome, Workload, WorkloadError};

/// Bad input found before anything ran or was written: the command exits with status 2
/// ([`EXIT_USAGE`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A file or directory named on the command line cannot be used: an input that is missing or
/// cannot be read, an output (`--out`, `--dir`, ...) that cannot be created or written. The
/// command exits with status 3 ([`EXIT_UNUSABLE_PATH`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UnusablePath(pub String);

/// Exit status: the command failed, or what it checks was found broken (a check of an
/// experiment, damage found by `verify`).
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad arguments ([`Usage`], and clap's own usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: a file or directory named on the command line cannot be read or written
/// ([`UnusablePath`]).
pub const EXIT_UNUSABLE_PATH: u8 = 3;
/// Exit status of `verify` only: damage found in a file not at rest (a logged database not
/// closed cleanly, which restart may repair, or one open in a `Database`).
pub const EXIT_DAMAGE_NOT_AT_REST: u8 = 4;

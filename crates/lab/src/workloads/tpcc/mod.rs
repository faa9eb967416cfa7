//! TPC-C (TPC Benchmark C, revision 5.11) as a [`Workload`]: the nine tables, the
//! customer-name and order-by-customer indexes, the five transactions in the standard mix
//! (New-Order 45%, Payment 43%, Order-Status, Delivery and Stock-Level 4% each) without think
//! time, and the consistency conditions 1–4 (clause 3.3.2) as [`Workload::verify`].
//!
//! It follows vmcache's public driver (Leis et al., SIGMOD 2023; `tpcc/` of its repository)
//! so that throughput compares directly: the same trees and key columns (one B-tree per table,
//! history keyed by a per-thread stream and counter, the `order_wdc` index by customer), the
//! same record sizes ([`schema`]), the same NURand constants ([`random`]), each transaction
//! picking its home warehouse uniformly, 1% remote order lines and 15% remote payments, 60% of
//! Payment and Order-Status by last name, and Delivery taking the oldest new order of each
//! district by a one-record range scan and deleting it (vmcache's `tpcc_remove`).
//!
//! Deviations, from vmcache and from the specification:
//! - **Rollbacks:** 1% of New-Orders name an unused item and roll back (clause 2.4.1.4;
//!   vmcache has this switched off). The items are read before anything is written, so the
//!   rollback undoes nothing: with locking off, undoing the district's order counter would undo
//!   other transactions' increments too. A rolled-back New-Order counts as a transaction and a
//!   New-Order, as the specification counts them, and is reported apart.
//! - **Money and rates** are integers (cents, and 1/10000 for tax and discount) instead of
//!   vmcache's `double`, so that condition 1 compares exact sums. Initial `W_YTD` and `D_YTD` are
//!   the specification's 300,000.00 and 30,000.00 (vmcache loads 3,000,000 for both, so its
//!   condition 1 does not hold), and the new-order table starts with orders 2101..=3000 as the
//!   specification says (vmcache: 2100..=3000).
//! - **New-Order** takes `S_DIST_xx` from the supply warehouse's stock record it updates (the
//!   specification; vmcache reads the home warehouse's stock record again for it), and inserts
//!   its order lines before its new-order record, so that a Delivery finds only whole orders
//!   even with locking off.
//! - **Atomic updates with locking off:** every read-modify-write of one record (a district's
//!   order counter, a stock's quantity, year-to-date sums, balances) goes through
//!   `Transaction::update_with`, one descent that reads and writes under the leaf's exclusive
//!   latch as vmcache's in-place update does (no other latch is needed); a Delivery claims an
//!   order by deleting its new-order record and skips the district if another one deleted it
//!   first. So the consistency conditions hold after a run with locking off too. With locking
//!   on, the record locks also keep transactions apart.
//! - Every transaction runs through the engine adapter's [`Engine::transact`] (Order-Status
//!   and Stock-Level through [`Engine::transact_read`]): on SwizzleDB that is
//!   [`Database::transact`], which retries a transaction whose lock request failed (a
//!   deadlock's victim; the retries are counted), and for the two read-only ones
//!   [`Database::transact_snapshot`], whose reads take no locks where the database keeps
//!   versions (locking on: LOCKS.md K21, K24, as InnoDB's consistent reads) and which
//!   commits without logging; on LMDB one write transaction (LMDB serializes writers, so no
//!   latches are taken) or one read-only snapshot.
//! - **Stock-Level at read committed** ([`TpccConfig::stock_level_read_committed`], on by
//!   default): TPC-C asks only level 1 isolation of Stock-Level (clause 3.4.1: no dirty reads),
//!   so it runs through [`Engine::transact_read_committed`] — on SwizzleDB
//!   `Database::begin_read_committed` (LOCKS.md K25), whose reads each see what was committed
//!   when they began and which holds no snapshot across the transaction, so the writers that
//!   end while it runs keep no versions for it. Off: at a snapshot, as Order-Status (which
//!   needs level 3) always reads.
//! - **Read-only fields** ([`TpccConfig::committed_reads`], on by default): New-Order reads its
//!   items, `W_TAX` and `C_DISCOUNT`, which no transaction changes, through
//!   [`TxRead::get_committed_with`](crate::engine::TxRead::get_committed_with), the engine's
//!   own read outside the transaction: no record lock and no wait, as TPC-C's `SELECT`s of them
//!   run on InnoDB (consistent reads). Every version of those records holds the same values
//!   there, so the schedule stays serializable (clause 3.4's level 3). Off: locking reads, as
//!   Shore-MT ran them (`experiment graefe-fig14` always).
//! - **Scale-down** for tests only: [`TpccConfig::tiny`] has fewer items and customers per
//!   district; [`TpccConfig::standard`] is the specification's 100,000 and 3,000.

mod bench;
mod check;
mod load;
pub mod random;
mod run;
pub mod schema;
mod txns;
mod workload;

#[cfg(doc)]
use crate::engine::Engine;
#[cfg(doc)]
use crate::workloads::Workload;
#[cfg(doc)]
use swizzledb::Database;

pub use bench::{
    cut_short_note, print_table, run_bench, BenchPlan, BenchRow, TpccPlan, TpccRow, CSV_COLUMNS,
};
pub use workload::{Tpcc, TpccConfig, TpccWorker, DISTRICTS, KINDS};

//! TPC-B (TPC Benchmark B, revision 2.0) as a [`Workload`], the benchmark Gilbert and Lersch
//! measured buffer and log designs with: branches, tellers (10 per branch), accounts (100,000
//! per branch) and an insert-only history, and the one transaction of the specification: pick a
//! teller, which fixes the branch, and an account; add a random delta in [-999,999, 999,999] to
//! the account's, the teller's and the branch's balance; insert a history row. The account
//! belongs to the teller's branch 85% of the time and, when there is more than one branch, to
//! another branch, chosen uniformly, the other 15%, as the specification says.
//!
//! [`Workload::verify`] checks the specification's consistency conditions, per branch and with
//! the history: the branch's balance equals the sum of its tellers' balances and the sum of the
//! deltas of the history rows written at its tellers; the sum of its accounts' balances equals
//! the sum of the history deltas on its accounts. Summed over the branches these give the
//! specification's condition that account, teller and branch balances all add up to the same
//! total. (An account of another branch is credited 15% of the time, so a branch's accounts do
//! not sum to the branch's balance; the history says how much went where.) The number of
//! history rows equals the number of committed transactions too, but a database does not know
//! how many those were.
//!
//! Deviations from the specification, as in the papers' runs: no terminals and no think time
//! (every thread runs transactions back to back), no response-time limit, and any scale
//! ([`TpcbConfig::tiny`] has fewer accounts, for tests). Each transaction runs through
//! [`Database::transact`], which retries it when its lock request fails (a deadlock's victim). With locking off,
//! each balance's read-modify-write (a read, then a write) holds a workload latch striped by
//! key, so the conditions hold after a run with locking off too.

mod bench;
mod check;
mod config;
pub mod schema;
mod workload;

#[cfg(doc)]
use crate::workloads::Workload;
#[cfg(doc)]
use swizzledb::Database;

pub use bench::{print_table, run_bench, BenchPlan, BenchRow, Propagation, TpcbPlan, TpcbRow, CSV_COLUMNS};
pub use config::{TpcbConfig, TELLERS};
pub use workload::{Tpcb, TpcbWorker, KINDS};

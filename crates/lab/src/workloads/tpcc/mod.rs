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
//! - **Scale-down** for tests only: [`TpccConfig::tiny`] has fewer items and customers per
//!   district; [`TpccConfig::standard`] is the specification's 100,000 and 3,000.

mod bench;
mod check;
mod load;
pub mod random;
pub mod schema;
mod txns;

use std::sync::atomic::{AtomicU32, Ordering};
#[cfg(doc)]
use swizzledb::Database;
use swizzledb::Tree;

use crate::engine::{Abort, Engine, TxRead, TxWrite};
use crate::workloads::{Outcome, Workload, WorkloadError};
use random::TpccRng;
use schema::{check_size, show_key, Field, Record, Scalar, TREES};

pub use bench::{cut_short_note, print_table, run_bench, BenchPlan, BenchRow, TpccRow, CSV_COLUMNS};

/// Districts per warehouse (fixed by the specification).
pub const DISTRICTS: u32 = 10;

/// Indexes of the trees in [`Tables`].
pub(crate) mod t {
    pub const WAREHOUSE: usize = 0;
    pub const DISTRICT: usize = 1;
    pub const CUSTOMER: usize = 2;
    pub const CUSTOMER_NAME: usize = 3;
    pub const HISTORY: usize = 4;
    pub const NEW_ORDER: usize = 5;
    pub const ORDER: usize = 6;
    pub const ORDER_CUSTOMER: usize = 7;
    pub const ORDER_LINE: usize = 8;
    pub const ITEM: usize = 9;
    pub const STOCK: usize = 10;
}

/// The operation kinds, in [`Outcome::kind`] order.
pub const KINDS: [&str; 5] = ["new-order", "payment", "order-status", "delivery", "stock-level"];

/// How large the database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpccConfig {
    /// Warehouses (the scale factor).
    pub warehouses: u32,
    /// Items, and stock records per warehouse (specification: 100,000).
    pub items: u32,
    /// Customers, and initial orders, per district (specification: 3,000).
    pub customers: u32,
    /// Remote order lines (1%) and payments (15%) when there is more than one warehouse.
    pub remote: bool,
    /// Seed of the loader's and the workers' random generators.
    pub seed: u64,
}

impl TpccConfig {
    /// The specification's scale: 100,000 items, 3,000 customers per district.
    #[must_use]
    pub fn standard(warehouses: u32) -> Self {
        TpccConfig { warehouses, items: 100_000, customers: 3_000, remote: true, seed: 0x7C5C }
    }

    /// For tests and smoke runs (`--small-catalog` of the Gilbert experiments): 2,000 items and
    /// 300 customers per district, so a warehouse loads in well under a second in a debug build. Everything else is as in [`TpccConfig::standard`].
    #[must_use]
    pub fn tiny(warehouses: u32) -> Self {
        TpccConfig { items: 2_000, customers: 300, ..TpccConfig::standard(warehouses) }
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the parameter.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |s: String| Err(WorkloadError::Config(s));
        if !(1..=10_000).contains(&self.warehouses) {
            return bad(format!("--warehouses {} is out of range; use 1 to 10000", self.warehouses));
        }
        if !(100..=1_000_000).contains(&self.items) {
            return bad(format!("{} items is out of range; use 100 to 1000000", self.items));
        }
        if !(30..=100_000).contains(&self.customers) {
            return bad(format!(
                "{} customers per district is out of range; use 30 to 100000",
                self.customers
            ));
        }
        Ok(())
    }

    /// Orders per district loaded as delivered (the first 70%: 2,100 of 3,000).
    fn delivered(&self) -> u32 {
        self.customers * 7 / 10
    }

    /// The largest last-name number in use: names 0..=999 are given to the first 1,000
    /// customers of each district, so with fewer customers fewer names exist.
    fn max_name(&self) -> u32 {
        999.min(self.customers - 1)
    }

    /// Bytes the loaded database holds in its records, keys included (a lower bound of its
    /// size in pages).
    #[must_use]
    pub fn record_bytes(&self) -> u64 {
        let (w, i, c) = (u64::from(self.warehouses), u64::from(self.items), u64::from(self.customers));
        let d = w * u64::from(DISTRICTS);
        // Record plus key, per table.
        let items = i * (schema::Item::SIZE as u64 + 4);
        let stock = w * i * (schema::Stock::SIZE as u64 + 8);
        let customers =
            d * c * (schema::Customer::SIZE as u64 + 12 + 4 + 40 + schema::History::SIZE as u64 + 8);
        let orders =
            d * c * (schema::Order::SIZE as u64 + 12 + 16 + 10 * (schema::OrderLine::SIZE as u64 + 16));
        items + stock + customers + orders
    }
}

/// The trees, opened (SwizzleDB's [`Tree`]s, or another engine's tables).
pub(crate) struct Tables<T = Tree>([T; 11]);

impl<T> Tables<T> {
    fn open<E: Engine<Table = T>>(db: &E) -> Result<Tables<T>, WorkloadError> {
        let tables: Vec<T> = TREES.iter().map(|n| db.table(n)).collect::<Result<_, _>>()?;
        Ok(Tables(tables.try_into().unwrap_or_else(|_| unreachable!("eleven names give eleven trees"))))
    }

    pub(crate) fn tree(&self, i: usize) -> &T {
        &self.0[i]
    }
}

/// TPC-C over one database.
pub struct Tpcc {
    config: TpccConfig,
    /// History key streams handed out (to the loader and to each worker).
    streams: AtomicU32,
}

/// A thread's state (over SwizzleDB's trees, or another engine's tables).
pub struct TpccWorker<T = Tree> {
    tables: Tables<T>,
    rng: TpccRng,
    /// History key: this worker's stream and its next sequence number.
    stream: u32,
    sequence: u32,
}

impl Tpcc {
    /// TPC-C at the scale of `config`.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] if a parameter is out of range.
    pub fn new(config: TpccConfig) -> Result<Tpcc, WorkloadError> {
        config.validate()?;
        Ok(Tpcc { config, streams: AtomicU32::new(0) })
    }

    /// The scale.
    #[must_use]
    pub fn config(&self) -> &TpccConfig {
        &self.config
    }

    fn next_stream(&self) -> u32 {
        self.streams.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads, changes and writes back one record atomically ([`TxWrite::update_with`]: on
    /// SwizzleDB one descent under the leaf's exclusive latch): `change` gets the stored bytes
    /// and the buffer for the new ones. A missing record is an error.
    fn change<X: TxWrite, R: Record, T>(
        &self,
        tx: &mut X,
        tree: &X::Table,
        key: &[u8],
        change: impl FnOnce(&[u8], &mut Vec<u8>) -> Result<T, WorkloadError>,
    ) -> Result<T, Abort> {
        match tx.update_with(tree, key, change)? {
            Some(out) => Ok(out?),
            None => Err(missing(R::TABLE, key).into()),
        }
    }

    /// [`Tpcc::update`] that changes fields in place ([`Field::set`]) on a copy of the encoded
    /// record instead of decoding it and encoding it again: `f` gets the record's bytes, of the
    /// right size.
    fn patch<X: TxWrite, R: Record, T>(
        &self,
        tx: &mut X,
        tree: &X::Table,
        key: &[u8],
        f: impl FnOnce(&mut [u8]) -> T,
    ) -> Result<T, Abort> {
        self.change::<X, R, T>(tx, tree, key, |old, new| {
            // A damaged record is written back as it was, and reported.
            new.extend_from_slice(old);
            check_size::<R>(old).map(|()| f(new))
        })
    }

    /// Reads, changes and writes back one record, decoded.
    fn update<X: TxWrite, R: Record, T>(
        &self,
        tx: &mut X,
        tree: &X::Table,
        key: &[u8],
        f: impl FnOnce(&mut R) -> T,
    ) -> Result<T, Abort> {
        self.change::<X, R, T>(tx, tree, key, |old, new| match R::decode(old) {
            Ok(mut r) => {
                let out = f(&mut r);
                r.encode_into(new);
                Ok(out)
            }
            Err(e) => {
                // Damaged: write back what was there, and report it.
                new.extend_from_slice(old);
                Err(e)
            }
        })
    }
}

/// Reads one field of a record that must exist, without decoding the rest.
pub(crate) fn field<R: Record, T: Scalar, X: TxRead>(
    tx: &X,
    tree: &X::Table,
    key: &[u8],
    f: &Field<R, T>,
) -> Result<T, Abort> {
    match tx.get_with(tree, key, |v| v.map(|b| check_size::<R>(b).map(|()| f.get(b))))? {
        Some(r) => Ok(r?),
        None => Err(missing(R::TABLE, key).into()),
    }
}

/// Reads a record that must exist.
pub(crate) fn get<R: Record, X: TxRead>(tx: &X, tree: &X::Table, key: &[u8]) -> Result<R, Abort> {
    match tx.get_with(tree, key, |v| v.map(R::decode))? {
        Some(r) => Ok(r?),
        None => Err(missing(R::TABLE, key).into()),
    }
}

pub(crate) fn missing(table: &'static str, key: &[u8]) -> WorkloadError {
    WorkloadError::Missing { table, key: show_key(key) }
}

/// TPC-C runs on any engine: SwizzleDB's `Database` and, with the `lmdb` feature,
/// [`crate::engine::Lmdb`].
impl<E: Engine> Workload<E> for Tpcc {
    type Worker = TpccWorker<E::Table>;

    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn kinds(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn load(&self, db: &E) -> Result<(), WorkloadError> {
        load::load(self, db)
    }

    fn worker(&self, db: &E, thread: usize) -> Result<TpccWorker<E::Table>, WorkloadError> {
        let stream = self.next_stream();
        Ok(TpccWorker {
            tables: Tables::open(db)?,
            rng: TpccRng::new(self.config.seed ^ (u64::from(stream) << 32) ^ thread as u64),
            stream,
            sequence: 0,
        })
    }

    fn run_one(&self, db: &E, w: &mut TpccWorker<E::Table>) -> Result<Outcome, WorkloadError> {
        // The mix of clause 5.2.3 at its minimum percentages, New-Order taking the rest.
        let r = w.rng.urand(1, 100);
        let (kind, (done, attempts)) = match r {
            1..=43 => (1, self.payment(db, w)?),
            44..=47 => (2, self.order_status(db, w)?),
            48..=51 => (3, self.delivery(db, w)?),
            52..=55 => (4, self.stock_level(db, w)?),
            _ => (0, self.new_order(db, w)?),
        };
        Ok(Outcome { kind, attempts, rolled_back: !done })
    }

    fn verify(&self, db: &E) -> Result<(), WorkloadError> {
        check::verify(self, db)
    }
}

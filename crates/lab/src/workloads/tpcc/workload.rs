//! TPC-C's workload: its scale ([`TpccConfig`]), its trees and the [`Tpcc`] state its
//! transactions, loader and checker share. The module `tpcc` describes the workload; `run.rs`
//! makes it a `Workload`.

use std::sync::atomic::{AtomicU32, Ordering};
use swizzledb::Tree;

use super::random::TpccRng;
use super::schema;
use super::schema::{check_size, show_key, Field, Record, Scalar, TREES};
use crate::engine::{Abort, Engine, TxRead, TxWrite};
#[cfg(doc)]
use crate::workloads::Outcome;
use crate::workloads::WorkloadError;

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
    /// New-Order reads the fields that no TPC-C transaction changes (items, `W_TAX`,
    /// `C_DISCOUNT`) outside its isolation
    /// ([`TxRead::get_committed_with`](crate::engine::TxRead::get_committed_with): no record
    /// lock, no wait), as TPC-C runs on InnoDB, whose plain `SELECT`s in a read-write
    /// transaction are consistent reads. The values read are the committed ones: every version
    /// of those records holds them alike. Off: locking reads, as every other read of the
    /// transaction (and as Shore-MT, the engine of Graefe et al. 2014, ran them).
    pub committed_reads: bool,
    /// Stock-Level reads at read committed ([`Engine::transact_read_committed`]), the isolation
    /// TPC-C asks of it (clause 3.4.1: level 1, no dirty reads, against every transaction):
    /// each read sees what was committed when it began, and no snapshot is held across the
    /// transaction, so writers keep no versions for it. Off: at a snapshot of its start
    /// ([`Engine::transact_read`]), as Order-Status always reads.
    ///
    /// [`Engine::transact_read_committed`]: crate::engine::Engine::transact_read_committed
    /// [`Engine::transact_read`]: crate::engine::Engine::transact_read
    pub stock_level_read_committed: bool,
}

impl TpccConfig {
    /// The specification's scale: 100,000 items, 3,000 customers per district.
    #[must_use]
    pub fn standard(warehouses: u32) -> Self {
        TpccConfig {
            warehouses,
            items: 100_000,
            customers: 3_000,
            remote: true,
            seed: 0x7C5C,
            committed_reads: true,
            stock_level_read_committed: true,
        }
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
    pub(super) fn delivered(&self) -> u32 {
        self.customers * 7 / 10
    }

    /// The largest last-name number in use: names 0..=999 are given to the first 1,000
    /// customers of each district, so with fewer customers fewer names exist.
    pub(super) fn max_name(&self) -> u32 {
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
    pub(super) fn open<E: Engine<Table = T>>(db: &E) -> Result<Tables<T>, WorkloadError> {
        let tables: Vec<T> = TREES.iter().map(|n| db.table(n)).collect::<Result<_, _>>()?;
        Ok(Tables(tables.try_into().unwrap_or_else(|_| unreachable!("eleven names give eleven trees"))))
    }

    pub(crate) fn tree(&self, i: usize) -> &T {
        &self.0[i]
    }
}

/// TPC-C over one database.
pub struct Tpcc {
    pub(super) config: TpccConfig,
    /// History key streams handed out (to the loader and to each worker).
    pub(super) streams: AtomicU32,
}

/// A thread's state (over SwizzleDB's trees, or another engine's tables).
pub struct TpccWorker<T = Tree> {
    pub(super) tables: Tables<T>,
    pub(super) rng: TpccRng,
    /// History key: this worker's stream and its next sequence number.
    pub(super) stream: u32,
    pub(super) sequence: u32,
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

    pub(super) fn next_stream(&self) -> u32 {
        self.streams.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads, changes and writes back one record atomically ([`TxWrite::update_with`]: on
    /// SwizzleDB one descent under the leaf's exclusive latch): `change` gets the stored bytes
    /// and the buffer for the new ones. A missing record is an error.
    pub(super) fn change<X: TxWrite, R: Record, T>(
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
    pub(super) fn patch<X: TxWrite, R: Record, T>(
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
    pub(super) fn update<X: TxWrite, R: Record, T>(
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
    found::<R, T>(tx.get_with(tree, key, |v| v.map(|b| check_size::<R>(b).map(|()| f.get(b))))?, key)
}

/// [`field`] for a field no transaction changes, read as [`fixed_read`] reads it.
pub(crate) fn fixed_field<R: Record, T: Scalar, X: TxRead>(
    tx: &X,
    committed: bool,
    tree: &X::Table,
    key: &[u8],
    f: &Field<R, T>,
) -> Result<T, Abort> {
    found::<R, T>(
        fixed_read(tx, committed, tree, key, |v| v.map(|b| check_size::<R>(b).map(|()| f.get(b))))?,
        key,
    )
}

/// Reads a record no transaction changes as `committed` says ([`TpccConfig::committed_reads`]):
/// outside the transaction's isolation, with no lock, or through it.
pub(crate) fn fixed_read<X: TxRead, V>(
    tx: &X,
    committed: bool,
    tree: &X::Table,
    key: &[u8],
    f: impl FnOnce(Option<&[u8]>) -> V,
) -> Result<V, Abort> {
    if committed {
        tx.get_committed_with(tree, key, f)
    } else {
        tx.get_with(tree, key, f)
    }
}

/// A field read from a record that must exist.
fn found<R: Record, T>(read: Option<Result<T, WorkloadError>>, key: &[u8]) -> Result<T, Abort> {
    match read {
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

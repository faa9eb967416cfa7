//! The YCSB core workloads A–F (Cooper et al., SoCC 2010; the `workloads/workload[a-f]` files
//! of YCSB) as a [`Workload`] over one table of `records` records.
//!
//! | letter | operations | request distribution |
//! |---|---|---|
//! | A | 50% read, 50% update | zipfian |
//! | B | 95% read, 5% update | zipfian |
//! | C | 100% read | zipfian |
//! | D | 95% read, 5% insert | latest |
//! | E | 95% scan, 5% insert | zipfian (scan start), length uniform in 1..=100 |
//! | F | 50% read, 50% read-modify-write | zipfian |
//!
//! Keys and values: [`record`]; the distributions, and how they follow a growing record count:
//! [`generator`]. The zipfian constant is 0.99 unless set.
//!
//! Deviations from YCSB:
//! - **Update** overwrites the whole record with new random fields (YCSB's
//!   `writeallfields=true`; its default writes one field, which a key-value store can only do
//!   by reading the record first). **Read-modify-write** (F) reads the record, replaces one
//!   field and writes it back, in one transaction. A **read** returns all fields; a **scan**
//!   reads up to its length of records from its start key on, in key order (hash order), and
//!   counts as one operation.
//! - The scrambled zipfian is over the current record count, not over YCSB's fixed 10^10 items
//!   (so the most popular record gets 1/zeta(records) of the requests: 6.5% at a million
//!   records against YCSB's 3.8%), and it places ranks by jump consistent hashing
//!   ([`generator`]).
//! - Every operation is one atomic operation of the engine adapter ([`crate::engine::Engine`]):
//!   on SwizzleDB a transaction through `Database::transact` (retried when a deadlock refuses a
//!   lock; read-only ones log nothing), on LMDB one read or write transaction.
//! - Inserts take the next ordinal from a counter shared by the threads and count as records
//!   for the other threads' choices once every smaller ordinal is committed too (YCSB's
//!   acknowledged counter).
//!
//! `Ycsb` implements [`Workload`] over any [`Engine`]: SwizzleDB's `Database` and, with the
//! `lmdb` feature, [`crate::engine::Lmdb`]. One [`Ycsb`] belongs to one database: it holds that
//! database's record count. Load it once
//! with [`Workload::load`]; [`Ycsb::with_letter`] makes the other workloads over the same
//! database. [`Workload::verify`] then checks the whole table: exactly the records
//! `0..records()` exist, each under its own key, of the configured length, with an intact
//! checksum.

mod bench;
pub mod generator;
pub mod record;
mod workload;

#[cfg(doc)]
use crate::engine::Engine;
#[cfg(doc)]
use crate::workloads::Workload;

pub use bench::{print_table, run_bench, BenchPlan, BenchRow, Config, YcsbPlan, YcsbRow, CSV_COLUMNS};
pub use workload::{
    kind, parse_letter, Mix, Ycsb, YcsbConfig, YcsbWorker, KINDS, LETTERS, MAX_RECORDS, MAX_SCAN, MAX_VALUE,
};

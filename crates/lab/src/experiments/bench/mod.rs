//! The benchmarks: one file per workload or buffer measurement, named as its command (`-` for
//! `_`) and the stem of its output files, and the registry of `swizzledb bench` (the module
//! `entry` says what an entry holds).

pub mod drift;
pub mod fix;
pub mod insert;
pub mod isolation;
pub mod lookup;
pub mod read_latency;
pub mod scan;
pub mod tpcb;
pub mod tpcc;
pub mod values;
pub mod wal;
pub mod ycsb;

use super::entry::registry;
use super::papers::ding::emulator;
use crate::harness::buffer_report::Record;
use crate::workloads::{tpcb::TpcbRow, tpcc::TpccRow, ycsb::YcsbRow};

registry! {
    /// `swizzledb bench`: one benchmark workload.
    pub enum BenchCommand in "bench" {
        /// Uniformly random lookups of verified values (8-byte keys, 120-byte values), one database
        /// per mode, repetitions interleaved across modes
        "lookup" | "rndread" => Lookup(lookup::LookupArgs), lookup::execute,
            files [("lookup.csv", Record, None)];
        /// Random-order insertions after an unmeasured preload, a fresh database per mode and
        /// repetition (each repetition times all inserts: --duration and --warmup do not apply)
        "insert" => Insert(insert::InsertArgs), insert::execute,
            files [("insert.csv", Record, None)];
        /// Lookups in a hot key range that slides by a quarter of its length every interval, with a
        /// throughput time series
        "drift" => Drift(drift::DriftArgs), drift::execute,
            files [("drift.csv", Record, None), ("<experiment>-series.csv", drift::Sample, None)];
        /// Range scans of --length consecutive keys from a random start key, per buffer mode:
        /// scans and scanned records per second, every record checked (8-byte keys, 120-byte
        /// values), one database per mode, repetitions interleaved across modes
        "scan" => Scan(scan::ScanArgs), scan::execute,
            files [("scan.csv", scan::ScanRow, Some("`scan.csv`"))];
        /// The BP-Wrapper paper's buffer emulator (Ding et al. 2015, Figs. 11-13): threads share an
        /// in-memory buffer and compute between accesses; locked LRU, DistLock, batching,
        /// prefetching, full BP-Wrapper, BP-Wrapper per partition, bufBP-prim and CLOCK
        "emulator" => Emulator(emulator::EmulatorArgs), emulator::run,
            files [("emulator.csv", emulator::EmulatorRow, Some("`emulator.csv`"))];
        /// Write-ahead logging: overhead on inserts (logging off, async and sync commit, auto-commit),
        /// commits per fsync under group commit, the log kept with the page cleaner on and off, and
        /// restart time against the log since the last checkpoint and against the writer's run time
        "wal" => Wal(wal::WalBenchArgs), wal::run,
            files [("wal.csv", wal::WalRow, Some("`wal.csv`"))];
        /// Insert and point-read throughput by value size, from values stored in their leaf to
        /// 1 MiB values in overflow pages
        "values" => Values(values::ValuesArgs), values::execute,
            files [("values.csv", values::ValuesRow, Some("`values.csv`"))];
        /// What record locks with next-key locking cost (LOCKS.md K14-K16): point transactions,
        /// scan-heavy transactions and reads outside a transaction, locking on against off
        "isolation" => Isolation(isolation::IsolationArgs), isolation::run,
            files [("isolation.csv", isolation::IsolationRow, Some("`isolation.csv`"))];
        /// Read latency (p50, p99, p99.9, max) under a writer holding record locks on a hot set:
        /// snapshot reads (LOCKS.md K18), one read-only transaction per read, and locking reads
        "read-latency" => ReadLatency(read_latency::ReadLatencyArgs), read_latency::run,
            files [("read-latency.csv", read_latency::ReadLatencyRow, Some("`read-latency.csv`"))];
        /// TPC-C (five transactions, standard mix, no think time; vmcache's schema and key layout):
        /// throughput per buffer mode, logging, locking and optimistic-descent setting and thread
        /// count, consistency conditions 1-4 checked after the run
        "tpcc" => Tpcc(tpcc::TpccArgs), tpcc::run,
            files [("tpcc.csv", TpccRow, Some("`tpcc.csv`"))];
        /// TPC-B (branches, tellers, accounts, history; one transaction moving a random delta):
        /// throughput per buffer mode, logging, locking, optimistic-descent and log-archive setting
        /// and thread count, balances checked against each other and the history after the run
        "tpcb" => Tpcb(tpcb::TpcbArgs), tpcb::run,
            files [("tpcb.csv", TpcbRow, Some("`tpcb.csv`"))];
        /// YCSB core workloads A-F (zipfian 0.99 or latest requests, 1 KiB records): operations per
        /// second per workload, buffer mode, logging, locking and optimistic-descent setting and
        /// thread count, every record checked after the run
        "ycsb" => Ycsb(ycsb::YcsbArgs), ycsb::run,
            files [("ycsb.csv", YcsbRow, Some("`ycsb.csv`"))];
    }
}

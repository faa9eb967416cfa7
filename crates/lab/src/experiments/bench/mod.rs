//! The benchmarks: one file per workload or buffer measurement, named as its command (`-` for
//! `_`) and the stem of its output files.

pub mod drift;
pub mod fix;
pub mod insert;
pub mod isolation;
pub mod lookup;
pub mod read_latency;
pub mod tpcb;
pub mod tpcc;
pub mod values;
pub mod wal;
pub mod ycsb;

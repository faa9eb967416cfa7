//! This crate's integration tests, one module per concern, in one test binary: one link
//! instead of one per file.

mod results_environment;
mod tpcb;
mod tpcc;
mod ycsb;

//! This crate's integration tests, one module per concern, in one test binary: one link
//! instead of one per file.

mod common;

mod admin;
mod any_machine;
mod backup;
mod cli;
mod crash_test;
mod dbmin;
mod ding;
mod doc_links;
mod flags;
mod import_circles;
mod lersch;
mod load;
mod peers;
mod reproduce;
mod scan;
mod tpcb;
mod tpcc;
mod trace;
mod trace_interop;
mod wal;
mod ycsb;

//! This crate's integration tests, one module per concern, in one test binary: one link
//! instead of one per file.

mod common;

mod archive;
mod concurrency;
mod failures;
mod group_commit;
mod master;
mod round_trip;
mod segments;
mod torn_tail;

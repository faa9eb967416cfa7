//! This crate's integration tests, one module per concern, in one test binary: one link
//! instead of one per file.

mod damage;
mod double_ended;
mod gate;
mod large_values;
mod lending;
mod limit;
mod log_replay;
mod split_point;

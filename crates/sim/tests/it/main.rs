//! This crate's integration tests, one module per concern, in one test binary: one link
//! instead of one per file.

mod emulator;
mod generators;
mod interop;
mod opt;
mod stack_distance;

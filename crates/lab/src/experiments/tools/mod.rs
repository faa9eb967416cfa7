//! Tools beside the experiments: the crash test and trace analysis.

pub mod crash_test;
pub mod trace_analyze;

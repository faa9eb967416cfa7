//! One file per experiment or benchmark; its name is the experiment's name, the stem of its
//! output files and (with `-` for `_`) its command.

pub mod chou_dbmin;
pub mod common;
pub mod crash_test;
pub mod ding_bpwrapper;
pub mod drift;
pub mod emulator;
pub mod fix;
pub mod gilbert_policies;
pub mod graefe_fig10;
pub mod insert;
pub mod isolation;
pub mod lookup;
pub mod tpcc;
pub mod trace_analyze;
pub mod wal;

//! The papers' experiments, one folder per paper as `reproduce/figures/<paper>.rs` has one file
//! per paper; a file's command and output stem are `<paper>-<file>` (`graefe/fig10.rs`:
//! `graefe-fig10`), except Ding's buffer emulator (`bench emulator`, `emulator.csv`) and
//! Chou's simulator (`sim chou-dbmin`, `chou-dbmin.csv`).

pub mod chou;
pub mod ding;
pub mod gilbert;
pub mod graefe;
pub mod lersch;

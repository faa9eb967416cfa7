//! `experiment graefe-fig12`: Graefe et al. 2014 Fig. 12, random-order insertions into an index
//! that fits in memory (the insert workload at the paper's proportions), with the check of the
//! paper's claim: swizzling matches main-memory and beats traditional.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;
use swizzledb::PoolMode;

use crate::experiments::common::Common;
use crate::experiments::insert;
use crate::harness::buffer::ModeResult;
use crate::harness::buffer_report::median_of;
use crate::units;

/// The experiment's name: its command, and the stem of its output files.
pub const NAME: &str = "graefe-fig12";

/// Options of `experiment graefe-fig12`.
#[derive(Args)]
pub struct Fig12Args {
    #[command(flatten)]
    common: Common,
    /// Records at the end (a sixth of them preloaded)
    #[arg(long, default_value = "2400000", value_parser = units::parse_positive_count)]
    records: u64,
}

/// Runs `experiment graefe-fig12`.
///
/// # Errors
/// Bad options, or a database or I/O failure.
pub fn execute(args: &Fig12Args) -> Result<ExitCode, Box<dyn Error>> {
    insert::execute_as(NAME, &args.common, args.records, None, None)
}

/// Graefe et al. Fig. 12: swizzling = main-memory > traditional on random inserts.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_check(out: &mut impl Write, results: &[ModeResult]) -> io::Result<()> {
    let m = |mode| results.iter().find(|r| r.mode == mode).and_then(median_of);
    let (t, s, mm) = (m(PoolMode::Traditional), m(PoolMode::Swizzling), m(PoolMode::MainMemory));
    writeln!(out)?;
    if let (Some(s), Some(mm)) = (s, mm) {
        let v = s / mm;
        let ok = if v >= 0.9 { "✓" } else { "✗" };
        writeln!(out, "inserts: swizzling/main-memory = {v:.2} (paper: equal) {ok}")?;
    }
    if let (Some(t), Some(s)) = (t, s) {
        let v = t / s;
        let ok = if v < 1.0 { "✓" } else { "✗" };
        writeln!(out, "inserts: traditional/swizzling = {v:.2} (paper: traditional below) {ok}")?;
    }
    Ok(())
}

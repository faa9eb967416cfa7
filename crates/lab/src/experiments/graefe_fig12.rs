//! `experiment graefe-fig12`: Graefe et al. 2014 Fig. 12, random-order insertions into an index
//! that fits in memory (the insert workload at the paper's proportions), with the check of the
//! paper's claim: swizzling matches main-memory and beats traditional.

use clap::Args;
use std::error::Error;
use std::process::ExitCode;
use swizzledb::PoolMode;

use crate::experiment::{Check, Verdict};
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

/// Within this much of 1, swizzling's inserts match main-memory's (the paper: "equivalent", no
/// number; our insert phase is short and noisy).
const MATCH_TOLERANCE: f64 = 0.10;

/// Graefe et al. Fig. 12: swizzling = main-memory > traditional on random inserts, from the
/// medians of each mode's repetitions.
#[must_use]
pub fn checks(results: &[ModeResult]) -> Vec<Check> {
    let m = |mode| results.iter().find(|r| r.mode == mode).and_then(median_of);
    let (t, s, mm) = (m(PoolMode::Traditional), m(PoolMode::Swizzling), m(PoolMode::MainMemory));
    let reps = results.iter().map(|r| r.runs.len()).max().unwrap_or(0);
    let mut checks = Vec::new();
    if let (Some(s), Some(mm)) = (s, mm) {
        let v = s / mm;
        checks.push(
            Check::new(
                "Fig. 12: swizzling / main-memory inserts/s",
                "1 (\"equivalent\"), 24 threads adding 50M records to 10M, index in memory",
                format!("{v:.2}, median of {reps} repetition(s)"),
                Verdict::of((v - 1.0).abs() <= MATCH_TOLERANCE),
            )
            .because(format!("the paper gives no number: ✓ within {:.0}% of 1", MATCH_TOLERANCE * 100.0)),
        );
    }
    if let (Some(t), Some(s)) = (t, s) {
        let v = t / s;
        checks.push(
            Check::new(
                "Fig. 12: traditional / swizzling inserts/s",
                "below 1 (both swizzling and main-memory \"out-perform a traditional buffer pool\")",
                format!("{v:.2}, median of {reps} repetition(s)"),
                Verdict::of(v < 1.0),
            )
            .because("the paper gives no number: ✓ below 1"),
        );
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;
    use crate::progress::Progress;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Fig12Args,
    }

    /// The tiny scale: a row per mode, the chart, both checks; the index fits: no page read.
    #[test]
    fn tiny_scale_makes_rows_a_chart_and_both_checks() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let cli = TestCli::try_parse_from(["t", "--records", "12000", "--repeat", "1", "--dir", d]).unwrap();
        let plan = insert::plan(NAME, &cli.args.common, cli.args.records, None, None).unwrap();
        let results = plan.run(Progress::off()).unwrap();
        let rows = plan.rows(&results);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.io == "none" && r.experiment == NAME), "{rows:?}");
        assert_eq!(plan.charts(&results).len(), 1);
        let checks = plan.checks(&results);
        assert_eq!(checks.len(), 2, "{checks:#?}");
        // `bench insert` makes no claim.
        let plain = insert::plan("insert", &cli.args.common, cli.args.records, None, None).unwrap();
        assert!(plain.checks(&results).is_empty());
    }
}

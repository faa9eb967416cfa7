//! `experiment graefe-fig12`: Graefe et al. 2014 Fig. 12, random-order insertions into an index
//! that fits in memory (the insert workload at the paper's proportions), with the check of the
//! paper's claim: swizzling matches main-memory and beats traditional.

use clap::Args;
use std::error::Error;
use std::process::ExitCode;
use swizzledb::PoolMode;

use crate::experiments::bench::insert;
use crate::experiments::common::Common;
use crate::harness::buffer::ModeResult;
use crate::harness::buffer_report::median_of;
use crate::harness::experiment::{Check, Verdict};
use crate::support::units;

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
    crate::harness::experiment::execute(&plan(args)?, args.common.out.as_deref())
}

/// The insert workload as this experiment: the paper's proportions and its checks.
///
/// # Errors
/// Bad options.
pub fn plan(args: &Fig12Args) -> Result<insert::InsertPlan, crate::Usage> {
    let mut plan = insert::plan(NAME, &args.common, args.records, None, None)?;
    plan.claims = checks;
    Ok(plan)
}

/// The tolerance of both checks: within this much of 1, swizzling's inserts match
/// main-memory's (the paper: "equivalent"), and within this much of [`TRADITIONAL_PAPER`]'s
/// range traditional's match the paper's (our insert phase is short and noisy).
const MATCH_TOLERANCE: f64 = 0.10;
/// Traditional / swizzling inserts/s in the paper. Its text gives Fig. 12 no number, but says
/// the differences "follow the same pattern as" the lookups', where main-memory (which swizzling
/// equals) is 41-68% above traditional (Fig. 1): 1/1.68 to 1/1.41, i.e. 0.60 to 0.71.
const TRADITIONAL_PAPER: (f64, f64) = (1.0 / 1.68, 1.0 / 1.41);

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
        checks.push(traditional_check(t / s, reps));
    }
    checks
}

/// Traditional / swizzling inserts/s, `v` the ratio of the medians of `reps` repetitions: ✓
/// within [`MATCH_TOLERANCE`] of [`TRADITIONAL_PAPER`]'s range; ~ where only the direction holds
/// (traditional slower by more than the tolerance, but not by the paper's margin); ✗ where
/// traditional is not measurably slower.
fn traditional_check(v: f64, reps: usize) -> Check {
    let (lo, hi) = TRADITIONAL_PAPER;
    let (min, max) = (lo - MATCH_TOLERANCE, hi + MATCH_TOLERANCE);
    let tolerance = format!("tolerance: ±{MATCH_TOLERANCE:.2}, {min:.2}-{max:.2}");
    let (verdict, reason) = if (min..=max).contains(&v) {
        (Verdict::Holds, tolerance)
    } else if v < 1.0 - MATCH_TOLERANCE {
        (
            Verdict::Partial,
            format!(
                "{tolerance}; only the direction holds: traditional is slower, not by the paper's margin"
            ),
        )
    } else {
        (Verdict::Fails, format!("{tolerance}; traditional is not slower by more than {MATCH_TOLERANCE:.2}"))
    };
    Check::new(
        "Fig. 12: traditional / swizzling inserts/s",
        format!(
            "{lo:.2}-{hi:.2}, derived: both swizzling and main-memory \"out-perform a traditional buffer \
             pool\", in \"the same pattern\" as the lookups (main-memory 41-68% faster, Fig. 1); 24 threads"
        ),
        format!("{v:.2}, median of {reps} repetition(s)"),
        verdict,
    )
    .because(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::experiment::Experiment;
    use crate::support::progress::Progress;
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
        let plan = plan(&cli.args).unwrap();
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

    /// A mode that inserted `per_sec` records a second in each of two repetitions.
    fn mode(mode: PoolMode, per_sec: f64) -> ModeResult {
        let run = |repetition| crate::harness::buffer::Measurement {
            repetition,
            ops: per_sec as u64,
            secs: 1.0,
            stats: swizzledb::Stats::default(),
            latency: crate::harness::buffer::Latency::default(),
            resident_bytes: 0,
            started: std::time::Instant::now(),
            cpu_secs: None,
            line_ns: None,
        };
        ModeResult { mode, load_secs: Some(1.0), loaded: 0, runs: vec![run(0), run(1)], error: None }
    }

    /// Traditional / swizzling is held to the paper's 0.60-0.71 ± 0.10: the old check passed any
    /// ratio below 1, 0.95 too; now that fails, and a gap smaller than the paper's is ~.
    #[test]
    fn traditional_is_held_to_the_papers_margin_not_just_below_one() {
        let verdict = |traditional: f64| {
            let results = [
                mode(PoolMode::Traditional, traditional),
                mode(PoolMode::Swizzling, 1_000_000.0),
                mode(PoolMode::MainMemory, 1_000_000.0),
            ];
            let checks = checks(&results);
            let c = checks.iter().find(|c| c.what.contains("traditional")).expect("the check");
            assert!(c.paper.starts_with("0.60-0.71"), "{}", c.paper);
            c.verdict
        };
        assert_eq!(verdict(650_000.0), Verdict::Holds);
        assert_eq!(verdict(520_000.0), Verdict::Holds);
        assert_eq!(verdict(850_000.0), Verdict::Partial);
        assert_eq!(verdict(400_000.0), Verdict::Partial);
        assert_eq!(verdict(950_000.0), Verdict::Fails);
        assert_eq!(verdict(1_100_000.0), Verdict::Fails);
    }
}

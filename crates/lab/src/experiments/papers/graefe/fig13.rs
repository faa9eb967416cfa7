//! `experiment graefe-fig13`: Graefe et al. 2014 Fig. 13, a drifting working set (the drift
//! workload at the paper's proportions, scaled to this machine), with the check of the paper's
//! claim: swizzling beats traditional in the steady state and recovers from each shift as fast.

use std::error::Error;
use std::process::ExitCode;

use crate::experiments::bench::drift::{self, DriftArgs};

/// The experiment's name: its command, and the stem of its output files.
pub const NAME: &str = "graefe-fig13";

/// Runs `experiment graefe-fig13`.
///
/// # Errors
/// Bad options, or a database or I/O failure.
pub fn execute(args: &DriftArgs) -> Result<ExitCode, Box<dyn Error>> {
    crate::harness::experiment::execute(&plan(args)?, args.common.out.as_deref())
}

/// The drift workload as this experiment, with the paper's checks.
///
/// # Errors
/// Bad options.
pub fn plan(args: &DriftArgs) -> Result<drift::DriftPlan, crate::Usage> {
    Ok(drift::DriftPlan { claims: true, ..drift::plan(NAME, args)? })
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
        args: DriftArgs,
    }

    /// The tiny scale of `swizzledb reproduce`, with direct I/O where the file system takes it:
    /// rows and series with the `io` of how pages were read, the chart, and every check.
    #[test]
    fn tiny_scale_makes_rows_a_series_a_chart_and_the_checks() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let tiny = [
            "t",
            "--mode",
            "traditional,swizzling",
            "--records",
            "40000",
            "--hot",
            "1MiB",
            "--pool",
            "2MiB",
            "--interval",
            "0.3",
            "--shifts",
            "2",
            "--sample",
            "0.05",
            "--repeat",
            "1",
            "--dir",
            d,
        ];
        let with_direct: Vec<&str> = tiny.iter().copied().chain(["--direct-io"]).collect();
        let cli = TestCli::try_parse_from(&with_direct).unwrap();
        let plan = plan(&cli.args).unwrap();
        let (plan, results, io) = match plan.run(Progress::off()) {
            Ok(r) => (plan, r, "direct"),
            Err(e) if e.to_string().contains("direct I/O") => {
                eprintln!("the temp directory's file system rejects O_DIRECT; through the page cache");
                let plan = super::plan(&TestCli::try_parse_from(tiny).unwrap().args).unwrap();
                let r = plan.run(Progress::off()).unwrap();
                (plan, r, "page-cache")
            }
            Err(e) => panic!("{e}"),
        };
        let rows = plan.rows(&results);
        assert_eq!(rows.len(), 2);
        // The hot range starts outside the pool and moves into unread keys: pages are read.
        assert!(rows.iter().all(|r| r.io == io && r.pages_read > 0), "{rows:?}");
        assert!(results.samples.iter().any(|s| s.io == io));
        assert!(results.samples.iter().all(|s| s.io == io || s.io == "none"));
        assert!(results.samples.iter().any(|s| s.phase == 2));
        assert_eq!(plan.charts(&results).len(), 1);
        let checks = plan.checks(&results);
        for what in ["traditional: a dip", "swizzling: a dip", "steady state"] {
            assert!(checks.iter().any(|c| c.what.contains(what)), "no check {what}: {checks:#?}");
        }
    }
}

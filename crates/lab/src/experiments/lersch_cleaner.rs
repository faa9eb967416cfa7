//! `experiment lersch-cleaner`: Lersch 2015 Figs. 5.5–5.8, TPC-B throughput, CPU and write
//! bandwidth against the page cleaner's interval, the classical cleaner (RECOVERY.md R15)
//! against the decoupled one (R20, with log-based checkpoints, R19).
//!
//! The thesis reports: throughput barely changes with the interval; with the log on an SSD the
//! decoupled cleaner gains nothing significant, with the log in memory it reaches much higher
//! throughput; CPU is similar for both; write bandwidth is largely independent of the interval.
//! Both databases here keep the log archive (the decoupled cleaner replays it), checkpoints run
//! every second, and the log is on the data's device (`--log-in-memory`: in a memory file
//! system, the thesis's second series). The sweep is
//! [`super::lersch_checkpoints`]'s.

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;

use super::lersch_checkpoints::{Sweep, SweepArgs, Varied};
use crate::experiment::{self, Check, Experiment, Verdict};
use crate::plot::Chart;
use crate::progress::Progress;
use crate::tpcb::{BenchRow, Propagation, TpcbRow};

/// Options of `experiment lersch-cleaner`.
#[derive(Args, Debug)]
pub struct LerschCleanerArgs {
    /// Cleaner intervals in milliseconds, comma-separated (the thesis: 1 ms to 100 s)
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    intervals: Vec<u64>,
    #[command(flatten)]
    common: SweepArgs,
}

/// Runs `experiment lersch-cleaner`.
///
/// # Errors
/// Bad options (as [`crate::Usage`]), or a database or I/O failure.
pub fn execute(args: &LerschCleanerArgs) -> Result<ExitCode, Box<dyn Error>> {
    let sweep = Sweep::new(Varied::Cleaner, &args.intervals, &args.common)?;
    experiment::execute(&LerschCleaner(sweep), args.common.out.as_deref())
}

/// The plan of `experiment lersch-cleaner`.
pub struct LerschCleaner(Sweep);

impl Experiment for LerschCleaner {
    const NAME: &'static str = "lersch-cleaner";
    type Row = TpcbRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        format!(
            "Lersch 2015 Figs. 5.5-5.8: TPC-B throughput, CPU and pages written against the cleaner interval ({} ms), \
             the classical cleaner against the decoupled one; the log archive on, checkpoints every second, {}.",
            self.0.intervals.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
            self.0.log_place()
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        self.0.run(progress)
    }

    fn tables(&self, rows: &Vec<BenchRow>, out: &mut dyn Write) -> io::Result<()> {
        self.0.table(rows, out)
    }

    fn checks(&self, rows: &Vec<BenchRow>) -> Vec<Check> {
        let s = &self.0;
        let ratios: Vec<f64> = s.intervals.iter().filter_map(|&ms| s.ratio(rows, ms)).collect();
        let mut checks = Vec::new();
        if let (Some(lo), Some(hi)) =
            (ratios.iter().copied().reduce(f64::min), ratios.iter().copied().reduce(f64::max))
        {
            checks.push(Check {
                what: format!("decoupled / classical tx/s over the intervals, {}", s.log_place()),
                paper: "equal or better (Fig. 5.5; log on SSD: no significant gain, log in memory: much higher); \
                        at least 0.95 everywhere counts"
                    .into(),
                ours: format!("{lo:.2} to {hi:.2}"),
                verdict: Verdict::of(lo >= 0.95),
                reason: if lo >= 0.95 {
                    String::new()
                } else {
                    format!("the decoupled cleaner is slower at some interval (down to {lo:.2})")
                },
            });
            if s.log_in_memory() {
                checks.push(Check {
                    what: "decoupled / classical tx/s, the log in memory".into(),
                    paper:
                        "much higher with the log in memory (Fig. 5.5); at least 1.2 at every interval counts"
                            .into(),
                    ours: format!("{lo:.2} to {hi:.2}"),
                    verdict: Verdict::of(lo >= 1.2),
                    reason: if lo >= 1.2 {
                        String::new()
                    } else {
                        "the decoupled cleaner's gain with the log in memory is smaller than the thesis's"
                            .into()
                    },
                });
            }
        }
        let spread = |k: Propagation| {
            let v: Vec<f64> =
                s.intervals.iter().filter_map(|&ms| s.median(rows, k, ms, BenchRow::tx_per_sec)).collect();
            let (lo, hi) = (v.iter().copied().reduce(f64::min)?, v.iter().copied().reduce(f64::max)?);
            (lo > 0.0).then(|| hi / lo)
        };
        if let Some(x) = spread(Propagation::Decoupled) {
            checks.push(Check {
                what: "decoupled cleaner: fastest / slowest interval, tx/s".into(),
                paper: "throughput barely changes with the interval (Fig. 5.5); at most 1.25 counts".into(),
                ours: format!("{x:.2}"),
                verdict: Verdict::of(x <= 1.25),
                reason: if x <= 1.25 {
                    String::new()
                } else {
                    "throughput varies with the cleaner's interval more than the thesis saw".into()
                },
            });
        }
        checks
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpcbRow> {
        self.0.rows(Self::NAME, rows)
    }

    fn charts(&self, rows: &Vec<BenchRow>) -> Vec<(String, Chart)> {
        vec![
            (
                format!("{}-throughput", Self::NAME),
                self.0.chart(
                    rows,
                    "TPC-B throughput against the cleaner interval (Lersch 2015, Fig. 5.5)",
                    "transactions per second",
                    BenchRow::tx_per_sec,
                ),
            ),
            (
                format!("{}-cpu", Self::NAME),
                self.0.chart(
                    rows,
                    "CPU against the cleaner interval (Lersch 2015, Figs. 5.6/5.7)",
                    "CPU cores busy",
                    BenchRow::cpu_cores,
                ),
            ),
            (
                format!("{}-writes", Self::NAME),
                self.0.chart(
                    rows,
                    "Pages written against the cleaner interval (Lersch 2015, Fig. 5.8)",
                    "pages written per second",
                    |r| r.pages_written as f64 / r.seconds,
                ),
            ),
        ]
    }
}

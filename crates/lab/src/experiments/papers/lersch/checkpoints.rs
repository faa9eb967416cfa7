//! `experiment lersch-checkpoints`: Lersch 2015 Figs. 5.1–5.4, TPC-B throughput and CPU against
//! the checkpoint interval, classical (fuzzy, RECOVERY.md R7) against decoupled (log-based, R19)
//! checkpoints.
//!
//! The thesis (Zero on 24 hardware threads, TPC-B with one branch per thread, the pool holding
//! the database, archiving off, 15-minute runs) reports: classical throughput rises as
//! checkpoints get rarer; decoupled throughput is higher and flatter; above 1000 ms the two are
//! equal; decoupled checkpoints use slightly more CPU. Its figures carry no numbers, so the
//! checks compare directions and ratios. Here: `bench tpcb`'s databases (the classical page
//! cleaner, no archive, asynchronous commits), one database per interval and kind, the kinds
//! interleaved within each interval; the log is on the same device as the data (the thesis's
//! in-memory log is not reproduced).
//!
//! The sweep itself, shared with `experiment lersch-cleaner`, is [`sweep`].

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use swizzledb::PoolMode;

use crate::experiments::workload_options::run_logged;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::progress::Progress;
use crate::support::stats;
use crate::support::text::write_aligned;
use crate::support::units;
use crate::workloads::tpcb::{run_bench, BenchPlan, BenchRow, Propagation, TpcbConfig, TpcbPlan, TpcbRow};
use crate::workloads::WorkloadError;
use crate::Usage;

/// Options of `experiment lersch-checkpoints`.
#[derive(Args, Debug)]
pub struct LerschCheckpointsArgs {
    /// Checkpoint intervals in milliseconds, comma-separated (the thesis names 1, 1000 and
    /// 10000; a point above --duration takes no checkpoint while measured)
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    intervals: Vec<u64>,
    #[command(flatten)]
    common: SweepArgs,
}

/// The options both Lersch sweeps share.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Branches (the thesis: one per hardware thread)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    branches: u32,
    /// Threads
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Seconds per measurement (the thesis: 15 minutes)
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Measurements per point and kind, interleaved; tables and checks use medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Keep the logs in memory (Lersch's second series): in a temporary directory of
    /// `/dev/shm`, or of --log-dir
    #[arg(long)]
    log_in_memory: bool,
    /// With --log-in-memory: the memory file system's directory [default: /dev/shm]
    #[arg(long, value_name = "DIR", requires = "log_in_memory")]
    log_dir: Option<PathBuf>,
    /// Directory for the CSV, JSON and plots (created if missing)
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
}

/// What a sweep varies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Varied {
    /// The checkpoint interval (the cleaner only near the log's bound).
    Checkpoint,
    /// The cleaner interval (checkpoints every second).
    Cleaner,
}

/// One sweep: for each interval, a `bench tpcb` plan over `kinds`, swizzling mode, logging on,
/// locking off, the archive on only for the cleaner sweep (the thesis disabled it for the
/// checkpoint runs).
pub(crate) struct Sweep {
    pub(crate) varied: Varied,
    pub(crate) intervals: Vec<u64>,
    pub(crate) kinds: [Propagation; 2],
    pub(crate) base: BenchPlan,
}

impl Sweep {
    pub(crate) fn new(varied: Varied, intervals: &[u64], args: &SweepArgs) -> Result<Sweep, Usage> {
        let mut intervals = intervals.to_vec();
        intervals.sort_unstable();
        intervals.dedup();
        let kinds = match varied {
            Varied::Checkpoint => [Propagation::Classical, Propagation::DecoupledCheckpoint],
            Varied::Cleaner => [Propagation::Classical, Propagation::Decoupled],
        };
        let base = BenchPlan {
            workload: TpcbPlan {
                config: TpcbConfig::standard(args.branches),
                log_archive: vec![varied == Varied::Cleaner],
                checkpoint_interval: None,
                propagation: kinds.to_vec(),
                cleaner_interval: None,
                log_dir: args
                    .log_in_memory
                    .then(|| args.log_dir.clone().unwrap_or_else(|| PathBuf::from("/dev/shm"))),
            },
            threads: vec![usize::from(args.threads)],
            duration: Duration::from_secs_f64(args.duration),
            repeat: u32::from(args.repeat),
            modes: vec![PoolMode::Swizzling],
            logging: vec![true],
            locking: vec![false],
            optimistic: vec![true],
            pool_bytes: None,
            policy: None,
            dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
        };
        if let Some(dir) = &base.workload.log_dir {
            if !dir.is_dir() {
                return Err(Usage(format!(
                    "--log-in-memory: {} is not a directory; pass a memory file system's directory with --log-dir",
                    dir.display()
                )));
            }
        }
        let sweep = Sweep { varied, intervals, kinds, base };
        sweep.plan(sweep.intervals[0]).validate().map_err(|e| Usage(e.to_string()))?;
        Ok(sweep)
    }

    /// Where the logs are, for captions.
    pub(crate) fn log_place(&self) -> String {
        match &self.base.workload.log_dir {
            Some(dir) => format!("the log in memory (in {})", dir.display()),
            None => "the log on the data's device".into(),
        }
    }

    /// Whether the logs are in memory.
    pub(crate) fn log_in_memory(&self) -> bool {
        self.base.workload.log_dir.is_some()
    }

    /// The plan of one interval.
    fn plan(&self, ms: u64) -> BenchPlan {
        let mut p = self.base.clone();
        let every = Some(Duration::from_millis(ms));
        match self.varied {
            Varied::Checkpoint => p.workload.checkpoint_interval = every,
            Varied::Cleaner => {
                p.workload.cleaner_interval = every;
                p.workload.checkpoint_interval = Some(Duration::from_secs(1));
            }
        }
        p
    }

    pub(crate) fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        run_logged(progress, |log| {
            let mut rows = Vec::new();
            for &ms in &self.intervals {
                rows.extend(run_bench(&self.plan(ms), log)?);
            }
            Ok::<_, WorkloadError>(rows)
        })
    }

    fn interval_of(&self, r: &BenchRow) -> Option<u64> {
        match self.varied {
            Varied::Checkpoint => r.checkpoint_ms,
            Varied::Cleaner => r.cleaner_ms,
        }
    }

    /// The median of `f` over the rows of `kind` at `ms`.
    pub(crate) fn median(
        &self,
        rows: &[BenchRow],
        kind: Propagation,
        ms: u64,
        f: impl Fn(&BenchRow) -> f64,
    ) -> Option<f64> {
        stats::median_by(rows, |r| r.propagation == kind && self.interval_of(r) == Some(ms), |r| Some(f(r)))
    }

    pub(crate) fn table(&self, rows: &[BenchRow], out: &mut dyn Write) -> io::Result<()> {
        let what = match self.varied {
            Varied::Checkpoint => "checkpoint interval (ms)",
            Varied::Cleaner => "cleaner interval (ms)",
        };
        let mut table = vec![vec![what.to_string()]];
        for k in self.kinds {
            table[0].extend([format!("{} tx/s", k.name()), "CPU cores".into(), "pages/s".into()]);
        }
        table[0].push("ratio".into());
        for &ms in &self.intervals {
            let mut row = vec![ms.to_string()];
            let cell = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
            for k in self.kinds {
                row.push(cell(self.median(rows, k, ms, BenchRow::tx_per_sec), 0));
                row.push(cell(self.median(rows, k, ms, BenchRow::cpu_cores), 2));
                row.push(cell(self.median(rows, k, ms, |r| r.pages_written as f64 / r.seconds), 0));
            }
            let ratio = self.ratio(rows, ms);
            row.push(cell(ratio, 2));
            table.push(row);
        }
        writeln!(
            out,
            "\nTPC-B, {} branches, {} thread(s), medians of {} x {:.1} s; ratio: {} / {} tx/s",
            self.base.workload.config.branches,
            self.base.threads[0],
            self.base.repeat,
            self.base.duration.as_secs_f64(),
            self.kinds[1].name(),
            self.kinds[0].name()
        )?;
        write_aligned(out, &table)?;
        writeln!(out, "balances agree with each other and with the history in every database")
    }

    /// The decoupled kind's median tx/s over the classical one's at `ms`.
    pub(crate) fn ratio(&self, rows: &[BenchRow], ms: u64) -> Option<f64> {
        stats::ratio(
            self.median(rows, self.kinds[1], ms, BenchRow::tx_per_sec)?,
            self.median(rows, self.kinds[0], ms, BenchRow::tx_per_sec)?,
        )
    }

    /// Charts of `f` (named `y`) against the interval, a series per kind.
    pub(crate) fn chart(
        &self,
        rows: &[BenchRow],
        title: &str,
        y: &str,
        f: impl Fn(&BenchRow) -> f64,
    ) -> Chart {
        let series = self
            .kinds
            .iter()
            .map(|&k| Series {
                name: k.name().to_string(),
                points: self
                    .intervals
                    .iter()
                    .filter_map(|&ms| {
                        let v: Vec<f64> = rows
                            .iter()
                            .filter(|r| r.propagation == k && self.interval_of(r) == Some(ms))
                            .map(&f)
                            .collect();
                        let s = stats::summarize(&v)?;
                        Some(Point { x: ms as f64, y: s.median, y_min: s.min, y_max: s.max })
                    })
                    .collect(),
            })
            .collect();
        Chart {
            title: title.into(),
            x_label: match self.varied {
                Varied::Checkpoint => "checkpoint interval (ms)".into(),
                Varied::Cleaner => "cleaner interval (ms)".into(),
            },
            y_label: y.into(),
            x_scale: Scale::Log2,
            series,
            note: Some(format!(
                "TPC-B, {} branches, {} thread(s); median and min..max of {} repetitions",
                self.base.workload.config.branches, self.base.threads[0], self.base.repeat
            )),
            vline: None,
            marks: None,
        }
    }

    pub(crate) fn rows(&self, name: &'static str, rows: &[BenchRow]) -> Vec<TpcbRow> {
        rows.iter().map(|r| TpcbRow { experiment: name, ..TpcbRow::new(r) }).collect()
    }
}

/// Runs `experiment lersch-checkpoints`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &LerschCheckpointsArgs) -> Result<ExitCode, Box<dyn Error>> {
    let sweep = Sweep::new(Varied::Checkpoint, &args.intervals, &args.common)?;
    experiment::execute(&LerschCheckpoints(sweep), args.common.out.as_deref())
}

/// The plan of `experiment lersch-checkpoints`.
/// Lab README rule 8: where a run measured no transactions (a `--duration` too short for one),
/// the claims cannot be held (a throughput ratio against it is 0 or infinite, and passed): one
/// check, "not enough data". `transactions`: each run's count.
fn nothing_measured(transactions: impl Iterator<Item = u64>) -> Option<Check> {
    let (mut runs, mut empty) = (0, 0);
    for n in transactions {
        runs += 1;
        empty += usize::from(n == 0);
    }
    (empty > 0).then(|| {
        Check::new(
            "the thesis's claims (Figs. 5.1-5.4)",
            "throughput and CPU per transaction against the checkpoint interval",
            format!("{empty} of {runs} runs measured no transactions"),
            Verdict::Partial,
        )
        .because("not enough data: a run measured no transactions; give a longer --duration")
    })
}

pub struct LerschCheckpoints(Sweep);

impl Experiment for LerschCheckpoints {
    const NAME: &'static str = "lersch-checkpoints";
    type Row = TpcbRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        format!(
            "Lersch 2015 Figs. 5.1-5.4: TPC-B throughput and CPU against the checkpoint interval ({} ms), \
             classical against decoupled checkpoints; the classical cleaner, no archive, {}.",
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
        if let Some(check) = nothing_measured(rows.iter().map(|r| r.transactions)) {
            return vec![check];
        }
        let s = &self.0;
        let mut checks = Vec::new();
        let (lo, hi) = (s.intervals[0], *s.intervals.last().expect("at least one interval"));
        if let Some(r) = s.ratio(rows, hi).filter(|_| hi >= 1000) {
            checks.push(Check {
                what: format!("decoupled / classical tx/s, checkpoints every {hi} ms"),
                paper: "equal above 1000 ms (Figs. 5.1, 5.2; no numbers given); 0.90 to 1.10 counts".into(),
                ours: format!("{r:.2}"),
                verdict: Verdict::of((0.9..=1.1).contains(&r)),
                reason: if r > 1.1 {
                    "decoupled is faster by more than 10% where the thesis found the two equal".into()
                } else if r < 0.9 {
                    "decoupled is slower by more than 10% where the thesis found the two equal".into()
                } else {
                    String::new()
                },
            });
        }
        let c = |k, ms| s.median(rows, k, ms, BenchRow::tx_per_sec);
        if let (Some(a), Some(b)) = (c(Propagation::Classical, lo), c(Propagation::Classical, hi)) {
            if lo < hi {
                checks.push(Check {
                    what: format!("classical tx/s, checkpoints every {hi} ms / every {lo} ms"),
                    paper:
                        "classical throughput rises as checkpoints get rarer (Fig. 5.1); above 1.00 counts"
                            .into(),
                    ours: format!("{:.2}", b / a),
                    verdict: Verdict::of(b > a),
                    reason: if b > a {
                        String::new()
                    } else {
                        format!("classical throughput did not rise from every {lo} ms to every {hi} ms")
                    },
                });
            }
        }
        let per_tx = |r: &BenchRow| r.cpu_seconds / r.transactions.max(1) as f64 * 1e6;
        if let (Some(d), Some(k)) =
            (s.median(rows, s.kinds[1], hi, per_tx), s.median(rows, s.kinds[0], hi, per_tx))
        {
            checks.push(Check {
                what: format!("CPU per transaction, decoupled / classical, every {hi} ms"),
                paper: "decoupled checkpoints use slightly more CPU (Figs. 5.3, 5.4); 1.00 to 1.25 counts"
                    .into(),
                ours: format!("{:.2} ({d:.1} / {k:.1} µs)", d / k),
                verdict: Verdict::of((1.0..=1.25).contains(&(d / k))),
                reason: if d / k > 1.25 {
                    "decoupled checkpoints cost more than slightly more CPU per transaction".into()
                } else if d / k < 1.0 {
                    "decoupled checkpoints cost less CPU per transaction, not more".into()
                } else {
                    String::new()
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
                    "TPC-B throughput against the checkpoint interval (Lersch 2015, Figs. 5.1/5.2)",
                    "transactions per second",
                    BenchRow::tx_per_sec,
                ),
            ),
            (
                format!("{}-cpu", Self::NAME),
                self.0.chart(
                    rows,
                    "CPU against the checkpoint interval (Lersch 2015, Figs. 5.3/5.4)",
                    "CPU cores busy",
                    BenchRow::cpu_cores,
                ),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that measured no transactions makes the checks "not enough data": its
    /// classical throughput ratio was infinite and passed (`--duration 1e-9` printed "inf ✓").
    #[test]
    fn checks_over_a_run_that_measured_no_transactions_are_not_enough_data() {
        let c = nothing_measured([1200, 0, 900].into_iter()).expect("a run measured nothing");
        assert_eq!(c.verdict, Verdict::Partial, "{c}");
        assert_eq!(c.ours, "1 of 3 runs measured no transactions");
        assert!(c.reason.starts_with("not enough data") && c.reason.contains("--duration"), "{c}");
        assert!(nothing_measured([1200, 1, 900].into_iter()).is_none());
    }
}

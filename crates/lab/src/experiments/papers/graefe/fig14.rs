//! `experiment graefe-fig14`: Graefe et al. 2014 Fig. 14, TPC-C in the three buffer modes with
//! the logging and locking modules each on and off, the pool larger than the data.
//!
//! The paper (100 warehouses, 12 clients) reports: with logging and locking on, swizzling gains
//! about 10% over the traditional pool; with both off about 50%; the traditional pool gains little
//! from turning both off; swizzling is statistically equivalent to main-memory in every setting.
//! Here the scale is `--warehouses` (4 by default) on this machine's cores; the checks compare
//! ratios of medians of interleaved measurements.
//!
//! Optimistic descents (`swizzledb::lab::LabOptions::optimistic_reads`) are off in every mode: the
//! paper's engine coupled latches on every descent, and traditional mode here always does, so
//! the modes differ only in how they find pages, as in the figure. `bench tpcc --optimistic
//! on,off` measures what the optimistic descents add.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use swizzledb::{PolicySpec, PoolMode};

use crate::engine::EngineName;
use crate::experiments::bench::tpcc::measure;
use crate::harness::experiment::{self, Check, Experiment, Verdict};
use crate::support::plot::{Chart, Point, Scale, Series};
use crate::support::progress::Progress;
use crate::support::stats;
use crate::support::text::write_aligned;
use crate::support::units;
use crate::workloads::bench::{Config, Setting};
use crate::workloads::tpcc::{BenchPlan, BenchRow, TpccConfig, TpccPlan, TpccRow};
use crate::Usage;

/// Options of `experiment graefe-fig14`.
#[derive(Args, Debug)]
pub struct Fig14Args {
    /// Warehouses (about 100 MiB of records each; the paper ran 100)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    warehouses: u32,
    /// Items, and stock records per warehouse (the specification's 100,000; fewer for a quick
    /// look: 100 to 1,000,000)
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    items: u32,
    /// Customers, and initial orders, per district (the specification's 3,000; 30 to 100,000)
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u32).range(30..=100_000))]
    customers: u32,
    /// Thread counts, comma-separated (the paper ran 12 clients on many cores)
    #[arg(long, default_value = "1", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Seconds per measurement
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Measurements per configuration, interleaved; tables and checks use medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    modes: units::Modes,
    /// Buffer-pool size per database [default: larger than the data and its growth, as in the paper]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
    /// Replacement policy [default: the engine's, gclock]
    #[arg(long)]
    policy: Option<PolicySpec>,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for graefe-fig14.csv, .json and the plot (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The four settings of the figure, in its order: (logging, locking, label).
pub const SETTINGS: [(bool, bool, &str); 4] = [
    (true, true, "logging+locking"),
    (true, false, "logging only"),
    (false, true, "locking only"),
    (false, false, "neither"),
];

/// Runs `experiment graefe-fig14`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn execute(args: &Fig14Args) -> Result<ExitCode, Box<dyn Error>> {
    let plan = plan(args)?;
    experiment::execute(&plan, args.out.as_deref())
}

/// The plan of `experiment graefe-fig14`.
///
/// # Errors
/// Bad options.
pub fn plan(args: &Fig14Args) -> Result<Fig14, Usage> {
    let mut threads: Vec<usize> = args.threads.iter().map(|&t| usize::from(t)).collect();
    threads.sort_unstable();
    threads.dedup();
    let plan = BenchPlan {
        workload: TpccPlan {
            engines: vec![EngineName::SwizzleDb],
            config: TpccConfig {
                items: args.items,
                customers: args.customers,
                // Shore-MT, the paper's engine, locked every read.
                committed_reads: false,
                // And read Stock-Level as isolated as the rest: at a snapshot here.
                stock_level_read_committed: false,
                ..TpccConfig::standard(args.warehouses)
            },
            transactions: None,
        },
        threads,
        duration: Duration::from_secs_f64(args.duration),
        repeat: u32::from(args.repeat),
        modes: args.modes.0.clone(),
        logging: vec![true, false],
        locking: vec![true, false],
        optimistic: vec![false],
        pool_bytes: args.pool,
        policy: args.policy,
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    plan.validate().map_err(|e| Usage(e.to_string()))?;
    Ok(Fig14(plan))
}

/// SwizzleDB's configuration `mode`, `logging`, `locking`, with optimistic descents off (the
/// paper's engine coupled latches) and no log archive (`bench tpcb` alone measures one).
fn swizzledb(mode: PoolMode, logging: bool, locking: bool) -> Config {
    Config::SwizzleDb(Setting { mode, logging, locking, optimistic: false, log_archive: false })
}

/// The line of the printed output that says how descents latch.
const LATCHING: &str = "optimistic descents: off in every mode (latch coupling, as in the paper's engine)";

/// The plan: TPC-C with every mode × setting × thread count.
pub struct Fig14(pub BenchPlan);

impl Fig14 {
    /// Median tx/s of `mode` in `setting` at `threads`.
    fn median(
        &self,
        rows: &[BenchRow],
        mode: PoolMode,
        (logging, locking): (bool, bool),
        threads: usize,
    ) -> Option<f64> {
        stats::median_by(
            rows,
            |r| r.config == swizzledb(mode, logging, locking) && r.threads == threads,
            |r| Some(r.tx_per_sec()),
        )
    }

    /// Median over thread counts of the ratio of `num` to `den` in `setting`.
    fn ratio(&self, rows: &[BenchRow], num: PoolMode, den: PoolMode, setting: (bool, bool)) -> Option<f64> {
        let v: Vec<f64> = self
            .0
            .threads
            .iter()
            .filter_map(|&t| {
                stats::ratio(self.median(rows, num, setting, t)?, self.median(rows, den, setting, t)?)
            })
            .collect();
        stats::median(&v)
    }
}

/// `✓` within `tolerance` of the paper's ratio; partial if on the same side of 1; else `✗`.
/// ✓ within `tolerance` of the paper's number, else ✗ (item 5 of the lab's rule 8: a direction
/// that agrees does not make a size that disagrees count), with the reason.
fn compare(ours: f64, paper: f64, tolerance: f64) -> (Verdict, String) {
    if (ours - paper).abs() <= tolerance {
        (Verdict::Holds, String::new())
    } else if (ours > 1.0) == (paper > 1.0) {
        (
            Verdict::Fails,
            format!("the direction agrees, the size does not (more than {tolerance:.2} from the paper's)"),
        )
    } else {
        (Verdict::Fails, "the direction disagrees".into())
    }
}

impl Experiment for Fig14 {
    const NAME: &'static str = "graefe-fig14";
    type Row = TpccRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        let p = &self.0;
        format!(
            "Graefe et al. 2014 Fig. 14: TPC-C, {} warehouses ({} items, {} customers per district), pool {} MiB \
             per database (larger than the data: no page is read), logging and locking each on and off; {} s per \
             measurement, {} repetitions, medians.",
            p.workload.config.warehouses,
            p.workload.config.items,
            p.workload.config.customers,
            p.pool() >> 20,
            p.duration.as_secs_f64(),
            p.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        measure(&self.0, progress)
    }

    fn tables(&self, rows: &Vec<BenchRow>, out: &mut dyn Write) -> io::Result<()> {
        let mut table = vec![["mode", "threads"]
            .iter()
            .map(|s| (*s).to_string())
            .chain(SETTINGS.iter().map(|s| s.2.to_string()))
            .chain(["neither / both".to_string()])
            .collect::<Vec<_>>()];
        for &threads in &self.0.threads {
            for &mode in &self.0.modes {
                let cells: Vec<Option<f64>> =
                    SETTINGS.iter().map(|&(g, k, _)| self.median(rows, mode, (g, k), threads)).collect();
                let mut row = vec![mode.name().to_string(), threads.to_string()];
                row.extend(cells.iter().map(|c| c.map_or("-".into(), |v| format!("{v:.0}"))));
                row.push(match (cells[3], cells[0]) {
                    (Some(n), Some(b)) if b > 0.0 => format!("{:.2}", n / b),
                    _ => "-".into(),
                });
                table.push(row);
            }
        }
        writeln!(out, "\n{LATCHING}")?;
        writeln!(out, "TPC-C transactions per second (medians):")?;
        write_aligned(out, &table)?;
        if let Some(note) = crate::workloads::tpcc::cut_short_note(&self.0, rows) {
            writeln!(out, "{note}")?;
        }
        writeln!(out, "consistency conditions 1-4 hold in every database")
    }

    fn checks(&self, rows: &Vec<BenchRow>) -> Vec<Check> {
        use PoolMode::{MainMemory, Swizzling, Traditional};
        let mut checks = Vec::new();
        let modes = &self.0.modes;
        if modes.contains(&Swizzling) && modes.contains(&Traditional) {
            for ((logging, locking), paper, label) in [
                ((true, true), 1.10, "logging and locking on"),
                ((false, false), 1.50, "logging and locking off"),
            ] {
                if let Some(v) = self.ratio(rows, Swizzling, Traditional, (logging, locking)) {
                    let (verdict, reason) = compare(v, paper, 0.10);
                    checks.push(Check {
                        what: format!("swizzling / traditional, {label}"),
                        paper: format!("about {paper:.2} (100 warehouses, 12 clients); within 0.10 counts"),
                        ours: format!("{v:.2}"),
                        verdict,
                        reason,
                    });
                }
            }
            let gain = |mode| {
                let v: Vec<f64> = self
                    .0
                    .threads
                    .iter()
                    .filter_map(|&t| {
                        stats::ratio(
                            self.median(rows, mode, (false, false), t)?,
                            self.median(rows, mode, (true, true), t)?,
                        )
                    })
                    .collect();
                stats::median(&v)
            };
            if let (Some(t), Some(s)) = (gain(Traditional), gain(Swizzling)) {
                checks.push(Check {
                    what: "gain from turning logging and locking off: traditional / swizzling".into(),
                    paper: "traditional gains little, swizzling much (ratio well below 1; below 0.8 counts)"
                        .into(),
                    ours: format!("{t:.2}x / {s:.2}x = {:.2}", t / s),
                    verdict: Verdict::of(t / s < 0.8),
                    reason: if t / s < 0.8 {
                        String::new()
                    } else {
                        "turning logging and locking off helps the traditional pool about as much as swizzling".into()
                    },
                });
            }
        }
        if modes.contains(&Swizzling) && modes.contains(&MainMemory) {
            let v: Vec<f64> = SETTINGS
                .iter()
                .filter_map(|&(g, k, _)| self.ratio(rows, Swizzling, MainMemory, (g, k)))
                .collect();
            if let (Some(lo), Some(hi)) =
                (v.iter().copied().reduce(f64::min), v.iter().copied().reduce(f64::max))
            {
                let within = lo >= 0.9 && hi <= 1.1;
                let all = v.len() == SETTINGS.len();
                checks.push(Check {
                    what: "swizzling / main-memory, over the four settings".into(),
                    paper: "statistically equivalent in every setting; 0.90 to 1.10 counts".into(),
                    ours: format!("{lo:.2} to {hi:.2} ({} of {} settings measured)", v.len(), SETTINGS.len()),
                    verdict: match (within, all) {
                        (true, true) => Verdict::Holds,
                        (true, false) => Verdict::Partial,
                        (false, _) => Verdict::Fails,
                    },
                    reason: match (within, all) {
                        (true, true) => String::new(),
                        (true, false) => {
                            "the settings measured agree, but a main-memory pool filled before the \
                                          others were (see the note under the table)"
                                .into()
                        }
                        (false, _) => {
                            "swizzling and main-memory differ by more than 10% in some setting".into()
                        }
                    },
                });
            }
        }
        checks
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpccRow> {
        rows.iter().map(|r| TpccRow::new(Self::NAME, r)).collect()
    }

    fn charts(&self, rows: &Vec<BenchRow>) -> Vec<(String, Chart)> {
        let threads = self.0.threads.iter().copied().max().unwrap_or(1);
        let series = self
            .0
            .modes
            .iter()
            .map(|&mode| Series {
                name: mode.name().to_string(),
                points: SETTINGS
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &(g, k, _))| {
                        let v: Vec<f64> = rows
                            .iter()
                            .filter(|r| r.config == swizzledb(mode, g, k) && r.threads == threads)
                            .map(BenchRow::tx_per_sec)
                            .collect();
                        let s = stats::summarize(&v)?;
                        Some(Point { x: (i + 1) as f64, y: s.median, y_min: s.min, y_max: s.max })
                    })
                    .collect(),
            })
            .collect();
        let chart = Chart {
            title: "TPC-C with logging and locking on and off (Graefe et al. 2014, Fig. 14)".into(),
            x_label: "1 logging+locking, 2 logging only, 3 locking only, 4 neither".into(),
            y_label: "transactions per second".into(),
            x_scale: Scale::Linear,
            series,
            note: Some(format!(
                "{} warehouses, {threads} thread(s); median and min..max of {} repetitions",
                self.0.workload.config.warehouses, self.0.repeat
            )),
            vline: None,
            marks: None,
        };
        vec![(Self::NAME.to_string(), chart)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_compare_with_a_tolerance_and_name_the_direction() {
        assert_eq!(compare(1.45, 1.5, 0.1), (Verdict::Holds, String::new()));
        // A direction that agrees does not make a size that disagrees count.
        let (v, why) = compare(1.2, 1.5, 0.1);
        assert_eq!(v, Verdict::Fails);
        assert!(why.contains("direction agrees"), "{why}");
        assert_eq!(compare(1.05, 1.1, 0.1).0, Verdict::Holds);
        assert_eq!(compare(0.8, 1.1, 0.1), (Verdict::Fails, "the direction disagrees".into()));
    }

    #[derive(clap::Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Fig14Args,
    }

    /// The tiny scale: a row per mode and setting, the chart and the four checks; items and
    /// customers out of range are refused as the arguments are parsed.
    #[test]
    fn tiny_scale_makes_rows_a_chart_and_the_checks() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let parse = |extra: &[&str]| {
            let base = ["t", "--warehouses", "1", "--duration", "0.05", "--repeat", "1", "--dir", d];
            TestCli::try_parse_from(base.iter().chain(extra)).unwrap().args
        };
        let p = plan(&parse(&["--items", "2000", "--customers", "300"])).unwrap();
        let results = p.run(Progress::off()).unwrap();
        let rows = p.rows(&results);
        assert_eq!(rows.len(), 3 * 4, "three modes, four settings");
        assert!(!p.charts(&results).is_empty());
        assert_eq!(p.checks(&results).len(), 4);
        // Out of the workload's range: refused as the arguments are parsed.
        let refused = |extra: &[&str]| {
            let base = ["t", "--warehouses", "1", "--dir", d];
            TestCli::try_parse_from(base.iter().chain(extra)).err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(refused(&["--items", "99"]).contains("100..=1000000"));
        assert!(refused(&["--customers", "29"]).contains("30..=100000"));
    }
}

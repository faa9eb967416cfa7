//! `bench tpcb`: argument parsing for the TPC-B benchmark; the workload, the measurements and
//! the table live in `crate::tpcb`.

use crate::experiment::{self, Experiment};
use crate::progress::Progress;
use crate::tpcb::{print_table, run_bench, BenchPlan, BenchRow, TpcbConfig, TpcbRow};
use crate::WorkloadError;
use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use swizzledb::PolicySpec;

use crate::experiments::tpcc::{dedup, parse_on_off};
use crate::units;
use crate::Usage;

/// Options of `bench tpcb`.
#[derive(Args, Debug)]
pub struct TpcbArgs {
    /// Branches (the scale: 10 tellers and 100,000 accounts, about 10 MiB of records, each)
    #[arg(long, default_value_t = 4)]
    branches: u32,
    /// Thread counts, comma-separated
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Seconds per measurement
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Measurements per configuration, interleaved; the table shows medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    modes: units::Modes,
    /// Logging settings, comma-separated: on, off (with logging, commits are asynchronous)
    #[arg(long, default_value = "off", value_delimiter = ',', value_parser = parse_on_off)]
    logging: Vec<bool>,
    /// Record-locking settings, comma-separated: on, off
    #[arg(long, default_value = "off", value_delimiter = ',', value_parser = parse_on_off)]
    locking: Vec<bool>,
    /// Buffer-pool size per database [default: twice the loaded records plus the history the
    /// measurements add, so that everything stays in memory]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
    /// Replacement policy [default: the engine's, gclock]
    #[arg(long)]
    policy: Option<PolicySpec>,
    /// Directory for the temporary databases [default: the system temp directory]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Directory for tpcb.csv (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs `bench tpcb`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn run(args: &TpcbArgs) -> Result<ExitCode, Box<dyn Error>> {
    let plan = BenchPlan {
        config: TpcbConfig::standard(args.branches),
        threads: dedup(&args.threads).into_iter().map(usize::from).collect(),
        duration: Duration::from_secs_f64(args.duration),
        repeat: u32::from(args.repeat),
        modes: args.modes.0.clone(),
        logging: dedup(&args.logging),
        locking: dedup(&args.locking),
        pool_bytes: args.pool,
        policy: args.policy,
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    plan.validate().map_err(|e| Usage(e.to_string()))?;
    experiment::execute(&Tpcb(plan), args.out.as_deref())
}

/// `bench tpcb` as an experiment.
pub struct Tpcb(pub BenchPlan);

impl Experiment for Tpcb {
    const NAME: &'static str = "tpcb";
    type Row = TpcbRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        let p = &self.0;
        format!(
            "TPC-B: {} branches, pool {} MiB per database, {} s per measurement, {} repetitions",
            p.config.branches,
            p.pool() >> 20,
            p.duration.as_secs_f64(),
            p.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        let mut log: Box<dyn Write> =
            if progress.is_on() { Box::new(io::stderr()) } else { Box::new(io::sink()) };
        match run_bench(&self.0, &mut log) {
            Err(WorkloadError::Config(e)) => Err(Usage(e).into()),
            r => Ok(r?),
        }
    }

    fn tables(&self, rows: &Vec<BenchRow>, mut out: &mut dyn Write) -> io::Result<()> {
        print_table(&mut out, &self.0, rows)?;
        writeln!(out, "balances agree with each other and with the history in every database")
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpcbRow> {
        rows.iter().map(TpcbRow::new).collect()
    }
}

//! `bench tpcb`: argument parsing for the TPC-B benchmark; the workload, the measurements and
//! the table live in `crate::workloads::tpcb`.

use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::workloads::tpcb::{
    print_table, run_bench, BenchPlan, BenchRow, Propagation, TpcbConfig, TpcbPlan, TpcbRow,
};
use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::experiments::workload_options::{dedup, parse_on_off, run_logged, WorkloadOptions};

/// Options of `bench tpcb`.
#[derive(Args, Debug)]
pub struct TpcbArgs {
    /// Branches (the scale: 10 tellers and 100,000 accounts, about 10 MiB of records, each)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    branches: u32,
    /// Log-archive settings, comma-separated: on, off. On: every checkpoint sorts the durable
    /// log's page changes into a run of an archive directory (Builder::log_archive). Applies
    /// with logging on; logging off is measured once, as off (an archive needs a log)
    #[arg(long, default_value = "off", value_delimiter = ',', value_parser = parse_on_off)]
    log_archive: Vec<bool>,
    /// Interval of the background fuzzy checkpoints, in milliseconds (each also archives the
    /// log when the archive is on) [default: the engine's, 30 s]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    checkpoint_ms: Option<u64>,
    /// Propagation settings, comma-separated (Lersch 2015): classical (the classical page
    /// cleaner and fuzzy checkpoints), decoupled-checkpoint (the classical cleaner and
    /// log-based checkpoints), decoupled (the decoupled cleaner replaying the log archive, and
    /// log-based checkpoints; only with --log-archive on). Apply with logging on
    #[arg(long, default_value = "classical", value_delimiter = ',', value_parser = Propagation::parse)]
    propagation: Vec<Propagation>,
    /// The page cleaner also runs a full round every this many milliseconds (the classical one
    /// writes back every dirty page, the decoupled one replays everything archived) [default:
    /// only when the log passes three quarters of its bound]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    cleaner_ms: Option<u64>,
    /// Keep each database's log in this directory instead of beside its file (its `<file>.wal`
    /// becomes a symbolic link there): another device, or a memory file system such as
    /// `/dev/shm` for Lersch's "log in memory"
    #[arg(long, value_name = "DIR")]
    log_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    options: WorkloadOptions,
}

/// Runs `bench tpcb`.
///
/// # Errors
/// Bad options (as [`Usage`](crate::Usage); a `--log-dir` that is no directory as
/// [`UnusablePath`](crate::UnusablePath)), or a database or I/O failure.
pub fn run(args: &TpcbArgs) -> Result<ExitCode, Box<dyn Error>> {
    let plan = args.options.plan(TpcbPlan {
        config: TpcbConfig::standard(args.branches),
        log_archive: dedup(&args.log_archive),
        checkpoint_interval: args.checkpoint_ms.map(std::time::Duration::from_millis),
        propagation: dedup(&args.propagation),
        cleaner_interval: args.cleaner_ms.map(std::time::Duration::from_millis),
        log_dir: args.log_dir.clone(),
    });
    plan.validate().map_err(crate::experiments::workload_options::refusal)?;
    experiment::execute(&Tpcb(plan), args.options.out.as_deref())
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
            p.workload.config.branches,
            p.pool() >> 20,
            p.duration.as_secs_f64(),
            p.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        run_logged(progress, |log| run_bench(&self.0, log))
    }

    fn tables(&self, rows: &Vec<BenchRow>, mut out: &mut dyn Write) -> io::Result<()> {
        print_table(&mut out, &self.0, rows)?;
        writeln!(out, "balances agree with each other and with the history in every database")
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpcbRow> {
        rows.iter().map(TpcbRow::new).collect()
    }
}

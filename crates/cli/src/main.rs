//! The `swizzledb` command: the demo and the benchmark workloads.
//!
//! `swizzledb demo` compares the three buffer modes on a small random-read workload;
//! `swizzledb bench rndread` runs that workload with every knob exposed.

#![forbid(unsafe_code)]

mod report;
mod rndread;
mod units;

use clap::{Args, Parser, Subcommand};
use rndread::{Config, Progress};
use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swizzledb::{PolicyKind, PoolMode};

#[derive(Parser)]
#[command(name = "swizzledb", version, about = "SwizzleDB: demo and experiments")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compare traditional, swizzling and main-memory buffers on random lookups (about 30 s)
    Demo,
    /// Run a benchmark workload
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
}

#[derive(Subcommand)]
enum Workload {
    /// Uniformly random lookups of verified values in N records, one database per mode
    Rndread(RndreadArgs),
}

#[derive(Args)]
struct RndreadArgs {
    /// Records to load (1000000, 1_000_000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Lookup threads
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    mode: units::Modes,
    /// Buffer-pool size per database (64MiB, 1GiB, 512KiB or bytes) [default: records x 200
    /// bytes, at least 64MiB]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
    /// Page size in bytes (4KiB to 32KiB, a power of two)
    #[arg(long, default_value = "8192", value_parser = units::parse_size)]
    page_size: u64,
    /// Replacement policy: gclock, gclock:K or random
    #[arg(long, default_value = "gclock")]
    policy: PolicyKind,
    /// Seconds per measurement
    #[arg(long, default_value = "3", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Seconds of unmeasured lookups before each measurement
    #[arg(long, default_value = "1", value_parser = units::parse_seconds)]
    warmup: f64,
    /// Measurements per mode (interleaved across modes)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Seed for the lookup threads and randomized policies
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for the temporary database files [default: the system temp directory]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Append one row per mode and repetition to this CSV file
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
}

/// The demo's scale: loading 1M records takes about 0.3 s per mode in a release build.
const DEMO_RECORDS: u64 = 1_000_000;
const DEMO_CSV: &str = "swizzledb-demo.csv";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Demo => demo(),
        Command::Bench { workload: Workload::Rndread(args) } => bench_rndread(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench_rndread(args: &RndreadArgs) -> Result<ExitCode, Box<dyn Error>> {
    let size = |what: &str, v: u64| {
        usize::try_from(v).map_err(|_| format!("{what} {v} does not fit in memory addresses"))
    };
    let cfg = Config {
        records: args.records,
        threads: usize::from(args.threads),
        modes: args.mode.0.clone(),
        pool_bytes: size("--pool", args.pool.unwrap_or_else(|| rndread::default_pool_bytes(args.records)))?,
        page_size: size("--page-size", args.page_size)?,
        policy: args.policy,
        duration: args.duration,
        warmup: args.warmup,
        repeat: usize::from(args.repeat),
        seed: args.seed,
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    execute(&cfg, args.csv.as_deref(), false)
}

fn demo() -> Result<ExitCode, Box<dyn Error>> {
    let cfg = Config {
        records: DEMO_RECORDS,
        threads: 1,
        modes: PoolMode::ALL.to_vec(),
        pool_bytes: usize::try_from(rndread::default_pool_bytes(DEMO_RECORDS))?,
        page_size: 8192,
        policy: PolicyKind::default(),
        duration: 2.0,
        warmup: 1.0,
        repeat: 3,
        seed: 42,
        dir: std::env::temp_dir(),
    };
    println!(
        "Loads {} records into three databases — traditional, swizzling, main-memory — and \
         measures random lookups on one thread: 3 interleaved repetitions of {} s per mode, every \
         value verified. Takes about half a minute.\n",
        report::thousands(cfg.records),
        cfg.duration
    );
    let code = execute(&cfg, Some(Path::new(DEMO_CSV)), true)?;
    println!("\nWrote one CSV row per mode and repetition to {DEMO_CSV}.");
    Ok(code)
}

/// Runs rndread, prints the table and writes the CSV. Exit code 1 if a mode failed.
fn execute(cfg: &Config, csv: Option<&Path>, fresh_csv: bool) -> Result<ExitCode, Box<dyn Error>> {
    let progress = Progress::on_terminal();
    let (results, open) = rndread::run(cfg, progress)?;
    let mut out = std::io::stdout().lock();
    report::print_table(&mut out, cfg, &results)?;
    out.flush()?;
    if let Some(path) = csv {
        report::write_csv(path, cfg, &results, fresh_csv)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    progress.say(format_args!("closing and deleting the temporary databases ..."));
    drop(open);
    Ok(if results.iter().any(|r| r.error.is_some()) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

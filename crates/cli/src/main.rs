//! The `swizzledb` command: the demo, benchmark workloads and paper experiments.
//!
//! - `swizzledb demo` — the Graefe et al. Fig. 10/11 experiment at small scale (about a minute).
//! - `swizzledb bench lookup` — random verified lookups with every knob exposed, optionally swept.
//! - `swizzledb bench tpcc` — TPC-C per buffer mode, logging and locking (`swizzledb_lab::tpcc`).
//! - `swizzledb bench emulator` — the BP-Wrapper paper's buffer emulator: replacement-lock
//!   contention of locked, partitioned, batched and CLOCK buffers (Ding et al. 2015, Figs. 11-13).
//! - `swizzledb experiment fig10` — Fig. 10/11 at laptop scale: lookups per second of the three
//!   buffer modes as the data grows from far below to several times the pool.
//! - `swizzledb trace record --out FILE -- <command>` — buffer reference traces of any command.
//! - `swizzledb trace analyze` / `trace generate` — miss-ratio curves of every replacement policy
//!   and Belady's OPT over a reference string; synthetic reference strings.
//! - `swizzledb sim dbmin` — Chou & DeWitt 1986 Figs. 2-5: DBMIN and five other buffer managers
//!   in a simulated multiuser system, throughput against concurrent queries.

#![forbid(unsafe_code)]

mod analyze;
mod bpwrapper;
mod crashtest;
mod dbmin;
mod drift;
mod emulator;
mod fixcost;
mod insert;
mod isolation;
mod plot;
mod policies;
mod report;
mod rndread;
mod tpcb;
mod tpcc;
mod trace;
mod units;
mod walbench;
mod ycsb;

use clap::{Args, Parser, Subcommand};
use rndread::{Config, Progress, RECORD_BYTES};
use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swizzledb::{PolicySpec, PoolMode};
use units::{Sweep, SweepVar, WorkingSet};

#[derive(Parser)]
#[command(name = "swizzledb", version, about = "SwizzleDB: demo, benchmarks and paper experiments")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lookups/s of traditional, swizzling and main-memory buffers as the data outgrows a small
    /// pool (Graefe et al. Fig. 10/11 in miniature, about a minute)
    Demo {
        /// Directory for the CSV, JSON and plots
        #[arg(long, default_value = "swizzledb-demo")]
        out: PathBuf,
    },
    /// Run one benchmark workload
    Bench {
        #[command(subcommand)]
        workload: Workload,
    },
    /// Reproduce an experiment of the papers with one command
    Experiment {
        #[command(subcommand)]
        which: Experiment,
    },
    /// Buffer reference traces: record them from any command, export them, simulate every
    /// replacement policy and Belady's OPT over them, or generate synthetic ones
    Trace {
        #[command(subcommand)]
        action: trace::TraceAction,
    },
    /// Kill a logged writer with SIGKILL at random moments, restart, and check that every
    /// acknowledged commit survived, nothing uncommitted is visible and the tree is valid
    CrashTest(crashtest::CrashTestArgs),
    /// Simulators of buffer management papers
    Sim {
        #[command(subcommand)]
        which: dbmin::SimCommand,
    },
}

#[derive(Subcommand)]
enum Workload {
    /// Uniformly random lookups of verified values (8-byte keys, 120-byte values), one database
    /// per mode, repetitions interleaved across modes
    #[command(alias = "rndread")]
    Lookup(LookupArgs),
    /// Random-order insertions after an unmeasured preload, a fresh database per mode and
    /// repetition (each repetition times all inserts: --duration and --warmup do not apply)
    Insert(InsertArgs),
    /// Lookups in a hot key range that slides by a quarter of its length every interval, with a
    /// throughput time series
    Drift(DriftArgs),
    /// The BP-Wrapper paper's buffer emulator (Ding et al. 2015, Figs. 11-13): threads share an
    /// in-memory buffer and compute between accesses; locked LRU, DistLock, batching,
    /// prefetching, full BP-Wrapper, BP-Wrapper per partition, bufBP-prim and CLOCK
    Emulator(emulator::EmulatorArgs),
    /// Write-ahead logging: overhead on inserts (logging off, async and sync commit, auto-commit),
    /// commits per fsync under group commit, the log kept with the page cleaner on and off, and
    /// restart time against the log since the last checkpoint and against the writer's run time
    Wal(walbench::WalBenchArgs),
    /// What record locks with next-key locking cost (LOCKS.md K14-K16): point transactions,
    /// scan-heavy transactions and reads outside a transaction, locking on against off
    Isolation(isolation::IsolationArgs),
    /// TPC-C (five transactions, standard mix, no think time; vmcache's schema and key layout):
    /// throughput per buffer mode, logging and locking setting and thread count, consistency
    /// conditions 1-4 checked after the run
    Tpcc(tpcc::TpccArgs),
    /// TPC-B (branches, tellers, accounts, history; one transaction moving a random delta):
    /// throughput per buffer mode, logging and locking setting and thread count, balances
    /// checked against each other and the history after the run
    Tpcb(tpcb::TpcbArgs),
    /// YCSB core workloads A-F (zipfian 0.99 or latest requests, 1 KiB records): operations per
    /// second per workload, buffer mode, logging and locking setting and thread count, every
    /// record checked after the run
    Ycsb(ycsb::YcsbArgs),
}

#[derive(Subcommand)]
enum Experiment {
    /// Graefe et al. 2014 Fig. 10/11: lookups as the data grows from 1/8 of the pool to 8 times
    /// it; swizzling should match main-memory in memory and degrade like traditional beyond
    Fig10(Fig10Args),
    /// Graefe et al. 2014 Fig. 12: random-order insertions into an index that fits in memory
    /// (2,000,000 new records after 400,000 preloaded); swizzling should match main-memory and
    /// beat traditional
    Fig12(Fig12Args),
    /// Graefe et al. 2014 Fig. 13: a drifting working set (16 MiB hot range, 25% replaced every
    /// 5 s) in 1 GiB of data with a 128 MiB pool; swizzling should beat traditional in the steady
    /// state and recover from each shift as fast
    Fig13(DriftArgs),
    /// The cost of one fix() hit per buffer mode and latch mode, in nanoseconds (Graefe et al.
    /// 2014; Gilbert 2017 found a swizzled fix about 30% cheaper than a page-table fix)
    Fix(FixArgs),
    /// Gilbert 2017 Figs. 3.4/3.5/3.9: lookups with each replacement policy, swizzling off and
    /// on, at pools of a fraction of the data: throughput, hit ratio, evictioner time per call and
    /// refused candidates (about 12 minutes with the defaults; --duration 1 for a quicker look)
    Policies(PoliciesArgs),
    /// Ding, Shan & Jiang 2015 (BP-Wrapper) on the live engine: lookups at a pool of half the data
    /// with CLOCK, LRU, 2Q and hot/cold locked on every access (locked-*), and behind BP-Wrapper
    /// (bpw-*; hot/cold's hot hits are not queued, the paper's Fig. 7), at 1 to 16 threads:
    /// throughput, hit ratio and lock waits per million accesses
    #[command(name = "bp-wrapper")]
    BpWrapper(BpWrapperArgs),
}

/// The policies the BP-Wrapper experiment compares by default.
const BPW_POLICIES: &str =
    "clock,lru,locked-lru,bpw-lru,2q,locked-2q,bpw-2q,hot-cold,locked-hot-cold,bpw-hot-cold";

#[derive(Args)]
struct BpWrapperArgs {
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Policies to compare, comma-separated (replaces --policy)
    #[arg(long, default_value = BPW_POLICIES, value_delimiter = ',')]
    policies: Vec<PolicySpec>,
    /// Thread counts, comma-separated (replaces --threads)
    #[arg(long = "thread-counts", default_value = "1,2,4,8,16", value_delimiter = ',',
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    thread_counts: Vec<u16>,
    /// Pool size as a percentage of the data
    #[arg(long, default_value = "50%", value_parser = parse_fraction)]
    fraction: f64,
    /// Zipf exponent of key popularity (hot keys scattered over the tree); 0 (the default) for
    /// uniform keys, the rndread workload, where every policy has the same hit ratio
    #[arg(long, default_value = "0", value_parser = parse_zipf)]
    zipf: f64,
}

/// The policies compared by default: Gilbert's three, the classics, the adaptive ones, today's
/// FIFO-based ones, and the structure-aware variants.
const DEFAULT_POLICIES: &str =
    "random,gclock,car,clock,lru,2q,arc,lirs,clock-pro,sieve,s3-fifo,leaf-gclock,gclock-sweep";

#[derive(Args)]
struct PoliciesArgs {
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Records looked up: a percentage of the records or bytes [default: all records]
    #[arg(long, value_parser = units::parse_working_set)]
    working_set: Option<WorkingSet>,
    /// Policies to compare, comma-separated (replaces --policy)
    #[arg(long, default_value = DEFAULT_POLICIES, value_delimiter = ',')]
    policies: Vec<PolicySpec>,
    /// Pool sizes as percentages of the data, comma-separated
    #[arg(long, default_value = "25%,50%", value_delimiter = ',', value_parser = parse_fraction)]
    fractions: Vec<f64>,
    /// Zipf exponent of key popularity (hot keys scattered over the tree); 0 for uniform keys
    #[arg(long, default_value = "0.9", value_parser = parse_zipf)]
    zipf: f64,
}

fn parse_fraction(input: &str) -> Result<f64, String> {
    let s = input.trim();
    let v: f64 = s
        .strip_suffix('%')
        .unwrap_or(s)
        .trim()
        .parse()
        .map_err(|_| format!("invalid pool fraction {input:?}; expected a percentage such as 25%"))?;
    if v > 0.0 && v <= 100.0 {
        Ok(v / 100.0)
    } else {
        Err(format!("pool fraction {input:?} must be above 0% and at most 100%"))
    }
}

fn parse_zipf(input: &str) -> Result<f64, String> {
    match input.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("invalid Zipf exponent {input:?}; expected a number >= 0 (0: uniform)")),
    }
}

#[derive(Args)]
struct FixArgs {
    #[command(flatten)]
    common: Common,
    /// Records per database (the root must have many children)
    #[arg(long, default_value = "200000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Fixes timed per mode, latch mode and repetition
    #[arg(long, default_value = "20000000", value_parser = units::parse_positive_count)]
    fixes: u64,
}

#[derive(Args)]
struct DriftArgs {
    #[command(flatten)]
    common: Common,
    /// Records in the database (far more than the pool holds)
    #[arg(long, default_value = "8M", value_parser = units::parse_positive_count)]
    records: u64,
    /// Size of the hot key range (bytes of keys and values, 128 per record)
    #[arg(long, default_value = "16MiB", value_parser = units::parse_size)]
    hot: u64,
    /// Buffer-pool size per database
    #[arg(long, default_value = "128MiB", value_parser = units::parse_size)]
    pool: u64,
    /// Seconds between shifts of the hot range
    #[arg(long, default_value = "5", value_parser = units::parse_positive_seconds)]
    interval: f64,
    /// Shifts measured
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    shifts: u32,
    /// Seconds per throughput sample
    #[arg(long, default_value = "0.5", value_parser = units::parse_positive_seconds)]
    sample: f64,
}

#[derive(Args)]
struct InsertArgs {
    #[command(flatten)]
    common: Common,
    /// Records in the database at the end
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Records inserted (unmeasured) before the timed insertions [default: records / 6, as
    /// Graefe et al.'s 10M before 50M]
    #[arg(long, value_parser = units::parse_count)]
    preload: Option<u64>,
    /// Buffer-pool size per database [default: records x 320 bytes, at least 64MiB: the index
    /// fits in memory]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
}

#[derive(Args)]
struct Fig12Args {
    #[command(flatten)]
    common: Common,
    /// Records at the end (a sixth of them preloaded)
    #[arg(long, default_value = "2400000", value_parser = units::parse_positive_count)]
    records: u64,
}

/// Options shared by every workload.
#[derive(Args, Clone)]
struct Common {
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    mode: units::Modes,
    /// Lookup threads (threads beyond the cores oversubscribe them)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Page size in bytes (4KiB to 32KiB, a power of two)
    #[arg(long, default_value = "8192", value_parser = units::parse_size)]
    page_size: u64,
    /// Replacement policy, e.g. gclock, gclock:4, random, clock, lru, sieve, gclock-sweep; prefix
    /// leaf- for the structure-aware variant (leaf-lru); an unknown name lists them all
    #[arg(long, default_value = "gclock")]
    policy: PolicySpec,
    /// Seconds per measurement
    #[arg(long, default_value = "3", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Seconds of unmeasured operations before each measurement
    #[arg(long, default_value = "1", value_parser = units::parse_seconds)]
    warmup: f64,
    /// Measurements per mode (interleaved across modes: A B C A B C ...)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Seed for the workload threads and randomized policies
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for the temporary database files [default: the system temp directory]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Mode the printed ratios are relative to [default: main-memory, else the first mode]
    #[arg(long, value_parser = parse_mode)]
    baseline: Option<PoolMode>,
    /// Read and write the database file with O_DIRECT, bypassing the OS page cache, so misses
    /// cost real device I/O
    #[arg(long)]
    direct_io: bool,
    /// Directory for results: <experiment>.csv, <experiment>.json (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct LookupArgs {
    #[command(flatten)]
    common: Common,
    /// Records to load (1000000, 1_000_000, 1e6 or 1M)
    #[arg(long, default_value = "1000000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Part of the key range that is looked up: a fraction (0.25, 25%) or bytes of keys and
    /// values (64MiB; 128 bytes per record) [default: all records]
    #[arg(long, value_parser = units::parse_working_set)]
    working_set: Option<WorkingSet>,
    /// Buffer-pool size per database (64MiB, 1GiB, 512KiB or bytes) [default: records x 200
    /// bytes, at least 64MiB]
    #[arg(long, value_parser = units::parse_size)]
    pool: Option<u64>,
    /// Run a grid instead of one point: records=8MiB..256MiB:x2 (database size) or
    /// working-set=16MiB..1GiB:x2 (accessed range), or a list records=8MiB,64MiB
    #[arg(long, value_parser = units::parse_sweep)]
    sweep: Option<Sweep>,
    /// Append one row per mode and repetition to this CSV file
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Zipf exponent of key popularity (hot keys scattered over the tree); 0 for uniform keys
    #[arg(long, default_value = "0", value_parser = parse_zipf)]
    zipf: f64,
}

#[derive(Args)]
struct Fig10Args {
    #[command(flatten)]
    common: Common,
    /// Buffer-pool size (the memory limit of main-memory mode)
    #[arg(long, default_value = "64MiB", value_parser = units::parse_size)]
    pool: u64,
    /// Largest database, as a multiple of the pool (powers of two from 1/8 of the pool up to it)
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_factor: u64,
}

/// The demo's scale: 6 sizes from 1/8 to 4 times a 32 MiB pool, 2 x 1 s per mode and size.
const DEMO_POOL: u64 = 32 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            // Bad input found before any work: exit 2 like clap's own usage errors.
            if e.is::<Usage>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Runs one command (also the command that `trace record` traces).
fn run(command: Command) -> Result<ExitCode, Box<dyn Error>> {
    match command {
        Command::Demo { out } => demo(&out),
        Command::Bench { workload: Workload::Lookup(args) } => bench_lookup(&args),
        Command::Bench { workload: Workload::Insert(args) } => {
            bench_insert("insert", &args.common, args.records, args.preload, args.pool)
        }
        Command::Bench { workload: Workload::Drift(args) } => bench_drift("drift", &args),
        Command::Bench { workload: Workload::Emulator(args) } => emulator::run(&args),
        Command::Bench { workload: Workload::Wal(args) } => walbench::run(&args),
        Command::Bench { workload: Workload::Isolation(args) } => isolation::run(&args),
        Command::Bench { workload: Workload::Tpcc(args) } => tpcc::run(&args),
        Command::Bench { workload: Workload::Tpcb(args) } => tpcb::run(&args),
        Command::Bench { workload: Workload::Ycsb(args) } => ycsb::run(&args),
        Command::Experiment { which: Experiment::Fig13(args) } => bench_drift("graefe-fig13", &args),
        Command::Experiment { which: Experiment::Fig10(args) } => fig10(&args),
        Command::Experiment { which: Experiment::Fix(args) } => fix_cost(&args),
        Command::Experiment { which: Experiment::Policies(args) } => policies_experiment(&args),
        Command::Experiment { which: Experiment::BpWrapper(args) } => bpwrapper_experiment(&args),
        Command::Experiment { which: Experiment::Fig12(args) } => {
            bench_insert("graefe-fig12", &args.common, args.records, None, None)
        }
        Command::Trace { action } => trace::run(action),
        Command::CrashTest(args) => crashtest::run(&args),
        Command::Sim { which: dbmin::SimCommand::Dbmin(args) } => dbmin::run(&args),
    }
}

/// Bad input detected before anything ran or was written.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Usage {}

fn parse_mode(s: &str) -> Result<PoolMode, String> {
    s.parse().map_err(|e: swizzledb::BufferError| e.to_string())
}

fn to_usize(what: &str, v: u64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{what} {v} does not fit in memory addresses"))
}

/// The configuration of one point, before records and working set are chosen.
fn base_config(experiment: &str, c: &Common, pool: u64) -> Result<Config, String> {
    if !usize::try_from(c.page_size).is_ok_and(swizzledb_buffer::page::valid_page_size) {
        return Err(format!(
            "--page-size {} is not supported; use a power of two from 4KiB to 32KiB",
            c.page_size
        ));
    }
    let min_pool = swizzledb_buffer::MIN_FRAMES as u64 * c.page_size;
    if pool < min_pool {
        return Err(format!(
            "--pool {} is below the minimum of {} ({} pages of {})",
            report::bytes(pool),
            report::bytes(min_pool),
            swizzledb_buffer::MIN_FRAMES,
            report::bytes(c.page_size)
        ));
    }
    Ok(Config {
        experiment: experiment.to_string(),
        records: 0,
        working_set: 0,
        zipf: None,
        threads: usize::from(c.threads),
        modes: c.mode.0.clone(),
        pool_bytes: to_usize("--pool", pool)?,
        page_size: to_usize("--page-size", c.page_size)?,
        policy: c.policy,
        duration: c.duration,
        timed_ops: None,
        warmup: c.warmup,
        repeat: usize::from(c.repeat),
        seed: c.seed,
        direct_io: c.direct_io,
        baseline: c.baseline,
        dir: c.dir.clone().unwrap_or_else(std::env::temp_dir),
    })
}

/// Records accessed for a working-set option over `records` records.
fn working_set_records(ws: Option<WorkingSet>, records: u64) -> Result<u64, String> {
    let n = match ws {
        None => records,
        Some(WorkingSet::Fraction(f)) => ((records as f64 * f).round() as u64).max(1),
        Some(WorkingSet::Bytes(b)) => (b / RECORD_BYTES).max(1),
    };
    if n > records {
        return Err(format!(
            "the working set ({} records) is larger than the data ({records} records); lower \
             --working-set or raise --records",
            n
        ));
    }
    Ok(n)
}

/// The points of a run: one, or one per sweep value.
fn points(
    base: &Config,
    records: u64,
    ws: Option<WorkingSet>,
    sweep: Option<&Sweep>,
) -> Result<Vec<Config>, String> {
    let point = |records: u64, working_set: u64| Config { records, working_set, ..base.clone() };
    match sweep {
        None => Ok(vec![point(records, working_set_records(ws, records)?)]),
        Some(s) => {
            s.values
                .iter()
                .map(|&v| {
                    let n = (v / RECORD_BYTES).max(1);
                    match s.var {
                        SweepVar::Records => Ok(point(n, n)),
                        SweepVar::WorkingSet => working_set_records(Some(WorkingSet::Bytes(v)), records)
                            .map(|w| point(records, w)),
                    }
                })
                .collect()
        }
    }
}

/// Creates the output directory (before any work, so that bad input writes nothing).
fn prepare_out(out: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create --out {}: {e}", dir.display()))?;
        let probe = dir.join(".swizzledb-write-test");
        std::fs::write(&probe, b"").map_err(|e| format!("cannot write to --out {}: {e}", dir.display()))?;
        let _ = std::fs::remove_file(probe);
    }
    Ok(())
}

fn bench_lookup(args: &LookupArgs) -> Result<ExitCode, Box<dyn Error>> {
    let largest = args.sweep.as_ref().filter(|s| s.var == SweepVar::Records).and_then(|s| s.values.last());
    let default_pool = rndread::default_pool_bytes(largest.map_or(args.records, |b| b / RECORD_BYTES));
    let mut base = base_config("rndread", &args.common, args.pool.unwrap_or(default_pool)).map_err(Usage)?;
    base.zipf = (args.zipf > 0.0).then_some(args.zipf);
    let configs = points(&base, args.records, args.working_set, args.sweep.as_ref()).map_err(Usage)?;
    if let Some(path) = &args.csv {
        report::check_csv_appendable(path).map_err(Usage)?;
    }
    prepare_out(args.common.out.as_deref()).map_err(Usage)?;
    let outcome = run_points(&configs)?;
    if let Some(path) = &args.csv {
        report::write_csv(path, &outcome.rows, false)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    write_outputs(args.common.out.as_deref(), "rndread", &outcome.rows)?;
    if let Some(sweep) = &args.sweep {
        let (label, x_of): (&str, fn(&Config) -> u64) = match sweep.var {
            SweepVar::Records => ("database size (bytes of keys and values)", |c| c.records * RECORD_BYTES),
            SweepVar::WorkingSet => {
                ("working set (bytes of keys and values)", |c| c.working_set * RECORD_BYTES)
            }
        };
        let chart = report::sweep_chart("Random lookups", label, &configs, &outcome.points, x_of);
        write_plot(args.common.out.as_deref(), "rndread", &chart)?;
    }
    Ok(outcome.code(args.sweep.is_some()))
}

/// Pool bytes per record for random-order inserts: splits leave leaves about 70% full.
const INSERT_POOL_BYTES_PER_RECORD: u64 = 320;

fn bench_insert(
    experiment: &str,
    common: &Common,
    records: u64,
    preload: Option<u64>,
    pool: Option<u64>,
) -> Result<ExitCode, Box<dyn Error>> {
    let preload = preload.unwrap_or(records / 6);
    if preload >= records {
        return Err(Usage(format!("--preload {preload} must be below --records {records}")).into());
    }
    let pool = pool.unwrap_or_else(|| records.saturating_mul(INSERT_POOL_BYTES_PER_RECORD).max(64 << 20));
    let mut cfg = base_config(experiment, common, pool).map_err(Usage)?;
    cfg.records = records;
    cfg.working_set = records;
    cfg.timed_ops = Some(records - preload);
    prepare_out(common.out.as_deref()).map_err(Usage)?;
    let results = insert::run(&cfg, preload, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} new records inserted in random order after {} preloaded; throughput = inserts/s, load = preload time",
        report::thousands(records - preload),
        report::thousands(preload)
    )?;
    report::write_logging_note(&mut out)?;
    writeln!(out)?;
    report::print_table(&mut out, &cfg, &results)?;
    if experiment == "graefe-fig12" {
        report::print_fig12_check(&mut out, &results)?;
    }
    drop(out);
    let rows = report::records(&cfg, &results);
    write_outputs(common.out.as_deref(), experiment, &rows)?;
    let chart =
        report::repetition_chart("Random-order insertions (Graefe et al. 2014, Fig. 12)", &cfg, &results);
    write_plot(common.out.as_deref(), experiment, &chart)?;
    let outcome = Outcome { points: vec![results], rows };
    Ok(outcome.code(false))
}

fn bench_drift(experiment: &str, args: &DriftArgs) -> Result<ExitCode, Box<dyn Error>> {
    let hot = args.hot / RECORD_BYTES;
    if hot == 0 || hot > args.records {
        return Err(Usage(format!(
            "--hot {} must hold at least one record and at most the {} records of --records",
            report::bytes(args.hot),
            args.records
        ))
        .into());
    }
    let mut cfg = base_config(experiment, &args.common, args.pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = hot;
    cfg.duration = args.interval * f64::from(args.shifts + 1);
    cfg.warmup = 0.0;
    prepare_out(args.common.out.as_deref()).map_err(Usage)?;
    let drift = drift::Drift { interval: args.interval, shifts: args.shifts, sample: args.sample };
    let (results, samples) = drift::run(&cfg, drift, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "hot range of {} slides by a quarter every {} s, {} shifts; throughput = lookups/s over the whole run",
        report::bytes(args.hot),
        args.interval,
        args.shifts
    )?;
    report::write_logging_note(&mut out)?;
    writeln!(out)?;
    report::print_table(&mut out, &cfg, &results)?;
    report::print_drift_summary(&mut out, &samples, args.interval, &cfg.modes)?;
    drop(out);
    let rows = report::records(&cfg, &results);
    write_outputs(args.common.out.as_deref(), experiment, &rows)?;
    if let Some(dir) = &args.common.out {
        let path = dir.join(format!("{experiment}-series.csv"));
        report::write_series_csv(&path, &samples).map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!("Wrote the time series to {}.", path.display());
    }
    let chart = report::drift_chart(
        "Drifting working set (Graefe et al. 2014, Fig. 13)",
        &cfg,
        &samples,
        args.interval,
    );
    write_plot(args.common.out.as_deref(), experiment, &chart)?;
    let outcome = Outcome { points: vec![results], rows };
    Ok(outcome.code(true))
}

fn fix_cost(args: &FixArgs) -> Result<ExitCode, Box<dyn Error>> {
    let pool = rndread::default_pool_bytes(args.records);
    let mut cfg = base_config("fix", &args.common, pool).map_err(Usage)?;
    cfg.records = args.records;
    cfg.working_set = args.records;
    prepare_out(args.common.out.as_deref()).map_err(Usage)?;
    let samples = fixcost::run(&cfg, args.fixes, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    report::print_fix_table(&mut out, &cfg, &samples)?;
    drop(out);
    if let Some(dir) = &args.common.out {
        let csv = dir.join("fix.csv");
        report::write_fix_csv(&csv, &samples).map_err(|e| format!("writing {}: {e}", csv.display()))?;
        let json = dir.join("fix.json");
        std::fs::write(&json, serde_json::to_string_pretty(&samples)?)
            .map_err(|e| format!("writing {}: {e}", json.display()))?;
        eprintln!("Wrote {} and {}.", csv.display(), json.display());
    }
    write_plot(args.common.out.as_deref(), "fix", &report::fix_chart(&cfg, &samples))?;
    Ok(ExitCode::SUCCESS)
}

fn policies_experiment(args: &PoliciesArgs) -> Result<ExitCode, Box<dyn Error>> {
    let c = &args.common;
    if c.policy != PolicySpec::default() {
        return Err(Usage("this experiment compares --policies; --policy does not apply".into()).into());
    }
    let modes: Vec<PoolMode> = c.mode.0.iter().copied().filter(|&m| m != PoolMode::MainMemory).collect();
    if modes.is_empty() {
        return Err(Usage("main-memory mode never evicts; choose traditional and/or swizzling".into()).into());
    }
    let mut base =
        base_config("gilbert-policies", c, rndread::default_pool_bytes(args.records)).map_err(Usage)?;
    base.records = args.records;
    base.working_set = working_set_records(args.working_set, args.records).map_err(Usage)?;
    base.zipf = (args.zipf > 0.0).then_some(args.zipf);
    let mut fractions = args.fractions.clone();
    fractions.sort_by(f64::total_cmp);
    fractions.dedup();
    let mut policies = args.policies.clone();
    policies.dedup();
    let plan = policies::Plan { base, policies, modes, fractions };
    prepare_out(c.out.as_deref()).map_err(Usage)?;
    let (variants, data_bytes) = policies::run(&plan, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    policies::print_tables(&mut out, &plan, &variants, data_bytes)?;
    policies::print_checks(&mut out, &plan, &variants)?;
    drop(out);
    if let Some(dir) = c.out.as_deref() {
        let csv = dir.join("gilbert-policies.csv");
        policies::write_csv(&csv, &plan, &variants, data_bytes)
            .map_err(|e| format!("writing {}: {e}", csv.display()))?;
        eprintln!("Wrote {}.", csv.display());
        for &mode in &plan.modes {
            let throughput = policies::chart(
                &plan,
                &variants,
                mode,
                "Lookups per replacement policy and pool size (Gilbert 2017, Figs. 3.4/3.5)",
                "lookups per second",
                |m| Some(m.throughput()),
            );
            write_plot(Some(dir), &format!("gilbert-policies-throughput-{}", mode.name()), &throughput)?;
            let hits = policies::chart(
                &plan,
                &variants,
                mode,
                "Hit ratio per replacement policy and pool size",
                "hit ratio (%)",
                policies::measurement_hit_ratio,
            );
            write_plot(Some(dir), &format!("gilbert-policies-hit-ratio-{}", mode.name()), &hits)?;
        }
    }
    let failed = variants.iter().any(|v| v.error.is_some());
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn bpwrapper_experiment(args: &BpWrapperArgs) -> Result<ExitCode, Box<dyn Error>> {
    let c = &args.common;
    if c.policy != PolicySpec::default() {
        return Err(Usage("this experiment compares --policies; --policy does not apply".into()).into());
    }
    if c.threads != 1 {
        return Err(
            Usage("this experiment runs every --thread-counts; --threads does not apply".into()).into()
        );
    }
    let mode = match c.mode.0.as_slice() {
        [m] if *m != PoolMode::MainMemory => *m,
        [_, _, ..] if c.mode.0.contains(&PoolMode::Traditional) => PoolMode::Traditional,
        _ => return Err(Usage("choose one evicting --mode: traditional or swizzling".into()).into()),
    };
    let mut base =
        base_config("ding-bpwrapper", c, rndread::default_pool_bytes(args.records)).map_err(Usage)?;
    base.records = args.records;
    base.working_set = args.records;
    base.zipf = (args.zipf > 0.0).then_some(args.zipf);
    let mut threads: Vec<usize> = args.thread_counts.iter().map(|&t| usize::from(t)).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut policies = args.policies.clone();
    policies.dedup();
    let plan = bpwrapper::Plan { base, policies, mode, fraction: args.fraction, threads };
    prepare_out(c.out.as_deref()).map_err(Usage)?;
    let results = bpwrapper::run(&plan, Progress::on_terminal())?;
    let mut out = std::io::stdout().lock();
    bpwrapper::print_tables(&mut out, &plan, &results)?;
    bpwrapper::print_checks(&mut out, &plan, &results)?;
    drop(out);
    if let Some(dir) = c.out.as_deref() {
        let csv = dir.join("ding-bpwrapper.csv");
        bpwrapper::write_csv(&csv, &plan, &results).map_err(|e| format!("writing {}: {e}", csv.display()))?;
        eprintln!("Wrote {}.", csv.display());
        let throughput = bpwrapper::chart(
            &plan,
            &results,
            "Lookups per second by threads (Ding et al. 2015, Figs. 8-9 on the live engine)",
            "lookups per second",
            bpwrapper::measurement_throughput,
        );
        write_plot(Some(dir), "ding-bpwrapper-throughput", &throughput)?;
        let waits = bpwrapper::chart(
            &plan,
            &results,
            "Blocking waits on the replacement lock",
            "waits per million page accesses",
            bpwrapper::measurement_waits,
        );
        write_plot(Some(dir), "ding-bpwrapper-waits", &waits)?;
    }
    Ok(if results.errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn fig10_configs(c: &Common, pool: u64, max_factor: u64) -> Result<Vec<Config>, String> {
    let base = base_config("graefe-fig10", c, pool)?;
    let sweep = Sweep {
        var: SweepVar::Records,
        values: std::iter::successors(Some(pool / 8), |v| Some(v * 2))
            .take_while(|&v| v <= pool * max_factor)
            .collect(),
    };
    points(&base, 0, None, Some(&sweep))
}

fn fig10_chart(configs: &[Config], outcome: &Outcome) -> plot::Chart {
    report::sweep_chart(
        "Random lookups as the data outgrows the pool (Graefe et al. 2014, Fig. 10/11)",
        "database size (bytes of keys and values)",
        configs,
        &outcome.points,
        |c| c.records * RECORD_BYTES,
    )
}

fn fig10(args: &Fig10Args) -> Result<ExitCode, Box<dyn Error>> {
    let configs = fig10_configs(&args.common, args.pool, args.max_factor).map_err(Usage)?;
    prepare_out(args.common.out.as_deref()).map_err(Usage)?;
    let outcome = run_points(&configs)?;
    report::print_fig10_summary(&mut std::io::stdout().lock(), &configs, &outcome.points)?;
    write_outputs(args.common.out.as_deref(), "graefe-fig10", &outcome.rows)?;
    write_plot(args.common.out.as_deref(), "graefe-fig10", &fig10_chart(&configs, &outcome))?;
    Ok(outcome.code(true))
}

fn demo(out: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let common = Common {
        mode: units::Modes(PoolMode::ALL.to_vec()),
        threads: 1,
        page_size: 8192,
        policy: PolicySpec::default(),
        duration: 1.0,
        warmup: 0.5,
        repeat: 2,
        seed: 42,
        direct_io: false,
        baseline: None,
        dir: None,
        out: Some(out.to_path_buf()),
    };
    let configs = fig10_configs(&common, DEMO_POOL, 4)?;
    println!(
        "Graefe et al. 2014, Fig. 10/11 in miniature: random lookups in databases of {} to {} with a \
         {} buffer pool, in traditional, swizzling and main-memory mode. Every value is verified; \
         repetitions alternate between the modes. Takes about a minute.\n",
        report::bytes(configs[0].records * RECORD_BYTES),
        report::bytes(configs[configs.len() - 1].records * RECORD_BYTES),
        report::bytes(DEMO_POOL),
    );
    prepare_out(Some(out))?;
    let outcome = run_points(&configs)?;
    report::print_fig10_summary(&mut std::io::stdout().lock(), &configs, &outcome.points)?;
    write_outputs(Some(out), "graefe-fig10", &outcome.rows)?;
    write_plot(Some(out), "graefe-fig10", &fig10_chart(&configs, &outcome))?;
    Ok(outcome.code(true))
}

/// Results of all points of a run.
struct Outcome {
    points: Vec<Vec<rndread::ModeResult>>,
    rows: Vec<report::Record>,
}

impl Outcome {
    /// Exit code 1 if a mode failed at some point; with `expect_memory_limit` (sweeps past the
    /// pool), main-memory mode reaching its memory limit is an expected result, not a failure.
    fn code(&self, expect_memory_limit: bool) -> ExitCode {
        let failed = self.points.iter().flatten().any(|r| {
            r.error.as_deref().is_some_and(|e| {
                !(expect_memory_limit && r.mode == PoolMode::MainMemory && e.contains("main-memory mode"))
            })
        });
        if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// Runs every point, printing each point's table as it completes.
fn run_points(configs: &[Config]) -> Result<Outcome, Box<dyn Error>> {
    let progress = Progress::on_terminal();
    let mut outcome = Outcome { points: Vec::new(), rows: Vec::new() };
    for (i, cfg) in configs.iter().enumerate() {
        if configs.len() > 1 {
            progress.say(format_args!("point {}/{}", i + 1, configs.len()));
        }
        let (results, open) = rndread::run(cfg, progress)?;
        let mut out = std::io::stdout().lock();
        if i == 0 {
            report::write_logging_note(&mut out)?;
        }
        writeln!(out)?;
        report::print_table(&mut out, cfg, &results)?;
        out.flush()?;
        drop(out);
        progress.say(format_args!("closing and deleting the temporary databases ..."));
        drop(open);
        outcome.rows.extend(report::records(cfg, &results));
        outcome.points.push(results);
    }
    Ok(outcome)
}

/// Draws `chart` to `<out>/<name>.svg` and `.png` and says so on stderr (stdout carries only
/// the tables, for scripts).
fn write_plot(out: Option<&Path>, name: &str, chart: &plot::Chart) -> Result<(), Box<dyn Error>> {
    let Some(dir) = out else { return Ok(()) };
    let files = plot::write_chart(&dir.join(name), chart)?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    eprintln!("Plotted {}.", names.join(" and "));
    Ok(())
}

/// Writes `<name>.csv` and `<name>.json` into `out` and says so.
fn write_outputs(out: Option<&Path>, name: &str, rows: &[report::Record]) -> Result<(), Box<dyn Error>> {
    let Some(dir) = out else { return Ok(()) };
    let csv = dir.join(format!("{name}.csv"));
    let json = dir.join(format!("{name}.json"));
    report::write_csv(&csv, rows, true).map_err(|e| format!("writing {}: {e}", csv.display()))?;
    report::write_json(&json, rows).map_err(|e| format!("writing {}: {e}", json.display()))?;
    eprintln!("Wrote {} and {}.", csv.display(), json.display());
    Ok(())
}

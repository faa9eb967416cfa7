//! `bench tpcc`: argument parsing for the TPC-C benchmark; the workload, the measurements and
//! the table live in `crate::workloads::tpcc`.

use crate::engine::EngineName;
use crate::experiments::workload_options::{dedup, parse_on_off, run_logged, WorkloadOptions};
use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::workloads::tpcc::{print_table, run_bench, BenchPlan, BenchRow, TpccConfig, TpccPlan, TpccRow};
use crate::WorkloadError;
use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::Usage;

/// Options of `bench tpcc`.
#[derive(Args, Debug)]
pub struct TpccArgs {
    /// Engines, comma-separated, measured interleaved: swizzledb (in each of --modes ×
    /// --logging × --locking × --optimistic), lmdb (once per --logging setting, one write
    /// transaction per TPC-C transaction and read snapshots for Order-Status and Stock-Level;
    /// --modes, --locking, --optimistic, --pool and --policy do not apply to it, it serializes
    /// its writers; --logging
    /// on is MDB_NOSYNC, off adds MDB_NOMETASYNC, MDB_WRITEMAP and MDB_MAPASYNC; keep --dir on
    /// a tmpfs, docs/tpcc.md)
    #[arg(long, default_value = "swizzledb", value_delimiter = ',')]
    engine: Vec<String>,
    /// Warehouses (the scale: about 100 MiB of records each)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    warehouses: u32,
    /// Items, and stock records per warehouse (the specification's 100,000; fewer for a quick
    /// look: 100 to 1,000,000)
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    items: u32,
    /// Customers, and initial orders, per district (the specification's 3,000; 30 to 100,000)
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u32).range(30..=100_000))]
    customers: u32,
    /// New-Order's reads of the fields no TPC-C transaction changes (items, W_TAX,
    /// C_DISCOUNT): on, committed reads outside the transaction's isolation, with no record
    /// lock and no wait (as InnoDB's consistent reads); off, locking reads like the rest of the
    /// transaction. Matters only with --locking on (docs/tpcc.md)
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    committed_reads: bool,
    /// How Stock-Level reads: read-committed, the isolation TPC-C asks of it (clause 3.4.1:
    /// level 1), where no snapshot is held across the transaction and writers keep no versions
    /// for it; or snapshot, at a snapshot of its start as Order-Status reads. Matters only
    /// with --locking on (docs/tpcc.md)
    #[arg(long, default_value = "read-committed", value_parser = parse_stock_level, action = clap::ArgAction::Set)]
    stock_level: bool,
    /// Transactions each thread runs per measurement, in place of --duration (which then only
    /// sizes the pool): the same work in every run, for counting instructions per transaction
    /// under callgrind (docs/isolation.md). Throughput is still measured over the time taken;
    /// 1 to 10,000,000
    #[arg(long, value_parser = parse_transactions)]
    transactions: Option<u64>,
    #[command(flatten)]
    options: WorkloadOptions,
}

/// The most `--transactions` per thread: minutes of work at 30,000 transactions a second, hours
/// under callgrind (2^64 - 1 ran for ever).
const MAX_TRANSACTIONS: u64 = 10_000_000;

/// `--transactions`: 1 to [`MAX_TRANSACTIONS`].
fn parse_transactions(input: &str) -> Result<u64, String> {
    crate::support::units::parse_count_in(
        input,
        "--transactions",
        1,
        MAX_TRANSACTIONS,
        "per thread and measurement; for longer runs measure by --duration",
    )
}

/// `--stock-level`: whether Stock-Level reads at read committed.
fn parse_stock_level(s: &str) -> Result<bool, String> {
    match s {
        "read-committed" => Ok(true),
        "snapshot" => Ok(false),
        _ => Err(format!("expected read-committed or snapshot, got {s:?}")),
    }
}

/// Runs `bench tpcc`.
///
/// # Errors
/// Bad options (as [`Usage`]), or a database or I/O failure.
pub fn run(args: &TpccArgs) -> Result<ExitCode, Box<dyn Error>> {
    let usage = |e: WorkloadError| Usage(e.to_string());
    let engines: Vec<EngineName> =
        args.engine.iter().map(|e| EngineName::parse(e)).collect::<Result<_, _>>().map_err(usage)?;
    let config = TpccConfig {
        items: args.items,
        customers: args.customers,
        committed_reads: args.committed_reads,
        stock_level_read_committed: args.stock_level,
        ..TpccConfig::standard(args.warehouses)
    };
    let plan =
        args.options.plan(TpccPlan { engines: dedup(&engines), config, transactions: args.transactions });
    plan.validate().map_err(usage)?;
    experiment::execute(&Tpcc(plan), args.options.out.as_deref())
}

/// How long a measurement runs: its seconds, or its transactions per thread (`--transactions`).
fn per_measurement(p: &BenchPlan) -> String {
    match p.workload.transactions {
        Some(n) => format!("{n} transactions per thread"),
        None => format!("{} s", p.duration.as_secs_f64()),
    }
}

/// `bench tpcc` as an experiment.
pub struct Tpcc(pub BenchPlan);

/// Runs a plan: progress lines on stderr when it is a terminal; a bad plan is a [`Usage`] error.
///
/// # Errors
/// Bad options, a database failure, or a failed consistency check.
pub fn measure(plan: &BenchPlan, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
    run_logged(progress, |log| run_bench(plan, log))
}

impl Experiment for Tpcc {
    const NAME: &'static str = "tpcc";
    type Row = TpccRow;
    type Results = Vec<BenchRow>;

    fn caption(&self) -> String {
        let p = &self.0;
        if p.workload.engines == [EngineName::SwizzleDb] {
            return format!(
                "TPC-C: {} warehouses, pool {} MiB per database, {} per measurement, {} repetitions",
                p.workload.config.warehouses,
                p.pool() >> 20,
                per_measurement(p),
                p.repeat
            );
        }
        let mut memory = Vec::new();
        if p.workload.engines.contains(&EngineName::SwizzleDb) {
            memory.push(format!("pool {} MiB per SwizzleDB database", p.pool() >> 20));
        }
        if p.workload.engines.contains(&EngineName::Lmdb) {
            memory.push(format!("LMDB map {} MiB", p.lmdb_map_bytes() >> 20));
        }
        format!(
            "TPC-C on {}: {} warehouses, {}, {} per measurement, {} repetitions",
            p.workload.engines.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
            p.workload.config.warehouses,
            memory.join(", "),
            per_measurement(p),
            p.repeat
        )
    }

    fn run(&self, progress: Progress) -> Result<Vec<BenchRow>, Box<dyn Error>> {
        measure(&self.0, progress)
    }

    fn tables(&self, rows: &Vec<BenchRow>, mut out: &mut dyn Write) -> io::Result<()> {
        print_table(&mut out, &self.0, rows)?;
        writeln!(out, "consistency conditions 1-4 hold in every database")
    }

    fn rows(&self, rows: &Vec<BenchRow>) -> Vec<TpccRow> {
        rows.iter().map(|r| TpccRow::new(Self::NAME, r)).collect()
    }
}

//! The `swizzledb` command: the demo, benchmark workloads and paper experiments.
//!
//! - `swizzledb demo` — the Graefe et al. Fig. 10/11 experiment at small scale (about a minute).
//! - `swizzledb bench lookup` — random verified lookups with every knob exposed, optionally swept.
//! - `swizzledb bench tpcc`, `bench tpcb`, `bench ycsb` — TPC-C, TPC-B and YCSB A-F per buffer
//!   mode, logging, locking and optimistic descents (TPC-B also with and without a log archive).
//! - `swizzledb bench emulator` — the BP-Wrapper paper's buffer emulator: replacement-lock
//!   contention of locked, partitioned, batched and CLOCK buffers (Ding et al. 2015, Figs. 11-13).
//! - `swizzledb reproduce --out DIR` — every figure of the five papers, and a report of them
//!   (`DIR/index.html`: plots, tables, the papers' claims beside our checks).
//! - `swizzledb experiment fig10` — Fig. 10/11 at laptop scale: lookups per second of the three
//!   buffer modes as the data grows from far below to several times the pool.
//! - `swizzledb trace record --out FILE -- <command>` — buffer reference traces of any command.
//! - `swizzledb trace analyze` / `trace generate` — miss-ratio curves of every replacement policy
//!   and Belady's OPT over a reference string; synthetic reference strings.
//! - `swizzledb sim dbmin` — Chou & DeWitt 1986 Figs. 2-5: DBMIN and five other buffer managers
//!   in a simulated multiuser system, throughput against concurrent queries.
//! - `swizzledb load FILE --tree T` — read a dump back into a tree (`load.rs`);
//! - `swizzledb stat FILE`, `verify FILE`, `dump FILE --tree T`, `log DIR|FILE` — inspect a
//!   database file and its log read-only (`admin.rs`, over `swizzledb::inspect`).

#![forbid(unsafe_code)]

mod admin;
mod backup;
mod compact;
mod load;
mod records;
mod trace;

use clap::{Parser, Subcommand};
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use swizzledb_lab::experiments::bench::{
    drift, fix, insert, isolation, lookup, read_latency, tpcb, tpcc, values, wal, ycsb,
};
use swizzledb_lab::experiments::papers::chou::dbmin as chou_dbmin;
use swizzledb_lab::experiments::papers::ding::{
    bpwrapper as ding_bpwrapper, buffer_sizes as ding_buffer_sizes, emulator, lock_hold as ding_lock_hold,
};
use swizzledb_lab::experiments::papers::gilbert::{
    fix_time as gilbert_fix_time, long_run as gilbert_long_run, policies as gilbert_policies,
    pools as gilbert_pools, stack_depth as gilbert_stack_depth,
};
use swizzledb_lab::experiments::papers::graefe::{
    fig10 as graefe_fig10, fig12 as graefe_fig12, fig13 as graefe_fig13, fig14 as graefe_fig14,
};
use swizzledb_lab::experiments::papers::lersch::{
    checkpoints as lersch_checkpoints, cleaner as lersch_cleaner, restart as lersch_restart,
};
use swizzledb_lab::experiments::tools::crash_test;
use swizzledb_lab::Usage;

#[derive(Parser)]
#[command(
    name = "swizzledb",
    version,
    about = "SwizzleDB: demo, benchmarks, paper experiments and read-only inspection of database files"
)]
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
    /// Run every figure of the five papers and write a report: DIR/index.html shows each figure's
    /// plot, tables, the paper's claim beside our check (✓ / ~ / ✗ with the reason) and the
    /// command that regenerates it (--quick: under 10 minutes on 2 cores)
    Reproduce(swizzledb_lab::reproduce::ReproduceArgs),
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
    CrashTest(crash_test::CrashTestArgs),
    /// Simulators of buffer management papers
    Sim {
        #[command(subcommand)]
        which: chou_dbmin::SimCommand,
    },
    /// Describe a database file, read-only: format, page size, pages, trees, logged, closed
    /// cleanly, and where its log stands
    #[command(after_help = admin::EXIT_CODES)]
    Stat(admin::FileArgs),
    /// Check a database file, read-only: every page's checksum, id and type, and every tree's
    /// structure; lists each damaged page and tree (a file not closed cleanly is checked as it
    /// is, which restart would change: see exit code 4)
    #[command(after_help = admin::EXIT_CODES)]
    Verify(admin::FileArgs),
    /// Print a tree's records, read-only, in key order as the file holds them
    #[command(after_help = admin::EXIT_CODES)]
    Dump(admin::DumpArgs),
    /// Print a log's records, read-only, one a line: LSN, kind, transaction, pages, sizes
    #[command(after_help = admin::EXIT_CODES)]
    Log(admin::LogArgs),
    /// Read records in the form `dump` writes (csv or jsonl, hex or base64) into a tree, in
    /// transactions of --batch records; a malformed line stops it at a batch boundary
    #[command(
        after_help = "Exit codes: 0 loaded; 1 a database or read error stopped it; 2 bad arguments, a malformed \
input line or a record the tree refuses (its batch is rolled back, the batches before it stay); 3 the database \
or the input cannot be opened"
    )]
    Load(load::LoadArgs),
    /// Write a compacted copy of a database that opens on its own (its own small log beside
    /// it); the copy appears at DEST only once it is complete
    #[command(
        after_help = "Exit codes: 0 copied; 1 reading the source or writing the copy failed (nothing is left at \
DEST); 2 bad arguments, or DEST (or DEST.wal) exists; 3 the source cannot be opened"
    )]
    Backup(backup::BackupArgs),
    /// Rewrite a database in place, returning the pages deletes and dropped trees freed to the
    /// file system; prints the file's size before and after
    #[command(
        after_help = "Exit codes: 0 compacted; 1 the compaction failed (the database is as it was, or its next open \
finishes the swap); 3 the database cannot be opened (missing, or open in another process)"
    )]
    Compact(compact::CompactArgs),
}

#[derive(Subcommand)]
enum Workload {
    /// Uniformly random lookups of verified values (8-byte keys, 120-byte values), one database
    /// per mode, repetitions interleaved across modes
    #[command(alias = "rndread")]
    Lookup(lookup::LookupArgs),
    /// Random-order insertions after an unmeasured preload, a fresh database per mode and
    /// repetition (each repetition times all inserts: --duration and --warmup do not apply)
    Insert(insert::InsertArgs),
    /// Lookups in a hot key range that slides by a quarter of its length every interval, with a
    /// throughput time series
    Drift(drift::DriftArgs),
    /// The BP-Wrapper paper's buffer emulator (Ding et al. 2015, Figs. 11-13): threads share an
    /// in-memory buffer and compute between accesses; locked LRU, DistLock, batching,
    /// prefetching, full BP-Wrapper, BP-Wrapper per partition, bufBP-prim and CLOCK
    Emulator(emulator::EmulatorArgs),
    /// Write-ahead logging: overhead on inserts (logging off, async and sync commit, auto-commit),
    /// commits per fsync under group commit, the log kept with the page cleaner on and off, and
    /// restart time against the log since the last checkpoint and against the writer's run time
    Wal(wal::WalBenchArgs),
    /// Insert and point-read throughput by value size, from values stored in their leaf to
    /// 1 MiB values in overflow pages
    Values(values::ValuesArgs),
    /// What record locks with next-key locking cost (LOCKS.md K14-K16): point transactions,
    /// scan-heavy transactions and reads outside a transaction, locking on against off
    Isolation(isolation::IsolationArgs),
    /// Read latency (p50, p99, p99.9, max) under a writer holding record locks on a hot set:
    /// snapshot reads (LOCKS.md K18), one read-only transaction per read, and locking reads
    ReadLatency(read_latency::ReadLatencyArgs),
    /// TPC-C (five transactions, standard mix, no think time; vmcache's schema and key layout):
    /// throughput per buffer mode, logging, locking and optimistic-descent setting and thread
    /// count, consistency conditions 1-4 checked after the run
    Tpcc(tpcc::TpccArgs),
    /// TPC-B (branches, tellers, accounts, history; one transaction moving a random delta):
    /// throughput per buffer mode, logging, locking, optimistic-descent and log-archive setting
    /// and thread count, balances checked against each other and the history after the run
    Tpcb(tpcb::TpcbArgs),
    /// YCSB core workloads A-F (zipfian 0.99 or latest requests, 1 KiB records): operations per
    /// second per workload, buffer mode, logging, locking and optimistic-descent setting and
    /// thread count, every record checked after the run
    Ycsb(ycsb::YcsbArgs),
}

#[derive(Subcommand)]
enum Experiment {
    /// Graefe et al. 2014 Fig. 10/11: lookups as the data grows from 1/8 of the pool to 8 times
    /// it; swizzling should match main-memory in memory and degrade like traditional beyond
    #[command(name = "graefe-fig10", alias = "fig10")]
    Fig10(graefe_fig10::Fig10Args),
    /// Graefe et al. 2014 Fig. 12: random-order insertions into an index that fits in memory
    /// (2,000,000 new records after 400,000 preloaded); swizzling should match main-memory and
    /// beat traditional
    #[command(name = "graefe-fig12", alias = "fig12")]
    Fig12(graefe_fig12::Fig12Args),
    /// Graefe et al. 2014 Fig. 13: a drifting working set (16 MiB hot range, 25% replaced every
    /// 5 s) in 1 GiB of data with a 128 MiB pool; swizzling should beat traditional in the steady
    /// state and recover from each shift as fast
    #[command(name = "graefe-fig13", alias = "fig13")]
    Fig13(drift::DriftArgs),
    /// Graefe et al. 2014 Fig. 14: TPC-C in the three buffer modes with logging and locking each
    /// on and off, the pool larger than the data, descents coupling latches as the paper's
    /// engine did (no optimistic descents); swizzling should gain about 10% over traditional
    /// with both on and about 50% with both off, and match main-memory throughout
    #[command(name = "graefe-fig14", alias = "fig14")]
    Fig14(graefe_fig14::Fig14Args),
    /// Lersch 2015 Figs. 5.1-5.4: TPC-B throughput and CPU against the checkpoint interval,
    /// classical (fuzzy) against decoupled (log-based) checkpoints; the thesis found them equal
    /// above 1 s, the decoupled ones using slightly more CPU
    #[command(name = "lersch-checkpoints")]
    LerschCheckpoints(lersch_checkpoints::LerschCheckpointsArgs),
    /// Lersch 2015 Figs. 5.5-5.8: TPC-B throughput, CPU and pages written against the page
    /// cleaner's interval, the classical cleaner against the decoupled one (replaying the log
    /// archive); the thesis found the decoupled one equal or better
    #[command(name = "lersch-cleaner")]
    LerschCleaner(lersch_cleaner::LerschCleanerArgs),
    /// Beside Lersch 2015 (Sec. 2.1.1 describes instant restart, after Graefe, Guy and Sauer):
    /// restart time after a kill against the log since the checkpoint,
    /// classical restart (analysis and redo of that log) against instant restart (the log
    /// archive's state and index, redo per page on fetch and in the background); the issue's
    /// target is an instant open within 0.1 s at 1 GiB of log
    #[command(name = "lersch-restart")]
    LerschRestart(lersch_restart::LerschRestartArgs),
    /// The cost of one fix() hit per buffer mode and latch mode, in nanoseconds (Graefe et al.
    /// 2014; Gilbert 2017 found a swizzled fix about 30% cheaper than a page-table fix)
    Fix(fix::FixArgs),
    /// Gilbert 2017 Figs. 3.4/3.5/3.9: lookups with each replacement policy, swizzling off and
    /// on, at pools of a fraction of the data: throughput, hit ratio, evictioner time per call and
    /// refused candidates (about 12 minutes with the defaults; --duration 1 for a quicker look)
    #[command(name = "gilbert-policies", alias = "policies")]
    Policies(gilbert_policies::PoliciesArgs),
    /// Gilbert 2017 Figs. 2.3 and 3.4-3.9: TPC-C against pools of a few percent of the data to
    /// more than all of it, swizzling off and on, RANDOM, GCLOCK and CAR, every run cold:
    /// throughput, miss ratio, evictioner time per call and in total (about 15 minutes with the
    /// defaults; --duration 1 --repeat 1 for a quicker look)
    #[command(name = "gilbert-pools")]
    Pools(gilbert_pools::PoolsArgs),
    /// Gilbert 2017 Figs. 1.5/3.1: the LRU stack-depth histogram of TPC-C's page references,
    /// traced per thread count; the share of references at a distance below 20 and the frames LRU
    /// needs for a 75% hit ratio
    #[command(name = "gilbert-stack-depth")]
    StackDepth(gilbert_stack_depth::StackDepthArgs),
    /// Gilbert 2017 Fig. 2.12: long TPC-C runs with swizzling off and on, starting cold, as a
    /// throughput time series (the gain of swizzling appears once the pool is warm)
    #[command(name = "gilbert-long-run")]
    LongRun(gilbert_long_run::LongRunArgs),
    /// Gilbert 2017 Figs. 2.7/2.8: nanoseconds per fix() inside TPC-C by hit or miss and latch
    /// mode, swizzling off and on, at a pool larger than the data and at a small one
    #[command(name = "gilbert-fix-time")]
    FixTime(gilbert_fix_time::FixTimeArgs),
    /// Ding, Shan & Jiang 2015 (BP-Wrapper) on the live engine: lookups at a pool of half the data
    /// with CLOCK, LRU, 2Q and hot/cold locked on every access (locked-*), 2Q with prefetching
    /// alone (bpw-pref-2q) and batching alone (bpw-batch-2q), and behind BP-Wrapper (bpw-*;
    /// hot/cold's hot hits are not queued, the paper's Fig. 7), at 1 to 16 threads (Figs. 8-9):
    /// throughput, hit ratio and lock waits per million accesses
    #[command(name = "ding-bpwrapper", alias = "bp-wrapper")]
    BpWrapper(ding_bpwrapper::BpWrapperArgs),
    /// Ding et al. 2015 Fig. 4: the replacement lock's time per page access (held plus waited
    /// for) and the hit ratio as BP-Wrapper's batch size grows (queue size S and threshold T)
    #[command(name = "ding-lock-hold")]
    LockHold(ding_lock_hold::LockHoldArgs),
    /// Ding et al. 2015 Fig. 10: hit ratio and throughput of CLOCK, locked 2Q and BP-Wrapper 2Q
    /// as the pool grows (--direct-io for device reads)
    #[command(name = "ding-buffer-sizes")]
    BufferSizes(ding_buffer_sizes::BufferSizesArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    admin::init_logging();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            // One table for every command (README "Exit codes"): bad arguments found before any
            // work exit 2 like clap's own usage errors; a path that cannot be read or written, 3.
            if e.is::<Usage>() {
                ExitCode::from(swizzledb_lab::EXIT_USAGE)
            } else if e.is::<swizzledb_lab::UnusablePath>() {
                ExitCode::from(swizzledb_lab::EXIT_UNUSABLE_PATH)
            } else {
                ExitCode::from(swizzledb_lab::EXIT_FAILED)
            }
        }
    }
}

/// Runs one command (also the command that `trace record` traces).
fn run(command: Command) -> Result<ExitCode, Box<dyn Error>> {
    match command {
        Command::Demo { out } => graefe_fig10::demo(&out),
        Command::Reproduce(args) => swizzledb_lab::reproduce::execute(&args, &std::env::current_exe()?),
        Command::Bench { workload } => match workload {
            Workload::Lookup(args) => lookup::execute(&args),
            Workload::Insert(args) => insert::execute(&args),
            Workload::Drift(args) => drift::execute(&args),
            Workload::Emulator(args) => emulator::run(&args),
            Workload::Wal(args) => wal::run(&args),
            Workload::Values(args) => values::execute(&args),
            Workload::Isolation(args) => isolation::run(&args),
            Workload::ReadLatency(args) => read_latency::run(&args),
            Workload::Tpcc(args) => tpcc::run(&args),
            Workload::Tpcb(args) => tpcb::run(&args),
            Workload::Ycsb(args) => ycsb::run(&args),
        },
        Command::Experiment { which } => match which {
            Experiment::Fig10(args) => graefe_fig10::execute(&args),
            Experiment::Fig12(args) => graefe_fig12::execute(&args),
            Experiment::Fig13(args) => graefe_fig13::execute(&args),
            Experiment::Fig14(args) => graefe_fig14::execute(&args),
            Experiment::LerschCheckpoints(args) => lersch_checkpoints::execute(&args),
            Experiment::LerschCleaner(args) => lersch_cleaner::execute(&args),
            Experiment::LerschRestart(args) => lersch_restart::execute(&args),
            Experiment::Fix(args) => fix::execute(&args),
            Experiment::Policies(args) => gilbert_policies::execute(&args),
            Experiment::Pools(args) => gilbert_pools::execute(&args),
            Experiment::StackDepth(args) => gilbert_stack_depth::execute(&args),
            Experiment::LongRun(args) => gilbert_long_run::execute(&args),
            Experiment::FixTime(args) => gilbert_fix_time::execute(&args),
            Experiment::BpWrapper(args) => ding_bpwrapper::execute(&args),
            Experiment::LockHold(args) => ding_lock_hold::execute(&args),
            Experiment::BufferSizes(args) => ding_buffer_sizes::execute(&args),
        },
        Command::Trace { action } => trace::run(action),
        Command::CrashTest(args) => crash_test::run(&args),
        Command::Sim { which: chou_dbmin::SimCommand::Dbmin(args) } => chou_dbmin::run(&args),
        Command::Stat(args) => Ok(admin::stat(&args)),
        Command::Verify(args) => Ok(admin::verify(&args)),
        Command::Dump(args) => Ok(admin::dump(&args)),
        Command::Log(args) => Ok(admin::log(&args)),
        Command::Load(args) => Ok(load::run(&args)),
        Command::Backup(args) => Ok(backup::run(&args)),
        Command::Compact(args) => Ok(compact::run(&args)),
    }
}

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
use swizzledb_lab::experiments::common::remove_created_scratch_dirs;
use swizzledb_lab::experiments::papers::graefe::fig10 as graefe_fig10;
use swizzledb_lab::experiments::registry::{BenchCommand, ExperimentCommand, SimCommand, ToolCommand};
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
        workload: BenchCommand,
    },
    /// Run every figure of the five papers and write a report: DIR/index.html shows each figure's
    /// plot, tables, the paper's claim beside our check (✓ / ~ / ✗ with the reason) and the
    /// command that regenerates it (--quick: under 10 minutes on 2 cores)
    Reproduce(swizzledb_lab::reproduce::ReproduceArgs),
    /// Reproduce an experiment of the papers with one command
    Experiment {
        #[command(subcommand)]
        which: ExperimentCommand,
    },
    /// Buffer reference traces: record them from any command, export them, simulate every
    /// replacement policy and Belady's OPT over them, or generate synthetic ones
    Trace {
        #[command(subcommand)]
        action: trace::TraceAction,
    },
    // The lab's top-level tools (`crash-test`).
    #[command(flatten)]
    Tool(ToolCommand),
    /// Simulators of buffer management papers
    Sim {
        #[command(subcommand)]
        which: SimCommand,
    },
    /// Describe a database file, read-only: format, page size, pages, trees, logged, closed
    /// cleanly, and where its log stands (one `name: value` a line; a tree name's backslashes
    /// and control characters escaped, `\\` and `\n`)
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
DEST); 2 bad arguments, or DEST (or DEST.wal) exists or lies in SRC's log directory; 3 the source cannot be opened, or DEST's directory does not \
exist"
    )]
    Backup(backup::BackupArgs),
    /// Rewrite a database in place, returning the pages deletes and dropped trees freed to the
    /// file system; prints the file's size before and after
    #[command(
        after_help = "Exit codes: 0 compacted; 1 the compaction failed (the database is as it was, or its next open \
finishes the swap); 3 the database cannot be opened (missing, a directory, not a SwizzleDB database, damaged, its log \
missing, or open in another process)"
    )]
    Compact(compact::CompactArgs),
}

/// Parses a command line (`argv[0]` first). A value that reads as a negative number is taken
/// as the value of the option before it, in every subcommand, so that `--duration -1` is refused
/// by the option's own check, which names it and its range, and not as an unknown argument `-1`.
///
/// # Errors
/// clap's usage error, or the help or version text asked for.
pub(crate) fn parse_cli<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    fn negatives(command: clap::Command) -> clap::Command {
        command.allow_negative_numbers(true).mut_subcommands(negatives)
    }
    let mut command = negatives(Cli::command());
    let matches = command.try_get_matches_from_mut(argv)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

fn main() -> ExitCode {
    let cli = match parse_cli(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => return refused(&e),
    };
    admin::init_logging();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            // One table for every command (README "Exit codes"): bad arguments found before any
            // work exit 2 like clap's own usage errors; a path that cannot be read or written, 3.
            if e.is::<Usage>() {
                remove_created_scratch_dirs();
                ExitCode::from(swizzledb_lab::EXIT_USAGE)
            } else if e.is::<swizzledb_lab::UnusablePath>() {
                remove_created_scratch_dirs();
                ExitCode::from(swizzledb_lab::EXIT_UNUSABLE_PATH)
            } else {
                ExitCode::from(swizzledb_lab::EXIT_FAILED)
            }
        }
    }
}

/// Prints what clap said of a command line it refused (or the help or version asked for) and
/// gives the exit code: 0 for help and version; 3 for a `--dir` that cannot be used, a path as
/// any other (README "Exit codes"); 2 for every other usage error. A command refused before any
/// work leaves nothing behind: not even the `--dir` its parsing created.
pub(crate) fn refused(e: &clap::Error) -> ExitCode {
    remove_created_scratch_dirs();
    let _ = e.print();
    if !e.use_stderr() {
        ExitCode::SUCCESS
    } else if e.source().is_some_and(|source| source.is::<swizzledb_lab::UnusablePath>()) {
        ExitCode::from(swizzledb_lab::EXIT_UNUSABLE_PATH)
    } else {
        ExitCode::from(swizzledb_lab::EXIT_USAGE)
    }
}

/// Prints `line` (and a line end) on stdout and gives the exit code of a command that succeeded:
/// 0, also when the reader has closed the pipe (`println!` panicked there, after the work was
/// done); 1 when stdout cannot be written otherwise.
pub(crate) fn printed(line: String) -> ExitCode {
    match swizzledb_lab::support::output::print(line + "\n") {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command (also the command that `trace record` traces).
fn run(command: Command) -> Result<ExitCode, Box<dyn Error>> {
    match command {
        Command::Demo { out } => graefe_fig10::demo(&out),
        Command::Reproduce(args) => swizzledb_lab::reproduce::execute(&args, &std::env::current_exe()?),
        Command::Bench { workload } => workload.run(),
        Command::Experiment { which } => which.run(),
        Command::Trace { action } => trace::run(action),
        Command::Tool(tool) => tool.run(),
        Command::Sim { which } => which.run(),
        Command::Stat(args) => Ok(admin::stat(&args)),
        Command::Verify(args) => Ok(admin::verify(&args)),
        Command::Dump(args) => Ok(admin::dump(&args)),
        Command::Log(args) => Ok(admin::log(&args)),
        Command::Load(args) => Ok(load::run(&args)),
        Command::Backup(args) => Ok(backup::run(&args)),
        Command::Compact(args) => Ok(compact::run(&args)),
    }
}

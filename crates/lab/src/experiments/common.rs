//! Options and helpers shared by the buffer benchmarks (lookup, insert, drift, fix, the policy
//! experiments): the common options, one point's configuration, and running a list of points.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swizzledb::{PolicySpec, PoolMode};

use crate::engine::EngineName;
use crate::harness::buffer::{self, Config, ModeResult, PeerResult, Progress, RECORD_BYTES};
use crate::harness::buffer_report::{self as report, Record};
use crate::support::text;
use crate::support::units::{self, Sweep, SweepVar, WorkingSet};

pub fn parse_fraction(input: &str) -> Result<f64, String> {
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

pub fn parse_zipf(input: &str) -> Result<f64, String> {
    match input.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("invalid Zipf exponent {input:?}; expected a number >= 0 (0: uniform)")),
    }
}

/// Options shared by every workload.
#[derive(Args, Clone)]
pub struct Common {
    /// Buffer modes: all, or a comma-separated list of traditional, swizzling, main-memory
    #[arg(long, default_value = "all", value_parser = units::parse_modes)]
    pub mode: units::Modes,
    /// Lookup threads (threads beyond the cores oversubscribe them)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
    /// Page size in bytes (4KiB to 32KiB, a power of two)
    #[arg(long, default_value = "8192", value_parser = parse_page_size)]
    pub page_size: u64,
    /// Replacement policy, e.g. gclock, gclock:4, random, clock, lru, sieve, gclock-sweep; prefix
    /// leaf- for the structure-aware variant (leaf-lru); an unknown name lists them all
    #[arg(long, default_value = "gclock")]
    pub policy: PolicySpec,
    /// Seconds per measurement
    #[arg(long, default_value = "3", value_parser = units::parse_positive_seconds)]
    pub duration: f64,
    /// Seconds of unmeasured operations before each measurement
    #[arg(long, default_value = "1", value_parser = units::parse_seconds)]
    pub warmup: f64,
    /// Measurements per mode (interleaved across modes: A B C A B C ...)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub repeat: u16,
    /// Seed for the workload threads and randomized policies
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Directory for the temporary database files (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    pub dir: Option<PathBuf>,
    /// Mode the printed ratios are relative to, one of --mode [default: main-memory, else the first mode]
    #[arg(long, value_parser = parse_mode)]
    pub baseline: Option<PoolMode>,
    /// Read and write the database file with O_DIRECT, bypassing the OS page cache, so misses
    /// cost real device I/O
    #[arg(long)]
    pub direct_io: bool,
    /// Let the threads that miss evict for themselves: no background evictor keeps free frames
    /// ready (swizzledb::lab::LabOptions::background_eviction; buffer README B31)
    #[arg(long)]
    pub no_background_eviction: bool,
    /// Read leaves without latching them too (swizzledb::lab::LabOptions::optimistic_leaf_reads;
    /// btree README T21): swizzling and main-memory modes, with CLOCK, GCLOCK or SIEVE
    #[arg(long)]
    pub optimistic_leaf_reads: bool,
    /// Directory for results: <experiment>.csv, <experiment>.json (created if missing)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Parses a directory for a run's temporary databases (`--dir`): created with its parents if
/// missing, so that a run never fails after its setup for want of it; refused, naming the path,
/// if it names something other than a directory, cannot be created, or (existing) takes no new
/// file ([`probe_writable`]). The refusal is an
/// [`UnusablePath`](crate::UnusablePath), which the command exits with status 3 for, as for any
/// path it cannot use (README "Exit codes"). What it created is noted, so that a command refused
/// afterwards (a later argument, or a check before any work) takes it away again with
/// [`remove_created_scratch_dirs`].
pub fn parse_scratch_dir(input: &str) -> Result<std::path::PathBuf, crate::UnusablePath> {
    let path = std::path::PathBuf::from(input);
    if path.is_dir() {
        probe_writable(&path).map_err(|e| {
            crate::UnusablePath(format!(
                "cannot write to --dir {input}: {e}; name a directory you can write to"
            ))
        })?;
        return Ok(path);
    }
    if path.exists() {
        return Err(crate::UnusablePath(format!(
            "{input} is not a directory; name a directory for the temporary databases"
        )));
    }
    let missing = path.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).count();
    std::fs::create_dir_all(&path).map_err(|e| {
        crate::UnusablePath(format!(
            "cannot create the directory {input}: {e}; name a directory you can write to"
        ))
    })?;
    CREATED_SCRATCH_DIRS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((path.clone(), missing));
    Ok(path)
}

/// Whether a file can be made in the directory `dir`: a temporary one is created there and
/// removed. An existing directory can refuse new files (a read-only mount, no permission, `/proc`),
/// which its metadata does not tell reliably (root ignores the mode bits).
///
/// # Errors
/// Creating the file failed.
pub fn probe_writable(dir: &Path) -> std::io::Result<()> {
    tempfile::Builder::new().prefix(".swizzledb-write-test").tempfile_in(dir).map(drop)
}

/// The directories [`parse_scratch_dir`] created: each path, and how many of its last
/// components did not exist before.
static CREATED_SCRATCH_DIRS: std::sync::Mutex<Vec<(PathBuf, usize)>> = std::sync::Mutex::new(Vec::new());

/// Removes the directories [`parse_scratch_dir`] created, where they are still empty: for a
/// command refused before any work, which must leave nothing behind (README "Exit codes").
/// A directory that holds anything stays, with its parents.
pub fn remove_created_scratch_dirs() {
    let created =
        std::mem::take(&mut *CREATED_SCRATCH_DIRS.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    for (path, missing) in created {
        // `remove_dir` takes only an empty directory, so a parent goes only after its child.
        for dir in path.ancestors().take(missing) {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// `builder` with split images as a command's `--lazy-split-images` and `--eager-split-images`
/// flags ask (they conflict), or as the engine chooses when neither is given (RECOVERY.md R29:
/// split-offs unless the log archive or decoupled checkpoints are on).
pub fn with_split_images(builder: swizzledb::Builder, lazy: bool, eager: bool) -> swizzledb::Builder {
    if lazy || eager {
        builder.lab(|l| l.lazy_split_images(lazy))
    } else {
        builder
    }
}

pub fn parse_mode(s: &str) -> Result<PoolMode, String> {
    s.parse().map_err(|e: swizzledb::BufferError| e.to_string())
}

pub fn to_usize(what: &str, v: u64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{what} {v} does not fit in memory addresses"))
}

/// `--page-size`: a size the engine's pages take, a power of two from 4KiB to 32KiB; any other
/// value, a size too large for a number included, is refused naming that range.
pub fn parse_page_size(input: &str) -> Result<u64, String> {
    let range = "use a power of two from 4KiB to 32KiB (e.g. 8KiB)";
    match units::parse_size(input) {
        Ok(n) if usize::try_from(n).is_ok_and(swizzledb_buffer::page::valid_page_size) => Ok(n),
        Ok(_) => Err(format!("--page-size {} is not supported; {range}", input.trim())),
        Err(e) => Err(format!("{e}; {range}")),
    }
}

/// Whether a pool of `pool` bytes over pages of `page_size` bytes can be made, checked as the
/// pool checks it (at least 16 and at most 2^32 - 2 frames), before anything is written.
pub fn check_pool(pool: u64, page_size: usize) -> Result<(), String> {
    let config = swizzledb_buffer::PoolConfig {
        pool_bytes: usize::try_from(pool).unwrap_or(usize::MAX),
        ..swizzledb_buffer::PoolConfig::default()
    };
    swizzledb_buffer::BufferPool::check_config(&config, page_size)
        .map_err(|e| format!("a pool of {} cannot be made: {e}", text::bytes(pool)))
}

/// `--pool` of a command whose databases have the default page size: a size the pool takes.
pub fn parse_default_page_pool(input: &str) -> Result<u64, String> {
    let pool = units::parse_size(input)?;
    check_pool(pool, swizzledb_buffer::page::DEFAULT_PAGE_SIZE)?;
    Ok(pool)
}

/// The configuration of one point, before records and working set are chosen.
pub fn base_config(experiment: &str, c: &Common, pool: u64) -> Result<Config, String> {
    // A baseline that is not measured fell back to another mode, which only the table's
    // header named.
    if let Some(baseline) = c.baseline.filter(|b| !c.mode.0.contains(b)) {
        return Err(format!(
            "--baseline {} is not one of the modes measured (--mode): add it to --mode, or leave \
             --baseline out",
            baseline.name()
        ));
    }
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
            text::bytes(pool),
            text::bytes(min_pool),
            swizzledb_buffer::MIN_FRAMES,
            text::bytes(c.page_size)
        ));
    }
    // The pool's other limits (at most 2^32 - 2 frames).
    check_pool(pool, c.page_size as usize).map_err(|e| {
        format!("{e}; give a smaller --pool (where it is not given, it grows with --records)")
    })?;
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
        background_eviction: !c.no_background_eviction,
        optimistic_leaf_reads: c.optimistic_leaf_reads,
        baseline: c.baseline,
        dir: c.dir.clone().unwrap_or_else(std::env::temp_dir),
        bp_queue: (64, 32),
        lmdb_reads_per_txn: buffer::LMDB_READS_PER_TXN,
    })
}

/// Records accessed for a working-set option over `records` records.
pub fn working_set_records(ws: Option<WorkingSet>, records: u64) -> Result<u64, String> {
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
pub fn points(
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

/// Results of all points of a run.
pub struct Outcome {
    /// Per point, per mode.
    pub points: Vec<Vec<ModeResult>>,
    /// Per point, per peer engine (`bench lookup --engine lmdb`; empty otherwise).
    pub peers: Vec<Vec<PeerResult>>,
    /// The result rows of every point.
    pub rows: Vec<Record>,
}

impl Outcome {
    /// Exit code 1 if a mode failed at some point; with `expect_memory_limit` (sweeps past the
    /// pool), main-memory mode reaching its memory limit is an expected result, not a failure.
    pub fn code(&self, expect_memory_limit: bool) -> ExitCode {
        let failed = self.points.iter().flatten().any(|r| {
            r.error.as_deref().is_some_and(|e| {
                !(expect_memory_limit && r.mode == PoolMode::MainMemory && e.contains("main-memory mode"))
            })
        }) || self.peers.iter().flatten().any(|p| p.error.is_some());
        if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// Runs every point (one database per mode and point, repetitions interleaved across modes).
///
/// # Errors
/// A database or I/O failure (a mode that fails at a point is recorded in its result instead).
pub fn measure_points(configs: &[Config], progress: Progress) -> Result<Outcome, Box<dyn Error>> {
    measure_points_with_peers(configs, &[], progress)
}

/// [`measure_points`], with the same lookups on each engine of `peers` at every point,
/// interleaved with the modes.
///
/// # Errors
/// As [`measure_points`]; and a peer this build does not have.
pub fn measure_points_with_peers(
    configs: &[Config],
    peers: &[EngineName],
    progress: Progress,
) -> Result<Outcome, Box<dyn Error>> {
    let mut outcome = Outcome { points: Vec::new(), peers: Vec::new(), rows: Vec::new() };
    for (i, cfg) in configs.iter().enumerate() {
        if configs.len() > 1 {
            progress.say(format_args!("point {}/{}", i + 1, configs.len()));
        }
        let (results, peer_results, open) = buffer::run_with_peers(cfg, peers, progress)?;
        progress.say(format_args!("closing and deleting the temporary databases ..."));
        drop(open);
        outcome.rows.extend(report::records_with_peers(cfg, &results, &peer_results));
        outcome.points.push(results);
        outcome.peers.push(peer_results);
    }
    Ok(outcome)
}

/// The logging note, then every point's table, each followed by its ratios to main-memory and
/// to the peers if `ratios` (`bench lookup`).
///
/// # Errors
/// Writing to `out` failed.
pub fn print_points(
    out: &mut dyn Write,
    configs: &[Config],
    outcome: &Outcome,
    ratios: bool,
) -> io::Result<()> {
    let mut out = out;
    if configs.iter().any(|c| !c.modes.is_empty()) {
        // SwizzleDB's logging setting; peers alone have none.
        report::write_logging_note(&mut out)?;
    }
    for (i, (cfg, results)) in configs.iter().zip(&outcome.points).enumerate() {
        writeln!(out)?;
        let peers = outcome.peers.get(i).map_or(&[][..], Vec::as_slice);
        report::print_table_with_peers(&mut out, cfg, results, peers)?;
        if ratios {
            report::print_ratios(&mut out, results, peers)?;
        }
    }
    Ok(())
}

/// TPC-C with `warehouses` at the benchmark's scale, or with the small catalog of
/// `--small-catalog` (smoke runs: [`TpccConfig::tiny`]).
#[must_use]
pub fn tpcc_config(warehouses: u32, small_catalog: bool) -> crate::workloads::tpcc::TpccConfig {
    if small_catalog {
        crate::workloads::tpcc::TpccConfig::tiny(warehouses)
    } else {
        crate::workloads::tpcc::TpccConfig::standard(warehouses)
    }
}

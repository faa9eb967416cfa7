//! `swizzledb bench wal`: what write-ahead logging costs, in four parts (docs/logging.md).
//!
//! 1. **overhead** — random-order inserts (8-byte keys, 100-byte values) in transactions of B
//!    inserts at several thread counts, in the four configurations of Graefe et al. 2014 Fig. 14
//!    that matter here: logging and locking off, logging off with locking, logging on with
//!    asynchronous commit, logging on with synchronous commit (both with locking); beside them
//!    the engine's default write path, the trees' own `insert` (auto-commit: one transaction per
//!    insert, no explicit `Transaction`) with synchronous and with asynchronous commit. A fresh
//!    database per measurement; inserts/s, ratio to the fastest configuration, log bytes per
//!    insert.
//! 2. **group-commit** — T threads each commit one-put transactions synchronously for D seconds:
//!    commits/s and commits per fsync (the log's sync rounds, those of its background flusher
//!    included).
//! 3. **restart** — a loaded database is opened by a child process, which updates records and is
//!    then killed with SIGKILL; the restart (`Database::open`) is timed in this process, with its
//!    counters (records analyzed and redone, pages written). Two series: without the page cleaner,
//!    the writer stops once X bytes of log follow the last checkpoint (`--log-sizes`: restart time
//!    against the log); and, with the cleaner on at a log bound and off, the writer runs for T
//!    seconds (`--run-times`: restart time against how long the process ran).
//! 4. **log-size** — one thread updates a few keys (auto-commit, asynchronous commit) many times,
//!    with the page cleaner on at a log bound and, for contrast, off; `Database::log_bytes()` and
//!    the bytes of the log's segment files are sampled every N updates.
//!
//! The crash is a real process kill on the real file system (not the in-process `FaultFs`), so
//! nothing of the writer's memory survives and restart reads what the OS holds; the OS page
//! cache is warm, so the restart times are those of a process crash, not of a power failure.
//!
//! Every part interleaves its configurations within each repetition (A B C D A B C D ...), so
//! drift of the machine hits them alike; tables show medians.
//!
//! Every database sets logging explicitly (the engine's default is on).

use std::error::Error;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use swizzledb::{Cleaner, CleanerStats, CommitMode, Database, LogStats, RestartStats, Tree};

use crate::child::Child;
use crate::experiment::{self, Experiment};
use crate::experiments::insert::mix;
use crate::harness::buffer::Progress;
use crate::plot::{Chart, Marks, Point, Scale, Series};
use crate::stats::{self, summarize};
use crate::text::{bytes, thousands, write_aligned};
use crate::{units, Usage};

/// Bytes per value (the brief's 100-byte values).
const VALUE_BYTES: usize = 100;
/// Inserts per transaction while loading the restart part's database.
const LOAD_BATCH: u64 = 1000;
/// Puts per transaction of the restart part's writer (large, so fsyncs do not dominate).
pub(crate) const WRITER_BATCH: u64 = 64;
/// The tree every part writes.
pub(crate) const TREE: &str = "wal";
/// Pool bytes per record (as `bench insert`): the index always fits in memory.
const POOL_BYTES_PER_RECORD: u64 = 320;
/// The log bound set with `Cleaner::None` (1 PiB). Without a cleaner nothing enforces a bound;
/// this one only passes the builder's check that the bound holds four segments, whatever the
/// segment size.
pub const NO_BOUND: u64 = 1 << 50;
/// The engine's default log segment (`LogConfig`), set explicitly where the bench means it.
pub(crate) const DEFAULT_SEGMENT: u64 = 16 << 20;
/// Pool of the log-size part: far more than its few keys need.
const LOG_SIZE_POOL: usize = 64 << 20;

/// Options of `bench wal`.
#[derive(Args, Debug)]
pub struct WalBenchArgs {
    /// Parts to run: all, or a comma-separated list of overhead, group-commit, restart, log-size
    #[arg(long, default_value = "all", value_parser = parse_parts)]
    parts: Parts,
    /// Inserts per measurement of the overhead part; records loaded before the restart part
    #[arg(long, default_value = "200000", value_parser = units::parse_positive_count)]
    records: u64,
    /// Inserts per transaction in the overhead part, comma-separated
    #[arg(long, default_value = "1,16", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    batch: Vec<u32>,
    /// Thread counts, comma-separated [default: 1,2,4 for overhead, 1,2,4,8,16 for group-commit]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<Vec<u16>>,
    /// Seconds per group-commit measurement
    #[arg(long, default_value = "3", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Longest time of one overhead measurement: a configuration still inserting then stops, and
    /// its row counts the inserts done (synchronous commit of one insert per transaction costs an
    /// fsync per insert)
    #[arg(long, default_value = "10", value_parser = units::parse_positive_seconds)]
    time_limit: f64,
    /// Restart part without the page cleaner: log written after the last checkpoint before the
    /// crash, comma-separated sizes, or none
    #[arg(long, default_value = "4MiB,16MiB,64MiB", value_parser = parse_log_sizes)]
    log_sizes: List<u64>,
    /// Restart part with the page cleaner on (at --max-log) and off: seconds the writer runs
    /// before the crash, comma-separated, or none
    #[arg(long, default_value = "1,4,16", value_parser = parse_run_times)]
    run_times: List<f64>,
    /// Log bound (Builder::max_log_bytes) with the cleaner on, in the log-size part and the
    /// restart part's --run-times
    #[arg(long, default_value = "8MiB", value_parser = units::parse_size)]
    max_log: u64,
    /// Log segment bytes (Builder::log_segment_bytes) of the log-size part and the restart
    /// part's --run-times; --max-log must be at least four segments
    #[arg(long, default_value = "256KiB", value_parser = parse_segment)]
    log_segment: u64,
    /// Updates per run of the log-size part
    #[arg(long, default_value = "1M", value_parser = units::parse_positive_count)]
    updates: u64,
    /// Keys the log-size part updates
    #[arg(long, default_value = "100", value_parser = units::parse_positive_count)]
    keys: u64,
    /// Updates between two samples of the log size in the log-size part [default: --updates / 200]
    #[arg(long, value_parser = units::parse_positive_count)]
    sample_every: Option<u64>,
    /// Measurements per configuration, interleaved across configurations; tables show medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Seed of the keys
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Directory for the temporary databases [default: the system temp directory]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Directory for wal.csv, wal.json and the plots (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Internal: run as the restart part's writer on the database at this path
    #[arg(long, hide = true)]
    child: Option<PathBuf>,
    /// Internal: the writer runs this many seconds (instead of up to the first --log-sizes)
    #[arg(long, hide = true, value_parser = units::parse_positive_seconds)]
    child_secs: Option<f64>,
    /// Internal: the writer's page cleaner is on (at --max-log; off: no bound)
    #[arg(long, hide = true)]
    child_cleaner: bool,
}

/// The parts of the benchmark.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Logging overhead on inserts.
    Overhead,
    /// Commits per fsync under group commit.
    GroupCommit,
    /// Restart time against the log since the last checkpoint, and against the writer's run time
    /// with and without the page cleaner.
    Restart,
    /// The log kept on disk over a long update run, with and without the page cleaner.
    LogSize,
}

impl Part {
    const ALL: [Part; 4] = [Part::Overhead, Part::GroupCommit, Part::Restart, Part::LogSize];

    fn name(self) -> &'static str {
        match self {
            Part::Overhead => "overhead",
            Part::GroupCommit => "group-commit",
            Part::Restart => "restart",
            Part::LogSize => "log-size",
        }
    }
}

/// A set of parts, in [`Part::ALL`] order.
#[derive(Clone, Debug)]
pub struct Parts(Vec<Part>);

fn parse_parts(input: &str) -> Result<Parts, String> {
    if input.trim().eq_ignore_ascii_case("all") {
        return Ok(Parts(Part::ALL.to_vec()));
    }
    let mut chosen = Vec::new();
    for name in input.split(',').map(str::trim) {
        let part = Part::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            format!(
                "unknown part {name:?}: use all, or a comma-separated list of overhead, group-commit, restart, \
                 log-size"
            )
        })?;
        chosen.push(part);
    }
    Ok(Parts(Part::ALL.into_iter().filter(|p| chosen.contains(p)).collect()))
}

pub(crate) fn parse_log_size(input: &str) -> Result<u64, String> {
    match units::parse_size(input)? {
        n if n >= 64 << 10 => Ok(n),
        _ => Err(format!("log size {input:?} is too small; use at least 64KiB (e.g. 16MiB)")),
    }
}

/// A comma-separated option list that may be `none` (empty).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(Vec<T>);

fn parse_list<T>(input: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<List<T>, String> {
    if input.trim().eq_ignore_ascii_case("none") {
        return Ok(List(Vec::new()));
    }
    input.split(',').map(|w| item(w.trim())).collect::<Result<_, _>>().map(List)
}

fn parse_log_sizes(input: &str) -> Result<List<u64>, String> {
    parse_list(input, parse_log_size)
}

fn parse_run_times(input: &str) -> Result<List<f64>, String> {
    parse_list(input, units::parse_positive_seconds)
}

fn parse_segment(input: &str) -> Result<u64, String> {
    match units::parse_size(input)? {
        n if n % 8 == 0 && (4096..=1 << 30).contains(&n) => Ok(n),
        _ => Err(format!("log segment {input:?}: use a multiple of 8 bytes from 4KiB to 1GiB (e.g. 256KiB)")),
    }
}

/// A configuration of the overhead part.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Setup {
    /// No log, no record locks.
    NoLogNoLock,
    /// No log, record locks.
    NoLogLock,
    /// Log with asynchronous commit, record locks.
    LogAsync,
    /// Log with synchronous commit, record locks.
    LogSync,
    /// The trees' own `insert` with the engine's defaults (log, record locks, page cleaner):
    /// auto-commit, one transaction per insert, asynchronous commit.
    AutoAsync,
    /// As [`Setup::AutoAsync`] with synchronous commit (the engine's default commit mode).
    AutoSync,
}

impl Setup {
    const ALL: [Setup; 6] = [
        Setup::NoLogNoLock,
        Setup::NoLogLock,
        Setup::LogAsync,
        Setup::LogSync,
        Setup::AutoAsync,
        Setup::AutoSync,
    ];

    fn name(self) -> &'static str {
        match self {
            Setup::NoLogNoLock => "nolog-nolock",
            Setup::NoLogLock => "nolog-lock",
            Setup::LogAsync => "log-async",
            Setup::LogSync => "log-sync",
            Setup::AutoAsync => "auto-async",
            Setup::AutoSync => "auto-sync",
        }
    }

    fn logging(self) -> bool {
        !matches!(self, Setup::NoLogNoLock | Setup::NoLogLock)
    }

    fn locking(self) -> bool {
        self != Setup::NoLogNoLock
    }

    /// Inserts through `Tree::insert`, one auto-committed transaction each.
    fn auto_commit(self) -> bool {
        matches!(self, Setup::AutoAsync | Setup::AutoSync)
    }

    /// The batch a measurement of this configuration runs with: auto-commit is one insert per
    /// transaction whatever `--batch` says.
    fn batch(self, batch: u32) -> u32 {
        if self.auto_commit() {
            1
        } else {
            batch
        }
    }

    fn commit_mode(self) -> Option<CommitMode> {
        match self {
            Setup::LogAsync | Setup::AutoAsync => Some(CommitMode::Async),
            Setup::LogSync | Setup::AutoSync => Some(CommitMode::Sync),
            _ => None,
        }
    }

    /// Logging and locking set explicitly; the page cleaner, its bound and the log segments are
    /// the engine's defaults.
    fn builder(self, pool_bytes: usize) -> swizzledb::Builder {
        Database::builder()
            .pool_bytes(pool_bytes)
            .logging(self.logging())
            .lab(|l| l.locking(self.locking()))
            .commit_mode(self.commit_mode().unwrap_or_default())
    }
}

/// The page cleaner of a database, as the CSV names it.
fn cleaner_name(cleaner: Cleaner) -> &'static str {
    match cleaner {
        Cleaner::None => "none",
        Cleaner::Decoupled => "decoupled",
        _ => "classical",
    }
}

/// A logged database with the bench's cleaner settings: `Cleaner::Classical` at `max_log`, or
/// `Cleaner::None` without a bound ([`NO_BOUND`]); `segment` bytes per log segment.
fn cleaner_builder(
    builder: swizzledb::Builder,
    cleaner: Cleaner,
    max_log: u64,
    segment: u64,
) -> swizzledb::Builder {
    let bound = if cleaner == Cleaner::None { NO_BOUND } else { max_log };
    builder.logging(true).lab(|l| l.cleaner(cleaner)).max_log_bytes(bound).log_segment_bytes(segment)
}

/// Bytes of the log's segment files (`*.log`) in the log directory of the database at `path`.
pub(crate) fn wal_dir_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(swizzledb::wal_dir(path)) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The validated plan of a run.
struct Plan {
    parts: Vec<Part>,
    records: u64,
    batches: Vec<u32>,
    overhead_threads: Vec<usize>,
    group_threads: Vec<usize>,
    duration: f64,
    time_limit: f64,
    log_sizes: Vec<u64>,
    run_times: Vec<f64>,
    max_log: u64,
    log_segment: u64,
    updates: u64,
    keys: u64,
    sample_every: u64,
    repeat: usize,
    seed: u64,
    dir: PathBuf,
}

/// The pool for `records` records: [`POOL_BYTES_PER_RECORD`] each, at least 64 MiB.
pub(crate) fn pool_bytes(records: u64) -> Result<usize, String> {
    let bytes = records.saturating_mul(POOL_BYTES_PER_RECORD).max(64 << 20);
    usize::try_from(bytes).map_err(|_| format!("--records {records} needs too large a pool"))
}

impl Plan {
    fn pool_bytes(&self) -> Result<usize, String> {
        pool_bytes(self.records)
    }

    fn has(&self, part: Part) -> bool {
        self.parts.contains(&part)
    }
}

fn sorted(v: &[u16]) -> Vec<usize> {
    let mut v: Vec<usize> = v.iter().map(|&t| usize::from(t)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn plan(args: &WalBenchArgs) -> Result<Plan, String> {
    let mut batches = args.batch.clone();
    batches.sort_unstable();
    batches.dedup();
    let mut log_sizes = args.log_sizes.0.clone();
    log_sizes.sort_unstable();
    log_sizes.dedup();
    let mut run_times = args.run_times.0.clone();
    run_times.sort_by(f64::total_cmp);
    run_times.dedup();
    let plan = Plan {
        parts: args.parts.0.clone(),
        records: args.records,
        batches,
        overhead_threads: sorted(args.threads.as_deref().unwrap_or(&[1, 2, 4])),
        group_threads: sorted(args.threads.as_deref().unwrap_or(&[1, 2, 4, 8, 16])),
        duration: args.duration,
        time_limit: args.time_limit,
        log_sizes,
        run_times,
        max_log: args.max_log,
        log_segment: args.log_segment,
        updates: args.updates,
        keys: args.keys,
        sample_every: args.sample_every.unwrap_or((args.updates / 200).max(1)),
        repeat: usize::from(args.repeat),
        seed: args.seed,
        dir: args.dir.clone().unwrap_or_else(std::env::temp_dir),
    };
    plan.pool_bytes()?;
    if plan.parts.is_empty() {
        return Err("--parts chose nothing; use all, overhead, group-commit, restart or log-size".into());
    }
    let bounded = plan.has(Part::LogSize) || (plan.has(Part::Restart) && !plan.run_times.is_empty());
    if bounded && plan.max_log < 4 * plan.log_segment {
        return Err(format!(
            "--max-log {} must be at least four log segments (--log-segment {}): raise it or lower --log-segment",
            bytes(plan.max_log),
            bytes(plan.log_segment)
        ));
    }
    if plan.has(Part::Restart) && plan.log_sizes.is_empty() && plan.run_times.is_empty() {
        return Err("the restart part needs --log-sizes or --run-times (both are none)".into());
    }
    Ok(plan)
}

/// The key of counter `i`: a bijective mix, so distinct counters give distinct keys in random
/// order.
pub(crate) fn key_of(seed: u64, i: u64) -> [u8; 8] {
    mix(i ^ mix(seed)).to_be_bytes()
}

/// A 100-byte value naming its key and a version.
pub(crate) fn value_of(key: &[u8; 8], version: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    for (i, b) in v.iter_mut().enumerate() {
        *b = key[i % 8] ^ (version as u8).wrapping_add(i as u8);
    }
    v
}

/// The counters of `after` minus those of `before`.
fn log_delta(after: &LogStats, before: &LogStats) -> LogStats {
    LogStats {
        appends: after.appends - before.appends,
        body_bytes: after.body_bytes - before.body_bytes,
        log_bytes: after.log_bytes - before.log_bytes,
        buffer_full_waits: after.buffer_full_waits - before.buffer_full_waits,
        flush_requests: after.flush_requests - before.flush_requests,
        flush_already_durable: after.flush_already_durable - before.flush_already_durable,
        flush_led: after.flush_led - before.flush_led,
        flush_joined: after.flush_joined - before.flush_joined,
        flush_failed: after.flush_failed - before.flush_failed,
        fsyncs: after.fsyncs - before.fsyncs,
        background_fsyncs: after.background_fsyncs - before.background_fsyncs,
        file_syncs: after.file_syncs - before.file_syncs,
    }
}

/// What the page cleaner did: rounds, pages written back, transactions throttled at `begin`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleaning {
    rounds: u64,
    pages_written: u64,
    throttled: u64,
}

impl Cleaning {
    fn of(db: &Database) -> Option<Cleaning> {
        db.cleaner_stats().map(|c: CleanerStats| Cleaning {
            rounds: c.rounds,
            pages_written: c.pages_written,
            throttled: c.throttled,
        })
    }

    fn since(self, before: Cleaning) -> Cleaning {
        Cleaning {
            rounds: self.rounds - before.rounds,
            pages_written: self.pages_written - before.pages_written,
            throttled: self.throttled - before.throttled,
        }
    }
}

/// Runs `body` in a transaction, retrying it when a record lock is refused (a deadlock's victim); returns
/// the number of retries.
pub(crate) fn with_retry(
    db: &Database,
    mut body: impl FnMut(&mut swizzledb::Transaction<'_>) -> swizzledb::Result<()>,
) -> swizzledb::Result<u64> {
    let mut retries = 0;
    loop {
        let mut t = db.begin();
        match body(&mut t) {
            Ok(()) => {
                t.commit()?;
                return Ok(retries);
            }
            Err(swizzledb::Error::Lock(_)) => {
                t.abort()?;
                retries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Part 1: overhead

/// One measurement of the overhead part.
#[derive(Clone, Debug)]
pub struct InsertRun {
    setup: Setup,
    threads: usize,
    batch: u32,
    repetition: usize,
    inserts: u64,
    commits: u64,
    secs: f64,
    /// Log counters of the measurement (`None` without logging).
    log: Option<LogStats>,
    lock_retries: u64,
    /// The time limit stopped it before all inserts were done.
    capped: bool,
    /// The page cleaner's counters at the end (`None` without logging).
    cleaning: Option<Cleaning>,
    /// `Database::log_bytes()` at the end (`None` without logging).
    log_kept: Option<u64>,
}

impl InsertRun {
    fn inserts_per_sec(&self) -> f64 {
        self.inserts as f64 / self.secs
    }

    fn log_bytes_per_insert(&self) -> Option<f64> {
        let log = self.log.as_ref()?;
        (self.inserts > 0).then(|| log.log_bytes as f64 / self.inserts as f64)
    }
}

/// One fresh database: `threads` threads insert the counters `0..records` in transactions of
/// `batch`, transaction j going to thread j mod threads, until done or `time_limit`; an
/// auto-commit configuration calls `Tree::insert` instead (`batch` is 1 for it).
fn measure_inserts(
    plan: &Plan,
    scratch: &Path,
    setup: Setup,
    threads: usize,
    batch: u32,
    repetition: usize,
) -> Result<InsertRun, Box<dyn Error>> {
    let path = scratch.join(format!("overhead-{}.swz", setup.name()));
    let db = setup.builder(plan.pool_bytes()?).create(&path)?;
    let tree = db.create_tree(TREE)?;
    let batch64 = u64::from(batch);
    let txns = plan.records.div_ceil(batch64);
    let inserted = AtomicU64::new(0);
    let commits = AtomicU64::new(0);
    let retries = AtomicU64::new(0);
    let capped = AtomicBool::new(false);
    let before = db.log_stats();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(plan.time_limit);
    let results: Vec<swizzledb::Result<()>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (db, tree, inserted, commits, retries, capped) =
                    (&db, &tree, &inserted, &commits, &retries, &capped);
                s.spawn(move || -> swizzledb::Result<()> {
                    let mut j = t;
                    while j < txns {
                        if Instant::now() >= deadline {
                            capped.store(true, Ordering::Relaxed);
                            break;
                        }
                        let range = j * batch64..((j + 1) * batch64).min(plan.records);
                        let n = range.end - range.start;
                        if setup.auto_commit() {
                            // One transaction per insert; the tree retries refused locks itself.
                            for i in range {
                                let key = key_of(plan.seed, i);
                                tree.insert(&key, &value_of(&key, 0))?;
                            }
                            commits.fetch_add(n, Ordering::Relaxed);
                        } else {
                            let r = with_retry(db, |txn| {
                                for i in range.clone() {
                                    let key = key_of(plan.seed, i);
                                    txn.insert(tree, &key, &value_of(&key, 0))?;
                                }
                                Ok(())
                            })?;
                            retries.fetch_add(r, Ordering::Relaxed);
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                        inserted.fetch_add(n, Ordering::Relaxed);
                        j += threads as u64;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("insert thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let log = match (db.log_stats(), before) {
        (Some(after), Some(before)) => Some(log_delta(&after, &before)),
        _ => None,
    };
    let (cleaning, log_kept) = (Cleaning::of(&db), db.log_bytes());
    for r in results {
        r?;
    }
    db.close()?;
    remove_database(&path);
    Ok(InsertRun {
        setup,
        threads,
        batch,
        repetition,
        inserts: inserted.into_inner(),
        commits: commits.into_inner(),
        secs,
        log,
        lock_retries: retries.into_inner(),
        capped: capped.into_inner(),
        cleaning,
        log_kept,
    })
}

/// Removes a database file and its log directory (errors ignored: scratch files).
pub(crate) fn remove_database(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(swizzledb::wal_dir(path));
}

fn run_overhead(plan: &Plan, scratch: &Path, progress: Progress) -> Result<Vec<InsertRun>, Box<dyn Error>> {
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.overhead_threads {
            // The batched configurations at every batch size, then the auto-commit ones once.
            let mut measurements: Vec<(Setup, u32)> = Vec::new();
            for &batch in &plan.batches {
                measurements.extend(Setup::ALL.iter().filter(|s| !s.auto_commit()).map(|&s| (s, batch)));
            }
            measurements.extend(Setup::ALL.iter().filter(|s| s.auto_commit()).map(|&s| (s, 1)));
            for (setup, batch) in measurements {
                let run = measure_inserts(plan, scratch, setup, threads, batch, rep)
                    .map_err(|e| format!("overhead, {} at {threads} thread(s): {e}", setup.name()))?;
                progress.say(format_args!(
                    "overhead rep {}/{}: {} {threads} thr batch {batch}: {} inserts/s{}",
                    rep + 1,
                    plan.repeat,
                    setup.name(),
                    thousands(run.inserts_per_sec().round() as u64),
                    if run.capped { " (time limit)" } else { "" }
                ));
                runs.push(run);
            }
        }
    }
    Ok(runs)
}

fn insert_median(
    runs: &[InsertRun],
    setup: Setup,
    threads: usize,
    batch: u32,
    f: impl Fn(&InsertRun) -> Option<f64>,
) -> Option<f64> {
    let batch = setup.batch(batch);
    stats::median_by(runs, |r| r.setup == setup && r.threads == threads && r.batch == batch, f)
}

fn print_overhead(out: &mut impl Write, plan: &Plan, runs: &[InsertRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n1. overhead: {} random-order inserts ({VALUE_BYTES}-byte values) per measurement into a fresh \
         database, at most {} s each; median of {} interleaved repetitions",
        thousands(plan.records),
        plan.time_limit,
        plan.repeat
    )?;
    writeln!(
        out,
        "   inserts/s (ratio to the fastest configuration at the same threads and batch); log bytes per insert"
    )?;
    for &batch in &plan.batches {
        let mut header = vec![format!("batch {batch}")];
        header.extend(plan.overhead_threads.iter().map(|t| format!("{t} thr")));
        header.push("log B/insert".to_string());
        let mut table = vec![header];
        for setup in Setup::ALL {
            let mut row = vec![setup.name().to_string()];
            for &t in &plan.overhead_threads {
                let x = insert_median(runs, setup, t, batch, |r| Some(r.inserts_per_sec()));
                let best = Setup::ALL
                    .iter()
                    .filter_map(|&s| insert_median(runs, s, t, batch, |r| Some(r.inserts_per_sec())))
                    .fold(0.0, f64::max);
                let capped = runs
                    .iter()
                    .any(|r| r.setup == setup && r.threads == t && r.batch == setup.batch(batch) && r.capped);
                row.push(x.map_or("-".into(), |x| {
                    format!(
                        "{} ({:.2}x){}",
                        thousands(x.round() as u64),
                        x / best,
                        if capped { "*" } else { "" }
                    )
                }));
            }
            let per_insert: Vec<f64> = plan
                .overhead_threads
                .iter()
                .filter_map(|&t| insert_median(runs, setup, t, batch, InsertRun::log_bytes_per_insert))
                .collect();
            row.push(summarize(&per_insert).map_or("0".into(), |s| format!("{:.0}", s.median)));
            table.push(row);
        }
        write_aligned(out, &table)?;
    }
    writeln!(
        out,
        "   auto-async, auto-sync: Tree::insert with the engine's defaults (log, record locks, page cleaner), one \
         auto-committed transaction per insert whatever the batch (the same measurements in every table)"
    )?;
    if runs.iter().any(|r| r.capped) {
        writeln!(
            out,
            "   * the time limit (--time-limit {} s) stopped some repetitions early: their rate is over the \
             inserts done (a smaller tree than the others')",
            plan.time_limit
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 2: group commit

/// One measurement of the group-commit part.
#[derive(Clone, Debug)]
pub struct CommitRun {
    threads: usize,
    repetition: usize,
    commits: u64,
    secs: f64,
    log: LogStats,
    lock_retries: u64,
    /// The page cleaner during the measurement.
    cleaning: Cleaning,
    /// `Database::log_bytes()` at the end.
    log_kept: u64,
}

impl CommitRun {
    fn commits_per_sec(&self) -> f64 {
        self.commits as f64 / self.secs
    }

    /// Commits per sync round of the log, background rounds included.
    fn commits_per_fsync(&self) -> Option<f64> {
        let rounds = self.log.fsyncs + self.log.background_fsyncs;
        (rounds > 0).then(|| self.commits as f64 / rounds as f64)
    }
}

fn measure_commits(
    plan: &Plan,
    db: &Database,
    tree: &Tree,
    threads: usize,
    repetition: usize,
) -> Result<CommitRun, Box<dyn Error>> {
    let stop = AtomicBool::new(false);
    let before = db.log_stats().ok_or("the group-commit database logs")?;
    let cleaning_before = Cleaning::of(db).unwrap_or_default();
    let start = Instant::now();
    let results: Vec<swizzledb::Result<(u64, u64)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || -> swizzledb::Result<(u64, u64)> {
                    let (mut commits, mut retries) = (0u64, 0u64);
                    // Disjoint keys per thread and repetition: no lock conflicts, new keys.
                    let base = (t << 48) | ((repetition as u64) << 40);
                    while !stop.load(Ordering::Relaxed) {
                        let key = key_of(plan.seed, base | commits);
                        retries += with_retry(db, |txn| txn.put(tree, &key, &value_of(&key, 1)).map(drop))?;
                        commits += 1;
                    }
                    Ok((commits, retries))
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(plan.duration));
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().expect("commit thread panicked")).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let after = db.log_stats().ok_or("the group-commit database logs")?;
    let (mut commits, mut lock_retries) = (0, 0);
    for r in results {
        let (c, l) = r?;
        commits += c;
        lock_retries += l;
    }
    Ok(CommitRun {
        threads,
        repetition,
        commits,
        secs,
        log: log_delta(&after, &before),
        lock_retries,
        cleaning: Cleaning::of(db).unwrap_or_default().since(cleaning_before),
        log_kept: db.log_bytes().unwrap_or(0),
    })
}

fn run_group_commit(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<CommitRun>, Box<dyn Error>> {
    let path = scratch.join("group-commit.swz");
    let db = Setup::LogSync.builder(64 << 20).create(&path)?;
    let tree = db.create_tree(TREE)?;
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.group_threads {
            let run = measure_commits(plan, &db, &tree, threads, rep)
                .map_err(|e| format!("group commit at {threads} thread(s): {e}"))?;
            progress.say(format_args!(
                "group-commit rep {}/{}: {threads} thr: {} commits/s, {:.2} commits per fsync",
                rep + 1,
                plan.repeat,
                thousands(run.commits_per_sec().round() as u64),
                run.commits_per_fsync().unwrap_or(0.0)
            ));
            runs.push(run);
        }
    }
    drop(tree);
    db.close()?;
    remove_database(&path);
    Ok(runs)
}

/// Whether the thread counts oversubscribe the machine's cores.
fn cores_note(threads: &[usize]) -> String {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if threads.iter().any(|&t| t > cores) {
        format!(
            "This machine has {cores} core(s): with more threads, committers also wait for the CPU, and an \
             fsync round may end before the next committer has run."
        )
    } else {
        format!("This machine has {cores} core(s); no run oversubscribes them.")
    }
}

fn commit_median(runs: &[CommitRun], threads: usize, f: impl Fn(&CommitRun) -> Option<f64>) -> Option<f64> {
    stats::median_by(runs, |r| r.threads == threads, f)
}

fn print_group_commit(out: &mut impl Write, plan: &Plan, runs: &[CommitRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n2. group commit: each thread commits one-put transactions synchronously for {} s; median of {} \
         interleaved repetitions",
        plan.duration, plan.repeat
    )?;
    writeln!(out, "   {}", cores_note(&plan.group_threads))?;
    let mut table = vec![vec![
        "threads".to_string(),
        "commits/s".to_string(),
        "commits per fsync".to_string(),
        "flush requests per fsync".to_string(),
    ]];
    for &t in &plan.group_threads {
        let dash = || "-".to_string();
        table.push(vec![
            t.to_string(),
            commit_median(runs, t, |r| Some(r.commits_per_sec()))
                .map_or_else(dash, |x| thousands(x.round() as u64)),
            commit_median(runs, t, CommitRun::commits_per_fsync).map_or_else(dash, |x| format!("{x:.2}")),
            commit_median(runs, t, |r| Some(r.log.requests_per_fsync()))
                .map_or_else(dash, |x| format!("{x:.2}")),
        ]);
    }
    write_aligned(out, &table)
}

// ---------------------------------------------------------------------------------------------
// Part 3: restart

/// What stops the restart part's writer.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Stop {
    /// The first commit at or past this many bytes of log after the checkpoint its open ended
    /// with (`--log-sizes`).
    LogBytes(u64),
    /// The first commit at or past this many seconds after its open (`--run-times`).
    Secs(f64),
}

/// The database settings of the restart part's writer (and of the restart after it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WriterSetup {
    cleaner: Cleaner,
    /// The bound with the cleaner on (with `Cleaner::None` the bench sets [`NO_BOUND`]).
    max_log: u64,
    segment: u64,
}

impl WriterSetup {
    /// The `--log-sizes` series: no page cleaner, the engine's default segments.
    fn unbounded() -> WriterSetup {
        WriterSetup { cleaner: Cleaner::None, max_log: NO_BOUND, segment: DEFAULT_SEGMENT }
    }

    /// The `--run-times` series with or without the cleaner.
    fn timed(plan: &Plan, cleaner: Cleaner) -> WriterSetup {
        WriterSetup { cleaner, max_log: plan.max_log, segment: plan.log_segment }
    }

    /// The log bound the database runs with.
    fn bound(self) -> u64 {
        if self.cleaner == Cleaner::None {
            NO_BOUND
        } else {
            self.max_log
        }
    }

    fn builder(self, pool_bytes: usize) -> swizzledb::Builder {
        cleaner_builder(Setup::LogSync.builder(pool_bytes), self.cleaner, self.max_log, self.segment)
    }
}

/// One measurement of the restart part.
#[derive(Clone, Debug)]
pub struct RestartRun {
    /// What the writer was asked to do.
    stop: Stop,
    setup: WriterSetup,
    repetition: usize,
    /// Log bytes the writer wrote after the checkpoint before it was killed.
    log_bytes: u64,
    /// `Database::log_bytes()` in the writer when it stopped.
    log_kept: u64,
    /// Bytes of the log's segment files after the kill.
    wal_dir: u64,
    /// Seconds the writer wrote.
    writer_secs: f64,
    /// What the writer's page cleaner did.
    cleaning: Cleaning,
    /// Transactions the writer committed.
    commits: u64,
    secs: f64,
    stats: RestartStats,
}

impl RestartRun {
    fn log_mib(&self) -> f64 {
        self.log_bytes as f64 / f64::from(1u32 << 20)
    }

    fn target_bytes(&self) -> Option<u64> {
        match self.stop {
            Stop::LogBytes(t) => Some(t),
            Stop::Secs(_) => None,
        }
    }

    fn target_secs(&self) -> Option<f64> {
        match self.stop {
            Stop::Secs(s) => Some(s),
            Stop::LogBytes(_) => None,
        }
    }
}

/// Copies a database file and its log directory, with the directories in it (the log
/// archive's, `<path>.wal/archive`).
pub(crate) fn copy_database(from: &Path, to: &Path) -> io::Result<()> {
    remove_database(to);
    std::fs::copy(from, to)?;
    copy_dir(&swizzledb::wal_dir(from), &swizzledb::wal_dir(to))
}

/// Copies directory `from` to `to` (created if missing), recursively.
fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()))?;
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// The record the restart writer's `j`-th put of its `i`-th transaction updates (an index below
/// `records`, for [`key_of`]); that put writes version `i + 2` ([`value_of`]).
pub(crate) fn writer_record(i: u64, j: u64, records: u64) -> u64 {
    mix(i * WRITER_BATCH + j) % records
}

/// What the restart writer did before it stopped.
pub(crate) struct Written {
    /// Log bytes appended since the writer began (after its open's checkpoint).
    pub(crate) log_bytes: u64,
    /// Transactions committed: the first `commits` of the writer's sequence, all durable.
    pub(crate) commits: u64,
    /// Seconds the writer wrote.
    pub(crate) secs: f64,
}

/// The restart writer's loop: updates random records of the [`TREE`] of `db` (loaded with
/// `records` records of `seed`) in transactions of [`WRITER_BATCH`] puts ([`writer_record`])
/// until `stop`, committing each as `db` is set to.
///
/// # Errors
/// A database error, or `db` does not log.
pub(crate) fn write_until(
    db: &Database,
    records: u64,
    seed: u64,
    stop: Stop,
) -> Result<Written, Box<dyn Error>> {
    let tree = db.tree(TREE)?;
    let start = db.log_stats().ok_or("the restart database logs")?.log_bytes;
    let started = Instant::now();
    let mut written;
    let mut commits = 0u64;
    let mut i = 0u64;
    loop {
        with_retry(db, |txn| {
            for j in 0..WRITER_BATCH {
                let key = key_of(seed, writer_record(i, j, records));
                txn.put(&tree, &key, &value_of(&key, i + 2))?;
            }
            Ok(())
        })?;
        i += 1;
        commits += 1;
        written = db.log_stats().ok_or("the restart database logs")?.log_bytes - start;
        let done = match stop {
            Stop::LogBytes(target) => written >= target,
            Stop::Secs(secs) => started.elapsed().as_secs_f64() >= secs,
        };
        if done {
            break;
        }
    }
    Ok(Written { log_bytes: written, commits, secs: started.elapsed().as_secs_f64() })
}

/// The writer (a child process): opens the database, updates random loaded records in
/// transactions of [`WRITER_BATCH`] puts (synchronous commit) until `--log-sizes` bytes of log
/// follow the checkpoint the open ended with, or for `--child-secs`; prints `ready <log bytes>
/// <commits> <log kept> <seconds> <cleaner rounds> <pages written> <throttled>` and waits to be
/// killed.
fn child(args: &WalBenchArgs, path: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let stop = match args.child_secs {
        Some(secs) => Stop::Secs(secs),
        None => Stop::LogBytes(*args.log_sizes.0.first().ok_or("the writer needs one --log-sizes value")?),
    };
    let cleaner = if args.child_cleaner { Cleaner::Classical } else { Cleaner::None };
    let setup = WriterSetup { cleaner, max_log: args.max_log, segment: args.log_segment };
    let records = args.records;
    let db = setup.builder(pool_bytes(records)?).open(path)?;
    let Written { log_bytes: written, commits, secs } = write_until(&db, records, args.seed, stop)?;
    let kept = db.log_bytes().unwrap_or(0);
    let c = Cleaning::of(&db).unwrap_or_default();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "ready {written} {commits} {kept} {secs} {} {} {}",
        c.rounds, c.pages_written, c.throttled
    )?;
    out.flush()?;
    drop(out);
    // Wait for SIGKILL; if the parent went away instead, leave without a checkpoint too.
    let mut line = String::new();
    let _ = io::stdin().read_line(&mut line);
    std::process::exit(0)
}

/// Loads a base database: `records` inserts, then a clean close (which checkpoints).
fn load_base(plan: &Plan, path: &Path, setup: WriterSetup, progress: Progress) -> Result<(), Box<dyn Error>> {
    progress.say(format_args!(
        "restart: loading {} records ({} log segments) ...",
        thousands(plan.records),
        bytes(setup.segment)
    ));
    let db = setup.builder(plan.pool_bytes()?).create(path)?;
    load_records(&db, plan.records, plan.seed)?;
    db.close()?;
    Ok(())
}

/// Creates the [`TREE`] of `db` and inserts records `0..records` of `seed` ([`key_of`], version
/// 0 of [`value_of`]) in transactions of [`LOAD_BATCH`].
///
/// # Errors
/// A database error.
pub(crate) fn load_records(db: &Database, records: u64, seed: u64) -> swizzledb::Result<()> {
    let tree = db.create_tree(TREE)?;
    let mut from = 0;
    while from < records {
        let to = (from + LOAD_BATCH).min(records);
        with_retry(db, |txn| {
            for i in from..to {
                let key = key_of(seed, i);
                txn.insert(&tree, &key, &value_of(&key, 0))?;
            }
            Ok(())
        })?;
        from = to;
    }
    Ok(())
}

/// The writer's `ready` line.
struct Ready {
    log_bytes: u64,
    commits: u64,
    log_kept: u64,
    secs: f64,
    cleaning: Cleaning,
}

fn parse_ready(line: &str) -> Option<Ready> {
    let mut words = line.split_whitespace();
    if words.next()? != "ready" {
        return None;
    }
    let mut n = || words.next()?.parse::<u64>().ok();
    let (log_bytes, commits, log_kept) = (n()?, n()?, n()?);
    let secs = words.next()?.parse::<f64>().ok()?;
    let mut n = || words.next()?.parse::<u64>().ok();
    let cleaning = Cleaning { rounds: n()?, pages_written: n()?, throttled: n()? };
    Some(Ready { log_bytes, commits, log_kept, secs, cleaning })
}

/// One crash and restart: copy the base, run the writer until `stop`, SIGKILL it, time the
/// open.
fn measure_restart(
    plan: &Plan,
    base: &Path,
    run: &Path,
    stop: Stop,
    setup: WriterSetup,
    repetition: usize,
) -> Result<RestartRun, Box<dyn Error>> {
    copy_database(base, run)?;
    let mut args: Vec<String> = vec!["bench".into(), "wal".into()];
    let mut arg = |k: &str, v: String| args.extend([k.to_string(), v]);
    arg("--records", plan.records.to_string());
    arg("--seed", plan.seed.to_string());
    arg("--max-log", setup.max_log.to_string());
    arg("--log-segment", setup.segment.to_string());
    match stop {
        Stop::LogBytes(target) => arg("--log-sizes", target.to_string()),
        Stop::Secs(secs) => arg("--child-secs", secs.to_string()),
    }
    if setup.cleaner != Cleaner::None {
        args.push("--child-cleaner".into());
    }
    args.push("--child".into());
    let mut child = Child::spawn(
        args.iter().map(String::as_str).chain([run.as_os_str().to_str().ok_or("a non-UTF-8 path")?]),
    )?;
    let ready = child.next_line().as_deref().and_then(parse_ready);
    let ended = child.kill()?;
    let Some(ready) = ready else {
        return Err(format!("the writer stopped before it was done: {}", ended.stderr.trim()).into());
    };
    let wal_dir = wal_dir_bytes(run);
    let start = Instant::now();
    let db = setup.builder(plan.pool_bytes()?).open(run)?;
    let secs = start.elapsed().as_secs_f64();
    let stats = db.restart_stats();
    db.close()?;
    remove_database(run);
    Ok(RestartRun {
        stop,
        setup,
        repetition,
        log_bytes: ready.log_bytes,
        log_kept: ready.log_kept,
        wal_dir,
        writer_secs: ready.secs,
        cleaning: ready.cleaning,
        commits: ready.commits,
        secs,
        stats,
    })
}

/// The page cleaners of the `--run-times` series, interleaved in this order.
const TIMED_CLEANERS: [Cleaner; 2] = [Cleaner::Classical, Cleaner::None];

fn run_restart(plan: &Plan, scratch: &Path, progress: Progress) -> Result<Vec<RestartRun>, Box<dyn Error>> {
    // The base of the --log-sizes series has the default segments; that of --run-times
    // --log-segment (a log opens only with the segment size it was written with).
    let base = scratch.join("restart-base.swz");
    let timed_base = scratch.join("restart-base-timed.swz");
    if !plan.log_sizes.is_empty() {
        load_base(plan, &base, WriterSetup::unbounded(), progress)?;
    }
    if !plan.run_times.is_empty() {
        load_base(plan, &timed_base, WriterSetup::timed(plan, Cleaner::None), progress)?;
    }
    let run = scratch.join("restart.swz");
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        let mut measurements: Vec<(Stop, WriterSetup, &Path)> = plan
            .log_sizes
            .iter()
            .map(|&t| (Stop::LogBytes(t), WriterSetup::unbounded(), base.as_path()))
            .collect();
        for &secs in &plan.run_times {
            for cleaner in TIMED_CLEANERS {
                measurements.push((
                    Stop::Secs(secs),
                    WriterSetup::timed(plan, cleaner),
                    timed_base.as_path(),
                ));
            }
        }
        for (stop, setup, from) in measurements {
            let what = match stop {
                Stop::LogBytes(t) => format!("{} of log", bytes(t)),
                Stop::Secs(s) => format!("{s} s with cleaner {}", cleaner_name(setup.cleaner)),
            };
            let r = measure_restart(plan, from, &run, stop, setup, rep)
                .map_err(|e| format!("restart after {what}: {e}"))?;
            progress.say(format_args!(
                "restart rep {}/{}: {what}: {:.1} MiB written, {} kept: {:.3} s",
                rep + 1,
                plan.repeat,
                r.log_mib(),
                bytes(r.log_kept),
                r.secs
            ));
            runs.push(r);
        }
    }
    remove_database(&base);
    remove_database(&timed_base);
    Ok(runs)
}

fn restart_median(runs: &[RestartRun], target: u64, f: impl Fn(&RestartRun) -> f64) -> Option<f64> {
    stats::median_by(runs, |r| r.target_bytes() == Some(target), |r| Some(f(r)))
}

/// The median of `f` over the `--run-times` runs of `secs` with `cleaner`.
fn timed_median(
    runs: &[RestartRun],
    secs: f64,
    cleaner: Cleaner,
    f: impl Fn(&RestartRun) -> f64,
) -> Option<f64> {
    stats::median_by(runs, |r| r.target_secs() == Some(secs) && r.setup.cleaner == cleaner, |r| Some(f(r)))
}

const MIB: f64 = (1u64 << 20) as f64;

fn print_restart(out: &mut impl Write, plan: &Plan, runs: &[RestartRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n3. restart: {} records loaded and checkpointed; a child process updates them ({WRITER_BATCH} puts per \
         transaction, synchronous commit), is killed with SIGKILL, and Database::open restarts; median of {} \
         interleaved repetitions",
        thousands(plan.records),
        plan.repeat
    )?;
    if !plan.log_sizes.is_empty() {
        writeln!(
            out,
            "   page cleaner off, {} log segments: the writer stops once the log since the checkpoint reaches the size",
            bytes(DEFAULT_SEGMENT)
        )?;
        let mut table = vec![vec![
            "log target".to_string(),
            "log MiB".to_string(),
            "restart s".to_string(),
            "s per MiB".to_string(),
            "analyzed".to_string(),
            "redone".to_string(),
            "pages written".to_string(),
        ]];
        for &target in &plan.log_sizes {
            let m = |f: &dyn Fn(&RestartRun) -> f64| restart_median(runs, target, f);
            let (Some(mib), Some(secs)) = (m(&|r| r.log_mib()), m(&|r| r.secs)) else { continue };
            table.push(vec![
                bytes(target),
                format!("{mib:.1}"),
                format!("{secs:.3}"),
                format!("{:.4}", secs / mib),
                thousands(m(&|r| r.stats.analyzed as f64).unwrap_or(0.0).round() as u64),
                thousands(m(&|r| r.stats.redone as f64).unwrap_or(0.0).round() as u64),
                thousands(m(&|r| r.stats.pages_written as f64).unwrap_or(0.0).round() as u64),
            ]);
        }
        write_aligned(out, &table)?;
    }
    if !plan.run_times.is_empty() {
        writeln!(
            out,
            "   page cleaner on (log bound {}) and off (no bound), {} log segments: the writer runs for the time, then is \
             killed; log kept = its Database::log_bytes() then, on disk = the segment files after the kill",
            bytes(plan.max_log),
            bytes(plan.log_segment)
        )?;
        let mut table = vec![[
            "writer s",
            "cleaner",
            "written MiB",
            "kept MiB",
            "on disk MiB",
            "rounds",
            "throttled",
            "restart s",
            "analyzed",
            "redone",
            "pages written",
        ]
        .map(String::from)
        .to_vec()];
        for &secs in &plan.run_times {
            for cleaner in TIMED_CLEANERS {
                let m = |f: &dyn Fn(&RestartRun) -> f64| timed_median(runs, secs, cleaner, f);
                let Some(restart) = m(&|r| r.secs) else { continue };
                let count = |f: &dyn Fn(&RestartRun) -> f64| thousands(m(f).unwrap_or(0.0).round() as u64);
                let mib = |f: &dyn Fn(&RestartRun) -> f64| format!("{:.1}", m(f).unwrap_or(0.0) / MIB);
                table.push(vec![
                    format!("{secs}"),
                    cleaner_name(cleaner).to_string(),
                    mib(&|r| r.log_bytes as f64),
                    mib(&|r| r.log_kept as f64),
                    mib(&|r| r.wal_dir as f64),
                    count(&|r| r.cleaning.rounds as f64),
                    count(&|r| r.cleaning.throttled as f64),
                    format!("{restart:.3}"),
                    count(&|r| r.stats.analyzed as f64),
                    count(&|r| r.stats.redone as f64),
                    count(&|r| r.stats.pages_written as f64),
                ]);
            }
        }
        write_aligned(out, &table)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 4: log size

/// One sample of a log-size run; counters since the update run began.
#[derive(Clone, Debug)]
pub struct LogSample {
    updates: u64,
    secs: f64,
    /// `Database::log_bytes()`.
    log_kept: u64,
    /// Bytes of the log's segment files.
    wal_dir: u64,
    /// Log bytes written.
    log_written: u64,
    cleaning: Cleaning,
}

/// One run of the log-size part.
#[derive(Clone, Debug)]
pub struct LogSizeRun {
    cleaner: Cleaner,
    repetition: usize,
    /// The first after the keys are loaded, then one every `--sample-every` updates and the
    /// last.
    samples: Vec<LogSample>,
}

impl LogSizeRun {
    fn last(&self) -> &LogSample {
        self.samples.last().expect("a run has samples")
    }

    fn max_kept(&self) -> u64 {
        self.samples.iter().map(|s| s.log_kept).max().unwrap_or(0)
    }

    fn max_on_disk(&self) -> u64 {
        self.samples.iter().map(|s| s.wal_dir).max().unwrap_or(0)
    }

    fn updates_per_sec(&self) -> f64 {
        let last = self.last();
        last.updates as f64 / last.secs
    }
}

/// One run: a fresh database with `keys` records, then `updates` upserts of random ones, each its
/// own transaction (auto-commit, asynchronous commit).
fn measure_log_size(
    plan: &Plan,
    scratch: &Path,
    cleaner: Cleaner,
    repetition: usize,
) -> Result<LogSizeRun, Box<dyn Error>> {
    let path = scratch.join(format!("log-size-{}.swz", cleaner_name(cleaner)));
    let builder =
        cleaner_builder(Setup::AutoAsync.builder(LOG_SIZE_POOL), cleaner, plan.max_log, plan.log_segment);
    let db = builder.create(&path)?;
    let tree = db.create_tree(TREE)?;
    for k in 0..plan.keys {
        let key = key_of(plan.seed, k);
        tree.insert(&key, &value_of(&key, 0))?;
    }
    let written = || db.log_stats().map_or(0, |l| l.log_bytes);
    let (written0, cleaning0) = (written(), Cleaning::of(&db).unwrap_or_default());
    let sample = |updates: u64, secs: f64| LogSample {
        updates,
        secs,
        log_kept: db.log_bytes().unwrap_or(0),
        wal_dir: wal_dir_bytes(&path),
        log_written: written() - written0,
        cleaning: Cleaning::of(&db).unwrap_or_default().since(cleaning0),
    };
    let mut samples = vec![sample(0, 0.0)];
    let start = Instant::now();
    let pick = mix(plan.seed ^ 0x5eed);
    for u in 1..=plan.updates {
        let key = key_of(plan.seed, mix(u ^ pick) % plan.keys);
        tree.upsert(&key, &value_of(&key, u))?;
        if u % plan.sample_every == 0 || u == plan.updates {
            samples.push(sample(u, start.elapsed().as_secs_f64()));
        }
    }
    drop(tree);
    db.close()?;
    remove_database(&path);
    Ok(LogSizeRun { cleaner, repetition, samples })
}

/// The page cleaners of the log-size part, interleaved in this order.
const LOG_SIZE_CLEANERS: [Cleaner; 2] = [Cleaner::Classical, Cleaner::None];

fn run_log_size(plan: &Plan, scratch: &Path, progress: Progress) -> Result<Vec<LogSizeRun>, Box<dyn Error>> {
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for cleaner in LOG_SIZE_CLEANERS {
            let run = measure_log_size(plan, scratch, cleaner, rep)
                .map_err(|e| format!("log size, cleaner {}: {e}", cleaner_name(cleaner)))?;
            progress.say(format_args!(
                "log-size rep {}/{}: cleaner {}: {} updates/s, log kept at most {}, at the end {}",
                rep + 1,
                plan.repeat,
                cleaner_name(cleaner),
                thousands(run.updates_per_sec().round() as u64),
                bytes(run.max_kept()),
                bytes(run.last().log_kept)
            ));
            runs.push(run);
        }
    }
    Ok(runs)
}

fn log_size_median(runs: &[LogSizeRun], cleaner: Cleaner, f: impl Fn(&LogSizeRun) -> f64) -> Option<f64> {
    stats::median_by(runs, |r| r.cleaner == cleaner, |r| Some(f(r)))
}

fn print_log_size(out: &mut impl Write, plan: &Plan, runs: &[LogSizeRun]) -> io::Result<()> {
    writeln!(
        out,
        "\n4. log size: {} updates of {} keys ({VALUE_BYTES}-byte values; Tree::upsert, one auto-committed \
         transaction each, asynchronous commit, one thread; pool {}, the data fits), {} log segments, page cleaner \
         on (log bound {}) and off (no bound); log kept (Database::log_bytes()) and the segment files on disk \
         sampled every {} updates; median of {} interleaved repetitions",
        thousands(plan.updates),
        thousands(plan.keys),
        bytes(LOG_SIZE_POOL as u64),
        bytes(plan.log_segment),
        bytes(plan.max_log),
        thousands(plan.sample_every),
        plan.repeat
    )?;
    let mut table = vec![[
        "cleaner",
        "bound",
        "updates/s",
        "log written",
        "max kept",
        "final kept",
        "max on disk",
        "final on disk",
        "rounds",
        "pages written",
        "throttled",
    ]
    .map(String::from)
    .to_vec()];
    for cleaner in LOG_SIZE_CLEANERS {
        let m = |f: &dyn Fn(&LogSizeRun) -> f64| log_size_median(runs, cleaner, f);
        let Some(rate) = m(&|r| r.updates_per_sec()) else { continue };
        let size = |f: &dyn Fn(&LogSizeRun) -> f64| bytes(m(f).unwrap_or(0.0).round() as u64);
        let count = |f: &dyn Fn(&LogSizeRun) -> f64| thousands(m(f).unwrap_or(0.0).round() as u64);
        table.push(vec![
            cleaner_name(cleaner).to_string(),
            if cleaner == Cleaner::None { "none".to_string() } else { bytes(plan.max_log) },
            thousands(rate.round() as u64),
            size(&|r| r.last().log_written as f64),
            size(&|r| r.max_kept() as f64),
            size(&|r| r.last().log_kept as f64),
            size(&|r| r.max_on_disk() as f64),
            size(&|r| r.last().wal_dir as f64),
            count(&|r| r.last().cleaning.rounds as f64),
            count(&|r| r.last().cleaning.pages_written as f64),
            count(&|r| r.last().cleaning.throttled as f64),
        ]);
    }
    write_aligned(out, &table)
}

/// The least-squares line `y = a + b x` through the points and its R²; `None` for fewer than
/// two distinct x.
fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = mean_y - b * mean_x;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 1.0 };
    Some((a, b, r2))
}

// ---------------------------------------------------------------------------------------------
// Checks, CSV, plots

/// All measurements of a run.
#[derive(Default)]
struct Results {
    inserts: Vec<InsertRun>,
    commits: Vec<CommitRun>,
    restarts: Vec<RestartRun>,
    log_sizes: Vec<LogSizeRun>,
}

/// The expected properties, each `ok` or `MISSED`; returns how many were missed.
fn print_checks(out: &mut impl Write, plan: &Plan, results: &Results) -> io::Result<usize> {
    writeln!(out, "\nchecks:")?;
    let mut missed = 0;
    let mut verdict = |out: &mut dyn Write, ok: bool, text: String| -> io::Result<()> {
        missed += usize::from(!ok);
        writeln!(out, "  {} {text}", if ok { "ok    " } else { "MISSED" })
    };
    let runs = &results.inserts;
    if plan.has(Part::Overhead) {
        let rate = |s, t, b| insert_median(runs, s, t, b, |r| Some(r.inserts_per_sec()));
        for &b in &plan.batches {
            for &t in &plan.overhead_threads {
                if let (Some(sync), Some(async_), Some(off)) =
                    (rate(Setup::LogSync, t, b), rate(Setup::LogAsync, t, b), rate(Setup::NoLogLock, t, b))
                {
                    verdict(
                        out,
                        async_ >= sync,
                        format!(
                            "batch {b}, {t} thr: async commit ({}) at least as fast as sync ({}); logging with async \
                             commit keeps {:.0}% of nolog-lock's inserts/s",
                            thousands(async_.round() as u64),
                            thousands(sync.round() as u64),
                            async_ / off * 100.0
                        ),
                    )?;
                }
            }
        }
        for &t in &plan.overhead_threads {
            if let (Some(sync), Some(async_)) = (rate(Setup::AutoSync, t, 1), rate(Setup::AutoAsync, t, 1)) {
                verdict(
                    out,
                    async_ >= sync,
                    format!(
                        "auto-commit, {t} thr: async commit ({}) at least as fast as sync ({}) with one transaction \
                         per Tree::insert",
                        thousands(async_.round() as u64),
                        thousands(sync.round() as u64)
                    ),
                )?;
            }
        }
        if let (Some(&small), Some(&large)) = (plan.batches.first(), plan.batches.last()) {
            if small != large {
                for &t in &plan.overhead_threads {
                    if let (Some(a), Some(b)) =
                        (rate(Setup::LogSync, t, small), rate(Setup::LogSync, t, large))
                    {
                        verdict(
                            out,
                            b > a,
                            format!(
                                "{t} thr: sync commit gains from larger transactions: {:.2}x inserts/s at batch {large} \
                                 vs {small} (fewer commit fsyncs)",
                                b / a
                            ),
                        )?;
                    }
                }
            }
        }
        let min_bytes = runs
            .iter()
            .filter(|r| r.setup.logging())
            .filter_map(InsertRun::log_bytes_per_insert)
            .fold(f64::INFINITY, f64::min);
        if min_bytes.is_finite() {
            verdict(
                out,
                min_bytes >= VALUE_BYTES as f64,
                format!("every logged insert writes its value to the log: at least {min_bytes:.0} bytes per insert"),
            )?;
        }
    }
    if plan.has(Part::GroupCommit) {
        let per_fsync = |t| commit_median(&results.commits, t, CommitRun::commits_per_fsync);
        if let (Some(&lo), Some(&hi)) = (plan.group_threads.first(), plan.group_threads.last()) {
            if let (Some(a), Some(b)) = (per_fsync(lo), per_fsync(hi)) {
                if lo != hi {
                    verdict(
                        out,
                        b > a,
                        format!(
                            "group commit: {b:.2} commits per fsync at {hi} threads vs {a:.2} at {lo} (one fsync \
                             serves several committers)"
                        ),
                    )?;
                }
            }
        }
    }
    if plan.has(Part::Restart) {
        let points: Vec<(f64, f64)> = plan
            .log_sizes
            .iter()
            .filter_map(|&t| {
                Some((
                    restart_median(&results.restarts, t, RestartRun::log_mib)?,
                    restart_median(&results.restarts, t, |r| r.secs)?,
                ))
            })
            .collect();
        if points.len() >= 3 {
            if let Some((a, b, r2)) = fit_line(&points) {
                verdict(
                    out,
                    b > 0.0 && r2 >= 0.9,
                    format!(
                        "restart time grows linearly with the log since the checkpoint: {a:.3} s + {:.1} ms per MiB, \
                         R² = {r2:.3} (target: slope > 0, R² >= 0.9)",
                        b * 1000.0
                    ),
                )?;
            }
        } else if !plan.log_sizes.is_empty() {
            writeln!(out, "  (the linearity of restart time needs at least three --log-sizes)")?;
        }
        let analyzed: Vec<f64> = plan
            .log_sizes
            .iter()
            .filter_map(|&t| restart_median(&results.restarts, t, |r| r.stats.analyzed as f64))
            .collect();
        if analyzed.len() >= 2 {
            let text: Vec<String> = analyzed.iter().map(|&a| thousands(a.round() as u64)).collect();
            verdict(
                out,
                analyzed.windows(2).all(|w| w[1] > w[0]),
                format!("restart analyzes more records after more log: {}", text.join(" < ")),
            )?;
        }
        restart_bound_checks(out, &mut verdict, plan, &results.restarts)?;
    }
    if plan.has(Part::LogSize) {
        log_size_checks(out, &mut verdict, plan, &results.log_sizes)?;
    }
    Ok(missed)
}

/// The most log a transaction of `puts` puts can write: per put a record and the image of its
/// leaf (logged with the first change after the page was written back). The bound holds at
/// `begin` (a transaction waits there for the cleaner), so the log can pass it by one running
/// transaction per thread.
fn transaction_log(puts: u64) -> u64 {
    let page = swizzledb::PoolConfig::default().page_size as u64;
    puts * (page + 512)
}

/// A printed check: `ok` or `MISSED` and its text.
type Verdict<'a> = dyn FnMut(&mut dyn Write, bool, String) -> io::Result<()> + 'a;

/// The `--run-times` series: with the cleaner the log at the kill stays within its bound and
/// restart time does not grow with the run; without it, both grow.
fn restart_bound_checks(
    out: &mut dyn Write,
    verdict: &mut Verdict<'_>,
    plan: &Plan,
    runs: &[RestartRun],
) -> io::Result<()> {
    let timed: Vec<&RestartRun> = runs.iter().filter(|r| r.target_secs().is_some()).collect();
    let bounded: Vec<&&RestartRun> = timed.iter().filter(|r| r.setup.cleaner != Cleaner::None).collect();
    if let Some(max) = bounded.iter().map(|r| r.log_kept).max() {
        let disk = bounded.iter().map(|r| r.wal_dir).max().unwrap_or(0);
        let slack = transaction_log(WRITER_BATCH);
        verdict(
            out,
            max <= plan.max_log + slack,
            format!(
                "restart, cleaner on: the log kept when the writer was killed stayed below its bound: at most {} of {} \
                 + {} for one writer transaction ({} of segment files on disk)",
                bytes(max),
                bytes(plan.max_log),
                bytes(slack),
                bytes(disk)
            ),
        )?;
    }
    let (Some(&short), Some(&long)) = (plan.run_times.first(), plan.run_times.last()) else { return Ok(()) };
    if short == long {
        return Ok(());
    }
    let growth = |cleaner| -> Option<(f64, f64)> {
        let a = timed_median(runs, short, cleaner, |r| r.secs)?;
        let b = timed_median(runs, long, cleaner, |r| r.secs)?;
        Some((a, b))
    };
    if let Some((a, b)) = growth(Cleaner::Classical) {
        let contrast = growth(Cleaner::None).map_or(String::new(), |(c, d)| {
            format!("; without the cleaner {c:.3} s -> {d:.3} s ({:.1}x)", d / c)
        });
        verdict(
            out,
            b <= 2.0 * a.max(0.05),
            format!(
                "restart, cleaner on: restart time does not grow with how long the writer ran: {a:.3} s after {short} s, \
                 {b:.3} s after {long} s ({:.1}x for {:.0}x the run; target: at most 2x){contrast}",
                b / a,
                long / short
            ),
        )?;
    }
    Ok(())
}

/// The log-size part: with the cleaner the log stays below its bound; without it, it grows
/// linearly with the updates.
fn log_size_checks(
    out: &mut dyn Write,
    verdict: &mut Verdict<'_>,
    plan: &Plan,
    runs: &[LogSizeRun],
) -> io::Result<()> {
    let with: Vec<&LogSizeRun> = runs.iter().filter(|r| r.cleaner != Cleaner::None).collect();
    if let Some(max) = with.iter().map(|r| r.max_kept()).max() {
        let samples: usize = with.iter().map(|r| r.samples.len()).sum();
        let disk = with.iter().map(|r| r.max_on_disk()).max().unwrap_or(0);
        let written = with.iter().map(|r| r.last().log_written).max().unwrap_or(0);
        let slack = transaction_log(1);
        verdict(
            out,
            max <= plan.max_log + slack,
            format!(
                "log size, cleaner on: log stayed below its bound: at most {} kept of {} + {} for one transaction, over \
                 {samples} samples while {} was written ({} of segment files on disk at most)",
                bytes(max),
                bytes(plan.max_log),
                bytes(slack),
                bytes(written),
                bytes(disk)
            ),
        )?;
    }
    for run in runs.iter().filter(|r| r.cleaner == Cleaner::None).take(1) {
        let points: Vec<(f64, f64)> =
            run.samples.iter().map(|s| (s.updates as f64, s.log_kept as f64)).collect();
        if let Some((_, b, r2)) = fit_line(&points) {
            let last = run.last();
            verdict(
                out,
                b > 0.0 && r2 >= 0.99,
                format!(
                    "log size, cleaner off: the log grows linearly with the updates: {} kept after {} updates ({:.1}x \
                     the cleaner's bound), {b:.0} bytes per update, R² = {r2:.4} (target: R² >= 0.99; repetition 0)",
                    bytes(last.log_kept),
                    thousands(last.updates),
                    last.log_kept as f64 / plan.max_log as f64
                ),
            )?;
        }
    }
    Ok(())
}

/// CSV header of [`write_csv`].
pub const CSV_HEADER: &str = "part,config,logging,locking,commit_mode,threads,batch,repetition,duration_s,\
inserts,commits,inserts_per_sec,commits_per_sec,log_bytes,log_bytes_per_insert,flush_requests,fsyncs,\
background_fsyncs,commits_per_fsync,requests_per_fsync,lock_retries,capped,log_target_bytes,\
restart_s,analyzed,redone,pages_written,losers,compensations,cleaner,max_log_bytes,log_segment_bytes,keys,\
updates,log_kept_bytes,wal_dir_bytes,cleaner_rounds,cleaner_pages_written,throttled,writer_target_s,writer_s";

/// One row of `wal.csv`: one measurement of one part; the columns a part does not measure are
/// empty (columns in `docs/results-schema.md`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WalRow {
    pub part: &'static str,
    pub config: &'static str,
    pub logging: bool,
    pub locking: bool,
    pub commit_mode: Option<&'static str>,
    pub threads: usize,
    pub batch: u64,
    pub repetition: usize,
    pub duration_s: f64,
    pub inserts: Option<u64>,
    pub commits: u64,
    pub inserts_per_sec: Option<f64>,
    pub commits_per_sec: Option<f64>,
    pub log_bytes: u64,
    pub log_bytes_per_insert: Option<f64>,
    pub flush_requests: Option<u64>,
    pub fsyncs: Option<u64>,
    pub background_fsyncs: Option<u64>,
    pub commits_per_fsync: Option<f64>,
    pub requests_per_fsync: Option<f64>,
    pub lock_retries: Option<u64>,
    pub capped: bool,
    pub log_target_bytes: Option<u64>,
    pub restart_s: Option<f64>,
    pub analyzed: Option<u64>,
    pub redone: Option<u64>,
    pub pages_written: Option<u64>,
    pub losers: Option<u64>,
    pub compensations: Option<u64>,
    pub cleaner: Option<&'static str>,
    pub max_log_bytes: Option<u64>,
    pub log_segment_bytes: Option<u64>,
    pub keys: Option<u64>,
    pub updates: Option<u64>,
    pub log_kept_bytes: Option<u64>,
    pub wal_dir_bytes: Option<u64>,
    pub cleaner_rounds: Option<u64>,
    pub cleaner_pages_written: Option<u64>,
    pub throttled: Option<u64>,
    pub writer_target_s: Option<f64>,
    pub writer_s: Option<f64>,
}

impl WalRow {
    /// The log columns: the page cleaner, the log bound (none without a cleaner) and the
    /// segment bytes, the log kept and what the cleaner did.
    fn log(
        mut self,
        cleaner: (Cleaner, u64, u64),
        log_kept: Option<u64>,
        cleaning: Option<Cleaning>,
    ) -> WalRow {
        self.cleaner = Some(cleaner_name(cleaner.0));
        self.max_log_bytes = (cleaner.0 != Cleaner::None).then_some(cleaner.1);
        self.log_segment_bytes = Some(cleaner.2);
        self.log_kept_bytes = log_kept;
        self.cleaner_rounds = cleaning.map(|c| c.rounds);
        self.cleaner_pages_written = cleaning.map(|c| c.pages_written);
        self.throttled = cleaning.map(|c| c.throttled);
        self
    }

    /// [`WalRow::log`] for a logged database with the engine's default cleaner, bound and segments.
    fn default_log(self, log_kept: Option<u64>, cleaning: Option<Cleaning>) -> WalRow {
        self.log((Cleaner::Classical, swizzledb::DEFAULT_MAX_LOG_BYTES, DEFAULT_SEGMENT), log_kept, cleaning)
    }
}

/// The rows of `wal.csv`, part by part.
fn rows(plan: &Plan, results: &Results) -> Vec<WalRow> {
    let mut rows = Vec::new();
    for r in &results.inserts {
        let log = r.log.as_ref();
        let row = WalRow {
            part: Part::Overhead.name(),
            config: r.setup.name(),
            logging: r.setup.logging(),
            locking: r.setup.locking(),
            commit_mode: r.setup.commit_mode().map(commit_mode_name),
            threads: r.threads,
            batch: r.batch as u64,
            repetition: r.repetition,
            duration_s: r.secs,
            inserts: Some(r.inserts),
            commits: r.commits,
            inserts_per_sec: Some(r.inserts_per_sec()),
            commits_per_sec: Some(r.commits as f64 / r.secs),
            log_bytes: log.map_or(0, |l| l.log_bytes),
            log_bytes_per_insert: r.log_bytes_per_insert().or(Some(0.0)),
            flush_requests: Some(log.map_or(0, |l| l.flush_requests)),
            fsyncs: Some(log.map_or(0, |l| l.fsyncs)),
            background_fsyncs: Some(log.map_or(0, |l| l.background_fsyncs)),
            commits_per_fsync: log.and_then(|l| {
                let rounds = l.fsyncs + l.background_fsyncs;
                (rounds > 0).then(|| r.commits as f64 / rounds as f64)
            }),
            requests_per_fsync: log.map(LogStats::requests_per_fsync),
            lock_retries: Some(r.lock_retries),
            capped: r.capped,
            ..WalRow::default()
        };
        rows.push(if r.setup.logging() { row.default_log(r.log_kept, r.cleaning) } else { row });
    }
    for r in &results.commits {
        rows.push(
            WalRow {
                part: Part::GroupCommit.name(),
                config: Setup::LogSync.name(),
                logging: true,
                locking: true,
                commit_mode: Some("sync"),
                threads: r.threads,
                batch: 1,
                repetition: r.repetition,
                duration_s: r.secs,
                inserts: Some(r.commits),
                commits: r.commits,
                inserts_per_sec: Some(r.commits_per_sec()),
                commits_per_sec: Some(r.commits_per_sec()),
                log_bytes: r.log.log_bytes,
                log_bytes_per_insert: (r.commits > 0).then(|| r.log.log_bytes as f64 / r.commits as f64),
                flush_requests: Some(r.log.flush_requests),
                fsyncs: Some(r.log.fsyncs),
                background_fsyncs: Some(r.log.background_fsyncs),
                commits_per_fsync: r.commits_per_fsync(),
                requests_per_fsync: Some(r.log.requests_per_fsync()),
                lock_retries: Some(r.lock_retries),
                ..WalRow::default()
            }
            .default_log(Some(r.log_kept), Some(r.cleaning)),
        );
    }
    for r in &results.restarts {
        let s = &r.stats;
        let mut row = WalRow {
            part: Part::Restart.name(),
            config: Setup::LogSync.name(),
            logging: true,
            locking: true,
            commit_mode: Some("sync"),
            threads: 1,
            batch: WRITER_BATCH,
            repetition: r.repetition,
            duration_s: r.secs,
            commits: r.commits,
            log_bytes: r.log_bytes,
            log_target_bytes: r.target_bytes(),
            restart_s: Some(r.secs),
            analyzed: Some(s.analyzed),
            redone: Some(s.redone),
            pages_written: Some(s.pages_written),
            losers: Some(s.losers),
            compensations: Some(s.compensations),
            wal_dir_bytes: Some(r.wal_dir),
            writer_target_s: r.target_secs(),
            writer_s: Some(r.writer_secs),
            ..WalRow::default()
        }
        .log((r.setup.cleaner, r.setup.bound(), r.setup.segment), Some(r.log_kept), Some(r.cleaning));
        row.wal_dir_bytes = Some(r.wal_dir);
        rows.push(row);
    }
    for r in &results.log_sizes {
        let bound = if r.cleaner == Cleaner::None { NO_BOUND } else { plan.max_log };
        for s in &r.samples {
            rows.push(
                WalRow {
                    part: Part::LogSize.name(),
                    config: Setup::AutoAsync.name(),
                    logging: true,
                    locking: true,
                    commit_mode: Some("async"),
                    threads: 1,
                    batch: 1,
                    repetition: r.repetition,
                    duration_s: s.secs,
                    commits: s.updates,
                    commits_per_sec: (s.secs > 0.0).then(|| s.updates as f64 / s.secs),
                    log_bytes: s.log_written,
                    keys: Some(plan.keys),
                    updates: Some(s.updates),
                    wal_dir_bytes: Some(s.wal_dir),
                    ..WalRow::default()
                }
                .log(
                    (r.cleaner, bound, plan.log_segment),
                    Some(s.log_kept),
                    Some(s.cleaning),
                ),
            );
        }
    }
    rows
}

fn commit_mode_name(m: CommitMode) -> &'static str {
    match m {
        CommitMode::Sync => "sync",
        CommitMode::Async => "async",
    }
}

fn point_of(values: &[f64], x: f64) -> Option<Point> {
    let s = summarize(values)?;
    Some(Point { x, y: s.median, y_min: s.min, y_max: s.max })
}

fn charts(plan: &Plan, results: &Results) -> Vec<(String, Chart)> {
    let mut charts = Vec::new();
    if plan.has(Part::Overhead) {
        for &batch in &plan.batches {
            let series = Setup::ALL
                .iter()
                .map(|&setup| Series {
                    name: setup.name().to_string(),
                    points: plan
                        .overhead_threads
                        .iter()
                        .filter_map(|&t| {
                            let v: Vec<f64> = results
                                .inserts
                                .iter()
                                .filter(|r| {
                                    r.setup == setup && r.threads == t && r.batch == setup.batch(batch)
                                })
                                .map(InsertRun::inserts_per_sec)
                                .collect();
                            point_of(&v, t as f64)
                        })
                        .collect(),
                })
                .collect();
            charts.push((
                format!("wal-overhead-b{batch}"),
                Chart {
                    title: format!("Logging overhead on inserts, {batch} insert(s) per transaction"),
                    x_label: "threads".into(),
                    y_label: "inserts per second".into(),
                    x_scale: Scale::Log2,
                    series,
                    note: Some(format!(
                        "{} random-order inserts, median and min..max of {} repetitions; auto-*: Tree::insert, one \
                         transaction per insert",
                        thousands(plan.records),
                        plan.repeat
                    )),
                    vline: None,
                    marks: None,
                },
            ));
        }
    }
    if plan.has(Part::GroupCommit) {
        let by_threads = |f: &dyn Fn(&CommitRun) -> Option<f64>| -> Vec<Point> {
            plan.group_threads
                .iter()
                .filter_map(|&t| {
                    let v: Vec<f64> =
                        results.commits.iter().filter(|r| r.threads == t).filter_map(f).collect();
                    point_of(&v, t as f64)
                })
                .collect()
        };
        let note = Some(format!(
            "one put per transaction, synchronous commit, {} s per point, median and min..max of {} repetitions",
            plan.duration, plan.repeat
        ));
        charts.push((
            "wal-group-commit".into(),
            Chart {
                title: "Group commit: commits per fsync".into(),
                x_label: "committing threads".into(),
                y_label: "commits per fsync".into(),
                x_scale: Scale::Log2,
                series: vec![Series {
                    name: "log-sync".into(),
                    points: by_threads(&CommitRun::commits_per_fsync),
                }],
                note: note.clone(),
                vline: None,
                marks: None,
            },
        ));
        charts.push((
            "wal-group-commit-throughput".into(),
            Chart {
                title: "Group commit: commits per second".into(),
                x_label: "committing threads".into(),
                y_label: "commits per second".into(),
                x_scale: Scale::Log2,
                series: vec![Series {
                    name: "log-sync".into(),
                    points: by_threads(&|r| Some(r.commits_per_sec())),
                }],
                note,
                vline: None,
                marks: None,
            },
        ));
    }
    if plan.has(Part::Restart) && !plan.run_times.is_empty() {
        let series = TIMED_CLEANERS
            .iter()
            .map(|&cleaner| Series {
                name: match cleaner {
                    Cleaner::None => "cleaner off".to_string(),
                    _ => format!("cleaner on, bound {}", bytes(plan.max_log)),
                },
                points: plan
                    .run_times
                    .iter()
                    .filter_map(|&secs| {
                        let v: Vec<f64> = results
                            .restarts
                            .iter()
                            .filter(|r| r.target_secs() == Some(secs) && r.setup.cleaner == cleaner)
                            .map(|r| r.secs)
                            .collect();
                        point_of(&v, secs)
                    })
                    .collect(),
            })
            .collect();
        charts.push((
            "wal-restart-bounded".into(),
            Chart {
                title: "Restart time against how long the writer ran before the kill".into(),
                x_label: "writer run time (s)".into(),
                y_label: "restart seconds".into(),
                x_scale: Scale::Log2,
                series,
                note: Some(format!(
                    "{} records, {} log segments, median and min..max of {} repetitions",
                    thousands(plan.records),
                    bytes(plan.log_segment),
                    plan.repeat
                )),
                vline: None,
                marks: None,
            },
        ));
    }
    if plan.has(Part::LogSize) {
        // Repetition 0 alone: the cleaner's sawtooth is out of phase across repetitions, so a
        // median per sample would show none of them.
        let by_sample = |cleaner: Cleaner, f: fn(&LogSample) -> u64| -> Vec<Point> {
            let run = results.log_sizes.iter().find(|r| r.cleaner == cleaner && r.repetition == 0);
            run.map_or_else(Vec::new, |r| {
                r.samples
                    .iter()
                    .map(|s| {
                        let y = f(s) as f64 / MIB;
                        Point { x: s.updates as f64, y, y_min: y, y_max: y }
                    })
                    .collect()
            })
        };
        let kept = |s: &LogSample| s.log_kept;
        let disk = |s: &LogSample| s.wal_dir;
        let note = format!(
            "{} keys, {} log segments, bound {} with the cleaner; repetition 0, a sample every {} updates",
            thousands(plan.keys),
            bytes(plan.log_segment),
            bytes(plan.max_log),
            thousands(plan.sample_every)
        );
        let series = |cleaners: &[Cleaner]| -> Vec<Series> {
            cleaners
                .iter()
                .flat_map(|&c| {
                    let name = if c == Cleaner::None { "cleaner off" } else { "cleaner on" };
                    [
                        Series { name: format!("log kept, {name}"), points: by_sample(c, kept) },
                        Series { name: format!("segment files, {name}"), points: by_sample(c, disk) },
                    ]
                })
                .collect()
        };
        for (stem, title, cleaners) in [
            ("wal-log-size", "Log kept on disk over an update run", &LOG_SIZE_CLEANERS[..]),
            (
                "wal-log-size-cleaner",
                "Log kept on disk over an update run, cleaner on",
                &LOG_SIZE_CLEANERS[..1],
            ),
        ] {
            charts.push((
                stem.into(),
                Chart {
                    title: title.into(),
                    x_label: "updates".into(),
                    y_label: "log (MiB)".into(),
                    x_scale: Scale::Linear,
                    series: series(cleaners),
                    note: Some(note.clone()),
                    vline: None,
                    marks: Some(Marks { line: "line: the samples".into(), bars: "(no bars)".into() }),
                },
            ));
        }
    }
    if plan.has(Part::Restart) && !plan.log_sizes.is_empty() {
        let points = plan
            .log_sizes
            .iter()
            .filter_map(|&target| {
                let v: Vec<f64> = results
                    .restarts
                    .iter()
                    .filter(|r| r.target_bytes() == Some(target))
                    .map(|r| r.secs)
                    .collect();
                point_of(&v, restart_median(&results.restarts, target, RestartRun::log_mib)?)
            })
            .collect();
        charts.push((
            "wal-restart".into(),
            Chart {
                title: "Restart time against the log since the last checkpoint".into(),
                x_label: "log since the checkpoint (MiB)".into(),
                y_label: "restart seconds".into(),
                x_scale: Scale::Linear,
                series: vec![Series { name: "Database::open after SIGKILL".into(), points }],
                note: Some(format!(
                    "{} records, page cleaner off, median and min..max of {} repetitions",
                    thousands(plan.records),
                    plan.repeat
                )),
                vline: None,
                marks: None,
            },
        ));
    }
    charts
}

/// Runs `bench wal` (or, with the hidden `--child`, the restart part's writer).
///
/// # Errors
/// Bad options ([`Usage`]), engine and I/O errors; a failed part stops the run.
pub fn run(args: &WalBenchArgs) -> Result<ExitCode, Box<dyn Error>> {
    if let Some(path) = &args.child {
        return child(args, path);
    }
    let plan = plan(args).map_err(Usage)?;
    experiment::execute(&plan, args.out.as_deref())
}

impl Experiment for Plan {
    const NAME: &'static str = "wal";
    type Row = WalRow;
    type Results = Results;

    fn caption(&self) -> String {
        format!(
            "Write-ahead logging benchmarks: parts {}; databases in {}.",
            self.parts.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
            self.dir.display()
        )
    }

    fn run(&self, progress: Progress) -> Result<Results, Box<dyn Error>> {
        let plan = self;
        std::fs::create_dir_all(&plan.dir)
            .map_err(|e| crate::UnusablePath(format!("cannot create --dir {}: {e}", plan.dir.display())))?;
        let scratch = tempfile::Builder::new()
            .prefix("swizzledb-wal-")
            .tempdir_in(&plan.dir)
            .map_err(|e| crate::UnusablePath(format!("cannot write to --dir {}: {e}", plan.dir.display())))?;
        let mut results = Results::default();
        if plan.has(Part::Overhead) {
            results.inserts = run_overhead(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::GroupCommit) {
            results.commits = run_group_commit(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::Restart) {
            results.restarts = run_restart(plan, scratch.path(), progress)?;
        }
        if plan.has(Part::LogSize) {
            results.log_sizes = run_log_size(plan, scratch.path(), progress)?;
        }
        Ok(results)
    }

    fn tables(&self, results: &Results, mut out: &mut dyn Write) -> io::Result<()> {
        let plan = self;
        if plan.has(Part::Overhead) {
            print_overhead(&mut out, plan, &results.inserts)?;
        }
        if plan.has(Part::GroupCommit) {
            print_group_commit(&mut out, plan, &results.commits)?;
        }
        if plan.has(Part::Restart) {
            print_restart(&mut out, plan, &results.restarts)?;
        }
        if plan.has(Part::LogSize) {
            print_log_size(&mut out, plan, &results.log_sizes)?;
        }
        print_checks(&mut out, plan, results).map(|_| ())
    }

    fn rows(&self, results: &Results) -> Vec<WalRow> {
        rows(self, results)
    }

    fn charts(&self, results: &Results) -> Vec<(String, Chart)> {
        charts(self, results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_line_recovers_a_hand_worked_line() {
        // y = 0.5 + 2x exactly: slope 2, intercept 0.5, R² 1.
        let (a, b, r2) = fit_line(&[(1.0, 2.5), (2.0, 4.5), (4.0, 8.5)]).unwrap();
        assert!((a - 0.5).abs() < 1e-12 && (b - 2.0).abs() < 1e-12 && (r2 - 1.0).abs() < 1e-12);
        // (0,0), (1,1), (2,0): slope 0, R² 0.
        let (_, b, r2) = fit_line(&[(0.0, 0.0), (1.0, 1.0), (2.0, 0.0)]).unwrap();
        assert!(b.abs() < 1e-12 && r2.abs() < 1e-12);
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    #[test]
    fn log_delta_subtracts_every_counter() {
        let before =
            LogStats { appends: 1, log_bytes: 10, fsyncs: 2, background_fsyncs: 1, ..LogStats::default() };
        let after =
            LogStats { appends: 5, log_bytes: 110, fsyncs: 7, background_fsyncs: 4, ..LogStats::default() };
        let d = log_delta(&after, &before);
        assert_eq!((d.appends, d.log_bytes, d.fsyncs, d.background_fsyncs), (4, 100, 5, 3));
    }

    #[test]
    fn parts_parse_in_canonical_order_and_reject_unknown_names() {
        assert_eq!(parse_parts("restart,overhead").unwrap().0, vec![Part::Overhead, Part::Restart]);
        assert_eq!(parse_parts("all").unwrap().0, Part::ALL.to_vec());
        assert!(parse_parts("overhead,fast").unwrap_err().contains("group-commit"));
    }

    #[test]
    fn keys_of_distinct_counters_differ() {
        let keys: std::collections::HashSet<[u8; 8]> = (0..10_000).map(|i| key_of(7, i)).collect();
        assert_eq!(keys.len(), 10_000);
    }
}

//! What the four parts of `bench wal` share: the options, the plan, the database setups and
//! the keys and values they write.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use swizzledb::{Cleaner, CleanerStats, CommitMode, CommitWait, Database, LogStats};

use crate::experiments::bench::insert::mix;
use crate::support::text::bytes;
use crate::support::units;

/// Bytes per value (the brief's 100-byte values).
pub(super) const VALUE_BYTES: usize = 100;

/// Inserts per transaction while loading the restart part's database.
pub(super) const LOAD_BATCH: u64 = 1000;

/// Puts per transaction of the restart part's writer (large, so fsyncs do not dominate).
pub(crate) const WRITER_BATCH: u64 = 64;

/// The tree every part writes.
pub(crate) const TREE: &str = "wal";

/// Pool bytes per record (as `bench insert`): the index always fits in memory.
pub(super) const POOL_BYTES_PER_RECORD: u64 = 320;

/// The log bound set with `Cleaner::None` (1 PiB). Without a cleaner nothing enforces a bound;
/// this one only passes the builder's check that the bound holds four segments, whatever the
/// segment size.
pub const NO_BOUND: u64 = 1 << 50;

/// The engine's default log segment (`LogConfig`), set explicitly where the bench means it.
pub(crate) const DEFAULT_SEGMENT: u64 = 16 << 20;

/// Pool of the log-size part: far more than its few keys need.
pub(super) const LOG_SIZE_POOL: usize = 64 << 20;

/// The most `--keys`: 300,000 records of 108 bytes, half of [`LOG_SIZE_POOL`] (room for leaves
/// half full), so that the data fits the pool as the part's caption says (2^64 - 1 keys loaded
/// for ever).
const MAX_LOG_SIZE_KEYS: u64 = 300_000;

/// The most `--updates`: a hundred times the default, minutes per run (each run is repeated
/// with and without the cleaner; 2^64 - 1 ran for ever).
const MAX_LOG_SIZE_UPDATES: u64 = 100_000_000;

/// `--updates`: 1 to [`MAX_LOG_SIZE_UPDATES`].
fn parse_updates(input: &str) -> Result<u64, String> {
    units::parse_count_in(
        input,
        "--updates",
        1,
        MAX_LOG_SIZE_UPDATES,
        "per run of the log-size part, each one auto-committed",
    )
}

/// `--keys`: 1 to [`MAX_LOG_SIZE_KEYS`].
fn parse_keys(input: &str) -> Result<u64, String> {
    match units::parse_count(input)? {
        n if (1..=MAX_LOG_SIZE_KEYS).contains(&n) => Ok(n),
        _ => Err(format!(
            "--keys {input} is out of range: give 1 to {MAX_LOG_SIZE_KEYS} (their records fit the log-size \
             part's pool of {})",
            bytes(LOG_SIZE_POOL as u64)
        )),
    }
}

/// Options of `bench wal`.
#[derive(Args, Debug)]
pub struct WalBenchArgs {
    /// Parts to run: all, or a comma-separated list of overhead, group-commit, restart, log-size
    #[arg(long, default_value = "all", value_parser = parse_parts)]
    pub(super) parts: Parts,
    /// Inserts per measurement of the overhead part; records loaded before the restart part
    #[arg(long, default_value = "200000", value_parser = units::parse_positive_count)]
    pub(super) records: u64,
    /// Configurations of the overhead part: all, or a comma-separated list of nolog-nolock,
    /// nolog-lock, log-async, log-sync, auto-async, auto-sync
    #[arg(long, default_value = "all", value_parser = parse_setups)]
    pub(super) configs: Setups,
    /// Inserts per transaction in the overhead part, comma-separated
    #[arg(long, default_value = "1,16", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(super) batch: Vec<u32>,
    /// Thread counts, comma-separated [default: 1,2,4 for overhead, 1,2,4,8,16 for group-commit]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(super) threads: Option<Vec<u16>>,
    /// Seconds per group-commit measurement
    #[arg(long, default_value = "3", value_parser = units::parse_positive_seconds)]
    pub(super) duration: f64,
    /// How the group-commit part's committers wait for their sync round (Builder::commit_wait):
    /// adaptive (the default: spin or keep a core awake through short rounds), sleep, or both,
    /// comma-separated, measured side by side with their CPU
    #[arg(long, default_value = "adaptive", value_parser = parse_commit_waits)]
    pub(super) commit_wait: CommitWaits,
    /// Longest time of one overhead measurement: a configuration still inserting then stops (an
    /// asynchronous one within 64 more transactions per thread, as its threads look at the clock
    /// every 64), and its row counts the inserts done (synchronous commit of one insert per
    /// transaction costs an fsync per insert)
    #[arg(long, default_value = "10", value_parser = units::parse_positive_seconds)]
    pub(super) time_limit: f64,
    /// Restart part without the page cleaner: log written after the last checkpoint before the
    /// crash, comma-separated sizes, or none
    #[arg(long, default_value = "4MiB,16MiB,64MiB", value_parser = parse_log_sizes)]
    pub(super) log_sizes: List<u64>,
    /// Restart part with the page cleaner on (at --max-log) and off: seconds the writer runs
    /// before the crash, comma-separated, or none
    #[arg(long, default_value = "1,4,16", value_parser = parse_run_times)]
    pub(super) run_times: List<f64>,
    /// Log bound (Builder::max_log_bytes) with the cleaner on, in the log-size part and the
    /// restart part's --run-times
    #[arg(long, default_value = "8MiB", value_parser = units::parse_size)]
    pub(super) max_log: u64,
    /// Log segment bytes (Builder::log_segment_bytes) of the log-size part and the restart
    /// part's --run-times; --max-log must be at least four segments
    #[arg(long, default_value = "256KiB", value_parser = parse_segment)]
    pub(super) log_segment: u64,
    /// Updates per run of the log-size part, 1 to 100,000,000
    #[arg(long, default_value = "1M", value_parser = parse_updates)]
    pub(super) updates: u64,
    /// Keys the log-size part updates, 1 to 300000 (their records fit its pool)
    #[arg(long, default_value = "100", value_parser = parse_keys)]
    pub(super) keys: u64,
    /// Updates between two samples of the log size in the log-size part [default: --updates / 200]
    #[arg(long, value_parser = units::parse_positive_count)]
    pub(super) sample_every: Option<u64>,
    /// Measurements per configuration, interleaved across configurations; tables show medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) repeat: u16,
    /// Seed of the keys
    #[arg(long, default_value_t = 42)]
    pub(super) seed: u64,
    /// The overhead part's logged databases log a split's new node lazily, as a split-off of
    /// the old node (LabOptions::lazy_split_images, RECOVERY.md R29): the engine's default
    /// already, as these databases keep no log archive
    #[arg(long, conflicts_with = "eager_split_images")]
    pub(super) lazy_split_images: bool,
    /// The overhead part's logged databases log a split's new node as its image, as they did
    /// before lazy split images became the default (LabOptions::lazy_split_images(false))
    #[arg(long)]
    pub(super) eager_split_images: bool,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    pub(super) dir: Option<PathBuf>,
    /// Directory for wal.csv, wal.json and the plots (created if missing)
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
    /// Internal: run as the restart part's writer on the database at this path
    #[arg(long, hide = true)]
    pub(super) child: Option<PathBuf>,
    /// Internal: the writer runs this many seconds (instead of up to the first --log-sizes)
    #[arg(long, hide = true, value_parser = units::parse_positive_seconds)]
    pub(super) child_secs: Option<f64>,
    /// Internal: the writer's page cleaner is on (at --max-log; off: no bound)
    #[arg(long, hide = true)]
    pub(super) child_cleaner: bool,
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
    pub(super) const ALL: [Part; 4] = [Part::Overhead, Part::GroupCommit, Part::Restart, Part::LogSize];

    pub(super) fn name(self) -> &'static str {
        match self {
            Part::Overhead => "overhead",
            Part::GroupCommit => "group-commit",
            Part::Restart => "restart",
            Part::LogSize => "log-size",
        }
    }
}

/// The ways a committer can wait ([`CommitWait`]), in the order the group-commit part runs them.
pub(super) const COMMIT_WAITS: [CommitWait; 2] = [CommitWait::Adaptive, CommitWait::Sleep];

/// The name `--commit-wait` and `wal.csv` give `wait`.
pub(super) fn commit_wait_name(wait: CommitWait) -> &'static str {
    match wait {
        CommitWait::Adaptive => "adaptive",
        CommitWait::Sleep => "sleep",
    }
}

/// A set of commit waits, in [`COMMIT_WAITS`] order.
#[derive(Clone, Debug)]
pub struct CommitWaits(pub(super) Vec<CommitWait>);

pub(super) fn parse_commit_waits(input: &str) -> Result<CommitWaits, String> {
    parse_subset(input, &COMMIT_WAITS, commit_wait_name, "commit wait").map(CommitWaits)
}

/// A set of parts, in [`Part::ALL`] order.
#[derive(Clone, Debug)]
pub struct Parts(pub(super) Vec<Part>);

pub(super) fn parse_parts(input: &str) -> Result<Parts, String> {
    parse_subset(input, &Part::ALL, Part::name, "part").map(Parts)
}

/// The items of `all` that `input` names (`all`, or a comma-separated list of names), in the
/// order of `all`; `what` names an item in the error.
fn parse_subset<T: Copy + PartialEq>(
    input: &str,
    all: &[T],
    name: fn(T) -> &'static str,
    what: &str,
) -> Result<Vec<T>, String> {
    if input.trim().eq_ignore_ascii_case("all") {
        return Ok(all.to_vec());
    }
    let mut chosen = Vec::new();
    for word in input.split(',').map(str::trim) {
        let item = all.iter().copied().find(|&x| name(x) == word).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|&x| name(x)).collect();
            format!("unknown {what} {word:?}: use all, or a comma-separated list of {}", names.join(", "))
        })?;
        chosen.push(item);
    }
    Ok(all.iter().copied().filter(|x| chosen.contains(x)).collect())
}

/// A set of the overhead part's configurations, in [`Setup::ALL`] order.
#[derive(Clone, Debug)]
pub struct Setups(pub(super) Vec<Setup>);

pub(super) fn parse_setups(input: &str) -> Result<Setups, String> {
    parse_subset(input, &Setup::ALL, Setup::name, "configuration").map(Setups)
}

pub(crate) fn parse_log_size(input: &str) -> Result<u64, String> {
    match units::parse_size(input)? {
        n if n >= 64 << 10 => Ok(n),
        _ => Err(format!("log size {input:?} is too small; use at least 64KiB (e.g. 16MiB)")),
    }
}

/// A comma-separated option list that may be `none` (empty).
#[derive(Clone, Debug, PartialEq)]
pub struct List<T>(pub(super) Vec<T>);

pub(super) fn parse_list<T>(
    input: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<List<T>, String> {
    if input.trim().eq_ignore_ascii_case("none") {
        return Ok(List(Vec::new()));
    }
    input.split(',').map(|w| item(w.trim())).collect::<Result<_, _>>().map(List)
}

pub(super) fn parse_log_sizes(input: &str) -> Result<List<u64>, String> {
    parse_list(input, parse_log_size)
}

pub(super) fn parse_run_times(input: &str) -> Result<List<f64>, String> {
    parse_list(input, units::parse_positive_seconds)
}

pub(super) fn parse_segment(input: &str) -> Result<u64, String> {
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
    pub(super) const ALL: [Setup; 6] = [
        Setup::NoLogNoLock,
        Setup::NoLogLock,
        Setup::LogAsync,
        Setup::LogSync,
        Setup::AutoAsync,
        Setup::AutoSync,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Setup::NoLogNoLock => "nolog-nolock",
            Setup::NoLogLock => "nolog-lock",
            Setup::LogAsync => "log-async",
            Setup::LogSync => "log-sync",
            Setup::AutoAsync => "auto-async",
            Setup::AutoSync => "auto-sync",
        }
    }

    pub(super) fn logging(self) -> bool {
        !matches!(self, Setup::NoLogNoLock | Setup::NoLogLock)
    }

    pub(super) fn locking(self) -> bool {
        self != Setup::NoLogNoLock
    }

    /// Whether each commit waits for an fsync.
    pub(super) fn sync_commit(self) -> bool {
        matches!(self, Setup::LogSync | Setup::AutoSync)
    }

    /// Inserts through `Tree::insert`, one auto-committed transaction each.
    pub(super) fn auto_commit(self) -> bool {
        matches!(self, Setup::AutoAsync | Setup::AutoSync)
    }

    /// The batch a measurement of this configuration runs with: auto-commit is one insert per
    /// transaction whatever `--batch` says.
    pub(super) fn batch(self, batch: u32) -> u32 {
        if self.auto_commit() {
            1
        } else {
            batch
        }
    }

    pub(super) fn commit_mode(self) -> Option<CommitMode> {
        match self {
            Setup::LogAsync | Setup::AutoAsync => Some(CommitMode::Async),
            Setup::LogSync | Setup::AutoSync => Some(CommitMode::Sync),
            _ => None,
        }
    }

    /// Logging and locking set explicitly; the page cleaner, its bound and the log segments are
    /// the engine's defaults.
    pub(super) fn builder(self, pool_bytes: usize) -> swizzledb::Builder {
        Database::builder()
            .pool_bytes(pool_bytes)
            .logging(self.logging())
            .lab(|l| l.locking(self.locking()))
            .commit_mode(self.commit_mode().unwrap_or_default())
    }
}

/// The page cleaner of a database, as the CSV names it.
pub(super) fn cleaner_name(cleaner: Cleaner) -> &'static str {
    match cleaner {
        Cleaner::None => "none",
        Cleaner::Decoupled => "decoupled",
        _ => "classical",
    }
}

/// A logged database with the bench's cleaner settings: `Cleaner::Classical` at `max_log`, or
/// `Cleaner::None` without a bound ([`NO_BOUND`]); `segment` bytes per log segment.
pub(super) fn cleaner_builder(
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
pub(super) struct Plan {
    pub(super) parts: Vec<Part>,
    pub(super) records: u64,
    /// The overhead part's configurations, in [`Setup::ALL`] order.
    pub(super) setups: Vec<Setup>,
    pub(super) batches: Vec<u32>,
    pub(super) overhead_threads: Vec<usize>,
    pub(super) group_threads: Vec<usize>,
    /// The group-commit part's ways of waiting, in [`COMMIT_WAITS`] order.
    pub(super) commit_waits: Vec<CommitWait>,
    pub(super) duration: f64,
    pub(super) time_limit: f64,
    pub(super) log_sizes: Vec<u64>,
    pub(super) run_times: Vec<f64>,
    pub(super) max_log: u64,
    pub(super) log_segment: u64,
    pub(super) updates: u64,
    pub(super) keys: u64,
    pub(super) sample_every: u64,
    pub(super) repeat: usize,
    pub(super) seed: u64,
    /// `--lazy-split-images`, for the overhead part's logged databases.
    pub(super) lazy_split_images: bool,
    /// `--eager-split-images`, for the overhead part's logged databases.
    pub(super) eager_split_images: bool,
    pub(super) dir: PathBuf,
}

/// The pool for `records` records: [`POOL_BYTES_PER_RECORD`] each, at least 64 MiB; refused,
/// naming `--records`, where the pool cannot be made.
pub(crate) fn pool_bytes(records: u64) -> Result<usize, String> {
    let bytes = records.saturating_mul(POOL_BYTES_PER_RECORD).max(64 << 20);
    crate::experiments::common::check_pool(bytes, swizzledb_buffer::page::DEFAULT_PAGE_SIZE).map_err(|e| {
        format!("--records {records} needs a pool of {POOL_BYTES_PER_RECORD} bytes per record: {e}; lower --records")
    })?;
    usize::try_from(bytes).map_err(|_| format!("--records {records} needs too large a pool; lower --records"))
}

impl Plan {
    pub(super) fn pool_bytes(&self) -> Result<usize, String> {
        pool_bytes(self.records)
    }

    pub(super) fn has(&self, part: Part) -> bool {
        self.parts.contains(&part)
    }
}

pub(super) fn sorted(v: &[u16]) -> Vec<usize> {
    let mut v: Vec<usize> = v.iter().map(|&t| usize::from(t)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

pub(super) fn plan(args: &WalBenchArgs) -> Result<Plan, String> {
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
        setups: args.configs.0.clone(),
        batches,
        overhead_threads: sorted(args.threads.as_deref().unwrap_or(&[1, 2, 4])),
        group_threads: sorted(args.threads.as_deref().unwrap_or(&[1, 2, 4, 8, 16])),
        commit_waits: args.commit_wait.0.clone(),
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
        lazy_split_images: args.lazy_split_images,
        eager_split_images: args.eager_split_images,
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
pub(super) fn log_delta(after: &LogStats, before: &LogStats) -> LogStats {
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
        segments_created: after.segments_created - before.segments_created,
        segments_recycled: after.segments_recycled - before.segments_recycled,
        segments_prepared: after.segments_prepared - before.segments_prepared,
        busy_waits: after.busy_waits - before.busy_waits,
    }
}

/// What the page cleaner did: rounds, pages written back, transactions throttled at `begin`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleaning {
    pub(super) rounds: u64,
    pub(super) pages_written: u64,
    pub(super) throttled: u64,
}

impl Cleaning {
    pub(super) fn of(db: &Database) -> Option<Cleaning> {
        db.cleaner_stats().map(|c: CleanerStats| Cleaning {
            rounds: c.rounds,
            pages_written: c.pages_written,
            throttled: c.throttled,
        })
    }

    pub(super) fn since(self, before: Cleaning) -> Cleaning {
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

/// Removes a database file and its log directory (errors ignored: scratch files).
pub(crate) fn remove_database(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(swizzledb::wal_dir(path));
}

/// Copies a database file and its log directory, with the directories in it (the log
/// archive's, `<path>.wal/archive`).
pub(crate) fn copy_database(from: &Path, to: &Path) -> io::Result<()> {
    remove_database(to);
    std::fs::copy(from, to)?;
    copy_dir(&swizzledb::wal_dir(from), &swizzledb::wal_dir(to))
}

/// Copies directory `from` to `to` (created if missing), recursively.
pub(super) fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
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

pub(super) const MIB: f64 = (1u64 << 20) as f64;

/// A printed check: `ok` or `MISSED` and its text.
pub(super) type Verdict<'a> = dyn FnMut(&mut dyn Write, bool, String) -> io::Result<()> + 'a;

/// The most log a transaction of `puts` puts can write: per put a record and the image of its
/// leaf (logged with the first change after the page was written back). The bound holds at
/// `begin` (a transaction waits there for the cleaner), so the log can pass it by one running
/// transaction per thread.
pub(super) fn transaction_log(puts: u64) -> u64 {
    let page = swizzledb::PoolConfig::default().page_size as u64;
    puts * (page + 512)
}

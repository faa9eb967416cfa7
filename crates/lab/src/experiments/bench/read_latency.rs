//! `bench read-latency`: read latency (p50, p99, p99.9, max) under a concurrent writer that holds
//! record locks, snapshot reads (LOCKS.md K18) against locking reads. One logged database; one
//! writer updates random keys of a hot set and sleeps while holding their exclusive locks; reader
//! threads read random hot keys and time each read. The measurements are interleaved
//! (repetition, then thread count, then kind) and the table shows medians.

use clap::Args;
use hdrhistogram::Histogram;
use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};
use swizzledb::{CommitMode, Database, Error as DbError, Tree};

use crate::experiments::bench::isolation::{in_memory_pool_bytes, key, parse_in_memory_records, Rng};
use crate::experiments::workload_options::dedup;
use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::support::{stats, units};
use crate::Usage;

/// Bytes per value.
const VALUE_BYTES: usize = 100;

/// Options of `bench read-latency`.
#[derive(Args, Debug)]
pub struct ReadLatencyArgs {
    /// Records loaded (8-byte big-endian keys 0, 1, 2, ...)
    #[arg(long, default_value = "100000", value_parser = parse_in_memory_records)]
    records: u64,
    /// Hot keys: the first this many; the writer and the readers use only these
    #[arg(long, default_value = "1000", value_parser = units::parse_positive_count)]
    hot: u64,
    /// Hot keys the writer updates in each transaction
    #[arg(long, default_value = "4", value_parser = units::parse_positive_count)]
    writer_keys: u64,
    /// Microseconds the writer sleeps holding its locks before each commit (0: none)
    #[arg(long, default_value = "200", value_parser = units::parse_count)]
    hold_us: u64,
    /// Reader thread counts, comma-separated
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Seconds per measurement
    #[arg(long, default_value = "2", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Measurements per configuration, interleaved; the table shows medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Directory for the temporary database (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for read-latency.csv (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl ReadLatencyArgs {
    /// The thread counts, each once, in the order given: a count named twice (`--threads 1,1`)
    /// would be measured twice as one configuration and its table rows printed twice.
    fn thread_counts(&self) -> Vec<u16> {
        dedup(&self.threads)
    }
}

impl ReadLatencyArgs {
    /// Checks the options against each other.
    fn validate(&self) -> Result<(), Usage> {
        if self.hot > self.records {
            return Err(Usage(format!(
                "--hot ({}) must not exceed --records ({}): the hot keys are among the records",
                self.hot, self.records
            )));
        }
        if self.writer_keys > self.hot {
            return Err(Usage(format!(
                "--writer-keys ({}) must not exceed --hot ({}): the writer updates hot keys",
                self.writer_keys, self.hot
            )));
        }
        // The writer finishes the hold it is in when a measurement ends: a longer hold would keep
        // the run going past --duration (for years at u64::MAX) and commit nothing measured.
        if self.hold_us as f64 > self.duration * 1e6 {
            return Err(Usage(format!(
                "--hold-us {} is longer than a measurement (--duration {} s): the writer would \
                 commit nothing while measured and the run would outlast --duration; lower \
                 --hold-us or raise --duration",
                self.hold_us, self.duration
            )));
        }
        Ok(())
    }
}

/// How the readers read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Tree::get` outside any transaction: a snapshot read that never waits for the writer (K18).
    Snapshot,
    /// `Database::begin_read` then `ReadTransaction::get`: one read-only transaction per read.
    ReadTxn,
    /// `Database::transact_snapshot` with `Transaction::get`: a read-write transaction under
    /// snapshot isolation, reading without a lock (K24).
    SnapshotTxn,
    /// `Database::transact` with `Transaction::get`: a serializable read that takes a shared
    /// record lock and so waits for the writer's exclusive lock.
    Locked,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Snapshot, Kind::ReadTxn, Kind::SnapshotTxn, Kind::Locked];

    fn name(self) -> &'static str {
        match self {
            Kind::Snapshot => "snapshot",
            Kind::ReadTxn => "read-txn",
            Kind::SnapshotTxn => "snapshot-txn",
            Kind::Locked => "locked",
        }
    }
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct Row {
    kind: Kind,
    threads: u16,
    rep: u16,
    /// Reads finished, all reader threads.
    reads: u64,
    /// Reads finished per second, all reader threads.
    reads_per_sec: f64,
    /// Median read latency, µs (NaN with no read).
    p50_us: f64,
    /// 99th percentile read latency, µs (NaN with no read).
    p99_us: f64,
    /// 99.9th percentile read latency, µs (NaN with no read).
    p999_us: f64,
    /// Longest read, µs (NaN with no read).
    max_us: f64,
    /// Transactions the writer committed per second.
    writer_commits_per_sec: f64,
    /// Writer transactions rolled back after a refused lock.
    writer_retries: u64,
}

/// A latency histogram in nanoseconds: 1 ns to 60 s at 3 significant digits.
fn new_histogram() -> Result<Histogram<u64>, Box<dyn Error>> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| format!("latency histogram: {e:?}").into())
}

/// Creates the logged database (locking on, the builder's default) and loads `records` records.
fn open(dir: &Path, records: u64) -> Result<(Database, Tree), Box<dyn Error>> {
    let db = Database::builder()
        .pool_bytes(in_memory_pool_bytes(records))
        .commit_mode(CommitMode::Async)
        .create(dir.join("read-latency.swz"))?;
    let t = db.create_tree("t")?;
    let mut i = 0;
    while i < records {
        let end = (i + 1000).min(records);
        db.transact(|tx| {
            for k in i..end {
                tx.put(&t, &key(k), &[7u8; VALUE_BYTES])?;
            }
            Ok(())
        })?;
        i = end;
    }
    Ok((db, t))
}

/// Records `e` as the measurement's failure (the first one wins) and stops every thread.
fn fail(failed: &Mutex<Option<String>>, stop: &AtomicBool, e: String) {
    let mut f = failed.lock().unwrap_or_else(PoisonError::into_inner);
    if f.is_none() {
        *f = Some(e);
    }
    stop.store(true, Ordering::Relaxed);
}

/// The writer: transactions back to back until `stop`, each updating `--writer-keys` random hot
/// keys and sleeping `--hold-us` with their locks held before it commits. Returns its commits and
/// its retries (transactions aborted after a refused lock).
fn writer(db: &Database, t: &Tree, args: &ReadLatencyArgs, stop: &AtomicBool) -> Result<(u64, u64), DbError> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let hold = Duration::from_micros(args.hold_us);
    let (mut commits, mut retries) = (0u64, 0u64);
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let value = [(round % 251) as u8; VALUE_BYTES];
        let mut tx = db.begin();
        let mut refused = false;
        for _ in 0..args.writer_keys {
            match tx.put(t, &key(rng.next() % args.hot), &value) {
                Ok(_) => {}
                Err(DbError::Lock(_)) => {
                    refused = true;
                    break;
                }
                Err(e) => {
                    // Roll back before reporting; the put's error is the one that matters.
                    let _ = tx.abort();
                    return Err(e);
                }
            }
        }
        if refused {
            tx.abort()?;
            retries += 1;
            continue;
        }
        if !hold.is_zero() {
            std::thread::sleep(hold);
        }
        tx.commit()?;
        commits += 1;
    }
    Ok((commits, retries))
}

/// One reader thread: reads random hot keys as `kind` until `stop`, recording each read's time
/// in `hist` (nanoseconds).
fn reader(
    db: &Database,
    t: &Tree,
    hot: u64,
    kind: Kind,
    seed: u64,
    stop: &AtomicBool,
    hist: &mut Histogram<u64>,
) -> Result<(), DbError> {
    let mut rng = Rng(seed);
    while !stop.load(Ordering::Relaxed) {
        let k = key(rng.next() % hot);
        let start = Instant::now();
        match kind {
            Kind::Snapshot => t.get(&k).map_err(DbError::from)?,
            Kind::ReadTxn => {
                let r = db.begin_read();
                r.get(t, &k)?
            }
            Kind::SnapshotTxn => db.transact_snapshot(|tx| tx.get(t, &k))?,
            Kind::Locked => db.transact(|tx| tx.get(t, &k))?,
        };
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        hist.saturating_record(ns.max(1));
    }
    Ok(())
}

/// What one measurement gave.
struct Measured {
    /// The readers' latencies (ns), merged.
    hist: Histogram<u64>,
    /// Transactions the writer committed.
    commits: u64,
    /// Writer transactions rolled back after a refused lock.
    retries: u64,
    /// Seconds from the start until every thread had stopped: the time the reads and commits
    /// counted took (at least --duration; far more than a tiny one).
    secs: f64,
}

/// Runs one measurement: the writer and `threads` readers of `kind` for `--duration`.
fn measure(
    db: &Database,
    t: &Tree,
    args: &ReadLatencyArgs,
    kind: Kind,
    threads: u16,
) -> Result<Measured, Box<dyn Error>> {
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let retries = AtomicU64::new(0);
    let barrier = Barrier::new(usize::from(threads) + 2);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    let mut hists = (0..threads).map(|_| new_histogram()).collect::<Result<Vec<_>, _>>()?;
    let mut started = None;
    std::thread::scope(|s| {
        {
            let (stop, commits, retries, barrier, failed) = (&stop, &commits, &retries, &barrier, &failed);
            s.spawn(move || {
                barrier.wait();
                match writer(db, t, args, stop) {
                    Ok((n, r)) => {
                        commits.store(n, Ordering::Relaxed);
                        retries.store(r, Ordering::Relaxed);
                    }
                    Err(e) => fail(failed, stop, format!("the writer failed: {e}")),
                }
            });
        }
        for (th, hist) in hists.iter_mut().enumerate() {
            let (stop, barrier, failed) = (&stop, &barrier, &failed);
            let seed = 0x9E37_79B9_7F4A_7C15 ^ ((th as u64 + 1) * 0x1000_0001);
            s.spawn(move || {
                barrier.wait();
                if let Err(e) = reader(db, t, args.hot, kind, seed, stop, hist) {
                    fail(failed, stop, format!("{} read failed: {e}", kind.name()));
                }
            });
        }
        barrier.wait();
        started = Some(Instant::now());
        std::thread::sleep(Duration::from_secs_f64(args.duration));
        stop.store(true, Ordering::Relaxed);
    });
    let secs = started.map_or(args.duration, |t| t.elapsed().as_secs_f64());
    if let Some(e) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(e.into());
    }
    let mut hist = new_histogram()?;
    for h in &hists {
        hist.add(h).map_err(|e| format!("merging latency histograms: {e:?}"))?;
    }
    Ok(Measured { hist, commits: commits.into_inner(), retries: retries.into_inner(), secs })
}

/// Runs `bench read-latency`.
///
/// # Errors
/// Bad options ([`Usage`]), or a database or I/O failure.
pub fn run(args: &ReadLatencyArgs) -> Result<ExitCode, Box<dyn Error>> {
    args.validate()?;
    experiment::execute(args, args.out.as_deref())
}

/// One row of `read-latency.csv`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReadLatencyRow {
    /// Always `read-latency`.
    pub experiment: &'static str,
    /// `snapshot`, `read-txn` or `locked`.
    pub kind: &'static str,
    /// Reader threads.
    pub threads: u16,
    /// Repetition, from 0.
    pub rep: u16,
    /// Reads finished, all reader threads.
    pub reads: u64,
    /// Reads per second, all reader threads.
    pub reads_per_sec: f64,
    /// Median read latency, µs.
    pub p50_us: f64,
    /// 99th percentile read latency, µs.
    pub p99_us: f64,
    /// 99.9th percentile read latency, µs.
    pub p999_us: f64,
    /// Longest read, µs.
    pub max_us: f64,
    /// Writer transactions committed per second.
    pub writer_commits_per_sec: f64,
    /// Writer transactions rolled back after a refused lock (a deadlock's victim).
    pub writer_retries: u64,
}

impl Experiment for ReadLatencyArgs {
    const NAME: &'static str = "read-latency";
    type Row = ReadLatencyRow;
    type Results = Vec<Row>;

    fn caption(&self) -> String {
        format!(
            "Read latency under a writer holding record locks (LOCKS.md K18): {} records of {VALUE_BYTES} B, \
             logged, async commit, in memory; reads and writes on the first {} keys; the writer updates {} \
             keys per transaction and holds its locks {} us before committing; {} s per measurement, \
             {} repetitions, medians.",
            self.records, self.hot, self.writer_keys, self.hold_us, self.duration, self.repeat
        )
    }

    fn run(&self, _progress: Progress) -> Result<Vec<Row>, Box<dyn Error>> {
        self.validate()?;
        let base = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        let scratch = tempfile::Builder::new()
            .prefix("swizzledb-read-latency-")
            .tempdir_in(&base)
            .map_err(|e| crate::UnusablePath(format!("cannot write to --dir {}: {e}", base.display())))?;
        let (db, t) = open(scratch.path(), self.records)?;
        let mut rows = Vec::new();
        for rep in 0..self.repeat {
            for threads in self.thread_counts() {
                for kind in Kind::ALL {
                    let m = measure(&db, &t, self, kind, threads)?;
                    // Per second of the time the counted reads took, not of --duration: the
                    // reads in flight at the stop finish after it, which a tiny --duration
                    // (1e-9) turned into billions of reads per second.
                    let secs = m.secs;
                    let reads = m.hist.len();
                    let us = |ns: u64| if reads == 0 { f64::NAN } else { ns as f64 / 1000.0 };
                    rows.push(Row {
                        kind,
                        threads,
                        rep,
                        reads,
                        reads_per_sec: reads as f64 / secs,
                        p50_us: us(m.hist.value_at_quantile(0.5)),
                        p99_us: us(m.hist.value_at_quantile(0.99)),
                        p999_us: us(m.hist.value_at_quantile(0.999)),
                        max_us: us(m.hist.max()),
                        writer_commits_per_sec: m.commits as f64 / secs,
                        writer_retries: m.retries,
                    });
                }
            }
        }
        Ok(rows)
    }

    fn tables(&self, rows: &Vec<Row>, out: &mut dyn Write) -> io::Result<()> {
        print_table(out, self, rows)
    }

    fn rows(&self, rows: &Vec<Row>) -> Vec<ReadLatencyRow> {
        rows.iter()
            .map(|r| ReadLatencyRow {
                experiment: Self::NAME,
                kind: r.kind.name(),
                threads: r.threads,
                rep: r.rep,
                reads: r.reads,
                reads_per_sec: r.reads_per_sec,
                p50_us: r.p50_us,
                p99_us: r.p99_us,
                p999_us: r.p999_us,
                max_us: r.max_us,
                writer_commits_per_sec: r.writer_commits_per_sec,
                writer_retries: r.writer_retries,
            })
            .collect()
    }
}

/// The median over repetitions of `f` for `kind` with `threads` reader threads.
fn median(rows: &[Row], kind: Kind, threads: u16, f: impl Fn(&Row) -> f64) -> f64 {
    stats::median_by(rows, |r| r.kind == kind && r.threads == threads, |r| Some(f(r))).unwrap_or(f64::NAN)
}

/// Prints the medians per thread count and kind, then what the kinds are.
fn print_table(out: &mut dyn Write, args: &ReadLatencyArgs, rows: &[Row]) -> io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>7} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9}",
        "kind", "threads", "reads/s", "p50 us", "p99 us", "p99.9 us", "max us", "writer/s", "retries"
    )?;
    for threads in args.thread_counts() {
        for kind in Kind::ALL {
            writeln!(
                out,
                "{:<12} {:>7} {:>12.0} {:>9.2} {:>9.2} {:>10.2} {:>10.1} {:>10.0} {:>9.0}",
                kind.name(),
                threads,
                median(rows, kind, threads, |r| r.reads_per_sec),
                median(rows, kind, threads, |r| r.p50_us),
                median(rows, kind, threads, |r| r.p99_us),
                median(rows, kind, threads, |r| r.p999_us),
                median(rows, kind, threads, |r| r.max_us),
                median(rows, kind, threads, |r| r.writer_commits_per_sec),
                median(rows, kind, threads, |r| r.writer_retries as f64),
            )?;
        }
    }
    writeln!(
        out,
        "snapshot: Tree::get outside a transaction (a snapshot read, LOCKS.md K18: never waits); \
         read-txn: Database::begin_read and one ReadTransaction::get per read; snapshot-txn: \
         Database::transact_snapshot with Transaction::get (snapshot isolation, K24: no lock); \
         locked: Database::transact with Transaction::get (a shared record lock: waits for the \
         writer's exclusive lock). writer/s: writer commits per second; retries: writer \
         transactions rolled back after a refused lock, per measurement."
    )
}

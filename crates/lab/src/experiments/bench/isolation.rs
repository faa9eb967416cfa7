//! `bench isolation`: what record locking with next-key locks costs (LOCKS.md K14–K16), side by
//! side with locking off, for point transactions, scan-heavy transactions and reads outside a
//! transaction. Two logged databases with the same records, one per locking setting; the
//! measurements are interleaved (repetition, then mix, then setting) and the table shows medians.

use clap::Args;
use std::error::Error;
use std::io::{self, Write};
use std::ops::Bound::{Included, Unbounded};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use swizzledb::{CommitMode, Database, Error as DbError, Tree};

use crate::experiments::workload_options::dedup;
use crate::harness::experiment::{self, Experiment};
use crate::support::progress::Progress;
use crate::support::{stats, units};

/// Bytes per value.
const VALUE_BYTES: usize = 100;

/// Options of `bench isolation`.
#[derive(Args, Debug)]
pub struct IsolationArgs {
    /// Records loaded (even keys; inserts and deletes use the odd keys between them)
    #[arg(long, default_value = "100000", value_parser = parse_in_memory_records)]
    records: u64,
    /// Records each scan transaction reads (1 to --records)
    #[arg(long, default_value = "100", value_parser = units::parse_positive_count)]
    scan_len: u64,
    /// Thread counts, comma-separated
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Vec<u16>,
    /// Seconds per measurement
    #[arg(long, default_value = "2", value_parser = units::parse_positive_seconds)]
    duration: f64,
    /// Measurements per configuration, interleaved; the table shows medians
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// Directory for the temporary databases (created if missing) [default: the system temp directory]
    #[arg(long, value_parser = crate::experiments::common::parse_scratch_dir)]
    dir: Option<PathBuf>,
    /// Directory for isolation.csv (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl IsolationArgs {
    /// The thread counts, each once, in the order given: a count named twice (`--threads 1,1`)
    /// would be measured twice as one configuration and its table rows printed twice.
    fn thread_counts(&self) -> Vec<u16> {
        dedup(&self.threads)
    }
}

/// The transaction mixes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Transactions of four point operations: two reads, an update, and an insert or a delete
    /// (a gap write, K15).
    Point,
    /// Transactions reading `--scan-len` records from a random key (K16), then updating one.
    Scan,
    /// The same under snapshot isolation (`Database::transact_snapshot`, K24): the range read
    /// takes no locks.
    ScanSnapshot,
    /// `Tree::get` outside any transaction (a snapshot read with locking on, K18).
    Get,
    /// `Tree::range` of `--scan-len` records outside any transaction (a snapshot read with locking on, K22).
    ScanOutside,
}

impl Mix {
    const ALL: [Mix; 5] = [Mix::Point, Mix::Scan, Mix::ScanSnapshot, Mix::Get, Mix::ScanOutside];

    fn name(self) -> &'static str {
        match self {
            Mix::Point => "point-txn",
            Mix::Scan => "scan-txn",
            Mix::ScanSnapshot => "scan-si-txn",
            Mix::Get => "get",
            Mix::ScanOutside => "scan",
        }
    }
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct Row {
    mix: Mix,
    locking: bool,
    threads: u16,
    rep: u16,
    /// Transactions (or reads outside one) finished per second.
    per_sec: f64,
    /// Records read or written per second.
    records_per_sec: f64,
    /// Attempts whose lock request failed (a deadlock's victim) and ran again, per 1000 transactions.
    retries_per_1000: f64,
    /// Lock requests per transaction (0 with locking off).
    locks_per_txn: f64,
}

/// Key `i`: its 8 big-endian bytes (also `bench read-latency`'s).
pub(crate) fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A small xorshift generator per thread (the keys need no statistical quality).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The pool of a benchmark that runs in memory (`bench isolation`, `bench read-latency`): 400
/// bytes per record, at least 32 MiB.
pub(crate) fn in_memory_pool_bytes(records: u64) -> usize {
    usize::try_from(records).unwrap_or(usize::MAX).saturating_mul(400).max(32 << 20)
}

/// `--records` of a benchmark that runs in memory: at least 1, and few enough that the pool
/// [`in_memory_pool_bytes`] gives them can be made (the check the pool makes, before anything
/// is written).
pub(crate) fn parse_in_memory_records(input: &str) -> Result<u64, String> {
    let records = units::parse_positive_count(input)?;
    let pool = u64::try_from(in_memory_pool_bytes(records)).unwrap_or(u64::MAX);
    crate::experiments::common::check_pool(pool, swizzledb_buffer::page::DEFAULT_PAGE_SIZE).map_err(|e| {
        format!("{records} records are too many to hold in memory (400 bytes of pool each): {e}")
    })?;
    Ok(records)
}

fn open(dir: &Path, locking: bool, records: u64) -> Result<(Database, Tree), Box<dyn Error>> {
    let path = dir.join(if locking { "locking-on.swz" } else { "locking-off.swz" });
    let db = Database::builder()
        .pool_bytes(in_memory_pool_bytes(records))
        .commit_mode(CommitMode::Async)
        .lab(|l| l.locking(locking))
        .create(&path)?;
    let t = db.create_tree("t")?;
    let mut i = 0;
    while i < records {
        let end = (i + 1000).min(records);
        db.transact(|tx| {
            for k in i..end {
                tx.put(&t, &key(k * 2), &[7u8; VALUE_BYTES])?;
            }
            Ok(())
        })?;
        i = end;
    }
    Ok((db, t))
}

/// What one measurement counted: transactions, records, attempts, lock requests, and seconds.
type Counted = (u64, u64, u64, u64, f64);

/// Runs one measurement: `threads` threads run `mix` for `duration`. Returns the transactions,
/// records and attempts done, the lock requests, and the seconds from the start until every
/// thread had stopped (the time those took: at least `duration`, far more than a tiny one).
fn measure(
    db: &Database,
    t: &Tree,
    args: &IsolationArgs,
    mix: Mix,
    threads: u16,
) -> Result<Counted, Box<dyn Error>> {
    let stop = AtomicBool::new(false);
    let mut started = None;
    let (done, records, attempts) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let locks_before = db.lock_stats().map_or(0, |s| s.requests);
    let barrier = Barrier::new(usize::from(threads) + 1);
    let span = args.records * 2;
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for th in 0..threads {
            let (stop, done, records, attempts, barrier, failed) =
                (&stop, &done, &records, &attempts, &barrier, &failed);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((u64::from(th) + 1) * 0x1000_0001));
                barrier.wait();
                let (mut n, mut recs, mut tries) = (0u64, 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let r = match mix {
                        Mix::Point => {
                            let (a, b, c, d) =
                                (rng.next() % span, rng.next() % span, rng.next() % span, rng.next());
                            db.transact(|tx| {
                                tries += 1;
                                tx.get(t, &key(a & !1))?;
                                tx.get(t, &key(b & !1))?;
                                tx.put(t, &key(c & !1), &[8u8; VALUE_BYTES])?;
                                let odd = key((d % span) | 1);
                                if d & (1 << 40) == 0 {
                                    tx.put(t, &odd, &[9u8; VALUE_BYTES])?;
                                } else {
                                    tx.delete(t, &odd)?;
                                }
                                Ok(4)
                            })
                        }
                        Mix::Scan | Mix::ScanSnapshot => {
                            let (a, c) = (rng.next() % span, rng.next() % span);
                            let body = |tx: &mut swizzledb::Transaction<'_>| {
                                tries += 1;
                                let from = key(a);
                                let mut got = 0u64;
                                for r in
                                    tx.range(t, Included(&from[..]), Unbounded).take(args.scan_len as usize)
                                {
                                    r?;
                                    got += 1;
                                }
                                tx.put(t, &key(c & !1), &[8u8; VALUE_BYTES])?;
                                Ok(got + 1)
                            };
                            if mix == Mix::Scan {
                                db.transact(body)
                            } else {
                                db.transact_snapshot(body)
                            }
                        }
                        Mix::Get => {
                            tries += 1;
                            t.get(&key((rng.next() % span) & !1)).map(|_| 1).map_err(DbError::from)
                        }
                        Mix::ScanOutside => {
                            tries += 1;
                            let from = key(rng.next() % span);
                            let mut got = 0u64;
                            let mut res = Ok(());
                            for r in t.range(Included(&from[..]), Unbounded).take(args.scan_len as usize) {
                                if let Err(e) = r {
                                    res = Err(DbError::from(e));
                                    break;
                                }
                                got += 1;
                            }
                            res.map(|()| got)
                        }
                    };
                    match r {
                        Ok(k) => {
                            n += 1;
                            recs += k;
                        }
                        Err(e) => {
                            *failed.lock().unwrap() = Some(e.to_string());
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
                done.fetch_add(n, Ordering::Relaxed);
                records.fetch_add(recs, Ordering::Relaxed);
                attempts.fetch_add(tries, Ordering::Relaxed);
            });
        }
        barrier.wait();
        started = Some(Instant::now());
        std::thread::sleep(Duration::from_secs_f64(args.duration));
        stop.store(true, Ordering::Relaxed);
    });
    let secs = started.map_or(args.duration, |t| t.elapsed().as_secs_f64());
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(format!("{} failed: {e}", mix.name()).into());
    }
    let locks = db.lock_stats().map_or(0, |s| s.requests) - locks_before;
    Ok((done.into_inner(), records.into_inner(), attempts.into_inner(), locks, secs))
}

/// Runs `bench isolation`.
///
/// # Errors
/// Bad options, or a database or I/O failure.
pub fn run(args: &IsolationArgs) -> Result<ExitCode, Box<dyn Error>> {
    if args.scan_len > args.records {
        return Err(crate::Usage(format!(
            "--scan-len {} is more than the --records {} loaded: a scan would read past the last record; \
             give at most --records, or load more",
            args.scan_len, args.records
        ))
        .into());
    }
    experiment::execute(args, args.out.as_deref())
}

/// One row of `isolation.csv`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct IsolationRow {
    /// Always `isolation`.
    pub experiment: &'static str,
    /// `point-txn`, `scan-txn`, `scan-si-txn`, `get` or `scan`.
    pub mix: &'static str,
    /// `on` or `off`.
    pub locking: &'static str,
    /// Threads.
    pub threads: u16,
    /// Repetition, from 0.
    pub rep: u16,
    /// Transactions (or reads outside one) per second.
    pub per_sec: f64,
    /// Records read or written per second.
    pub records_per_sec: f64,
    /// Retries after a failed lock request per 1000 transactions.
    pub retries_per_1000: f64,
    /// Lock requests per transaction.
    pub locks_per_txn: f64,
}

impl Experiment for IsolationArgs {
    const NAME: &'static str = "isolation";
    type Row = IsolationRow;
    type Results = Vec<Row>;

    fn caption(&self) -> String {
        format!(
            "Isolation cost (LOCKS.md K14-K16): {} records of {VALUE_BYTES} B, logged, async commit, in memory; \
             locking on (record and next-key locks) against off; {} s per measurement, {} repetitions, medians.",
            self.records, self.duration, self.repeat
        )
    }

    fn run(&self, _progress: Progress) -> Result<Vec<Row>, Box<dyn Error>> {
        let base = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        let scratch = tempfile::Builder::new()
            .prefix("swizzledb-isolation-")
            .tempdir_in(&base)
            .map_err(|e| crate::UnusablePath(format!("cannot write to --dir {}: {e}", base.display())))?;
        let dbs = [open(scratch.path(), true, self.records)?, open(scratch.path(), false, self.records)?];
        let mut rows = Vec::new();
        for rep in 0..self.repeat {
            for threads in self.thread_counts() {
                for mix in Mix::ALL {
                    for (db, t) in &dbs {
                        let locking = db.lock_stats().is_some();
                        // Per second of the time the counted work took, not of --duration.
                        let (n, recs, tries, locks, secs) = measure(db, t, self, mix, threads)?;
                        rows.push(Row {
                            mix,
                            locking,
                            threads,
                            rep,
                            per_sec: n as f64 / secs,
                            records_per_sec: recs as f64 / secs,
                            retries_per_1000: if n == 0 {
                                0.0
                            } else {
                                (tries - n) as f64 * 1000.0 / n as f64
                            },
                            locks_per_txn: if n == 0 { 0.0 } else { locks as f64 / n as f64 },
                        });
                    }
                }
            }
        }
        Ok(rows)
    }

    fn tables(&self, rows: &Vec<Row>, out: &mut dyn Write) -> io::Result<()> {
        print_table(out, self, rows)
    }

    fn rows(&self, rows: &Vec<Row>) -> Vec<IsolationRow> {
        rows.iter()
            .map(|r| IsolationRow {
                experiment: Self::NAME,
                mix: r.mix.name(),
                locking: if r.locking { "on" } else { "off" },
                threads: r.threads,
                rep: r.rep,
                per_sec: r.per_sec,
                records_per_sec: r.records_per_sec,
                retries_per_1000: r.retries_per_1000,
                locks_per_txn: r.locks_per_txn,
            })
            .collect()
    }
}

fn median(rows: &[Row], mix: Mix, threads: u16, locking: bool, f: impl Fn(&Row) -> f64) -> f64 {
    stats::median_by(rows, |r| r.mix == mix && r.threads == threads && r.locking == locking, |r| Some(f(r)))
        .unwrap_or(f64::NAN)
}

fn print_table(out: &mut dyn Write, args: &IsolationArgs, rows: &[Row]) -> io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>7} {:>14} {:>14} {:>8} {:>12} {:>13}",
        "mix", "threads", "off per s", "on per s", "on/off", "locks/txn", "retries/1000"
    )?;
    for threads in args.thread_counts() {
        for mix in Mix::ALL {
            let off = median(rows, mix, threads, false, |r| r.per_sec);
            let on = median(rows, mix, threads, true, |r| r.per_sec);
            writeln!(
                out,
                "{:<12} {:>7} {:>14.0} {:>14.0} {:>8.2} {:>12.1} {:>13.2}",
                mix.name(),
                threads,
                off,
                on,
                on / off,
                median(rows, mix, threads, true, |r| r.locks_per_txn),
                median(rows, mix, threads, true, |r| r.retries_per_1000),
            )?;
        }
    }
    writeln!(
        out,
        "point-txn: 2 reads, 1 update, 1 insert or delete of an odd key; scan-txn: a range read of {} \
         records and 1 update; scan-si-txn: the same under snapshot isolation (K24: no read locks; \
         with locking off, as scan-txn); get and scan: outside transactions (with locking on: at a snapshot, \
         LOCKS.md K18, K22). Per second: transactions, or reads.",
        args.scan_len
    )
}

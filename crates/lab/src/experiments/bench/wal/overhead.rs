//! Part `overhead`: inserts/s with logging and locking on and off, async, sync and auto-commit.

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use swizzledb::LogStats;

use crate::harness::buffer::Progress;
use crate::support::stats::{self, summarize};
use crate::support::text::{thousands, write_aligned};

use super::common::*;

/// One measurement of the overhead part.
#[derive(Clone, Debug)]
pub struct InsertRun {
    pub(super) setup: Setup,
    pub(super) threads: usize,
    pub(super) batch: u32,
    pub(super) repetition: usize,
    pub(super) inserts: u64,
    pub(super) commits: u64,
    pub(super) secs: f64,
    /// Log counters of the measurement (`None` without logging).
    pub(super) log: Option<LogStats>,
    pub(super) lock_retries: u64,
    /// The time limit stopped it before all inserts were done.
    pub(super) capped: bool,
    /// The page cleaner's counters at the end (`None` without logging).
    pub(super) cleaning: Option<Cleaning>,
    /// `Database::log_bytes()` at the end (`None` without logging).
    pub(super) log_kept: Option<u64>,
    /// A cache line's round trip between two threads just before the measurement, in
    /// nanoseconds (`crate::support::cores`; `None` with one CPU).
    pub(super) line_ns: Option<f64>,
}

impl InsertRun {
    pub(super) fn inserts_per_sec(&self) -> f64 {
        self.inserts as f64 / self.secs
    }

    pub(super) fn log_bytes_per_insert(&self) -> Option<f64> {
        let log = self.log.as_ref()?;
        (self.inserts > 0).then(|| log.log_bytes as f64 / self.inserts as f64)
    }
}

/// Transactions between two looks at the clock in a worker of [`measure_inserts`] whose
/// commits do not sync: past its time limit a measurement runs at most this many more.
const CLOCK_EVERY: u64 = 64;

/// What one worker of [`measure_inserts`] did: inserts, commits and refused-lock retries.
#[derive(Default)]
struct Tally {
    inserted: u64,
    commits: u64,
    retries: u64,
}

/// One fresh database: `threads` threads insert the counters `0..records` in transactions of
/// `batch`, transaction j going to thread j mod threads, until done or `time_limit`; an
/// auto-commit configuration calls `Tree::insert` instead (`batch` is 1 for it). With
/// `prefault`, the pool's memory is faulted in when the database is made, before the clock
/// starts: otherwise the system zeroes each page as the inserts first touch it, inside the
/// measurement, and how long that takes varies from one run to the next (docs/isolation.md,
/// "What 0.9 of an unlocked insert would take").
pub(super) fn measure_inserts(
    plan: &Plan,
    scratch: &Path,
    setup: Setup,
    threads: usize,
    batch: u32,
    repetition: usize,
    prefault: bool,
) -> Result<InsertRun, Box<dyn Error>> {
    let path = scratch.join(format!("overhead-{}.swz", setup.name()));
    let logged = setup.logging();
    let db = crate::experiments::common::with_split_images(
        setup.builder(plan.pool_bytes()?).lab(|l| l.prefault(prefault)),
        logged && plan.lazy_split_images,
        logged && plan.eager_split_images,
    )
    .create(&path)?;
    let tree = db.create_tree(TREE)?;
    let batch64 = u64::from(batch);
    let txns = plan.records.div_ceil(batch64);
    let capped = AtomicBool::new(false);
    let line_ns = crate::support::cores::line_round_trip_ns();
    let before = db.log_stats();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(plan.time_limit);
    // Each worker counts in its own `Tally` and hands it back at its end: a counter the
    // threads shared would move its cache line between their cores once per transaction, a
    // cost of the harness that every configuration would pay beside the engine's.
    let results: Vec<swizzledb::Result<Tally>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (db, tree, capped) = (&db, &tree, &capped);
                s.spawn(move || -> swizzledb::Result<Tally> {
                    let mut tally = Tally::default();
                    let mut j = t;
                    while j < txns {
                        // The clock is read every `CLOCK_EVERY` transactions where commits
                        // do not wait for an fsync: a read costs tens of nanoseconds (about
                        // 90 in a virtual machine), a tenth of an unlogged insert, which every
                        // configuration would pay beside the engine's cost.
                        let look = setup.sync_commit() || tally.commits % CLOCK_EVERY == 0;
                        if look && Instant::now() >= deadline {
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
                            tally.commits += n;
                        } else {
                            tally.retries += with_retry(db, |txn| {
                                for i in range.clone() {
                                    let key = key_of(plan.seed, i);
                                    txn.insert(tree, &key, &value_of(&key, 0))?;
                                }
                                Ok(())
                            })?;
                            tally.commits += 1;
                        }
                        tally.inserted += n;
                        j += threads as u64;
                    }
                    Ok(tally)
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
    let mut total = Tally::default();
    for r in results {
        let t = r?;
        total.inserted += t.inserted;
        total.commits += t.commits;
        total.retries += t.retries;
    }
    db.close()?;
    remove_database(&path);
    Ok(InsertRun {
        setup,
        threads,
        batch,
        repetition,
        inserts: total.inserted,
        commits: total.commits,
        secs,
        log,
        lock_retries: total.retries,
        capped: capped.into_inner(),
        cleaning,
        log_kept,
        line_ns,
    })
}

pub(super) fn run_overhead(
    plan: &Plan,
    scratch: &Path,
    progress: Progress,
) -> Result<Vec<InsertRun>, Box<dyn Error>> {
    // One database at a time: its pool is faulted in ahead if it fits the memory.
    let mut note = Vec::new();
    let prefault = crate::workloads::bench::prefault_fits(1, plan.pool_bytes()? as u64, &mut note)?;
    if !prefault {
        progress.say(format_args!("{}", String::from_utf8_lossy(&note).trim_end()));
    }
    let mut runs = Vec::new();
    for rep in 0..plan.repeat {
        for &threads in &plan.overhead_threads {
            // The batched configurations at every batch size, then the auto-commit ones once; in
            // the opposite order every other repetition (`in_turn`).
            let mut measurements: Vec<(Setup, u32)> = Vec::new();
            for &batch in &plan.batches {
                measurements.extend(plan.setups.iter().filter(|s| !s.auto_commit()).map(|&s| (s, batch)));
            }
            measurements.extend(plan.setups.iter().filter(|s| s.auto_commit()).map(|&s| (s, 1)));
            for (setup, batch) in stats::in_turn(measurements.len(), rep).map(|i| measurements[i]) {
                let run = measure_inserts(plan, scratch, setup, threads, batch, rep, prefault)
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

pub(super) fn insert_median(
    runs: &[InsertRun],
    setup: Setup,
    threads: usize,
    batch: u32,
    f: impl Fn(&InsertRun) -> Option<f64>,
) -> Option<f64> {
    let batch = setup.batch(batch);
    stats::median_by(runs, |r| r.setup == setup && r.threads == threads && r.batch == batch, f)
}

pub(super) fn print_overhead(out: &mut impl Write, plan: &Plan, runs: &[InsertRun]) -> io::Result<()> {
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
        for &setup in &plan.setups {
            let mut row = vec![setup.name().to_string()];
            for &t in &plan.overhead_threads {
                let x = insert_median(runs, setup, t, batch, |r| Some(r.inserts_per_sec()));
                let best = plan
                    .setups
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
    if plan.setups.iter().any(|s| s.auto_commit()) {
        writeln!(
            out,
            "   auto-async, auto-sync: Tree::insert with the engine's defaults (log, record locks, page cleaner), \
             one auto-committed transaction per insert whatever the batch (the same measurements in every table)"
        )?;
    }
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

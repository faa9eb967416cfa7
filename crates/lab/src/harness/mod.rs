//! Harnesses: [`run`] runs a [`Workload`] on several threads and counts what finished, per
//! operation kind; [`buffer`] measures lookups, inserts and drifts per buffer mode with
//! interleaved repetitions, and [`buffer_report`] turns those measurements into tables, rows
//! and charts.

pub mod buffer;
pub mod buffer_report;
pub mod experiment;
pub mod pools;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use crate::workloads::{Workload, WorkloadError};

/// When the threads stop.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Until {
    /// After this long (measured from the moment all threads are ready).
    Elapsed(Duration),
    /// After each thread ran this many operations.
    Operations(u64),
}

/// Counts of one operation kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KindCounts {
    /// Operations finished (committed or rolled back).
    pub done: u64,
    /// Times their bodies ran (`done` plus retries after a failed lock request).
    pub attempts: u64,
    /// Operations that ended in a rollback the workload asked for.
    pub rolled_back: u64,
}

/// What one run did.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Wall time from start to the last thread's stop.
    pub elapsed: Duration,
    /// Per operation kind, in [`Workload::kinds`] order.
    pub kinds: Vec<KindCounts>,
    /// A timed run stopped before its time because its `room` check said so ([`run_while`]).
    pub cut_short: bool,
}

impl Measurement {
    /// Operations finished, all kinds.
    #[must_use]
    pub fn operations(&self) -> u64 {
        self.kinds.iter().map(|k| k.done).sum()
    }

    /// Retries (attempts beyond the first), all kinds.
    #[must_use]
    pub fn retries(&self) -> u64 {
        self.kinds.iter().map(|k| k.attempts - k.done).sum()
    }

    /// Rollbacks the workload asked for, all kinds.
    #[must_use]
    pub fn rolled_back(&self) -> u64 {
        self.kinds.iter().map(|k| k.rolled_back).sum()
    }

    /// Per second of [`Measurement::elapsed`].
    #[must_use]
    pub fn rate(&self, count: u64) -> f64 {
        count as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `workload` on `threads` threads until `until`; the first error stops every thread and
/// is returned.
///
/// # Errors
/// `threads` is 0, a worker could not be made, or an operation failed.
pub fn run<D: Sync + ?Sized, W: Workload<D>>(
    workload: &W,
    db: &D,
    threads: usize,
    until: Until,
) -> Result<Measurement, WorkloadError> {
    run_while(workload, db, threads, until, &mut || true)
}

/// How often a timed run looks at its clock and at `room` ([`run_while`]).
const SLICE: Duration = Duration::from_millis(10);

/// [`run`], but a timed run ([`Until::Elapsed`]) also stops early once `room` returns false;
/// `room` is asked every 10 ms by the thread that keeps time, never by the workers. The
/// measurement's `elapsed` is then the time the threads ran, so rates stay right: a run that
/// would outgrow its database's memory ends short instead of failing (see
/// [`crate::workloads::bench::PoolRoom`]).
///
/// # Errors
/// As [`run`].
pub fn run_while<D: Sync + ?Sized, W: Workload<D>>(
    workload: &W,
    db: &D,
    threads: usize,
    until: Until,
    room: &mut dyn FnMut() -> bool,
) -> Result<Measurement, WorkloadError> {
    if threads == 0 {
        return Err(WorkloadError::Config("the number of threads must be at least 1".into()));
    }
    let workers: Vec<W::Worker> = (0..threads).map(|t| workload.worker(db, t)).collect::<Result<_, _>>()?;
    let n_kinds = workload.kinds().len();
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<WorkloadError>> = Mutex::new(None);
    let barrier = Barrier::new(threads + 1);
    let mut started = Instant::now();
    let mut cut_short = false;
    let totals = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|mut worker| {
                let (stop, failed, barrier) = (&stop, &failed, &barrier);
                s.spawn(move || {
                    let mut counts = vec![KindCounts::default(); n_kinds];
                    barrier.wait();
                    let mut ops = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if let Until::Operations(n) = until {
                            if ops == n {
                                break;
                            }
                        }
                        match workload.run_one(db, &mut worker) {
                            Ok(o) => {
                                let c = &mut counts[o.kind];
                                c.done += 1;
                                c.attempts += u64::from(o.attempts);
                                c.rolled_back += u64::from(o.rolled_back);
                            }
                            Err(e) => {
                                failed
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .get_or_insert(e);
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        ops += 1;
                    }
                    counts
                })
            })
            .collect();
        barrier.wait();
        started = Instant::now();
        if let Until::Elapsed(d) = until {
            // Sleep in slices so that a failing thread, or a database about to run out of
            // room, ends the run early.
            while started.elapsed() < d && !stop.load(Ordering::Relaxed) {
                if !room() {
                    cut_short = true;
                    break;
                }
                std::thread::sleep((d - started.elapsed().min(d)).min(SLICE));
            }
            stop.store(true, Ordering::Relaxed);
        }
        let mut totals = vec![KindCounts::default(); n_kinds];
        for h in handles {
            match h.join() {
                Ok(counts) => {
                    for (t, c) in totals.iter_mut().zip(counts) {
                        t.done += c.done;
                        t.attempts += c.attempts;
                        t.rolled_back += c.rolled_back;
                    }
                }
                Err(p) => {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    failed
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(WorkloadError::Panicked(msg));
                }
            }
        }
        totals
    });
    let elapsed = started.elapsed();
    if let Some(e) = failed.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(e);
    }
    Ok(Measurement { elapsed, kinds: totals, cut_short })
}

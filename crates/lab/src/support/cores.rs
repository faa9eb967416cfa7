//! How far apart two cores are right now: the round trip of one cache line between two
//! threads (one stores, the other sees it and answers with a store of its own).
//!
//! On a virtual machine the host may run two virtual CPUs on one physical core or on two
//! cores that share a cache, and a moment later on cores that share none; the 2-core machine
//! the project measures on moved between about 55 ns and about 340 ns a round trip from one
//! second to the next (`docs/logging.md`, "Two cores, near and far"). Every line two threads
//! share — a lock's shard, the log's reservation, a hot page — costs that much each time it
//! changes hands, so a measurement of two threads is worth reading beside the round trip at
//! the time it ran: `bench tpcc` and `bench wal`'s overhead part record one per measurement
//! (`line_ns` in `tpcc.csv` and `wal.csv`).

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

/// Round trips timed together; the result is the median of the batches' means.
const BATCH: u32 = 500;
const BATCHES: usize = 9;
/// A probe gives up after this long (a busy machine may leave the answering thread no core).
const DEADLINE: Duration = Duration::from_millis(50);

/// The line the two threads pass between them, on a cache line (and its neighbour) of its own.
#[repr(align(128))]
struct Line(AtomicU64);

/// Spins until `done` holds, yielding the core every 1,024 looks (so that a machine with fewer
/// free cores than threads still makes progress); `false` if `give_up` said so first.
fn spin_until(mut done: impl FnMut() -> bool, mut give_up: impl FnMut() -> bool) -> bool {
    let mut looks = 0u32;
    while !done() {
        looks = looks.wrapping_add(1);
        if looks.is_multiple_of(1024) {
            if give_up() {
                return false;
            }
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    true
}

/// The median time, in nanoseconds, for one cache line to go from this thread to another and
/// back (nine batches of 500 round trips, a few milliseconds in all). `None` with fewer than
/// two CPUs, or if 50 ms passed before a batch was done (no core to answer on).
#[must_use]
pub fn line_round_trip_ns() -> Option<f64> {
    probe(DEADLINE)
}

/// [`line_round_trip_ns`], giving up after `deadline`.
fn probe(deadline: Duration) -> Option<f64> {
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 2) {
        return None;
    }
    let line = Line(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let means = std::thread::scope(|s| {
        s.spawn(|| {
            let mut ask = 1;
            while spin_until(|| line.0.load(Acquire) == ask, || stop.load(Relaxed)) {
                line.0.store(ask + 1, Release);
                ask += 2;
            }
        });
        let mut means = Vec::with_capacity(BATCHES);
        let mut sent = 0;
        'batches: for _ in 0..BATCHES {
            let batch = Instant::now();
            for _ in 0..BATCH {
                line.0.store(sent + 1, Release);
                if !spin_until(|| line.0.load(Acquire) == sent + 2, || started.elapsed() > deadline) {
                    break 'batches;
                }
                sent += 2;
            }
            means.push(batch.elapsed().as_nanos() as f64 / f64::from(BATCH));
        }
        stop.store(true, Relaxed);
        means
    });
    crate::support::stats::median(&means)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where there are two CPUs the probe answers (given time: the tests beside it may hold
    /// the cores), with a time a line could take: more than nothing, and less than a
    /// scheduler's time slice (10 ms) a round trip. Alone it takes well under a microsecond;
    /// with the test runner's other tests holding the cores, each round trip can wait for the
    /// other thread to be scheduled, for the whole run (a bound of a millisecond failed so
    /// under a loaded 2-core machine).
    #[test]
    fn a_round_trip_takes_some_time_and_not_long() {
        let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let ns = probe(Duration::from_secs(20));
        assert_eq!(ns.is_some(), two, "a probe with two CPUs, none with one");
        if let Some(ns) = ns {
            assert!(ns > 1.0 && ns < 1e7, "{ns} ns a round trip");
        }
    }
}

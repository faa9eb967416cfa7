//! Publication without a lock (README W5): a publisher stores one slot and touches no shared
//! cache line; the completed prefix is carried forward by whoever needs it (the writer, a
//! flusher, a waiter), and a wait for it costs the publishers one read of a counter nobody
//! writes while nobody waits.
//!
//! Every live reservation lies in `[written, written + capacity)` (W4), so its start `pos`
//! names a slot `(pos / 8) % slots` that no other live range shares. Publishing `[pos, end)`
//! stores `end` there. The prefix at `c` advances by reading slot `c`: a value above `c` is the
//! end of the range that starts at `c`, published; anything else is left from an earlier lap
//! of the ring (an end at most `c - capacity / 2`, since a range is at most half the ring) or
//! zero.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::sync::atomic::{AtomicU64, AtomicUsize};

/// The reservation point `next` (W4 step 1, moved by the manager's compare-and-swap) and the
/// completed prefix `upto` (W5), which only readers of the prefix move.
#[derive(Debug)]
struct Heads {
    next: AtomicU64,
    /// Every reserved byte below it is published. Only grows.
    upto: AtomicU64,
}

/// The completed prefix of the reserved log space (W5), beside the reservation point.
#[derive(Debug)]
pub(crate) struct Completed {
    /// Slot `(pos / 8) % len`: the end of the range published at `pos`, once published.
    ends: Box<[AtomicU64]>,
    /// The reservation point, which every appender moves, and the completed prefix, which the
    /// prefix's readers move: on their own cache lines, so that readers of the log's
    /// configuration take none (W12).
    heads: Padded<Heads>,
}

impl Completed {
    /// A reservation point and prefix at `start` for a ring of `capacity` bytes.
    pub(crate) fn new(capacity: u64, start: u64) -> Completed {
        Completed {
            ends: (0..capacity / 8).map(|_| AtomicU64::new(0)).collect(),
            heads: Padded(Heads { next: AtomicU64::new(start), upto: AtomicU64::new(start) }),
        }
    }

    /// The reservation point (W4 step 1): the LSN the next frame (or padding) starts at. The
    /// manager moves it by compare-and-swap.
    pub(crate) fn next(&self) -> &AtomicU64 {
        &self.heads.next
    }

    /// Every reserved byte below this is published (W5): the prefix, first carried over every
    /// published range at its end. Its ring words below it are visible to the caller.
    ///
    /// The walk over the slots is the caller's own; one swap then moves the prefix over all of
    /// it, so that carrying it over a flusher round's thousands of ranges takes the cache line
    /// beside the reservation point once. A slot read beyond the shared prefix can hold a value
    /// of a later lap only once the prefix has passed that slot (W4's room check), and then the
    /// swap from the older prefix fails (it only grows) and the walk starts again from there.
    pub(crate) fn get(&self) -> u64 {
        let upto = &self.heads.upto;
        let mut from = upto.load(Acquire);
        loop {
            let mut at = from;
            loop {
                let end = self.slot(at).load(Acquire);
                if end <= at {
                    break;
                }
                at = end;
            }
            if at == from {
                return from;
            }
            // Another reader may carry the prefix at the same time: go on from where it is.
            match upto.compare_exchange(from, at, AcqRel, Acquire) {
                Ok(_) => return at,
                Err(now) if now >= at => return now,
                Err(now) => from = now,
            }
        }
    }

    fn slot(&self, pos: u64) -> &AtomicU64 {
        &self.ends[((pos / 8) % self.ends.len() as u64) as usize]
    }

    /// W5: `[from, to)` is filled (its ring words stored before this call). Stores its slot;
    /// the prefix is carried over it by the next reader of the prefix ([`Completed::get`]).
    ///
    /// A release store and nothing else: no fence, so the stores of the copy (into ring words
    /// a lap of the ring has made cold) drain from the store buffer while the appender goes on.
    /// A reader that sees the slot with acquire sees the range's words.
    pub(crate) fn publish(&self, from: u64, to: u64) {
        debug_assert!(to > from);
        self.slot(from).store(to, Release);
    }

    /// Waits until the prefix is above `lsn` or `stop()` says to give up (a failed log).
    ///
    /// Nobody wakes a waiter: it looks at the prefix again, spinning first, then yielding its
    /// core (the range it waits for may belong to a thread that needs that core to finish its
    /// copy), then sleeping for [`POLL`] at a time.
    pub(crate) fn wait_above(&self, lsn: u64, stop: impl Fn() -> bool) {
        let mut looks = 0u32;
        while self.get() <= lsn && !stop() {
            looks += 1;
            if looks <= SPINS {
                std::hint::spin_loop();
            } else if looks <= SPINS + YIELDS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(POLL);
            }
        }
    }
}

/// [`Completed::wait_above`]: looks at the prefix spinning, then yielding, then sleeping.
const SPINS: u32 = 256;
const YIELDS: u32 = 64;
const POLL: std::time::Duration = std::time::Duration::from_micros(50);

/// A value alone on its cache lines (128 bytes: the adjacent-line prefetcher pulls lines in
/// pairs), so that threads writing it do not slow down threads reading its neighbours (W12).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A counter bumped by many threads without sharing a cache line: each thread adds to one of
/// [`STRIPES`] padded cells, and a read sums them (exact once the bumps have returned).
#[derive(Debug, Default)]
pub(crate) struct Striped {
    cells: [Padded<AtomicU64>; STRIPES],
}

const STRIPES: usize = 16;

/// This thread's stripe.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

impl Striped {
    pub(crate) fn add(&self, by: u64) {
        self.cells[stripe()].0.fetch_add(by, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn sum(&self) -> u64 {
        self.cells.iter().map(|c| c.0.load(std::sync::atomic::Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;

    #[test]
    fn w5_prefix_waits_for_the_gap_then_jumps_over_every_published_range() {
        let c = Completed::new(64, 8);
        c.publish(24, 40);
        c.publish(40, 48);
        assert_eq!(c.get(), 8, "[8, 24) is not published yet");
        c.publish(8, 24);
        assert_eq!(c.heads.upto.load(SeqCst), 8, "a publication moves no head");
        assert_eq!(c.get(), 48, "the reader carries the prefix over all three ranges");
        assert_eq!(c.heads.upto.load(SeqCst), 48);
    }

    #[test]
    fn w5_a_slot_left_from_an_earlier_lap_is_not_taken_for_a_publication() {
        // A 64-byte ring: LSN 8 and LSN 72 share slot 1.
        let c = Completed::new(64, 8);
        c.publish(8, 40);
        c.publish(40, 72);
        assert_eq!(c.get(), 72);
        // Slot 1 still says 40, below 72: nothing moves until [72, 80) is published.
        c.publish(80, 88);
        assert_eq!(c.get(), 72);
        c.publish(72, 80);
        assert_eq!(c.get(), 88);
    }

    #[test]
    fn w5_concurrent_publishers_leave_the_prefix_at_the_last_end_and_the_waiter_sees_it() {
        // 4 threads publish disjoint 8-byte ranges handed out by a shared counter, as appenders'
        // reservations are; a waiter for the last byte must return.
        const RANGES: u64 = 20_000;
        let c = Arc::new(Completed::new(1 << 12, 0));
        let next = Arc::new(AtomicU64::new(0));
        let waiter = {
            let c = Arc::clone(&c);
            std::thread::spawn(move || c.wait_above(RANGES * 8 - 1, || false))
        };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (c, next) = (Arc::clone(&c), Arc::clone(&next));
                std::thread::spawn(move || loop {
                    let pos = next.fetch_add(8, SeqCst);
                    if pos >= RANGES * 8 {
                        break;
                    }
                    // Stay inside the ring: a reservation waits for the prefix (W4).
                    while pos + 8 - c.get() > 1 << 12 {
                        std::hint::spin_loop();
                    }
                    c.publish(pos, pos + 8);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        waiter.join().unwrap();
        assert_eq!(c.get(), RANGES * 8);
    }

    #[test]
    fn w5_waiters_for_every_point_return_while_publishers_race() {
        // Publishers store slots only; each waiter walks from one target to the next, so that
        // waits begin and end while ranges are published in and out of order. A waiter that
        // never sees a publication hangs the test.
        const RANGES: u64 = 200_000;
        let c = Arc::new(Completed::new(1 << 10, 0));
        let next = Arc::new(AtomicU64::new(0));
        let waiters: Vec<_> = (0..3u64)
            .map(|w| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    let mut target = w * 8;
                    while target < RANGES * 8 {
                        c.wait_above(target, || false);
                        let seen = c.get();
                        assert!(seen > target, "woken at {seen}, waiting above {target}");
                        target = seen + 8 * (1 + w * 97 % 13);
                    }
                })
            })
            .collect();
        let publishers: Vec<_> = (0..4)
            .map(|_| {
                let (c, next) = (Arc::clone(&c), Arc::clone(&next));
                std::thread::spawn(move || loop {
                    let len = 8 * (1 + next.load(SeqCst) % 3);
                    let pos = next.fetch_add(len, SeqCst);
                    while pos + len - c.get() > 1 << 10 {
                        std::hint::spin_loop();
                    }
                    // A range past the end is published too, so that the prefix passes it.
                    c.publish(pos, pos + len);
                    if pos >= RANGES * 8 {
                        break;
                    }
                })
            })
            .collect();
        for t in publishers.into_iter().chain(waiters) {
            t.join().unwrap();
        }
        assert_eq!(c.get(), next.load(SeqCst), "every reserved range published and passed");
    }

    #[test]
    fn striped_counter_sums_every_threads_bumps() {
        let s = Arc::new(Striped::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || (0..1000).for_each(|_| s.add(3)))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.sum(), 24_000);
    }
}

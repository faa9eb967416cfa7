//! Publication without a lock (README W5): a publisher stores its frame's header word last and
//! touches nothing else; the completed prefix is carried forward by whoever needs it (the
//! writer, a flusher, a waiter), walking the ring's header words, which the writer reads next
//! anyway.
//!
//! Every live reservation lies in `[written, written + capacity)` (W4), and every ring word of
//! that window is free ([`crate::frame::FREE_WORD`]) or belongs to the reservation that holds it
//! in this lap of the ring: the writer frees the words it wrote out before it moves `written`
//! past them. So the prefix at `c` advances by reading the header word at `c`: anything but the
//! free word is the header of the frame that starts at `c`, published, and the walk moves on by
//! its length; a walk stops at `written + capacity`, where the ring's words are those of `c`'s
//! predecessors a lap earlier.

use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::sync::atomic::{AtomicU64, AtomicUsize};

use crate::frame;
use crate::ring::Ring;

/// The reservation point `next` (W4 step 1, moved by the manager's fetch-and-add) and the
/// completed prefix `upto` (W5), which only readers of the prefix move.
#[derive(Debug)]
struct Heads {
    next: AtomicU64,
    /// Every reserved byte below it is published. Only grows; never below `written`.
    upto: AtomicU64,
}

/// The completed prefix of the reserved log space (W5), beside the reservation point.
#[derive(Debug)]
pub(crate) struct Completed {
    /// The reservation point, which every appender moves, and the completed prefix, which the
    /// prefix's readers move: on their own cache lines, so that readers of the log's
    /// configuration take none (W12).
    heads: Padded<Heads>,
}

impl Completed {
    /// A reservation point and prefix at `start`.
    pub(crate) fn new(start: u64) -> Completed {
        Completed { heads: Padded(Heads { next: AtomicU64::new(start), upto: AtomicU64::new(start) }) }
    }

    /// The reservation point (W4 step 1): the LSN the next frame (or padding) starts at. The
    /// manager moves it by fetch-and-add.
    pub(crate) fn next(&self) -> &AtomicU64 {
        &self.heads.next
    }

    /// Every reserved byte below this is published (W5): the prefix, first carried over every
    /// frame published at its end, in `ring`, whose words below `written` have been written out.
    /// Its ring words below it are visible to the caller.
    ///
    /// The walk over the header words is the caller's own; one swap then moves the prefix over
    /// all of it, so that carrying it over a flusher round's thousands of frames takes the cache
    /// line beside the reservation point once. A word read beyond the shared prefix can hold a
    /// later lap's header only once `written`, and so the prefix, has passed it (W4's room
    /// check); then the swap from the older prefix fails (it only grows) and the walk starts
    /// again from there.
    pub(crate) fn get(&self, ring: &Ring, written: &AtomicU64) -> u64 {
        // `written` before the prefix: the prefix is never below it, and every word of
        // `[written, written + capacity)` is free or this lap's (the writer freed the words
        // below `written`, with release, before it stored `written`).
        let bound = written.load(Acquire) + ring.capacity();
        let upto = &self.heads.upto;
        let mut from = upto.load(Acquire);
        loop {
            let mut at = from;
            while at < bound {
                match frame::published_len(ring.header_word(at)) {
                    Some(len) => at += len,
                    None => break,
                }
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

    /// Moves the prefix to `to` if it is below: the caller knows that every reserved byte below
    /// `to` is published, or reserved space that holds no frame in the ring (a segment sealed by
    /// padding written to its file directly, W14). Caller holds the writer mutex and stores
    /// `written` up to `to` after this, so that the prefix is never below `written`.
    pub(crate) fn advance_to(&self, to: u64) {
        let upto = &self.heads.upto;
        if upto.load(Acquire) < to {
            upto.fetch_max(to, AcqRel);
        }
    }

    /// Waits until `prefix()` (the completed prefix, [`Completed::get`]) is above `lsn` or
    /// `stop()` says to give up (a failed log).
    ///
    /// Nobody wakes a waiter: it looks at the prefix again, spinning first, then yielding its
    /// core (the frame it waits for may belong to a thread that needs that core to finish its
    /// copy), then sleeping for [`POLL`] at a time.
    pub(crate) fn wait_above(lsn: u64, prefix: impl Fn() -> u64, stop: impl Fn() -> bool) {
        let mut looks = 0u32;
        while prefix() <= lsn && !stop() {
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
    use crate::frame::{pad_header, record_header, FREE_WORD};
    use std::sync::atomic::Ordering::{Release, SeqCst};
    use std::sync::Arc;

    /// A ring, its `written` and its prefix, with the writer's part played by [`Log::write_out`].
    struct Log {
        ring: Ring,
        written: AtomicU64,
        completed: Completed,
    }

    impl Log {
        fn new(capacity: usize, start: u64) -> Log {
            Log {
                ring: Ring::new(capacity),
                written: AtomicU64::new(start),
                completed: Completed::new(start),
            }
        }

        fn get(&self) -> u64 {
            self.completed.get(&self.ring, &self.written)
        }

        /// A record of `len` bytes in all (header included) at `pos`, published.
        fn publish(&self, pos: u64, len: u64) {
            self.ring.store_frame(
                pos,
                record_header(pos, &vec![7; (len - 8) as usize]),
                &vec![7; (len - 8) as usize],
            );
        }

        /// The writer: frees the words of the completed prefix and moves `written` past them.
        fn write_out(&self) -> u64 {
            let from = self.written.load(Acquire);
            let upto = self.get();
            self.ring.free(from, upto);
            self.written.store(upto, Release);
            upto
        }
    }

    #[test]
    fn w5_prefix_waits_for_the_gap_then_jumps_over_every_published_frame() {
        let log = Log::new(64, 8);
        log.publish(24, 16);
        log.publish(40, 8);
        assert_eq!(log.get(), 8, "[8, 24) is not published yet");
        log.publish(8, 16);
        assert_eq!(log.completed.heads.upto.load(SeqCst), 8, "a publication moves no head");
        assert_eq!(log.get(), 48, "the reader carries the prefix over all three frames");
        assert_eq!(log.completed.heads.upto.load(SeqCst), 48);
    }

    #[test]
    fn w5_a_full_ring_is_walked_once_and_a_freed_word_is_not_taken_for_a_publication() {
        // A 64-byte ring: LSN 8 and LSN 72 share a word.
        let log = Log::new(64, 8);
        log.publish(8, 32);
        log.publish(40, 32);
        assert_eq!(log.get(), 72, "the walk stops a ring after `written`, at the header of LSN 8");
        assert_eq!(log.write_out(), 72);
        assert_eq!(log.ring.header_word(72), FREE_WORD, "the word of LSN 8 was freed");
        log.publish(80, 8);
        assert_eq!(log.get(), 72, "[72, 80) is not published");
        log.publish(72, 8);
        assert_eq!(log.get(), 88);
    }

    #[test]
    fn w5_two_paddings_published_as_one_range_and_a_skipped_range() {
        let log = Log::new(64, 8);
        // A range crossing a segment's end at 32 (W1): the second padding first, then the first.
        log.ring.store_frame(32, pad_header(32, 16), &[]);
        assert_eq!(log.get(), 8);
        log.ring.store_frame(8, pad_header(8, 24), &[]);
        assert_eq!(log.get(), 48);
        assert_eq!(log.write_out(), 48);
        // W14: a sealed segment's padding lies beyond the ring; the prefix skips it.
        log.completed.advance_to(4096);
        log.written.store(4096, Release);
        assert_eq!(log.get(), 4096);
        log.publish(4096, 24);
        assert_eq!(log.get(), 4120);
    }

    #[test]
    fn w5_concurrent_publishers_leave_the_prefix_at_the_last_end_and_the_waiter_sees_it() {
        // 4 threads publish disjoint frames handed out by a shared counter, as appenders'
        // reservations are, over many laps of a small ring that a writer frees; a waiter for the
        // last byte must return.
        const FRAMES: u64 = 20_000;
        let log = Arc::new(Log::new(1 << 12, 0));
        let waiter = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || Completed::wait_above(FRAMES * 16 - 1, || log.get(), || false))
        };
        let writer = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || while log.write_out() < FRAMES * 16 {})
        };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || loop {
                    let pos = log.completed.next().fetch_add(16, SeqCst);
                    if pos >= FRAMES * 16 {
                        break;
                    }
                    // Stay inside the ring: a reservation waits for room (W4).
                    while pos + 16 - log.written.load(Acquire) > 1 << 12 {
                        std::hint::spin_loop();
                    }
                    log.publish(pos, 16);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        waiter.join().unwrap();
        writer.join().unwrap();
        assert_eq!(log.get(), FRAMES * 16);
    }

    #[test]
    fn w5_waiters_for_every_point_return_while_publishers_race() {
        // Publishers store header words only after their bodies; each waiter walks from one
        // target to the next, so that waits begin and end while frames are published in and out
        // of order, over many laps of the ring. A waiter that never sees a publication hangs the
        // test; one that sees a prefix past an unpublished frame fails its check.
        const END: u64 = 200_000 * 8;
        let log = Arc::new(Log::new(1 << 10, 0));
        let published = Arc::new((0..END / 8 + 64).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        let waiters: Vec<_> = (0..3u64)
            .map(|w| {
                let (log, published) = (Arc::clone(&log), Arc::clone(&published));
                std::thread::spawn(move || {
                    let mut target = w * 8;
                    while target < END {
                        Completed::wait_above(target, || log.get(), || false);
                        let seen = log.get();
                        assert!(seen > target, "returned at {seen}, waiting above {target}");
                        let last = published[(target / 8) as usize].load(Acquire);
                        assert_ne!(
                            last, 0,
                            "the prefix {seen} passed {target}, whose frame is not published"
                        );
                        target = seen + 8 * (1 + w * 97 % 13);
                    }
                })
            })
            .collect();
        let writer = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || while log.write_out() < END {})
        };
        let publishers: Vec<_> = (0..4)
            .map(|_| {
                let (log, published) = (Arc::clone(&log), Arc::clone(&published));
                std::thread::spawn(move || loop {
                    let len = 8 * (1 + log.completed.next().load(SeqCst) / 8 % 3);
                    let pos = log.completed.next().fetch_add(len, SeqCst);
                    while pos + len - log.written.load(Acquire) > 1 << 10 {
                        std::hint::spin_loop();
                    }
                    for at in (pos..pos + len).step_by(8) {
                        if let Some(p) = published.get((at / 8) as usize) {
                            p.store(1, Release);
                        }
                    }
                    // A frame past the end is published too, so that the prefix passes it.
                    log.publish(pos, len);
                    if pos >= END {
                        break;
                    }
                })
            })
            .collect();
        for t in publishers.into_iter().chain(waiters) {
            t.join().unwrap();
        }
        writer.join().unwrap();
        assert_eq!(log.get(), log.completed.next().load(SeqCst), "every reserved frame published and passed");
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

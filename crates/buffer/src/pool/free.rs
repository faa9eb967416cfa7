//! Free frames (B13, B30): partitioned free lists, so that misses on many threads do not meet on
//! one lock.

use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use swizzledb_sync::FrameId;

/// Frames per partition below which the pool keeps one list: a small pool gains nothing from
/// partitions, and one list keeps its frame order exact (the race tests rely on it).
const FRAMES_PER_PARTITION: usize = 1024;

/// Partitions at most (a power of two).
const MAX_PARTITIONS: usize = 16;

/// One partition, alone on its cache lines: the frames freed to it (a stack), and its range of
/// frames never handed out yet, `next..end`, handed out lowest first once the stack is empty.
#[repr(align(128))]
struct Partition {
    freed: Mutex<Vec<FrameId>>,
    /// The partition's first frame.
    start: usize,
    /// The next frame never handed out; moved forward only under `freed`'s lock, read without it
    /// by [`FreeLists::handed_out`].
    next: AtomicUsize,
    /// The end of the partition's range.
    end: usize,
}

impl Partition {
    fn pop(&self) -> Option<FrameId> {
        let mut freed = self.freed.lock();
        freed.pop().or_else(|| {
            let f = self.next.load(Relaxed);
            (f < self.end).then(|| {
                // Release: a scan that sees the frame handed out sees its descriptor's writes
                // made before this (none: an unused descriptor is all zero, B4).
                self.next.store(f + 1, Release);
                FrameId(f as u32)
            })
        })
    }
}

/// The free frames, in partitions (B30). A thread pushes to and pops from its own partition
/// (chosen once per thread) and takes from the others only when its own is empty. Each
/// partition is a stack: the frame freed last is reused first, while its memory is still cached.
pub(super) struct FreeLists {
    parts: Box<[Partition]>,
}

/// The partition number of the calling thread, handed out round-robin.
pub(super) fn home() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static HOME: usize = NEXT.fetch_add(1, Relaxed);
    }
    HOME.with(|h| *h)
}

thread_local! {
    /// Set on a thread that frees frames for others (the background evictor, B31): its pushes
    /// go to the partitions in turn, the next one each time.
    static SPREAD: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Makes the calling thread's pushes go to every partition in turn instead of its own (B31).
pub(super) fn spread_pushes() {
    SPREAD.with(|s| s.set(Some(home())));
}

impl FreeLists {
    /// All `capacity` frames free, in frame order: partition i holds the i-th contiguous range,
    /// popped lowest frame first (a tree built by one thread in main-memory mode lies in
    /// ascending frames). A range is a counter, not a list: the lists hold only frames given
    /// back, so a large pool costs memory for the frames it used (B30).
    pub(super) fn new(capacity: usize) -> FreeLists {
        let n = (capacity / FRAMES_PER_PARTITION)
            .clamp(1, MAX_PARTITIONS)
            .next_power_of_two()
            .min(MAX_PARTITIONS);
        let per = capacity.div_ceil(n);
        let parts = (0..n)
            .map(|i| {
                let lo = (i * per).min(capacity);
                let hi = ((i + 1) * per).min(capacity);
                Partition { freed: Mutex::new(Vec::new()), start: lo, next: AtomicUsize::new(lo), end: hi }
            })
            .collect();
        FreeLists { parts }
    }

    /// Takes a free frame: from the caller's partition, else from the next non-empty one. In a
    /// partition, the frame given back last comes first, then the lowest never handed out.
    pub(super) fn pop(&self) -> Option<FrameId> {
        let n = self.parts.len();
        let h = home();
        (0..n).find_map(|i| self.parts[(h + i) & (n - 1)].pop())
    }

    /// The frames handed out at least once, as ranges in frame order: every other frame is free
    /// and its descriptor as the pool made it (B4), so scans of the descriptors skip it. A frame
    /// handed out while the caller reads is in the ranges or not.
    pub(super) fn handed_out(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.parts.iter().map(|p| p.start..p.next.load(Acquire))
    }

    /// Gives a frame back, to the caller's partition (popped next by this thread), or, on a
    /// thread that spreads its pushes (B31), to the next partition in turn.
    pub(super) fn push(&self, f: FrameId) {
        let n = self.parts.len();
        let at = SPREAD.with(|s| match s.get() {
            None => home(),
            Some(i) => {
                s.set(Some(i.wrapping_add(1)));
                i
            }
        });
        self.parts[at & (n - 1)].freed.lock().push(f);
    }

    /// Partitions (for tests).
    #[cfg(test)]
    pub(super) fn partitions(&self) -> usize {
        self.parts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn b30_every_frame_is_handed_out_once_in_frame_order_by_one_thread() {
        for capacity in [16, 1000, 5000, 40_000] {
            let lists = FreeLists::new(capacity);
            let got: Vec<u32> = std::iter::from_fn(|| lists.pop()).map(|f| f.0).collect();
            assert_eq!(got.len(), capacity);
            assert_eq!(got.iter().copied().collect::<HashSet<_>>().len(), capacity, "a frame twice");
            // The own partition first, then the others in turn: ascending within each.
            let sorted = {
                let mut s = got.clone();
                s.sort_unstable();
                s
            };
            assert_eq!(sorted, (0..capacity as u32).collect::<Vec<_>>());
            if lists.partitions() == 1 {
                assert_eq!(got, sorted, "one partition pops in frame order");
            }
        }
    }

    #[test]
    fn b30_frames_pushed_by_many_threads_are_all_found_again() {
        let lists = std::sync::Arc::new(FreeLists::new(16 * 1024));
        assert_eq!(lists.partitions(), MAX_PARTITIONS);
        let taken: Vec<FrameId> = std::iter::from_fn(|| lists.pop()).collect();
        let chunks: Vec<Vec<FrameId>> = taken.chunks(1000).map(<[FrameId]>::to_vec).collect();
        std::thread::scope(|s| {
            for c in chunks {
                let lists = &lists;
                s.spawn(move || c.into_iter().for_each(|f| lists.push(f)));
            }
        });
        let mut back: Vec<u32> = std::iter::from_fn(|| lists.pop()).map(|f| f.0).collect();
        back.sort_unstable();
        assert_eq!(back, (0..16 * 1024).collect::<Vec<_>>());
    }
}

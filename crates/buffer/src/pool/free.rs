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

/// One partition, alone on its cache lines: a stack of the frames freed to it.
#[repr(align(128))]
struct Partition {
    freed: Mutex<Vec<FrameId>>,
}

/// The free frames, in partitions (B30). A thread pushes to and pops from its own partition
/// (chosen once per thread); when that is empty it takes the lowest frame never handed out, and
/// only when every frame was handed out once does it take from the other partitions. Each
/// partition is a stack: the frame freed last is reused first, while its memory is still cached.
pub(super) struct FreeLists {
    parts: Box<[Partition]>,
    /// The lowest frame never handed out: frames `0..next` were handed out at least once, the
    /// rest never (it may pass `capacity` by the threads that raced for the last frames).
    next: Fresh,
    capacity: usize,
}

/// The counter of frames never handed out, alone on its cache lines: misses write it only while
/// the pool fills, and read it, unchanged, after.
#[repr(align(128))]
struct Fresh(AtomicUsize);

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
    /// All `capacity` frames free, never handed out: they come out lowest first, whichever
    /// thread asks (a tree built by one thread in main-memory mode lies in ascending frames, and
    /// the frames in use stay dense from 0, which the replacement policies' memory relies on,
    /// replacement S1). The frames never handed out are a counter, not a list: the lists hold
    /// only frames given back, so a large pool costs memory for the frames it used (B30a).
    pub(super) fn new(capacity: usize) -> FreeLists {
        let n = (capacity / FRAMES_PER_PARTITION)
            .clamp(1, MAX_PARTITIONS)
            .next_power_of_two()
            .min(MAX_PARTITIONS);
        let parts = (0..n).map(|_| Partition { freed: Mutex::new(Vec::new()) }).collect();
        FreeLists { parts, next: Fresh(AtomicUsize::new(0)), capacity }
    }

    /// Takes a free frame: the caller's partition's last frame given back, else the lowest frame
    /// never handed out, else the last one given back to the next non-empty partition.
    pub(super) fn pop(&self) -> Option<FrameId> {
        let n = self.parts.len();
        let h = home();
        self.parts[h & (n - 1)]
            .freed
            .lock()
            .pop()
            .or_else(|| self.fresh())
            .or_else(|| (1..n).find_map(|i| self.parts[(h + i) & (n - 1)].freed.lock().pop()))
    }

    /// The lowest frame never handed out, if any. Once all were, a load that finds the counter
    /// at the capacity, so a full pool's misses do not write its cache line.
    fn fresh(&self) -> Option<FrameId> {
        if self.next.0.load(Relaxed) >= self.capacity {
            return None;
        }
        // Release: a scan that sees the frame handed out sees its descriptor's writes made
        // before this (none: an unused descriptor is all zero, B4).
        let f = self.next.0.fetch_add(1, Release);
        (f < self.capacity).then_some(FrameId(f as u32))
    }

    /// The frames handed out at least once, as ranges in frame order: every other frame is free
    /// and its descriptor as the pool made it (B4), so scans of the descriptors skip it. A frame
    /// handed out while the caller reads is in the ranges or not.
    pub(super) fn handed_out(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        std::iter::once(0..self.next.0.load(Acquire).min(self.capacity))
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
            // Never handed out, they come lowest first, however many partitions there are.
            assert_eq!(got, (0..capacity as u32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn b30_frames_first_handed_out_to_many_threads_are_the_lowest() {
        // Each thread has its own home partition; whichever thread asks, a frame never handed
        // out is the lowest such frame, so the frames in use stay dense from 0.
        let capacity = 1 << 20;
        let lists = FreeLists::new(capacity);
        assert_eq!(lists.partitions(), MAX_PARTITIONS);
        let mut taken: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..MAX_PARTITIONS)
                .map(|_| s.spawn(|| (0..100).map(|_| lists.pop().unwrap().0).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        taken.sort_unstable();
        let n = 100 * MAX_PARTITIONS as u32;
        assert_eq!(taken, (0..n).collect::<Vec<_>>(), "frames beyond the first {n} were handed out");
        let used: Vec<Range<usize>> = lists.handed_out().filter(|r| !r.is_empty()).collect();
        assert_eq!(used, vec![0..n as usize]);
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

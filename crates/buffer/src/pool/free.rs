//! Free frames (B13, B30): partitioned free lists, so that misses on many threads do not meet on
//! one lock.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use swizzledb_sync::FrameId;

/// Frames per partition below which the pool keeps one list: a small pool gains nothing from
/// partitions, and one list keeps its frame order exact (the race tests rely on it).
const FRAMES_PER_PARTITION: usize = 1024;

/// Partitions at most (a power of two).
const MAX_PARTITIONS: usize = 16;

/// One partition, alone on its cache lines.
#[repr(align(128))]
struct Partition(Mutex<Vec<FrameId>>);

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
    /// ascending frames).
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
                Partition(Mutex::new((lo..hi).rev().map(|f| FrameId(f as u32)).collect()))
            })
            .collect();
        FreeLists { parts }
    }

    /// Takes a free frame: from the caller's partition, else from the next non-empty one.
    pub(super) fn pop(&self) -> Option<FrameId> {
        let n = self.parts.len();
        let h = home();
        (0..n).find_map(|i| self.parts[(h + i) & (n - 1)].0.lock().pop())
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
        self.parts[at & (n - 1)].0.lock().push(f);
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

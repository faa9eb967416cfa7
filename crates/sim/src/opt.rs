//! Belady's OPT (MIN): on a miss with every frame full, evict the resident page whose next
//! reference lies farthest in the future (never referenced again counts as farthest).

use crate::pool::Counts;
use crate::trace::Trace;
use std::collections::BinaryHeap;

/// "Never referenced again".
pub const NEVER: u32 = u32::MAX;

/// For every position of a trace, the position of the next reference to the same page, or
/// [`NEVER`]. Computed in one backward pass; shared by the OPT runs of every cache size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextUse(Vec<u32>);

impl NextUse {
    /// Next-use times of `trace`.
    #[must_use]
    pub fn new(trace: &Trace) -> NextUse {
        let mut last = vec![NEVER; trace.page_slots() as usize];
        let mut next = vec![NEVER; trace.len()];
        // Positions fit u32 and stay below NEVER: a trace holds at most MAX_REFS references.
        for (i, &page) in trace.refs().iter().enumerate().rev() {
            next[i] = last[page as usize];
            last[page as usize] = i as u32;
        }
        NextUse(next)
    }

    /// The next-use time of each position.
    #[must_use]
    pub fn times(&self) -> &[u32] {
        &self.0
    }
}

/// Plays `trace` under OPT with `capacity` frames. `next` must be `NextUse::new(trace)`.
///
/// The resident pages sit in a max-heap keyed by (next use, page). A hit pushes the page's new
/// key and leaves the old one behind; the old key is recognized as stale when popped, because it
/// no longer equals the page's current next use (a page's next use only grows). The heap is
/// purged of stale keys whenever it holds more than twice the capacity, so it stays O(capacity)
/// and the purges cost O(1) per reference, amortized.
///
/// # Panics
/// If `capacity` is 0 or `next` belongs to another trace.
#[must_use]
pub fn opt(trace: &Trace, next: &NextUse, capacity: u32) -> Counts {
    assert!(capacity > 0, "OPT needs at least one frame");
    assert_eq!(next.0.len(), trace.len(), "next-use times of another trace");
    let key = |next_use: u32, page: u32| (u64::from(next_use) << 32) | u64::from(page);
    // The resident page's next use; 0 when not resident (a next use is always after a position,
    // so never 0).
    let mut current = vec![0u32; trace.page_slots() as usize];
    let mut heap: BinaryHeap<u64> = BinaryHeap::with_capacity(2 * capacity as usize + 1);
    let mut resident = 0u32;
    let mut misses = 0u64;
    for (&page, &next_use) in trace.refs().iter().zip(&next.0) {
        let p = page as usize;
        if current[p] == 0 {
            misses += 1;
            if resident == capacity {
                loop {
                    let top = heap.pop().expect("a full cache has a valid key for every resident page");
                    let (n, victim) = ((top >> 32) as u32, top as u32);
                    if current[victim as usize] == n {
                        current[victim as usize] = 0;
                        break;
                    }
                }
            } else {
                resident += 1;
            }
        }
        current[p] = next_use;
        heap.push(key(next_use, page));
        if heap.len() > 2 * capacity as usize + 16 {
            heap.retain(|&k| current[(k as u32) as usize] == (k >> 32) as u32);
        }
    }
    Counts { requests: trace.len() as u64, misses }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s4_next_use_by_hand() {
        let t = Trace::new(vec![0, 1, 0, 2, 1, 0], 3).unwrap();
        assert_eq!(NextUse::new(&t).times(), &[2, 4, 5, NEVER, NEVER, NEVER]);
    }

    #[test]
    fn s4_classic_string_with_three_frames_by_hand() {
        // 7 0 1 2 0 3 0 4 2 3 0 3 2 1 2 0 1 7 0 1: 9 faults under OPT (Silberschatz et al.).
        let t = Trace::new(crate::pool::tests_support::CLASSIC.to_vec(), 8).unwrap();
        assert_eq!(opt(&t, &NextUse::new(&t), 3), Counts { requests: 20, misses: 9 });
    }

    #[test]
    fn s4_long_runs_of_hits_keep_the_result_exact() {
        // A long run of hits on a small cache leaves many stale keys (purged along the way).
        let refs: Vec<u32> = (0..10_000).map(|i| i % 3).chain([3, 0, 1, 2]).collect();
        let t = Trace::new(refs, 4).unwrap();
        // 3 cold, then page 3 evicts one page that is referenced again, which misses once more.
        assert_eq!(opt(&t, &NextUse::new(&t), 3).misses, 5);
    }
}

//! LRU stack distances (Mattson et al. 1970) and the LRU miss-ratio curve for every size at once.
//!
//! The *stack distance* of a reference is the position of its page in the LRU stack just before
//! the reference: 1 if it is the most recently used page, and so on; a page never seen before
//! has an infinite distance (a cold miss). LRU with `c` frames hits exactly the references of
//! distance at most `c`, because LRU's content with `c` frames is always the top `c` pages of the
//! stack (the inclusion property). So one histogram of distances gives LRU's misses for every
//! cache size.
//!
//! The distance of a reference at time `i` whose page was last referenced at time `j` is one plus
//! the number of distinct pages referenced in between, that is, the number of times in `(j, i)`
//! that are the *latest* reference of their page. A Fenwick tree over time positions marks those
//! times; each reference costs one prefix sum and two updates, O(log n).

use crate::trace::Trace;

/// "Not referenced yet".
const NONE: u32 = u32::MAX;

/// The stack-distance histogram of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackDistances {
    /// `counts[d - 1]`: references at distance `d`.
    counts: Vec<u64>,
    /// `hits_within[c]`: references at distance at most `c` (LRU hits with `c` frames).
    hits_within: Vec<u64>,
    cold: u64,
    requests: u64,
}

impl StackDistances {
    /// The histogram of `trace`.
    #[must_use]
    pub fn new(trace: &Trace) -> StackDistances {
        let n = trace.len();
        let mut tree = Fenwick::new(n);
        let mut last = vec![NONE; trace.page_slots() as usize];
        let mut counts = vec![0u64; trace.distinct_pages() as usize];
        let mut marked = 0u32;
        let mut cold = 0;
        for (i, &page) in trace.refs().iter().enumerate() {
            let j = last[page as usize];
            if j == NONE {
                cold += 1;
            } else {
                // Marked times are all before i, so those after j are `marked - prefix(j)`.
                let between = marked - tree.prefix(j as usize);
                counts[between as usize] += 1;
                tree.sub_one(j as usize);
                marked -= 1;
            }
            tree.add_one(i);
            marked += 1;
            last[page as usize] = i as u32;
        }
        let mut hits_within = Vec::with_capacity(counts.len() + 1);
        hits_within.push(0);
        let mut total = 0;
        for &c in &counts {
            total += c;
            hits_within.push(total);
        }
        StackDistances { counts, hits_within, cold, requests: n as u64 }
    }

    /// References whose page was never referenced before (infinite distance).
    #[must_use]
    pub fn cold(&self) -> u64 {
        self.cold
    }

    /// All references.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// `(distance, references)` for every finite distance that occurs, shortest first.
    pub fn histogram(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i as u64 + 1, c))
    }

    /// The misses of LRU with `cache_pages` frames: the cold misses and every reference at a
    /// distance above `cache_pages`.
    #[must_use]
    pub fn lru_misses(&self, cache_pages: u64) -> u64 {
        let within = usize::try_from(cache_pages).unwrap_or(usize::MAX).min(self.counts.len());
        self.requests - self.hits_within[within]
    }
}

/// A Fenwick (binary indexed) tree of counts over positions `0..n`.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    fn add_one(&mut self, pos: usize) {
        let mut i = pos + 1;
        while i < self.0.len() {
            self.0[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    fn sub_one(&mut self, pos: usize) {
        let mut i = pos + 1;
        while i < self.0.len() {
            self.0[i] -= 1;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum over positions `0..=pos`.
    fn prefix(&self, pos: usize) -> u32 {
        let mut i = pos + 1;
        let mut sum = 0;
        while i > 0 {
            sum += self.0[i];
            i &= i - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_by_hand() {
        // a b c b a a d c: distances inf inf inf 2 3 1 inf 4.
        let t = Trace::new(vec![0, 1, 2, 1, 0, 0, 3, 2], 4).unwrap();
        let s = StackDistances::new(&t);
        assert_eq!(s.cold(), 4);
        assert_eq!(s.histogram().collect::<Vec<_>>(), vec![(1, 1), (2, 1), (3, 1), (4, 1)]);
        assert_eq!((0..=5).map(|c| s.lru_misses(c)).collect::<Vec<_>>(), vec![8, 7, 6, 5, 4, 4]);
        assert_eq!(s.lru_misses(u64::MAX), 4);
    }

    #[test]
    fn classic_string_lru_faults_by_hand() {
        let t = Trace::new(crate::pool::tests_support::CLASSIC.to_vec(), 8).unwrap();
        assert_eq!(StackDistances::new(&t).lru_misses(3), 12);
    }

    #[test]
    fn empty_trace() {
        let s = StackDistances::new(&Trace::new(Vec::new(), 0).unwrap());
        assert_eq!((s.requests(), s.cold(), s.lru_misses(10)), (0, 0, 0));
        assert_eq!(s.histogram().count(), 0);
    }
}

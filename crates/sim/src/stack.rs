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
//! times; each reference costs one prefix sum and two updates. The tree has `2 d + 64` slots for
//! `d` distinct pages rather than one per reference: when the slots run out, the marked ones (at
//! most `d`) are renumbered in order to the front. This keeps the tree small enough for the
//! caches and costs O(1) per reference, amortized; a reference costs O(log d).

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
        let distinct = trace.distinct_pages() as usize;
        let mut counts = vec![0u64; distinct];
        // Slots stand for times, renumbered by `compact` whenever they run out; at most
        // `distinct` slots are marked, so there is always room for `distinct + 1` more.
        let slots = 2 * distinct + 64;
        let mut tree = Fenwick::new(slots);
        let mut page_at = vec![NONE; slots];
        let mut last = vec![NONE; trace.page_slots() as usize];
        let mut next_slot = 0usize;
        let mut marked = 0u32;
        let mut cold = 0;
        for &page in trace.refs() {
            let j = last[page as usize];
            if j == NONE {
                cold += 1;
            } else {
                // Marked slots are all before the next one, so those after j are
                // `marked - prefix(j)`.
                let between = marked - tree.prefix(j as usize);
                counts[between as usize] += 1;
                tree.sub_one(j as usize);
                page_at[j as usize] = NONE;
                marked -= 1;
            }
            if next_slot == slots {
                next_slot = compact(&mut page_at, &mut last, &mut tree);
            }
            tree.add_one(next_slot);
            page_at[next_slot] = page;
            last[page as usize] = next_slot as u32;
            next_slot += 1;
            marked += 1;
        }
        let mut hits_within = Vec::with_capacity(counts.len() + 1);
        hits_within.push(0);
        let mut total = 0;
        for &c in &counts {
            total += c;
            hits_within.push(total);
        }
        StackDistances { counts, hits_within, cold, requests: trace.len() as u64 }
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

/// Moves the marked slots to `0..marked`, keeping their order, and returns the first free slot.
/// `last` and the tree follow. O(slots), once every `slots - marked` references.
fn compact(page_at: &mut [u32], last: &mut [u32], tree: &mut Fenwick) -> usize {
    let mut to = 0;
    for from in 0..page_at.len() {
        let page = page_at[from];
        if page != NONE {
            page_at[from] = NONE;
            page_at[to] = page;
            last[page as usize] = to as u32;
            to += 1;
        }
    }
    tree.set_first_ones(to);
    to
}

/// A Fenwick (binary indexed) tree of counts over positions `0..n`.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    /// Resets the tree to 1 at positions `0..m` and 0 elsewhere, in O(n): node `i` (from 1)
    /// covers positions `i - lowbit(i) .. i`.
    fn set_first_ones(&mut self, m: usize) {
        for i in 1..self.0.len() {
            let low = i - (i & i.wrapping_neg());
            self.0[i] = (i.min(m).saturating_sub(low)) as u32;
        }
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
    fn s5_distances_by_hand() {
        // a b c b a a d c: distances inf inf inf 2 3 1 inf 4.
        let t = Trace::new(vec![0, 1, 2, 1, 0, 0, 3, 2], 4).unwrap();
        let s = StackDistances::new(&t);
        assert_eq!(s.cold(), 4);
        assert_eq!(s.histogram().collect::<Vec<_>>(), vec![(1, 1), (2, 1), (3, 1), (4, 1)]);
        assert_eq!((0..=5).map(|c| s.lru_misses(c)).collect::<Vec<_>>(), vec![8, 7, 6, 5, 4, 4]);
        assert_eq!(s.lru_misses(u64::MAX), 4);
    }

    #[test]
    fn s5_classic_string_lru_faults_by_hand() {
        let t = Trace::new(crate::pool::tests_support::CLASSIC.to_vec(), 8).unwrap();
        assert_eq!(StackDistances::new(&t).lru_misses(3), 12);
    }

    #[test]
    fn s5_distances_survive_many_compactions() {
        // A loop over 3 pages: after the cold misses every distance is 3. With 70 slots the
        // slots are renumbered about every 67 references.
        let t = Trace::new((0..10_000).map(|i| i % 3).collect(), 3).unwrap();
        let s = StackDistances::new(&t);
        assert_eq!(s.histogram().collect::<Vec<_>>(), vec![(3, 9_997)]);
        // A loop of 2 pages with a third page every 10 references.
        let refs: Vec<u32> = (0..5_000).map(|i| if i % 10 == 9 { 2 } else { i % 2 }).collect();
        let s = StackDistances::new(&Trace::new(refs.clone(), 3).unwrap());
        let mut naive = [0u64; 4];
        let mut stack: Vec<u32> = Vec::new();
        for &p in &refs {
            if let Some(i) = stack.iter().position(|&q| q == p) {
                naive[i + 1] += 1;
                stack.remove(i);
            }
            stack.insert(0, p);
        }
        let expected: Vec<(u64, u64)> =
            (1..4).filter(|&d| naive[d] > 0).map(|d| (d as u64, naive[d])).collect();
        assert_eq!(s.histogram().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn fenwick_reset_matches_ones_added_one_by_one() {
        for n in [1usize, 2, 7, 16, 33] {
            for m in 0..=n {
                let mut a = Fenwick::new(n);
                a.set_first_ones(m);
                let mut b = Fenwick::new(n);
                (0..m).for_each(|p| b.add_one(p));
                assert_eq!(a.0, b.0, "n {n} m {m}");
            }
        }
    }

    #[test]
    fn s5_empty_trace() {
        let s = StackDistances::new(&Trace::new(Vec::new(), 0).unwrap());
        assert_eq!((s.requests(), s.cold(), s.lru_misses(10)), (0, 0, 0));
        assert_eq!(s.histogram().count(), 0);
    }
}

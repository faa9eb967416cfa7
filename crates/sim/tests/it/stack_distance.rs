//! The stack-distance LRU curve against the simulated `lru` policy (rule S5). Agreement at every
//! size checks both: the histogram and the policy played by the pool.

use proptest::prelude::*;
use swizzledb_sim::{PolicyKind, SimPool, StackDistances, Trace};

/// Distances the slow way: the position of the page in an explicit LRU stack.
fn naive_distances(refs: &[u32]) -> (Vec<u64>, u64) {
    let mut stack: Vec<u32> = Vec::new(); // most recent first
    let mut hist = Vec::new();
    let mut cold = 0;
    for &p in refs {
        match stack.iter().position(|&q| q == p) {
            Some(i) => {
                if hist.len() <= i {
                    hist.resize(i + 1, 0);
                }
                hist[i] += 1;
                stack.remove(i);
            }
            None => cold += 1,
        }
        stack.insert(0, p);
    }
    (hist, cold)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn s5_stack_curve_equals_simulated_lru_at_every_size(
        raw in prop::collection::vec((any::<bool>(), 0u32..100), 0..1_500),
        hot in 1u32..20,
    ) {
        let refs = raw.into_iter().map(|(h, p)| if h { p % hot } else { p }).collect();
        let t = Trace::new(refs, 100).unwrap();
        let s = StackDistances::new(&t);
        prop_assert_eq!(s.requests(), t.len() as u64);
        prop_assert_eq!(s.cold(), u64::from(t.distinct_pages()));
        for c in 1..=t.distinct_pages() + 1 {
            let lru = SimPool::for_kind(PolicyKind::Lru, c, 100, 0).run(t.refs()).unwrap();
            prop_assert_eq!(s.lru_misses(u64::from(c)), lru.misses, "size {}", c);
        }
    }

    #[test]
    fn s5_histogram_matches_an_explicit_stack(refs in prop::collection::vec(0u32..30, 0..400)) {
        let t = Trace::new(refs, 30).unwrap();
        let s = StackDistances::new(&t);
        let (hist, cold) = naive_distances(t.refs());
        let expected: Vec<(u64, u64)> =
            hist.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i as u64 + 1, c)).collect();
        prop_assert_eq!(s.histogram().collect::<Vec<_>>(), expected);
        prop_assert_eq!(s.cold(), cold);
    }
}

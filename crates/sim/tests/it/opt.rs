//! Belady's OPT against a naive reference and an exhaustive search, and as the floor of every
//! policy (rules S2 and S4 of the crate README).

use proptest::prelude::*;
use swizzledb_sim::{analyze, below_opt, opt, Counts, NextUse, Plan, PolicyKind, SimPool, Subject, Trace};

/// OPT the slow way: on a miss with a full cache, look ahead from the current position for
/// every resident page and evict the one seen last (or never), lowest page on ties.
fn naive_opt(refs: &[u32], capacity: usize) -> u64 {
    let mut resident: Vec<u32> = Vec::new();
    let mut misses = 0;
    for (i, &page) in refs.iter().enumerate() {
        if resident.contains(&page) {
            continue;
        }
        misses += 1;
        if resident.len() == capacity {
            let next_use = |p: u32| refs[i + 1..].iter().position(|&q| q == p).unwrap_or(usize::MAX);
            let victim = *resident.iter().max_by_key(|&&p| (next_use(p), std::cmp::Reverse(p))).unwrap();
            resident.retain(|&p| p != victim);
        }
        resident.push(page);
    }
    misses
}

/// The fewest misses of any demand-paging schedule: tries every victim at every eviction.
fn exhaustive_min(refs: &[u32], capacity: usize, resident: &mut Vec<u32>) -> u64 {
    let Some((&page, rest)) = refs.split_first() else { return 0 };
    if resident.contains(&page) {
        return exhaustive_min(rest, capacity, resident);
    }
    if resident.len() < capacity {
        resident.push(page);
        let m = 1 + exhaustive_min(rest, capacity, resident);
        resident.pop();
        return m;
    }
    let mut best = u64::MAX;
    for i in 0..resident.len() {
        let old = std::mem::replace(&mut resident[i], page);
        best = best.min(1 + exhaustive_min(rest, capacity, resident));
        resident[i] = old;
    }
    best
}

fn trace(refs: Vec<u32>, pages: u32) -> Trace {
    Trace::new(refs, pages).unwrap()
}

#[test]
fn s4_classic_string_by_hand() {
    // Silberschatz et al.: with 3 frames OPT faults 9 times, LRU 12, FIFO 15.
    let t = trace(vec![7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1], 8);
    assert_eq!(opt(&t, &NextUse::new(&t), 3), Counts { requests: 20, misses: 9 });
    assert_eq!(naive_opt(t.refs(), 3), 9);
    assert_eq!(exhaustive_min(t.refs(), 3, &mut Vec::new()), 9);
    for (kind, faults) in [(PolicyKind::Lru, 12), (PolicyKind::Fifo, 15)] {
        assert_eq!(SimPool::for_kind(kind, 3, 8, 0).run(t.refs()).unwrap().misses, faults, "{kind}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn s4_opt_matches_the_naive_reference(
        refs in prop::collection::vec(0u32..12, 0..300),
        capacity in 1u32..8,
    ) {
        let t = trace(refs, 12);
        let got = opt(&t, &NextUse::new(&t), capacity);
        prop_assert_eq!(got.requests, t.len() as u64);
        prop_assert_eq!(got.misses, naive_opt(t.refs(), capacity as usize));
    }

    #[test]
    fn s4_opt_is_the_true_minimum_on_tiny_traces(
        refs in prop::collection::vec(0u32..5, 0..13),
        capacity in 1u32..4,
    ) {
        let t = trace(refs, 5);
        let best = exhaustive_min(t.refs(), capacity as usize, &mut Vec::new());
        prop_assert_eq!(opt(&t, &NextUse::new(&t), capacity).misses, best);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every policy of `PolicyKind::all()`, whatever it holds today, on locality-rich traces
    /// (a hot subset and a wider range) and cache sizes from 1 frame to all pages.
    #[test]
    fn s4_opt_is_the_floor_of_every_policy(
        raw in prop::collection::vec((any::<bool>(), 0u32..64), 1..2_000),
        hot in 1u32..16,
        capacity in 1u32..70,
        seed in any::<u64>(),
    ) {
        let refs = raw.into_iter().map(|(h, p)| if h { p % hot } else { p }).collect();
        let t = trace(refs, 64);
        let floor = opt(&t, &NextUse::new(&t), capacity).misses;
        for kind in PolicyKind::all() {
            let got = SimPool::for_kind(kind, capacity, 64, seed).run(t.refs()).unwrap();
            prop_assert!(floor <= got.misses, "{} had {} misses, below OPT's {}", kind, got.misses, floor);
            prop_assert!(got.misses >= u64::from(t.distinct_pages()));
        }
    }
}

/// The parallel runner gives the same counts as sequential runs, and `below_opt` finds nothing.
#[test]
fn s4_parallel_analysis_matches_sequential_runs() {
    let t: Trace = "zipf:0.8@60%+loop:300@20%+scan:50"
        .parse::<swizzledb_sim::Pattern>()
        .unwrap()
        .generate(2_000, 30_000, 11)
        .unwrap();
    let sizes = vec![1, 10, 100, 250, 1_000, 5_000];
    let subjects = swizzledb_sim::all_subjects();
    let plan =
        Plan { subjects: subjects.clone(), sizes: sizes.clone(), stack_distances: true, seed: 3, threads: 3 };
    let a = analyze(&t, &plan).unwrap();
    assert_eq!(a.outcomes.len(), subjects.len() * sizes.len());
    assert!(below_opt(&a.outcomes).is_empty());
    let next = NextUse::new(&t);
    for o in &a.outcomes {
        let frames = swizzledb_sim::effective_frames(&t, o.cache_pages);
        let expected = match o.subject {
            Subject::Opt => opt(&t, &next, frames),
            Subject::Policy(kind) => {
                SimPool::for_kind(kind, frames, t.page_slots(), 3).run(t.refs()).unwrap()
            }
        };
        assert_eq!(o.counts, expected, "{} at {}", o.subject, o.cache_pages);
    }
    // Past the distinct pages only cold misses remain, for every subject.
    let distinct = u64::from(t.distinct_pages());
    for o in a.outcomes.iter().filter(|o| o.cache_pages >= distinct) {
        assert_eq!(o.counts.misses, distinct, "{}", o.subject);
    }
    let stack = a.stack.unwrap();
    for o in a.outcomes.iter().filter(|o| o.subject == Subject::Policy(PolicyKind::Lru)) {
        assert_eq!(stack.lru_misses(o.cache_pages), o.counts.misses);
    }
}

#[test]
fn s4_below_opt_reports_a_policy_under_the_floor() {
    let c = |misses| Counts { requests: 10, misses };
    let outcomes = [
        swizzledb_sim::Outcome {
            subject: Subject::Opt,
            cache_pages: 4,
            counts: c(5),
            elapsed: Default::default(),
        },
        swizzledb_sim::Outcome {
            subject: Subject::Policy(PolicyKind::Lru),
            cache_pages: 4,
            counts: c(4),
            elapsed: Default::default(),
        },
        swizzledb_sim::Outcome {
            subject: Subject::Policy(PolicyKind::Fifo),
            cache_pages: 4,
            counts: c(5),
            elapsed: Default::default(),
        },
        swizzledb_sim::Outcome {
            subject: Subject::Policy(PolicyKind::Lru),
            cache_pages: 8,
            counts: c(1),
            elapsed: Default::default(),
        },
    ];
    let below = below_opt(&outcomes);
    assert_eq!(below.len(), 1);
    assert_eq!(below[0].subject, Subject::Policy(PolicyKind::Lru));
    assert_eq!(below[0].cache_pages, 4);
}

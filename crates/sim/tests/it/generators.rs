//! Synthetic traces: determinism, ranges and shapes (rule S7).

use swizzledb_sim::{Component, GenError, Pattern};

fn pattern(spec: &str) -> Pattern {
    spec.parse().unwrap()
}

const ALL: [&str; 7] = [
    "uniform",
    "zipf:0.9",
    "scan",
    "scan:7",
    "loop:40",
    "drift:40:500",
    "zipf:1.2@50%+scan@25%+drift:20:100",
];

#[test]
fn s7_same_seed_same_trace_other_seed_other_trace() {
    for spec in ALL {
        let p = pattern(spec);
        let a = p.generate(500, 5_000, 9).unwrap();
        assert_eq!(a, p.generate(500, 5_000, 9).unwrap(), "{spec}");
        assert_eq!(a.refs(), &p.stream(500, 9).unwrap().take(5_000).collect::<Vec<_>>()[..]);
        let deterministic = spec == "scan" || spec == "loop:40";
        assert_eq!(a == p.generate(500, 5_000, 10).unwrap(), deterministic, "{spec}");
    }
}

#[test]
fn s7_ids_stay_below_the_page_count() {
    for spec in ALL {
        for pages in [40u32, 41, 1_000] {
            let t = pattern(spec).generate(pages, 20_000, 1).unwrap();
            assert_eq!(t.page_slots(), pages);
            assert!(t.refs().iter().all(|&p| p < pages), "{spec} over {pages}");
        }
    }
    // A single page: every component can only name page 0.
    for spec in ["uniform", "zipf:2", "scan", "scan:1", "loop:1", "drift:1:3"] {
        assert!(pattern(spec).generate(1, 100, 4).unwrap().refs().iter().all(|&p| p == 0), "{spec}");
    }
}

#[test]
fn s7_loop_and_scan_strings_exactly() {
    let l = pattern("loop:3").generate(10, 8, 0).unwrap();
    assert_eq!(l.refs(), &[0, 1, 2, 0, 1, 2, 0, 1]);
    let s = pattern("scan").generate(4, 10, 0).unwrap();
    assert_eq!(s.refs(), &[0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
    // Runs of 3 consecutive pages (wrapping), each from a random start.
    let r = pattern("scan:3").generate(10, 300, 5).unwrap();
    for run in r.refs().chunks(3) {
        assert_eq!(run[1], (run[0] + 1) % 10);
        assert_eq!(run[2], (run[0] + 2) % 10);
    }
}

#[test]
fn s7_zipf_skew_is_roughly_right() {
    // With s = 1 over n pages, page r - 1 has probability 1 / (r * H_n).
    let (n, refs) = (1_000u32, 400_000usize);
    let t = pattern("zipf:1").generate(n, refs, 17).unwrap();
    let mut count = vec![0u64; n as usize];
    for &p in t.refs() {
        count[p as usize] += 1;
    }
    let h: f64 = (1..=n).map(|r| 1.0 / f64::from(r)).sum();
    for r in [1u32, 2, 3, 10, 100] {
        let expected = refs as f64 / (f64::from(r) * h);
        let got = count[r as usize - 1] as f64;
        // Well beyond 5 standard deviations of a binomial count (sqrt(expected)) for these sizes.
        assert!((got - expected).abs() < 6.0 * expected.sqrt() + 1.0, "rank {r}: {got} vs {expected:.0}");
    }
    // Monotone in bulk: the first 10 pages draw more than the next 90, as 1/r predicts.
    let head: u64 = count[..10].iter().sum();
    let next: u64 = count[10..100].iter().sum();
    assert!(head > next, "{head} vs {next}");
    // s = 0 is uniform: no page is more than a few times as frequent as expected.
    let u = pattern("zipf:0").generate(10, 100_000, 3).unwrap();
    let mut c = [0u32; 10];
    u.refs().iter().for_each(|&p| c[p as usize] += 1);
    assert!(c.iter().all(|&k| (9_000..11_000).contains(&k)), "{c:?}");
}

#[test]
fn s7_mixture_shares_follow_the_weights() {
    // loop:10 only names pages 0..10; uniform over 1000 pages names them 1% of its time.
    let t = pattern("loop:10@30%+uniform@70%").generate(1_000, 100_000, 2).unwrap();
    let low = t.refs().iter().filter(|&&p| p < 10).count() as f64 / t.len() as f64;
    let expected = 0.3 + 0.7 * 0.01;
    assert!((low - expected).abs() < 0.01, "{low} vs {expected}");
    // The loop keeps its own position across the interleaving. Past its first 100 references the
    // scan is beyond page 10 (and does not wrap before 10,000), so the pages below 10 are the
    // loop's: consecutive modulo 10.
    let mixed = pattern("loop:10@50%+scan@50%").generate(5_000, 2_000, 8).unwrap();
    let loop_refs: Vec<u32> = mixed.refs()[100..].iter().copied().filter(|&p| p < 10).collect();
    assert!(loop_refs.len() > 800, "{}", loop_refs.len());
    assert!(loop_refs.windows(2).all(|w| w[1] == (w[0] + 1) % 10), "{loop_refs:?}");
}

#[test]
fn s7_drift_window_slides_by_a_quarter() {
    // Hot window of 8 pages over 100, sliding by 2 every 50 references.
    let t = pattern("drift:8:50").generate(100, 5_000, 6).unwrap();
    for (i, &p) in t.refs().iter().enumerate() {
        let start = (i as u32 / 50) * 2 % 100;
        let offset = (p + 100 - start) % 100;
        assert!(offset < 8, "reference {i} is page {p}, outside the window from {start}");
    }
    // The window wraps around the last page.
    let w = pattern("drift:4:1").generate(10, 200, 0).unwrap();
    assert!(w.refs().iter().all(|&p| p < 10));
}

#[test]
fn s7_errors_are_typed() {
    assert_eq!(pattern("uniform").generate(0, 1, 0).unwrap_err(), GenError::NoPages);
    assert!(matches!(
        pattern("loop:20").generate(10, 5, 0).unwrap_err(),
        GenError::TooFewPages { needed: 20, pages: 10, .. }
    ));
    assert!(matches!(
        pattern("uniform").generate(10, swizzledb_sim::MAX_REFS + 1, 0).unwrap_err(),
        GenError::TooManyRefs { .. }
    ));
    assert_eq!(Pattern::single(Component::Loop { len: 3 }).to_string(), "loop:3");
}

//! Fix timing (buffer README, B12a): with `LabOptions::time_fixes`, every non-root fix is counted
//! once as a timed hit or miss of its latch mode, with its nanoseconds; without it nothing is.

use swizzledb::{Database, PoolMode, Stats};

fn run(time_fixes: bool, mode: PoolMode) -> Stats {
    let dir = tempfile::tempdir().unwrap();
    // A pool far smaller than the data, so that reads miss and evict.
    let db = Database::builder()
        .mode(mode)
        .pool_bytes(64 * 8192)
        .logging(false)
        .lab(|l| l.time_fixes(time_fixes))
        .create(dir.path().join("t.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0u64..20_000 {
        t.insert(&i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    let before = db.stats();
    for i in (0u64..20_000).step_by(7) {
        assert_eq!(t.get(&i.to_be_bytes()).unwrap().as_deref(), Some(&[7u8; 100][..]));
    }
    let s = db.stats().since(&before);
    db.close().unwrap();
    s
}

#[test]
fn every_miss_is_timed_once_and_hits_never_more_than_counted() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let s = run(true, mode);
        let timed_misses = s.timed_misses_shared + s.timed_misses_exclusive;
        let timed_hits = s.timed_hits_shared + s.timed_hits_exclusive;
        assert!(s.misses > 0, "{mode}: the lookups never missed: {s:?}");
        assert_eq!(timed_misses, s.misses, "{mode}: {s:?}");
        assert!(timed_hits > 0 && timed_hits <= s.hits, "{mode}: {s:?}");
        // Reads latch shared all the way down; every timed fix took at least a nanosecond.
        assert!(s.timed_hits_shared > 0 && s.timed_misses_shared > 0, "{mode}: {s:?}");
        for (n, ns) in [
            (s.timed_hits_shared, s.hit_shared_nanos),
            (s.timed_hits_exclusive, s.hit_exclusive_nanos),
            (s.timed_misses_shared, s.miss_shared_nanos),
            (s.timed_misses_exclusive, s.miss_exclusive_nanos),
        ] {
            assert!(ns >= n, "{mode}: {n} fixes in {ns} ns: {s:?}");
        }
        // A miss reads a page from the file: it takes longer than a hit.
        let per = |ns: u64, n: u64| ns as f64 / n.max(1) as f64;
        assert!(
            per(s.miss_shared_nanos, s.timed_misses_shared) > per(s.hit_shared_nanos, s.timed_hits_shared),
            "{mode}: {s:?}"
        );
    }
}

#[test]
fn without_the_switch_nothing_is_timed() {
    let s = run(false, PoolMode::Swizzling);
    assert!(s.fixes > 0 && s.misses > 0);
    assert_eq!(
        [s.timed_hits_shared, s.timed_hits_exclusive, s.timed_misses_shared, s.timed_misses_exclusive],
        [0; 4]
    );
    assert_eq!(
        [s.hit_shared_nanos, s.hit_exclusive_nanos, s.miss_shared_nanos, s.miss_exclusive_nanos],
        [0; 4]
    );
}

//! B14: Graefe's depth-first sweep evicts the leaves of the cached subtree first, un-swizzling
//! their references, and never a page that still holds swizzled children.

use std::ops::Bound;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Database, PoolMode};

#[test]
fn b14_sweep_evicts_cached_leaves_bottom_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .mode(PoolMode::Swizzling)
        .page_size(4096)
        .pool_bytes(4096 * 4096)
        .create(dir.path().join("sweep.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..40_000u32 {
        t.insert(&i.to_be_bytes(), &[5u8; 60]).unwrap();
    }
    let shape = t.verify().unwrap();
    assert!(shape.height >= 3, "{shape:?}");
    let pool = db.pool();
    let before = pool.resident_pages();
    let s0 = db.stats();
    // Everything is cached and swizzled; sweep away all but a handful of frames.
    let freed = pool.sweep_evict(before).unwrap();
    let s1 = db.stats().since(&s0);
    assert!(freed > shape.leaves / 2, "freed {freed} of {before}");
    assert_eq!(s1.evictions as usize, freed);
    assert_eq!(s1.unswizzles as usize, freed, "every swept page was reached by a swizzled swip");
    assert_eq!(pool.resident_pages(), before - freed);
    // Inner pages go only after all their children: what is left is a connected top of the tree.
    pool.check_invariants().unwrap();
    let shape_after = t.verify().unwrap();
    assert_eq!(shape_after.records, 40_000);
    let n = t.range(Bound::Unbounded, Bound::Unbounded).count();
    assert_eq!(n, 40_000);
}

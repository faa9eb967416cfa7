//! B24: what an optimistic view reads, and that every change under it — an exclusive section,
//! the child's eviction, the frame's reuse — makes its next validation or step fail.

use super::race_tests::{evict_to_front, inner, Owner, COUNT, SWIPS};
use super::view::Step;
use super::*;
use crate::guard::{Exclusive, Shared};
use crate::page::{self, get_u16, get_u64, PageType};
use swizzledb_io::{FaultFs, Vfs};

/// A pool in `mode` with an inner root P (level 1) over a leaf C, and C's page id.
fn tree(mode: PoolMode, tweak: impl FnOnce(&mut PoolConfig)) -> (BufferPool, FrameId, PageId) {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/v")).unwrap();
    let mut config = PoolConfig {
        vfs: Arc::new(fs),
        mode,
        pool_bytes: MIN_FRAMES * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    tweak(&mut config);
    let pool = BufferPool::create(Path::new("/v/db"), &config, Arc::new(Owner)).unwrap();
    let c = {
        let mut g = pool.allocate_page().unwrap();
        let id = g.page_id();
        page::format(&mut g, id, PageType::Leaf, 0);
        id
    };
    let p = inner(&pool, c, 1);
    let root = {
        let g = pool.fix_page::<Exclusive>(p).unwrap();
        pool.make_root(&g);
        g.frame()
    };
    (pool, root, c)
}

/// Fixes C through the root's swip, which swizzles it (B6), and returns C's frame.
fn swizzle_child(pool: &BufferPool, root: FrameId) -> FrameId {
    let mut r = pool.fix_root::<Shared>(root);
    let c = pool.fix_child::<Shared, Shared>(&mut r, SWIPS).unwrap();
    let f = c.frame();
    drop(c);
    assert!(Swip::from_raw(get_u64(&r, SWIPS)).is_some_and(Swip::is_swizzled), "B6: the swip is swizzled");
    f
}

#[test]
fn b24_only_swizzling_modes_without_trace_or_timing_read_optimistically() {
    assert!(tree(PoolMode::Swizzling, |_| ()).0.optimistic_reads());
    assert!(tree(PoolMode::MainMemory, |_| ()).0.optimistic_reads());
    assert!(!tree(PoolMode::Traditional, |_| ()).0.optimistic_reads());
    assert!(!tree(PoolMode::Swizzling, |c| c.optimistic_reads = false).0.optimistic_reads());
    assert!(!tree(PoolMode::Swizzling, |c| c.time_fixes = true).0.optimistic_reads());
}

#[test]
fn b24_a_view_reads_the_latched_bytes_and_zero_out_of_range() {
    let (pool, root, c) = tree(PoolMode::Swizzling, |_| ());
    let v = pool.view_root(root).expect("no writer holds the root");
    let g = pool.fix_root::<Shared>(root);
    assert_eq!(v.u16(COUNT), get_u16(&g, COUNT));
    assert_eq!(v.u64(SWIPS), get_u64(&g, SWIPS));
    assert_eq!(v.u64(SWIPS), Swip::page(c).raw());
    // Unaligned reads are assembled from smaller atomic loads.
    for off in [SWIPS + 1, SWIPS + 3, SWIPS + 4, 7] {
        assert_eq!(v.u64(off), get_u64(&g, off), "u64 at {off}");
        assert_eq!(v.u32(off), u32::from_le_bytes(g[off..off + 4].try_into().unwrap()));
        assert_eq!(v.u16(off), u16::from_le_bytes(g[off..off + 2].try_into().unwrap()));
    }
    for off in [4096, 4095, 4093, usize::MAX - 2] {
        assert_eq!(v.u64(off), 0, "u64 at {off}");
    }
    assert_eq!((v.u8(4096), v.u16(4095), v.u32(4093)), (0, 0, 0));
    drop(g);
    assert!(v.validate(), "a shared latch is no change");
    assert_eq!(pool.stats().optimistic_reads, 1);
}

#[test]
fn b24_an_exclusive_section_fails_the_view() {
    let (pool, root, _) = tree(PoolMode::Swizzling, |_| ());
    let v = pool.view_root(root).unwrap();
    let x = pool.fix_root::<Exclusive>(root);
    assert!(pool.view_root(root).is_none(), "L5: no view while a writer holds the page");
    drop(x);
    assert!(!v.validate());
    assert!(v.lock_shared().is_none(), "B24: latching a changed view fails");
    let again = pool.view_root(root).unwrap();
    let g = again.lock_shared().expect("B24: latching an unchanged view succeeds");
    assert_eq!(g.frame(), root);
}

#[test]
fn b24_steps_follow_swizzled_swips_only() {
    let (pool, root, c) = tree(PoolMode::Swizzling, |_| ());
    let v = pool.view_root(root).unwrap();
    assert!(matches!(v.child(SWIPS), Step::Unswizzled));
    assert!(matches!(v.fix_child::<Shared>(SWIPS), Step::Unswizzled));
    let cf = swizzle_child(&pool, root);
    assert!(matches!(v.child(SWIPS), Step::Retry), "the swizzling changed the parent");
    let v = pool.view_root(root).unwrap();
    let Step::Ready(cv) = v.child(SWIPS) else { panic!("B24: a step through a swizzled swip") };
    assert_eq!((cv.frame(), cv.u64(8)), (cf, c.get()));
    assert!(cv.validate());
    let Step::Ready(g) = v.fix_child::<Exclusive>(SWIPS) else { panic!("B24: a latched step") };
    assert_eq!(g.page_id(), c);
    assert!(!cv.validate(), "the exclusive latch on the child fails the child's view");
}

#[test]
fn b24_a_step_after_the_child_was_evicted_and_its_frame_reused_retries() {
    let (pool, root, c) = tree(PoolMode::Swizzling, |_| ());
    let cf = swizzle_child(&pool, root);
    let v = pool.view_root(root).unwrap();
    let Step::Ready(cv) = v.child(SWIPS) else { panic!("B24: a step through a swizzled swip") };
    // Eviction un-swizzles the parent's swip under its exclusive latch (B13); the frame is
    // then reused for another page.
    evict_to_front(&pool, cf);
    let other = {
        let mut g = pool.allocate_page().unwrap();
        let id = g.page_id();
        page::format(&mut g, id, PageType::Leaf, 0);
        assert_eq!(g.frame(), cf, "precondition: the new page took C's frame");
        id
    };
    assert_ne!(other, c);
    assert!(!v.validate() && !cv.validate(), "L4: both pages changed");
    assert!(matches!(v.child(SWIPS), Step::Retry));
    assert!(matches!(v.fix_child::<Shared>(SWIPS), Step::Retry));
    // A fresh descent sees the page id again.
    assert!(matches!(pool.view_root(root).unwrap().child(SWIPS), Step::Unswizzled));
    pool.check_invariants().unwrap();
}

/// A log that records, at each page load the pool reports (B28), whether the tree's root
/// frame was latched by anyone: a load through `load_child` happens with it unlatched (B32).
#[derive(Default)]
struct LatchProbe {
    pool: std::sync::OnceLock<std::sync::Weak<BufferPool>>,
    root: std::sync::OnceLock<FrameId>,
    loads: Mutex<Vec<(PageId, bool)>>,
}

impl LogFlush for LatchProbe {
    fn flush_to(&self, _lsn: swizzledb_sync::Lsn) -> std::io::Result<()> {
        Ok(())
    }

    fn page_written(&self, _page: PageId, _page_lsn: swizzledb_sync::Lsn) {}

    fn page_loaded(&self, page: PageId, _page_lsn: swizzledb_sync::Lsn) {
        let (Some(pool), Some(&root)) = (self.pool.get().and_then(std::sync::Weak::upgrade), self.root.get())
        else {
            return;
        };
        self.loads.lock().push((page, pool.desc(root).latch.is_latched()));
    }
}

/// The tree of `tree`, with C written and evicted, in an `Arc` with a latch probe as its log.
fn tree_with_c_evicted() -> (Arc<BufferPool>, Arc<LatchProbe>, FrameId, PageId) {
    let probe = Arc::new(LatchProbe::default());
    let log: Arc<dyn LogFlush> = probe.clone();
    let (pool, root, c) = tree(PoolMode::Swizzling, |cfg| cfg.log = Some(log));
    let pool = Arc::new(pool);
    pool.flush().unwrap();
    let cf = pool.fix_page::<Shared>(c).unwrap().frame();
    evict_to_front(&pool, cf);
    assert!(pool.table.get(c).is_none(), "precondition: C is not resident");
    probe.pool.set(Arc::downgrade(&pool)).ok().unwrap();
    probe.root.set(root).ok().unwrap();
    (pool, probe, root, c)
}

#[test]
fn b32_load_child_reads_the_child_with_no_latch_on_the_parent() {
    let (pool, probe, root, c) = tree_with_c_evicted();
    let before = pool.stats();
    let v = pool.view_root(root).unwrap();
    assert!(matches!(v.fix_child::<Shared>(SWIPS), Step::Unswizzled));
    assert!(matches!(v.load_child(SWIPS), Ok(Step::Ready(()))));
    assert_eq!(probe.loads.lock().clone(), vec![(c, false)], "B32: read with the parent unlatched");
    let s = pool.stats().since(&before);
    assert_eq!((s.pages_read, s.misses, s.unlatched_loads), (1, 1, 1), "{s:?}");
    // The view is still valid (nothing changed the parent): the descent goes on latched from
    // it, and the latched step finds C resident, a hit that swizzles it.
    let mut g = v.lock_shared().expect("the parent did not change");
    let child = pool.fix_child::<Shared, Shared>(&mut g, SWIPS).unwrap();
    assert_eq!(child.page_id(), c);
    let cf = child.frame();
    drop((child, g));
    let s = pool.stats().since(&before);
    assert_eq!((s.pages_read, s.swizzles), (1, 1), "no second read: {s:?}");
    // The latched step is the rest of the load's fix: not a second fix, not a hit, and the
    // policy heard only the insert (GCLOCK's counter is still the insert's 0).
    assert_eq!((s.fixes, s.hits, s.misses), (2, 1, 1), "the root's view and one miss: {s:?}");
    assert_eq!(pool.desc(cf).hook.get(), 0, "B32: no hit told to the policy");
    // The next fix of C is a hit again.
    let mut g = pool.fix_root::<Shared>(root);
    drop(pool.fix_child::<Shared, Shared>(&mut g, SWIPS).unwrap());
    drop(g);
    assert_ne!(pool.desc(cf).hook.get(), 0, "a later fix is a hit");
    // A child that is resident already is not read again.
    let v = pool.view_root(root).unwrap();
    let Step::Ready(_) = v.child(SWIPS) else { panic!("C is swizzled now") };
    assert!(matches!(v.load_child(SWIPS), Ok(Step::Retry)), "a swizzled swip is no page id");
    assert_eq!(pool.stats().since(&before).pages_read, 1);
    pool.check_invariants().unwrap();
}

#[test]
fn b32_a_parent_that_changed_before_the_read_reads_nothing() {
    let (pool, probe, root, c) = tree_with_c_evicted();
    let before = pool.stats();
    // Changed before the swip was read: refused at the first validation.
    let v = pool.view_root(root).unwrap();
    drop(pool.fix_root::<Exclusive>(root));
    assert!(matches!(v.load_child(SWIPS), Ok(Step::Retry)));
    // Changed after the page-table entry was made (the second validation): the entry goes
    // again, and the frame back to the free list, before anything is read.
    let free = pool.free_count.load(Relaxed);
    assert!(!pool.load_unlatched(c, || false).unwrap());
    assert!(pool.table.get(c).is_none(), "B32: the refused entry is removed");
    assert_eq!(pool.free_count.load(Relaxed), free, "B32: the frame is free again");
    let s = pool.stats().since(&before);
    assert_eq!((s.pages_read, s.unlatched_loads), (0, 0), "{s:?}");
    assert!(probe.loads.lock().is_empty());
    pool.check_invariants().unwrap();
    // The page is still there to be read.
    assert_eq!(pool.fix_page::<Shared>(c).unwrap().page_id(), c);
}

/// B33, replacement R11: a leaf read through a view tells the policy of its hit afterwards,
/// with no latch, where the policy takes such hits (GCLOCK here: the frame's counter is set);
/// a root is not told, as `fix_root` does not tell it. A policy that needs the latch for its
/// hits (LRU) gets no latch-free reads at all.
#[test]
fn b33_a_latch_free_hit_reaches_the_policy_where_it_takes_one() {
    assert!(!tree(PoolMode::Swizzling, |_| ()).0.optimistic_leaf_reads(), "off by default");
    let (pool, root, _) = tree(PoolMode::Swizzling, |c| c.optimistic_leaf_reads = true);
    assert!(pool.optimistic_leaf_reads(), "GCLOCK takes hits without a latch");
    let cf = swizzle_child(&pool, root);
    pool.desc(cf).hook.set(0);
    pool.desc(root).hook.set(0);
    let v = pool.view_root(root).unwrap();
    let Step::Ready(cv) = v.child(SWIPS) else { panic!("C is swizzled") };
    assert!(cv.validate());
    cv.record_hit();
    assert_ne!(pool.desc(cf).hook.get(), 0, "B33: the hit was counted");
    v.record_hit();
    assert_eq!(pool.desc(root).hook.get(), 0, "B33: roots are not told");
    let (lru, _, _) = tree(PoolMode::Swizzling, |c| {
        c.optimistic_leaf_reads = true;
        c.policy = "lru".parse().unwrap();
    });
    assert!(!lru.optimistic_leaf_reads());
}

/// B32: the mark of an unlatched load is this pool's: a thread that loaded page C in one pool
/// and went elsewhere before fixing it (a restarted descent) still counts its hits of a page
/// with the same number in another pool, and tells that pool's policy of them.
#[test]
fn b32_an_unlatched_load_in_one_pool_leaves_another_pools_hits_counted() {
    let (a, _probe, root, c) = tree_with_c_evicted();
    let v = a.view_root(root).unwrap();
    assert!(matches!(v.load_child(SWIPS), Ok(Step::Ready(()))), "C is read with no latch");
    // Another pool with a page of the same number, resident; its hit is its own fix.
    let (b, _, c_b) = tree(PoolMode::Swizzling, |_| ());
    assert_eq!(c_b, c, "precondition: the same page number in both pools");
    let before = b.stats();
    drop(b.fix_page::<Shared>(c_b).unwrap());
    let s = b.stats().since(&before);
    assert_eq!((s.fixes, s.hits), (1, 1), "B32: another pool's hit went uncounted: {s:?}");
}

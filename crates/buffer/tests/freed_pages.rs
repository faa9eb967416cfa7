//! Freed pages (README B3a): a page freed is no longer resident, a fix that may name a freed
//! page (`fix_resident`) never reads it back, and the page id's next allocation is the page a
//! fix by id finds.

mod common;

use std::sync::Arc;

use common::*;
use swizzledb_buffer::{Exclusive, PoolMode, Shared};
use swizzledb_io::fault::FaultFs;

#[test]
fn b3a_a_freed_page_is_not_fixed_back_and_its_next_allocation_is_found_by_id() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let fs = FaultFs::new();
        let pool = create(&fs, &config(Arc::new(fs.clone()), mode, 16, None));
        let mut lsns = Lsns::default();
        let mut g = pool.allocate_page().expect("a page");
        let pid = g.page_id();
        g[DATA] = 7;
        g.set_page_lsn(lsns.next());
        drop(g);
        // Its image is in the file: a read of the freed id would succeed, and bring it back.
        pool.flush().expect("flush");
        assert_eq!(pool.fix_resident::<Shared>(pid).map(|g| g[DATA]), Some(7), "{mode}: resident");
        pool.free_page(pool.fix_page::<Exclusive>(pid).expect("fix"));
        assert!(pool.fix_resident::<Shared>(pid).is_none(), "{mode}: a freed page is not resident");

        let mut again = pool.allocate_page().expect("a page");
        assert_eq!(again.page_id(), pid, "{mode}: the freed page is allocated again");
        again[DATA] = 9;
        again.set_page_lsn(lsns.next());
        drop(again);
        assert_eq!(pool.fix_resident::<Shared>(pid).map(|g| g[DATA]), Some(9), "{mode}");
        assert_eq!(pool.fix_page::<Shared>(pid).expect("fix")[DATA], 9, "{mode}: the new page, by id");
        pool.check_invariants().expect("invariants");
    }
}

#[test]
fn b35_a_frames_latch_version_moves_with_every_change_and_nothing_else() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let fs = FaultFs::new();
        let pool = create(&fs, &config(Arc::new(fs.clone()), mode, 16, None));
        let g = pool.allocate_page().expect("a page");
        let (pid, frame) = (g.page_id(), g.frame());
        drop(g);
        let seen = pool.fix_page::<Shared>(pid).expect("fix").latch_version();
        // Shared fixes, and an exclusive guard downgraded before any change, leave it.
        for _ in 0..3 {
            let g = pool.fix_resident::<Shared>(pid).expect("resident");
            assert_eq!((g.frame(), g.latch_version()), (frame, seen), "{mode}: a shared fix");
        }
        // A change that no log record dates (the page LSN stays) moves it.
        let mut x = pool.fix_page::<Exclusive>(pid).expect("fix");
        x[DATA] = 3;
        drop(x);
        let changed = pool.fix_resident::<Shared>(pid).expect("resident");
        assert_eq!(changed.page_lsn(), swizzledb_sync::Lsn(0), "{mode}: the change was not logged");
        assert_eq!(changed.frame(), frame, "{mode}");
        assert!(changed.latch_version() > seen, "{mode}: an unlogged change moved the version");
        let after_change = changed.latch_version();
        drop(changed);
        // Freed and allocated again, the page id may come back in the same frame: the version
        // still tells them apart.
        pool.free_page(pool.fix_page::<Exclusive>(pid).expect("fix"));
        let again = pool.allocate_page().expect("a page");
        assert_eq!(again.page_id(), pid, "{mode}: the freed page is allocated again");
        drop(again);
        let g = pool.fix_resident::<Shared>(pid).expect("resident");
        assert!(
            g.frame() != frame || g.latch_version() > after_change,
            "{mode}: a page freed and allocated again in the same frame shows a later version"
        );
    }
}

#[test]
fn b3b_an_allocation_never_takes_a_resident_page() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let fs = FaultFs::new();
        let pool = create(&fs, &config(Arc::new(fs.clone()), mode, 16, None));
        let mut lsns = Lsns::default();
        let mut g = pool.allocate_page().expect("a page");
        let pid = g.page_id();
        g[DATA] = 7;
        g.set_page_lsn(lsns.next());
        drop(g);
        pool.flush().expect("flush");
        pool.free_page(pool.fix_page::<Exclusive>(pid).expect("fix"));
        // Breaking B3a: a fix by id of the freed page reads it back, so the free list now names
        // a resident page, as a damaged free list would.
        let Ok(back) = pool.fix_page::<Shared>(pid) else {
            continue; // a mode that cannot read a freed page back has nothing to check
        };
        assert_eq!(back[DATA], 7, "{mode}");
        drop(back);
        match pool.allocate_page() {
            Err(swizzledb_buffer::BufferError::Corrupted { page, .. }) => assert_eq!(page, pid, "{mode}"),
            Err(e) => panic!("{mode}: {e}"),
            Ok(g) => panic!("{mode}: allocated {:?}, which is resident", g.page_id()),
        }
        // The page in use is untouched, and the next allocation takes another page.
        assert_eq!(pool.fix_page::<Shared>(pid).expect("fix")[DATA], 7, "{mode}");
        let other = pool.allocate_page().expect("another page");
        assert_ne!(other.page_id(), pid, "{mode}");
        drop(other);
        pool.check_invariants().expect("invariants");
    }
}

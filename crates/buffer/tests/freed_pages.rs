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

//! T1 guards in the scans: a tree whose fences contradict T1 (a page that passed its checksum
//! but is wrong) makes a scan fail with `TreeError::Damaged` instead of looping forever.

use std::ops::Bound::Unbounded;
use std::sync::Arc;
use swizzledb_btree::{node, BTreeOwner, Tree, TreeError};
use swizzledb_buffer::{BufferPool, Exclusive, PageId, PoolConfig, PoolMode, Shared};

fn tree(dir: &std::path::Path) -> (Arc<BufferPool>, Tree) {
    let config = PoolConfig {
        mode: PoolMode::Traditional,
        pool_bytes: 64 * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    let pool = Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let tree = Tree::create(&pool).unwrap();
    for k in 0..600u32 {
        tree.insert(format!("key{k:05}").as_bytes(), &[7u8; 40]).unwrap();
    }
    (pool, tree)
}

/// The leftmost (`first`) or rightmost leaf under the root.
fn edge_leaf(pool: &BufferPool, tree: &Tree, first: bool) -> PageId {
    let mut id = tree.root_page();
    loop {
        let g = pool.fix_page::<Shared>(id).unwrap();
        if node::is_leaf(&g) {
            return id;
        }
        let i = if first { 0 } else { node::count(&g) - 1 };
        let child =
            if !first && node::has_foster(&g) { node::foster_swip(&g) } else { node::child_swip(&g, i) };
        id = pool.swip_page_id(child.unwrap());
    }
}

#[test]
fn t1_forward_scan_stops_on_a_fence_that_points_back() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    assert_eq!(tree.range(Unbounded, Unbounded).count(), 600, "intact first");
    let leaf = edge_leaf(&pool, &tree, true);
    {
        let mut g = pool.fix_page::<Exclusive>(leaf).unwrap();
        assert!(!node::has_foster(&g), "the leftmost leaf has no foster child here");
        assert!(node::set_high_fence(&mut g, Some(b"a")), "room for a fence below every key");
    }
    let items: Vec<_> = tree.range(Unbounded, Unbounded).collect();
    let last = items.last().unwrap();
    assert!(matches!(last, Err(TreeError::Damaged { page, .. }) if *page == leaf), "{last:?}");
    assert!(items.len() <= 601, "the scan ends at the damage: {} items", items.len());
}

#[test]
fn t1_backward_scan_stops_on_a_fence_that_points_forward() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    assert_eq!(tree.range_rev(Unbounded, Unbounded).count(), 600, "intact first");
    let leaf = edge_leaf(&pool, &tree, false);
    {
        let mut g = pool.fix_page::<Exclusive>(leaf).unwrap();
        node::init(&mut g, 0, Some(b"zzzz"), None); // records gone, low fence above them all
    }
    let items: Vec<_> = tree.range_rev(Unbounded, Unbounded).collect();
    let last = items.last().unwrap();
    assert!(matches!(last, Err(TreeError::Damaged { .. })), "{last:?}");
}

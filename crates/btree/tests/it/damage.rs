//! T1 guards in the scans: a tree whose fences contradict T1 (a page that passed its checksum
//! but is wrong) makes a scan fail with `TreeError::Damaged` instead of looping forever.

use std::ops::Bound::Unbounded;
use std::sync::Arc;
use swizzledb_btree::{node, BTreeOwner, Tree, TreeError};
use swizzledb_buffer::{BufferPool, Exclusive, PageId, PoolConfig, PoolMode, Shared, Swip};

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

/// Runs `f` on a thread; fails the test if it has not finished within 10 s (a hang).
fn watched<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(10)).expect("no hang")
}

/// The leaf holding `key` (no foster children in this tree).
fn leaf_of(pool: &BufferPool, tree: &Tree, key: &[u8]) -> PageId {
    let mut id = tree.root_page();
    loop {
        let g = pool.fix_page::<Shared>(id).unwrap();
        if node::is_leaf(&g) {
            return id;
        }
        id = pool.swip_page_id(node::child_swip(&g, node::child_index(&g, key)).unwrap());
    }
}

/// T16 on a page damaged in memory (past the load-time check, T17): a child reference naming
/// its own page ends reads, writes and scans with `Damaged` naming that page.
#[test]
fn t16_a_swip_naming_its_own_page_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let root = tree.root_page();
    {
        let mut g = pool.fix_page::<Exclusive>(root).unwrap();
        assert!(!node::is_leaf(&g));
        let off = node::child_swip_off(&g, 0);
        swizzledb_buffer::page::put_u64(&mut g, off, root.get());
    }
    let (read, write, scan) = watched(move || {
        let read = tree.get(b"key00000").map(|_| ());
        let write = tree.upsert(b"key00000", b"x").map(|_| ());
        let scan = tree.range(Unbounded, Unbounded).find_map(Result::err);
        (read, write, scan)
    });
    let damaged =
        |r: &Result<(), TreeError>| matches!(r, Err(TreeError::Damaged { page, .. }) if *page == root);
    assert!(damaged(&read), "read {read:?}");
    assert!(damaged(&write), "write {write:?}");
    assert!(matches!(scan, Some(TreeError::Damaged { .. })), "scan {scan:?}");
}

/// T16: two leaves whose foster swips point at each other (a foster loop at one level) end a
/// descent with `Damaged` instead of looping: a foster child's low fence must be its foster
/// parent's foster key, and those rise strictly along a chain.
#[test]
fn t16_a_foster_loop_is_damage_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let (ka, kb) = (b"key00010".as_slice(), b"key00590".as_slice());
    let (a, b) = (leaf_of(&pool, &tree, ka), leaf_of(&pool, &tree, kb));
    assert_ne!(a, b, "the keys are in different leaves");
    let mut last_b = Vec::new();
    for (from, to) in [(a, b), (b, a)] {
        let mut g = pool.fix_page::<Exclusive>(from).unwrap();
        let last = node::key(&g, node::count(&g) - 1).to_vec();
        assert!(node::set_foster(&mut g, &last, Swip::page(to)));
        if from == b {
            last_b = last;
        }
    }
    let (read, write) = watched(move || {
        let read = tree.get(&last_b).map(|_| ());
        let write = tree.upsert(&last_b, b"x").map(|_| ());
        (read, write)
    });
    assert!(matches!(read, Err(TreeError::Damaged { page, .. }) if page == a), "read {read:?}");
    assert!(matches!(write, Err(TreeError::Damaged { page, .. }) if page == a), "write {write:?}");
}

/// T16 in maintenance: a leaf whose foster swip names the root (its parent, latched
/// exclusively by the maintenance pass that reaches the leaf) makes the pass stop with
/// `Damaged` instead of waiting on the root's latch it holds itself. The unlogged write that
/// triggered the pass succeeds, its change made (T9: only a logged operation, which its caller
/// can roll back, returns what its maintenance met).
#[test]
fn t16_maintenance_does_not_latch_the_parent_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree) = tree(dir.path());
    let root = tree.root_page();
    let leaf = leaf_of(&pool, &tree, b"key00010");
    {
        let mut g = pool.fix_page::<Exclusive>(leaf).unwrap();
        let last = node::key(&g, node::count(&g) - 1).to_vec();
        assert!(node::set_foster(&mut g, &last, Swip::page(root)));
    }
    let (write, read) = watched(move || {
        // Below the foster key: the write succeeds, then maintenance meets the foster swip.
        let write = tree.upsert(b"key00010", b"x").map(|_| ());
        let read = tree.get(b"key00010");
        (write, read)
    });
    assert!(write.is_ok(), "write {write:?}");
    assert_eq!(read.unwrap().as_deref(), Some(&b"x"[..]), "the write's own change is made");
}

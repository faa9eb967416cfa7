//! Large values (README T22): overflow chains written, read, replaced and freed, with no page
//! lost, in every pool mode, logged or not.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use swizzledb_btree::log::LogFailure;
use swizzledb_btree::{
    max_inline_value_len, BTreeOwner, ChangeLog, LeafChange, Overflow, PageChange, Tree, TreeError,
};
use swizzledb_buffer::{BufferPool, ExclusiveGuard, PageId, PoolConfig, PoolMode};
use swizzledb_sync::Lsn;

/// A log that only hands out LSNs: the tree takes its logged paths (T11, T22 3).
#[derive(Default)]
struct Counter(AtomicU64);

impl ChangeLog for Counter {
    fn leaf_change(
        &self,
        _: PageId,
        _: &ExclusiveGuard<'_>,
        _: &LeafChange<'_>,
        _: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        Ok(Lsn(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }

    fn structure_change(&self, _: &[PageChange<'_, '_>], _: &[PageId]) -> Result<Lsn, LogFailure> {
        Ok(Lsn(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }
}

fn pool(dir: &std::path::Path, mode: PoolMode, frames: usize) -> Arc<BufferPool> {
    let bytes = if mode == PoolMode::MainMemory { 64 << 20 } else { frames * 4096 };
    let config = PoolConfig { mode, pool_bytes: bytes, page_size: 4096, ..PoolConfig::default() };
    Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap())
}

/// Every allocated page is a node or an overflow page of `tree` (T22 4: nothing leaks).
fn assert_no_leak(pool: &BufferPool, tree: &Tree) {
    let shape = tree.verify().unwrap();
    let alloc = pool.allocation();
    let allocated = alloc.page_count as usize - 1 - alloc.free_pages.len();
    assert_eq!(allocated, shape.nodes + shape.overflow_pages, "{shape:?}");
}

fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn t22_insert_replace_delete_round_trip_and_free_their_pages() {
    for (mode, frames) in [
        (PoolMode::Traditional, 256),
        (PoolMode::Swizzling, 256),
        (PoolMode::MainMemory, 0),
        (PoolMode::Traditional, 16),
        (PoolMode::Swizzling, 16),
    ] {
        for logged in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let pool = pool(dir.path(), mode, frames);
            let counter = Counter::default();
            let log: Option<&dyn ChangeLog> = if logged { Some(&counter) } else { None };
            let tree = Tree::create_logged(&pool, log).unwrap();
            let put = |k: &[u8], v: &[u8]| match log {
                Some(log) => tree.put_logged(k, v, true, log),
                None => tree.upsert(k, v),
            };
            let delete = |k: &[u8]| match log {
                Some(log) => tree.delete_logged(k, log),
                None => tree.delete(k),
            };
            let inline = max_inline_value_len(4096);
            let sizes = [
                0,
                100,
                inline,
                inline + 1,
                4048,
                4049,
                20_000.min(tree.max_value_len()),
                tree.max_value_len(),
            ];
            let mut oracle = BTreeMap::new();
            for (i, &len) in sizes.iter().enumerate() {
                let k = format!("k{i}").into_bytes();
                assert!(!put(&k, &value(len, i as u8)).unwrap());
                oracle.insert(k, value(len, i as u8));
            }
            assert_no_leak(&pool, &tree);
            // Replace every value by every other size: large to small, small to large, large to large.
            for round in 1..4u8 {
                for (i, k) in oracle.clone().keys().enumerate() {
                    let len = sizes[(i + usize::from(round) * 3) % sizes.len()];
                    let v = value(len, round);
                    assert!(put(k, &v).unwrap());
                    oracle.insert(k.clone(), v);
                }
                for (k, v) in &oracle {
                    assert_eq!(
                        tree.get(k).unwrap().as_ref(),
                        Some(v),
                        "{mode:?} {frames} frames, round {round}"
                    );
                }
                let scanned: Vec<_> = tree
                    .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(scanned, oracle.clone().into_iter().collect::<Vec<_>>());
                assert_no_leak(&pool, &tree);
            }
            for k in oracle.keys() {
                assert!(delete(k).unwrap());
            }
            let shape = tree.verify().unwrap();
            assert_eq!((shape.records, shape.overflow_pages), (0, 0));
            assert_no_leak(&pool, &tree);
        }
    }
}

/// A value longer than the tree's limit is refused and changes nothing; an eighth of a small pool
/// bounds it.
#[test]
fn t22_oversize_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), PoolMode::Swizzling, 64);
    let tree = Tree::create(&pool).unwrap();
    assert_eq!(tree.max_value_len(), 8 * (4096 - 48));
    tree.insert(b"k", b"v").unwrap();
    let err = tree.upsert(b"k", &vec![1; tree.max_value_len() + 1]).unwrap_err();
    assert!(matches!(err, TreeError::ValueTooLarge { max, .. } if max == tree.max_value_len()), "{err}");
    assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_no_leak(&pool, &tree);
    // A duplicate insert of a large value leaves its chain behind nowhere.
    let err = tree.insert(b"k", &vec![2; 10_000]).unwrap_err();
    assert!(matches!(err, TreeError::DuplicateKey));
    assert_no_leak(&pool, &tree);
}

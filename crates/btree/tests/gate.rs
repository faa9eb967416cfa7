//! T18: a gated scan whose gap spans two leaves reads again when the first leaf changed before
//! the key closing the gap passed the gate. The gate itself is the pause point: when it is
//! asked about the closing key (the second leaf latched, the first not), another thread inserts
//! into the first leaf's end gap.

use std::ops::Bound::Unbounded;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use swizzledb_btree::log::LogFailure;
use swizzledb_btree::{node, BTreeOwner, ChangeLog, LeafChange, PageChange, ReadGate, Tree, TreeError};
use swizzledb_buffer::{BufferPool, ExclusiveGuard, PageId, PoolConfig, PoolMode, Shared};
use swizzledb_sync::Lsn;

/// A log that only hands out LSNs, so that every change moves its pages' LSNs (T11, T13).
#[derive(Default)]
struct Counter(AtomicU64);

impl ChangeLog for Counter {
    fn leaf_change(
        &self,
        _: PageId,
        _: &ExclusiveGuard<'_>,
        _: &LeafChange<'_>,
        _: swizzledb_btree::Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        Ok(Lsn(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }

    fn structure_change(&self, _: &[PageChange<'_, '_>], _: &[PageId]) -> Result<Lsn, LogFailure> {
        Ok(Lsn(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// A leaf as the test needs it: (low fence, first key, last key).
type LeafKeys = (Option<Vec<u8>>, Vec<u8>, Vec<u8>);

/// The leaves in key order.
fn leaves(pool: &BufferPool, id: PageId, out: &mut Vec<LeafKeys>) {
    let g = pool.fix_page::<Shared>(id).unwrap();
    let mut children = Vec::new();
    if node::is_leaf(&g) {
        let n = node::count(&g);
        if n > 0 {
            out.push((
                node::low_fence(&g).map(<[u8]>::to_vec),
                node::key(&g, 0).to_vec(),
                node::key(&g, n - 1).to_vec(),
            ));
        }
    } else {
        children.extend((0..node::count(&g)).map(|i| pool.swip_page_id(node::child_swip(&g, i).unwrap())));
    }
    if let Some(f) = node::foster_swip(&g) {
        children.push(pool.swip_page_id(f));
    }
    drop(g);
    for c in children {
        leaves(pool, c, out);
    }
}

/// Passes everything; the `nth` time it is asked about `trigger`, runs `act` on another thread
/// and waits for it.
struct Pause<F: Fn() + Sync> {
    trigger: Vec<u8>,
    nth: usize,
    seen: AtomicUsize,
    act: F,
}

impl<F: Fn() + Sync> ReadGate for Pause<F> {
    fn try_pass(&self, _: &Tree, key: Option<&[u8]>) -> Result<bool, TreeError> {
        if key == Some(self.trigger.as_slice()) && self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.nth {
            std::thread::scope(|s| {
                let h = s.spawn(&self.act);
                let started = std::time::Instant::now();
                while !h.is_finished() {
                    assert!(
                        started.elapsed() < Duration::from_secs(10),
                        "the insert stalled on a latch the scan holds"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        Ok(true)
    }

    fn wait(&self, _: &Tree, _: Option<&[u8]>) -> Result<(), TreeError> {
        Ok(())
    }
}

fn setup(dir: &std::path::Path) -> (Arc<BufferPool>, Tree, Arc<Counter>, Vec<Vec<u8>>) {
    let config = PoolConfig {
        mode: PoolMode::Traditional,
        pool_bytes: 64 * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    let pool = Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let log = Arc::new(Counter::default());
    let tree = Tree::create_logged(&pool, Some(&*log)).unwrap();
    let mut keys = Vec::new();
    for k in 0..300 {
        tree.put_logged(&key(k * 2), &[7u8; 60], false, &*log).unwrap();
        keys.push(key(k * 2));
    }
    (pool, tree, log, keys)
}

/// The second leaf's first key, and a key that falls into the first leaf's end gap.
fn boundary(pool: &BufferPool, tree: &Tree) -> (Vec<u8>, Vec<u8>) {
    let mut ls = Vec::new();
    leaves(pool, tree.root_page(), &mut ls);
    assert!(ls.len() >= 3, "the test needs several leaves, got {}", ls.len());
    let (first_last, (low, second_first)) = (&ls[0].2, (&ls[1].0, &ls[1].1));
    let mut gap_key = first_last.clone();
    gap_key.push(1);
    assert!(low.as_ref().is_none_or(|l| gap_key < *l), "the gap key must go into the first leaf");
    (second_first.clone(), gap_key)
}

#[test]
fn t17_a_forward_scan_reads_again_when_a_leaf_changed_before_its_gap_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree, log, mut keys) = setup(dir.path());
    let (trigger, gap_key) = boundary(&pool, &tree);
    let gate = Pause {
        trigger,
        nth: 1,
        seen: AtomicUsize::new(0),
        act: || {
            tree.put_logged(&gap_key, b"late", false, &*log).unwrap();
        },
    };
    let got: Vec<Vec<u8>> = tree.range_gated(Unbounded, Unbounded, &gate).map(|r| r.unwrap().0).collect();
    keys.push(gap_key.clone());
    keys.sort();
    assert_eq!(got, keys, "the key inserted into the first leaf's end gap is missing");
}

#[test]
fn t17_a_reverse_scan_reads_again_when_a_leaf_changed_before_its_gap_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree, log, mut keys) = setup(dir.path());
    let (trigger, gap_key) = boundary(&pool, &tree);
    // First asked while reading the second leaf, then as the closing key of the first leaf's
    // gap, after the first leaf was read.
    let gate = Pause {
        trigger,
        nth: 2,
        seen: AtomicUsize::new(0),
        act: || {
            tree.put_logged(&gap_key, b"late", false, &*log).unwrap();
        },
    };
    let mut got: Vec<Vec<u8>> =
        tree.range_rev_gated(Unbounded, Unbounded, &gate).map(|r| r.unwrap().0).collect();
    got.reverse();
    keys.push(gap_key.clone());
    keys.sort();
    assert_eq!(got, keys, "the key inserted into the first leaf's end gap is missing");
}

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
    let (pool, tree, log, keys) = setup_in(dir, PoolMode::Traditional, true);
    (pool, tree, log.expect("logged"), keys)
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

/// T28: a gap gate that records what it was asked, refuses each closing key once (or always
/// fails, with `fail`), and counts its waits.
#[derive(Default)]
struct GapRecorder {
    asked: std::sync::Mutex<Vec<Option<Vec<u8>>>>,
    waited: std::sync::Mutex<Vec<Option<Vec<u8>>>>,
    refuse_first: bool,
    fail: bool,
}

impl swizzledb_btree::GapGate for GapRecorder {
    fn try_pass(&self, _: &Tree, next: Option<&[u8]>) -> Result<bool, TreeError> {
        if self.fail {
            return Err(TreeError::Closed);
        }
        let next = next.map(<[u8]>::to_vec);
        let mut asked = self.asked.lock().unwrap();
        let seen_before = asked.contains(&next);
        asked.push(next);
        Ok(!self.refuse_first || seen_before)
    }

    fn wait(&self, _: &Tree, next: Option<&[u8]>) -> Result<(), TreeError> {
        self.waited.lock().unwrap().push(next.map(<[u8]>::to_vec));
        Ok(())
    }
}

fn all_keys(tree: &Tree) -> Vec<Vec<u8>> {
    tree.range(Unbounded, Unbounded).map(|r| r.unwrap().0).collect()
}

/// Every put of an absent key offers the key after it (the oracle: the tree's keys in order),
/// or says the closing key is beyond the leaf and changes nothing; a refusal is waited for and
/// the write made in a new visit; replacing a present key asks nothing.
#[test]
fn t28_a_gated_put_offers_the_closing_key_or_says_it_lies_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, tree, log, mut keys) = setup(dir.path());
    let (_, gap_key) = boundary(&pool, &tree);
    let mut beyond = 0;
    for k in (0..301).map(|k| key(k * 2 + 1)).chain([gap_key]) {
        let gate = GapRecorder { refuse_first: true, ..GapRecorder::default() };
        let next = keys.iter().find(|x| **x > k).cloned();
        match tree.put_gated(&k, &[9u8; 60], true, &*log, &gate).unwrap() {
            swizzledb_btree::Gated::Done(existed) => {
                assert!(!existed);
                assert_eq!(
                    *gate.asked.lock().unwrap(),
                    vec![next.clone(), next.clone()],
                    "T28: asked, refused, asked"
                );
                assert_eq!(*gate.waited.lock().unwrap(), vec![next], "T28: waited for the refused key");
                keys.push(k);
                keys.sort();
            }
            swizzledb_btree::Gated::Beyond => {
                beyond += 1;
                assert!(gate.asked.lock().unwrap().is_empty(), "T28: nothing asked");
                assert!(tree.get(&k).unwrap().is_none(), "T28: nothing changed");
                assert!(next.is_some(), "the end of the tree is never beyond the last leaf");
            }
        }
        assert_eq!(all_keys(&tree), keys);
    }
    assert!(beyond >= 1, "the key in the first leaf's end gap has its closing key in the next leaf");
    assert!(beyond < 20, "most closing keys are in the leaf: {beyond}");
    tree.verify().unwrap();

    // A present key is replaced without a question.
    let gate = GapRecorder { fail: true, ..GapRecorder::default() };
    assert_eq!(
        tree.put_gated(&key(10), &[1u8; 60], true, &*log, &gate).unwrap(),
        swizzledb_btree::Gated::Done(true)
    );
    assert_eq!(tree.get(&key(10)).unwrap().unwrap(), vec![1u8; 60]);
    // A failing gate fails the insert, and nothing changes.
    let k = key(10_000);
    assert!(tree.put_gated(&k, &[1u8; 60], false, &*log, &gate).is_err());
    assert!(tree.get(&k).unwrap().is_none());
}

/// A gated delete of a present key offers the key after it (`None` after the last one), and of
/// an absent key asks nothing.
#[test]
fn t28_a_gated_delete_offers_the_key_after_the_removed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_pool, tree, log, mut keys) = setup(dir.path());
    let mut beyond = 0;
    for k in (0..300).rev().step_by(7).map(|k| key(k * 2)).chain([key(1)]) {
        let gate = GapRecorder::default();
        let present = keys.contains(&k);
        let next = keys.iter().find(|x| **x > k).cloned();
        match tree.delete_gated(&k, &*log, &gate).unwrap() {
            swizzledb_btree::Gated::Done(existed) => {
                assert_eq!(existed, present);
                let want = if present { vec![next] } else { vec![] };
                assert_eq!(*gate.asked.lock().unwrap(), want);
                keys.retain(|x| *x != k);
            }
            swizzledb_btree::Gated::Beyond => {
                beyond += 1;
                assert!(present && gate.asked.lock().unwrap().is_empty());
                assert!(tree.get(&k).unwrap().is_some(), "T28: nothing changed");
            }
        }
        assert_eq!(all_keys(&tree), keys);
    }
    assert!(beyond < 10, "{beyond}");
    tree.verify().unwrap();
}

/// A test's pool, its tree, the log that dates its changes (`None`: unlogged) and the keys it holds.
type Setup = (Arc<BufferPool>, Tree, Option<Arc<Counter>>, Vec<Vec<u8>>);

/// The tree of [`setup`] in `mode`, its changes logged (`Some`, page LSNs move) or not (`None`,
/// page LSNs stay 0).
fn setup_in(dir: &std::path::Path, mode: PoolMode, logged: bool) -> Setup {
    let config = PoolConfig { mode, pool_bytes: 64 * 4096, page_size: 4096, ..PoolConfig::default() };
    let pool = Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let log = logged.then(|| Arc::new(Counter::default()));
    let tree = Tree::create_logged(&pool, log.as_deref().map(|l| l as &dyn ChangeLog)).unwrap();
    let mut keys = Vec::new();
    for k in 0..300 {
        put(&tree, log.as_deref(), &key(k * 2), &[7u8; 60]);
        keys.push(key(k * 2));
    }
    (pool, tree, log, keys)
}

fn put(tree: &Tree, log: Option<&Counter>, k: &[u8], v: &[u8]) {
    match log {
        Some(log) => drop(tree.put_logged(k, v, false, log).unwrap()),
        None => drop(tree.upsert(k, v).unwrap()),
    }
}

fn delete(tree: &Tree, log: Option<&Counter>, k: &[u8]) {
    let gone = match log {
        Some(log) => tree.delete_logged(k, log).unwrap(),
        None => tree.delete(k).unwrap(),
    };
    assert!(gone, "the key to delete was there");
}

/// T18 in every pool mode, logged or not: while the scan waits at the key closing the first
/// leaf's end gap, another thread inserts into that gap and deletes a key of the first leaf
/// below the scan's range, so the leaf keeps its record count (and, unlogged, its page LSN).
/// The scan must still see the inserted key.
fn a_changed_leaf_with_the_same_count_is_read_again(reverse: bool) {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        for logged in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let (pool, tree, log, keys) = setup_in(dir.path(), mode, logged);
            let (trigger, gap_key) = boundary(&pool, &tree);
            // The scan starts above the first key, which the other thread deletes.
            let (gone, from) = (keys[0].clone(), keys[1].clone());
            let gate = Pause {
                trigger,
                nth: if reverse { 2 } else { 1 },
                seen: AtomicUsize::new(0),
                act: || {
                    put(&tree, log.as_deref(), &gap_key, b"late");
                    delete(&tree, log.as_deref(), &gone);
                },
            };
            let start = std::ops::Bound::Included(from.as_slice());
            let got: Vec<Vec<u8>> = if reverse {
                let mut got: Vec<Vec<u8>> =
                    tree.range_rev_gated(start, Unbounded, &gate).map(|r| r.unwrap().0).collect();
                got.reverse();
                got
            } else {
                tree.range_gated(start, Unbounded, &gate).map(|r| r.unwrap().0).collect()
            };
            let mut want: Vec<Vec<u8>> = keys[1..].to_vec();
            want.push(gap_key.clone());
            want.sort();
            assert!(
                got == want,
                "{mode:?}, logged {logged}, reverse {reverse}: {} keys read, {} expected; the key inserted \
                 into the first leaf's end gap was read: {}",
                got.len(),
                want.len(),
                got.contains(&gap_key)
            );
        }
    }
}

#[test]
fn t18_a_forward_scan_reads_again_when_a_leaf_changed_but_kept_its_count_logged_or_not() {
    a_changed_leaf_with_the_same_count_is_read_again(false);
}

#[test]
fn t18_a_reverse_scan_reads_again_when_a_leaf_changed_but_kept_its_count_logged_or_not() {
    a_changed_leaf_with_the_same_count_is_read_again(true);
}

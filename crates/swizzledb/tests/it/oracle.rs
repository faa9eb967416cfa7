//! Random operation sequences against a `BTreeMap` oracle, in all three modes, with pools small
//! enough to force eviction and un-swizzling constantly; flush + reopen in the middle, on an
//! in-memory file system.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{CommitMode, Database, PoolMode, TreeError};
use swizzledb_io::{MemFs, Vfs};

#[derive(Clone, Debug)]
enum Op {
    Insert(u16, u8),
    Upsert(u16, u8),
    Delete(u16),
    Get(u16),
    Range(u16, u16),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u16..2000;
    prop_oneof![
        30 => (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Insert(k, v)),
        20 => (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Upsert(k, v)),
        25 => key.clone().prop_map(Op::Delete),
        15 => key.clone().prop_map(Op::Get),
        5 => (key.clone(), key).prop_map(|(a, b)| Op::Range(a.min(b), a.max(b))),
        1 => Just(Op::Reopen),
    ]
}

fn key_bytes(k: u16) -> Vec<u8> {
    // Variable-length keys with a shared prefix exercise fences of different lengths.
    let mut v = format!("key-{k:05}").into_bytes();
    v.extend(std::iter::repeat_n(b'x', usize::from(k % 7) * 5));
    v
}

fn value_bytes(k: u16, v: u8) -> Vec<u8> {
    vec![v; 20 + usize::from(k % 13) * 17 + usize::from(v % 5) * 40]
}

fn run(mode: PoolMode, ops: &[Op]) {
    // An in-memory file system (io README IO8): the oracle checks the API under eviction and
    // reopening, and each reopen's syncs (a few hundred per case) would otherwise wait for the
    // disk; the operating system's files are what the other suites run on.
    let fs: Arc<dyn Vfs> = Arc::new(MemFs::new());
    let path = Path::new("/oracle.swz");
    // 16 frames of 4 KiB: the tree outgrows the pool after a few hundred records.
    let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 16 * 4096 };
    // The default configuration (logged, so every tree write auto-commits, R12), with
    // asynchronous commits so the proptest does not wait for an fsync per operation.
    let builder = Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(pool)
        .commit_mode(CommitMode::Async)
        .lab(|l| l.vfs(Arc::clone(&fs)));
    let mut db = builder.clone().create(path).unwrap();
    let mut tree = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Insert(k, v) => {
                let r = tree.insert(&key_bytes(k), &value_bytes(k, v));
                match oracle.entry(k) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        assert!(matches!(r, Err(TreeError::DuplicateKey)), "{r:?}");
                    }
                    std::collections::btree_map::Entry::Vacant(e) => {
                        r.unwrap();
                        e.insert(v);
                    }
                }
            }
            Op::Upsert(k, v) => {
                let existed = tree.upsert(&key_bytes(k), &value_bytes(k, v)).unwrap();
                assert_eq!(existed, oracle.insert(k, v).is_some());
            }
            Op::Delete(k) => {
                assert_eq!(tree.delete(&key_bytes(k)).unwrap(), oracle.remove(&k).is_some());
            }
            Op::Get(k) => {
                let got = tree.get(&key_bytes(k)).unwrap();
                assert_eq!(got, oracle.get(&k).map(|&v| value_bytes(k, v)));
            }
            Op::Range(a, b) => {
                let (ka, kb) = (key_bytes(a), key_bytes(b));
                let got: Vec<_> =
                    tree.range(Bound::Included(&ka), Bound::Excluded(&kb)).map(|r| r.unwrap()).collect();
                let want: Vec<_> = oracle
                    .iter()
                    .map(|(&k, &v)| (key_bytes(k), value_bytes(k, v)))
                    .filter(|(k, _)| *k >= ka && *k < kb)
                    .collect();
                assert_eq!(got, want);
                let mut rev: Vec<_> =
                    tree.range_rev(Bound::Included(&ka), Bound::Excluded(&kb)).map(|r| r.unwrap()).collect();
                rev.reverse();
                assert_eq!(rev, want, "reverse scan");
            }
            Op::Reopen => {
                db.close().unwrap();
                db = builder.clone().open(path).unwrap();
                tree = db.tree("t").unwrap();
            }
        }
    }
    let shape = tree.verify().unwrap_or_else(|e| panic!("{mode}: {e}"));
    assert_eq!(shape.records, oracle.len());
    if std::env::var_os("SWIZZLEDB_TEST_VERBOSE").is_some() {
        eprintln!("{mode}: {} ops, {shape:?}, {:?}", ops.len(), db.stats());
    }
    let all: Vec<_> = tree.range(Bound::Unbounded, Bound::Unbounded).map(|r| r.unwrap()).collect();
    assert_eq!(all.len(), oracle.len());
    let mut rev: Vec<_> = tree.range_rev(Bound::Unbounded, Bound::Unbounded).map(|r| r.unwrap()).collect();
    rev.reverse();
    assert!(rev == all, "reverse full scan differs");
    db.pool().check_invariants().unwrap();
    if mode != PoolMode::MainMemory && shape.nodes > 16 {
        let stats = db.stats();
        assert!(stats.evictions > 0, "{mode}: {} nodes in 16 frames but no eviction", shape.nodes);
        if mode == PoolMode::Swizzling {
            assert!(stats.unswizzles > 0 && stats.swizzles > 0, "{mode}: {stats:?}");
        }
    }
    // Everything must survive a final flush and reopen in traditional mode, which rejects any
    // swizzled reference that reached the disk (B8).
    db.close().unwrap();
    let db = Database::builder()
        .mode(PoolMode::Traditional)
        .page_size(4096)
        .pool_bytes(16 * 4096)
        .lab(|l| l.vfs(fs))
        .open(path)
        .unwrap();
    let tree = db.tree("t").unwrap();
    for (&k, &v) in &oracle {
        assert_eq!(tree.get(&key_bytes(k)).unwrap(), Some(value_bytes(k, v)));
    }
    assert_eq!(tree.verify().unwrap().records, oracle.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn oracle_traditional(ops in proptest::collection::vec(op(), 1..1500)) {
        run(PoolMode::Traditional, &ops);
    }

    #[test]
    fn oracle_swizzling(ops in proptest::collection::vec(op(), 1..1500)) {
        run(PoolMode::Swizzling, &ops);
    }

    #[test]
    fn oracle_main_memory(ops in proptest::collection::vec(op(), 1..1500)) {
        run(PoolMode::MainMemory, &ops);
    }
}

/// Bulk insert then delete everything: pages must be reused, not leaked (T4, B11).
#[test]
fn t4_churn_reuses_pages() {
    for mode in PoolMode::ALL {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("churn.swz");
        let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 32 * 4096 };
        // Asynchronous commit: the churn is 120,000 single-put commits per mode, and pages are
        // what it checks, not one fsync per put.
        let db = Database::builder()
            .mode(mode)
            .page_size(4096)
            .pool_bytes(pool)
            .commit_mode(CommitMode::Async)
            .create(&path)
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let mut peak = 0;
        for round in 0..5u32 {
            for i in 0..12_000u32 {
                t.insert(&i.to_be_bytes(), &[round as u8; 100]).unwrap();
            }
            let shape = t.verify().unwrap();
            assert_eq!(shape.records, 12_000);
            assert!(shape.height >= 3, "{mode}: the churn must reach three levels");
            peak = peak.max(shape.nodes);
            for i in 0..12_000u32 {
                assert!(t.delete(&i.to_be_bytes()).unwrap());
            }
            let shape = t.verify().unwrap();
            assert_eq!(shape.records, 0);
            assert!(
                shape.nodes < peak / 4,
                "{mode}: {} nodes left after deleting all (peak {peak})",
                shape.nodes
            );
        }
        if mode != PoolMode::MainMemory {
            let stats = db.stats();
            assert!(stats.evictions > 100 && stats.pages_read > 100, "{mode}: {stats:?}");
        }
        db.close().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len < 4096 * (peak as u64) * 3, "{mode}: file grew to {len} bytes under churn");
    }
}

/// T4: keys removed in descending order give their leaves back. A rolled-back run of ascending
/// inserts removes its keys last first, and so does a descending delete: each leaf emptied while
/// its left sibling was still full, and a merge that looked only left left every one of them
/// empty (12,000 rolled-back keys left 90 empty leaves behind the 93 that hold the records).
#[test]
fn t4_descending_deletes_and_rolled_back_inserts_give_their_leaves_back() {
    for mode in PoolMode::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .mode(mode)
            .commit_mode(CommitMode::Async)
            .create(dir.path().join("d.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let key = |p: char, i: u32| format!("{p}{i:06}").into_bytes();
        db.transact(|tx| (0..12_000).try_for_each(|i| tx.put(&t, &key('m', i), &[7; 40]).map(drop))).unwrap();
        t.upsert(b"z", b"last").unwrap();
        let kept = t.verify().unwrap().leaves;
        let mut tx = db.begin();
        for i in 0..12_000 {
            tx.put(&t, &key('n', i), &[9; 40]).unwrap();
        }
        tx.abort().unwrap();
        let shape = t.verify().unwrap();
        assert_eq!(shape.records, 12_001);
        assert!(
            shape.leaves <= kept + 2,
            "{mode}: {} leaves after the rollback, {kept} before",
            shape.leaves
        );
        db.transact(|tx| (0..12_000).try_for_each(|i| tx.put(&t, &key('n', i), &[9; 40]).map(drop))).unwrap();
        for i in (0..12_000).rev() {
            assert!(t.delete(&key('n', i)).unwrap());
        }
        let shape = t.verify().unwrap();
        assert_eq!(shape.records, 12_001);
        assert!(
            shape.leaves <= kept + 2,
            "{mode}: {} leaves after descending deletes, {kept} before",
            shape.leaves
        );
        db.close().unwrap();
    }
}

/// Every combination of bounds, forward and backward, on a tree of several levels with holes.
#[test]
fn t1_scans_honour_every_bound_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        Database::builder().page_size(4096).pool_bytes(32 * 4096).create(dir.path().join("s.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for i in (0..6000u32).filter(|i| i % 3 != 0) {
        let k = (i * 2).to_be_bytes().to_vec();
        t.insert(&k, &[1u8; 40]).unwrap();
        oracle.insert(k, vec![1u8; 40]);
    }
    for i in (0..6000u32).filter(|i| i % 7 == 0) {
        let k = (i * 2).to_be_bytes().to_vec();
        t.delete(&k).unwrap();
        oracle.remove(&k);
    }
    let probes = [0u32, 1, 2, 77, 3000, 5999, 11_998, 11_999, 12_000, 20_000];
    let bound = |kind: u8, k: &[u8]| -> Bound<Vec<u8>> {
        match kind {
            0 => Bound::Unbounded,
            1 => Bound::Included(k.to_vec()),
            _ => Bound::Excluded(k.to_vec()),
        }
    };
    for &a in &probes {
        for &b in &probes {
            let (ka, kb) = (a.to_be_bytes(), b.to_be_bytes());
            for sa in 0..3 {
                for sb in 0..3 {
                    let (lo, hi) = (bound(sa, &ka), bound(sb, &kb));
                    if sa > 0 && sb > 0 && (a > b || (a == b && (sa == 2 || sb == 2))) {
                        continue; // empty or invalid for BTreeMap::range
                    }
                    let want: Vec<_> =
                        oracle.range((lo.clone(), hi.clone())).map(|(k, v)| (k.clone(), v.clone())).collect();
                    let (l, h) = (lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice));
                    let got: Vec<_> = t.range(l, h).map(|r| r.unwrap()).collect();
                    assert_eq!(got, want, "forward {lo:?}..{hi:?}");
                    let mut rev: Vec<_> = t.range_rev(l, h).map(|r| r.unwrap()).collect();
                    rev.reverse();
                    assert_eq!(rev, want, "reverse {lo:?}..{hi:?}");
                }
            }
        }
    }
}

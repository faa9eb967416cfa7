//! `Builder::create_in_memory` (io README IO8): the whole API on a file system in memory, in
//! every buffer mode, against a `BTreeMap` oracle, with nothing written to the real file system
//! and every database on its own.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use swizzledb::{Database, PoolMode};

use crate::common::XorShift as Rng;

fn assert_matches(tree: &swizzledb::Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree.range(Unbounded, Unbounded).map(Result::unwrap).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want);
    assert_eq!(tree.len().unwrap(), oracle.len());
}

#[test]
fn io8_an_in_memory_database_keeps_the_whole_api_in_every_mode() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let db = Database::builder().mode(mode).pool_bytes(64 << 20).create_in_memory().unwrap();
        assert!(db.is_logged(), "the defaults are those of a database on disk");
        let tree = db.create_tree("t").unwrap();
        let mut oracle = BTreeMap::new();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            // A transaction of a few changes, committed or rolled back.
            let commit = round % 5 != 0;
            let mut txn = db.begin();
            let mut staged = oracle.clone();
            for _ in 0..8 {
                let key = (rng.next() % 2_000).to_be_bytes().to_vec();
                if rng.next().is_multiple_of(4) {
                    txn.delete(&tree, &key).unwrap();
                    staged.remove(&key);
                } else {
                    let value = vec![(rng.next() % 251) as u8; (rng.next() % 300) as usize];
                    txn.put(&tree, &key, &value).unwrap();
                    staged.insert(key, value);
                }
            }
            if commit {
                txn.commit().unwrap();
                oracle = staged;
            } else {
                txn.abort().unwrap();
            }
        }
        assert_matches(&tree, &oracle);
        // A snapshot reader sees the committed state while a writer holds a change.
        let (key, old) = oracle.iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
        let mut writer = db.begin();
        writer.put(&tree, &key, b"uncommitted").unwrap();
        assert_eq!(db.begin_read().get(&tree, &key).unwrap(), Some(old.clone()), "{mode:?}");
        assert_eq!(tree.get(&key).unwrap(), Some(old), "a plain read never sees it");
        writer.abort().unwrap();
        // Large values, a second tree, and dropping it.
        let other = db.create_tree("large").unwrap();
        let big = vec![7u8; 100_000];
        other.insert(b"big", &big).unwrap();
        assert_eq!(other.get(b"big").unwrap(), Some(big));
        db.checkpoint().unwrap();
        assert!(db.drop_tree("large").unwrap());
        assert_eq!(db.tree_names(), ["t"]);
        assert_matches(&tree, &oracle);
        db.close().unwrap();
    }
    assert!(!Path::new("/in-memory.swz").exists(), "nothing reached the real file system");
    assert!(!Path::new("/in-memory.swz.wal").exists());
}

#[test]
fn io8_in_memory_databases_share_nothing() {
    let a = Database::builder().create_in_memory().unwrap();
    let b = Database::builder().create_in_memory().unwrap();
    a.create_tree("t").unwrap().insert(b"k", b"a").unwrap();
    assert!(b.tree("t").is_err(), "b has no tree t");
    let bt = b.create_tree("t").unwrap();
    bt.insert(b"k", b"b").unwrap();
    assert_eq!(a.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(bt.get(b"k").unwrap().as_deref(), Some(&b"b"[..]));
}

#[test]
fn io8_concurrent_writers_on_an_in_memory_database_lose_nothing() {
    let db = Database::builder().create_in_memory().unwrap();
    let tree = db.create_tree("t").unwrap();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (db, tree) = (&db, &tree);
            s.spawn(move || {
                for i in 0..2_000u32 {
                    let mut txn = db.begin();
                    txn.insert(tree, &[t.to_be_bytes(), i.to_be_bytes()].concat(), &i.to_le_bytes()).unwrap();
                    txn.commit().unwrap();
                }
            });
        }
    });
    assert_eq!(tree.len().unwrap(), 8_000);
    for t in 0..4u32 {
        for i in (0..2_000u32).step_by(97) {
            let key = [t.to_be_bytes(), i.to_be_bytes()].concat();
            assert_eq!(tree.get(&key).unwrap(), Some(i.to_le_bytes().to_vec()));
        }
    }
}

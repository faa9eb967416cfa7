//! The map conveniences of a tree (`len`, `is_empty`, `first`, `last`, `scan_prefix`) and a
//! transaction's double-ended range read, against a `BTreeMap` after random writes, logged and
//! unlogged; `Builder::open_or_create` on a missing, an existing and an empty file.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound::{Included, Unbounded};
use swizzledb::{Database, Error, Tree};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn prefixed(oracle: &Map, prefix: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    oracle.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn check(tree: &Tree, oracle: &Map, prefixes: &[Vec<u8>]) {
    assert_eq!(tree.len().unwrap(), oracle.len());
    assert_eq!(tree.is_empty().unwrap(), oracle.is_empty());
    assert_eq!(tree.first().unwrap(), oracle.first_key_value().map(|(k, v)| (k.clone(), v.clone())));
    assert_eq!(tree.last().unwrap(), oracle.last_key_value().map(|(k, v)| (k.clone(), v.clone())));
    for p in prefixes {
        let want = prefixed(oracle, p);
        let got: Vec<_> = tree.scan_prefix(p).map(Result::unwrap).collect();
        assert_eq!(got, want, "prefix {p:?}");
        let rev: Vec<_> = tree.scan_prefix(p).rev().map(Result::unwrap).collect();
        assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>(), "prefix {p:?} reversed");
        let rev2: Vec<_> = tree.scan_prefix_rev(p).map(Result::unwrap).collect();
        assert_eq!(rev2, rev, "scan_prefix_rev {p:?}");
    }
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Few distinct bytes, 0xff included, so prefixes share keys and end in 0xff.
    prop::collection::vec(prop_oneof![Just(0u8), Just(1), Just(b'a'), Just(0xfe), Just(0xff)], 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn map_conveniences_match_a_btreemap(
        writes in prop::collection::vec((key_strategy(), proptest::option::of(0u16..300)), 0..400),
        prefixes in prop::collection::vec(key_strategy(), 1..6),
        logged in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .pool_bytes(4 << 20)
            .page_size(4096)
            .logging(logged)
            .commit_mode(swizzledb::CommitMode::Async)
            .create(dir.path().join("map.swz"))
            .unwrap();
        let tree = db.create_tree("t").unwrap();
        let mut oracle = Map::new();
        check(&tree, &oracle, &prefixes);
        for (k, v) in writes {
            match v {
                Some(v) => {
                    let value = vec![v as u8; usize::from(v)];
                    tree.upsert(&k, &value).unwrap();
                    oracle.insert(k, value);
                }
                None => {
                    tree.delete(&k).unwrap();
                    oracle.remove(&k);
                }
            }
        }
        check(&tree, &oracle, &prefixes);
        // A transaction's range read from both ends meets in the middle.
        let tx = db.begin();
        let mut scan = tx.range(&tree, Unbounded, Unbounded);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while let Some(r) = scan.next() {
            front.push(r.unwrap());
            match scan.next_back() {
                Some(r) => back.push(r.unwrap()),
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(&front, &all);
        let rev: Vec<_> = tx.range_rev(&tree, Unbounded, Unbounded).rev().map(Result::unwrap).collect();
        prop_assert_eq!(rev, all);
        drop(scan);
        tx.commit().unwrap();
    }
}

#[test]
fn a_range_from_both_ends_with_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        Database::builder().pool_bytes(4 << 20).page_size(4096).create(dir.path().join("r.swz")).unwrap();
    let tree = db.create_tree("t").unwrap();
    db.transact(|tx| {
        for k in 0..2000u32 {
            tx.put(&tree, &k.to_be_bytes(), &[7; 60])?;
        }
        Ok(())
    })
    .unwrap();
    let (lo, hi) = (100u32.to_be_bytes(), 1900u32.to_be_bytes());
    let mut scan = tree.range(Included(&lo[..]), Included(&hi[..]));
    assert_eq!(scan.next_back().unwrap().unwrap().0, hi.to_vec());
    assert_eq!(scan.next().unwrap().unwrap().0, lo.to_vec());
    assert_eq!(scan.count(), 1799, "the rest, each once");
    db.close().unwrap();
}

#[test]
fn open_or_create_creates_then_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oc.swz");
    let db = Database::builder().open_or_create(&path).unwrap();
    db.create_tree("t").unwrap().upsert(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = Database::builder().open_or_create(path.as_path()).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "opened, not recreated");
    // Open already: refused, not created anew.
    assert!(matches!(Database::builder().open_or_create(&path), Err(Error::AlreadyOpen(_))));
    db.close().unwrap();
    // An empty file is not a database: refused, left as it is.
    let empty = dir.path().join("empty.swz");
    std::fs::write(&empty, b"").unwrap();
    assert!(Database::builder().open_or_create(&empty).is_err());
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "never overwritten");
}

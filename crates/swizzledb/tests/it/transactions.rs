//! Transactions against a `BTreeMap` oracle, with logging on and off: committed changes stay,
//! aborted and dropped transactions leave no trace, in every buffer mode and through splits and
//! merges (RECOVERY.md R4–R6), whether written by put, delete or update_with.

use proptest::prelude::*;
use std::collections::BTreeMap;
use swizzledb::{Database, PoolMode, TreeError};

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u8),
    Delete(u16),
    /// `update_with`: sees the current value, writes `value(k, v)`.
    Update(u16, u8),
}

#[derive(Clone, Debug)]
enum End {
    Commit,
    Abort,
    Drop,
}

fn key(k: u16) -> Vec<u8> {
    format!("k{k:05}").into_bytes()
}

fn value(k: u16, v: u8) -> Vec<u8> {
    vec![v; 8 + usize::from(k % 17) * 20]
}

fn txn() -> impl Strategy<Value = (Vec<Op>, End)> {
    (
        prop::collection::vec(
            prop_oneof![
                3 => (0u16..400, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
                1 => (0u16..400).prop_map(Op::Delete),
                2 => (0u16..400, any::<u8>()).prop_map(|(k, v)| Op::Update(k, v)),
            ],
            1..60,
        ),
        prop_oneof![3 => Just(End::Commit), 1 => Just(End::Abort), 1 => Just(End::Drop)],
    )
}

fn run(mode: PoolMode, logging: bool, txns: &[(Vec<Op>, End)]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    let pool = if mode == PoolMode::MainMemory { 32 << 20 } else { 16 * 4096 };
    let builder = Database::builder().mode(mode).page_size(4096).pool_bytes(pool).logging(logging);
    let db = builder.clone().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    let mut oracle: BTreeMap<u16, u8> = BTreeMap::new();
    for (ops, end) in txns {
        let mut t = db.begin();
        let mut local = oracle.clone();
        for op in ops {
            match *op {
                Op::Put(k, v) => {
                    let existed = t.put(&tree, &key(k), &value(k, v)).unwrap();
                    assert_eq!(existed, local.insert(k, v).is_some());
                }
                Op::Delete(k) => assert_eq!(t.delete(&tree, &key(k)).unwrap(), local.remove(&k).is_some()),
                Op::Update(k, v) => {
                    let seen = t
                        .update_with(&tree, &key(k), |old, new| {
                            new.extend_from_slice(&value(k, v));
                            old.to_vec()
                        })
                        .unwrap();
                    match local.get_mut(&k) {
                        Some(cur) => {
                            assert_eq!(seen, Some(value(k, *cur)), "update_with sees the current value");
                            *cur = v;
                        }
                        None => assert_eq!(seen, None, "an absent key is not updated"),
                    }
                }
            }
        }
        match end {
            End::Commit => {
                t.commit().unwrap();
                oracle = local;
            }
            End::Abort => t.abort().unwrap(),
            End::Drop => drop(t),
        }
        tree.verify().unwrap();
    }
    let check = |db: &Database| {
        let tree = db.tree("t").unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(|r| r.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.iter().map(|(&k, &v)| (key(k), value(k, v))).collect();
        assert_eq!(got, want);
        tree.verify().unwrap();
    };
    check(&db);
    db.close().unwrap();
    let db = builder.open(&path).unwrap();
    check(&db);
    if logging {
        let s = db.restart_stats();
        assert_eq!((s.redone, s.losers), (0, 0), "a clean close leaves nothing to redo or undo: {s:?}");
    }
    db.close().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn r4_committed_stays_and_rolled_back_vanishes(
        txns in prop::collection::vec(txn(), 1..25),
        mode in prop_oneof![Just(PoolMode::Traditional), Just(PoolMode::Swizzling), Just(PoolMode::MainMemory)],
        logging in any::<bool>(),
    ) {
        run(mode, logging, &txns);
    }
}

/// A large transaction that splits many leaves, then aborts: every record goes, the splits stay
/// (T13) and the tree is valid.
#[test]
fn r5_rollback_of_a_transaction_that_split_the_tree() {
    for logging in [false, true] {
        let mut ops: Vec<Op> = (0..400).map(|k| Op::Put(k, 1)).collect();
        ops.extend((0..400).step_by(3).map(Op::Delete));
        run(
            PoolMode::Swizzling,
            logging,
            &[(ops.clone(), End::Commit), (ops.clone(), End::Abort), (ops, End::Drop)],
        );
    }
}

/// With logging on, the trees' own writes are transactions of their own (R12): they take the
/// key's lock, so a transaction holding it makes them wait and, as the younger, give up; an
/// insert of a present key changes nothing.
#[test]
fn r12_tree_writes_auto_commit_on_a_logged_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().logging(true).create(dir.path().join("t.swz")).unwrap();
    let tree = db.create_tree("t").unwrap();
    tree.insert(b"a", b"1").unwrap();
    assert!(tree.upsert(b"a", b"2").unwrap());
    assert!(matches!(tree.insert(b"a", b"3"), Err(TreeError::DuplicateKey)));
    tree.insert(b"b", b"1").unwrap();
    assert!(tree.delete(b"b").unwrap());
    let commits_before = db.log_stats().unwrap().appends;
    let mut t = db.begin();
    t.put(&tree, b"a", b"held").unwrap();
    // The auto-commit is younger than `t`: wait-die refuses it until it gives up.
    assert!(matches!(tree.upsert(b"a", b"x"), Err(TreeError::Transaction(_))));
    t.commit().unwrap();
    assert!(db.log_stats().unwrap().appends > commits_before);
    assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"held"[..]));
    assert_eq!(tree.get(b"b").unwrap(), None);
    db.close().unwrap();
}

/// A new database refuses a log directory that holds another database's log.
#[test]
fn create_refuses_a_stale_log_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    Database::builder().logging(true).create(&path).unwrap().close().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(Database::builder().logging(true).create(&path), Err(swizzledb::Error::StaleLog(_))));
}

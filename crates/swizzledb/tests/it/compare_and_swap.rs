//! Compare-and-swap (btree T24) against a `BTreeMap` oracle, in every logging and locking
//! configuration: a random sequence of swaps succeeds exactly when the oracle holds the expected
//! value; threads incrementing one counter through retry loops lose no increment; inside a
//! transaction a swap rolls back with it.

use proptest::prelude::*;
use std::collections::BTreeMap;
use swizzledb::{Builder, CompareAndSwapError, Database, Error, TreeError};

/// (logging, locking)
const CONFIGS: [(bool, bool); 3] = [(false, true), (true, true), (true, false)];

fn builder(logging: bool, locking: bool) -> Builder {
    Database::builder()
        .pool_bytes(4 << 20)
        .page_size(4096)
        .logging(logging)
        .lab(|l| l.locking(locking))
        .commit_mode(swizzledb::CommitMode::Async)
}

#[derive(Clone, Debug)]
struct Op {
    key: u8,
    /// `None`: expect the key absent; else the value expected, or a wrong guess.
    expected: Option<u8>,
    new: Option<u8>,
    /// Guess the oracle's current value instead of `expected`.
    informed: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (0u8..24, proptest::option::of(any::<u8>()), proptest::option::of(any::<u8>()), any::<bool>())
        .prop_map(|(key, expected, new, informed)| Op { key, expected, new, informed })
}

/// A value of varying size (so swaps split and merge leaves).
fn value(v: u8) -> Vec<u8> {
    vec![v; 1 + usize::from(v) * 3]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn t22_swaps_succeed_exactly_when_the_value_is_the_expected_one(
        ops in prop::collection::vec(op(), 1..300),
        config in 0usize..3,
    ) {
        let (logging, locking) = CONFIGS[config];
        let dir = tempfile::tempdir().unwrap();
        let db = builder(logging, locking).create(dir.path().join("cas.swz")).unwrap();
        let tree = db.create_tree("t").unwrap();
        let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for op in &ops {
            let key = vec![op.key; 1 + usize::from(op.key)];
            let current = oracle.get(&key).cloned();
            let expected = if op.informed { current.clone() } else { op.expected.map(value) };
            let new = op.new.map(value);
            let r = tree.compare_and_swap(&key, expected.as_deref(), new.as_deref()).unwrap();
            if current == expected {
                prop_assert_eq!(r, Ok(()));
                match new {
                    Some(v) => oracle.insert(key, v),
                    None => oracle.remove(&key),
                };
            } else {
                prop_assert_eq!(r, Err(CompareAndSwapError { current }));
            }
        }
        let got: BTreeMap<_, _> = tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
            .map(Result::unwrap).collect();
        prop_assert_eq!(got, oracle);
        tree.verify().unwrap();
    }
}

/// N threads each add 1 to one counter M times by read + compare-and-swap retry loops: the
/// final count is N * M, in every configuration (a swap that is not atomic loses increments).
#[test]
fn t22_concurrent_increments_lose_nothing() {
    const THREADS: u64 = 4;
    const EACH: u64 = 300;
    for (logging, locking) in CONFIGS {
        let dir = tempfile::tempdir().unwrap();
        let db = builder(logging, locking).create(dir.path().join("counter.swz")).unwrap();
        let tree = db.create_tree("t").unwrap();
        let retries = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..EACH {
                        let mut current = tree.get(b"counter").unwrap();
                        loop {
                            let n =
                                current.as_deref().map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()));
                            match tree.compare_and_swap(
                                b"counter",
                                current.as_deref(),
                                Some(&(n + 1).to_be_bytes()),
                            ) {
                                Ok(Ok(())) => break,
                                Ok(Err(e)) => {
                                    retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    current = e.current;
                                }
                                // An auto-commit that stayed refused its record lock: read again.
                                Err(TreeError::Transaction(_)) => current = tree.get(b"counter").unwrap(),
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                });
            }
        });
        let n = u64::from_be_bytes(tree.get(b"counter").unwrap().unwrap().try_into().unwrap());
        assert_eq!(n, THREADS * EACH, "logging {logging}, locking {locking}");
        db.close().unwrap();
    }
}

/// In a transaction a swap takes part in the rollback, and in a commit.
#[test]
fn t22_a_swap_in_a_transaction_rolls_back_with_it() {
    for (logging, locking) in CONFIGS {
        let dir = tempfile::tempdir().unwrap();
        let db = builder(logging, locking).create(dir.path().join("txn.swz")).unwrap();
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"a", b"1").unwrap();
        let mut tx = db.begin();
        assert_eq!(tx.compare_and_swap(&tree, b"a", Some(b"1"), Some(b"2")).unwrap(), Ok(()));
        assert_eq!(tx.compare_and_swap(&tree, b"b", None, Some(b"new")).unwrap(), Ok(()));
        assert_eq!(
            tx.compare_and_swap(&tree, b"a", Some(b"1"), None).unwrap(),
            Err(CompareAndSwapError { current: Some(b"2".to_vec()) }),
            "the transaction sees its own swap"
        );
        tx.abort().unwrap();
        assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(tree.get(b"b").unwrap(), None);
        db.transact(|tx| {
            assert_eq!(tx.compare_and_swap(&tree, b"a", Some(b"1"), None)?, Ok(()));
            Ok(())
        })
        .unwrap();
        assert_eq!(tree.get(b"a").unwrap(), None, "logging {logging}, locking {locking}");
        db.close().unwrap();
    }
}

/// Oversize keys and values are refused as for `upsert`, and nothing changes.
#[test]
fn t22_oversize_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = builder(true, true).create(dir.path().join("big.swz")).unwrap();
    let tree = db.create_tree("t").unwrap();
    let big = vec![0u8; swizzledb::max_value_len(4096) + 1];
    let r = tree.compare_and_swap(b"k", None, Some(&big));
    assert!(matches!(r, Err(TreeError::ValueTooLarge { .. }) | Err(TreeError::Transaction(_))), "{r:?}");
    let long = vec![1u8; swizzledb::max_key_len(4096) + 1];
    assert!(tree.compare_and_swap(&long, None, Some(b"v")).is_err());
    assert!(tree.is_empty().unwrap());
    let mut tx = db.begin();
    assert!(matches!(
        tx.compare_and_swap(&tree, b"k", None, Some(&big)),
        Err(Error::Tree(TreeError::ValueTooLarge { .. }))
    ));
    drop(tx);
    db.close().unwrap();
}

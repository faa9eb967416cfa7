//! Double-ended range scans against a `BTreeMap` range: random contents, random bounds, random
//! interleavings of `next` and `next_back` (and limits); the two ends stop where they meet, no
//! record is returned twice or skipped. With and without a read gate that checks (the gated
//! scans take other paths: closing keys, T18).

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;
use swizzledb_btree::{BTreeOwner, ReadGate, Result, Tree};
use swizzledb_buffer::{BufferPool, PoolConfig, PoolMode};

/// Passes everything, but checks (so scans take their gated path).
struct Checking;

impl ReadGate for Checking {
    fn try_pass(&self, _tree: &Tree, _key: Option<&[u8]>) -> Result<bool> {
        Ok(true)
    }
    fn wait(&self, _tree: &Tree, _key: Option<&[u8]>) -> Result<()> {
        Ok(())
    }
}

fn pool(dir: &tempfile::TempDir) -> Arc<BufferPool> {
    let config = PoolConfig {
        mode: PoolMode::Swizzling,
        pool_bytes: 128 * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap())
}

fn bound(b: u8, k: u16) -> Bound<Vec<u8>> {
    match b % 3 {
        0 => Unbounded,
        1 => Included(k.to_be_bytes().to_vec()),
        _ => Excluded(k.to_be_bytes().to_vec()),
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

type Entry = (Vec<u8>, Vec<u8>);

/// What the oracle returns for the same interleaving: `true` takes from the front.
fn oracle_walk(want: &[Entry], steps: &[bool], limit: usize) -> Vec<(bool, Option<Entry>)> {
    let (mut lo, mut hi, mut left) = (0, want.len(), limit);
    steps
        .iter()
        .map(|&front| {
            let got = if lo < hi && left > 0 {
                left -= 1;
                if front {
                    lo += 1;
                    Some(want[lo - 1].clone())
                } else {
                    hi -= 1;
                    Some(want[hi].clone())
                }
            } else {
                None
            };
            (front, got)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn double_ended_scans_match_a_btreemap(
        keys in prop::collection::btree_set(0u16..2000, 0..700),
        (sb, sk, eb, ek) in (any::<u8>(), 0u16..2100, any::<u8>(), 0u16..2100),
        steps in prop::collection::vec(any::<bool>(), 0..900),
        limit in prop_oneof![Just(usize::MAX), 0usize..50],
        gated in any::<bool>(),
        reversed in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir);
        let tree = Tree::create(&pool).unwrap();
        let mut oracle = BTreeMap::new();
        for k in &keys {
            // Values of varying length: leaves of varying record counts.
            let v = vec![*k as u8; usize::from(*k % 97)];
            tree.insert(&k.to_be_bytes(), &v).unwrap();
            oracle.insert(k.to_be_bytes().to_vec(), v);
        }
        let (start, end) = (bound(sb, sk), bound(eb, ek));
        // BTreeMap::range panics on start > end, or equal bounds both excluded: the tree's scan
        // returns nothing for those.
        let empty = match (&start, &end) {
            (Included(s) | Excluded(s), Included(e) | Excluded(e)) => {
                s > e || (s == e && !(matches!(start, Included(_)) && matches!(end, Included(_))))
            }
            _ => false,
        };
        let want: Vec<Entry> = if empty {
            Vec::new()
        } else {
            oracle.range((start.clone(), end.clone())).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let expect = oracle_walk(&want, &steps, limit);
        let gate = Checking;
        let got: Vec<(bool, Option<Entry>)> = if reversed {
            // A reverse scan's `next` is the range's `next_back`.
            let mut scan = if gated {
                tree.range_rev_gated(as_slice(&start), as_slice(&end), &gate)
            } else {
                tree.range_rev(as_slice(&start), as_slice(&end))
            }
            .limit(limit);
            steps.iter().map(|&front| {
                let r = if front { scan.next_back() } else { scan.next() };
                (front, r.map(|r| r.unwrap()))
            }).collect()
        } else {
            let mut scan = if gated {
                tree.range_gated(as_slice(&start), as_slice(&end), &gate)
            } else {
                tree.range(as_slice(&start), as_slice(&end))
            }
            .limit(limit);
            steps.iter().map(|&front| {
                let r = if front { scan.next() } else { scan.next_back() };
                (front, r.map(|r| r.unwrap()))
            }).collect()
        };
        prop_assert_eq!(got, expect);
    }
}

#[test]
fn rev_and_collect_from_both_ends_agree_with_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(&dir);
    let tree = Tree::create(&pool).unwrap();
    let mut oracle = BTreeMap::new();
    for k in 0..3000u32 {
        tree.insert(&k.to_be_bytes(), &[k as u8; 40]).unwrap();
        oracle.insert(k.to_be_bytes().to_vec(), vec![k as u8; 40]);
    }
    let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let rev: Vec<_> = tree.range(Unbounded, Unbounded).rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev, all.iter().rev().cloned().collect::<Vec<_>>());
    // Alternating ends meet in the middle, each record once.
    let mut scan = tree.range(Unbounded, Unbounded);
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        match (scan.next(), scan.next_back()) {
            (None, None) => break,
            (f, b) => {
                front.extend(f.map(|r| r.unwrap()));
                back.extend(b.map(|r| r.unwrap()));
            }
        }
    }
    back.reverse();
    front.extend(back);
    assert_eq!(front, all);
    assert!(scan.next().is_none() && scan.next_back().is_none(), "fused");
}

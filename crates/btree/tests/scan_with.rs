//! `next_with` of both scans returns the records `next` returns, in the same order, across
//! leaves, and the two can be mixed on one scan.

use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::Arc;
use swizzledb_btree::{BTreeOwner, Tree};
use swizzledb_buffer::{BufferPool, PoolConfig, PoolMode};

fn key(k: u32) -> Vec<u8> {
    format!("k{k:05}").into_bytes()
}

#[test]
fn next_with_matches_next_across_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let config = PoolConfig {
        mode: PoolMode::Swizzling,
        pool_bytes: 256 * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    let pool =
        Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let tree = Tree::create(&pool).unwrap();
    // Values of varying length, enough records for many leaves.
    for k in 0..2000u32 {
        tree.insert(&key(k), &vec![k as u8; (k % 97) as usize]).unwrap();
    }
    let (from, to) = (key(150), key(1850));
    let all: Vec<_> = tree.range(Included(&from), Excluded(&to)).map(Result::unwrap).collect();
    assert_eq!(all.len(), 1700);

    let mut scan = tree.range(Included(&from), Excluded(&to));
    let mut got = Vec::new();
    let mut n = 0;
    loop {
        // Alternate the two ways of reading.
        let r = if n % 3 == 0 {
            scan.next().map(Result::unwrap)
        } else {
            scan.next_with(|k, v| (k.to_vec(), v.to_vec())).map(Result::unwrap)
        };
        let Some(r) = r else { break };
        got.push(r);
        n += 1;
    }
    assert_eq!(got, all);

    let rev: Vec<_> = tree.range_rev(Unbounded, Excluded(&to)).map(Result::unwrap).collect();
    let mut scan = tree.range_rev(Unbounded, Excluded(&to));
    let mut got = Vec::new();
    while let Some(r) = scan.next_with(|k, v| (k.to_vec(), v.to_vec())) {
        got.push(r.unwrap());
    }
    assert_eq!(got, rev);
    assert_eq!(got.len(), 1850);
}

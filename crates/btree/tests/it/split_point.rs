//! T29: where a split falls. Interleaved ascending runs (as TPC-C's districts append their new
//! orders and order lines, each at the end of its own key range, inside a leaf that holds the
//! next range's keys too) leave nearly full leaves behind, and a split then moves only the
//! records after the insert; random inserts still split in the middle.

use std::collections::BTreeMap;
use std::sync::Arc;
use swizzledb_btree::{node, BTreeOwner, Tree};
use swizzledb_buffer::{BufferPool, PoolConfig, PoolMode};

const PAGE: usize = 4096;

fn tree(dir: &std::path::Path) -> Tree {
    let config = PoolConfig {
        mode: PoolMode::Swizzling,
        pool_bytes: 2048 * PAGE,
        page_size: PAGE,
        ..PoolConfig::default()
    };
    let pool = Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    Tree::create(&pool).unwrap()
}

/// District `d`'s `i`-th key: the district, then a big-endian sequence number.
fn key(d: u8, i: u32) -> Vec<u8> {
    let mut k = vec![b'd', d];
    k.extend_from_slice(&i.to_be_bytes());
    k
}

/// Leaves the records need at best: their bytes over a leaf's room.
fn fewest_leaves(records: usize, key_len: usize, value_len: usize) -> f64 {
    (records * (2 + key_len + value_len + 12)) as f64 / (PAGE - 64 - 32) as f64
}

#[test]
fn t29_interleaved_ascending_runs_leave_full_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let mut oracle = BTreeMap::new();
    let value = [7u8; 60];
    // Sixteen districts, each preloaded with a few keys so that every leaf holds several
    // districts' ranges, then appending round-robin.
    for i in 0..3000u32 {
        for d in 0..16u8 {
            tree.insert(&key(d, i), &value).unwrap();
            oracle.insert(key(d, i), value.to_vec());
        }
    }
    let shape = tree.verify().unwrap();
    assert_eq!(shape.records, oracle.len());
    let best = fewest_leaves(oracle.len(), 6, value.len());
    assert!(
        (shape.leaves as f64) < best * 1.15,
        "T29: {} leaves for {} records, against {best:.0} full ones: ascending runs split in the middle",
        shape.leaves,
        oracle.len()
    );
    for (k, v) in &oracle {
        assert_eq!(tree.get(k).unwrap().as_deref(), Some(&v[..]));
    }
}

#[test]
fn t29_random_inserts_still_split_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let value = [3u8; 60];
    let mut n = 0;
    for _ in 0..40_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if tree.insert(&x.to_be_bytes(), &value).is_ok() {
            n += 1;
        }
    }
    let shape = tree.verify().unwrap();
    assert_eq!(shape.records, n);
    // Random inserts into middle splits fill leaves to about ln 2 (69%): well above half, below
    // full, so neither every split at an end nor every split at the insert point.
    let fill = fewest_leaves(n, 8, value.len()) / shape.leaves as f64;
    assert!((0.6..0.8).contains(&fill), "random inserts fill leaves to {fill:.2}");
}

#[test]
fn t29_the_hint_follows_inserts_only() {
    let mut page = vec![0u8; PAGE];
    swizzledb_buffer::page::format(
        &mut page,
        swizzledb_buffer::PageId::new(1).unwrap(),
        swizzledb_buffer::page::PageType::Leaf,
        0,
    );
    node::init(&mut page, 0, None, None);
    assert!(!node::continues_ascending_run(&page, 0), "an empty node has no run");
    for (i, k) in [b"a", b"c", b"e"].iter().enumerate() {
        assert!(node::insert_leaf(&mut page, i, *k, b"v"));
    }
    assert!(node::continues_ascending_run(&page, 3), "the last insert took slot 2");
    assert!(!node::continues_ascending_run(&page, 2));
    assert!(node::insert_leaf(&mut page, 1, b"b", b"v"));
    assert!(node::continues_ascending_run(&page, 2), "the insert at slot 1 starts a run there");
    assert!(node::update_value(&mut page, 3, b"a longer value"), "an update that moves the record");
    assert!(node::continues_ascending_run(&page, 2), "an update is no insert");
}

//! Operations that lend records instead of copying them: `next_with` of both scans returns the
//! records `next` returns, in the same order, across leaves (the two can be mixed on one scan),
//! and `update_logged` reads and rewrites a record in one descent.

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

/// `update_logged` changes a record in one descent: `f` sees the current value and its result
/// comes back; an absent key calls nothing; values that grow split leaves on the way and every
/// record stays (T6, T11).
#[test]
fn update_logged_reads_and_writes_in_one_step_and_splits_when_needed() {
    use swizzledb_btree::log::LogFailure;
    use swizzledb_btree::{ChangeLog, LeafChange, PageChange};
    use swizzledb_buffer::{ExclusiveGuard, PageId};
    use swizzledb_sync::Lsn;

    /// A logged update: key, old value, new value.
    type Update = (Vec<u8>, Vec<u8>, Vec<u8>);
    /// Remembers every leaf update, to check what was logged.
    #[derive(Default)]
    struct Changes(std::sync::Mutex<Vec<Update>>);
    impl ChangeLog for Changes {
        fn leaf_change(
            &self,
            _: PageId,
            _: &ExclusiveGuard<'_>,
            c: &LeafChange<'_>,
            _: swizzledb_btree::Overflow<'_, '_>,
        ) -> Result<Lsn, LogFailure> {
            if let LeafChange::Update { key, old, new } = *c {
                self.0.lock().unwrap().push((key.to_vec(), old.to_vec(), new.to_vec()));
            }
            Ok(Lsn(1))
        }
        fn structure_change(&self, _: &[PageChange<'_, '_>], _: &[PageId]) -> Result<Lsn, LogFailure> {
            Ok(Lsn(1))
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let config = PoolConfig {
        mode: PoolMode::Swizzling,
        pool_bytes: 512 * 4096,
        page_size: 4096,
        ..PoolConfig::default()
    };
    let pool =
        Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let log = Changes::default();
    let tree = Tree::create_logged(&pool, Some(&log)).unwrap();
    for k in 0..600u32 {
        tree.put_logged(&key(k), &[1], false, &log).unwrap();
    }
    let absent = tree.update_logged(&key(9999), &log, |_, _| panic!("no record, no call")).unwrap();
    assert_eq!(absent, None);
    // Grow every value to 200 bytes: the leaves, full of 1-byte values, must split.
    for k in 0..600u32 {
        let seen = tree
            .update_logged(&key(k), &log, |old, new| {
                new.extend_from_slice(&[(k % 251) as u8; 200]);
                old.to_vec()
            })
            .unwrap();
        assert_eq!(seen, Some(vec![1]));
    }
    tree.verify().unwrap();
    for k in 0..600u32 {
        assert_eq!(tree.get(&key(k)).unwrap(), Some(vec![(k % 251) as u8; 200]));
    }
    let logged = log.0.lock().unwrap();
    assert_eq!(logged.len(), 600, "one update logged per record");
    assert!(logged.iter().all(|(_, old, new)| old == &[1] && new.len() == 200));
}

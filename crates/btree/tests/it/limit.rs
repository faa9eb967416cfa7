//! T19: a limited scan returns exactly the first `n` records of its range, in order (ascending
//! or descending), across leaves, with and without a read gate that checks, mixed with `next`; a limit of 0 returns
//! nothing.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;
use swizzledb_btree::{BTreeOwner, ReadGate, Result, Tree};
use swizzledb_buffer::{BufferPool, PoolConfig, PoolMode};

/// A range's two bounds.
type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn key(k: u32) -> Vec<u8> {
    format!("k{k:05}").into_bytes()
}

/// Passes everything, but checks (so scans take their gated path) and counts what it saw.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl ReadGate for Counting {
    fn try_pass(&self, _tree: &Tree, _key: Option<&[u8]>) -> Result<bool> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
    fn wait(&self, _tree: &Tree, _key: Option<&[u8]>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn t19_limited_scans_return_the_first_n_records() {
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
    let mut oracle = BTreeMap::new();
    // Every third key, values of varying length: many leaves, and starts between keys.
    for k in (0..3000u32).step_by(3) {
        let v = vec![k as u8; (k % 89) as usize];
        tree.insert(&key(k), &v).unwrap();
        oracle.insert(key(k), v);
    }
    let gate = Counting::default();
    let bounds: [Range; 4] = [
        (Unbounded, Unbounded),
        (Included(key(100)), Excluded(key(2500))),
        (Included(key(1001)), Included(key(1300))),
        (Excluded(key(2997)), Unbounded),
    ];
    for (start, end) in &bounds {
        let want: Vec<_> = oracle.range((start.clone(), end.clone())).collect();
        for n in [0, 1, 2, 7, 50, 333, 10_000] {
            let expect: Vec<_> = want.iter().take(n).map(|(k, v)| ((*k).clone(), (*v).clone())).collect();
            let (s, e) = (start.as_ref().map(Vec::as_slice), end.as_ref().map(Vec::as_slice));
            let mut scan = tree.range(s, e).limit(n);
            let mut got = Vec::new();
            let mut i = 0;
            loop {
                // Both ways of reading count against the limit.
                let r =
                    if i % 2 == 0 { scan.next_with(|k, v| (k.to_vec(), v.to_vec())) } else { scan.next() };
                let Some(r) = r else { break };
                got.push(r.unwrap());
                i += 1;
            }
            assert_eq!(got, expect, "range {start:?}..{end:?} limit {n}");
            assert!(scan.next().is_none(), "a finished scan stays finished");

            let gated: Vec<_> = tree.range_gated(s, e, &gate).limit(n).map(Result::unwrap).collect();
            assert_eq!(gated, expect, "gated, range {start:?}..{end:?} limit {n}");

            let expect_rev: Vec<_> =
                want.iter().rev().take(n).map(|(k, v)| ((*k).clone(), (*v).clone())).collect();
            let mut scan = tree.range_rev(s, e).limit(n);
            let mut got = Vec::new();
            while let Some(r) = scan.next_with(|k, v| (k.to_vec(), v.to_vec())) {
                got.push(r.unwrap());
            }
            assert_eq!(got, expect_rev, "descending, range {start:?}..{end:?} limit {n}");
            let gated: Vec<_> = tree.range_rev_gated(s, e, &gate).limit(n).map(Result::unwrap).collect();
            assert_eq!(gated, expect_rev, "descending gated, range {start:?}..{end:?} limit {n}");
        }
    }
    assert!(gate.0.load(std::sync::atomic::Ordering::Relaxed) > 0, "the gated path ran");
}

//! Every replacement policy, plain and structure-aware, and the BP-Wrapper'd LRU and 2Q, drive a
//! live pool that must evict: the tree matches a `BTreeMap` oracle, the pool's invariants hold
//! (B16's child counts included), and a structure-aware policy never proposes a page with
//! swizzled children (R8).

use std::collections::BTreeMap;
use swizzledb::lab::DatabaseExt as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use swizzledb::{Database, PolicySpec, PoolMode};

/// 24 frames of 4 KiB against ~5,000 records of 40 bytes: three levels, constant eviction.
fn run(spec: PolicySpec, mode: PoolMode) -> swizzledb::Stats {
    run_with(spec, mode, false)
}

/// `run`, with or without the background evictor (buffer README B31). Without, only the test's
/// thread evicts, so R3's "refused at most once" is exact: with it, a batch of the evictor's may
/// find every unblocked frame latched or still queued (BP-Wrapper) and propose a blocked root
/// again, as R4 allows.
fn run_with(spec: PolicySpec, mode: PoolMode, evictor: bool) -> swizzledb::Stats {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .lab(|l| l.background_eviction(evictor))
        .logging(false)
        .mode(mode)
        .page_size(4096)
        .pool_bytes(24 * 4096)
        .policy(spec)
        .lab(|l| l.seed(7))
        .create(dir.path().join("p.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(11);
    for step in 0..12_000u32 {
        let key = rng.gen_range(0..5_000u32).to_be_bytes();
        match rng.gen_range(0..10) {
            0 => assert_eq!(t.delete(&key).unwrap(), oracle.remove(&key).is_some(), "{spec} {mode}"),
            1..=4 => {
                let value = [step as u8; 40];
                t.upsert(&key, &value).unwrap();
                oracle.insert(key, value.to_vec());
            }
            _ => assert_eq!(t.get(&key).unwrap(), oracle.get(&key).cloned(), "{spec} {mode}"),
        }
    }
    let shape = t.verify().unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
    assert_eq!(shape.records as usize, oracle.len());
    db.pool().check_invariants().unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
    for (k, v) in &oracle {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v), "{spec} {mode}");
    }
    let stats = db.stats();
    assert!(stats.evictions > 100, "{spec} {mode}: only {} evictions", stats.evictions);
    stats
}

#[test]
fn r8_every_policy_plain_and_structure_aware_keeps_the_tree_intact() {
    for kind in PolicySpec::all() {
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let plain = run(kind, mode);
            let leaf = run(PolicySpec { leaf_only: true, ..kind }, mode);
            // The tree stays intact with the evictor racing the test's thread, too.
            run_with(kind, mode, true);
            run_with(PolicySpec { leaf_only: true, ..kind }, mode, true);
            // R3: the one tree root is refused at most once, then blocked.
            assert!(plain.rejected_root <= 1 && leaf.rejected_root <= 1, "{kind} {mode}");
            if mode == PoolMode::Swizzling {
                // Single-threaded, a leaf-only policy is told of every branch before it could
                // propose one (R8), so the pool never has to refuse one.
                assert_eq!(leaf.rejected_swizzled_children, 0, "leaf-{kind}: {leaf:?}");
            } else {
                assert_eq!(plain.rejected_swizzled_children + leaf.rejected_swizzled_children, 0);
            }
        }
    }
}

/// The BP-Wrapper'd policies whose hits lock (`bpw-lru`, `bpw-2q`) and the structure-aware
/// `leaf-bpw-2q` drive the live pool in both modes: the tree stays intact, the pool's invariants
/// hold, and the root is refused at most once (R3), as for the unwrapped policies.
#[test]
fn r1_bp_wrapped_policies_keep_the_tree_intact() {
    for name in ["bpw-lru", "bpw-2q", "leaf-bpw-2q"] {
        let spec: PolicySpec = name.parse().unwrap();
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let stats = run(spec, mode);
            assert!(stats.rejected_root <= 1, "{spec} {mode}: {stats:?}");
            run_with(spec, mode, true);
            if spec.leaf_only && mode == PoolMode::Swizzling {
                assert_eq!(stats.rejected_swizzled_children, 0, "{spec}: {stats:?}");
            }
        }
    }
}

/// BP-Wrapper's S and T reach the pool (`LabOptions::bp_queue`): a batch of one takes the lock for
/// every access, a batch of 64 far less often, and T above S is refused at `create`, naming both.
#[test]
fn bp_queue_sets_the_batch_and_refuses_a_threshold_above_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let spec: PolicySpec = "bpw-batch-lru".parse().unwrap();
    let open = |name: &str, s: usize, t: usize| {
        Database::builder()
            .logging(false)
            .page_size(4096)
            .pool_bytes(64 * 4096)
            .policy(spec)
            .lab(|l| l.bp_queue(s, t))
            .create(dir.path().join(name))
    };
    match open("bad.swz", 8, 16) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("batch threshold 16") && msg.contains("queue size 8"), "{msg}");
        }
        Ok(_) => panic!("T = 16 above S = 8 was accepted"),
    }
    let mut per_access = Vec::new();
    for (name, b) in [("one.swz", 1), ("many.swz", 64)] {
        let db = open(name, b, b).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..2_000u32 {
            t.upsert(&i.to_be_bytes(), b"value").unwrap();
        }
        for i in 0..20_000u32 {
            assert!(t.get(&(i % 2_000).to_be_bytes()).unwrap().is_some());
        }
        let s = db.stats();
        per_access.push(s.policy_lock_acquisitions as f64 / s.policy_accesses as f64);
    }
    assert!(per_access[0] >= 0.9, "batch 1: {per_access:?}");
    assert!(per_access[1] < 0.1, "batch 64: {per_access:?}");
}

//! What a pool's size costs before the pool is used (buffer README B4, B30, F1): the frame
//! region, the frame descriptors, the free frames and the page table are committed as frames
//! are handed out, so a large pool that holds a few pages takes memory and time for those.

use std::collections::BTreeMap;
use swizzledb::{CommitMode, Database, PoolMode};

/// The resident memory of this process in bytes (`/proc/self/statm`, Linux).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm.split_whitespace().nth(1).expect("resident field").parse().expect("a number");
    pages * 4096
}

#[test]
#[cfg(target_os = "linux")]
fn b30_a_large_pool_takes_memory_for_the_frames_it_uses_not_for_its_size() {
    // 2^25 frames of 8 KiB: 2 GiB of descriptors alone, were they all made up front.
    const POOL: usize = 256 << 30;
    const LIMIT: u64 = 512 << 20;
    for mode in PoolMode::ALL {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.swz");
        let builder = || Database::builder().mode(mode).pool_bytes(POOL).commit_mode(CommitMode::Async);
        let before = resident_bytes();
        let db = builder().create(&path).unwrap();
        let grown = resident_bytes().saturating_sub(before);
        assert!(grown < LIMIT, "{mode:?}: creating a {POOL}-byte pool took {grown} bytes of memory");
        let tree = db.create_tree("t").unwrap();
        let mut oracle = BTreeMap::new();
        for i in 0..2000u64 {
            let (k, v) = (i.wrapping_mul(0x9E37_79B9).to_be_bytes(), i.to_le_bytes());
            tree.upsert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        db.checkpoint().unwrap();
        db.close().unwrap();
        let db = builder().open(&path).unwrap();
        let tree = db.tree("t").unwrap();
        for (k, v) in &oracle {
            assert_eq!(tree.get(k).unwrap().as_deref(), Some(&v[..]), "{mode:?}");
        }
        db.close().unwrap();
        let grown = resident_bytes().saturating_sub(before);
        assert!(
            grown < LIMIT,
            "{mode:?}: a {POOL}-byte pool holding a few pages took {grown} bytes of memory"
        );
    }
}

/// Every replacement policy, plain, structure-aware and behind BP-Wrapper, over a pool of the
/// largest frame count: made without aborting the process, in memory for the frames it uses
/// (replacement README S1) when one thread or several fill it (buffer B30), and working — a few
/// thousand records written, evicted nowhere, read back.
#[test]
#[cfg(target_os = "linux")]
fn s1_every_policy_over_the_largest_pool_takes_memory_for_the_frames_it_uses() {
    const FRAMES: usize = u32::MAX as usize - 1;
    const LIMIT: u64 = 256 << 20;
    let mut specs = swizzledb::PolicySpec::all();
    specs.extend(
        swizzledb::PolicySpec::all()
            .into_iter()
            .map(|kind| swizzledb::PolicySpec { leaf_only: true, ..kind }),
    );
    specs.extend(
        ["bpw-lru", "bpw-2q", "leaf-bpw-2q", "bpw-batch-lru"]
            .map(|name| name.parse::<swizzledb::PolicySpec>().unwrap()),
    );
    for spec in specs {
        let before = resident_bytes();
        let db = Database::builder()
            .logging(false)
            .mode(PoolMode::Swizzling)
            .page_size(4096)
            .pool_bytes(FRAMES * 4096)
            .policy(spec)
            .create_in_memory()
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
        let tree = db.create_tree("t").unwrap();
        for i in 0..2000u32 {
            tree.upsert(&i.to_be_bytes(), &[7; 40]).unwrap();
        }
        // Threads other than this one have other home partitions of free frames (buffer B30):
        // the frames they fill must still be the lowest, or the policy's arrays grow to them.
        std::thread::scope(|s| {
            for t in 1..4u32 {
                let tree = &tree;
                s.spawn(move || {
                    for i in t * 10_000..t * 10_000 + 1000 {
                        tree.upsert(&i.to_be_bytes(), &[7; 40]).unwrap();
                    }
                });
            }
        });
        for i in [1999u32, 10_999, 20_999, 30_999] {
            assert_eq!(tree.get(&i.to_be_bytes()).unwrap().as_deref(), Some(&[7; 40][..]), "{spec}");
        }
        let grown = resident_bytes().saturating_sub(before);
        assert!(grown < LIMIT, "{spec}: a pool of {FRAMES} frames holding a few pages took {grown} bytes");
        db.close().unwrap();
    }
}

//! Tests of the optimistic descent (`optimistic.rs`, README T20, T21) on the pages of a real
//! tree: they need both files, so they sit above both.

use crate::node;
use crate::owner::BTreeOwner;
use crate::tree::Tree;
use std::sync::Arc;
use swizzledb_buffer::{BufferPool, PoolConfig, PoolMode, Shared, SharedGuard};

/// T20: a view of an unchanged node searches exactly as its latched bytes do — child
/// choice and leaf search — with keys whose slot heads tie, so the word-wise comparison of
/// the bytes behind the heads decides.
#[test]
fn t20_a_view_searches_as_the_latched_page_does() {
    let (_dir, pool, tree) = empty_tree(|_| {});
    let key = |i: u32| {
        let mut k = b"shared-middle-bytes:".to_vec();
        k.extend_from_slice(format!("{:07}", i * 7 % 10_000).as_bytes());
        k.extend(std::iter::repeat_n(b'z', (i % 13) as usize));
        k
    };
    for i in 0..3000 {
        tree.upsert(&key(i), b"value").unwrap();
    }
    let view = pool.view_root(tree.root).unwrap();
    let g: SharedGuard<'_> = pool.fix_root::<Shared>(tree.root);
    assert!(node::level(&g) >= 1, "the root must be an inner node");
    let mut probes: Vec<Vec<u8>> = (0..3000).map(key).collect();
    probes.extend((0..3000).map(|i| {
        let mut k = key(i);
        k.push(0);
        k
    }));
    probes.extend([Vec::new(), b"shared".to_vec(), b"shared-middle-bytes;".to_vec(), vec![0xff; 40]]);
    for k in &probes {
        assert_eq!(node::child_index(&view, k), node::child_index(&g, k), "{k:?}");
        assert_eq!(node::search(&view, k), node::search(&g, k), "{k:?}");
    }
    assert_eq!(node::level(&view), node::level(&g));
    assert_eq!(node::has_foster(&view), node::has_foster(&g));
    drop(g);
    assert!(view.validate());
}

/// T20: a view orders a key in its page against a probe as `<[u8]>::cmp` does, for every
/// count of leading bytes known equal (`skip`), keys of 0 to 24 bytes, and probes that differ
/// from the key at every position, run shorter or run longer: the word comparisons, the word
/// that ends the common part and the byte loop of short keys all decide as the bytes do, and
/// so does the view's test of a shared prefix.
#[test]
fn t20_a_view_compares_keys_as_their_bytes_do() {
    use crate::node::NodeBytes;
    let (_dir, pool, tree) = empty_tree(|_| {});
    let keys: Vec<Vec<u8>> = (0..=24u8).map(|n| (0..n).map(|i| i.wrapping_mul(37) ^ n).collect()).collect();
    for k in &keys {
        tree.upsert(k, b"v").unwrap();
    }
    let view = pool.view_root(tree.root).unwrap();
    let g: SharedGuard<'_> = pool.fix_root::<Shared>(tree.root);
    assert!(node::is_leaf(&g), "25 short records fit one leaf");
    let page: &[u8] = &g;
    let mut checked = 0;
    for i in 0..node::count(page) {
        let key = node::key(page, i);
        let off = key.as_ptr() as usize - page.as_ptr() as usize;
        let mut probes =
            vec![key.to_vec(), [key, &[0]].concat(), [key, &[0xff, 1, 2, 3, 4, 5, 6, 7, 8]].concat()];
        probes.extend((0..key.len()).map(|n| key[..n].to_vec()));
        for at in 0..key.len() {
            for delta in [1u8, 0x80, 0xff] {
                let mut p = key.to_vec();
                p[at] = p[at].wrapping_add(delta);
                probes.push(p);
            }
        }
        for p in &probes {
            let common = key.iter().zip(p).take_while(|(a, b)| a == b).count();
            for skip in 0..=common {
                assert_eq!(view.cmp_key_at(off, key.len(), skip, p), key.cmp(p), "{key:?} {p:?} skip {skip}");
                checked += 1;
            }
            for n in 0..=key.len().min(p.len()) {
                assert_eq!(view.eq_prefix_at(off, n, p), key[..n] == p[..n], "{key:?} {p:?} prefix {n}");
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
    drop(g);
    assert!(view.validate());
}

/// An empty tree in a swizzling pool of 4 KiB pages, with `tweak` applied to the pool's
/// configuration.
fn empty_tree(tweak: impl FnOnce(&mut PoolConfig)) -> (tempfile::TempDir, Arc<BufferPool>, Tree) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = PoolConfig { mode: PoolMode::Swizzling, page_size: 4096, ..PoolConfig::default() };
    tweak(&mut config);
    let pool =
        Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
    let tree = Tree::create(&pool).unwrap();
    (dir, pool, tree)
}

/// A tree of a few thousand records in a pool of `config` (swizzling unless it says), every
/// leaf read once through a latched `get_with`, so that it is resident and swizzled.
fn warm_tree(tweak: impl FnOnce(&mut PoolConfig)) -> (tempfile::TempDir, Arc<BufferPool>, Tree) {
    let (dir, pool, tree) = empty_tree(|c| {
        c.optimistic_leaf_reads = true;
        tweak(c);
    });
    for i in 0..3000u32 {
        tree.upsert(&i.to_be_bytes(), &[i as u8; 37]).unwrap();
    }
    (dir, pool, tree)
}

/// T21: with the default policy (GCLOCK, whose hits need no latch, replacement R11) a read
/// goes down to the leaf without latching anything and copies the value the latched read
/// gives; a key that is not there is a valid "not found".
#[test]
fn t21_a_read_without_latches_finds_what_the_latched_read_finds() {
    let (_dir, pool, tree) = warm_tree(|_| ());
    assert!(pool.optimistic_leaf_reads());
    let mut out = Vec::new();
    for i in 0..3000u32 {
        let want = tree
            .leaf_shared(&i.to_be_bytes())
            .map(|g| node::search(&g, &i.to_be_bytes()).ok().map(|at| node::value(&g, at).to_vec()));
        let want = want.unwrap();
        assert_eq!(tree.optimistic().get(&i.to_be_bytes(), &mut out), Some(true), "key {i}");
        assert_eq!(Some(&out), want.as_ref(), "key {i}");
    }
    assert_eq!(tree.optimistic().get(&5000u32.to_be_bytes(), &mut out), Some(false));
    assert_eq!(tree.optimistic().get(b"", &mut out), Some(false));
}

/// T21: the read never waits for a latch. With the leaf held exclusively by this very thread
/// (a writer in the middle of a change), the read gives up after its restarts and leaves
/// the key to the latched path, instead of waiting for ever or reading the half-changed leaf.
#[test]
fn t21_a_leaf_held_by_a_writer_sends_the_read_to_the_latched_path() {
    let (_dir, pool, tree) = warm_tree(|_| ());
    let key = 1234u32.to_be_bytes();
    let restarts = pool.stats().optimistic_restarts;
    let (leaf, _) = tree.leaf_exclusive(&key).unwrap();
    let mut out = Vec::new();
    assert_eq!(tree.optimistic().get(&key, &mut out), None);
    assert!(pool.stats().optimistic_restarts > restarts, "the writer was seen");
    drop(leaf);
    assert_eq!(tree.optimistic().get(&key, &mut out), Some(true));
}

/// T21, R11: only when asked for, only with a policy that takes hits without a latch, and
/// only where views are allowed (B24), are leaves read without latches; otherwise `get`
/// latches the leaf.
#[test]
fn t21_leaf_reads_need_views_and_a_policy_that_takes_hits_without_a_latch() {
    use swizzledb_buffer::PolicySpec;
    for (policy, latch_free) in
        [("gclock", true), ("clock", true), ("sieve", true), ("lru", false), ("2q", false)]
    {
        let spec: PolicySpec = policy.parse().unwrap();
        let (_dir, pool, tree) = warm_tree(|c| c.policy = spec);
        assert_eq!(pool.optimistic_leaf_reads(), latch_free, "{policy}");
        assert_eq!(tree.optimistic().get(&7u32.to_be_bytes(), &mut Vec::new()).is_some(), latch_free);
        assert_eq!(tree.get(&7u32.to_be_bytes()).unwrap(), Some(vec![7; 37]), "{policy}");
    }
    let (_dir, pool, _) = warm_tree(|c| c.mode = PoolMode::Traditional);
    assert!(!pool.optimistic_leaf_reads());
    let (_dir, pool, _) = warm_tree(|c| c.optimistic_reads = false);
    assert!(!pool.optimistic_leaf_reads());
    let (_dir, pool, _) = warm_tree(|c| c.optimistic_leaf_reads = false);
    assert!(!pool.optimistic_leaf_reads(), "off unless asked for");
    let (_dir, pool, tree) = warm_tree(|c| {
        c.mode = PoolMode::MainMemory;
        c.policy = "lru".parse().unwrap();
    });
    assert!(pool.optimistic_leaf_reads(), "main-memory mode has no policy to tell");
    assert_eq!(tree.optimistic().get(&7u32.to_be_bytes(), &mut Vec::new()), Some(true));
}

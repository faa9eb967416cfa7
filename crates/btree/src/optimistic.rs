//! Optimistic descents (T20): inner nodes are read without latching them, through the buffer
//! pool's version-validated views (buffer README B24), and only the leaf — or the node where a
//! descent must go on with latches — is latched. A descent that finds a page changed under it
//! starts again; after a few restarts, or wherever it meets something it does not handle (a
//! foster child, an unswizzled swip, a leaf root), it hands over to lock coupling (T8). A
//! child it cannot load (I/O error, damage) fails the descent with the pool's error.

use crate::node;
use swizzledb_buffer::{BufferPool, FrameId, LatchKind, PageGuard, PageView, SharedGuard, Step};

/// Restarts before a descent gives up on reading optimistically: a page that keeps changing is
/// better waited for with a latch than re-read.
const MAX_RESTARTS: u32 = 8;

/// Where an optimistic descent stopped.
pub(crate) enum Reached<'a, M: LatchKind> {
    /// The leaf whose range holds the key (or the foster chain that does), latched in `M`.
    Leaf(PageGuard<'a, M>),
    /// An inner node on the key's path, latched shared: the descent goes on with lock coupling
    /// from here (its swip to the next node is not swizzled, or it has a foster child).
    Inner(SharedGuard<'a>),
}

/// One attempt's outcome.
enum Attempt<'a, M: LatchKind> {
    Reached(Reached<'a, M>),
    /// A page changed under the reader: start again.
    Restart,
    /// Lock coupling from the root does the rest.
    HandOver,
    /// Loading a child failed (I/O, or damage single-page recovery could not mend): the error
    /// is the descent's, not retried with latches (a second read that succeeds would hide it).
    Failed(swizzledb_buffer::BufferError),
}

/// A tree's root in its pool: all an optimistic descent needs of the tree (`Tree::optimistic`).
pub(crate) struct Root<'p> {
    pub(crate) pool: &'p BufferPool,
    pub(crate) root: FrameId,
}

impl<'p> Root<'p> {
    /// Descends towards `key` optimistically (T20), or `None` where lock coupling from the root
    /// must do it: optimistic reads are off (traditional mode, a trace, timed fixes), the root
    /// is a leaf, or the tree kept changing under the reader. The caller holds no latch.
    ///
    /// # Errors
    /// Loading a node failed (the pool's error).
    pub(crate) fn descend<M: LatchKind>(
        &self,
        key: &[u8],
    ) -> Result<Option<Reached<'p, M>>, swizzledb_buffer::BufferError> {
        let pool = self.pool;
        if !pool.optimistic_reads() {
            return Ok(None);
        }
        for _ in 0..MAX_RESTARTS {
            match self.attempt::<M>(key) {
                Attempt::Reached(r) => return Ok(Some(r)),
                Attempt::HandOver => return Ok(None),
                Attempt::Failed(e) => return Err(e),
                Attempt::Restart => {
                    pool.count_optimistic_restart();
                    std::hint::spin_loop();
                }
            }
        }
        Ok(None)
    }

    fn attempt<M: LatchKind>(&self, key: &[u8]) -> Attempt<'p, M> {
        let Some(mut view) = self.pool.view_root(self.root) else { return Attempt::Restart };
        let mut expect: Option<u8> = None;
        loop {
            let level = node::level(&view);
            if level == 0 || expect.is_some_and(|e| e != level) {
                // A leaf root, or a level other than one below the parent: valid only on a
                // damaged tree (or a leaf root), which lock coupling handles.
                return if view.validate() { Attempt::HandOver } else { Attempt::Restart };
            }
            if node::has_foster(&view) {
                return go_on_latched(view);
            }
            let off = node::child_swip_off(&view, node::child_index(&view, key));
            if level == 1 {
                return match view.fix_child::<M>(off) {
                    Step::Ready(leaf) if node::is_leaf(&leaf) => Attempt::Reached(Reached::Leaf(leaf)),
                    Step::Ready(_) => Attempt::HandOver,
                    Step::Retry => Attempt::Restart,
                    Step::Unswizzled => load_then_latch(view, off),
                };
            }
            view = match view.child(off) {
                Step::Ready(child) => child,
                Step::Retry => return Attempt::Restart,
                Step::Unswizzled => return load_then_latch(view, off),
            };
            expect = Some(level - 1);
        }
    }
}

/// One attempt of a read (T21).
enum Read {
    /// A valid read: whether the key was found (its value is in the buffer).
    Done(bool),
    /// A page changed under the reader: start again.
    Restart,
    /// The latched path does the rest: a swip that is a page id (a miss, read with B32 there),
    /// a foster child, a damaged page.
    HandOver,
}

impl Root<'_> {
    /// T21: reads the value under `key` with no latch at all, leaf included: the leaf is read
    /// through a view like the inner nodes (buffer README B33), its value copied into `out`,
    /// and the copy used only once the leaf's view validates; the hit then reaches the policy
    /// without a latch. `Some(found)`: a valid read (the value in `out` if found). `None`: the
    /// pool does not allow it (no optimistic reads, or a policy that needs a latch for its
    /// hits, replacement R11), the leaf is not resident or has a foster child, or the tree kept
    /// changing: read with latches. The caller holds no latch.
    pub(crate) fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        let pool = self.pool;
        if !pool.optimistic_leaf_reads() {
            return None;
        }
        for _ in 0..MAX_RESTARTS {
            match self.read_attempt(key, out) {
                Read::Done(found) => return Some(found),
                Read::HandOver => return None,
                Read::Restart => {
                    pool.count_optimistic_restart();
                    std::hint::spin_loop();
                }
            }
        }
        None
    }

    fn read_attempt(&self, key: &[u8], out: &mut Vec<u8>) -> Read {
        let Some(mut view) = self.pool.view_root(self.root) else { return Read::Restart };
        let mut expect: Option<u8> = None;
        let settle = |view: &PageView<'_>| if view.validate() { Read::HandOver } else { Read::Restart };
        loop {
            let level = node::level(&view);
            if expect.is_some_and(|e| e != level) || node::has_foster(&view) {
                return settle(&view);
            }
            if level == 0 {
                let found = match node::search(&view, key) {
                    // T22: a large value is read latched, leaf and chain.
                    Ok(i) if node::is_stub(&view, i) => return settle(&view),
                    Ok(i) => {
                        node::copy_value(&view, i, out);
                        true
                    }
                    Err(_) => false,
                };
                if !view.validate() {
                    return Read::Restart;
                }
                view.record_hit();
                return Read::Done(found);
            }
            let off = node::child_swip_off(&view, node::child_index(&view, key));
            view = match view.child(off) {
                Step::Ready(child) => child,
                Step::Retry => return Read::Restart,
                Step::Unswizzled => return settle(&view),
            };
            expect = Some(level - 1);
        }
    }
}

/// The child at `off` is not swizzled: reads it into the pool while this thread holds no latch
/// (buffer README B32), then goes on latched from the view if the node is unchanged; a read
/// that takes long enough for the node to change costs a restart, not a latch held across the
/// read. If the read fails, the latched step reads again and reports the error.
fn load_then_latch<M: LatchKind>(view: PageView<'_>, off: usize) -> Attempt<'_, M> {
    match view.load_child(off) {
        Ok(Step::Retry) => Attempt::Restart,
        Ok(_) => go_on_latched(view),
        Err(e) => Attempt::Failed(e),
    }
}

/// Latches the viewed inner node shared, if it is unchanged, to go on from it with latches.
fn go_on_latched<M: LatchKind>(view: PageView<'_>) -> Attempt<'_, M> {
    match view.lock_shared() {
        Some(g) => Attempt::Reached(Reached::Inner(g)),
        None => Attempt::Restart,
    }
}

#[cfg(test)]
mod tests {
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
        let dir = tempfile::tempdir().unwrap();
        let config = PoolConfig { mode: PoolMode::Swizzling, page_size: 4096, ..PoolConfig::default() };
        let pool =
            Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
        let tree = Tree::create(&pool).unwrap();
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

    /// A tree of a few thousand records in a pool of `config` (swizzling unless it says), every
    /// leaf read once through a latched `get_with`, so that it is resident and swizzled.
    fn warm_tree(tweak: impl FnOnce(&mut PoolConfig)) -> (tempfile::TempDir, Arc<BufferPool>, Tree) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = PoolConfig {
            mode: PoolMode::Swizzling,
            page_size: 4096,
            optimistic_leaf_reads: true,
            ..PoolConfig::default()
        };
        tweak(&mut config);
        let pool =
            Arc::new(BufferPool::create(&dir.path().join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap());
        let tree = Tree::create(&pool).unwrap();
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
}

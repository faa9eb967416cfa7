//! `Tree::approximate_len` (btree README T30): exact for one leaf, close to `len` for larger
//! trees built in key order or at random, after deletes, in every buffer mode, and cheap: it
//! reads `O(height)` pages, not the leaves.

use rand::{Rng, SeedableRng};
use swizzledb::{Database, PoolMode};

fn within(estimate: u64, exact: usize, tolerance: f64) -> bool {
    (estimate as f64 - exact as f64).abs() <= tolerance * exact as f64
}

#[test]
fn t30_the_estimate_is_close_to_the_count() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .mode(mode)
            .page_size(4096)
            .logging(false)
            .pool_bytes(16384 * 4096)
            .create(dir.path().join("len.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        assert_eq!(t.approximate_len().unwrap(), 0);
        for i in 0..20u32 {
            t.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        assert_eq!(t.approximate_len().unwrap(), 20, "{mode:?}: one leaf is counted exactly");

        // In key order, then at random: about 2,000 leaves either way.
        let sequential = db.create_tree("sequential").unwrap();
        for i in 0..100_000u32 {
            sequential.insert(&i.to_be_bytes(), &[1u8; 50]).unwrap();
        }
        let random = db.create_tree("random").unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..100_000 {
            random.upsert(&rng.gen::<u64>().to_be_bytes(), &[2u8; 50]).unwrap();
        }
        for tree in [&sequential, &random] {
            let (estimate, exact) = (tree.approximate_len().unwrap(), tree.len().unwrap());
            assert!(within(estimate, exact, 0.15), "{mode:?}: estimate {estimate}, exact {exact}");
        }
        // Every other key deleted: the estimate follows.
        for i in (0..100_000u32).step_by(2) {
            sequential.delete(&i.to_be_bytes()).unwrap();
        }
        let (estimate, exact) = (sequential.approximate_len().unwrap(), sequential.len().unwrap());
        assert!(within(estimate, exact, 0.15), "{mode:?}: after deletes, estimate {estimate}, exact {exact}");

        // It reads a few dozen pages at most, not the 2,000 leaves.
        let before = db.stats();
        random.approximate_len().unwrap();
        let after = db.stats();
        let fixes = after.fixes - before.fixes;
        assert!(fixes < 60, "{mode:?}: {fixes} page fixes for an estimate");
    }
}

/// T30: a tree of one leaf is counted exactly, logged and unlogged — after deletes by the tree's
/// handle and by a transaction, and, as the docs say it counts what the pages hold, with a
/// running transaction's uncommitted insert and delete included, and again after its rollback.
#[test]
fn t30_one_leaf_is_counted_exactly_after_deletes_and_with_uncommitted_changes() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().logging(logging).create(dir.path().join("one-leaf.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..10u8 {
            t.insert(&[i], b"v").unwrap();
        }
        for i in 0..4u8 {
            assert!(t.delete(&[i]).unwrap());
        }
        assert_eq!(t.approximate_len().unwrap(), 6, "logging {logging}: after deletes");
        db.transact(|tx| {
            tx.delete(&t, &[5])?;
            tx.delete(&t, &[6])
        })
        .unwrap();
        assert_eq!(t.approximate_len().unwrap(), 4, "logging {logging}: after a transaction's deletes");
        let mut tx = db.begin();
        tx.insert(&t, &[100], b"v").unwrap();
        tx.insert(&t, &[101], b"v").unwrap();
        tx.delete(&t, &[7]).unwrap();
        assert_eq!(t.approximate_len().unwrap(), 5, "logging {logging}: uncommitted changes count");
        tx.abort().unwrap();
        assert_eq!(t.approximate_len().unwrap(), 4, "logging {logging}: after the rollback");
        assert_eq!(t.len().unwrap(), 4, "logging {logging}");
    }
}

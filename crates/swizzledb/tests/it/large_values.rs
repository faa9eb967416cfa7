//! Large values through the engine (btree README T22, RECOVERY.md R8/R9): values up to 1 MiB
//! and beyond in overflow pages, committed, rolled back, crashed and restarted (classical and
//! instant restart), with every allocated page accounted for afterwards.

use crate::common;

use common::new_fs;
use std::sync::Arc;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Database, Error, PoolMode, RestartMode, Tree, TreeError, MAX_VALUE_LEN};
use swizzledb_io::{CrashMode, FaultFs};

const PATH: &str = "/crash/large.swz";

fn builder(mode: PoolMode, fs: &FaultFs) -> swizzledb::Builder {
    Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(if mode == PoolMode::MainMemory { 256 << 20 } else { 32 << 20 })
        .lab(|l| l.vfs(Arc::new(fs.clone())))
}

/// A value of `len` bytes that differs from every other (len, seed).
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// Every allocated page is a node or an overflow page of one of the database's trees (T22 4).
pub(crate) fn assert_no_leak(db: &Database, context: &str) {
    let alloc = db.pool().allocation();
    let mut reachable = 0;
    for name in db.tree_names() {
        let shape = db.tree(&name).unwrap().verify().unwrap_or_else(|e| panic!("{context}: {e}"));
        reachable += shape.nodes + shape.overflow_pages;
    }
    let allocated = alloc.page_count as usize - 1 - alloc.free_pages.len();
    assert_eq!(allocated, reachable, "{context}: allocated pages that no tree reaches");
}

fn contents(tree: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(Result::unwrap).collect()
}

/// R4, R10 with large values: a committed transaction of 1 MiB values survives a crash; an
/// aborted one and one left open leave nothing, and their chains are freed; in every mode.
#[test]
fn t22_large_values_survive_a_crash_and_rollbacks_free_their_chains() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let fs = new_fs();
        let db = builder(mode, &fs).create(PATH).unwrap();
        let t = db.create_tree("blobs").unwrap();
        let sizes = [100, 4096, 64 << 10, 1 << 20];
        let mut want = Vec::new();
        let mut tx = db.begin();
        for (i, &len) in sizes.iter().enumerate() {
            let k = format!("committed-{i}").into_bytes();
            tx.put(&t, &k, &value(len, i as u8)).unwrap();
            want.push((k, value(len, i as u8)));
        }
        tx.commit().unwrap();
        // Replaced in place: large to small and small to large, committed.
        t.upsert(b"committed-3", b"small now").unwrap();
        t.upsert(b"committed-0", &value(300_000, 9)).unwrap();
        want[3].1 = b"small now".to_vec();
        want[0].1 = value(300_000, 9);
        let mut tx = db.begin();
        tx.put(&t, b"aborted", &value(1 << 20, 1)).unwrap();
        tx.put(&t, b"committed-1", &value(700_000, 2)).unwrap();
        tx.delete(&t, b"committed-2").unwrap();
        tx.abort().unwrap();
        assert_eq!(contents(&t), want, "{mode:?}: after the abort");
        assert_no_leak(&db, &format!("{mode:?} after the abort"));
        // Left open at the crash: rolled back by restart.
        let mut open = db.begin();
        open.put(&t, b"open", &value(1 << 20, 3)).unwrap();
        open.put(&t, b"committed-1", &value(1 << 20, 4)).unwrap();
        // A power loss (io README IO10): the dead instance's drop and threads cannot touch the
        // files any more, as `crash` alone would let them (a checkpoint or log recycling after
        // it could rename or remove a segment of the new state).
        fs.power_off(CrashMode::DropUnsynced);
        drop(open);
        drop(t);
        drop(db);
        fs.power_on();

        let db = builder(mode, &fs).open(PATH).unwrap();
        let t = db.tree("blobs").unwrap();
        assert_eq!(contents(&t), want, "{mode:?}: after the crash");
        for (k, v) in &want {
            assert_eq!(t.get(k).unwrap().as_ref(), Some(v));
        }
        assert_no_leak(&db, &format!("{mode:?} after restart"));
        // Deleting frees every chain, and the pages are reused.
        for (k, _) in &want {
            assert!(t.delete(k).unwrap());
        }
        assert_eq!(t.verify().unwrap().overflow_pages, 0);
        assert_no_leak(&db, &format!("{mode:?} after the deletes"));
        let pages = db.pool().allocation().page_count;
        for (k, v) in &want {
            t.insert(k, v).unwrap();
        }
        assert_eq!(db.pool().allocation().page_count, pages, "{mode:?}: freed overflow pages are reused");
        db.close().unwrap();
    }
}

/// Instant restart (RECOVERY.md R17/R18) rebuilds overflow pages from the log archive on fetch,
/// and the decoupled cleaner writes them from it.
#[test]
fn t22_instant_restart_and_the_decoupled_cleaner_rebuild_overflow_pages() {
    let fs = new_fs();
    let b = || {
        builder(PoolMode::Swizzling, &fs)
            .log_archive(true)
            .restart_mode(RestartMode::Instant)
            .lab(|l| l.cleaner(swizzledb::Cleaner::Decoupled))
    };
    let db = b().create(PATH).unwrap();
    let t = db.create_tree("blobs").unwrap();
    for i in 0..6u8 {
        t.insert(&[i], &value(200_000 + usize::from(i) * 50_000, i)).unwrap();
    }
    db.checkpoint().unwrap();
    t.upsert(&[1], &value(512 << 10, 77)).unwrap();
    t.delete(&[2]).unwrap();
    fs.power_off(CrashMode::DropUnsynced);
    drop(t);
    drop(db);
    fs.power_on();
    let db = b().open(PATH).unwrap();
    let t = db.tree("blobs").unwrap();
    for i in 0..6u8 {
        let want = match i {
            1 => Some(value(512 << 10, 77)),
            2 => None,
            _ => Some(value(200_000 + usize::from(i) * 50_000, i)),
        };
        assert_eq!(t.get(&[i]).unwrap(), want, "key {i}");
    }
    assert_no_leak(&db, "after instant restart");
    db.close().unwrap();
}

/// The documented limits: `MAX_VALUE_LEN` on a roomy database, an eighth of a small pool, one log
/// record of a small log segment; a refused value changes nothing.
#[test]
fn t22_value_limits_are_documented_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().pool_bytes(64 << 20).create(dir.path().join("a.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    assert_eq!(t.max_value_len(), MAX_VALUE_LEN);
    t.insert(b"max", &value(MAX_VALUE_LEN, 5)).unwrap();
    assert_eq!(t.get(b"max").unwrap(), Some(value(MAX_VALUE_LEN, 5)));
    let err = t.insert(b"over", &vec![0; MAX_VALUE_LEN + 1]).unwrap_err();
    assert!(matches!(err, TreeError::ValueTooLarge { max: MAX_VALUE_LEN, .. }), "{err}");
    db.close().unwrap();
    // The read-only verifier counts the chain's pages with the tree's and finds none lost.
    let report = swizzledb::inspect::DatabaseFile::open(dir.path().join("a.swz")).unwrap().verify();
    assert!(report.is_clean(), "{:?}", report.damage);
    let shape = report.trees[0].1.unwrap();
    assert_eq!((shape.large_values, shape.overflow_pages), (1, MAX_VALUE_LEN.div_ceil(8192 - 48)));
    assert_eq!(report.unreachable_pages, Some(0));

    let small =
        Database::builder().page_size(4096).pool_bytes(1 << 20).create(dir.path().join("b.swz")).unwrap();
    let t = small.create_tree("t").unwrap();
    assert_eq!(t.max_value_len(), 256 / 8 * (4096 - 48), "an eighth of 256 frames");
    small.close().unwrap();

    let short_log = Database::builder()
        .page_size(4096)
        .log_segment_bytes(64 << 10)
        .max_log_bytes(1 << 20)
        .create(dir.path().join("c.swz"))
        .unwrap();
    let t = short_log.create_tree("t").unwrap();
    let max = t.max_value_len();
    assert!(max < 64 << 10 && max > 32 << 10, "one record of a 64 KiB segment: {max}");
    t.insert(b"fits", &value(max, 1)).unwrap();
    assert!(matches!(t.insert(b"no", &value(max + 1, 1)), Err(TreeError::ValueTooLarge { .. })));
    assert_eq!(t.get(b"no").unwrap(), None);
    // Every writer meets the same limit: compare-and-swap too, in and out of a transaction
    // (it once checked only the page size's, and stored a value no backup could copy).
    let too_long = value(max + 1, 2);
    let cas = t.compare_and_swap(b"no", None, Some(&too_long));
    assert!(matches!(cas, Err(TreeError::ValueTooLarge { .. })), "{cas:?}");
    let cas = t.compare_and_swap(b"fits", Some(&value(max, 1)), Some(&too_long));
    assert!(matches!(cas, Err(TreeError::ValueTooLarge { .. })), "{cas:?}");
    let in_tx = short_log.transact(|tx| tx.compare_and_swap(&t, b"no", None, Some(&too_long)));
    assert!(matches!(in_tx, Err(Error::Tree(TreeError::ValueTooLarge { .. }))), "{in_tx:?}");
    assert!(matches!(
        short_log.transact(|tx| tx.put(&t, b"no", &too_long)),
        Err(Error::Tree(TreeError::ValueTooLarge { .. }))
    ));
    assert!(matches!(t.upsert(b"no", &too_long), Err(TreeError::ValueTooLarge { .. })));
    assert_eq!(t.get(b"no").unwrap(), None);
    assert_eq!(t.get(b"fits").unwrap(), Some(value(max, 1)));
    let copy = dir.path().join("c-copy.swz");
    short_log.backup_to(&copy).unwrap();
    short_log.close().unwrap();
}

/// Compare-and-swap (btree T24) compares whole large values, and swaps them in and out.
#[test]
fn t22_compare_and_swap_compares_whole_large_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create(dir.path().join("cas.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    let (a, b) = (value(100_000, 1), value(100_000, 2));
    t.insert(b"k", &a).unwrap();
    // The same length and other bytes: refused, with the current value.
    let refused = t.compare_and_swap(b"k", Some(&b), Some(b"x")).unwrap().unwrap_err();
    assert_eq!(refused.current, Some(a.clone()));
    t.compare_and_swap(b"k", Some(&a), Some(&b)).unwrap().unwrap();
    assert_eq!(t.get(b"k").unwrap(), Some(b.clone()));
    t.compare_and_swap(b"k", Some(&b), None).unwrap().unwrap();
    assert_eq!(t.get(b"k").unwrap(), None);
    t.compare_and_swap(b"k", None, Some(&a)).unwrap().unwrap();
    assert_eq!(t.get(b"k").unwrap(), Some(a));
    assert_no_leak(&db, "after compare-and-swap");
    db.close().unwrap();
}

/// T22: a value written by an open with a larger pool is longer than a later open with a small
/// pool accepts; its chain may not even fit in that pool latched at once. Reads still work;
/// a delete or replace of it — through the tree, in a transaction — is refused with
/// `ValueTooLarge` at once (it ran again for good, at full speed, freeing frames that the
/// chain then took again), changes nothing, and succeeds once the pool is large again.
#[test]
fn t22_a_value_longer_than_a_small_pool_takes_is_read_and_its_change_refused() {
    let fs = new_fs();
    let big = value(1536 << 10, 3);
    let db = builder(PoolMode::Swizzling, &fs).create(std::path::Path::new(PATH)).unwrap();
    let t = db.create_tree("t").unwrap();
    t.upsert(b"big", &big).unwrap();
    t.upsert(b"small", b"s").unwrap();
    db.close().unwrap();

    // 256 frames: the value's chain is about 390 pages.
    let small = builder(PoolMode::Swizzling, &fs).pool_bytes(1 << 20);
    let db = small.open(std::path::Path::new(PATH)).unwrap();
    let t = db.tree("t").unwrap();
    assert!(t.max_value_len() < big.len());
    assert_eq!(t.get(b"big").unwrap().as_deref(), Some(&big[..]));
    let refused = |r: Result<bool, TreeError>| {
        assert!(matches!(r, Err(TreeError::ValueTooLarge { len, .. }) if len == big.len()), "{r:?}")
    };
    refused(t.delete(b"big"));
    refused(t.upsert(b"big", b"short"));
    let r = db.transact(|tx| tx.delete(&t, b"big"));
    assert!(matches!(r, Err(Error::Tree(TreeError::ValueTooLarge { .. }))), "{r:?}");
    t.upsert(b"small", b"still writable").unwrap();
    assert_eq!(t.get(b"big").unwrap().as_deref(), Some(&big[..]));
    t.verify().unwrap();
    db.close().unwrap();

    let db = builder(PoolMode::Swizzling, &fs).open(std::path::Path::new(PATH)).unwrap();
    let t = db.tree("t").unwrap();
    assert!(t.delete(b"big").unwrap());
    assert_eq!(t.get(b"small").unwrap().as_deref(), Some(&b"still writable"[..]));
    t.verify().unwrap();
    assert_no_leak(&db, "after the delete");
    db.close().unwrap();
}

/// RECOVERY.md "Failure behaviour": a loser deleted a value longer than the reopening pool takes
/// (a larger pool crashed), which its rollback must put back. Classical restart refuses the open
/// with `ValueTooLarge`, having written nothing; a reopen with the pool the database crashed with
/// rolls the loser back and loses nothing.
#[test]
fn a_restart_in_a_pool_too_small_for_a_losers_value_is_refused_and_loses_nothing() {
    let fs = new_fs();
    let b = || builder(PoolMode::Swizzling, &fs).restart_mode(RestartMode::Classical);
    let db = b().create(PATH).unwrap();
    let t = db.create_tree("blobs").unwrap();
    let kept = value(1_500_000, 1);
    t.insert(b"kept", &kept).unwrap();
    t.insert(b"small", b"v").unwrap();
    db.checkpoint().unwrap();
    let mut open = db.begin();
    open.delete(&t, b"kept").unwrap();
    open.put(&t, b"small", &value(1_500_000, 2)).unwrap();
    // A commit (synced, the default) makes the loser's records before it durable: restart undoes them.
    t.upsert(b"other", b"1").unwrap();
    fs.power_off(CrashMode::DropUnsynced);
    drop(open);
    drop(t);
    drop(db);
    fs.power_on();

    let Err(err) = b().pool_bytes(1 << 20).open(PATH) else {
        panic!("a 1 MiB pool cannot roll the loser back")
    };
    assert!(matches!(err, Error::Tree(TreeError::ValueTooLarge { len: 1_500_000, .. })), "{err}");
    let db = b().open(PATH).unwrap();
    let t = db.tree("blobs").unwrap();
    assert_eq!(t.get(b"small").unwrap().as_deref(), Some(&b"v"[..]), "rolled back");
    assert!(t.get(b"kept").unwrap() == Some(kept), "the deleted value is back");
    assert_no_leak(&db, "after the restart");
    db.close().unwrap();
}

/// The same with instant restart (RECOVERY.md R22, "Failure behaviour"), for each change a loser
/// can make to a value longer than the reopening pool takes — deleted, replaced (by a short or
/// by another long value), inserted —, whose rollback would have to write or free it. The open
/// is refused with `ValueTooLarge`, as classical restart's is, without and with record locks,
/// and again on a second try: it used to succeed and leave the loser's background rollback
/// failed, its keys — and the committed key closing a deleted key's gap — unreadable
/// (`RollbackFailed`) until the database was reopened, with nothing else telling the user (the
/// close succeeded, `redo_progress` counted the loser forever). A reopen with the pool the
/// database crashed with rolls the loser back and reads exactly the committed records.
#[test]
fn an_instant_restart_in_a_pool_too_small_for_a_losers_value_is_refused_and_loses_nothing() {
    // 300,000 bytes: longer than a 1 MiB pool takes (129,536), and short enough that the log
    // archive's run, which holds a large value's record once per page it names, stays small.
    let (kept, long) = (value(300_000, 1), value(320_000, 2));
    for case in ["deletes", "replaces by a short value", "replaces by a long value", "inserts"] {
        let fs = new_fs();
        let b = || builder(PoolMode::Swizzling, &fs).log_archive(true).restart_mode(RestartMode::Instant);
        let db = b().create(PATH).unwrap();
        let t = db.create_tree("blobs").unwrap();
        t.insert(b"kept", &kept).unwrap();
        t.insert(b"small", b"v").unwrap();
        db.checkpoint().unwrap();
        let mut open = db.begin();
        let len = match case {
            "deletes" => open.delete(&t, b"kept").map(|_| kept.len()),
            "replaces by a short value" => open.put(&t, b"kept", b"short").map(|_| kept.len()),
            "replaces by a long value" => open.put(&t, b"kept", &long).map(|_| long.len()),
            _ => open.put(&t, b"new", &long).map(|_| long.len()),
        }
        .unwrap();
        // Committed after the loser's change (synced: the loser's records are durable too).
        t.upsert(b"other", b"1").unwrap();
        let want = vec![
            (b"kept".to_vec(), kept.clone()),
            (b"other".to_vec(), b"1".to_vec()),
            (b"small".to_vec(), b"v".to_vec()),
        ];
        db.archive_log().unwrap();
        fs.power_off(CrashMode::DropUnsynced);
        drop(open);
        drop(t);
        drop(db);
        fs.power_on();

        let small = || b().pool_bytes(1 << 20);
        for (how, builder) in [
            ("instant", small()),
            ("instant, again", small()),
            ("instant without record locks", small().lab(|l| l.locking(false))),
            ("classical", small().restart_mode(RestartMode::Classical)),
        ] {
            let Err(err) = builder.open(PATH) else {
                panic!("{case}, {how}: a 1 MiB pool cannot roll the loser back")
            };
            assert!(
                matches!(err, Error::Tree(TreeError::ValueTooLarge { len: l, max }) if l == len && max < len),
                "{case}, {how}: {err}"
            );
            assert!(err.to_string().contains("raise pool_bytes"), "{case}, {how}: says what to do: {err}");
        }
        let db = b().open(PATH).unwrap();
        assert!(db.restart_stats().instant, "{case}: {:?}", db.restart_stats());
        assert_eq!(db.restart_stats().losers, 1, "{case}");
        let t = db.tree("blobs").unwrap();
        // Waits for the background rollback (K17: the loser's keys read as committed).
        assert_eq!(contents(&t), want, "{case}: exactly the committed records");
        t.verify().unwrap();
        assert_eq!(db.redo_progress().unwrap().losers, 0, "{case}");
        assert_no_leak(&db, &format!("{case}: after the rollback"));
        drop(t);
        db.close().unwrap();
        let db = b().pool_bytes(1 << 20).open(PATH).unwrap();
        assert_eq!(db.restart_stats().losers, 0, "{case}: the rollback ended the loser");
        assert_eq!(
            contents(&db.tree("blobs").unwrap()),
            want,
            "{case}: after a clean close, in the small pool"
        );
        db.close().unwrap();
    }
}

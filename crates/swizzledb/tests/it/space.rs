//! Space: pages that leak, files that grow without bound, and counts that lie. Every scenario
//! checks an oracle of the records, that every allocated page is a node or an overflow page of
//! some tree (free pages excepted), and that the file reaches a steady size under churn —
//! through the public API, `lab`'s allocation view and `inspect`'s `verify` (its
//! `unreachable_pages`).

use crate::common;

use common::{new_fs, XorShift};
use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{CommitMode, Database, Error, PoolMode, Tree, TreeError};
use swizzledb_io::{CrashMode, Vfs as _};

const MODES: [PoolMode; 3] = [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory];

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A value of `len` bytes that differs from others of another (len, seed).
fn value(len: usize, seed: u64) -> Vec<u8> {
    (0..len).map(|i| (i as u64).wrapping_mul(31).wrapping_add(seed) as u8).collect()
}

/// Pages allocated that no tree reaches (neither a node nor an overflow page), live.
fn lost_pages(db: &Database, ctx: &str) -> i64 {
    let alloc = db.pool().allocation();
    let mut reached = 0usize;
    for name in db.tree_names() {
        let shape = db.tree(&name).unwrap().verify().unwrap_or_else(|e| panic!("{ctx}: {name}: {e}"));
        reached += shape.nodes + shape.overflow_pages;
    }
    alloc.page_count as i64 - 1 - alloc.free_pages.len() as i64 - reached as i64
}

fn assert_no_lost_pages(db: &Database, ctx: &str) {
    assert_eq!(lost_pages(db, ctx), 0, "{ctx}: allocated pages no tree reaches");
}

fn page_count(db: &Database) -> u64 {
    db.pool().allocation().page_count
}

/// `inspect`'s verdict on a closed file: clean, nothing unreachable, and its counts agree with
/// the file.
fn assert_file_clean(path: &Path, ctx: &str) {
    let file = swizzledb::inspect::DatabaseFile::open(path).unwrap();
    let info = file.info().clone();
    let report = file.verify();
    assert!(report.is_clean(), "{ctx}: {report:?}");
    assert_eq!(report.unreachable_pages, Some(0), "{ctx}: {report:?}");
    assert_eq!(info.file_bytes, info.page_count * info.page_size as u64, "{ctx}: {info:?}");
}

fn contents(t: &Tree) -> Map {
    t.range(Unbounded, Unbounded).map(|r| r.unwrap()).map(|kv| (kv.0, kv.1)).collect()
}

fn configs() -> Vec<(bool, PoolMode)> {
    [false, true].into_iter().flat_map(|l| MODES.map(move |m| (l, m))).collect()
}

fn builder(logged: bool, mode: PoolMode) -> swizzledb::Builder {
    Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(if mode == PoolMode::MainMemory { 64 << 20 } else { 1 << 20 })
        .logging(logged)
        .commit_mode(CommitMode::Async)
}

/// A new database of `(logged, mode)` in a directory of its own: the case's name, the directory
/// (removed when dropped), the file's path and the database.
fn fresh(logged: bool, mode: PoolMode) -> (String, tempfile::TempDir, PathBuf, Database) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = builder(logged, mode).create(&path).unwrap();
    (format!("logged {logged}, {mode:?}"), dir, path, db)
}

/// A sliding window of keys (a queue: new keys at the end, old ones deleted at the front),
/// updates in between, small and large values: the file stops growing once the live data
/// stops growing, and no page is lost, in every pool mode, logged or not.
#[test]
fn churn_reaches_a_steady_size_and_loses_no_page() {
    for (logged, mode) in configs() {
        let (ctx, _dir, path, db) = fresh(logged, mode);
        let t = db.create_tree("t").unwrap();
        let mut model = Map::new();
        let mut rng = XorShift(0x5eed);
        let mut warm = 0;
        let mut max_after_warm = 0;
        let mut live_bytes_max = 0usize;
        const WINDOW: u64 = 300;
        for round in 0..30u64 {
            for i in 0..60u64 {
                let k = round * 60 + i;
                let len = match rng.next() % 10 {
                    0 => 3000 + (rng.next() % 9000) as usize,
                    1..=3 => 500,
                    _ => 20 + (rng.next() % 100) as usize,
                };
                let v = value(len, k);
                t.upsert(&k.to_be_bytes(), &v).unwrap();
                model.insert(k.to_be_bytes().to_vec(), v);
                if k >= WINDOW {
                    let old = (k - WINDOW).to_be_bytes();
                    assert!(t.delete(&old).unwrap(), "{ctx}");
                    model.remove(&old[..]);
                }
                // An update of a key in the window, small to large and back.
                if let Some((uk, _)) = model.iter().nth((rng.next() % model.len() as u64) as usize) {
                    let uk = uk.clone();
                    let len = if rng.next().is_multiple_of(2) { 4000 } else { 30 };
                    let v = value(len, rng.next());
                    t.upsert(&uk, &v).unwrap();
                    model.insert(uk, v);
                }
            }
            let live: usize = model.iter().map(|(k, v)| k.len() + v.len()).sum();
            live_bytes_max = live_bytes_max.max(live);
            if round == 9 {
                warm = page_count(&db);
            }
            if round > 9 {
                max_after_warm = max_after_warm.max(page_count(&db));
            }
        }
        assert_no_lost_pages(&db, &ctx);
        assert_eq!(contents(&t), model, "{ctx}");
        assert_eq!(t.len().unwrap(), model.len(), "{ctx}");
        let bound = 4 * live_bytes_max as u64 / 4096 + 64;
        assert!(max_after_warm <= bound, "{ctx}: {max_after_warm} pages for {live_bytes_max} live bytes");
        assert!(
            max_after_warm <= warm + warm / 2,
            "{ctx}: the file grew from {warm} pages after warm-up to {max_after_warm}"
        );
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// Transactions that write large values and roll back — explicitly, by an error inside
/// `transact`, and by being dropped — give every page back: repeated, they do not grow the file.
#[test]
fn rolled_back_large_writes_give_their_pages_back() {
    for (logged, mode) in configs() {
        let (ctx, _dir, path, db) = fresh(logged, mode);
        let t = db.create_tree("t").unwrap();
        for k in 0..50u32 {
            t.insert(&k.to_be_bytes(), &value(if k % 5 == 0 { 6000 } else { 40 }, u64::from(k))).unwrap();
        }
        let want = contents(&t);
        let mut pages = Vec::new();
        for round in 0..12u64 {
            let writes = |tx: &mut swizzledb::Transaction<'_>| -> swizzledb::Result<()> {
                for k in 0..50u32 {
                    let len = [9000usize, 10, 3000, 20000][(k as usize + round as usize) % 4];
                    tx.put(&t, &k.to_be_bytes(), &value(len, round))?;
                }
                for k in 100..130u32 {
                    tx.insert(&t, &k.to_be_bytes(), &value(5000, round))?;
                }
                for k in (0..50u32).step_by(7) {
                    tx.delete(&t, &k.to_be_bytes())?;
                }
                Ok(())
            };
            match round % 3 {
                0 => {
                    let mut tx = db.begin();
                    writes(&mut tx).unwrap();
                    tx.abort().unwrap();
                }
                1 => {
                    let r: swizzledb::Result<()> = db.transact(|tx| {
                        writes(tx)?;
                        Err(Error::Tree(TreeError::DuplicateKey))
                    });
                    assert!(r.is_err(), "{ctx}");
                }
                _ => {
                    let mut tx = db.begin();
                    writes(&mut tx).unwrap();
                    drop(tx);
                }
            }
            assert_eq!(contents(&t), want, "{ctx}: round {round}");
            assert_no_lost_pages(&db, &format!("{ctx}: round {round}"));
            pages.push(page_count(&db));
        }
        // Each round's peak differs (its value sizes do): the second half grows nothing.
        assert!(pages[11] <= pages[5], "{ctx}: the file grew through rollbacks: {pages:?}");
        assert_eq!(t.len().unwrap(), want.len(), "{ctx}");
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// Operations that fail — a duplicate insert of a large value, a value too large, a
/// compare-and-swap that does not match with a large new value, in a transaction and alone —
/// allocate nothing that stays.
#[test]
fn failed_writes_of_large_values_lose_no_page() {
    for (logged, mode) in configs() {
        let (ctx, _dir, path, db) = fresh(logged, mode);
        let t = db.create_tree("t").unwrap();
        for k in 0..40u32 {
            t.insert(&k.to_be_bytes(), &value(if k % 4 == 0 { 5000 } else { 40 }, 1)).unwrap();
        }
        let want = contents(&t);
        let big = value(7000, 9);
        let too_big = vec![1u8; t.max_value_len() + 1];
        let mut before = 0;
        for round in 0..20u32 {
            // A large value's chain is written before its leaf is found (btree T22): the first
            // failure may grow the file by a chain, whose pages are free and taken again.
            if round == 1 {
                before = page_count(&db);
            }
            let k = (round % 40).to_be_bytes();
            let e = t.insert(&k, &big).unwrap_err();
            assert!(matches!(e, TreeError::DuplicateKey), "{ctx}: {e}");
            let e = t.insert(b"new", &too_big).unwrap_err();
            assert!(matches!(e, TreeError::ValueTooLarge { .. }), "{ctx}: {e}");
            let e = t.upsert(&k, &too_big).unwrap_err();
            assert!(matches!(e, TreeError::ValueTooLarge { .. }), "{ctx}: {e}");
            let r = t.compare_and_swap(&k, Some(b"not it"), Some(&big)).unwrap();
            assert!(r.is_err(), "{ctx}");
            let r = t.compare_and_swap(b"absent", Some(b"x"), Some(&big)).unwrap();
            assert!(r.is_err(), "{ctx}");
            let mut tx = db.begin();
            assert!(tx.insert(&t, &k, &big).is_err(), "{ctx}");
            assert!(tx.put(&t, b"new", &too_big).is_err(), "{ctx}");
            let r = tx.compare_and_swap(&t, &k, Some(b"not it"), Some(&big)).unwrap();
            assert!(r.is_err(), "{ctx}");
            tx.commit().unwrap();
        }
        assert_eq!(contents(&t), want, "{ctx}");
        assert_no_lost_pages(&db, &ctx);
        assert_eq!(page_count(&db), before, "{ctx}: failed writes grew the file");
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// Trees created, filled with small and large values and dropped, again and again: their pages
/// come back, the file stops growing.
#[test]
fn drop_and_create_cycles_reuse_the_pages() {
    for (logged, mode) in configs() {
        let (ctx, _dir, path, db) = fresh(logged, mode);
        let keep = db.create_tree("keep").unwrap();
        keep.insert(b"k", b"v").unwrap();
        let mut pages = Vec::new();
        for round in 0..8u64 {
            let name = format!("t{}", round % 3);
            let t = db.create_tree(&name).unwrap();
            for k in 0..200u32 {
                let len = if k % 9 == 0 { 7000 } else { 100 };
                t.insert(&k.to_be_bytes(), &value(len, round)).unwrap();
            }
            assert_eq!(t.len().unwrap(), 200, "{ctx}");
            drop(t);
            assert!(db.drop_tree(&name).unwrap(), "{ctx}");
            assert_no_lost_pages(&db, &format!("{ctx}: round {round}"));
            pages.push(page_count(&db));
        }
        assert!(pages[7] <= pages[1], "{ctx}: the file grew through drops: {pages:?}");
        drop(keep);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// A compacted file is smaller, holds every record and verifies clean with nothing unreachable;
/// a backup verifies clean too.
#[test]
fn compaction_and_backup_leave_clean_files() {
    for (logged, mode) in configs() {
        let (ctx, dir, path, db) = fresh(logged, mode);
        let t = db.create_tree("t").unwrap();
        for k in 0..600u32 {
            let len = if k % 7 == 0 { 6000 } else { 200 };
            t.insert(&k.to_be_bytes(), &value(len, 3)).unwrap();
        }
        for k in 0..600u32 {
            if k % 10 != 0 {
                t.delete(&k.to_be_bytes()).unwrap();
            }
        }
        let want = contents(&t);
        let backup = dir.path().join("backup.swz");
        db.backup_to(&backup).unwrap();
        assert_file_clean(&backup, &format!("{ctx}: the backup"));
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
        let before = std::fs::metadata(&path).unwrap().len();
        let stats = builder(logged, mode).compact(&path).unwrap();
        let after = std::fs::metadata(&path).unwrap().len();
        assert_eq!((stats.file_bytes_before, stats.file_bytes_after), (before, after), "{ctx}: {stats:?}");
        assert!(after < before / 2, "{ctx}: {stats:?}");
        assert_eq!(stats.records, want.len() as u64, "{ctx}: {stats:?}");
        assert_file_clean(&path, &format!("{ctx}: compacted"));
        let db = builder(logged, mode).open(&path).unwrap();
        let t = db.tree("t").unwrap();
        assert_eq!(contents(&t), want, "{ctx}");
        assert_eq!(t.len().unwrap(), want.len(), "{ctx}");
        drop(t);
        db.close().unwrap();
    }
}

/// Power lost in the middle of churn with large values, open transactions and a tree being
/// filled, again and again: each restart gives back the pages of what it rolls back, and the
/// file does not grow per crash.
#[test]
fn crashes_in_the_middle_of_churn_lose_no_pages() {
    for mode in MODES {
        for how in [CrashMode::KeepUnsynced, CrashMode::DropUnsynced] {
            let ctx = format!("{mode:?}, {how:?}");
            let fs = new_fs();
            let vfs: Arc<dyn swizzledb_io::Vfs> = Arc::new(fs.clone());
            let b = || common::builder(mode, Arc::clone(&vfs));
            let db = b().create(common::db_path()).unwrap();
            let t = db.create_tree("t").unwrap();
            // Every key the churn writes, large: the live data cannot outgrow this.
            for k in 0..80u64 {
                t.insert(&k.to_be_bytes(), &value(8000, 0)).unwrap();
            }
            drop(t);
            db.close().unwrap();
            let mut rng = XorShift(7);
            let mut pages = Vec::new();
            for crash in 0..16u64 {
                let db = b().open(common::db_path()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let cctx = format!("{ctx}: after crash {crash}");
                assert_no_lost_pages(&db, &cctx);
                pages.push(page_count(&db));
                let t = db.tree("t").unwrap();
                for _ in 0..30 {
                    let k = (rng.next() % 80).to_be_bytes();
                    match rng.next() % 4 {
                        0 => {
                            t.delete(&k).unwrap();
                        }
                        1 => {
                            t.upsert(&k, &value(3000 + (rng.next() % 5000) as usize, crash)).unwrap();
                        }
                        _ => {
                            t.upsert(&k, &value(50, crash)).unwrap();
                        }
                    }
                }
                let mut open = db.begin();
                for k in 200..210u64 {
                    open.put(&t, &k.to_be_bytes(), &value(6000, crash)).unwrap();
                }
                for k in 0..10u64 {
                    open.put(&t, &k.to_be_bytes(), &value(5000, crash)).unwrap();
                }
                if crash % 2 == 0 {
                    db.checkpoint().unwrap();
                }
                fs.power_off(how);
                drop(open);
                drop(t);
                drop(db);
                fs.power_on();
            }
            let (warm, last) = (pages[2], *pages.last().unwrap());
            assert!(last <= warm + warm / 4, "{ctx}: the file grows per crash: {pages:?}");
            let db = b().open(common::db_path()).unwrap();
            assert_no_lost_pages(&db, &ctx);
            db.close().unwrap();
        }
    }
}

/// Power lost at any file-system call of a workload of large values — committed replaces,
/// an abort, a delete, a checkpoint, a close — in every crash mode: restart leaves no page
/// allocated that no tree reaches.
#[test]
fn a_crash_at_any_call_of_large_value_churn_loses_no_page() {
    let path = Path::new("/s/db");
    let on = |vfs: Arc<dyn swizzledb_io::Vfs>| common::small_on(vfs, true, 64);
    let kills = common::kill_at_every_nth_call(
        &common::KILLS,
        3,
        |fs| {
            fs.create_dir_all(Path::new("/s")).unwrap();
            let db = on(Arc::new(fs.clone())).create(path).unwrap();
            let t = db.create_tree("t").unwrap();
            for k in 0..12u32 {
                t.insert(&k.to_be_bytes(), &value(if k % 2 == 0 { 6000 } else { 100 }, 1)).unwrap();
            }
            drop(t);
            db.close().unwrap();
        },
        |vfs| {
            let db = on(vfs).open(path)?;
            let t = db.tree("t")?;
            let mut tx = db.begin();
            for k in 0..6u32 {
                tx.put(&t, &k.to_be_bytes(), &value(if k % 2 == 0 { 100 } else { 9000 }, 2))?;
            }
            tx.commit()?;
            let mut tx = db.begin();
            for k in 6..12u32 {
                tx.put(&t, &k.to_be_bytes(), &value(10000, 3))?;
            }
            tx.put(&t, b"new", &value(5000, 3))?;
            tx.abort()?;
            t.delete(&8u32.to_be_bytes())?;
            db.checkpoint()?;
            t.upsert(&10u32.to_be_bytes(), &value(12000, 4))?;
            let mut open = db.begin();
            open.put(&t, &0u32.to_be_bytes(), &value(7000, 5))?;
            drop(open);
            drop(t);
            db.close()?;
            Ok(())
        },
        |fs, ctx| {
            let db = on(Arc::new(fs.clone())).open(path).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
            assert_no_lost_pages(&db, &format!("{ctx}: restarted"));
            db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
            let db = on(Arc::new(fs.clone())).open(path).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            assert_no_lost_pages(&db, &format!("{ctx}: reopened"));
            db.close().unwrap();
        },
    );
    assert!(kills > 20, "{kills} kills");
}

/// Writes of large values that a transaction's locks or snapshot refuse — a key another
/// transaction wrote (wait-die), a gap another transaction read (next-key locking), a key
/// changed since a snapshot — and the writes of one transaction over one key again and again
/// (insert, replace, swap, update, delete) rolled back: no page stays allocated.
#[test]
fn refused_and_repeated_large_writes_in_transactions_lose_no_page() {
    for mode in MODES {
        let ctx = format!("{mode:?}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = builder(true, mode).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for k in 0..20u32 {
            t.insert(&(k * 2).to_be_bytes(), &value(if k % 3 == 0 { 5000 } else { 60 }, 1)).unwrap();
        }
        let want = contents(&t);
        let big = value(9000, 7);
        for round in 0..10u32 {
            let k = ((round % 20) * 2).to_be_bytes();
            // Older holds the key and a gap; the younger one dies at both.
            let mut older = db.begin();
            older.put(&t, &k, &value(3000, 2)).unwrap();
            let gap: Vec<_> = older
                .range(&t, std::ops::Bound::Included(&100u32.to_be_bytes()[..]), Unbounded)
                .map(|r| r.unwrap())
                .collect();
            assert!(gap.is_empty(), "{ctx}");
            let mut younger = db.begin();
            assert!(younger.put(&t, &k, &big).is_err(), "{ctx}: a key the older one wrote");
            assert!(younger.put(&t, &200u32.to_be_bytes(), &big).is_err(), "{ctx}: a gap it read");
            drop(younger);
            older.abort().unwrap();
            // A snapshot writer whose key changed under it.
            let mut snap = db.begin_snapshot();
            assert!(snap.get(&t, &k).unwrap().is_some(), "{ctx}");
            t.upsert(&k, &value(4000, 3)).unwrap();
            assert!(snap.put(&t, &k, &big).is_err(), "{ctx}: a write conflict");
            drop(snap);
            t.upsert(&k, want.get(&k[..]).unwrap()).unwrap();
            // One key written over and over in one transaction, rolled back.
            let mut tx = db.begin();
            let fresh = (1001 + round).to_be_bytes();
            tx.insert(&t, &fresh, &big).unwrap();
            tx.put(&t, &fresh, &value(100, 4)).unwrap();
            tx.put(&t, &fresh, &value(12000, 4)).unwrap();
            let cur = tx.get(&t, &fresh).unwrap();
            let r = tx.compare_and_swap(&t, &fresh, cur.as_deref(), Some(&big)).unwrap();
            assert!(r.is_ok(), "{ctx}");
            tx.update_with(&t, &k, |_, out| out.extend_from_slice(&big)).unwrap();
            tx.update_with(&t, &k, |_, out| out.extend_from_slice(b"small")).unwrap();
            tx.delete(&t, &fresh).unwrap();
            tx.put(&t, &fresh, &big).unwrap();
            tx.delete(&t, &k).unwrap();
            tx.put(&t, &k, &value(7000, 5)).unwrap();
            if round % 2 == 0 {
                tx.abort().unwrap();
            } else {
                drop(tx);
            }
            assert_eq!(contents(&t), want, "{ctx}: round {round}");
            assert_no_lost_pages(&db, &format!("{ctx}: round {round}"));
        }
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// A pool too small for what is written (main-memory mode: `MemoryLimit`): the writes that fail,
/// mid-split or mid-chain, lose no page, and once records are deleted the room is used again.
#[test]
fn writes_refused_for_want_of_memory_lose_no_page() {
    for logged in [false, true] {
        let ctx = format!("logged {logged}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = Database::builder()
            .mode(PoolMode::MainMemory)
            .page_size(4096)
            .pool_bytes(96 * 4096)
            .logging(logged)
            .commit_mode(CommitMode::Async)
            .create(&path)
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let mut model = Map::new();
        let mut failures = 0;
        for k in 0..2000u32 {
            let v = value(if k % 5 == 0 { 4000 + (k as usize % 7) * 1000 } else { 300 }, 1);
            match t.insert(&k.to_be_bytes(), &v) {
                Ok(()) => {
                    model.insert(k.to_be_bytes().to_vec(), v);
                }
                Err(e) => {
                    failures += 1;
                    assert!(matches!(e, TreeError::Buffer(_)), "{ctx}: {e:?}");
                    assert_no_lost_pages(&db, &format!("{ctx}: key {k}: {e}"));
                    if failures > 40 {
                        break;
                    }
                }
            }
        }
        assert!(failures > 0, "{ctx}: never ran out");
        assert_eq!(contents(&t), model, "{ctx}");
        let keys: Vec<_> = model.keys().cloned().collect();
        for k in keys.iter().step_by(2) {
            assert!(t.delete(k).unwrap(), "{ctx}");
            model.remove(k);
        }
        for k in 5000..5100u32 {
            if t.insert(&k.to_be_bytes(), &value(200, 2)).is_ok() {
                model.insert(k.to_be_bytes().to_vec(), value(200, 2));
            }
        }
        assert_eq!(contents(&t), model, "{ctx}");
        assert_no_lost_pages(&db, &ctx);
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// `Tree::len` on a logged database counts the committed records of one snapshot, beside
/// another transaction's uncommitted inserts and deletes; `approximate_len` counts what the
/// pages hold.
#[test]
fn len_counts_committed_records_beside_open_transactions() {
    for mode in MODES {
        let ctx = format!("{mode:?}");
        let dir = tempfile::tempdir().unwrap();
        let db = builder(true, mode).create(dir.path().join("db.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        for k in 0..100u32 {
            t.insert(&(k * 2).to_be_bytes(), &value(if k % 9 == 0 { 5000 } else { 30 }, 1)).unwrap();
        }
        let mut tx = db.begin();
        for k in 0..30u32 {
            tx.insert(&t, &(k * 2 + 1).to_be_bytes(), b"new").unwrap();
        }
        for k in 0..10u32 {
            tx.delete(&t, &(k * 2).to_be_bytes()).unwrap();
        }
        assert_eq!(t.len().unwrap(), 100, "{ctx}: beside an open transaction");
        tx.commit().unwrap();
        assert_eq!(t.len().unwrap(), 120, "{ctx}: after its commit");
        assert_eq!(t.approximate_len().unwrap() as usize, 120, "{ctx}");
        drop(t);
        db.close().unwrap();
    }
}

/// Bytes of the log segments in `dir`, and of the double-write area (buffer F15).
fn log_dir_bytes(dir: &Path) -> (u64, u64) {
    let (mut segments, mut area) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let len = e.metadata().unwrap().len();
        let name = e.file_name().into_string().unwrap();
        if name == "doublewrite" {
            area += len;
        } else if name.ends_with(".log") || name.ends_with(".spare") {
            segments += len;
        }
    }
    (segments, area)
}

/// Churn of large values through a logged database with a small log bound and sync commits:
/// the log's segments stay near the bound (R15), the double-write area within its 8 regions of
/// 64 pages (buffer F15), the database file reaches a steady size, and `log_bytes` is no more
/// than the segments hold.
#[test]
fn the_log_stays_bounded_under_churn_of_large_values() {
    for mode in [PoolMode::Traditional, PoolMode::MainMemory] {
        let ctx = format!("{mode:?}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let bound = 512 << 10;
        let db = builder(true, mode)
            .commit_mode(CommitMode::Sync)
            .log_segment_bytes(64 << 10)
            .max_log_bytes(bound)
            .create(&path)
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let wal = swizzledb::wal_dir(&path);
        let (mut most, mut most_area) = (0, 0);
        let mut pages = Vec::new();
        for round in 0..25u64 {
            for k in 0..40u64 {
                let len = if (k + round) % 4 == 0 { 9000 } else { 200 };
                t.upsert(&k.to_be_bytes(), &value(len, round)).unwrap();
            }
            let (segments, area) = log_dir_bytes(&wal);
            (most, most_area) = (most.max(segments), most_area.max(area));
            let reported = db.log_bytes().unwrap();
            assert!(reported <= segments, "{ctx}: log_bytes {reported} > {segments} in segments");
            pages.push(page_count(&db));
        }
        assert!(most <= 2 * bound, "{ctx}: the log's segments reached {most} bytes, bound {bound}");
        assert!(most_area <= 8 * 64 * 4096, "{ctx}: the double-write area reached {most_area} bytes");
        assert!(pages[24] <= pages[9] + pages[9] / 4, "{ctx}: {pages:?}");
        assert_no_lost_pages(&db, &ctx);
        drop(t);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// A file that shrank to almost nothing holds thousands of free pages: a checkpoint lists them
/// (in parts, R7), and after a power loss restart finds every one of them free again — and so
/// does a clean close's free chain, through reopen cycles: churn after either grows nothing.
#[test]
fn thousands_of_free_pages_survive_checkpoints_crashes_and_reopens() {
    for mode in [PoolMode::Traditional, PoolMode::MainMemory] {
        let ctx = format!("{mode:?}");
        let fs = new_fs();
        let vfs: Arc<dyn swizzledb_io::Vfs> = Arc::new(fs.clone());
        let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 1 << 20 };
        let b = || common::builder(mode, Arc::clone(&vfs)).pool_bytes(pool).commit_mode(CommitMode::Async);
        let db = b().create(common::db_path()).unwrap();
        let t = db.create_tree("t").unwrap();
        for k in 0..1000u32 {
            t.insert(&k.to_be_bytes(), &value(if k % 2 == 0 { 12000 } else { 600 }, 1)).unwrap();
        }
        let full = page_count(&db);
        assert!(full > 1500, "{ctx}: {full} pages");
        for k in 0..1000u32 {
            t.delete(&k.to_be_bytes()).unwrap();
        }
        db.checkpoint().unwrap();
        t.insert(b"after", b"the checkpoint").unwrap();
        db.flush().unwrap();
        fs.power_off(CrashMode::DropUnsynced);
        drop(t);
        drop(db);
        fs.power_on();
        for cycle in 0..4u32 {
            let db = b().open(common::db_path()).unwrap();
            let cctx = format!("{ctx}: cycle {cycle}");
            assert_no_lost_pages(&db, &cctx);
            assert_eq!(page_count(&db), full, "{cctx}");
            let free = db.pool().allocation().free_pages.len() as u64;
            assert!(free + 10 > full, "{cctx}: {free} of {full} pages free");
            let t = db.tree("t").unwrap();
            for k in 0..100u32 {
                t.upsert(&k.to_be_bytes(), &value(12000, u64::from(cycle))).unwrap();
            }
            for k in 0..100u32 {
                t.delete(&k.to_be_bytes()).unwrap();
            }
            assert_eq!(page_count(&db), full, "{cctx}: churn over free pages grew the file");
            drop(t);
            db.close().unwrap();
        }
    }
}

/// Instant restart (R22) rolls the losers back in the background: transactions that were
/// writing large values at the crash give every page back, and so they do when the power
/// fails again while that rollback runs.
#[test]
fn instant_restart_rolls_back_large_losers_without_losing_pages() {
    let fs = new_fs();
    let vfs: Arc<dyn swizzledb_io::Vfs> = Arc::new(fs.clone());
    let b = || {
        common::builder(PoolMode::Swizzling, Arc::clone(&vfs))
            .pool_bytes(256 * 4096)
            .log_archive(true)
            .restart_mode(swizzledb::RestartMode::Instant)
    };
    let db = b().create(common::db_path()).unwrap();
    let t = db.create_tree("t").unwrap();
    for k in 0..40u32 {
        t.insert(&k.to_be_bytes(), &value(if k % 3 == 0 { 7000 } else { 80 }, 1)).unwrap();
    }
    let want = contents(&t);
    drop(t);
    db.close().unwrap();
    for crash in 0..6u32 {
        let ctx = format!("crash {crash}");
        let db = b().open(common::db_path()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let t = db.tree("t").unwrap();
        if crash % 2 == 0 {
            // Let the previous losers' rollback finish (verify waits for it), then check.
            assert_eq!(contents(&t), want, "{ctx}");
            assert_no_lost_pages(&db, &ctx);
        }
        let mut tx = db.begin();
        for k in 0..40u32 {
            if k % 4 == 0 {
                tx.delete(&t, &k.to_be_bytes()).unwrap();
            } else {
                tx.put(&t, &k.to_be_bytes(), &value(9000, 2)).unwrap();
            }
        }
        for k in 100..110u32 {
            tx.put(&t, &k.to_be_bytes(), &value(6000, 2)).unwrap();
        }
        db.flush().unwrap();
        fs.power_off(CrashMode::KeepUnsynced);
        drop(tx);
        drop(t);
        drop(db);
        fs.power_on();
    }
    let db = b().open(common::db_path()).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(contents(&t), want);
    assert_no_lost_pages(&db, "at the end");
    drop(t);
    db.close().unwrap();
}

/// A backup taken while a transaction holds uncommitted large values, and a compaction of a
/// file a crash left unclean: each copy holds the committed records only and no page that
/// no tree reaches.
#[test]
fn backups_beside_open_large_transactions_and_compactions_after_a_crash_lose_no_page() {
    for mode in MODES {
        let ctx = format!("{mode:?}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = builder(true, mode).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for k in 0..60u32 {
            t.insert(&k.to_be_bytes(), &value(if k % 3 == 0 { 7000 } else { 80 }, 1)).unwrap();
        }
        let want = contents(&t);
        let mut tx = db.begin();
        for k in 0..30u32 {
            tx.put(&t, &k.to_be_bytes(), &value(11000, 2)).unwrap();
        }
        for k in 100..120u32 {
            tx.put(&t, &k.to_be_bytes(), &value(5000, 2)).unwrap();
        }
        let backup = dir.path().join("backup.swz");
        db.backup_to(&backup).unwrap();
        let copy = builder(true, mode).open(&backup).unwrap();
        assert_eq!(contents(&copy.tree("t").unwrap()), want, "{ctx}: the backup");
        assert_no_lost_pages(&copy, &format!("{ctx}: the backup"));
        copy.close().unwrap();
        assert_file_clean(&backup, &format!("{ctx}: the backup"));
        // The original, as a crash leaves it (the transaction open, nothing closed): compacted.
        std::mem::forget(tx);
        std::mem::forget(t);
        drop(db);
        let stats = builder(true, mode).compact(&path);
        let stats = stats.unwrap_or_else(|e| panic!("{ctx}: compact: {e}"));
        assert_eq!(stats.records, want.len() as u64, "{ctx}: {stats:?}");
        assert_file_clean(&path, &format!("{ctx}: compacted"));
        let db = builder(true, mode).open(&path).unwrap();
        assert_eq!(contents(&db.tree("t").unwrap()), want, "{ctx}: compacted");
        db.close().unwrap();
    }
}

/// A tree holding a value longer than the opening pool takes latched at once (btree T22 5: an
/// earlier open with a larger pool wrote it) is dropped: the drop frees its chain too, and
/// every other page of the tree, logged or not — no page stays allocated that no tree reaches.
#[test]
fn dropping_a_tree_with_a_value_longer_than_the_pool_takes_frees_every_page() {
    for logged in [true, false] {
        for mode in MODES {
            let ctx = format!("logged {logged}, {mode:?}");
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db.swz");
            let big = value(1536 << 10, 3);
            // Main-memory mode holds the whole file: 2,048 frames, a value of at most 256 pages.
            let small = if mode == PoolMode::MainMemory { 8 << 20 } else { 1 << 20 };
            let roomy = || builder(logged, mode).pool_bytes(32 << 20);
            let db = roomy().create(&path).unwrap();
            let keep = db.create_tree("keep").unwrap();
            keep.insert(b"k", b"v").unwrap();
            let t = db.create_tree("gone").unwrap();
            for k in 0..300u32 {
                t.insert(&k.to_be_bytes(), &value(if k % 10 == 0 { 6000 } else { 200 }, 1)).unwrap();
            }
            t.insert(b"big", &big).unwrap();
            t.insert(b"big too", &big).unwrap();
            drop((t, keep));
            db.close().unwrap();

            // 256 frames (or 2,048): each chain is about 390 pages.
            let db = builder(logged, mode).pool_bytes(small).open(&path).unwrap();
            assert!(db.tree("gone").unwrap().max_value_len() < big.len(), "{ctx}");
            let dropped = db.drop_tree("gone");
            assert!(matches!(dropped, Ok(true)), "{ctx}: {dropped:?}");
            assert_eq!(db.tree_names(), ["keep"], "{ctx}");
            assert_no_lost_pages(&db, &ctx);
            db.close().unwrap();
            assert_file_clean(&path, &ctx);
            // The freed pages are taken again: a new tree as large grows the file by nothing.
            let db = roomy().open(&path).unwrap();
            let before = page_count(&db);
            let t = db.create_tree("again").unwrap();
            t.insert(b"big", &big).unwrap();
            assert_eq!(page_count(&db), before, "{ctx}: the dropped tree's pages are reused");
            drop(t);
            db.close().unwrap();
        }
    }
}

/// `create_tree` refused — a name taken, an invalid name — and `tree_or_create` of an existing
/// tree allocate no page that stays.
#[test]
fn refused_tree_creations_allocate_nothing() {
    for (logged, mode) in configs() {
        let (ctx, _dir, path, db) = fresh(logged, mode);
        db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
        let before = page_count(&db);
        for _ in 0..20 {
            assert!(matches!(db.create_tree("t"), Err(Error::TreeExists(_))), "{ctx}");
            assert!(matches!(db.create_tree(""), Err(Error::InvalidTreeName { .. })), "{ctx}");
            db.tree_or_create("t").unwrap();
        }
        assert_eq!(page_count(&db), before, "{ctx}");
        assert_no_lost_pages(&db, &ctx);
        db.close().unwrap();
        assert_file_clean(&path, &ctx);
    }
}

/// The drop of a tree whose value is longer than the pool takes, killed at its file-system
/// calls: restart opens, the kept tree is whole and verifies, the tree is gone or whole, and
/// the pages a crash left unreachable (R23: space lost, not damage) are no more than the
/// dropped tree's.
#[test]
fn a_drop_of_an_oversized_value_killed_at_its_calls_restarts_clean() {
    let path = Path::new("/s/db");
    let big = value(600 << 10, 3);
    let on = |vfs: Arc<dyn swizzledb_io::Vfs>, frames: usize| {
        common::small_on(vfs, true, frames).log_segment_bytes(4 << 20)
    };
    let kills = common::kill_at_every_nth_call(
        &common::KILLS,
        13,
        |fs| {
            fs.create_dir_all(Path::new("/s")).unwrap();
            let db = on(Arc::new(fs.clone()), 4096).create(path).unwrap();
            db.create_tree("keep").unwrap().insert(b"k", b"v").unwrap();
            let t = db.create_tree("gone").unwrap();
            t.insert(b"big", &big).unwrap();
            t.insert(b"small", b"s").unwrap();
            drop(t);
            db.close().unwrap();
        },
        |vfs| {
            // 256 frames: the chain is about 150 pages, more than an eighth of them.
            let db = on(vfs, 256).open(path)?;
            db.drop_tree("gone")?;
            db.close()
        },
        |fs, ctx| {
            let db = on(Arc::new(fs.clone()), 4096).open(path).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
            assert_eq!(db.tree("keep").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "{ctx}");
            if let Ok(t) = db.tree("gone") {
                assert_eq!(t.get(b"big").unwrap().as_deref(), Some(&big[..]), "{ctx}");
            }
            let lost = lost_pages(&db, ctx);
            assert!((0..=200).contains(&lost), "{ctx}: {lost} pages lost");
            db.close().unwrap();
        },
    );
    assert!(kills > 10, "{kills} kills");
}

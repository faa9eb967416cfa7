//! The decoupled (log-based) checkpoint (RECOVERY.md R19) against the pool's own view: at a
//! quiescent moment after concurrent writers, evictions, cleaner write-backs and earlier
//! checkpoints of both kinds, the dirty page table computed from the log names exactly the
//! pool's dirty pages, each from no later than the change the pool holds it dirty for, and the
//! transaction table is empty; a crash then restarts from it with every commit.

use crate::lab::DatabaseExt as _;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use swizzledb_io::{CrashMode, FaultFs, Vfs};

use crate::record::Record;
use crate::{CheckpointKind, CommitMode, Database};

fn key(t: u32, i: u32) -> Vec<u8> {
    format!("t{t}-{i:05}").into_bytes()
}

#[test]
fn r19_the_decoupled_checkpoint_finds_the_pools_dirty_pages_from_the_log() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/c")).unwrap();
    let path = Path::new("/c/db");
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(40 * 4096)
        .commit_mode(CommitMode::Async)
        .checkpoint_interval(Some(std::time::Duration::from_millis(2)))
        .lab(|l| l.checkpoint_kind(CheckpointKind::Decoupled))
        .log_segment_bytes(64 << 10)
        .max_log_bytes(512 << 10)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let tree = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for round in 0..4u32 {
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let tree = tree.clone();
                let db = &db;
                s.spawn(move || {
                    for i in 0..1500u32 {
                        let k = key(t, (i * 7 + round * 13) % 1200);
                        if i % 9 == 4 {
                            tree.delete(&k).unwrap();
                        } else {
                            tree.upsert(&k, &vec![round as u8; 30 + (i % 70) as usize]).unwrap();
                        }
                        if i % 500 == 0 {
                            db.checkpoint().unwrap();
                        }
                    }
                });
            }
        });
        for t in 0..2u32 {
            for i in 0..1500u32 {
                let k = key(t, (i * 7 + round * 13) % 1200);
                if i % 9 == 4 {
                    oracle.remove(&k);
                } else {
                    oracle.insert(k, vec![round as u8; 30 + (i % 70) as usize]);
                }
            }
        }
        // Between rounds, a classical checkpoint and some write-backs: the next decoupled one
        // carries the classical one forward.
        if round == 1 {
            db.core.wal.as_ref().unwrap().checkpoint_classical(&db.core.pool).unwrap();
            db.pool().sweep_evict(8).unwrap();
        }
    }
    // Quiescent: no background checkpoint or cleaner round writes pages between the decoupled
    // checkpoint and the look at the pool.
    db.stop_background();
    let wal = db.core.wal.as_ref().unwrap();
    let end = wal.checkpoint_decoupled(&db.core.pool).unwrap();
    let Record::CheckpointEnd(c) = Record::decode(&wal.log.read(end).unwrap()).unwrap() else {
        panic!("the master names a checkpoint end");
    };
    let pool: BTreeMap<_, _> = db.pool().dirty_pages().into_iter().collect();
    let from_log: BTreeMap<_, _> = c.dirty.iter().copied().collect();
    assert_eq!(
        from_log.keys().collect::<Vec<_>>(),
        pool.keys().collect::<Vec<_>>(),
        "R19: the log names exactly the pool's dirty pages"
    );
    for (page, rec) in &pool {
        assert!(from_log[page] >= *rec, "page {page}: from the log {}, pool {rec}", from_log[page]);
    }
    assert!(c.txns.is_empty(), "no transaction runs: {:?}", c.txns);
    let stats = db.checkpoint_stats().unwrap();
    assert!(stats.decoupled > 4 && stats.decoupled_scanned_bytes > 0, "{stats:?}");

    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    let t = db.tree("t").unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> =
        t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(Result::unwrap).collect();
    // Async commits: a crash may lose the last ones, never part of one; these all preceded the
    // decoupled checkpoint, whose end record is durable.
    assert_eq!(got, oracle);
}

/// R20: replays of the archive bring every page's copy in the file forward — never past the
/// pool's version, and up to it for every page whose changes all precede the replay's end —
/// without the pool writing a page; a decoupled checkpoint then lists only the pages changed
/// since; a crash after it restarts with every commit.
#[test]
fn r20_replays_bring_the_file_forward_without_the_pool() {
    use swizzledb_buffer::{page, Shared};
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/c")).unwrap();
    let path = Path::new("/c/db");
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(1024 * 4096)
        .commit_mode(CommitMode::Sync)
        .checkpoint_interval(None)
        .lab(|l| l.cleaner(crate::Cleaner::None))
        .log_archive(true)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let tree = db.create_tree("t").unwrap();
    let wal = db.core.wal.as_ref().unwrap();
    let pool = &db.core.pool;
    let mut oracle = BTreeMap::new();
    let mut replayed = crate::decoupled::progress(wal).unwrap();
    let writes_before = pool.stats().write_backs;
    let mut parts = 0;
    for round in 0..5u32 {
        db.transact(|tx| {
            for i in 0..800u32 {
                let k = key(round % 2, (i * 11 + round) % 900);
                tx.put(&tree, &k, &vec![round as u8; 20 + (i % 90) as usize])?;
            }
            Ok(())
        })
        .unwrap();
        for i in 0..800u32 {
            oracle.insert(key(round % 2, (i * 11 + round) % 900), vec![round as u8; 20 + (i % 90) as usize]);
        }
        let (to, done) = crate::decoupled::replay(wal, pool, replayed).unwrap();
        assert!(to > replayed && done.pages_written > 0, "round {round}: {done:?}");
        replayed = to;
        parts += done.parts;
        // Every node page: the file's copy is never newer than the pool's, and holds every
        // change below the replay's end.
        let mut buf = vec![0u8; 4096];
        let mut current = 0;
        for id in 1..pool.allocation().page_count {
            let id = swizzledb_sync::PageId::new(id).unwrap();
            let Ok(g) = pool.fix_page::<Shared>(id) else { continue };
            let mem = page::page_lsn(&g);
            if !matches!(page::page_type(&g), Some(page::PageType::Leaf | page::PageType::Inner)) {
                continue;
            }
            drop(g);
            pool.lock_file_page(id).read(&mut buf).unwrap();
            let file = page::page_lsn(&buf);
            assert!(file <= mem, "page {id}: the file ({file}) is ahead of the pool ({mem})");
            if mem < to {
                assert_eq!(file, mem, "page {id}: all its changes precede {to}, the file must hold them");
                current += 1;
            }
        }
        assert!(current > 0);
    }
    assert_eq!(pool.stats().write_backs, writes_before, "R20: the pool wrote no page");
    // R20: pages with more changes than a part holds (8 in tests) were brought forward in parts.
    assert!(parts >= 5, "precondition: {parts} parts");
    // Nothing changed since the last replay: the decoupled checkpoint finds no dirty page
    // (every frame was marked clean, or its decoupled page-write record covers it).
    let end = wal.checkpoint_decoupled(pool).unwrap();
    let Record::CheckpointEnd(c) = Record::decode(&wal.log.read(end).unwrap()).unwrap() else { panic!() };
    assert!(c.dirty.is_empty(), "{:?}", c.dirty);
    // A change after the replay: listed from its own record on.
    tree.upsert(&key(0, 1), b"late").unwrap();
    oracle.insert(key(0, 1), b"late".to_vec());
    let end = wal.checkpoint_decoupled(pool).unwrap();
    let Record::CheckpointEnd(c) = Record::decode(&wal.log.read(end).unwrap()).unwrap() else { panic!() };
    assert_eq!(c.dirty.len(), 1, "{:?}", c.dirty);
    assert!(c.dirty[0].1 >= replayed);

    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .tree("t")
        .unwrap()
        .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, oracle);
}

/// R20, R21 (buffer B26): a replay that read its archive entries before the pool wrote a page,
/// and before an eviction elided a newer version of it, finds the file's copy stale and newer
/// than its entries. It keeps that copy: the file never goes back. (Overwriting it with the
/// older version the entries make, under a page-write record naming the replay's end, let a
/// later decoupled checkpoint start the page's redo after a change the copy had lost: a crash
/// then lost commits, as `crash-test --cleaner decoupled --write-elision` found.)
#[test]
fn r20_a_replay_never_writes_an_older_copy_over_a_newer_stale_one() {
    use swizzledb_btree::node;
    use swizzledb_buffer::{page, Shared};
    use swizzledb_sync::{Lsn, PageId};
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/c")).unwrap();
    let path = Path::new("/c/db");
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(1024 * 4096)
        .commit_mode(CommitMode::Sync)
        .checkpoint_interval(None)
        .log_archive(true)
        .lab(|l| l.cleaner(crate::Cleaner::Decoupled).write_elision(true))
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    db.stop_background();
    let tree = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..300u32 {
        tree.upsert(&key(0, i), &[1u8; 100]).unwrap();
        oracle.insert(key(0, i), vec![1u8; 100]);
    }
    let wal = db.core.wal.as_ref().unwrap();
    let pool = &db.core.pool;
    let (from, _) = crate::decoupled::replay(wal, pool, crate::decoupled::progress(wal).unwrap()).unwrap();

    // Three changes of one leaf; the pool writes it after the second.
    let k = key(0, 150);
    let leaf = (1..pool.allocation().page_count)
        .filter_map(PageId::new)
        .find(|&id| {
            pool.fix_page::<Shared>(id).is_ok_and(|g| {
                page::page_type(&g) == Some(page::PageType::Leaf) && node::search(&*g, &k).is_ok()
            })
        })
        .expect("a leaf holds the key");
    let lsn_of = |id| page::page_lsn(&pool.fix_page::<Shared>(id).unwrap());
    tree.upsert(&k, b"first").unwrap();
    let first = lsn_of(leaf);
    tree.upsert(&k, b"second").unwrap();
    let second = lsn_of(leaf);
    pool.write_back_older(Lsn(u64::MAX), usize::MAX).unwrap();
    tree.upsert(&k, b"third").unwrap();
    oracle.insert(k.clone(), b"third".to_vec());
    // Eviction elides the third version (R21): the copy in the file is stale now.
    pool.sweep_evict(4096).unwrap();
    let mut buf = vec![0u8; 4096];
    assert!(pool.lock_file_page(leaf).read(&mut buf).is_err(), "the leaf's copy is stale");

    // A replay that read the archive when the leaf's first change was its newest.
    wal.archive_durable().unwrap();
    let entries = wal.archive.as_deref().unwrap().entries_between(from, Lsn(first.0 + 1)).unwrap();
    let records: Vec<(Lsn, Record)> = entries
        .iter()
        .filter(|e| e.page == leaf.get())
        .map(|e| (e.lsn, Record::decode(&e.body).unwrap()))
        .collect();
    assert_eq!(records.last().map(|r| r.0), Some(first));
    let written = crate::decoupled::bring_forward_batch(
        wal,
        pool,
        &[(leaf, records)],
        Lsn(first.0 + 1),
        &mut Default::default(),
    )
    .unwrap();
    assert!(written.is_empty(), "the copy in the file is newer than the changes: nothing to write");
    pool.lock_file_page(leaf).read_unchecked(&mut buf).unwrap();
    let copy = page::page_lsn(&buf);
    assert!(copy >= second, "the copy went back from {second} to {copy}");

    // The full replay brings it forward; a decoupled checkpoint and a crash lose nothing.
    crate::decoupled::replay(wal, pool, from).unwrap();
    wal.checkpoint_decoupled(pool).unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .tree("t")
        .unwrap()
        .range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, oracle);
}

/// R17, R20: archiving for a checkpoint or a cleaner replay always reaches the log's durable
/// end, also over a stretch without page changes (only the background archiver waits for
/// more). Otherwise the archive's end could stay below a checkpoint's begin, the replay's
/// page-write records would fall outside the next checkpoint's scan, and truncation would stick
/// (writers throttled at the log's bound would then never resume).
#[test]
fn r20_checkpoints_and_replays_archive_up_to_the_durable_end() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/c")).unwrap();
    let path = Path::new("/c/db");
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .checkpoint_interval(None)
        .lab(|l| l.archive_interval(None))
        .log_archive(true)
        .lab(|l| l.cleaner(crate::Cleaner::Decoupled).vfs(Arc::new(fs.clone())))
        .create(path)
        .unwrap();
    let tree = db.create_tree("t").unwrap();
    for i in 0..300u32 {
        tree.upsert(&key(0, i), b"value").unwrap();
    }
    let wal = db.core.wal.as_ref().unwrap();
    let archive = wal.archive.as_ref().unwrap();
    for _ in 0..3 {
        // No page change since the last archiving: only checkpoint and page-write records.
        db.checkpoint().unwrap();
        let begin =
            crate::restart::read_checkpoint(&wal.log, wal.log.read_master().unwrap().unwrap()).unwrap().begin;
        assert!(archive.end().unwrap() > begin, "the checkpoint archived past its own begin record");
        let from = crate::decoupled::progress(wal).unwrap();
        let (to, _) = crate::decoupled::replay(wal, &db.core.pool, from).unwrap();
        assert_eq!(Some(to), archive.end(), "the replay reached the archive's end");
        assert!(to > begin, "the replay's page-write records fall inside the next checkpoint's scan");
    }
    drop(tree);
    db.close().unwrap();
}

//! `Database::backup_to` (RECOVERY.md R26): a consistent copy taken while a writer runs holds
//! exactly a prefix of its commits; the copy is compacted, opens on its own, and nothing appears
//! at the target before it is complete.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use swizzledb::{Database, Error};
use swizzledb_io::{MemFs, Vfs};

fn contents(db: &Database) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    db.tree_names()
        .into_iter()
        .map(|name| {
            let t = db.tree(&name).unwrap();
            let records = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
            (name, records)
        })
        .collect()
}

fn key(n: u64) -> Vec<u8> {
    format!("k{n:08}").into_bytes()
}

/// A writer commits transactions that each add key n and set `last` to n. A backup taken
/// meanwhile holds keys 0..=m and `last` = m for one m, at least what was acknowledged before
/// the backup began and at most what was acknowledged when it returned.
#[test]
fn r26_a_backup_under_a_writer_holds_a_prefix_of_its_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(256 * 4096)
        .create(dir.path().join("src.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let other = db.create_tree("other").unwrap();
    for i in 0..2000u32 {
        other.insert(&i.to_be_bytes(), &[7u8; 50]).unwrap();
    }
    let acked = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (before, after, stats) = std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.transact(|tx| {
                    tx.insert(&t, &key(n), &[1u8; 40])?;
                    tx.put(&t, b"last", &n.to_be_bytes()).map(|_| ())
                })
                .unwrap();
                n += 1;
                acked.store(n, Ordering::SeqCst);
            }
        });
        while acked.load(Ordering::SeqCst) < 3000 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::SeqCst);
        let stats = db.backup_to(dir.path().join("copy.swz")).unwrap();
        let after = acked.load(Ordering::SeqCst);
        stop.store(true, Ordering::Relaxed);
        (before, after, stats)
    });
    assert!(after > before, "the writer ran during the backup");
    db.close().unwrap();

    let copy = Database::builder().open(dir.path().join("copy.swz")).unwrap();
    let got = contents(&copy);
    let last = u64::from_be_bytes(got["t"][&b"last"[..]].clone().try_into().unwrap());
    let keys: Vec<Vec<u8>> = got["t"].keys().filter(|k| k.as_slice() != b"last").cloned().collect();
    assert_eq!(keys, (0..=last).map(key).collect::<Vec<_>>(), "not a prefix of the commits");
    assert!(
        before <= last + 1 && last < after,
        "last {last}, acknowledged {before} before and {after} after"
    );
    assert_eq!(got["other"].len(), 2000);
    assert_eq!(stats.trees, 2);
    assert_eq!(stats.records, 2000 + last + 2);
}

/// After deletes and a dropped tree the copy is small, holds the same records, opens without
/// the source's log, and refuses to overwrite anything.
#[test]
fn r26_a_backup_is_compacted_and_opens_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create(dir.path().join("src.swz")).unwrap();
    let keep = db.create_tree("keep").unwrap();
    let gone = db.create_tree("gone").unwrap();
    db.transact(|tx| {
        for i in 0..20_000u32 {
            tx.insert(&keep, &i.to_be_bytes(), &[3u8; 200])?;
            tx.insert(&gone, &i.to_be_bytes(), &[4u8; 200])?;
        }
        Ok(())
    })
    .unwrap();
    db.transact(|tx| {
        for i in (0..20_000u32).filter(|i| i % 10 != 0) {
            tx.delete(&keep, &i.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    // A large value, stored in overflow pages.
    keep.insert(b"large", &vec![9u8; 100_000]).unwrap();
    db.drop_tree("gone").unwrap();
    // Every page in the file, so that its size shows what the source holds.
    db.flush().unwrap();
    let want = contents(&db);
    let stats = db.backup_to(dir.path().join("copy.swz")).unwrap();
    assert!(
        stats.backup_file_bytes * 5 < stats.source_file_bytes,
        "{} bytes copied into {} (source {})",
        stats.record_bytes,
        stats.backup_file_bytes,
        stats.source_file_bytes
    );
    assert!(matches!(db.backup_to(dir.path().join("copy.swz")), Err(Error::BackupTargetExists(_))));
    db.close().unwrap();

    // The copy alone, moved elsewhere with its log directory.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::rename(dir.path().join("copy.swz"), elsewhere.path().join("b.swz")).unwrap();
    std::fs::rename(dir.path().join("copy.swz.wal"), elsewhere.path().join("b.swz.wal")).unwrap();
    drop(dir);
    let copy = Database::builder().open(elsewhere.path().join("b.swz")).unwrap();
    assert_eq!(contents(&copy), want);
    assert_eq!(copy.tree_names(), vec!["keep".to_string()]);
    // Nothing but the copy and its log directory was left behind.
    let mut names: Vec<String> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["b.swz", "b.swz.wal"]);
}

/// An in-memory database is backed up to a file; an unlogged one to a single file.
#[test]
fn r26_in_memory_and_unlogged_databases_back_up_to_files() {
    let dir = tempfile::tempdir().unwrap();
    let mem = Database::builder().create_in_memory().unwrap();
    let t = mem.create_tree("t").unwrap();
    t.insert(b"a", b"1").unwrap();
    mem.backup_to(dir.path().join("mem.swz")).unwrap();
    let copy = Database::builder().open(dir.path().join("mem.swz")).unwrap();
    assert_eq!(copy.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    copy.close().unwrap();

    let plain = Database::builder().logging(false).create(dir.path().join("plain.swz")).unwrap();
    plain.create_tree("t").unwrap().insert(b"b", b"2").unwrap();
    plain.backup_to(dir.path().join("plain-copy.swz")).unwrap();
    assert!(!dir.path().join("plain-copy.swz.wal").exists());
    let copy = Database::builder().logging(false).open(dir.path().join("plain-copy.swz")).unwrap();
    assert_eq!(copy.tree("t").unwrap().get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// `BackupStats::source_file_bytes` is the size of the source's file, for an in-memory
/// database the size of its file in memory: it was 0 there (the size was read from the
/// operating system's file system, where an in-memory database has no file).
#[test]
fn r26_an_in_memory_source_reports_the_size_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let page = 4096u64;
    let mem = Database::builder().page_size(page as usize).create_in_memory().unwrap();
    let t = mem.create_tree("t").unwrap();
    for i in 0..2000u32 {
        t.insert(&i.to_be_bytes(), &[1u8; 100]).unwrap();
    }
    mem.flush().unwrap();
    let stats = mem.backup_to(dir.path().join("mem.swz")).unwrap();
    assert!(
        stats.source_file_bytes >= 10 * page && stats.source_file_bytes.is_multiple_of(page),
        "{} bytes: the file in memory holds page 0 and the tree's pages",
        stats.source_file_bytes
    );
    let on_disk = dir.path().join("disk.swz");
    let db = Database::builder().page_size(page as usize).create(&on_disk).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.flush().unwrap();
    let len = std::fs::metadata(&on_disk).unwrap().len();
    let stats = db.backup_to(dir.path().join("disk-copy.swz")).unwrap();
    assert_eq!(stats.source_file_bytes, len, "a file on disk reports its length");
}

/// R26: a backup killed between its two renames — its copy's log directory already at
/// `<target>.wal`, its file still under the temporary name — is undone by the next backup to
/// the target, which then succeeds. It was refused (`BackupTargetExists`) for good: a kill
/// harness reproduces the state with a SIGKILL at that rename. A `<target>.wal` that is no
/// such copy's log still refuses.
#[test]
fn r26_a_backup_killed_between_its_renames_does_not_block_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create(dir.path().join("db.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    for n in 0..500 {
        t.insert(&key(n), b"value").unwrap();
    }
    let target = dir.path().join("bk.swz");
    db.backup_to(&target).unwrap();
    // The state the kill leaves, by a process that is gone (no process has this number).
    std::fs::rename(&target, dir.path().join(".bk.swz.backup-4294967-1")).unwrap();
    db.backup_to(&target).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["bk.swz", "bk.swz.wal", "db.swz", "db.swz.wal"]);
    let copy = Database::builder().open(&target).unwrap();
    assert_eq!(contents(&copy), contents(&db));
    copy.close().unwrap();
    // Another database's log directory at the target's name is kept, and refused.
    let other = dir.path().join("other.swz");
    Database::builder().create(&other).unwrap().close().unwrap();
    std::fs::rename(swizzledb::wal_dir(&other), dir.path().join("bk2.swz.wal")).unwrap();
    assert!(matches!(db.backup_to(dir.path().join("bk2.swz")), Err(Error::BackupTargetExists(_))));
    db.close().unwrap();
}

/// R26: a backup killed at any file-system call (unsynced writes kept or lost), logged and
/// not, leaves the source with every record it held, and at the target either nothing that
/// opens or the whole copy: a target that opens holds exactly the source's records. A backup
/// to another target then succeeds. Backups went around the builder's file system
/// (`LabOptions::vfs`): a database on another was copied onto the operating system's, at a
/// path that named a file on its own.
#[test]
fn r26_a_backup_killed_at_any_call_leaves_the_source_whole_and_no_partial_copy() {
    use swizzledb_io::CrashMode;
    let (path, target) = (Path::new("/d/db"), Path::new("/d/copy"));
    for logged in [true, false] {
        let on = |vfs: Arc<dyn Vfs>| crate::common::small_on(vfs, logged, 32);
        let mut want = BTreeMap::new();
        for (tree, n) in [("a", 60), ("b", 20)] {
            want.insert(
                tree.to_owned(),
                (0..n).map(|i| (key(i), vec![i as u8; 70])).collect::<BTreeMap<_, _>>(),
            );
        }
        let modes = [CrashMode::KeepUnsynced, CrashMode::DropUnsynced];
        let kills = crate::common::kill_at_every_call(
            &modes,
            |fs| {
                fs.create_dir_all(Path::new("/d")).unwrap();
                let db = on(Arc::new(fs.clone())).create(path).unwrap();
                db.transact(|tx| {
                    for (name, records) in &want {
                        let t = db.create_tree(name)?;
                        for (k, v) in records {
                            tx.insert(&t, k, v)?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
                db.close().unwrap();
            },
            |vfs| {
                let db = on(vfs).open(path)?;
                db.backup_to(target)?;
                db.close()
            },
            |fs, context| {
                let context = format!("logged: {logged}, {context}");
                let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
                let db =
                    on(Arc::clone(&vfs)).open(path).unwrap_or_else(|e| panic!("{context}: the source: {e}"));
                assert!(contents(&db) == want, "{context}: the source's records");
                match on(Arc::clone(&vfs)).open(target) {
                    Ok(copy) => {
                        assert!(contents(&copy) == want, "{context}: a copy that opens holds every record");
                        copy.close().unwrap();
                    }
                    Err(e) => assert!(!context.ends_with("not killed"), "{context}: the copy: {e}"),
                }
                let other = Path::new("/d/other");
                db.backup_to(other).unwrap_or_else(|e| panic!("{context}: the next backup: {e}"));
                db.close().unwrap();
                let copy = on(vfs).open(other).unwrap_or_else(|e| panic!("{context}: the next copy: {e}"));
                assert!(contents(&copy) == want, "{context}: the next copy's records");
                copy.close().unwrap();
            },
        );
        assert!(kills > 30, "logged: {logged}: {kills} calls");
    }
}

/// `BackupStats`: the trees copied (an empty one included), the records and the bytes of their
/// keys and values are what a scan of every tree counts, and `backup_file_bytes` is the copy's
/// file length; logged and unlogged.
#[test]
fn r26_backup_stats_count_the_trees_records_and_bytes_copied() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .logging(logging)
            .create(dir.path().join(format!("src-{logging}.swz")))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let other = db.create_tree("other").unwrap();
        db.create_tree("empty").unwrap();
        for i in 0..300u64 {
            t.insert(&key(i), &vec![1u8; usize::try_from(i % 40).unwrap()]).unwrap();
        }
        other.insert(b"", b"").unwrap();
        other.insert(b"long", &vec![2u8; 20_000]).unwrap();
        db.transact(|tx| tx.delete(&t, &key(7)).map(|_| ())).unwrap();
        let (mut records, mut bytes) = (0u64, 0u64);
        for rows in contents(&db).values() {
            records += rows.len() as u64;
            bytes += rows.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum::<u64>();
        }
        let target = dir.path().join(format!("copy-{logging}.swz"));
        let stats = db.backup_to(&target).unwrap();
        assert_eq!(
            (stats.trees, stats.records, stats.record_bytes),
            (3, records, bytes),
            "logging {logging}"
        );
        assert_eq!(records, 301, "logging {logging}");
        assert_eq!(stats.backup_file_bytes, std::fs::metadata(&target).unwrap().len(), "logging {logging}");
        let copy = Database::builder().open(&target).unwrap();
        assert_eq!(contents(&copy), contents(&db), "logging {logging}");
    }
}

/// A `MemFs` with a directory `/m`, and builders of databases on it (4 KiB pages).
fn on_memfs() -> (Arc<dyn Vfs>, impl Fn() -> swizzledb::Builder) {
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/m")).unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(mem);
    let on = Arc::clone(&vfs);
    (vfs, move || Database::builder().page_size(4096).lab(|l| l.vfs(Arc::clone(&on))))
}

/// R26, R28 on a `MemFs` given through `LabOptions::vfs`: a logged database backs up and
/// compacts on it, as on any file system. Both failed with "Is a directory": they rename the
/// copy's log directory, and a `MemFs` renamed only files (io README IO8). The database lies at
/// the path `create_in_memory` uses, which once sent its backup to the operating system's files
/// (only a database made by `create_in_memory` backs up there, R26).
#[test]
fn r26_r28_a_logged_database_on_a_memfs_backs_up_and_compacts() {
    let (vfs, builder) = on_memfs();
    let db = builder().create("/in-memory.swz").unwrap();
    let t = db.create_tree("t").unwrap();
    for n in 0..3000 {
        t.insert(&key(n), &[7u8; 100]).unwrap();
    }
    for n in 0..2500 {
        t.delete(&key(n)).unwrap();
    }
    let want = contents(&db);
    db.backup_to("/m/copy.swz").unwrap();
    db.close().unwrap();
    assert!(vfs.exists(Path::new("/m/copy.swz")), "the copy is on the database's MemFs");
    let copy = builder().open("/m/copy.swz").unwrap();
    assert_eq!(contents(&copy), want, "the backup's records");
    copy.close().unwrap();
    let stats = builder().compact("/in-memory.swz").unwrap();
    assert!(stats.file_bytes_after < stats.file_bytes_before, "{stats:?}");
    let db = builder().open("/in-memory.swz").unwrap();
    assert_eq!(contents(&db), want, "the compacted database's records");
    db.close().unwrap();
}

/// 20,000 records of 100 bytes in `t`, in one transaction: a backup copies them long enough
/// for another thread to act meanwhile.
fn fill_20k(db: &Database, t: &swizzledb::Tree) {
    db.transact(|tx| {
        for n in 0..20_000 {
            tx.insert(t, &key(n), &[3u8; 100])?;
        }
        Ok(())
    })
    .unwrap();
}

/// `db.backup_to(target)` in another thread, with `meanwhile` run in this one once the
/// source's pool counts the backup's first page fixes (or the backup ended).
fn backup_while(
    db: &Database,
    target: &Path,
    meanwhile: impl FnOnce(),
) -> swizzledb::Result<swizzledb::BackupStats> {
    let fixes = db.stats().fixes;
    std::thread::scope(|s| {
        let backup = s.spawn(|| db.backup_to(target));
        while !backup.is_finished() && db.stats().fixes < fixes + 20 {
            std::thread::yield_now();
        }
        meanwhile();
        backup.join().unwrap()
    })
}

/// Drops tree `name`, again while a running transaction keeps it busy (R23).
fn drop_when_idle(db: &Database, name: &str) {
    while let Err(e) = db.drop_tree(name) {
        assert!(matches!(e, Error::TreeBusy(_)), "{e}");
    }
}

/// A tree dropped while the backup copies it fails the backup with `Error::TreeNotFound`
/// naming it, as its rustdoc says, and leaves nothing at the target. Before the fix the error
/// was the scan's `Error::Tree(TreeError::Dropped)`. The drop starts once the source's pool
/// counts the backup's first page fixes, so it meets the copy of the tree's 20,000 records.
#[test]
///
/// On a loaded machine the backup may finish before the drop starts: the copy is then whole,
/// holding the tree, and the case runs again (up to five times) until a drop meets the copy.
fn r26_a_tree_dropped_while_it_is_copied_fails_the_backup_with_tree_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(4096).create(dir.path().join("src.swz")).unwrap();
    for attempt in 0..5 {
        fill_20k(&db, &db.create_tree("gone").unwrap());
        let target = dir.path().join(format!("copy{attempt}.swz"));
        match backup_while(&db, &target, || drop_when_idle(&db, "gone")) {
            Err(Error::TreeNotFound(name)) => {
                assert_eq!(name, "gone");
                let wal = dir.path().join(format!("copy{attempt}.swz.wal"));
                assert!(!target.exists() && !wal.exists(), "nothing at the target");
                db.close().unwrap();
                return;
            }
            Ok(_) => {
                // The copy ended before the drop began: it holds the whole tree.
                let copy = Database::builder().open(&target).unwrap();
                assert_eq!(copy.tree("gone").unwrap().len().unwrap(), 20_000, "attempt {attempt}");
                copy.close().unwrap();
            }
            Err(e) => panic!("expected TreeNotFound: {e:?}"),
        }
    }
    panic!("in five attempts every backup finished before its drop began");
}

/// Two threads back up to one target at once (R26): one makes the copy, the other is refused
/// with `BackupTargetExists`, and the copy opens with every record, logged or not. Before the
/// fix both found the target free: unlogged, both returned `Ok` (the second copy replacing the
/// first), logged, the second failed with an I/O error from its log directory's rename.
#[test]
fn r26_two_backups_to_one_target_at_once_make_one_copy_and_one_refusal() {
    let dir = tempfile::tempdir().unwrap();
    for logging in [false, true] {
        let db = Database::builder()
            .logging(logging)
            .create(dir.path().join(format!("src-{logging}.swz")))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..300 {
            t.insert(&key(i), &[5u8; 64]).unwrap();
        }
        for round in 0..5 {
            let target = dir.path().join(format!("copy-{logging}-{round}.swz"));
            let outcomes: Vec<_> = std::thread::scope(|s| {
                let backups: Vec<_> = (0..2).map(|_| s.spawn(|| db.backup_to(&target))).collect();
                backups.into_iter().map(|b| b.join().unwrap()).collect()
            });
            let context = format!("logging {logging}, round {round}: {outcomes:?}");
            assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{context}");
            assert!(
                outcomes.iter().any(|o| matches!(o, Err(Error::BackupTargetExists(p)) if *p == target)),
                "{context}"
            );
            let copy = Database::builder().open(&target).unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(copy.tree("t").unwrap().len().unwrap(), 300, "{context}");
            copy.close().unwrap();
        }
        db.close().unwrap();
    }
}

/// A tree dropped and created again under its name while the backup copies another tree is
/// not copied from the new tree (R26): the backup fails with `Error::TreeNotFound` naming it,
/// as for any tree dropped during a backup. Before the fix the backup looked each tree up by
/// name when its turn came, found the new tree, and returned `Ok` with a copy that lacked the
/// record the tree held, committed before the backup began.
#[test]
fn r26_a_tree_dropped_and_created_again_during_the_backup_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().page_size(4096).create(dir.path().join("src.swz")).unwrap();
    fill_20k(&db, &db.create_tree("a").unwrap());
    // On a loaded machine the backup may finish before the drop starts: the copy then holds
    // the old "b", and the case runs again (up to five times).
    for attempt in 0..5 {
        if db.tree_names().contains(&"b".to_string()) {
            drop_when_idle(&db, "b");
        }
        db.create_tree("b").unwrap().upsert(b"old", b"committed before the backup").unwrap();
        let target = dir.path().join(format!("copy{attempt}.swz"));
        // The backup copies "a" (its first fixes) before it reaches "b".
        let outcome = backup_while(&db, &target, || {
            drop_when_idle(&db, "b");
            db.create_tree("b").unwrap().upsert(b"new", b"committed during the backup").unwrap();
        });
        match outcome {
            Err(Error::TreeNotFound(name)) => {
                assert_eq!(name, "b");
                assert!(!target.exists(), "nothing at the target");
                db.close().unwrap();
                return;
            }
            Ok(_) => {
                let copy = Database::builder().open(&target).unwrap();
                let b = copy.tree("b").unwrap();
                assert!(
                    b.get(b"old").unwrap().is_some() && b.get(b"new").unwrap().is_none(),
                    "attempt {attempt}"
                );
                drop(b);
                copy.close().unwrap();
            }
            Err(e) => panic!("expected TreeNotFound: {e:?}"),
        }
    }
    panic!("in five attempts every backup finished before its drop began");
}

/// R26, `backup_to`'s "on an error nothing is left at `path`": the sync of the directory after
/// the renames — the backup's last step — fails (`EIO`), logged and unlogged. The backup
/// returns the error and leaves neither a file nor a log directory at the target (the copy
/// renamed into place stayed there, whole, while the call said it failed); the source goes on,
/// and the next backup to the target succeeds and holds every record.
#[test]
fn r26_a_backup_whose_last_directory_sync_fails_leaves_nothing_at_the_target() {
    use swizzledb_io::{Fault, FaultFs, FaultRule, Op};
    let (path, first, target) = (Path::new("/d/db"), Path::new("/d/first"), Path::new("/d/copy"));
    for logged in [true, false] {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let on = || crate::common::small_on(Arc::new(fs.clone()), logged, 32).checkpoint_interval(None);
        let db = on().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..50 {
            t.insert(&key(i), &[i as u8; 40]).unwrap();
        }
        let want = contents(&db);
        // The directory syncs of one backup; the last is the one after the renames.
        let before = fs.calls(Op::SyncDir, None);
        db.backup_to(first).unwrap();
        let syncs = fs.calls(Op::SyncDir, None) - before;
        fs.fail_next(FaultRule::new(Op::SyncDir, Fault::Eio).nth(syncs));
        let r = db.backup_to(target);
        assert!(matches!(r, Err(Error::Buffer(swizzledb::BufferError::Io { .. }))), "logged {logged}: {r:?}");
        assert!(!fs.exists(target), "logged {logged}: a failed backup left its copy at the target");
        assert!(!fs.exists(&swizzledb::wal_dir(target)), "logged {logged}: and its log directory");
        t.upsert(&key(0), b"after").unwrap();
        db.backup_to(target).unwrap();
        let copy = on().open(target).unwrap();
        let mut got = contents(&copy);
        got.get_mut("t").unwrap().insert(key(0), vec![0; 40]);
        assert!(got == want, "logged {logged}: the next backup's records");
        copy.close().unwrap();
        drop(t);
        db.close().unwrap();
    }
}

/// R26's claim holds a target however it is spelled: while a backup to `dir/copy` runs, a
/// backup to `dir/sub/../copy`, `link/copy` (`link` a symbolic link to `dir`), `dir/./copy/`
/// or `dir/copy/` is refused with `BackupTargetExists`, logged and unlogged, and the first
/// backup's copy opens with every record. Before the fix the claim was keyed by the path as
/// given: the second backup ran beside the first and raced it to the renames (unlogged, both
/// returned `Ok`; logged, the loser's clean-up could remove the winner's log directory), and a
/// spelling with a trailing slash passed the check that the target exists.
#[test]
fn r26_a_backup_to_another_spelling_of_a_target_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).unwrap();
    for logging in [false, true] {
        let db = Database::builder()
            .page_size(4096)
            .logging(logging)
            .create(dir.path().join(format!("src-{logging}.swz")))
            .unwrap();
        fill_20k(&db, &db.create_tree("t").unwrap());
        for (round, spelling) in ["sub/../{}", "link/{}", "./{}/", "{}/"].into_iter().enumerate() {
            let name = format!("copy-{logging}-{round}.swz");
            let target = dir.path().join(&name);
            let other = dir.path().join(spelling.replace("{}", &name));
            let mut second = None;
            let first = backup_while(&db, &target, || second = Some(db.backup_to(&other)));
            let context = format!("logging {logging}, {}: {first:?}, {second:?}", other.display());
            assert!(first.is_ok(), "{context}");
            assert!(matches!(second, Some(Err(Error::BackupTargetExists(_)))), "{context}");
            let copy = Database::builder().open(&target).unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(copy.tree("t").unwrap().len().unwrap(), 20_000, "{context}");
            copy.close().unwrap();
        }
        db.close().unwrap();
    }
}

/// A `MemFs` on which another process's backup to `target` lands (its log directory, with a
/// file in it, and its file) just before this process's first rename to either name.
#[derive(Debug)]
struct RacedTo {
    inner: MemFs,
    target: std::path::PathBuf,
    landed: AtomicBool,
}

impl RacedTo {
    fn land(&self, to: &Path) {
        let log = swizzledb::wal_dir(&self.target);
        if (to == self.target || to == log) && !self.landed.swap(true, Ordering::SeqCst) {
            self.inner.create_dir_all(&log).unwrap();
            let other = self.inner.open(&log.join("other"), swizzledb_io::OpenMode::CREATE_NEW).unwrap();
            other.write_all_at(b"the other backup's log", 0).unwrap();
            let other = self.inner.open(&self.target, swizzledb_io::OpenMode::CREATE_NEW).unwrap();
            other.write_all_at(b"the other backup's file", 0).unwrap();
        }
    }
}

impl Vfs for RacedTo {
    fn open(
        &self,
        path: &Path,
        mode: swizzledb_io::OpenMode,
    ) -> std::io::Result<Arc<dyn swizzledb_io::VfsFile>> {
        self.inner.open(path, mode)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.land(to);
        self.inner.rename(from, to)
    }
    fn rename_no_replace(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.land(to);
        self.inner.rename_no_replace(from, to)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
}

/// Another process's backup to the same target (R26: not kept apart by this process's claim)
/// lands between this backup's check that the target is free and its renames. This backup
/// fails with `BackupTargetExists` and leaves the other's log directory and file as they were,
/// logged and unlogged. Before the fix a logged backup whose log directory's rename failed
/// removed `<target>.wal` — the other backup's log, which that backup then reported `Ok`
/// without — and returned an I/O error; an unlogged one replaced the other's file.
#[test]
fn r26_a_backup_beaten_to_its_target_leaves_the_winners_files() {
    let target = Path::new("/m/copy.swz");
    for logged in [true, false] {
        let fs = Arc::new(RacedTo {
            inner: MemFs::new(),
            target: target.to_path_buf(),
            landed: AtomicBool::new(false),
        });
        fs.create_dir_all(Path::new("/m")).unwrap();
        let db = crate::common::small_on(fs.clone(), logged, 64).create("/m/src.swz").unwrap();
        db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
        let r = db.backup_to(target);
        assert!(matches!(r, Err(Error::BackupTargetExists(_))), "logged {logged}: {r:?}");
        let read = |p: &Path| {
            let f = fs.open_read_only(p).unwrap_or_else(|e| panic!("logged {logged}: {}: {e}", p.display()));
            let mut buf = vec![0; f.len().unwrap() as usize];
            f.read_exact_at(&mut buf, 0).unwrap();
            buf
        };
        assert_eq!(
            read(&swizzledb::wal_dir(target).join("other")),
            b"the other backup's log",
            "logged {logged}"
        );
        assert_eq!(read(target), b"the other backup's file", "logged {logged}");
        db.close().unwrap();
    }
}

/// R14, R26, R28: a backup returns `Ok` only for a copy that opens at its target. Beside a
/// target where a create that a crash cut short left its marker (`<target>.creating`, made
/// before anything else), or where a compaction's marker waits (`<target>.compact`, which the
/// next open acts on first), the backup went ahead and renamed its copy in: the copy then
/// opened as `NotFound` (a create's marker says no database is there yet), `open_or_create`
/// removed it and made an empty database, and an open swapped the copy a compaction's marker
/// names over it. The backup is refused as for a target that exists, naming the marker.
#[test]
fn r26_a_backup_refuses_a_target_that_a_create_or_compaction_marker_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create(dir.path().join("db.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    for n in 0..100 {
        t.insert(&key(n), b"value").unwrap();
    }
    let want = contents(&db);
    // Another database, left by a compaction of the target whose marker names it.
    let other = dir.path().join(".bk.swz.backup-4294967-1");
    let o = Database::builder().create(&other).unwrap();
    o.create_tree("other").unwrap();
    o.close().unwrap();
    for marker in ["bk.swz.creating", "bk.swz.compact"] {
        let target = dir.path().join("bk.swz");
        let marker = dir.path().join(marker);
        std::fs::write(
            &marker,
            if marker.ends_with("bk.swz.compact") { &b".bk.swz.backup-4294967-1"[..] } else { b"" },
        )
        .unwrap();
        let r = db.backup_to(&target);
        let refused = matches!(&r, Err(Error::BackupTargetExists(p)) if *p == marker);
        assert!(refused, "{}: {r:?}", marker.display());
        assert!(!target.exists() && !swizzledb::wal_dir(&target).exists(), "{}", marker.display());
        // Without the marker the backup goes ahead, and its copy opens.
        std::fs::remove_file(&marker).unwrap();
        db.backup_to(&target).unwrap();
        let copy = Database::builder().open_or_create(&target).unwrap();
        assert_eq!(contents(&copy), want, "{}", marker.display());
        copy.close().unwrap();
        std::fs::remove_file(&target).unwrap();
        std::fs::remove_dir_all(swizzledb::wal_dir(&target)).unwrap();
    }
    db.close().unwrap();
}

/// R26: a backup is refused a target in the source's own log directory (`<file>.wal`, however
/// the path spells it: through `.`, or a symbolic link to it; the archive's directory within it
/// too), naming the target, and nothing is written there. It was written there and returned
/// `Ok`, and the source's next compaction (R28) removed it with the old log directory: the
/// backup was lost without a word. A target beside the log directory is backed up.
#[test]
fn r26_a_backup_into_the_sources_log_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.swz");
    let db = Database::builder().log_archive(true).create(&src).unwrap();
    let t = db.create_tree("t").unwrap();
    for n in 0..200 {
        t.insert(&key(n), b"value").unwrap();
    }
    db.checkpoint().unwrap();
    let log = swizzledb::wal_dir(&src);
    let archive = log.join("archive");
    assert!(archive.is_dir(), "the archive's directory is in the log directory");
    std::os::unix::fs::symlink(&log, dir.path().join("link")).unwrap();
    let names = |p: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(p).unwrap().map(|e| e.unwrap().file_name()).collect();
        v.sort();
        v
    };
    let before = names(&log);
    for target in [
        log.join("copy.swz"),
        log.join(".").join("copy.swz"),
        dir.path().join("link/copy.swz"),
        archive.join("copy"),
    ] {
        let r = db.backup_to(&target);
        let refused = matches!(&r, Err(Error::BackupTargetInLog(p)) if *p == target.components().collect::<std::path::PathBuf>());
        assert!(refused, "{}: {r:?}", target.display());
        assert_eq!(names(&log), before, "{}", target.display());
    }
    db.backup_to(dir.path().join("src.swz.copy")).unwrap();
    drop(t);
    db.close().unwrap();
    let copy = Database::builder().open(dir.path().join("src.swz.copy")).unwrap();
    assert_eq!(copy.tree("t").unwrap().range(Unbounded, Unbounded).count(), 200);
    copy.close().unwrap();
}

/// R26: a backup is refused a target in *another* database's log directory too (found by the
/// identity file every log directory holds), from a logged and from an unlogged source, on the
/// operating system's file system and on a `MemFs`. It was written there and returned `Ok`, and
/// that database's next compaction (R28) removed it with its old log directory: the backup was
/// lost without a word.
#[test]
fn r26_a_backup_into_another_databases_log_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.swz");
    Database::builder().create(&other).unwrap().close().unwrap();
    let other_log = swizzledb::wal_dir(&other);
    for logged in [true, false] {
        let src = dir.path().join(format!("src-{logged}.swz"));
        let builder = if logged { Database::builder() } else { Database::builder().logging(false) };
        let db = builder.create(&src).unwrap();
        let t = db.create_tree("t").unwrap();
        t.upsert(b"k", b"v").unwrap();
        for target in [other_log.join("copy.swz"), other_log.join("sub").join("copy.swz")] {
            let r = db.backup_to(&target);
            assert!(matches!(&r, Err(Error::BackupTargetInLog(p)) if *p == target), "logged {logged}: {r:?}");
            assert!(!target.exists() && !swizzledb::wal_dir(&target).exists());
        }
        drop(t);
        db.close().unwrap();
    }
    // The other database compacts as before, its log directory holding only its own files.
    Database::builder().compact(&other).unwrap();

    let (fs, builder) = on_memfs();
    let a = Path::new("/m/a.swz");
    let b = Path::new("/m/b.swz");
    builder().create(b).unwrap().close().unwrap();
    let db = builder().create(a).unwrap();
    let target = swizzledb::wal_dir(b).join("copy.swz");
    let r = db.backup_to(&target);
    assert!(matches!(&r, Err(Error::BackupTargetInLog(p)) if *p == target), "MemFs: {r:?}");
    assert!(!fs.exists(&target));
    db.close().unwrap();
}

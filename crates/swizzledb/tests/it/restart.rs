//! Restart from hand-built logs (RECOVERY.md R8–R11): after a clean close, records are appended
//! to the log directly — as if a process had logged them and crashed before writing any page —
//! and opening the database must redo the changes, roll back the losers with compensation
//! records, finish committed transactions, and ignore what follows a torn tail.

use std::path::Path;
use std::sync::Arc;
use swizzledb::lab::record::{Change, NodeLog, Record};
use swizzledb::lab::TreeExt as _;
use swizzledb::{Database, Error};
use swizzledb_io::fault::{CrashMode, FaultFs};
use swizzledb_io::Vfs;
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogManager};

fn builder() -> swizzledb::Builder {
    Database::builder().logging(true).page_size(4096).pool_bytes(64 * 4096).checkpoint_interval(None)
}

/// A logged database with one empty tree "t", closed; returns the tree's root page.
fn fresh(path: &Path) -> PageId {
    let db = builder().create(path).unwrap();
    let root = db.create_tree("t").unwrap().root_page();
    db.close().unwrap();
    root
}

/// Appends `records` to the database's log, linking each transaction's records by `prev`
/// (the `prev` fields given are replaced); returns their LSNs.
fn append(path: &Path, records: Vec<Record>) -> Vec<Lsn> {
    let log = LogManager::open(LogConfig::new(swizzledb::wal_dir(path))).unwrap();
    let mut last: std::collections::HashMap<TxnId, Lsn> = Default::default();
    let mut lsns = Vec::new();
    for mut r in records {
        let txn = r.txn_link().map(|(t, _)| t);
        let link = txn.and_then(|t| last.get(&t).copied()).unwrap_or(Lsn(0));
        match &mut r {
            Record::Leaf { prev, .. }
            | Record::Commit { prev, .. }
            | Record::Abort { prev, .. }
            | Record::End { prev, .. } => {
                *prev = link;
            }
            _ => {}
        }
        let lsn = log.append(&r.encode()).unwrap();
        if let Some(t) = txn {
            last.insert(t, lsn);
        }
        lsns.push(lsn);
    }
    log.close().unwrap();
    lsns
}

fn insert(txn: u64, page: PageId, tree: PageId, key: &[u8], value: &[u8]) -> Record {
    Record::Leaf {
        txn: TxnId(txn),
        prev: Lsn(0),
        undo_next: None,
        tree,
        page,
        change: Change::Insert { key: key.to_vec(), value: value.to_vec() },
        base: None,
        chain: vec![],
        freed: vec![],
        commits: false,
    }
}

/// A transaction that inserted `key` and committed, without its end record.
fn committed(txn: u64, root: PageId, key: &[u8], value: &[u8]) -> Vec<Record> {
    vec![
        Record::Begin { txn: TxnId(txn) },
        insert(txn, root, root, key, value),
        Record::Commit { txn: TxnId(txn), prev: Lsn(0) },
    ]
}

fn get(db: &Database, key: &[u8]) -> Option<Vec<u8>> {
    db.tree("t").unwrap().get(key).unwrap()
}

/// R8–R10: a committed transaction is redone; an unfinished one is redone, then rolled back with
/// one compensation record per change; the tree is valid and usable afterwards.
#[test]
fn r9_r10_committed_redone_loser_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    let root = fresh(&path);
    append(
        &path,
        vec![
            Record::Begin { txn: TxnId(100) },
            insert(100, root, root, b"a", b"1"),
            insert(100, root, root, b"b", b"2"),
            Record::Commit { txn: TxnId(100), prev: Lsn(0) },
            Record::End { txn: TxnId(100), prev: Lsn(0) },
            Record::Begin { txn: TxnId(101) },
            insert(101, root, root, b"c", b"3"),
            insert(101, root, root, b"d", b"4"),
        ],
    );
    let db = builder().open(&path).unwrap();
    let s = db.restart_stats();
    assert_eq!((s.redone, s.losers, s.compensations), (4, 1, 2), "{s:?}");
    assert_eq!(get(&db, b"a").as_deref(), Some(&b"1"[..]));
    assert_eq!(get(&db, b"b").as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&db, b"c"), None, "the loser's changes are undone");
    assert_eq!(get(&db, b"d"), None);
    db.tree("t").unwrap().verify().unwrap();
    // New transactions get numbers above every one in the log.
    let mut t = db.begin();
    assert!(t.id() > TxnId(101));
    t.put(&db.tree("t").unwrap(), b"e", b"5").unwrap();
    t.commit().unwrap();
    db.close().unwrap();
    // A second restart has nothing left to do (R11).
    let db = builder().open(&path).unwrap();
    let s = db.restart_stats();
    assert_eq!((s.redone, s.losers, s.compensations), (0, 0, 0), "{s:?}");
    assert_eq!(get(&db, b"e").as_deref(), Some(&b"5"[..]));
    db.close().unwrap();
}

/// R5, R10: a rollback interrupted after one compensation record resumes at that record's
/// undo-next link: the compensated change is not undone twice, the rest is.
#[test]
fn r10_an_interrupted_rollback_resumes_at_its_last_compensation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    let root = fresh(&path);
    let lsns = append(
        &path,
        vec![
            Record::Begin { txn: TxnId(7) },
            insert(7, root, root, b"x", b"1"),
            insert(7, root, root, b"y", b"2"),
            Record::Abort { txn: TxnId(7), prev: Lsn(0) },
        ],
    );
    // The compensation of the insert of "y": its undo-next is that record's prev, the insert of "x".
    append(
        &path,
        vec![Record::Leaf {
            txn: TxnId(7),
            prev: lsns[3],
            undo_next: Some(lsns[1]),
            tree: root,
            page: root,
            change: Change::Delete { key: b"y".to_vec(), old: b"2".to_vec() },
            base: None,
            chain: vec![],
            freed: vec![],
            commits: false,
        }],
    );
    let db = builder().open(&path).unwrap();
    let s = db.restart_stats();
    assert_eq!((s.losers, s.compensations), (1, 1), "only the insert of x is left to undo: {s:?}");
    assert_eq!(get(&db, b"x"), None);
    assert_eq!(get(&db, b"y"), None);
    db.tree("t").unwrap().verify().unwrap();
    db.close().unwrap();
}

/// R2, R10: a transaction whose commit record is in the log but not its end record is a winner:
/// its changes stay and it only gets its end record.
#[test]
fn r10_committed_without_end_is_a_winner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    let root = fresh(&path);
    append(&path, committed(9, root, b"k", b"v"));
    let db = builder().open(&path).unwrap();
    let s = db.restart_stats();
    assert_eq!((s.losers, s.compensations), (0, 0), "{s:?}");
    assert_eq!(get(&db, b"k").as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}

/// R9: a page written after its changes is rebuilt from the image in the log (redo does not
/// read it from the file), to the same contents; the restart's checkpoint leaves nothing to
/// redo for the next one.
#[test]
fn r9_a_page_written_before_the_crash_is_rebuilt_the_same() {
    let fs = Arc::new(FaultFs::new());
    let path = Path::new("/db/t.swz");
    fs.create_dir_all(Path::new("/db")).unwrap();
    let builder = builder().lab(|l| l.vfs(fs.clone()));
    let db = builder.clone().create(path).unwrap();
    let tree = db.create_tree("t").unwrap();
    let mut t = db.begin();
    t.put(&tree, b"a", b"1").unwrap();
    t.commit().unwrap();
    db.flush().unwrap(); // the page, with the change, is in the file; no checkpoint follows
    fs.crash(CrashMode::DropUnsynced);
    drop(tree);
    drop(db); // its handles fail from the crash on: nothing it does reaches the new state
    let db = builder.clone().open(path).unwrap();
    let s = db.restart_stats();
    assert_eq!((s.redone, s.pages_written, s.losers), (2, 1, 0), "the root's image and the insert: {s:?}");
    assert_eq!(get(&db, b"a").as_deref(), Some(&b"1"[..]));
    fs.crash(CrashMode::KeepUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    assert_eq!(db.restart_stats().redone, 0, "{:?}", db.restart_stats());
    assert_eq!(get(&db, b"a").as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

/// R3, R9: splits, adoptions and sibling merges are logged as node changes on the old nodes
/// and the parents; a crash before any page is written (and one after some pages were written,
/// whose next changes then log images) is recovered by redoing them page by page: every
/// committed insert and delete is there, the tree is valid.
#[test]
fn r9_node_changes_are_redone_after_a_crash() {
    for flush_midway in [false, true] {
        let fs = Arc::new(FaultFs::new());
        let path = Path::new("/db/t.swz");
        fs.create_dir_all(Path::new("/db")).unwrap();
        let builder = builder().pool_bytes(2048 * 4096).lab(|l| l.vfs(fs.clone()));
        let db = builder.clone().create(path).unwrap();
        let tree = db.create_tree("t").unwrap();
        let key = |i: u32| format!("{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes();
        for batch in 0..60u32 {
            let mut t = db.begin();
            for i in batch * 50..(batch + 1) * 50 {
                t.put(&tree, &key(i), &[i as u8; 90]).unwrap();
            }
            t.commit().unwrap();
            if batch == 20 {
                db.checkpoint().unwrap();
            }
            if batch == 40 && flush_midway {
                db.flush().unwrap();
            }
        }
        db.checkpoint().unwrap();
        // Changes after the last checkpoint too, so that analysis reads node changes; deletes
        // of most keys, so that siblings merge (unlink).
        let mut t = db.begin();
        for i in 3000..3600 {
            t.put(&tree, &key(i), &[i as u8; 90]).unwrap();
        }
        t.commit().unwrap();
        for batch in 0..10u32 {
            let mut t = db.begin();
            for i in (batch * 300..(batch + 1) * 300).filter(|i| i % 10 != 0) {
                assert!(t.delete(&tree, &key(i)).unwrap());
            }
            t.commit().unwrap();
        }
        let kept = |i: u32| i >= 3000 || i.is_multiple_of(10);
        fs.crash(CrashMode::DropUnsynced);
        drop(tree);
        drop(db);

        let log = LogManager::open({
            let mut c = LogConfig::new(swizzledb::wal_dir(path));
            c.vfs = fs.clone();
            c
        })
        .unwrap();
        // Node changes that no later image of their page replaces: without the flush, no page
        // reached the file, so redo must apply all of them.
        let mut changes = Vec::new();
        let mut last_image = std::collections::HashMap::new();
        let mut unlinks = 0;
        for item in log.scan(log.oldest()).unwrap() {
            let (lsn, body) = item.unwrap();
            if let Record::Structure { pages, .. } = Record::decode(&body).unwrap() {
                for (page, node) in pages {
                    match node {
                        NodeLog::Image(_) => {
                            last_image.insert(page, lsn);
                        }
                        NodeLog::Unlink { .. } => {
                            unlinks += 1;
                            changes.push((page, lsn));
                        }
                        _ => changes.push((page, lsn)),
                    }
                }
            }
        }
        drop(log);
        let needed = changes.iter().filter(|(p, lsn)| last_image.get(p).is_none_or(|i| lsn > i)).count();
        assert!(needed > 50, "the log holds node changes redo needs: {needed} of {}", changes.len());
        assert!(unlinks > 5, "siblings merged: {unlinks}");

        let db = builder.open(path).unwrap();
        let s = db.restart_stats();
        assert!(flush_midway || s.redone > needed as u64, "{s:?}");
        let tree = db.tree("t").unwrap();
        let shape = tree.verify().unwrap();
        assert_eq!(shape.records, 900, "flush midway: {flush_midway}");
        for i in 0..3600 {
            let want = kept(i).then(|| vec![i as u8; 90]);
            assert_eq!(tree.get(&key(i)).unwrap(), want, "key {i}");
        }
        db.close().unwrap();
    }
}

/// R9, T13: a node change that does not match its page (a separator not on it, an adoption
/// into a leaf, an adopted foster child it does not have) is `LogCorrupted`, naming the
/// record's LSN and the page, never a panic.
#[test]
fn r9_a_node_change_that_does_not_match_its_page_is_log_corrupted() {
    let other = PageId::new(77).unwrap();
    for (what, node) in [
        ("not a key of the page", NodeLog::Split { key: b"zz".to_vec(), right: other }),
        ("into a leaf", NodeLog::Adopt { key: b"zz".to_vec(), child: other }),
        ("foster child is not page 77", NodeLog::Adopted { child: other }),
        ("unlink in a leaf", NodeLog::Unlink { key: b"zz".to_vec(), child: other }),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swz");
        let root = fresh(&path);
        let lsns =
            append(&path, vec![Record::Structure { pages: vec![(root, node.clone())], freed: vec![] }]);
        match builder().open(&path) {
            Err(Error::LogCorrupted { lsn, reason }) => {
                assert_eq!(lsn, lsns[0], "{node:?}");
                assert!(reason.contains(&format!("page {root}")) && reason.contains(what), "{reason}");
            }
            other => panic!("{node:?}: expected LogCorrupted, got {:?}", other.map(|_| ())),
        }
    }
}

/// W7, R10: garbage after the last record is the end of the log; a master record naming a
/// place where no checkpoint is is `LogCorrupted`, naming the LSN.
#[test]
fn r10_torn_tail_is_the_end_and_a_bad_master_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swz");
    let root = fresh(&path);
    append(&path, committed(3, root, b"a", b"1"));
    // Garbage at the end of the newest segment.
    let wal = swizzledb::wal_dir(&path);
    let newest = std::fs::read_dir(&wal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    bytes.extend_from_slice(&[0xAB; 100]);
    std::fs::write(&newest, &bytes).unwrap();
    let db = builder().open(&path).unwrap();
    assert_eq!(get(&db, b"a").as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
    // A master naming an LSN inside a record.
    let log = LogManager::open(LogConfig::new(&wal)).unwrap();
    let end = log.end();
    log.write_master(Lsn(end.0 - 8)).unwrap_or(());
    drop(log);
    match builder().open(&path) {
        Err(Error::LogCorrupted { lsn, .. }) => assert_eq!(lsn, Lsn(end.0 - 8)),
        Err(Error::Log(e)) => panic!("expected LogCorrupted, got the log error {e}"),
        other => panic!("expected LogCorrupted, got {other:?}"),
    }
}

/// R9, buffer F14, F15: restart writes the pages it redid in batches of 64 through one aligned
/// room, with direct I/O as without: a sync of the double-write area per batch, not one per
/// page, and every committed value back.
#[test]
fn r9_restart_writes_redone_pages_in_batches_with_and_without_direct_io() {
    use swizzledb_io::Op;
    for direct in [false, true] {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let path = Path::new("/d/db");
        let b = Database::builder()
            .page_size(4096)
            .pool_bytes(4096 * 4096)
            .direct_io(direct)
            .checkpoint_interval(None)
            .lab(|l| l.cleaner(swizzledb::Cleaner::None).vfs(Arc::new(fs.clone())));
        let db = b.clone().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        let value = |i: u32| format!("value {i} ").into_bytes().repeat(8);
        for chunk in (0..20_000u32).collect::<Vec<_>>().chunks(500) {
            db.transact(|tx| {
                for &i in chunk {
                    tx.put(&t, format!("k{:07}", (i * 7919) % 20_000).as_bytes(), &value(i))?;
                }
                Ok(())
            })
            .unwrap();
        }
        drop(t);
        fs.power_off(CrashMode::DropUnsynced);
        drop(db);
        fs.power_on();
        let syncs = fs.calls(Op::Sync, Some("/d/db"));
        let db = b.open(path).unwrap();
        let stats = db.restart_stats();
        let restart_syncs = fs.calls(Op::Sync, Some("/d/db")) - syncs;
        assert!(stats.pages_written >= 256, "direct {direct}: precondition: {stats:?}");
        assert!(
            restart_syncs <= 2 * stats.pages_written.div_ceil(64) + 8,
            "direct {direct}: {restart_syncs} syncs for {} pages",
            stats.pages_written
        );
        let t = db.tree("t").unwrap();
        for i in 0..20_000u32 {
            let k = format!("k{:07}", (i * 7919) % 20_000);
            assert_eq!(t.get(k.as_bytes()).unwrap(), Some(value(i)), "direct {direct}: {k}");
        }
    }
}

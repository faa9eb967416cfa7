//! What the inspection tools say about a crashed logged database and about a cleanly closed one
//! copied without its log (`inspect` module docs, RECOVERY.md R14, buffer F11).

use std::path::Path;
use swizzledb::inspect::DatabaseFile;
use swizzledb::{wal_dir, Database, Error};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Copies a database file and its log directory: while the database is open, what a crash
/// (of the process, not the machine) would leave.
fn copy_db(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let (wf, wt) = (wal_dir(from), wal_dir(to));
    std::fs::create_dir_all(&wt).unwrap();
    for e in std::fs::read_dir(&wf).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), wt.join(e.file_name())).unwrap();
        }
    }
}

/// A crashed logged database whose tree pages never reached the file (beyond its end) is not
/// damaged: the log holds every page's image, and restart rebuilds them. A page the log does
/// not change, damaged in the file, still is damage.
#[test]
fn pages_restart_rebuilds_are_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.swz");
    let db = Database::builder().page_size(4096).create(&live).unwrap();
    let old = db.create_tree("old").unwrap();
    for i in 0..500 {
        old.insert(&key(i), &[1u8; 100]).unwrap();
    }
    drop(old);
    db.close().unwrap();
    let db = Database::builder().page_size(4096).open(&live).unwrap();
    let t = db.create_tree("new").unwrap();
    for i in 0..2000 {
        t.insert(&key(i), &[7u8; 100]).unwrap();
    }
    let crashed = dir.path().join("crashed.swz");
    copy_db(&live, &crashed);
    drop(t);
    drop(db);

    let file = DatabaseFile::open(&crashed).unwrap();
    assert!(!file.info().clean && !file.info().closed_cleanly, "{:?}", file.info());
    let report = file.verify();
    assert!(report.needs_restart);
    assert!(report.is_clean(), "restart rebuilds these pages: {:?}", report.damage);
    assert!(report.rebuilt_by_restart.len() > 10, "{:?}", report.rebuilt_by_restart);
    // A dump meets such a page: its error says the file needs restart, not only "damaged".
    let e = file.dump("new", |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("needs restart"), "{e}");
    // ... and sends the reader to open the database, not to `verify`, which finds nothing.
    assert!(e.to_string().contains("open the database") && !e.to_string().contains("verify"), "{e}");
    drop(file);

    // Genuine damage on a page of "old", which the log does not change: still damage.
    let damaged = dir.path().join("damaged.swz");
    copy_db(&crashed, &damaged);
    let mut bytes = std::fs::read(&damaged).unwrap();
    bytes[4096 + 2000] ^= 0xff;
    std::fs::write(&damaged, &bytes).unwrap();
    let report = DatabaseFile::open(&damaged).unwrap().verify();
    assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
    assert_eq!(report.damage[0].page.map(|p| p.get()), Some(1), "{:?}", report.damage);
    assert!(!report.rebuilt_by_restart.is_empty());

    // And restart does rebuild them: every row is back.
    let db = Database::builder().page_size(4096).open(&crashed).unwrap();
    let (t, old) = (db.tree("new").unwrap(), db.tree("old").unwrap());
    for i in 0..2000 {
        assert_eq!(t.get(&key(i)).unwrap().as_deref(), Some(&[7u8; 100][..]), "key {i}");
    }
    for i in 0..500 {
        assert_eq!(old.get(&key(i)).unwrap().as_deref(), Some(&[1u8; 100][..]), "key {i}");
    }
    db.close().unwrap();
    let file = DatabaseFile::open(&crashed).unwrap();
    assert!(file.info().clean && file.info().closed_cleanly, "{:?}", file.info());
    assert!(file.verify().is_clean());
}

/// A cleanly closed logged database copied without its log: the open's error and the
/// inspection say it was closed cleanly and that its log directory is missing; a crashed one
/// copied so is not said to be closed cleanly.
#[test]
fn a_clean_copy_without_its_log_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let copy = dir.path().join("copy.swz");
    std::fs::copy(&path, &copy).unwrap();

    match Database::builder().open(&copy) {
        Err(e @ Error::LogMissing { .. }) => {
            let Error::LogMissing { reason, .. } = &e else { unreachable!() };
            assert!(reason.contains("closed cleanly"), "{reason}");
            assert!(reason.contains(&wal_dir(&copy).display().to_string()), "{reason}");
            assert!(e.to_string().contains("closed cleanly"), "{e}");
        }
        other => panic!("expected LogMissing, got {other:?}"),
    }
    let file = DatabaseFile::open(&copy).unwrap();
    let info = file.info();
    assert!(info.logged && info.closed_cleanly && !info.clean, "{info:?}");
    assert!(info.log.as_ref().is_some_and(|l| l.missing), "{info:?}");
    drop(file);

    // Opened again (and so no longer closed cleanly), then copied without its log.
    let db = Database::builder().open(&path).unwrap();
    db.tree("t").unwrap().insert(b"k2", b"v2").unwrap();
    let crashed = dir.path().join("crashed.swz");
    std::fs::copy(&path, &crashed).unwrap();
    db.close().unwrap();
    match Database::builder().open(&crashed) {
        Err(Error::LogMissing { reason, .. }) => assert!(!reason.contains("closed cleanly"), "{reason}"),
        other => panic!("expected LogMissing, got {other:?}"),
    }
    let file = DatabaseFile::open(&crashed).unwrap();
    assert!(!file.info().closed_cleanly, "{:?}", file.info());
}

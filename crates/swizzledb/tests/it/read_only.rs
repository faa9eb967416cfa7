//! `Builder::read_only` (RECOVERY.md R27): a cleanly closed database opens for reading in every
//! buffer mode, reads as it was written, refuses every change with `TreeError::ReadOnly` and
//! changes no byte of its file or log; read-only opens share the file and exclude a read-write
//! one; a database that needs restart is refused, and so is a read-only compaction. On the
//! file system `LabOptions::vfs` gives (a `FaultFs`, a `MemFs`) the same holds, clean or after
//! a crash, with no write, sync or change of a name through it.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::Arc;

use swizzledb::{Cleaner, Database, Error, LogError, PoolMode, RestartMode, TreeError};
use swizzledb_io::{CrashMode, MemFs, Op, OpenMode, Vfs};

use crate::common;

type Records = BTreeMap<Vec<u8>, Vec<u8>>;

fn make(path: &Path) -> Records {
    let db = Database::builder().page_size(4096).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Records::new();
    db.transact(|tx| {
        for i in 0..5000u32 {
            tx.insert(&t, &i.to_be_bytes(), &[5u8; 60])?;
        }
        Ok(())
    })
    .unwrap();
    for i in 0..5000u32 {
        oracle.insert(i.to_be_bytes().to_vec(), vec![5u8; 60]);
    }
    t.insert(b"large", &vec![8u8; 50_000]).unwrap();
    oracle.insert(b"large".to_vec(), vec![8u8; 50_000]);
    db.create_tree("other").unwrap().insert(b"x", b"y").unwrap();
    db.close().unwrap();
    oracle
}

/// Every file's bytes under the database's directory.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn is_read_only<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Tree(TreeError::ReadOnly)))
}

#[test]
fn r27_a_read_only_database_reads_refuses_changes_and_writes_nothing() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.swz");
        let oracle = make(&path);
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&path, perms).unwrap();
        let before = snapshot(dir.path());

        // A small pool where it may evict: clean frames go without a write.
        let frames = if mode == PoolMode::MainMemory { 1024 } else { 64 };
        let db =
            Database::builder().mode(mode).pool_bytes(frames * 4096).read_only(true).open(&path).unwrap();
        let t = db.tree("t").unwrap();
        let got: Records = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
        assert_eq!(got, oracle, "{mode:?}");
        assert_eq!(t.get(b"large").unwrap().map(|v| v.len()), Some(50_000));
        let snap = db.begin_read();
        assert_eq!(snap.get(&t, &7u32.to_be_bytes()).unwrap().as_deref(), Some(&[5u8; 60][..]));
        drop(snap);
        let read_in_tx = db.transact(|tx| tx.get(&t, &9u32.to_be_bytes())).unwrap();
        assert_eq!(read_in_tx.as_deref(), Some(&[5u8; 60][..]));

        // Every change refused, nothing changed.
        assert!(matches!(t.insert(b"new", b"v"), Err(TreeError::ReadOnly)), "{mode:?}");
        assert!(matches!(t.upsert(&1u32.to_be_bytes(), b"v"), Err(TreeError::ReadOnly)));
        assert!(matches!(t.delete(&1u32.to_be_bytes()), Err(TreeError::ReadOnly)));
        let big = t.insert(b"big", &vec![1u8; 30_000]);
        assert!(matches!(big, Err(TreeError::ReadOnly)), "{big:?}");
        assert!(matches!(
            t.compare_and_swap(&2u32.to_be_bytes(), Some(&[5u8; 60][..]), None),
            Err(TreeError::ReadOnly)
        ));
        assert!(is_read_only(db.transact(|tx| tx.insert(&t, b"in-tx", b"v"))));
        assert!(is_read_only(db.create_tree("new")));
        assert!(is_read_only(db.drop_tree("other")));
        assert!(is_read_only(db.checkpoint()));
        assert!(is_read_only(db.flush()));
        assert_eq!(t.len().unwrap(), oracle.len());
        assert_eq!(db.tree_names().len(), 2);

        // Read-only opens share the file; a read-write one is kept out, and keeps them out.
        let second = Database::builder().read_only(true).open(&path).unwrap();
        assert_eq!(second.tree("other").unwrap().get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
        assert!(matches!(Database::builder().open(&path), Err(Error::AlreadyOpen(_))));
        // A backup of a read-only open is a logged database again, as its source.
        let copy = dir.path().join("copy.swz");
        second.backup_to(&copy).unwrap();
        second.close().unwrap();
        let reopened = Database::builder().logging(true).open(&copy).unwrap();
        assert_eq!(reopened.tree("t").unwrap().len().unwrap(), oracle.len());
        reopened.close().unwrap();
        std::fs::remove_file(&copy).unwrap();
        std::fs::remove_dir_all(swizzledb::wal_dir(&copy)).unwrap();
        db.close().unwrap();
        assert_eq!(snapshot(dir.path()), before, "{mode:?}: a read-only session changed the files");

        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).unwrap();
        // Compaction replaces the file: a read-only builder refuses it and leaves every byte.
        let before = snapshot(dir.path());
        assert!(is_read_only(Database::builder().read_only(true).compact(&path)), "{mode:?}");
        assert_eq!(snapshot(dir.path()), before, "{mode:?}: a read-only compact changed the files");
        let writer = Database::builder().open(&path).unwrap();
        assert!(matches!(Database::builder().read_only(true).open(&path), Err(Error::AlreadyOpen(_))));
        writer.close().unwrap();
    }
}

/// A copy taken while the database was open needs restart, which writes: refused read-only,
/// and it opens read-only once a read-write open has restarted and closed it. `create`
/// refuses, and a missing file is `NotFound`.
#[test]
fn r27_a_database_that_needs_restart_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.swz");
    let oracle = make(&path);
    let db = Database::builder().open(&path).unwrap();
    db.tree("t").unwrap().insert(b"late", b"1").unwrap();
    let copy = dir.path().join("copy.swz");
    std::fs::copy(&path, &copy).unwrap();
    let copy_wal = swizzledb::wal_dir(&copy);
    std::fs::create_dir(&copy_wal).unwrap();
    for e in std::fs::read_dir(swizzledb::wal_dir(&path)).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, copy_wal.join(p.file_name().unwrap())).unwrap();
        }
    }
    db.close().unwrap();
    assert!(matches!(Database::builder().read_only(true).open(&copy), Err(Error::NeedsRestart(_))));
    Database::builder().open(&copy).unwrap().close().unwrap();
    let ro = Database::builder().read_only(true).open(&copy).unwrap();
    let t = ro.tree("t").unwrap();
    assert_eq!(t.get(b"late").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(t.len().unwrap(), oracle.len() + 1);

    assert!(is_read_only(Database::builder().read_only(true).create(dir.path().join("new.swz"))));
    assert!(is_read_only(Database::builder().read_only(true).open_or_create(dir.path().join("new.swz"))));
    // Neither made a file or a log directory.
    assert!(
        !dir.path().join("new.swz").exists() && !swizzledb::wal_dir(&dir.path().join("new.swz")).exists()
    );
    assert!(matches!(
        Database::builder().read_only(true).open(dir.path().join("none.swz")),
        Err(Error::NotFound(_))
    ));
}

/// `Builder::logging(true)` refuses an unlogged file with `NotLogged` on every open, read-only
/// included; a read-only open cannot convert it (the conversion writes). `logging(false)` and
/// no setting open it, and a logged file opens read-only whatever `logging` says;
/// `Database::is_logged` follows the file.
#[test]
fn r27_logging_true_refuses_an_unlogged_file_read_only_too() {
    let dir = tempfile::tempdir().unwrap();
    let unlogged = dir.path().join("unlogged.swz");
    let db = Database::builder().logging(false).create(&unlogged).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    db.close().unwrap();
    let logged = dir.path().join("logged.swz");
    make(&logged);
    let before = snapshot(dir.path());

    assert!(matches!(Database::builder().logging(true).open(&unlogged), Err(Error::NotLogged(_))));
    let r = Database::builder().read_only(true).logging(true).open(&unlogged);
    assert!(matches!(r, Err(Error::NotLogged(_))), "{:?}", r.map(|_| ()));
    let r =
        Database::builder().read_only(true).logging(true).lab(|l| l.convert_to_logged(true)).open(&unlogged);
    assert!(is_read_only(r.map(|_| ())));
    assert_eq!(snapshot(dir.path()), before, "a refused open changed the files");

    for logging in [None, Some(false)] {
        let mut b = Database::builder().read_only(true);
        if let Some(on) = logging {
            b = b.logging(on);
        }
        let db = b.open(&unlogged).unwrap();
        assert!(!db.is_logged(), "is_logged follows the file");
        assert_eq!(db.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        db.close().unwrap();
    }
    for logging in [true, false] {
        let db = Database::builder().read_only(true).logging(logging).open(&logged).unwrap();
        assert!(db.is_logged(), "is_logged follows the file, which has a log");
        assert_eq!(db.tree("other").unwrap().get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
        db.close().unwrap();
    }
    assert_eq!(snapshot(dir.path()), before, "read-only opens changed the files");
}

/// Every file's bytes under `dir` of `vfs`, read through it (a directory is what lists).
fn snapshot_on(vfs: &dyn Vfs, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for p in vfs.list(&d).unwrap() {
            if vfs.list(&p).is_ok() {
                stack.push(p);
            } else {
                let f = vfs.open(&p, OpenMode::EXISTING).unwrap();
                let mut bytes = vec![0u8; usize::try_from(f.len().unwrap()).unwrap()];
                f.read_exact_at(&mut bytes, 0).unwrap();
                out.insert(p.display().to_string(), bytes);
            }
        }
    }
    out
}

/// The calls of a `FaultFs` that change a file or a name, or make either durable.
const CHANGES: [Op; 6] = [Op::Write, Op::Sync, Op::SetLen, Op::Remove, Op::Rename, Op::SyncDir];

/// R27 on the file system `LabOptions::vfs` gives: a database made on a `FaultFs` or a
/// `MemFs`, logged or not, opens read-only through it in every buffer mode, with a pool small
/// enough to evict, shows every committed record, refuses changes, shares the file with a
/// second read-only open, and writes, syncs, truncates, removes and renames nothing there. A
/// backup of it is written on the same file system.
#[test]
fn r27_a_read_only_open_reads_through_the_databases_vfs_and_writes_nothing() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for logged in [true, false] {
            for on_faults in [true, false] {
                let context = format!("{mode:?}, logged {logged}, FaultFs {on_faults}");
                let faults = common::new_fs();
                let vfs: Arc<dyn Vfs> = if on_faults {
                    Arc::new(faults.clone())
                } else {
                    let mem = MemFs::new();
                    mem.create_dir_all(Path::new("/crash")).unwrap();
                    Arc::new(mem)
                };
                let path = common::db_path();
                let frames = if mode == PoolMode::MainMemory { 2048 } else { 16 };
                let builder = || common::small_on(Arc::clone(&vfs), logged, frames).mode(mode);
                let db = builder().create(&path).unwrap();
                let t = db.create_tree("t").unwrap();
                let mut oracle = Records::new();
                for i in 0..600u16 {
                    let (k, v) = (common::key(i), common::value(i, 1));
                    t.insert(&k, &v).unwrap();
                    oracle.insert(k, v);
                }
                for i in (0..600u16).step_by(3) {
                    t.delete(&common::key(i)).unwrap();
                    oracle.remove(&common::key(i));
                }
                db.create_tree("other").unwrap().insert(b"x", b"y").unwrap();
                db.close().unwrap();
                let before = snapshot_on(&*vfs, Path::new("/crash"));
                let changes_before: Vec<u64> = CHANGES.iter().map(|&op| faults.calls(op, None)).collect();

                let ro = builder().read_only(true).open(&path).unwrap_or_else(|e| panic!("{context}: {e}"));
                let second = builder().read_only(true).open(&path).unwrap();
                assert_eq!(ro.is_logged(), logged, "{context}");
                let t = ro.tree("t").unwrap();
                let got: Records = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
                assert!(got == oracle, "{context}: {} records, {} committed", got.len(), oracle.len());
                assert_eq!(second.tree("other").unwrap().get(b"x").unwrap().as_deref(), Some(&b"y"[..]));
                assert!(matches!(t.insert(b"new", b"v"), Err(TreeError::ReadOnly)), "{context}");
                assert!(is_read_only(ro.create_tree("new")), "{context}");
                assert!(is_read_only(ro.checkpoint()), "{context}");
                second.close().unwrap();
                ro.close().unwrap();
                if on_faults {
                    let changes: Vec<u64> = CHANGES.iter().map(|&op| faults.calls(op, None)).collect();
                    assert_eq!(changes, changes_before, "{context}: {CHANGES:?} through the Vfs");
                }
                assert!(snapshot_on(&*vfs, Path::new("/crash")) == before, "{context}: the files changed");

                // A backup of a read-only open goes to the database's own file system.
                let ro = builder().read_only(true).open(&path).unwrap();
                let copy = Path::new("/crash/copy.swz");
                ro.backup_to(copy).unwrap_or_else(|e| panic!("{context}: backup: {e}"));
                ro.close().unwrap();
                let reopened = builder().open(copy).unwrap();
                let got: Records =
                    reopened.tree("t").unwrap().range(Unbounded, Unbounded).map(Result::unwrap).collect();
                assert!(got == oracle, "{context}: the backup's records");
                reopened.close().unwrap();
            }
        }
    }
}

/// Settings that contradict each other are refused by a read-only open of a logged file as by
/// any open (`Builder::restart_mode`, `LabOptions::cleaner`, `write_elision`,
/// `lazy_split_images`: `LogError::BadConfig`), before anything is read beyond page 0; they
/// were ignored. Refused, the file still opens read-only with sound settings.
#[test]
fn r27_a_read_only_open_refuses_contradictory_settings_as_every_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    make(&path);
    let before = snapshot(dir.path());
    let b = || Database::builder().read_only(true);
    let cases = [
        ("restart_mode(Instant) without log_archive", b().restart_mode(RestartMode::Instant), "log_archive"),
        ("Cleaner::Decoupled without log_archive", b().lab(|l| l.cleaner(Cleaner::Decoupled)), "log_archive"),
        (
            "write elision without the decoupled cleaner",
            b().lab(|l| l.write_elision(true)),
            "decoupled cleaner",
        ),
        (
            "lazy split images with log_archive",
            b().log_archive(true).lab(|l| l.lazy_split_images(true)),
            "lazy split images",
        ),
    ];
    for (name, builder, words) in cases {
        let rw = builder.clone().read_only(false).open(&path).map(|_| ());
        assert!(
            matches!(&rw, Err(Error::Log(LogError::BadConfig { reason })) if reason.contains(words)),
            "{name}: read-write {rw:?}"
        );
        let ro = builder.open(&path).map(|_| ());
        assert!(
            matches!(&ro, Err(Error::Log(LogError::BadConfig { reason })) if reason.contains(words)),
            "{name}: read-only {ro:?}"
        );
    }
    assert_eq!(snapshot(dir.path()), before, "a refused open changed the files");
    b().open(&path).unwrap().close().unwrap();
}

/// A database that keeps a log archive keeps it, asked for or not (R17): a read-write open
/// accepts instant restart and the decoupled cleaner without `log_archive(true)` there, and so
/// does a read-only open (R27), which refused both as settings without the archive. Settings
/// that contradict the archive (lazy split images) are refused by both alike.
#[test]
fn r27_a_read_only_open_of_an_archived_database_takes_its_settings_as_a_read_write_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().page_size(4096).log_archive(true).create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..200u32 {
        t.insert(&i.to_be_bytes(), &[3u8; 40]).unwrap();
    }
    drop(t);
    db.checkpoint().unwrap();
    db.close().unwrap();
    let b = || Database::builder().page_size(4096);
    let accepted = [
        ("restart_mode(Instant)", b().restart_mode(RestartMode::Instant)),
        ("Cleaner::Decoupled", b().lab(|l| l.cleaner(Cleaner::Decoupled))),
    ];
    for (name, builder) in accepted {
        builder.clone().open(&path).unwrap_or_else(|e| panic!("{name}: read-write: {e}")).close().unwrap();
        let before = snapshot(dir.path());
        let ro = builder.read_only(true).open(&path).unwrap_or_else(|e| panic!("{name}: read-only: {e}"));
        assert_eq!(ro.tree("t").unwrap().len().unwrap(), 200, "{name}");
        ro.close().unwrap();
        assert_eq!(snapshot(dir.path()), before, "{name}: the read-only open changed the files");
    }
    let lazy = b().lab(|l| l.lazy_split_images(true));
    for read_only in [false, true] {
        let r = lazy.clone().read_only(read_only).open(&path).map(|_| ());
        assert!(
            matches!(&r, Err(Error::Log(LogError::BadConfig { reason })) if reason.contains("lazy split images")),
            "read-only {read_only}: {r:?}"
        );
    }
}

/// R27 after a crash (`FaultFs::crash`, unsynced writes dropped, kept or torn), in every buffer
/// mode, logged (with and without the log archive) or not: the read-only open is refused with
/// `NeedsRestart` (logged) or `Unclean` (unlogged) and changes nothing through the `Vfs`; once
/// a read-write open has restarted and closed a logged one, it opens read-only with every
/// committed record.
#[test]
fn r27_after_a_crash_a_read_only_open_is_refused_without_a_write() {
    let kills = [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Torn { seed: 3 }];
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for (logged, archive) in [(false, false), (true, false), (true, true)] {
            for how in kills {
                let context = format!("{mode:?}, logged {logged}, archive {archive}, {how:?}");
                let fs = common::new_fs();
                let frames = if mode == PoolMode::MainMemory { 2048 } else { 16 };
                let builder = || {
                    let b = common::small_on(Arc::new(fs.clone()), logged, frames).mode(mode);
                    if logged {
                        b.log_archive(archive)
                    } else {
                        b
                    }
                };
                let mut oracle = Records::new();
                let mut write = |db: &Database, tag: u8| {
                    let t = db.tree_or_create("t").unwrap();
                    for i in 0..300u16 {
                        t.upsert(&common::key(i), &common::value(i, tag)).unwrap();
                        oracle.insert(common::key(i), common::value(i, tag));
                    }
                };
                let db = builder().create(common::db_path()).unwrap();
                write(&db, 1);
                db.close().unwrap();
                let db = builder().open(common::db_path()).unwrap();
                write(&db, 2);
                if !logged {
                    // Pages in the file since the open: page 0 says unclean (buffer F11).
                    db.flush().unwrap();
                }
                // A kill or power loss (io README IO10): the dead instance's log flusher, still
                // running until the drop stops it, cannot create a spare segment in the crashed
                // state — nor later, counted as a write of the read-only open below.
                fs.power_off(how);
                drop(db);
                fs.power_on();

                let before = snapshot_on(&fs, Path::new("/crash"));
                let changes: Vec<u64> = CHANGES.iter().map(|&op| fs.calls(op, None)).collect();
                let r = builder().read_only(true).open(common::db_path()).map(|_| ());
                if logged {
                    assert!(matches!(r, Err(Error::NeedsRestart(_))), "{context}: {r:?}");
                } else {
                    assert!(matches!(r, Err(Error::Unclean(_))), "{context}: {r:?}");
                }
                let after: Vec<u64> = CHANGES.iter().map(|&op| fs.calls(op, None)).collect();
                assert_eq!(after, changes, "{context}: {CHANGES:?} through the Vfs");
                assert!(snapshot_on(&fs, Path::new("/crash")) == before, "{context}: the files changed");
                if !logged {
                    continue;
                }
                builder().open(common::db_path()).unwrap().close().unwrap();
                let ro = builder().read_only(true).open(common::db_path()).unwrap();
                let got: Records =
                    ro.tree("t").unwrap().range(Unbounded, Unbounded).map(Result::unwrap).collect();
                assert!(got == oracle, "{context}: {} records, {} committed", got.len(), oracle.len());
                ro.close().unwrap();
            }
        }
    }
}

/// R27 and `Builder::read_only`'s rustdoc: `direct_io(true)` is ignored by a read-only open,
/// which reads the file through the page cache in every buffer mode and shows every record,
/// where the setting is documented as ignored rather than checked.
#[test]
fn r27_a_read_only_open_ignores_direct_io() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("direct.swz");
    let oracle = make(&path);
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        let db = Database::builder().mode(mode).direct_io(true).read_only(true).open(&path).unwrap();
        let got: Records = db.tree("t").unwrap().range(Unbounded, Unbounded).map(Result::unwrap).collect();
        assert_eq!(got, oracle, "{mode:?}");
        db.close().unwrap();
    }
}

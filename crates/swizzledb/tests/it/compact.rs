//! `Builder::compact` (RECOVERY.md R28): after deletes and a dropped tree the file shrinks to
//! what its records need, every record stays, the database opens as before; a compaction that
//! a crash stopped after its copy was complete is finished by the next open; an open database
//! is not compacted.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::{Path, PathBuf};

use swizzledb::{Database, Error};

type Contents = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

fn contents(path: &Path, logged: bool) -> Contents {
    let db = Database::builder().logging(logged).open(path).unwrap();
    let all = db
        .tree_names()
        .into_iter()
        .map(|n| {
            let t = db.tree(&n).unwrap();
            (n, t.range(Unbounded, Unbounded).map(Result::unwrap).collect())
        })
        .collect();
    db.close().unwrap();
    all
}

/// 40,000 records in two trees, then nine in ten deleted from one and the other dropped.
fn make(path: &Path, logged: bool) {
    let db = Database::builder().logging(logged).create(path).unwrap();
    let keep = db.create_tree("keep").unwrap();
    let gone = db.create_tree("gone").unwrap();
    for chunk in (0..20_000u32).collect::<Vec<_>>().chunks(5000) {
        db.transact(|tx| {
            for &i in chunk {
                tx.insert(&keep, &i.to_be_bytes(), &[3u8; 200])?;
                tx.insert(&gone, &i.to_be_bytes(), &[4u8; 200])?;
            }
            Ok(())
        })
        .unwrap();
    }
    db.transact(|tx| {
        for i in (0..20_000u32).filter(|i| i % 10 != 0) {
            tx.delete(&keep, &i.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    db.drop_tree("gone").unwrap();
    db.close().unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn r28_compaction_shrinks_the_file_and_keeps_every_record() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        make(&path, logged);
        let want = contents(&path, logged);
        let stats = Database::builder().logging(logged).compact(&path).unwrap();
        assert_eq!(stats.file_bytes_after, std::fs::metadata(&path).unwrap().len());
        assert!(
            stats.file_bytes_after * 4 < stats.file_bytes_before,
            "logged {logged}: {} bytes before, {} after",
            stats.file_bytes_before,
            stats.file_bytes_after
        );
        assert_eq!((stats.trees, stats.records), (1, 2000));
        assert_eq!(contents(&path, logged), want);
        let expected: Vec<&str> = if logged { vec!["db.swz", "db.swz.wal"] } else { vec!["db.swz"] };
        assert_eq!(names(dir.path()), expected, "logged {logged}: something was left behind");
        // It stays a working database.
        let db = Database::builder().logging(logged).open(&path).unwrap();
        db.tree("keep").unwrap().insert(b"after", b"1").unwrap();
        db.close().unwrap();
    }
}

#[test]
fn r28_an_open_database_is_not_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    make(&path, true);
    let db = Database::builder().open(&path).unwrap();
    assert!(matches!(Database::builder().compact(&path), Err(Error::AlreadyOpen(_))));
    db.close().unwrap();
    assert_eq!(names(dir.path()), ["db.swz", "db.swz.wal"]);
}

/// The state a crash leaves right after the marker is written (the copy complete, nothing
/// swapped): the next open finishes the swap and reads the copy.
#[test]
fn r28_the_next_open_finishes_a_compaction_a_crash_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    make(&path, true);
    let db = Database::builder().open(&path).unwrap();
    db.backup_to(dir.path().join(".db.swz.backup-1-2")).unwrap();
    // A change the copy does not have: the copy, once swapped in, is what the database holds.
    db.tree("keep").unwrap().insert(b"not-in-copy", b"x").unwrap();
    db.close().unwrap();
    std::fs::write(dir.path().join("db.swz.compact"), ".db.swz.backup-1-2").unwrap();
    assert!(matches!(Database::builder().read_only(true).open(&path), Err(Error::NeedsRestart(_))));
    let db = Database::builder().open(&path).unwrap();
    let keep = db.tree("keep").unwrap();
    assert_eq!(keep.len().unwrap(), 2000);
    assert_eq!(keep.get(b"not-in-copy").unwrap(), None);
    db.close().unwrap();
    assert_eq!(names(dir.path()), ["db.swz", "db.swz.wal"]);
}

/// R28: a marker that names no copy (left empty by a crash between its creation and its
/// write, when compactions wrote it in place) marks no commit point: the next open removes it
/// and opens the database as it was, logged or not. Such a marker used to make every open fail
/// with an I/O error on the directory, which the empty name led to.
#[test]
fn r28_an_empty_marker_is_no_commit_point() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        make(&path, logged);
        let before = contents(&path, logged);
        std::fs::write(dir.path().join("db.swz.compact"), "").unwrap();
        assert_eq!(contents(&path, logged), before, "logged {logged}");
        let mut left = vec!["db.swz".to_owned()];
        if logged {
            left.push("db.swz.wal".to_owned());
        }
        assert_eq!(names(dir.path()), left, "logged {logged}: the marker stayed");
        Database::builder().logging(logged).compact(&path).unwrap();
        assert_eq!(contents(&path, logged), before, "logged {logged}: after a compaction");
        assert_eq!(names(dir.path()), left, "logged {logged}: files left by the compaction");
    }
}

/// A compaction killed while it wrote its marker leaves `<path>.compact-new`, which marks no
/// commit point; the next compaction removes it (it holds the lock under which markers are
/// written).
#[test]
fn r28_a_marker_left_half_written_goes_with_the_next_compaction() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        make(&path, logged);
        let before = contents(&path, logged);
        std::fs::write(dir.path().join("db.swz.compact-new"), "half").unwrap();
        assert_eq!(contents(&path, logged), before, "logged {logged}");
        Database::builder().logging(logged).compact(&path).unwrap();
        assert_eq!(contents(&path, logged), before, "logged {logged}: after a compaction");
        let mut left = vec!["db.swz".to_owned()];
        if logged {
            left.push("db.swz.wal".to_owned());
        }
        assert_eq!(names(dir.path()), left, "logged {logged}: files left by the compaction");
    }
}

/// A log's segment size is fixed when it is created (R14), and an open checks the log bound
/// against it. The compacted database and a backup (R26), from a read-write or a read-only
/// open, keep the source's small segments, so the settings that opened the source, a bound of
/// four such segments, open them.
#[test]
fn r26_r28_a_copy_keeps_the_log_segment_size_its_settings_need() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small-log.swz");
    let settings = || Database::builder().log_segment_bytes(64 << 10).max_log_bytes(1 << 20);
    let db = settings().create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..2000u32 {
        t.insert(&i.to_be_bytes(), &[6u8; 100]).unwrap();
    }
    let copy = dir.path().join("copy.swz");
    db.backup_to(&copy).unwrap();
    db.close().unwrap();
    let ro = settings().read_only(true).open(&path).unwrap();
    let ro_copy = dir.path().join("ro-copy.swz");
    ro.backup_to(&ro_copy).unwrap();
    ro.close().unwrap();
    settings().compact(&path).unwrap();
    for p in [&path, &copy, &ro_copy] {
        let db = settings().open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(db.tree("t").unwrap().len().unwrap(), 2000, "{}", p.display());
        db.close().unwrap();
    }
}

/// Temporary names stay within the file system's 255 bytes a name (R26, R28): a database with
/// the longest name it takes — a logged one's log directory, `<name>.wal`, fills the 255
/// bytes; an unlogged one's file name does — compacts, and backs up to a target named as
/// long. Compaction nested its copy's names (`..<name>.backup-….backup-…`) and failed with
/// ENAMETOOLONG from names of 200 bytes, a backup from about 230.
#[test]
fn r26_r28_the_longest_names_compact_and_back_up() {
    for (logged, len) in [(true, 251), (false, 255)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a".repeat(len));
        let db = Database::builder().logging(logged).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..300u32 {
            t.insert(&i.to_be_bytes(), &[5u8; 100]).unwrap();
        }
        for i in (0..300u32).filter(|i| i % 3 != 0) {
            t.delete(&i.to_be_bytes()).unwrap();
        }
        db.close().unwrap();
        let want = contents(&path, logged);
        let stats = Database::builder()
            .logging(logged)
            .compact(&path)
            .unwrap_or_else(|e| panic!("logged {logged}: compaction of a {len}-byte name: {e}"));
        assert_eq!((stats.trees, stats.records), (1, 100));
        assert_eq!(contents(&path, logged), want);
        let target = dir.path().join("b".repeat(len));
        let db = Database::builder().logging(logged).open(&path).unwrap();
        db.backup_to(&target).unwrap_or_else(|e| panic!("logged {logged}: backup to a {len}-byte name: {e}"));
        db.close().unwrap();
        assert_eq!(contents(&target, logged), want);
        let mut expected = vec!["a".repeat(len), "b".repeat(len)];
        if logged {
            expected.insert(1, format!("{}.wal", "a".repeat(len)));
            expected.push(format!("{}.wal", "b".repeat(len)));
        }
        assert_eq!(names(dir.path()), expected, "logged {logged}: something was left behind");
    }
}

/// R28 with R17: the log archive goes with the old log directory (its runs are histories of
/// the old file's pages); the compacted database keeps every record, archives nothing when
/// opened without the option, and starts a new archive when opened with it.
#[test]
fn r17_r28_a_compacted_database_starts_a_new_archive_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archived.swz");
    let archived = || Database::builder().log_archive(true);
    let db = archived().create(&path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..3000u32 {
        t.insert(&i.to_be_bytes(), &[5u8; 100]).unwrap();
    }
    db.archive_log().unwrap();
    assert!(!db.archive_runs().unwrap().is_empty(), "the source keeps an archive");
    drop(t);
    db.close().unwrap();
    let before = contents(&path, true);
    archived().compact(&path).unwrap();
    let db = Database::builder().open(&path).unwrap();
    assert!(db.archive_runs().is_none(), "an archive outlived the compaction");
    db.close().unwrap();
    assert_eq!(contents(&path, true), before);
    let db = archived().open(&path).unwrap();
    db.tree("t").unwrap().upsert(b"after", b"1").unwrap();
    db.archive_log().unwrap();
    assert!(!db.archive_runs().unwrap().is_empty(), "no new archive was started");
    db.close().unwrap();
}

/// R28: a compaction removes the copies that compactions killed before their commit point
/// left beside the database (file and log directory), and only those: a copy whose process
/// still runs, and another database's copy, stay. A kill test left thousands of them.
#[cfg(target_os = "linux")]
#[test]
fn r28_a_compaction_removes_the_copies_killed_compactions_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    make(&path, true);
    let before = contents(&path, true);
    // No process has this number (Linux's largest is 4,194,304).
    let dead = ".db.swz.backup-4294967-1";
    std::fs::write(dir.path().join(dead), b"a copy cut short").unwrap();
    std::fs::create_dir(dir.path().join(format!("{dead}.wal"))).unwrap();
    let alive = format!(".db.swz.backup-{}-2", std::process::id());
    std::fs::write(dir.path().join(&alive), b"a copy being written").unwrap();
    let other = ".other.swz.backup-4294967-3";
    std::fs::write(dir.path().join(other), b"another database's").unwrap();
    Database::builder().compact(&path).unwrap();
    let mut left = vec![alive, other.to_owned(), "db.swz".to_owned(), "db.swz.wal".to_owned()];
    left.sort();
    assert_eq!(names(dir.path()), left);
    assert_eq!(contents(&path, true), before);
}

/// R28: a compaction killed while it writes its copy leaves only names the next compaction
/// removes. The copy used to be written by `backup_to`, under a temporary name of the
/// compaction's temporary name (`..db.swz.backup-<pid>-<n>.backup-<pid>-<m>`), which no
/// compaction recognized: every kill before the commit point left a copy for good. The test
/// runs a compaction in a child process (this test, run again) and kills it as soon as a
/// temporary name appears beside the database.
#[test]
fn r28_a_compaction_killed_while_it_copies_leaves_nothing_the_next_keeps() {
    const CHILD: &str = "SWIZZLEDB_TEST_COMPACT_CHILD";
    if let Some(path) = std::env::var_os(CHILD) {
        Database::builder().compact(path).unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let db = Database::builder().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    for chunk in (0..40_000u32).collect::<Vec<_>>().chunks(5000) {
        db.transact(|tx| {
            for &i in chunk {
                tx.insert(&tree, &i.to_be_bytes(), &[7u8; 200])?;
            }
            Ok(())
        })
        .unwrap();
    }
    db.close().unwrap();
    let before = contents(&path, true);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "compact::r28_a_compaction_killed_while_it_copies_leaves_nothing_the_next_keeps"])
        .env(CHILD, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !names(dir.path()).iter().any(|n| n.contains(".backup-")) {
        assert!(child.try_wait().unwrap().is_none(), "the compaction ended before its copy was seen");
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "no copy appeared");
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(names(dir.path()).len() > 2, "the kill left the copy: {:?}", names(dir.path()));
    Database::builder().compact(&path).unwrap();
    assert_eq!(names(dir.path()), ["db.swz", "db.swz.wal"], "a killed compaction's copy was kept");
    assert_eq!(contents(&path, true), before);
}

/// The trees and records of the database `db`.
fn all_of(db: &Database) -> Contents {
    db.tree_names()
        .into_iter()
        .map(|n| {
            let t = db.tree(&n).unwrap();
            (n, t.range(Unbounded, Unbounded).map(Result::unwrap).collect())
        })
        .collect()
}

/// R28: a compaction killed at any file-system call (unsynced writes kept, lost or torn),
/// logged and not, leaves a database that the next open opens with exactly the records it held
/// (finishing the swap if the kill came after the commit point), and a compaction after that
/// succeeds and keeps them too. Compaction went around the builder's file system
/// (`LabOptions::vfs`): its copy, marker and swap were on the operating system's, so a database
/// on another could not be compacted at all (an I/O error on the marker's directory).
#[test]
fn r28_a_compaction_killed_at_any_call_keeps_every_record() {
    use std::sync::Arc;
    use swizzledb_io::{CrashMode, Vfs};
    let path = Path::new("/d/db");
    for logged in [true, false] {
        let on = |vfs: Arc<dyn Vfs>| crate::common::small_on(vfs, logged, 32);
        let mut want = Contents::new();
        want.insert("keep".into(), (0..40u32).map(|i| (i.to_be_bytes().to_vec(), vec![3; 60])).collect());
        // Kept or lost, not torn as well: the test stays short.
        let modes = [CrashMode::KeepUnsynced, CrashMode::DropUnsynced];
        let kills = crate::common::kill_at_every_call(
            &modes,
            |fs| {
                fs.create_dir_all(Path::new("/d")).unwrap();
                keep_and_gone(on(Arc::new(fs.clone())), path);
            },
            |vfs| on(vfs).compact(path).map(drop),
            |fs, context| {
                let context = format!("logged: {logged}, {context}");
                let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
                let db = on(Arc::clone(&vfs)).open(path).unwrap_or_else(|e| panic!("{context}: open: {e}"));
                assert!(all_of(&db) == want, "{context}: the records after the open");
                db.close().unwrap();
                assert!(!fs.exists(Path::new("/d/db.compact")), "{context}: the open left the marker");
                on(Arc::clone(&vfs))
                    .compact(path)
                    .unwrap_or_else(|e| panic!("{context}: the next compaction: {e}"));
                let db = on(vfs).open(path).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
                assert!(all_of(&db) == want, "{context}: the records after the next compaction");
                db.close().unwrap();
            },
        );
        assert!(kills > 30, "logged: {logged}: {kills} calls");
    }
}

/// R28: a compaction that an I/O error (`EIO` at any kind of call that changes files, `ENOSPC`
/// at a write or length change) stops at any of its calls, logged and not, either succeeds or
/// returns the error with the database as it was, or with a swap past its commit point that the
/// next open finishes: the next open, then or after a power loss, holds exactly the records it
/// held, leaves no marker, and a compaction after it succeeds and keeps them too. Without the
/// power loss, nothing the failed compaction wrote is left beside the database.
#[test]
fn r28_a_compaction_failing_at_any_call_keeps_every_record() {
    use std::sync::Arc;
    use swizzledb_io::{CrashMode, Vfs};
    let (dir, path) = (Path::new("/d"), Path::new("/d/db"));
    for logged in [true, false] {
        for crash in [false, true] {
            let on = |vfs: Arc<dyn Vfs>| crate::common::small_on(vfs, logged, 32);
            let mut want = Contents::new();
            want.insert("keep".into(), (0..40u32).map(|i| (i.to_be_bytes().to_vec(), vec![3; 60])).collect());
            let left: Vec<PathBuf> =
                if logged { vec![path.into(), swizzledb::wal_dir(path)] } else { vec![path.into()] };
            let failures = crate::common::fail_at_every_call(
                &crate::common::FAULTS,
                |fs| {
                    fs.create_dir_all(dir).unwrap();
                    keep_and_gone(on(Arc::new(fs.clone())), path);
                },
                |vfs| on(vfs).compact(path).map(drop),
                |fs, failed, context| {
                    let context = format!("logged: {logged}, crash: {crash}, {context} ({failed:?})");
                    if crash {
                        fs.crash(CrashMode::DropUnsynced);
                    }
                    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
                    let db =
                        on(Arc::clone(&vfs)).open(path).unwrap_or_else(|e| panic!("{context}: open: {e}"));
                    assert!(all_of(&db) == want, "{context}: the records after the open");
                    db.tree("keep").unwrap().verify().unwrap_or_else(|e| panic!("{context}: verify: {e}"));
                    db.close().unwrap();
                    assert!(!fs.exists(Path::new("/d/db.compact")), "{context}: the open left the marker");
                    if !crash {
                        let mut names = fs.list(dir).unwrap();
                        names.sort();
                        assert_eq!(names, left, "{context}: files the failed compaction left");
                    }
                    on(Arc::clone(&vfs))
                        .compact(path)
                        .unwrap_or_else(|e| panic!("{context}: the next compaction: {e}"));
                    let db = on(vfs).open(path).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
                    assert!(all_of(&db) == want, "{context}: the records after the next compaction");
                    db.close().unwrap();
                },
            );
            assert!(failures > 30, "logged: {logged}: {failures} failures");
        }
    }
}

/// A `Vfs` over a `FaultFs` that holds its first open of `held` between the open and its
/// return, until the test lets it go: the moment between an opener's open of the database file
/// and its lock, in which a whole compaction can run.
#[derive(Debug, Clone)]
struct HoldFirstOpen {
    fs: swizzledb_io::FaultFs,
    held: PathBuf,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    opened: std::sync::Arc<std::sync::Barrier>,
    go: std::sync::Arc<std::sync::Barrier>,
}

impl HoldFirstOpen {
    fn hold(&self, path: &Path) {
        if path == self.held && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.opened.wait();
            self.go.wait();
        }
    }
}

impl swizzledb_io::Vfs for HoldFirstOpen {
    fn open(
        &self,
        path: &Path,
        mode: swizzledb_io::OpenMode,
    ) -> std::io::Result<std::sync::Arc<dyn swizzledb_io::VfsFile>> {
        let f = self.fs.open(path, mode)?;
        self.hold(path);
        Ok(f)
    }
    fn open_read_only(&self, path: &Path) -> std::io::Result<std::sync::Arc<dyn swizzledb_io::VfsFile>> {
        let f = self.fs.open_read_only(path)?;
        self.hold(path);
        Ok(f)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.fs.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.fs.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.fs.rename(from, to)
    }
    fn rename_no_replace(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.fs.rename_no_replace(from, to)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.fs.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.fs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.fs.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
    fn file_id(&self, path: &Path) -> std::io::Result<Option<swizzledb_io::FileId>> {
        self.fs.file_id(path)
    }
}

/// R13 against R28: an open whose open of the file came before a whole compaction, and whose
/// lock after it, locked the file the compaction replaced, and left the new one unlocked: a
/// second read-write open then succeeded beside it, two writers on one unlogged file (a
/// read-only open likewise held no lock on the file it read). The lock is now checked against
/// the file the name leads to (io IO16), and the open made again: the second opener is refused.
#[test]
fn r13_an_open_racing_a_compaction_locks_the_file_it_opens() {
    use std::sync::Arc;
    use swizzledb_io::{FaultFs, Vfs};
    let path = Path::new("/d/db");
    for (logged, read_only) in [(false, false), (false, true), (true, false), (true, true)] {
        let context = format!("logged {logged}, read-only {read_only}");
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let on = move |vfs: Arc<dyn Vfs>| crate::common::small_on(vfs, logged, 32);
        let db = on(Arc::new(fs.clone())).create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..300u32 {
            t.insert(&i.to_be_bytes(), &[7; 50]).unwrap();
        }
        for i in 0..250u32 {
            t.delete(&i.to_be_bytes()).unwrap();
        }
        drop(t);
        db.close().unwrap();
        let hold = HoldFirstOpen {
            fs: fs.clone(),
            held: path.to_path_buf(),
            armed: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            opened: Arc::new(std::sync::Barrier::new(2)),
            go: Arc::new(std::sync::Barrier::new(2)),
        };
        let racer = {
            let hold = hold.clone();
            std::thread::spawn(move || on(Arc::new(hold)).read_only(read_only).open(path))
        };
        hold.opened.wait();
        // The racer has opened the file, not locked it: a whole compaction runs now.
        on(Arc::new(fs.clone())).compact(path).unwrap();
        hold.go.wait();
        let first = racer.join().unwrap().unwrap_or_else(|e| panic!("{context}: the racer: {e}"));
        let second = on(Arc::new(fs.clone())).open(path);
        assert!(
            matches!(second, Err(Error::AlreadyOpen(_))),
            "{context}: a read-write open beside it: {:?}",
            second.map(|_| ())
        );
        let t = first.tree("t").unwrap();
        assert_eq!(t.len().unwrap(), 50, "{context}");
        drop(t);
        first.close().unwrap();
        on(Arc::new(fs.clone()))
            .open(path)
            .unwrap_or_else(|e| panic!("{context}: reopen: {e}"))
            .close()
            .unwrap();
    }
}

/// The database the R28 kill and fault tests compact (its directory made first): tree `keep` with 40 of
/// its 120 records left, tree `gone` dropped; closed.
fn keep_and_gone(builder: swizzledb::Builder, path: &Path) {
    let db = builder.create(path).unwrap();
    let (keep, gone) = (db.create_tree("keep").unwrap(), db.create_tree("gone").unwrap());
    for i in 0..120u32 {
        keep.insert(&i.to_be_bytes(), &[3; 60]).unwrap();
        gone.insert(&i.to_be_bytes(), &[4; 60]).unwrap();
    }
    for i in 40..120u32 {
        keep.delete(&i.to_be_bytes()).unwrap();
    }
    drop((keep, gone));
    db.drop_tree("gone").unwrap();
    db.close().unwrap();
}

/// R28: a database reached through symbolic links (its file and its log directory links to
/// another directory's) compacts, and its path then holds the compacted database with every
/// record; what the links led to stays as it was (the old database, whole). The swap's removal
/// of the replaced log directory followed the link: it emptied the log directory the link led
/// to, then failed on the link itself, so the compaction returned an I/O error after its commit
/// point and every open after it failed the same way, while the old file had lost its log.
#[test]
fn r28_a_database_reached_through_symbolic_links_compacts_and_keeps_what_they_lead_to() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    let real = dir.path().join("real/db.swz");
    let db = Database::builder().create(&real).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..3000u32 {
        t.insert(&i.to_be_bytes(), &[1u8; 100]).unwrap();
    }
    for i in 0..2900u32 {
        t.delete(&i.to_be_bytes()).unwrap();
    }
    drop(t);
    db.close().unwrap();
    let want = contents(&real, true);
    let link = dir.path().join("link.swz");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::os::unix::fs::symlink(swizzledb::wal_dir(&real), swizzledb::wal_dir(&link)).unwrap();
    let stats = Database::builder().compact(&link).unwrap();
    assert!(stats.file_bytes_after < stats.file_bytes_before, "{stats:?}");
    assert_eq!(contents(&link, true), want, "the compacted database");
    assert_eq!(contents(&real, true), want, "the database the links led to");
    assert_eq!(names(dir.path()), ["link.swz", "link.swz.wal", "real"]);
}

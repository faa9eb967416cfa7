//! Durable by default (RECOVERY.md R12–R15): what a user who takes the defaults, forgets a
//! setting or misuses a handle gets — through the public API only.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{wal_dir, Builder, Cleaner, CommitMode, CommitWait, Database, Error, PoolMode, TreeError};
use swizzledb_io::{CrashMode, FaultFs, Op, OpenMode, Vfs};

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// R12: the default database logs, so a crash right after the tree's own writes returned keeps
/// every one of them, whatever the next opener's builder says about logging.
#[test]
fn r12_default_tree_writes_survive_a_crash_and_every_open_restarts() {
    for reopen_logging in [None, Some(false), Some(true)] {
        let fs = fault_fs();
        let path = Path::new("/d/db");
        let builder =
            Database::builder().page_size(4096).pool_bytes(32 * 4096).lab(|l| l.vfs(Arc::new(fs.clone())));
        let db = builder.clone().create(path).unwrap();
        assert!(db.is_logged(), "logging is on by default");
        let t = db.create_tree("t").unwrap();
        for i in 0..300 {
            t.upsert(&key(i), &[i as u8; 50]).unwrap();
        }
        for i in (0..300).step_by(3) {
            assert!(t.delete(&key(i)).unwrap());
        }
        let mut tx = db.begin();
        tx.put(&t, b"zz-uncommitted", b"x").unwrap();
        fs.crash(CrashMode::DropUnsynced);
        drop(tx);
        drop(t);
        drop(db);

        let reopen = match reopen_logging {
            None => builder.clone(),
            Some(on) => builder.clone().logging(on),
        };
        let db = reopen.open(path).unwrap();
        assert!(db.is_logged(), "the file decides: {reopen_logging:?}");
        assert!(db.restart_stats().analyzed > 0, "open went through restart");
        let t = db.tree("t").unwrap();
        t.verify().unwrap();
        for i in 0..300 {
            let want = (i % 3 != 0).then(|| vec![i as u8; 50]);
            assert_eq!(t.get(&key(i)).unwrap(), want, "key {i} after reopening with {reopen_logging:?}");
        }
        assert_eq!(t.get(b"zz-uncommitted").unwrap(), None);
        db.close().unwrap();
    }
}

/// R23: a tree is durable once `create_tree` returns, in either commit mode, in every buffer
/// mode: a crash before any commit keeps it, empty.
#[test]
fn r23_a_created_tree_survives_a_crash_right_after() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for commit in [CommitMode::Sync, CommitMode::Async] {
            for crash in [CrashMode::DropUnsynced, CrashMode::Torn { seed: 7 }] {
                let fs = fault_fs();
                let path = Path::new("/d/db");
                let builder = Database::builder()
                    .mode(mode)
                    .commit_mode(commit)
                    .page_size(4096)
                    .pool_bytes(64 * 4096)
                    .lab(|l| l.vfs(Arc::new(fs.clone())));
                let db = builder.clone().create(path).unwrap();
                let t = db.create_tree("t").unwrap();
                fs.crash(crash);
                drop(t);
                drop(db);

                let db = builder.open(path).unwrap();
                let t = db.tree("t").unwrap_or_else(|e| panic!("{mode}, {commit:?}, {crash:?}: {e}"));
                t.verify().unwrap();
                assert!(t.is_empty().unwrap(), "{mode}, {commit:?}, {crash:?}");
                db.close().unwrap();
            }
        }
    }
}

/// R13: one opener at a time, in this process as in another; close and drop release the lock.
#[test]
fn r13_a_second_open_is_refused_until_the_first_ends() {
    let dir = tempfile::tempdir().unwrap();
    for logging in [true, false] {
        let path = dir.path().join(format!("db-{logging}"));
        let db = Database::builder().logging(logging).create(&path).unwrap();
        match Database::builder().open(&path) {
            Err(Error::AlreadyOpen(p)) => assert_eq!(p, path),
            other => panic!("a second open while the first is open: {other:?}"),
        }
        let t = db.create_tree("t").unwrap();
        t.insert(b"a", b"1").unwrap();
        db.close().unwrap();
        // The handle outlives the database, yet the file can be opened again.
        let db = Database::builder().open(&path).unwrap();
        assert_eq!(db.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(matches!(t.get(b"a"), Err(TreeError::Closed)));
        drop(db);
        let db = Database::builder().open(&path).unwrap();
        db.close().unwrap();
    }
}

/// R13 on the file systems in memory given through `LabOptions::vfs`: one opener as on the
/// operating system's (io README IO5). A second read-write open, or a read-only one, of a
/// database open on a `MemFs` or `FaultFs` went on; the two writers then shared the file, and
/// the first one's close failed on a log segment the second had made.
#[test]
fn r13_a_second_open_is_refused_on_the_file_systems_in_memory_too() {
    let faults = FaultFs::new();
    for vfs in [Arc::new(swizzledb_io::MemFs::new()) as Arc<dyn Vfs>, Arc::new(faults.clone())] {
        vfs.create_dir_all(Path::new("/m")).unwrap();
        for logging in [true, false] {
            let path = PathBuf::from(format!("/m/db-{logging}.swz"));
            let builder =
                || Database::builder().page_size(4096).logging(logging).lab(|l| l.vfs(Arc::clone(&vfs)));
            let db = builder().create(&path).unwrap();
            db.create_tree("t").unwrap().insert(b"a", b"1").unwrap();
            for second in [
                builder().open(&path),
                builder().read_only(true).open(&path),
                builder().open_or_create(&path),
            ] {
                match second {
                    Err(Error::AlreadyOpen(p)) => assert_eq!(p, path),
                    other => panic!("logging {logging}: a second open while the first is open: {other:?}"),
                }
            }
            db.close().unwrap();
            let reader = builder().read_only(true).open(&path).unwrap();
            let another = builder().read_only(true).open(&path).unwrap();
            assert!(
                matches!(builder().open(&path), Err(Error::AlreadyOpen(_))),
                "read-only opens keep a writer out"
            );
            drop((reader, another));
            let db = builder().open(&path).unwrap();
            assert_eq!(db.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
            db.close().unwrap();
        }
    }
    // A crash ends the crashed instance's lock, as a killed process's: the next open goes on.
    let vfs: Arc<dyn Vfs> = Arc::new(faults.clone());
    let path = Path::new("/m/crashed.swz");
    let db = Database::builder().lab(|l| l.vfs(Arc::clone(&vfs))).create(path).unwrap();
    db.create_tree("t").unwrap().insert(b"k", b"v").unwrap();
    faults.crash(CrashMode::DropUnsynced);
    let again = Database::builder().lab(|l| l.vfs(Arc::clone(&vfs))).open(path).unwrap();
    assert_eq!(again.tree("t").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    again.close().unwrap();
}

/// R13 (T15): every operation of a handle of a closed or dropped database is `Closed`; nothing
/// returns `Ok` and is lost.
#[test]
fn r13_handles_of_a_closed_or_dropped_database_refuse() {
    let dir = tempfile::tempdir().unwrap();
    for (logging, close) in [(true, true), (true, false), (false, true), (false, false)] {
        let path = dir.path().join(format!("db-{logging}-{close}"));
        let db = Database::builder().logging(logging).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..100 {
            t.insert(&key(i), b"v").unwrap();
        }
        let mut scan = t.range(Bound::Unbounded, Bound::Unbounded);
        assert!(scan.next().unwrap().is_ok());
        let clone = t.clone();
        if close {
            db.close().unwrap();
        } else {
            drop(db);
        }
        let closed = |r: Result<(), TreeError>| assert!(matches!(r, Err(TreeError::Closed)), "{r:?}");
        closed(clone.upsert(b"late", b"lost?").map(|_| ()));
        closed(clone.insert(b"late", b"lost?"));
        closed(clone.delete(&key(1)).map(|_| ()));
        closed(clone.get(&key(1)).map(|_| ()));
        closed(t.range(Bound::Unbounded, Bound::Unbounded).next().unwrap().map(|_| ()));
        closed(t.range_rev(Bound::Unbounded, Bound::Unbounded).next().unwrap().map(|_| ()));
        closed(scan.next().unwrap().map(|_| ()));
        assert!(scan.next().is_none(), "a closed scan ends after saying so");
        drop(scan);
        drop((t, clone));
        let db = Database::builder().open(&path).unwrap();
        let t = db.tree("t").unwrap();
        assert_eq!(t.get(b"late").unwrap(), None);
        assert_eq!(t.range(Bound::Unbounded, Bound::Unbounded).count(), 100);
        db.close().unwrap();
    }
}

/// R13 (T15, buffer B22): a database closed, or dropped, while other threads write through its
/// handles keeps every write that returned `Ok`, none that was refused, and a sound tree. The
/// pool's close used to flush while writes that had passed their check still ran: on an
/// unlogged database, whose file is all there is, a write acknowledged during the flush was
/// lost, and a split half written left a page never written in the tree (five rounds in ten).
#[test]
fn r13_a_close_under_writing_threads_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..12u64 {
        let logging = round % 3 == 2;
        let path = dir.path().join(format!("db-{round}"));
        let builder = Database::builder().logging(logging).page_size(4096).pool_bytes(128 * 4096);
        let db = builder.clone().commit_mode(CommitMode::Async).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let t = t.clone();
                std::thread::spawn(move || {
                    let (mut acked, mut refused) = (Vec::new(), Vec::new());
                    for i in 0.. {
                        let k = format!("w{w}/{i:08}").into_bytes();
                        let v = vec![i as u8; if i % 13 == 0 { 5000 } else { 60 }];
                        let r = match i % 3 {
                            0 => t.insert(&k, &v),
                            1 => t.upsert(&k, &v).map(|_| ()),
                            _ => t.compare_and_swap(&k, None, Some(&v)).map(|swapped| swapped.unwrap()),
                        };
                        match r {
                            Ok(()) => acked.push(k),
                            // `Closed` once the close began; any refused write changed nothing.
                            Err(_) => {
                                refused.push(k);
                                if refused.len() == 3 {
                                    return (acked, refused);
                                }
                            }
                        }
                    }
                    unreachable!()
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(15 + round * 7 % 40));
        if round % 2 == 0 {
            db.close().unwrap();
        } else {
            drop(db);
        }
        let (mut acked, mut refused) = (Vec::new(), Vec::new());
        for w in writers {
            let (a, r) = w.join().unwrap();
            acked.extend(a);
            refused.extend(r);
        }
        drop(t);
        let db = builder.open(&path).unwrap();
        let t = db.tree("t").unwrap();
        t.verify().unwrap_or_else(|e| panic!("round {round}: {e}"));
        let present: std::collections::BTreeSet<Vec<u8>> =
            t.range(Bound::Unbounded, Bound::Unbounded).map(|r| r.unwrap().0).collect();
        let lost = acked.iter().filter(|k| !present.contains(*k)).count();
        assert_eq!(
            lost,
            0,
            "round {round} (logging {logging}): acknowledged writes lost, of {}",
            acked.len()
        );
        assert!(refused.iter().all(|k| !present.contains(k)), "round {round}: a refused write is there");
        assert_eq!(present.len(), acked.len(), "round {round}: only acknowledged writes are there");
        db.close().unwrap();
    }
}

fn unlogged_with_writes(fs: &FaultFs, path: &Path) -> swizzledb::Builder {
    let builder = Database::builder()
        .logging(false)
        .page_size(4096)
        .pool_bytes(16 * 4096)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..2000 {
        t.upsert(&key(i), &[7; 40]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..500 {
        t.upsert(&key(i), &[8; 40]).unwrap();
    }
    fs.crash(CrashMode::KeepUnsynced);
    drop(t);
    drop(db);
    builder
}

/// R13, R14: `discard_unclean` checks the new database's settings before it removes the old
/// file. It removed the file, then the create refused a setting (a log bound below four of the
/// default segments, which an unlogged database's create checks too), and the open left no
/// database at all: every later open was `NotFound`. A kill harness (an unlogged database
/// killed while dirty, then reopened with `discard_unclean(true)` and the settings that opened
/// it) met it at its first discard in each run.
#[test]
fn r13_r14_a_discard_refused_by_a_setting_keeps_the_file() {
    let fs = fault_fs();
    let path = Path::new("/d/scratch");
    let builder = unlogged_with_writes(&fs, path);
    let before = fs.open(path, OpenMode::EXISTING).unwrap();
    let bytes = before.len().unwrap();
    drop(before);
    // Opens a clean unlogged database (no log to bound); the create refuses it.
    let refused = builder.clone().max_log_bytes(1 << 20);
    match refused.clone().discard_unclean(true).open(path) {
        Err(Error::Log(swizzledb::LogError::BadConfig { .. })) => {}
        other => panic!("a discard with a refused setting: {other:?}"),
    }
    assert_eq!(fs.open(path, OpenMode::EXISTING).unwrap().len().unwrap(), bytes, "the file is kept");
    assert!(matches!(builder.clone().open(path), Err(Error::Unclean(_))));
    let db = builder.discard_unclean(true).open(path).unwrap();
    assert!(db.tree_names().is_empty());
    db.close().unwrap();
}

/// R13: an unlogged database that was not closed cleanly is refused, naming the file, unless
/// the caller discards it; one closed cleanly, or only read since, opens.
#[test]
fn r13_unclean_unlogged_databases_are_refused_or_discarded() {
    let fs = fault_fs();
    let path = Path::new("/d/scratch");
    let builder = unlogged_with_writes(&fs, path);
    match builder.clone().open(path) {
        Err(e @ Error::Unclean(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("/d/scratch") && msg.contains("discard_unclean"), "{msg}");
        }
        other => panic!("an unclean unlogged database opened: {other:?}"),
    }
    let db = builder.clone().discard_unclean(true).open(path).unwrap();
    assert!(!db.is_logged());
    assert!(db.tree_names().is_empty(), "discarded: a new, empty database");
    db.create_tree("t").unwrap().insert(b"a", b"1").unwrap();
    db.close().unwrap();

    // Closed cleanly, then opened and only read, then crashed: still clean.
    let db = builder.clone().open(path).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.clone().open(path).unwrap();
    // One write, a crash before close: unclean.
    db.tree("t").unwrap().upsert(b"b", b"2").unwrap();
    db.flush().unwrap();
    fs.crash(CrashMode::KeepUnsynced);
    drop(db);
    assert!(matches!(builder.open(path), Err(Error::Unclean(_))));
}

/// R13, buffer F11: closing an unlogged database that was only read writes nothing, so a
/// process killed while it closes leaves the file clean. Such a close used to write page 0
/// without CLEAN, then the pages and the free-page chain, then CLEAN again; a kill in between
/// left a file that only `discard_unclean`, which empties it, would open (a compaction, which
/// closes its source before it copies it, met this in 17 of 300 kills).
#[test]
fn r13_closing_an_unlogged_database_that_was_only_read_writes_nothing() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        close_after_reads(mode);
    }
}

fn close_after_reads(mode: PoolMode) {
    let fs = fault_fs();
    let path = Path::new("/d/read");
    let frames = if mode == PoolMode::MainMemory { 4096 } else { 16 };
    let builder = Database::builder()
        .logging(false)
        .mode(mode)
        .page_size(4096)
        .pool_bytes(frames * 4096)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..2000 {
        t.upsert(&key(i), &[7; 40]).unwrap();
    }
    // Merged leaves and a dropped tree leave free pages: the chain must come out of the open
    // as it went in.
    for i in 0..1500 {
        t.delete(&key(i)).unwrap();
    }
    drop(t);
    let gone = db.create_tree("gone").unwrap();
    for i in 0..3000 {
        gone.upsert(&key(i), &[9; 40]).unwrap();
    }
    drop(gone);
    db.drop_tree("gone").unwrap();
    db.close().unwrap();
    let changes = |fs: &FaultFs| [Op::Write, Op::Sync, Op::SetLen].map(|op| fs.calls(op, Some("/d/read")));
    for round in 0..2 {
        let db = builder.clone().open(path).unwrap();
        let t = db.tree("t").unwrap();
        // More leaves than the pool's 16 frames: pages are evicted while it reads.
        assert_eq!(t.range(Bound::Unbounded, Bound::Unbounded).count(), 500);
        drop(t);
        let before = changes(&fs);
        db.close().unwrap();
        assert_eq!(changes(&fs), before, "{mode:?}, round {round}: a close that changed nothing wrote");
    }
    // A change is written at the close, and the file is clean after it.
    let db = builder.clone().open(path).unwrap();
    db.tree("t").unwrap().upsert(b"after", b"1").unwrap();
    let before = changes(&fs);
    db.close().unwrap();
    assert_ne!(changes(&fs), before, "a close after a change wrote nothing");
    fs.crash(CrashMode::DropUnsynced);
    let db = builder.open(path).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"after").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

/// An unlogged database at `path` holding 500 keys, closed; the builder that opens it (its
/// logging unset).
fn unlogged_with_keys(fs: &FaultFs, path: &Path) -> swizzledb::Builder {
    let builder =
        Database::builder().page_size(4096).pool_bytes(32 * 4096).lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().logging(false).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..500 {
        t.insert(&key(i), b"v").unwrap();
    }
    drop(t);
    db.close().unwrap();
    builder
}

/// R13: `logging(true)` on an unlogged database is refused with what to do, or converts it.
#[test]
fn r13_logging_on_an_unlogged_database_is_refused_or_converts() {
    let fs = fault_fs();
    let path = Path::new("/d/plain");
    let builder = unlogged_with_keys(&fs, path);
    match builder.clone().logging(true).open(path) {
        Err(e @ Error::NotLogged(_)) => assert!(e.to_string().contains("convert_to_logged"), "{e}"),
        other => panic!("{other:?}"),
    }
    // Opening with the defaults follows the file: unlogged.
    let db = builder.clone().open(path).unwrap();
    assert!(!db.is_logged());
    db.close().unwrap();

    let db = builder.clone().logging(true).lab(|l| l.convert_to_logged(true)).open(path).unwrap();
    assert!(db.is_logged());
    let t = db.tree("t").unwrap();
    t.upsert(&key(1), b"after").unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(t);
    drop(db);
    let db = builder.open(path).unwrap();
    assert!(db.is_logged(), "page 0 now says logged");
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(&key(1)).unwrap().as_deref(), Some(&b"after"[..]));
    assert_eq!(t.range(Bound::Unbounded, Bound::Unbounded).count(), 500);
    t.verify().unwrap();
    db.close().unwrap();
}

/// R13: a conversion that fails after it made its log — the identity file, the first
/// checkpoint's log write or its master record fails — removes the log, so the database is
/// the unlogged one it was, and the retried conversion succeeds. The log was left behind, and
/// the retry refused it as `StaleLog`.
#[test]
fn r13_a_failed_conversion_leaves_no_log_and_the_retry_converts() {
    use swizzledb_io::{Fault, FaultRule, Op};
    for (what, rule) in [
        ("the identity file", FaultRule::new(Op::Write, Fault::Eio).on_path("database-id")),
        ("the log's sync", FaultRule::new(Op::Sync, Fault::Eio).on_path(".log")),
        ("the master record", FaultRule::new(Op::Write, Fault::Eio).on_path("master")),
    ] {
        let fs = fault_fs();
        let path = Path::new("/d/plain");
        let builder = unlogged_with_keys(&fs, path);
        let convert = || builder.clone().logging(true).lab(|l| l.convert_to_logged(true)).open(path);
        fs.fail_next(rule);
        assert!(convert().is_err(), "{what}: the conversion failed");
        fs.clear_faults();
        assert!(!fs.exists(&wal_dir(path)), "{what}: the failed conversion's log was removed");
        let db = builder.clone().open(path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!db.is_logged(), "{what}: still the unlogged database");
        assert_eq!(db.tree("t").unwrap().range(Bound::Unbounded, Bound::Unbounded).count(), 500, "{what}");
        db.close().unwrap();
        let db = convert().unwrap_or_else(|e| panic!("{what}: the retried conversion: {e}"));
        assert!(db.is_logged(), "{what}");
        db.tree("t").unwrap().upsert(&key(1), b"after").unwrap();
        db.close().unwrap();
        let db = builder.open(path).unwrap();
        assert!(db.is_logged(), "{what}");
        assert_eq!(db.tree("t").unwrap().get(&key(1)).unwrap().as_deref(), Some(&b"after"[..]), "{what}");
        db.close().unwrap();
    }
}

/// R13: a conversion killed after its log's identity file and before page 0 said logged
/// leaves the unlogged database, clean, beside a log naming it; the retried conversion removes
/// that log and converts. It refused it as `StaleLog`, for good: a kill harness (SIGKILL at a
/// random point of a conversion, 300 kills) met that in 4 of the 120 kills that left the file
/// unlogged. The state is made here by converting, then putting the unlogged file's bytes
/// back.
#[test]
fn r13_a_conversion_killed_before_page_0_leaves_a_log_the_retry_removes() {
    let fs = fault_fs();
    let path = Path::new("/d/plain");
    let builder = unlogged_with_keys(&fs, path);
    let unlogged = fs.contents(path).unwrap();
    let convert = || builder.clone().logging(true).lab(|l| l.convert_to_logged(true)).open(path);
    convert().unwrap().close().unwrap();
    let file = fs.open(path, OpenMode::EXISTING).unwrap();
    file.set_len(0).unwrap();
    file.write_all_at(&unlogged, 0).unwrap();
    file.sync().unwrap();
    drop(file);
    assert!(fs.list(&wal_dir(path)).unwrap().iter().any(|f| f.ends_with("database-id")));
    let db = convert().unwrap_or_else(|e| panic!("the retried conversion: {e}"));
    assert!(db.is_logged());
    db.tree("t").unwrap().upsert(&key(1), b"after").unwrap();
    db.close().unwrap();
    let db = builder.open(path).unwrap();
    assert!(db.is_logged());
    let t = db.tree("t").unwrap();
    assert_eq!(t.get(&key(1)).unwrap().as_deref(), Some(&b"after"[..]));
    assert_eq!(t.range(Bound::Unbounded, Bound::Unbounded).count(), 500);
    db.close().unwrap();
    // Killed before its identity file: a log directory holding a double-write area alone.
    let third = Path::new("/d/third");
    let builder3 = unlogged_with_keys(&fs, third);
    fs.create_dir_all(&wal_dir(third)).unwrap();
    fs.open(&wal_dir(third).join("doublewrite"), OpenMode::CREATE_NEW).unwrap();
    let db = builder3.logging(true).lab(|l| l.convert_to_logged(true)).open(third).unwrap();
    assert!(db.is_logged());
    db.close().unwrap();
    // A log directory without this file's identity, holding a segment, is still refused.
    let other = Path::new("/d/other");
    let builder = unlogged_with_keys(&fs, other);
    fs.create_dir_all(&wal_dir(other)).unwrap();
    fs.open(&wal_dir(other).join("0000000000000000.log"), OpenMode::CREATE_NEW).unwrap();
    let refused = builder.logging(true).lab(|l| l.convert_to_logged(true)).open(other);
    assert!(matches!(refused, Err(Error::StaleLog(_))), "{refused:?}");
}

/// R13: a conversion killed at any file-system call — unsynced writes kept or lost — leaves
/// either the unlogged database, still clean, or the logged one, each with every record: an
/// open that leaves `logging` unsaid opens it, and the retried conversion converts it (or opens
/// it, converted already). Closed again, the logged database keeps a write made after it.
#[test]
fn r13_a_conversion_killed_at_any_call_keeps_every_record() {
    let path = Path::new("/d/plain");
    let on = |vfs: Arc<dyn Vfs>| {
        Database::builder()
            .page_size(4096)
            .pool_bytes(32 * 4096)
            .log_segment_bytes(64 << 10)
            .lab(|l| l.vfs(vfs))
    };
    let convert = |vfs: Arc<dyn Vfs>| on(vfs).logging(true).lab(|l| l.convert_to_logged(true));
    let records: Vec<(Vec<u8>, Vec<u8>)> = (0..200).map(|i| (key(i), vec![i as u8; 40])).collect();
    let has_every_record = |db: &Database, context: &str| {
        let t = db.tree("t").unwrap_or_else(|e| panic!("{context}: {e}"));
        let got: Vec<_> = t.range(Bound::Unbounded, Bound::Unbounded).map(Result::unwrap).collect();
        assert!(got == records, "{context}: {} records, {} expected", got.len(), records.len());
    };
    let kills = crate::common::kill_at_every_call(
        &crate::common::KILLS,
        |fs| {
            fs.create_dir_all(Path::new("/d")).unwrap();
            let db = on(Arc::new(fs.clone())).logging(false).create(path).unwrap();
            let t = db.create_tree("t").unwrap();
            for (k, v) in &records {
                t.insert(k, v).unwrap();
            }
            drop(t);
            db.close().unwrap();
        },
        |vfs| convert(vfs).open(path)?.close(),
        |fs, context| {
            let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
            let db = on(Arc::clone(&vfs)).open(path).unwrap_or_else(|e| panic!("{context}: open: {e}"));
            has_every_record(&db, context);
            db.close().unwrap();
            let db =
                convert(Arc::clone(&vfs)).open(path).unwrap_or_else(|e| panic!("{context}: convert: {e}"));
            assert!(db.is_logged(), "{context}");
            has_every_record(&db, context);
            db.tree("t").unwrap().upsert(b"after", b"conversion").unwrap();
            db.close().unwrap();
            let db = on(vfs).open(path).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
            assert!(db.is_logged(), "{context}");
            let t = db.tree("t").unwrap();
            assert_eq!(t.get(b"after").unwrap().as_deref(), Some(&b"conversion"[..]), "{context}");
            assert!(t.delete(b"after").unwrap());
            drop(t);
            has_every_record(&db, context);
            db.close().unwrap();
        },
    );
    assert!(kills > 10, "the conversion made {kills} calls");
}

/// R13, buffer F6/F11: an open, a run of writes (splits, merges, inserts and deletes), a
/// checkpoint where the database is logged, and a clean close, killed at any file-system call
/// (unsynced writes kept, lost, or torn). Logged, the next open restarts with exactly the writes
/// that returned, and perhaps the one the kill cut short. Unlogged, it finds the state of the
/// last clean close — before the writes or after them all, and after them once the close
/// returned — or refuses the file as `Unclean` while the close had not returned.
#[test]
fn r13_a_close_killed_at_any_call_keeps_the_state_of_a_clean_close() {
    let path = Path::new("/d/db");
    let base: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..300).map(|i| (key(i), vec![i as u8; 40 + i as usize % 5 * 40])).collect();
    // Values grown (leaves split), a run deleted (leaves merge), new keys between the old.
    let writes: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..25)
        .map(|i| (key(i * 4), Some(vec![0xA5; 400])))
        .chain((100..130).map(|i| (key(i), None)))
        .chain((0..20).map(|i| (format!("key{:06}x", i * 13).into_bytes(), Some(vec![7; 150]))))
        .collect();
    let after = |n: usize| {
        let mut state = base.clone();
        for (k, v) in &writes[..n] {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
        state
    };
    let (before, all) = (after(0), after(writes.len()));
    for logged in [true, false] {
        let on = |vfs: Arc<dyn Vfs>| crate::common::small_on(vfs, logged, 16);
        // Writes that returned, and whether the close did.
        let (written, closed) = (std::cell::Cell::new(0), std::cell::Cell::new(false));
        let kills = crate::common::kill_at_every_call(
            &crate::common::KILLS,
            |fs| {
                written.set(0);
                closed.set(false);
                fs.create_dir_all(Path::new("/d")).unwrap();
                let db = on(Arc::new(fs.clone())).create(path).unwrap();
                let t = db.create_tree("t").unwrap();
                for (k, v) in &base {
                    t.insert(k, v).unwrap();
                }
                drop(t);
                db.close().unwrap();
            },
            |vfs| {
                let db = on(vfs).open(path)?;
                let t = db.tree("t")?;
                for (k, v) in &writes {
                    match v {
                        Some(v) => drop(t.upsert(k, v)?),
                        None => assert!(t.delete(k)?),
                    }
                    written.set(written.get() + 1);
                }
                if logged {
                    db.checkpoint()?;
                }
                drop(t);
                db.close()?;
                closed.set(true);
                Ok(())
            },
            |fs, context| {
                let context = format!("logged: {logged}, {context}, {} writes returned", written.get());
                let db = match on(Arc::new(fs.clone())).open(path) {
                    Err(Error::Unclean(_)) if !logged && !closed.get() => return,
                    opened => opened.unwrap_or_else(|e| panic!("{context}: open: {e}")),
                };
                let t = db.tree("t").unwrap();
                let got: BTreeMap<_, _> =
                    t.range(Bound::Unbounded, Bound::Unbounded).map(Result::unwrap).collect();
                let n = written.get();
                let fits = if logged {
                    got == after(n) || n < writes.len() && got == after(n + 1)
                } else if closed.get() {
                    got == all
                } else {
                    got == before || got == all
                };
                assert!(fits, "{context}: {} records", got.len());
                t.verify().unwrap_or_else(|e| panic!("{context}: {e}"));
                t.upsert(b"later", b"write").unwrap();
                drop(t);
                db.close().unwrap_or_else(|e| panic!("{context}: close: {e}"));
                let db =
                    on(Arc::new(fs.clone())).open(path).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
                let t = db.tree("t").unwrap();
                assert_eq!(t.get(b"later").unwrap().as_deref(), Some(&b"write"[..]), "{context}");
                assert_eq!(t.range(Bound::Unbounded, Bound::Unbounded).count(), got.len() + 1, "{context}");
                drop(t);
                db.close().unwrap();
            },
        );
        assert!(kills > 40, "logged: {logged}: {kills} calls");
    }
}

/// R13, buffer F10a/F11: an unlogged database whose close a power loss cuts short, its
/// unsynced writes torn, is `Unclean` (or whole, had its close ended): and `discard_unclean`
/// then starts over. Page 0, written by the close without CLEAN, could survive with the page
/// count the close gave it while the growth of the file did not; the open refused that file as
/// `Corrupted` (a page count beyond the file's end) before it looked at CLEAN, so neither
/// `Unclean` nor `discard_unclean(true)`, the documented step, applied.
#[test]
fn r13_an_unlogged_close_torn_at_any_call_is_unclean_or_whole() {
    let path = Path::new("/d/db");
    let on = |vfs: Arc<dyn Vfs>| {
        Database::builder().page_size(4096).pool_bytes(64 * 4096).logging(false).lab(|l| l.vfs(vfs))
    };
    let records: BTreeMap<Vec<u8>, Vec<u8>> = (0..400).map(|i| (key(i), vec![i as u8; 150])).collect();
    let modes: Vec<CrashMode> = (1..=4).map(|seed| CrashMode::Torn { seed }).collect();
    crate::common::kill_at_every_call(
        &modes,
        |fs| {
            fs.create_dir_all(Path::new("/d")).unwrap();
            let db = on(Arc::new(fs.clone())).create(path).unwrap();
            db.create_tree("t").unwrap();
            db.close().unwrap();
        },
        |vfs| {
            let db = on(vfs).open(path)?;
            let t = db.tree("t")?;
            for (k, v) in &records {
                t.insert(k, v)?;
            }
            drop(t);
            db.close()
        },
        |fs, context| {
            let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
            let db = match on(Arc::clone(&vfs)).open(path) {
                Err(Error::Unclean(_)) if context.contains("killed at") => on(vfs)
                    .discard_unclean(true)
                    .open(path)
                    .unwrap_or_else(|e| panic!("{context}: discard_unclean: {e}")),
                opened => opened.unwrap_or_else(|e| panic!("{context}: open: {e}")),
            };
            let got: BTreeMap<_, _> = match db.tree("t") {
                Ok(t) => t.range(Bound::Unbounded, Bound::Unbounded).map(Result::unwrap).collect(),
                Err(Error::TreeNotFound(_)) => BTreeMap::new(),
                Err(e) => panic!("{context}: {e}"),
            };
            assert!(got.is_empty() || got == records, "{context}: {} records", got.len());
            db.close().unwrap();
        },
    );
}

fn remove_dir(fs: &FaultFs, dir: &Path) {
    for f in fs.list(dir).unwrap() {
        fs.remove(&f).unwrap();
    }
}

/// R14: a logged database whose log is missing, empty or another database's is refused with a
/// typed error naming the file; nothing is silently recreated.
#[test]
fn r14_missing_empty_or_foreign_logs_are_refused() {
    let fs = fault_fs();
    let builder =
        Database::builder().page_size(4096).pool_bytes(32 * 4096).lab(|l| l.vfs(Arc::new(fs.clone())));
    let (a, b) = (PathBuf::from("/d/a"), PathBuf::from("/d/b"));
    for p in [&a, &b] {
        let db = builder.clone().create(p).unwrap();
        db.create_tree("t").unwrap().insert(b"k", p.to_str().unwrap().as_bytes()).unwrap();
        db.close().unwrap();
    }
    // Foreign: b's log put beside a.
    let (wa, wb) = (wal_dir(&a), wal_dir(&b));
    remove_dir(&fs, &wa);
    for f in fs.list(&wb).unwrap() {
        let dst = wa.join(f.file_name().unwrap());
        let src = fs.open(&f, OpenMode::EXISTING).unwrap();
        let mut bytes = vec![0; src.len().unwrap() as usize];
        src.read_exact_at(&mut bytes, 0).unwrap();
        fs.open(&dst, OpenMode::CREATE_NEW).unwrap().write_all_at(&bytes, 0).unwrap();
    }
    match builder.clone().open(&a) {
        Err(Error::ForeignLog { file, dir }) => assert_eq!((file, dir), (a.clone(), wa.clone())),
        other => panic!("a foreign log: {other:?}"),
    }
    // Empty.
    remove_dir(&fs, &wa);
    assert!(matches!(builder.clone().open(&a), Err(Error::LogMissing { .. })), "an empty log directory");
    assert!(fs.list(&wa).unwrap().is_empty(), "nothing was recreated");
    // b without its identity file, then without its directory's files at all.
    fs.remove(&wb.join("database-id")).unwrap();
    assert!(matches!(builder.clone().open(&b), Err(Error::LogMissing { .. })));
    // The file itself is untouched: b's log restored, it opens.
    let db = builder.clone().logging(false).open(&a);
    assert!(matches!(db, Err(Error::LogMissing { .. })), "logging(false) does not skip the log");
}

/// R15: 100k updates to 100 keys with the pool holding everything (so nothing is evicted): the
/// page cleaner keeps the log on disk below its bound.
#[test]
fn r15_the_log_stays_below_its_bound_without_evictions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let bound = 1 << 20;
    let segment = 64 << 10;
    let db = Database::builder()
        .mode(PoolMode::Swizzling)
        .pool_bytes(16 << 20)
        .commit_mode(CommitMode::Async)
        .log_segment_bytes(segment)
        .max_log_bytes(bound)
        .create(&path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let on_disk = || -> u64 {
        // A segment the cleaner's checkpoint removes between the listing and its metadata is
        // gone: it holds nothing.
        // The double-write area (buffer README F15) lives beside the segments, at a fixed size.
        std::fs::read_dir(wal_dir(&path))
            .unwrap()
            .filter_map(|e| e.ok().filter(|e| e.file_name() != "doublewrite")?.metadata().ok())
            .map(|m| m.len())
            .sum()
    };
    let (mut max_kept, mut max_disk) = (0, 0);
    for i in 0..100_000u32 {
        t.upsert(&key(i % 100), &i.to_le_bytes().repeat(10)).unwrap();
        if i % 500 == 0 {
            max_kept = max_kept.max(db.log_bytes().unwrap());
            max_disk = max_disk.max(on_disk());
        }
    }
    let stats = db.cleaner_stats().unwrap();
    assert!(stats.rounds > 0 && stats.pages_written > 0, "{stats:?}");
    // A transaction that began just below the bound may add its few records above it.
    assert!(max_kept <= bound + 4096, "log kept {max_kept} bytes, bound {bound}");
    // The files also hold the partly filled last segment and the small master and id files
    // (48 bytes together: a CI run once found the log's segments at bound + segment exactly).
    assert!(max_disk <= bound + segment + 4096, "log files {max_disk} bytes, bound {bound}");
    assert_eq!(db.stats().evictions, 0, "the cleaner, not eviction, bounded the log");
    db.close().unwrap();

    // Without the cleaner the same run keeps far more log (nothing is ever written back).
    let path2 = dir.path().join("db2");
    let db = Database::builder()
        .pool_bytes(16 << 20)
        .commit_mode(CommitMode::Async)
        .log_segment_bytes(segment)
        .max_log_bytes(bound)
        .lab(|l| l.cleaner(Cleaner::None))
        .checkpoint_interval(None)
        .create(&path2)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..20_000u32 {
        t.upsert(&key(i % 100), &i.to_le_bytes().repeat(10)).unwrap();
    }
    assert!(db.log_bytes().unwrap() > 2 * bound, "{}", db.log_bytes().unwrap());
    db.close().unwrap();
}

/// Runs `during` beside an open transaction that wrote one key, on a database with a log bound
/// of `bound` bytes in 16 KiB segments, asynchronous commits and no background checkpoints
/// (only the page cleaner truncates its log, R15); then commits it and runs `after`.
fn beside_an_open_transaction(
    bound: u64,
    during: impl FnOnce(&Database, &swizzledb::Tree),
    after: impl FnOnce(&Database, &swizzledb::Tree),
) {
    let fs = fault_fs();
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(256 * 4096)
        .lab(|l| l.vfs(Arc::new(fs.clone())))
        .log_segment_bytes(16 << 10)
        .max_log_bytes(bound)
        .commit_mode(CommitMode::Async)
        .checkpoint_interval(None)
        .create(Path::new("/d/db"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut long = db.begin();
    long.put(&t, b"held", b"open").unwrap();
    during(&db, &t);
    long.commit().unwrap();
    after(&db, &t);
    db.close().unwrap();
}

/// R15: while a running transaction holds truncation back with the log over the cleaner's
/// trigger, the cleaner rounds at its period instead of back to back (each round would append
/// another checkpoint to the log it cannot shrink).
#[test]
fn r15_a_cleaner_held_back_by_a_running_transaction_waits_between_rounds() {
    let bound = 64 << 10;
    beside_an_open_transaction(
        bound,
        |db, t| {
            // Past three quarters of the bound (the trigger), below the bound (no writer
            // throttled).
            let mut i = 0;
            while db.log_bytes().unwrap() < bound / 4 * 3 + 4096 {
                t.upsert(&key(i), &[7; 64]).unwrap();
                i += 1;
            }
            assert!(db.log_bytes().unwrap() < bound, "precondition: below the bound");
            let before = db.cleaner_stats().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(500));
            let after = db.cleaner_stats().unwrap();
            let rounds = after.rounds - before.rounds;
            // At most one round per 20 ms period (25 in 0.5 s), with room for a slow machine's
            // scheduling; back to back they were thousands.
            assert!(rounds <= 40, "{rounds} rounds in 0.5 s: {after:?}");
            assert!(after.held_back > before.held_back, "{after:?}");
        },
        |_, _| {},
    );
}

/// R15: while a running transaction holds truncation back, a transaction that begins with the
/// log over its bound does not wait for the cleaner: no round can shrink the log before that
/// transaction ends. Each used to wait the full two seconds, so writers beside one open
/// transaction made one change per two seconds each (a public-API run with a 1 MiB bound: a
/// handful of writes in the 6 s a transaction stayed open, against 400,000 a second after).
/// Once it ends, the next round truncates and the log is back below its bound.
#[test]
fn r15_writers_beside_a_transaction_holding_the_log_back_do_not_wait() {
    let bound = 64 << 10;
    beside_an_open_transaction(
        bound,
        |db, t| {
            let mut i = 0;
            let held_back = db.cleaner_stats().unwrap().held_back;
            let started = Instant::now();
            while db.log_bytes().unwrap() < bound + (16 << 10)
                || db.cleaner_stats().unwrap().held_back == held_back
            {
                t.upsert(&key(i), &[7; 64]).unwrap();
                i += 1;
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the cleaner never found itself held back"
                );
            }
            let started = Instant::now();
            for j in 0..20 {
                db.transact(|tx| tx.put(t, &key(j), b"beside")).unwrap();
            }
            let took = started.elapsed();
            // Milliseconds in all; each of the twenty waited two seconds before.
            assert!(took < Duration::from_secs(2), "20 transactions beside the open one took {took:?}");
            assert!(db.log_bytes().unwrap() > bound, "precondition: the log stayed over its bound");
        },
        |db, t| {
            let started = Instant::now();
            while db.log_bytes().unwrap() > bound {
                db.transact(|tx| tx.put(t, b"after", b"the commit")).unwrap();
                std::thread::sleep(Duration::from_millis(10));
                let log = db.log_bytes();
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the log stayed over its bound: {log:?}"
                );
            }
        },
    );
}

/// R13: a logged database's `flush` (log first, then pages) in the middle of asynchronous
/// commits that merged leaves and freed pages, then a crash: restart finds a valid tree holding
/// a prefix of the commits.
#[test]
fn r13_flush_then_crash_keeps_a_valid_prefix_of_async_commits() {
    for crash in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced] {
        let fs = fault_fs();
        let path = Path::new("/d/db");
        let builder = Database::builder()
            .page_size(4096)
            .pool_bytes(64 * 4096)
            .commit_mode(CommitMode::Async)
            .checkpoint_interval(None)
            .lab(|l| l.vfs(Arc::new(fs.clone())));
        let db = builder.clone().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..3000 {
            t.insert(&key(i), &[1; 60]).unwrap();
        }
        db.checkpoint().unwrap();
        for i in 0..2900 {
            t.delete(&key(i)).unwrap();
        }
        db.flush().unwrap();
        fs.crash(crash);
        drop(t);
        drop(db);
        let db = builder.open(path).unwrap();
        let t = db.tree("t").unwrap();
        t.verify().unwrap();
        // Deletes are applied in key order: what survived is a prefix of them.
        let present: Vec<bool> = (0..3000).map(|i| t.get(&key(i)).unwrap().is_some()).collect();
        let first = present.iter().position(|&p| p).unwrap_or(3000);
        assert!(present[first..].iter().all(|&p| p), "{crash:?}: deleted keys came back after {first}");
        db.close().unwrap();
    }
}

/// R2 with `Builder::commit_wait(CommitWait::Sleep)` (wal README W6 steps 6 and 7): threads
/// committing synchronously all sleep through their rounds (no wait spent awake), and every
/// commit that returned survives a power loss; the setting belongs to the open, not to the file.
#[test]
fn r2_sleeping_committers_wait_awake_never_and_lose_no_commit() {
    const THREADS: u32 = 6;
    const COMMITS: u32 = 150;
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let builder = Database::builder()
        .page_size(4096)
        .pool_bytes(256 * 4096)
        .commit_mode(CommitMode::Sync)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().commit_wait(CommitWait::Sleep).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let before = db.log_stats().unwrap();
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for i in 0..COMMITS {
                    let mut tx = db.begin();
                    tx.put(t, &key(th * COMMITS + i), &[th as u8; 40]).unwrap();
                    tx.commit().unwrap();
                }
            });
        }
    });
    let after = db.log_stats().unwrap();
    assert_eq!(after.busy_waits, 0, "W6: committers told to sleep waited awake: {after:?}");
    let requests = after.flush_requests - before.flush_requests;
    assert!(requests >= u64::from(THREADS * COMMITS), "R2: every sync commit asks for a flush: {requests}");
    fs.crash(CrashMode::DropUnsynced);
    drop(t);
    drop(db);
    let db = builder.open(path).unwrap();
    let t = db.tree("t").unwrap();
    for i in 0..THREADS * COMMITS {
        assert!(t.get(&key(i)).unwrap().is_some(), "R2: the commit of key {i} returned and was lost");
    }
    assert_eq!(db.log_stats().unwrap().busy_waits, 0, "nothing waited yet after the reopen");
    db.close().unwrap();
}

/// R14: the log's segment size is recorded with it, so an open with the defaults reads a log
/// made with other segments.
#[test]
fn r14_open_follows_the_logs_segment_size() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let db = Database::builder()
        .log_segment_bytes(16 << 10)
        .max_log_bytes(1 << 20)
        .lab(|l| l.vfs(vfs.clone()))
        .create(path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..2000 {
        t.upsert(&key(i % 50), &[3; 100]).unwrap();
    }
    fs.crash(CrashMode::DropUnsynced);
    drop(t);
    drop(db);
    for segment in [None, Some(1 << 20)] {
        let mut b = Database::builder().lab(|l| l.vfs(vfs.clone()));
        if let Some(s) = segment {
            b = b.log_segment_bytes(s).max_log_bytes(64 << 20);
        }
        let db = b.open(path).unwrap();
        assert_eq!(db.tree("t").unwrap().get(&key(49)).unwrap().as_deref(), Some(&[3; 100][..]));
        db.close().unwrap();
    }
}

/// Open follows the file's page size unless the builder sets one (then another is an error).
#[test]
fn open_follows_the_files_page_size_unless_one_is_set() {
    let dir = tempfile::tempdir().unwrap();
    for logging in [true, false] {
        let path = dir.path().join(format!("db-{logging}"));
        let db = Database::builder().logging(logging).page_size(4096).create(&path).unwrap();
        db.create_tree("t").unwrap().insert(b"a", b"1").unwrap();
        db.close().unwrap();
        let db = Database::builder().open(&path).unwrap();
        assert_eq!(db.pool().page_size(), 4096);
        assert_eq!(db.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        db.close().unwrap();
        assert!(matches!(
            Database::builder().page_size(8192).open(&path),
            Err(Error::Buffer(swizzledb::BufferError::PageSizeMismatch { .. }))
        ));
    }
}

/// The catalog's race: a tree refused because the catalog is full leaves nothing in the log, so
/// a restart does not bring it back (or fail on a catalog that cannot be written).
#[test]
fn a_tree_refused_for_a_full_catalog_leaves_no_record() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let builder =
        Database::builder().page_size(4096).pool_bytes(256 * 4096).lab(|l| l.vfs(Arc::new(fs.clone())));
    let db = builder.clone().create(path).unwrap();
    let mut made = Vec::new();
    let refused = loop {
        let name = format!("{:0>60}", made.len());
        match db.create_tree(&name) {
            Ok(_) => made.push(name),
            Err(Error::Buffer(swizzledb::BufferError::CatalogFull { .. })) => break name,
            Err(e) => panic!("{e}"),
        }
    };
    // A commit makes everything logged so far durable, the refused tree's records included if
    // there were any.
    db.tree(&made[0]).unwrap().insert(b"k", b"v").unwrap();
    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    let mut names = db.tree_names();
    names.sort();
    assert!(!names.contains(&refused), "the refused tree {refused} came back");
    assert!(names == made, "{} trees after restart, {} made", names.len(), made.len());
    db.close().unwrap();
}

/// R14: a log record lies in one segment, and a structure change's holds a page image, so a
/// new log's segments hold at least `MIN_SEGMENT_PAGES` pages. Less is refused at `create` and
/// at a conversion, before anything is written (with 8 KiB segments under 8 KiB pages the
/// first split's record was refused and failed the log for good). The least segment holds
/// every record: splits of leaves full of the longest keys and the longest values a leaf
/// holds, and root growth.
#[test]
fn r14_a_log_whose_segments_cannot_hold_a_structure_change_is_refused() {
    let fs = fault_fs();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let path = Path::new("/d/db");
    for (page, segment) in [(8192usize, 8u64 << 10), (16384, 16 << 10), (32768, 48 << 10)] {
        let refused = Database::builder()
            .page_size(page)
            .log_segment_bytes(segment)
            .max_log_bytes(1 << 20)
            .lab(|l| l.vfs(vfs.clone()))
            .create(path);
        assert!(matches!(refused, Err(Error::Log(swizzledb::LogError::BadConfig { .. }))), "{refused:?}");
        assert!(!vfs.exists(path) && !vfs.exists(&wal_dir(path)), "a refused create wrote nothing");
    }
    // A conversion makes a new log too.
    let unlogged = Database::builder().logging(false).lab(|l| l.vfs(vfs.clone())).create(path).unwrap();
    unlogged.close().unwrap();
    let converted = Database::builder()
        .logging(true)
        .log_segment_bytes(4 << 10)
        .max_log_bytes(1 << 20)
        .lab(|l| l.vfs(vfs.clone()).convert_to_logged(true))
        .open(path);
    assert!(matches!(converted, Err(Error::Log(swizzledb::LogError::BadConfig { .. }))), "{converted:?}");
    vfs.remove(path).unwrap();

    for page in [4096usize, 16384] {
        let least = swizzledb::MIN_SEGMENT_PAGES * page as u64;
        let builder = Database::builder()
            .page_size(page)
            .pool_bytes(64 * page)
            .log_segment_bytes(least)
            .max_log_bytes(8 * least)
            .lab(|l| l.vfs(vfs.clone()));
        let db = builder.clone().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        let (key_len, value_len) = (swizzledb::max_key_len(page), swizzledb::max_inline_value_len(page));
        let long_key = |i: u32| {
            let mut k = vec![b'k'; key_len];
            k[key_len - 4..].copy_from_slice(&i.to_be_bytes());
            k
        };
        for i in 0..200u32 {
            t.insert(&long_key(i), &vec![i as u8; value_len])
                .unwrap_or_else(|e| panic!("page {page}, {i}: {e}"));
        }
        t.verify().unwrap();
        drop(t);
        fs.crash(CrashMode::DropUnsynced);
        drop(db);
        let db = builder.open(path).unwrap();
        let t = db.tree("t").unwrap();
        t.verify().unwrap();
        assert_eq!(t.len().unwrap(), 200, "page {page}");
        db.close().unwrap();
        vfs.remove(path).unwrap();
        for f in vfs.list(&wal_dir(path)).unwrap_or_default() {
            vfs.remove(&wal_dir(path).join(f)).unwrap();
        }
    }
}

/// The `.log` files in a database's log directory, with their lengths.
fn log_segments(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut segs: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| {
            let len = std::fs::metadata(&p).unwrap().len();
            (p, len)
        })
        .collect();
    segs.sort();
    segs
}

/// R25: after a clean close the log directory holds one small segment, whatever the log held;
/// the file and its log directory, copied elsewhere, open alone with every record.
#[test]
fn r25_a_clean_close_keeps_one_small_segment_and_the_copy_opens_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let builder = Database::builder().log_segment_bytes(1 << 20).max_log_bytes(64 << 20);
    let mut want = std::collections::BTreeMap::new();
    for round in 0..3u32 {
        let db =
            if round == 0 { builder.clone().create(&path) } else { builder.clone().open(&path) }.unwrap();
        let t = db.tree_or_create("t").unwrap();
        for i in 0..6_000u32 {
            let k = key(round * 10_000 + i);
            let v = vec![(i % 251) as u8; 200];
            t.upsert(&k, &v).unwrap();
            want.insert(k, v);
        }
        assert!(log_segments(&wal_dir(&path)).len() > 1, "the run wrote more than a segment");
        db.close().unwrap();
        let segs = log_segments(&wal_dir(&path));
        assert_eq!(segs.len(), 1, "R25: one segment after a clean close: {segs:?}");
        assert!(segs[0].1 < 64 << 10, "R25: a small one: {segs:?}");
        // Beside it only the identity file: the double-write area and the master record go.
        let mut files: Vec<String> = std::fs::read_dir(wal_dir(&path))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| {
                !segs.iter().any(|(s, _)| s.file_name().is_some_and(|f| f.to_str() == Some(n.as_str())))
            })
            .collect();
        files.sort();
        assert_eq!(files, ["database-id"], "R25: one segment and the identity file");
        let total: u64 =
            std::fs::read_dir(wal_dir(&path)).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
        assert!(total < 64 << 10, "R25: the log directory holds {total} bytes");
    }
    let copy = tempfile::tempdir().unwrap();
    let to = copy.path().join("copied.swz");
    std::fs::copy(&path, &to).unwrap();
    std::fs::create_dir(wal_dir(&to)).unwrap();
    for e in std::fs::read_dir(wal_dir(&path)).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, wal_dir(&to).join(p.file_name().unwrap())).unwrap();
    }
    drop(dir);
    let db = builder.open(&to).unwrap();
    let t = db.tree("t").unwrap();
    let got: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
        t.range(Bound::Unbounded, Bound::Unbounded).map(Result::unwrap).collect();
    assert_eq!(got, want, "the copy holds every record");
    db.close().unwrap();
}

/// R25: a close that fails at any write, sync, length change or removal, followed by a crash,
/// loses no committed record, and the next clean close still leaves one segment.
#[test]
fn r25_a_crash_anywhere_in_a_close_loses_nothing() {
    use swizzledb_io::{Fault, FaultRule, Op};
    let mut fired = 0;
    for op in [Op::Write, Op::Sync, Op::SetLen, Op::Remove, Op::Rename] {
        for nth in 1..=8u64 {
            let fs = fault_fs();
            let path = Path::new("/d/db");
            let builder = Database::builder()
                .page_size(4096)
                .pool_bytes(256 * 4096)
                .log_segment_bytes(64 << 10)
                .max_log_bytes(64 << 20)
                .lab(|l| l.vfs(Arc::new(fs.clone())));
            let db = builder.clone().create(path).unwrap();
            let t = db.create_tree("t").unwrap();
            for i in 0..1_500u32 {
                t.upsert(&key(i), &[i as u8; 100]).unwrap();
            }
            let before = fs.calls(op, None);
            fs.fail_next(FaultRule::new(op, Fault::Eio).nth(nth));
            let closed = db.close();
            if fs.calls(op, None) - before >= nth {
                fired += 1;
            }
            fs.clear_faults();
            fs.crash(CrashMode::Torn { seed: nth });
            let db = builder
                .clone()
                .open(path)
                .unwrap_or_else(|e| panic!("{op:?} #{nth} (close said {closed:?}): the reopen failed: {e}"));
            let t = db.tree("t").unwrap();
            for i in 0..1_500u32 {
                assert_eq!(t.get(&key(i)).unwrap(), Some(vec![i as u8; 100]), "{op:?} #{nth}: key {i}");
            }
            db.close().unwrap();
            let segs: Vec<_> = fs
                .list(&wal_dir(path))
                .unwrap()
                .into_iter()
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            assert_eq!(segs.len(), 1, "{op:?} #{nth}: R25 after the next clean close: {segs:?}");
        }
    }
    assert!(fired > 20, "the faults hit the close ({fired} did)");
}

/// Random 8-byte keys, the same for every call with the same `i`.
fn spread(i: u32) -> [u8; 8] {
    (u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes()
}

/// R7: a checkpoint whose tables outgrow one log record — here thousands of dirty pages and
/// free pages beside 8 KiB segments — goes out in `CheckpointPart` records before its end
/// record (it failed with "log record ... exceeds the maximum" before). Restart reads it whole:
/// after a crash every committed record is back and the tree is valid, with classical restart
/// and with instant restart; the log lists the parts.
#[test]
fn r7_a_checkpoint_larger_than_a_log_record_goes_out_in_parts() {
    for instant in [false, true] {
        let fs = fault_fs();
        let path = Path::new("/d/db");
        let builder = Database::builder()
            .page_size(4096)
            .pool_bytes(16 << 20)
            .log_segment_bytes(8 << 10)
            .checkpoint_interval(None)
            .log_archive(instant)
            .restart_mode(if instant {
                swizzledb::RestartMode::Instant
            } else {
                swizzledb::RestartMode::Classical
            })
            .lab(|l| l.vfs(Arc::new(fs.clone())));
        let db = builder.clone().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        let gone = db.create_tree("gone").unwrap();
        for chunk in (0..40_000u32).collect::<Vec<_>>().chunks(4000) {
            db.transact(|tx| {
                for &i in chunk {
                    tx.insert(&t, &spread(i), &[7u8; 100])?;
                    tx.insert(&gone, &spread(i), &[8u8; 60])?;
                }
                Ok(())
            })
            .unwrap();
        }
        drop(gone);
        db.drop_tree("gone").unwrap();
        db.checkpoint().unwrap();
        // Past the checkpoint: redone from the log after the crash.
        for i in 40_000..41_000u32 {
            t.insert(&spread(i), &[9u8; 100]).unwrap();
        }
        drop(t);
        fs.crash(CrashMode::DropUnsynced);
        drop(db);
        let db = builder.open(path).unwrap();
        let t = db.tree("t").unwrap();
        assert_eq!(t.len().unwrap(), 41_000, "instant {instant}");
        for i in (0..41_000u32).step_by(97) {
            let want: &[u8] = if i < 40_000 { &[7u8; 100] } else { &[9u8; 100] };
            assert_eq!(t.get(&spread(i)).unwrap().as_deref(), Some(want), "instant {instant}, record {i}");
        }
        assert!(db.tree("gone").is_err());
        drop(t);
        db.checkpoint().unwrap();
        db.close().unwrap();
    }

    // On the operating system's file system, the log printed: the parts are there.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.swz");
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(16 << 20)
        .log_segment_bytes(8 << 10)
        .checkpoint_interval(None)
        .create(&path)
        .unwrap();
    let t = db.create_tree("t").unwrap();
    db.transact(|tx| (0..30_000u32).try_for_each(|i| tx.insert(&t, &spread(i), &[1u8; 100]))).unwrap();
    db.checkpoint().unwrap();
    // Read while open (a close's checkpoint truncates the log before its own begin record).
    let kinds: Vec<_> = swizzledb::inspect::read_log(&path).unwrap().map(|e| e.unwrap().kind()).collect();
    let parts = kinds.iter().filter(|k| **k == swizzledb::lab::record::RecordKind::CheckpointPart).count();
    assert!(parts >= 2, "{parts} checkpoint parts in the log");
    drop(t);
    db.close().unwrap();
}

/// R13, buffer F11: an unlogged database changed since it was opened and then killed is
/// refused (`Unclean`) even when none of the changed pages reached the file — a leaf write, an
/// overflow value, a transaction, a new tree, a dropped tree — as the docs promise for a crash
/// of an unlogged database; one only read since stays clean. Page 0 lost CLEAN only when the
/// first page was written, so such a kill reopened the last close's state without the changes
/// acknowledged since, as if nothing had happened (a kill harness of unlogged databases with
/// overflow values met it in 116 of 200 kills).
#[test]
fn r13_an_unlogged_database_changed_then_killed_is_unclean_before_any_page_write() {
    let fs = fault_fs();
    let path = Path::new("/d/scratch");
    let builder = Database::builder()
        .logging(false)
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .lab(|l| l.vfs(Arc::new(fs.clone())));
    let fresh = |builder: Builder| {
        let db = builder.discard_unclean(true).open_or_create(path).unwrap();
        for name in ["t", "gone"] {
            db.tree_or_create(name).unwrap().upsert(b"a", b"1").unwrap();
        }
        db.close().unwrap();
    };
    fresh(builder.clone());
    type Change<'a> = (&'a str, &'a dyn Fn(&Database));
    let changes: [Change<'_>; 6] = [
        ("upsert", &|db| {
            db.tree("t").unwrap().upsert(b"b", b"2").unwrap();
        }),
        ("delete", &|db| {
            db.tree("t").unwrap().delete(b"a").unwrap();
        }),
        ("overflow value", &|db| {
            db.tree("t").unwrap().upsert(b"big", &[9; 20_000]).unwrap();
        }),
        ("transaction", &|db| {
            let t = db.tree("t").unwrap();
            db.transact(|tx| tx.put(&t, b"c", b"3")).unwrap();
        }),
        ("create_tree", &|db| {
            db.create_tree("new").unwrap();
        }),
        ("drop_tree", &|db| {
            db.drop_tree("gone").unwrap();
        }),
    ];
    for (what, change) in changes {
        let db = builder.clone().open(path).unwrap();
        change(&db);
        fs.crash(CrashMode::KeepUnsynced);
        drop(db);
        match builder.clone().open(path) {
            Err(Error::Unclean(_)) => {}
            other => panic!("{what}, then a kill: expected Unclean, got {:?}", other.map(|_| ())),
        }
        fresh(builder.clone());
    }
    // Only read, then killed: clean, with what the last close left.
    let db = builder.clone().open(path).unwrap();
    assert_eq!(db.tree("t").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    fs.crash(CrashMode::KeepUnsynced);
    drop(db);
    let db = builder.open(path).unwrap();
    assert_eq!(db.tree("gone").unwrap().get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
}

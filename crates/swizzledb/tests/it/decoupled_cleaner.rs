//! The decoupled page cleaner (RECOVERY.md R20; Lersch 2015, ch. 4), through the public API:
//! it keeps the log below its bound by replaying the log archive onto the data file, without
//! the pool writing a page; it needs the archive; a crash loses no commit.

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use swizzledb::{Cleaner, Database, Error};
use swizzledb_io::{CrashMode, FaultFs, Vfs};
use swizzledb_wal::LogError;

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

/// A pool that holds the whole tree (nothing is evicted), a 512 KiB log bound, the decoupled
/// cleaner.
fn builder(fs: &FaultFs) -> swizzledb::Builder {
    Database::builder()
        .page_size(4096)
        .pool_bytes(2048 * 4096)
        .log_segment_bytes(64 << 10)
        .max_log_bytes(512 << 10)
        .checkpoint_interval(None)
        .log_archive(true)
        .lab(|l| l.cleaner(Cleaner::Decoupled).vfs(Arc::new(fs.clone())))
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

#[test]
fn r20_the_decoupled_cleaner_bounds_the_log_without_pool_writes() {
    bounded_log(None);
}

/// As above, with background checkpoints every 2 ms racing the replays (R20: a checkpoint must
/// not begin between a replay's archiving and its page-write records).
#[test]
fn r20_the_log_stays_bounded_with_checkpoints_racing_the_replays() {
    bounded_log(Some(Duration::from_millis(2)));
}

fn bounded_log(checkpoints: Option<Duration>) {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let db = builder(&fs).checkpoint_interval(checkpoints).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    let mut most = 0;
    // About 12 MiB of log, 24 times the bound, in transactions of about 30 KiB of log.
    for round in 0..400u32 {
        db.transact(|tx| {
            for i in 0..100u32 {
                tx.put(&t, &key((i * 7 + round * 3) % 3000), &[round as u8; 200])?;
            }
            Ok(())
        })
        .unwrap();
        for i in 0..100u32 {
            oracle.insert(key((i * 7 + round * 3) % 3000), vec![round as u8; 200]);
        }
        most = most.max(db.log_bytes().unwrap());
    }
    let cleaner = db.cleaner_stats().unwrap();
    assert!(cleaner.rounds > 0 && cleaner.pages_written > 0, "{cleaner:?}");
    assert_eq!(db.stats().write_backs, 0, "R20: the pool wrote no page; the cleaner replayed the archive");
    // The bound, plus what the transactions that began just under it log (R15), plus what
    // writers log after a throttle times out on a loaded machine: far below the 12 MiB written
    // (a cleaner that cannot truncate lets it all grow).
    assert!(most < 4 * (512 << 10), "the log stayed near its bound: at most {most} bytes");
    // Once the writers stop, the cleaner gets it below the trigger (three quarters).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while db.log_bytes().unwrap() > 512 << 10 {
        assert!(std::time::Instant::now() < deadline, "the log stays at {} bytes", db.log_bytes().unwrap());
        t.upsert(b"nudge", b"x").unwrap();
        oracle.insert(b"nudge".to_vec(), b"x".to_vec());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(db.checkpoint_stats().unwrap().decoupled > 0);

    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = builder(&fs).checkpoint_interval(checkpoints).open(path).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> =
        db.tree("t").unwrap().range(Unbounded, Unbounded).map(Result::unwrap).collect();
    assert_eq!(got, oracle, "every commit survives the crash");
    db.close().unwrap();
}

/// R20: the cleaner interval makes it replay even while the log is small.
#[test]
fn r20_the_cleaner_interval_replays_a_small_log() {
    let fs = fault_fs();
    let db = builder(&fs)
        .lab(|l| l.cleaner_interval(Some(Duration::from_millis(5))))
        .create(Path::new("/d/db"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..300 {
        t.upsert(&key(i), b"v").unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while db.cleaner_stats().unwrap().pages_written == 0 {
        assert!(std::time::Instant::now() < deadline, "no replay within 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(db.log_bytes().unwrap() < 512 << 10);
    db.close().unwrap();
}

#[test]
fn r20_the_decoupled_cleaner_needs_the_archive() {
    let fs = fault_fs();
    let err = builder(&fs).log_archive(false).create(Path::new("/d/db")).unwrap_err();
    assert!(
        matches!(&err, Error::Log(LogError::BadConfig { reason }) if reason.contains("log_archive")),
        "{err}"
    );
    assert!(fs.list(Path::new("/d")).unwrap().is_empty(), "refused before anything was written");
}

/// R21: with write elision, eviction drops dirty pages without writing them; reads rebuild
/// them (or find them brought forward by the cleaner), every record reads back, and neither a
/// crash nor a close loses anything.
#[test]
fn r21_write_elision_drops_dirty_pages_and_loses_nothing() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let small = || builder(&fs).pool_bytes(64 * 4096).lab(|l| l.write_elision(true));
    let db = small().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for round in 0..30u32 {
        db.transact(|tx| {
            for i in 0..100u32 {
                tx.put(&t, &key((i * 37 + round * 11) % 3000), &[round as u8; 150])?;
            }
            Ok(())
        })
        .unwrap();
        for i in 0..100u32 {
            oracle.insert(key((i * 37 + round * 11) % 3000), vec![round as u8; 150]);
        }
    }
    let check = |db: &Database| {
        let t = db.tree("t").unwrap();
        for (k, v) in &oracle {
            assert_eq!(t.get(k).unwrap().as_ref(), Some(v));
        }
        t.verify().unwrap();
    };
    check(&db);
    let s = db.stats();
    assert!(s.elided_writes > 0, "R21: evictions dropped dirty pages: {s:?}");
    assert!(s.pages_repaired > 0, "R18: some were read back stale and rebuilt: {s:?}");

    fs.crash(CrashMode::DropUnsynced);
    drop(db);
    let db = small().open(path).unwrap();
    check(&db);
    db.close().unwrap();
    // Close brought every copy up to date: nothing to rebuild now.
    let db = small().open(path).unwrap();
    check(&db);
    assert_eq!(db.stats().pages_repaired, 0);
    db.close().unwrap();
}

#[test]
fn r21_write_elision_needs_the_decoupled_cleaner() {
    let fs = fault_fs();
    for archive in [true, false] {
        let err = builder(&fs)
            .log_archive(archive)
            .lab(|l| l.cleaner(Cleaner::Classical).write_elision(true))
            .create(Path::new("/d/db"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::Log(LogError::BadConfig { reason }) if reason.contains("decoupled")),
            "{err}"
        );
        assert!(fs.list(Path::new("/d")).unwrap().is_empty(), "refused before anything was written");
    }
}

/// R20 under faults: the decoupled cleaner's archive reads and its page writes fail (EIO);
/// its rounds fail, are counted and retried, nothing panics, and after the faults clear and a
/// crash, the reopened database holds every commit.
#[test]
fn r20_faults_at_the_cleaner_s_io_are_counted_and_lose_nothing() {
    use swizzledb_io::{Fault, FaultRule, Op};
    for (rule, what) in [
        (FaultRule::new(Op::Read, Fault::Eio).on_path(".run").repeating(), "archive reads"),
        (FaultRule::new(Op::Write, Fault::Eio).on_path("/d/db").repeating(), "page writes"),
    ] {
        let fs = fault_fs();
        let path = Path::new("/d/db");
        let b = || builder(&fs).lab(|l| l.cleaner_interval(Some(Duration::from_millis(2))));
        let db = b().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        let mut oracle = BTreeMap::new();
        for i in 0..500u32 {
            t.upsert(&key(i), b"before").unwrap();
            oracle.insert(key(i), b"before".to_vec());
        }
        fs.fail_next(rule);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while db.cleaner_stats().unwrap().failures == 0 {
            assert!(std::time::Instant::now() < deadline, "{what}: no cleaner round met the fault");
            // Commits may fail once the data file is failed for good (F4); they are not in the
            // oracle unless they succeed.
            if t.upsert(&key(7), b"during").is_ok() {
                oracle.insert(key(7), b"during".to_vec());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        fs.crash(CrashMode::DropUnsynced);
        drop(db);
        fs.clear_faults();
        let db = b().open(path).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.tree("t").unwrap().range(Unbounded, Unbounded).map(Result::unwrap).collect();
        assert_eq!(got, oracle, "{what}: every commit survives");
        db.close().unwrap();
    }
}

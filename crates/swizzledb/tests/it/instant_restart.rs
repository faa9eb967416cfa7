//! Instant restart (RECOVERY.md R22), through the public API: after a crash, `open` reads the
//! log archive's analysis state and index instead of the log, rolls the losers back and
//! returns; pages are redone on their first fetch and by the background redo; no committed
//! change is lost and no uncommitted one survives, also across a second crash before the redo
//! ends.

use crate::common;

use common::{Class, Site, Sites, DB};
use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Cleaner, Database, Error, LogError, RestartMode};
use swizzledb_io::{CrashMode, Fault, FaultFs, Op, Vfs};

const PS: usize = 4096;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    vec![(i + round) as u8; 30 + ((i + round) % 60) as usize]
}

fn fault_fs() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

/// 4 KiB pages, a pool of 64 of them (the tree is larger), the archive, no background
/// checkpoints, cleaner or archiver (the tests archive and checkpoint when they want).
fn builder(fs: &FaultFs, mode: RestartMode) -> swizzledb::Builder {
    builder_on(Arc::new(fs.clone()), mode)
}

fn builder_on(vfs: Arc<dyn Vfs>, mode: RestartMode) -> swizzledb::Builder {
    Database::builder()
        .page_size(PS)
        .pool_bytes(64 * PS)
        .checkpoint_interval(None)
        .lab(|l| l.archive_interval(None).cleaner(Cleaner::None))
        .log_archive(true)
        .restart_mode(mode)
        .lab(|l| l.vfs(vfs))
}

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

/// Puts keys `from..to` with `round`'s values, in transactions of 50; deletes every seventh.
fn write(db: &Database, from: u32, to: u32, round: u32, oracle: &mut Oracle) {
    let t = db.tree("t").or_else(|_| db.create_tree("t")).unwrap();
    for chunk in (from..to).collect::<Vec<_>>().chunks(50) {
        db.transact(|tx| {
            for &i in chunk {
                if (i + round).is_multiple_of(7) {
                    tx.delete(&t, &key(i))?;
                } else {
                    tx.put(&t, &key(i), &value(i, round))?;
                }
            }
            Ok(())
        })
        .unwrap();
        for &i in chunk {
            if (i + round).is_multiple_of(7) {
                oracle.remove(&key(i));
            } else {
                oracle.insert(key(i), value(i, round));
            }
        }
    }
}

fn check(db: &Database, oracle: &Oracle) {
    let t = db.tree("t").unwrap();
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = t.range(Unbounded, Unbounded).map(Result::unwrap).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        scanned == want,
        "a full scan returns exactly the committed records ({} vs {})",
        scanned.len(),
        want.len()
    );
    t.verify().unwrap();
}

/// A power loss: unsynced writes are gone, and the dead instance's threads and drop cannot
/// touch the files any more.
fn crash(fs: &FaultFs, db: Database) {
    fs.power_off(CrashMode::DropUnsynced);
    drop(db);
    fs.power_on();
}

/// A database with a checkpoint after 2000 keys, then three rounds of changes to 3000 keys
/// since (archived, and a tail that is not), the pool's pages partly written: the log since the
/// checkpoint is what classical restart would scan and redo.
fn crashed_database(fs: &FaultFs, path: &Path) -> Oracle {
    let mut oracle = Oracle::new();
    let db = builder(fs, RestartMode::Instant).create(path).unwrap();
    write(&db, 0, 2000, 0, &mut oracle);
    db.checkpoint().unwrap();
    for round in 1..=3 {
        write(&db, 0, 3000, round, &mut oracle);
        db.archive_log().unwrap();
        db.pool().sweep_evict(8).unwrap();
        if round == 1 {
            // Every page written and synced: their copies are whole, and stale after round 2.
            db.flush().unwrap();
        }
    }
    write(&db, 1000, 1400, 9, &mut oracle);
    crash(fs, db);
    oracle
}

/// R22: open reads only the log's unarchived tail, leaves redo to the pages, and every
/// committed change reads back; the redo done on fetch and in the background is counted; the
/// next open (classical) finds everything in place.
#[test]
fn r22_open_defers_redo_and_loses_nothing() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let oracle = crashed_database(&fs, path);

    let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
    let stats = db.restart_stats();
    assert!(stats.instant, "{stats:?}");
    assert_eq!(stats.redone, 0, "open redoes nothing: {stats:?}");
    assert!(stats.pages_deferred > 64, "the changed pages were left to redo: {stats:?}");
    // The tail: the last round's 400 keys (8 transactions of 50 puts, with begin and commit
    // records, plus structure changes) — not the 9000 puts since the checkpoint.
    assert!(stats.analyzed > 0 && stats.analyzed < 2000, "open read only the unarchived tail: {stats:?}");
    let t = db.tree("t").unwrap();
    for i in [5, 1234, 2999] {
        assert_eq!(t.get(&key(i)).unwrap(), oracle.get(&key(i)).cloned());
    }
    drop(t);
    let early = db.redo_progress().expect("an instant restart");
    assert!(early.redone_on_fetch > 0, "the lookups redid the pages they loaded: {early:?}");
    assert!(early.pending > 32, "and only those: {early:?}");
    check(&db, &oracle);
    let progress = db.redo_progress().unwrap();
    assert_eq!(progress.redone_in_file, 0, "no background redo: {progress:?}");
    // A loaded page whose file copy was current already (written back before the crash, which
    // depends on when the evictor's writes fell) is done without a redo, so the count is not
    // fixed (it was 28 once under a loaded full suite, against more than 32 usually). The scan
    // must have redone more than the three lookups did.
    assert!(
        progress.redone_on_fetch > early.redone_on_fetch,
        "the scan redid pages it loaded: {early:?}, then {progress:?}"
    );
    assert!(db.stats().pages_repaired >= progress.redone_on_fetch, "and wrote them back");
    assert!(!progress.finished, "no checkpoint yet: {progress:?}");
    db.close().unwrap();

    let db = builder(&fs, RestartMode::Classical).open(path).unwrap();
    assert!(!db.restart_stats().instant);
    check(&db, &oracle);
    assert_eq!(db.stats().pages_repaired, 0, "close left no stale page");
    db.close().unwrap();
}

/// R22: the background redo ends restart by itself: every pending page redone, then the
/// classical checkpoint that ends restart (the log may be truncated again).
#[test]
fn r22_the_background_redo_finishes_with_a_checkpoint() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let oracle = crashed_database(&fs, path);
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    let deferred = db.restart_stats().pages_deferred;
    // No checkpoint at open: the first one comes after the background redo finished (which
    // on a loaded machine may already be the case here, so the progress is read second).
    let checkpoints = db.checkpoint_stats().unwrap().checkpoints;
    let finished = db.redo_progress().unwrap().finished;
    assert!(checkpoints == 0 || finished, "a checkpoint before the redo finished: {checkpoints}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !db.redo_progress().unwrap().finished {
        assert!(Instant::now() < deadline, "the background redo did not finish: {:?}", db.redo_progress());
        std::thread::sleep(Duration::from_millis(5));
    }
    let p = db.redo_progress().unwrap();
    assert_eq!(p.pending, 0);
    assert_eq!(p.redone_on_fetch + p.redone_in_file + p.current, deferred, "{p:?}");
    assert!(p.redone_in_file > 0, "the background wrote pages: {p:?}");
    assert_eq!(db.checkpoint_stats().unwrap().checkpoints, 1, "the checkpoint that ends restart");
    // Every copy in the file is current now: a crash without any fetch loses nothing.
    crash(&fs, db);
    let db = builder(&fs, RestartMode::Classical).open(path).unwrap();
    check(&db, &oracle);
    db.close().unwrap();
}

/// A crash with three losers — one whose changes are archived, two whose are in the log's tail
/// — writing to every fifth key, and the third updating every second key of 1600..1800 by
/// patches; returns the committed state.
fn crashed_with_losers(fs: &FaultFs, path: &Path) -> Oracle {
    let mut oracle = Oracle::new();
    let db = builder(fs, RestartMode::Instant).create(path).unwrap();
    write(&db, 0, 1500, 0, &mut oracle);
    db.flush().unwrap();
    db.checkpoint().unwrap();
    write(&db, 0, 1500, 1, &mut oracle);
    write(&db, 1600, 1800, 0, &mut oracle);
    db.archive_log().unwrap();
    let t = db.tree("t").unwrap();
    let mut early = db.begin();
    for i in (0..1500).step_by(5) {
        early.put(&t, &key(i), b"uncommitted").unwrap();
    }
    db.archive_log().unwrap();
    let mut late = db.begin();
    for i in (1..1500).step_by(5) {
        late.delete(&t, &key(i)).unwrap();
    }
    // A third changes one byte in the middle of values: logged as patches (RECOVERY.md R3),
    // undone on the value the loser left, past the loser's own record locks.
    let mut patcher = db.begin();
    for i in (1600..1800).step_by(2) {
        if let Some(mut v) = oracle.get(&key(i)).cloned() {
            let mid = v.len() / 2;
            v[mid] ^= 0xFF;
            patcher.put(&t, &key(i), &v).unwrap();
        }
    }
    // Make the losers' records durable (a commit of another transaction flushes the log).
    write(&db, 2000, 2100, 0, &mut oracle);
    std::mem::forget(early);
    std::mem::forget(late);
    std::mem::forget(patcher);
    drop(t);
    crash(fs, db);
    oracle
}

/// R22 without record locks: transactions unfinished at the crash are rolled back at open;
/// none of their changes is visible, and the committed ones are.
#[test]
fn r22_without_locks_losers_are_rolled_back_at_open() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let oracle = crashed_with_losers(&fs, path);
    let db = builder(&fs, RestartMode::Instant)
        .lab(|l| l.locking(false).background_redo(false))
        .open(path)
        .unwrap();
    let stats = db.restart_stats();
    assert!(stats.instant && stats.losers == 3, "{stats:?}");
    assert!(stats.compensations >= 500, "{stats:?}");
    assert_eq!(db.redo_progress().unwrap().losers, 0);
    check(&db, &oracle);
    db.close().unwrap();
}

/// R22 with record locks (the default): open locks the losers' keys and returns; a background
/// thread rolls them back. A transaction that reads or writes one of those keys waits (or dies
/// and retries) until then, and so reads the committed value; in the end nothing of the losers
/// is visible.
#[test]
fn r22_with_locks_losers_are_rolled_back_in_the_background() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = crashed_with_losers(&fs, path);
    let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
    let stats = db.restart_stats();
    assert!(stats.instant && stats.losers == 3, "{stats:?}");
    assert_eq!(stats.compensations, 0, "nothing rolled back during open: {stats:?}");
    let t = db.tree("t").unwrap();
    // Keys both losers wrote (every fifth, and the ones after), read and rewritten in
    // transactions while the rollback runs.
    for i in (0..1500).step_by(50) {
        let (a, b) = (key(i), key(i + 1));
        let seen = db
            .transact(|tx| {
                let seen = (tx.get(&t, &a)?, tx.get(&t, &b)?);
                tx.put(&t, &b, b"after restart")?;
                Ok(seen)
            })
            .unwrap();
        assert_eq!(seen, (oracle.get(&a).cloned(), oracle.get(&b).cloned()), "key {i}: the committed values");
        oracle.insert(b, b"after restart".to_vec());
    }
    drop(t);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.redo_progress().unwrap().losers > 0 {
        assert!(Instant::now() < deadline, "the rollback did not finish");
        std::thread::sleep(Duration::from_millis(2));
    }
    check(&db, &oracle);
    db.close().unwrap();
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    assert_eq!(db.restart_stats().losers, 0, "the rollback ended every loser");
    check(&db, &oracle);
    db.close().unwrap();
}

/// R22: the locks `open` takes for the losers never wait for each other. A loser's delete
/// locks the key closing its gap too, looked up in the tree as restart finds it; two losers
/// did not conflict live, but that look-up could name a key another loser holds:
/// - a value replaced where the old or new value is large is logged as the key's delete and
///   insert (btree T22), a replace that locked only its key live, so the key after it may be
///   another loser's;
/// - an insert into a gap no range read guards takes no gap lock (LOCKS.md K15), so another
///   loser may have inserted into the gap a delete had locked the closing key of.
///
/// `open` then waited for itself until the lock wait timed out and failed. Now a closing key
/// another loser holds stays locked by that loser, whose locks, like every loser's, are let go
/// only once the whole background rollback has ended; a scan started at once still sees
/// exactly the committed records.
#[test]
fn r22_losers_whose_restart_locks_overlap_open_at_once() {
    for case in ["a large value replaced before another loser's key", "an insert into a deleted key's gap"] {
        let fs = fault_fs();
        let path = Path::new("/d/db");
        let db = builder(&fs, RestartMode::Instant).create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        let mut oracle = Oracle::new();
        for i in 0..40 {
            let v = if i == 10 { vec![7; 9000] } else { value(i, 0) };
            t.upsert(&key(i * 2), &v).unwrap();
            oracle.insert(key(i * 2), v);
        }
        let mut first = db.begin();
        let mut second = db.begin();
        if case.starts_with("a large") {
            first.put(&t, &key(20), &[8; 100]).unwrap();
            second.put(&t, &key(22), b"next key").unwrap();
        } else {
            assert!(first.delete(&t, &key(30)).unwrap());
            second.insert(&t, &key(31), b"into the gap").unwrap();
        }
        db.transact(|tx| tx.put(&t, b"z", b"makes the losers' records durable")).unwrap();
        oracle.insert(b"z".to_vec(), b"makes the losers' records durable".to_vec());
        std::mem::forget(first);
        std::mem::forget(second);
        drop(t);
        db.archive_log().unwrap();
        crash(&fs, db);
        let started = Instant::now();
        let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
        let opened = started.elapsed();
        assert!(opened < Duration::from_secs(5), "{case}: open took {opened:?}");
        assert_eq!(db.restart_stats().losers, 2, "{case}");
        check(&db, &oracle);
        db.close().unwrap();
    }
}

/// R22, K21: right after an instant restart, while the background rollback of the losers runs,
/// a read-only transaction and a plain range read still read at a snapshot: they wait for the
/// rollback to end and see the total of transfers that commit beside them whole. Through the
/// gate they read each key as committed when they reached it, and saw half of a transfer.
#[test]
fn r22_k21_snapshots_right_after_an_instant_restart_see_transfers_whole() {
    const ACCOUNTS: u32 = 400;
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let db = builder(&fs, RestartMode::Instant).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    let amount = |v: &[u8]| u64::from_be_bytes(v[..8].try_into().unwrap());
    db.transact(|tx| (0..ACCOUNTS).try_for_each(|i| tx.insert(&t, &key(i), &100u64.to_be_bytes()))).unwrap();
    // Losers that changed every account and many other keys: a rollback that takes a while.
    let mut losers = Vec::new();
    for l in 0..4u32 {
        let mut tx = db.begin();
        for i in (l..ACCOUNTS).step_by(4) {
            tx.put(&t, &key(i), &5000u64.to_be_bytes()).unwrap();
        }
        for i in 0..3000 {
            tx.insert(&t, format!("loser{l}-{i:05}").as_bytes(), &[1; 40]).unwrap();
        }
        losers.push(tx);
    }
    db.transact(|tx| tx.put(&t, b"~", b"makes the losers' records durable")).unwrap();
    losers.into_iter().for_each(std::mem::forget);
    drop(t);
    db.archive_log().unwrap();
    crash(&fs, db);

    let db = Arc::new(builder(&fs, RestartMode::Instant).open(path).unwrap());
    let t = db.tree("t").unwrap();
    let total = u64::from(ACCOUNTS) * 100;
    let (db2, t2) = (Arc::clone(&db), t.clone());
    let mover = std::thread::spawn(move || {
        for n in 0..300u32 {
            let (i, j) = (n * 7 % ACCOUNTS, (n * 13 + 1) % ACCOUNTS);
            if i == j {
                continue;
            }
            db2.transact(|tx| {
                let a = amount(&tx.get(&t2, &key(i))?.unwrap());
                let b = amount(&tx.get(&t2, &key(j))?.unwrap());
                if a > 0 {
                    tx.put(&t2, &key(i), &(a - 1).to_be_bytes())?;
                    tx.put(&t2, &key(j), &(b + 1).to_be_bytes())?;
                }
                Ok(())
            })
            .unwrap();
        }
    });
    let accounts = |(k, _): &(Vec<u8>, Vec<u8>)| k.starts_with(b"key");
    for round in 0..50 {
        let read = db.begin_read();
        let seen: u64 = read
            .range(&t, Unbounded, Unbounded)
            .map(Result::unwrap)
            .filter(accounts)
            .map(|(_, v)| amount(&v))
            .sum();
        assert_eq!(seen, total, "round {round}: a read-only transaction's total");
        drop(read);
        let plain: u64 =
            t.range(Unbounded, Unbounded).map(Result::unwrap).filter(accounts).map(|(_, v)| amount(&v)).sum();
        assert_eq!(plain, total, "round {round}: a plain range's total");
    }
    mover.join().unwrap();
    assert_eq!(t.scan_prefix(b"loser").count(), 0, "a loser's insert survived");
    drop(t);
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
}

/// R22 with record locks: a full scan that starts as soon as `open` returns, while the
/// background rollback runs, returns exactly the committed records. A key a loser deleted is
/// absent until the rollback puts it back, so the scan must wait at the gap's closing key,
/// which the loser holds as its delete did (K15), instead of passing over the gap.
#[test]
fn r22_a_scan_during_the_background_rollback_waits_for_the_keys_losers_deleted() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let oracle = crashed_with_losers(&fs, path);
    let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
    assert_eq!(db.restart_stats().compensations, 0, "nothing rolled back during open");
    check(&db, &oracle);
    db.close().unwrap();
}

/// R22: `Tree::verify` run as soon as `open` returns waits for the background rollback, whose
/// compensations (and the adoptions and splits they cause) change the tree: a check racing them
/// could read a parent before an adoption and its child after it, and report fences that do
/// not chain. It returns once no loser is left, and finds the tree valid.
#[test]
fn r22_verify_waits_for_the_background_rollback() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let oracle = crashed_with_losers(&fs, path);
    let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
    assert_eq!(db.restart_stats().losers, 3);
    let t = db.tree("t").unwrap();
    t.verify().unwrap();
    assert_eq!(db.redo_progress().unwrap().losers, 0, "verify returned before the rollback ended");
    drop(t);
    check(&db, &oracle);
    db.close().unwrap();
}

/// R22: a second crash while pages are still pending — after some were redone on fetch and
/// written back, and new commits changed some of them — restarts from the same checkpoint and
/// loses nothing; so does a third, classical, restart.
#[test]
fn r22_a_crash_before_the_redo_ends_loses_nothing() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = crashed_database(&fs, path);
    // No background redo: only the pages the reads and writes below load are redone.
    let db = builder(&fs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(path).unwrap();
    let t = db.tree("t").unwrap();
    for i in (0..3000).step_by(97) {
        assert_eq!(t.get(&key(i)).unwrap(), oracle.get(&key(i)).cloned());
    }
    drop(t);
    write(&db, 500, 700, 20, &mut oracle);
    db.pool().sweep_evict(16).unwrap();
    crash(&fs, db);

    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    assert!(db.restart_stats().instant);
    check(&db, &oracle);
    write(&db, 2500, 2600, 21, &mut oracle);
    crash(&fs, db);

    let db = builder(&fs, RestartMode::Classical).open(path).unwrap();
    check(&db, &oracle);
    db.close().unwrap();
}

/// R22: instant restart needs the archive: `create` and `open` refuse it without, before
/// anything is written.
#[test]
fn r22_instant_restart_without_an_archive_is_refused() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let refused = builder(&fs, RestartMode::Instant).log_archive(false).create(path);
    assert!(
        matches!(refused, Err(Error::Log(LogError::BadConfig { ref reason })) if reason.contains("log_archive")),
        "{refused:?}"
    );
    assert!(!fs.exists(path), "nothing was written");
    let db = builder(&fs, RestartMode::Classical).log_archive(false).create(path).unwrap();
    db.close().unwrap();
    let refused = builder(&fs, RestartMode::Instant).log_archive(false).open(path);
    assert!(matches!(refused, Err(Error::Log(LogError::BadConfig { .. }))), "{refused:?}");
}

/// R22: a database whose archive began after the checkpoint's redo LSN (the archive was turned
/// on later) restarts classically, and loses nothing.
#[test]
fn r22_without_a_usable_archive_restart_is_classical() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let mut oracle = Oracle::new();
    let db = builder(&fs, RestartMode::Classical).log_archive(false).create(path).unwrap();
    write(&db, 0, 1000, 0, &mut oracle);
    crash(&fs, db);
    // The archive starts with this open; the checkpoint restart starts from is older.
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    assert!(!db.restart_stats().instant, "no archive state yet: classical");
    write(&db, 0, 1000, 1, &mut oracle);
    crash(&fs, db);
    // Now the archive holds state and reaches back to the checkpoint the last open took.
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    assert!(db.restart_stats().instant, "{:?}", db.restart_stats());
    check(&db, &oracle);
    db.close().unwrap();
}

/// Up to `n` indices spread over `1..=total`, first and last included.
fn spread(total: u64, n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|i| 1 + i * total.saturating_sub(1) / (n - 1).max(1)).collect();
    v.dedup();
    v.retain(|&i| i >= 1 && i <= total);
    v
}

/// Instant open, reads of every record (redo on fetch) and close (which redoes the rest in the
/// file and takes the checkpoint that ends restart), on `vfs`: the first error, if any.
fn open_read_close(vfs: Arc<dyn Vfs>, oracle: &Oracle) -> Result<(), String> {
    let db = builder_on(vfs, RestartMode::Instant).lab(|l| l.background_redo(false)).open(Path::new(DB));
    let db = db.map_err(|e| format!("open: {e}"))?;
    let t = db.tree("t").map_err(|e| e.to_string())?;
    for (k, v) in oracle.iter().step_by(3) {
        match t.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "a read that succeeds reads the committed value"),
            Err(e) => return Err(format!("get: {e}")),
        }
    }
    drop(t);
    db.close().map_err(|e| format!("close: {e}"))
}

/// R22 under faults: a failure (EIO, or ENOSPC for writes) at any I/O call of an instant
/// restart — archiving the tail at open, syncing and extending the file, the losers' rollback,
/// the redo on fetch and its write-back, the redo in the file and the checkpoint that ends
/// restart at close — is a typed error; after a power loss the database restarts (instantly
/// again) to exactly the committed state.
#[test]
fn r22_a_fault_at_any_io_call_of_instant_restart_loses_nothing() {
    let path = Path::new(DB);
    let scenario = || {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/crash")).unwrap();
        let oracle = crashed_database(&fs, path);
        (fs, oracle)
    };
    let (fs, oracle) = scenario();
    let sites = Sites::new(fs.clone());
    open_read_close(Arc::new(sites.clone()), &oracle).unwrap();
    let counts: Vec<((Op, Class), u64)> = sites
        .counts()
        .into_iter()
        .filter(|((op, _), _)| {
            matches!(op, Op::Write | Op::Sync | Op::SetLen | Op::Rename | Op::SyncDir | Op::Read)
        })
        .collect();
    assert!(
        counts.iter().any(|((op, class), _)| *op == Op::Write && *class == Class::Archive),
        "the open archived the log's tail: {counts:?}"
    );
    let (mut runs, mut failed) = (0, 0);
    for &((op, class), total) in &counts {
        let faults: &[Fault] = if op == Op::Write { &[Fault::Eio, Fault::Enospc] } else { &[Fault::Eio] };
        for &fault in faults {
            for nth in spread(total, 3) {
                let (fs, oracle) = scenario();
                let sites = Sites::new(fs.clone());
                sites.arm(Site { op, class, nth, fault });
                let result = open_read_close(Arc::new(sites.clone()), &oracle);
                let fired = sites.fired();
                sites.disarm();
                if let Err(e) = &result {
                    assert!(fired, "{op:?} {class:?} #{nth}: failed on its own: {e}");
                    failed += 1;
                }
                fs.crash(CrashMode::DropUnsynced);
                let db = builder(&fs, RestartMode::Instant).open(path).unwrap_or_else(|e| {
                    panic!("{op:?} {class:?} #{nth} {fault:?}: restart after the fault: {e}")
                });
                check(&db, &oracle);
                db.close().unwrap();
                runs += 1;
            }
        }
    }
    assert!(
        runs >= 20 && failed >= 10,
        "instant restart's I/O calls were exercised ({runs} runs, {failed} failed)"
    );
}

/// R22, R5a, LOCKS.md K9a: instant restart's background rollback that fails on the log keeps
/// its losers' locks until the next restart, as a transaction's failed rollback does, and ends
/// the waits for them at once with `Error::RollbackFailed`: a transaction waiting for a loser's
/// key used to wait out the lock timeout.
#[test]
fn r22_r5a_a_background_rollback_that_fails_ends_the_waits_for_its_losers_keys() {
    let fs = fault_fs();
    let path = Path::new("/d/db");
    let db = builder(&fs, RestartMode::Instant).create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    t.upsert(b"held", b"committed").unwrap();
    let mut loser = db.begin();
    // Changed first, so rolled back last: after the log has failed.
    loser.put(&t, b"held", b"uncommitted").unwrap();
    // Enough changes that the rollback outlasts the flusher's next round (5 ms).
    for i in 0..20_000 {
        loser.put(&t, &key(i), &value(i, 0)).unwrap();
    }
    db.transact(|tx| tx.put(&t, b"z", b"makes the loser's records durable")).unwrap();
    std::mem::forget(loser);
    drop(t);
    db.archive_log().unwrap();
    crash(&fs, db);
    // Every write of the log fails from now on: the rollback's records are refused once the
    // flusher has met the first failure.
    fs.fail_next(swizzledb_io::FaultRule::new(Op::Write, Fault::Eio).on_path(".log").repeating());
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    assert_eq!(db.restart_stats().losers, 1);
    let t = db.tree("t").unwrap();
    let started = Instant::now();
    let read = db.begin().get(&t, b"held");
    let waited = started.elapsed();
    assert!(matches!(read, Err(Error::RollbackFailed { .. })), "the waiting read ended: {read:?}");
    assert!(waited < Duration::from_secs(5), "the waiting read waited {waited:?} (the lock timeout is 10 s)");
    drop(t);
    drop(db);
    fs.clear_faults();
    let db = builder(&fs, RestartMode::Instant).open(path).unwrap();
    let t = db.tree("t").unwrap();
    assert_eq!(
        t.get(b"held").unwrap().as_deref(),
        Some(&b"committed"[..]),
        "rolled back at the next restart"
    );
    assert_eq!(t.get(&key(0)).unwrap(), None, "rolled back at the next restart");
}

//! Snapshot reads (LOCKS.md K17–K21): a read outside a transaction never waits for a writer and
//! returns the last committed value; a read-only transaction sees the database as committed when
//! it began, never waits and never makes a writer wait; the versions behind them go when no
//! snapshot needs them, and past their memory bound the oldest snapshot ends with a typed error.

use std::ops::Bound::Unbounded;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use swizzledb::{Database, Error, Tree};

use crate::common;

/// A watchdog for anything that must not wait: a read that waited for the open transaction
/// would never return, since the test keeps it open until the read is back.
const DEADLINE: Duration = Duration::from_secs(20);

fn db(dir: &std::path::Path) -> (Arc<Database>, Tree) {
    db_with(dir, |b| b)
}

fn db_with(
    dir: &std::path::Path,
    tune: impl FnOnce(swizzledb::Builder) -> swizzledb::Builder,
) -> (Arc<Database>, Tree) {
    let db = tune(Database::builder().page_size(4096).pool_bytes(256 * 4096))
        .create(dir.join("snap.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    (Arc::new(db), t)
}

fn key(k: u32) -> Vec<u8> {
    format!("k{k:06}").into_bytes()
}

/// Runs `f` on another thread; the answer must come back while the caller still holds whatever
/// `f` would have to wait for.
fn on_other_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE).expect("the read waited for the open transaction")
}

#[test]
fn k18_a_get_returns_the_committed_value_of_a_key_an_open_transaction_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    t.insert(b"upd", b"old").unwrap();
    t.insert(b"del", b"gone-later").unwrap();
    for commit in [false, true] {
        let mut tx = db.begin();
        tx.put(&t, b"upd", b"new").unwrap();
        tx.put(&t, b"upd", b"newer").unwrap();
        assert!(tx.delete(&t, b"del").unwrap());
        tx.insert(&t, b"ins", b"fresh").unwrap();
        let t2 = t.clone();
        let seen = on_other_thread(move || [&b"upd"[..], b"del", b"ins"].map(|k| t2.get(k).unwrap()));
        assert_eq!(seen[0].as_deref(), Some(&b"old"[..]), "the update's committed value");
        assert_eq!(seen[1].as_deref(), Some(&b"gone-later"[..]), "the deleted key is still there");
        assert_eq!(seen[2], None, "the inserted key is not there yet");
        // The same thread reads the committed value too, at once (it would wait for itself).
        assert_eq!(t.get(b"upd").unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(t.get_with(b"del", |v| v.map(<[u8]>::len)).unwrap(), Some(10));
        // The transaction sees its own writes.
        assert_eq!(tx.get(&t, b"upd").unwrap().as_deref(), Some(&b"newer"[..]));
        if commit {
            tx.commit().unwrap();
            assert_eq!(t.get(b"upd").unwrap().as_deref(), Some(&b"newer"[..]));
            assert_eq!(t.get(b"del").unwrap(), None);
            assert_eq!(t.get(b"ins").unwrap().as_deref(), Some(&b"fresh"[..]));
        } else {
            tx.abort().unwrap();
            assert_eq!(t.get(b"upd").unwrap().as_deref(), Some(&b"old"[..]));
            assert_eq!(t.get(b"del").unwrap().as_deref(), Some(&b"gone-later"[..]));
            assert_eq!(t.get(b"ins").unwrap(), None);
        }
    }
    // K19: no snapshot runs and no writer is open: no version is kept.
    let stats = db.version_stats().unwrap();
    assert_eq!(stats.bytes, 0, "{stats:?}");
    assert!(stats.made >= 6, "{stats:?}");
}

#[test]
fn k18_a_read_transaction_sees_its_snapshot_and_a_writer_does_not_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    for k in 0..50 {
        t.insert(&key(k), b"v0").unwrap();
    }
    let snap = db.begin_read();
    assert_eq!(snap.get(&t, &key(7)).unwrap().as_deref(), Some(&b"v0"[..]));
    // The snapshot read k7 and is still open: plain writes and transactions go ahead at once.
    let t2 = t.clone();
    on_other_thread(move || t2.upsert(&key(7), b"v1").unwrap());
    t.upsert(&key(8), b"v1").unwrap();
    t.delete(&key(9)).unwrap();
    t.insert(&key(100), b"v1").unwrap();
    db.transact(|tx| {
        tx.put(&t, &key(10), b"v1")?;
        tx.put(&t, &key(10), b"v2")?;
        Ok(())
    })
    .unwrap();
    // A transaction left open: its change is seen by nobody else.
    let mut open = db.begin();
    open.put(&t, &key(11), b"uncommitted").unwrap();

    let later = db.begin_read();
    for k in [7, 8, 9, 10, 11, 12, 100] {
        let old = snap.get(&t, &key(k)).unwrap();
        let want_old: Option<&[u8]> = if k == 100 { None } else { Some(b"v0") };
        assert_eq!(old.as_deref(), want_old, "the first snapshot at {k}");
        let new = later.get(&t, &key(k)).unwrap();
        let want_new: Option<&[u8]> = match k {
            7 | 8 | 100 => Some(b"v1"),
            9 => None,
            10 => Some(b"v2"),
            _ => Some(b"v0"),
        };
        assert_eq!(new.as_deref(), want_new, "the second snapshot at {k}");
    }
    open.commit().unwrap();
    assert_eq!(snap.get(&t, &key(11)).unwrap().as_deref(), Some(&b"v0"[..]), "committed after the snapshot");
    assert_eq!(later.get(&t, &key(11)).unwrap().as_deref(), Some(&b"v0"[..]));
    assert_eq!(db.begin_read().get(&t, &key(11)).unwrap().as_deref(), Some(&b"uncommitted"[..]));
    assert!(db.version_stats().unwrap().bytes > 0, "the open snapshots keep their versions");
    drop((snap, later));
    t.upsert(b"z", b"1").unwrap(); // a finish collects
    assert_eq!(db.version_stats().unwrap().bytes, 0, "no snapshot left: no version kept");
}

/// K21: a handle's write to a key whose versions an ended transaction left (kept for an older
/// snapshot) is seen at once by every snapshot: by one taken after it and by the older one. A
/// version left by a transaction rolled back, or by one committed after the older snapshot,
/// used to stay the key's newest, and readers took its before-image for the key's value: the
/// write stayed hidden, and a deleted key came back.
#[test]
fn k21_an_unlogged_handles_write_hides_no_version_of_an_ended_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b.logging(false));
    let v = |b: &[u8]| Some(b.to_vec());
    for k in 0..6 {
        t.upsert(&key(k), b"v0").unwrap();
    }
    let old = db.begin_read();
    let mut rolled_back = db.begin();
    for k in [0, 1, 2] {
        rolled_back.put(&t, &key(k), b"rolled back").unwrap();
    }
    rolled_back.abort().unwrap();
    db.transact(|tx| {
        for k in [3, 4, 5] {
            tx.put(&t, &key(k), b"v1")?;
        }
        Ok(())
    })
    .unwrap();
    assert!(db.version_stats().unwrap().bytes > 0, "the older snapshot keeps the versions");
    t.upsert(&key(0), b"upsert").unwrap();
    assert!(t.delete(&key(1)).unwrap());
    assert_eq!(t.compare_and_swap(&key(2), Some(b"v0"), Some(b"swapped")).unwrap(), Ok(()));
    t.upsert(&key(3), b"upsert").unwrap();
    assert!(t.delete(&key(4)).unwrap());
    let want = [v(b"upsert"), None, v(b"swapped"), v(b"upsert"), None, v(b"v1")];
    let new = db.begin_read();
    let snapshot_txn = db.begin_snapshot();
    for (k, want) in want.iter().enumerate() {
        let k = key(k as u32);
        assert_eq!(&new.get(&t, &k).unwrap(), want, "a later snapshot, key {k:?}");
        assert_eq!(&snapshot_txn.get(&t, &k).unwrap(), want, "a snapshot transaction, key {k:?}");
    }
    let scanned: Vec<_> =
        new.range(&t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(|r| r.unwrap()).collect();
    let expected: Vec<_> =
        want.iter().enumerate().filter_map(|(k, w)| w.clone().map(|w| (key(k as u32), w))).collect();
    assert_eq!(scanned, expected, "a later snapshot's scan");
    let rev: Vec<_> = snapshot_txn
        .range_rev(&t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(rev, expected.iter().rev().cloned().collect::<Vec<_>>(), "a snapshot transaction's scan");
    snapshot_txn.abort().unwrap();
    // The older snapshot sees the handle's writes too; of the transactions it saw neither.
    let older: Vec<_> = (0..6).map(|k| old.get(&t, &key(k)).unwrap()).collect();
    assert_eq!(
        older,
        [v(b"upsert"), None, v(b"swapped"), v(b"upsert"), None, v(b"v0")],
        "the older snapshot"
    );
}

/// Transfers between accounts keep the total; snapshot readers, running beside them, must
/// always add up to it, and plain reads must only ever return values some commit wrote.
#[test]
fn k18_snapshots_taken_under_concurrent_transfers_always_see_the_total() {
    transfers_under_snapshots(true);
}

/// K18: plain point reads, which register no snapshot when the key's writer settles the
/// value, never return a change that is rolled back, nor a value older than one the same thread
/// read before (each key's committed values count up). Writers commit counted values and
/// write a poison value they roll back, on a few hot keys, while readers read them.
#[test]
fn k18_plain_reads_never_see_a_rolled_back_change_nor_go_back_in_time() {
    const KEYS: u32 = 8;
    const POISON: &[u8] = b"rolled back";
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b.commit_mode(swizzledb::CommitMode::Async));
    db.transact(|tx| {
        for k in 0..KEYS {
            tx.insert(&t, &key(k), &0u64.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (commits, rollbacks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (db, t, stop) = (Arc::clone(&db), t.clone(), Arc::clone(&stop));
            let (commits, rollbacks) = (Arc::clone(&commits), Arc::clone(&rollbacks));
            std::thread::spawn(move || {
                let mut x = 0x2545_F491_4F6C_DD1Du64 ^ w;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = key((x % u64::from(KEYS)) as u32);
                    let poison = (x >> 32).is_multiple_of(3);
                    let r = db.transact(|tx| {
                        if poison {
                            tx.put(&t, &k, POISON)?;
                            return Err(Error::Aborted("on purpose".into()));
                        }
                        let n = u64::from_be_bytes(tx.get(&t, &k)?.expect("a key").try_into().unwrap());
                        tx.put(&t, &k, &(n + 1).to_be_bytes())?;
                        Ok(())
                    });
                    match r {
                        Ok(()) => commits.fetch_add(1, Ordering::Relaxed),
                        Err(Error::Aborted(_)) => rollbacks.fetch_add(1, Ordering::Relaxed),
                        Err(e) => panic!("{e}"),
                    };
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, stop) = (t.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut last = [0u64; KEYS as usize];
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for k in 0..KEYS {
                        let v = t.get(&key(k)).unwrap().expect("a key is never absent");
                        assert_ne!(v, POISON, "a plain read returned a change that was rolled back");
                        let n = u64::from_be_bytes(v.try_into().unwrap());
                        assert!(n >= last[k as usize], "key {k}: read {n} after {}", last[k as usize]);
                        last[k as usize] = n;
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let (commits, rollbacks) = (commits.load(Ordering::Relaxed), rollbacks.load(Ordering::Relaxed));
    assert!(
        reads > 100 && commits > 10 && rollbacks > 10,
        "{reads} reads, {commits} commits, {rollbacks} rollbacks"
    );
    let total: u64 =
        (0..KEYS).map(|k| u64::from_be_bytes(t.get(&key(k)).unwrap().unwrap().try_into().unwrap())).sum();
    assert_eq!(total, commits, "every committed increment is there, and nothing else");
}

/// K21: the same on an unlogged database with record locks, whose read-only transactions
/// isolate from transactions as a logged one's do (its plain reads read the tree as it is).
#[test]
fn k21_unlogged_snapshots_taken_under_concurrent_transfers_always_see_the_total() {
    transfers_under_snapshots(false);
}

/// Funds `accounts` accounts of `t` with `start` each, in one transaction.
fn fund(db: &Database, t: &Tree, accounts: u32, start: u64) {
    db.transact(|tx| {
        for a in 0..accounts {
            tx.insert(t, &key(a), &start.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
}

/// `n` threads that move random amounts between the `accounts` accounts of `t`, each move a
/// transaction (one in sixteen rolled back on purpose, none that would overdraw), until
/// `stop`; each returns how many moves it committed.
fn transfer_writers(
    db: &Arc<Database>,
    t: &Tree,
    n: u64,
    accounts: u32,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<u64>> {
    (0..n)
        .map(|w| {
            let (db, t, stop) = (Arc::clone(db), t.clone(), Arc::clone(stop));
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ w;
                let mut committed = 0;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (from, to) =
                        ((x % u64::from(accounts)) as u32, ((x >> 20) % u64::from(accounts)) as u32);
                    if from == to {
                        continue;
                    }
                    let amount = (x >> 40) % 50;
                    let abort = (x >> 60) == 0;
                    let r = db.transact(|tx| {
                        let get = |tx: &swizzledb::Transaction<'_>, k: u32| -> Result<u64, Error> {
                            let v = tx.get(&t, &key(k))?.expect("an account");
                            Ok(u64::from_be_bytes(v.try_into().unwrap()))
                        };
                        let (a, b) = (get(tx, from)?, get(tx, to)?);
                        if a < amount {
                            return Ok(false);
                        }
                        tx.put(&t, &key(from), &(a - amount).to_be_bytes())?;
                        tx.put(&t, &key(to), &(b + amount).to_be_bytes())?;
                        if abort {
                            return Err(Error::Aborted("on purpose".into()));
                        }
                        Ok(true)
                    });
                    match r {
                        Ok(moved) => committed += u64::from(moved),
                        Err(Error::Aborted(_)) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                committed
            })
        })
        .collect()
}

fn transfers_under_snapshots(logging: bool) {
    const ACCOUNTS: u32 = 40;
    const START: u64 = 1000;
    const WRITERS: u64 = 2;
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b.logging(logging).commit_mode(swizzledb::CommitMode::Async));
    fund(&db, &t, ACCOUNTS, START);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = transfer_writers(&db, &t, WRITERS, ACCOUNTS, &stop);
    let started = Instant::now();
    let mut snapshots = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        let snap = db.begin_read();
        let total: u64 = (0..ACCOUNTS)
            .map(|a| u64::from_be_bytes(snap.get(&t, &key(a)).unwrap().unwrap().try_into().unwrap()))
            .sum();
        assert_eq!(total, START * u64::from(ACCOUNTS), "snapshot {snapshots} saw a partial transfer");
        // K22: a scan, plain or in the read-only transaction, reads one snapshot too.
        let value = |r: Result<(Vec<u8>, Vec<u8>), swizzledb::TreeError>| {
            u64::from_be_bytes(r.unwrap().1.try_into().unwrap())
        };
        if logging {
            let plain: u64 = t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(value).sum();
            assert_eq!(plain, START * u64::from(ACCOUNTS), "a plain scan saw a partial transfer");
        }
        let rev: u64 =
            snap.range_rev(&t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).map(value).sum();
        assert_eq!(rev, START * u64::from(ACCOUNTS), "a snapshot's reverse scan saw a partial transfer");
        // A plain read never waits and never sees more than the accounts hold in total.
        let one = u64::from_be_bytes(t.get(&key(snapshots % ACCOUNTS)).unwrap().unwrap().try_into().unwrap());
        assert!(one <= START * u64::from(ACCOUNTS));
        snapshots += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let transfers: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(snapshots > 10 && transfers > 10, "{snapshots} snapshots, {transfers} transfers");
    let total: u64 =
        (0..ACCOUNTS).map(|a| u64::from_be_bytes(t.get(&key(a)).unwrap().unwrap().try_into().unwrap())).sum();
    assert_eq!(total, START * u64::from(ACCOUNTS));
    assert_eq!(db.version_stats().unwrap().bytes, 0);
}

/// K21: an unlogged database with record locks keeps versions for its transactions. A
/// read-only transaction sees what transactions had committed when it began and never an open
/// one's change, without waiting for its locks; snapshot-isolation transactions lose no update.
/// The handles' own writes are no transactions there: every snapshot sees them at once, and
/// plain reads read the tree as it is.
#[test]
fn k21_an_unlogged_database_keeps_versions_for_its_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b.logging(false));
    assert!(db.version_stats().is_some());
    db.transact(|tx| {
        for k in 0..10 {
            tx.put(&t, &key(k), b"v0")?;
        }
        Ok(())
    })
    .unwrap();
    let snap = db.begin_read();
    db.transact(|tx| tx.put(&t, &key(1), b"v1")).unwrap();
    let mut open = db.begin();
    open.put(&t, &key(2), b"open").unwrap();
    assert!(open.delete(&t, &key(3)).unwrap());
    open.insert(&t, &key(20), b"new").unwrap();
    let (db2, t2) = (Arc::clone(&db), t.clone());
    let later = on_other_thread(move || {
        let r = db2.begin_read();
        [1, 2, 3, 20].map(|k| r.get(&t2, &key(k)).unwrap())
    });
    let v = |b: &[u8]| Some(b.to_vec());
    assert_eq!(
        later,
        [v(b"v1"), v(b"v0"), v(b"v0"), None],
        "a later snapshot sees commits, not the open one"
    );
    let seen = [1, 2, 3, 20].map(|k| snap.get(&t, &key(k)).unwrap());
    assert_eq!(seen, [v(b"v0"), v(b"v0"), v(b"v0"), None], "the first snapshot");
    assert_eq!(t.get(&key(2)).unwrap(), v(b"open"), "plain reads of an unlogged database read the tree");
    open.commit().unwrap();
    assert_eq!(snap.get(&t, &key(3)).unwrap(), v(b"v0"), "committed after the snapshot");
    assert_eq!(db.begin_read().get(&t, &key(3)).unwrap(), None);
    t.upsert(&key(4), b"plain").unwrap();
    assert_eq!(snap.get(&t, &key(4)).unwrap(), v(b"plain"), "a handle's write is no transaction");
    drop(snap);

    db.transact(|tx| tx.put(&t, b"n", &0u64.to_be_bytes())).unwrap();
    assert_eq!(common::increment_at_snapshots(&db, &t, 4, 100), 400, "an update was lost");
    db.transact(|tx| tx.put(&t, b"z", b"1")).unwrap();
    assert_eq!(db.version_stats().unwrap().bytes, 0, "no snapshot left: no version kept");
}

/// K25: a read-committed transaction sees at each read what was committed when that read began:
/// a commit between two of its reads shows in the second (the anomaly it allows), an open
/// transaction's changes never, and without a wait; a range read reads at its own start, also
/// across leaves read after a later commit. It keeps no versions: writers that end while it is
/// open leave none behind, where an open `begin_read` makes them keep their before-images.
/// Logged and unlogged alike.
#[test]
fn k25_read_committed_sees_each_commit_at_its_next_read_and_keeps_no_versions() {
    use std::ops::Bound::Unbounded;
    const N: u32 = 2_000;
    let v = |b: &[u8]| Some(b.to_vec());
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_with(dir.path(), |b| b.logging(logging));
        db.transact(|tx| {
            for k in 0..N {
                tx.put(&t, &key(k), b"v0")?;
            }
            Ok(())
        })
        .unwrap();
        let rc = db.begin_read_committed();
        assert_eq!(rc.get(&t, &key(1)).unwrap(), v(b"v0"));
        db.transact(|tx| tx.put(&t, &key(1), b"v1")).unwrap();
        assert_eq!(rc.get(&t, &key(1)).unwrap(), v(b"v1"), "logging {logging}: a commit between two reads");
        assert_eq!(db.version_stats().unwrap().bytes, 0, "logging {logging}: a writer kept versions for it");

        // An open transaction's changes: not seen, not waited for.
        let mut open = db.begin();
        open.put(&t, &key(2), b"open").unwrap();
        assert!(open.delete(&t, &key(3)).unwrap());
        open.insert(&t, &key(N + 5), b"new").unwrap();
        let (db2, t2) = (Arc::clone(&db), t.clone());
        let (points, keys, rev_len) = on_other_thread(move || {
            let rc = db2.begin_read_committed();
            let points = [2, 3, N + 5].map(|k| rc.get(&t2, &key(k)).unwrap());
            let keys: Vec<Vec<u8>> = rc.range(&t2, Unbounded, Unbounded).map(|r| r.unwrap().0).collect();
            let rev_len = rc.range_rev(&t2, Unbounded, Unbounded).count();
            (points, keys, rev_len)
        });
        assert_eq!(points, [v(b"v0"), v(b"v0"), None], "logging {logging}: the open transaction's changes");
        assert_eq!(keys, (0..N).map(key).collect::<Vec<_>>(), "logging {logging}: the scan");
        assert_eq!(rev_len, N as usize);
        open.commit().unwrap();
        assert_eq!([3, N + 5].map(|k| rc.get(&t, &key(k)).unwrap()), [None, v(b"new")], "committed now");

        // A range read reads at its start: a key in a later leaf, committed while the scan is
        // under way, keeps the value it had when the scan began.
        let mut scan = rc.range(&t, Unbounded, Unbounded);
        assert_eq!(scan.next().unwrap().unwrap().0, key(0));
        db.transact(|tx| tx.put(&t, &key(N - 10), b"during")).unwrap();
        let late = scan.find(|r| r.as_ref().unwrap().0 == key(N - 10)).unwrap().unwrap();
        assert_eq!(late.1, b"v0", "logging {logging}: a commit during the range read");
        drop(scan);
        assert_eq!(rc.get(&t, &key(N - 10)).unwrap(), v(b"during"), "and the next read sees it");
        db.transact(|tx| tx.put(&t, &key(6), b"after")).unwrap();
        assert_eq!(
            db.version_stats().unwrap().bytes,
            0,
            "logging {logging}: the scan's versions went with it"
        );

        // Against a snapshot held open: the writer that ends meanwhile keeps its version.
        let snap = db.begin_read();
        db.transact(|tx| tx.put(&t, &key(7), b"kept")).unwrap();
        assert!(db.version_stats().unwrap().bytes > 0, "logging {logging}: begin_read keeps versions");
        assert_eq!(snap.get(&t, &key(7)).unwrap(), v(b"v0"));
        assert_eq!(rc.get(&t, &key(7)).unwrap(), v(b"kept"));
        drop(snap);
        drop(rc);
    }
}

/// K22: the ordered index holds the keys transactions deleted while they had a chain, whatever
/// the transaction did to the key first: a key updated and then deleted, by a committed
/// transaction and by an open one, stays in an older snapshot's scans with its old value, and a
/// key an open transaction inserted and then deleted stays hidden.
#[test]
fn k22_a_key_updated_then_deleted_stays_in_an_older_snapshots_scan() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    for k in ["a", "b", "c", "d"] {
        t.insert(k.as_bytes(), b"old").unwrap();
    }
    let snap = db.begin_read();
    db.transact(|tx| {
        tx.put(&t, b"b", b"new")?;
        assert!(tx.delete(&t, b"b")?);
        Ok(())
    })
    .unwrap();
    let mut open = db.begin();
    open.put(&t, b"c", b"new").unwrap();
    assert!(open.delete(&t, b"c").unwrap());
    open.insert(&t, b"bb", b"brief").unwrap();
    assert!(open.delete(&t, b"bb").unwrap());
    let all = |r: &mut dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), swizzledb::TreeError>>| {
        r.map(|x| x.map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap())))
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    };
    let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    let (lo, hi) = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    let old = vec![kv("a", "old"), kv("b", "old"), kv("c", "old"), kv("d", "old")];
    assert_eq!(all(&mut snap.range(&t, lo, hi)), old, "the older snapshot");
    let mut rev = all(&mut snap.range_rev(&t, lo, hi));
    rev.reverse();
    assert_eq!(rev, old, "the older snapshot, descending");
    // A plain scan now: b's delete committed, c's and bb's did not.
    let now = vec![kv("a", "old"), kv("c", "old"), kv("d", "old")];
    assert_eq!(all(&mut t.range(lo, hi)), now, "a plain scan");
    open.commit().unwrap();
    assert_eq!(all(&mut snap.range(&t, lo, hi)), old, "the older snapshot after the commit");
    assert_eq!(all(&mut t.range(lo, hi)), vec![kv("a", "old"), kv("d", "old")]);
}

#[test]
fn k20_past_the_version_memory_the_oldest_snapshot_ends_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let (db, t) = db_with(dir.path(), |b| b.version_memory(limit));
    t.insert(b"k", b"v0").unwrap();
    let old = db.begin_read();
    assert_eq!(old.get(&t, b"k").unwrap().as_deref(), Some(&b"v0"[..]));
    // Each commit after the snapshot keeps a version of 200 bytes for it.
    for i in 0..2000u32 {
        t.upsert(&key(i), &[7u8; 200]).unwrap();
        let bytes = db.version_stats().unwrap().bytes;
        assert!(bytes <= limit + 1024, "versions grew to {bytes} bytes past the bound {limit}");
    }
    match old.get(&t, b"k") {
        Err(e @ Error::SnapshotTooOld { limit: l }) => {
            assert_eq!(l, limit);
            // The message names the bound and the way out, in one line of single spaces.
            let shown = e.to_string();
            assert!(shown.contains(&limit.to_string()) && shown.contains("version_memory"), "{shown}");
            assert!(!shown.contains("  ") && !shown.contains('\n'), "{shown:?}");
        }
        other => panic!("expected SnapshotTooOld, got {other:?}"),
    }
    assert!(db.version_stats().unwrap().too_old >= 1);
    // Plain reads and new snapshots go on.
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v0"[..]));
    assert_eq!(db.begin_read().get(&t, &key(5)).unwrap().as_deref(), Some(&[7u8; 200][..]));
    drop(old);
}

#[test]
fn k21_without_versions_a_read_transaction_reads_what_the_tree_holds() {
    let dir = tempfile::tempdir().unwrap();
    for logging in [false, true] {
        let db = Database::builder()
            .logging(logging)
            .lab(|lab| lab.locking(false))
            .create(dir.path().join(format!("nv-{logging}.swz")))
            .unwrap();
        assert!(db.version_stats().is_none());
        let t = db.create_tree("t").unwrap();
        t.insert(b"a", b"1").unwrap();
        let snap = db.begin_read();
        t.upsert(b"a", b"2").unwrap();
        assert_eq!(snap.get(&t, b"a").unwrap().as_deref(), Some(&b"2"[..]));
    }
}

fn bound(x: &std::ops::Bound<Vec<u8>>) -> std::ops::Bound<&[u8]> {
    x.as_ref().map(Vec::as_slice)
}

/// K22 against an oracle: while a transaction holds random uncommitted inserts, updates and
/// deletes, every scan outside it — forward, reverse, both ends at once, limited, by prefix —
/// returns exactly the committed records; so does a read-only transaction begun before a batch
/// of commits, after them.
#[test]
fn k22_scans_return_exactly_the_committed_records_an_oracle_holds() {
    use std::collections::BTreeMap;
    use std::ops::Bound::{self, Excluded, Included, Unbounded};
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move |n: u32| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % u64::from(n)) as u32
    };
    for k in (0..600).step_by(3) {
        t.insert(&key(k), format!("c{k}").as_bytes()).unwrap();
        committed.insert(key(k), format!("c{k}").into_bytes());
    }
    let range_of = |m: &BTreeMap<Vec<u8>, Vec<u8>>,
                    lo: &Bound<Vec<u8>>,
                    hi: &Bound<Vec<u8>>|
     -> Vec<(Vec<u8>, Vec<u8>)> {
        m.range::<Vec<u8>, _>((lo.clone(), hi.clone())).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let as_ref = |b: &Bound<Vec<u8>>| -> Bound<Vec<u8>> { b.clone() };
    for round in 0..40 {
        let snapshot = db.begin_read();
        let at_snapshot = committed.clone();
        let mut tx = db.begin();
        let mut pending = committed.clone();
        for _ in 0..rnd(60) + 1 {
            let k = key(rnd(600));
            match rnd(3) {
                0 => {
                    let v = format!("r{round}").into_bytes();
                    tx.put(&t, &k, &v).unwrap();
                    pending.insert(k, v);
                }
                1 => {
                    tx.delete(&t, &k).unwrap();
                    pending.remove(&k);
                }
                _ => {
                    let v = format!("u{round}-{}", rnd(1000)).into_bytes();
                    tx.put(&t, &k, &v).unwrap();
                    pending.insert(k, v);
                }
            }
        }
        for _ in 0..6 {
            let (a, b) = (rnd(620), rnd(620));
            let (a, b) = (a.min(b), a.max(b));
            let lo = match rnd(3) {
                0 => Unbounded,
                1 => Included(key(a)),
                _ => Excluded(key(a)),
            };
            let hi = match rnd(3) {
                0 => Unbounded,
                1 => Included(key(b)),
                _ => Excluded(key(b)),
            };
            if matches!((&lo, &hi), (Excluded(l), Excluded(h)) if l == h) {
                continue;
            }
            let want = range_of(&committed, &lo, &hi);
            let fwd: Vec<_> = t.range(bound(&lo), bound(&hi)).map(Result::unwrap).collect();
            assert_eq!(fwd, want, "round {round}: forward {lo:?}..{hi:?}");
            let mut rev: Vec<_> = t.range_rev(bound(&lo), bound(&hi)).map(Result::unwrap).collect();
            rev.reverse();
            assert_eq!(rev, want, "round {round}: reverse {lo:?}..{hi:?}");
            // Both ends at once, alternating, meet without losing or repeating a record.
            let mut both = t.range(bound(&lo), bound(&hi));
            let (mut front, mut back) = (Vec::new(), Vec::new());
            loop {
                let item = if rnd(2) == 0 {
                    both.next().map(|r| (true, r))
                } else {
                    both.next_back().map(|r| (false, r))
                };
                match item {
                    Some((true, r)) => front.push(r.unwrap()),
                    Some((false, r)) => back.push(r.unwrap()),
                    None => break,
                }
            }
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "round {round}: double-ended {lo:?}..{hi:?}");
            // The same through `next_with` and `next_back_with`, which hand a record the
            // overlay keeps over in place (T27) and a rebuilt one from what was gathered.
            let mut both = t.range(bound(&lo), bound(&hi));
            let (mut front, mut back) = (Vec::new(), Vec::new());
            let copy = |k: &[u8], v: &[u8]| (k.to_vec(), v.to_vec());
            loop {
                let item = if rnd(2) == 0 {
                    both.next_with(copy).map(|r| (true, r))
                } else {
                    both.next_back_with(copy).map(|r| (false, r))
                };
                match item {
                    Some((true, r)) => front.push(r.unwrap()),
                    Some((false, r)) => back.push(r.unwrap()),
                    None => break,
                }
            }
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "round {round}: double-ended, borrowed {lo:?}..{hi:?}");
            let n = rnd(5) as usize;
            let limited: Vec<_> = t.range(bound(&lo), bound(&hi)).limit(n).map(Result::unwrap).collect();
            assert_eq!(limited, want.iter().take(n).cloned().collect::<Vec<_>>(), "round {round}: limit {n}");
            let old: Vec<_> = snapshot.range(&t, bound(&lo), bound(&hi)).map(Result::unwrap).collect();
            assert_eq!(
                old,
                range_of(&at_snapshot, &as_ref(&lo), &as_ref(&hi)),
                "round {round}: read transaction"
            );
            let mut scan = snapshot.range(&t, bound(&lo), bound(&hi));
            let mut old = Vec::new();
            while let Some(r) = scan.next_with(|k, v| (k.to_vec(), v.to_vec())) {
                old.push(r.unwrap());
            }
            assert_eq!(
                old,
                range_of(&at_snapshot, &as_ref(&lo), &as_ref(&hi)),
                "round {round}: read transaction, borrowed"
            );
        }
        let prefix = format!("k0001{}", rnd(10)).into_bytes();
        let want: Vec<_> = committed
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(t.scan_prefix(&prefix).map(Result::unwrap).collect::<Vec<_>>(), want, "prefix");
        assert_eq!(t.len().unwrap(), committed.len());
        assert_eq!(t.first().unwrap(), committed.first_key_value().map(|(k, v)| (k.clone(), v.clone())));
        assert_eq!(t.last().unwrap(), committed.last_key_value().map(|(k, v)| (k.clone(), v.clone())));
        if rnd(3) == 0 {
            tx.abort().unwrap();
        } else {
            tx.commit().unwrap();
            committed = pending;
        }
        // The snapshot from before still reads its own state after the commit.
        let all: Vec<_> = snapshot.range(&t, Unbounded, Unbounded).map(Result::unwrap).collect();
        assert_eq!(all, range_of(&at_snapshot, &Unbounded, &Unbounded), "round {round}: after the commit");
    }
    assert_eq!(db.version_stats().unwrap().bytes, 0);
}

/// K19: a dropped tree's versions go with it. A snapshot older than the drop reads a tree
/// created afterwards, which may reuse the dropped tree's root page, as empty — not as the
/// dropped tree's values from before the snapshot.
#[test]
fn k19_a_new_tree_on_a_dropped_trees_pages_has_none_of_its_versions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = db(dir.path());
    let old = db.create_tree("gone").unwrap();
    for i in 0..20 {
        old.upsert(&key(i), b"before").unwrap();
    }
    let snap = db.begin_read();
    // Committed after the snapshot began: versions with "before" as their before-image.
    for i in 0..20 {
        old.upsert(&key(i), b"after").unwrap();
    }
    drop(old);
    assert!(db.drop_tree("gone").unwrap());
    let new = db.create_tree("gone").unwrap();
    for i in 0..20 {
        new.upsert(&key(i), b"new").unwrap();
    }
    for i in 0..20 {
        assert_eq!(snap.get(&new, &key(i)).unwrap(), None, "key {i}: the old tree's value");
        assert_eq!(new.get(&key(i)).unwrap().as_deref(), Some(&b"new"[..]));
    }
    assert_eq!(snap.range(&new, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).count(), 0);
}

/// K17, K18: a transaction far longer than a scanned undo list (its versions are looked up
/// through the list's index) changes each key several times and deletes some; a read-only
/// transaction older than it and plain reads on other threads see every key's committed value
/// while it runs, after it rolled back, and — the read-only one — after a second such
/// transaction committed, when the versions it needs are in chains.
#[test]
fn k17_a_long_transactions_versions_are_its_first_changes_of_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    const N: u32 = 400;
    for k in 0..N {
        t.insert(&key(k), format!("c{k}").as_bytes()).unwrap();
    }
    let committed = |k: u32| Some(format!("c{k}").into_bytes());
    let reader = db.begin_read();
    for commit in [false, true] {
        let mut tx = db.begin();
        for round in 0..3 {
            for k in 0..N {
                match (k % 4, round) {
                    (0, 2) => assert!(tx.delete(&t, &key(k)).unwrap()),
                    (0, _) | (1 | 2, _) => {
                        tx.put(&t, &key(k), format!("w{round}-{k}").as_bytes()).map(|_| ()).unwrap()
                    }
                    _ => {}
                }
            }
        }
        for k in N..N + 50 {
            tx.insert(&t, &key(k), b"new").unwrap();
        }
        let t2 = t.clone();
        let plain: Vec<Option<Vec<u8>>> =
            on_other_thread(move || (0..N + 50).map(|k| t2.get(&key(k)).unwrap()).collect());
        for k in 0..N + 50 {
            let want = if k < N { committed(k) } else { None };
            assert_eq!(plain[k as usize], want, "a plain read of key {k} while the writer runs");
            assert_eq!(reader.get(&t, &key(k)).unwrap(), want, "the old snapshot, key {k}");
        }
        if commit {
            tx.commit().unwrap();
        } else {
            tx.abort().unwrap();
        }
    }
    // The old snapshot still sees the state before both; a new one sees the commit.
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = reader
        .range(&t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(scanned.len(), N as usize, "the old snapshot's scan");
    for (i, (k, v)) in scanned.iter().enumerate() {
        assert_eq!((k.clone(), Some(v.clone())), (key(i as u32), committed(i as u32)));
    }
    for k in 0..N + 50 {
        let now = match k % 4 {
            _ if k >= N => Some(b"new".to_vec()),
            0 => None,
            1 | 2 => Some(format!("w2-{k}").into_bytes()),
            _ => committed(k),
        };
        assert_eq!(t.get(&key(k)).unwrap(), now, "after the commit, key {k}");
        assert_eq!(reader.get(&t, &key(k)).unwrap(), if k < N { committed(k) } else { None });
    }
    drop(reader);
    assert_eq!(db.version_stats().unwrap().bytes, 0, "no snapshot left: no version kept");
}

/// K19: more snapshots at once than the 128 slots register in the overflow list. Each still
/// reads the value committed before it began, the versions are kept while the oldest of them
/// runs, and they go when the last one ends.
#[test]
fn k19_snapshots_beyond_the_slots_keep_their_versions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b);
    t.insert(b"k", b"v0").unwrap();
    // Every snapshot begins after one more commit: snapshot i sees v{i}.
    let mut snaps = Vec::new();
    for i in 0..300u32 {
        let s = db.begin_read();
        assert_eq!(s.get(&t, b"k").unwrap(), Some(format!("v{i}").into_bytes()));
        snaps.push(s);
        t.upsert(b"k", format!("v{}", i + 1).as_bytes()).unwrap();
    }
    assert!(db.version_stats().unwrap().bytes > 0);
    // Newest first, then oldest first: every one still reads its own value.
    for (i, s) in snaps.iter().enumerate().rev() {
        assert_eq!(s.get(&t, b"k").unwrap(), Some(format!("v{i}").into_bytes()), "snapshot {i}");
    }
    for (i, s) in snaps.iter().enumerate() {
        let mut seen = Vec::new();
        s.range(&t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
            .for_each(|r| seen.push(r.unwrap()));
        assert_eq!(seen, vec![(b"k".to_vec(), format!("v{i}").into_bytes())], "snapshot {i}");
    }
    // Ending the ones in the slots first leaves the overflow list holding the horizon.
    let overflow = snaps.split_off(128);
    drop(snaps);
    t.upsert(b"k", b"after").unwrap();
    assert!(db.version_stats().unwrap().bytes > 0, "the overflow list's snapshots still need versions");
    for (i, s) in overflow.iter().enumerate() {
        assert_eq!(s.get(&t, b"k").unwrap(), Some(format!("v{}", i + 128).into_bytes()));
    }
    drop(overflow);
    t.upsert(b"k", b"last").unwrap();
    assert_eq!(db.version_stats().unwrap().bytes, 0, "no snapshot runs: no version is kept");
    assert_eq!(db.begin_read().get(&t, b"k").unwrap().as_deref(), Some(&b"last"[..]));
}

/// K20 beyond the slots: past the version memory, snapshots in the overflow list are ended too,
/// each read of one fails with `SnapshotTooOld`, and the versions' memory stays bounded.
#[test]
fn k20_snapshots_beyond_the_slots_end_past_the_version_memory() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let (db, t) = db_with(dir.path(), |b| b.version_memory(limit));
    t.insert(b"k", b"v0").unwrap();
    let snaps: Vec<_> = (0..200).map(|_| db.begin_read()).collect();
    for s in &snaps {
        assert_eq!(s.get(&t, b"k").unwrap().as_deref(), Some(&b"v0"[..]));
    }
    for i in 0..2000u32 {
        t.upsert(&key(i), &[7u8; 200]).unwrap();
        let bytes = db.version_stats().unwrap().bytes;
        assert!(bytes <= limit + 1024, "versions grew to {bytes} bytes past the bound {limit}");
    }
    for (i, s) in snaps.iter().enumerate() {
        match s.get(&t, b"k") {
            Err(Error::SnapshotTooOld { limit: l }) => assert_eq!(l, limit),
            other => panic!("snapshot {i}: expected SnapshotTooOld, got {other:?}"),
        }
    }
    drop(snaps);
    assert_eq!(db.begin_read().get(&t, &key(5)).unwrap().as_deref(), Some(&[7u8; 200][..]));
    t.upsert(b"k", b"v1").unwrap();
    assert_eq!(db.version_stats().unwrap().bytes, 0);
}

/// K18, K19 beyond the slots, under concurrent transfers: a reader keeps 200 snapshots open at
/// once (more than the 128 slots: the rest in the overflow list), opening one and ending the
/// oldest as writers commit and roll back transfers. Each snapshot sees the total, and reading
/// it again later, however many commits came between, gives the same balances.
#[test]
fn k19_snapshots_held_beyond_the_slots_under_concurrent_transfers_stay_whole() {
    const ACCOUNTS: u32 = 20;
    const START: u64 = 1000;
    const HELD: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_with(dir.path(), |b| b.commit_mode(swizzledb::CommitMode::Async));
    fund(&db, &t, ACCOUNTS, START);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = transfer_writers(&db, &t, 2, ACCOUNTS, &stop);
    let balances = |s: &swizzledb::ReadTransaction<'_>| -> Vec<u64> {
        (0..ACCOUNTS)
            .map(|a| u64::from_be_bytes(s.get(&t, &key(a)).unwrap().unwrap().try_into().unwrap()))
            .collect()
    };
    let total = START * u64::from(ACCOUNTS);
    let mut held = std::collections::VecDeque::new();
    let started = Instant::now();
    let (mut opened, mut distinct) = (0u64, std::collections::HashSet::new());
    while started.elapsed() < Duration::from_millis(1500) {
        let s = db.begin_read();
        let b = balances(&s);
        assert_eq!(
            b.iter().fold(0u64, |x, y| x.wrapping_add(*y)),
            total,
            "snapshot {opened} saw a partial transfer"
        );
        distinct.insert(b.clone());
        held.push_back((opened, s, b));
        opened += 1;
        // One held snapshot read again, from the middle, and the oldest once past the window.
        let (n, s, b) = &held[(opened as usize * 7919) % held.len()];
        assert_eq!(&balances(s), b, "snapshot {n} changed while held");
        if held.len() > HELD {
            let (n, s, b) = held.pop_front().unwrap();
            assert_eq!(balances(&s), b, "snapshot {n} changed while held");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let committed: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    for (n, s, b) in &held {
        assert_eq!(&balances(s), b, "snapshot {n} changed while held");
    }
    assert!(opened > HELD as u64 && committed > 10, "{opened} snapshots, {committed} transfers");
    assert!(distinct.len() > 1, "the snapshots saw no commit between them");
    drop(held);
    t.upsert(&key(0), &START.to_be_bytes()).unwrap();
    assert_eq!(db.version_stats().unwrap().bytes, 0, "no snapshot runs: no version is kept");
}

/// A database of 4 KiB pages, logged or not, and its tree "t".
fn db_logged(dir: &std::path::Path, logging: bool) -> (Database, Tree) {
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(512 * 4096)
        .logging(logging)
        .create(dir.join(format!("snap-{logging}.swz")))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    (db, t)
}

fn records(
    rows: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), swizzledb::TreeError>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    rows.map(Result::unwrap).collect()
}

/// K18, K22, K19: values long enough for overflow chains, replaced by shorter ones, by other
/// long ones or deleted after a read-only transaction began, read through it as they were —
/// point reads, both scan directions, a prefix scan — logged and unlogged; once it ends, the
/// versions it kept are gone without any further write.
#[test]
fn k18_k22_a_snapshot_sees_large_values_as_they_were_and_its_versions_go_when_it_ends() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_logged(dir.path(), logging);
        let n = (t.max_value_len() / 2).min(100_000);
        let long = |k: u8| vec![k; n + usize::from(k)];
        for k in 0..10u8 {
            db.transact(|tx| tx.put(&t, &[k], &long(k)).map(|_| ())).unwrap();
        }
        let snap = db.begin_read();
        for k in 0..10u8 {
            db.transact(|tx| {
                match k % 3 {
                    0 => tx.delete(&t, &[k])?,
                    1 => tx.put(&t, &[k], &vec![100 + k; n / 3])?,
                    _ => tx.put(&t, &[k], b"short")?,
                };
                Ok(())
            })
            .unwrap();
        }
        let want: Vec<_> = (0..10u8).map(|k| (vec![k], long(k))).collect();
        for (k, v) in &want {
            assert_eq!(snap.get(&t, k).unwrap().as_ref(), Some(v), "logging {logging}: key {k:?}");
        }
        assert!(records(snap.range(&t, Unbounded, Unbounded)) == want, "logging {logging}: the scan");
        let mut rev = want.clone();
        rev.reverse();
        assert!(records(snap.range_rev(&t, Unbounded, Unbounded)) == rev, "logging {logging}: reversed");
        assert!(records(snap.scan_prefix(&t, &[6])) == want[6..7], "logging {logging}: by prefix");
        assert_eq!(t.len().unwrap(), 6, "logging {logging}: the deletes are committed");
        assert!(db.version_stats().unwrap().bytes > 0, "logging {logging}");
        drop(snap);
        let stats = db.version_stats().unwrap();
        assert_eq!(stats.bytes, 0, "logging {logging}: the reader's end frees its versions: {stats:?}");
    }
}

/// K22: a scan reads at the snapshot taken when its iterator is made, not when it is first
/// advanced: `Tree::range`, `range_rev` and `scan_prefix` of a logged database's tree, and a
/// read-only transaction's scan (logged or not), made before a commit, return the records as
/// they were. A tree created after a read-only transaction began is empty to it.
#[test]
fn k22_a_scan_reads_at_the_snapshot_taken_when_its_iterator_was_made() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_logged(dir.path(), logging);
        for k in 0..5u8 {
            t.insert(&[k], b"old").unwrap();
        }
        let snap = db.begin_read();
        let in_snapshot = snap.range(&t, Unbounded, Unbounded);
        let plain = logging
            .then(|| (t.range(Unbounded, Unbounded), t.range_rev(Unbounded, Unbounded), t.scan_prefix(b"")));
        db.transact(|tx| {
            for k in 0..5u8 {
                tx.put(&t, &[k], b"new")?;
            }
            tx.delete(&t, &[2])?;
            tx.put(&t, &[9], b"new")?;
            Ok(())
        })
        .unwrap();
        let later = db.create_tree("later").unwrap();
        db.transact(|tx| tx.put(&later, b"x", b"1").map(|_| ())).unwrap();
        let want: Vec<_> = (0..5u8).map(|k| (vec![k], b"old".to_vec())).collect();
        assert_eq!(records(in_snapshot), want, "logging {logging}: the read-only transaction's scan");
        if let Some((forward, backward, prefix)) = plain {
            assert_eq!(records(forward), want, "a plain scan");
            assert_eq!(records(prefix), want, "a plain prefix scan");
            let mut rev = want.clone();
            rev.reverse();
            assert_eq!(records(backward), rev, "a plain reversed scan");
        }
        assert_eq!(snap.get(&later, b"x").unwrap(), None, "logging {logging}");
        assert_eq!(records(snap.range(&later, Unbounded, Unbounded)), vec![], "logging {logging}");
        assert_eq!(db.begin_read().get(&later, b"x").unwrap().as_deref(), Some(&b"1"[..]));
    }
}

/// K20 with overflow values: one replaced or deleted value longer than the whole version
/// memory ends every snapshot that needs it at once, so the versions kept never pass the bound;
/// their reads (point and scan) fail with `SnapshotTooOld` naming the bound; plain reads, new
/// snapshots and writes go on, and the versions go back to zero.
#[test]
fn k20_a_version_longer_than_the_bound_ends_the_snapshots_that_need_it() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let limit = 64 << 10;
        let db = Database::builder()
            .logging(logging)
            .pool_bytes(1024 * 8192)
            .version_memory(limit)
            .create(dir.path().join("bound.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let long = vec![3u8; 200_000];
        for key in [&b"replaced"[..], b"deleted"] {
            db.transact(|tx| tx.put(&t, key, &long).map(|_| ())).unwrap();
        }
        let (point, scan) = (db.begin_read(), db.begin_read());
        assert_eq!(point.get(&t, b"replaced").unwrap().map(|v| v.len()), Some(long.len()));
        db.transact(|tx| tx.put(&t, b"replaced", b"short").map(|_| ())).unwrap();
        let stats = db.version_stats().unwrap();
        assert!(stats.bytes <= limit, "logging {logging}: {stats:?}");
        match point.get(&t, b"replaced") {
            Err(Error::SnapshotTooOld { limit: l }) => assert_eq!(l, limit, "logging {logging}"),
            other => panic!(
                "logging {logging}: expected SnapshotTooOld, got {:?}",
                other.map(|v| v.map(|v| v.len()))
            ),
        }
        let first = scan.range(&t, Unbounded, Unbounded).next().expect("an item");
        assert!(scan_too_old(&first), "logging {logging}: {first:?}");
        drop((point, scan));
        assert_eq!(db.begin_read().get(&t, b"replaced").unwrap().as_deref(), Some(&b"short"[..]));
        let old = db.begin_read();
        db.transact(|tx| tx.delete(&t, b"deleted").map(|_| ())).unwrap();
        assert!(db.version_stats().unwrap().bytes <= limit, "logging {logging}");
        let items: Vec<_> = old.range(&t, Unbounded, Unbounded).collect();
        assert!(items.iter().any(scan_too_old), "logging {logging}: {}", items.len());
        drop((items, old));
        let stats = db.version_stats().unwrap();
        assert_eq!((stats.bytes, stats.limit), (0, limit), "logging {logging}: {stats:?}");
        assert!(stats.too_old >= 3, "logging {logging}: {stats:?}");
        assert_eq!(records(t.range(Unbounded, Unbounded)), vec![(b"replaced".to_vec(), b"short".to_vec())]);
        t.verify().unwrap();
    }
}

/// K22: a scan's item that says its snapshot was ended for memory.
fn scan_too_old(item: &Result<(Vec<u8>, Vec<u8>), swizzledb::TreeError>) -> bool {
    match item {
        Err(swizzledb::TreeError::Transaction(inner)) => {
            matches!(inner.downcast_ref::<Error>(), Some(Error::SnapshotTooOld { .. }))
        }
        _ => false,
    }
}

/// K20's `VersionStats::made`: one before-image per change of every transaction that ended —
/// committed or rolled back — and none for a transaction that changed nothing, nor, on an
/// unlogged database, for a tree handle's own write (no transaction, K21); on a logged one
/// that write is a transaction of one change.
#[test]
fn k20_version_stats_count_one_version_per_change_of_the_transactions_that_ended() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_logged(dir.path(), logging);
        let made = || db.version_stats().unwrap().made;
        let before = made();
        let mut tx = db.begin();
        tx.put(&t, b"a", b"1").unwrap();
        tx.put(&t, b"a", b"2").unwrap();
        tx.put(&t, b"b", b"2").unwrap();
        assert_eq!(made(), before, "logging {logging}: a running writer's versions are its own");
        tx.commit().unwrap();
        assert_eq!(made(), before + 3, "logging {logging}: three changes committed");
        let mut tx = db.begin();
        tx.put(&t, b"c", b"1").unwrap();
        tx.delete(&t, b"a").unwrap();
        tx.abort().unwrap();
        assert_eq!(made(), before + 5, "logging {logging}: two changes rolled back");
        let tx = db.begin();
        assert_eq!(tx.get(&t, b"a").unwrap().as_deref(), Some(&b"2"[..]));
        tx.commit().unwrap();
        assert_eq!(made(), before + 5, "logging {logging}: a transaction that changed nothing");
        t.upsert(b"z", b"1").unwrap();
        assert_eq!(made(), before + 5 + u64::from(logging), "logging {logging}: a tree handle's write");
        assert_eq!(db.version_stats().unwrap().bytes, 0, "logging {logging}: no snapshot, no version kept");
    }
}

/// The committed states of a stress run, by generation: a writer that read generation `n`
/// (under its key's lock) and committed stores state `n + 1`; a reader that saw generation `n`
/// waits for state `n`, which its writer stores right after its commit.
struct Generations {
    states: std::sync::Mutex<std::collections::BTreeMap<u64, Model>>,
    stored: std::sync::Condvar,
}

type Model = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

impl Generations {
    fn new() -> Generations {
        Generations {
            states: std::sync::Mutex::new([(0, Model::new())].into()),
            stored: std::sync::Condvar::new(),
        }
    }

    fn get(&self, n: u64) -> Model {
        let mut states = self.states.lock().unwrap();
        loop {
            if let Some(state) = states.get(&n) {
                return state.clone();
            }
            states = self.stored.wait(states).unwrap();
        }
    }

    fn store(&self, n: u64, state: Model) {
        self.states.lock().unwrap().insert(n, state);
        self.stored.notify_all();
    }
}

/// Three writers run transactions of random puts (short values and values of overflow chains)
/// and deletes, a fifth of them rolled back, each moving the generation under `gen_key` of
/// `gen_tree` on by one; `read` runs meanwhile on two threads until the writers are done.
fn under_random_commits(
    db: &Database,
    t: &Tree,
    gen_tree: &Tree,
    gen_key: &[u8],
    read: impl Fn(u64, &Generations) + Sync,
) {
    let generations = Generations::new();
    let done = AtomicBool::new(false);
    let long = t.max_value_len().min(20_000);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let generations = &generations;
                s.spawn(move || {
                    let mut rng = common::XorShift(w + 1);
                    for _ in 0..200 {
                        let attempt = db.transact(|tx| {
                            let n =
                                u64::from_be_bytes(tx.get(gen_tree, gen_key)?.unwrap().try_into().unwrap());
                            tx.put(gen_tree, gen_key, &(n + 1).to_be_bytes())?;
                            let mut state = generations.get(n);
                            for _ in 0..1 + rng.next() % 5 {
                                let k = key(u32::try_from(rng.next() % 50).unwrap());
                                match rng.next() % 4 {
                                    0 => {
                                        tx.delete(t, &k)?;
                                        state.remove(&k);
                                    }
                                    1 => {
                                        let v = vec![
                                            u8::try_from(rng.next() % 251).unwrap();
                                            usize::try_from(rng.next()).unwrap() % long
                                        ];
                                        tx.put(t, &k, &v)?;
                                        state.insert(k, v);
                                    }
                                    _ => {
                                        let v = format!("v{}", rng.next() % 1000).into_bytes();
                                        tx.put(t, &k, &v)?;
                                        state.insert(k, v);
                                    }
                                }
                            }
                            if rng.next().is_multiple_of(5) {
                                return Err(Error::Aborted("rolled back on purpose".into()));
                            }
                            Ok((n + 1, state))
                        });
                        match attempt {
                            Ok((n, state)) => generations.store(n, state),
                            Err(Error::Aborted(_)) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        for _ in 0..2 {
            let (read, done, generations) = (&read, &done, &generations);
            s.spawn(move || {
                let mut round = 0;
                while !done.load(Ordering::Relaxed) || round < 10 {
                    read(round, generations);
                    round += 1;
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });
}

/// K18, K22 against an oracle under concurrent commits and rollbacks: a read-only transaction
/// sees exactly one committed state — the one whose generation it reads — in point reads,
/// both scan directions, a scan read from both ends at once, a prefix scan and a bounded
/// range; logged and unlogged, in every buffer mode, with a pool smaller than the data.
#[test]
fn k18_k22_a_read_transaction_under_random_commits_sees_one_committed_state() {
    use std::ops::Bound::{Excluded, Included};
    for mode in
        [swizzledb::PoolMode::Swizzling, swizzledb::PoolMode::Traditional, swizzledb::PoolMode::MainMemory]
    {
        for logging in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let pages = if mode == swizzledb::PoolMode::MainMemory { 4096 } else { 160 };
            let db = Database::builder()
                .page_size(4096)
                .pool_bytes(pages * 4096)
                .mode(mode)
                .logging(logging)
                .create(dir.path().join("oracle.swz"))
                .unwrap();
            let (t, g) = (db.create_tree("t").unwrap(), db.create_tree("g").unwrap());
            g.insert(b"g", &0u64.to_be_bytes()).unwrap();
            let ctx = format!("{mode:?}, logging {logging}");
            under_random_commits(&db, &t, &g, b"g", |round, generations| {
                let rt = db.begin_read();
                let n = u64::from_be_bytes(rt.get(&g, b"g").unwrap().unwrap().try_into().unwrap());
                let want = generations.get(n);
                let all: Vec<_> = want.clone().into_iter().collect();
                assert!(records(rt.range(&t, Unbounded, Unbounded)) == all, "{ctx}: the scan at {n}");
                let mut rev = all.clone();
                rev.reverse();
                assert!(records(rt.range_rev(&t, Unbounded, Unbounded)) == rev, "{ctx}: reversed at {n}");
                let prefix = format!("k00001{}", round % 5).into_bytes();
                let by_prefix: Vec<_> = all.iter().filter(|(k, _)| k.starts_with(&prefix)).cloned().collect();
                assert!(records(rt.scan_prefix(&t, &prefix)) == by_prefix, "{ctx}: by prefix at {n}");
                for k in 0..50 {
                    assert_eq!(
                        rt.get(&t, &key(k)).unwrap().as_ref(),
                        want.get(&key(k)),
                        "{ctx}: key {k} at {n}"
                    );
                }
                let (lo, hi) =
                    (key(u32::try_from(round % 25).unwrap()), key(u32::try_from(25 + round % 25).unwrap()));
                let bounded: Vec<_> =
                    want.range(lo.clone()..hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut scan = rt.range(&t, Included(&lo[..]), Excluded(&hi[..]));
                let (mut front, mut back) = (Vec::new(), Vec::new());
                while let Some(item) = scan.next() {
                    front.push(item.unwrap());
                    match scan.next_back() {
                        Some(item) => back.push(item.unwrap()),
                        None => break,
                    }
                }
                back.reverse();
                front.extend(back);
                assert!(front == bounded, "{ctx}: from both ends at {n}");
            });
            assert_eq!(db.version_stats().unwrap().bytes, 0, "{ctx}");
        }
    }
}

/// K25, K22 against an oracle: under concurrent commits and rollbacks, each range read of a
/// read-committed transaction (either direction), and on a logged database each plain scan,
/// returns exactly the state committed when it began (the generation is the tree's first key).
#[test]
fn k25_each_range_read_at_read_committed_sees_one_committed_state() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_logged(dir.path(), logging);
        t.insert(b"!gen", &0u64.to_be_bytes()).unwrap();
        under_random_commits(&db, &t, &t, b"!gen", |round, generations| {
            let reads = db.begin_read_committed();
            let mut got = match round % 3 {
                0 => records(reads.range(&t, Unbounded, Unbounded)),
                1 => {
                    let mut rows = records(reads.range_rev(&t, Unbounded, Unbounded));
                    rows.reverse();
                    rows
                }
                _ if logging => records(t.range(Unbounded, Unbounded)),
                _ => return,
            };
            let (gen_key, n) = got.remove(0);
            assert_eq!(gen_key, b"!gen");
            let n = u64::from_be_bytes(n.try_into().unwrap());
            let want: Vec<_> = generations.get(n).into_iter().collect();
            assert!(got == want, "logging {logging}, read {}: the state of generation {n}", round % 3);
        });
    }
}

/// K20, K22: a scan whose snapshot was ended for memory returns `TreeError::Transaction`
/// holding `SnapshotTooOld`, and its message says so: that the snapshot is too old, with the
/// bound and the way out. It said "the auto-commit transaction of this write failed", which a
/// scan is not.
#[test]
fn k20_a_scan_ended_for_memory_says_its_snapshot_is_too_old_not_that_a_write_failed() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let (db, t) = db_with(dir.path(), |b| b.version_memory(limit));
    for i in 0..10u32 {
        t.insert(&key(i), b"v0").unwrap();
    }
    let mut scan = t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    assert_eq!(scan.next().unwrap().unwrap().0, key(0));
    for i in 0..2000u32 {
        t.upsert(&key(i % 10), &[7u8; 200]).unwrap();
    }
    let item = scan.next().expect("an item");
    assert!(scan_too_old(&item), "{item:?}");
    let shown = item.unwrap_err().to_string();
    assert!(shown.contains("too old") && shown.contains(&limit.to_string()), "{shown}");
    assert!(!shown.contains("write failed") && !shown.contains("auto-commit"), "{shown}");
    drop(scan);
    drop(db);
}

//! Every isolation level against every other, in every configuration (LOCKS.md K14–K25): in
//! each pool mode, logged and unlogged, with the default version memory and with one small
//! enough that snapshots are ended (K20), serializable and snapshot-isolation transactions move
//! money between accounts and move accounts to other keys while every kind of reader sums them.
//! The total and the number of accounts never change, so every reader that is documented to read
//! one committed state must see them exactly; the only error a reader may meet is
//! `SnapshotTooOld`, where K20 says it can happen. One more run uses wait-die (K6) in place of
//! deadlock detection, where more transactions die and roll back.

use crate::common::too_old;
use std::ops::Bound::Unbounded;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb::{Database, Error, PoolMode, Transaction, Tree};

const ACCOUNTS: u64 = 400;
const START: u64 = 1000;
const TOTAL: u64 = START * ACCOUNTS;
/// Bytes after the balance: most values are small, enough that the accounts span a few dozen
/// 4 KiB leaves (more than the small pools of the swizzling and traditional modes hold); a
/// balance divisible by 3 makes a large value, kept in an overflow chain (btree T22), so that
/// transfers move values between the leaf and chains, and a replaced value is logged as a delete
/// and an insert of its key (RECOVERY.md R5).
fn pad(balance: u64) -> usize {
    if balance.is_multiple_of(3) {
        3000 + (balance % 5) as usize * 500
    } else {
        150
    }
}
/// How long the readers run in each configuration.
const RUN: Duration = Duration::from_millis(400);

/// Accounts live at even keys at first; a move takes one to a free key, so any key of
/// `0..2 * ACCOUNTS` may hold one.
fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// A balance, then `pad(balance)` bytes derived from it: a value read torn would not match.
fn value(balance: u64) -> Vec<u8> {
    let mut v = balance.to_be_bytes().to_vec();
    v.resize(8 + pad(balance), (balance % 251) as u8);
    v
}

fn balance(v: &[u8]) -> u64 {
    let b = u64::from_be_bytes(v[..8].try_into().unwrap());
    assert_eq!(v.len(), 8 + pad(b), "a value of another length");
    assert!(v[8..].iter().all(|&x| x == (b % 251) as u8), "a torn value");
    b
}

/// Sum and count of the records an iterator returns, or its first error.
fn sum<E: Into<Error>>(
    records: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), E>>,
) -> Result<(u64, u64), Error> {
    let (mut total, mut n) = (0, 0);
    for r in records {
        let (_, v) = r.map_err(Into::into)?;
        total += balance(&v);
        n += 1;
    }
    Ok((total, n))
}

#[derive(Default)]
struct Counts {
    /// Committed transfers and moves.
    changes: AtomicU64,
    /// Reads that saw the whole state.
    checked: AtomicU64,
    /// Reads that met `SnapshotTooOld`.
    too_old: AtomicU64,
}

/// A reader sees exactly the total and the number of accounts, or (`may_end`: its snapshot can
/// be ended for memory, K20) fails with `SnapshotTooOld`.
fn expect_whole(what: &str, got: Result<(u64, u64), Error>, may_end: bool, counts: &Counts) {
    match got {
        Ok(seen) => {
            assert_eq!(seen, (TOTAL, ACCOUNTS), "{what} saw a partial change");
            counts.checked.fetch_add(1, Relaxed);
        }
        Err(e) if may_end && too_old(&e) => {
            counts.too_old.fetch_add(1, Relaxed);
        }
        Err(e) => panic!("{what}: {e:?}"),
    }
}

/// One writer's step: a transfer between two accounts, or an account moved to a free key.
fn change(tx: &mut Transaction<'_>, t: &Tree, x: u64) -> swizzledb::Result<bool> {
    let (i, j) = (x % (2 * ACCOUNTS), (x >> 20) % (2 * ACCOUNTS));
    let amount = (x >> 40) % 50;
    if i == j {
        return Ok(false);
    }
    let changed = match (tx.get(t, &key(i))?, tx.get(t, &key(j))?) {
        (Some(a), None) if (x >> 32).is_multiple_of(4) => {
            tx.delete(t, &key(i))?;
            tx.insert(t, &key(j), &value(balance(&a)))?;
            true
        }
        (Some(a), Some(b)) if balance(&a) >= amount => {
            tx.put(t, &key(i), &value(balance(&a) - amount))?;
            tx.put(t, &key(j), &value(balance(&b) + amount))?;
            true
        }
        _ => false,
    };
    if changed && x >> 58 == 0 {
        return Err(Error::Aborted("rolled back on purpose".into()));
    }
    Ok(changed)
}

/// The `round`-th read of one reader: each kind in turn. `small_memory`: the version memory is
/// small enough that every attempt of a `transact_snapshot` may see its snapshot ended, which it
/// then reports after its retries (K24).
fn read(round: u64, db: &Database, t: &Tree, logging: bool, small_memory: bool, counts: &Counts) {
    match round % 6 {
        0 => {
            let s = db.begin_read();
            expect_whole("begin_read's range", sum(s.range(t, Unbounded, Unbounded)), true, counts);
            expect_whole("begin_read's range_rev", sum(s.range_rev(t, Unbounded, Unbounded)), true, counts);
            expect_whole("begin_read's prefix scan", sum(s.scan_prefix(t, b"k")), true, counts);
            let points = (0..2 * ACCOUNTS).try_fold((0, 0), |(total, n), i| {
                Ok::<_, Error>(match s.get(t, &key(i))? {
                    Some(v) => (total + balance(&v), n + 1),
                    None => (total, n),
                })
            });
            expect_whole("begin_read's point reads", points, true, counts);
        }
        1 => {
            let s = db.begin_read_committed();
            expect_whole("a read-committed range", sum(s.range(t, Unbounded, Unbounded)), true, counts);
            // Point reads at read committed never fail with SnapshotTooOld (K25).
            for i in 0..50 {
                if let Some(v) = s.get(t, &key(i)).unwrap() {
                    balance(&v);
                }
            }
        }
        // Plain scans read a snapshot where the trees' writes are transactions (K22; unlogged
        // handles read the tree as it is, K21).
        2 if logging => {
            expect_whole("a plain range", sum(t.range(Unbounded, Unbounded)), true, counts);
            expect_whole("a plain reverse prefix scan", sum(t.scan_prefix_rev(b"k")), true, counts);
            match t.len() {
                Ok(n) => assert_eq!(n as u64, ACCOUNTS, "len saw a partial move"),
                Err(e) => {
                    let e = Error::from(e);
                    assert!(too_old(&e), "len: {e}");
                }
            }
        }
        3 => {
            let r = db.transact(|tx| sum(tx.range(t, Unbounded, Unbounded)));
            expect_whole("a serializable range", r, false, counts);
        }
        4 => {
            // transact_snapshot runs an attempt whose snapshot ended again (K24), eight times at
            // most: on a loaded machine a scan of every account can outlive a small version
            // memory at each attempt, and the documented error is then SnapshotTooOld.
            let r = db.transact_snapshot(|tx| sum(tx.range_rev(t, Unbounded, Unbounded)));
            expect_whole("a snapshot-isolation range", r, small_memory, counts);
        }
        _ => {
            for i in 0..100 {
                if let Some(v) = t.get(&key(i)).unwrap() {
                    assert!(balance(&v) <= TOTAL);
                }
            }
        }
    }
}

/// One configuration; `wait_die`: the lock manager's wait-die rule instead of deadlock
/// detection (LOCKS.md K6), where more transactions die and roll back.
fn run(mode: PoolMode, logging: bool, version_memory: Option<usize>, wait_die: bool) {
    let dir = tempfile::tempdir().unwrap();
    let frames = if mode == PoolMode::MainMemory { 2048 } else { 48 };
    let mut builder = Database::builder()
        .page_size(4096)
        .pool_bytes(frames * 4096)
        .mode(mode)
        .logging(logging)
        .commit_mode(swizzledb::CommitMode::Async);
    if let Some(bytes) = version_memory {
        builder = builder.version_memory(bytes);
    }
    if wait_die {
        builder = builder.lab(|l| l.deadlock_policy(swizzledb::lock::DeadlockPolicy::WaitDie));
    }
    let db = Arc::new(builder.create(dir.path().join("matrix.swz")).unwrap());
    let t = db.create_tree("accounts").unwrap();
    db.transact(|tx| {
        for i in 0..ACCOUNTS {
            tx.insert(&t, &key(2 * i), &value(START))?;
        }
        Ok(())
    })
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let context =
        format!("{mode:?}, logging {logging}, version memory {version_memory:?}, wait-die {wait_die}");
    // Two serializable writers and one under snapshot isolation, each with its own steps.
    let writers: Vec<_> = (0..3u64)
        .map(|w| {
            let (db, t, stop, counts) = (Arc::clone(&db), t.clone(), Arc::clone(&stop), Arc::clone(&counts));
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (w + 1);
                while !stop.load(Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let step = |tx: &mut Transaction<'_>| change(tx, &t, x);
                    let done = if w == 2 { db.transact_snapshot(step) } else { db.transact(step) };
                    match done {
                        Ok(true) => {
                            counts.changes.fetch_add(1, Relaxed);
                        }
                        Ok(false) | Err(Error::Aborted(_)) => {}
                        Err(e) => panic!("writer {w}: {e:?}"),
                    }
                }
            })
        })
        .collect();
    let other_reader = {
        let (db, t, stop, counts) = (Arc::clone(&db), t.clone(), Arc::clone(&stop), Arc::clone(&counts));
        std::thread::spawn(move || {
            let mut round = 1;
            while !stop.load(Relaxed) {
                read(round, &db, &t, logging, version_memory.is_some(), &counts);
                round += 1;
            }
        })
    };
    let started = Instant::now();
    let mut round = 0;
    // On a loaded machine RUN can pass before any change committed or any read was whole: go
    // on until both happened (the check below then only fails if they never do).
    let worked = || counts.changes.load(Relaxed) > 0 && counts.checked.load(Relaxed) > 0;
    while started.elapsed() < RUN || (!worked() && started.elapsed() < 30 * RUN) {
        read(round, &db, &t, logging, version_memory.is_some(), &counts);
        round += 3;
    }
    stop.store(true, Relaxed);
    for w in writers {
        w.join().unwrap_or_else(|_| panic!("{context}: a writer failed"));
    }
    other_reader.join().unwrap_or_else(|_| panic!("{context}: a reader failed"));
    assert_eq!(sum(t.range(Unbounded, Unbounded)).unwrap(), (TOTAL, ACCOUNTS), "{context}: at the end");
    assert!(counts.changes.load(Relaxed) > 0 && counts.checked.load(Relaxed) > 0, "{context}: no work done");
    // With no snapshot left, no version is kept (K19).
    assert_eq!(db.version_stats().unwrap().bytes, 0, "{context}: versions outlived every snapshot");
    drop(t);
    match Arc::try_unwrap(db) {
        Ok(db) => db.close().unwrap(),
        Err(_) => panic!("{context}: a database handle outlived the threads"),
    }
}

#[test]
fn k14_k25_every_reader_sees_whole_transfers_and_moves_in_every_configuration() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for logging in [true, false] {
            for version_memory in [None, Some(64 << 10)] {
                run(mode, logging, version_memory, false);
            }
        }
    }
    run(PoolMode::Swizzling, true, None, true);
}

/// K16 with R5: a value replaced where either value is large is logged as the key's delete then
/// its insert (btree T22). Rolled back one change at a time, the key left its leaf between the
/// two, and a serializable range read passing then locked the key after it and missed the key
/// for good. Rolled back as one replace, the key never leaves: every range read sees every key.
#[test]
fn k16_r5_a_range_read_sees_a_key_whose_large_value_is_rolled_back() {
    const KEYS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Database::builder()
            .page_size(4096)
            .pool_bytes(512 * 4096)
            .commit_mode(swizzledb::CommitMode::Async)
            .create(dir.path().join("rollback.swz"))
            .unwrap(),
    );
    let t = db.create_tree("t").unwrap();
    for i in 0..KEYS {
        t.insert(&key(i), &[1u8; 16]).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let rollbacks = {
        let (db, t, stop) = (Arc::clone(&db), t.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                // Small to large and back: a delete and an insert each way.
                let mut tx = db.begin();
                tx.put(&t, &key(n % KEYS), &[2u8; 6000]).unwrap();
                tx.abort().unwrap();
                n += 1;
            }
            n
        })
    };
    let started = Instant::now();
    let mut reads = 0u64;
    while started.elapsed() < Duration::from_millis(1500) {
        let seen = db
            .transact(|tx| Ok(tx.range(&t, Unbounded, Unbounded).collect::<Result<Vec<_>, _>>()?.len()))
            .unwrap();
        assert_eq!(seen as u64, KEYS, "range read {reads} missed a key whose change was being rolled back");
        reads += 1;
    }
    stop.store(true, Relaxed);
    let rolled_back = rollbacks.join().unwrap();
    assert!(reads > 10 && rolled_back > 10, "{reads} range reads, {rolled_back} rollbacks");
    for i in 0..KEYS {
        assert_eq!(t.get(&key(i)).unwrap().as_deref(), Some(&[1u8; 16][..]));
    }
}

//! Snapshot isolation for read-write transactions (LOCKS.md K24), through the public API:
//! reads at the snapshot plus the transaction's own changes, never waiting for a writer; first
//! updater wins, so no update is lost; and the one anomaly it allows, write skew, shown
//! happening under snapshot isolation and not under the default serializable transactions.

use std::ops::Bound::Unbounded;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use swizzledb::{Database, Error, Tree};

use crate::common;

/// The tests' database: 4 KiB pages and a pool of 256 frames (logged unless told otherwise).
fn small() -> swizzledb::Builder {
    Database::builder().page_size(4096).pool_bytes(256 * 4096)
}

fn db(dir: &std::path::Path) -> (Arc<Database>, Tree) {
    let db = small().create(dir.join("si.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    (Arc::new(db), t)
}

fn all(rows: impl Iterator<Item = swizzledb::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    rows.collect::<Result<_, _>>().unwrap()
}

fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

/// K24: reads see the snapshot, not what committed after it, and do see the transaction's own
/// writes, deletes included, in point and range reads, both directions.
#[test]
fn k24_reads_see_the_snapshot_and_the_own_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    for (k, v) in [("a", "1"), ("b", "1"), ("c", "1")] {
        t.insert(k.as_bytes(), v.as_bytes()).unwrap();
    }
    let mut tx = db.begin_snapshot();
    assert!(tx.is_snapshot());
    // Committed after the snapshot began: invisible to it.
    t.upsert(b"a", b"2").unwrap();
    t.insert(b"d", b"2").unwrap();
    t.delete(b"c").unwrap();
    assert_eq!(tx.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(tx.get(&t, b"d").unwrap(), None);
    assert_eq!(tx.get(&t, b"c").unwrap().as_deref(), Some(&b"1"[..]));
    // Its own changes: visible.
    tx.put(&t, b"b", b"own").unwrap();
    tx.put(&t, b"e", b"own").unwrap();
    assert_eq!(tx.get(&t, b"b").unwrap().as_deref(), Some(&b"own"[..]));
    let want = vec![kv("a", "1"), kv("b", "own"), kv("c", "1"), kv("e", "own")];
    assert_eq!(all(tx.range(&t, Unbounded, Unbounded)), want);
    let mut rev = want.clone();
    rev.reverse();
    assert_eq!(all(tx.range_rev(&t, Unbounded, Unbounded)), rev);
    tx.commit().unwrap();
    let after = vec![kv("a", "2"), kv("b", "own"), kv("d", "2"), kv("e", "own")];
    assert_eq!(all(t.range(Unbounded, Unbounded).map(|r| r.map_err(Error::from))), after);
}

/// K24: a read waits for no writer. A serializable transaction holds an uncommitted change of
/// the key; the snapshot transaction's read returns the committed value at once.
#[test]
fn k24_reads_do_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    t.insert(b"k", b"old").unwrap();
    let mut writer = db.begin();
    writer.put(&t, b"k", b"new").unwrap();
    let (db2, t2) = (Arc::clone(&db), t.clone());
    let (tx_send, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let tx = db2.begin_snapshot();
        let _ = tx_send.send(tx.get(&t2, b"k").map(|v| v.map(|v| v.to_vec())));
    });
    let got = rx.recv_timeout(Duration::from_secs(20)).expect("the snapshot read waited for the writer");
    assert_eq!(got.unwrap().as_deref(), Some(&b"old"[..]));
    writer.commit().unwrap();
}

/// K24, first updater wins: a write of a key committed by another transaction after the
/// snapshot began fails with `WriteConflict` and changes nothing; `transact_snapshot` retries
/// it, so concurrent read-modify-write counters lose no update.
#[test]
fn k24_first_updater_wins_and_no_update_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    t.insert(b"n", &0u64.to_be_bytes()).unwrap();
    let mut tx = db.begin_snapshot();
    assert_eq!(tx.get(&t, b"n").unwrap(), Some(0u64.to_be_bytes().to_vec()));
    t.upsert(b"n", &5u64.to_be_bytes()).unwrap();
    match tx.put(&t, b"n", &1u64.to_be_bytes()) {
        Err(Error::WriteConflict { key, .. }) => assert_eq!(&*key, b"n"),
        other => panic!("expected a write conflict, got {other:?}"),
    }
    assert!(matches!(tx.update_with(&t, b"n", |_, new| new.push(1)), Err(Error::WriteConflict { .. })));
    tx.abort().unwrap();
    assert_eq!(t.get(b"n").unwrap(), Some(5u64.to_be_bytes().to_vec()));

    assert_eq!(common::increment_at_snapshots(&db, &t, 4, 150), 5 + 4 * 150, "an update was lost");
}

/// K24: a write refused for a conflict changes nothing, the transaction's reads included: the
/// write had taken the key's lock, which names the transaction as the key's writer, before it
/// found the conflict, and its reads took the key's newer committed value for its own (read
/// skew, committed). Logged and unlogged, updates and deletes, point and range reads.
#[test]
fn k24_a_write_refused_for_a_conflict_leaves_the_snapshots_reads_as_they_were() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = small().logging(logged).create(dir.path().join("refused.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        for (k, v) in [("x", "50"), ("y", "50"), ("z", "1")] {
            t.insert(k.as_bytes(), v.as_bytes()).unwrap();
        }
        let mut si = db.begin_snapshot();
        assert_eq!(si.get(&t, b"x").unwrap().as_deref(), Some(&b"50"[..]));
        // Committed after the snapshot: 30 moved from x to y, and z deleted.
        db.transact(|tx| {
            tx.put(&t, b"x", b"20")?;
            tx.put(&t, b"y", b"80")?;
            tx.delete(&t, b"z")?;
            Ok(())
        })
        .unwrap();
        for key in [&b"y"[..], b"z"] {
            match si.put(&t, key, b"0") {
                Err(Error::WriteConflict { key: k, .. }) => assert_eq!(&*k, key),
                other => panic!("logged {logged}: expected a write conflict, got {other:?}"),
            }
        }
        assert!(matches!(si.delete(&t, b"z"), Err(Error::WriteConflict { .. })));
        assert_eq!(si.get(&t, b"y").unwrap().as_deref(), Some(&b"50"[..]), "logged {logged}: read skew");
        assert_eq!(si.get(&t, b"z").unwrap().as_deref(), Some(&b"1"[..]), "logged {logged}");
        let want = vec![kv("x", "50"), kv("y", "50"), kv("z", "1")];
        assert_eq!(all(si.range(&t, Unbounded, Unbounded)), want, "logged {logged}");
        let mut rev = want.clone();
        rev.reverse();
        assert_eq!(all(si.range_rev(&t, Unbounded, Unbounded)), rev, "logged {logged}");
        // A key it may write is still its own to change, and then reads as changed.
        si.put(&t, b"w", b"own").unwrap();
        assert_eq!(si.get(&t, b"w").unwrap().as_deref(), Some(&b"own"[..]));
        si.commit().unwrap();
        assert_eq!(t.get(b"y").unwrap().as_deref(), Some(&b"80"[..]));
        assert_eq!(t.get(b"z").unwrap(), None);
        db.close().unwrap();
    }
}

/// K20, K24: an attempt of `transact_snapshot` whose snapshot was ended for memory fails with
/// `SnapshotTooOld` at its next read or write, and is rolled back and run again at a new
/// snapshot, as after a write conflict, up to eight times; a transaction from `begin_snapshot`
/// leaves the error to its caller.
#[test]
fn k20_k24_transact_snapshot_runs_again_an_attempt_whose_snapshot_was_ended() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let db = small().version_memory(limit).create(dir.path().join("too-old.swz")).unwrap();
    let t = db.create_tree("t").unwrap();
    t.insert(b"n", &0u64.to_be_bytes()).unwrap();
    // Commits after a snapshot began, whose versions it keeps, past the bound (K20).
    let churn = |round: u32| {
        for i in 0..600u32 {
            t.upsert(format!("c{round}-{i:05}").as_bytes(), &[7u8; 200]).unwrap();
        }
    };

    let mut tx = db.begin_snapshot();
    assert_eq!(balance(&tx, &t, b"n"), 0);
    churn(0);
    match tx.put(&t, b"n", &1u64.to_be_bytes()) {
        Err(Error::SnapshotTooOld { limit: l }) => assert_eq!(l, limit),
        other => panic!("expected SnapshotTooOld, got {other:?}"),
    }
    tx.abort().unwrap();

    let mut attempts = 0;
    let got = db
        .transact_snapshot(|tx| {
            attempts += 1;
            let n = balance(tx, &t, b"n");
            if attempts == 1 {
                churn(1);
            }
            tx.put(&t, b"n", &(n + 1).to_be_bytes())?;
            Ok(n)
        })
        .unwrap();
    assert_eq!((got, attempts), (0, 2), "the ended attempt was not run again");
    assert_eq!(t.get(b"n").unwrap(), Some(1u64.to_be_bytes().to_vec()));
    assert!(db.version_stats().unwrap().too_old >= 2);

    // A transaction that outlives the version memory every time: the error, after eight more
    // attempts, and nothing of them stays.
    let mut attempts = 0;
    let gave_up = db.transact_snapshot(|tx| {
        attempts += 1;
        if attempts > 20 {
            return Err(Error::Aborted("run again without end".into()));
        }
        balance(tx, &t, b"n");
        churn(10 + attempts);
        tx.put(&t, b"n", &7u64.to_be_bytes())?;
        Ok(())
    });
    assert!(matches!(gave_up, Err(Error::SnapshotTooOld { .. })), "{gave_up:?}");
    assert_eq!(attempts, 9, "one attempt and eight more");
    assert_eq!(t.get(b"n").unwrap(), Some(1u64.to_be_bytes().to_vec()));
}

fn balance(tx: &swizzledb::Transaction<'_>, t: &Tree, k: &[u8]) -> i64 {
    i64::from_be_bytes(tx.get(t, k).unwrap().unwrap().try_into().unwrap())
}

/// K24's documented anomaly, write skew: the rule x + y >= 0 holds for each transaction's
/// snapshot, each withdraws from a different account, both commit, and the rule breaks.
/// Serializable transactions (the default) do not let it happen: the second writer's wait
/// closes a cycle and it fails as the deadlock's victim (K23).
#[test]
fn k24_snapshot_isolation_allows_write_skew_and_serializable_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path());
    t.insert(b"x", &50i64.to_be_bytes()).unwrap();
    t.insert(b"y", &50i64.to_be_bytes()).unwrap();

    let mut t1 = db.begin_snapshot();
    let mut t2 = db.begin_snapshot();
    for (tx, from) in [(&mut t1, b"x"), (&mut t2, b"y")] {
        let (x, y) = (balance(tx, &t, b"x"), balance(tx, &t, b"y"));
        assert!(x + y - 100 >= 0, "the rule allows the withdrawal in the snapshot");
        let now = balance(tx, &t, from);
        tx.put(&t, from, &(now - 100).to_be_bytes()).unwrap();
    }
    t1.commit().unwrap();
    t2.commit().unwrap();
    let sum: i64 = [b"x", b"y"]
        .iter()
        .map(|k| i64::from_be_bytes(t.get(*k).unwrap().unwrap().try_into().unwrap()))
        .sum();
    assert_eq!(sum, -100, "write skew: both withdrawals committed under snapshot isolation");

    // The same under serializable transactions.
    t.upsert(b"x", &50i64.to_be_bytes()).unwrap();
    t.upsert(b"y", &50i64.to_be_bytes()).unwrap();
    let mut s1 = db.begin();
    let mut s2 = db.begin();
    for tx in [&s1, &s2] {
        assert_eq!(balance(tx, &t, b"x") + balance(tx, &t, b"y"), 100);
    }
    std::thread::scope(|s| {
        // s1's write waits for s2's shared lock on x...
        let first = s.spawn(|| {
            s1.put(&t, b"x", &(-50i64).to_be_bytes())?;
            s1.commit()
        });
        std::thread::sleep(Duration::from_millis(100));
        // ...so s2's write on y (s1 holds it shared) closes the cycle: s2, the younger, fails.
        match s2.put(&t, b"y", &(-50i64).to_be_bytes()) {
            Err(Error::Lock(swizzledb::lock::LockError::Deadlock { .. })) => {}
            other => panic!("expected s2 to be the deadlock's victim, got {other:?}"),
        }
        s2.abort().unwrap();
        first.join().unwrap().unwrap();
    });
    let sum: i64 = [b"x", b"y"]
        .iter()
        .map(|k| i64::from_be_bytes(t.get(*k).unwrap().unwrap().try_into().unwrap()))
        .sum();
    assert_eq!(sum, 0, "serializable: only one withdrawal committed");
}

/// K24 falls back where there are no versions: with locking off a snapshot transaction is an
/// ordinary one.
#[test]
fn k24_without_versions_a_snapshot_transaction_is_an_ordinary_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().lab(|lab| lab.locking(false)).create(dir.path().join("u.swz")).unwrap();
    assert!(db.version_stats().is_none());
    let t = db.create_tree("t").unwrap();
    let mut tx = db.begin_snapshot();
    assert!(!tx.is_snapshot());
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// K24, first updater wins, only against commits: a transaction that changed keys after the
/// snapshot began and rolled back is no conflict; one that committed is, for a put, an insert,
/// a delete and a compare-and-swap alike, also in a tree created after the snapshot began
/// (empty to it). The transaction's own deletes, inserts, swaps and updates read back, and a
/// scan of its own keys in either direction stops at its limit. On an unlogged database a tree
/// handle's write is no transaction (K21): no conflict for an older snapshot.
#[test]
fn k24_only_a_commit_after_the_snapshot_is_a_write_conflict() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = small().logging(logged).create(dir.path().join("conflicts.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        t.insert(b"k", b"0").unwrap();
        t.insert(b"r", b"0").unwrap();
        let mut si = db.begin_snapshot();
        assert!(si.is_snapshot());
        let mut other = db.begin();
        other.put(&t, b"r", b"rolled back").unwrap();
        other.delete(&t, b"k").unwrap();
        other.abort().unwrap();
        assert!(si.put(&t, b"r", b"si").unwrap(), "logged {logged}: a rollback is no conflict");
        assert!(si.delete(&t, b"k").unwrap(), "logged {logged}");

        let later = db.create_tree("later").unwrap();
        db.transact(|tx| tx.put(&later, b"a", b"1").map(|_| ())).unwrap();
        assert_eq!(si.get(&later, b"a").unwrap(), None, "logged {logged}");
        let r = si.put(&later, b"a", b"si");
        assert!(
            matches!(&r, Err(Error::WriteConflict { key, .. }) if &**key == b"a"),
            "logged {logged}: {r:?}"
        );
        let long = vec![9u8; later.max_value_len() / 2];
        si.put(&later, b"b", b"si").unwrap();
        si.put(&later, b"c", &long).unwrap();
        assert_eq!(si.get(&later, b"c").unwrap(), Some(long.clone()), "logged {logged}");
        let keys = |rows: Vec<(Vec<u8>, Vec<u8>)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(all(si.range(&later, Unbounded, Unbounded))), [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(keys(all(si.range_rev(&later, Unbounded, Unbounded))), [b"c".to_vec(), b"b".to_vec()]);
        assert_eq!(
            keys(all(si.range(&t, Unbounded, Unbounded).limit(1))),
            [b"r".to_vec()],
            "logged {logged}"
        );

        assert!(si.delete(&t, b"r").unwrap());
        assert_eq!(si.get(&t, b"r").unwrap(), None, "logged {logged}: its own delete");
        si.insert(&t, b"r", b"again").unwrap();
        let dup = si.insert(&t, b"r", b"twice");
        assert!(
            matches!(dup, Err(Error::Tree(swizzledb::TreeError::DuplicateKey))),
            "logged {logged}: {dup:?}"
        );
        assert_eq!(si.compare_and_swap(&t, b"r", Some(b"again"), Some(b"swapped")).unwrap(), Ok(()));
        let updated = si.update_with(&t, b"r", |old, new| {
            new.extend_from_slice(old);
            new.push(b'!');
        });
        assert_eq!(updated.unwrap(), Some(()), "logged {logged}");
        assert_eq!(si.get(&t, b"r").unwrap().as_deref(), Some(&b"swapped!"[..]), "logged {logged}");
        si.commit().unwrap();
        assert_eq!(t.get(b"r").unwrap().as_deref(), Some(&b"swapped!"[..]));
        assert_eq!(t.get(b"k").unwrap(), None);
        assert_eq!((later.get(b"a").unwrap(), later.get(b"c").unwrap()), (Some(b"1".to_vec()), Some(long)));

        let mut si = db.begin_snapshot();
        db.transact(|tx| tx.insert(&t, b"new", b"1")).unwrap();
        assert!(matches!(si.insert(&t, b"new", b"2"), Err(Error::WriteConflict { .. })), "logged {logged}");
        let r = si.compare_and_swap(&t, b"new", None, Some(b"2"));
        assert!(matches!(r, Err(Error::WriteConflict { .. })), "logged {logged}: {r:?}");
        let r = si.delete(&t, b"new");
        assert!(matches!(r, Err(Error::WriteConflict { .. })), "logged {logged}: {r:?}");
        si.abort().unwrap();

        let mut si = db.begin_snapshot();
        assert_eq!(si.get(&t, b"r").unwrap().as_deref(), Some(&b"swapped!"[..]));
        t.upsert(b"r", b"handle").unwrap();
        let r = si.put(&t, b"r", b"si");
        if logged {
            assert!(matches!(r, Err(Error::WriteConflict { .. })), "an auto-commit write commits: {r:?}");
        } else {
            assert!(r.is_ok(), "an unlogged handle's write records no version: {r:?}");
        }
        drop(si);
        assert_eq!(db.version_stats().unwrap().bytes, 0, "logged {logged}");
    }
}

/// K24: transfers between random accounts in `transact_snapshot` (each writes both keys it
/// read, so no write skew) keep the total — read inside each transfer between its two writes
/// with its own change seen, by read-only transactions, and by snapshot transactions through a
/// reversed scan and point reads at once — logged and unlogged.
#[test]
fn k24_snapshot_transfers_keep_the_total_in_every_snapshot() {
    const ACCOUNTS: u32 = 16;
    const TOTAL: i64 = 100 * ACCOUNTS as i64;
    let balance = |v: Vec<u8>| i64::from_be_bytes(v.try_into().unwrap());
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().logging(logged).create(dir.path().join("transfers.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        for a in 0..ACCOUNTS {
            t.insert(&a.to_be_bytes(), &100i64.to_be_bytes()).unwrap();
        }
        std::thread::scope(|s| {
            for th in 0..3u64 {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    let mut rng = common::XorShift(th + 11);
                    for i in 0..300 {
                        let from = u32::try_from(rng.next() % u64::from(ACCOUNTS)).unwrap();
                        let to = (from + 1 + u32::try_from(rng.next() % u64::from(ACCOUNTS - 1)).unwrap())
                            % ACCOUNTS;
                        let amount = i64::try_from(rng.next() % 10).unwrap();
                        db.transact_snapshot(|tx| {
                            let x = balance(tx.get(t, &from.to_be_bytes())?.unwrap());
                            let y = balance(tx.get(t, &to.to_be_bytes())?.unwrap());
                            tx.put(t, &from.to_be_bytes(), &(x - amount).to_be_bytes())?;
                            if i % 7 == 0 {
                                let sum: i64 = all(tx.range(t, Unbounded, Unbounded))
                                    .into_iter()
                                    .map(|(_, v)| balance(v))
                                    .sum();
                                assert_eq!(sum, TOTAL - amount, "logged {logged}: between the two writes");
                            }
                            tx.put(t, &to.to_be_bytes(), &(y + amount).to_be_bytes())?;
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
            for _ in 0..2 {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    for i in 0..200 {
                        if i % 2 == 0 {
                            let rt = db.begin_read();
                            let sum: i64 =
                                rt.range(t, Unbounded, Unbounded).map(|r| balance(r.unwrap().1)).sum();
                            assert_eq!(sum, TOTAL, "logged {logged}: a read-only transaction");
                        } else {
                            let tx = db.begin_snapshot();
                            let scanned: i64 = all(tx.range_rev(t, Unbounded, Unbounded))
                                .into_iter()
                                .map(|(_, v)| balance(v))
                                .sum();
                            let read: i64 = (0..ACCOUNTS)
                                .map(|a| balance(tx.get(t, &a.to_be_bytes()).unwrap().unwrap()))
                                .sum();
                            assert_eq!(
                                (scanned, read),
                                (TOTAL, TOTAL),
                                "logged {logged}: a snapshot transaction"
                            );
                        }
                    }
                });
            }
        });
        let sum: i64 = t.range(Unbounded, Unbounded).map(|r| balance(r.unwrap().1)).sum();
        assert_eq!(sum, TOTAL, "logged {logged}");
        assert_eq!(db.version_stats().unwrap().bytes, 0, "logged {logged}");
    }
}

/// K20, K24: once a snapshot transaction's snapshot is ended for memory, its point read and its
/// write fail with `Error::SnapshotTooOld` and its scan's item holds it; the refused write
/// changes nothing, and the transaction still commits what it wrote before, logged and unlogged.
#[test]
fn k20_k24_a_snapshot_transaction_ended_for_memory_refuses_reads_and_writes_and_still_commits() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let limit = 16 << 10;
        let db = Database::builder()
            .logging(logged)
            .version_memory(limit)
            .create(dir.path().join("ended.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        t.insert(b"a", b"0").unwrap();
        let mut si = db.begin_snapshot();
        si.put(&t, b"mine", b"1").unwrap();
        for i in 0..200u32 {
            db.transact(|tx| tx.put(&t, &i.to_be_bytes(), &[1u8; 200]).map(|_| ())).unwrap();
        }
        let read = si.get(&t, b"a");
        assert!(
            matches!(read, Err(Error::SnapshotTooOld { limit: l }) if l == limit),
            "logged {logged}: {read:?}"
        );
        let first = si.range(&t, Unbounded, Unbounded).next();
        assert!(matches!(&first, Some(Err(e)) if common::too_old(e)), "logged {logged}: {first:?}");
        let write = si.put(&t, b"refused", b"1");
        assert!(matches!(write, Err(Error::SnapshotTooOld { .. })), "logged {logged}: {write:?}");
        si.commit().unwrap();
        assert_eq!(t.get(b"mine").unwrap().as_deref(), Some(&b"1"[..]), "logged {logged}");
        assert_eq!(t.get(b"refused").unwrap(), None, "logged {logged}: the refused write changed nothing");
        assert_eq!(t.len().unwrap(), 202, "logged {logged}");
        t.verify().unwrap();
    }
}

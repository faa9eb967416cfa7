//! Isolation (LOCKS.md K14–K16): reads outside a transaction return only committed records, a
//! transaction's range reads are repeatable with no phantoms, and `Database::transact` retries
//! under its first attempt's age.

use std::collections::BTreeSet;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use swizzledb::lock::TxnId;
use swizzledb::lock::{DeadlockPolicy, LockError};
use swizzledb::{Database, Error, PoolMode, Tree};

use crate::common;

/// How long a test waits to be sure a blocked reader stays blocked.
const BLOCKED: Duration = Duration::from_millis(150);
/// A watchdog for anything that should finish.
const DEADLINE: Duration = Duration::from_secs(20);

fn db(dir: &std::path::Path, mode: PoolMode) -> (Arc<Database>, Tree) {
    let db = Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .create(dir.join("iso.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    (Arc::new(db), t)
}

/// As [`db`], with wait-die instead of deadlock detection: a request that would wait for an
/// older transaction fails at once, so a refused lock shows as an error, not as a wait.
fn db_wait_die(dir: &std::path::Path, mode: PoolMode) -> (Database, Tree) {
    let db = Database::builder()
        .mode(mode)
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .lab(|l| l.deadlock_policy(DeadlockPolicy::WaitDie))
        .create(dir.join("iso.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    (db, t)
}

fn key(k: u32) -> Vec<u8> {
    format!("k{k:06}").into_bytes()
}

/// 400 keys of 100 bytes: about a dozen 4 KiB leaves, so scans cross leaf boundaries.
fn fill(t: &Tree) {
    for k in (0..800).step_by(2) {
        t.insert(&key(k), &[b'c'; 100]).unwrap();
    }
}

fn keys_of(items: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), Error>>) -> Result<Vec<Vec<u8>>, Error> {
    items.map(|r| r.map(|(k, _)| k)).collect()
}

/// Runs `f` on a thread; the receiver gets its result when it finishes.
fn spawn<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> mpsc::Receiver<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

fn still_blocked<R>(rx: &mpsc::Receiver<R>) -> bool {
    matches!(rx.recv_timeout(BLOCKED), Err(mpsc::RecvTimeoutError::Timeout))
}

#[test]
fn k18_k22_a_get_and_a_scan_return_the_committed_value_of_an_uncommitted_update_at_once() {
    for commit in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db(dir.path(), PoolMode::Swizzling);
        fill(&t);
        let mut tx = db.begin();
        tx.put(&t, &key(100), b"dirty").unwrap();
        let (t2, t3) = (t.clone(), t.clone());
        let get = spawn(move || t2.get(&key(100)).unwrap());
        let scan = spawn(move || {
            t3.range(Included(&key(90)[..]), Excluded(&key(110)[..]))
                .map(|r| r.unwrap().1)
                .collect::<Vec<_>>()
        });
        // K18, K22: neither a get nor a scan waits; both return the committed value.
        assert_eq!(
            get.recv_timeout(DEADLINE).unwrap(),
            Some(vec![b'c'; 100]),
            "a get saw the uncommitted update"
        );
        let values = scan.recv_timeout(DEADLINE).unwrap();
        assert_eq!(values.len(), 10);
        assert_eq!(values[5], vec![b'c'; 100], "a scan saw the uncommitted update");
        assert_eq!(t.get(&key(300)).unwrap().unwrap(), vec![b'c'; 100]);
        if commit {
            tx.commit().unwrap();
        } else {
            tx.abort().unwrap();
        }
        let want = if commit { b"dirty".to_vec() } else { vec![b'c'; 100] };
        assert_eq!(t.get(&key(100)).unwrap().unwrap(), want);
        let values: Vec<_> =
            t.range(Included(&key(90)[..]), Excluded(&key(110)[..])).map(|r| r.unwrap().1).collect();
        assert_eq!(values.len(), 10);
        assert_eq!(values[5], want);
    }
}

#[test]
fn k15_k22_an_uncommitted_insert_or_delete_is_not_seen_outside_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    fill(&t);
    let committed: Vec<Vec<u8>> = (0..800).step_by(2).map(key).collect();
    for (op, rollback) in [("insert", true), ("delete", true), ("insert", false), ("delete", false)] {
        let mut before: BTreeSet<Vec<u8>> =
            keys_of(t.range(Unbounded, Unbounded).map(|r| r.map_err(Error::from)))
                .unwrap()
                .into_iter()
                .collect();
        let target = if op == "insert" { key(401) } else { key(402) };
        let mut tx = db.begin();
        match op {
            "insert" => tx.insert(&t, &target, b"new").unwrap(),
            _ => assert!(tx.delete(&t, &target).unwrap()),
        }
        let (t2, t3, t4) = (t.clone(), t.clone(), t.clone());
        let target2 = target.clone();
        let get = spawn(move || t2.get(&target2).unwrap());
        // K18: the get returns the committed state at once: absent before the insert, present
        // before the delete.
        let got = get.recv_timeout(DEADLINE).unwrap();
        assert_eq!(got.is_some(), op == "delete", "{op}: a get saw the uncommitted {op}");
        let fwd =
            spawn(move || keys_of(t3.range(Unbounded, Unbounded).map(|r| r.map_err(Error::from))).unwrap());
        let rev = spawn(move || {
            keys_of(t4.range_rev(Unbounded, Unbounded).map(|r| r.map_err(Error::from))).unwrap()
        });
        // K22: scans do not wait either; they return the committed keys.
        let committed_now: Vec<Vec<u8>> = before.iter().cloned().collect();
        assert_eq!(fwd.recv_timeout(DEADLINE).unwrap(), committed_now, "{op}: a forward scan saw it");
        let mut rev_now = rev.recv_timeout(DEADLINE).unwrap();
        rev_now.reverse();
        assert_eq!(rev_now, committed_now, "{op}: a reverse scan saw it");
        if rollback {
            tx.abort().unwrap();
        } else {
            tx.commit().unwrap();
            if op == "insert" {
                before.insert(target.clone());
            } else {
                before.remove(&target);
            }
        }
        let got = t.get(&target).unwrap();
        assert_eq!(got.is_some(), before.contains(&target), "{op} rollback={rollback}");
        let want: Vec<Vec<u8>> = before.iter().cloned().collect();
        let scan = |rev: bool| {
            let items: Vec<_> = if rev {
                t.range_rev(Unbounded, Unbounded).map(|r| r.map_err(Error::from)).collect()
            } else {
                t.range(Unbounded, Unbounded).map(|r| r.map_err(Error::from)).collect()
            };
            keys_of(items.into_iter()).unwrap()
        };
        assert_eq!(scan(false), want, "{op} rollback={rollback}");
        let mut rev_keys = scan(true);
        rev_keys.reverse();
        assert_eq!(rev_keys, want, "{op} rollback={rollback}");
    }
    assert!(committed.iter().all(|k| k != &key(402) || t.get(k).unwrap().is_none()));
}

/// Inserting into a range a transaction read waits for that transaction (a younger inserter
/// dies and retries), in both scan directions and up to the end of the tree; inserting
/// elsewhere does not wait.
#[test]
fn k16_a_range_read_is_repeatable_while_another_inserts_into_the_range() {
    type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);
    let ranges: Vec<(Range, Vec<u8>, Vec<u8>)> = vec![
        // (range, a key inside or in the gap just past it, a key far away)
        ((Included(key(100)), Excluded(key(300))), key(201), key(701)),
        ((Included(key(100)), Excluded(key(300))), key(299), key(701)),
        ((Included(key(700)), Unbounded), b"z".to_vec(), key(11)),
        ((Unbounded, Included(key(10))), key(3), key(701)),
    ];
    for reverse in [false, true] {
        for ((lo, hi), inside, elsewhere) in &ranges {
            let dir = tempfile::tempdir().unwrap();
            let (db, t) = db(dir.path(), PoolMode::Traditional);
            fill(&t);
            let bounds = || (as_ref(lo), as_ref(hi));
            let tx = db.begin();
            let read = |tx: &swizzledb::Transaction<'_>| -> Vec<Vec<u8>> {
                let (a, b) = bounds();
                if reverse {
                    let mut v = keys_of(tx.range_rev(&t, a, b)).unwrap();
                    v.reverse();
                    v
                } else {
                    keys_of(tx.range(&t, a, b)).unwrap()
                }
            };
            let first = read(&tx);
            assert!(!first.is_empty());
            let t2 = t.clone();
            let inside2 = inside.clone();
            let insert = spawn(move || t2.insert(&inside2, b"phantom"));
            // A key far from the range is not held up.
            t.insert(elsewhere, b"far").unwrap();
            assert!(still_blocked(&insert), "an insert into a range read by an open transaction went ahead");
            assert_eq!(read(&tx), first, "the second read of the range differs (phantom)");
            tx.commit().unwrap();
            // The auto-commit retries for up to 2 s; the reader ended well within that.
            insert.recv_timeout(DEADLINE).unwrap().unwrap();
            assert_eq!(t.get(inside).unwrap().as_deref(), Some(&b"phantom"[..]));
        }
    }
}

/// K15 for a key inserted at the end of its leaf, whose gap closes in the next leaf (the
/// closing key is locked there, where the leaf's upper bound and the key both lie): under an
/// open transaction's read of the whole range, every insert between two of its keys — at the
/// end of a leaf or inside one — is refused (wait-die: the younger writer dies at once), in
/// both scan directions, and the range reads the same again.
#[test]
fn k15_an_insert_at_a_leafs_end_is_refused_inside_a_read_range() {
    for (mode, reverse) in
        [(PoolMode::Swizzling, false), (PoolMode::Swizzling, true), (PoolMode::Traditional, false)]
    {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db_wait_die(dir.path(), mode);
        fill(&t);
        let reader = db.begin();
        let read = |tx: &swizzledb::Transaction<'_>| -> Vec<Vec<u8>> {
            let (lo, hi) = (key(0), key(800));
            if reverse {
                let mut v = keys_of(tx.range_rev(&t, Included(&lo[..]), Excluded(&hi[..]))).unwrap();
                v.reverse();
                v
            } else {
                keys_of(tx.range(&t, Included(&lo[..]), Excluded(&hi[..]))).unwrap()
            }
        };
        let first = read(&reader);
        assert_eq!(first.len(), 400);
        for k in (1..800).step_by(2) {
            let mut writer = db.begin();
            match writer.insert(&t, &key(k), b"phantom") {
                Err(Error::Lock(LockError::Conflict { .. })) => {}
                other => panic!("{mode:?}: insert of {k} inside a read range: {other:?}"),
            }
            writer.abort().unwrap();
            // The same through a compare-and-swap that adds the key (its gated visit).
            let mut writer = db.begin();
            match writer.compare_and_swap(&t, &key(k), None, Some(b"phantom")) {
                Err(Error::Lock(LockError::Conflict { .. })) => {}
                other => panic!("{mode:?}: swap adding {k} inside a read range: {other:?}"),
            }
            writer.abort().unwrap();
        }
        assert_eq!(read(&reader), first, "{mode:?}: the second read of the range differs (phantom)");
        reader.commit().unwrap();
        db.transact(|tx| {
            for k in (1..800).step_by(2) {
                tx.insert(&t, &key(k), b"now")?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(t.len().unwrap(), 800);
    }
}

/// K15's look-up past the leaf, exercised where it succeeds: writers append ascending runs,
/// each to its own key range inside leaves shared with the next range (as TPC-C's districts
/// append orders), in transactions of several inserts, while readers read whole ranges twice
/// in one transaction. Every pair of reads agrees (no phantom), and every run ends complete.
#[test]
fn k15_ascending_runs_and_repeatable_range_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    let run_key = |r: u32, i: u32| format!("r{r:02}-{i:06}").into_bytes();
    for r in 0..8 {
        t.insert(&run_key(r, 0), &[b'a'; 60]).unwrap();
    }
    let stop = AtomicBool::new(false);
    let (phantoms, reads) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        let (db, t, stop, phantoms, reads) = (&db, &t, &stop, &phantoms, &reads);
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let r = (reads.load(Ordering::Relaxed) % 8) as u32;
                let (lo, hi) = (run_key(r, 0), run_key(r + 1, 0));
                let twice = db.transact(|tx| {
                    let a = keys_of(tx.range(t, Included(&lo[..]), Excluded(&hi[..])))?;
                    std::thread::yield_now();
                    let b = keys_of(tx.range(t, Included(&lo[..]), Excluded(&hi[..])))?;
                    Ok((a, b))
                });
                if let Ok((a, b)) = twice {
                    phantoms.fetch_add(u64::from(a != b), Ordering::Relaxed);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                s.spawn(move || {
                    for n in 0..150u32 {
                        for r in (w..8).step_by(2) {
                            db.transact(|tx| {
                                for i in 1..=5 {
                                    tx.insert(t, &run_key(r, n * 5 + i), &[b'b'; 60])?;
                                }
                                Ok(())
                            })
                            .unwrap();
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(phantoms.load(Ordering::Relaxed), 0, "a range read twice in one transaction differed");
    assert!(reads.load(Ordering::Relaxed) > 0);
    for r in 0..8u32 {
        let got: Vec<Vec<u8>> = t
            .range(Included(&run_key(r, 0)[..]), Excluded(&run_key(r + 1, 0)[..]))
            .map(|kv| kv.unwrap().0)
            .collect();
        let want: Vec<Vec<u8>> = (0..=750).map(|i| run_key(r, i)).collect();
        assert_eq!(got, want, "run {r}");
    }
}

/// btree T19 with record locks: a limited range read locks what it returns (each record closes
/// the gap before it) and no more. A write into a gap it saw waits for it; a write past its last
/// record, in the same leaf, goes ahead at once; and the second read returns the same records.
#[test]
fn k16_t19_a_limited_range_read_locks_only_what_it_returns() {
    for reverse in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db(dir.path(), PoolMode::Swizzling);
        fill(&t);
        // Keys 100, 102, 104 ascending; 298, 296, 294 descending (range [100, 300)).
        let (seen_gap, past, want) = if reverse {
            (key(297), key(289), vec![key(298), key(296), key(294)])
        } else {
            (key(101), key(109), vec![key(100), key(102), key(104)])
        };
        let tx = db.begin();
        let read = |tx: &swizzledb::Transaction<'_>| -> Vec<Vec<u8>> {
            let (a, b) = (Included(&key(100)[..]), Excluded(&key(300)[..]));
            if reverse {
                keys_of(tx.range_rev(&t, a, b).limit(3)).unwrap()
            } else {
                keys_of(tx.range(&t, a, b).limit(3)).unwrap()
            }
        };
        let requests = || db.lock_stats().unwrap().requests;
        let before = requests();
        assert_eq!(read(&tx), want);
        let asked = requests() - before;
        assert!(asked <= 4, "a read of 3 records asked for {asked} locks");
        // Past what it returned: not held, so a write there goes ahead at once.
        let (t2, past2) = (t.clone(), past.clone());
        spawn(move || t2.insert(&past2, b"after")).recv_timeout(DEADLINE).unwrap().unwrap();
        // Into a gap it saw: waits for the reader.
        let t2 = t.clone();
        let insert = spawn(move || t2.insert(&seen_gap, b"phantom"));
        assert!(still_blocked(&insert), "an insert into a gap a limited read saw went ahead");
        assert_eq!(read(&tx), want, "the second limited read differs (phantom)");
        tx.commit().unwrap();
        insert.recv_timeout(DEADLINE).unwrap().unwrap();
    }
}

/// K15 with the closing key locked in the leaf visit that writes (btree T28) and, for the key
/// in a leaf's end gap, by the separate look-up: an insert holds its gap's closing key only for
/// its own length, so another transaction writes that key at once while the inserter is still
/// open; a delete holds it to its end, so such a write waits for the deleter's commit.
#[test]
fn k15_an_insert_releases_its_closing_key_and_a_delete_holds_it_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    fill(&t);
    // Every odd key goes in the middle of a gap; the last leaf keys of each leaf close gaps
    // that lie in the next leaf, so both ways of locking the gap are taken.
    for k in (1..800).step_by(38) {
        let (inserted, closing) = (key(k), key(k + 1));
        let mut tx = db.begin();
        tx.insert(&t, &inserted, b"new").unwrap();
        let t2 = t.clone();
        let c2 = closing.clone();
        let update = spawn(move || t2.upsert(&c2, b"updated"));
        update.recv_timeout(DEADLINE).unwrap().unwrap();
        tx.commit().unwrap();
        assert_eq!(t.get(&closing).unwrap().as_deref(), Some(&b"updated"[..]));
        assert_eq!(t.get(&inserted).unwrap().as_deref(), Some(&b"new"[..]));

        let mut tx = db.begin();
        assert!(tx.delete(&t, &inserted).unwrap());
        let t2 = t.clone();
        let c2 = closing.clone();
        let update = spawn(move || t2.upsert(&c2, b"again"));
        assert!(
            still_blocked(&update),
            "a write of the key closing a deleted key's gap went ahead of the delete"
        );
        tx.commit().unwrap();
        update.recv_timeout(DEADLINE).unwrap().unwrap();
        assert_eq!(t.get(&closing).unwrap().as_deref(), Some(&b"again"[..]));
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Included(k) => Included(k.as_slice()),
        Excluded(k) => Excluded(k.as_slice()),
        Unbounded => Unbounded,
    }
}

/// A delete inside a range read by an open transaction waits too, and so does a delete of the
/// key just past the range (its closing key).
#[test]
fn k16_a_delete_in_or_closing_a_read_range_waits_for_the_reader() {
    for victim in [key(150), key(300)] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db(dir.path(), PoolMode::Swizzling);
        fill(&t);
        let tx = db.begin();
        let first = keys_of(tx.range(&t, Included(&key(100)), Excluded(&key(300)))).unwrap();
        let t2 = t.clone();
        let v2 = victim.clone();
        let delete = spawn(move || t2.delete(&v2));
        assert!(still_blocked(&delete), "a delete went ahead of a reader of its range");
        assert_eq!(keys_of(tx.range(&t, Included(&key(100)), Excluded(&key(300)))).unwrap(), first);
        tx.commit().unwrap();
        assert!(delete.recv_timeout(DEADLINE).unwrap().unwrap());
    }
}

/// Serializability with phantoms in play: transfers move money between accounts, and some
/// transfers close an account (delete) and open another (insert) with its balance, so the set
/// of keys changes. Auditors sum every account with a transaction's range read, forward or
/// backward; each sum must be the total. Readers outside transactions never see the poison
/// value written only by transactions that always roll back.
#[test]
fn k14_k16_audits_by_range_read_always_see_the_total() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = db(dir.path(), mode);
        const ACCOUNTS: u32 = 120;
        const EACH: u64 = 1000;
        for a in 0..ACCOUNTS {
            t.insert(&key(a * 10), &EACH.to_be_bytes()).unwrap();
        }
        let total = u64::from(ACCOUNTS) * EACH;
        let stop = Arc::new(AtomicBool::new(false));
        let audits = Arc::new(AtomicU64::new(0));
        let next_account = Arc::new(AtomicU64::new(u64::from(ACCOUNTS) * 10 + 1));
        let barrier = Arc::new(Barrier::new(6));
        let mut handles = Vec::new();
        for w in 0..3u64 {
            let (db, t, stop, next, barrier) =
                (db.clone(), t.clone(), stop.clone(), next_account.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                let mut rng = w * 7919 + 1;
                let mut step = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                while !stop.load(Ordering::Relaxed) {
                    let (r1, r2, r3) = (step(), step(), step());
                    db.transact(|tx| {
                        // Two existing accounts, found by range reads from random points.
                        let pick =
                            |tx: &swizzledb::Transaction<'_>, r: u64| -> Result<Option<Vec<u8>>, Error> {
                                let from = key((r % (u64::from(ACCOUNTS) * 12)) as u32);
                                Ok(tx
                                    .range(&t, Included(&from[..]), Unbounded)
                                    .next()
                                    .transpose()?
                                    .map(|(k, _)| k))
                            };
                        let (Some(a), Some(b)) = (pick(tx, r1)?, pick(tx, r2)?) else { return Ok(()) };
                        if a == b {
                            return Ok(());
                        }
                        let bal = |v: Option<Vec<u8>>| u64::from_be_bytes(v.unwrap().try_into().unwrap());
                        let (va, vb) = (bal(tx.get(&t, &a)?), bal(tx.get(&t, &b)?));
                        let amount = (r3 % 50).min(va);
                        if r3 % 4 == 0 {
                            // Close `b`, open a new account with its balance plus the amount.
                            assert!(tx.delete(&t, &b)?);
                            let n = next.fetch_add(1, Ordering::Relaxed);
                            tx.insert(&t, &key(n as u32), &(vb + amount).to_be_bytes())?;
                        } else {
                            tx.put(&t, &b, &(vb + amount).to_be_bytes())?;
                        }
                        tx.put(&t, &a, &(va - amount).to_be_bytes())?;
                        Ok(())
                    })
                    .unwrap();
                }
            }));
        }
        for a in 0..2u64 {
            let (db, t, stop, audits, barrier) =
                (db.clone(), t.clone(), stop.clone(), audits.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                while !stop.load(Ordering::Relaxed) {
                    let sum = db
                        .transact(|tx| {
                            let items: Vec<_> = if a == 0 {
                                tx.range(&t, Unbounded, Unbounded).collect::<Result<_, _>>()?
                            } else {
                                tx.range_rev(&t, Unbounded, Unbounded).collect::<Result<_, _>>()?
                            };
                            Ok(items
                                .iter()
                                .map(|(_, v)| u64::from_be_bytes(v[..].try_into().unwrap()))
                                .sum::<u64>())
                        })
                        .unwrap();
                    assert_eq!(sum, total, "an audit saw {sum}, not {total}");
                    audits.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        // Poisoners: a value that is never committed, and a reader outside transactions that
        // must never see it.
        {
            let (db, t, stop, barrier) = (db.clone(), t.clone(), stop.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let mut tx = db.begin();
                    let k = key((i * 37) % (ACCOUNTS * 10));
                    if tx.put(&t, &k, b"poison").is_ok() {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    tx.abort().unwrap();
                    i += 1;
                    for r in t.range(Unbounded, Unbounded) {
                        assert_ne!(
                            r.unwrap().1,
                            b"poison",
                            "a scan outside a transaction saw an uncommitted value"
                        );
                    }
                    assert_ne!(t.get(&k).unwrap().as_deref(), Some(&b"poison"[..]));
                }
            }));
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().unwrap();
        }
        assert!(audits.load(Ordering::Relaxed) > 0, "no audit finished");
        let sum: u64 = t
            .range(Unbounded, Unbounded)
            .map(|r| u64::from_be_bytes(r.unwrap().1[..].try_into().unwrap()))
            .sum();
        assert_eq!(sum, total);
        t.verify().unwrap();
    }
}

/// A retry of `transact` keeps its transaction number, so under wait-die it stays older than
/// everything that began after it. Under deadlock detection (the default, K23) the same
/// transaction simply waits for the older one: one attempt.
#[test]
fn k6_transact_retries_under_its_first_number() {
    for policy in [DeadlockPolicy::WaitDie, DeadlockPolicy::Detect] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .page_size(4096)
            .pool_bytes(64 * 4096)
            .lab(|l| l.deadlock_policy(policy))
            .create(dir.path().join("iso.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        t.insert(b"k", b"0").unwrap();
        let ids = std::sync::Mutex::new(Vec::<TxnId>::new());
        let got = std::thread::scope(|s| {
            let (ready_tx, ready_rx) = mpsc::channel();
            let (db2, t2) = (&db, &t);
            s.spawn(move || {
                let mut older = db2.begin();
                older.put(t2, b"k", b"1").unwrap();
                ready_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(200));
                older.commit().unwrap();
            });
            ready_rx.recv().unwrap();
            db.transact(|tx| {
                ids.lock().unwrap().push(tx.id());
                let v = tx.get(&t, b"k")?;
                tx.put(&t, b"k", b"2")?;
                Ok(v)
            })
            .unwrap()
        });
        assert_eq!(got.as_deref(), Some(&b"1"[..]), "the retry ran after the older transaction committed");
        let ids = ids.lock().unwrap();
        match policy {
            DeadlockPolicy::WaitDie => {
                assert!(ids.len() > 1, "the first attempt should have died under wait-die")
            }
            DeadlockPolicy::Detect => assert_eq!(ids.len(), 1, "under detection the transaction waits"),
        }
        assert!(ids.iter().all(|&i| i == ids[0]), "retries changed the transaction number: {ids:?}");
        assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"2"[..]));
        let stats = db.lock_stats().unwrap();
        assert_eq!((stats.conflicts > 0, stats.deadlocks), (policy == DeadlockPolicy::WaitDie, 0));
    }
}

/// K23, Failure behaviour: `transact` (and `transact_snapshot`) in a thread that has another
/// transaction open holding the key it needs meets a deadlock through its own thread at every
/// attempt; it retries for 2 s, then returns the deadlock instead of retrying for good.
#[test]
fn k23_transact_beside_an_open_transaction_of_its_thread_returns_the_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    t.insert(b"k", b"0").unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let (db2, t2) = (Arc::clone(&db), t.clone());
    let worker = std::thread::spawn(move || {
        let mut open = db2.begin();
        open.put(&t2, b"k", b"1").unwrap();
        let read = db2.transact(|tx| tx.get(&t2, b"k"));
        let write = db2.transact_snapshot(|tx| tx.put(&t2, b"k", b"2"));
        open.commit().unwrap();
        done_tx.send((read.map_err(|e| e.to_string()), write.map_err(|e| e.to_string()))).unwrap();
    });
    let (read, write) = done_rx.recv_timeout(DEADLINE).expect("transact returned");
    worker.join().unwrap();
    for r in [read.map(|_| ()), write.map(|_| ())] {
        let e = r.expect_err("the lock is held by the thread's own open transaction");
        assert!(e.contains("deadlock"), "{e}");
    }
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(db.lock_stats().unwrap().deadlocks > 0);
}

/// `transact` returns the closure's own errors after rolling back, without retrying.
#[test]
fn transact_rolls_back_and_returns_other_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    t.insert(b"a", b"1").unwrap();
    let mut runs = 0;
    let r: Result<(), Error> = db.transact(|tx| {
        runs += 1;
        tx.put(&t, b"b", b"2")?;
        tx.insert(&t, b"a", b"again")?; // duplicate
        Ok(())
    });
    assert!(matches!(r, Err(Error::Tree(swizzledb::TreeError::DuplicateKey))), "{r:?}");
    assert_eq!(runs, 1);
    assert_eq!(t.get(b"b").unwrap(), None, "the failed transaction's write was rolled back");
    let _ = LockError::SystemTransaction; // the type is public for matching refusals
}

/// A read outside transactions of a key that a transaction open in the same thread changed
/// would wait for itself under K14's gate; a get and a scan return the committed value at once
/// instead (K18, K22).
#[test]
fn k14_k18_a_read_of_this_threads_own_uncommitted_change_does_not_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    fill(&t);
    let mut tx = db.begin();
    tx.put(&t, &key(100), b"mine").unwrap();
    let started = Instant::now();
    assert_eq!(t.get(&key(100)).unwrap().unwrap(), vec![b'c'; 100], "the committed value");
    let scan: Vec<_> =
        t.range(Included(&key(90)[..]), Excluded(&key(110)[..])).map(|r| r.unwrap().1).collect();
    assert_eq!(scan.len(), 10);
    assert_eq!(scan[5], vec![b'c'; 100], "the scan returns the committed value too");
    // The gate would wait up to the lock manager's 10 s timeout.
    assert!(started.elapsed() < Duration::from_secs(5), "it did not wait");
    assert_eq!(t.get(&key(102)).unwrap().unwrap(), vec![b'c'; 100]);
    assert_eq!(
        tx.get(&t, &key(100)).unwrap().as_deref(),
        Some(&b"mine"[..]),
        "the transaction sees its write"
    );
    tx.commit().unwrap();
    assert_eq!(t.get(&key(100)).unwrap().as_deref(), Some(&b"mine"[..]));
}

/// `Error::Aborted` returned by the closure rolls the transaction back once, without a retry.
#[test]
fn transact_rolls_back_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    let mut runs = 0;
    let r: Result<(), Error> = db.transact(|tx| {
        runs += 1;
        tx.put(&t, b"x", b"1")?;
        Err(Error::Aborted("no stock".into()))
    });
    assert!(matches!(&r, Err(Error::Aborted(why)) if why == "no stock"), "{r:?}");
    assert_eq!(runs, 1);
    assert_eq!(t.get(b"x").unwrap(), None);
}

/// `Database::transact` retries only a refused lock: any other error the closure returns — a
/// write conflict or a snapshot ended for memory (as a snapshot transaction the closure ran
/// would return them), a duplicate key — rolls the attempt back and is returned after one run.
/// A write conflict was retried as if the transaction were a snapshot-isolation one
/// (`transact_snapshot`), and a closure that kept returning one ran for good.
#[test]
fn transact_returns_an_error_of_its_closure_other_than_a_refused_lock_after_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    let errors: [fn() -> Error; 3] = [
        || Error::WriteConflict { tree: 1, key: b"k".to_vec().into() },
        || Error::SnapshotTooOld { limit: 1 },
        || Error::Tree(swizzledb::TreeError::DuplicateKey),
    ];
    for make in errors {
        let mut runs = 0;
        let r: Result<(), Error> = db.transact(|tx| {
            runs += 1;
            tx.put(&t, b"x", b"1")?;
            if runs > 3 {
                return Err(Error::Aborted("retried".into()));
            }
            Err(make())
        });
        let want = make();
        assert_eq!(r.as_ref().map_err(std::mem::discriminant), Err(std::mem::discriminant(&want)), "{r:?}");
        assert_eq!(runs, 1, "{want:?} was retried");
        assert_eq!(t.get(b"x").unwrap(), None, "{want:?}: the attempt was rolled back");
    }
}

/// RECOVERY.md R2, LOCKS.md K8 (early lock release): a sync-mode commit waits for its flush
/// without holding its locks. While the log's sync is held at a gate, another transaction writes
/// the committing transaction's key at once; a read-only transaction that read the new value is
/// not acknowledged before the writer's commit is durable; and everything ends as committed.
#[test]
fn r2_a_commit_waiting_for_its_flush_holds_no_lock_and_readers_wait_for_its_durability() {
    let gate = common::SyncGate::new(common::new_fs());
    let db = Arc::new(
        common::builder(PoolMode::Swizzling, Arc::new(gate.clone())).create(common::db_path()).unwrap(),
    );
    let t = db.create_tree("t").unwrap();
    t.insert(b"k", b"v0").unwrap();

    gate.set_open(false);
    let (committed_tx, committed_rx) = mpsc::channel();
    let writer = {
        let (db, t, committed_tx) = (Arc::clone(&db), t.clone(), committed_tx.clone());
        std::thread::spawn(move || {
            let mut a = db.begin();
            a.put(&t, b"k", b"v1").unwrap();
            a.commit().unwrap();
            committed_tx.send("writer").unwrap();
        })
    };
    // The writer waits for its flush at the gate.
    let start = Instant::now();
    while gate.held() == 0 {
        assert!(start.elapsed() < DEADLINE, "the writer never reached its sync");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(committed_rx.recv_timeout(BLOCKED).is_err(), "a sync commit returned before its flush");

    // Its lock is free: a second writer takes the key without waiting for the flush.
    let (wrote_tx, wrote_rx) = mpsc::channel();
    let second = {
        let (db, t, committed_tx) = (Arc::clone(&db), t.clone(), committed_tx.clone());
        std::thread::spawn(move || {
            let mut b = db.begin();
            let seen = b.get(&t, b"k").unwrap();
            b.put(&t, b"k", b"v2").unwrap();
            wrote_tx.send(seen).unwrap();
            b.commit().unwrap();
            committed_tx.send("second").unwrap();
        })
    };
    let seen = wrote_rx
        .recv_timeout(DEADLINE)
        .expect("the second writer could not take the key while the first waited for its flush");
    assert_eq!(seen.as_deref(), Some(&b"v1"[..]), "the first commit is visible once its locks are released");
    // A read outside a transaction does not wait (K18): it returns the last committed value,
    // the first writer's or, once the second logged its commit record, the second's (neither
    // durable yet).
    let read = t.get(b"k").unwrap();
    assert!(matches!(read.as_deref(), Some(b"v1" | b"v2")), "{read:?}");
    // The second writer's commit is logged (not durable): a snapshot sees it.
    let start = Instant::now();
    while db.begin_read().get(&t, b"k").unwrap().as_deref() != Some(&b"v2"[..]) {
        assert!(start.elapsed() < DEADLINE, "the second writer never logged its commit");
        std::thread::sleep(Duration::from_millis(1));
    }

    // A transaction that read a not-yet-durable commit is not acknowledged before it. (It
    // retries if it asks for the key in the moment between the second writer's commit record
    // and its lock release: wait-die makes the younger reader die then.)
    let reader = {
        let (db, t, committed_tx) = (Arc::clone(&db), t.clone(), committed_tx.clone());
        std::thread::spawn(move || {
            let seen = db.transact(|c| c.get(&t, b"k")).unwrap();
            committed_tx.send("reader").unwrap();
            seen
        })
    };
    assert!(
        committed_rx.recv_timeout(BLOCKED).is_err(),
        "a commit was acknowledged while the log's sync was held"
    );

    gate.set_open(true);
    writer.join().unwrap();
    second.join().unwrap();
    let read = reader.join().unwrap();
    assert!(matches!(read.as_deref(), Some(b"v1" | b"v2")), "{read:?}");
    let mut done: Vec<&str> = committed_rx.try_iter().collect();
    done.sort_unstable();
    assert_eq!(done, ["reader", "second", "writer"]);
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v2"[..]));
}

/// K15: only a range read's locks keep an insert out of a gap. With no range read of the tree
/// open, an insert goes at once into a gap whose closing key an older transaction holds
/// exclusively — for an update, or as the closing key of its delete — in a leaf or at a leaf's
/// end. Once a transaction has begun a range read of the tree, before it read a single key,
/// the same kind of insert is refused again (wait-die: the younger dies), and it goes ahead
/// once that reader ended.
#[test]
fn k15_only_range_reads_keep_inserts_out_of_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db_wait_die(dir.path(), PoolMode::Swizzling);
    fill(&t);
    let between = |k: u32, tag: &[u8]| [&key(k)[..], tag].concat();
    for k in (1..796).step_by(4) {
        for delete in [false, true] {
            // The older transaction holds `key(k + 1)` for an update, or, having deleted it,
            // `key(k + 3)` as its gap's closing key.
            let mut holder = db.begin();
            if delete {
                assert!(holder.delete(&t, &key(k + 1)).unwrap());
            } else {
                holder.put(&t, &key(k + 1), b"held").unwrap();
            }
            // The delete's keys sort after the update's, so its gap closes at `key(k + 3)`.
            let tag: &[u8] = if delete { b"w" } else { b"u" };
            let mut writer = db.begin();
            writer
                .insert(&t, &between(k, tag), b"in")
                .unwrap_or_else(|e| panic!("{k}: no range read, yet {e}"));
            writer.commit().unwrap();

            let reader = db.begin();
            let range = reader.range(&t, Unbounded, Unbounded);
            let mut writer = db.begin();
            match writer.insert(&t, &between(k, &[tag, b"2"].concat()), b"in") {
                Err(Error::Lock(LockError::Conflict { .. })) => {}
                other => panic!("{k} (delete: {delete}): insert beside an open range read: {other:?}"),
            }
            writer.abort().unwrap();
            drop(range);
            reader.commit().unwrap();
            db.transact(|tx| tx.insert(&t, &between(k, &[tag, b"3"].concat()), b"in")).unwrap();
            holder.abort().unwrap();
        }
    }
    assert_eq!(t.len().unwrap(), 400 + 199 * 4);
}

/// K15: with no range reader in the tree, an insert does not look at its gap, whatever the size
/// of its value. An insert of a large value (btree T22) used to skip the gap gate and lock the
/// closing key anyway, so it waited for a writer of the next key: here, in one thread, a
/// deadlock.
/// K15 through `Transaction::compare_and_swap`: a swap that adds a key to a tree no transaction
/// reads a range of does not wait for the writers of the keys around it, at a leaf's end or
/// inside one, small or large; with every existing key held by another open transaction, in
/// one thread, any wait would fail (the holder is this thread's). A swap that removes a key
/// still locks its gap's closing key to its end (K15), so it meets the other's lock.
#[test]
fn k15_a_swap_adding_a_key_without_range_readers_does_not_wait_for_the_next_keys_writer() {
    for logged in [true, false] {
        let db = Database::builder().page_size(4096).logging(logged).create_in_memory().unwrap();
        let tree = db.create_tree("t").unwrap();
        let even: Vec<u32> = (0..600).step_by(2).collect();
        for &k in &even {
            tree.upsert(&key(k), &[b'o'; 40]).unwrap();
        }
        let mut holder = db.begin();
        for &k in &even {
            holder.put(&tree, &key(k), b"held").unwrap();
        }
        let mut tx = db.begin();
        for k in (1..600).step_by(2) {
            let value = if k % 50 == 1 { vec![7; 3000] } else { b"new".to_vec() };
            let swapped = tx.compare_and_swap(&tree, &key(k), None, Some(&value));
            assert!(matches!(swapped, Ok(Ok(()))), "logged={logged}: a swap adding {k}: {swapped:?}");
        }
        // Removing key 3 widens the gap closed by key 4, which `holder` holds.
        let removed = tx.compare_and_swap(&tree, &key(3), Some(b"new"), None);
        assert!(matches!(removed, Err(Error::Lock(_))), "logged={logged}: a swap removing 3: {removed:?}");
        tx.abort().unwrap();
        holder.commit().unwrap();
        assert_eq!(tree.len().unwrap(), even.len(), "logged={logged}: the aborted swaps are gone");
        assert_eq!(tree.get(&key(2)).unwrap().as_deref(), Some(&b"held"[..]));
        tree.verify().unwrap();
    }
}

#[test]
fn k15_a_large_insert_without_range_readers_does_not_wait_for_the_next_keys_writer() {
    for logged in [true, false] {
        let db = Database::builder().page_size(4096).logging(logged).create_in_memory().unwrap();
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"b", b"1").unwrap();
        let mut next = db.begin();
        next.put(&tree, b"b", b"2").unwrap();
        let mut tx = db.begin();
        assert!(!tx.put(&tree, b"a1", b"small").unwrap());
        assert!(!tx.put(&tree, b"a2", &[7; 3000]).unwrap(), "logged={logged}: a large insert");
        next.commit().unwrap();
        tx.commit().unwrap();
        assert_eq!(tree.get(b"a2").unwrap(), Some(vec![7; 3000]));
        assert_eq!(tree.get(b"b").unwrap(), Some(b"2".to_vec()));
        tree.verify().unwrap();
    }
}

/// `LockStats` (K23): two transactions that each hold one key and ask for the other's make one
/// deadlock, whose younger transaction fails with `LockError::Deadlock`; the counters show that
/// deadlock, at least one wait, no timeout and no wait-die death, and one request per write
/// (a tree handle's write on an unlogged database takes none), logged and unlogged.
#[test]
fn k23_lock_stats_count_the_deadlock_its_waits_and_the_requests() {
    for logging in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().logging(logging).create(dir.path().join("stats.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        t.insert(b"a", b"0").unwrap();
        t.insert(b"b", b"0").unwrap();
        let before = db.lock_stats().unwrap();
        assert_eq!(before.requests, if logging { 2 } else { 0 }, "logging {logging}: {before:?}");
        let barrier = Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let runs: Vec<_> = [(&b"a"[..], &b"b"[..]), (&b"b"[..], &b"a"[..])]
                .into_iter()
                .map(|(mine, theirs)| {
                    let (db, t, barrier) = (&db, &t, &barrier);
                    s.spawn(move || {
                        let mut tx = db.begin();
                        tx.put(t, mine, b"1").unwrap();
                        barrier.wait();
                        let r = tx.put(t, theirs, b"1").map(|_| tx.id());
                        tx.commit().unwrap();
                        r
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(failed.len(), 1, "logging {logging}: {results:?}");
        let winner = results.iter().find_map(|r| r.as_ref().ok()).unwrap();
        match failed[0] {
            Error::Lock(LockError::Deadlock { txn, others, .. }) => {
                assert_eq!(others, &[*winner], "logging {logging}");
                assert!(txn > winner, "logging {logging}: the younger transaction fails");
            }
            other => panic!("logging {logging}: expected a deadlock, got {other:?}"),
        }
        let after = db.lock_stats().unwrap();
        assert_eq!(after.requests - before.requests, 4, "logging {logging}: {after:?}");
        assert_eq!(after.deadlocks - before.deadlocks, 1, "logging {logging}: {after:?}");
        assert!(after.waits > before.waits, "logging {logging}: {after:?}");
        assert_eq!((after.timeouts, after.conflicts), (0, 0), "logging {logging}: {after:?}");
    }
}

/// `Database::transact`'s errors: a lock wait that timed out (K9) is returned, not retried —
/// the closure ran once, nothing of it stays, and the counters show the timeout. (It waits the
/// default 10 s lock wait timeout, which a database does not let a user change: the error's
/// message said to raise it.)
#[test]
fn k9_transact_returns_a_lock_wait_timeout_without_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = db(dir.path(), PoolMode::Swizzling);
    t.insert(b"k", b"0").unwrap();
    let (held_send, held) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let mut calls = 0;
    let r = std::thread::scope(|s| {
        let (db, t) = (&db, &t);
        s.spawn(move || {
            let mut tx = db.begin();
            tx.put(t, b"k", b"holder").unwrap();
            held_send.send(()).unwrap();
            released.recv().unwrap();
            tx.commit().unwrap();
        });
        held.recv().unwrap();
        let r = db.transact(|tx| {
            calls += 1;
            tx.put(t, b"other", b"x")?;
            tx.put(t, b"k", b"waiter").map(|_| ())
        });
        release.send(()).unwrap();
        r
    });
    let Err(e @ Error::Lock(LockError::Timeout { .. })) = r else { panic!("{r:?}") };
    // What to do names the setting a database has: Builder::lock_wait_timeout.
    let shown = e.to_string();
    assert!(shown.contains("left open") && shown.contains("Builder::lock_wait_timeout"), "{shown}");
    assert_eq!(calls, 1, "a timeout is not retried");
    assert_eq!(db.lock_stats().unwrap().timeouts, 1);
    assert_eq!(t.get(b"other").unwrap(), None, "the attempt was rolled back");
    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"holder"[..]));
}

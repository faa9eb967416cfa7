//! The statistics a user reads to see what each technique costs, against what their docs claim:
//! the buffer pool's counters (`Stats`, buffer README B12), the lock manager's (`LockStats`), the
//! log's (`LogStats`), checkpoints', restart's, and which calls answer `None` for which kind of
//! database.

use crate::common::{new_fs, watchdog};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use swizzledb::lock::{DeadlockPolicy, LockError};
use swizzledb::{Database, Error, PoolMode, Stats};
use swizzledb_io::CrashMode;

fn k(i: u32) -> Vec<u8> {
    format!("key-{i:07}").into_bytes()
}

/// Every relation between pool counters that `Stats`' field docs state, on `st`.
fn assert_pool_relations(st: &Stats, ctx: &str) {
    assert_eq!(st.fixes, st.hits + st.misses, "{ctx}: every fix is a hit or a miss: {st:?}");
    assert!(st.optimistic_reads <= st.hits, "{ctx}: optimistic reads are hits: {st:?}");
    assert!(st.unlatched_loads <= st.misses, "{ctx}: unlatched loads are misses: {st:?}");
    assert!(st.misses <= st.pages_read, "{ctx}: a miss reads its page: {st:?}");
    assert!(st.evictor_evictions <= st.evictions, "{ctx}: {st:?}");
    assert!(st.evictor_writes <= st.victim_writes, "{ctx}: {st:?}");
    assert!(st.victim_writes <= st.write_backs, "{ctx}: {st:?}");
    assert!(st.write_backs <= st.pages_written, "{ctx}: a write-back writes a page: {st:?}");
    assert!(st.evictor_failures <= st.evictor_rounds, "{ctx}: {st:?}");
    assert!(st.policy_dropped_hits <= st.policy_accesses, "{ctx}: dropped hits are accesses: {st:?}");
    assert!(st.policy_lock_timed_holds <= st.policy_lock_acquisitions, "{ctx}: {st:?}");
    assert!(
        st.rejected_in_use + st.rejected_root + st.rejected_swizzled_children + st.rejected_not_resident
            <= st.proposals,
        "{ctx}: a refused proposal was proposed: {st:?}"
    );
}

/// The pool's counters, under several replacement policies (plain, BP-Wrapper-batched, locked)
/// and in every mode, add up as documented after threads that counted have exited (B12); a
/// policy that is not instrumented reports no policy-lock figures; `since` subtracts field by
/// field.
#[test]
fn stats_truth_pool_counters_add_up_under_each_policy_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for mode in PoolMode::ALL {
        for policy in ["lru", "bpw-2q", "locked-lru", "clock", "bpw-lru"] {
            let ctx = format!("{mode:?} {policy}");
            n += 1;
            let db = Database::builder()
                .mode(mode)
                .page_size(4096)
                .pool_bytes(if mode == PoolMode::MainMemory { 16 << 20 } else { 48 * 4096 })
                .policy(policy.parse::<swizzledb::PolicySpec>().unwrap())
                .logging(false)
                .create(dir.path().join(format!("p{n}.swz")))
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let tree = db.create_tree("t").unwrap();
            let run = |from: u32| {
                std::thread::scope(|s| {
                    for th in 0..3u32 {
                        let tree = &tree;
                        s.spawn(move || {
                            for i in 0..600u32 {
                                tree.upsert(&k(from + th * 1000 + i), &[th as u8; 120]).unwrap();
                            }
                            for i in (0..600u32).rev() {
                                assert!(tree.get(&k(from + th * 1000 + i)).unwrap().is_some());
                            }
                        });
                    }
                });
            };
            run(0);
            let mid = db.stats();
            assert_pool_relations(&mid, &ctx);
            run(10_000);
            let end = db.stats();
            assert_pool_relations(&end, &ctx);
            let d = end.since(&mid);
            assert_eq!(d.fixes, end.fixes - mid.fixes, "{ctx}");
            assert_eq!(d.misses, end.misses - mid.misses, "{ctx}");
            assert_eq!(d.evictions, end.evictions - mid.evictions, "{ctx}");
            assert_pool_relations(&d, &format!("{ctx}, the second run alone"));
            assert_eq!(mid.since(&end), Stats::default(), "{ctx}: no counter goes down");
            if mode != PoolMode::MainMemory {
                assert!(end.evictions > 0, "{ctx}: the data outgrew the pool: {end:?}");
            }
            let instrumented = policy.starts_with("bpw-") || policy.starts_with("locked-");
            if !instrumented || mode == PoolMode::MainMemory {
                assert_eq!(
                    (end.policy_lock_acquisitions, end.policy_accesses, end.policy_lock_waits),
                    (0, 0, 0),
                    "{ctx}: no instrumented lock: {end:?}"
                );
            } else {
                assert!(end.policy_accesses > 0, "{ctx}: the wrapper saw the accesses: {end:?}");
            }
            db.close().unwrap();
        }
    }
}

/// Counters are per database: two databases worked on in turn by the same threads each count
/// only their own fixes, lock requests and log records (B12's per-pool blocks and the
/// last-used-block shortcut included).
#[test]
fn stats_truth_two_databases_in_one_process_count_apart() {
    let dir = tempfile::tempdir().unwrap();
    for mode in PoolMode::ALL {
        let open = |name: &str| {
            Database::builder()
                .mode(mode)
                .page_size(4096)
                .pool_bytes(if mode == PoolMode::MainMemory { 16 << 20 } else { 32 * 4096 })
                .checkpoint_interval(None)
                .lab(|l| l.cleaner_interval(None))
                .create(dir.path().join(format!("{name}-{mode:?}.swz")))
                .unwrap()
        };
        let (a, b) = (open("a"), open("b"));
        let (ta, tb) = (a.create_tree("t").unwrap(), b.create_tree("t").unwrap());
        for i in 0..120 {
            ta.upsert(&k(i), b"a").unwrap();
            let mut tx = a.begin();
            tx.put(&ta, &k(i), b"aa").unwrap();
            tx.commit().unwrap();
        }
        let (pool, locks, log) = (a.stats(), a.lock_stats().unwrap(), a.log_stats().unwrap());
        let versions = a.version_stats().unwrap();
        // This thread and others now work on `b` only.
        let work_b = |from: u32| {
            for i in from..from + 120 {
                tb.upsert(&k(i), &[7; 200]).unwrap();
                let mut tx = b.begin();
                tx.put(&tb, &k(i), b"bb").unwrap();
                assert!(tx.get(&tb, &k(i)).unwrap().is_some());
                tx.commit().unwrap();
            }
        };
        work_b(0);
        std::thread::scope(|s| {
            for th in 1..3 {
                let work_b = &work_b;
                s.spawn(move || work_b(th * 1000));
            }
        });
        let ctx = format!("{mode:?}");
        let now = a.stats();
        assert_eq!(
            (now.fixes, now.hits, now.misses, now.page_table_lookups, now.swizzles),
            (pool.fixes, pool.hits, pool.misses, pool.page_table_lookups, pool.swizzles),
            "{ctx}: b's work counted in a's pool"
        );
        assert_eq!(a.lock_stats().unwrap(), locks, "{ctx}: b's requests counted in a's lock manager");
        let alog = a.log_stats().unwrap();
        assert_eq!((alog.appends, alog.body_bytes), (log.appends, log.body_bytes), "{ctx}");
        assert_eq!(a.version_stats().unwrap().made, versions.made, "{ctx}");
        let bst = b.stats();
        assert!(bst.fixes > pool.fixes, "{ctx}: b counted its own work: {bst:?}");
        assert!(b.lock_stats().unwrap().requests >= 360, "{ctx}: {:?}", b.lock_stats());
        // And back to `a` on this thread: its counts go on from where they were.
        assert!(ta.get(&k(1)).unwrap().is_some());
        assert!(a.stats().fixes > pool.fixes, "{ctx}: a's fix after b's work was not counted in a");
        a.close().unwrap();
        b.close().unwrap();
    }
}

/// A read-only open (R27) reads no log and writes nothing: the log's, checkpoints' and
/// cleaner's figures are `None` (or zero), restart did nothing, and the pool wrote no page.
#[test]
fn stats_truth_a_read_only_open_writes_no_page_and_has_no_log_figures() {
    let dir = tempfile::tempdir().unwrap();
    for logged in [true, false] {
        let path = dir.path().join(format!("ro-{logged}.swz"));
        let db =
            Database::builder().page_size(4096).pool_bytes(24 * 4096).logging(logged).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..2000 {
            t.upsert(&k(i), &[3; 100]).unwrap();
        }
        db.close().unwrap();
        let db = Database::builder().pool_bytes(24 * 4096).read_only(true).open(&path).unwrap();
        let ctx = format!("logged {logged}");
        assert_eq!(db.is_logged(), logged, "{ctx}");
        assert!(db.log_stats().is_none(), "{ctx}");
        assert!(db.log_bytes().is_none(), "{ctx}");
        assert!(db.checkpoint_stats().is_none(), "{ctx}");
        assert!(db.cleaner_stats().is_none(), "{ctx}");
        assert!(db.redo_progress().is_none(), "{ctx}");
        assert_eq!(db.checkpoint_counts(), swizzledb::CheckpointCounts::default(), "{ctx}");
        assert_eq!(db.restart_stats(), swizzledb::RestartStats::default(), "{ctx}");
        assert!(db.lock_stats().is_some() && db.version_stats().is_some(), "{ctx}: locking is on");
        let t = db.tree("t").unwrap();
        for i in 0..2000 {
            assert!(t.get(&k(i)).unwrap().is_some());
        }
        let st = db.stats();
        assert_pool_relations(&st, &ctx);
        assert!(st.misses > 0 && st.evictions > 0, "{ctx}: {st:?}");
        assert_eq!((st.pages_written, st.write_backs), (0, 0), "{ctx}: B34, the pool never writes: {st:?}");
        db.close().unwrap();
    }
}

/// `LockStats` counts what happened, exactly: a request that waits for a holder (+1 wait), a
/// wait that times out (+1 wait, +1 timeout), a deadlock under detection (both waited, one
/// failed), and the same crossing under wait-die (the younger dies without waiting).
#[test]
fn stats_truth_lock_stats_count_waits_timeouts_deadlocks_and_conflicts_exactly() {
    watchdog("lock stats", 30, || {
        let dir = tempfile::tempdir().unwrap();
        for policy in [DeadlockPolicy::Detect, DeadlockPolicy::WaitDie] {
            let db = Database::builder()
                .page_size(4096)
                .pool_bytes(64 * 4096)
                .lock_wait_timeout(Duration::from_millis(300))
                .lab(|l| l.deadlock_policy(policy))
                .create(dir.path().join(format!("{policy:?}.swz")))
                .unwrap();
            let t = db.create_tree("t").unwrap();
            t.upsert(b"a", b"0").unwrap();
            t.upsert(b"b", b"0").unwrap();
            let ctx = format!("{policy:?}");
            let s0 = db.lock_stats().unwrap();
            let wait_for = |waits: u64| {
                while db.lock_stats().unwrap().waits < waits {
                    std::thread::sleep(Duration::from_millis(1));
                }
            };

            // One wait, then a grant: the holder is younger under neither policy's refusal.
            let mut older = db.begin();
            older.put(&t, b"a", b"1").unwrap();
            std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let mut tx = db.begin();
                    tx.put(&t, b"a", b"2")?;
                    tx.commit()
                });
                if policy == DeadlockPolicy::Detect {
                    wait_for(s0.waits + 1);
                    older.commit().unwrap();
                    waiter.join().unwrap().unwrap();
                } else {
                    // Wait-die: the younger requester dies at once.
                    let e = waiter.join().unwrap().unwrap_err();
                    assert!(matches!(e, Error::Lock(LockError::Conflict { .. })), "{ctx}: {e}");
                    older.commit().unwrap();
                }
            });
            let s1 = db.lock_stats().unwrap();
            if policy == DeadlockPolicy::Detect {
                assert_eq!((s1.waits, s1.conflicts), (s0.waits + 1, s0.conflicts), "{ctx}: {s1:?}");
            } else {
                assert_eq!((s1.waits, s1.conflicts), (s0.waits, s0.conflicts + 1), "{ctx}: {s1:?}");
            }
            assert_eq!((s1.deadlocks, s1.timeouts), (s0.deadlocks, s0.timeouts), "{ctx}: {s1:?}");
            assert!(s1.requests >= s0.requests + 2, "{ctx}: {s1:?}");

            // A timeout: the older waits for a younger holder that never lets go in time.
            let mut younger_holder = None;
            let mut old = db.begin();
            std::thread::scope(|s| {
                let (tx_go, rx_go) = std::sync::mpsc::channel();
                let (tx_done, rx_done) = std::sync::mpsc::channel::<()>();
                let (db, tr) = (&db, &t);
                let holder = s.spawn(move || {
                    let mut young = db.begin();
                    young.put(tr, b"b", b"1").unwrap();
                    tx_go.send(()).unwrap();
                    rx_done.recv().unwrap();
                    young.commit().unwrap();
                });
                rx_go.recv().unwrap();
                let e = old.put(&t, b"b", b"2").unwrap_err();
                assert!(matches!(e, Error::Lock(LockError::Timeout { .. })), "{ctx}: {e}");
                tx_done.send(()).unwrap();
                younger_holder = Some(holder.join());
            });
            younger_holder.unwrap().unwrap();
            old.abort().unwrap();
            let s2 = db.lock_stats().unwrap();
            assert_eq!(
                (s2.waits, s2.timeouts, s2.deadlocks, s2.conflicts),
                (s1.waits + 1, s1.timeouts + 1, s1.deadlocks, s1.conflicts),
                "{ctx}: one wait that timed out: {s2:?}"
            );

            // A crossing: `first` holds a and wants b, `second` holds b and wants a.
            let mut first = db.begin();
            first.put(&t, b"a", b"3").unwrap();
            std::thread::scope(|s| {
                let (tx_go, rx_go) = std::sync::mpsc::channel();
                let (db, tr, wait_for) = (&db, &t, &wait_for);
                let second = s.spawn(move || {
                    let mut second = db.begin();
                    second.put(tr, b"b", b"3").unwrap();
                    tx_go.send(()).unwrap();
                    // Under detection: wait until `first` waits for b, then close the cycle.
                    if policy == DeadlockPolicy::Detect {
                        wait_for(s2.waits + 1);
                    }
                    let r = second.put(tr, b"a", b"4");
                    let e = r.unwrap_err();
                    second.abort().unwrap();
                    e
                });
                rx_go.recv().unwrap();
                if policy == DeadlockPolicy::Detect {
                    // `first` waits for b; `second`'s request closes the cycle, and the younger
                    // (`second`) fails; `first` is then granted.
                    first.put(&t, b"b", b"5").unwrap();
                    let e = second.join().unwrap();
                    assert!(matches!(e, Error::Lock(LockError::Deadlock { .. })), "{ctx}: {e}");
                } else {
                    // `second` is younger: its request for a dies at once, whichever comes
                    // first; `first` (older) waits for b until `second` aborts.
                    let e = second.join().unwrap();
                    assert!(matches!(e, Error::Lock(LockError::Conflict { .. })), "{ctx}: {e}");
                    first.put(&t, b"b", b"5").unwrap();
                }
            });
            first.commit().unwrap();
            let s3 = db.lock_stats().unwrap();
            if policy == DeadlockPolicy::Detect {
                assert_eq!(
                    (s3.waits, s3.deadlocks, s3.conflicts, s3.timeouts),
                    (s2.waits + 2, s2.deadlocks + 1, s2.conflicts, s2.timeouts),
                    "{ctx}: both waited, one was the victim: {s3:?}"
                );
            } else {
                assert_eq!(
                    (s3.deadlocks, s3.conflicts, s3.timeouts),
                    (s2.deadlocks, s2.conflicts + 1, s2.timeouts),
                    "{ctx}: one died: {s3:?}"
                );
                assert!(s3.waits <= s2.waits + 1, "{ctx}: only the older may have waited: {s3:?}");
            }
            db.close().unwrap();
        }
    });
}

/// Checkpoint and log counters: `checkpoint_counts` grows by one per `Database::checkpoint`
/// (and agrees with `checkpoint_stats`), the log's appends and body bytes grow by at least the
/// records written, its reserved bytes are at least its body bytes, and every flush request is
/// counted in exactly one of its outcomes (wal W6).
#[test]
fn stats_truth_checkpoints_and_log_records_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .checkpoint_interval(None)
        .create(dir.path().join("c.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let c0 = db.checkpoint_counts();
    let l0 = db.log_stats().unwrap();
    let bytes0 = db.log_bytes().unwrap();
    let mut written = 0u64;
    for i in 0..200 {
        let v = vec![9u8; 50 + i as usize];
        t.upsert(&k(i), &v).unwrap();
        written += (k(i).len() + v.len()) as u64;
    }
    let l1 = db.log_stats().unwrap();
    assert!(l1.appends >= l0.appends + 200, "{l1:?}");
    assert!(l1.body_bytes >= l0.body_bytes + written, "{l1:?}");
    assert!(l1.log_bytes >= l1.body_bytes, "{l1:?}");
    assert!(
        db.log_bytes().unwrap() >= bytes0 + written,
        "log_bytes {} from {bytes0}",
        db.log_bytes().unwrap()
    );
    for n in 1..=3 {
        db.checkpoint().unwrap();
        let c = db.checkpoint_counts();
        assert_eq!(c.checkpoints, c0.checkpoints + n, "{c:?}");
        assert_eq!((c.background, c.failed), (c0.background, c0.failed), "{c:?}");
        assert_eq!(db.checkpoint_stats().unwrap().checkpoints, c.checkpoints);
    }
    let l2 = db.log_stats().unwrap();
    assert_eq!(
        l2.flush_requests,
        l2.flush_already_durable + l2.flush_led + l2.flush_joined + l2.flush_failed,
        "W6: each request has one outcome: {l2:?}"
    );
    db.close().unwrap();
}

/// After a crash, `restart_stats` reports what the scenario implies: the two transactions left
/// open are the losers, each of their changes is compensated, and the committed work is redone;
/// the next restart after a clean close has nothing to do (no torn tail, no losers).
#[test]
fn stats_truth_restart_stats_count_the_losers_a_crash_leaves() {
    let fs = Arc::new(new_fs());
    let path = Path::new("/crash/r.swz");
    let builder = || {
        Database::builder()
            .page_size(4096)
            .pool_bytes(64 * 4096)
            .checkpoint_interval(None)
            .lab(|l| l.vfs(fs.clone()).cleaner_interval(None))
    };
    let db = builder().create(path).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..20 {
        t.upsert(&k(i), b"committed").unwrap();
    }
    db.checkpoint().unwrap();
    let mut l1 = db.begin();
    let mut l2 = db.begin();
    for i in 0..3 {
        l1.put(&t, &k(100 + i), b"loser one").unwrap();
    }
    for i in 0..2 {
        l2.put(&t, &k(200 + i), b"loser two").unwrap();
    }
    let mut w = db.begin();
    w.put(&t, &k(300), b"winner").unwrap();
    w.commit().unwrap(); // synchronous: the losers' records before it are durable too
    fs.crash(CrashMode::DropUnsynced);
    drop((l1, l2));
    drop(t);
    drop(db);
    let db = builder().open(path).unwrap();
    let s = db.restart_stats();
    assert_eq!(s.losers, 2, "{s:?}");
    assert_eq!(s.compensations, 5, "one per change of the losers: {s:?}");
    assert!(s.analyzed > 0 && s.redone > 0, "{s:?}");
    assert!(!s.instant, "{s:?}");
    assert!(db.redo_progress().is_none());
    let t = db.tree("t").unwrap();
    assert!(t.get(&k(100)).unwrap().is_none() && t.get(&k(300)).unwrap().is_some());
    db.close().unwrap();
    let db = builder().open(path).unwrap();
    let s = db.restart_stats();
    assert_eq!(
        (s.losers, s.compensations, s.redone, s.log_torn_bytes),
        (0, 0, 0, 0),
        "after a clean close: {s:?}"
    );
    db.close().unwrap();
}

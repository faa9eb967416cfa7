//! The lock manager's unit tests (LOCKS.md K1–K25): against its private state, so a child
//! module of `lock.rs`.

use super::*;
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::thread;

const S: LockMode = LockMode::Shared;
const X: LockMode = LockMode::Exclusive;
/// Hang guard for waits that must end: generous, never asserted on.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// K23: one request can close several cycles at once, one through each shared holder of
/// the lock it waits for. The look at queueing breaks them all; it used to stop at the
/// first, and the others held their members until the periodic look (at 16 threads on two
/// cores, one cycle in six).
#[test]
fn k23_a_request_that_closes_two_cycles_breaks_both() {
    let m = LockManager::new(64);
    let (d, a, b) = (txn_number(1), txn_number(5), txn_number(6));
    // D holds `ma` and `mb` exclusively; A and B hold `l` shared.
    m.lock(d, 1, b"ma", X).unwrap();
    m.lock(d, 1, b"mb", X).unwrap();
    m.lock(a, 1, b"l", S).unwrap();
    m.lock(b, 1, b"l", S).unwrap();
    // Queued and registered as `acquire` does, without a thread to wait in.
    let queue = |t: TxnId, key: &[u8]| -> Arc<WaitSlot> {
        let hash = m.name_hash(1, key);
        let mut table = m.shards[m.shard_of(hash)].table.lock();
        let head = table.find_or_make(m.hash, hash, 1, key);
        let id = head.id;
        let Decision::Queued { slot, .. } = head.request(t, X, true, m.policy) else {
            panic!("{t} should wait for {key:?}")
        };
        drop(table);
        m.set_waiting(t, Some(HeldLock { hash, head: id }));
        // Each from a thread of its own (K23 reads a cycle through the walker's thread
        // otherwise).
        m.txns[m.txn_shard(t)].txns.lock().get_mut(&t).expect("registered").thread = u64::MAX - t.0;
        slot
    };
    let (wait_a, wait_b) = (queue(a, b"ma"), queue(b, b"mb"));
    // D, the oldest, asks for `l` exclusively: a cycle through A and one through B.
    let _wait_d = queue(d, b"l");
    assert!(m.detect(d).is_none(), "the oldest is no victim");
    assert_eq!(wait_a.state(), VICTIM, "the cycle through A is broken");
    assert_eq!(wait_b.state(), VICTIM, "the cycle through B is broken");
}

fn t(n: u64) -> TxnId {
    TxnId(n)
}

/// A wait-die manager: the K6 tests below are written against it; K23's build their own.
fn manager() -> LockManager {
    LockManager::new(4).with_wait_timeout(HANG_GUARD).with_deadlock_policy(DeadlockPolicy::WaitDie)
}

fn check(lm: &LockManager) {
    if let Err(e) = lm.check_invariants() {
        panic!("{e}");
    }
}

/// Waits (yielding, not spinning hot) until `n` requests have queued in total; bounded by
/// the hang guard.
fn wait_for_waits(lm: &LockManager, n: u64) {
    let start = Instant::now();
    while lm.stats().waits < n {
        assert!(start.elapsed() < HANG_GUARD, "no request queued within the hang guard");
        thread::sleep(Duration::from_millis(1));
    }
}

/// The holders of `(tree, key)`, sorted by transaction.
fn holders_of(lm: &LockManager, tree: u32, key: &[u8]) -> Vec<(TxnId, LockMode)> {
    let hash = (lm.hash)(tree, key);
    let table = lm.shards[lm.shard_of(hash)].table.lock();
    let head = table.find(hash, tree, key);
    let mut v: Vec<_> = head.map_or(Vec::new(), |h| h.holders.iter().map(|h| (h.txn, h.mode)).collect());
    v.sort_unstable_by_key(|h| h.0);
    v
}

/// The waiting requests of `(tree, key)`, in queue order.
fn waiters_of(lm: &LockManager, tree: u32, key: &[u8]) -> Vec<(TxnId, LockMode)> {
    let hash = (lm.hash)(tree, key);
    let table = lm.shards[lm.shard_of(hash)].table.lock();
    let head = table.find(hash, tree, key);
    head.map_or(Vec::new(), |h| h.queue.iter().map(|r| (r.txn, r.mode)).collect())
}

fn conflict_parties(e: &LockError) -> (TxnId, TxnId) {
    match e {
        LockError::Conflict { txn, holder, .. } => (*txn, *holder),
        other => panic!("expected a wait-die conflict, got {other:?}"),
    }
}

#[test]
fn k2_compatibility_matrix() {
    // (held, requested, granted without waiting)
    for (held, req, ok) in [(S, S, true), (S, X, false), (X, S, false), (X, X, false)] {
        let lm = manager();
        lm.lock(t(2), 1, b"k", held).unwrap();
        // The older requester would wait (try_lock refuses); the younger one dies.
        assert_eq!(lm.try_lock(t(1), 1, b"k", req).unwrap(), ok, "{held} then {req}");
        if !ok {
            let e = lm.try_lock(t(3), 1, b"k", req).unwrap_err();
            assert_eq!(conflict_parties(&e), (t(3), t(2)));
        }
        check(&lm);
    }
}

#[test]
fn k13_a_lock_head_is_at_most_two_cache_lines() {
    assert!(std::mem::size_of::<LockHead>() <= 128, "{}", std::mem::size_of::<LockHead>());
    assert_eq!(std::mem::size_of::<Option<LockHead>>(), std::mem::size_of::<LockHead>());
}

#[test]
fn k13_a_shard_is_its_mutex_and_table_on_one_line_then_its_first_head() {
    assert_eq!(std::mem::size_of::<Shard>(), 192);
    assert_eq!(std::mem::align_of::<Shard>(), 64);
    let shard = Shard::new();
    let table = shard.table.lock();
    let at = |field: usize| field - std::ptr::from_ref(&shard) as usize;
    assert_eq!(at(std::ptr::from_ref(&table.first) as usize), 64, "the first head starts the second line");
    assert!(
        at(std::ptr::from_ref(&shard.writers) as usize) < 64,
        "K18: the writers' count is on the mutex's line"
    );
    assert!(at(std::ptr::from_ref(&shard.table) as usize) < 64);
    assert!(
        at(std::ptr::from_ref(&table.requests) as usize) < 64,
        "the requests' count is on the mutex's line"
    );
    assert!(at(std::ptr::from_ref(&table.heads) as usize) < 64);
}

#[test]
fn k13_heads_beyond_the_first_go_to_the_table_and_either_is_found_and_dropped() {
    // One shard: every lock shares it, so the first head is in `first`, the rest in `heads`.
    let lm = LockManager::new(1).with_wait_timeout(HANG_GUARD);
    for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
        lm.lock(t(i as u64 + 1), 1, *k, X).unwrap();
    }
    assert_eq!(lm.lock_count(), 3);
    {
        let table = lm.shards[0].table.lock();
        assert_eq!(table.first.as_ref().map(|h| &h.key[..]), Some(&b"a"[..]));
        assert_eq!(table.heads.len(), 2);
    }
    // A conflicting request finds each head wherever it is.
    for k in [b"a", b"b", b"c"] {
        assert!(!lm.try_lock(t(9), 1, k, S).unwrap());
    }
    check(&lm);
    // Dropping the first head frees `first`; the next new head goes there.
    lm.release_all(t(1));
    assert!(lm.shards[0].table.lock().first.is_none());
    lm.lock(t(4), 1, b"d", X).unwrap();
    assert_eq!(lm.shards[0].table.lock().first.as_ref().map(|h| &h.key[..]), Some(&b"d"[..]));
    assert!(!lm.try_lock(t(9), 1, b"d", S).unwrap());
    check(&lm);
    for n in [2, 3, 4] {
        lm.release_all(t(n));
    }
    assert_eq!(lm.lock_count(), 0);
    check(&lm);
}

#[test]
fn rare_counters_add_up_with_the_requests_across_shards() {
    // Detection: a request that waits and times out.
    let lm = LockManager::new(4);
    lm.lock(t(1), 1, b"a", X).unwrap();
    lm.lock(t(1), 1, b"b", X).unwrap();
    assert!(!lm.try_lock(t(2), 1, b"a", X).unwrap());
    // (From another thread: a wait for a transaction of one's own thread is a deadlock, K23.)
    let e = std::thread::scope(|s| {
        s.spawn(|| lm.lock_timeout(t(2), 1, b"b", X, Duration::from_millis(1)).unwrap_err()).join().unwrap()
    });
    assert!(matches!(e, LockError::Timeout { .. }), "{e:?}");
    assert_eq!(lm.stats(), LockStats { requests: 4, waits: 1, conflicts: 0, deadlocks: 0, timeouts: 1 });
    check(&lm);
    // Wait-die: a younger request dies.
    let lm = manager();
    lm.lock(t(1), 1, b"a", X).unwrap();
    assert!(matches!(lm.lock(t(2), 1, b"a", S), Err(LockError::Conflict { .. })));
    assert_eq!(lm.stats(), LockStats { requests: 2, waits: 0, conflicts: 1, deadlocks: 0, timeouts: 0 });
    check(&lm);
}

#[test]
fn k1_same_tree_other_key_and_same_key_other_tree_do_not_conflict() {
    let lm = manager();
    lm.lock(t(1), 1, b"k", X).unwrap();
    assert!(lm.try_lock(t(2), 1, b"j", X).unwrap());
    assert!(lm.try_lock(t(2), 2, b"k", X).unwrap());
    assert!(lm.try_lock(t(2), 1, b"", X).unwrap());
    assert_eq!(lm.lock_count(), 4);
    check(&lm);
}

#[test]
fn k1_hash_collisions_cause_no_false_conflicts() {
    let lm = LockManager::with_hash(4, |_, _| 42)
        .with_wait_timeout(HANG_GUARD)
        .with_deadlock_policy(DeadlockPolicy::WaitDie);
    lm.lock(t(1), 1, b"alice", X).unwrap();
    lm.lock(t(2), 1, b"bob", X).unwrap();
    lm.lock(t(3), 2, b"alice", X).unwrap();
    check(&lm);
    assert!(!lm.try_lock(t(1), 1, b"bob", S).unwrap(), "same name still conflicts");
    let e = lm.try_lock(t(4), 1, b"alice", S).unwrap_err();
    assert_eq!(conflict_parties(&e), (t(4), t(1)));
    assert_eq!(lm.release_all(t(2)), 1);
    assert!(lm.try_lock(t(4), 1, b"bob", S).unwrap(), "the right head was released");
    assert_eq!(holders_of(&lm, 1, b"alice"), vec![(t(1), X)]);
    assert_eq!(holders_of(&lm, 1, b"bob"), vec![(t(4), S)]);
    check(&lm);
    for n in 1..=4 {
        lm.release_all(t(n));
    }
    assert_eq!(lm.lock_count(), 0);
}

#[test]
fn k3_re_requests_are_no_ops() {
    let lm = manager();
    lm.lock(t(1), 1, b"k", S).unwrap();
    lm.lock(t(1), 1, b"k", S).unwrap();
    lm.lock(t(1), 1, b"k", X).unwrap(); // upgrade, sole holder
    lm.lock(t(1), 1, b"k", S).unwrap(); // X covers S
    lm.lock(t(1), 1, b"k", X).unwrap();
    assert_eq!(lm.locks_held(t(1)), 1);
    assert_eq!(lm.stats(), LockStats { requests: 5, waits: 0, conflicts: 0, deadlocks: 0, timeouts: 0 });
    check(&lm);
    assert_eq!(lm.release_all(t(1)), 1);
    assert_eq!(lm.lock_count(), 0);
    assert_eq!(lm.release_all(t(1)), 0);
}

#[test]
fn k3_upgrade_of_the_sole_holder_is_immediate_and_exclusive() {
    let lm = manager();
    lm.lock(t(2), 1, b"k", S).unwrap();
    lm.lock(t(2), 1, b"k", X).unwrap();
    // Now exclusive: even a shared request of an older transaction must wait.
    assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap());
    check(&lm);
}

#[test]
fn k8_release_all_wakes_the_waiter() {
    let lm = manager();
    lm.lock(t(5), 1, b"k", X).unwrap();
    lm.lock(t(5), 1, b"other", S).unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| lm.lock(t(3), 1, b"k", X));
        wait_for_waits(&lm, 1);
        check(&lm);
        assert_eq!(lm.release_all(t(5)), 2);
        waiter.join().unwrap().unwrap();
    });
    assert_eq!(lm.locks_held(t(3)), 1);
    assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap(), "t3 now holds X");
    check(&lm);
}

/// K10: two threads hand one exclusive lock back and forth, each holding it for a few
/// microseconds, so that most grants reach a request while it watches (it then returns
/// without taking the shard mutex again) and some after it parked. Every grant must leave
/// its transaction the only holder, and nothing queued behind.
#[test]
fn k10_grants_reach_watching_and_parked_requests_alike() {
    let lm = LockManager::new(4).with_wait_timeout(HANG_GUARD);
    let inside = AtomicU32::new(0);
    let rounds = if cfg!(miri) { 20 } else { 3_000 };
    thread::scope(|s| {
        for th in 0..2u64 {
            let (lm, inside) = (&lm, &inside);
            s.spawn(move || {
                for i in 0..rounds {
                    let txn = t(1 + th + 2 * i);
                    lm.lock(txn, 1, b"k", X).unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "K2: two exclusive holders");
                    // Hold it a little, longer now and then than the watch lasts.
                    let hold =
                        if i % 64 == 0 { Duration::from_micros(2_000) } else { Duration::from_micros(2) };
                    let until = Instant::now() + hold;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(lm.release_all(txn), 1);
                }
            });
        }
    });
    assert_eq!(lm.lock_count(), 0, "every head went with its last holder");
    assert_eq!(lm.spinners.0.load(Ordering::Relaxed), 0, "every watcher counted itself out");
    check(&lm);
}

#[test]
fn k4_shared_waiters_behind_an_exclusive_holder_are_granted_together() {
    let lm = manager();
    lm.lock(t(9), 1, b"k", X).unwrap();
    thread::scope(|s| {
        let a = s.spawn(|| lm.lock(t(1), 1, b"k", S));
        wait_for_waits(&lm, 1);
        let b = s.spawn(|| lm.lock(t(2), 1, b"k", S));
        wait_for_waits(&lm, 2);
        check(&lm);
        assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(1), S), (t(2), S)]);
        lm.release_all(t(9));
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    assert_eq!((lm.locks_held(t(1)), lm.locks_held(t(2))), (1, 1));
    check(&lm);
}

#[test]
fn k4_a_waiting_exclusive_is_not_overtaken_by_a_later_shared() {
    let lm = manager();
    lm.lock(t(9), 1, b"k", S).unwrap();
    thread::scope(|s| {
        let writer = s.spawn(|| lm.lock(t(2), 1, b"k", X));
        wait_for_waits(&lm, 1);
        // Compatible with the holder, but an X waits ahead: the older reader would queue...
        assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap());
        assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(2), X)], "try_lock queues nothing");
        // ...and a reader younger than the waiting writer dies.
        let e = lm.try_lock(t(3), 1, b"k", S).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(3), t(2)));
        lm.release_all(t(9));
        writer.join().unwrap().unwrap();
    });
    check(&lm);
}

#[test]
fn k6_older_waits_for_younger_and_younger_dies_at_once() {
    let lm = manager();
    lm.lock(t(5), 1, b"k", X).unwrap();
    let e = lm.lock(t(6), 1, b"k", S).unwrap_err();
    assert_eq!(conflict_parties(&e), (t(6), t(5)));
    assert_eq!(lm.stats().conflicts, 1);
    assert_eq!(lm.locks_held(t(6)), 0);
    thread::scope(|s| {
        let older = s.spawn(|| lm.lock(t(4), 1, b"k", S));
        wait_for_waits(&lm, 1);
        lm.release_all(t(5));
        older.join().unwrap().unwrap();
    });
    assert_eq!(lm.stats().waits, 1);
    check(&lm);
}

#[test]
fn k6_conflict_names_the_oldest_blocker() {
    let lm = manager();
    lm.lock(t(4), 1, b"k", S).unwrap();
    lm.lock(t(2), 1, b"k", S).unwrap();
    lm.lock(t(3), 1, b"k", S).unwrap();
    let e = lm.lock(t(7), 1, b"k", X).unwrap_err();
    assert_eq!(conflict_parties(&e), (t(7), t(2)));
    assert!(e.to_string().contains("abort and retry the transaction"), "{e}");
}

#[test]
fn k6_two_upgraders_the_older_waits_and_the_younger_dies() {
    let lm = manager();
    lm.lock(t(1), 1, b"k", S).unwrap();
    lm.lock(t(2), 1, b"k", S).unwrap();
    thread::scope(|s| {
        let older = s.spawn(|| lm.lock(t(1), 1, b"k", X));
        wait_for_waits(&lm, 1);
        check(&lm);
        let e = lm.lock(t(2), 1, b"k", X).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(2), t(1)));
        assert_eq!(lm.locks_held(t(2)), 1, "the dead upgrader keeps its S until release_all");
        lm.release_all(t(2));
        older.join().unwrap().unwrap();
    });
    assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(1), X)]);
    check(&lm);
}

#[test]
fn k6_two_upgraders_the_younger_first_dies_and_the_older_then_gets_x() {
    let lm = manager();
    lm.lock(t(1), 1, b"k", S).unwrap();
    lm.lock(t(2), 1, b"k", S).unwrap();
    let e = lm.lock(t(2), 1, b"k", X).unwrap_err();
    assert_eq!(conflict_parties(&e), (t(2), t(1)));
    thread::scope(|s| {
        let older = s.spawn(|| lm.lock(t(1), 1, b"k", X));
        wait_for_waits(&lm, 1);
        lm.release_all(t(2));
        older.join().unwrap().unwrap();
    });
    assert_eq!(lm.try_lock(t(3), 1, b"k", S).map_err(|e| conflict_parties(&e)), Err((t(3), t(1))));
    check(&lm);
}

#[test]
fn k3_an_upgrade_goes_ahead_of_waiting_requests() {
    let lm = manager();
    lm.lock(t(5), 1, b"k", S).unwrap();
    lm.lock(t(6), 1, b"k", S).unwrap();
    thread::scope(|s| {
        let writer = s.spawn(|| lm.lock(t(2), 1, b"k", X));
        wait_for_waits(&lm, 1);
        let upgrader = s.spawn(|| lm.lock(t(5), 1, b"k", X));
        wait_for_waits(&lm, 2);
        check(&lm);
        assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(5), X), (t(2), X)]);
        // t6 leaves: the upgrade (front) is granted, the older writer still waits.
        lm.release_all(t(6));
        upgrader.join().unwrap().unwrap();
        assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(5), X)]);
        assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(2), X)]);
        check(&lm);
        lm.release_all(t(5));
        writer.join().unwrap().unwrap();
    });
    assert_eq!(lm.locks_held(t(2)), 1);
    check(&lm);
}

#[test]
fn k9_timeout_withdraws_the_request_and_keeps_other_locks() {
    let lm = manager();
    lm.lock(t(5), 1, b"k", S).unwrap();
    lm.lock(t(2), 1, b"mine", X).unwrap();
    lm.lock(t(2), 1, b"k", S).unwrap();
    // The upgrade waits for t5, which never ends.
    let e = lm.lock_timeout(t(2), 1, b"k", X, Duration::from_millis(5)).unwrap_err();
    assert!(matches!(e, LockError::Timeout { txn, mode: X, .. } if txn == t(2)), "{e:?}");
    assert_eq!(lm.stats().timeouts, 1);
    assert_eq!(lm.locks_held(t(2)), 2, "the S hold and the other lock stay");
    check(&lm);
    // Zero timeout: never waits.
    // (Wait-die: under detection this one thread's wait for its own t5 is a deadlock, K23.)
    let lm0 =
        LockManager::new(1).with_wait_timeout(Duration::ZERO).with_deadlock_policy(DeadlockPolicy::WaitDie);
    lm0.lock(t(5), 1, b"k", X).unwrap();
    assert!(matches!(lm0.lock(t(1), 1, b"k", X), Err(LockError::Timeout { .. })));
    check(&lm0);
    lm0.release_all(t(5));
    assert_eq!(lm0.lock_count(), 0);
}

/// On the head itself (no threads, so the order of timeout and queueing is fixed): the
/// writer's withdrawal lets the reader behind it join the shared holder.
#[test]
fn k9_a_withdrawn_waiter_unblocks_those_behind_it() {
    let mut head = LockHead::new(0, 1, b"k");
    assert!(matches!(
        head.request(t(5), S, true, DeadlockPolicy::WaitDie),
        Decision::Granted { upgrade: false }
    ));
    let Decision::Queued { slot: writer, .. } = head.request(t(2), X, true, DeadlockPolicy::WaitDie) else {
        panic!("the older writer must queue behind the shared holder");
    };
    let Decision::Queued { slot: reader, .. } = head.request(t(1), S, true, DeadlockPolicy::WaitDie) else {
        panic!("the reader must queue behind the waiting writer (K4)");
    };
    head.check(DeadlockPolicy::WaitDie).unwrap();
    head.cancel(t(2));
    assert!(reader.state() == GRANTED && writer.state() == WAITING);
    let holders: Vec<_> = head.holders.iter().map(|h| (h.txn, h.mode)).collect();
    assert_eq!(holders, vec![(t(5), S), (t(1), S)]);
    assert!(head.queue.is_empty());
    head.check(DeadlockPolicy::WaitDie).unwrap();
}

#[test]
fn k15_a_closing_key_is_free_for_an_insert_only_if_no_one_else_holds_or_waits_for_it() {
    let lm = manager();
    assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(true), "no head");
    assert_eq!(lm.lock_count(), 0, "the look made no head");
    lm.lock(t(1), 1, b"k", LockMode::Shared).unwrap();
    assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(true), "only its own hold");
    assert_eq!(lm.is_free_for(t(2), 1, b"k"), Ok(false), "another's shared hold");
    lm.lock(t(2), 1, b"k", LockMode::Shared).unwrap();
    assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(false), "two holders");
    lm.release_all(t(2));
    lm.release_all(t(1));
    // A waiter behind its own hold: not free either (K4: it would queue behind it). The
    // waiter is the older, so wait-die lets it wait.
    lm.lock(t(5), 1, b"k", LockMode::Shared).unwrap();
    let lm = Arc::new(lm);
    let waiter = {
        let lm = Arc::clone(&lm);
        std::thread::spawn(move || lm.lock(t(4), 1, b"k", LockMode::Exclusive))
    };
    wait_for_waits(&lm, 1);
    assert_eq!(lm.is_free_for(t(5), 1, b"k"), Ok(false), "a waiter queued");
    assert_eq!(lm.locks_held(t(5)), 1, "the look took nothing");
    lm.release_all(t(5));
    waiter.join().unwrap().unwrap();
    lm.release_all(t(4));
    assert_eq!(lm.is_free_for(TxnId(0), 1, b"k"), Err(LockError::SystemTransaction));
    check(&lm);
}

#[test]
fn k14_k15_exclusive_holders_are_visible_and_one_lock_can_be_released_early() {
    let lm = manager();
    assert_eq!(lm.exclusive_holder(1, b"a"), None);
    lm.lock(t(1), 1, b"a", S).unwrap();
    assert_eq!(lm.exclusive_holder(1, b"a"), None, "a shared hold is no uncommitted change");
    lm.lock(t(1), 1, b"next", X).unwrap();
    assert_eq!(lm.exclusive_holder(1, b"next"), Some(t(1)));
    assert_eq!(lm.held_mode(t(1), 1, b"next"), Some(X));
    assert_eq!(lm.held_mode(t(2), 1, b"next"), None);
    check(&lm);
    // An older transaction waits for a closing-key lock; releasing it alone grants it.
    let lm2 = Arc::new(manager());
    lm2.lock(t(5), 1, b"next", X).unwrap();
    lm2.lock(t(5), 1, b"key", X).unwrap();
    let w = {
        let lm2 = Arc::clone(&lm2);
        std::thread::spawn(move || lm2.lock(t(3), 1, b"next", S))
    };
    wait_for_waits(&lm2, 1);
    assert!(lm2.release(t(5), 1, b"next"));
    w.join().unwrap().unwrap();
    assert!(!lm2.release(t(5), 1, b"next"), "released once");
    assert_eq!(lm2.locks_held(t(5)), 1, "the key's own lock stays");
    check(&lm2);
    lm2.release_all(t(3));
    lm2.release_all(t(5));
    assert_eq!(lm2.lock_count(), 0);
    check(&lm2);
}

#[test]
fn k12_transaction_zero_takes_no_locks() {
    let lm = manager();
    assert_eq!(lm.lock(TxnId(0), 1, b"k", S), Err(LockError::SystemTransaction));
    assert_eq!(lm.try_lock(TxnId(0), 1, b"k", X), Err(LockError::SystemTransaction));
    assert_eq!((lm.lock_count(), lm.stats().requests), (0, 0));
}

// ---- Randomized schedules of one lock head (the state machine, without threads) ----

#[derive(Clone, Debug)]
enum HeadOp {
    Request { txn: u64, mode: LockMode, wait: bool },
    Release { txn: u64 },
    Timeout { txn: u64 },
}

fn mode_strategy() -> impl Strategy<Value = LockMode> {
    prop_oneof![Just(S), Just(X)]
}

fn head_op() -> impl Strategy<Value = HeadOp> {
    prop_oneof![
        5 => (1..=6u64, mode_strategy(), prop::bool::weighted(0.8))
            .prop_map(|(txn, mode, wait)| HeadOp::Request { txn, mode, wait }),
        3 => (1..=6u64).prop_map(|txn| HeadOp::Release { txn }),
        1 => (1..=6u64).prop_map(|txn| HeadOp::Timeout { txn }),
    ]
}

/// Parked requests of the model: transaction -> (mode asked for, its slot).
type Parked = FxHashMap<TxnId, (LockMode, Arc<WaitSlot>)>;

/// Moves granted requests out of `parked` (checking the grant is real: the transaction now
/// holds a covering mode) and checks that the rest are exactly the queue, then the head's
/// invariants.
fn settle(head: &LockHead, parked: &mut Parked, policy: DeadlockPolicy) -> Result<(), TestCaseError> {
    let mut granted = Vec::new();
    for (&txn, (mode, slot)) in parked.iter() {
        if slot.state() == GRANTED {
            let h = head.holders.iter().find(|h| h.txn == txn);
            prop_assert!(h.is_some_and(|h| h.mode.covers(*mode)), "K10: {txn} woken without its lock");
            granted.push(txn);
        }
        if slot.state() == VICTIM {
            // K23: only a waiting upgrade is failed by a head alone (by a younger one's).
            prop_assert!(policy == DeadlockPolicy::Detect, "a victim under wait-die");
            prop_assert!(
                head.holders.iter().any(|h| h.txn == txn && h.mode == S),
                "K23: victim {txn} was no upgrader"
            );
            granted.push(txn);
        }
    }
    for txn in granted {
        parked.remove(&txn);
    }
    let mut queued: Vec<TxnId> = head.queue.iter().map(|r| r.txn).collect();
    let mut expected: Vec<TxnId> = parked.keys().copied().collect();
    queued.sort_unstable();
    expected.sort_unstable();
    prop_assert_eq!(queued, expected, "queued requests != parked transactions");
    if !head.is_unused() {
        head.check(policy).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

/// Whom a request of `txn` for `mode` would wait for, by K3/K4, computed from scratch.
fn blockers(head: &LockHead, txn: TxnId, mode: LockMode) -> Vec<TxnId> {
    if head.holders.iter().any(|h| h.txn == txn) {
        head.holders.iter().filter(|h| h.txn != txn).map(|h| h.txn).collect()
    } else {
        head.holders
            .iter()
            .filter(|h| !h.mode.compatible(mode))
            .map(|h| h.txn)
            .chain(head.queue.iter().filter(|r| !r.mode.compatible(mode)).map(|r| r.txn))
            .collect()
    }
}

fn run_head_schedule(ops: &[HeadOp], policy: DeadlockPolicy) -> Result<(), TestCaseError> {
    let detect = policy == DeadlockPolicy::Detect;
    let mut head = LockHead::new(0, 1, b"k");
    let mut parked = Parked::default();
    for op in ops {
        match *op {
            HeadOp::Request { txn, mode, wait } => {
                let txn = t(txn);
                if parked.contains_key(&txn) {
                    continue; // its thread is parked: it cannot ask for anything
                }
                let own = head.holders.iter().find(|h| h.txn == txn).map(|h| h.mode);
                let blockers = blockers(&head, txn, mode);
                let oldest_older = blockers.iter().copied().filter(|&b| b < txn).min();
                let (holders, queue) = (head.holders.len(), head.queue.len());
                let waiting_upgrade = head.queue.front().filter(|r| r.upgrade).map(|r| r.txn);
                match head.request(txn, mode, wait, policy) {
                    Decision::AlreadyHeld => prop_assert!(own.is_some_and(|m| m.covers(mode))),
                    Decision::Granted { upgrade } => {
                        prop_assert!(blockers.is_empty(), "granted over {blockers:?}");
                        prop_assert_eq!(upgrade, own.is_some());
                        let now = head.holders.iter().find(|h| h.txn == txn);
                        prop_assert!(now.is_some_and(|h| h.mode == mode));
                    }
                    Decision::Die { older } => {
                        prop_assert!(!detect, "K23: a death without a deadlock");
                        prop_assert_eq!(Some(older), oldest_older, "K6: wrong or no older blocker");
                        prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                    }
                    Decision::Deadlock { other } => {
                        prop_assert!(detect && wait && own.is_some(), "K23: a deadlock of no two upgrades");
                        prop_assert_eq!(Some(other), waiting_upgrade.filter(|&u| u < txn));
                        prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                    }
                    Decision::WouldWait => {
                        prop_assert!(!wait && !blockers.is_empty() && (detect || oldest_older.is_none()));
                        prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                    }
                    Decision::Queued { slot, upgrade } => {
                        prop_assert!(wait && !blockers.is_empty() && (detect || oldest_older.is_none()));
                        prop_assert_eq!(upgrade, own.is_some());
                        parked.insert(txn, (mode, slot));
                    }
                }
            }
            HeadOp::Release { txn } => {
                let txn = t(txn);
                if parked.contains_key(&txn) {
                    continue;
                }
                let held = head.holders.iter().any(|h| h.txn == txn);
                prop_assert_eq!(head.release(txn), held);
            }
            HeadOp::Timeout { txn } => {
                if parked.remove(&t(txn)).is_some() {
                    let held = head.holders.iter().find(|h| h.txn == t(txn)).map(|h| h.mode);
                    head.cancel(t(txn));
                    let after = head.holders.iter().find(|h| h.txn == t(txn)).map(|h| h.mode);
                    prop_assert_eq!(held, after, "K9: a timeout changes no hold");
                }
            }
        }
        settle(&head, &mut parked, policy)?;
    }
    // Liveness: once the transactions that are not parked end, every parked one gets its
    // lock and the head empties.
    for _ in 0..64 {
        if head.is_unused() {
            break;
        }
        let Some(next) = head.holders.iter().map(|h| h.txn).find(|txn| !parked.contains_key(txn)) else {
            return Err(TestCaseError::fail("stuck: every holder is parked"));
        };
        head.release(next);
        settle(&head, &mut parked, policy)?;
    }
    prop_assert!(head.is_unused() && parked.is_empty(), "the head did not drain");
    Ok(())
}

proptest! {
    /// K2 (holders compatible, an X holder alone), K3 (one upgrade, at the front), K5 (no
    /// missed grant), K6 (every waits-for edge goes from older to younger), K9, K10 (every
    /// woken request holds its lock), and liveness at the end.
    #[test]
    fn k5_k6_head_invariants_hold_over_random_schedules(ops in prop::collection::vec(head_op(), 1..120)) {
        run_head_schedule(&ops, DeadlockPolicy::WaitDie)?;
    }

    /// The same under deadlock detection: nothing dies, every conflicting request queues,
    /// and of two upgrades the younger fails (K23).
    #[test]
    fn k23_head_invariants_hold_over_random_schedules(ops in prop::collection::vec(head_op(), 1..120)) {
        run_head_schedule(&ops, DeadlockPolicy::Detect)?;
    }
}

// ---- The manager against a reference model (try_lock only: no waiting, one thread) ----

#[derive(Clone, Debug)]
enum ModelOp {
    TryLock { txn: u64, tree: u32, key: usize, mode: LockMode },
    ReleaseAll { txn: u64 },
}

const KEYS: [&[u8]; 4] = [b"", b"a", b"b", b"ab"];

fn model_op() -> impl Strategy<Value = ModelOp> {
    prop_oneof![
        4 => (1..=5u64, 1..=2u32, 0..KEYS.len(), mode_strategy())
            .prop_map(|(txn, tree, key, mode)| ModelOp::TryLock { txn, tree, key, mode }),
        1 => (1..=5u64).prop_map(|txn| ModelOp::ReleaseAll { txn }),
    ]
}

fn run_model(lm: &LockManager, ops: &[ModelOp]) -> Result<(), TestCaseError> {
    let mut model: std::collections::BTreeMap<(u32, usize), Vec<(TxnId, LockMode)>> = Default::default();
    for op in ops {
        match *op {
            ModelOp::TryLock { txn, tree, key, mode } => {
                let txn = t(txn);
                let holders = model.entry((tree, key)).or_default();
                let own = holders.iter().position(|h| h.0 == txn);
                let blockers: Vec<TxnId> = holders
                    .iter()
                    .filter(|h| h.0 != txn && (own.is_some() || !h.1.compatible(mode)))
                    .map(|h| h.0)
                    .collect();
                let expected = if own.is_some_and(|i| holders[i].1.covers(mode)) {
                    Ok(true)
                } else if blockers.is_empty() {
                    match own {
                        Some(i) => holders[i].1 = mode,
                        None => holders.push((txn, mode)),
                    }
                    Ok(true)
                } else if let Some(older) = blockers
                    .iter()
                    .copied()
                    .filter(|&b| b < txn && lm.deadlock_policy() == DeadlockPolicy::WaitDie)
                    .min()
                {
                    Err((txn, older))
                } else {
                    Ok(false)
                };
                let got = lm.try_lock(txn, tree, KEYS[key], mode).map_err(|e| conflict_parties(&e));
                prop_assert_eq!(got, expected, "{:?}", op);
            }
            ModelOp::ReleaseAll { txn } => {
                let mut n = 0;
                for holders in model.values_mut() {
                    let before = holders.len();
                    holders.retain(|h| h.0 != t(txn));
                    n += before - holders.len();
                }
                prop_assert_eq!(lm.release_all(t(txn)), n);
            }
        }
        model.retain(|_, holders| !holders.is_empty());
        lm.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(lm.lock_count(), model.len(), "K13: unused heads must go");
        for txn in 1..=5 {
            let n = model.values().filter(|hs| hs.iter().any(|h| h.0 == t(txn))).count();
            prop_assert_eq!(lm.locks_held(t(txn)), n);
        }
    }
    Ok(())
}

proptest! {
    /// Grants, re-requests, upgrades, refusals, deaths (with the oldest blocker named, under
    /// wait-die) and releases match a model, with the real hash and with every name
    /// colliding (K1); under deadlock detection `try_lock` never fails (K23).
    #[test]
    fn k1_k3_k6_manager_matches_model(
        ops in prop::collection::vec(model_op(), 1..100),
        collide in any::<bool>(),
        wait_die in any::<bool>(),
    ) {
        let lm = if collide { LockManager::with_hash(2, |_, _| 7) } else { LockManager::new(2) };
        let policy = if wait_die { DeadlockPolicy::WaitDie } else { DeadlockPolicy::Detect };
        run_model(&lm.with_deadlock_policy(policy), &ops)?;
    }
}

// ---- Threads: bank transfers and audits (K6, K7, K8 end to end) ----

/// K threads run transactions over M accounts: transfers lock two random accounts (X, or
/// S then upgrade) in random order and move money in two steps; audits lock every account
/// S in random order and check the total. A dead transaction releases its locks and
/// retries with the same id (so it ages). Checks: no audit sees a partial transfer, no
/// writer overlaps another holder of its account, the total is unchanged, nothing times out
/// (no deadlock: the hang guard is the timeout), and the table ends empty.
#[test]
fn k7_transfers_and_audits_keep_the_total_without_deadlock() {
    transfers_and_audits(DeadlockPolicy::WaitDie);
}

/// The same under deadlock detection (K23): deadlocks happen (transfers lock in random
/// order) and each fails exactly one request; nothing hangs or times out.
#[test]
fn k23_transfers_and_audits_keep_the_total_and_break_every_deadlock() {
    transfers_and_audits(DeadlockPolicy::Detect);
}

fn transfers_and_audits(policy: DeadlockPolicy) {
    const THREADS: u64 = 4;
    const ACCOUNTS: usize = 6;
    const TXNS_PER_THREAD: usize = 300;
    const INITIAL: i64 = 1_000;
    let lm = LockManager::new(4).with_wait_timeout(HANG_GUARD).with_deadlock_policy(policy);
    let balances: Vec<AtomicI64> = (0..ACCOUNTS).map(|_| AtomicI64::new(INITIAL)).collect();
    // The transaction writing an account right now (0: none).
    let writer: Vec<AtomicU64> = (0..ACCOUNTS).map(|_| AtomicU64::new(0)).collect();
    let next_txn = AtomicU64::new(1);
    let total = INITIAL * ACCOUNTS as i64;
    let key = |a: usize| (a as u32).to_be_bytes();

    let attempt = |txn: TxnId, rng: &mut SmallRng| -> Result<(), LockError> {
        if rng.gen_bool(0.25) {
            let mut order: Vec<usize> = (0..ACCOUNTS).collect();
            order.shuffle(rng);
            let mut sum = 0;
            for &a in &order {
                lm.lock(txn, 1, &key(a), S)?;
                assert_eq!(writer[a].load(Ordering::SeqCst), 0, "K2: a writer overlaps a reader");
                sum += balances[a].load(Ordering::SeqCst);
            }
            assert_eq!(sum, total, "an audit saw a partial transfer");
            return Ok(());
        }
        let from = rng.gen_range(0..ACCOUNTS);
        let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
        if rng.gen_bool(0.5) {
            lm.lock(txn, 1, &key(from), S)?;
            lm.lock(txn, 1, &key(to), S)?;
        }
        lm.lock(txn, 1, &key(from), X)?;
        lm.lock(txn, 1, &key(to), X)?;
        let amount = rng.gen_range(1..=50);
        for (a, delta) in [(from, -amount), (to, amount)] {
            assert_eq!(writer[a].swap(txn.0, Ordering::SeqCst), 0, "K2: two writers");
            let v = balances[a].load(Ordering::SeqCst);
            thread::yield_now();
            balances[a].store(v + delta, Ordering::SeqCst);
            assert_eq!(writer[a].swap(0, Ordering::SeqCst), txn.0, "K2: two writers");
        }
        Ok(())
    };

    let deaths = AtomicU64::new(0);
    thread::scope(|s| {
        for seed in 0..THREADS {
            let (lm, attempt, deaths, next_txn) = (&lm, &attempt, &deaths, &next_txn);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..TXNS_PER_THREAD {
                    let txn = TxnId(next_txn.fetch_add(1, Ordering::SeqCst));
                    loop {
                        match attempt(txn, &mut rng) {
                            Ok(()) => break,
                            Err(LockError::Conflict { .. } | LockError::Deadlock { .. }) => {
                                deaths.fetch_add(1, Ordering::SeqCst);
                                lm.release_all(txn);
                                thread::yield_now();
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    lm.release_all(txn);
                }
            });
        }
    });
    let stats = lm.stats();
    assert_eq!(balances.iter().map(|b| b.load(Ordering::SeqCst)).sum::<i64>(), total);
    assert_eq!(stats.timeouts, 0);
    assert_eq!(stats.conflicts + stats.deadlocks, deaths.load(Ordering::SeqCst));
    match policy {
        DeadlockPolicy::WaitDie => assert_eq!(stats.deadlocks, 0),
        DeadlockPolicy::Detect => assert_eq!(stats.conflicts, 0),
    }
    assert_eq!(lm.lock_count(), 0, "K13: every head is gone");
    check(&lm);
}

fn detector() -> LockManager {
    LockManager::new(4).with_wait_timeout(HANG_GUARD)
}

/// Waits until `txn` waits in `lm` (its request is queued and registered, K23).
fn wait_until_waiting(lm: &LockManager, txn: TxnId) {
    let start = Instant::now();
    while lm.waits_of(txn).0.is_none() {
        assert!(start.elapsed() < HANG_GUARD, "{txn} never waited");
        thread::sleep(Duration::from_millis(1));
    }
}

fn deadlock_parties(e: &LockError) -> (TxnId, Vec<TxnId>) {
    match e {
        LockError::Deadlock { txn, others, .. } => (*txn, others.clone()),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// K23: under detection an older transaction waits for a younger one (no death), and a
/// request that closes a cycle of two fails at once when it is the younger.
#[test]
fn k23_the_younger_closing_a_cycle_fails_and_the_older_gets_its_lock() {
    let lm = detector();
    lm.lock(t(1), 1, b"a", X).unwrap();
    thread::scope(|s| {
        let younger = s.spawn(|| {
            lm.lock(t(2), 1, b"b", X).unwrap();
            lm.lock(t(2), 1, b"a", S)
        });
        wait_until_waiting(&lm, t(2));
        // t1 (older) waits for t2 (younger): nothing dies; the cycle is closed here, and
        // the victim is t2, which is waiting.
        let older = s.spawn(|| lm.lock(t(1), 1, b"b", X));
        let e = younger.join().unwrap().unwrap_err();
        assert_eq!(deadlock_parties(&e), (t(2), vec![t(1)]));
        check(&lm);
        lm.release_all(t(2));
        older.join().unwrap().unwrap();
    });
    assert_eq!(lm.stats().deadlocks, 1);
    assert_eq!(lm.stats().conflicts, 0);
    assert_eq!(holders_of(&lm, 1, b"b"), vec![(t(1), X)]);
    check(&lm);
}

/// K23: when the younger transaction waits first and the older closes the cycle, the
/// younger (already waiting) is the one withdrawn.
#[test]
fn k23_the_older_closing_a_cycle_withdraws_the_younger_waiter() {
    let lm = detector();
    lm.lock(t(1), 1, b"a", X).unwrap();
    thread::scope(|s| {
        let younger = s.spawn(|| {
            lm.lock(t(3), 1, b"b", X).unwrap();
            lm.lock(t(3), 1, b"a", X)
        });
        wait_until_waiting(&lm, t(3));
        let older = s.spawn(|| lm.lock(t(1), 1, b"b", S));
        let e = younger.join().unwrap().unwrap_err();
        assert_eq!(deadlock_parties(&e).0, t(3));
        lm.release_all(t(3));
        older.join().unwrap().unwrap();
    });
    assert_eq!(lm.stats().deadlocks, 1);
    check(&lm);
    lm.release_all(t(1));
    assert_eq!(lm.lock_count(), 0);
}

/// K23: a cycle of three transactions on three threads; exactly the youngest fails.
#[test]
fn k23_a_cycle_of_three_fails_only_its_youngest() {
    let lm = detector();
    for (n, k) in [(1, b"a"), (2, b"b"), (3, b"c")] {
        lm.lock(t(n), 1, k, X).unwrap();
    }
    thread::scope(|s| {
        let one = s.spawn(|| lm.lock(t(1), 1, b"b", X));
        wait_until_waiting(&lm, t(1));
        let three = s.spawn(|| lm.lock(t(3), 1, b"a", X));
        wait_until_waiting(&lm, t(3));
        let two = s.spawn(|| lm.lock(t(2), 1, b"c", X));
        let e = three.join().unwrap().unwrap_err();
        let (victim, mut others) = deadlock_parties(&e);
        others.sort_unstable();
        assert_eq!((victim, others), (t(3), vec![t(1), t(2)]));
        lm.release_all(t(3));
        two.join().unwrap().unwrap();
        lm.release_all(t(2));
        one.join().unwrap().unwrap();
    });
    assert_eq!(lm.stats().deadlocks, 1);
    check(&lm);
}

/// K23: two shared holders both upgrading wait for each other; the younger fails, whether
/// it asks first (withdrawn from the queue) or second (refused at once).
#[test]
fn k23_of_two_upgraders_the_younger_fails() {
    for younger_first in [false, true] {
        let lm = detector();
        lm.lock(t(1), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"k", S).unwrap();
        thread::scope(|s| {
            let (first, second) = if younger_first { (t(2), t(1)) } else { (t(1), t(2)) };
            let lm = &lm;
            let a = s.spawn(move || lm.lock(first, 1, b"k", X));
            wait_until_waiting(lm, first);
            let b = s.spawn(move || lm.lock(second, 1, b"k", X));
            // The younger's request fails (the waiting one is withdrawn, or the second is
            // refused); once it ends, the older's upgrade is granted.
            let (older, younger) = if younger_first { (b, a) } else { (a, b) };
            let e = younger.join().unwrap().unwrap_err();
            assert_eq!(deadlock_parties(&e), (t(2), vec![t(1)]), "younger first: {younger_first}");
            lm.release_all(t(2));
            older.join().unwrap().unwrap();
        });
        assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(1), X)]);
        assert_eq!(lm.stats().deadlocks, 1);
        check(&lm);
    }
}

/// K23: a thread that waits for a transaction it last used itself would wait forever (the
/// holder cannot end while its thread waits): a deadlock at once, not a timeout.
#[test]
fn k23_waiting_for_a_transaction_of_the_own_thread_is_a_deadlock() {
    let lm = detector();
    lm.lock(t(5), 1, b"k", X).unwrap();
    let e = lm.lock(t(1), 1, b"k", S).unwrap_err();
    assert_eq!(deadlock_parties(&e), (t(1), vec![t(5)]));
    assert!(e.to_string().contains("deadlock"), "{e}");
    // Another thread just waits, and gets the lock when t5 ends.
    thread::scope(|s| {
        let other = s.spawn(|| lm.lock(t(1), 1, b"k", S));
        wait_until_waiting(&lm, t(1));
        lm.release_all(t(5));
        other.join().unwrap().unwrap();
    });
    check(&lm);
}

/// K17: a head taken to write names its holder's transaction, and the writer is found in
/// that transaction's entry, kept once however many heads name it: after a plain grant, an
/// upgrade, a lock held already and a grant after a wait. Releasing the transaction's locks
/// uncounts its heads and forgets the writer.
#[test]
fn k17_a_head_names_its_writer_through_the_holders_entry() {
    let lm = detector();
    let hash = |key: &[u8]| lm.name_hash(1, key);
    let w = crate::version::Writer::new();
    let found = |key: &[u8]| lm.writer_of(hash(key), 1, key);
    let same = |key: &[u8]| found(key).is_some_and(|x| Arc::ptr_eq(&x, &w));

    lm.lock_to_write(t(3), 1, b"a", &w).unwrap();
    assert!(same(b"a"), "a plain grant names the writer");
    assert_eq!(Arc::strong_count(&w), 2, "one reference for the transaction, none per head");
    lm.lock(t(3), 1, b"b", S).unwrap();
    assert!(found(b"b").is_none(), "a shared hold names no writer");
    lm.lock_to_write(t(3), 1, b"b", &w).unwrap();
    assert!(same(b"b"), "an upgrade names the writer");
    lm.lock(t(3), 1, b"c", X).unwrap();
    lm.lock_to_write(t(3), 1, b"c", &w).unwrap();
    assert!(same(b"c"), "a lock held already names the writer");
    lm.lock_to_write(t(3), 1, b"a", &w).unwrap();
    assert_eq!(Arc::strong_count(&w), 2, "still one reference for three heads");
    assert!(lm.may_have_writer(1, b"a") && lm.may_have_writer(1, b"c"));

    // The first lock a second writer takes, after waiting for the first's.
    let w2 = crate::version::Writer::new();
    thread::scope(|s| {
        let waiter = s.spawn(|| lm.lock_to_write(t(4), 1, b"a", &w2));
        wait_until_waiting(&lm, t(4));
        assert!(same(b"a"), "the waiter names nothing while it waits");
        lm.release_all(t(3));
        waiter.join().unwrap().unwrap();
    });
    assert!(found(b"a").is_some_and(|x| Arc::ptr_eq(&x, &w2)), "a grant after a wait names the new writer");
    assert!(found(b"b").is_none() && found(b"c").is_none(), "the first writer's heads went");
    assert!(!lm.may_have_writer(1, b"b") && !lm.may_have_writer(1, b"c"), "and were uncounted");
    assert_eq!(Arc::strong_count(&w), 1, "the released transaction's entry let its writer go");
    check(&lm);
    lm.release_all(t(4));
    assert!(found(b"a").is_none() && !lm.may_have_writer(1, b"a"));
    assert_eq!(Arc::strong_count(&w2), 1);

    // A transaction whose first lock taken to write is an upgrade, and one whose first is a
    // lock it held already: neither records a new hold, and both keep their writer.
    let (w5, w6) = (crate::version::Writer::new(), crate::version::Writer::new());
    lm.lock(t(5), 1, b"d", S).unwrap();
    lm.lock_to_write(t(5), 1, b"d", &w5).unwrap();
    assert!(found(b"d").is_some_and(|x| Arc::ptr_eq(&x, &w5)), "a first write by upgrade");
    lm.lock(t(6), 1, b"e", X).unwrap();
    lm.lock_to_write(t(6), 1, b"e", &w6).unwrap();
    assert!(found(b"e").is_some_and(|x| Arc::ptr_eq(&x, &w6)), "a first write on a lock held");
    check(&lm);
    lm.release_all(t(5));
    lm.release_all(t(6));
    assert_eq!((Arc::strong_count(&w5), Arc::strong_count(&w6)), (1, 1));
    assert_eq!(lm.lock_count(), 0);
}

/// Transaction numbers are ordered as the transactions began, whatever thread began them,
/// and a thread's numbers share one shard of every table of transactions.
#[test]
fn transaction_numbers_keep_the_order_of_beginning_and_the_threads_shard() {
    let mine: Vec<TxnId> = (10..20).map(txn_number).collect();
    let theirs: Vec<(u64, TxnId)> =
        thread::scope(|s| s.spawn(|| (20..30).map(|o| (o, txn_number(o))).collect()).join().unwrap());
    assert!(mine.windows(2).all(|w| w[0] < w[1]));
    assert!(mine.last() < theirs.first().map(|(_, t)| t), "a later order is a younger number");
    for (order, txn) in &theirs {
        assert_eq!(txn_order(txn.0), *order);
    }
    for shards in [1, 16, 64] {
        assert!(mine.iter().all(|&t| txn_shard_of(t, shards) == txn_shard_of(mine[0], shards)));
    }
    assert_eq!(txn_shard_of(mine[0], 64), thread_tag() as usize % 64, "the lane is the thread's");
    assert!(txn_number(txn_order(u64::from(u32::MAX)) + 1) > TxnId(u64::from(u32::MAX)));
}

#[test]
fn shard_counts_are_rounded_and_capped() {
    assert_eq!(LockManager::new(0).shard_count(), 1);
    assert_eq!(LockManager::new(5).shard_count(), 8);
    assert_eq!(LockManager::new(usize::MAX).shard_count(), MAX_SHARDS);
}

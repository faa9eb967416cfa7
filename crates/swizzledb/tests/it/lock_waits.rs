//! Lock waits under contention as a user meets them (LOCKS.md K4–K9, K15, K16, K23, K24): many
//! threads (more than the cores) run transactions that lock overlapping keys in random orders,
//! so that deadlocks form, under each deadlock policy, through `Database::transact` (which
//! retries) and through `begin`/`commit` (where the caller sees the refusal). Oracles: transfers
//! keep their total, counters count exactly the committed increments, range counts inserted
//! into their own range serialize (no phantom), a refused transaction leaves nothing of its own
//! and no lock behind, every thread makes progress, and the errors name the transaction and
//! key they are about. Every test runs under a watchdog: a hang fails it.
//!
//! `SWIZZLEDB_LOCK_WAITS_SECS` (default 1) sets how long each contended phase runs.

use std::ops::Bound::{Excluded, Included};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use swizzledb::lock::{DeadlockPolicy, LockError, LockMode, TxnId};
use swizzledb::{CommitMode, Database, Error, Transaction, Tree, TreeError};

use crate::common::{watchdog, XorShift};

const POLICIES: [DeadlockPolicy; 2] = [DeadlockPolicy::Detect, DeadlockPolicy::WaitDie];

/// How long each contended phase runs.
fn phase() -> Duration {
    let secs =
        std::env::var("SWIZZLEDB_LOCK_WAITS_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(1.0);
    Duration::from_secs_f64(secs)
}

fn open(dir: &std::path::Path, policy: DeadlockPolicy, commit: CommitMode) -> (Arc<Database>, Tree) {
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(512 * 4096)
        .commit_mode(commit)
        .lab(|l| l.deadlock_policy(policy))
        .create(dir.join("waits.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    (Arc::new(db), t)
}

fn int(v: &[u8]) -> i64 {
    i64::from_be_bytes(v.try_into().expect("an 8-byte value"))
}

fn read(tx: &Transaction<'_>, t: &Tree, k: &[u8]) -> swizzledb::Result<i64> {
    Ok(int(&tx.get(t, k)?.expect("the key exists")))
}

fn account(i: u64) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

fn commits_key(thread: usize) -> Vec<u8> {
    format!("commits{thread:02}").into_bytes()
}

/// `n` distinct numbers below `of`, in random order.
fn pick(rng: &mut XorShift, n: usize, of: u64) -> Vec<u64> {
    let mut picked = Vec::with_capacity(n);
    while picked.len() < n {
        let a = rng.next() % of;
        if !picked.contains(&a) {
            picked.push(a);
        }
    }
    picked
}

/// A refused lock as the caller sees it: a deadlock's victim (K23) or wait-die's loser (K6),
/// naming the transaction that asked and, where `key` is given, the key it asked for.
fn assert_refusal(e: &Error, me: TxnId, key: Option<&[u8]>, policy: DeadlockPolicy) {
    match (policy, e) {
        (DeadlockPolicy::Detect, Error::Lock(LockError::Deadlock { txn, others, key: k, .. })) => {
            assert_eq!(*txn, me, "the deadlock names the transaction that failed: {e}");
            assert!(!others.is_empty() && !others.contains(&me), "the other transactions of the cycle: {e}");
            if let Some(key) = key {
                assert_eq!(&**k, key, "the key waited for: {e}");
            }
        }
        (DeadlockPolicy::WaitDie, Error::Lock(LockError::Conflict { txn, holder, key: k, .. })) => {
            assert_eq!(*txn, me, "the conflict names the transaction that died: {e}");
            assert!(*holder < me, "wait-die names an older blocker: {e}");
            if let Some(key) = key {
                assert_eq!(&**k, key, "the key asked for: {e}");
            }
        }
        _ => panic!("{policy:?}: not a refused lock of {me}: {e:?}"),
    }
}

/// One transfer among `accounts`: two or three of them in random order, each read then written
/// (a shared lock upgraded later, after the others were read) or changed at once by
/// `update_with`; then the thread's commit counter. `at` is set to the key of each request
/// before it is made.
fn transfer(
    tx: &mut Transaction<'_>,
    t: &Tree,
    rng: &mut XorShift,
    accounts: u64,
    thread: usize,
    at: &mut Vec<u8>,
) -> swizzledb::Result<()> {
    let n = 2 + (rng.next() % 2) as usize;
    let picked = pick(rng, n, accounts);
    let amount = (rng.next() % 10) as i64 + 1;
    let delta = |i: usize| if i == 0 { -amount * (n as i64 - 1) } else { amount };
    let read_first: Vec<bool> = (0..n).map(|_| rng.next().is_multiple_of(2)).collect();
    let mut seen = vec![0i64; n];
    for i in 0..n {
        if read_first[i] {
            *at = account(picked[i]);
            seen[i] = read(tx, t, at)?;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.rotate_left((rng.next() % n as u64) as usize);
    for i in order {
        *at = account(picked[i]);
        if read_first[i] {
            tx.put(t, at, &(seen[i] + delta(i)).to_be_bytes())?;
        } else {
            let changed = tx.update_with(t, at, |old, new| {
                new.extend_from_slice(&(int(old) + delta(i)).to_be_bytes());
            })?;
            assert!(changed.is_some(), "the account exists");
        }
    }
    *at = commits_key(thread);
    tx.update_with(t, at, |old, new| new.extend_from_slice(&(int(old) + 1).to_be_bytes()))?;
    Ok(())
}

/// Transfers among few accounts by `threads` threads at once, half through `transact`, half by
/// hand, with an auditor reading every account in a serializable transaction and at a
/// snapshot. Returns the lock counters.
fn transfers(
    policy: DeadlockPolicy,
    threads: usize,
    accounts: u64,
    commit: CommitMode,
) -> swizzledb::lock::LockStats {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), policy, commit);
    const EACH: i64 = 1000;
    for a in 0..accounts {
        t.insert(&account(a), &EACH.to_be_bytes()).unwrap();
    }
    for th in 0..threads {
        t.insert(&commits_key(th), &0i64.to_be_bytes()).unwrap();
    }
    let total = EACH * accounts as i64;
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicU64::new(0));
    let audits = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads + 2));
    let what = format!("{policy:?}, {threads} threads, {accounts} accounts");
    let run = {
        let (db, t) = (db.clone(), t.clone());
        let (stop, refused, audits, barrier) =
            (stop.clone(), refused.clone(), audits.clone(), barrier.clone());
        move || {
            let mut workers = Vec::new();
            for th in 0..threads {
                let (db, t, stop, refused, barrier) =
                    (db.clone(), t.clone(), stop.clone(), refused.clone(), barrier.clone());
                workers.push(std::thread::spawn(move || {
                    let mut rng = XorShift(th as u64 * 0x9E37_79B9 + 17);
                    let mut commits = 0u64;
                    let manual = th % 2 == 1;
                    barrier.wait();
                    while !stop.load(Ordering::Relaxed) || commits == 0 {
                        let mut at = Vec::new();
                        if manual {
                            let mut tx = db.begin();
                            let me = tx.id();
                            match transfer(&mut tx, &t, &mut rng, accounts, th, &mut at) {
                                Ok(()) => {
                                    tx.commit().unwrap();
                                    commits += 1;
                                }
                                Err(e) => {
                                    assert_refusal(&e, me, Some(&at), policy);
                                    refused.fetch_add(1, Ordering::Relaxed);
                                    if rng.next().is_multiple_of(2) {
                                        tx.abort().unwrap();
                                    } else {
                                        drop(tx);
                                    }
                                }
                            }
                        } else {
                            db.transact(|tx| transfer(tx, &t, &mut rng.clone_state(), accounts, th, &mut at))
                                .unwrap();
                            rng.next();
                            commits += 1;
                        }
                    }
                    commits
                }));
            }
            let auditor = {
                let (db, t, stop, audits, barrier) =
                    (db.clone(), t.clone(), stop.clone(), audits.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut rng = XorShift(99);
                    barrier.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let order = pick(&mut rng, accounts as usize, accounts);
                        let sum = db
                            .transact(|tx| {
                                order
                                    .iter()
                                    .map(|&a| read(tx, &t, &account(a)))
                                    .sum::<swizzledb::Result<i64>>()
                            })
                            .unwrap();
                        assert_eq!(sum, total, "a serializable audit saw {sum}");
                        let snap = db.begin_read();
                        let sum: i64 =
                            (0..accounts).map(|a| int(&snap.get(&t, &account(a)).unwrap().unwrap())).sum();
                        assert_eq!(sum, total, "a snapshot saw {sum}");
                        audits.fetch_add(1, Ordering::Relaxed);
                    }
                })
            };
            barrier.wait();
            std::thread::sleep(phase());
            stop.store(true, Ordering::Relaxed);
            let commits: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
            auditor.join().unwrap();
            commits
        }
    };
    let commits = watchdog(&what, 60, run);
    let sum: i64 = (0..accounts).map(|a| int(&t.get(&account(a)).unwrap().unwrap())).sum();
    assert_eq!(sum, total, "{what}: the total");
    for (th, &n) in commits.iter().enumerate() {
        let counted = int(&t.get(&commits_key(th)).unwrap().unwrap());
        assert_eq!(counted as u64, n, "{what}: thread {th}'s committed transfers");
    }
    assert!(audits.load(Ordering::Relaxed) > 0, "{what}: no audit finished");
    // No refused or finished transaction left a lock: one transaction writes every key at once.
    let started = Instant::now();
    let mut tx = db.begin();
    for a in 0..accounts {
        tx.put(&t, &account(a), &EACH.to_be_bytes()).unwrap();
    }
    for th in 0..threads {
        tx.put(&t, &commits_key(th), &0i64.to_be_bytes()).unwrap();
    }
    tx.commit().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "{what}: a lock outlived its transaction");
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.timeouts, 0, "{what}: {stats:?}");
    match policy {
        DeadlockPolicy::Detect => assert_eq!(stats.conflicts, 0, "{what}: {stats:?}"),
        DeadlockPolicy::WaitDie => assert_eq!(stats.deadlocks, 0, "{what}: {stats:?}"),
    }
    t.verify().unwrap();
    eprintln!("{what}: commits {commits:?}, refused by hand {}, {stats:?}", refused.load(Ordering::Relaxed));
    stats
}

trait CloneState {
    fn clone_state(&self) -> XorShift;
}

impl CloneState for XorShift {
    /// The same sequence again: a retried attempt of `transact` makes the same choices.
    fn clone_state(&self) -> XorShift {
        XorShift(self.0)
    }
}

#[test]
fn k23_transfers_in_random_orders_keep_the_total_and_count_every_commit() {
    let stats = transfers(DeadlockPolicy::Detect, 8, 5, CommitMode::Async);
    assert!(stats.deadlocks > 0, "the workload made no deadlock: {stats:?}");
}

#[test]
fn k6_transfers_in_random_orders_keep_the_total_and_count_every_commit_under_wait_die() {
    let stats = transfers(DeadlockPolicy::WaitDie, 8, 5, CommitMode::Async);
    assert!(stats.conflicts > 0, "the workload made no conflict: {stats:?}");
}

/// Sixteen threads on three accounts with synchronous commits (R2: locks released before the
/// flush): every thread still commits.
#[test]
fn k23_k6_sixteen_threads_on_three_hot_keys_all_make_progress() {
    for policy in POLICIES {
        transfers(policy, 16, 3, CommitMode::Sync);
    }
}

/// A key of bucket `bucket` spread over the bucket by a mix of `id`.
fn bucket_key(bucket: u8, id: u64) -> Vec<u8> {
    let mut k = vec![b'r', b'0' + bucket];
    k.extend_from_slice(&id.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// Each transaction counts the keys of one of four adjacent buckets (a range read, forwards or
/// backwards) and inserts a new key into that bucket whose value is the count. Serializable
/// (K16: next-key locks, K15: inserts lock their gap) means each bucket's committed counts are
/// 0, 1, 2, … with none repeated: a repeated count is a phantom, an insert a range read missed.
fn range_counts(policy: DeadlockPolicy, manual: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), policy, CommitMode::Async);
    // Keys around the buckets, so that gaps close on keys outside them too.
    for id in 0..50 {
        t.insert(&[b'q', id as u8], b"x").unwrap();
        t.insert(&[b's', id as u8], b"x").unwrap();
    }
    const THREADS: usize = 6;
    let what = format!("{policy:?}, manual {manual}");
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
        move || {
            let workers: Vec<_> = (0..THREADS)
                .map(|th| {
                    let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut rng = XorShift(th as u64 * 7919 + 3);
                        let mut seq = 0u64;
                        let mut commits = 0u64;
                        while !stop.load(Ordering::Relaxed) || commits == 0 {
                            let bucket = (rng.next() % 4) as u8;
                            let backwards = rng.next().is_multiple_of(2);
                            seq += 1;
                            let id = (th as u64) << 32 | seq;
                            let body = |tx: &mut Transaction<'_>| -> swizzledb::Result<()> {
                                let (lo, hi) = ([b'r', b'0' + bucket], [b'r', b'1' + bucket]);
                                let range = (Included(&lo[..]), Excluded(&hi[..]));
                                let n = if backwards {
                                    tx.range_rev(&t, range.0, range.1)
                                        .try_fold(0u64, |n, r| r.map(|_| n + 1))?
                                } else {
                                    tx.range(&t, range.0, range.1).try_fold(0u64, |n, r| r.map(|_| n + 1))?
                                };
                                tx.insert(&t, &bucket_key(bucket, id), &(n as i64).to_be_bytes())
                            };
                            if manual {
                                let mut tx = db.begin();
                                let me = tx.id();
                                match body(&mut tx) {
                                    Ok(()) => {
                                        tx.commit().unwrap();
                                        commits += 1;
                                    }
                                    Err(e) => {
                                        assert_refusal(&e, me, None, policy);
                                        tx.abort().unwrap();
                                    }
                                }
                            } else {
                                db.transact(body).unwrap();
                                commits += 1;
                            }
                        }
                        commits
                    })
                })
                .collect();
            std::thread::sleep(phase());
            stop.store(true, Ordering::Relaxed);
            workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
        }
    };
    let commits = watchdog(&what, 60, run);
    let mut found = 0;
    for bucket in 0..4u8 {
        let (lo, hi) = ([b'r', b'0' + bucket], [b'r', b'1' + bucket]);
        let mut counts: Vec<i64> =
            t.range(Included(&lo[..]), Excluded(&hi[..])).map(|r| int(&r.unwrap().1)).collect();
        counts.sort_unstable();
        let want: Vec<i64> = (0..counts.len() as i64).collect();
        assert_eq!(counts, want, "{what}: bucket {bucket}'s counts (a repeat is a phantom)");
        found += counts.len() as u64;
    }
    assert_eq!(found, commits, "{what}: one key per commit");
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.timeouts, 0, "{what}: {stats:?}");
    t.verify().unwrap();
    eprintln!("{what}: {commits} commits, {stats:?}");
}

#[test]
fn k15_k16_range_counts_inserted_into_their_range_serialize_through_transact() {
    for policy in POLICIES {
        range_counts(policy, false);
    }
}

#[test]
fn k15_k16_range_counts_inserted_into_their_range_serialize_by_hand() {
    for policy in POLICIES {
        range_counts(policy, true);
    }
}

fn counter(i: u64) -> Vec<u8> {
    format!("ctr{i}").into_bytes()
}

/// Increments of a few counters by every kind of writer at once: auto-commit
/// `Tree::compare_and_swap` loops, serializable transactions (read then write, or
/// `update_with`, in random orders), snapshot-isolation transactions (first updater wins, K24)
/// and hand-run transactions. The counters end at exactly the increments that were committed.
fn counters(policy: DeadlockPolicy) {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), policy, CommitMode::Async);
    const COUNTERS: u64 = 3;
    for i in 0..COUNTERS {
        t.insert(&counter(i), &0i64.to_be_bytes()).unwrap();
    }
    const THREADS: usize = 8;
    let what = format!("{policy:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
        move || {
            let workers: Vec<_> = (0..THREADS)
                .map(|th| {
                    let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut rng = XorShift(th as u64 * 104_729 + 5);
                        let mut added = 0i64;
                        let mut done = 0u64;
                        while !stop.load(Ordering::Relaxed) || done == 0 {
                            let picked = pick(&mut rng, 2, COUNTERS);
                            let style = rng.next() % 2;
                            let bump = |tx: &mut Transaction<'_>| -> swizzledb::Result<()> {
                                for &c in &picked {
                                    if style == 0 {
                                        let v = read(tx, &t, &counter(c))?;
                                        tx.put(&t, &counter(c), &(v + 1).to_be_bytes())?;
                                    } else {
                                        tx.update_with(&t, &counter(c), |old, new| {
                                            new.extend_from_slice(&(int(old) + 1).to_be_bytes());
                                        })?;
                                    }
                                }
                                Ok(())
                            };
                            match th % 4 {
                                0 => {
                                    let key = counter(picked[0]);
                                    let mut current = t.get(&key).unwrap();
                                    loop {
                                        let n = int(current.as_deref().unwrap()) + 1;
                                        match t.compare_and_swap(
                                            &key,
                                            current.as_deref(),
                                            Some(&n.to_be_bytes()),
                                        ) {
                                            Ok(Ok(())) => break,
                                            Ok(Err(refused)) => current = refused.current,
                                            Err(e) => panic!("{policy:?}: an auto-commit swap failed: {e}"),
                                        }
                                    }
                                    added += 1;
                                }
                                1 => {
                                    db.transact(bump).unwrap();
                                    added += 2;
                                }
                                2 => {
                                    db.transact_snapshot(|tx| {
                                        assert!(tx.is_snapshot());
                                        bump(tx)
                                    })
                                    .unwrap();
                                    added += 2;
                                }
                                _ => {
                                    let mut tx = db.begin();
                                    let me = tx.id();
                                    match bump(&mut tx) {
                                        Ok(()) => {
                                            tx.commit().unwrap();
                                            added += 2;
                                        }
                                        Err(e) => assert_refusal(&e, me, None, policy),
                                    }
                                }
                            }
                            done += 1;
                        }
                        added
                    })
                })
                .collect();
            std::thread::sleep(phase());
            stop.store(true, Ordering::Relaxed);
            workers.into_iter().map(|w| w.join().unwrap()).sum::<i64>()
        }
    };
    let added = watchdog(&what, 60, run);
    let sum: i64 = (0..COUNTERS).map(|i| int(&t.get(&counter(i)).unwrap().unwrap())).sum();
    assert_eq!(sum, added, "{what}: the counters against the committed increments");
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.timeouts, 0, "{what}: {stats:?}");
    eprintln!("{what}: {added} increments, {stats:?}");
}

#[test]
fn t22_k24_swaps_snapshot_and_serializable_increments_lose_nothing() {
    for policy in POLICIES {
        counters(policy);
    }
}

/// Two transactions that read one key and then both write it (two upgrades, K3): the second
/// upgrader is refused — a deadlock naming the other under detection, a conflict naming the
/// older under wait-die — while the first waits; once the refused one is dropped, the first
/// gets its lock at once, nothing the refused one wrote is visible, and its keys are free.
#[test]
fn k3_k23_k6_two_upgrades_refuse_one_which_leaves_nothing_behind() {
    for policy in POLICIES {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = open(dir.path(), policy, CommitMode::Sync);
        t.insert(b"k", &0i64.to_be_bytes()).unwrap();
        t.insert(b"other", &0i64.to_be_bytes()).unwrap();
        let db = &*db;
        let t = &t;
        watchdog_scoped(&format!("{policy:?}"), || {
            let mut older = db.begin();
            let mut younger = db.begin();
            assert!(older.id() < younger.id());
            read(&older, t, b"k").unwrap();
            read(&younger, t, b"k").unwrap();
            younger.put(t, b"other", &7i64.to_be_bytes()).unwrap();
            let (older_id, younger_id) = (older.id(), younger.id());
            std::thread::scope(|s| {
                let waiter = s.spawn(move || {
                    let started = Instant::now();
                    older.put(t, b"k", &1i64.to_be_bytes()).unwrap();
                    let waited = started.elapsed();
                    older.commit().unwrap();
                    waited
                });
                while db.lock_stats().unwrap().waits == 0 {
                    std::thread::yield_now();
                }
                let e = younger.put(t, b"k", &2i64.to_be_bytes()).unwrap_err();
                assert_refusal(&e, younger_id, Some(b"k"), policy);
                match &e {
                    Error::Lock(LockError::Deadlock { others, mode, .. }) => {
                        assert_eq!(others, &[older_id], "{e}");
                        assert_eq!(*mode, LockMode::Exclusive);
                    }
                    Error::Lock(LockError::Conflict { holder, mode, .. }) => {
                        assert_eq!(*holder, older_id, "{e}");
                        assert_eq!(*mode, LockMode::Exclusive);
                    }
                    _ => unreachable!(),
                }
                let shown = e.to_string();
                assert!(
                    shown.contains(&younger_id.to_string()) && shown.contains(&older_id.to_string()),
                    "{shown}"
                );
                let dropped = Instant::now();
                drop(younger);
                let waited = waiter.join().unwrap();
                assert!(
                    dropped.elapsed() < Duration::from_secs(2),
                    "{policy:?}: the waiter waited {waited:?}"
                );
            });
            assert_eq!(int(&t.get(b"k").unwrap().unwrap()), 1);
            assert_eq!(int(&t.get(b"other").unwrap().unwrap()), 0, "the refused transaction's write is gone");
            let started = Instant::now();
            let mut next = db.begin();
            next.put(t, b"other", &3i64.to_be_bytes()).unwrap();
            next.put(t, b"k", &3i64.to_be_bytes()).unwrap();
            next.commit().unwrap();
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{policy:?}: a lock outlived its transaction"
            );
        });
    }
}

/// `watchdog` for a closure that borrows: the scope's thread is joined, a hang fails the test.
fn watchdog_scoped(what: &str, f: impl FnOnce() + Send) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let worker = s.spawn(move || {
            f();
            let _ = done.send(());
        });
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            finished.recv_timeout(Duration::from_secs(60))
        {
            // A panic here would leave the scope joining the hung thread: end the process,
            // saying why (nextest runs each test in a process of its own).
            eprintln!("{what}: not finished after 60 s (a hang?)");
            std::process::abort();
        }
        if let Err(e) = worker.join() {
            std::panic::resume_unwind(e);
        }
    });
}

/// A cycle of three transactions, each holding one key and asking for the next one's: exactly
/// one (the youngest, under detection) is refused, the other two commit, in turn.
#[test]
fn k23_a_cycle_of_three_refuses_only_the_youngest_and_the_rest_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), DeadlockPolicy::Detect, CommitMode::Async);
    let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
    for k in keys {
        t.insert(k, &0i64.to_be_bytes()).unwrap();
    }
    let (db, t) = (&*db, &t);
    watchdog_scoped("a cycle of three", || {
        let barrier = Barrier::new(3);
        let results: Vec<(TxnId, Result<(), Error>)> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..3)
                .map(|i| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        let mut tx = db.begin();
                        let me = tx.id();
                        tx.put(t, keys[i], &1i64.to_be_bytes()).unwrap();
                        barrier.wait();
                        // Whichever asks last closes the cycle (it varies from run to run):
                        // the youngest is refused all the same.
                        let r = tx.put(t, keys[(i + 1) % 3], &1i64.to_be_bytes()).map(|_| ());
                        match &r {
                            Ok(()) => tx.commit().unwrap(),
                            Err(_) => tx.abort().unwrap(),
                        }
                        (me, r)
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let youngest = results.iter().map(|(id, _)| *id).max().unwrap();
        for (id, r) in &results {
            if *id == youngest {
                let e = r.as_ref().unwrap_err();
                assert_refusal(e, *id, None, DeadlockPolicy::Detect);
                let Error::Lock(LockError::Deadlock { others, .. }) = e else { unreachable!() };
                let mut others = others.clone();
                others.sort();
                let mut want: Vec<TxnId> = results.iter().map(|(i, _)| *i).filter(|i| i != id).collect();
                want.sort();
                assert_eq!(others, want, "the deadlock names the cycle's other two: {e}");
            } else {
                assert!(r.is_ok(), "only the youngest is refused: {results:?}");
            }
        }
    });
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.deadlocks, 1, "{stats:?}");
}

/// Waits for a key a transaction keeps holding end by the wait timeout (K9: 10 s, a database's
/// fixed value), each waiter's after about that long however many wait — shared and exclusive
/// requests, queued behind one another — each naming its own transaction and the key; plain
/// reads meanwhile do not wait (K18); and once the holder commits, the key is free at once.
#[test]
fn k9_every_waiter_for_a_key_held_too_long_times_out_after_the_wait_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), DeadlockPolicy::Detect, CommitMode::Async);
    t.insert(b"k", &0i64.to_be_bytes()).unwrap();
    let (db, t) = (&*db, &t);
    watchdog_scoped("timeouts", || {
        let mut holder = db.begin();
        holder.put(t, b"k", &1i64.to_be_bytes()).unwrap();
        let results: Vec<_> = std::thread::scope(|s| {
            let waiters: Vec<_> = (0..6)
                .map(|i| {
                    s.spawn(move || {
                        let mut tx = db.begin();
                        let me = tx.id();
                        let started = Instant::now();
                        let r = if i % 2 == 0 {
                            tx.get(t, b"k").map(|_| ())
                        } else {
                            tx.put(t, b"k", b"x").map(|_| ())
                        };
                        (me, i % 2 == 0, r, started.elapsed())
                    })
                })
                .collect();
            while db.lock_stats().unwrap().waits < 6 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let started = Instant::now();
            assert_eq!(int(&t.get(b"k").unwrap().unwrap()), 0, "a plain read returns the committed value");
            assert!(started.elapsed() < Duration::from_secs(1), "a plain read waited");
            waiters.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for (me, shared, r, elapsed) in results {
            let want = if shared { LockMode::Shared } else { LockMode::Exclusive };
            match r {
                Err(Error::Lock(LockError::Timeout { txn, key, mode, waited, .. })) => {
                    assert_eq!((txn, &*key, mode), (me, &b"k"[..], want));
                    assert_eq!(waited, swizzledb::lock::DEFAULT_WAIT_TIMEOUT);
                    assert!(
                        elapsed >= Duration::from_secs(9) && elapsed < Duration::from_secs(14),
                        "a wait of a 10 s timeout ended after {elapsed:?}"
                    );
                }
                other => panic!("{me}: expected a timeout, got {other:?}"),
            }
        }
        holder.commit().unwrap();
        let started = Instant::now();
        db.transact(|tx| tx.put(t, b"k", &2i64.to_be_bytes())).unwrap();
        assert!(started.elapsed() < Duration::from_secs(1), "a timed-out waiter left a lock");
    });
    assert_eq!(db.lock_stats().unwrap().timeouts, 6);
}

/// Threads writing hot keys through tree handles (auto-commit writes wait for each other's
/// locks) while the database is closed or dropped: every write returns (done, or refused as
/// closed), no thread panics or hangs, and after `close` returns, every handle refuses with
/// `TreeError::Closed`. The database reopens with a value some thread wrote in each key.
#[test]
fn r12_closing_a_database_while_auto_commit_writes_wait_for_each_other_ends_them_all() {
    for close in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("close.swz");
        let db = Database::builder().page_size(4096).pool_bytes(256 * 4096).create(&path).unwrap();
        let t = db.create_tree("t").unwrap();
        for k in 0..3u8 {
            t.insert(&[k], &0i64.to_be_bytes()).unwrap();
        }
        let what = format!("close {close}");
        let closed = Arc::new(AtomicBool::new(false));
        let run = {
            let closed = closed.clone();
            move || {
                let workers: Vec<_> = (0..6)
                    .map(|th| {
                        let (t, closed) = (t.clone(), closed.clone());
                        std::thread::spawn(move || {
                            let mut rng = XorShift(th + 11);
                            let mut done = 0u64;
                            loop {
                                let was_closed = closed.load(Ordering::Acquire);
                                let key = [(rng.next() % 3) as u8];
                                let r = match th % 3 {
                                    0 => t.upsert(&key, &(th as i64).to_be_bytes()).map(|_| ()),
                                    1 => t.get(&key).and_then(|v| {
                                        t.compare_and_swap(
                                            &key,
                                            v.as_deref(),
                                            Some(&(th as i64).to_be_bytes()),
                                        )
                                        .map(|_| ())
                                    }),
                                    _ => t
                                        .delete(&key)
                                        .and_then(|_| t.insert(&key, &(th as i64).to_be_bytes()))
                                        .or_else(|e| match e {
                                            TreeError::DuplicateKey => Ok(()),
                                            e => Err(e),
                                        }),
                                };
                                match r {
                                    Ok(()) => {
                                        assert!(!was_closed, "a write succeeded after close returned");
                                        done += 1;
                                    }
                                    Err(TreeError::Closed) => return done,
                                    Err(e) if was_closed => panic!("after close: {e:?}"),
                                    // While closing: the log may already refuse.
                                    Err(e) => {
                                        eprintln!("thread {th} while closing: {e}");
                                        return done;
                                    }
                                }
                            }
                        })
                    })
                    .collect();
                std::thread::sleep(Duration::from_millis(300));
                if close {
                    db.close().unwrap();
                } else {
                    drop(db);
                }
                closed.store(true, Ordering::Release);
                workers.into_iter().map(|w| w.join().unwrap()).collect::<Vec<u64>>()
            }
        };
        let done = watchdog(&what, 60, run);
        assert!(done.iter().all(|&d| d > 0), "{what}: every thread wrote: {done:?}");
        let db = Database::builder().open(&path).unwrap();
        let t = db.tree("t").unwrap();
        for k in 0..3u8 {
            if let Some(v) = t.get(&[k]).unwrap() {
                assert!((0..6).contains(&int(&v)), "{what}: key {k} holds {v:?}");
            }
        }
        db.close().unwrap();
    }
}

/// Threads race to claim the same fresh keys, each in a transaction that reads the key (a
/// point read locks it, absent too, K16) and inserts it only if it was absent, or swaps it in
/// from absent (`compare_and_swap` with `None` expected). Serializable means exactly one claim
/// per key, and no claimer ever meets the key's duplicate: its read would have seen it.
fn claims(policy: DeadlockPolicy) {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), policy, CommitMode::Async);
    // Keys on both sides, so the claimed keys' gaps close on keys and on the tree's end.
    t.insert(b"claim", b"x").unwrap();
    const THREADS: usize = 6;
    const KEYS: u64 = 300;
    let what = format!("{policy:?}");
    let run = {
        let (db, t) = (db.clone(), t.clone());
        move || {
            let barrier = Arc::new(Barrier::new(THREADS));
            let workers: Vec<_> = (0..THREADS)
                .map(|th| {
                    let (db, t, barrier) = (db.clone(), t.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        let mut won = Vec::new();
                        for i in 0..KEYS {
                            barrier.wait();
                            // Every thread claims the same keys, half of them past the tree's
                            // last key, in the same order: they meet on each.
                            let key = if i % 2 == 0 { format!("claim{i:04}") } else { format!("zz{i:04}") };
                            let key = key.as_bytes();
                            let mine = (th as i64).to_be_bytes();
                            let claimed = db
                                .transact(|tx| {
                                    if th % 2 == 0 {
                                        if tx.get(&t, key)?.is_some() {
                                            return Ok(false);
                                        }
                                        // Let the others read it too before this claims it.
                                        std::thread::sleep(Duration::from_micros(50));
                                        tx.insert(&t, key, &mine)?;
                                        Ok(true)
                                    } else {
                                        Ok(tx.compare_and_swap(&t, key, None, Some(&mine))?.is_ok())
                                    }
                                })
                                .unwrap_or_else(|e| panic!("thread {th}, key {i}: {e:?}"));
                            if claimed {
                                won.push(i);
                            }
                        }
                        won
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect::<Vec<Vec<u64>>>()
        }
    };
    let won = watchdog(&what, 60, run);
    let mut all: Vec<u64> = won.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..KEYS).collect::<Vec<_>>(), "{what}: each key claimed exactly once");
    for (th, keys) in won.iter().enumerate() {
        for &i in keys {
            let key = if i % 2 == 0 { format!("claim{i:04}") } else { format!("zz{i:04}") };
            assert_eq!(int(&t.get(key.as_bytes()).unwrap().unwrap()), th as i64, "{what}: key {i}");
        }
    }
    let stats = db.lock_stats().unwrap();
    assert_eq!(stats.timeouts, 0, "{what}: {stats:?}");
    eprintln!("{what}: {stats:?}");
}

#[test]
fn k15_k16_racing_claims_of_fresh_keys_each_win_once_and_never_meet_a_duplicate() {
    for policy in POLICIES {
        claims(policy);
    }
}

/// Write skew (K24's anomaly) cannot happen to serializable transactions: pairs of accounts
/// whose sum must stay at least zero, withdrawals that read both of a pair (in random order)
/// and take from one only if the pair can afford it, and deposits, by many threads at once.
#[test]
fn k16_serializable_withdrawals_never_skew_a_pair_below_zero() {
    for policy in POLICIES {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = open(dir.path(), policy, CommitMode::Async);
        const PAIRS: u64 = 3;
        for p in 0..2 * PAIRS {
            t.insert(&account(p), &50i64.to_be_bytes()).unwrap();
        }
        let what = format!("{policy:?}");
        let stop = Arc::new(AtomicBool::new(false));
        let run = {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            move || {
                let workers: Vec<_> = (0..8)
                    .map(|th| {
                        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                        std::thread::spawn(move || {
                            let mut rng = XorShift(th * 31 + 7);
                            let mut withdrawn = 0;
                            while !stop.load(Ordering::Relaxed) {
                                let pair = rng.next() % PAIRS;
                                let (a, b) = (account(2 * pair), account(2 * pair + 1));
                                let (first, second) =
                                    if rng.next().is_multiple_of(2) { (a, b) } else { (b, a) };
                                let deposit = rng.next().is_multiple_of(4);
                                let took = db
                                    .transact(|tx| {
                                        let x = read(tx, &t, &first)?;
                                        if deposit {
                                            tx.put(&t, &first, &(x + 60).to_be_bytes())?;
                                            return Ok(false);
                                        }
                                        let y = read(tx, &t, &second)?;
                                        if x + y >= 40 {
                                            tx.put(&t, &first, &(x - 40).to_be_bytes())?;
                                            return Ok(true);
                                        }
                                        Ok(false)
                                    })
                                    .unwrap();
                                withdrawn += u64::from(took);
                            }
                            withdrawn
                        })
                    })
                    .collect();
                std::thread::sleep(phase());
                stop.store(true, Ordering::Relaxed);
                workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
            }
        };
        let withdrawn = watchdog(&what, 60, run);
        assert!(withdrawn > 0, "{what}: no withdrawal");
        for pair in 0..PAIRS {
            let x = int(&t.get(&account(2 * pair)).unwrap().unwrap());
            let y = int(&t.get(&account(2 * pair + 1)).unwrap().unwrap());
            assert!(x + y >= 0, "{what}: pair {pair} skewed to {x} + {y}");
        }
    }
}

/// Snapshot-isolation transactions run by hand on hot counters, beside serializable ones: a
/// write refused as a write conflict (K24: first updater wins) names the key written, and
/// after it the transaction is rolled back (or dropped) with nothing of it left; a refused
/// lock is a deadlock's or wait-die's; every committed increment counts.
#[test]
fn k24_hand_run_snapshot_writers_see_conflicts_naming_their_key_and_lose_nothing() {
    for policy in POLICIES {
        let dir = tempfile::tempdir().unwrap();
        let (db, t) = open(dir.path(), policy, CommitMode::Async);
        const COUNTERS: u64 = 3;
        for i in 0..COUNTERS {
            t.insert(&counter(i), &0i64.to_be_bytes()).unwrap();
        }
        let what = format!("{policy:?}");
        let stop = Arc::new(AtomicBool::new(false));
        let run = {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            move || {
                let workers: Vec<_> = (0..6)
                    .map(|th| {
                        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                        std::thread::spawn(move || {
                            let mut rng = XorShift(th * 131 + 1);
                            let (mut added, mut conflicts) = (0i64, 0u64);
                            while !stop.load(Ordering::Relaxed) {
                                let picked = pick(&mut rng, 2, COUNTERS);
                                let mut tx = if th % 3 == 2 { db.begin() } else { db.begin_snapshot() };
                                let me = tx.id();
                                let mut at = Vec::new();
                                let mut bump = |tx: &mut Transaction<'_>| -> swizzledb::Result<()> {
                                    for &c in &picked {
                                        at = counter(c);
                                        let v = read(tx, &t, &at)?;
                                        tx.put(&t, &at, &(v + 1).to_be_bytes())?;
                                    }
                                    Ok(())
                                };
                                match bump(&mut tx) {
                                    Ok(()) => {
                                        tx.commit().unwrap();
                                        added += 2;
                                    }
                                    Err(Error::WriteConflict { key, .. }) => {
                                        assert!(tx.is_snapshot());
                                        assert_eq!(&*key, &at[..], "the conflict names the key written");
                                        conflicts += 1;
                                        if rng.next().is_multiple_of(2) {
                                            tx.abort().unwrap();
                                        }
                                    }
                                    Err(e) => assert_refusal(&e, me, Some(&at), policy),
                                }
                            }
                            (added, conflicts)
                        })
                    })
                    .collect();
                std::thread::sleep(phase());
                stop.store(true, Ordering::Relaxed);
                workers.into_iter().map(|w| w.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            }
        };
        let (added, conflicts) = watchdog(&what, 60, run);
        assert!(conflicts > 0, "{what}: no write conflict");
        let sum: i64 = (0..COUNTERS).map(|i| int(&t.get(&counter(i)).unwrap().unwrap())).sum();
        assert_eq!(sum, added, "{what}: the counters against the committed increments");
        assert_eq!(db.lock_stats().unwrap().timeouts, 0, "{what}");
    }
}

/// A victim withdrawn by the other transaction's look for a deadlock (the older one closed the
/// cycle, K23) keeps its transaction and its locks, and can go on: a request for a free key is
/// granted at once, and asking again for the key of the deadlock is refused again (the older
/// one still waits for the victim's key), not left waiting; once the victim ends, the older one
/// gets its lock at once.
#[test]
fn k23_a_victim_withdrawn_by_another_goes_on_in_the_same_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), DeadlockPolicy::Detect, CommitMode::Async);
    for k in [b"a", b"b", b"c"] {
        t.insert(k, &0i64.to_be_bytes()).unwrap();
    }
    let (db, t) = (&*db, &t);
    watchdog_scoped("a victim goes on", || {
        let mut older = db.begin();
        let mut younger = db.begin();
        older.put(t, b"a", &1i64.to_be_bytes()).unwrap();
        younger.put(t, b"b", &2i64.to_be_bytes()).unwrap();
        let (older_id, younger_id) = (older.id(), younger.id());
        let started = Instant::now();
        std::thread::scope(|s| {
            let victim = s.spawn(move || {
                // Waits for `a`, until the older one's request for `b` closes the cycle and
                // fails this one, the youngest.
                let e = younger.put(t, b"a", &2i64.to_be_bytes()).unwrap_err();
                assert_refusal(&e, younger_id, Some(b"a"), DeadlockPolicy::Detect);
                let Error::Lock(LockError::Deadlock { others, .. }) = &e else { unreachable!() };
                assert_eq!(others, &[older_id]);
                younger.put(t, b"c", &2i64.to_be_bytes()).unwrap();
                let e = younger.put(t, b"a", &2i64.to_be_bytes()).unwrap_err();
                assert_refusal(&e, younger_id, Some(b"a"), DeadlockPolicy::Detect);
                younger.abort().unwrap();
            });
            while db.lock_stats().unwrap().waits == 0 {
                std::thread::yield_now();
            }
            older.put(t, b"b", &1i64.to_be_bytes()).unwrap();
            older.commit().unwrap();
            victim.join().unwrap();
        });
        assert!(started.elapsed() < Duration::from_secs(5), "waits ended late: {:?}", started.elapsed());
    });
    assert_eq!(int(&t.get(b"a").unwrap().unwrap()), 1);
    assert_eq!(int(&t.get(b"b").unwrap().unwrap()), 1);
    assert_eq!(int(&t.get(b"c").unwrap().unwrap()), 0, "the victim's later write was rolled back");
    let stats = db.lock_stats().unwrap();
    assert_eq!((stats.deadlocks, stats.timeouts), (2, 0), "{stats:?}");
}

/// K9, `Builder::lock_wait_timeout`: a database's lock waits end at the timeout it was built
/// with — here 150 ms, where the default is 10 s — and `Duration::ZERO` refuses a request that
/// would wait at once; the error names the timeout, and the holder's lock is untouched.
#[test]
fn k9_the_builders_lock_wait_timeout_bounds_a_wait() {
    for timeout in [Duration::from_millis(150), Duration::ZERO] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder().lock_wait_timeout(timeout).create(dir.path().join("db.swz")).unwrap();
        let t = db.create_tree("t").unwrap();
        t.insert(b"k", b"0").unwrap();
        let mut holder = db.begin();
        holder.put(&t, b"k", b"held").unwrap();
        let started = Instant::now();
        let waited = std::thread::scope(|s| {
            s.spawn(|| {
                let mut tx = db.begin();
                let e = tx.put(&t, b"k", b"waiter").expect_err("the key is held");
                (e, started.elapsed())
            })
            .join()
            .unwrap()
        });
        match waited {
            (Error::Lock(LockError::Timeout { waited, key, .. }), took) => {
                assert_eq!((waited, &*key), (timeout, &b"k"[..]));
                assert!(took >= timeout, "{timeout:?}: gave up after {took:?}");
                assert!(took < timeout + Duration::from_secs(5), "{timeout:?}: waited {took:?}");
            }
            (e, _) => panic!("{timeout:?}: {e:?}"),
        }
        holder.commit().unwrap();
        assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"held"[..]));
        drop(t);
        db.close().unwrap();
    }
}

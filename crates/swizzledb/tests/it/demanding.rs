//! Valid but demanding use of the public API: many trees, huge transactions, many snapshots
//! and scans at once, maximum sizes, many threads on few frames, calls racing `close`, crashes
//! with huge losers. Each test checks an oracle, `Tree::verify` or a documented bound, under a
//! watchdog. (Helper "rb"'s probes: none found a defect; kept as regression tests.)

use std::collections::BTreeMap;
use std::ops::Bound::Unbounded;
use std::sync::mpsc;
use std::time::Duration;
use swizzledb::{Builder, Database, PoolMode};

const MODES: [PoolMode; 3] = [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory];

/// Runs `f` on another thread and fails if it takes longer than `secs`.
fn watchdog<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: hung for {secs} s"),
    }
}

fn small(mode: PoolMode, logging: bool, frames: usize) -> Builder {
    let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { frames * 4096 };
    Database::builder().mode(mode).page_size(4096).pool_bytes(pool).logging(logging)
}

#[test]
fn probe_many_tree_create_drop_cycles() {
    for mode in MODES {
        for logging in [true, false] {
            watchdog(300, "create/drop cycles", move || {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("db.swz");
                let db = small(mode, logging, 32).log_segment_bytes(64 << 10).create(&path).unwrap();
                let keep = db.create_tree("keep").unwrap();
                keep.insert(b"k", b"v").unwrap();
                for i in 0..400u32 {
                    let name = format!("{:0>64}", i);
                    assert_eq!(name.len(), 64);
                    let t =
                        db.create_tree(&name).unwrap_or_else(|e| panic!("{mode:?} {logging} cycle {i}: {e}"));
                    for k in 0..(i % 50) {
                        t.insert(&k.to_be_bytes(), &[7u8; 100]).unwrap();
                    }
                    assert!(db.drop_tree(&name).unwrap());
                }
                assert_eq!(db.tree_names(), vec!["keep".to_string()]);
                let len = std::fs::metadata(&path).unwrap().len();
                assert!(len < 4 << 20, "{mode:?} {logging}: file grew to {len} bytes");
                db.close().unwrap();
                let db = Database::builder()
                    .mode(mode)
                    .pool_bytes(if mode == PoolMode::MainMemory { 64 << 20 } else { 32 * 4096 })
                    .open(&path)
                    .unwrap();
                assert_eq!(db.tree_names(), vec!["keep".to_string()]);
                assert_eq!(db.tree("keep").unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
                db.close().unwrap();
            });
        }
    }
}

/// Tens of thousands of keys changed in one transaction, with a small pool: commit, abort and
/// drop each leave exactly the oracle's state.
#[test]
fn probe_one_huge_transaction() {
    for mode in MODES {
        for logging in [true, false] {
            for end in ["commit", "abort", "drop"] {
                watchdog(300, "huge txn", move || {
                    let dir = tempfile::tempdir().unwrap();
                    let db = small(mode, logging, 64)
                        .log_segment_bytes(64 << 10)
                        .create(dir.path().join("db.swz"))
                        .unwrap();
                    let t = db.create_tree("t").unwrap();
                    let mut oracle = BTreeMap::new();
                    for i in 0..2000u32 {
                        t.insert(&i.to_be_bytes(), &[1u8; 40]).unwrap();
                        oracle.insert(i.to_be_bytes().to_vec(), vec![1u8; 40]);
                    }
                    let snap = db.begin_read();
                    let mut tx = db.begin();
                    for i in 0..12_000u32 {
                        match i % 3 {
                            0 => {
                                tx.put(&t, &i.to_be_bytes(), &[2u8; 60]).unwrap();
                            }
                            1 if i < 2000 => {
                                tx.delete(&t, &i.to_be_bytes()).unwrap();
                            }
                            _ => {
                                tx.put(&t, &(i * 7).to_be_bytes(), &[3u8; 20]).unwrap();
                            }
                        }
                    }
                    let mut expect = oracle.clone();
                    for i in 0..12_000u32 {
                        match i % 3 {
                            0 => {
                                expect.insert(i.to_be_bytes().to_vec(), vec![2u8; 60]);
                            }
                            1 if i < 2000 => {
                                expect.remove(&i.to_be_bytes()[..]);
                            }
                            _ => {
                                expect.insert((i * 7).to_be_bytes().to_vec(), vec![3u8; 20]);
                            }
                        }
                    }
                    match end {
                        "commit" => {
                            tx.commit().unwrap();
                            oracle = expect;
                        }
                        "abort" => tx.abort().unwrap(),
                        _ => drop(tx),
                    }
                    let what = format!("{mode:?} logging {logging} {end}");
                    let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                    assert!(got == oracle, "{what}: {} records, expected {}", got.len(), oracle.len());
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    // The snapshot still sees the state before the transaction, or says it is too old.
                    match snap
                        .range(&t, Unbounded, Unbounded)
                        .map(|r| r.map_err(|e| e.to_string()))
                        .collect::<Result<Vec<_>, _>>()
                    {
                        Ok(v) => assert_eq!(v.len(), 2000, "{what}: snapshot"),
                        Err(e) => assert!(e.contains("too old"), "{what}: {e}"),
                    }
                    if let Some(v) = db.version_stats() {
                        eprintln!("{what}: {v:?}");
                    }
                    drop(snap);
                    db.close().unwrap();
                });
            }
        }
    }
}

/// A huge committed transaction while a snapshot is open: the versions kept stay within
/// `version_memory` and the snapshot ends with SnapshotTooOld.
#[test]
fn probe_version_memory_bound_under_a_huge_transaction() {
    for logging in [true, false] {
        watchdog(300, "version bound", move || {
            let dir = tempfile::tempdir().unwrap();
            let limit = 256 << 10;
            let db = small(PoolMode::Swizzling, logging, 256)
                .version_memory(limit)
                .create(dir.path().join("db.swz"))
                .unwrap();
            let t = db.create_tree("t").unwrap();
            for i in 0..5000u32 {
                t.insert(&i.to_be_bytes(), &[1u8; 200]).unwrap();
            }
            let snap = db.begin_read();
            assert!(snap.get(&t, &0u32.to_be_bytes()).unwrap().is_some());
            db.transact(|tx| {
                for i in 0..5000u32 {
                    tx.put(&t, &i.to_be_bytes(), &[2u8; 200])?;
                }
                Ok(())
            })
            .unwrap();
            let v = db.version_stats().unwrap();
            eprintln!("logging {logging}: {v:?}");
            let r = snap.get(&t, &1u32.to_be_bytes());
            eprintln!("logging {logging}: snapshot read {r:?}");
            assert!(
                matches!(r, Err(swizzledb::Error::SnapshotTooOld { .. }))
                    || r.as_ref().unwrap().as_deref() == Some(&[1u8; 200][..])
            );
            let v = db.version_stats().unwrap();
            eprintln!("logging {logging}: after {v:?}");
            drop(snap);
            db.close().unwrap();
        });
    }
}

/// Thousands of read transactions and scans open at once while writers run.
#[test]
fn probe_many_snapshots_and_scans_open() {
    for mode in MODES {
        for logging in [true, false] {
            watchdog(300, "many snapshots", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = small(mode, logging, 32).create(dir.path().join("db.swz")).unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..3000u32 {
                    t.insert(&i.to_be_bytes(), &[1u8; 50]).unwrap();
                }
                let mut snaps = Vec::new();
                let mut scans = Vec::new();
                for i in 0..500u32 {
                    snaps.push(db.begin_read());
                    let mut s = t.range(Unbounded, Unbounded);
                    let first = s.next().unwrap().unwrap();
                    assert_eq!(first.0, 0u32.to_be_bytes());
                    scans.push(s);
                    db.transact(|tx| tx.put(&t, &(i * 5).to_be_bytes(), &[2u8; 50]).map(|_| ())).unwrap();
                }
                for (n, s) in scans.iter_mut().enumerate() {
                    let rest = s.by_ref().count();
                    assert_eq!(rest, 2999, "{mode:?} {logging}: scan {n}");
                }
                for (n, s) in snaps.iter().enumerate() {
                    let v = s.get(&t, &((n as u32) * 5).to_be_bytes());
                    match v {
                        Ok(v) => assert_eq!(v.unwrap(), vec![1u8; 50], "{mode:?} {logging}: snapshot {n}"),
                        Err(e) => panic!("{mode:?} {logging}: snapshot {n}: {e}"),
                    }
                }
                drop(scans);
                drop(snaps);
                t.verify().unwrap();
                db.close().unwrap();
            });
        }
    }
}

/// Many scans at once on a pool of 16 frames: each scan that holds a page would exhaust it.
#[test]
fn probe_many_open_scans_on_a_tiny_pool() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            watchdog(300, "scans on tiny pool", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = small(mode, logging, 16).create(dir.path().join("db.swz")).unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..5000u32 {
                    t.insert(&i.to_be_bytes(), &[1u8; 50]).unwrap();
                }
                let mut scans: Vec<_> = (0..200).map(|_| t.range(Unbounded, Unbounded)).collect();
                for (n, s) in scans.iter_mut().enumerate() {
                    for _ in 0..(n * 23 % 5000) {
                        s.next().unwrap().unwrap();
                    }
                }
                t.upsert(&7u32.to_be_bytes(), &[9u8; 50]).unwrap();
                for (n, s) in scans.iter_mut().enumerate() {
                    let rest = s.by_ref().inspect(|r| assert!(r.is_ok())).count();
                    assert_eq!(rest, 5000 - n * 23 % 5000, "{mode:?} {logging} scan {n}");
                }
                drop(scans);
                t.verify().unwrap();
                db.close().unwrap();
            });
        }
    }
}

/// An iterator held across drop_tree and close: later steps refuse, nothing hangs.
#[test]
fn probe_scan_across_drop_and_close() {
    for mode in MODES {
        for logging in [true, false] {
            watchdog(300, "scan across drop", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = small(mode, logging, 32).create(dir.path().join("db.swz")).unwrap();
                let t = db.create_tree("t").unwrap();
                let began = std::time::Instant::now();
                for i in 0..3000u32 {
                    t.insert(&i.to_be_bytes(), &[1u8; 50]).unwrap();
                }
                eprintln!("{mode:?} {logging}: inserts took {:?}", began.elapsed());
                let mut s = t.range(Unbounded, Unbounded);
                s.next().unwrap().unwrap();
                let snap = db.begin_read();
                snap.get(&t, b"x").unwrap();
                let r = db.drop_tree("t");
                eprintln!("{mode:?} {logging}: drop with an open scan: {r:?} at {:?}", began.elapsed());
                let rest: Vec<_> = s.by_ref().take(5).collect();
                eprintln!(
                    "{mode:?} {logging}: scan after drop: {:?}",
                    rest.iter().map(|r| r.is_ok()).collect::<Vec<_>>()
                );
                drop(s);
                let u = db.create_tree("u").unwrap();
                for i in 0..3000u32 {
                    u.insert(&i.to_be_bytes(), &[3u8; 50]).unwrap();
                }
                // The snapshot began before the new tree's records were committed (on an
                // unlogged database the handles' writes record no versions and show at once, K21).
                assert!(
                    !logging || snap.get(&u, &5u32.to_be_bytes()).unwrap().is_none(),
                    "{mode:?} {logging}: an older snapshot saw a later tree's record"
                );
                let mut s2 = u.range(Unbounded, Unbounded);
                s2.next().unwrap().unwrap();
                drop(snap);
                db.close().unwrap();
                let r: Vec<_> = s2.take(3).collect();
                assert!(r.iter().all(|r| r.is_err()), "{mode:?} {logging}: a closed database's scan went on");
                eprintln!("{mode:?} {logging}: done at {:?}", began.elapsed());
            });
        }
    }
}

/// Keys and values at their maximum sizes, in transactions, with the smallest log segments.
#[test]
fn probe_max_sizes_in_transactions_small_segments() {
    for mode in MODES {
        for page in [4096usize, 32768] {
            watchdog(300, "max sizes", move || {
                let dir = tempfile::tempdir().unwrap();
                let pool = if mode == PoolMode::MainMemory { 256 << 20 } else { 64 * page };
                let seg = (swizzledb::MIN_SEGMENT_PAGES as usize * page) as u64;
                let db = Database::builder()
                    .mode(mode)
                    .page_size(page)
                    .pool_bytes(pool)
                    .log_segment_bytes(seg)
                    .create(dir.path().join("db.swz"))
                    .unwrap();
                let t = db.create_tree("t").unwrap();
                let kl = swizzledb::max_key_len(page);
                let vl = t.max_value_len();
                let il = swizzledb::max_inline_value_len(page);
                let what = format!("{mode:?} page {page} key {kl} value {vl}");
                eprintln!("{what}");
                let key = |i: u8| {
                    let mut k = vec![i; kl];
                    k[kl - 1] = 0xEE;
                    k
                };
                let mut oracle = BTreeMap::new();
                // inline max values and large values in one txn, then abort, then commit
                for round in 0..2 {
                    let mut tx = db.begin();
                    for i in 0..6u8 {
                        let v = if i % 2 == 0 { vec![i ^ round; il] } else { vec![i ^ round; vl] };
                        tx.put(&t, &key(i), &v).unwrap_or_else(|e| panic!("{what}: put {i}: {e}"));
                        if round == 1 {
                            oracle.insert(key(i), v);
                        }
                    }
                    // update_with to the max inline and cas to the max
                    tx.update_with(&t, &key(0), |old, new| {
                        new.extend_from_slice(old);
                    })
                    .unwrap_or_else(|e| panic!("{what}: update_with: {e}"));
                    let cur = tx.get(&t, &key(1)).unwrap();
                    tx.compare_and_swap(&t, &key(1), cur.as_deref(), Some(&vec![0xAB; vl]))
                        .unwrap_or_else(|e| panic!("{what}: cas: {e}"))
                        .unwrap();
                    if round == 1 {
                        oracle.insert(key(1), vec![0xAB; vl]);
                    }
                    tx.delete(&t, &key(3)).unwrap();
                    if round == 1 {
                        oracle.remove(&key(3));
                    }
                    if round == 0 {
                        tx.abort().unwrap_or_else(|e| panic!("{what}: abort: {e}"));
                    } else {
                        tx.commit().unwrap_or_else(|e| panic!("{what}: commit: {e}"));
                    }
                    let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                    assert!(
                        got == oracle,
                        "{what}: round {round}: {} records, expected {}",
                        got.len(),
                        oracle.len()
                    );
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                }
                // Auto-commit max sizes with cas and delete of large value.
                t.compare_and_swap(&key(9), None, Some(&vec![1; vl])).unwrap().unwrap();
                t.compare_and_swap(&key(9), Some(&vec![1; vl]), None).unwrap().unwrap();
                let path = dir.path().join("db.swz");
                drop(t);
                drop(db);
                let db = Database::builder().mode(mode).pool_bytes(pool).open(&path).unwrap();
                let t = db.tree("t").unwrap();
                let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                assert!(got == oracle, "{what}: after reopen");
                db.close().unwrap();
            });
        }
    }
}

/// 64 threads of mixed reads, writes and transactions on 16 frames: every acknowledged
/// commit is in the end state; errors are typed.
#[test]
fn probe_many_threads_on_few_frames() {
    use std::sync::{Arc, Mutex};
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            for frames in [16usize, 64] {
                watchdog(300, "threads on few frames", move || {
                    let dir = tempfile::tempdir().unwrap();
                    let db =
                        Arc::new(small(mode, logging, frames).create(dir.path().join("db.swz")).unwrap());
                    let t = db.create_tree("t").unwrap();
                    // Each thread owns keys k % 64 == thread: an oracle per thread.
                    let oracles: Arc<Mutex<BTreeMap<Vec<u8>, Vec<u8>>>> = Arc::default();
                    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
                    let hs: Vec<_> = (0..64u32)
                        .map(|th| {
                            let (db, t, oracles, errors) =
                                (db.clone(), t.clone(), oracles.clone(), errors.clone());
                            std::thread::spawn(move || {
                                let mut mine = BTreeMap::new();
                                for n in 0..60u32 {
                                    let k = |j: u32| (j * 64 + th).to_be_bytes().to_vec();
                                    let v = vec![(n % 251) as u8; 20 + (n as usize * 37 % 300)];
                                    let r: Result<(), String> = match n % 4 {
                                        0 => t
                                            .upsert(&k(n % 20), &v)
                                            .map(|_| {
                                                mine.insert(k(n % 20), v.clone());
                                            })
                                            .map_err(|e| e.to_string()),
                                        1 => db
                                            .transact(|tx| {
                                                for j in 0..5 {
                                                    tx.put(&t, &k((n + j) % 20), &v)?;
                                                }
                                                Ok(())
                                            })
                                            .map(|()| {
                                                for j in 0..5 {
                                                    mine.insert(k((n + j) % 20), v.clone());
                                                }
                                            })
                                            .map_err(|e| e.to_string()),
                                        2 => t
                                            .delete(&k(n % 20))
                                            .map(|_| {
                                                mine.remove(&k(n % 20));
                                            })
                                            .map_err(|e| e.to_string()),
                                        _ => {
                                            let got = t.get(&k(n % 20));
                                            match got {
                                                Ok(g) => {
                                                    if g.as_ref() != mine.get(&k(n % 20)) {
                                                        Err(format!(
                                                            "thread {th}: read {:?} expected {:?}",
                                                            g.map(|g| g.len()),
                                                            mine.get(&k(n % 20)).map(|g| g.len())
                                                        ))
                                                    } else {
                                                        Ok(())
                                                    }
                                                }
                                                Err(e) => Err(e.to_string()),
                                            }
                                        }
                                    };
                                    if let Err(e) = r {
                                        if e.contains("read") && e.contains("expected") {
                                            errors.lock().unwrap().push(e);
                                        } else {
                                            // A typed failure: the write's outcome is unknown only if
                                            // it is not a refused one; this probe records it.
                                            errors.lock().unwrap().push(format!("thread {th} op {n}: {e}"));
                                            return;
                                        }
                                    }
                                }
                                oracles.lock().unwrap().extend(mine);
                            })
                        })
                        .collect();
                    for h in hs {
                        h.join().unwrap();
                    }
                    let errors = errors.lock().unwrap().clone();
                    let what = format!("{mode:?} logging {logging} frames {frames}");
                    if !errors.is_empty() {
                        eprintln!(
                            "{what}: {} errors, first {:?}",
                            errors.len(),
                            &errors[..errors.len().min(5)]
                        );
                    }
                    assert!(!errors.iter().any(|e| e.contains("expected")), "{what}: wrong reads {errors:?}");
                    if errors.is_empty() {
                        let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                        assert!(got == *oracles.lock().unwrap(), "{what}: end state differs");
                    }
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    drop(t);
                    Arc::try_unwrap(db).unwrap().close().unwrap();
                });
            }
        }
    }
}

/// The smallest log bound, a long transaction open, other threads writing: no write waits
/// long for the cleaner (R15), and the log shrinks after.
#[test]
fn probe_small_log_bound_with_a_long_transaction() {
    use std::sync::Arc;
    use std::time::Instant;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        watchdog(300, "small log bound", move || {
            let dir = tempfile::tempdir().unwrap();
            let seg = 64u64 << 10;
            let db = Arc::new(
                small(mode, true, 64)
                    .log_segment_bytes(seg)
                    .max_log_bytes(4 * seg)
                    .commit_mode(swizzledb::CommitMode::Async)
                    .create(dir.path().join("db.swz"))
                    .unwrap(),
            );
            let t = db.create_tree("t").unwrap();
            let mut tx = db.begin();
            tx.put(&t, b"long", b"x").unwrap();
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writers: Vec<_> = (0..4u32)
                .map(|th| {
                    let (t, stop) = (t.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut worst = Duration::ZERO;
                        let mut n = 0u32;
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 20_000 {
                            let s = Instant::now();
                            t.upsert(&(th * 1_000_000 + n % 3000).to_be_bytes(), &[n as u8; 100]).unwrap();
                            worst = worst.max(s.elapsed());
                            n += 1;
                        }
                        (worst, n)
                    })
                })
                .collect();
            let mut long_worst = Duration::ZERO;
            for i in 0..3000u32 {
                let s = Instant::now();
                tx.put(&t, &(900_000_000 + i).to_be_bytes(), &[1; 100]).unwrap();
                long_worst = long_worst.max(s.elapsed());
            }
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let res: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
            let peak = db.log_bytes().unwrap();
            tx.commit().unwrap();
            eprintln!("{mode:?}: writers {res:?}, long txn worst {long_worst:?}, log at commit {peak}, cleaner {:?}", db.cleaner_stats());
            // After the long transaction ends, more writes shrink the log again.
            for n in 0..20_000u32 {
                t.upsert(&(n % 3000).to_be_bytes(), &[n as u8; 100]).unwrap();
            }
            std::thread::sleep(Duration::from_millis(500));
            let after = db.log_bytes().unwrap();
            eprintln!("{mode:?}: log after {after}");
            for (worst, _) in &res {
                assert!(*worst < Duration::from_millis(1500), "{mode:?}: a write waited {worst:?}");
            }
            assert!(after <= 4 * seg + seg, "{mode:?}: the log stayed at {after}");
            t.verify().unwrap();
            drop(t);
            Arc::try_unwrap(db).unwrap().close().unwrap();
        });
    }
}

/// More trees than the pool has frames, and the catalog's end.
#[test]
fn probe_trees_past_the_pool_and_catalog() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for logging in [true, false] {
            watchdog(300, "trees past pool", move || {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("db.swz");
                let db = small(mode, logging, 16).create(&path).unwrap();
                let mut made = Vec::new();
                let err = loop {
                    let name = format!("{:x<60}{:04}", "", made.len());
                    match db.create_tree(&name) {
                        Ok(t) => {
                            t.insert(b"a", &[1; 300]).unwrap_or_else(|e| {
                                panic!("{mode:?} {logging}: insert into tree {}: {e}", made.len())
                            });
                            made.push(name);
                        }
                        Err(e) => break e,
                    }
                    if made.len() > 5000 {
                        panic!("{mode:?}: no limit");
                    }
                };
                eprintln!("{mode:?} {logging}: {} trees, then {err}", made.len());
                // Every tree still reads, and one can be dropped and another made.
                for n in &made {
                    assert_eq!(db.tree(n).unwrap().get(b"a").unwrap().unwrap(), vec![1; 300]);
                }
                assert!(db.drop_tree(&made[3]).unwrap());
                let t = db.create_tree("again").unwrap();
                t.insert(b"z", b"z").unwrap();
                db.close().unwrap();
                let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 16 * 4096 };
                let db = Database::builder()
                    .mode(mode)
                    .pool_bytes(pool)
                    .open(&path)
                    .unwrap_or_else(|e| panic!("{mode:?} {logging}: reopen: {e}"));
                assert_eq!(db.tree_names().len(), made.len());
                db.close().unwrap();
            });
        }
    }
}

/// 200 threads each holding a read transaction while writers commit: no wrong read.
#[test]
fn probe_many_threads_holding_snapshots() {
    use std::sync::{Arc, Barrier};
    for logging in [true, false] {
        watchdog(300, "threads holding snapshots", move || {
            let dir = tempfile::tempdir().unwrap();
            let db =
                Arc::new(small(PoolMode::Swizzling, logging, 64).create(dir.path().join("db.swz")).unwrap());
            let t = db.create_tree("t").unwrap();
            for i in 0..100u32 {
                t.insert(&i.to_be_bytes(), &0u64.to_be_bytes()).unwrap();
            }
            let n = 200;
            let b = Arc::new(Barrier::new(n + 1));
            let b2 = Arc::new(Barrier::new(n + 1));
            let readers: Vec<_> = (0..n)
                .map(|_| {
                    let (db, t, b, b2) = (db.clone(), t.clone(), b.clone(), b2.clone());
                    std::thread::spawn(move || {
                        let r = db.begin_read();
                        let sum0: u64 = r
                            .range(&t, Unbounded, Unbounded)
                            .map(|x| u64::from_be_bytes(x.unwrap().1.try_into().unwrap()))
                            .sum();
                        b.wait();
                        b2.wait();
                        let sum1: u64 = r
                            .range(&t, Unbounded, Unbounded)
                            .map(|x| u64::from_be_bytes(x.unwrap().1.try_into().unwrap()))
                            .sum();
                        assert_eq!(sum0, sum1);
                        assert_eq!(sum0 % 100, 0);
                    })
                })
                .collect();
            b.wait();
            for round in 1..50u64 {
                db.transact(|tx| {
                    for i in 0..100u32 {
                        tx.put(&t, &i.to_be_bytes(), &round.to_be_bytes())?;
                    }
                    Ok(())
                })
                .unwrap();
            }
            eprintln!("logging {logging}: {:?}", db.version_stats());
            b2.wait();
            for r in readers {
                r.join().unwrap();
            }
            eprintln!("logging {logging}: after {:?}", db.version_stats());
            assert_eq!(db.version_stats().unwrap().bytes, 0);
            drop(t);
            Arc::try_unwrap(db).unwrap().close().unwrap();
        });
    }
}

/// A database reopened with fewer frames than it has trees.
#[test]
fn probe_reopen_with_fewer_frames_than_trees() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            watchdog(300, "reopen fewer frames", move || {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("db.swz");
                let db = small(mode, logging, 256).create(&path).unwrap();
                for i in 0..40 {
                    let t = db.create_tree(&format!("t{i}")).unwrap();
                    for k in 0..200u32 {
                        t.insert(&k.to_be_bytes(), &[i as u8; 64]).unwrap();
                    }
                }
                db.close().unwrap();
                let r = small(mode, logging, 16).open(&path);
                eprintln!(
                    "{mode:?} {logging}: open with 16 frames: {:?}",
                    r.as_ref().err().map(ToString::to_string)
                );
                if let Ok(db) = r {
                    for i in 0..40 {
                        match db.tree(&format!("t{i}")) {
                            Ok(t) => {
                                let r = t.get(&5u32.to_be_bytes());
                                if let Ok(v) = &r {
                                    assert_eq!(v.as_deref(), Some(&[i as u8; 64][..]));
                                }
                            }
                            Err(e) => {
                                eprintln!("{mode:?} {logging}: tree {i}: {e}");
                                break;
                            }
                        }
                    }
                    db.close().unwrap();
                }
                let db = small(mode, logging, 256).open(&path).unwrap();
                for i in 0..40 {
                    let t = db.tree(&format!("t{i}")).unwrap();
                    assert_eq!(t.len().unwrap(), 200);
                    t.verify().unwrap();
                }
                db.close().unwrap();
            });
        }
    }
}

/// A scan held open while many commits change the same keys: the versions kept stay near the
/// bound, and the scan ends with SnapshotTooOld instead of growing memory.
#[test]
fn probe_long_scan_version_bound() {
    for logging in [true, false] {
        for plain_scan in [true, false] {
            watchdog(300, "long scan bound", move || {
                let dir = tempfile::tempdir().unwrap();
                let limit = 1 << 20;
                let db = small(PoolMode::Swizzling, logging, 256)
                    .version_memory(limit)
                    .commit_mode(swizzledb::CommitMode::Async)
                    .create(dir.path().join("db.swz"))
                    .unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..1000u32 {
                    t.insert(&i.to_be_bytes(), &[0u8; 100]).unwrap();
                }
                let rt = db.begin_read_committed();
                let mut scan = if plain_scan {
                    t.range(Unbounded, Unbounded)
                } else {
                    rt.range(&t, Unbounded, Unbounded)
                };
                scan.next().unwrap().unwrap();
                let mut peak = 0;
                for n in 0..30_000u32 {
                    let i = n % 1000;
                    db.transact(|tx| tx.put(&t, &i.to_be_bytes(), &[(n % 200) as u8 + 1; 100]).map(|_| ()))
                        .unwrap();
                    peak = peak.max(db.version_stats().unwrap().bytes);
                }
                let rest: Vec<_> = scan.by_ref().take(3).collect();
                eprintln!(
                    "logging {logging} plain {plain_scan}: peak {peak}, {:?}, scan {:?}",
                    db.version_stats(),
                    rest.iter()
                        .map(|r| r.as_ref().map(|_| ()).map_err(ToString::to_string))
                        .collect::<Vec<_>>()
                );
                assert!(peak <= limit + (limit / 4), "version memory {peak} over the bound {limit}");
                drop(scan);
                drop(rt);
                db.close().unwrap();
            });
        }
    }
}

/// 64 threads moving money between random accounts in transactions (deadlocks frequent) on
/// 16 frames; snapshot readers check the total.
#[test]
fn probe_transfers_many_threads_few_frames() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            for si in [false, true] {
                watchdog(300, "transfers", move || {
                    let dir = tempfile::tempdir().unwrap();
                    let db = Arc::new(small(mode, logging, 16).create(dir.path().join("db.swz")).unwrap());
                    let t = db.create_tree("acct").unwrap();
                    let accounts = 400u32;
                    for i in 0..accounts {
                        t.insert(&i.to_be_bytes(), &1000u64.to_be_bytes()).unwrap();
                    }
                    let stop = Arc::new(AtomicBool::new(false));
                    let fails = Arc::new(AtomicU64::new(0));
                    let read = |v: Option<Vec<u8>>| u64::from_be_bytes(v.unwrap().try_into().unwrap());
                    let hs: Vec<_> = (0..64u64)
                        .map(|th| {
                            let (db, t, stop, fails) = (db.clone(), t.clone(), stop.clone(), fails.clone());
                            std::thread::spawn(move || {
                                let mut x = th * 7919 + 1;
                                let mut done = 0;
                                while !stop.load(Ordering::Relaxed) && done < 100 {
                                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                                    let a = ((x >> 33) % u64::from(accounts)) as u32;
                                    let b = ((x >> 13) % u64::from(accounts)) as u32;
                                    if a == b {
                                        continue;
                                    }
                                    let body = |tx: &mut swizzledb::Transaction<'_>| {
                                        let va = read(tx.get(&t, &a.to_be_bytes())?);
                                        let vb = read(tx.get(&t, &b.to_be_bytes())?);
                                        if va == 0 {
                                            return Ok(());
                                        }
                                        tx.put(&t, &a.to_be_bytes(), &(va - 1).to_be_bytes())?;
                                        tx.put(&t, &b.to_be_bytes(), &(vb + 1).to_be_bytes())?;
                                        Ok(())
                                    };
                                    let r = if si { db.transact_snapshot(body) } else { db.transact(body) };
                                    if let Err(e) = r {
                                        fails.fetch_add(1, Ordering::Relaxed);
                                        eprintln!("thread {th}: {e}");
                                    }
                                    done += 1;
                                }
                            })
                        })
                        .collect();
                    let checker = {
                        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                        std::thread::spawn(move || {
                            let mut checks = 0;
                            while !stop.load(Ordering::Relaxed) {
                                let r = db.begin_read();
                                let sum: u64 = r
                                    .range(&t, Unbounded, Unbounded)
                                    .map(|x| u64::from_be_bytes(x.unwrap().1.try_into().unwrap()))
                                    .sum();
                                assert_eq!(sum, 400_000, "snapshot total");
                                checks += 1;
                            }
                            checks
                        })
                    };
                    for h in hs {
                        h.join().unwrap();
                    }
                    stop.store(true, Ordering::Relaxed);
                    let checks = checker.join().unwrap();
                    let sum: u64 = t
                        .range(Unbounded, Unbounded)
                        .map(|x| u64::from_be_bytes(x.unwrap().1.try_into().unwrap()))
                        .sum();
                    eprintln!(
                        "{mode:?} {logging} si {si}: {checks} checks, {} failures, locks {:?}",
                        fails.load(Ordering::Relaxed),
                        db.lock_stats()
                    );
                    assert_eq!(sum, 400_000);
                    t.verify().unwrap();
                    drop(t);
                    Arc::try_unwrap(db).unwrap().close().unwrap();
                });
            }
        }
    }
}

/// Tree handles used on other threads while the database closes: they refuse or succeed,
/// and every write acknowledged is there after reopen.
#[test]
fn probe_close_racing_handle_writes_and_scans() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    for mode in MODES {
        for logging in [true, false] {
            for round in 0..4u64 {
                watchdog(300, "close racing", move || {
                    let dir = tempfile::tempdir().unwrap();
                    let path = dir.path().join("db.swz");
                    let db = small(mode, logging, 32)
                        .commit_mode(swizzledb::CommitMode::Async)
                        .create(&path)
                        .unwrap();
                    let t = db.create_tree("t").unwrap();
                    for i in 0..2000u32 {
                        t.insert(&i.to_be_bytes(), &[1; 50]).unwrap();
                    }
                    let go = Arc::new(AtomicBool::new(false));
                    let writers: Vec<_> = (0..3u32)
                        .map(|th| {
                            let (t, go) = (t.clone(), go.clone());
                            std::thread::spawn(move || {
                                let mut acked = Vec::new();
                                while !go.load(Ordering::Relaxed) {}
                                for n in 0..1_000_000u32 {
                                    let k = (10_000 + th * 1_000_000 + n).to_be_bytes();
                                    match t.upsert(&k, &[th as u8; 40]) {
                                        Ok(_) => acked.push(k),
                                        Err(_) => break,
                                    }
                                }
                                acked
                            })
                        })
                        .collect();
                    let scanner = {
                        let (t, go) = (t.clone(), go.clone());
                        std::thread::spawn(move || {
                            while !go.load(Ordering::Relaxed) {}
                            loop {
                                let mut ok = 0;
                                for r in t.range(Unbounded, Unbounded) {
                                    match r {
                                        Ok(_) => ok += 1,
                                        Err(_) => return,
                                    }
                                }
                                assert!(ok >= 2000);
                            }
                        })
                    };
                    go.store(true, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20 + round * 30));
                    let closed = db.close();
                    let acked: Vec<_> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
                    scanner.join().unwrap();
                    let what = format!("{mode:?} logging {logging} round {round}");
                    closed.unwrap_or_else(|e| panic!("{what}: close: {e}"));
                    drop(t);
                    let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 32 * 4096 };
                    let db = Database::builder()
                        .mode(mode)
                        .pool_bytes(pool)
                        .open(&path)
                        .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
                    let t = db.tree("t").unwrap();
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    let missing = acked.iter().filter(|k| t.get(&k[..]).unwrap().is_none()).count();
                    eprintln!("{what}: {} acked, {missing} missing", acked.len());
                    assert_eq!(missing, 0, "{what}: acknowledged writes lost");
                    db.close().unwrap();
                });
            }
        }
    }
}

/// Scans over a tree with many deleted keys whose versions an old snapshot keeps: time in
/// proportion to the records and the deleted keys.
#[test]
fn probe_scan_cost_over_deleted_keys_kept_for_a_snapshot() {
    use std::time::Instant;
    for logging in [true, false] {
        watchdog(300, "deleted keys scan", move || {
            let dir = tempfile::tempdir().unwrap();
            let db = small(PoolMode::Swizzling, logging, 1024)
                .commit_mode(swizzledb::CommitMode::Async)
                .create(dir.path().join("db.swz"))
                .unwrap();
            let t = db.create_tree("t").unwrap();
            let n = 40_000u32;
            db.transact(|tx| (0..n).try_for_each(|i| tx.put(&t, &i.to_be_bytes(), &[1; 20]).map(|_| ())))
                .unwrap();
            let s = Instant::now();
            assert_eq!(t.range(Unbounded, Unbounded).count(), n as usize);
            let base = s.elapsed();
            let old = db.begin_read();
            assert!(old.get(&t, &0u32.to_be_bytes()).unwrap().is_some());
            db.transact(|tx| {
                (0..n).filter(|i| i % 2 == 0).try_for_each(|i| tx.delete(&t, &i.to_be_bytes()).map(|_| ()))
            })
            .unwrap();
            let s = Instant::now();
            assert_eq!(t.range(Unbounded, Unbounded).count(), n as usize / 2);
            let fwd = s.elapsed();
            let s = Instant::now();
            assert_eq!(t.range_rev(Unbounded, Unbounded).count(), n as usize / 2);
            let rev = s.elapsed();
            let s = Instant::now();
            assert_eq!(old.range(&t, Unbounded, Unbounded).count(), n as usize);
            let oldscan = s.elapsed();
            let s = Instant::now();
            for i in 0..2000u32 {
                let _ = t.first().unwrap();
                let _ =
                    old.range(&t, std::ops::Bound::Included(&(i * 20).to_be_bytes()[..]), Unbounded).next();
            }
            let firsts = s.elapsed();
            eprintln!("logging {logging}: base {base:?} fwd {fwd:?} rev {rev:?} old {oldscan:?} 2000 firsts {firsts:?} {:?}", db.version_stats());
            assert!(fwd < base * 20 + Duration::from_millis(200));
            drop(old);
            db.close().unwrap();
        });
    }
}

/// update_with that grows a value past every limit, or across the inline/large boundary.
#[test]
fn probe_update_with_sizes() {
    for mode in MODES {
        watchdog(300, "update_with sizes", move || {
            let dir = tempfile::tempdir().unwrap();
            let db = small(mode, true, 64).log_segment_bytes(8192).create(dir.path().join("db.swz")).unwrap();
            let t = db.create_tree("t").unwrap();
            let max = t.max_value_len();
            let il = swizzledb::max_inline_value_len(4096);
            t.insert(b"k", b"small").unwrap();
            let mut tx = db.begin();
            for len in [il, il + 1, max, 3, max + 1, 10 << 20, il - 1, 0] {
                let r = tx.update_with(&t, b"k", |_, new| new.resize(len, 7));
                eprintln!(
                    "{mode:?}: update to {len} (max {max}): {:?}",
                    r.as_ref().map_err(ToString::to_string)
                );
                let expect_ok = len <= max;
                assert_eq!(r.is_ok(), expect_ok, "{mode:?} {len}");
                let got = tx.get(&t, b"k").unwrap().unwrap();
                if expect_ok {
                    assert_eq!(got.len(), len);
                }
            }
            tx.abort().unwrap();
            assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"small"[..]));
            t.verify().unwrap();
            db.close().unwrap();
        });
    }
}

/// A crash with a huge transaction running (or half rolled back), restart through a pool of
/// 16 frames: the committed state, exactly.
#[test]
fn probe_crash_with_a_huge_loser_on_a_tiny_pool() {
    use std::path::Path;
    use std::sync::Arc;
    use swizzledb_io::{CrashMode, FaultFs, Vfs};
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for during_abort in [false, true] {
            for instant in [false, true] {
                watchdog(300, "huge loser", move || {
                    let fs = Arc::new(FaultFs::new());
                    fs.create_dir_all(Path::new("/db")).unwrap();
                    let path = Path::new("/db/t.swz");
                    let b = small(mode, true, 16)
                        .log_segment_bytes(8192)
                        .log_archive(instant)
                        .restart_mode(if instant {
                            swizzledb::RestartMode::Instant
                        } else {
                            swizzledb::RestartMode::Classical
                        })
                        .lab(|l| l.vfs(fs.clone()));
                    let db = b.clone().create(path).unwrap();
                    let t = db.create_tree("t").unwrap();
                    let mut oracle = BTreeMap::new();
                    for i in 0..3000u32 {
                        let v = if i % 97 == 0 { vec![i as u8; 2000] } else { vec![i as u8; 30] };
                        t.insert(&i.to_be_bytes(), &v).unwrap();
                        oracle.insert(i.to_be_bytes().to_vec(), v);
                    }
                    db.checkpoint().unwrap();
                    let mut tx = db.begin();
                    for i in 0..20_000u32 {
                        if i < 3000 && i % 2 == 0 {
                            tx.delete(&t, &i.to_be_bytes()).unwrap();
                        } else {
                            let v = if i % 89 == 0 { vec![7; 3000] } else { vec![9; 40] };
                            tx.put(&t, &i.to_be_bytes(), &v).unwrap();
                        }
                    }
                    if during_abort {
                        let fs2 = fs.clone();
                        let killer = std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(30));
                            fs2.power_off(CrashMode::DropUnsynced);
                        });
                        let _ = tx.abort();
                        killer.join().unwrap();
                    } else {
                        fs.power_off(CrashMode::DropUnsynced);
                        drop(tx);
                    }
                    drop(t);
                    drop(db);
                    fs.power_on();
                    let what = format!("{mode:?} during_abort {during_abort} instant {instant}");
                    let db = b.clone().open(path).unwrap_or_else(|e| panic!("{what}: restart: {e}"));
                    let t = db.tree("t").unwrap();
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                    assert!(
                        got == oracle,
                        "{what}: {} records, expected {}; {:?}",
                        got.len(),
                        oracle.len(),
                        db.restart_stats()
                    );
                    db.close().unwrap();
                });
            }
        }
    }
}

/// Database-wide calls made while this thread holds an open transaction with uncommitted
/// changes (or inside `transact`'s closure): each returns (a result or a typed error), none
/// hangs, and the transaction then commits.
#[test]
fn probe_database_calls_beside_an_open_transaction() {
    type Call = fn(&Database, &swizzledb::Tree, &std::path::Path) -> String;
    let calls: Vec<(&str, Call)> = vec![
        ("checkpoint", |db, _, _| format!("{:?}", db.checkpoint())),
        ("flush", |db, _, _| format!("{:?}", db.flush())),
        ("create_tree", |db, _, _| format!("{:?}", db.create_tree("other").map(|_| ()))),
        ("tree_or_create", |db, _, _| format!("{:?}", db.tree_or_create("other2").map(|_| ()))),
        ("backup", |db, _, dir| format!("{:?}", db.backup_to(dir.join("copy.swz")).map(|_| ()))),
        ("archive", |db, _, _| format!("{:?}", db.archive_log().map(|_| ()))),
        ("plain get", |_, t, _| format!("{:?}", t.get(b"k"))),
        ("plain len", |_, t, _| format!("{:?}", t.len())),
        ("begin_read", |db, t, _| format!("{:?}", db.begin_read().get(t, b"k"))),
        ("transact other key", |db, t, _| {
            format!("{:?}", db.transact(|tx| tx.put(t, b"other", b"1").map(|_| ())))
        }),
        ("upsert other key", |_, t, _| format!("{:?}", t.upsert(b"zz", b"1"))),
        ("verify", |_, t, _| format!("{:?}", t.verify().map(|_| ()))),
    ];
    for mode in [PoolMode::Swizzling, PoolMode::MainMemory] {
        for logging in [true, false] {
            for (name, call) in &calls {
                let (name, call) = (*name, *call);
                watchdog(300, name, move || {
                    let dir = tempfile::tempdir().unwrap();
                    let db = small(mode, logging, 64).create(dir.path().join("db.swz")).unwrap();
                    let t = db.create_tree("t").unwrap();
                    for i in 0..500u32 {
                        t.insert(&i.to_be_bytes(), &[1; 30]).unwrap();
                    }
                    let s = std::time::Instant::now();
                    let r = db.transact(|tx| {
                        tx.put(&t, b"k", b"v")?;
                        for i in 0..200u32 {
                            tx.put(&t, &i.to_be_bytes(), &[2; 30])?;
                        }
                        let r = call(&db, &t, dir.path());
                        eprintln!("{mode:?} {logging} {name}: {r} after {:?}", s.elapsed());
                        Ok(())
                    });
                    r.unwrap_or_else(|e| panic!("{mode:?} {logging} {name}: the transaction: {e}"));
                    assert_eq!(t.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
                    t.verify().unwrap();
                    drop(t);
                    db.close().unwrap();
                });
            }
        }
    }
}

/// A backup taken while transactions hold uncommitted changes (this thread's and another's),
/// which then roll back: the copy holds the committed state only.
#[test]
fn probe_backup_beside_uncommitted_changes() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for logging in [true, false] {
            watchdog(300, "backup beside uncommitted", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = small(mode, logging, 64).create(dir.path().join("db.swz")).unwrap();
                let t = db.create_tree("t").unwrap();
                let mut oracle = BTreeMap::new();
                for i in 0..3000u32 {
                    t.insert(&i.to_be_bytes(), &[1; 30]).unwrap();
                    oracle.insert(i.to_be_bytes().to_vec(), vec![1; 30]);
                }
                let mut tx = db.begin();
                for i in 0..3000u32 {
                    match i % 3 {
                        0 => {
                            tx.put(&t, &i.to_be_bytes(), &[2; 30]).unwrap();
                        }
                        1 => {
                            tx.delete(&t, &i.to_be_bytes()).unwrap();
                        }
                        _ => {
                            tx.put(&t, &(i + 100_000).to_be_bytes(), &[3; 30]).unwrap();
                        }
                    }
                }
                let copy = dir.path().join("copy.swz");
                db.backup_to(&copy).unwrap();
                tx.abort().unwrap();
                drop(t);
                db.close().unwrap();
                let pool = if mode == PoolMode::MainMemory { 64 << 20 } else { 64 * 4096 };
                let db = Database::builder().mode(mode).pool_bytes(pool).open(&copy).unwrap();
                let t = db.tree("t").unwrap();
                let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                let what = format!("{mode:?} logging {logging}");
                assert!(
                    got == oracle,
                    "{what}: the copy has {} records, {} differ",
                    got.len(),
                    got.iter().filter(|(k, v)| oracle.get(*k) != Some(v)).count()
                );
                t.verify().unwrap();
                db.close().unwrap();
            });
        }
    }
}

/// Large values (overflow chains) rewritten by many threads on a small pool while others
/// read them by get, snapshot and scan: every value read is one that was written, whole.
#[test]
fn probe_large_values_churn_under_readers() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    fn make(key: u32, ver: u32, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        v.extend_from_slice(&key.to_be_bytes());
        v.extend_from_slice(&ver.to_be_bytes());
        while v.len() < len {
            v.push((key.wrapping_mul(31).wrapping_add(ver).wrapping_add(v.len() as u32)) as u8);
        }
        v
    }
    fn check(key: &[u8], v: &[u8]) -> Result<(), String> {
        if v.len() < 8 {
            return Err(format!("short value {}", v.len()));
        }
        let k = u32::from_be_bytes(v[0..4].try_into().unwrap());
        let ver = u32::from_be_bytes(v[4..8].try_into().unwrap());
        if key != k.to_be_bytes() {
            return Err(format!("value of key {k} under key {key:?}"));
        }
        if make(k, ver, v.len()) != v {
            return Err(format!("torn value of key {k} version {ver} len {}", v.len()));
        }
        Ok(())
    }
    for mode in MODES {
        for logging in [true, false] {
            watchdog(300, "large churn", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = Arc::new(
                    small(mode, logging, 64)
                        .commit_mode(swizzledb::CommitMode::Async)
                        .create(dir.path().join("db.swz"))
                        .unwrap(),
                );
                let t = db.create_tree("t").unwrap();
                let max = t.max_value_len().min(64 << 10);
                for k in 0..8u32 {
                    t.insert(&k.to_be_bytes(), &make(k, 0, 100)).unwrap();
                }
                let stop = Arc::new(AtomicBool::new(false));
                let writers: Vec<_> = (0..6u32)
                    .map(|th| {
                        let (db, t) = (db.clone(), t.clone());
                        std::thread::spawn(move || {
                            for n in 0..300u32 {
                                let ver = th * 1000 + n + 1;
                                let k = (n * 7 + th) % 8;
                                let len = 8 + ((n as usize * 7919 + th as usize * 104_729) % (max - 8));
                                let v = make(k, ver, len.min(max));
                                if n % 2 == 0 {
                                    t.upsert(&k.to_be_bytes(), &v).unwrap();
                                } else {
                                    let k2 = (k + 1) % 8;
                                    let v2 = make(k2, ver, (max + 8 - len).max(8));
                                    db.transact(|tx| {
                                        tx.put(&t, &k.to_be_bytes(), &v)?;
                                        tx.put(&t, &k2.to_be_bytes(), &v2)?;
                                        Ok(())
                                    })
                                    .unwrap();
                                }
                            }
                        })
                    })
                    .collect();
                let readers: Vec<_> = (0..4u32)
                    .map(|r| {
                        let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                        std::thread::spawn(move || {
                            let mut reads = 0u64;
                            while !stop.load(Ordering::Relaxed) {
                                match r % 4 {
                                    0 => {
                                        for k in 0..8u32 {
                                            let v = t.get(&k.to_be_bytes()).unwrap().unwrap();
                                            check(&k.to_be_bytes(), &v).unwrap();
                                            reads += 1;
                                        }
                                    }
                                    1 => {
                                        for x in t.range(Unbounded, Unbounded) {
                                            let (k, v) = x.unwrap();
                                            check(&k, &v).unwrap();
                                            reads += 1;
                                        }
                                    }
                                    2 => {
                                        let rt = db.begin_read();
                                        for k in 0..8u32 {
                                            match rt.get(&t, &k.to_be_bytes()) {
                                                Ok(v) => check(&k.to_be_bytes(), &v.unwrap()).unwrap(),
                                                Err(e) => panic!("{e}"),
                                            }
                                            reads += 1;
                                        }
                                    }
                                    _ => {
                                        for x in t.range_rev(Unbounded, Unbounded) {
                                            let (k, v) = x.unwrap();
                                            check(&k, &v).unwrap();
                                            reads += 1;
                                        }
                                    }
                                }
                            }
                            reads
                        })
                    })
                    .collect();
                for w in writers {
                    w.join().unwrap();
                }
                stop.store(true, Ordering::Relaxed);
                let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
                eprintln!("{mode:?} {logging}: max {max}, {reads} reads");
                t.verify().unwrap();
                drop(t);
                Arc::try_unwrap(db).unwrap().close().unwrap();
            });
        }
    }
}

/// A tree of large values dropped through a pool of 16 frames, then the space reused; and a
/// transaction that deletes and re-inserts every key (large values too), then rolls back.
#[test]
fn probe_large_value_tree_drop_and_delete_reinsert_rollback() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            watchdog(300, "large drop", move || {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("db.swz");
                let db = small(mode, logging, 16).log_segment_bytes(16 << 10).create(&path).unwrap();
                let what = format!("{mode:?} logging {logging}");
                let mut sizes = Vec::new();
                for round in 0..3 {
                    let t = db.create_tree("t").unwrap();
                    let max = t.max_value_len();
                    let mut oracle = BTreeMap::new();
                    for i in 0..400u32 {
                        let v = vec![(i % 251) as u8; if i % 3 == 0 { max } else { 50 }];
                        t.insert(&i.to_be_bytes(), &v).unwrap_or_else(|e| panic!("{what}: insert {i}: {e}"));
                        oracle.insert(i.to_be_bytes().to_vec(), v);
                    }
                    let mut tx = db.begin();
                    for i in 0..400u32 {
                        tx.delete(&t, &i.to_be_bytes()).unwrap_or_else(|e| panic!("{what}: delete {i}: {e}"));
                    }
                    for i in 0..400u32 {
                        let v = vec![9u8; if i % 2 == 0 { max } else { 10 }];
                        tx.insert(&t, &i.to_be_bytes(), &v)
                            .unwrap_or_else(|e| panic!("{what}: reinsert {i}: {e}"));
                    }
                    tx.abort().unwrap_or_else(|e| panic!("{what}: abort: {e}"));
                    let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                    assert!(got == oracle, "{what}: round {round} after rollback");
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(db.drop_tree("t").unwrap());
                    db.checkpoint().unwrap();
                    sizes.push(std::fs::metadata(&path).unwrap().len());
                }
                eprintln!("{what}: file sizes {sizes:?}");
                assert!(sizes[2] <= sizes[0] + (64 << 10), "{what}: freed pages not reused: {sizes:?}");
                db.close().unwrap();
            });
        }
    }
}

/// Oversize and odd bounds and keys in reads: typed errors or empty answers, no panic.
#[test]
fn probe_odd_bounds_and_oversize_read_keys() {
    use std::ops::Bound::{Excluded, Included};
    for mode in MODES {
        for logging in [true, false] {
            watchdog(300, "odd bounds", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = small(mode, logging, 32).create(dir.path().join("db.swz")).unwrap();
                let t = db.create_tree("t").unwrap();
                for i in 0..1000u32 {
                    t.insert(&i.to_be_bytes(), &[1; 30]).unwrap();
                }
                let huge = vec![0xFFu8; 1 << 20];
                let mid = 500u32.to_be_bytes();
                let what = format!("{mode:?} {logging}");
                eprintln!("{what}: get huge {:?}", t.get(&huge).map(|v| v.map(|v| v.len())));
                let c = |it: &mut dyn Iterator<Item = Result<swizzledb::KeyValue, swizzledb::TreeError>>| {
                    it.map(|r| r.map(|_| ()).map_err(|e| e.to_string()))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|v| v.len())
                };
                eprintln!("{what}: huge..: {:?}", c(&mut t.range(Included(&huge), Unbounded)));
                eprintln!("{what}: ..huge: {:?}", c(&mut t.range(Unbounded, Excluded(&huge))));
                eprintln!("{what}: rev ..huge: {:?}", c(&mut t.range_rev(Unbounded, Included(&huge))));
                eprintln!(
                    "{what}: reversed: {:?}",
                    c(&mut t.range(Included(&mid), Excluded(&0u32.to_be_bytes())))
                );
                eprintln!("{what}: x..x excl: {:?}", c(&mut t.range(Excluded(&mid), Excluded(&mid))));
                eprintln!("{what}: prefix huge: {:?}", c(&mut t.scan_prefix(&huge)));
                eprintln!("{what}: prefix ff: {:?}", c(&mut t.scan_prefix(&[0xFF])));
                let mut tx = db.begin();
                eprintln!("{what}: tx get huge {:?}", tx.get(&t, &huge).map(|v| v.map(|v| v.len())));
                eprintln!("{what}: tx range huge.. {:?}", tx.range(&t, Included(&huge), Unbounded).count());
                eprintln!("{what}: tx range ..huge {:?}", tx.range(&t, Unbounded, Included(&huge)).count());
                eprintln!(
                    "{what}: tx reversed {:?}",
                    tx.range(&t, Included(&mid), Excluded(&0u32.to_be_bytes())).count()
                );
                eprintln!("{what}: tx delete huge {:?}", tx.delete(&t, &huge));
                eprintln!(
                    "{what}: tx cas huge {:?}",
                    tx.compare_and_swap(&t, &huge, None, None).map(|r| r.is_ok())
                );
                eprintln!("{what}: tx update_with huge {:?}", tx.update_with(&t, &huge, |_, _| ()));
                tx.put(&t, &mid, b"x").unwrap();
                tx.commit().unwrap();
                let rt = db.begin_read();
                eprintln!("{what}: rt get huge {:?}", rt.get(&t, &huge).map(|v| v.map(|v| v.len())));
                eprintln!(
                    "{what}: rt range reversed {:?}",
                    rt.range(&t, Included(&mid), Excluded(&0u32.to_be_bytes())).count()
                );
                eprintln!("{what}: delete huge {:?}", t.delete(&huge));
                eprintln!("{what}: cas huge {:?}", t.compare_and_swap(&huge, None, None).map(|r| r.is_ok()));
                drop(rt);
                t.verify().unwrap();
                db.close().unwrap();
            });
        }
    }
}

/// 64 threads on 16 frames over a tree of several levels, scans included: waits or typed
/// pool errors, never a wrong result or a hang.
#[test]
fn probe_deep_tree_many_threads_tiny_pool() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logging in [true, false] {
            watchdog(300, "deep tree tiny pool", move || {
                let dir = tempfile::tempdir().unwrap();
                let db = Arc::new(
                    small(mode, logging, 16)
                        .commit_mode(swizzledb::CommitMode::Async)
                        .create(dir.path().join("db.swz"))
                        .unwrap(),
                );
                let t = db.create_tree("t").unwrap();
                // Values encode their key: reads check them.
                let val = |k: u32, n: u32| {
                    let mut v = k.to_be_bytes().to_vec();
                    v.extend(std::iter::repeat_n((n % 251) as u8, 150 + (n as usize % 100)));
                    v
                };
                db.transact(|tx| {
                    (0..12_000u32).try_for_each(|k| tx.put(&t, &k.to_be_bytes(), &val(k, 0)).map(|_| ()))
                })
                .unwrap();
                eprintln!("{mode:?} {logging}: shape {:?}", t.verify().unwrap());
                let errs = Arc::new(AtomicU64::new(0));
                let hs: Vec<_> = (0..64u32)
                    .map(|th| {
                        let (db, t, errs) = (db.clone(), t.clone(), errs.clone());
                        std::thread::spawn(move || {
                            let mut x = u64::from(th) * 2654435761 + 1;
                            for n in 0..150u32 {
                                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                                let k = ((x >> 33) % 12_000) as u32;
                                let r: Result<(), String> = match n % 5 {
                                    0 => t
                                        .upsert(&k.to_be_bytes(), &val(k, n))
                                        .map(|_| ())
                                        .map_err(|e| e.to_string()),
                                    1 => t.get(&k.to_be_bytes()).map_err(|e| e.to_string()).map(|v| {
                                        let v = v.expect("a key none deletes");
                                        assert_eq!(v[..4], k.to_be_bytes(), "wrong value");
                                    }),
                                    2 => db
                                        .transact(|tx| {
                                            for j in 0..4 {
                                                let kk = (k + j * 977) % 12_000;
                                                tx.put(&t, &kk.to_be_bytes(), &val(kk, n))?;
                                            }
                                            Ok(())
                                        })
                                        .map_err(|e| e.to_string()),
                                    3 => {
                                        let mut c = 0;
                                        let mut res = Ok(());
                                        for r in t
                                            .range(std::ops::Bound::Included(&k.to_be_bytes()[..]), Unbounded)
                                            .take(300)
                                        {
                                            match r {
                                                Ok((kk, v)) => {
                                                    assert_eq!(v[..4], kk[..], "wrong value in scan");
                                                    c += 1;
                                                }
                                                Err(e) => {
                                                    res = Err(e.to_string());
                                                    break;
                                                }
                                            }
                                        }
                                        if res.is_ok() {
                                            assert_eq!(c, 300.min(12_000 - k as usize));
                                        }
                                        res
                                    }
                                    _ => {
                                        let rt = db.begin_read();
                                        rt.get(&t, &k.to_be_bytes())
                                            .map_err(|e| e.to_string())
                                            .map(|v| assert_eq!(v.unwrap()[..4], k.to_be_bytes()))
                                    }
                                };
                                if let Err(e) = r {
                                    if errs.fetch_add(1, Ordering::Relaxed) < 5 {
                                        eprintln!("thread {th} op {n}: {e}");
                                    }
                                    assert!(e.contains("exhausted"), "untyped or unexpected: {e}");
                                }
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
                eprintln!("{mode:?} {logging}: {} pool errors", errs.load(Ordering::Relaxed));
                t.verify().unwrap();
                assert_eq!(t.len().unwrap(), 12_000);
                drop(t);
                Arc::try_unwrap(db).unwrap().close().unwrap();
            });
        }
    }
}

/// Record locks off: a huge transaction's commit, abort and drop, and a scan and read
/// transaction held across them, on a small pool.
#[test]
fn probe_locking_off_huge_transaction() {
    for mode in MODES {
        for logging in [true, false] {
            for end in ["commit", "abort", "drop"] {
                watchdog(300, "locking off", move || {
                    let dir = tempfile::tempdir().unwrap();
                    let db = small(mode, logging, 32)
                        .log_segment_bytes(16 << 10)
                        .lab(|l| l.locking(false))
                        .create(dir.path().join("db.swz"))
                        .unwrap();
                    let t = db.create_tree("t").unwrap();
                    let mut oracle = BTreeMap::new();
                    for i in 0..2000u32 {
                        t.insert(&i.to_be_bytes(), &[1; 40]).unwrap();
                        oracle.insert(i.to_be_bytes().to_vec(), vec![1u8; 40]);
                    }
                    let mut scan = t.range(Unbounded, Unbounded);
                    scan.next().unwrap().unwrap();
                    let rt = db.begin_read();
                    let mut tx = db.begin();
                    let mut expect = oracle.clone();
                    for i in 0..20_000u32 {
                        if i < 2000 && i % 2 == 1 {
                            tx.delete(&t, &i.to_be_bytes()).unwrap();
                            expect.remove(&i.to_be_bytes()[..]);
                        } else {
                            let v = if i % 101 == 0 { vec![5u8; 2500] } else { vec![2u8; 30] };
                            tx.put(&t, &i.to_be_bytes(), &v).unwrap();
                            expect.insert(i.to_be_bytes().to_vec(), v);
                        }
                    }
                    let what = format!("{mode:?} logging {logging} {end}");
                    let n = scan.by_ref().inspect(|r| assert!(r.is_ok())).count();
                    assert!(n > 0, "{what}");
                    let _ = rt.get(&t, b"x").unwrap();
                    match end {
                        "commit" => {
                            tx.commit().unwrap();
                            oracle = expect;
                        }
                        "abort" => tx.abort().unwrap(),
                        _ => drop(tx),
                    }
                    let got: BTreeMap<_, _> = t.range(Unbounded, Unbounded).map(|r| r.unwrap()).collect();
                    assert!(got == oracle, "{what}: {} records, expected {}", got.len(), oracle.len());
                    t.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    drop(rt);
                    db.close().unwrap();
                });
            }
        }
    }
}

/// More snapshots than slots (the overflow list) ended for memory: every read is the
/// snapshot's or `SnapshotTooOld`, and the versions go once they end.
#[test]
fn probe_overflowed_snapshots_ended_for_memory() {
    use std::sync::{Arc, Barrier};
    for logging in [true, false] {
        watchdog(300, "overflowed snapshots", move || {
            let dir = tempfile::tempdir().unwrap();
            let db = Arc::new(
                small(PoolMode::Swizzling, logging, 64)
                    .version_memory(64 << 10)
                    .commit_mode(swizzledb::CommitMode::Async)
                    .create(dir.path().join("db.swz"))
                    .unwrap(),
            );
            let t = db.create_tree("t").unwrap();
            for i in 0..100u32 {
                t.insert(&i.to_be_bytes(), &0u64.to_be_bytes()).unwrap();
            }
            let n = 300;
            let (b, b2) = (Arc::new(Barrier::new(n + 1)), Arc::new(Barrier::new(n + 1)));
            let readers: Vec<_> = (0..n)
                .map(|r| {
                    let (db, t, b, b2) = (db.clone(), t.clone(), b.clone(), b2.clone());
                    std::thread::spawn(move || {
                        let sum = |rt: &swizzledb::ReadTransaction<'_>| -> Result<u64, String> {
                            rt.range(&t, Unbounded, Unbounded)
                                .map(|x| {
                                    x.map(|(_, v)| u64::from_be_bytes(v.try_into().unwrap()))
                                        .map_err(|e| e.to_string())
                                })
                                .sum()
                        };
                        // Half wait before taking theirs: snapshots at different times.
                        if r % 2 == 1 {
                            b.wait();
                        }
                        let rt = db.begin_read();
                        // A snapshot taken while the writer commits may end during its first scan.
                        let first = sum(&rt);
                        if r % 2 == 0 {
                            b.wait();
                        }
                        b2.wait();
                        let s0 = match first {
                            Ok(s) => s,
                            Err(e) => {
                                assert!(e.contains("too old"), "reader {r}: {e}");
                                return;
                            }
                        };
                        match sum(&rt) {
                            Ok(s1) => assert_eq!(s0, s1, "reader {r}: the snapshot moved"),
                            Err(e) => assert!(e.contains("too old"), "reader {r}: {e}"),
                        }
                        assert_eq!(s0 % 100, 0, "reader {r}: a torn sum");
                    })
                })
                .collect();
            b.wait();
            for round in 1..200u64 {
                db.transact(|tx| {
                    (0..100u32)
                        .try_for_each(|i| tx.put(&t, &i.to_be_bytes(), &round.to_be_bytes()).map(|_| ()))
                })
                .unwrap();
            }
            let mid = db.version_stats().unwrap();
            b2.wait();
            for r in readers {
                r.join().unwrap();
            }
            let end = db.version_stats().unwrap();
            eprintln!("logging {logging}: {mid:?} then {end:?}");
            assert!(mid.bytes <= mid.limit + mid.limit / 4, "over the bound: {mid:?}");
            assert_eq!(end.bytes, 0);
            drop(t);
            Arc::try_unwrap(db).unwrap().close().unwrap();
        });
    }
}

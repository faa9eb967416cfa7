//! Many threads on one tree with a tiny pool: splits, adoptions, merges, evictions and
//! un-swizzling all race. Afterwards the contents must match each thread's oracle and the tree
//! must pass the full structural check (T1–T4, B3, B6), also after flush and reopen (B8).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Builder, CommitMode, Database, PoolMode, Tree};

const THREADS: u64 = 4;

fn pool_for(mode: PoolMode) -> usize {
    // 48 frames of 4 KiB: far below the tree's size, so eviction never stops.
    if mode == PoolMode::MainMemory {
        256 << 20
    } else {
        48 * 4096
    }
}

/// A database of 4 KiB pages in `pool_for(mode)`, with asynchronous commit: the races under
/// test are the tree's and the pool's, not one fsync per put (group commit has its own tests).
fn stress_builder(mode: PoolMode) -> Builder {
    Database::builder().mode(mode).page_size(4096).pool_bytes(pool_for(mode)).commit_mode(CommitMode::Async)
}

fn key(thread: u64, i: u64) -> Vec<u8> {
    // Interleave threads in key order so they share leaves and parents.
    let mut k = (i * THREADS + thread).to_be_bytes().to_vec();
    k.extend(std::iter::repeat_n(b'k', (i % 5) as usize * 3));
    k
}

fn value(k: &[u8], version: u32) -> Vec<u8> {
    let mut v = k.to_vec();
    v.extend_from_slice(&version.to_le_bytes());
    v.resize(40 + (version as usize % 4) * 30, 0xAB);
    v
}

/// Fails the test instead of hanging if the workers deadlock.
fn with_watchdog(what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(240)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no progress in 240 s (deadlock?)"),
    }
}

/// Each thread owns its keys (interleaved with the others'), so its own oracle is exact.
fn disjoint_workers(tree: &Tree, ops: u64) -> Vec<BTreeMap<Vec<u8>, Vec<u8>>> {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let tree = tree.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                let mut oracle = BTreeMap::new();
                for n in 0..ops {
                    let k = key(t, rng.gen_range(0..5000));
                    match rng.gen_range(0..10) {
                        0..=4 => {
                            let v = value(&k, n as u32);
                            let existed = tree.upsert(&k, &v).unwrap();
                            assert_eq!(existed, oracle.insert(k, v).is_some());
                        }
                        5..=7 => assert_eq!(tree.delete(&k).unwrap(), oracle.remove(&k).is_some()),
                        _ => assert_eq!(tree.get(&k).unwrap(), oracle.get(&k).cloned()),
                    }
                }
                oracle
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn check_all(tree: &Tree, db: &Database, want: &BTreeMap<Vec<u8>, Vec<u8>>, mode: PoolMode) {
    let shape = tree.verify().unwrap_or_else(|e| panic!("{mode}: {e}"));
    assert_eq!(shape.records, want.len(), "{mode}");
    let got: BTreeMap<_, _> = tree.range(Bound::Unbounded, Bound::Unbounded).map(|r| r.unwrap()).collect();
    assert!(got == *want, "{mode}: scan differs from the oracle");
    db.pool().check_invariants().unwrap_or_else(|e| panic!("{mode}: {e}"));
}

#[test]
fn stress_disjoint_keys_all_modes() {
    for mode in PoolMode::ALL {
        with_watchdog(mode.name(), move || {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("stress.swz");
            let builder = stress_builder(mode);
            let db = builder.clone().create(&path).unwrap();
            let tree = db.create_tree("t").unwrap();
            let oracles = disjoint_workers(&tree, 20_000);
            let want: BTreeMap<_, _> = oracles.into_iter().flatten().collect();
            check_all(&tree, &db, &want, mode);
            assert!(tree.verify().unwrap().height >= 3, "{mode}: the tree must reach three levels");
            let stats = db.stats();
            if mode != PoolMode::MainMemory {
                assert!(stats.evictions > 0, "{mode}: the pool was meant to be too small");
            }
            if mode == PoolMode::Swizzling {
                assert!(stats.unswizzles > 0, "{mode}: eviction must un-swizzle");
            }
            if mode != PoolMode::MainMemory {
                // B29: dirty victims were left by eviction batches and written after them.
                assert!(stats.deferred_writes > 0 && stats.victim_writes > 0, "{mode}: {stats:?}");
            }
            // T20: the swizzling modes descended optimistically through these races.
            assert_eq!(stats.optimistic_reads > 0, mode.swizzles(), "{mode}: {stats:?}");
            db.close().unwrap();
            let db = builder.open(&path).unwrap();
            let tree = db.tree("t").unwrap();
            check_all(&tree, &db, &want, mode);
        });
    }
}

/// T20 switched off: the same races with lock coupling only, and no optimistic read counted.
#[test]
fn stress_disjoint_keys_with_latch_coupling_only() {
    for mode in [PoolMode::Swizzling, PoolMode::MainMemory] {
        with_watchdog(mode.name(), move || {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::builder()
                .mode(mode)
                .page_size(4096)
                .pool_bytes(pool_for(mode))
                .lab(|l| l.optimistic_reads(false))
                .create(dir.path().join("coupling.swz"))
                .unwrap();
            let tree = db.create_tree("t").unwrap();
            let want: BTreeMap<_, _> = disjoint_workers(&tree, 5_000).into_iter().flatten().collect();
            check_all(&tree, &db, &want, mode);
            let stats = db.stats();
            assert_eq!((stats.optimistic_reads, stats.optimistic_restarts), (0, 0), "{mode}");
            assert!(stats.fixes > 0);
        });
    }
}

/// All threads on the same small key range: values carry their key, so every read can be checked
/// for torn or misplaced records; at the end each key holds the last value some thread wrote.
#[test]
fn stress_overlapping_keys_all_modes() {
    for mode in PoolMode::ALL {
        with_watchdog(mode.name(), move || {
            let dir = tempfile::tempdir().unwrap();
            let db = Arc::new(stress_builder(mode).create(dir.path().join("overlap.swz")).unwrap());
            let tree = db.create_tree("t").unwrap();
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let tree = tree.clone();
                    std::thread::spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(100 + t);
                        for n in 0..6000u32 {
                            let k = key(0, rng.gen_range(0..800));
                            match rng.gen_range(0..10) {
                                0..=4 => {
                                    tree.upsert(&k, &value(&k, n)).unwrap();
                                }
                                5..=6 => {
                                    tree.delete(&k).unwrap();
                                }
                                7 => {
                                    // Forward and backward scans: ordered, and every value
                                    // under its own key.
                                    let from = k.clone();
                                    let mut prev: Option<Vec<u8>> = None;
                                    for r in tree.range(Bound::Included(&from), Bound::Unbounded).take(20) {
                                        let (rk, rv) = r.unwrap();
                                        assert!(rk >= from && prev.as_ref().is_none_or(|p| *p < rk));
                                        assert_eq!(&rv[..rk.len()], &rk[..], "value under the wrong key");
                                        prev = Some(rk);
                                    }
                                    let mut prev: Option<Vec<u8>> = None;
                                    for r in tree.range_rev(Bound::Unbounded, Bound::Included(&from)).take(20)
                                    {
                                        let (rk, rv) = r.unwrap();
                                        assert!(rk <= from && prev.as_ref().is_none_or(|p| *p > rk));
                                        assert_eq!(&rv[..rk.len()], &rk[..], "value under the wrong key");
                                        prev = Some(rk);
                                    }
                                }
                                _ => {
                                    if let Some(v) = tree.get(&k).unwrap() {
                                        assert_eq!(&v[..k.len()], &k[..], "value stored under the wrong key");
                                    }
                                }
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let shape = tree.verify().unwrap_or_else(|e| panic!("{mode}: {e}"));
            let scanned: Vec<_> =
                tree.range(Bound::Unbounded, Bound::Unbounded).map(|r| r.unwrap()).collect();
            assert_eq!(scanned.len(), shape.records);
            for (k, v) in &scanned {
                assert_eq!(&v[..k.len()], &k[..]);
                assert_eq!(tree.get(k).unwrap().as_ref(), Some(v));
            }
            db.pool().check_invariants().unwrap_or_else(|e| panic!("{mode}: {e}"));
        });
    }
}

/// B3, B10 (the page-table hit race): 8 threads insert and delete in a pool of 16 frames, so frames
/// found in the page table are often evicted and reused; a finder holding a parent must not
/// block on a frame reused for an ancestor whose holder waits for that parent. A watchdog fails
/// the test if the threads stop making progress. (A stress test: it did not reproduce the
/// deadlock on the blocking code in three runs of ten times as many operations.)
#[test]
fn b10_a_sixteen_frame_eight_thread_stress_never_deadlocks() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .logging(false)
            .mode(mode)
            .page_size(4096)
            .pool_bytes(16 * 4096)
            .create(dir.path().join("s.swz"))
            .unwrap();
        let tree = db.create_tree("t").unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        let workers: Vec<_> = (0..8u64)
            .map(|t| {
                let (tree, done) = (tree.clone(), done_tx.clone());
                std::thread::spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t);
                    for i in 0..4000u64 {
                        let k = (rng.gen_range(0..3000u64) * 8 + t).to_be_bytes();
                        let r = if i % 3 == 2 {
                            tree.delete(&k).map(|_| ())
                        } else {
                            tree.upsert(&k, &[7; 90]).map(|_| ())
                        };
                        // A full pool is an error, not a hang (B13): count it as progress.
                        if let Err(e) = r {
                            assert!(e.to_string().contains("pool"), "{e}");
                        }
                    }
                    done.send(()).unwrap();
                })
            })
            .collect();
        drop(done_tx);
        for _ in 0..8 {
            done_rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| {
                panic!("{mode:?}: the threads stopped making progress (latch deadlock?)")
            });
        }
        for w in workers {
            w.join().unwrap();
        }
        tree.verify().unwrap();
        drop(tree);
        db.close().unwrap();
    }
}

/// B29, B30, B31: sixteen threads on a pool of 32 frames, every one of them changing pages, so
/// that eviction batches keep leaving dirty victims that the evicting threads write after
/// releasing the eviction lock, while others take frames from the partitioned free lists; with
/// and without the background evictor racing them for the same frames (and, with it, reads
/// that latch no leaf, btree T21, racing the writers and the eviction). Each thread
/// checks its own keys against its oracle as it goes; afterwards the tree passes the
/// structural check and holds exactly the union of the oracles, also after a reopen.
#[test]
fn b29_b31_sixteen_threads_in_a_32_frame_pool_lose_nothing() {
    const N: u64 = 16;
    for (mode, evictor) in
        [PoolMode::Traditional, PoolMode::Swizzling].into_iter().flat_map(|m| [(m, false), (m, true)])
    {
        with_watchdog(mode.name(), move || {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("b29.swz");
            let builder = Database::builder()
                .mode(mode)
                .page_size(4096)
                .pool_bytes(32 * 4096)
                .commit_mode(CommitMode::Async)
                .lab(|l| l.background_eviction(evictor))
                .lab(|l| l.optimistic_leaf_reads(evictor));
            let db = builder.clone().create(&path).unwrap();
            let tree = db.create_tree("t").unwrap();
            let handles: Vec<_> = (0..N)
                .map(|t| {
                    let tree = tree.clone();
                    std::thread::spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(100 + t);
                        let mut oracle = BTreeMap::new();
                        for n in 0..3_000u32 {
                            let mut k = (rng.gen_range(0..2_000u64) * N + t).to_be_bytes().to_vec();
                            k.push(b'k');
                            if rng.gen_range(0..4) == 0 {
                                assert_eq!(tree.get(&k).unwrap(), oracle.get(&k).cloned(), "{t}");
                            } else {
                                let v = value(&k, n);
                                tree.upsert(&k, &v).unwrap();
                                oracle.insert(k, v);
                            }
                        }
                        oracle
                    })
                })
                .collect();
            let want: BTreeMap<_, _> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
            check_all(&tree, &db, &want, mode);
            let stats = db.stats();
            assert!(stats.victim_writes > 0, "{mode}: no dirty victim written after its batch: {stats:?}");
            // B31: with the evictor, it runs; without, nothing of it does.
            assert_eq!(stats.evictor_rounds > 0, evictor, "{mode}, evictor {evictor}: {stats:?}");
            db.close().unwrap();
            let db = builder.open(&path).unwrap();
            let tree = db.tree("t").unwrap();
            check_all(&tree, &db, &want, mode);
        });
    }
}

/// T4 with T8 and T18: leaves emptied from the right merge into their left neighbour or absorb
/// their right one, while other threads scan both ways. Writers each insert a run of keys in
/// ascending order and delete it in descending order, again and again, between stable keys
/// that never change; scanners meet leaves being merged in both directions and must return
/// every stable key exactly once, in order. Afterwards the emptied runs have given their leaves
/// back and the tree passes its structural check.
#[test]
fn t4_runs_deleted_from_the_right_merge_while_scans_run_both_ways() {
    const STABLE: u64 = 400;
    for mode in PoolMode::ALL {
        with_watchdog(mode.name(), move || {
            let dir = tempfile::tempdir().unwrap();
            let db = Arc::new(stress_builder(mode).create(dir.path().join("runs.swz")).unwrap());
            let tree = db.create_tree("t").unwrap();
            let stable = |i: u64| format!("{i:04}").into_bytes();
            for i in 0..STABLE {
                tree.upsert(&stable(i), b"stable").unwrap();
            }
            let kept = tree.verify().unwrap().leaves;
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writers: Vec<_> = (0..2u64)
                .map(|w| {
                    let tree = tree.clone();
                    std::thread::spawn(move || {
                        for round in 0..6u64 {
                            // A run of 1,500 keys after one stable key: many leaves in one gap.
                            let at = (w * 200 + round * 31) % STABLE;
                            let run = |j: u64| format!("{at:04}-{w}-{j:05}").into_bytes();
                            for j in 0..1_500 {
                                tree.upsert(&run(j), &[7; 40]).unwrap();
                            }
                            for j in (0..1_500).rev() {
                                assert!(tree.delete(&run(j)).unwrap());
                            }
                        }
                    })
                })
                .collect();
            let scanners: Vec<_> = [false, true]
                .into_iter()
                .map(|reverse| {
                    let (tree, done) = (tree.clone(), Arc::clone(&done));
                    std::thread::spawn(move || {
                        let mut scans = 0;
                        while !done.load(std::sync::atomic::Ordering::Relaxed) || scans == 0 {
                            let all = tree.range(Bound::Unbounded, Bound::Unbounded);
                            let keys: Vec<Vec<u8>> = if reverse {
                                all.rev().map(|r| r.unwrap().0).collect()
                            } else {
                                all.map(|r| r.unwrap().0).collect()
                            };
                            let stable: Vec<&Vec<u8>> = keys.iter().filter(|k| k.len() == 4).collect();
                            assert_eq!(stable.len() as u64, STABLE, "reverse {reverse}: stable keys seen");
                            assert!(
                                keys.windows(2).all(|p| if reverse { p[0] > p[1] } else { p[0] < p[1] }),
                                "reverse {reverse}: out of order or twice"
                            );
                            scans += 1;
                        }
                    })
                })
                .collect();
            for h in writers {
                h.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            for h in scanners {
                h.join().unwrap();
            }
            let shape = tree.verify().unwrap_or_else(|e| panic!("{mode}: {e}"));
            assert_eq!(shape.records as u64, STABLE);
            assert!(shape.leaves <= kept + 4, "{mode}: {} leaves left, {kept} before the runs", shape.leaves);
            db.pool().check_invariants().unwrap_or_else(|e| panic!("{mode}: {e}"));
        });
    }
}

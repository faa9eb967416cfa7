//! Every replacement policy, plain and structure-aware, and the BP-Wrapper'd LRU and 2Q, drive a
//! live pool that must evict: the tree matches a `BTreeMap` oracle, the pool's invariants hold
//! (B16's child counts included), and a structure-aware policy never proposes a page with
//! swizzled children (R8).

use std::collections::BTreeMap;
use swizzledb::lab::DatabaseExt as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use swizzledb::{Database, PolicySpec, PoolMode};

/// 24 frames of 4 KiB against ~5,000 records of 40 bytes: three levels, constant eviction.
fn run(spec: PolicySpec, mode: PoolMode) -> swizzledb::Stats {
    run_with(spec, mode, false)
}

/// `run`, with or without the background evictor (buffer README B31). Without, only the test's
/// thread evicts, so R3's "refused at most once" is exact: with it, a batch of the evictor's may
/// find every unblocked frame latched or still queued (BP-Wrapper) and propose a blocked root
/// again, as R4 allows.
fn run_with(spec: PolicySpec, mode: PoolMode, evictor: bool) -> swizzledb::Stats {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .lab(|l| l.background_eviction(evictor))
        .logging(false)
        .mode(mode)
        .page_size(4096)
        .pool_bytes(24 * 4096)
        .policy(spec)
        .lab(|l| l.seed(7))
        .create(dir.path().join("p.swz"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(11);
    for step in 0..12_000u32 {
        let key = rng.gen_range(0..5_000u32).to_be_bytes();
        match rng.gen_range(0..10) {
            0 => assert_eq!(t.delete(&key).unwrap(), oracle.remove(&key).is_some(), "{spec} {mode}"),
            1..=4 => {
                let value = [step as u8; 40];
                t.upsert(&key, &value).unwrap();
                oracle.insert(key, value.to_vec());
            }
            _ => assert_eq!(t.get(&key).unwrap(), oracle.get(&key).cloned(), "{spec} {mode}"),
        }
    }
    let shape = t.verify().unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
    assert_eq!(shape.records as usize, oracle.len());
    db.pool().check_invariants().unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
    for (k, v) in &oracle {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v), "{spec} {mode}");
    }
    let stats = db.stats();
    assert!(stats.evictions > 100, "{spec} {mode}: only {} evictions", stats.evictions);
    stats
}

#[test]
fn r8_every_policy_plain_and_structure_aware_keeps_the_tree_intact() {
    for kind in PolicySpec::all() {
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let plain = run(kind, mode);
            let leaf = run(PolicySpec { leaf_only: true, ..kind }, mode);
            // The tree stays intact with the evictor racing the test's thread, too.
            run_with(kind, mode, true);
            run_with(PolicySpec { leaf_only: true, ..kind }, mode, true);
            // R3: the one tree root is refused at most once, then blocked.
            assert!(plain.rejected_root <= 1 && leaf.rejected_root <= 1, "{kind} {mode}");
            if mode == PoolMode::Swizzling {
                // Single-threaded, a leaf-only policy is told of every branch before it could
                // propose one (R8), so the pool never has to refuse one.
                assert_eq!(leaf.rejected_swizzled_children, 0, "leaf-{kind}: {leaf:?}");
            } else {
                assert_eq!(plain.rejected_swizzled_children + leaf.rejected_swizzled_children, 0);
            }
        }
    }
}

/// The BP-Wrapper'd policies whose hits lock (`bpw-lru`, `bpw-2q`) and the structure-aware
/// `leaf-bpw-2q` drive the live pool in both modes: the tree stays intact, the pool's invariants
/// hold, and the root is refused at most once (R3), as for the unwrapped policies.
#[test]
fn r1_bp_wrapped_policies_keep_the_tree_intact() {
    for name in ["bpw-lru", "bpw-2q", "leaf-bpw-2q"] {
        let spec: PolicySpec = name.parse().unwrap();
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let stats = run(spec, mode);
            assert!(stats.rejected_root <= 1, "{spec} {mode}: {stats:?}");
            run_with(spec, mode, true);
            if spec.leaf_only && mode == PoolMode::Swizzling {
                assert_eq!(stats.rejected_swizzled_children, 0, "{spec}: {stats:?}");
            }
        }
    }
}

/// BP-Wrapper's S and T reach the pool (`LabOptions::bp_queue`): a batch of one takes the lock for
/// every access, a batch of 64 far less often, and T above S is refused at `create`, naming both.
#[test]
fn bp_queue_sets_the_batch_and_refuses_a_threshold_above_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let spec: PolicySpec = "bpw-batch-lru".parse().unwrap();
    let open = |name: &str, s: usize, t: usize| {
        Database::builder()
            .logging(false)
            .page_size(4096)
            .pool_bytes(64 * 4096)
            .policy(spec)
            .lab(|l| l.bp_queue(s, t))
            .create(dir.path().join(name))
    };
    match open("bad.swz", 8, 16) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("batch threshold 16") && msg.contains("queue size 8"), "{msg}");
        }
        Ok(_) => panic!("T = 16 above S = 8 was accepted"),
    }
    let mut per_access = Vec::new();
    for (name, b) in [("one.swz", 1), ("many.swz", 64)] {
        let db = open(name, b, b).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..2_000u32 {
            t.upsert(&i.to_be_bytes(), b"value").unwrap();
        }
        for i in 0..20_000u32 {
            assert!(t.get(&(i % 2_000).to_be_bytes()).unwrap().is_some());
        }
        let s = db.stats();
        per_access.push(s.policy_lock_acquisitions as f64 / s.policy_accesses as f64);
    }
    assert!(per_access[0] >= 0.9, "batch 1: {per_access:?}");
    assert!(per_access[1] < 0.1, "batch 64: {per_access:?}");
}

/// BP-Wrapper's drain (replacement README, "BP-Wrapper", step 6): a frame whose insert still
/// waits in the queue of another thread, alive but idle, is resident all the same, and an
/// eviction batch that finds nothing else to evict commits every queue to reach it. Seven
/// threads each read one key of a three-level tree and stay alive with their inserts queued
/// (fewer than T accesses each), holding 14 of the 16 frames; then one thread reads every key,
/// and needs an inner node and a leaf at once. Before the fix, the inner policy, knowing only
/// the root (blocked, R3) and the reader's own latched frames, proposed those until the batch's
/// budget was spent, the drain (which waited for the inner policy to propose nothing) never
/// ran, and every read failed with `PoolExhausted` after ten seconds of retries.
#[test]
fn bp_wrapper_drains_the_queues_of_idle_threads_when_nothing_else_is_evictable() {
    use std::sync::Barrier;

    const READERS: usize = 7;
    let key = |i: u32| format!("{i:06}{}", "k".repeat(194)).into_bytes();
    for name in ["bpw-lru", "bpw-2q", "bpw-batch-lru", "leaf-bpw-2q"] {
        let spec: PolicySpec = name.parse().unwrap();
        for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("q.swz");
            let builder = Database::builder()
                .logging(false)
                .mode(mode)
                .page_size(4096)
                .pool_bytes(16 * 4096)
                .policy(spec)
                .lab(|l| l.background_eviction(false));
            let db = builder.clone().create(&path).unwrap();
            let t = db.create_tree("t").unwrap();
            // 200-byte keys: about 18 per inner node, so 3,000 records of ~400 bytes make
            // three levels (root, ~17 inner nodes, ~300 leaves).
            let n = 3_000u32;
            for i in 0..n {
                t.upsert(&key(i), &[i as u8; 200]).unwrap();
            }
            assert!(t.verify().unwrap().height >= 3, "{spec} {mode}: the tree is too flat");
            drop(t);
            db.close().unwrap();
            let db = builder.open(&path).unwrap();
            let t = db.tree("t").unwrap();
            let loaded = Barrier::new(READERS + 1);
            let done = Barrier::new(READERS + 1);
            std::thread::scope(|s| {
                for r in 0..READERS {
                    let (t, loaded, done) = (&t, &loaded, &done);
                    s.spawn(move || {
                        // One key in each seventh of the tree: an inner node and a leaf each.
                        let i = r as u32 * (n / READERS as u32);
                        let read = t.get(&key(i)).map(|v| v.as_deref() == Some(&[i as u8; 200][..]));
                        loaded.wait();
                        done.wait();
                        assert!(read.unwrap(), "{spec} {mode}: reader {r}");
                    });
                }
                loaded.wait();
                let started = std::time::Instant::now();
                // No panic before `done`: the readers wait for it.
                let result = (0..n).try_for_each(|i| match t.get(&key(i)) {
                    Ok(v) if v.as_deref() == Some(&[i as u8; 200][..]) => Ok(()),
                    Ok(v) => Err((i, format!("read {:?}", v.map(|v| v.len())))),
                    Err(e) => Err((i, e.to_string())),
                });
                done.wait();
                if let Err((i, e)) = result {
                    panic!("{spec} {mode}: reading key {i} failed after {:?}: {e}", started.elapsed());
                }
            });
            db.pool().check_invariants().unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
        }
    }
}

/// Every policy and buffer mode under concurrent transactions, logged or not, with crashes.
mod concurrent {
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use swizzledb::lab::DatabaseExt as _;
    use swizzledb::{Database, Error, PolicySpec, PoolMode, Tree};
    use swizzledb_io::{CrashMode, FaultFs, Vfs};

    type State = BTreeMap<Vec<u8>, Vec<u8>>;
    /// Keys per writer: with values of 20 to 420 bytes (and some of several KiB), far more
    /// leaves than a pool of 16 to 32 frames holds.
    const KEYS: u32 = 300;

    fn key(t: usize, i: u32) -> Vec<u8> {
        format!("w{t}-{i:04}").into_bytes()
    }

    /// Writer `t`'s keys: from `w{t}-` to `w{t}.`.
    fn own(t: usize) -> (Vec<u8>, Vec<u8>) {
        (format!("w{t}-").into_bytes(), format!("w{t}.").into_bytes())
    }

    fn part(all: &State, t: usize) -> State {
        let (lo, hi) = own(t);
        all.range(lo..hi).map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The value operation `n` of writer `t` writes to key `i`: one in eight is large (one or
    /// two overflow pages) where `big`.
    fn value(t: usize, n: u32, i: u32, big: bool, rng: &mut SmallRng) -> Vec<u8> {
        if big && rng.gen_ratio(1, 8) {
            return vec![(n ^ i) as u8; 1500 + (i as usize * 97) % 6000];
        }
        let mut v = format!("{t}:{n}:{i}:").into_bytes();
        v.resize(20 + (n as usize * 31 + i as usize * 17) % 400, b'a' + (n % 26) as u8);
        v
    }

    /// What a writer achieved: its keys after every acknowledged operation, and, if an
    /// operation failed after the crash, its keys had that one taken effect.
    #[derive(Default)]
    struct Writer {
        acked: State,
        in_doubt: Option<State>,
        commits: u32,
    }

    /// Writer `t`, on its own keys: transactions (`transact`), transactions rolled back on
    /// purpose, auto-committed upserts and deletes, and scans of its keys in a read transaction
    /// (which must match its acknowledged state). Before `stop` every operation must succeed;
    /// after it (the crash), the first failure ends the writer with that operation in doubt.
    fn write(
        db: &Database,
        tree: &Tree,
        t: usize,
        seed: u64,
        ops: u32,
        big: bool,
        stop: &AtomicBool,
    ) -> Writer {
        let mut rng = SmallRng::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut w = Writer::default();
        for n in 0..ops {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let mut local = w.acked.clone();
            let result: Result<(), Error> = match rng.gen_range(0..6) {
                0 | 1 => {
                    let writes: Vec<(u32, Option<Vec<u8>>)> = (0..rng.gen_range(1..=6))
                        .map(|_| {
                            let i = rng.gen_range(0..KEYS);
                            (i, rng.gen_bool(0.7).then(|| value(t, n, i, big, &mut rng)))
                        })
                        .collect();
                    let acked = &w.acked;
                    db.transact(|tx| {
                        local = acked.clone();
                        for (i, v) in &writes {
                            let k = key(t, *i);
                            let existed = match v {
                                Some(v) => (tx.put(tree, &k, v)?, local.insert(k, v.clone()).is_some()),
                                None => (tx.delete(tree, &k)?, local.remove(&k).is_some()),
                            };
                            assert_eq!(existed.0, existed.1, "writer {t}: existed");
                        }
                        Ok(())
                    })
                }
                2 => {
                    let mut tx = db.begin();
                    let mut r = Ok(());
                    for _ in 0..rng.gen_range(1..=4) {
                        let k = key(t, rng.gen_range(0..KEYS));
                        r = if rng.gen_bool(0.4) {
                            tx.delete(tree, &k).map(drop)
                        } else {
                            tx.put(tree, &k, &value(t, n, 0, big, &mut rng)).map(drop)
                        };
                        if r.is_err() {
                            break;
                        }
                    }
                    match (r, tx.abort()) {
                        // Neighbouring keys of two writers share a gap (next-key locking,
                        // LOCKS.md K15): wait-die may refuse one. Rolled back all the same.
                        (Ok(()) | Err(Error::Lock(_)), Ok(())) => Ok(()),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    }
                }
                3 | 4 => {
                    let k = key(t, rng.gen_range(0..KEYS));
                    if rng.gen_bool(0.3) {
                        let existed = local.remove(&k).is_some();
                        tree.delete(&k)
                            .map(|e| assert_eq!(e, existed, "writer {t}: existed"))
                            .map_err(Error::from)
                    } else {
                        let v = value(t, n, 0, big, &mut rng);
                        let existed = local.insert(k.clone(), v.clone()).is_some();
                        tree.upsert(&k, &v)
                            .map(|e| assert_eq!(e, existed, "writer {t}: existed"))
                            .map_err(Error::from)
                    }
                }
                _ => {
                    let (lo, hi) = own(t);
                    let read = db.begin_read();
                    let scan = read.range(tree, Bound::Included(&lo[..]), Bound::Excluded(&hi[..]));
                    scan.collect::<Result<State, _>>().map_err(Error::from).map(|got| {
                        if !stop.load(Ordering::SeqCst) {
                            assert!(
                                got == w.acked,
                                "writer {t}: a scan found {} keys of {}",
                                got.len(),
                                w.acked.len()
                            );
                        }
                    })
                }
            };
            match result {
                Ok(()) => {
                    w.acked = local;
                    w.commits += 1;
                }
                Err(_) if stop.load(Ordering::SeqCst) => {
                    w.in_doubt = Some(local);
                    break;
                }
                Err(e) => panic!("writer {t}, operation {n}: {e}"),
            }
        }
        w
    }

    #[derive(Clone, Copy, Debug)]
    struct Scenario {
        spec: PolicySpec,
        mode: PoolMode,
        logged: bool,
        evictor: bool,
        threads: usize,
        frames: usize,
        ops: u32,
        big: bool,
        /// When the file system loses power (logged only), with the writers running.
        crash_after: Option<Duration>,
    }

    /// Runs the writers, checks the tree, the pool and every writer's keys, then crashes (logged)
    /// or closes (unlogged), reopens with another policy and checks again.
    fn run(sc: Scenario, seed: u64) {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/p")).unwrap();
        let pool = if sc.mode == PoolMode::MainMemory { 16 << 20 } else { sc.frames * 4096 };
        let builder = Database::builder()
            .mode(sc.mode)
            .page_size(4096)
            .pool_bytes(pool)
            .policy(sc.spec)
            .logging(sc.logged)
            .log_segment_bytes(32 << 10)
            .max_log_bytes(256 << 10)
            .checkpoint_interval(Some(Duration::from_millis(3)))
            .lab(|l| l.vfs(Arc::new(fs.clone())).background_eviction(sc.evictor).seed(seed));
        let path = Path::new("/p/db");
        let db = builder.clone().create(path).unwrap();
        let tree = db.create_tree("t").unwrap();
        let stop = AtomicBool::new(false);
        let writers: Vec<Writer> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..sc.threads)
                .map(|t| {
                    let (db, tree, stop) = (&db, &tree, &stop);
                    s.spawn(move || write(db, tree, t, seed, sc.ops, sc.big, stop))
                })
                .collect();
            if let Some(after) = sc.crash_after {
                std::thread::sleep(after);
                stop.store(true, Ordering::SeqCst);
                fs.power_off(CrashMode::Torn { seed });
            }
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let check = |db: &Database, tree: &Tree, when: &str| {
            tree.verify().unwrap_or_else(|e| panic!("{when}: the tree is invalid: {e}"));
            db.pool().check_invariants().unwrap_or_else(|e| panic!("{when}: {e}"));
            let all: State =
                tree.range(Bound::Unbounded, Bound::Unbounded).collect::<Result<_, _>>().unwrap();
            let mut mine = 0;
            for (t, w) in writers.iter().enumerate() {
                let got = part(&all, t);
                mine += got.len();
                let missing = w.acked.keys().filter(|k| !got.contains_key(*k)).count();
                let extra = got.keys().filter(|k| !w.acked.contains_key(*k)).count();
                assert!(
                    got == w.acked || w.in_doubt.as_ref() == Some(&got),
                    "{when}: writer {t} ({} operations acknowledged{}): {missing} keys missing, {extra} \
                     unexpected, {} differ",
                    w.commits,
                    if w.in_doubt.is_some() { ", one in doubt" } else { "" },
                    w.acked.iter().filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v)).count()
                );
            }
            assert_eq!(mine, all.len(), "{when}: keys of no writer");
        };
        if sc.crash_after.is_none() {
            check(&db, &tree, "after the writers");
        }
        let other: PolicySpec = if seed.is_multiple_of(2) { "leaf-bpw-2q" } else { "lru" }.parse().unwrap();
        let reopen = builder.policy(other);
        drop(tree);
        if sc.logged {
            if sc.crash_after.is_none() {
                fs.power_off(CrashMode::Torn { seed });
            }
            drop(db);
            fs.power_on();
        } else {
            db.close().unwrap();
        }
        let db = reopen.open(path).unwrap();
        let tree = db.tree("t").unwrap();
        check(&db, &tree, if sc.logged { "after the crash" } else { "after reopening" });
        drop(tree);
        db.close().unwrap();
    }

    /// Every policy of `PolicySpec::all()`, plain and structure-aware, and the BP-Wrapper'd ones.
    fn specs() -> Vec<PolicySpec> {
        let mut specs = Vec::new();
        for kind in PolicySpec::all() {
            specs.extend([kind, PolicySpec { leaf_only: true, ..kind }]);
        }
        specs.extend(BP_WRAPPED.iter().map(|s| s.parse::<PolicySpec>().unwrap()));
        specs
    }

    const BP_WRAPPED: [&str; 6] =
        ["bpw-lru", "bpw-2q", "leaf-bpw-2q", "bpw-batch-lru", "bpw-pref-lru", "locked-lru"];

    /// Runs each scenario under a watchdog that names the one that hangs (no result in 60 s).
    fn run_all(scenarios: Vec<(Scenario, u64)>) {
        let current = Arc::new(Mutex::new((String::new(), Instant::now())));
        let done = Arc::new(AtomicBool::new(false));
        let watchdog = {
            let (current, done) = (Arc::clone(&current), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let (name, since) = &*current.lock().unwrap();
                    if since.elapsed() > Duration::from_secs(60) {
                        eprintln!("no result after 60 s: {name} hangs");
                        std::process::exit(101);
                    }
                }
            })
        };
        for (sc, seed) in scenarios {
            let name = format!("{sc:?}, seed {seed}");
            *current.lock().unwrap() = (name.clone(), Instant::now());
            if let Err(panic) = std::panic::catch_unwind(|| run(sc, seed)) {
                done.store(true, Ordering::Relaxed);
                eprintln!("failed: {name}");
                std::panic::resume_unwind(panic);
            }
        }
        done.store(true, Ordering::Relaxed);
        watchdog.join().unwrap();
    }

    /// Every policy in both evicting modes (and main-memory mode), four threads of transactions
    /// on a pool of 24 frames, logging, the background evictor and large values on or off by
    /// turns, checkpoints every 3 ms: a logged database crashes at a random moment and restarts
    /// with another policy, keeping every acknowledged operation of every writer and nothing
    /// rolled back (RECOVERY.md); an unlogged one is closed and reopened with another policy.
    #[test]
    fn every_policy_and_mode_keeps_acknowledged_transactions_of_concurrent_writers() {
        let mut scenarios = Vec::new();
        let mut rng = SmallRng::seed_from_u64(5);
        let modes = [PoolMode::Traditional, PoolMode::Swizzling];
        for (i, spec) in specs().into_iter().enumerate() {
            for (j, mode) in modes.into_iter().enumerate() {
                let logged = (i + j) % 4 != 3;
                scenarios.push((
                    Scenario {
                        spec,
                        mode,
                        logged,
                        evictor: (i + j) % 2 == 0,
                        threads: 4,
                        frames: 24,
                        ops: 150,
                        big: i % 3 == 0,
                        crash_after: logged.then(|| Duration::from_millis(rng.gen_range(2..40))),
                    },
                    rng.gen(),
                ));
            }
        }
        for logged in [true, false] {
            let spec = PolicySpec::default();
            let sc = Scenario {
                spec,
                mode: PoolMode::MainMemory,
                logged,
                evictor: false,
                threads: 4,
                frames: 0,
                ops: 150,
                big: true,
                crash_after: logged.then_some(Duration::from_millis(20)),
            };
            scenarios.push((sc, rng.gen()));
        }
        run_all(scenarios);
    }

    /// The BP-Wrapper'd policies on the smallest pool (16 frames) with sixteen writer threads,
    /// logged, the background evictor on: every operation succeeds. Before BP-Wrapper drained the
    /// queues of idle threads when the inner policy only had the root or latched frames left
    /// (replacement README, "BP-Wrapper", step 6), the last threads running found the pool
    /// exhausted while most of it sat in finished threads' queues, retrying each write for ten
    /// seconds.
    #[test]
    fn bp_wrapped_policies_serve_sixteen_writers_from_the_smallest_pool() {
        let scenarios = BP_WRAPPED
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let sc = Scenario {
                    spec: name.parse().unwrap(),
                    mode: [PoolMode::Traditional, PoolMode::Swizzling][i % 2],
                    logged: true,
                    evictor: true,
                    threads: 16,
                    frames: 16,
                    ops: 150,
                    big: true,
                    crash_after: None,
                };
                (sc, 277 + i as u64)
            })
            .collect();
        run_all(scenarios);
    }
}

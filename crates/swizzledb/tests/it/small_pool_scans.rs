//! Scans on a small pool (btree T26): range, prefix and full scans, in both directions and in
//! transactions, on a 64-frame swizzling pool while four writers upsert and delete random keys.
//! A scan step that runs out of frames frees some and carries on from the last key it returned,
//! as point reads and writes do: no scan fails where a get succeeds, and none skips a key or
//! returns one twice (each scan's keys are strictly ordered and within its bounds).
//!
//! How often it bit: before T26 a scan read a large value's overflow chain (T22) with its leaf
//! latched and returned `PoolExhausted` when no frame was free for the chain's next page,
//! instead of retrying the leaf visit. With this workload (one upsert in eight writing a value
//! of up to six pages) the first failed scan came after 17 k to 340 k operations (records
//! scanned plus writes plus gets, 50 k to 250 k per second on a shared 2-core machine); in
//! three runs of this file (6 s per test, both at once, about 7 s of wall time) every run failed:
//! the logged test all three times, the unlogged one twice. Without large values two runs of
//! 11 M operations in all showed no failure. `SMALL_POOL_SCAN_SECS` runs each test longer.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb::{CommitMode, Database, Error, PoolMode, Tree};

const PAGE: usize = 4096;
const FRAMES: usize = 64;
const WRITERS: u64 = 4;
const SCANNERS: u64 = 2;
const KEYS: u64 = 20_000;
const PREFIXES: u64 = 16;
/// The length of the small values.
const SMALL: usize = 60;
/// One upsert in this many writes a large value.
const LARGE_EVERY: u32 = 8;
/// The longest large value, in pages.
const LARGE_PAGES: usize = 6;

fn key(n: u64) -> Vec<u8> {
    format!("{:02x}/{:08}", n % PREFIXES, n / PREFIXES).into_bytes()
}

type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn in_bounds(k: &[u8], (start, end): &Bounds) -> bool {
    let lo = match start {
        Bound::Included(s) => k >= s.as_slice(),
        Bound::Excluded(s) => k > s.as_slice(),
        Bound::Unbounded => true,
    };
    let hi = match end {
        Bound::Included(e) => k <= e.as_slice(),
        Bound::Excluded(e) => k < e.as_slice(),
        Bound::Unbounded => true,
    };
    lo && hi
}

/// Reads a scan to its end, checking every key: within `bounds`, strictly after (`descending`:
/// before) the one before it. Returns the records read, or the first error.
fn drain<E>(
    what: &str,
    items: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), E>>,
    bounds: &Bounds,
    descending: bool,
) -> Result<u64, E> {
    let mut last: Option<Vec<u8>> = None;
    let mut n = 0;
    for item in items {
        let (k, _) = item?;
        assert!(in_bounds(&k, bounds), "{what}: key {k:?} outside {bounds:?}");
        if let Some(l) = &last {
            let ordered = if descending { k < *l } else { k > *l };
            assert!(ordered, "{what}: key {k:?} came after {l:?}");
        }
        last = Some(k);
        n += 1;
    }
    Ok(n)
}

fn as_ref((s, e): &Bounds) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (s.as_ref().map(Vec::as_slice), e.as_ref().map(Vec::as_slice))
}

/// One random scan: range, prefix or full, ascending or descending, plain or (`txn`) in a
/// transaction. Returns what it was and how it ended; `Ok(None)`: a transaction's lock was
/// refused by wait-die (abort and retry, LOCKS.md), not a failure.
fn one_scan(
    db: &Database,
    tree: &Tree,
    rng: &mut SmallRng,
    txn: bool,
) -> (String, Result<Option<u64>, Error>) {
    let desc = rng.gen_bool(0.5);
    let (what, bounds, prefix) = match rng.gen_range(0..3) {
        0 => {
            let (a, b) = (key(rng.gen_range(0..KEYS)), key(rng.gen_range(0..KEYS)));
            ("range", (Bound::Included(a.clone().min(b.clone())), Bound::Excluded(a.max(b))), None)
        }
        1 => {
            let p = format!("{:02x}/", rng.gen_range(0..PREFIXES)).into_bytes();
            let mut end = p.clone();
            *end.last_mut().unwrap() += 1;
            ("prefix", (Bound::Included(p.clone()), Bound::Excluded(end)), Some(p))
        }
        _ => ("full", (Bound::Unbounded, Bound::Unbounded), None),
    };
    let what = format!(
        "{}{what} scan{}",
        if txn { "transactional " } else { "" },
        if desc { " (descending)" } else { "" }
    );
    let (s, e) = as_ref(&bounds);
    let r = if txn {
        let t = db.begin();
        let r = if desc {
            drain(&what, t.range_rev(tree, s, e), &bounds, true)
        } else {
            drain(&what, t.range(tree, s, e), &bounds, false)
        };
        t.abort().expect("abort");
        match r {
            Err(Error::Lock(_)) => Ok(None),
            r => r.map(Some),
        }
    } else {
        let r = match (prefix, desc) {
            (Some(p), false) => drain(&what, tree.scan_prefix(&p), &bounds, false),
            (Some(p), true) => drain(&what, tree.scan_prefix_rev(&p), &bounds, true),
            (None, false) => drain(&what, tree.range(s, e), &bounds, false),
            (None, true) => drain(&what, tree.range_rev(s, e), &bounds, true),
        };
        r.map(Some).map_err(Error::from)
    };
    (what, r)
}

/// Runs the workload on `db` for `run`: writers upsert, delete and get, scanners scan; returns
/// the scans that failed (what they were, when, and the error), the operations done (records
/// scanned, writes and gets) and the scans made.
fn stress(db: &Arc<Database>, run: Duration) -> (Vec<String>, u64, u64) {
    let tree = db.create_tree("t").unwrap();
    let value = vec![0x5a; LARGE_PAGES * PAGE];
    for n in (0..KEYS).step_by(2) {
        tree.upsert(&key(n), &value[..SMALL]).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let scans = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (tree, stop, ops, value) = (tree.clone(), stop.clone(), ops.clone(), value.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(w);
                while !stop.load(Ordering::Relaxed) {
                    let k = key(rng.gen_range(0..KEYS));
                    if rng.gen_bool(0.5) {
                        // Now and then a value in overflow pages (T22): a scan reads its chain
                        // with the leaf latched, a frame per page.
                        let len = if rng.gen_range(0..LARGE_EVERY) == 0 {
                            rng.gen_range(PAGE / 2..LARGE_PAGES * PAGE)
                        } else {
                            rng.gen_range(8..SMALL)
                        };
                        tree.upsert(&k, &value[..len]).expect("upsert");
                    } else {
                        tree.delete(&k).expect("delete");
                    }
                    // A point read beside the scans: it retries through a full pool.
                    tree.get(&key(rng.gen_range(0..KEYS))).expect("get");
                    ops.fetch_add(2, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let scanners: Vec<_> = (0..SCANNERS)
        .map(|s| {
            let (db, tree, stop, ops, scans) =
                (db.clone(), tree.clone(), stop.clone(), ops.clone(), scans.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + s);
                let mut failed = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let txn = db.is_logged() && rng.gen_range(0..4) == 0;
                    let (what, r) = one_scan(&db, &tree, &mut rng, txn);
                    scans.fetch_add(1, Ordering::Relaxed);
                    match r {
                        Ok(n) => {
                            ops.fetch_add(n.unwrap_or(0), Ordering::Relaxed);
                        }
                        Err(e) => failed
                            .push(format!("{what}, after {} operations: {e}", ops.load(Ordering::Relaxed))),
                    }
                }
                failed
            })
        })
        .collect();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let failed = scanners.into_iter().flat_map(|s| s.join().unwrap()).collect();
    let _ = tree.verify().expect("tree verifies");
    (failed, ops.load(Ordering::Relaxed), scans.load(Ordering::Relaxed))
}

fn check(logging: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder()
        .mode(PoolMode::Swizzling)
        .page_size(PAGE)
        .pool_bytes(FRAMES * PAGE)
        .logging(logging)
        // Commits need not wait for the disk here: this is about frames, not durability.
        .commit_mode(CommitMode::Async)
        .create(dir.path().join("db"))
        .unwrap();
    let db = Arc::new(db);
    let started = Instant::now();
    let secs = std::env::var("SMALL_POOL_SCAN_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let (failed, ops, scans) = stress(&db, Duration::from_secs(secs));
    eprintln!(
        "logging {logging}: {scans} scans and {ops} operations (records scanned, writes, gets) in {:?}, {} scans failed",
        started.elapsed(),
        failed.len()
    );
    assert!(failed.is_empty(), "scans failed on a {FRAMES}-frame pool: {failed:#?}");
    let Ok(db) = Arc::try_unwrap(db) else { panic!("a handle outlived the threads") };
    db.close().unwrap();
}

#[test]
fn scans_on_a_small_unlogged_pool_never_fail() {
    check(false);
}

#[test]
fn scans_on_a_small_logged_pool_never_fail() {
    check(true);
}

/// btree T18, T26: a transaction's forward range read over leaves whose large values alone
/// outnumber the pool's frames finishes. It checks, before it returns a leaf's records, that
/// the leaves before it did not change; reading a leaf's whole chains first evicted the leaf
/// before it every time, so the read went back to that leaf, read on, and met the same again:
/// 40 records in, it did not end in two minutes (16 frames, 1,000 values of 3,000 bytes, about
/// 70 per leaf). The test reads 400, which the loop got through at last after re-reading the
/// chains many times over: it counts the forward read's misses.
/// The reverse read and the plain scans did not loop; they are checked beside it.
#[test]
fn t26_a_transactions_range_read_over_large_values_through_a_small_pool_ends() {
    for logged in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .mode(PoolMode::Swizzling)
            .page_size(PAGE)
            .pool_bytes(16 * PAGE)
            .logging(logged)
            .commit_mode(CommitMode::Async)
            .create(dir.path().join("large.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        // Six leaves of about 70 values, each leaf's chains over four times the pool.
        let n = 400u64;
        for k in 0..n {
            t.upsert(&key(k), &vec![(k % 251) as u8; 3000]).unwrap();
        }
        let (done_tx, done) = std::sync::mpsc::channel();
        let db = Arc::new(db);
        let reader = {
            let (db, t) = (Arc::clone(&db), t.clone());
            std::thread::spawn(move || {
                let all: Bounds = (Bound::Unbounded, Bound::Unbounded);
                let before = db.stats();
                let fwd = db
                    .transact(|tx| {
                        drain("forward", tx.range(&t, Bound::Unbounded, Bound::Unbounded), &all, false)
                    })
                    .unwrap();
                let misses = db.stats().since(&before).misses;
                let rev = db
                    .transact(|tx| {
                        drain("reverse", tx.range(&t, Bound::Unbounded, Bound::Unbounded).rev(), &all, true)
                    })
                    .unwrap();
                let counts = (fwd, rev, misses);
                let plain = drain("plain", t.range(Bound::Unbounded, Bound::Unbounded), &all, false).unwrap();
                done_tx.send((counts, plain)).unwrap();
            })
        };
        // Not a timing assertion: the read takes milliseconds; without the fix it never ends.
        let got = done.recv_timeout(Duration::from_secs(120)).expect("the range read did not end");
        reader.join().unwrap();
        let ((fwd, rev, misses), plain) = got;
        assert_eq!((fwd, rev, plain), (n, n, n), "logged {logged}");
        // Each value's page and each leaf read about once (with the loop, each leaf's chains
        // were read again and again: about 40 times the values' pages before it ended here).
        assert!(misses < 2 * n, "logged {logged}: the forward read took {misses} misses for {n} values");
    }
}

/// btree T18: a transaction's forward range read over a gap that spans more leaves than the
/// pool has frames ends. A rolled-back transaction that had inserted 12,000 keys after the
/// committed ones leaves their leaves empty, about 170 of them, against a pool of 64 frames.
/// The read checks, once the key closing a gap passed, that the gap's leaves did not change;
/// reading them had evicted the first ones, which count as changed, so it read the gap again,
/// met the same, and never ended (millions of misses in 20 s, in both pool modes that evict;
/// found by instant restart's background rollback, `r22_k16_…` in `instant_restart.rs`). Now
/// the closing key it holds locked keeps every key out of the gap, and the second read of the
/// gap needs no check: about 420 misses. The reverse read is checked beside it. Since T4 merges
/// an emptied leaf with its right sibling too, the rollback gives those leaves back
/// (`oracle::t4_descending_deletes_and_rolled_back_inserts_give_their_leaves_back`) and the gap
/// is a leaf or two: the read must still be exact and end, while the closing key kept locked
/// guards only gaps that maintenance left unmerged (it gives up when frames run short, T9).
#[test]
fn t18_a_transactions_range_read_over_more_empty_leaves_than_frames_ends() {
    for mode in [PoolMode::Traditional, PoolMode::Swizzling] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder()
            .mode(mode)
            .page_size(PAGE)
            .pool_bytes(FRAMES * PAGE)
            .create(dir.path().join("emptied.swz"))
            .unwrap();
        let t = db.create_tree("t").unwrap();
        let committed = 12_000u32;
        db.transact(|tx| {
            (0..committed).try_for_each(|i| tx.put(&t, format!("m{i:06}").as_bytes(), &[7; 40]).map(drop))
        })
        .unwrap();
        t.upsert(b"z", b"last").unwrap();
        let mut tx = db.begin();
        for i in 0..12_000u32 {
            tx.put(&t, format!("n{i:06}").as_bytes(), &[9; 40]).unwrap();
        }
        tx.abort().unwrap();
        let db = Arc::new(db);
        let (done_tx, done) = std::sync::mpsc::channel();
        let (db2, t2) = (Arc::clone(&db), t.clone());
        let reader = std::thread::spawn(move || {
            let all: Bounds = (Bound::Unbounded, Bound::Unbounded);
            let fwd = db2.transact(|tx| {
                drain("forward", tx.range(&t2, Bound::Unbounded, Bound::Unbounded), &all, false)
            });
            let rev = db2.transact(|tx| {
                drain("reverse", tx.range(&t2, Bound::Unbounded, Bound::Unbounded).rev(), &all, true)
            });
            done_tx.send((fwd.unwrap(), rev.unwrap())).unwrap();
        });
        // Not a timing assertion: the reads take milliseconds; without the fix they never end.
        let got = done.recv_timeout(Duration::from_secs(60)).expect("the range read did not end");
        reader.join().unwrap();
        let n = u64::from(committed) + 1;
        assert_eq!(got, (n, n), "{mode:?}: the committed records, each way");
    }
}

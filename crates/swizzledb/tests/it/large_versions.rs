//! Large values (btree README T22) × transactions × snapshots and their versions (LOCKS.md
//! K17–K22, K24) × rollback: values that move between their leaf and overflow chains, replaced
//! and deleted by transactions that commit, roll back or are dropped while snapshots are held
//! open; each reader — a snapshot, the writing transaction itself, a plain read — compared with
//! a `BTreeMap` oracle of the state it must see, by point reads, scans in both directions (read
//! from both ends at once) and prefix scans; then every page accounted for, and the committed
//! state compared again after a close and reopen or a power loss. Configurations are
//! `api_oracle.rs`'s.

use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;

use swizzledb::{Database, Error, PoolMode, ReadTransaction, Transaction, Tree};
use swizzledb_io::{CrashMode, FaultFs, Vfs};

use crate::api_oracle::{
    all_of, assert_same, borrowed, check_all, from_both_ends, in_range, with_prefix, Config, Map, Record,
};
use crate::common::{self, XorShift};
use crate::large_values::assert_no_leak;

const PATH: &str = "/crash/large-versions.swz";

/// The configurations that matter here: every combination of logging and record locks, with
/// 4 KiB pages in a pool of 48 (a large value is an eighth of it) and 16 KiB pages in a large
/// pool (values up to `MAX_VALUE_LEN`), in swizzling mode; the other two buffer modes logged
/// with locks, 4 KiB pages, small pools.
fn configs() -> Vec<Config> {
    Config::all()
        .into_iter()
        .filter(|c| match c.mode {
            PoolMode::Swizzling => (c.page == 4096 && c.small_pool) || (c.page == 16384 && !c.small_pool),
            _ => c.logged && c.locking && c.page == 4096 && c.small_pool,
        })
        .collect()
}

/// A value of `len` bytes that differs from every other (len, seed).
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) ^ (i >> 11) as u8).collect()
}

/// The value lengths at the edges of a tree's limits: short, the longest kept in its leaf, one
/// byte more (one overflow page), a third of the largest (at most 300,000 bytes), a large one
/// (at most 600,000 bytes) and the largest.
#[derive(Clone, Copy, Debug)]
struct Lens {
    short: usize,
    inline: usize,
    over: usize,
    mid: usize,
    big: usize,
    max: usize,
}

impl Lens {
    fn of(cfg: &Config, t: &Tree) -> Lens {
        let max = t.max_value_len();
        let inline = swizzledb::max_inline_value_len(cfg.page);
        assert!(max > 3 * (inline + 1), "{cfg:?}: {max}");
        Lens { short: 7, inline, over: inline + 1, mid: (max / 3).min(300_000), big: max.min(600_000), max }
    }
}

/// A reader whose view an oracle gives.
enum Reader<'r, 'db> {
    Snapshot(&'r ReadTransaction<'db>),
    Own(&'r Transaction<'db>),
    Plain,
}

/// The bounds a check scans between: unbounded, and included and excluded bounds at keys that
/// are present, deleted or never written.
/// A scan's bounds.
type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn bounds(keys: &[Vec<u8>], rng: &mut XorShift) -> Vec<Bounds> {
    let mut pick = || -> Bound<Vec<u8>> {
        let k = keys[(rng.next() % keys.len() as u64) as usize].clone();
        match rng.next() % 3 {
            0 => Unbounded,
            1 => Included(k),
            _ => Excluded(k),
        }
    };
    let mut all = vec![(Unbounded, Unbounded)];
    for _ in 0..3 {
        all.push((pick(), pick()));
    }
    all
}

/// `reader` of `t` against `want`: a point read of every key in `keys`, scans between random
/// bounds in both directions, read from both ends at once, and prefix scans.
fn check(reader: Reader<'_, '_>, t: &Tree, want: &Map, keys: &[Vec<u8>], seed: u64, ctx: &str) {
    let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for k in keys {
        let got = match &reader {
            Reader::Snapshot(r) => r.get(t, k).unwrap_or_else(|e| panic!("{ctx}: get: {e}")),
            Reader::Own(tx) => tx.get(t, k).unwrap_or_else(|e| panic!("{ctx}: get: {e}")),
            Reader::Plain => t.get(k).unwrap_or_else(|e| panic!("{ctx}: get: {e}")),
        };
        let w = want.get(k);
        assert!(
            got.as_ref() == w,
            "{ctx}: get {:?}: got {:?} bytes, want {:?}",
            String::from_utf8_lossy(k),
            got.as_ref().map(Vec::len),
            w.map(Vec::len)
        );
    }
    for (start, end) in bounds(keys, &mut rng) {
        let w = in_range(want, &start, &end);
        let (s, e) = (borrowed(&start), borrowed(&end));
        let what = format!("{ctx}: range {start:?}..{end:?}");
        let (forward, mut backward): (Vec<Record>, Vec<Record>) = match &reader {
            Reader::Snapshot(r) => (
                from_both_ends(r.range(t, s, e), rng.next(), &what),
                from_both_ends(r.range_rev(t, s, e), rng.next(), &what),
            ),
            Reader::Own(tx) => (
                from_both_ends(tx.range(t, s, e), rng.next(), &what),
                from_both_ends(tx.range_rev(t, s, e), rng.next(), &what),
            ),
            Reader::Plain => (
                from_both_ends(t.range(s, e), rng.next(), &what),
                from_both_ends(t.range_rev(s, e), rng.next(), &what),
            ),
        };
        assert_same(&forward, &w, &what);
        backward.reverse();
        assert_same(&backward, &w, &format!("{what}, backwards"));
    }
    for prefix in [&b""[..], b"a/", b"d/", b"f/", b"j/", b"k/", b"n/", b"z/"] {
        let what = format!("{ctx}: prefix {:?}", String::from_utf8_lossy(prefix));
        let got: Vec<Record> = match &reader {
            Reader::Snapshot(r) => from_both_ends(r.scan_prefix(t, prefix), rng.next(), &what),
            // A transaction has no prefix scan: the range a prefix spans.
            Reader::Own(tx) => {
                let mut end = prefix.to_vec();
                let bound = match end.last_mut() {
                    Some(b) => {
                        *b += 1;
                        Excluded(&end[..])
                    }
                    None => Unbounded,
                };
                from_both_ends(tx.range(t, Included(prefix), bound), rng.next(), &what)
            }
            Reader::Plain => from_both_ends(t.scan_prefix(prefix), rng.next(), &what),
        };
        assert_same(&got, &with_prefix(want, prefix), &what);
    }
}

/// A transaction's writes, mirrored in the oracle of what it sees (`view`).
struct Writes<'a, 'db> {
    tx: &'a mut Transaction<'db>,
    t: &'a Tree,
    view: Map,
    ctx: String,
}

impl Writes<'_, '_> {
    fn put(&mut self, key: &[u8], v: Vec<u8>) {
        let existed = self.tx.put(self.t, key, &v).unwrap_or_else(|e| panic!("{}: put: {e}", self.ctx));
        assert_eq!(existed, self.view.insert(key.to_vec(), v).is_some(), "{}: put's answer", self.ctx);
    }

    fn delete(&mut self, key: &[u8]) {
        let existed = self.tx.delete(self.t, key).unwrap_or_else(|e| panic!("{}: delete: {e}", self.ctx));
        assert_eq!(existed, self.view.remove(key).is_some(), "{}: delete's answer", self.ctx);
    }
}

/// The committed state every scenario starts from: a large value, a value at the inline limit
/// and short ones, under keys grouped by their first letter (for prefix scans), with short
/// neighbours between them.
fn initial(l: &Lens) -> Map {
    let mut m = Map::new();
    let mut put = |k: &str, v: Vec<u8>| m.insert(k.as_bytes().to_vec(), v);
    put("a/inline-to-overflow", value(l.short, 1));
    put("b/overflow-to-inline", value(l.big, 2));
    put("c/overflow-to-larger", value(l.mid, 3));
    put("d/overflow-deleted", value(l.big, 4));
    put("d/inline-deleted", value(l.inline, 5));
    put("g/overflow-same-length", value(l.mid, 7));
    put("h/untouched", value(l.big, 8));
    put("i/overflow-to-one-page", value(l.big, 9));
    put("j/deleted-then-inserted", value(l.mid, 10));
    put("l/largest-to-short", value(l.max, 12));
    for i in 0..24u8 {
        put(&format!("f/{i:02}"), value(usize::from(i) * 3, 100 + i));
    }
    m
}

/// Every key a scenario writes or asks for, present or not.
fn all_keys(l: &Lens) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = initial(l).into_keys().collect();
    for k in ["k/absent-to-overflow", "k/inserted-then-deleted", "n/new", "z/never", "e"] {
        keys.push(k.as_bytes().to_vec());
    }
    keys.sort();
    keys
}

/// T1, over the initial state: each transition between the leaf and overflow chains, a key
/// changed twice (its version is the first change's before-image, K17), one deleted and
/// inserted again, one inserted and deleted.
fn first_writes(w: &mut Writes<'_, '_>, l: &Lens) {
    w.put(b"a/inline-to-overflow", value(l.big, 21));
    w.put(b"b/overflow-to-inline", value(l.short, 22));
    w.put(b"c/overflow-to-larger", value(l.big, 23));
    w.delete(b"d/overflow-deleted");
    w.delete(b"d/inline-deleted");
    w.put(b"k/absent-to-overflow", value(l.big, 26));
    w.put(b"g/overflow-same-length", value(l.mid, 27));
    w.put(b"i/overflow-to-one-page", value(l.over, 29));
    w.delete(b"j/deleted-then-inserted");
    w.put(b"j/deleted-then-inserted", value(l.big, 30));
    w.put(b"k/inserted-then-deleted", value(l.big, 31));
    w.delete(b"k/inserted-then-deleted");
    w.put(b"l/largest-to-short", value(1, 32));
    w.put(b"a/inline-to-overflow", value(l.mid, 33));
    w.delete(b"f/05");
    w.put(b"f/06", value(l.over, 34));
}

/// Writes over T1's committed state, by a transaction that will not commit.
fn later_writes(w: &mut Writes<'_, '_>, l: &Lens, seed: u8) {
    w.delete(b"a/inline-to-overflow");
    w.put(b"b/overflow-to-inline", value(l.max, seed));
    w.put(b"c/overflow-to-larger", value(l.mid + 5, seed + 1));
    w.put(b"h/untouched", value(l.big, seed + 2));
    w.delete(b"k/absent-to-overflow");
    w.put(b"n/new", value(l.big, seed + 3));
    w.put(b"i/overflow-to-one-page", value(l.short, seed + 4));
    w.put(b"d/overflow-deleted", value(l.mid, seed + 5));
    w.delete(b"f/06");
    w.delete(b"j/deleted-then-inserted");
    w.put(b"d/overflow-deleted", value(l.big, seed + 6));
}

/// Sum of the before-images' lengths (plus key and bookkeeping) `writes` make over `from`, their
/// first changes of each key: the versions a snapshot older than them keeps (K17, K20).
fn version_bytes(from: &Map, to: &Map) -> usize {
    let mut keys: Vec<&Vec<u8>> = from.keys().chain(to.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| from.get(*k) != to.get(*k))
        .map(|k| 8 + k.len() + from.get(k).map_or(0, Vec::len))
        .sum()
}

fn open(cfg: &Config, fs: &Arc<dyn Vfs>) -> (Database, Tree) {
    let db = cfg.builder(fs).open(PATH).unwrap_or_else(|e| panic!("{cfg:?}: open: {e}"));
    let t = db.tree("t").unwrap();
    (db, t)
}

/// K17–K22 with large values: snapshots held open while transactions replace and delete large
/// values (every transition between a leaf and overflow chains) and commit, roll back or are
/// dropped, read exactly the state they began with — point reads, scans both ways, prefix
/// scans; the writing transaction reads its own changes; plain reads read the committed state
/// (logged, with locks; else the tree as it is). The versions count their before-images; once
/// the snapshots end they are gone; no page leaks; the committed state survives a reopen and,
/// logged, a power loss with a transaction open.
#[test]
fn k17_k22_snapshots_read_large_values_as_they_were_across_commits_and_rollbacks() {
    for cfg in configs() {
        let ctx = format!("{cfg:?}");
        let fs = common::new_fs();
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let db = cfg.builder(&vfs).create(PATH).unwrap();
        let t = db.create_tree("t").unwrap();
        let l = Lens::of(&cfg, &t);
        let keys = all_keys(&l);
        let c0 = initial(&l);
        db.transact(|tx| {
            for (k, v) in &c0 {
                tx.put(&t, k, v)?;
            }
            Ok(())
        })
        .unwrap();
        check(Reader::Plain, &t, &c0, &keys, 1, &format!("{ctx}: initial"));
        // What a snapshot or plain read sees while `uncommitted` is the tree's state.
        let snap_sees = |committed: &Map, uncommitted: &Map| {
            if cfg.versions() {
                committed.clone()
            } else {
                uncommitted.clone()
            }
        };
        let plain_sees = |committed: &Map, uncommitted: &Map| {
            if cfg.committed_reads() {
                committed.clone()
            } else {
                uncommitted.clone()
            }
        };

        let s0 = db.begin_read();
        let mut tx = db.begin();
        let mut w = Writes { tx: &mut tx, t: &t, view: c0.clone(), ctx: format!("{ctx}: T1") };
        first_writes(&mut w, &l);
        let c1 = w.view.clone();
        check(Reader::Own(&tx), &t, &c1, &keys, 2, &format!("{ctx}: T1 reads its own writes"));
        let during = db.begin_read();
        check(Reader::Snapshot(&s0), &t, &snap_sees(&c0, &c1), &keys, 3, &format!("{ctx}: S0 during T1"));
        check(
            Reader::Snapshot(&during),
            &t,
            &snap_sees(&c0, &c1),
            &keys,
            4,
            &format!("{ctx}: S begun in T1"),
        );
        check(Reader::Plain, &t, &plain_sees(&c0, &c1), &keys, 5, &format!("{ctx}: plain reads during T1"));
        tx.commit().unwrap();
        let s1 = db.begin_read();
        let s0_sees = snap_sees(&c0, &c1);
        check(Reader::Snapshot(&s0), &t, &s0_sees, &keys, 6, &format!("{ctx}: S0 after T1's commit"));
        check(Reader::Snapshot(&during), &t, &s0_sees, &keys, 7, &format!("{ctx}: S after T1's commit"));
        check(Reader::Snapshot(&s1), &t, &c1, &keys, 8, &format!("{ctx}: S1"));
        check(Reader::Plain, &t, &c1, &keys, 9, &format!("{ctx}: plain reads after T1"));
        drop(during);

        // T2 rolls back explicitly, T3 by drop; the snapshots read through both.
        for (n, explicit) in [(2, true), (3, false)] {
            let mut tx = db.begin();
            let mut w = Writes { tx: &mut tx, t: &t, view: c1.clone(), ctx: format!("{ctx}: T{n}") };
            later_writes(&mut w, &l, 40 + 10 * n);
            let mine = w.view.clone();
            check(Reader::Own(&tx), &t, &mine, &keys, 10, &format!("{ctx}: T{n} reads its own writes"));
            check(
                Reader::Snapshot(&s0),
                &t,
                &snap_sees(&c0, &mine),
                &keys,
                11,
                &format!("{ctx}: S0 in T{n}"),
            );
            check(
                Reader::Snapshot(&s1),
                &t,
                &snap_sees(&c1, &mine),
                &keys,
                12,
                &format!("{ctx}: S1 in T{n}"),
            );
            check(Reader::Plain, &t, &plain_sees(&c1, &mine), &keys, 13, &format!("{ctx}: plain in T{n}"));
            if explicit {
                tx.abort().unwrap();
            } else {
                drop(tx);
            }
            let ctx = format!("{ctx}: after T{n}'s rollback");
            check(Reader::Snapshot(&s0), &t, &s0_sees, &keys, 14, &format!("{ctx}: S0"));
            check(Reader::Snapshot(&s1), &t, &c1, &keys, 15, &format!("{ctx}: S1"));
            check(Reader::Plain, &t, &c1, &keys, 16, &ctx);
            assert_no_leak(&db, &ctx);
        }
        if let Some(stats) = db.version_stats() {
            // S0 keeps T1's before-images at least; T2's and T3's at most besides.
            let least = version_bytes(&c0, &c1);
            assert!(stats.bytes >= least, "{ctx}: {stats:?} counts less than T1's before-images, {least}");
        }
        drop((s0, s1));
        if let Some(stats) = db.version_stats() {
            assert_eq!(stats.bytes, 0, "{ctx}: no snapshot runs: {stats:?}");
        }
        check_all(&t, &c1, &ctx);
        assert_no_leak(&db, &ctx);

        // A transaction left open at a power loss (logged) or a close.
        let mut open_tx = db.begin();
        let mut w = Writes { tx: &mut open_tx, t: &t, view: c1.clone(), ctx: format!("{ctx}: T4") };
        later_writes(&mut w, &l, 90);
        if cfg.logged {
            fs.power_off(CrashMode::DropUnsynced);
            drop(open_tx);
            drop(t);
            drop(db);
            fs.power_on();
        } else {
            open_tx.abort().unwrap();
            drop(t);
            db.close().unwrap();
        }
        let (db, t) = open(&cfg, &vfs);
        let ctx = format!("{ctx}: reopened");
        check_all(&t, &c1, &ctx);
        check(Reader::Plain, &t, &c1, &keys, 17, &ctx);
        let s = db.begin_read();
        check(Reader::Snapshot(&s), &t, &c1, &keys, 18, &ctx);
        drop(s);
        assert_no_leak(&db, &ctx);
        drop(t);
        db.close().unwrap();
        let (db, t) = open(&cfg, &vfs);
        check_all(&t, &c1, &format!("{ctx} after a clean close"));
        drop(t);
        db.close().unwrap();
    }
}

/// K20 with values of 1 to 4 MiB: a snapshot held open while they are rewritten again and again
/// keeps the versions' memory within `version_memory` after every commit, and, once the versions
/// it needs pass the bound, its reads fail with `SnapshotTooOld` naming the bound (point reads
/// and scans); the versions count each before-image's bytes; later snapshots, plain reads and
/// writers go on and read exactly the committed values; without a snapshot, nothing is kept.
#[test]
fn k20_rewriting_megabyte_values_under_an_open_snapshot_keeps_the_version_memory_bounded() {
    let limit = 6 << 20;
    for cfg in configs().into_iter().filter(|c| c.locking && c.page == 16384) {
        let ctx = format!("{cfg:?}");
        let vfs: Arc<dyn Vfs> = Arc::new(FaultFs::new());
        let db = cfg.builder(&vfs).version_memory(limit).create("/large-versions.swz").unwrap();
        let t = db.create_tree("t").unwrap();
        let max = t.max_value_len();
        assert!(max > 4_000_000, "{ctx}: {max}");
        let len = |key: usize, round: usize| (((1 + (key + round) % 4) << 20) - 1000 * round).min(max);
        let mut committed = Map::new();
        for k in 0..4 {
            let v = value(len(k, 0), k as u8);
            db.transact(|tx| tx.put(&t, &[k as u8], &v).map(|_| ())).unwrap();
            committed.insert(vec![k as u8], v);
        }
        let old = db.begin_read();
        let at_start = committed.clone();
        assert_eq!(old.get(&t, &[0]).unwrap().as_ref(), at_start.get(&[0][..]));
        // One rewrite: the versions count the 1 MiB before-image, with its key and bookkeeping.
        let v = value(len(0, 1), 50);
        db.transact(|tx| tx.put(&t, &[0], &v).map(|_| ())).unwrap();
        let before = at_start[&[0][..]].len();
        let stats = db.version_stats().unwrap();
        assert!(stats.bytes >= before && stats.bytes <= before + 1024, "{ctx}: {stats:?} for {before} bytes");
        committed.insert(vec![0], v);
        assert_eq!(old.get(&t, &[0]).unwrap().as_ref(), at_start.get(&[0][..]), "{ctx}");
        let mut ended = false;
        for round in 1..5 {
            for k in 0..4 {
                let v = value(len(k, round), (10 * round + k) as u8);
                if k == 3 && round % 2 == 0 {
                    db.transact(|tx| tx.delete(&t, &[k as u8]).map(|_| ())).unwrap();
                    committed.remove(&[k as u8][..]);
                } else {
                    db.transact(|tx| tx.put(&t, &[k as u8], &v).map(|_| ())).unwrap();
                    committed.insert(vec![k as u8], v);
                }
                let stats = db.version_stats().unwrap();
                assert!(stats.bytes <= limit, "{ctx}: round {round}, key {k}: {stats:?}");
                match old.get(&t, &[k as u8]) {
                    Ok(got) => {
                        assert!(!ended, "{ctx}: an ended snapshot read again");
                        assert!(
                            got.as_ref() == at_start.get(&[k as u8][..]),
                            "{ctx}: round {round}, key {k}"
                        );
                    }
                    Err(Error::SnapshotTooOld { limit: l }) => {
                        assert_eq!(l, limit, "{ctx}");
                        ended = true;
                    }
                    Err(e) => panic!("{ctx}: round {round}, key {k}: {e}"),
                }
                // A fresh snapshot and plain reads see every commit.
                let now = db.begin_read();
                for key in 0..4u8 {
                    assert!(now.get(&t, &[key]).unwrap().as_ref() == committed.get(&[key][..]), "{ctx}");
                    assert!(t.get(&[key]).unwrap().as_ref() == committed.get(&[key][..]), "{ctx}");
                }
            }
        }
        assert!(ended, "{ctx}: 16 rewrites of 1 to 4 MiB values fit a bound of 6 MiB");
        let scan: Vec<_> = old.range(&t, Unbounded, Unbounded).collect();
        assert!(
            scan.iter().any(|item| matches!(
                item,
                Err(swizzledb::TreeError::Transaction(inner))
                    if matches!(inner.downcast_ref::<Error>(), Some(Error::SnapshotTooOld { .. }))
            )),
            "{ctx}: the ended snapshot's scan"
        );
        assert!(db.version_stats().unwrap().too_old >= 1, "{ctx}");
        drop(old);
        assert_eq!(db.version_stats().unwrap().bytes, 0, "{ctx}: no snapshot, no version");
        let s = db.begin_read();
        check(Reader::Snapshot(&s), &t, &committed, &[vec![0], vec![1], vec![2], vec![3]], 1, &ctx);
        drop(s);
        check_all(&t, &committed, &ctx);
        drop(t);
        db.close().unwrap();
    }
}

/// K20: a running transaction's versions are its undo list, not counted against
/// `version_memory` (`VersionStats::bytes` counts those of writers that ended). A transaction
/// that deleted a value longer than the bound, still running, counts nothing; snapshots begun
/// before or after it, and a plain scan, read on across other transactions' commits (ending
/// them would free nothing: the running writer's version stays while it runs); once it commits
/// with a snapshot that needs its version open, that version counts, and past the bound the
/// snapshot ends with `SnapshotTooOld`, as for any writer that ended.
#[test]
fn k20_a_running_transactions_large_deletes_count_nothing_and_end_no_snapshot() {
    let limit = 2 << 20;
    for cfg in configs().into_iter().filter(|c| c.locking && c.page == 16384) {
        let ctx = format!("{cfg:?}");
        let vfs: Arc<dyn Vfs> = Arc::new(FaultFs::new());
        let db = cfg.builder(&vfs).version_memory(limit).create("/large-versions.swz").unwrap();
        let t = db.create_tree("t").unwrap();
        let big = value(3 << 20, 1);
        db.transact(|tx| {
            tx.put(&t, b"a", b"1")?;
            tx.put(&t, b"big", &big)?;
            tx.put(&t, b"bigger", &value(3 << 20, 2))
        })
        .unwrap();
        let before = db.begin_read();
        let mut tx = db.begin();
        assert!(tx.delete(&t, b"big").unwrap());
        assert!(tx.delete(&t, b"bigger").unwrap());
        let stats = db.version_stats().unwrap();
        assert_eq!(stats.bytes, 0, "{ctx}: a running writer's versions are not counted: {stats:?}");
        let after = db.begin_read();
        let scan = cfg.committed_reads().then(|| t.range(Unbounded, Unbounded));
        // Other transactions commit (auto-commit writes are transactions on a logged database).
        for (k, v) in [(&b"a"[..], &b"2"[..]), (b"aa", b"3")] {
            db.transact(|w| w.put(&t, k, v).map(|_| ())).unwrap();
        }
        let want: Map = [
            (b"a".to_vec(), b"1".to_vec()),
            (b"big".to_vec(), big.clone()),
            (b"bigger".to_vec(), value(3 << 20, 2)),
        ]
        .into_iter()
        .collect();
        let keys = [b"a".to_vec(), b"aa".to_vec(), b"big".to_vec(), b"bigger".to_vec()];
        check(
            Reader::Snapshot(&before),
            &t,
            &want,
            &keys,
            1,
            &format!("{ctx}: a snapshot older than the deletes"),
        );
        check(Reader::Snapshot(&after), &t, &want, &keys, 2, &format!("{ctx}: a snapshot begun after them"));
        if let Some(scan) = scan {
            let got: Vec<Record> =
                scan.map(|r| r.unwrap_or_else(|e| panic!("{ctx}: a plain scan: {e}"))).collect();
            assert_same(&got, &all_of(&want), &format!("{ctx}: a plain scan"));
        }
        assert_eq!(db.version_stats().unwrap().too_old, 0, "{ctx}");
        tx.commit().unwrap();
        // Now the 6 MiB of before-images count, past the bound: the snapshots that need them end.
        let stats = db.version_stats().unwrap();
        assert!(stats.bytes <= limit, "{ctx}: {stats:?}");
        for s in [&before, &after] {
            assert!(
                matches!(s.get(&t, b"a"), Err(Error::SnapshotTooOld { limit: l }) if l == limit),
                "{ctx}"
            );
        }
        drop((before, after));
        assert_eq!(db.version_stats().unwrap().bytes, 0, "{ctx}");
        let now: Map =
            [(b"a".to_vec(), b"2".to_vec()), (b"aa".to_vec(), b"3".to_vec())].into_iter().collect();
        let s = db.begin_read();
        check(Reader::Snapshot(&s), &t, &now, &keys, 3, &ctx);
        drop(s);
        check_all(&t, &now, &ctx);
        assert_no_leak(&db, &ctx);
    }
}

/// A transaction's own large values (K17, K24, btree T24): it reads back what it wrote —
/// point reads and scans — while `update_with` grows, shrinks and moves values between the
/// leaf and overflow chains, and `compare_and_swap` compares whole large values (a mismatch
/// of the same length returns the current value and changes nothing) and swaps them in and
/// out; serializable and snapshot isolation alike, committed or rolled back. A snapshot held
/// throughout sees the state it began with; a snapshot-isolation transaction reads a large
/// value another transaction replaced after it began as it was, and its write of that key is a
/// `WriteConflict` that leaves its reads as they were. No page leaks; a reopen reads the
/// committed state.
#[test]
fn k17_k24_a_transaction_reads_updates_and_swaps_its_own_large_values() {
    for cfg in configs() {
        let ctx = format!("{cfg:?}");
        let vfs: Arc<dyn Vfs> = Arc::new(FaultFs::new());
        let db = cfg.builder(&vfs).create("/own.swz").unwrap();
        let t = db.create_tree("t").unwrap();
        let l = Lens::of(&cfg, &t);
        let mut committed: Map = [
            (b"f/x".to_vec(), value(l.big, 1)),
            (b"f/y".to_vec(), value(l.short, 2)),
            (b"f/z".to_vec(), value(l.mid, 3)),
            (b"k/v".to_vec(), value(l.over, 4)),
        ]
        .into_iter()
        .collect();
        db.transact(|tx| {
            for (k, v) in &committed {
                tx.put(&t, k, v)?;
            }
            Ok(())
        })
        .unwrap();
        let keys: Vec<Vec<u8>> = ["f/x", "f/y", "f/z", "f/w0", "f/w1", "f/w2", "f/w3", "k/v", "a"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let at_start = committed.clone();
        let held = db.begin_read();
        for (round, (si, commit)) in
            [(false, false), (true, false), (false, true), (true, true)].into_iter().enumerate()
        {
            let ctx = format!("{ctx}: snapshot isolation {si}, commit {commit}");
            let seed = 10 * round as u8;
            // A key absent at the round's start.
            let wk = format!("f/w{round}").into_bytes();
            let mut tx = if si { db.begin_snapshot() } else { db.begin() };
            let mut view = committed.clone();
            let x = value(l.big, seed + 1);
            tx.put(&t, b"f/x", &x).unwrap();
            view.insert(b"f/x".to_vec(), x.clone());
            assert_eq!(tx.get(&t, b"f/x").unwrap().as_ref(), Some(&x), "{ctx}: its own put");
            // Grown within the overflow chain, short to large, large to short.
            let z = view[&b"f/z"[..]].clone();
            let got = tx
                .update_with(&t, b"f/z", |old, new| {
                    new.extend_from_slice(old);
                    new.extend_from_slice(old);
                    old.len()
                })
                .unwrap();
            assert_eq!(got, Some(z.len()), "{ctx}");
            view.insert(b"f/z".to_vec(), [&z[..], &z[..]].concat());
            let y = value(l.big, seed + 2);
            // Present (short) or, after a committed round deleted it, absent: then put.
            let present = view.contains_key(&b"f/y"[..]);
            let got = tx.update_with(&t, b"f/y", |_, new| new.extend_from_slice(&y)).unwrap();
            assert_eq!(got.is_some(), present, "{ctx}: update_with of f/y");
            if !present {
                assert!(!tx.put(&t, b"f/y", &y).unwrap(), "{ctx}");
            }
            view.insert(b"f/y".to_vec(), y);
            tx.update_with(&t, b"f/x", |old, new| {
                assert!(old == &x[..], "update_with gets the transaction's own value");
                new.extend_from_slice(b"short")
            })
            .unwrap()
            .unwrap();
            view.insert(b"f/x".to_vec(), b"short".to_vec());
            assert_eq!(tx.update_with(&t, &wk, |_, _| unreachable!()).unwrap(), None, "{ctx}: absent");
            check(Reader::Own(&tx), &t, &view, &keys, 1, &format!("{ctx}: after update_with"));
            // Compare-and-swap: whole values compared.
            let zz = view[&b"f/z"[..]].clone();
            let mut wrong = zz.clone();
            *wrong.last_mut().unwrap() ^= 1;
            let refused = tx.compare_and_swap(&t, b"f/z", Some(&wrong), Some(b"no")).unwrap().unwrap_err();
            assert!(refused.current.as_ref() == Some(&zz), "{ctx}: a refused swap returns the current value");
            let swapped = value(l.mid, seed + 3);
            tx.compare_and_swap(&t, b"f/z", Some(&zz), Some(&swapped)).unwrap().unwrap();
            view.insert(b"f/z".to_vec(), swapped);
            let w = value(l.big, seed + 4);
            tx.compare_and_swap(&t, &wk, None, Some(&w)).unwrap().unwrap();
            let refused = tx.compare_and_swap(&t, &wk, None, Some(b"again")).unwrap().unwrap_err();
            assert!(refused.current.as_ref() == Some(&w), "{ctx}");
            view.insert(wk.clone(), w.clone());
            let yv = view[&b"f/y"[..]].clone();
            tx.compare_and_swap(&t, b"f/y", Some(&yv), None).unwrap().unwrap();
            view.remove(&b"f/y"[..]);
            check(Reader::Own(&tx), &t, &view, &keys, 2, &format!("{ctx}: after compare-and-swap"));
            if cfg.versions() {
                check(Reader::Snapshot(&held), &t, &at_start, &keys, 3, &format!("{ctx}: the held snapshot"));
            }
            if si && cfg.versions() {
                // Another transaction replaces k/v after the snapshot began (a different
                // thread: this one's open transaction is a writer of other keys only).
                let newer = value(l.big, seed + 5);
                std::thread::scope(|s| {
                    s.spawn(|| db.transact(|o| o.put(&t, b"k/v", &newer).map(|_| ())).unwrap());
                });
                committed.insert(b"k/v".to_vec(), newer);
                let refused = tx.put(&t, b"k/v", b"mine");
                assert!(matches!(refused, Err(Error::WriteConflict { .. })), "{ctx}: {refused:?}");
                check(Reader::Own(&tx), &t, &view, &keys, 4, &format!("{ctx}: after the write conflict"));
                view.insert(b"k/v".to_vec(), committed[&b"k/v"[..]].clone());
            }
            if commit {
                tx.commit().unwrap();
                committed = view;
            } else {
                tx.abort().unwrap();
            }
            check(Reader::Plain, &t, &committed, &keys, 5, &format!("{ctx}: plain reads after its end"));
            let now = db.begin_read();
            check(Reader::Snapshot(&now), &t, &committed, &keys, 6, &format!("{ctx}: a new snapshot"));
            drop(now);
            if cfg.versions() {
                check(Reader::Snapshot(&held), &t, &at_start, &keys, 7, &format!("{ctx}: the held snapshot"));
            }
            assert_no_leak(&db, &ctx);
        }
        drop(held);
        drop(t);
        db.close().unwrap();
        let db = cfg.builder(&vfs).open("/own.swz").unwrap();
        let t = db.tree("t").unwrap();
        check_all(&t, &committed, &format!("{ctx}: reopened"));
        assert_no_leak(&db, &format!("{ctx}: reopened"));
        drop(t);
        db.close().unwrap();
    }
}

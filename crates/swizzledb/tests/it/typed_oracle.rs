//! Typed trees and scans as a user drives them, against a `BTreeMap` oracle: every
//! `BigEndian` integer type (MIN, MAX, negatives) under random writes, ranges with every bound
//! combination (inverted and empty ones included) read forwards, backwards and from both ends
//! at once, `first`/`last`/`len`/`scan_prefix`/`compare_and_swap`, in every buffer mode, logged
//! or not, with a pool small enough to evict; scans while the same thread writes the tree they
//! read, forwards and backwards with leaves splitting under them; scans of a tree another
//! thread drops; transaction ranges that see their own uncommitted writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

use swizzledb::typed::{BigEndian, Bytes, Codec, Str, TypedTree};
use swizzledb::{Database, Error, PoolMode, TreeError};

use crate::common::XorShift as Rng;

/// A record as the byte API returns it.
type Rec = (Vec<u8>, Vec<u8>);

/// One configuration: buffer mode, logged or not.
#[derive(Clone, Copy, Debug)]
struct Config {
    mode: PoolMode,
    logged: bool,
}

fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for mode in PoolMode::ALL {
        for logged in [true, false] {
            all.push(Config { mode, logged });
        }
    }
    all
}

/// 4 KiB pages, 24 frames (eviction all the time; 16 MiB in main-memory mode, which cannot
/// evict).
fn open(c: Config) -> Database {
    Database::builder()
        .mode(c.mode)
        .page_size(4096)
        .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 24 * 4096 })
        .logging(c.logged)
        .create_in_memory()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

/// Whether `k` lies between `s` and `e`, as `BTreeMap::range` would take them (which panics on
/// inverted bounds; a tree's range is empty then).
fn within<T: Ord>(k: &T, s: &Bound<T>, e: &Bound<T>) -> bool {
    let lo = match s {
        Unbounded => true,
        Included(s) => k >= s,
        Excluded(s) => k > s,
    };
    let hi = match e {
        Unbounded => true,
        Included(e) => k <= e,
        Excluded(e) => k < e,
    };
    lo && hi
}

fn borrow<T>(b: &Bound<T>) -> Bound<&T> {
    match b {
        Unbounded => Unbounded,
        Included(k) => Included(k),
        Excluded(k) => Excluded(k),
    }
}

/// Reads `it` taking from the front or the back as `rng` says; returns the items in ascending
/// order (front run, then the back run reversed), and checks the iterator stays ended.
fn both_ends<T: Debug, I: DoubleEndedIterator<Item = Result<T, Error>>>(
    mut it: I,
    rng: &mut Rng,
    ctx: &str,
) -> Vec<T> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let from_front = rng.next().is_multiple_of(2);
        let item = if from_front { it.next() } else { it.next_back() };
        match item {
            None => break,
            Some(Ok(x)) if from_front => front.push(x),
            Some(Ok(x)) => back.push(x),
            Some(Err(e)) => panic!("{ctx}: {e}"),
        }
    }
    assert!(it.next().is_none() && it.next_back().is_none(), "{ctx}: the iterator goes on after its end");
    back.reverse();
    front.extend(back);
    front
}

/// A value of 0 to 299 bytes, so that a few hundred records fill many 4 KiB leaves.
fn value(rng: &mut Rng) -> Vec<u8> {
    let len = (rng.next() % 300) as usize;
    let b = rng.next() as u8;
    vec![b; len]
}

/// Random writes and reads of a `TypedTree<BigEndian<T>, Bytes>` against a `BTreeMap<T, _>`;
/// `pick` draws a key (edges included).
fn integer_oracle<T>(db: &Database, name: &str, seed: u64, steps: usize, pick: impl Fn(&mut Rng) -> T)
where
    T: Copy + Ord + Debug,
    BigEndian<T>: Codec<Item = T, Owned = T>,
{
    let t: TypedTree<BigEndian<T>, Bytes> = TypedTree::new(db.create_tree(name).unwrap());
    let mut oracle: BTreeMap<T, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(seed);
    for step in 0..steps {
        let ctx = format!("{name} seed {seed} step {step}");
        let k = pick(&mut rng);
        match rng.next() % 10 {
            0..=2 => {
                let v = value(&mut rng);
                assert_eq!(t.upsert(&k, &v).unwrap(), oracle.insert(k, v).is_some(), "{ctx}: upsert {k:?}");
            }
            3 => {
                let v = value(&mut rng);
                match t.insert(&k, &v) {
                    Ok(()) => assert!(oracle.insert(k, v).is_none(), "{ctx}: insert of a present {k:?}"),
                    Err(Error::Tree(TreeError::DuplicateKey)) => {
                        assert!(oracle.contains_key(&k), "{ctx}: duplicate {k:?} refused but absent")
                    }
                    Err(e) => panic!("{ctx}: insert {k:?}: {e}"),
                }
            }
            4 => assert_eq!(t.delete(&k).unwrap(), oracle.remove(&k).is_some(), "{ctx}: delete {k:?}"),
            5 => {
                let (expected, new) = (rng.next().is_multiple_of(2), rng.next() % 3);
                let expected = if expected { oracle.get(&k).cloned() } else { Some(value(&mut rng)) };
                let new = (new != 0).then(|| value(&mut rng));
                let got = t.compare_and_swap(&k, expected.as_deref(), new.as_deref()).unwrap();
                if oracle.get(&k) == expected.as_ref() {
                    assert_eq!(got, Ok(()), "{ctx}: cas {k:?}");
                    match new {
                        Some(v) => oracle.insert(k, v),
                        None => oracle.remove(&k),
                    };
                } else {
                    assert_eq!(got, Err(oracle.get(&k).cloned()), "{ctx}: refused cas {k:?}");
                }
            }
            6 | 7 => {
                let bound = |rng: &mut Rng| match rng.next() % 3 {
                    0 => Unbounded,
                    1 => Included(pick(rng)),
                    _ => Excluded(pick(rng)),
                };
                let (s, e) = (bound(&mut rng), bound(&mut rng));
                let want: Vec<(T, Vec<u8>)> =
                    oracle.iter().filter(|(k, _)| within(*k, &s, &e)).map(|(k, v)| (*k, v.clone())).collect();
                let ctx = format!("{ctx}: range {s:?}..{e:?}");
                let fwd: Vec<_> = t.range(borrow(&s), borrow(&e)).unwrap().map(|r| r.unwrap()).collect();
                assert_eq!(fwd, want, "{ctx} forwards");
                let mut rev: Vec<_> =
                    t.range(borrow(&s), borrow(&e)).unwrap().rev().map(|r| r.unwrap()).collect();
                rev.reverse();
                assert_eq!(rev, want, "{ctx} backwards");
                assert_eq!(
                    both_ends(t.range(borrow(&s), borrow(&e)).unwrap(), &mut rng, &ctx),
                    want,
                    "{ctx} both ends"
                );
            }
            8 => {
                assert_eq!(
                    t.first().unwrap(),
                    oracle.first_key_value().map(|(k, v)| (*k, v.clone())),
                    "{ctx}: first"
                );
                assert_eq!(
                    t.last().unwrap(),
                    oracle.last_key_value().map(|(k, v)| (*k, v.clone())),
                    "{ctx}: last"
                );
                assert_eq!(t.len().unwrap(), oracle.len(), "{ctx}: len");
                assert_eq!(t.is_empty().unwrap(), oracle.is_empty(), "{ctx}: is_empty");
                // A fixed-width key's prefix is a whole key: one record or none.
                let one: Vec<_> = t.scan_prefix(&k).unwrap().map(|r| r.unwrap()).collect();
                assert_eq!(
                    one,
                    oracle.get_key_value(&k).map(|(k, v)| (*k, v.clone())).into_iter().collect::<Vec<_>>()
                );
                assert_eq!(t.get(&k).unwrap(), oracle.get(&k).cloned(), "{ctx}: get {k:?}");
            }
            _ => {
                let want: Vec<_> = oracle.iter().map(|(k, v)| (*k, v.clone())).collect();
                assert_eq!(both_ends(t.iter(), &mut rng, &ctx), want, "{ctx}: iter from both ends");
            }
        }
    }
    let all: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
    assert_eq!(all, oracle.into_iter().collect::<Vec<_>>(), "{name} seed {seed}: at the end");
    t.bytes().verify().unwrap_or_else(|e| panic!("{name}: {e}"));
}

/// Draws a key of type `$t`: an edge (MIN, MAX, 0, ±1, MIN+1, MAX-1) one time in three, else
/// near the edges or anywhere, so that ranges often start or end on them.
macro_rules! pick {
    ($t:ty) => {
        |rng: &mut Rng| -> $t {
            let edges = [
                <$t>::MIN,
                <$t>::MAX,
                0 as $t,
                1 as $t,
                <$t>::MIN + 1,
                <$t>::MAX - 1,
                (0 as $t).wrapping_sub(1),
            ];
            let r = rng.next();
            match r % 6 {
                0 | 1 => edges[(r >> 8) as usize % edges.len()],
                2 => <$t>::MIN.wrapping_add((r >> 8) as u8 as $t),
                3 => <$t>::MAX.wrapping_sub((r >> 8) as u8 as $t),
                4 => ((r >> 8) as u8 as $t).wrapping_sub(128 as u8 as $t),
                _ => ((r >> 8) as u128 | (u128::from(rng.next()) << 64)) as $t,
            }
        }
    };
}

#[test]
fn every_integer_codec_follows_a_btreemap_in_every_mode() {
    let seeds: u64 = std::env::var("SWIZZLEDB_TYPED_ORACLE_SEEDS").map_or(1, |s| s.parse().unwrap());
    for (i, c) in
        configs().into_iter().enumerate().flat_map(|(i, c)| (0..seeds).map(move |n| (i as u64 * 1000 + n, c)))
    {
        let db = open(c);
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (i + 1);
        let steps = 220;
        integer_oracle(&db, "u8", seed, steps, pick!(u8));
        integer_oracle(&db, "i8", seed, steps, pick!(i8));
        integer_oracle(&db, "u16", seed, steps, pick!(u16));
        integer_oracle(&db, "i16", seed, steps, pick!(i16));
        integer_oracle(&db, "u32", seed, steps, pick!(u32));
        integer_oracle(&db, "i32", seed, steps, pick!(i32));
        integer_oracle(&db, "u64", seed, steps, pick!(u64));
        integer_oracle(&db, "i64", seed, steps, pick!(i64));
        integer_oracle(&db, "u128", seed, steps, pick!(u128));
        integer_oracle(&db, "i128", seed, steps, pick!(i128));
        db.close().unwrap();
    }
}

/// How a scan of [`scan_while_writing`] reads: forwards, backwards, or from both ends.
#[derive(Clone, Copy, Debug)]
enum Dir {
    Up,
    Down,
    Both,
}

/// A scan of every record of a tree of keys 0, 10, 20, ... while the same thread writes it
/// between the scan's steps: it deletes the key just returned or one ahead of the scan,
/// inserts keys into the gaps on both sides, and rewrites records with long values (leaves
/// split under the scan). Returned keys are strictly ordered and each comes once; every key
/// of the start that was never deleted comes; none comes that never existed. Where the scan
/// reads at a snapshot (logged, the default record locks), it returns exactly the start.
fn scan_while_writing(c: Config, dir: Dir, seed: u64) {
    let db = open(c);
    let t: TypedTree<BigEndian<u32>, Bytes> = TypedTree::new(db.create_tree("t").unwrap());
    let start: Vec<u32> = (0..400).map(|i| i * 10).collect();
    let mut rng = Rng(seed);
    let mut initial = BTreeMap::new();
    for &k in &start {
        let v = value(&mut rng);
        t.insert(&k, &v).unwrap();
        initial.insert(k, v);
    }
    let ctx = format!("{c:?} {dir:?} seed {seed}");
    let mut ever: BTreeSet<u32> = start.iter().copied().collect();
    let mut deleted: BTreeSet<u32> = BTreeSet::new();
    let mut got: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut back: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut it = t.iter();
    loop {
        let from_front = match dir {
            Dir::Up => true,
            Dir::Down => false,
            Dir::Both => rng.next().is_multiple_of(2),
        };
        let item = if from_front { it.next() } else { it.next_back() };
        let (k, v) = match item {
            None => break,
            Some(r) => r.unwrap_or_else(|e| panic!("{ctx}: {e}")),
        };
        // Writes around the key just returned.
        let ahead = |n: u32| if from_front { k.saturating_add(n) } else { k.saturating_sub(n) };
        let behind = |n: u32| if from_front { k.saturating_sub(n) } else { k.saturating_add(n) };
        match rng.next() % 6 {
            0 if t.delete(&k).unwrap() => {
                deleted.insert(k);
            }
            1 => {
                let a = ahead(10 * (1 + (rng.next() % 3) as u32));
                if t.delete(&a).unwrap() {
                    deleted.insert(a);
                }
            }
            2 => {
                for n in [3, 5, 7] {
                    let (a, b) = (ahead(n), behind(n));
                    let long = vec![0xa5; 600];
                    t.upsert(&a, &long).unwrap();
                    t.upsert(&b, &long).unwrap();
                    ever.extend([a, b]);
                }
            }
            3 => {
                // Rewrites a stretch ahead with long values: its leaves split.
                for n in 1..=6 {
                    let a = ahead(10 * n);
                    if ever.contains(&a) && !deleted.contains(&a) {
                        t.upsert(&a, &vec![0x5a; 900]).unwrap();
                    }
                }
            }
            _ => {}
        }
        if from_front {
            got.push((k, v));
        } else {
            back.push((k, v));
        }
    }
    back.reverse();
    got.extend(back);
    let keys: Vec<u32> = got.iter().map(|(k, _)| *k).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{ctx}: keys out of order or twice: {keys:?}");
    if c.logged {
        // A snapshot scan (K22): the records as committed when it was made.
        assert_eq!(got, initial.into_iter().collect::<Vec<_>>(), "{ctx}: not the scan's snapshot");
    } else {
        let seen: BTreeSet<u32> = keys.iter().copied().collect();
        let missing: Vec<u32> =
            start.iter().filter(|k| !deleted.contains(k) && !seen.contains(k)).copied().collect();
        assert!(missing.is_empty(), "{ctx}: keys never deleted and not returned: {missing:?}");
        let strange: Vec<u32> = seen.difference(&ever).copied().collect();
        assert!(strange.is_empty(), "{ctx}: keys that never existed: {strange:?}");
    }
    drop(it);
    t.bytes().verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
    db.close().unwrap();
}

#[test]
fn scans_while_the_same_thread_writes_the_tree() {
    let seeds: u64 = std::env::var("SWIZZLEDB_TYPED_ORACLE_SEEDS").map_or(1, |s| s.parse().unwrap());
    for (i, c) in configs().into_iter().enumerate() {
        for (j, dir) in [Dir::Up, Dir::Down, Dir::Both].into_iter().enumerate() {
            for n in 0..seeds {
                scan_while_writing(c, dir, 0x1234_5678 + (i * 3 + j) as u64 + n * 1000);
            }
        }
    }
}

/// A read transaction's range and prefix scan and a write transaction's own uncommitted
/// writes, through the typed wrapper and the byte API: `range_in` sees the transaction's own
/// puts and deletes, in both directions and from both ends, in a serializable and a snapshot
/// transaction.
#[test]
fn range_in_sees_the_transactions_own_writes() {
    for snapshot in [false, true] {
        let db = Database::builder().page_size(4096).pool_bytes(24 * 4096).create_in_memory().unwrap();
        let t: TypedTree<BigEndian<i16>, Str> = TypedTree::new(db.create_tree("t").unwrap());
        let mut oracle = BTreeMap::new();
        for k in (-300i16..300).step_by(3) {
            t.insert(&k, &format!("v{k}")).unwrap();
            oracle.insert(k, format!("v{k}"));
        }
        let mut tx = if snapshot { db.begin_snapshot() } else { db.begin() };
        let mut rng = Rng(77 + u64::from(snapshot));
        for step in 0..300 {
            let ctx = format!("snapshot {snapshot} step {step}");
            let k = (rng.next() % 700) as i16 - 350;
            match rng.next() % 4 {
                0 => {
                    assert_eq!(
                        t.put_in(&mut tx, &k, &format!("w{k}")).unwrap(),
                        oracle.insert(k, format!("w{k}")).is_some(),
                        "{ctx}"
                    );
                }
                1 => assert_eq!(t.delete_in(&mut tx, &k).unwrap(), oracle.remove(&k).is_some(), "{ctx}"),
                2 => assert_eq!(t.get_in(&tx, &k).unwrap(), oracle.get(&k).cloned(), "{ctx}"),
                _ => {
                    let j = (rng.next() % 700) as i16 - 350;
                    let (s, e) = (Included(k.min(j)), Excluded(k.max(j)));
                    let want: Vec<(i16, String)> = oracle
                        .iter()
                        .filter(|(k, _)| within(*k, &s, &e))
                        .map(|(k, v)| (*k, v.clone()))
                        .collect();
                    let got: Vec<_> =
                        t.range_in(&tx, borrow(&s), borrow(&e)).unwrap().map(|r| r.unwrap()).collect();
                    assert_eq!(got, want, "{ctx}: {s:?}..{e:?}");
                    let got = both_ends(t.range_in(&tx, borrow(&s), borrow(&e)).unwrap(), &mut rng, &ctx);
                    assert_eq!(got, want, "{ctx}: {s:?}..{e:?} both ends");
                }
            }
        }
        tx.commit().unwrap();
        let all: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
        assert_eq!(all, oracle.into_iter().collect::<Vec<_>>(), "snapshot {snapshot}: after commit");
    }
}

/// A scan of a tree that is dropped while it reads (btree README T25): what it returns after
/// the drop is records of the dropped tree, in order, or `Dropped` once and then the end; never
/// a record of the trees created afterwards on the freed pages, never a panic or a hang. Both
/// directions, every buffer mode, logged or not.
#[test]
fn a_scan_of_a_dropped_tree_returns_its_records_or_dropped_never_the_next_trees() {
    for c in configs() {
        for dir in [Dir::Up, Dir::Down, Dir::Both] {
            let ctx = format!("{c:?} {dir:?}");
            let db = open(c);
            let t: TypedTree<BigEndian<u32>, Bytes> = TypedTree::new(db.create_tree("old").unwrap());
            for k in 0..600u32 {
                t.insert(&k, &[1; 100]).unwrap();
            }
            let mut it = t.iter();
            let mut rng = Rng(5);
            let mut got = Vec::new();
            for _ in 0..20 {
                let r = if matches!(dir, Dir::Down) { it.next_back() } else { it.next() };
                got.push(r.unwrap().unwrap().0);
            }
            // Another thread drops the tree, and fills the freed pages with a new tree of the
            // same name and another of keys the old one had, with other values.
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(db.drop_tree("old").unwrap());
                    for name in ["old", "new"] {
                        let n: TypedTree<BigEndian<u32>, Bytes> =
                            TypedTree::new(db.create_tree(name).unwrap());
                        for k in 0..700u32 {
                            n.insert(&k, &[2; 100]).unwrap();
                        }
                    }
                });
            });
            let mut errors = 0;
            loop {
                let from_front = match dir {
                    Dir::Up => true,
                    Dir::Down => false,
                    Dir::Both => rng.next().is_multiple_of(2),
                };
                match if from_front { it.next() } else { it.next_back() } {
                    None => break,
                    Some(Ok((k, v))) => {
                        assert_eq!(errors, 0, "{ctx}: a record after the error");
                        assert!(k < 600 && v == vec![1; 100], "{ctx}: {k} with another tree's value {v:?}");
                        got.push(k);
                    }
                    Some(Err(Error::Tree(TreeError::Dropped))) => errors += 1,
                    Some(Err(e)) => panic!("{ctx}: {e}"),
                }
                assert!(got.len() + errors <= 1000, "{ctx}: the scan does not end");
            }
            assert!(errors <= 1, "{ctx}: {errors} errors");
            got.sort_unstable();
            let n = got.len();
            got.dedup();
            assert_eq!(n, got.len(), "{ctx}: a key twice");
            assert!(matches!(t.get(&1), Err(Error::Tree(TreeError::Dropped))), "{ctx}");
            assert!(matches!(t.first(), Err(Error::Tree(TreeError::Dropped))), "{ctx}");
            assert!(t.iter().all(|r| matches!(r, Err(Error::Tree(TreeError::Dropped)))), "{ctx}");
            db.close().unwrap();
        }
    }
}

/// Byte prefix scans through the typed wrapper at the edges: prefixes of `0xff` bytes (no
/// upper bound), the empty prefix (everything), prefixes longer than every key, from both
/// ends; and `Tree::scan_prefix_rev` reads the same records backwards.
#[test]
fn prefix_scans_at_the_byte_edges_match_a_btreemap() {
    for c in configs() {
        let db = open(c);
        let t: TypedTree<Bytes, BigEndian<u64>> = TypedTree::new(db.create_tree("t").unwrap());
        let mut oracle: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        let mut rng = Rng(99);
        let alphabet = [0x00u8, 0x01, 0x7f, 0xfe, 0xff];
        for i in 0..700u64 {
            let len = (rng.next() % 7) as usize;
            let k: Vec<u8> = (0..len).map(|_| alphabet[(rng.next() % 5) as usize]).collect();
            t.upsert(&k, &i).unwrap();
            oracle.insert(k, i);
        }
        let mut prefixes: Vec<Vec<u8>> =
            vec![vec![], vec![0xff], vec![0xff; 2], vec![0xff; 6], vec![0xff; 7], vec![0x00], vec![0; 7]];
        prefixes.extend([
            vec![0xfe, 0xff],
            vec![0x7f, 0xff, 0xff],
            vec![0x01; 8],
            vec![0xff, 0x00],
            vec![0xfe],
        ]);
        for p in prefixes {
            let ctx = format!("{c:?} prefix {p:02x?}");
            let want: Vec<(Vec<u8>, u64)> =
                oracle.iter().filter(|(k, _)| k.starts_with(&p)).map(|(k, v)| (k.clone(), *v)).collect();
            let got: Vec<_> = t.scan_prefix(&p).unwrap().map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "{ctx}");
            assert_eq!(both_ends(t.scan_prefix(&p).unwrap(), &mut rng, &ctx), want, "{ctx} both ends");
            let mut rev: Vec<(Vec<u8>, u64)> = t
                .bytes()
                .scan_prefix_rev(&p)
                .map(|r| r.map(|(k, v)| (k, u64::from_be_bytes(v.try_into().unwrap()))).unwrap())
                .collect();
            rev.reverse();
            assert_eq!(rev, want, "{ctx} scan_prefix_rev");
            let limited: Vec<_> = t.bytes().scan_prefix(&p).limit(3).map(|r| r.unwrap().0).collect();
            assert_eq!(
                limited,
                want.iter().take(3).map(|(k, _)| k.clone()).collect::<Vec<_>>(),
                "{ctx} limit 3"
            );
            let limited: Vec<_> = t.bytes().scan_prefix_rev(&p).limit(3).map(|r| r.unwrap().0).collect();
            assert_eq!(
                limited,
                want.iter().rev().take(3).map(|(k, _)| k.clone()).collect::<Vec<_>>(),
                "{ctx} rev limit 3"
            );
        }
        db.close().unwrap();
    }
}

/// A byte tree read through codecs that do not fit its bytes: every read that meets such a
/// record is `Error::Codec` (never a panic), the others read on; text that is not UTF-8 too.
#[test]
fn wrong_codecs_give_codec_errors_in_every_read() {
    let db = Database::builder().create_in_memory().unwrap();
    let raw = db.create_tree("raw").unwrap();
    raw.insert(b"", b"").unwrap();
    raw.insert(&[0xff, 0xfe, 0xfd], &[0xc3, 0x28]).unwrap();
    raw.insert(b"abcd", b"1234").unwrap();
    let ints: TypedTree<BigEndian<u32>, BigEndian<i32>> = TypedTree::new(raw.clone());
    let items: Vec<_> = ints.iter().collect();
    assert_eq!(items.len(), 3);
    assert!(matches!(items[0], Err(Error::Codec { .. })), "{items:?}");
    assert!(
        matches!(items[1], Ok((0x6162_6364, v)) if v == i32::from_be_bytes(*b"1234") ^ i32::MIN),
        "{items:?}"
    );
    assert!(matches!(items[2], Err(Error::Codec { .. })), "{items:?}");
    assert!(matches!(ints.first(), Err(Error::Codec { .. })));
    assert!(matches!(ints.last(), Err(Error::Codec { .. })));
    assert!(matches!(
        ints.range(Included(&0), Unbounded).unwrap().next_back(),
        Some(Err(Error::Codec { .. }))
    ));
    assert_eq!(ints.scan_prefix(&0x6162_6364).unwrap().count(), 1);
    let text: TypedTree<Str, Str> = TypedTree::new(raw.clone());
    let items: Vec<_> = text.iter().collect();
    assert!(matches!(items[0], Ok((ref k, ref v)) if k.is_empty() && v.is_empty()), "{items:?}");
    assert!(items[1].is_ok());
    assert!(matches!(items[2], Err(Error::Codec { .. })), "{items:?}");
    assert!(matches!(text.get("abcd"), Ok(Some(ref v)) if v == "1234"));
    assert!(matches!(text.last(), Err(Error::Codec { .. })));
    assert!(matches!(text.compare_and_swap("abcd", Some("x"), None), Ok(Err(Some(ref v))) if v == "1234"));
    // Writing through the typed wrapper never needs a decode.
    assert!(text.upsert("abcd", "x").unwrap());
    assert_eq!(text.len().unwrap(), 3);
}

/// How [`scans_beside_a_writer`] reads.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// `TypedTree::range`, from the ends [`Dir`] says.
    Handle(Dir),
    /// `TypedTree::range_in` in a serializable transaction (the lock gate, next-key locks).
    Locked(Dir),
    /// `ReadTransaction::range` of a read-committed transaction.
    Committed(Dir),
}

/// Scans from one thread while another writes the same tree: the writer inserts, rewrites
/// (with long and short values, so leaves split and empty) and deletes keys that are not
/// multiples of 10; the multiples of 10 stay as written. Every scan returns strictly ordered
/// keys, every multiple of 10 in its range exactly once with its value, and no key the writer
/// never wrote.
fn scans_beside_a_writer(c: Config, locking: bool, reader: Reader, seed: u64) {
    let ctx = format!("{c:?} locking {locking} {reader:?}");
    let db = Database::builder()
        .mode(c.mode)
        .page_size(4096)
        .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 24 * 4096 })
        .logging(c.logged)
        .lab(|l| l.locking(locking))
        .create_in_memory()
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let t: TypedTree<BigEndian<u32>, Bytes> = TypedTree::new(db.create_tree("t").unwrap());
    // One stable key in three, and one write in four, holds a value in overflow pages (T22).
    let stable = |k: u32| vec![(k / 10) as u8; if k.is_multiple_of(30) { 1500 } else { 40 }];
    for k in (0..3000).step_by(10) {
        t.insert(&k, &stable(k)).unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = Rng(seed ^ 0xabcd);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = (rng.next() % 3000) as u32 | 1;
                let r = match rng.next() % 4 {
                    0 => t.delete(&k).map(|_| ()),
                    1 => t.upsert(&k, &[0xee; 500]).map(|_| ()),
                    2 => t.upsert(&k, &[0xcc; 2000]).map(|_| ()),
                    _ => t.upsert(&k, &[0xdd; 8]).map(|_| ()),
                };
                match r {
                    Ok(()) | Err(Error::Lock(_)) => {}
                    Err(e) => panic!("{ctx}: writer: {e}"),
                }
            }
        });
        let mut rng = Rng(seed);
        let mut scans = 0;
        let want_scans: u64 =
            std::env::var("SWIZZLEDB_TYPED_ORACLE_SCANS").map_or(25, |s| s.parse().unwrap());
        while scans < want_scans {
            let lo = (rng.next() % 3000) as u32;
            let hi = lo + (rng.next() % 1500) as u32;
            let (s, e) = (Included(lo), Excluded(hi));
            let ctx = format!("{ctx} scan {scans} {s:?}..{e:?}");
            let dir = match reader {
                Reader::Handle(d) | Reader::Locked(d) | Reader::Committed(d) => d,
            };
            let read = |it: &mut dyn DoubleEndedIterator<Item = Result<(u32, Vec<u8>), Error>>,
                        rng: &mut Rng| {
                let (mut front, mut back) = (Vec::new(), Vec::new());
                loop {
                    let from_front = match dir {
                        Dir::Up => true,
                        Dir::Down => false,
                        Dir::Both => rng.next().is_multiple_of(2),
                    };
                    match if from_front { it.next() } else { it.next_back() } {
                        None => break,
                        Some(Ok(kv)) if from_front => front.push(kv),
                        Some(Ok(kv)) => back.push(kv),
                        Some(Err(e)) => return Err(e),
                    }
                }
                back.reverse();
                front.extend(back);
                Ok(front)
            };
            let got = match reader {
                Reader::Handle(_) => read(&mut t.range(borrow(&s), borrow(&e)).unwrap(), &mut rng),
                Reader::Locked(_) => {
                    let tx = db.begin();
                    let r = read(&mut t.range_in(&tx, borrow(&s), borrow(&e)).unwrap(), &mut rng);
                    drop(tx);
                    r
                }
                Reader::Committed(_) => {
                    let rt = db.begin_read_committed();
                    let lo = lo.to_be_bytes();
                    let hi = hi.to_be_bytes();
                    let mut it = rt.range(t.bytes(), Included(&lo[..]), Excluded(&hi[..])).map(|r| {
                        r.map_err(Error::from).map(|(k, v)| (u32::from_be_bytes(k.try_into().unwrap()), v))
                    });
                    read(&mut it, &mut rng)
                }
            };
            let got = match got {
                Ok(got) => got,
                Err(Error::Lock(_)) => continue,
                Err(e) => panic!("{ctx}: {e}"),
            };
            scans += 1;
            let keys: Vec<u32> = got.iter().map(|(k, _)| *k).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "{ctx}: out of order or twice: {keys:?}");
            for (k, v) in &got {
                assert!(within(k, &s, &e), "{ctx}: {k} out of range");
                if k % 10 == 0 {
                    assert_eq!(*v, stable(*k), "{ctx}: value of {k}");
                } else {
                    let written = [&[0xee; 500][..], &[0xcc; 2000][..], &[0xdd; 8][..]];
                    assert!(k % 2 == 1 && written.contains(&v.as_slice()), "{ctx}: {k} never written");
                }
            }
            let tens: Vec<u32> = keys.iter().copied().filter(|k| k % 10 == 0).collect();
            let want: Vec<u32> = (0..3000).step_by(10).filter(|k| within(k, &s, &e)).collect();
            assert_eq!(tens, want, "{ctx}: the stable keys");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    t.bytes().verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
}

#[test]
fn scans_beside_a_writer_return_every_stable_key_once() {
    let mut n = 0;
    for c in configs() {
        for locking in [true, false] {
            let mut readers =
                vec![Reader::Handle(Dir::Up), Reader::Handle(Dir::Down), Reader::Handle(Dir::Both)];
            if c.logged {
                readers.extend([
                    Reader::Locked(Dir::Up),
                    Reader::Locked(Dir::Down),
                    Reader::Locked(Dir::Both),
                ]);
                readers.extend([Reader::Committed(Dir::Both)]);
            }
            for r in readers {
                n += 1;
                scans_beside_a_writer(c, locking, r, 0x5eed + n);
            }
        }
    }
}

/// `limit(n)` counts the records of both ends together, on a handle's scan (a snapshot's when
/// logged) and a transaction's: `n` records or the whole range, whichever is fewer, each once,
/// the front ones the range's first and the back ones its last.
#[test]
fn a_limited_scan_read_from_both_ends_returns_n_records_once() {
    for c in configs() {
        let db = open(c);
        let t = db.create_tree("t").unwrap();
        let keys: Vec<Vec<u8>> = (0..500u32).map(|k| (k * 2).to_be_bytes().to_vec()).collect();
        for k in &keys {
            t.insert(k, &[7; 60]).unwrap();
        }
        let mut rng = Rng(3);
        for round in 0..60 {
            let n = (rng.next() % 12) as usize + if round % 3 == 0 { 400 } else { 0 };
            let lo = (rng.next() % 1100) as u32;
            let hi = lo + (rng.next() % 300) as u32;
            let (lo, hi) = (lo.to_be_bytes(), hi.to_be_bytes());
            let want: Vec<&Vec<u8>> =
                keys.iter().filter(|k| k.as_slice() >= &lo[..] && k.as_slice() < &hi[..]).collect();
            let ctx = format!("{c:?} round {round} limit {n} of {}", want.len());
            for which in 0..3 {
                let mut front = Vec::new();
                let mut back = Vec::new();
                let tx = db.begin();
                let mut it: Box<dyn DoubleEndedIterator<Item = Result<Rec, Error>>> = match which {
                    0 => Box::new(
                        t.range(Included(&lo[..]), Excluded(&hi[..]))
                            .limit(n)
                            .map(|r| r.map_err(Error::from)),
                    ),
                    1 => Box::new(
                        t.range_rev(Included(&lo[..]), Excluded(&hi[..]))
                            .limit(n)
                            .rev()
                            .map(|r| r.map_err(Error::from)),
                    ),
                    _ => Box::new(tx.range(&t, Included(&lo[..]), Excluded(&hi[..])).limit(n)),
                };
                loop {
                    let f = rng.next().is_multiple_of(2);
                    match if f { it.next() } else { it.next_back() } {
                        None => break,
                        Some(r) => {
                            let k = r.unwrap_or_else(|e| panic!("{ctx}: {e}")).0;
                            if f {
                                front.push(k)
                            } else {
                                back.push(k)
                            }
                        }
                    }
                }
                assert!(it.next().is_none() && it.next_back().is_none(), "{ctx} {which}: not fused");
                drop(it);
                let total = n.min(want.len());
                assert_eq!(front.len() + back.len(), total, "{ctx} {which}: {front:?} {back:?}");
                assert_eq!(
                    front.iter().collect::<Vec<_>>(),
                    want[..front.len()].to_vec(),
                    "{ctx} {which}: front"
                );
                back.reverse();
                assert_eq!(
                    back.iter().collect::<Vec<_>>(),
                    want[want.len() - back.len()..].to_vec(),
                    "{ctx} {which}: back"
                );
            }
        }
        db.close().unwrap();
    }
}

/// `approximate_len` is exact for a tree of one leaf, also after deletes (the pages hold no
/// record a committed delete removed), and `len`/`is_empty` follow every delete; a tree
/// emptied from many leaves counts none.
#[test]
fn counts_after_deletes() {
    for c in configs() {
        let db = open(c);
        let t: TypedTree<BigEndian<u16>, Bytes> = TypedTree::new(db.create_tree("t").unwrap());
        for k in 0..10u16 {
            t.insert(&k, b"v").unwrap();
        }
        for k in (0..10u16).step_by(2) {
            assert!(t.delete(&k).unwrap());
        }
        assert_eq!((t.len().unwrap(), t.approximate_len().unwrap()), (5, 5), "{c:?}: one leaf");
        for k in 100..1100u16 {
            t.insert(&k, &[1; 50]).unwrap();
        }
        for k in 100..1100u16 {
            assert!(t.delete(&k).unwrap());
        }
        assert_eq!(t.len().unwrap(), 5, "{c:?}");
        for k in (1..10u16).step_by(2) {
            assert!(t.delete(&k).unwrap());
        }
        assert!(t.is_empty().unwrap(), "{c:?}");
        assert_eq!((t.len().unwrap(), t.first().unwrap(), t.last().unwrap()), (0, None, None), "{c:?}");
        assert_eq!(t.approximate_len().unwrap(), 0, "{c:?}: an empty tree");
        db.close().unwrap();
    }
}

/// A read transaction's prefix scans and descending ranges at the byte edges (prefixes of
/// `0xff`, the empty prefix, a prefix longer than every key), from both ends, while the same
/// thread changes the tree: `begin_read` returns its snapshot's records; `begin_read_committed`
/// those committed when each scan began, although the thread writes between its steps.
#[test]
fn read_transaction_scans_hold_their_snapshot_while_the_thread_writes() {
    for c in configs().into_iter().filter(|c| c.logged) {
        let db = open(c);
        let t = db.create_tree("t").unwrap();
        let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut rng = Rng(11);
        let alphabet = [0x00u8, 0x01, 0xfe, 0xff];
        let key = |rng: &mut Rng| -> Vec<u8> {
            let len = 1 + (rng.next() % 5) as usize;
            (0..len).map(|_| alphabet[(rng.next() % 4) as usize]).collect()
        };
        for _ in 0..500 {
            let (k, v) = (key(&mut rng), value(&mut rng));
            t.upsert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        let prefixes: Vec<Vec<u8>> = vec![
            vec![],
            vec![0xff],
            vec![0xff; 3],
            vec![0xff; 5],
            vec![0xff; 6],
            vec![0xfe, 0xff],
            vec![0; 9],
        ];
        for (n, p) in prefixes.iter().enumerate() {
            let committed = n % 2 == 1;
            let rt = if committed { db.begin_read_committed() } else { db.begin_read() };
            let ctx = format!("{c:?} prefix {p:02x?} committed {committed}");
            let want: Vec<Rec> = oracle
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut it = rt.scan_prefix(&t, p);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            loop {
                let f = rng.next().is_multiple_of(2);
                match if f { it.next() } else { it.next_back() } {
                    None => break,
                    Some(r) => {
                        let kv = r.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        if f {
                            front.push(kv)
                        } else {
                            back.push(kv)
                        }
                    }
                }
                // The thread changes the tree between the scan's steps: deletes, inserts,
                // rewrites with long values.
                for _ in 0..3 {
                    let k = key(&mut rng);
                    if rng.next().is_multiple_of(2) {
                        t.delete(&k).unwrap();
                        oracle.remove(&k);
                    } else {
                        let v = vec![0x33; 700];
                        t.upsert(&k, &v).unwrap();
                        oracle.insert(k, v);
                    }
                }
            }
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "{ctx}");
            // A descending range of the same transaction: at the transaction's snapshot, or at
            // a new one for read committed (the tree as it is now).
            let now: Vec<Rec> = oracle.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
            let got: Vec<Rec> = rt.range_rev(&t, Unbounded, Unbounded).map(|r| r.unwrap()).collect();
            if committed {
                assert_eq!(got, now, "{ctx}: range_rev");
            } else {
                assert_eq!(got.len(), rt.range(&t, Unbounded, Unbounded).count(), "{ctx}: range_rev");
            }
        }
        db.close().unwrap();
    }
}

/// `Serde<T>` keys: looked up, written and deleted as the doc says they may be, against a
/// `BTreeMap`; a scan returns every record once, in the order of the encodings' bytes (not of
/// the values: the doc says they do not sort as the values do).
#[cfg(feature = "serde")]
#[test]
fn serde_keys_are_looked_up_and_scanned_in_byte_order() {
    use swizzledb::typed::Serde;
    type Key = (u32, String);
    let db = open(Config { mode: PoolMode::Swizzling, logged: true });
    let t: TypedTree<Serde<(u32, String)>, Serde<Vec<i64>>> = TypedTree::new(db.create_tree("t").unwrap());
    let mut oracle = BTreeMap::new();
    let mut rng = Rng(21);
    for _ in 0..800 {
        let k = ((rng.next() % 400) as u32 * 997, format!("n{}", rng.next() % 7));
        match rng.next() % 3 {
            0 => assert_eq!(t.delete(&k).unwrap(), oracle.remove(&k).is_some()),
            _ => {
                let v: Vec<i64> = (0..rng.next() % 5).map(|i| i as i64 - 2).collect();
                assert_eq!(t.upsert(&k, &v).unwrap(), oracle.insert(k.clone(), v).is_some());
            }
        }
    }
    for (k, v) in &oracle {
        assert_eq!(t.get(k).unwrap().as_ref(), Some(v));
    }
    let mut by_bytes: Vec<(Vec<u8>, Key, Vec<i64>)> = oracle
        .iter()
        .map(|(k, v)| (Serde::<(u32, String)>::encode(k).unwrap().into_owned(), k.clone(), v.clone()))
        .collect();
    by_bytes.sort();
    let want: Vec<((u32, String), Vec<i64>)> = by_bytes.into_iter().map(|(_, k, v)| (k, v)).collect();
    let got: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!(both_ends(t.iter(), &mut rng, "serde"), want);
    assert_eq!(t.len().unwrap(), oracle.len());
}

/// A snapshot scan (T27's overlay) whose tree is dropped ends after its one `Dropped` (btree
/// README T25: "`Closed` or `Dropped` once, then the end"), from whichever end it is asked:
/// the records its other end had gathered are not returned after the error. (They were: a
/// forward `next` after the error returned the back end's gathered records, the range's start
/// never returned, so the scan went on past a stretch it had not read.)
#[test]
fn a_snapshot_scan_ends_at_its_dropped_error_with_records_gathered_at_the_other_end() {
    // Logged: an unlogged database's handle writes keep no versions for snapshots (K21).
    for c in configs().into_iter().filter(|c| c.logged) {
        for first_after in ["next", "next_back"] {
            let ctx = format!("{c:?} {first_after}");
            let db = open(c);
            let t: TypedTree<BigEndian<u32>, Bytes> = TypedTree::new(db.create_tree("t").unwrap());
            for k in 0..600u32 {
                t.insert(&k, &[1; 100]).unwrap();
            }
            let mut it = t.iter();
            // Deleted after the scan's snapshot: the back end finds them between two records
            // of the tree and gathers them.
            for k in 580..599u32 {
                t.delete(&k).unwrap();
            }
            assert_eq!(it.next_back().unwrap().unwrap().0, 599, "{ctx}");
            assert_eq!(it.next_back().unwrap().unwrap().0, 598, "{ctx}");
            assert!(db.drop_tree("t").unwrap());
            let mut after = Vec::new();
            let mut errors = 0;
            // Before the error, the back end may return what it gathered before the drop: the
            // records below 598, in order.
            let mut below = 598;
            for i in 0..1000 {
                let forward = (first_after == "next") == (i % 2 == 0);
                match if forward { it.next() } else { it.next_back() } {
                    None => break,
                    Some(Ok((k, _))) if errors > 0 => after.push(k),
                    Some(Ok((k, _))) if !forward && k + 1 == below => below = k,
                    Some(Ok((k, _))) => panic!("{ctx}: {k} before the error, not the back end's next"),
                    Some(Err(Error::Tree(TreeError::Dropped))) => errors += 1,
                    Some(Err(e)) => panic!("{ctx}: {e}"),
                }
            }
            assert!(after.is_empty(), "{ctx}: records after the error: {after:?}");
            assert!(errors >= 1, "{ctx}: no error");
            db.close().unwrap();
        }
    }
}

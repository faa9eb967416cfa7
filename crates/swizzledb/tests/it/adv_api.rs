//! Edge cases of the public API that a user writing against the docs would try: range bounds
//! (empty, inverted, excluded ends), both ends of a scan, size limits, in every configuration.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use swizzledb::{CommitMode, Database, Error, PoolMode, Tree, TreeError};

/// One configuration of the engine.
#[derive(Clone, Copy, Debug)]
struct Config {
    mode: PoolMode,
    logged: bool,
    locking: bool,
    commit: CommitMode,
}

fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for (logged, locking) in [(true, true), (true, false), (false, true), (false, false)] {
            let commit = if logged && !locking { CommitMode::Async } else { CommitMode::Sync };
            all.push(Config { mode, logged, locking, commit });
        }
    }
    all
}

/// A builder for configuration `c`: 4 KiB pages, 64 frames (16 MiB in main-memory mode).
fn builder(c: &Config) -> swizzledb::Builder {
    Database::builder()
        .mode(c.mode)
        .page_size(4096)
        .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 64 * 4096 })
        .logging(c.logged)
        .commit_mode(c.commit)
        .lab(|l| l.locking(c.locking))
}

fn open(c: Config) -> Database {
    builder(&c).create_in_memory().unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

use crate::common::XorShift as Rng;

impl Rng {
    /// A short key over a small alphabet with the extreme bytes, the empty key included.
    fn key(&mut self) -> Vec<u8> {
        let len = (self.next() % 6) as usize;
        (0..len).map(|_| [0x00, 0x01, 0x7f, 0xfe, 0xff][(self.next() % 5) as usize]).collect()
    }
}

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
type Rec = (Vec<u8>, Vec<u8>);

fn in_range(m: &Map, s: &Bound<Vec<u8>>, e: &Bound<Vec<u8>>) -> Vec<Rec> {
    m.iter()
        .filter(|(k, _)| {
            let lo = match s {
                Unbounded => true,
                Included(b) => *k >= b,
                Excluded(b) => *k > b,
            };
            let hi = match e {
                Unbounded => true,
                Included(b) => *k <= b,
                Excluded(b) => *k < b,
            };
            lo && hi
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn b(x: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    x.as_ref().map(Vec::as_slice)
}

fn bound(r: &mut Rng) -> Bound<Vec<u8>> {
    match r.next() % 3 {
        0 => Unbounded,
        1 => Included(r.key()),
        _ => Excluded(r.key()),
    }
}

/// Alternates `next` and `next_back` by the bits of `pattern`; returns the records in key order.
fn both_ends<I>(mut it: I, mut pattern: u64) -> Result<Vec<Rec>, String>
where
    I: DoubleEndedIterator,
    I::Item: Into<Result<Rec, String>>,
{
    let mut front = Vec::new();
    let mut back = Vec::new();
    loop {
        let item = if pattern & 1 == 0 { it.next() } else { it.next_back() };
        let from_back = pattern & 1 == 1;
        pattern = pattern.rotate_right(1);
        match item {
            None => break,
            Some(i) => {
                let r = i.into()?;
                if from_back {
                    back.push(r)
                } else {
                    front.push(r)
                }
            }
        }
    }
    back.reverse();
    front.extend(back);
    Ok(front)
}

struct Item(Result<Rec, String>);
impl From<Item> for Result<Rec, String> {
    fn from(i: Item) -> Self {
        i.0
    }
}

fn fill(db: &Database, tree: &Tree, r: &mut Rng, n: usize) -> Map {
    let mut m = Map::new();
    for i in 0..n {
        let k = r.key();
        let v = vec![i as u8; (r.next() % 120) as usize];
        tree.upsert(&k, &v).unwrap();
        m.insert(k, v);
    }
    let _ = db;
    m
}

#[test]
fn every_range_bound_pair_reads_what_a_btreemap_reads_from_both_ends() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let mut r = Rng(0x1234_5678_9abc_def1);
        let m = fill(&db, &tree, &mut r, 1000);
        for round in 0..100 {
            let (s, e) = (bound(&mut r), bound(&mut r));
            let want = in_range(&m, &s, &e);
            let mut want_rev = want.clone();
            want_rev.reverse();
            let ctx = format!("{c:?} round {round} {s:?}..{e:?}");
            let got: Vec<Rec> = tree.range(b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want, "Tree::range {ctx}");
            let got: Vec<Rec> = tree.range_rev(b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want_rev, "Tree::range_rev {ctx}");
            let p = r.next();
            let got = both_ends(tree.range(b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p);
            assert_eq!(got.unwrap(), want, "Tree::range both ends {ctx}");
            let mut got =
                both_ends(tree.range_rev(b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p)
                    .unwrap();
            got.reverse();
            assert_eq!(got, want, "Tree::range_rev both ends {ctx}");
            // A read-only transaction.
            let rt = db.begin_read();
            let got: Vec<Rec> = rt.range(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want, "ReadTransaction::range {ctx}");
            let got = both_ends(rt.range(&tree, b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p);
            assert_eq!(got.unwrap(), want, "ReadTransaction::range both ends {ctx}");
            let got: Vec<Rec> = rt.range_rev(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want_rev, "ReadTransaction::range_rev {ctx}");
            drop(rt);
            // A transaction.
            let t = db.begin();
            let got: Vec<Rec> = t.range(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want, "Transaction::range {ctx}");
            let got = both_ends(t.range(&tree, b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p);
            assert_eq!(got.unwrap(), want, "Transaction::range both ends {ctx}");
            let got: Vec<Rec> = t.range_rev(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
            assert_eq!(got, want_rev, "Transaction::range_rev {ctx}");
            let mut got =
                both_ends(t.range_rev(&tree, b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p)
                    .unwrap();
            got.reverse();
            assert_eq!(got, want, "Transaction::range_rev both ends {ctx}");
            t.commit().unwrap();
        }
        // Prefix scans.
        for _ in 0..40 {
            let p = r.key();
            let want: Vec<Rec> =
                m.iter().filter(|(k, _)| k.starts_with(&p)).map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut want_rev = want.clone();
            want_rev.reverse();
            let got: Vec<Rec> = tree.scan_prefix(&p).map(|x| x.unwrap()).collect();
            assert_eq!(got, want, "{c:?} scan_prefix {p:?}");
            let got: Vec<Rec> = tree.scan_prefix_rev(&p).map(|x| x.unwrap()).collect();
            assert_eq!(got, want_rev, "{c:?} scan_prefix_rev {p:?}");
            let got: Vec<Rec> = tree.scan_prefix(&p).rev().map(|x| x.unwrap()).collect();
            assert_eq!(got, want_rev, "{c:?} scan_prefix.rev {p:?}");
            let rt = db.begin_read();
            let got: Vec<Rec> = rt.scan_prefix(&tree, &p).map(|x| x.unwrap()).collect();
            assert_eq!(got, want, "{c:?} ReadTransaction::scan_prefix {p:?}");
        }
        assert_eq!(tree.first().unwrap(), m.first_key_value().map(|(k, v)| (k.clone(), v.clone())));
        assert_eq!(tree.last().unwrap(), m.last_key_value().map(|(k, v)| (k.clone(), v.clone())));
        assert_eq!(tree.len().unwrap(), m.len());
    }
}

#[test]
fn a_transactions_range_reads_its_own_writes_from_both_ends() {
    for c in configs() {
        for snapshot in [false, true] {
            let db = open(c);
            let tree = db.create_tree("t").unwrap();
            let mut r = Rng(0x0bad_cafe_dead_beef);
            let mut m = fill(&db, &tree, &mut r, 800);
            let mut t = if snapshot { db.begin_snapshot() } else { db.begin() };
            for i in 0..60 {
                let k = r.key();
                if r.next().is_multiple_of(3) {
                    let existed = t.delete(&tree, &k).unwrap();
                    assert_eq!(existed, m.remove(&k).is_some(), "{c:?} snapshot {snapshot} delete {k:?}");
                } else {
                    let v = vec![0xa0 ^ i as u8; (r.next() % 30) as usize];
                    let existed = t.put(&tree, &k, &v).unwrap();
                    assert_eq!(
                        existed,
                        m.insert(k.clone(), v).is_some(),
                        "{c:?} snapshot {snapshot} put {k:?}"
                    );
                }
                let (s, e) = (bound(&mut r), bound(&mut r));
                let want = in_range(&m, &s, &e);
                let ctx = format!("{c:?} snapshot {snapshot} step {i} {s:?}..{e:?}");
                let got: Vec<Rec> = t.range(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
                assert_eq!(got, want, "Transaction::range {ctx}");
                let p = r.next();
                let got =
                    both_ends(t.range(&tree, b(&s), b(&e)).map(|x| Item(x.map_err(|e| e.to_string()))), p);
                assert_eq!(got.unwrap(), want, "Transaction::range both ends {ctx}");
                let mut want_rev = want.clone();
                want_rev.reverse();
                let got: Vec<Rec> = t.range_rev(&tree, b(&s), b(&e)).map(|x| x.unwrap()).collect();
                assert_eq!(got, want_rev, "Transaction::range_rev {ctx}");
                for (k, v) in want.iter().take(3) {
                    assert_eq!(t.get(&tree, k).unwrap().as_ref(), Some(v), "get {ctx}");
                }
            }
            t.commit().unwrap();
            let got: Vec<Rec> = tree.range(Unbounded, Unbounded).map(|x| x.unwrap()).collect();
            assert_eq!(got, m.into_iter().collect::<Vec<_>>(), "{c:?} snapshot {snapshot} after commit");
        }
    }
}

#[test]
fn keys_and_values_at_their_limits_in_every_configuration() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let max_key = swizzledb::max_key_len(4096);
        let max_val = tree.max_value_len();
        let ctx = format!("{c:?}");
        // Empty key and value.
        tree.insert(b"", b"").unwrap();
        assert_eq!(tree.get(b"").unwrap(), Some(vec![]), "{ctx}");
        // The exact limits.
        let k = vec![0xee; max_key];
        tree.insert(&k, b"x").unwrap();
        assert_eq!(tree.get(&k).unwrap().as_deref(), Some(&b"x"[..]), "{ctx}");
        let long = vec![0xabu8; max_val];
        tree.upsert(b"long", &long).unwrap();
        assert_eq!(tree.get(b"long").unwrap().as_deref(), Some(&long[..]), "{ctx}");
        // One past them.
        let too_long_key = vec![0xee; max_key + 1];
        assert!(matches!(tree.insert(&too_long_key, b"x"), Err(TreeError::KeyTooLarge { .. })), "{ctx}");
        let too_long = vec![0xcd; max_val + 1];
        assert!(matches!(tree.upsert(b"long", &too_long), Err(TreeError::ValueTooLarge { .. })), "{ctx}");
        assert!(
            matches!(
                tree.compare_and_swap(b"long", Some(&long), Some(&too_long)),
                Err(TreeError::ValueTooLarge { .. })
            ),
            "{ctx}"
        );
        // In a transaction.
        let mut t = db.begin();
        assert!(
            matches!(t.put(&tree, &too_long_key, b"x"), Err(Error::Tree(TreeError::KeyTooLarge { .. }))),
            "{ctx}"
        );
        assert!(
            matches!(t.put(&tree, b"long", &too_long), Err(Error::Tree(TreeError::ValueTooLarge { .. }))),
            "{ctx}"
        );
        assert!(
            matches!(t.insert(&tree, b"new", &too_long), Err(Error::Tree(TreeError::ValueTooLarge { .. }))),
            "{ctx}"
        );
        let r = t.compare_and_swap(&tree, b"long", Some(&long), Some(&too_long));
        assert!(matches!(r, Err(Error::Tree(TreeError::ValueTooLarge { .. }))), "{ctx}: {r:?}");
        let r = t.update_with(&tree, b"long", |_, out| out.extend_from_slice(&too_long));
        assert!(matches!(r, Err(Error::Tree(TreeError::ValueTooLarge { .. }))), "{ctx}: {r:?}");
        let r = t.update_with(&tree, b"", |_, out| out.extend_from_slice(&too_long));
        assert!(matches!(r, Err(Error::Tree(TreeError::ValueTooLarge { .. }))), "{ctx}: {r:?}");
        // Still usable, nothing changed.
        assert_eq!(t.get(&tree, b"long").unwrap().as_deref(), Some(&long[..]), "{ctx}");
        assert_eq!(t.get(&tree, b"").unwrap(), Some(vec![]), "{ctx}");
        t.update_with(&tree, b"", |old, out| {
            assert!(old.is_empty());
            out.extend_from_slice(&long)
        })
        .unwrap();
        t.commit().unwrap();
        assert_eq!(tree.get(b"").unwrap().as_deref(), Some(&long[..]), "{ctx}");
        assert_eq!(tree.get(b"long").unwrap().as_deref(), Some(&long[..]), "{ctx}");
        assert_eq!(tree.len().unwrap(), 3, "{ctx}");
        tree.verify().unwrap();
    }
}

fn all(tree: &Tree) -> Vec<Rec> {
    tree.range(Unbounded, Unbounded).map(|x| x.unwrap()).collect()
}

/// Configurations where the docs promise that plain reads see committed records only, at a
/// snapshot (logged, with record locks).
fn reads_committed(c: Config) -> bool {
    c.logged && c.locking
}

#[test]
fn first_last_is_empty_and_len_ignore_an_open_transactions_changes() {
    for c in configs().into_iter().filter(|c| reads_committed(*c)) {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        // An empty tree with an uncommitted insert.
        let mut t = db.begin();
        t.put(&tree, b"m", b"1").unwrap();
        assert!(tree.is_empty().unwrap(), "{ctx}: is_empty sees an uncommitted insert");
        assert_eq!(tree.first().unwrap(), None, "{ctx}");
        assert_eq!(tree.last().unwrap(), None, "{ctx}");
        assert_eq!(tree.len().unwrap(), 0, "{ctx}");
        t.commit().unwrap();
        for k in 0..500u32 {
            tree.upsert(format!("k{k:04}").as_bytes(), &[7; 50]).unwrap();
        }
        let committed = all(&tree);
        // Uncommitted inserts before the first and after the last key, deletes of both ends.
        let mut t = db.begin();
        t.put(&tree, b"a", b"new").unwrap();
        t.put(&tree, b"z", b"new").unwrap();
        t.delete(&tree, b"k0000").unwrap();
        t.delete(&tree, b"m").unwrap();
        assert_eq!(tree.first().unwrap(), committed.first().cloned(), "{ctx}: first");
        assert_eq!(tree.last().unwrap(), committed.last().cloned(), "{ctx}: last");
        assert_eq!(tree.len().unwrap(), committed.len(), "{ctx}: len");
        assert!(!tree.is_empty().unwrap(), "{ctx}");
        assert_eq!(tree.scan_prefix(b"k").count(), 500, "{ctx}");
        let got: Vec<Rec> = tree.range(Unbounded, Unbounded).rev().map(|x| x.unwrap()).collect();
        assert_eq!(got.len(), committed.len(), "{ctx}: reversed");
        let rt = db.begin_read();
        assert_eq!(rt.range(&tree, Unbounded, Unbounded).count(), committed.len(), "{ctx}: read txn");
        drop(rt);
        t.abort().unwrap();
        assert_eq!(all(&tree), committed, "{ctx}: after the abort");
    }
}

#[test]
fn a_scan_made_before_commits_returns_the_records_as_committed_when_it_was_made() {
    for c in configs().into_iter().filter(|c| reads_committed(*c)) {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..600u32 {
            tree.upsert(format!("k{k:04}").as_bytes(), &[1; 60]).unwrap();
        }
        let before = all(&tree);
        let mut fwd = tree.range(Unbounded, Unbounded);
        let mut bwd = tree.range_rev(Unbounded, Unbounded);
        let mut both = tree.range(Included(&b"k0100"[..]), Excluded(&b"k0500"[..]));
        let mut prefix = tree.scan_prefix(b"k02");
        let first_fwd = fwd.next().unwrap().unwrap();
        // Changes committed while the scans are open, in this thread.
        for k in (0..600u32).step_by(3) {
            tree.delete(format!("k{k:04}").as_bytes()).unwrap();
        }
        for k in 0..600u32 {
            tree.upsert(format!("k{k:04}x").as_bytes(), &[2; 60]).unwrap();
        }
        db.transact(|t| {
            for k in (1..600u32).step_by(3) {
                t.put(&tree, format!("k{k:04}").as_bytes(), &[3; 70])?;
            }
            Ok(())
        })
        .unwrap();
        let mut got = vec![first_fwd];
        got.extend(fwd.map(|x| x.unwrap()));
        assert_eq!(got, before, "{ctx}: forward");
        let mut got: Vec<Rec> = bwd.by_ref().map(|x| x.unwrap()).collect();
        got.reverse();
        assert_eq!(got, before, "{ctx}: backward");
        let want: Vec<Rec> =
            before.iter().filter(|(k, _)| &k[..] >= b"k0100" && &k[..] < b"k0500").cloned().collect();
        let got = both_ends(both.by_ref().map(|x| Item(x.map_err(|e| e.to_string()))), 0x5555_1234).unwrap();
        assert_eq!(got, want, "{ctx}: both ends");
        let want: Vec<Rec> = before.iter().filter(|(k, _)| k.starts_with(b"k02")).cloned().collect();
        let got: Vec<Rec> = prefix.by_ref().map(|x| x.unwrap()).collect();
        assert_eq!(got, want, "{ctx}: prefix");
    }
}

#[test]
fn a_transaction_over_several_trees_commits_and_rolls_back_as_a_whole() {
    for c in configs() {
        let db = open(c);
        let trees: Vec<Tree> = (0..4).map(|i| db.create_tree(&format!("t{i}")).unwrap()).collect();
        let ctx = format!("{c:?}");
        for (i, t) in trees.iter().enumerate() {
            for k in 0..100u32 {
                t.upsert(&k.to_be_bytes(), &[i as u8; 30]).unwrap();
            }
        }
        let before: Vec<Vec<Rec>> = trees.iter().map(all).collect();
        for end in 0..3 {
            let mut t = db.begin();
            for (i, tree) in trees.iter().enumerate() {
                for k in (i as u32..300).step_by(4) {
                    if k % 3 == 0 {
                        t.delete(tree, &k.to_be_bytes()).unwrap();
                    } else {
                        t.put(tree, &k.to_be_bytes(), &[0xee; 200]).unwrap();
                    }
                }
            }
            match end {
                0 => t.abort().unwrap(),
                1 => drop(t),
                _ => {
                    // A failing write in the middle changes nothing, the rest still rolls back.
                    let r = t.insert(&trees[0], &1u32.to_be_bytes(), b"dup");
                    assert!(matches!(r, Err(Error::Tree(TreeError::DuplicateKey))), "{ctx}: {r:?}");
                    drop(t)
                }
            }
            let after: Vec<Vec<Rec>> = trees.iter().map(all).collect();
            assert_eq!(after, before, "{ctx}: end {end}");
        }
        let mut t = db.begin();
        t.put(&trees[0], b"x", b"0").unwrap();
        t.put(&trees[3], b"x", b"3").unwrap();
        t.delete(&trees[1], &5u32.to_be_bytes()).unwrap();
        t.commit().unwrap();
        assert_eq!(trees[0].get(b"x").unwrap().as_deref(), Some(&b"0"[..]), "{ctx}");
        assert_eq!(trees[3].get(b"x").unwrap().as_deref(), Some(&b"3"[..]), "{ctx}");
        assert_eq!(trees[1].get(&5u32.to_be_bytes()).unwrap(), None, "{ctx}");
        for t in &trees {
            t.verify().unwrap();
        }
    }
}

#[test]
fn transact_rolls_back_what_the_closure_wrote_before_its_error() {
    for c in configs() {
        for snapshot in [false, true] {
            let db = open(c);
            let tree = db.create_tree("t").unwrap();
            let other = db.create_tree("u").unwrap();
            tree.upsert(b"a", b"1").unwrap();
            let ctx = format!("{c:?} snapshot {snapshot}");
            let body = |t: &mut swizzledb::Transaction<'_>| -> swizzledb::Result<()> {
                t.put(&tree, b"a", b"2")?;
                t.put(&other, b"b", b"2")?;
                t.put(&tree, &[0u8; 5000], b"too long a key")?;
                Ok(())
            };
            let r = if snapshot { db.transact_snapshot(body) } else { db.transact(body) };
            assert!(matches!(r, Err(Error::Tree(TreeError::KeyTooLarge { .. }))), "{ctx}: {r:?}");
            assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{ctx}");
            assert_eq!(other.get(b"b").unwrap(), None, "{ctx}");
            let abort = |t: &mut swizzledb::Transaction<'_>| -> swizzledb::Result<()> {
                t.put(&tree, b"a", b"3")?;
                Err(Error::Aborted("no".into()))
            };
            let r = if snapshot { db.transact_snapshot(abort) } else { db.transact(abort) };
            assert!(matches!(r, Err(Error::Aborted(ref s)) if s == "no"), "{ctx}: {r:?}");
            assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{ctx}");
            let ok = |t: &mut swizzledb::Transaction<'_>| -> swizzledb::Result<u32> {
                t.put(&tree, b"a", b"4")?;
                Ok(7)
            };
            let r = if snapshot { db.transact_snapshot(ok) } else { db.transact(ok) };
            assert_eq!(r.unwrap(), 7, "{ctx}");
            assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"4"[..]), "{ctx}");
        }
    }
}

#[test]
fn compare_and_swap_and_update_with_at_every_edge() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        // Tree handle.
        let r = tree.compare_and_swap(b"k", Some(b"x"), Some(b"y")).unwrap();
        assert_eq!(r.unwrap_err().current, None, "{ctx}");
        assert!(tree.compare_and_swap(b"k", None, None).unwrap().is_ok(), "{ctx}: absent to absent");
        assert_eq!(tree.get(b"k").unwrap(), None, "{ctx}");
        assert!(tree.compare_and_swap(b"k", None, Some(b"")).unwrap().is_ok(), "{ctx}");
        assert_eq!(tree.get(b"k").unwrap(), Some(vec![]), "{ctx}: empty value");
        let r = tree.compare_and_swap(b"k", None, Some(b"z")).unwrap();
        assert_eq!(r.unwrap_err().current, Some(vec![]), "{ctx}");
        assert!(tree.compare_and_swap(b"k", Some(b""), Some(b"")).unwrap().is_ok(), "{ctx}: same value");
        assert!(tree.compare_and_swap(b"k", Some(b""), None).unwrap().is_ok(), "{ctx}: delete");
        assert_eq!(tree.get(b"k").unwrap(), None, "{ctx}");
        // Transaction.
        let mut t = db.begin();
        let r = t.compare_and_swap(&tree, b"k", Some(b"x"), None).unwrap();
        assert_eq!(r.unwrap_err().current, None, "{ctx}");
        assert!(t.compare_and_swap(&tree, b"k", None, Some(b"1")).unwrap().is_ok(), "{ctx}");
        assert_eq!(t.get(&tree, b"k").unwrap().as_deref(), Some(&b"1"[..]), "{ctx}");
        let r = t.compare_and_swap(&tree, b"k", Some(b"0"), None).unwrap();
        assert_eq!(r.unwrap_err().current.as_deref(), Some(&b"1"[..]), "{ctx}");
        assert_eq!(t.update_with(&tree, b"absent", |_, _| panic!("called for an absent key")).unwrap(), None);
        let n = t.update_with(&tree, b"k", |old, new| {
            new.extend_from_slice(old);
            new.extend_from_slice(b"2");
            new.len()
        });
        assert_eq!(n.unwrap(), Some(2), "{ctx}");
        // An update to an empty value.
        assert_eq!(t.update_with(&tree, b"k", |_, _| ()).unwrap(), Some(()), "{ctx}");
        assert_eq!(t.get(&tree, b"k").unwrap(), Some(vec![]), "{ctx}");
        t.abort().unwrap();
        assert_eq!(tree.get(b"k").unwrap(), None, "{ctx}: rolled back");
        let mut t = db.begin();
        t.put(&tree, b"k", b"v").unwrap();
        t.update_with(&tree, b"k", |old, new| new.extend_from_slice(&[old, old].concat())).unwrap();
        t.commit().unwrap();
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&b"vv"[..]), "{ctx}");
    }
}

#[test]
fn handles_and_scans_that_outlive_their_database_refuse_with_closed() {
    for c in configs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = builder(&c).create(&path).unwrap();
        let tree = db.create_tree("t").unwrap();
        db.transact(|t| {
            for k in 0..800u32 {
                t.put(&tree, &k.to_be_bytes(), &[5; 80])?;
            }
            Ok(())
        })
        .unwrap();
        let ctx = format!("{c:?}");
        let mut started = tree.range(Unbounded, Unbounded);
        assert!(started.next().unwrap().is_ok());
        let mut back = tree.range_rev(Unbounded, Unbounded);
        assert!(back.next().unwrap().is_ok());
        db.close().unwrap();
        let unstarted = tree.range(Unbounded, Unbounded);
        // Every item past the close is an error or the end, and nothing panics.
        for (name, it) in [
            ("started", Box::new(started) as Box<dyn Iterator<Item = _>>),
            ("unstarted", Box::new(unstarted)),
        ] {
            let mut errors = 0;
            for item in it.take(2000) {
                match item {
                    Ok(_) => {}
                    Err(TreeError::Closed) => errors += 1,
                    Err(e) => panic!("{ctx} {name}: {e:?}"),
                }
            }
            let _ = errors;
        }
        for item in back.take(2000) {
            if let Err(e) = item {
                assert!(matches!(e, TreeError::Closed), "{ctx}: {e:?}");
            }
        }
        assert!(matches!(tree.get(b"x"), Err(TreeError::Closed)), "{ctx}");
        assert!(matches!(tree.upsert(b"x", b"y"), Err(TreeError::Closed)), "{ctx}");
        assert!(matches!(tree.first(), Err(TreeError::Closed)), "{ctx}");
        assert!(matches!(tree.len(), Err(TreeError::Closed)), "{ctx}");
        assert!(matches!(tree.is_empty(), Err(TreeError::Closed)), "{ctx}");
        assert!(tree.approximate_len().is_err(), "{ctx}");
        let r = tree.compare_and_swap(b"x", None, Some(b"y"));
        assert!(matches!(r, Err(TreeError::Closed)), "{ctx}: {r:?}");
        // The data is all there at the next open.
        let db = Database::builder().open(&path).unwrap();
        assert_eq!(db.tree("t").unwrap().len().unwrap(), 800, "{ctx}");
        db.close().unwrap();
    }
}

#[test]
fn a_dropped_trees_handles_refuse_in_transactions_and_read_transactions() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..300u32 {
            tree.upsert(&k.to_be_bytes(), &[5; 80]).unwrap();
        }
        let rt = db.begin_read();
        assert!(db.drop_tree("t").unwrap(), "{ctx}");
        let again = db.create_tree("t").unwrap();
        again.upsert(b"new", b"tree").unwrap();
        let r = rt.get(&tree, &1u32.to_be_bytes());
        assert!(matches!(r, Err(Error::Tree(TreeError::Dropped))), "{ctx}: {r:?}");
        let items: Vec<_> = rt.range(&tree, Unbounded, Unbounded).collect();
        assert!(items.iter().all(|i| matches!(i, Err(TreeError::Dropped))), "{ctx}: {items:?}");
        assert!(!items.is_empty(), "{ctx}: a scan of a dropped tree ends without an error");
        drop(rt);
        let mut t = db.begin();
        let r = t.put(&tree, b"k", b"v");
        assert!(matches!(r, Err(Error::Tree(TreeError::Dropped))), "{ctx}: {r:?}");
        let r = t.get(&tree, b"k");
        assert!(matches!(r, Err(Error::Tree(TreeError::Dropped))), "{ctx}: {r:?}");
        let items: Vec<_> = t.range(&tree, Unbounded, Unbounded).collect();
        assert!(
            !items.is_empty() && items.iter().all(|i| matches!(i, Err(Error::Tree(TreeError::Dropped)))),
            "{ctx}: {items:?}"
        );
        t.put(&again, b"k", b"v").unwrap();
        t.commit().unwrap();
        assert!(matches!(tree.get(b"new"), Err(TreeError::Dropped)), "{ctx}");
        assert!(matches!(tree.scan_prefix(b"").next(), Some(Err(TreeError::Dropped))), "{ctx}");
        assert_eq!(again.len().unwrap(), 2, "{ctx}");
        assert!(!db.drop_tree("nope").unwrap(), "{ctx}");
    }
}

#[test]
fn a_read_only_open_refuses_every_change_in_transactions_too() {
    let dir = tempfile::tempdir().unwrap();
    for logged in [true, false] {
        let path = dir.path().join(format!("db{logged}.swz"));
        let db = Database::builder().logging(logged).create(&path).unwrap();
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"a", b"1").unwrap();
        db.close().unwrap();
        let db = Database::builder().read_only(true).open(&path).unwrap();
        let tree = db.tree("t").unwrap();
        let ro = |r: &swizzledb::Result<_>| matches!(r, Err(Error::Tree(TreeError::ReadOnly)));
        let mut t = db.begin();
        assert_eq!(t.get(&tree, b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(ro(&t.put(&tree, b"a", b"2").map(|_| ())), "logged {logged}");
        assert!(ro(&t.delete(&tree, b"a").map(|_| ())), "logged {logged}");
        assert!(ro(&t.insert(&tree, b"b", b"2")), "logged {logged}");
        assert!(ro(&t.update_with(&tree, b"a", |_, n| n.push(1)).map(|_| ())), "logged {logged}");
        let r = t.compare_and_swap(&tree, b"a", Some(b"1"), Some(b"2"));
        assert!(matches!(r, Err(Error::Tree(TreeError::ReadOnly))), "logged {logged}: {r:?}");
        t.commit().unwrap();
        let r = db.transact(|t| t.put(&tree, b"z", b"z"));
        assert!(matches!(r, Err(Error::Tree(TreeError::ReadOnly))), "logged {logged}: {r:?}");
        let r = db.transact_snapshot(|t| t.put(&tree, b"z", b"z"));
        assert!(matches!(r, Err(Error::Tree(TreeError::ReadOnly))), "logged {logged}: {r:?}");
        assert!(matches!(tree.compare_and_swap(b"a", Some(b"1"), None), Err(TreeError::ReadOnly)));
        assert!(matches!(db.create_tree("u"), Err(Error::Tree(TreeError::ReadOnly))));
        assert!(matches!(db.tree_or_create("u"), Err(Error::Tree(TreeError::ReadOnly))));
        assert!(matches!(db.drop_tree("t"), Err(Error::Tree(TreeError::ReadOnly))));
        assert!(matches!(db.drop_tree("nope"), Err(Error::Tree(TreeError::ReadOnly)) | Ok(false)));
        assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        db.close().unwrap();
        let db = Database::builder().open(&path).unwrap();
        assert_eq!(db.tree_names(), vec!["t".to_string()]);
        assert_eq!(all(&db.tree("t").unwrap()), vec![(b"a".to_vec(), b"1".to_vec())]);
        db.close().unwrap();
    }
}

#[test]
fn dropping_the_database_without_close_keeps_every_commit() {
    for c in configs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let b = || {
            Database::builder()
                .mode(c.mode)
                .page_size(4096)
                .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 64 * 4096 })
                .commit_mode(c.commit)
                .lab(|l| l.locking(c.locking))
        };
        let db = b().logging(c.logged).create(&path).unwrap();
        let tree = db.create_tree("t").unwrap();
        let mut m = Map::new();
        let mut r = Rng(99);
        for i in 0..150u32 {
            let k = r.key();
            if i % 5 == 0 {
                tree.delete(&k).unwrap();
                m.remove(&k);
            } else {
                let v = vec![i as u8; (i % 300) as usize];
                tree.upsert(&k, &v).unwrap();
                m.insert(k, v);
            }
        }
        let mut t = db.begin();
        t.put(&tree, b"txn", b"committed").unwrap();
        t.commit().unwrap();
        m.insert(b"txn".to_vec(), b"committed".to_vec());
        let mut t = db.begin();
        t.put(&tree, b"open", b"never committed").unwrap();
        drop(t);
        drop(tree);
        drop(db);
        let db = b().open(&path).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let got = all(&db.tree("t").unwrap());
        assert_eq!(got, m.into_iter().collect::<Vec<_>>(), "{c:?}");
        db.close().unwrap();
    }
}

/// T15, T25: `Tree::verify` refuses through a handle of a closed database or a dropped tree, as
/// every other call does: it read the pages the handle's root page id names, which after a
/// drop may be another tree's (a new tree reuses the freed pages), and reported that tree's
/// shape as the dropped one's.
#[test]
fn t15_t25_verify_refuses_through_a_closed_or_dropped_handle() {
    for c in configs() {
        let ctx = format!("{c:?}");
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        for k in 0..800u32 {
            tree.upsert(&k.to_be_bytes(), &[5; 80]).unwrap();
        }
        assert!(tree.verify().is_ok(), "{ctx}");
        assert!(db.drop_tree("t").unwrap(), "{ctx}");
        // A new tree on the freed pages.
        let again = db.create_tree("t").unwrap();
        again.upsert(b"k", b"v").unwrap();
        match tree.verify() {
            Err(e) => assert_eq!(e, TreeError::Dropped.to_string(), "{ctx}"),
            Ok(shape) => panic!("{ctx}: a dropped tree verified: {shape:?}"),
        }
        again.verify().unwrap();
        db.close().unwrap();
        match again.verify() {
            Err(e) => assert_eq!(e, TreeError::Closed.to_string(), "{ctx}"),
            Ok(shape) => panic!("{ctx}: a closed database's tree verified: {shape:?}"),
        }
    }
}

/// A value of `len` bytes made from `seed`.
fn big(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed ^ (i as u8).wrapping_mul(31)).collect()
}

#[test]
fn large_values_keep_their_versions_rollbacks_and_scans() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        let max = tree.max_value_len();
        let sizes = [max, max - 1, 4096, 1025, 1024, 5000, 3 * 4096 + 7];
        let mut m = Map::new();
        for (i, &n) in sizes.iter().enumerate() {
            let k = format!("big{i}").into_bytes();
            let v = big(n, i as u8);
            tree.upsert(&k, &v).unwrap();
            m.insert(k, v);
        }
        for k in 0..50u32 {
            tree.upsert(format!("small{k:03}").as_bytes(), &[1; 10]).unwrap();
            m.insert(format!("small{k:03}").into_bytes(), vec![1; 10]);
        }
        let committed: Vec<Rec> = m.clone().into_iter().collect();
        assert_eq!(all(&tree), committed, "{ctx}: scan");
        let mut rev: Vec<Rec> = tree.range_rev(Unbounded, Unbounded).map(|x| x.unwrap()).collect();
        rev.reverse();
        assert_eq!(rev, committed, "{ctx}: reversed scan");
        // A snapshot, then committed changes of every large value.
        let rt = db.begin_read();
        db.transact(|t| {
            for (i, &n) in sizes.iter().enumerate() {
                let k = format!("big{i}").into_bytes();
                match i % 3 {
                    0 => {
                        t.delete(&tree, &k)?;
                    }
                    1 => {
                        t.put(&tree, &k, &big(n / 2, 0x55))?;
                    }
                    _ => {
                        t.put(&tree, &k, b"small now")?;
                    }
                }
            }
            Ok(())
        })
        .unwrap();
        if c.locking {
            for (k, v) in &m {
                assert_eq!(rt.get(&tree, k).unwrap().as_ref(), Some(v), "{ctx}: snapshot get {k:?}");
                let len = rt.get_with(&tree, k, |v| v.map(<[u8]>::len)).unwrap();
                assert_eq!(len, Some(v.len()), "{ctx}: snapshot get_with");
            }
            let got: Vec<Rec> = rt.range(&tree, Unbounded, Unbounded).map(|x| x.unwrap()).collect();
            assert_eq!(got, committed, "{ctx}: snapshot scan");
        }
        drop(rt);
        let now = all(&tree);
        // A transaction that changes every large value, then rolls back.
        for end in 0..2 {
            let mut t = db.begin();
            for (i, &n) in sizes.iter().enumerate() {
                let k = format!("big{i}").into_bytes();
                t.put(&tree, &k, &big(n, 0xaa)).unwrap();
                assert_eq!(t.get(&tree, &k).unwrap(), Some(big(n, 0xaa)), "{ctx}");
                t.update_with(&tree, &k, |old, new| {
                    new.extend_from_slice(&old[..old.len() / 3]);
                })
                .unwrap();
                assert_eq!(t.get(&tree, &k).unwrap().map(|v| v.len()), Some(n / 3), "{ctx}");
            }
            if end == 0 {
                t.abort().unwrap();
            } else {
                drop(t);
            }
            assert_eq!(all(&tree), now, "{ctx}: end {end}");
        }
        tree.verify().unwrap();
    }
}

#[test]
fn a_limit_counts_records_from_both_ends_together() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        for k in 0..300u32 {
            tree.upsert(&k.to_be_bytes(), &[3; 40]).unwrap();
        }
        let ctx = format!("{c:?}");
        for n in [0usize, 1, 2, 5, 299, 300, 301] {
            for pattern in [0u64, u64::MAX, 0xaaaa_aaaa_aaaa_aaaa] {
                let got = both_ends(
                    tree.range(Unbounded, Unbounded).limit(n).map(|x| Item(x.map_err(|e| e.to_string()))),
                    pattern,
                )
                .unwrap();
                assert_eq!(got.len(), n.min(300), "{ctx}: limit {n} pattern {pattern:x}");
                let t = db.begin();
                let got = both_ends(
                    t.range(&tree, Unbounded, Unbounded).limit(n).map(|x| Item(x.map_err(|e| e.to_string()))),
                    pattern,
                )
                .unwrap();
                assert_eq!(got.len(), n.min(300), "{ctx}: txn limit {n} pattern {pattern:x}");
                let got = both_ends(
                    t.range_rev(&tree, Unbounded, Unbounded)
                        .limit(n)
                        .map(|x| Item(x.map_err(|e| e.to_string()))),
                    pattern,
                )
                .unwrap();
                assert_eq!(got.len(), n.min(300), "{ctx}: txn rev limit {n} pattern {pattern:x}");
                t.commit().unwrap();
            }
        }
        let t = db.begin();
        let mut r = t.range(&tree, Excluded(&5u32.to_be_bytes()[..]), Included(&8u32.to_be_bytes()[..]));
        assert_eq!(
            r.next_with(|k, v| (k.to_vec(), v.len())).unwrap().unwrap(),
            (6u32.to_be_bytes().to_vec(), 40)
        );
        let mut rest = Vec::new();
        while let Some(x) = r.next_with(|k, _| k.to_vec()) {
            rest.push(x.unwrap());
        }
        assert_eq!(rest, vec![7u32.to_be_bytes().to_vec(), 8u32.to_be_bytes().to_vec()], "{ctx}");
        assert!(r.next().is_none(), "{ctx}");
        drop(r);
        t.commit().unwrap();
    }
}

#[test]
fn background_intervals_of_zero_neither_panic_nor_hang() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.swz");
    let b = || {
        Database::builder()
            .page_size(4096)
            .pool_bytes(1 << 20)
            .checkpoint_interval(Some(Duration::ZERO))
            .log_archive(true)
            .lab(|l| l.archive_interval(Some(Duration::ZERO)).cleaner_interval(Some(Duration::ZERO)))
    };
    let db = b().create(&path).unwrap();
    let tree = db.create_tree("t").unwrap();
    for k in 0..200u32 {
        tree.upsert(&k.to_be_bytes(), &[9; 100]).unwrap();
    }
    db.checkpoint().unwrap();
    db.close().unwrap();
    let db = b().open(&path).unwrap();
    assert_eq!(db.tree("t").unwrap().len().unwrap(), 200);
    db.close().unwrap();
}

#[test]
fn open_refuses_garbage_files_with_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("one byte", vec![1]),
        ("zeros", vec![0; 8192]),
        ("ones", vec![0xff; 8192 * 3]),
        ("text", b"SQLite format 3\0 hello".repeat(600)),
    ];
    for (name, bytes) in cases {
        for ro in [false, true] {
            let path = dir.path().join(format!("{}-{ro}.swz", name.replace(' ', "-")));
            std::fs::write(&path, &bytes).unwrap();
            for how in ["open", "open_or_create"] {
                let b = Database::builder().read_only(ro);
                let r = if how == "open" { b.open(&path) } else { b.open_or_create(&path) };
                match r {
                    Ok(db) => {
                        // An empty file may be taken for a new database; anything else must not.
                        assert!(bytes.is_empty() && !ro, "{name} {how} ro {ro}: opened");
                        db.close().unwrap();
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(!msg.is_empty(), "{name} {how}");
                        assert!(
                            matches!(e, Error::Buffer(_) | Error::NotFound(_) | Error::LogMissing { .. }),
                            "{name} {how} ro {ro}: {e:?}"
                        );
                    }
                }
                // Nothing was written to the file.
                if !bytes.is_empty() {
                    assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} {how} ro {ro}: file changed");
                }
            }
        }
    }
    // A directory where the file should be.
    let d = dir.path().join("a-dir.swz");
    std::fs::create_dir(&d).unwrap();
    for how in ["open", "open_or_create", "create"] {
        let b = Database::builder();
        let r = match how {
            "open" => b.open(&d),
            "open_or_create" => b.open_or_create(&d),
            _ => b.create(&d),
        };
        assert!(r.is_err(), "{how} a directory");
    }
}

#[test]
fn a_backup_holds_the_committed_state_only() {
    for c in configs().into_iter().filter(|c| c.locking) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let empty = db.create_tree("empty").unwrap();
        let _ = empty;
        let ctx = format!("{c:?}");
        for k in 0..200u32 {
            tree.upsert(&k.to_be_bytes(), &big(if k.is_multiple_of(50) { 6000 } else { 30 }, k as u8))
                .unwrap();
        }
        let committed = all(&tree);
        let mut t = db.begin();
        for k in (0..200u32).step_by(7) {
            t.put(&tree, &k.to_be_bytes(), &big(if k.is_multiple_of(3) { 7000 } else { 20 }, 0xee)).unwrap();
        }
        for k in (3..200u32).step_by(11) {
            t.delete(&tree, &k.to_be_bytes()).unwrap();
        }
        t.put(&tree, b"zzz", b"uncommitted").unwrap();
        let path = dir.path().join("copy.swz");
        db.backup_to(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        t.commit().unwrap();
        let copy = Database::builder().open(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let mut names = copy.tree_names();
        names.sort();
        assert_eq!(names, vec!["empty".to_string(), "t".to_string()], "{ctx}");
        assert_eq!(all(&copy.tree("t").unwrap()), committed, "{ctx}: the backup");
        assert_eq!(copy.tree("empty").unwrap().len().unwrap(), 0, "{ctx}");
        copy.close().unwrap();
        let r = db.backup_to(&path);
        assert!(matches!(r, Err(Error::BackupTargetExists(_))), "{ctx}: {r:?}");
    }
}

#[test]
fn typed_trees_range_from_both_ends_and_refuse_bytes_of_another_codec() {
    use swizzledb::typed::{BigEndian, Str, TypedTree};
    let db = open(configs()[0]);
    let t: TypedTree<BigEndian<i32>, Str> = TypedTree::new(db.create_tree("t").unwrap());
    for k in -50..50 {
        t.upsert(&k, &format!("v{k}")).unwrap();
    }
    let got: Vec<i32> = t.range(Included(&-3), Excluded(&3)).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(got, (-3..3).collect::<Vec<_>>());
    let got: Vec<i32> = t.range(Included(&-3), Excluded(&3)).unwrap().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(got, (-3..3).rev().collect::<Vec<_>>());
    let got: Vec<i32> = t.range(Included(&3), Excluded(&-3)).unwrap().map(|r| r.unwrap().0).collect();
    assert!(got.is_empty());
    assert_eq!(t.first().unwrap().unwrap().0, -50);
    assert_eq!(t.last().unwrap().unwrap().0, 49);
    t.bytes().upsert(b"\x01", b"\xff\xfe").unwrap();
    assert!(matches!(t.get(&0), Ok(Some(_))));
    // Sorts before every key of four bytes.
    let r = t.first();
    assert!(matches!(r, Err(Error::Codec { .. })), "{r:?}");
    let items: Vec<_> = t.iter().collect();
    assert!(items.iter().any(|r| matches!(r, Err(Error::Codec { .. }))));
}

#[test]
fn version_memory_of_zero_still_serves_snapshots_without_writers() {
    for c in configs().into_iter().filter(|c| c.locking) {
        let db = Database::builder()
            .mode(c.mode)
            .pool_bytes(16 << 20)
            .logging(c.logged)
            .commit_mode(c.commit)
            .version_memory(0)
            .create_in_memory()
            .unwrap();
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"a", b"1").unwrap();
        let rt = db.begin_read();
        assert_eq!(rt.get(&tree, b"a").unwrap().as_deref(), Some(&b"1"[..]), "{c:?}");
        drop(rt);
        let v = db
            .transact_snapshot(|t| {
                let v = t.get(&tree, b"a")?.unwrap();
                t.put(&tree, b"a", &[v, b"2".to_vec()].concat())?;
                t.get(&tree, b"a")
            })
            .unwrap();
        assert_eq!(v.as_deref(), Some(&b"12"[..]), "{c:?}");
        // A snapshot that a writer passes ends with the typed error, and a plain read goes on.
        // (An unlogged database's plain writes record no version: snapshots see them, K21.)
        if !c.logged {
            continue;
        }
        let rt = db.begin_read();
        tree.upsert(b"a", b"3").unwrap();
        match rt.get(&tree, b"a") {
            Ok(v) => assert_eq!(v.as_deref(), Some(&b"12"[..]), "{c:?}"),
            Err(e) => assert!(matches!(e, Error::SnapshotTooOld { limit: 0 }), "{c:?}: {e:?}"),
        }
        assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"3"[..]), "{c:?}");
    }
}

#[test]
fn oversize_keys_in_reads_and_bounds_never_panic() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..300u32 {
            tree.upsert(&k.to_be_bytes(), &[1; 20]).unwrap();
        }
        let huge = vec![0x00u8; 70_000];
        let huge_hi = vec![0xffu8; 70_000];
        let too_large = |e: &Error| matches!(e, Error::Tree(TreeError::KeyTooLarge { .. }));
        match tree.get(&huge) {
            Ok(v) => assert_eq!(v, None, "{ctx}"),
            Err(e) => assert!(matches!(e, TreeError::KeyTooLarge { .. }), "{ctx}: {e:?}"),
        }
        match tree.delete(&huge) {
            Ok(existed) => assert!(!existed, "{ctx}"),
            Err(e) => assert!(matches!(e, TreeError::KeyTooLarge { .. }), "{ctx}: {e:?}"),
        }
        match tree.compare_and_swap(&huge, Some(b"x"), None) {
            Ok(r) => assert_eq!(r.unwrap_err().current, None, "{ctx}"),
            Err(e) => assert!(matches!(e, TreeError::KeyTooLarge { .. }), "{ctx}: {e:?}"),
        }
        // Bounds of any length.
        let n = tree.range(Included(&huge[..]), Included(&huge_hi[..])).count();
        assert_eq!(n, 299, "{ctx}: keys above 70,000 zero bytes");
        let n = tree.range_rev(Excluded(&huge[..]), Excluded(&huge_hi[..])).count();
        assert_eq!(n, 299, "{ctx}");
        assert_eq!(tree.scan_prefix(&huge).count(), 0, "{ctx}");
        assert_eq!(tree.scan_prefix_rev(&huge_hi).count(), 0, "{ctx}");
        let mut t = db.begin();
        match t.get(&tree, &huge) {
            Ok(v) => assert_eq!(v, None, "{ctx}"),
            Err(e) => assert!(too_large(&e), "{ctx}: {e:?}"),
        }
        match t.delete(&tree, &huge) {
            Ok(existed) => assert!(!existed, "{ctx}"),
            Err(e) => assert!(too_large(&e), "{ctx}: {e:?}"),
        }
        match t.update_with(&tree, &huge, |_, _| ()) {
            Ok(r) => assert_eq!(r, None, "{ctx}"),
            Err(e) => assert!(too_large(&e), "{ctx}: {e:?}"),
        }
        assert_eq!(t.range(&tree, Included(&huge[..]), Unbounded).count(), 299, "{ctx}");
        assert_eq!(t.range_rev(&tree, Unbounded, Excluded(&huge_hi[..])).count(), 300, "{ctx}");
        t.put(&tree, b"after", b"x").unwrap();
        t.commit().unwrap();
        let rt = db.begin_read();
        match rt.get(&tree, &huge) {
            Ok(v) => assert_eq!(v, None, "{ctx}"),
            Err(e) => assert!(too_large(&e), "{ctx}: {e:?}"),
        }
        assert_eq!(rt.range(&tree, Excluded(&huge[..]), Unbounded).count(), 300, "{ctx}");
        assert_eq!(rt.scan_prefix(&tree, &huge_hi).count(), 0, "{ctx}");
        drop(rt);
        tree.verify().unwrap();
    }
}

#[test]
fn compare_and_swap_compares_large_values_whole() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        let v = big(9000, 7);
        let mut almost = v.clone();
        *almost.last_mut().unwrap() ^= 1;
        let shorter = &v[..8999];
        tree.upsert(b"k", &v).unwrap();
        for wrong in [&almost[..], shorter, &v[..100]] {
            let r = tree.compare_and_swap(b"k", Some(wrong), Some(b"x")).unwrap();
            assert_eq!(r.unwrap_err().current.as_deref(), Some(&v[..]), "{ctx}");
            let mut t = db.begin();
            let r = t.compare_and_swap(&tree, b"k", Some(wrong), None).unwrap();
            assert_eq!(r.unwrap_err().current.as_deref(), Some(&v[..]), "{ctx}");
            t.commit().unwrap();
        }
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&v[..]), "{ctx}");
        let mut longer = v.clone();
        longer.push(0);
        let r = tree.compare_and_swap(b"k", Some(&longer), Some(b"x")).unwrap();
        assert!(r.is_err(), "{ctx}");
        assert!(tree.compare_and_swap(b"k", Some(&v), Some(&almost)).unwrap().is_ok(), "{ctx}");
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&almost[..]), "{ctx}");
        let mut t = db.begin();
        assert!(t.compare_and_swap(&tree, b"k", Some(&almost), Some(&v)).unwrap().is_ok(), "{ctx}");
        let len = t.get_with(&tree, b"k", |x| x.map(|x| x == &v[..])).unwrap();
        assert_eq!(len, Some(true), "{ctx}");
        t.abort().unwrap();
        assert_eq!(tree.get(b"k").unwrap().as_deref(), Some(&almost[..]), "{ctx}");
    }
}

#[test]
fn a_scan_interrupted_by_a_drop_never_returns_another_trees_records() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..1500u32 {
            tree.upsert(&k.to_be_bytes(), b"old tree").unwrap();
        }
        let mut fwd = tree.range(Unbounded, Unbounded);
        let mut bwd = tree.range_rev(Unbounded, Unbounded);
        for _ in 0..10 {
            assert!(fwd.next().unwrap().is_ok());
            assert!(bwd.next().unwrap().is_ok());
        }
        assert!(db.drop_tree("t").unwrap());
        let new = db.create_tree("t").unwrap();
        for k in 0..1500u32 {
            new.upsert(&k.to_be_bytes(), b"new tree").unwrap();
        }
        let check = |item: Result<Rec, TreeError>| match item {
            Ok((_, v)) => assert_eq!(v, b"old tree", "{ctx}: a dropped tree's scan read the new tree"),
            Err(e) => assert!(matches!(e, TreeError::Dropped), "{ctx}: {e:?}"),
        };
        fwd.take(3000).for_each(check);
        bwd.take(3000).for_each(check);
    }
}

/// Scans racing writers that insert and delete keys between keys no one changes: in every
/// configuration each scan returns the untouched keys, all of them, in order, once each.
#[test]
fn scans_racing_writers_return_every_untouched_key_once_in_order() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        let stable = |k: u32| format!("k{:05}", k * 2).into_bytes();
        for k in 0..600u32 {
            tree.upsert(&stable(k), &[0x5a; 40]).unwrap();
        }
        let want: Vec<Vec<u8>> = (0..600).map(stable).collect();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for w in 0..2u32 {
                let (tree, stop, db) = (&tree, &stop, &db);
                s.spawn(move || {
                    let mut r = Rng(0x9999 + u64::from(w));
                    while !stop.load(Ordering::Relaxed) {
                        let k = format!("k{:05}", (r.next() % 600) * 2 + 1).into_bytes();
                        let v = vec![w as u8; (r.next() % 400) as usize];
                        let res = if r.next().is_multiple_of(4) {
                            db.transact(|t| {
                                t.put(tree, &k, &v)?;
                                t.delete(tree, format!("k{:05}", (r.next() % 600) * 2 + 1).as_bytes())?;
                                Ok(())
                            })
                        } else if r.next().is_multiple_of(2) {
                            tree.upsert(&k, &v).map(|_| ()).map_err(Error::from)
                        } else {
                            tree.delete(&k).map(|_| ()).map_err(Error::from)
                        };
                        if let Err(e) = res {
                            assert!(matches!(e, Error::Lock(_)), "writer: {e:?}");
                        }
                    }
                });
            }
            for round in 0..30u64 {
                let keys: Vec<Vec<u8>> = match round % 3 {
                    0 => tree.range(Unbounded, Unbounded).map(|x| x.unwrap().0).collect(),
                    1 => {
                        let mut v: Vec<Vec<u8>> =
                            tree.range_rev(Unbounded, Unbounded).map(|x| x.unwrap().0).collect();
                        v.reverse();
                        v
                    }
                    _ => both_ends(
                        tree.range(Unbounded, Unbounded).map(|x| Item(x.map_err(|e| e.to_string()))),
                        round.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    )
                    .unwrap()
                    .into_iter()
                    .map(|r| r.0)
                    .collect(),
                };
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "{ctx} round {round}: not in order or twice");
                let seen: Vec<Vec<u8>> = keys.into_iter().filter(|k| k.last().unwrap() % 2 == 0).collect();
                assert_eq!(seen, want, "{ctx} round {round}: untouched keys");
            }
            stop.store(true, Ordering::Relaxed);
        });
        tree.verify().unwrap();
    }
}

/// K24: every kind of write of a key that another transaction inserted, updated or deleted
/// and committed after the snapshot began fails with `WriteConflict` and changes nothing.
#[test]
fn k24_every_write_of_a_key_changed_since_the_snapshot_is_a_write_conflict() {
    for logged in [true, false] {
        for change in ["insert", "update", "delete"] {
            for op in ["put", "insert", "delete", "update_with", "cas", "cas_delete"] {
                let c = Config { mode: PoolMode::Swizzling, logged, locking: true, commit: CommitMode::Sync };
                let db = open(c);
                let tree = db.create_tree("t").unwrap();
                let ctx = format!("logged {logged}: {op} after another's {change}");
                for k in [&b"a"[..], b"m", b"z"] {
                    tree.upsert(k, b"old").unwrap();
                }
                let key: &[u8] = if change == "insert" { b"k" } else { b"m" };
                let mut si = db.begin_snapshot();
                assert!(si.is_snapshot(), "{ctx}");
                let seen = si.get(&tree, key).unwrap();
                db.transact(|t| {
                    match change {
                        "insert" => t.insert(&tree, key, b"other")?,
                        "update" => {
                            t.put(&tree, key, b"other")?;
                        }
                        _ => {
                            t.delete(&tree, key)?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
                let after = tree.get(key).unwrap();
                let r: swizzledb::Result<()> = match op {
                    "put" => si.put(&tree, key, b"mine").map(|_| ()),
                    "insert" => si.insert(&tree, key, b"mine"),
                    "delete" => si.delete(&tree, key).map(|_| ()),
                    "update_with" => {
                        si.update_with(&tree, key, |_, new| new.extend_from_slice(b"mine")).map(|r| {
                            assert!(
                                r.is_some() == seen.is_some(),
                                "{ctx}: update_with found {r:?}, the snapshot {seen:?}"
                            )
                        })
                    }
                    "cas" => si
                        .compare_and_swap(&tree, key, seen.as_deref(), Some(b"mine"))
                        .map(|r| assert!(r.is_ok(), "{ctx}: the snapshot's value was refused: {r:?}")),
                    _ => si
                        .compare_and_swap(&tree, key, seen.as_deref(), None)
                        .map(|r| assert!(r.is_ok(), "{ctx}: the snapshot's value was refused: {r:?}")),
                };
                match r {
                    Err(Error::WriteConflict { key: k, .. }) => assert_eq!(&*k, key, "{ctx}"),
                    other => panic!("{ctx}: expected a write conflict, got {other:?}"),
                }
                assert_eq!(si.get(&tree, key).unwrap(), seen, "{ctx}: the snapshot's read");
                si.commit().unwrap();
                assert_eq!(tree.get(key).unwrap(), after, "{ctx}: the other's change stays");
            }
        }
    }
}

/// `Database::tree_or_create` opens the tree, creating it if it does not exist — also when
/// other threads call it for the same name at the same time: each gets the one tree, none
/// `TreeExists` (it looked the name up, then created it, and a creation between the two made
/// it fail).
#[test]
fn tree_or_create_from_racing_threads_gives_each_the_one_tree() {
    let db = Database::builder().pool_bytes(8 << 20).logging(false).create_in_memory().unwrap();
    let threads = 4;
    for round in 0..150u32 {
        let name = format!("t{round}");
        let barrier = std::sync::Barrier::new(threads);
        let trees: Vec<Tree> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        db.tree_or_create(&name)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e}")))
                .collect()
        });
        for (i, t) in trees.iter().enumerate() {
            t.upsert(&[i as u8], b"v").unwrap();
        }
        assert_eq!(db.tree(&name).unwrap().len().unwrap(), threads, "round {round}: not one tree");
    }
    assert_eq!(db.tree_names().len(), 150);
}

#[test]
fn tree_names_at_their_limits_survive_a_restart() {
    for logged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let names = ["\0", "a\0b", "🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀", &"x".repeat(64), " ", "é", "/..//"];
        let db = Database::builder().logging(logged).create(&path).unwrap();
        for (i, n) in names.iter().enumerate() {
            db.create_tree(n).unwrap_or_else(|e| panic!("{n:?}: {e}")).upsert(b"k", &[i as u8]).unwrap();
        }
        for bad in ["", &"x".repeat(65), "🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀a"]
        {
            let r = db.create_tree(bad);
            assert!(matches!(r, Err(Error::InvalidTreeName { .. })), "{bad:?}: {r:?}");
            let r = db.tree_or_create(bad);
            assert!(
                matches!(r, Err(Error::InvalidTreeName { .. } | Error::TreeNotFound(_))),
                "{bad:?}: {r:?}"
            );
        }
        if logged {
            // A crash: the creations are durable when they return.
            drop(db);
        } else {
            db.close().unwrap();
        }
        let db = Database::builder().open(&path).unwrap();
        let mut got = db.tree_names();
        got.sort();
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "logged {logged}");
        for (i, n) in names.iter().enumerate() {
            assert_eq!(db.tree(n).unwrap().get(b"k").unwrap(), Some(vec![i as u8]), "logged {logged}: {n:?}");
        }
        assert!(db.drop_tree("a\0b").unwrap());
        assert!(matches!(db.tree("a\0b"), Err(Error::TreeNotFound(_))));
        db.close().unwrap();
    }
}

#[test]
fn read_committed_reads_in_every_configuration() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..400u32 {
            tree.upsert(&k.to_be_bytes(), &[1; 30]).unwrap();
        }
        let rc = db.begin_read_committed();
        let mut scan = rc.range(&tree, Unbounded, Unbounded);
        let first = scan.next().unwrap().unwrap();
        db.transact(|t| {
            t.put(&tree, &0u32.to_be_bytes(), b"new")?;
            t.delete(&tree, &399u32.to_be_bytes())?;
            t.put(&tree, b"zz", b"new")?;
            Ok(())
        })
        .unwrap();
        assert_eq!(rc.get(&tree, &0u32.to_be_bytes()).unwrap().as_deref(), Some(&b"new"[..]), "{ctx}");
        assert_eq!(rc.get(&tree, &399u32.to_be_bytes()).unwrap(), None, "{ctx}");
        let rest: Vec<Rec> = scan.map(|x| x.unwrap()).collect();
        if reads_committed(c) {
            // The range read reads at its own snapshot, taken when it began.
            assert_eq!(first.1, vec![1; 30], "{ctx}");
            assert_eq!(rest.len(), 399, "{ctx}");
            assert_eq!(rest.last().unwrap().0, 399u32.to_be_bytes().to_vec(), "{ctx}");
        }
        assert_eq!(rc.range(&tree, Unbounded, Unbounded).count(), 400, "{ctx}");
        assert_eq!(
            rc.range_rev(&tree, Unbounded, Unbounded).next().unwrap().unwrap().0,
            b"zz".to_vec(),
            "{ctx}"
        );
        assert_eq!(rc.scan_prefix(&tree, b"z").count(), 1, "{ctx}");
        // An open transaction's changes stay unseen where the docs say nothing uncommitted is read.
        let mut t = db.begin();
        t.put(&tree, b"zz", b"uncommitted").unwrap();
        t.delete(&tree, &5u32.to_be_bytes()).unwrap();
        if reads_committed(c) || (!c.logged && c.locking) {
            assert_eq!(rc.get(&tree, b"zz").unwrap().as_deref(), Some(&b"new"[..]), "{ctx}");
            assert!(rc.get(&tree, &5u32.to_be_bytes()).unwrap().is_some(), "{ctx}");
            assert_eq!(rc.range(&tree, Unbounded, Unbounded).count(), 400, "{ctx}");
        }
        t.abort().unwrap();
    }
}

/// Every tree's root stays in the pool (buffer B5): more trees than a small pool's frames are
/// refused with a typed error at `create_tree`, or at the open with a smaller pool, and nothing
/// is lost — a larger pool opens every tree with its records.
#[test]
fn more_trees_than_a_small_pool_holds_are_refused_and_lose_nothing() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional] {
        for logged in [true, false] {
            let ctx = format!("{mode:?} logged {logged}");
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db.swz");
            let small = || Database::builder().mode(mode).page_size(4096).pool_bytes(32 * 4096);
            let db = small().logging(logged).create(&path).unwrap();
            let mut made = Vec::new();
            let err = loop {
                let name = format!("t{}", made.len());
                match db.create_tree(&name) {
                    Ok(t) => {
                        t.upsert(name.as_bytes(), b"v").unwrap_or_else(|e| panic!("{ctx}: {name}: {e}"));
                        made.push(name);
                    }
                    Err(e) => break e,
                }
                assert!(made.len() < 100, "{ctx}: 100 trees in a pool of 32 frames");
            };
            assert!(
                matches!(err, Error::Buffer(_) | Error::Tree(TreeError::Buffer(_))),
                "{ctx}: after {} trees: {err:?}",
                made.len()
            );
            assert_eq!(db.tree_names().len(), made.len(), "{ctx}: {err}");
            db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
            let db =
                Database::builder().pool_bytes(8 << 20).open(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            for name in &made {
                assert_eq!(
                    db.tree(name).unwrap().get(name.as_bytes()).unwrap().as_deref(),
                    Some(&b"v"[..]),
                    "{ctx}"
                );
            }
            for i in 0..40 {
                db.create_tree(&format!("more{i}")).unwrap().upsert(b"k", b"v").unwrap();
            }
            db.close().unwrap();
            match small().open(&path) {
                Ok(db) => {
                    for name in db.tree_names() {
                        let _ = db.tree(&name).map(|t| t.len());
                    }
                    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
                }
                Err(e) => {
                    assert!(matches!(e, Error::Buffer(_) | Error::Tree(TreeError::Buffer(_))), "{ctx}: {e:?}")
                }
            }
            let db =
                Database::builder().pool_bytes(8 << 20).open(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(db.tree_names().len(), made.len() + 40, "{ctx}");
            for name in &made {
                assert_eq!(
                    db.tree(name).unwrap().get(name.as_bytes()).unwrap().as_deref(),
                    Some(&b"v"[..]),
                    "{ctx}"
                );
            }
            db.close().unwrap();
        }
    }
}

/// Deletes, updates, rollbacks and drops of trees with large values leave no page unreachable
/// after a clean close (inspect's `unreachable_pages`: space lost), in every configuration.
#[test]
fn large_value_churn_and_drops_lose_no_pages() {
    for c in configs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.swz");
        let db = builder(&c).create(&path).unwrap();
        let ctx = format!("{c:?}");
        let keep = db.create_tree("keep").unwrap();
        let gone = db.create_tree("gone").unwrap();
        for round in 0..3u8 {
            db.transact(|t| {
                for k in 0..40u32 {
                    let n = [0usize, 10, 2000, 5000, 9000][(k as usize + usize::from(round)) % 5];
                    t.put(&keep, &k.to_be_bytes(), &big(n, round))?;
                    t.put(&gone, &k.to_be_bytes(), &big(n, round))?;
                }
                Ok(())
            })
            .unwrap();
            let mut t = db.begin();
            for k in 0..40u32 {
                t.put(&keep, &k.to_be_bytes(), &big(7000, 0xee)).unwrap();
                if k % 4 == 1 {
                    t.delete(&gone, &k.to_be_bytes()).unwrap();
                }
            }
            t.abort().unwrap();
            for k in (0..40u32).step_by(3) {
                keep.delete(&k.to_be_bytes()).unwrap();
                keep.upsert(&(k + 1).to_be_bytes(), b"small").unwrap();
            }
        }
        let want = all(&keep);
        drop(gone);
        assert!(db.drop_tree("gone").unwrap(), "{ctx}");
        db.close().unwrap();
        let file = swizzledb::inspect::DatabaseFile::open(&path).unwrap();
        let report = file.verify();
        assert!(report.is_clean(), "{ctx}: {report:?}");
        assert_eq!(report.unreachable_pages, Some(0), "{ctx}: {report:?}");
        drop(file);
        let db = Database::builder().open(&path).unwrap();
        assert_eq!(all(&db.tree("keep").unwrap()), want, "{ctx}");
        db.close().unwrap();
    }
}

#[test]
fn read_transactions_keep_their_snapshot_through_checkpoints_flushes_and_backups() {
    for c in configs().into_iter().filter(|c| c.locking) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..300u32 {
            tree.upsert(&k.to_be_bytes(), &[1; 50]).unwrap();
        }
        let rt = db.begin_read();
        let snap = rt.range(&tree, Unbounded, Unbounded).map(|x| x.unwrap()).collect::<Vec<_>>();
        db.transact(|t| {
            for k in 0..300u32 {
                if k % 2 == 0 {
                    t.delete(&tree, &k.to_be_bytes())?;
                } else {
                    t.put(&tree, &k.to_be_bytes(), &[2; 500])?;
                }
            }
            Ok(())
        })
        .unwrap();
        db.checkpoint().unwrap();
        db.flush().unwrap();
        db.backup_to(dir.path().join("b.swz")).unwrap();
        let again: Vec<Rec> = rt.range(&tree, Unbounded, Unbounded).map(|x| x.unwrap()).collect();
        assert_eq!(again, snap, "{ctx}");
        assert_eq!(rt.get(&tree, &0u32.to_be_bytes()).unwrap(), Some(vec![1; 50]), "{ctx}");
        drop(rt);
        assert_eq!(tree.len().unwrap(), 150, "{ctx}");
    }
}

#[test]
fn contradictory_builder_settings_are_refused_or_decided_by_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // Read-only and creating contradict each other.
    let r = Database::builder().read_only(true).create(dir.path().join("ro.swz"));
    assert!(r.is_err(), "read-only create: {:?}", r.map(|_| ()));
    assert!(!dir.path().join("ro.swz").exists());
    let r = Database::builder().read_only(true).open_or_create(dir.path().join("ro2.swz"));
    assert!(r.is_err(), "read-only open_or_create of a missing file");
    assert!(!dir.path().join("ro2.swz").exists());
    let r = Database::builder().read_only(true).create_in_memory();
    assert!(r.is_err(), "read-only in-memory");
    // A logged file opened with logging(false) stays logged: the file decides.
    let path = dir.path().join("logged.swz");
    let db = Database::builder().create(&path).unwrap();
    db.create_tree("t").unwrap().upsert(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = Database::builder().logging(false).commit_mode(CommitMode::Async).open(&path).unwrap();
    assert!(db.is_logged());
    let t = db.tree("t").unwrap();
    t.upsert(b"k2", b"v2").unwrap();
    drop(t);
    drop(db);
    let db = Database::builder().open(&path).unwrap();
    assert_eq!(db.tree("t").unwrap().len().unwrap(), 2);
    db.close().unwrap();
    // An unlogged database with the logged-only settings.
    let path = dir.path().join("unlogged.swz");
    match Database::builder().logging(false).commit_mode(CommitMode::Async).log_archive(true).create(&path) {
        Ok(db) => {
            assert!(!db.is_logged());
            db.create_tree("t").unwrap().upsert(b"k", b"v").unwrap();
            db.close().unwrap();
            let db = Database::builder().open(&path).unwrap();
            assert!(!db.is_logged());
            assert_eq!(db.tree("t").unwrap().len().unwrap(), 1);
            db.close().unwrap();
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// A lock refused to a deadlock's victim leaves the transaction as it was (LOCKS.md K23): two
/// transactions of one thread that want each other's keys.
#[test]
fn k23_a_refused_lock_leaves_the_transaction_as_it_was() {
    for c in configs().into_iter().filter(|c| c.locking) {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let ctx = format!("{c:?}");
        tree.upsert(b"a", b"0").unwrap();
        tree.upsert(b"b", b"0").unwrap();
        let mut t1 = db.begin();
        let mut t2 = db.begin();
        t1.put(&tree, b"a", b"1").unwrap();
        t2.put(&tree, b"b", b"2").unwrap();
        t2.put(&tree, b"c", b"2").unwrap();
        let r = t2.put(&tree, b"a", b"2");
        assert!(matches!(r, Err(Error::Lock(_))), "{ctx}: {r:?}");
        let r = t2.get(&tree, b"a");
        assert!(matches!(r, Err(Error::Lock(_))), "{ctx}: {r:?}");
        let r = t2.delete(&tree, b"a");
        assert!(matches!(r, Err(Error::Lock(_))), "{ctx}: {r:?}");
        // t2's own writes are as they were, and it can still commit.
        assert_eq!(t2.get(&tree, b"b").unwrap().as_deref(), Some(&b"2"[..]), "{ctx}");
        assert_eq!(t2.get(&tree, b"c").unwrap().as_deref(), Some(&b"2"[..]), "{ctx}");
        t2.commit().unwrap();
        t1.commit().unwrap();
        let want: Vec<Rec> = [("a", "1"), ("b", "2"), ("c", "2")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(all(&tree), want, "{ctx}");
    }
}

/// With the smallest log segments, a value of `max_value_len` bytes is accepted, replaced by
/// another of that length, rolled back and recovered after a crash, in every buffer mode.
#[test]
fn values_at_the_limit_of_the_smallest_log_segments_survive_replaces_rollbacks_and_restart() {
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for (page, pages) in [(4096u64, 2u64), (8192, 2), (4096, 3)] {
            let ctx = format!("{mode:?} page {page} segment of {pages} pages");
            let fs = std::sync::Arc::new(crate::common::new_fs());
            let path = crate::common::db_path();
            let b = || {
                let vfs: std::sync::Arc<dyn swizzledb_io::Vfs> = fs.clone();
                Database::builder()
                    .mode(mode)
                    .page_size(page as usize)
                    .lab(|l| l.vfs(vfs))
                    .pool_bytes(16 << 20)
                    .log_segment_bytes(page * pages)
                    .max_log_bytes(page * pages * 8)
            };
            let db = b().create(&path).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let tree = db.create_tree("t").unwrap();
            let max = tree.max_value_len();
            let r = tree.upsert(b"over", &big(max + 1, 1));
            assert!(matches!(r, Err(TreeError::ValueTooLarge { .. })), "{ctx}: {r:?}");
            tree.upsert(b"k", &big(max, 1)).unwrap_or_else(|e| panic!("{ctx}: first: {e}"));
            tree.upsert(b"k", &big(max, 2)).unwrap_or_else(|e| panic!("{ctx}: replace: {e}"));
            tree.upsert(b"j", &big(max, 3)).unwrap_or_else(|e| panic!("{ctx}: second key: {e}"));
            let mut t = db.begin();
            t.put(&tree, b"k", &big(max, 4)).unwrap_or_else(|e| panic!("{ctx}: txn replace: {e}"));
            t.delete(&tree, b"j").unwrap();
            t.put(&tree, b"j", &big(max, 5)).unwrap_or_else(|e| panic!("{ctx}: txn reinsert: {e}"));
            t.update_with(&tree, b"j", |old, new| new.extend_from_slice(&old[..max - 1])).unwrap();
            t.abort().unwrap_or_else(|e| panic!("{ctx}: abort: {e}"));
            let mut t = db.begin();
            t.put(&tree, b"k", &big(max, 6)).unwrap();
            t.commit().unwrap_or_else(|e| panic!("{ctx}: commit: {e}"));
            let mut open = db.begin();
            open.put(&tree, b"j", &big(max, 7)).unwrap();
            // A crash with `open` running.
            fs.crash(swizzledb_io::CrashMode::DropUnsynced);
            drop(open);
            drop(tree);
            drop(db);
            let db = b().open(&path).unwrap_or_else(|e| panic!("{ctx}: restart: {e}"));
            let tree = db.tree("t").unwrap();
            assert_eq!(tree.get(b"k").unwrap(), Some(big(max, 6)), "{ctx}");
            assert_eq!(tree.get(b"j").unwrap(), Some(big(max, 3)), "{ctx}");
            assert_eq!(tree.get(b"over").unwrap(), None, "{ctx}");
            tree.verify().unwrap();
            drop(tree);
            db.close().unwrap();
        }
    }
}

/// `CommitMode::Async`: a crash loses the last commits, never a part of one, and never one
/// before a commit it keeps; what `flush` made durable stays.
#[test]
fn async_commits_after_a_crash_are_a_whole_prefix_and_flush_makes_them_durable() {
    use swizzledb_io::CrashMode;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for (i, crash) in [
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::Torn { seed: 7 },
            CrashMode::Torn { seed: 8 },
        ]
        .into_iter()
        .enumerate()
        {
            let ctx = format!("{mode:?} {crash:?}");
            let fs = std::sync::Arc::new(crate::common::new_fs());
            let path = crate::common::db_path();
            let b = || {
                let vfs: std::sync::Arc<dyn swizzledb_io::Vfs> = fs.clone();
                crate::common::builder(mode, vfs).commit_mode(CommitMode::Async)
            };
            let db = b().create(&path).unwrap();
            let tree = db.create_tree("t").unwrap();
            let n = 120 + 37 * i as u32;
            let flushed_at = n / 2;
            for j in 1..=n {
                let mut t = db.begin();
                t.put(&tree, format!("a{j:04}").as_bytes(), &big(1 + (j as usize * 97) % 3000, j as u8))
                    .unwrap();
                t.put(&tree, format!("b{j:04}").as_bytes(), &[j as u8; 30]).unwrap();
                t.put(&tree, b"counter", &j.to_be_bytes()).unwrap();
                if j % 3 == 0 {
                    t.delete(&tree, format!("a{:04}", j - 1).as_bytes()).unwrap();
                }
                t.commit().unwrap();
                if j == flushed_at {
                    db.flush().unwrap();
                }
                if j == n / 3 {
                    db.checkpoint().unwrap();
                }
            }
            // io README IO10: the dead instance's log flusher, running until the drop stops
            // it, cannot create or sync a spare segment in the crashed state.
            fs.power_off(crash);
            drop(tree);
            drop(db);
            fs.power_on();
            let db = b().open(&path).unwrap_or_else(|e| panic!("{ctx}: restart: {e}"));
            let tree = db.tree("t").unwrap();
            let c = u32::from_be_bytes(tree.get(b"counter").unwrap().unwrap().try_into().unwrap());
            assert!(c >= flushed_at, "{ctx}: flushed commits lost: counter {c}, flushed at {flushed_at}");
            let mut want = Map::new();
            for j in 1..=c {
                want.insert(format!("a{j:04}").into_bytes(), big(1 + (j as usize * 97) % 3000, j as u8));
                want.insert(format!("b{j:04}").into_bytes(), vec![j as u8; 30]);
                if j % 3 == 0 {
                    want.remove(format!("a{:04}", j - 1).as_bytes());
                }
            }
            want.insert(b"counter".to_vec(), c.to_be_bytes().to_vec());
            assert_eq!(all(&tree), want.into_iter().collect::<Vec<_>>(), "{ctx}: counter {c}");
            tree.verify().unwrap();
            drop(tree);
            db.close().unwrap();
        }
    }
}

/// R23: `create_tree` and `drop_tree` are durable when they return, in either commit mode.
#[test]
fn r23_tree_creations_and_drops_survive_a_crash_in_async_mode() {
    use swizzledb_io::CrashMode;
    for mode in [PoolMode::Swizzling, PoolMode::Traditional, PoolMode::MainMemory] {
        for commit in [CommitMode::Async, CommitMode::Sync] {
            let ctx = format!("{mode:?} {commit:?}");
            let fs = std::sync::Arc::new(crate::common::new_fs());
            let path = crate::common::db_path();
            let b = || {
                let vfs: std::sync::Arc<dyn swizzledb_io::Vfs> = fs.clone();
                crate::common::builder(mode, vfs).commit_mode(commit)
            };
            let db = b().create(&path).unwrap();
            let a = db.create_tree("a").unwrap();
            for k in 0..200u32 {
                a.upsert(&k.to_be_bytes(), &[1; 100]).unwrap();
            }
            db.flush().unwrap();
            drop(a);
            assert!(db.drop_tree("a").unwrap());
            let again = db.create_tree("a").unwrap();
            let _ = db.create_tree("b").unwrap();
            let c = db.create_tree("c").unwrap();
            drop(c);
            assert!(db.drop_tree("c").unwrap());
            // io README IO10: the dead instance's log flusher, running until the drop stops
            // it, cannot remove a spare segment of the crashed state.
            fs.power_off(CrashMode::DropUnsynced);
            drop(again);
            drop(db);
            fs.power_on();
            let db = b().open(&path).unwrap_or_else(|e| panic!("{ctx}: restart: {e}"));
            let mut names = db.tree_names();
            names.sort();
            assert_eq!(names, vec!["a".to_string(), "b".to_string()], "{ctx}");
            let a = db.tree("a").unwrap();
            assert_eq!(a.len().unwrap(), 0, "{ctx}: the new tree a holds the dropped one's records");
            a.verify().unwrap();
            drop(a);
            db.close().unwrap();
        }
    }
}

/// A transaction is `Send`: begun in one thread, written, committed or dropped in another. It
/// ends as a transaction (a `drop_tree` afterwards does not wait for it), and a read
/// transaction shared by threads gives each the one snapshot.
#[test]
fn transactions_moved_between_threads_end_and_read_transactions_are_shared() {
    for c in configs() {
        let db = open(c);
        let tree = db.create_tree("t").unwrap();
        let other = db.create_tree("u").unwrap();
        let ctx = format!("{c:?}");
        for k in 0..200u32 {
            tree.upsert(&k.to_be_bytes(), &[1; 20]).unwrap();
        }
        for end in 0..3 {
            let mut t = db.begin();
            t.put(&tree, b"moved", &[end]).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| {
                    t.put(&tree, b"moved2", &[end]).unwrap();
                    match end {
                        0 => t.commit().unwrap(),
                        1 => t.abort().unwrap(),
                        _ => drop(t),
                    }
                });
            });
            // The first committed; the others rolled back to it.
            assert_eq!(tree.get(b"moved2").unwrap(), Some(vec![0]), "{ctx}: end {end}");
            assert_eq!(tree.get(b"moved").unwrap(), Some(vec![0]), "{ctx}: end {end}");
        }
        let rt = db.begin_read();
        let want: Vec<Rec> = rt.range(&tree, Unbounded, Unbounded).map(|x| x.unwrap()).collect();
        std::thread::scope(|s| {
            for i in 0..3u32 {
                let (rt, tree, want, ctx) = (&rt, &tree, &want, &ctx);
                s.spawn(move || {
                    for _ in 0..5 {
                        let got: Vec<Rec> =
                            rt.range(tree, Unbounded, Unbounded).map(|x| x.unwrap()).collect();
                        if c.locking {
                            assert_eq!(&got, want, "{ctx}: reader {i}");
                        }
                    }
                });
            }
            // Transactions: an unlogged database's plain writes keep no versions (K21).
            s.spawn(|| {
                for k in 0..100u32 {
                    db.transact(|t| t.put(&tree, &k.to_be_bytes(), &[2; 20])).unwrap();
                }
            });
        });
        drop(rt);
        // No transaction runs: the drop does not wait for one.
        let started = std::time::Instant::now();
        assert!(db.drop_tree("u").unwrap(), "{ctx}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{ctx}: drop_tree waited for a transaction"
        );
        let _ = other;
    }
}

/// T29: an insert that continues an ascending run starting at a node's second record (the run's
/// hint) moves the records after it to the new node. Where those are records with keys of the
/// longest length, the new node's low fence (another such key) made them too many for an empty
/// node: the split failed its own check (a panic) and, without the check, lost the records it
/// could not move. Every page size, every configuration: the records read back as written.
#[test]
fn t29_an_ascending_insert_before_long_keys_splits_where_the_new_node_fits() {
    for c in configs() {
        for page in [4096, 8192, 16384, 32768] {
            let db = builder(&c).page_size(page).pool_bytes(256 * page).create_in_memory().unwrap();
            let (max_key, inline) = (swizzledb::max_key_len(page), swizzledb::max_inline_value_len(page));
            let long = |last: u8| {
                let mut k = vec![b'b'; max_key];
                k[max_key - 1] = last;
                k
            };
            for fill in (0..inline).step_by(page / 128) {
                let ctx = format!("{c:?} page {page} fill {fill}");
                let tree = db.create_tree("t").unwrap();
                let mut oracle = Map::new();
                // Three long keys fill the leaf; "a" takes slot 0, so "a1" continues a run there.
                let records = [
                    (long(1), vec![1; inline]),
                    (long(2), vec![2; inline]),
                    (long(3), vec![3; fill]),
                    (b"a".to_vec(), vec![4; 10]),
                    (b"a1".to_vec(), vec![5; inline]),
                ];
                for (k, v) in records {
                    tree.insert(&k, &v).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    oracle.insert(k, v);
                }
                assert_eq!(all(&tree), oracle.into_iter().collect::<Vec<_>>(), "{ctx}");
                tree.verify().unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(db.drop_tree("t").unwrap(), "{ctx}");
            }
        }
    }
}

/// The statistics calls in every configuration: each is `None` exactly where the database has
/// no such part (`version_stats` and `lock_stats` without record locks, the log's, checkpoints'
/// and cleaner's without a log, `redo_progress` without an instant restart, `archive_runs` and
/// `archive_log` without an archive), `restart_stats` is all zero for a created database, and
/// the buffer pool's counters, summed over threads that have exited, add up as documented:
/// every fix is a hit or a miss, and each counter said to be counted in another is at most it.
#[test]
fn statistics_exist_where_their_part_does_and_the_pool_counters_add_up() {
    for c in configs() {
        let db = open(c);
        let ctx = format!("{c:?}");
        assert_eq!(db.is_logged(), c.logged, "{ctx}");
        assert_eq!(db.version_stats().is_some(), c.locking, "{ctx}");
        assert_eq!(db.lock_stats().is_some(), c.locking, "{ctx}");
        assert_eq!(db.log_stats().is_some(), c.logged, "{ctx}");
        assert_eq!(db.cleaner_stats().is_some(), c.logged, "{ctx}");
        assert_eq!(db.checkpoint_stats().is_some(), c.logged, "{ctx}");
        assert_eq!(db.log_bytes().is_some(), c.logged, "{ctx}");
        assert!(db.redo_progress().is_none(), "{ctx}");
        assert!(db.archive_runs().is_none(), "{ctx}");
        assert!(db.archive_log().unwrap().is_none(), "{ctx}");
        assert_eq!(db.restart_stats(), swizzledb::RestartStats::default(), "{ctx}");
        let before = db.checkpoint_counts();
        db.checkpoint().unwrap();
        let after = db.checkpoint_counts();
        if c.logged {
            assert_eq!(after.checkpoints, before.checkpoints + 1, "{ctx}");
            assert_eq!(db.checkpoint_stats().unwrap().checkpoints, after.checkpoints, "{ctx}");
        } else {
            assert_eq!(after, swizzledb::CheckpointCounts::default(), "{ctx}: no log, no checkpoint");
        }
        assert_eq!(db.begin_snapshot().is_snapshot(), c.locking, "{ctx}");

        let tree = db.create_tree("t").unwrap();
        std::thread::scope(|s| {
            for th in 0..3u32 {
                let tree = &tree;
                s.spawn(move || {
                    for i in 0..1500u32 {
                        tree.upsert(format!("{th}-{i:06}").as_bytes(), &[1u8; 100]).unwrap();
                    }
                    for i in 0..1500u32 {
                        assert!(tree.get(format!("{th}-{i:06}").as_bytes()).unwrap().is_some());
                    }
                });
            }
        });
        assert_eq!(tree.len().unwrap(), 4500, "{ctx}");
        let st = db.stats();
        assert_eq!(st.fixes, st.hits + st.misses, "{ctx}: {st:?}");
        assert!(st.optimistic_reads <= st.hits && st.unlatched_loads <= st.misses, "{ctx}: {st:?}");
        assert!(st.misses <= st.pages_read, "{ctx}: {st:?}");
        assert!(st.evictor_evictions <= st.evictions && st.sweep_evictions <= st.evictions, "{ctx}: {st:?}");
        assert!(st.evictor_writes <= st.victim_writes && st.victim_writes <= st.write_backs, "{ctx}: {st:?}");
        if c.mode != PoolMode::MainMemory {
            assert!(st.evictions > 0, "{ctx}: the data is larger than the pool: {st:?}");
        }
    }
}

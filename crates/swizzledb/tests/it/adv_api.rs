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

fn open(c: Config) -> Database {
    Database::builder()
        .mode(c.mode)
        .page_size(4096)
        .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 64 * 4096 })
        .logging(c.logged)
        .commit_mode(c.commit)
        .lab(|l| l.locking(c.locking))
        .create_in_memory()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
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
        let db = Database::builder()
            .mode(c.mode)
            .page_size(4096)
            .pool_bytes(if c.mode == PoolMode::MainMemory { 16 << 20 } else { 64 * 4096 })
            .logging(c.logged)
            .commit_mode(c.commit)
            .lab(|l| l.locking(c.locking))
            .create(&path)
            .unwrap();
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

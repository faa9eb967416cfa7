//! The documented claims of the public API (README "Library quickstart" and "Using it as a
//! library", the crate docs and the rustdoc of the public types), each checked as a user would
//! check it, in the configurations the docs say it holds in. Claims the other files check
//! already are left to them (`api_oracle.rs`, `adv_api.rs`, `map_api.rs`, `typed.rs`, ...).

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;

use swizzledb::typed::{BigEndian, Codec, Str, TypedTree};
use swizzledb::{Database, Error, TreeError};
use swizzledb_io::{MemFs, Vfs};

use crate::api_oracle::Config;
use crate::common::XorShift;

/// A few configurations of `api_oracle`'s: every buffer mode, logged or not, record locks on
/// or off, 4 KiB pages and a small pool (so pages are evicted).
fn configs() -> Vec<Config> {
    Config::all().into_iter().filter(|c| c.page == 4096 && c.small_pool).collect()
}

fn open(c: &Config) -> Database {
    let fs: Arc<dyn Vfs> = Arc::new(MemFs::new());
    c.builder(&fs).create("/doc-claims.swz").unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

/// The records of `map` inside the bounds, as `Tree::range` promises them: a reversed or empty
/// range holds nothing (a `BTreeMap` would panic).
fn in_bounds<K: Ord + Clone, V: Clone>(
    map: &BTreeMap<K, V>,
    start: &Bound<K>,
    end: &Bound<K>,
) -> Vec<(K, V)> {
    map.iter()
        .filter(|(k, _)| {
            (match start {
                Unbounded => true,
                Included(b) => *k >= b,
                Excluded(b) => *k > b,
            }) && (match end {
                Unbounded => true,
                Included(b) => *k <= b,
                Excluded(b) => *k < b,
            })
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn bound<K>(r: &mut XorShift, k: impl FnOnce(&mut XorShift) -> K) -> Bound<K> {
    match r.next() % 3 {
        0 => Unbounded,
        1 => Included(k(r)),
        _ => Excluded(k(r)),
    }
}

/// "The integer codecs keep their order in the bytes, so ranges and `first`/`last` follow the
/// numbers" (typed module docs), for signed and unsigned widths, every kind of bound at both
/// ends (reversed and empty ranges included), read forwards and backwards, against a `BTreeMap`
/// of the Rust values, in every buffer mode, logged or not, locks on or off.
#[test]
fn typed_integer_trees_range_as_a_btreemap_of_the_numbers() {
    fn check<T>(db: &Database, name: &str, values: &[T], r: &mut XorShift, ctx: &str)
    where
        T: Copy + Ord + std::fmt::Debug,
        BigEndian<T>: Codec<Item = T, Owned = T>,
    {
        let t: TypedTree<BigEndian<T>, BigEndian<u16>> = TypedTree::new(db.create_tree(name).unwrap());
        let mut oracle = BTreeMap::new();
        for (i, v) in values.iter().enumerate() {
            t.upsert(v, &(i as u16)).unwrap();
            oracle.insert(*v, i as u16);
        }
        assert_eq!(t.first().unwrap(), oracle.first_key_value().map(|(k, v)| (*k, *v)), "{ctx} {name}");
        assert_eq!(t.last().unwrap(), oracle.last_key_value().map(|(k, v)| (*k, *v)), "{ctx} {name}");
        let all: Vec<_> = t.iter().map(Result::unwrap).collect();
        assert_eq!(all, in_bounds(&oracle, &Unbounded, &Unbounded), "{ctx} {name}");
        let pick = |r: &mut XorShift| values[(r.next() % values.len() as u64) as usize];
        for _ in 0..60 {
            let (s, e) = (bound(r, pick), bound(r, pick));
            let want = in_bounds(&oracle, &s, &e);
            let got: Vec<_> = t.range(s.as_ref(), e.as_ref()).unwrap().map(Result::unwrap).collect();
            assert_eq!(got, want, "{ctx} {name} {s:?}..{e:?}");
            let back: Vec<_> = t.range(s.as_ref(), e.as_ref()).unwrap().rev().map(Result::unwrap).collect();
            assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>(), "{ctx} {name} {s:?}..{e:?} rev");
        }
    }
    for c in configs() {
        let db = open(&c);
        let ctx = format!("{c:?}");
        let mut r = XorShift(0x5eed_0001);
        let i8s: Vec<i8> = (i8::MIN..=i8::MAX).step_by(3).chain([i8::MIN, -1, 0, 1, i8::MAX]).collect();
        check(&db, "i8", &i8s, &mut r, &ctx);
        let i16s: Vec<i16> = (0..200).map(|_| r.next() as i16).chain([i16::MIN, -1, 0, i16::MAX]).collect();
        check(&db, "i16", &i16s, &mut r, &ctx);
        let i64s: Vec<i64> = (0..200)
            .map(|i| if i % 2 == 0 { r.next() as i64 } else { (r.next() % 100) as i64 - 50 })
            .chain([i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX])
            .collect();
        check(&db, "i64", &i64s, &mut r, &ctx);
        let i128s: Vec<i128> = (0..100)
            .map(|_| (i128::from(r.next() as i64) << 64) | i128::from(r.next()))
            .chain([i128::MIN, -1, 0, i128::MAX])
            .collect();
        check(&db, "i128", &i128s, &mut r, &ctx);
        let u32s: Vec<u32> = (0..200).map(|_| r.next() as u32).chain([0, 1, 255, 256, u32::MAX]).collect();
        check(&db, "u32", &u32s, &mut r, &ctx);
        let u128s: Vec<u128> = (0..100).map(|_| u128::from(r.next()) << 64 | u128::from(r.next())).collect();
        check(&db, "u128", &u128s, &mut r, &ctx);
    }
}

/// `Str`: "byte order is code point order": a tree of text keys ranges and ends as a
/// `BTreeMap<String, _>`, multi-byte characters and the empty string included.
#[test]
fn typed_text_keys_range_as_a_btreemap_of_strings() {
    let words = [
        "",
        "a",
        "ab",
        "b",
        "z",
        "é",
        "ée",
        "€",
        "𝄞",
        "\u{7f}",
        "\u{80}",
        "\u{ffff}",
        "\u{10000}",
        "A",
        "aé",
    ];
    for c in configs().into_iter().step_by(3) {
        let db = open(&c);
        let t: TypedTree<Str, Str> = TypedTree::new(db.create_tree("s").unwrap());
        let mut oracle = BTreeMap::new();
        for w in words {
            t.insert(w, &w.to_uppercase()).unwrap();
            oracle.insert(w.to_string(), w.to_uppercase());
        }
        assert_eq!(
            t.iter().map(Result::unwrap).collect::<Vec<_>>(),
            in_bounds(&oracle, &Unbounded, &Unbounded)
        );
        assert_eq!(t.first().unwrap(), oracle.first_key_value().map(|(k, v)| (k.clone(), v.clone())));
        assert_eq!(t.last().unwrap(), oracle.last_key_value().map(|(k, v)| (k.clone(), v.clone())));
        let mut r = XorShift(7);
        for _ in 0..80 {
            let pick = |r: &mut XorShift| words[(r.next() % words.len() as u64) as usize].to_string();
            let (s, e) = (bound(&mut r, pick), bound(&mut r, pick));
            let want = in_bounds(&oracle, &s, &e);
            let sb = s.as_ref().map(String::as_str);
            let eb = e.as_ref().map(String::as_str);
            let got: Vec<_> = t.range(sb, eb).unwrap().map(Result::unwrap).collect();
            assert_eq!(got, want, "{c:?} {s:?}..{e:?}");
        }
    }
}

/// `CheckpointCounts::failed`: "Checkpoints that failed (not counted in `checkpoints`)", beside
/// `checkpoints`, "every checkpoint that completed: at open, at close, by the background
/// thread, by the page cleaner, and by `Database::checkpoint`". A `Database::checkpoint` that
/// fails is a checkpoint that failed: counted in `failed` (and in `CheckpointStats::failed`),
/// not in `checkpoints`.
#[test]
fn an_explicit_checkpoint_that_fails_is_counted_as_failed() {
    use swizzledb::CheckpointKind;
    use swizzledb_io::{Fault, FaultFs, FaultRule, Op};
    for kind in [CheckpointKind::Classical, CheckpointKind::Decoupled] {
        let fs = FaultFs::new();
        fs.create_dir_all(std::path::Path::new("/d")).unwrap();
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let db = Database::builder()
            .checkpoint_interval(None)
            .lab(move |l| l.vfs(vfs).checkpoint_kind(kind))
            .create("/d/db.swz")
            .unwrap();
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"k", b"v").unwrap();
        db.checkpoint().unwrap();
        tree.upsert(b"k", b"w").unwrap();
        let before = db.checkpoint_counts();
        assert_eq!(before.failed, 0, "{kind:?}");
        // The checkpoint's sync of the database file fails.
        fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).on_path("db.swz"));
        let r = db.checkpoint();
        assert!(r.is_err(), "{kind:?}: the checkpoint's sync failed, so must the checkpoint: {r:?}");
        let after = db.checkpoint_counts();
        assert_eq!(after.checkpoints, before.checkpoints, "{kind:?}: it did not complete: {after:?}");
        assert_eq!(after.failed, before.failed + 1, "{kind:?}: the failed checkpoint is counted: {after:?}");
        assert_eq!(after.background, 0, "{kind:?}");
        assert_eq!(db.checkpoint_stats().unwrap().failed, after.failed, "{kind:?}");
    }
}

/// `Transaction::commit`: "A transaction that changed nothing logs nothing" — one that only
/// read, or whose every write changed nothing (a refused compare-and-swap, a delete or an
/// `update_with` of an absent key, a write refused as too large) appends no log record, at
/// commit or at abort.
#[test]
fn a_transaction_that_changed_nothing_logs_nothing() {
    for c in configs().into_iter().filter(|c| c.logged) {
        let db = open(&c);
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"a", b"1").unwrap();
        let appends = || db.log_stats().unwrap().appends;
        for end_with_commit in [true, false] {
            let before = appends();
            let mut t = db.begin();
            assert_eq!(t.get(&tree, b"a").unwrap().as_deref(), Some(&b"1"[..]));
            assert_eq!(t.range(&tree, Unbounded, Unbounded).count(), 1);
            assert!(t.compare_and_swap(&tree, b"a", Some(b"2"), Some(b"3")).unwrap().is_err());
            assert!(!t.delete(&tree, b"absent").unwrap());
            assert_eq!(t.update_with(&tree, b"absent", |_, _| ()).unwrap(), None);
            let too_long = vec![0u8; tree.max_value_len() + 1];
            assert!(t.put(&tree, b"a", &too_long).is_err());
            if end_with_commit {
                t.commit().unwrap();
            } else {
                t.abort().unwrap();
            }
            assert_eq!(appends(), before, "{c:?} commit {end_with_commit}: nothing changed, nothing logged");
        }
        assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    }
}

/// `Database::tree_names`: every tree, created or opened, and none dropped, in `str` order; across
/// a reopen.
#[test]
fn tree_names_name_every_tree_and_no_dropped_one() {
    for logged in [true, false] {
        let fs: Arc<dyn Vfs> = Arc::new(MemFs::new());
        let b = || {
            let fs = Arc::clone(&fs);
            Database::builder().logging(logged).lab(move |l| l.vfs(fs))
        };
        let db = b().create("/names.swz").unwrap();
        assert!(db.tree_names().is_empty());
        let names = ["b", "a", "é", "A", "a b", &"x".repeat(64)];
        for n in names {
            db.create_tree(n).unwrap();
        }
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        let got = db.tree_names();
        assert_eq!(got, want);
        assert!(db.drop_tree("a").unwrap());
        want.retain(|n| n != "a");
        let got = db.tree_names();
        assert_eq!(got, want);
        db.close().unwrap();
        let db = b().open("/names.swz").unwrap();
        let got = db.tree_names();
        assert_eq!(got, want, "logged {logged}: after a reopen");
        for n in &want {
            db.tree(n).unwrap();
        }
        assert!(matches!(db.tree("a"), Err(Error::TreeNotFound(_))));
        db.close().unwrap();
    }
}

/// README: "Keys up to page size / 16 bytes (512 B with the default 8 KiB pages). Values up to
/// page size / 4 (2 KiB) are stored in their leaf; longer ones, up to `MAX_VALUE_LEN` (4 MiB)
/// ... (a 64 MiB pool holds 4 MiB values)". The default database takes a 512-byte key and
/// refuses 513 bytes, changing nothing; values at 2 KiB and one byte more read back; with the
/// default 64 MiB pool, `max_value_len` is the whole 4 MiB.
#[test]
fn the_readme_limits_hold_for_a_default_database() {
    assert_eq!(swizzledb::MAX_VALUE_LEN, 4 << 20);
    for page in [4096, 8192, 16384, 32768] {
        assert_eq!(swizzledb::max_key_len(page), page / 16);
        assert_eq!(swizzledb::max_inline_value_len(page), page / 4);
    }
    let db = Database::builder().create_in_memory().unwrap();
    let tree = db.create_tree("t").unwrap();
    assert_eq!(tree.max_value_len(), 4 << 20, "a 64 MiB pool holds 4 MiB values");
    tree.insert(&[7; 512], b"longest key").unwrap();
    let r = tree.insert(&[7; 513], b"x");
    assert!(matches!(r, Err(TreeError::KeyTooLarge { .. })), "{r:?}");
    for len in [2047, 2048, 2049] {
        tree.upsert(b"v", &vec![len as u8; len]).unwrap();
        assert_eq!(tree.get(b"v").unwrap(), Some(vec![len as u8; len]));
    }
    assert_eq!(tree.len().unwrap(), 2);
    tree.verify().unwrap();
}

/// `Serde<T>` (feature `serde`): an item postcard cannot encode is `Error::Codec` — in a write
/// (nothing is written then), and in a range's bound ("encoding a bound fails at once"); bytes
/// that are no encoding of `T` are `Error::Codec`, never a panic, whatever they hold.
#[cfg(feature = "serde")]
#[test]
fn serde_items_that_cannot_be_encoded_and_bytes_that_cannot_be_decoded_are_codec_errors() {
    use swizzledb::typed::Serde;
    /// A value whose serialization always fails.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Unencodable;
    impl serde::Serialize for Unencodable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("this value cannot be written"))
        }
    }
    let db = Database::builder().create_in_memory().unwrap();
    let raw = db.create_tree("raw").unwrap();
    let by_value: TypedTree<Str, Serde<Unencodable>> = TypedTree::new(raw.clone());
    assert!(matches!(by_value.insert("k", &Unencodable), Err(Error::Codec { .. })));
    assert!(matches!(by_value.upsert("k", &Unencodable), Err(Error::Codec { .. })));
    let by_key: TypedTree<Serde<Unencodable>, Str> = TypedTree::new(raw.clone());
    assert!(matches!(by_key.insert(&Unencodable, "v"), Err(Error::Codec { .. })));
    assert!(matches!(by_key.get(&Unencodable), Err(Error::Codec { .. })));
    assert!(matches!(by_key.delete(&Unencodable), Err(Error::Codec { .. })));
    assert!(matches!(by_key.range(Included(&Unencodable), Unbounded), Err(Error::Codec { .. })));
    assert!(matches!(by_key.range(Unbounded, Excluded(&Unencodable)), Err(Error::Codec { .. })));
    let mut tx = db.begin();
    assert!(matches!(by_value.put_in(&mut tx, "k", &Unencodable), Err(Error::Codec { .. })));
    tx.commit().unwrap();
    assert!(raw.is_empty().unwrap(), "nothing was written");

    fn garbage<T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug>(bytes: &[u8]) {
        match Serde::<T>::decode(bytes) {
            Err(Error::Codec { reason }) => assert!(!reason.is_empty()),
            other => panic!("{bytes:?} as {}: {other:?}", std::any::type_name::<T>()),
        }
    }
    garbage::<u32>(&[]);
    garbage::<u16>(&[0x80]);
    garbage::<u64>(&[0xff; 11]);
    garbage::<i128>(&[0xff; 20]);
    garbage::<bool>(&[2]);
    garbage::<char>(&[4, 0xff, 0xff, 0xff, 0xff]);
    garbage::<String>(&[2, 0xff, 0xfe]);
    garbage::<String>(&[5, b'a']);
    garbage::<Vec<u64>>(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    garbage::<Option<u8>>(&[7]);
    garbage::<(u8, u8)>(&[1]);
    // And through a tree: the byte handle's records, read as another type.
    raw.insert(b"\x03abc", &[0xff, 0xff, 0xff, 0xff, 0x0f]).unwrap();
    let as_vec: TypedTree<Serde<String>, Serde<Vec<u64>>> = TypedTree::new(raw);
    assert!(matches!(as_vec.get(&"abc".to_string()), Err(Error::Codec { .. })));
    assert!(matches!(as_vec.first(), Err(Error::Codec { .. })));
}

/// `LogStats`: "For every flush request exactly one of `flush_already_durable`, `flush_led`,
/// `flush_joined`, `flush_failed` is counted", with sync commits from several threads at once,
/// and `Database::flush`; and under `CommitWait::Sleep` "`busy_waits` always 0".
#[test]
fn every_flush_request_is_counted_once_by_how_it_ended() {
    for wait in [swizzledb::CommitWait::Adaptive, swizzledb::CommitWait::Sleep] {
        let db = Database::builder().commit_wait(wait).create_in_memory().unwrap();
        let tree = db.create_tree("t").unwrap();
        std::thread::scope(|s| {
            for th in 0..4u8 {
                let tree = &tree;
                s.spawn(move || {
                    for i in 0..100u32 {
                        tree.upsert(&[&[th][..], &i.to_be_bytes()].concat(), b"v").unwrap();
                    }
                });
            }
        });
        db.flush().unwrap();
        db.checkpoint().unwrap();
        let s = db.log_stats().unwrap();
        assert!(s.flush_requests >= 400, "{wait:?}: 400 sync commits ask for a flush each: {s:?}");
        assert_eq!(
            s.flush_requests,
            s.flush_already_durable + s.flush_led + s.flush_joined + s.flush_failed,
            "{wait:?}: {s:?}"
        );
        assert_eq!(s.flush_failed, 0, "{wait:?}: {s:?}");
        assert!(s.flush_led <= s.fsyncs, "{wait:?}: each led request ran one of the rounds: {s:?}");
        if wait == swizzledb::CommitWait::Sleep {
            assert_eq!(s.busy_waits, 0, "{s:?}");
        }
        assert_eq!(tree.len().unwrap(), 400);
    }
}

/// Every call of `tree` refuses with `want`'s variant.
fn refuses(tree: &swizzledb::Tree, want: &TreeError, ctx: &str) {
    let is = |e: &TreeError| std::mem::discriminant(e) == std::mem::discriminant(want);
    let check = |what: &str, r: Result<(), TreeError>| match r {
        Err(e) if is(&e) => {}
        other => panic!("{ctx}: {what}: {other:?}, not {want:?}"),
    };
    check("get", tree.get(b"k").map(drop));
    check("get_with", tree.get_with(b"k", |_| ()));
    check("insert", tree.insert(b"new", b"v"));
    check("upsert", tree.upsert(b"k", b"v").map(drop));
    check("delete", tree.delete(b"k").map(drop));
    check("compare_and_swap", tree.compare_and_swap(b"k", None, Some(b"v")).map(drop));
    check("first", tree.first().map(drop));
    check("last", tree.last().map(drop));
    check("len", tree.len().map(drop));
    check("is_empty", tree.is_empty().map(drop));
    check("approximate_len", tree.approximate_len().map(drop));
    for (what, mut items) in [
        ("range", Box::new(tree.range(Unbounded, Unbounded)) as Box<dyn Iterator<Item = _>>),
        ("range_rev", Box::new(tree.range_rev(Unbounded, Unbounded))),
        ("scan_prefix", Box::new(tree.scan_prefix(b"k"))),
        ("scan_prefix_rev", Box::new(tree.scan_prefix_rev(b"k"))),
        ("range().rev()", Box::new(tree.range(Unbounded, Unbounded).rev())),
    ] {
        check(what, items.next().expect("an error, not the end").map(drop));
    }
    assert!(tree.verify().is_err(), "{ctx}: verify");
}

/// `Tree`: "Once the database is closed, or the tree dropped, every call refuses with
/// `TreeError::Closed` or `TreeError::Dropped`" — every call of the handle, with the error of
/// the cause, in every configuration; and the database's own calls after a drop.
#[test]
fn a_closed_or_dropped_trees_every_call_refuses_with_its_cause() {
    for c in configs() {
        let ctx = format!("{c:?}");
        let fs: Arc<dyn Vfs> = Arc::new(MemFs::new());
        let db = c.builder(&fs).create("/h.swz").unwrap();
        let kept = db.create_tree("kept").unwrap();
        let gone = db.create_tree("gone").unwrap();
        for i in 0..300u32 {
            kept.upsert(&[b"k", &i.to_be_bytes()[..]].concat(), &[1; 50]).unwrap();
            gone.upsert(&[b"k", &i.to_be_bytes()[..]].concat(), &[1; 50]).unwrap();
        }
        assert!(db.drop_tree("gone").unwrap(), "{ctx}");
        refuses(&gone, &TreeError::Dropped, &format!("{ctx}, dropped"));
        assert!(!db.drop_tree("gone").unwrap(), "{ctx}: dropped already");
        assert!(matches!(db.tree("gone"), Err(Error::TreeNotFound(_))), "{ctx}");
        db.close().unwrap();
        refuses(&kept, &TreeError::Closed, &format!("{ctx}, closed"));
    }
}

/// `BackupStats`: "Trees copied", "Records copied, over all trees", "Bytes of keys and values
/// copied": exact, for trees of small and large values and an empty tree.
#[test]
fn backup_stats_count_what_was_copied() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder().create_in_memory().unwrap();
    let a = db.create_tree("a").unwrap();
    let b = db.create_tree("b").unwrap();
    db.create_tree("empty").unwrap();
    let mut bytes = 0u64;
    for i in 0..500u32 {
        let (k, v) = (format!("key{i}"), vec![i as u8; (i % 97) as usize]);
        a.insert(k.as_bytes(), &v).unwrap();
        bytes += (k.len() + v.len()) as u64;
    }
    for i in 0..3u32 {
        let v = vec![i as u8; 20_000 + i as usize];
        b.insert(&i.to_be_bytes(), &v).unwrap();
        bytes += (4 + v.len()) as u64;
    }
    let stats = db.backup_to(dir.path().join("copy.swz")).unwrap();
    assert_eq!((stats.trees, stats.records, stats.record_bytes), (3, 503, bytes), "{stats:?}");
    let copy = Database::builder().open(dir.path().join("copy.swz")).unwrap();
    assert_eq!(copy.tree("a").unwrap().len().unwrap(), 500);
    assert_eq!(copy.tree("b").unwrap().len().unwrap(), 3);
    assert!(copy.tree("empty").unwrap().is_empty().unwrap());
    copy.close().unwrap();
}

/// `Database::transact`: "To roll back on purpose, return `Err(Error::Aborted(reason))`" — the
/// error comes back as it was returned, the writes are undone, and the closure ran once; any
/// other error of the closure too.
#[test]
fn transact_returns_the_closures_error_and_rolls_back() {
    for c in configs() {
        let db = open(&c);
        let tree = db.create_tree("t").unwrap();
        tree.upsert(b"a", b"1").unwrap();
        let mut runs = 0;
        let r: Result<(), Error> = db.transact(|tx| {
            runs += 1;
            tx.put(&tree, b"a", b"2")?;
            tx.put(&tree, b"b", b"2")?;
            Err(Error::Aborted("on purpose".into()))
        });
        assert!(matches!(&r, Err(Error::Aborted(why)) if why == "on purpose"), "{c:?}: {r:?}");
        assert_eq!(runs, 1, "{c:?}");
        let r: Result<(), Error> = db.transact(|tx| {
            tx.delete(&tree, b"a")?;
            tx.insert(&tree, b"a", b"3")?;
            tx.insert(&tree, b"a", b"4")?; // DuplicateKey
            Ok(())
        });
        assert!(matches!(r, Err(Error::Tree(TreeError::DuplicateKey))), "{c:?}: {r:?}");
        assert_eq!(tree.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{c:?}");
        assert_eq!(tree.get(b"b").unwrap(), None, "{c:?}");
        assert_eq!(db.transact(|tx| tx.get(&tree, b"a")).unwrap().as_deref(), Some(&b"1"[..]), "{c:?}");
    }
}

/// README: "the tree handles of a closed or dropped database return `TreeError::Closed`": a
/// database dropped without `close` too, in every configuration; the file then opens again.
#[test]
fn a_dropped_databases_handles_refuse_with_closed() {
    for c in configs() {
        let ctx = format!("{c:?}");
        let fs: Arc<dyn Vfs> = Arc::new(MemFs::new());
        let db = c.builder(&fs).create("/h.swz").unwrap();
        let tree = db.create_tree("t").unwrap();
        for i in 0..300u32 {
            tree.upsert(&[b"k", &i.to_be_bytes()[..]].concat(), &[1; 50]).unwrap();
        }
        let scan = tree.range(Unbounded, Unbounded);
        drop(db);
        refuses(&tree, &TreeError::Closed, &format!("{ctx}, dropped database"));
        assert!(scan.take(1000).all(|r| matches!(r, Ok(_) | Err(TreeError::Closed))), "{ctx}");
        let db = c.builder(&fs).open("/h.swz").unwrap();
        assert_eq!(db.tree("t").unwrap().len().unwrap(), 300, "{ctx}");
        db.close().unwrap();
    }
}

/// `VersionStats::bytes`: "Bytes the versions kept for snapshots take now": while a snapshot
/// (a read transaction's, a snapshot-isolation transaction's, a scan's) needs the changes made
/// since it began, they count; once the last such snapshot ends they are collected (LOCKS.md
/// K19: "when a snapshot that began before the queue's oldest entry ends") and the count is 0.
/// `made` counts one before-image per change of a writer that ended.
#[test]
fn versions_count_while_a_snapshot_needs_them_and_go_when_it_ends() {
    for c in configs().into_iter().filter(|c| c.locking) {
        let ctx = format!("{c:?}");
        let db = open(&c);
        let tree = db.create_tree("t").unwrap();
        for i in 0..50u32 {
            tree.upsert(&i.to_be_bytes(), b"old").unwrap();
        }
        let bytes = || db.version_stats().unwrap().bytes;
        assert_eq!(bytes(), 0, "{ctx}: no snapshot, no version kept");
        for kind in ["begin_read", "begin_snapshot", "range"] {
            let made = db.version_stats().unwrap().made;
            let reader = (kind == "begin_read").then(|| db.begin_read());
            let si = (kind == "begin_snapshot").then(|| db.begin_snapshot());
            let scan = (kind == "range").then(|| tree.range(Unbounded, Unbounded));
            db.transact(|tx| {
                for i in 0..50u32 {
                    tx.put(&tree, &i.to_be_bytes(), kind.as_bytes())?;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(db.version_stats().unwrap().made, made + 50, "{ctx} {kind}: one per change");
            // A plain scan reads at a snapshot on a logged database only (`Tree::range`).
            if c.logged || kind != "range" {
                assert!(bytes() > 0, "{ctx} {kind}: a snapshot needs the 50 before-images");
            }
            if let Some(r) = &reader {
                assert_eq!(r.get(&tree, &7u32.to_be_bytes()).unwrap().as_deref(), Some(&b"old"[..]), "{ctx}");
            }
            if let Some(scan) = scan {
                assert_eq!(scan.count(), 50, "{ctx}");
            }
            drop(reader);
            if let Some(t) = si {
                t.abort().unwrap();
            }
            assert_eq!(bytes(), 0, "{ctx} {kind}: the snapshot ended, no version is needed any more");
            for i in 0..50u32 {
                tree.upsert(&i.to_be_bytes(), b"old").unwrap();
            }
            assert_eq!(bytes(), 0, "{ctx} {kind}");
        }
    }
}

/// Tree names at and past their limits ("1 to 64 bytes of UTF-8") through every call that
/// takes one: `tree` says `TreeNotFound` with the name cut as `InvalidTreeName` cuts it
/// (`Error::TreeNotFound`'s docs), `drop_tree` "returns `false` if there is no such tree",
/// `tree_or_create` is `InvalidTreeName` ("never `TreeExists`"), and every message stays small.
#[test]
fn tree_names_past_their_limits_in_every_call() {
    let db = Database::builder().create_in_memory().unwrap();
    let long = "é".repeat(1 << 16);
    for name in ["", &"x".repeat(65), &"é".repeat(33), long.as_str()] {
        let ctx = format!("a name of {} bytes", name.len());
        match db.tree(name) {
            Err(Error::TreeNotFound(shown)) => {
                assert!(name.starts_with(shown.trim_end_matches('…')), "{ctx}: {shown}");
                assert!(shown.chars().count() <= 65, "{ctx}: {shown}");
                assert_eq!(shown.ends_with('…'), name.chars().count() > 64, "{ctx}: {shown}");
            }
            other => panic!("{ctx}: tree: {other:?}"),
        }
        assert!(!db.drop_tree(name).unwrap(), "{ctx}: drop_tree");
        match db.tree_or_create(name) {
            Err(e @ Error::InvalidTreeName { .. }) => assert!(e.to_string().len() < 400, "{ctx}: {e}"),
            other => panic!("{ctx}: tree_or_create: {other:?}"),
        }
        assert!(matches!(db.create_tree(name), Err(Error::InvalidTreeName { .. })), "{ctx}");
    }
    assert!(db.tree_names().is_empty());
    // At the limit: 64 bytes, in one- and two-byte characters.
    for name in ["x".repeat(64), "é".repeat(32)] {
        db.tree_or_create(&name).unwrap().insert(b"k", b"v").unwrap();
        assert!(matches!(db.create_tree(&name), Err(Error::TreeExists(n)) if n == name));
        assert_eq!(db.tree(&name).unwrap().get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        assert!(db.drop_tree(&name).unwrap());
    }
}

/// `CleanerStats::rounds` counts every round that cleaned: one the log's size triggered (over
/// three quarters of `max_log_bytes`), and one the cleaner interval forced
/// (`LabOptions::cleaner_interval`) with the log far below the bound, which writes back every
/// dirty page (counted in `pages_written`).
#[test]
fn cleaner_rounds_forced_by_the_interval_are_counted() {
    let db = Database::builder()
        .lab(|l| l.cleaner_interval(Some(std::time::Duration::from_millis(5))))
        .create_in_memory()
        .unwrap();
    let tree = db.create_tree("t").unwrap();
    for i in 0..100u32 {
        tree.upsert(&i.to_be_bytes(), &[3; 100]).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.cleaner_stats().unwrap().pages_written == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let s = db.cleaner_stats().unwrap();
    let trigger = swizzledb::DEFAULT_MAX_LOG_BYTES / 4 * 3;
    assert!(s.max_log_bytes_seen < trigger, "the log stayed far below the trigger: {s:?}");
    assert!(s.pages_written > 0 && s.rounds > 0, "forced rounds cleaned, and are counted: {s:?}");
    assert_eq!(s.failures, 0, "{s:?}");
}

/// `RangeIter`/`RevRangeIter`: `refused(e)` "reads nothing, returns `e` as its next item, from
/// either end, and then ends"; `limit(0)` returns nothing; `limit(n)` counts both ends
/// together; `tally` counts what is left; `RevRangeIter::next_back_with` gives the smallest key
/// left. In every configuration (plain scans read through a snapshot on some).
#[test]
fn scan_iterators_refuse_limit_and_count_as_documented() {
    for c in configs() {
        let ctx = format!("{c:?}");
        let db = open(&c);
        let tree = db.create_tree("t").unwrap();
        for i in 0..1000u32 {
            tree.upsert(&i.to_be_bytes(), &[2; 30]).unwrap();
        }
        let mut r = tree.range(Unbounded, Unbounded).refused(TreeError::ReadOnly);
        assert!(matches!(r.next_back(), Some(Err(TreeError::ReadOnly))), "{ctx}");
        assert!(r.next().is_none() && r.next_back().is_none(), "{ctx}");
        let mut r = tree.range_rev(Unbounded, Unbounded).refused(TreeError::ReadOnly);
        assert!(matches!(r.next(), Some(Err(TreeError::ReadOnly))), "{ctx}");
        assert!(r.next().is_none() && r.next_back().is_none(), "{ctx}");
        assert!(matches!(
            tree.range(Unbounded, Unbounded).refused(TreeError::ReadOnly).tally(),
            Err(TreeError::ReadOnly)
        ));
        assert_eq!(tree.range(Unbounded, Unbounded).limit(0).count(), 0, "{ctx}");
        assert_eq!(tree.range_rev(Unbounded, Unbounded).limit(0).count(), 0, "{ctx}");
        let mut both = tree.range(Unbounded, Unbounded).limit(5);
        let got =
            [both.next(), both.next_back(), both.next(), both.next_back(), both.next(), both.next_back()];
        let keys: Vec<Option<u32>> = got
            .into_iter()
            .map(|r| r.map(|r| u32::from_be_bytes(r.unwrap().0.try_into().unwrap())))
            .collect();
        assert_eq!(keys, [Some(0), Some(999), Some(1), Some(998), Some(2), None], "{ctx}");
        let mut scan = tree.range(Included(&10u32.to_be_bytes()[..]), Excluded(&20u32.to_be_bytes()[..]));
        scan.next();
        scan.next_back();
        assert_eq!(scan.tally().unwrap(), 8, "{ctx}: what is left");
        let mut rev = tree.range_rev(Unbounded, Excluded(&500u32.to_be_bytes()[..]));
        assert_eq!(rev.next_with(|k, _| k.to_vec()).unwrap().unwrap(), 499u32.to_be_bytes(), "{ctx}");
        assert_eq!(rev.next_back_with(|k, _| k.to_vec()).unwrap().unwrap(), 0u32.to_be_bytes(), "{ctx}");
        assert_eq!(rev.count(), 498, "{ctx}");
    }
}

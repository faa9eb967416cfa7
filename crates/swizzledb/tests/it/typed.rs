//! Typed trees (`swizzledb::typed`): every codec round-trips; the integer codecs keep the
//! numbers' order in the bytes, so ranges, `first` and `last` follow the numbers; bytes that do
//! not fit a codec are `Error::Codec`; transactions read and write through them.

use proptest::prelude::*;
use std::ops::Bound::{Excluded, Included, Unbounded};
use swizzledb::typed::{BigEndian, Bytes, Codec, Str, TypedTree};
use swizzledb::{Database, Error};

fn db(dir: &std::path::Path) -> Database {
    Database::builder().create(dir.join("typed.swz")).unwrap()
}

#[test]
fn signed_keys_range_in_number_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let t: TypedTree<BigEndian<i64>, Str> = TypedTree::new(db.create_tree("t").unwrap());
    for n in [5i64, -3, 0, i64::MIN, 42, -1, i64::MAX, 7] {
        t.insert(&n, &format!("n{n}")).unwrap();
    }
    let keys: Vec<i64> = t.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(keys, [i64::MIN, -3, -1, 0, 5, 7, 42, i64::MAX]);
    let mid: Vec<i64> = t.range(Included(&-3), Excluded(&7)).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(mid, [-3, -1, 0, 5]);
    let down: Vec<i64> = t.range(Excluded(&0), Unbounded).unwrap().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(down, [i64::MAX, 42, 7, 5]);
    assert_eq!(t.first().unwrap(), Some((i64::MIN, format!("n{}", i64::MIN))));
    assert_eq!(t.last().unwrap().map(|(k, _)| k), Some(i64::MAX));
    assert_eq!(t.get(&-1).unwrap().as_deref(), Some("n-1"));
    assert!(t.delete(&-1).unwrap());
    assert_eq!(t.get(&-1).unwrap(), None);
    assert!(!t.upsert(&-1, "again").unwrap());
    // The byte handle sees the same records.
    assert_eq!(t.bytes().get(&(5i64 ^ i64::MIN).to_be_bytes()).unwrap().as_deref(), Some(&b"n5"[..]));
}

#[test]
fn bytes_that_do_not_fit_a_codec_are_codec_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let raw = db.create_tree("raw").unwrap();
    raw.insert(b"k", &[0xff, 0xfe]).unwrap();
    let as_text: TypedTree<Bytes, Str> = TypedTree::new(raw.clone());
    assert!(matches!(as_text.get(b"k"), Err(Error::Codec { .. })));
    let as_u32: TypedTree<Bytes, BigEndian<u32>> = TypedTree::new(raw.clone());
    assert!(matches!(as_u32.get(b"k"), Err(Error::Codec { .. })));
    assert!(matches!(as_u32.iter().next(), Some(Err(Error::Codec { .. }))));
    let as_u16: TypedTree<Bytes, BigEndian<u16>> = TypedTree::new(raw);
    assert_eq!(as_u16.get(b"k").unwrap(), Some(0xfffe));
}

#[test]
fn transactions_read_and_write_through_codecs() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let balances: TypedTree<Str, BigEndian<u64>> = TypedTree::new(db.create_tree("balances").unwrap());
    balances.insert("alice", &100).unwrap();
    balances.insert("bob", &5).unwrap();
    db.transact(|tx| {
        let a = balances.get_in(tx, "alice")?.unwrap_or(0);
        let b = balances.get_in(tx, "bob")?.unwrap_or(0);
        balances.put_in(tx, "alice", &(a - 30))?;
        balances.put_in(tx, "bob", &(b + 30))?;
        Ok(())
    })
    .unwrap();
    assert_eq!((balances.get("alice").unwrap(), balances.get("bob").unwrap()), (Some(70), Some(35)));
    let r: Result<(), Error> = db.transact(|tx| {
        balances.delete_in(tx, "alice")?;
        Err(Error::Aborted("changed my mind".into()))
    });
    assert!(r.is_err());
    assert_eq!(balances.get("alice").unwrap(), Some(70), "the rollback kept alice");
}

#[cfg(feature = "serde")]
#[test]
fn serde_values_round_trip() {
    use swizzledb::typed::Serde;
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct User {
        name: String,
        age: u8,
        tags: Vec<String>,
    }
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let users: TypedTree<BigEndian<u32>, Serde<User>> = TypedTree::new(db.create_tree("users").unwrap());
    let u = User { name: "ada".into(), age: 36, tags: vec!["x".into()] };
    users.insert(&7, &u).unwrap();
    assert_eq!(users.get(&7).unwrap(), Some(u));
}

/// Every integer codec round-trips its extremes and refuses bytes of any other length with
/// `Error::Codec` naming both lengths; a key that does not fit the key codec fails the item of
/// a scan (either direction) and `first`/`last` that meet it, while the byte handle reads on.
#[test]
fn every_integer_codec_refuses_other_lengths_and_bad_keys_fail_their_items() {
    fn check<T: Copy + PartialEq + std::fmt::Debug>(values: &[T], width: usize)
    where
        BigEndian<T>: Codec<Item = T, Owned = T>,
    {
        for &v in values {
            let bytes = BigEndian::<T>::encode(&v).unwrap().into_owned();
            assert_eq!(bytes.len(), width);
            assert_eq!(BigEndian::<T>::decode(&bytes).unwrap(), v);
        }
        for len in [0, width - 1, width + 1, 2 * width] {
            match BigEndian::<T>::decode(&vec![0; len]) {
                Err(Error::Codec { reason }) => {
                    assert!(
                        reason.contains(&len.to_string()) && reason.contains(&width.to_string()),
                        "{reason}"
                    )
                }
                other => panic!("{len} bytes for a {width}-byte integer: {other:?}"),
            }
        }
    }
    check(&[0u8, u8::MAX], 1);
    check(&[0u16, u16::MAX], 2);
    check(&[0u32, u32::MAX], 4);
    check(&[0u64, u64::MAX], 8);
    check(&[0u128, u128::MAX], 16);
    check(&[i8::MIN, -1, 0, i8::MAX], 1);
    check(&[i16::MIN, -1, 0, i16::MAX], 2);
    check(&[i32::MIN, -1, 0, i32::MAX], 4);
    check(&[i64::MIN, -1, 0, i64::MAX], 8);
    check(&[i128::MIN, -1, 0, i128::MAX], 16);

    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let raw = db.create_tree("raw").unwrap();
    raw.insert(&[0xff], b"not UTF-8 key").unwrap();
    raw.insert(b"ok", b"1").unwrap();
    let by_text: TypedTree<Str, Bytes> = TypedTree::new(raw.clone());
    assert_eq!(by_text.get("ok").unwrap().as_deref(), Some(&b"1"[..]));
    let items: Vec<_> = by_text.iter().collect();
    assert!(matches!(items.as_slice(), [Ok((k, _)), Err(Error::Codec { .. })] if k == "ok"), "{items:?}");
    let back: Vec<_> = by_text.iter().rev().collect();
    assert!(matches!(back.as_slice(), [Err(Error::Codec { .. }), Ok(_)]), "{back:?}");
    assert!(matches!(by_text.last(), Err(Error::Codec { .. })));
    assert_eq!(by_text.first().unwrap().map(|(k, _)| k), Some("ok".to_string()));
    let by_number: TypedTree<BigEndian<u16>, Bytes> = TypedTree::new(raw.clone());
    assert_eq!(by_number.first().unwrap().map(|(k, _)| k), Some(u16::from_be_bytes(*b"ok")));
    assert!(matches!(by_number.last(), Err(Error::Codec { .. })));
    assert_eq!(raw.len().unwrap(), 2, "the byte handle reads every record");
}

/// `Serde` takes stored bytes only when they are one whole encoding of the type: bytes left
/// over after the value (here, a `u64` written big-endian, read as a postcard `u8` or `u16`)
/// are `Error::Codec`, as bytes of the wrong length are for `BigEndian`. It returned the value
/// the first bytes spell and dropped the rest.
#[cfg(feature = "serde")]
#[test]
fn serde_bytes_left_over_after_a_value_are_a_codec_error() {
    use swizzledb::typed::Serde;
    assert_eq!(Serde::<u16>::decode(&[0x81, 0x01]).unwrap(), 129, "one whole varint");
    assert!(matches!(Serde::<u16>::decode(&[0x05, 0x00]), Err(Error::Codec { .. })));
    assert!(matches!(Serde::<bool>::decode(&[0x01, 0x01]), Err(Error::Codec { .. })));
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let raw = db.create_tree("raw").unwrap();
    let as_u64: TypedTree<Str, BigEndian<u64>> = TypedTree::new(raw.clone());
    as_u64.insert("n", &5).unwrap();
    let as_u8: TypedTree<Str, Serde<u8>> = TypedTree::new(raw.clone());
    match as_u8.get("n") {
        Err(Error::Codec { reason }) => assert!(reason.contains("7 bytes left over"), "{reason}"),
        other => panic!("expected a codec error, got {other:?}"),
    }
    assert!(matches!(as_u8.iter().next(), Some(Err(Error::Codec { .. }))));
    assert!(matches!(as_u8.first(), Err(Error::Codec { .. })));
    let as_u16: TypedTree<Str, Serde<u16>> = TypedTree::new(raw);
    assert!(matches!(as_u16.get("n"), Err(Error::Codec { .. })));
    // What the codec wrote itself still reads back.
    as_u16.upsert("n", &300).unwrap();
    assert_eq!(as_u16.get("n").unwrap(), Some(300));
}

proptest! {
    /// The integer codecs: decode(encode(n)) = n, and the bytes sort as the numbers.
    #[test]
    fn integers_round_trip_and_keep_their_order(a: i64, b: i64, c: u32, d: u32, e: i8, f: i8) {
        fn enc<C: Codec<Item = T>, T>(n: &T) -> Vec<u8> {
            C::encode(n).unwrap().into_owned()
        }
        prop_assert_eq!(BigEndian::<i64>::decode(&enc::<BigEndian<i64>, _>(&a)).unwrap(), a);
        prop_assert_eq!(a.cmp(&b), enc::<BigEndian<i64>, _>(&a).cmp(&enc::<BigEndian<i64>, _>(&b)));
        prop_assert_eq!(c.cmp(&d), enc::<BigEndian<u32>, _>(&c).cmp(&enc::<BigEndian<u32>, _>(&d)));
        prop_assert_eq!(e.cmp(&f), enc::<BigEndian<i8>, _>(&e).cmp(&enc::<BigEndian<i8>, _>(&f)));
        prop_assert_eq!(BigEndian::<i8>::decode(&enc::<BigEndian<i8>, _>(&e)).unwrap(), e);
    }
}

/// What a byte tree offers beyond reads and writes, a typed one offers too, checked against a
/// `BTreeMap` oracle: counts, prefix scans both ways, compare-and-swap with decoded values, and
/// a transaction's inserts and range reads.
#[test]
fn counts_prefixes_compare_and_swap_and_transaction_ranges_follow_an_oracle() {
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let t: TypedTree<Str, BigEndian<u64>> = TypedTree::new(db.create_tree("t").unwrap());
    assert!(t.is_empty().unwrap());
    assert_eq!((t.len().unwrap(), t.approximate_len().unwrap()), (0, 0));
    let mut oracle = BTreeMap::new();
    for (i, name) in ["ann", "anna", "annie", "bob", "bobby", "carl", "an", "b"].iter().enumerate() {
        t.insert(name, &(i as u64)).unwrap();
        oracle.insert(name.to_string(), i as u64);
    }
    assert!(!t.is_empty().unwrap());
    assert_eq!(t.len().unwrap(), oracle.len());
    assert_eq!(t.approximate_len().unwrap(), oracle.len() as u64, "one leaf: exact");
    for prefix in ["an", "ann", "b", "bob", "c", "z", ""] {
        let want: Vec<(String, u64)> =
            oracle.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(k, v)| (k.clone(), *v)).collect();
        let got: Vec<(String, u64)> = t.scan_prefix(prefix).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got, want, "prefix {prefix:?}");
        let mut back: Vec<(String, u64)> = t.scan_prefix(prefix).unwrap().rev().map(|r| r.unwrap()).collect();
        back.reverse();
        assert_eq!(back, want, "prefix {prefix:?} from the last");
    }

    // Compare-and-swap: a wrong expectation returns the decoded value and changes nothing.
    assert_eq!(t.compare_and_swap("bob", Some(&99), Some(&1)).unwrap(), Err(Some(3)));
    assert_eq!(t.compare_and_swap("dave", Some(&1), Some(&2)).unwrap(), Err(None));
    assert_eq!(t.compare_and_swap("bob", Some(&3), Some(&30)).unwrap(), Ok(()));
    assert_eq!(t.compare_and_swap("dave", None, Some(&7)).unwrap(), Ok(()));
    assert_eq!(t.compare_and_swap("carl", Some(&5), None).unwrap(), Ok(()));
    oracle.insert("bob".into(), 30);
    oracle.insert("dave".into(), 7);
    oracle.remove("carl");
    // A value the codec cannot decode comes back as a codec error, and nothing changes.
    t.bytes().upsert(b"odd", b"xyz").unwrap();
    assert!(matches!(t.compare_and_swap("odd", None, Some(&1)), Err(Error::Codec { .. })));
    assert_eq!(t.bytes().get(b"odd").unwrap().as_deref(), Some(&b"xyz"[..]));
    t.bytes().delete(b"odd").unwrap();
    let all: Vec<(String, u64)> = t.iter().map(|r| r.unwrap()).collect();
    assert_eq!(all, oracle.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>());

    // In a transaction: an insert, a duplicate refused, and ranges that see its own writes.
    let mut tx = db.begin();
    t.insert_in(&mut tx, "eve", &11).unwrap();
    assert!(t.insert_in(&mut tx, "eve", &12).is_err(), "a duplicate key");
    oracle.insert("eve".into(), 11);
    let want: Vec<(String, u64)> =
        oracle.range("b".to_string().."e~".to_string()).map(|(k, v)| (k.clone(), *v)).collect();
    let got: Vec<(String, u64)> =
        t.range_in(&tx, Included("b"), Excluded("e~")).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, want);
    let got_back: Vec<String> =
        t.range_in(&tx, Unbounded, Unbounded).unwrap().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(got_back, oracle.keys().rev().cloned().collect::<Vec<_>>());
    tx.commit().unwrap();
    assert_eq!(t.len().unwrap(), oracle.len());
    assert_eq!(t.get("eve").unwrap(), Some(11));
}
